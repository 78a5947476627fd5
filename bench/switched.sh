#!/usr/bin/env bash
# The emulated SWITCHED network: switches as router namespaces joined by rate-limited links in
# the graph of a network file (docs/sim.md, "Contention and the network file"), hosts on the
# switches, static routes that follow the file's routing (up-down routing for `routing updown`),
# and MPI jobs of both MPIs across it. bench/cluster.sh is the flat one (one bridge).
#
#   switched.sh up NETFILE [--host-rate RATE]   build it (RATE: hosts whose line gives no
#                                               bandwidth; default 100mbit)
#   switched.sh down                            remove everything of ours (idempotent)
#   switched.sh check                           says whether anything of ours is left (exit 1 if so)
#   switched.sh status                          namespaces, addresses, qdiscs, routes, counters
#   switched.sh hosts                           "NAME NAMESPACE DATA-ADDR MGMT-ADDR SWITCH" lines
#   switched.sh exec HOST|SWITCH CMD...         run CMD in that namespace (file names)
#   switched.sh path HOST1 HOST2                the switches a packet from HOST1 to HOST2 crosses,
#                                               measured (traceroute-like, ICMP with rising TTL)
#   switched.sh counters                        "link tx-bytes" of every switch-to-switch direction
#   switched.sh run [--mpi openmpi|mpich] [--ppn K] [--hosts M] [--timeout S]
#                   [--out FILE [--done-marker TEXT] [--grace S]] [--] PROG ARGS...
#   switched.sh mpi-env [--mpi M] [--ppn K] [--hosts M] HOSTFILE
#   switched.sh selftest NETFILE [--mpi M]...   up, check paths, rates and MPI jobs, down
#
# Names and addresses (a single instance; nothing collides with cluster.sh's mpicast-h*,
# mpicast-c*, mpicast-br and 10.77.K.0/24):
#   switch number k (0-based, file order)  namespace mpicast-xs<k>, ip_forward=1, rp_filter 0
#   host number j (1-based, file order)    namespace mpicast-xh<j>
#   link number i (0-based, file order)    veth mpicast-xl<i>a (in the first switch's namespace)
#                                          and mpicast-xl<i>b (in the second's), 10.78.250.4i+1
#                                          and +2 /30 (at most 62 links)
#   the m-th host (0-based) of switch k    data0 in its namespace, 10.78.k.4m+2/30; the switch's
#                                          end mpicast-xp<j> is 10.78.k.4m+1 (at most 63 hosts a
#                                          switch, 250 switches). 10.78.k.0/24 is switch k's
#                                          host block: what the routes name.
#   management network                     a flat bridge mpicast-xmgmt (10.79.0.254/24) in this
#                                          namespace; host j's second interface mgmt0 is
#                                          10.79.0.j/24 on it (veth peer mpicast-xm<j>)
# Every veth between namespaces is made inside them (`ip link add ... netns`), so the only
# things of ours in this namespace are the management bridge and its ports.
#
# Why a management network: mpirun/mpiexec run here, in the machine's namespace, and must
# reach the daemons (Open MPI's orted and PMIx, MPICH's hydra proxies) on every host, and the
# daemons reach back. Routing this namespace into the switched network would put a route to
# 10.78.0.0/16 into the machine's own table and the launcher's traffic onto the links being
# measured. So the hosts have two interfaces, as a cluster with a separate management Ethernet
# has: the launch, PMIx/PMI and out-of-band traffic goes over mgmt0 (unlimited, flat), and MPI's
# data (Open MPI btl tcp on 10.78.0.0/16; MPICH ch4:ucx, UCX_NET_DEVICES=data0) over data0
# and the switches. `run` checks nothing of that by itself; `selftest` does (counters).
#
# Links: tc tbf at the link's bandwidth on both ends of each veth (each direction of a
# full-duplex cable is limited on its sending side), with cluster.sh's bucket and Ethernet
# overhead (shape(), default_burst()). A host's link: the host line's bandwidth (or
# --host-rate), on data0 and on the switch's end. LATENCY of a link line is ignored (netem is
# not available here): `up` says so.
#
# Routes: `mpicast sim routes NETFILE` gives the switch path of every pair of switches by the
# file's routing. Up-down routes need not be destination-based (a switch may forward to one
# destination by different neighbours for different sources), so each switch k gets
#   - in its main table, a route to every other switch's host block by k's own path (what
#     traffic from k's hosts and from k itself takes: ICMP errors, pings);
#   - for each other source switch s whose paths cross k: the rule `from 10.78.s.0/24 lookup
#     100+s` (priority 1000) and in table 100+s a route to each destination block whose path
#     from s crosses k, by the next hop of that path.
# So a packet from a host of switch s to a host of switch d crosses exactly the switches of the
# path s -> d, whatever routes the other pairs take; the answer (d -> s) takes that path.
# rp_filter is 0 on every switch interface: the way back may differ from the way out.
#
# Needs root, ip, tc (sch_tbf) and the mpicast binary (MPICAST=, else build/*/bin/mpicast, else
# target/*/mpicast). Everything is bounded: `run` kills the job after --timeout seconds (default
# 600) and `down` ends what is left in our namespaces by process id. `up` tears down what it
# built if it fails or is interrupted.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/jobrun.sh
. "$HERE/jobrun.sh"
SW_PREFIX=mpicast-xs
HOST_PREFIX=mpicast-xh
MGMT_BRIDGE=mpicast-xmgmt
DATA_IF=data0
MGMT_IF=mgmt0
DATA_NET=10.78
DATA_SUBNET=10.78.0.0/16
LINK_NET=10.78.250
MGMT_NET=10.79.0
MGMT_SUBNET=10.79.0.0/24
MGMT_ADDR=10.79.0.254
STATE_DIR=/run/mpicast-bench
STATE=$STATE_DIR/switched.env
HOSTS_FILE=$STATE_DIR/switched.hosts
ROUTES_FILE=$STATE_DIR/switched.routes

