//! The binary GOAL schedule, in the spirit of the GOAL paper's Sec. III-C: per rank, the independent
//! actions listed first (as byte offsets), then every action with its sources counter, its
//! operation and the offsets of its dependents. Versioned behind a magic header; all integers
//! little-endian. The layout (docs/goal.md has the table):
//!
//! ```text
//! file     := magic[8] version:u16 flags:u16 num_ranks:u32 num_buffers:u32
//!             { name_len:u32 name } * num_buffers
//!             { offset:u64 length:u64 } * num_ranks        # rank table, from file start
//!             rank_section * num_ranks
//! section  := num_actions:u32 num_independent:u32 offset:u32 * num_independent  action *
//! action   := sources:u32 type:u16 params
//!             num_dependents:u32 offset:u32 *  num_start_dependents:u32 offset:u32 *
//!             cpu:u8 nic:u8 label_len:u32 label
//! ```
//!
//! Offsets inside a section count from the section's first byte and point at an action's
//! `sources` field. `load` never panics and never trusts a count: every length is checked
//! against the bytes that remain, every offset must hit an action, every counter must equal
//! the edges that point at it, and the graph is rebuilt through `sched::Builder`, so a loaded
//! program is exactly as valid as a parsed one.

use super::paper::is_keyword;
use super::{Dialect, Hint, Program, RankProgram, DEFAULT_BUFFER, MAX_RANKS};
use crate::sched::func::{Dtype, Func, Opcode, Predef};
use crate::sched::{ActionId, BufRef, Builder, Op, SCRATCH_SLOT};
use std::fmt;

/// The first bytes of a binary schedule. The `\r\n` and `\x1a` catch text-mode mangling.
pub const MAGIC: [u8; 8] = *b"\x7fGOAL\r\n\x1a";
/// The version this code writes and reads.
pub const VERSION: u16 = 1;

const FLAG_LOCAL_VIEW: u16 = 1;
const FLAG_LOGGOPSIM: u16 = 2;

const T_SEND: u16 = 1;
const T_RECV: u16 = 2;
const T_MCAST: u16 = 3;
const T_MRECV: u16 = 4;
const T_EXEC: u16 = 5;
const T_CALC: u16 = 6;

/// Why bytes are not a schedule: what was wrong and at which byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for LoadError {}

/// Writes `p` as a binary schedule. Fails only for a rank whose section would pass 4 GiB, the
/// reach of the format's 32-bit action offsets.
pub fn assemble(p: &Program) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    put16(&mut out, VERSION);
    let mut flags = 0;
    if p.local_view {
        flags |= FLAG_LOCAL_VIEW;
    }
    if p.dialect == Dialect::LogGopSim {
        flags |= FLAG_LOGGOPSIM;
    }
    put16(&mut out, flags);
    put32(&mut out, p.ranks.len() as u32);
    put32(&mut out, p.buffers.len() as u32);
    for b in &p.buffers {
        put32(&mut out, b.len() as u32);
        out.extend_from_slice(b.as_bytes());
    }
    let table = out.len();
    out.resize(table + 16 * p.ranks.len(), 0);
    for (i, r) in p.ranks.iter().enumerate() {
        let start = out.len();
        section(&mut out, r);
        let len = out.len() - start;
        if len > u32::MAX as usize {
            return Err(format!(
                "rank {i}'s schedule takes {len} bytes, more than the 4 GiB a section can address"
            ));
        }
        let at = table + 16 * i;
        out[at..at + 8].copy_from_slice(&(start as u64).to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&(len as u64).to_le_bytes());
    }
    Ok(out)
}

fn put16(o: &mut Vec<u8>, v: u16) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put32(o: &mut Vec<u8>, v: u32) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put64(o: &mut Vec<u8>, v: u64) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put_buf(o: &mut Vec<u8>, b: &BufRef) {
    put16(o, b.slot);
    put64(o, b.offset as u64);
    put64(o, b.len as u64);
}

