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

HEAL_NAME=heal_goal HEAL_RUN=run BACK='GOAL runs again'
root_path_cases
