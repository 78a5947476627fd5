//! The non-blocking multicast to any set of ranks ("A Scalable Non-blocking Multicast Scheme
//! for Distributed DAG Scheduling", ICCS 2009): MPICAST_Mcast_enable (collective, once per
//! communicator), MPICAST_Imcast from any rank to any set of the others, MPICAST_Mcast_irecv
//! and MPICAST_Mcast_iprobe on the receiving side, which knows only the source and the tag,
//! as for a point-to-point message. The requests are completed by the calls of `request`.
//! Arguments are checked before anything is done: a bad one changes nothing.

use super::super::guard;
use super::check;
use super::request::{progress, MPICAST_Request};
use super::{want, SendArgs, ERR_MPI, INTERNAL, NOT_ENABLED, OK};
use crate::ffi::error::engine_status;
use crate::host::{self, buffer::UserBuf, MPI_Comm, MPI_Datatype};
use crate::lock::lock;
use crate::session;
use crate::transport::forward::{Engine, Outcome, ReqState};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The verbose line about the progress thread is printed once per process.
static SAID_THREAD: AtomicBool = AtomicBool::new(false);

/// The engine of an enabled communicator.
fn engine(call: &str, comm: MPI_Comm) -> Result<Arc<Mutex<Engine>>, c_int> {
    check::session().mcast_engine(comm).ok_or_else(|| {
        check::refuse(
            call,
            NOT_ENABLED,
            "comm is not enabled: call MPICAST_Mcast_enable on it first (collective)",
        )
    })
}

/// Enables the multicast calls on `comm`: collective over `comm` (every rank calls it, like
/// MPI_Comm_dup). Each rank learns every rank's topology ID (the host it runs on, hosts
/// ordered by interface address, then its place on that host) and builds its routing table
/// (m rows of c entries, with holes where no rank has a prefix); the multicasts travel on a
/// duplicate of `comm` that only mpicast uses. A second call on the same communicator does
/// nothing. MPICAST_ERR_ARG for MPI_COMM_NULL or an intercommunicator.
///
/// Progress: from then on a multicast that has started completes as long as every rank it
/// passes through calls MPI now and then or waits inside any blocking MPI call: every MPI
/// call of this process (blocking host calls included, made non-blocking and polled) moves
/// the multicasts routed through it. A blocking collective on a communicator that reaches
/// ranks outside every enabled one stays blocking; the progress thread (MPICAST_PROGRESS)
/// covers that and long computations (docs/imcast.md, "Progress").
///
/// # Safety
/// `comm` is a valid communicator handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Mcast_enable(comm: MPI_Comm) -> c_int {
    guard(
        "MPICAST_Mcast_enable",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Mcast_enable";
            if let Err(s) = check::on_comm(CALL, comm) {
                return s;
            }
            let s = check::session();
            match s.mcast_enable(comm) {
                Ok(_) => {
                    // With MPICAST_PROGRESS=thread the multicasts move while the rank computes.
                    if crate::transport::progress::thread::serve_forwarding()
                        && s.cfg.verbose >= 1
                        && host::comm::rank(comm).is_ok_and(|r| r == 0)
                        && !SAID_THREAD.swap(true, Ordering::Relaxed)
                    {
                        session::say(
                            "mpicast: the progress thread forwards multicasts while ranks compute",
                        );
                    }
                    OK
                }
                Err(_) => ERR_MPI,
            }
        },
    )
}

/// Starts a multicast of `count` elements of `datatype` at `buf` with `tag` (0..32767) to the
/// `ndests` ranks of `comm` listed in `dests` (distinct, none of them this rank; at least one).
/// Not collective: only the destinations receive it, each with MPICAST_Mcast_irecv naming
/// this rank (or MPI_ANY_SOURCE) and the tag (or MPI_ANY_TAG); ranks that are neither root
/// nor destination may pass it on (MPICAST_IMCAST_ROUTE) from inside their own mpicast calls.
/// The data is taken when the call returns: `buf` may be reused at once, and
/// `*request_out` (the caller's, completed by MPICAST_Wait and the like) completes at the
/// first test. Multicasts of one root to one rank with one tag are received in their order.
/// MPICAST_ERR_NOT_ENABLED before MPICAST_Mcast_enable on `comm`; MPICAST_ERR_ARG for a bad
/// count, tag, destination list or communicator (nothing is sent).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (NULL only with count 0); `dests` holds
/// `ndests` ints; `request_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Imcast(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dests: *const c_int,
    ndests: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request_out: *mut *mut MPICAST_Request,
) -> c_int {
    guard(
        "MPICAST_Imcast",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Imcast";
            let args = SendArgs {
                buf,
                count,
                datatype,
                list: dests,
                n: ndests,
                list_name: "dests",
                n_name: "ndests",
                tag,
                comm,
            };
            // SAFETY: `dests` holds `ndests` ints, as the caller promises.
            let checked = unsafe { args.check(CALL, request_out) }
                .and_then(|(ranks, ub)| Ok((ranks, engine(CALL, comm)?, ub)));
            let (ranks, e, ub) = match checked {
                Ok(c) => c,
                Err(s) => return s,
            };
            let sent = ub.with_send_bytes(|d| lock(&e).imcast(&ranks, tag, d));
            match sent {
                Ok(Ok(state)) => {
                    // SAFETY: checked non-NULL.
                    unsafe { request_out.write(MPICAST_Request::op(state)) };
                    crate::stats::add(&crate::stats::COUNTERS.imcast, 1);
                    OK
                }
                Ok(Err(e)) => engine_status(e),
                Err(_) => ERR_MPI,
            }
        },
    )
}

