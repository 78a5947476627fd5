//! Running a loaded GOAL program over the host MPI: `load` turns text into this
//! rank's schedule and checks what the executor can run; `GoalBackend` is the
//! `sched::Backend` that performs its actions. Sends and receives are non-blocking PMPI
//! calls on a private duplicate of the user's communicator (so application receives, even
//! wildcard ones, never match them), with the schedule's own tags; `exec` runs
//! `sched::func::apply`; `calc` spins for its nanoseconds; `mcast` and `mrecv` go to
//! `goal_mcast` (the multicast channel of the handle's communicator). Owns no memory of the
//! application:
//! buffers arrive as `host::p2p::Region`s bound by whoever holds the handle (`coll::goal`).

use super::goal_mcast::{self, McastRun, Numbering};
use super::op::OpError;
use crate::goal::{self, validate};
use crate::host::p2p::{self, Region, Requests, Rounds};
use crate::host::{MPI_Comm, MpiError, SendComm};
use crate::sched::SCRATCH_SLOT;
use crate::sched::{
    func, ActionId, Backend, BufRef, Func, Layers, Op, Schedule, ANY_PEER, ANY_TAG,
};
use func::FuncError;
use std::fmt;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

/// The largest tag every MPI must accept (MPI_TAG_UB is at least this).
pub const MAX_TAG: u32 = 32767;

/// This rank's part of a loaded program, with what binding needs.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub schedule: Schedule,
    /// Names of the slots (`buffers[slot]`); `SCRATCH_SLOT` is not listed.
    pub buffers: Vec<String>,
    /// Per slot, the bytes the schedule touches (the end of its furthest reference).
    pub needed: Vec<usize>,
    /// Bytes of scratch the schedule needs.
    pub scratch_len: usize,
    /// The user functions (`exec user N`) the schedule calls, ascending.
    pub users: Vec<u16>,
    /// The schedule's multicasts, numbered for a run (empty: none).
    pub mcast: Numbering,
    /// The schedule's layers when it is point-to-point in rounds (`sched::Layers`): it can
    /// run as `host::p2p::Rounds` (`rounds`).
    pub layers: Option<Layers>,
}

pub use crate::host::p2p::UserFunc;

/// Parses `bytes` (text of either dialect, or a binary schedule recognised by its magic),
/// validates the whole program, and keeps rank `rank`'s schedule. Errors are rendered
/// `NAME:line:col: error: message` for text and `NAME: error: byte N: ...` for binary.
pub fn load(bytes: &[u8], name: &str, rank: u32, size: u32) -> Result<Loaded, String> {
    let sizes = validate::BufferSizes(Default::default());
    let p = if bytes.starts_with(&goal::binary::MAGIC) {
        let p = goal::binary::load(bytes).map_err(|e| format!("{name}: error: {e}"))?;
        let diags = validate::validate(&p, None, &sizes);
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            return Err(d.render(name));
        }
        p
    } else {
        let parsed = goal::parse_any(bytes).map_err(|d| d.render(name))?;
        let diags = validate::validate(&parsed.program, Some(&parsed.source), &sizes);
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            return Err(d.render(name));
        }
        parsed.program
    };
    from_program(&p, rank, size)
}

/// This rank's part of a valid program `p` for a communicator of `size` ranks.
pub fn from_program(p: &goal::Program, rank: u32, size: u32) -> Result<Loaded, String> {
    let mine = if p.local_view {
        0
    } else if p.num_ranks() != size {
        return Err(format!(
            "goal: error: the program describes {} ranks, the communicator has {size}",
            p.num_ranks()
        ));
    } else {
        rank as usize
    };
    let schedule = p.ranks[mine].schedule.clone();
    let mut users = Vec::new();
    let mut needed = vec![0usize; p.buffers.len()];
    let mut scratch_len = 0usize;
    let mut note = |b: &BufRef| {
        if b.slot == SCRATCH_SLOT {
            scratch_len = scratch_len.max(b.len);
        } else if let Some(n) = needed.get_mut(b.slot as usize) {
            *n = (*n).max(b.offset.saturating_add(b.len));
        }
    };
    for (id, op) in schedule.actions() {
        let at = || format!("goal: error (rank {mine}, action {id})");
        match op {
            Op::Send { tag, buf, .. } | Op::Recv { tag, buf, .. } => {
                if *tag != ANY_TAG && *tag > MAX_TAG {
                    return Err(format!("{}: tag {tag} exceeds {MAX_TAG}", at()));
                }
                note(buf);
            }
            Op::Exec { func, src, dst } => {
                if let Func::User(n) = func {
                    users.push(*n);
                }
                note(src);
                note(dst);
            }
            Op::Calc { .. } => {}
            Op::McastSend { buf } | Op::McastRecv { buf, .. } => note(buf),
        }
    }
    users.sort_unstable();
    users.dedup();
    let mcast = goal_mcast::number(&schedule, rank, size);
    let layers = Layers::of(&schedule);
    Ok(Loaded {
        layers,
        schedule,
        buffers: p.buffers.clone(),
        needed,
        scratch_len,
        users,
        mcast,
    })
}