die() { echo "switched.sh: $*" >&2; exit 1; }
log() { echo "switched.sh: $*" >&2; }

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc)"
  local t
  for t in ip tc; do command -v "$t" >/dev/null || die "$t not found (iproute2)"; done
}

mpicast_bin() {
  local c
  if [ -n "${MPICAST:-}" ]; then echo "$MPICAST"; return; fi
  for c in "$TOP"/build/*/bin/mpicast "$TOP"/target/*/mpicast "$TOP"/target/*/*/mpicast; do
    [ -x "$c" ] && { echo "$c"; return; }
  done
  die "no mpicast binary (set MPICAST=, or make lib)"
}

# rate_bytes, default_burst, tbf_args: the rate limits of cluster.sh (see there for the bucket).
. "$HERE/tbf.sh"

shape() { # NS DEV RATE
  # shellcheck disable=SC2046 # tbf_args gives words
  ip netns exec "$1" tc qdisc replace dev "$2" root $(tbf_args "$3" "$(default_burst "$3")")
}

# A network file's BANDWIDTH (100Mbit, 2.5Gbit, 1gbps, 100Mbit/s) -> tc's "<bits>bit".
file_rate() {
  awk -v s="$1" 'BEGIN {
    s = tolower(s); sub(/\/s$/, "", s)
    if (!match(s, /^[0-9]+(\.[0-9]+)?/)) exit 1
    n = substr(s, 1, RLENGTH); u = substr(s, RLENGTH + 1)
    if (u == "bit" || u == "") m = 1; else if (u == "kbit") m = 1e3; else if (u == "mbit") m = 1e6
    else if (u == "gbit") m = 1e9; else if (u == "tbit") m = 1e12; else if (u == "bps") m = 8
    else if (u == "kbps") m = 8e3; else if (u == "mbps") m = 8e6; else if (u == "gbps") m = 8e9
    else if (u == "tbps") m = 8e12; else exit 1
    printf "%.0fbit\n", n * m }' || die "bad bandwidth '$1'"
}

our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^(${SW_PREFIX}|${HOST_PREFIX})[0-9]+$" | sort -V || true
}
our_links() { # in this namespace
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^mpicast-x' || true
}

# End every process left in our namespaces, by id.
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

down() {
  need_root
  local ns l
  reap
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || true # its veth ends go with it, and their peers
    rm -rf "/tmp/mpicast-netns/$ns"
  done
  for l in $(our_links); do ip link del "$l" 2>/dev/null || true; done
  rm -f "$STATE" "$HOSTS_FILE" "$ROUTES_FILE"
  return 0
}

