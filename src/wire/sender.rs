//! sender: the root's side of one reliable multicast broadcast.
//!
//! Owns fragmentation, the sliding window (never more than `window_frags` fragments beyond the
//! slowest receiver's cumulative ack), NACK-driven retransmission with duplicate suppression, and
//! the tail probe. It never copies or keeps the message: every call gets the caller's `data`,
//! which the caller keeps until `is_done()`, so a fragment outside the window is never lost.

use std::collections::{BTreeMap, VecDeque};

use super::control::Control;
use super::packet::{self, Header, Kind, Reject};
use super::{backoff, Bits, Ctx, Nanos, Params};

const NEVER: Nanos = Nanos::MAX;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Datagrams handed out, retransmissions included.
    pub datagrams: u64,
    /// Datagrams that repeated an earlier fragment (NACK repairs and tail probes).
    pub retransmits: u64,
    /// Bytes of all datagrams handed out.
    pub bytes: u64,
}

#[derive(Debug)]
pub struct McastSender {
    ctx: Ctx,
    seq: u64,
    root: u32,
    total_len: usize,
    nfrags: u32,
    frag: usize,
    window: u32,
    /// A NACK this soon after a retransmission of the same fragment is not served: the NACKs of
    /// many receivers for one loss arrive well within it, while one receiver's repeated NACK
    /// comes at least `nack_initial` later.
    suppress: Nanos,
    probe_initial: Nanos,
    probe_max: Nanos,
    stall_timeout: Nanos,
    /// Receivers, ascending, and their cumulative acks.
    ranks: Vec<u32>,
    cums: Vec<u32>,
    /// Per receiver: it asked for data (a NACK) since its cumulative ack last moved, so it is
    /// in this operation, waiting for datagrams that the root sends and that do not reach it.
    asking: Vec<bool>,
    /// Multiset of `cums`: its first key is the window base.
    cum_count: BTreeMap<u32, u32>,
    /// First fragment never sent.
    next_new: u32,
    /// When each fragment was last retransmitted (`NEVER` if not yet). The first transmission
    /// does not count: the NACK that follows it is exactly what must be served.
    last_retx: Vec<Nanos>,
    queued: Bits,
    retx: VecDeque<u32>,
    probe_rto: Nanos,
    probe_base: Nanos,
    last_progress: Nanos,
    /// When the operation started (or the root came back to it, `resume`): `ack_wait`.
    started: Nanos,
    stats: SenderStats,
    /// Receivers that declined (`Control::Decline`): rank and the size they posted.
    declined: Vec<(u32, u64)>,
    /// When each fragment first went out (`NEVER` before), and when each receiver's
    /// cumulative ack last moved (or the operation started): `take_unreached`.
    first_sent: Vec<Nanos>,
    moved_at: Vec<Nanos>,
    /// Receivers offered the rest by unicast (`take_unreached`).
    by_unicast: Vec<bool>,
    /// Receivers that asked for it (`Control::Unicast`), with their cum: `take_serve`.
    serve: Vec<(u32, u32)>,
}

/// `ack_wait`: the root sleeps at most this fraction of the time the operation has run...
const ACK_WAIT_DIVISOR: Nanos = 64;
/// ...and never longer than this...
const ACK_WAIT_MAX: Nanos = 500_000;
/// ...nor shorter: a shorter wait is polled instead.
const ACK_WAIT_MIN: Nanos = 20_000;

/// Writes fragment `f` of message `data` (broadcast `seq` from `root`, cut in pieces of
/// `frag` bytes) as a data datagram into `out`: what the root multicasts, and what its
/// responder sends again to a receiver that lost it.
pub fn encode_fragment(
    ctx: &Ctx,
    seq: u64,
    root: u32,
    frag: usize,
    data: &[u8],
    f: u32,
    out: &mut Vec<u8>,
) {
    let frag = frag.max(1);
    let nfrags = super::nfrags(data.len(), frag);
    let start = f as usize * frag;
    let end = (start + frag).min(data.len());
    let h = Header {
        kind: Kind::Data,
        job: ctx.job,
        comm: ctx.comm,
        seq,
        root,
        frag: f,
        nfrags,
        total_len: data.len() as u64,
    };
    packet::encode(ctx, &h, &data[start..end], out);
}

