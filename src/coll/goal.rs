//! GOAL programs run over MPI, below the C boundary: a handle's program (loaded, or built
//! action by action and compiled), the memory and functions bound to it, and its runs (start,
//! progress, completion). `ffi::ext::goal` is the C side of the `MPICAST_Goal_*` calls: it
//! converts their arguments (pointers into `Region`s), lends a run the handle's own memory
//! (`Lent`, the one promise that needs `unsafe`), and maps a `GoalFault` to a status
//! (`ffi::error::goal_fault_status`).
//!
//! A started run is a `run::Run` (or, for a point-to-point program in rounds without the
//! progress thread, a `run::RoundsRun`), registered with the process's progress step and,
//! when it runs, the progress thread (`transport::progress`), so that it goes on while its
//! rank sits in any MPI call. What a run leaves for the next start of the same program is
//! kept in `run::Spare`.

pub mod run;

pub use run::{register, register_pending, unregister, Exec, RoundsRun, RunCell, Spare};

use crate::host::mapped::Mapped;
use crate::host::p2p::{Region, UserFunc};
use crate::host::{self, MPI_Comm, MpiError};
use crate::sched::{
    BufRef, Builder, Execution, Func, Op, Schedule, TopoSource, WindowedExecution, ANY_PEER,
    ANY_TAG,
};
use crate::session::{CommState, Session};
use crate::transport::goal::{self as core, BackendMemory, GoalBackend, GoalError, Loaded};
use crate::transport::goal_mcast::{self, McastRun};
use std::fmt;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Why a call on a GOAL handle failed; its message is what `MPICAST_Goal_error` gives.
#[derive(Debug)]
pub enum GoalFault {
    /// The program, or an argument that builds one, is not valid.
    Invalid(String),
    /// Not now: a run is active, no program is loaded, a buffer or function it uses is
    /// missing, the schedule being built is full or refers to actions it lacks.
    State(String),
    /// The host MPI failed while mpicast set up the communicator's multicast.
    Setup(String),
    /// A run could not start.
    Start(GoalError),
    /// A run failed.
    Run(GoalError),
}

impl fmt::Display for GoalFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoalFault::Invalid(m) | GoalFault::State(m) | GoalFault::Setup(m) => f.write_str(m),
            GoalFault::Start(e) => write!(f, "goal: start failed: {e}"),
            GoalFault::Run(e) => write!(f, "goal: run failed: {e}"),
        }
    }
}

type Result<T> = std::result::Result<T, GoalFault>;

fn state<T>(m: impl Into<String>) -> Result<T> {
    Err(GoalFault::State(m.into()))
}

fn invalid<T>(m: impl Into<String>) -> Result<T> {
    Err(GoalFault::Invalid(m.into()))
}

/// The handle's own memory a run borrows, as raw parts (`Goal::start` hands them to the C
/// side, which makes them a `Lent`): the schedule (boxed in the handle), the mapped file of a
/// streamed schedule (boxed too), and the scratch area (a vector of the handle's). None of
/// them is replaced, resized or dropped while a run exists: loading, compiling and binding are
/// refused during a run, and the run is ended first when the handle drops.
pub struct RunParts {
    pub schedule: *const Schedule,
    pub stream: Option<*const Mapped>,
    pub scratch: *mut u8,
    pub scratch_len: usize,
}

/// `RunParts` as the run holds them: borrowed for as long as the run exists.
pub struct Lent {
    pub schedule: &'static Schedule,
    pub stream: Option<&'static Mapped>,
    pub scratch: Region,
}

