//! The GOAL dialect of LogGOPSim (its txt2bin reads it, its schedule generators write it):
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//! l1: send 8b to 1 tag 0
//! l2: calc 100 cpu 0
//! l2 requires l1
//! }
//! rank 1 {
//! l1: recv 8b from 0 tag 0
//! }
//! ```
//!
//! The reference is txt2bin's scanner, a re2c state machine, and this parser follows its
//! states rather than a token grammar, because its quirks are part of the language: keywords
//! after the first word need no space (`l1: send8bto1tag0` is a send), a statement ends only at
//! a line end (no trailing comment), labels may be `to` or `tag` but not `send`, qualifiers come
//! in the order `tag`, `cpu`, `nic`, statements outside blocks join the next block, the file may
//! end inside the last rank's block, and whatever follows the last rank's block is never read.
//! docs/goal.md lists every quirk and the few places where mpicast differs (it skips indentation,
//! which txt2bin mis-scans, and rejects files txt2bin would turn into corrupt output or an
//! endless loop).

use super::Diagnostic;
use super::{Dialect, Hint, Loc, Parsed, Program, RankProgram, SourceMap, DEFAULT_BUFFER};
use crate::sched::{ActionId, BufRef, BuildError, Builder, Op, ANY_PEER, ANY_TAG, SCRATCH_SLOT};
use std::collections::HashMap;
use std::io::Read;

/// Parses LogGOPSim text.
pub fn parse(src: &[u8]) -> Result<Parsed, Diagnostic> {
    let mut ranks = Vec::new();
    let mut source = SourceMap::default();
    let warnings = run(&mut &src[..], &mut |r, rp, locs, edges| {
        debug_assert_eq!(r as usize, ranks.len());
        ranks.push(rp);
        source.actions.push(locs);
        source.edges.push(edges);
        Ok(())
    })?;
    Ok(Parsed {
        program: Program {
            dialect: Dialect::LogGopSim,
            local_view: false,
            buffers: vec![DEFAULT_BUFFER.to_string()],
            ranks,
        },
        source,
        warnings,
    })
}

/// Parses LogGOPSim text from `input` a line at a time and hands each rank to `each` as soon
/// as its block is complete (rank 0 first, every rank once), without keeping the text or the
/// ranks already handed over: what `mpicast sim` reads a large file with. The ranks, the
/// warnings (returned) and the first error are those of `parse` on the same text; when there
/// is an error, some ranks may have been handed over before it was found. An error of `each`
/// stops the parse and comes back as an error at the block's end.
pub fn parse_each(
    input: &mut dyn Read,
    each: &mut dyn FnMut(u32, RankProgram) -> Result<(), String>,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    run(input, &mut |r, rp, _, _| each(r, rp))
}

/// Where a parsed block goes: the rank, its program, and where its actions and dependencies
/// were written.
type Sink<'s> = dyn FnMut(u32, RankProgram, Vec<Loc>, Vec<(ActionId, ActionId, Loc)>) -> Result<(), String>
    + 's;

fn run(input: &mut dyn Read, sink: &mut Sink<'_>) -> Result<Vec<Diagnostic>, Diagnostic> {
    let mut p = Parser {
        input,
        buf: Vec::new(),
        scanned: 0,
        eof: false,
        pos: 0,
        line: 1,
        line_start: 0,
        num_ranks: 0,
        num_ranks_loc: Loc::NONE,
        // txt2bin zeroes its scanner state, so the file starts as if `rank 0 {` were open.
        open: true,
        rank: 0,
        rank_loc: Loc { line: 1, col: 1 },
        block: Block::default(),
        pending: None,
        sink,
        last: None,
        warnings: Vec::new(),
        warned_outside: false,
    };
    p.fill()?;
    p.run()?;
    p.flush(Loc::NONE)?;
    Ok(p.warnings)
}

/// The statements read since the last block was emitted.
#[derive(Default)]
struct Block {
    builder: Builder,
    labels: Vec<Option<String>>,
    hints: Vec<Hint>,
    locs: Vec<Loc>,
    edges: Vec<(ActionId, ActionId, Loc)>,
    table: HashMap<String, ActionId>,
}

