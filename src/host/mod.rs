//! Safe Rust over the host MPI, reached only through `PMPI_*` (calling `MPI_*` from inside
//! the shim would call ourselves). Owns every `unsafe` MPI call; nothing above this module
//! sees a raw pointer or a raw handle operation.
//!
//! Handles are the host's own types from mpi-sys (pointers under Open MPI, ints under
//! MPICH), so one build of the library fits one MPI flavour; `flavour` checks at run time
//! that the MPI we are loaded under is the one we were built for.
//!
//! - `init`: MPI initialisation on the application's behalf; `comm`: communicator queries and
//!   the shim's own collectives; `p2p`: scouts and control messages on the private duplicate;
//! - `attr`: state cached on communicators; `datatype`, `buffer`: datatypes as bytes (in place
//!   or packed); `valid`: is a handle live;
//! - `recv`, `grequest`: receives dynamic broadcast may take over, mpicast requests as MPI
//!   requests; `progress`: waiting in the host without stopping the process's progress;
//! - `fortran`: Fortran handles and the host's PMPI Fortran entries; `names`: the launcher's
//!   name service; `mapped`: read-only file mappings; `flavour`: which MPI.
//!
//! Every callback the host calls into runs in `callback`, which turns a panic into
//! MPI_ERR_OTHER.

pub mod attr;
pub mod buffer;
pub mod comm;
pub mod datatype;
pub mod flavour;
pub mod fortran;
pub mod grequest;
pub mod init;
pub mod mapped;
pub mod names;
pub mod p2p;
pub mod progress;
pub mod recv;
pub mod valid;

pub use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Info, MPI_Request};

use crate::lock::lock;
use std::os::raw::{c_int, c_void};

/// Constants the bindings cannot express (macros in mpi.h), from `shim.c`.
mod c {
    use super::*;
    extern "C" {
        pub fn mpicast_c_errhandler_fatal(comm: MPI_Comm) -> c_int;
        pub static MPICAST_C_BYTE: MPI_Datatype;
        pub static MPICAST_C_IN_PLACE: *mut c_void;
        pub static MPICAST_C_COMM_WORLD: MPI_Comm;
        pub static MPICAST_C_COMM_SELF: MPI_Comm;
        pub static MPICAST_C_COMM_NULL: MPI_Comm;
        pub static MPICAST_C_DATATYPE_NULL: MPI_Datatype;
        pub static MPICAST_C_INFO_NULL: MPI_Info;
        pub static MPICAST_C_SUM: mpi_sys::MPI_Op;
        pub static MPICAST_C_UINT64: MPI_Datatype;
        pub static MPICAST_C_KEYVAL_INVALID: c_int;
        pub static MPICAST_C_ANY_SOURCE: c_int;
        pub static MPICAST_C_MAX_INFO_VAL: c_int;
        pub static MPICAST_C_UNDEFINED: c_int;
        pub static MPICAST_C_STATUS_IGNORE: *mut mpi_sys::MPI_Status;
        pub static MPICAST_C_FLAVOUR: c_int;
        pub fn mpicast_c_status_source(s: *const mpi_sys::MPI_Status) -> c_int;
        pub fn mpicast_c_predefined(out: *mut MPI_Datatype, max: c_int) -> c_int;
        pub static MPICAST_C_STATUSES_IGNORE: *mut mpi_sys::MPI_Status;
        pub static MPICAST_C_PROC_NULL: c_int;
        pub fn mpicast_c_status_fill(
            s: *mut mpi_sys::MPI_Status,
            source: c_int,
            tag: c_int,
            error: c_int,
            bytes: mpi_sys::MPI_Count,
        ) -> c_int;
        pub fn mpicast_c_improbe(
            comm: MPI_Comm,
            tag: c_int,
            msg: *mut mpi_sys::MPI_Message,
            source: *mut c_int,
            bytes: *mut c_int,
        ) -> c_int;
    }
}

pub const SUCCESS: c_int = 0;

/// Error code returned by a PMPI call that failed (the host's own code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiError(pub c_int);

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MPI error {}", self.0)
    }
}

pub type MpiResult<T> = Result<T, MpiError>;

pub(crate) fn check(rc: c_int) -> MpiResult<()> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(MpiError(rc))
    }
}

