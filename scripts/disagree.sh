#!/usr/bin/env bash
# Ranks that disagree about mpicast must never hang: each job below ends within a bound
# (MPICAST_TIMEOUT_MS=3000 plus launch and abort, far below the 60 s limit of each run)
# with one message that names the ranks and the cause, or, for a broadcast whose root sends
# another size than the receivers posted, with the error class the host MPI uses, at once.
#   a   mpicast loaded on some ranks only (what a forgotten `-x LD_PRELOAD` does)
#   b   MPICAST_* settings that differ between ranks
#   c   counts on either side of the threshold (root 40000 B, the others 20000 B)
#   3   root and receivers both above the threshold with different sizes
source "$(dirname "$0")/test-lib.sh"

PROG=$TC_BINDIR/int_disagree
[ -x "$PROG" ] || fail "$PROG is not built"
unset TC_EXPECT
# The ctest environment multicasts every size (MPICAST_MIN_BYTES=0); here the threshold is
# the default, 32 KiB for 4 ranks (flat). Every setting is given to each group of ranks
# through `env`, with LD_PRELOAD and the differing settings per group.
unset MPICAST_MIN_BYTES
COMMON=(MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat MPICAST_TIMEOUT_MS=3000
        MPICAST_MIN_BYTES=auto)

# mpmd OUT -- [N ENV... -- ARGS... ;]...: one job of groups of N ranks, each group with its
# own environment (`env` words) and arguments, separated by `;`. Sets RC and SECS.
mpmd() {
  local out=$1
  shift 2
  local cmd=("$TC_MPIEXEC")
  [ "$TC_FLAVOUR" = openmpi ] && cmd+=(--oversubscribe --bind-to none)
  local first=1
  while [ $# -gt 0 ]; do
    local n=$1 envs=() args=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    while [ $# -gt 0 ] && [ "$1" != ";" ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    [ $first = 1 ] || cmd+=(:)
    first=0
    cmd+=(-n "$n" env "${COMMON[@]}" "${envs[@]}" "$PROG" "${args[@]}")
  done
  note "${cmd[*]}"
  local t0=$SECONDS
  set +e
  timeout -k 10 60 "${cmd[@]}" >"$out" 2>&1
  RC=$?
  set -e
  SECS=$((SECONDS - t0))
  sed 's/^/   | /' "$out"
}

# expect_abort NAME OUT PATTERN...: the job failed within the bound, and its output has every
# pattern (extended regular expressions), and mpicast's message is printed once.
expect_abort() {
  local name=$1 out=$2
  shift 2
  [ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "$name: hung (killed after 60 s)"
  [ "$RC" != 0 ] || fail "$name: the job succeeded, it should have stopped"
  [ "$SECS" -le 30 ] || fail "$name: took $SECS s to stop (MPICAST_TIMEOUT_MS is 3 s)"
  for p in "$@"; do
    grep -Eq -- "$p" "$out" || fail "$name: no line matches: $p"
  done
  local n
  n=$(grep -c '^mpicast: ' "$out" || true)
  [ "$n" = 1 ] || fail "$name: mpicast's message printed $n times, not once"
  note "$name: stopped after $SECS s with the expected message"
}

P=LD_PRELOAD=$TC_LIB

# a: mpicast on rank 0 only, then on ranks 2 and 3 only.
mpmd "$TC_WORK/a1.out" -- 1 "$P" -- \; 3 --
expect_abort a1 "$TC_WORK/a1.out" \
  "not every rank came to mpicast's setup" \
  'ranks 1-3 never registered with mpicast: mpicast is not loaded there' \
  'LD_PRELOAD'
mpmd "$TC_WORK/a2.out" -- 2 -- \; 2 "$P" --
expect_abort a2 "$TC_WORK/a2.out" \
  'ranks 0, 1 never registered with mpicast' \
  "rank (2|3) is waiting in mpicast's setup"

# b: MPICAST_MIN_BYTES=0 on rank 3 only (a 1000-byte broadcast multicasts there, goes to
# the host MPI elsewhere), and MPICAST_SYNC on rank 3 only (everyone multicasts).
mpmd "$TC_WORK/b1.out" -- 3 "$P" -- --count 1000 \; 1 "$P" MPICAST_MIN_BYTES=0 -- --count 1000
expect_abort b1 "$TC_WORK/b1.out" 'MPICAST_MIN_BYTES: auto on ranks 0-2; 0 on rank 3'
mpmd "$TC_WORK/b2.out" -- 3 "$P" -- \; 1 "$P" MPICAST_SYNC=linear --
expect_abort b2 "$TC_WORK/b2.out" \
  'do not agree on how to set it up' \
  'MPICAST_SYNC: tree on ranks 0-2; linear on rank 3'

# c: the root's 40000 B are above the 32 KiB threshold, the others' 20000 B below: the first
# broadcast (setup), and one after three agreeing broadcasts (the root returns at once and
# is caught at its next call).
mpmd "$TC_WORK/c1.out" -- 4 "$P" -- --count 20000 --root-count 40000
expect_abort c1 "$TC_WORK/c1.out" \
  "ranks 1-3 run mpicast with the same settings but are not in it" 'MPICAST_MIN_BYTES'
mpmd "$TC_WORK/c2.out" -- 4 "$P" -- --count 20000 --root-count 40000 --repeat 3
expect_abort c2 "$TC_WORK/c2.out" \
  'no acknowledgement' 'ranks 1-3 run mpicast with the same settings' \
  'smaller than the threshold'

# 3: both above the threshold. The receivers see the size in the first datagram and fail at
# once through the error handler (here MPI_ERRORS_RETURN), with the host's class; the
# timeout is raised so that "at once" means it.
COMMON+=(MPICAST_TIMEOUT_MS=20000)
mpmd "$TC_WORK/t1.out" -- 4 "$P" -- --count 60000 --root-count 80000 --errors-return
[ "$RC" = 0 ] || fail "truncation: the job failed (exit $RC)"
[ "$SECS" -le 15 ] || fail "truncation: took $SECS s, not at once"
n=$(grep -c 'class [0-9]* (MPI_ERR_TRUNCATE)' "$TC_WORK/t1.out" || true)
[ "$n" = 3 ] || fail "truncation: $n receivers got MPI_ERR_TRUNCATE, not 3"
grep -q 'rank 0 returned 0' "$TC_WORK/t1.out" || fail "truncation: the root did not succeed"
grep -q 'the root, rank 0, sends 80000 bytes, this rank posted 60000' "$TC_WORK/t1.out" \
  || fail "truncation: no message naming the root and both sizes"
note "truncation: MPI_ERR_TRUNCATE on 3 receivers after $SECS s"
mpmd "$TC_WORK/t2.out" -- 4 "$P" -- --count 80000 --root-count 60000 --errors-return
[ "$RC" = 0 ] || fail "shorter message: the job failed (exit $RC)"
[ "$SECS" -le 15 ] || fail "shorter message: took $SECS s, not at once"
if [ "$TC_FLAVOUR" = openmpi ]; then
  # Open MPI's own broadcast delivers the shorter message; so does mpicast (the program
  # checks the data and that nothing beyond it was written).
  n=$(grep -c 'returned 0' "$TC_WORK/t2.out" || true)
  [ "$n" = 4 ] || fail "shorter message: $n ranks succeeded, not 4"
else
  # MPICH's fails with MPI_ERR_OTHER ("message sizes do not match"); so does mpicast.
  n=$(grep -c 'class [0-9]* (MPI_ERR_OTHER)' "$TC_WORK/t2.out" || true)
  [ "$n" = 3 ] || fail "shorter message: $n receivers got MPI_ERR_OTHER, not 3"
  grep -q 'the root, rank 0, sends 60000 bytes, this rank posted 80000' "$TC_WORK/t2.out" \
    || fail "shorter message: no message naming the root and both sizes"
fi
note "shorter message: as the host MPI does, after $SECS s"
# With the default error handler the job ends, at once, naming both sizes.
mpmd "$TC_WORK/t3.out" -- 4 "$P" -- --count 60000 --root-count 80000
[ "$RC" != 0 ] || fail "fatal truncation: the job succeeded"
[ "$SECS" -le 15 ] || fail "fatal truncation: took $SECS s, not at once"
grep -q 'sends 80000 bytes, this rank posted 60000' "$TC_WORK/t3.out" \
  || fail "fatal truncation: no message naming both sizes"
echo "disagree: ok"
