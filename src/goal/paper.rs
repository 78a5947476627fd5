//! The textual GOAL of the GOAL paper (Hoefler, Siebert, Lumsdaine, 2009: Fig. 1 and Example 2), with mpicast's extensions:
//!
//! ```text
//! num_ranks 3;                       # optional; else the highest rank + 1
//! rank #0 {
//!   r1: recv 503,1 from 1;
//!   r2: recv 504,1 from 2;
//!   e1: exec sumInt8 with 501,1 503,1;   # 503 = 501 + 503 (MPI_Reduce_local order)
//!   e2: exec sumInt8 with 502,1, 504,1;  # the EBNF's comma between buffers is optional
//!   requ e1 -> r1;                   # e1 requires r1 to be finished
//!   requ e2 -> r2;
//! }
//! rank #1, #2 { send 501,1 to 0; }
//! ```
//!
//! Extensions: named buffers (`rbuf+8,4`; a bare `8,4` is `buf+8,4`, `scratch+0,N` is the
//! scratch area of a traffic replay), `tag N` and `any` wildcards on point-to-point actions,
//! multicast (`mcast <buffer>` to the whole group, `mrecv <buffer> from <root>`), `calc N`
//! (spin N ns), `irequ A -> B` (A may start once B started), LogGOPSim's `cpu N` / `nic N`
//! placement hints, and `num_ranks N;`. A file without `rank` blocks is the paper's local
//! view: one process's schedule on its own. The grammar is in docs/goal.md.

use super::{
    Diagnostic, Dialect, Hint, Loc, Parsed, Program, RankProgram, SourceMap, DEFAULT_BUFFER,
    MAX_RANKS, SCRATCH_BUFFER,
};
use crate::sched::func::{Dtype, Func, Opcode, Predef};
use crate::sched::{ActionId, BufRef, BuildError, Builder, Op, ANY_PEER, ANY_TAG, SCRATCH_SLOT};
use std::collections::HashMap;

/// Words that cannot be labels or buffer names.
pub const KEYWORDS: &[&str] = &[
    "send",
    "recv",
    "requ",
    "irequ",
    "exec",
    "to",
    "with",
    "from",
    "user",
    "mcast",
    "mrecv",
    "calc",
    "tag",
    "any",
    "cpu",
    "nic",
    "rank",
    "num_ranks",
];

pub fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s) || s == SCRATCH_BUFFER
}

/// Parses the paper's dialect.
pub fn parse(src: &[u8]) -> Result<Parsed, Diagnostic> {
    let mut p = Parser {
        lex: Lexer {
            src,
            pos: 0,
            line: 1,
            line_start: 0,
        },
        buffers: vec![DEFAULT_BUFFER.to_string()],
        warnings: Vec::new(),
    };
    p.file()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok<'a> {
    Ident(&'a [u8]),
    Int(u64),
    /// `#N` where a rank is expected.
    RankRef(u64),
    Sym(u8),
    Arrow,
    Eof,
}

impl Tok<'_> {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{}`", String::from_utf8_lossy(s)),
            Tok::Int(v) => format!("`{v}`"),
            Tok::RankRef(v) => format!("`#{v}`"),
            Tok::Sym(c) if c.is_ascii_graphic() => format!("`{}`", *c as char),
            Tok::Sym(c) => format!("byte {c:#04x}"),
            Tok::Arrow => "`->`".into(),
            Tok::Eof => "the end of the file".into(),
        }
    }
}

#[derive(Clone)]
struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
}

impl<'a> Lexer<'a> {
    fn loc(&self) -> Loc {
        Loc {
            line: self.line,
            col: (self.pos - self.line_start + 1) as u32,
        }
    }

