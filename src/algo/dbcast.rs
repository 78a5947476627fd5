//! dbcast: the tree of a *dynamic broadcast* ("Using Dynamic Broadcasts to improve Task-Based
//! Runtime Performances", Euro-Par 2020, section 3). A root sends one piece of data to a list
//! of recipients that only it knows; the recipients did not agree on anything beforehand and
//! learn that they take part when the data comes. The routing travels with the data: a node
//! gets, with the data, the list of the nodes of its own subtree (trimmed: nothing of the
//! other subtrees) and passes the data on down that list by the same rule.
//!
//! The tree is binomial over the positions of the list. A node holding `k` entries (itself not
//! among them) sends first to the entry at 1-based position `p`, the largest power of two not
//! above `k`, handing it the entries after it (`p+1..=k`) as its subtree; then it goes on with
//! the `p-1` entries before it, the same way, until none are left. So every step at most
//! doubles the nodes that have the data and `n` recipients all have it after
//! `ceil(log2(n+1))` steps. The paper's Fig. 1 (root 0, recipients 1..6): 0 sends {5,6} to 4,
//! then {3} to 2 while 4 sends to 6, then {} to 1 while 2 sends to 3 and 4 to 5.
//!
//! Priorities: the paper reorders the list so that recipients of higher priority sit closer to
//! the root and get the data earlier. Here `order` places recipients on positions by the step
//! at which the position receives, the highest priorities on the earliest steps. Inside one
//! priority the caller's order is kept, or (`order_for` with a key) an order by a key such as the
//! topology ID, so that a subtree, which is a contiguous range of the list, holds ranks that
//! are close to each other.
//!
//! Long messages (ours, beyond the paper): a binomial root sends its whole data once per step,
//! `depth(n)` times, and its link is the bottleneck. With the data cut in segments, a chain
//! over the same list (each node forwards to the next entry, handing on the rest) sends every
//! byte once per link and pipelines: about `nsegs + n - 1` segment times against the binomial
//! root's `depth(n) * nsegs`. `shape_for` picks the chain for messages of at least
//! MPICAST_DBCAST_CHAIN_BYTES when that count is smaller. The chain keeps the priority rule
//! (the steps of a chain are its positions, so higher priorities sit earlier in it).
//!
//! Pure arithmetic: the messages that carry the lists are `wire::dbcast`'s.

use std::ops::Range;

/// One recipient as the root orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recipient {
    /// Its rank on the communicator.
    pub rank: u32,
    /// Its priority (higher: earlier).
    pub priority: i32,
}

/// The shape of the tree over a root's list, carried by every message (a forwarding rank
/// applies the root's choice to its own subtree list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// The paper's binomial tree (`children`).
    #[default]
    Binomial,
    /// A pipeline: each node sends to the first entry of its list, handing it the rest.
    Chain,
}

impl Shape {
    /// The children of a holder of `n` entries, in send order, as `children` gives them for
    /// the binomial tree: (index of the child, the range that is its subtree list).
    pub fn children(self, n: usize) -> Vec<(usize, Range<usize>)> {
        match self {
            Shape::Binomial => children(n),
            Shape::Chain if n == 0 => Vec::new(),
            Shape::Chain => vec![(0, 1..n)],
        }
    }

    /// The step (1 = first) at which each index of a root's list of n receives.
    pub fn steps(self, n: usize) -> Vec<u32> {
        match self {
            Shape::Binomial => steps(n),
            Shape::Chain => (1..=n as u32).collect(),
        }
    }
}

/// The shape for a message of `len` bytes cut in segments of `seg_bytes` to `n` recipients,
/// with chains allowed from `chain_bytes` on (None: never). A chain when the message is long
/// enough and its segment count model says it is faster: `n - 1 < (depth(n) - 1) * nsegs`,
/// i.e. the chain's `nsegs + n - 1` segment times under the binomial root's
/// `depth(n) * nsegs`.
pub fn shape_for(n: usize, len: u64, seg_bytes: usize, chain_bytes: Option<u64>) -> Shape {
    let seg = seg_bytes.max(1) as u64;
    let nsegs = len.div_ceil(seg).max(1);
    match chain_bytes {
        Some(min) if n >= 2 && len >= min => {
            let binomial_extra = u64::from(depth(n) - 1).saturating_mul(nsegs);
            if ((n - 1) as u64) < binomial_extra {
                Shape::Chain
            } else {
                Shape::Binomial
            }
        }
        _ => Shape::Binomial,
    }
}

