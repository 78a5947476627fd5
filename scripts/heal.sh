#!/usr/bin/env bash
# Multicast that breaks in the middle of a job, on loopback (needs root and nft, skipped
# otherwise). int_heal runs broadcasts of 1 B .. 1 MiB from every root and barriers, every
# byte checked, for a bounded time; after the communicator is set up, an nft rule on lo's
# input drops multicast datagrams:
#   big      longer than 1500 bytes (IP), from 2 s on: the communicator must step down to
#            smaller datagrams (heal_step), with one message naming the ranks
#   all      all of them, from 2 s on: the host MPI (heal_host), and unicast repairs of the
#            operation the fault hit
#   scouted  all of them, from 2 s on, every broadcast with scouts (MPICAST_EAGER_BYTES=0):
#            the root serves the ranks multicast no longer reaches by the host MPI, then the
#            host MPI (heal_host)
#   loss30   30 % of them, from 2 s on: every operation completes (repairs)
#   restore  all of them from 2 s to 5 s: the host MPI, then back to multicast (heal_return)
# Under the rules of all and loss30, `mpicast doctor -n 3` must agree with the library: for all,
# multicast does not arrive (a problem, exit 1); for loss30, multicast works but loses a share
# of datagrams at every rate, which mpicast repairs (a warning, exit 0).
# Every case must end with exit 0 and "all correct". Time to heal (from the rule to rank 0's
# message that the communicator moved) is printed for big, all and restore, and must be
# well under MPICAST_TIMEOUT_MS. The rules live in their own table, inet mpicast_heal, which
# the EXIT trap deletes whatever happens; every job is bounded by timeout.
#   HEAL_CASES="all restore" limits the cases.
source "$(dirname "$0")/test-lib.sh"

TABLE="inet mpicast_heal"
# A range and ports of this test's own, outside the defaults, so that the rules touch no
# other job's multicast on this machine.
GROUP_NET=239.254.40.0/24
PORTS=24400-24499

HEAL_PROG=int_heal HEAL_SEED=40
source "$(dirname "$0")/heal-lib.sh"

export MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS MPICAST_STATS=1 MPICAST_TIMEOUT_MS=10000 MPICAST_PROBE_MS=300

# heal_time NAME PATTERN: ms from the rule to the first message matching PATTERN.
heal_time() {
  local at
  at=$(grep -m1 -E "$2" "$TC_WORK/$1.out" | cut -d' ' -f1)
  [ -n "$at" ] || { echo ""; return; }
  since "$1" "$at"
}

check_heal() { # NAME MS
  [ -n "$2" ] || fail "$1: no message that the communicator moved"
  [ "$2" -lt 5000 ] || fail "$1: healing took $2 ms (MPICAST_TIMEOUT_MS=$MPICAST_TIMEOUT_MS)"
  note "$1: time to heal $2 ms (rule on -> rank 0's message)"
  echo "heal: $TC_FLAVOUR $1 time_to_heal_ms=$2"
}

cases=${HEAL_CASES:-big all scouted loss30 restore}
for c in $cases; do
  case $c in
    big)
      run big "meta length > 1500" 2 - 8
      [ "$(stat_field "$line" heal_step)" -ge 1 ] || fail "big: no step down: $line"
      [ "$(stat_field "$line" heal_host)" = 0 ] || fail "big: the host MPI instead of smaller datagrams: $line"
      grep -q 'stopped reaching .* those of 1472 bytes do: it uses 1408 data bytes' "$out" \
        || fail "big: no message naming the smaller size"
      check_heal big "$(heal_time big 'stopped reaching')"
      ;;
    all)
      run all "" 2 - 8
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "all: no switch to the host MPI: $line"
      [ "$(stat_field "$line" heal_return)" = 0 ] || fail "all: a return while multicast is dropped: $line"
      n=$(grep -c 'multicast stopped reaching' "$out" || true)
      [ "$n" = 1 ] || fail "all: the message came $n times, not once"
      grep -q 'multicast stopped reaching .*ranks\? [0-9]' "$out" || fail "all: the message names no rank"
      check_heal all "$(heal_time all 'multicast stopped reaching')"
      # The library left multicast for the host MPI: the doctor must find it broken.
      doctor all "" 1 '^problem: multicast does not arrive from rank [0-9]'
      ;;
    scouted)
      MPICAST_EAGER_BYTES=0 run scouted "" 2 - 8
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "scouted: no switch to the host MPI: $line"
      check_heal scouted "$(heal_time scouted 'multicast stopped reaching')"
      ;;
    loss30)
      run loss30 "numgen random mod 100 < 30" 2 - 6
      [ "$(stat_field "$line" repairs)" -gt 0 ] || fail "loss30: no repairs: $line"
      # The library stayed on multicast and repaired: the doctor must find it working, with
      # the loss named (a warning, not a problem).
      doctor loss30 "numgen random mod 100 < 30" 0 \
        'lost even at [0-9]+ Mbit/s, the lowest rate tried' 'mpicast repairs what is lost' \
        'Multicast works between every pair of ranks'
      ;;
    restore)
      run restore "" 2 5 12
      [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "restore: no switch to the host MPI: $line"
      [ "$(stat_field "$line" heal_return)" -ge 1 ] || fail "restore: no return to multicast: $line"
      grep -q 'multicast reaches every rank again' "$out" || fail "restore: no message of the return"
      check_heal restore "$(heal_time restore 'multicast stopped reaching')"
      off=$(cut -d' ' -f1 "$TC_WORK/restore.off")
      back=$(grep -m1 'reaches every rank again' "$out" | cut -d' ' -f1)
      note "restore: back to multicast $(awk -v a="$back" -v b="$off" 'BEGIN { printf "%d", (a - b) * 1000 }') ms after the rule went"
      ;;
    *) fail "unknown case $c" ;;
  esac
done
echo "heal: ok"
