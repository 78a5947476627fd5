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

/// `MPICAST_Stats::from_counters`, from the rows of `c` of the table of counters: each field
/// is the counter of its name (the compiler holds the struct and the rows to the same names;
/// `stats`' tests hold the header to their order).
macro_rules! from_counters {
    (c { $( $(#[doc = $doc:literal])* $name:ident $(+ $extra:expr)? ),* $(,)? } $($line:tt)*) => {
        impl MPICAST_Stats {
            fn from_counters(v: &[u64; crate::stats::N]) -> MPICAST_Stats {
                let v = crate::stats::Values::of(v);
                MPICAST_Stats {
                    $($name: v.$name,)*
                }
            }
        }
    };
}
crate::stats::with_counters!(from_counters);

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
            let s = MPICAST_Stats::from_counters(&crate::stats::snapshot());
            // SAFETY: checked non-NULL; the caller provides a writable MPICAST_Stats.
            unsafe { stats_out.write(s) };
            OK
        },
    )
}

#[cfg(test)]
mod tests {
    use super::MPICAST_Stats;
    use crate::stats::{Values, IN_C, N};

    /// The C struct's fields are the first counters of `stats::NAMES`, in its order (the
    /// layout of mpicast.h), each with the value of its own counter.
    #[test]
    fn fields_are_the_counters_of_their_name() {
        let v: [u64; N] = std::array::from_fn(|i| 100 + i as u64);
        let s = MPICAST_Stats::from_counters(&v);
        let fields = [
            s.bcast_mcast,
            s.bcast_pmpi,
            s.barrier_mcast,
            s.barrier_pmpi,
            s.bytes_mcast,
            s.dgrams_sent,
            s.dgrams_recv,
            s.repairs,
            s.rejected,
            s.fallbacks,
        ];
        assert_eq!(fields.to_vec(), v[..IN_C].to_vec());
        let by_name = Values::of(&v);
        assert_eq!(
            (s.bcast_pmpi, s.fallbacks),
            (by_name.bcast_pmpi, by_name.fallbacks)
        );
    }
}
