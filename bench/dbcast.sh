#!/usr/bin/env bash
# The figures of dynamic broadcast (MPICAST_Dbcast) on the emulated cluster: Fig. 2 of "Using
# Dynamic Broadcasts to improve Task-Based Runtime Performances" (Euro-Par 2020), one root
# sending one buffer to k = 1..8 recipients, and the two tree orders of MPICAST_DBCAST_TREE.
# Brings the cluster up (bench/cluster.sh, 9 hosts), builds build/<mpi>/bench/dbcast_bench if
# it is missing or older than its source, runs every configuration of the parts asked for,
# writes CSV, logs and one meta file per job into OUT, and brings the cluster down on exit,
# error or interrupt.
#
#   bench/dbcast.sh --out DIR [--mpi openmpi,mpich] [--parts fig2,tree] [--rate 100mbit]
#                   [--fig2-hosts 9] [--fig2-ks 1,2,3,4,5,6,7,8] [--fig2-size 8m]
#                   [--fig2-variants linear,dbcast,bcast,mbcast] [--fig2-reps 5]
#                   [--fig2-chain "128k off"]
#                   [--tree-confs "9x1 4x2"] [--tree-sizes 1m,8m] [--tree-ks half,all]
#                   [--tree-variants dbcast,dbcast_rand] [--tree-reps 5] [--warmup 1]
#
# fig2: at --fig2-hosts hosts of one rank, dbcast_bench with every variant side by side
#   (linear: MPI_Isend to each + MPI_Waitall; dbcast: MPICAST_Dbcast, recipients MPI_Recv;
#   bcast: the host MPI's PMPI_Bcast on a communicator of the root and the recipients made
#   beforehand; mbcast: mpicast's MPI_Bcast, IP multicast, on the same set), k = --fig2-ks
#   recipients, --fig2-reps repetitions; one launch per value of --fig2-chain
#   (MPICAST_DBCAST_CHAIN_BYTES: 128k, the default, lets long broadcasts go down a chain; off keeps
#   the paper's binomial tree; the setting is per process), each with all variants. -> fig2.csv
# tree: for each HOSTSxRANKS-per-host of --tree-confs, two launches, MPICAST_DBCAST_TREE=
#   binomial and =topo (the setting is per process), each with dbcast (the list in rank
#   order) and dbcast_rand (the list shuffled every repetition, the same shuffles in both
#   launches) at --tree-sizes to --tree-ks recipients (half: nranks/2, all: nranks-1; the
#   same sets in both launches). -> tree.csv
#
# Every job is bounded (cluster.sh run --timeout). A job that fails is recorded (its meta file
# says exit=..., failures.txt lists it) and the run goes on. Needs root, and
# build/<mpi>/lib/libmpicast.so (make lib).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

cmdline="$*"
out="" mpis=openmpi,mpich parts=fig2,tree rate=100mbit
fig2_hosts=9 fig2_ks=1,2,3,4,5,6,7,8 fig2_size=8m fig2_variants=linear,dbcast,bcast,mbcast
fig2_reps=5 fig2_chain="128k off"
tree_confs="9x1 4x2" tree_sizes=1m,8m tree_ks=half,all tree_variants=dbcast,dbcast_rand
tree_reps=5 warmup=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --mpi) mpis=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --fig2-hosts) fig2_hosts=$2; shift 2 ;;
    --fig2-ks) fig2_ks=$2; shift 2 ;;
    --fig2-size) fig2_size=$2; shift 2 ;;
    --fig2-variants) fig2_variants=$2; shift 2 ;;
    --fig2-reps) fig2_reps=$2; shift 2 ;;
    --fig2-chain) fig2_chain=$2; shift 2 ;;
    --tree-confs) tree_confs=$2; shift 2 ;;
    --tree-sizes) tree_sizes=$2; shift 2 ;;
    --tree-ks) tree_ks=$2; shift 2 ;;
    --tree-variants) tree_variants=$2; shift 2 ;;
    --tree-reps) tree_reps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    -h | --help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "dbcast.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "dbcast.sh: --out DIR is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "dbcast.sh: needs root (the emulated cluster)" >&2; exit 1; }
