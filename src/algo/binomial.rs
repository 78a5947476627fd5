//! Broadcast on a binomial tree, generated as in the GOAL paper's Listing 2: in round r, a rank
//! whose rank relative to the root is below 2^r sends to the one 2^r above it, after its own
//! receive; the ranks in [2^r, 2^(r+1)) receive. ceil(log2 n) rounds, every message `len`
//! bytes of the user buffer (slot 0), tag 0.

use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};

/// Tag of the broadcast's messages.
pub const TAG_BINOMIAL: u32 = 0;

/// `me`'s rank relative to `root` among `n` ranks, with `n` as u64 and the way back from a
/// relative rank to a rank. Panics unless `root < n` and `me < n`.
fn relative(n: u32, root: u32, me: u32) -> (u64, u64, impl Fn(u64) -> u32) {
    assert!(
        root < n && me < n,
        "binomial broadcast over {n} ranks: root {root} and rank {me} must be below {n}"
    );
    let (n64, root64) = (u64::from(n), u64::from(root));
    let v = (u64::from(me) + n64 - root64) % n64;
    (n64, v, move |vr: u64| ((vr + root64) % n64) as u32)
}

/// The schedule of `me` in a binomial broadcast of `len` bytes from `root` over `n` ranks.
/// Panics unless `root < n` and `me < n`.
pub fn bcast(n: u32, root: u32, me: u32, len: usize) -> Schedule {
    let (n64, v, abs) = relative(n, root, me);
    let buf = BufRef {
        slot: 0,
        offset: 0,
        len,
    };
    let rounds = 64 - (n64 - 1).leading_zeros(); // ceil(log2 n); 0 for n = 1
    let mut b = Builder::new();
    let mut rcv: Option<ActionId> = None;
    for r in 0..rounds {
        let d = 1u64 << r;
        let mut send = None;
        if v + d < n64 && v < d {
            send = Some(b.add(Op::Send {
                peer: abs(v + d),
                tag: TAG_BINOMIAL,
                buf,
            }));
        }
        if let (Some(s), Some(rc)) = (send, rcv) {
            b.requ(rc, s);
        }
        if d <= v && v < 2 * d {
            rcv = Some(b.add(Op::Recv {
                peer: abs(v - d),
                tag: TAG_BINOMIAL,
                buf,
            }));
        }
    }
    b.build().expect("Listing 2 is acyclic by construction")
}

/// Relative rank `v`'s parent and children in the tree of `bcast` over `n` ranks: the parent
/// is `v` without its highest bit, the children `v + 2^r` for every `2^r > v` below `n`.
fn tree_of(n: u64, v: u64) -> (Option<u64>, Vec<u64>) {
    let parent = (v > 0).then(|| v - (1u64 << (63 - v.leading_zeros())));
    let first = if v == 0 { 0 } else { 64 - v.leading_zeros() };
    let children = (first..64)
        .map(|r| 1u64 << r)
        .take_while(|&d| v + d < n)
        .map(|d| v + d)
        .collect();
    (parent, children)
}

