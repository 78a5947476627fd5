//! dbcast: dynamic broadcasts ("Using Dynamic Broadcasts to improve Task-Based Runtime
//! Performances", Euro-Par 2020) on the wire, and their matching with posted receives.
//! Sans-IO: bytes and ranks in, messages to send and what arrived for this rank out; the
//! transport carries them over the host MPI on a private communicator, which is reliable and
//! keeps the order of the messages of one sender to one receiver.
//!
//! A root sends data to a list of recipients that only it knows, in the tree order of
//! `algo::dbcast` (binomial over the list, higher priorities at earlier steps). Each
//! recipient learns that it takes part when the data comes, passes it on to its own subtree
//! and delivers it to the application as if it were a point-to-point message from the root.
//! The data is cut into segments of at most `seg_bytes` payload bytes, so that a recipient
//! forwards the first segments while the later ones are still coming (pipelining).
//!
//! The first segment of each hop carries the routing: the receiving rank's own entry, then
//! the entries of its subtree (trimmed: nothing of the other subtrees), each with its
//! priority, the sequence number the root gave it for that rank, and the counts of the
//! root's plain (host MPI) messages to that rank sent before this one. Later segments carry
//! no list: a rank remembers, per (sender, message), where the first one went (`Relay`), and
//! the links keep every sender's segments in order. A rank sends to each child at the
//! child's own priority (the paper inserts forwarded messages in the local packet flow with
//! the right priority): `OutQueue` hands the highest priority to the link first.
//!
//! Layout, little-endian. Every segment: magic (u16, "DB") version (u8) flags (u8: 1 the list
//! follows, 2 the tree is a chain, `algo::dbcast::Shape`), root (u32), tag (i32), message number at the root (u64, all its dynamic
//! broadcasts and direct messages on the communicator), total length (u64), segment number
//! (u32), number of segments (u32): 36 bytes. The first segment then: the count of entries
//! (u32, at least 1) and per entry its rank (u32), priority (i32), sequence number (u64),
//! plain messages before it in total (u64) and with its tag (u64): 32 bytes. Entry 0 is the
//! receiving rank. Then the payload. An empty message is one empty segment.
//!
//! `Matcher` gives what arrived to the application's receives as MPI matches point-to-point
//! messages: see its documentation for the order it keeps.

use super::forward::{nsegs, seg_len};
use super::matching::{RecvId, Want};
use super::packet::Reject;
use crate::algo::dbcast::{Recipient, Shape};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;

const MAGIC: u16 = 0x4244; // "DB"
const VERSION: u8 = 1;
/// Bytes of every segment's header.
pub const HEADER_LEN: usize = 36;
/// Bytes of one entry of a first segment's list.
pub const ENTRY_LEN: usize = 32;
const FLAG_LIST: u8 = 1;
const FLAG_CHAIN: u8 = 2;

/// One destination as it travels: rank, priority, the root's sequence number of its messages
/// to this rank (0,1,2,... over dynamic broadcasts AND direct messages of this root to this
/// rank), and how many plain (host MPI) point-to-point messages the root had sent to this rank
/// before this one: in total, and with this message's tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub rank: u32,
    pub priority: i32,
    pub seq: u64,
    pub before_total: u64,
    pub before_tag: u64,
}

/// A dynamic broadcast, everywhere: its root and the root's number for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub root: u32,
    pub msg: u64,
}

/// The header of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegHeader {
    pub root: u32,
    pub tag: i32,
    /// The root's number of this message (all its messages of this kind, on this
    /// communicator).
    pub msg: u64,
    pub total_len: u64,
    pub seg: u32,
    pub nsegs: u32,
    /// The tree the root chose (every segment of a message says the same).
    pub shape: Shape,
}

/// A segment as received: its header, the list (first segments), and where its payload
/// starts in the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub h: SegHeader,
    /// Entry 0: the receiving rank; then its subtree list, in tree order.
    pub list: Option<Vec<Entry>>,
    pub payload_at: usize,
}

