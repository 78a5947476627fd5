#!/usr/bin/env python3
"""The sweeps of run.sh, read back: per size, the default MPI_Bcast (with tune's file loaded)
against the host MPI's, and whether the default is slower by more than the run-to-run spread
(its median above the host MPI's by more than half the two interquartile ranges, as tune's own
margin, and at least 5 %).

    compare.py OUT/<mpi>-<rate>.sweep.csv ...      (a markdown table per file on stdout)
"""
import csv
import sys


def rows(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#")]
    out = {}
    for r in csv.DictReader(lines):
        if r["op"] != "bcast":
            continue
        out.setdefault(int(r["size"]), {})[r["variant"]] = r
    return out


def size(b):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {name}"
    return f"{b} B"


def ms(s):
    return f"{float(s) * 1e3:.3f}"


for path in sys.argv[1:]:
    print(f"`{path.split('/')[-1]}`\n")
    print("| size | host MPI median (ms) | IQR | default median (ms) | IQR | default / host | verdict |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for b, v in sorted(rows(path).items()):
        h, d = v["host"], v["default"]
        hm, dm = float(h["median_s"]), float(d["median_s"])
        spread = lambda r: (float(r["q3_s"]) - float(r["q1_s"])) / float(r["median_s"])
        margin = max(0.05, (spread(h) + spread(d)) / 2)
        r = dm / hm
        if dm > hm * (1 + margin):
            verdict = f"**slower** beyond the margin ({margin * 100:.0f} %)"
        elif hm > dm * (1 + margin):
            verdict = "faster"
        else:
            verdict = f"even (margin {margin * 100:.0f} %)"
        iqr = lambda r: f"{ms(r['q1_s'])}-{ms(r['q3_s'])}"
        print(f"| {size(b)} | {ms(hm)} | {iqr(h)} | {ms(dm)} | {iqr(d)} | {r:.2f} | {verdict} |")
    print()
