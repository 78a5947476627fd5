//! Where a communicator's topology IDs come from (the IDs of [`crate::algo::prefix`], which
//! routes the coming `MPICAST_Imcast`). Pure: the library gathers one [`RankFacts`] record per
//! rank with an allgather at the first use of a communicator, and every rank calls [`resolve`]
//! on the same records, so every rank computes the same [`Topology`] or the same error. Only
//! [`FileCopy::read`] and [`sysfs`] read files (no MPI, no socket, no clock).
//!
//! # Sources, first found wins
//!
//! For each rank, in this order:
//! 1. the `MPI_Info` key `mpicast_topo_id` ([`INFO_KEY`]) on the communicator (per rank: the
//!    library reads it and passes the text);
//! 2. `MPICAST_TOPO_ID` in the rank's environment;
//! 3. `MPICAST_TOPO_FILE`, a file mapping host names (and optionally slots) to IDs
//!    ([`TopoFile`] documents the format);
//! 4. derived from what the ranks see: the host (hosts numbered in the order of their interface
//!    addresses, so that a subnet's hosts are neighbours), then the CPU package, NUMA node and
//!    core of each rank on its host ([`sysfs`]), then the rank order among ranks that share all
//!    of those.
//!
//! Every rank of a communicator must get its ID from the same source: some ranks with an
//! explicit ID (1 or 2) and others without, or some from the info key and others from the
//! environment, is an error ([`TopoError::Mixed`]), not a silent mix of numbering schemes that
//! would give a tree shaped by accident. The file (3) is used only when no rank has an explicit
//! ID; every rank reads its own copy (the path is one of the settings every rank must share) and
//! [`resolve`] checks that every rank could read it and that every copy has the same contents.
//!
//! Explicit IDs (1, 2) and `HOST:SLOT` lines of a file are a rank's whole ID. A `HOST` line of a
//! file is the host's ID; its ranks get it followed by on-host digits, derived as in 4, and none
//! where every host holds one rank of the communicator (the paper's "the ID of the node it runs
//! on"). All IDs are in base `MPICAST_TOPO_BASE` ([`RankFacts::base`]), in the text syntax of
//! [`crate::algo::prefix::Shape::parse`]: hex digits ("01a3" in base 16) or dotted decimal
//! digits ("0.1.10.3").
//!
//! # Errors
//!
//! Bad or inconsistent IDs are a [`TopoError`] whose message names the rank and the source, e.g.
//! `rank 5: MPICAST_TOPO_FILE=/etc/topo: host node7 has no ID`, never a wrong tree: a syntax
//! error or a digit out of base, IDs of different lengths, two ranks with one ID, a file that a
//! rank cannot read, copies of the file that differ, a line of the file that is wrong (named by
//! its line number), a host missing from the file.
//!
//! # In the library
//!
//! At the first use of a communicator that needs IDs, every rank:
//! 1. if `MPICAST_TOPO_FILE` is set, reads its copy:
//!    `FileCopy::read(path, &format!("MPICAST_TOPO_FILE={path}"), cfg.topo_base)`;
//! 2. fills its [`RankFacts`]: `explicit` from [`Explicit::first_found`] (the communicator's
//!    [`INFO_KEY`] value, then `cfg.topo_id`), its host name, its interface address, its slot
//!    (or [`UNKNOWN`]), [`sysfs::read`], `cfg.topo_base`, and the copy's [`FileCopy::fact`];
//! 3. allgathers the [`RankFacts::encode`]d records (records of [`MAX_RECORD_BYTES`], or padded
//!    to the longest after an allreduce of their lengths) and decodes every rank's;
//! 4. calls [`resolve`] with the records and its copy. An error is the same on every rank that
//!    read the same file, and every rank gets one, so rank 0 can say it once for all.
//!
//! Beside the topology IDs, [`switches`] says which switch each rank hangs on, from the switch
//! topology of `MPICAST_SWITCH_TOPOLOGY` (what the multiple multicasts of `algo::agents` need).

pub mod switches;
pub mod sysfs;

use crate::algo::prefix::{self, IdError, Shape, TopoId, Topology};
use crate::config::rank_list;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// The `MPI_Info` key that gives a rank its topology ID on one communicator. Its value differs
/// between ranks, so it is not one of the hints every rank must share.
pub const INFO_KEY: &str = "mpicast_topo_id";

/// A CPU fact that is not known.
pub const UNKNOWN: u32 = u32::MAX;

/// The longest ID text or host name a [`RankFacts`] record carries; longer ones are marked as
/// cut, and refused by [`resolve`] if it needs them.
pub const MAX_TEXT: usize = 255;

/// The largest encoded [`RankFacts`] record: the fixed part and two texts of [`MAX_TEXT`] bytes.
pub const MAX_RECORD_BYTES: usize = FIXED + 2 * MAX_TEXT;

/// Format version of [`RankFacts::encode`].
pub const RECORD_VERSION: u8 = 1;

/// Where a rank's explicit ID came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdSource {
    /// The `MPI_Info` key [`INFO_KEY`] of the communicator.
    Info,
    /// `MPICAST_TOPO_ID` in the rank's environment.
    Env,
    /// Made from `MPICAST_SWITCH_TOPOLOGY` (`switches::topo_ids`): the path down the up-down
    /// routing tree to the rank's switch, then its place on the switch.
    Switch,
}

impl IdSource {
    /// How messages name the source.
    pub fn name(self) -> &'static str {
        match self {
            IdSource::Info => "MPI_Info key mpicast_topo_id",
            IdSource::Env => "MPICAST_TOPO_ID",
            IdSource::Switch => "MPICAST_SWITCH_TOPOLOGY",
        }
    }
}