/// Why a run failed.
#[derive(Debug)]
pub enum GoalError {
    Mpi(MpiError),
    Func(FuncError),
    /// A user function returned this nonzero code.
    User {
        id: ActionId,
        func: u16,
        code: c_int,
    },
    /// A buffer reference outside the bound memory.
    OutOfRange {
        id: ActionId,
        slot: u16,
    },
    /// A multicast action failed (stalled, truncated, socket error).
    Mcast(OpError),
    /// A streamed schedule turned out not to be one (`sched::window` faults).
    Schedule(String),
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoalError::Mpi(e) => write!(f, "{e}"),
            GoalError::Func(e) => write!(f, "exec: {e}"),
            GoalError::User { id, func, code } => {
                write!(f, "action {id}: user function {func} returned {code}")
            }
            GoalError::Mcast(e) => write!(f, "{e}"),
            GoalError::Schedule(m) => write!(f, "invalid schedule: {m}"),
            GoalError::OutOfRange { id, slot } => {
                write!(
                    f,
                    "action {id} reaches outside the memory bound to slot {slot}"
                )
            }
        }
    }
}

impl From<MpiError> for GoalError {
    fn from(e: MpiError) -> Self {
        GoalError::Mpi(e)
    }
}

impl From<OpError> for GoalError {
    fn from(e: OpError) -> Self {
        match e {
            OpError::Mpi(e) => GoalError::Mpi(e),
            e => GoalError::Mcast(e),
        }
    }
}

/// The actions of one run on one rank.
pub struct GoalBackend {
    // Dropped first: outstanding requests complete before anything else goes.
    reqs: Requests,
    comm: SendComm,
    slots: Vec<Option<Region>>,
    scratch: Region,
    users: Vec<Option<UserFunc>>,
    calcs: Vec<(ActionId, Instant)>,
    /// The run's multicasts (None: the schedule has none); boxed, as most runs have none.
    mcast: Option<Box<McastRun>>,
    /// Per action, its multicast number (`Numbering::of`).
    mcast_no: Vec<u32>,
    /// `progress` may block in the host MPI until a request completes (set by a caller that
    /// waits for the run and that no other thread shares it with).
    blocking: bool,
}

/// The vectors of a finished run's backend, kept so that the next run of the same handle
/// allocates nothing (`GoalBackend::into_memory`, `GoalBackend::with_memory`).
#[derive(Default)]
pub struct BackendMemory {
    /// The memory of each slot (None: unbound), filled by the caller before `with_memory`.
    pub slots: Vec<Option<Region>>,
    /// The user functions (`users[n]` is function n), filled likewise.
    pub users: Vec<Option<UserFunc>>,
    reqs: Requests,
    calcs: Vec<(ActionId, Instant)>,
}

impl GoalBackend {
    /// A backend for one run. `m.slots[i]` is the memory of slot i (None: unbound) and
    /// `m.users[n]` user function n (the caller checked that every one the schedule calls is
    /// there), filled by the caller into the vectors of an earlier run (`into_memory`) or
    /// fresh ones; `scratch` is the scratch area. `mcast` carries the run's multicasts,
    /// numbered by its vector; it must be there when the schedule has any.
    pub fn with_memory(
        comm: MPI_Comm,
        m: BackendMemory,
        scratch: Region,
        mcast: Option<(McastRun, Vec<u32>)>,
    ) -> Self {
        let (mcast, mcast_no) = match mcast {
            Some((m, no)) => (Some(Box::new(m)), no),
            None => (None, Vec::new()),
        };
        // `reqs` and `calcs` are empty: `into_memory` emptied them, or they are new.
        let BackendMemory {
            slots,
            users,
            reqs,
            calcs,
        } = m;
        GoalBackend {
            reqs,
            comm: SendComm(comm),
            slots,
            scratch,
            users,
            calcs,
            mcast,
            mcast_no,
            blocking: false,
        }
    }