impl McastSender {
    pub fn new(
        ctx: &Ctx,
        seq: u64,
        root: u32,
        receivers: &[u32],
        total_len: usize,
        params: &Params,
        now: Nanos,
    ) -> Self {
        let nfrags = params.nfrags(total_len);
        let mut ranks: Vec<u32> = receivers.iter().copied().filter(|&r| r != root).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let mut cum_count = BTreeMap::new();
        if !ranks.is_empty() && nfrags > 0 {
            cum_count.insert(0, ranks.len() as u32);
        }
        let cums = vec![0; ranks.len()];
        let asking = vec![false; ranks.len()];
        // The probe backs up the receivers' NACK timers, so it starts later than they do.
        let probe_initial = params.nack_initial().saturating_mul(2);
        McastSender {
            ctx: ctx.clone(),
            seq,
            root,
            total_len,
            nfrags,
            frag: params.frag(),
            window: params.window(),
            suppress: params.nack_initial() / 4,
            probe_initial,
            probe_max: params.nack_max().max(probe_initial),
            stall_timeout: params.stall_timeout,
            cum_count,
            next_new: 0,
            last_retx: vec![NEVER; nfrags as usize],
            queued: Bits::new(nfrags),
            retx: VecDeque::new(),
            probe_rto: probe_initial,
            probe_base: now,
            last_progress: now,
            started: now,
            stats: SenderStats::default(),
            declined: Vec::new(),
            first_sent: vec![NEVER; nfrags as usize],
            moved_at: vec![now; ranks.len()],
            by_unicast: vec![false; ranks.len()],
            serve: Vec::new(),
            ranks,
            cums,
            asking,
        }
    }

    /// The slowest receiver's cumulative ack; `nfrags` when every receiver has everything.
    fn base(&self) -> u32 {
        self.cum_count.keys().next().copied().unwrap_or(self.nfrags)
    }

    fn outstanding(&self) -> bool {
        self.base() < self.next_new
    }

    /// One past the last fragment flow control lets out: the slowest cumulative ack plus the
    /// window, within the message.
    fn limit(&self) -> u32 {
        self.nfrags.min(self.base().saturating_add(self.window))
    }

    /// Next datagram to multicast now, if flow control allows (retransmissions first, then new
    /// fragments below the slowest cumulative ack + window). `data` is the whole message.
    pub fn poll_transmit(&mut self, now: Nanos, data: &[u8], out: &mut Vec<u8>) -> bool {
        debug_assert_eq!(data.len(), self.total_len);
        let base = self.base();
        while let Some(f) = self.retx.pop_front() {
            self.queued.clear(f);
            // Everyone got it meanwhile.
            if f >= base {
                self.stats.retransmits += 1;
                self.last_retx[f as usize] = now;
                self.emit(f, data, out);
                return true;
            }
        }
        if self.next_new >= self.limit() {
            return false;
        }
        if !self.outstanding() {
            // The probe measures silence from the moment something is waiting for an ack.
            self.probe_base = now;
        }
        let f = self.next_new;
        self.next_new += 1;
        self.first_sent[f as usize] = now;
        self.emit(f, data, out);
        true
    }

    fn emit(&mut self, f: u32, data: &[u8], out: &mut Vec<u8>) {
        encode_fragment(&self.ctx, self.seq, self.root, self.frag, data, f, out);
        self.stats.datagrams += 1;
        self.stats.bytes += out.len() as u64;
    }

    fn queue(&mut self, f: u32) {
        if self.queued.set(f) {
            self.retx.push_back(f);
        }
    }

