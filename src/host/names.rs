//! The launcher's name service (`MPI_Publish_name` / `MPI_Lookup_name`), as a small
//! key-value store that every process of a job reaches without sending anything to another
//! rank: what `presence` uses to learn which ranks loaded mpicast, with which settings, and
//! which of them wait in mpicast's setup. Under Open MPI the names go to mpirun's PMIx
//! server, under MPICH to Hydra's; both answer a lookup of an unknown name at once.
//!
//! Every call here is a local MPI call (no message to another rank, nothing another rank
//! can receive), made with the error handlers of MPI_COMM_WORLD and MPI_COMM_SELF (where
//! MPI-3 and MPI-4 raise errors of these calls) set to return for its duration, so that a
//! launcher without a name service only makes the answers empty.

use super::{check, MpiResult, SUCCESS};
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};

extern "C" {
    static MPICAST_C_ERRORS_RETURN: mpi_sys::MPI_Errhandler;
    static MPICAST_C_MAX_PORT_NAME: c_int;
}

/// The longest value a name can hold (MPI_MAX_PORT_NAME, less the terminating NUL): 255
/// bytes under MPICH, 1023 under Open MPI.
pub fn max_value_len() -> usize {
    // SAFETY: an initialised constant of the C shim.
    (unsafe { MPICAST_C_MAX_PORT_NAME }).max(1) as usize - 1
}

/// Runs `f` with errors of calls without a communicator returned, not fatal.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> R {
    let comms = [super::comm_world(), super::comm_self()];
    // SAFETY: MPI_Errhandler is a plain handle.
    let mut saved: [mpi_sys::MPI_Errhandler; 2] = unsafe { std::mem::zeroed() };
    let mut ok = [false; 2];
    for (i, c) in comms.iter().enumerate() {
        // SAFETY: writes one handle; valid while MPI is initialised.
        ok[i] = unsafe { mpi_sys::PMPI_Comm_get_errhandler(*c, &mut saved[i]) } == SUCCESS;
        if ok[i] {
            // SAFETY: a predefined error handler on a predefined communicator.
            unsafe { mpi_sys::PMPI_Comm_set_errhandler(*c, MPICAST_C_ERRORS_RETURN) };
        }
    }
    let r = f();
    for (i, c) in comms.iter().enumerate() {
        if ok[i] {
            // SAFETY: puts back the handler we read, then drops the reference the get gave us.
            unsafe {
                mpi_sys::PMPI_Comm_set_errhandler(*c, saved[i]);
                mpi_sys::PMPI_Errhandler_free(&mut saved[i]);
            }
        }
    }
    r
}

fn cstring(s: &str) -> Option<CString> {
    CString::new(s).ok()
}

/// Publishes `value` under `service`; false when the name service refused (no service, or
/// the name is taken).
pub fn publish(service: &str, value: &str) -> bool {
    let (Some(s), Some(v)) = (cstring(service), cstring(value)) else {
        return false;
    };
    if value.len() > max_value_len() {
        return false;
    }
    quietly(|| {
        // SAFETY: NUL-terminated strings that live across the call.
        check(unsafe { mpi_sys::PMPI_Publish_name(s.as_ptr(), super::info_null(), v.as_ptr()) })
            .is_ok()
    })
}

/// The value published under `service`, if any.
pub fn lookup(service: &str) -> Option<String> {
    let s = cstring(service)?;
    let mut buf = vec![0 as c_char; max_value_len() + 1];
    let rc: MpiResult<()> = quietly(|| {
        // SAFETY: `buf` holds MPI_MAX_PORT_NAME characters, as the call requires.
        check(unsafe {
            mpi_sys::PMPI_Lookup_name(s.as_ptr(), super::info_null(), buf.as_mut_ptr())
        })
    });
    rc.ok()?;
    let last = buf.len() - 1;
    buf[last] = 0;
    // SAFETY: NUL-terminated within `buf` (the last byte is NUL).
    Some(
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Withdraws a name this process published with `value`.
pub fn unpublish(service: &str, value: &str) {
    let (Some(s), Some(v)) = (cstring(service), cstring(value)) else {
        return;
    };
    quietly(|| {
        // SAFETY: NUL-terminated strings that live across the call.
        unsafe { mpi_sys::PMPI_Unpublish_name(s.as_ptr(), super::info_null(), v.as_ptr()) }
    });
}