    /// Skips whitespace and `#` comments; in `rank_ctx`, `#` followed by a digit is a rank.
    fn trivia(&mut self, rank_ctx: bool) {
        while let Some(&c) = self.src.get(self.pos) {
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    self.line_start = self.pos;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'#' if rank_ctx
                    && self
                        .src
                        .get(self.pos + 1)
                        .is_some_and(|d| d.is_ascii_digit()) =>
                {
                    return
                }
                b'#' => {
                    while self.src.get(self.pos).is_some_and(|&c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn next(&mut self, rank_ctx: bool) -> Result<(Tok<'a>, Loc), Diagnostic> {
        self.trivia(rank_ctx);
        let loc = self.loc();
        let r = &self.src[self.pos..];
        let Some(&c) = r.first() else {
            return Ok((Tok::Eof, loc));
        };
        if c.is_ascii_alphabetic() {
            let n = r
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                .unwrap_or(r.len());
            self.pos += n;
            return Ok((Tok::Ident(&r[..n]), loc));
        }
        let (hash, digits) = if c == b'#' { (1, &r[1..]) } else { (0, r) };
        let n = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 {
            let mut v: u64 = 0;
            for &d in &digits[..n] {
                v = v
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(d - b'0')))
                    .ok_or_else(|| Diagnostic::error(loc, "number does not fit in 64 bits"))?;
            }
            self.pos += hash + n;
            return Ok((
                if hash == 1 {
                    Tok::RankRef(v)
                } else {
                    Tok::Int(v)
                },
                loc,
            ));
        }
        if r.starts_with(b"->") {
            self.pos += 2;
            return Ok((Tok::Arrow, loc));
        }
        self.pos += 1;
        Ok((Tok::Sym(c), loc))
    }
}

/// `requ then -> first` as written: the two labels with where they were named, whether it is
/// an `irequ`, and where the statement starts.
type Dep = ((String, Loc), (String, Loc), bool, Loc);

/// One `rank` block (or the local view) being read.
#[derive(Default)]
struct Block {
    builder: Builder,
    labels: Vec<Option<String>>,
    hints: Vec<Hint>,
    locs: Vec<Loc>,
    table: HashMap<String, (ActionId, Loc)>,
    /// (then, first, start_only, where), resolved at the end of the block.
    deps: Vec<Dep>,
}

struct Parser<'a> {
    lex: Lexer<'a>,
    buffers: Vec<String>,
    warnings: Vec<Diagnostic>,
}

fn expected(what: &str, (tok, loc): (Tok, Loc)) -> Diagnostic {
    Diagnostic::error(loc, format!("expected {what}, found {}", tok.describe()))
}

/// The ranks of a file of `rank` blocks (`owner`: each named rank's block) and their sources:
/// ranks 0 to `num_ranks` (`declared`) or to the highest named, a rank without a block empty.
fn ranks_of_blocks(
    owner: &HashMap<u32, (usize, Loc)>,
    blocks: &[Finished],
    declared: Option<(u32, Loc)>,
) -> Result<(Vec<RankProgram>, SourceMap), Diagnostic> {
    let highest = owner.keys().copied().max().unwrap_or(0);
    let n = match declared {
        Some((n, _)) => {
            let mut bad: Vec<(u32, Loc)> = owner
                .iter()
                .filter(|(&r, _)| r >= n)
                .map(|(&r, &(_, l))| (r, l))
                .collect();
            bad.sort_by_key(|&(_, l)| l);
            if let Some(&(r, l)) = bad.first() {
                return Err(Diagnostic::error(
                    l,
                    format!("rank {r} is not below num_ranks {n}"),
                ));
            }
            n
        }
        None => highest + 1,
    };
    let mut ranks = Vec::with_capacity(n as usize);
    let mut source = SourceMap::default();
    let empty = RankProgram::bare(Builder::new().build().expect("empty schedule"));
    for r in 0..n {
        match owner.get(&r) {
            Some(&(i, _)) => {
                let (rp, locs, edges) = &blocks[i];
                ranks.push(rp.clone());
                source.actions.push(locs.clone());
                source.edges.push(edges.clone());
            }
            None => {
                ranks.push(empty.clone());
                source.actions.push(Vec::new());
                source.edges.push(Vec::new());
            }
        }
    }
    Ok((ranks, source))
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Result<(Tok<'a>, Loc), Diagnostic> {
        self.lex.next(false)
    }

    fn peek(&self) -> Result<(Tok<'a>, Loc), Diagnostic> {
        self.lex.clone().next(false)
    }

    fn sym(&mut self, c: u8) -> Result<Loc, Diagnostic> {
        match self.next()? {
            (Tok::Sym(x), loc) if x == c => Ok(loc),
            t => Err(expected(&format!("`{}`", c as char), t)),
        }
    }

    fn word(&mut self, w: &str) -> Result<(), Diagnostic> {
        match self.next()? {
            (Tok::Ident(x), _) if x == w.as_bytes() => Ok(()),
            t => Err(expected(&format!("`{w}`"), t)),
        }
    }

    fn peek_word(&self, w: &str) -> bool {
        matches!(self.peek(), Ok((Tok::Ident(x), _)) if x == w.as_bytes())
    }

    fn int(&mut self, what: &str) -> Result<(u64, Loc), Diagnostic> {
        match self.next()? {
            (Tok::Int(v), loc) => Ok((v, loc)),
            t => Err(expected(what, t)),
        }
    }

    fn int_below(&mut self, what: &str, limit: u64) -> Result<u64, Diagnostic> {
        let (v, loc) = self.int(what)?;
        if v >= limit {
            return Err(Diagnostic::error(
                loc,
                format!("{what} {v} is too large (the limit is {})", limit - 1),
            ));
        }
        Ok(v)
    }

    fn file(&mut self) -> Result<Parsed, Diagnostic> {
        let mut declared: Option<(u32, Loc)> = None;
        // (rank, where its header named it) -> the block's index in `blocks`
        let mut owner: HashMap<u32, (usize, Loc)> = HashMap::new();
        let mut blocks: Vec<Finished> = Vec::new();
        let mut local: Option<(Block, Loc)> = None;
        let mut first_block_loc: Option<Loc> = None;
        loop {
            let (tok, loc) = self.peek()?;
            match tok {
                Tok::Eof => break,
                Tok::Ident(b"num_ranks") => declared = Some(self.num_ranks(loc, declared)?),
                Tok::Ident(b"rank") => {
                    if let Some((_, l)) = local {
                        return Err(Diagnostic::error(
                            loc,
                            format!(
                                "`rank` block after statements outside any block (at {}:{}): \
                                 a file is either the local view of one process or made of \
                                 `rank` blocks",
                                l.line, l.col
                            ),
                        ));
                    }
                    first_block_loc.get_or_insert(loc);
                    self.rank_block(&mut owner, &mut blocks)?;
                }
                _ => {
                    if let Some(l) = first_block_loc {
                        return Err(Diagnostic::error(
                            loc,
                            format!(
                                "{} outside a `rank` block: after the block at {}:{}, expected \
                                 `rank` or `num_ranks`",
                                tok.describe(),
                                l.line,
                                l.col
                            ),
                        ));
                    }
                    let (b, _) = local.get_or_insert_with(|| (Block::default(), loc));
                    let mut b = std::mem::take(b);
                    let r = self.statement(&mut b);
                    local.as_mut().expect("just set").0 = b;
                    r?;
                }
            }
        }
        if let (Some(_), Some((_, l))) = (&local, declared) {
            self.warnings.push(Diagnostic::warning(
                l,
                "num_ranks has no effect on a local-view file",
            ));
        }
        let buffers = std::mem::take(&mut self.buffers);
        let warnings = std::mem::take(&mut self.warnings);
        if let Some((block, _)) = local {
            let (rp, locs, edges) = finish_block(block, 0)?;
            return Ok(Parsed {
                program: Program {
                    dialect: Dialect::Paper,
                    local_view: true,
                    buffers,
                    ranks: vec![rp],
                },
                source: SourceMap {
                    actions: vec![locs],
                    edges: vec![edges],
                },
                warnings,
            });
        }
        if owner.is_empty() && declared.is_none() {
            return Err(Diagnostic::error(
                self.lex.loc(),
                "empty program: expected `rank #N {`, `num_ranks N;` or a statement",
            ));
        }
        let (ranks, source) = ranks_of_blocks(&owner, &blocks, declared)?;
        Ok(Parsed {
            program: Program {
                dialect: Dialect::Paper,
                local_view: false,
                buffers,
                ranks,
            },
            source,
            warnings,
        })
    }

    /// `num_ranks N;` (at `loc`; `declared`: an earlier one): N, at least 1.
    fn num_ranks(
        &mut self,
        loc: Loc,
        declared: Option<(u32, Loc)>,
    ) -> Result<(u32, Loc), Diagnostic> {
        self.next()?;
        let n = self.int_below("number of ranks", u64::from(MAX_RANKS) + 1)? as u32;
        if n == 0 {
            return Err(Diagnostic::error(loc, "num_ranks must be at least 1"));
        }
        if let Some((_, l)) = declared {
            return Err(Diagnostic::error(
                loc,
                format!("num_ranks was already declared at {}:{}", l.line, l.col),
            ));
        }
        self.sym(b';')?;
        Ok((n, loc))
    }

    /// The rest of a `rank #.. { .. }` block, after `rank`: its program, recorded in `owner` for
    /// each rank it names (once each).
    fn rank_block(
        &mut self,
        owner: &mut HashMap<u32, (usize, Loc)>,
        blocks: &mut Vec<Finished>,
    ) -> Result<(), Diagnostic> {
        self.next()?;
        let ranks = self.rank_list()?;
        self.sym(b'{')?;
        let mut block = Block::default();
        loop {
            match self.peek()? {
                (Tok::Sym(b'}'), _) => {
                    self.next()?;
                    break;
                }
                (Tok::Eof, _) => return Err(expected("a statement or `}`", self.peek()?)),
                _ => self.statement(&mut block)?,
            }
        }
        if matches!(self.peek()?, (Tok::Sym(b';'), _)) {
            self.next()?;
        }
        let first_rank = ranks[0].0;
        let (rp, locs, edges) = finish_block(block, first_rank)?;
        for &(r, rloc) in &ranks {
            if let Some((_, prev)) = owner.get(&r) {
                return Err(Diagnostic::error(
                    rloc,
                    format!(
                        "rank {r} already has a block (named at {}:{})",
                        prev.line, prev.col
                    ),
                ));
            }
            owner.insert(r, (blocks.len(), rloc));
        }
        blocks.push((rp, locs, edges));
        Ok(())
    }

    fn rank_ref(&mut self) -> Result<(u32, Loc), Diagnostic> {
        match self.lex.next(true)? {
            (Tok::RankRef(v) | Tok::Int(v), loc) => {
                if v >= u64::from(MAX_RANKS) {
                    return Err(Diagnostic::error(loc, format!("rank {v} is too large")));
                }
                Ok((v as u32, loc))
            }
            t => Err(expected("a rank (`#0`)", t)),
        }
    }

    fn rank_list(&mut self) -> Result<Vec<(u32, Loc)>, Diagnostic> {
        let mut v = vec![self.rank_ref()?];
        while matches!(self.peek()?, (Tok::Sym(b','), _)) {
            self.next()?;
            let (r, loc) = self.rank_ref()?;
            if v.iter().any(|&(x, _)| x == r) {
                return Err(Diagnostic::error(loc, format!("rank {r} is listed twice")));
            }
            v.push((r, loc));
        }
        Ok(v)
    }

    fn ident(&mut self, what: &str) -> Result<(String, Loc), Diagnostic> {
        match self.next()? {
            (Tok::Ident(s), loc) => {
                let s = String::from_utf8_lossy(s).into_owned();
                if is_keyword(&s) {
                    return Err(Diagnostic::error(
                        loc,
                        format!("expected {what}, found the keyword `{s}`"),
                    ));
                }
                Ok((s, loc))
            }
            t => Err(expected(what, t)),
        }
    }

    fn statement(&mut self, b: &mut Block) -> Result<(), Diagnostic> {
        let (tok, start) = self.next()?;
        let word = match tok {
            Tok::Ident(w) => w,
            _ => {
                return Err(expected(
                    "a statement (`send`, `recv`, `exec`, `mcast`, `mrecv`, `calc`, `requ`, \
                     `irequ` or `label:`)",
                    (tok, start),
                ))
            }
        };
        if word == b"requ" || word == b"irequ" {
            let then = self.ident("a label")?;
            match self.next()? {
                (Tok::Arrow, _) => {}
                t => return Err(expected("`->`", t)),
            }
            let first = self.ident("a label")?;
            self.sym(b';')?;
            b.deps.push((then, first, word == b"irequ", start));
            return Ok(());
        }
        let (label, op_word, op_loc) = match self.peek()? {
            (Tok::Sym(b':'), _) => {
                let name = String::from_utf8_lossy(word).into_owned();
                if is_keyword(&name) {
                    return Err(Diagnostic::error(
                        start,
                        format!("`{name}` is a keyword and cannot be a label"),
                    ));
                }
                self.next()?;
                match self.next()? {
                    (Tok::Ident(w), l) => (Some(name), w, l),
                    t => return Err(expected("an action after the label", t)),
                }
            }
            _ => (None, word, start),
        };
        let op = self.operation(op_word, op_loc)?;
        let hint = self.hints()?;
        self.sym(b';')?;
        let id = b.builder.add(op);
        b.hints.push(hint);
        b.locs.push(start);
        if let Some(l) = &label {
            if let Some(&(_, prev)) = b.table.get(l) {
                return Err(Diagnostic::error(
                    start,
                    format!(
                        "label `{l}` is already defined in this block (at {}:{})",
                        prev.line, prev.col
                    ),
                ));
            }
            b.table.insert(l.clone(), (id, start));
        }
        b.labels.push(label);
        Ok(())
    }

    fn operation(&mut self, word: &[u8], loc: Loc) -> Result<Op, Diagnostic> {
        Ok(match word {
            b"send" => {
                let buf = self.buffer()?;
                self.word("to")?;
                let peer = self.int_below("target rank", 1 << 32)? as u32;
                let tag = self.tag()?;
                Op::Send { peer, tag, buf }
            }
            b"recv" => {
                let buf = self.buffer()?;
                self.word("from")?;
                let peer = self.peer_or_any()?;
                let tag = self.tag()?;
                Op::Recv { peer, tag, buf }
            }
            b"mcast" => Op::McastSend {
                buf: self.buffer()?,
            },
            b"mrecv" => {
                let buf = self.buffer()?;
                self.word("from")?;
                let root = self.int_below("root rank", 1 << 32)? as u32;
                Op::McastRecv { root, buf }
            }
            b"exec" => {
                let func = self.func()?;
                self.word("with")?;
                let src = self.buffer()?;
                if matches!(self.peek()?, (Tok::Sym(b','), _)) {
                    self.next()?;
                }
                let dst = self.buffer()?;
                Op::Exec { func, src, dst }
            }
            b"calc" => {
                let (nanos, _) = self.int("a time in nanoseconds")?;
                Op::Calc { nanos }
            }
            _ => {
                return Err(Diagnostic::error(
                    loc,
                    format!(
                        "expected an action (`send`, `recv`, `exec`, `mcast`, `mrecv` or \
                         `calc`), found `{}`",
                        String::from_utf8_lossy(word)
                    ),
                ))
            }
        })
    }

    fn peer_or_any(&mut self) -> Result<u32, Diagnostic> {
        if self.peek_word("any") {
            self.next()?;
            return Ok(ANY_PEER);
        }
        Ok(self.int_below("source rank or `any`", 1 << 32)? as u32)
    }

    /// `tag N` or `tag any` (`any` is the value 2^32 - 1, LogGOPSim's `-1`; on a send it
    /// matches only wildcard receives, and validation warns about it).
    fn tag(&mut self) -> Result<u32, Diagnostic> {
        if !self.peek_word("tag") {
            return Ok(0);
        }
        self.next()?;
        if self.peek_word("any") {
            self.next()?;
            return Ok(ANY_TAG);
        }
        Ok(self.int_below("tag", 1 << 32)? as u32)
    }

    fn hints(&mut self) -> Result<Hint, Diagnostic> {
        let mut h = Hint::default();
        if self.peek_word("cpu") {
            self.next()?;
            h.cpu = self.int_below("cpu", 256)? as u8;
        }
        if self.peek_word("nic") {
            self.next()?;
            h.nic = self.int_below("nic", 256)? as u8;
        }
        Ok(h)
    }

    fn buffer(&mut self) -> Result<BufRef, Diagnostic> {
        let (tok, loc) = self.peek()?;
        let slot = if let Tok::Ident(name) = tok {
            let name = String::from_utf8_lossy(name).into_owned();
            self.next()?;
            self.sym(b'+')?;
            if name == SCRATCH_BUFFER {
                SCRATCH_SLOT
            } else if KEYWORDS.contains(&name.as_str()) {
                return Err(Diagnostic::error(
                    loc,
                    format!("`{name}` is a keyword and cannot name a buffer"),
                ));
            } else {
                match self.buffers.iter().position(|b| *b == name) {
                    Some(i) => i as u16,
                    None => {
                        if self.buffers.len() >= usize::from(SCRATCH_SLOT) {
                            return Err(Diagnostic::error(loc, "too many buffer names"));
                        }
                        self.buffers.push(name);
                        (self.buffers.len() - 1) as u16
                    }
                }
            }
        } else {
            0
        };
        let (offset, oloc) = self.int("a buffer offset")?;
        self.sym(b',')?;
        let (len, lloc) = self.int("a buffer size")?;
        let conv = |v: u64, l: Loc| {
            usize::try_from(v)
                .map_err(|_| Diagnostic::error(l, "does not fit in this machine's address space"))
        };
        let (offset, len) = (conv(offset, oloc)?, conv(len, lloc)?);
        if offset.checked_add(len).is_none() {
            return Err(Diagnostic::error(oloc, "offset + size overflows"));
        }
        if slot == SCRATCH_SLOT && offset != 0 {
            return Err(Diagnostic::error(
                oloc,
                "the scratch area has no offsets: expected `scratch+0,SIZE`",
            ));
        }
        Ok(BufRef { slot, offset, len })
    }

    fn func(&mut self) -> Result<Func, Diagnostic> {
        let (tok, loc) = self.next()?;
        let Tok::Ident(w) = tok else {
            return Err(expected("a function", (tok, loc)));
        };
        let w = String::from_utf8_lossy(w).into_owned();
        if w == "user" {
            let n = self.int_below("user function number", 1 << 16)?;
            return Ok(Func::User(n as u16));
        }
        let bad = || {
            Diagnostic::error(
                loc,
                format!(
                    "expected a function (`max min sum prod land lor lxor band bor bxor copy` \
                     followed by `Int`, `UInt` or `Float` and 8, 16, 32 or 64, or `user N`), \
                     found `{w}`"
                ),
            )
        };
        let (op, ty_name) = match Opcode::ALL.iter().find(|o| w.starts_with(o.name())) {
            Some(&op) if w.len() > op.name().len() => (op, w[op.name().len()..].to_string()),
            Some(&op) => {
                // `sum Int32`: the EBNF allows whitespace between any tokens.
                match self.next()? {
                    (Tok::Ident(t), _) => (op, String::from_utf8_lossy(t).into_owned()),
                    t => return Err(expected("a datatype (`Int32`, `Float64`, ...)", t)),
                }
            }
            None => return Err(bad()),
        };
        if ty_name == "Float8" {
            return Err(Diagnostic::error(
                loc,
                "Float8 has no IEEE 754 format that mpicast could compute with: use Float16, \
                 Float32 or Float64",
            ));
        }
        let ty = Dtype::from_name(&ty_name).ok_or_else(bad)?;
        Predef::new(op, ty).map(Func::Predef).ok_or_else(|| {
            Diagnostic::error(
                loc,
                format!(
                    "{} is a bitwise operation and needs an Int or UInt type, not {}",
                    op.name(),
                    ty.name()
                ),
            )
        })
    }
}

type Finished = (RankProgram, Vec<Loc>, Vec<(ActionId, ActionId, Loc)>);

/// Resolves the block's labels and builds its schedule.
fn finish_block(mut b: Block, rank: u32) -> Result<Finished, Diagnostic> {
    let mut edges = Vec::with_capacity(b.deps.len());
    for ((then, tloc), (first, floc), start_only, at) in std::mem::take(&mut b.deps) {
        let look = |name: &str, loc: Loc| {
            b.table.get(name).map(|&(id, _)| id).ok_or_else(|| {
                Diagnostic::error(loc, format!("no action is labelled `{name}` in this block"))
            })
        };
        let t = look(&then, tloc)?;
        let f = look(&first, floc)?;
        if start_only {
            b.builder.irequ(f, t);
        } else {
            b.builder.requ(f, t);
        }
        edges.push((f, t, at));
    }
    let schedule = b.builder.build().map_err(|e| {
        let name = |id: ActionId| {
            b.labels[id as usize]
                .clone()
                .unwrap_or_else(|| format!("#{id}"))
        };
        match e {
            BuildError::Cycle { id } => {
                let loc = edges
                    .iter()
                    .find(|&&(_, t, _)| t == id)
                    .map_or(Loc::NONE, |e| e.2);
                Diagnostic::error(loc, format!("dependency cycle through `{}`", name(id)))
            }
            BuildError::SelfDependency { id } => {
                let loc = edges
                    .iter()
                    .find(|&&(f, t, _)| f == id && t == id)
                    .map_or(Loc::NONE, |e| e.2);
                Diagnostic::error(loc, format!("`{}` requires itself", name(id)))
            }
            BuildError::UnknownAction { .. } => Diagnostic::error(Loc::NONE, e.to_string()),
        }
        .on_rank(rank)
    })?;
    Ok((
        RankProgram {
            schedule,
            labels: b.labels,
            hints: b.hints,
        },
        b.locs,
        edges,
    ))
}
