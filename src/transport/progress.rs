//! The one progress of the process: `poll` moves every forwarding engine (the multicasts of
//! `MPICAST_Imcast` and the dynamic broadcasts of `MPICAST_Dbcast` routed through this rank)
//! one step, without blocking. Every wait of mpicast calls it: the multicast collectives'
//! loops (scouts, releases, repairs, the eager root's settling), communicator setup and
//! teardown, the extension calls' waits, and, through `host::progress`, every blocking host
//! call mpicast turns into a polled one while an engine exists. The progress thread
//! (`MPICAST_PROGRESS=thread`) runs the same step.
//!
//! Engines are skipped, not waited for, when another thread (or this one, further up the
//! stack) holds them, and a step never runs inside another step of the same thread.

use crate::host;
use crate::lock::lock;
use std::cell::{Cell, RefCell};

type Engines = Vec<std::sync::Weak<std::sync::Mutex<super::forward::Engine>>>;

thread_local! {
    /// This thread is inside `poll` (a wait reached from an engine's own step).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The engines as this thread last saw them, and the forwarders' epoch then: a step
    /// takes no lock of the registry and allocates nothing while no engine comes or goes.
    static SEEN: RefCell<(u64, Engines)> = const { RefCell::new((0, Vec::new())) };
}

/// Whether some engine exists (the waits poll).
#[inline]
pub fn forwarding() -> bool {
    host::progress::active()
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
    with_engines(|list| super::forward::try_progress(list)).unwrap_or(super::forward::Tried {
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
