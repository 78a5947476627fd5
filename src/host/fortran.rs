//! The host MPI's Fortran side, as far as mpicast's Fortran entry points (`ffi::fortran`)
//! need it: Fortran handles to C handles, the host's Fortran MPI_IN_PLACE / MPI_BOTTOM
//! sentinels, and the host's own PMPI Fortran entry points, which get every call whose
//! Fortran-specific arguments only the host knows how to read.
//!
//! Sentinels and entry points are found by name at run time (dlsym): a C program never
//! loads the host's Fortran library because of us, and a Fortran program that reaches our
//! Fortran entry points has loaded it. Nothing here decides anything; `ffi::fortran` does.

use super::{MPI_Comm, MPI_Datatype, MPI_Request};
use mpi_sys::MPI_Status;
use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

/// MPI_Fint: a default Fortran INTEGER, `int` in both ABIs we build for.
pub type Fint = c_int;

extern "C" {
    fn mpicast_c_comm_f2c(f: Fint, out: *mut MPI_Comm) -> c_int;
    fn mpicast_c_type_f2c(f: Fint, out: *mut MPI_Datatype) -> c_int;
    fn mpicast_c_comm_bits(c: MPI_Comm) -> isize;
    fn mpicast_c_type_bits(t: MPI_Datatype) -> isize;
    fn mpicast_c_request_f2c(f: Fint) -> MPI_Request;
    fn mpicast_c_request_c2f(r: MPI_Request) -> Fint;
    fn mpicast_c_status_c2f(c: *const MPI_Status, f: *mut Fint) -> c_int;
    fn mpicast_c_is_f_status_ignore(p: *const c_void, many: c_int) -> c_int;
    static MPICAST_C_F_STATUS_SIZE: c_int;
}

/// A C communicator as an integer of pointer width (how the Fortran module `mpicast` passes
/// C handles).
pub fn comm_bits(c: MPI_Comm) -> isize {
    // SAFETY: a cast of the handle's value in C; nothing is dereferenced.
    unsafe { mpicast_c_comm_bits(c) }
}

/// A C datatype as an integer of pointer width.
pub fn type_bits(t: MPI_Datatype) -> isize {
    // SAFETY: as above.
    unsafe { mpicast_c_type_bits(t) }
}

/// The C communicator of a Fortran handle; None when the host knows no such handle.
pub fn comm_f2c(f: Fint) -> Option<MPI_Comm> {
    let mut c = super::comm_null();
    // SAFETY: writes one handle into our local, and only when it returns 1.
    (unsafe { mpicast_c_comm_f2c(f, &mut c) } == 1).then_some(c)
}

/// The C datatype of a Fortran handle; None when the host knows no such handle.
pub fn type_f2c(f: Fint) -> Option<MPI_Datatype> {
    let mut t = super::byte();
    // SAFETY: as above.
    (unsafe { mpicast_c_type_f2c(f, &mut t) } == 1).then_some(t)
}

/// The C request of a Fortran one (mpif.h INTEGER, mpi_f08 `request%MPI_VAL`).
pub fn request_f2c(f: Fint) -> MPI_Request {
    // SAFETY: a table lookup (Open MPI) or a cast (MPICH); nothing is dereferenced.
    unsafe { mpicast_c_request_f2c(f) }
}

/// The Fortran request of a C one (Open MPI gives a request its Fortran index here).
pub fn request_c2f(r: MPI_Request) -> Fint {
    // SAFETY: as above.
    unsafe { mpicast_c_request_c2f(r) }
}

/// MPI_STATUS_SIZE: the Fortran INTEGERs of one status, the stride of a status array (the
/// same for mpi_f08's TYPE(MPI_Status) in both MPIs).
pub fn status_size() -> usize {
    // SAFETY: an initialised constant of the C shim.
    unsafe { MPICAST_C_F_STATUS_SIZE }.max(1) as usize
}

