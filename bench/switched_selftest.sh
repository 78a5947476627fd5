#!/usr/bin/env bash
# bench/switched.sh selftest NETFILE [--mpi openmpi|mpich]... [--size BYTES] [--reps R]
#
# Brings the switched network of NETFILE up, checks it, and takes it down (also on failure or
# interrupt), then checks that nothing of ours is left:
#   paths   for one host of every switch and every other switch's host, the switches a packet
#           crosses (switched.sh path: ICMP with rising TTL) equal `mpicast sim routes`' path
#   data    one iperf3 flow along the longest route, and along each route through a switch
#           whose next hop depends on the source: its data on exactly that route's links
#   rates   iperf3 (if installed), 3 s each: one TCP flow between hosts of two neighbouring
#           switches (about the link's rate), then two flows from two hosts of one switch to
#           two hosts of a neighbour at once (they share the one link: about half each)
#   mpi     bench/switched/mpi_check.c, compiled with each MPI's mpicc, on every host (one rank
#           each): every rank's data0 address, a broadcast checked by an allreduce, and the
#           bytes the switch-to-switch links carried during the job (not zero: the data went
#           over the switches, not shared memory nor the management network)
#   goal    with build/<mpi>/bin/mpicast-goal-run (make lib): a binomial broadcast generated
#           by `mpicast goal gen` run by mpicast's GOAL executor, --expect bcast
# Prints one "ok"/"FAIL" line per check and "N passed, N failed" at the end (exit 1 on a
# failure). Needs root, ip, tc, ping, the mpicast binary (as switched.sh), mpicc.openmpi /
# mpicc.mpich for the MPIs asked (default both).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SW=$HERE/switched.sh
file=${1:-}
[ -n "$file" ] && [ -r "$file" ] || { echo "usage: switched.sh selftest NETFILE [--mpi M]... [--size BYTES] [--reps R]" >&2; exit 2; }
shift
mpis=() size=1048576 reps=3
while [ $# -gt 0 ]; do
  case $1 in
    --mpi) mpis+=("$2"); shift 2 ;;
    --size) size=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "switched_selftest.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi mpich)
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
work=$(mktemp -d /tmp/mpicast-xselftest.XXXXXX)
trap '"$SW" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "# switched.sh selftest $file, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs"
t0=$SECONDS
"$SW" up "$file"
echo "# up in $((SECONDS - t0)) s"
routes=/run/mpicast-bench/switched.routes
hosts=/run/mpicast-bench/switched.hosts

# paths: the first host of each switch to the first host of each other switch.
echo "## paths"
firsts=$(awk '!seen[$5]++ {print $1, $5}' "$hosts")
while read -r ha sa; do
  while read -r hb sb; do
    [ "$sa" != "$sb" ] || continue
    want=$(sed -n "s/^path $sa $sb: //p" "$routes")
    got=$("$SW" path "$ha" "$hb" 2>&1 || true)
    # The last switch answers no "time exceeded" (the packet reaches the host): the measured
    # path is every switch before the host, i.e. the whole switch path.
    if [ "$got" = "$want" ]; then ok "path $ha($sa) -> $hb($sb): $got"; else bad "path $ha($sa) -> $hb($sb): measured '$got', routes say '$want'"; fi
  done <<<"$firsts"
done <<<"$firsts"

