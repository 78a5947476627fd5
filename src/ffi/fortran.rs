//! The Fortran entry points of MPI_Bcast and MPI_Barrier, for the host bindings that do not
//! pass through the C names. build.rs chooses them per MPI; the test `link_fortran_route`
//! watches which C names each host binding reaches and requires exactly these exports:
//!
//! | binding            | symbol the program calls               | Open MPI 4.1 | MPICH 4.0 |
//! | ------------------ | -------------------------------------- | ------------ | --------- |
//! | mpif.h, `use mpi`  | `mpi_bcast_`, `mpi_barrier_` (and `__`, no underscore, UPPER) | exported | not: the host's call C `MPI_Bcast` / `MPI_Barrier` |
//! | `use mpi_f08`      | `mpi_bcast_f08_` (MPICH: `mpi_bcast_f08ts_`) | exported | not: reaches C `MPI_Bcast` (`MPI_Bcast_c` for large counts) |
//! | `use mpi_f08`      | `mpi_barrier_f08_`                     | exported     | exported  |
//! | mpif.h, `use mpi`  | `mpi_init_`, `mpi_init_thread_` (all manglings) | exported | not: the host's call C `MPI_Init` / `MPI_Init_thread` |
//! | `use mpi_f08`      | `mpi_init_f08_`, `mpi_init_thread_f08_` | exported    | exported  |
//! | mpif.h, `use mpi`  | `mpi_finalize_` (all manglings)        | exported     | not: the host's calls C `MPI_Finalize` |
//! | `use mpi_f08`      | `mpi_finalize_f08_`                    | exported     | exported  |
//!
//! The init and finalize entries exist for `MPICAST_PROGRESS=thread` (see `host::init`): the
//! init ones do what the hosts' own do (C `PMPI_Init` / `PMPI_Init_thread` without
//! arguments), asking for MPI_THREAD_MULTIPLE when the progress thread is wanted; the
//! finalize one stops the progress thread before the host's finalize begins.
//!
//! Each converts the handles (the host's f2c), takes the same path as the C call, and writes
//! `ierror` (optional in mpi_f08, NULL when absent). Calls with Fortran-specific arguments
//! (the host's MPI_IN_PLACE or MPI_BOTTOM sentinel, a handle the host does not know) go to
//! the host's own PMPI Fortran entry, untouched, so they behave as without mpicast. Array
//! sections need nothing here: these bindings take assumed-size buffers (Open MPI's mpi_f08
//! too), so the compiler hands over a contiguous copy of a non-contiguous section.

use super::guard;
use crate::coll;
use crate::host::{self, fortran as hf, fortran::Fint};
use crate::stats::{self, COUNTERS};
use std::os::raw::c_int;
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_bcast))]
use std::os::raw::c_void;

/// Writes `rc` into an `ierror` argument (NULL: mpi_f08's optional one was left out).
///
/// # Safety
/// `ierr` is NULL or valid for writing one Fint.
pub(super) unsafe fn set_ierr(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: non-NULL, and the caller's INTEGER.
        unsafe { *ierr = rc };
    }
}

/// The host lacks the Fortran entry of a binding the program uses: cannot happen with a
/// consistent host MPI, and guessing would be worse than stopping.
fn no_host_entry(entry: &[u8]) -> ! {
    let name = String::from_utf8_lossy(entry.strip_suffix(b"\0").unwrap_or(entry));
    crate::session::say(&format!(
        "mpicast: cannot hand a Fortran call to the host MPI: it has no {name}; aborting"
    ));
    host::abort(host::comm_world(), 1)
}