/// Writes the C status `c` into the Fortran status at `f` (MPI_STATUS_SIZE INTEGERs).
///
/// # Safety
/// `c` is a C status; `f` is valid for writing MPI_STATUS_SIZE Fints.
pub unsafe fn status_c2f(c: *const MPI_Status, f: *mut Fint) {
    // SAFETY: as the caller promises.
    unsafe { mpicast_c_status_c2f(c, f) };
}

/// The hosts' Fortran MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE by name: Open MPI's common
/// blocks (mpif.h, and the bind(C) variables of `use mpi` and `use mpi_f08`) under the
/// manglings its own `OMPI_IS_FORTRAN_STATUS_IGNORE` knows, and MPICH's mpi_f08 objects (the
/// C `MPI_F08_STATUS_IGNORE` points there too; by name as well, should the program hold a
/// copy of them).
static STATUS_IGNORE: [CachedSymbol; 5] = [
    CachedSymbol::new(&[b"MPIR_F08_MPI_STATUS_IGNORE_OBJ\0"]),
    CachedSymbol::new(&[b"mpi_fortran_status_ignore_\0"]),
    CachedSymbol::new(&[b"mpi_fortran_status_ignore\0"]),
    CachedSymbol::new(&[b"mpi_fortran_status_ignore__\0"]),
    CachedSymbol::new(&[b"MPI_FORTRAN_STATUS_IGNORE\0"]),
];
static STATUSES_IGNORE: [CachedSymbol; 5] = [
    CachedSymbol::new(&[b"MPIR_F08_MPI_STATUSES_IGNORE_OBJ\0"]),
    CachedSymbol::new(&[b"mpi_fortran_statuses_ignore_\0"]),
    CachedSymbol::new(&[b"mpi_fortran_statuses_ignore\0"]),
    CachedSymbol::new(&[b"mpi_fortran_statuses_ignore__\0"]),
    CachedSymbol::new(&[b"MPI_FORTRAN_STATUSES_IGNORE\0"]),
];

/// True when `p` is the host's Fortran MPI_STATUS_IGNORE (`many`: MPI_STATUSES_IGNORE), of
/// any binding.
// `p` is only compared, never dereferenced.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn is_status_ignore(p: *const c_void, many: bool) -> bool {
    // SAFETY: compares addresses; nothing is dereferenced.
    if unsafe { mpicast_c_is_f_status_ignore(p, c_int::from(many)) } == 1 {
        return true;
    }
    let names = if many {
        &STATUSES_IGNORE
    } else {
        &STATUS_IGNORE
    };
    names
        .iter()
        .filter_map(CachedSymbol::get)
        .any(|q| std::ptr::eq(q as *const c_void, p))
}

/// A global symbol looked up once (the first of its names found; a Fortran program that
/// reaches mpicast's Fortran entry points has loaded the host's Fortran library, so what
/// is not there at the first look stays absent).
pub struct CachedSymbol {
    names: &'static [&'static [u8]],
    /// The address found (0: none).
    at: OnceLock<usize>,
}

impl CachedSymbol {
    /// `names` (each NUL-terminated) are tried in order.
    pub const fn new(names: &'static [&'static [u8]]) -> Self {
        CachedSymbol {
            names,
            at: OnceLock::new(),
        }
    }

    /// The address, or None when no name is defined.
    pub fn get(&self) -> Option<*mut c_void> {
        let at = *self.at.get_or_init(|| {
            self.names
                .iter()
                .find_map(|n| global_symbol(n))
                .map_or(0, |p| p as usize)
        });
        (at != 0).then_some(at as *mut c_void)
    }

    /// The first name, for messages (without its NUL).
    pub fn name(&self) -> String {
        let n = self.names.first().copied().unwrap_or(b"?");
        String::from_utf8_lossy(n.strip_suffix(b"\0").unwrap_or(n)).into_owned()
    }
}

