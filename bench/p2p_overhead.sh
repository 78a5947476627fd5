#!/usr/bin/env bash
# What mpicast costs point-to-point calls where dynamic broadcast is not in use (bench/
# p2p_overhead.c): 2 ranks on loopback, the host MPI alone against the same binary with
# libmpicast preloaded, launches interleaved, for each MPI:
#
#   bench/p2p_overhead.sh [--mpi openmpi|mpich]... [--lib PATH] [--launches N] [--enable]
#                         [--on-enabled] [--reps R] [--iters K] [--rate-iters M] [--bytes B]
#                         [--out DIR]
#                         [--quick] [--force]
#
#   --mpi F        the flavours (default: both; one skipped when its mpicc or library is missing)
#   --lib PATH     the library to preload (with a single --mpi); default build/<F>/lib/libmpicast.so
#   --launches N   launches of each kind (default 5): host, preload, preload, host, host, ...
#                  (the order alternates, so that drift hits both alike)
#   --enable       the program enables dynamic broadcast on one duplicate of MPI_COMM_WORLD and
#                  measures on another (the "communicator without dynamic broadcast"); host-only
#                  launches find no MPICAST_Dbcast_enable and enable nothing
#   --on-enabled   also measure on the enabled duplicate (rows "enabled")
#   --reps R, --iters K, --rate-iters M   passed to the program (defaults 15, 20000, 500)
#   --bytes B      bytes per message of the latency measures (default 8)
#   --quick        a correctness pass (2 launches, few iterations): figures meaningless
#   --force        run although another benchmark of the repository is running
#
# Into DIR (default build/bench/p2p-overhead-<UTC date-time>/): <F>-host-<i>.csv and
# <F>-preload-<i>.csv (each launch's medians), .log (stderr), meta, summary.txt. Prints per
# flavour a table: measure, comm, host median (the median over launches of each launch's
# median), preload median, ratio (preload/host; for the message rate host/preload, so that
# above 1 is always slower), the run-to-run spread of the host launches (max/min), and a
# verdict: "ok" when the cost is under 2 % or within that spread, else "OVER".
# Environment of every launch: MPICAST_IFACE=lo MPICAST_TTL=0 (loopback only), and as root
# OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Each launch is bounded by
# P2P_TIMEOUT seconds (default 300).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
cd "$TOP"

quick=0 force=0 out="" lib="" launches=5 mpis=() prog_args=()
reps=15 iters=20000 rate_iters=500
cmdline="$0 $*"
while [ $# -gt 0 ]; do
  case $1 in
    --mpi) mpis+=("$2"); shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --enable) prog_args+=(--enable); shift ;;
    --on-enabled) prog_args+=(--on-enabled); shift ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --rate-iters) rate_iters=$2; shift 2 ;;
    --bytes) prog_args+=(--bytes "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "p2p_overhead.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#mpis[@]} -gt 0 ] || mpis=(openmpi mpich)
if [ -n "$lib" ] && [ ${#mpis[@]} -ne 1 ]; then
  echo "p2p_overhead.sh: --lib needs exactly one --mpi (the library is per flavour)" >&2
  exit 2
fi
case $launches in ''|*[!0-9]*|0) echo "p2p_overhead.sh: --launches must be >= 1" >&2; exit 2 ;; esac
if [ "$quick" = 1 ]; then
  launches=2 reps=3 iters=2000 rate_iters=50
fi
prog_args+=(--reps "$reps" --iters "$iters" --rate-iters "$rate_iters")
timeout_s=${P2P_TIMEOUT:-300}

busy_re='bench/(full|run|cluster|goal|imcast|goal_cluster)\.sh'
if [ "$quick" = 0 ] && [ "$force" = 0 ] && pgrep -f "$busy_re" >/dev/null; then
  echo "p2p_overhead.sh: another benchmark is running ($(pgrep -af "$busy_re" | cut -c1-80 | tr '\n' ';')):" \
       "timings would be meaningless; wait for it, or use --quick / --force" >&2
  exit 1
fi

# Loopback only; nothing of mpicast's beyond what the caller set (the library must see no
# unknown MPICAST_ name: it stops the program).
export MPICAST_IFACE=lo MPICAST_TTL=0
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset LD_PRELOAD

out=${out:-build/bench/p2p-overhead-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
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
  echo "launches: $launches of each kind, alternating; program arguments: ${prog_args[*]}"
} >"$out/meta"

failed=()
ran=()
for f in "${mpis[@]}"; do
  case $f in
    openmpi) cc=mpicc.openmpi launch=(mpirun.openmpi --oversubscribe -np 2) ;;
    mpich) cc=mpicc.mpich launch=(mpiexec.mpich -n 2) ;;
    *) echo "p2p_overhead.sh: unknown MPI $f" >&2; exit 2 ;;
  esac
  flib=${lib:-build/$f/lib/libmpicast.so}
  if ! command -v "${launch[0]}" >/dev/null || ! command -v "$cc" >/dev/null; then
    echo "== $f: skipped (${launch[0]} or $cc missing)" | tee -a "$out/meta"
    continue
  fi
  if [ ! -e "$flib" ]; then
    echo "== $f: skipped ($flib missing: make lib)" | tee -a "$out/meta"
    continue
  fi
  flib=$(readlink -f "$flib")
  if [ "$f" = openmpi ]; then preload=(-x "LD_PRELOAD=$flib"); else preload=(-genv LD_PRELOAD "$flib"); fi
  echo "== $f (library $flib)"
  mkdir -p "build/$f/bench"
  exe=build/$f/bench/p2p_overhead
  "$cc" -O2 -Wall -Wextra -Werror bench/p2p_overhead.c -ldl -o "$exe"
  echo "$f library: $flib $(stat -c %y "$flib")" >>"$out/meta"

  # run KIND I: one launch, its CSV to $out/$f-KIND-I.csv.
  run() {
    local kind=$1 i=$2 name="$f-$1-$2" extra=()
    [ "$kind" = preload ] && extra=("${preload[@]}")
    if ! timeout -k 10 "$timeout_s" "${launch[@]}" "${extra[@]}" "$exe" "${prog_args[@]}" \
         >"$out/$name.csv" 2>"$out/$name.log"; then
      echo "   $name FAILED (see $out/$name.log)" >&2
      tail -n 20 "$out/$name.log" >&2
      failed+=("$name")
      return 0
    fi
    # The launch must be what it claims: the library loaded exactly when preloaded.
    local want="not loaded"
    [ "$kind" = preload ] && want="loaded"
    if ! grep -qx "# libmpicast: $want" "$out/$name.csv"; then
      echo "   $name: libmpicast should be $want: $(grep '^# libmpicast' "$out/$name.csv")" >&2
      failed+=("$name")
      return 0
    fi
    echo "   $name: $(grep -v '^#' "$out/$name.csv" | awk -F, 'NR>1{printf "%s/%s %s  ", $1, $2, $4}')"
  }
  for i in $(seq 1 "$launches"); do
    if [ $((i % 2)) = 1 ]; then run host "$i"; run preload "$i"; else run preload "$i"; run host "$i"; fi
  done
  grep -h '^# dynamic' "$out/$f-preload-1.csv" 2>/dev/null | sed "s/^# /   preloaded: /" || true
  ran+=("$f")
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta"
echo "date at end: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/meta"

