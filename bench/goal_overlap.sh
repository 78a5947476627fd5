#!/usr/bin/env bash
# Overlap of a non-blocking GOAL broadcast with computation on the emulated cluster, where the
# links (not the CPUs) bound the transfer, as on a real cluster:
#
#   bench/goal_overlap.sh [--hosts N] [--rate 100mbit] [--mpi openmpi|mpich]... [--out DIR]
#                         [--sizes LIST] [--reps R] [--tests T]
#
# Brings up N hosts (default 4, one rank each; bench/cluster.sh), and for each MPI, each
# broadcast (`binomial`: seed 004's Listing 2 over point-to-point; `mcast`: one `mcast` from
# rank 0 over the reliable multicast channel) and each way of making progress runs
# `goal_bench --part overlap` (bench/goal_bench.c: LibNBC's measure, overlap =
# 1 - (t_total - t_compute) / t_bcast):
#   poll     MPICAST_PROGRESS=poll, MPICAST_Goal_test between T slices of the computation
#   none     MPICAST_PROGRESS=poll, the computation in one piece (no progress until the wait):
#            what the application gets without either
#   thread   MPICAST_PROGRESS=thread, the computation in one piece
# Writes DIR/overlap-<mpi>-<algo>-<mode>.csv (and .log) and DIR/meta (default DIR:
# build/bench/goal-overlap-<UTC date-time>). The cluster comes down at the end and on any exit.
# Needs root and build/<mpi>/bench/goal_bench (make goal-bench).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

hosts=4 rate=100mbit out="" mpis=() sizes=65536,1048576,4194304 reps=7 tests=32
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mpi) mpis+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "goal_overlap.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi mpich)
[ "$(id -u)" = 0 ] || { echo "goal_overlap.sh: needs root (network namespaces)" >&2; exit 1; }
for f in "${mpis[@]}"; do
  [ -x "build/$f/bench/goal_bench" ] \
    || { echo "goal_overlap.sh: no build/$f/bench/goal_bench (make goal-bench)" >&2; exit 1; }
done
out=${out:-build/bench/goal-overlap-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"

trap '"$HERE/cluster.sh" down >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
"$HERE/cluster.sh" up "$hosts" --rate "$rate"
{
  echo "command: $cmdline"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc: $(nproc)"
  echo "uname -r: $(uname -r)"
  echo "loadavg at start: $(cat /proc/loadavg)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "cluster: $hosts hosts, one rank each, $rate links"
  echo "parameters: sizes=$sizes reps=$reps tests=$tests"
} >"$out/meta"

failed=()
for f in "${mpis[@]}"; do
  for algo in binomial mcast; do
    for mode in poll none thread; do
      name="overlap-$f-$algo-$mode"
      progress=poll t=$tests
      [ "$mode" = thread ] && progress=thread
      [ "$mode" = poll ] || t=1
      echo "== $name"
      # --done-marker: MPICH over UCX's TCP sometimes never returns from MPI_Finalize.
      if ! MPICAST_PROGRESS=$progress timeout -k 10 900 "$HERE/cluster.sh" run --mpi "$f" \
          --timeout 850 --out "$out/$name.csv" --done-marker "# end" --grace 10 -- \
          "build/$f/bench/goal_bench" --part overlap --algo "$algo" \
          --sizes "$sizes" --reps "$reps" --tests "$t" 2>"$out/$name.log"; then
        echo "   FAILED (see $out/$name.log)" >&2
        tail -n 20 "$out/$name.log" >&2
        failed+=("$name")
        continue
      fi
      grep -v '^#' "$out/$name.csv" | column -s, -t | sed 's/^/   /'
      if grep -q 'cluster.sh: finalize-hang' "$out/$name.log"; then
        echo "   (MPI_Finalize did not return; ended after the last line)"
      fi
    done
  done
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta"
echo "date at end: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/meta"
echo "results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "goal_overlap.sh: failed: ${failed[*]}" >&2
  exit 1
fi