impl Block {
    fn is_empty(&self) -> bool {
        self.builder.is_empty() && self.edges.is_empty()
    }
}

/// A rank's block that is complete but not handed over yet: a block of the same rank right
/// after it replaces it.
struct Pending {
    rank: u32,
    program: RankProgram,
    locs: Vec<Loc>,
    edges: Vec<(ActionId, ActionId, Loc)>,
}

/// Bytes read from the input at a time.
const CHUNK: usize = 1 << 16;

struct Parser<'a, 's> {
    input: &'a mut dyn Read,
    /// The text from the start of the current line (or a little before) on: every byte the
    /// parser looks at is here. `fill` keeps at least the rest of the current line in it.
    buf: Vec<u8>,
    /// `buf[..scanned]` holds no line end past `pos` (what `fill` looked at already).
    scanned: usize,
    /// The input has no more bytes than `buf` holds.
    eof: bool,
    pos: usize,
    line: u32,
    line_start: usize,
    /// 0 until `num_ranks` is read, as in txt2bin.
    num_ranks: u32,
    num_ranks_loc: Loc,
    open: bool,
    rank: u32,
    rank_loc: Loc,
    block: Block,
    pending: Option<Pending>,
    sink: &'a mut Sink<'s>,
    last: Option<u32>,
    warnings: Vec<Diagnostic>,
    warned_outside: bool,
}

enum Kind {
    Send,
    Recv,
    Calc,
}

