//! release: the barrier's single release datagram and its repair.
//!
//! The root multicasts one Release per barrier; it is the one datagram whose loss nothing else
//! exposes, so a waiting rank that hears nothing asks the root's `Responder` (a per-process
//! thread that outlives the barrier on the root) by unicast ReleaseQuery, with backoff.
//!
//! The same responder keeps a copy of an eager broadcast whose root returned as soon as its
//! datagrams were out (`hold`), and answers a receiver's RepairQuery with the fragments it
//! lists, by unicast, until the root has every acknowledgement (`drop_held`).

use std::collections::HashMap;
use std::sync::Arc;

use super::packet::{self, Header, Kind, Reject};
use super::receiver::Outcome;
use super::{backoff, Ctx, Nanos, Params};

fn header(ctx: &Ctx, kind: Kind, seq: u64, root: u32, frag: u32) -> Header {
    Header {
        kind,
        job: ctx.job,
        comm: ctx.comm,
        seq,
        root,
        frag,
        nfrags: 0,
        total_len: 0,
    }
}

/// The release datagram of barrier `seq`.
pub fn encode_release(ctx: &Ctx, seq: u64, root: u32, out: &mut Vec<u8>) {
    packet::encode(ctx, &header(ctx, Kind::Release, seq, root, 0), &[], out);
}

/// A non-root rank waiting for the release of barrier `seq`.
#[derive(Debug)]
pub struct ReleaseWaiter {
    ctx: Ctx,
    seq: u64,
    root: u32,
    me: u32,
    done: bool,
    rto: Nanos,
    rto_max: Nanos,
    query_at: Nanos,
    started: Nanos,
    stall_timeout: Nanos,
}

impl ReleaseWaiter {
    pub fn new(ctx: &Ctx, seq: u64, root: u32, me: u32, params: &Params, now: Nanos) -> Self {
        ReleaseWaiter {
            ctx: ctx.clone(),
            seq,
            root,
            me,
            done: false,
            rto: params.nack_initial(),
            rto_max: params.nack_max(),
            query_at: now.saturating_add(params.nack_initial()),
            started: now,
            stall_timeout: params.stall_timeout,
        }
    }

    /// `Accepted` means released: the barrier is complete for this rank.
    pub fn handle_datagram(&mut self, _now: Nanos, dgram: &[u8]) -> Outcome {
        let h = match packet::decode(&self.ctx, dgram) {
            Ok((h, _)) => h,
            Err(r) => return Outcome::Rejected(r),
        };
        if h.seq < self.seq {
            Outcome::Stale
        } else if h.kind == Kind::Release && h.seq == self.seq && h.root == self.root {
            if self.done {
                Outcome::Duplicate
            } else {
                self.done = true;
                Outcome::Accepted
            }
        } else {
            Outcome::Foreign
        }
    }

    /// A ReleaseQuery for the root's responder (UDP unicast), once a query is due.
    /// The header's `frag` field names the asking rank, for the root's diagnostics.
    pub fn poll_query(&mut self, now: Nanos, out: &mut Vec<u8>) -> bool {
        if self.done || now < self.query_at {
            return false;
        }
        let h = header(&self.ctx, Kind::ReleaseQuery, self.seq, self.root, self.me);
        packet::encode(&self.ctx, &h, &[], out);
        self.rto = backoff(self.rto, self.rto_max);
        self.query_at = now.saturating_add(self.rto);
        true
    }

    /// Nothing to do: `poll_query` checks its own deadline. Present for the uniform driver loop.
    pub fn handle_timeout(&mut self, _now: Nanos) {}

    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.done {
            return None;
        }
        let stall = self.started.saturating_add(self.stall_timeout);
        Some(self.query_at.min(stall))
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    pub fn stalled(&self, now: Nanos) -> bool {
        !self.done && now.saturating_sub(self.started) >= self.stall_timeout
    }
}

/// A RepairQuery for fragments `missing` of broadcast `seq` from `root`, asked by rank `me`
/// (at most `MAX_NACK_MISSING` fragments are listed; the rest wait for the next query).
pub fn encode_repair_query(
    ctx: &Ctx,
    seq: u64,
    root: u32,
    me: u32,
    missing: &[u32],
    out: &mut Vec<u8>,
) {
    let n = missing.len().min(super::MAX_NACK_MISSING);
    let mut payload = Vec::with_capacity(4 * n);
    for f in &missing[..n] {
        payload.extend_from_slice(&f.to_le_bytes());
    }
    packet::encode(
        ctx,
        &header(ctx, Kind::RepairQuery, seq, root, me),
        &payload,
        out,
    );
}

/// Payload bytes of fragments sent in answer to one RepairQuery, at most (at least one
/// fragment): what a receiver's unicast socket takes at once without overflowing.
pub const REPAIR_ANSWER_BYTES: usize = 128 << 10;