/// The schedule of `me` in the binomial broadcast as Open MPI's tuned component runs it
/// unsegmented (`coll_tuned_bcast_algorithm 6`, segment size 0: `ompi_coll_base_bcast_intra_generic`
/// on its binomial tree): a rank that holds the whole message posts its sends to all its
/// children at once and waits for them all; the sends share the rank's link (TCP divides it
/// evenly), so every child gets its copy at about the same time, when all copies are through.
/// LogGOPS sends one message at a time from a NIC; the sharing is modelled by cutting every
/// copy in segments of `seg` bytes sent round robin (segment k to every child, then k + 1),
/// each after the whole message arrived. The tree is `bcast`'s (isomorphic to Open MPI's, whose
/// children come in the other order, which no longer matters when they share). Segment k goes
/// with tag k. Panics unless `root < n` and `me < n`.
pub fn bcast_isend(n: u32, root: u32, me: u32, len: usize, seg: usize) -> Schedule {
    use super::pipeline::{num_segments, segment};
    let (n64, v, abs) = relative(n, root, me);
    let (parent, children) = tree_of(n64, v);
    let nsegs = num_segments(len, seg);
    let tag = |k: usize| u32::try_from(k).expect("segment count checked by the generator");
    let mut b = Builder::new();
    let recvs: Vec<ActionId> = match parent {
        Some(p) => (0..nsegs)
            .map(|k| {
                b.add(Op::Recv {
                    peer: abs(p),
                    tag: tag(k),
                    buf: segment(len, seg, k),
                })
            })
            .collect(),
        None => Vec::new(),
    };
    let mut prev: Option<ActionId> = None;
    for k in 0..nsegs {
        for &c in &children {
            let s = b.add(Op::Send {
                peer: abs(c),
                tag: tag(k),
                buf: segment(len, seg, k),
            });
            match prev {
                // The first send waits for the whole message; the others start after it, in
                // the order they are posted, and each reads the bytes of its own segment's
                // receive (an edge the validator checks, and true in any order of events).
                None => recvs.iter().for_each(|&r| b.requ(r, s)),
                Some(p) => {
                    b.irequ(p, s);
                    if let Some(&r) = recvs.get(k) {
                        b.requ(r, s);
                    }
                }
            }
            prev = Some(s);
        }
    }
    b.build()
        .expect("receives come before the sends that need them")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_for_eight_ranks() {
        // Root 0 sends to 1, 2, 4; rank 1 receives from 0 then sends to 3 and 5.
        let s = bcast(8, 0, 0, 4);
        let peers: Vec<_> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, .. } => *peer,
                _ => panic!("root only sends"),
            })
            .collect();
        assert_eq!(peers, [1, 2, 4]);
        let s = bcast(8, 0, 1, 4);
        assert_eq!(s.len(), 3);
        assert!(matches!(s.op(0), Op::Recv { peer: 0, .. }));
        assert_eq!(s.dependents(0), [1, 2]);
        let s = bcast(8, 0, 7, 4);
        assert_eq!(s.len(), 1);
        assert!(matches!(s.op(0), Op::Recv { peer: 3, .. }));
        assert!(bcast(1, 0, 0, 4).is_empty());
        // Root 3 of 5: relative ranks shift by 3.
        let s = bcast(5, 3, 3, 1);
        let peers: Vec<_> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, .. } => *peer,
                _ => u32::MAX,
            })
            .collect();
        assert_eq!(peers, [4, 0, 2]);
    }

    #[test]
    fn isend_tree_and_round_robin() {
        // The tree is bcast's: over 9 ranks, 0 -> 1 2 4 8, 1 -> 3 5, 3 -> 7, 2 -> 6.
        assert_eq!(tree_of(9, 0), (None, vec![1, 2, 4, 8]));
        assert_eq!(tree_of(9, 1), (Some(0), vec![3, 5]));
        assert_eq!(tree_of(9, 3), (Some(1), vec![7]));
        assert_eq!(tree_of(9, 6), (Some(2), vec![]));
        assert_eq!(tree_of(9, 8), (Some(0), vec![]));
        for n in 1..40u64 {
            for v in 1..n {
                let (p, _) = tree_of(n, v);
                assert!(tree_of(n, p.unwrap()).1.contains(&v), "{v} of {n}");
            }
        }
        // Rank 1 of 9, 10 bytes in segments of 4: three receives from 0 (tags 0 1 2), then
        // segment 0 to 3 and 5, segment 1 to 3 and 5, ...; the first send needs all receives.
        let s = bcast_isend(9, 0, 1, 10, 4);
        assert_eq!(s.len(), 3 + 6);
        let ops: Vec<(bool, u32, u32, usize)> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Recv { peer, tag, buf } => (false, *peer, *tag, buf.len),
                Op::Send { peer, tag, buf } => (true, *peer, *tag, buf.len),
                _ => panic!("only sends and receives"),
            })
            .collect();
        assert_eq!(
            ops,
            [
                (false, 0, 0, 4),
                (false, 0, 1, 4),
                (false, 0, 2, 2),
                (true, 3, 0, 4),
                (true, 5, 0, 4),
                (true, 3, 1, 4),
                (true, 5, 1, 4),
                (true, 3, 2, 2),
                (true, 5, 2, 2)
            ]
        );
        // The first send needs every receive; each later one its own segment's.
        assert_eq!(s.dependents(0), [3, 4]);
        assert_eq!(s.dependents(1), [3, 5, 6]);
        assert_eq!(s.dependents(2), [3, 7, 8]);
        // A leaf only receives; root 2 of 9 shifts ranks by 2.
        assert_eq!(bcast_isend(9, 0, 7, 10, 4).len(), 3);
        let s = bcast_isend(9, 2, 2, 8, 8);
        let peers: Vec<u32> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, .. } => *peer,
                _ => u32::MAX,
            })
            .collect();
        assert_eq!(peers, [3, 4, 6, 1]);
    }
}
