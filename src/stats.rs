//! Process-wide counters: what `MPICAST_Get_stats` returns and what `MPICAST_STATS=1`
//! prints at finalize. Relaxed atomics: they are statistics, not synchronisation.

use crate::config::{Config, MinBytes, Topo};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

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
    /// `MPICAST_Imcast` calls that started a multicast.
    pub imcast: AtomicU64,
    /// Dynamic broadcasts started: `MPICAST_Dbcast` calls, and the releases of
    /// `MPICAST_Send_release` that went to several recipients at once.
    pub dbcast: AtomicU64,
    /// `MPICAST_Mmcast` calls this rank completed.
    pub mmcast: AtomicU64,
    /// Messages of a broadcast's (or an IP `MPICAST_Imcast`'s) data sent by the host MPI to
    /// a receiver that multicast no longer reached (`transport::heal::serve`, `serve_on`).
    pub unicast: AtomicU64,
    /// Communicators that left multicast for the host MPI mid-job (and roots whose
    /// `MPICAST_Imcast` multicasts moved to point-to-point, `transport::imcast_ip`), ...
    pub heal_host: AtomicU64,
    /// ... that went on with smaller datagrams, ...
    pub heal_step: AtomicU64,
    /// ... and that came back to multicast (or to a larger size) after a probe (or a root's
    /// trial by IP that needed no repair).
    pub heal_return: AtomicU64,
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
    imcast: AtomicU64::new(0),
    dbcast: AtomicU64::new(0),
    mmcast: AtomicU64::new(0),
    unicast: AtomicU64::new(0),
    heal_host: AtomicU64::new(0),
    heal_step: AtomicU64::new(0),
    heal_return: AtomicU64::new(0),
};

/// How many counters there are (the fields of `MPICAST_Stats`, in its order).
pub const N: usize = 17;

/// The names, in the order of `snapshot` (and of the fields of `MPICAST_Stats`, which only
/// ever grows at its end), as printed in the report.
pub const NAMES: [&str; N] = [
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
    "imcast",
    "dbcast",
    "mmcast",
    "unicast",
    "heal_host",
    "heal_step",
    "heal_return",
];

/// The counter `name` (one of [`NAMES`]) of a snapshot.
pub fn value(vals: &[u64; N], name: &str) -> u64 {
    match NAMES.iter().position(|n| *n == name) {
        Some(i) => vals[i],
        None => panic!("stats: no counter {name}"),
    }
}

/// Set when a communicator found all its ranks on one host under `MPICAST_TOPO=auto`, and so
/// left its collectives to the host MPI (for the note of the report).
static ONE_HOST: AtomicBool = AtomicBool::new(false);

#[inline]
pub fn add(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Relaxed);
}

/// Records that a communicator's ranks all share one host, so that the host MPI carries its
/// collectives (`MPICAST_TOPO=auto`).
pub fn note_one_host() {
    ONE_HOST.store(true, Relaxed);
}

pub fn snapshot() -> [u64; N] {
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
        c.imcast.load(Relaxed),
        c.dbcast.load(Relaxed),
        c.mmcast.load(Relaxed),
        c.unicast.load(Relaxed),
        c.heal_host.load(Relaxed),
        c.heal_step.load(Relaxed),
        c.heal_return.load(Relaxed),
    ]
}

/// What to try on one machine (LD_PRELOAD.md, "On one machine").
const ON_ONE_MACHINE: &str = "to try mpicast on one machine set MPICAST_IFACE=lo MPICAST_TTL=0 \
                              MPICAST_TOPO=flat MPICAST_MIN_BYTES=0 (LD_PRELOAD.md, \"On one \
                              machine\")";

/// One line: `mpicast: stats: rank=0 bcast_mcast=.. ...`, and when no broadcast or barrier
/// went by multicast although some were made, `; nothing went by multicast: ` and why.
pub fn report_line(rank: u32, vals: &[u64; N], cfg: &Config) -> String {
    let mut s = format!("mpicast: stats: rank={rank}");
    for (n, v) in NAMES.iter().zip(vals) {
        s.push_str(&format!(" {n}={v}"));
    }
    let one_host = ONE_HOST.load(Relaxed) || launcher_one_host().is_some();
    if let Some(why) = host_only(vals, cfg, one_host) {
        s.push_str("; nothing went by multicast: ");
        s.push_str(&why);
    }
    s
}

