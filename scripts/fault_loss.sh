#!/usr/bin/env bash
# Datagram loss on loopback with nftables (needs root and nft; skipped
# otherwise). The rules live in their own table, inet mpicast_test, and the
# EXIT trap deletes it whatever happens.
#  1. 5% of the multicast datagrams dropped: 1000 broadcasts of mixed sizes
#     must complete with correct data, and the counters must show drops.
#  2. Every multicast datagram dropped: the job must either complete through
#     the fallback (stats fallbacks > 0, data checked by the program) or abort
#     with a message naming the missing ranks, within a bound.
# Drops are on the input hook: a looped-back multicast datagram passes the
# output and the input hooks once each, and dropping on output would make
# sendto() fail with EPERM instead of simulating a lost datagram.
source "$(dirname "$0")/test-lib.sh"

TABLE="inet mpicast_test"
GROUP_NET=239.255.0.0/16
NP=4

[ "$(id -u)" = 0 ] || skip "fault injection needs root (nftables); run as root to cover it"
command -v nft >/dev/null || skip "nft not installed (make deps installs nftables)"
nft list tables >/dev/null 2>&1 || skip "nft cannot list tables here (no CAP_NET_ADMIN?)"

cleanup() { nft delete table $TABLE 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup # a leftover of an earlier, killed run

# rules PERCENT: drop PERCENT% of UDP to the multicast range arriving on lo.
rules() {
  cleanup
  nft -f - <<NFT
table $TABLE {
  counter seen {}
  counter dropped {}
  chain input {
    type filter hook input priority -10; policy accept;
    iifname "lo" ip daddr $GROUP_NET meta l4proto udp counter name "seen"
    iifname "lo" ip daddr $GROUP_NET meta l4proto udp numgen random mod 100 < $1 counter name "dropped" drop
  }
}
NFT
}
packets() { nft list counter $TABLE "$1" | sed -n 's/.*packets \([0-9]*\).*/\1/p'; }

# Keep the library inside the range the rules cover.
export MPICAST_GROUP=$GROUP_NET MPICAST_STATS=1
launch "$NP" preload

# ---- 1: 5% loss
rules 5
out=$TC_WORK/loss5.out
note "5% loss: 1000 broadcasts of mixed sizes"
rc=0
TC_EXPECT=mcast timeout -k 10 200 "${LAUNCH[@]}" "$TC_BINDIR/int_stress" \
  --count 1000 --seed 5 --max-size 524288 >"$out" 2>&1 || rc=$?
cat "$out"
seen=$(packets seen)
dropped=$(packets dropped)
note "multicast datagrams seen on lo input: $seen, dropped: $dropped"
[ "$rc" = 0 ] || fail "the job under 5% loss failed (exit $rc)"
[ "$seen" -gt 0 ] || fail "no datagram to $GROUP_NET crossed the rule: is the library using another group?"
[ "$dropped" -gt 0 ] || fail "the rule dropped nothing, so loss was not exercised"
line=$(stats_line "$out")
[ -n "$line" ] || fail "no stats line"
repairs=$(stat_field "$line" repairs)
fallbacks=$(stat_field "$line" fallbacks)
note "repairs=$repairs fallbacks=$fallbacks"
[ $((repairs + fallbacks)) -gt 0 ] || fail "$dropped datagrams were dropped yet neither repairs nor fallbacks were counted"

# ---- 2: 100% loss
rules 100
out=$TC_WORK/loss100.out
note "100% loss: must fall back or abort naming the missing ranks, within 60 s"
rc=0
start=$SECONDS
MPICAST_PROBE_MS=300 MPICAST_TIMEOUT_MS=3000 timeout -k 10 60 "${LAUNCH[@]}" \
  "$TC_BINDIR/int_stress" --count 20 --seed 100 --max-size 65536 >"$out" 2>&1 || rc=$?
cat "$out"
note "exit $rc after $((SECONDS - start)) s; dropped $(packets dropped) datagrams"
[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "the job hung under total loss (killed by timeout)"
if [ "$rc" = 0 ]; then
  line=$(stats_line "$out")
  [ -n "$line" ] || fail "no stats line"
  fallbacks=$(stat_field "$line" fallbacks)
  [ "$fallbacks" -gt 0 ] || fail "completed under total loss, but fallbacks=0: $line"
  note "completed through the fallback (fallbacks=$fallbacks)"
else
  # One line must say both that ranks are missing and which.
  grep -Eiq '(missing|unreachable|no answer).*rank[s]?[^0-9]{0,16}[0-9]|rank[s]?[^0-9]{0,16}[0-9].*(missing|unreachable|no answer)' "$out" \
    || fail "aborted (exit $rc) without a message naming the missing ranks"
  note "aborted with a message naming the missing ranks"
fi
echo "fault_loss: ok"
