#!/usr/bin/env bash
# Overlap of a non-blocking GOAL broadcast with computation on the emulated cluster: the
# command of the runs recorded in BENCHMARKS.md, now bench/goal_cluster.sh --part overlap
# (see there for the options).
exec "$(dirname "${BASH_SOURCE[0]}")/goal_cluster.sh" --part overlap "$@"
