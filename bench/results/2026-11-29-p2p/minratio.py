#!/usr/bin/env python3
"""Best case of each side: the minimum over launches of each launch's minimum (maximum for the
message rate), and their ratio (above 1 = slower with libmpicast). The host launches of this
machine are bimodal (2 ranks on 2 cores; a launch lands in a fast or a slow mode), so the
medians of bench/p2p_overhead.sh's summary can compare a fast mode with a slow one.
Usage: minratio.py DIR [FLAVOUR...]"""
import csv, glob, sys
d = sys.argv[1]
fls = sys.argv[2:] or ['openmpi', 'mpich']
for fl in fls:
    res = {}
    for kind in ['host', 'preload']:
        for f in glob.glob(f'{d}/{fl}-{kind}-*.csv'):
            for r in csv.reader(l for l in open(f) if not l.startswith('#')):
                if r[0] == 'measure':
                    continue
                res.setdefault((r[0], r[1], kind), []).append(float(r[4] if r[0] != 'rate_window' else r[5]))
    if not res:
        continue
    print(f'{fl}: {d}')
    for m in ['lat_send_recv', 'lat_isend_wait', 'lat_irecv_test', 'rate_window', 'lat_allreduce']:
        for c in ['dup', 'enabled']:
            h, p = res.get((m, c, 'host')), res.get((m, c, 'preload'))
            if not h or not p:
                continue
            if m == 'rate_window':
                hv, pv = max(h), max(p)
                print(f'  {m:15s} {c:8s} host {hv:12.0f} preload {pv:12.0f} ratio {hv / pv:.2f}')
            else:
                hv, pv = min(h), min(p)
                print(f'  {m:15s} {c:8s} host {hv:9.1f} preload {pv:9.1f} ratio {pv / hv:.2f}')
