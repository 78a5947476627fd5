//! The LogGOPS model and its event engine. It owns the rules below and nothing else: parsing,
//! printing and the choice of program are the caller's.
//!
//! # The model (times in ns, sizes in bytes)
//!
//! Parameters as in LogGOPSim, with its defaults: `L` = 2500 (latency), `o` = 1500 (CPU
//! overhead per message), `g` = 1000 (NIC gap per message), `G` = 6 (NIC gap per byte), `O` = 0
//! (CPU overhead per byte), `S` = 65535 (largest eager message). Each rank has its own CPUs and
//! NICs (as many as the largest `cpu`/`nic` placement hint of the program asks for, else one of
//! each); a resource is busy until a time, and an action that needs a busy resource waits.
//! A message of `s` bytes costs as if it had `max(s, 1)` bytes: LogGOPSim's `(s-1)` terms are
//! never negative here.
//!
//! - **send** (`s` bytes, on its hinted CPU and NIC): starts at `t` when both are free. The CPU is
//!   busy until `t + o + (s-1)·O`, the NIC's send side until `t + g + (s-1)·G`; the message
//!   reaches the receiver at `t + o + L`. An **eager** send (`s <= S`) completes at
//!   `t + o + (s-1)·O`. A **rendezvous** send (`s > S`) completes when the receiver matches it
//!   (at `M`, see below), or at `t + o + (s-1)·O` if that is later; at `M` the sender's CPU and
//!   NIC are held busy until `M` at least. As in LogGOPSim, no extra control messages are
//!   charged: the rendezvous only makes the sender wait for the receiver.
//! - **message arrival** at the receiver at `T`: waits until the receiver's CPU 0 and NIC 0
//!   (receive side) are free, then occupies the CPU until `T + o + max((s-1)·O, (s-1)·G)` and the
//!   NIC until `T + g + (s-1)·G`. The CPU pays this whether or not a receive is posted (an
//!   unexpected message is processed on arrival). It then matches the first posted compatible
//!   receive (in posting order); that receive completes when the CPU is done with the message,
//!   and a rendezvous send is matched at `M = T`. Otherwise the message waits in the
//!   unexpected queue.
//! - **recv** (posting): as soon as it is ready, at no cost and without waiting for the CPU
//!   (LogGOPSim posts it at the CPU's next free time as known when it became ready). It takes the first compatible
//!   message of the unexpected queue (in arrival order) and completes when that message's
//!   processing ends (at once if it has ended); a rendezvous send is matched at `M` = the
//!   posting time. Otherwise it waits in the posted queue. Compatible: same sender or
//!   `ANY_PEER`, same tag or `ANY_TAG`, as `goal/replay.rs` matches. Per-pair FIFO order (MPI's
//!   non-overtaking rule) follows from the timing: a rank's sends leave in order and all take
//!   `L`; ties are broken by the order events were made, and a message that waits for a busy
//!   receiver keeps its place among ties.
//! - **mcast** (`McastSend`): one send as above that reaches every other rank of the program: one
//!   CPU overhead and one NIC gap at the root, arrival `L` later at each receiver, whose CPU pays
//!   `o` as for any message. Always eager. It matches `McastRecv` from that root (or from
//!   `ANY_PEER`). Loss and NACK repair are not modelled yet (see `Params`).
//! - **calc** `n`: occupies the CPU for `n` ns; completes at the end.
//! - **exec**: a local transformation of zero cost; it waits for the CPU to be free and
//!   completes at once (mpicast's reductions are cheap next to `o`; a per-byte cost may come).
//! - **requires** (`requ`): an action becomes ready when its last prerequisite completed;
//!   **irequires**: when the prerequisite started. Actions ready at the same time are tried in
//!   the order they became ready (schedule order at the start), each by its own event.
//!
//! A rank ends when its last action completed or its CPU was last busy, whichever is later
//! (LogGOPSim reports the CPU's time). Events are kept in a binary heap ordered by (time,
//! creation order); the state is a few numbers per action and per rank, so memory is linear in
//! the program (plus the messages in flight, at most one event per receiver of a multicast).

use super::contention::Contention;
use crate::goal::Program;
use crate::sched::{ActionId, Op, ANY_PEER, ANY_TAG};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

