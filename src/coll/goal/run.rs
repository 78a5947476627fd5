//! A run of a GOAL program and what its handle keeps between runs.
//!
//! A run (`Run`, or a point-to-point program in rounds, `RoundsRun`) is driven by its owner
//! (MPICAST_Goal_test / MPICAST_Goal_wait, through `Goal::drive`), by the process's one
//! progress step (`transport::progress`, where every started run is registered as `Pending`:
//! every wait of mpicast and every blocking MPI call mpicast polls moves it, so a schedule goes
//! on while its rank sits in any MPI call), and, when allowed, by the progress thread
//! (`transport::progress::thread`), which drives every run handed to it in the background. A
//! started run is therefore always shared (`RunCell::Shared`): a mutex around it serialises
//! its drivers, and the others hold weak references and skip a run that is locked or gone.
//! `RunCell::Own` remains for a run nobody else may see (none is made today: see
//! `RunCell::new`'s callers).
//!
//! A run may move to another thread (`Send`) because everything it holds is: the raw views of
//! the application's memory and the MPI handles are made `Send` in `host::p2p` (their
//! contracts), the schedule is borrowed from its handle, which unregisters the run and clears
//! it under its mutex before it frees the schedule or the memory (`Spare::retire`).

use crate::goal::binary::Stream;
use crate::host;
use crate::host::mapped::Mapped;
use crate::lock::{get_mut, lock};
use crate::sched::{ExecMemory, Execution, TopoSource, WindowedExecution};
use crate::transport::goal::{BackendMemory, GoalBackend, GoalError};
use crate::transport::progress::{thread, Pending, Stepped};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The live part of a run: dropped (outstanding MPI requests cancelled) when the run fails,
/// or emptied into its handle's `Spare` when the handle takes it back.
struct Live {
    exec: Exec,
    backend: GoalBackend,
}

/// How a run executes its schedule: all of it at once, or through a sliding window
/// (`MPICAST_GOAL_WINDOW`).
///
/// The windowed forms are boxed: a run moves a few times as it starts, and the common full
/// form is small.
pub enum Exec {
    Full(Execution<'static>),
    Windowed(Box<WindowedExecution<TopoSource<'static>>>),
    /// A binary schedule read from a mapped file as it runs; the mapping gives back what
    /// has been read (`Mapped::release_before`) every `RELEASE_STEP` bytes.
    Streamed(
        Box<WindowedExecution<Stream<'static>>>,
        &'static Mapped,
        usize,
    ),
}

/// Bytes of a streamed schedule read between two releases of its pages.
const RELEASE_STEP: usize = 4 << 20;

impl Exec {
    pub fn start(&mut self, b: &mut GoalBackend) -> Result<(), GoalError> {
        match self {
            Exec::Full(e) => e.start(b),
            Exec::Windowed(e) => e.start(b),
            Exec::Streamed(e, ..) => e.start(b),
        }
    }

    fn test(&mut self, b: &mut GoalBackend) -> Result<bool, GoalError> {
        match self {
            Exec::Full(e) => e.test(b),
            Exec::Windowed(e) => e.test(b),
            Exec::Streamed(e, map, released) => {
                let r = e.test(b);
                let at = e.source().file_offset();
                if at >= *released + RELEASE_STEP {
                    map.release_before(at);
                    *released = at;
                }
                r
            }
        }
    }

    fn wait(&mut self, b: &mut GoalBackend) -> Result<(), GoalError> {
        match self {
            Exec::Full(e) => e.wait(b),
            Exec::Windowed(e) => e.wait(b),
            Exec::Streamed(..) => {
                while !self.test(b)? {}
                Ok(())
            }
        }
    }

    fn completed(&self) -> usize {
        match self {
            Exec::Full(e) => e.completed(),
            Exec::Windowed(e) => e.completed(),
            Exec::Streamed(e, ..) => e.completed(),
        }
    }

    /// Why a windowed run stopped early (a streamed file that is not a valid schedule).
    fn fault(&self) -> Option<String> {
        match self {
            Exec::Full(_) => None,
            Exec::Windowed(e) => e.fault().map(str::to_string),
            Exec::Streamed(e, ..) => e.fault().map(str::to_string),
        }
    }
}

/// One run of a GOAL program.
pub struct Run {
    /// The run; once it completed (`outcome` is `Ok`), kept until its handle takes its
    /// memory back (`Spare::retire`).
    live: Option<Live>,
    outcome: Option<Result<(), GoalError>>,
}

/// Where a handle keeps its active run. Without the progress thread the handle is the run's
/// only user and holds it outright (`Own`: no lock, no reference count, so a start and a
/// wait cost no atomic instruction); with it, the run is shared behind a mutex (`Shared`).
pub enum RunCell {
    Own(Box<Run>),
    Shared(Arc<Mutex<Run>>),
}

/// A run borrowed from its cell for one step: directly, or under the shared run's lock.
pub enum RunRef<'a> {
    Own(&'a mut Run),
    Shared(MutexGuard<'a, Run>),
}

impl std::ops::Deref for RunRef<'_> {
    type Target = Run;
    fn deref(&self) -> &Run {
        match self {
            RunRef::Own(r) => r,
            RunRef::Shared(g) => g,
        }
    }
}

impl std::ops::DerefMut for RunRef<'_> {
    fn deref_mut(&mut self) -> &mut Run {
        match self {
            RunRef::Own(r) => r,
            RunRef::Shared(g) => g,
        }
    }
}

impl RunCell {
    /// A run in the spare's cell when it has one of the kind wanted (`shared`: for the
    /// progress thread, `threads_wanted`), else in a new one.
    pub fn new(exec: Exec, backend: GoalBackend, spare: &mut Spare, shared: bool) -> Self {
        let live = Some(Live { exec, backend });
        if let Some(mut cell) = spare.cell.take() {
            if matches!(cell, RunCell::Shared(_)) == shared {
                if let Some(r) = cell.unshared() {
                    r.live = live;
                    r.outcome = None;
                    return cell;
                }
            }
        }
        let run = Run {
            live,
            outcome: None,
        };
        if shared {
            RunCell::Shared(Arc::new(Mutex::new(run)))
        } else {
            RunCell::Own(Box::new(run))
        }
    }