/// Why every broadcast and barrier went to the host MPI, when none went by multicast and some
/// were made. `one_host`: the ranks share one host (found by a communicator's setup, or the
/// launcher says so).
fn host_only(vals: &[u64; N], cfg: &Config, one_host: bool) -> Option<String> {
    let [bcast_mcast, bcast_pmpi, barrier_mcast, barrier_pmpi, _, _, _, _, _, fallbacks, ..] =
        *vals;
    if bcast_mcast + barrier_mcast > 0 || bcast_pmpi + barrier_pmpi == 0 {
        return None;
    }
    if cfg.disable {
        return Some("MPICAST_DISABLE is set".into());
    }
    let mut why = Vec::new();
    let one_host = one_host && cfg.topo == Topo::Auto;
    if one_host {
        why.push(format!(
            "all ranks run on one host, where MPICAST_TOPO=auto leaves their collectives to the \
             host MPI; {ON_ONE_MACHINE}"
        ));
    }
    if fallbacks > 0 {
        why.push(format!(
            "multicast did not work on {fallbacks} communicator(s) (the warning above says why)"
        ));
    }
    if !one_host {
        if bcast_pmpi > 0 && cfg.min_bytes != MinBytes::Fixed(0) {
            why.push(match cfg.min_bytes {
                MinBytes::Fixed(n) => {
                    format!(
                        "broadcasts smaller than MPICAST_MIN_BYTES={n} bytes go to the host MPI"
                    )
                }
                MinBytes::Auto => format!(
                    "broadcasts smaller than the threshold go to the host MPI \
                     (MPICAST_MIN_BYTES=auto: {} bytes where 3 or more hosts multicast, never \
                     with 2)",
                    MinBytes::Auto.resolve(3)
                ),
            });
        }
        why.push("MPICAST_VERBOSE=2 prints the reason for each call".into());
    }
    Some(why.join("; "))
}

