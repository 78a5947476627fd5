//! What the command line refuses before it starts on something it cannot finish: a run that
//! needs more memory than this process may use (estimated from the numbers on the command line,
//! before anything big is allocated), a number too large for its option (the message names the
//! largest one taken), and an output file that cannot be written (found before a long
//! measurement rather than after it).
//!
//! The memory this process may use is the least of: `MemAvailable` in /proc/meminfo, the
//! address-space and data-size limits (`ulimit -v`, `ulimit -d`) less what the process has
//! mapped already, and its cgroup's memory limit less its usage. Where /proc/meminfo cannot be
//! read, a fixed cap of [`FIXED_CAP`] stands in for it. Each message says which one it was.
//! Against an address-space limit an estimate counts a quarter more: what a process maps runs
//! ahead of what it touches (arrays that grow by doubling, the allocator's own reserves), by
//! up to a fifth in the runs measured.

use crate::goal::gen::Algo;
use std::fmt::Display;
use std::num::{IntErrorKind, ParseIntError};
use std::str::FromStr;

/// The limit when the system tells nothing (no /proc/meminfo, no limits): 16 GiB.
pub const FIXED_CAP: u64 = 16 << 30;

/// How much memory this process may still take, and what says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub source: &'static str,
    /// A limit on the address space (or data segment) rather than on memory in use.
    pub mapped: bool,
}

/// `MemAvailable` of a /proc/meminfo text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    kib_field(meminfo, "MemAvailable:")
}

/// A `Name:   1234 kB` field of /proc/meminfo or /proc/self/status, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft limit of a resource of `getrlimit`, `None` when unlimited (a macro: the type of
/// the resource differs between C libraries).
macro_rules! soft_limit {
    ($resource:expr) => {{
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one `rlimit` into the struct it is given, which lives here.
        let ok = unsafe { libc::getrlimit($resource, &mut r) } == 0;
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
    }};
}

/// This process's cgroup memory limit less its usage (cgroup v2, else v1); `None` when there
/// is no limit or it cannot be read. Limits of 2^60 bytes and more count as none (v1 writes
/// "unlimited" as a huge number).
fn cgroup_room() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: String| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut candidates = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        if controllers.is_empty() {
            candidates.push((
                format!("/sys/fs/cgroup{path}/memory.max"),
                format!("/sys/fs/cgroup{path}/memory.current"),
            ));
        } else if controllers.split(',').any(|c| c == "memory") {
            for dir in [
                format!("/sys/fs/cgroup/memory{path}"),
                "/sys/fs/cgroup/memory".to_string(),
            ] {
                candidates.push((
                    format!("{dir}/memory.limit_in_bytes"),
                    format!("{dir}/memory.usage_in_bytes"),
                ));
            }
        }
    }
    candidates.into_iter().find_map(|(max, current)| {
        let max = read(max).filter(|&m| m < 1 << 60)?;
        Some(max.saturating_sub(read(current).unwrap_or(0)))
    })
}

/// The limits that apply to this process now (at least one).
pub fn budgets() -> Vec<Budget> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mapped = |field: &str| kib_field(&status, field).unwrap_or(0);
    let mut found: Vec<Budget> = Vec::new();
    if let Some(b) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .as_deref()
        .and_then(mem_available)
    {
        found.push(Budget {
            bytes: b,
            source: "MemAvailable in /proc/meminfo",
            mapped: false,
        });
    } else {
        found.push(Budget {
            bytes: FIXED_CAP,
            source: "a fixed cap: /proc/meminfo could not be read",
            mapped: false,
        });
    }
    if let Some(l) = soft_limit!(libc::RLIMIT_AS) {
        found.push(Budget {
            bytes: l.saturating_sub(mapped("VmSize:")),
            source: "the address-space limit, ulimit -v",
            mapped: true,
        });
    }
    if let Some(l) = soft_limit!(libc::RLIMIT_DATA) {
        found.push(Budget {
            bytes: l.saturating_sub(mapped("VmData:")),
            source: "the data-size limit, ulimit -d",
            mapped: true,
        });
    }
    if let Some(b) = cgroup_room() {
        found.push(Budget {
            bytes: b,
            source: "this cgroup's memory limit",
            mapped: false,
        });
    }
    found
}