/// A rank's ID as given, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explicit {
    pub source: IdSource,
    /// The text as given (surrounding white space is ignored when parsed).
    pub text: String,
}

impl Explicit {
    /// The explicit ID of a rank, first found wins: the info key's value, then the environment's
    /// (`MPICAST_TOPO_ID`, i.e. `Config::topo_id`). Empty or blank values count as not set.
    pub fn first_found(info: Option<&str>, env: Option<&str>) -> Option<Explicit> {
        let given = |v: Option<&str>| v.filter(|t| !t.trim().is_empty()).map(str::to_string);
        if let Some(text) = given(info) {
            return Some(Explicit {
                source: IdSource::Info,
                text,
            });
        }
        given(env).map(|text| Explicit {
            source: IdSource::Env,
            text,
        })
    }

    fn label(&self) -> String {
        format!("{}={}", self.source.name(), self.text.trim())
    }
}

/// Where a rank runs inside its host; [`UNKNOWN`] where the OS did not say ([`sysfs::read`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuFacts {
    /// The logical CPU the rank ran on when asked.
    pub cpu: u32,
    /// `physical_package_id`: the socket.
    pub package: u32,
    /// The NUMA node of the CPU.
    pub node: u32,
    /// `core_id`: the core within the package (hyperthreads of one core share it).
    pub core: u32,
}

impl CpuFacts {
    /// Nothing known.
    pub const UNKNOWN: CpuFacts = CpuFacts {
        cpu: UNKNOWN,
        package: UNKNOWN,
        node: UNKNOWN,
        core: UNKNOWN,
    };

    /// The facts that order ranks on a host, outermost first.
    fn levels(&self) -> [u32; 3] {
        [self.package, self.node, self.core]
    }
}

impl Default for CpuFacts {
    fn default() -> CpuFacts {
        CpuFacts::UNKNOWN
    }
}

/// What a rank found at `MPICAST_TOPO_FILE` ([`FileCopy::fact`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FileFact {
    /// `MPICAST_TOPO_FILE` is not set.
    #[default]
    NotSet,
    /// Read; the digest of its bytes ([`digest`]), so that copies can be compared.
    Read { digest: u64 },
    /// Not readable: the OS error number (`std::io::Error::raw_os_error`, 0 if none).
    Unreadable { os_error: i32 },
}

/// What one rank contributes to the choice of its communicator's topology IDs: everything
/// [`resolve`] needs, gathered from every rank by one allgather of [`RankFacts::encode`]d
/// records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFacts {
    /// The rank's explicit ID, if any ([`Explicit::first_found`]).
    pub explicit: Option<Explicit>,
    /// The host name (`gethostname`), matched against `MPICAST_TOPO_FILE`.
    pub host: String,
    /// The IPv4 address of the interface mpicast uses, as a `u32` (`u32::from(Ipv4Addr)`): ranks
    /// with one address share a host, and hosts are ordered by it.
    pub addr: u32,
    /// The rank's slot on its host, as the launcher numbers its processes there from 0
    /// (Open MPI's `OMPI_COMM_WORLD_LOCAL_RANK`, MPICH's `MPI_LOCALRANKID`): matched against
    /// `HOST:SLOT` lines of the file. [`UNKNOWN`]: [`resolve`] counts the communicator's ranks
    /// on the same host (by name) in rank order instead.
    pub slot: u32,
    /// Where the rank runs inside its host.
    pub cpu: CpuFacts,
    /// `MPICAST_TOPO_BASE` on this rank.
    pub base: u32,
    /// What this rank found at `MPICAST_TOPO_FILE`.
    pub file: FileFact,
    /// Set by [`RankFacts::decode`] when the ID text was longer than [`MAX_TEXT`] and cut.
    pub explicit_cut: bool,
    /// Set by [`RankFacts::decode`] when the host name was longer than [`MAX_TEXT`] and cut.
    pub host_cut: bool,
}

impl Default for RankFacts {
    fn default() -> RankFacts {
        RankFacts {
            explicit: None,
            host: String::new(),
            addr: 0,
            slot: UNKNOWN,
            cpu: CpuFacts::UNKNOWN,
            base: 16,
            file: FileFact::NotSet,
            explicit_cut: false,
            host_cut: false,
        }
    }
}

// Record layout, little-endian (version 1):
//   0  u16 record length in bytes, these two included
//   2  u8  format version
//   3  u8  explicit ID source: 0 none, 1 MPI_Info key, 2 MPICAST_TOPO_ID
//   4  u32 base            8 u32 addr        12 u32 slot
//  16  u32 cpu            20 u32 package     24 u32 node      28 u32 core
//  32  u8  file: 0 not set, 1 read, 2 unreadable
//  33  u8  flags: bit 0 ID text cut, bit 1 host name cut
//  34  u16 zero
//  36  u64 file digest (read) or OS error as i32 in the low half (unreadable)
//  44  u8  ID text length t, then t bytes of UTF-8
//      u8  host name length h, then h bytes of UTF-8
const FIXED: usize = 46;

