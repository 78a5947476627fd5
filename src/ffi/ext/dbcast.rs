//! Dynamic broadcast ("Using Dynamic Broadcasts to improve Task-Based Runtime Performances",
//! Euro-Par 2020): MPICAST_Dbcast_enable (collective, once per communicator), MPICAST_Dbcast
//! from a root that alone knows the recipients, who receive with their ordinary MPI receives
//! (`ffi::dbcast`), and the runtime's detection of broadcasts: MPICAST_Send_defer registers
//! sends of one datum before it is ready, MPICAST_Send_release sends it to all of them at
//! once (one recipient: a plain send; several: one dynamic broadcast). Arguments are checked
//! before anything is done: a bad one changes nothing.

use super::super::guard;
use super::check;
use super::request::MPICAST_Request;
use super::{dest_list, send_tag, SendArgs, ARG, ERR_MPI, INTERNAL, NOT_ENABLED, OK, UNKNOWN_KEY};
use crate::ffi::error::engine_status;
use crate::host::recv::{self, HostReq};
use crate::host::{self, buffer::UserBuf, MPI_Comm, MPI_Datatype, SendComm};
use crate::lock::lock;
use crate::transport::dbcast as db;
use crate::transport::forward::{Engine, Outcome, ReqState};
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// Turns dynamic broadcast on for `comm`: collective over `comm` (every rank calls it, like
/// MPI_Comm_dup; it includes MPICAST_Mcast_enable). From then on, any rank's receives on
/// `comm` (MPI_Recv, MPI_Irecv with the wait and test calls, MPI_Probe, MPI_Iprobe) may be
/// completed by a dynamic broadcast, and this rank forwards the broadcasts routed through it
/// from inside every MPI call, blocking ones included, as MPICAST_Mcast_enable says (or from
/// the progress thread with MPICAST_PROGRESS). A
/// second call does nothing. MPICAST_ERR_ARG for MPI_COMM_NULL or an intercommunicator.
///
/// # Safety
/// `comm` is a valid communicator handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Dbcast_enable(comm: MPI_Comm) -> c_int {
    guard(
        "MPICAST_Dbcast_enable",
        || INTERNAL,
        || {
            if let Err(s) = check::on_comm("MPICAST_Dbcast_enable", comm) {
                return s;
            }
            match check::session().dbcast_enable(comm) {
                Ok(_) => {
                    crate::transport::progress::thread::serve_forwarding();
                    OK
                }
                Err(_) => ERR_MPI,
            }
        },
    )
}

/// The dynamic-broadcast engine of `comm`, or MPICAST_ERR_NOT_ENABLED.
fn engine(call: &str, comm: MPI_Comm) -> Result<Arc<Mutex<Engine>>, c_int> {
    check::session();
    db::engine_of(comm).ok_or_else(|| {
        check::refuse(
            call,
            NOT_ENABLED,
            "comm is not enabled for dynamic broadcast: call MPICAST_Dbcast_enable on it first \
             (collective)",
        )
    })
}

