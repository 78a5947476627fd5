#!/usr/bin/env bash
# StarPU's own mpi_cholesky (Debian starpu-examples, linked against Open MPI), side by side in one
# launch: no mpicast, mpicast preloaded with MPICAST_FANOUT=off, and with MPICAST_FANOUT=on. The
# three run in turn, ROUNDS times (so that a load change hits all three alike); each run's
# "Computation time" (StarPU's own timer, factorisation only) and rank 0's broadcast share
# are printed, then the median of each and the ratios to "none".
#
#   bench/fanout_starpu.sh [NP] [SIZE] [NBLOCKS] [ROUNDS]      (defaults 4 1920 12 5)
#
# Loopback only (MPICAST_IFACE=lo MPICAST_TTL=0): on one machine the ranks share its cores,
# so this measures the shim's overhead more than the network; the emulated cluster
# (bench/cluster.sh) is where fan-out detection should be judged.
set -euo pipefail
NP=${1:-4}
SIZE=${2:-1920}
NBLOCKS=${3:-12}
ROUNDS=${4:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
LIB=${LIB:-$here/build/openmpi/lib/libmpicast.so}
BIN=$(dpkg -L starpu-examples 2>/dev/null | grep '/starpu/mpi/mpi_cholesky$' | head -n 1 || true)
[ -n "$BIN" ] || { echo "starpu-examples is not installed (make deps-system)" >&2; exit 1; }
[ -e "$LIB" ] || { echo "no $LIB: make lib" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() { # run CONFIG -> "ms share"
  local pre=() out=$work/out
  case $1 in
    none) ;;
    off) pre=(-x LD_PRELOAD="$LIB" -x MPICAST_FANOUT=off) ;;
    on) pre=(-x LD_PRELOAD="$LIB" -x MPICAST_FANOUT=on) ;;
  esac
  timeout -k 10 600 mpirun.openmpi --oversubscribe --bind-to none -np "$NP" \
    -x STARPU_NCPU=1 -x STARPU_SILENT=1 -x STARPU_HOME="$work" \
    -x MPICAST_IFACE=lo -x MPICAST_TTL=0 -x MPICAST_STATS=1 "${pre[@]}" \
    "$BIN" -size "$SIZE" -nblocks "$NBLOCKS" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
  local ms b p
  ms=$(sed -n 's/^Computation time (in ms): *//p' "$out")
  b=$(sed -n 's/.* fanout_bcast_bytes=\([0-9]*\).*/\1/p' "$out")
  p=$(sed -n 's/.* fanout_p2p_bytes=\([0-9]*\).*/\1/p' "$out")
  if [ -n "$b" ] && [ $((b + p)) -gt 0 ]; then echo "$ms $((100 * b / (b + p)))"; else echo "$ms -"; fi
}

echo "# mpi_cholesky -size $SIZE -nblocks $NBLOCKS, $NP ranks, loopback, $(nproc) cores, $(date -u +%F)"
echo "# round config ms bcast_share%(rank 0)"
declare -A all
for r in $(seq 1 "$ROUNDS"); do
  for c in none off on; do
    read -r ms share < <(run "$c")
    echo "$r $c $ms $share"
    all[$c]="${all[$c]:-} $ms"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mn=$(median <<<"${all[none]}")
for c in none off on; do
  m=$(median <<<"${all[$c]}")
  echo "median $c ${m} ms, $(awk -v a="$m" -v b="$mn" 'BEGIN{printf "%.2f", a/b}') x none"
done
