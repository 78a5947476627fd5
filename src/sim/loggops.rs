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
//! never negative here. `G` and `O` (and `mG`) are whole picoseconds per byte (`PerByte`), so
//! a link faster than 8 Gbit/s can be written (`G 0.08`); each `(s-1)·G` (or `(s-1)·O`) is
//! rounded to the nearest ns, half up (`PerByte::time`), and times stay whole ns.
//!
//! - **send** (`s` bytes, on its hinted CPU and NIC): starts at `t` when both are free. The CPU is
//!   busy until `t + o + (s-1)·O`, the NIC's send side until `t + g + (s-1)·G`; the message
//!   reaches the receiver at `t + o + L`. An **eager** send (`s <= S`) completes at
//!   `t + o + (s-1)·O`. A **rendezvous** send (`s > S`) completes when the receiver matches it
//!   (at `M`, see below), or at `t + o + (s-1)·O` if that is later; at `M` the sender's CPU and
//!   NIC are held busy until `M` at least. As in LogGOPSim, no extra control messages are
//!   charged: the rendezvous only makes the sender wait for the receiver.
//! - **message arrival** at the receiver at `T`: waits until the receiver's CPU 0 and NIC 0
//!   (receive side) are free, then occupies the CPU until `T + o + (s-1)·O` (with
//!   `RecvCpu::LogGOPSim`, LogGOPSim's rule, until the message is in) and the NIC until
//!   `T + g + (s-1)·G`; the message is in at `T + o + max((s-1)·O, (s-1)·G)`. The CPU pays this
//!   whether or not a receive is posted (an unexpected message is processed on arrival). It then
//!   matches the first posted compatible receive (in posting order); that receive completes
//!   when the message is in, and a rendezvous send is matched at `M = T`. Otherwise the
//!   message waits in the unexpected queue.
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
//!   **irequires**: when the prerequisite started. Actions that one event (or the start) makes
//!   ready are queued by rank, then sends, receives, computations, in the order they became
//!   ready within each (`ReadyOrder::Kind`; `ReadyOrder::Program`: in that order only), each
//!   by its own event. An action that finds its CPU or NIC busy, and a message that finds its
//!   receiver busy, is tried again when they are free with its tie number kept.
//! - **noise** (`simulate_flat_full` with a `Noise`): CPU work (a send's `o + (s-1)·O`, a
//!   message's CPU part, a calc) is lengthened by the interruptions it meets (`noise.rs`).
//!
//! A rank ends when its last action completed or its CPU was last busy, whichever is later
//! (LogGOPSim reports the CPU's time). Events are kept in a radix heap (`queue`) ordered by
//! (time, creation order); the program is read in the simulator's flat form (`flat`), and the
//! state is a few numbers per action and per rank, so memory is linear in the program (plus
//! the messages in flight, at most one event per receiver of a multicast).

use super::contention::Contention;
use super::flat::{Act, Flat, Kind as FlatKind};
use super::noise::Noise;
use super::queue::RadixQueue;
use super::repair::repair;
use crate::goal::Program;
use crate::sched::{ActionId, Op, ANY_PEER, ANY_TAG};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// A cost per byte (`G`, `O`, `mG`): whole picoseconds per byte, written in ns per byte with
/// up to three decimals (`G 0.08`, `G 6`). A message's per-byte cost is `time`: the product
/// rounded to the nearest ns (half up), the one rule every part of the simulator uses, so
/// that whole ns per byte give exactly the products they always gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PerByte(u64);

impl PerByte {
    /// `ns` whole nanoseconds per byte.
    pub const fn ns(ns: u64) -> PerByte {
        PerByte(ns.saturating_mul(1000))
    }

    /// `ps` picoseconds per byte.
    pub const fn ps(ps: u64) -> PerByte {
        PerByte(ps)
    }

    /// In picoseconds per byte.
    pub const fn as_ps(self) -> u64 {
        self.0
    }

    /// In nanoseconds per byte, as a float (for reports and fits).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// The cost of `bytes` bytes in ns: `bytes · self`, rounded to the nearest ns (half up),
    /// saturating. Callers pass LogGOPS's `s - 1` (or `s` where the network streams a whole
    /// message).
    pub fn time(self, bytes: u64) -> u64 {
        let ps = bytes as u128 * self.0 as u128;
        u64::try_from((ps + 500) / 1000).unwrap_or(u64::MAX)
    }

    /// Reads a written value: a non-negative decimal number of ns per byte with at most three
    /// decimals (`8`, `0.08`, `.5`). The error names the parameter `name`.
    pub fn parse(name: &str, value: &str) -> Result<PerByte, String> {
        let bad = || {
            format!(
                "{name} wants a non-negative number of ns per byte such as 8 or 0.08, \
                 not `{value}`"
            )
        };
        if value.starts_with('-') {
            return Err(format!("{name} must not be negative, got `{value}`"));
        }
        let (int, frac) = value.split_once('.').unwrap_or((value, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if !digits(int) || !digits(frac) || (int.is_empty() && frac.is_empty()) {
            return Err(bad());
        }
        if frac.len() > 3 {
            return Err(format!(
                "{name} takes at most 3 decimals (1 ps per byte), got `{value}`"
            ));
        }
        let large = || format!("{name} is too large: `{value}`");
        // Digits only by now: a number that does not parse is too large.
        let whole: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| large())?
        };
        let milli: u64 = format!("{frac:0<3}").parse().map_err(|_| bad())?;
        whole
            .checked_mul(1000)
            .and_then(|w| w.checked_add(milli))
            .map(PerByte)
            .ok_or_else(large)
    }
}

/// Whole ns per byte as an integer (`6`), others with the decimals they need (`0.08`).
impl fmt::Display for PerByte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, milli) = (self.0 / 1000, self.0 % 1000);
        if milli == 0 {
            write!(f, "{whole}")
        } else {
            let frac = format!("{milli:03}");
            write!(f, "{whole}.{}", frac.trim_end_matches('0'))
        }
    }
}

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
    pub gap_per_byte: PerByte,
    /// `O`: CPU time per byte after the first.
    pub overhead_per_byte: PerByte,
    /// `S`: the largest message sent eagerly; larger ones use rendezvous.
    pub eager_limit: u64,
    /// `mL`, `mo`, `mg`, `mG`: the multicast channel's own values (`None`: as point-to-point).
    pub mcast_latency: Option<u64>,
    pub mcast_overhead: Option<u64>,
    pub mcast_gap: Option<u64>,
    pub mcast_gap_per_byte: Option<PerByte>,
    /// `mF`: payload bytes per multicast datagram (a lost datagram is repaired alone).
    pub mcast_frag: u64,
    /// `mloss`: probability that a receiver loses a given multicast datagram, in parts per
    /// million (written as a fraction, `mloss 0.01`, in parameter files).
    pub mcast_loss_ppm: u32,
    /// `mnack`: how long a receiver waits before it asks for a datagram that no later datagram
    /// showed missing (the tail of a message).
    pub mcast_nack: u64,
    /// `mseed`: fixes the pseudo-random losses (`repair`), so that a run can be repeated.
    pub mcast_seed: u64,
    /// `recv-cpu`: how long a message keeps its receiver's CPU.
    pub recv_cpu: RecvCpu,
    /// `ready-order`: the order in which actions that become ready at once are started.
    pub ready_order: ReadyOrder,
}

