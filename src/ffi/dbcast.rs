//! The point-to-point calls that dynamic broadcast intercepts ("Using Dynamic Broadcasts to
//! improve Task-Based Runtime Performances", Euro-Par 2020; `transport::dbcast`): on a
//! communicator where MPICAST_Dbcast_enable turned it on, an application's receive
//! (`MPI_Recv`, `MPI_Irecv` and the wait and test calls, `MPI_Probe`/`MPI_Iprobe`) may be
//! completed by a dynamic broadcast instead of a point-to-point message, and the root's sends
//! (`MPI_Send` and its modes) are counted, or go by the engine once it broadcast to their
//! destination, so that one root's messages keep their order.
//!
//! Cost elsewhere: until some forwarding engine exists in the process (`host::progress::
//! active`), every one of these calls is one load, a branch, and a jump to the host's call.
//! Afterwards, calls on other communicators look the communicator up in a list read without
//! a lock, and their blocking forms become the host's non-blocking ones tested in a loop that
//! moves the engines (`host::progress`); waits and tests of tracked requests (a receive or
//! send on an enabled communicator) poll the engines as well.

use super::ext::empty_status;
use crate::host::progress::{request_null, Pause};

/// What a receive of (`source`, `tag`) on a communicator of `size` ranks accepts, as the
/// multicast receives read it; None for what mpicast leaves to the host (MPI_PROC_NULL, a
/// tag no broadcast can carry, values the host will reject).
fn want(source: c_int, tag: c_int, size: u32) -> Option<Want> {
    super::ext::parse_want(source, tag, size).ok().flatten()
}
use super::error::engine_mpi_code;
use super::{guard, guard_comm};
use crate::host::buffer::UserBuf;
use crate::host::recv::{self, HostReq};
use crate::host::{self, MPI_Comm, MPI_Datatype, MPI_Request};
use crate::transport::dbcast::{self as db, RecvState};
use crate::transport::forward::Engine;
use crate::wire::matching::{RecvId, Want};
use mpi_sys::MPI_Status;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

type EngineRef = Arc<Mutex<Engine>>;

/// Every engine moves along once (segments forwarded, receives completed).
fn progress() -> Result<(), c_int> {
    crate::transport::progress::step().map_err(engine_mpi_code)
}

/// `progress` from a test call an application may make in a tight loop: at most once every
/// few microseconds (`transport::progress::step_in_loop`).
fn progress_in_loop() -> Result<(), c_int> {
    crate::transport::progress::step_in_loop().map_err(engine_mpi_code)
}

fn lock(e: &EngineRef) -> std::sync::MutexGuard<'_, Engine> {
    crate::lock::lock(e)
}

fn is_null(r: MPI_Request) -> bool {
    recv::handle_key(r) == recv::handle_key(request_null())
}

/// The status at index `i` of an array, or MPI_STATUS_IGNORE.
fn status_at(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if statuses.is_null() || statuses == host::statuses_ignore() {
        host::status_ignore()
    } else {
        // SAFETY: the application's array of `count` statuses (MPI's contract), i < count.
        unsafe { statuses.add(i) }
    }
}

/// Posts the application's receive on an enabled communicator: on the host, and registered
/// with the engine (the request it returns is not in the table of tracked requests: MPI_Irecv
/// puts it there, MPI_Recv's own never leaves the call). None when the host's own call should
/// take it as it is.
///
/// # Safety
/// The arguments of MPI_Irecv.
unsafe fn post(
    e: &EngineRef,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<Result<(MPI_Request, Option<RecvId>), c_int>> {
    let size = host::comm::size(comm).ok()?;
    let w = want(source, tag, size)?;
    if count < 0 {
        return None;
    }
    let ub = UserBuf::describe(buf, i64::from(count), datatype, comm).ok()?;
    // SAFETY: the application's arguments.
    let h = match unsafe { recv::irecv(buf, count, datatype, source, tag, comm) } {
        Ok(h) => h,
        Err(rc) => return Some(Err(rc)),
    };
    let mut g = lock(e);
    let Some(d) = g.dbcast.as_mut() else {
        return Some(Ok((h.0, None)));
    };
    Some(match d.post(h, ub, w) {
        Ok(id) => Ok((h.0, Some(id))),
        Err(err) => Err(engine_mpi_code(err)),
    })
}

/// Completes the application's tracked request `*req` that is done (`state`): frees it on
/// the host and gives the status the message that completed it says.
///
/// # Safety
/// `req` points to the application's request; `status` is MPI_STATUS_IGNORE or writable.
unsafe fn finish(
    req: *mut MPI_Request,
    status: *mut MPI_Status,
    e: &EngineRef,
    id: RecvId,
    state: RecvState,
    in_table: bool,
) -> c_int {
    if in_table {
        // SAFETY: the caller's pointer.
        db::untrack(unsafe { *req });
    }
    if let Some(d) = lock(e).dbcast.as_mut() {
        d.forget(id);
    }
    // SAFETY: the application's request, complete on the host (cancelled, or received).
    let (rc, st) = unsafe { recv::finish(req) };
    match state {
        RecvState::Dbcast(o) => {
            // SAFETY: the caller's status argument.
            unsafe { host::status_fill(status, o.source, o.tag, o.error, o.bytes) };
            if o.error != host::SUCCESS {
                return o.error;
            }
            host::SUCCESS
        }
        _ => {
            if !status.is_null() && status != host::status_ignore() {
                // SAFETY: writable, as the caller promises.
                unsafe { status.write(st.0) };
            }
            rc
        }
    }
}

/// MPI_Recv on a communicator without dynamic broadcast: the host's, polled while engines
/// exist.
///
/// # Safety
/// The arguments of MPI_Recv.
unsafe fn host_recv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: the application's arguments.
    let blocking =
        || unsafe { mpi_sys::PMPI_Recv(buf, count, datatype, source, tag, comm, status) };
    // SAFETY: as above; the request is waited for before returning.
    let start = |r: &mut MPI_Request| unsafe {
        mpi_sys::PMPI_Irecv(buf, count, datatype, source, tag, comm, r)
    };
    // SAFETY: the application's status.
    unsafe { host::progress::p2p_status(blocking, start, status) }
}

