#!/usr/bin/env bash
# The bucket of the emulated links, side by side: the old bucket (--burst 3076, two frames)
# against the new default (one frame + 40 us of data: 2038 bytes at 100 Mbit/s), alternating
# launch by launch on a cluster brought up anew for each. Run from the top of the repository
# after `make bench-progs`. Writes OUT/<mpi>-<hosts>h-<part>-<bucket>-<k>.csv.
#   ab.sh OUT LAUNCHES MPI HOSTS small|big
set -euo pipefail
out=$1 launches=$2 mpi=$3 hosts=$4 part=$5
mkdir -p "$out"
case $part in
  small) args=(--sizes 64,256,1024,1500,2048,4096,8192 --variants host,eager,default --budget 2 --reps-min 30 --reps-max 60) ;;
  big) args=(--sizes 1048576 --variants host,tree,eager --budget 3 --reps-min 5 --reps-max 9) ;;
esac
trap 'bench/cluster.sh down' EXIT
for k in $(seq 1 "$launches"); do
  for b in old new; do
    burst=(); [ "$b" = old ] && burst=(--burst 3076)
    bench/cluster.sh up "$hosts" --rate 100mbit "${burst[@]}" 2>/dev/null
    f=$out/$mpi-${hosts}h-$part-$b-$k.csv
    LD_PRELOAD=$PWD/build/$mpi/lib/libmpicast.so bench/cluster.sh run --mpi "$mpi" --timeout 600 \
      --out "$f" --done-marker '# end' --grace 10 -- build/$mpi/bench/mcast_bench "${args[@]}" \
      --no-barrier --idle-wait >/dev/null 2>&1
    echo "$(basename "$f" .csv): $(grep '^bcast' "$f" | awk -F, '{printf "%s/%s %.0f  ", $2, $3, $5 * 1e6}')"
  done
done
