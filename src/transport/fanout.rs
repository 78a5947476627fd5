//! Fan-out detection (`MPICAST_FANOUT`): an unmodified program's `MPI_Isend`s of one datum to
//! several ranks, issued one after another, go as one dynamic broadcast (`transport::dbcast`).
//! Which sends form a group, and the order rules, are `algo::fanout`'s; this module holds the
//! sends of the process and releases them. It owns the held sends and the communicators
//! with detection on; it does not touch the receive side (`transport::dbcast` has it).
//!
//! A held send has a request of its own (a generalized request of the host: `host::recv::
//! pending_request_with`), returned by the application's `MPI_Isend` and completed when its
//! group goes: then the data is copied (a dynamic broadcast copies it, and so does the
//! engine's direct send of a group with one recipient), so the buffer may be reused. Groups
//! go at the next MPI call of the process that is not such a send (`release_all`, from
//! every call `ffi` intercepts), before a send that is not held to a rank a held one names
//! (`before_send`), when `MAX_HELD` are held, or from the progress thread once the oldest
//! has waited `MAX_AGE`.
//!
//! Cost: until detection is on for some communicator, `on()` is one load; while nothing is
//! held, `held()` is one load.

use super::forward::EngineError;
use crate::algo::fanout::{Collector, Group};
use crate::host::buffer::UserBuf;
use crate::host::recv::{self, HostReq};
use crate::host::{self, MPI_Comm, MPI_Datatype, SendComm};
use crate::lock::lock;
use crate::transport::dbcast as db;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Held sends at most: one more releases them all.
const MAX_HELD: usize = 256;
/// How long the progress thread lets a held send wait.
const MAX_AGE: Duration = Duration::from_micros(500);
/// The largest tag a dynamic broadcast carries.
const MAX_TAG: c_int = 32767;

/// Some communicator has fan-out detection on.
static ON: AtomicBool = AtomicBool::new(false);
/// Some send is held, or groups taken out of the state are still being sent.
static HELD: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<Option<State>> = Mutex::new(None);
/// Held across taking groups out of the state and sending them: with the progress thread
/// releasing stale sends while the application thread releases others (or sends one that
/// is not held), groups taken first must be sent first, and a send that is not held must
/// not overtake a group another thread has taken but not yet sent. Lock order: `RELEASING`,
/// then `STATE` or an engine; never taken while either is held.
static RELEASING: Mutex<()> = Mutex::new(());

/// What makes two sends the same datum: the same bytes (address, count, size and how the
/// datatype was built, not its handle), tag and communicator.
#[derive(PartialEq, Eq)]
struct Datum {
    comm: u64,
    tag: c_int,
    addr: usize,
    count: c_int,
    bytes: usize,
    print: Vec<i64>,
}

/// One held send.
struct Held {
    req: HostReq,
    buf: UserBuf,
    comm: SendComm,
}

struct State {
    held: Collector<Datum, (u64, u32), Held>,
    /// Communicators with detection on (their keys), and the size below which nothing is held.
    comms: Vec<(u64, usize)>,
    oldest: Option<Instant>,
}

fn state(g: &mut Option<State>) -> &mut State {
    g.get_or_insert_with(|| State {
        held: Collector::default(),
        comms: Vec::new(),
        oldest: None,
    })
}

/// Whether detection is on for some communicator.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether some send is held.
#[inline]
pub fn held() -> bool {
    HELD.load(Ordering::Acquire)
}

/// Turns detection on for `comm` (whose dynamic broadcast is on): MPI_Isends of at least
/// `min_bytes` bytes are held.
pub fn mark(comm: MPI_Comm, min_bytes: usize) {
    let key = recv::handle_key(comm);
    let mut g = lock(&STATE);
    let s = state(&mut g);
    s.comms.retain(|c| c.0 != key);
    s.comms.push((key, min_bytes));
    ON.store(true, Ordering::Release);
}

/// Detection off for `comm` (it is being freed; its held sends went before).
pub fn forget(comm: MPI_Comm) {
    let key = recv::handle_key(comm);
    if let Some(s) = lock(&STATE).as_mut() {
        s.comms.retain(|c| c.0 != key);
    }
}

/// The size below which nothing is held on `comm`, if detection is on there.
fn min_bytes(comm: MPI_Comm) -> Option<usize> {
    let key = recv::handle_key(comm);
    let g = lock(&STATE);
    g.as_ref()?.comms.iter().find(|c| c.0 == key).map(|c| c.1)
}

/// A send on `comm` that is not held (any mode, or too small): counted among the bytes that
/// went point-to-point.
pub fn count_plain(comm: MPI_Comm, count: c_int, datatype: MPI_Datatype) {
    if !on() || min_bytes(comm).is_none() {
        return;
    }
    if let Some(b) = host::buffer::payload_bytes(i64::from(count), datatype) {
        crate::stats::add(&crate::stats::COUNTERS.fanout_p2p_bytes, b);
    }
}

