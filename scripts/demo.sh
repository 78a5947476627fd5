#!/usr/bin/env bash
# `make demo`: MPI_Bcast of the host MPI (Open MPI) against mpicast's, side by side in one run,
# and a short table. Two modes; the first line of the output says which one ran:
#
#   cluster   4 emulated hosts behind 100 Mbit/s links (bench/cluster.sh: network namespaces on
#             a bridge of our own, no route out; instance DEMO_CLUSTER, default 2, so that
#             `make bench` (0) and `make bench-smoke` (1) are left alone), bench/mcast_bench with
#             the variants `host` (PMPI_Bcast) and `default` (MPI_Bcast through mpicast with the
#             settings a user who sets nothing gets). Needs root, ip, tc and nft. About 30 s.
#   loopback  DEMO_NP ranks on this machine's loopback (MPICAST_IFACE=lo MPICAST_TTL=0),
#             bench/bcast_bench three times: shared memory, TCP, mpicast. Shows why loopback is
#             no place to look for the gain. A few seconds.
#
# DEMO_MODE=auto (default) runs the cluster when it can and falls back to loopback, saying
# why; DEMO_MODE=cluster fails instead of falling back; DEMO_MODE=loopback skips the cluster.
# Other settings: DEMO_SIZES (bytes, comma-separated, k and M suffixes allowed; cluster
# 64k,1M,4M, loopback 1,1k,16k,64k,256k,1M,4M), DEMO_REPS (timed repetitions per size;
# cluster 7, loopback 30), DEMO_HOSTS (4), DEMO_RATE (100mbit), DEMO_NP (loopback ranks, 4),
# DEMO_OUT (CSV and logs, build/demo).
# Needs build/openmpi/lib/libmpicast.so and build/openmpi/bench/{mcast_bench,bcast_bench}
# (`make demo` builds them). Every job has a timeout; the cluster is torn down on any exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
START=$SECONDS

mode=${DEMO_MODE:-auto}
hosts=${DEMO_HOSTS:-4}
rate=${DEMO_RATE:-100mbit}
np=${DEMO_NP:-4}
out=${DEMO_OUT:-$TOP/build/demo}
export BENCH_CLUSTER=${DEMO_CLUSTER:-2}
lib=$TOP/build/openmpi/lib/libmpicast.so
mcast_bench=$TOP/build/openmpi/bench/mcast_bench
bcast_bench=$TOP/build/openmpi/bench/bcast_bench
cluster=$TOP/bench/cluster.sh

say() { echo "demo: $*"; }
die() { echo "demo: $*" >&2; exit 1; }

case $mode in auto | cluster | loopback) ;; *) die "DEMO_MODE must be auto, cluster or loopback, not '$mode'" ;; esac
[ -e "$lib" ] || die "$lib missing: run make demo (or make lib-openmpi)"
for p in "$mcast_bench" "$bcast_bench"; do
  [ -x "$p" ] || die "$p missing: run make demo"
done

# A measurement of the defaults: nothing of the caller's mpicast settings (or an interface
# that is not ours) reaches the ranks. cluster.sh and the loopback run set what they need.
for v in $(compgen -e | grep -E '^MPICAST_' || true); do unset "$v"; done
unset LD_PRELOAD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# 64k -> 65536, 1M -> 1048576.
bytes_list() {
  local IFS=, s out=()
  for s in $1; do
    case $s in
      *[kK]) out+=($((${s%?} * 1024))) ;;
      *[mM]) out+=($((${s%?} * 1048576))) ;;
      *) out+=("$s") ;;
    esac
  done
  echo "${out[*]}"
}

machine() {
  local cpu
  cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
  echo "$(uname -n), $(nproc) cores, ${cpu:-unknown cpu}, Linux $(uname -r), $(date -u +%F)"
}

# Why the cluster cannot run here (empty: it can, as far as one can tell without trying).
cluster_unavailable() {
  [ "$(id -u)" = 0 ] || { echo "not root: the emulated hosts are network namespaces"; return; }
  local t
  for t in ip tc nft; do
    command -v "$t" >/dev/null || { echo "$t not found (make deps-system installs iproute2 and nftables)"; return; }
  done
  local probe=mpicast-c${BENCH_CLUSTER}probe
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "cannot create network namespaces here (a container without CAP_SYS_ADMIN?)"
    return
  fi
  ip netns del "$probe" 2>/dev/null || true
}

cluster_up=0 child=""
cleanup() {
  [ "$cluster_up" = 0 ] || "$cluster" down || true
}
trap cleanup EXIT
# A signal ends the running job first (cluster.sh run ends its launcher and reaps what is
# left in our namespaces), then us; the EXIT trap takes the cluster down.
trap 'trap - INT TERM; echo "demo: interrupted: ending the job, taking the cluster down" >&2; [ -z "$child" ] || { kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; }; exit 130' INT TERM

