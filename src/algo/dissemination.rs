//! Allreduce by n-way dissemination with a reduction, generated after the GOAL paper's Listing 3:
//! in round r every rank sends its partial result to the `ways` ranks `w * (ways+1)^r` above
//! it and receives from the `ways` ranks as far below, then folds the received partials into
//! its own with `exec`. After ceil(log_(ways+1) n) rounds everyone holds the reduction of all.
//!
//! Two things differ from the listing, both found by the simulation and the validator:
//! - Dissemination counts some contributions twice unless n is a power of ways+1, which is
//!   harmless for max/min/band/bor but wrong for sum. So the rounds run over the largest
//!   power P <= n, and the other ranks fold in first (rank P + j*P + t sends to rank t, which
//!   reduces it before round 0) and get the result back at the end.
//! - The listing leaves buffer hazards to the reader (the next round's receives overwrite
//!   `buf[w]` while the previous reduction may still read it; a reduction writes `localbuf`
//!   while the previous round's sends may still read it; for ways > 1 the last `exec` does
//!   not wait for the chain that feeds it, and the rounds' final reduction is missing). Here
//!   every dependency comes from one rule: an action waits for the last writer of what it
//!   reads or writes, and a writer also for the readers since that write. That yields the
//!   listing's `requ` edges plus exactly the ones the hazards need.
//!
//! Buffers: slot 0 (`buf`, `len` bytes) holds the rank's input and receives the result; slot
//! 1 (`tmp`) holds `ways * len` bytes of received partials. Tags: round r uses tag r, the fold
//! in tag K and the fold out tag K+1, where K is the number of rounds.

use crate::sched::{ActionId, BufRef, Builder, Func, Op, Schedule};

/// Slot of the received partials.
pub const TMP_SLOT: u16 = 1;

/// Rounds K and the power P = (ways+1)^K <= n that the rounds run over.
pub fn rounds(n: u32, ways: u32) -> (u32, u32) {
    let base = u64::from(ways) + 1;
    let (mut p, mut k) = (1u64, 0u32);
    while p * base <= u64::from(n) {
        p *= base;
        k += 1;
    }
    (k, p as u32)
}

/// Orders actions by what they read and write (regions are indices).
struct Hazards {
    last_write: Vec<Option<ActionId>>,
    readers: Vec<Vec<ActionId>>,
}

impl Hazards {
    fn new(regions: usize) -> Self {
        Hazards {
            last_write: vec![None; regions],
            readers: vec![Vec::new(); regions],
        }
    }
    fn read(&mut self, b: &mut Builder, region: usize, a: ActionId) {
        if let Some(w) = self.last_write[region] {
            b.requ(w, a);
        }
        self.readers[region].push(a);
    }
    fn write(&mut self, b: &mut Builder, region: usize, a: ActionId) {
        if let Some(w) = self.last_write[region] {
            b.requ(w, a);
        }
        for r in self.readers[region].drain(..) {
            if r != a {
                b.requ(r, a);
            }
        }
        self.last_write[region] = Some(a);
    }
}

