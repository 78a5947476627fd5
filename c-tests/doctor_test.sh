#!/usr/bin/env bash
# `mpicast doctor -n N` end to end on 3 ranks of one MPI flavour, on loopback:
#
#   c-tests/doctor_test.sh [openmpi|mpich]       (default: $TC_FLAVOUR)
#
# A healthy run: exit 0, every pair hears every datagram (small on both ports, full size,
# unicast), the verdict line taken out, the rate test and the querier watch reported; the
# same as JSON (parsed, every count checked); then the failures: an interface that does not
# exist (exit 1, the problem named with its fix, nothing sent), a setting the library would
# refuse (exit 1, the variable named), bad usage (exit 2), a runner that fails to launch.
#
# Finds the CLI as goal_run_test.sh does; the runner in $MPICAST_DOCTOR_RUNNER, else
# build/<flavour>/bin/mpicast-doctor-run (the CLI's own lookup), else compiles
# tools/doctor_run.c into the work directory. Exit 0 pass, 1 fail, 77 skip.
set -euo pipefail

# TOP, FLAVOUR, MPICC, LAUNCHER; loopback only; skip, fail, note; WORK.
. "$(dirname "${BASH_SOURCE[0]}")/script-lib.sh"
work_dir

find_cli "make lib, or MPICAST_CLI" "$TOP/build/$FLAVOUR/bin/mpicast" \
  "$TOP/target/cli/release/mpicast" "$TOP/target/$FLAVOUR/release/mpicast" \
  "$TOP/target/release/mpicast"
need_lib
note "CLI $CLI"

cd "$TOP"
runner_or_compile mpicast-doctor-run MPICAST_DOCTOR_RUNNER tools/doctor_run.c

# run NAME EXPECTED_STATUS COMMAND... : stdout in $WORK/NAME.out, stderr in NAME.err.
run() {
  local name=$1 want=$2 rc=0
  shift 2
  timeout -k 10 150 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "---- $name (exit $rc, wanted $want): $*"
    cat "$WORK/$name.out" "$WORK/$name.err"
    fail "$name: exit status $rc, wanted $want"
  fi
  note "$name: exit $rc as wanted"
}

# expect NAME FILE REGEX [COUNT]: at least COUNT (default 1) lines of NAME's FILE (out|err) match.
expect() {
  local n
  n=$(grep -cE -- "$3" "$WORK/$1.$2" || true)
  if [ "$n" -lt "${4:-1}" ]; then
    echo "---- $1.$2"
    cat "$WORK/$1.$2"
    fail "$1: wanted ${4:-1} line(s) of $2 matching /$3/, found $n"
  fi
}
refute() {
  if grep -qE -- "$3" "$WORK/$1.$2"; then
    cat "$WORK/$1.$2"
    fail "$1: $2 has a line matching /$3/"
  fi
}

M=(--mpi "$FLAVOUR")

run healthy 0 "$CLI" doctor -n 3 "${M[@]}"
expect healthy out '^mpicast doctor: 3 ranks on 1 host; test group 239\.255\.0\.1 ports 23000 and 23999, MPICAST_TTL=0$'
expect healthy out '^  interface +lo \(MPICAST_IFACE=lo\)'
# Small datagrams on both ports, full-size ones (65507 bytes on loopback), unicast.
expect healthy out '^    every pair: all 20 arrived$' 3
expect healthy out '^full-size multicast \(65507 bytes, port 23000'
expect healthy out '^    every pair: all 10 arrived$'
expect healthy out '^    highest rate without loss: [0-9]+ Mbit/s'
expect healthy out '^IGMP querier:$'
expect healthy out 'Multicast works between every pair of ranks\.$'
refute healthy out '^problem:|verdict'
expect healthy err '^mpicast doctor: loss by rate$'

run json 0 "$CLI" doctor -n 3 "${M[@]}" --json --count 7
python3 - "$WORK/json.out" <<'PY' || fail "json: the document does not say what it should"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 3 and d["problems"] == 0, d
assert d["ports"] == [23000, 23999] and d["ttl"] == 0
for rd in d["multicast"] + [d["full_size"]]:
    assert rd["sent"] == 7, rd
    for r in range(3):
        for s in range(3):
            assert rd["got"][r][s] == (0 if r == s else 7), (rd["what"], r, s, rd["got"])
assert d["ttl_retry"] is None
assert d["rates"]["steps"] and d["rates"]["loss_free_mbps"] > 0
u = d["unicast"]
assert all(u["got"][r][s] == u["sent"] for r in range(3) for s in range(3) if r != s), u
assert len(d["hosts"]) == 1 and d["hosts"][0]["ranks"] == [0, 1, 2]
assert d["hosts"][0]["facts"]["iface"]["name"] == "lo"
PY
note "json: every count as sent"

# No such interface: nothing can be sent; the problem and its fix are named, exit 1.
run noiface 1 env MPICAST_IFACE=nosuch0 "$CLI" doctor -n 2 "${M[@]}"
expect noiface out '^problem: .*MPICAST_IFACE=nosuch0 matches no interface'
expect noiface out '^problem: ranks 0, 1 \(.*\) could not join the test group'
expect noiface out 'Multicast does not work between every pair of ranks'

run badsetting 1 env MPICAST_TTL=abc "$CLI" doctor -n 2 "${M[@]}"
expect badsetting out 'the library would refuse the settings of ranks 0, 1: MPICAST_TTL=abc is invalid'

run usage 2 "$CLI" doctor -n 1
expect usage err 'at least 2 ranks'
run dry 0 "$CLI" doctor -n 4 "${M[@]}" --long=5 --dry-run
expect dry out "mpicast-doctor-run long=5\$"

run norunner 1 env MPICAST_DOCTOR_RUNNER=/nonexistent "$CLI" doctor -n 2 "${M[@]}"
expect norunner err 'MPICAST_DOCTOR_RUNNER=/nonexistent is not a file'

echo "PASS: mpicast doctor ($FLAVOUR)"
