#!/usr/bin/env bash
# The self-healing faults on the emulated cluster (bench/cluster.sh, instance BENCH_CLUSTER, 3 by
# default): 4 hosts of 1 rank at --rate (default 1gbit), int_heal (c-tests: broadcasts of 1 B ..
# 1 MiB from every root and barriers, every byte checked) preloaded with mpicast, and a fault on
# ONE host only (host 3, rank 2), in an nftables table of this script's own, inet mpicast_h16,
# inside host 3's namespace, that drops multicast UDP to MPICAST_GROUP (239.254.117.0/24) on
# the ports of MPICAST_PORT (26700-26799) on its input:
#
#   none     no fault (the figures of all, loss30 and restore are compared with)
#   hostmpi  no fault and no mpicast (LD_PRELOAD unset): the host MPI alone, which the
#            communicators of all and restore move to
#   all      every datagram dropped from 4 s after int_heal's "ready" (its 100th operation):
#            the communicator must move to the host MPI, with one message
#   loss30   30 % of them dropped from 4 s after "ready": repairs, every operation completes
#   restore  every datagram dropped from 4 s to 7 s after "ready": the host MPI, then back to
#            multicast
#   jumbo    no fault, every host's interface and every bridge port at MTU 9000 (the figures
#            of big and mtu are compared with)
#   big      as jumbo, but datagrams longer than 1500 bytes (IP length) dropped at host 3 from
#            the start: the setup probe must step down to 1472-byte datagrams, with no
#            fallback. (At MTU 1500 the library sends nothing longer: no fault at all.)
#   mtu      as jumbo, but host 3's bridge port at MTU 1500 (a switch port with a smaller MTU
#            than the hosts'): the bridge drops the larger frames both ways, without a word.
#            The hosts' unicast route to the subnet gets MTU 1500 in jumbo, big and mtu, so that TCP
#            (the host MPI's, the daemons') does not fall into the same black hole (the bridge
#            sends no ICMP): only multicast, routed by 224.0.0.0/4 at the interface's MTU,
#            meets it. The setup probe must step down, with no fallback. (No rule: no count
#            of dropped datagrams.)
#
#   heal_cluster.sh [--mpi openmpi|mpich|both] [--reps R] [--seconds S] [--rate RATE]
#                   [--no-doctor] [CASE...] [OUT]
#   heal_cluster.sh --summarize OUT     only (re)writes OUT/summary.md from OUT/summary.tsv
#
# Cases run interleaved: for each repetition, each case, each MPI. Each job: int_heal
# --seconds S (default 12) --seed 40, MPICAST_STATS=1, MPICAST_TIMEOUT_MS=10000,
# MPICAST_MIN_BYTES=0, bounded by `cluster.sh run --timeout`; MPICH's known finalize hang
# (bench/jobrun.sh) is ended 15 s after "done:" and counted as completed, with a note.
# Every output line is stamped with the wall clock as it arrives here (the job's stdout and
# stderr separately), which gives:
#   time to heal  from the moment the rule was put in to the first line of rank 0's message
#                 that the communicator moved (all, restore); for restore also from the
#                 rule's removal to the message of the return
#   ms per op     int_heal's "second K: N operations" lines: 1000 / N over the seconds that
#                 ended before the rule (before), and over those that began after the heal
#                 message, or 1 s after the rule where there is none (after); for restore, also
#                 over those that began after the return (back). Cases with the fault from the
#                 start: over the whole job (second 0, the setup, left out). Operations are one
#                 drawn sequence (the same seed) of sizes 1 B .. 1 MiB, barriers among them.
# Then, with Open MPI and unless --no-doctor, `mpicast doctor -n 4` under each fault that is
# in force for a whole run (big, all, loss30, mtu), on the same group range and ports, must
# agree with the library: big and mtu a path-MTU problem (exit 1), all that rank 2 hears no
# multicast from the other hosts (exit 1), loss30 that mpicast repairs what is lost (exit 0).
#
# Writes OUT (default build/bench/heal-cluster-<UTC time>): jobs/<case>-<mpi>-<rep>.{out,err}
# (stamped), doctor-<case>.txt and doctor.tsv, summary.tsv (a row per job) and summary.md (a row
# per case and MPI: every repetition's time to heal, medians of ms per op and of the ratio
# after/before of each job). Exit 0 when every check passed.
# Needs root, nft, the cluster's tools, build/<mpi>/lib/libmpicast.so and build/<mpi>/bin/mpicast
# (make lib-openmpi, make lib-mpich). The table is deleted, and the cluster taken down, on
# any exit (also on error or interrupt). Nothing here touches the machine's own interfaces:
# everything is inside the cluster's namespaces and on its bridge.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
export BENCH_CLUSTER=${BENCH_CLUSTER:-3}
K=$BENCH_CLUSTER
CL=$HERE/cluster.sh
HOSTS=4
BAD=3
NS_PREFIX=mpicast-c${K}h BRIDGE=mpicast-c${K}br
[ "$K" != 0 ] || NS_PREFIX=mpicast-h BRIDGE=mpicast-br
NS=$NS_PREFIX$BAD
NET=10.77.$K
TABLE="inet mpicast_h16"
GROUP_NET=239.254.117.0/24
PORTS=26700-26799
ON_AFTER=4 OFF_AFTER=7

