#!/usr/bin/env bash
# Seed 002's question at scale (see README.md): every broadcast generator from 8 to 2^20 ranks
# at 1 Gbit/s and 100 Gbit/s parameters. Run from the top of the source tree:
#   bench/results/2026-11-26-sim-scale/run.sh [MPICAST]
set -euo pipefail
bin=${1:-target/release/mpicast}
d=bench/results/2026-11-26-sim-scale
algos=binomial-bcast,binary-tree-bcast,chain-bcast,scout-tree-bcast,scout-linear-bcast,eager-mcast-bcast
for net in 1gbit 100gbit; do
  /usr/bin/time -f "$net: %e s wall, %U s user, %M KiB peak" "$bin" sim sweep --gen "$algos" \
    --ranks 8..1048576 --size 1024,65536,1048576 --params "bench/sim/$net.params" \
    --csv "$d/$net.csv" --svg "$d/$net.svg" 2>>"$d/sweep.log"
done
