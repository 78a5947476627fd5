//! GOAL, the Group Operation Assembly Language (Hoefler, Siebert, Lumsdaine, 2009), as text,
//! binary and graph: the paper's textual dialect (`paper`), the dialect LogGOPSim's txt2bin and
//! schedule generators read and write (`lgs`), validation across all ranks of a program
//! (`validate`), the versioned binary schedule (`binary`), printers (`print`, `dot`) and the
//! generators that emit the same IR (`gen`; `gen_mmcast` for the multiple multicasts of
//! `algo::agents`). `replay` (tests only) runs a program with real bytes. Pure code: no MPI, no
//! sockets, no clocks. Running a program is the executor's business (`sched::Execution` with a
//! transport backend).
//!
//! A `Program` is one `sched::Schedule` per rank plus what text needs to come back: labels,
//! LogGOPSim's cpu/nic placement hints, and the names of the buffers that offsets refer to.
//! Source locations live apart, in a `SourceMap`, so that programs compare equal whatever
//! text they came from.

pub mod binary;
pub mod dot;
pub mod gen;
pub mod gen_mmcast;
pub mod lgs;
pub mod lgsbin;
pub mod paper;
pub mod print;
pub mod validate;

use crate::sched::{ActionId, Schedule};
use std::fmt;

#[cfg(test)]
pub(crate) mod replay;
#[cfg(test)]
mod tests;

/// The name of slot 0, the buffer that un-named buffer references (`503,1`) point into.
pub const DEFAULT_BUFFER: &str = "buf";
/// The largest group a text program may describe (a sanity bound: every rank costs memory
/// even when it has nothing to do).
pub const MAX_RANKS: u32 = 1 << 24;

/// The reserved name of `sched::SCRATCH_SLOT` in text (`scratch+0,8`).
pub const SCRATCH_BUFFER: &str = "scratch";

/// Which textual dialect a program was written in (and prints back to by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Seed 004's Fig. 1 with `rank #i { }` blocks and mpicast's extensions.
    Paper,
    /// LogGOPSim's txt2bin input: `num_ranks`, `rank N {`, `l1: send 8b to 1 tag 0`.
    LogGopSim,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Paper => "paper",
            Dialect::LogGopSim => "loggopsim",
        }
    }
}

/// LogGOPSim's placement of an action on a simulated CPU and NIC; mpicast keeps it so files
/// round-trip, and ignores it when running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hint {
    pub cpu: u8,
    pub nic: u8,
}

/// One rank's schedule with what text needs besides the DAG. `labels` and `hints` have one
/// entry per action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankProgram {
    pub schedule: Schedule,
    pub labels: Vec<Option<String>>,
    pub hints: Vec<Hint>,
}

impl RankProgram {
    /// A rank without labels or hints (what generators produce).
    pub fn bare(schedule: Schedule) -> Self {
        let n = schedule.len();
        RankProgram {
            schedule,
            labels: vec![None; n],
            hints: vec![Hint::default(); n],
        }
    }

    pub fn label(&self, id: ActionId) -> Option<&str> {
        self.labels.get(id as usize).and_then(|l| l.as_deref())
    }
}

/// A GOAL program: the schedule of every rank of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub dialect: Dialect,
    /// The paper's EBNF without `rank` blocks describes one process on its own (the local
    /// view); such a program has one rank and no cross-rank checks.
    pub local_view: bool,
    /// Names of the buffer slots: `buffers[0]` is `DEFAULT_BUFFER`, the others are bound by
    /// name at run time. `SCRATCH_SLOT` is not listed.
    pub buffers: Vec<String>,
    /// One entry per rank, `ranks.len()` is the group size.
    pub ranks: Vec<RankProgram>,
}

impl Program {
    /// A program whose ranks are `schedules` (rank i runs `schedules[i]`), on the default
    /// buffer plus `extra_buffers`.
    pub fn from_schedules(schedules: Vec<Schedule>, extra_buffers: &[&str]) -> Self {
        let mut buffers = vec![DEFAULT_BUFFER.to_string()];
        buffers.extend(extra_buffers.iter().map(|s| s.to_string()));
        Program {
            dialect: Dialect::Paper,
            local_view: false,
            buffers,
            ranks: schedules.into_iter().map(RankProgram::bare).collect(),
        }
    }

    pub fn num_ranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Total number of actions over all ranks.
    pub fn action_count(&self) -> usize {
        self.ranks.iter().map(|r| r.schedule.len()).sum()
    }

    /// The slot of a buffer name (`SCRATCH_SLOT` for `scratch`).
    pub fn slot_of(&self, name: &str) -> Option<u16> {
        if name == SCRATCH_BUFFER {
            return Some(crate::sched::SCRATCH_SLOT);
        }
        self.buffers
            .iter()
            .position(|b| b == name)
            .and_then(|i| u16::try_from(i).ok())
    }