/// The first at most `max` bytes of `s`, cut on a character boundary, and whether it was cut.
fn clip(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

impl RankFacts {
    /// The record that travels by allgather: self-delimiting (it starts with its length), at most
    /// [`MAX_RECORD_BYTES`]. A fixed-size allgather may pad it with anything to any width;
    /// [`RankFacts::decode`] reads only the length the record declares.
    pub fn encode(&self) -> Vec<u8> {
        let (text, text_cut) = clip(
            self.explicit.as_ref().map_or("", |e| e.text.as_str()),
            MAX_TEXT,
        );
        let (host, host_cut) = clip(&self.host, MAX_TEXT);
        let mut b = Vec::with_capacity(FIXED + text.len() + host.len());
        b.extend_from_slice(&[0, 0, RECORD_VERSION]);
        b.push(match self.explicit.as_ref().map(|e| e.source) {
            None => 0,
            Some(IdSource::Info) => 1,
            Some(IdSource::Env) => 2,
            Some(IdSource::Switch) => 3,
        });
        for v in [
            self.base,
            self.addr,
            self.slot,
            self.cpu.cpu,
            self.cpu.package,
            self.cpu.node,
            self.cpu.core,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let (kind, word) = match self.file {
            FileFact::NotSet => (0u8, 0u64),
            FileFact::Read { digest } => (1, digest),
            FileFact::Unreadable { os_error } => (2, u64::from(os_error as u32)),
        };
        let flags =
            u8::from(text_cut || self.explicit_cut) | u8::from(host_cut || self.host_cut) << 1;
        b.extend_from_slice(&[kind, flags, 0, 0]);
        b.extend_from_slice(&word.to_le_bytes());
        for s in [text, host] {
            b.push(s.len() as u8);
            b.extend_from_slice(s.as_bytes());
        }
        let len = b.len() as u16;
        b[..2].copy_from_slice(&len.to_le_bytes());
        b
    }

    /// Reads a record made by [`RankFacts::encode`]; bytes after its declared length are
    /// ignored (padding).
    pub fn decode(bytes: &[u8]) -> Result<RankFacts, TopoError> {
        let bad = |why: String| TopoError::Record(why);
        if bytes.len() < 3 {
            return Err(bad(format!("{} bytes, too short", bytes.len())));
        }
        if bytes[2] != RECORD_VERSION {
            return Err(bad(format!(
                "format {}, this mpicast reads format {RECORD_VERSION} (do all ranks run the \
                 same mpicast?)",
                bytes[2]
            )));
        }
        let len = usize::from(u16::from_le_bytes([bytes[0], bytes[1]]));
        if len < FIXED || len > bytes.len() {
            return Err(bad(format!(
                "declares {len} bytes, has {} (at least {FIXED} needed)",
                bytes.len()
            )));
        }
        let b = &bytes[..len];
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let mut long = [0u8; 8];
        long.copy_from_slice(&b[36..44]);
        let long = u64::from_le_bytes(long);
        let file = match b[32] {
            0 => FileFact::NotSet,
            1 => FileFact::Read { digest: long },
            2 => FileFact::Unreadable {
                os_error: long as u32 as i32,
            },
            k => return Err(bad(format!("file status {k}"))),
        };
        let mut at = 44;
        let mut text = || -> Result<String, TopoError> {
            let n = usize::from(*b.get(at).ok_or_else(|| bad("cut short".into()))?);
            let s = b
                .get(at + 1..at + 1 + n)
                .ok_or_else(|| bad("cut short".into()))?;
            at += 1 + n;
            String::from_utf8(s.to_vec()).map_err(|_| bad("text not UTF-8".into()))
        };
        let id_text = text()?;
        let host = text()?;
        let explicit = match b[3] {
            0 => None,
            1 => Some(IdSource::Info),
            2 => Some(IdSource::Env),
            3 => Some(IdSource::Switch),
            k => return Err(bad(format!("ID source {k}"))),
        }
        .map(|source| Explicit {
            source,
            text: id_text,
        });
        Ok(RankFacts {
            explicit,
            host,
            addr: word(8),
            slot: word(12),
            cpu: CpuFacts {
                cpu: word(16),
                package: word(20),
                node: word(24),
                core: word(28),
            },
            base: word(4),
            file,
            explicit_cut: b[33] & 1 != 0,
            host_cut: b[33] & 2 != 0,
        })
    }

    /// How messages name the rank's host: its name, or its address if it has none.
    fn host_label(&self) -> String {
        if self.host.is_empty() {
            std::net::Ipv4Addr::from(self.addr).to_string()
        } else {
            self.host.clone()
        }
    }
}

/// The digest of a file's bytes in [`FileFact::Read`]: FNV-1a over the bytes, then the length.
/// It compares copies, it is no protection against anyone.
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in bytes.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Why no topology: every message names the rank and the source where one is to blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopoError {
    /// Rank `rank`'s ID, or what `source` says of it, is refused: "rank 5: MPICAST_TOPO_ID=0x3:
    /// ...". `source` names the variable (or file) and its value.
    AtRank {
        rank: u32,
        source: String,
        error: String,
    },
    /// Two ranks with one ID.
    Duplicate {
        first: u32,
        second: u32,
        id: String,
        source: String,
    },
    /// Ranks whose IDs would come from different sources: (source, ranks), "none" for ranks
    /// without an explicit ID.
    Mixed(Vec<(String, Vec<u32>)>),
    /// The file itself: `name` is how it is named ("MPICAST_TOPO_FILE=/etc/topo"), `line` from
    /// 1 (`None`: the whole file).
    File {
        name: String,
        line: Option<usize>,
        error: String,
    },
    /// A facts record that does not decode.
    Record(String),
    /// Derived IDs that do not fit 64 bits, or no ranks.
    Derive(String),
}

impl fmt::Display for TopoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopoError::AtRank {
                rank,
                source,
                error,
            } => write!(f, "rank {rank}: {source}: {error}"),
            TopoError::Duplicate {
                first,
                second,
                id,
                source,
            } => write!(
                f,
                "ranks {first} and {second} both have topology ID {id} ({source}); IDs must \
                 differ"
            ),
            TopoError::Mixed(groups) => {
                let parts: Vec<String> = groups
                    .iter()
                    .map(|(s, rs)| format!("{s} on {}", rank_list(rs)))
                    .collect();
                write!(
                    f,
                    "topology IDs from mixed sources: {} (give every rank of the communicator \
                     its ID the same way, or none)",
                    parts.join("; ")
                )
            }
            TopoError::File { name, line, error } => match line {
                Some(l) => write!(f, "{name}:{l}: {error}"),
                None => write!(f, "{name}: {error}"),
            },
            TopoError::Record(why) => write!(f, "topology facts record: {why}"),
            TopoError::Derive(why) => write!(f, "topology IDs: {why}"),
        }
    }
}

