#!/usr/bin/env python3
"""The simulator against the emulated cluster: simulated broadcast times next to measured ones.

    sim_compare.py --mpicast BIN --dir OUT [--hosts 4,6,9] [--mpi ompi]

For each host count H it reads OUT/<mpi>-<H>h.csv (mcast_bench: the slowest rank's median time
per broadcast) and OUT/<mpi>-<H>h.params (`mpicast sim calibrate` on the same cluster), runs
`mpicast sim --gen ALGO --ranks H --size S --params ...` for every measured variant and size, and
writes OUT/compare.csv (one row per host count, variant and size) and OUT/compare.md (the
tables, the share within 20 %, and the crossovers: from which size on each multicast variant
beats the host MPI's binomial tree, measured and simulated).
"""
import argparse
import csv
import os
import re
import subprocess
import sys

# (column, mcast_bench's variant, the generator that models it). The host MPI's binomial tree
# (Open MPI, unsegmented) sends to all children at once: binomial-isend-bcast; the plain
# binomial-bcast (one child after the other) is shown beside it for comparison.
MODELS = [
    ("host", "host", "binomial-isend-bcast"),
    ("host-seq", "host", "binomial-bcast"),
    ("tree", "tree", "scout-tree-bcast"),
    ("linear", "linear", "scout-linear-bcast"),
    ("eager", "eager", "eager-mcast-bcast"),
]
VARIANTS = {v for (_, v, _) in MODELS}
WITHIN = 0.20


def measured(path):
    out = {}
    with open(path) as f:
        rows = [l for l in f if not l.startswith("#")]
    for r in csv.DictReader(rows):
        if r["op"] == "bcast" and r["variant"] in VARIANTS:
            out[(r["variant"], int(r["size"]))] = float(r["median_s"])
    return out


def simulate(binary, gen, ranks, size, params, extra):
    cmd = [binary, "sim", "--gen", gen, "--ranks", str(ranks), "--size", str(size),
           "--params", params, "--no-progress"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("sim_compare.py: %s failed: %s" % (" ".join(cmd), p.stderr.strip()))
    m = re.search(r"^maximum: (\d+) ns", p.stdout, re.M)
    if not m:
        sys.exit("sim_compare.py: no maximum in the output of %s" % " ".join(cmd))
    return int(m.group(1)) * 1e-9


def crossover(times, variant, sizes):
    """The smallest size from which `variant` stays faster than `host`, or None."""
    won = None
    for s in sizes:
        a, b = times.get((variant, s)), times.get(("host", s))
        if a is None or b is None:
            continue
        if a < b:
            won = s if won is None else won
        else:
            won = None
    return won


def size_text(s):
    if s is None:
        return "never"
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= div and s % div == 0:
            return "%d %s" % (s // div, unit)
    return "%d B" % s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpicast", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--hosts", default="4,6,9")
    ap.add_argument("--mpi", default="ompi")
    ap.add_argument("--min-size", type=int, default=1024)
    ap.add_argument("--max-size", type=int, default=4 << 20)
    ap.add_argument("--sim-arg", action="append", default=[],
                    help="one more argument for every `mpicast sim` (repeatable)")
    a = ap.parse_args()
    rows = []
    md = []
    for h in [int(x) for x in a.hosts.split(",")]:
        base = os.path.join(a.dir, "%s-%dh" % (a.mpi, h))
        meas = measured(base + ".csv")
        params = base + ".params"
        sizes = sorted({s for (_, s) in meas if a.min_size <= s <= a.max_size})
        cols = [(c, v, g) for (c, v, g) in MODELS if any((v, s) in meas for s in sizes)]
        sim = {}
        for c, v, g in cols:
            for s in sizes:
                if (v, s) in meas:
                    sim[(c, s)] = simulate(a.mpicast, g, h, s, params, a.sim_arg)
                    rows.append([h, v, g, s, "%.9f" % meas[(v, s)], "%.9f" % sim[(c, s)],
                                 "%.3f" % (sim[(c, s)] / meas[(v, s)])])
        md.append("## %d hosts\n" % h)
        md.append("Simulated / measured (the measured median in ms in brackets); `*`: off by more "
                  "than 20 %; host-seq is not counted.\n")
        md.append("| size | " + " | ".join("%s (%s)" % (c, g) for (c, _, g) in cols) + " |")
        md.append("| --- |" + " --- |" * len(cols))
        ok = total = 0
        for s in sizes:
            cells = []
            for c, v, _ in cols:
                if (v, s) not in meas:
                    cells.append("")
                    continue
                r = sim[(c, s)] / meas[(v, s)]
                good = abs(r - 1) <= WITHIN
                if c != "host-seq":
                    ok += good
                    total += 1
                cells.append("%.2f%s (%.3f)" % (r, "" if good else "*", meas[(v, s)] * 1e3))
            md.append("| %s | %s |" % (size_text(s), " | ".join(cells)))
        md.append("\nWithin 20 %%: %d of %d.\n" % (ok, total))
        for c, v, _ in cols:
            if v == "host":
                continue
            md.append("- %s beats the host's binomial tree from %s measured, from %s simulated" % (
                v, size_text(crossover(meas, v, sizes)), size_text(crossover(sim, c, sizes))))
        md.append("")
    with open(os.path.join(a.dir, "compare.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hosts", "variant", "generator", "size", "measured_s", "simulated_s", "ratio"])
        w.writerows(rows)
    with open(os.path.join(a.dir, "compare.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