/// How long a message of `s` bytes keeps its receiver's CPU (`recv-cpu`). Either way the
/// message is in at `T + o + max((s-1)·O, (s-1)·G)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RecvCpu {
    /// `model`: `o + (s-1)·O`, as at the sender; the NIC takes the bytes (`(s-1)·G`) while the
    /// CPU is free for other work. The LogGOPS model's rule (docs/sim.md says why).
    #[default]
    Model,
    /// `loggopsim`: `o + max((s-1)·O, (s-1)·G)`: the CPU is held until the last byte is in,
    /// as LogGOPSim charges it.
    LogGOPSim,
}

/// The order in which a rank starts actions that become ready at the same time
/// (`ready-order`); ready at different times, they start in time order either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadyOrder {
    /// `kind`: sends (and multicasts) first, then receives, then computations (`calc`,
    /// `exec`), in schedule order within each kind: communication is under way before the
    /// CPU is taken by computation. LogGOPSim's order (with a stable sort).
    #[default]
    Kind,
    /// `program`: in the order the actions became ready (schedule order at the start).
    Program,
}

impl RecvCpu {
    pub fn name(self) -> &'static str {
        match self {
            RecvCpu::Model => "model",
            RecvCpu::LogGOPSim => "loggopsim",
        }
    }
}

impl ReadyOrder {
    pub fn name(self) -> &'static str {
        match self {
            ReadyOrder::Kind => "kind",
            ReadyOrder::Program => "program",
        }
    }
}

impl Default for Params {
    fn default() -> Self {
        Params {
            latency: 2500,
            overhead: 1500,
            gap: 1000,
            gap_per_byte: PerByte::ns(6),
            overhead_per_byte: PerByte::ns(0),
            eager_limit: 65535,
            mcast_latency: None,
            mcast_overhead: None,
            mcast_gap: None,
            mcast_gap_per_byte: None,
            mcast_frag: 1400,
            mcast_loss_ppm: 0,
            mcast_nack: 2_000_000,
            mcast_seed: 1,
            recv_cpu: RecvCpu::Model,
            ready_order: ReadyOrder::Kind,
        }
    }
}

