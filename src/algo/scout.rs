//! Broadcast and barrier over multicast, synchronised by scouts (Chen, Carrasco, Apon, "MPI Collective Operations over IP
//! Multicast", 2000, Figs. 3 and 4).
//! In the seed, multicast loses data sent to a rank that has not entered the collective, so the
//! root may only multicast once every rank announced itself with a zero-byte scout: gathered up
//! the binary tree or sent straight to the root. The barrier gathers the same way to rank 0,
//! whose zero-byte multicast releases everyone. mpicast's sockets stay joined from setup to
//! finalize and its sender never runs more than a window (half the smallest receive buffer)
//! ahead of the slowest acknowledgement, so a broadcast may also go without scouts
//! ([`Sync::Eager`]): what reaches a rank that has not entered waits in its socket.

use super::tree::{tree_children, tree_parent};
use super::{TAG_SCOUT, TAG_SCOUT_BARRIER};
use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};

/// How scouts reach the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sync {
    /// Up the binary tree: floor(log2 n) steps, at most two scouts received per rank.
    Tree,
    /// Every non-root sends to the root, which receives n - 1 scouts.
    Linear,
    /// No scouts: the root multicasts at once and every other rank only receives. Its latency
    /// is one multicast instead of a gather plus a multicast; a rank that enters late finds
    /// the data in its socket (or in the channel's store of early datagrams).
    Eager,
}

/// What a non-root's multicast receive waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Nothing: the joined socket is the pre-posted receive and queues early fragments.
    Immediately,
    /// The rank's own scout send (the barrier: leave only after having announced oneself).
    AfterScout,
}

/// The schedule of `me` in a broadcast of `len` bytes of the user buffer from `root` over `n`
/// ranks. Panics unless `root < n` and `me < n`.
pub fn bcast(sync: Sync, n: u32, root: u32, me: u32, len: usize) -> Schedule {
    gather_then_multicast(sync, n, root, me, len, Release::Immediately, TAG_SCOUT)
}

/// The schedule of `me` in a barrier over `n` ranks: scouts climb the binary tree to rank 0,
/// whose zero-byte multicast releases the others. Panics unless `me < n`.
pub fn barrier(n: u32, me: u32) -> Schedule {
    gather_then_multicast(
        Sync::Tree,
        n,
        0,
        me,
        0,
        Release::AfterScout,
        TAG_SCOUT_BARRIER,
    )
}