fn params(o: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Send { peer, tag, buf } | Op::Recv { peer, tag, buf } => {
            put16(
                o,
                if matches!(op, Op::Send { .. }) {
                    T_SEND
                } else {
                    T_RECV
                },
            );
            put32(o, *peer);
            put32(o, *tag);
            put_buf(o, buf);
        }
        Op::McastSend { buf } => {
            put16(o, T_MCAST);
            put_buf(o, buf);
        }
        Op::McastRecv { root, buf } => {
            put16(o, T_MRECV);
            put32(o, *root);
            put_buf(o, buf);
        }
        Op::Exec { func, src, dst } => {
            put16(o, T_EXEC);
            match func {
                Func::Predef(p) => {
                    o.push(0);
                    o.push(p.op() as u8);
                    o.push(p.ty() as u8);
                }
                Func::User(n) => {
                    o.push(1);
                    put16(o, *n);
                }
            }
            put_buf(o, src);
            put_buf(o, dst);
        }
        Op::Calc { nanos } => {
            put16(o, T_CALC);
            put64(o, *nanos);
        }
    }
}

fn section(out: &mut Vec<u8>, r: &RankProgram) {
    let s = &r.schedule;
    let base = out.len();
    // Action sizes do not depend on offsets, so lay out the actions once to learn where each
    // starts, then write them for real.
    let header = 8 + 4 * s.initially_ready().count();
    let mut starts = Vec::with_capacity(s.len());
    let mut scratch = Vec::new();
    let mut at = header;
    for (id, op) in s.actions() {
        starts.push(at as u32);
        scratch.clear();
        action(&mut scratch, r, id, op, &[]);
        at += scratch.len();
    }
    put32(out, s.len() as u32);
    put32(out, s.initially_ready().count() as u32);
    for id in s.initially_ready() {
        put32(out, starts[id as usize]);
    }
    for (id, op) in s.actions() {
        debug_assert_eq!(out.len() - base, starts[id as usize] as usize);
        action(out, r, id, op, &starts);
    }
}

fn action(o: &mut Vec<u8>, r: &RankProgram, id: ActionId, op: &Op, starts: &[u32]) {
    let s = &r.schedule;
    put32(o, s.prerequisites(id) as u32);
    params(o, op);
    let off = |d: ActionId| starts.get(d as usize).copied().unwrap_or(0);
    put32(o, s.dependents(id).len() as u32);
    for &d in s.dependents(id) {
        put32(o, off(d));
    }
    put32(o, s.start_dependents(id).len() as u32);
    for &d in s.start_dependents(id) {
        put32(o, off(d));
    }
    let h = r.hints[id as usize];
    o.push(h.cpu);
    o.push(h.nic);
    let label = r.labels[id as usize].as_deref().unwrap_or("");
    put32(o, label.len() as u32);
    o.extend_from_slice(label.as_bytes());
}

