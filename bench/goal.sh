#!/usr/bin/env bash
# The GOAL executor benchmark (bench/goal_bench.c) for both MPIs, on loopback:
#
#   bench/goal.sh [--quick] [--out DIR] [--mpi openmpi|mpich]... [--force]
#
# Per flavour: builds build/<flavour>/bench/goal_bench against build/<flavour>/lib, checks
# that its broadcast is `mpicast goal gen binomial-bcast` (when an mpicast executable is
# found), then writes into DIR (default build/bench/goal-<UTC date-time>/):
#   bcast-<flavour>.csv            GOAL binomial broadcast vs the same by hand, 8 B .. 4 MiB, 4 ranks
#   overhead-<flavour>.csv         executor cost per `calc 0` action, K = 1, K/10, K, one rank
#   overlap-<flavour>-poll.csv     broadcast overlapped with computation, MPICAST_PROGRESS=poll
#   overlap-<flavour>-thread.csv   the same with MPICAST_PROGRESS=thread
#   <name>.log                     each run's stderr;  meta   command, date, machine, versions
#
# --quick: a correctness pass (3 reps, a few sizes), figures meaningless; allowed while another
# benchmark runs. Without it the script refuses to start while another benchmark of the
# repository runs (`pgrep -f 'bench/(full|run|cluster)\.sh'`; --force overrides), and it
# notes in `meta` whether one started during the run. Environment: GOAL_BENCH_REPS (bcast, default 100),
# GOAL_BENCH_K (default 10000), GOAL_BENCH_TESTS (MPICAST_Goal_test calls, default 100).
# Every run has MPICAST_IFACE=lo MPICAST_TTL=0.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

quick=0 force=0 out="" mpis=()
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --force) force=1; shift ;;
    --out) out=$2; shift 2 ;;
    --mpi) mpis+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "goal.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi mpich)

# Another benchmark of this repository (full.sh, or run.sh / cluster.sh started by hand).
busy_re='bench/(full|run|cluster)\.sh'
if [ "$quick" = 0 ] && [ "$force" = 0 ] && pgrep -f "$busy_re" >/dev/null; then
  echo "goal.sh: another benchmark is running ($(pgrep -af "$busy_re" | cut -c1-80 | tr '\n' ';')):" \
       "timings would be meaningless; wait for it, or use --quick for a correctness pass" >&2
  exit 1
fi

export MPICAST_IFACE=lo MPICAST_TTL=0
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset MPICAST_PROGRESS

if [ "$quick" = 1 ]; then
  reps=3 k=1000 tests=10
  bsizes=8,4096,1048576 osizes=65536
else
  reps=${GOAL_BENCH_REPS:-100} k=${GOAL_BENCH_K:-10000} tests=${GOAL_BENCH_TESTS:-100}
  bsizes=8,64,512,4096,32768,262144,1048576,4194304 osizes=65536,1048576,4194304
fi
out=${out:-build/bench/goal-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"

cli=""
for c in "${MPICAST_CLI:-}" target/cli/release/mpicast target/openmpi/release/mpicast \
         target/mpich/release/mpicast target/release/mpicast; do
  if [ -n "$c" ] && [ -x "$c" ]; then cli=$c; break; fi
done

{
  echo "command: $cmdline"
  echo "cwd: $TOP"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc: $(nproc)"
  echo "uname -r: $(uname -r)"
  echo "loadavg at start: $(cat /proc/loadavg)"
  echo "quick: $quick"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "other benchmark running at start: $(pgrep -f "$busy_re" >/dev/null && echo yes || echo no)"
  echo "env: MPICAST_IFACE=lo MPICAST_TTL=0"
  echo "parameters: reps=$reps k=$k tests=$tests bcast sizes=$bsizes overlap sizes=$osizes ranks=4"
} >"$out/meta"

failed=()
for f in "${mpis[@]}"; do
  case $f in
    openmpi) cc=mpicc.openmpi launch=(mpirun.openmpi --oversubscribe --mca mpi_yield_when_idle 1) ;;
    mpich) cc=mpicc.mpich launch=(mpiexec.mpich) ;;
    *) echo "goal.sh: unknown MPI $f" >&2; exit 2 ;;
  esac
  lib=build/$f/lib
  if [ ! -e "$lib/libmpicast.so" ] || ! command -v "$cc" >/dev/null; then
    echo "== $f: skipped ($lib/libmpicast.so or $cc missing)" | tee -a "$out/meta"
    continue
  fi
  echo "== $f"
  mkdir -p "build/$f/bench"
  exe=build/$f/bench/goal_bench
  "$cc" -O2 -Wall -Wextra -Werror -Iinclude bench/goal_bench.c -L"$TOP/$lib" -lmpicast \
    -Wl,-rpath,"$TOP/$lib" -o "$exe"
  echo "$f: $("$cc" -show 2>/dev/null | head -c 200 || true)" >>"$out/meta"
  echo "$f library: $(readlink -f "$lib/libmpicast.so") $(stat -c %y "$(readlink -f "$lib/libmpicast.so")")" >>"$out/meta"

  # job NAME NP ARGS...: the benchmark on NP ranks, CSV to NAME.csv, stderr to NAME.log.
  job() {
    local name=$1 np=$2
    shift 2
    if pgrep -f "$busy_re" >/dev/null; then busy_seen=1; fi
    echo "   $name: ${launch[*]} -n $np $exe $*"
    if ! timeout -k 10 900 "${launch[@]}" -n "$np" "$exe" "$@" >"$out/$name.csv" 2>"$out/$name.log"; then
      echo "   $name FAILED (see $out/$name.log)" >&2
      tail -n 20 "$out/$name.log" >&2
      failed+=("$name")
      return 0
    fi
    grep -v '^#' "$out/$name.csv" | column -s, -t | sed 's/^/     /'
  }

  if [ -n "$cli" ]; then
    "${launch[@]}" -n 4 "$exe" --part text --sizes 4096 >"$out/text-$f.goal" 2>"$out/text-$f.log"
    if diff <("$cli" goal gen binomial-bcast --ranks 4 --size 4096) \
            <("$cli" goal disasm "$out/text-$f.goal") >/dev/null; then
      echo "   the benchmark's broadcast is \`mpicast goal gen binomial-bcast\`"
      echo "$f: broadcast text = mpicast goal gen binomial-bcast (4 ranks): yes" >>"$out/meta"
    else
      echo "   the benchmark's broadcast differs from \`mpicast goal gen binomial-bcast\`" >&2
      failed+=("text-$f")
    fi
  fi

  job "bcast-$f" 4 --part bcast --sizes "$bsizes" --reps "$reps"
  job "overhead-$f" 1 --part overhead --k "$k" --reps "$([ "$quick" = 1 ] && echo 3 || echo 50)"
  for mode in poll thread; do
    MPICAST_PROGRESS=$mode job "overlap-$f-$mode" 4 --part overlap --sizes "$osizes" \
      --reps "$([ "$quick" = 1 ] && echo 3 || echo 30)" --tests "$tests"
  done
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta"
if pgrep -f "$busy_re" >/dev/null || [ -n "${busy_seen:-}" ]; then
  echo "WARNING: another benchmark ran during this run: figures contaminated" | tee -a "$out/meta" >&2
fi
echo "date at end: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/meta"
echo "results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "goal.sh: failed: ${failed[*]}" >&2
  exit 1
fi