/// `bytes` for people: `812 KiB`, `3.4 GiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{bytes} bytes"),
        _ if v < 10.0 => format!("{v:.1} {}", UNITS[u]),
        _ => format!("{v:.0} {}", UNITS[u]),
    }
}

/// The refusal of `what` (e.g. "sim --gen binomial-bcast --ranks 1000000000") when it needs
/// more than one of `budgets` (the smallest it exceeds is named), as one line without the
/// program's name.
pub fn over_budget(what: &str, need: u64, budgets: &[Budget]) -> Option<String> {
    let mapped = need.saturating_add(need / 4);
    let b = budgets
        .iter()
        .filter(|b| b.bytes < if b.mapped { mapped } else { need })
        .min_by_key(|b| b.bytes)?;
    let address_space = if b.mapped {
        format!(" and {} of address space", human(mapped))
    } else {
        String::new()
    };
    Some(format!(
        "{what} needs about {} of memory{address_space}, more than the {} this process may use \
         ({})",
        human(need),
        human(b.bytes),
        b.source
    ))
}

/// `over_budget` against this process's [`budgets`]: `Err` with the line to print.
pub fn check_memory(what: &str, need: u64) -> Result<(), String> {
    match over_budget(what, need, &budgets()) {
        Some(m) => Err(m),
        None => Ok(()),
    }
}

/// The integer types of the options, with their bounds for messages.
pub trait Int: FromStr<Err = ParseIntError> + Display + Copy {
    const LEAST: Self;
    const MOST: Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const LEAST: $t = <$t>::MIN;
            const MOST: $t = <$t>::MAX;
        }
    )*};
}
int!(u8, u16, u32, u64, usize, i32, i64);

/// The value of option `flag`, or why not: not a number, or one beyond the type's range (the
/// message names the bound).
pub fn parse_int<T: Int>(flag: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|e: ParseIntError| {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        match e.kind() {
            IntErrorKind::PosOverflow => format!("{flag} wants at most {}, not `{v}`", T::MOST),
            IntErrorKind::NegOverflow => format!("{flag} wants at least {}, not `{v}`", T::LEAST),
            _ if v.strip_prefix('-').is_some_and(digits) => {
                format!("{flag} wants at least {}, not `{v}`", T::LEAST)
            }
            _ => format!("{flag} wants a number, not `{v}`"),
        }
    })
}

/// Whether `path` can be written, found without changing it: an existing file is opened for
/// writing (not truncated), a new one is created and removed again. `Err` is the line to print.
pub fn check_writable(path: &str) -> Result<(), String> {
    let p = std::path::Path::new(path);
    let opened = if p.exists() {
        std::fs::OpenOptions::new().write(true).open(p).map(|_| ())
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .and_then(|_| std::fs::remove_file(p))
    };
    opened.map_err(|e| format!("{path}: cannot write it: {e}"))
}

