#!/usr/bin/env bash
# The "remote shell" of bench/switched.sh's MPI launchers (Open MPI: --mca plm_rsh_agent;
# MPICH hydra: -launcher ssh -launcher-exec): `switched-agent.sh [-OPTION...] HOST CMD...` runs
# CMD in the namespace of the emulated host whose management address is HOST (10.79.0.J:
# namespace mpicast-xhJ), as `ssh HOST CMD...` would (the words joined, given to a shell).
# A TMPDIR per host, as bench/netns-agent.sh says why (Open MPI's session directories).
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done # ssh options (hydra passes -x)
[ $# -ge 2 ] || { echo "switched-agent.sh: usage: switched-agent.sh HOST CMD..." >&2; exit 255; }
if [[ $1 =~ ^10\.79\.0\.([0-9]+)$ ]]; then
  ns=mpicast-xh${BASH_REMATCH[1]}
else
  echo "switched-agent.sh: not a host of the switched network: $1" >&2
  exit 255
fi
shift
export TMPDIR=/tmp/mpicast-netns/$ns
mkdir -p "$TMPDIR"
exec ip netns exec "$ns" /bin/sh -c "$*"
