//! The contention model: with a network (`network::Network`), messages share its links, and
//! the network decides when each one reaches its receiver. The engine (`loggops`) asks at one
//! place, where a send makes its arrivals (`deliver`, `multicast`); everything else is here.
//!
//! # The rules (times in ns)
//!
//! - A message of `s` bytes (costed as `max(s, 1)`, as the engine does) enters the network when
//!   the sender's CPU overhead ends: `depart = t + o` for a send started at `t`, the moment
//!   from which LogGOPS counts `L`. It streams out of the sender's NIC at the NIC's rate, one
//!   byte per `G`: its tail is out at `depart + s·G` at the earliest.
//! - It crosses the links of its route (`Network::route`) in order. Each directed link is a
//!   FIFO resource with a busy-until time and carries one message at a time. On each link:
//!   the message starts when its head has reached the link and the link is free; its tail
//!   leaves `s·8/bandwidth` later (rounded up to the ns), or when the tail has come in from
//!   the link before, whichever is later (a slow link upstream holds the links after it); the
//!   link is busy until then. Head and tail reach the far end `latency` later.
//! - That is virtual cut-through: the head goes on as soon as it is across a link (no
//!   store-and-forward of the whole message at each switch), and a message that finds a link
//!   busy waits in the switch without holding the links behind it (wormhole switching would
//!   hold them; it needs deadlock rules this model does not want yet). Messages are whole:
//!   no packets interleave on a link.
//! - Links are taken in the order messages are sent: a send reserves every link of its route
//!   at once, so a later message cannot use a gap that an earlier one leaves on a link further
//!   down (the engine makes sends in time order, so the first link, the sender's own, is exact).
//! - A multicast takes the union of the routes from its root: each directed link is crossed
//!   once and the switch copies the message (a host with several receiving ranks gets one copy).
//! - **Arrival.** LogGOPS keeps a receiver busy for `(s-1)·G` with a message after it arrives:
//!   the bytes stream in at the NIC's rate. So the arrival the engine gets is LogGOPS's
//!   `t + o + L` plus what the network adds to the tail: `tail - (depart + s·G)`, never
//!   negative. `L` stays the end-to-end latency of the software and the wire; link latencies
//!   add to it (0 by default). A message alone on a network whose links run at `1/G` bytes per
//!   ns with no latency (for instance a one-switch star whose host links say `nic`) arrives
//!   exactly when LogGOPS says; a slower link, a link latency, or a queue delays it by what
//!   it adds. Between two ranks of one host a message crosses no link: LogGOPS's time.
//! - A message never arrives before an earlier message of the same sender to the same receiver
//!   (MPI's order; point-to-point and multicast apart): its arrival is raised to that one's if
//!   a faster route end would put it ahead.

use super::network::{HostId, LinkId, Network, Node, Routing};
use super::{Params, PerByte};
use crate::sched::ActionId;
use std::collections::HashMap;
use std::fmt::Write;

/// The state of a network during one simulation: when each directed link is free, what it
/// carried, and the arrivals it decided.
pub struct Contention {
    net: Network,
    routing: Box<dyn Routing>,
    /// The host of each rank.
    host: Vec<HostId>,
    /// `G`: the NIC's time per byte; `mnic`: the multicast channel's (`mG`).
    nic: PerByte,
    mnic: PerByte,
    /// Per directed link: busy until, bytes and messages carried, time held.
    busy: Vec<u64>,
    bytes: Vec<u64>,
    carried: Vec<u64>,
    held: Vec<u64>,
    /// Per directed link: the multicast that last crossed it, and where its head and tail
    /// were at the far end (so that a multicast crosses a link once).
    stamp: Vec<u64>,
    reach: Vec<(u64, u64)>,
    serial: u64,
    route: Vec<LinkId>,
    /// Per rank: the arrival the last multicast decided.
    mcast: Vec<u64>,
    /// Per (sender, receiver, multicast): the last arrival, for MPI's order.
    last: HashMap<(u32, u32, bool), u64>,
    /// Arrivals not yet taken by the engine: (sender, send, receiver).
    pending: HashMap<(u32, ActionId, u32), u64>,
    deliveries: u64,
    delayed: u64,
    added: u64,
}

impl Contention {
    /// The network `net` for a program of `ranks` ranks with the NIC of `prm` (its `G`), routed
    /// as its file says (`Network::router`: `ShortestPaths` by default). An error (naming the
    /// network's file) when it places fewer ranks.
    pub fn new(net: &Network, ranks: u32, prm: &Params) -> Result<Self, String> {
        Self::with_routing(net, ranks, prm, net.router())
    }

    /// As `new`, with another routing.
    pub fn with_routing(
        net: &Network,
        ranks: u32,
        prm: &Params,
        routing: Box<dyn Routing>,
    ) -> Result<Self, String> {
        let host = net.places(ranks)?;
        let nl = net.links.len();
        Ok(Contention {
            net: net.clone(),
            routing,
            host,
            nic: prm.gap_per_byte,
            mnic: prm.mcast_gb(),
            busy: vec![0; nl],
            bytes: vec![0; nl],
            carried: vec![0; nl],
            held: vec![0; nl],
            stamp: vec![0; nl],
            reach: vec![(0, 0); nl],
            serial: 0,
            route: Vec::new(),
            mcast: vec![0; ranks as usize],
            last: HashMap::new(),
            pending: HashMap::new(),
            deliveries: 0,
            delayed: 0,
            added: 0,
        })
    }

