//! Broadcast on a binomial tree, generated as in the GOAL paper's Listing 2: in round r, a rank
//! whose rank relative to the root is below 2^r sends to the one 2^r above it, after its own
//! receive; the ranks in [2^r, 2^(r+1)) receive. ceil(log2 n) rounds, every message `len`
//! bytes of the user buffer (slot 0), tag 0.

use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};

/// Tag of the broadcast's messages.
pub const TAG_BINOMIAL: u32 = 0;

/// The schedule of `me` in a binomial broadcast of `len` bytes from `root` over `n` ranks.
/// Panics unless `root < n` and `me < n`.
pub fn bcast(n: u32, root: u32, me: u32, len: usize) -> Schedule {
    assert!(
        root < n && me < n,
        "binomial broadcast over {n} ranks: root {root} and rank {me} must be below {n}"
    );
    let (n64, root64) = (u64::from(n), u64::from(root));
    let v = (u64::from(me) + n64 - root64) % n64;
    let abs = |vr: u64| ((vr + root64) % n64) as u32;
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
}
