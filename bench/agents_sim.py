#!/usr/bin/env python3
"""Seed 003's experiment in the simulator: many simultaneous multicasts on random irregular
switched networks, naive and SPCCO against the four agent-based variants.

    agents_sim.py --mpicast BIN --out DIR [--switches 16,32,64,128] [--degree 4-8]
                  [--hosts-per-switch 4] [--ks 1,2,4,...] [--size 65536] [--dests FRAC]
                  [--nets 3] [--seed 1] [--params FILE] [--link 1Gbit]

For each switch count, --nets random irregular networks (written to DIR/net-<S>-<i>.net): a
random spanning tree, then extra cables between switches that still have free ports until
every switch has its drawn degree (uniform in --degree) or no partner is left, so the graph
has cycles; --hosts-per-switch hosts on each switch; `routing updown`. For each network and k
(default: powers of two up to the number of hosts), `mpicast sim --gen mmcast-ALGO --network
NET --k K --dests D --size S --seed SEED` for every algorithm, D = --dests (a fraction of the
hosts, 0.5 by default) rounded, at least 1; the parameters of --params (default
bench/sim/1gbit.params). Writes DIR/sim.csv (switches,net,hosts,k,algo,ns) and DIR/sim.svg
(one panel per switch count: the mean over the networks of each algorithm's time divided by
the naive algorithm's, against k), DIR/sim.md (the tables and the SPCCO / best agent ratio).
Simulated times do not depend on the machine; the run is deterministic for a given --seed.
No dependencies beyond Python 3.
"""
import argparse
import csv
import math
import os
import random
import re
import subprocess
import sys
from html import escape

ALGOS = ["naive", "spcco", "sametree-binomial", "sametree-cyclic", "random-binomial",
         "random-cyclic"]
COLOURS = {"naive": "#7f7f7f", "spcco": "#d62728", "sametree-binomial": "#1f77b4",
           "sametree-cyclic": "#2ca02c", "random-binomial": "#ff7f0e",
           "random-cyclic": "#9467bd"}


def network(nsw, degree, hps, link, rng):
    """A random irregular network: a random spanning tree plus extra cables up to each switch's
    drawn degree (switch-to-switch ports)."""
    lo, hi = degree
    want = [rng.randint(lo, hi) for _ in range(nsw)]
    deg = [0] * nsw
    cables = set()
    order = list(range(nsw))
    rng.shuffle(order)
    for i in range(1, nsw):
        # attach to an earlier switch that has a free port (any, if none has)
        cands = [order[j] for j in range(i) if deg[order[j]] < want[order[j]]]
        p = rng.choice(cands) if cands else order[rng.randrange(i)]
        a, b = order[i], p
        cables.add((min(a, b), max(a, b)))
        deg[a] += 1
        deg[b] += 1
    tries = 0
    while tries < 20 * nsw:
        tries += 1
        free = [s for s in range(nsw) if deg[s] < want[s]]
        if len(free) < 2:
            break
        a, b = rng.sample(free, 2)
        c = (min(a, b), max(a, b))
        if c in cables:
            continue
        cables.add(c)
        deg[a] += 1
        deg[b] += 1
    t = "switch " + " ".join(f"s{i}" for i in range(nsw)) + "\n"
    for a, b in sorted(cables):
        t += f"link s{a} s{b} {link}\n"
    for s in range(nsw):
        for j in range(hps):
            t += f"host h{s}_{j} s{s}\n"
    return t + "routing updown\n", len(cables), deg


def sim_maximum(mpicast, args, who):
    """`mpicast sim ARGS --no-progress`: the simulated end of the slowest rank, in ns."""
    cmd = [mpicast, "sim"] + args + ["--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{who}: {' '.join(cmd)} failed:\n{out.stderr}")
    m = re.search(r"^maximum: (\d+) ns", out.stdout, re.M)
    if not m:
        sys.exit(f"{who}: no maximum in the output of {' '.join(cmd)}")
    return int(m.group(1))


def simulate(mpicast, net, algo, k, dests, size, seed, params):
    args = ["--gen", f"mmcast-{algo}", "--network", net, "--k", str(k), "--dests", str(dests),
            "--size", str(size), "--seed", str(seed)]
    if params:
        args += ["--params", params]
    return sim_maximum(mpicast, args, "agents_sim")


