#!/usr/bin/env bash
# A path-MTU black hole on loopback (needs root and nft, skipped
# otherwise): an nft rule drops multicast datagrams longer than an MTU, as a switch with a
# smaller MTU than the hosts does, from the start of the job. The setup probe must find the
# largest size that passes and use it, saying so once, with no fallback and every byte right.
#   1500   IP packets over 1500 bytes dropped: datagrams of 1472 bytes pass, fragments of 1408
#   150    only packets of 150 bytes or less pass: the small probe does, no datagram that
#          carries data does: the communicator uses the host MPI, with a message
# Under each rule `mpicast doctor -n 3` must agree: small datagrams pass, full-size ones do not
# (its path-mtu problem), and it says that the library steps down by itself.
# The rules live in their own table, inet mpicast_pmtu, which the EXIT trap deletes.
source "$(dirname "$0")/test-lib.sh"

TABLE="inet mpicast_pmtu"
GROUP_NET=239.255.0.0/16

need_nft

cleanup() { nft_clear "$TABLE"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup

# rules LEN: drop multicast UDP packets on lo longer than LEN bytes (IP length).
rules() { nft_lo_rules "$TABLE" "ip daddr $GROUP_NET meta l4proto udp" "meta length > $1"; }
dropped() { nft_count "$TABLE" dropped; }

# doctor NAME: `mpicast doctor -n 3` under the rule in force; it must find the path-MTU
# black hole that the library stepped around.
doctor() {
  local cli=$TC_BUILD/bin/mpicast out=$TC_WORK/doctor$1.out rc=0
  [ -x "$cli" ] || fail "$1: no $cli (make lib builds it)"
  timeout -k 10 150 "$cli" doctor -n 3 --mpi "$TC_FLAVOUR" >"$out" 2>&1 || rc=$?
  cat "$out"
  [ "$rc" = 1 ] || fail "$1: the doctor found no problem (exit $rc)"
  grep -q "^problem: datagrams of [0-9]* bytes (the largest the job's MTUs allow) do not get through where small ones do" "$out" \
    || fail "$1: the doctor did not name the path-MTU black hole"
  grep -q 'also tries datagrams of 8972, 1472 and 548 bytes' "$out" \
    || fail "$1: the doctor did not say that the library steps down by itself"
  note "$1: the doctor agrees (small datagrams pass, full-size ones do not)"
}

export MPICAST_GROUP=$GROUP_NET MPICAST_STATS=1 MPICAST_TIMEOUT_MS=5000 MPICAST_PROBE_MS=300
launch 4 preload

# ---- 1500
rules 1500
out=$TC_WORK/mtu1500.out
rc=0
TC_EXPECT=mcast timeout -k 10 120 "${LAUNCH[@]}" "$TC_BINDIR/int_stress" \
  --count 300 --seed 15 --max-size 300000 >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" = 0 ] || fail "1500: the job failed (exit $rc)"
[ "$(dropped)" -gt 0 ] || fail "1500: the rule dropped nothing: the large probe was not sent"
grep -q 'multicast datagrams of [0-9]* bytes do not reach every rank (missing at .*ranks 1-3), those of 1472 bytes do' "$out" \
  || fail "1500: no message saying which size passes"
grep -q 'It uses 1408 data bytes per datagram' "$out" || fail "1500: not 1408 data bytes per datagram"
n=$(grep -c 'do not reach every rank' "$out" || true)
[ "$n" = 1 ] || fail "1500: the message was printed $n times, not once"
line=$(stats_line "$out")
[ "$(stat_field "$line" fallbacks)" = 0 ] || fail "1500: a fallback to the host MPI: $line"
[ "$(stat_field "$line" bcast_mcast)" -gt 0 ] || fail "1500: nothing went by multicast: $line"
note "1500: smaller datagrams chosen, $(dropped) large ones dropped (probes), every byte right"
doctor 1500

# ---- 150
rules 150
out=$TC_WORK/mtu150.out
rc=0
timeout -k 10 120 "${LAUNCH[@]}" "$TC_BINDIR/int_stress" \
  --count 30 --seed 16 --max-size 65536 >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" = 0 ] || fail "150: the job failed (exit $rc)"
grep -q 'large enough to carry data (128 bytes) do not reach every rank' "$out" \
  || fail "150: no message saying that no datagram carrying data passes"
line=$(stats_line "$out")
[ "$(stat_field "$line" fallbacks)" -gt 0 ] || fail "150: no fallback to the host MPI: $line"
note "150: the host MPI, with a message"
doctor 150
echo "pmtu: ok"