impl Params {
    /// The one-letter names LogGOPSim's options use, in its order.
    pub const NAMES: [&'static str; 6] = ["L", "o", "g", "G", "O", "S"];

    /// The multicast channel's parameters, in the order `Display` prints them.
    pub const MCAST_NAMES: [&'static str; 8] =
        ["mL", "mo", "mg", "mG", "mF", "mloss", "mnack", "mseed"];

    /// The rules that are not numbers (`recv-cpu`, `ready-order`), each with its values,
    /// the default first.
    pub const RULES: [(&'static str, [&'static str; 2]); 2] = [
        ("recv-cpu", ["model", "loggopsim"]),
        ("ready-order", ["kind", "program"]),
    ];

    /// Sets the integer parameter called `name` (`L o g G O S mL mo mg mG mF mnack`; `G O mG`
    /// in whole ns per byte: `set_per_byte` takes fractions); false for an unknown name (and
    /// for `mloss`, a fraction: see `set_text`).
    pub fn set(&mut self, name: &str, value: u64) -> bool {
        match name {
            "L" => self.latency = value,
            "o" => self.overhead = value,
            "g" => self.gap = value,
            "G" | "O" | "mG" => return self.set_per_byte(name, PerByte::ns(value)),
            "S" => self.eager_limit = value,
            "mL" => self.mcast_latency = Some(value),
            "mo" => self.mcast_overhead = Some(value),
            "mg" => self.mcast_gap = Some(value),
            "mF" => self.mcast_frag = value.max(1),
            "mnack" => self.mcast_nack = value,
            "mseed" => self.mcast_seed = value,
            _ => return false,
        }
        true
    }

    /// Sets the per-byte parameter `name` (`G O mG`); false for another name.
    pub fn set_per_byte(&mut self, name: &str, value: PerByte) -> bool {
        match name {
            "G" => self.gap_per_byte = value,
            "O" => self.overhead_per_byte = value,
            "mG" => self.mcast_gap_per_byte = Some(value),
            _ => return false,
        }
        true
    }

    /// Sets `name` from its written value: a non-negative integer, for `G O mG` a number of
    /// ns per byte with at most three decimals (`PerByte::parse`), for `mloss` a fraction in
    /// [0, 1). The error says what was wrong, without file or line.
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<(), String> {
        let known = || {
            format!(
                "unknown parameter `{name}` (known: {} {} {})",
                Self::NAMES.join(" "),
                Self::MCAST_NAMES.join(" "),
                Self::RULES.map(|r| r.0).join(" ")
            )
        };
        if let Some((_, values)) = Self::RULES.iter().find(|(n, _)| *n == name) {
            match (name, value) {
                ("recv-cpu", "model") => self.recv_cpu = RecvCpu::Model,
                ("recv-cpu", "loggopsim") => self.recv_cpu = RecvCpu::LogGOPSim,
                ("ready-order", "kind") => self.ready_order = ReadyOrder::Kind,
                ("ready-order", "program") => self.ready_order = ReadyOrder::Program,
                _ => {
                    return Err(format!(
                        "{name} is {} or {}, not `{value}`",
                        values[0], values[1]
                    ))
                }
            }
            return Ok(());
        }
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
        if matches!(name, "G" | "O" | "mG") {
            let v = PerByte::parse(name, value)?;
            self.set_per_byte(name, v);
            return Ok(());
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
    pub fn mcast_gb(&self) -> PerByte {
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
            self.mcast_seed,
        ) != (
            d.mcast_latency,
            d.mcast_overhead,
            d.mcast_gap,
            d.mcast_gap_per_byte,
            d.mcast_frag,
            d.mcast_loss_ppm,
            d.mcast_nack,
            d.mcast_seed,
        )
    }

    /// LogGOPSim's six, by name, in `NAMES` order.
    fn loggops(&self) -> [(&'static str, String); 6] {
        [
            ("L", self.latency.to_string()),
            ("o", self.overhead.to_string()),
            ("g", self.gap.to_string()),
            ("G", self.gap_per_byte.to_string()),
            ("O", self.overhead_per_byte.to_string()),
            ("S", self.eager_limit.to_string()),
        ]
    }

    /// The parameters as a file `--params` reads back (`name value` lines).
    pub fn as_file(&self) -> String {
        let mut s: String = self
            .loggops()
            .iter()
            .map(|(name, v)| format!("{name} {v}\n"))
            .collect();
        for (name, v) in [
            ("mL", self.mcast_latency.map(|v| v.to_string())),
            ("mo", self.mcast_overhead.map(|v| v.to_string())),
            ("mg", self.mcast_gap.map(|v| v.to_string())),
            ("mG", self.mcast_gap_per_byte.map(|v| v.to_string())),
        ] {
            if let Some(v) = v {
                s += &format!("{name} {v}\n");
            }
        }
        s += &format!(
            "mF {}\nmloss {}\nmnack {}\nmseed {}\n",
            self.mcast_frag,
            self.mcast_loss_ppm as f64 / 1e6,
            self.mcast_nack,
            self.mcast_seed
        );
        s += &self
            .rules_set()
            .iter()
            .map(|(n, v)| format!("{n} {v}\n"))
            .collect::<String>();
        s
    }

    /// The rules that differ from their defaults, by name (`Display` and `as_file` name
    /// only those, so that the default output stays as it was).
    fn rules_set(&self) -> Vec<(&'static str, &'static str)> {
        let mut v = Vec::new();
        if self.recv_cpu != RecvCpu::default() {
            v.push(("recv-cpu", self.recv_cpu.name()));
        }
        if self.ready_order != ReadyOrder::default() {
            v.push(("ready-order", self.ready_order.name()));
        }
        v
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all: Vec<String> = self
            .loggops()
            .iter()
            .map(|(name, v)| format!("{name}={v}"))
            .collect();
        write!(f, "{}", all.join(" "))?;
        if self.mcast_set() {
            write!(
                f,
                " mL={} mo={} mg={} mG={} mF={} mloss={} mnack={} mseed={}",
                self.mcast_l(),
                self.mcast_o(),
                self.mcast_g(),
                self.mcast_gb(),
                self.mcast_frag,
                self.mcast_loss_ppm as f64 / 1e6,
                self.mcast_nack,
                self.mcast_seed
            )?;
        }
        for (name, v) in self.rules_set() {
            write!(f, " {name}={v}")?;
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
    /// The program is larger than the simulator addresses.
    TooBig(String),
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
            SimError::TooBig(m) => write!(f, "{m}"),
            SimError::BadPeer { rank, action, peer } => write!(
                f,
                "rank {rank} action {action} sends to rank {peer}, which is not in the program"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// How the matching queues behaved (LogGOPSim's `--qstat` in brief): the longest queue of
/// posted receives and of unexpected messages any rank had (with the first rank that had
/// it), how many queue entries the searches looked at, and how many matches each queue made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub posted_max: u32,
    pub posted_max_rank: u32,
    pub unexpected_max: u32,
    pub unexpected_max_rank: u32,
    /// Entries of the posted queues looked at by arriving messages, and of the unexpected
    /// queues by posted receives (a hit counts as looked at).
    pub posted_searched: u64,
    pub unexpected_searched: u64,
    /// Messages that found their receive posted; receives that found their message waiting.
    pub matched_posted: u64,
    pub matched_unexpected: u64,
}

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
    /// Multicast datagrams lost (`mloss`) and the NACK rounds that repaired them, over all
    /// receivers.
    pub mcast_lost: u64,
    pub mcast_repairs: u64,
    /// OS noise added to CPU work, over all ranks (ns; 0 without a noise trace).
    pub noise: u64,
    /// The matching queues' statistics.
    pub queues: QueueStats,
    /// Global index of each rank's first action (and one past the last).
    base: Vec<u32>,
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
    /// Every message, in the order its receiver took it.
    arrivals: Vec<Arrival>,
}

/// A message as its receiver processed it (kept with `Options::trace`; a multicast gives one
/// per receiver). Whether a receive was posted plays no part in these times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The receiver.
    pub rank: u32,
    /// The sender and its send action.
    pub src: u32,
    pub send: ActionId,
    /// When the receiver's CPU and NIC took the message: its arrival, or later if they were
    /// busy.
    pub at: u64,
    /// When the receiver's CPU, and its NIC's receive side, were done with it.
    pub cpu_end: u64,
    pub nic_end: u64,
}

impl Outcome {
    /// Every message in the order its receiver took it (empty without `Options::trace`).
    pub fn arrivals(&self) -> &[Arrival] {
        self.trace.as_ref().map_or(&[], |t| &t.arrivals)
    }
}

impl Outcome {
    /// When action `id` of `rank` started and completed.
    pub fn times(&self, rank: u32, id: ActionId) -> (u64, u64) {
        let g = self.base[rank as usize] as usize + id as usize;
        (self.start[g], self.finish[g])
    }

    /// The send that receive `id` of `rank` matched (needs `Options::trace`).
    pub fn matched(&self, rank: u32, id: ActionId) -> Option<(u32, ActionId)> {
        let t = self.trace.as_ref()?;
        let m = t.matched[self.base[rank as usize] as usize + id as usize];
        (m.1 != NO_ACTION).then_some(m)
    }
}

const NO_ACTION: ActionId = ActionId::MAX;
const NOT_YET: u64 = u64::MAX;

/// What an event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// Try to start global action `g` of `rank`.
    Try { rank: u32, g: u32 },
    /// The message of global send `g` of `src` reaches `dst`.
    Arrive { dst: u32, src: u32, g: u32 },
}

/// A message that arrived before its receive: sender, its global send action, when its
/// processing ends and what decided that end.
#[derive(Clone, Copy, Debug)]
struct Unexpected {
    src: u32,
    send: u32,
    done: u64,
    why: Link,
}

/// A busy-until time and what made it busy.
#[derive(Clone, Copy, Debug)]
struct Busy {
    until: u64,
    owner: Link,
}

/// The resources of every rank: busy-until times, and what made each busy only when the run
/// is traced (the times alone are what the events touch, so they are kept dense). A rank's
/// CPUs, its NICs' send sides and their receive sides lie side by side (`Engine::cpu_at`,
/// `nic_send_at`, `nic_recv_at`): an event looks at a CPU and a NIC of one rank, and with
/// one of each that is one cache line, where three arrays of 8 MiB at 2^20 ranks made it
/// three cache misses.
struct Res {
    until: Vec<u64>,
    owner: Vec<Link>,
}

impl Res {
    fn new(n: usize, traced: bool) -> Res {
        Res {
            until: vec![0; n],
            owner: if traced {
                vec![Link::NONE; n]
            } else {
                Vec::new()
            },
        }
    }

    fn get(&self, i: usize) -> Busy {
        Busy {
            until: self.until[i],
            owner: self.owner.get(i).copied().unwrap_or(Link::NONE),
        }
    }

    fn hold(&mut self, i: usize, until: u64, owner: Link) {
        if until >= self.until[i] {
            self.until[i] = until;
            if let Some(o) = self.owner.get_mut(i) {
                *o = owner;
            }
        }
    }
}

/// The costs of one message: the channel's `o`, `L`, `g`, `G` (multicast has its own).
#[derive(Clone, Copy)]
struct Costs {
    o: u64,
    l: u64,
    g: u64,
    gb: PerByte,
    ob: PerByte,
}

struct Engine<'p> {
    p: &'p Flat,
    prm: Params,
    ncpu: usize,
    nnic: usize,
    /// Per action, what changes during the run (kept together: an event touches all three).
    st: Vec<St>,
    trace: Option<Trace>,
    /// Resources per rank: `ncpu` CPUs, `nnic` NIC send sides, `nnic` NIC receive sides.
    res: Res,
    stride: usize,
    /// Per rank, its posted receives (global action numbers, linked through `posted_next`)
    /// and its unexpected messages (slots of `msgs`, linked through `msg_next`), each in
    /// posting or arrival order. Lists threaded through arrays rather than a `VecDeque` per
    /// rank: no allocation per rank (a million of them at 2^20 ranks, each with its own heap
    /// block to miss in the cache), and a match taken out of the middle moves nothing.
    queues: Vec<Queues>,
    posted_next: Vec<u32>,
    msgs: Vec<Unexpected>,
    msg_next: Vec<u32>,
    /// Slots of `msgs` free for reuse.
    free_msgs: Vec<u32>,
    queue: RadixQueue<Ev>,
    seq: u64,
    now: u64,
    events: u64,
    done: u64,
    progress: &'p mut dyn FnMut(u64, u64),
    mcast_lost: u64,
    mcast_rounds: u64,
    /// Per receiver with messages waiting for it to be free: (sender, send, tie number of
    /// its arrival event) in arrival order; the first has an event in the queue.
    waiting: HashMap<u32, VecDeque<(u32, u32, u64)>>,
    /// The network that decides arrivals (`simulate_on`); `None`: LogGOPS's `L`.
    net: Option<&'p mut Contention>,
    /// Actions made ready by the event being handled, (rank, global action): queued when
    /// it is done, in `Params::ready_order` (`flush_ready`).
    ready: Vec<(u32, u32)>,
    /// OS noise that lengthens CPU work (`simulate_flat_full`); `None`: none.
    noise: Option<&'p Noise>,
    /// The noise added, over all ranks.
    noise_total: u64,
    qstat: QueueStats,
}

/// The end of a list (`List`).
const NIL: u32 = u32::MAX;

/// A list in order of insertion, threaded through an array of `next` numbers that the
/// caller keeps (`NIL` ends it).
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl List {
    fn push_back(&mut self, next: &mut [u32], i: u32) {
        self.len += 1;
        next[i as usize] = NIL;
        match self.tail {
            NIL => self.head = i,
            t => next[t as usize] = i,
        }
        self.tail = i;
    }

    /// The first entry for which `hit` holds, with the one before it (`NIL` for the head).
    fn find(&self, next: &[u32], mut hit: impl FnMut(u32) -> bool) -> Option<(u32, u32)> {
        let (mut prev, mut i) = (NIL, self.head);
        while i != NIL {
            if hit(i) {
                return Some((prev, i));
            }
            (prev, i) = (i, next[i as usize]);
        }
        None
    }

    /// Takes out `i`, found after `prev` (`find`).
    fn remove(&mut self, next: &mut [u32], prev: u32, i: u32) {
        self.len -= 1;
        // The last entry has nothing after it: no need to read `next` (a cache miss at scale).
        let after = if self.tail == i {
            NIL
        } else {
            next[i as usize]
        };
        match prev {
            NIL => self.head = after,
            p => next[p as usize] = after,
        }
        if self.tail == i {
            self.tail = prev;
        }
    }
}

/// A rank's posted receives and unexpected messages (kept together: a message that arrives
/// looks at the first, a receive that is posted at the second).
#[derive(Clone, Copy, Debug, Default)]
struct Queues {
    posted: List,
    unexpected: List,
}

/// How many events pass between two calls of a run's progress function.
pub const PROGRESS_EVERY: u64 = 1 << 20;

/// An action's state: the time it became ready until it starts, then its start time; its
/// completion time (`NOT_YET`); its prerequisites still to complete.
#[derive(Clone, Copy)]
struct St {
    start: u64,
    finish: u64,
    remaining: u32,
}

/// Where an action kind starts among actions ready at once (`ReadyOrder::Kind`): sends,
/// then receives, then computations.
fn kind_rank(k: FlatKind) -> u8 {
    match k {
        FlatKind::Send | FlatKind::Mcast => 0,
        FlatKind::Recv | FlatKind::Mrecv => 1,
        FlatKind::Exec | FlatKind::Calc => 2,
    }
}

/// How many events ahead of the one being handled `Engine::prefetch` looks (measured on
/// 2^20-rank binomial broadcasts).
const PREFETCH_AHEAD: usize = 8;

/// Starts loading the cache line of `x` (a hint: nothing happens elsewhere than on x86-64).
#[inline(always)]
fn prefetch<T>(x: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = x {
        // SAFETY: prefetching is a hint that never faults, and `x` is a valid reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Message cost factor: LogGOPSim's `s - 1`, never below 0.
fn extra(len: u64) -> u64 {
    len.saturating_sub(1)
}

impl<'p> Engine<'p> {
    fn new(p: &'p Flat, prm: Params, opts: Options, progress: &'p mut dyn FnMut(u64, u64)) -> Self {
        let n = p.num_ranks() as usize;
        let total = p.action_count();
        let (ncpu, nnic) = (p.cpus(), p.nics());
        let trace = opts.trace.then(|| Trace {
            start_pred: vec![Link::NONE; total],
            end_pred: vec![Link::NONE; total],
            matched: vec![(0, NO_ACTION); total],
            arrivals: Vec::new(),
        });
        Engine {
            p,
            prm,
            ncpu,
            nnic,
            st: p
                .acts()
                .iter()
                .map(|a| St {
                    start: 0,
                    finish: NOT_YET,
                    remaining: a.prereq,
                })
                .collect(),
            trace,
            res: Res::new(n * (ncpu + 2 * nnic), opts.trace),
            stride: ncpu + 2 * nnic,
            queues: vec![Queues::default(); n],
            posted_next: vec![NIL; total],
            msgs: Vec::new(),
            msg_next: Vec::new(),
            free_msgs: Vec::new(),
            queue: RadixQueue::new(),
            seq: 0,
            now: 0,
            events: 0,
            done: 0,
            progress,
            mcast_lost: 0,
            mcast_rounds: 0,
            waiting: HashMap::new(),
            net: None,
            ready: Vec::new(),
            noise: None,
            noise_total: 0,
            qstat: QueueStats::default(),
        }
    }

    /// Where `rank`'s CPU `cpu`, NIC `nic`'s send side and its receive side are in `res`.
    fn cpu_at(&self, rank: u32, cpu: u8) -> usize {
        rank as usize * self.stride + cpu as usize
    }
    fn nic_send_at(&self, rank: u32, nic: u8) -> usize {
        rank as usize * self.stride + self.ncpu + nic as usize
    }
    fn nic_recv_at(&self, rank: u32, nic: u8) -> usize {
        rank as usize * self.stride + self.ncpu + self.nnic + nic as usize
    }

    fn costs(&self, mcast: bool) -> Costs {
        let p = &self.prm;
        if mcast {
            Costs {
                o: p.mcast_o(),
                l: p.mcast_l(),
                g: p.mcast_g(),
                gb: p.mcast_gb(),
                ob: p.overhead_per_byte,
            }
        } else {
            Costs {
                o: p.overhead,
                l: p.latency,
                g: p.gap,
                gb: p.gap_per_byte,
                ob: p.overhead_per_byte,
            }
        }
    }

    /// The noise that CPU work of `len` ns starting at `t` on `rank` meets (`noise`).
    fn noise(&mut self, rank: u32, t: u64, len: u64) -> u64 {
        let d = self.noise.map_or(0, |n| n.delay(rank, t, len));
        self.noise_total += d;
        d
    }

    fn push(&mut self, time: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(time, self.seq, ev);
    }

    /// Puts an event back for a later time with its original place in the order of ties, so
    /// that a message that waited for a busy receiver still goes before a later message of
    /// the same sender that arrives just when the receiver becomes free (MPI's
    /// non-overtaking rule).
    fn postpone(&mut self, seq: u64, ev: Ev, time: u64) {
        self.queue.push(time, seq, ev);
    }

    fn local(&self, rank: u32, g: usize) -> ActionId {
        (g - self.p.bases()[rank as usize] as usize) as ActionId
    }

    /// A point of the run, for the trace (nothing to compute without one).
    fn point(&self, rank: u32, g: usize, at_end: bool, via: Via) -> Link {
        if self.trace.is_none() {
            return Link::NONE;
        }
        Link {
            rank,
            action: self.local(rank, g),
            at_end,
            via,
        }
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

    /// Counts down the prerequisite of the dependents that `rank`'s action `g` fulfilled at
    /// `time` (its completion, or its start for `irequ`).
    fn release(&mut self, rank: u32, g: usize, time: u64, at_end: bool) {
        let p = self.p;
        let a = p.act(g);
        let deps = if at_end {
            p.dependents(a)
        } else {
            p.start_dependents(a)
        };
        if deps.is_empty() {
            return;
        }
        let via = if at_end {
            Via::Requires
        } else {
            Via::Irequires
        };
        let me = self.point(rank, g, at_end, via);
        for &d in deps {
            let gd = d as usize;
            if time >= self.st[gd].start {
                self.st[gd].start = time;
                self.set_start_pred(gd, me);
            }
            self.st[gd].remaining -= 1;
            if self.st[gd].remaining == 0 {
                self.ready.push((rank, d));
            }
        }
    }

    /// Queues the actions that the event just handled made ready, each at the time it
    /// became ready, with the next tie numbers: with `ReadyOrder::Kind` by rank, then
    /// sends, receives and computations, in the order they became ready within each (a
    /// stable sort); with `ReadyOrder::Program` in the order they became ready.
    fn flush_ready(&mut self) {
        match self.ready.len() {
            0 => return,
            1 => {}
            _ if self.prm.ready_order == ReadyOrder::Kind => {
                let p = self.p;
                let key = |&(rank, g): &(u32, u32)| (rank, kind_rank(p.act(g as usize).kind));
                if !self.ready.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
                    self.ready.sort_by_key(key);
                }
            }
            _ => {}
        }
        for i in 0..self.ready.len() {
            let (rank, g) = self.ready[i];
            let t = self.st[g as usize].start;
            self.push(t, Ev::Try { rank, g });
        }
        self.ready.clear();
    }

    fn started(&mut self, rank: u32, g: usize, t: u64) {
        self.st[g].start = t;
        self.release(rank, g, t, false);
    }

    fn complete(&mut self, rank: u32, g: usize, t: u64, why: Link) {
        self.st[g].finish = t;
        self.done += 1;
        self.set_end_pred(g, why);
        self.release(rank, g, t, true);
    }

    /// Rendezvous send `g` of `src` matched at `m` by what `why` names.
    fn rendezvous(&mut self, src: u32, g: usize, m: u64, why: Link) {
        let a = *self.p.act(g);
        let (c, n) = (self.cpu_at(src, a.cpu), self.nic_send_at(src, a.nic));
        self.res.hold(c, m, why);
        self.res.hold(n, m, why);
        let own =
            self.st[g].start + self.prm.overhead + self.prm.overhead_per_byte.time(extra(a.arg));
        if m > own {
            self.complete(src, g, m, why);
        } else {
            self.complete(src, g, own, Link::NONE);
        }
    }

    fn record_match(&mut self, recv: usize, src: u32, send: usize) {
        if self.trace.is_some() {
            let action = self.local(src, send);
            if let Some(t) = &mut self.trace {
                t.matched[recv] = (src, action);
            }
        }
    }

    /// Whether receive `recv` takes a message of `send` from `src`.
    fn compatible(recv: &Act, src: u32, send: &Act) -> bool {
        match recv.kind {
            FlatKind::Recv => {
                send.kind == FlatKind::Send
                    && (recv.peer == ANY_PEER || recv.peer == src)
                    && (recv.tag == ANY_TAG || recv.tag == send.tag)
            }
            FlatKind::Mrecv => {
                send.kind == FlatKind::Mcast && (recv.peer == ANY_PEER || recv.peer == src)
            }
            _ => false,
        }
    }

    fn is_rendezvous(&self, send: &Act) -> bool {
        send.kind == FlatKind::Send && send.arg > self.prm.eager_limit
    }

    /// Tries to start `rank`'s action `g` at `t`, by the event numbered `seq`: an action
    /// that finds its CPU or NIC busy is tried again when they are free with the same number,
    /// so it keeps its place among the events of that time (as LogGOPSim keeps its `ts`).
    fn try_start(&mut self, t: u64, seq: u64, rank: u32, g: usize) -> Result<(), SimError> {
        let a = *self.p.act(g);
        let c = self.cpu_at(rank, a.cpu);
        match a.kind {
            FlatKind::Send | FlatKind::Mcast => return self.try_send(t, seq, rank, g, c),
            FlatKind::Recv | FlatKind::Mrecv => self.post_recv(t, rank, g),
            FlatKind::Exec | FlatKind::Calc => self.try_compute(t, seq, rank, g, c),
        }
        Ok(())
    }

    /// A send or multicast of `rank` (action `g`, on CPU `c`) at `t`: started when its CPU and
    /// NIC are free, else tried again then.
    fn try_send(
        &mut self,
        t: u64,
        seq: u64,
        rank: u32,
        g: usize,
        c: usize,
    ) -> Result<(), SimError> {
        let a = *self.p.act(g);
        let cpu = self.res.get(c);
        let n = self.nic_send_at(rank, a.nic);
        let nic = self.res.get(n);
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
            self.postpone(seq, Ev::Try { rank, g: g as u32 }, busy);
            return Ok(());
        }
        let mcast = a.kind == FlatKind::Mcast;
        let k = self.costs(mcast);
        let me = self.point(rank, g, false, Via::Cpu);
        let cpu_len = k.o + k.ob.time(extra(a.arg));
        let cpu_end = t + cpu_len + self.noise(rank, t, cpu_len);
        self.res.hold(c, cpu_end, me);
        self.res.hold(
            n,
            t + k.g + k.gb.time(extra(a.arg)),
            Link {
                via: Via::NicSend,
                ..me
            },
        );
        self.started(rank, g, t);
        let arrive = t + k.o + k.l;
        let nranks = self.p.num_ranks();
        let ev = |dst| Ev::Arrive {
            dst,
            src: rank,
            g: g as u32,
        };
        if mcast {
            // With a network, each receiver's arrival is the network's (contention.rs).
            if self.net.is_some() {
                let id = self.local(rank, g);
                let net = self.net.as_deref_mut().expect("a network");
                net.multicast(rank, id, t + k.o, a.arg, arrive);
            }
            for q in (0..nranks).filter(|&q| q != rank) {
                let arrive = self.net.as_deref().map_or(arrive, |net| net.arrival(q));
                // Datagrams lost on the way to q and their NACK repair (repair.rs).
                let r = repair(&self.prm, rank, g as u64, q, a.arg);
                self.mcast_lost += r.lost;
                self.mcast_rounds += r.rounds as u64;
                self.push(arrive + r.delay, ev(q));
            }
        } else {
            if a.peer >= nranks {
                return Err(SimError::BadPeer {
                    rank,
                    action: self.local(rank, g),
                    peer: a.peer,
                });
            }
            let arrive = match self.net.is_some() {
                true => {
                    let id = self.local(rank, g);
                    let net = self.net.as_deref_mut().expect("a network");
                    net.deliver(rank, id, a.peer, t + k.o, a.arg, arrive)
                }
                false => arrive,
            };
            self.push(arrive, ev(a.peer));
        }
        if !self.is_rendezvous(&a) {
            self.complete(rank, g, cpu_end, Link::NONE);
        }
        Ok(())
    }

    /// A receive of `rank` (action `g`) posted at `t`: matched with a message that came
    /// already, else queued.
    fn post_recv(&mut self, t: u64, rank: u32, g: usize) {
        let a = *self.p.act(g);
        // Posting is free and needs no CPU: o is paid when the message arrives.
        self.started(rank, g, t);
        let p = self.p;
        let msgs = &self.msgs;
        let unexpected = &mut self.queues[rank as usize].unexpected;
        let mut looked = 0u64;
        let hit = unexpected.find(&self.msg_next, |i| {
            looked += 1;
            let u = &msgs[i as usize];
            Self::compatible(&a, u.src, p.act(u.send as usize))
        });
        self.qstat.unexpected_searched += looked;
        match hit {
            Some((prev, i)) => {
                unexpected.remove(&mut self.msg_next, prev, i);
                self.qstat.matched_unexpected += 1;
                self.free_msgs.push(i);
                let u = self.msgs[i as usize];
                let send = u.send as usize;
                self.record_match(g, u.src, send);
                if self.is_rendezvous(p.act(send)) {
                    let why = self.point(rank, g, false, Via::Rendezvous);
                    self.rendezvous(u.src, send, t, why);
                }
                if u.done > t {
                    self.complete(rank, g, u.done, u.why);
                } else {
                    self.complete(rank, g, t, Link::NONE);
                }
            }
            None => {
                let q = &mut self.queues[rank as usize].posted;
                q.push_back(&mut self.posted_next, g as u32);
                if q.len > self.qstat.posted_max {
                    (self.qstat.posted_max, self.qstat.posted_max_rank) = (q.len, rank);
                }
            }
        }
    }

    /// A computation of `rank` (action `g`, on CPU `c`) at `t`: started when its CPU is free,
    /// else tried again then.
    fn try_compute(&mut self, t: u64, seq: u64, rank: u32, g: usize, c: usize) {
        let a = *self.p.act(g);
        let cpu = self.res.get(c);
        if cpu.until > t {
            self.set_start_pred(
                g,
                Link {
                    via: Via::Cpu,
                    ..cpu.owner
                },
            );
            self.postpone(seq, Ev::Try { rank, g: g as u32 }, cpu.until);
            return;
        }
        let nanos = if a.kind == FlatKind::Calc { a.arg } else { 0 };
        let nanos = nanos + self.noise(rank, t, nanos);
        if nanos > 0 {
            let me = self.point(rank, g, false, Via::Cpu);
            self.res.hold(c, t + nanos, me);
        }
        self.started(rank, g, t);
        self.complete(rank, g, t + nanos, Link::NONE);
    }

    fn arrive(&mut self, t: u64, seq: u64, dst: u32, src: u32, send: usize) {
        let (c, n) = (self.cpu_at(dst, 0), self.nic_recv_at(dst, 0));
        // Messages that find the receiver busy wait in line, and only the first of the line
        // has an event: re-queueing every waiting message each time the receiver frees would
        // cost a number of events quadratic in the line (a root taking the scouts of a
        // million ranks). The line is in arrival order, so a sender's messages keep theirs.
        let me = (src, send as u32, seq);
        // (No line anywhere, the usual case: no lookup.)
        let line = match self.waiting.is_empty() {
            true => None,
            false => self.waiting.get(&dst),
        };
        let head = line.is_some_and(|l| l.front() == Some(&me));
        if line.is_some_and(|l| !l.is_empty()) && !head {
            self.waiting.entry(dst).or_default().push_back(me);
            return;
        }
        let (cpu, nic) = (self.res.get(c), self.res.get(n));
        let busy = cpu.until.max(nic.until);
        if busy > t {
            if !head {
                self.waiting.entry(dst).or_default().push_back(me);
            }
            self.postpone(
                seq,
                Ev::Arrive {
                    dst,
                    src,
                    g: send as u32,
                },
                busy,
            );
            return;
        }
        if head {
            let line = self.waiting.get_mut(&dst).expect("a line");
            line.pop_front();
            if line.is_empty() {
                self.waiting.remove(&dst);
            }
        }
        self.take(t, dst, src, send);
        // The next in line is taken when the receiver is free again.
        // It keeps its own tie number (if the receiver is free at once, as with o = g = 0, it
        // takes a new one: a key may not go below the one just taken).
        if let Some(&(s2, g2, q2)) = self.waiting.get(&dst).and_then(|l| l.front()) {
            let free = self.res.until[c].max(self.res.until[n]);
            let ev = Ev::Arrive {
                dst,
                src: s2,
                g: g2,
            };
            if free > t {
                self.postpone(q2, ev, free);
            } else {
                self.push(free, ev);
            }
        }
    }

    /// `u` on `dst`'s queue of unexpected messages, in a free slot if there is one.
    fn queue_unexpected(&mut self, dst: u32, u: Unexpected) {
        let slot = match self.free_msgs.pop() {
            Some(i) => {
                self.msgs[i as usize] = u;
                i
            }
            None => {
                self.msgs.push(u);
                self.msg_next.push(NIL);
                (self.msgs.len() - 1) as u32
            }
        };
        let q = &mut self.queues[dst as usize].unexpected;
        q.push_back(&mut self.msg_next, slot);
        if q.len > self.qstat.unexpected_max {
            (self.qstat.unexpected_max, self.qstat.unexpected_max_rank) = (q.len, dst);
        }
    }

    /// The receiver `dst`, free at `t`, takes the message of `src`'s send `send`.
    fn take(&mut self, t: u64, dst: u32, src: u32, send: usize) {
        let (c, n) = (self.cpu_at(dst, 0), self.nic_recv_at(dst, 0));
        let (cpu, nic) = (self.res.get(c), self.res.get(n));
        let sa = *self.p.act(send);
        let k = self.costs(sa.kind == FlatKind::Mcast);
        let x = extra(sa.arg);
        // The CPU pays o and the per-byte O; the receive completes when the NIC has also taken
        // in every byte (LogGOPSim's rule), but the CPU is free meanwhile for other actions.
        // Noise lengthens the CPU's part; the message is in when the CPU and the NIC are
        // both through with it.
        let cpu_len = match self.prm.recv_cpu {
            RecvCpu::Model => k.o + k.ob.time(x),
            RecvCpu::LogGOPSim => k.o + k.ob.time(x).max(k.gb.time(x)),
        };
        let cpu_done = t + cpu_len + self.noise(dst, t, cpu_len);
        let done = cpu_done.max(t + k.o + k.gb.time(x));
        let msg = self.point(src, send, false, Via::Message);
        // A message that had to wait for the receiver ends when the CPU or NIC that held it
        // up allowed, so that is what its receive waited for.
        // (Without a trace nothing reads `why`: the send's start, a cache miss at scale, is
        // then left unread.)
        let natural = match self.net.is_some() {
            true => {
                let id = self.local(src, send);
                let net = self.net.as_deref_mut().expect("a network");
                net.arrived(src, id, dst)
            }
            false if self.trace.is_none() => 0,
            false => self.st[send].start + k.o + k.l,
        };
        let why = if self.trace.is_none() {
            Link::NONE
        } else if t <= natural {
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
        self.res.hold(
            n,
            t + k.g + k.gb.time(x),
            Link {
                via: Via::NicRecv,
                ..msg
            },
        );
        if self.trace.is_some() {
            let send_local = self.local(src, send);
            if let Some(tr) = &mut self.trace {
                tr.arrivals.push(Arrival {
                    rank: dst,
                    src,
                    send: send_local,
                    at: t,
                    cpu_end: cpu_done,
                    nic_end: t + k.g + k.gb.time(x),
                });
            }
        }
        let p = self.p;
        let posted = &mut self.queues[dst as usize].posted;
        let mut looked = 0u64;
        let hit = posted.find(&self.posted_next, |r| {
            looked += 1;
            Self::compatible(p.act(r as usize), src, &sa)
        });
        self.qstat.posted_searched += looked;
        match hit {
            Some((prev, recv)) => {
                posted.remove(&mut self.posted_next, prev, recv);
                self.qstat.matched_posted += 1;
                let recv = recv as usize;
                let me = self.point(dst, recv, true, Via::Cpu);
                self.res.hold(c, cpu_done, me);
                self.record_match(recv, src, send);
                if self.is_rendezvous(&sa) {
                    let why = Link {
                        via: Via::Rendezvous,
                        ..msg
                    };
                    self.rendezvous(src, send, t, why);
                }
                self.complete(dst, recv, done, why);
            }
            None => {
                self.res.hold(
                    c,
                    cpu_done,
                    Link {
                        via: Via::Cpu,
                        ..msg
                    },
                );
                let u = Unexpected {
                    src,
                    send: send as u32,
                    done,
                    why,
                };
                self.queue_unexpected(dst, u);
            }
        }
    }

    fn run(&mut self) -> Result<(), SimError> {
        let p = self.p;
        // The actions ready at the start are the first events, at time 0 and in rank and
        // action order: they are taken in that order straight from the program, and every
        // event they make is numbered after them, which is exactly the order the queue would
        // give. (A million of them would otherwise all sit in the queue at once.)
        // With `ReadyOrder::Kind` each rank's sends go first, then its receives, then its
        // computations: sends start as the rank is read, the others wait in `later` (one
        // pass over the program; with `Program` all start as read).
        self.seq = p.acts().iter().filter(|a| a.prereq == 0).count() as u64;
        let kinds = self.prm.ready_order == ReadyOrder::Kind;
        let mut first = 0u64;
        let mut later: Vec<usize> = Vec::new();
        for r in 0..p.num_ranks() {
            for g in p.range(r) {
                let a = p.act(g);
                if a.prereq != 0 {
                    continue;
                }
                if kinds && kind_rank(a.kind) > 0 {
                    later.push(g);
                    continue;
                }
                self.events += 1;
                first += 1;
                self.try_start(0, first, r, g)?;
                self.flush_ready();
            }
            if !later.is_empty() {
                // Receives, then computations, each in schedule order.
                later.sort_by_key(|&g| kind_rank(p.act(g).kind));
                for &g in &later {
                    self.events += 1;
                    first += 1;
                    self.try_start(0, first, r, g)?;
                    self.flush_ready();
                }
                later.clear();
            }
        }
        while let Some((time, seq, ev)) = self.queue.pop_with_seq() {
            self.events += 1;
            if self.events % PROGRESS_EVERY == 0 {
                (self.progress)(self.done, p.action_count() as u64);
            }
            self.now = time;
            if let Some(&next) = self.queue.peek_ahead(PREFETCH_AHEAD) {
                self.prefetch(next);
            }
            match ev {
                Ev::Try { rank, g } => self.try_start(time, seq, rank, g as usize)?,
                Ev::Arrive { dst, src, g } => self.arrive(time, seq, dst, src, g as usize),
            }
            self.flush_ready();
        }
        let total = p.action_count() as u64;
        if self.done < total {
            return Err(self.deadlock(total - self.done));
        }
        Ok(())
    }

    /// Asks the memory for what event `ev` will read, a few events before it is handled: at
    /// scale an event's action, state and receiver lie far from the last event's, and each
    /// would be a cache miss (the order of events is not changed, only waited for less).
    fn prefetch(&self, ev: Ev) {
        match ev {
            Ev::Try { rank, g } => {
                prefetch(self.p.acts().get(g as usize));
                prefetch(self.st.get(g as usize));
                prefetch(self.res.until.get(self.cpu_at(rank, 0)));
            }
            Ev::Arrive { dst, g, .. } => {
                prefetch(self.p.acts().get(g as usize));
                prefetch(self.res.until.get(self.cpu_at(dst, 0)));
                prefetch(self.queues.get(dst as usize));
            }
        }
    }

    fn deadlock(&self, unfinished: u64) -> SimError {
        let mut started = Vec::new();
        let mut blocked = Vec::new();
        let p = self.p;
        for r in 0..p.num_ranks() {
            let posted = self.queues[r as usize].posted;
            for g in p.range(r) {
                if self.st[g].finish != NOT_YET {
                    continue;
                }
                let a = p.act(g);
                let action = self.local(r, g);
                if posted.find(&self.posted_next, |i| i == g as u32).is_some() {
                    started.push(Waiting {
                        rank: r,
                        action,
                        why: format!(
                            "{} posted at {} ns, never matched",
                            a.describe(),
                            self.st[g].start
                        ),
                    });
                } else if self.st[g].remaining == 0 {
                    started.push(Waiting {
                        rank: r,
                        action,
                        why: format!(
                            "{} started at {} ns, its receiver never matched it",
                            a.describe(),
                            self.st[g].start
                        ),
                    });
                } else if blocked.len() < MAX_LISTED {
                    blocked.push(Waiting {
                        rank: r,
                        action,
                        why: format!(
                            "{} waits for {} unfinished prerequisites",
                            a.describe(),
                            self.st[g].remaining
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
        let p = self.p;
        let n = p.num_ranks() as usize;
        let mut end = vec![0u64; n];
        for (r, e) in end.iter_mut().enumerate() {
            let c = r * self.stride;
            let cpus = &self.res.until[c..c + self.ncpu];
            let acts = self.st[p.range(r as u32)].iter().map(|s| s.finish);
            *e = cpus.iter().copied().chain(acts).max().unwrap_or(0);
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
            mcast_lost: self.mcast_lost,
            mcast_repairs: self.mcast_rounds,
            noise: self.noise_total,
            queues: self.qstat,
            base: p.bases().to_vec(),
            start: self.st.iter().map(|s| s.start).collect(),
            finish: self.st.iter().map(|s| s.finish).collect(),
            trace: self.trace,
        }
    }
}

/// Simulates `p` with parameters `prm`. Errors when some action can never complete.
pub fn simulate(p: &Program, prm: &Params, opts: Options) -> Result<Outcome, SimError> {
    let flat = Flat::from_program(p).map_err(SimError::TooBig)?;
    simulate_flat(&flat, prm, opts)
}

/// Simulates a program already in the simulator's form (`Flat`, built rank by rank from a
/// generator or a binary schedule without the whole `Program` in memory).
pub fn simulate_flat(p: &Flat, prm: &Params, opts: Options) -> Result<Outcome, SimError> {
    simulate_flat_with(p, prm, opts, &mut |_, _| {})
}

/// `simulate_flat` that calls `progress(completed actions, all actions)` every
/// `PROGRESS_EVERY` events, for a progress bar.
pub fn simulate_flat_with(
    p: &Flat,
    prm: &Params,
    opts: Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome, SimError> {
    let mut e = Engine::new(p, *prm, opts, progress);
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
    let flat = Flat::from_program(p).map_err(SimError::TooBig)?;
    simulate_flat_on(&flat, prm, opts, net, &mut |_, _| {})
}

/// `simulate_flat_with` on a network.
pub fn simulate_flat_on(
    p: &Flat,
    prm: &Params,
    opts: Options,
    net: &mut Contention,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome, SimError> {
    let mut e = Engine::new(p, *prm, opts, progress);
    e.net = Some(net);
    e.run()?;
    Ok(e.outcome())
}

/// `simulate_flat_with` with OS noise (`noise`) and, when `net` is given, on a network
/// (`simulate_flat_on`).
pub fn simulate_flat_full(
    p: &Flat,
    prm: &Params,
    opts: Options,
    noise: Option<&Noise>,
    net: Option<&mut Contention>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome, SimError> {
    let mut e = Engine::new(p, *prm, opts, progress);
    e.net = net;
    e.noise = noise;
    e.run()?;
    Ok(e.outcome())
}

/// About the bytes a run over a program of `ranks` ranks and `actions` actions (`cpus` CPUs
/// and `nics` NICs per rank) holds at its peak besides the program itself: the state of every
/// action and resource, the events in the queue, and the outcome (with `traced`, also what
/// `Options::trace` keeps). For the command line, to refuse a run that cannot fit before it
/// builds anything; the run itself does not use it.
pub fn run_bytes(ranks: u64, actions: u64, cpus: u64, nics: u64, traced: bool) -> u64 {
    use std::mem::size_of;
    let link = size_of::<Link>() as u64;
    // Its state, its place in a posted-receive list, and its start and finish in the outcome
    // (made while the state is still held); and an event pending in the queue: a multicast
    // puts one per receiver in at once, 32 bytes in a bucket and 24 more when its time comes,
    // in arrays that grow by doubling and keep their room.
    let mut per_action = size_of::<St>() as u64 + 4 + 16 + 64;
    if traced {
        per_action += 2 * link + size_of::<(u32, ActionId)>() as u64 + size_of::<Arrival>() as u64;
    }
    let stride = cpus + 2 * nics;
    // Its resources, its queues, and its end and first action in the outcome.
    let mut per_rank = stride * 8 + size_of::<Queues>() as u64 + 8 + 4;
    if traced {
        per_rank += stride * link;
    }
    actions
        .saturating_mul(per_action)
        .saturating_add(ranks.saturating_mul(per_rank))
}

/// The chain of actions that ends last: from the action that completes last on the rank that
/// ends last, back along what each waited for, listed first to last. Empty without
/// `Options::trace` or actions.
pub fn critical_path(o: &Outcome) -> Vec<Step> {
    let Some(t) = &o.trace else {
        return Vec::new();
    };
    let r = o.max_rank as usize;
    let (lo, hi) = (o.base[r] as usize, o.base[r + 1] as usize);
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
        let g = o.base[at.rank as usize] as usize + at.action as usize;
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
    Act::of(op).describe()
}