# summarize OUT: OUT/summary.md from OUT/summary.tsv (and OUT/doctor.tsv when there is one).
summarize() {
  python3 - "$1" <<'PY'
import csv, statistics, sys, os
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "summary.tsv")), delimiter="\t"))
def num(v):
    try:
        return float(v)
    except ValueError:
        return None
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def f(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"
order = []
for r in rows:
    k = (r["case"], r["mpi"])
    if k not in order:
        order.append(k)
lines = ["| case | MPI | jobs | exit 0, all correct | time to heal (ms), each job | back (ms) after the rule went | ms/op before (median) | ms/op after (median) | after/before (median) | ms/op back (median) | rank 0: repairs (median) | heal_host / heal_step / heal_return | load (1 min) |",
         "| --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
for k in order:
    rs = [r for r in rows if (r["case"], r["mpi"]) == k]
    ok = sum(1 for r in rs if r["exit"] == "0" and r["correct"] == "yes")
    hangs = sum(1 for r in rs if r["note"])
    heal = ", ".join(r["heal_ms"] for r in rs)
    back = ", ".join(r["back_ms"] for r in rs)
    ratios = [num(r["ms_op_after"]) / num(r["ms_op_before"]) for r in rs
              if num(r["ms_op_after"]) and num(r["ms_op_before"])]
    hs = ", ".join(f'{r["heal_host"]}/{r["heal_step"]}/{r["heal_return"]}' for r in rs)
    load = ", ".join(r["load"].split()[0] for r in rs)
    okt = f"{ok} of {len(rs)}" + (f" ({hangs} finalize hang(s) of the host MPI after done:)" if hangs else "")
    lines.append(f"| {k[0]} | {k[1]} | {len(rs)} | {okt} | {heal} | {back} | "
                 f"{f(med(num(r['ms_op_before']) for r in rs))} | {f(med(num(r['ms_op_after']) for r in rs))} | "
                 f"{f(med(ratios))} | {f(med(num(r['ms_op_back']) for r in rs))} | "
                 f"{f(med(num(r['repairs']) for r in rs), 0)} | {hs} | {load} |")
d = os.path.join(out, "doctor.tsv")
if os.path.exists(d):
    lines += ["", "| fault | `mpicast doctor -n 4` exit | wanted | agrees with the library |", "| --- | ---: | ---: | --- |"]
    for r in csv.DictReader(open(d), delimiter="\t"):
        lines.append(f'| {r["case"]} | {r["exit"]} | {r["wanted"]} | {r["agrees"]} |')
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
PY
}
if [ "${1:-}" = --summarize ]; then
  [ $# = 2 ] || { echo "heal_cluster.sh: --summarize OUT" >&2; exit 2; }
  summarize "$2"
  cat "$2/summary.md"
  exit 0
fi

mpis=(openmpi mpich)
reps=1 secs=12 rate=1gbit doctor=1
cases=()
OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --mpi) case $2 in both) mpis=(openmpi mpich) ;; *) mpis=("$2") ;; esac; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-doctor) doctor=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;;
    none | hostmpi | big | all | loss30 | restore | jumbo | mtu) cases+=("$1"); shift ;;
    -*) echo "heal_cluster.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(none hostmpi all loss30 restore jumbo big mtu)