/// A GOAL program bound to a communicator (a private duplicate of the user's), and its runs.
/// One handle is used by one thread at a time.
pub struct Goal {
    // Declared first so that it drops before the program whose schedule it borrows (and
    // `abandon` ends it first in any case).
    run: Option<RunCell>,
    loaded: Option<Box<Loaded>>,
    comm: MPI_Comm,
    rank: u32,
    size: u32,
    bound: Vec<(String, Region)>,
    scratch: Vec<u8>,
    /// Registered user functions; `exec user N` calls `users[N]`.
    users: Vec<UserFunc>,
    /// The schedule being built with MPICAST_Goal_send/_recv/_exec/_requ.
    building: Option<Building>,
    /// mpicast's state of `comm` (its multicast channel), made at the first start of a
    /// program with multicast actions.
    mcast: Option<Arc<Mutex<CommState>>>,
    /// The active run is shared with the progress thread.
    threaded: bool,
    /// The active run's registration with the process's progress step
    /// (`run::register_pending`), until the handle collects or abandons it.
    pending: Option<u64>,
    /// The active run is the program in rounds (`rounds`), not `run`.
    in_rounds: bool,
    /// `comm` among the communicators that cover (`host::progress::add_cover`): the blocking
    /// collectives within it poll on every member, so that a started run goes on through them.
    cover: Option<u64>,
    /// A binary schedule streamed from its mapped file (`MPICAST_GOAL_WINDOW` and
    /// `load_file`), with where this rank's checked section starts; `loaded` then carries its
    /// buffers and an empty schedule.
    stream: Option<(Box<Mapped>, crate::goal::binary::StreamStart)>,
    /// The loaded program bound to its memory as a run in rounds (`host::p2p::Rounds`),
    /// made at the first start of a layered point-to-point program without the progress
    /// thread and run again by later starts until the program, a binding or a function
    /// changes (`unpark`). Its runs do not use `run`; shared with the progress step as `run`.
    rounds: Option<Arc<Mutex<RoundsRun>>>,
    /// The memory of the last run, for the next one.
    spare: Spare,
}

/// A schedule under construction through the builder calls: each action's memory becomes a
/// buffer of its own, named `_builder<k>` and bound at compile time.
#[derive(Default)]
struct Building {
    b: Builder,
    regions: Vec<Region>,
}

impl Building {
    fn buf(&mut self, r: Region) -> std::result::Result<BufRef, String> {
        let slot = u16::try_from(self.regions.len() + 1)
            .ok()
            .filter(|&s| s < crate::sched::SCRATCH_SLOT)
            .ok_or("goal: error: too many builder buffers")?;
        self.regions.push(r);
        Ok(BufRef {
            slot,
            offset: 0,
            len: r.len(),
        })
    }
}

/// What a start made ready before the run takes its memory: the backend's vectors with
/// every slot and function bound, and the run's multicasts.
struct Prepared {
    mem: BackendMemory,
    mcast: Option<(McastRun, Vec<u32>)>,
}

impl Goal {
    /// A handle on a private duplicate of `comm` (collective over `comm`, like MPI_Comm_dup).
    pub fn new(comm: MPI_Comm) -> std::result::Result<Goal, MpiError> {
        let dup = host::comm::dup(comm)?;
        let (rank, size) = match (host::comm::rank(dup), host::comm::size(dup)) {
            (Ok(rank), Ok(size)) => (rank, size),
            (Err(e), _) | (_, Err(e)) => {
                let _ = host::comm::free(dup);
                return Err(e);
            }
        };
        Ok(Goal {
            run: None,
            loaded: None,
            comm: dup,
            rank,
            size,
            bound: Vec::new(),
            scratch: Vec::new(),
            users: Vec::new(),
            building: None,
            mcast: None,
            threaded: false,
            pending: None,
            in_rounds: false,
            cover: host::progress::add_cover(dup).ok(),
            stream: None,
            rounds: None,
            spare: Spare::default(),
        })
    }

    /// A run is active (started and not yet completed or abandoned).
    pub fn busy(&self) -> bool {
        self.run.is_some() || self.in_rounds
    }

    /// Refuses a change of the program or its memory while a run is active.
    fn idle(&self) -> Result<()> {
        if self.busy() {
            return state("goal: error: a run is active");
        }
        Ok(())
    }

