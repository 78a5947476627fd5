#!/usr/bin/env bash
# Seed 003's figures on the emulated switched network: k simultaneous multicasts of 64 KiB and
# 1 MiB to random destination sets, by every algorithm of MPICAST_Mmcast (naive, SPCCO, the
# four agent-based variants) and by the host MPI (k broadcasts on k sub-communicators), side
# by side in one launch per MPI (bench/mmcast_bench.c); then the simulator's prediction of the
# very same multicasts on the same network (bench/agents_compare.py).
#
#   bench/agents.sh --out DIR [--mpi openmpi,mpich] [--net bench/switched/five.net]
#                   [--ks 1,2,4,8] [--sizes 64k,1m] [--reps 5] [--dests D] [--params FILE]
#
# Brings the switched network up (bench/switched.sh up NET: router namespaces, 100 Mbit/s
# links, up-down routes), writes DIR/topology.net (NET with each host named by its data
# address, the library's MPICAST_SWITCH_TOPOLOGY: the ranks find their switches by address),
# runs build/<mpi>/bench/mmcast_bench on every host (one rank each) -> DIR/<mpi>.csv, and
# takes the network down on exit, error or interrupt. With --params (LogGOPS parameters of
# these hosts, e.g. from `mpicast sim calibrate`), bench/agents_compare.py times every measured
# pattern in the simulator on NET -> DIR/compare.md. Bounded: each launch ends after 900 s.
# Needs root, the programs (make bench-progs) and the mpicast command (build/<mpi>/bin).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

out="" mpis=openmpi,mpich net=bench/switched/five.net ks=1,2,4,8 sizes=64k,1m reps=5 dests=""
params=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --mpi) mpis=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --dests) dests=$2; shift 2 ;;
    --params) params=$2; shift 2 ;;
    *) echo "agents.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { sed -n '2,20p' "$0"; exit 2; }
mkdir -p "$out"
for m in ${mpis//,/ }; do
  [ -x "build/$m/bench/mmcast_bench" ] || { echo "agents.sh: build/$m/bench/mmcast_bench missing: make bench-progs" >&2; exit 1; }
done

down() { bench/switched.sh down >/dev/null 2>&1 || true; }
trap down EXIT
trap 'exit 130' INT TERM
bench/switched.sh up "$net"

# The topology as the library reads it: hosts by their data address.
bench/switched.sh hosts >"$out/hosts.txt"
awk 'NR == FNR { addr[$1] = $3; next }
     $1 == "host" && ($2 in addr) { $2 = addr[$2] }
     { print }' "$out/hosts.txt" "$net" >"$out/topology.net"

for m in ${mpis//,/ }; do
  echo "== agents.sh: $m, $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
  args=(--ks "$ks" --sizes "$sizes" --reps "$reps" --label "$m")
  [ -z "$dests" ] || args+=(--dests "$dests")
  {
    echo "command: MPICAST_SWITCH_TOPOLOGY=$out/topology.net bench/switched.sh run --mpi $m -- build/$m/bench/mmcast_bench ${args[*]}"
    echo "net: $net; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores; start $(date -u '+%F %T') UTC"
  } >"$out/$m.meta"
  rc=0
  MPICAST_SWITCH_TOPOLOGY="$PWD/$out/topology.net" bench/switched.sh run --mpi "$m" --timeout 900 \
    --out "$out/$m.csv" --done-marker '# mmcast_bench: done' --grace 15 -- \
    "build/$m/bench/mmcast_bench" "${args[@]}" || rc=$?
  echo "exit=$rc end $(date -u '+%F %T') UTC" >>"$out/$m.meta"
  echo "agents.sh: $m exit $rc, $(grep -c , "$out/$m.csv" || true) lines in $out/$m.csv"
done

if [ -n "$params" ]; then
  python3 bench/agents_compare.py --mpicast "$(ls build/*/bin/mpicast | head -1)" \
    --net "$net" --params "$params" --out "$out" "$out"/*.csv
fi
