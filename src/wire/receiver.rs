//! receiver: a non-root rank's side of one reliable multicast broadcast.
//!
//! Owns reassembly into the caller's buffer, the cumulative Ack (every quarter window and at the
//! end), and loss detection: an immediate Nack for each new gap, and a timer Nack (with
//! exponential backoff while nothing advances) listing everything still expected up to the
//! window edge, which is what repairs tail loss and total loss.

use super::control::{Control, MAX_NACK_MISSING};
use super::packet::{self, Kind, Reject};
use super::{backoff, Bits, Ctx, Nanos, Params};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// New fragments copied into the buffer.
    pub accepted: u64,
    /// Valid fragments already received.
    pub duplicates: u64,
    /// Valid datagrams of an earlier operation of this communicator.
    pub stale: u64,
    /// Datagrams that failed verification or were inconsistent.
    pub rejected: u64,
    /// Nack messages handed out.
    pub nacks: u64,
    /// Valid datagrams of a later operation or another kind.
    pub foreign: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Duplicate,
    Stale,
    Foreign,
    Rejected(Reject),
    /// An authentic fragment of this very operation (seq and root match, the MAC holds, and
    /// it is consistent with its own size) of a message whose size is not the one this rank
    /// posted: the program passed other counts or datatypes at the root (`mismatch`).
    Mismatch,
}

#[derive(Debug)]
pub struct McastReceiver {
    ctx: Ctx,
    seq: u64,
    root: u32,
    me: u32,
    total_len: usize,
    nfrags: u32,
    frag: usize,
    window: u32,
    /// Ack every this many fragments of cumulative progress: often enough that the root's
    /// window never drains, rarely enough that n receivers do not flood it.
    ack_step: u32,
    nack_initial: Nanos,
    nack_max: Nanos,
    stall_timeout: Nanos,
    have: Bits,
    cum: u32,
    /// One past the highest fragment received.
    seen_end: u32,
    /// The cum last reported to the root.
    reported: u32,
    final_sent: bool,
    /// Fragments to list in the next Nack, ascending.
    pending: Vec<u32>,
    nack_rto: Nanos,
    nack_at: Nanos,
    /// How far past the highest fragment seen a NACK after a silence reaches, doubled by
    /// every such NACK (see `handle_timeout`).
    silent_span: u32,
    /// A silence is asked about past the highest fragment seen only when the root does not
    /// probe the tail itself (an eager root, `arm_nack`). Otherwise a root that is only
    /// slow (descheduled, or behind its own send queue) would be asked for fragments it is
    /// sending at that moment, and send each of them twice.
    tail_nacks: bool,
    last_progress: Nanos,
    /// When the first fragment arrived: with `stats.accepted`, the stream's rate.
    first_at: Option<Nanos>,
    stats: ReceiverStats,
    /// The size of the root's message, when it is not the one posted (`Outcome::Mismatch`).
    mismatch: Option<u64>,
}

/// Fragments past the highest one seen that the first NACK after a silence asks for.
const SILENT_SPAN_INITIAL: u32 = 8;

/// At most this many fragments are left to gather in the socket between two reads
/// (`batch_wait`).
pub const BATCH_MAX: u32 = 16;
/// Fragments seen before the stream's rate counts as known.
const BATCH_RATE_AFTER: u64 = 8;
/// A batch wait shorter than this is not worth a sleep.
const BATCH_WAIT_MIN: Nanos = 20_000;
/// Nor is one longer than this taken: a stream this slow is not costing CPU.
const BATCH_WAIT_MAX: Nanos = 2_000_000;

