#!/usr/bin/env bash
# One benchmark configuration on the emulated cluster: bring it up, run mcast_bench under one
# MPI with mpicast preloaded, write NAME.csv, NAME.log, NAME.meta and NAME.svg into OUT, and
# tear the cluster down (also on failure or interrupt).
#
#   run.sh --name NAME --out DIR --mpi openmpi|mpich --hosts N [--ppn K] [--rate RATE] [--burst BYTES]
#          [--loss HOST:PCT[,PCT...]] [--env MPICAST_X=V]... [--timeout S] [--keep]
#          -- MCAST_BENCH_ARGS...
#
# --loss HOST:0,1,5 runs the benchmark once per percentage, one after the other on the same
# cluster (NAME-loss0.csv, NAME-loss1.csv, ...), so that the loss-free figure the others are
# compared with comes from the same links a minute earlier. --keep leaves the cluster up.
# Needs the library and the benchmark built: build/<mpi>/lib/libmpicast.so and
# build/<mpi>/bench/mcast_bench (make bench / make bench-smoke build them).
# Environment: BENCH_CLUSTER (instance, default 0); MPICAST_* variables are passed to ranks.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)

name="" out="" mpi="" hosts="" ppn=1 rate=100mbit burst="" loss="" tmo=1800 keep=0 envs=()
while [ $# -gt 0 ]; do
  case $1 in
    --name) name=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mpi) mpi=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --ppn) ppn=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$name" ] && [ -n "$out" ] && [ -n "$mpi" ] && [ -n "$hosts" ] || {
  echo "run.sh: --name, --out, --mpi and --hosts are required" >&2
  exit 2
}
lib=$TOP/build/$mpi/lib/libmpicast.so
prog=$TOP/build/$mpi/bench/mcast_bench
[ -e "$lib" ] || { echo "run.sh: $lib missing (make lib)" >&2; exit 1; }
[ -x "$prog" ] || { echo "run.sh: $prog missing (make bench builds it)" >&2; exit 1; }
mkdir -p "$out"

cluster=$HERE/cluster.sh
child=""
if [ "$keep" = 0 ]; then
  trap '"$cluster" down' EXIT
fi
# A signal ends the running job first (cluster.sh run ends its launcher and reaps), then us.
trap '[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; }; exit 130' INT TERM
"$cluster" up "$hosts" --rate "$rate" ${burst:+--burst "$burst"}

# The bucket the links got (cluster.sh's default when --burst is not given), for the meta file.
burst_bytes=$("$cluster" state | sed -n 's/^BURST=//p')

lhost="" pcts=("")
if [ -n "$loss" ]; then
  lhost=${loss%%:*}
  IFS=, read -r -a pcts <<<"${loss#*:}"
fi

for pct in "${pcts[@]}"; do
  tag=$name
  if [ -n "$pct" ]; then
    tag=$name-loss$pct
    "$cluster" loss "$lhost" "$pct"
  fi
  cmd="BENCH_CLUSTER=${BENCH_CLUSTER:-0} bench/cluster.sh up $hosts --rate $rate${burst:+ --burst $burst}${lhost:+ --loss $lhost:$pct}; ${envs[*]}${envs[*]:+ }LD_PRELOAD=build/$mpi/lib/libmpicast.so MPICAST_STATS=1 bench/cluster.sh run --mpi $mpi --ppn $ppn -- build/$mpi/bench/mcast_bench $*"
  {
    echo "name=$tag"
    echo "mpi=$mpi"
    echo "hosts=$hosts"
    echo "ppn=$ppn"
    echo "rate=$rate"
    echo "burst=${burst_bytes:-?}"
    echo "loss_host=$lhost"
    echo "loss_pct=${pct:-0}"
    echo "env=${envs[*]}"
    echo "command=$cmd"
    echo "date=$(date -u +%FT%TZ)"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$out/$tag.meta"
  before=$("$cluster" counters)
  echo "== $tag: $cmd" >&2
  start=$(date +%s.%N)
  rc=0
  env "${envs[@]}" LD_PRELOAD="$lib" MPICAST_STATS=1 "$cluster" run --mpi "$mpi" --ppn "$ppn" --timeout "$tmo" \
    --out "$out/$tag.csv" --done-marker "# end" --grace 20 -- "$prog" "$@" 2>"$out/$tag.log" &
  child=$!
  wait "$child" || rc=$?
  child=""
  end=$(date +%s.%N)
  after=$("$cluster" counters)
  {
    echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
    echo "exit=$rc"
    if grep -q 'cluster.sh: finalize-hang' "$out/$tag.log"; then echo "finalize_hang=1"; fi
    # Bytes each host's link carried during the job: proof that the data crossed the links.
    awk 'NR == FNR { rx[$1] = $2; tx[$1] = $3; next } { printf "link_%s=rx:%.0f tx:%.0f\n", $1, $2 - rx[$1], $3 - tx[$1] }' \
      <(echo "$before") <(echo "$after")
    # No table at 0% (nothing to drop): no counters, and no failure either.
    [ -z "$lhost" ] || { "$cluster" exec "$lhost" nft list table inet mpicast_bench 2>/dev/null || true; } |
      awk '/counter (seen|dropped)/ { n = $2 } /packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") print "nft_" n "=" $(i + 1) }'
  } >>"$out/$tag.meta"
  grep -h '^mpicast: stats:' "$out/$tag.log" | sed 's/^/stats=/' >>"$out/$tag.meta" || true
  if [ "$rc" != 0 ]; then
    echo "run.sh: $tag failed (exit $rc); last lines of $out/$tag.log:" >&2
    tail -n 20 "$out/$tag.log" >&2
    exit "$rc"
  fi
  python3 "$HERE/plot.py" "$out/$tag.csv" --meta "$out/$tag.meta" -o "$out/$tag.svg"
  echo "   -> $out/$tag.csv, $out/$tag.svg ($(sed -n 's/^seconds=//p' "$out/$tag.meta") s)" >&2
done
[ -z "$lhost" ] || "$cluster" loss "$lhost" 0
