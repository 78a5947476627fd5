//! mpicast's own C API (`include/mpicast.h`). Conventions: functions return an
//! `MPICAST_Status` (0 is success) and write results through trailing `*_out` pointers only
//! on success; NULL where a pointer is required gives `MPICAST_ERR_NULL_ARG`.

use super::guard;
use std::os::raw::{c_char, c_int};

/// Status codes of the extension API. Values are stable and never reused.
#[repr(C)]
#[allow(non_camel_case_types)]
pub enum MPICAST_Status {
    /// Success.
    MPICAST_OK = 0,
    /// A required pointer argument was NULL.
    MPICAST_ERR_NULL_ARG = 1,
    /// An internal error (a bug): the message went to stderr.
    MPICAST_ERR_INTERNAL = 2,
}

/// This process's counters (not summed over ranks).
#[repr(C)]
#[derive(Default)]
pub struct MPICAST_Stats {
    /// MPI_Bcast calls that took the multicast path.
    pub bcast_mcast: u64,
    /// MPI_Bcast calls handed to the host MPI.
    pub bcast_pmpi: u64,
    /// MPI_Barrier calls that took the multicast path.
    pub barrier_mcast: u64,
    /// MPI_Barrier calls handed to the host MPI.
    pub barrier_pmpi: u64,
    /// Bytes this process multicast as a broadcast root.
    pub bytes_mcast: u64,
    /// Datagrams sent (data, retransmissions, releases).
    pub dgrams_sent: u64,
    /// Datagrams accepted.
    pub dgrams_recv: u64,
    /// Repairs: fragments retransmitted, and release queries sent.
    pub repairs: u64,
    /// Datagrams dropped because they failed authentication or were malformed.
    pub rejected: u64,
    /// Communicators that fell back to the host MPI because multicast did not work.
    pub fallbacks: u64,
}

/// Copies this process's counters into `*stats_out`.
/// Thread-safe; callable at any time, also before MPI_Init. `stats_out` must not be NULL
/// (MPICAST_ERR_NULL_ARG) and must point to a writable MPICAST_Stats.
///
/// # Safety
/// `stats_out` is NULL or valid for writing one `MPICAST_Stats`.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Get_stats(stats_out: *mut MPICAST_Stats) -> c_int {
    guard(
        "MPICAST_Get_stats",
        || MPICAST_Status::MPICAST_ERR_INTERNAL as c_int,
        || {
            if stats_out.is_null() {
                return MPICAST_Status::MPICAST_ERR_NULL_ARG as c_int;
            }
            let v = crate::stats::snapshot();
            let s = MPICAST_Stats {
                bcast_mcast: v[0],
                bcast_pmpi: v[1],
                barrier_mcast: v[2],
                barrier_pmpi: v[3],
                bytes_mcast: v[4],
                dgrams_sent: v[5],
                dgrams_recv: v[6],
                repairs: v[7],
                rejected: v[8],
                fallbacks: v[9],
            };
            // SAFETY: checked non-NULL; the caller provides a writable MPICAST_Stats.
            unsafe { stats_out.write(s) };
            MPICAST_Status::MPICAST_OK as c_int
        },
    )
}

/// The library version as a static NUL-terminated string, e.g. "0.1.0". Never NULL; the
/// caller must not free it.
#[no_mangle]
pub extern "C" fn MPICAST_Version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// A static NUL-terminated description of `status`. Never NULL (unknown values give
/// "unknown status"); the caller must not free it.
#[no_mangle]
pub extern "C" fn MPICAST_Status_string(status: c_int) -> *const c_char {
    let s: &'static str = match status {
        0 => "success\0",
        1 => "a required pointer argument was NULL\0",
        2 => "internal error\0",
        _ => "unknown status\0",
    };
    s.as_ptr() as *const c_char
}
