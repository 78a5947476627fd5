#!/usr/bin/env bash
# `make bench`: every configuration of issue 3 on the emulated cluster, one after the other,
# then the summary table (summary.md) with the targets as measured.
#
#   full.sh [OUT]     (default build/bench/<UTC date-time>)
#   BENCH_CONFIGS=REGEX   only the configurations whose name matches (e.g. 'ompi-9h|overhead')
#   BENCH_BUDGET=S        seconds per message size and configuration (default 8)
#
# Configurations (name: MPI, hosts x ranks per host, link rate, loss):
#   {ompi,mpich}-{4,6,9}h-100m     the seed's experiment: 1 B .. 16 MiB, 100 Mbit/s
#   {ompi,mpich}-{4,6,9}h-1g       the same at 1 Gbit/s
#   {ompi,mpich}-4x2-100m          4 hosts x 2 ranks: only host leaders multicast
#   {ompi,mpich}-9h-loss           9 hosts, 100 Mbit/s, 64 KiB, 1 MiB, 4 MiB, mpicast only, with
#                                  0%, 1% and 5% of the multicast datagrams dropped at host 9,
#                                  back to back on one cluster
#   ompi-9h-100m-diag-rcvbuf512k   diagnostic: 9 hosts with MPICAST_RCVBUF=512KiB
#   {ompi,mpich}-overhead          4 ranks on loopback, 8 B: MPI_Bcast through the shim
#                                  (below the threshold) against PMPI_Bcast, no cluster
# Each writes NAME.csv, NAME.log, NAME.meta and NAME.svg into OUT (see run.sh).
# Every job has a timeout; the cluster comes down after each configuration and on any exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"
out=${1:-build/bench/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
filter=${BENCH_CONFIGS:-.}
budget=${BENCH_BUDGET:-8}
[ "$(id -u)" = 0 ] || { echo "full.sh: needs root (network namespaces)" >&2; exit 1; }

flavours=()
for f in openmpi mpich; do
  [ -x "build/$f/bench/mcast_bench" ] && flavours+=("$f")
done
[ ${#flavours[@]} -gt 0 ] || { echo "full.sh: no build/<flavour>/bench/mcast_bench (make bench builds them)" >&2; exit 1; }
short() { [ "$1" = openmpi ] && echo ompi || echo mpich; }

child=""
trap '"$HERE/cluster.sh" down' EXIT
trap '[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; }; exit 130' INT TERM

failed=()
config() { # NAME RUN.SH-ARGS... -- MCAST_BENCH-ARGS...
  local name=$1
  shift
  [[ $name =~ $filter ]] || return 0
  echo "== $name" >&2
  local rc=0
  "$HERE/run.sh" --name "$name" --out "$out" "$@" &
  child=$!
  wait "$child" || rc=$?
  child=""
  [ "$rc" = 0 ] || failed+=("$name")
}

# --idle-wait: ranks that are done wait for the others asleep, not busy-polling the cores that
# the emulated hosts share (see mcast_bench.c and bench/README.md); every variant alike.
common=(--budget "$budget" --reps-min 5 --reps-max 30 --barrier-reps 200 --idle-wait)
for f in "${flavours[@]}"; do
  s=$(short "$f")
  for h in 4 6 9; do
    config "$s-${h}h-100m" --mpi "$f" --hosts "$h" --rate 100mbit -- "${common[@]}"
  done
done
for f in "${flavours[@]}"; do
  s=$(short "$f")
  config "$s-4x2-100m" --mpi "$f" --hosts 4 --ppn 2 --rate 100mbit -- "${common[@]}"
  config "$s-9h-loss" --mpi "$f" --hosts 9 --rate 100mbit --loss 9:0,1,5 -- \
    --sizes 65536,1048576,4194304 --variants tree,linear,default --budget "$budget" \
    --reps-min 10 --reps-max 30 --no-barrier --idle-wait
done
# Diagnostic, not a target: the same 9 hosts with mpicast's socket buffers (and so its window)
# at 512 KiB instead of 8 MiB, to show what the window costs when it exceeds the sending
# host's queue (see BENCHMARKS.md).
config ompi-9h-100m-diag-rcvbuf512k --mpi openmpi --hosts 9 --rate 100mbit --env MPICAST_RCVBUF=512KiB -- \
  --sizes 65536,262144,1048576,4194304,16777216 --budget "$budget" --reps-min 5 --reps-max 30 --no-barrier --idle-wait
for f in "${flavours[@]}"; do
  s=$(short "$f")
  for h in 4 6 9; do
    config "$s-${h}h-1g" --mpi "$f" --hosts "$h" --rate 1gbit -- "${common[@]}"
  done
done

# The shim's cost on the host MPI's own path: loopback, 4 ranks, 8 B (below MPICAST_MIN_BYTES,
# so MPI_Bcast hands the call to PMPI_Bcast). No multicast is sent: MPICAST_IFACE=lo and TTL 0
# all the same.
for f in "${flavours[@]}"; do
  s=$(short "$f")
  name=$s-overhead
  [[ $name =~ $filter ]] || continue
  echo "== $name" >&2
  lib=build/$f/lib/libmpicast.so
  if [ "$f" = openmpi ]; then
    launch=(mpirun.openmpi --oversubscribe --bind-to none -n 4 --mca mpi_yield_when_idle 1 -x "LD_PRELOAD=$lib"
      -x MPICAST_IFACE=lo -x MPICAST_TTL=0 -x MPICAST_STATS=1)
  else
    launch=(mpiexec.mpich -n 4 -genv LD_PRELOAD "$lib" -genv MPICAST_IFACE lo -genv MPICAST_TTL 0
      -genv MPICAST_STATS 1)
  fi
  # Open MPI's call takes 0.3 us here, MPICH's 0.1 ms (its ranks busy-poll on 2 cores): 201
  # blocks for the first, 41 for the second. The placement of 4 ranks on 2 cores, fixed for
  # one launch, moves the figure by a percent or two from launch to launch: OVERHEAD_RUNS
  # launches (default 5), all in one CSV; the summary reports their median and range.
  blocks=201
  [ "$f" = openmpi ] || blocks=41
  runs=${OVERHEAD_RUNS:-5}
  cmd="${launch[*]} build/$f/bench/mcast_bench --overhead --size 8 --iters 2000 --blocks $blocks  (x$runs)"
  {
    echo "name=$name"
    echo "mpi=$f"
    echo "hosts=1"
    echo "ppn=4"
    echo "rate=loopback"
    echo "command=$cmd"
    echo "date=$(date -u +%FT%TZ)"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$out/$name.meta"
  rc=0
  : >"$out/$name.csv"
  : >"$out/$name.log"
  for ((k = 0; k < runs && rc == 0; k++)); do
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 10 600 "${launch[@]}" \
      "build/$f/bench/mcast_bench" --overhead --size 8 --iters 2000 --blocks "$blocks" \
      >>"$out/$name.csv" 2>>"$out/$name.log" &
    child=$!
    wait "$child" || rc=$?
    child=""
  done
  echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/$name.meta"
  echo "exit=$rc" >>"$out/$name.meta"
  grep -h '^mpicast: stats:' "$out/$name.log" | sed 's/^/stats=/' >>"$out/$name.meta" || true
  [ "$rc" = 0 ] || { failed+=("$name"); tail -n 20 "$out/$name.log" >&2; }
done

"$HERE/cluster.sh" down
trap - EXIT INT TERM
python3 "$HERE/summary.py" "$out" >"$out/summary.md"
cat "$out/summary.md"
echo
echo "full.sh: results in $out (summary.md, *.csv, *.svg)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "full.sh: failed configurations: ${failed[*]}" >&2
  exit 1
fi