/// The actions and dependency edges (completion and start) that `gen::generate_each(algo, n,
/// root, size)` makes, or a little more: counted from each generator's shape, without
/// generating anything (the tests hold them against generated programs).
pub fn program_size(algo: Algo, n: u32, size: usize) -> (u64, u64) {
    use crate::algo::{dissemination, imcast_sched, pipeline};
    let n64 = u64::from(n);
    let segs = |seg: usize| pipeline::num_segments(size, seg) as u64;
    match algo {
        // One receive per rank but the root, one send per edge of the tree; a send waits for
        // its rank's receive.
        Algo::BinomialBcast => (2 * n64, n64),
        // The P core ranks: K rounds of `ways` sends, receives and reductions; each of the
        // other ranks folds in and out (a send and a receive), met by a receive, a reduction
        // and a send on its core rank. Under two edges an action.
        Algo::DisseminationAllreduce { ways, .. } => {
            let (k, p) = dissemination::rounds(n, ways);
            let p = u64::from(p);
            let actions = p * 3 * u64::from(ways) * u64::from(k) + 5 * (n64 - p);
            (actions, 2 * actions)
        }
        // A scout received per rank but the root, one sent (the root's multicast), a multicast
        // receive; the barrier's also waits for its scout.
        Algo::ScoutTreeBcast => (3 * n64, n64),
        Algo::McastBarrier => (3 * n64, 2 * n64),
        // The root receives every scout; the others send one and receive the multicast.
        Algo::ScoutLinearBcast => (3 * n64, n64),
        Algo::EagerMcastBcast => (n64, 0),
        // Per segment: a receive per rank but the root, a send per edge; each send waits for
        // its receive and starts after the send before it.
        Algo::ChainBcast { segment }
        | Algo::BinaryTreeBcast { segment }
        | Algo::Dbcast { segment } => (2 * n64 * segs(segment), 2 * n64 * segs(segment)),
        // As above, and a rank's first send waits for all its receives.
        Algo::BinomialIsendBcast { segment } => (2 * n64 * segs(segment), 3 * n64 * segs(segment)),
        Algo::ImcastBcast { segment, ppn } => match imcast_sched::transport(n, ppn, size) {
            imcast_sched::Transport::P2p => (2 * n64 * segs(segment), 2 * n64 * segs(segment)),
            // A multicast receive, an envelope received and those sent on.
            imcast_sched::Transport::Ip => (3 * n64, 2 * n64),
        },
    }
}

/// The memory, beyond the program, that a generator needs while it runs: `imcast-bcast` plans
/// its whole tree first (a parent, a list of hops and the topology ID of every rank, and the
/// routing of the destination lists).
pub fn generator_bytes(algo: Algo, n: u32) -> u64 {
    match algo {
        Algo::ImcastBcast { .. } => u64::from(n) * 128,
        _ => 0,
    }
}

/// The memory `mpicast sim` needs for a program of `ranks` ranks, `actions` actions and `deps`
/// dependency edges: the simulator's form of it (`sim::Flat`) and the run's state.
pub fn sim_bytes(ranks: u64, actions: u64, deps: u64, traced: bool) -> u64 {
    let flat = actions
        .saturating_mul(std::mem::size_of::<crate::sim::flat::Act>() as u64)
        .saturating_add(deps.saturating_mul(4))
        .saturating_add(ranks.saturating_mul(4));
    flat.saturating_add(crate::sim::loggops::run_bytes(ranks, actions, 1, 1, traced))
}

/// Takes the room of a generated program of `ranks` ranks whose size `program_size` gave, at
/// once (each at most what the simulator's form can address), or says why it cannot be had.
pub fn reserve(
    flat: &mut crate::sim::Flat,
    ranks: u32,
    actions: u64,
    deps: u64,
) -> Result<(), String> {
    let most = u64::from(u32::MAX);
    flat.try_reserve(
        ranks as usize + 1,
        actions.min(most) as usize,
        deps.min(most) as usize,
    )
    .map_err(|e| format!("cannot have the memory for the program: {e}"))
}