    /// Drops the program in rounds, its outstanding requests cancelled now, under its lock:
    /// a progress step of another thread may still hold a reference to it for a moment.
    fn end_rounds(&mut self) {
        if let Some(rr) = self.rounds.take() {
            let mut g = crate::lock::lock(&rr);
            g.rounds = host::p2p::Rounds::new(self.comm);
        }
    }

    /// The active run leaves the process's progress step (its handle collects or abandons it).
    fn unregister(&mut self) {
        if let Some(id) = self.pending.take() {
            run::unregister(id);
        }
        self.in_rounds = false;
    }

    /// The program, a buffer binding or a function is about to change (or the handle to
    /// go): what a run kept for the next start goes.
    fn unpark(&mut self) {
        self.spare.unpark();
        self.unregister();
        self.end_rounds();
    }

    /// Installs a loaded (or compiled) program, or gives why there is none.
    fn install(&mut self, l: std::result::Result<Loaded, String>) -> Result<()> {
        let l = l.map_err(GoalFault::Invalid)?;
        self.unpark();
        self.loaded = Some(Box::new(l));
        self.stream = None;
        Ok(())
    }

    /// Parses `bytes` (GOAL text of either dialect, or a binary schedule), validates the
    /// whole program and keeps this rank's schedule; `name` names it in errors.
    pub fn load(&mut self, bytes: &[u8], name: &str) -> Result<()> {
        self.idle()?;
        self.install(core::load(bytes, name, self.rank, self.size))
    }

    /// `load` from the file at `path`; with a sliding window configured, a binary schedule is
    /// streamed from a mapping of the file instead (`load_stream`).
    pub fn load_file(&mut self, path: &str) -> Result<()> {
        self.idle()?;
        if host::init::goal_window().0 > 0 {
            // A binary file is streamed; text is loaded whole below.
            if let Some(r) = self.load_stream(path) {
                return r;
            }
        }
        match std::fs::read(path) {
            Ok(bytes) => self.install(core::load(&bytes, path, self.rank, self.size)),
            Err(e) => invalid(format!("{path}: error: cannot read: {e}")),
        }
    }

    /// With a sliding window configured: maps `path` and, if it is a binary schedule, keeps
    /// it as a stream (this rank's section checked in one pass, nothing held per action; the
    /// cross-rank checks of a whole load are skipped: `mpicast goal check` does them).
    /// None when the file is text (loaded whole instead).
    fn load_stream(&mut self, path: &str) -> Option<Result<()>> {
        let map = match Mapped::open(path) {
            Ok(m) => m,
            Err(e) => return Some(invalid(format!("{path}: error: cannot read: {e}"))),
        };
        if !map.bytes().starts_with(&crate::goal::binary::MAGIC) {
            return None;
        }
        let release = &mut |at: usize| map.release_before(at);
        let info = match crate::goal::binary::stream_rank_releasing(map.bytes(), self.rank, release)
        {
            Ok((info, _)) => info,
            Err(e) => return Some(invalid(format!("{path}: error: {e}"))),
        };
        if !info.local_view && info.num_ranks != self.size {
            let m = format!(
                "{path}: error: the program describes {} ranks, the communicator has {}",
                info.num_ranks, self.size
            );
            return Some(invalid(m));
        }
        if info.has_mcast {
            let m = format!(
                "{path}: error: multicast actions are not streamed (MPICAST_GOAL_WINDOW): \
                 load the program whole, without the window"
            );
            return Some(invalid(m));
        }
        let start = info.start;
        let loaded = Loaded {
            schedule: Builder::new().build().expect("an empty schedule"),
            buffers: info.buffers,
            needed: info.needed,
            scratch_len: info.scratch_len,
            users: info.users,
            mcast: Default::default(),
            // Streamed runs go through the window.
            layers: None,
        };
        let r = self.install(Ok(loaded));
        self.stream = Some((Box::new(map), start));
        Some(r)
    }

