#!/usr/bin/env python3
"""Summary of a `make bench` results directory (bench/full.sh) as Markdown on stdout.

    summary.py DIR

Reads DIR/*.meta and DIR/*.csv (mcast_bench output) and prints: the machine, one table of the
broadcast and barrier figures per configuration, the loss runs, the interposition overhead, and
the project's seven performance claims as measured. Every ratio compares figures of one run (one process, the
variants interleaved round by round), except the loss ratios, which compare back-to-back runs on
the same cluster. Reports; asserts nothing. No dependencies beyond Python 3.
"""

import csv
import statistics
import glob
import os
import platform
import sys

MIB = 1 << 20
MCAST = ("tree", "linear", "default")


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta.setdefault(k, v)
    return meta


def read_rows(path):
    if not os.path.exists(path):
        return [], []
    with open(path) as f:
        text = f.readlines()
    comments = [l.rstrip("\n") for l in text if l.startswith("#")]
    body = [l for l in text if l.strip() and not l.startswith("#") and not l.startswith("mpicast:")]
    return list(csv.DictReader(body)), comments


def overhead_pairs(r):
    """(PMPI_Bcast, MPI_Bcast) median seconds per call of each launch of an overhead run."""
    pairs, pm = [], None
    for row in r.rows:
        if row.get("op") != "overhead":
            continue
        try:
            v = float(row["median_per_call_s"])
        except (KeyError, ValueError):
            continue
        if row.get("path") == "PMPI_Bcast":
            pm = v
        elif row.get("path") == "MPI_Bcast" and pm:
            pairs.append((pm, v))
            pm = None
    return pairs


def rate_bits(rate):
    r = rate.lower()
    for unit, mul in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r.endswith(unit):
            try:
                return float(r[: -len(unit)]) * mul
            except ValueError:
                return None
    return None


