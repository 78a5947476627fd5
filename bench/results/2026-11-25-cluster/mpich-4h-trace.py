"""Summaries of the traced runs in mpich-4h-eager-trace.txt and mpich-4h-tree-trace.txt.

Reads /tmp/mctrace/<pid>.txt ("seq event ns" per line) written by a library built with
mpich-4h-eager-trace.patch:  python3 mpich-4h-trace.py eager|tree
"""
import sys
import glob,collections,statistics as st
ev={}
for f in glob.glob('/tmp/mctrace/*.txt'):
    pid=f.split('/')[-1][:-4]
    d=collections.defaultdict(list)
    for line in open(f):
        s,e,t=map(int,line.split()); d[s].append((e,t))
    ev[pid]=d
mode=sys.argv[1] if len(sys.argv)>1 else 'eager'
root=[p for p in ev if any(e==(20 if mode=='eager' else 4) for s in ev[p] for e,_ in ev[p][s])][0]
others=[p for p in ev if p!=root]
seqs=sorted(ev[root].keys())
def first(p,s,e):
    for x,t in ev[p].get(s,[]):
        if x==e: return t
def last(p,s,e):
    r=None
    for x,t in ev[p].get(s,[]):
        if x==e: r=t
    return r
def eager():
    rows=collections.defaultdict(list)
    for s in seqs:
        r0=first(root,s,0)
        if r0 is None or first(root,s,2) is None or last(root,s,9) is None or first(root,s,3) is None: continue
        rows['root settle']+= [first(root,s,1)-r0]
        rows['root new']+= [first(root,s,2)-first(root,s,1)]
        t4=first(root,s,3)
        if t4: rows['root entry->sent']+= [t4-r0]
        rows['root exit']+= [last(root,s,9)-r0]
        ent=[];dg=[];ex=[];ack=[];polls=[]
        for p in others:
            e0=first(p,s,0); d5=first(p,s,5); e9=last(p,s,9); a=first(p,s,11); a0=first(p,s,10)
            if None in (e0,d5,e9): continue
            ent.append(e0-r0); dg.append(d5-(t4 or r0)); ex.append(e9-r0)
            if a and a0: ack.append(a-a0)
            polls.append(sum(1 for x,_ in ev[p][s] if x==6))
            # wake latency: last 7 before d5 minus nothing
        if ent:
            rows['recv entry (max) rel root entry']+=[max(ent)]
            rows['recv entry (min)']+=[min(ent)]
            rows['dgram seen rel sent (max)']+=[max(dg)]
            rows['dgram seen rel sent (min)']+=[min(dg)]
            rows['recv exit (max) rel root entry']+=[max(ex)]
            if ack: rows['ack send dur (max)']+=[max(ack)]
            rows['polls per recv (mean)']+=[sum(polls)/len(polls)]
    print("medians over operations 20.. (us, relative as named):")
    for k,v in rows.items():
        vv=sorted(v[20:])
        if 'polls' in k: print(f"  {k:35s} median {st.median(vv):8.2f}"); continue
        print(f"  {k:35s} median {st.median(vv)/1000:8.1f}  q1 {vv[len(vv)//4]/1000:8.1f} q3 {vv[3*len(vv)//4]/1000:8.1f}")
    print("root fine events (median us rel entry):")
    for e in (20,21,22,23,3):
        v=[first(root,s,e)-first(root,s,0) for s in seqs[20:] if first(root,s,e) and first(root,s,0)]
        print(" ",e, round(st.median(v)/1000,1), len(v))
    print("per-op slowest rank (own exit - own entry):")
    who=collections.Counter(); tt=[]; parts=collections.defaultdict(list)
    for s in seqs[20:]:
        best=None
        for p in ev:
            e0=first(p,s,0); e9=last(p,s,9)
            if e0 is None or e9 is None: continue
            if best is None or e9-e0>best[0]: best=(e9-e0,p)
        if not best: continue
        tt.append(best[0]); p=best[1]
        if p==root: who['root']+=1
        else:
            who['receiver']+=1
            e0=first(p,s,0); d5=first(p,s,5); a0=first(p,s,10); a1=first(p,s,11); t3=first(root,s,3); r0=first(root,s,0)
            if None not in (e0,d5,a0,a1,t3,r0):
                parts['entry rel root entry'].append(e0-r0)
                parts['root sent rel own entry'].append(t3-e0)
                parts['dgram seen - root sent'].append(d5-t3)
                parts['dgram seen -> ack sent'].append(a0-d5)
                parts['ack send'].append(a1-a0)
                parts['ack sent -> exit'].append(last(p,s,9)-a1)
    print(" ", dict(who), "median slowest", st.median(tt)/1000)
    for k,v in parts.items(): print(f"  {k:28s} median {st.median(v)/1000:6.1f} us")

def tree():
    late=[];rootwait=[];rootall=[];recvown=[]
    for s in sorted(ev[root])[20:]:
        r0=first(root,s,0); m=first(root,s,4); r9=last(root,s,9)
        ents=[first(p,s,0) for p in ev if p!=root]
        if None in ents or None in (r0,m,r9): continue
        late.append(max(ents)-r0); rootwait.append(m-r0); rootall.append(r9-r0)
        recvown += [last(p,s,9)-first(p,s,0) for p in ev if p!=root and last(p,s,9)]
    print("ops", len(late))
    for k,v in (("last receiver enters, after the root (us)",late),("root: entry to its first multicast datagram (scouts in) (us)",rootwait),("root: whole call (us)",rootall),("receivers: own call (us)",recvown)):
        v=sorted(v); print(f"  {k:62s} median {st.median(v)/1000:8.1f}  q1 {v[len(v)//4]/1000:8.1f}  q3 {v[3*len(v)//4]/1000:8.1f}")

eager() if mode=='eager' else tree()