pub fn comm_world() -> MPI_Comm {
    // SAFETY: an initialised constant of the C shim.
    unsafe { c::MPICAST_C_COMM_WORLD }
}
pub fn comm_self() -> MPI_Comm {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_COMM_SELF }
}
#[inline]
pub fn comm_null() -> MPI_Comm {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_COMM_NULL }
}
pub fn datatype_null() -> MPI_Datatype {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_DATATYPE_NULL }
}
pub fn byte() -> MPI_Datatype {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_BYTE }
}
pub(crate) fn info_null() -> MPI_Info {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_INFO_NULL }
}
pub(crate) fn keyval_invalid() -> c_int {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_KEYVAL_INVALID }
}
pub(crate) fn any_source() -> c_int {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_ANY_SOURCE }
}
/// Fills an application's MPI_Status for a completed mpicast receive (`bytes` long), unless
/// it is MPI_STATUS_IGNORE (or NULL).
///
/// # Safety
/// `s` is NULL, MPI_STATUS_IGNORE, or valid for writing one MPI_Status.
pub unsafe fn status_fill(
    s: *mut mpi_sys::MPI_Status,
    source: c_int,
    tag: c_int,
    error: c_int,
    bytes: u64,
) {
    if s.is_null() || s == status_ignore() {
        return;
    }
    // SAFETY: the application's status, valid for writing (MPI's contract); the helper
    // writes its public fields and its element count.
    unsafe { c::mpicast_c_status_fill(s, source, tag, error, bytes as mpi_sys::MPI_Count) };
}

/// MPI_UNDEFINED.
pub fn undefined() -> c_int {
    // SAFETY: an initialised constant of the C shim.
    unsafe { c::MPICAST_C_UNDEFINED }
}

/// MPI_PROC_NULL.
pub fn proc_null() -> c_int {
    // SAFETY: an initialised constant of the C shim.
    unsafe { c::MPICAST_C_PROC_NULL }
}

/// MPI_STATUSES_IGNORE.
pub fn statuses_ignore() -> *mut mpi_sys::MPI_Status {
    // SAFETY: an initialised constant of the C shim.
    unsafe { c::MPICAST_C_STATUSES_IGNORE }
}

pub(crate) fn status_ignore() -> *mut mpi_sys::MPI_Status {
    // SAFETY: as above.
    unsafe { c::MPICAST_C_STATUS_IGNORE }
}

/// True when `p` is the host's MPI_IN_PLACE sentinel.
#[inline]
pub fn is_in_place(p: *const c_void) -> bool {
    // SAFETY: reading a constant pointer value; it is never dereferenced.
    std::ptr::eq(p, unsafe { c::MPICAST_C_IN_PLACE })
}

/// MPI_Initialized && !MPI_Finalized.
pub fn is_active() -> bool {
    let mut init: c_int = 0;
    let mut fini: c_int = 0;
    // SAFETY: both calls are valid at any time and write one int.
    unsafe {
        mpi_sys::PMPI_Initialized(&mut init);
        mpi_sys::PMPI_Finalized(&mut fini);
    }
    init != 0 && fini == 0
}

/// The thread level the host granted.
pub fn query_thread() -> c_int {
    let mut level: c_int = 0;
    // SAFETY: writes one int; valid after init.
    unsafe { mpi_sys::PMPI_Query_thread(&mut level) };
    level
}

pub fn thread_multiple() -> c_int {
    // SAFETY: an initialised constant of mpi-sys' C shim.
    unsafe { mpi_sys::RSMPI_THREAD_MULTIPLE }
}

/// Ends the whole job, as MPI_Abort on `comm`. Callers have just written why on stderr; the
/// pause gives the launcher time to forward those lines before it kills the job (MPICH's
/// hydra drops what is still in its pipes: the message was lost now and then).
pub fn abort(comm: MPI_Comm, code: c_int) -> ! {
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: PMPI_Abort is valid with any communicator handle the caller had.
    unsafe { mpi_sys::PMPI_Abort(comm, code) };
    std::process::abort()
}

/// Hands `code` to the communicator's error handler (fatal by default) and returns it.
pub fn call_errhandler(comm: MPI_Comm, code: c_int) -> c_int {
    // SAFETY: valid for any live communicator.
    unsafe { mpi_sys::PMPI_Comm_call_errhandler(comm, code) };
    code
}