    /// Registers `f` as the next user function; returns its number.
    pub fn reg_func(&mut self, f: UserFunc) -> Result<usize> {
        if self.users.len() > u16::MAX as usize {
            return state("goal: error: 65536 user functions are registered");
        }
        self.unpark();
        self.users.push(f);
        Ok(self.users.len() - 1)
    }

    /// Binds the buffer named `name` to `r`, replacing an earlier binding of that name.
    pub fn bind(&mut self, name: String, r: Region) -> Result<()> {
        self.idle()?;
        self.unpark();
        self.bound.retain(|(n, _)| *n != name);
        self.bound.push((name, r));
        Ok(())
    }

    /// A peer rank of the communicator (`any`: MPI_ANY_SOURCE allowed).
    fn peer(&self, r: c_int, any: bool) -> Option<u32> {
        if any && r == host::any_source() {
            Some(ANY_PEER)
        } else {
            u32::try_from(r).ok().filter(|&r| r < self.size)
        }
    }

    /// Adds an action to the schedule being built; returns its number.
    fn add(
        &mut self,
        op: impl FnOnce(&mut Building) -> std::result::Result<Op, String>,
    ) -> Result<c_int> {
        let bd = self.building.get_or_insert_with(Building::default);
        if bd.b.len() >= c_int::MAX as usize {
            return state("goal: error: the schedule being built is full");
        }
        let op = op(bd).map_err(GoalFault::State)?;
        Ok(bd.b.add(op) as c_int)
    }

    /// Adds a send of `buf` to rank `dest` with `tag`.
    pub fn send(&mut self, buf: Region, dest: c_int, tag: c_int) -> Result<c_int> {
        let Some(peer) = self.peer(dest, false) else {
            return invalid(format!("goal: error: send to rank {dest}: no such rank"));
        };
        let Some(tag) = tag_of(tag, false) else {
            return invalid(format!("goal: error: send tag {tag} is not 0..32767"));
        };
        self.add(|bd| {
            Ok(Op::Send {
                peer,
                tag,
                buf: bd.buf(buf)?,
            })
        })
    }

    /// Adds a receive into `buf` from rank `source` (or MPI_ANY_SOURCE) with `tag` (or
    /// MPI_ANY_TAG).
    pub fn recv(&mut self, buf: Region, source: c_int, tag: c_int) -> Result<c_int> {
        let Some(peer) = self.peer(source, true) else {
            return invalid(format!(
                "goal: error: receive from rank {source}: no such rank"
            ));
        };
        let Some(tag) = tag_of(tag, true) else {
            return invalid(format!(
                "goal: error: receive tag {tag} is not 0..32767 or MPI_ANY_TAG"
            ));
        };
        self.add(|bd| {
            Ok(Op::Recv {
                peer,
                tag,
                buf: bd.buf(buf)?,
            })
        })
    }

    /// Adds a multicast of `buf` to every other rank.
    pub fn mcast_send(&mut self, buf: Region) -> Result<c_int> {
        self.add(|bd| Ok(Op::McastSend { buf: bd.buf(buf)? }))
    }

    /// Adds the receive of a multicast from rank `root` (not this rank) into `buf`.
    pub fn mcast_recv(&mut self, buf: Region, root: c_int) -> Result<c_int> {
        let Some(root) = self.peer(root, false).filter(|&r| r != self.rank) else {
            return invalid(format!(
                "goal: error: multicast receive from rank {root}: not another rank of the communicator"
            ));
        };
        self.add(|bd| {
            Ok(Op::McastRecv {
                root,
                buf: bd.buf(buf)?,
            })
        })
    }