/// MPI_Bcast from Fortran; `host_entry` is the host's PMPI entry of the same binding.
///
/// # Safety
/// The arguments of the Fortran MPI_Bcast, each by reference; `ierr` may be NULL.
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_bcast))]
unsafe fn bcast_f(
    host_entry: &'static [u8],
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    let to_host = || {
        stats::add(&COUNTERS.bcast_pmpi, 1);
        if !hf::host_bcast(host_entry, buf, count, datatype, root, comm, ierr) {
            no_host_entry(host_entry);
        }
    };
    if count.is_null() || datatype.is_null() || root.is_null() || comm.is_null() {
        return to_host();
    }
    // SAFETY: Fortran passes every argument by reference; checked non-NULL above.
    let (n, type_f, root_v, comm_f) = unsafe { (*count, *datatype, *root, *comm) };
    let (Some(c_comm), Some(c_type)) = (hf::comm_f2c(comm_f), hf::type_f2c(type_f)) else {
        return to_host();
    };
    let rc = guard(
        "MPI_Bcast (Fortran)",
        || Some(host::call_errhandler(c_comm, host::err_other())),
        || {
            if hf::is_sentinel(buf) {
                to_host();
                // The host has written ierror itself.
                return None;
            }
            Some(coll::bcast(buf, i64::from(n), c_type, root_v, c_comm))
        },
    );
    if let Some(rc) = rc {
        // SAFETY: the caller's ierror, or NULL.
        unsafe { set_ierr(ierr, rc) };
    }
}

/// MPI_Barrier from Fortran; `host_entry` is the host's PMPI entry of the same binding.
///
/// # Safety
/// `comm` points to the Fortran handle; `ierr` is NULL or the caller's INTEGER.
unsafe fn barrier_f(host_entry: &'static [u8], comm: *const Fint, ierr: *mut Fint) {
    // SAFETY: by reference from Fortran; checked non-NULL.
    let c_comm = (!comm.is_null())
        .then(|| hf::comm_f2c(unsafe { *comm }))
        .flatten();
    let Some(c_comm) = c_comm else {
        stats::add(&COUNTERS.barrier_pmpi, 1);
        if !hf::host_barrier(host_entry, comm, ierr) {
            no_host_entry(host_entry);
        }
        return;
    };
    let rc = guard(
        "MPI_Barrier (Fortran)",
        || host::call_errhandler(c_comm, host::err_other()),
        || coll::barrier(c_comm),
    );
    // SAFETY: the caller's ierror, or NULL.
    unsafe { set_ierr(ierr, rc) };
}

/// MPI_Init from Fortran (the entry name is unused: the C path is the hosts' own).
///
/// # Safety
/// `ierr` is NULL or the caller's INTEGER.
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_init))]
unsafe fn init_f(_entry: &'static [u8], ierr: *mut Fint) {
    let rc = guard("MPI_Init (Fortran)", host::err_other, || {
        // SAFETY: MPI_Init accepts NULL argc/argv, as the hosts' Fortran bindings pass.
        super::after_init(unsafe {
            host::init::init(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                None,
                std::ptr::null_mut(),
            )
        })
    });
    // SAFETY: the caller's ierror, or NULL.
    unsafe { set_ierr(ierr, rc) };
}

/// MPI_Init_thread from Fortran.
///
/// # Safety
/// `required` points to an INTEGER; `provided` and `ierr` are NULL or the caller's INTEGERs.
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_init))]
unsafe fn init_thread_f(
    _entry: &'static [u8],
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by reference from Fortran; a missing one asks for the least.
    let req = if required.is_null() {
        0
    } else {
        unsafe { *required }
    };
    let mut granted: c_int = 0;
    let rc = guard("MPI_Init_thread (Fortran)", host::err_other, || {
        // SAFETY: NULL argc/argv as above; `granted` is a local int.
        super::after_init(unsafe {
            host::init::init(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                Some(req),
                &mut granted,
            )
        })
    });
    if rc == host::SUCCESS && !provided.is_null() {
        // SAFETY: non-NULL, the caller's INTEGER.
        unsafe { *provided = granted };
    }
    // SAFETY: the caller's ierror, or NULL.
    unsafe { set_ierr(ierr, rc) };
}

/// MPI_Finalize from Fortran: as the C MPI_Finalize (the progress thread stops first).
///
/// # Safety
/// `ierr` is NULL or the caller's INTEGER.
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_init))]
unsafe fn finalize_f(_entry: &'static [u8], ierr: *mut Fint) {
    let rc = super::mpi::MPI_Finalize();
    // SAFETY: the caller's ierror, or NULL.
    unsafe { set_ierr(ierr, rc) };
}