/// LogGOPS parameters; times in nanoseconds, sizes in bytes. Build with
/// `Params { latency: 5000, ..Params::default() }` so that later fields can be added without
/// touching callers.
///
/// The first six are LogGOPSim's. The multicast channel (mpicast's reliable UDP multicast, not
/// an MPI point-to-point message) has its own `L o g G` (`mL mo mg mG`; unset, the
/// point-to-point values), its datagram payload `mF`, a loss probability per datagram and
/// receiver `mloss`, and `mnack`, the time a receiver waits before it asks again for a datagram
/// that no later one showed missing (the wire protocol's first NACK timer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `L`: time a message spends on the wire.
    pub latency: u64,
    /// `o`: CPU time per message, at the sender and at the receiver.
    pub overhead: u64,
    /// `g`: NIC time between two messages.
    pub gap: u64,
    /// `G`: NIC time per byte after the first.
    pub gap_per_byte: u64,
    /// `O`: CPU time per byte after the first.
    pub overhead_per_byte: u64,
    /// `S`: the largest message sent eagerly; larger ones use rendezvous.
    pub eager_limit: u64,
    /// `mL`, `mo`, `mg`, `mG`: the multicast channel's own values (`None`: as point-to-point).
    pub mcast_latency: Option<u64>,
    pub mcast_overhead: Option<u64>,
    pub mcast_gap: Option<u64>,
    pub mcast_gap_per_byte: Option<u64>,
    /// `mF`: payload bytes per multicast datagram (a lost datagram is repaired alone).
    pub mcast_frag: u64,
    /// `mloss`: probability that a receiver loses a given multicast datagram, in parts per
    /// million (written as a fraction, `mloss 0.01`, in parameter files).
    pub mcast_loss_ppm: u32,
    /// `mnack`: how long a receiver waits before it asks for a datagram that no later datagram
    /// showed missing (the tail of a message).
    pub mcast_nack: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            latency: 2500,
            overhead: 1500,
            gap: 1000,
            gap_per_byte: 6,
            overhead_per_byte: 0,
            eager_limit: 65535,
            mcast_latency: None,
            mcast_overhead: None,
            mcast_gap: None,
            mcast_gap_per_byte: None,
            mcast_frag: 1400,
            mcast_loss_ppm: 0,
            mcast_nack: 2_000_000,
        }
    }
}

impl Params {
    /// The one-letter names LogGOPSim's options use, in its order.
    pub const NAMES: [&'static str; 6] = ["L", "o", "g", "G", "O", "S"];

    /// The multicast channel's parameters, in the order `Display` prints them.
    pub const MCAST_NAMES: [&'static str; 7] = ["mL", "mo", "mg", "mG", "mF", "mloss", "mnack"];

    /// Sets the integer parameter called `name` (`L o g G O S mL mo mg mG mF mnack`); false
    /// for an unknown name (and for `mloss`, a fraction: see `set_text`).
    pub fn set(&mut self, name: &str, value: u64) -> bool {
        match name {
            "L" => self.latency = value,
            "o" => self.overhead = value,
            "g" => self.gap = value,
            "G" => self.gap_per_byte = value,
            "O" => self.overhead_per_byte = value,
            "S" => self.eager_limit = value,
            "mL" => self.mcast_latency = Some(value),
            "mo" => self.mcast_overhead = Some(value),
            "mg" => self.mcast_gap = Some(value),
            "mG" => self.mcast_gap_per_byte = Some(value),
            "mF" => self.mcast_frag = value.max(1),
            "mnack" => self.mcast_nack = value,
            _ => return false,
        }
        true
    }

    /// Sets `name` from its written value: a non-negative integer, or for `mloss` a fraction
    /// in [0, 1). The error says what was wrong, without file or line.
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<(), String> {
        let known = || {
            format!(
                "unknown parameter `{name}` (known: {} {})",
                Self::NAMES.join(" "),
                Self::MCAST_NAMES.join(" ")
            )
        };
        if value.starts_with('-') {
            return Err(format!("{name} must not be negative, got `{value}`"));
        }
        if name == "mloss" {
            let f: f64 = value
                .parse()
                .ok()
                .filter(|f: &f64| f.is_finite())
                .ok_or_else(|| format!("mloss wants a fraction such as 0.01, not `{value}`"))?;
            if !(0.0..1.0).contains(&f) {
                return Err(format!(
                    "mloss must be at least 0 and below 1, got `{value}`"
                ));
            }
            self.mcast_loss_ppm = (f * 1e6).round() as u32;
            return Ok(());
        }
        if !Self::NAMES.contains(&name) && !Self::MCAST_NAMES.contains(&name) {
            return Err(known());
        }
        let v: u64 = value
            .parse()
            .map_err(|_| format!("{name} wants a non-negative integer, not `{value}`"))?;
        if name == "mF" && v == 0 {
            return Err("mF must be at least 1 byte".to_string());
        }
        self.set(name, v);
        Ok(())
    }

    /// The multicast channel's `L`, `o`, `g`, `G`.
    pub fn mcast_l(&self) -> u64 {
        self.mcast_latency.unwrap_or(self.latency)
    }
    pub fn mcast_o(&self) -> u64 {
        self.mcast_overhead.unwrap_or(self.overhead)
    }
    pub fn mcast_g(&self) -> u64 {
        self.mcast_gap.unwrap_or(self.gap)
    }
    pub fn mcast_gb(&self) -> u64 {
        self.mcast_gap_per_byte.unwrap_or(self.gap_per_byte)
    }

    /// Whether any multicast parameter differs from its default (`Display` then prints them).
    fn mcast_set(&self) -> bool {
        let d = Params::default();
        (
            self.mcast_latency,
            self.mcast_overhead,
            self.mcast_gap,
            self.mcast_gap_per_byte,
            self.mcast_frag,
            self.mcast_loss_ppm,
            self.mcast_nack,
        ) != (
            d.mcast_latency,
            d.mcast_overhead,
            d.mcast_gap,
            d.mcast_gap_per_byte,
            d.mcast_frag,
            d.mcast_loss_ppm,
            d.mcast_nack,
        )
    }

    /// The parameters as a file `--params` reads back (`name value` lines).
    pub fn as_file(&self) -> String {
        let mut s = format!(
            "L {}\no {}\ng {}\nG {}\nO {}\nS {}\n",
            self.latency,
            self.overhead,
            self.gap,
            self.gap_per_byte,
            self.overhead_per_byte,
            self.eager_limit
        );
        for (name, v) in [
            ("mL", self.mcast_latency),
            ("mo", self.mcast_overhead),
            ("mg", self.mcast_gap),
            ("mG", self.mcast_gap_per_byte),
        ] {
            if let Some(v) = v {
                s += &format!("{name} {v}\n");
            }
        }
        s += &format!(
            "mF {}\nmloss {}\nmnack {}\n",
            self.mcast_frag,
            self.mcast_loss_ppm as f64 / 1e6,
            self.mcast_nack
        );
        s
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L={} o={} g={} G={} O={} S={}",
            self.latency,
            self.overhead,
            self.gap,
            self.gap_per_byte,
            self.overhead_per_byte,
            self.eager_limit
        )?;
        if self.mcast_set() {
            write!(
                f,
                " mL={} mo={} mg={} mG={} mF={} mloss={} mnack={}",
                self.mcast_l(),
                self.mcast_o(),
                self.mcast_g(),
                self.mcast_gb(),
                self.mcast_frag,
                self.mcast_loss_ppm as f64 / 1e6,
                self.mcast_nack
            )?;
        }
        Ok(())
    }
}

/// What a run records besides end times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep, per action, what it waited for and which send each receive matched: needed by
    /// `critical_path` and `Outcome::matched`. Costs about 30 bytes per action.
    pub trace: bool,
}

