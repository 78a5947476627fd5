#!/usr/bin/env bash
# The figures of MPICAST_Imcast on the emulated cluster: the experiments of Fig. 4 (segment
# size) and Fig. 5 (against the flat tree and the host MPI's broadcast) of "A Scalable
# Non-blocking Multicast Scheme for Distributed DAG Scheduling" (ICCS 2009), and the tiled
# Cholesky of examples/ with --notify p2p and imcast. Brings the cluster up (bench/cluster.sh,
# 9 hosts), runs every configuration of the parts asked for, writes CSV, logs and one meta
# file per job into OUT, and brings the cluster down on exit, error or interrupt.
#
#   bench/imcast.sh --out DIR [--mpi openmpi,mpich] [--parts fig4,fig5,target,chol]
#                   [--rate 100mbit] [--fig4-hosts "4 6 9"] [--fig4-segs LIST]
#                   [--fig4-reps N] [--fig5-hosts "4 6 9"] [--fig5-sizes LIST]
#                   [--fig5-budget S] [--fig5-base16-hosts "9"]
#                   [--chol "4x1 6x1 9x1 4x2"] [--chol-sizes "1024:128 2048:256"]
#                   [--chol-modes LIST] [--chol-reps R] [--chol-rounds N]
#                   [--chol-first-round K] [--target-hosts "9"] [--target-reps N]
#                   [--target-variants LIST] [--transport p2p|ip|auto]
#                   [--ip-hosts "4 9"] [--ip-sizes LIST] [--ip-budget S]
#
# Every part but ip runs with MPICAST_IMCAST_TRANSPORT=--transport (p2p by default: the
# paper's experiments, point-to-point forwarding).
# fig4: for each host count and segment size (MPICAST_SEGMENT_BYTES, one launch each: the
#   setting is per process), imcast_bench --mode fig4: rank 0 multicasts 512 KiB and 1 MiB to
#   every other rank, MPICAST_TOPO_BASE=2, fixed repetitions (--fig4-reps). -> fig4.csv
# fig5: for each host count, imcast_bench --mode fig5 twice, MPICAST_IMCAST_ROUTE=dests and
#   =table (MPICAST_TOPO_BASE=2, segments 8 KiB), each with the flat tree, the host MPI's
#   broadcast and its communicator creation side by side in the same launch; and at the
#   --fig5-base16-hosts, once more with mpicast's defaults (base 16) against the flat tree and
#   the broadcast. -> fig5.csv
# target: the targets at 9 hosts, 1 MiB (BENCHMARKS.md) with more repetitions than fig5 gives them: at --target-hosts,
#   1 MiB to all other ranks, every variant (or --target-variants; with mbcast, mpicast's own
#   MPI_Bcast, the launches are named ...-mbcast), --target-reps repetitions,
#   MPICAST_TOPO_BASE=2, once per routing (dests, table). -> target.csv
# ip: the two transports, one launch each (MPICAST_IMCAST_TRANSPORT=p2p, then =ip; base 2,
#   dests) at each of --ip-hosts: --ip-sizes to 25, 50 and 100 % of the other ranks, with the
#   flat tree and, at 100 %, mpicast's own MPI_Bcast side by side; where ip starts to pay is
#   what auto's thresholds are set from. -> ip.csv
# chol: build/<mpi>/examples/cholesky --check on HOSTSxRANKS-per-host, each matrix size
#   (N:NB), each mode (p2p; imcast:BASE:ROUTE; dbcast, dbcast:topo for MPICAST_DBCAST_TREE=topo,
#   dbcast:chain=SIZE for MPICAST_DBCAST_CHAIN_BYTES=SIZE; as named in --chol-modes), --chol-rounds
#   launches of each (numbered from --chol-first-round, 1 by default, so that a later call
#   adds rounds to the same OUT), modes interleaved. -> cholesky.csv
#
# Every job is bounded (cluster.sh run --timeout). A job that fails is recorded (its meta file
# says exit=..., failures.txt lists it) and the run goes on. Needs root, and the programs:
# build/<mpi>/bench/imcast_bench (make bench-progs), build/<mpi>/examples/cholesky
# (make examples), build/<mpi>/lib/libmpicast.so.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

