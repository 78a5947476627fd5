#!/usr/bin/env bash
# Seed 004's Listings 2 and 3 under mpirun for every group size: for each N in the list
# (default 1..64; GOAL_SWEEP_RANKS overrides), generate the binomial broadcast (1000 bytes from
# rank 0) and the dissemination allreduce (sumInt32 over 64 bytes) for N ranks with
# `mpicast goal gen`, run each through `mpicast goal run` on N ranks of one MPI flavour on
# loopback, and require the right data on every rank: rank 0's bytes after the broadcast
# (--expect bcast), the int32 sum of every rank's input after the allreduce
# (--expect sum-int32, against PMPI_Allreduce).
#
#   c-tests/goal_sweep.sh [openmpi|mpich]       (default: $TC_FLAVOUR)
#
# CLI and runner as c-tests/goal_run_test.sh finds them. Exit 0 pass, 1 fail, 77 skip.
set -euo pipefail

# TOP, FLAVOUR; loopback only; skip, fail, note.
. "$(dirname "${BASH_SOURCE[0]}")/script-lib.sh"
CLI=${MPICAST_CLI:-}
if [ -z "$CLI" ]; then
  for c in "$TOP/target/$FLAVOUR/release/mpicast" "$TOP/target/release/mpicast"; do
    if [ -x "$c" ]; then CLI=$c; break; fi
  done
fi
[ -n "$CLI" ] || { echo "SKIP: no mpicast executable"; exit 77; }
[ -x "$TOP/build/$FLAVOUR/bin/mpicast-goal-run" ] || [ -n "${MPICAST_GOAL_RUNNER:-}" ] \
  || { echo "SKIP: no build/$FLAVOUR/bin/mpicast-goal-run (make goal-tools)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$TOP"

ranks=${GOAL_SWEEP_RANKS:-$(seq 1 64)}
for n in $ranks; do
  "$CLI" goal gen binomial-bcast --ranks "$n" --size 1000 -o "$WORK/b.goal"
  "$CLI" goal gen dissemination-allreduce --ranks "$n" --size 64 --op sumInt32 -o "$WORK/a.goal"
  for job in "b.goal --buffer buf=1000 --expect bcast" \
             "a.goal --buffer buf=64 --buffer tmp=64 --expect sum-int32"; do
    set -- $job
    file=$1
    shift
    if ! timeout -k 10 120 "$CLI" goal run -n "$n" --mpi "$FLAVOUR" "$WORK/$file" "$@" \
        >"$WORK/out" 2>&1; then
      echo "---- $n ranks: $file $*"
      cat "$WORK/out"
      echo "FAIL: $file on $n ranks"
      exit 1
    fi
    grep -qE "^expect 1/1: buf is .* on $n ranks$" "$WORK/out" \
      || { cat "$WORK/out"; echo "FAIL: $file on $n ranks: no expect line"; exit 1; }
  done
  printf '%s ' "$n"
done
echo
echo "PASS: goal sweep ($FLAVOUR): binomial broadcast and dissemination allreduce right on $(echo $ranks | wc -w) group sizes"