/// Whether tracked receive `id` of `e` is done (and how), without completing it.
fn done(e: &EngineRef, id: RecvId) -> Option<RecvState> {
    let mut g = lock(e);
    let state = match g.dbcast.as_mut().map(|d| d.poll(id)) {
        Some(Ok(s)) => s,
        Some(Err(err)) => {
            // An MPI error: the host's wait on the request reports it.
            drop(g);
            engine_mpi_code(err);
            return Some(RecvState::Host);
        }
        None => None,
    };
    match state {
        Some(RecvState::Posted) | Some(RecvState::Paired(_)) => None,
        Some(s) => Some(s),
        None => Some(RecvState::Host),
    }
}

/// One look of a wait or test at the application's receive `*req`, receive `id` of `e`:
/// Some(the call's result) once it is complete, and completed now (`*req` is then
/// MPI_REQUEST_NULL, `status` filled). A receive only posted is tested on the host under the
/// engine's lock (no broadcast can take it meanwhile), which completes it at once when a
/// point-to-point message came.
///
/// # Safety
/// `req` points to the application's request; `status` is MPI_STATUS_IGNORE or writable.
/// `in_table`: `*req` is in the table of tracked requests (taken out once complete).
unsafe fn look_recv(
    req: *mut MPI_Request,
    status: *mut MPI_Status,
    e: &EngineRef,
    id: RecvId,
    in_table: bool,
) -> Option<c_int> {
    let looked = lock(e).dbcast.as_mut().map(|d| d.look(id));
    let state = match looked {
        None => RecvState::Host,
        Some(Ok(db::Look::NotYet)) => return None,
        Some(Ok(db::Look::Done(s))) => s,
        Some(Ok(db::Look::Host(rc, st))) => {
            if in_table {
                // SAFETY: the caller's pointer.
                db::untrack(unsafe { *req });
            }
            // SAFETY: the caller's pointer; the host freed the request.
            unsafe { req.write(request_null()) };
            if !status.is_null() && status != host::status_ignore() {
                // SAFETY: writable, as the caller promises.
                unsafe { status.write(st.0) };
            }
            return Some(rc);
        }
        Some(Err(err)) => {
            // An MPI error: the host's wait on the request reports it.
            engine_mpi_code(err);
            RecvState::Host
        }
    };
    // SAFETY: as the caller promises.
    Some(unsafe { finish(req, status, e, id, state, in_table) })
}

/// A request of the application's that mpicast waits for.
enum Waited {
    /// A receive a broadcast may complete: receive `1` of engine `0`, not in the table of
    /// tracked requests (MPI_Recv's own, or taken out by MPI_Wait: then `2` is its
    /// communicator's key, with which an error puts it back).
    Recv(EngineRef, RecvId, Option<u64>),
    /// A send on an enabled communicator (its receiver may wait for a broadcast this rank
    /// passes on, so waiting for it forwards), not in the table of tracked requests; with
    /// its communicator's key when it was (MPI_Wait took it out: an error puts it back).
    Send(Option<u64>),
}

/// Waits for `*req` as `what` says, forwarding meanwhile.
///
/// # Safety
/// `req` points to a live request; `status` is MPI_STATUS_IGNORE or writable.
unsafe fn wait_for(req: *mut MPI_Request, status: *mut MPI_Status, what: Waited) -> c_int {
    // One look: Some(result) once complete.
    let look = || -> Option<c_int> {
        match &what {
            // SAFETY: as the caller promises.
            Waited::Recv(e, id, _) => unsafe { look_recv(req, status, e, *id, false) },
            Waited::Send(_) => {
                let mut flag: c_int = 0;
                // SAFETY: the caller's request and status.
                let rc = unsafe { mpi_sys::PMPI_Test(req, &mut flag, status) };
                (rc != host::SUCCESS || flag != 0).then_some(rc)
            }
        }
    };
    // Spins first, as the host's own wait does: a yield costs more than a short message.
    let mut pause = Pause::default();
    loop {
        if let Some(rc) = look() {
            return rc;
        }
        if !pause.spinning() {
            if let Err(rc) = progress() {
                // The request stays pending: tracked again.
                match &what {
                    // SAFETY: the caller's pointer.
                    Waited::Recv(_, id, Some(c)) => db::track_key(unsafe { *req }, *c, *id),
                    // SAFETY: the caller's pointer.
                    Waited::Send(Some(c)) => db::track_key(unsafe { *req }, *c, db::POLLED_SEND),
                    Waited::Recv(_, _, None) | Waited::Send(None) => {}
                }
                return rc;
            }
            if let Some(rc) = look() {
                return rc;
            }
        }
        pause.pause();
    }
}

/// Whether none of the `n` requests at `reqs` is tracked (a receive a broadcast may complete,
/// or a send on an enabled communicator): then the host's own call takes the array, and
/// this rank does not forward meanwhile (calls on other communicators cost nothing).
///
/// # Safety
/// `reqs` holds `n` requests.
unsafe fn none_tracked(reqs: *const MPI_Request, n: c_int) -> bool {
    if !db::any_tracked() {
        return true;
    }
    // SAFETY: within the application's array.
    (0..n.max(0) as usize).all(|i| db::tracked(unsafe { *reqs.add(i) }).is_none())
}

/// MPI_Wait on any request once dynamic broadcast is on.
///
/// # Safety
/// The arguments of MPI_Wait.
unsafe fn wait_one(req: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: the caller's pointer.
    let h = unsafe { *req };
    // Taken out of the table at once: the wait completes it (or puts it back on an error).
    let what = match db::take_tracked(h) {
        None => {
            // SAFETY: the application's arguments.
            return unsafe { host::progress::wait(req, status) };
        }
        Some((_, db::POLLED_SEND, c)) => Waited::Send(Some(c)),
        Some((e, id, c)) => Waited::Recv(e, id, Some(c)),
    };
    // SAFETY: as the caller promises.
    unsafe { wait_for(req, status, what) }
}