/// Reports an error of mpicast's own with `message` through the communicator's error
/// handler. When that handler ends the job (MPI_ERRORS_ARE_FATAL, the default), mpicast
/// writes the message itself and aborts: Open MPI's fatal handler routes its text through
/// the launcher's help aggregation, which drops it when several ranks fail at once ("Out of
/// resource in show_help.c"), and the user would see no reason at all.
pub fn raise(comm: MPI_Comm, class: c_int, message: &str) -> c_int {
    // SAFETY: reads the handler of a live communicator and frees the copy it gets.
    if unsafe { c::mpicast_c_errhandler_fatal(comm) } != 0 {
        crate::session::say(&format!("{message}; aborting (MPI_ERRORS_ARE_FATAL)"));
        abort(comm, class);
    }
    let code = error_code(class, message).unwrap_or_else(|| {
        // The host's string for the class says less: say the rest here.
        crate::session::say(message);
        class
    });
    call_errhandler(comm, code)
}

/// An error code of class `class` whose MPI_Error_string is `message` (cut to fit), for
/// the error handler to report what went wrong in mpicast's words: one code per class,
/// made on first use, its string replaced by each call (MPI_Add_error_code and
/// MPI_Add_error_string are local). `None` when the host cannot give one that says it:
/// MPICH 4.0 makes codes of a predefined class that MPI_Error_string does not map to
/// their string, so the string is read back before the code is trusted.
pub fn error_code(class: c_int, message: &str) -> Option<c_int> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static CODES: Mutex<Option<HashMap<c_int, c_int>>> = Mutex::new(None);
    let mut codes = lock(&CODES);
    let map = codes.get_or_insert_with(HashMap::new);
    let code = match map.get(&class) {
        Some(&c) => c,
        None => {
            let mut c: c_int = 0;
            // SAFETY: writes one int; a local call.
            if unsafe { mpi_sys::PMPI_Add_error_code(class, &mut c) } != SUCCESS {
                return None;
            }
            map.insert(class, c);
            c
        }
    };
    // MPI_MAX_ERROR_STRING is 256 under Open MPI, the smaller of the two.
    let mut m: String = message.replace('\0', " ");
    while m.len() > 255 {
        m.pop();
    }
    let cm = std::ffi::CString::new(m).expect("no NUL left");
    // SAFETY: a NUL-terminated string; the host copies it.
    if unsafe { mpi_sys::PMPI_Add_error_string(code, cm.as_ptr()) } != SUCCESS {
        return None;
    }
    let mut back = vec![0 as std::os::raw::c_char; 1024];
    let mut len: c_int = 0;
    // SAFETY: 1024 characters is at least MPI_MAX_ERROR_STRING under both MPIs.
    let rc = unsafe { mpi_sys::PMPI_Error_string(code, back.as_mut_ptr(), &mut len) };
    let last = back.len() - 1;
    back[last] = 0;
    // SAFETY: NUL-terminated within `back`.
    let said = unsafe { std::ffi::CStr::from_ptr(back.as_ptr()) };
    (rc == SUCCESS && said.to_bytes() == cm.as_bytes()).then_some(code)
}

pub fn err_arg() -> c_int {
    mpi_sys::MPI_ERR_ARG as c_int
}

pub fn err_other() -> c_int {
    mpi_sys::MPI_ERR_OTHER as c_int
}

/// What a caught panic said (its `&str` or `String` payload).
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The body of a callback that MPI calls into (attribute copy and delete, generalized request
/// query, free and cancel): a panic must not unwind into the host's C frames (undefined
/// behaviour before Rust 1.81, an abort after), so it is said and becomes MPI_ERR_OTHER,
/// which the host reports through its own error handling.
pub fn callback(what: &str, f: impl FnOnce() -> c_int) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(rc) => rc,
        Err(p) => {
            crate::session::say(&format!(
                "mpicast: internal error in {what}: {}",
                panic_text(p.as_ref())
            ));
            err_other()
        }
    }
}

