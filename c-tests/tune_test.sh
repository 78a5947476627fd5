#!/usr/bin/env bash
# `mpicast tune` end to end on 3 ranks of one MPI flavour, on loopback:
#
#   c-tests/tune_test.sh [openmpi|mpich]       (default: $TC_FLAVOUR)
#
# Runs `mpicast tune -n 3` with three small sizes and three repetitions, and requires: exit 0,
# a table row per size, the four settings as `export` lines on stdout and in the file of -o
# (with its header), a plot with three curves, and that the file loads: int_config (the
# MPICAST_CONFIG test program, linked with mpicast) runs under MPICAST_CONFIG=that file and
# finds its MPICAST_MIN_BYTES in force (when tune chose "never", 1 GiB, the environment's
# MPICAST_MIN_BYTES=4096 is given instead: the file is still read and checked whole). Then the
# failures: bad usage (2), a runner that is not there (1, named), a job whose multicast modes
# cannot multicast (MPICAST_DISABLE=1: 1, the runner's message), and --dry-run (the loopback
# environment and the launch).
#
# Finds: the CLI in $MPICAST_CLI, else build/<flavour>/bin/mpicast, else
# target/{<flavour>,}/release/mpicast; the runner as the CLI does (build/<flavour>/bin beside
# it); int_config in $TC_INT_CONFIG. Exit 0 pass, 1 fail, 77 skip (no CLI, runner, library or
# launcher). About 5 s per flavour.
set -euo pipefail

# TOP, FLAVOUR, LAUNCHER; loopback only; skip, fail, note; work_dir.
. "$(dirname "${BASH_SOURCE[0]}")/script-lib.sh"
# The settings tune measures under are the defaults (ctest's environment sets some).
unset MPICAST_MIN_BYTES MPICAST_EAGER_BYTES MPICAST_CONFIG MPICAST_DISABLE MPICAST_VERBOSE
# All ranks on this host: every one joins the multicast (as `mpicast tune` sets without
# MPICAST_IFACE; here the interface is set, lo).
export MPICAST_TOPO=flat

work_dir

find_cli "make lib, or MPICAST_CLI" "$TOP/build/$FLAVOUR/bin/mpicast" \
  "$TOP/target/$FLAVOUR/release/mpicast" "$TOP/target/release/mpicast"
command -v "$LAUNCHER" >/dev/null || skip "$LAUNCHER not installed"
[ -e "$TOP/build/$FLAVOUR/lib/libmpicast.so" ] || skip "build/$FLAVOUR/lib/libmpicast.so missing (make lib)"
cd "$TOP"
[ -n "${MPICAST_TUNE_RUNNER:-}" ] || [ -x "build/$FLAVOUR/bin/mpicast-tune-run" ] \
  || skip "no build/$FLAVOUR/bin/mpicast-tune-run (make lib-$FLAVOUR)"
note "CLI $CLI"

# run NAME EXPECTED_STATUS COMMAND... : stdout in $WORK/NAME.out, stderr in .err.
run() {
  local name=$1 want=$2 rc=0
  shift 2
  timeout -k 10 120 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "---- $name (exit $rc, wanted $want): $*"
    cat "$WORK/$name.out" "$WORK/$name.err"
    fail "$name: exit status $rc, wanted $want"
  fi
  note "$name: exit $rc as wanted"
}
has() { grep -qE -- "$2" "$WORK/$1" || { cat "$WORK/$1"; fail "$1 lacks /$2/"; }; }

SIZES=1k,16k,256k
run tune 0 "$CLI" tune -n 3 --mpi "$FLAVOUR" --sizes $SIZES --reps 3 --warmup 1 \
  -o "$WORK/tune.conf" --svg "$WORK/tune.svg"
cat "$WORK/tune.out"
for s in '1 KiB' '16 KiB' '256 KiB'; do has tune.out "^# +$s +[0-9.]+ [µm]?s "; done
has tune.out '^# barrier: host MPI [0-9.]+ [µm]?s, mpicast'
has tune.out '^export MPICAST_MIN_BYTES=[0-9]+(KiB|MiB|GiB)?$'
has tune.out '^export MPICAST_EAGER_BYTES=[0-9]+(KiB|MiB|GiB)?$'
has tune.out '^export MPICAST_FRAG_BYTES=auto$'
has tune.out '^export MPICAST_RCVBUF=[0-9]+(KiB|MiB|GiB)?$'
has tune.conf '^# MPICAST_CONFIG file written by `mpicast tune` on 20[0-9-]+ '
has tune.conf "^# command: mpicast tune -n 3 --mpi $FLAVOUR --sizes $SIZES"
has tune.conf '^# hosts: .*\(3 ranks\)$'
[ "$(grep -c '^export MPICAST_' "$WORK/tune.conf")" = 4 ] || fail "tune.conf: not 4 settings"
[ "$(grep -c '<polyline' "$WORK/tune.svg")" = 3 ] || fail "tune.svg: not 3 curves"
# stdout is a shell script: it sets the four variables.
( eval "$(cat "$WORK/tune.out")"; [ -n "$MPICAST_MIN_BYTES" ] && [ "$MPICAST_FRAG_BYTES" = auto ] ) \
  || fail "stdout does not set the variables in sh"

# The file loads: the threshold it sets is the one in force in a program.
min=$(sed -n 's/^export MPICAST_MIN_BYTES=//p' "$WORK/tune.conf")
bytes() {
  case "$1" in
    *GiB) echo $(( ${1%GiB} << 30 )) ;; *MiB) echo $(( ${1%MiB} << 20 )) ;;
    *KiB) echo $(( ${1%KiB} << 10 )) ;; *) echo "$1" ;;
  esac
}
n=$(bytes "$min")
envmin=()
if [ "$n" -gt $((4 << 20)) ]; then
  note "tune chose never ($min) on loopback: checking the file under MPICAST_MIN_BYTES=4096"
  n=4096
  envmin=(MPICAST_MIN_BYTES=4096)
fi
if [ -n "${TC_INT_CONFIG:-}" ] && [ -x "$TC_INT_CONFIG" ]; then
  launch=("$LAUNCHER" -n 3)
  [ "$FLAVOUR" = openmpi ] && launch=("$LAUNCHER" --oversubscribe -n 3)
  run load 0 env MPICAST_CONFIG="$WORK/tune.conf" MPICAST_TOPO=flat TC_EXPECT=mcast \
    "${envmin[@]}" "${launch[@]}" "$TC_INT_CONFIG" --min "$n"
  has load.out "threshold $n in force"
else
  note "no TC_INT_CONFIG: the file's loading is not checked"
fi

# Failures.
run usage 2 "$CLI" tune --reps 3
has usage.err 'tune needs -n N'
run sizes 2 "$CLI" tune -n 3 --sizes 64
has sizes.err 'at least two different sizes'
run norunner 1 env MPICAST_TUNE_RUNNER="$WORK/nothing" "$CLI" tune -n 3 --mpi "$FLAVOUR"
has norunner.err "MPICAST_TUNE_RUNNER=$WORK/nothing is not a file"
run disabled 1 env MPICAST_DISABLE=1 "$CLI" tune -n 3 --mpi "$FLAVOUR" --sizes 1k,2k --reps 1 \
  --warmup 0
has disabled.err 'the job failed \(a mode did not take the path it measures\)'
has disabled.err 'did not take the path meant'
run dry 0 env -u MPICAST_IFACE -u MPICAST_TTL -u MPICAST_TOPO "$CLI" tune -n 3 --mpi "$FLAVOUR" \
  --dry-run
has dry.out '^MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat .*mpicast-tune-run --sizes 64,128,'
echo "PASS"
