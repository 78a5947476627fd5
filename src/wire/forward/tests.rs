//! Segments against their own format, and whole jobs of forwarders exchanging segments over
//! simulated links that keep each sender's order to each receiver (as MPI point-to-point
//! does) but interleave links at random: every destination gets every byte of every
//! multicast exactly once and in its root's order, nobody else gets anything, and nothing is
//! left in flight.

use super::*;
use crate::algo::prefix::{Pick, Shape, Topology};
use crate::sched::testutil::Rng;
use crate::wire::matching::{Matcher, Want};
use std::collections::{BTreeMap, VecDeque};

#[test]
fn segments_round_trip_and_reject_the_rest() {
    let h = SegHeader {
        root: 3,
        tag: -7,
        msg: 42,
        total_len: 20,
        seg: 0,
        nsegs: 3,
        envelope: false,
    };
    let ds = [Dest { rank: 1, seq: 9 }, Dest { rank: 5, seq: 0 }];
    let mut b = Vec::new();
    encode(&h, Some(&ds), &[1; 8], &mut b);
    let s = decode(&b, 8).unwrap();
    assert_eq!(s.h, h);
    assert_eq!(s.dests.as_deref(), Some(&ds[..]));
    assert_eq!(&b[s.payload_at..], &[1; 8]);
    // Later segments carry no list; the last is short.
    encode(&SegHeader { seg: 2, ..h }, None, &[2; 4], &mut b);
    let s = decode(&b, 8).unwrap();
    assert_eq!((s.h.seg, s.dests.is_none()), (2, true));
    // Wrong: the length of a segment, a list on a later segment, none on the first, the
    // segment count for the size, the magic, and every truncation.
    encode(&SegHeader { seg: 2, ..h }, None, &[2; 5], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&SegHeader { seg: 1, ..h }, Some(&ds), &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&h, None, &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&SegHeader { nsegs: 2, ..h }, Some(&ds), &[2; 8], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&h, Some(&ds), &[1; 8], &mut b);
    for n in 0..b.len() {
        assert!(decode(&b[..n], 8).is_err(), "cut to {n}");
    }
    b[0] ^= 1;
    assert_eq!(decode(&b, 8), Err(Reject::BadKind));
    // An empty message is one empty segment.
    encode(
        &SegHeader {
            total_len: 0,
            nsegs: 1,
            ..h
        },
        Some(&ds),
        &[],
        &mut b,
    );
    assert!(decode(&b, 8).is_ok());
    // An envelope: one first segment without payload, whatever the length and segment size.
    let e = SegHeader {
        total_len: 1 << 20,
        nsegs: 1,
        envelope: true,
        ..h
    };
    encode(&e, Some(&ds), &[], &mut b);
    let s = decode(&b, 8).unwrap();
    assert_eq!((s.h, s.payload_at), (e, b.len()));
    // Wrong: an envelope with payload, with a segment count for the length, without a list;
    // an unknown flag.
    encode(&e, Some(&ds), &[1], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(
        &SegHeader {
            nsegs: 1 << 17,
            ..e
        },
        Some(&ds),
        &[],
        &mut b,
    );
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&e, None, &[], &mut b);
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    encode(&e, Some(&ds), &[], &mut b);
    b[3] |= 4;
    assert_eq!(decode(&b, 8), Err(Reject::Malformed));
    assert_eq!(nsegs(0, 8), 1);
    assert_eq!(nsegs(17, 8), 3);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut r = Rng::new(0xF0F0);
    for _ in 0..20_000 {
        let len = r.below(120);
        let mut b: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
        if len >= 4 && r.chance(50) {
            b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            b[2] = VERSION;
            b[3] = r.below(8) as u8;
        }
        let _ = decode(&b, 1 + r.below(64));
    }
}

/// A job of forwarders over one topology.
fn job(n: u32, base: u32, r: &mut Rng, route: Route, seg: usize) -> Vec<Forwarder> {
    let shape = Shape::for_ranks(base, u64::from(n) * 3).unwrap();
    // Holes: the ranks take a random subset of the ID space.
    let space = 1u64 << (shape.bits() * shape.digits());
    let mut ids: Vec<u64> = Vec::new();
    while ids.len() < n as usize {
        let v = r.next_u64() % space;
        if !ids.contains(&v) {
            ids.push(v);
        }
    }
    let topo = Arc::new(Topology::new(shape, ids).unwrap());
    (0..n)
        .map(|me| {
            let pick = if me % 2 == 0 {
                Pick::Nearest
            } else {
                Pick::Random { seed: 7 }
            };
            let table = RoutingTable::build(&topo, me, pick);
            Forwarder::new(me, topo.clone(), table, route, seg)
        })
        .collect()
}

