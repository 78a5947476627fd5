#!/usr/bin/env bash
# The GOAL executor on the emulated cluster, where the links (not the CPUs) carry the data, as
# on a real cluster:
#
#   bench/goal_cluster.sh [--part overlap|bcast] [--hosts N] [--rate 100mbit]
#                         [--mpi openmpi|mpich]... [--out DIR] [--sizes LIST] [--reps R]
#                         [--tests T] [--launches L]
#
# Brings up N hosts (default 4, one rank each; bench/cluster.sh), runs bench/goal_bench.c on
# them for each MPI, and takes the cluster down at the end and on any exit. Parts:
#
#   overlap (default)  LibNBC's overlap of a non-blocking GOAL broadcast with computation,
#            overlap = 1 - (t_total - t_compute) / t_bcast, for each broadcast (`binomial`:
#            seed 004's Listing 2 over point-to-point; `mcast`: one `mcast` from rank 0 over
#            the reliable multicast channel) and each way of making progress:
#              poll     MPICAST_PROGRESS=poll, MPICAST_Goal_test between T slices of the
#                       computation (default T 32)
#              none     MPICAST_PROGRESS=poll, the computation in one piece (no progress until
#                       the wait): what the application gets without either
#              thread   MPICAST_PROGRESS=thread, the computation in one piece
#            Writes DIR/overlap-<mpi>-<algo>-<mode>.csv (and .log). Defaults: sizes
#            65536,1048576,4194304, 7 reps.
#   bcast    the binomial broadcast run by the executor against the same tree written by hand
#            with PMPI calls, alternating rep by rep (goal_bench --part bcast), L launches
#            (default 2) per MPI. Writes DIR/bcast-<mpi>-<launch>.csv (and .log). Defaults:
#            sizes 8 B to 4 MiB, 400 reps (a quarter from 1 MiB).
#
# DIR/meta has the command, date, machine and commit (default DIR:
# build/bench/goal-<part>-<UTC date-time>). Needs root and build/<mpi>/bench/goal_bench (make
# goal-bench). bench/goal_overlap.sh is this script with --part overlap.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

part=overlap hosts=4 rate=100mbit out="" mpis=() sizes="" reps="" tests=32 launches=2
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --part) part=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mpi) mpis+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "goal_cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $part in
  overlap) sizes=${sizes:-65536,1048576,4194304} reps=${reps:-7} ;;
  bcast) sizes=${sizes:-8,64,512,4096,32768,262144,1048576,4194304} reps=${reps:-400} ;;
  *) echo "goal_cluster.sh: --part wants overlap or bcast, not $part" >&2; exit 2 ;;
esac
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi mpich)
[ "$(id -u)" = 0 ] || { echo "goal_cluster.sh: needs root (network namespaces)" >&2; exit 1; }
for f in "${mpis[@]}"; do
  [ -x "build/$f/bench/goal_bench" ] \
    || { echo "goal_cluster.sh: no build/$f/bench/goal_bench (make goal-bench)" >&2; exit 1; }
done
out=${out:-build/bench/goal-$part-$(date -u +%Y%m%d-%H%M%S)}
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
  echo "parameters: part=$part sizes=$sizes reps=$reps tests=$tests launches=$launches"
} >"$out/meta"

failed=()
# One job: run_one NAME PROGRESS ARGS... (goal_bench's arguments after --part).
run_one() {
  local name=$1 progress=$2 f=$3
  shift 3
  echo "== $name"
  # --done-marker: MPICH over UCX's TCP sometimes never returns from MPI_Finalize.
  if ! MPICAST_PROGRESS=$progress timeout -k 10 900 "$HERE/cluster.sh" run --mpi "$f" \
      --timeout 850 --out "$out/$name.csv" --done-marker "# end" --grace 10 -- \
      "build/$f/bench/goal_bench" "$@" 2>"$out/$name.log"; then
    echo "   FAILED (see $out/$name.log)" >&2
    tail -n 20 "$out/$name.log" >&2
    failed+=("$name")
    return
  fi
  grep -v '^#' "$out/$name.csv" | column -s, -t | sed 's/^/   /'
  if grep -q 'cluster.sh: finalize-hang' "$out/$name.log"; then
    echo "   (MPI_Finalize did not return; ended after the last line)"
  fi
}

for f in "${mpis[@]}"; do
  if [ "$part" = bcast ]; then
    for l in $(seq 1 "$launches"); do
      run_one "bcast-$f-$l" poll "$f" --part bcast --sizes "$sizes" --reps "$reps"
    done
    continue
  fi
  for algo in binomial mcast; do
    for mode in poll none thread; do
      progress=poll t=$tests
      [ "$mode" = thread ] && progress=thread
      [ "$mode" = poll ] || t=1
      run_one "overlap-$f-$algo-$mode" "$progress" "$f" --part overlap --algo "$algo" \
        --sizes "$sizes" --reps "$reps" --tests "$t"
    done
  done
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta"
echo "date at end: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/meta"
echo "results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "goal_cluster.sh: failed: ${failed[*]}" >&2
  exit 1
fi
