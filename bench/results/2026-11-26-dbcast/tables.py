# python3 tables.py . > summary.md: the tables of fig2.csv and tree.csv
import csv, sys, collections
d = sys.argv[1]
def rows(f):
    try: return list(csv.DictReader(open(f"{d}/{f}")))
    except FileNotFoundError: return []
f2 = rows("fig2.csv")
by = collections.defaultdict(dict)
for r in f2:
    by[(r["mpi"], int(r["k"]))][r["variant"]] = r
def ms(r, key="span_median_s"): return float(r[key]) * 1e3
print("## fig2: span median ms [min-max]; slowest median")
for mpi in sorted({k[0] for k in by}):
    print(f"\n### {mpi}\n")
    print("| k | linear | dbcast | bcast (host) | mbcast (mpicast) | dbcast / bcast | dbcast / linear | dbcast / mbcast |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in sorted(x[1] for x in by if x[0] == mpi):
        v = by[(mpi, k)]
        cell = lambda n: f"{ms(v[n]):.0f} [{ms(v[n],'span_min_s'):.0f}-{ms(v[n],'span_max_s'):.0f}]" if n in v else "-"
        rat = lambda a, b: f"{ms(v[a])/ms(v[b]):.2f}" if a in v and b in v else "-"
        print(f"| {k} | {cell('linear')} | {cell('dbcast')} | {cell('bcast')} | {cell('mbcast')} | {rat('dbcast','bcast')} | {rat('dbcast','linear')} | {rat('dbcast','mbcast')} |")
    print("\nslowest-rank medians (ms):", "; ".join(f"k={k}: " + ", ".join(f"{n} {ms(by[(mpi,k)][n],'median_s'):.0f}" for n in by[(mpi,k)]) for k in sorted(x[1] for x in by if x[0]==mpi)))
t = rows("tree.csv")
tb = collections.defaultdict(dict)
for r in t:
    tb[(r["mpi"], r["hosts"] + "x" + r["ppn"], int(r["size"]), int(r["k"]), r["variant"])][r["tree"]] = r
print("\n## tree: span median ms [min-max]")
print("| MPI | hosts x ranks | size | k | list | binomial | topo | topo / binomial |")
print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
for key in sorted(tb):
    v = tb[key]
    cell = lambda n: f"{ms(v[n]):.1f} [{ms(v[n],'span_min_s'):.1f}-{ms(v[n],'span_max_s'):.1f}]" if n in v else "-"
    rat = f"{ms(v['topo'])/ms(v['binomial']):.2f}" if 'topo' in v and 'binomial' in v else "-"
    mpi, conf, size, k, var = key
    print(f"| {mpi} | {conf} | {size//1048576} MiB | {k} | {'rank order' if var=='dbcast' else 'shuffled'} | {cell('binomial')} | {cell('topo')} | {rat} |")