check() {
  local left="" ns l
  for ns in $(our_namespaces); do left+=" netns:$ns"; done
  for l in $(our_links); do left+=" link:$l"; done
  for f in "$STATE" "$HOSTS_FILE" "$ROUTES_FILE"; do [ ! -e "$f" ] || left+=" file:$f"; done
  ip route show 2>/dev/null | grep -qE "^(10\.78\.|10\.79\.0\.)" && left+=" route:$(ip route show | grep -E '^(10\.78\.|10\.79\.0\.)' | tr '\n' ';')"
  if [ -n "$left" ]; then
    echo "switched.sh: left:$left"
    return 1
  fi
  echo "switched.sh: nothing of ours is left (no mpicast-xs*/mpicast-xh* namespaces, no mpicast-x* links, no state files, no 10.78/10.79.0 routes)"
}

# Reads the network file: SWITCHES (names, file order), LINKS ("A B RATE" lines), HOSTS
# ("NAME SWITCH RATE" lines; RATE empty for nic).
read_net() {
  local file=$1 kw a b c d
  SWITCHES=() LINKS=() HOSTS=()
  while read -r kw a b c d; do
    case $kw in
      switch) SWITCHES+=("$a") ;; # one a line (below)
      link)
        [ -z "$d" ] || [[ "$d" =~ ^0+(ns|us|ms|s)?$ ]] || log "link $a $b: latency $d ignored (no netem here)"
        LINKS+=("$a $b $(file_rate "$c")") ;;
      host)
        local r=""
        [ -z "$c" ] || [ "${c,,}" = nic ] || r=$(file_rate "$c")
        HOSTS+=("$a $b $r") ;;
    esac
  done < <(sed -e 's/#.*//' "$file" | awk 'NF' | while read -r kw rest; do
    # `switch` lines may name many switches: one a line.
    if [ "$kw" = switch ]; then for s in $rest; do echo "switch $s"; done; else echo "$kw $rest"; fi
  done)
}

sw_index() { # NAME -> k
  local k
  for k in "${!SWITCHES[@]}"; do [ "${SWITCHES[$k]}" = "$1" ] && { echo "$k"; return; }; done
  die "unknown switch $1"
}

