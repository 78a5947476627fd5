//! The one progress of the process: `poll` moves every forwarding engine (the multicasts of
//! `MPICAST_Imcast` and the dynamic broadcasts of `MPICAST_Dbcast` routed through this rank)
//! one step, without blocking. Every wait of mpicast calls it: the multicast collectives'
//! loops (scouts, releases, repairs, the eager root's settling), communicator setup and
//! teardown, the extension calls' waits, and, through `host::progress`, every blocking host
//! call mpicast turns into a polled one while an engine exists. The progress thread
//! (`MPICAST_PROGRESS=thread`) runs the same step.
//!
//! The same step moves every started GOAL run registered here (`add_run`, a `Pending`), so
//! that a schedule goes on while its rank sits in any MPI call: a registered run makes the
//! process's work pending (`host::progress::add_work`), and the waits poll.
//!
//! Engines and runs are skipped, not waited for, when another thread (or this one, further up
//! the stack: the run's owner inside MPICAST_Goal_test/_wait) holds them, and a step never runs
//! inside another step of the same thread (so a run whose step calls into MPI is never stepped
//! again from inside that call).

pub mod thread;

use crate::host;
use crate::lock::lock;
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, Weak};

type Engines = Vec<std::sync::Weak<std::sync::Mutex<super::forward::Engine>>>;

thread_local! {
    /// This thread is inside `poll` (a wait reached from an engine's own step).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The engines as this thread last saw them, and the forwarders' epoch then: a step
    /// takes no lock of the registry and allocates nothing while no engine comes or goes.
    static SEEN: RefCell<(u64, Engines)> = const { RefCell::new((0, Vec::new())) };
}

/// Work that the progress step moves along when nobody else is moving it: a started GOAL run.
pub trait Pending: Send + Sync {
    /// One step without blocking, unless another thread (or this one, further up the stack)
    /// holds the work: then nothing. Returns whether the work is over (nothing more to do,
    /// its outcome kept for its owner), and whether it moved.
    fn try_step(&self) -> Stepped;

    /// Whether the work may still need a driver that found it over once: its state is not
    /// yet handed back to its owner (true when another thread holds it, so unknown). The
    /// progress thread keeps such work in its list (`thread`).
    fn live(&self) -> bool {
        true
    }
}

/// What a `Pending::try_step` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stepped {
    /// Nothing is left to do (the owner collects the outcome).
    pub over: bool,
    /// Some action completed.
    pub moved: bool,
}

/// The registered runs (`add_run`): their ids and weak references.
static RUNS: Mutex<Vec<(u64, Weak<dyn Pending>)>> = Mutex::new(Vec::new());
/// Ids of `add_run` (never 0).
static NEXT_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
/// How many runs `RUNS` holds (a step with none takes no lock).
static RUN_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// The runs a step of this thread moves, taken from `RUNS` for the step (kept between
    /// steps, empty, so that a step allocates nothing).
    static STEPPING: RefCell<Vec<(u64, Arc<dyn Pending>)>> = const { RefCell::new(Vec::new()) };
}

/// Registers a started run: from now on every progress step of the process (every wait of
/// mpicast, every blocking call it polls) moves it, until it is over or `remove_run(id)`.
/// Returns its id.
pub fn add_run(run: Weak<dyn Pending>) -> u64 {
    install();
    let id = NEXT_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    lock(&RUNS).push((id, run));
    RUN_COUNT.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    host::progress::add_work();
    id
}

/// Unregisters run `id` (nothing if a step already found it over).
pub fn remove_run(id: u64) {
    let mut all = lock(&RUNS);
    let before = all.len();
    all.retain(|(i, _)| *i != id);
    if all.len() != before {
        RUN_COUNT.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        host::progress::remove_work();
    }
}

/// Runs registered now (for tests and diagnostics).
pub fn runs() -> usize {
    RUN_COUNT.load(std::sync::atomic::Ordering::Acquire)
}

