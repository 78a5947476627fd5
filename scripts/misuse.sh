#!/usr/bin/env bash
# Misuse that must end a job, or must not stop it, within a bound (c-tests: int_misuse_script):
#   settings    a bad MPICAST_* setting stops a program that makes extension calls only, at its
#               first call, with one message naming the variable (not an error code per call)
#   unreceived  a multicast or dynamic broadcast of 160000 bytes that no rank receives: every
#               rank finalizes within the bound, and each destination names what it never took
#   mismatch    rank 0 calls MPI_Bcast (1 MiB, scouted) where the others call MPI_Barrier: the
#               job ends after MPICAST_TIMEOUT_MS with one message that says where they wait
source "$(dirname "$0")/test-lib.sh"

PROG=$TC_BINDIR/int_misuse
[ -x "$PROG" ] || fail "$PROG is not built"
unset TC_EXPECT

run() { # OUT SECONDS ENV... -- ARGS...: one 4-rank preloaded job; sets RC and SECS
  local out=$1 limit=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  launch 4 preload
  local cmd=("${LAUNCH[@]}" env "${envs[@]}" "$PROG" "$@")
  note "${cmd[*]}"
  local t0=$SECONDS
  set +e
  timeout -k 10 "$limit" "${cmd[@]}" >"$out" 2>&1
  RC=$?
  set -e
  SECS=$((SECONDS - t0))
  head -c 4000 "$out" | sed 's/^/   | /'
}

# settings: a misspelt variable (MPICAST_SEGMENT_BYTE for MPICAST_SEGMENT_BYTES).
run "$TC_WORK/settings.out" 60 MPICAST_SEGMENT_BYTE=8k -- --settings
[ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "settings: hung"
[ "$RC" != 0 ] || fail "settings: the job went on with a bad setting"
grep -q 'MPICAST_SEGMENT_BYTE' "$TC_WORK/settings.out" \
  || fail "settings: no message names MPICAST_SEGMENT_BYTE"
n=$(grep -c 'misuse settings: rank [0-9]* call' "$TC_WORK/settings.out" || true)
[ "$n" = 0 ] || fail "settings: $n extension calls returned instead of stopping the job"
n=$(grep -c '^mpicast: ' "$TC_WORK/settings.out" || true)
[ "$n" -le 4 ] || fail "settings: mpicast printed $n lines, not one message"
note "settings: stopped after $SECS s, naming the variable"

# unreceived: MPICAST_TIMEOUT_MS bounds the end; the job must finish, well inside it.
for kind in imcast dbcast; do
  run "$TC_WORK/$kind.out" 90 MPICAST_TIMEOUT_MS=5000 -- --unreceived "$kind"
  [ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "unreceived $kind: MPI_Finalize hung"
  [ "$RC" = 0 ] || fail "unreceived $kind: the job failed (exit $RC)"
  n=$(grep -c 'misuse unreceived: rank [0-9] finished' "$TC_WORK/$kind.out" || true)
  [ "$n" = 4 ] || fail "unreceived $kind: $n ranks finished, not 4"
  if [ "$kind" = dbcast ]; then
    n=$(grep -c 'no receive took it: from rank 0 with tag 11, 160000 bytes' "$TC_WORK/$kind.out" || true)
    [ "$n" = 3 ] || fail "unreceived dbcast: $n destinations named the broadcast they never took, not 3"
  fi
  note "unreceived $kind: finished after $SECS s"
done
# mismatch: an erroneous program the host MPI leaves hanging; mpicast ends it, saying why.
run "$TC_WORK/mismatch.out" 60 MPICAST_TIMEOUT_MS=3000 MPICAST_EAGER_BYTES=0 -- --mismatch
[ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "mismatch: hung"
[ "$RC" != 0 ] || fail "mismatch: the job ended well"
n=$(grep -c 'misuse mismatch: rank [0-9] came out' "$TC_WORK/mismatch.out" || true)
[ "$n" = 0 ] || fail "mismatch: $n ranks came out of mismatched collectives"
grep -q 'MPI_Bcast (operation 2 on a communicator of 4 ranks, this is rank 0): no scout from' \
  "$TC_WORK/mismatch.out" || fail "mismatch: the root did not say it has no scouts"
grep -qE 'ranks? [0-9, -]+ (is|are) waiting in MPI_Barrier on a communicator of 4 ranks' \
  "$TC_WORK/mismatch.out" || fail "mismatch: the message does not say the others wait in MPI_Barrier"
n=$(grep -c '^mpicast: ' "$TC_WORK/mismatch.out" || true)
[ "$n" = 1 ] || fail "mismatch: $n messages, not one"
note "mismatch: stopped after $SECS s with one message"
echo "misuse: ok"
