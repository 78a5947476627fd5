#!/usr/bin/env bash
# What the library says when multicast does not reach a host, on the emulated cluster
# (bench/cluster.sh, instance BENCH_CLUSTER, 3 by default, 4 hosts of 1 rank): an nftables rule
# inside host 3's namespace drops the UDP datagrams to the multicast groups on the ports of
# MPICAST_PORT (what a switch that stopped forwarding the group, or a firewall rule, does);
# unicast (the repair path, the host MPI) still passes.
#
#   fault_midjob.sh [--mpi openmpi|mpich|both] [CASE...]
#
# Cases (all by default):
#   midjob  2 MiB broadcasts (scouts, repaired by multicast); the rule comes after 6 s: the
#           job must end (MPICAST_TIMEOUT_MS=5000) with an abort that says multicast stopped
#           arriving at host 3 (10.77.K.3), rank 2, names the causes and `mpicast doctor`.
#   eager   256 KiB broadcasts (eager: receivers ask the root's responder, which repairs by
#           unicast); the rule comes after 6 s: the job must finish with correct data, and
#           host 3 must warn once that multicast no longer arrives there.
#   probe   the rule is in place before the job starts: the setup probe fails, the one warning
#           names host 3, rank 2 and `mpicast doctor -n 4`, and the broadcasts give correct
#           data through the host MPI.
#
# A job whose program printed its last line ("done:") but whose MPI_Finalize does not return
# within 15 s is ended and reported as a finalize hang of the host MPI, not as a failure:
# MPICH 4.0 over UCX hangs there in the eager case, with main's library too (all ranks inside
# PMPI_Finalize; bench/results/2026-11-26-faults/README.md).
#
# Needs root, the cluster's tools, and build/<mpi>/lib/libmpicast.so (make lib-<mpi>; another
# build tree: FAULT_LIBDIR=DIR for DIR/<mpi>/lib/libmpicast.so). Every
# job is bounded (timeout); the rule's table is removed and the cluster taken down on exit,
# error or interrupt. Output of each job: $FAULT_OUT (default /tmp/mpicast-fault-<mpi>-<case>.out).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_CLUSTER=${BENCH_CLUSTER:-3}
K=$BENCH_CLUSTER
CL="$TOP/bench/cluster.sh"
HOSTS=4
BAD=3 # the host that stops hearing the group: rank 2
NS=mpicast-c${K}h$BAD
[ "$K" != 0 ] || NS=mpicast-h$BAD
ADDR=10.77.$K.$BAD
PORTS=23000-23999
TABLE="inet mpicast_fault"

mpis=(openmpi mpich)
cases=()
while [ $# -gt 0 ]; do
  case $1 in
    --mpi) case $2 in both) mpis=(openmpi mpich) ;; *) mpis=("$2") ;; esac; shift 2 ;;
    midjob|eager|probe) cases+=("$1"); shift ;;
    *) echo "fault_midjob.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(probe midjob eager)

