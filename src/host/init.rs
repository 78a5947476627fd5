//! MPI initialisation on behalf of the application. With `MPICAST_PROGRESS=thread` (or `auto`
//! with `MPICAST_FANOUT=on`) mpicast forwards and runs GOAL schedules from a thread of its own, which calls the host MPI concurrently with
//! the application: that needs MPI_THREAD_MULTIPLE, so every initialisation entry point the
//! program can reach (C MPI_Init / MPI_Init_thread here; the Fortran ones the host does not
//! route through them, in `ffi::fortran`) asks the host for it. Otherwise initialisation is
//! the host's, unchanged. A host that grants less is reported once, and GOAL runs then
//! progress by polling; `progress_thread_allowed` asks the host (MPI_Query_thread), so a
//! path that bypassed all of this is caught as well.

use super::{query_thread, thread_multiple, SUCCESS};
use crate::config::{Config, Progress};
use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

/// Whether the configuration asks for the progress thread (and mpicast is not disabled):
/// `MPICAST_PROGRESS=thread`, or `auto` with `MPICAST_FANOUT=on` (an unmodified task runtime
/// computes, or sleeps in its own progress thread, while the sends it issued must be released
/// and the dynamic broadcasts routed through its rank forwarded: measured on the emulated
/// cluster, StarPU's Cholesky at 9 hosts went from 1.6 times slower than without mpicast to
/// 2.3 times faster with the thread). A configuration error is not reported here: the first
/// collective reports it. Read once (the environment is the process's at its first MPI call).
pub fn progress_thread_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| matches!(Config::process(), Ok(c) if !c.disable && wants_thread(&c)))
}

/// The progress thread is asked for: `thread`, or `auto` under fan-out detection.
fn wants_thread(c: &Config) -> bool {
    c.progress == Progress::Thread || (c.progress == Progress::Auto && c.fanout)
}

/// `MPICAST_GOAL_WINDOW` (0: off) and `MPICAST_VERBOSE`, read once like the progress setting.
pub fn goal_window() -> (usize, u8) {
    static WINDOW: OnceLock<(usize, u8)> = OnceLock::new();
    *WINDOW.get_or_init(|| Config::process().map_or((0, 0), |c| (c.goal_window, c.verbose)))
}

/// `MPICAST_PROGRESS` (`Poll` when mpicast is disabled or the configuration is bad), read
/// once like the progress setting.
pub fn progress_mode() -> Progress {
    static MODE: OnceLock<Progress> = OnceLock::new();
    *MODE.get_or_init(|| match Config::process() {
        Ok(c) if !c.disable => c.progress,
        _ => Progress::Poll,
    })
}

/// Whether a progress thread may call the host MPI now: wanted (`thread`, or `auto`), and
/// the host granted MPI_THREAD_MULTIPLE.
pub fn progress_thread_allowed() -> bool {
    progress_mode() != Progress::Poll && super::is_active() && query_thread() >= thread_multiple()
}

fn level_name(level: c_int) -> String {
    // SAFETY: initialised constants of mpi-sys' C shim.
    let named = unsafe {
        [
            (mpi_sys::RSMPI_THREAD_SINGLE, "MPI_THREAD_SINGLE"),
            (mpi_sys::RSMPI_THREAD_FUNNELED, "MPI_THREAD_FUNNELED"),
            (mpi_sys::RSMPI_THREAD_SERIALIZED, "MPI_THREAD_SERIALIZED"),
            (mpi_sys::RSMPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE"),
        ]
    };
    named
        .iter()
        .find(|(l, _)| *l == level)
        .map_or_else(|| format!("thread level {level}"), |(_, n)| n.to_string())
}

/// After a successful initialisation that asked for MPI_THREAD_MULTIPLE: says (once, from
/// rank 0 of MPI_COMM_WORLD) when the host granted less.
fn report(provided: c_int) {
    if provided >= thread_multiple() {
        return;
    }
    if super::comm::rank(super::comm_world()).unwrap_or(0) == 0 {
        let why = if progress_mode() == Progress::Thread {
            "MPICAST_PROGRESS=thread"
        } else {
            "MPICAST_FANOUT=on (with MPICAST_PROGRESS=auto) runs a progress thread and"
        };
        crate::session::say(&format!(
            "mpicast: warning: {why} needs MPI_THREAD_MULTIPLE, but the host MPI provides only \
             {}: multicasts are forwarded, held sends released and GOAL runs moved only inside \
             the rank's MPI calls (as with MPICAST_PROGRESS=poll)",
            level_name(provided)
        ));
    }
}

/// MPI_Init (`required` None) or MPI_Init_thread: the host's, asking for
/// MPI_THREAD_MULTIPLE instead when the progress thread is wanted. `*provided` (if not
/// NULL) receives what the host granted, which MPI allows to exceed `required`.
///
/// # Safety
/// The arguments of MPI_Init / MPI_Init_thread (`argc`/`argv` NULL or the program's).
pub unsafe fn init(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: Option<c_int>,
    provided: *mut c_int,
) -> c_int {
    if progress_thread_wanted() {
        let mut granted: c_int = 0;
        // SAFETY: the application's arguments; `granted` is a local int.
        let rc = unsafe { mpi_sys::PMPI_Init_thread(argc, argv, thread_multiple(), &mut granted) };
        if rc == SUCCESS {
            if !provided.is_null() {
                // SAFETY: non-NULL, the application's output argument.
                unsafe { *provided = granted };
            }
            report(granted);
        }
        return rc;
    }
    match required {
        // SAFETY: the application's arguments, unchanged.
        None => unsafe { mpi_sys::PMPI_Init(argc, argv) },
        // SAFETY: as above.
        Some(r) => unsafe { mpi_sys::PMPI_Init_thread(argc, argv, r, provided) },
    }
}

/// MPI_Finalize: the host's.
pub fn finalize() -> c_int {
    // SAFETY: no arguments; MPI checks for itself that it was initialised.
    unsafe { mpi_sys::PMPI_Finalize() }
}
