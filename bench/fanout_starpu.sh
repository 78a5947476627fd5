#!/usr/bin/env bash
# StarPU's own mpi_cholesky (Debian starpu-examples, linked against Open MPI), side by side in one
# launch: no mpicast, mpicast preloaded with MPICAST_FANOUT=off, and with MPICAST_FANOUT=on. The
# three run in turn, ROUNDS times (so that a load change hits all three alike); each run's
# "Computation time" (StarPU's own timer, factorisation only) and rank 0's broadcast share
# are printed, then the median of each and the ratios to "none".
#
#   bench/fanout_starpu.sh [NP] [SIZE] [NBLOCKS] [ROUNDS]      (defaults 4 1920 12 5)
#   CLUSTER_RATE=100mbit bench/fanout_starpu.sh 9 1920 12 3    (NP hosts of the emulated cluster)
#   CHECK=1 ...                       every run with -check: stops at the first wrong result
#
# Without CLUSTER_RATE: loopback (MPICAST_IFACE=lo MPICAST_TTL=0): on one machine the ranks share
# its cores, so this measures the shim's overhead more than the network. With CLUSTER_RATE: one
# rank on each of NP emulated hosts (bench/cluster.sh instance 6, links of that rate), where the
# links carry the tiles; the cluster is torn down on exit.
set -euo pipefail
NP=${1:-4}
SIZE=${2:-1920}
NBLOCKS=${3:-12}
ROUNDS=${4:-5}
extra=()
[ "${CHECK:-0}" = 0 ] || extra=(-check)
here=$(cd "$(dirname "$0")/.." && pwd)
LIB=${LIB:-$here/build/openmpi/lib/libmpicast.so}
BIN=$(dpkg -L starpu-examples 2>/dev/null | grep '/starpu/mpi/mpi_cholesky$' | head -n 1 || true)
[ -n "$BIN" ] || { echo "starpu-examples is not installed (make deps-system)" >&2; exit 1; }
[ -e "$LIB" ] || { echo "no $LIB: make lib" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
RATE=${CLUSTER_RATE:-}
if [ -n "$RATE" ]; then
  export BENCH_CLUSTER=6
  trap '"$here/bench/cluster.sh" down >/dev/null 2>&1; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
  "$here/bench/cluster.sh" up "$NP" --rate "$RATE" >&2
else
  trap 'rm -rf "$work"' EXIT
fi

run() { # run CONFIG -> "ms share"
  local pre=() out=$work/out
  case $1 in
    none) ;;
    off) pre=(-x LD_PRELOAD="$LIB" -x MPICAST_FANOUT=off) ;;
    on) pre=(-x LD_PRELOAD="$LIB" -x MPICAST_FANOUT=on) ;;
  esac
  if [ -n "$RATE" ]; then
    # cluster.sh passes MPICAST_*, STARPU_* and LD_PRELOAD to the ranks.
    local envs=(STARPU_NCPU=1 STARPU_SILENT=1 MPICAST_STATS=1)
    case $1 in
      off) envs+=(LD_PRELOAD="$LIB" MPICAST_FANOUT=off) ;;
      on) envs+=(LD_PRELOAD="$LIB" MPICAST_FANOUT=on) ;;
    esac
    # A StarPU home per rank: ranks that calibrate the bus into one home at once read each
    # other's half-written files (StarPU's assertion in check_bus_affinity_file).
    env "${envs[@]}" "$here/bench/cluster.sh" run --mpi openmpi --timeout 600 -- \
      /bin/sh -c 'STARPU_HOME="$0/home$OMPI_COMM_WORLD_RANK" exec "$@"' "$work" \
      "$BIN" -size "$SIZE" -nblocks "$NBLOCKS" "${extra[@]}" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
  else
    timeout -k 10 600 mpirun.openmpi --oversubscribe --bind-to none -np "$NP" \
      -x STARPU_NCPU=1 -x STARPU_SILENT=1 \
      -x MPICAST_IFACE=lo -x MPICAST_TTL=0 -x MPICAST_STATS=1 "${pre[@]}" \
      /bin/sh -c 'STARPU_HOME="$0/home$OMPI_COMM_WORLD_RANK" exec "$@"' "$work" \
      "$BIN" -size "$SIZE" -nblocks "$NBLOCKS" "${extra[@]}" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
  fi
  local ms b p
  if grep -q "Error\[" "$out"; then
    cat "$out" >&2
    echo "fanout_starpu: $1: -check found wrong values" >&2
    exit 1
  fi
  ms=$(sed -n 's/^Computation time (in ms): *//p' "$out")
  b=$(sed -n 's/.* fanout_bcast_bytes=\([0-9]*\).*/\1/p' "$out")
  p=$(sed -n 's/.* fanout_p2p_bytes=\([0-9]*\).*/\1/p' "$out")
  if [ -n "$b" ] && [ $((b + p)) -gt 0 ]; then echo "$ms $((100 * b / (b + p)))"; else echo "$ms -"; fi
}

where=loopback
[ -z "$RATE" ] || where="$NP emulated hosts at $RATE"
echo "# mpi_cholesky -size $SIZE -nblocks $NBLOCKS, $NP ranks, $where, $(nproc) cores, $(date -u +%F)"
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