/// One look at request `i` of an array: Some(rc) when it completed (and is completed now).
///
/// # Safety
/// `reqs` holds at least `i + 1` requests; `status` as for MPI_Test.
unsafe fn test_at(reqs: *mut MPI_Request, i: usize, status: *mut MPI_Status) -> Option<c_int> {
    // SAFETY: within the application's array.
    let r = unsafe { reqs.add(i) };
    // SAFETY: as above.
    let h = unsafe { *r };
    let tracked = db::tracked(h);
    if let Some((e, id)) = tracked.as_ref().filter(|t| t.1 != db::POLLED_SEND) {
        // SAFETY: as the caller promises.
        return unsafe { look_recv(r, status, e, *id, true) };
    }
    let mut flag: c_int = 0;
    // SAFETY: the application's request and status.
    let rc = unsafe { mpi_sys::PMPI_Test(r, &mut flag, status) };
    let complete = rc != host::SUCCESS || flag != 0;
    if complete && tracked.is_some() {
        db::untrack(h);
    }
    complete.then_some(rc)
}

/// Whether request `i` of an array is complete, without completing it.
///
/// # Safety
/// `reqs` holds at least `i + 1` requests.
unsafe fn complete_at(reqs: *mut MPI_Request, i: usize) -> bool {
    // SAFETY: within the application's array.
    let h = unsafe { *reqs.add(i) };
    if let Some((e, id)) = db::tracked(h).filter(|t| t.1 != db::POLLED_SEND) {
        return done(&e, id).is_some();
    }
    is_null(h) || recv::peek(HostReq(h)).map_or(true, |s| s.is_some())
}

// ---------------------------------------------------------------------------------------
// The intercepted calls. Each starts with the one test that sends it to the host while no
// communicator has dynamic broadcast on.

intercept! {
    /// MPI_Irecv: on a communicator with dynamic broadcast, a dynamic broadcast from `source`
    /// with `tag` may complete it instead of a point-to-point message (the status then says the
    /// broadcast's root, tag and count).
    ///
    /// # Safety
    /// The arguments of MPI_Irecv.
    fn MPI_Irecv => PMPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) on comm {
        guard_comm("MPI_Irecv", comm, || {
            if let Some(e) = db::engine_of(comm) {
                // SAFETY: the application's arguments.
                match unsafe { post(&e, buf, count, datatype, source, tag, comm) } {
                    Some(Ok((h, id))) => {
                        if let Some(id) = id {
                            db::track(h, comm, id);
                        }
                        // SAFETY: the application's request pointer.
                        unsafe { request.write(h) };
                        return host::SUCCESS;
                    }
                    Some(Err(rc)) => return rc,
                    None => {}
                }
            }
            // SAFETY: the application's arguments.
            unsafe { mpi_sys::PMPI_Irecv(buf, count, datatype, source, tag, comm, request) }
        })
    }
}

intercept! {
    /// MPI_Recv: as MPI_Irecv followed by MPI_Wait; a rank blocked here forwards the dynamic
    /// broadcasts routed through it.
    ///
    /// # Safety
    /// The arguments of MPI_Recv.
    fn MPI_Recv => PMPI_Recv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) on comm {
        guard_comm("MPI_Recv", comm, || {
            let Some(e) = db::engine_of(comm) else {
                // SAFETY: the application's arguments.
                return unsafe { host_recv(buf, count, datatype, source, tag, comm, status) };
            };
            // SAFETY: the application's arguments.
            match unsafe { post(&e, buf, count, datatype, source, tag, comm) } {
                Some(Ok((mut h, Some(id)))) => {
                    // SAFETY: our request, the application's status.
                    unsafe { wait_for(&mut h, status, Waited::Recv(e, id, None)) }
                }
                Some(Ok((mut h, None))) => {
                    // SAFETY: our request, the application's status.
                    unsafe { host::progress::wait(&mut h, status) }
                }
                Some(Err(rc)) => rc,
                // SAFETY: the application's arguments.
                None => unsafe { host_recv(buf, count, datatype, source, tag, comm, status) },
            }
        })
    }
}

intercept! {
    /// MPI_Wait: a receive that a dynamic broadcast completed gets the broadcast's status.
    ///
    /// # Safety
    /// The arguments of MPI_Wait.
    fn MPI_Wait => PMPI_Wait(
        request: *mut MPI_Request,
        status: *mut MPI_Status,
    ) {
        // SAFETY: as above.
        guard("MPI_Wait", host::err_other, || unsafe {
            wait_one(request, status)
        })
    }
}

intercept! {
    /// MPI_Test: one progress step of the dynamic broadcasts, then the test.
    ///
    /// # Safety
    /// The arguments of MPI_Test.
    fn MPI_Test => PMPI_Test(
        request: *mut MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) {
        guard("MPI_Test", host::err_other, || {
            // SAFETY: the application's array.
            if unsafe { none_tracked(request, 1) } {
                crate::transport::progress::poll_in_loop();
                // SAFETY: the application's arguments.
                return unsafe { mpi_sys::PMPI_Test(request, flag, status) };
            }
            if let Err(rc) = progress_in_loop() {
                return rc;
            }
            // SAFETY: the application's array of one request and its status.
            match unsafe { test_at(request, 0, status) } {
                Some(rc) => {
                    // SAFETY: the application's flag.
                    unsafe { flag.write(1) };
                    rc
                }
                None => {
                    // SAFETY: as above.
                    unsafe { flag.write(0) };
                    host::SUCCESS
                }
            }
        })
    }
}

/// The result of an array call: MPI_ERR_IN_STATUS when a request failed and statuses are
/// kept, its code when they are ignored.
fn array_result(first_err: Option<c_int>, statuses: *mut MPI_Status) -> c_int {
    match first_err {
        None => host::SUCCESS,
        Some(rc) if statuses.is_null() || statuses == host::statuses_ignore() => rc,
        Some(_) => mpi_sys::MPI_ERR_IN_STATUS as c_int,
    }
}