impl std::error::Error for TopoError {}

/// Parses an ID whose length is its own: as many digits as the text has (dotted decimal digits,
/// or in a base up to 16 without '.', one hex digit per character).
pub fn parse_id(base: u32, text: &str) -> Result<TopoId, IdError> {
    let t = text.trim();
    let digits = if t.contains('.') || base > 16 {
        t.split('.').count()
    } else {
        t.chars().count()
    };
    if t.is_empty() {
        return Err(IdError::Syntax {
            text: text.to_string(),
            why: "empty",
        });
    }
    Shape::new(base, u32::try_from(digits).unwrap_or(u32::MAX))?.parse(t)
}

/// One host (or host and slot) of a [`TopoFile`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The host as written: a name or an IPv4 address.
    pub host: String,
    /// `HOST:SLOT` lines: the slot.
    pub slot: Option<u32>,
    pub id: TopoId,
    /// Its line, from 1.
    pub line: usize,
}

/// A parsed `MPICAST_TOPO_FILE`.
///
/// # Format
///
/// ```text
/// # mpicast topology file: comments from '#' to the end of the line; blank lines are skipped
/// node01      00        # HOST ID: the host's ID
/// node02      01
/// 10.1.0.9    10        # a host may be named by its IPv4 address
/// ```
/// or, a rank's whole ID per line,
/// ```text
/// node01:0    000       # HOST:SLOT ID: the ID of the rank in slot SLOT (from 0) on HOST
/// node01:1    001
/// ```
/// - One entry per line: two fields separated by blanks, `HOST ID` or `HOST:SLOT ID`. A file
///   has slots on every line or on none.
/// - HOST is a host name (letters, digits, '-', '_', '.') or an IPv4 address. A rank's host
///   name matches it exactly (in any letter case), or else by the first label (`node7` and
///   `node7.cluster.example`) when only one entry of the file matches that way; an address
///   matches the rank's interface address.
/// - ID is a topology ID in base `MPICAST_TOPO_BASE`: hex digits in a base up to 16 ("0a3"),
///   or dotted decimal digits ("0.10.3"). Every ID of a file has the same number of digits.
/// - No host (or host and slot) twice, no ID twice.
/// - With `HOST` lines, the ranks of a host get its ID followed by on-host digits (CPU package,
///   NUMA node and core where every rank of the host knows them, then rank order), none when
///   every host holds one rank of the communicator. With `HOST:SLOT` lines, the ID is the rank's.
///   A host of the job, or a slot of a `HOST:SLOT` file, that the file does not list is an
///   error; hosts of the file that the job does not use are fine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopoFile {
    name: String,
    shape: Shape,
    slots: bool,
    entries: Vec<Entry>,
}

/// How the first label of a name compares: "node7" of "node7.cluster.example".
fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

