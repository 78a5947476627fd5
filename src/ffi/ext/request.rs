//! Requests of the extension calls, and waiting for them: `MPICAST_Wait`, `_Test`,
//! `_Waitall`, `_Testany`, `_Testsome`, `_Request_free`, as MPI's calls of those names do for
//! MPI requests. A request of MPICAST_Imcast or MPICAST_Mcast_irecv is the caller's: the call
//! that completes it frees it and sets the caller's pointer to NULL (a NULL request is
//! complete, with an empty status, like MPI_REQUEST_NULL). A GOAL run's request stays its
//! goal's: completing it sets the caller's pointer to NULL and frees nothing.
//!
//! Every one of these calls moves every communicator's forwarding engine along
//! (`transport::progress::step`), so a rank forwards the multicasts routed through
//! it whenever it waits or tests anything of mpicast's; but `MPICAST_Wait` on a request that
//! is complete already returns at once, without a step.

use super::super::guard;
use super::check;
use super::goal::MPICAST_Goal;
use super::{ARG, ERR_MPI, INTERNAL, NULL_ARG, OK, TRUNCATE};
use crate::ffi::error::engine_status;
use crate::host;
use crate::lock::lock;
use crate::transport::forward::{self, Outcome, ReqState};
use std::collections::HashSet;
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

/// The addresses of the live requests (handed to the caller, not yet completed or freed), and
/// of every GOAL handle's request while the handle lives: a pointer the caller passes is
/// looked up here before it is read, so that an uninitialised request or a stale copy of a
/// completed one is MPICAST_ERR_ARG, not a crash.
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn live_set<R>(f: impl FnOnce(&mut HashSet<usize>) -> R) -> R {
    let mut g = lock(&LIVE);
    f(g.get_or_insert_with(HashSet::new))
}

/// Records `r` as live.
pub(super) fn enlist(r: *mut MPICAST_Request) {
    live_set(|s| s.insert(r as usize));
}

/// Forgets `r` (it is being freed).
pub(super) fn unlist(r: *mut MPICAST_Request) {
    live_set(|s| s.remove(&(r as usize)));
}

/// Whether `g` is a live GOAL handle (`MPICAST_Goal_create` enlists it, `MPICAST_Goal_free`
/// takes it out); NULL is not.
pub(super) fn goal_live(g: *mut MPICAST_Goal) -> bool {
    !g.is_null() && live_set(|s| s.contains(&(g as usize)))
}

/// Records the GOAL handle `g` as live.
pub(super) fn enlist_goal(g: *mut MPICAST_Goal) {
    live_set(|s| s.insert(g as usize));
}

/// Forgets the GOAL handle `g`.
pub(super) fn unlist_goal(g: *mut MPICAST_Goal) {
    live_set(|s| s.remove(&(g as usize)));
}

/// Whether `r` is a live request of mpicast's.
fn is_live(r: *mut MPICAST_Request) -> bool {
    live_set(|s| s.contains(&(r as usize)))
}

/// The refusal of a request pointer that is not live.
fn not_live(call: &str, name: &str) -> c_int {
    check::refuse(
        call,
        ARG,
        &format!(
            "{name} is not a live mpicast request (completed or freed already, a stale copy, or \
             never started)"
        ),
    )
}

/// Frees an engine request the caller owned.
///
/// # Safety
/// `r` was made by `MPICAST_Request::op` and is live.
unsafe fn release(r: *mut MPICAST_Request) -> Box<MPICAST_Request> {
    unlist(r);
    // SAFETY: as the caller promises.
    unsafe { Box::from_raw(r) }
}

/// A non-blocking operation of mpicast: a multicast or a multicast receive (the caller's,
/// freed by the call that completes it or by MPICAST_Request_free), or a GOAL run (owned by
/// its MPICAST_Goal, never freed by the caller).
#[allow(non_camel_case_types)]
pub struct MPICAST_Request {
    pub(super) goal: *mut MPICAST_Goal,
    op: Option<Arc<ReqState>>,
}