/// A bounds-checked reader over a byte range.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    /// Added to `pos` in error messages (a section's place in the file).
    base: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, msg: impl Into<String>) -> LoadError {
        LoadError {
            offset: self.base + self.pos,
            message: msg.into(),
        }
    }
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], LoadError> {
        if self.b.len() - self.pos < n {
            return Err(self.err(format!(
                "{what}: needs {n} bytes, {} remain",
                self.b.len() - self.pos
            )));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, LoadError> {
        Ok(self.bytes(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, LoadError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, LoadError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, LoadError> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A count of items of at least `item` bytes each: refused when the bytes left could not
    /// hold them, so a forged count cannot make us allocate.
    fn count(&mut self, item: usize, what: &str) -> Result<usize, LoadError> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        if n.saturating_mul(item) > self.b.len() - self.pos {
            return Err(LoadError {
                offset: self.base + at,
                message: format!(
                    "{what} {n} cannot fit in the {} bytes left",
                    self.b.len() - self.pos
                ),
            });
        }
        Ok(n)
    }
    fn usize64(&mut self, what: &str) -> Result<usize, LoadError> {
        let at = self.pos;
        let v = self.u64(what)?;
        usize::try_from(v).map_err(|_| LoadError {
            offset: self.base + at,
            message: format!("{what} {v} does not fit in this machine's address space"),
        })
    }
}

fn valid_ident(s: &str) -> bool {
    let mut c = s.bytes();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Reads a binary schedule. Never panics; every defect is an error naming its byte.
/// The file's header: flags, buffer names and the rank table, checked.
struct Header {
    flags: u16,
    local_view: bool,
    buffers: Vec<String>,
    table: Vec<(usize, usize)>,
}

fn read_header(bytes: &[u8]) -> Result<Header, LoadError> {
    let mut r = Reader {
        b: bytes,
        pos: 0,
        base: 0,
    };
    let magic = r.bytes(8, "magic")?;
    if magic != MAGIC {
        return Err(LoadError {
            offset: 0,
            message: "not a binary GOAL schedule (bad magic)".into(),
        });
    }
    let version = r.u16("version")?;
    if version != VERSION {
        return Err(LoadError {
            offset: 8,
            message: format!("format version {version}; this mpicast reads version {VERSION}"),
        });
    }
    let flags = r.u16("flags")?;
    if flags & !(FLAG_LOCAL_VIEW | FLAG_LOGGOPSIM) != 0 {
        return Err(LoadError {
            offset: 10,
            message: format!("unknown flags {flags:#06x}"),
        });
    }
    let num_ranks = r.count(16, "number of ranks")?;
    let local_view = flags & FLAG_LOCAL_VIEW != 0;
    if local_view && num_ranks != 1 {
        return Err(r.err("a local-view program has exactly one rank"));
    }
    if num_ranks == 0 || num_ranks > MAX_RANKS as usize {
        return Err(r.err(format!("{num_ranks} ranks: a program has 1 to {MAX_RANKS}")));
    }
    let num_buffers = r.count(2, "number of buffers")?;
    let mut buffers = Vec::with_capacity(num_buffers);
    for i in 0..num_buffers {
        let at = r.pos;
        let len = r.u32("buffer name length")? as usize;
        let name = r.bytes(len, "buffer name")?;
        let name = std::str::from_utf8(name)
            .ok()
            .filter(|n| valid_ident(n) && (i == 0 || !is_keyword(n)))
            .ok_or_else(|| LoadError {
                offset: at,
                message: "buffer name is not an identifier".into(),
            })?;
        if (i == 0) != (name == DEFAULT_BUFFER) || buffers.iter().any(|b| b == name) {
            return Err(LoadError {
                offset: at,
                message: format!(
                    "buffer `{name}` out of place (slot 0 is `{DEFAULT_BUFFER}`, names are unique)"
                ),
            });
        }
        buffers.push(name.to_string());
    }
    if buffers.is_empty() {
        return Err(r.err(format!("no buffers: slot 0 must be `{DEFAULT_BUFFER}`")));
    }
    let mut table = Vec::with_capacity(num_ranks);
    for _ in 0..num_ranks {
        let at = r.pos;
        let off = r.usize64("rank offset")?;
        let len = r.usize64("rank length")?;
        match off.checked_add(len) {
            Some(end) if end <= bytes.len() && off >= r.pos => table.push((off, len)),
            _ => {
                return Err(LoadError {
                    offset: at,
                    message: format!("rank section {off}+{len} lies outside the file"),
                })
            }
        }
    }
    Ok(Header {
        flags,
        local_view,
        buffers,
        table,
    })
}

pub fn load(bytes: &[u8]) -> Result<Program, LoadError> {
    let mut ranks = Vec::new();
    let mut p = load_each(bytes, |_, rp| {
        ranks.push(rp);
        Ok(())
    })?;
    p.ranks = ranks;
    Ok(p)
}

/// `load` one rank at a time: `each` gets every rank's program in order and may drop it (the
/// simulator at a million ranks keeps only its own form). Returns the program without its
/// ranks. An error of `each` stops the walk and comes back at the offset of that rank.
pub fn load_each(
    bytes: &[u8],
    mut each: impl FnMut(u32, RankProgram) -> Result<(), String>,
) -> Result<Program, LoadError> {
    let Header {
        flags,
        local_view,
        buffers,
        table,
    } = read_header(bytes)?;
    for (rank, &(off, len)) in table.iter().enumerate() {
        let mut sr = Reader {
            b: &bytes[off..off + len],
            pos: 0,
            base: off,
        };
        let rp = load_section(&mut sr, buffers.len()).map_err(|mut e| {
            e.message = format!("rank {rank}: {}", e.message);
            e
        })?;
        if sr.pos != len {
            return Err(sr.err(format!(
                "rank {rank}: {} bytes after the last action",
                len - sr.pos
            )));
        }
        if rank == 0 && local_view && rp.schedule.is_empty() {
            return Err(LoadError {
                offset: table[0].0,
                message: "a local-view program needs at least one action".into(),
            });
        }
        each(rank as u32, rp).map_err(|message| LoadError {
            offset: off,
            message,
        })?;
    }
    Ok(Program {
        dialect: if flags & FLAG_LOGGOPSIM != 0 {
            Dialect::LogGopSim
        } else {
            Dialect::Paper
        },
        local_view,
        buffers,
        ranks: Vec::new(),
    })
}

/// The smallest encoded action: counter, type, two empty lists, hints, empty label.
const MIN_ACTION: usize = 4 + 2 + 8 + 4 + 4 + 2 + 4;

struct RawAction {
    at: usize,
    sources: u32,
    op: Op,
    deps: Vec<(usize, u32)>,
    sdeps: Vec<(usize, u32)>,
    hint: Hint,
    label: Option<String>,
}

fn load_section(r: &mut Reader, num_buffers: usize) -> Result<RankProgram, LoadError> {
    let n = r.count(MIN_ACTION, "number of actions")?;
    let ni = r.count(4, "number of independent actions")?;
    let mut independent = Vec::with_capacity(ni);
    for _ in 0..ni {
        let at = r.pos;
        independent.push((at, r.u32("independent action offset")?));
    }
    let mut raw = Vec::with_capacity(n);
    for _ in 0..n {
        raw.push(read_action(r, num_buffers)?);
    }
    let starts: Vec<u32> = raw.iter().map(|a| a.at as u32).collect();
    let resolve = |(at, off): (usize, u32)| -> Result<ActionId, LoadError> {
        starts
            .binary_search(&off)
            .map(|i| i as ActionId)
            .map_err(|_| LoadError {
                offset: r.base + at,
                message: format!("offset {off} is not the start of an action"),
            })
    };
    let mut b = Builder::new();
    let mut labels = Vec::with_capacity(n);
    let mut hints = Vec::with_capacity(n);
    let mut seen_labels = std::collections::HashSet::new();
    for a in &raw {
        b.add(a.op.clone());
        hints.push(a.hint);
        if let Some(l) = &a.label {
            if !seen_labels.insert(l.clone()) {
                return Err(LoadError {
                    offset: r.base + a.at,
                    message: format!("label `{l}` appears twice"),
                });
            }
        }
        labels.push(a.label.clone());
    }
    let mut incoming = vec![0u32; n];
    for (id, a) in raw.iter().enumerate() {
        for (list, start_only) in [(&a.deps, false), (&a.sdeps, true)] {
            let mut prev: Option<ActionId> = None;
            for &d in list.iter() {
                let t = resolve(d)?;
                if prev.is_some_and(|p| p >= t) {
                    return Err(LoadError {
                        offset: r.base + d.0,
                        message: "dependents must be listed once each, ascending".into(),
                    });
                }
                prev = Some(t);
                incoming[t as usize] += 1;
                if start_only {
                    b.irequ(id as ActionId, t);
                } else {
                    b.requ(id as ActionId, t);
                }
            }
        }
    }
    for (a, &inc) in raw.iter().zip(&incoming) {
        if a.sources != inc {
            return Err(LoadError {
                offset: r.base + a.at,
                message: format!(
                    "sources counter {} but {inc} actions list this one as dependent",
                    a.sources
                ),
            });
        }
    }
    let mut listed = Vec::with_capacity(ni);
    for &d in &independent {
        listed.push(resolve(d)?);
    }
    let expect: Vec<ActionId> = (0..n as ActionId)
        .filter(|&i| incoming[i as usize] == 0)
        .collect();
    if listed != expect {
        return Err(LoadError {
            offset: r.base + 8,
            message: "the independent actions listed are not exactly those with no sources, \
                      in order"
                .into(),
        });
    }
    let schedule = b.build().map_err(|e| LoadError {
        offset: r.base,
        message: e.to_string(),
    })?;
    Ok(RankProgram {
        schedule,
        labels,
        hints,
    })
}

fn read_buf(r: &mut Reader, num_buffers: usize) -> Result<BufRef, LoadError> {
    let at = r.pos;
    let slot = r.u16("buffer slot")?;
    let offset = r.usize64("buffer offset")?;
    let len = r.usize64("buffer length")?;
    let bad = |m: String| LoadError {
        offset: r.base + at,
        message: m,
    };
    if slot != SCRATCH_SLOT && slot as usize >= num_buffers {
        return Err(bad(format!(
            "buffer slot {slot} but only {num_buffers} buffers"
        )));
    }
    if slot == SCRATCH_SLOT && offset != 0 {
        return Err(bad("scratch buffer with an offset".into()));
    }
    if offset.checked_add(len).is_none() {
        return Err(bad("buffer offset + length overflows".into()));
    }
    Ok(BufRef { slot, offset, len })
}

/// The function of an `exec` action: a predefined one (opcode, datatype) or a user's.
fn read_func(r: &mut Reader) -> Result<Func, LoadError> {
    let fpos = r.pos;
    Ok(match r.u8("function kind")? {
        0 => {
            let op = r.u8("opcode")?;
            let ty = r.u8("datatype")?;
            Opcode::ALL
                .get(op as usize)
                .zip(Dtype::ALL.get(ty as usize))
                .and_then(|(&o, &t)| Predef::new(o, t))
                .map(Func::Predef)
                .ok_or_else(|| LoadError {
                    offset: r.base + fpos,
                    message: format!("no predefined function {op}/{ty}"),
                })?
        }
        1 => Func::User(r.u16("user function")?),
        k => {
            return Err(LoadError {
                offset: r.base + fpos,
                message: format!("unknown function kind {k}"),
            })
        }
    })
}

fn read_action(r: &mut Reader, num_buffers: usize) -> Result<RawAction, LoadError> {
    let at = r.pos;
    let sources = r.u32("sources counter")?;
    let tpos = r.pos;
    let op = match r.u16("action type")? {
        t @ (T_SEND | T_RECV) => {
            let peer = r.u32("peer")?;
            let tag = r.u32("tag")?;
            let buf = read_buf(r, num_buffers)?;
            if t == T_SEND {
                Op::Send { peer, tag, buf }
            } else {
                Op::Recv { peer, tag, buf }
            }
        }
        T_MCAST => Op::McastSend {
            buf: read_buf(r, num_buffers)?,
        },
        T_MRECV => {
            let root = r.u32("root")?;
            Op::McastRecv {
                root,
                buf: read_buf(r, num_buffers)?,
            }
        }
        T_EXEC => {
            let func = read_func(r)?;
            let src = read_buf(r, num_buffers)?;
            let dst = read_buf(r, num_buffers)?;
            Op::Exec { func, src, dst }
        }
        T_CALC => Op::Calc {
            nanos: r.u64("calc time")?,
        },
        t => {
            return Err(LoadError {
                offset: r.base + tpos,
                message: format!("unknown action type {t}"),
            })
        }
    };
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        let k = r.count(4, "number of dependents")?;
        list.reserve(k);
        for _ in 0..k {
            let p = r.pos;
            list.push((p, r.u32("dependent offset")?));
        }
    }
    let hint = Hint {
        cpu: r.u8("cpu")?,
        nic: r.u8("nic")?,
    };
    let lpos = r.pos;
    let llen = r.u32("label length")? as usize;
    let label = r.bytes(llen, "label")?;
    let label = if llen == 0 {
        None
    } else {
        Some(
            std::str::from_utf8(label)
                .ok()
                .filter(|l| valid_ident(l))
                .ok_or_else(|| LoadError {
                    offset: r.base + lpos,
                    message: "label is not an identifier".into(),
                })?
                .to_string(),
        )
    };
    let [deps, sdeps] = lists;
    Ok(RawAction {
        at,
        sources,
        op,
        deps,
        sdeps,
        hint,
        label,
    })
}

/// What a streamed run needs before it starts, from one pass over a rank's section that keeps
/// nothing per action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    pub num_ranks: u32,
    pub local_view: bool,
    pub buffers: Vec<String>,
    /// Per slot, the end of its furthest reference.
    pub needed: Vec<usize>,
    pub scratch_len: usize,
    /// User functions called, ascending.
    pub users: Vec<u16>,
    pub actions: usize,
    pub has_mcast: bool,
    /// Where the section's actions begin: `resume` opens the stream again from there.
    pub start: StreamStart,
}

/// The place of a checked section's first action, to stream the same bytes again without
/// checking them again (`resume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamStart {
    /// The section's offset and length in the file.
    off: usize,
    len: usize,
    /// The first action's position in the section.
    pos: usize,
    actions: usize,
    num_buffers: usize,
}

/// The stream of a section that `stream_rank` checked in these same `bytes`, from its first
/// action, without the checking pass (a file streamed run after run is read once per run).
/// On other bytes the stream ends where an action does not decode, as the window expects of
/// a source that is not a schedule. Panics if `bytes` is shorter than the section.
pub fn resume(bytes: &[u8], at: StreamStart) -> Stream<'_> {
    Stream {
        r: Reader {
            b: &bytes[at.off..at.off + at.len],
            pos: at.pos,
            base: at.off,
        },
        left: at.actions,
        num_buffers: at.num_buffers,
    }
}

