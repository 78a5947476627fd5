//! The simulator's own form of a program: every rank's actions in one array, each action a few
//! numbers (what it is, its size or duration, its peer and tag, its CPU and NIC), and every
//! dependency edge in one array of global action numbers. A `goal::Program` keeps a `Schedule`
//! per rank with vectors of its own, which at 2^20 ranks means millions of allocations and a
//! pointer chase per event; the simulator needs none of that. A `Flat` is built rank by rank
//! (`push_rank`), so a program can be streamed into it from a generator or a binary schedule
//! without ever being whole in memory in its other form.

use crate::goal::{Hint, RankProgram};
use crate::sched::{ActionId, Op, Schedule, ANY_PEER, ANY_TAG};

/// What an action does, for the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Send,
    Recv,
    Mcast,
    Mrecv,
    Exec,
    Calc,
}

/// One action: `arg` is its size in bytes (messages) or its duration in ns (`calc`); `peer`
/// the destination of a send, the source (or `ANY_PEER`) of a receive, the root (or
/// `ANY_PEER`) of a multicast receive; `tag` for sends and receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Act {
    pub arg: u64,
    pub peer: u32,
    pub tag: u32,
    pub prereq: u32,
    /// Its dependents are `ndep` numbers from `dep` in `Flat::deps`, its start-dependents the
    /// `nsdep` after them: kept here rather than in arrays of their own, so that an event finds
    /// all it needs of an action in one place.
    pub dep: u32,
    pub ndep: u32,
    pub nsdep: u32,
    pub kind: Kind,
    pub cpu: u8,
    pub nic: u8,
}

impl Act {
    pub(crate) fn of(op: &Op) -> Act {
        let (kind, arg, peer, tag) = match *op {
            Op::Send { peer, tag, buf } => (Kind::Send, buf.len as u64, peer, tag),
            Op::Recv { peer, tag, buf } => (Kind::Recv, buf.len as u64, peer, tag),
            Op::McastSend { buf } => (Kind::Mcast, buf.len as u64, 0, 0),
            Op::McastRecv { root, buf } => (Kind::Mrecv, buf.len as u64, root, 0),
            Op::Exec { .. } => (Kind::Exec, 0, 0, 0),
            Op::Calc { nanos } => (Kind::Calc, nanos, 0, 0),
        };
        Act {
            arg,
            peer,
            tag,
            prereq: 0,
            dep: 0,
            ndep: 0,
            nsdep: 0,
            kind,
            cpu: 0,
            nic: 0,
        }
    }

    /// The action in words, for errors and critical paths.
    pub fn describe(&self) -> String {
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
        match self.kind {
            Kind::Send => format!(
                "send {} bytes to {} tag {}",
                self.arg,
                self.peer,
                tag(self.tag)
            ),
            Kind::Recv => format!(
                "recv {} bytes from {} tag {}",
                self.arg,
                peer(self.peer),
                tag(self.tag)
            ),
            Kind::Mcast => format!("mcast {} bytes", self.arg),
            Kind::Mrecv => format!("mrecv {} bytes from {}", self.arg, peer(self.peer)),
            Kind::Exec => "exec".to_string(),
            Kind::Calc => format!("calc {}", self.arg),
        }
    }
}

/// A whole program in the simulator's form. Action `id` of rank `r` is global action
/// `base[r] + id`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flat {
    base: Vec<u32>,
    acts: Vec<Act>,
    /// Every action's dependents and start-dependents, as global numbers (see `Act::dep`).
    deps: Vec<u32>,
    /// The labels of the actions that have one: (global number, where its text ends in
    /// `label_text`), ascending; a label's text starts where the one before ends. One string
    /// for all of them rather than one allocation each (Schedgen labels every action).
    labels: Vec<(u32, u32)>,
    label_text: String,
    ncpu: u8,
    nnic: u8,
}

/// Why a program does not fit the simulator's form.
pub const TOO_BIG: &str = "the program has more than 2^32 - 1 actions or dependencies, \
                           more than the simulator addresses";

impl Flat {
    pub fn new() -> Self {
        Flat {
            base: vec![0],
            ..Flat::default()
        }
    }

    /// Room for `ranks` more ranks, `actions` more actions and `deps` more dependency edges,
    /// taken at once: a program of known size then never grows its arrays by doubling (which
    /// needs up to twice the memory for a while), and memory that cannot be had is an error to
    /// report rather than an abort. Changes nothing else.
    pub fn try_reserve(
        &mut self,
        ranks: usize,
        actions: usize,
        deps: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        self.base.try_reserve_exact(ranks)?;
        self.acts.try_reserve_exact(actions)?;
        self.deps.try_reserve_exact(deps)
    }

