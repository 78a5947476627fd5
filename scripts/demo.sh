#!/usr/bin/env bash
# `make demo`: bench/bcast_bench on loopback, once on the host MPI and once
# with the Open MPI build of libmpicast preloaded, in the same run, and one
# table of the two side by side.
#   demo.sh LIB BENCH OUTDIR   (env: DEMO_NP, DEMO_SIZES, DEMO_REPS)
set -euo pipefail
lib=$1 bench=$2 out=$3
np=${DEMO_NP:-4}
args=(--sizes "${DEMO_SIZES:-1,1024,16384,65536,262144,1048576,4194304}" --reps "${DEMO_REPS:-30}" --barrier)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0
run=(mpirun.openmpi --oversubscribe --bind-to none -n "$np")
mkdir -p "$out"

echo "host MPI: ${run[*]} $bench ${args[*]}"
timeout -k 10 600 "${run[@]}" "$bench" "${args[@]}" >"$out/host.csv"
echo "mpicast:  MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0 ${run[*]} -x LD_PRELOAD=$lib $bench ${args[*]}"
timeout -k 10 600 "${run[@]}" -x "LD_PRELOAD=$lib" "$bench" "${args[@]}" >"$out/mpicast.csv"
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
echo "machine:  $(uname -n), $(nproc) cores, ${cpu:-unknown cpu}, Linux $(uname -r), loopback, $np ranks"
echo "figures:  median over reps of the slowest rank's time (CSV in $out); ratio = mpicast / host, below 1 = mpicast faster"
echo
printf '%-8s %10s %14s %14s %8s\n' op size "host MPI (us)" "mpicast (us)" ratio
awk -F, '
  /^#/ || $1 == "op" { next }
  FNR == NR { host[$1 "," $2] = $4; next }
  {
    h = host[$1 "," $2]
    ratio = (h > 0) ? $4 / h : 0
    printf "%-8s %10s %14.1f %14.1f %8.2f\n", $1, $2, h * 1e6, $4 * 1e6, ratio
  }' "$out/host.csv" "$out/mpicast.csv"
