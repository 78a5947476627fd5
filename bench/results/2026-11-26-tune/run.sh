#!/usr/bin/env bash
# The runs of this directory: `mpicast tune` on the emulated cluster (instance BENCH_CLUSTER=2,
# 6 hosts, one rank each), then a sweep with the file it wrote loaded (MPICAST_CONFIG): the
# default MPI_Bcast against the host MPI's (bench/mcast_bench --variants host,default), per MPI
# and link rate. From the repository's top, as root, after `make lib bench-progs`:
#
#   bench/results/2026-11-26-tune/run.sh OUT [RATE...]     (RATE: 100mbit 1gbit; MPIS="openmpi mpich")
#
# Writes per MPI and rate into OUT: <mpi>-<rate>.tune.txt (stdout of tune), .tune.err, .conf
# (its -o file), .svg, .raw (the runner's output: every repetition), .sweep.csv (mcast_bench
# with the file), .cmd (the commands). The cluster
# is torn down on exit, error or interrupt.
set -euo pipefail
export BENCH_CLUSTER=2
out=${1:?usage: run.sh OUT [RATE...]}
shift
rates=("${@:-100mbit}")
[ ${#rates[@]} -gt 0 ] || rates=(100mbit)
mpis=${MPIS:-openmpi}
hosts=${TUNE_HOSTS:-6}
sweep_sizes=${SWEEP_SIZES:-64,256,1024,1500,2048,3072,4096,6144,8192,16384,32768,65536,262144,1048576,4194304}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for mpi in $mpis; do
  for f in "build/$mpi/bin/mpicast" "build/$mpi/bin/mpicast-tune-run" "build/$mpi/bench/mcast_bench"; do
    [ -x "$f" ] || { echo "run.sh: $f missing (make lib bench-progs)" >&2; exit 1; }
  done
done
cluster=bench/cluster.sh
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
hf=$(mktemp)
for rate in "${rates[@]}"; do
  "$cluster" down >/dev/null 2>&1 || true
  "$cluster" up "$hosts" --rate "$rate"
  for mpi in $mpis; do
    name=$mpi-$rate
    mapfile -t envs < <("$cluster" mpi-env --mpi "$mpi" "$hf")
    tune=(env "${envs[@]}" "build/$mpi/bin/mpicast" tune -n "$hosts" --mpi "$mpi" --hostfile "$hf"
          -o "$out/$name.conf" --svg "$out/$name.svg" --raw "$out/$name.raw" ${TUNE_ARGS:-})
    echo "${tune[*]}" >"$out/$name.cmd"
    echo "== $name: tune" >&2
    s=$SECONDS
    "${tune[@]}" >"$out/$name.tune.txt" 2>"$out/$name.tune.err"
    echo "# tune took $((SECONDS - s)) s" >>"$out/$name.tune.err"
    sweep=(env MPICAST_CONFIG="$out/$name.conf" LD_PRELOAD="$PWD/build/$mpi/lib/libmpicast.so"
           "$cluster" run --mpi "$mpi" --timeout 900 --out "$out/$name.sweep.csv"
           --done-marker "# end" --grace 10 -- "build/$mpi/bench/mcast_bench"
           --variants host,default --sizes "$sweep_sizes" --no-barrier --budget 4 --reps-min 9
           --reps-max 25)
    echo "${sweep[*]}" >>"$out/$name.cmd"
    echo "== $name: sweep with the file" >&2
    # --done-marker: MPICH over UCX's TCP sometimes never returns from MPI_Finalize.
    "${sweep[@]}" 2>"$out/$name.sweep.err"
  done
done
rm -f "$hf"
