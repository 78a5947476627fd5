//! Attribute keyvals: how per-communicator state is cached on the communicator and torn
//! down when the application frees it (or when MPI_Finalize frees MPI_COMM_SELF).
//!
//! The attribute value is an opaque token (a registry id); the callbacks hand it to plain
//! Rust functions, found through the keyval's extra state (a `&'static Callbacks`).

use super::{check, MPI_Comm, MpiResult};
use std::os::raw::{c_int, c_void};

/// What happens to an attribute's token when its communicator is duplicated or freed.
pub struct Callbacks {
    /// On MPI_Comm_dup: the token for the duplicate, or `None` to leave the duplicate
    /// without the attribute. `copy: None` never copies.
    pub copy: Option<fn(token: usize) -> Option<usize>>,
    /// When MPI deletes the attribute (MPI_Comm_free, MPI_Comm_delete_attr, finalize).
    pub delete: fn(token: usize),
}

unsafe extern "C" fn on_copy(
    _old: MPI_Comm,
    _keyval: c_int,
    extra: *mut c_void,
    val_in: *mut c_void,
    val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    super::callback("a communicator attribute's copy", || {
        // SAFETY: extra is the &'static Callbacks registered in create_keyval.
        let cb: &'static Callbacks = unsafe { &*(extra as *const Callbacks) };
        match cb.copy.and_then(|f| f(val_in as usize)) {
            Some(t) => {
                // SAFETY: for C attributes MPI passes a pointer to the new attribute value,
                // and a valid pointer to the flag.
                unsafe {
                    *(val_out as *mut *mut c_void) = t as *mut c_void;
                    *flag = 1;
                }
            }
            // SAFETY: MPI passes a valid pointer to the flag.
            None => unsafe { *flag = 0 },
        }
        super::SUCCESS
    })
}

unsafe extern "C" fn on_delete(
    _comm: MPI_Comm,
    _keyval: c_int,
    val: *mut c_void,
    extra: *mut c_void,
) -> c_int {
    super::callback("a communicator attribute's delete", || {
        // SAFETY: extra is the &'static Callbacks registered in create_keyval.
        let cb: &'static Callbacks = unsafe { &*(extra as *const Callbacks) };
        (cb.delete)(val as usize);
        super::SUCCESS
    })
}

pub fn create_keyval(cb: &'static Callbacks) -> MpiResult<c_int> {
    let mut key: c_int = super::keyval_invalid();
    // SAFETY: the callbacks have the C signatures MPI expects; extra is a 'static reference
    // that MPI hands back to them and never dereferences itself.
    check(unsafe {
        mpi_sys::PMPI_Comm_create_keyval(
            Some(on_copy),
            Some(on_delete),
            &mut key,
            cb as *const Callbacks as *mut c_void,
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