/// How an action (or its end) waited for the one before it on a critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// Nothing: the chain starts here.
    None,
    /// `requ`: the previous action's completion.
    Requires,
    /// `irequ`: the previous action's start.
    Irequires,
    /// The rank's CPU was busy with the previous action (or with a message it sent).
    Cpu,
    /// The NIC's send side was in its gap after the previous send.
    NicSend,
    /// The NIC's receive side was in its gap after the previous send's message.
    NicRecv,
    /// A receive completed when the previous send's message had been processed.
    Message,
    /// A rendezvous send completed when the previous receive matched it.
    Rendezvous,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::None => "start",
            Via::Requires => "requires",
            Via::Irequires => "irequires",
            Via::Cpu => "cpu busy",
            Via::NicSend => "nic send gap",
            Via::NicRecv => "nic receive gap",
            Via::Message => "message",
            Via::Rendezvous => "rendezvous",
        }
    }
}

/// A point of the run: the start (or end) of an action, reached by `via`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub rank: u32,
    pub action: ActionId,
    pub at_end: bool,
    pub via: Via,
}

impl Link {
    const NONE: Link = Link {
        rank: 0,
        action: 0,
        at_end: false,
        via: Via::None,
    };
}

/// One action of a critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub rank: u32,
    pub action: ActionId,
    pub start: u64,
    pub end: u64,
    /// How this action waited for the step before it (`Via::None` for the first).
    pub via: Via,
}

/// An action that never completed, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub rank: u32,
    pub action: ActionId,
    /// What it waits for, in words.
    pub why: String,
}

/// Why a simulation could not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// Actions are left that can never complete: receives never matched (and what waits for
    /// them). `waiting` lists the started ones first, at most `MAX_LISTED`; `unfinished`
    /// counts all.
    Deadlock {
        waiting: Vec<Waiting>,
        unfinished: u64,
        at: u64,
    },
    /// A send names a rank outside the program.
    BadPeer {
        rank: u32,
        action: ActionId,
        peer: u32,
    },
}