/// Starts a dynamic broadcast of `count` elements of `datatype` at `buf` with `tag`
/// (0..32767) from this rank to the `n` ranks of `comm` in `recipients` (distinct, not this
/// rank, at least one), with `priorities` (n ints, or NULL: higher ones receive earlier).
/// Not collective: each recipient receives it with an ordinary receive naming this rank (or
/// MPI_ANY_SOURCE) and the tag (or MPI_ANY_TAG), and never needs to know that a broadcast
/// brought it. The data travels down a binomial tree over the recipients (a pipelined chain
/// for long messages, MPICAST_DBCAST_CHAIN_BYTES); each message carries the root, the tag and
/// the recipients of the subtree below with their priorities.
/// The data is copied when the call returns: `buf` may be reused at once and `*request_out`
/// completes at the first test. MPICAST_ERR_NOT_ENABLED before MPICAST_Dbcast_enable on
/// `comm`; MPICAST_ERR_ARG for a bad count, tag or recipient list (nothing is sent).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (NULL only with count 0); `recipients` holds `n`
/// ints, `priorities` NULL or `n` ints; `request_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Dbcast(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    recipients: *const c_int,
    priorities: *const c_int,
    n: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request_out: *mut *mut MPICAST_Request,
) -> c_int {
    guard(
        "MPICAST_Dbcast",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Dbcast";
            let args = SendArgs {
                buf,
                count,
                datatype,
                list: recipients,
                n,
                list_name: "recipients",
                n_name: "n (the number of recipients)",
                tag,
                comm,
            };
            // SAFETY: `recipients` holds `n` ints, as the caller promises.
            let checked = unsafe { args.check(CALL, request_out) }
                .and_then(|(ranks, ub)| Ok((ranks, engine(CALL, comm)?, ub)));
            let (ranks, e, ub) = match checked {
                Ok(c) => c,
                Err(s) => return s,
            };
            let prio = (!priorities.is_null()).then(|| {
                // SAFETY: `n` ints, as the caller promises.
                unsafe { std::slice::from_raw_parts(priorities, n as usize) }
            });
            let sent = ub.with_send_bytes(|d| {
                let mut g = lock(&e);
                let (shape, order) = db::tree_order(&g, &ranks, prio, d.len());
                let ecomm = g.comm();
                g.dbcast
                    .as_mut()
                    .expect("enabled")
                    .start(ecomm, &order, shape, tag, d)
            });
            match sent {
                Ok(Ok(state)) => {
                    // SAFETY: checked non-NULL.
                    unsafe { request_out.write(MPICAST_Request::op(state)) };
                    crate::stats::add(&crate::stats::COUNTERS.dbcast, 1);
                    OK
                }
                Ok(Err(e)) => engine_status(e),
                Err(_) => ERR_MPI,
            }
        },
    )
}

/// Sends of one datum registered before it is ready.
struct Deferred {
    comm: SendComm,
    /// (destination, tag, priority), one per (destination, tag).
    sends: Vec<(u32, c_int, c_int)>,
}

static DEFERRED: Mutex<Option<HashMap<i64, Deferred>>> = Mutex::new(None);

/// Registers a send of the datum `key` to `dest` with `tag` and `priority` on `comm`, before
/// the datum is ready (a task-based runtime does it when it submits a task on another rank
/// that needs the datum). Sends of one key to the same destination with the same tag are one
/// (the higher priority kept); all sends of a key must name the same communicator. Nothing
/// is sent until MPICAST_Send_release. After the release the key is free again: a send
/// registered later starts a new datum, sent at its own release (to one destination, as a
/// plain send). MPICAST_ERR_NOT_ENABLED on a communicator without MPICAST_Dbcast_enable;
/// MPICAST_ERR_ARG for a destination outside it or this rank, a tag out of range, or another
/// communicator than the key's.
///
/// # Safety
/// `comm` is a valid communicator handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Send_defer(
    key: i64,
    dest: c_int,
    tag: c_int,
    priority: c_int,
    comm: MPI_Comm,
) -> c_int {
    guard(
        "MPICAST_Send_defer",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Send_defer";
            let checked = (|| {
                let (size, me) = check::on_comm(CALL, comm)?;
                let dest = dest_list(CALL, &[dest], "dest", true, size, me)?[0];
                send_tag(CALL, tag)?;
                engine(CALL, comm)?;
                Ok::<_, c_int>(dest)
            })();
            let dest = match checked {
                Ok(d) => d,
                Err(s) => return s,
            };
            let mut g = lock(&DEFERRED);
            let d = g
                .get_or_insert_with(HashMap::new)
                .entry(key)
                .or_insert(Deferred {
                    comm: SendComm(comm),
                    sends: Vec::new(),
                });
            if d.comm.0 != comm {
                return check::refuse(
                    CALL,
                    ARG,
                    &format!(
                        "key {key} has sends registered on another communicator; all sends of \
                         a key name the same one"
                    ),
                );
            }
            match d.sends.iter_mut().find(|s| s.0 == dest && s.1 == tag) {
                Some(s) => s.2 = s.2.max(priority),
                None => d.sends.push((dest, tag, priority)),
            }
            OK
        },
    )
}