[[ "$reps" =~ ^[1-9]$ ]] || { echo "heal_cluster.sh: --reps 1..9" >&2; exit 2; }
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -ge $((OFF_AFTER + 4)) ] && [ "$secs" -le 60 ] ||
  { echo "heal_cluster.sh: --seconds $((OFF_AFTER + 4))..60" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "heal_cluster.sh: needs root (network namespaces, nft)" >&2; exit 1; }
OUT=${OUT:-$TOP/build/bench/heal-cluster-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/jobs"

for m in "${mpis[@]}"; do
  [ -e "$TOP/build/$m/lib/libmpicast.so" ] && [ -x "$TOP/build/$m/bin/mpicast" ] ||
    { echo "heal_cluster.sh: build/$m/lib/libmpicast.so or build/$m/bin/mpicast missing (make lib-$m)" >&2; exit 1; }
done

job=""
rule_off() { ip netns exec "$NS" nft delete table $TABLE 2>/dev/null || true; }
cleanup() {
  local rc=$?
  [ -z "$job" ] || kill -TERM "$job" 2>/dev/null || true
  rule_off
  "$CL" down >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# rule_on MATCH: drop the multicast UDP of our group range and ports arriving at host 3 (and
# matching MATCH too), counted.
rule_on() {
  rule_off
  ip netns exec "$NS" nft -f - <<NFT
table $TABLE {
  counter dropped {}
  chain input {
    type filter hook input priority -20; policy accept;
    ip daddr $GROUP_NET udp dport $PORTS $1 counter name "dropped" drop
  }
}
NFT
}
dropped() { { ip netns exec "$NS" nft list counter $TABLE dropped 2>/dev/null || true; } | sed -n 's/.*packets \([0-9]*\).*/\1/p'; }

# mtu_set JUMBO: every host's mpicast0 and every bridge port at 9000 (1), or at 1500 (0);
# with 9000, the hosts' route to the subnet at 1500 (see the head).
mtu_set() {
  local i mtu=1500
  [ "$1" = 1 ] && mtu=9000
  for i in $(seq 1 $HOSTS); do
    ip link set "$NS_PREFIX$i" mtu $mtu
    ip netns exec "$NS_PREFIX$i" ip link set mpicast0 mtu $mtu
    if [ "$1" = 1 ]; then
      ip netns exec "$NS_PREFIX$i" ip route replace "$NET.0/24" dev mpicast0 proto kernel scope link src "$NET.$i" mtu 1500
    else
      ip netns exec "$NS_PREFIX$i" ip route replace "$NET.0/24" dev mpicast0 proto kernel scope link src "$NET.$i"
    fi
  done
}
port_mtu() { ip link set "$NS_PREFIX$BAD" mtu "$1"; }

jumbo_now=0
setup_for() { # CASE: the cluster's MTUs as the case wants them
  local want=0
  case $1 in jumbo | big | mtu) want=1 ;; esac
  if [ "$want" != "$jumbo_now" ]; then mtu_set "$want"; jumbo_now=$want; fi
  [ "$want" = 0 ] || { if [ "$1" = mtu ]; then port_mtu 1500; else port_mtu 9000; fi; }
}

stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }

prog_of() { echo "$OUT/int_heal.$1"; }
for m in "${mpis[@]}"; do
  "mpicc.$m" -O2 -Wall -Wextra -I "$TOP/c-tests/src" -I "$TOP/include" -o "$(prog_of "$m")" \
    "$TOP/c-tests/src/int_heal.c" "$TOP/c-tests/src/common.c" -ldl -lpthread -lm
done

failures=0
fail() { echo "heal_cluster.sh: FAIL: $*" >&2; failures=$((failures + 1)); }
field() { sed -n "s/.*[ :]$2=\([0-9][0-9]*\).*/\1/p" <<<"$1"; }
# sum_field KEY: the counter KEY of the stats lines of the job's stderr (MPICAST_STATS=1: rank 0's),
# summed.
sum_field() { { grep -o " $1=[0-9]*" "$E" || true; } | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }'; }
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%d", (a - b) * 1000 }'; }
# per_op FROM TO: mean ms per operation over the "second K" lines (K >= 1) whose second lies
# within [FROM, TO] (wall clock; "-" for no bound).
per_op() {
  awk -v from="$1" -v to="$2" '
    $2 == "second" {
      k = $3 + 0; end = $1 + 0; n = $4 + 0
      if (k < 1 || n <= 0) next
      if (from != "-" && end - 1 < from) next
      if (to != "-" && end > to) next
      secs++; ops += n
    }
    END { if (ops > 0) printf "%.3f", secs * 1000 / ops; else print "-" }' "$O"
}

printf 'case\tmpi\trep\texit\tcorrect\tdropped\theal_ms\tback_ms\tms_op_before\tms_op_after\tms_op_back\tops\trepairs\tunicast\tfallbacks\theal_host\theal_step\theal_return\tload\tnote\n' >"$OUT/summary.tsv"