/// One step of every registered run that no thread holds; a run found over (or gone) is
/// unregistered. Called inside a step (`with_engines`), so never re-entered on this thread.
fn step_runs() -> bool {
    if RUN_COUNT.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return false;
    }
    STEPPING.with(|s| {
        let Ok(mut mine) = s.try_borrow_mut() else {
            return false;
        };
        let mut gone = false;
        {
            let all = lock(&RUNS);
            for (id, w) in all.iter() {
                match w.upgrade() {
                    Some(r) => mine.push((*id, r)),
                    None => gone = true,
                }
            }
        }
        let mut moved = false;
        let mut over: Vec<u64> = Vec::new();
        for (id, r) in mine.iter() {
            let st = r.try_step();
            moved |= st.moved || st.over;
            if st.over {
                over.push(*id);
            }
        }
        // Our strong references go before the owner may want its run back unshared.
        mine.clear();
        if gone || !over.is_empty() {
            let mut all = lock(&RUNS);
            let before = all.len();
            all.retain(|(i, w)| w.strong_count() > 0 && !over.contains(i));
            for _ in all.len()..before {
                RUN_COUNT.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                host::progress::remove_work();
            }
        }
        moved
    })
}

/// Whether some engine exists, or a started run this thread is not driving (the waits poll:
/// `host::progress::polling`).
#[inline]
pub fn forwarding() -> bool {
    host::progress::polling()
}

/// Runs `f` over the engines (as this thread last saw them, refreshed when one came or
/// went), unless no engine exists or this thread is already inside a step: then None.
fn with_engines<R>(f: impl FnOnce(&Engines) -> R) -> Option<R> {
    if !forwarding() || INSIDE.with(|c| c.replace(true)) {
        return None;
    }
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            INSIDE.with(|c| c.set(false));
        }
    }
    let _leave = Leave;
    Some(SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        let epoch = host::progress::epoch();
        if seen.0 != epoch {
            *seen = (epoch, super::forward::engines());
        }
        f(&seen.1)
    }))
}

/// One step of every engine no thread holds; nothing while none exists. An engine that
/// cannot go on (a protocol error, unexpected data past its bound) ends the job.
pub fn poll() {
    poll_counted();
}

/// `poll`, saying whether some engine exists and whether one moved (the progress thread backs
/// off while none does).
pub fn poll_counted() -> super::forward::Tried {
    host::progress::step_duties();
    with_engines(|list| {
        let mut t = super::forward::try_progress(list);
        t.moved |= step_runs();
        t
    })
    .unwrap_or(super::forward::Tried {
        engines: false,
        moved: false,
    })
}

/// One step of every engine, waiting for an engine another thread holds (the extension
/// calls' and the intercepted calls' own step): the first error, with which the caller's
/// call fails. Nothing inside another step of this thread, nor while no engine exists.
pub fn step() -> Result<(), super::forward::EngineError> {
    with_engines(|list| {
        for w in list {
            if let Some(e) = w.upgrade() {
                lock(&e).progress()?;
            }
        }
        step_runs();
        Ok(())
    })
    .unwrap_or(Ok(()))
}

/// `poll` from a call that an application may make in a tight loop (`MPI_Test`,
/// `MPI_Iprobe` on a communicator without dynamic broadcast): at most once every
/// `LOOP_STEP`, so that a test loop keeps forwarding without paying a step per look.
pub fn poll_in_loop() {
    if due_in_loop() {
        poll();
    }
}

/// `step` from a test or probe of an application's loop on a communicator with dynamic
/// broadcast: at most once every `LOOP_STEP`, as `poll_in_loop`.
pub fn step_in_loop() -> Result<(), super::forward::EngineError> {
    if due_in_loop() {
        step()
    } else {
        Ok(())
    }
}

/// Whether this thread's loop of tests is due for a step (and it is counted as made).
fn due_in_loop() -> bool {
    if !forwarding() {
        return false;
    }
    let now = std::time::Instant::now();
    LAST.with(|l| match l.get() {
        Some(t) if now.duration_since(t) < LOOP_STEP => false,
        _ => {
            l.set(Some(now));
            true
        }
    })
}

/// See `poll_in_loop`.
const LOOP_STEP: std::time::Duration = std::time::Duration::from_micros(10);

thread_local! {
    /// When this thread last stepped from a test loop.
    static LAST: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
}

/// Makes `poll` the step of `host::progress` (idempotent).
pub fn install() {
    host::progress::install(poll);
}

