//! MPI_Comm_set_info and MPI_Comm_dup_with_info: the host does the call; mpicast notes its
//! own keys (`mpicast`, `mpicast_sync`, `mpicast_min_bytes`, `mpicast_eager_bytes`) on the
//! way, because hosts need not return keys they do not know from MPI_Comm_get_info (Open MPI
//! 4.1 and MPICH 4.0 both drop them).

use super::session_or_die;
use crate::host::{self, MPI_Comm, MPI_Info};
use std::os::raw::c_int;

/// Records our keys of `info` on `comm` after the host accepted the call.
fn record(comm: MPI_Comm, info: MPI_Info) -> c_int {
    if host::comm::info_entries(info, &crate::session::HINT_KEYS).is_empty() {
        return host::SUCCESS;
    }
    let session = session_or_die();
    match session.record_hints(comm, info) {
        Ok(()) => host::SUCCESS,
        Err(e) => host::call_errhandler(comm, e.0),
    }
}

pub fn set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let rc = host::pmpi_comm_set_info(comm, info);
    if rc != host::SUCCESS || !host::is_active() {
        return rc;
    }
    record(comm, info)
}

pub fn dup_with_info(comm: MPI_Comm, info: MPI_Info) -> (c_int, MPI_Comm) {
    let (rc, new) = host::pmpi_comm_dup_with_info(comm, info);
    if rc != host::SUCCESS || !host::is_active() || new == host::comm_null() {
        return (rc, new);
    }
    (record(new, info), new)
}
