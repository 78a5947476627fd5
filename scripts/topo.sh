#!/usr/bin/env bash
# MPICAST_TOPO on one machine. A "host" is an address on lo: ranks that multicast
# from 127.0.0.1 share one host, ranks on 127.0.0.2 another (the address is added
# to lo for the test and removed afterwards, only if this script added it).
#  1. auto, 4 ranks on one host: the host MPI carries every collective
#     (multicast gains nothing where no wire is crossed), data correct.
#  2. auto, 2 hosts x 2 ranks: one leader per host multicasts, the host MPI
#     spreads the data inside each host: every size and root correct, datagrams
#     really received, no fallback; the late-rank barrier holds.
#  3. leaders, 3 ranks on one host and 1 on the other (uneven hosts, roots on
#     both), tree and linear scouts.
source "$(dirname "$0")/test-lib.sh"

A=127.0.0.1 B=127.0.0.2
added=0
cleanup() {
  if [ "$added" = 1 ]; then ip addr del "$B/8" dev lo 2>/dev/null || true; fi
}
trap cleanup EXIT INT TERM
if ! ip -4 addr show dev lo | grep -q "inet $B/"; then
  ip addr add "$B/8" dev lo 2>/dev/null || skip "cannot add $B to lo (needs root)"
  added=1
fi

# mpmd OUT PROG ARGS... : runs with NA ranks on host A and NB on host B (TOPO, NA, NB
# from the environment), all preloaded; MPICAST_* settings go to every rank.
mpmd() {
  local out=$1 prog=$2
  shift 2
  local cmd=("$TC_MPIEXEC") ctx first=1
  [ "$TC_FLAVOUR" = openmpi ] && cmd+=(--oversubscribe --bind-to none)
  for ctx in "A:$NA" "B:$NB"; do
    local addr n=${ctx#*:}
    [ "$n" -gt 0 ] || continue
    addr=$([ "${ctx%%:*}" = A ] && echo $A || echo $B)
    [ "$first" = 1 ] || cmd+=(:)
    first=0
    if [ "$TC_FLAVOUR" = openmpi ]; then
      cmd+=(-n "$n" -x "LD_PRELOAD=$TC_LIB" -x "MPICAST_IFACE=$addr" -x "MPICAST_TOPO=$TOPO"
            -x MPICAST_STATS=1 -x MPICAST_VERBOSE=1 -x "MPICAST_SYNC=${SYNC:-tree}"
            -x "TC_EXPECT=${EXPECT:-}")
    else
      cmd+=(-n "$n" -env LD_PRELOAD "$TC_LIB" -env MPICAST_IFACE "$addr" -env MPICAST_TOPO "$TOPO"
            -env MPICAST_STATS 1 -env MPICAST_VERBOSE 1 -env MPICAST_SYNC "${SYNC:-tree}"
            -env TC_EXPECT "${EXPECT:-}")
    fi
    cmd+=("$TC_BINDIR/$prog" "$@")
  done
  note "${cmd[*]}"
  timeout -k 10 150 "${cmd[@]}" >"$out" 2>&1 || { cat "$out"; fail "$prog failed (exit $?)"; }
  cat "$out"
}
sum_field() { sed -n "s/^stats(sum): .*[ :]$2=\([0-9][0-9]*\).*/\1/p" "$1" | tail -n 1; }
# ---- 1: one host, auto
TOPO=auto NA=4 NB=0 EXPECT=pmpi mpmd "$TC_WORK/one.out" int_bcast --iters 1

# ---- 2: two hosts x two ranks, auto
TOPO=auto NA=2 NB=2 EXPECT=mcast mpmd "$TC_WORK/two.out" int_bcast --barrier \
  --sizes 0,1,1471,1472,1473,65535,65536,65537,1048576,16777223 --iters 1
grep -q "on 2 hosts: one leader per host" "$TC_WORK/two.out" \
  || fail "2 hosts x 2 ranks under MPICAST_TOPO=auto did not take the leaders layout"
[ "$(sum_field "$TC_WORK/two.out" fallbacks)" = 0 ] || fail "fallback in the leaders layout"
[ "$(sum_field "$TC_WORK/two.out" dgrams_recv)" -gt 0 ] || fail "no datagram received by the leaders"
TOPO=auto NA=2 NB=2 EXPECT=mcast mpmd "$TC_WORK/barrier.out" int_barrier --quick 10

# ---- 3: uneven hosts, forced leaders, both scout kinds
for SYNC in tree linear; do
  TOPO=leaders NA=3 NB=1 EXPECT=mcast SYNC=$SYNC mpmd "$TC_WORK/uneven-$SYNC.out" int_bcast \
    --sizes 1,1473,65537,1048576 --iters 2 --comm dup
  grep -q "on 2 hosts: one leader per host" "$TC_WORK/uneven-$SYNC.out" \
    || fail "MPICAST_TOPO=leaders did not take the leaders layout"
done
echo "topo: ok"