intercept! {
    /// MPI_Waitall: the requests of the array complete as they come, receives completed by
    /// dynamic broadcasts among them.
    ///
    /// # Safety
    /// The arguments of MPI_Waitall.
    fn MPI_Waitall => PMPI_Waitall(
        count: c_int,
        requests: *mut MPI_Request,
        statuses: *mut MPI_Status,
    ) {
        // SAFETY: the application's array.
        if unsafe { none_tracked(requests, count) } {
            // SAFETY: the application's arguments.
            return unsafe { host::progress::waitall(count, requests, statuses) };
        }
        guard("MPI_Waitall", host::err_other, || {
            let n = count.max(0) as usize;
            let mut left: Vec<usize> = (0..n).collect();
            let mut err = None;
            let mut idle = Pause::default();
            loop {
                left.retain(|&i| {
                    let st = status_at(statuses, i);
                    // SAFETY: index within the application's arrays.
                    match unsafe { test_at(requests, i, st) } {
                        Some(rc) => {
                            if rc != host::SUCCESS {
                                err.get_or_insert(rc);
                                if st != host::status_ignore() {
                                    // SAFETY: the application's status.
                                    unsafe { (*st).MPI_ERROR = rc };
                                }
                            }
                            false
                        }
                        None => true,
                    }
                });
                if left.is_empty() {
                    return array_result(err, statuses);
                }
                // A look first, as the host's own wait: a step only once the spins are over.
                if !idle.spinning() {
                    if let Err(rc) = progress() {
                        return rc;
                    }
                }
                idle.pause();
            }
        })
    }
}

intercept! {
    /// MPI_Testall: all complete (and completed now), or none touched.
    ///
    /// # Safety
    /// The arguments of MPI_Testall.
    fn MPI_Testall => PMPI_Testall(
        count: c_int,
        requests: *mut MPI_Request,
        flag: *mut c_int,
        statuses: *mut MPI_Status,
    ) {
        guard("MPI_Testall", host::err_other, || {
            // SAFETY: the application's array.
            if unsafe { none_tracked(requests, count) } {
                crate::transport::progress::poll_in_loop();
                // SAFETY: the application's arguments.
                return unsafe { mpi_sys::PMPI_Testall(count, requests, flag, statuses) };
            }
            if let Err(rc) = progress_in_loop() {
                return rc;
            }
            let n = count.max(0) as usize;
            // SAFETY: indices within the application's array.
            if !(0..n).all(|i| unsafe { complete_at(requests, i) }) {
                // SAFETY: the application's flag.
                unsafe { flag.write(0) };
                return host::SUCCESS;
            }
            let mut err = None;
            for i in 0..n {
                let st = status_at(statuses, i);
                // SAFETY: as above; every request is complete.
                let rc = unsafe { test_at(requests, i, st) }.unwrap_or(host::SUCCESS);
                if rc != host::SUCCESS {
                    err.get_or_insert(rc);
                }
            }
            // SAFETY: the application's flag.
            unsafe { flag.write(1) };
            array_result(err, statuses)
        })
    }
}

/// One pass of MPI_Waitany/MPI_Testany: Some((index, rc)) of the first complete request,
/// Some((MPI_UNDEFINED, 0)) when no request is active.
///
/// # Safety
/// The arguments of MPI_Testany.
unsafe fn any_pass(
    count: c_int,
    requests: *mut MPI_Request,
    status: *mut MPI_Status,
) -> Option<(c_int, c_int)> {
    let mut active = false;
    for i in 0..count.max(0) as usize {
        // SAFETY: within the application's array.
        if is_null(unsafe { *requests.add(i) }) {
            continue;
        }
        active = true;
        // SAFETY: as above.
        if let Some(rc) = unsafe { test_at(requests, i, status) } {
            return Some((i as c_int, rc));
        }
    }
    (!active).then_some((host::undefined(), host::SUCCESS))
}

intercept! {
    /// MPI_Waitany.
    ///
    /// # Safety
    /// The arguments of MPI_Waitany.
    fn MPI_Waitany => PMPI_Waitany(
        count: c_int,
        requests: *mut MPI_Request,
        index: *mut c_int,
        status: *mut MPI_Status,
    ) {
        // SAFETY: the application's array.
        if unsafe { none_tracked(requests, count) } {
            // SAFETY: the application's arguments.
            return unsafe { host::progress::waitany(count, requests, index, status) };
        }
        guard("MPI_Waitany", host::err_other, || {
            let mut idle = Pause::default();
            loop {
                // SAFETY: the application's arguments.
                if let Some((i, rc)) = unsafe { any_pass(count, requests, status) } {
                    if i == host::undefined() {
                        // SAFETY: the application's status.
                        empty_status(status);
                    }
                    // SAFETY: the application's index.
                    unsafe { index.write(i) };
                    return rc;
                }
                if !idle.spinning() {
                    if let Err(rc) = progress() {
                        return rc;
                    }
                }
                idle.pause();
            }
        })
    }
}

intercept! {
    /// MPI_Testany.
    ///
    /// # Safety
    /// The arguments of MPI_Testany.
    fn MPI_Testany => PMPI_Testany(
        count: c_int,
        requests: *mut MPI_Request,
        index: *mut c_int,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) {
        guard("MPI_Testany", host::err_other, || {
            // SAFETY: the application's array.
            if unsafe { none_tracked(requests, count) } {
                crate::transport::progress::poll_in_loop();
                // SAFETY: the application's arguments.
                return unsafe { mpi_sys::PMPI_Testany(count, requests, index, flag, status) };
            }
            if let Err(rc) = progress_in_loop() {
                return rc;
            }
            // SAFETY: the application's arguments.
            match unsafe { any_pass(count, requests, status) } {
                Some((i, rc)) => {
                    if i == host::undefined() {
                        // SAFETY: the application's status.
                        empty_status(status);
                    }
                    // SAFETY: the application's index and flag.
                    unsafe {
                        index.write(i);
                        flag.write(1);
                    }
                    rc
                }
                None => {
                    // SAFETY: as above.
                    unsafe {
                        index.write(host::undefined());
                        flag.write(0);
                    }
                    host::SUCCESS
                }
            }
        })
    }
}