/// The datum `key` is ready in `count` elements of `datatype` at `buf`: every send registered
/// for it goes now, those of one tag to one destination as a plain send (MPI_Isend), those of
/// one tag to several as one dynamic broadcast ordered by their priorities. `*request_out`
/// completes when `buf` may be reused. MPICAST_ERR_UNKNOWN_KEY when no send is registered
/// for `key` (nothing is sent).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (NULL only with count 0), valid until the
/// request completes; `request_out` writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Send_release(
    key: i64,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    request_out: *mut *mut MPICAST_Request,
) -> c_int {
    guard(
        "MPICAST_Send_release",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Send_release";
            let checked = (|| {
                check::non_null(CALL, request_out, "request_out")?;
                check::mpi_up(CALL)?;
                check::count(CALL, count, 0, "count")?;
                if count > 0 {
                    check::non_null(CALL, buf, "buf")?;
                }
                check::datatype(CALL, datatype, "datatype")?;
                // The key stays registered until its arguments are known to be good.
                let comm = {
                    let g = lock(&DEFERRED);
                    match g.as_ref().and_then(|m| m.get(&key)) {
                        Some(d) => d.comm.0,
                        None => {
                            return Err(check::refuse(
                                CALL,
                                UNKNOWN_KEY,
                                &format!(
                                    "key {key}: no send is registered for it (never deferred, \
                                     or released already)"
                                ),
                            ))
                        }
                    }
                };
                if !host::valid::comm_live(comm) {
                    return Err(check::refuse(
                        CALL,
                        ARG,
                        &format!("key {key}: its communicator was freed"),
                    ));
                }
                let e = engine(CALL, comm)?;
                let ub = UserBuf::describe(buf as *mut c_void, i64::from(count), datatype, comm)
                    .map_err(|_| {
                        check::refuse(CALL, ERR_MPI, "the host MPI cannot describe the buffer")
                    })?;
                Ok::<_, c_int>((comm, e, ub))
            })();
            let (comm, e, ub) = match checked {
                Ok(c) => c,
                Err(s) => return s,
            };
            let d = {
                let mut g = lock(&DEFERRED);
                match g.as_mut().and_then(|m| m.remove(&key)) {
                    Some(d) => d,
                    None => return UNKNOWN_KEY,
                }
            };
            // By tag, in the order the tags were first registered.
            let mut tags: Vec<c_int> = Vec::new();
            for s in &d.sends {
                if !tags.contains(&s.1) {
                    tags.push(s.1);
                }
            }
            let mut hosts: Vec<HostReq> = Vec::new();
            let mut g = lock(&e);
            let ecomm = g.comm();
            for tag in tags {
                let group: Vec<(u32, c_int)> = d
                    .sends
                    .iter()
                    .filter(|s| s.1 == tag)
                    .map(|s| (s.0, s.2))
                    .collect();
                if let [(dest, _)] = group[..] {
                    let side = g.dbcast.as_mut().expect("enabled");
                    if side.by_engine(dest) {
                        let r = ub.with_send_bytes(|b| side.direct(ecomm, dest, tag, b));
                        match r {
                            Ok(Ok(())) => continue,
                            Ok(Err(e)) => return engine_status(e),
                            Err(_) => return ERR_MPI,
                        }
                    }
                    side.count_plain(dest, tag);
                    // SAFETY: the caller's buffer, valid until the request completes.
                    match unsafe { recv::isend(buf, count, datatype, dest as c_int, tag, comm) } {
                        Ok(h) => hosts.push(h),
                        Err(_) => return ERR_MPI,
                    }
                } else {
                    let ranks: Vec<u32> = group.iter().map(|s| s.0).collect();
                    let prio: Vec<i32> = group.iter().map(|s| s.1).collect();
                    let (shape, order) = db::tree_order(&g, &ranks, Some(&prio), ub.bytes());
                    let side = g.dbcast.as_mut().expect("enabled");
                    let r = ub.with_send_bytes(|b| side.start(ecomm, &order, shape, tag, b));
                    match r {
                        Ok(Ok(_)) => crate::stats::add(&crate::stats::COUNTERS.dbcast, 1),
                        Ok(Err(e)) => return engine_status(e),
                        Err(_) => return ERR_MPI,
                    }
                }
            }
            let me = g.rank() as c_int;
            let state = if hosts.is_empty() {
                ReqState::done_with(Outcome {
                    source: me,
                    tag: 0,
                    bytes: 0,
                    error: host::SUCCESS,
                })
            } else {
                let s = Arc::new(ReqState::default());
                g.dbcast
                    .as_mut()
                    .expect("enabled")
                    .plain_sends(hosts, s.clone());
                s
            };
            drop(g);
            // SAFETY: checked non-NULL.
            unsafe { request_out.write(MPICAST_Request::op(state)) };
            OK
        },
    )
}