impl Parser<'_, '_> {
    fn loc(&self) -> Loc {
        Loc {
            line: self.line,
            col: (self.pos - self.line_start + 1) as u32,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn rest(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Reads on until the rest of the current line (with its line end) is in `buf`, or the
    /// input ends; first drops what lies before the current line when that is a chunk or more.
    fn fill(&mut self) -> Result<(), Diagnostic> {
        let cut = self.line_start.min(self.pos);
        if cut >= CHUNK {
            self.buf.drain(..cut);
            self.pos -= cut;
            self.line_start -= cut;
            self.scanned = self.scanned.saturating_sub(cut);
        }
        loop {
            let from = self.scanned.max(self.pos);
            if self.buf[from..].contains(&b'\n') {
                return Ok(());
            }
            self.scanned = self.buf.len();
            if self.eof {
                return Ok(());
            }
            let len = self.buf.len();
            self.buf.resize(len + CHUNK, 0);
            let n = loop {
                match self.input.read(&mut self.buf[len..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.buf.truncate(len);
                        return Err(Diagnostic::error(self.loc(), format!("cannot read: {e}")));
                    }
                }
            };
            self.buf.truncate(len + n);
            self.eof = n == 0;
        }
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the file".into(),
            Some(b'\n') => "a line end".into(),
            Some(b'\r') if self.buf.get(self.pos + 1) == Some(&b'\n') => "a line end".into(),
            Some(c) if c.is_ascii_graphic() => format!("`{}`", c as char),
            Some(c) => format!("byte {c:#04x}"),
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        Diagnostic::error(
            self.loc(),
            format!("expected {what}, found {}", self.found()),
        )
    }

    /// Consumes a line end ("\n" or "\r\n") and reads the next line in; the end of the file
    /// counts as one, because txt2bin appends a newline to what it reads.
    fn newline(&mut self) -> Result<bool, Diagnostic> {
        let n = if self.rest().starts_with(b"\r\n") {
            2
        } else if self.rest().starts_with(b"\n") {
            1
        } else {
            // `fill` read the whole line: its end without a line end is the file's.
            return Ok(self.pos == self.buf.len());
        };
        self.pos += n;
        self.line += 1;
        self.line_start = self.pos;
        self.fill()?;
        Ok(true)
    }

    fn end_of_statement(&mut self, what: &str) -> Result<(), Diagnostic> {
        self.ws();
        if self.newline()? {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// A keyword where txt2bin has no identifier rule competing: a plain prefix match.
    fn keyword(&mut self, kw: &str) -> bool {
        if self.rest().starts_with(kw.as_bytes()) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    /// An identifier: where it lies in `buf`.
    fn ident(&mut self) -> Option<std::ops::Range<usize>> {
        let r = self.rest();
        if !r.first()?.is_ascii_alphabetic() {
            return None;
        }
        let n = r
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .unwrap_or(r.len());
        self.pos += n;
        Some(self.pos - n..self.pos)
    }

    /// `[0-9]+`, accumulated like txt2bin: wrapping at 64 bits. Returns the value and whether
    /// it wrapped.
    fn int(&mut self, what: &str) -> Result<(u64, Loc, bool), Diagnostic> {
        self.ws();
        let loc = self.loc();
        let r = self.rest();
        let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return Err(self.expected(what));
        }
        let mut v: u64 = 0;
        let mut wrapped = false;
        for &d in &r[..n] {
            let (m, o1) = v.overflowing_mul(10);
            let (a, o2) = m.overflowing_add(u64::from(d - b'0'));
            wrapped |= o1 || o2;
            v = a;
        }
        self.pos += n;
        if wrapped {
            self.warn(
                loc,
                format!("number wraps at 64 bits to {v}, as LogGOPSim's txt2bin reads it"),
            );
        }
        Ok((v, loc, wrapped))
    }

    /// An integer that txt2bin stores in a narrower field: truncated the same way, warned.
    fn narrow<T: TryFrom<u64> + Copy>(&mut self, v: u64, loc: Loc, field: &str, bits: u32) -> T {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        if v > mask {
            self.warn(
                loc,
                format!(
                    "{field} {v} does not fit in {bits} bits; LogGOPSim's txt2bin keeps {} and so \
                     does mpicast",
                    v & mask
                ),
            );
        }
        match T::try_from(v & mask) {
            Ok(t) => t,
            Err(_) => unreachable!("masked to the field width"),
        }
    }

    fn warn(&mut self, loc: Loc, msg: String) {
        self.warnings.push(Diagnostic::warning(loc, msg));
    }

    fn run(&mut self) -> Result<(), Diagnostic> {
        loop {
            let Some(c) = self.peek() else {
                return self.at_eof();
            };
            match c {
                // txt2bin's whitespace rule at a statement start has no jump and falls into
                // the generated code that follows it (the newline rule with re2c 3.0), which
                // swallows the next byte. mpicast skips the whitespace instead, as intended;
                // the two agree whenever the whitespace is followed by a line end.
                b' ' | b'\t' => self.ws(),
                b'\n' | b'\r' => {
                    if !self.newline()? {
                        return Err(self.expected("a line end after `\\r`"));
                    }
                }
                b'/' if self.rest().starts_with(b"//") => {
                    while !self.newline()? {
                        self.pos += 1;
                    }
                }
                b'/' if self.rest().starts_with(b"/*") => self.block_comment()?,
                b'}' => {
                    if !self.open {
                        return Err(Diagnostic::error(
                            self.loc(),
                            "`}` closes no block: expected `rank N {` first",
                        ));
                    }
                    let loc = self.loc();
                    self.pos += 1;
                    self.open = false;
                    if self.emit(loc)? {
                        return self.finish();
                    }
                }
                c if c.is_ascii_alphabetic() => self.statement()?,
                _ => {
                    return Err(self.expected(
                        "`rank`, `num_ranks`, `calc`, `send`, `recv`, a label, `}` or a line end",
                    ))
                }
            }
        }
    }

    fn block_comment(&mut self) -> Result<(), Diagnostic> {
        let start = self.loc();
        self.pos += 2;
        loop {
            if self.rest().starts_with(b"*/") {
                self.pos += 2;
                return Ok(());
            }
            if self.pos >= self.buf.len() {
                return Err(Diagnostic::error(
                    start,
                    "comment opened here is never closed: expected `*/`",
                ));
            }
            if !self.newline()? {
                self.pos += 1;
            }
        }
    }

    fn statement(&mut self) -> Result<(), Diagnostic> {
        let start = self.loc();
        let word = self.ident().expect("statement starts with a letter");
        match &self.buf[word.clone()] {
            b"send" => self.operation(Kind::Send, None, start),
            b"recv" => self.operation(Kind::Recv, None, start),
            b"calc" => self.operation(Kind::Calc, None, start),
            b"rank" => self.rank_header(start),
            b"num_ranks" => {
                let (v, loc, _) = self.int("an integer (the number of ranks)")?;
                let n: u32 = self.narrow(v, loc, "num_ranks", 32);
                if self.last.is_some() && n != self.num_ranks {
                    return Err(Diagnostic::error(
                        loc,
                        format!(
                            "num_ranks changes from {} (set at {}:{}) after a block was \
                             written; LogGOPSim's txt2bin sizes its output by the first value",
                            self.num_ranks, self.num_ranks_loc.line, self.num_ranks_loc.col
                        ),
                    ));
                }
                self.num_ranks = n;
                self.num_ranks_loc = loc;
                Ok(())
            }
            label => {
                let label = String::from_utf8_lossy(label).into_owned();
                self.ws();
                if self.keyword(":") {
                    self.ws();
                    let kind = if self.keyword("calc") {
                        Kind::Calc
                    } else if self.keyword("send") {
                        Kind::Send
                    } else if self.keyword("recv") {
                        Kind::Recv
                    } else {
                        return Err(self.expected("`calc`, `send` or `recv`"));
                    };
                    self.operation(kind, Some(label), start)
                } else if self.keyword("requires") {
                    self.dependency(label, false, start)
                } else if self.keyword("irequires") {
                    self.dependency(label, true, start)
                } else {
                    Err(self.expected("`:`, `requires` or `irequires`"))
                }
            }
        }
    }

    fn rank_header(&mut self, start: Loc) -> Result<(), Diagnostic> {
        let (v, loc, _) = self.int("an integer (the rank)")?;
        let r: u32 = self.narrow(v, loc, "rank", 32);
        self.ws();
        if !self.keyword("{") {
            return Err(self.expected("`{`"));
        }
        if self.open && !self.block.is_empty() {
            self.warn(
                start,
                format!(
                    "`rank {r} {{` inside the open block of rank {}: LogGOPSim's txt2bin moves \
                     the statements read so far into rank {r}'s block, and so does mpicast",
                    self.rank
                ),
            );
        }
        self.open = true;
        self.rank = r;
        self.rank_loc = loc;
        Ok(())
    }

    fn note_outside(&mut self, loc: Loc) {
        if !self.open && !self.warned_outside {
            self.warned_outside = true;
            self.warn(
                loc,
                "statement outside a `rank N { }` block: LogGOPSim's txt2bin adds it to the next \
                 block, and so does mpicast"
                    .into(),
            );
        }
    }

    fn operation(
        &mut self,
        kind: Kind,
        label: Option<String>,
        start: Loc,
    ) -> Result<(), Diagnostic> {
        self.note_outside(start);
        let mut hint = Hint::default();
        let op = match kind {
            Kind::Calc => {
                let (nanos, _, _) = self.int("an integer (the time to compute)")?;
                self.ws();
                if self.keyword("cpu") {
                    let (v, loc, _) = self.int("an integer (the cpu)")?;
                    hint.cpu = self.narrow(v, loc, "cpu", 8);
                    self.end_of_statement("a line end")?;
                } else {
                    self.end_of_statement("`cpu` or a line end")?;
                }
                Op::Calc { nanos }
            }
            Kind::Send | Kind::Recv => self.message(matches!(kind, Kind::Send), &mut hint)?,
        };
        let b = &mut self.block;
        let id = b.builder.add(op);
        b.hints.push(hint);
        b.locs.push(start);
        let mut label_slot = None;
        if let Some(l) = label {
            match b.table.get(&l) {
                Some(&first) => {
                    let first_loc = b.locs[first as usize];
                    self.warn(
                        start,
                        format!(
                            "label `{l}` was defined at {}:{}; LogGOPSim's txt2bin keeps the \
                             first definition, and so does mpicast (this action stays unlabelled)",
                            first_loc.line, first_loc.col
                        ),
                    );
                }
                None => {
                    b.table.insert(l.clone(), id);
                    label_slot = Some(l);
                }
            }
        }
        self.block.labels.push(label_slot);
        Ok(())
    }

    /// The rest of a `send` (`is_send`) or `recv`: size, peer, and the optional tag, cpu and
    /// nic (those two into `hint`).
    fn message(&mut self, is_send: bool, hint: &mut Hint) -> Result<Op, Diagnostic> {
        let (size, size_loc, _) = self.int("an integer (the size in bytes)")?;
        let len = usize::try_from(size).map_err(|_| {
            Diagnostic::error(
                size_loc,
                "size does not fit in this machine's address space",
            )
        })?;
        self.ws();
        if !self.keyword("b") {
            return Err(self.expected("`b` after the size"));
        }
        self.ws();
        if is_send && !self.keyword("to") {
            return Err(self.expected("`to`"));
        }
        if !is_send && !self.keyword("from") {
            return Err(self.expected("`from`"));
        }
        self.ws();
        let peer = if self.rest().starts_with(b"-1") {
            if is_send {
                return Err(self.expected("an integer (a send has no wildcard target)"));
            }
            self.pos += 2;
            ANY_PEER
        } else {
            let what = if is_send {
                "an integer (the target rank)"
            } else {
                "an integer or -1 (the source rank)"
            };
            let (v, loc, _) = self.int(what)?;
            self.narrow(v, loc, "rank", 32)
        };
        let mut tag = 0u32;
        self.ws();
        let mut expect = "`tag`, `cpu`, `nic` or a line end";
        if self.keyword("tag") {
            self.ws();
            if self.rest().starts_with(b"-1") {
                self.pos += 2;
                tag = ANY_TAG;
            } else {
                let (v, loc, _) = self.int("an integer or -1 (the tag)")?;
                tag = self.narrow(v, loc, "tag", 32);
            }
            self.ws();
            expect = "`cpu`, `nic` or a line end";
        }
        if self.keyword("cpu") {
            let (v, loc, _) = self.int("an integer (the cpu)")?;
            hint.cpu = self.narrow(v, loc, "cpu", 8);
            self.ws();
            expect = "`nic` or a line end";
        }
        if self.keyword("nic") {
            let (v, loc, _) = self.int("an integer (the nic)")?;
            hint.nic = self.narrow(v, loc, "nic", 8);
            expect = "a line end";
        }
        self.end_of_statement(expect)?;
        let buf = BufRef {
            slot: SCRATCH_SLOT,
            offset: 0,
            len,
        };
        Ok(if is_send {
            Op::Send { peer, tag, buf }
        } else {
            Op::Recv { peer, tag, buf }
        })
    }

    fn dependency(
        &mut self,
        label: String,
        start_only: bool,
        start: Loc,
    ) -> Result<(), Diagnostic> {
        self.note_outside(start);
        self.ws();
        let other_loc = self.loc();
        let Some(other) = self.ident() else {
            return Err(self.expected("a label"));
        };
        let other = String::from_utf8_lossy(&self.buf[other]).into_owned();
        self.end_of_statement("a line end")?;
        let lookup = |p: &Self, l: &str, loc: Loc| -> Result<ActionId, Diagnostic> {
            p.block.table.get(l).copied().ok_or_else(|| {
                Diagnostic::error(
                    loc,
                    format!(
                        "dependency on label `{l}`, which is not defined in this block before \
                         this line (LogGOPSim reads dependencies in order)"
                    ),
                )
            })
        };
        let then = lookup(self, &label, start)?;
        let first = lookup(self, &other, other_loc)?;
        if start_only {
            self.block.builder.irequ(first, then);
        } else {
            self.block.builder.requ(first, then);
        }
        self.block.edges.push((first, then, start));
        Ok(())
    }

    /// Hands the pending statements to rank `self.rank`, as txt2bin's serialisation does.
    /// Returns true when that was the last rank: txt2bin stops reading there.
    fn emit(&mut self, at: Loc) -> Result<bool, Diagnostic> {
        if self.num_ranks == 0 {
            return Err(Diagnostic::error(
                at,
                "the number of ranks is undefined: expected `num_ranks N` before the first \
                 block ends",
            ));
        }
        let r = self.rank;
        if r >= self.num_ranks {
            return Err(Diagnostic::error(
                self.rank_loc,
                format!("rank {r} is not below num_ranks {}", self.num_ranks),
            ));
        }
        match self.last {
            None if r != 0 => {
                return Err(Diagnostic::error(
                    self.rank_loc,
                    format!(
                        "the first block is rank {r}: LogGOPSim's txt2bin needs the blocks in \
                         rank order from 0"
                    ),
                ))
            }
            Some(l) if r != l && r != l + 1 => {
                return Err(Diagnostic::error(
                    self.rank_loc,
                    format!(
                        "rank {r} follows rank {l}: LogGOPSim's txt2bin needs the blocks in rank \
                         order, each rank once (a block repeated at once replaces the first)"
                    ),
                ))
            }
            Some(l) if r == l => self.warn(
                self.rank_loc,
                format!("rank {r} has a second block, which replaces the first (as in txt2bin)"),
            ),
            _ => {}
        }
        let block = std::mem::take(&mut self.block);
        let schedule = block.builder.build().map_err(|e| {
            let loc = match e {
                BuildError::Cycle { id } => block
                    .edges
                    .iter()
                    .find(|&&(_, t, _)| t == id)
                    .map(|e| e.2)
                    .unwrap_or(at),
                BuildError::SelfDependency { id } => block
                    .edges
                    .iter()
                    .find(|&&(f, t, _)| f == id && t == id)
                    .map(|e| e.2)
                    .unwrap_or(at),
                BuildError::UnknownAction { .. } => at,
            };
            let name = |id: ActionId| {
                block.labels[id as usize]
                    .clone()
                    .unwrap_or_else(|| format!("#{id}"))
            };
            let msg = match e {
                BuildError::Cycle { id } => {
                    format!("dependency cycle through `{}` in rank {r}", name(id))
                }
                BuildError::SelfDependency { id } => {
                    format!("`{}` requires itself", name(id))
                }
                BuildError::UnknownAction { .. } => e.to_string(),
            };
            Diagnostic::error(loc, msg).on_rank(r)
        })?;
        // Blocks come in rank order: the block before is complete unless this one replaces it.
        if self.pending.as_ref().is_some_and(|p| p.rank != r) {
            self.flush(at)?;
        }
        self.pending = Some(Pending {
            rank: r,
            program: RankProgram {
                schedule,
                labels: block.labels,
                hints: block.hints,
            },
            locs: block.locs,
            edges: block.edges,
        });
        self.last = Some(r);
        Ok(r + 1 == self.num_ranks)
    }

    /// Hands the pending block over.
    fn flush(&mut self, at: Loc) -> Result<(), Diagnostic> {
        if let Some(p) = self.pending.take() {
            (self.sink)(p.rank, p.program, p.locs, p.edges)
                .map_err(|e| Diagnostic::error(at, e).on_rank(p.rank))?;
        }
        Ok(())
    }

    fn at_eof(&mut self) -> Result<(), Diagnostic> {
        let at = self.loc();
        if self.open && self.rank.checked_add(1) == Some(self.num_ranks) {
            self.warn(
                at,
                format!(
                    "the file ends inside rank {}'s block (missing `}}`); LogGOPSim's txt2bin \
                     accepts this, and so does mpicast",
                    self.rank
                ),
            );
            self.emit(at)?;
            return self.finish();
        }
        if self.open && self.num_ranks == 0 {
            return Err(Diagnostic::error(
                at,
                "the number of ranks is undefined: expected `num_ranks N`",
            ));
        }
        let next = self.last.map_or(0, |l| l + 1);
        Err(Diagnostic::error(
            at,
            format!(
                "the file ends before the block of rank {} (of {}): expected `rank {next} {{` or \
                 `}}` (LogGOPSim's txt2bin would never finish)",
                self.num_ranks.saturating_sub(1),
                self.num_ranks
            ),
        ))
    }

    /// txt2bin stops after the last rank's block: say so when something was left unread
    /// (reading on only as far as the first byte that is not blank space).
    fn finish(&mut self) -> Result<(), Diagnostic> {
        while let Some(c) = self.peek() {
            if !c.is_ascii_whitespace() {
                let loc = self.loc();
                self.warn(
                    loc,
                    "text after the last rank's block is ignored, as LogGOPSim's txt2bin does"
                        .into(),
                );
                break;
            }
            if c == b'\n' {
                self.newline()?;
            } else {
                self.pos += 1;
            }
        }
        Ok(())
    }
}