impl McastReceiver {
    pub fn new(
        ctx: &Ctx,
        seq: u64,
        root: u32,
        me: u32,
        total_len: usize,
        params: &Params,
        now: Nanos,
    ) -> Self {
        let nfrags = params.nfrags(total_len);
        let window = params.window();
        McastReceiver {
            ctx: ctx.clone(),
            seq,
            root,
            me,
            total_len,
            nfrags,
            frag: params.frag(),
            window,
            ack_step: (window / 4).max(1),
            nack_initial: params.nack_initial(),
            nack_max: params.nack_max(),
            stall_timeout: params.stall_timeout,
            have: Bits::new(nfrags),
            cum: 0,
            seen_end: 0,
            reported: 0,
            final_sent: false,
            pending: Vec::new(),
            nack_rto: params.nack_initial(),
            // Armed by the first datagram. Before it, silence means the root is still waiting
            // for scouts (which may take long on a loaded host), not loss; if the first
            // datagrams are lost, the root's tail probe exposes them.
            nack_at: Nanos::MAX,
            silent_span: SILENT_SPAN_INITIAL,
            tail_nacks: false,
            last_progress: now,
            first_at: None,
            stats: ReceiverStats::default(),
            mismatch: None,
        }
    }

    fn complete(&self) -> bool {
        self.cum == self.nfrags
    }

    fn frag_len(&self, f: u32) -> usize {
        self.frag.min(self.total_len - f as usize * self.frag)
    }

    /// Verifies, then copies the payload into `buf[frag * frag_payload..]`.
    /// `buf.len()` must be the message length.
    pub fn handle_datagram(&mut self, now: Nanos, dgram: &[u8], buf: &mut [u8]) -> Outcome {
        debug_assert_eq!(buf.len(), self.total_len);
        let (h, payload) = match packet::decode(&self.ctx, dgram) {
            Ok(x) => x,
            Err(r) => {
                self.stats.rejected += 1;
                return Outcome::Rejected(r);
            }
        };
        if h.seq < self.seq {
            self.stats.stale += 1;
            return Outcome::Stale;
        }
        if h.kind != Kind::Data || h.seq != self.seq || h.root != self.root {
            self.stats.foreign += 1;
            return Outcome::Foreign;
        }
        let f = h.frag;
        if h.total_len != self.total_len as u64
            && u64::from(h.nfrags)
                == usize::try_from(h.total_len)
                    .map_or(u64::MAX, |l| u64::from(super::nfrags(l, self.frag)))
            && f < h.nfrags
        {
            self.mismatch.get_or_insert(h.total_len);
            return Outcome::Mismatch;
        }
        if h.total_len != self.total_len as u64
            || h.nfrags != self.nfrags
            || f >= self.nfrags
            || payload.len() != self.frag_len(f)
        {
            self.stats.rejected += 1;
            return Outcome::Rejected(Reject::Malformed);
        }
        if !self.have.set(f) {
            self.stats.duplicates += 1;
            return Outcome::Duplicate;
        }
        let start = f as usize * self.frag;
        buf[start..start + payload.len()].copy_from_slice(payload);
        self.stats.accepted += 1;
        self.last_progress = now;
        self.first_at.get_or_insert(now);
        if f > self.seen_end {
            // A new gap: report it now rather than at the next timer, so a loss costs about one
            // round trip.
            let room = MAX_NACK_MISSING.saturating_sub(self.pending.len());
            let from = match self.pending.last() {
                Some(&l) => self.seen_end.max(l + 1),
                None => self.seen_end,
            };
            self.pending.extend((from..f).take(room));
        }
        self.seen_end = self.seen_end.max(f + 1);
        // Any new fragment is progress: the backoff starts over, and the next NACK is due at
        // most `nack_initial` from now. Only an advancing cum postpones it, so a hole that stays
        // open is NACKed again even while later fragments keep arriving.
        self.nack_rto = self.nack_initial;
        if f == self.cum {
            while self.cum < self.nfrags && self.have.get(self.cum) {
                self.cum += 1;
            }
            self.nack_at = now.saturating_add(self.nack_rto);
        } else {
            self.nack_at = self.nack_at.min(now.saturating_add(self.nack_rto));
        }
        Outcome::Accepted
    }

