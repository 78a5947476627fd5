# Sourced by heal.sh, heal_imcast.sh, heal_goal.sh and heal_udp.sh (after test-lib.sh): a job
# of HEAL_PROG (seed HEAL_SEED) on 4 ranks, preloaded, under an nft rule on lo's input that
# drops multicast UDP to GROUP_NET, ports PORTS, in table TABLE of the caller's own; the EXIT
# trap deletes the table whatever happens. The caller exports its settings, then calls `run`,
# or `root_path_cases` (the four cases of the tests whose roots move and come back).

need_nft

cleanup() { nft_clear "$TABLE"; }
bg=""
on_exit() {
  [ -z "$bg" ] || kill "$bg" 2>/dev/null || true
  cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
cleanup

# rule MATCH: drop multicast UDP on lo's input that matches MATCH too.
rule() { nft_lo_rules "$TABLE" "ip daddr $GROUP_NET udp dport $PORTS" "$1"; }
dropped() { nft_count "$TABLE" dropped; }

launch 4 preload

# run NAME MATCH ON_AT OFF_AT SECONDS: the job, with the rule on from ON_AT s to OFF_AT s
# after the program said it is ready (its communicators set up; OFF_AT "-": to the end);
# every output line stamped with the wall clock. Sets out (the output file) and line (rank
# 0's stats line), and fails unless the job ended well, said "all correct", and the rule
# dropped something.
run() {
  local name=$1 match=$2 on=$3 off=$4 secs=$5
  out=$TC_WORK/$name.out
  cleanup
  (
    wait_ready "$out"
    sleep "$on"
    rule "$match"
    echo "$EPOCHREALTIME" >"$TC_WORK/$name.on"
    if [ "$off" != - ]; then
      sleep $((off - on))
      echo "$EPOCHREALTIME dropped $(dropped)" >"$TC_WORK/$name.off"
      cleanup
    fi
  ) &
  bg=$!
  set +e
  timeout -k 10 $((secs + 60)) "${LAUNCH[@]}" "$TC_BINDIR/$HEAL_PROG" --seconds "$secs" --seed "$HEAL_SEED" 2>&1 \
    | while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$out"
  rc=${PIPESTATUS[0]}
  set -e
  wait "$bg" 2>/dev/null || true
  bg=""
  n=$(dropped)
  [ -f "$TC_WORK/$name.off" ] && n=$(cut -d' ' -f3 "$TC_WORK/$name.off")
  cleanup
  cat "$out"
  [ "$rc" = 0 ] || fail "$name: the job failed (exit $rc)"
  grep -q ' done: .* all correct' "$out" || fail "$name: no 'all correct'"
  [ "${n:-0}" -gt 0 ] || fail "$name: the rule dropped nothing"
  line=$(grep -E '^[0-9.]+ mpicast: stats: ' "$out" | tail -n 1 | cut -d' ' -f2- || true)
  [ -n "$line" ] || fail "$name: no stats line"
  note "$name: $n datagrams dropped; $line"
}

# since NAME STAMP: ms from the rule of case NAME to STAMP (a line's wall clock).
since() { awk -v a="$2" -v b="$(cat "$TC_WORK/$1.on")" 'BEGIN { printf "%d", (a - b) * 1000 }'; }

# doctor NAME MATCH RC PATTERN...: `mpicast doctor -n 3` under the rule MATCH (as `run` sets
# it, for the doctor's datagrams on the same group range and ports); it must exit RC and print
# a line matching each PATTERN (grep -E): its finding must agree with what the library did.
doctor() {
  local name=$1 match=$2 want=$3 cli=$TC_BUILD/bin/mpicast dout=$TC_WORK/doctor-$1.out rc=0 p
  shift 3
  [ -x "$cli" ] || fail "$name: no $cli (make lib builds it)"
  cleanup
  rule "$match"
  timeout -k 10 150 "$cli" doctor -n 3 --mpi "$TC_FLAVOUR" >"$dout" 2>&1 || rc=$?
  cleanup
  cat "$dout"
  [ "$rc" = "$want" ] || fail "$name: the doctor exited $rc, not $want"
  for p in "$@"; do
    grep -q -E -- "$p" "$dout" || fail "$name: the doctor did not say /$p/"
  done
  note "$name: the doctor agrees with the library"
}

# heal_time NAME: ms from the rule to the first message that a root moved: its next multicast
# of that size goes point-to-point.
heal_time() {
  local at
  at=$(grep -m1 -E "$MOVED" "$TC_WORK/$1.out" | cut -d' ' -f1)
  [ -n "$at" ] || { echo ""; return; }
  since "$1" "$at"
}

check_heal() { # NAME
  local first n
  first=$(heal_time "$1")
  [ -n "$first" ] || fail "$1: no message that a root moved"
  [ "$first" -lt 5000 ] || fail "$1: healing took $first ms (MPICAST_TIMEOUT_MS=$MPICAST_TIMEOUT_MS)"
  n=$(grep -c -E "$MOVED" "$out" || true)
  # Once per job (presence::say_first); two roots that move at the same moment may both say it.
  [ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "$1: $n messages that a root moved, not one per job"
  grep -q -E "$MOVED .*rank" "$out" || fail "$1: the message names no rank"
  note "$1: time to heal $first ms (rule on -> the first root's message; $n message(s))"
  echo "$HEAL_NAME: $TC_FLAVOUR $1 time_to_heal_ms=$first messages=$n"
}

# root_path_cases: the cases of a test whose roots move their multicasts to point-to-point
# and back (heal_imcast.sh, heal_goal.sh): HEAL_NAME names the test, MOVED and BACK are the
# first words of the messages that a root moved and came back, HEAL_RUN the run function
# (heal-lib's run, or one that checks more). HEAL_CASES="all restore" limits the cases.
root_path_cases() {
  local c cases off back
  cases=${HEAL_CASES:-big all loss30 restore}
  for c in $cases; do
    case $c in
      big)
        $HEAL_RUN big "meta length > 1500" 2 - 8
        [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "big: no unicast repair: $line"
        [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "big: rank 0 did not move: $line"
        check_heal big
        ;;
      all)
        $HEAL_RUN all "" 2 - 8
        [ "$(stat_field "$line" unicast)" -ge 1 ] || fail "all: no unicast repair: $line"
        [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "all: rank 0 did not move: $line"
        [ "$(stat_field "$line" heal_return)" = 0 ] || fail "all: a return while multicast is dropped: $line"
        check_heal all
        ;;
      loss30)
        $HEAL_RUN loss30 "numgen random mod 100 < 30" 2 - 6
        [ "$(stat_field "$line" repairs)" -gt 0 ] || fail "loss30: no repairs: $line"
        ;;
      restore)
        $HEAL_RUN restore "" 2 5 12
        [ "$(stat_field "$line" heal_host)" -ge 1 ] || fail "restore: rank 0 did not move: $line"
        [ "$(stat_field "$line" heal_return)" -ge 1 ] || fail "restore: no return to IP multicast: $line"
        grep -q "$BACK: back to IP multicast" "$out" || fail "restore: no message of the return"
        check_heal restore
        off=$(cut -d' ' -f1 "$TC_WORK/restore.off")
        back=$(grep -m1 "$BACK" "$out" | cut -d' ' -f1)
        note "restore: back to IP multicast $(awk -v a="$back" -v b="$off" 'BEGIN { printf "%d", (a - b) * 1000 }') ms after the rule went"
        ;;
      *) fail "unknown case $c" ;;
    esac
  done
  echo "$HEAL_NAME: ok"
}
