#!/usr/bin/env bash
# Bytes per CPU second at the root and at the receiver of 64 MiB broadcasts on loopback (a
# projection to fast networks: the wire costs nothing here, so the CPU is all there is),
# for one or more builds of the library side by side, at several datagram sizes:
#
#   bench/core_rate.sh [-f openmpi|mpich] [-s FRAG,...] [-r ROUNDS] LABEL=LIBRARY...
#
# e.g. bench/core_rate.sh before=/tmp/old/libmpicast.so after=build/openmpi/lib/libmpicast.so
# FRAG (default 1472,8972,65000) is MPICAST_FRAG_BYTES: 1472 is a 1500-byte Ethernet frame's
# payload, 8972 a jumbo frame's, 65000 what loopback allows. Each round runs every size and
# every library once, in turn, 2 ranks, MPICAST_TOPO=flat, 3 broadcasts each (core_rate's
# medians). Output: CSV on stdout, label,frag, then core_rate's columns. Loopback only
# (MPICAST_IFACE=lo, TTL 0); each launch is bounded (200 s).
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
flavour=openmpi frags=1472,8972,65000 rounds=2
while getopts f:s:r: o; do
  case $o in
    f) flavour=$OPTARG ;;
    s) frags=$OPTARG ;;
    r) rounds=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-f openmpi|mpich] [-s FRAG,...] [-r ROUNDS] LABEL=LIBRARY..." >&2; exit 2; }
prog=$TOP/build/$flavour/bench/core_rate
[ -x "$prog" ] || make -C "$TOP" --no-print-directory "build/$flavour/bench/core_rate" >&2
export MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat MPICAST_MIN_BYTES=0 \
  MPICAST_GROUP=239.254.121.0/24 MPICAST_PORT=28700-28799
run() { # library frag
  case $flavour in
    openmpi)
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 200 mpirun.openmpi \
        --oversubscribe -np 2 -x MPICAST_IFACE -x MPICAST_TTL -x MPICAST_TOPO -x MPICAST_MIN_BYTES \
        -x MPICAST_GROUP -x MPICAST_PORT -x MPICAST_FRAG_BYTES="$2" -x LD_PRELOAD="$1" \
        "$prog" --reps 3 --variants mpicast ;;
    mpich)
      MPICAST_FRAG_BYTES=$2 timeout 200 mpiexec.mpich -np 2 -genv LD_PRELOAD "$1" \
        "$prog" --reps 3 --variants mpicast ;;
    *) echo "$0: flavour $flavour?" >&2; exit 2 ;;
  esac
}
echo "# core_rate.sh $flavour, $(date -u +%FT%TZ), $(uptime | sed 's/.*load/load/')"
echo "label,frag,variant,size,reps,wall_s,root_cpu_s,recv_cpu_s,root_gbps,recv_gbps,recv_vcsw"
for _ in $(seq "$rounds"); do
  for f in ${frags//,/ }; do
    for lv in "$@"; do
      label=${lv%%=*} lib=${lv#*=}
      row=$(run "$lib" "$f" 2>&1 | grep '^mpicast,' || true)
      echo "$label,$f,${row:-failed}"
    done
  done
done
