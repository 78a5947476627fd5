#!/usr/bin/env python3
"""The Cholesky table of a bench/imcast.sh results folder (its cholesky.csv), per MPI, as
Markdown on stdout. Python 3, no dependencies:

    python3 bench/chol_table.py DIR > DIR/summary.md

Each launch times `--reps` factorisations and prints their median (`time_s`); a cell is the
median of the launches (rounds) with, in brackets, each launch. Ratio: p2p / mode (above 1:
faster than point-to-point notification; without p2p in the file, the first mode is the base). Every figure of one row comes from one run of
imcast.sh, the modes interleaved launch by launch. Reports; asserts nothing.
"""
import csv
import os
import statistics
import sys


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(d, "cholesky.csv")) as f:
        ch = list(csv.DictReader(f))
    out = []
    p = out.append
    mpis = list(dict.fromkeys(r["mpi"] for r in ch))
    modes = list(dict.fromkeys(r["mode"] for r in ch))
    base = "p2p" if "p2p" in modes else modes[0]
    others = [m for m in modes if m != base]
    key = lambda r: (int(r["hosts"]), int(r["ppn"]), int(r["n"]), int(r["nb"]))
    for mpi in mpis:
        rs = [r for r in ch if r["mpi"] == mpi]
        p(f"### {mpi}: seconds per factorisation\n")
        p("| hosts x ranks, n:nb | " + " | ".join(modes) + " | " +
          " | ".join(f"{base} / {m}" for m in others) + " | checks |")
        p("| --- |" + " ---: |" * (len(modes) + len(others)) + " --- |")
        for k in sorted(set(map(key, rs))):
            h, ppn, n, nb = k
            med, cells, checks = {}, [], set()
            for m in modes:
                sel = [r for r in rs if key(r) == k and r["mode"] == m]
                ts = [float(r["time_s"]) for r in sel if r["time_s"] and r["exit"] == "0"]
                for r in sel:
                    checks.add(r["check"] + ("" if r["exit"] == "0" else f" exit {r['exit']}"))
                if ts:
                    med[m] = statistics.median(ts)
                    cells.append(f"{med[m]:.3f} ({', '.join(f'{x:.3f}' for x in ts)})")
                else:
                    cells.append("-")
            ratios = [f"{med[base] / med[m]:.2f}" if base in med and m in med else "-"
                      for m in others]
            p(f"| {h} x {ppn}, {n}:{nb} | " + " | ".join(cells) + " | " + " | ".join(ratios) +
              f" | {', '.join(sorted(checks))} |")
        p("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