/// How many waiting actions a deadlock error lists.
pub const MAX_LISTED: usize = 20;

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Deadlock {
                waiting,
                unfinished,
                at,
            } => {
                write!(
                    f,
                    "deadlock: {unfinished} actions never complete (the last event was at {at} ns)"
                )?;
                for w in waiting {
                    write!(f, "\n  rank {} action {}: {}", w.rank, w.action, w.why)?;
                }
                if (*unfinished as usize) > waiting.len() {
                    write!(f, "\n  ...")?;
                }
                Ok(())
            }
            SimError::BadPeer { rank, action, peer } => write!(
                f,
                "rank {rank} action {action} sends to rank {peer}, which is not in the program"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// When each rank ended.
    pub end: Vec<u64>,
    /// The latest end, and the first rank that ends then.
    pub max: u64,
    pub max_rank: u32,
    /// Events processed (including retries of actions that found a resource busy).
    pub events: u64,
    /// Global index of each rank's first action.
    base: Vec<usize>,
    start: Vec<u64>,
    finish: Vec<u64>,
    trace: Option<Trace>,
}

#[derive(Clone, Debug)]
struct Trace {
    start_pred: Vec<Link>,
    end_pred: Vec<Link>,
    /// For receives: the (rank, action) of the send they matched.
    matched: Vec<(u32, ActionId)>,
}

impl Outcome {
    /// When action `id` of `rank` started and completed.
    pub fn times(&self, rank: u32, id: ActionId) -> (u64, u64) {
        let g = self.base[rank as usize] + id as usize;
        (self.start[g], self.finish[g])
    }

    /// The send that receive `id` of `rank` matched (needs `Options::trace`).
    pub fn matched(&self, rank: u32, id: ActionId) -> Option<(u32, ActionId)> {
        let t = self.trace.as_ref()?;
        let m = t.matched[self.base[rank as usize] + id as usize];
        (m.1 != NO_ACTION).then_some(m)
    }
}

const NO_ACTION: ActionId = ActionId::MAX;
const NOT_YET: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Try to start action `a` of `rank`.
    Try,
    /// The message of send `b` of rank `a` reaches `rank`.
    Arrive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: u64,
    seq: u64,
    kind: Kind,
    rank: u32,
    a: u32,
    b: u32,
}

/// A message that arrived before its receive: sender, send action, when its processing ends
/// and what decided that end.
#[derive(Clone, Copy, Debug)]
struct Unexpected {
    src: u32,
    send: ActionId,
    done: u64,
    why: Link,
}

/// A busy-until time and what made it busy.
#[derive(Clone, Copy, Debug)]
struct Busy {
    until: u64,
    owner: Link,
}

impl Busy {
    const FREE: Busy = Busy {
        until: 0,
        owner: Link::NONE,
    };

    fn hold(&mut self, until: u64, owner: Link) {
        if until >= self.until {
            self.until = until;
            self.owner = owner;
        }
    }
}

struct Engine<'p> {
    p: &'p Program,
    prm: Params,
    ncpu: usize,
    nnic: usize,
    base: Vec<usize>,
    remaining: Vec<u32>,
    /// Ready time until the action starts, then its start time.
    start: Vec<u64>,
    finish: Vec<u64>,
    trace: Option<Trace>,
    cpu: Vec<Busy>,
    nic_send: Vec<Busy>,
    nic_recv: Vec<Busy>,
    posted: Vec<Vec<ActionId>>,
    unexpected: Vec<Vec<Unexpected>>,
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    now: u64,
    events: u64,
    done: u64,
    /// The network that decides arrivals (`simulate_on`); `None`: LogGOPS's `L`.
    net: Option<&'p mut Contention>,
}

/// Message cost factor: LogGOPSim's `s - 1`, never below 0.
fn extra(len: usize) -> u64 {
    (len as u64).saturating_sub(1)
}

/// The size of the message an op sends, and whether it is a multicast (`None` for non-sends).
fn sent(op: &Op) -> Option<(usize, u32, bool)> {
    match *op {
        Op::Send { tag, buf, .. } => Some((buf.len, tag, false)),
        Op::McastSend { buf } => Some((buf.len, 0, true)),
        _ => None,
    }
}