    /// A program's ranks, in order.
    pub fn from_program(p: &crate::goal::Program) -> Result<Flat, String> {
        let mut f = Flat::new();
        for r in &p.ranks {
            f.push_rank(r)?;
        }
        Ok(f)
    }

    /// Appends the next rank.
    pub fn push_rank(&mut self, r: &RankProgram) -> Result<(), String> {
        let base = self.acts.len() as u32;
        self.push_schedule(&r.schedule, &r.hints)?;
        for (id, l) in r.labels.iter().enumerate() {
            if let Some(l) = l {
                if self.label_text.len() + l.len() >= u32::MAX as usize {
                    return Err(TOO_BIG.into());
                }
                self.label_text.push_str(l);
                self.labels
                    .push((base + id as u32, self.label_text.len() as u32));
            }
        }
        Ok(())
    }

    /// The label of global action `g`, if the program gave it one.
    pub fn label(&self, g: usize) -> Option<&str> {
        let i = self
            .labels
            .binary_search_by_key(&(g as u32), |l| l.0)
            .ok()?;
        let start = if i == 0 {
            0
        } else {
            self.labels[i - 1].1 as usize
        };
        Some(&self.label_text[start..self.labels[i].1 as usize])
    }

    /// Appends the next rank: its schedule and the CPU and NIC of each action (`hints` may
    /// be shorter, even empty: the others use CPU 0 and NIC 0).
    pub fn push_schedule(&mut self, s: &Schedule, hints: &[Hint]) -> Result<(), String> {
        let first = self.acts.len();
        let total = first + s.len();
        if total >= u32::MAX as usize {
            return Err(TOO_BIG.into());
        }
        let base = first as u32;
        for (id, op) in s.actions() {
            let mut a = Act::of(op);
            a.prereq = s.prerequisites(id) as u32;
            if let Some(h) = hints.get(id as usize) {
                (a.cpu, a.nic) = (h.cpu, h.nic);
                self.ncpu = self.ncpu.max(h.cpu);
                self.nnic = self.nnic.max(h.nic);
            }
            let (d, sd) = (s.dependents(id), s.start_dependents(id));
            if self.deps.len() + d.len() + sd.len() >= u32::MAX as usize {
                return Err(TOO_BIG.into());
            }
            a.dep = self.deps.len() as u32;
            (a.ndep, a.nsdep) = (d.len() as u32, sd.len() as u32);
            self.deps.extend(d.iter().map(|&d| base + d));
            self.deps.extend(sd.iter().map(|&d| base + d));
            self.acts.push(a);
        }
        self.base.push(total as u32);
        Ok(())
    }

    pub fn num_ranks(&self) -> u32 {
        (self.base.len() - 1) as u32
    }

    pub fn action_count(&self) -> usize {
        self.acts.len()
    }

    /// CPUs and NICs per rank: one more than the largest placement hint.
    pub fn cpus(&self) -> usize {
        self.ncpu as usize + 1
    }
    pub fn nics(&self) -> usize {
        self.nnic as usize + 1
    }

    /// The global number of action `id` of `rank`.
    pub fn global(&self, rank: u32, id: ActionId) -> usize {
        self.base[rank as usize] as usize + id as usize
    }

    /// Global numbers of `rank`'s actions.
    pub fn range(&self, rank: u32) -> std::ops::Range<usize> {
        self.base[rank as usize] as usize..self.base[rank as usize + 1] as usize
    }

    pub fn act(&self, g: usize) -> &Act {
        &self.acts[g]
    }

    pub fn acts(&self) -> &[Act] {
        &self.acts
    }

    /// The actions that wait for action `a` to complete.
    pub fn dependents(&self, a: &Act) -> &[u32] {
        let d = a.dep as usize;
        &self.deps[d..d + a.ndep as usize]
    }

    /// The actions that wait for action `a` to start.
    pub fn start_dependents(&self, a: &Act) -> &[u32] {
        let d = a.dep as usize + a.ndep as usize;
        &self.deps[d..d + a.nsdep as usize]
    }

    /// The starts of every rank's actions (`num_ranks + 1` entries).
    pub fn bases(&self) -> &[u32] {
        &self.base
    }

    /// The rank that global action `g` belongs to.
    pub fn rank_of(&self, g: usize) -> u32 {
        (self.base.partition_point(|&b| b as usize <= g) - 1) as u32
    }

    /// Bytes held, roughly: what `mpicast sim` reports as the program's size in memory.
    pub fn bytes(&self) -> usize {
        self.acts.len() * std::mem::size_of::<Act>()
            + (self.deps.len() + self.base.len() + 2 * self.labels.len()) * 4
            + self.label_text.len()
    }
}