/// The address of a global symbol of the process (the first definition in the global
/// search order, the one every library's reference resolves to), if any.
/// `name` ends with a NUL byte.
fn global_symbol(name: &[u8]) -> Option<*mut c_void> {
    assert_eq!(name.last(), Some(&0), "symbol names end with NUL");
    // SAFETY: dlsym only reads the NUL-terminated name; RTLD_DEFAULT searches the global
    // scope without loading anything.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const libc::c_char) };
    (!p.is_null()).then_some(p)
}

/// Open MPI's Fortran MPI_IN_PLACE and MPI_BOTTOM: common blocks (mpif.h) and bind(C)
/// module variables (`use mpi`, `use mpi_f08`) under every mangling Open MPI's own
/// `OMPI_IS_FORTRAN_IN_PLACE` / `OMPI_IS_FORTRAN_BOTTOM` compare against.
#[cfg(any(
    mpicast_fortran_mpif,
    mpicast_fortran_f08_bcast,
    mpicast_fortran_p2p_mpif,
    mpicast_fortran_p2p_f08_post
))]
const SENTINELS: [&[u8]; 8] = [
    b"mpi_fortran_in_place_\0",
    b"mpi_fortran_in_place\0",
    b"mpi_fortran_in_place__\0",
    b"MPI_FORTRAN_IN_PLACE\0",
    b"mpi_fortran_bottom_\0",
    b"mpi_fortran_bottom\0",
    b"mpi_fortran_bottom__\0",
    b"MPI_FORTRAN_BOTTOM\0",
];

/// True when `buf` is the host's Fortran MPI_IN_PLACE or MPI_BOTTOM. Looked up at every
/// call (a few dlsym calls, far below the cost of any broadcast): a Fortran library loaded
/// later with dlopen brings its own common blocks.
#[cfg(any(
    mpicast_fortran_mpif,
    mpicast_fortran_f08_bcast,
    mpicast_fortran_p2p_mpif,
    mpicast_fortran_p2p_f08_post
))]
pub fn is_sentinel(buf: *const c_void) -> bool {
    SENTINELS
        .iter()
        .filter_map(|n| global_symbol(n))
        .any(|p| std::ptr::eq(p as *const c_void, buf))
}

#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_bcast))]
type BcastF = unsafe extern "C" fn(
    *mut c_void,
    *const Fint,
    *const Fint,
    *const Fint,
    *const Fint,
    *mut Fint,
);
type BarrierF = unsafe extern "C" fn(*const Fint, *mut Fint);

/// Calls the host's Fortran broadcast entry `name` (NUL-terminated) (`pmpi_bcast_`, `pmpi_bcast_f08_`) with
/// the application's arguments, unchanged. False, without a call, when the host has no
/// such entry.
// The pointers are only handed on to the host MPI, exactly as the application gave them.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[cfg(any(mpicast_fortran_mpif, mpicast_fortran_f08_bcast))]
pub fn host_bcast(
    name: &[u8],
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) -> bool {
    let Some(p) = global_symbol(name) else {
        return false;
    };
    // SAFETY: the host's pmpi_bcast_ / pmpi_bcast_f08_ has this C signature (all arguments
    // by reference, ierror last; the f08 derived-type handles are one INTEGER each).
    let f: BcastF = unsafe { std::mem::transmute::<*mut c_void, BcastF>(p) };
    // SAFETY: forwards the application's own arguments unchanged.
    unsafe { f(buf, count, datatype, root, comm, ierr) };
    true
}

/// As `host_bcast`, for the barrier (`pmpi_barrier_`, `pmpi_barrier_f08_`).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn host_barrier(name: &[u8], comm: *const Fint, ierr: *mut Fint) -> bool {
    let Some(p) = global_symbol(name) else {
        return false;
    };
    // SAFETY: the host's Fortran barrier entry takes (comm, ierror), both by reference.
    let f: BarrierF = unsafe { std::mem::transmute::<*mut c_void, BarrierF>(p) };
    // SAFETY: forwards the application's own arguments unchanged.
    unsafe { f(comm, ierr) };
    true
}