def size_str(b):
    for unit, div in (("MiB", MIB), ("KiB", 1024)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def ms(s):
    return "-" if s is None else f"{s * 1e3:.1f}" if s >= 0.01 else f"{s * 1e3:.2f}" if s >= 1e-3 else f"{s * 1e3:.3f}"


def us(s):
    return "-" if s is None else f"{s * 1e6:.0f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fx(r, digits=2):
    return "-" if r is None else f"{r:.{digits}f}"


class Run:
    def __init__(self, meta_path):
        self.meta = read_meta(meta_path)
        self.name = self.meta.get("name", os.path.basename(meta_path)[:-5])
        self.rows, self.comments = read_rows(meta_path[:-5] + ".csv")
        self.bcast = {}  # (variant, size) -> row
        self.barrier = {}
        for r in self.rows:
            if r.get("op") == "bcast":
                self.bcast[(r["variant"], int(r["size"]))] = r
            elif r.get("op") == "barrier":
                self.barrier[r["variant"]] = r
        self.rate = rate_bits(self.meta.get("rate", ""))

    def med(self, variant, size):
        r = self.bcast.get((variant, size))
        return float(r["median_s"]) if r else None

    def bar(self, variant):
        r = self.barrier.get(variant)
        return float(r["median_s"]) if r else None

    def repairs_per_op(self, variant, size):
        r = self.bcast.get((variant, size))
        if not r or not r.get("repairs") or not r.get("reps"):
            return None
        return int(r["repairs"]) / int(r["reps"])

    def sizes(self):
        return sorted({s for (_, s) in self.bcast})

    def crossover(self, variant):
        """Smallest measured size from which `variant` beats the host MPI at every larger size
        (medians), and the largest size where the host MPI was faster."""
        sizes = [s for s in self.sizes() if self.med(variant, s) is not None and self.med("host", s) is not None]
        if not sizes:
            return None, None
        last_loss = None
        for s in sizes:
            if self.med(variant, s) >= self.med("host", s):
                last_loss = s
        if last_loss is None:
            return sizes[0], None
        later = [s for s in sizes if s > last_loss]
        return (later[0] if later else None), last_loss

    def worst_default(self):
        """Largest default/host median ratio over sizes, with the size, and whether the default
        median stays within the host MPI's spread (at most its third quartile) there."""
        worst = None
        for s in self.sizes():
            d, h = self.med("default", s), self.med("host", s)
            if d is None or h is None:
                continue
            r = d / h
            if worst is None or r > worst[0]:
                q3 = float(self.bcast[("host", s)]["q3_s"])
                worst = (r, s, d <= q3)
        return worst

    def cpu_ms(self, variant, size):
        """CPU time (user + system) of all ranks together per operation, in ms, if recorded."""
        r = self.bcast.get((variant, size))
        try:
            return float(r["cpu_s"]) * 1e3
        except (TypeError, KeyError, ValueError):
            return None

    def wire(self, size):
        return size * 8 / self.rate if self.rate else None

    def load(self):
        return f"{self.meta.get('load_before', '?').split()[0]} / {self.meta.get('load_after', '?').split()[0]}"


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Linux {platform.release()}"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py DIR")
    d = sys.argv[1]
    runs = {r.name: r for r in (Run(p) for p in sorted(glob.glob(os.path.join(d, "*.meta"))))}
    plain = [r for r in runs.values() if "loss" not in r.name and "overhead" not in r.name and r.bcast]
    # Diagnostic runs (non-default settings) are shown in the table, never held to a target.
    targeted = [r for r in plain if "-diag" not in r.name]
    loss = [r for r in runs.values() if "-loss" in r.name and r.bcast]
    over = [r for r in runs.values() if "overhead" in r.name]
    dates = sorted(r.meta.get("date", "") for r in runs.values() if r.meta.get("date"))

    out = []
    p = out.append
    p(f"Results of `make bench` (bench/full.sh) in `{d}`: {machine()}; "
      f"{dates[0] if dates else '?'} to {dates[-1] if dates else '?'} (UTC).")
    p("")
    p("Figures: the slowest rank's time per operation, median over repetitions (the figure of Chen, Carrasco and Apon's paper); "
      "every variant of a configuration ran in one process, interleaved round by round. "
      "`wire` is the time of one copy of 1 MiB on the link (1 MiB / link rate); `host/tree` is the "
      "host MPI's time over mpicast's (tree scouts) at the same size, above 1 = mpicast faster. "
      "Crossover: the smallest measured size from which mpicast's median beats the host MPI's at "
      "every larger size. Load: 1-minute load average before / after the configuration ran.")
    p("")
    p("| configuration | host MPI | tree | linear | eager | default | wire | tree/wire | host/tree | host/linear "
      "| crossover tree | crossover linear | crossover eager | barrier host | barrier mpicast | repairs/op | CPU host | CPU tree | load |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: | ---: |")
    for r in sorted(plain, key=lambda r: (r.meta.get("rate", ""), r.meta.get("mpi", ""), r.name)):
        h, t, l, e, df = (r.med(v, MIB) for v in ("host", "tree", "linear", "eager", "default"))
        ct, _ = r.crossover("tree")
        cl, _ = r.crossover("linear")
        ce, _ = r.crossover("eager")
        cross = lambda c: size_str(c) if c else "none"  # noqa: E731
        rp = r.repairs_per_op("tree", MIB)
        p(f"| {r.name} ({r.meta.get('hosts')}x{r.meta.get('ppn')}, {r.meta.get('rate')}) | {ms(h)} | {ms(t)} | "
          f"{ms(l)} | {ms(e)} | {ms(df)} | {ms(r.wire(MIB))} | {fx(ratio(t, r.wire(MIB)))} | {fx(ratio(h, t))} | "
          f"{fx(ratio(h, l))} | {cross(ct)} | {cross(cl)} | {'-' if e is None else cross(ce)} | "
          f"{us(r.bar('host'))} | {us(r.bar('tree'))} | {'-' if rp is None else f'{rp:.0f}'} | "
          f"{fx(r.cpu_ms('host', MIB), 0)} | {fx(r.cpu_ms('tree', MIB), 0)} | {r.load()} |")
    p("")
    p("1 MiB columns in ms, barriers in microseconds; repairs/op: fragments retransmitted per 1 MiB "
      "broadcast (tree), summed over ranks, on links that lose nothing; CPU: CPU time (user + system) "
      "of all ranks together inside one 1 MiB broadcast, in ms (all hosts share this machine's cores).")
    p("")

    if loss:
        p("Loss at one receiver (nftables inside host 9 drops that share of the multicast datagrams it "
          "receives); the three runs of a row group ran back to back on one cluster:")
        p("")
        p("| run | size | host MPI (ms) | tree (ms) | linear (ms) | tree / loss-free | linear / loss-free "
          "| repairs/op (tree) | dropped / seen at host 9 | data |")
        p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in sorted(loss, key=lambda r: (r.meta.get("mpi", ""), int(r.meta.get("loss_pct", "0")))):
            base = runs.get(r.name.rsplit("-loss", 1)[0] + "-loss0")
            for s in r.sizes():
                t, l = r.med("tree", s), r.med("linear", s)
                bt = base.med("tree", s) if base else None
                bl = base.med("linear", s) if base else None
                rp = r.repairs_per_op("tree", s)
                ok = any("0 wrong words" in c for c in r.comments)
                p(f"| {r.name} | {size_str(s)} | {ms(r.med('host', s))} | {ms(t)} | {ms(l)} | "
                  f"{fx(ratio(t, bt))} | {fx(ratio(l, bl))} | {'-' if rp is None else f'{rp:.0f}'} | "
                  f"{r.meta.get('nft_dropped', '0')} / {r.meta.get('nft_seen', '-')} | "
                  f"{'right' if ok else 'WRONG or missing'} |")
        p("")

    if over:
        p("Interposition overhead below the threshold (4 ranks on loopback, 8 B, blocks of back-to-back "
          "broadcasts alternately through PMPI_Bcast and through mpicast's MPI_Bcast):")
        p("")
        p("| run | launches | PMPI_Bcast (us/call) | MPI_Bcast via mpicast (us/call) | overhead, median of launches | range | load |")
        p("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
        for r in sorted(over, key=lambda r: r.name):
            pairs = overhead_pairs(r)
            if not pairs:
                p(f"| {r.name} | 0 | - | - | - | - | {r.load()} |")
                continue
            pm = statistics.median(a for a, _ in pairs)
            mm = statistics.median(b for _, b in pairs)
            os_ = sorted((b / a - 1) * 100 for a, b in pairs)
            p(f"| {r.name} | {len(pairs)} | {pm * 1e6:.4f} | {mm * 1e6:.4f} | "
              f"{statistics.median(os_):+.2f}% | {os_[0]:+.2f} to {os_[-1]:+.2f}% | {r.load()} |")
        p("")

    # The performance claims of README.md and BENCHMARKS.md, as measured.
    p("The performance claims as measured here (reported, not asserted):")
    p("")

    def best(r, s):
        vals = [v for v in (r.med("tree", s), r.med("linear", s)) if v is not None]
        return min(vals) if vals else None

    t1 = []
    for r in sorted(targeted, key=lambda r: r.name):
        if r.meta.get("rate") == "100mbit" and r.meta.get("ppn") == "1":
            t, df = r.med("tree", MIB), r.med("default", MIB)
            t1.append(f"{r.name}: tree {fx(ratio(t, r.wire(MIB)))}x wire, host/tree {fx(ratio(r.med('host', MIB), t), 1)}x"
                      + ("" if df is None else f", default {fx(ratio(df, r.wire(MIB)))}x wire, "
                         f"host/default {fx(ratio(r.med('host', MIB), df), 1)}x"))
    p("1. 100 Mbit/s, 1 MiB (<= 1.15x wire, >= 5x faster than the host MPI at 9 hosts): " + ("; ".join(t1) or "no run"))
    t2 = []
    for r in sorted(targeted, key=lambda r: r.name):
        if r.meta.get("rate") == "100mbit" and r.meta.get("ppn") == "1":
            ct, lt = r.crossover("tree")
            ce, le = r.crossover("eager")
            w = r.worst_default()
            eager = ""
            if r.med("eager", MIB) is not None:
                eager = (f", eager {size_str(ce) if ce else 'none'} (host faster up to "
                         f"{size_str(le) if le else '-'})")
            t2.append(f"{r.name}: crossover {size_str(ct) if ct else 'none'} (host faster up to "
                      f"{size_str(lt) if lt else '-'}){eager}; default worst {fx(w[0]) if w else '-'}x host at "
                      f"{size_str(w[1]) if w else '-'}{' (within the host spread)' if w and w[2] else ''}")
    p("2. crossover <= 1500 B at 100 Mbit/s; default never slower than the host MPI: " + ("; ".join(t2) or "no run"))
    t3 = [f"{r.name}: host {us(r.bar('host'))} us, mpicast {us(r.bar('tree'))} us ({fx(ratio(r.bar('tree'), r.bar('host')))}x)"
          for r in sorted(targeted, key=lambda r: r.name) if r.meta.get("hosts") == "9" and r.bar("host")]
    p("3. MPI_Barrier at 9 hosts no slower than the host MPI's: " + ("; ".join(t3) or "no run"))
    t4 = [f"{r.name}: tree {ms(r.med('tree', MIB))} ms = {fx(ratio(r.med('tree', MIB), r.wire(MIB)))}x wire, "
          f"host/tree {fx(ratio(r.med('host', MIB), r.med('tree', MIB)))}x, "
          f"CPU {fx(r.cpu_ms('tree', MIB), 0)} ms per op (host MPI {fx(r.cpu_ms('host', MIB), 0)})"
          for r in sorted(targeted, key=lambda r: r.name) if r.meta.get("rate") == "1gbit"]
    p("4. 1 Gbit/s, 1 MiB: " + ("; ".join(t4) or "no run"))
    t5 = [f"{r.name}: host/tree {fx(ratio(r.med('host', MIB), r.med('tree', MIB)))}x, "
          f"host/default {fx(ratio(r.med('host', MIB), r.med('default', MIB)))}x"
          for r in sorted(targeted, key=lambda r: r.name) if r.meta.get("ppn") not in (None, "1")]
    p("5. 4 hosts x 2 ranks, 1 MiB, >= 2x faster than the host MPI: " + ("; ".join(t5) or "no run"))
    t6 = []
    for r in sorted(loss, key=lambda r: r.name):
        pct = r.meta.get("loss_pct", "0")
        if pct == "0":
            continue
        base = runs.get(r.name.rsplit("-loss", 1)[0] + "-loss0")
        ok = any("0 wrong words" in c for c in r.comments)
        t6.append(f"{r.name}: tree {fx(ratio(r.med('tree', MIB), base.med('tree', MIB) if base else None))}x, "
                  f"linear {fx(ratio(r.med('linear', MIB), base.med('linear', MIB) if base else None))}x loss-free, "
                  f"data {'right' if ok else 'WRONG'}")
    p("6. 1% loss at one receiver, 1 MiB, 9 hosts: <= 1.5x loss-free; 5% completes with right data: " + ("; ".join(t6) or "no run"))
    t7 = []
    for r in sorted(over, key=lambda r: r.name):
        pairs = overhead_pairs(r)
        if pairs:
            o = statistics.median((b / a - 1) * 100 for a, b in pairs)
            t7.append(f"{r.name}: {o:+.2f}% (median of {len(pairs)} launches)")
    p("7. shim overhead below the threshold (4 ranks, loopback, 8 B) < 2%: " + ("; ".join(t7) or "no run"))
    print("\n".join(out))


if __name__ == "__main__":
    main()
