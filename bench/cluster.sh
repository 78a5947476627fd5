#!/usr/bin/env bash
# The emulated cluster: N hosts as network namespaces on one Linux bridge of ours (the switch),
# each behind a rate-limited veth link, and MPI jobs run across them.
#
#   cluster.sh up N [--rate 100mbit|1gbit|10gbit|RATE] [--burst BYTES] [--loss HOST:PCT]
#   cluster.sh down                       remove everything of ours (idempotent)
#   cluster.sh status                     hosts, link counters, qdiscs, loss rules
#   cluster.sh state                      HOSTS=, RATE=, BURST= (bytes), LOSS= of the cluster that is up
#   cluster.sh loss HOST PCT              drop PCT% of multicast datagrams arriving at HOST (0: none)
#   cluster.sh counters                   "host rx_bytes tx_bytes" per host (of its veth)
#   cluster.sh exec HOST CMD...           run CMD inside HOST's namespace
#   cluster.sh run [--mpi openmpi|mpich|openmpi5|mpich5|impi] [--ppn K] [--hosts M] [--timeout S] [--] PROG ARGS...
#                                         one MPI job, K ranks on each of the first M hosts
#   cluster.sh mpi-env [--mpi M] [--ppn K] [--hosts M] HOSTFILE
#                                         for a launcher that we do not start (mpicast sim
#                                         calibrate): writes HOSTFILE, prints NAME=VALUE lines
#
# Host i (1..N) is the namespace mpicast-h<i> with address 10.77.0.<i>/24 on its interface
# mpicast0, a veth whose peer mpicast-h<i> is a port of the bridge mpicast-br (10.77.0.254, where
# mpirun/mpiexec in this namespace reach the daemons). Every name we create starts with
# "mpicast-" (the in-namespace interface is mpicast0); `down` removes exactly those, and nothing
# here ever names the machine's own interfaces. Multicast stays on the bridge: each namespace
# routes 224.0.0.0/4 to mpicast0, and the bridge has no route out.
#
# Links: tc tbf at RATE on both ends of each veth, so a host's sends (egress of mpicast0) and
# its receives (egress of the bridge port towards it) are each limited to RATE, as on a
# full-duplex switched port. `overhead 24` charges each frame the preamble, inter-frame gap and
# FCS of Ethernet, so "100mbit" is 100 Mbit/s Ethernet, not 100 Mbit/s of IP packets. The
# bucket (what leaves an idle link at once) is about one frame at 100 Mbit/s (shape() says why);
# --burst BYTES sets another, for comparisons.
# IGMP snooping is off (mcast_snooping 0): the bridge floods multicast to every port, as a
# switch without snooping does. With snooping on and no querier, the bridge would stop
# forwarding a group about 260 s after the join report (mcast_membership_interval) in a long
# benchmark; every host of a job is a member anyway, so flooding costs nothing on the links.
#
# Loss: an nftables table "inet mpicast_bench" inside the chosen host's namespace drops, on the
# input hook, "numgen random mod 100 < PCT" of the UDP datagrams to 224.0.0.0/4; they crossed
# the link (and its rate limit) and are lost before any socket sees them. The table dies with
# the namespace.
#
# Jobs (`run`): point-to-point of both MPIs goes over TCP between the namespaces, so the host
# MPI pays the same links as mpicast:
#   Open MPI: a hostfile of the host addresses, plm_rsh_agent = bench/netns-agent.sh (the
#     "remote shell" is `ip netns exec`), btl tcp,self on 10.77.0.0/24, the ORTE/PMIx daemons'
#     out-of-band TCP on the bridge.
#   MPICH (hydra): -launcher ssh -launcher-exec bench/netns-agent.sh; MPIR_CVAR_NOLOCAL=1 and
#     UCX_TLS=tcp,self, or ch4:ucx would take shared memory (every namespace has the same
#     hostname) and never touch the links.
# Each rank sees MPICAST_IFACE=10.77.0.0/24 (its own address on that subnet) and MPICAST_TTL=1.
#
# Needs root, ip, tc (sch_tbf), nft. Everything is bounded: `run` kills the job after --timeout
# seconds (default 600) and `down` kills what is left in our namespaces by process id.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Instance K (BENCH_CLUSTER=K, 0..9) is a separate cluster with its own names and subnet, so
# that the smoke run of `make test` (instance 1) never tears down a benchmark (instance 0).
INSTANCE=${BENCH_CLUSTER:-0}
[[ "$INSTANCE" =~ ^[0-9]$ ]] || { echo "cluster.sh: BENCH_CLUSTER must be 0..9" >&2; exit 1; }
if [ "$INSTANCE" = 0 ]; then
  NS_PREFIX=mpicast-h BRIDGE=mpicast-br
else
  NS_PREFIX=mpicast-c${INSTANCE}h BRIDGE=mpicast-c${INSTANCE}br
