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
export MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0 MPICAST_TOPO=flat
run=(mpirun.openmpi --oversubscribe --bind-to none -n "$np")
mkdir -p "$out"

echo "host MPI (shared memory): ${run[*]} $bench ${args[*]}"
timeout -k 10 600 "${run[@]}" "$bench" "${args[@]}" >"$out/host.csv"
# Between hosts the host MPI moves data over TCP: the same run with shared memory off is
# its network path, here over the same loopback interface that mpicast multicasts on.
echo "host MPI (TCP):           ${run[*]} --mca btl tcp,self $bench ${args[*]}"
timeout -k 10 600 "${run[@]}" --mca btl tcp,self "$bench" "${args[@]}" >"$out/host-tcp.csv"
echo "mpicast:                  MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0 MPICAST_TOPO=flat ${run[*]} -x LD_PRELOAD=$lib $bench ${args[*]}"
timeout -k 10 600 "${run[@]}" -x "LD_PRELOAD=$lib" "$bench" "${args[@]}" >"$out/mpicast.csv"
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
echo "machine:  $(uname -n), $(nproc) cores, ${cpu:-unknown cpu}, Linux $(uname -r), loopback, $np ranks, $(date -u +%F)"
echo "figures:  median over reps of the slowest rank's time, microseconds (CSV in $out)"
echo "ratios:   host time / mpicast time: above 1 = mpicast faster"
echo
printf '%-8s %10s %12s %12s %12s %9s %9s\n' op size "shm (us)" "tcp (us)" "mpicast (us)" "shm/mc" "tcp/mc"
awk -F, '
  /^#/ || $1 == "op" { next }
  FILENAME == ARGV[1] { shm[$1 "," $2] = $4; next }
  FILENAME == ARGV[2] { tcp[$1 "," $2] = $4; next }
  {
    k = $1 "," $2; m = $4
    printf "%-8s %10s %12.1f %12.1f %12.1f %9.2f %9.2f\n", $1, $2, shm[k] * 1e6, tcp[k] * 1e6, m * 1e6,
      (m > 0) ? shm[k] / m : 0, (m > 0) ? tcp[k] / m : 0
  }' "$out/host.csv" "$out/host-tcp.csv" "$out/mpicast.csv"