    /// The name of a slot.
    pub fn buffer_name(&self, slot: u16) -> &str {
        if slot == crate::sched::SCRATCH_SLOT {
            return SCRATCH_BUFFER;
        }
        self.buffers
            .get(slot as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// A position in a source file, 1-based; line 0 means "no source" (generated or loaded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

impl Loc {
    pub const NONE: Loc = Loc { line: 0, col: 0 };
}

/// Where each action and dependency of a parsed program was written, for diagnostics.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// Per rank, per action.
    pub actions: Vec<Vec<Loc>>,
    /// Per rank: (first, then, where the dependency was written).
    pub edges: Vec<Vec<(ActionId, ActionId, Loc)>>,
}

impl SourceMap {
    pub fn action(&self, rank: u32, id: ActionId) -> Loc {
        self.actions
            .get(rank as usize)
            .and_then(|a| a.get(id as usize))
            .copied()
            .unwrap_or(Loc::NONE)
    }

    /// Where `then` was made to wait for `first`, or where `then` was written.
    pub fn edge(&self, rank: u32, first: ActionId, then: ActionId) -> Loc {
        self.edges
            .get(rank as usize)
            .and_then(|e| e.iter().find(|&&(f, t, _)| f == first && t == then))
            .map(|&(_, _, l)| l)
            .unwrap_or_else(|| self.action(rank, then))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// An error or warning about a program, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub loc: Loc,
    /// The rank the finding is about, when it is about one.
    pub rank: Option<u32>,
    pub message: String,
}

impl Diagnostic {
    pub fn error(loc: Loc, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            loc,
            rank: None,
            message: message.into(),
        }
    }

    pub fn warning(loc: Loc, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            loc,
            rank: None,
            message: message.into(),
        }
    }

    pub fn on_rank(mut self, rank: u32) -> Self {
        self.rank = Some(rank);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col: error: message` (the compiler convention editors understand).
    pub fn render(&self, file: &str) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let rank = match self.rank {
            Some(r) => format!(" (rank {r})"),
            None => String::new(),
        };
        if self.loc.line == 0 {
            format!("{file}: {sev}{rank}: {}", self.message)
        } else {
            format!(
                "{file}:{}:{}: {sev}{rank}: {}",
                self.loc.line, self.loc.col, self.message
            )
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render("<input>"))
    }
}

/// A parsed program with where things were written and what the parser warned about.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub program: Program,
    pub source: SourceMap,
    pub warnings: Vec<Diagnostic>,
}

/// Parses text in either dialect. The first words decide which one is tried first (LogGOPSim
/// when the file opens with `num_ranks N` without `;` or `rank N {` without `#`); when it
/// fails the other is tried, and if both fail the error that got further into the file is
/// reported (the guessed dialect's on a tie).
pub fn parse_any(src: &[u8]) -> Result<Parsed, Diagnostic> {
    let first = guess_dialect(src).unwrap_or(Dialect::Paper);
    let second = match first {
        Dialect::Paper => Dialect::LogGopSim,
        Dialect::LogGopSim => Dialect::Paper,
    };
    match parse(src, first) {
        Ok(p) => Ok(p),
        Err(e1) => match parse(src, second) {
            Ok(p) => Ok(p),
            Err(e2) => Err(if e2.loc > e1.loc { e2 } else { e1 }),
        },
    }
}

/// Parses text in the given dialect.
pub fn parse(src: &[u8], dialect: Dialect) -> Result<Parsed, Diagnostic> {
    match dialect {
        Dialect::Paper => paper::parse(src),
        Dialect::LogGopSim => lgs::parse(src),
    }
}

/// A cheap look at the first words; `None` when they do not decide.
pub fn guess_dialect(src: &[u8]) -> Option<Dialect> {
    let mut i = 0;
    // Skip blank space and comments of both dialects.
    loop {
        while i < src.len() && src[i].is_ascii_whitespace() {
            i += 1;
        }
        if src[i..].starts_with(b"//") || src[i..].starts_with(b"#") {
            while i < src.len() && src[i] != b'\n' {
                i += 1;
            }
        } else if src[i..].starts_with(b"/*") {
            let p = src[i + 2..].windows(2).position(|w| w == b"*/")?;
            i += p + 4;
        } else {
            break;
        }
    }
    let rest = &src[i..];
    let word_end = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(rest.len());
    let word = &rest[..word_end];
    let after: Vec<u8> = rest[word_end..]
        .iter()
        .copied()
        .skip_while(|c| *c == b' ' || *c == b'\t')
        .take_while(|c| *c != b'\n')
        .collect();
    match word {
        b"num_ranks" => Some(if after.contains(&b';') {
            Dialect::Paper
        } else {
            Dialect::LogGopSim
        }),
        b"rank" => Some(if after.first() == Some(&b'#') {
            Dialect::Paper
        } else {
            Dialect::LogGopSim
        }),
        _ => None,
    }
}