# The cluster run; on failure, why (for the fallback) in $why, and status 1.
why=""
run_cluster() {
  local sizes reps csv=$out/cluster.csv log=$out/cluster.log
  sizes=$(bytes_list "${DEMO_SIZES:-64k,1M,4M}")
  reps=${DEMO_REPS:-7}
  local bps speed
  read -r bps speed < <(awk -v r="${rate,,}" 'BEGIN {
    n = r + 0; u = r; sub(/^[0-9]+/, "", u)
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "bit") ? 1 : 0
    name = (u == "kbit") ? "kbit/s" : (u == "mbit") ? "Mbit/s" : (u == "gbit") ? "Gbit/s" : "bit/s"
    print n * m, (m ? n " " name : r) }')
  say "mode: emulated cluster: $hosts hosts (network namespaces of this machine) behind links of $speed, Open MPI"
  say "bringing up $hosts hosts: BENCH_CLUSTER=$BENCH_CLUSTER bench/cluster.sh up $hosts --rate $rate"
  cluster_up=1
  if ! "$cluster" up "$hosts" --rate "$rate" 2>"$log"; then
    cat "$log" >&2
    why="bench/cluster.sh up failed (above)"
    return 1
  fi
  local args=(--sizes "$sizes" --variants host,default --no-barrier --reps-min "$reps"
    --reps-max "$reps" --budget 0 --idle-wait)
  say "running: LD_PRELOAD=build/openmpi/lib/libmpicast.so bench/cluster.sh run --mpi openmpi -- build/openmpi/bench/mcast_bench ${args[*]}"
  say "(host = Open MPI's own broadcast, PMPI_Bcast; default = MPI_Bcast through mpicast, nothing set)"
  # In the background, so that a signal reaches our trap at once.
  LD_PRELOAD=$lib "$cluster" run --mpi openmpi --timeout 300 --out "$csv" --done-marker '# end' \
    -- "$mcast_bench" "${args[@]}" 2>>"$log" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log" >&2
    why="the benchmark failed on the emulated cluster (log above, $log)"
    return 1
  fi
  "$cluster" down 2>>"$log"
  cluster_up=0
  grep -q '^# data check: 0 wrong words' "$csv" || { why="the data check failed (see $csv)"; return 1; }

  local mpi
  mpi=$(sed -n 's/^# mpi: Open MPI v\([0-9.]*\).*/Open MPI \1/p' "$csv")
  echo
  echo "machine: $(machine); the $hosts emulated hosts share its cores"
  echo "MPI_Bcast from rank 0 to $hosts hosts (one rank each) over $speed links, ${mpi:-Open MPI}"
  echo "figures: the slowest rank's time, median of $reps; wire: what one copy of the data needs on one link (payload only)"
  echo
  awk -F, -v bps="$bps" -v rate="$speed" '
    function human(n) {
      if (n >= 1048576 && n % 1048576 == 0) return (n / 1048576) " MiB"
      if (n >= 1024 && n % 1024 == 0) return (n / 1024) " KiB"
      return n " B"
    }
    function w_of(s) { return (bps > 0) ? s * 8 / bps * 1e3 : 0 }
    /^#/ || $1 != "bcast" { next }
    $2 == "host" { host[$3] = $5 }
    $2 == "default" { mc[$3] = $5; if (!($3 in seen)) { seen[$3] = 1; order[n++] = $3 } }
    END {
      printf "%9s %14s %13s %9s %10s\n", "size", "Open MPI (ms)", "mpicast (ms)", "speed-up", "wire (ms)"
      pick = ""
      for (i = 0; i < n; i++) {
        s = order[i]; h = host[s] * 1e3; m = mc[s] * 1e3; w = (bps > 0) ? s * 8 / bps * 1e3 : 0
        printf "%9s %14.1f %13.1f %8.1fx %10.1f\n", human(s), h, m, (m > 0) ? h / m : 0, w
        if (s == 1048576 || (pick != 1048576 && (pick == "" || s + 0 > pick + 0))) pick = s
      }
      if (pick == "" || w_of(pick) <= 0 || mc[pick] <= 0) exit
      h = host[pick] * 1e3; m = mc[pick] * 1e3; w = (bps > 0) ? pick * 8 / bps * 1e3 : 0
      printf "\nWhat it shows: mpicast puts one copy of the data on the wire (the root multicasts it, the "
      printf "switch copies it to every host) where Open MPI'"'"'s broadcast sends one copy per edge of its "
      printf "tree: at %s mpicast takes %.0f ms, %.2f times the %.1f ms that one copy needs on a %s ", human(pick), m, m / w, w, rate
      printf "link, and Open MPI %.0f ms, %.1f times as long.\n", h, h / m
    }' "$csv" | fold -s -w 96 | sed 's/ *$//'
  local stats
  stats=$(sed -n 's/^# mpicast stats summed over ranks: //p' "$csv" | tr ' ' '\n' |
    grep -E '^(bcast_mcast|dgrams_sent|repairs|fallbacks)=' | paste -sd ' ' || true)
  echo
  echo "checked: every broadcast's data, byte for byte, on every rank; mpicast's counters: $stats"
  echo "CSV and log: ${csv#"$TOP"/}, ${log#"$TOP"/}"
}