fn gather_then_multicast(
    sync: Sync,
    n: u32,
    root: u32,
    me: u32,
    len: usize,
    release: Release,
    tag: u32,
) -> Schedule {
    assert!(
        root < n && me < n,
        "collective over {n} ranks: root {root} and rank {me} must be below {n}"
    );
    let mut b = Builder::new();
    if n == 1 {
        return b.build().expect("empty schedule");
    }
    let data = BufRef {
        slot: 0,
        offset: 0,
        len,
    };
    // Receives first, so that they head the list of initially-ready actions.
    let recv_from = |b: &mut Builder, peer: u32| -> ActionId {
        b.add(Op::Recv {
            peer,
            tag,
            buf: BufRef::EMPTY,
        })
    };
    let (recvs, parent): (Vec<ActionId>, Option<u32>) = match sync {
        Sync::Tree => (
            tree_children(n, root, me)
                .map(|c| recv_from(&mut b, c))
                .collect(),
            tree_parent(n, root, me),
        ),
        Sync::Linear if me == root => (
            (0..n)
                .filter(|&r| r != root)
                .map(|r| recv_from(&mut b, r))
                .collect(),
            None,
        ),
        Sync::Linear => (Vec::new(), Some(root)),
        Sync::Eager => {
            assert!(
                release == Release::Immediately,
                "a barrier needs its scouts"
            );
            if me == root {
                b.add(Op::McastSend { buf: data });
            } else {
                b.add(Op::McastRecv { root, buf: data });
            }
            return b.build().expect("one action");
        }
    };
    let gathered = match parent {
        None => b.add(Op::McastSend { buf: data }),
        Some(p) => {
            let peer = p;
            b.add(Op::Send {
                peer,
                tag,
                buf: BufRef::EMPTY,
            })
        }
    };
    for &r in &recvs {
        b.requ(r, gathered);
    }
    if parent.is_some() {
        let mrecv = b.add(Op::McastRecv { root, buf: data });
        if release == Release::AfterScout {
            b.requ(gathered, mrecv);
        }
    }
    b.build()
        .expect("scout schedules are acyclic by construction")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(s: &Schedule) -> Vec<Op> {
        s.actions().map(|(_, op)| op.clone()).collect()
    }

    fn recv(peer: u32) -> Op {
        Op::Recv {
            peer,
            tag: TAG_SCOUT,
            buf: BufRef::EMPTY,
        }
    }

    fn send(peer: u32) -> Op {
        Op::Send {
            peer,
            tag: TAG_SCOUT,
            buf: BufRef::EMPTY,
        }
    }

    /// `op` with the scout tag `tag` (a barrier's).
    fn tagged(op: Op, tag: u32) -> Op {
        match op {
            Op::Recv { peer, buf, .. } => Op::Recv { peer, tag, buf },
            Op::Send { peer, buf, .. } => Op::Send { peer, tag, buf },
            other => other,
        }
    }

    fn data(len: usize) -> BufRef {
        BufRef {
            slot: 0,
            offset: 0,
            len,
        }
    }

    #[test]
    fn tree_bcast_shapes() {
        // n = 7, root 0 (heap layout): rank 1 gathers 3 and 4, then reports to 0.
        let s = bcast(Sync::Tree, 7, 0, 1, 100);
        assert_eq!(
            ops(&s),
            [
                recv(3),
                recv(4),
                send(0),
                Op::McastRecv {
                    root: 0,
                    buf: data(100)
                }
            ]
        );
        assert_eq!(s.dependents(0), [2]);
        assert_eq!(s.dependents(1), [2]);
        assert_eq!(s.prerequisites(2), 2);
        assert_eq!(
            s.prerequisites(3),
            0,
            "the socket is the pre-posted receive"
        );
        assert_eq!(s.initially_ready().collect::<Vec<_>>(), [0, 1, 3]);

        let s = bcast(Sync::Tree, 7, 0, 0, 100);
        assert_eq!(
            ops(&s),
            [recv(1), recv(2), Op::McastSend { buf: data(100) }]
        );
        assert_eq!(s.prerequisites(2), 2);

        // A leaf: scout straight away.
        let s = bcast(Sync::Tree, 7, 0, 6, 100);
        assert_eq!(s.len(), 2);
        assert_eq!(*s.op(0), send(2));
        assert_eq!(s.initially_ready().count(), 2);
    }

    #[test]
    fn linear_bcast_shapes() {
        let s = bcast(Sync::Linear, 5, 2, 2, 8);
        assert_eq!(
            ops(&s),
            [
                recv(0),
                recv(1),
                recv(3),
                recv(4),
                Op::McastSend { buf: data(8) }
            ]
        );
        assert_eq!(s.prerequisites(4), 4);
        let s = bcast(Sync::Linear, 5, 2, 4, 8);
        assert_eq!(
            ops(&s),
            [
                send(2),
                Op::McastRecv {
                    root: 2,
                    buf: data(8)
                }
            ]
        );
        assert_eq!(s.edge_count(), 0);
    }

    #[test]
    fn eager_bcast_has_no_scouts() {
        let s = bcast(Sync::Eager, 5, 2, 2, 8);
        assert_eq!(ops(&s), [Op::McastSend { buf: data(8) }]);
        assert_eq!(s.initially_ready().collect::<Vec<_>>(), [0]);
        let s = bcast(Sync::Eager, 5, 2, 0, 8);
        assert_eq!(
            ops(&s),
            [Op::McastRecv {
                root: 2,
                buf: data(8)
            }]
        );
        assert_eq!(s.edge_count(), 0);
    }

    #[test]
    fn barrier_receive_waits_for_own_scout() {
        let s = barrier(4, 1);
        let recv = |peer| tagged(recv(peer), TAG_SCOUT_BARRIER);
        let send = |peer| tagged(send(peer), TAG_SCOUT_BARRIER);
        assert_eq!(
            ops(&s),
            [
                recv(3),
                send(0),
                Op::McastRecv {
                    root: 0,
                    buf: BufRef::EMPTY
                }
            ]
        );
        assert_eq!(s.dependents(1), [2]);
        assert_eq!(s.initially_ready().collect::<Vec<_>>(), [0]);
        let s = barrier(4, 0);
        assert_eq!(
            ops(&s),
            [recv(1), recv(2), Op::McastSend { buf: BufRef::EMPTY }]
        );
    }

    #[test]
    fn single_rank_and_empty_messages() {
        for sync in [Sync::Tree, Sync::Linear, Sync::Eager] {
            assert!(bcast(sync, 1, 0, 0, 1 << 20).is_empty());
            let s = bcast(sync, 2, 1, 1, 0);
            let scouts: &[Op] = if sync == Sync::Eager { &[] } else { &[recv(0)] };
            assert_eq!(
                ops(&s),
                [scouts, &[Op::McastSend { buf: data(0) }]].concat()
            );
        }
        assert!(barrier(1, 0).is_empty());
    }

    #[test]
    #[should_panic(expected = "must be below")]
    fn bad_root_panics() {
        bcast(Sync::Tree, 3, 3, 0, 1);
    }
}
