//! The C handles of Fortran ones, for the Fortran module `mpicast`: its interfaces take C
//! communicators and datatypes as integers of pointer width (Open MPI's handles are pointers,
//! MPICH's are ints), and a Fortran program has no portable way to call MPI_Comm_f2c /
//! MPI_Type_f2c itself (MPICH defines them as macros).

use crate::host::{self, fortran};
use std::os::raw::c_int;

/// The C communicator of a Fortran one (as `MPI_Comm_f2c`; in mpi_f08 pass `comm%MPI_VAL`),
/// widened to pointer width; MPI_COMM_NULL's when the host knows no such handle (the calls
/// then return MPICAST_ERR_ARG).
#[no_mangle]
pub extern "C" fn MPICAST_Comm_f2c(fcomm: c_int) -> isize {
    let null = || fortran::comm_bits(host::comm_null());
    super::super::guard("MPICAST_Comm_f2c", null, || {
        fortran::comm_f2c(fcomm).map_or_else(null, fortran::comm_bits)
    })
}

/// The C datatype of a Fortran one (as `MPI_Type_f2c`; in mpi_f08 `type%MPI_VAL`), widened to
/// pointer width; MPI_DATATYPE_NULL's when the host knows no such handle.
#[no_mangle]
pub extern "C" fn MPICAST_Type_f2c(ftype: c_int) -> isize {
    let null = || fortran::type_bits(host::datatype_null());
    super::super::guard("MPICAST_Type_f2c", null, || {
        fortran::type_f2c(ftype).map_or_else(null, fortran::type_bits)
    })
}
