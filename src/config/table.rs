//! The table of settings: one row per setting, the only place a setting is written down.
//! From it come the [`Config`] struct and its `Default`, [`VARIABLES`] (the README's table and
//! the names the environment may use), the lookup of the environment and of the
//! `MPICAST_CONFIG` file (`env`), the settings ranks agree on (`agree`) and the `MPI_Info`
//! hints ([`Hints`], `hints`).
//!
//! A row is a field of [`Config`] with its doc comment and type, then:
//! - `var`: the environment variable; `default`: the field's value when it is not set;
//!   `shown`: that default as the README and [`VARIABLES`] show it (a value `parse` takes, or
//!   a text in parentheses such as `(not set)`); `help`: the description of [`VARIABLES`].
//! - `parse`: `fn(&str, &Config) -> Result<T, String>` from `parse` (the trimmed value, the
//!   settings parsed so far; the error is what was expected). `late: true` parses the row after
//!   all others, for a value checked against another setting.
//! - `agreed: N => show` (optional): every rank of a communicator must have the same value;
//!   `show` (from `agree`) spells it, and N is its place in the agreed line, which is compared
//!   across ranks and must not be reordered (new agreed settings take the next number).
//! - `hint: "key" => field` (optional): the `MPI_Info` key that overrides the setting per
//!   communicator, held in [`Hints`]`::field`; `apply: f` instead of replacing the value
//!   (`fn(&hint, &mut value)`). `info_key: "key"` (optional): a key of the setting read
//!   elsewhere, which [`Hints::set`] accepts and leaves alone.
//!
//! To add a setting: add a row below (its place is its place in `VARIABLES` and in the lookup);
//! give it a parser from `parse` or write one there (the error text is the row's own); if every
//! rank must share it, `agreed:` the next free place; then add its row to README.md's table
//! (`tests/readme.rs` fails until it is there); the tests that count settings say so, and the
//! snapshot of every setting is recorded again with `MPICAST_BLESS=1 cargo test --lib
//! config::tests::snapshot` (its diff: the new setting's lines, and its value in every agreed
//! line if it is agreed).

use super::{agree, hints, parse, CONFIG_VAR};
use super::{DbcastTree, IfaceSpec, ImcastTransport, MinBytes, Progress, SyncAlgo, Topo, TopoPick};
use crate::algo::prefix::Route;
use std::net::Ipv4Addr;

/// One setting, as the lookup, the agreement and the hints use it.
pub(super) struct Row {
    pub var: &'static str,
    /// Parsed after the rows without it.
    pub late: bool,
    /// Parses a trimmed, non-empty value into its field; the error is what was expected.
    pub set: fn(&mut Config, &str) -> Result<(), String>,
    /// The place in the agreed line, and the value's spelling there.
    pub agreed: Option<(u8, Show)>,
    pub hint: Option<HintRow>,
    /// An `MPI_Info` key of the setting that is read elsewhere.
    pub info_key: Option<&'static str>,
}

/// Spells a setting's value as the ranks compare it.
pub(super) type Show = fn(&Config) -> String;

/// The `MPI_Info` hint of a row.
pub(super) struct HintRow {
    pub key: &'static str,
    /// Records a trimmed value in [`Hints`] (empty: clears it); the error is what was expected.
    pub set: fn(&mut Hints, &str) -> Result<(), String>,
    /// Applies the recorded hint, if any, to a configuration.
    pub apply: fn(&Hints, &mut Config),
}

/// `Some(x)` for an optional part of a row that is there, `None` for one that is not.
macro_rules! some {
    () => {
        None
    };
    ($($x:tt)+) => {
        Some($($x)+)
    };
}

/// The first of the tokens given, or the default after `;`.
macro_rules! or {
    (; $($default:tt)+) => {
        $($default)+
    };
    ($given:expr; $($default:tt)+) => {
        $given
    };
}