/// The number of ranks of the job when its launcher says that all of them, more than one, run
/// on this host (Open MPI's `OMPI_COMM_WORLD_LOCAL_SIZE`, Hydra's `MPI_LOCALNRANKS`, against
/// the job's size).
pub fn launcher_one_host() -> Option<u64> {
    let num = |v: &str| {
        std::env::var(v)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    [
        ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("PMI_SIZE", "MPI_LOCALNRANKS"),
    ]
    .iter()
    .find_map(|(all, local)| Some((num(all)?, num(local)?)))
    .and_then(|(all, local)| (all > 1 && all == local).then_some(all))
}

/// `MPICAST_VERBOSE=1`, once when the session starts (rank 0): a job whose ranks all run on
/// one host, by its launcher's account, leaves everything to the host MPI under
/// `MPICAST_TOPO=auto`; and broadcasts below the floor of `MPICAST_MIN_BYTES` go to the host
/// MPI before any communicator is set up, so nothing else would mention them.
pub fn start_note(cfg: &Config) -> Option<String> {
    if cfg.disable {
        return Some("mpicast: MPICAST_DISABLE is set: every call goes to the host MPI".into());
    }
    if let (Topo::Auto, Some(n)) = (cfg.topo, launcher_one_host()) {
        return Some(format!(
            "mpicast: all {n} ranks of this job run on one host (the launcher says so): with \
             MPICAST_TOPO=auto the host MPI carries their broadcasts and barriers; \
             {ON_ONE_MACHINE}"
        ));
    }
    match cfg.min_bytes.floor() {
        0 => None,
        floor => Some(format!(
            "mpicast: broadcasts smaller than {floor} bytes go to the host MPI \
             (MPICAST_MIN_BYTES={}); each communicator's own threshold is printed when it is \
             set up, at its first larger broadcast or its first barrier",
            match cfg.min_bytes {
                MinBytes::Auto => "auto".to_string(),
                MinBytes::Fixed(n) => n.to_string(),
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(v: &[(usize, u64)]) -> [u64; N] {
        let mut a = [0; N];
        for &(i, x) in v {
            a[i] = x;
        }
        a
    }

    /// The report gives every counter, by its name, with its own value, in order, and
    /// nothing else.
    #[test]
    fn report_names_every_counter() {
        let all: Vec<u64> = (1..=N as u64).collect();
        let line = report_line(0, &all.try_into().unwrap(), &Config::default());
        let rest = line
            .strip_prefix("mpicast: stats: rank=0 ")
            .unwrap_or_else(|| panic!("{line}"));
        let said: Vec<String> = rest.split(' ').map(str::to_string).collect();
        let want: Vec<String> = NAMES
            .iter()
            .zip(1..)
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        assert_eq!(said, want, "{line}");
    }

    /// The words between `open` and the next `}` of `src` that come before `sep`, one per
    /// line: the field names of a struct, or the names a struct literal sets.
    fn names_in(src: &str, open: &str, sep: &str) -> Vec<String> {
        let at = src.find(open).unwrap_or_else(|| panic!("no {open:?}"));
        let body = &src[at + open.len()..];
        body[..body.find('}').unwrap()]
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && l.contains(sep))
            .map(|l| {
                let name = l.split(sep).next().unwrap();
                name.trim_start_matches("pub ").trim().to_string()
            })
            .collect()
    }

    /// The counters are kept by position in three places besides NAMES: the fields of
    /// `Counters`, the loads of `snapshot`, and the C struct `MPICAST_Stats` (its first
    /// fields; `MPICAST_Get_stats` fills them by name). Each agrees with NAMES, name by name.
    #[test]
    fn every_list_of_the_counters_is_in_the_order_of_names() {
        let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), N, "a name twice");

        let here = include_str!("stats.rs");
        assert_eq!(
            names_in(here, "pub struct Counters {", ": AtomicU64"),
            names
        );
        let snap = &here[here.find("pub fn snapshot()").unwrap()..];
        let loaded: Vec<String> = snap[..snap.find("\n}").unwrap()]
            .lines()
            .filter_map(|l| l.trim().strip_prefix("c.")?.split('.').next())
            .map(str::to_string)
            .collect();
        assert_eq!(loaded, names);

        let header = include_str!("../include/mpicast.h");
        let c_fields: Vec<String> = names_in(header, "typedef struct MPICAST_Stats {", ";")
            .iter()
            .filter_map(|f| Some(f.strip_prefix("uint64_t ")?.to_string()))
            .collect();
        assert!(!c_fields.is_empty() && c_fields.len() <= N, "{c_fields:?}");
        assert_eq!(c_fields, names[..c_fields.len()]);
    }

    #[test]
    fn host_only_says_why() {
        let cfg = Config::default();
        // Some multicast, or nothing at all: no note.
        assert_eq!(host_only(&vals(&[(0, 1), (1, 5)]), &cfg, true), None);
        assert_eq!(host_only(&vals(&[(10, 3)]), &cfg, true), None);
        // One host under the defaults: say so, and what to set.
        let w = host_only(&vals(&[(1, 3), (3, 1)]), &cfg, true).unwrap();
        assert!(w.starts_with("all ranks run on one host"), "{w}");
        assert!(w.contains("MPICAST_TOPO=flat MPICAST_MIN_BYTES=0"), "{w}");
        assert!(!w.contains("MPICAST_VERBOSE=2"), "{w}");
        // Several hosts, small broadcasts: the threshold.
        let w = host_only(&vals(&[(1, 3)]), &cfg, false).unwrap();
        assert!(
            w.starts_with("broadcasts smaller than the threshold"),
            "{w}"
        );
        assert!(w.contains("MPICAST_MIN_BYTES=auto: 32768 bytes"), "{w}");
        assert!(
            w.ends_with("MPICAST_VERBOSE=2 prints the reason for each call"),
            "{w}"
        );
        // Only barriers, on one host, with MPICAST_TOPO=flat: not the host's fault.
        let flat = Config {
            topo: Topo::Flat,
            min_bytes: MinBytes::Fixed(0),
            ..Config::default()
        };
        let w = host_only(&vals(&[(3, 1), (9, 1)]), &flat, true).unwrap();
        assert!(
            w.starts_with("multicast did not work on 1 communicator"),
            "{w}"
        );
        let off = Config {
            disable: true,
            ..Config::default()
        };
        assert_eq!(
            host_only(&vals(&[(1, 1)]), &off, true).as_deref(),
            Some("MPICAST_DISABLE is set")
        );
    }
}
