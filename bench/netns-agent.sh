#!/usr/bin/env bash
# A stand-in for ssh that the MPI launchers use to start their daemons on the emulated hosts of
# bench/cluster.sh: `netns-agent.sh [-OPTION...] HOST CMD...` runs CMD inside HOST's network
# namespace the way `ssh HOST CMD...` runs it on HOST (the words joined by spaces, given to a
# shell). HOST is a host address 10.77.K.I of cluster instance K: namespace mpicast-hI (K = 0)
# or mpicast-cKhI. Open MPI: --mca plm_rsh_agent; MPICH hydra: -launcher ssh -launcher-exec.
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done # ssh options (hydra passes -x)
[ $# -ge 2 ] || { echo "netns-agent.sh: usage: netns-agent.sh HOST CMD..." >&2; exit 255; }
if [[ $1 =~ ^10\.77\.([0-9])\.([0-9]+)$ ]]; then
  k=${BASH_REMATCH[1]} i=${BASH_REMATCH[2]}
else
  echo "netns-agent.sh: not an emulated host: $1" >&2
  exit 255
fi
if [ "$k" = 0 ]; then ns=mpicast-h$i; else ns=mpicast-c${k}h$i; fi
shift
# The emulated hosts share one file system and one hostname, and Open MPI's daemons keep their
# session directories in $TMPDIR/ompi.<hostname>.<uid>/jf.<job>: daemons of different hosts
# would create and remove the same directories (seen as orted failing in mkdir, or crashing in
# hwloc_shmem_topology_write). A TMPDIR per host keeps them apart, as separate disks would.
export TMPDIR=/tmp/mpicast-netns/$ns
mkdir -p "$TMPDIR"
exec ip netns exec "$ns" /bin/sh -c "$*"
