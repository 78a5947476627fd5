import glob,collections,statistics as st
ev={}
for f in glob.glob('/tmp/mctrace/*.txt'):
    d=collections.defaultdict(list)
    for line in open(f):
        s,e,t=map(int,line.split()); d[s].append((e,t))
    ev[f]=d
root=[p for p in ev if any(e==4 for s in ev[p] for e,_ in ev[p][s])][0]
def first(p,s,e):
    for x,t in ev[p].get(s,[]):
        if x==e: return t
def last(p,s,e):
    r=None
    for x,t in ev[p].get(s,[]):
        if x==e: r=t
    return r
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
