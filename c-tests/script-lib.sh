# Sourced by the c-tests scripts that test a flavour's build end to end (doctor_test.sh,
# goal_run_test.sh, tune_test.sh; goal_sweep.sh) right after `set -euo pipefail`, with the
# script's arguments: its preamble, written once.
#
# - TOP: the top of the source tree.
# - FLAVOUR from the script's first argument, else $TC_FLAVOUR (openmpi or mpich; anything
#   else: usage, exit 2), and its compiler and launcher: MPICC, LAUNCHER.
# - Loopback only, whatever the caller had: loopback_env.sh (refuses anything else).
# - skip (exit 77), fail (exit 1) and note.
# - work_dir: WORK is $TC_WORK, emptied, else a temporary directory removed at exit.
# - find_cli, need_lib, runner_or_compile: the CLI, the flavour's library, a runner.
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

FLAVOUR=${1:-${TC_FLAVOUR:-}}
case "$FLAVOUR" in
  openmpi) MPICC=mpicc.openmpi LAUNCHER=mpirun.openmpi ;;
  mpich) MPICC=mpicc.mpich LAUNCHER=mpiexec.mpich ;;
  *) echo "usage: $0 openmpi|mpich (or TC_FLAVOUR)" >&2; exit 2 ;;
esac

. "$TOP/c-tests/loopback_env.sh"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

work_dir() {
  WORK=${TC_WORK:-}
  if [ -z "$WORK" ]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
  else
    rm -rf "$WORK"
    mkdir -p "$WORK"
  fi
}

# find_cli HINT CANDIDATE...: CLI is $MPICAST_CLI, else the first executable CANDIDATE; with
# none, skip (HINT: how to get one).
find_cli() {
  local hint=$1 c
  shift
  CLI=${MPICAST_CLI:-}
  if [ -z "$CLI" ]; then
    for c in "$@"; do
      if [ -x "$c" ]; then CLI=$c; break; fi
    done
  fi
  [ -n "$CLI" ] && [ -x "$CLI" ] || skip "no mpicast executable ($hint)"
}

# need_lib: the launcher and LIBDIR, the flavour's built library, or skip.
need_lib() {
  command -v "$LAUNCHER" >/dev/null || skip "$LAUNCHER not installed"
  LIBDIR=$TOP/build/$FLAVOUR/lib
  [ -e "$LIBDIR/libmpicast.so" ] || skip "$LIBDIR/libmpicast.so missing (make lib)"
}

# runner_or_compile NAME VAR SOURCE (from $TOP, after need_lib and work_dir): unless VAR is
# set or build/<flavour>/bin/NAME is there, compiles SOURCE against the flavour's library
# into $WORK/NAME and exports VAR naming it.
runner_or_compile() {
  local name=$1 var=$2 src=$3
  if [ -z "${!var:-}" ] && [ ! -x "build/$FLAVOUR/bin/$name" ]; then
    note "no build/$FLAVOUR/bin/$name: compiling one into $WORK"
    "$MPICC" -O2 -Wall -Wextra -Werror -Iinclude "$src" -L"$LIBDIR" -lmpicast \
      -Wl,-rpath,"$LIBDIR" -o "$WORK/$name"
    export "$var=$WORK/$name"
  fi
}