macro_rules! settings {
    ($(
        $(#[$meta:meta])*
        $field:ident : $ty:ty {
            var: $var:literal,
            default: $default:expr,
            shown: $shown:literal,
            parse: $parse:expr,
            $(late: $late:literal,)?
            $(agreed: $at:literal => $show:expr,)?
            $(hint: $hkey:literal => $hfield:ident $(, apply: $apply:expr)?,)?
            $(info_key: $ikey:literal,)?
            help: $help:literal $(,)?
        }
    ),* $(,)?) => {
        /// The whole process configuration. See [`VARIABLES`] for the meaning of each field.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config {
            $($(#[$meta])* pub $field: $ty,)*
        }

        impl Default for Config {
            fn default() -> Config {
                Config {
                    $($field: $default,)*
                }
            }
        }

        /// Every variable: (name, default, description). The README prints this table, and
        /// [`Config::from_vars`] treats any `MPICAST_*` name missing from it as an error.
        pub const VARIABLES: &[(&str, &str, &str)] = &[
            (CONFIG_VAR, "(not set)", super::file::CONFIG_HELP),
            $(($var, $shown, $help),)*
        ];

        /// Per-communicator hints from `MPI_Info`, one field per row with a `hint` key.
        /// `None` leaves the process-wide value.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Hints {
            $($(
                #[doc = concat!("`", $hkey, "`: as `", $var, "`.")]
                pub $hfield: Option<$ty>,
            )?)*
        }

        /// Every `MPI_Info` key of mpicast: the rows' hints in the table's order, then the keys
        /// read elsewhere.
        pub const HINT_KEYS: &[&str] = &[$($($hkey,)?)* $($($ikey,)?)*];

        pub(super) static ROWS: &[Row] = &[$(
            Row {
                var: $var,
                late: or!($($late)?; false),
                set: |c: &mut Config, v: &str| {
                    let parsed = ($parse)(v, &*c)?;
                    c.$field = parsed;
                    Ok(())
                },
                agreed: some!($(($at, |c: &Config| ($show)(&c.$field)))?),
                hint: some!($(HintRow {
                    key: $hkey,
                    set: |h: &mut Hints, v: &str| {
                        h.$hfield = match v {
                            "" => None,
                            v => Some(($parse)(v, &Config::default())?),
                        };
                        Ok(())
                    },
                    apply: |h: &Hints, c: &mut Config| {
                        if let Some(given) = &h.$hfield {
                            (or!($($apply)?; hints::replace))(given, &mut c.$field);
                        }
                    },
                })?),
                info_key: some!($($ikey)?),
            },
        )*];
    };
}

settings! {
    /// `MPICAST_DISABLE`: forward everything to the host MPI.
    disable: bool {
        var: "MPICAST_DISABLE",
        default: false,
        shown: "0",
        parse: parse::boolean,
        agreed: 0 => agree::on_off,
        hint: "mpicast" => enabled, apply: hints::turns_off,
        help: "1/true/yes/on: do not use multicast at all; every call goes to the host MPI",
    },
    /// `MPICAST_IFACE`: `None` lets the kernel's routing choose.
    iface: Option<IfaceSpec> {
        var: "MPICAST_IFACE",
        default: None,
        shown: "(default route)",
        parse: parse::iface,
        help: "interface to multicast on: a name (eth0), an IPv4 address, or a subnet (10.1.0.0/16) \
            matched against each host's addresses",
    },
    /// `MPICAST_TTL`.
    ttl: u8 {
        var: "MPICAST_TTL",
        default: 1,
        shown: "1",
        parse: parse::ttl,
        agreed: 8 => agree::plain,
        help: "multicast TTL 0..=255: 0 stays on the host, 1 stays on the local network",
    },
    /// `MPICAST_GROUP`: the subnet (base, prefix) groups are picked from; inside 224.0.0.0/4.
    group: (Ipv4Addr, u8) {
        var: "MPICAST_GROUP",
        default: (Ipv4Addr::new(239, 255, 0, 0), 16),
        shown: "239.255.0.0/16",
        parse: parse::group,
        agreed: 6 => agree::group,
        help: "subnet inside 224.0.0.0/4 that communicator groups are picked from (no host bits)",
    },
    /// `MPICAST_PORT`: inclusive port range, both ends >= 1024.
    ports: (u16, u16) {
        var: "MPICAST_PORT",
        default: (23000, 23999),
        shown: "23000-23999",
        parse: parse::ports,
        agreed: 7 => agree::ports,
        help: "UDP port N or inclusive range N-M (N >= 1024) that communicator ports are picked from",
    },
    /// `MPICAST_SYNC`.
    sync: SyncAlgo {
        var: "MPICAST_SYNC",
        default: SyncAlgo::Tree,
        shown: "tree",
        parse: parse::sync,
        agreed: 1 => agree::sync,
        hint: "mpicast_sync" => sync,
        help: "scout synchronisation before the multicast: tree or linear",
    },
    /// `MPICAST_TOPO`.
    topo: Topo {
        var: "MPICAST_TOPO",
        default: Topo::Auto,
        shown: "auto",
        parse: parse::topo,
        agreed: 2 => agree::topo,
        help: "ranks sharing a host: leaders (one per host multicasts, the host MPI spreads it \
            locally), flat (every rank joins), auto (leaders if hosts hold several ranks, flat if \
            one each, the host MPI if all ranks share one host)",
    },
    /// `MPICAST_MIN_BYTES`: smaller messages go to the host MPI; 0 multicasts everything;
    /// `auto` (the default) picks the threshold from the number of hosts that multicast.
    min_bytes: MinBytes {
        var: "MPICAST_MIN_BYTES",
        default: MinBytes::Auto,
        shown: "auto",
        parse: parse::min_bytes,
        agreed: 3 => agree::min_bytes,
        hint: "mpicast_min_bytes" => min_bytes,
        help: "smaller broadcasts go to the host MPI; 0 multicasts every size (suffixes k, m, KiB, MiB); \
            auto: 32 KiB with 3 or more multicasting hosts, never with 2 (the largest crossover \
            measured, at 1 Gbit/s; on 100 Mbit/s links 1500 B to 4 KiB is enough)",
    },
    /// `MPICAST_FRAG_BYTES`: datagram payload size; `None` derives it from the MTU.
    frag_bytes: Option<usize> {
        var: "MPICAST_FRAG_BYTES",
        default: None,
        shown: "auto",
        parse: parse::frag_bytes,
        agreed: 5 => agree::frag_bytes,
        help: "largest datagram payload 64..=65000: the size used is the smaller of this and what \
            the smallest MTU among the ranks allows; auto: what the MTU allows",
    },
    /// `MPICAST_RCVBUF`: socket receive buffer to ask the kernel for.
    rcvbuf: usize {
        var: "MPICAST_RCVBUF",
        default: 8 << 20,
        shown: "8MiB",
        parse: parse::rcvbuf,
        help: "socket receive buffer to request (>= 64KiB); the size granted is what the kernel allows",
    },
    /// `MPICAST_TIMEOUT_MS`: an operation that makes no progress this long fails.
    timeout_ms: u64 {
        var: "MPICAST_TIMEOUT_MS",
        default: 30_000,
        shown: "30000",
        parse: parse::millis,
        help: "bound on every wait mpicast adds (> 0): an operation without progress, or a setup \
            that not every rank joins, this long ends the job with a message naming the missing \
            ranks and why",
    },
    /// `MPICAST_PROBE_MS`: bound on the setup probe that checks multicast works.
    probe_ms: u64 {
        var: "MPICAST_PROBE_MS",
        default: 500,
        shown: "500",
        parse: parse::millis,
        help: "bound in milliseconds on the setup probe that checks multicast reaches every rank (> 0)",
    },
    /// `MPICAST_SUSPECT_MS`: multicast that delivers nothing this long mid-operation is
    /// suspected broken: repaired by unicast, and the communicator moves (`wire::heal`).
    suspect_ms: u64 {
        var: "MPICAST_SUSPECT_MS",
        default: 200,
        shown: "200",
        parse: parse::millis,
        help: "milliseconds without multicast progress in an operation after which a rank is served by unicast and the communicator moves to smaller datagrams or the host MPI (> 0)",
    },
    /// `MPICAST_STATS`: print counters at finalize.
    stats: bool {
        var: "MPICAST_STATS",
        default: false,
        shown: "0",
        parse: parse::boolean,
        help: "1/true/yes/on: print traffic and repair counters at MPI_Finalize",
    },
    /// `MPICAST_VERBOSE`: 0 silent .. 3 chatty.
    verbose: u8 {
        var: "MPICAST_VERBOSE",
        default: 0,
        shown: "0",
        parse: parse::verbose,
        help: "diagnostics on stderr: 0 warnings only; 1 setup decisions and each communicator's \
            threshold and why; 2 also every operation, and every call handed to the host MPI \
            with the reason",
    },
    /// `MPICAST_PROGRESS`: who drives forwarding and non-blocking GOAL runs besides the
    /// application's MPI calls.
    progress: Progress {
        var: "MPICAST_PROGRESS",
        default: Progress::Auto,
        shown: "auto",
        parse: parse::progress,
        help: "who moves the multicasts routed through this rank (and non-blocking GOAL runs) \
            besides every MPI call of the rank: nobody else (poll), a progress thread (thread: \
            MPI_Init/MPI_Init_thread then ask the host MPI for MPI_THREAD_MULTIPLE; without it \
            mpicast warns and polls), or the thread when the application's own initialisation \
            got MPI_THREAD_MULTIPLE or MPICAST_FANOUT is on (auto; with MPICAST_FANOUT=on as \
            thread)",
    },
    /// `MPICAST_EAGER_BYTES`: broadcasts of at most this many bytes go without scouts (the
    /// root multicasts at once; receivers' sockets, joined all along, hold the data until they
    /// enter); 0 sends scouts before every broadcast.
    eager_bytes: usize {
        var: "MPICAST_EAGER_BYTES",
        default: 1 << 20,
        shown: "1MiB",
        parse: parse::size,
        agreed: 4 => agree::plain,
        hint: "mpicast_eager_bytes" => eager_bytes,
        help: "multicast broadcasts of at most this size skip the scouts: the root sends at once and \
            the receivers' joined sockets hold the data until they enter (acknowledgements and the \
            window still pace it); 0 sends scouts before every broadcast",
    },
    /// `MPICAST_ROOT_WAITS`: the root of an eager broadcast that fits the window waits for
    /// every acknowledgement before it returns. Off (the default), it returns once its
    /// datagrams are out, its responder thread keeps a copy to repair losses, and the
    /// acknowledgements are collected at its next operation on the communicator.
    root_waits: bool {
        var: "MPICAST_ROOT_WAITS",
        default: false,
        shown: "0",
        parse: parse::boolean,
        agreed: 9 => agree::on_off,
        help: "1/true/yes/on: the root of an eager broadcast waits for every receiver's \
            acknowledgement before it returns; off, it returns once its datagrams are out (its \
            responder thread keeps a copy and repairs losses; the acknowledgements are collected \
            at its next operation on the communicator, or when it is freed)",
    },
    /// `MPICAST_GOAL_WINDOW`: run GOAL schedules longer than this through a sliding window of
    /// this many actions (0: no window).
    goal_window: usize {
        var: "MPICAST_GOAL_WINDOW",
        default: 0,
        shown: "0",
        parse: parse::actions,
        help: "GOAL runs of schedules longer than this many actions hold at most this many at a time \
            (a sliding window: executor state bounded by the window plus pending credits); 0 off",
    },
    /// `MPICAST_TOPO_ID`: this rank's topology ID as written (trimmed; its digits checked
    /// against `topo_base`). Differs between ranks; see `crate::topology`.
    topo_id: Option<String> {
        var: "MPICAST_TOPO_ID",
        default: None,
        shown: "(not set)",
        parse: parse::topo_id,
        late: true,
        info_key: "mpicast_topo_id",
        help: "this rank's topology ID for the routing of MPICAST_Imcast: digits in base \
            MPICAST_TOPO_BASE, hex (01a3) or dotted decimal (0.1.10.3), unique in each communicator; \
            a communicator's MPI_Info key mpicast_topo_id wins over it; give it on every rank or on \
            none",
    },
    /// `MPICAST_TOPO_FILE`: the path of the file mapping hosts to topology IDs.
    topo_file: Option<String> {
        var: "MPICAST_TOPO_FILE",
        default: None,
        shown: "(not set)",
        parse: parse::path,
        agreed: 15 => agree::topo_file,
        help: "file of topology IDs, used when no rank has one of its own: lines `HOST ID` (the host's \
            ID, its ranks told apart by CPU placement) or `HOST:SLOT ID` (a rank's), # comments; \
            every rank reads it and must find the same contents; not set: IDs derived from hosts \
            (ordered by address) and CPU package, NUMA node and core",
    },
    /// `MPICAST_TOPO_BASE`: the base of topology IDs, a power of two 2..=256.
    topo_base: u32 {
        var: "MPICAST_TOPO_BASE",
        default: 16,
        shown: "16",
        parse: parse::topo_base,
        agreed: 10 => agree::plain,
        help: "base of topology IDs, a power of two 2..=256: a larger base makes MPICAST_Imcast trees \
            shallower (at most one hop per digit) but lets a rank send up to base - 1 copies per \
            level; 16 writes a digit as one hex character",
    },
    /// `MPICAST_TOPO_PICK`: how a routing-table entry is chosen among several candidates.
    topo_pick: TopoPick {
        var: "MPICAST_TOPO_PICK",
        default: TopoPick::Nearest,
        shown: "nearest",
        parse: parse::topo_pick,
        agreed: 11 => agree::plain,
        help: "which rank a routing-table entry names among several candidates: nearest (the one \
            closest to the rank's own ID: deterministic, and different ranks name different \
            candidates, spreading the load) or random (a seed drawn per communicator; random:SEED \
            for a fixed one)",
    },
    /// `MPICAST_IMCAST_ROUTE`: who the next hops of `MPICAST_Imcast` are.
    imcast_route: Route {
        var: "MPICAST_IMCAST_ROUTE",
        default: Route::Dests,
        shown: "dests",
        parse: parse::imcast_route,
        agreed: 12 => agree::route,
        help: "next hops of MPICAST_Imcast: dests (destinations only; no other rank handles the data) \
            or table (the paper's: table entries, which may forward without delivering); dests is \
            as fast or faster in 22 of 24 measured cases",
    },
    /// `MPICAST_SWITCH_TOPOLOGY`: the path of the switch topology (the network file of
    /// `mpicast sim --network`) that `MPICAST_Mmcast` plans its routes on.
    switch_topology: Option<String> {
        var: "MPICAST_SWITCH_TOPOLOGY",
        default: None,
        shown: "(not set)",
        parse: parse::path,
        help: "file of the switched network the ranks' hosts hang on, for MPICAST_Mmcast's routes: the \
            network file of `mpicast sim --network` (switch, link, host lines; hosts by name or \
            address, or rank lines by MPI_COMM_WORLD rank); every rank reads it and must find the \
            same contents; not set: all hosts on one switch",
    },
    /// `MPICAST_MMCAST_ALGO`: the algorithm of `MPICAST_Mmcast`, one of [`MMCAST_ALGOS`]
    /// (lower case).
    mmcast_algo: String {
        var: "MPICAST_MMCAST_ALGO",
        default: "auto".to_string(),
        shown: "auto",
        parse: parse::mmcast_algo,
        hint: "mpicast_mmcast_algo" => mmcast_algo,
        help: "algorithm of MPICAST_Mmcast: sametree-binomial, sametree-cyclic, random-binomial, \
            random-cyclic (seed 003's agent-based multicasts), spcco (destinations ordered along \
            the routing tree), naive (each source sends to each destination), or auto \
            (sametree-cyclic from 16 multicasts at once on 8 switches or more, else spcco)",
    },
    /// `MPICAST_SEGMENT_BYTES`: `MPICAST_Imcast` pipelines a message in segments of this size.
    segment_bytes: usize {
        var: "MPICAST_SEGMENT_BYTES",
        default: 8 << 10,
        shown: "8KiB",
        parse: parse::segment_bytes,
        agreed: 13 => agree::plain,
        help: "MPICAST_Imcast and MPICAST_Dbcast forward a message in segments of this size, 64 bytes to 16 MiB (8 KiB, \
            the paper's choice)",
    },
    /// `MPICAST_IMCAST_BUFFER`: bytes of multicasts a rank holds before their receives come.
    imcast_buffer: usize {
        var: "MPICAST_IMCAST_BUFFER",
        default: 256 << 20,
        shown: "256MiB",
        parse: parse::imcast_buffer,
        help: "multicasts that reach a rank before its MPICAST_Mcast_irecv wait in memory, up to this \
            many bytes per rank (>= 1MiB); past it the job ends with a message saying so",
    },
    /// `MPICAST_IMCAST_TRANSPORT`: how the data of `MPICAST_Imcast` travels.
    imcast_transport: ImcastTransport {
        var: "MPICAST_IMCAST_TRANSPORT",
        default: ImcastTransport::Auto,
        shown: "auto",
        parse: parse::imcast_transport,
        agreed: 14 => agree::imcast_transport,
        help: "how the data of MPICAST_Imcast travels: p2p (point-to-point along the routes), ip \
            (once by the communicator's IP multicast group, repaired and acknowledged as \
            broadcasts are; p2p where the group does not work) or auto (ip from \
            MPICAST_IMCAST_IP_SHARE and MPICAST_IMCAST_IP_BYTES on, when the ranks are on more \
            than one host)",
    },
    /// `MPICAST_IMCAST_IP_SHARE`: with `auto`, IP multicast from this share of the other
    /// ranks as destinations (percent)...
    imcast_ip_share: u32 {
        var: "MPICAST_IMCAST_IP_SHARE",
        default: 25,
        shown: "25",
        parse: parse::percent,
        help: "with MPICAST_IMCAST_TRANSPORT=auto, IP multicast for destination sets of at least this \
            percentage of the other ranks (1 to 100), and of two ranks at least",
    },
    /// `MPICAST_IMCAST_IP_BYTES`: ...and this many bytes.
    imcast_ip_bytes: usize {
        var: "MPICAST_IMCAST_IP_BYTES",
        default: 16 << 10,
        shown: "16KiB",
        parse: parse::imcast_ip_bytes,
        help: "with MPICAST_IMCAST_TRANSPORT=auto, IP multicast for messages of at least this size",
    },
    /// `MPICAST_DBCAST_TREE`: how a dynamic broadcast orders its recipients in the tree.
    dbcast_tree: DbcastTree {
        var: "MPICAST_DBCAST_TREE",
        default: DbcastTree::Binomial,
        shown: "binomial",
        parse: parse::dbcast_tree,
        help: "how MPICAST_Dbcast orders its recipients in the binomial tree: binomial (the caller's \
            order, higher priorities nearer the root) or topo (priorities first, then by topology \
            ID, so that each subtree holds ranks that are close)",
    },
    /// `MPICAST_DBCAST_CHAIN_BYTES`: messages of at least this size go down a chain when the
    /// segment model says it is faster (`algo::dbcast::shape_for`); None: never.
    dbcast_chain_bytes: Option<usize> {
        var: "MPICAST_DBCAST_CHAIN_BYTES",
        default: Some(128 << 10),
        shown: "128KiB",
        parse: parse::dbcast_chain_bytes,
        help: "MPICAST_Dbcast sends messages of at least this size down a pipelined chain over the \
            recipients instead of the binomial tree, when its segment count says the chain is \
            faster (the binomial root sends the whole message once per step); off: always the \
            binomial tree",
    },
    /// `MPICAST_FANOUT`: dynamic broadcast on MPI_COMM_WORLD at MPI_Init and on the
    /// communicators the program creates, and fan-out detection among its MPI_Isends
    /// (`algo::fanout`, `transport::fanout`).
    fanout: bool {
        var: "MPICAST_FANOUT",
        default: false,
        shown: "off",
        parse: parse::boolean,
        agreed: 16 => agree::on_off,
        help: "on: dynamic broadcast on MPI_COMM_WORLD from MPI_Init and on every communicator the \
            program creates, and an unmodified program's MPI_Isends of the same buffer, tag and \
            communicator to several ranks, issued one after another, go as one dynamic broadcast",
    },
    /// `MPICAST_FANOUT_BYTES`: MPI_Isends smaller than this are never deferred.
    fanout_bytes: usize {
        var: "MPICAST_FANOUT_BYTES",
        default: 1 << 10,
        shown: "1KiB",
        parse: parse::size,
        help: "with MPICAST_FANOUT=on, MPI_Isends of fewer bytes go at once (never grouped)",
    },
}