/// What a destination saw of one multicast.
#[derive(Default)]
struct Got {
    arrived: Option<Arrived>,
    data: Vec<u8>,
    complete: bool,
}

fn run_job(seed: u64, route: Route) {
    let mut r = Rng::new(seed);
    let n = 1 + r.below(40) as u32;
    let base = [2, 4, 8, 16][r.below(4)];
    let seg = 1 + r.below(40);
    let mut fw = job(n, base, &mut r, route, seg);
    // Links: (from, to) -> FIFO of segments.
    let mut links: BTreeMap<(u32, u32), VecDeque<Arc<[u8]>>> = BTreeMap::new();
    let mut sent: Vec<(MsgKey, Vec<u32>, Vec<u8>, i32)> = Vec::new();
    let mut got: HashMap<(u32, MsgKey), Got> = HashMap::new();
    let mut order: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    let multicasts = 1 + r.below(30);
    let mut started = 0;
    loop {
        // Start a multicast now and then, while segments are in flight.
        if started < multicasts && (r.chance(30) || links.values().all(|q| q.is_empty())) {
            started += 1;
            let root = r.below(n as usize) as u32;
            let mut dests: Vec<u32> = (0..n).filter(|&d| d != root && r.chance(40)).collect();
            if dests.is_empty() && n > 1 {
                dests.push((root + 1) % n);
            }
            for i in (1..dests.len()).rev() {
                dests.swap(i, r.below(i + 1));
            }
            let len = r.below(4 * seg + 3);
            let data: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
            let tag = r.below(3) as i32;
            // A quarter go as envelopes (their data by IP multicast, not simulated here).
            let s = if r.chance(25) {
                fw[root as usize].start_envelope(&dests, tag, data.len() as u64)
            } else {
                fw[root as usize].start(&dests, tag, &data)
            };
            for o in s.send {
                links.entry((root, o.to)).or_default().push_back(o.bytes);
            }
            sent.push((s.key, dests, data, tag));
            continue;
        }
        let busy: Vec<(u32, u32)> = links
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if busy.is_empty() {
            break;
        }
        let (from, to) = busy[r.below(busy.len())];
        let bytes = links.get_mut(&(from, to)).unwrap().pop_front().unwrap();
        let h = fw[to as usize]
            .handle(from, bytes.clone())
            .unwrap_or_else(|e| panic!("seed {seed:#x}: rank {to} refused a segment: {e:?}"));
        let passed_on: Vec<u32> = h.send.iter().map(|o| o.to).collect();
        for o in h.send {
            assert_ne!(o.to, to, "seed {seed:#x}: a rank sent to itself");
            links.entry((to, o.to)).or_default().push_back(o.bytes);
        }
        // What a timeout's message says this rank still passes on: messages with segments
        // to come, going on to the ranks this segment went to (for the message just seen).
        for (src, key, next, left) in fw[to as usize].relays() {
            assert!(left > 0, "seed {seed:#x}: a finished relay kept");
            assert!(!next.contains(&to), "seed {seed:#x}: relays to itself");
            let seg_key = decode(&bytes, seg)
                .map(|d| MsgKey {
                    root: d.h.root,
                    msg: d.h.msg,
                })
                .unwrap();
            if (src, key) == (from, seg_key) {
                let mut want = passed_on.clone();
                let mut have = next.to_vec();
                want.sort_unstable();
                have.sort_unstable();
                assert_eq!(have, want, "seed {seed:#x}: rank {to} relays {key:?}");
            }
        }
        if let Some(a) = h.arrived {
            let g = got.entry((to, a.key)).or_default();
            assert!(
                g.arrived.is_none(),
                "seed {seed:#x}: rank {to} got {:?} twice",
                a.key
            );
            g.arrived = Some(a);
            order.entry((to, a.key.root)).or_default().push(a.seq);
            if h.envelope {
                // Its data is the datagrams' business: none comes here.
                assert!(h.data.is_none() && h.complete.is_none(), "seed {seed:#x}");
                let sent = sent.iter().find(|m| m.0 == a.key).unwrap();
                g.data = sent.2.clone();
                g.complete = true;
            }
        } else {
            assert!(!h.envelope, "seed {seed:#x}: an envelope without arrival");
        }
        if let Some((key, offset, range)) = h.data {
            let g = got.entry((to, key)).or_default();
            assert!(
                g.arrived.is_some(),
                "seed {seed:#x}: data before the first segment"
            );
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
    for (key, dests, data, tag) in &sent {
        for &d in dests {
            expected += 1;
            let g = got
                .get(&(d, *key))
                .unwrap_or_else(|| panic!("seed {seed:#x}: rank {d} never got {key:?}"));
            let a = g.arrived.unwrap();
            assert_eq!((a.tag, a.len), (*tag, data.len() as u64), "seed {seed:#x}");
            assert!(g.complete, "seed {seed:#x}: {key:?} incomplete at {d}");
            assert_eq!(&g.data, data, "seed {seed:#x}: {key:?} at {d}");
        }
    }
    assert_eq!(
        got.len(),
        expected,
        "seed {seed:#x}: deliveries to non-destinations"
    );
    // Each root's multicasts to a rank carry 0, 1, 2, ... (the order they arrived in may
    // differ: the matcher restores it).
    for ((_, _), mut seqs) in order {
        seqs.sort_unstable();
        assert!(
            seqs.iter().enumerate().all(|(i, &s)| s == i as u64),
            "seed {seed:#x}"
        );
    }
    for f in &fw {
        assert_eq!(f.relays_in_flight(), 0, "seed {seed:#x}: relays left");
    }
}

#[test]
fn whole_jobs_deliver_every_byte_once_by_both_routes() {
    for i in 0..300u64 {
        run_job(0xF00D_0000 + i, Route::Dests);
        run_job(0xBEEF_0000 + i, Route::Table);
    }
}

#[test]
fn matching_keeps_each_roots_order_and_mpi_rules() {
    let a = |root, msg, tag, seq| Arrived {
        key: MsgKey { root, msg },
        tag,
        seq,
        len: 1,
    };
    let any = Want {
        source: None,
        tag: None,
    };
    let mut m = Matcher::default();
    // Root 3's second multicast overtook its first: invisible until the first comes.
    assert_eq!(m.post(1, any), None);
    assert!(m.arrive(a(3, 11, 5, 1)).is_empty());
    assert_eq!(m.probe(any), None);
    let got = m.arrive(a(3, 10, 5, 0));
    assert_eq!(got, vec![(1, a(3, 10, 5, 0))]);
    assert_eq!(m.probe(any), Some(a(3, 11, 5, 1)));
    // A receive for another tag or source passes it by; a matching one takes it.
    let t6 = Want {
        source: None,
        tag: Some(6),
    };
    let s2 = Want {
        source: Some(2),
        tag: None,
    };
    assert_eq!(m.post(2, t6), None);
    assert_eq!(m.post(3, s2), None);
    assert_eq!(m.waiting(), 2);
    assert_eq!(
        m.post(
            4,
            Want {
                source: Some(3),
                tag: Some(5)
            }
        ),
        Some(a(3, 11, 5, 1))
    );
    // Posted receives are tried in the order they were posted: rank 2's tag-6 message goes
    // to receive 2 (posted first), not 3.
    assert_eq!(m.arrive(a(2, 0, 6, 0)), vec![(2, a(2, 0, 6, 0))]);
    assert!(m.withdraw(3));
    assert!(!m.withdraw(3));
    // Probe, then take what it found.
    m.arrive(a(2, 1, 7, 1));
    let p = m.probe(s2).unwrap();
    assert_eq!(m.take(p.key), Some(p));
    assert_eq!(m.unmatched(), 0);
    assert!(m.unmatched_list().is_empty());
    // What came and was never taken, as a closing engine names it: the visible ones, then
    // those still held back behind a missing earlier one.
    m.arrive(a(5, 0, 1, 0));
    m.arrive(a(6, 4, 1, 3));
    assert_eq!(m.unmatched_list(), vec![a(5, 0, 1, 0), a(6, 4, 1, 3)]);
    assert_eq!(m.unmatched(), 2);
}