/// Posts a receive of a multicast from `source` (or MPI_ANY_SOURCE; MPI_PROC_NULL completes at
/// once, empty) with `tag` (or MPI_ANY_TAG) into `count` elements of `datatype` at `buf`.
/// Receives match multicasts as MPI matches messages: in the order they were posted, and one
/// root's multicasts in the order it sent them. A multicast longer than the buffer fills it and
/// completes with MPICAST_ERR_TRUNCATE (the status's MPI_ERROR is MPI_ERR_TRUNCATE); a shorter
/// one fills its length (MPI_Get_count on the status tells it). A multicast that comes before
/// its receive waits in mpicast's memory (MPICAST_IMCAST_BUFFER bounds it).
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, valid until the request completes;
/// `request_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Mcast_irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request_out: *mut *mut MPICAST_Request,
) -> c_int {
    guard(
        "MPICAST_Mcast_irecv",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Mcast_irecv";
            let checked = (|| {
                check::non_null(CALL, request_out, "request_out")?;
                let (size, me) = check::on_comm(CALL, comm)?;
                check::count(CALL, count, 0, "count")?;
                if count > 0 {
                    check::non_null(CALL, buf, "buf")?;
                }
                check::datatype(CALL, datatype, "datatype")?;
                want(CALL, source, tag, size, me)
            })();
            let w = match checked {
                Ok(w) => w,
                Err(s) => return s,
            };
            let Some(w) = w else {
                let done = ReqState::done_with(Outcome {
                    source: host::proc_null(),
                    tag: host::p2p::any_tag(),
                    bytes: 0,
                    error: host::SUCCESS,
                });
                // SAFETY: checked non-NULL.
                unsafe { request_out.write(MPICAST_Request::op(done)) };
                return OK;
            };
            let e = match engine(CALL, comm) {
                Ok(e) => e,
                Err(s) => return s,
            };
            let Ok(ub) = UserBuf::describe(buf, i64::from(count), datatype, comm) else {
                return check::refuse(CALL, ERR_MPI, "the host MPI cannot describe the buffer");
            };
            let r = lock(&e).irecv(ub, w);
            match r {
                Ok(state) => {
                    // SAFETY: checked non-NULL.
                    unsafe { request_out.write(MPICAST_Request::op(state)) };
                    OK
                }
                Err(e) => engine_status(e),
            }
        },
    )
}

/// Whether a multicast that a receive of (`source`, `tag`) would take has come (its first
/// part, at least): `*flag_out` 1 and `*status` its source, tag and length (MPI_Get_count), or
/// 0. Forwards what is waiting meanwhile. The next matching MPICAST_Mcast_irecv on this
/// communicator takes that multicast, unless another receive posted before it does.
///
/// # Safety
/// `flag_out` writable; `status` MPI_STATUS_IGNORE or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Mcast_iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag_out: *mut c_int,
    status: *mut mpi_sys::MPI_Status,
) -> c_int {
    guard(
        "MPICAST_Mcast_iprobe",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Mcast_iprobe";
            let checked = (|| {
                check::non_null(CALL, flag_out, "flag_out")?;
                let (size, me) = check::on_comm(CALL, comm)?;
                want(CALL, source, tag, size, me)
            })();
            let w = match checked {
                Ok(Some(w)) => w,
                Ok(None) => {
                    // SAFETY: the caller's status argument, NULL, MPI_STATUS_IGNORE or writable.
                    unsafe {
                        host::status_fill(status, host::proc_null(), host::p2p::any_tag(), 0, 0)
                    };
                    // SAFETY: checked non-NULL.
                    unsafe { flag_out.write(1) };
                    return OK;
                }
                Err(s) => return s,
            };
            let e = match engine(CALL, comm) {
                Ok(e) => e,
                Err(s) => return s,
            };
            if let Err(s) = progress() {
                return s;
            }
            let found = lock(&e).iprobe(w);
            match found {
                Ok(Some(a)) => {
                    // SAFETY: the caller's status argument, NULL, MPI_STATUS_IGNORE or writable.
                    unsafe {
                        host::status_fill(status, a.key.root as c_int, a.tag, host::SUCCESS, a.len)
                    };
                    // SAFETY: checked non-NULL.
                    unsafe { flag_out.write(1) };
                    OK
                }
                Ok(None) => {
                    // SAFETY: checked non-NULL.
                    unsafe { flag_out.write(0) };
                    OK
                }
                Err(e) => engine_status(e),
            }
        },
    )
}
