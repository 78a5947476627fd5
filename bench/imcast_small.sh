#!/usr/bin/env bash
# Small multicasts: MPICAST_Imcast of 1 KiB against the flat tree and the host MPI's
# broadcast, with two builds of the library side by side, launches interleaved (A B A B ...),
# on the emulated cluster or on loopback. Prints one line per variant and launch, and writes
# the CSV of imcast_bench (with the columns root_s, dest_s, deliver_s) into OUT.
#
#   bench/imcast_small.sh --out DIR --lib NAME=LIBDIR [--lib NAME=LIBDIR ...]
#                         [--where cluster|loopback] [--hosts "4 6"] [--rounds N]
#                         [--reps N] [--sizes 1k] [--fracs 25,100]
#
# LIBDIR holds libmpicast.so.0 (a copy of build/openmpi/lib/libmpicast.so.0.1.0 of the build to
# compare); the program is build/openmpi/bench/imcast_bench, which finds the library through
# LD_LIBRARY_PATH (its run path is a RUNPATH). --where cluster runs on an emulated cluster that
# is up already (bench/cluster.sh up N, BENCH_CLUSTER as the caller set it); loopback runs
# mpirun on lo with MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat, group 239.254.118.0/24,
# ports 27600-27699. Open MPI only.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/.."
cmdline="$*"
out="" where=cluster hosts="4 6" rounds=3 reps=100 sizes=1k fracs=25,100 libs=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --lib) libs+=("$2"); shift 2 ;;
    --where) where=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --fracs) fracs=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "imcast_small.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] && [ ${#libs[@]} -ge 1 ] || { echo "imcast_small.sh: --out and --lib are required" >&2; exit 2; }
prog=build/openmpi/bench/imcast_bench
[ -x "$prog" ] || { echo "imcast_small.sh: $prog missing (make build/openmpi/bench/imcast_bench)" >&2; exit 1; }
mkdir -p "$out/raw"
for v in $(compgen -e | grep -E '^MPICAST_' || true); do unset "$v"; done
{
  echo "date=$(date -u +%FT%TZ)"
  echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src 2>/dev/null || echo '+changes')"
  for l in "${libs[@]}"; do echo "lib_${l%%=*}=${l#*=} sha256:$(sha256sum <"${l#*=}/libmpicast.so.0" | cut -c1-16)"; done
  echo "command=bench/imcast_small.sh $cmdline"
} >>"$out/run.meta"
args=(--sizes "$sizes" --fracs "$fracs" --variants imcast,flat,bcast --budget 0 --reps-min "$reps" --reps-max "$reps")
[ "$where" = loopback ] && hosts=${hosts%% *}
for h in $hosts; do
  for r in $(seq 1 "$rounds"); do
    for l in "${libs[@]}"; do
      name=${l%%=*} dir=${l#*=} f=$out/raw/$where-${h}-$name-r$r.out
      if [ "$where" = cluster ]; then
        "$HERE/cluster.sh" run --mpi openmpi --hosts "$h" --timeout 300 -- \
          env LD_LIBRARY_PATH="$dir" "$prog" --label "$name" "${args[@]}" >"$f" 2>"$f.log"
      else
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPICAST_IFACE=lo MPICAST_TTL=0 \
          MPICAST_TOPO=flat MPICAST_GROUP=239.254.118.0/24 MPICAST_PORT=27600-27699 \
          timeout 300 mpirun.openmpi --oversubscribe --bind-to none -n "$h" \
          -x LD_LIBRARY_PATH="$dir" "$prog" --label "$name" "${args[@]}" >"$f" 2>"$f.log"
      fi
      [ -s "$out/small.csv" ] || echo "where,hosts,round,$(grep -m1 '^label,' "$f")" >"$out/small.csv"
      grep -vE '^(#|label,)' "$f" | sed "s/^/$where,$h,$r,/" >>"$out/small.csv"
      grep -vE '^(#|label,)' "$f" | awk -F, -v h="$h" -v r="$r" '{printf "%s h=%s r=%s %-6s nd=%s median=%6.1f span=%6.1f root=%6.1f dest=%6.1f deliver=%6.1f us\n", $1, h, r, $3, $10, $12*1e6, $17*1e6, $19*1e6, $20*1e6, $21*1e6}'
    done
  done
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.meta"