/// One rank's actions read one at a time from a binary schedule (for `sched::window`), with
/// the actions' byte offsets in the section as their ids. The section must list every action
/// before its dependents (a topological order, as `asm` writes programs whose `requ` edges
/// point forward); `stream_rank` refuses a section that does not. What only a run can find
/// (counters that disagree with the edges, offsets inside actions) the window reports as a
/// fault.
pub struct Stream<'a> {
    r: Reader<'a>,
    left: usize,
    num_buffers: usize,
}

impl Stream<'_> {
    /// Where in the file the next action starts: every byte before it has been read for the
    /// last time.
    pub fn file_offset(&self) -> usize {
        self.r.base + self.r.pos
    }

    /// Actions not read yet.
    pub fn actions_left(&self) -> usize {
        self.left
    }
}

impl crate::sched::ActionSource for Stream<'_> {
    fn next_action(&mut self) -> Option<crate::sched::Streamed> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // `stream_rank` read every action already: this cannot fail on the same bytes.
        let a = read_action(&mut self.r, self.num_buffers).ok()?;
        Some(crate::sched::Streamed {
            id: a.at as ActionId,
            op: a.op,
            prerequisites: a.sources,
            dependents: a.deps.iter().map(|&(_, o)| o).collect(),
            start_dependents: a.sdeps.iter().map(|&(_, o)| o).collect(),
        })
    }
}

