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

HEAL_NAME=heal_imcast HEAL_RUN=run_im BACK='MPICAST_Imcast again'
root_path_cases