    /// Adds a local computation `dst = src (function) dst` by the function named `name`.
    pub fn exec(&mut self, name: &str, src: Region, dst: Region) -> Result<c_int> {
        let Some(func) = Func::from_name(name) else {
            return invalid(format!(
                "goal: error: `{name}` is not a function: expected e.g. sumInt32 \
                 (max min sum prod land lor lxor band bor bxor copy with Int, UInt or \
                 Float and 8, 16, 32 or 64) or `user N`"
            ));
        };
        if let Func::Predef(p) = func {
            if let Err(e) = crate::sched::func::check_lengths(p, src.len(), dst.len()) {
                return invalid(format!("goal: error: exec {name}: {e}"));
            }
        }
        self.add(|bd| {
            Ok(Op::Exec {
                func,
                src: bd.buf(src)?,
                dst: bd.buf(dst)?,
            })
        })
    }

    /// Makes action `action` of the schedule being built wait for action `required`.
    pub fn requ(&mut self, action: c_int, required: c_int) -> Result<()> {
        let n = self.building.as_ref().map_or(0, |b| b.b.len());
        let ok = |a: c_int| a >= 0 && (a as usize) < n;
        if !ok(action) || !ok(required) {
            return invalid(format!(
                "goal: error: requ {action} -> {required}: the schedule being built has \
                 actions 0..{n}"
            ));
        }
        if let Some(b) = self.building.as_mut() {
            b.b.requ(required as u32, action as u32);
        }
        Ok(())
    }

    /// Ends the schedule being built and makes it the handle's program, each action's memory
    /// bound as a buffer of its own.
    pub fn compile(&mut self) -> Result<()> {
        self.idle()?;
        let Building { b, regions } = self.building.take().unwrap_or_default();
        let schedule: Schedule = match b.build() {
            Ok(s) => s,
            Err(e) => return invalid(format!("goal: error: {e}")),
        };
        let mut buffers = vec![crate::goal::DEFAULT_BUFFER.to_string()];
        let mut needed = vec![0usize];
        self.unpark();
        self.bound.retain(|(n, _)| !n.starts_with("_builder"));
        for (k, r) in regions.into_iter().enumerate() {
            let name = format!("_builder{}", k + 1);
            needed.push(r.len());
            self.bound.push((name.clone(), r));
            buffers.push(name);
        }
        let mut users: Vec<u16> = schedule
            .actions()
            .filter_map(|(_, op)| match op {
                Op::Exec {
                    func: Func::User(n),
                    ..
                } => Some(*n),
                _ => None,
            })
            .collect();
        users.sort_unstable();
        users.dedup();
        let mcast = goal_mcast::number(&schedule, self.rank, self.size);
        self.install(Ok(Loaded {
            layers: crate::sched::Layers::of(&schedule),
            schedule,
            buffers,
            needed,
            scratch_len: 0,
            users,
            mcast,
        }))
    }

    /// Starts a run of the loaded program: again the one in rounds or the parked one when the
    /// handle kept it, else a new one (`prepare`, then `launch` over the memory `lend` makes
    /// of the handle's `RunParts`). `session` is mpicast's session, asked for only at the
    /// first start of a program with multicast actions (collective then).
    pub fn start(
        &mut self,
        session: fn() -> &'static Session,
        lend: impl FnOnce(RunParts) -> Lent,
    ) -> Result<()> {
        if self.busy() {
            return state("goal: error: a run is already active");
        }
        if self.loaded.is_none() {
            return state("goal: error: no program loaded");
        }
        if let Some(r) = self.restart() {
            return r;
        }
        let prepared = self.prepare(session)?;
        let lent = lend(self.parts());
        self.launch(prepared, lent)
    }

    /// Starts again what the handle kept of its last run: the program in rounds, or the last
    /// run itself, parked with the same buffers and functions. None when it kept neither.
    fn restart(&mut self) -> Option<Result<()>> {
        if let Some(rr) = self.rounds.as_ref() {
            let started = {
                let mut r = crate::lock::lock(rr);
                r.failed = None;
                r.rounds.start()
            };
            return Some(match started {
                Ok(()) => {
                    self.begin_rounds();
                    Ok(())
                }
                Err(e) => {
                    self.end_rounds();
                    Err(GoalFault::Start(GoalError::Mpi(e)))
                }
            });
        }
        let r = self.spare.restart()?;
        Some(match r {
            Ok(cell) => {
                self.begin(cell);
                Ok(())
            }
            Err(e) => Err(GoalFault::Start(e)),
        })
    }