fi
IFACE=mpicast0
NET=10.77.$INSTANCE
SUBNET=$NET.0/24
BRIDGE_ADDR=$NET.254
MAX_HOSTS=32
STATE_DIR=/run/mpicast-bench
# shellcheck source=bench/jobrun.sh
. "$HERE/jobrun.sh"
STATE=$STATE_DIR/cluster$INSTANCE.env
NFT_TABLE="inet mpicast_bench"
MCAST_RANGE=224.0.0.0/4

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc, nftables)"
  local t
  for t in ip tc nft; do command -v "$t" >/dev/null || die "$t not found (make deps installs nftables; ip/tc are iproute2)"; done
}

ns_of() { # HOST (i, mpicast-h<i> or 10.77.0.<i>) -> namespace name
  local h=$1
  case "$h" in
    "$NET".*) h=${h#"$NET".} ;;
    "$NS_PREFIX"*) h=${h#"$NS_PREFIX"} ;;
  esac
  [[ "$h" =~ ^[0-9]+$ ]] && [ "$h" -ge 1 ] && [ "$h" -le "$MAX_HOSTS" ] || die "no such host: $1"
  echo "$NS_PREFIX$h"
}

# Our namespaces, in host order.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NS_PREFIX}[0-9]+$" | sort -t h -k 3 -n || true
}

host_count() { our_namespaces | wc -l; }

# rate_bytes, default_burst, tbf_args: shared with bench/switched.sh.
. "$HERE/tbf.sh"

shape() { # DEV RATE BURST
  # shellcheck disable=SC2046 # tbf_args gives words
  tc qdisc replace dev "$1" root $(tbf_args "$2" "$3")
}

set_loss() { # HOST PCT
  local ns pct=$2
  ns=$(ns_of "$1")
  ip netns list | awk '{print $1}' | grep -qx "$ns" || die "host $1 is not up"
  [[ "$pct" =~ ^[0-9]+$ ]] && [ "$pct" -le 100 ] || die "bad loss percentage '$pct' (0..100)"
  ip netns exec "$ns" nft delete table $NFT_TABLE 2>/dev/null || true
  [ "$pct" -gt 0 ] || { log "$ns: no loss"; return 0; }
  local sample=""
  [ "$pct" -ge 100 ] || sample="numgen random mod 100 < $pct"
  ip netns exec "$ns" nft -f - <<NFT
table $NFT_TABLE {
  counter seen {}
  counter dropped {}
  chain input {
    type filter hook input priority -10; policy accept;
    iifname "$IFACE" ip daddr $MCAST_RANGE meta l4proto udp counter name "seen"
    iifname "$IFACE" ip daddr $MCAST_RANGE meta l4proto udp $sample counter name "dropped" drop
  }
}
NFT
  log "$ns: dropping $pct% of the multicast datagrams it receives (nft table $NFT_TABLE)"
}

# A TCP connection to a closed port of ADDR is refused (a reset came back) only when ADDR is
# reachable; no ping needed.
reachable() {
  local err
  err=$(timeout 3 bash -c "exec 3<>/dev/tcp/$1/9" 2>&1) && return 0
  [[ $err == *refused* ]]
}

down() {
  need_root
  local ns
  # Processes left in our namespaces are ranks and daemons of our jobs (a crash or an
  # interrupt): end them by id, or a namespace would outlive its name.
  reap
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || true # its veth end goes with it, and so does the peer
    rm -rf "/tmp/mpicast-netns/$ns" # TMPDIR of its MPI daemons (netns-agent.sh)
  done
  local l
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${NS_PREFIX}[0-9]+$" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE"
  rm -f "$STATE"
  return 0
}

