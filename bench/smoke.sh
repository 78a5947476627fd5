#!/usr/bin/env bash
# `make bench-smoke` (part of `make test`): the emulated cluster works end to end, for every
# installed MPI (Debian's, and the wheels' Open MPI 5 and MPICH 5 when make deps-wheels put
# them in build/mpis). Two hosts (cluster instance 1, so a benchmark on instance 0 is left alone),
# 1 Gbit/s links, a few broadcasts of each variant of bench/mcast_bench with mpicast preloaded.
# Asserts correctness, not speed:
#   - the job exits 0 and the benchmark's byte-by-byte data check found no wrong word;
#   - every tree and linear broadcast and barrier took mpicast's multicast path (the mcast_ops
#     column, from MPICAST_Get_stats) and the MPICAST_STATS=1 line shows no fallback;
#   - the data crossed the links: host 2's veth received at least the broadcast bytes, and its
#     UDP sockets received datagrams;
#   - nothing of the cluster is left afterwards.
# Bounded: each job has a 120 s timeout; the cluster is torn down on any exit.
# Needs root (network namespaces); prints SKIP and succeeds without it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
export BENCH_CLUSTER=1
cluster=$HERE/cluster.sh
WORK=$TOP/build/bench-smoke

fail() { echo "bench-smoke: FAIL: $*" >&2; exit 1; }
note() { echo "bench-smoke: $*"; }

if [ "$(id -u)" != 0 ]; then
  note "SKIP: needs root for network namespaces"
  exit 0
fi
if ! ip netns add mpicast-c1probe 2>/dev/null; then
  note "SKIP: cannot create network namespaces here"
  exit 0
fi
ip netns del mpicast-c1probe

flavours=()
for f in openmpi mpich openmpi5 mpich5; do
  [ -e "$TOP/build/$f/lib/libmpicast.so" ] && [ -x "$TOP/build/$f/bench/mcast_bench" ] && flavours+=("$f")
done
[ ${#flavours[@]} -gt 0 ] || fail "no build/<flavour>/lib/libmpicast.so with build/<flavour>/bench/mcast_bench (make lib, then make bench-smoke)"

rm -rf "$WORK"
mkdir -p "$WORK"
trap '"$cluster" down' EXIT
trap 'exit 130' INT TERM
"$cluster" up 2 --rate 1gbit

REPS=3
SIZES=1,1500,65536,1048576
for f in "${flavours[@]}"; do
  out=$WORK/$f.csv err=$WORK/$f.log
  note "$f: 2 hosts, sizes $SIZES, $REPS reps of each variant"
  before=$("$cluster" counters | awk '$1 ~ /h2$/ { print $2 }')
  udp_before=$("$cluster" exec 2 awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
  rc=0
  # The wheels' MPIs (openmpi5, mpich5) are not on the system's library path: preload the
  # ranks only (bench/jobrun.sh, RANK_PRELOAD).
  pre=LD_PRELOAD
  case $f in *5) pre=RANK_PRELOAD ;; esac
  env "$pre=$TOP/build/$f/lib/libmpicast.so" MPICAST_STATS=1 \
    "$cluster" run --mpi "$f" --timeout 120 --out "$out" --done-marker "# end" --grace 15 -- \
    "$TOP/build/$f/bench/mcast_bench" --sizes "$SIZES" --reps-min "$REPS" --reps-max "$REPS" \
    --barrier-reps "$REPS" --budget 0 --idle-wait 2>"$err" || rc=$?
  after=$("$cluster" counters | awk '$1 ~ /h2$/ { print $2 }')
  udp_after=$("$cluster" exec 2 awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
  [ "$rc" = 0 ] || { cat "$out" "$err" >&2; fail "$f: the job failed (exit $rc)"; }
  grep -q '^# data check: 0 wrong words' "$out" || { cat "$out" >&2; fail "$f: data check failed"; }
  # Every tree/linear/eager row: reps operations, all multicast.
  bad=$(awk -F, -v reps="$REPS" '$1 ~ /^(bcast|barrier)$/ && $2 ~ /^(tree|linear|eager)$/ &&
          ($4 != reps || $10 != reps) { print }' "$out")
  rows=$(awk -F, '$1 ~ /^(bcast|barrier)$/ && $2 ~ /^(tree|linear|eager)$/' "$out" | wc -l)
  [ "$rows" = 15 ] || { cat "$out" >&2; fail "$f: expected 15 tree/linear/eager rows, got $rows"; }
  [ -z "$bad" ] || { cat "$out" >&2; fail "$f: operations that did not take the multicast path: $bad"; }
  line=$(grep -E '^mpicast: stats: rank=0 ' "$err" | tail -n 1 || true)
  [ -n "$line" ] || { cat "$err" >&2; fail "$f: no MPICAST_STATS line"; }
  mc=$(sed -n 's/.* bcast_mcast=\([0-9]*\).*/\1/p' <<<"$line")
  fb=$(sed -n 's/.* fallbacks=\([0-9]*\).*/\1/p' <<<"$line")
  [ "${mc:-0}" -gt 0 ] && [ "${fb:-1}" = 0 ] || fail "$f: stats line shows no multicast or a fallback: $line"
  # Each 1 MiB row moved REPS+2 (warm-up) copies to host 2, for each of 5 variants.
  need=$(((REPS + 2) * 5 * 1048576))
  got=$((after - before))
  [ "$got" -ge "$need" ] || fail "$f: host 2's link received $got bytes, less than the $need broadcast to it"
  [ $((udp_after - udp_before)) -gt 0 ] || fail "$f: host 2 received no UDP datagram: multicast did not cross the link"
  hang=""
  grep -q 'finalize-hang' "$err" && hang=" (MPI_Finalize did not return; ended after the last line, see cluster.sh run)"
  note "$f: ok: data right, multicast path for every tree/linear/eager operation, $got bytes into host 2, $((udp_after - udp_before)) UDP datagrams$hang"
  note "$f: $line"
done

"$cluster" down
trap - EXIT
left=$( (ip netns list; ip -o link show) | grep -c 'mpicast-c1' || true)
[ "$left" = 0 ] || fail "cluster instance 1 left $left namespaces or links behind"
echo "bench-smoke: ok (${flavours[*]})"
