//! forward: multicasts whose routing travels with them, hop by hop over point-to-point
//! messages (the non-blocking multicast of "A Scalable Non-blocking Multicast Scheme for
//! Distributed DAG Scheduling", ICCS 2009). Sans-IO: bytes and ranks in, messages to send and
//! what arrived for this rank out; the transport (`transport::forward`) carries them over the
//! host MPI on a communicator of mpicast's own, which is reliable and keeps the order of the
//! messages of one sender to one receiver.
//!
//! A message is cut into segments of at most `seg_bytes` payload bytes, so that a rank on the
//! way forwards the first segments while the later ones are still coming (pipelining). The
//! first segment of each hop carries the destinations of the subtree it enters, each with the
//! sequence number the root gave it for that destination, so that a destination delivers one
//! root's multicasts in the order they were sent, whatever paths they took. Later segments
//! carry no list: a rank on the way remembers, per message, where the first one went
//! (`Relay`), and the transport's links keep every sender's segments in order.
//!
//! A multicast whose data goes once by the communicator's IP multicast group
//! (`MPICAST_IMCAST_TRANSPORT`, see `transport::forward`) travels here as an *envelope*: one
//! first segment without payload, flagged, that names the root's message number, tag, length
//! and destinations, and follows the same routes; the data comes by datagrams.
//!
//! Layout, little-endian. Every segment: magic (u16) version (u8) flags (u8: 1 destinations
//! follow, 2 envelope), root (u32), tag (i32), message number at the root (u64), total length
//! (u64), segment number (u32), number of segments (u32): 36 bytes. The first segment then:
//! the count of destinations (u32) and per destination its rank (u32) and its sequence number
//! from this root (u64). Then the payload (none in an envelope).

use super::packet::Reject;
use crate::algo::prefix::{self, Route, RoutingTable, Topology};
use std::collections::HashMap;
use std::sync::Arc;

const MAGIC: u16 = 0x4d46; // "FM"
const VERSION: u8 = 1;
/// Bytes of every segment's header.
pub const HEADER_LEN: usize = 36;
const DEST_LEN: usize = 12;
const FLAG_DESTS: u8 = 1;
const FLAG_ENVELOPE: u8 = 2;

/// One destination of a multicast: its rank and the number of this multicast among the ones
/// its root sent to it (0, 1, 2, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dest {
    pub rank: u32,
    pub seq: u64,
}

/// The header of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegHeader {
    pub root: u32,
    pub tag: i32,
    /// The root's number of this multicast (all its multicasts, on this communicator).
    pub msg: u64,
    pub total_len: u64,
    pub seg: u32,
    pub nsegs: u32,
    /// An envelope: the data goes by IP multicast (one segment, no payload).
    pub envelope: bool,
}

/// The destinations `ranks` with their sequence numbers from `seqs`.
fn with_seqs(ranks: &[u32], seqs: &HashMap<u32, u64>) -> Vec<Dest> {
    ranks
        .iter()
        .map(|d| Dest {
            rank: *d,
            seq: seqs[d],
        })
        .collect()
}