/// The children of a node that holds a subtree list of `n` entries (the node itself is not in
/// the list), in the order it sends to them: (index of the child in the list, the range of the
/// list that is the child's own subtree list). Binomial: with k entries left, the child is the
/// entry at 1-based position p = largest power of two <= k, i.e. index p-1, its subtree is
/// indices p..k, then k = p-1 and repeat.
pub fn children(n: usize) -> Vec<(usize, Range<usize>)> {
    let mut out = Vec::with_capacity(depth(n) as usize);
    let mut k = n;
    while k > 0 {
        let p = 1usize << (usize::BITS - 1 - k.leading_zeros());
        out.push((p - 1, p..k));
        k = p - 1;
    }
    out
}

/// The step (1 = first) at which each index of a root's list of n receives, in the binomial
/// tree above when every send takes one step and a node sends its children one per step after
/// it received.
pub fn steps(n: usize) -> Vec<u32> {
    let mut out = vec![0; n];
    // (first index of a node's subtree list, its length, the step the node received at).
    let mut todo = vec![(0usize, n, 0u32)];
    while let Some((base, len, step)) = todo.pop() {
        for (slot, (c, sub)) in children(len).into_iter().enumerate() {
            let s = step + 1 + slot as u32;
            out[base + c] = s;
            todo.push((base + sub.start, sub.len(), s));
        }
    }
    out
}

