//! The MPI functions mpicast replaces. Everything else resolves to the host MPI directly.

use super::guard;
use crate::coll;
use crate::host::{self, MPI_Comm, MPI_Datatype};
use std::os::raw::{c_int, c_void};

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
    guard(
        "MPI_Bcast",
        || host::call_errhandler(comm, host::err_other()),
        || coll::bcast(buffer, count, datatype, root, comm),
    )
}

/// MPI_Barrier: scouts up a binary tree, one multicast release.
///
/// # Safety
/// The argument is that of MPI_Barrier.
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    guard(
        "MPI_Barrier",
        || host::call_errhandler(comm, host::err_other()),
        || coll::barrier(comm),
    )
}
