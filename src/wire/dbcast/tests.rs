//! Segments against their own format; the paper's Fig. 1 on the wire; whole jobs of
//! forwarders exchanging segments through their `OutQueue`s over simulated links that keep
//! each sender's order to each receiver (as MPI point-to-point does) but interleave links at
//! random: every recipient gets every byte of every message exactly once, from its parent in
//! the tree, at its priority, numbered in its root's sequence; and the `Matcher` against MPI's
//! ordering cases and against a brute-force reference.

use super::*;
use crate::algo::dbcast::{order, order_for, Shape};
use crate::sched::testutil::Rng;
use std::collections::BTreeSet;

fn entry(rank: u32, seq: u64) -> Entry {
    Entry {
        rank,
        priority: rank as i32 - 3,
        seq,
        before_total: 2 * u64::from(rank),
        before_tag: u64::from(rank),
    }
}

fn none(_: u32) -> (u64, u64) {
    (0, 0)
}

#[test]
fn fig1_on_the_wire() {
    // Root 0, recipients 1..6 in the caller's order: 0 sends {5,6} to 4, {3} to 2, {} to 1.
    let mut root = Forwarder::new(0, 7, 100);
    let list = order(&[1, 2, 3, 4, 5, 6], None);
    let s = root.start(&list, Shape::Binomial, 9, b"tile", &none);
    let lists: Vec<(u32, Vec<u32>)> = s
        .send
        .iter()
        .map(|o| {
            let seg = decode(&o.bytes, 100).unwrap();
            let l = seg.list.unwrap();
            assert_eq!(l[0].rank, o.to, "entry 0 is the child");
            (o.to, l[1..].iter().map(|e| e.rank).collect())
        })
        .collect();
    assert_eq!(
        lists,
        vec![(4, vec![5, 6]), (2, vec![3]), (1, vec![])],
        "the root's sends, in order"
    );
    // Node 4 passes on to 6 first, then to 5, each with an empty list.
    let mut four = Forwarder::new(4, 7, 100);
    let h = four.handle(0, s.send[0].bytes.clone()).unwrap();
    let to: Vec<u32> = h.send.iter().map(|o| o.to).collect();
    assert_eq!(to, vec![6, 5]);
    for o in &h.send {
        let l = decode(&o.bytes, 100).unwrap().list.unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].rank, o.to);
    }
    let a = h.arrived.unwrap();
    assert_eq!((a.key, a.tag, a.seq, a.len), (s.key, 9, 0, 4));
    assert_eq!(
        h.data,
        Some((s.key, 0, s.send[0].bytes.len() - 4..s.send[0].bytes.len()))
    );
    assert_eq!(h.complete, Some(s.key));
}