impl<'p> Engine<'p> {
    fn new(p: &'p Program, prm: Params, opts: Options) -> Self {
        let n = p.ranks.len();
        let mut base = Vec::with_capacity(n + 1);
        let mut total = 0usize;
        let (mut ncpu, mut nnic) = (1usize, 1usize);
        for r in &p.ranks {
            base.push(total);
            total += r.schedule.len();
            for h in &r.hints {
                ncpu = ncpu.max(h.cpu as usize + 1);
                nnic = nnic.max(h.nic as usize + 1);
            }
        }
        base.push(total);
        let mut remaining = Vec::with_capacity(total);
        for r in &p.ranks {
            let s = &r.schedule;
            remaining.extend((0..s.len() as ActionId).map(|id| s.prerequisites(id) as u32));
        }
        let trace = opts.trace.then(|| Trace {
            start_pred: vec![Link::NONE; total],
            end_pred: vec![Link::NONE; total],
            matched: vec![(0, NO_ACTION); total],
        });
        Engine {
            p,
            prm,
            ncpu,
            nnic,
            base,
            remaining,
            start: vec![0; total],
            finish: vec![NOT_YET; total],
            trace,
            cpu: vec![Busy::FREE; n * ncpu],
            nic_send: vec![Busy::FREE; n * nnic],
            nic_recv: vec![Busy::FREE; n * nnic],
            posted: vec![Vec::new(); n],
            unexpected: vec![Vec::new(); n],
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            events: 0,
            done: 0,
            net: None,
        }
    }

    fn push(&mut self, time: u64, kind: Kind, rank: u32, a: u32, b: u32) {
        self.seq += 1;
        self.heap.push(Reverse(Event {
            time,
            seq: self.seq,
            kind,
            rank,
            a,
            b,
        }));
    }

    /// Puts an event back for a later time with its original place in the order of ties, so
    /// that a message that waited for a busy receiver still goes before a later message of
    /// the same sender that arrives just when the receiver becomes free (MPI's
    /// non-overtaking rule).
    fn postpone(&mut self, e: Event, time: u64) {
        self.heap.push(Reverse(Event { time, ..e }));
    }

    fn g(&self, rank: u32, id: ActionId) -> usize {
        self.base[rank as usize] + id as usize
    }

