//! The generators of `algo`, each run for every rank of a group and gathered into one
//! `Program`, so that any of them prints as text, assembles, validates and simulates like a
//! hand-written file. `mpicast goal gen` is a thin layer over `generate`.

use super::Program;
use crate::algo::{self, dissemination, Sync};
use crate::sched::func::{Dtype, Func, Opcode, Predef};
use crate::sched::Schedule;

/// A collective algorithm that emits GOAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// The GOAL paper's Listing 2 (binomial broadcast), rooted anywhere.
    BinomialBcast,
    /// The GOAL paper's Listing 3 (dissemination) as an allreduce (see `algo::dissemination`).
    DisseminationAllreduce { ways: u32, func: Func },
    /// Seed 002: scouts up the binary tree, then one multicast.
    ScoutTreeBcast,
    /// Seed 002: every scout straight to the root, then one multicast.
    ScoutLinearBcast,
    /// Scouts up the binary tree to rank 0, whose zero-byte multicast releases everyone.
    McastBarrier,
    /// A pipelined chain from the root (ranks in order from it, wrapping), in segments of
    /// `segment` bytes (`algo::pipeline::chain`).
    ChainBcast { segment: usize },
    /// A pipelined binary tree, heap-ordered relative to the root, in segments of `segment`
    /// bytes (`algo::pipeline::binary_tree`).
    BinaryTreeBcast { segment: usize },
    /// The dynamic broadcast as the library runs it, from the root to every other rank: the
    /// binomial tree of `algo::dbcast`, or the pipelined chain for long messages, in segments
    /// of `segment` bytes (`algo::dbcast_sched`).
    Dbcast { segment: usize },
    /// The binomial tree as Open MPI runs it unsegmented: each rank sends to all its children
    /// at once, and they share its link; the sharing is modelled by segments of `segment` bytes
    /// sent round robin (`algo::binomial::bcast_isend`).
    BinomialIsendBcast { segment: usize },
    /// Seed 002's broadcast without scouts (`Sync::Eager`): the root multicasts at once, every
    /// other rank's multicast receive is posted from the start.
    EagerMcastBcast,
    /// Seed 000's topology-aware multicast from the root to every other rank as
    /// `MPICAST_Imcast` runs it, `ppn` ranks to a host, point-to-point in segments of
    /// `segment` bytes or by IP multicast (`algo::imcast_sched`).
    ImcastBcast { segment: usize, ppn: u32 },
}

/// The segment size of `binomial-isend-bcast` unless `--segment` says otherwise: small
/// enough that the copies to the children finish together as on a shared link, large enough
/// that the per-message costs stay small against a segment's time on the link.
pub const DEFAULT_ISEND_SEGMENT: usize = 16384;

/// The segment size of `chain-bcast` and `binary-tree-bcast` unless `--segment` says
/// otherwise (a message smaller than it is one segment).
pub const DEFAULT_SEGMENT: usize = 65536;

impl Algo {
    /// The same algorithm with segments of `segment` bytes, for those that cut the message;
    /// the others are returned unchanged. `None` changes nothing.
    pub fn with_segment(self, segment: Option<usize>) -> Algo {
        let Some(s) = segment else { return self };
        match self {
            Algo::ChainBcast { .. } => Algo::ChainBcast { segment: s },
            Algo::BinaryTreeBcast { .. } => Algo::BinaryTreeBcast { segment: s },
            Algo::Dbcast { .. } => Algo::Dbcast { segment: s },
            Algo::BinomialIsendBcast { .. } => Algo::BinomialIsendBcast { segment: s },
            Algo::ImcastBcast { ppn, .. } => Algo::ImcastBcast { segment: s, ppn },
            other => other,
        }
    }

    /// The segment size, for the algorithms that cut the message.
    pub fn segment(self) -> Option<usize> {
        match self {
            Algo::ChainBcast { segment }
            | Algo::BinaryTreeBcast { segment }
            | Algo::Dbcast { segment }
            | Algo::BinomialIsendBcast { segment }
            | Algo::ImcastBcast { segment, .. } => Some(segment),
            _ => None,
        }
    }

    /// The same algorithm with `ppn` ranks to a host, for those that know hosts
    /// (`imcast-bcast`); the others are returned unchanged. `None` changes nothing.
    pub fn with_ppn(self, ppn: Option<u32>) -> Algo {
        match (self, ppn) {
            (Algo::ImcastBcast { segment, .. }, Some(ppn)) => Algo::ImcastBcast { segment, ppn },
            (other, _) => other,
        }
    }
}

/// The names `algo_from_name` knows, for help texts.
pub const NAMES: &[&str] = &[
    "binomial-bcast",
    "dissemination-allreduce",
    "scout-tree-bcast",
    "scout-linear-bcast",
    "mcast-barrier",
    "chain-bcast",
    "binary-tree-bcast",
    "dbcast",
    "eager-mcast-bcast",
    "imcast-bcast",
    "binomial-isend-bcast",
];