/// Opens rank `rank`'s section of the binary schedule `bytes` as a stream (a local-view
/// program's only section serves any rank), after checking the header and every action's
/// encoding and order in one pass.
pub fn stream_rank(bytes: &[u8], rank: u32) -> Result<(StreamInfo, Stream<'_>), LoadError> {
    stream_rank_releasing(bytes, rank, &mut |_| {})
}

/// A streamed section lists every action before its dependents: each of `a`'s lists of
/// dependents ascends, past `a` itself (`base`: the section's offset in the file).
fn dependents_come_after(a: &RawAction, base: usize) -> Result<(), LoadError> {
    for (list, what) in [(&a.deps, "dependent"), (&a.sdeps, "start dependent")] {
        let mut prev = a.at as u32;
        for &(at, o) in list.iter() {
            if o <= prev {
                return Err(LoadError {
                    offset: base + at,
                    message: format!(
                        "{what} offset {o} does not come after the action and the ones \
                         listed before it: a streamed section lists every action before \
                         its dependents"
                    ),
                });
            }
            prev = o;
        }
    }
    Ok(())
}

/// `stream_rank`, calling `release(offset)` every few MiB of the checking pass with the file
/// offset below which it will not read again (a mapped file can then give those pages back).
pub fn stream_rank_releasing<'a>(
    bytes: &'a [u8],
    rank: u32,
    release: &mut dyn FnMut(usize),
) -> Result<(StreamInfo, Stream<'a>), LoadError> {
    const STEP: usize = 4 << 20;
    let mut released = 0usize;
    let h = read_header(bytes)?;
    let idx = if h.local_view { 0 } else { rank as usize };
    let Some(&(off, len)) = h.table.get(idx) else {
        return Err(LoadError {
            offset: 0,
            message: format!(
                "the program describes {} ranks, there is no rank {rank}",
                h.table.len()
            ),
        });
    };
    let mut r = Reader {
        b: &bytes[off..off + len],
        pos: 0,
        base: off,
    };
    let n = r.count(MIN_ACTION, "number of actions")?;
    let ni = r.count(4, "number of independent actions")?;
    for _ in 0..ni {
        r.u32("independent action offset")?;
    }
    let start = StreamStart {
        off,
        len,
        pos: r.pos,
        actions: n,
        num_buffers: h.buffers.len(),
    };
    let mut info = StreamInfo {
        num_ranks: h.table.len() as u32,
        local_view: h.local_view,
        needed: vec![0; h.buffers.len()],
        buffers: h.buffers.clone(),
        scratch_len: 0,
        users: Vec::new(),
        actions: n,
        has_mcast: false,
        start,
    };
    let mut users = std::collections::BTreeSet::new();
    for _ in 0..n {
        let a = read_action(&mut r, h.buffers.len())?;
        if r.base + r.pos >= released + STEP {
            released = r.base + r.pos;
            release(released);
        }
        dependents_come_after(&a, r.base)?;
        let mut note = |b: &BufRef| {
            if b.slot == SCRATCH_SLOT {
                info.scratch_len = info.scratch_len.max(b.len);
            } else if let Some(x) = info.needed.get_mut(b.slot as usize) {
                *x = (*x).max(b.offset + b.len);
            }
        };
        match &a.op {
            Op::Send { buf, .. } | Op::Recv { buf, .. } => note(buf),
            Op::McastSend { buf } | Op::McastRecv { buf, .. } => {
                note(buf);
                info.has_mcast = true;
            }
            Op::Exec { func, src, dst } => {
                note(src);
                note(dst);
                if let Func::User(u) = func {
                    users.insert(*u);
                }
            }
            Op::Calc { .. } => {}
        }
    }
    if r.pos != len {
        return Err(r.err(format!(
            "rank {rank}: {} bytes after the last action",
            len - r.pos
        )));
    }
    info.users = users.into_iter().collect();
    Ok((info, resume(bytes, start)))
}