/// Exports `$imp` under each Fortran name given (the parameter list is one token tree so
/// that it can repeat once per name).
macro_rules! fortran_entries {
    ($what:literal, $imp:ident($entry:literal; $params:tt) as $($name:ident),+) => {
        $( fortran_entry!($what, $imp, $entry, $params, $name); )+
    };
}

macro_rules! fortran_entry {
    ($what:literal, $imp:ident, $entry:literal, ($($a:ident: $t:ty),*), $name:ident) => {
        #[doc = concat!("Fortran ", $what, " (`", stringify!($name), "`): see the module doc.")]
        ///
        /// # Safety
        /// Called from Fortran: every argument by reference, as the MPI binding says.
        #[no_mangle]
        #[allow(non_snake_case)]
        pub unsafe extern "C" fn $name($($a: $t),*) {
            // SAFETY: the application's arguments, forwarded unchanged.
            unsafe { $imp($entry, $($a),*) }
        }
    };
}

// mpif.h and `use mpi`: one external name, spelled as the compiler mangles it (gfortran and
// most: lower_; g77 and -fsecond-underscore: lower__; xlf, -fno-underscoring: lower; some
// Cray and Windows compilers: UPPER).
#[cfg(mpicast_fortran_mpif)]
fortran_entries!("MPI_Bcast", bcast_f(b"pmpi_bcast_\0";
    (buffer: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
    comm: *const Fint, ierror: *mut Fint))
    as mpi_bcast_, mpi_bcast__, mpi_bcast, MPI_BCAST);

#[cfg(mpicast_fortran_mpif)]
fortran_entries!("MPI_Barrier", barrier_f(b"pmpi_barrier_\0"; (comm: *const Fint, ierror: *mut Fint))
    as mpi_barrier_, mpi_barrier__, mpi_barrier, MPI_BARRIER);

// mpi_f08: TYPE(MPI_Comm) and TYPE(MPI_Datatype) are one INTEGER each, passed by
// reference like the mpif.h handles; the optional ierror is NULL when left out.
#[cfg(mpicast_fortran_f08_bcast)]
fortran_entries!("mpi_f08 MPI_Bcast", bcast_f(b"pmpi_bcast_f08_\0";
    (buffer: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
    comm: *const Fint, ierror: *mut Fint))
    as mpi_bcast_f08_);

#[cfg(mpicast_fortran_f08_barrier)]
fortran_entries!("mpi_f08 MPI_Barrier", barrier_f(b"pmpi_barrier_f08_\0";
    (comm: *const Fint, ierror: *mut Fint))
    as mpi_barrier_f08_);

#[cfg(mpicast_fortran_mpif)]
fortran_entries!("MPI_Init", init_f(b"\0"; (ierror: *mut Fint))
    as mpi_init_, mpi_init__, mpi_init, MPI_INIT);

#[cfg(mpicast_fortran_mpif)]
fortran_entries!("MPI_Init_thread", init_thread_f(b"\0";
    (required: *const Fint, provided: *mut Fint, ierror: *mut Fint))
    as mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD);

#[cfg(mpicast_fortran_f08_init)]
fortran_entries!("mpi_f08 MPI_Init", init_f(b"\0"; (ierror: *mut Fint)) as mpi_init_f08_);

#[cfg(mpicast_fortran_f08_init)]
fortran_entries!("mpi_f08 MPI_Init_thread", init_thread_f(b"\0";
    (required: *const Fint, provided: *mut Fint, ierror: *mut Fint))
    as mpi_init_thread_f08_);

#[cfg(mpicast_fortran_mpif)]
fortran_entries!("MPI_Finalize", finalize_f(b"\0"; (ierror: *mut Fint))
    as mpi_finalize_, mpi_finalize__, mpi_finalize, MPI_FINALIZE);

#[cfg(mpicast_fortran_f08_init)]
fortran_entries!("mpi_f08 MPI_Finalize", finalize_f(b"\0"; (ierror: *mut Fint)) as mpi_finalize_f08_);