    /// Before a new run: the communicator's multicast channel if the program multicasts
    /// (made collectively, at the first such start, while every rank is here), every slot
    /// bound to memory large enough, every user function it calls registered, and the scratch
    /// area large enough.
    fn prepare(&mut self, session: fn() -> &'static Session) -> Result<Prepared> {
        let has_mcast = self.loaded.as_deref().is_some_and(|l| !l.mcast.is_empty());
        let channel = if has_mcast {
            Some(self.mcast_state(session)?)
        } else {
            None
        };
        let Some(l) = self.loaded.as_deref() else {
            return state("goal: error: no program loaded");
        };
        let mut mem = std::mem::take(&mut self.spare.backend);
        bind_slots(l, &self.bound, &mut mem.slots)?;
        if let Some(n) = l.users.iter().find(|&&n| n as usize >= self.users.len()) {
            return state(format!(
                "goal: error: the program calls user function {n}, but {} are registered (MPICAST_Goal_reg_func)",
                self.users.len()
            ));
        }
        mem.users.extend(self.users.iter().copied().map(Some));
        let mcast = channel.map(|s| (McastRun::begin(s, &l.mcast), l.mcast.of.clone()));
        if self.scratch.len() < l.scratch_len {
            self.scratch.resize(l.scratch_len, 0);
        }
        Ok(Prepared { mem, mcast })
    }

    /// The handle's memory a new run borrows (see `RunParts`).
    fn parts(&mut self) -> RunParts {
        let empty: *const Schedule = std::ptr::null();
        RunParts {
            schedule: self.loaded.as_deref().map_or(empty, |l| &l.schedule),
            stream: self.stream.as_ref().map(|(m, _)| &**m as *const Mapped),
            scratch: self.scratch.as_mut_ptr(),
            scratch_len: self.scratch.len(),
        }
    }

    /// Starts a new run over `lent`: the program in rounds when it is point-to-point in
    /// layers and no progress thread drives it (one wait call per layer, no bookkeeping per
    /// action: `sched::Layers`), else the executor over the whole schedule, a sliding window
    /// of it, or a stream of it.
    fn launch(&mut self, p: Prepared, lent: Lent) -> Result<()> {
        let Prepared { mut mem, mcast } = p;
        let Some(l) = self.loaded.as_deref() else {
            return state("goal: error: no program loaded");
        };
        let (window, verbose) = host::init::goal_window();
        let in_rounds = self.stream.is_none()
            && (window == 0 || l.schedule.len() <= window)
            && !crate::transport::progress::thread::threads_wanted();
        if let Some(layers) = l.layers.as_ref().filter(|_| in_rounds) {
            let r = core::rounds(self.comm, &l.schedule, layers, &mem.slots, lent.scratch);
            mem.slots.clear();
            mem.users.clear();
            self.spare.backend = mem;
            let mut r = r.map_err(GoalFault::Start)?;
            if let Err(e) = r.start() {
                drop(r);
                return Err(GoalFault::Start(GoalError::Mpi(e)));
            }
            self.rounds = Some(Arc::new(Mutex::new(RoundsRun::new(r))));
            self.begin_rounds();
            return Ok(());
        }
        let mut backend = GoalBackend::with_memory(self.comm, mem, lent.scratch, mcast);
        let mut exec = self.execution(&lent, window, verbose);
        if let Err(e) = exec.start(&mut backend) {
            drop(exec);
            drop(backend);
            return Err(GoalFault::Start(e));
        }
        // Shared always: the process's progress step moves every started run.
        let cell = RunCell::new(exec, backend, &mut self.spare, true);
        self.begin(cell);
        Ok(())
    }

