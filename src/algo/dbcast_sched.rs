//! The dynamic broadcast (`algo::dbcast`, docs/dbcast.md) as a per-rank schedule, so that the
//! simulator can time it: the root sends to every other rank, the recipient list in rank order
//! from the root (root + 1, root + 2, ... wrapping), without priorities. The shape is the
//! library's choice (`dbcast::shape_for` with the library's segment size and chain threshold,
//! `Config::default()`): the paper's binomial tree over the list (`dbcast::children`) for short
//! messages, the pipelined chain over it for long ones. The message travels in segments as
//! the transport sends it (`wire::dbcast::Forwarder`): the root sends every segment to its
//! first child, then every segment to the next; a forwarding rank passes each segment on to
//! all its children as it comes (`pipeline::relay`). What the model leaves out: the list and
//! the header that ride in the segments (a few bytes per recipient in the first segment).

use super::dbcast::{shape_for, Shape};
use super::pipeline::{relay, RootOrder};
use crate::sched::Schedule;

/// The library's defaults: (segment bytes, chain threshold), `MPICAST_SEGMENT_BYTES` and
/// `MPICAST_DBCAST_CHAIN_BYTES` unset.
pub fn library_defaults() -> (usize, Option<u64>) {
    let c = crate::config::Config::default();
    (c.segment_bytes, c.dbcast_chain_bytes.map(|b| b as u64))
}

/// The shape the library takes for `len` bytes from a root to the `n - 1` other ranks, in
/// segments of `seg` bytes, with the library's chain threshold.
pub fn shape(n: u32, len: usize, seg: usize) -> Shape {
    let recipients = n.saturating_sub(1) as usize;
    shape_for(recipients, len as u64, seg, library_defaults().1)
}

/// Where index `idx` of a root's list of `m` sits in the tree of `shape`: (the list index of
/// its parent, None for the root itself; the range of the list that is its own subtree).
/// Walks down from the root through the subtree that holds `idx`.
fn place(shape: Shape, m: usize, idx: usize) -> (Option<usize>, std::ops::Range<usize>) {
    let (mut holder, mut base, mut len) = (None, 0usize, m);
    'down: loop {
        for (c, sub) in shape.children(len) {
            if base + c == idx {
                return (holder, base + sub.start..base + sub.end);
            }
            if (base + sub.start..base + sub.end).contains(&idx) {
                holder = Some(base + c);
                base += sub.start;
                len = sub.len();
                continue 'down;
            }
        }
        unreachable!("index {idx} is in the list of {m}");
    }
}

/// The schedule of `me` in a dynamic broadcast of `len` bytes from `root` to every other of
/// the `n` ranks, in segments of `seg` bytes. Panics unless `root < n` and `me < n`.
pub fn bcast(n: u32, root: u32, me: u32, len: usize, seg: usize) -> Schedule {
    assert!(
        root < n && me < n,
        "dynamic broadcast over {n} ranks: root {root} and rank {me} must be below {n}"
    );
    let (n64, root64) = (u64::from(n), u64::from(root));
    let v = (u64::from(me) + n64 - root64) % n64;
    // List index i is relative rank i + 1.
    let rank_of = |i: usize| ((i as u64 + 1 + root64) % n64) as u32;
    let m = (n - 1) as usize;
    let shape = shape(n, len, seg);
    let (parent, sub) = if v == 0 {
        (None, 0..m)
    } else {
        let (p, sub) = place(shape, m, v as usize - 1);
        (Some(p.map_or(root, rank_of)), sub)
    };
    let children: Vec<u32> = shape
        .children(sub.len())
        .into_iter()
        .map(|(c, _)| rank_of(sub.start + c))
        .collect();
    relay(parent, &children, len, seg, RootOrder::ChildMajor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Op;

    fn peers(s: &Schedule) -> (Vec<u32>, Vec<u32>) {
        let (mut from, mut to) = (Vec::new(), Vec::new());
        for (_, op) in s.actions() {
            match op {
                Op::Recv { peer, .. } => from.push(*peer),
                Op::Send { peer, .. } => to.push(*peer),
                _ => panic!("{op:?}"),
            }
        }
        (from, to)
    }

    #[test]
    fn defaults_are_the_librarys() {
        assert_eq!(library_defaults(), (8 << 10, Some(128 << 10)));
    }

    #[test]
    fn fig1_as_schedules() {
        // Root 0, recipients 1..6, one segment: 0 sends to 4, 2, 1; 4 to 6 then 5; 2 to 3.
        let s = |me| peers(&bcast(7, 0, me, 8, 8 << 10));
        assert_eq!(s(0), (vec![], vec![4, 2, 1]));
        assert_eq!(s(4), (vec![0], vec![6, 5]));
        assert_eq!(s(2), (vec![0], vec![3]));
        assert_eq!(s(1), (vec![0], vec![]));
        assert_eq!(s(3), (vec![2], vec![]));
        assert_eq!(s(6), (vec![4], vec![]));
        assert_eq!(s(5), (vec![4], vec![]));
        // Root 3 of 7: the same tree shifted by 3.
        let s = |me| peers(&bcast(7, 3, me, 8, 8 << 10));
        assert_eq!(s(3), (vec![], vec![0, 5, 4]));
        assert_eq!(s(0), (vec![3], vec![2, 1]));
    }

    #[test]
    fn long_messages_go_down_the_chain() {
        // 1 MiB in 8 KiB segments to 7 recipients: 128 segments, a chain 0 -> 1 -> ... -> 7.
        let len = 1 << 20;
        assert_eq!(shape(8, len, 8 << 10), Shape::Chain);
        let s = bcast(8, 0, 0, len, 8 << 10);
        assert_eq!(s.len(), 128);
        let (from, to) = peers(&bcast(8, 0, 3, len, 8 << 10));
        assert!(from.iter().all(|&p| p == 2) && from.len() == 128);
        assert!(to.iter().all(|&p| p == 4) && to.len() == 128);
        // Below the 128 KiB threshold: the binomial tree, two segments each hop, the root
        // child-major.
        assert_eq!(shape(8, 16 << 10, 8 << 10), Shape::Binomial);
        let (_, to) = peers(&bcast(8, 0, 0, 16 << 10, 8 << 10));
        assert_eq!(to, [4, 4, 2, 2, 1, 1]);
        // One rank: nothing to do.
        assert!(bcast(1, 0, 0, len, 8 << 10).is_empty());
    }

    #[test]
    fn every_index_has_one_parent() {
        for shape in [Shape::Binomial, Shape::Chain] {
            for m in 1..70usize {
                for idx in 0..m {
                    let (p, sub) = place(shape, m, idx);
                    // The subtree follows the index; the parent lists it among its children.
                    assert_eq!(sub.start, idx + 1, "{shape:?} m {m} idx {idx}");
                    let (pbase, plen) = match p {
                        None => (0, m),
                        Some(p) => {
                            let (_, ps) = place(shape, m, p);
                            (ps.start, ps.len())
                        }
                    };
                    assert!(shape
                        .children(plen)
                        .iter()
                        .any(|(c, s)| pbase + c == idx && pbase + s.end == sub.end));
                }
            }
        }
    }
}