impl MPICAST_Request {
    pub(super) fn goal(goal: *mut MPICAST_Goal) -> MPICAST_Request {
        MPICAST_Request { goal, op: None }
    }

    /// A request of the forwarding engine, handed to the caller.
    pub(super) fn op(state: Arc<ReqState>) -> *mut MPICAST_Request {
        let r = Box::into_raw(Box::new(MPICAST_Request {
            goal: std::ptr::null_mut(),
            op: Some(state),
        }));
        enlist(r);
        r
    }
}

/// Progress of every engine; an engine that cannot go on ends the job with its reason
/// (unexpected data past its bound, or a broken segment), since a multicast cannot be lost.
pub(super) fn progress() -> Result<(), c_int> {
    crate::transport::progress::step().map_err(engine_status)
}

/// One look at `*request` (after a progress step by the caller): `Some(status code)` when it
/// is complete, with `*status` filled and the request released; `None` when not yet. A
/// pointer that is not a live request is `Some(MPICAST_ERR_ARG)` (the message names `call`
/// and the request: `*request`, or `requests[index]`).
///
/// # Safety
/// `request` points to the caller's request pointer.
unsafe fn look(
    call: &str,
    index: Option<usize>,
    request: *mut *mut MPICAST_Request,
    status: *mut mpi_sys::MPI_Status,
    wait: bool,
) -> Option<c_int> {
    // SAFETY: the caller's pointer, checked by the caller.
    let r = unsafe { *request };
    if r.is_null() {
        empty_status(status);
        return Some(OK);
    }
    if !is_live(r) {
        let name = index.map_or_else(|| "*request".to_string(), |i| format!("requests[{i}]"));
        return Some(not_live(call, &name));
    }
    // SAFETY: a live request (the caller's contract).
    let req = unsafe { &mut *r };
    if !req.goal.is_null() {
        // SAFETY: a GOAL request points to its live goal.
        let g = unsafe { &mut *req.goal };
        return match g.drive(wait) {
            Ok(true) => {
                empty_status(status);
                // SAFETY: the caller's pointer.
                unsafe { *request = std::ptr::null_mut() };
                Some(OK)
            }
            Ok(false) => None,
            Err(s) => Some(s),
        };
    }
    let state = req.op.as_ref()?;
    if !state.is_done() {
        return None;
    }
    let o: Outcome = state.outcome();
    // SAFETY: the caller's status argument, NULL, MPI_STATUS_IGNORE or writable.
    unsafe { host::status_fill(status, o.source, o.tag, o.error, o.bytes) };
    // SAFETY: an engine request the caller owns, made by `MPICAST_Request::op`, live.
    drop(unsafe { release(r) });
    // SAFETY: the caller's pointer.
    unsafe { *request = std::ptr::null_mut() };
    Some(if o.error == host::SUCCESS {
        OK
    } else {
        TRUNCATE
    })
}

/// An empty status (MPI's for a null request), unless `status` is MPI_STATUS_IGNORE.
pub(crate) fn empty_status(status: *mut mpi_sys::MPI_Status) {
    // SAFETY: the caller's status argument, NULL, MPI_STATUS_IGNORE or writable.
    unsafe {
        host::status_fill(
            status,
            host::any_source(),
            host::p2p::any_tag(),
            host::SUCCESS,
            0,
        )
    };
}

