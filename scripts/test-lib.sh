# Sourced by the ctest-driven scripts of this directory. Everything comes
# from the environment that c-tests/CMakeLists.txt sets:
#   TC_FLAVOUR  openmpi | mpich
#   TC_MPIEXEC  the launcher (mpirun.openmpi, mpiexec.mpich)
#   TC_LIB      libmpicast.so.<version> of that flavour
#   TC_BINDIR   where the test programs were built
#   TC_BUILD    build/<flavour> (lib/, include/)
#   TC_WORK     a scratch directory of this test (emptied here)
# plus MPICAST_IFACE=lo MPICAST_TTL=0 ..., which the ranks inherit.
set -euo pipefail

: "${TC_FLAVOUR:?} ${TC_MPIEXEC:?} ${TC_LIB:?} ${TC_BINDIR:?}"
: "${TC_BUILD:?} ${TC_WORK:?}"
case "${MPICAST_IFACE:-}:${MPICAST_TTL:-}" in
  lo:0) ;;
  *) echo "refusing to run: MPICAST_IFACE=lo and MPICAST_TTL=0 are required" >&2; exit 1 ;;
esac

T_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$TC_WORK"
mkdir -p "$TC_WORK"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

# The fault scripts' nftables (root and nft, or the test is skipped).
need_nft() {
  [ "$(id -u)" = 0 ] || skip "fault injection needs root (nftables); run as root to cover it"
  command -v nft >/dev/null || skip "nft not installed (make deps installs nftables)"
  nft list tables >/dev/null 2>&1 || skip "nft cannot list tables here (no CAP_NET_ADMIN?)"
}
# nft_lo_rules TABLE BASE DROP: (re)creates TABLE with, on lo's input, a counter "seen" of the
# packets that match BASE and a rule that drops (and counts as "dropped") those that match
# BASE and DROP too. The caller deletes TABLE on exit (nft_clear).
nft_lo_rules() {
  nft_clear "$1"
  nft -f - <<NFT
table $1 {
  counter seen {}
  counter dropped {}
  chain input {
    type filter hook input priority -10; policy accept;
    iifname "lo" $2 counter name "seen"
    iifname "lo" $2 $3 counter name "dropped" drop
  }
}
NFT
}
nft_clear() { nft delete table $1 2>/dev/null || true; }
# nft_count TABLE NAME: the packets counter NAME of TABLE has counted (empty if none).
nft_count() { nft list counter $1 "$2" 2>/dev/null | sed -n 's/.*packets \([0-9]*\).*/\1/p' || true; }

# launch NP [preload|linked] -> the launcher words in the LAUNCH array.
launch() {
  local np=$1 mode=${2:-preload}
  LAUNCH=("$TC_MPIEXEC")
  if [ "$TC_FLAVOUR" = openmpi ]; then
    LAUNCH+=(--oversubscribe --bind-to none -n "$np")
    [ "$mode" = preload ] && LAUNCH+=(-x "LD_PRELOAD=$TC_LIB")
  else
    LAUNCH+=(-n "$np")
    [ "$mode" = preload ] && LAUNCH+=(-genv LD_PRELOAD "$TC_LIB")
  fi
  return 0
}

# The "mpicast: stats: ..." line of a job's output file (the last one).
# wait_ready FILE: until the job's output FILE has the program's " ready: " line (its
# communicators are set up: a fault may come), at most 60 s.
wait_ready() {
  for _ in $(seq 600); do
    grep -q ' ready: ' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
}

stats_line() { grep -E '^mpicast: stats: ' "$1" | tail -n 1 || true; }

# stat_field LINE KEY -> the number after KEY= (empty when absent).
stat_field() { sed -n "s/.*[ :]$2=\([0-9][0-9]*\).*/\1/p" <<<"$1"; }

# The stats line must name every counter, in this order, as numbers (then, when nothing went by
# multicast, "; nothing went by multicast: " and why).
STATS_RE='^mpicast: stats: rank=0 bcast_mcast=[0-9]+ bcast_pmpi=[0-9]+ barrier_mcast=[0-9]+ barrier_pmpi=[0-9]+ bytes_mcast=[0-9]+ dgrams_sent=[0-9]+ dgrams_recv=[0-9]+ repairs=[0-9]+ rejected=[0-9]+ fallbacks=[0-9]+ imcast=[0-9]+ dbcast=[0-9]+ mmcast=[0-9]+ unicast=[0-9]+ heal_host=[0-9]+ heal_step=[0-9]+ heal_return=[0-9]+ fanout_held=[0-9]+ fanout_groups=[0-9]+ fanout_bcast_bytes=[0-9]+ fanout_p2p_bytes=[0-9]+(; nothing went by multicast: .*)?$'

# Udp InDatagrams of this network namespace (counts datagrams read by sockets).
udp_in_datagrams() {
  awk '$1 == "Udp:" { if (!hdr) { for (i = 2; i <= NF; i++) if ($i == "InDatagrams") col = i; hdr = 1 }
                      else { print $col; exit } }' /proc/net/snmp
}
