#!/usr/bin/env bash
# `mpicast goal run` end to end on 4 ranks of one MPI flavour, on loopback:
#
#   c-tests/goal_run_test.sh [openmpi|mpich]       (default: $TC_FLAVOUR)
#
# Generates a binomial broadcast (4096 B) and a dissemination allreduce (64 B) with
# `mpicast goal gen`, runs both (and the broadcast as a binary schedule, and under
# MPICAST_PROGRESS=thread) through `mpicast goal run ... --check` and requires success, one
# nonzero time per run and `buf` identical on every rank; likewise the scout-tree multicast
# broadcast and the multicast barrier, whose datagrams rank 0 must count; three `mmcast-*`
# programs (every rank multicasting to all others on two switches); then requires the
# failures: an
# unbound buffer (through the CLI and through mpicast-goal-run itself: exit 2 and a message
# naming the buffer), a wrong rank count, a --check that must fail, an invalid program.
#
# Finds: the CLI in $MPICAST_CLI, else target/{cli,<flavour>,}/release/mpicast; the runner in
# $MPICAST_GOAL_RUNNER, else build/<flavour>/bin/mpicast-goal-run (the CLI's own fallback),
# else compiles tools/goal_run.c into the work directory. Work directory: $TC_WORK, else a
# temporary one. Exit 0 pass, 1 fail, 77 skip (no CLI, no library, no launcher).
set -euo pipefail

# TOP, FLAVOUR, MPICC, LAUNCHER; loopback only; skip, fail, note; WORK.
. "$(dirname "${BASH_SOURCE[0]}")/script-lib.sh"
work_dir

find_cli "cargo build --release --bin mpicast, or MPICAST_CLI" \
  "$TOP/target/cli/release/mpicast" "$TOP/target/$FLAVOUR/release/mpicast" \
  "$TOP/target/release/mpicast"
need_lib
note "CLI $CLI"

# The runner: the CLI finds build/<flavour>/bin/mpicast-goal-run from $TOP by itself.
cd "$TOP"
runner_or_compile mpicast-goal-run MPICAST_GOAL_RUNNER tools/goal_run.c
note "runner ${MPICAST_GOAL_RUNNER:-build/$FLAVOUR/bin/mpicast-goal-run}"

# run NAME EXPECTED_STATUS COMMAND... : output in $WORK/NAME.out, status checked.
run() {
  local name=$1 want=$2 rc=0
  shift 2
  timeout -k 10 150 "$@" >"$WORK/$name.out" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "---- $name (exit $rc, wanted $want): $*"
    cat "$WORK/$name.out"
    fail "$name: exit status $rc, wanted $want"
  fi
  note "$name: exit $rc as wanted"
}

# expect NAME REGEX [COUNT]: at least COUNT (default 1) lines of NAME's output match.
expect() {
  local n
  n=$(grep -cE -- "$2" "$WORK/$1.out" || true)
  if [ "$n" -lt "${3:-1}" ]; then
    echo "---- $1"
    cat "$WORK/$1.out"
    fail "$1: wanted ${3:-1} line(s) matching /$2/, found $n"
  fi
}

# Every `run i/R: T s` line must carry a positive time: R lines, none of them 0.000000000.
times_ok() {
  local name=$1 reps=$2
  expect "$name" "^run [0-9]+/$reps: [0-9]+\.[0-9]{9} s \(slowest of 4 ranks\)$" "$reps"
  if grep -E "^run [0-9]+/$reps: 0\.0{9} s" "$WORK/$name.out"; then
    fail "$name: a run took no time at all"
  fi
}

"$CLI" goal gen binomial-bcast --ranks 4 --size 4096 -o "$WORK/bcast.goal"
"$CLI" goal gen dissemination-allreduce --ranks 4 --size 64 -o "$WORK/allreduce.goal"
"$CLI" goal asm "$WORK/bcast.goal" -o "$WORK/bcast.bin"
[ -s "$WORK/bcast.goal" ] && [ -s "$WORK/allreduce.goal" ] && [ -s "$WORK/bcast.bin" ] \
  || fail "mpicast goal gen/asm wrote nothing"

G=("$CLI" goal run -n 4 --mpi "$FLAVOUR")

# Successes.
run bcast 0 "${G[@]}" "$WORK/bcast.goal" --buffer buf=4096 --reps 3 --check
times_ok bcast 3
expect bcast '^check [0-9]/3: buf identical on 4 ranks' 3