/// A message to send: to `to`, at `priority` (the receiving entry's), bytes shared between
/// hops.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub to: u32,
    pub priority: i32,
    pub bytes: Arc<[u8]>,
}

/// What reached this rank (its own entry from the first segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrived {
    pub key: Key,
    pub tag: i32,
    /// The root's sequence number of its messages to this rank.
    pub seq: u64,
    pub len: u64,
    /// Plain messages of the root to this rank before this one, in total.
    pub before_total: u64,
    /// Plain messages of the root to this rank before this one, with this one's tag.
    pub before_tag: u64,
}

/// What a received segment means for this rank.
#[derive(Debug, Default)]
pub struct Handled {
    /// Segments to pass on (to this rank's children).
    pub send: Vec<Outgoing>,
    /// First segment: the broadcast reached this rank.
    pub arrived: Option<Arrived>,
    /// Payload for this rank: the message, the offset in the message, the range in the
    /// segment's bytes.
    pub data: Option<(Key, usize, Range<usize>)>,
    /// The last segment of the message came.
    pub complete: Option<Key>,
}

/// A broadcast (or direct message) this rank starts, with every segment to send.
#[derive(Debug)]
pub struct Started {
    pub key: Key,
    pub send: Vec<Outgoing>,
}

/// Writes one segment into `out` (cleared first): `list` for a first segment, `None` for the
/// others. Does not check consistency: that is `decode`'s job.
pub fn encode(h: &SegHeader, list: Option<&[Entry]>, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(HEADER_LEN + list.map_or(0, |l| 4 + l.len() * ENTRY_LEN) + payload.len());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(VERSION);
    let chain = if h.shape == Shape::Chain {
        FLAG_CHAIN
    } else {
        0
    };
    out.push(chain | if list.is_some() { FLAG_LIST } else { 0 });
    out.extend_from_slice(&h.root.to_le_bytes());
    out.extend_from_slice(&h.tag.to_le_bytes());
    out.extend_from_slice(&h.msg.to_le_bytes());
    out.extend_from_slice(&h.total_len.to_le_bytes());
    out.extend_from_slice(&h.seg.to_le_bytes());
    out.extend_from_slice(&h.nsegs.to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    if let Some(l) = list {
        out.extend_from_slice(&(l.len() as u32).to_le_bytes());
        for e in l {
            out.extend_from_slice(&e.rank.to_le_bytes());
            out.extend_from_slice(&e.priority.to_le_bytes());
            out.extend_from_slice(&e.seq.to_le_bytes());
            out.extend_from_slice(&e.before_total.to_le_bytes());
            out.extend_from_slice(&e.before_tag.to_le_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// Reads a segment; rejects anything that is not one of ours, consistent with itself (the
/// ranks are checked against the communicator by `Forwarder::handle`).
pub fn decode(b: &[u8], seg_bytes: usize) -> Result<Segment, Reject> {
    let seg_bytes = seg_bytes.max(1);
    if b.len() < HEADER_LEN {
        return Err(Reject::Short);
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    if u16::from_le_bytes([b[0], b[1]]) != MAGIC {
        return Err(Reject::BadMagic);
    }
    if b[2] != VERSION {
        return Err(Reject::BadVersion);
    }
    let flags = b[3];
    if flags & !(FLAG_LIST | FLAG_CHAIN) != 0 {
        return Err(Reject::Malformed);
    }
    let h = SegHeader {
        root: u32_at(4),
        tag: u32_at(8) as i32,
        msg: u64_at(12),
        total_len: u64_at(20),
        seg: u32_at(28),
        nsegs: u32_at(32),
        shape: if flags & FLAG_CHAIN != 0 {
            Shape::Chain
        } else {
            Shape::Binomial
        },
    };
    if h.nsegs != nsegs(h.total_len, seg_bytes) || h.seg >= h.nsegs {
        return Err(Reject::Malformed);
    }
    if (h.seg == 0) != (flags & FLAG_LIST != 0) {
        return Err(Reject::Malformed);
    }
    let (list, at) = if h.seg == 0 {
        if b.len() < HEADER_LEN + 4 {
            return Err(Reject::Short);
        }
        let n = u32_at(HEADER_LEN) as usize;
        if n == 0 {
            return Err(Reject::Malformed);
        }
        let end = n
            .checked_mul(ENTRY_LEN)
            .and_then(|l| l.checked_add(HEADER_LEN + 4))
            .ok_or(Reject::Malformed)?;
        if b.len() < end {
            return Err(Reject::Short);
        }
        let l = (0..n)
            .map(|i| {
                let at = HEADER_LEN + 4 + i * ENTRY_LEN;
                Entry {
                    rank: u32_at(at),
                    priority: u32_at(at + 4) as i32,
                    seq: u64_at(at + 8),
                    before_total: u64_at(at + 16),
                    before_tag: u64_at(at + 24),
                }
            })
            .collect();
        (Some(l), end)
    } else {
        (None, HEADER_LEN)
    };
    if b.len() - at != seg_len(h.total_len, h.seg, seg_bytes) {
        return Err(Reject::Malformed);
    }
    Ok(Segment {
        h,
        list,
        payload_at: at,
    })
}

/// Where the later segments of one message go on from this rank, learnt from its first
/// segment.
#[derive(Debug)]
struct Relay {
    /// The children and their priorities, in send order.
    to: Vec<(u32, i32)>,
    tag: i32,
    total_len: u64,
    /// The segment expected next.
    next: u32,
}

/// One rank's side of every dynamic broadcast on one communicator: as a root it numbers its
/// messages and each destination's sequence and cuts the data in segments; as a recipient it
/// passes segments on to its subtree and says what arrived. It keeps, per message passing
/// through it, only where the first segment went.
pub struct Forwarder {
    me: u32,
    ranks: u32,
    seg_bytes: usize,
    next_msg: u64,
    /// The next sequence number of this rank's messages to each destination.
    seq_to: HashMap<u32, u64>,
    /// Messages passing through: keyed by the rank they come from and the message.
    relays: HashMap<(u32, Key), Relay>,
}

impl Forwarder {
    /// Rank `me` of a communicator of `ranks` ranks; segments of at most `seg_bytes` payload
    /// bytes (at least 1; every rank of the communicator must use the same).
    pub fn new(me: u32, ranks: u32, seg_bytes: usize) -> Self {
        Forwarder {
            me,
            ranks,
            seg_bytes: seg_bytes.max(1),
            next_msg: 0,
            seq_to: HashMap::new(),
            relays: HashMap::new(),
        }
    }

    /// Payload bytes per segment.
    pub fn seg_bytes(&self) -> usize {
        self.seg_bytes
    }

    /// The first segment to each child of a holder of `sub` (its subtree list, in tree
    /// order): (child, its priority, the bytes), in send order.
    fn firsts(h: &SegHeader, sub: &[Entry], payload: &[u8]) -> Vec<(u32, i32, Arc<[u8]>)> {
        let mut buf = Vec::new();
        let mut list = Vec::new();
        h.shape
            .children(sub.len())
            .into_iter()
            .map(|(c, range)| {
                list.clear();
                list.push(sub[c]);
                list.extend_from_slice(&sub[range]);
                encode(h, Some(&list), payload, &mut buf);
                (sub[c].rank, sub[c].priority, Arc::from(&buf[..]))
            })
            .collect()
    }

    /// Starts a broadcast of `data` with `tag` to `list` (in tree order: algo::dbcast::order's
    /// output; distinct ranks, not this one; at least one — the caller checks) over a tree of
    /// `shape`, numbering it and each destination's seq; `before(rank) -> (before_total,
    /// before_tag)` gives the plain counts. Returns every segment for every child of the root
    /// (shape.children(list.len())), the first children first (send order), each child's
    /// segments in order.
    pub fn start(
        &mut self,
        list: &[Recipient],
        shape: Shape,
        tag: i32,
        data: &[u8],
        before: &dyn Fn(u32) -> (u64, u64),
    ) -> Started {
        debug_assert!(!list.is_empty(), "a dynamic broadcast to nobody");
        debug_assert!(
            list.iter()
                .all(|r| r.rank != self.me && r.rank < self.ranks),
            "a dynamic broadcast to its root or out of the communicator"
        );
        let key = Key {
            root: self.me,
            msg: self.next_msg,
        };
        self.next_msg += 1;
        let entries: Vec<Entry> = list
            .iter()
            .map(|r| {
                let s = self.seq_to.entry(r.rank).or_insert(0);
                let seq = *s;
                *s += 1;
                let (before_total, before_tag) = before(r.rank);
                Entry {
                    rank: r.rank,
                    priority: r.priority,
                    seq,
                    before_total,
                    before_tag,
                }
            })
            .collect();
        let total = data.len() as u64;
        let h = SegHeader {
            root: self.me,
            tag,
            msg: key.msg,
            total_len: total,
            seg: 0,
            nsegs: nsegs(total, self.seg_bytes),
            shape,
        };
        // The later segments carry no list: one copy each, shared by every child.
        let mut buf = Vec::new();
        let later: Vec<Arc<[u8]>> = (1..h.nsegs)
            .map(|s| {
                let at = s as usize * self.seg_bytes;
                let len = seg_len(total, s, self.seg_bytes);
                encode(
                    &SegHeader { seg: s, ..h },
                    None,
                    &data[at..at + len],
                    &mut buf,
                );
                Arc::from(&buf[..])
            })
            .collect();
        let first = &data[..seg_len(total, 0, self.seg_bytes)];
        let mut send = Vec::with_capacity(list.len().min(64) * (1 + later.len()));
        for (to, priority, bytes) in Self::firsts(&h, &entries, first) {
            send.push(Outgoing {
                to,
                priority,
                bytes,
            });
            send.extend(later.iter().map(|b| Outgoing {
                to,
                priority,
                bytes: b.clone(),
            }));
        }
        Started { key, send }
    }

    /// A message of this root to one rank (a "direct" message: a broadcast with one recipient
    /// and an empty subtree), numbered in the same sequence. Same as start with a one-entry
    /// list.
    pub fn direct(
        &mut self,
        to: u32,
        priority: i32,
        tag: i32,
        data: &[u8],
        before: (u64, u64),
    ) -> Started {
        let list = [Recipient { rank: to, priority }];
        self.start(&list, Shape::Binomial, tag, data, &move |_| before)
    }

    /// A segment from `from`: passes it on to this rank's children (first segment: children
    /// in the carried shape over the carried subtree list, each child's first segment
    /// carrying the child's entry and the child's trimmed sublist, at the child's priority;
    /// later segments: the same children, same priorities), and says what is for this rank
    /// (every rank reached is a recipient).
    ///
    /// Rejected (nothing changes): a segment that does not decode, a sender, root or rank of
    /// the list outside the communicator, a list whose entry 0 is not this rank or whose
    /// subtree names this rank, the sender, the root or a rank twice, a second first segment
    /// of a message in flight, a later segment without its first (`WrongSeq`) or out of
    /// order or disagreeing with it.
    pub fn handle(&mut self, from: u32, bytes: Arc<[u8]>) -> Result<Handled, Reject> {
        let s = decode(&bytes, self.seg_bytes)?;
        let h = s.h;
        if from >= self.ranks || from == self.me || h.root >= self.ranks || h.root == self.me {
            return Err(Reject::Malformed);
        }
        let key = Key {
            root: h.root,
            msg: h.msg,
        };
        let payload = s.payload_at..bytes.len();
        let mut out = Handled::default();
        match s.list {
            Some(list) => {
                let (mine, sub) = list.split_first().expect("decode: at least one entry");
                if mine.rank != self.me || self.relays.contains_key(&(from, key)) {
                    return Err(Reject::Malformed);
                }
                let mut seen = HashSet::with_capacity(sub.len());
                for e in sub {
                    if e.rank >= self.ranks
                        || e.rank == self.me
                        || e.rank == from
                        || e.rank == h.root
                        || !seen.insert(e.rank)
                    {
                        return Err(Reject::Malformed);
                    }
                }
                let mut to = Vec::new();
                for (rank, priority, bytes) in Self::firsts(&h, sub, &bytes[payload.clone()]) {
                    to.push((rank, priority));
                    out.send.push(Outgoing {
                        to: rank,
                        priority,
                        bytes,
                    });
                }
                out.arrived = Some(Arrived {
                    key,
                    tag: h.tag,
                    seq: mine.seq,
                    len: h.total_len,
                    before_total: mine.before_total,
                    before_tag: mine.before_tag,
                });
                if h.nsegs > 1 {
                    self.relays.insert(
                        (from, key),
                        Relay {
                            to,
                            tag: h.tag,
                            total_len: h.total_len,
                            next: 1,
                        },
                    );
                }
            }
            None => {
                let Some(r) = self.relays.get_mut(&(from, key)) else {
                    return Err(Reject::WrongSeq);
                };
                if h.seg != r.next || h.tag != r.tag || h.total_len != r.total_len {
                    return Err(Reject::Malformed);
                }
                out.send.extend(r.to.iter().map(|&(to, priority)| Outgoing {
                    to,
                    priority,
                    bytes: bytes.clone(),
                }));
                r.next += 1;
                if r.next == h.nsegs {
                    self.relays.remove(&(from, key));
                }
            }
        }
        out.data = Some((key, h.seg as usize * self.seg_bytes, payload));
        if h.seg + 1 == h.nsegs {
            out.complete = Some(key);
        }
        Ok(out)
    }

    /// Messages passing through this rank whose later segments have not all come.
    pub fn relays_in_flight(&self) -> usize {
        self.relays.len()
    }

    /// This root's next sequence number to `rank` (how many messages it has numbered for it).
    pub fn sent_to(&self, rank: u32) -> u64 {
        self.seq_to.get(&rank).copied().unwrap_or(0)
    }
}

/// Outgoing messages waiting for the link: highest priority first, FIFO among equals (so
/// segments of one message, which share a priority, keep their order).
///
/// Messages of different priorities to the same destination may be reordered: a later,
/// more urgent message overtakes an earlier one. That is fine: every destination orders one
/// root's messages by their `seq` (`Matcher`), and relays are keyed per (sender, message), so
/// only the segments of one message must keep their order, and they share a priority.
#[derive(Default)]
pub struct OutQueue {
    by_prio: BTreeMap<i32, VecDeque<Outgoing>>,
    len: usize,
}

impl OutQueue {
    /// Queues `o` behind the messages of its priority.
    pub fn push(&mut self, o: Outgoing) {
        self.by_prio.entry(o.priority).or_default().push_back(o);
        self.len += 1;
    }

    /// The next message for the link: the oldest of the highest priority.
    pub fn pop(&mut self) -> Option<Outgoing> {
        let mut e = self.by_prio.last_entry()?;
        let o = e.get_mut().pop_front().expect("no empty class is kept");
        if e.get().is_empty() {
            e.remove();
        }
        self.len -= 1;
        Some(o)
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn accepts(w: &Want, m: &Arrived) -> bool {
    w.source.map_or(true, |s| s == m.key.root) && w.tag.map_or(true, |t| t == m.tag)
}

/// Which posted receive takes which dynamic broadcast, as MPI matches point-to-point
/// messages, with the root's plain messages interleaved.
///
/// A receive names a source (or any) and a tag (or any); posted receives are tried in the
/// order they were posted, messages in the order they became visible. One root's messages to
/// this rank become visible in the order the root numbered them (`seq`), whatever paths they
/// took: one that overtook an earlier one waits, unseen, until the earlier one has come.
///
/// The root also sends plain messages (host MPI point-to-point) to this rank, which MPI
/// matches by itself; each message here carries how many plain ones the root had sent to
/// this rank before it, in total and with its tag, and the transport reports every plain
/// message received. A message m of root r is *eligible* for a receive w when every plain
/// message that r sent before m and that w could also take has been received: w's tag is t
/// and the plain messages of r with tag t received reach m's `before_tag`, or w takes any tag
/// and all plain messages of r received reach m's `before_total`. (The counts cannot tell
/// which plain messages came: with any tag, a plain message sent after m and taken by another
/// receive counts too.)
///
/// The rule: a receive w may take a visible unmatched message m of root r when w accepts m,
/// m is eligible for w, and no earlier visible unmatched message of r that w accepts exists
/// (that one blocks it: a plain message may still come in between). A message that becomes
/// visible or eligible goes to the earliest-posted receive that may take it; a receive that
/// is posted takes the earliest message it may take. As the root's counts only grow along its
/// sequence, a receive not eligible for a message is not eligible for any later one of that
/// root that it accepts either: so the blocking rule only guards against inconsistent counts,
/// and taking one message never lets another receive take one (which is why `post` and
/// `take` report nothing else).
#[derive(Default)]
pub struct Matcher {
    /// Per root, the sequence number of the next message to become visible.
    next_seq: FxHashMap<u32, u64>,
    /// Arrived but not visible yet (an earlier one of the same root has not come).
    held: BTreeMap<(u32, u64), Arrived>,
    /// Visible and not taken by a receive, in the order they became visible (each root's in
    /// seq order).
    unmatched: VecDeque<Arrived>,
    /// Receives not matched yet, in the order they were posted.
    posted: VecDeque<(RecvId, Want)>,
    /// Plain messages received per root (counted at every point-to-point receive of an
    /// enabled communicator: a cheap hash).
    plain_total: FxHashMap<u32, u64>,
    /// Plain messages received per (root, tag).
    plain_tag: FxHashMap<(u32, i32), u64>,
}

impl Matcher {
    fn eligible(&self, w: &Want, m: &Arrived) -> bool {
        let r = m.key.root;
        match w.tag {
            Some(t) => self.plain_tag.get(&(r, t)).copied().unwrap_or(0) >= m.before_tag,
            None => self.plain_total.get(&r).copied().unwrap_or(0) >= m.before_total,
        }
    }

    /// Whether `w` may take the unmatched message at `i` (see the rule above).
    fn may_take(&self, w: &Want, i: usize) -> bool {
        let m = &self.unmatched[i];
        accepts(w, m)
            && self.eligible(w, m)
            && !self
                .unmatched
                .iter()
                .take(i)
                .any(|e| e.key.root == m.key.root && accepts(w, e))
    }

    /// The index of the first unmatched message a receive of `w` may take.
    fn first_for(&self, w: &Want) -> Option<usize> {
        // Roots whose earliest accepted message is not eligible: their later ones are
        // blocked.
        let mut blocked = HashSet::new();
        for (i, m) in self.unmatched.iter().enumerate() {
            if !accepts(w, m) || blocked.contains(&m.key.root) {
                continue;
            }
            if self.eligible(w, m) {
                return Some(i);
            }
            blocked.insert(m.key.root);
        }
        None
    }

    /// Pairs the unmatched messages of `root` from index `from` on, in visible order, each
    /// with the earliest-posted receive that may take it.
    fn settle(&mut self, root: u32, from: usize) -> Vec<(RecvId, Arrived)> {
        let mut out = Vec::new();
        let mut i = from;
        while i < self.unmatched.len() {
            if self.unmatched[i].key.root == root {
                if let Some(j) =
                    (0..self.posted.len()).find(|&j| self.may_take(&self.posted[j].1, i))
                {
                    let (id, _) = self.posted.remove(j).expect("found");
                    let m = self.unmatched.remove(i).expect("in range");
                    out.push((id, m));
                    continue;
                }
            }
            i += 1;
        }
        out
    }

    /// Posts a receive: the first visible, unmatched message it accepts and for which it is
    /// eligible (in visible order, not blocked by an earlier one of its root), taken at once;
    /// else queued.
    pub fn post(&mut self, id: RecvId, want: Want) -> Option<Arrived> {
        if let Some(i) = self.first_for(&want) {
            return self.unmatched.remove(i);
        }
        self.posted.push_back((id, want));
        None
    }

    /// Withdraws a posted receive that has not matched (a freed or cancelled request); false
    /// if it was not waiting.
    pub fn withdraw(&mut self, id: RecvId) -> bool {
        match self.posted.iter().position(|(r, _)| *r == id) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// A message reached this rank: the (receive, message) pairs this makes (it and later
    /// ones of its root that become visible), trying posted receives in post order, each
    /// visible message against the first posted receive that accepts it and is eligible. A
    /// message whose seq was already seen is ignored.
    pub fn arrive(&mut self, m: Arrived) -> Vec<(RecvId, Arrived)> {
        let root = m.key.root;
        let next = self.next_seq.get(&root).copied().unwrap_or(0);
        if m.seq < next || self.held.contains_key(&(root, m.seq)) {
            return Vec::new();
        }
        self.held.insert((root, m.seq), m);
        let first_new = self.unmatched.len();
        let mut next = next;
        while let Some(v) = self.held.remove(&(root, next)) {
            self.unmatched.push_back(v);
            next += 1;
        }
        self.next_seq.insert(root, next);
        self.settle(root, first_new)
    }

    /// A plain message from `root` with `tag` was received by some receive: counts it, and
    /// returns the pairs that became possible (messages that were not eligible before).
    pub fn plain_received(&mut self, root: u32, tag: i32) -> Vec<(RecvId, Arrived)> {
        *self.plain_total.entry(root).or_insert(0) += 1;
        *self.plain_tag.entry((root, tag)).or_insert(0) += 1;
        self.settle(root, 0)
    }

    /// The transport could not give `m` to the receive it was paired with (that receive was
    /// completed by a plain message first): `m` goes back to the front of the unmatched
    /// visible messages (its place in the order), and the pairs it now makes with other
    /// posted receives are returned.
    ///
    /// Its place: right after the last unmatched message of its root with a smaller seq, or
    /// the very front if there is none; so each root's messages stay in seq order (the order
    /// across roots is free in MPI).
    pub fn unpair(&mut self, m: Arrived) -> Vec<(RecvId, Arrived)> {
        let root = m.key.root;
        let at = self
            .unmatched
            .iter()
            .rposition(|e| e.key.root == root && e.seq < m.seq)
            .map_or(0, |i| i + 1);
        self.unmatched.insert(at, m);
        self.settle(root, at)
    }

    /// The first visible message a receive of `want` would take (MPI_Iprobe), eligible.
    pub fn probe(&self, want: Want) -> Option<Arrived> {
        self.first_for(&want).map(|i| self.unmatched[i])
    }

    /// Takes the message `probe` found (a receive posted right after the probe).
    pub fn take(&mut self, key: Key) -> Option<Arrived> {
        let i = self.unmatched.iter().position(|m| m.key == key)?;
        self.unmatched.remove(i)
    }

    /// Visible unmatched messages that a posted receive accepts but is not eligible for
    /// (waiting for plain messages): for the transport's stall diagnosis. One pair per such
    /// message, with the earliest-posted such receive, in visible order.
    pub fn blocked(&self) -> Vec<(RecvId, Arrived)> {
        self.unmatched
            .iter()
            .filter_map(|m| {
                self.posted
                    .iter()
                    .find(|(_, w)| accepts(w, m) && !self.eligible(w, m))
                    .map(|(id, _)| (*id, *m))
            })
            .collect()
    }

    /// Messages that came and no receive has taken (visible or not).
    pub fn unmatched(&self) -> usize {
        self.unmatched.len() + self.held.len()
    }

    /// Receives posted and not matched.
    pub fn waiting(&self) -> usize {
        self.posted.len()
    }
}

#[cfg(test)]
mod tests;
