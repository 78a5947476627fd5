//! Configuration: every `MPICAST_*` environment variable, parsed once into one typed [`Config`],
//! and the per-communicator `MPI_Info` hints ([`Hints`]) that may override a few of them.
//!
//! Pure: apart from the thin [`Config::from_env`] wrapper nothing here reads the environment, a
//! file, a clock or a socket. A bad value, or an `MPICAST_*` name that is not in [`VARIABLES`]
//! (a typo), is a [`ConfigError`] naming the variable: nothing is silently ignored and nothing
//! panics.
//!
//! `MPICAST_CONFIG=FILE` names a file of the same settings ([`parse_config_file`]), under the
//! environment: defaults < file < environment, an empty environment variable being unset (so
//! the file's value applies). Every rank reads the file itself, in `from_env`; its values take
//! part in everything the environment's do (the ranks' comparison of [`Config::agreed`] sees
//! only the values in force), and its errors name the file and the line.
//!
//! Conventions shared by all variables:
//! - An empty (or all-blank) value means "unset", so `MPICAST_TTL=` gives the default.
//! - Surrounding whitespace is ignored.
//! - Sizes are a decimal integer with an optional binary suffix: `k`/`KiB` (1024),
//!   `m`/`MiB` (1024²) or `g`/`GiB` (1024³), case-insensitive. `kB`/`MB` are rejected because they
//!   are ambiguous between decimal and binary.
//! - Subnets: `MPICAST_IFACE=10.1.2.3/16` is normalised to `10.1.0.0/16` (the form `ip addr`
//!   prints is accepted as is), but `MPICAST_GROUP` with host bits set is rejected: a set host
//!   part there usually means one specific group was wanted, which is written `/32`.

use crate::algo::prefix::{Pick, Route, Shape};
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

/// The whole process configuration. See [`VARIABLES`] for the meaning of each field.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `MPICAST_DISABLE`: forward everything to the host MPI.
    pub disable: bool,
    /// `MPICAST_IFACE`: `None` lets the kernel's routing choose.
    pub iface: Option<IfaceSpec>,
    /// `MPICAST_TTL`.
    pub ttl: u8,
    /// `MPICAST_GROUP`: the subnet (base, prefix) groups are picked from; inside 224.0.0.0/4.
    pub group: (Ipv4Addr, u8),
    /// `MPICAST_PORT`: inclusive port range, both ends >= 1024.
    pub ports: (u16, u16),
    /// `MPICAST_SYNC`.
    pub sync: SyncAlgo,
    /// `MPICAST_TOPO`.
    pub topo: Topo,
    /// `MPICAST_MIN_BYTES`: smaller messages go to the host MPI; 0 multicasts everything;
    /// `auto` (the default) picks the threshold from the number of hosts that multicast.
    pub min_bytes: MinBytes,
    /// `MPICAST_FRAG_BYTES`: datagram payload size; `None` derives it from the MTU.
    pub frag_bytes: Option<usize>,
    /// `MPICAST_RCVBUF`: socket receive buffer to ask the kernel for.
    pub rcvbuf: usize,
    /// `MPICAST_TIMEOUT_MS`: an operation that makes no progress this long fails.
    pub timeout_ms: u64,
    /// `MPICAST_PROBE_MS`: bound on the setup probe that checks multicast works.
    pub probe_ms: u64,
    /// `MPICAST_SUSPECT_MS`: multicast that delivers nothing this long mid-operation is
    /// suspected broken: repaired by unicast, and the communicator moves (`wire::heal`).
    pub suspect_ms: u64,
    /// `MPICAST_STATS`: print counters at finalize.
    pub stats: bool,
    /// `MPICAST_VERBOSE`: 0 silent .. 3 chatty.
    pub verbose: u8,
    /// `MPICAST_PROGRESS`: who drives forwarding and non-blocking GOAL runs besides the
    /// application's MPI calls.
    pub progress: Progress,
    /// `MPICAST_EAGER_BYTES`: broadcasts of at most this many bytes go without scouts (the
    /// root multicasts at once; receivers' sockets, joined all along, hold the data until they
    /// enter); 0 sends scouts before every broadcast.
    pub eager_bytes: usize,
    /// `MPICAST_ROOT_WAITS`: the root of an eager broadcast that fits the window waits for
    /// every acknowledgement before it returns. Off (the default), it returns once its
    /// datagrams are out, its responder thread keeps a copy to repair losses, and the
    /// acknowledgements are collected at its next operation on the communicator.
    pub root_waits: bool,
    /// `MPICAST_GOAL_WINDOW`: run GOAL schedules longer than this through a sliding window of
    /// this many actions (0: no window).
    pub goal_window: usize,
    /// `MPICAST_TOPO_ID`: this rank's topology ID as written (trimmed; its digits checked
    /// against `topo_base`). Differs between ranks; see `crate::topology`.
    pub topo_id: Option<String>,
    /// `MPICAST_TOPO_FILE`: the path of the file mapping hosts to topology IDs.
    pub topo_file: Option<String>,
    /// `MPICAST_TOPO_BASE`: the base of topology IDs, a power of two 2..=256.
    pub topo_base: u32,
    /// `MPICAST_TOPO_PICK`: how a routing-table entry is chosen among several candidates.
    pub topo_pick: TopoPick,
    /// `MPICAST_IMCAST_ROUTE`: who the next hops of `MPICAST_Imcast` are.
    pub imcast_route: Route,
    /// `MPICAST_SWITCH_TOPOLOGY`: the path of the switch topology (the network file of
    /// `mpicast sim --network`) that `MPICAST_Mmcast` plans its routes on.
    pub switch_topology: Option<String>,
    /// `MPICAST_MMCAST_ALGO`: the algorithm of `MPICAST_Mmcast`, one of [`MMCAST_ALGOS`]
    /// (lower case).
    pub mmcast_algo: String,
    /// `MPICAST_SEGMENT_BYTES`: `MPICAST_Imcast` pipelines a message in segments of this size.
    pub segment_bytes: usize,
    /// `MPICAST_IMCAST_BUFFER`: bytes of multicasts a rank holds before their receives come.
    pub imcast_buffer: usize,
    /// `MPICAST_IMCAST_TRANSPORT`: how the data of `MPICAST_Imcast` travels.
    pub imcast_transport: ImcastTransport,
    /// `MPICAST_IMCAST_IP_SHARE`: with `auto`, IP multicast from this share of the other
    /// ranks as destinations (percent)...
    pub imcast_ip_share: u32,
    /// `MPICAST_IMCAST_IP_BYTES`: ...and this many bytes.
    pub imcast_ip_bytes: usize,
    /// `MPICAST_DBCAST_TREE`: how a dynamic broadcast orders its recipients in the tree.
    pub dbcast_tree: DbcastTree,
    /// `MPICAST_DBCAST_CHAIN_BYTES`: messages of at least this size go down a chain when the
    /// segment model says it is faster (`algo::dbcast::shape_for`); None: never.
    pub dbcast_chain_bytes: Option<usize>,
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
    /// (nothing asked for on its behalf), polling otherwise.
    Auto,
}

const DEFAULT_GROUP: (Ipv4Addr, u8) = (Ipv4Addr::new(239, 255, 0, 0), 16);
const DEFAULT_PORTS: (u16, u16) = (23000, 23999);
const DEFAULT_RCVBUF: usize = 8 << 20;
const DEFAULT_EAGER_BYTES: usize = 1 << 20;
const MIN_RCVBUF: usize = 64 << 10;
// The kernel doubles the request and stores it in an int; staying at 1 GiB keeps clear of that.
const MAX_RCVBUF: usize = 1 << 30;
const FRAG_RANGE: (usize, usize) = (64, 65000);
const MIN_PORT: u16 = 1024;
const MAX_VERBOSE: u8 = 2;
const DEFAULT_TOPO_BASE: u32 = 16;
const DEFAULT_SEGMENT_BYTES: usize = 8 << 10;
/// `MPICAST_DBCAST_CHAIN_BYTES` by default.
const DEFAULT_DBCAST_CHAIN_BYTES: usize = 128 << 10;
const DEFAULT_IMCAST_BUFFER: usize = 256 << 20;
const MIN_IMCAST_BUFFER: usize = 1 << 20;
const SEGMENT_RANGE: (usize, usize) = (64, 16 << 20);
const DEFAULT_IMCAST_IP_SHARE: u32 = 25;
const DEFAULT_IMCAST_IP_BYTES: usize = 16 << 10;