/// Depth (number of steps until the last receives) for n recipients: ceil(log2(n+1)).
pub fn depth(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// The root's list in tree order. Without priorities (None, or all equal): the recipients in
/// the caller's order (Fig. 1 stays Fig. 1). With priorities: higher priority receives at an
/// earlier step: sort recipients stably by priority descending; sort positions by (step,
/// index); walk the recipients in classes of equal priority, each class takes the next
/// positions of that step order, and inside a class its positions are assigned in ascending
/// index order to the class's recipients in the caller's order.
///
/// Panics if `priorities` is given and its length is not the recipients'.
pub fn order(recipients: &[u32], priorities: Option<&[i32]>) -> Vec<Recipient> {
    arrange(Shape::Binomial, recipients, priorities, None)
}

/// The order for a tree of `shape` (the positions that receive earlier in that shape go to
/// the higher priorities), as `order` with `key` None. With a key (MPICAST_DBCAST_TREE=topo,
/// the topology ID value: ranks of one host have nearby keys), inside each priority class the
/// recipients are sorted by `key(rank)` (equal keys keep the caller's order) before they take
/// the class's ascending positions, so that subtrees, which are contiguous ranges of the list,
/// hold ranks that are close.
///
/// Panics if `priorities` is given and its length is not the recipients'.
pub fn order_for(
    shape: Shape,
    recipients: &[u32],
    priorities: Option<&[i32]>,
    key: Option<&dyn Fn(u32) -> u64>,
) -> Vec<Recipient> {
    arrange(shape, recipients, priorities, key)
}

fn arrange(
    shape: Shape,
    recipients: &[u32],
    priorities: Option<&[i32]>,
    key: Option<&dyn Fn(u32) -> u64>,
) -> Vec<Recipient> {
    let n = recipients.len();
    if let Some(p) = priorities {
        assert_eq!(
            p.len(),
            n,
            "dynamic broadcast: {} priorities for {n} recipients",
            p.len()
        );
    }
    let prio = |i: usize| priorities.map_or(0, |p| p[i]);
    // Recipients (their indices in the caller's list), highest priority first, stable.
    let mut by_prio: Vec<usize> = (0..n).collect();
    by_prio.sort_by_key(|&i| std::cmp::Reverse(prio(i)));
    // Positions, earliest step first.
    let st = shape.steps(n);
    let mut by_step: Vec<usize> = (0..n).collect();
    by_step.sort_by_key(|&i| (st[i], i));
    let mut out = vec![
        Recipient {
            rank: 0,
            priority: 0
        };
        n
    ];
    let mut at = 0;
    while at < n {
        let p = prio(by_prio[at]);
        let len = by_prio[at..].iter().take_while(|&&i| prio(i) == p).count();
        let class = &mut by_prio[at..at + len];
        if let Some(key) = key {
            // Stable: equal keys keep the caller's order.
            class.sort_by_key(|&i| key(recipients[i]));
        }
        let mut pos = by_step[at..at + len].to_vec();
        pos.sort_unstable();
        for (&i, &j) in class.iter().zip(&pos) {
            out[j] = Recipient {
                rank: recipients[i],
                priority: p,
            };
        }
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::Rng;

    #[test]
    fn fig1() {
        assert_eq!(children(6), vec![(3, 4..6), (1, 2..3), (0, 1..1)]);
        assert_eq!(children(2), vec![(1, 2..2), (0, 1..1)]);
        assert_eq!(children(1), vec![(0, 1..1)]);
        assert!(children(0).is_empty());
        assert_eq!(steps(6), vec![3, 2, 3, 1, 3, 2]);
        assert_eq!(depth(6), 3);
        let ranks: Vec<u32> = (1..=6).collect();
        let list = order(&ranks, None);
        assert_eq!(list.iter().map(|r| r.rank).collect::<Vec<_>>(), ranks);
        // Equal priorities change nothing either.
        let list = order(&ranks, Some(&[4; 6]));
        assert_eq!(list.iter().map(|r| r.rank).collect::<Vec<_>>(), ranks);
        assert!(list.iter().all(|r| r.priority == 4));
    }

    /// Walks the tree from the root: every index is reached once, subtree ranges are disjoint
    /// and cover the list, a child's step is its parent's plus its send slot.
    #[test]
    fn every_index_once_in_depth_steps() {
        for n in 0..=1024usize {
            let st = steps(n);
            let mut seen = vec![0u32; n];
            // (base, len, step of the holder)
            let mut todo = vec![(0usize, n, 0u32)];
            while let Some((base, len, step)) = todo.pop() {
                let ch = children(len);
                // The children and their subtrees partition the holder's list.
                let mut cover = vec![0u32; len];
                for (slot, (c, sub)) in ch.iter().enumerate() {
                    assert!(*c < len && sub.start == c + 1 && sub.end <= len, "n={n}");
                    cover[*c] += 1;
                    for i in sub.clone() {
                        cover[i] += 1;
                    }
                    seen[base + c] += 1;
                    assert_eq!(st[base + c], step + 1 + slot as u32, "n={n}");
                    todo.push((base + sub.start, sub.len(), st[base + c]));
                }
                assert!(cover.iter().all(|&c| c == 1), "n={n} len={len}");
            }
            assert!(seen.iter().all(|&s| s == 1), "n={n}");
            assert_eq!(st.iter().copied().max().unwrap_or(0), depth(n), "n={n}");
            assert_eq!(depth(n), (n as f64 + 1.0).log2().ceil() as u32, "n={n}");
        }
    }

    fn is_permutation(ranks: &[u32], prios: Option<&[i32]>, out: &[Recipient]) -> bool {
        let mut a: Vec<(u32, i32)> = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| (r, prios.map_or(0, |p| p[i])))
            .collect();
        let mut b: Vec<(u32, i32)> = out.iter().map(|r| (r.rank, r.priority)).collect();
        a.sort_unstable();
        b.sort_unstable();
        a == b
    }

    #[test]
    fn higher_priority_never_later() {
        let mut r = Rng::new(0xDB_0001);
        for _ in 0..2000 {
            let n = r.below(70);
            let mut ranks: Vec<u32> = (0..n as u32 * 2).filter(|_| r.chance(50)).collect();
            ranks.truncate(n);
            for i in (1..ranks.len()).rev() {
                ranks.swap(i, r.below(i + 1));
            }
            let levels = 1 + r.below(5);
            let prios: Vec<i32> = ranks.iter().map(|_| r.below(levels) as i32 - 2).collect();
            let by_topo = r.chance(50);
            let shape = if r.chance(30) {
                Shape::Chain
            } else {
                Shape::Binomial
            };
            let key = |k: u32| u64::from(k).reverse_bits();
            let out = match (by_topo, shape) {
                (false, Shape::Binomial) => order(&ranks, Some(&prios)),
                (true, _) => order_for(shape, &ranks, Some(&prios), Some(&key)),
                (false, _) => order_for(shape, &ranks, Some(&prios), None),
            };
            assert!(is_permutation(&ranks, Some(&prios), &out));
            let st = shape.steps(out.len());
            for i in 0..out.len() {
                for j in 0..out.len() {
                    if out[i].priority > out[j].priority {
                        assert!(st[i] <= st[j], "{out:?}");
                    }
                }
            }
            // Inside a class: ascending positions take the caller's order (or the key's).
            for i in 0..out.len() {
                for j in i + 1..out.len() {
                    if out[i].priority == out[j].priority {
                        let pos = |x: u32| ranks.iter().position(|&y| y == x).unwrap();
                        if by_topo {
                            let (a, b) = (
                                u64::from(out[i].rank).reverse_bits(),
                                u64::from(out[j].rank).reverse_bits(),
                            );
                            assert!(a < b || (a == b && pos(out[i].rank) < pos(out[j].rank)));
                        } else {
                            assert!(pos(out[i].rank) < pos(out[j].rank));
                        }
                    }
                }
            }
            let plain = order(&ranks, None);
            assert!(is_permutation(&ranks, None, &plain));
        }
    }

    #[test]
    fn chain_walks_the_list() {
        let c = Shape::Chain;
        assert!(c.children(0).is_empty());
        assert_eq!(c.children(1), vec![(0, 1..1)]);
        assert_eq!(c.children(6), vec![(0, 1..6)]);
        assert_eq!(c.steps(4), vec![1, 2, 3, 4]);
        assert_eq!(Shape::Binomial.children(6), children(6));
        assert_eq!(Shape::Binomial.steps(6), steps(6));
        // Priorities: the urgent recipient first in the chain, the others in the caller's
        // order.
        let out = order_for(c, &[1, 2, 3, 4], Some(&[0, 0, 5, 0]), None);
        let ranks: Vec<u32> = out.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![3, 1, 2, 4]);
    }

    #[test]
    fn shape_for_follows_the_segment_model() {
        let mib = 1u64 << 20;
        let seg = 64 << 10;
        let on = Some(mib);
        // Too short, one recipient, chains off, one segment: binomial.
        assert_eq!(shape_for(8, mib - 1, seg, on), Shape::Binomial);
        assert_eq!(shape_for(1, 8 * mib, seg, on), Shape::Binomial);
        assert_eq!(shape_for(8, 8 * mib, seg, None), Shape::Binomial);
        assert_eq!(
            shape_for(8, 8 * mib, 16 * mib as usize, Some(0)),
            Shape::Binomial
        );
        // 8 MiB in 128 segments to 2..8 recipients: a chain.
        for n in 2..=8 {
            assert_eq!(shape_for(n, 8 * mib, seg, on), Shape::Chain, "n={n}");
        }
        // n = 8: depth 4, a chain from 3 segments (7 < 3 * 3), not at 2 (7 < 6 is false).
        assert_eq!(shape_for(8, 3 << 16, seg, Some(0)), Shape::Chain);
        assert_eq!(shape_for(8, 2 << 16, seg, Some(0)), Shape::Binomial);
        // A thousand recipients and 16 segments: the chain's fill costs more than it saves.
        assert_eq!(shape_for(1000, mib, seg, Some(0)), Shape::Binomial);
    }

    #[test]
    fn priorities_on_fig1() {
        // Recipient 6 is urgent: it takes the step-1 position (index 3), the others keep
        // their order on the rest.
        let out = order(&[1, 2, 3, 4, 5, 6], Some(&[0, 0, 0, 0, 0, 9]));
        let ranks: Vec<u32> = out.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![1, 2, 3, 6, 4, 5]);
        assert_eq!(out[3].priority, 9);
        // Two classes: {5, 6} takes the first two positions in (step, index) order, 3 and 1,
        // in ascending index order; the others take 0, 2, 4, 5.
        let out = order(&[1, 2, 3, 4, 5, 6], Some(&[0, 0, 0, 0, 1, 1]));
        let ranks: Vec<u32> = out.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![1, 5, 2, 6, 3, 4]);
        // Topology: inside the class, by key.
        let out = order_for(Shape::Binomial, &[10, 3, 7, 1], None, Some(&u64::from));
        let ranks: Vec<u32> = out.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![1, 3, 7, 10]);
    }
}