impl TopoFile {
    /// Parses the text of a topology file in base `base`; `name` is how errors name the file
    /// (the library: `MPICAST_TOPO_FILE=<path>`; the command line: the path). Errors name the
    /// line.
    pub fn parse(text: &str, name: &str, base: u32) -> Result<TopoFile, TopoError> {
        let at = |line: Option<usize>, error: String| TopoError::File {
            name: name.to_string(),
            line,
            error,
        };
        if let Err(e) = Shape::new(base, 1) {
            return Err(at(None, e.to_string()));
        }
        let mut entries: Vec<Entry> = Vec::new();
        // The entries by (host in lower case, slot) and by ID value (one shape per file), so
        // that a file of a million lines is checked for repeats in linear time.
        let mut by_host: HashMap<(String, Option<u32>), usize> = HashMap::new();
        let mut by_id: HashMap<u64, usize> = HashMap::new();
        let mut first: Option<(Shape, usize, bool)> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = content.split_whitespace().collect();
            if fields.len() != 2 {
                return Err(at(
                    Some(line),
                    format!(
                        "expected `HOST ID` or `HOST:SLOT ID`, got {} field{}",
                        fields.len(),
                        if fields.len() == 1 { "" } else { "s" }
                    ),
                ));
            }
            let (host, slot) = match fields[0].split_once(':') {
                None => (fields[0], None),
                Some((h, s)) => {
                    let ok = !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
                    let n = s.parse::<u32>().ok().filter(|&n| ok && n != UNKNOWN);
                    match n {
                        Some(n) => (h, Some(n)),
                        None => {
                            return Err(at(
                                Some(line),
                                if s.is_empty() {
                                    format!("`{}` has no slot after ':'", fields[0])
                                } else {
                                    format!("slot `{s}` of `{}` is not a number", fields[0])
                                },
                            ))
                        }
                    }
                }
            };
            if !valid_host(host) {
                return Err(at(
                    Some(line),
                    format!(
                        "`{host}` is not a host name (letters, digits, '-', '_', '.') or an IPv4 \
                         address"
                    ),
                ));
            }
            let id = parse_id(base, fields[1]).map_err(|e| at(Some(line), e.to_string()))?;
            match first {
                None => first = Some((id.shape(), line, slot.is_some())),
                Some((shape, l, with_slots)) => {
                    if id.shape() != shape {
                        return Err(at(
                            Some(line),
                            format!(
                                "ID {} has {} digits, line {l}'s has {} (every ID of the file \
                                 has the same number)",
                                fields[1],
                                id.shape().digits(),
                                shape.digits()
                            ),
                        ));
                    }
                    if with_slots != slot.is_some() {
                        return Err(at(
                            Some(line),
                            format!(
                                "`{}` has {} slot but line {l} has {}: give HOST:SLOT on every \
                                 line or on none",
                                fields[0],
                                if slot.is_some() { "a" } else { "no" },
                                if with_slots { "one" } else { "none" },
                            ),
                        ));
                    }
                }
            }
            if let Some(&i) = by_host.get(&(host.to_ascii_lowercase(), slot)) {
                return Err(at(
                    Some(line),
                    format!("{} is on line {} already", fields[0], entries[i].line),
                ));
            }
            if let Some(&i) = by_id.get(&id.value()) {
                let e = &entries[i];
                let who = match e.slot {
                    Some(s) => format!("{}:{s}", e.host),
                    None => e.host.clone(),
                };
                return Err(at(
                    Some(line),
                    format!("ID {id} is {who}'s already (line {})", e.line),
                ));
            }
            by_host.insert((host.to_ascii_lowercase(), slot), entries.len());
            by_id.insert(id.value(), entries.len());
            entries.push(Entry {
                host: host.to_string(),
                slot,
                id,
                line,
            });
        }
        let Some((shape, _, slots)) = first else {
            return Err(at(
                None,
                "no entries (lines `HOST ID` or `HOST:SLOT ID`)".into(),
            ));
        };
        Ok(TopoFile {
            name: name.to_string(),
            shape,
            slots,
            entries,
        })
    }

    /// How errors name the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Base and length of the file's IDs.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Whether the lines are `HOST:SLOT ID` (rank IDs) rather than `HOST ID` (host IDs).
    pub fn has_slots(&self) -> bool {
        self.slots
    }

    /// The entries, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The file's hosts, indexed for [`HostIndex::host_of`].
    fn host_index(&self) -> HostIndex {
        let mut ix = HostIndex {
            slots: self.slots,
            names: HashSet::new(),
            addrs: HashMap::new(),
            shorts: HashMap::new(),
        };
        for e in &self.entries {
            let h = e.host.to_ascii_lowercase();
            match h.parse::<std::net::Ipv4Addr>() {
                Ok(a) => {
                    ix.addrs.entry(u32::from(a)).or_insert_with(|| h.clone());
                }
                Err(_) => {
                    let same = ix.shorts.entry(short(&h).to_string()).or_default();
                    if !same.iter().any(|(b, _)| *b == h) {
                        same.push((h.clone(), e.line));
                    }
                }
            }
            ix.names.insert(h);
        }
        ix
    }
}

/// The hosts of a [`TopoFile`] by name, by address and by first label (all in lower case), so
/// that the ranks of a communicator find theirs without a scan of the file each.
struct HostIndex {
    slots: bool,
    names: HashSet<String>,
    /// The first host of the file written as each address.
    addrs: HashMap<u32, String>,
    /// The hosts that are names, by their first label, in file order, each with its first line.
    shorts: HashMap<String, Vec<(String, usize)>>,
}

impl HostIndex {
    /// The host (its written name, lower case) of the file that a rank on `host` with address
    /// `addr` runs on, and whether it matched by its first label only.
    fn host_of(&self, host: &str, addr: u32) -> Result<(String, bool), String> {
        if !host.is_empty() {
            let h = host.to_ascii_lowercase();
            if self.names.contains(&h) {
                return Ok((h, false));
            }
        }
        if addr != 0 {
            if let Some(h) = self.addrs.get(&addr) {
                return Ok((h.clone(), false));
            }
        }
        let none = Vec::new();
        let by_short = if !host.is_empty() && host.parse::<std::net::Ipv4Addr>().is_err() {
            self.shorts
                .get(&short(host).to_ascii_lowercase())
                .unwrap_or(&none)
        } else {
            &none
        };
        match by_short.as_slice() {
            [(h, _)] => Ok((h.clone(), true)),
            [] => Err(match self.slots {
                false => format!("host {host} has no ID"),
                true => format!("host {host} has no line"),
            }),
            more => {
                let list: Vec<String> = more
                    .iter()
                    .map(|(h, l)| format!("{h} (line {l})"))
                    .collect();
                Err(format!(
                    "host {host} matches {} by its first label: write its full name in the \
                     file",
                    list.join(" and ")
                ))
            }
        }
    }
}

/// This rank's copy of `MPICAST_TOPO_FILE`: what it read, or why it could not, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCopy {
    name: String,
    fact: FileFact,
    error: Option<String>,
    parsed: Option<Result<TopoFile, TopoError>>,
}

impl FileCopy {
    /// Reads and parses the file at `path` in base `base`; `name` is how errors name it
    /// (`MPICAST_TOPO_FILE=<path>` in the library).
    pub fn read(path: &str, name: &str, base: u32) -> FileCopy {
        match std::fs::read(path) {
            Ok(bytes) => FileCopy::from_bytes(&bytes, name, base),
            Err(e) => FileCopy::unreadable(&e, name),
        }
    }