    /// Ends the run where it stands (outstanding requests cancelled, multicasts dropped) and
    /// gives its vectors back, emptied.
    pub fn into_memory(self) -> BackendMemory {
        let GoalBackend {
            mut reqs,
            mut slots,
            mut users,
            mut calcs,
            mcast,
            ..
        } = self;
        reqs.cancel_all();
        drop(mcast);
        slots.clear();
        users.clear();
        calcs.clear();
        BackendMemory {
            slots,
            users,
            reqs,
            calcs,
        }
    }

    /// Nothing outstanding and no multicast channel: a finished run that can run again as it
    /// is (`coll::goal::Spare` keeps it whole for the next start of the same program).
    pub fn reusable(&self) -> bool {
        self.reqs.is_empty() && self.calcs.is_empty() && self.mcast.is_none()
    }

    /// Lets `progress` wait inside the host MPI when only point-to-point requests are
    /// outstanding (nothing to spin for, no socket to poll): the caller is waiting for the
    /// run and no other thread drives it.
    pub fn set_blocking(&mut self, on: bool) {
        self.blocking = on;
    }

    fn mcast(&mut self, id: ActionId) -> Result<(&mut McastRun, u32), GoalError> {
        let k = self.mcast_no.get(id as usize).copied().unwrap_or(0);
        match (&mut self.mcast, k) {
            (Some(m), k) if k > 0 => Ok((m, k)),
            _ => Err(GoalError::Mcast(OpError::Unsupported(
                "a multicast action without the run's multicast channel",
            ))),
        }
    }

    fn region(&self, id: ActionId, b: &BufRef) -> Result<Region, GoalError> {
        resolve(&self.slots, self.scratch, id, b)
    }
}

/// The memory `b` of action `id` refers to, given the slots' memory (None: unbound) and the
/// scratch area.
fn resolve(
    slots: &[Option<Region>],
    scratch: Region,
    id: ActionId,
    b: &BufRef,
) -> Result<Region, GoalError> {
    let whole = if b.slot == SCRATCH_SLOT {
        Some(scratch)
    } else {
        slots.get(b.slot as usize).copied().flatten()
    };
    let offset = if b.slot == SCRATCH_SLOT { 0 } else { b.offset };
    if whole.is_none() && b.len == 0 {
        // Zero bytes of a buffer the program never needs bound (scouts, a barrier).
        return Ok(Region::empty());
    }
    whole
        .and_then(|r| r.sub(offset, b.len))
        .ok_or(GoalError::OutOfRange { id, slot: b.slot })
}

/// A layered point-to-point program (`Loaded::layers`) bound to its memory, ready to run
/// layer by layer on `comm` with no bookkeeping per action (`host::p2p::Rounds`); `slots`
/// and `scratch` as for `GoalBackend::with_memory`.
pub fn rounds(
    comm: MPI_Comm,
    s: &Schedule,
    layers: &Layers,
    slots: &[Option<Region>],
    scratch: Region,
) -> Result<Rounds, GoalError> {
    let mut r = Rounds::new(comm);
    for k in 0..layers.len() {
        for &id in layers.layer(k) {
            match s.op(id) {
                Op::Send { peer, tag, buf } => {
                    let m = resolve(slots, scratch, id, buf)?;
                    r.push(false, m, *peer as c_int, mpi_tag(*tag))?;
                }
                Op::Recv { peer, tag, buf } => {
                    let m = resolve(slots, scratch, id, buf)?;
                    r.push(true, m, mpi_source(*peer), mpi_tag(*tag))?;
                }
                // `Layers::of` takes nothing else.
                _ => unreachable!("a layered schedule holds sends and receives only"),
            }
        }
        r.end_layer();
    }
    Ok(r)
}

fn mpi_tag(tag: u32) -> c_int {
    if tag == ANY_TAG {
        p2p::any_tag()
    } else {
        tag as c_int
    }
}

fn mpi_source(peer: u32) -> c_int {
    if peer == ANY_PEER {
        crate::host::any_source()
    } else {
        peer as c_int
    }
}

