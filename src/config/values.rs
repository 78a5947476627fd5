//! The types of setting values (what a parsed setting holds), with the rules they carry
//! themselves (the `auto` threshold, the routing-table pick, subnet arithmetic). No parsing here:
//! that is `parse`.

use crate::algo::prefix::Pick;
use std::fmt;
use std::net::Ipv4Addr;

/// How the scouts synchronise ranks before the root multicasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncAlgo {
    /// Scouts climb a binary tree to the root.
    Tree,
    /// Every rank sends its scout straight to the root.
    Linear,
}

/// How the ranks of a communicator that share a host take part in the multicast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topo {
    /// `leaders` when several hosts each hold several of the ranks, `flat` when every rank
    /// is on its own host, and the host MPI when all ranks share one host (its shared memory
    /// beats a multicast that crosses no wire).
    Auto,
    /// Every rank joins the multicast, wherever it runs.
    Flat,
    /// One rank per host (the lowest) joins the multicast; the others get the data from it
    /// through the host MPI on a host-local communicator.
    Leaders,
}

/// Which interface to multicast on, as the user wrote it in `MPICAST_IFACE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfaceSpec {
    /// An interface name such as `eth0` or `ib0`.
    Name(String),
    /// The interface holding this IPv4 address.
    Addr(Ipv4Addr),
    /// The first interface (by name) with an IPv4 address in this subnet; the address is
    /// normalised (host bits cleared).
    Cidr(Ipv4Addr, u8),
}

impl fmt::Display for IfaceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfaceSpec::Name(n) => write!(f, "{n}"),
            IfaceSpec::Addr(a) => write!(f, "{a}"),
            IfaceSpec::Cidr(a, p) => write!(f, "{a}/{p}"),
        }
    }
}

/// How a dynamic broadcast orders its recipients (`MPICAST_DBCAST_TREE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbcastTree {
    /// The paper's: the caller's order, priorities first.
    Binomial,
    /// Priorities first, then by topology ID, so that subtrees hold ranks that are close.
    Topo,
}

/// How the data of `MPICAST_Imcast` travels (`MPICAST_IMCAST_TRANSPORT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImcastTransport {
    /// Point-to-point messages along the routes (the paper's way).
    P2p,
    /// Once by the communicator's IP multicast group (an envelope takes the routes).
    Ip,
    /// IP for big messages to a large share of the communicator, p2p otherwise.
    Auto,
}

impl fmt::Display for ImcastTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImcastTransport::P2p => "p2p",
            ImcastTransport::Ip => "ip",
            ImcastTransport::Auto => "auto",
        })
    }
}

/// How a routing-table entry of `MPICAST_Imcast` is picked among several candidates
/// (`crate::algo::prefix::Pick`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopoPick {
    /// The candidate nearest (XOR) to the rank's own ID.
    Nearest,
    /// A uniform choice every rank can reproduce from one seed: `Some` as given
    /// (`random:SEED`), `None` for a seed the library draws per communicator at its setup.
    Random { seed: Option<u64> },
}

impl TopoPick {
    /// The pick of `crate::algo::prefix`; `drawn` is the communicator's seed, used unless the
    /// setting names one.
    pub fn pick(self, drawn: u64) -> Pick {
        match self {
            TopoPick::Nearest => Pick::Nearest,
            TopoPick::Random { seed } => Pick::Random {
                seed: seed.unwrap_or(drawn),
            },
        }
    }
}

impl fmt::Display for TopoPick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopoPick::Nearest => f.write_str("nearest"),
            TopoPick::Random { seed: None } => f.write_str("random"),
            TopoPick::Random { seed: Some(s) } => write!(f, "random:{s}"),
        }
    }
}

/// How forwarding and non-blocking GOAL runs make progress besides the application's MPI
/// calls (every MPI call of a rank with a forwarding engine moves it: `transport::progress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Inside MPI calls only (GOAL runs: inside MPICAST_Goal_test / MPICAST_Goal_wait).
    Poll,
    /// Also in a progress thread of the library (needs MPI_THREAD_MULTIPLE, which mpicast
    /// then asks for in MPI_Init / MPI_Init_thread).
    Thread,
    /// The thread where the application's own initialisation got MPI_THREAD_MULTIPLE
    /// (nothing asked for on its behalf), polling otherwise; with `MPICAST_FANOUT=on`, as
    /// `Thread` (fan-out detection serves programs that do not call MPI while they compute).
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinBytes {
    /// From the number of hosts taking part in the multicast: [`MinBytes::resolve`].
    Auto,
    /// This many bytes whatever the communicator (0: every size).
    Fixed(usize),
}

/// `Auto`'s thresholds by the number of multicast members (hosts with `MPICAST_TOPO` leaders,
/// ranks with flat), from the crossovers measured on the emulated cluster (BENCHMARKS.md): the
/// smallest size from which mpicast beat the host MPI's broadcast at every larger size was
/// 1500 B to 4 KiB at 100 Mbit/s but 32 KiB at 1 Gbit/s for 4, 6 and 9 hosts, and a library
/// cannot tell the link rate, so the largest one holds for every member count. With two
/// members both send one copy and the host MPI's point-to-point has the lower latency, so they
/// never multicast.
const AUTO_MIN_BYTES: [(u32, usize); 1] = [(u32::MAX, 32 << 10)];

impl MinBytes {
    /// The threshold for a communicator whose multicast has `members` members.
    pub fn resolve(self, members: u32) -> usize {
        match self {
            MinBytes::Fixed(n) => n,
            MinBytes::Auto if members <= 2 => usize::MAX,
            MinBytes::Auto => AUTO_MIN_BYTES
                .iter()
                .find(|(upto, _)| members <= *upto)
                .map_or(0, |&(_, n)| n),
        }
    }

    /// The smallest threshold any communicator can get: smaller broadcasts skip the lookup.
    pub fn floor(self) -> usize {
        match self {
            MinBytes::Fixed(n) => n,
            MinBytes::Auto => AUTO_MIN_BYTES.iter().map(|&(_, n)| n).min().unwrap_or(0),
        }
    }
}

/// The values `MPICAST_MMCAST_ALGO` takes (`algo::agents::MmcastAlgo::from_name` reads all
/// but `auto`).
pub const MMCAST_ALGOS: [&str; 7] = [
    "auto",
    "sametree-binomial",
    "sametree-cyclic",
    "random-binomial",
    "random-cyclic",
    "spcco",
    "naive",
];

/// Whether `addr` lies in `base/prefix`. `prefix` above 32 is treated as 32.
pub fn in_subnet(addr: Ipv4Addr, base: Ipv4Addr, prefix: u8) -> bool {
    let m = mask(prefix);
    u32::from(addr) & m == u32::from(base) & m
}

pub(super) fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}