/// A wait of mpicast's own with nothing but MPI or a socket to wait for: how long it may
/// sleep at most while engines exist, so that segments routed through this rank (which
/// arrive by MPI and wake no socket) keep moving.
pub fn max_sleep(wanted: std::time::Duration) -> std::time::Duration {
    if forwarding() {
        wanted.min(std::time::Duration::from_micros(50))
    } else {
        wanted
    }
}

#[cfg(test)]
mod tests {
    //! The registry of started runs, with stand-ins for runs (no MPI): one test, since the
    //! registry is the process's.
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A run that is over after `need` steps; `held` stands for its owner holding it;
    /// `nest` makes its step call the progress step again (as a step that calls into MPI).
    struct Fake {
        steps: AtomicUsize,
        need: usize,
        held: Mutex<()>,
        nest: bool,
    }

    impl Fake {
        fn new(need: usize, nest: bool) -> Arc<Fake> {
            Arc::new(Fake {
                steps: AtomicUsize::new(0),
                need,
                held: Mutex::new(()),
                nest,
            })
        }
        fn steps(&self) -> usize {
            self.steps.load(Ordering::SeqCst)
        }
    }

    impl Pending for Fake {
        fn try_step(&self) -> Stepped {
            let Ok(_g) = self.held.try_lock() else {
                return Stepped::default();
            };
            if self.nest {
                poll();
            }
            let n = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
            Stepped {
                over: n >= self.need,
                moved: true,
            }
        }
    }

    fn add(f: &Arc<Fake>) -> u64 {
        let w: Weak<Fake> = Arc::downgrade(f);
        add_run(w)
    }

    #[test]
    fn registered_runs_are_stepped_until_over_and_skipped_while_held() {
        assert_eq!(runs(), 0);
        assert_eq!(host::progress::work(), 0);
        // Nothing registered: a step moves nothing.
        poll();

        let a = Fake::new(3, false);
        let ida = add(&a);
        assert_eq!(runs(), 1);
        assert!(
            host::progress::active(),
            "a started run makes the waits poll"
        );
        assert!(host::progress::polling());
        poll();
        assert_eq!(a.steps(), 1);
        // This thread driving its one run: a wait has nothing else to move.
        host::progress::driving(|| {
            assert!(!host::progress::polling());
            poll();
        });
        assert!(host::progress::polling());
        assert_eq!(a.steps(), 1);

        // Held by its owner: skipped, not waited for.
        {
            let _owner = a.held.lock().unwrap();
            poll();
            assert_eq!(a.steps(), 1);
        }
        // A step whose run calls into the progress step again does not nest.
        let b = Fake::new(100, true);
        let idb = add(&b);
        assert_eq!(runs(), 2);
        poll();
        assert_eq!(a.steps(), 2);
        assert_eq!(b.steps(), 1, "a nested step must not step again");

        // `step` (the extension calls' own) moves runs too; `a` is over at its third step
        // and leaves the registry; its owner's later unregistration is a no-op.
        step().unwrap();
        assert_eq!(a.steps(), 3);
        assert_eq!(runs(), 1);
        remove_run(ida);
        assert_eq!(runs(), 1);
        poll();
        assert_eq!(a.steps(), 3, "an unregistered run is not stepped");

        // A run dropped by its owner leaves at the next step.
        let c = Fake::new(100, false);
        add(&c);
        assert_eq!(runs(), 2);
        drop(c);
        poll();
        assert_eq!(runs(), 1);
        assert_eq!(b.steps(), 4);

        // The last one unregistered: nothing pending (no forwarder exists in this test).
        remove_run(idb);
        assert_eq!(runs(), 0);
        assert_eq!(host::progress::work(), 0);
        assert!(
            !host::progress::active(),
            "no run, no forwarder: the waits are the host's"
        );
        poll();
        assert_eq!(b.steps(), 4);

        // A root's eager-broadcast duty (`coll::duty`) alone: the calls take their slow path
        // and the waits poll while it is owed, and are the host's again after it.
        host::progress::add_duty();
        assert_eq!(host::progress::duties(), 1);
        assert!(host::progress::active() && host::progress::polling());
        host::progress::remove_duty();
        assert_eq!(host::progress::duties(), 0);
        assert!(!host::progress::active() && !host::progress::polling());
    }
}