run_loopback() {
  local sizes reps
  sizes=$(bytes_list "${DEMO_SIZES:-1,1k,16k,64k,256k,1M,4M}")
  reps=${DEMO_REPS:-30}
  local args=(--sizes "$sizes" --reps "$reps" --barrier)
  local run=(mpirun.openmpi --oversubscribe --bind-to none -n "$np")
  export MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0 MPICAST_TOPO=flat
  say "host MPI (shared memory): ${run[*]} build/openmpi/bench/bcast_bench ${args[*]}"
  timeout -k 10 600 "${run[@]}" "$bcast_bench" "${args[@]}" >"$out/host.csv"
  # Between hosts the host MPI moves data over TCP: the same run with shared memory off is
  # its network path, here over the same loopback interface that mpicast multicasts on.
  say "host MPI (TCP):           ${run[*]} --mca btl tcp,self build/openmpi/bench/bcast_bench ${args[*]}"
  timeout -k 10 600 "${run[@]}" --mca btl tcp,self "$bcast_bench" "${args[@]}" >"$out/host-tcp.csv"
  say "mpicast:                  MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_MIN_BYTES=0 MPICAST_TOPO=flat ${run[*]} -x LD_PRELOAD=build/openmpi/lib/libmpicast.so build/openmpi/bench/bcast_bench ${args[*]}"
  timeout -k 10 600 "${run[@]}" -x "LD_PRELOAD=$lib" "$bcast_bench" "${args[@]}" >"$out/mpicast.csv"
  echo
  echo "machine: $(machine), loopback, $np ranks"
  echo "figures: median over $reps reps of the slowest rank's time, microseconds; ratios: host time / mpicast time (above 1: mpicast faster)"
  echo
  printf '%-8s %10s %12s %12s %12s %9s %9s\n' op size "shm (us)" "tcp (us)" "mpicast (us)" "shm/mc" "tcp/mc"
  awk -F, '
    /^#/ || $1 == "op" { next }
    FILENAME == ARGV[1] { shm[$1 "," $2] = $4; next }
    FILENAME == ARGV[2] { tcp[$1 "," $2] = $4; next }
    {
      k = $1 "," $2; m = $4
      printf "%-8s %10s %12.1f %12.1f %12.1f %9.2f %9.2f\n", $1, $2, shm[k] * 1e6, tcp[k] * 1e6, m * 1e6,
        (m > 0) ? shm[k] / m : 0, (m > 0) ? tcp[k] / m : 0
    }' "$out/host.csv" "$out/host-tcp.csv" "$out/mpicast.csv"
  echo
  echo "Why no gain here: loopback has no wire. The host MPI copies through shared memory, or TCP"
  echo "over loopback, at memory speed, while every multicast datagram costs kernel work to send"
  echo "and to deliver to each rank; mpicast's gain needs a network where each copy of the data"
  echo "costs link time (as root, make demo shows it on emulated 100 Mbit/s hosts; BENCHMARKS.md)."
  echo "CSV: ${out#"$TOP"/}/{host,host-tcp,mpicast}.csv"
}

mkdir -p "$out"
ran=""
if [ "$mode" != loopback ]; then
  why=$(cluster_unavailable)
  if [ -z "$why" ] && run_cluster; then
    ran=cluster
  elif [ "$mode" = cluster ]; then
    die "DEMO_MODE=cluster, but $why"
  else
    cleanup
    cluster_up=0
    say "the emulated cluster cannot run: $why"
  fi
fi
if [ -z "$ran" ]; then
  note=""
  [ "$mode" != loopback ] || note=" (DEMO_MODE=loopback)"
  say "mode: loopback: $np ranks on this machine, multicast on lo only$note"
  run_loopback
  ran=loopback
fi
say "done ($ran mode) in $((SECONDS - START)) s"
