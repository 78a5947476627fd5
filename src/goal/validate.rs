//! Checks a whole program before anything runs. Cycles and unknown labels cannot reach here
//! (the parsers and the binary loader build every rank through `sched::Builder`, which refuses
//! them, with locations); this module checks what needs every rank at once or the buffer sizes:
//!
//! - peers and roots inside the group;
//! - point-to-point matching as MPI does it: per (source, destination, tag), the k-th send
//!   pairs with the k-th receive in program order; wildcard receives (`any`) then take the
//!   remaining sends in program order; every send needs a receive and the reverse;
//! - multicast matching: the k-th `mcast` of a root pairs with the k-th `mrecv ... from root`
//!   on every other rank;
//! - sizes of matched pairs (a larger send is an error, MPI would truncate; a smaller one a
//!   warning);
//! - predefined `exec` functions on buffers of equal length, whole elements;
//! - buffer ranges inside the bound buffers, when their sizes are given;
//! - overlapping buffer ranges of two actions of a rank, at least one writing, with no
//!   `requ` path between them (a warning: their order is left to the scheduler).

use super::{Diagnostic, Loc, Program, SourceMap};
use crate::sched::func::{check_lengths, Func};
use crate::sched::{ActionId, BufRef, Op, ANY_PEER, ANY_TAG, SCRATCH_SLOT};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Buffer sizes by name, for the range check; buffers not listed are not checked.
#[derive(Clone, Debug, Default)]
pub struct BufferSizes(pub HashMap<String, usize>);

/// A matched message: (sending rank, send action, receiving rank, receive action).
pub type Pair = (u32, ActionId, u32, ActionId);

/// What matching found.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    pub p2p: Vec<Pair>,
    /// Multicast: (root, mcast action, receiving rank, mrecv action).
    pub mcast: Vec<Pair>,
}

/// Caps on reported findings of one kind, so a broken generator cannot flood the terminal.
const MAX_OVERLAP_WARNINGS_PER_RANK: usize = 20;

/// Every finding about `p`, errors and warnings, sorted by location.
pub fn validate(p: &Program, src: Option<&SourceMap>, sizes: &BufferSizes) -> Vec<Diagnostic> {
    let empty = SourceMap::default();
    let src = src.unwrap_or(&empty);
    let mut out = Vec::new();
    per_action(p, src, sizes, &mut out);
    if !p.local_view {
        match_messages(p, src, Some(&mut out));
    }
    for rank in 0..p.num_ranks() {
        overlaps(p, src, rank, &mut out);
    }
    out.sort_by_key(|d| (d.loc, d.rank));
    out
}

/// Errors only: true when `validate` found none.
pub fn is_valid(diags: &[Diagnostic]) -> bool {
    !diags.iter().any(Diagnostic::is_error)
}

fn at(src: &SourceMap, rank: u32, id: ActionId) -> Loc {
    src.action(rank, id)
}