/// Holds the application's `MPI_Isend` if it may join a fan-out: Some(its request), or
/// Some(an error); None when it is to be sent as usual (another communicator, too small, to
/// itself, a tag or datatype a dynamic broadcast cannot carry).
///
/// `buf`, `count`, `datatype`: the application's, valid until the request completes, as MPI
/// requires of a non-blocking send.
pub fn defer(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<Result<host::MPI_Request, EngineError>> {
    let min = min_bytes(comm)?;
    if count < 0 || !(0..=MAX_TAG).contains(&tag) {
        return None;
    }
    let dest = u32::try_from(dest).ok()?;
    let e = db::engine_of(comm)?;
    if dest == crate::lock::lock(&e).rank() {
        return None;
    }
    let ub = UserBuf::describe(buf as *mut c_void, i64::from(count), datatype, comm).ok()?;
    if ub.bytes() < min || ub.bytes() == 0 {
        return None;
    }
    let print = host::datatype::fingerprint(datatype)?;
    let req = match recv::pending_request_with(host::any_source(), host::p2p::any_tag(), 0, 0) {
        Ok(r) => r,
        Err(e) => return Some(Err(EngineError::Mpi(e))),
    };
    let key = recv::handle_key(comm);
    let datum = Datum {
        comm: key,
        tag,
        addr: buf as usize,
        count,
        bytes: ub.bytes(),
        print,
    };
    let full = {
        let mut g = lock(&STATE);
        let s = state(&mut g);
        s.held.defer(
            datum,
            (key, dest),
            Held {
                req: HostReq(req),
                buf: ub,
                comm: SendComm(comm),
            },
        );
        s.oldest.get_or_insert_with(Instant::now);
        HELD.store(true, Ordering::Release);
        s.held.held() >= MAX_HELD
    };
    crate::stats::add(&crate::stats::COUNTERS.fanout_held, 1);
    if full {
        if let Err(e) = release_all() {
            return Some(Err(e));
        }
    }
    Some(Ok(req))
}

/// Takes groups out of the state with `take`, then releases them in order, all under
/// `RELEASING`. `HELD` stays set until they are sent, so that a caller who finds nothing
/// held (`held()`) knows nothing is in flight either.
fn release_with(
    take: impl FnOnce(&mut Collector<Datum, (u64, u32), Held>) -> Vec<Group<Datum, (u64, u32), Held>>,
) -> Result<(), EngineError> {
    let _serial = lock(&RELEASING);
    let groups = {
        let mut g = lock(&STATE);
        let Some(s) = g.as_mut() else {
            return Ok(());
        };
        let out = take(&mut s.held);
        if s.held.is_empty() {
            // A send held from now on is aged from its own arrival.
            s.oldest = None;
        }
        out
    };
    let mut first_err = None;
    for g in groups {
        if let Err(e) = release(g) {
            first_err.get_or_insert(e);
        }
    }
    if let Some(s) = lock(&STATE).as_mut() {
        if s.held.is_empty() {
            HELD.store(false, Ordering::Release);
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Every held send goes (the next call that is not a held send).
pub fn release_all() -> Result<(), EngineError> {
    if !held() {
        return Ok(());
    }
    release_with(|c| c.take_all())
}

/// Before a send to `dest` on `comm` that is not held: the held ones it must not overtake go.
pub fn before_send(comm: MPI_Comm, dest: c_int) -> Result<(), EngineError> {
    if !held() {
        return Ok(());
    }
    let Ok(dest) = u32::try_from(dest) else {
        return Ok(());
    };
    let key = recv::handle_key(comm);
    release_with(|c| c.before_send_to(&(key, dest)))
}

/// From the progress thread: everything goes once the oldest held send has waited `MAX_AGE`.
pub fn release_stale() -> Result<(), EngineError> {
    if !held() {
        return Ok(());
    }
    let old = lock(&STATE)
        .as_ref()
        .and_then(|s| s.oldest)
        .is_some_and(|t| t.elapsed() >= MAX_AGE);
    if old {
        release_all()
    } else {
        Ok(())
    }
}

/// One group goes: to several ranks as one dynamic broadcast, to one by the engine (so that
/// later sends to it keep their order); then its requests complete.
fn release(g: Group<Datum, (u64, u32), Held>) -> Result<(), EngineError> {
    let tag = g.key.tag;
    let bytes = g.key.bytes as u64;
    let ranks: Vec<u32> = g.sends.iter().map(|s| s.0 .1).collect();
    let first = &g.sends[0].1;
    let other = || EngineError::Mpi(host::MpiError(host::err_other()));
    let sent = match db::engine_of(first.comm.0) {
        None => Err(other()),
        Some(e) => first
            .buf
            .with_send_bytes(|data| {
                let mut eng = lock(&e);
                let ecomm = eng.comm();
                if let [dest] = ranks[..] {
                    let d = eng.dbcast.as_mut().ok_or_else(other)?;
                    d.direct_ordered(ecomm, dest, tag, data)
                } else {
                    let (shape, order) = db::tree_order(&eng, &ranks, None, data.len());
                    let d = eng.dbcast.as_mut().ok_or_else(other)?;
                    d.start(ecomm, &order, shape, tag, data).map(|_| ())
                }
            })
            .map_err(EngineError::Mpi)
            .and_then(|r| r),
    };
    let c = &crate::stats::COUNTERS;
    if ranks.len() > 1 {
        crate::stats::add(&c.fanout_groups, 1);
        crate::stats::add(&c.dbcast, 1);
        crate::stats::add(&c.fanout_bcast_bytes, bytes * ranks.len() as u64);
    } else {
        crate::stats::add(&c.fanout_p2p_bytes, bytes);
    }
    for (_, h) in &g.sends {
        if let Err(m) = recv::complete_request(h.req.0) {
            if sent.is_ok() {
                return Err(EngineError::Mpi(m));
            }
        }
    }
    sent
}