/// One pass of MPI_Waitsome/MPI_Testsome: how many completed (MPI_UNDEFINED when none is
/// active), their indices and statuses written.
///
/// # Safety
/// The arguments of MPI_Testsome.
unsafe fn some_pass(
    count: c_int,
    requests: *mut MPI_Request,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
    err: &mut Option<c_int>,
) -> c_int {
    let mut active = false;
    let mut out = 0usize;
    for i in 0..count.max(0) as usize {
        // SAFETY: within the application's array.
        if is_null(unsafe { *requests.add(i) }) {
            continue;
        }
        active = true;
        let st = status_at(statuses, out);
        // SAFETY: as above; statuses are written in completion order, as MPI does.
        if let Some(rc) = unsafe { test_at(requests, i, st) } {
            if rc != host::SUCCESS {
                err.get_or_insert(rc);
                if st != host::status_ignore() {
                    // SAFETY: the application's status.
                    unsafe { (*st).MPI_ERROR = rc };
                }
            }
            // SAFETY: the application's array of `count` indices.
            unsafe { indices.add(out).write(i as c_int) };
            out += 1;
        }
    }
    if active {
        out as c_int
    } else {
        host::undefined()
    }
}

intercept! {
    /// MPI_Waitsome.
    ///
    /// # Safety
    /// The arguments of MPI_Waitsome.
    fn MPI_Waitsome => PMPI_Waitsome(
        incount: c_int,
        requests: *mut MPI_Request,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut MPI_Status,
    ) {
        // SAFETY: the application's array.
        if unsafe { none_tracked(requests, incount) } {
            // SAFETY: the application's arguments.
            return unsafe {
                host::progress::waitsome(incount, requests, outcount, indices, statuses)
            };
        }
        guard("MPI_Waitsome", host::err_other, || {
            let mut idle = Pause::default();
            loop {
                let mut err = None;
                // SAFETY: the application's arguments.
                let n = unsafe { some_pass(incount, requests, indices, statuses, &mut err) };
                if n != 0 {
                    // SAFETY: the application's outcount.
                    unsafe { outcount.write(n) };
                    return array_result(err, statuses);
                }
                if !idle.spinning() {
                    if let Err(rc) = progress() {
                        return rc;
                    }
                }
                idle.pause();
            }
        })
    }
}

intercept! {
    /// MPI_Testsome.
    ///
    /// # Safety
    /// The arguments of MPI_Testsome.
    fn MPI_Testsome => PMPI_Testsome(
        incount: c_int,
        requests: *mut MPI_Request,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut MPI_Status,
    ) {
        guard("MPI_Testsome", host::err_other, || {
            // SAFETY: the application's array.
            if unsafe { none_tracked(requests, incount) } {
                crate::transport::progress::poll_in_loop();
                // SAFETY: the application's arguments.
                return unsafe {
                    mpi_sys::PMPI_Testsome(incount, requests, outcount, indices, statuses)
                };
            }
            if let Err(rc) = progress_in_loop() {
                return rc;
            }
            let mut err = None;
            // SAFETY: the application's arguments.
            let n = unsafe { some_pass(incount, requests, indices, statuses, &mut err) };
            // SAFETY: the application's outcount.
            unsafe { outcount.write(n) };
            array_result(err, statuses)
        })
    }
}

intercept! {
    /// MPI_Iprobe: a dynamic broadcast that a receive of (`source`, `tag`) would take now counts
    /// as a message (its root, tag and count in the status).
    ///
    /// # Safety
    /// The arguments of MPI_Iprobe.
    fn MPI_Iprobe => PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) on comm {
        // SAFETY: as above.
        guard_comm("MPI_Iprobe", comm, || unsafe {
            iprobe(source, tag, comm, flag, status)
        })
    }
}

/// # Safety
/// The arguments of MPI_Iprobe.
unsafe fn iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if let Some(e) = db::engine_of(comm) {
        if let Err(rc) = progress_in_loop() {
            return rc;
        }
        let w = host::comm::size(comm)
            .ok()
            .and_then(|n| want(source, tag, n));
        if let Some(w) = w {
            let found = lock(&e).dbcast.as_ref().and_then(|d| d.probe(w));
            if let Some(m) = found {
                // SAFETY: the application's status and flag.
                unsafe {
                    host::status_fill(status, m.key.root as c_int, m.tag, host::SUCCESS, m.len);
                    flag.write(1);
                }
                return host::SUCCESS;
            }
        }
    } else {
        crate::transport::progress::poll_in_loop();
    }
    // SAFETY: the application's arguments.
    unsafe { mpi_sys::PMPI_Iprobe(source, tag, comm, flag, status) }
}

intercept! {
    /// MPI_Probe: MPI_Iprobe until it finds a message, forwarding meanwhile.
    ///
    /// # Safety
    /// The arguments of MPI_Probe.
    fn MPI_Probe => PMPI_Probe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) on comm {
        guard_comm("MPI_Probe", comm, || {
            if db::engine_of(comm).is_none() {
                // SAFETY: the application's arguments.
                return unsafe { host::progress::probe(source, tag, comm, status) };
            }
            let mut idle = Pause::default();
            loop {
                let mut flag: c_int = 0;
                // SAFETY: the application's arguments, our flag.
                let rc = unsafe { iprobe(source, tag, comm, &mut flag, status) };
                if rc != host::SUCCESS || flag != 0 {
                    return rc;
                }
                idle.pause();
            }
        })
    }
}

intercept! {
    /// MPI_Cancel: a receive no message has taken yet is withdrawn from the dynamic broadcasts
    /// too; one a broadcast took completes as usual (cancelling it then has no effect, as for
    /// any receive that matched).
    ///
    /// # Safety
    /// The arguments of MPI_Cancel.
    fn MPI_Cancel => PMPI_Cancel(
        request: *mut MPI_Request,
    ) {
        guard("MPI_Cancel", host::err_other, || {
            // SAFETY: the application's pointer.
            let h = unsafe { *request };
            if let Some((e, id)) = db::tracked(h).filter(|t| t.1 != db::POLLED_SEND) {
                let withdrawn = lock(&e).dbcast.as_mut().is_some_and(|d| d.cancel(id));
                if !withdrawn {
                    return host::SUCCESS;
                }
            }
            // SAFETY: the application's arguments.
            unsafe { mpi_sys::PMPI_Cancel(request) }
        })
    }
}