# The table: medians over launches, ratio, spread, verdict.
python3 - "$out" "${ran[@]}" <<'EOF' | tee "$out/summary.txt"
import csv, glob, os, statistics, sys
out, flavours = sys.argv[1], sys.argv[2:]
def launches(f, kind):
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, f"{f}-{kind}-*.csv"))):
        with open(path) as fh:
            for r in csv.DictReader(l for l in fh if not l.startswith("#")):
                rows.setdefault((r["measure"], r["comm"], r["unit"]), []).append(float(r["median"]))
    return rows
for f in flavours:
    host, pre = launches(f, "host"), launches(f, "preload")
    print(f"\n{f}: median over launches (host launches {len(next(iter(host.values()), []))}, "
          f"preloaded {len(next(iter(pre.values()), []))})")
    hdr = ("measure", "comm", "unit", "host", "preload", "ratio", "host spread", "preload spread", "verdict")
    lines = [hdr]
    for key in sorted(host, key=lambda k: (k[1], k[0])):
        if key not in pre:
            continue
        h, p = host[key], pre[key]
        hm, pm = statistics.median(h), statistics.median(p)
        rate = key[2].endswith("per_s")
        ratio = hm / pm if rate else pm / hm  # above 1: the preloaded run is slower
        spread = max(h) / min(h)
        pspread = max(p) / min(p)
        verdict = "ok" if ratio <= 1.02 or ratio <= spread else "OVER"
        lines.append((key[0], key[1], key[2], f"{hm:.1f}", f"{pm:.1f}", f"{ratio:.4f}",
                      f"{spread:.4f}", f"{pspread:.4f}", verdict))
    w = [max(len(l[i]) for l in lines) for i in range(len(hdr))]
    for l in lines:
        print("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(l)))
print("\nratio: preloaded/host time (host/preloaded rate): above 1 = slower with libmpicast;"
      " verdict ok: under 1.02 or within the host launches' spread (max/min)")
EOF
if [ "$quick" = 1 ]; then echo "(--quick: figures meaningless)"; fi
awk '{print $1}' /proc/loadavg | awk -v n="$(nproc)" '$1 > n/2 {print "WARNING: load average " $1 " on " n " cores during the run: figures noisy"}' >&2
echo "results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "p2p_overhead.sh: failed: ${failed[*]}" >&2
  exit 1
fi
