//! The progress thread (`MPICAST_PROGRESS=thread`, or `auto` under MPI_THREAD_MULTIPLE): the
//! process's progress step (`transport::progress::poll`) made in the background, so that a
//! rank forwards multicasts and its started GOAL runs go on while it computes.
//!
//! It drives the forwarding engines, the sends fan-out detection holds, the MPI requests made
//! of mpicast requests (`host::grequest`), and every started run handed to it (`register`: a
//! weak reference to a `Pending`, skipped while another thread holds it or once it is gone).
//! It owns no run: a run's state and its outcome stay with its handle (`coll::goal`).
//!
//! The thread starts with the first run registered (or engine served) after MPI granted
//! MPI_THREAD_MULTIPLE (`host::init`), and stops at the very start of MPI_Finalize (`stop`,
//! from the intercepted finalize), or else from the delete callback of an attribute it sets on
//! MPI_COMM_SELF (MPI deletes those first, on every finalize path: C, Fortran, or a binding
//! that calls PMPI_Finalize directly).

use super::Pending;
use crate::host::{self, attr};
use crate::lock::lock;
use crate::transport::forward::EngineError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// The runs handed to the thread.
type Runs = Vec<Weak<dyn Pending>>;

struct Engine {
    runs: Arc<Mutex<Runs>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

static ENGINE: Mutex<Option<Engine>> = Mutex::new(None);
/// Set once the thread was stopped at finalize: never start another.
static FINISHED: AtomicBool = AtomicBool::new(false);
static WARNED: AtomicBool = AtomicBool::new(false);

static AT_FINALIZE: attr::Callbacks = attr::Callbacks {
    copy: None,
    delete: on_finalize,
};

fn on_finalize(_token: usize) {
    stop();
}

/// Whether a run started now should be shared with the progress thread: MPICAST_PROGRESS=thread
/// or auto, the host granted MPI_THREAD_MULTIPLE, and finalize has not stopped the thread. A
/// refusal by the host is reported once (for `thread`; `auto` asked for nothing).
pub fn threads_wanted() -> bool {
    let mode = host::init::progress_mode();
    if mode == crate::config::Progress::Poll || FINISHED.load(Ordering::Acquire) {
        return false;
    }
    if !host::init::progress_thread_allowed() {
        // `auto` falls back to polling without a word: it asked for nothing.
        if mode == crate::config::Progress::Thread && !WARNED.swap(true, Ordering::Relaxed) {
            crate::session::say(
                "mpicast: warning: MPICAST_PROGRESS=thread, but MPI was initialised without \
                 MPI_THREAD_MULTIPLE (initialise through MPI_Init or MPI_Init_thread with mpicast \
                 loaded, and a host MPI that grants it): GOAL runs progress in \
                 MPICAST_Goal_test/MPICAST_Goal_wait only",
            );
        }
        return false;
    }
    true
}

/// Hands a started `run` to the progress thread (starting it if needed) when
/// `threads_wanted`. Returns whether it did; otherwise the run progresses only in its owner's
/// test/wait and the process's progress step.
pub fn register(run: Weak<dyn Pending>) -> bool {
    if !threads_wanted() {
        return false;
    }
    let eng = started("GOAL runs progress in MPICAST_Goal_test/MPICAST_Goal_wait only");
    let Some(e) = eng.as_ref() else {
        return false;
    };
    lock(&e.runs).push(run);
    e.thread.thread().unpark();
    true
}

/// Starts the progress thread for the forwarding engines of the multicast calls, when
/// `threads_wanted`: from then on it moves every engine along too (`transport::progress`),
/// so that a rank forwards multicasts while it computes. Returns whether it runs.
pub fn serve_forwarding() -> bool {
    if !threads_wanted() {
        return false;
    }
    let eng = started("multicasts are forwarded only inside mpicast calls");
    let Some(e) = eng.as_ref() else {
        return false;
    };
    e.thread.thread().unpark();
    true
}

/// The progress thread, started if it is not running; `None` (with a warning, once, ending
/// in `otherwise`) if it cannot start.
fn started(otherwise: &str) -> std::sync::MutexGuard<'static, Option<Engine>> {
    let mut eng = lock(&ENGINE);
    if eng.is_none() {
        match start() {
            Ok(e) => *eng = Some(e),
            Err(why) => {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    crate::session::say(&format!(
                        "mpicast: warning: no progress thread ({why}): {otherwise}"
                    ));
                }
            }
        }
    }
    eng
}