run allreduce 0 "${G[@]}" "$WORK/allreduce.goal" --buffer buf=64 --buffer tmp=64 --reps 2 --check
times_ok allreduce 2
expect allreduce '^check [0-9]/2: buf identical on 4 ranks' 2

# Seed 003's multiple multicasts (goal gen mmcast-*) on a two-switch network: every rank
# multicasts its slice of `buf` to all others, so every rank ends with every slice.
printf 'switch s0 s1\nlink s0 s1 1Gbit\nhost h0 s0\nhost h1 s0\nhost h2 s1\nhost h3 s1\nrouting updown\n' \
  >"$WORK/two.net"
for a in spcco sametree-cyclic random-binomial; do
  "$CLI" goal gen "mmcast-$a" --topology "$WORK/two.net" --size 1000 \
    --mcasts '0:1,2,3;1:0,2,3;2:0,1,3;3:0,1,2' -o "$WORK/mm-$a.goal"
  run "mmcast_$a" 0 "${G[@]}" "$WORK/mm-$a.goal" --buffer buf=4000 --reps 2 --check
  expect "mmcast_$a" '^check [0-9]/2: buf identical on 4 ranks' 2
done

run bcast_binary 0 "${G[@]}" "$WORK/bcast.bin" --buffer buf=4096 --check
times_ok bcast_binary 1
expect bcast_binary '^check 1/1: buf identical on 4 ranks'

run bcast_thread 0 env MPICAST_PROGRESS=thread "${G[@]}" "$WORK/bcast.goal" --buffer buf=4096 --reps 2 --check
times_ok bcast_thread 2
expect bcast_thread '^check [0-9]/2: buf identical on 4 ranks' 2

# Multicast actions (`mcast`, `mrecv`) through the multicast channel: seed 002's scout-tree
# broadcast and the multicast barrier as generated GOAL. MPICAST_TOPO=flat because all 4
# ranks share this host (else point-to-point carries them); rank 0's stats line proves the
# datagrams: 3 runs x 200000 bytes multicast, and a release datagram per barrier.
"$CLI" goal gen scout-tree-bcast --ranks 4 --size 200000 -o "$WORK/mcast.goal"
"$CLI" goal gen mcast-barrier --ranks 4 -o "$WORK/barrier.goal"
run mcast_bcast 0 env MPICAST_TOPO=flat MPICAST_STATS=1 "${G[@]}" "$WORK/mcast.goal" \
  --buffer buf=200000 --reps 3 --check
times_ok mcast_bcast 3
expect mcast_bcast '^check [0-9]/3: buf identical on 4 ranks' 3
expect mcast_bcast 'stats: rank=0 .* bytes_mcast=600000 dgrams_sent=[1-9]'
run mcast_barrier 0 env MPICAST_TOPO=flat MPICAST_STATS=1 "${G[@]}" "$WORK/barrier.goal" --reps 3
times_ok mcast_barrier 3
expect mcast_barrier 'stats: rank=0 .* dgrams_sent=([3-9]|[1-9][0-9]+) '

# A sliding window (MPICAST_GOAL_WINDOW, Theorem 3): the same broadcast and allreduce, data
# checked, and the library says it used the window.
run window 0 env MPICAST_GOAL_WINDOW=2 MPICAST_VERBOSE=1 "${G[@]}" "$WORK/allreduce.goal" \
  --buffer buf=64 --buffer tmp=64 --reps 2 --check
expect window '^check [0-9]/2: buf identical on 4 ranks' 2
expect window 'GOAL run of [0-9]+ actions through a sliding window of 2'
# Theorem 4: `goal bound` adds a dummy after every action; the result runs (window 1), checked.
"$CLI" goal bound "$WORK/bcast.goal" --every 1 -o "$WORK/bcast-bound.goal"
grep -q 'calc 0;' "$WORK/bcast-bound.goal" || fail "goal bound added no dummy action"
run window_bound 0 env MPICAST_GOAL_WINDOW=1 "${G[@]}" "$WORK/bcast-bound.goal" \
  --buffer buf=4096 --reps 2 --check
expect window_bound '^check [0-9]/2: buf identical on 4 ranks' 2

# A binary schedule with the window is streamed from its mapped file, never loaded whole.
"$CLI" goal asm "$WORK/allreduce.goal" -o "$WORK/allreduce.bin"
run window_stream 0 env MPICAST_GOAL_WINDOW=2 MPICAST_VERBOSE=1 "${G[@]}" "$WORK/allreduce.bin" \
  --buffer buf=64 --buffer tmp=64 --reps 3 --check
