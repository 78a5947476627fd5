//! What a root owes after it returned from an eager broadcast (`Channel::deferred`): its
//! receivers may still need it. With UDP working they do not (the responder thread repairs by
//! UDP, and their acknowledgements wait in MPI for the root's next operation); with UDP
//! blocked while the host MPI works, they NACK by the host MPI and only the root's own thread
//! can serve them. Its next operation on the communicator does (`Channel::settle`); until
//! then, the communicator is registered here as a duty (`register`), and:
//!
//! - every progress step of the process (the waits of mpicast, and the host's blocking calls
//!   that mpicast turns into polled ones while a duty is owed: `host::progress::polling`)
//!   looks at it once (`step`: `Channel::settle_step`, which also answers rank 0's barrier
//!   waiters);
//! - a blocking host collective that cannot be polled (`host::progress::collective` on a
//!   communicator no forwarder or GOAL handle covers: its other ranks call the blocking form)
//!   waits for the duty to end first (`settle`). MPI lets a broadcast synchronise, so a
//!   correct program has every receiver reach the broadcast without this rank's later calls;
//!   still, the wait ends after three times `MPICAST_SUSPECT_MS` (at least `QUIET_MIN`) in
//!   which no receiver acknowledged, asked or was served and no barrier waiter was answered
//!   (each of them asks by the host MPI within `MPICAST_SUSPECT_MS` of silence, so the chain
//!   of a barrier's waiters asking, then the same ranks asking for the broadcast, fits, with
//!   room for a loaded host), so that a receiver still computing, or a
//!   program that relies on the broadcast not synchronising, costs that much and no more.
//!
//! The duty ends when every receiver acknowledged (and the repairs by the host MPI went), or
//! when the root's next operation took it over (`settle`), or with the communicator: a rank
//! that broadcast long ago pays for it at its next intercepted call at most, then the calls
//! are the host's again (`host::progress::remove_duty`).

use crate::host::{self, MPI_Comm};
use crate::lock::lock;
use crate::session::{CommState, LeaderPath, Path};
use crate::transport::op::SettleStep;
use crate::transport::Channel;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The communicators with a duty.
static DUTIES: Mutex<Vec<Weak<Mutex<CommState>>>> = Mutex::new(Vec::new());

/// The shortest time without news after which `settle` gives up.
const QUIET_MIN: Duration = Duration::from_millis(50);

thread_local! {
    /// The duties a step of this thread looks at (kept between steps: no allocation), and
    /// whether this thread is inside a step (a step never nests).
    static SCRATCH: RefCell<Vec<Weak<Mutex<CommState>>>> = const { RefCell::new(Vec::new()) };
}

/// The multicast channel of `st` (flat, or this rank's leaders' channel) and the
/// communicator its ranks are numbered in.
fn channel(st: &mut CommState) -> Option<(&mut Channel, MPI_Comm)> {
    match &mut st.path {
        Path::Mcast(chan) => Some((chan, st.private.0)),
        Path::Hier(h) => match h.lead.as_mut() {
            Some(lead) => match &mut lead.path {
                LeaderPath::Mcast(chan) => Some((chan, lead.comm.0)),
                _ => None,
            },
            None => None,
        },
        _ => None,
    }
}

/// After an operation on `state` (locked by the caller, as `st`): registers its duty if its
/// channel now holds an eager broadcast this rank returned from early.
pub fn register(state: &Arc<Mutex<CommState>>, st: &mut CommState) {
    let Some((chan, _)) = channel(st) else {
        return;
    };
    if chan.deferred.is_none() || chan.duty {
        return;
    }
    chan.duty = true;
    host::progress::install_duty(host::progress::DutyHook { step, settle });
    lock(&DUTIES).push(Arc::downgrade(state));
    host::progress::add_duty();
}

/// How a step went.
#[derive(Default)]
struct Looked {
    /// Some receiver moved.
    moved: bool,
    /// Duties left that another thread (or this one, further up) holds.
    held: usize,
    /// Duties left.
    left: usize,
}

/// One look at every duty no thread holds; the duties found over leave.
fn look() -> Looked {
    let mut out = Looked::default();
    let taken = SCRATCH.with(|s| {
        let Ok(mut mine) = s.try_borrow_mut() else {
            return false;
        };
        mine.clear();
        mine.extend(lock(&DUTIES).iter().cloned());
        let mut over: Vec<*const Mutex<CommState>> = Vec::new();
        for w in mine.iter() {
            let Some(state) = w.upgrade() else {
                over.push(w.as_ptr());
                continue;
            };
            let Ok(mut g) = state.try_lock() else {
                out.held += 1;
                out.left += 1;
                continue;
            };
            let st = &mut *g;
            let seq = st.seq;
            let Some((chan, private)) = channel(st) else {
                over.push(w.as_ptr());
                continue;
            };
            // A later operation began without settling it (a GOAL run, which takes the
            // control messages of its own multicasts from the same queue): it is that
            // run's and the next operation's business now.
            let later = chan.deferred.as_ref().is_some_and(|d| d.seq() != seq);
            let done = if later {
                Ok(SettleStep {
                    done: true,
                    moved: false,
                })
            } else {
                chan.settle_step(private)
            };
            let done = match done {
                Ok(s) => {
                    out.moved |= s.moved;
                    s.done
                }
                // Left to the next operation's `settle`, which reports it.
                Err(_) => true,
            };
            if done {
                chan.duty = false;
                over.push(w.as_ptr());
            } else {
                out.left += 1;
            }
        }
        mine.clear();
        if !over.is_empty() {
            let mut all = lock(&DUTIES);
            let before = all.len();
            all.retain(|w| !over.contains(&w.as_ptr()));
            for _ in all.len()..before {
                host::progress::remove_duty();
            }
        }
        true
    });
    if !taken {
        // Inside a step already: nothing here (the outer one goes on).
        out.held = out.left.max(1);
        out.left = out.held;
    }
    out
}

/// The duties' step (`host::progress::DutyHook::step`).
fn step() {
    look();
}

/// The wait before a blocking collective that cannot be polled
/// (`host::progress::DutyHook::settle`): see the module's text.
fn settle() {
    let quiet = suspect().saturating_mul(3).max(QUIET_MIN);
    let mut last = Instant::now();
    loop {
        let l = look();
        if l.left == 0 || l.left == l.held {
            return;
        }
        let now = Instant::now();
        if l.moved {
            last = now;
        } else if now.duration_since(last) >= quiet {
            return;
        }
        // Forwarding engines and GOAL runs move meanwhile. As `Channel::settle`, no sleep:
        // the acknowledgements owed here usually arrive within moments.
        crate::transport::progress::poll();
        std::thread::yield_now();
    }
}

/// `MPICAST_SUSPECT_MS`.
fn suspect() -> Duration {
    crate::session::started().map_or(Duration::from_millis(200), |s| {
        Duration::from_millis(s.cfg.suspect_ms)
    })
}