    /// A copy whose bytes are `bytes`.
    pub fn from_bytes(bytes: &[u8], name: &str, base: u32) -> FileCopy {
        let parsed = match std::str::from_utf8(bytes) {
            Ok(text) => TopoFile::parse(text, name, base),
            Err(e) => {
                let line = 1 + bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|&&c| c == b'\n')
                    .count();
                Err(TopoError::File {
                    name: name.to_string(),
                    line: Some(line),
                    error: "not UTF-8 text".into(),
                })
            }
        };
        FileCopy {
            name: name.to_string(),
            fact: FileFact::Read {
                digest: digest(bytes),
            },
            error: None,
            parsed: Some(parsed),
        }
    }

    /// A copy that could not be read.
    pub fn unreadable(e: &std::io::Error, name: &str) -> FileCopy {
        FileCopy {
            name: name.to_string(),
            fact: FileFact::Unreadable {
                os_error: e.raw_os_error().unwrap_or(0),
            },
            error: Some(e.to_string()),
            parsed: None,
        }
    }

    /// What goes into this rank's [`RankFacts::file`].
    pub fn fact(&self) -> FileFact {
        self.fact
    }

    /// The parsed file, or why not (unreadable, not UTF-8, a bad line).
    pub fn file(&self) -> Result<&TopoFile, TopoError> {
        match &self.parsed {
            Some(Ok(f)) => Ok(f),
            Some(Err(e)) => Err(e.clone()),
            None => Err(TopoError::File {
                name: self.name.clone(),
                line: None,
                error: format!(
                    "cannot read it: {}",
                    self.error.as_deref().unwrap_or("unknown error")
                ),
            }),
        }
    }
}

/// Where a communicator's IDs came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Every rank's [`INFO_KEY`].
    Info,
    /// Every rank's `MPICAST_TOPO_ID`.
    Env,
    /// The switch topology of `MPICAST_SWITCH_TOPOLOGY`.
    Switch,
    /// `MPICAST_TOPO_FILE` (its name in messages).
    File(String),
    /// Derived from hosts and CPU placement.
    Derived,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Info => f.write_str(IdSource::Info.name()),
            Source::Env => f.write_str(IdSource::Env.name()),
            Source::Switch => f.write_str(IdSource::Switch.name()),
            Source::File(name) => f.write_str(name),
            Source::Derived => f.write_str("derived from hosts and CPU placement"),
        }
    }
}

/// A communicator's topology and how it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub topology: Topology,
    pub source: Source,
    /// What the digits say, left to right: (what, how many digits), levels of no digit left
    /// out. "given" for IDs given whole; "file" for a host's ID from the file; "host",
    /// "package", "NUMA node", "core", "rank on host" for derived digits.
    pub layout: Vec<(&'static str, u32)>,
}

/// The names of derived levels after the host.
const ON_HOST: [&str; 4] = ["package", "NUMA node", "core", "rank on host"];

/// The topology IDs of a communicator from every rank's facts (`facts[r]` is rank r's, the
/// same slice on every rank) and this rank's copy of `MPICAST_TOPO_FILE` (`None` when it is
/// not set). Applies the order of sources (see the module documentation) and checks everything
/// it uses. Deterministic: the same facts and the same file contents give the same answer on
/// every rank, so every rank gets the same topology or the same error.
pub fn resolve(facts: &[RankFacts], file: Option<&FileCopy>) -> Result<Resolved, TopoError> {
    let n = facts.len();
    if n == 0 {
        return Err(TopoError::Derive("no ranks".into()));
    }
    let base = facts[0].base;
    if let Err(e) = Shape::new(base, 1) {
        return Err(TopoError::AtRank {
            rank: 0,
            source: format!("MPICAST_TOPO_BASE={base}"),
            error: e.to_string(),
        });
    }
    if let Some((r, f)) = facts.iter().enumerate().find(|(_, f)| f.base != base) {
        return Err(TopoError::AtRank {
            rank: r as u32,
            source: format!("MPICAST_TOPO_BASE={}", f.base),
            error: format!("rank 0 has {base} (every rank must have the same)"),
        });
    }

    // Explicit IDs: every rank or none, and from one source.
    let kind = |f: &RankFacts| f.explicit.as_ref().map(|e| e.source);
    if facts.iter().any(|f| kind(f) != kind(&facts[0])) {
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for (r, f) in facts.iter().enumerate() {
            let label = kind(f).map_or("no ID", IdSource::name).to_string();
            match groups.iter_mut().find(|(l, _)| *l == label) {
                Some((_, rs)) => rs.push(r as u32),
                None => groups.push((label, vec![r as u32])),
            }
        }
        return Err(TopoError::Mixed(groups));
    }
    if let Some(source) = kind(&facts[0]) {
        return explicit(facts, base, source);
    }

    // The file, when set: every rank read the same bytes.
    if facts.iter().any(|f| f.file != FileFact::NotSet) {
        return from_file(facts, file);
    }
    derived(facts, base)
}

fn explicit(facts: &[RankFacts], base: u32, source: IdSource) -> Result<Resolved, TopoError> {
    let text = |r: usize| facts[r].explicit.as_ref().expect("explicit on every rank");
    let mut values = Vec::with_capacity(facts.len());
    let mut shape: Option<Shape> = None;
    for (r, f) in facts.iter().enumerate() {
        let e = text(r);
        let at = |error: String| TopoError::AtRank {
            rank: r as u32,
            source: e.label(),
            error,
        };
        if f.explicit_cut {
            return Err(at(format!("longer than {MAX_TEXT} bytes")));
        }
        let id = parse_id(base, &e.text).map_err(|err| at(err.to_string()))?;
        match shape {
            None => shape = Some(id.shape()),
            Some(s) if s != id.shape() => {
                return Err(at(format!(
                    "{} digits, but rank 0's ID ({}) has {} (every ID of a communicator has \
                     the same number of digits)",
                    id.shape().digits(),
                    text(0).label(),
                    s.digits()
                )))
            }
            Some(_) => {}
        }
        values.push(id.value());
    }
    let shape = shape.expect("at least one rank");
    let topology = Topology::new(shape, values).map_err(|e| match e {
        IdError::Duplicate { first, second, id } => TopoError::Duplicate {
            first,
            second,
            id,
            source: format!("{} on both", source.name()),
        },
        other => TopoError::Derive(other.to_string()),
    })?;
    Ok(Resolved {
        topology,
        source: match source {
            IdSource::Info => Source::Info,
            IdSource::Env => Source::Env,
            IdSource::Switch => Source::Switch,
        },
        layout: vec![("given", shape.digits())],
    })
}

