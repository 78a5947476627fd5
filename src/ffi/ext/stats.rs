//! MPICAST_Get_stats: this process's counters.

use super::super::guard;
use super::{INTERNAL, NULL_ARG, OK};
use std::os::raw::c_int;

/// This process's counters (not summed over ranks). Fields are only ever added at the end;
/// MPICAST_Get_stats writes them all, so a program compiled against an older mpicast.h must be
/// compiled again.
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
    /// MPICAST_Imcast calls that started a multicast.
    pub imcast: u64,
    /// Dynamic broadcasts started: MPICAST_Dbcast calls, and MPICAST_Send_release calls'
    /// sends to several recipients at once.
    pub dbcast: u64,
    /// MPICAST_Mmcast calls completed.
    pub mmcast: u64,
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
                imcast: v[10],
                dbcast: v[11],
                mmcast: v[12],
            };
            // SAFETY: checked non-NULL; the caller provides a writable MPICAST_Stats.
            unsafe { stats_out.write(s) };
            OK
        },
    )
}