/// Waits until `*request` completes, forwarding meanwhile; fills `*status` (or
/// MPI_STATUS_IGNORE) with the source, the tag and the length (MPI_Get_count works on it) and
/// sets `*request` to NULL. MPICAST_ERR_TRUNCATE when the multicast was longer than the
/// buffer (the status's MPI_ERROR is MPI_ERR_TRUNCATE). A NULL `*request` returns at once;
/// one that is not a live request of mpicast's (completed or freed already, a stale copy,
/// never started) gives MPICAST_ERR_ARG and is not read. The same holds for every call here.
///
/// # Safety
/// `request` points to a request pointer; `status` is MPI_STATUS_IGNORE or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Wait(
    request: *mut *mut MPICAST_Request,
    status: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Wait",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Wait";
            if let Err(s) = check::non_null(CALL, request, "request") {
                return s;
            }
            // Complete already (a multicast's send, a receive that its MPICAST_Mcast_irecv
            // completed): no step, which would only probe the host MPI for segments (under
            // Open MPI a round of its progress engine, a yield with `mpi_yield_when_idle`,
            // 15 to 40 us on a loaded host). The next call steps.
            // SAFETY: as the caller promises.
            if let Some(s) = unsafe { look(CALL, None, request, status, true) } {
                return s;
            }
            let mut idle = crate::host::progress::Pause::default();
            let mut linger = crate::presence::Linger::new(CALL, 0);
            loop {
                if let Err(s) = progress() {
                    return s;
                }
                // SAFETY: as the caller promises.
                if let Some(s) = unsafe { look(CALL, None, request, status, true) } {
                    return s;
                }
                linger.tick();
                idle.pause();
            }
        },
    )
}

/// One progress step; `*flag_out` becomes 1 when `*request` is complete (then as
/// MPICAST_Wait), else 0.
///
/// # Safety
/// As MPICAST_Wait; `flag_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Test(
    request: *mut *mut MPICAST_Request,
    flag_out: *mut c_int,
    status: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Test",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Test";
            if let Err(s) = check::non_null(CALL, request, "request")
                .and_then(|()| check::non_null(CALL, flag_out, "flag_out"))
            {
                return s;
            }
            if let Err(s) = progress() {
                return s;
            }
            // SAFETY: as the caller promises.
            let r = unsafe { look(CALL, None, request, status, false) };
            // SAFETY: checked non-NULL.
            unsafe { flag_out.write(c_int::from(r.is_some())) };
            r.unwrap_or(OK)
        },
    )
}

/// The status slot `i` of an array (or MPI_STATUSES_IGNORE: none).
fn slot(statuses: *mut mpi_sys::MPI_Status, i: usize) -> *mut mpi_sys::MPI_Status {
    if statuses.is_null() || statuses == host::statuses_ignore() {
        host::status_ignore()
    } else {
        // SAFETY: an array of at least `count` statuses (the caller's contract).
        unsafe { statuses.add(i) }
    }
}

/// Waits for all `count` requests (NULL ones are complete), as MPICAST_Wait each; returns the
/// first non-OK status code, after all completed. A negative `count` is MPICAST_ERR_ARG (as
/// in MPICAST_Testany and MPICAST_Testsome).
///
/// # Safety
/// `requests` holds `count` request pointers; `statuses` is MPI_STATUSES_IGNORE or holds
/// `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Waitall(
    count: c_int,
    requests: *mut *mut MPICAST_Request,
    statuses: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Waitall",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Waitall";
            let n = match check::count(CALL, count, 0, "count") {
                Ok(n) => n,
                Err(s) => return s,
            };
            if n > 0 && requests.is_null() {
                return check::refuse(CALL, NULL_ARG, "requests is NULL");
            }
            let mut first = OK;
            let mut left = n;
            let mut idle = crate::host::progress::Pause::default();
            let mut linger = crate::presence::Linger::new(CALL, 0);
            let mut done = vec![false; n];
            while left > 0 {
                if let Err(s) = progress() {
                    return s;
                }
                for (i, d) in done.iter_mut().enumerate() {
                    if *d {
                        continue;
                    }
                    // SAFETY: slot i of the caller's array.
                    let s =
                        unsafe { look(CALL, Some(i), requests.add(i), slot(statuses, i), true) };
                    if let Some(s) = s {
                        *d = true;
                        left -= 1;
                        if first == OK {
                            first = s;
                        }
                    }
                }
                if left > 0 {
                    linger.tick();
                    idle.pause();
                }
            }
            first
        },
    )
}