fn from_file(facts: &[RankFacts], file: Option<&FileCopy>) -> Result<Resolved, TopoError> {
    let name = file.map_or("MPICAST_TOPO_FILE", |c| c.name.as_str());
    let at = |rank: usize, error: String| TopoError::AtRank {
        rank: rank as u32,
        source: name.to_string(),
        error,
    };
    // Every rank read it...
    for (r, f) in facts.iter().enumerate() {
        match f.file {
            FileFact::NotSet => {
                return Err(at(
                    r,
                    format!(
                        "not set on {}, set on rank {}",
                        f.host_label(),
                        facts
                            .iter()
                            .position(|g| g.file != FileFact::NotSet)
                            .unwrap_or(0)
                    ),
                ))
            }
            FileFact::Unreadable { os_error } => {
                let why = if os_error == 0 {
                    "unknown error".to_string()
                } else {
                    std::io::Error::from_raw_os_error(os_error).to_string()
                };
                return Err(at(
                    r,
                    format!("cannot read it on {}: {why}", f.host_label()),
                ));
            }
            FileFact::Read { .. } => {}
        }
    }
    // ...the same bytes...
    if let Some((r, f)) = facts
        .iter()
        .enumerate()
        .find(|(_, f)| f.file != facts[0].file)
    {
        return Err(at(
            r,
            format!(
                "the copy on {} differs from rank 0's on {} (every rank must read the same \
                 file)",
                f.host_label(),
                facts[0].host_label()
            ),
        ));
    }
    // ...which parses.
    let copy = file.ok_or_else(|| at(0, "no copy of the file was passed".into()))?;
    let tf = copy.file()?;
    let base = facts[0].base;
    if tf.shape.base() != base {
        return Err(TopoError::File {
            name: name.to_string(),
            line: None,
            error: format!(
                "parsed in base {}, the ranks have MPICAST_TOPO_BASE={base}",
                tf.shape.base()
            ),
        });
    }

    // The file's host of each rank; one file host is one host of the job.
    let index = tf.host_index();
    let mut host_of: Vec<String> = Vec::with_capacity(facts.len());
    // file host -> (rank host, rank)
    let mut matched_by: HashMap<String, (String, usize)> = HashMap::new();
    for (r, f) in facts.iter().enumerate() {
        if f.host_cut {
            return Err(at(
                r,
                format!("host name longer than {MAX_TEXT} bytes on rank {r}"),
            ));
        }
        let (h, by_short) = index.host_of(&f.host, f.addr).map_err(|e| at(r, e))?;
        if by_short {
            let mine = f.host.to_ascii_lowercase();
            match matched_by.entry(h.clone()) {
                Slot::Occupied(o) if o.get().0 != mine => {
                    let (other, o) = o.get();
                    return Err(at(
                        r,
                        format!(
                            "host {} and rank {o}'s host {other} both match {h} of the file by \
                             their first label: write the full names in the file",
                            f.host
                        ),
                    ));
                }
                Slot::Occupied(_) => {}
                Slot::Vacant(v) => {
                    v.insert((mine, r));
                }
            }
        }
        host_of.push(h);
    }

    let shape = tf.shape;
    if tf.slots {
        let slots = slots_of(facts);
        // (host in lower case, slot) -> ID, the first line of each (the file has no repeats).
        let mut ids: HashMap<(String, u32), u64> = HashMap::new();
        for e in &tf.entries {
            if let Some(slot) = e.slot {
                ids.entry((e.host.to_ascii_lowercase(), slot))
                    .or_insert(e.id.value());
            }
        }
        let mut values = Vec::with_capacity(facts.len());
        for (r, (h, &slot)) in host_of.iter().zip(&slots).enumerate() {
            match ids.get(&(h.to_ascii_lowercase(), slot)) {
                Some(&v) => values.push(v),
                None => {
                    let mut have: Vec<u32> = tf
                        .entries
                        .iter()
                        .filter(|e| e.host.eq_ignore_ascii_case(h))
                        .filter_map(|e| e.slot)
                        .collect();
                    have.sort_unstable();
                    let list = rank_list(&have);
                    let list = list.split_once(' ').map_or("", |(_, l)| l);
                    return Err(at(
                        r,
                        format!(
                            "host {} slot {slot} has no ID (the file gives {h} slot{} {list})",
                            facts[r].host_label(),
                            if have.len() == 1 { "" } else { "s" }
                        ),
                    ));
                }
            }
        }
        let topology = Topology::new(shape, values).map_err(|e| file_dup(e, name))?;
        return Ok(Resolved {
            topology,
            source: Source::File(name.to_string()),
            layout: vec![("given", shape.digits())],
        });
    }

    // Host IDs, then on-host digits.
    let mut keys: Vec<&str> = host_of.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    let group: Vec<u32> = host_of
        .iter()
        .map(|h| keys.binary_search(&h.as_str()).expect("listed") as u32)
        .collect();
    let on_host = on_host_levels(&group, facts);
    let bits = shape.bits();
    let widths = level_widths(&on_host, bits);
    let extra: u32 = widths.iter().sum();
    // Host in lower case -> its ID, the first line of each.
    let mut host_ids: HashMap<String, u64> = HashMap::new();
    for e in &tf.entries {
        host_ids
            .entry(e.host.to_ascii_lowercase())
            .or_insert(e.id.value());
    }
    let total = Shape::new(base, shape.digits() + extra).map_err(|_| {
        TopoError::Derive(format!(
            "the file's IDs of {} digits and {extra} on-host digits do not fit 64 bits in base \
             {base}",
            shape.digits()
        ))
    })?;
    let values = (0..facts.len())
        .map(|r| {
            let host_id = host_ids[&host_of[r].to_ascii_lowercase()];
            concat(host_id, &on_host[r], &widths, bits)
        })
        .collect();
    let topology = Topology::new(total, values).map_err(|e| file_dup(e, name))?;
    let mut layout = vec![("file", shape.digits())];
    layout.extend(named(&ON_HOST, &widths));
    Ok(Resolved {
        topology,
        source: Source::File(name.to_string()),
        layout,
    })
}