    /// How a new run executes its schedule: streamed from the mapped file, through a sliding
    /// window (`MPICAST_GOAL_WINDOW`, for a schedule longer than it), or whole.
    fn execution(&mut self, lent: &Lent, window: usize, verbose: u8) -> Exec {
        let sched = lent.schedule;
        if let (Some(map), Some((_, at))) = (lent.stream, &self.stream) {
            // Checked at load; the file must not change while the handle streams it.
            let stream = crate::goal::binary::resume(map.bytes(), *at);
            say_once(&STREAMED_SAID, verbose, || {
                format!(
                    "mpicast: rank {}: GOAL run of {} actions streamed from a mapped file through a sliding window of {window} (MPICAST_GOAL_WINDOW)",
                    self.rank,
                    stream.actions_left()
                )
            });
            Exec::Streamed(Box::new(WindowedExecution::new(stream, window)), map, 0)
        } else if window > 0 && sched.len() > window {
            say_once(&WINDOWED_SAID, verbose, || {
                format!(
                    "mpicast: rank {}: GOAL run of {} actions through a sliding window of {window} (MPICAST_GOAL_WINDOW)",
                    self.rank,
                    sched.len()
                )
            });
            Exec::Windowed(Box::new(WindowedExecution::new(
                TopoSource::new(sched),
                window,
            )))
        } else {
            Exec::Full(Execution::with_memory(
                sched,
                std::mem::take(&mut self.spare.exec),
            ))
        }
    }

    /// mpicast's state of the handle's communicator, made on first use (collective over it).
    fn mcast_state(&mut self, session: fn() -> &'static Session) -> Result<Arc<Mutex<CommState>>> {
        if let Some(s) = &self.mcast {
            return Ok(s.clone());
        }
        match session().comm_state(self.comm, "MPICAST_Goal_start") {
            Ok(s) => {
                self.mcast = Some(s.clone());
                Ok(s)
            }
            Err(e) => Err(GoalFault::Setup(format!(
                "goal: error: setting up multicast on the communicator: {e}"
            ))),
        }
    }

    /// A started run becomes the handle's active run.
    fn begin(&mut self, run: RunCell) {
        self.threaded = run::register(&run);
        if let RunCell::Shared(r) = &run {
            self.pending = Some(run::register_pending(r));
        }
        self.run = Some(run);
    }

    /// The program in rounds started: registered with the process's progress step as `begin`
    /// registers a run.
    fn begin_rounds(&mut self) {
        if let Some(rr) = &self.rounds {
            self.in_rounds = true;
            self.pending = Some(run::register_pending(rr));
        }
    }

    /// Ends an active run; outstanding requests are cancelled first. Under the run's lock
    /// when it is shared, so the progress thread never touches it afterwards.
    fn abandon(&mut self) {
        self.unregister();
        if let Some(r) = self.run.take() {
            self.spare.retire(r);
        }
    }

    /// Drives the active run (`block`: until done). Returns done; once done, the handle is
    /// ready for the next start.
    pub fn drive(&mut self, block: bool) -> Result<bool> {
        if self.in_rounds {
            return self.drive_rounds(block);
        }
        let outcome = match self.step_run(block) {
            Some(outcome) => outcome,
            None => return Ok(self.run.is_none()),
        };
        self.abandon();
        match outcome {
            None | Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(GoalFault::Run(e)),
        }
    }