    /// The run, locked when shared (a poisoned lock is taken over: a panic was caught at the
    /// C boundary and the run is abandoned by its handle).
    pub fn lock(&mut self) -> RunRef<'_> {
        match self {
            RunCell::Own(r) => RunRef::Own(r),
            RunCell::Shared(s) => RunRef::Shared(lock(s)),
        }
    }

    /// The run when nobody else holds it (always, when owned; a shared one while the progress
    /// thread holds no reference to it).
    fn unshared(&mut self) -> Option<&mut Run> {
        match self {
            RunCell::Own(r) => Some(r),
            RunCell::Shared(s) => Arc::get_mut(s).map(get_mut),
        }
    }
}

/// What the runs of one handle leave for its next run: their vectors, and their cell once
/// nobody else holds it, so that starting a run again allocates nothing. A run that
/// completed (nothing outstanding, no multicast, executed whole) stays in the cell as it is,
/// `parked`, and the next start of the same program with the same buffers and functions
/// only resets its counters (`restart`): the handle calls `unpark` before it changes any of
/// those.
#[derive(Default)]
pub struct Spare {
    pub exec: ExecMemory,
    pub backend: BackendMemory,
    cell: Option<RunCell>,
    parked: bool,
}

impl Spare {
    /// Takes `run` back from its handle: parked if it can run again as it is, else ended
    /// where it stands (outstanding requests cancelled: nothing of it is used afterwards)
    /// with its memory kept.
    pub fn retire(&mut self, mut run: RunCell) {
        // A run was started, so nothing is parked (`restart` took it, or the long way ran).
        debug_assert!(!self.parked);
        // The progress thread's weak reference, while it has one, keeps a shared cell its own.
        if let Some(r) = run.unshared() {
            let whole = r.outcome.is_none()
                && r.live.as_ref().is_some_and(|l| match &l.exec {
                    Exec::Full(e) => e.is_done() && l.backend.reusable(),
                    _ => false,
                });
            if whole {
                self.cell = Some(run);
                self.parked = true;
                return;
            }
        }
        self.end(run);
    }

    /// Ends `run` where it stands and keeps its memory (and its cell, when unshared).
    fn end(&mut self, mut run: RunCell) {
        let live = run.lock().live.take();
        if let Some(Live { exec, backend }) = live {
            self.backend = backend.into_memory();
            if let Exec::Full(e) = exec {
                self.exec = e.into_memory();
            }
        }
        if run.unshared().is_some() {
            self.cell = Some(run);
        }
    }

    /// Ends a parked run, keeping its memory: the program, its buffers or its functions are
    /// about to change (or the handle to go).
    pub fn unpark(&mut self) {
        if std::mem::take(&mut self.parked) {
            if let Some(cell) = self.cell.take() {
                self.end(cell);
            }
        }
    }