run_case() { # CASE MPI REP
  local c=$1 mpi=$2 rep=$3 base on="" off="" rc=0 note=""
  base=$OUT/jobs/$c-$mpi-$rep
  O=$base.out E=$base.err
  local raw=$base.raw
  setup_for "$c"
  rule_off
  case $c in
    big) rule_on "meta length > 1500"; on=$EPOCHREALTIME ;;
  esac
  : >"$raw"
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  local pre=(LD_PRELOAD="$TOP/build/$mpi/lib/libmpicast.so")
  [ "$c" != hostmpi ] || pre=(-u LD_PRELOAD)
  env "${pre[@]}" MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS \
    MPICAST_STATS=1 MPICAST_TIMEOUT_MS=10000 MPICAST_MIN_BYTES=0 \
    "$CL" run --mpi "$mpi" --timeout $((secs + 90)) --out "$raw" --done-marker "done:" --grace 15 \
    -- "$(prog_of "$mpi")" --seconds "$secs" --seed 40 2> >(stamp >"$E") &
  job=$!
  tail -n +1 -F --pid="$job" "$raw" 2>/dev/null | stamp >"$O" &
  local tailer=$!
  case $c in
    all | loss30 | restore)
      local t=0
      until grep -q '^ready:' "$raw" 2>/dev/null; do
        sleep 0.05; t=$((t + 1))
        [ "$t" -lt 1200 ] && kill -0 "$job" 2>/dev/null || break
      done
      sleep "$ON_AFTER"
      case $c in
        loss30) rule_on "numgen random mod 100 < 30" ;;
        *) rule_on "" ;;
      esac
      on=$EPOCHREALTIME
      if [ "$c" = restore ]; then
        sleep $((OFF_AFTER - ON_AFTER))
        off=$EPOCHREALTIME
        n_drop=$(dropped)
        rule_off
      fi
      ;;
  esac
  wait "$job" || rc=$?
  job=""
  wait "$tailer" 2>/dev/null || true
  sleep 0.3 # the stamper of stderr
  [ -n "$off" ] || n_drop=$(dropped)
  rule_off
  rm -f "$raw"
  grep -q "finalize-hang" "$E" && note="finalize hang of the host MPI after done: (ended 15 s later)"
  local correct=no
  grep -q ' done: .* all correct' "$O" && correct=yes
  [ "$rc" = 0 ] || fail "$c/$mpi/$rep: exit $rc"
  [ "$correct" = yes ] || fail "$c/$mpi/$rep: no 'all correct'"
  local line0
  line0=$(grep -E ' mpicast: stats: rank=0 ' "$E" | tail -n 1 | cut -d' ' -f2- || true)
  [ -n "$line0" ] || [ "$c" = hostmpi ] || fail "$c/$mpi/$rep: no stats line of rank 0"
  local hh hs hr fb
  hh=$(field "$line0" heal_host) hs=$(field "$line0" heal_step) hr=$(field "$line0" heal_return)
  fb=$(field "$line0" fallbacks)
  local moved back heal="-" backms="-" before after back_op="-"
  moved=$(grep -m1 -E 'multicast (datagrams of [0-9]+ bytes )?stopped reaching' "$E" | cut -d' ' -f1 || true)
  back=$(grep -m1 'reaches every rank again' "$E" | cut -d' ' -f1 || true)
  [ -z "$on" ] || [ -z "$moved" ] || heal=$(ms_between "$moved" "$on")
  [ -z "$off" ] || [ -z "$back" ] || backms=$(ms_between "$back" "$off")
  case $c in
    none | hostmpi | big | jumbo | mtu)
      before=$(per_op - -) after="-"
      ;;
    *)
      before=$(per_op - "$on")
      local from=$moved
      [ -n "$from" ] || from=$(awk -v a="$on" 'BEGIN { printf "%.6f", a + 1 }')
      if [ "$c" = restore ]; then
        after=$(per_op "$from" "$off")
        [ -z "$back" ] || back_op=$(per_op "$back" -)
      else
        after=$(per_op "$from" -)
      fi
      ;;
  esac
  local ops
  ops=$(grep -o ' done: [0-9]* operations' "$O" | awk '{ print $2 }' || true)
  # What each case must show.
  local nmsg
  nmsg=$(grep -c -E 'multicast (datagrams of [0-9]+ bytes )?stopped reaching' "$E" || true)
  case $c in
    none | jumbo)
      [ "${fb:-1}" = 0 ] && [ "${hh:-1}" = 0 ] || fail "$c/$mpi/$rep: a fallback or move without a fault: $line0"
      ;;
    big | mtu)
      grep -q 'do not reach every rank (missing at .*, those of 1472 bytes do' "$E" ||
        fail "$c/$mpi/$rep: no setup message stepping down to 1472-byte datagrams"
      [ "${fb:-1}" = 0 ] && [ "${hh:-1}" = 0 ] || fail "$c/$mpi/$rep: the host MPI instead of smaller datagrams: $line0"
      [ "$(field "$line0" bcast_mcast)" -gt 0 ] || fail "$c/$mpi/$rep: nothing by multicast: $line0"
      ;;
    all)
      [ "${hh:-0}" -ge 1 ] || fail "$c/$mpi/$rep: no move to the host MPI: $line0"
      [ "${hr:-1}" = 0 ] || fail "$c/$mpi/$rep: a return while multicast is dropped: $line0"
      [ "$nmsg" = 1 ] || fail "$c/$mpi/$rep: $nmsg messages that the communicator moved, not one"
      ;;
    loss30)
      [ "$(sum_field repairs)" -gt 0 ] || fail "$c/$mpi/$rep: no repairs"
      ;;
    restore)
      [ "${hh:-0}" -ge 1 ] || fail "$c/$mpi/$rep: no move to the host MPI: $line0"
      [ "${hr:-0}" -ge 1 ] || fail "$c/$mpi/$rep: no return to multicast: $line0"
      ;;
  esac
  case $c in
    all | restore)
      [ "$heal" != - ] || fail "$c/$mpi/$rep: no message that the communicator moved"
      [ "$heal" = - ] || [ "$heal" -lt 5000 ] || fail "$c/$mpi/$rep: healing took $heal ms"
      ;;
  esac
  case $c in none | hostmpi | jumbo | mtu) ;; *) [ "${n_drop:-0}" -gt 0 ] || fail "$c/$mpi/$rep: the rule dropped nothing" ;; esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$c" "$mpi" "$rep" "$rc" "$correct" "${n_drop:--}" "$heal" "$backms" "$before" "$after" "$back_op" \
    "${ops:--}" "$(sum_field repairs)" "$(sum_field unicast)" "${fb:--}" "${hh:--}" "${hs:--}" "${hr:--}" \
    "$load" "$note" >>"$OUT/summary.tsv"
  echo "heal_cluster.sh: $c/$mpi/$rep: exit $rc, correct $correct, dropped ${n_drop:--}, heal $heal ms, back $backms ms, ms/op before $before after $after back $back_op; $line0${note:+; $note}" >&2
  n_drop=""
}

