#!/usr/bin/env bash
# What registering every started GOAL run with the process's progress step costs:
# two builds of libmpicast side by side in one run, Open MPI, loopback, launches interleaved
# (old, new, then new, old, ...):
#
#   bench/goal_progress_cost.sh --old PATH [--new PATH] [--rounds N] [--out DIR]
#
#   --old PATH   the library before (a build of the base commit)
#   --new PATH   the library after (default build/openmpi/lib/libmpicast.so)
#   --rounds N   rounds (default 3); each round runs every measure once per library
#
# Measures, each preloaded with the library under test (goal_bench links libmpicast, and the
# preloaded one takes its place: same soname):
#   goal_bench --part bcast     GOAL binomial broadcast (MPICAST_Goal_start + wait) against the
#                               same by hand, 4 ranks, 8 B .. 1 MiB, 100 reps: the median of the
#                               slowest rank (goal_median_s) and the ratio to the hand-written one
#   goal_bench --part overhead  executor cost per `calc 0` action (K = 10000), one rank
#   int_goal                    the c-tests program's wall time (4 ranks, launch included)
#   p2p_overhead                a program that never makes a GOAL handle: MPI_Send/MPI_Recv,
#                               MPI_Wait and MPI_Allreduce latency (2 ranks), with the host MPI
#                               alone as a third column
# Into DIR (default build/bench/goal-progress-<UTC date-time>/): raw CSVs per launch, meta,
# summary.txt (the median over rounds of each figure, per library).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

old="" new=build/openmpi/lib/libmpicast.so rounds=3 out=""
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=$(readlink -f "$2"); shift 2 ;;
    --new) new=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "goal_progress_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$old" ] || { echo "goal_progress_cost.sh: --old PATH is required" >&2; exit 2; }
new=$(readlink -f "$new")
out=${out:-build/bench/goal-progress-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"

export MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat MPICAST_MIN_BYTES=0
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset MPICAST_PROGRESS
launch=(mpirun.openmpi --oversubscribe --bind-to none)

lib=build/openmpi/lib
mkdir -p build/openmpi/bench
gb=build/openmpi/bench/goal_bench po=build/openmpi/bench/p2p_overhead
mpicc.openmpi -O2 -Wall -Wextra -Werror -Iinclude bench/goal_bench.c -L"$TOP/$lib" -lmpicast \
  -Wl,-rpath,"$TOP/$lib" -o "$gb"
mpicc.openmpi -O2 -Wall -Wextra -Werror bench/p2p_overhead.c -ldl -o "$po"
ig=build/openmpi/c-tests/int_goal
[ -x "$ig" ] || { echo "goal_progress_cost.sh: $ig missing (make ctest builds it)" >&2; exit 1; }

{
  echo "command: $cmdline"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc: $(nproc)  loadavg at start: $(cat /proc/loadavg)"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
  echo "old: $old $(stat -c %y "$old")"
  echo "new: $new $(stat -c %y "$new")"
  echo "env: MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat MPICAST_MIN_BYTES=0"
} >"$out/meta"

# run TAG LIB NP PROG ARGS...: preloaded with LIB ("host": none), stdout to TAG.csv.
run() {
  local tag=$1 l=$2 np=$3
  shift 3
  local pre=()
  [ "$l" = host ] || pre=(-x "LD_PRELOAD=$l")
  timeout -k 10 600 "${launch[@]}" -n "$np" "${pre[@]}" "$@" >"$out/$tag.csv" 2>"$out/$tag.log"
}

for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order=(old new); else order=(new old); fi
  echo "== round $r (${order[*]})"
  for which in "${order[@]}"; do
    l=$old
    [ "$which" = new ] && l=$new
    run "bcast-$which-$r" "$l" 4 "$gb" --part bcast --sizes 8,4096,65536,1048576 --reps 100
    run "overhead-$which-$r" "$l" 1 "$gb" --part overhead --k 10000 --reps 20
    s=$(date +%s.%N)
    run "int_goal-$which-$r" "$l" 4 "$ig"
    echo "int_goal,wall_s,$(echo "$(date +%s.%N) - $s" | bc)" >>"$out/int_goal-$which-$r.csv"
  done
  for which in host "${order[@]}"; do
    l=host
    [ "$which" = old ] && l=$old
    [ "$which" = new ] && l=$new
    run "p2p-$which-$r" "$l" 2 "$po" --reps 15
  done
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta"

python3 - "$out" "$rounds" <<'EOF' | tee "$out/summary.txt"
import csv, statistics, sys, os
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(tag):
    p = os.path.join(out, tag + ".csv")
    return [l for l in csv.reader(open(p)) if l and not l[0].startswith("#")]
def med(xs):
    return statistics.median(xs) if xs else float("nan")
libs = ["old", "new"]
print("GOAL binomial broadcast, 4 ranks: median over %d rounds of goal_median_s (us), goal/hand" % rounds)
print("%10s %12s %12s %9s %9s" % ("size", "old us", "new us", "old g/h", "new g/h"))
sizes = [r[0] for r in rows("bcast-old-1") if r[0] != "size"]
for s in sizes:
    v = {}
    for l in libs:
        g = [float(r[2]) for k in range(1, rounds + 1) for r in rows("bcast-%s-%d" % (l, k)) if r[0] == s]
        q = [float(r[6]) for k in range(1, rounds + 1) for r in rows("bcast-%s-%d" % (l, k)) if r[0] == s]
        v[l] = (med(g) * 1e6, med(q))
    print("%10s %12.2f %12.2f %9.3f %9.3f" % (s, v["old"][0], v["new"][0], v["old"][1], v["new"][1]))
print()
print("executor cost per action (ns), K = 10000, median over rounds")
for shape in sorted({r[0] for r in rows("overhead-old-1") if r[0] != "shape"}):
    v = {l: med([float(r[6]) for k in range(1, rounds + 1) for r in rows("overhead-%s-%d" % (l, k)) if r[0] == shape]) for l in libs}
    print("  %-10s old %8.1f  new %8.1f" % (shape, v["old"], v["new"]))
print()
v = {l: med([float(r[2]) for k in range(1, rounds + 1) for r in rows("int_goal-%s-%d" % (l, k)) if r[0] == "int_goal"]) for l in libs}
print("int_goal wall time (s, 4 ranks, launch included): old %.2f  new %.2f" % (v["old"], v["new"]))
print()
print("a program without GOAL (p2p_overhead, 2 ranks): median over rounds of each launch's median")
print("%-16s %-6s %12s %12s %12s %8s" % ("measure", "unit", "host", "old", "new", "new/old"))
keys = [(r[0], r[1], r[2]) for r in rows("p2p-host-1") if r[0] != "measure"]
for (m, c, u) in keys:
    v = {l: med([float(r[3]) for k in range(1, rounds + 1) for r in rows("p2p-%s-%d" % (l, k)) if (r[0], r[1]) == (m, c)]) for l in ["host"] + libs}
    print("%-16s %-6s %12.1f %12.1f %12.1f %8.3f" % (m + "/" + c, u, v["host"], v["old"], v["new"], v["new"] / v["old"]))
EOF
