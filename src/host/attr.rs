//! Attribute keyvals: how per-communicator state is cached on the communicator and torn
//! down when the application frees it (or when MPI_Finalize frees MPI_COMM_SELF).
//!
//! The attribute value is an opaque token (a registry id); the delete callback hands it to
//! a plain Rust function stored as the keyval's extra state.

use super::{check, MPI_Comm, MpiResult};
use std::os::raw::{c_int, c_void};

/// Called with the token when MPI deletes the attribute.
pub type DeleteFn = fn(token: usize);

unsafe extern "C" fn no_copy(
    _old: MPI_Comm,
    _keyval: c_int,
    _extra: *mut c_void,
    _val_in: *mut c_void,
    _val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // A duplicate of a communicator gets its own state on first use: never copy ours.
    // SAFETY: MPI passes a valid pointer to the flag.
    unsafe { *flag = 0 };
    super::SUCCESS
}

unsafe extern "C" fn on_delete(
    _comm: MPI_Comm,
    _keyval: c_int,
    val: *mut c_void,
    extra: *mut c_void,
) -> c_int {
    // SAFETY: extra is the DeleteFn we registered in create_keyval, cast back to its type.
    let f: DeleteFn = unsafe { std::mem::transmute::<*mut c_void, DeleteFn>(extra) };
    // A panic must not unwind into MPI.
    let token = val as usize;
    match std::panic::catch_unwind(move || f(token)) {
        Ok(()) => super::SUCCESS,
        Err(_) => super::err_other(),
    }
}

pub fn create_keyval(delete: DeleteFn) -> MpiResult<c_int> {
    let mut key: c_int = super::keyval_invalid();
    // SAFETY: the callbacks have the C signatures MPI expects; extra carries a fn pointer.
    check(unsafe {
        mpi_sys::PMPI_Comm_create_keyval(
            Some(no_copy),
            Some(on_delete),
            &mut key,
            delete as *mut c_void,
        )
    })?;
    Ok(key)
}

pub fn set(comm: MPI_Comm, keyval: c_int, token: usize) -> MpiResult<()> {
    // SAFETY: the value is an integer token smuggled in a pointer; never dereferenced.
    check(unsafe { mpi_sys::PMPI_Comm_set_attr(comm, keyval, token as *mut c_void) })
}

pub fn get(comm: MPI_Comm, keyval: c_int) -> MpiResult<Option<usize>> {
    let mut val: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: for C attributes MPI writes the stored pointer value into `val`.
    check(unsafe {
        mpi_sys::PMPI_Comm_get_attr(
            comm,
            keyval,
            &mut val as *mut *mut c_void as *mut c_void,
            &mut flag,
        )
    })?;
    Ok(if flag != 0 { Some(val as usize) } else { None })
}

pub fn delete(comm: MPI_Comm, keyval: c_int) -> MpiResult<()> {
    // SAFETY: runs our delete callback for a live attribute.
    check(unsafe { mpi_sys::PMPI_Comm_delete_attr(comm, keyval) })
}

pub fn free_keyval(mut keyval: c_int) -> MpiResult<()> {
    // SAFETY: writes MPI_KEYVAL_INVALID into our copy.
    check(unsafe { mpi_sys::PMPI_Comm_free_keyval(&mut keyval) })
}