    /// Steps the active run (`block`: until it has an outcome). Some(outcome) once it is over
    /// (None inside: no outcome kept), None while it goes on or when there is no run.
    fn step_run(&mut self, block: bool) -> Option<Option<std::result::Result<(), GoalError>>> {
        // Without the progress thread nobody else drives the run: waiting may block inside
        // the host MPI until a request completes, as a hand-written MPI_Waitall does.
        let wait_in_mpi = block && !self.threaded;
        loop {
            // Borrowed, not cloned: when the run ends, `abandon` finds its cell unshared and
            // keeps it for the next run.
            let run = self.run.as_mut()?;
            let mut r = run.lock();
            // Blocking with a shared run's lock held would stall the progress thread for
            // nothing: step, and let go between steps. Steps that complete actions follow
            // each other at once; only a step that completed nothing gives the core away.
            let before = r.completed();
            r.set_blocking(wait_in_mpi);
            let over = host::progress::driving(|| r.step(false));
            r.set_blocking(false);
            if over {
                return Some(r.take_outcome());
            }
            let moved = r.completed() != before;
            drop(r);
            if !moved {
                // Nothing of this run moved: the rest of the process's progress (other runs,
                // the forwarding engines) gets its step, as in every wait and test loop of
                // MPI's (a relay of someone else's multicast may be waiting on this rank).
                crate::transport::progress::poll_in_loop();
            }
            if !block {
                return None;
            }
            if !moved {
                std::thread::yield_now();
            }
        }
    }

    /// `drive` for the program in rounds.
    fn drive_rounds(&mut self, block: bool) -> Result<bool> {
        let Some(rr) = self.rounds.as_ref() else {
            self.unregister();
            return Ok(true);
        };
        // Under the lock: the progress step skips the run meanwhile (a wait polls it).
        let mut r = crate::lock::lock(rr);
        let moved = match r.failed.take() {
            Some(e) => Err(e),
            None if !r.rounds.is_active() => Ok(true),
            // Waits poll only for other work (`host::progress::driving`).
            None if block => host::progress::driving(|| r.rounds.wait().map(|()| true)),
            None => r.rounds.test(),
        };
        drop(r);
        match moved {
            Ok(false) => {
                // A test loop of the owner's keeps the rest of the process moving too
                // (MPI's progress rule): other runs and the forwarding engines.
                crate::transport::progress::poll_in_loop();
                Ok(false)
            }
            Ok(true) => {
                self.unregister();
                Ok(true)
            }
            Err(e) => {
                self.unregister();
                // Outstanding requests cancelled.
                self.end_rounds();
                Err(GoalFault::Run(GoalError::Mpi(e)))
            }
        }
    }
}

impl Drop for Goal {
    fn drop(&mut self) {
        self.abandon();
        self.unpark();
        if let Some(id) = self.cover.take() {
            host::progress::remove_forwarder(id);
        }
        if host::is_active() {
            let _ = host::comm::free(self.comm);
        }
    }
}

/// Fills `slots` with the memory bound to each buffer of `l` (None: unbound and unused).
fn bind_slots(
    l: &Loaded,
    bound: &[(String, Region)],
    slots: &mut Vec<Option<Region>>,
) -> Result<()> {
    for (name, &need) in l.buffers.iter().zip(&l.needed) {
        let r = bound.iter().find(|(n, _)| n == name).map(|&(_, r)| r);
        match r {
            None if need > 0 => {
                return state(format!(
                    "goal: error: buffer `{name}` ({need} bytes) is not bound"
                ));
            }
            Some(r) if r.len() < need => {
                return state(format!(
                    "goal: error: buffer `{name}` is bound to {} bytes, the program uses {need}",
                    r.len()
                ));
            }
            _ => slots.push(r),
        }
    }
    Ok(())
}

fn tag_of(tag: c_int, recv: bool) -> Option<u32> {
    if recv && tag == host::p2p::any_tag() {
        Some(ANY_TAG)
    } else {
        u32::try_from(tag).ok().filter(|&t| t <= core::MAX_TAG)
    }
}

static STREAMED_SAID: AtomicBool = AtomicBool::new(false);
static WINDOWED_SAID: AtomicBool = AtomicBool::new(false);

/// With `MPICAST_VERBOSE` >= 1, writes `line()` to stderr (`session::say`) the first time
/// `said` is asked.
fn say_once(said: &AtomicBool, verbose: u8, line: impl FnOnce() -> String) {
    if verbose >= 1 && !said.swap(true, Ordering::Relaxed) {
        crate::session::say(&line());
    }
}
