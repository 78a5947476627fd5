#!/usr/bin/env bash
# The multicast actions of GOAL runs when IP multicast breaks in the middle of a job, on
# loopback (needs root and nft, skipped otherwise). int_heal_goal runs GOAL programs of two
# multicasts (1 B .. 256 KiB, from two roots drawn per run, with a chain of point-to-point
# between receivers every 4th run), every byte checked, for a bounded time; after the first
# 100 runs, an nft rule on lo's input drops multicast datagrams:
#   big      longer than 1500 bytes (IP), from 2 s on: the receivers are served the rest by
#            unicast (unicast), and the roots move their long multicasts to point-to-point
#            (heal_host), with one message per job naming the hosts
#   all      all of them, from 2 s on: the same for every length; the trials by IP fail, so no
#            return (heal_return=0)
#   loss30   30 % of them, from 2 s on: every run completes (repairs)
#   restore  all of them from 2 s to 5 s: point-to-point, then back to IP (heal_return)
# Every case must end with exit 0 and "all correct". Time to heal (from the rule to the first
# root's message that it moved) is printed for big, all and restore, and must be well under
# MPICAST_TIMEOUT_MS. The counters are rank 0's (MPICAST_STATS=1). The rules live in their own
# table, inet mpicast_heal2, which the EXIT trap deletes whatever happens; every job is
# bounded by timeout.
#   HEAL_CASES="all restore" limits the cases.
source "$(dirname "$0")/test-lib.sh"

TABLE="inet mpicast_heal2"
# A range and ports of this test's own (heal.sh has 239.254.40.0/24 and 24400-24499,
# heal_imcast.sh 239.254.41.0/24 and 24500-24599).
GROUP_NET=239.254.42.0/24
PORTS=24600-24699

HEAL_PROG=int_heal_goal HEAL_SEED=42
source "$(dirname "$0")/heal-lib.sh"

export MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS MPICAST_STATS=1 MPICAST_TIMEOUT_MS=10000

MOVED='GOAL runs stopped reaching'

# heal_time NAME: ms from the rule to the first message that a root moved: its next multicast
# of that size goes point-to-point.
heal_time() {
  local at
  at=$(grep -m1 -E "$MOVED" "$TC_WORK/$1.out" | cut -d' ' -f1)
  [ -n "$at" ] || { echo ""; return; }
  since "$1" "$at"
}

check_heal() { # NAME
  local first n
  first=$(heal_time "$1")
  [ -n "$first" ] || fail "$1: no message that a root moved"
  [ "$first" -lt 5000 ] || fail "$1: healing took $first ms (MPICAST_TIMEOUT_MS=$MPICAST_TIMEOUT_MS)"
  n=$(grep -c -E "$MOVED" "$out" || true)
  # Once per job (presence::say_first); two roots that move at the same moment may both say it.
  [ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "$1: $n messages that a root moved, not one per job"
  grep -q -E "$MOVED .*rank" "$out" || fail "$1: the message names no rank"
  note "$1: time to heal $first ms (rule on -> the first root's message; $n message(s))"
  echo "heal_goal: $TC_FLAVOUR $1 time_to_heal_ms=$first messages=$n"
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
      grep -q 'GOAL runs again: back to IP multicast' "$out" || fail "restore: no message of the return"
      check_heal restore
      off=$(cut -d' ' -f1 "$TC_WORK/restore.off")
      back=$(grep -m1 'GOAL runs again' "$out" | cut -d' ' -f1)
      note "restore: back to IP multicast $(awk -v a="$back" -v b="$off" 'BEGIN { printf "%d", (a - b) * 1000 }') ms after the rule went"
      ;;
    *) fail "unknown case $c" ;;
  esac
done
echo "heal_goal: ok"