    /// Starts the parked run again, if there is one: its counters reset, its actions
    /// started. None when nothing is parked (start a run the long way). On an error the
    /// run is ended (its memory kept) and the error returned.
    pub fn restart(&mut self) -> Option<Result<RunCell, GoalError>> {
        if !std::mem::take(&mut self.parked) {
            return None;
        }
        let mut cell = self.cell.take()?;
        // Parked only while unshared and whole (`retire`); otherwise the long way.
        let Some(Run {
            live:
                Some(Live {
                    exec: Exec::Full(e),
                    backend,
                }),
            outcome,
        }) = cell.unshared()
        else {
            self.end(cell);
            return None;
        };
        *outcome = None;
        e.reset();
        match e.start(backend) {
            Ok(()) => Some(Ok(cell)),
            Err(err) => {
                self.end(cell);
                Some(Err(err))
            }
        }
    }
}

impl Run {
    /// Drives the run one step (`block`: to completion). True once it has an outcome.
    pub fn step(&mut self, block: bool) -> bool {
        if self.outcome.is_some() {
            return true;
        }
        let Some(l) = self.live.as_mut() else {
            return true;
        };
        let r = if block {
            l.exec.wait(&mut l.backend).map(|()| true)
        } else {
            l.exec.test(&mut l.backend)
        };
        match r {
            Ok(false) => false,
            Ok(true) => match l.exec.fault() {
                Some(f) => {
                    self.live = None;
                    self.outcome = Some(Err(GoalError::Schedule(f)));
                    true
                }
                None => {
                    self.outcome = Some(Ok(()));
                    true
                }
            },
            Err(e) => {
                self.live = None;
                self.outcome = Some(Err(e));
                true
            }
        }
    }

    /// See `GoalBackend::set_blocking`.
    pub fn set_blocking(&mut self, on: bool) {
        if let Some(l) = self.live.as_mut() {
            l.backend.set_blocking(on);
        }
    }

    /// Actions completed so far (0 once the run failed).
    pub fn completed(&self) -> usize {
        self.live.as_ref().map_or(0, |l| l.exec.completed())
    }

    /// The outcome, once (None while the run goes on).
    pub fn take_outcome(&mut self) -> Option<Result<(), GoalError>> {
        self.outcome.take()
    }
}

impl Pending for Mutex<Run> {
    /// The process's progress step on a started run: one step unless its owner (or another
    /// driver) holds it right now.
    fn try_step(&self) -> Stepped {
        let Ok(mut r) = self.try_lock() else {
            return Stepped::default();
        };
        let before = r.completed();
        let over = r.step(false);
        Stepped {
            over,
            moved: r.completed() != before,
        }
    }

    /// Held by someone (unknown), or still live: not yet handed back to its handle.
    fn live(&self) -> bool {
        self.try_lock().map_or(true, |g| g.live.is_some())
    }
}

/// A point-to-point program run in rounds (`host::p2p::Rounds`), shared between its handle
/// and the progress step as `Run` is: an error met by the step is kept for the handle.
pub struct RoundsRun {
    pub rounds: host::p2p::Rounds,
    pub failed: Option<host::MpiError>,
}

impl RoundsRun {
    pub fn new(rounds: host::p2p::Rounds) -> Self {
        RoundsRun {
            rounds,
            failed: None,
        }
    }

    /// Not yet complete (and not failed).
    pub fn is_active(&self) -> bool {
        self.failed.is_none() && self.rounds.is_active()
    }
}

impl Pending for Mutex<RoundsRun> {
    fn try_step(&self) -> Stepped {
        let Ok(mut r) = self.try_lock() else {
            return Stepped::default();
        };
        if !r.is_active() {
            return Stepped {
                over: true,
                moved: false,
            };
        }
        let over = match r.rounds.test() {
            Ok(done) => done,
            Err(e) => {
                r.failed = Some(e);
                true
            }
        };
        Stepped { over, moved: over }
    }
}

/// Registers a started run with the process's progress step (`transport::progress::add_run`):
/// its id, for `unregister`.
pub fn register_pending<T: Pending + 'static>(run: &Arc<T>) -> u64 {
    let w: Weak<T> = Arc::downgrade(run);
    crate::transport::progress::add_run(w)
}

/// The run `id` of `register_pending` ended, or its handle takes it back.
pub fn unregister(id: u64) {
    crate::transport::progress::remove_run(id);
}

/// Hands a shared `run` to the progress thread (`thread::register`, which starts it if
/// needed) when `thread::threads_wanted`. Returns whether it did; otherwise the run progresses
/// only in test/wait and the process's progress step. An owned run is never handed over.
pub fn register(run: &RunCell) -> bool {
    let RunCell::Shared(run) = run else {
        return false;
    };
    let w: Weak<Mutex<Run>> = Arc::downgrade(run);
    thread::register(w)
}
