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
