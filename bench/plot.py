#!/usr/bin/env python3
"""One SVG per benchmark configuration: broadcast time over message size, log-log.

    plot.py RUN.csv [--meta RUN.meta] [-o RUN.svg]

RUN.csv is mcast_bench's output (comment lines start with '#'). One line per variant through
the medians (host MPI, mpicast tree, mpicast linear, mpicast with the default settings), a bar
from min to max at each point, the wire time of one copy (size / link rate) when the meta file
names the rate, and the barrier medians in the caption. No dependencies beyond Python 3.
"""

import argparse
import csv
import math
import sys
from html import escape

STYLE = {  # variant: (label, colour, dash)
    "host": ("host MPI (PMPI_Bcast)", "#d62728", ""),
    "tree": ("mpicast, tree scouts", "#1f77b4", ""),
    "linear": ("mpicast, linear scouts", "#2ca02c", "6,3"),
    "eager": ("mpicast, no scouts (eager)", "#ff7f0e", "1,2"),
    "default": ("mpicast, default settings", "#9467bd", "2,3"),
}


def read_csv(path):
    rows = []
    with open(path) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#") and not l.startswith("mpicast:")]
    for r in csv.DictReader(lines):
        if not r.get("op") or r.get("median_s") in (None, ""):
            continue
        rows.append(r)
    return rows


def read_meta(path):
    meta = {}
    if path:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta.setdefault(k, v)
    return meta


def rate_bits(rate):
    """tc rate (100mbit, 1gbit, ...) -> bits per second, or None."""
    r = rate.lower()
    for unit, mul in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if r.endswith(unit):
            try:
                return float(r[: -len(unit)]) * mul
            except ValueError:
                return None
    return None


def human_size(b):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def decade(e):
    """10**e bytes as an axis label: 1 B, 10 B, ..., 1 kB, ..., 10 MB."""
    for unit, p in (("GB", 9), ("MB", 6), ("kB", 3), ("B", 0)):
        if e >= p:
            return f"{10 ** (e - p)} {unit}"
    return f"1e{e} B"


def human_time(s):
    if s >= 1:
        return f"{s:g} s"
    if s >= 1e-3:
        return f"{s * 1e3:g} ms"
    return f"{s * 1e6:g} us"


def plot(rows, meta, title):
    W, H = 820, 560
    left, right, top, bottom = 80, 220, 50, 90
    pw, ph = W - left - right, H - top - bottom
    bc = [r for r in rows if r["op"] == "bcast"]
    if not bc:
        raise SystemExit("plot.py: no bcast rows")
    sizes = sorted({int(r["size"]) for r in bc})
    ys = [float(r[k]) for r in bc for k in ("min_s", "max_s") if float(r[k]) > 0]
    rate = rate_bits(meta.get("rate", ""))
    if rate:
        ys += [s * 8 / rate for s in sizes]
    x0, x1 = math.floor(math.log10(min(sizes))), math.ceil(math.log10(max(sizes)))
    if x1 == x0:
        x1 += 1
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if y1 == y0:
        y1 += 1

    def X(v):
        return left + (math.log10(v) - x0) / (x1 - x0) * pw

    def Y(v):
        return top + (y1 - math.log10(max(v, 10.0**y0))) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    sub = []
    if meta:
        sub.append(f"{meta.get('hosts', '?')} hosts x {meta.get('ppn', '1')} rank(s), {meta.get('mpi', '?')}, "
                   f"links {meta.get('rate', '?')}")
        if meta.get("loss_pct", "0") not in ("", "0"):
            sub.append(f"{meta['loss_pct']}% loss at host {meta.get('loss_host', '?')}")
        sub.append(meta.get("date", ""))
    out.append(f'<text x="{left}" y="40" fill="#444">{escape(", ".join(s for s in sub if s))}</text>')
    # grid and axes
    for e in range(x0, x1 + 1):
        x = X(10.0**e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(decade(e))}</text>')
    for e in range(y0, y1 + 1):
        y = Y(10.0**e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(human_time(10.0**e))}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 36}" text-anchor="middle">message size (bytes)</text>')
    out.append(f'<text transform="translate(18,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
               "slowest rank's time (median, min-max bar)</text>")

    legend = []
    if rate:
        pts = " ".join(f"{X(s):.1f},{Y(s * 8 / rate):.1f}" for s in sizes)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#888" stroke-width="1" stroke-dasharray="1,3"/>')
        legend.append(("wire time of one copy", "#888", "1,3"))
    for v, (label, colour, dash) in STYLE.items():
        vr = sorted((r for r in bc if r["variant"] == v), key=lambda r: int(r["size"]))
        if not vr:
            continue
        for r in vr:
            x = X(int(r["size"]))
            out.append(f'<line x1="{x:.1f}" y1="{Y(float(r["min_s"])):.1f}" x2="{x:.1f}" '
                       f'y2="{Y(float(r["max_s"])):.1f}" stroke="{colour}" stroke-opacity="0.45"/>')
        pts = " ".join(f'{X(int(r["size"])):.1f},{Y(float(r["median_s"])):.1f}' for r in vr)
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{d}/>')
        for r in vr:
            out.append(f'<circle cx="{X(int(r["size"])):.1f}" cy="{Y(float(r["median_s"])):.1f}" r="2.5" fill="{colour}"/>')
        legend.append((label, colour, dash))
    lx, ly = left + pw + 14, top + 10
    for i, (label, colour, dash) in enumerate(legend):
        y = ly + i * 20
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 24}" y2="{y}" stroke="{colour}" stroke-width="2"{d}/>')
        out.append(f'<text x="{lx + 30}" y="{y + 4}">{escape(label)}</text>')
    bar = [r for r in rows if r["op"] == "barrier"]
    if bar:
        y = ly + len(legend) * 20 + 20
        out.append(f'<text x="{lx}" y="{y}" font-weight="bold">MPI_Barrier (median)</text>')
        for i, r in enumerate(bar):
            out.append(f'<text x="{lx}" y="{y + 18 * (i + 1)}">{escape(r["variant"])}: '
                       f'{escape(human_time(round(float(r["median_s"]), 7)))}</text>')
    if meta.get("command"):
        cmd = meta["command"]
        for i in range(0, min(len(cmd), 4 * 125), 125):
            out.append(f'<text x="10" y="{H - 42 + (i // 125) * 12}" font-size="9" fill="#666" '
                       f'font-family="monospace">{escape(cmd[i:i + 125])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--meta")
    ap.add_argument("-o", "--output")
    ap.add_argument("--title")
    a = ap.parse_args()
    meta = read_meta(a.meta)
    svg = plot(read_csv(a.csv), meta, a.title or meta.get("name", a.csv))
    if a.output:
        with open(a.output, "w") as f:
            f.write(svg)
    else:
        sys.stdout.write(svg)


if __name__ == "__main__":
    main()