def svg(rows, switch_counts, path):
    panels = len(switch_counts)
    pw, ph, ml, mt, mb = 300, 230, 55, 40, 45
    width, height = ml + panels * (pw + 20) + 150, mt + ph + mb
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{width/2}" y="16" text-anchor="middle" font-size="13">Simulated time of k '
           'simultaneous multicasts, relative to naive (mean over the networks)</text>']
    for pi, nsw in enumerate(switch_counts):
        x0 = ml + pi * (pw + 20)
        sub = [r for r in rows if r["switches"] == nsw]
        ks = sorted({r["k"] for r in sub})
        rel = {}
        for a in ALGOS:
            rel[a] = []
            for k in ks:
                vals = []
                for r in sub:
                    if r["k"] == k and r["algo"] == a:
                        base = next(q["ns"] for q in sub if q["k"] == k and q["net"] == r["net"]
                                    and q["algo"] == "naive")
                        vals.append(r["ns"] / base)
                rel[a].append(sum(vals) / len(vals))
        ymax = max(1.05, max(max(v) for v in rel.values()) * 1.05)
        lx = [math.log2(k) for k in ks]
        xs = lambda v: x0 + (v - lx[0]) / max(lx[-1] - lx[0], 1) * pw
        ys = lambda v: mt + ph - v / ymax * ph
        out.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" '
                   'stroke="#999"/>')
        hosts = sub[0]["hosts"]
        out.append(f'<text x="{x0 + pw/2}" y="{mt - 6}" text-anchor="middle">{nsw} switches, '
                   f'{hosts} hosts</text>')
        for t in [0, 0.25, 0.5, 0.75, 1.0]:
            if t <= ymax:
                out.append(f'<line x1="{x0}" x2="{x0+pw}" y1="{ys(t)}" y2="{ys(t)}" '
                           'stroke="#eee"/>')
                out.append(f'<text x="{x0-4}" y="{ys(t)+4}" text-anchor="end">{t:g}</text>')
        for k, v in zip(ks, lx):
            out.append(f'<text x="{xs(v)}" y="{mt+ph+14}" text-anchor="middle">{k}</text>')
        out.append(f'<text x="{x0+pw/2}" y="{mt+ph+32}" text-anchor="middle">k (multicasts at '
                   'once)</text>')
        for a in ALGOS:
            pts = " ".join(f"{xs(x):.1f},{ys(y):.1f}" for x, y in zip(lx, rel[a]))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{COLOURS[a]}" '
                       'stroke-width="1.6"/>')
    lx0 = ml + panels * (pw + 20)
    for i, a in enumerate(ALGOS):
        y = mt + 14 + 16 * i
        out.append(f'<line x1="{lx0}" x2="{lx0+18}" y1="{y}" y2="{y}" stroke="{COLOURS[a]}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{lx0+22}" y="{y+4}">{escape(a)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpicast", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--switches", default="16,32,64,128")
    ap.add_argument("--degree", default="4-8")
    ap.add_argument("--hosts-per-switch", type=int, default=4)
    ap.add_argument("--ks", default="")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--dests", type=float, default=0.5)
    ap.add_argument("--nets", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--params", default=os.path.join(os.path.dirname(__file__), "sim",
                                                     "1gbit.params"))
    ap.add_argument("--link", default="1Gbit")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    lo, hi = (int(x) for x in a.degree.split("-"))
    switch_counts = [int(x) for x in a.switches.split(",")]
    rows = []
    for nsw in switch_counts:
        hosts = nsw * a.hosts_per_switch
        ks = [int(x) for x in a.ks.split(",")] if a.ks else \
            [2 ** i for i in range(int(math.log2(hosts)) + 1)]
        ks = [k for k in ks if k <= hosts]
        dests = max(1, min(hosts - 1, round(a.dests * hosts)))
        for i in range(a.nets):
            rng = random.Random(a.seed * 1000 + nsw * 10 + i)
            text, ncables, deg = network(nsw, (lo, hi), a.hosts_per_switch, a.link, rng)
            path = os.path.join(a.out, f"net-{nsw}-{i}.net")
            with open(path, "w") as f:
                f.write(f"# agents_sim.py: {nsw} switches, {ncables} cables, switch degree "
                        f"{min(deg)}..{max(deg)} (drawn {lo}..{hi}), seed {a.seed}\n" + text)
            for k in ks:
                for algo in ALGOS:
                    ns = simulate(a.mpicast, path, algo, k, dests, a.size, a.seed + i, a.params)
                    rows.append({"switches": nsw, "net": i, "hosts": hosts, "k": k,
                                 "algo": algo, "ns": ns})
                print(f"agents_sim: {nsw} switches net {i} k={k}: " + ", ".join(
                    f"{r['algo']} {r['ns']/1e6:.2f} ms" for r in rows[-len(ALGOS):]),
                    flush=True)
    with open(os.path.join(a.out, "sim.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["switches", "net", "hosts", "k", "algo", "ns"])
        w.writeheader()
        w.writerows(rows)
    svg(rows, switch_counts, os.path.join(a.out, "sim.svg"))
    # The tables: mean time (ms) per algorithm, and SPCCO over the best agent-based variant.
    md = [f"# agents_sim.py --switches {a.switches} --degree {a.degree} --hosts-per-switch "
          f"{a.hosts_per_switch} --size {a.size} --dests {a.dests} --nets {a.nets} "
          f"--seed {a.seed}", ""]
    for nsw in switch_counts:
        sub = [r for r in rows if r["switches"] == nsw]
        ks = sorted({r["k"] for r in sub})
        md += [f"## {nsw} switches, {sub[0]['hosts']} hosts (mean of {a.nets} networks, ms)", "",
               "| k | " + " | ".join(ALGOS) + " | SPCCO / best agent | best |",
               "|---" * (len(ALGOS) + 3) + "|"]
        for k in ks:
            mean = {al: sum(r["ns"] for r in sub if r["k"] == k and r["algo"] == al) / a.nets
                    for al in ALGOS}
            agents = {al: v for al, v in mean.items() if al not in ("naive", "spcco")}
            best_agent = min(agents.values())
            best = min(mean, key=mean.get)
            md.append(f"| {k} | " + " | ".join(f"{mean[al]/1e6:.2f}" for al in ALGOS) +
                      f" | {mean['spcco']/best_agent:.2f} | {best} |")
        md.append("")
    with open(os.path.join(a.out, "sim.md"), "w") as f:
        f.write("\n".join(md))
    print(f"agents_sim: wrote {a.out}/sim.csv, sim.svg, sim.md")


if __name__ == "__main__":
    main()
