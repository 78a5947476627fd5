#!/usr/bin/env bash
# UDP blocked while the host MPI works (needs root, nft and network namespaces; skipped
# otherwise). The job runs in a network namespace of this test's own (mpicast_heal2, with
# only its loopback up), where an nft rule (table inet mpicast_heal2, in that namespace) drops
# every UDP datagram on lo: multicast, and the unicast of the responders that repair eager
# broadcasts and answer barrier queries. The host MPIs on one host carry nothing by UDP.
# int_heal runs broadcasts (1 B .. 1 MiB, every root; with MPICAST_MIN_BYTES=0 the small ones
# are eager: their root returns at once) and barriers, every byte checked, its stop agreed by
# a broadcast (--agree-bcast 1: every MPI call of the program is one of mpicast's):
#   eager   all UDP dropped from 2 s after the first 100 operations: the receivers of an eager
#           broadcast ask its root by the host MPI too, the root serves them by unicast when
#           it comes back (Channel::settle); barrier waiters ask rank 0 for their release by
#           the host MPI; the communicator then moves to the host MPI (heal_host) with one
#           message, within a second or so
#   allreduce  as eager, but every broadcast is followed by an MPI_Allreduce on the same
#           communicator (no forwarder covers it, so it stays the host's blocking call): the
#           root of an eager broadcast goes from it straight into the host's collective, and
#           settles what that broadcast owes first (host::progress::collective), so that the
#           receivers' NACKs by the host MPI are served; the communicator moves as in eager
#   start   all UDP dropped before the job starts: the setup probe finds no multicast, the
#           communicator uses the host MPI from the start, with one message
# Every case must end with exit 0 and "all correct". The namespace (and with it the table) is
# deleted by the EXIT trap whatever happens; every job is bounded by timeout.
#   HEAL_CASES="eager" limits the cases.
source "$(dirname "$0")/test-lib.sh"

need_nft
command -v ip >/dev/null || skip "ip (iproute2) not installed"
NS=mpicast_heal2
TABLE="inet mpicast_heal2"
export MPICAST_GROUP=239.254.42.0/24 MPICAST_PORT=24600-24699 MPICAST_STATS=1 \
  MPICAST_TIMEOUT_MS=10000 MPICAST_MIN_BYTES=0

bg=""
cleanup() {
  [ -z "$bg" ] || kill "$bg" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup
ip netns add "$NS" 2>/dev/null || skip "cannot make a network namespace here"
ip -n "$NS" link set lo up

drop_udp() {
  ip netns exec "$NS" nft -f - <<NFT
table $TABLE {
  counter dropped {}
  chain input {
    type filter hook input priority -10; policy accept;
    iifname "lo" meta l4proto udp counter name "dropped" drop
  }
}
NFT
  echo "$EPOCHREALTIME" >"$TC_WORK/$1.on"
}
dropped() { ip netns exec "$NS" nft list counter $TABLE dropped 2>/dev/null | sed -n 's/.*packets \([0-9]*\).*/\1/p'; }

launch 4 preload

# run NAME ON SECONDS [ARGS...]: int_heal (with ARGS) in the namespace; the rule from ON s after
# "ready" ("-": before the job). Sets out and line (rank 0's stats line).
run() {
  local name=$1 on=$2 secs=$3
  shift 3
  out=$TC_WORK/$name.out
  : >"$out"
  ip netns exec "$NS" nft delete table $TABLE 2>/dev/null || true
  if [ "$on" = - ]; then
    drop_udp "$name"
  else
    (
      wait_ready "$out"
      sleep "$on"
      drop_udp "$name"
    ) &
    bg=$!
  fi
  set +e
  timeout -k 10 $((secs + 60)) ip netns exec "$NS" "${LAUNCH[@]}" "$TC_BINDIR/int_heal" \
    --seconds "$secs" --seed 40 --agree-bcast 1 "$@" 2>&1 \
    | while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$out"
  rc=${PIPESTATUS[0]}
  set -e
  [ -z "$bg" ] || wait "$bg" 2>/dev/null || true
  bg=""
  n=$(dropped)
  cat "$out"
  [ "$rc" = 0 ] || fail "$name: the job failed (exit $rc)"
  grep -q ' done: .* all correct' "$out" || fail "$name: no 'all correct'"
  [ "${n:-0}" -gt 0 ] || fail "$name: the rule dropped nothing"
  line=$(grep -E '^[0-9.]+ mpicast: stats: ' "$out" | tail -n 1 | cut -d' ' -f2- || true)
  [ -n "$line" ] || fail "$name: no stats line"
  note "$name: $n datagrams dropped; $line"
}

cases=${HEAL_CASES:-eager allreduce start}

# moved NAME [ARG...]: UDP dropped 2 s into an 8 s job: the communicator must move to the
# host MPI, say so once, and within 5 s of the rule.
moved() {
  local name=$1 n at ms
  shift
  run "$name" 2 8 "$@"
  [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "$name: the communicator did not move to the host MPI: $line"
  n=$(grep -c 'multicast stopped reaching' "$out" || true)
  [ "$n" = 1 ] || fail "$name: $n messages that the communicator moved, not one"
  at=$(grep -m1 'multicast stopped reaching' "$out" | cut -d' ' -f1)
  ms=$(awk -v a="$at" -v b="$(cat "$TC_WORK/$name.on")" 'BEGIN { printf "%d", (a - b) * 1000 }')
  [ "$ms" -lt 5000 ] || fail "$name: healing took $ms ms"
  note "$name: time to heal $ms ms (rule on -> the message that the communicator moved)"
  echo "heal_udp: $TC_FLAVOUR $name time_to_heal_ms=$ms"
}

for c in $cases; do
  case $c in
    eager) moved eager ;;
    allreduce) moved allreduce --allreduce 1 ;;
    start)
      run start - 4
      grep -q 'mpicast: .*host MPI' "$out" || fail "start: no message that the host MPI carries the collectives"
      [ "$(stat_field "$line" bcast_pmpi)" -gt 0 ] || fail "start: no broadcast went by the host MPI: $line"
      ;;
    *) fail "unknown case $c" ;;
  esac
done
echo "heal_udp: ok"