    /// Fragments `first..` back to back in `payload`, which came by a reliable unicast path
    /// (the root's answer to a receiver that multicast no longer reaches, `wire::heal`), into
    /// `buf`. Returns how many were new; a payload that does not end on a fragment boundary
    /// of this message (or at its end) changes nothing and returns None.
    pub fn accept_range(
        &mut self,
        now: Nanos,
        first: u32,
        payload: &[u8],
        buf: &mut [u8],
    ) -> Option<u32> {
        let start = (first as usize).checked_mul(self.frag)?;
        let end = start.checked_add(payload.len())?;
        if first >= self.nfrags
            || end > self.total_len
            || (end != self.total_len && end % self.frag != 0)
        {
            return None;
        }
        let last = if end == self.total_len {
            self.nfrags
        } else {
            (end / self.frag) as u32
        };
        let mut new = 0;
        for f in first..last {
            if self.have.set(f) {
                let a = f as usize * self.frag;
                let b = a + self.frag_len(f);
                buf[a..b].copy_from_slice(&payload[a - start..b - start]);
                new += 1;
            }
        }
        if new > 0 {
            self.stats.accepted += u64::from(new);
            self.last_progress = now;
            self.seen_end = self.seen_end.max(last);
            while self.cum < self.nfrags && self.have.get(self.cum) {
                self.cum += 1;
            }
            self.nack_at = if self.complete() {
                Nanos::MAX
            } else {
                now.saturating_add(self.nack_rto)
            };
        }
        Some(new)
    }

    /// Arms the NACK timer now, before any datagram: for a broadcast whose root sends without
    /// waiting for anyone (eager), so that silence means loss and is asked about after
    /// `nack_initial` (a root that is merely late answers nothing, and the backoff grows).
    /// Until a fragment arrives these NACKs list only fragment 0 (see `handle_timeout`).
    pub fn arm_nack(&mut self, now: Nanos) {
        self.tail_nacks = true;
        if !self.complete() && self.nack_at == Nanos::MAX {
            self.nack_at = now.saturating_add(self.nack_rto);
        }
    }

    /// The next control message for the root, if one is due, encoded.
    pub fn poll_control(&mut self, now: Nanos) -> Option<Vec<u8>> {
        let msg = self.poll_message(now)?;
        let mut out = Vec::new();
        msg.encode(&mut out);
        Some(out)
    }

    /// The next control message for the root, if one is due.
    pub fn poll_message(&mut self, _now: Nanos) -> Option<Control> {
        if self.final_sent || self.nfrags == 0 {
            return None;
        }
        let have = &self.have;
        self.pending.retain(|&f| !have.get(f));
        let msg = if !self.pending.is_empty() {
            self.stats.nacks += 1;
            Control::Nack {
                seq: self.seq,
                cum: self.cum,
                missing: std::mem::take(&mut self.pending),
            }
        } else if self.cum > self.reported
            && (self.cum - self.reported >= self.ack_step || self.complete())
        {
            self.final_sent = self.complete();
            Control::Ack {
                seq: self.seq,
                cum: self.cum,
            }
        } else {
            return None;
        };
        self.reported = self.cum;
        Some(msg)
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.complete() || now < self.nack_at {
            return;
        }
        // While fragments keep arriving, only the holes below the highest one seen: those
        // above may still be on their way, queued at the root behind what already came (a
        // window can be far more than the root's link sends in one NACK interval), and asking
        // for them would queue every one a second time. After a silence, the fragments after
        // the highest seen, up to all that the root may have sent (it never goes beyond the
        // slowest cum + window, and ours is at least the slowest): tail loss, or total loss.
        // But a silence is as often a stream that is only late (queued behind the root's
        // link, or a host too busy to deliver for a few milliseconds), so the reach past the
        // highest fragment seen starts small and doubles with every silence of the operation
        // (a lost tail is exposed sooner by the root's probe, or, in an eager broadcast,
        // asked for in a few rounds). Only an eager broadcast's receiver asks past the
        // highest fragment seen at all (`tail_nacks`): a root that waits for everyone probes
        // the tail itself, and asking it for what it is still sending, after a silence that
        // was only the root being slow, would have it send up to a window twice (a quarter of
        // a 64 MiB broadcast was sent twice that way, with no datagram lost). Before any
        // fragment (only an eager broadcast's timer runs then, `arm_nack`) the first one only: most likely the root's data is
        // still queued behind its link, or the root is not there yet. Its answer or the
        // stream starts the flow, and a receiver that did lose everything goes on from there.
        let flowing = now.saturating_sub(self.last_progress) < self.nack_rto;
        let edge = if self.seen_end == 0 {
            1
        } else if flowing || !self.tail_nacks {
            self.seen_end
        } else {
            let reach = self.seen_end.saturating_add(self.silent_span);
            self.silent_span = self.silent_span.saturating_mul(2);
            self.nfrags
                .min(self.seen_end.max(self.cum.saturating_add(self.window)))
                .min(reach)
        };
        let have = &self.have;
        self.pending.clear();
        self.pending.extend(
            (self.cum..edge)
                .filter(|&f| !have.get(f))
                .take(MAX_NACK_MISSING),
        );
        self.nack_rto = backoff(self.nack_rto, self.nack_max);
        self.nack_at = now.saturating_add(self.nack_rto);
    }