/// Number of segments of a `len`-byte message (an empty message is one empty segment).
pub fn nsegs(len: u64, seg_bytes: usize) -> u32 {
    let n = len.div_ceil(seg_bytes.max(1) as u64).max(1);
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Writes one segment: `dests` for a first segment, `None` for the others.
pub fn encode(h: &SegHeader, dests: Option<&[Dest]>, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(VERSION);
    out.push(
        if dests.is_some() { FLAG_DESTS } else { 0 } | if h.envelope { FLAG_ENVELOPE } else { 0 },
    );
    out.extend_from_slice(&h.root.to_le_bytes());
    out.extend_from_slice(&h.tag.to_le_bytes());
    out.extend_from_slice(&h.msg.to_le_bytes());
    out.extend_from_slice(&h.total_len.to_le_bytes());
    out.extend_from_slice(&h.seg.to_le_bytes());
    out.extend_from_slice(&h.nsegs.to_le_bytes());
    if let Some(ds) = dests {
        out.extend_from_slice(&(ds.len() as u32).to_le_bytes());
        for d in ds {
            out.extend_from_slice(&d.rank.to_le_bytes());
            out.extend_from_slice(&d.seq.to_le_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// A segment as received: its header, the destinations (first segments), and where its
/// payload starts in the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub h: SegHeader,
    pub dests: Option<Vec<Dest>>,
    pub payload_at: usize,
}

/// Reads a segment; rejects anything that is not one of ours, consistent with itself.
pub fn decode(b: &[u8], seg_bytes: usize) -> Result<Segment, Reject> {
    if b.len() < HEADER_LEN {
        return Err(Reject::Short);
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    if u16::from_le_bytes([b[0], b[1]]) != MAGIC || b[2] != VERSION {
        return Err(Reject::BadKind);
    }
    let flags = b[3];
    if flags & !(FLAG_DESTS | FLAG_ENVELOPE) != 0 {
        return Err(Reject::Malformed);
    }
    let h = SegHeader {
        root: u32_at(4),
        tag: u32_at(8) as i32,
        msg: u64_at(12),
        total_len: u64_at(20),
        seg: u32_at(28),
        nsegs: u32_at(32),
        envelope: flags & FLAG_ENVELOPE != 0,
    };
    let want_nsegs = if h.envelope {
        1
    } else {
        nsegs(h.total_len, seg_bytes)
    };
    if h.nsegs != want_nsegs || h.seg >= h.nsegs {
        return Err(Reject::Malformed);
    }
    let (dests, at) = match flags & FLAG_DESTS {
        0 => (None, HEADER_LEN),
        _ => {
            if b.len() < HEADER_LEN + 4 {
                return Err(Reject::Short);
            }
            let n = u32_at(HEADER_LEN) as usize;
            let end = n
                .checked_mul(DEST_LEN)
                .and_then(|l| l.checked_add(HEADER_LEN + 4))
                .ok_or(Reject::Malformed)?;
            if b.len() < end {
                return Err(Reject::Short);
            }
            let ds = (0..n)
                .map(|i| {
                    let at = HEADER_LEN + 4 + i * DEST_LEN;
                    Dest {
                        rank: u32_at(at),
                        seq: u64_at(at + 4),
                    }
                })
                .collect();
            (Some(ds), end)
        }
    };
    if (h.seg == 0) != dests.is_some() {
        return Err(Reject::Malformed);
    }
    let want = if h.envelope {
        0
    } else {
        seg_len(h.total_len, h.seg, seg_bytes)
    };
    if b.len() - at != want {
        return Err(Reject::Malformed);
    }
    Ok(Segment {
        h,
        dests,
        payload_at: at,
    })
}

/// Payload bytes of segment `seg` of a `total`-byte message.
pub fn seg_len(total: u64, seg: u32, seg_bytes: usize) -> usize {
    let start = u64::from(seg) * seg_bytes as u64;
    total.saturating_sub(start).min(seg_bytes as u64) as usize
}

/// A message for the transport to send: `to` gets `bytes` (shared between the hops that send
/// the same segment).
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub to: u32,
    pub bytes: Arc<[u8]>,
}

/// What a received segment means for this rank.
#[derive(Debug, Default)]
pub struct Handled {
    /// Segments to pass on (to the next hops).
    pub send: Vec<Outgoing>,
    /// A multicast for this rank has begun: its first segment came (root, tag, sequence
    /// number from that root, length).
    pub arrived: Option<Arrived>,
    /// Payload for this rank: message (root, msg), offset, bytes.
    pub data: Option<(MsgKey, usize, std::ops::Range<usize>)>,
    /// The last segment of a message for this rank came.
    pub complete: Option<MsgKey>,
    /// The multicast for this rank (`arrived`) is an envelope: its data comes by IP
    /// multicast, and neither `data` nor `complete` are set.
    pub envelope: bool,
}

/// A multicast that reached this rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrived {
    pub key: MsgKey,
    pub tag: i32,
    pub seq: u64,
    pub len: u64,
}

/// A multicast, everywhere: its root and the root's number for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MsgKey {
    pub root: u32,
    pub msg: u64,
}

/// Where the segments of one message go on from this rank, learnt from its first segment.
#[derive(Debug)]
struct Relay {
    to: Vec<u32>,
    deliver: bool,
    left: u32,
}

/// One rank's side of every multicast on one communicator: as a root it numbers its messages
/// and cuts them in segments; on the way it passes segments on by the stage rule; as a
/// destination it says what arrived. It keeps per message in flight through it only where
/// the first segment went.
pub struct Forwarder {
    me: u32,
    topo: Arc<Topology>,
    table: RoutingTable,
    route: Route,
    seg_bytes: usize,
    next_msg: u64,
    /// The next sequence number of this rank's multicasts to each destination.
    seq_to: HashMap<u32, u64>,
    /// Messages passing through: keyed by the rank they come from and the message.
    relays: HashMap<(u32, MsgKey), Relay>,
}

/// A multicast this rank starts, with the first messages to send.
#[derive(Debug)]
pub struct Started {
    pub key: MsgKey,
    pub send: Vec<Outgoing>,
}

impl Forwarder {
    pub fn new(
        me: u32,
        topo: Arc<Topology>,
        table: RoutingTable,
        route: Route,
        seg_bytes: usize,
    ) -> Self {
        Forwarder {
            me,
            topo,
            table,
            route,
            seg_bytes: seg_bytes.max(1),
            next_msg: 0,
            seq_to: HashMap::new(),
            relays: HashMap::new(),
        }
    }

    pub fn seg_bytes(&self) -> usize {
        self.seg_bytes
    }

    /// The topology IDs the routes follow.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Numbers a multicast of this rank to `dests`: its key, and its sequence number to each
    /// destination.
    fn number(&mut self, dests: &[u32]) -> (MsgKey, HashMap<u32, u64>) {
        let key = MsgKey {
            root: self.me,
            msg: self.next_msg,
        };
        self.next_msg += 1;
        let seqs = dests
            .iter()
            .map(|&d| {
                let s = self.seq_to.entry(d).or_insert(0);
                let seq = *s;
                *s += 1;
                (d, seq)
            })
            .collect();
        (key, seqs)
    }

    /// Starts a multicast whose data goes by IP multicast: numbered as `start` numbers, it
    /// returns one envelope per first hop. The datagrams carry the key's message number.
    pub fn start_envelope(&mut self, dests: &[u32], tag: i32, len: u64) -> Started {
        let (key, seqs) = self.number(dests);
        let fwd = prefix::forward(&self.topo, &self.table, self.route, None, dests);
        let h = SegHeader {
            root: self.me,
            tag,
            msg: key.msg,
            total_len: len,
            seg: 0,
            nsegs: 1,
            envelope: true,
        };
        let mut buf = Vec::new();
        let send = fwd
            .hops
            .iter()
            .map(|hop| {
                let ds = with_seqs(&hop.dests, &seqs);
                encode(&h, Some(&ds), &[], &mut buf);
                Outgoing {
                    to: hop.to,
                    bytes: Arc::from(&buf[..]),
                }
            })
            .collect();
        Started { key, send }
    }

    /// Starts a multicast of `data` with `tag` to `dests` (distinct ranks, not this one:
    /// the caller checks). Every segment of every first hop is returned at once.
    pub fn start(&mut self, dests: &[u32], tag: i32, data: &[u8]) -> Started {
        let (key, seqs) = self.number(dests);
        let fwd = prefix::forward(&self.topo, &self.table, self.route, None, dests);
        let total = data.len() as u64;
        let h = SegHeader {
            root: self.me,
            tag,
            msg: key.msg,
            total_len: total,
            seg: 0,
            nsegs: nsegs(total, self.seg_bytes),
            envelope: false,
        };
        let mut send = Vec::new();
        let mut buf = Vec::new();
        // First segments: one per hop, each with its subtree's destinations.
        let first = &data[..seg_len(total, 0, self.seg_bytes)];
        for hop in &fwd.hops {
            let ds = with_seqs(&hop.dests, &seqs);
            encode(&h, Some(&ds), first, &mut buf);
            send.push(Outgoing {
                to: hop.to,
                bytes: Arc::from(&buf[..]),
            });
        }
        // The others: one copy each, sent to every hop.
        for s in 1..h.nsegs {
            let start = s as usize * self.seg_bytes;
            let len = seg_len(total, s, self.seg_bytes);
            encode(
                &SegHeader { seg: s, ..h },
                None,
                &data[start..start + len],
                &mut buf,
            );
            let bytes: Arc<[u8]> = Arc::from(&buf[..]);
            for hop in &fwd.hops {
                send.push(Outgoing {
                    to: hop.to,
                    bytes: bytes.clone(),
                });
            }
        }
        Started { key, send }
    }

    /// Handles a segment `bytes` that came from rank `from`.
    pub fn handle(&mut self, from: u32, bytes: Arc<[u8]>) -> Result<Handled, Reject> {
        let s = decode(&bytes, self.seg_bytes)?;
        let h = s.h;
        if from >= self.topo.ranks() || from == self.me || h.root >= self.topo.ranks() {
            return Err(Reject::Malformed);
        }
        let key = MsgKey {
            root: h.root,
            msg: h.msg,
        };
        let mut out = Handled::default();
        let payload = s.payload_at..bytes.len();
        let deliver;
        match s.dests {
            Some(ds) => {
                let ranks: Vec<u32> = ds.iter().map(|d| d.rank).collect();
                if ranks.iter().any(|&r| r >= self.topo.ranks()) {
                    return Err(Reject::Malformed);
                }
                let fwd = prefix::forward(&self.topo, &self.table, self.route, Some(from), &ranks);
                let seqs: HashMap<u32, u64> = ds.iter().map(|d| (d.rank, d.seq)).collect();
                let mut buf = Vec::new();
                for hop in &fwd.hops {
                    let sub = with_seqs(&hop.dests, &seqs);
                    encode(&h, Some(&sub), &bytes[payload.clone()], &mut buf);
                    out.send.push(Outgoing {
                        to: hop.to,
                        bytes: Arc::from(&buf[..]),
                    });
                }
                deliver = fwd.deliver;
                if deliver {
                    out.arrived = Some(Arrived {
                        key,
                        tag: h.tag,
                        seq: seqs[&self.me],
                        len: h.total_len,
                    });
                }
                if h.nsegs > 1 {
                    self.relays.insert(
                        (from, key),
                        Relay {
                            to: fwd.hops.iter().map(|hp| hp.to).collect(),
                            deliver,
                            left: h.nsegs - 1,
                        },
                    );
                }
            }
            None => {
                let Some(r) = self.relays.get_mut(&(from, key)) else {
                    return Err(Reject::WrongSeq);
                };
                for &to in &r.to {
                    out.send.push(Outgoing {
                        to,
                        bytes: bytes.clone(),
                    });
                }
                deliver = r.deliver;
                r.left -= 1;
                if r.left == 0 {
                    self.relays.remove(&(from, key));
                }
            }
        }
        if deliver && h.envelope {
            out.envelope = true;
        } else if deliver {
            let offset = h.seg as usize * self.seg_bytes;
            out.data = Some((key, offset, payload));
            if h.seg + 1 == h.nsegs {
                out.complete = Some(key);
            }
        }
        Ok(out)
    }

    /// Messages passing through this rank whose later segments have not all come.
    pub fn relays_in_flight(&self) -> usize {
        self.relays.len()
    }

    /// The messages passing through this rank, for diagnostics: the rank each comes from,
    /// its key, the ranks it goes on to, and how many of its segments are still to come.
    pub fn relays(&self) -> impl Iterator<Item = (u32, MsgKey, &[u32], u32)> + '_ {
        self.relays
            .iter()
            .map(|((from, key), r)| (*from, *key, r.to.as_slice(), r.left))
    }
}

#[cfg(test)]
mod tests;
