//! Is a handle the application passed a live one? Asked before mpicast calls anything on it,
//! so that a freed or uninitialised communicator or datatype given to an extension call is
//! an error code with a message, not a crash or an abort inside an MPI call the application
//! never made. Open MPI's handles are pointers and are looked up in the host's own table
//! (`shim.c`); MPICH's are numbers that the host checks, asked here with errors returned.

use super::{MPI_Comm, MPI_Datatype, SUCCESS};
use std::os::raw::c_int;

extern "C" {
    fn mpicast_c_comm_live(comm: MPI_Comm) -> c_int;
    fn mpicast_c_type_live(t: MPI_Datatype) -> c_int;
}

/// True when `comm` is a communicator the host knows (not MPI_COMM_NULL, not freed).
pub fn comm_live(comm: MPI_Comm) -> bool {
    // SAFETY: compares handles and, under Open MPI, reads the host's table; no object is
    // written.
    match unsafe { mpicast_c_comm_live(comm) } {
        1 => true,
        0 => false,
        _ => super::names::quietly(|| {
            let mut flag: c_int = 0;
            // SAFETY: writes one int; an invalid handle is an error, returned (quietly).
            unsafe { mpi_sys::PMPI_Comm_test_inter(comm, &mut flag) == SUCCESS }
        }),
    }
}

/// True when `t` is a datatype the host knows (not MPI_DATATYPE_NULL, not freed).
pub fn type_live(t: MPI_Datatype) -> bool {
    // SAFETY: as in `comm_live`.
    match unsafe { mpicast_c_type_live(t) } {
        1 => true,
        0 => false,
        _ => super::names::quietly(|| {
            let mut n: c_int = 0;
            // SAFETY: writes one int; an invalid handle is an error, returned (quietly).
            unsafe { mpi_sys::PMPI_Type_size(t, &mut n) == SUCCESS }
        }),
    }
}
