#!/usr/bin/env python3
"""The tables of README.md from this folder's CSVs (fig5.csv, target.csv, fig4.csv;
bench/imcast.sh writes them; the Cholesky table of cholesky.csv is bench/chol_table.py's).
Python 3, no dependencies:

    python3 bench/results/2026-11-26-imcast/tables.py [DIR] > summary.md
    python3 bench/chol_table.py bench/results/2026-11-26-imcast >> summary.md
"""
import csv
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def rows(name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def size_name(b):
    b = int(b)
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20} MiB"
    if b >= 1 << 10 and b % (1 << 10) == 0:
        return f"{b >> 10} KiB"
    return f"{b} B"


def ms(s):
    return f"{float(s) * 1e3:.2f}" if float(s) < 0.01 else f"{float(s) * 1e3:.1f}"


out = []
p = out.append

# Fig. 5: per launch (hosts, route), size and share: medians and the ratios x / imcast.
f5 = rows("fig5.csv")
if f5:
    p("## Fig. 5: MPICAST_Imcast against the flat tree and the host MPI's broadcast\n")
    p("Slowest participant's time, median, ms (span: the last participant's end minus the "
      "root's start, median, ms). Ratios x / imcast: above 1, imcast is faster. Every row is "
      "one launch: imcast and the others side by side, interleaved.\n")
    launches = []
    for r in f5:
        key = (int(r["hosts"]), r["label"])
        if key not in launches:
            launches.append(key)
    for hosts, label in sorted(launches):
        sub = [r for r in f5 if r["label"] == label]
        im = [r for r in sub if r["variant"] == "imcast"]
        if not im:
            continue
        route, base, seg = im[0]["route"], im[0]["base"], im[0]["seg_bytes"]
        has_cg = any(r["variant"] == "bcast_cg" for r in sub)
        p(f"### {hosts} hosts, route {route}, base {base}, segments {seg} (`{label}`)\n")
        head = "| size | share | dests | reps | imcast | flat | bcast |"
        sep = "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        if has_cg:
            head += " bcast_cg | split |"
            sep += " ---: | ---: |"
        head += " flat / imcast | bcast / imcast |"
        sep += " ---: | ---: |"
        if has_cg:
            head += " bcast_cg / imcast |"
            sep += " ---: |"
        head += " errors |"
        sep += " ---: |"
        p(head)
        p(sep)
        for i in im:
            same = {r["variant"]: r for r in sub if r["size"] == i["size"] and r["frac"] == i["frac"]}
            t = {v: float(r["median_s"]) for v, r in same.items()}
            line = (f"| {size_name(i['size'])} | {i['frac']} % | {i['ndests']} | {i['reps']} | "
                    f"{ms(t['imcast'])} ({ms(same['imcast']['span_s'])}) | {ms(t['flat'])} | {ms(t['bcast'])} |")
            if has_cg:
                line += f" {ms(t['bcast_cg'])} | {ms(t['split'])} |"
            line += f" {t['flat'] / t['imcast']:.2f} | {t['bcast'] / t['imcast']:.2f} |"
            if has_cg:
                line += f" {t['bcast_cg'] / t['imcast']:.2f} |"
            errs = max(int(r["errors"]) for r in same.values())
            line += f" {errs} |"
            p(line)
        p("")

# dests against table: the two launches of a host count (same destination sets: same seed).
if f5:
    def pick(h, route, size, frac, var):
        for r in f5:
            if (int(r["hosts"]) == h and r["label"].endswith("-" + route) and r["size"] == size
                    and r["frac"] == frac and r["variant"] == var):
                return float(r["median_s"])
        return None
    hs = sorted({int(r["hosts"]) for r in f5 if r["label"].endswith("-table")})
    if hs:
        p("## Routing: dests against table\n")
        p("imcast dests / imcast table (below 1: dests faster), and in brackets each launch's "
          "flat / imcast (dests, table): the two routings ran in two launches, one after the "
          "other, with the same destination sets; the flat tree of each launch is its yardstick.\n")
        fr = sorted({r["frac"] for r in f5}, key=int)
        p("| hosts, size | " + " | ".join(f"{f} %" for f in fr) + " |")
        p("| --- |" + " ---: |" * len(fr))
        for h in hs:
            for size in sorted({r["size"] for r in f5}, key=int):
                cells = []
                for f in fr:
                    d_, t_ = pick(h, "dests", size, f, "imcast"), pick(h, "table", size, f, "imcast")
                    fd, ft = pick(h, "dests", size, f, "flat"), pick(h, "table", size, f, "flat")
                    if None in (d_, t_, fd, ft):
                        cells.append("-")
                    else:
                        cells.append(f"{d_ / t_:.2f} ({fd / d_:.2f}, {ft / t_:.2f})")
                p(f"| {h}, {size_name(size)} | " + " | ".join(cells) + " |")
        p("")

tg = rows("target.csv")
if tg:
    p("## The targets: 9 hosts, 1 MiB, every other rank a destination\n")
    p("| launch | reps | imcast (q1-q3) | flat | bcast | bcast_cg | split | mbcast | flat / imcast | "
      "bcast / imcast | bcast_cg / imcast | imcast / mbcast | errors |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    labels = []
    for r in tg:
        if r["label"] not in labels:
            labels.append(r["label"])
    for label in labels:
        same = {r["variant"]: r for r in tg if r["label"] == label}
        t = {v: float(r["median_s"]) for v, r in same.items()}
        i = same["imcast"]
        mb = f"{ms(t['mbcast'])}" if "mbcast" in t else "-"
        mbr = f"{t['imcast'] / t['mbcast']:.2f}" if "mbcast" in t else "-"
        errs = max(int(r["errors"]) for r in same.values())
        p(f"| `{label}` | {i['reps']} | {ms(t['imcast'])} ({ms(i['q1_s'])}-{ms(i['q3_s'])}) | "
          f"{ms(t['flat'])} | {ms(t['bcast'])} | {ms(t['bcast_cg'])} | {ms(t['split'])} | {mb} | "
          f"{t['flat'] / t['imcast']:.2f} | {t['bcast'] / t['imcast']:.2f} | "
          f"{t['bcast_cg'] / t['imcast']:.2f} | {mbr} | {errs} |")
    p("")

f4 = rows("fig4.csv")
if f4:
    p("## Fig. 4: segment size (MPICAST_SEGMENT_BYTES), rank 0 to every other rank\n")
    p("Slowest participant's time, median of the launch's repetitions, ms; **bold**: the best "
      "of the row.\n")
    hosts = sorted({int(r["hosts"]) for r in f4})
    sizes = sorted({int(r["size"]) for r in f4})
    segs = sorted({int(r["seg_bytes"]) for r in f4})
    p("| hosts, size | " + " | ".join(size_name(s) for s in segs) + " |")
    p("| --- |" + " ---: |" * len(segs))
    for h in hosts:
        for s in sizes:
            t = {}
            for r in f4:
                if int(r["hosts"]) == h and int(r["size"]) == s:
                    t[int(r["seg_bytes"])] = float(r["median_s"])
            best = min(t.values())
            cells = []
            for g in segs:
                if g not in t:
                    cells.append("-")
                elif t[g] == best:
                    cells.append(f"**{ms(t[g])}**")
                else:
                    cells.append(ms(t[g]))
            p(f"| {h}, {size_name(s)} | " + " | ".join(cells) + " |")
    errs = max(int(r["errors"]) for r in f4)
    p(f"\nData errors in all of fig4.csv: {errs}.\n")

print("\n".join(out))