# The path of TCP data: one iperf3 flow (2 s) between hosts of the two switches whose route is
# the longest, and one for every route through a switch whose next hop depends on the source
# (`next AT DST: -` of mpicast sim routes); every directed switch link of the route must carry at least half of the bytes of
# the busiest link, every other at most 5 % (the answers' ACKs take the way back).
echo "## data path"
link_tx() { # "FROM->TO bytes" for every directed switch-to-switch link
  local i=0 a b
  while read -r _ a b _; do
    echo "$a->$b $("$SW" exec "$a" cat "/sys/class/net/mpicast-xl${i}a/statistics/tx_bytes")"
    echo "$b->$a $("$SW" exec "$b" cat "/sys/class/net/mpicast-xl${i}b/statistics/tx_bytes")"
    i=$((i + 1))
  done < <(sed 's/#.*//' "$file" | awk '$1 == "link"')
}
has_hosts() { awk -v s="$1" '$5 == s' "$hosts" | grep -q .; }
data_path() { # SWITCH-A SWITCH-B: one flow from A's first host to B's
  local sws ha hb want max okp l d k
  read -r -a sws <<<"$(sed -n "s/^path $1 $2: //p" "$routes")"
  ha=$(awk -v s="$1" '$5 == s {print $1; exit}' "$hosts")
  hb=$(awk -v s="$2" '$5 == s {print $1; exit}' "$hosts")
  "$SW" exec "$hb" timeout 30 iperf3 -s -1 -p 5201 >"$work/path-server.log" 2>&1 &
  sleep 1
  link_tx | sort >"$work/tx0"
  "$SW" exec "$ha" timeout 20 iperf3 -c "$(awk -v n="$hb" '$1 == n {print $3}' "$hosts")" -t 2 -f m >"$work/path.log" 2>&1 || true
  wait || true
  link_tx | sort >"$work/tx1"
  want=" "
  for ((k = 0; k + 1 < ${#sws[@]}; k++)); do want+="${sws[$k]}->${sws[$((k + 1))]} "; done
  join "$work/tx0" "$work/tx1" | awk '{print $1, $3 - $2}' >"$work/txd"
  max=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$work/txd")
  echo "# $ha -> $hb (route ${sws[*]}): bytes sent per directed switch link during the flow:"
  awk '$2 > 0' "$work/txd" | sort -k2,2nr | sed 's/^/#   /'
  okp=1
  while read -r l d; do
    if [[ "$want" == *" $l "* ]]; then
      [ "$d" -ge $((max / 2)) ] || { okp=0; echo "# on the route but carried $d: $l"; }
    else
      [ "$d" -le $((max / 20)) ] || { okp=0; echo "# off the route but carried $d: $l"; }
    fi
  done <"$work/txd"
  if [ "$okp" = 1 ] && [ "$max" -gt 1000000 ]; then
    ok "data path $ha -> $hb: TCP data on exactly${want% }"
  else
    bad "data path $ha -> $hb: not exactly the route${want% } (busiest link $max bytes)"
  fi
}
if command -v iperf3 >/dev/null; then
  # The longest route between switches with hosts, and every route through a switch whose
  # next hop depends on the source (`next AT DST: -`).
  pairs=$(grep '^path ' "$routes" | while read -r _ a b rest; do
    b=${b%:}
    if has_hosts "$a" && has_hosts "$b"; then echo "$(wc -w <<<"$rest") $a $b"; fi
  done | sort -rn -k1,1 -s | head -1 | cut -d' ' -f2-)
  while read -r _ at dst _; do
    dst=${dst%:}
    pairs+=$'\n'$(awk -v at="$at" -v d="$dst" '$1 == "via" && $3 == d && $4 == at ":" {print $2, d}' "$routes")
  done < <(grep '^next .*: -$' "$routes")
  while read -r a b; do
    [ -n "$a" ] && has_hosts "$a" && has_hosts "$b" || continue
    data_path "$a" "$b"
  done < <(grep . <<<"$pairs" | awk '!seen[$0]++')
else
  echo "# no iperf3: data path not checked"
fi

# rates
echo "## rates"
if command -v iperf3 >/dev/null; then
  # Two switches joined by a link, each with two hosts: the first link line whose ends have.
  pair=""
  while read -r _ a b _; do
    na=$(awk -v s="$a" '$5 == s' "$hosts" | wc -l) nb=$(awk -v s="$b" '$5 == s' "$hosts" | wc -l)
    if [ "$na" -ge 2 ] && [ "$nb" -ge 2 ] && grep -q "^path $a $b: $a $b$" "$routes"; then pair="$a $b"; break; fi
  done < <(sed 's/#.*//' "$file" | awk '$1 == "link"')
  if [ -z "$pair" ]; then
    bad "rates: no link whose switches have two hosts each"
  else
    read -r a b <<<"$pair"
    mapfile -t src < <(awk -v s="$a" '$5 == s {print $1}' "$hosts" | head -2)
    mapfile -t dst < <(awk -v s="$b" '$5 == s {print $1}' "$hosts" | head -2)
    addr() { awk -v n="$1" '$1 == n {print $3}' "$hosts"; }
    rate=$(sed 's/#.*//' "$file" | awk -v a="$a" -v b="$b" '$1 == "link" && (($2 == a && $3 == b) || ($2 == b && $3 == a)) {print $4}')
    for d in "${dst[@]}"; do
      "$SW" exec "$d" timeout 30 iperf3 -s -1 -p 5201 >"$work/server-$d.log" 2>&1 &
    done
    sleep 1
    "$SW" exec "${src[0]}" timeout 20 iperf3 -c "$(addr "${dst[0]}")" -t 3 -f m >"$work/one.log" 2>&1 || true
    one=$(awk '/receiver/ {print $(NF-2)}' "$work/one.log")
    echo "# one flow ${src[0]} -> ${dst[0]} over $a-$b ($rate): ${one:-?} Mbit/s"
    wait || true
    for d in "${dst[@]}"; do
      "$SW" exec "$d" timeout 30 iperf3 -s -1 -p 5201 >"$work/server2-$d.log" 2>&1 &
    done
    sleep 1
    "$SW" exec "${src[0]}" timeout 20 iperf3 -c "$(addr "${dst[0]}")" -t 3 -f m >"$work/two-0.log" 2>&1 &
    c0=$!
    "$SW" exec "${src[1]}" timeout 20 iperf3 -c "$(addr "${dst[1]}")" -t 3 -f m >"$work/two-1.log" 2>&1 &
    c1=$!
    wait "$c0" || true
    wait "$c1" || true
    wait || true
    t0=$(awk '/receiver/ {print $(NF-2)}' "$work/two-0.log") t1=$(awk '/receiver/ {print $(NF-2)}' "$work/two-1.log")
    echo "# two flows ${src[0]} -> ${dst[0]} and ${src[1]} -> ${dst[1]} sharing $a->$b: ${t0:-?} and ${t1:-?} Mbit/s"
    lim=$(awk -v r="$rate" 'BEGIN { r = tolower(r); n = r + 0; if (r ~ /gbit/) n *= 1000; print n }')
    if awk -v x="${one:-0}" -v l="$lim" 'BEGIN { exit !(x > 0.85 * l && x <= 1.0 * l) }'; then
      ok "rate: one flow ${one} Mbit/s on a $rate link"
    else
      bad "rate: one flow ${one:-?} Mbit/s on a $rate link (want 85..100 %)"
    fi
    if awk -v x="${t0:-0}" -v y="${t1:-0}" -v l="$lim" 'BEGIN { s = x + y; exit !(s > 0.85 * l && s <= 1.0 * l && x < 0.65 * l && y < 0.65 * l) }'; then
      ok "rate: two flows sharing $a->$b: $t0 + $t1 Mbit/s (the link's $rate, not 2x)"
    else
      bad "rate: two flows sharing $a->$b: ${t0:-?} + ${t1:-?} Mbit/s on a $rate link"
    fi
  fi
else
  echo "# no iperf3: rates not checked"
fi

# MPI
echo "## MPI"
link_bytes() { # tx bytes of every switch-to-switch veth end, added up
  "$SW" counters | awk '$2 ~ /^mpicast-xl/ {s += $3} END {print s + 0}'
}
mgmt_bytes() { # tx bytes of the hosts' management interfaces, added up
  local s=0 ns
  for ns in $(awk '{print $2}' "$hosts"); do s=$((s + $(ip netns exec "$ns" cat /sys/class/net/mgmt0/statistics/tx_bytes))); done
  echo $s
}
nh=$(wc -l <"$hosts")
for m in "${mpis[@]}"; do
  cc=mpicc.$m
  command -v "$cc" >/dev/null || { bad "mpi $m: no $cc"; continue; }
  prog=$work/mpi_check-$m
  "$cc" -O2 -o "$prog" "$HERE/switched/mpi_check.c"
  before=$(link_bytes) mbefore=$(mgmt_bytes)
  t0=$SECONDS
  rc=0
  "$SW" run --mpi "$m" --timeout 300 --out "$work/mpi-$m.out" --done-marker "# end" --grace 10 -- \
    "$prog" "$size" "$reps" 2>"$work/mpi-$m.err" || rc=$?
  took=$((SECONDS - t0))
  after=$(link_bytes) mafter=$(mgmt_bytes)
  sed 's/^/#   /' "$work/mpi-$m.out"
  moved=$((after - before)) mmoved=$((mafter - mbefore))
  echo "# $m: job $took s (exit $rc); switch links carried $moved bytes, management interfaces sent $mmoved"
  addrs=$(grep -c '^rank [0-9]* data0 10\.78\.' "$work/mpi-$m.out" || true)
  # A broadcast of SIZE bytes to nh-1 hosts that are not all on the root's switch crosses the
  # switch links with at least SIZE bytes per rep.
  if [ "$rc" = 0 ] && grep -q 'wrong bytes 0$' "$work/mpi-$m.out" && [ "$addrs" = "$nh" ] &&
     [ "$moved" -ge $((size * reps)) ]; then
    hang=""
    grep -q 'switched.sh: finalize-hang' "$work/mpi-$m.err" && hang=" (MPI_Finalize did not return: ended after the last line)"
    ok "mpi $m: $nh ranks on $nh hosts, broadcast right, $moved bytes over the switch links ($mmoved on management)$hang"
  else
    bad "mpi $m: exit $rc, $addrs data0 addresses, $moved bytes over the switch links; stderr:"
    tail -n 15 "$work/mpi-$m.err" | sed 's/^/#   /'
  fi
done

# GOAL: a generated binomial broadcast run by mpicast's executor (mpicast-goal-run of each
# MPI's build, when there is one: make lib), --expect bcast.
echo "## GOAL"
TOP=$(cd "$HERE/.." && pwd)
for m in "${mpis[@]}"; do
  runner=$TOP/build/$m/bin/mpicast-goal-run
  [ -x "$runner" ] || { echo "# $m: no $runner (make lib): GOAL not run"; continue; }
  goal=$work/bcast.goal
  "${MPICAST:-$TOP/build/$m/bin/mpicast}" goal gen binomial-bcast --ranks "$nh" --size "$size" -o "$goal"
  before=$(link_bytes)
  t0=$SECONDS
  rc=0
  "$SW" run --mpi "$m" --timeout 300 --out "$work/goal-$m.out" --done-marker "expect $reps/$reps" --grace 10 -- \
    "$runner" "$goal" --buffer "buf=$size" --reps "$reps" --expect bcast 2>"$work/goal-$m.err" || rc=$?
  moved=$(($(link_bytes) - before))
  sed 's/^/#   /' "$work/goal-$m.out"
  echo "# $m: GOAL job $((SECONDS - t0)) s (exit $rc); switch links carried $moved bytes"
  if [ "$(grep -c '^expect .*: buf is' "$work/goal-$m.out" || true)" = "$reps" ] && { [ "$rc" = 0 ] || grep -q 'finalize-hang' "$work/goal-$m.err"; } &&
     [ "$moved" -ge $((size * reps)) ]; then
    hang=""
    grep -q 'switched.sh: finalize-hang' "$work/goal-$m.err" && hang=" (MPI_Finalize did not return: ended after the last line)"
    ok "goal $m: binomial-bcast of $size bytes on $nh ranks, $reps runs as expected, $moved bytes over the switch links$hang"
  else
    bad "goal $m: exit $rc; stderr:"
    tail -n 15 "$work/goal-$m.err" | sed 's/^/#   /'
  fi
done

"$SW" down
trap - EXIT
rm -rf "$work"
if "$SW" check; then ok "down: nothing left"; else bad "down: something left"; fi
echo "# took $SECONDS s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
