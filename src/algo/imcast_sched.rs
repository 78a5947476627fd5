//! The topology-aware non-blocking multicast of "A Scalable Non-blocking Multicast Scheme for
//! Distributed DAG Scheduling" (ICCS 2009), as `MPICAST_Imcast` runs it (docs/imcast.md), from a
//! root to every other rank, as per-rank schedules that the simulator can time.
//!
//! The ranks sit `ppn` to a host in rank order (ranks 0..ppn on host 0, ...). Their topology IDs
//! are those the library derives when nothing names them (`prefix::derive` in the library's base
//! 16): the host first, then the ranks of one host numbered in rank order (the library's
//! on-host facts, package, NUMA node and core, are taken as equal). Every rank has its routing
//! table (`Pick::Nearest`, the library's default) and the tree is the one `prefix::forward`
//! gives with the library's default `Route::Dests`: from the root, one hop per non-empty table
//! entry beyond the stage, lowest level (other hosts) first.
//!
//! What goes on the wire is the choice of the default `MPICAST_IMCAST_TRANSPORT=auto`
//! (`transport::forward::IpPolicy::wants_ip`): by IP multicast when the ranks are on more than
//! one host and the message has at least `MPICAST_IMCAST_IP_BYTES` (16 KiB) for at least two
//! destinations (a broadcast is always past the 25 % share); point-to-point otherwise.
//!
//! - **Point-to-point** ([`Transport::P2p`]): the message in segments of `seg` bytes
//!   (`MPICAST_SEGMENT_BYTES`, 8 KiB) down the tree: the root posts segment 0 to every first hop,
//!   then segment 1 to every first hop, ... (`wire::forward::Forwarder::start`); a rank on the
//!   way passes each segment to its own hops as it comes (`pipeline::relay`).
//! - **IP multicast** ([`Transport::Ip`]): the root sends a zero-byte envelope to each first
//!   hop, which passes it on down the same tree (`Forwarder::start_envelope`), and the data once
//!   to the group (`mcast`), after the envelopes. Every other rank's multicast receive is posted
//!   from the start (datagrams that come before the envelope wait in the cache of
//!   `transport::imcast_ip`); a rank has the data when both its envelope and the multicast are
//!   in.
//!
//! Left out: the headers and destination lists that ride in the segments and envelopes (36
//! bytes plus 12 per destination in a first segment), the destinations' acknowledgements to the
//! root over MPI (the root's request completes at once in the library too) and the host
//! structure of the wire: a message between two ranks of one host costs what any other does,
//! and the multicast reaches every rank as the simulator's `mcast` does.

use super::pipeline::{relay, RootOrder};
use super::prefix::{self, Pick, Route, RoutingTable, Topology};
use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};

/// The library's defaults: base of the topology IDs, segment bytes, and the size from which a
/// multicast to two or more ranks goes by IP multicast (`Config::default()`).
pub fn library_defaults() -> (u32, usize, usize) {
    let c = crate::config::Config::default();
    (c.topo_base, c.segment_bytes, c.imcast_ip_bytes)
}

/// The tag of the envelopes (segment 0's tag: an envelope is the first segment of its message).
pub const TAG_ENVELOPE: u32 = 0;

/// How the data travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// In segments, over point-to-point messages down the tree.
    P2p,
    /// An envelope down the tree, the data by one IP multicast.
    Ip,
}

/// What the library's `auto` picks for a broadcast of `len` bytes over `n` ranks, `ppn` to a
/// host.
pub fn transport(n: u32, ppn: u32, len: usize) -> Transport {
    let hosts = n.div_ceil(ppn.max(1));
    let ndests = n.saturating_sub(1);
    if hosts > 1 && ndests >= 2 && len >= library_defaults().2 {
        Transport::Ip
    } else {
        Transport::P2p
    }
}

/// The topology IDs of `n` ranks, `ppn` to a host, as the library derives them.
pub fn topology(n: u32, ppn: u32) -> Topology {
    let ppn = ppn.max(1);
    let facts: Vec<[u32; 1]> = (0..n).map(|r| [r / ppn]).collect();
    prefix::derive(library_defaults().0, &facts).expect("host indices give valid IDs")
}

/// The multicast tree of one broadcast: each rank's parent and hops (in the order it sends).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub root: u32,
    pub parent: Vec<Option<u32>>,
    pub hops: Vec<Vec<u32>>,
    pub transport: Transport,
    pub len: usize,
    pub seg: usize,
}

impl Plan {
    /// The tree from `root` to every other of `n` ranks, `ppn` to a host, for `len` bytes in
    /// segments of `seg`. Builds the routing table of every rank that forwards: O(n^2) in all.
    /// Panics unless `root < n`, `ppn > 0` and `seg > 0`.
    pub fn new(n: u32, ppn: u32, root: u32, len: usize, seg: usize) -> Plan {
        assert!(
            root < n,
            "imcast over {n} ranks: root {root} must be below {n}"
        );
        assert!(ppn > 0 && seg > 0, "ppn and segment must be positive");
        let mut parent = vec![None; n as usize];
        let mut hops = vec![Vec::new(); n as usize];
        let topo = topology(n, ppn);
        let dests: Vec<u32> = (0..n).filter(|&r| r != root).collect();
        // (rank, who it came from, the destinations it carries)
        let mut todo = vec![(root, None, dests)];
        while let Some((me, prev, carried)) = todo.pop() {
            let table = RoutingTable::build(&topo, me, Pick::Nearest);
            let f = prefix::forward(&topo, &table, Route::Dests, prev, &carried);
            for h in f.hops {
                parent[h.to as usize] = Some(me);
                hops[me as usize].push(h.to);
                todo.push((h.to, Some(me), h.dests));
            }
        }
        Plan {
            root,
            parent,
            hops,
            transport: transport(n, ppn, len),
            len,
            seg,
        }
    }

