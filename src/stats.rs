//! Process-wide counters: what `MPICAST_Get_stats` returns and what `MPICAST_STATS=1`
//! prints at finalize. Relaxed atomics: they are statistics, not synchronisation.
//!
//! The counters are named once, in [`with_counters`]: from its rows come the fields of
//! [`Counters`] and [`COUNTERS`], [`N`], [`NAMES`] (the order of the report line and of a
//! [`snapshot`]), [`Values`] (a snapshot by name) and the copy into the C struct
//! `MPICAST_Stats` (`ffi::ext::stats`, whose fields are the rows of `c`: the struct is written
//! out there because cbindgen reads it from the source, and a test holds it to the rows).

use crate::config::{Config, MinBytes, Topo};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The table of counters: calls `$then!` with its rows. Each row is a counter's doc comment
/// and name, then optionally `+ expr`: a value added to it in a [`snapshot`] (kept
/// elsewhere). The rows of `c { .. }` are the fields of the C struct `MPICAST_Stats`, in its
/// order (its layout is fixed: never reorder them or add to them); those of `line { .. }` are
/// in the `MPICAST_STATS=1` line only, where a new counter goes, at the end. The order of all
/// of them is the order of the report line, which scripts parse (`STATS_RE` of
/// scripts/test-lib.sh).
macro_rules! with_counters {
    ($then:ident) => {
        $then! {
            c {
                /// MPI_Bcast calls that took the multicast path.
                bcast_mcast,
                /// MPI_Bcast calls handed to the host MPI (and those the fast path handed
                /// over without an MPI_Bcast of ours).
                bcast_pmpi + crate::fastpath::FAST.host_calls(),
                /// MPI_Barrier calls that took the multicast path.
                barrier_mcast,
                /// MPI_Barrier calls handed to the host MPI.
                barrier_pmpi,
                /// Bytes this process multicast as a broadcast root.
                bytes_mcast,
                /// Datagrams sent (data, retransmissions, releases).
                dgrams_sent,
                /// Datagrams accepted.
                dgrams_recv,
                /// Repairs: fragments retransmitted, and release queries sent.
                repairs,
                /// Datagrams dropped because they failed authentication or were malformed.
                rejected,
                /// Communicators that fell back to the host MPI because multicast did not work.
                fallbacks,
            }
            line {
                /// `MPICAST_Imcast` calls that started a multicast.
                imcast,
                /// Dynamic broadcasts started: `MPICAST_Dbcast` calls, and the releases of
                /// `MPICAST_Send_release` that went to several recipients at once.
                dbcast,
                /// `MPICAST_Mmcast` calls this rank completed.
                mmcast,
                /// Messages of a broadcast's (or an IP `MPICAST_Imcast`'s) data sent by the
                /// host MPI to a receiver that multicast no longer reached
                /// (`transport::heal::serve`, `serve_on`).
                unicast,
                /// Communicators that left multicast for the host MPI mid-job (and roots whose
                /// `MPICAST_Imcast` multicasts moved to point-to-point,
                /// `transport::imcast_ip`), ...
                heal_host,
                /// ... that went on with smaller datagrams, ...
                heal_step,
                /// ... and that came back to multicast (or to a larger size) after a probe (or
                /// a root's trial by IP that needed no repair).
                heal_return,
                /// `MPI_Isend`s that fan-out detection held (`MPICAST_FANOUT`).
                fanout_held,
                /// Groups of held sends that went as one dynamic broadcast (several
                /// recipients; each is counted in `dbcast` too).
                fanout_groups,
                /// Bytes those broadcasts delivered (size times recipients).
                fanout_bcast_bytes,
                /// Bytes of the other sends on communicators with fan-out detection: too
                /// small, of another mode, or a held send that went to one rank.
                fanout_p2p_bytes,
            }
        }
    };
}
pub(crate) use with_counters;