rule_off() { ip netns exec "$NS" nft delete table $TABLE 2>/dev/null || true; }
cleanup() {
  rule_off
  [ -z "${job:-}" ] || kill -TERM "$job" 2>/dev/null || true
  "$CL" down >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rule_on() {
  ip netns exec "$NS" nft -f - <<NFT
table $TABLE {
  chain input {
    type filter hook input priority -20; policy accept;
    ip daddr 224.0.0.0/4 udp dport $PORTS counter drop
  }
}
NFT
}

failures=0
hangs=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
has() { grep -q -- "$2" "$1" || fail "$(basename "$1"): no '$2'"; }

build() { # MPI -> the program, built against that MPI
  local cc=mpicc.$1 out=$TOP/build/$1/bench/fault_midjob
  mkdir -p "$(dirname "$out")"
  "$cc" -O2 -Wall -Wextra -Werror -o "$out" "$TOP/bench/fault_midjob.c"
  echo "$out"
}

# One job: CASE MPI BYTES RULE_AFTER(s, or "before") TIMEOUT(s) -> sets rc, out
job_run() {
  local name=$1 mpi=$2 bytes=$3 after=$4 tmo=$5 prog
  prog=$(build "$mpi")
  out=${FAULT_OUT:-/tmp/mpicast-fault-$mpi-$name.out}
  rule_off
  [ "$after" != before ] || rule_on
  local t0=$SECONDS
  LD_PRELOAD=${FAULT_LIBDIR:-$TOP/build}/$mpi/lib/libmpicast.so MPICAST_PORT=$PORTS MPICAST_TIMEOUT_MS=5000 \
    MPICAST_STATS=1 \
    "$CL" run --mpi "$mpi" --timeout "$tmo" --out "$out" --done-marker "done:" --grace 15 \
    -- "$prog" --bytes "$bytes" --seconds 20 2>"$out.err" &
  job=$!
  if [ "$after" != before ]; then
    sleep "$after"
    rule_on
    echo "fault_midjob: $name/$mpi: rule on at $((SECONDS - t0)) s" >&2
  fi
  rc=0
  wait "$job" || rc=$?
  job=""
  cat "$out.err" >>"$out"
  rm -f "$out.err"
  echo "fault_midjob: $name/$mpi: exit $rc after $((SECONDS - t0)) s; counters of the rule:" >&2
  if grep -q "cluster.sh: finalize-hang" "$out"; then
    # The program printed its last line and MPICH's own MPI_Finalize did not return (all
    # ranks inside PMPI_Finalize, two in UCX progress): seen with main's library too.
    echo "fault_midjob: $name/$mpi: NOTE: the host MPI's MPI_Finalize hung after the program's last line; ended 15 s later" >&2
    hangs=$((hangs + 1))
  fi
  ip netns exec "$NS" nft list table $TABLE 2>/dev/null | grep counter >&2 || true
  rule_off
}

"$CL" up $HOSTS --rate 1gbit >/dev/null
for mpi in "${mpis[@]}"; do
  for c in "${cases[@]}"; do
    case $c in
      probe)
        job_run probe "$mpi" $((256 << 10)) before 120
        [ "$rc" = 0 ] || fail "probe/$mpi: exit $rc (the host MPI must carry the job)"
        has "$out" "done: .* all correct"
        has "$out" "mpicast: warning: multicast unavailable: "
        has "$out" "at host [^:]*($ADDR): rank 2"
        has "$out" "mpicast doctor -n $HOSTS --mpi $mpi"
        n=$(grep -c "multicast unavailable" "$out" || true)
        [ "$n" = 1 ] || fail "probe/$mpi: the warning came $n times"
        ;;
      midjob)
        job_run midjob "$mpi" $((2 << 20)) 6 120
        [ "$rc" != 0 ] || fail "midjob/$mpi: the job succeeded (it cannot without multicast at host 3)"
        [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "midjob/$mpi: the job hung (timeout)"
        has "$out" "multicast stopped arriving at host [^:]*($ADDR): rank 2"
        has "$out" "IGMP snooping"
        has "$out" "mpicast doctor -n $HOSTS --mpi $mpi --long"
        has "$out" "aborting"
        ;;
      eager)
        job_run eager "$mpi" $((256 << 10)) 6 120
        [ "$rc" = 0 ] || fail "eager/$mpi: exit $rc"
        has "$out" "done: .* all correct"
        has "$out" "multicast to .* no longer arrives at host [^:]*($ADDR): rank 2"
        ;;
    esac
    echo "fault_midjob: $c/$mpi: output in $out" >&2
  done
done
if [ "$failures" = 0 ]; then
  echo "fault_midjob: all passed (${mpis[*]}: ${cases[*]})$([ "$hangs" = 0 ] || echo "; $hangs finalize hang(s) of the host MPI after the last line")"
else
  echo "fault_midjob: $failures check(s) failed" >&2
  exit 1
fi