cmdline="$*"
out="" mpis=openmpi parts=fig4,fig5,target,chol rate=100mbit
fig4_hosts="4 6 9" fig4_segs=64,256,1024,4096,8192,16384,32768,65536,131072,262144,524288,1048576
fig4_reps=5
fig5_hosts="4 6 9" fig5_sizes=1k,16k,256k,1m,4m fig5_budget=4 fig5_base16_hosts="9"
chol_confs="4x1 6x1 9x1 4x2" chol_sizes="1024:128 2048:256" chol_reps=3 chol_rounds=2
chol_modes="p2p imcast:16:dests imcast:2:dests imcast:2:table"
target_hosts="9" target_reps=15 target_variants=imcast,flat,bcast,bcast_cg,split
chol_first=1
transport=p2p ip_hosts="4 9" ip_sizes=1k,16k,64k,256k,1m,4m ip_budget=2
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --mpi) mpis=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --fig4-hosts) fig4_hosts=$2; shift 2 ;;
    --fig4-segs) fig4_segs=$2; shift 2 ;;
    --fig4-reps) fig4_reps=$2; shift 2 ;;
    --fig5-hosts) fig5_hosts=$2; shift 2 ;;
    --fig5-sizes) fig5_sizes=$2; shift 2 ;;
    --fig5-budget) fig5_budget=$2; shift 2 ;;
    --fig5-base16-hosts) fig5_base16_hosts=$2; shift 2 ;;
    --chol) chol_confs=$2; shift 2 ;;
    --chol-sizes) chol_sizes=$2; shift 2 ;;
    --chol-modes) chol_modes=$2; shift 2 ;;
    --chol-reps) chol_reps=$2; shift 2 ;;
    --chol-rounds) chol_rounds=$2; shift 2 ;;
    --target-hosts) target_hosts=$2; shift 2 ;;
    --target-reps) target_reps=$2; shift 2 ;;
    --target-variants) target_variants=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --ip-hosts) ip_hosts=$2; shift 2 ;;
    --ip-sizes) ip_sizes=$2; shift 2 ;;
    --ip-budget) ip_budget=$2; shift 2 ;;
    --chol-first-round) chol_first=$2; shift 2 ;;
    -h | --help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "imcast.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "imcast.sh: --out DIR is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "imcast.sh: needs root (the emulated cluster)" >&2; exit 1; }