up() {
  need_root
  local n=${1:-} rate=100mbit loss="" burst=""
  [ -n "$n" ] || die "usage: cluster.sh up N [--rate RATE] [--burst BYTES] [--loss HOST:PCT]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      --burst) burst=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ -z "$burst" ] || { [[ "$burst" =~ ^[0-9]+$ ]] && [ "$burst" -ge 1538 ] && [ "$burst" -le 65000 ]; } ||
    die "--burst wants bytes, 1538 (one full frame) to 65000"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le "$MAX_HOSTS" ] || die "N must be 1..$MAX_HOSTS"
  rate_bytes "$rate" >/dev/null
  [ -n "$burst" ] || burst=$(default_burst "$rate")
  down # a leftover of an earlier run
  # Half-built is worse than nothing: undo it all if anything below fails or we are stopped.
  trap 'rc=$?; trap - EXIT; [ $rc = 0 ] || { log "up failed, tearing down"; down; }; exit $rc' EXIT
  trap 'exit 130' INT TERM

  ip link add "$BRIDGE" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
  [ -w "/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6"
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for i in $(seq 1 "$n"); do
    ns=$NS_PREFIX$i
    ip netns add "$ns"
    ip link add "$ns" type veth peer name "$IFACE" netns "$ns"
    [ -w "/proc/sys/net/ipv6/conf/$ns/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/$ns/disable_ipv6"
    ip link set "$ns" master "$BRIDGE"
    shape "$ns" "$rate" "$burst" # bridge -> host: what the host receives
    ip link set "$ns" up
    ip netns exec "$ns" bash -euo pipefail -c "
      [ ! -w /proc/sys/net/ipv6/conf/$IFACE/disable_ipv6 ] || echo 1 >/proc/sys/net/ipv6/conf/$IFACE/disable_ipv6
      ip link set lo up
      ip addr add $NET.$i/24 dev $IFACE
      ip link set $IFACE up
      ip route add $MCAST_RANGE dev $IFACE
      $(declare -f rate_bytes tbf_args shape die); shape $IFACE $rate $burst # host -> bridge: what it sends
    "
  done
  mkdir -p "$STATE_DIR"
  printf 'HOSTS=%s\nRATE=%s\nBURST=%s\nLOSS=%s\n' "$n" "$rate" "$burst" "$loss" >"$STATE"
  if [ -n "$loss" ]; then
    [[ "$loss" == *:* ]] || die "--loss wants HOST:PCT"
    set_loss "${loss%%:*}" "${loss#*:}"
  fi
  # Every host must reach every other before we say it is up.
  for i in $(seq 2 "$n"); do
    ip netns exec "${NS_PREFIX}1" bash -c "$(declare -f reachable); reachable $NET.$i" || die "host 1 cannot reach $NET.$i"
  done
  reachable "$NET.1" || die "the bridge cannot reach $NET.1"
  trap - EXIT INT TERM
  log "up: $n hosts ($NS_PREFIX""1..$n, $NET.1-$n/24) on $BRIDGE ($BRIDGE_ADDR), links $rate each way, bucket $burst bytes"
}

status() {
  local ns
  [ -r "$STATE" ] && cat "$STATE"
  ip -br addr show "$BRIDGE" 2>/dev/null || echo "no bridge $BRIDGE"
  for ns in $(our_namespaces); do
    echo "== $ns"
    ip netns exec "$ns" ip -s -br addr show "$IFACE" 2>/dev/null || true
    ip netns exec "$ns" ip -s link show "$IFACE" | sed -n '/RX:/,$p'
    ip netns exec "$ns" tc -s qdisc show dev "$IFACE" | head -3
    tc -s qdisc show dev "$ns" | head -3
    ip netns exec "$ns" nft list table $NFT_TABLE 2>/dev/null || true
  done
}

counters() {
  local ns
  for ns in $(our_namespaces); do
    printf '%s %s %s\n' "$ns" \
      "$(ip netns exec "$ns" cat /sys/class/net/$IFACE/statistics/rx_bytes)" \
      "$(ip netns exec "$ns" cat /sys/class/net/$IFACE/statistics/tx_bytes)"
  done
}

# End every process left in our namespaces (ranks and daemons of an earlier job), by id.
reap() {
  local ns pids
  for ns in $(our_namespaces); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || continue
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    sleep 0.5
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  done
  return 0
}

# run [--mpi openmpi|mpich] [--ppn K] [--hosts M] [--timeout S]
#     [--out FILE [--done-marker TEXT] [--grace S]] [--] PROG ARGS...
# Environment passed to every rank: LD_PRELOAD if set, and every MPICAST_* variable;
# RANK_PRELOAD as the ranks' LD_PRELOAD only (bench/jobrun.sh).
# --out sends the job's stdout to FILE. With --done-marker, a job whose output holds a line
# starting with TEXT and that has not exited --grace seconds (default 20) later is ended and
# counts as completed, with a warning (bench/jobrun.sh says why).
run() {
  local mpi=openmpi ppn=1 hosts="" tmo=600 out="" marker="" grace=20
  while [ $# -gt 0 ]; do
    case $1 in
      --mpi) mpi=$2; shift 2 ;;
      --ppn) ppn=$2; shift 2 ;;
      --hosts) hosts=$2; shift 2 ;;
      --timeout) tmo=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --done-marker) marker=$2; shift 2 ;;
      --grace) grace=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || die "run: no program"
  [ -z "$marker" ] || [ -n "$out" ] || die "run: --done-marker needs --out"
  case $mpi in openmpi|mpich|openmpi5|mpich5|impi) ;; *) die "run: --mpi openmpi, mpich, openmpi5, mpich5 or impi" ;; esac
  local n
  n=$(host_count)
  [ "$n" -ge 1 ] || die "run: the cluster is not up (cluster.sh up N)"
  [ -n "$hosts" ] || hosts=$n
  [ "$hosts" -le "$n" ] || die "run: $hosts hosts wanted, $n up"
  export MPICAST_IFACE=${MPICAST_IFACE:-$SUBNET} MPICAST_TTL=${MPICAST_TTL:-1}
  local hf rc=0
  hf=$(mktemp /tmp/mpicast-hosts.XXXXXX)
  seq 1 "$hosts" | sed "s/^/$NET./" | jobrun_hostfile "$mpi" "$ppn" >"$hf"
  LAUNCH=()
  jobrun_launcher "$mpi" "$ppn" $((hosts * ppn)) "$hf" "$HERE/netns-agent.sh" \
    "$SUBNET" "$SUBNET" "$SUBNET" "$BRIDGE" "$IFACE"
  jobrun_job cluster.sh "$tmo" "$out" "$marker" "$grace" "reap; rm -f $hf" -- \
    "${LAUNCH[@]}" "$@" || rc=$?
  rm -f "$hf"
  return $rc
}

