#!/usr/bin/env bash
# What a user reads: a bad setting is printed once (not once per rank), names that other
# tools own (CMake's mpicast_DIR, module systems' MPICAST_HOME, ...) pass, a typo still
# stops with a suggestion, a missing interface is one warning without a doubled prefix
# (not one per communicator), and MPICAST_VERBOSE says the threshold in force per
# communicator (1) and why each broadcast went to the host MPI (2).
source "$(dirname "$0")/test-lib.sh"

PROG=$TC_BINDIR/int_disagree
unset TC_EXPECT MPICAST_MIN_BYTES
NP=4

# run OUT VAR=value... -- ARGS...: the program on NP ranks, preloaded, with these settings
# for every rank. Sets RC.
run() {
  local out=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local prog=$PROG
  if [ "${1:-}" = --prog ]; then prog=$2; shift 2; fi
  launch "$NP" preload
  local cmd=("${LAUNCH[@]}" env MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat "${envs[@]}" "$prog" "$@")
  note "${cmd[*]}"
  set +e
  timeout -k 10 60 "${cmd[@]}" >"$out" 2>&1
  RC=$?
  set -e
  sed 's/^/   | /' "$out"
}

count() { grep -cE -- "$2" "$1" || true; }

run "$TC_WORK/bad.out" MPICAST_TTL=bogus --
[ "$RC" != 0 ] || fail "a bad MPICAST_TTL did not stop the job"
n=$(count "$TC_WORK/bad.out" '^mpicast: MPICAST_TTL=bogus is invalid: expected an integer')
[ "$n" = 1 ] || fail "the bad setting was printed $n times, not once"

run "$TC_WORK/typo.out" MPICAST_IFAEC=lo --
[ "$RC" != 0 ] || fail "a misspelt variable did not stop the job"
n=$(count "$TC_WORK/typo.out" 'MPICAST_IFAEC=lo is invalid: .*did you mean MPICAST_IFACE\?')
[ "$n" = 1 ] || fail "the typo was reported $n times, not once"

run "$TC_WORK/others.out" MPICAST_ROOT=/opt/mpicast mpicast_ROOT=/opt/mpicast \
  mpicast_DIR=/opt/mpicast/lib/cmake/mpicast MPICAST_HOME=/opt/mpicast MPICAST_PREFIX=/opt --
[ "$RC" = 0 ] || fail "names that other tools own stopped the job (exit $RC)"
n=$(count "$TC_WORK/others.out" '^mpicast:')
[ "$n" = 0 ] || fail "names that other tools own made mpicast say something"

run "$TC_WORK/iface.out" MPICAST_IFACE=nonexistent0 -- --prog "$TC_BINDIR/int_comms"
[ "$RC" = 0 ] || fail "a missing interface failed the job (it must fall back)"
n=$(count "$TC_WORK/iface.out" '^mpicast: warning: multicast unavailable: MPICAST_IFACE=nonexistent0')
[ "$n" = 1 ] || fail "the interface warning was printed $n times, not once"
n=$(count "$TC_WORK/iface.out" 'mpicast: .*: mpicast: ')
[ "$n" = 0 ] || fail "a doubled 'mpicast:' prefix"

run "$TC_WORK/v1.out" MPICAST_VERBOSE=1 -- --count 1000
[ "$RC" = 0 ] || fail "MPICAST_VERBOSE=1 failed the job"
grep -q "a communicator of $NP ranks: broadcasts of 32768 bytes and more multicast, smaller ones go to the host MPI (MPICAST_MIN_BYTES=auto: $NP ranks multicast" \
  "$TC_WORK/v1.out" || fail "MPICAST_VERBOSE=1 did not say the threshold and why"
run "$TC_WORK/v1b.out" MPICAST_VERBOSE=1 MPICAST_MIN_BYTES=4k -- --count 1000
grep -q "broadcasts of 4096 bytes and more multicast, .*(MPICAST_MIN_BYTES (or the mpicast_min_bytes hint))" \
  "$TC_WORK/v1b.out" || fail "MPICAST_VERBOSE=1 did not say a set threshold"

run "$TC_WORK/v2.out" MPICAST_VERBOSE=2 -- --count 1000
[ "$RC" = 0 ] || fail "MPICAST_VERBOSE=2 failed the job"
n=$(count "$TC_WORK/v2.out" "MPI_Bcast of 1000 elements from root 0 to the host MPI: 1000 bytes, below this communicator's threshold of 32768 bytes")
[ "$n" = "$NP" ] || fail "MPICAST_VERBOSE=2 logged $n of $NP host broadcasts with their reason"
echo "messages: ok"
