#!/usr/bin/env bash
# Does mpicast's speed-up hold against newer MPIs' tuned broadcasts? 1 MiB
# broadcasts on 9 emulated hosts at 100 Mbit/s (cluster instance 7), each MPI's own MPI_Bcast
# (mcast_bench's `host` variant, PMPI_Bcast) against mpicast's (`default` and `linear`), one
# launch per MPI, variants interleaved round by round inside it:
#
#   bench/newer_mpis.sh [OUT_DIR] [MPI...]    (default MPIs: openmpi openmpi5 mpich mpich5 impi)
#
# Intel MPI (impi) runs the mpich5 library and benchmark (the same ABI) under its own launcher.
#
# Needs root, `make lib bench-progs` and `make deps-wheels` (the wheels' MPIs preload only the
# ranks: RANK_PRELOAD, bench/jobrun.sh). Each job is bounded (300 s); the cluster is torn down
# on any exit. Figures: BENCHMARKS.md, "Newer MPIs".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"
export BENCH_CLUSTER=7
out=${1:-build/bench/newer-mpis-$(date -u +%Y%m%dT%H%M%SZ)}
shift || true
mpis=("$@")
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi openmpi5 mpich mpich5 impi)
mkdir -p "$out"
trap '"$HERE/cluster.sh" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
"$HERE/cluster.sh" up 9 --rate 100mbit
for m in "${mpis[@]}"; do
  pre=LD_PRELOAD b=$m
  case $m in *5) pre=RANK_PRELOAD ;; impi) pre=RANK_PRELOAD b=mpich5 ;; esac
  echo "== $m $(date -u +%T)"
  rc=0
  env "$pre=$TOP/build/$b/lib/libmpicast.so" "$HERE/cluster.sh" run --mpi "$m" --timeout 300 \
    --out "$out/$m.csv" --done-marker "# end" --grace 15 -- \
    "$TOP/build/$b/bench/mcast_bench" --sizes 1048576 --variants host,default,linear \
    --budget 40 --reps-min 10 --reps-max 40 --no-barrier 2>"$out/$m.log" || rc=$?
  echo "$m: exit $rc"
  grep -E '^bcast,' "$out/$m.csv" || true
done