#[derive(Debug)]
struct Registered {
    ctx: Ctx,
    root: u32,
    released: Option<u64>,
    held: Option<Held>,
}

/// The copy of an eager broadcast that its root left before every receiver acknowledged it.
#[derive(Debug)]
struct Held {
    seq: u64,
    data: Arc<[u8]>,
    frag: usize,
}

/// Answers the queries of every communicator this process belongs to: ReleaseQuery for the
/// barriers it roots (rank 0), RepairQuery for the eager broadcast it holds a copy of.
/// Pure: the responder thread owns one and feeds it.
#[derive(Debug, Default)]
pub struct Responder {
    comms: HashMap<u32, Registered>,
}

impl Responder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts answering for communicator `ctx.comm`, in which this process is rank `root`
    /// (the root of the barriers it answers for when that is 0, and of the broadcasts it
    /// holds).
    pub fn register(&mut self, ctx: &Ctx, root: u32) {
        self.comms.insert(
            ctx.comm,
            Registered {
                ctx: ctx.clone(),
                root,
                released: None,
                held: None,
            },
        );
    }

    /// Keeps `data`, broadcast `seq` of `comm` from this process, cut in `frag`-byte
    /// fragments, to answer repair queries for it (one broadcast per communicator at a time:
    /// a newer one replaces it).
    pub fn hold(&mut self, comm: u32, seq: u64, data: Arc<[u8]>, frag: usize) {
        if let Some(r) = self.comms.get_mut(&comm) {
            r.held = Some(Held { seq, data, frag });
        }
    }

    /// Every receiver has broadcast `seq` of `comm`: its copy goes.
    pub fn drop_held(&mut self, comm: u32, seq: u64) {
        if let Some(r) = self.comms.get_mut(&comm) {
            if r.held.as_ref().is_some_and(|h| h.seq == seq) {
                r.held = None;
            }
        }
    }

    /// The fragments that an authentic RepairQuery for a held broadcast lists, up to
    /// `REPAIR_ANSWER_BYTES` of them, into `out[..n]`; returns `n`.
    pub fn answer_repair(&self, query: &[u8], out: &mut Vec<Vec<u8>>) -> usize {
        let Some(r) = packet::peek_comm(query).and_then(|c| self.comms.get(&c)) else {
            return 0;
        };
        let Ok((h, payload)) = packet::decode(&r.ctx, query) else {
            return 0;
        };
        let held = match &r.held {
            Some(held) if h.kind == Kind::RepairQuery && h.root == r.root && h.seq == held.seq => {
                held
            }
            _ => return 0,
        };
        let frag = held.frag.max(1);
        let nfrags = super::nfrags(held.data.len(), frag);
        let (mut n, mut bytes) = (0, 0);
        for f in payload.chunks_exact(4) {
            let f = u32::from_le_bytes(f.try_into().expect("4 bytes"));
            if f >= nfrags {
                continue;
            }
            if n > 0 && bytes + frag > REPAIR_ANSWER_BYTES {
                break;
            }
            if out.len() <= n {
                out.push(Vec::new());
            }
            super::sender::encode_fragment(&r.ctx, h.seq, r.root, frag, &held.data, f, &mut out[n]);
            n += 1;
            bytes += frag;
        }
        n
    }

    pub fn unregister(&mut self, comm: u32) {
        self.comms.remove(&comm);
    }

    /// The root released barrier `seq` of `comm`.
    pub fn released(&mut self, comm: u32, seq: u64) {
        if let Some(r) = self.comms.get_mut(&comm) {
            r.released = Some(r.released.map_or(seq, |s| s.max(seq)));
        }
    }

    /// Writes the release datagram into `out` if `query` is an authentic query of a registered
    /// communicator for a barrier already released.
    pub fn answer(&self, query: &[u8], out: &mut Vec<u8>) -> bool {
        self.check(query)
            .map(|(r, seq)| encode_release(&r.ctx, seq, r.root, out))
            .is_ok()
    }

    fn check(&self, query: &[u8]) -> Result<(&Registered, u64), Reject> {
        // Unauthenticated, but it only chooses the key; the MAC decides.
        let comm = packet::peek_comm(query).ok_or(Reject::Short)?;
        let r = self.comms.get(&comm).ok_or(Reject::WrongComm)?;
        let (h, _) = packet::decode(&r.ctx, query)?;
        let released = r.released.ok_or(Reject::WrongSeq)?;
        if h.kind != Kind::ReleaseQuery || h.root != r.root {
            return Err(Reject::BadKind);
        }
        if h.seq > released {
            return Err(Reject::WrongSeq);
        }
        Ok((r, h.seq))
    }
}
