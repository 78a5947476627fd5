#!/usr/bin/env python3
"""The simulator against the emulated switched network: every multicast pattern that
bench/mmcast_bench.c measured, timed by `mpicast sim` on the same network file.

    agents_compare.py --mpicast BIN --net NET --params FILE --out DIR RUN.csv [RUN.csv...]

RUN.csv is mmcast_bench's output (label,variant,ranks,k,bytes,rep,seconds,spec). For every
row of an MPICAST_Mmcast variant it runs `mpicast sim --gen mmcast-VARIANT --network NET
--mcasts SPEC --size BYTES --params FILE` (seed 1, as the library plans), and writes
DIR/compare.csv (one row per measured run: measured and simulated seconds) and DIR/compare.md
(per label, variant, k and size: the medians, simulated / measured, and how many of the
configurations are within 20 %). The host MPI's rows are listed but not simulated.
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agents_sim import sim_maximum  # noqa: E402


def simulate(mpicast, net, params, variant, spec, size, cache):
    key = (variant, spec, size)
    if key not in cache:
        cache[key] = 1e-9 * sim_maximum(
            mpicast, ["--gen", f"mmcast-{variant}", "--network", net, "--mcasts", spec,
                      "--size", str(size), "--params", params], "agents_compare")
    return cache[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpicast", required=True)
    ap.add_argument("--net", required=True)
    ap.add_argument("--params", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    rows, cache = [], {}
    for path in a.runs:
        if os.path.basename(path) == "compare.csv":
            continue
        with open(path) as f:
            lines = [l for l in f if l.strip() and not l.startswith("#")]
        for r in csv.DictReader(lines):
            if "spec" not in r or r.get("variant") is None:
                continue
            size = int(r["bytes"])
            sim = None
            if r["variant"] != "host":
                sim = simulate(a.mpicast, a.net, a.params, r["variant"], r["spec"], size, cache)
            rows.append({"label": r["label"], "variant": r["variant"], "k": int(r["k"]),
                         "bytes": size, "rep": int(r["rep"]), "measured": float(r["seconds"]),
                         "simulated": sim})
    with open(os.path.join(a.out, "compare.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["label", "variant", "k", "bytes", "rep", "measured",
                                          "simulated"])
        w.writeheader()
        w.writerows(rows)
    md = [f"# agents_compare.py --net {a.net} --params {a.params}", "",
          "Medians over the repetitions (each repetition its own random pattern, simulated as "
          "measured); ratio = simulated / measured.", ""]
    within = total = 0
    counts = []
    for label in sorted({r["label"] for r in rows}):
        w0, t0 = within, total
        md += [f"## {label}", "", "| variant | k | bytes | measured ms | simulated ms | ratio |",
               "|---|---|---|---|---|---|"]
        keys = sorted({(r["variant"], r["k"], r["bytes"]) for r in rows if r["label"] == label},
                      key=lambda t: (t[2], t[1], t[0]))
        for v, k, b in keys:
            sel = [r for r in rows if r["label"] == label and (r["variant"], r["k"], r["bytes"])
                   == (v, k, b)]
            meas = statistics.median(r["measured"] for r in sel)
            if v == "host":
                md.append(f"| {v} | {k} | {b} | {meas*1e3:.2f} | | |")
                continue
            sim = statistics.median(r["simulated"] for r in sel)
            ratio = sim / meas
            total += 1
            within += abs(ratio - 1) <= 0.2
            md.append(f"| {v} | {k} | {b} | {meas*1e3:.2f} | {sim*1e3:.2f} | {ratio:.3f} |")
        md.append("")
        counts.append(f"{label} {within - w0} of {total - t0}")
    md.insert(4, f"**Within 20 %: {', '.join(counts)} configurations.**\n")
    with open(os.path.join(a.out, "compare.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"agents_compare: within 20 %: {', '.join(counts)}; wrote {a.out}/compare.md")


if __name__ == "__main__":
    main()