# doctor CASE WANT_RC PATTERN...: `mpicast doctor -n 4` under the case's fault, Open MPI.
doctor_case() {
  local c=$1 want=$2 rc=0 p hf=$OUT/hostfile d=$OUT/doctor-$1.txt
  shift 2
  setup_for "$c"
  rule_off
  case $c in
    big) rule_on "meta length > 1500" ;;
    all) rule_on "" ;;
    loss30) rule_on "numgen random mod 100 < 30" ;;
  esac
  local envs
  mapfile -t envs < <("$CL" mpi-env --mpi openmpi "$hf")
  env "${envs[@]}" MPICAST_GROUP=$GROUP_NET MPICAST_PORT=$PORTS \
    timeout -k 10 200 "$TOP/build/openmpi/bin/mpicast" doctor -n $HOSTS --mpi openmpi --hostfile "$hf" \
    --timeout 90 >"$d" 2>&1 || rc=$?
  rule_off
  "$CL" reap >/dev/null 2>&1 || true
  local ok=yes
  [ "$rc" = "$want" ] || { fail "doctor/$c: exit $rc, not $want"; ok=no; }
  for p in "$@"; do
    grep -q -E -- "$p" "$d" || { fail "doctor/$c: did not say /$p/"; ok=no; }
  done
  echo "heal_cluster.sh: doctor/$c: exit $rc (wanted $want), agrees: $ok" >&2
  printf '%s\t%s\t%s\t%s\n' "$c" "$rc" "$want" "$ok" >>"$OUT/doctor.tsv"
}

{
  echo "# heal_cluster.sh $(date -u +%Y-%m-%dT%H:%MZ): ${cases[*]} x ${mpis[*]} x $reps, $HOSTS hosts of 1 rank, $rate, --seconds $secs"
  echo "# uptime at the start: $(uptime)"
  echo "# commit $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo '?')"
} >"$OUT/head.txt"
cat "$OUT/head.txt" >&2

"$CL" up $HOSTS --rate "$rate" >/dev/null
for rep in $(seq 1 "$reps"); do
  for c in "${cases[@]}"; do
    for mpi in "${mpis[@]}"; do
      run_case "$c" "$mpi" "$rep"
    done
  done
done

if [ "$doctor" = 1 ]; then
  printf 'case\texit\twanted\tagrees\n' >"$OUT/doctor.tsv"
  for c in "${cases[@]}"; do
    case $c in
      big | mtu) doctor_case "$c" 1 '^problem: datagrams of [0-9]+ bytes .*do not get through where small ones do' ;;
      all) doctor_case all 1 "^problem: rank 2 \\(.*\\[$NET.$BAD\\]\\) hears no multicast from the other hosts" ;;
      loss30) doctor_case loss30 0 'mpicast repairs what is lost' ;;
    esac
  done
fi
echo "# uptime at the end: $(uptime)" >>"$OUT/head.txt"
summarize "$OUT"

if [ "$failures" = 0 ]; then
  echo "heal_cluster.sh: all passed; results in $OUT" >&2
else
  echo "heal_cluster.sh: $failures check(s) failed; results in $OUT" >&2
  exit 1
fi