mpis=${mpis//,/ }
for m in $mpis; do
  lib=build/$m/lib/libmpicast.so
  [ -e "$lib" ] || { echo "dbcast.sh: $lib missing (make lib)" >&2; exit 1; }
  prog=build/$m/bench/dbcast_bench
  # Built here, as the Makefile builds imcast_bench: linked with the flavour's libmpicast
  # ahead of the MPI library.
  if [ ! -x "$prog" ] || [ bench/dbcast_bench.c -nt "$prog" ] || [ bench/bench_common.h -nt "$prog" ] \
     || [ include/mpicast.h -nt "$prog" ]; then
    mkdir -p "build/$m/bench"
    "mpicc.$m" -O2 -Wall -Wextra -Werror -Iinclude -o "$prog" bench/dbcast_bench.c \
      -L"$TOP/build/$m/lib" -lmpicast -Wl,-rpath,"$TOP/build/$m/lib" -lm
  fi
done
mkdir -p "$out/raw"
# The settings of every job are the ones named here, not whatever the caller's shell has.
for v in $(compgen -e | grep -E '^MPICAST_' || true); do unset "$v"; done

cluster=$HERE/cluster.sh
child=""
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
trap '[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; }; exit 130' INT TERM
log() { echo "dbcast.sh: $*" >&2; }

maxhosts=$fig2_hosts
for c in $tree_confs; do [ "${c%x*}" -le "$maxhosts" ] || maxhosts=${c%x*}; done
"$cluster" up "$maxhosts" --rate "$rate"
burst=$("$cluster" state | sed -n 's/^BURST=//p')
started=$(date -u +%FT%TZ) t_start=$SECONDS
{
  echo "started=$started"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine=$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')"
  for m in $mpis; do
    echo "lib_$m=$(readlink -f "build/$m/lib/libmpicast.so") $(stat -c %y "$(readlink -f "build/$m/lib/libmpicast.so")") sha256:$(sha256sum <"build/$m/lib/libmpicast.so" | cut -c1-16)"
  done
  echo "cluster=bench/cluster.sh up $maxhosts --rate $rate (bucket $burst bytes)"
  echo "command=bench/dbcast.sh $cmdline"
} >>"$out/run.meta"

# job NAME MPI HOSTS PPN TIMEOUT [VAR=VALUE...] -- PROG ARGS...
# One launch (ended 5 s after it printed "# end" if MPI_Finalize hangs): stdout to
# raw/NAME.out, stderr to raw/NAME.log, raw/NAME.meta. Returns 0, and records a failure in
# failures.txt, so that one bad job does not end the run.
job() {
  local name=$1 mpi=$2 hosts=$3 ppn=$4 tmo=$5 envs=()
  shift 5
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
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
  env ${envs[@]+"${envs[@]}"} "$cluster" run --mpi "$mpi" --hosts "$hosts" --ppn "$ppn" --timeout "$tmo" \
    --out "$out/raw/$name.out" --done-marker "# end" --grace 5 -- "$@" 2>"$out/raw/$name.log" &
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
  # Only the program's rows (they start with the label, the job's name): a launcher's own
  # words on stdout (MPICH's "BAD TERMINATION" banner after a finalize hang) stay out.
  grep -E "^$1," "$f" 2>/dev/null | sed "s/^/$2,$3,$4,/" >>"$out/$5" || true
}

fig2() { # MPI
  local m=$1 c
  for c in $fig2_chain; do
    local name=fig2-$m-${fig2_hosts}h-chain$c
    job "$name" "$m" "$fig2_hosts" 1 1500 MPICAST_DBCAST_CHAIN_BYTES="$c" -- \
      "build/$m/bench/dbcast_bench" --label "$name" --sizes "$fig2_size" --ks "$fig2_ks" \
      --variants "$fig2_variants" --reps "$fig2_reps" --warmup "$warmup"
    collect "$name" "$m" "$fig2_hosts" 1 fig2.csv
  done
}

tree() { # MPI
  local m=$1 c t
  for c in $tree_confs; do
    local h=${c%x*} ppn=${c#*x}
    for t in binomial topo; do
      local name=tree-$m-$c-$t
      job "$name" "$m" "$h" "$ppn" 900 MPICAST_DBCAST_TREE="$t" -- \
        "build/$m/bench/dbcast_bench" --label "$name" --sizes "$tree_sizes" --ks "$tree_ks" \
        --variants "$tree_variants" --reps "$tree_reps" --warmup "$warmup"
      collect "$name" "$m" "$h" "$ppn" tree.csv
    done
  done
}

for m in $mpis; do
  for p in ${parts//,/ }; do
    case $p in
      fig2) fig2 "$m" ;;
      tree) tree "$m" ;;
      *) log "unknown part $p"; exit 2 ;;
    esac
  done
done
{
  echo "ended=$(date -u +%FT%TZ)"
  echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "cluster_seconds=$((SECONDS - t_start))"
} >>"$out/run.meta"
log "done in $((SECONDS - t_start)) s: $out"