/// Everything of this module that the rows of [`with_counters`] give.
macro_rules! counters {
    (
        c { $( $(#[doc = $cdoc:literal])* $c:ident $(+ $cextra:expr)? ),* $(,)? }
        line { $( $(#[doc = $ldoc:literal])* $l:ident $(+ $lextra:expr)? ),* $(,)? }
    ) => {
        /// How many counters the C struct `MPICAST_Stats` has: the first of [`NAMES`].
        pub const IN_C: usize = [$(stringify!($c),)*].len();

        counters! {
            @all $( $(#[doc = $cdoc])* $c $(+ $cextra)?, )* $( $(#[doc = $ldoc])* $l $(+ $lextra)?, )*
        }
    };
    (@all $( $(#[doc = $doc:literal])* $name:ident $(+ $extra:expr)?, )*) => {
        #[derive(Default)]
        #[cfg_attr(test, derive(Debug))]
        pub struct Counters {
            $( $(#[doc = $doc])* pub $name: AtomicU64, )*
        }

        pub static COUNTERS: Counters = Counters {
            $( $name: AtomicU64::new(0), )*
        };

        /// How many counters there are.
        pub const N: usize = NAMES.len();

        /// The names, in the order of `snapshot` (and of the fields of `MPICAST_Stats`, which
        /// are the first of them), as printed in the report.
        pub const NAMES: [&str; [$(stringify!($name),)*].len()] =
            [$(stringify!($name),)*];

        /// A snapshot by name.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Values {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        impl Values {
            pub fn of(vals: &[u64; N]) -> Values {
                let [$($name,)*] = *vals;
                Values { $($name,)* }
            }

            /// The values in the order of [`NAMES`].
            pub fn all(&self) -> [u64; N] {
                [$(self.$name,)*]
            }
        }

        /// The counters of `c`, in the order of [`NAMES`]; with `extra`, each with what its
        /// row adds.
        fn load(c: &Counters, extra: bool) -> [u64; N] {
            [$( c.$name.load(Relaxed) $(+ if extra { $extra } else { 0 })?, )*]
        }

        /// Each counter of `c`, in the order of [`NAMES`].
        #[cfg(test)]
        fn each(c: &Counters) -> [&AtomicU64; N] {
            [$( &c.$name, )*]
        }
    };
}
with_counters!(counters);

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

/// This process's counters, in the order of [`NAMES`].
pub fn snapshot() -> [u64; N] {
    load(&COUNTERS, true)
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
    let Values {
        bcast_mcast,
        bcast_pmpi,
        barrier_mcast,
        barrier_pmpi,
        fallbacks,
        ..
    } = Values::of(vals);
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

    /// A snapshot with the counters `set` sets, and every other 0.
    fn v(set: impl FnOnce(&mut Values)) -> [u64; N] {
        let mut v = Values::default();
        set(&mut v);
        v.all()
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

    /// The counters of the report as scripts match them: the names of `STATS_RE` in
    /// scripts/test-lib.sh, which the C tests use on the `MPICAST_STATS=1` line.
    fn names_scripts_expect() -> Vec<String> {
        let lib = include_str!("../scripts/test-lib.sh");
        let re = lib
            .lines()
            .find_map(|l| l.strip_prefix("STATS_RE="))
            .expect("no STATS_RE in scripts/test-lib.sh");
        re.split(' ')
            .filter_map(|w| w.strip_suffix("=[0-9]+").or(w.strip_suffix("=[0-9]+(;")))
            .filter(|n| *n != "rank")
            .map(str::to_string)
            .collect()
    }

    /// The scripts that read the report expect every counter, in its order.
    #[test]
    fn scripts_expect_every_counter() {
        let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        assert_eq!(names_scripts_expect(), names);
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), N, "a name twice");
    }

    /// A snapshot holds each counter in the place of its name, and [`Values`] gives it back
    /// by that name.
    #[test]
    fn snapshot_places_each_counter_at_its_name() {
        let c = Counters::default();
        for (i, a) in each(&c).iter().enumerate() {
            add(a, 100 + i as u64);
        }
        let said = format!("{c:?}");
        let by_name: Vec<String> = NAMES
            .iter()
            .zip(100..)
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        assert_eq!(said, format!("Counters {{ {} }}", by_name.join(", ")));
        let vals = load(&c, false);
        let want: [u64; N] = std::array::from_fn(|i| 100 + i as u64);
        assert_eq!(vals, want);
        let v = Values::of(&vals);
        assert_eq!(
            format!("{v:?}"),
            format!("Values {{ {} }}", by_name.join(", "))
        );
        assert_eq!(v.all(), vals);
    }

    /// The C struct `MPICAST_Stats` of the header is the first [`IN_C`] counters, in order
    /// (`MPICAST_Get_stats` fills them by name: `ffi::ext::stats`).
    #[test]
    fn the_c_struct_is_the_first_counters() {
        let header = include_str!("../include/mpicast.h");
        let open = "typedef struct MPICAST_Stats {";
        let body = &header[header.find(open).unwrap() + open.len()..];
        let c_fields: Vec<&str> = body[..body.find('}').unwrap()]
            .lines()
            .filter_map(|l| l.trim().strip_prefix("uint64_t ")?.strip_suffix(';'))
            .collect();
        assert_eq!(c_fields, NAMES[..IN_C]);
        assert_eq!(IN_C, 10, "the layout of MPICAST_Stats is fixed");
    }

    #[test]
    fn host_only_says_why() {
        let cfg = Config::default();
        // Some multicast, or nothing at all: no note.
        assert_eq!(
            host_only(&v(|v| (v.bcast_mcast, v.bcast_pmpi) = (1, 5)), &cfg, true),
            None
        );
        assert_eq!(host_only(&v(|v| v.imcast = 3), &cfg, true), None);
        // One host under the defaults: say so, and what to set.
        let w = host_only(&v(|v| (v.bcast_pmpi, v.barrier_pmpi) = (3, 1)), &cfg, true).unwrap();
        assert!(w.starts_with("all ranks run on one host"), "{w}");
        assert!(w.contains("MPICAST_TOPO=flat MPICAST_MIN_BYTES=0"), "{w}");
        assert!(!w.contains("MPICAST_VERBOSE=2"), "{w}");
        // Several hosts, small broadcasts: the threshold.
        let w = host_only(&v(|v| v.bcast_pmpi = 3), &cfg, false).unwrap();
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
        let w = host_only(&v(|v| (v.barrier_pmpi, v.fallbacks) = (1, 1)), &flat, true).unwrap();
        assert!(
            w.starts_with("multicast did not work on 1 communicator"),
            "{w}"
        );
        let off = Config {
            disable: true,
            ..Config::default()
        };
        assert_eq!(
            host_only(&v(|v| v.bcast_pmpi = 1), &off, true).as_deref(),
            Some("MPICAST_DISABLE is set")
        );
    }
}