/// The algorithm called `name`; `ways` and `func` matter for the dissemination only
/// (defaults 1 and `sumInt32`). The segmented ones take their default segment size
/// (`DEFAULT_SEGMENT`, and for `dbcast` and `imcast-bcast` the library's
/// `MPICAST_SEGMENT_BYTES` default); `Algo::with_segment` changes it. `imcast-bcast` puts one
/// rank on each host; `Algo::with_ppn` changes that.
pub fn algo_from_name(name: &str, ways: Option<u32>, func: Option<Func>) -> Option<Algo> {
    Some(match name {
        "binomial-bcast" | "binomial" => Algo::BinomialBcast,
        "dissemination-allreduce" | "dissemination" => Algo::DisseminationAllreduce {
            ways: ways.unwrap_or(1),
            func: func.unwrap_or(Func::Predef(
                Predef::new(Opcode::Sum, Dtype::Int32).expect("sum is defined on Int32"),
            )),
        },
        "scout-tree-bcast" | "scout-tree" => Algo::ScoutTreeBcast,
        "scout-linear-bcast" | "scout-linear" => Algo::ScoutLinearBcast,
        "mcast-barrier" | "barrier" => Algo::McastBarrier,
        "chain-bcast" | "chain" => Algo::ChainBcast {
            segment: DEFAULT_SEGMENT,
        },
        "binary-tree-bcast" | "binary-tree" => Algo::BinaryTreeBcast {
            segment: DEFAULT_SEGMENT,
        },
        "dbcast" | "dynamic-bcast" => Algo::Dbcast {
            segment: algo::dbcast_sched::library_defaults().0,
        },
        "binomial-isend-bcast" | "binomial-isend" => Algo::BinomialIsendBcast {
            segment: DEFAULT_ISEND_SEGMENT,
        },
        "eager-mcast-bcast" | "eager-mcast" => Algo::EagerMcastBcast,
        "imcast-bcast" | "imcast" => Algo::ImcastBcast {
            segment: algo::imcast_sched::library_defaults().1,
            ppn: 1,
        },
        _ => return None,
    })
}

/// The program of `algo` over `n` ranks moving `size` bytes (per rank for the allreduce) from
/// `root` (ignored by the allreduce and the barrier).
pub fn generate(algo: Algo, n: u32, root: u32, size: usize) -> Result<Program, String> {
    let mut schedules = Vec::with_capacity(n as usize);
    generate_each(algo, n, root, size, |s| {
        schedules.push(s);
        Ok(())
    })?;
    let extra: &[&str] = match algo {
        Algo::DisseminationAllreduce { .. } => &["tmp"],
        _ => &[],
    };
    Ok(Program::from_schedules(schedules, extra))
}

/// The same program handed over one rank at a time, rank 0 first, so that a consumer (the
/// simulator at a million ranks) never holds it whole; an error of `each` stops the walk.
pub fn generate_each(
    algo: Algo,
    n: u32,
    root: u32,
    size: usize,
    mut each: impl FnMut(Schedule) -> Result<(), String>,
) -> Result<(), String> {
    if n == 0 {
        return Err("a group needs at least one rank".into());
    }
    let rooted = matches!(
        algo,
        Algo::BinomialBcast
            | Algo::ScoutTreeBcast
            | Algo::ScoutLinearBcast
            | Algo::ChainBcast { .. }
            | Algo::BinaryTreeBcast { .. }
            | Algo::Dbcast { .. }
            | Algo::BinomialIsendBcast { .. }
            | Algo::EagerMcastBcast
            | Algo::ImcastBcast { .. }
    );
    if rooted && root >= n {
        return Err(format!("root {root} is not below the {n} ranks"));
    }
    if let Some(seg) = algo.segment() {
        if seg == 0 {
            return Err("a segment needs at least one byte".into());
        }
        // Segment k goes with tag k, and a forwarding rank has a receive and up to two
        // sends per segment: both must fit in u32.
        let nsegs = algo::pipeline::num_segments(size, seg) as u64;
        if nsegs > u64::from(u32::MAX / 4) {
            return Err(format!(
                "{size} bytes in segments of {seg} are {nsegs} segments, too many"
            ));
        }
    }
    if let Algo::DisseminationAllreduce { ways, func } = algo {
        if ways == 0 {
            return Err("dissemination needs at least one way".into());
        }
        if let Func::Predef(p) = func {
            crate::sched::func::check_lengths(p, size, size).map_err(|e| e.to_string())?;
        }
    }
    let imcast = match algo {
        Algo::ImcastBcast { segment, ppn } => {
            if ppn == 0 {
                return Err("a host needs at least one rank (--ppn)".into());
            }
            Some(algo::imcast_sched::Plan::new(n, ppn, root, size, segment))
        }
        _ => None,
    };
    for me in 0..n {
        each(match algo {
            Algo::BinomialBcast => algo::binomial::bcast(n, root, me, size),
            Algo::DisseminationAllreduce { ways, func } => {
                dissemination::allreduce(n, ways, me, size, func)
            }
            Algo::ScoutTreeBcast => algo::bcast(Sync::Tree, n, root, me, size),
            Algo::ScoutLinearBcast => algo::bcast(Sync::Linear, n, root, me, size),
            Algo::McastBarrier => algo::barrier(n, me),
            Algo::ChainBcast { segment } => algo::pipeline::chain(n, root, me, size, segment),
            Algo::BinaryTreeBcast { segment } => {
                algo::pipeline::binary_tree(n, root, me, size, segment)
            }
            Algo::Dbcast { segment } => algo::dbcast_sched::bcast(n, root, me, size, segment),
            Algo::BinomialIsendBcast { segment } => {
                algo::binomial::bcast_isend(n, root, me, size, segment)
            }
            Algo::EagerMcastBcast => algo::bcast(Sync::Eager, n, root, me, size),
            Algo::ImcastBcast { .. } => imcast.as_ref().expect("planned above").schedule(me),
        })?;
    }
    Ok(())
}
