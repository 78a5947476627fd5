#!/usr/bin/env python3
"""The tables of README.md from fig2.csv files of bench/dbcast.sh runs with --fig2-chain: per
MPI, size and k, the span (root's start to the last recipient's end, median, ms) of dbcast and
the host's MPI_Bcast in each launch (one launch per MPICAST_DBCAST_CHAIN_BYTES value), and the
ratios. Python 3, no dependencies:

    python3 tables.py [DIR...] > summary.md      (default: this folder and threshold/)
"""
import csv
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
dirs = sys.argv[1:] or [here, os.path.join(here, "threshold")]
for d in dirs:
    path = os.path.join(d, "fig2.csv")
    if not os.path.exists(path):
        continue
    with open(path) as f:
        rows = list(csv.DictReader(f))
    span = {}
    chains = []
    for r in rows:
        c = r["label"].rsplit("-chain", 1)[1]
        chains += [c] if c not in chains else []
        span[(r["mpi"], int(r["size"]), int(r["k"]), c, r["variant"])] = float(r["span_median_s"])
    on, off = chains[0], chains[-1]
    print(f"## {os.path.relpath(d, here) if d != here else '.'}: chain {on} against {off}\n")
    print(f"| MPI | size | k | dbcast, chain {on} | dbcast, {off} | bcast | chain / bcast "
          f"| {off} / bcast | chain / {off} |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (m, size, k) in sorted({(a, b, c) for a, b, c, _, _ in span}, key=lambda x: (x[0] != "openmpi", x[1], x[2])):
        g = lambda c, v: span.get((m, size, k, c, v))
        a, b = g(on, "dbcast"), g(off, "dbcast")
        h = g(on, "bcast")
        if None in (a, b, h):
            continue
        print(f"| {m} | {size >> 10} KiB | {k} | {a * 1e3:.1f} | {b * 1e3:.1f} | {h * 1e3:.1f} "
              f"| {a / h:.2f} | {b / g(off, 'bcast'):.2f} | {a / b:.2f} |")
    print()