    /// A control message from receiver `from`. An invalid one changes nothing.
    pub fn handle_control(&mut self, now: Nanos, from: u32, msg: &[u8]) -> Result<(), Reject> {
        let msg = Control::decode(msg)?;
        if msg.seq() != self.seq {
            return Err(Reject::WrongSeq);
        }
        let idx = self
            .ranks
            .binary_search(&from)
            .map_err(|_| Reject::Malformed)?;
        if let Control::Decline { posted, .. } = msg {
            // That receiver is out of this operation: nothing more is owed to it, and it no
            // longer holds the window back.
            if !self.declined.iter().any(|&(r, _)| r == from) {
                self.declined.push((from, posted));
            }
            self.advance(idx, self.nfrags, now);
            return Ok(());
        }
        let cum = msg.cum();
        let missing = match &msg {
            Control::Ack { .. }
            | Control::Decline { .. }
            | Control::Trouble { .. }
            | Control::Unicast { .. } => &[][..],
            Control::Nack { missing, .. } => &missing[..],
        };
        // A receiver cannot have what was never sent.
        if cum > self.next_new || missing.iter().any(|&f| f >= self.nfrags) {
            return Err(Reject::Malformed);
        }
        self.advance(idx, cum, now);
        if let Control::Unicast { cum, .. } = msg {
            // It waits for the rest by unicast: out of the window, and done here once the
            // transport has sent it.
            self.serve.push((from, cum));
            self.by_unicast[idx] = true;
            self.advance(idx, self.nfrags, now);
            return Ok(());
        }
        if matches!(msg, Control::Trouble { .. }) || self.by_unicast[idx] {
            // Trouble is the transport's; one served by unicast asks nothing of multicast.
            return Ok(());
        }
        if matches!(msg, Control::Nack { .. }) && cum < self.nfrags {
            self.asking[idx] = true;
        }
        for &f in missing {
            // Not yet sent fragments come with the window; ones this receiver has are stale.
            if f < cum || f >= self.next_new {
                continue;
            }
            let last = self.last_retx[f as usize];
            if last == NEVER || now.saturating_sub(last) >= self.suppress {
                self.queue(f);
            }
        }
        Ok(())
    }

    /// The receivers that multicast does not reach, to be offered the rest by unicast: each
    /// has fragments the root sent `suspect` or more ago (the first time), and its cumulative
    /// ack has not moved for as long. `present`: every receiver is known to be in the
    /// operation (it sent its scout before the root multicast); otherwise only those that
    /// asked for data since their last progress count (a receiver that has not come yet is not
    /// unreached, only late). Each is returned once per operation; it answers the offer with
    /// `Control::Unicast` (then `take_serve` has it) or finishes by multicast meanwhile (its
    /// ack): it stays pending until one of the two.
    pub fn take_unreached(&mut self, now: Nanos, suspect: Nanos, present: bool) -> Vec<u32> {
        let mut out = Vec::new();
        for idx in 0..self.ranks.len() {
            let cum = self.cums[idx];
            if self.by_unicast[idx] || cum >= self.next_new || !(present || self.asking[idx]) {
                continue;
            }
            let since = self.moved_at[idx].max(self.first_sent[cum as usize]);
            if now.saturating_sub(since) >= suspect {
                self.by_unicast[idx] = true;
                out.push(self.ranks[idx]);
            }
        }
        out
    }

    /// Every receiver that lacks something and was not offered yet, offered the rest by
    /// unicast at once (as `take_unreached` names them): for a multicast that goes
    /// point-to-point from the start, whose datagrams the transport does not send.
    pub fn take_all(&mut self) -> Vec<u32> {
        let mut out = Vec::new();
        for idx in 0..self.ranks.len() {
            if !self.by_unicast[idx] && self.cums[idx] < self.nfrags {
                self.by_unicast[idx] = true;
                out.push(self.ranks[idx]);
            }
        }
        out
    }

