#!/usr/bin/env bash
# The timing simulator against the emulated cluster (docs/sim.md, Calibration; BENCHMARKS.md,
# "Timing simulator"). Per host count H, on one cluster of H hosts at RATE, back to back:
#   1. `mpicast sim calibrate -n H` over the cluster (Open MPI): the simulator's parameters, in
#      OUT/ompi-<H>h.params (its report in OUT/ompi-<H>h.calibrate.txt);
#   2. mcast_bench on the same links: the host MPI's broadcast forced to its binomial tree
#      (coll_tuned_bcast_algorithm 6, unsegmented), mpicast with tree scouts, with linear scouts
#      and the eager multicast, 1 KiB .. 4 MiB, in OUT/ompi-<H>h.csv (.meta, .log, .svg);
# then bench/sim_compare.py simulates every measured broadcast with the fitted parameters and
# writes OUT/compare.md and OUT/compare.csv.
#
#   sim_cluster.sh [OUT]          (default build/bench/sim-<UTC date-time>)
#   SIM_HOSTS="4 6 9"  SIM_RATE=100mbit  SIM_BUDGET=3 (seconds per size and variant)
#   SIM_SIZES=1024,...,4194304  SIM_CAL_ARGS="--stat min" (more arguments for calibrate)
#   SIM_STEPS="measure calibrate" (either alone redoes one step into an OUT that has the other)
# Needs root and `make lib-openmpi build/openmpi/bench/mcast_bench`. The cluster comes down
# after each host count and on any exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"
out=${1:-build/bench/sim-$(date -u +%Y%m%d-%H%M%S)}
hosts=${SIM_HOSTS:-4 6 9}
rate=${SIM_RATE:-100mbit}
budget=${SIM_BUDGET:-3}
sizes=${SIM_SIZES:-1024,2048,4096,8192,16384,32768,65536,131072,262144,524288,1048576,2097152,4194304}
cal_args=${SIM_CAL_ARGS:-}
steps=${SIM_STEPS:-measure calibrate}
bin=$TOP/build/openmpi/bin/mpicast
[ "$(id -u)" = 0 ] || { echo "sim_cluster.sh: needs root (network namespaces)" >&2; exit 1; }
for f in "$bin" build/openmpi/bin/mpicast-goal-run build/openmpi/bench/mcast_bench build/openmpi/lib/libmpicast.so; do
  [ -e "$f" ] || { echo "sim_cluster.sh: $f missing (make lib-openmpi build/openmpi/bench/mcast_bench)" >&2; exit 1; }
done
mkdir -p "$out"
cluster=$HERE/cluster.sh
hf=$(mktemp /tmp/mpicast-hosts.XXXXXX)
trap '"$cluster" down; rm -f "$hf"' EXIT
trap 'exit 130' INT TERM

for h in $hosts; do
  name=ompi-${h}h
  if [[ " $steps " == *" measure "* ]]; then
    echo "== $name: measure" >&2
    # The binomial tree of Open MPI's tuned component, not segmented; mpirun forwards OMPI_MCA_*.
    "$HERE/run.sh" --name "$name" --out "$out" --mpi openmpi --hosts "$h" --rate "$rate" --keep \
      --env OMPI_MCA_coll_tuned_use_dynamic_rules=1 --env OMPI_MCA_coll_tuned_bcast_algorithm=6 \
      --env OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize=0 -- \
      --sizes "$sizes" --variants host,tree,linear,eager --budget "$budget" --reps-min 5 \
      --reps-max 30 --no-barrier --idle-wait
  else
    "$cluster" up "$h" --rate "$rate"
  fi
  [[ " $steps " == *" calibrate "* ]] || { "$cluster" down; continue; }
  echo "== $name: calibrate" >&2
  mapfile -t envs < <("$cluster" mpi-env --mpi openmpi "$hf")
  cal=(env "${envs[@]}" "$bin" sim calibrate -n "$h" --hostfile "$hf" --out "$out/$name.params" $cal_args)
  echo "${cal[*]}" >"$out/$name.calibrate.cmd"
  "${cal[@]}" >"$out/$name.calibrate.txt" 2>&1 || {
    echo "sim_cluster.sh: calibrate failed on $h hosts; last lines:" >&2
    tail -n 20 "$out/$name.calibrate.txt" >&2
    exit 1
  }
  "$cluster" down
done
python3 "$HERE/sim_compare.py" --mpicast "$bin" --dir "$out" --hosts "$(echo $hosts | tr ' ' ,)"
echo "sim_cluster.sh: results in $out (compare.md)" >&2