/// The schedule of `me` in an allreduce of `len` bytes with `func` over `n` ranks by
/// `ways`-way dissemination. Panics unless `me < n` and `ways >= 1`.
pub fn allreduce(n: u32, ways: u32, me: u32, len: usize, func: Func) -> Schedule {
    assert!(
        me < n,
        "allreduce over {n} ranks: rank {me} must be below {n}"
    );
    assert!(ways >= 1, "dissemination needs at least one way");
    let (k, p) = rounds(n, ways);
    let local = BufRef {
        slot: 0,
        offset: 0,
        len,
    };
    let tmp = |w: u32| BufRef {
        slot: TMP_SLOT,
        offset: w as usize * len,
        len,
    };
    // Region 0 is the local buffer, region 1 + w is tmp[w].
    const LOCAL: usize = 0;
    let t = |w: u32| 1 + w as usize;
    let mut b = Builder::new();
    let mut h = Hazards::new(1 + ways as usize);
    let fold_in = k;
    let fold_out = k + 1;

    if me >= p {
        let core = (me - p) % p;
        let s = b.add(Op::Send {
            peer: core,
            tag: fold_in,
            buf: local,
        });
        h.read(&mut b, LOCAL, s);
        let r = b.add(Op::Recv {
            peer: core,
            tag: fold_out,
            buf: local,
        });
        h.write(&mut b, LOCAL, r);
        return b.build().expect("acyclic by construction");
    }

    let extras: Vec<u32> = (1..)
        .map(|j: u64| u64::from(me) + j * u64::from(p))
        .take_while(|&e| e < u64::from(n))
        .map(|e| e as u32)
        .collect();
    debug_assert!(extras.len() <= ways as usize);
    for (j, &e) in extras.iter().enumerate() {
        let j = j as u32;
        let r = b.add(Op::Recv {
            peer: e,
            tag: fold_in,
            buf: tmp(j),
        });
        h.write(&mut b, t(j), r);
        let x = b.add(Op::Exec {
            func,
            src: tmp(j),
            dst: local,
        });
        h.read(&mut b, t(j), x);
        h.write(&mut b, LOCAL, x);
    }

    let reduce = |b: &mut Builder, h: &mut Hazards| {
        // Listing 3: buf[w] = buf[w-1] op buf[w] along the chain, then localbuf += buf[n-1].
        for w in 1..ways {
            let x = b.add(Op::Exec {
                func,
                src: tmp(w - 1),
                dst: tmp(w),
            });
            h.read(b, t(w - 1), x);
            h.write(b, t(w), x);
        }
        let x = b.add(Op::Exec {
            func,
            src: tmp(ways - 1),
            dst: local,
        });
        h.read(b, t(ways - 1), x);
        h.write(b, LOCAL, x);
    };

    let mut m: u64 = 1; // (ways+1)^r
    let (p64, me64) = (u64::from(p), u64::from(me));
    for r in 0..k {
        if r > 0 {
            reduce(&mut b, &mut h);
        }
        for w in 1..=u64::from(ways) {
            let s = b.add(Op::Send {
                peer: ((me64 + w * m) % p64) as u32,
                tag: r,
                buf: local,
            });
            h.read(&mut b, LOCAL, s);
        }
        for w in 1..=u64::from(ways) {
            let rc = b.add(Op::Recv {
                peer: ((me64 + p64 - (w * m) % p64) % p64) as u32,
                tag: r,
                buf: tmp(w as u32 - 1),
            });
            h.write(&mut b, t(w as u32 - 1), rc);
        }
        m *= u64::from(ways) + 1;
    }
    if k > 0 {
        reduce(&mut b, &mut h);
    }
    for &e in &extras {
        let s = b.add(Op::Send {
            peer: e,
            tag: fold_out,
            buf: local,
        });
        h.read(&mut b, LOCAL, s);
    }
    b.build().expect("acyclic by construction")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::func::{Dtype, Opcode, Predef};

    fn sum() -> Func {
        Func::Predef(Predef::new(Opcode::Sum, Dtype::Int32).unwrap())
    }

    #[test]
    fn rounds_and_powers() {
        assert_eq!(rounds(1, 1), (0, 1));
        assert_eq!(rounds(8, 1), (3, 8));
        assert_eq!(rounds(9, 1), (3, 8));
        assert_eq!(rounds(9, 2), (2, 9));
        assert_eq!(rounds(26, 2), (2, 9));
        assert_eq!(rounds(u32::MAX, 1), (31, 1 << 31));
    }

    #[test]
    fn power_of_two_matches_listing_shape() {
        // 4 ranks, 1 way: round 0 send/recv, reduce, round 1 send/recv, reduce.
        let s = allreduce(4, 1, 0, 8, sum());
        let kinds: Vec<&str> = s
            .actions()
            .map(|(_, op)| match op {
                Op::Send { .. } => "send",
                Op::Recv { .. } => "recv",
                Op::Exec { .. } => "exec",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["send", "recv", "exec", "send", "recv", "exec"]);
        // The second send waits for the first reduction; the first reduction for the first
        // receive and (it overwrites the send buffer) the first send.
        assert_eq!(s.prerequisites(3), 1);
        assert_eq!(s.dependents(2), [3, 4, 5]);
        assert!(s.dependents(0).contains(&2));
        assert!(s.dependents(1).contains(&2));
    }

    #[test]
    fn extras_fold_in_and_out() {
        let s = allreduce(5, 1, 4, 8, sum());
        assert_eq!(s.len(), 2);
        assert!(matches!(
            s.op(0),
            Op::Send {
                peer: 0,
                tag: 2,
                ..
            }
        ));
        assert!(matches!(
            s.op(1),
            Op::Recv {
                peer: 0,
                tag: 3,
                ..
            }
        ));
        assert_eq!(s.dependents(0), [1]);
        assert!(allreduce(1, 3, 0, 8, sum()).is_empty());
    }
}