/// One progress step; if one of the `count` requests is complete (a non-NULL one), completes
/// it as MPICAST_Wait, sets `*index_out` to its index and `*flag_out` to 1; otherwise
/// `*flag_out` is 0 (and `*index_out` MPI_UNDEFINED when every request is NULL).
///
/// # Safety
/// `requests` holds `count` request pointers; `index_out` and `flag_out` writable; `status`
/// MPI_STATUS_IGNORE or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Testany(
    count: c_int,
    requests: *mut *mut MPICAST_Request,
    index_out: *mut c_int,
    flag_out: *mut c_int,
    status: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Testany",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Testany";
            let n = match check::count(CALL, count, 0, "count") {
                Ok(n) => n,
                Err(s) => return s,
            };
            if n > 0 && requests.is_null() {
                return check::refuse(CALL, NULL_ARG, "requests is NULL");
            }
            if let Err(s) = check::non_null(CALL, index_out, "index_out")
                .and_then(|()| check::non_null(CALL, flag_out, "flag_out"))
            {
                return s;
            }
            if let Err(s) = progress() {
                return s;
            }
            let mut any_live = false;
            for i in 0..n {
                // SAFETY: slot i of the caller's array.
                if unsafe { *requests.add(i) }.is_null() {
                    continue;
                }
                any_live = true;
                // SAFETY: as the caller promises.
                let s = unsafe { look(CALL, Some(i), requests.add(i), status, false) };
                if let Some(s) = s {
                    // SAFETY: checked non-NULL.
                    unsafe {
                        index_out.write(i as c_int);
                        flag_out.write(1);
                    }
                    return s;
                }
            }
            // SAFETY: checked non-NULL.
            unsafe {
                index_out.write(host::undefined());
                // Every request NULL: complete, as MPI_Testany says.
                flag_out.write(c_int::from(!any_live));
            }
            if !any_live {
                empty_status(status);
            }
            OK
        },
    )
}

/// One progress step; completes every complete request among the `count` (non-NULL ones),
/// writing their indices to `indices` and their number to `*outcount_out` (MPI_UNDEFINED when
/// every request is NULL).
///
/// # Safety
/// `requests` holds `count` request pointers; `indices` room for `count` ints; `statuses`
/// MPI_STATUSES_IGNORE or `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Testsome(
    count: c_int,
    requests: *mut *mut MPICAST_Request,
    outcount_out: *mut c_int,
    indices: *mut c_int,
    statuses: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Testsome",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Testsome";
            let n = match check::count(CALL, count, 0, "count") {
                Ok(n) => n,
                Err(s) => return s,
            };
            if n > 0 && (requests.is_null() || indices.is_null()) {
                return check::refuse(CALL, NULL_ARG, "requests or indices is NULL");
            }
            if let Err(s) = check::non_null(CALL, outcount_out, "outcount_out") {
                return s;
            }
            if let Err(s) = progress() {
                return s;
            }
            let (mut k, mut any_live, mut first) = (0usize, false, OK);
            for i in 0..n {
                // SAFETY: slot i of the caller's array.
                if unsafe { *requests.add(i) }.is_null() {
                    continue;
                }
                any_live = true;
                // SAFETY: as the caller promises; slot k of the outputs.
                let s = unsafe { look(CALL, Some(i), requests.add(i), slot(statuses, k), false) };
                if let Some(s) = s {
                    // SAFETY: room for `count` indices.
                    unsafe { indices.add(k).write(i as c_int) };
                    k += 1;
                    if first == OK {
                        first = s;
                    }
                }
            }
            let out = if any_live {
                k as c_int
            } else {
                host::undefined()
            };
            // SAFETY: checked non-NULL.
            unsafe { outcount_out.write(out) };
            first
        },
    )
}

