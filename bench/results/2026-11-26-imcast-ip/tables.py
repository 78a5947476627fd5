#!/usr/bin/env python3
"""The tables of README.md from this folder's CSV files: python3 tables.py > summary.md"""
import csv
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ms(r):
    return float(r["median_s"]) * 1e3


def rows(name):
    p = HERE / name
    return list(csv.DictReader(open(p))) if p.exists() else []


def size_txt(b):
    b = int(b)
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


print("# Tables of 2026-11-26-imcast-ip\n")
print("## The transports side by side (ip.csv): p2p and ip, base 2, dests\n")
print("| hosts | size | share (dests) | p2p imcast ms | ip imcast ms | ip / p2p | flat / ip (ip launch) | ip / mbcast |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
d = defaultdict(dict)
for r in rows("ip.csv"):
    t = r["label"].rsplit("-", 1)[1]
    d[(int(r["hosts"]), int(r["size"]), int(r["frac"]), r["ndests"])][(t, r["variant"])] = ms(r)
for k in sorted(d):
    v = d[k]
    p, i, f = v[("p2p", "imcast")], v[("ip", "imcast")], v[("ip", "flat")]
    mb = v.get(("ip", "mbcast"))
    print(f"| {k[0]} | {size_txt(k[1])} | {k[2]} % ({k[3]}) | {p:.3f} | {i:.3f} | {i / p:.2f} | {f / i:.2f} | "
          + (f"{i / mb:.2f}" if mb else "-") + " |")

print("\n## The targets with the ip transport (target.csv): 9 hosts, 1 MiB, all ranks\n")
print("| launch | imcast ms | flat ms | bcast ms | mbcast ms | flat / imcast | bcast / imcast | imcast / mbcast |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
t = defaultdict(dict)
for r in rows("target.csv"):
    t[r["label"]][r["variant"]] = ms(r)
for lab, v in sorted(t.items()):
    print(f"| {lab} | {v['imcast']:.1f} | {v['flat']:.1f} | {v['bcast']:.1f} | {v['mbcast']:.1f} | "
          f"{v['flat'] / v['imcast']:.2f} | {v['bcast'] / v['imcast']:.2f} | {v['imcast'] / v['mbcast']:.2f} |")

print("\n## Fig. 5 with MPICAST_IMCAST_TRANSPORT=auto (fig5.csv)\n")
print("Launch `defaults`: base 16, every other setting mpicast's default; `dests`, `table`: base 2.\n")
print("| hosts | launch | size | share | imcast ms | flat / imcast | bcast / imcast | bcast_cg / imcast |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
f5 = defaultdict(dict)
for r in rows("fig5.csv"):
    lab = r["label"].split("-", 3)[3]
    f5[(int(r["hosts"]), lab, int(r["size"]), int(r["frac"]))][r["variant"]] = ms(r)
for k in sorted(f5):
    v = f5[k]
    i = v["imcast"]
    bc = v.get("bcast_cg")
    print(f"| {k[0]} | {k[1]} | {size_txt(k[2])} | {k[3]} % | {i:.3f} | {v['flat'] / i:.2f} | {v['bcast'] / i:.2f} | "
          + (f"{bc / i:.2f}" if bc else "-") + " |")

print("\n## Cholesky, p2p against imcast with the defaults (cholesky.csv), seconds per run\n")
print("| hosts x ranks | n | p2p | imcast | p2p / imcast | checks |")
print("| --- | ---: | --- | --- | ---: | --- |")
c = defaultdict(lambda: defaultdict(list))
chk = defaultdict(list)
for r in rows("cholesky.csv"):
    k = (r["hosts"] + "x" + r["ppn"], int(r["n"]))
    c[k][r["mode"]].append(float(r["time_s"]))
    chk[k].append(r["check"])
for k in sorted(c):
    p, i = c[k]["p2p"], c[k]["imcast-b16-dests"]
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"| {k[0]} | {k[1]} | {', '.join(f'{x:.3f}' for x in p)} | {', '.join(f'{x:.3f}' for x in i)} | "
          f"{med(p) / med(i):.2f} | {'all PASS' if set(chk[k]) == {'PASS'} else ','.join(chk[k])} |")