/// The memory `mpicast goal gen` needs to hold a generated program of `ranks` ranks, `actions`
/// actions and `deps` edges, and its text or binary form: per rank its schedule's own arrays
/// and its output, measured at about 640 bytes, and per action and edge what they add.
pub fn gen_bytes(ranks: u64, actions: u64, deps: u64) -> u64 {
    let op = std::mem::size_of::<crate::sched::Op>() as u64;
    actions
        .saturating_mul(op + 64)
        .saturating_add(deps.saturating_mul(24))
        .saturating_add(ranks.saturating_mul(640))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::gen::{self, algo_from_name};

    #[test]
    fn meminfo_and_status_fields() {
        let t = "MemTotal:       24684084 kB\nMemFree:        23417024 kB\nMemAvailable:   \
                 24250748 kB\n";
        assert_eq!(mem_available(t), Some(24250748 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(kib_field("VmSize:\t   1000 kB\n", "VmSize:"), Some(1024000));
        let b = budgets();
        assert!(!b.is_empty() && b.iter().all(|b| b.bytes > 0), "{b:?}");
    }

    #[test]
    fn refusals_say_estimate_limit_and_source() {
        let b = [
            Budget {
                bytes: 20 << 30,
                source: "MemAvailable in /proc/meminfo",
                mapped: false,
            },
            Budget {
                bytes: 2 << 30,
                source: "the address-space limit, ulimit -v",
                mapped: true,
            },
        ];
        assert_eq!(over_budget("x", 1 << 30, &b), None);
        assert_eq!(
            over_budget("topo of 5 ranks", 7 << 28, &b).unwrap(),
            "topo of 5 ranks needs about 1.8 GiB of memory and 2.2 GiB of address space, more \
             than the 2.0 GiB this process may use (the address-space limit, ulimit -v)"
        );
        assert_eq!(
            over_budget("sim", 30 << 30, &b[..1]).unwrap(),
            "sim needs about 30 GiB of memory, more than the 20 GiB this process may use \
             (MemAvailable in /proc/meminfo)"
        );
        assert_eq!(human(0), "0 bytes");
        assert_eq!(human(1023), "1023 bytes");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(150 << 30), "150 GiB");
        assert_eq!(human(u64::MAX), "16384 PiB");
    }

    #[test]
    fn numbers_too_large_name_the_limit() {
        assert_eq!(parse_int::<u32>("--ranks", "12"), Ok(12));
        assert_eq!(
            parse_int::<u32>("--ranks", "1099511627776").unwrap_err(),
            "--ranks wants at most 4294967295, not `1099511627776`"
        );
        assert_eq!(
            parse_int::<u32>("--ranks", "-3").unwrap_err(),
            "--ranks wants at least 0, not `-3`"
        );
        assert_eq!(
            parse_int::<u64>("--seed", "x1").unwrap_err(),
            "--seed wants a number, not `x1`"
        );
        assert_eq!(
            parse_int::<u64>("--seed", "").unwrap_err(),
            "--seed wants a number, not ``"
        );
        assert_eq!(
            parse_int::<i32>("-k", "-99999999999").unwrap_err(),
            "-k wants at least -2147483648, not `-99999999999`"
        );
    }

    #[test]
    fn writable_paths() {
        let dir = std::env::temp_dir().join(format!("mpicast-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.conf");
        let new = new.to_str().unwrap();
        assert_eq!(check_writable(new), Ok(()));
        assert!(!std::path::Path::new(new).exists(), "removed again");
        let old = dir.join("old.conf");
        std::fs::write(&old, "keep").unwrap();
        assert_eq!(check_writable(old.to_str().unwrap()), Ok(()));
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "keep",
            "not truncated"
        );
        let e = check_writable("/no/such/dir/x.conf").unwrap_err();
        assert!(
            e.starts_with("/no/such/dir/x.conf: cannot write it: "),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The estimates hold the generated programs and are not far above them.
    #[test]
    fn program_sizes_bound_the_generated_programs() {
        let names = gen::NAMES;
        for &name in names {
            for ways in [1, 3] {
                for (n, size, seg, ppn) in [
                    (1u32, 8usize, None, None),
                    (2, 0, None, None),
                    (7, 8, None, None),
                    (64, 100_000, Some(8192), Some(4)),
                    (300, 4096, Some(1000), Some(3)),
                    (1000, 8, None, Some(16)),
                    (513, 1 << 20, None, None),
                ] {
                    let algo = algo_from_name(name, Some(ways), None)
                        .unwrap()
                        .with_segment(seg)
                        .with_ppn(ppn);
                    let (mut actions, mut deps) = (0u64, 0u64);
                    gen::generate_each(algo, n, 0, size, |s| {
                        actions += s.len() as u64;
                        for (id, _) in s.actions() {
                            deps += (s.dependents(id).len() + s.start_dependents(id).len()) as u64;
                        }
                        Ok(())
                    })
                    .unwrap();
                    let (a, d) = program_size(algo, n, size);
                    let at = format!("{name} ways {ways} n {n} size {size} seg {seg:?}");
                    assert!(
                        a >= actions && d >= deps,
                        "{at}: {a} {d} < {actions} {deps}"
                    );
                    let slack = 4 * u64::from(n);
                    assert!(
                        a <= actions + actions / 8 + slack,
                        "{at}: {a} over {actions}"
                    );
                    assert!(d <= 2 * deps + slack, "{at}: {d} over {deps}");
                }
            }
        }
    }
}