    /// The receivers that asked for the rest by unicast since the last call, with the first
    /// fragment each lacks: the transport sends them fragments from there to the end.
    pub fn take_serve(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.serve)
    }

    /// Receivers that declined this operation (their posted size differed), with the size
    /// they posted.
    pub fn declined(&self) -> &[(u32, u64)] {
        &self.declined
    }

    /// Receiver `idx`'s cumulative ack moves up to `cum` (never down).
    fn advance(&mut self, idx: usize, cum: u32, now: Nanos) {
        let old = self.cums[idx];
        if cum > old {
            self.cums[idx] = cum;
            self.asking[idx] = false;
            self.moved_at[idx] = now;
            match self.cum_count.get_mut(&old) {
                Some(c) if *c > 1 => *c -= 1,
                _ => {
                    self.cum_count.remove(&old);
                }
            }
            if cum < self.nfrags {
                *self.cum_count.entry(cum).or_insert(0) += 1;
            }
            self.last_progress = now;
            self.probe_base = now;
            self.probe_rto = self.probe_initial;
        }
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.outstanding() && now >= self.probe_base.saturating_add(self.probe_rto) {
            // The highest sent fragment exposes tail loss: a receiver that lacks anything
            // below it NACKs at once. But while the window holds back the rest of the message,
            // what holds everything up is the slowest receiver's first missing fragment: send
            // that instead (it is the one a single unlucky receiver keeps losing).
            let limit = self.limit();
            let held_back = self.next_new >= limit && limit < self.nfrags;
            self.queue(if held_back {
                self.base()
            } else {
                self.next_new - 1
            });
            self.probe_rto = backoff(self.probe_rto, self.probe_max);
            self.probe_base = now;
        }
    }

    /// The next deadline: the tail probe, or the moment the operation counts as stalled.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.is_done() {
            return None;
        }
        let stall = self.last_progress.saturating_add(self.stall_timeout);
        if self.outstanding() {
            Some(stall.min(self.probe_base.saturating_add(self.probe_rto)))
        } else {
            Some(stall)
        }
    }

    /// Every receiver acked every fragment.
    pub fn is_done(&self) -> bool {
        self.cum_count.is_empty()
    }

    /// Receivers that have not acked everything.
    pub fn pending_ranks(&self) -> Vec<u32> {
        self.ranks
            .iter()
            .zip(&self.cums)
            .filter(|&(_, &c)| c < self.nfrags)
            .map(|(&r, _)| r)
            .collect()
    }

    /// At a stall: the receivers still missing data that multicast no longer reaches: they
    /// lack fragments the root sent.
    /// `present`: every receiver is known to be in the operation (it sent its scout before
    /// the root multicast); otherwise only those that asked for data since their last
    /// progress are. The root sent, and sent again what they asked for, for the whole stall
    /// timeout, and none of it arrived: what is left out are receivers that may only be late
    /// (in another call). Ascending.
    pub fn unreached(&self, present: bool) -> Vec<u32> {
        self.ranks
            .iter()
            .zip(&self.cums)
            .zip(&self.asking)
            .filter(|&((_, &c), &asked)| c < self.next_new && (present || asked))
            .map(|((&r, _), _)| r)
            .collect()
    }

    /// Receivers still missing data that have everything the root sent: the window, held
    /// back by slower receivers, keeps the rest from them. Ascending.
    pub fn held_back(&self) -> Vec<u32> {
        self.ranks
            .iter()
            .zip(&self.cums)
            .filter(|&(_, &c)| c < self.nfrags && c >= self.next_new)
            .map(|(&r, _)| r)
            .collect()
    }

    /// No receiver's cumulative ack advanced for `stall_timeout`.
    pub fn stalled(&self, now: Nanos) -> bool {
        !self.is_done() && now.saturating_sub(self.last_progress) >= self.stall_timeout
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Starts the stall clock and the tail probe over from `now`: for a root that left the
    /// broadcast and comes back to collect its acknowledgements (silence while it was away
    /// is not a stall).
    pub fn resume(&mut self, now: Nanos) {
        self.last_progress = now;
        self.probe_base = now;
        self.started = now;
    }

    /// How long a root that found nothing to do may sleep before it looks again, when all it
    /// has left is to collect acknowledgements (and serve NACKs): they come over the host MPI,
    /// which it must call to see them, so it cannot block on them, and polling without a pause
    /// would take a core for the whole transfer (on a host whose cores run the receivers too,
    /// slowing them). The wait is 1/64 of the time the operation has run, at most 500 us,
    /// never past the next timer: what it adds to noticing the last acknowledgement or a NACK
    /// is a small fraction of the operation, and nothing to a short one. None (poll again at
    /// once): datagrams still to send, or a wait under 20 us.
    pub fn ack_wait(&self, now: Nanos) -> Option<Nanos> {
        if self.is_done() || !self.all_sent() {
            return None;
        }
        let wait = (now.saturating_sub(self.started) / ACK_WAIT_DIVISOR).min(ACK_WAIT_MAX);
        super::sleep_before(wait, self.poll_timeout(), now, ACK_WAIT_MIN)
    }

    /// Every fragment went out at least once and no retransmission is queued.
    pub fn all_sent(&self) -> bool {
        self.next_new == self.nfrags && self.retx.is_empty()
    }

    pub fn nfrags(&self) -> u32 {
        self.nfrags
    }
}