# mpi-env [--mpi openmpi|mpich] [--ppn K] [--hosts M] HOSTFILE
# The placement and transport of `run` in a launcher's own environment variables, for programs
# that start mpirun/mpiexec themselves (`mpicast sim calibrate --hostfile HOSTFILE`): writes the
# host file and prints NAME=VALUE lines (for `env`). Open MPI takes every --mca of `run` as
# OMPI_MCA_<name> and forwards them to its daemons; hydra reads HYDRA_LAUNCHER,
# HYDRA_LAUNCHER_EXEC and HYDRA_IFACE, and passes the rest of its environment to the ranks.
mpi_env() {
  local mpi=openmpi ppn=1 hosts=""
  while [ $# -gt 0 ]; do
    case $1 in
      --mpi) mpi=$2; shift 2 ;;
      --ppn) ppn=$2; shift 2 ;;
      --hosts) hosts=$2; shift 2 ;;
      *) break ;;
    esac
  done
  [ $# = 1 ] || die "usage: cluster.sh mpi-env [--mpi M] [--ppn K] [--hosts M] HOSTFILE"
  local hf=$1 n i agent="$HERE/netns-agent.sh"
  n=$(host_count)
  [ "$n" -ge 1 ] || die "mpi-env: the cluster is not up (cluster.sh up N)"
  [ -n "$hosts" ] || hosts=$n
  [ "$hosts" -le "$n" ] || die "mpi-env: $hosts hosts wanted, $n up"
  echo "MPICAST_IFACE=${MPICAST_IFACE:-$SUBNET}"
  echo "MPICAST_TTL=${MPICAST_TTL:-1}"
  case $mpi in
    openmpi)
      for i in $(seq 1 "$hosts"); do echo "$NET.$i slots=$ppn"; done >"$hf"
      printf '%s\n' OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        PMIX_MCA_ptl_tcp_remote_connections=1 "PMIX_MCA_ptl_tcp_if_include=$SUBNET" \
        "OMPI_MCA_rmaps_base_mapping_policy=ppr:$ppn:node" OMPI_MCA_hwloc_base_binding_policy=none \
        "OMPI_MCA_plm_rsh_agent=$agent" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
        OMPI_MCA_btl=tcp,self "OMPI_MCA_btl_tcp_if_include=$SUBNET" "OMPI_MCA_oob_tcp_if_include=$SUBNET" \
        OMPI_MCA_pml=ob1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_orte_leave_session_attached=1 \
        'OMPI_MCA_rtc=^hwloc'
      ;;
    mpich)
      for i in $(seq 1 "$hosts"); do echo "$NET.$i:$ppn"; done >"$hf"
      printf '%s\n' HYDRA_LAUNCHER=ssh "HYDRA_LAUNCHER_EXEC=$agent" "HYDRA_IFACE=$BRIDGE" \
        MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self "UCX_NET_DEVICES=$IFACE"
      ;;
    *) die "mpi-env: --mpi openmpi or mpich" ;;
  esac
}

cmd=${1:-}
[ -n "$cmd" ] || { sed -n '2,15p' "$0"; exit 2; }
shift
case $cmd in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  state) [ -r "$STATE" ] || die "no cluster is up"; cat "$STATE" ;;
  counters) counters ;;
  loss) need_root; [ $# = 2 ] || die "usage: cluster.sh loss HOST PCT"; set_loss "$1" "$2" ;;
  exec) need_root; [ $# -ge 2 ] || die "usage: cluster.sh exec HOST CMD..."; ns=$(ns_of "$1"); shift; exec ip netns exec "$ns" "$@" ;;
  run) run "$@" ;;
  mpi-env) mpi_env "$@" ;;
  reap) need_root; reap ;;
  *) die "unknown command '$cmd' (up, down, status, state, loss, counters, exec, run, mpi-env, reap)" ;;
esac
