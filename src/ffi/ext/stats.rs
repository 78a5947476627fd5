//! MPICAST_Get_stats: this process's counters.

use super::super::guard;
use super::{INTERNAL, NULL_ARG, OK};
use std::os::raw::c_int;

/// This process's counters (not summed over ranks). The layout is fixed (programs compiled
/// against an earlier mpicast.h keep working): the counters added since (MPICAST_Imcast,
/// MPICAST_Dbcast, MPICAST_Mmcast calls) are in the MPICAST_STATS=1 line only.
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
        || INTERNAL,
        || {
            if stats_out.is_null() {
                return NULL_ARG;
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
            OK
        },
    )
}