fn file_dup(e: IdError, name: &str) -> TopoError {
    match e {
        IdError::Duplicate { first, second, id } => TopoError::Duplicate {
            first,
            second,
            id,
            source: format!("{name} gives both the same entry"),
        },
        other => TopoError::Derive(other.to_string()),
    }
}

fn derived(facts: &[RankFacts], base: u32) -> Result<Resolved, TopoError> {
    let addrs: Vec<u32> = facts.iter().map(|f| f.addr).collect();
    let host = prefix::host_index_by_address(&addrs);
    let on_host = on_host_levels(&host, facts);
    let bits = Shape::new(base, 1).expect("checked").bits();
    let levels: Vec<[u32; 5]> = host
        .iter()
        .zip(&on_host)
        .map(|(&h, l)| [h, l[0], l[1], l[2], l[3]])
        .collect();
    let topology = prefix::derive(base, &levels).map_err(|e| {
        TopoError::Derive(format!(
            "derived from hosts and CPU placement: {e} (set MPICAST_TOPO_BASE lower, or give \
             IDs)"
        ))
    })?;
    let host_width = digits_for(host.iter().copied().max().unwrap_or(0), bits);
    let widths = level_widths(&on_host, bits);
    let mut layout = Vec::new();
    if host_width > 0 {
        layout.push(("host", host_width));
    }
    layout.extend(named(&ON_HOST, &widths));
    if layout.is_empty() {
        // One rank: derive gives it one digit.
        layout.push(("rank on host", topology.shape().digits()));
    }
    Ok(Resolved {
        topology,
        source: Source::Derived,
        layout,
    })
}

/// Each rank's slot on its host: the launcher's if every rank knows it, else its position among
/// the communicator's ranks with the same host name, in rank order.
fn slots_of(facts: &[RankFacts]) -> Vec<u32> {
    if facts.iter().all(|f| f.slot != UNKNOWN) {
        return facts.iter().map(|f| f.slot).collect();
    }
    let mut seen: HashMap<String, u32> = HashMap::new();
    facts
        .iter()
        .map(|f| match seen.entry(f.host.to_ascii_lowercase()) {
            Slot::Occupied(mut k) => {
                *k.get_mut() += 1;
                *k.get()
            }
            Slot::Vacant(v) => *v.insert(0),
        })
        .collect()
}

/// The on-host levels of every rank: [package, NUMA node, core, rank on host], each a dense
/// index among the ranks of the same group (host) that agree on the levels before it. A host
/// uses the CPU levels up to the first that some rank of it does not know; the last level
/// numbers the ranks that agree on all of them, in rank order. A host holding one rank gets
/// zeros, so it needs no on-host digit.
fn on_host_levels(group: &[u32], facts: &[RankFacts]) -> Vec<[u32; 4]> {
    let n = group.len();
    let groups = group.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut depth = vec![3usize; groups];
    for (r, f) in facts.iter().enumerate() {
        let known = f.cpu.levels().iter().take_while(|&&v| v != UNKNOWN).count();
        let d = &mut depth[group[r] as usize];
        *d = (*d).min(known);
    }
    let masked: Vec<[u32; 3]> = (0..n)
        .map(|r| {
            let mut l = facts[r].cpu.levels();
            for v in l.iter_mut().skip(depth[group[r] as usize]) {
                *v = 0;
            }
            l
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&r| (group[r], masked[r], r));
    let mut out = vec![[0u32; 4]; n];
    for w in order.windows(2) {
        let (a, b) = (w[0], w[1]);
        if group[a] != group[b] {
            continue;
        }
        let mut next = out[a];
        match (0..3).find(|&k| masked[a][k] != masked[b][k]) {
            Some(k) => {
                next[k] += 1;
                for v in next.iter_mut().skip(k + 1) {
                    *v = 0;
                }
            }
            None => next[3] += 1,
        }
        out[b] = next;
    }
    out
}

/// Digits of `bits` bits that hold values up to `max` (0 for max = 0), as `prefix::derive`
/// counts them.
fn digits_for(max: u32, bits: u32) -> u32 {
    (32 - max.leading_zeros()).div_ceil(bits)
}

fn level_widths(levels: &[[u32; 4]], bits: u32) -> [u32; 4] {
    let mut w = [0u32; 4];
    for (k, wk) in w.iter_mut().enumerate() {
        *wk = digits_for(levels.iter().map(|l| l[k]).max().unwrap_or(0), bits);
    }
    w
}

fn named(names: &[&'static str; 4], widths: &[u32; 4]) -> Vec<(&'static str, u32)> {
    names
        .iter()
        .zip(widths)
        .filter(|(_, &w)| w > 0)
        .map(|(&n, &w)| (n, w))
        .collect()
}

/// `head` followed by the levels, each in its width of digits.
fn concat(head: u64, levels: &[u32; 4], widths: &[u32; 4], bits: u32) -> u64 {
    levels.iter().zip(widths).fold(head, |v, (&l, &w)| {
        let s = w * bits;
        (if s >= 64 { 0 } else { v << s }) | u64::from(l)
    })
}

#[cfg(test)]
mod tests;
