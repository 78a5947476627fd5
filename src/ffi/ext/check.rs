//! The arguments of the extension calls, checked before anything is done, and what a refused
//! call says. Every refusal returns its status code and leaves a message naming the call and
//! the argument: `MPICAST_Last_error` gives it (per thread), MPICAST_VERBOSE>=1 prints every
//! one, and the first of a process is printed in any case (with how to see the others).
//! Handles are checked with the host's own tables before mpicast calls anything on them
//! (`host::valid`): a freed communicator or datatype is an error, not a crash.

use super::{ARG, NO_MPI, NULL_ARG};
use crate::host::{self, MPI_Comm, MPI_Datatype};
use crate::session::{self, Session};
use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// The message of this thread's last refused call.
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Whether a refusal was printed already by this process.
static SAID_ONE: AtomicBool = AtomicBool::new(false);

fn verbose() -> bool {
    match session::started() {
        Some(s) => s.cfg.verbose >= 1,
        None => std::env::var("MPICAST_VERBOSE")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .is_some_and(|v| v >= 1),
    }
}

/// Refuses `call` with `code`: records why (for MPICAST_Last_error), prints it under
/// MPICAST_VERBOSE>=1 or when it is the first of this process, and returns `code`.
pub(crate) fn refuse(call: &str, code: c_int, why: &str) -> c_int {
    let msg = format!("mpicast: {call}: {why}");
    let first = !SAID_ONE.swap(true, Ordering::Relaxed);
    if verbose() {
        session::say(&msg);
    } else if first {
        session::say(&format!(
            "{msg} (MPICAST_VERBOSE=1 prints every refused call; MPICAST_Last_error gives the \
             last one's reason)"
        ));
    }
    remember(&msg);
    code
}

/// Records `msg` as this thread's last refusal without printing it (the caller printed it).
pub(crate) fn remember(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// MPI is initialised and not finalized (every extension call but the local ones needs it).
pub(super) fn mpi_up(call: &str) -> Result<(), c_int> {
    if host::is_active() {
        Ok(())
    } else {
        Err(refuse(
            call,
            NO_MPI,
            "MPI is not initialised, or finalized already: call it between MPI_Init and \
             MPI_Finalize",
        ))
    }
}

/// The session; a bad MPICAST_* setting stops the job with one message naming it (as the
/// first MPI_Bcast or MPI_Barrier does).
pub(super) fn session() -> &'static Session {
    // An extension call is not a send fan-out detection holds: the held ones go first (an
    // error there is the engine's, which ends the job or shows at the next MPI call).
    let _ = super::super::release_held();
    crate::coll::session_or_die()
}

/// `p` is not NULL.
pub(super) fn non_null<T>(call: &str, p: *const T, name: &str) -> Result<(), c_int> {
    if p.is_null() {
        Err(refuse(call, NULL_ARG, &format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

/// A live intracommunicator: its size. MPI_COMM_NULL, a freed handle and an
/// intercommunicator are refused with MPICAST_ERR_ARG.
pub(super) fn intra(call: &str, comm: MPI_Comm, name: &str) -> Result<u32, c_int> {
    if comm == host::comm_null() {
        return Err(refuse(call, ARG, &format!("{name} is MPI_COMM_NULL")));
    }
    if !host::valid::comm_live(comm) {
        return Err(refuse(
            call,
            ARG,
            &format!("{name} is not a live communicator (freed, or never made)"),
        ));
    }
    match (host::comm::is_inter(comm), host::comm::size(comm)) {
        (Ok(false), Ok(n)) => Ok(n),
        (Ok(true), _) => Err(refuse(
            call,
            ARG,
            &format!("{name} is an intercommunicator; the multicast calls take intracommunicators"),
        )),
        _ => Err(refuse(
            call,
            ARG,
            &format!("{name}: the host MPI cannot query it"),
        )),
    }
}

/// MPI is up and `comm` (the argument of that name) a live intracommunicator: its size and
/// this rank's place in it.
pub(super) fn on_comm(call: &str, comm: MPI_Comm) -> Result<(u32, u32), c_int> {
    mpi_up(call)?;
    let size = intra(call, comm, "comm")?;
    let me = host::comm::rank(comm).map_err(|_| super::ERR_MPI)?;
    Ok((size, me))
}

/// A live datatype (not MPI_DATATYPE_NULL, not freed).
pub(super) fn datatype(call: &str, t: MPI_Datatype, name: &str) -> Result<(), c_int> {
    if t == host::datatype_null() {
        return Err(refuse(call, ARG, &format!("{name} is MPI_DATATYPE_NULL")));
    }
    if !host::valid::type_live(t) {
        return Err(refuse(
            call,
            ARG,
            &format!("{name} is not a live datatype (freed, or never made)"),
        ));
    }
    Ok(())
}

/// A count of at least `min`.
pub(super) fn count(call: &str, n: c_int, min: c_int, name: &str) -> Result<usize, c_int> {
    if n < min {
        Err(refuse(
            call,
            ARG,
            &format!("{name} is {n}; it must be {min} or more"),
        ))
    } else {
        Ok(n as usize)
    }
}

/// Why the last extension call of this thread that was refused (an error status other than
/// MPICAST_ERR_TRUNCATE) was refused: the call and the argument, e.g. "mpicast:
/// MPICAST_Imcast: dests[2] is 5; comm has 4 ranks (0 to 3)". An empty string when none was.
/// Never NULL; valid until the next refused call of this thread; the caller must not free it.
#[no_mangle]
pub extern "C" fn MPICAST_Last_error() -> *const c_char {
    // The string lives in the thread-local cell until the next refusal replaces it.
    LAST.with(|l| l.borrow().as_ptr())
}