    /// The schedule of `me`.
    pub fn schedule(&self, me: u32) -> Schedule {
        let n = self.parent.len() as u32;
        assert!(me < n, "rank {me} of {n}");
        if n == 1 {
            return Builder::new().build().expect("empty schedule");
        }
        let parent = self.parent[me as usize];
        let hops = &self.hops[me as usize];
        match self.transport {
            Transport::P2p => relay(parent, hops, self.len, self.seg, RootOrder::SegmentMajor),
            Transport::Ip => self.ip_schedule(parent, hops),
        }
    }

    fn ip_schedule(&self, parent: Option<u32>, hops: &[u32]) -> Schedule {
        let data = BufRef {
            slot: 0,
            offset: 0,
            len: self.len,
        };
        let envelope = |to: u32| Op::Send {
            peer: to,
            tag: TAG_ENVELOPE,
            buf: BufRef::EMPTY,
        };
        let mut b = Builder::new();
        match parent {
            None => {
                // The envelopes are posted first, then the datagrams go (in progress); all
                // are ready at once and start in this order, as a root's sends in `relay`.
                for &h in hops {
                    b.add(envelope(h));
                }
                b.add(Op::McastSend { buf: data });
            }
            Some(p) => {
                b.add(Op::McastRecv {
                    root: self.root,
                    buf: data,
                });
                let r = b.add(Op::Recv {
                    peer: p,
                    tag: TAG_ENVELOPE,
                    buf: BufRef::EMPTY,
                });
                let mut prev: Option<ActionId> = None;
                for &h in hops {
                    let s = b.add(envelope(h));
                    b.requ(r, s);
                    if let Some(p) = prev {
                        b.irequ(p, s);
                    }
                    prev = Some(s);
                }
            }
        }
        b.build()
            .expect("imcast schedules are acyclic by construction")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_librarys() {
        assert_eq!(library_defaults(), (16, 8 << 10, 16 << 10));
    }

    #[test]
    fn one_rank_per_host_is_a_flat_tree_up_to_the_base() {
        // Base 16: up to 16 hosts have one-digit IDs, and the root sends to everyone itself.
        let p = Plan::new(4, 1, 1, 8, 8192);
        assert_eq!(p.hops[1], [0, 2, 3]);
        assert_eq!(p.parent, [Some(1), None, Some(1), Some(1)]);
        assert_eq!(p.transport, Transport::P2p);
        // 17 hosts: two digits; 16 goes first (level 0), then the 15 others of prefix 0.
        let p = Plan::new(17, 1, 0, 8, 8192);
        assert_eq!(p.hops[0], (16..17).chain(1..16).collect::<Vec<u32>>());
    }

    #[test]
    fn hosts_first_then_the_local_ranks() {
        // 8 ranks, 4 per host: the root 0 sends to host 1 first (rank 4, whose ID is the
        // root's with the host digit changed), then to its own ranks 1, 2, 3; 4 to 5, 6, 7.
        let p = Plan::new(8, 4, 0, 8, 8192);
        assert_eq!(p.hops[0], [4, 1, 2, 3]);
        assert_eq!(p.hops[4], [5, 6, 7]);
        assert_eq!(p.parent[6], Some(4));
        // Rooted on host 1 at rank 6: to rank 2 of host 0, then 4, 5, 7.
        let p = Plan::new(8, 4, 6, 8, 8192);
        assert_eq!(p.hops[6], [2, 4, 5, 7]);
        assert_eq!(p.hops[2], [0, 1, 3]);
    }

    #[test]
    fn the_transport_of_auto() {
        assert_eq!(transport(4, 1, 16384), Transport::Ip);
        assert_eq!(transport(4, 1, 16383), Transport::P2p);
        assert_eq!(transport(4, 4, 1 << 20), Transport::P2p, "one host");
        assert_eq!(transport(2, 1, 1 << 20), Transport::P2p, "one destination");
        assert_eq!(transport(8, 4, 1 << 20), Transport::Ip);
    }

    #[test]
    fn ip_schedules() {
        let p = Plan::new(8, 4, 0, 100_000, 8192);
        let root = p.schedule(0);
        let ops: Vec<Op> = root.actions().map(|(_, o)| o.clone()).collect();
        assert_eq!(ops.len(), 5);
        assert!(matches!(ops[4], Op::McastSend { .. }));
        let s = p.schedule(4);
        let ops: Vec<Op> = s.actions().map(|(_, o)| o.clone()).collect();
        assert!(matches!(ops[0], Op::McastRecv { root: 0, .. }));
        assert!(matches!(ops[1], Op::Recv { peer: 0, .. }));
        assert_eq!(ops.len(), 5, "mrecv, envelope from 0, envelopes to 5, 6, 7");
        assert_eq!(
            s.prerequisites(0),
            0,
            "the socket is the pre-posted receive"
        );
    }
}
