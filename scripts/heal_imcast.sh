#!/usr/bin/env bash
# IP multicast of MPICAST_Imcast that breaks in the middle of a job, on loopback (needs root
# and nft, skipped otherwise). int_heal_imcast runs MPICAST_Imcast (MPICAST_IMCAST_TRANSPORT=ip)
# and MPICAST_Dbcast of 1 B .. 256 KiB from every root to 2 or 3 of the other 3 ranks, every
# byte checked, for a bounded time; after the engines are set up, an nft rule on lo's input
# drops multicast datagrams:
#   big      longer than 1500 bytes (IP), from 2 s on: the destinations are served the rest
#            by unicast (unicast), and the roots move their long multicasts to point-to-point
#            (heal_host), with one message per root naming the hosts
#   all      all of them, from 2 s on: the same for every length; the trials by IP fail, so no
#            return (heal_return=0)
#   loss30   30 % of them, from 2 s on: every operation completes (repairs)
#   restore  all of them from 2 s to 5 s: point-to-point, then back to IP (heal_return)
# Every case must end with exit 0 and "all correct". Time to heal (from the rule to the first
# root's message that it moved) is printed for big, all and restore, and must be well under
# MPICAST_TIMEOUT_MS. The counters are rank 0's (MPICAST_STATS=1), which roots a quarter of
# the multicasts. The rules live in their own table, inet mpicast_healim, which the EXIT
# trap deletes whatever happens; every job is bounded by timeout.
#   HEAL_CASES="all restore" limits the cases.
source "$(dirname "$0")/test-lib.sh"

TABLE="inet mpicast_healim"
# A range and ports of this test's own (heal.sh has 239.254.40.0/24 and 24400-24499), so
# that the rules touch no other job's multicast on this machine.
GROUP_NET=239.254.41.0/24
PORTS=24500-24599

need_nft

cleanup() { nft_clear "$TABLE"; }
bg=""
on_exit() {
  [ -z "$bg" ] || kill "$bg" 2>/dev/null || true
  cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
cleanup

# rule MATCH: drop multicast UDP on lo's input that matches MATCH too.
rule() { nft_lo_rules "$TABLE" "ip daddr $GROUP_NET udp dport $PORTS" "$1"; }
dropped() { nft_count "$TABLE" dropped; }

export MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS MPICAST_STATS=1 MPICAST_TIMEOUT_MS=10000 \
  MPICAST_IMCAST_TRANSPORT=ip
launch 4 preload

# run NAME MATCH ON_AT OFF_AT SECONDS: the job, with the rule on from ON_AT s to OFF_AT s
# after the program said it is ready (OFF_AT "-": to the end); every output line stamped
# with the wall clock.
run() {
  local name=$1 match=$2 on=$3 off=$4 secs=$5
  out=$TC_WORK/$name.out
  cleanup
  (
    for _ in $(seq 600); do
      grep -q ' ready: ' "$out" 2>/dev/null && break
      sleep 0.1
    done
    sleep "$on"
    rule "$match"
    echo "$EPOCHREALTIME" >"$TC_WORK/$name.on"
    if [ "$off" != - ]; then
      sleep $((off - on))
      echo "$EPOCHREALTIME dropped $(dropped)" >"$TC_WORK/$name.off"
      cleanup
    fi
  ) &
  bg=$!
  set +e
  timeout -k 10 $((secs + 60)) "${LAUNCH[@]}" "$TC_BINDIR/int_heal_imcast" --seconds "$secs" --seed 41 2>&1 \
    | while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$out"
  rc=${PIPESTATUS[0]}
  set -e
  wait "$bg" 2>/dev/null || true
  bg=""
  n=$(dropped)
  [ -f "$TC_WORK/$name.off" ] && n=$(cut -d' ' -f3 "$TC_WORK/$name.off")
  cleanup
  cat "$out"
  [ "$rc" = 0 ] || fail "$name: the job failed (exit $rc)"
  grep -q ' done: .* all correct' "$out" || fail "$name: no 'all correct'"
  [ "${n:-0}" -gt 0 ] || fail "$name: the rule dropped nothing"
  line=$(grep -E '^[0-9.]+ mpicast: stats: ' "$out" | tail -n 1 | cut -d' ' -f2- || true)
  [ -n "$line" ] || fail "$name: no stats line"
  [ "$(stat_field "$line" imcast)" -gt 0 ] || fail "$name: no MPICAST_Imcast counted: $line"
  note "$name: $n datagrams dropped; $line"
}

MOVED='MPICAST_Imcast stopped reaching'

# heal_time NAME [last]: ms from the rule to the first (or the last) root's message that it
# moved: its next multicast of that size goes point-to-point.
heal_time() {
  local on at
  on=$(cat "$TC_WORK/$1.on")
  if [ "${2:-}" = last ]; then
    at=$(grep -E "$MOVED" "$TC_WORK/$1.out" | tail -n 1 | cut -d' ' -f1)
  else
    at=$(grep -m1 -E "$MOVED" "$TC_WORK/$1.out" | cut -d' ' -f1)
  fi
  [ -n "$at" ] || { echo ""; return; }
  awk -v a="$at" -v b="$on" 'BEGIN { printf "%d", (a - b) * 1000 }'
}

check_heal() { # NAME
  local first last n
  first=$(heal_time "$1")
  last=$(heal_time "$1" last)
  [ -n "$first" ] || fail "$1: no message that a root moved"
  [ "$first" -lt 5000 ] || fail "$1: healing took $first ms (MPICAST_TIMEOUT_MS=$MPICAST_TIMEOUT_MS)"
  n=$(grep -c -E "$MOVED" "$out" || true)
  [ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "$1: $n messages that a root moved, not one per root at most"
  grep -q -E "$MOVED .*rank" "$out" || fail "$1: the message names no rank"
  note "$1: time to heal $first ms (rule on -> the first root's message), $last ms to the last of $n roots"
  echo "heal_imcast: $TC_FLAVOUR $1 time_to_heal_ms=$first last_root_ms=$last roots=$n"
}

cases=${HEAL_CASES:-big all loss30 restore}
for c in $cases; do
  case $c in
    big)
      run big "meta length > 1500" 2 - 8
      [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "big: no unicast repair: $line"
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "big: rank 0 did not move: $line"
      check_heal big
      ;;
    all)
      run all "" 2 - 8
      [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "all: no unicast repair: $line"
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "all: rank 0 did not move: $line"
      [ "$(stat_field "$line" heal_return)" = 0 ] || fail "all: a return while multicast is dropped: $line"
      check_heal all
      ;;
    loss30)
      run loss30 "numgen random mod 100 < 30" 2 - 6
      [ "$(stat_field "$line" repairs)" -gt 0 ] || fail "loss30: no repairs: $line"
      ;;
    restore)
      run restore "" 2 5 12
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "restore: rank 0 did not move: $line"
      [ "$(stat_field "$line" heal_return)" -ge 1 ] || fail "restore: no return to IP multicast: $line"
      grep -q 'MPICAST_Imcast again: back to IP multicast' "$out" || fail "restore: no message of the return"
      check_heal restore
      off=$(cut -d' ' -f1 "$TC_WORK/restore.off")
      back=$(grep -m1 'MPICAST_Imcast again' "$out" | cut -d' ' -f1)
      note "restore: back to IP multicast $(awk -v a="$back" -v b="$off" 'BEGIN { printf "%d", (a - b) * 1000 }') ms after the rule went"
      ;;
    *) fail "unknown case $c" ;;
  esac
done
echo "heal_imcast: ok"