    fn op(&self, rank: u32, id: ActionId) -> &'p Op {
        self.p.ranks[rank as usize].schedule.op(id)
    }

    fn cpu_of(&self, rank: u32, id: ActionId) -> usize {
        let h = self.p.ranks[rank as usize].hints.get(id as usize);
        rank as usize * self.ncpu + h.map_or(0, |h| h.cpu as usize)
    }

    fn nic_of(&self, rank: u32, id: ActionId) -> usize {
        let h = self.p.ranks[rank as usize].hints.get(id as usize);
        rank as usize * self.nnic + h.map_or(0, |h| h.nic as usize)
    }

    fn set_start_pred(&mut self, g: usize, l: Link) {
        if let Some(t) = &mut self.trace {
            t.start_pred[g] = l;
        }
    }

    fn set_end_pred(&mut self, g: usize, l: Link) {
        if let Some(t) = &mut self.trace {
            t.end_pred[g] = l;
        }
    }

    fn point(rank: u32, action: ActionId, at_end: bool, via: Via) -> Link {
        Link {
            rank,
            action,
            at_end,
            via,
        }
    }

    /// Counts down the prerequisite of `deps` that `rank`'s action `id` fulfilled at `time`.
    fn release(&mut self, rank: u32, id: ActionId, time: u64, at_end: bool) {
        let s = &self.p.ranks[rank as usize].schedule;
        let deps = if at_end {
            s.dependents(id)
        } else {
            s.start_dependents(id)
        };
        let via = if at_end {
            Via::Requires
        } else {
            Via::Irequires
        };
        for &d in deps {
            let gd = self.g(rank, d);
            if time >= self.start[gd] {
                self.start[gd] = time;
                self.set_start_pred(gd, Self::point(rank, id, at_end, via));
            }
            self.remaining[gd] -= 1;
            if self.remaining[gd] == 0 {
                let t = self.start[gd];
                self.push(t, Kind::Try, rank, d, 0);
            }
        }
    }

    fn started(&mut self, rank: u32, id: ActionId, t: u64) {
        let g = self.g(rank, id);
        self.start[g] = t;
        self.release(rank, id, t, false);
    }

    fn complete(&mut self, rank: u32, id: ActionId, t: u64, why: Link) {
        let g = self.g(rank, id);
        self.finish[g] = t;
        self.done += 1;
        self.set_end_pred(g, why);
        self.release(rank, id, t, true);
    }

    /// Rendezvous send `send` of `src` matched at `m` by what `why` names.
    fn rendezvous(&mut self, src: u32, send: ActionId, m: u64, why: Link) {
        let (c, n) = (self.cpu_of(src, send), self.nic_of(src, send));
        self.cpu[c].hold(m, why);
        self.nic_send[n].hold(m, why);
        let g = self.g(src, send);
        let len = sent(self.op(src, send)).map_or(0, |s| s.0);
        let own = self.start[g] + self.prm.overhead + extra(len) * self.prm.overhead_per_byte;
        if m > own {
            self.complete(src, send, m, why);
        } else {
            self.complete(src, send, own, Link::NONE);
        }
    }

    fn record_match(&mut self, rank: u32, recv: ActionId, src: u32, send: ActionId) {
        let g = self.g(rank, recv);
        if let Some(t) = &mut self.trace {
            t.matched[g] = (src, send);
        }
    }

    fn compatible(&self, recv: &Op, src: u32, tag: u32, mcast: bool) -> bool {
        match *recv {
            Op::Recv {
                peer, tag: want, ..
            } => !mcast && (peer == ANY_PEER || peer == src) && (want == ANY_TAG || want == tag),
            Op::McastRecv { root, .. } => mcast && (root == ANY_PEER || root == src),
            _ => false,
        }
    }

    fn try_start(&mut self, t: u64, rank: u32, id: ActionId) -> Result<(), SimError> {
        let op = self.op(rank, id);
        let c = self.cpu_of(rank, id);
        let cpu = self.cpu[c];
        let g = self.g(rank, id);
        match *op {
            Op::Send { .. } | Op::McastSend { .. } => {
                let n = self.nic_of(rank, id);
                let nic = self.nic_send[n];
                let busy = cpu.until.max(nic.until);
                if busy > t {
                    let owner = if cpu.until >= nic.until {
                        Link {
                            via: Via::Cpu,
                            ..cpu.owner
                        }
                    } else {
                        Link {
                            via: Via::NicSend,
                            ..nic.owner
                        }
                    };
                    self.set_start_pred(g, owner);
                    self.push(busy, Kind::Try, rank, id, 0);
                    return Ok(());
                }
                let (len, _, mcast) = sent(op).expect("a send");
                let prm = self.prm;
                let me = Self::point(rank, id, false, Via::Cpu);
                let cpu_end = t + prm.overhead + extra(len) * prm.overhead_per_byte;
                self.cpu[c].hold(cpu_end, me);
                self.nic_send[n].hold(
                    t + prm.gap + extra(len) * prm.gap_per_byte,
                    Link {
                        via: Via::NicSend,
                        ..me
                    },
                );
                self.started(rank, id, t);
                let arrive = t + prm.overhead + prm.latency;
                let nranks = self.p.num_ranks();
                if mcast {
                    // With a network, each receiver's arrival is the network's (contention.rs).
                    if let Some(net) = self.net.as_deref_mut() {
                        net.multicast(rank, id, t + prm.overhead, len as u64, arrive);
                    }
                    for q in (0..nranks).filter(|&q| q != rank) {
                        let arrive = self.net.as_deref().map_or(arrive, |net| net.arrival(q));
                        self.push(arrive, Kind::Arrive, q, rank, id);
                    }
                } else {
                    let Op::Send { peer, .. } = *op else {
                        unreachable!()
                    };
                    if peer >= nranks {
                        return Err(SimError::BadPeer {
                            rank,
                            action: id,
                            peer,
                        });
                    }
                    let arrive = match self.net.as_deref_mut() {
                        Some(net) => {
                            net.deliver(rank, id, peer, t + prm.overhead, len as u64, arrive)
                        }
                        None => arrive,
                    };
                    self.push(arrive, Kind::Arrive, peer, rank, id);
                }
                if mcast || len as u64 <= prm.eager_limit {
                    self.complete(rank, id, cpu_end, Link::NONE);
                }
            }
            Op::Recv { .. } | Op::McastRecv { .. } => {
                // Posting is free and needs no CPU: o is paid when the message arrives.
                self.started(rank, id, t);
                let hit = self.unexpected[rank as usize].iter().position(|u| {
                    let (_, tag, mcast) = sent(self.op(u.src, u.send)).expect("a send");
                    self.compatible(op, u.src, tag, mcast)
                });
                match hit {
                    Some(i) => {
                        let u = self.unexpected[rank as usize].remove(i);
                        self.record_match(rank, id, u.src, u.send);
                        let (len, _, mcast) = sent(self.op(u.src, u.send)).expect("a send");
                        if !mcast && len as u64 > self.prm.eager_limit {
                            let why = Self::point(rank, id, false, Via::Rendezvous);
                            self.rendezvous(u.src, u.send, t, why);
                        }
                        if u.done > t {
                            self.complete(rank, id, u.done, u.why);
                        } else {
                            self.complete(rank, id, t, Link::NONE);
                        }
                    }
                    None => self.posted[rank as usize].push(id),
                }
            }
            Op::Exec { .. } | Op::Calc { .. } => {
                if cpu.until > t {
                    self.set_start_pred(
                        g,
                        Link {
                            via: Via::Cpu,
                            ..cpu.owner
                        },
                    );
                    self.push(cpu.until, Kind::Try, rank, id, 0);
                    return Ok(());
                }
                let nanos = match *op {
                    Op::Calc { nanos } => nanos,
                    _ => 0,
                };
                if nanos > 0 {
                    self.cpu[c].hold(t + nanos, Self::point(rank, id, false, Via::Cpu));
                }
                self.started(rank, id, t);
                self.complete(rank, id, t + nanos, Link::NONE);
            }
        }
        Ok(())
    }

    fn arrive(&mut self, e: Event) {
        let (t, dst, src, send) = (e.time, e.rank, e.a, e.b);
        let c = dst as usize * self.ncpu;
        let n = dst as usize * self.nnic;
        let (cpu, nic) = (self.cpu[c], self.nic_recv[n]);
        let busy = cpu.until.max(nic.until);
        if busy > t {
            self.postpone(e, busy);
            return;
        }
        let op = self.op(src, send);
        let (len, tag, mcast) = sent(op).expect("a send");
        let prm = self.prm;
        let x = extra(len);
        let done = t + prm.overhead + (x * prm.overhead_per_byte).max(x * prm.gap_per_byte);
        let msg = Self::point(src, send, false, Via::Message);
        // A message that had to wait for the receiver ends when the CPU or NIC that held it
        // up allowed, so that is what its receive waited for.
        let natural = match self.net.as_deref_mut() {
            Some(net) => net.arrived(src, send, dst),
            None => self.start[self.g(src, send)] + prm.overhead + prm.latency,
        };
        let why = if t <= natural {
            msg
        } else if cpu.until == t {
            Link {
                via: Via::Cpu,
                ..cpu.owner
            }
        } else {
            Link {
                via: Via::NicRecv,
                ..nic.owner
            }
        };
        self.nic_recv[n].hold(
            t + prm.gap + x * prm.gap_per_byte,
            Link {
                via: Via::NicRecv,
                ..msg
            },
        );
        let hit = self.posted[dst as usize]
            .iter()
            .position(|&r| self.compatible(self.op(dst, r), src, tag, mcast));
        match hit {
            Some(i) => {
                let recv = self.posted[dst as usize].remove(i);
                self.cpu[c].hold(done, Self::point(dst, recv, true, Via::Cpu));
                self.record_match(dst, recv, src, send);
                if !mcast && len as u64 > prm.eager_limit {
                    let why = Link {
                        via: Via::Rendezvous,
                        ..msg
                    };
                    self.rendezvous(src, send, t, why);
                }
                self.complete(dst, recv, done, why);
            }
            None => {
                self.cpu[c].hold(
                    done,
                    Link {
                        via: Via::Cpu,
                        ..msg
                    },
                );
                self.unexpected[dst as usize].push(Unexpected {
                    src,
                    send,
                    done,
                    why,
                });
            }
        }
    }

    fn run(&mut self) -> Result<(), SimError> {
        for (r, rp) in self.p.ranks.iter().enumerate() {
            for id in rp.schedule.initially_ready() {
                self.push(0, Kind::Try, r as u32, id, 0);
            }
        }
        while let Some(Reverse(e)) = self.heap.pop() {
            self.events += 1;
            self.now = e.time;
            match e.kind {
                Kind::Try => self.try_start(e.time, e.rank, e.a)?,
                Kind::Arrive => self.arrive(e),
            }
        }
        let total = *self.base.last().unwrap_or(&0) as u64;
        if self.done < total {
            return Err(self.deadlock(total - self.done));
        }
        Ok(())
    }

    fn deadlock(&self, unfinished: u64) -> SimError {
        let mut started = Vec::new();
        let mut blocked = Vec::new();
        for (r, rp) in self.p.ranks.iter().enumerate() {
            let r = r as u32;
            let posted = &self.posted[r as usize];
            for (id, op) in rp.schedule.actions() {
                let g = self.g(r, id);
                if self.finish[g] != NOT_YET {
                    continue;
                }
                if posted.contains(&id) {
                    started.push(Waiting {
                        rank: r,
                        action: id,
                        why: format!(
                            "{} posted at {} ns, never matched",
                            describe(op),
                            self.start[g]
                        ),
                    });
                } else if self.remaining[g] == 0 {
                    started.push(Waiting {
                        rank: r,
                        action: id,
                        why: format!(
                            "{} started at {} ns, its receiver never matched it",
                            describe(op),
                            self.start[g]
                        ),
                    });
                } else if blocked.len() < MAX_LISTED {
                    blocked.push(Waiting {
                        rank: r,
                        action: id,
                        why: format!(
                            "{} waits for {} unfinished prerequisites",
                            describe(op),
                            self.remaining[g]
                        ),
                    });
                }
            }
        }
        started.extend(blocked);
        started.truncate(MAX_LISTED);
        SimError::Deadlock {
            waiting: started,
            unfinished,
            at: self.now,
        }
    }

    fn outcome(self) -> Outcome {
        let n = self.p.ranks.len();
        let mut end = vec![0u64; n];
        for (r, e) in end.iter_mut().enumerate() {
            let cpus = &self.cpu[r * self.ncpu..(r + 1) * self.ncpu];
            let acts = &self.finish[self.base[r]..self.base[r + 1]];
            *e = cpus
                .iter()
                .map(|b| b.until)
                .chain(acts.iter().copied())
                .max()
                .unwrap_or(0);
        }
        let (mut max, mut max_rank) = (0u64, 0u32);
        for (r, &e) in end.iter().enumerate() {
            if e > max {
                (max, max_rank) = (e, r as u32);
            }
        }
        Outcome {
            end,
            max,
            max_rank,
            events: self.events,
            base: self.base,
            start: self.start,
            finish: self.finish,
            trace: self.trace,
        }
    }
}

