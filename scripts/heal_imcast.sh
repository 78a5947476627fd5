#!/usr/bin/env bash
# IP multicast of MPICAST_Imcast that breaks in the middle of a job, on loopback (needs root
# and nft, skipped otherwise). int_heal_imcast runs MPICAST_Imcast (MPICAST_IMCAST_TRANSPORT=ip)
# and MPICAST_Dbcast of 1 B .. 256 KiB from every root to 2 or 3 of the other 3 ranks, every
# byte checked, for a bounded time; after the engines are set up, an nft rule on lo's input
# drops multicast datagrams:
#   big      longer than 1500 bytes (IP), from 2 s on: the destinations are served the rest
#            by unicast (unicast), and the roots move their long multicasts to point-to-point
#            (heal_host), with one message per job naming the hosts
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

HEAL_PROG=int_heal_imcast HEAL_SEED=41
source "$(dirname "$0")/heal-lib.sh"

export MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS MPICAST_STATS=1 MPICAST_TIMEOUT_MS=10000 \
  MPICAST_IMCAST_TRANSPORT=ip

MOVED='MPICAST_Imcast stopped reaching'

# run_im ARGS...: heal-lib's run, and rank 0 must have counted its MPICAST_Imcast calls.
run_im() {
  run "$@"
  [ "$(stat_field "$line" imcast)" -gt 0 ] || fail "$1: no MPICAST_Imcast counted: $line"
}

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
  echo "heal_imcast: $TC_FLAVOUR $1 time_to_heal_ms=$first messages=$n"
}

cases=${HEAL_CASES:-big all loss30 restore}
for c in $cases; do
  case $c in
    big)
      run_im big "meta length > 1500" 2 - 8
      [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "big: no unicast repair: $line"
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "big: rank 0 did not move: $line"
      check_heal big
      ;;
    all)
      run_im all "" 2 - 8
      [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "all: no unicast repair: $line"
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "all: rank 0 did not move: $line"
      [ "$(stat_field "$line" heal_return)" = 0 ] || fail "all: a return while multicast is dropped: $line"
      check_heal all
      ;;
    loss30)
      run_im loss30 "numgen random mod 100 < 30" 2 - 6
      [ "$(stat_field "$line" repairs)" -gt 0 ] || fail "loss30: no repairs: $line"
      ;;
    restore)
      run_im restore "" 2 5 12
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
