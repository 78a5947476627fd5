//! Pipelined broadcasts, as MPI libraries run them for long messages: the message is cut in
//! segments and every rank forwards segment k to its children as soon as segment k arrived,
//! so that all the links of the tree carry different segments at once.
//!
//! - `chain`: root -> next -> next ..., ranks ordered from the root (wrapping): every byte
//!   crosses every link once, about `nsegs + n - 2` segment times in all.
//! - `binary_tree`: the binary tree laid out like a heap over ranks relative to the root
//!   (`algo::tree`), each rank forwarding every segment to its two children.
//!
//! Segment k is the bytes `[k*seg, min((k+1)*seg, len))` of the user buffer (slot 0) and goes
//! with tag k, so that a segment can only match its own receive whatever order completions
//! are reported in; a message of 0 bytes is one empty segment. `relay` builds the schedule of
//! one rank of any such tree (also the dynamic broadcast's, `algo::dbcast_sched`).

use super::tree::{tree_children, tree_parent};
use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};

/// Number of segments of `seg` bytes (at least 1) in `len` bytes: at least one, an empty one
/// for an empty message.
pub fn num_segments(len: usize, seg: usize) -> usize {
    len.div_ceil(seg.max(1)).max(1)
}

/// Segment `k` of a message of `len` bytes in segments of `seg`, in the user buffer.
pub fn segment(len: usize, seg: usize, k: usize) -> BufRef {
    let seg = seg.max(1);
    let offset = (k * seg).min(len);
    BufRef {
        slot: 0,
        offset,
        len: seg.min(len - offset),
    }
}

/// In which order a rank that holds the whole message (the root) sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootOrder {
    /// Segment 0 to every child, then segment 1 to every child, ...
    SegmentMajor,
    /// Every segment to the first child, then every segment to the second, ... (the dynamic
    /// broadcast's root, `wire::dbcast::Forwarder::start`).
    ChildMajor,
}

/// The schedule of one rank of a pipelined tree broadcast of `len` bytes in segments of `seg`:
/// with a `parent`, it receives every segment from it (all receives posted at once, segment k
/// with tag k) and forwards segment k to each of `children`, in their order, once segment k
/// arrived; without, it is the root and sends every segment to every child in `root_order`.
/// Receives come first in the schedule, then the sends, each after its receive. A forwarding
/// rank's sends also start in the order it posts them (each `irequ` the one before), as a
/// library's loop over segments and children posts them: segment k + 1 may have arrived
/// while segment k waited for the CPU, and must not overtake it. (The root's sends are all
/// ready at once and start in schedule order anyway.)
pub fn relay(
    parent: Option<u32>,
    children: &[u32],
    len: usize,
    seg: usize,
    root_order: RootOrder,
) -> Schedule {
    let nsegs = num_segments(len, seg);
    let tag = |k: usize| u32::try_from(k).expect("segment count checked by the generator");
    let mut b = Builder::new();
    match parent {
        Some(p) => {
            let recvs: Vec<ActionId> = (0..nsegs)
                .map(|k| {
                    b.add(Op::Recv {
                        peer: p,
                        tag: tag(k),
                        buf: segment(len, seg, k),
                    })
                })
                .collect();
            let mut prev: Option<ActionId> = None;
            for (k, &r) in recvs.iter().enumerate() {
                for &c in children {
                    let s = b.add(Op::Send {
                        peer: c,
                        tag: tag(k),
                        buf: segment(len, seg, k),
                    });
                    b.requ(r, s);
                    if let Some(p) = prev {
                        b.irequ(p, s);
                    }
                    prev = Some(s);
                }
            }
        }
        None => {
            let send = |b: &mut Builder, c: u32, k: usize| {
                b.add(Op::Send {
                    peer: c,
                    tag: tag(k),
                    buf: segment(len, seg, k),
                });
            };
            match root_order {
                RootOrder::SegmentMajor => {
                    for k in 0..nsegs {
                        for &c in children {
                            send(&mut b, c, k);
                        }
                    }
                }
                RootOrder::ChildMajor => {
                    for &c in children {
                        for k in 0..nsegs {
                            send(&mut b, c, k);
                        }
                    }
                }
            }
        }
    }
    b.build()
        .expect("a relay's edges go from receives to later sends")
}

/// The schedule of `me` in a pipelined chain broadcast of `len` bytes from `root` over `n`
/// ranks, in segments of `seg` bytes: rank `root + v` (mod n) receives from `root + v - 1` and
/// forwards to `root + v + 1`. Panics unless `root < n` and `me < n`.
pub fn chain(n: u32, root: u32, me: u32, len: usize, seg: usize) -> Schedule {
    assert!(
        root < n && me < n,
        "chain broadcast over {n} ranks: root {root} and rank {me} must be below {n}"
    );
    let (n64, root64) = (u64::from(n), u64::from(root));
    let v = (u64::from(me) + n64 - root64) % n64;
    let abs = |vr: u64| ((vr + root64) % n64) as u32;
    let parent = (v > 0).then(|| abs(v - 1));
    let child: Vec<u32> = if v + 1 < n64 {
        vec![abs(v + 1)]
    } else {
        Vec::new()
    };
    relay(parent, &child, len, seg, RootOrder::SegmentMajor)
}