    /// Send `send` of rank `src`: `bytes` bytes to rank `dst` that enter the network at
    /// `depart` and that LogGOPS would deliver at `free`. Returns the arrival; the engine takes
    /// it back with `arrived`.
    pub fn deliver(
        &mut self,
        src: u32,
        send: ActionId,
        dst: u32,
        depart: u64,
        bytes: u64,
        free: u64,
    ) -> u64 {
        let bytes = bytes.max(1);
        let own = depart.saturating_add(self.nic.time(bytes));
        let mut route = std::mem::take(&mut self.route);
        let (from, to) = (self.host[src as usize], self.host[dst as usize]);
        self.net.route(&*self.routing, from, to, &mut route);
        let (mut head, mut tail) = (depart, own);
        for &l in &route {
            (head, tail) = self.cross(l, head, tail, bytes, self.nic);
        }
        self.route = route;
        let at = self.ordered(src, dst, false, free, tail - own);
        self.pending.insert((src, send, dst), at);
        at
    }

    /// Multicast `send` of rank `root` to every other rank, as `deliver`; each rank's arrival
    /// is then `arrival(rank)` until the next multicast.
    pub fn multicast(&mut self, root: u32, send: ActionId, depart: u64, bytes: u64, free: u64) {
        let bytes = bytes.max(1);
        let own = depart.saturating_add(self.mnic.time(bytes));
        self.serial += 1;
        let from = self.host[root as usize];
        let mut route = std::mem::take(&mut self.route);
        for q in (0..self.host.len() as u32).filter(|&q| q != root) {
            self.net
                .route(&*self.routing, from, self.host[q as usize], &mut route);
            let (mut head, mut tail) = (depart, own);
            for &l in &route {
                let i = l as usize;
                if self.stamp[i] == self.serial {
                    (head, tail) = self.reach[i];
                } else {
                    (head, tail) = self.cross(l, head, tail, bytes, self.mnic);
                    self.stamp[i] = self.serial;
                    self.reach[i] = (head, tail);
                }
            }
            let at = self.ordered(root, q, true, free, tail - own);
            self.mcast[q as usize] = at;
            self.pending.insert((root, send, q), at);
        }
        self.route = route;
    }

    /// The arrival at rank `q` of the last multicast.
    pub fn arrival(&self, q: u32) -> u64 {
        self.mcast[q as usize]
    }

    /// The arrival of `src`'s send `send` at `dst`, when the engine processes it (once).
    pub fn arrived(&mut self, src: u32, send: ActionId, dst: u32) -> u64 {
        self.pending
            .remove(&(src, send, dst))
            .expect("every arrival was made by deliver or multicast")
    }

    /// Moves a message whose head reaches link `l` at `head` and whose tail reaches it at
    /// `tail` across it; returns when head and tail reach its far end.
    fn cross(&mut self, l: LinkId, head: u64, tail: u64, bytes: u64, nic: PerByte) -> (u64, u64) {
        let i = l as usize;
        let k = &self.net.links[i];
        let start = head.max(self.busy[i]);
        let end = start.saturating_add(k.rate.time(bytes, nic)).max(tail);
        self.busy[i] = end;
        self.bytes[i] += bytes;
        self.carried[i] += 1;
        self.held[i] += end - start;
        (start + k.latency, end + k.latency)
    }

    /// LogGOPS's arrival `free` plus what the network added, kept in MPI's order.
    fn ordered(&mut self, src: u32, dst: u32, mcast: bool, free: u64, extra: u64) -> u64 {
        let last = self.last.entry((src, dst, mcast)).or_insert(0);
        let at = free.saturating_add(extra).max(*last);
        *last = at;
        self.deliveries += 1;
        if at > free {
            self.delayed += 1;
            self.added += at - free;
        }
        at
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    /// The route from rank `src` to rank `dst`.
    pub fn route(&self, src: u32, dst: u32) -> Vec<LinkId> {
        let mut out = Vec::new();
        let (a, b) = (self.host[src as usize], self.host[dst as usize]);
        self.net.route(&*self.routing, a, b, &mut out);
        out
    }

    /// What directed link `l` carried: bytes, messages (a multicast once), and how long it was
    /// held in all.
    pub fn link_use(&self, l: LinkId) -> (u64, u64, u64) {
        let i = l as usize;
        (self.bytes[i], self.carried[i], self.held[i])
    }

    /// When link `l` is free again.
    pub fn busy_until(&self, l: LinkId) -> u64 {
        self.busy[l as usize]
    }

    /// Arrivals decided (one per receiver of a multicast), how many the network delayed, and
    /// by how many ns in all.
    pub fn delays(&self) -> (u64, u64, u64) {
        (self.deliveries, self.delayed, self.added)
    }

    /// One line for `mpicast sim`: the network, the delays, the link held longest.
    pub fn summary(&self) -> String {
        let n = &self.net;
        let count = |k: usize, one: &str, many: &str| match k {
            1 => format!("1 {one}"),
            k => format!("{k} {many}"),
        };
        let cables = n
            .links
            .iter()
            .filter(|k| matches!((k.from, k.to), (Node::Switch(_), Node::Switch(_))))
            .count()
            / 2;
        let mut s = format!(
            "network {}: {}, {}, {}; {} of {} arrivals delayed, by {} ns in all",
            n.file,
            count(n.switches.len(), "switch", "switches"),
            count(cables, "link", "links"),
            count(n.hosts.len(), "host", "hosts"),
            self.delayed,
            self.deliveries,
            self.added
        );
        let busiest = (0..self.held.len())
            .max_by_key(|&i| (self.held[i], self.carried[i], std::cmp::Reverse(i)));
        match busiest {
            Some(i) if self.carried[i] > 0 => {
                let _ = write!(
                    s,
                    "; busiest link {}: held {} ns by {}, {} bytes",
                    n.link_name(i as LinkId),
                    self.held[i],
                    count(self.carried[i] as usize, "message", "messages"),
                    self.bytes[i]
                );
            }
            _ => s += "; no message crossed a link",
        }
        s
    }
}