up() {
  need_root
  local file=${1:-} host_rate=100mbit
  [ -n "$file" ] && [ -r "$file" ] || die "usage: switched.sh up NETFILE [--host-rate RATE]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --host-rate) host_rate=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  rate_bytes "$host_rate" >/dev/null
  local bin routes
  bin=$(mpicast_bin)
  routes=$("$bin" sim routes "$file") || die "mpicast sim routes $file failed"
  read_net "$file"
  local ns_k=${#SWITCHES[@]} nl=${#LINKS[@]} nh=${#HOSTS[@]}
  [ "$ns_k" -ge 1 ] && [ "$ns_k" -le 250 ] || die "1..250 switches, not $ns_k"
  [ "$nl" -le 62 ] || die "at most 62 links, not $nl"
  [ "$nh" -ge 1 ] && [ "$nh" -le 253 ] || die "1..253 hosts, not $nh"
  down # a leftover of an earlier run
  trap 'rc=$?; trap - EXIT; [ $rc = 0 ] || { log "up failed, tearing down"; down; }; exit $rc' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$STATE_DIR"
  echo "$routes" >"$ROUTES_FILE"

  local k ns i a b r ka kb
  for k in "${!SWITCHES[@]}"; do
    ns=$SW_PREFIX$k
    ip netns add "$ns"
    ip netns exec "$ns" bash -euo pipefail -c '
      ip link set lo up
      echo 1 >/proc/sys/net/ipv4/ip_forward
      echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
      echo 0 >/proc/sys/net/ipv4/conf/default/rp_filter
      echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || true
      echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null || true'
  done
  # Switch-to-switch links: the peer address of link i seen from each end.
  declare -A peer_addr=() peer_dev=()
  for i in "${!LINKS[@]}"; do
    read -r a b r <<<"${LINKS[$i]}"
    ka=$(sw_index "$a") kb=$(sw_index "$b")
    local da=mpicast-xl${i}a db=mpicast-xl${i}b x=$((4 * i))
    ip netns exec "$SW_PREFIX$ka" ip link add "$da" type veth peer name "$db" netns "$SW_PREFIX$kb"
    ip netns exec "$SW_PREFIX$ka" ip addr add "$LINK_NET.$((x + 1))/30" dev "$da"
    ip netns exec "$SW_PREFIX$kb" ip addr add "$LINK_NET.$((x + 2))/30" dev "$db"
    ip netns exec "$SW_PREFIX$ka" ip link set "$da" up
    ip netns exec "$SW_PREFIX$kb" ip link set "$db" up
    ip netns exec "$SW_PREFIX$ka" sysctl -qw "net.ipv4.conf.$da.rp_filter=0"
    ip netns exec "$SW_PREFIX$kb" sysctl -qw "net.ipv4.conf.$db.rp_filter=0"
    shape "$SW_PREFIX$ka" "$da" "$r"
    shape "$SW_PREFIX$kb" "$db" "$r"
    peer_addr[$a,$b]=$LINK_NET.$((x + 2)) peer_dev[$a,$b]=$da
    peer_addr[$b,$a]=$LINK_NET.$((x + 1)) peer_dev[$b,$a]=$db
  done
  # The management bridge.
  ip link add "$MGMT_BRIDGE" type bridge stp_state 0 forward_delay 0
  [ -w "/proc/sys/net/ipv6/conf/$MGMT_BRIDGE/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/$MGMT_BRIDGE/disable_ipv6"
  ip addr add "$MGMT_ADDR/24" dev "$MGMT_BRIDGE"
  ip link set "$MGMT_BRIDGE" up
  # Hosts.
  declare -A per_switch=()
  local j=0 line name sw hr m hns sdev haddr saddr
  : >"$HOSTS_FILE.tmp"
  for line in "${HOSTS[@]}"; do
    j=$((j + 1))
    read -r name sw hr <<<"$line"
    k=$(sw_index "$sw")
    m=${per_switch[$k]:-0}
    per_switch[$k]=$((m + 1))
    [ "$m" -lt 63 ] || die "switch $sw: more than 63 hosts"
    [ -n "$hr" ] || hr=$host_rate
    hns=$HOST_PREFIX$j sdev=mpicast-xp$j
    saddr=$DATA_NET.$k.$((4 * m + 1)) haddr=$DATA_NET.$k.$((4 * m + 2))
    ip netns add "$hns"
    ip netns exec "$hns" bash -c 'ip link set lo up
      echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null
      echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null; true'
    ip netns exec "$SW_PREFIX$k" ip link add "$sdev" type veth peer name "$DATA_IF" netns "$hns"
    ip netns exec "$SW_PREFIX$k" ip addr add "$saddr/30" dev "$sdev"
    ip netns exec "$SW_PREFIX$k" ip link set "$sdev" up
    ip netns exec "$SW_PREFIX$k" sysctl -qw "net.ipv4.conf.$sdev.rp_filter=0"
    ip netns exec "$hns" ip addr add "$haddr/30" dev "$DATA_IF"
    ip netns exec "$hns" ip link set "$DATA_IF" up
    ip netns exec "$hns" ip route add "$DATA_SUBNET" via "$saddr" dev "$DATA_IF"
    shape "$SW_PREFIX$k" "$sdev" "$hr"
    shape "$hns" "$DATA_IF" "$hr"
    ip link add "mpicast-xm$j" type veth peer name "$MGMT_IF" netns "$hns"
    [ -w "/proc/sys/net/ipv6/conf/mpicast-xm$j/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/mpicast-xm$j/disable_ipv6"
    ip link set "mpicast-xm$j" master "$MGMT_BRIDGE"
    ip link set "mpicast-xm$j" up
    ip netns exec "$hns" ip addr add "$MGMT_NET.$j/24" dev "$MGMT_IF"
    ip netns exec "$hns" ip link set "$MGMT_IF" up
    echo "$name $hns $haddr $MGMT_NET.$j $sw" >>"$HOSTS_FILE.tmp"
  done
  mv "$HOSTS_FILE.tmp" "$HOSTS_FILE"
  # Routes. `via SRC DST AT: HOP` lines: on the path SRC -> DST, AT forwards to HOP.
  local src dst at hop ks kd kat
  declare -A rule_done=()
  while read -r _ src dst at hop; do
    at=${at%:}
    ks=$(sw_index "$src") kd=$(sw_index "$dst") kat=$(sw_index "$at")
    if [ "$src" = "$at" ]; then
      ip netns exec "$SW_PREFIX$kat" ip route add "$DATA_NET.$kd.0/24" via "${peer_addr[$at,$hop]}" dev "${peer_dev[$at,$hop]}"
    else
      if [ -z "${rule_done[$kat,$ks]:-}" ]; then
        ip netns exec "$SW_PREFIX$kat" ip rule add from "$DATA_NET.$ks.0/24" lookup $((100 + ks)) priority 1000
        rule_done[$kat,$ks]=1
      fi
      ip netns exec "$SW_PREFIX$kat" ip route add "$DATA_NET.$kd.0/24" via "${peer_addr[$at,$hop]}" dev "${peer_dev[$at,$hop]}" table $((100 + ks))
    fi
  done < <(grep '^via ' "$ROUTES_FILE")
  printf 'NETFILE=%s\nSWITCHES=%s\nLINKS=%s\nHOSTS=%s\nHOST_RATE=%s\n' "$(readlink -f "$file")" "$ns_k" "$nl" "$nh" "$host_rate" >"$STATE"
  # Every host must reach every other over the data network before we say it is up.
  local h1 h
  h1=$(awk 'NR == 1 {print $2}' "$HOSTS_FILE")
  for h in $(awk 'NR > 1 {print $3}' "$HOSTS_FILE"); do
    ip netns exec "$h1" ping -c 1 -W 2 -q "$h" >/dev/null || die "$h1 cannot reach $h"
  done
  for h in $(awk '{print $4}' "$HOSTS_FILE"); do
    ping -c 1 -W 2 -q "$h" >/dev/null || die "the management bridge cannot reach $h"
  done
  trap - EXIT INT TERM
  log "up: $ns_k switches ($SW_PREFIX*), $nl links, $nh hosts ($HOST_PREFIX""1..$nh, data $DATA_SUBNET, management $MGMT_SUBNET on $MGMT_BRIDGE) from $file"
}

is_up() { [ -r "$STATE" ] && [ -r "$HOSTS_FILE" ] || die "the switched network is not up (switched.sh up NETFILE)"; }

ns_of() { # host or switch name (of the file), or a namespace -> namespace
  is_up
  local ns
  ns=$(awk -v n="$1" '$1 == n || $2 == n || $3 == n || $4 == n {print $2}' "$HOSTS_FILE")
  [ -n "$ns" ] && { echo "$ns"; return; }
  if [[ "$1" == "$SW_PREFIX"* ]]; then echo "$1"; return; fi
  local k=0 s
  for s in $(grep '^path ' "$ROUTES_FILE" | awk '{print $2}' | uniq); do
    [ "$s" = "$1" ] && { echo "$SW_PREFIX$k"; return; }
    k=$((k + 1))
  done
  die "no such host or switch: $1"
}

# The switch that owns ADDR (a link end or a host block's switch side), by its namespace.
addr_switch() {
  local ns
  for ns in $(our_namespaces | grep "^$SW_PREFIX"); do
    if ip netns exec "$ns" ip -o -4 addr show | awk '{print $4}' | grep -q "^$1/"; then
      echo "$ns"; return
    fi
  done
  echo "?"
}

# path HOST1 HOST2: the switches crossed, measured with ICMP echo requests of TTL 1, 2, ...:
# the switch that answers "time exceeded" for TTL t is the t-th on the way.
path() {
  is_up
  local a b dst ttl out from sws=() names=()
  a=$(ns_of "$1") b=$(ns_of "$2")
  dst=$(awk -v n="$b" '$2 == n {print $3}' "$HOSTS_FILE")
  for ttl in $(seq 1 16); do
    out=$(ip netns exec "$a" ping -n -c 1 -W 1 -t "$ttl" "$dst" 2>&1 || true)
    if grep -q "bytes from $dst" <<<"$out"; then break; fi
    from=$(sed -n 's/^From \([0-9.]*\).*Time to live exceeded.*/\1/p' <<<"$out" | head -1)
    [ -n "$from" ] || die "path: no answer at TTL $ttl: $out"
    sws+=("$(addr_switch "$from")")
  done
  # Namespace -> the file's switch name (the order of `path` lines is the file's).
  local order ns
  order=$(grep '^path ' "$ROUTES_FILE" | awk '{print $2}' | uniq)
  for ns in "${sws[@]}"; do names+=("$(sed -n "$((${ns#"$SW_PREFIX"} + 1))p" <<<"$order")"); done
  echo "${names[*]}"
}

status() {
  is_up
  cat "$STATE"
  echo "== hosts (name namespace data mgmt switch)"
  cat "$HOSTS_FILE"
  local ns
  for ns in $(our_namespaces | grep "^$SW_PREFIX"); do
    echo "== $ns"
    ip netns exec "$ns" ip -br -4 addr show | grep -v '^lo'
    ip netns exec "$ns" ip rule show | grep -v -E 'lookup (local|main|default)' || true
    ip netns exec "$ns" ip route show | grep -v 'proto kernel' || true
    ip netns exec "$ns" tc qdisc show | grep tbf || true
  done
}

counters() { # every switch interface: "namespace dev tx_bytes rx_bytes"
  local ns d
  for ns in $(our_namespaces | grep "^$SW_PREFIX"); do
    for d in $(ip netns exec "$ns" ls /sys/class/net | grep '^mpicast-x'); do
      printf '%s %s %s %s\n' "$ns" "$d" "$(ip netns exec "$ns" cat "/sys/class/net/$d/statistics/tx_bytes")" \
        "$(ip netns exec "$ns" cat "/sys/class/net/$d/statistics/rx_bytes")"
    done
  done
}

# run [--mpi openmpi|mpich] [--ppn K] [--hosts M] [--timeout S]
#     [--out FILE [--done-marker TEXT] [--grace S]] [--] PROG ARGS...
# As cluster.sh's run (LD_PRELOAD, MPICAST_* and MPIR_CVAR_* go to every rank; --done-marker:
# a job that printed a line starting with TEXT and has not exited --grace seconds later is
# ended and counts as done); the ranks on the first M hosts of the file, K each.
launcher_cmd() { # MPI PPN HOSTS HOSTFILE -> LAUNCH array
  local mpi=$1 ppn=$2 hosts=$3 hf=$4
  case $mpi in openmpi|mpich) ;; *) die "--mpi openmpi or mpich" ;; esac
  awk -v n="$hosts" 'NR <= n {print $4}' "$HOSTS_FILE" | jobrun_hostfile "$mpi" "$ppn" >"$hf"
  jobrun_launcher "$mpi" "$ppn" $((hosts * ppn)) "$hf" "$HERE/switched-agent.sh" \
    "$MGMT_SUBNET" "$DATA_SUBNET" "$MGMT_SUBNET" "$MGMT_BRIDGE" "$DATA_IF"
}

run() {
  is_up
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
  local n
  n=$(wc -l <"$HOSTS_FILE")
  [ -n "$hosts" ] || hosts=$n
  [ "$hosts" -le "$n" ] || die "run: $hosts hosts wanted, $n up"
  export MPICAST_IFACE=${MPICAST_IFACE:-$DATA_SUBNET}
  local hf rc=0
  hf=$(mktemp /tmp/mpicast-xhosts.XXXXXX)
  LAUNCH=()
  launcher_cmd "$mpi" "$ppn" "$hosts" "$hf"
  jobrun_job switched.sh "$tmo" "$out" "$marker" "$grace" "reap; rm -f $hf" -- \
    "${LAUNCH[@]}" "$@" || rc=$?
  rm -f "$hf"
  reap # what a job left in our namespaces
  return $rc
}

mpi_env() {
  is_up
  local mpi=openmpi ppn=1 hosts=""
  while [ $# -gt 0 ]; do
    case $1 in
      --mpi) mpi=$2; shift 2 ;;
      --ppn) ppn=$2; shift 2 ;;
      --hosts) hosts=$2; shift 2 ;;
      *) break ;;
    esac
  done
  [ $# = 1 ] || die "usage: switched.sh mpi-env [--mpi M] [--ppn K] [--hosts M] HOSTFILE"
  local n
  n=$(wc -l <"$HOSTS_FILE")
  [ -n "$hosts" ] || hosts=$n
  LAUNCH=()
  launcher_cmd "$mpi" "$ppn" "$hosts" "$1"
  echo "# hostfile $1:"
  sed 's/^/#   /' "$1"
  echo "MPICAST_IFACE=${MPICAST_IFACE:-$DATA_SUBNET}"
  printf '%q ' "${LAUNCH[@]}"
  echo
}

cmd=${1:-}
[ -n "$cmd" ] || { sed -n '2,20p' "$0"; exit 2; }
shift
case $cmd in
  up) up "$@" ;;
  down) down ;;
  check) check ;;
  status) status ;;
  hosts) is_up; cat "$HOSTS_FILE" ;;
  counters) counters ;;
  exec) need_root; [ $# -ge 2 ] || die "usage: switched.sh exec HOST|SWITCH CMD..."; ns=$(ns_of "$1"); shift; exec ip netns exec "$ns" "$@" ;;
  path) [ $# = 2 ] || die "usage: switched.sh path HOST1 HOST2"; path "$1" "$2" ;;
  run) run "$@" ;;
  mpi-env) mpi_env "$@" ;;
  reap) need_root; reap ;;
  selftest) exec "$HERE/switched_selftest.sh" "$@" ;;
  *) die "unknown command '$cmd' (up, down, check, status, hosts, counters, exec, path, run, mpi-env, reap, selftest)" ;;
esac