/// Frees `*request` without waiting and sets it to NULL: a receive that has not matched is
/// withdrawn (no multicast will go to its buffer); one that has, and a multicast, complete
/// unseen. A GOAL run's request cannot be freed (MPICAST_ERR_ARG).
///
/// # Safety
/// `request` points to NULL or a live request.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Request_free(request: *mut *mut MPICAST_Request) -> c_int {
    guard(
        "MPICAST_Request_free",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Request_free";
            if let Err(s) = check::non_null(CALL, request, "request") {
                return s;
            }
            // SAFETY: the caller's pointer.
            let r = unsafe { *request };
            if r.is_null() {
                return OK;
            }
            if !is_live(r) {
                return not_live(CALL, "*request");
            }
            // SAFETY: a live request.
            if !unsafe { &*r }.goal.is_null() {
                return check::refuse(
                    CALL,
                    ARG,
                    "*request is a GOAL run's, owned by its MPICAST_Goal: complete it with \
                     MPICAST_Goal_wait or free the handle",
                );
            }
            // SAFETY: an engine request the caller owns, live.
            let req = unsafe { release(r) };
            if let Some(state) = &req.op {
                if !state.is_done() {
                    forward::forget_everywhere(state);
                }
            }
            // SAFETY: the caller's pointer.
            unsafe { *request = std::ptr::null_mut() };
            OK
        },
    )
}

/// Makes `*request` (of MPICAST_Imcast or MPICAST_Mcast_irecv) into an MPI request in
/// `*mpi_request_out`, which the application waits for or tests with MPI_Wait, MPI_Waitany,
/// MPI_Testsome... among its own requests, and which says in its status what MPICAST_Wait
/// would (source, tag, MPI_Get_count, MPI_ERR_TRUNCATE). `*request` is consumed (set to
/// NULL). Only with the progress thread (MPICAST_PROGRESS=thread or auto, and the host
/// granted MPI_THREAD_MULTIPLE): it completes the MPI request, and forwards meanwhile; otherwise
/// MPICAST_ERR_NO_THREAD and nothing changes. A GOAL run's request cannot be converted
/// (MPICAST_ERR_ARG).
///
/// # Safety
/// `request` points to a live request pointer; `mpi_request_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Request_mpi(
    request: *mut *mut MPICAST_Request,
    mpi_request_out: *mut mpi_sys::MPI_Request,
) -> c_int {
    guard(
        "MPICAST_Request_mpi",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Request_mpi";
            if let Err(s) = check::non_null(CALL, request, "request")
                .and_then(|()| check::non_null(CALL, mpi_request_out, "mpi_request_out"))
            {
                return s;
            }
            // SAFETY: the caller's pointer.
            let r = unsafe { *request };
            if r.is_null() {
                return check::refuse(CALL, NULL_ARG, "*request is NULL");
            }
            if !is_live(r) {
                return not_live(CALL, "*request");
            }
            // SAFETY: a live request.
            let req = unsafe { &*r };
            let Some(state) = req.op.clone() else {
                return check::refuse(
                    CALL,
                    ARG,
                    "*request is a GOAL run's; it cannot be converted",
                );
            };
            if !crate::transport::progress::thread::serve_forwarding() {
                return check::refuse(
                    CALL,
                    super::NO_THREAD,
                    "needs the progress thread (MPICAST_PROGRESS=thread, or auto under \
                     MPI_THREAD_MULTIPLE)",
                );
            }
            match host::grequest::start(state) {
                Ok(m) => {
                    // SAFETY: checked non-NULL; the engine request is the caller's, consumed.
                    unsafe {
                        mpi_request_out.write(m);
                        drop(release(r));
                        *request = std::ptr::null_mut();
                    }
                    OK
                }
                Err(_) => ERR_MPI,
            }
        },
    )
}
