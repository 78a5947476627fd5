//! Generalized requests (MPI_Grequest_start): an mpicast request made into an MPI_Request,
//! so that the application can wait for it with MPI_Wait, MPI_Waitany, MPI_Testsome... among
//! its own requests. The MPI request completes when mpicast's does: the progress thread calls
//! MPI_Grequest_complete (`complete_done`), which is why this needs MPICAST_PROGRESS=thread
//! (a generalized request completes only when someone completes it; nobody would, while the
//! application sits in MPI_Wait).

use super::{check, MpiResult, SUCCESS};
use crate::lock::lock;
use std::os::raw::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// What a generalized request waits for: an mpicast request.
pub trait Completion: Send + Sync {
    fn is_done(&self) -> bool;
    /// (source, tag, error class, bytes) for the status.
    fn status(&self) -> (c_int, c_int, c_int, u64);
}

type Shared = Arc<dyn Completion>;

/// The generalized requests whose mpicast request is not done yet.
struct Pending(Vec<(Shared, mpi_sys::MPI_Request)>);

// SAFETY: request handles are process-wide values; they are used from the progress thread
// only when the host granted MPI_THREAD_MULTIPLE (the only case this module is used).
unsafe impl Send for Pending {}

static PENDING: Mutex<Pending> = Mutex::new(Pending(Vec::new()));

unsafe extern "C" fn query(extra: *mut c_void, status: *mut mpi_sys::MPI_Status) -> c_int {
    super::callback("a generalized request's query", || {
        // SAFETY: `extra` is the box made in `start`, alive until `free` runs.
        let state = unsafe { &*(extra as *const Shared) };
        let (source, tag, error, bytes) = state.status();
        // SAFETY: the caller's status argument, NULL, MPI_STATUS_IGNORE or writable.
        unsafe { super::status_fill(status, source, tag, error, bytes) };
        SUCCESS
    })
}

unsafe extern "C" fn free(extra: *mut c_void) -> c_int {
    super::callback("a generalized request's free", || {
        // SAFETY: the box `start` leaked into `extra`, given back once.
        drop(unsafe { Box::from_raw(extra as *mut Shared) });
        SUCCESS
    })
}

unsafe extern "C" fn cancel(_extra: *mut c_void, _complete: c_int) -> c_int {
    // A multicast cannot be called back; MPI_Cancel on it does nothing.
    super::callback("a generalized request's cancel", || SUCCESS)
}

/// An MPI request that completes with `state` (its status as mpicast's). Not a `Request`
/// of host::p2p: the application owns it, and MPI_Wait frees it.
pub fn start(state: Shared) -> MpiResult<mpi_sys::MPI_Request> {
    let extra = Box::into_raw(Box::new(state.clone())) as *mut c_void;
    // SAFETY: MPI_Request is a plain handle.
    let mut req: mpi_sys::MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: the callbacks have MPI's signatures; `extra` lives until `free`.
    let rc = unsafe {
        mpi_sys::PMPI_Grequest_start(Some(query), Some(free), Some(cancel), extra, &mut req)
    };
    if rc != SUCCESS {
        // SAFETY: MPI did not take it: give the box back.
        drop(unsafe { Box::from_raw(extra as *mut Shared) });
        check(rc)?;
    }
    lock(&PENDING).0.push((state, req));
    Ok(req)
}

/// Completes the generalized requests whose mpicast request is done (the progress thread's
/// step). True if any completed.
pub fn complete_done() -> bool {
    let mut p = lock(&PENDING);
    let before = p.0.len();
    p.0.retain(|(state, req)| {
        if !state.is_done() {
            return true;
        }
        // SAFETY: a live generalized request of ours, completed once.
        unsafe { mpi_sys::PMPI_Grequest_complete(*req) };
        false
    });
    p.0.len() != before
}
