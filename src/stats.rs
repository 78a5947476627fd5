//! Process-wide counters: what `MPICAST_Get_stats` returns and what `MPICAST_STATS=1`
//! prints at finalize. Relaxed atomics: they are statistics, not synchronisation.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default)]
pub struct Counters {
    pub bcast_mcast: AtomicU64,
    pub bcast_pmpi: AtomicU64,
    pub barrier_mcast: AtomicU64,
    pub barrier_pmpi: AtomicU64,
    pub bytes_mcast: AtomicU64,
    pub dgrams_sent: AtomicU64,
    pub dgrams_recv: AtomicU64,
    pub repairs: AtomicU64,
    pub rejected: AtomicU64,
    pub fallbacks: AtomicU64,
}

pub static COUNTERS: Counters = Counters {
    bcast_mcast: AtomicU64::new(0),
    bcast_pmpi: AtomicU64::new(0),
    barrier_mcast: AtomicU64::new(0),
    barrier_pmpi: AtomicU64::new(0),
    bytes_mcast: AtomicU64::new(0),
    dgrams_sent: AtomicU64::new(0),
    dgrams_recv: AtomicU64::new(0),
    repairs: AtomicU64::new(0),
    rejected: AtomicU64::new(0),
    fallbacks: AtomicU64::new(0),
};

/// The names, in the order of `snapshot`, as printed in the report.
pub const NAMES: [&str; 10] = [
    "bcast_mcast",
    "bcast_pmpi",
    "barrier_mcast",
    "barrier_pmpi",
    "bytes_mcast",
    "dgrams_sent",
    "dgrams_recv",
    "repairs",
    "rejected",
    "fallbacks",
];

#[inline]
pub fn add(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Relaxed);
}

pub fn snapshot() -> [u64; 10] {
    let c = &COUNTERS;
    [
        c.bcast_mcast.load(Relaxed),
        c.bcast_pmpi.load(Relaxed) + crate::fastpath::FAST.host_calls(),
        c.barrier_mcast.load(Relaxed),
        c.barrier_pmpi.load(Relaxed),
        c.bytes_mcast.load(Relaxed),
        c.dgrams_sent.load(Relaxed),
        c.dgrams_recv.load(Relaxed),
        c.repairs.load(Relaxed),
        c.rejected.load(Relaxed),
        c.fallbacks.load(Relaxed),
    ]
}

/// One line: `mpicast: stats: rank=0 bcast_mcast=.. ...`.
pub fn report_line(rank: u32, vals: &[u64; 10]) -> String {
    let mut s = format!("mpicast: stats: rank={rank}");
    for (n, v) in NAMES.iter().zip(vals) {
        s.push_str(&format!(" {n}={v}"));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_names_every_counter() {
        let line = super::report_line(0, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert!(line.starts_with("mpicast: stats: rank=0 bcast_mcast=1 "));
        assert!(line.ends_with(" fallbacks=10"));
    }
}