intercept! {
    /// MPI_Request_free: a receive a dynamic broadcast took still fills its buffer, unseen.
    ///
    /// # Safety
    /// The arguments of MPI_Request_free.
    fn MPI_Request_free => PMPI_Request_free(
        request: *mut MPI_Request,
    ) {
        guard("MPI_Request_free", host::err_other, || {
            // SAFETY: the application's pointer.
            let h = unsafe { *request };
            if let Some((e, id)) = db::tracked(h) {
                db::untrack(h);
                if let Some(d) = lock(&e).dbcast.as_mut() {
                    d.orphan(id);
                }
            }
            // SAFETY: the application's arguments.
            unsafe { mpi_sys::PMPI_Request_free(request) }
        })
    }
}

intercept! {
    /// MPI_Request_get_status: a receive a dynamic broadcast completed says so, with its status.
    ///
    /// # Safety
    /// The arguments of MPI_Request_get_status.
    fn MPI_Request_get_status => PMPI_Request_get_status(
        request: MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) {
        guard("MPI_Request_get_status", host::err_other, || {
            if let Some((e, id)) = db::tracked(request).filter(|t| t.1 != db::POLLED_SEND) {
                if let Err(rc) = progress() {
                    return rc;
                }
                match done(&e, id) {
                    None => {
                        // SAFETY: the application's flag.
                        unsafe { flag.write(0) };
                        return host::SUCCESS;
                    }
                    Some(RecvState::Dbcast(o)) => {
                        // SAFETY: the application's flag and status.
                        unsafe {
                            host::status_fill(status, o.source, o.tag, o.error, o.bytes);
                            flag.write(1);
                        }
                        return host::SUCCESS;
                    }
                    Some(_) => {}
                }
            }
            // SAFETY: the application's arguments.
            unsafe { mpi_sys::PMPI_Request_get_status(request, flag, status) }
        })
    }
}

// ---------------------------------------------------------------------------------------
// Sends: counted on an enabled communicator (the broadcasts carry the counts), or carried
// by the engine to a rank this root broadcast to before.

/// Who makes a send.
enum Sent {
    /// The engine carried it: the call's result.
    Engine(c_int),
    /// The host's call makes it: on an enabled communicator (`true`: counted, and waiting
    /// for it forwards meanwhile), or elsewhere.
    Host(bool),
}

