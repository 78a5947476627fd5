//! The MPI functions mpicast replaces or wraps. Everything else resolves to the host MPI
//! directly.

use super::{guard, guard_comm};
use crate::coll;
use crate::host::{self, MPI_Comm, MPI_Datatype, MPI_Info};
use std::os::raw::{c_char, c_int, c_void};

/// MPI_Init: the host's, asking for MPI_THREAD_MULTIPLE when MPICAST_PROGRESS=thread
/// (`host::init`).
///
/// # Safety
/// The arguments of MPI_Init.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    guard("MPI_Init", host::err_other, || {
        // SAFETY: the application's arguments.
        super::after_init(unsafe { host::init::init(argc, argv, None, std::ptr::null_mut()) })
    })
}

/// MPI_Init_thread: as MPI_Init; `*provided` is what the host granted (at least
/// `required` when it can, MPI_THREAD_MULTIPLE under MPICAST_PROGRESS=thread if it can).
///
/// # Safety
/// The arguments of MPI_Init_thread.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    guard("MPI_Init_thread", host::err_other, || {
        // SAFETY: the application's arguments.
        super::after_init(unsafe { host::init::init(argc, argv, Some(required), provided) })
    })
}

/// MPI_Finalize: stops mpicast's progress thread (if it runs), then the host's. No thread
/// may be inside MPI once MPI_Finalize has begun: MPICH 4.0 aborts at the end of its
/// finalize ("pthread_mutex_destroy: Device or resource busy") when another thread made MPI
/// calls during it, even when that thread is joined from an MPI_COMM_SELF delete callback
/// (a thread polling MPI without pause: 18 jobs in 20). Bindings that call PMPI_Finalize directly still stop the thread through
/// that callback (`transport::progress::thread`).
#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    if let Some(rc) = super::release_held() {
        return rc;
    }
    guard("MPI_Finalize", host::err_other, || {
        // Where a forwarding engine spans MPI_COMM_WORLD, every rank gathers first, polled:
        // a rank that finalizes at once could leave a multicast routed through it unsent.
        let _ = host::progress::gather_first(host::comm_world());
        crate::transport::progress::thread::stop();
        host::init::finalize()
    })
}

/// MPI_Bcast over IP multicast (see the README for when the host's own is used instead).
///
/// # Safety
/// The arguments are those of MPI_Bcast, with the same requirements.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if let Some(rc) = super::release_held_on(comm) {
        return rc;
    }
    if let Some(rc) = coll::bcast_below_threshold(buffer, i64::from(count), datatype, root, comm) {
        return rc;
    }
    bcast_guarded(buffer, i64::from(count), datatype, root, comm, false)
}

/// Every broadcast the threshold did not send straight to the host: out of line, so that the
/// entry points' fast path saves no registers for it, and with at most six arguments, so
/// that they reach it by a jump (`large`: from MPI_Bcast_c).
#[inline(never)]
#[cold]
fn bcast_guarded(
    buffer: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    large: bool,
) -> c_int {
    guard_comm(
        if large { "MPI_Bcast_c" } else { "MPI_Bcast" },
        comm,
        || coll::bcast(buffer, count, datatype, root, comm),
    )
}

/// MPI_Bcast_c, the MPI-4 large-count broadcast: the same path as MPI_Bcast, counts beyond
/// 2^31 elements included. Only in builds for an MPI that has it (build.rs: MPICH 4.0 has,
/// Open MPI 4.1 has not), so that a program never finds it where its MPI has none; mpi4py
/// on MPICH calls it for every broadcast, and mpi_f08's large-count MPI_Bcast reaches it.
///
/// # Safety
/// The arguments are those of MPI_Bcast_c, with the same requirements.
#[cfg(mpicast_large_count)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_c(
    buffer: *mut c_void,
    count: mpi_sys::MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    // MPI_Count is a 64-bit integer (long or long long) in every MPI with MPI_Bcast_c.
    #[allow(clippy::unnecessary_cast)]
    let count = count as i64;
    if let Some(rc) = super::release_held_on(comm) {
        return rc;
    }
    if let Some(rc) = coll::bcast_below_threshold(buffer, count, datatype, root, comm) {
        return rc;
    }
    bcast_guarded(buffer, count, datatype, root, comm, true)
}

/// MPI_Barrier: scouts up a binary tree, one multicast release.
///
/// # Safety
/// The argument is that of MPI_Barrier.
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    if let Some(rc) = super::release_held_on(comm) {
        return rc;
    }
    guard_comm("MPI_Barrier", comm, || coll::barrier(comm))
}

/// MPI_Comm_set_info: the host's, plus mpicast noting its own hint keys (which the host
/// need not keep).
///
/// # Safety
/// The arguments are those of MPI_Comm_set_info.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    if let Some(rc) = super::release_held_on(comm) {
        return rc;
    }
    guard_comm("MPI_Comm_set_info", comm, || coll::set_info(comm, info))
}

/// MPI_Comm_dup_with_info: the host's, plus mpicast noting its own hint keys. Where a
/// forwarding engine covers `comm`, every rank gathers first in a polled barrier
/// (`host::progress::gather_first`), as for the other communicator creations.
///
/// # Safety
/// The arguments are those of MPI_Comm_dup_with_info; `newcomm` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    if let Some(rc) = super::release_held_on(comm) {
        return rc;
    }
    guard_comm("MPI_Comm_dup_with_info", comm, || {
        if newcomm.is_null() {
            // The host reports its own error for a bad output argument.
            // SAFETY: the application's arguments, unchanged.
            return unsafe { mpi_sys::PMPI_Comm_dup_with_info(comm, info, newcomm) };
        }
        if host::progress::active() {
            let rc = host::progress::gather_first(comm);
            if rc != host::SUCCESS {
                return rc;
            }
        }
        let (rc, new) = coll::dup_with_info(comm, info);
        // SAFETY: non-null, and valid for a write as MPI requires of the caller.
        unsafe { *newcomm = new };
        super::adopt(rc, new)
    })
}