impl Default for Config {
    fn default() -> Config {
        Config {
            disable: false,
            iface: None,
            ttl: 1,
            group: DEFAULT_GROUP,
            ports: DEFAULT_PORTS,
            sync: SyncAlgo::Tree,
            topo: Topo::Auto,
            min_bytes: MinBytes::Auto,
            frag_bytes: None,
            rcvbuf: DEFAULT_RCVBUF,
            timeout_ms: 30_000,
            probe_ms: 500,
            suspect_ms: 200,
            stats: false,
            verbose: 0,
            progress: Progress::Auto,
            eager_bytes: DEFAULT_EAGER_BYTES,
            root_waits: false,
            goal_window: 0,
            topo_id: None,
            topo_file: None,
            topo_base: DEFAULT_TOPO_BASE,
            topo_pick: TopoPick::Nearest,
            imcast_route: Route::Dests,
            switch_topology: None,
            mmcast_algo: "auto".to_string(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            imcast_buffer: DEFAULT_IMCAST_BUFFER,
            imcast_transport: ImcastTransport::Auto,
            dbcast_tree: DbcastTree::Binomial,
            dbcast_chain_bytes: Some(DEFAULT_DBCAST_CHAIN_BYTES),
            imcast_ip_share: DEFAULT_IMCAST_IP_SHARE,
            imcast_ip_bytes: DEFAULT_IMCAST_IP_BYTES,
        }
    }
}

/// Prefix shared by every variable; any other name with it is a typo.
pub const PREFIX: &str = "MPICAST_";

/// The variable naming a file of settings ([`parse_config_file`]); read from the environment
/// only (a file cannot name another).
pub const CONFIG_VAR: &str = "MPICAST_CONFIG";

/// Every variable: (name, default, description). The README and `mpicast --help` print this
/// table, and [`Config::from_vars`] treats any `MPICAST_*` name missing from it as an error.
pub const VARIABLES: &[(&str, &str, &str)] = &[
    (
        CONFIG_VAR,
        "(not set)",
        "file of settings loaded at start: NAME=VALUE lines with the names of this table \
         (`export NAME=VALUE` and 'quoted' or \"quoted\" values too, # comments), values as in \
         the environment; a variable set (not empty) in the environment wins over the file. \
         Every rank reads it; an error names the file and the line",
    ),
    (
        "MPICAST_DISABLE",
        "0",
        "1/true/yes/on: do not use multicast at all; every call goes to the host MPI",
    ),
    (
        "MPICAST_IFACE",
        "(default route)",
        "interface to multicast on: a name (eth0), an IPv4 address, or a subnet (10.1.0.0/16) \
         matched against each host's addresses",
    ),
    (
        "MPICAST_TTL",
        "1",
        "multicast TTL 0..=255: 0 stays on the host, 1 stays on the local network",
    ),
    (
        "MPICAST_GROUP",
        "239.255.0.0/16",
        "subnet inside 224.0.0.0/4 that communicator groups are picked from (no host bits)",
    ),
    (
        "MPICAST_PORT",
        "23000-23999",
        "UDP port N or inclusive range N-M (N >= 1024) that communicator ports are picked from",
    ),
    (
        "MPICAST_SYNC",
        "tree",
        "scout synchronisation before the multicast: tree or linear",
    ),
    (
        "MPICAST_TOPO",
        "auto",
        "ranks sharing a host: leaders (one per host multicasts, the host MPI spreads it \
         locally), flat (every rank joins), auto (leaders if hosts hold several ranks, flat if \
         one each, the host MPI if all ranks share one host)",
    ),
    (
        "MPICAST_MIN_BYTES",
        "auto",
        "smaller broadcasts go to the host MPI; 0 multicasts every size (suffixes k, m, KiB, MiB); \
         auto: 32 KiB with 3 or more multicasting hosts, never with 2 (the largest crossover \
         measured, at 1 Gbit/s; on 100 Mbit/s links 1500 B to 4 KiB is enough)",
    ),
    (
        "MPICAST_FRAG_BYTES",
        "auto",
        "largest datagram payload 64..=65000: the size used is the smaller of this and what \
         the smallest MTU among the ranks allows; auto: what the MTU allows",
    ),
    (
        "MPICAST_RCVBUF",
        "8MiB",
        "socket receive buffer to request (>= 64KiB); the size granted is what the kernel allows",
    ),
    (
        "MPICAST_TIMEOUT_MS",
        "30000",
        "bound on every wait mpicast adds (> 0): an operation without progress, or a setup \
         that not every rank joins, this long ends the job with a message naming the missing \
         ranks and why",
    ),
    (
        "MPICAST_PROBE_MS",
        "500",
        "bound in milliseconds on the setup probe that checks multicast reaches every rank (> 0)",
    ),
    (
        "MPICAST_SUSPECT_MS",
        "200",
        "milliseconds without multicast progress in an operation after which a rank is served \
         by unicast and the communicator moves to smaller datagrams or the host MPI (> 0)",
    ),
    (
        "MPICAST_STATS",
        "0",
        "1/true/yes/on: print traffic and repair counters at MPI_Finalize",
    ),
    (
        "MPICAST_VERBOSE",
        "0",
        "diagnostics on stderr: 0 warnings only; 1 setup decisions and each communicator's \
         threshold and why; 2 also every operation, and every call handed to the host MPI \
         with the reason",
    ),
    (
        "MPICAST_PROGRESS",
        "auto",
        "who moves the multicasts routed through this rank (and non-blocking GOAL runs) \
         besides every MPI call of the rank: nobody else (poll), a progress thread (thread: \
         MPI_Init/MPI_Init_thread then ask the host MPI for MPI_THREAD_MULTIPLE; without it \
         mpicast warns and polls), or the thread when the application's own initialisation \
         got MPI_THREAD_MULTIPLE (auto)",
    ),
    (
        "MPICAST_EAGER_BYTES",
        "1MiB",
        "multicast broadcasts of at most this size skip the scouts: the root sends at once and \
         the receivers' joined sockets hold the data until they enter (acknowledgements and the \
         window still pace it); 0 sends scouts before every broadcast",
    ),
    (
        "MPICAST_ROOT_WAITS",
        "0",
        "1/true/yes/on: the root of an eager broadcast waits for every receiver's \
         acknowledgement before it returns; off, it returns once its datagrams are out (its \
         responder thread keeps a copy and repairs losses; the acknowledgements are collected \
         at its next operation on the communicator, or when it is freed)",
    ),
    (
        "MPICAST_GOAL_WINDOW",
        "0",
        "GOAL runs of schedules longer than this many actions hold at most this many at a time \
         (a sliding window: executor state bounded by the window plus pending credits); 0 off",
    ),
    (
        "MPICAST_TOPO_ID",
        "(not set)",
        "this rank's topology ID for the routing of MPICAST_Imcast: digits in base \
         MPICAST_TOPO_BASE, hex (01a3) or dotted decimal (0.1.10.3), unique in each communicator; \
         a communicator's MPI_Info key mpicast_topo_id wins over it; give it on every rank or on \
         none",
    ),
    (
        "MPICAST_TOPO_FILE",
        "(not set)",
        "file of topology IDs, used when no rank has one of its own: lines `HOST ID` (the host's \
         ID, its ranks told apart by CPU placement) or `HOST:SLOT ID` (a rank's), # comments; \
         every rank reads it and must find the same contents; not set: IDs derived from hosts \
         (ordered by address) and CPU package, NUMA node and core",
    ),
    (
        "MPICAST_TOPO_BASE",
        "16",
        "base of topology IDs, a power of two 2..=256: a larger base makes MPICAST_Imcast trees \
         shallower (at most one hop per digit) but lets a rank send up to base - 1 copies per \
         level; 16 writes a digit as one hex character",
    ),
    (
        "MPICAST_TOPO_PICK",
        "nearest",
        "which rank a routing-table entry names among several candidates: nearest (the one \
         closest to the rank's own ID: deterministic, and different ranks name different \
         candidates, spreading the load) or random (a seed drawn per communicator; random:SEED \
         for a fixed one)",
    ),
    (
        "MPICAST_IMCAST_ROUTE",
        "dests",
        "next hops of MPICAST_Imcast: dests (destinations only; no other rank handles the data) \
         or table (the paper's: table entries, which may forward without delivering); dests is \
         as fast or faster in 22 of 24 measured cases",
    ),
    (
        "MPICAST_SWITCH_TOPOLOGY",
        "(not set)",
        "file of the switched network the ranks' hosts hang on, for MPICAST_Mmcast's routes: the \
         network file of `mpicast sim --network` (switch, link, host lines; hosts by name or \
         address, or rank lines by MPI_COMM_WORLD rank); every rank reads it and must find the \
         same contents; not set: all hosts on one switch",
    ),
    (
        "MPICAST_MMCAST_ALGO",
        "auto",
        "algorithm of MPICAST_Mmcast: sametree-binomial, sametree-cyclic, random-binomial, \
         random-cyclic (seed 003's agent-based multicasts), spcco (destinations ordered along \
         the routing tree), naive (each source sends to each destination), or auto \
         (sametree-cyclic from 16 multicasts at once on 8 switches or more, else spcco)",
    ),
    (
        "MPICAST_SEGMENT_BYTES",
        "8KiB",
        "MPICAST_Imcast and MPICAST_Dbcast forward a message in segments of this size, 64 bytes to 16 MiB (8 KiB, \
         the paper's choice)",
    ),
    (
        "MPICAST_IMCAST_BUFFER",
        "256MiB",
        "multicasts that reach a rank before its MPICAST_Mcast_irecv wait in memory, up to this \
         many bytes per rank (>= 1MiB); past it the job ends with a message saying so",
    ),
    (
        "MPICAST_IMCAST_TRANSPORT",
        "auto",
        "how the data of MPICAST_Imcast travels: p2p (point-to-point along the routes), ip \
         (once by the communicator's IP multicast group, repaired and acknowledged as \
         broadcasts are; p2p where the group does not work) or auto (ip from \
         MPICAST_IMCAST_IP_SHARE and MPICAST_IMCAST_IP_BYTES on, when the ranks are on more \
         than one host)",
    ),
    (
        "MPICAST_IMCAST_IP_SHARE",
        "25",
        "with MPICAST_IMCAST_TRANSPORT=auto, IP multicast for destination sets of at least this \
         percentage of the other ranks (1 to 100), and of two ranks at least",
    ),
    (
        "MPICAST_IMCAST_IP_BYTES",
        "16KiB",
        "with MPICAST_IMCAST_TRANSPORT=auto, IP multicast for messages of at least this size",
    ),
    (
        "MPICAST_DBCAST_TREE",
        "binomial",
        "how MPICAST_Dbcast orders its recipients in the binomial tree: binomial (the caller's \
         order, higher priorities nearer the root) or topo (priorities first, then by topology \
         ID, so that each subtree holds ranks that are close)",
    ),
    (
        "MPICAST_DBCAST_CHAIN_BYTES",
        "128KiB",
        "MPICAST_Dbcast sends messages of at least this size down a pipelined chain over the \
         recipients instead of the binomial tree, when its segment count says the chain is \
         faster (the binomial root sends the whole message once per step); off: always the \
         binomial tree",
    ),
];

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

const EXPECT_MMCAST_ALGO: &str = "auto, sametree-binomial, sametree-cyclic, random-binomial, \
                                  random-cyclic, spcco or naive";

/// A variable (or `MPI_Info` key) whose value, or name, is not acceptable.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The variable or key, as given; [`CONFIG_VAR`] for a line of its file that is not a
    /// setting at all (then `value` is the line).
    pub var: String,
    /// The value, as given.
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
    /// Where the setting was written when not in the environment: the file of
    /// [`CONFIG_VAR`] and the line (`MPICAST_CONFIG: /etc/mpicast.conf line 3`).
    pub origin: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            None => write!(
                f,
                "mpicast: {}={} is invalid: expected {}",
                self.var, self.value, self.expected
            ),
            // A line that is no setting: quote it whole.
            Some(o) if self.var == CONFIG_VAR => write!(
                f,
                "mpicast: {o}: `{}` is invalid: expected {}",
                self.value, self.expected
            ),
            Some(o) => write!(
                f,
                "mpicast: {o}: {}={} is invalid: expected {}",
                self.var, self.value, self.expected
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

const EXPECT_BOOL: &str = "one of 0, 1, true, false, yes, no, on, off";
const EXPECT_SYNC: &str = "tree or linear";
macro_rules! expect_size {
    () => {
        "a size in bytes, optionally with a binary suffix k, KiB, m, MiB, g or GiB (e.g. 1500, 64k, 8MiB)"
    };
}
const EXPECT_SIZE: &str = expect_size!();
const EXPECT_MIN_BYTES: &str = concat!("auto, or ", expect_size!());

fn err(var: &str, value: &str, expected: impl Into<String>) -> ConfigError {
    ConfigError {
        var: var.to_string(),
        value: value.to_string(),
        expected: expected.into(),
        origin: None,
    }
}

impl Config {
    /// Parses values through `get` (name -> value). Pure; used by tests and by [`Config::from_vars`].
    /// It cannot see names it does not ask for, so it does not detect typos; `from_vars` does.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        // Each closure gets the name and the trimmed, non-empty value; unset keeps the default.
        let val = |name: &str| -> Option<(String, String)> {
            let raw = get(name)?;
            let t = raw.trim();
            if t.is_empty() {
                None
            } else {
                Some((raw.clone(), t.to_string()))
            }
        };

        if let Some((raw, v)) = val("MPICAST_DISABLE") {
            c.disable = parse_bool(&v).ok_or_else(|| err("MPICAST_DISABLE", &raw, EXPECT_BOOL))?;
        }
        if let Some((raw, v)) = val("MPICAST_IFACE") {
            c.iface = Some(parse_iface(&v).ok_or_else(|| {
                err(
                    "MPICAST_IFACE",
                    &raw,
                    "an interface name (at most 15 characters, no spaces or '/'), \
                     an IPv4 address, or an IPv4 subnet a.b.c.d/n with n <= 32",
                )
            })?);
        }
        if let Some((raw, v)) = val("MPICAST_TTL") {
            c.ttl = parse_uint::<u8>(&v)
                .ok_or_else(|| err("MPICAST_TTL", &raw, "an integer 0..=255"))?;
        }
        if let Some((raw, v)) = val("MPICAST_GROUP") {
            c.group = parse_group(&v).ok_or_else(|| {
                err(
                    "MPICAST_GROUP",
                    &raw,
                    "an IPv4 multicast subnet a.b.c.d/n inside 224.0.0.0/4 with no host bits set \
                     (write /32 for a single group)",
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_PORT") {
            c.ports = parse_ports(&v).ok_or_else(|| {
                err(
                    "MPICAST_PORT",
                    &raw,
                    format!(
                        "a port N or an inclusive range N-M with {MIN_PORT} <= N <= M <= 65535"
                    ),
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_SYNC") {
            c.sync = parse_sync(&v).ok_or_else(|| err("MPICAST_SYNC", &raw, EXPECT_SYNC))?;
        }
        if let Some((raw, v)) = val("MPICAST_TOPO") {
            c.topo = match v.to_ascii_lowercase().as_str() {
                "auto" => Topo::Auto,
                "flat" => Topo::Flat,
                "leaders" => Topo::Leaders,
                _ => return Err(err("MPICAST_TOPO", &raw, "auto, flat or leaders")),
            };
        }
        if let Some((raw, v)) = val("MPICAST_MIN_BYTES") {
            c.min_bytes = parse_min_bytes(&v)
                .ok_or_else(|| err("MPICAST_MIN_BYTES", &raw, EXPECT_MIN_BYTES))?;
        }
        if let Some((raw, v)) = val("MPICAST_FRAG_BYTES") {
            let (lo, hi) = FRAG_RANGE;
            c.frag_bytes = if v.eq_ignore_ascii_case("auto") {
                None
            } else {
                Some(
                    parse_size(&v)
                        .filter(|n| (lo..=hi).contains(n))
                        .ok_or_else(|| {
                            err(
                                "MPICAST_FRAG_BYTES",
                                &raw,
                                format!("a datagram payload size {lo}..={hi} bytes, or auto"),
                            )
                        })?,
                )
            };
        }
        if let Some((raw, v)) = val("MPICAST_RCVBUF") {
            c.rcvbuf = parse_size(&v)
                .filter(|n| (MIN_RCVBUF..=MAX_RCVBUF).contains(n))
                .ok_or_else(|| {
                    err(
                        "MPICAST_RCVBUF",
                        &raw,
                        "a size from 64KiB to 1GiB (binary suffixes k, KiB, m, MiB, g, GiB)",
                    )
                })?;
        }
        if let Some((raw, v)) = val("MPICAST_TIMEOUT_MS") {
            c.timeout_ms = parse_uint::<u64>(&v).filter(|&n| n > 0).ok_or_else(|| {
                err(
                    "MPICAST_TIMEOUT_MS",
                    &raw,
                    "an integer number of milliseconds > 0",
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_PROBE_MS") {
            c.probe_ms = parse_uint::<u64>(&v).filter(|&n| n > 0).ok_or_else(|| {
                err(
                    "MPICAST_PROBE_MS",
                    &raw,
                    "an integer number of milliseconds > 0",
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_SUSPECT_MS") {
            c.suspect_ms = parse_uint::<u64>(&v).filter(|&n| n > 0).ok_or_else(|| {
                err(
                    "MPICAST_SUSPECT_MS",
                    &raw,
                    "an integer number of milliseconds > 0",
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_STATS") {
            c.stats = parse_bool(&v).ok_or_else(|| err("MPICAST_STATS", &raw, EXPECT_BOOL))?;
        }
        if let Some((raw, v)) = val("MPICAST_VERBOSE") {
            c.verbose = parse_uint::<u8>(&v)
                .filter(|&n| n <= MAX_VERBOSE)
                .ok_or_else(|| err("MPICAST_VERBOSE", &raw, "an integer 0..=2"))?;
        }
        if let Some((raw, v)) = val("MPICAST_PROGRESS") {
            c.progress = match v.to_ascii_lowercase().as_str() {
                "poll" => Progress::Poll,
                "thread" => Progress::Thread,
                "auto" => Progress::Auto,
                _ => return Err(err("MPICAST_PROGRESS", &raw, "auto, poll or thread")),
            };
        }
        if let Some((raw, v)) = val("MPICAST_EAGER_BYTES") {
            c.eager_bytes =
                parse_size(&v).ok_or_else(|| err("MPICAST_EAGER_BYTES", &raw, EXPECT_SIZE))?;
        }
        if let Some((raw, v)) = val("MPICAST_ROOT_WAITS") {
            c.root_waits =
                parse_bool(&v).ok_or_else(|| err("MPICAST_ROOT_WAITS", &raw, EXPECT_BOOL))?;
        }
        if let Some((raw, v)) = val("MPICAST_GOAL_WINDOW") {
            c.goal_window = parse_uint::<usize>(&v)
                .ok_or_else(|| err("MPICAST_GOAL_WINDOW", &raw, "an integer number of actions"))?;
        }
        // The base first: MPICAST_TOPO_ID is checked against it.
        if let Some((raw, v)) = val("MPICAST_TOPO_BASE") {
            c.topo_base = parse_uint::<u32>(&v)
                .filter(|&b| Shape::new(b, 1).is_ok())
                .ok_or_else(|| {
                    err(
                        "MPICAST_TOPO_BASE",
                        &raw,
                        "a power of two from 2 to 256 (2, 4, 8, 16, 32, 64, 128 or 256)",
                    )
                })?;
        }
        if let Some((raw, v)) = val("MPICAST_TOPO_ID") {
            if let Err(e) = check_topo_id(c.topo_base, &v) {
                return Err(err(
                    "MPICAST_TOPO_ID",
                    &raw,
                    format!(
                        "a topology ID in base {} (MPICAST_TOPO_BASE): {}, each below the base, \
                         at most 64 bits ({e})",
                        c.topo_base,
                        if c.topo_base <= 16 {
                            "one hex digit per character (01a3) or dotted decimal digits \
                             (0.1.10.3)"
                        } else {
                            "dotted decimal digits (0.1.10.3)"
                        }
                    ),
                ));
            }
            c.topo_id = Some(v);
        }
        if let Some((_, v)) = val("MPICAST_TOPO_FILE") {
            c.topo_file = Some(v);
        }
        if let Some((raw, v)) = val("MPICAST_TOPO_PICK") {
            c.topo_pick = parse_topo_pick(&v).ok_or_else(|| {
                err(
                    "MPICAST_TOPO_PICK",
                    &raw,
                    "nearest, random, or random:SEED with SEED a decimal integer below 2^64",
                )
            })?;
        }
        if let Some((raw, v)) = val("MPICAST_IMCAST_ROUTE") {
            c.imcast_route = match v.to_ascii_lowercase().as_str() {
                "dests" => Route::Dests,
                "table" => Route::Table,
                _ => return Err(err("MPICAST_IMCAST_ROUTE", &raw, "dests or table")),
            };
        }
        if let Some((_, v)) = val("MPICAST_SWITCH_TOPOLOGY") {
            c.switch_topology = Some(v);
        }
        if let Some((raw, v)) = val("MPICAST_MMCAST_ALGO") {
            let v = v.to_ascii_lowercase();
            if !MMCAST_ALGOS.contains(&v.as_str()) {
                return Err(err("MPICAST_MMCAST_ALGO", &raw, EXPECT_MMCAST_ALGO));
            }
            c.mmcast_algo = v;
        }
        if let Some((raw, v)) = val("MPICAST_SEGMENT_BYTES") {
            let (lo, hi) = SEGMENT_RANGE;
            c.segment_bytes = parse_size(&v)
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| {
                    err(
                        "MPICAST_SEGMENT_BYTES",
                        &raw,
                        "a size from 64 bytes to 16MiB (binary suffixes k, KiB, m, MiB)",
                    )
                })?;
        }
        if let Some((raw, v)) = val("MPICAST_IMCAST_BUFFER") {
            c.imcast_buffer = parse_size(&v)
                .filter(|&n| n >= MIN_IMCAST_BUFFER)
                .ok_or_else(|| err("MPICAST_IMCAST_BUFFER", &raw, "a size of at least 1MiB"))?;
        }
        if let Some((raw, v)) = val("MPICAST_DBCAST_TREE") {
            c.dbcast_tree = match v.to_ascii_lowercase().as_str() {
                "binomial" => DbcastTree::Binomial,
                "topo" => DbcastTree::Topo,
                _ => return Err(err("MPICAST_DBCAST_TREE", &raw, "binomial or topo")),
            };
        }
        if let Some((raw, v)) = val("MPICAST_DBCAST_CHAIN_BYTES") {
            c.dbcast_chain_bytes = if v.eq_ignore_ascii_case("off") {
                None
            } else {
                Some(parse_size(&v).ok_or_else(|| {
                    err(
                        "MPICAST_DBCAST_CHAIN_BYTES",
                        &raw,
                        "a size (binary suffixes k, KiB, m, MiB) or off",
                    )
                })?)
            };
        }
        if let Some((raw, v)) = val("MPICAST_IMCAST_TRANSPORT") {
            c.imcast_transport = match v.to_ascii_lowercase().as_str() {
                "p2p" => ImcastTransport::P2p,
                "ip" => ImcastTransport::Ip,
                "auto" => ImcastTransport::Auto,
                _ => return Err(err("MPICAST_IMCAST_TRANSPORT", &raw, "p2p, ip or auto")),
            };
        }
        if let Some((raw, v)) = val("MPICAST_IMCAST_IP_SHARE") {
            c.imcast_ip_share = v
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| err("MPICAST_IMCAST_IP_SHARE", &raw, "a percentage, 1 to 100"))?;
        }
        if let Some((raw, v)) = val("MPICAST_IMCAST_IP_BYTES") {
            c.imcast_ip_bytes =
                parse_size(&v).ok_or_else(|| err("MPICAST_IMCAST_IP_BYTES", &raw, "a size"))?;
        }
        Ok(c)
    }

    /// Parses a whole environment: every `(name, value)` pair, of which only names starting with
    /// `MPICAST_` (in any letter case) matter. A name with that prefix that is not exactly one of
    /// [`VARIABLES`] is an error with a suggestion, unless its value is empty (= unset).
    /// When a name appears twice the last value wins, as in a shell. Reads no file:
    /// `MPICAST_CONFIG` is accepted and its file left alone ([`Config::from_vars_reading`]
    /// reads it).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        Config::resolve(vars, None::<fn(&str) -> Result<String, String>>)
    }

    /// As [`Config::from_vars`], and when `MPICAST_CONFIG` names a file, its settings
    /// ([`parse_config_file`]) under the environment's: defaults < file < environment. A
    /// variable set to an empty value in the environment is unset, as everywhere, so the
    /// file's value applies. Every value of the file is checked, also one the environment
    /// overrides (the last of a name, as in force). `read` gives a file's text (or why it
    /// cannot); the only reader that touches the file system is [`Config::from_env`]'s. An
    /// error in the file names the file and the line ([`ConfigError::origin`]).
    pub fn from_vars_reading<I, K, V, R>(vars: I, read: R) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
        R: FnOnce(&str) -> Result<String, String>,
    {
        Config::resolve(vars, Some(read))
    }

    fn resolve<I, K, V, R>(vars: I, read: Option<R>) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
        R: FnOnce(&str) -> Result<String, String>,
    {
        /// name -> (value, the line of the file that set it; None: the environment).
        type Settings = Vec<(String, String, Option<usize>)>;
        fn set(ours: &mut Settings, k: &str, v: &str, line: Option<usize>) {
            match ours.iter_mut().find(|(name, _, _)| name == k) {
                Some(slot) => (slot.1, slot.2) = (v.to_string(), line),
                None => ours.push((k.to_string(), v.to_string(), line)),
            }
        }
        let mut ours: Settings = Vec::new();
        for (k, v) in vars {
            let (k, v) = (k.as_ref(), v.as_ref());
            if !has_prefix(k) {
                continue;
            }
            if !is_known(k) {
                if v.trim().is_empty() {
                    continue;
                }
                return Err(unknown_var(k, v));
            }
            set(&mut ours, k, v, None);
        }

        let mut path = None;
        if let Some(read) = read {
            let named = ours
                .iter()
                .find(|(k, v, _)| k == CONFIG_VAR && !v.trim().is_empty())
                .map(|(_, v, _)| v.clone());
            if let Some(raw) = named {
                let p = raw.trim().to_string();
                let text = read(&p).map_err(|e| {
                    err(
                        CONFIG_VAR,
                        &raw,
                        format!(
                            "the path of a readable file of settings, NAME=VALUE lines (reading it \
                             failed: {e})"
                        ),
                    )
                })?;
                let file = parse_config_file(&p, &text)?;
                // The file is checked whole, even where the environment overrides it: a bad
                // value there would surface the day the variable is unset.
                Config::from_lookup(|name| {
                    file.iter()
                        .rev()
                        .find(|s| s.name == name)
                        .map(|s| s.value.clone())
                })
                .map_err(|mut e| {
                    if let Some(s) = file.iter().rev().find(|s| s.name == e.var) {
                        e.origin = Some(file_line(&p, s.line));
                    }
                    e
                })?;
                // Under the environment: a value set there (not empty) wins.
                let env = std::mem::take(&mut ours);
                for s in &file {
                    set(&mut ours, &s.name, &s.value, Some(s.line));
                }
                for (k, v, _) in env {
                    if !v.trim().is_empty() {
                        set(&mut ours, &k, &v, None);
                    }
                }
                path = Some(p);
            }
        }

        Config::from_lookup(|name| {
            ours.iter()
                .find(|(k, _, _)| k == name)
                .map(|(_, v, _)| v.clone())
        })
        .map_err(|mut e| {
            let line = ours
                .iter()
                .find(|(k, _, _)| *k == e.var)
                .and_then(|(_, _, l)| *l);
            if let (Some(p), Some(l)) = (&path, line) {
                e.origin = Some(file_line(p, l));
            }
            e
        })
    }

    /// Reads the process environment, and the file `MPICAST_CONFIG` names. Not pure;
    /// everything else here is.
    /// The process's configuration: [`Config::from_env`] read once, at the first call (the
    /// library's first MPI call that needs it), so that `MPICAST_CONFIG`'s file is read once
    /// and every part of the library sees the same settings.
    pub fn process() -> Result<Config, ConfigError> {
        static PROCESS: std::sync::OnceLock<Result<Config, ConfigError>> =
            std::sync::OnceLock::new();
        PROCESS.get_or_init(Config::from_env).clone()
    }

    pub fn from_env() -> Result<Config, ConfigError> {
        let mut vars: Vec<(String, String)> = Vec::new();
        // vars_os, because std::env::vars panics on a non-UTF-8 entry anywhere in the environment.
        for (k, v) in std::env::vars_os() {
            let k = match k.into_string() {
                Ok(k) => k,
                Err(k) => {
                    let lossy = k.to_string_lossy().into_owned();
                    if has_prefix(&lossy) {
                        return Err(unknown_var(&lossy, &v.to_string_lossy()));
                    }
                    continue;
                }
            };
            if !has_prefix(&k) {
                continue;
            }
            match v.into_string() {
                Ok(v) => vars.push((k, v)),
                Err(v) => {
                    return Err(err(&k, &v.to_string_lossy(), "a value in valid UTF-8"));
                }
            }
        }
        Config::from_vars_reading(vars, |path| {
            std::fs::read_to_string(path).map_err(|e| e.to_string())
        })
    }

    /// This configuration with a communicator's hints applied. `MPICAST_DISABLE=1` is a kill switch
    /// that a hint cannot undo; a hint can only turn multicast off for its communicator.
    pub fn with_hints(&self, h: &Hints) -> Config {
        let mut c = self.clone();
        if h.enabled == Some(false) {
            c.disable = true;
        }
        if let Some(s) = h.sync {
            c.sync = s;
        }
        if let Some(m) = h.min_bytes {
            c.min_bytes = m;
        }
        if let Some(e) = h.eager_bytes {
            c.eager_bytes = e;
        }
        if let Some(a) = &h.mmcast_algo {
            c.mmcast_algo = a.clone();
        }
        c
    }
}

/// The settings that every rank of a communicator must share, as (variable, value) in one
/// canonical spelling: ranks that differ in any of them would take different paths for the
/// same call (one multicasting, another waiting in the host MPI), draw groups from other
/// ranges, or cut datagrams differently. Values are the ones in force (for a communicator,
/// after its hints). Settings that may differ between ranks are not listed: the interface
/// (hosts may name theirs differently), buffer sizes (the setup takes the smallest),
/// timeouts, statistics, verbosity and the GOAL settings.
impl Config {
    pub fn agreed(&self) -> Vec<(&'static str, String)> {
        let on = |b: bool| if b { "1" } else { "0" }.to_string();
        let (g, gp) = self.group;
        let (lo, hi) = self.ports;
        vec![
            ("MPICAST_DISABLE", on(self.disable)),
            (
                "MPICAST_SYNC",
                match self.sync {
                    SyncAlgo::Tree => "tree",
                    SyncAlgo::Linear => "linear",
                }
                .to_string(),
            ),
            (
                "MPICAST_TOPO",
                match self.topo {
                    Topo::Auto => "auto",
                    Topo::Flat => "flat",
                    Topo::Leaders => "leaders",
                }
                .to_string(),
            ),
            (
                "MPICAST_MIN_BYTES",
                match self.min_bytes {
                    MinBytes::Auto => "auto".to_string(),
                    MinBytes::Fixed(n) => n.to_string(),
                },
            ),
            ("MPICAST_EAGER_BYTES", self.eager_bytes.to_string()),
            (
                "MPICAST_FRAG_BYTES",
                self.frag_bytes
                    .map_or_else(|| "auto".to_string(), |n| n.to_string()),
            ),
            ("MPICAST_GROUP", format!("{g}/{gp}")),
            (
                "MPICAST_PORT",
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                },
            ),
            ("MPICAST_TTL", self.ttl.to_string()),
            ("MPICAST_ROOT_WAITS", on(self.root_waits)),
            ("MPICAST_TOPO_BASE", self.topo_base.to_string()),
            ("MPICAST_TOPO_PICK", self.topo_pick.to_string()),
            (
                "MPICAST_IMCAST_ROUTE",
                match self.imcast_route {
                    Route::Dests => "dests",
                    Route::Table => "table",
                }
                .to_string(),
            ),
            ("MPICAST_SEGMENT_BYTES", self.segment_bytes.to_string()),
            // Whether the communicator's engine sets up a multicast group is collective; the
            // choice per multicast is the root's, and receivers take either.
            (
                "MPICAST_IMCAST_TRANSPORT",
                match self.imcast_transport {
                    ImcastTransport::P2p => "p2p",
                    ImcastTransport::Ip | ImcastTransport::Auto => "ip/auto",
                }
                .to_string(),
            ),
            // Last: the only value of unbounded length (see `agreed_path`).
            (
                "MPICAST_TOPO_FILE",
                self.topo_file
                    .as_deref()
                    .map_or_else(|| "(unset)".to_string(), agreed_path),
            ),
        ]
    }

    /// One line of `agreed()`: `NAME=value` pairs (without the prefix), space-separated.
    pub fn agreed_line(&self) -> String {
        let parts: Vec<String> = self
            .agreed()
            .iter()
            .map(|(k, v)| format!("{}={v}", &k[PREFIX.len()..]))
            .collect();
        parts.join(" ")
    }
}

/// A path as an agreed value: the values travel as space-separated `NAME=value` words (and
/// through the launcher's name service as `NAME:value,...`), so every byte but letters, digits
/// and `/._-+~@:` is written `%XX`; `(` is among them, so no path reads as `(unset)`. A path
/// whose written form is longer than 200 characters is cut to its last 160, after `...` and
/// before `#` and a digest of the whole path, so that a line of agreed values stays short and
/// different paths still differ.
fn agreed_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-+~@:".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() <= 200 {
        return out;
    }
    // FNV-1a: a digest to tell paths apart, not a protection.
    let h = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    // ASCII only, so any byte offset is a character boundary.
    format!("...{}#{h:016x}", &out[out.len() - 160..])
}

/// Reads a line made by [`Config::agreed_line`] back into (variable, value) pairs; words
/// that are not `NAME=value` are skipped.
pub fn parse_agreed_line(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string()))
        .collect()
}

/// Where ranks disagree: one line per variable whose value is not the same on every rank
/// listed, naming each value and the ranks that have it (the most common value first).
/// `ranks[i]` holds rank `i`'s (variable, value) pairs; `None` for a rank not known.
pub fn differences(ranks: &[(u32, Vec<(String, String)>)]) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    for (_, kv) in ranks {
        for (k, _) in kv {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    let mut out = Vec::new();
    for name in names {
        // value -> ranks, in first-seen order.
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for (r, kv) in ranks {
            let v = kv
                .iter()
                .find(|(k, _)| k == name)
                .map_or_else(|| "(not set)".to_string(), |(_, v)| v.clone());
            match groups.iter_mut().find(|(gv, _)| *gv == v) {
                Some((_, rs)) => rs.push(*r),
                None => groups.push((v, vec![*r])),
            }
        }
        if groups.len() < 2 {
            continue;
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
        let parts: Vec<String> = groups
            .iter()
            .map(|(v, rs)| format!("{v} on {}", rank_list(rs)))
            .collect();
        out.push(format!("{name}: {}", parts.join("; ")));
    }
    out
}

/// "rank 3", "ranks 0-2, 5": ascending, runs collapsed.
pub fn rank_list(ranks: &[u32]) -> String {
    let mut rs = ranks.to_vec();
    rs.sort_unstable();
    rs.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let mut j = i;
        while j + 1 < rs.len() && rs[j + 1] == rs[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => rs[i].to_string(),
            1 => format!("{}, {}", rs[i], rs[j]),
            _ => format!("{}-{}", rs[i], rs[j]),
        });
        i = j + 1;
    }
    format!(
        "{} {}",
        if rs.len() == 1 { "rank" } else { "ranks" },
        parts.join(", ")
    )
}

/// One setting of a `MPICAST_CONFIG` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSetting {
    /// Its line, from 1.
    pub line: usize,
    /// The variable, as written.
    pub name: String,
    /// The value, quotes removed (checked later, as the environment's values are).
    pub value: String,
}

/// "MPICAST_CONFIG: PATH line N", where a setting of the file was written.
fn file_line(path: &str, line: usize) -> String {
    format!("{CONFIG_VAR}: {path} line {line}")
}

const EXPECT_LINE: &str = "a setting NAME=VALUE (or export NAME=VALUE; the value may be quoted \
     '...' or \"...\"), a # comment, or a blank line";

/// Parses the text of a `MPICAST_CONFIG` file (`path` only names it in errors). Pure.
///
/// One setting per line, `NAME=VALUE` or the shell's `export NAME=VALUE`; whitespace around
/// the name and the value is ignored, a value may be in single or double quotes (taken as
/// they are, with no escapes), and `#` starts a comment at the start of a line or after
/// whitespace outside quotes. Blank lines are ignored. Names are the environment's: an
/// unknown `MPICAST_*` name is an error with a suggestion (unless its value is empty, as in
/// the environment), and so is a name without the prefix (the file holds mpicast's
/// settings only) and `MPICAST_CONFIG` itself (a file cannot name another). Values are not
/// checked here: [`Config::from_vars_reading`] checks them as the environment's.
pub fn parse_config_file(path: &str, text: &str) -> Result<Vec<FileSetting>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let at = |mut e: ConfigError| {
            e.origin = Some(file_line(path, line));
            e
        };
        let bad_line = |why: &str| {
            at(err(
                CONFIG_VAR,
                raw.trim(),
                if why.is_empty() {
                    EXPECT_LINE.to_string()
                } else {
                    format!("{EXPECT_LINE}; {why}")
                },
            ))
        };
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let t = match t.strip_prefix("export") {
            Some(rest) if rest.starts_with(|c: char| c.is_whitespace()) => rest.trim_start(),
            _ => t,
        };
        let Some((name, rest)) = t.split_once('=') else {
            return Err(bad_line("there is no '='"));
        };
        let name = name.trim();
        let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(bad_line("the name is not a variable name"));
        }
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(q @ ('\'' | '"')) => {
                let inner = &rest[1..];
                let Some(end) = inner.find(q) else {
                    return Err(bad_line("a quote is not closed"));
                };
                let after = inner[end + 1..].trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    return Err(bad_line("text follows the closing quote"));
                }
                &inner[..end]
            }
            _ => {
                // A comment starts at a '#' after whitespace.
                let cut = rest
                    .char_indices()
                    .find(|&(j, c)| c == '#' && rest[..j].ends_with(|p: char| p.is_whitespace()))
                    .map_or(rest.len(), |(j, _)| j);
                rest[..cut].trim_end()
            }
        };
        if name.eq_ignore_ascii_case(CONFIG_VAR) {
            return Err(at(err(
                CONFIG_VAR,
                raw.trim(),
                format!(
                    "settings only: {CONFIG_VAR} is read from the environment, and a file \
                     cannot name another"
                ),
            )));
        }
        if !has_prefix(name) {
            return Err(at(err(
                name,
                value,
                "an MPICAST_* variable: the file holds mpicast's settings only (others belong \
                 in the environment)",
            )));
        }
        if !is_known(name) {
            if value.trim().is_empty() {
                continue;
            }
            return Err(at(unknown_var(name, value)));
        }
        out.push(FileSetting {
            line,
            name: name.to_string(),
            value: value.to_string(),
        });
    }
    Ok(out)
}

/// The smallest broadcast that goes by multicast.
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

fn parse_min_bytes(v: &str) -> Option<MinBytes> {
    if v.trim().eq_ignore_ascii_case("auto") {
        Some(MinBytes::Auto)
    } else {
        parse_size(v).map(MinBytes::Fixed)
    }
}

/// Per-communicator hints from `MPI_Info`. Keys: `mpicast` = on|off, `mpicast_sync` = tree|linear,
/// `mpicast_min_bytes` = a size or `auto`, `mpicast_eager_bytes` = a size. `None` leaves the
/// process-wide value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hints {
    pub enabled: Option<bool>,
    pub sync: Option<SyncAlgo>,
    pub min_bytes: Option<MinBytes>,
    pub eager_bytes: Option<usize>,
    /// `mpicast_mmcast_algo`: as `MPICAST_MMCAST_ALGO`, lower case.
    pub mmcast_algo: Option<String>,
}

impl Hints {
    /// Records one `MPI_Info` entry. Returns `Ok(false)` for keys that are not ours, `Ok(true)` for
    /// ours; an unknown `mpicast_*` key or a bad value is an error. An empty value clears the hint.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        let var = || format!("MPI_Info key {key}");
        let v = value.trim();
        match key {
            "mpicast" => {
                self.enabled = if v.is_empty() {
                    None
                } else {
                    Some(parse_bool(v).ok_or_else(|| err(&var(), value, EXPECT_BOOL))?)
                };
            }
            "mpicast_sync" => {
                self.sync = if v.is_empty() {
                    None
                } else {
                    Some(parse_sync(v).ok_or_else(|| err(&var(), value, EXPECT_SYNC))?)
                };
            }
            "mpicast_min_bytes" => {
                self.min_bytes = if v.is_empty() {
                    None
                } else {
                    Some(parse_min_bytes(v).ok_or_else(|| err(&var(), value, EXPECT_MIN_BYTES))?)
                };
            }
            "mpicast_eager_bytes" => {
                self.eager_bytes = if v.is_empty() {
                    None
                } else {
                    Some(parse_size(v).ok_or_else(|| err(&var(), value, EXPECT_SIZE))?)
                };
            }
            "mpicast_mmcast_algo" => {
                let l = v.to_ascii_lowercase();
                self.mmcast_algo = if v.is_empty() {
                    None
                } else if MMCAST_ALGOS.contains(&l.as_str()) {
                    Some(l)
                } else {
                    return Err(err(&var(), value, EXPECT_MMCAST_ALGO));
                };
            }
            // This rank's topology ID for the multicast calls: a value of its own on each
            // rank, read where the routing table is built, not a setting ranks share.
            "mpicast_topo_id" => {}
            _ if key.to_ascii_lowercase().starts_with("mpicast_") => {
                return Err(err(
                    &var(),
                    value,
                    "a known key: mpicast, mpicast_sync, mpicast_min_bytes, mpicast_eager_bytes, \
                     mpicast_mmcast_algo or mpicast_topo_id",
                ));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Whether `addr` lies in `base/prefix`. `prefix` above 32 is treated as 32.
pub fn in_subnet(addr: Ipv4Addr, base: Ipv4Addr, prefix: u8) -> bool {
    let m = mask(prefix);
    u32::from(addr) & m == u32::from(base) & m
}

fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}

fn has_prefix(name: &str) -> bool {
    name.len() >= PREFIX.len() && name[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
}

/// Variables of mpicast's command-line tools, not of the library: a tool that exports one
/// starts ranks that inherit it, so the library accepts them and ignores them.
pub const TOOL_VARIABLES: &[&str] = &[
    "MPICAST_GOAL_RUNNER",
    "MPICAST_TUNE_RUNNER",
    "MPICAST_DOCTOR_RUNNER",
    "MPICAST_CLI",
];

fn is_known(name: &str) -> bool {
    VARIABLES.iter().any(|(n, _, _)| *n == name)
        || TOOL_VARIABLES.contains(&name)
        || owned_by_other_tools(name)
}

/// Names with our prefix that other tools set for their own purposes, in any letter case:
/// CMake's `find_package(mpicast)` reads `mpicast_DIR` and `mpicast_ROOT` (and
/// `MPICAST_ROOT`), and module systems and package managers export `<PKG>_HOME`, `_DIR`,
/// `_ROOT` and `_PREFIX` for what they install. They are not settings of the library, so
/// they are let through (and ignored); anything else with the prefix is still checked.
pub const OTHER_TOOLS_SUFFIXES: &[&str] = &["ROOT", "DIR", "HOME", "PREFIX"];

fn owned_by_other_tools(name: &str) -> bool {
    has_prefix(name)
        && OTHER_TOOLS_SUFFIXES
            .iter()
            .any(|s| name[PREFIX.len()..].eq_ignore_ascii_case(s))
}

fn unknown_var(name: &str, value: &str) -> ConfigError {
    let upper = name.to_ascii_uppercase();
    let best = VARIABLES
        .iter()
        .map(|(n, _, _)| (edit_distance(&upper, n), *n))
        .min();
    let expected = match best {
        // Distance 0 means only the letter case differs; environment names are case-sensitive.
        Some((d, n)) if d <= 3 => format!("a known MPICAST_ variable name (did you mean {n}?)"),
        _ => {
            let names: Vec<&str> = VARIABLES.iter().map(|(n, _, _)| *n).collect();
            format!("a known MPICAST_ variable name: {}", names.join(", "))
        }
    };
    err(name, value, expected)
}

/// Levenshtein distance over bytes; the names compared are short ASCII.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn parse_topo_pick(v: &str) -> Option<TopoPick> {
    let v = v.to_ascii_lowercase();
    match v.as_str() {
        "nearest" => Some(TopoPick::Nearest),
        "random" => Some(TopoPick::Random { seed: None }),
        _ => {
            let seed = v.strip_prefix("random:")?.trim();
            Some(TopoPick::Random {
                seed: Some(parse_uint::<u64>(seed)?),
            })
        }
    }
}

/// Checks a topology ID's text in base `base`: as many digits as it has (dotted decimal, or in
/// a base up to 16 one hex digit per character), each below the base, at most 64 bits.
fn check_topo_id(base: u32, text: &str) -> Result<(), crate::algo::prefix::IdError> {
    let digits = if text.contains('.') || base > 16 {
        text.split('.').count()
    } else {
        text.chars().count()
    };
    Shape::new(base, u32::try_from(digits).unwrap_or(u32::MAX))?
        .parse(text)
        .map(|_| ())
}

fn parse_sync(v: &str) -> Option<SyncAlgo> {
    match v.to_ascii_lowercase().as_str() {
        "tree" => Some(SyncAlgo::Tree),
        "linear" => Some(SyncAlgo::Linear),
        _ => None,
    }
}

/// Plain decimal digits only: Rust's `from_str` would also take a leading `+`.
fn parse_uint<T: std::str::FromStr>(v: &str) -> Option<T> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

fn parse_size(v: &str) -> Option<usize> {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let n: usize = parse_uint(&v[..digits])?;
    let mult: usize = match v[digits..].trim_start().to_ascii_lowercase().as_str() {
        "" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn parse_ports(v: &str) -> Option<(u16, u16)> {
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => (parse_uint::<u16>(a.trim())?, parse_uint::<u16>(b.trim())?),
        None => {
            let p = parse_uint::<u16>(v)?;
            (p, p)
        }
    };
    (lo >= MIN_PORT && lo <= hi).then_some((lo, hi))
}

/// `a.b.c.d/n`, host bits returned as written (callers decide whether to clear or reject them).
fn parse_cidr(v: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, p) = v.split_once('/')?;
    let addr: Ipv4Addr = a.trim().parse().ok()?;
    let p = p.trim();
    if p.len() > 2 {
        return None;
    }
    let prefix: u8 = parse_uint(p)?;
    (prefix <= 32).then_some((addr, prefix))
}

fn parse_group(v: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, prefix) = parse_cidr(v)?;
    let a = u32::from(addr);
    let host_bits = a & !mask(prefix) != 0;
    // Inside 224.0.0.0/4: the subnet is at least as narrow as /4 and starts with 1110.
    let multicast = prefix >= 4 && a >> 28 == 0xE;
    (!host_bits && multicast).then_some((addr, prefix))
}

fn parse_iface(v: &str) -> Option<IfaceSpec> {
    if v.contains('/') {
        let (addr, prefix) = parse_cidr(v)?;
        let base = Ipv4Addr::from(u32::from(addr) & mask(prefix));
        return Some(IfaceSpec::Cidr(base, prefix));
    }
    if let Ok(a) = v.parse::<Ipv4Addr>() {
        return Some(IfaceSpec::Addr(a));
    }
    // Something made of digits and dots was meant as an address; naming it an interface would
    // only give a confusing "no such interface" later.
    if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    // IFNAMSIZ is 16 including the NUL; names never hold whitespace or '/'.
    let ok = v.len() <= 15 && !v.bytes().any(|b| b.is_ascii_whitespace() || b == b'/');
    ok.then(|| IfaceSpec::Name(v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    fn bad(var: &str, value: &str) -> ConfigError {
        let e = cfg(&[(var, value)]).expect_err(&format!("{var}={value} should be rejected"));
        assert_eq!(e.var, var);
        assert_eq!(e.value, value);
        e
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c, Config::default());
        assert!(!c.disable);
        assert_eq!(c.iface, None);
        assert_eq!(c.ttl, 1);
        assert_eq!(c.group, (Ipv4Addr::new(239, 255, 0, 0), 16));
        assert_eq!(c.ports, (23000, 23999));
        assert_eq!(c.sync, SyncAlgo::Tree);
        assert_eq!(c.min_bytes, MinBytes::Auto);
        assert_eq!(c.frag_bytes, None);
        assert_eq!(c.rcvbuf, 8 * 1024 * 1024);
        assert_eq!(c.timeout_ms, 30_000);
        assert_eq!(c.probe_ms, 500);
        assert_eq!(c.suspect_ms, 200);
        assert!(!c.stats);
        assert_eq!(c.verbose, 0);
    }

    #[test]
    fn table_defaults_agree_with_default() {
        // The table is what users read; parse each documented default and compare.
        let pairs: Vec<(&str, &str)> = VARIABLES
            .iter()
            .filter(|(_, d, _)| !d.starts_with('('))
            .map(|(n, d, _)| (*n, *d))
            .collect();
        assert_eq!(cfg(&pairs).unwrap(), Config::default());
        let names: Vec<&str> = VARIABLES.iter().map(|v| v.0).collect();
        for n in &names {
            assert!(n.starts_with(PREFIX));
            assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n} twice");
        }
        assert_eq!(names.len(), 34);
    }

    #[test]
    fn empty_and_blank_mean_unset() {
        for name in VARIABLES.iter().map(|v| v.0) {
            assert_eq!(cfg(&[(name, "")]).unwrap(), Config::default(), "{name}");
            assert_eq!(cfg(&[(name, "  ")]).unwrap(), Config::default(), "{name}");
        }
    }

    #[test]
    fn booleans() {
        for (v, want) in [
            ("1", true),
            ("true", true),
            ("YES", true),
            ("On", true),
            ("0", false),
            ("false", false),
            ("no", false),
            ("OFF", false),
            (" 1 ", true),
        ] {
            assert_eq!(cfg(&[("MPICAST_DISABLE", v)]).unwrap().disable, want, "{v}");
            assert_eq!(cfg(&[("MPICAST_STATS", v)]).unwrap().stats, want, "{v}");
            let waits = cfg(&[("MPICAST_ROOT_WAITS", v)]).unwrap().root_waits;
            assert_eq!(waits, want, "{v}");
        }
        for v in ["2", "y", "enable", "-1", "truee"] {
            bad("MPICAST_DISABLE", v);
            bad("MPICAST_STATS", v);
            bad("MPICAST_ROOT_WAITS", v);
        }
    }

    #[test]
    fn ttl_and_verbose() {
        assert_eq!(cfg(&[("MPICAST_TTL", "0")]).unwrap().ttl, 0);
        assert_eq!(cfg(&[("MPICAST_TTL", "255")]).unwrap().ttl, 255);
        for v in ["256", "-1", "+3", "abc", "1.0", "0x10"] {
            bad("MPICAST_TTL", v);
        }
        assert_eq!(cfg(&[("MPICAST_VERBOSE", "2")]).unwrap().verbose, 2);
        assert!(cfg(&[("MPICAST_VERBOSE", "3")]).is_err());
        for v in ["4", "255", "x"] {
            bad("MPICAST_VERBOSE", v);
        }
    }

    #[test]
    fn display_names_variable_value_and_expectation() {
        let e = bad("MPICAST_TTL", "abc");
        assert_eq!(
            e.to_string(),
            "mpicast: MPICAST_TTL=abc is invalid: expected an integer 0..=255"
        );
    }

    #[test]
    fn iface_forms() {
        let f = |v| cfg(&[("MPICAST_IFACE", v)]).unwrap().iface.unwrap();
        assert_eq!(f("eth0"), IfaceSpec::Name("eth0".into()));
        assert_eq!(f("eth0:1"), IfaceSpec::Name("eth0:1".into()));
        assert_eq!(f("enp0s31f6"), IfaceSpec::Name("enp0s31f6".into()));
        assert_eq!(f("10.1.2.3"), IfaceSpec::Addr(Ipv4Addr::new(10, 1, 2, 3)));
        assert_eq!(
            f("10.1.0.0/16"),
            IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 0, 0), 16)
        );
        // Host bits are cleared, so `ip addr` output can be pasted.
        assert_eq!(
            f("10.1.2.3/16"),
            IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 0, 0), 16)
        );
        assert_eq!(
            f("10.1.2.3/32"),
            IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 2, 3), 32)
        );
        assert_eq!(f("10.1.2.3/0"), IfaceSpec::Cidr(Ipv4Addr::UNSPECIFIED, 0));
        assert_eq!(f(" lo "), IfaceSpec::Name("lo".into()));
        for v in [
            "10.1.2.300",
            "10.1.2",
            "10.1.0.0/33",
            "10.1.0.0/",
            "10.1.0.0/-1",
            "10.1.0.0/016",
            "/16",
            "10.1.0.0/16/2",
            "averyverylongname0",
            "eth 0",
        ] {
            bad("MPICAST_IFACE", v);
        }
        assert_eq!(
            f("10.1.0.0/ 8"),
            IfaceSpec::Cidr(Ipv4Addr::new(10, 0, 0, 0), 8)
        );
    }

    #[test]
    fn iface_display_roundtrips() {
        for v in ["eth0", "10.1.2.3", "10.1.0.0/16"] {
            let s = cfg(&[("MPICAST_IFACE", v)]).unwrap().iface.unwrap();
            assert_eq!(s.to_string(), v);
        }
    }

    #[test]
    fn group_forms() {
        let f = |v| cfg(&[("MPICAST_GROUP", v)]).unwrap().group;
        assert_eq!(f("239.1.0.0/16"), (Ipv4Addr::new(239, 1, 0, 0), 16));
        assert_eq!(f("224.0.0.0/4"), (Ipv4Addr::new(224, 0, 0, 0), 4));
        assert_eq!(f("239.255.7.7/32"), (Ipv4Addr::new(239, 255, 7, 7), 32));
        assert_eq!(
            f("239.255.255.255/32"),
            (Ipv4Addr::new(239, 255, 255, 255), 32)
        );
        for v in [
            "0.0.0.0/0",      // covers everything
            "224.0.0.0/3",    // wider than the multicast block
            "192.168.0.0/16", // not multicast
            "240.0.0.0/8",    // reserved, just above it
            "239.255.7.7/16", // host bits set: rejected, not normalised
            "239.255.0.0",    // a subnet is required
            "239.255.0.0/33",
            "239.255.0.0/abc",
        ] {
            bad("MPICAST_GROUP", v);
        }
    }

    #[test]
    fn ports() {
        let f = |v| cfg(&[("MPICAST_PORT", v)]).unwrap().ports;
        assert_eq!(f("5000"), (5000, 5000));
        assert_eq!(f("1024-65535"), (1024, 65535));
        assert_eq!(f("23000 - 23010"), (23000, 23010));
        assert_eq!(f("7000-7000"), (7000, 7000));
        for v in [
            "1023",
            "80-9000",
            "9000-8000",
            "65536",
            "5000-",
            "-5000",
            "5000-6000-7000",
            "x",
        ] {
            bad("MPICAST_PORT", v);
        }
    }

    #[test]
    fn sync() {
        let f = |v| cfg(&[("MPICAST_SYNC", v)]).unwrap().sync;
        assert_eq!(f("tree"), SyncAlgo::Tree);
        assert_eq!(f("LINEAR"), SyncAlgo::Linear);
        bad("MPICAST_SYNC", "ring");
    }

    #[test]
    fn sizes_and_suffixes() {
        let f = |v| match cfg(&[("MPICAST_MIN_BYTES", v)]).unwrap().min_bytes {
            MinBytes::Fixed(n) => n,
            MinBytes::Auto => panic!("{v} gave auto"),
        };
        assert_eq!(f("0"), 0);
        assert_eq!(f("1500"), 1500);
        assert_eq!(f("4k"), 4096);
        assert_eq!(f("4K"), 4096);
        assert_eq!(f("4KiB"), 4096);
        assert_eq!(f("4kib"), 4096);
        assert_eq!(f("4 KiB"), 4096);
        assert_eq!(f("2m"), 2 << 20);
        assert_eq!(f("2M"), 2 << 20);
        assert_eq!(f("2MiB"), 2 << 20);
        assert_eq!(f("1G"), 1 << 30);
        for v in [
            "4kB",
            "4MB",
            "1.5M",
            "-1",
            "k",
            "4 k b",
            "4x",
            "99999999999999999999",
            "18014398509481984G",
        ] {
            bad("MPICAST_MIN_BYTES", v);
        }
    }

    #[test]
    fn frag_bytes() {
        let f = |v| cfg(&[("MPICAST_FRAG_BYTES", v)]).unwrap().frag_bytes;
        assert_eq!(f("64"), Some(64));
        assert_eq!(f("65000"), Some(65000));
        assert_eq!(f("8k"), Some(8192));
        assert_eq!(f("auto"), None);
        for v in ["63", "65001", "64k", "0", "x"] {
            bad("MPICAST_FRAG_BYTES", v);
        }
    }

    #[test]
    fn topo() {
        let f = |v| cfg(&[("MPICAST_TOPO", v)]).unwrap().topo;
        assert_eq!(cfg(&[]).unwrap().topo, Topo::Auto);
        assert_eq!(f("auto"), Topo::Auto);
        assert_eq!(f("FLAT"), Topo::Flat);
        assert_eq!(f(" leaders "), Topo::Leaders);
        for v in ["tree", "hier", "1"] {
            bad("MPICAST_TOPO", v);
        }
    }

    #[test]
    fn rcvbuf() {
        let f = |v| cfg(&[("MPICAST_RCVBUF", v)]).unwrap().rcvbuf;
        assert_eq!(f("64k"), 65536);
        assert_eq!(f("65536"), 65536);
        assert_eq!(f("32MiB"), 32 << 20);
        assert_eq!(f("1G"), 1 << 30);
        for v in ["65535", "63k", "2G", "0", "lots"] {
            bad("MPICAST_RCVBUF", v);
        }
    }

    #[test]
    fn timeouts() {
        let c = cfg(&[("MPICAST_TIMEOUT_MS", "1"), ("MPICAST_PROBE_MS", "20000")]).unwrap();
        assert_eq!((c.timeout_ms, c.probe_ms), (1, 20000));
        for v in ["0", "-5", "1s", "1.5"] {
            bad("MPICAST_TIMEOUT_MS", v);
            bad("MPICAST_PROBE_MS", v);
        }
    }

    #[test]
    fn progress_is_auto_by_default_and_takes_three_words() {
        assert_eq!(cfg(&[]).unwrap().progress, Progress::Auto);
        for (word, want) in [
            ("auto", Progress::Auto),
            ("POLL", Progress::Poll),
            ("thread", Progress::Thread),
        ] {
            assert_eq!(cfg(&[("MPICAST_PROGRESS", word)]).unwrap().progress, want);
        }
        let e = cfg(&[("MPICAST_PROGRESS", "threads")]).unwrap_err();
        assert!(e.to_string().contains("auto, poll or thread"), "{e}");
    }

    #[test]
    fn every_variable_is_parsed() {
        let c = cfg(&[
            ("MPICAST_DISABLE", "yes"),
            ("MPICAST_IFACE", "ib0"),
            ("MPICAST_TTL", "4"),
            ("MPICAST_GROUP", "239.7.0.0/24"),
            ("MPICAST_PORT", "30000-30099"),
            ("MPICAST_SYNC", "linear"),
            ("MPICAST_TOPO", "leaders"),
            ("MPICAST_MIN_BYTES", "0"),
            ("MPICAST_FRAG_BYTES", "8000"),
            ("MPICAST_RCVBUF", "16M"),
            ("MPICAST_TIMEOUT_MS", "100"),
            ("MPICAST_PROBE_MS", "50"),
            ("MPICAST_STATS", "on"),
            ("MPICAST_VERBOSE", "2"),
            ("MPICAST_PROGRESS", "Thread"),
            ("MPICAST_EAGER_BYTES", "2k"),
            ("MPICAST_ROOT_WAITS", "1"),
            ("MPICAST_GOAL_WINDOW", "64"),
            ("MPICAST_TOPO_ID", "0.7"),
            ("MPICAST_TOPO_FILE", "/etc/mpicast/topo"),
            ("MPICAST_TOPO_BASE", "8"),
            ("MPICAST_TOPO_PICK", "random:42"),
            ("MPICAST_IMCAST_ROUTE", "table"),
            ("MPICAST_SEGMENT_BYTES", "64k"),
            ("MPICAST_IMCAST_BUFFER", "2MiB"),
            ("MPICAST_IMCAST_TRANSPORT", "p2p"),
            ("MPICAST_IMCAST_IP_SHARE", "75"),
            ("MPICAST_IMCAST_IP_BYTES", "1k"),
            ("MPICAST_DBCAST_TREE", "Topo"),
            ("MPICAST_DBCAST_CHAIN_BYTES", "off"),
            ("MPICAST_SWITCH_TOPOLOGY", "/etc/fabric.net"),
            ("MPICAST_MMCAST_ALGO", "SameTree-Cyclic"),
        ])
        .unwrap();
        assert_eq!(
            c,
            Config {
                disable: true,
                iface: Some(IfaceSpec::Name("ib0".into())),
                ttl: 4,
                group: (Ipv4Addr::new(239, 7, 0, 0), 24),
                ports: (30000, 30099),
                sync: SyncAlgo::Linear,
                topo: Topo::Leaders,
                min_bytes: MinBytes::Fixed(0),
                frag_bytes: Some(8000),
                rcvbuf: 16 << 20,
                timeout_ms: 100,
                probe_ms: 50,
                suspect_ms: 200,
                stats: true,
                verbose: 2,
                progress: Progress::Thread,
                eager_bytes: 2048,
                root_waits: true,
                goal_window: 64,
                topo_id: Some("0.7".into()),
                topo_file: Some("/etc/mpicast/topo".into()),
                topo_base: 8,
                topo_pick: TopoPick::Random { seed: Some(42) },
                imcast_route: Route::Table,
                switch_topology: Some("/etc/fabric.net".into()),
                mmcast_algo: "sametree-cyclic".into(),
                segment_bytes: 64 << 10,
                imcast_buffer: 2 << 20,
                imcast_transport: ImcastTransport::P2p,
                imcast_ip_share: 75,
                imcast_ip_bytes: 1024,
                dbcast_tree: DbcastTree::Topo,
                dbcast_chain_bytes: None,
            }
        );
    }

    #[test]
    fn dbcast_chain_bytes() {
        let f = |v| cfg(&[("MPICAST_DBCAST_CHAIN_BYTES", v)]).map(|c| c.dbcast_chain_bytes);
        assert_eq!(f("256k").unwrap(), Some(256 << 10));
        assert_eq!(f("0").unwrap(), Some(0));
        assert_eq!(f("OFF").unwrap(), None);
        let e = f("soon").unwrap_err().to_string();
        assert!(
            e.contains("MPICAST_DBCAST_CHAIN_BYTES") && e.contains("off"),
            "{e}"
        );
    }

    #[test]
    fn imcast_buffer_has_a_floor() {
        let buf = |v| cfg(&[("MPICAST_IMCAST_BUFFER", v)]).map(|c| c.imcast_buffer);
        assert_eq!(buf("1MiB").unwrap(), 1 << 20);
        assert_eq!(buf("1g").unwrap(), 1 << 30);
        let e = buf("64k").unwrap_err().to_string();
        assert!(
            e.contains("MPICAST_IMCAST_BUFFER") && e.contains("1MiB"),
            "{e}"
        );
        assert!(buf("lots").is_err());
    }

    #[test]
    fn topology_settings() {
        let c = cfg(&[]).unwrap();
        assert_eq!(
            (c.topo_id, c.topo_file, c.topo_base, c.topo_pick),
            (None, None, 16, TopoPick::Nearest)
        );
        assert_eq!((c.imcast_route, c.segment_bytes), (Route::Dests, 8192));
        assert_eq!(
            (c.imcast_transport, c.imcast_ip_share, c.imcast_ip_bytes),
            (ImcastTransport::Auto, 25, 16384)
        );
        let t = cfg(&[
            ("MPICAST_IMCAST_TRANSPORT", "IP"),
            ("MPICAST_IMCAST_IP_SHARE", "100"),
            ("MPICAST_IMCAST_IP_BYTES", "1MiB"),
        ])
        .unwrap();
        assert_eq!(
            (t.imcast_transport, t.imcast_ip_share, t.imcast_ip_bytes),
            (ImcastTransport::Ip, 100, 1 << 20)
        );
        for (k, v) in [
            ("MPICAST_IMCAST_TRANSPORT", "udp"),
            ("MPICAST_IMCAST_IP_SHARE", "0"),
            ("MPICAST_IMCAST_IP_SHARE", "101"),
            ("MPICAST_IMCAST_IP_BYTES", "lots"),
        ] {
            assert!(
                cfg(&[(k, v)]).unwrap_err().to_string().contains(k),
                "{k}={v}"
            );
        }

        let base = |v| cfg(&[("MPICAST_TOPO_BASE", v)]).unwrap().topo_base;
        for (v, b) in [
            ("2", 2),
            ("4", 4),
            ("8", 8),
            ("16", 16),
            ("256", 256),
            (" 32 ", 32),
        ] {
            assert_eq!(base(v), b, "{v}");
        }
        for v in [
            "0", "1", "3", "12", "512", "-16", "+16", "0x10", "16k", "sixteen",
        ] {
            let e = bad("MPICAST_TOPO_BASE", v);
            assert!(e.expected.contains("power of two"), "{}", e.expected);
        }

        // IDs: as many digits as written, each below the base.
        let id = |pairs: &[(&str, &str)]| cfg(pairs).map(|c| c.topo_id);
        assert_eq!(id(&[("MPICAST_TOPO_ID", "01a3")]), Ok(Some("01a3".into())));
        assert_eq!(
            id(&[("MPICAST_TOPO_ID", " 0.1.10.3 ")]),
            Ok(Some("0.1.10.3".into()))
        );
        assert_eq!(
            id(&[("MPICAST_TOPO_ID", "0.200"), ("MPICAST_TOPO_BASE", "256")]),
            Ok(Some("0.200".into()))
        );
        assert_eq!(
            id(&[("MPICAST_TOPO_ID", "0123"), ("MPICAST_TOPO_BASE", "8")]),
            Ok(Some("0123".into()))
        );
        for v in ["0x12", "01g3", "0..1", "0.16", "1.-1", &"f".repeat(17)] {
            bad("MPICAST_TOPO_ID", v);
        }
        let e = cfg(&[("MPICAST_TOPO_ID", "0193"), ("MPICAST_TOPO_BASE", "8")]).unwrap_err();
        assert_eq!(
            (e.var.as_str(), e.value.as_str()),
            ("MPICAST_TOPO_ID", "0193")
        );
        assert!(
            e.expected.contains("base 8") && e.expected.contains("digit 2 of topology ID is 9"),
            "{}",
            e.expected
        );
        // Above base 16 only dotted digits: "12" is one digit, twelve.
        assert!(cfg(&[("MPICAST_TOPO_ID", "12"), ("MPICAST_TOPO_BASE", "32")]).is_ok());
        assert!(cfg(&[("MPICAST_TOPO_ID", "1a"), ("MPICAST_TOPO_BASE", "32")]).is_err());

        assert_eq!(
            cfg(&[("MPICAST_TOPO_FILE", " /a b/topo ")])
                .unwrap()
                .topo_file,
            Some("/a b/topo".into())
        );

        let pick = |v| cfg(&[("MPICAST_TOPO_PICK", v)]).unwrap().topo_pick;
        assert_eq!(pick("nearest"), TopoPick::Nearest);
        assert_eq!(pick("Random"), TopoPick::Random { seed: None });
        assert_eq!(pick("random:7"), TopoPick::Random { seed: Some(7) });
        assert_eq!(
            pick("random: 18446744073709551615"),
            TopoPick::Random {
                seed: Some(u64::MAX)
            }
        );
        for v in [
            "closest",
            "random:",
            "random:x",
            "random:-1",
            "random:18446744073709551616",
        ] {
            bad("MPICAST_TOPO_PICK", v);
        }
        assert_eq!(pick("random:7").pick(99), Pick::Random { seed: 7 });
        assert_eq!(pick("random").pick(99), Pick::Random { seed: 99 });
        assert_eq!(pick("nearest").pick(99), Pick::Nearest);
        for v in ["nearest", "random", "random:7"] {
            assert_eq!(pick(v).to_string(), v);
        }

        let route = |v| cfg(&[("MPICAST_IMCAST_ROUTE", v)]).unwrap().imcast_route;
        assert_eq!(route("TABLE"), Route::Table);
        assert_eq!(route("dests"), Route::Dests);
        for v in ["tree", "dest", "1"] {
            bad("MPICAST_IMCAST_ROUTE", v);
        }
        // Every value but auto names a planner of algo::agents, and every planner has one.
        use crate::algo::agents::MmcastAlgo;
        for n in MMCAST_ALGOS.iter().filter(|n| **n != "auto") {
            assert!(MmcastAlgo::from_name(n).is_some(), "{n}");
        }
        assert_eq!(MMCAST_ALGOS.len(), MmcastAlgo::ALL.len() + 1);
        let algo = |v| cfg(&[("MPICAST_MMCAST_ALGO", v)]).unwrap().mmcast_algo;
        assert_eq!(algo("Random-Cyclic"), "random-cyclic");
        assert_eq!(algo("SPCCO"), "spcco");
        for v in ["agents", "cco", "sametree"] {
            bad("MPICAST_MMCAST_ALGO", v);
        }

        let seg = |v| cfg(&[("MPICAST_SEGMENT_BYTES", v)]).unwrap().segment_bytes;
        assert_eq!(seg("64"), 64);
        assert_eq!(seg("8k"), 8192);
        assert_eq!(seg("16MiB"), 16 << 20);
        for v in ["63", "0", "16777217", "32M", "1G", "8kB", "x"] {
            bad("MPICAST_SEGMENT_BYTES", v);
        }
    }

    #[test]
    fn topology_settings_are_agreed_but_not_the_id() {
        let a = Config::default();
        let names: Vec<&str> = a.agreed().iter().map(|(k, _)| *k).collect();
        for n in [
            "MPICAST_TOPO_BASE",
            "MPICAST_TOPO_PICK",
            "MPICAST_IMCAST_ROUTE",
            "MPICAST_SEGMENT_BYTES",
            "MPICAST_TOPO_FILE",
        ] {
            assert!(names.contains(&n), "{n} is agreed");
        }
        assert!(!names.contains(&"MPICAST_TOPO_ID"), "IDs differ per rank");
        let id = Config::from_vars([("MPICAST_TOPO_ID", "3")]).unwrap();
        assert_eq!(a.agreed_line(), id.agreed_line());

        // Paths as agreed values: no blank, '=' or ',' (the formats that carry them), never
        // "(unset)", bounded, and different paths stay different.
        let path = |p: &str| {
            Config::from_vars([("MPICAST_TOPO_FILE", p)])
                .unwrap()
                .agreed()
                .into_iter()
                .find(|(k, _)| *k == "MPICAST_TOPO_FILE")
                .unwrap()
                .1
        };
        assert_eq!(path("/etc/mpicast/topo-1.txt"), "/etc/mpicast/topo-1.txt");
        assert_eq!(path("/a b/x=y,z%(unset)"), "/a%20b/x%3Dy%2Cz%25%28unset%29");
        assert_eq!(path("/café"), "/caf%C3%A9");
        let long = format!("/{}", "d/".repeat(150));
        let longer = format!("/x{}", "d/".repeat(150));
        assert!(path(&long).len() <= 200 && path(&long).starts_with("..."));
        assert_ne!(path(&long), path(&longer));
        let unset = a
            .agreed()
            .into_iter()
            .find(|(k, _)| *k == "MPICAST_TOPO_FILE")
            .unwrap()
            .1;
        assert_eq!(unset, "(unset)");
        let b = Config::from_vars([
            ("MPICAST_TOPO_FILE", "/my topo"),
            ("MPICAST_TOPO_BASE", "8"),
        ])
        .unwrap();
        let d = differences(&[
            (0, parse_agreed_line(&a.agreed_line())),
            (1, parse_agreed_line(&b.agreed_line())),
        ]);
        assert_eq!(
            d,
            vec![
                "MPICAST_TOPO_BASE: 16 on rank 0; 8 on rank 1".to_string(),
                "MPICAST_TOPO_FILE: (unset) on rank 0; /my%20topo on rank 1".to_string(),
            ]
        );
        // The line the setup compares stays well inside its 512 bytes with the longest path.
        let worst = Config::from_vars([
            ("MPICAST_TOPO_FILE", long.as_str()),
            ("MPICAST_TOPO_PICK", "random:18446744073709551615"),
            ("MPICAST_IFACE", "10.1.0.0/16"),
            ("MPICAST_PORT", "30000-30099"),
        ])
        .unwrap();
        assert!(worst.agreed_line().len() < 450, "{}", worst.agreed_line());
    }

    #[test]
    fn from_vars_rejects_typos_and_ignores_others() {
        let ok =
            Config::from_vars([("PATH", "/bin"), ("MPICAST_TTL", "3"), ("OMPI_X", "y")]).unwrap();
        assert_eq!(ok.ttl, 3);

        let e = Config::from_vars([("MPICAST_IFAEC", "eth0")]).unwrap_err();
        assert_eq!(e.var, "MPICAST_IFAEC");
        assert_eq!(e.value, "eth0");
        assert!(
            e.expected.contains("did you mean MPICAST_IFACE?"),
            "{}",
            e.expected
        );

        // Environment names are case-sensitive, so a lower-case name would otherwise be lost.
        let e = Config::from_vars([("mpicast_ttl", "3")]).unwrap_err();
        assert!(
            e.expected.contains("did you mean MPICAST_TTL?"),
            "{}",
            e.expected
        );

        // Far from everything: list what exists.
        let e = Config::from_vars([("MPICAST_SOMETHING_ELSE_ENTIRELY", "1")]).unwrap_err();
        assert!(e.expected.contains("MPICAST_RCVBUF"), "{}", e.expected);

        // An unknown name with an empty value is unset, like every other empty value.
        assert_eq!(
            Config::from_vars([("MPICAST_IFAEC", "")]).unwrap(),
            Config::default()
        );

        // Bad values are still caught after the name check, and the last duplicate wins.
        let e = Config::from_vars([("MPICAST_TTL", "1"), ("MPICAST_TTL", "x")]).unwrap_err();
        assert_eq!((e.var.as_str(), e.value.as_str()), ("MPICAST_TTL", "x"));
        let c = Config::from_vars([("MPICAST_TTL", "x"), ("MPICAST_TTL", "9")]).unwrap();
        assert_eq!(c.ttl, 9);
        // A tool's variable, inherited by the ranks it starts, is accepted and changes nothing.
        assert_eq!(
            Config::from_vars([("MPICAST_GOAL_RUNNER", "/opt/mpicast-goal-run")]).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn names_other_tools_own_pass() {
        // CMake's find_package, module systems and package managers set these.
        for name in [
            "MPICAST_ROOT",
            "mpicast_ROOT",
            "mpicast_DIR",
            "MPICAST_HOME",
            "MPICAST_PREFIX",
            "Mpicast_Dir",
        ] {
            assert_eq!(
                Config::from_vars([(name, "/opt/mpicast")]),
                Ok(Config::default()),
                "{name}"
            );
        }
        // A real typo still stops, with the suggestion; so does a name that only ends alike.
        let e = Config::from_vars([("MPICAST_ROOT_WAIT", "1")]).unwrap_err();
        assert!(
            e.expected.contains("did you mean MPICAST_ROOT_WAITS?"),
            "{}",
            e.expected
        );
        assert!(Config::from_vars([("MPICAST_LIB_DIR", "/x")]).is_err());
        assert!(Config::from_vars([("MPICAST_DIRS", "/x")]).is_err());
    }

    #[test]
    fn agreed_settings_round_trip_and_differences() {
        let a = Config::default();
        let b =
            Config::from_vars([("MPICAST_MIN_BYTES", "0"), ("MPICAST_SYNC", "linear")]).unwrap();
        let line = a.agreed_line();
        assert!(line.contains("MIN_BYTES=auto") && line.contains("PORT=23000-23999"));
        let back = parse_agreed_line(&line);
        let want: Vec<(String, String)> = a
            .agreed()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(back, want);
        assert_ne!(a.agreed_line(), b.agreed_line());
        let ranks = vec![
            (0, parse_agreed_line(&a.agreed_line())),
            (1, parse_agreed_line(&b.agreed_line())),
            (2, parse_agreed_line(&a.agreed_line())),
            (3, parse_agreed_line(&a.agreed_line())),
        ];
        let d = differences(&ranks);
        assert_eq!(
            d,
            vec![
                "MPICAST_SYNC: tree on ranks 0, 2, 3; linear on rank 1".to_string(),
                "MPICAST_MIN_BYTES: auto on ranks 0, 2, 3; 0 on rank 1".to_string(),
            ]
        );
        assert!(differences(&ranks[..1]).is_empty());
        assert_eq!(rank_list(&[5, 0, 1, 2, 7, 8]), "ranks 0-2, 5, 7, 8");
        assert_eq!(rank_list(&[4]), "rank 4");
    }

    #[test]
    fn from_env_reads_the_process_environment() {
        // Only checks it does not fail on this process's environment (which the test harness may
        // give MPICAST_* values); parsing itself is covered through from_vars.
        let vars: Vec<(String, String)> = std::env::vars().filter(|(k, _)| has_prefix(k)).collect();
        assert_eq!(
            Config::from_env(),
            Config::from_vars_reading(vars, |p| std::fs::read_to_string(p)
                .map_err(|e| e.to_string()))
        );
    }

    /// `from_vars_reading` over `env` with one file, `path` -> `text`.
    fn with_file(env: &[(&str, &str)], path: &str, text: &str) -> Result<Config, ConfigError> {
        let (path, text) = (path.to_string(), text.to_string());
        Config::from_vars_reading(env.iter().copied(), move |p| {
            if p == path {
                Ok(text)
            } else {
                Err("No such file or directory (os error 2)".into())
            }
        })
    }

    #[test]
    fn config_file_settings() {
        let text = "# written by mpicast tune\r\n\
                    \n\
                    MPICAST_MIN_BYTES=4KiB\n\
                    export MPICAST_EAGER_BYTES='64k'\n\
                    \t export   MPICAST_SYNC = \"linear\"  # scouts to the root\n\
                    MPICAST_TOPO_FILE=\" /a b/topo#1 \"\n\
                    MPICAST_TTL=3 # a comment\n\
                    MPICAST_TOPO_FILE=/t#2\n\
                    MPICAST_GROUP=\n\
                    MPICAST_ROOT=/opt/mpicast\n\
                    MPICAST_TTL=4\r\n";
        let f = parse_config_file("/f", text).unwrap();
        let got: Vec<(usize, &str, &str)> = f
            .iter()
            .map(|s| (s.line, s.name.as_str(), s.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, "MPICAST_MIN_BYTES", "4KiB"),
                (4, "MPICAST_EAGER_BYTES", "64k"),
                (5, "MPICAST_SYNC", "linear"),
                (6, "MPICAST_TOPO_FILE", " /a b/topo#1 "),
                (7, "MPICAST_TTL", "3"),
                (8, "MPICAST_TOPO_FILE", "/t#2"),
                (9, "MPICAST_GROUP", ""),
                (10, "MPICAST_ROOT", "/opt/mpicast"),
                (11, "MPICAST_TTL", "4"),
            ]
        );
        let c = with_file(&[("MPICAST_CONFIG", " /f ")], "/f", text).unwrap();
        assert_eq!(c.min_bytes, MinBytes::Fixed(4096));
        assert_eq!(c.eager_bytes, 64 << 10);
        assert_eq!(c.sync, SyncAlgo::Linear);
        // The last of a name wins, as in a shell; an empty value is unset.
        assert_eq!(c.topo_file.as_deref(), Some("/t#2"));
        assert_eq!(c.ttl, 4);
        assert_eq!(c.group, DEFAULT_GROUP);
        // The port's value has no comment in it, so it is checked whole (and rejected).
        assert!(with_file(
            &[("MPICAST_CONFIG", "/f")],
            "/f",
            "MPICAST_PORT=30000-30099#x"
        )
        .is_err());
        // Only comments: the defaults.
        assert_eq!(
            with_file(&[("MPICAST_CONFIG", "/f")], "/f", "# nothing\n\n   \n"),
            Ok(Config::default())
        );
        // The same values from the file and from the environment make the same
        // configuration, so the ranks' comparison cannot tell them apart.
        let env = Config::from_vars([
            ("MPICAST_MIN_BYTES", "4KiB"),
            ("MPICAST_EAGER_BYTES", "64k"),
            ("MPICAST_SYNC", "linear"),
            ("MPICAST_TOPO_FILE", "/t#2"),
            ("MPICAST_TTL", "4"),
        ])
        .unwrap();
        assert_eq!(c, env);
        assert_eq!(c.agreed_line(), env.agreed_line());
    }

    #[test]
    fn config_file_errors_name_the_file_and_line() {
        let e = |text: &str| {
            with_file(&[("MPICAST_CONFIG", "/etc/m.conf")], "/etc/m.conf", text).unwrap_err()
        };
        let at = |l: usize| Some(format!("MPICAST_CONFIG: /etc/m.conf line {l}"));

        // A bad value: the environment's error, with the line.
        let x = e("# c\nMPICAST_SYNC=tree\nMPICAST_TTL=x\n");
        assert_eq!((x.var.as_str(), x.value.as_str()), ("MPICAST_TTL", "x"));
        assert_eq!(x.origin, at(3));
        assert_eq!(
            x.to_string(),
            "mpicast: MPICAST_CONFIG: /etc/m.conf line 3: MPICAST_TTL=x is invalid: expected \
             an integer 0..=255"
        );
        assert_eq!(
            x.expected,
            Config::from_vars([("MPICAST_TTL", "x")])
                .unwrap_err()
                .expected
        );
        // Checked after merging: an ID against the base the environment gives.
        let x = with_file(
            &[("MPICAST_CONFIG", "/f"), ("MPICAST_TOPO_BASE", "8")],
            "/f",
            "\nMPICAST_TOPO_ID=09\n",
        )
        .unwrap_err();
        assert_eq!(
            (x.var.as_str(), x.origin.as_deref()),
            ("MPICAST_TOPO_ID", Some("MPICAST_CONFIG: /f line 2"))
        );

        // A typo, with the suggestion.
        let x = e("MPICAST_TTL=1\n\nMPICAST_MIN_BYTE=4k\n");
        assert_eq!(x.var, "MPICAST_MIN_BYTE");
        assert_eq!(x.origin, at(3));
        assert!(
            x.to_string().starts_with(
                "mpicast: MPICAST_CONFIG: /etc/m.conf line 3: MPICAST_MIN_BYTE=4k is invalid"
            ) && x.expected.contains("did you mean MPICAST_MIN_BYTES?"),
            "{x}"
        );
        // ... but with an empty value it is unset, as in the environment.
        assert!(with_file(&[("MPICAST_CONFIG", "/f")], "/f", "MPICAST_MIN_BYTE=\n").is_ok());

        // Lines that are no settings, quoted whole.
        for (text, line, why) in [
            ("MPICAST_TTL=1\nMPICAST_TTL 3\n", 2, "no '='"),
            ("MPICAST_TTL=1\n\n=3\n", 3, "not a variable name"),
            ("MPICAST TTL=3", 1, "not a variable name"),
            ("export=3", 1, "settings only"),
            (
                "exportMPICAST_TTL=3",
                1,
                "the file holds mpicast's settings only",
            ),
            ("MPICAST_SYNC='linear", 1, "not closed"),
            (
                "MPICAST_SYNC=\"linear\" tree",
                1,
                "follows the closing quote",
            ),
            ("MPICAST_SYNC='linear\"", 1, "not closed"),
        ] {
            let x = e(text);
            assert_eq!(x.origin, at(line), "{text}");
            assert!(x.to_string().contains(why), "{text}: {x}");
        }
        let x = e("MPICAST_TTL=1\nMPICAST_TTL 3\n");
        assert_eq!(
            x.to_string(),
            format!(
                "mpicast: MPICAST_CONFIG: /etc/m.conf line 2: `MPICAST_TTL 3` is invalid: \
                 expected {EXPECT_LINE}; there is no '='"
            )
        );

        // Not mpicast's.
        let x = e("MPICAST_TTL=1\nOMPI_MCA_btl=tcp\n");
        assert_eq!((x.var.as_str(), x.origin.clone()), ("OMPI_MCA_btl", at(2)));

        // No nesting, whatever the letter case.
        for t in [
            "MPICAST_CONFIG=/other",
            "export mpicast_config='/etc/m.conf'",
        ] {
            let x = e(t);
            assert_eq!(
                (x.var.as_str(), x.origin.clone()),
                (CONFIG_VAR, at(1)),
                "{t}"
            );
            assert!(x.expected.contains("cannot name another"), "{}", x.expected);
        }

        // A file that cannot be read: the variable and why.
        let x = with_file(&[("MPICAST_CONFIG", "/nope")], "/f", "").unwrap_err();
        assert_eq!(
            (x.var.as_str(), x.value.as_str(), x.origin.as_deref()),
            (CONFIG_VAR, "/nope", None)
        );
        assert_eq!(
            x.to_string(),
            "mpicast: MPICAST_CONFIG=/nope is invalid: expected the path of a readable file of \
             settings, NAME=VALUE lines (reading it failed: No such file or directory (os error 2))"
        );
    }

    #[test]
    fn config_file_under_the_environment() {
        let text = "MPICAST_MIN_BYTES=4KiB\nMPICAST_SYNC=linear\nMPICAST_TTL=3\nMPICAST_STATS=1\n";
        let c = with_file(
            &[
                ("MPICAST_CONFIG", "/f"),
                // Set: wins over the file.
                ("MPICAST_SYNC", "tree"),
                // Empty (or blank): unset, so the file's value applies.
                ("MPICAST_MIN_BYTES", ""),
                ("MPICAST_TTL", "  "),
                // Not in the file: the environment's as always.
                ("MPICAST_PROBE_MS", "900"),
            ],
            "/f",
            text,
        )
        .unwrap();
        assert_eq!(c.sync, SyncAlgo::Tree);
        assert_eq!(c.min_bytes, MinBytes::Fixed(4096));
        assert_eq!(c.ttl, 3);
        assert!(c.stats);
        assert_eq!(c.probe_ms, 900);

        // The environment's value is checked as ever, and the error is the environment's.
        let x = with_file(
            &[("MPICAST_CONFIG", "/f"), ("MPICAST_TTL", "y")],
            "/f",
            text,
        )
        .unwrap_err();
        assert_eq!((x.var.as_str(), x.origin.as_deref()), ("MPICAST_TTL", None));
        // A bad value in the file hidden by the environment's good one is still an error:
        // the file is checked whole.
        let x = with_file(
            &[("MPICAST_CONFIG", "/f"), ("MPICAST_TTL", "2")],
            "/f",
            "\nMPICAST_TTL=300\n",
        )
        .unwrap_err();
        assert_eq!(
            (x.var.as_str(), x.origin.as_deref()),
            ("MPICAST_TTL", Some("MPICAST_CONFIG: /f line 2"))
        );
        // A file's duplicate: the last one is checked, as it is the one in force.
        let c = with_file(
            &[("MPICAST_CONFIG", "/f")],
            "/f",
            "MPICAST_TTL=x\nMPICAST_TTL=5\n",
        );
        assert_eq!(c.map(|c| c.ttl), Ok(5));
        // Order does not matter: the environment wins wherever MPICAST_CONFIG is in it.
        let c = with_file(
            &[("MPICAST_SYNC", "tree"), ("MPICAST_CONFIG", "/f")],
            "/f",
            text,
        )
        .unwrap();
        assert_eq!(c.sync, SyncAlgo::Tree);
        // MPICAST_CONFIG empty or unset: no file is read.
        let none = |env: &[(&str, &str)]| {
            Config::from_vars_reading(env.iter().copied(), |_| -> Result<String, String> {
                panic!("read")
            })
        };
        assert_eq!(none(&[("MPICAST_CONFIG", " ")]), Ok(Config::default()));
        assert_eq!(none(&[("MPICAST_TTL", "2")]).unwrap().ttl, 2);
        // from_vars reads no file and takes the name as known.
        assert_eq!(
            Config::from_vars([("MPICAST_CONFIG", "/nope")]),
            Ok(Config::default())
        );
        assert!(VARIABLES.iter().any(|(n, _, _)| *n == CONFIG_VAR));
        // A typo in the environment is still caught before the file is read.
        let x = with_file(
            &[("MPICAST_CONFIG", "/f"), ("MPICAST_CONFG", "/g")],
            "/f",
            text,
        )
        .unwrap_err();
        assert!(
            x.expected.contains("did you mean MPICAST_CONFIG?"),
            "{}",
            x.expected
        );
    }

    #[test]
    fn subnet_math() {
        let a = Ipv4Addr::new(10, 1, 2, 3);
        assert!(in_subnet(a, Ipv4Addr::new(10, 1, 0, 0), 16));
        assert!(!in_subnet(a, Ipv4Addr::new(10, 2, 0, 0), 16));
        assert!(in_subnet(a, Ipv4Addr::UNSPECIFIED, 0));
        assert!(in_subnet(a, a, 32));
        assert!(!in_subnet(a, Ipv4Addr::new(10, 1, 2, 4), 32));
        assert!(in_subnet(a, Ipv4Addr::new(10, 1, 2, 2), 31));
    }

    #[test]
    fn min_bytes_auto_follows_the_member_count() {
        let auto = |m| MinBytes::Auto.resolve(m);
        assert_eq!(auto(2), usize::MAX);
        assert_eq!(auto(3), 32768);
        assert_eq!(auto(9), 32768);
        assert_eq!(auto(1000), 32768);
        // Never below the floor used to skip the lookup, never above for fixed values.
        assert!((2..100).all(|m| auto(m) >= MinBytes::Auto.floor()));
        assert_eq!(MinBytes::Fixed(7).resolve(2), 7);
        assert_eq!(MinBytes::Fixed(7).floor(), 7);
        let e = cfg(&[("MPICAST_MIN_BYTES", "automatic")]).unwrap_err();
        assert!(e.expected.contains("auto"), "{}", e.expected);
        assert_eq!(
            cfg(&[("MPICAST_MIN_BYTES", " Auto ")]).unwrap().min_bytes,
            MinBytes::Auto
        );
    }

    #[test]
    fn hints() {
        let mut h = Hints::default();
        assert_eq!(h.set("mpicast", "off"), Ok(true));
        assert_eq!(h.set("mpicast_sync", "linear"), Ok(true));
        assert_eq!(h.set("mpicast_min_bytes", "64k"), Ok(true));
        assert_eq!(h.set("mpicast_eager_bytes", "0"), Ok(true));
        assert_eq!(h.set("cb_nodes", "4"), Ok(false));
        assert_eq!(
            h,
            Hints {
                enabled: Some(false),
                sync: Some(SyncAlgo::Linear),
                min_bytes: Some(MinBytes::Fixed(65536)),
                eager_bytes: Some(0),
                mmcast_algo: None,
            }
        );
        let c = Config::default().with_hints(&h);
        assert!(c.disable);
        assert_eq!(c.sync, SyncAlgo::Linear);
        assert_eq!(c.min_bytes, MinBytes::Fixed(65536));
        assert_eq!(c.eager_bytes, 0);
        assert!(h.set("mpicast_eager_bytes", "lots").is_err());
        assert_eq!(h.set("mpicast_mmcast_algo", "SPCCO"), Ok(true));
        assert_eq!(h.mmcast_algo.as_deref(), Some("spcco"));
        assert!(h.set("mpicast_mmcast_algo", "agents").is_err());
        assert_eq!(
            Config::default().with_hints(&h).mmcast_algo,
            "spcco",
            "the hint wins over the variable"
        );
        assert_eq!(h.set("mpicast_min_bytes", "AUTO"), Ok(true));
        assert_eq!(h.min_bytes, Some(MinBytes::Auto));

        // Empty clears; "on" cannot undo the process-wide kill switch.
        assert_eq!(h.set("mpicast_sync", ""), Ok(true));
        assert_eq!(h.sync, None);
        assert_eq!(h.set("mpicast", "on"), Ok(true));
        let off = Config {
            disable: true,
            ..Config::default()
        };
        assert!(off.with_hints(&h).disable);
        assert!(!Config::default().with_hints(&h).disable);
        assert_eq!(
            Config::default().with_hints(&Hints::default()),
            Config::default()
        );

        let e = h.set("mpicast_sync", "ring").unwrap_err();
        assert_eq!(e.var, "MPI_Info key mpicast_sync");
        assert!(h.set("mpicast", "maybe").is_err());
        assert!(h.set("mpicast_min_bytes", "1.5k").is_err());
        assert!(h.set("mpicast_min_byte", "1").is_err());
        // A failed set leaves the previous value.
        assert_eq!(h.enabled, Some(true));
    }
}