expect window_stream '^check [0-9]/3: buf identical on 4 ranks' 3
expect window_stream 'streamed from a mapped file through a sliding window of 2'
# ... which needs every action before its dependents: a valid program whose rank 0 lists a
# prerequisite after its dependent is refused when streamed (and runs when loaded whole).
printf 'num_ranks 4;\nrank #0 { a: calc 1; b: calc 2; requ a -> b; }\n' >"$WORK/backward.goal"
"$CLI" goal asm "$WORK/backward.goal" -o "$WORK/backward.bin"
run stream_order 1 env MPICAST_GOAL_WINDOW=2 "${G[@]}" "$WORK/backward.bin"
expect stream_order 'cannot load .*backward.bin: .*before its dependents'
run stream_whole 0 "${G[@]}" "$WORK/backward.bin"

# The environment: loopback added only when MPICAST_IFACE is unset.
run dry_unset 0 env -u MPICAST_IFACE -u MPICAST_TTL "${G[@]}" "$WORK/bcast.goal" --buffer buf=4096 --dry-run
expect dry_unset "^MPICAST_IFACE=lo MPICAST_TTL=0 .*$LAUNCHER .*mpicast-goal-run .*bcast.goal --buffer buf=4096$"
run dry_set 0 "${G[@]}" "$WORK/bcast.goal" --buffer buf=4096 --dry-run
if grep -q 'MPICAST_IFACE=' "$WORK/dry_set.out"; then
  fail "dry_set: MPICAST_IFACE was set by the caller but the launch sets it again"
fi
expect dry_set "$LAUNCHER .*-n 4 .*mpicast-goal-run"

# Failures. An unbound buffer, caught by the CLI before launching: exit 2, names it and its size.
run unbound_cli 2 "${G[@]}" "$WORK/allreduce.goal" --buffer buf=64
expect unbound_cli 'buffer `tmp` is used by the program but not given: add --buffer tmp=64'
# ... and by the runner itself when launched directly: exit 2, the executor's message.
RUNNER=${MPICAST_GOAL_RUNNER:-$TOP/build/$FLAVOUR/bin/mpicast-goal-run}
if [ "$FLAVOUR" = openmpi ]; then
  L=("$LAUNCHER" --oversubscribe -n 4 --mca mpi_yield_when_idle 1)
else
  L=("$LAUNCHER" -n 4)
fi
run unbound_runner 2 "${L[@]}" "$RUNNER" "$WORK/allreduce.goal" --buffer buf=64
expect unbound_runner 'cannot start .*allreduce.goal: .*buffer `tmp` .*not bound'
expect unbound_runner 'give every buffer the program names with --buffer NAME=SIZE'
# A buffer smaller than the program's references: the CLI's check refuses it (exit 1).
run small_buffer 1 "${G[@]}" "$WORK/bcast.goal" --buffer buf=100
expect small_buffer 'bytes 0\.\.4096 of buffer `buf` are outside its 100 bytes'
# The wrong number of ranks.
run wrong_ranks 2 "$CLI" goal run -n 3 --mpi "$FLAVOUR" "$WORK/bcast.goal" --buffer buf=4096
expect wrong_ranks 'describes 4 ranks, but -n 3'
# An invalid program: exit 1 with file:line:col.
printf 'num_ranks 4;\nrank #0 { send 0,8 to 1; }\n' >"$WORK/bad.goal"
run invalid 1 "${G[@]}" "$WORK/bad.goal" --buffer buf=8
expect invalid 'bad.goal:2:[0-9]+: error .*no matching receive'
# --check must be able to fail: only ranks 0 and 1 exchange, so ranks 2 and 3 keep their data.
printf 'num_ranks 4;\nrank #0 { send 0,8 to 1; }\nrank #1 { recv 0,8 from 0; }\n' >"$WORK/partial.goal"
run check_fails 3 "${G[@]}" "$WORK/partial.goal" --buffer buf=8 --check
expect check_fails 'buffer `buf` differs: rank 2 has'
# A runner that is not there.
run no_runner 1 env MPICAST_GOAL_RUNNER="$WORK/nonexistent" "${G[@]}" "$WORK/bcast.goal" --buffer buf=4096
expect no_runner 'MPICAST_GOAL_RUNNER=.*nonexistent is not a file'

echo "PASS: goal run ($FLAVOUR)"