mpis=${mpis//,/ }
for m in $mpis; do
  for f in build/$m/lib/libmpicast.so build/$m/bench/imcast_bench; do
    [ -e "$f" ] || { echo "imcast.sh: $f missing (make bench-progs)" >&2; exit 1; }
  done
  [[ ",$parts," != *,chol,* ]] || [ -x "build/$m/examples/cholesky" ] ||
    { echo "imcast.sh: build/$m/examples/cholesky missing (make examples)" >&2; exit 1; }
done
mkdir -p "$out/raw"
# The settings of every job are the ones named here, not whatever the caller's shell has.
for v in $(compgen -e | grep -E '^MPICAST_' || true); do unset "$v"; done

cluster=$HERE/cluster.sh
child=""
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
trap '[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; }; exit 130' INT TERM
log() { echo "imcast.sh: $*" >&2; }

maxhosts=9
"$cluster" up "$maxhosts" --rate "$rate"
burst=$("$cluster" state | sed -n 's/^BURST=//p')
started=$(date -u +%FT%TZ) t_start=$SECONDS
{
  echo "started=$started"
  echo "machine=$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')"
  for m in $mpis; do
    echo "lib_$m=$(readlink -f "build/$m/lib/libmpicast.so") $(stat -c %y "$(readlink -f "build/$m/lib/libmpicast.so")") sha256:$(sha256sum <"build/$m/lib/libmpicast.so" | cut -c1-16)"
  done
  echo "cluster=bench/cluster.sh up $maxhosts --rate $rate (bucket $burst bytes)"
  echo "command=bench/imcast.sh $cmdline"
} >>"$out/run.meta"

# job NAME MPI HOSTS PPN TIMEOUT [VAR=VALUE...] -- PROG ARGS...
# One launch (ended 5 s after it printed its last line, $marker, if MPI_Finalize hangs): stdout to raw/NAME.out, stderr to raw/NAME.log, raw/NAME.meta. Returns 0, and
# records a failure in failures.txt, so that one bad job does not end the run.
job() {
  local name=$1 mpi=$2 hosts=$3 ppn=$4 tmo=$5 envs=()
  shift 5
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [[ " ${envs[*]} " == *" MPICAST_IMCAST_TRANSPORT="* ]] ||
    envs=(MPICAST_IMCAST_TRANSPORT="$transport" "${envs[@]}")
  local meta=$out/raw/$name.meta rc=0 before after t0
  local cmd="${envs[*]}${envs[*]:+ }bench/cluster.sh run --mpi $mpi --hosts $hosts --ppn $ppn --timeout $tmo -- $*"
  {
    echo "name=$name"
    echo "mpi=$mpi"
    echo "hosts=$hosts"
    echo "ppn=$ppn"
    echo "rate=$rate"
    echo "burst=$burst"
    echo "env=${envs[*]}"
    echo "command=$cmd"
    echo "date=$(date -u +%FT%TZ)"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$meta"
  log "== $name: $cmd"
  before=$("$cluster" counters)
  t0=$(date +%s.%N)
  env "${envs[@]}" "$cluster" run --mpi "$mpi" --hosts "$hosts" --ppn "$ppn" --timeout "$tmo" \
    --out "$out/raw/$name.out" --done-marker "${marker:-# end}" --grace 5 -- "$@" 2>"$out/raw/$name.log" &
  child=$!
  wait "$child" || rc=$?
  child=""
  after=$("$cluster" counters)
  {
    echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
    echo "exit=$rc"
    if grep -q 'cluster.sh: finalize-hang' "$out/raw/$name.log"; then echo "finalize_hang=1"; fi
    awk 'NR == FNR { rx[$1] = $2; tx[$1] = $3; next } $2 - rx[$1] > 0 || $3 - tx[$1] > 0 { printf "link_%s=rx:%.0f tx:%.0f\n", $1, $2 - rx[$1], $3 - tx[$1] }' \
      <(echo "$before") <(echo "$after")
  } >>"$meta"
  if [ "$rc" != 0 ]; then
    log "$name failed (exit $rc); last lines of raw/$name.log:"
    tail -n 15 "$out/raw/$name.log" >&2 || true
    echo "$name exit=$rc" >>"$out/failures.txt"
  fi
  log "   $(sed -n 's/^seconds=//p' "$meta") s"
  return 0
}

# The CSV rows of a job's output, prefixed with mpi,hosts,ppn, appended to FILE.
collect() { # NAME MPI HOSTS PPN FILE
  local f=$out/raw/$1.out
  [ -s "$out/$5" ] || echo "mpi,hosts,ppn,$(grep -m1 '^label,' "$f" 2>/dev/null || echo 'label')" >"$out/$5"
  grep -vE '^(#|label,)' "$f" 2>/dev/null | sed "s/^/$2,$3,$4,/" >>"$out/$5" || true
}

fig4() { # MPI
  local m=$1 h s
  for h in $fig4_hosts; do
    for s in ${fig4_segs//,/ }; do
      local name=fig4-$m-${h}h-seg$s
      job "$name" "$m" "$h" 1 900 MPICAST_TOPO_BASE=2 MPICAST_SEGMENT_BYTES="$s" -- \
        "build/$m/bench/imcast_bench" --mode fig4 --label "$name" --reps-min "$fig4_reps" \
        --reps-max "$fig4_reps"
      collect "$name" "$m" "$h" 1 fig4.csv
    done
  done
}

fig5() { # MPI
  local m=$1 h r
  for h in $fig5_hosts; do
    for r in dests table; do
      local name=fig5-$m-${h}h-$r
      job "$name" "$m" "$h" 1 1500 MPICAST_TOPO_BASE=2 MPICAST_IMCAST_ROUTE="$r" -- \
        "build/$m/bench/imcast_bench" --mode fig5 --label "$name" --sizes "$fig5_sizes" \
        --budget "$fig5_budget" --reps-min 3 --reps-max 15
      collect "$name" "$m" "$h" 1 fig5.csv
    done
    if [[ " $fig5_base16_hosts " == *" $h "* ]]; then
      local name=fig5-$m-${h}h-defaults
      job "$name" "$m" "$h" 1 1500 -- \
        "build/$m/bench/imcast_bench" --mode fig5 --label "$name" --sizes "$fig5_sizes" \
        --variants imcast,flat,bcast --budget "$fig5_budget" --reps-min 3 --reps-max 15
      collect "$name" "$m" "$h" 1 fig5.csv
    fi
  done
}

target() { # MPI
  local m=$1 h r suffix=""
  [[ ",$target_variants," != *,mbcast,* ]] || suffix=-mbcast
  for h in $target_hosts; do
    for r in dests table; do
      local name=target-$m-${h}h-$r$suffix
      job "$name" "$m" "$h" 1 900 MPICAST_TOPO_BASE=2 MPICAST_IMCAST_ROUTE="$r" -- \
        "build/$m/bench/imcast_bench" --mode fig5 --label "$name" --sizes 1m --fracs 100 \
        --variants "$target_variants" --budget 0 --reps-min "$target_reps" \
        --reps-max "$target_reps"
      collect "$name" "$m" "$h" 1 target.csv
    done
  done
}

ip_part() { # MPI
  local m=$1 h t
  for h in $ip_hosts; do
    for t in p2p ip; do
      local name=ip-$m-${h}h-$t
      job "$name" "$m" "$h" 1 1500 MPICAST_TOPO_BASE=2 MPICAST_IMCAST_ROUTE=dests \
        MPICAST_IMCAST_TRANSPORT="$t" -- \
        "build/$m/bench/imcast_bench" --mode fig5 --label "$name" --sizes "$ip_sizes" \
        --fracs 25,50,100 --variants imcast,flat,mbcast --budget "$ip_budget" --reps-min 3 \
        --reps-max 15
      collect "$name" "$m" "$h" 1 ip.csv
    done
  done
}

# cholesky's line -> one CSV row.
chol_row() { # NAME MPI HOSTS PPN MODE ROUND
  local f=$out/raw/$1.out
  [ -s "$out/cholesky.csv" ] ||
    echo "mpi,hosts,ppn,mode,round,n,nb,grid,ranks,notify,reps,time_s,min_s,gflops,sent_items,sent_dests,sent_mib,kernels_pct,idle_pct,residual,check,exit" >"$out/cholesky.csv"
  local ex
  ex=$(sed -n 's/^exit=//p' "$out/raw/$1.meta")
  awk -v pre="$2,$3,$4,$5,$6" -v ex="$ex" '
    function val(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
    /^cholesky: n=/ { n = val("n"); nb = val("nb"); grid = val("grid"); ranks = val("ranks"); notify = val("notify");
      reps = val("reps"); t = val("time"); match($0, /min [0-9.]+/); mn = substr($0, RSTART + 4, RLENGTH - 4);
      match($0, /[0-9.]+ GFLOP/); gf = substr($0, RSTART, RLENGTH - 6) }
    /tasks=/ { match($0, /sent=[0-9]+ items to [0-9]+ dests \([0-9.]+ MiB\)/); s = substr($0, RSTART, RLENGTH);
      split(s, w, /[= ()]+/); items = w[2]; dests = w[5]; mib = w[7];
      k = val("kernels"); sub(/%/, "", k); id = val("idle"); sub(/%/, "", id); res = val("residual");
      chk = ($0 ~ /PASS/) ? "PASS" : (($0 ~ /FAIL/) ? "FAIL" : "-") }
    END { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", pre, n, nb, grid, ranks, notify, reps, t, mn, gf,
      items, dests, mib, k, id, res, chk, ex }' "$f" >>"$out/cholesky.csv"
}

chol() { # MPI
  local m=$1 c size round mode
  for c in $chol_confs; do
    local h=${c%x*} ppn=${c#*x}
    for size in $chol_sizes; do
      local n=${size%:*} nb=${size#*:}
      for round in $(seq "$chol_first" $((chol_first + chol_rounds - 1))); do
        for mode in $chol_modes; do
          local envs=() args=(--notify p2p) tag=p2p
          if [[ $mode == imcast:* ]]; then
            IFS=: read -r _ b r <<<"$mode"
            envs=(MPICAST_TOPO_BASE="$b" MPICAST_IMCAST_ROUTE="$r")
            args=(--notify imcast)
            tag=imcast-b$b-$r
          elif [[ $mode == dbcast* ]]; then
            args=(--notify dbcast)
            tag=dbcast
            if [[ $mode == dbcast:topo ]]; then
              envs=(MPICAST_DBCAST_TREE=topo)
              tag=dbcast-topo
            elif [[ $mode == dbcast:chain=* ]]; then
              envs=(MPICAST_DBCAST_CHAIN_BYTES="${mode#dbcast:chain=}")
              tag=dbcast-chain${mode#dbcast:chain=}
            fi
          fi
          local name=chol-$m-${c}-n$n-nb$nb-$tag-r$round
          # cholesky prints one line (rank 0), flushed, before MPI_Finalize.
          marker="cholesky: n=" job "$name" "$m" "$h" "$ppn" 600 "${envs[@]}" -- \
            "build/$m/examples/cholesky" --n "$n" --nb "$nb" --reps "$chol_reps" --check "${args[@]}"
          chol_row "$name" "$m" "$h" "$ppn" "$tag" "$round"
        done
      done
    done
  done
}

for m in $mpis; do
  for p in ${parts//,/ }; do
    case $p in
      fig4) fig4 "$m" ;;
      fig5) fig5 "$m" ;;
      chol) chol "$m" ;;
      target) target "$m" ;;
      ip) ip_part "$m" ;;
      *) log "unknown part $p"; exit 2 ;;
    esac
  done
done
{
  echo "ended=$(date -u +%FT%TZ)"
  echo "cluster_seconds=$((SECONDS - t_start))"
} >>"$out/run.meta"
log "done in $((SECONDS - t_start)) s: $out"