/// The engine carries a send to a rank this rank broadcast to before; any other send on an
/// enabled communicator is counted and left to the host.
fn send_by_engine(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Sent {
    let Some(e) = db::engine_of(comm) else {
        return Sent::Host(false);
    };
    let (Ok(dest), true) = (u32::try_from(dest), tag >= 0 && count >= 0) else {
        return Sent::Host(false);
    };
    let mut g = lock(&e);
    let ecomm = g.comm();
    let Some(d) = g.dbcast.as_mut() else {
        return Sent::Host(false);
    };
    if !d.by_engine(dest) {
        d.count_plain(dest, tag);
        drop(g);
        return Sent::Host(true);
    }
    let Ok(ub) = UserBuf::describe(buf as *mut c_void, i64::from(count), datatype, comm) else {
        return Sent::Host(false);
    };
    let r = ub.with_send_bytes(|bytes| d.direct(ecomm, dest, tag, bytes));
    drop(g);
    Sent::Engine(match r {
        Ok(Ok(())) => host::SUCCESS,
        Ok(Err(err)) => engine_mpi_code(err),
        Err(e) => e.0,
    })
}

/// A completed request for a non-blocking send the engine carried.
///
/// # Safety
/// `request` is the application's request pointer.
unsafe fn completed(rc: c_int, request: *mut MPI_Request) -> c_int {
    if rc != host::SUCCESS {
        return rc;
    }
    match recv::completed_request_with(host::any_source(), host::p2p::any_tag(), 0, 0) {
        Ok(r) => {
            // SAFETY: the application's request pointer.
            unsafe { request.write(r) };
            host::SUCCESS
        }
        Err(e) => e.0,
    }
}

/// Before a send that fan-out detection does not hold: the held sends it must not overtake
/// go first (`transport::fanout::before_send`), and its bytes are counted. The call's result
/// when that failed.
fn not_held(comm: MPI_Comm, dest: c_int, count: c_int, datatype: MPI_Datatype) -> Option<c_int> {
    if !crate::transport::fanout::on() {
        return None;
    }
    crate::transport::fanout::count_plain(comm, count, datatype);
    crate::transport::fanout::before_send(comm, dest)
        .err()
        .map(engine_mpi_code)
}

macro_rules! blocking_send {
    ($name:ident, $pmpi:ident, $ipmpi:ident) => {
        intercept! {
            @keep_held
            /// A send mode of MPI: counted on a communicator with dynamic broadcast, or carried
            /// by its engine to a rank this rank broadcast to (so that it is received after
            /// the broadcast, as it was sent). Sends to `dest` that fan-out detection holds go
            /// first.
            ///
            /// # Safety
            /// The arguments of the MPI call of this name.
            fn $name => $pmpi(
                buf: *const c_void,
                count: c_int,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
            ) {
                guard_comm(stringify!($name), comm, || {
                    if let Some(rc) = not_held(comm, dest, count, datatype) {
                        return rc;
                    }
                    match send_by_engine(buf, count, datatype, dest, tag, comm) {
                        Sent::Engine(rc) => rc,
                        // SAFETY: the application's arguments.
                        Sent::Host(false) => host::progress::p2p(
                            // SAFETY: the application's arguments.
                            || unsafe { mpi_sys::$pmpi(buf, count, datatype, dest, tag, comm) },
                            // SAFETY: as above; the request is waited for before returning.
                            |r| unsafe {
                                mpi_sys::$ipmpi(buf, count, datatype, dest, tag, comm, r)
                            },
                        ),
                        Sent::Host(true) => {
                            // Its non-blocking form, waited for while forwarding.
                            let mut r = request_null();
                            // SAFETY: the application's arguments, our request.
                            let rc = unsafe {
                                mpi_sys::$ipmpi(buf, count, datatype, dest, tag, comm, &mut r)
                            };
                            if rc != host::SUCCESS {
                                return rc;
                            }
                            // SAFETY: our request.
                            unsafe { wait_for(&mut r, host::status_ignore(), Waited::Send(None)) }
                        }
                    }
                })
            }
        }
    };
}

macro_rules! nonblocking_send {
    ($name:ident, $pmpi:ident, $held:expr) => {
        intercept! {
            @keep_held
            /// A non-blocking send mode of MPI: as its blocking form; carried by the engine,
            /// its request is complete at once (the data was copied).
            ///
            /// # Safety
            /// The arguments of the MPI call of this name.
            fn $name => $pmpi(
                buf: *const c_void,
                count: c_int,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
                request: *mut MPI_Request,
            ) {
                guard_comm(stringify!($name), comm, || {
                    if $held && crate::transport::fanout::on() {
                        match crate::transport::fanout::defer(buf, count, datatype, dest, tag, comm) {
                            Some(Ok(r)) => {
                                // SAFETY: the application's request pointer.
                                unsafe { request.write(r) };
                                return host::SUCCESS;
                            }
                            Some(Err(e)) => return engine_mpi_code(e),
                            None => {}
                        }
                    }
                    if let Some(rc) = not_held(comm, dest, count, datatype) {
                        return rc;
                    }
                    let sent = send_by_engine(buf, count, datatype, dest, tag, comm);
                    let on_enabled = match sent {
                        // SAFETY: the application's request pointer.
                        Sent::Engine(rc) => return unsafe { completed(rc, request) },
                        Sent::Host(on) => on,
                    };
                    // SAFETY: the application's arguments.
                    let rc =
                        unsafe { mpi_sys::$pmpi(buf, count, datatype, dest, tag, comm, request) };
                    if on_enabled && rc == host::SUCCESS {
                        // SAFETY: the host wrote the request.
                        db::track(unsafe { *request }, comm, db::POLLED_SEND);
                    }
                    rc
                })
            }
        }
    };
}

blocking_send!(MPI_Send, PMPI_Send, PMPI_Isend);
blocking_send!(MPI_Ssend, PMPI_Ssend, PMPI_Issend);
blocking_send!(MPI_Rsend, PMPI_Rsend, PMPI_Irsend);
blocking_send!(MPI_Bsend, PMPI_Bsend, PMPI_Ibsend);
// Fan-out detection holds MPI_Isend only: MPI_Issend completes when its receive has begun,
// which a held (then copied) send cannot say; the ready and buffered modes are left as the
// program chose them.
nonblocking_send!(MPI_Isend, PMPI_Isend, true);
nonblocking_send!(MPI_Issend, PMPI_Issend, false);
nonblocking_send!(MPI_Irsend, PMPI_Irsend, false);
nonblocking_send!(MPI_Ibsend, PMPI_Ibsend, false);

intercept! {
    /// MPI_Type_free: the held sends go first (they may be of this datatype, which the
    /// program may free before the send completes, as MPI allows).
    ///
    /// # Safety
    /// The arguments of MPI_Type_free.
    fn MPI_Type_free => PMPI_Type_free(
        datatype: *mut MPI_Datatype,
    ) {
        // SAFETY: the application's argument.
        unsafe { mpi_sys::PMPI_Type_free(datatype) }
    }
}

intercept! {
    @keep_held
    /// MPI_Comm_free: the held sends go first (they may be on this communicator), and
    /// fan-out detection forgets it. A panic goes to the communicator's error handler (it is
    /// still live then: the host frees it last).
    ///
    /// # Safety
    /// The arguments of MPI_Comm_free.
    fn MPI_Comm_free => PMPI_Comm_free(
        comm: *mut MPI_Comm,
    ) {
        // SAFETY: the application's pointer, or NULL (which the host reports).
        let Some(c) = (!comm.is_null()).then(|| unsafe { *comm }) else {
            if let Some(rc) = super::release_held() {
                return rc;
            }
            // SAFETY: the application's argument.
            return unsafe { mpi_sys::PMPI_Comm_free(comm) };
        };
        if let Some(rc) = super::release_held_on(c) {
            return rc;
        }
        guard_comm("MPI_Comm_free", c, || {
            crate::transport::fanout::forget(c);
            // SAFETY: the application's argument.
            unsafe { mpi_sys::PMPI_Comm_free(comm) }
        })
    }
}

// ---------------------------------------------------------------------------------------
// Matched probes: a dynamic broadcast found by MPI_Improbe/MPI_Mprobe gets a message handle
// of mpicast's own, which only mpicast's MPI_Mrecv/MPI_Imrecv take.

/// A probed broadcast: its engine, its key, and the communicator it was probed on.
struct Probed {
    engine: std::sync::Weak<Mutex<Engine>>,
    key: crate::wire::dbcast::Key,
    comm: host::SendComm,
}

static PROBED: Mutex<Option<std::collections::HashMap<u64, Probed>>> = Mutex::new(None);
static NEXT_PROBED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// # Safety
/// The arguments of MPI_Improbe.
unsafe fn improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut mpi_sys::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    let Some(e) = db::engine_of(comm) else {
        crate::transport::progress::poll_in_loop();
        // SAFETY: the application's arguments.
        return unsafe { mpi_sys::PMPI_Improbe(source, tag, comm, flag, message, status) };
    };
    if let Err(rc) = progress_in_loop() {
        return rc;
    }
    if let Some(w) = host::comm::size(comm)
        .ok()
        .and_then(|n| want(source, tag, n))
    {
        let found = lock(&e).dbcast.as_mut().and_then(|d| d.take_probed(w));
        if let Some(m) = found {
            let id = NEXT_PROBED.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
            let h = recv::fake_message(id);
            crate::lock::lock(&PROBED)
                .get_or_insert_with(Default::default)
                .insert(
                    recv::handle_key(h),
                    Probed {
                        engine: Arc::downgrade(&e),
                        key: m.key,
                        comm: host::SendComm(comm),
                    },
                );
            // SAFETY: the application's message, status and flag.
            unsafe {
                message.write(h);
                host::status_fill(status, m.key.root as c_int, m.tag, host::SUCCESS, m.len);
                flag.write(1);
            }
            return host::SUCCESS;
        }
    }
    // The host's own message: matched now, so counted as received for the broadcasts' order.
    let mut st = std::mem::MaybeUninit::<MPI_Status>::zeroed();
    // SAFETY: the application's arguments, our status.
    let rc = unsafe { mpi_sys::PMPI_Improbe(source, tag, comm, flag, message, st.as_mut_ptr()) };
    // SAFETY: filled by the host (or still zeroed).
    let st = unsafe { st.assume_init() };
    // SAFETY: the application's flag.
    if rc == host::SUCCESS && unsafe { *flag } != 0 {
        if st.MPI_SOURCE >= 0 {
            if let Some(d) = lock(&e).dbcast.as_mut() {
                if let Err(err) = d.note_plain(st.MPI_SOURCE as u32, st.MPI_TAG) {
                    return engine_mpi_code(err);
                }
            }
        }
        if !status.is_null() && status != host::status_ignore() {
            // SAFETY: writable, as the application promises.
            unsafe { status.write(st) };
        }
    }
    rc
}