fn per_action(p: &Program, src: &SourceMap, sizes: &BufferSizes, out: &mut Vec<Diagnostic>) {
    let n = p.num_ranks();
    let size_of: HashMap<u16, usize> = sizes
        .0
        .iter()
        .filter_map(|(name, &sz)| p.slot_of(name).map(|s| (s, sz)))
        .collect();
    for (rank, rp) in p.ranks.iter().enumerate() {
        let rank = rank as u32;
        for (id, op) in rp.schedule.actions() {
            let loc = at(src, rank, id);
            if !p.local_view {
                let msg = match *op {
                    Op::Send { peer, .. } if peer >= n => Some(format!(
                        "send to rank {peer}, but the program has {n} ranks"
                    )),
                    Op::Recv { peer, .. } if peer != ANY_PEER && peer >= n => Some(format!(
                        "receive from rank {peer}, but the program has {n} ranks"
                    )),
                    Op::McastRecv { root, .. } if root >= n => Some(format!(
                        "multicast receive from root {root}, but the program has {n} ranks"
                    )),
                    Op::McastRecv { root, .. } if root == rank => Some(
                        "multicast receive from this rank itself: a root's own `mcast` already \
                         has the data"
                            .into(),
                    ),
                    _ => None,
                };
                if let Some(m) = msg {
                    out.push(Diagnostic::error(loc, m).on_rank(rank));
                }
            }
            if let Op::Send { tag: ANY_TAG, .. } = op {
                out.push(
                    Diagnostic::warning(
                        loc,
                        "send with tag `any` (LogGOPSim's tag -1): it can only match a receive \
                         with tag `any`, and MPI has no such send",
                    )
                    .on_rank(rank),
                );
            }
            let mut err = |m: String| out.push(Diagnostic::error(loc, m).on_rank(rank));
            if let Op::Exec {
                func: Func::Predef(f),
                src: s,
                dst: d,
            } = op
            {
                if let Err(e) = check_lengths(*f, s.len, d.len) {
                    err(format!("exec {}: {e}", Func::Predef(*f)));
                }
            }
            for b in buffers(op).into_iter().flatten() {
                let Some(&size) = size_of.get(&b.buf.slot) else {
                    continue;
                };
                if b.buf.offset + b.buf.len > size {
                    err(format!(
                        "bytes {}..{} of buffer `{}` are outside its {size} bytes",
                        b.buf.offset,
                        b.buf.offset + b.buf.len,
                        p.buffer_name(b.buf.slot)
                    ));
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Access {
    buf: BufRef,
    write: bool,
}

/// The buffers an action touches (at most two).
fn buffers(op: &Op) -> [Option<Access>; 2] {
    let r = |buf: &BufRef| {
        Some(Access {
            buf: *buf,
            write: false,
        })
    };
    let w = |buf: &BufRef| {
        Some(Access {
            buf: *buf,
            write: true,
        })
    };
    match op {
        Op::Send { buf, .. } | Op::McastSend { buf } => [r(buf), None],
        Op::Recv { buf, .. } | Op::McastRecv { buf, .. } => [w(buf), None],
        Op::Exec { src, dst, .. } => [r(src), w(dst)],
        Op::Calc { .. } => [None, None],
    }
}

fn op_len(op: &Op) -> usize {
    match op {
        Op::Send { buf, .. } | Op::Recv { buf, .. } => buf.len,
        Op::McastSend { buf } | Op::McastRecv { buf, .. } => buf.len,
        _ => 0,
    }
}

/// Where a rank's diagnostics go, if anywhere.
type Out<'a> = Option<&'a mut Vec<Diagnostic>>;

/// The messages of a program by kind, in program order, before pairing.
#[derive(Default)]
struct Messages {
    /// (src, dst, tag) -> sends; BTreeMap for a deterministic report.
    sends: BTreeMap<(u32, u32, u32), VecDeque<ActionId>>,
    /// (src, dst, tag) -> receives that name their source and tag.
    recvs: BTreeMap<(u32, u32, u32), VecDeque<ActionId>>,
    /// Per rank: its wildcard receives (action, source, tag).
    wild: Vec<Vec<(ActionId, u32, u32)>>,
    /// Per rank: its multicasts.
    roots: Vec<Vec<ActionId>>,
    /// (receiver, root) -> multicast receives.
    mrecvs: BTreeMap<(u32, u32), VecDeque<ActionId>>,
}

impl Messages {
    fn of(p: &Program) -> Messages {
        let n = p.num_ranks();
        let mut m = Messages {
            wild: vec![Vec::new(); n as usize],
            roots: vec![Vec::new(); n as usize],
            ..Messages::default()
        };
        for (rank, rp) in p.ranks.iter().enumerate() {
            let rank = rank as u32;
            for (id, op) in rp.schedule.actions() {
                match *op {
                    Op::Send { peer, tag, .. } if peer < n => {
                        m.sends.entry((rank, peer, tag)).or_default().push_back(id)
                    }
                    Op::Recv { peer, tag, .. } if peer == ANY_PEER || tag == ANY_TAG => {
                        m.wild[rank as usize].push((id, peer, tag))
                    }
                    Op::Recv { peer, tag, .. } if peer < n => {
                        m.recvs.entry((peer, rank, tag)).or_default().push_back(id)
                    }
                    Op::McastSend { .. } => m.roots[rank as usize].push(id),
                    Op::McastRecv { root, .. } if root < n && root != rank => {
                        m.mrecvs.entry((rank, root)).or_default().push_back(id)
                    }
                    _ => {}
                }
            }
        }
        m
    }
}

/// Pairs sends with receives and multicasts with their receives. With `out`, reports what
/// does not pair and size mismatches.
pub fn match_messages(p: &Program, src: &SourceMap, mut out: Out<'_>) -> Matching {
    let mut m = Matching::default();
    let mut msgs = Messages::of(p);
    pair_p2p(p, src, &mut msgs, &mut m, &mut out);
    pair_mcasts(p, src, &mut msgs, &mut m, &mut out);
    m
}

/// With `out`, a matched pair's sizes: a message `s` larger than its receive `d` is an error
/// (MPI would truncate it), a smaller one a warning.
fn size_check(
    p: &Program,
    src: &SourceMap,
    out: &mut Out<'_>,
    s: (u32, ActionId),
    d: (u32, ActionId),
    kind: &str,
) {
    let op = |r: u32, id: ActionId| p.ranks[r as usize].schedule.op(id);
    let (sl, dl) = (op_len(op(s.0, s.1)), op_len(op(d.0, d.1)));
    if let Some(out) = out.as_deref_mut() {
        if sl > dl {
            out.push(
                Diagnostic::error(
                    at(src, d.0, d.1),
                    format!(
                        "{kind} of {sl} bytes from rank {} (at {}) into a receive of {dl} \
                         bytes: the message would be truncated",
                        s.0,
                        fmt_loc(at(src, s.0, s.1))
                    ),
                )
                .on_rank(d.0),
            );
        } else if sl < dl {
            out.push(
                Diagnostic::warning(
                    at(src, d.0, d.1),
                    format!(
                        "receive of {dl} bytes gets a {kind} of only {sl} bytes from rank {} \
                         (at {})",
                        s.0,
                        fmt_loc(at(src, s.0, s.1))
                    ),
                )
                .on_rank(d.0),
            );
        }
    }
}

/// Point to point: per (source, destination, tag) the k-th send with the k-th receive, then
/// the leftover sends with the wildcard receives; with `out`, what is left unpaired.
fn pair_p2p(
    p: &Program,
    src: &SourceMap,
    msgs: &mut Messages,
    m: &mut Matching,
    out: &mut Out<'_>,
) {
    let mut unmatched_sends: Vec<((u32, u32, u32), ActionId)> = Vec::new();
    for (&key, ss) in msgs.sends.iter_mut() {
        let rs = msgs.recvs.entry(key).or_default();
        while let (Some(&s), Some(&r)) = (ss.front(), rs.front()) {
            ss.pop_front();
            rs.pop_front();
            m.p2p.push((key.0, s, key.1, r));
            size_check(p, src, out, (key.0, s), (key.1, r), "send");
        }
        unmatched_sends.extend(ss.drain(..).map(|s| (key, s)));
    }
    // Leftover sends go to wildcard receives, each wildcard receive taking the first
    // compatible send in (source, tag, program) order.
    let wild = &msgs.wild;
    let mut wild_used: Vec<Vec<bool>> = wild.iter().map(|w| vec![false; w.len()]).collect();
    let mut still: Vec<((u32, u32, u32), ActionId)> = Vec::new();
    for ((from, to, tag), s) in unmatched_sends {
        let slot = wild[to as usize]
            .iter()
            .enumerate()
            .find(|&(i, &(_, peer, t))| {
                !wild_used[to as usize][i]
                    && (peer == ANY_PEER || peer == from)
                    && (t == ANY_TAG || t == tag)
            })
            .map(|(i, &(r, _, _))| (i, r));
        match slot {
            Some((i, r)) => {
                wild_used[to as usize][i] = true;
                m.p2p.push((from, s, to, r));
                size_check(p, src, out, (from, s), (to, r), "send");
            }
            None => still.push(((from, to, tag), s)),
        }
    }
    let Some(out) = out.as_deref_mut() else {
        return;
    };
    for ((from, to, tag), s) in still {
        out.push(
            Diagnostic::error(
                at(src, from, s),
                format!("send to rank {to} with tag {tag} has no matching receive on rank {to}"),
            )
            .on_rank(from),
        );
    }
    for (&(from, to, tag), rs) in &msgs.recvs {
        for &r in rs {
            out.push(
                Diagnostic::error(
                    at(src, to, r),
                    format!(
                        "receive from rank {from} with tag {tag} has no matching send on rank \
                         {from}"
                    ),
                )
                .on_rank(to),
            );
        }
    }
    for (to, w) in wild.iter().enumerate() {
        for (i, &(r, _, _)) in w.iter().enumerate() {
            if !wild_used[to][i] {
                out.push(
                    Diagnostic::error(
                        at(src, to as u32, r),
                        "wildcard receive that no send is left for",
                    )
                    .on_rank(to as u32),
                );
            }
        }
    }
}

/// Multicasts: the k-th `mcast` of a root with the k-th `mrecv ... from root` on every other
/// rank; with `out`, what is left unpaired.
fn pair_mcasts(
    p: &Program,
    src: &SourceMap,
    msgs: &mut Messages,
    m: &mut Matching,
    out: &mut Out<'_>,
) {
    let n = p.num_ranks();
    for (root, ms) in msgs.roots.iter().enumerate() {
        let root = root as u32;
        for rank in (0..n).filter(|&q| q != root) {
            let got = msgs.mrecvs.remove(&(rank, root)).unwrap_or_default();
            for (k, &s) in ms.iter().enumerate() {
                match got.get(k) {
                    Some(&r) => {
                        m.mcast.push((root, s, rank, r));
                        size_check(p, src, out, (root, s), (rank, r), "multicast");
                    }
                    None => {
                        if let Some(out) = out.as_deref_mut() {
                            out.push(
                                Diagnostic::error(
                                    at(src, root, s),
                                    format!(
                                        "multicast number {} of rank {root} has no `mrecv ... \
                                         from {root}` on rank {rank}",
                                        k + 1
                                    ),
                                )
                                .on_rank(root),
                            );
                        }
                    }
                }
            }
            if let Some(out) = out.as_deref_mut() {
                for &r in got.iter().skip(ms.len()) {
                    out.push(
                        Diagnostic::error(
                            at(src, rank, r),
                            format!(
                                "multicast receive from rank {root}, which sends fewer multicasts"
                            ),
                        )
                        .on_rank(rank),
                    );
                }
            }
        }
    }
    if let Some(out) = out.as_deref_mut() {
        for (&(rank, root), rs) in &msgs.mrecvs {
            for &r in rs {
                out.push(
                    Diagnostic::error(
                        at(src, rank, r),
                        format!("multicast receive from rank {root}, which sends no multicast"),
                    )
                    .on_rank(rank),
                );
            }
        }
    }
}

fn fmt_loc(l: Loc) -> String {
    if l.line == 0 {
        "generated".into()
    } else {
        format!("{}:{}", l.line, l.col)
    }
}

/// Warns about pairs of a rank's actions whose buffer ranges overlap, at least one writing,
/// when no chain of `requ` edges orders them.
fn overlaps(p: &Program, src: &SourceMap, rank: u32, out: &mut Vec<Diagnostic>) {
    let rp = &p.ranks[rank as usize];
    let s = &rp.schedule;
    // (slot, start, end, write, action)
    let mut acc: Vec<(u16, usize, usize, bool, ActionId)> = Vec::new();
    for (id, op) in s.actions() {
        for a in buffers(op).into_iter().flatten() {
            if a.buf.slot != SCRATCH_SLOT && a.buf.len > 0 {
                acc.push((
                    a.buf.slot,
                    a.buf.offset,
                    a.buf.offset + a.buf.len,
                    a.write,
                    id,
                ));
            }
        }
    }
    acc.sort_unstable();
    let mut reported = 0usize;
    let mut suppressed = 0usize;
    let mut seen: std::collections::HashSet<(ActionId, ActionId)> = Default::default();
    let mut reach = Reach::new(s.len());
    for i in 0..acc.len() {
        let (slot, _, end, w1, a) = acc[i];
        for &(slot2, start2, _, w2, b) in &acc[i + 1..] {
            if slot2 != slot || start2 >= end {
                break;
            }
            if a == b || !(w1 || w2) {
                continue;
            }
            let key = (a.min(b), a.max(b));
            if !seen.insert(key) {
                continue;
            }
            if reach.ordered(s, key.0, key.1) {
                continue;
            }
            if reported >= MAX_OVERLAP_WARNINGS_PER_RANK {
                suppressed += 1;
                continue;
            }
            reported += 1;
            let name = |id: ActionId| {
                rp.label(id)
                    .map(|l| format!("`{l}`"))
                    .unwrap_or_else(|| format!("action {id}"))
            };
            out.push(
                Diagnostic::warning(
                    at(src, rank, key.1),
                    format!(
                        "{} and {} (at {}) use overlapping bytes of buffer `{}` and at least one \
                         writes them, but no `requ` orders them",
                        name(key.1),
                        name(key.0),
                        fmt_loc(at(src, rank, key.0)),
                        p.buffer_name(slot)
                    ),
                )
                .on_rank(rank),
            );
        }
    }
    if suppressed > 0 {
        out.push(
            Diagnostic::warning(
                Loc::NONE,
                format!("{suppressed} more unordered overlapping pairs not listed"),
            )
            .on_rank(rank),
        );
    }
}

/// Reachability along completion (`requ`) edges, by search with a reusable visited set.
struct Reach {
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<ActionId>,
}

impl Reach {
    fn new(n: usize) -> Self {
        Reach {
            mark: vec![0; n],
            epoch: 0,
            stack: Vec::new(),
        }
    }

    fn path(&mut self, s: &crate::sched::Schedule, from: ActionId, to: ActionId) -> bool {
        self.epoch += 1;
        self.stack.clear();
        self.stack.push(from);
        while let Some(x) = self.stack.pop() {
            if x == to {
                return true;
            }
            for &d in s.dependents(x) {
                if self.mark[d as usize] != self.epoch {
                    self.mark[d as usize] = self.epoch;
                    self.stack.push(d);
                }
            }
        }
        false
    }

    fn ordered(&mut self, s: &crate::sched::Schedule, a: ActionId, b: ActionId) -> bool {
        self.path(s, a, b) || self.path(s, b, a)
    }
}