/// The schedule of `me` in a pipelined binary-tree broadcast of `len` bytes from `root` over
/// `n` ranks, in segments of `seg` bytes, on the heap-ordered tree of `algo::tree` (children
/// of relative rank v: 2v + 1 and 2v + 2). Panics unless `root < n` and `me < n`.
pub fn binary_tree(n: u32, root: u32, me: u32, len: usize, seg: usize) -> Schedule {
    let children: Vec<u32> = tree_children(n, root, me).collect();
    relay(
        tree_parent(n, root, me),
        &children,
        len,
        seg,
        RootOrder::SegmentMajor,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(s: &Schedule) -> Vec<Op> {
        s.actions().map(|(_, op)| op.clone()).collect()
    }

    fn buf(offset: usize, len: usize) -> BufRef {
        BufRef {
            slot: 0,
            offset,
            len,
        }
    }

    #[test]
    fn segments_cover_the_message() {
        assert_eq!(num_segments(0, 10), 1);
        assert_eq!(segment(0, 10, 0), buf(0, 0));
        assert_eq!(num_segments(10, 10), 1);
        assert_eq!(num_segments(11, 10), 2);
        assert_eq!(segment(11, 10, 1), buf(10, 1));
        assert_eq!(num_segments(5, 100), 1);
        assert_eq!(segment(5, 100, 0), buf(0, 5));
        for len in 0..50 {
            for seg in 1..12 {
                let mut at = 0;
                for k in 0..num_segments(len, seg) {
                    let s = segment(len, seg, k);
                    assert_eq!(s.offset, at);
                    assert!(s.len <= seg && (s.len > 0 || len == 0));
                    at += s.len;
                }
                assert_eq!(at, len);
            }
        }
    }

    #[test]
    fn chain_shapes() {
        // Root 2 of 4: 2 -> 3 -> 0 -> 1; 5 bytes in segments of 3.
        let s = chain(4, 2, 2, 5, 3);
        let send = |peer, tag, b| Op::Send { peer, tag, buf: b };
        let recv = |peer, tag, b| Op::Recv { peer, tag, buf: b };
        assert_eq!(ops(&s), [send(3, 0, buf(0, 3)), send(3, 1, buf(3, 2))]);
        let s = chain(4, 2, 0, 5, 3);
        assert_eq!(
            ops(&s),
            [
                recv(3, 0, buf(0, 3)),
                recv(3, 1, buf(3, 2)),
                send(1, 0, buf(0, 3)),
                send(1, 1, buf(3, 2)),
            ]
        );
        assert_eq!(s.dependents(0), [2]);
        assert_eq!(s.dependents(1), [3]);
        assert_eq!(s.start_dependents(2), [3]);
        assert_eq!(s.prerequisites(3), 2);
        assert_eq!(s.initially_ready().collect::<Vec<_>>(), [0, 1]);
        let s = chain(4, 2, 1, 5, 3);
        assert_eq!(ops(&s), [recv(0, 0, buf(0, 3)), recv(0, 1, buf(3, 2))]);
        assert!(chain(1, 0, 0, 100, 7).is_empty());
    }

    #[test]
    fn binary_tree_shapes() {
        // n = 7, root 0: rank 1 receives from 0 and forwards each segment to 3 then 4.
        let s = binary_tree(7, 0, 1, 4, 2);
        let peers: Vec<(bool, u32, u32)> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, tag, .. } => (true, *peer, *tag),
                Op::Recv { peer, tag, .. } => (false, *peer, *tag),
                _ => panic!("{op:?}"),
            })
            .collect();
        assert_eq!(
            peers,
            [
                (false, 0, 0),
                (false, 0, 1),
                (true, 3, 0),
                (true, 4, 0),
                (true, 3, 1),
                (true, 4, 1)
            ]
        );
        assert_eq!(s.dependents(0), [2, 3]);
        assert_eq!(s.dependents(1), [4, 5]);
        // Posting order: 2, 3, 4, 5.
        assert_eq!(
            (2..5)
                .map(|a| s.start_dependents(a).to_vec())
                .collect::<Vec<_>>(),
            [[3], [4], [5]]
        );
        // The root sends segment-major.
        let s = binary_tree(7, 0, 0, 4, 2);
        let peers: Vec<u32> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, .. } => *peer,
                _ => u32::MAX,
            })
            .collect();
        assert_eq!(peers, [1, 2, 1, 2]);
        // Root 5 of 7: relative children of 0 are 1 and 2, i.e. ranks 6 and 0.
        let s = binary_tree(7, 5, 5, 1, 1);
        assert!(matches!(s.op(0), Op::Send { peer: 6, .. }));
        assert!(matches!(s.op(1), Op::Send { peer: 0, .. }));
    }

    #[test]
    fn child_major_root() {
        let s = relay(None, &[4, 2], 4, 2, RootOrder::ChildMajor);
        let order: Vec<(u32, u32)> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { peer, tag, .. } => (*peer, *tag),
                _ => panic!(),
            })
            .collect();
        assert_eq!(order, [(4, 0), (4, 1), (2, 0), (2, 1)]);
    }
}