/// Simulates `p` with parameters `prm`. Errors when some action can never complete.
pub fn simulate(p: &Program, prm: &Params, opts: Options) -> Result<Outcome, SimError> {
    let mut e = Engine::new(p, *prm, opts);
    e.run()?;
    Ok(e.outcome())
}

/// As `simulate`, with the links of a network shared: `net` decides when each message arrives
/// (the rules are in `contention`) and keeps what each link carried.
pub fn simulate_on(
    p: &Program,
    prm: &Params,
    opts: Options,
    net: &mut Contention,
) -> Result<Outcome, SimError> {
    let mut e = Engine::new(p, *prm, opts);
    e.net = Some(net);
    e.run()?;
    Ok(e.outcome())
}

/// The chain of actions that ends last: from the action that completes last on the rank that
/// ends last, back along what each waited for, listed first to last. Empty without
/// `Options::trace` or actions.
pub fn critical_path(o: &Outcome) -> Vec<Step> {
    let Some(t) = &o.trace else {
        return Vec::new();
    };
    let r = o.max_rank as usize;
    let (lo, hi) = (o.base[r], o.base[r + 1]);
    let Some(last) = (lo..hi).max_by_key(|&g| (o.finish[g], g)) else {
        return Vec::new();
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut at = Link {
        rank: r as u32,
        action: (last - lo) as ActionId,
        at_end: true,
        via: Via::None,
    };
    // Every link points to an earlier point of the run, so the walk ends; the bound is a guard.
    for _ in 0..=2 * o.start.len() {
        let g = o.base[at.rank as usize] + at.action as usize;
        if steps
            .last()
            .map_or(true, |s| (s.rank, s.action) != (at.rank, at.action))
        {
            steps.push(Step {
                rank: at.rank,
                action: at.action,
                start: o.start[g],
                end: o.finish[g],
                via: Via::None,
            });
        }
        let next = if at.at_end && t.end_pred[g].via != Via::None {
            t.end_pred[g]
        } else {
            t.start_pred[g]
        };
        if next.via == Via::None {
            break;
        }
        if let Some(s) = steps.last_mut() {
            s.via = next.via;
        }
        at = next;
    }
    steps.reverse();
    // Each step's `via` said how it waited for the one before it; after reversing, the first
    // step waited for nothing.
    if let Some(first) = steps.first_mut() {
        first.via = Via::None;
    }
    steps
}

/// An action in words, for errors and critical paths.
pub fn describe(op: &Op) -> String {
    let peer = |p: u32| {
        if p == ANY_PEER {
            "any".to_string()
        } else {
            p.to_string()
        }
    };
    let tag = |t: u32| {
        if t == ANY_TAG {
            "any".to_string()
        } else {
            t.to_string()
        }
    };
    match *op {
        Op::Send {
            peer: p,
            tag: t,
            buf,
        } => {
            format!("send {} bytes to {} tag {}", buf.len, p, tag(t))
        }
        Op::Recv {
            peer: p,
            tag: t,
            buf,
        } => {
            format!("recv {} bytes from {} tag {}", buf.len, peer(p), tag(t))
        }
        Op::McastSend { buf } => format!("mcast {} bytes", buf.len),
        Op::McastRecv { root, buf } => format!("mrecv {} bytes from {}", buf.len, peer(root)),
        Op::Exec { .. } => "exec".to_string(),
        Op::Calc { nanos } => format!("calc {nanos}"),
    }
}