fn start() -> Result<Engine, String> {
    let key = attr::create_keyval(&AT_FINALIZE).map_err(|e| format!("keyval: {e}"))?;
    attr::set(host::comm_self(), key, 0).map_err(|e| format!("MPI_COMM_SELF attribute: {e}"))?;
    let runs: Arc<Mutex<Runs>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (r, s) = (runs.clone(), stop.clone());
    let thread = std::thread::Builder::new()
        .name("mpicast-progress".into())
        .spawn(move || progress_loop(&r, &s))
        .map_err(|e| format!("spawn: {e}"))?;
    Ok(Engine { runs, stop, thread })
}

fn progress_loop(runs: &Mutex<Runs>, stop: &AtomicBool) {
    let mut idle: u32 = 0;
    while !stop.load(Ordering::Acquire) {
        let list: Runs = lock(runs).clone();
        // The forwarding engines of the multicast calls: those no application thread holds.
        let forwarding = super::poll_counted();
        // Sends fan-out detection held while the application computes go after a short while.
        if let Err(e) = crate::transport::fanout::release_stale() {
            end_job_if_fatal(e);
        }
        // The MPI requests made of mpicast requests (MPICAST_Request_mpi) complete here.
        if host::grequest::complete_done() || forwarding.moved {
            idle = 0;
        }
        if list.is_empty() && !forwarding.engines {
            // Parked until a run is registered or finalize stops us.
            std::thread::park_timeout(Duration::from_millis(100));
            continue;
        }
        if step_runs(&list, &mut idle) {
            // Keep what may still need us: alive, and unfinished (or held, so unknown).
            lock(runs).retain(|w| w.upgrade().is_some_and(|r| r.live()));
        }
        // Poll hard while actions complete, then back off so that an idle wait (a message
        // not yet sent by a peer) leaves the cores to the ranks.
        idle = idle.saturating_add(1);
        if idle < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(match idle {
                0..=1023 => 5,
                1024..=65535 => 50,
                _ => 500,
            }));
        }
    }
}

/// One step of every run in `list` that nobody else holds (a run the application is driving
/// right now needs nothing from us); `idle` goes back to 0 when one moved or is over. Returns
/// whether some run is over or gone.
fn step_runs(list: &[Weak<dyn Pending>], idle: &mut u32) -> bool {
    let mut finished = false;
    for w in list {
        let Some(run) = w.upgrade() else {
            finished = true;
            continue;
        };
        let st = run.try_step();
        if st.over {
            finished = true;
            *idle = 0;
        } else if st.moved {
            *idle = 0;
        }
    }
    finished
}

/// An engine error met by the thread: an MPI error is left for the calls that meet it again;
/// an engine that cannot go on ends the job, as the process's progress step does
/// (`forward::try_progress`).
fn end_job_if_fatal(e: EngineError) {
    if let EngineError::Full(m) | EngineError::Protocol(m) = e {
        crate::session::say(&format!("mpicast: {m}; aborting"));
        host::abort(host::comm_world(), 1)
    }
}

/// Stops and joins the progress thread (at MPI_Finalize); runs still registered stay where
/// they are and progress only in test/wait from then on.
pub fn stop() {
    FINISHED.store(true, Ordering::Release);
    let eng = lock(&ENGINE).take();
    if let Some(e) = eng {
        e.stop.store(true, Ordering::Release);
        e.thread.thread().unpark();
        let _ = e.thread.join();
    }
}

/// Whether the progress thread is running (for tests and diagnostics).
pub fn running() -> bool {
    ENGINE.lock().map(|e| e.is_some()).unwrap_or(false)
}