/// The fallback paths: the host's own collectives, arguments passed through untouched so
/// that the host reports its own errors for arguments we do not handle.
///
/// `count` is 64-bit so that MPI-4 large-count calls (`MPI_Bcast_c`) come through too: a
/// count that fits an int goes to `PMPI_Bcast`, a larger one to `PMPI_Bcast_c` where the
/// host has it (the same operation; only the name in the host's error message differs),
/// and otherwise to the communicator's error handler as MPI_ERR_COUNT.
// The buffer pointer is only handed on to the host MPI, exactly as the application gave it.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[inline]
pub fn pmpi_bcast(
    buf: *mut c_void,
    count: i64,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if let Ok(n) = c_int::try_from(count) {
        if progress::active() {
            return pmpi_bcast_polled(buf, n, dtype, root, comm);
        }
        // SAFETY: forwards the application's own arguments unchanged.
        return unsafe { mpi_sys::PMPI_Bcast(buf, n, dtype, root, comm) };
    }
    #[cfg(mpicast_large_count)]
    {
        // SAFETY: as above; MPI_Count is 64-bit.
        #[allow(clippy::unnecessary_cast)]
        unsafe {
            mpi_sys::PMPI_Bcast_c(buf, count as mpi_sys::MPI_Count, dtype, root, comm)
        }
    }
    #[cfg(not(mpicast_large_count))]
    {
        call_errhandler(comm, mpi_sys::MPI_ERR_COUNT as c_int)
    }
}

/// `pmpi_bcast` while a forwarder exists: non-blocking and polled where every rank does so
/// (`progress::covered`), so that this rank keeps forwarding while it waits.
#[inline(never)]
#[cold]
fn pmpi_bcast_polled(
    buf: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    progress::collective(
        comm,
        // SAFETY: forwards the application's own arguments unchanged.
        || unsafe { mpi_sys::PMPI_Bcast(buf, count, dtype, root, comm) },
        // SAFETY: as above; the request is waited for before returning.
        |r| unsafe { mpi_sys::PMPI_Ibcast(buf, count, dtype, root, comm, r) },
    )
}

pub fn pmpi_comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    // SAFETY: forwards the application's own arguments unchanged.
    unsafe { mpi_sys::PMPI_Comm_set_info(comm, info) }
}

/// MPI_Comm_dup_with_info through PMPI: the return code and the new communicator.
pub fn pmpi_comm_dup_with_info(comm: MPI_Comm, info: MPI_Info) -> (c_int, MPI_Comm) {
    let mut out = comm_null();
    // SAFETY: forwards the application's arguments; writes one handle into our own local.
    let rc = unsafe { mpi_sys::PMPI_Comm_dup_with_info(comm, info, &mut out) };
    (rc, out)
}

/// The host's barrier (non-blocking and polled while a forwarder exists and every rank of
/// `comm` does so: `progress::collective`).
pub fn pmpi_barrier(comm: MPI_Comm) -> c_int {
    progress::collective(
        comm,
        // SAFETY: forwards the application's own argument unchanged.
        || unsafe { mpi_sys::PMPI_Barrier(comm) },
        // SAFETY: writes the request.
        |r| unsafe { mpi_sys::PMPI_Ibarrier(comm, r) },
    )
}

/// Ends the process at once, without atexit handlers (which could call into an MPI we
/// cannot talk to). Only for a library loaded under the wrong MPI flavour.
pub fn exit_now(code: c_int) -> ! {
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// A communicator handle that may move between threads. MPI handles are process-wide
/// values; the state that holds one is locked by the caller, and MPI_THREAD_MULTIPLE (or
/// the application's own serialisation below it) makes using it from another thread legal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SendComm(pub MPI_Comm);
// SAFETY: see above; the handle is an opaque value (a pointer under Open MPI that MPI
// itself owns, an int under MPICH), never dereferenced by us.
unsafe impl Send for SendComm {}
// SAFETY: as above.
unsafe impl Sync for SendComm {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callback's value passes; its panic becomes MPI_ERR_OTHER, with the panic's text.
    #[test]
    fn a_callback_returns_its_code_or_err_other_for_a_panic() {
        assert_eq!(callback("a test", || 7), 7);
        assert_eq!(callback("a test", || panic!("on purpose")), err_other());
        let owned = std::panic::catch_unwind(|| panic!("{} {}", "owned", 1)).unwrap_err();
        assert_eq!(panic_text(owned.as_ref()), "owned 1");
        let fixed = std::panic::catch_unwind(|| panic!("fixed")).unwrap_err();
        assert_eq!(panic_text(fixed.as_ref()), "fixed");
    }
}