impl Backend for GoalBackend {
    type Error = GoalError;

    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), GoalError> {
        match op {
            Op::Send { peer, tag, buf } => {
                let r = self.region(id, buf)?;
                self.reqs
                    .isend_region(self.comm.0, *peer, mpi_tag(*tag), r, id)?;
            }
            Op::Recv { peer, tag, buf } => {
                let r = self.region(id, buf)?;
                self.reqs
                    .irecv_region(self.comm.0, mpi_source(*peer), mpi_tag(*tag), r, id)?;
            }
            Op::Exec {
                func: Func::User(n),
                src,
                dst,
            } => {
                let s = self.region(id, src)?;
                let d = self.region(id, dst)?;
                let u = self
                    .users
                    .get(*n as usize)
                    .copied()
                    .flatten()
                    .ok_or(GoalError::Func(FuncError::User(*n)))?;
                let code = d.call_user(s, u.f, u.ctx);
                if code != 0 {
                    return Err(GoalError::User { id, func: *n, code });
                }
                done.push(id);
            }
            Op::Exec { func, src, dst } => {
                // A copy of the source: it may overlap the destination.
                let s = self.region(id, src)?.to_vec();
                let d = self.region(id, dst)?;
                d.with_mut(|d| func::apply(*func, &s, d))
                    .map_err(GoalError::Func)?;
                done.push(id);
            }
            Op::Calc { nanos } => {
                self.calcs
                    .push((id, Instant::now() + Duration::from_nanos(*nanos)));
            }
            Op::McastSend { buf } => {
                let r = self.region(id, buf)?;
                let (m, k) = self.mcast(id)?;
                m.start_send(id, k, r)?;
            }
            Op::McastRecv { root, buf } => {
                let r = self.region(id, buf)?;
                let (m, k) = self.mcast(id)?;
                m.start_recv(id, k, *root, r)?;
            }
        }
        Ok(())
    }

    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), GoalError> {
        let mcast_idle = match &self.mcast {
            Some(m) => m.is_idle(),
            None => true,
        };
        let only_p2p = self.calcs.is_empty() && mcast_idle;
        if self.blocking && only_p2p && !self.reqs.is_empty() {
            self.reqs.waitsome(done)?;
        } else {
            self.reqs.testsome(done)?;
        }
        if let Some(m) = &mut self.mcast {
            m.progress(done, self.blocking)?;
        }
        if !self.calcs.is_empty() {
            let now = Instant::now();
            self.calcs.retain(|&(id, until)| {
                let over = now >= until;
                if over {
                    done.push(id);
                }
                !over
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_keeps_this_ranks_schedule_and_sizes() {
        let text = b"num_ranks 2;\nrank #0 { l1: send 0,8 to 1 tag 3; }\n\
                     rank #1 { l1: recv 0,8 from 0 tag 3; }\n";
        let l = load(text, "goal", 1, 2).unwrap();
        assert_eq!(l.schedule.len(), 1);
        assert!(matches!(
            l.schedule.op(0),
            Op::Recv {
                peer: 0,
                tag: 3,
                ..
            }
        ));
        assert_eq!(l.needed, vec![8]);
    }

    #[test]
    fn load_reports_line_and_column() {
        let e = load(
            b"num_ranks 2;\nrank #0 { l1: sned 0,8 to 1; }\n",
            "goal",
            0,
            2,
        )
        .unwrap_err();
        assert!(e.starts_with("goal:2:"), "{e}");
    }

    #[test]
    fn load_rejects_a_group_size_mismatch() {
        let text = b"num_ranks 2;\nrank #0 { l1: send 0,8 to 1 tag 3; }\n\
                     rank #1 { l1: recv 0,8 from 0 tag 3; }\n";
        let e = load(text, "goal", 0, 4).unwrap_err();
        assert!(e.contains("2 ranks"), "{e}");
    }

    #[test]
    fn load_reads_binary_schedules_and_names_the_source() {
        let text = b"num_ranks 2;\nrank #0 { l1: send 0,8 to 1 tag 3; e: exec user 4 with 0,8 tmp+0,8; }\n\
                     rank #1 { l1: recv 0,8 from 0 tag 3; }\n";
        let p = goal::parse_any(text).unwrap().program;
        let bin = goal::binary::assemble(&p).unwrap();
        let l = load(&bin, "x.bin", 0, 2).unwrap();
        assert_eq!(l.schedule.len(), 2);
        assert_eq!(l.users, vec![4]);
        assert_eq!(l.buffers, vec!["buf".to_string(), "tmp".to_string()]);
        assert_eq!(l.needed, vec![8, 8]);
        let e = load(&bin[..bin.len() - 3], "x.bin", 0, 2).unwrap_err();
        assert!(e.starts_with("x.bin: error: byte "), "{e}");
        let e = load(b"rank #0 { sned 0,1 to 0; }", "f.goal", 0, 1).unwrap_err();
        assert!(e.starts_with("f.goal:1:"), "{e}");
    }
}