intercept! {
    /// MPI_Improbe: a dynamic broadcast that a receive of (`source`, `tag`) would take now is
    /// matched, with a message handle for MPI_Mrecv/MPI_Imrecv.
    ///
    /// # Safety
    /// The arguments of MPI_Improbe.
    fn MPI_Improbe => PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        flag: *mut c_int,
        message: *mut mpi_sys::MPI_Message,
        status: *mut MPI_Status,
    ) on comm {
        // SAFETY: as above.
        guard_comm("MPI_Improbe", comm, || unsafe {
            improbe(source, tag, comm, flag, message, status)
        })
    }
}

intercept! {
    /// MPI_Mprobe: MPI_Improbe until it matches, forwarding meanwhile.
    ///
    /// # Safety
    /// The arguments of MPI_Mprobe.
    fn MPI_Mprobe => PMPI_Mprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        message: *mut mpi_sys::MPI_Message,
        status: *mut MPI_Status,
    ) on comm {
        guard_comm("MPI_Mprobe", comm, || {
            if db::engine_of(comm).is_none() {
                // SAFETY: the application's arguments.
                return unsafe { host::progress::mprobe(source, tag, comm, message, status) };
            }
            let mut idle = Pause::default();
            loop {
                let mut flag: c_int = 0;
                // SAFETY: the application's arguments, our flag.
                let rc = unsafe { improbe(source, tag, comm, &mut flag, message, status) };
                if rc != host::SUCCESS || flag != 0 {
                    return rc;
                }
                idle.pause();
            }
        })
    }
}

/// Receives a probed broadcast into the buffer, waiting for the rest of its data: the
/// status's facts (source, tag, error, bytes).
fn mrecv_probed(
    p: Probed,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> Result<(c_int, c_int, c_int, u64), c_int> {
    let e = p.engine.upgrade().ok_or(host::err_other())?;
    let mut idle = Pause::default();
    let (m, data) = loop {
        progress()?;
        if let Some(got) = lock(&e).dbcast.as_mut().and_then(|d| d.take_data(p.key)) {
            break got;
        }
        idle.pause();
    };
    let mut ub = UserBuf::describe(buf, i64::from(count.max(0)), datatype, p.comm.0)
        .map_err(|_| host::err_arg())?;
    let (n, error) = crate::transport::forward::fill(&mut ub, &data).map_err(|e| e.0)?;
    Ok((m.key.root as c_int, m.tag, error, n as u64))
}

/// The probed broadcast of message handle `*message`, if it is one of mpicast's.
///
/// # Safety
/// `message` points to the application's message handle.
unsafe fn probed(message: *mut mpi_sys::MPI_Message) -> Option<Probed> {
    // SAFETY: the application's pointer.
    let key = recv::handle_key(unsafe { *message });
    crate::lock::lock(&PROBED).as_mut()?.remove(&key)
}

intercept! {
    /// MPI_Mrecv: a message handle of a probed dynamic broadcast receives it.
    ///
    /// # Safety
    /// The arguments of MPI_Mrecv.
    fn MPI_Mrecv => PMPI_Mrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        message: *mut mpi_sys::MPI_Message,
        status: *mut MPI_Status,
    ) {
        guard("MPI_Mrecv", host::err_other, || {
            // SAFETY: the application's pointer.
            let Some(p) = (unsafe { probed(message) }) else {
                // SAFETY: the application's arguments.
                let blocking =
                    || unsafe { mpi_sys::PMPI_Mrecv(buf, count, datatype, message, status) };
                // SAFETY: as above; the request is waited for before returning.
                let start = |r: &mut MPI_Request| unsafe {
                    mpi_sys::PMPI_Imrecv(buf, count, datatype, message, r)
                };
                // SAFETY: the application's status.
                return unsafe { host::progress::p2p_status(blocking, start, status) };
            };
            let comm = p.comm.0;
            match mrecv_probed(p, buf, count, datatype) {
                Ok((s, t, err, n)) => {
                    // SAFETY: the application's status and message.
                    unsafe {
                        host::status_fill(status, s, t, err, n);
                        message.write(recv::message_null());
                    }
                    if err != host::SUCCESS {
                        host::call_errhandler(comm, err)
                    } else {
                        host::SUCCESS
                    }
                }
                Err(rc) => rc,
            }
        })
    }
}

intercept! {
    /// MPI_Imrecv: as MPI_Mrecv for a probed dynamic broadcast (it waits for the rest of the
    /// broadcast's data, then returns a request that is complete).
    ///
    /// # Safety
    /// The arguments of MPI_Imrecv.
    fn MPI_Imrecv => PMPI_Imrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        message: *mut mpi_sys::MPI_Message,
        request: *mut MPI_Request,
    ) {
        guard("MPI_Imrecv", host::err_other, || {
            // SAFETY: the application's pointer.
            let Some(p) = (unsafe { probed(message) }) else {
                // SAFETY: the application's arguments.
                return unsafe { mpi_sys::PMPI_Imrecv(buf, count, datatype, message, request) };
            };
            match mrecv_probed(p, buf, count, datatype).and_then(|(s, t, err, n)| {
                recv::completed_request_with(s, t, err, n).map_err(|e| e.0)
            }) {
                Ok(r) => {
                    // SAFETY: the application's request and message.
                    unsafe {
                        request.write(r);
                        message.write(recv::message_null());
                    }
                    host::SUCCESS
                }
                Err(rc) => rc,
            }
        })
    }
}