#[test]
fn segments_round_trip_and_reject_the_rest() {
    let h = SegHeader {
        root: 3,
        tag: -7,
        msg: 42,
        total_len: 20,
        seg: 0,
        nsegs: 3,
        shape: Shape::Binomial,
    };
    let l = [entry(1, 9), entry(5, 0)];
    let mut b = Vec::new();
    encode(&h, Some(&l), &[1; 8], &mut b);
    assert_eq!(b.len(), HEADER_LEN + 4 + 2 * ENTRY_LEN + 8);
    let s = decode(&b, 8).unwrap();
    assert_eq!(s.h, h);
    assert_eq!(s.list.as_deref(), Some(&l[..]));
    assert_eq!(&b[s.payload_at..], &[1; 8]);
    // Later segments carry no list; the last is short.
    encode(&SegHeader { seg: 2, ..h }, None, &[2; 4], &mut b);
    let s = decode(&b, 8).unwrap();
    assert_eq!(
        (s.h.seg, s.list.is_none(), s.payload_at),
        (2, true, HEADER_LEN)
    );
    // Wrong: the length of a segment, a list on a later segment, none on the first, the
    // segment count for the size, a segment beyond the count, an empty list.
    encode(&SegHeader { seg: 2, ..h }, None, &[2; 5], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&SegHeader { seg: 1, ..h }, Some(&l), &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&h, None, &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&SegHeader { nsegs: 2, ..h }, Some(&l), &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&SegHeader { seg: 3, ..h }, None, &[], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&h, Some(&[]), &[1; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    // Magic, version, flags.
    encode(&h, Some(&l), &[1; 8], &mut b);
    let mut c = b.clone();
    c[0] ^= 1;
    assert_eq!(decode(&c, 8), Err(Reject::BadMagic));
    let mut c = b.clone();
    c[2] = 2;
    assert_eq!(decode(&c, 8), Err(Reject::BadVersion));
    let mut c = b.clone();
    c[3] |= 4;
    assert_eq!(decode(&c, 8), Err(Reject::Malformed));
    // The chain flag is the shape.
    let mut c = b.clone();
    c[3] |= 2;
    assert_eq!(decode(&c, 8).unwrap().h.shape, Shape::Chain);
    // A count beyond the bytes, and one whose length overflows.
    let mut c = b.clone();
    c[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&3u32.to_le_bytes());
    assert!(decode(&c, 8).is_err());
    c[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(decode(&c, 8).is_err());
    // Every truncation.
    for n in 0..b.len() {
        assert!(decode(&b[..n], 8).is_err(), "cut to {n}");
    }
    // An empty message is one empty segment.
    encode(
        &SegHeader {
            total_len: 0,
            nsegs: 1,
            shape: Shape::Binomial,
            ..h
        },
        Some(&l),
        &[],
        &mut b,
    );
    assert!(decode(&b, 8).is_ok());
}

/// A segment that decodes is consistent: it encodes back to the same bytes, and its payload
/// has the length of its segment.
fn consistent(b: &[u8], seg_bytes: usize) {
    if let Ok(s) = decode(b, seg_bytes) {
        let mut again = Vec::new();
        encode(&s.h, s.list.as_deref(), &b[s.payload_at..], &mut again);
        assert_eq!(again, b);
        assert!(s.h.seg < s.h.nsegs);
        assert_eq!(s.list.is_some(), s.h.seg == 0);
        assert!(s.list.as_ref().map_or(true, |l| !l.is_empty()));
        assert_eq!(
            b.len() - s.payload_at,
            seg_len(s.h.total_len, s.h.seg, seg_bytes)
        );
    }
}

#[test]
fn every_byte_flip_is_rejected_or_consistent() {
    let mut root = Forwarder::new(2, 9, 5);
    let list = order(&[0, 1, 3, 4, 5, 6, 7, 8], Some(&[0, 1, 2, 3, 0, 1, 2, 3]));
    let data: Vec<u8> = (0..13).collect();
    let s = root.start(&list, Shape::Binomial, 4, &data, &|r| (u64::from(r), 1));
    for o in &s.send {
        for i in 0..o.bytes.len() {
            for bit in 0..8 {
                let mut b = o.bytes.to_vec();
                b[i] ^= 1 << bit;
                consistent(&b, 5);
                // And the forwarder of the receiving rank neither panics nor misbehaves.
                let mut f = Forwarder::new(o.to, 9, 5);
                if let Ok(h) = f.handle(2, Arc::from(b)) {
                    assert!(h.arrived.is_some() || h.send.is_empty());
                }
            }
        }
        for n in 0..o.bytes.len() {
            assert!(decode(&o.bytes[..n], 5).is_err());
        }
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut r = Rng::new(0xDB0F);
    for _ in 0..20_000 {
        let len = r.below(200);
        let mut b: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
        if len >= 4 && r.chance(50) {
            b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            b[2] = VERSION;
            b[3] = r.below(3) as u8;
        }
        let seg = 1 + r.below(64);
        consistent(&b, seg);
        let mut f = Forwarder::new(r.below(8) as u32, 8, seg);
        let _ = f.handle(r.below(9) as u32, Arc::from(b));
    }
}

#[test]
fn handle_rejects_inconsistent_routing() {
    let h = SegHeader {
        root: 0,
        tag: 1,
        msg: 0,
        total_len: 10,
        seg: 0,
        nsegs: 2,
        shape: Shape::Binomial,
    };
    let mut b = Vec::new();
    let mut f = Forwarder::new(3, 8, 5);
    let mut check = |from: u32, h: &SegHeader, l: Option<&[Entry]>, payload: &[u8]| {
        encode(h, l, payload, &mut b);
        f.handle(from, Arc::from(&b[..]))
    };
    // Entry 0 not this rank; a subtree with this rank, the sender, the root, a rank twice or
    // out of the communicator; a sender or root out of range or this rank.
    for l in [
        vec![entry(2, 0)],
        vec![entry(3, 0), entry(3, 0)],
        vec![entry(3, 0), entry(1, 0)],
        vec![entry(3, 0), entry(0, 0)],
        vec![entry(3, 0), entry(4, 0), entry(4, 1)],
        vec![entry(3, 0), entry(8, 0)],
    ] {
        assert_eq!(
            check(1, &h, Some(&l), &[0; 5]).unwrap_err(),
            Reject::Malformed,
            "{l:?}"
        );
    }
    let l = [entry(3, 0), entry(4, 0)];
    assert!(check(8, &h, Some(&l), &[0; 5]).is_err());
    assert!(check(3, &h, Some(&l), &[0; 5]).is_err());
    assert!(check(1, &SegHeader { root: 9, ..h }, Some(&l), &[0; 5]).is_err());
    assert!(check(1, &SegHeader { root: 3, ..h }, Some(&l), &[0; 5]).is_err());
    // A later segment without its first.
    assert_eq!(
        check(1, &SegHeader { seg: 1, ..h }, None, &[0; 5]).unwrap_err(),
        Reject::WrongSeq
    );
    // The first, then: a second first, a later one from another sender, one disagreeing
    // with the first; then the right one.
    let got = check(1, &h, Some(&l), &[0; 5]).unwrap();
    assert_eq!(got.send.len(), 1);
    assert!(got.complete.is_none());
    assert_eq!(
        check(1, &h, Some(&l), &[0; 5]).unwrap_err(),
        Reject::Malformed
    );
    assert_eq!(
        check(2, &SegHeader { seg: 1, ..h }, None, &[0; 5]).unwrap_err(),
        Reject::WrongSeq
    );
    assert_eq!(
        check(
            1,
            &SegHeader {
                seg: 1,
                tag: 2,
                ..h
            },
            None,
            &[0; 5]
        )
        .unwrap_err(),
        Reject::Malformed
    );
    let got = check(1, &SegHeader { seg: 1, ..h }, None, &[0; 5]).unwrap();
    assert_eq!(got.send.len(), 1);
    assert_eq!(got.send[0].to, 4);
    assert_eq!(got.send[0].priority, entry(4, 0).priority);
    let key = Key { root: 0, msg: 0 };
    assert_eq!(got.complete, Some(key));
    assert_eq!(got.data.unwrap().1, 5);
    assert_eq!(f.relays_in_flight(), 0);
    // Three segments: the third before the second is refused, then the right order is taken.
    let h = SegHeader {
        msg: 1,
        total_len: 15,
        nsegs: 3,
        shape: Shape::Binomial,
        ..h
    };
    let mut f = Forwarder::new(3, 8, 5);
    for (seg, ok) in [(0, true), (2, false), (1, true), (1, false), (2, true)] {
        let l = (seg == 0).then_some(&l[..]);
        encode(&SegHeader { seg, ..h }, l, &[seg as u8; 5], &mut b);
        assert_eq!(f.handle(1, Arc::from(&b[..])).is_ok(), ok, "segment {seg}");
    }
    assert_eq!(f.relays_in_flight(), 0);
}

#[test]
fn chain_on_the_wire() {
    // Root 0 to 1..4 as a chain, 3 segments of 4 bytes: every segment to 1 only; 1 passes
    // each on to 2 only, whose list is {3, 4}; later segments keep the shape.
    let data: Vec<u8> = (0..10).collect();
    let mut root = Forwarder::new(0, 5, 4);
    let list = order_for(Shape::Chain, &[1, 2, 3, 4], None, None);
    let s = root.start(&list, Shape::Chain, 2, &data, &none);
    assert_eq!(s.send.len(), 3);
    assert!(s.send.iter().all(|o| o.to == 1));
    let mut hop = s.send;
    for me in 1..=4u32 {
        let mut f = Forwarder::new(me, 5, 4);
        let mut next = Vec::new();
        let mut got = Vec::new();
        for o in &hop {
            let seg = decode(&o.bytes, 4).unwrap();
            assert_eq!(seg.h.shape, Shape::Chain);
            if let Some(l) = seg.list {
                let ranks: Vec<u32> = l.iter().map(|e| e.rank).collect();
                assert_eq!(ranks, (me..=4).collect::<Vec<_>>(), "list at {me}");
            }
            let h = f.handle(me - 1, o.bytes.clone()).unwrap();
            if let Some((_, at, r)) = h.data {
                assert_eq!(at, got.len());
                got.extend_from_slice(&o.bytes[r]);
            }
            next.extend(h.send);
        }
        assert_eq!(got, data, "data at {me}");
        let want: Vec<u32> = if me < 4 { vec![me + 1; 3] } else { vec![] };
        assert_eq!(next.iter().map(|o| o.to).collect::<Vec<_>>(), want);
        hop = next;
    }
}

#[test]
fn root_numbers_messages_and_each_destinations_sequence() {
    let mut f = Forwarder::new(0, 6, 4);
    let a = f.start(&order(&[1, 2, 3], None), Shape::Binomial, 0, &[1; 9], &none);
    let b = f.direct(2, 5, 1, &[], (7, 3));
    let c = f.start(&order(&[3, 2], None), Shape::Binomial, 0, &[2; 3], &|r| {
        (u64::from(r), 0)
    });
    assert_eq!((a.key.msg, b.key.msg, c.key.msg), (0, 1, 2));
    assert_eq!(
        (f.sent_to(1), f.sent_to(2), f.sent_to(3), f.sent_to(4)),
        (1, 3, 2, 0)
    );
    // The direct message: one empty segment to 2, at its priority, entry with the counts.
    assert_eq!(b.send.len(), 1);
    assert_eq!((b.send[0].to, b.send[0].priority), (2, 5));
    let l = decode(&b.send[0].bytes, 4).unwrap().list.unwrap();
    assert_eq!(
        l,
        vec![Entry {
            rank: 2,
            priority: 5,
            seq: 1,
            before_total: 7,
            before_tag: 3
        }]
    );
    // Child-major: every segment of the first child, then the next child's. Three
    // recipients: children 2 (subtree {3}) then 1; three segments each.
    let to: Vec<u32> = a.send.iter().map(|o| o.to).collect();
    assert_eq!(to, vec![2, 2, 2, 1, 1, 1]);
    let segs: Vec<u32> = a
        .send
        .iter()
        .map(|o| decode(&o.bytes, 4).unwrap().h.seg)
        .collect();
    assert_eq!(segs, vec![0, 1, 2, 0, 1, 2]);
    // The last: the list [3, 2] sends to 2 first (seq 2, empty subtree), then to 3 (seq 1).
    let firsts: Vec<Entry> = c
        .send
        .iter()
        .map(|o| decode(&o.bytes, 4).unwrap().list.unwrap())
        .inspect(|l| assert_eq!(l.len(), 1))
        .map(|l| l[0])
        .collect();
    let got: Vec<(u32, u64, u64)> = firsts
        .iter()
        .map(|e| (e.rank, e.seq, e.before_total))
        .collect();
    assert_eq!(got, vec![(2, 2, 2), (3, 1, 3)]);
}

fn out(to: u32, priority: i32, tag: u8) -> Outgoing {
    Outgoing {
        to,
        priority,
        bytes: Arc::from(&[tag][..]),
    }
}

#[test]
fn out_queue_takes_priorities_first_and_keeps_fifo_among_equals() {
    let mut q = OutQueue::default();
    assert!(q.pop().is_none());
    for (i, p) in [0, 2, 0, -1, 2, 0].into_iter().enumerate() {
        q.push(out(1, p, i as u8));
    }
    assert_eq!(q.len(), 6);
    let order: Vec<u8> = std::iter::from_fn(|| q.pop()).map(|o| o.bytes[0]).collect();
    assert_eq!(order, vec![1, 4, 0, 2, 5, 3]);
    assert!(q.is_empty());
}

/// One message of a job, as its root made it.
struct Sent {
    tag: i32,
    data: Vec<u8>,
    /// Per recipient: its entry and the rank expected to send it the first segment.
    to: HashMap<u32, (Entry, u32)>,
}

/// What a recipient saw of one message.
#[derive(Default)]
struct Got {
    arrived: Option<Arrived>,
    data: Vec<u8>,
    complete: bool,
}

/// The parent of each entry of a root's `list` in the tree (the root for its children).
fn parents(root: u32, list: &[Recipient], shape: Shape) -> HashMap<u32, u32> {
    let mut out = HashMap::new();
    let mut todo = vec![(root, 0, list.len())];
    while let Some((holder, base, len)) = todo.pop() {
        for (c, sub) in shape.children(len) {
            out.insert(list[base + c].rank, holder);
            todo.push((list[base + c].rank, base + sub.start, sub.len()));
        }
    }
    out
}

fn before_of(msg: u64, rank: u32) -> (u64, u64) {
    (msg * 1000 + u64::from(rank), msg + u64::from(rank) * 7)
}

fn run_job(seed: u64) {
    let mut r = Rng::new(seed);
    let ranks = 2 + r.below(200) as u32;
    let seg = 1 + r.below(24);
    let mut fw: Vec<Forwarder> = (0..ranks)
        .map(|me| Forwarder::new(me, ranks, seg))
        .collect();
    let mut queues: Vec<OutQueue> = (0..ranks).map(|_| OutQueue::default()).collect();
    let mut links: BTreeMap<(u32, u32), VecDeque<Arc<[u8]>>> = BTreeMap::new();
    let mut sent: HashMap<Key, Sent> = HashMap::new();
    let mut got: HashMap<(u32, Key), Got> = HashMap::new();
    let mut seqs: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    let messages = 1 + r.below(12);
    let mut started = 0;
    let check_out = |from: u32, o: &Outgoing, sent: &HashMap<Key, Sent>| {
        assert_ne!(o.to, from, "seed {seed:#x}: a rank sent to itself");
        let s = decode(&o.bytes, seg).unwrap();
        let m = &sent[&Key {
            root: s.h.root,
            msg: s.h.msg,
        }];
        let (e, parent) = m.to[&o.to];
        assert_eq!(o.priority, e.priority, "seed {seed:#x}: priority lost");
        assert_eq!(
            parent, from,
            "seed {seed:#x}: {} sent by a non-parent",
            o.to
        );
    };
    loop {
        let idle = links.values().all(|q| q.is_empty()) && queues.iter().all(|q| q.is_empty());
        if started < messages && (r.chance(5) || idle) {
            started += 1;
            let root = r.below(ranks as usize) as u32;
            let mut dests: Vec<u32> = (0..ranks).filter(|&d| d != root && r.chance(60)).collect();
            if dests.is_empty() {
                dests.push((root + 1) % ranks);
            }
            for i in (1..dests.len()).rev() {
                dests.swap(i, r.below(i + 1));
            }
            let len = r.below(4 * seg + 3);
            let data: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
            let tag = r.below(3) as i32;
            let levels = 1 + r.below(4);
            let prios: Vec<i32> = dests.iter().map(|_| r.below(levels) as i32).collect();
            let msg_no = fw[root as usize].next_msg;
            let shape = if r.chance(30) {
                Shape::Chain
            } else {
                Shape::Binomial
            };
            let (list, shape, s) = if r.chance(20) {
                let list = vec![Recipient {
                    rank: dests[0],
                    priority: prios[0],
                }];
                let b = before_of(msg_no, dests[0]);
                let s = fw[root as usize].direct(dests[0], prios[0], tag, &data, b);
                (list, Shape::Binomial, s)
            } else {
                let key = |k: u32| u64::from(k % 7);
                let list = match (r.below(3), shape) {
                    (0, _) => order_for(shape, &dests, None, None),
                    (1, Shape::Binomial) => order(&dests, Some(&prios)),
                    (1, _) => order_for(shape, &dests, Some(&prios), None),
                    _ => order_for(shape, &dests, Some(&prios), Some(&key)),
                };
                let before = |d| before_of(msg_no, d);
                let s = fw[root as usize].start(&list, shape, tag, &data, &before);
                (list, shape, s)
            };
            let par = parents(root, &list, shape);
            let to = list
                .iter()
                .map(|x| {
                    let (before_total, before_tag) = before_of(s.key.msg, x.rank);
                    let e = Entry {
                        rank: x.rank,
                        priority: x.priority,
                        seq: 0, // checked through `seqs`
                        before_total,
                        before_tag,
                    };
                    (x.rank, (e, par[&x.rank]))
                })
                .collect();
            sent.insert(s.key, Sent { tag, data, to });
            for o in s.send {
                check_out(root, &o, &sent);
                queues[root as usize].push(o);
            }
            continue;
        }
        // A rank hands its most urgent message to the link, or a link delivers.
        let ready: Vec<u32> = (0..ranks)
            .filter(|&i| !queues[i as usize].is_empty())
            .collect();
        let busy: Vec<(u32, u32)> = links
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if ready.is_empty() && busy.is_empty() {
            break;
        }
        if !ready.is_empty() && (busy.is_empty() || r.chance(50)) {
            let from = ready[r.below(ready.len())];
            let o = queues[from as usize].pop().unwrap();
            links.entry((from, o.to)).or_default().push_back(o.bytes);
            continue;
        }
        let (from, to) = busy[r.below(busy.len())];
        let bytes = links.get_mut(&(from, to)).unwrap().pop_front().unwrap();
        let h = fw[to as usize]
            .handle(from, bytes.clone())
            .unwrap_or_else(|e| panic!("seed {seed:#x}: rank {to} refused a segment: {e:?}"));
        for o in h.send {
            check_out(to, &o, &sent);
            queues[to as usize].push(o);
        }
        if let Some(a) = h.arrived {
            let m = &sent[&a.key];
            let (e, parent) = m.to.get(&to).copied().unwrap_or_else(|| {
                panic!("seed {seed:#x}: rank {to} is no recipient of {:?}", a.key)
            });
            assert_eq!(from, parent, "seed {seed:#x}");
            assert_eq!(
                (a.tag, a.len, a.before_total, a.before_tag),
                (m.tag, m.data.len() as u64, e.before_total, e.before_tag),
                "seed {seed:#x}"
            );
            let g = got.entry((to, a.key)).or_default();
            assert!(
                g.arrived.is_none(),
                "seed {seed:#x}: {to} got {:?} twice",
                a.key
            );
            g.arrived = Some(a);
            seqs.entry((a.key.root, to)).or_default().push(a.seq);
        }
        if let Some((key, offset, range)) = h.data {
            let g = got
                .get_mut(&(to, key))
                .expect("data before the first segment");
            assert_eq!(
                offset,
                g.data.len(),
                "seed {seed:#x}: segments out of order"
            );
            g.data.extend_from_slice(&bytes[range]);
        }
        if let Some(key) = h.complete {
            let g = got.get_mut(&(to, key)).unwrap();
            assert!(!g.complete);
            g.complete = true;
        }
    }
    let mut expected = 0;
    for (key, m) in &sent {
        for &d in m.to.keys() {
            expected += 1;
            let g = got
                .get(&(d, *key))
                .unwrap_or_else(|| panic!("seed {seed:#x}: rank {d} never got {key:?}"));
            assert!(g.complete, "seed {seed:#x}: {key:?} incomplete at {d}");
            assert_eq!(g.data, m.data, "seed {seed:#x}: {key:?} at {d}");
        }
    }
    assert_eq!(got.len(), expected, "seed {seed:#x}");
    // Each root's messages to a rank carry 0, 1, 2, ... as many as it numbered.
    for ((root, to), mut s) in seqs {
        s.sort_unstable();
        assert!(
            s.iter().enumerate().all(|(i, &q)| q == i as u64),
            "seed {seed:#x}"
        );
        assert_eq!(
            fw[root as usize].sent_to(to),
            s.len() as u64,
            "seed {seed:#x}"
        );
    }
    for f in &fw {
        assert_eq!(f.relays_in_flight(), 0, "seed {seed:#x}: relays left");
    }
}

#[test]
fn whole_jobs_deliver_every_byte_once_down_the_tree() {
    for i in 0..60u64 {
        run_job(0xDB_0000 + i);
    }
}

// ---- Matcher ----

fn msg(root: u32, seq: u64, tag: i32, before_total: u64, before_tag: u64) -> Arrived {
    Arrived {
        key: Key {
            root,
            msg: 100 + seq,
        },
        tag,
        seq,
        len: 1,
        before_total,
        before_tag,
    }
}

fn want(source: Option<u32>, tag: Option<i32>) -> Want {
    Want { source, tag }
}

#[test]
fn a_message_waits_for_the_plain_messages_sent_before_it() {
    let mut m = Matcher::default();
    let a = msg(1, 0, 5, 1, 1);
    assert_eq!(m.post(10, want(Some(1), Some(5))), None);
    assert!(m.arrive(a).is_empty());
    assert_eq!(m.blocked(), vec![(10, a)]);
    assert_eq!(m.probe(want(None, Some(5))), None);
    // A plain message of another tag does not help a tag-5 receive.
    assert!(m.plain_received(1, 7).is_empty());
    // Nor one of another root.
    assert!(m.plain_received(2, 5).is_empty());
    assert_eq!(m.plain_received(1, 5), vec![(10, a)]);
    assert!(m.blocked().is_empty());
    assert_eq!((m.unmatched(), m.waiting()), (0, 0));
}

#[test]
fn any_tag_waits_for_every_plain_message_tag_for_its_own() {
    let mut m = Matcher::default();
    // Root 1 sent plain (tag 3), plain (tag 4), then this (tag 5).
    let a = msg(1, 0, 5, 2, 0);
    assert!(m.arrive(a).is_empty());
    // An any-tag receive must take a plain one first; a tag-5 receive may take it now.
    assert_eq!(m.probe(want(Some(1), None)), None);
    assert_eq!(m.post(1, want(Some(1), None)), None);
    assert_eq!(m.blocked(), vec![(1, a)]);
    assert_eq!(m.post(2, want(None, Some(5))), Some(a));
    // Another: any-tag only after both plain messages.
    let b = msg(1, 1, 6, 2, 0);
    assert!(m.arrive(b).is_empty());
    assert!(m.plain_received(1, 3).is_empty());
    assert_eq!(m.plain_received(1, 4), vec![(1, b)]);
}

#[test]
fn one_roots_messages_in_seq_order_whatever_their_arrival() {
    let mut m = Matcher::default();
    let (a, b) = (msg(4, 0, 2, 0, 0), msg(4, 1, 2, 0, 0));
    assert!(m.arrive(b).is_empty());
    assert_eq!(m.probe(want(None, None)), None);
    assert_eq!(m.unmatched(), 1);
    assert!(m.arrive(a).is_empty());
    assert_eq!(m.probe(want(Some(4), Some(2))), Some(a));
    assert_eq!(m.post(1, want(Some(4), Some(2))), Some(a));
    assert_eq!(m.post(2, want(Some(4), Some(2))), Some(b));
    // Posted first, then arriving in reverse: the first posted gets seq 0.
    let (c, d) = (msg(4, 2, 2, 0, 0), msg(4, 3, 2, 0, 0));
    assert_eq!(m.post(3, want(None, Some(2))), None);
    assert_eq!(m.post(4, want(None, None)), None);
    assert!(m.arrive(d).is_empty());
    assert_eq!(m.arrive(c), vec![(3, c), (4, d)]);
    // A repeated one is ignored.
    assert!(m.arrive(c).is_empty());
    assert_eq!(m.unmatched(), 0);
}

#[test]
fn an_earlier_message_not_eligible_blocks_later_ones_of_its_root() {
    let mut m = Matcher::default();
    // Inconsistent counts (a later one needs fewer plain messages): the receive must take
    // neither while the earlier waits.
    let (a, b) = (msg(1, 0, 5, 1, 1), msg(1, 1, 5, 0, 0));
    m.arrive(a);
    m.arrive(b);
    assert_eq!(m.post(1, want(None, Some(5))), None);
    assert_eq!(m.probe(want(None, Some(5))), None);
    // Another root is not blocked by it.
    let c = msg(2, 0, 5, 0, 0);
    assert_eq!(m.arrive(c), vec![(1, c)]);
    assert_eq!(m.post(2, want(Some(1), None)), None);
    // Receive 2 (any tag) takes `a` once the plain message came; `b` is then the next.
    assert_eq!(m.plain_received(1, 5), vec![(2, a)]);
    assert_eq!(m.post(3, want(None, Some(5))), Some(b));
    // The same with the receive posted first and the messages arriving after it.
    let mut m = Matcher::default();
    let (a, b) = (msg(1, 0, 5, 1, 1), msg(1, 1, 5, 0, 0));
    assert_eq!(m.post(1, want(None, Some(5))), None);
    assert!(m.arrive(b).is_empty());
    assert!(m.arrive(a).is_empty());
    assert_eq!(m.blocked(), vec![(1, a)]);
    assert_eq!(m.plain_received(1, 5), vec![(1, a)]);
    assert_eq!(m.post(2, want(None, None)), Some(b));
}

#[test]
fn unpair_puts_a_message_back_in_its_place() {
    let mut m = Matcher::default();
    let (a, b) = (msg(3, 0, 1, 0, 0), msg(3, 1, 1, 0, 0));
    let c = msg(5, 0, 1, 0, 0);
    assert_eq!(m.post(1, want(Some(3), None)), None);
    assert_eq!(m.arrive(a), vec![(1, a)]);
    m.arrive(c);
    m.arrive(b);
    // Receive 1 was completed by a plain message: `a` comes back before `b`.
    assert!(m.unpair(a).is_empty());
    assert_eq!(m.probe(want(Some(3), None)), Some(a));
    assert_eq!(m.probe(want(None, None)), Some(a));
    assert_eq!(m.post(2, want(None, Some(1))), Some(a));
    assert_eq!(m.post(3, want(None, None)), Some(c));
    assert_eq!(m.post(4, want(None, None)), Some(b));
    // Unpaired with a receive waiting: it goes there at once.
    assert_eq!(m.post(5, want(Some(3), None)), None);
    assert_eq!(m.post(6, want(None, None)), None);
    assert_eq!(m.unpair(b), vec![(5, b)]);
    // Behind an earlier unmatched one of its root.
    let d = msg(3, 2, 1, 0, 0);
    assert!(m.withdraw(6));
    assert!(!m.withdraw(6));
    m.arrive(d);
    m.unpair(b);
    assert_eq!(m.take(b.key), Some(b));
    assert_eq!(m.take(b.key), None);
    m.unpair(b);
    assert_eq!(m.post(7, want(None, None)), Some(b));
    assert_eq!(m.post(8, want(None, None)), Some(d));
}

/// The reference: the rule, brute force. After every change, pair (in visible order, each
/// message with the earliest-posted receive) until no pair is possible.
#[derive(Default)]
struct Reference {
    next: HashMap<u32, u64>,
    arrived: Vec<Arrived>,
    visible: Vec<Arrived>,
    posted: Vec<(RecvId, Want)>,
    plain: Vec<(u32, i32)>,
}

impl Reference {
    fn eligible(&self, w: &Want, m: &Arrived) -> bool {
        let r = m.key.root;
        let n = match w.tag {
            Some(t) => self.plain.iter().filter(|p| **p == (r, t)).count(),
            None => self.plain.iter().filter(|p| p.0 == r).count(),
        } as u64;
        n >= if w.tag.is_some() {
            m.before_tag
        } else {
            m.before_total
        }
    }

    fn can(&self, w: &Want, i: usize) -> bool {
        let m = &self.visible[i];
        accepts(w, m)
            && self.eligible(w, m)
            && self.visible[..i]
                .iter()
                .all(|e| e.key.root != m.key.root || !accepts(w, e))
    }

    fn fixpoint(&mut self) -> Vec<(RecvId, Arrived)> {
        let mut out = Vec::new();
        'again: loop {
            for i in 0..self.visible.len() {
                for j in 0..self.posted.len() {
                    if self.can(&self.posted[j].1, i) {
                        let (id, _) = self.posted.remove(j);
                        out.push((id, self.visible.remove(i)));
                        continue 'again;
                    }
                }
            }
            return out;
        }
    }

    fn arrive(&mut self, m: Arrived) -> Vec<(RecvId, Arrived)> {
        self.arrived.push(m);
        loop {
            let root = m.key.root;
            let next = self.next.get(&root).copied().unwrap_or(0);
            let Some(i) = self
                .arrived
                .iter()
                .position(|a| a.key.root == root && a.seq == next)
            else {
                break;
            };
            self.visible.push(self.arrived.remove(i));
            self.next.insert(root, next + 1);
        }
        self.fixpoint()
    }

    fn post(&mut self, id: RecvId, w: Want) -> Option<Arrived> {
        self.posted.push((id, w));
        let p = self.fixpoint();
        assert!(p.len() <= 1, "a post made other pairs: {p:?}");
        p.first().map(|&(got, m)| {
            assert_eq!(got, id);
            m
        })
    }

    fn probe(&self, w: &Want) -> Option<Arrived> {
        (0..self.visible.len())
            .find(|&i| self.can(w, i))
            .map(|i| self.visible[i])
    }

    fn blocked(&self) -> Vec<(RecvId, Arrived)> {
        let mut out = Vec::new();
        for m in &self.visible {
            for (id, w) in &self.posted {
                if accepts(w, m) && !self.eligible(w, m) {
                    out.push((*id, *m));
                    break;
                }
            }
        }
        out
    }
}

/// What one root sends to this rank: plain messages and dynamic broadcasts, interleaved,
/// with the counts a `Forwarder` caller would give.
fn stream(r: &mut Rng, root: u32, len: usize) -> (Vec<Arrived>, Vec<i32>) {
    let (mut dyns, mut plain) = (Vec::new(), Vec::new());
    let mut per_tag: HashMap<i32, u64> = HashMap::new();
    for _ in 0..len {
        let tag = r.below(3) as i32;
        if r.chance(40) {
            plain.push(tag);
            *per_tag.entry(tag).or_insert(0) += 1;
        } else {
            let seq = dyns.len() as u64;
            dyns.push(Arrived {
                key: Key { root, msg: seq },
                tag,
                seq,
                len: 0,
                before_total: plain.len() as u64,
                before_tag: per_tag.get(&tag).copied().unwrap_or(0),
            });
        }
    }
    (dyns, plain)
}

fn differential(seed: u64) {
    let mut r = Rng::new(seed);
    let roots = 1 + r.below(3) as u32;
    let mut dyns: Vec<Vec<Arrived>> = Vec::new();
    // Per root, per tag, the plain messages still to come (MPI keeps their order per tag).
    let mut plain: Vec<Vec<i32>> = Vec::new();
    for root in 0..roots {
        let len = 1 + r.below(25);
        let (d, p) = stream(&mut r, root, len);
        dyns.push(d);
        plain.push(p);
    }
    let mut m = Matcher::default();
    let mut x = Reference::default();
    let mut paired: Vec<Arrived> = Vec::new();
    let mut next_id: RecvId = 0;
    let rand_want = |r: &mut Rng| Want {
        source: (!r.chance(40)).then(|| r.below(roots as usize + 1) as u32),
        tag: (!r.chance(40)).then(|| r.below(3) as i32),
    };
    for step in 0..400 {
        let ctx = format!("seed {seed:#x} step {step}");
        match r.below(8) {
            0 | 1 => {
                // A dynamic broadcast arrives: one of the first three of a root still to
                // come (they overtake each other).
                let root = r.below(roots as usize);
                if dyns[root].is_empty() {
                    continue;
                }
                let i = r.below(dyns[root].len().min(3));
                let a = dyns[root].remove(i);
                let got = m.arrive(a);
                paired.extend(got.iter().map(|p| p.1));
                assert_eq!(got, x.arrive(a), "{ctx}");
            }
            2 => {
                let root = r.below(roots as usize);
                if plain[root].is_empty() {
                    continue;
                }
                // Any tag's next one: across tags MPI may match them in any order.
                let i = r.below(plain[root].len());
                let tag = plain[root][i];
                let first = plain[root].iter().position(|&t| t == tag).unwrap();
                plain[root].remove(first);
                x.plain.push((root as u32, tag));
                let got = m.plain_received(root as u32, tag);
                paired.extend(got.iter().map(|p| p.1));
                assert_eq!(got, x.fixpoint(), "{ctx}");
            }
            3 | 4 => {
                let w = rand_want(&mut r);
                next_id += 1;
                let got = m.post(next_id, w);
                paired.extend(got);
                assert_eq!(got, x.post(next_id, w), "{ctx}");
            }
            5 => {
                if x.posted.is_empty() {
                    continue;
                }
                let (id, _) = x.posted.remove(r.below(x.posted.len()));
                assert!(m.withdraw(id), "{ctx}");
                assert!(x.fixpoint().is_empty(), "{ctx}");
            }
            6 => {
                if paired.is_empty() {
                    continue;
                }
                let a = paired.remove(r.below(paired.len()));
                let got = m.unpair(a);
                paired.extend(got.iter().map(|p| p.1));
                let at = x
                    .visible
                    .iter()
                    .rposition(|e| e.key.root == a.key.root && e.seq < a.seq)
                    .map_or(0, |i| i + 1);
                x.visible.insert(at, a);
                assert_eq!(got, x.fixpoint(), "{ctx}");
            }
            _ => {
                let w = rand_want(&mut r);
                let p = m.probe(w);
                assert_eq!(p, x.probe(&w), "{ctx}");
                if let Some(p) = p {
                    if r.chance(50) {
                        assert_eq!(m.take(p.key), Some(p), "{ctx}");
                        let i = x.visible.iter().position(|e| e.key == p.key).unwrap();
                        x.visible.remove(i);
                        assert!(x.fixpoint().is_empty(), "{ctx}");
                        paired.push(p);
                    }
                }
            }
        }
        assert_eq!(m.blocked(), x.blocked(), "{ctx}");
        assert_eq!(m.unmatched(), x.visible.len() + x.arrived.len(), "{ctx}");
        assert_eq!(m.waiting(), x.posted.len(), "{ctx}");
        let posted: BTreeSet<RecvId> = x.posted.iter().map(|p| p.0).collect();
        let mine: BTreeSet<RecvId> = m.posted.iter().map(|p| p.0).collect();
        assert_eq!(posted, mine, "{ctx}");
    }
}

#[test]
fn matcher_against_brute_force() {
    for i in 0..400u64 {
        differential(0xDB_3000 + i);
    }
}