    /// How long to let fragments gather before reading again, for a receiver that has just
    /// read all there was: while the stream flows at a steady rate, reading it a datagram at a
    /// time means one wake-up per datagram (on a rate-limited link every datagram comes
    /// alone), which is most of a receiver's CPU time and, with several receivers on one
    /// core, slows them all. The wait lets up to `BATCH_MAX` fragments arrive at the rate
    /// seen so far (fewer near the end: the last one is waited for, not slept past; fewer
    /// when the ACK step is small, so the root's window keeps moving and the socket holds
    /// them). None: wait for the next datagram instead (stream not yet known, not flowing,
    /// nearly done, or the wait too short or too long to help). Never past `poll_timeout`.
    pub fn batch_wait(&self, now: Nanos) -> Option<Nanos> {
        let first = self.first_at?;
        let got = self.stats.accepted;
        if self.complete() || got < BATCH_RATE_AFTER {
            return None;
        }
        let gap = self.last_progress.saturating_sub(first) / (got - 1);
        if now.saturating_sub(self.last_progress) > gap {
            return None; // nothing came at the last read: not flowing (or lost); poll
        }
        let left = u64::from(self.nfrags).saturating_sub(got);
        let batch = u64::from(BATCH_MAX.min(self.ack_step / 2)).min(left.saturating_sub(1));
        let wait = gap.saturating_mul(batch);
        if wait > BATCH_WAIT_MAX {
            return None;
        }
        super::sleep_before(wait, self.poll_timeout(), now, BATCH_WAIT_MIN)
    }

    /// The next NACK timer, or the moment the operation counts as stalled.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.complete() {
            return None;
        }
        let stall = self.last_progress.saturating_add(self.stall_timeout);
        Some(self.nack_at.min(stall))
    }

    /// All data is in and the final Ack has been handed out by `poll_control`.
    /// The size of the root's message, when its fragments show another size than this rank
    /// posted. The operation cannot complete here: the transport fails it (or starts over
    /// with the root's size where the host MPI would take a shorter message).
    pub fn mismatch(&self) -> Option<u64> {
        self.mismatch
    }

    /// The message that takes this receiver out of the operation at the root (after a
    /// `mismatch`): the root stops waiting for it.
    pub fn decline(&self) -> Control {
        Control::Decline {
            seq: self.seq,
            posted: self.total_len as u64,
        }
    }

    pub fn is_done(&self) -> bool {
        self.nfrags == 0 || self.final_sent
    }

    /// No new fragment arrived for `stall_timeout` while some are missing.
    /// Nothing new arrived for `quiet` (or since the operation started) while something is
    /// missing: for an eager broadcast, the moment to ask the root by the host MPI as well as
    /// its responder by UDP (`transport::op`).
    pub fn quiet(&self, now: Nanos, quiet: Nanos) -> bool {
        !self.complete() && now.saturating_sub(self.last_progress) >= quiet
    }

    pub fn stalled(&self, now: Nanos) -> bool {
        !self.complete() && now.saturating_sub(self.last_progress) >= self.stall_timeout
    }

    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// Leading fragments received contiguously.
    pub fn cum(&self) -> u32 {
        self.cum
    }

    pub fn nfrags(&self) -> u32 {
        self.nfrags
    }

    /// The rank whose multicast this receives.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// The message length in bytes.
    pub fn total_len(&self) -> usize {
        self.total_len
    }

    /// Whether fragment `f` is in the buffer.
    pub fn has(&self, f: u32) -> bool {
        f < self.nfrags && self.have.get(f)
    }

    pub fn rank(&self) -> u32 {
        self.me
    }
}
