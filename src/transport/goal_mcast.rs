//! The multicast actions of a GOAL run (`mcast`, `mrecv`): several at once, in any order the
//! schedule's dependencies allow, over the multicast channel of the GOAL handle's own
//! communicator.
//!
//! Numbering: every rank numbers the multicasts of a run alike without talking to anyone.
//! Root q's k-th `mcast` (in action order) pairs with the k-th `mrecv ... from q` of every
//! other rank (the validator checks this for text programs), so on any rank the count per
//! root is known: its own `mcast`s, or its `mrecv`s from that root. Multicast (q, k) gets
//! number `1 + (counts of roots below q) + k`, and sequence number `base + number`, where
//! `base` is the communicator's operation counter when the run starts; the counter then
//! advances by the run's total. Datagrams are routed to their multicast by sequence number,
//! control messages (the receivers' acks and NACKs to the root, over the host MPI) likewise.
//! A multicast that this rank will receive in this run but whose `mrecv` has not started yet
//! (its prerequisites are pending) is received all the same, into a buffer of the library's,
//! and acknowledged: the root's flow control waits for its slowest receiver, so a receiver
//! that only listened once its `mrecv` started could deadlock a valid program (its
//! prerequisite may be another rank's `mrecv` of the same multicast). The `mrecv` then takes
//! what arrived. A receiver is made when the first datagram tells the message's length, so an
//! `mrecv` larger than the `mcast` gets the shorter message, as an MPI receive would. Datagrams
//! of a later run (a faster root) are kept, up to 8 MiB, and replayed. Like MPI
//! point-to-point, and unlike mpicast's own collectives, GOAL multicasts wait without a
//! timeout: a root and its receivers may be any time apart.
//!
//! When datagrams stop arriving (all, only large ones, a share), the root repairs by unicast
//! as `MPICAST_Imcast` does (`imcast_ip`, `wire::heal`): a receiver that lacks data NACKs; one
//! that no datagram reached (it cannot NACK: it does not know the length) says that it waits
//! (an empty NACK at cum 0) once its run has gone on for half of `MPICAST_SUSPECT_MS`
//! without a datagram of that multicast. The root offers the rest (`HealMsg::Offer`, with
//! the length, tag `TAG_GOAL_HEAL`) to every receiver that asked and still lacks fragments
//! sent `MPICAST_SUSPECT_MS` ago; the receiver answers `Control::Unicast` unless it finished
//! meanwhile, and then finishes only with the data the root sends by the host MPI
//! (`HealMsg::Data`). The root decides alone how its following multicasts go
//! (`wire::heal::RootPath`, kept with the channel across runs): after two repaired ones in a
//! row, those of that size and more go point-to-point (the root offers every receiver the
//! data at once and sends no datagram), with one message naming the hosts; a trial by IP
//! after 16, 32 .. 1024 of them brings them back when it passes. The receivers need not know:
//! an offer is all they see either way.
//!
//! Where the communicator does not multicast (one host with the host MPI's path, several
//! ranks per host, multicast unavailable), a multicast is carried by point-to-point messages
//! from the root to every other rank on the state's private duplicate, with a tag per
//! sequence number: the same semantics, without the wire.

use super::heal::{offer_on, serve_on};
use super::op::{control_seq, count_outcome, count_tx, transmit, OpError, TAG_CONTROL};
use super::Channel;
use crate::host::p2p::{self, Region, Requests};
use crate::host::MPI_Comm;
use crate::lock::lock;
use crate::sched::{ActionId, Op, Schedule};
use crate::session::{CommState, Path};
use crate::stats::{self, COUNTERS};
use crate::wire::heal::{HealMsg, Via};
use crate::wire::{self, packet, Control, McastReceiver, McastSender};
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

/// The tag of a root's unicast repairs (`HealMsg::Offer`, `HealMsg::Data`) on the private
/// duplicate (the collectives' `heal::TAG_HEAL` is read by their own operations).
pub const TAG_GOAL_HEAL: c_int = 8;

/// Point-to-point multicasts use tags from here (TAG_CONTROL and the scouts' tags are below).
const TAG_P2P_BASE: c_int = 64;
/// Distinct tags per sequence number, modulo this (MPI_TAG_UB is at least 32767): two
/// multicasts whose tags collide are never both in flight between the same two ranks.
const TAG_P2P_SPAN: u64 = 16384;

/// The multicasts of one rank's schedule: per action, its number within a run (1-based; 0
/// for an action that is not a multicast), and how many a run has in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbering {
    pub of: Vec<u32>,
    pub total: u32,
    /// Per number (index number - 1): whether this rank receives that multicast.
    pub recv: Vec<bool>,
    /// Per number - 1: its root.
    pub root: Vec<u32>,
}

impl Numbering {
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// Numbers the multicasts of `rank`'s schedule in a communicator of `size` ranks (see the
/// module text). Pure.
pub fn number(schedule: &Schedule, rank: u32, size: u32) -> Numbering {
    let n = size as usize;
    let mut per_root = vec![0u32; n];
    let mut k_of = vec![(0u32, 0u32); schedule.len()];
    let mut received = vec![false; schedule.len()];
    let mut any = false;
    for (id, op) in schedule.actions() {
        let root = match op {
            Op::McastSend { .. } => rank,
            Op::McastRecv { root, .. } => {
                received[id as usize] = true;
                *root
            }
            _ => continue,
        };
        if let Some(c) = per_root.get_mut(root as usize) {
            k_of[id as usize] = (root, *c + 1);
            *c += 1;
            any = true;
        }
    }
    if !any {
        return Numbering::default();
    }
    let mut before = vec![0u32; n + 1];
    for q in 0..n {
        before[q + 1] = before[q] + per_root[q];
    }
    let of: Vec<u32> = k_of
        .iter()
        .map(|&(root, k)| if k == 0 { 0 } else { before[root as usize] + k })
        .collect();
    let mut recv = vec![false; before[n] as usize];
    for (id, &no) in of.iter().enumerate() {
        if no > 0 && received[id] {
            recv[no as usize - 1] = true;
        }
    }
    let root = (0..n as u32)
        .flat_map(|q| std::iter::repeat(q).take(per_root[q as usize] as usize))
        .collect();
    Numbering {
        of,
        total: before[n],
        recv,
        root,
    }
}

// A run has a few of these at once: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Active {
    Send {
        id: ActionId,
        seq: u64,
        tx: McastSender,
        data: Region,
        /// How it goes (`RootPath::start`), and its fragment size.
        via: Via,
        frag: usize,
        /// Receivers served by unicast.
        served: Vec<u32>,
    },
    Recv {
        id: ActionId,
        seq: u64,
        root: u32,
        /// Made by the first datagram, which carries the length, or by the root's offer.
        rx: Option<Rx>,
        buf: Region,
    },
}

/// A receiver and its unicast repair.
struct Rx {
    rx: McastReceiver,
    /// It answered the root's offer: it finishes only with the unicast data.
    asked: bool,
    got: bool,
}

impl Rx {
    fn new(rx: McastReceiver) -> Rx {
        Rx {
            rx,
            asked: false,
            got: false,
        }
    }

    /// Whole, and the root's unicast send (if it asked for one) received.
    fn is_done(&self) -> bool {
        self.rx.is_done() && (self.got || !self.asked)
    }

    /// The root's repair message `h` for it, into `buf` (the whole message).
    fn heal(
        &mut self,
        h: &HealMsg,
        now: wire::Nanos,
        private: MPI_Comm,
        buf: &mut [u8],
    ) -> Result<(), OpError> {
        match *h {
            HealMsg::Offer { seq, .. } if !self.asked && !self.rx.is_done() => {
                self.asked = true;
                let mut out = Vec::new();
                Control::Unicast {
                    seq,
                    cum: self.rx.cum(),
                }
                .encode(&mut out);
                p2p::send_bytes(private, self.rx.root(), TAG_CONTROL, &out)?;
            }
            HealMsg::Data {
                seq,
                first,
                payload,
            } if self.asked && !self.got => {
                match self.rx.accept_range(now, first, payload, buf) {
                    Some(n) => stats::add(&COUNTERS.dgrams_recv, u64::from(n)),
                    None => {
                        return Err(OpError::Truncated(format!(
                            "GOAL multicast {seq}: a unicast repair of {} bytes from fragment \
                             {first} that does not fit its {} bytes",
                            payload.len(),
                            buf.len()
                        )))
                    }
                }
                self.got = true;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A multicast received before its `mrecv` started: into the library's own buffer.
struct Early {
    rx: Rx,
    buf: Vec<u8>,
}

/// The multicast side of one GOAL run.
pub struct McastRun {
    state: Arc<Mutex<CommState>>,
    base: u64,
    total: u64,
    /// Per number - 1: whether this rank receives it and has not finished (`Numbering::recv`).
    recv: Vec<bool>,
    /// How many of those are left.
    recv_left: usize,
    active: Vec<Active>,
    /// Multicasts of this run received ahead of their `mrecv`, by sequence number.
    early: HashMap<u64, Early>,
    /// Per number - 1: its root.
    roots: Vec<u32>,
    /// When the run began here, and the multicasts this rank receives that no datagram (nor
    /// offer) reached yet, by sequence number: past `began` + half the suspicion time, each
    /// tells its root once that it waits (`say_waiting`).
    began: wire::Nanos,
    unheard: Vec<u64>,
    /// Unicast repairs out (`heal::serve_on`): waited for before the run goes.
    repairs: p2p::SharedSends,
    /// Point-to-point multicasts: requests, and per action how many are still out.
    p2p: Requests,
    p2p_left: Vec<(ActionId, usize)>,
    p2p_done: Vec<ActionId>,
    rbuf: Vec<u8>,
    cbuf: Vec<u8>,
}

impl McastRun {
    /// Reserves the run's sequence numbers on the communicator.
    pub fn begin(state: Arc<Mutex<CommState>>, n: &Numbering) -> McastRun {
        let (base, began) = {
            let mut st = lock(&state);
            let base = st.seq;
            st.seq += u64::from(n.total);
            let mut began = 0;
            if let Path::Mcast(chan) = &mut st.path {
                chan.early_dgrams.forget_through(base);
                // The acks of an eager broadcast this rank left early stay for `settle`.
                let owed = chan.deferred.as_ref().map(|d| d.seq());
                chan.early_control
                    .retain(|(_, m)| control_seq(m).is_some_and(|s| s > base || Some(s) == owed));
                chan.goal_kept
                    .retain(|m| HealMsg::decode(m).is_some_and(|h| h.seq() > base));
                began = chan.now();
            }
            (base, began)
        };
        let unheard = (1..=u64::from(n.total))
            .filter(|&k| n.recv[k as usize - 1])
            .map(|k| base + k)
            .collect();
        McastRun {
            state,
            base,
            total: u64::from(n.total),
            recv: n.recv.clone(),
            recv_left: n.recv.iter().filter(|&&r| r).count(),
            active: Vec::new(),
            early: HashMap::new(),
            roots: n.root.clone(),
            began,
            unheard,
            repairs: p2p::SharedSends::default(),
            p2p: Requests::default(),
            p2p_left: Vec::new(),
            p2p_done: Vec::new(),
            rbuf: vec![0u8; 65536],
            cbuf: vec![0u8; wire::control::MAX_CONTROL_LEN],
        }
    }

    /// Starts multicast number `k` of the run from this rank, of `data`.
    pub fn start_send(&mut self, id: ActionId, k: u32, data: Region) -> Result<(), OpError> {
        let seq = self.base + u64::from(k);
        let state = self.state.clone();
        let mut st = lock(&state);
        let (rank, size, private) = (st.rank, st.size, st.private.0);
        match &mut st.path {
            Path::Mcast(chan) => {
                let chan: &mut Channel = chan;
                let now = chan.now();
                let receivers: Vec<u32> = (0..size).filter(|&r| r != rank).collect();
                let via = chan.goal_path.start(data.len());
                let mut tx = McastSender::new(
                    &chan.ctx,
                    seq,
                    rank,
                    &receivers,
                    data.len(),
                    &chan.params,
                    now,
                );
                // Receivers that asked before this rank got here.
                chan.early_control
                    .retain(|(src, msg)| match control_seq(msg) {
                        Some(s) if s == seq => {
                            let _ = tx.handle_control(now, *src, msg);
                            false
                        }
                        _ => true,
                    });
                if via == Via::P2p {
                    // No datagram: every receiver is offered the data at once.
                    for r in tx.take_all() {
                        offer_on(private, TAG_GOAL_HEAL, r, seq, data.len())?;
                    }
                } else {
                    stats::add(&COUNTERS.bytes_mcast, data.len() as u64);
                }
                let frag = chan.params.frag();
                self.active.push(Active::Send {
                    id,
                    seq,
                    tx,
                    data,
                    via,
                    frag,
                    served: Vec::new(),
                });
            }
            _ => {
                let tag = p2p_tag(seq);
                let others = (0..size).filter(|&r| r != rank);
                let mut n = 0;
                for r in others {
                    self.p2p.isend_region(private, r, tag, data, id)?;
                    n += 1;
                }
                self.p2p_left.push((id, n));
                if n == 0 {
                    self.p2p_done.push(id);
                }
            }
        }
        Ok(())
    }

    /// Starts receiving multicast number `k` of the run, from `root`, into `buf`.
    pub fn start_recv(
        &mut self,
        id: ActionId,
        k: u32,
        root: u32,
        buf: Region,
    ) -> Result<(), OpError> {
        let seq = self.base + u64::from(k);
        let state = self.state.clone();
        let mut st = lock(&state);
        let (private, rank) = (st.private.0, st.rank);
        match &mut st.path {
            Path::Mcast(chan) => {
                let now = chan.now();
                let mut rx = None;
                if let Some(e) = self.early.remove(&seq) {
                    if e.rx.rx.root() != root {
                        return Err(wrong_root(seq, e.rx.rx.root(), root));
                    }
                    if e.buf.len() > buf.len() {
                        return Err(truncated(seq, root, e.buf.len(), buf.len()));
                    }
                    let head = buf.sub(0, e.buf.len()).expect("checked against the buffer");
                    head.with_mut(|b| b.copy_from_slice(&e.buf));
                    rx = Some(e.rx);
                }
                let mut a = Active::Recv {
                    id,
                    seq,
                    root,
                    rx,
                    buf,
                };
                for d in chan.early_dgrams.take(seq) {
                    accept(chan, &mut a, now, &d, rank)?;
                }
                self.active.push(a);
            }
            _ => {
                self.p2p
                    .irecv_region(private, root as c_int, p2p_tag(seq), buf, id)?;
                self.p2p_left.push((id, 1));
            }
        }
        Ok(())
    }

    /// Moves every active multicast on; completed actions go to `done`. `wait`: a full
    /// device queue may hold the caller until it takes the datagrams (the caller waits for
    /// the run anyway); otherwise nothing here waits, and what the queue refused goes out at
    /// a later call.
    pub fn progress(&mut self, done: &mut Vec<ActionId>, wait: bool) -> Result<(), OpError> {
        if !self.p2p_left.is_empty() {
            let mut finished = std::mem::take(&mut self.p2p_done);
            self.p2p.testsome(&mut finished)?;
            for id in finished {
                if let Some(i) = self.p2p_left.iter().position(|&(a, _)| a == id) {
                    self.p2p_left[i].1 = self.p2p_left[i].1.saturating_sub(1);
                    if self.p2p_left[i].1 == 0 {
                        self.p2p_left.swap_remove(i);
                        done.push(id);
                    }
                }
            }
        }
        if !self.repairs.is_empty() {
            self.repairs.test()?;
        }
        if self.active.is_empty() && self.recv_left == 0 {
            return Ok(());
        }
        let state = self.state.clone();
        let mut st = lock(&state);
        let (private, rank) = (st.private.0, st.rank);
        let Path::Mcast(chan) = &mut st.path else {
            return Ok(());
        };
        let chan: &mut Channel = chan;
        let now = chan.now();
        self.take_datagrams(chan, now, rank)?;
        if self.recv_left > 0 {
            self.take_repairs(chan, now, private, rank)?;
            self.say_waiting(chan, now, private)?;
        }
        for e in self.early.values_mut() {
            tend(&mut e.rx.rx, now, private)?;
        }
        // Control messages, to the sender of their multicast.
        if self.active.iter().any(|a| matches!(a, Active::Send { .. })) {
            while let Some((src, len)) = p2p::try_recv_any(private, TAG_CONTROL, &mut self.cbuf)? {
                let msg = &self.cbuf[..len];
                let Some(seq) = control_seq(msg) else {
                    continue;
                };
                let tx = self.active.iter_mut().find_map(|a| match a {
                    Active::Send { seq: s, tx, .. } if *s == seq => Some(tx),
                    _ => None,
                });
                match tx {
                    Some(tx) => {
                        let _ = tx.handle_control(now, src, msg);
                    }
                    None => chan.early_control.push((src, msg.to_vec())),
                }
            }
        }
        let mut i = 0;
        while i < self.active.len() {
            let finished = match &mut self.active[i] {
                Active::Send {
                    seq,
                    tx,
                    data,
                    via,
                    frag,
                    served,
                    ..
                } => {
                    let before = tx.stats();
                    if *via != Via::P2p {
                        data.with_mut(|d| transmit(chan, tx, now, d, wait))?;
                        if tx.poll_timeout().is_some_and(|t| t <= now) {
                            tx.handle_timeout(now);
                            data.with_mut(|d| transmit(chan, tx, now, d, wait))?;
                        }
                    }
                    count_tx(before, tx.stats());
                    // Unicast to the receivers multicast does not reach.
                    for r in tx.take_unreached(now, chan.suspect_ns, false) {
                        offer_on(private, TAG_GOAL_HEAL, r, *seq, data.len())?;
                    }
                    for (to, first) in tx.take_serve() {
                        data.with_mut(|d| {
                            serve_on(
                                &mut self.repairs,
                                private,
                                TAG_GOAL_HEAL,
                                to,
                                *seq,
                                first,
                                *frag,
                                d,
                            )
                        })?;
                        served.push(to);
                    }
                    tx.is_done()
                }
                Active::Recv { rx, .. } => match rx {
                    None => false,
                    Some(r) => {
                        tend(&mut r.rx, now, private)?;
                        r.is_done()
                    }
                },
            };
            if finished {
                let a = self.active.swap_remove(i);
                match &a {
                    Active::Recv { seq, .. } => {
                        // Late copies of it are dropped from now on.
                        if let Some(r) = self.recv.get_mut((seq - self.base - 1) as usize) {
                            if *r {
                                *r = false;
                                self.recv_left -= 1;
                            }
                        }
                    }
                    Active::Send {
                        via, data, served, ..
                    } => {
                        let change = chan
                            .goal_path
                            .finished(*via, data.len(), !served.is_empty());
                        let mut said = chan.goal_said;
                        super::heal::root_path_changed(
                            chan,
                            &mut said,
                            rank,
                            "GOAL runs",
                            change,
                            served,
                        );
                        chan.goal_said = said;
                    }
                }
                done.push(match a {
                    Active::Send { id, .. } | Active::Recv { id, .. } => id,
                });
            } else {
                i += 1;
            }
        }
        if !self.repairs.is_empty() {
            self.repairs.test()?;
        }
        Ok(())
    }

    /// Datagrams, to the receiver of their multicast.
    fn take_datagrams(
        &mut self,
        chan: &mut Channel,
        now: wire::Nanos,
        rank: u32,
    ) -> Result<(), OpError> {
        while let Some(len) = chan.sock.recv(&mut self.rbuf)? {
            let d = &self.rbuf[..len];
            let Some(seq) = packet::peek_seq(d) else {
                continue;
            };
            let mine = self.active.iter().position(|a| match a {
                Active::Recv { seq: s, .. } => *s == seq,
                Active::Send { .. } => false,
            });
            if let Some(i) = mine {
                accept(chan, &mut self.active[i], now, d, rank)?;
                continue;
            }
            match seq.checked_sub(self.base) {
                // This run's, not started here yet: receive it now.
                Some(k) if k >= 1 && k <= self.total && self.recv[k as usize - 1] => {
                    if let Some(e) = self.early.get_mut(&seq) {
                        count_outcome(e.rx.rx.handle_datagram(now, d, &mut e.buf));
                    } else if let Some(e) = early_receiver(chan, now, d, seq, rank) {
                        self.early.insert(seq, e);
                    }
                }
                // A later run's (a faster root): keep it for then.
                Some(k) if k > self.total => chan.early_dgrams.keep(seq, d),
                // This rank's own, looped back; an old one; or beyond what is kept.
                _ => {}
            }
        }
        Ok(())
    }

    /// The roots' unicast repairs (`HealMsg` on `TAG_GOAL_HEAL`), kept ones of this run
    /// first: to the receiver of their multicast, made by an offer when no datagram made it.
    fn take_repairs(
        &mut self,
        chan: &mut Channel,
        now: wire::Nanos,
        private: MPI_Comm,
        rank: u32,
    ) -> Result<(), OpError> {
        if !chan.goal_kept.is_empty() {
            for m in std::mem::take(&mut chan.goal_kept) {
                self.repair(chan, now, private, rank, m)?;
            }
        }
        while let Some((_, m)) = p2p::recv_any_probed(private, TAG_GOAL_HEAL)? {
            self.repair(chan, now, private, rank, m)?;
        }
        Ok(())
    }

    fn repair(
        &mut self,
        chan: &mut Channel,
        now: wire::Nanos,
        private: MPI_Comm,
        rank: u32,
        m: Vec<u8>,
    ) -> Result<(), OpError> {
        let Some(h) = HealMsg::decode(&m) else {
            return Ok(());
        };
        let seq = h.seq();
        let k = match seq.checked_sub(self.base) {
            Some(k) if k > self.total => {
                chan.goal_kept.push(m);
                return Ok(());
            }
            Some(k) if k >= 1 => k as usize,
            _ => return Ok(()),
        };
        // One for a multicast that is over here (it finished by multicast before the offer
        // came) is dropped.
        if !self.recv[k - 1] {
            return Ok(());
        }
        let root = self.roots[k - 1];
        let made = |len: usize| {
            Rx::new(McastReceiver::new(
                &chan.ctx,
                seq,
                root,
                rank,
                len,
                &chan.params,
                now,
            ))
        };
        let mine = self.active.iter_mut().find_map(|a| match a {
            Active::Recv {
                seq: s, rx, buf, ..
            } if *s == seq => Some((rx, *buf)),
            _ => None,
        });
        if let Some((rx, buf)) = mine {
            if rx.is_none() {
                let HealMsg::Offer { len, .. } = h else {
                    return Ok(());
                };
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                if len > buf.len() {
                    return Err(truncated(seq, root, len, buf.len()));
                }
                *rx = Some(made(len));
            }
            let r = rx.as_mut().expect("made above");
            let sub = buf
                .sub(0, r.rx.total_len())
                .expect("checked against the buffer");
            return sub.with_mut(|b| r.heal(&h, now, private, b));
        }
        if let std::collections::hash_map::Entry::Vacant(v) = self.early.entry(seq) {
            let HealMsg::Offer { len, .. } = h else {
                return Ok(());
            };
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= isize::MAX as usize)
                .ok_or_else(|| truncated(seq, root, usize::MAX, isize::MAX as usize))?;
            v.insert(Early {
                rx: made(len),
                buf: vec![0u8; len],
            });
        }
        let e = self.early.get_mut(&seq).expect("made above");
        e.rx.heal(&h, now, private, &mut e.buf)
    }

    /// Half the suspicion time into the run, each multicast this rank receives that no
    /// datagram nor offer reached tells its root once that this rank waits for it (an empty
    /// NACK at cum 0): the root then offers the rest by unicast when its own datagrams have
    /// gone unanswered that long (it cannot tell a waiting receiver that multicast does not
    /// reach from a late one otherwise).
    fn say_waiting(
        &mut self,
        chan: &Channel,
        now: wire::Nanos,
        private: MPI_Comm,
    ) -> Result<(), OpError> {
        if self.unheard.is_empty() || now < self.began.saturating_add(chan.suspect_ns / 2) {
            return Ok(());
        }
        let heard = |seq: u64| {
            self.early.contains_key(&seq)
                || self
                    .active
                    .iter()
                    .any(|a| matches!(a, Active::Recv { seq: s, rx: Some(_), .. } if *s == seq))
        };
        let mut out = Vec::new();
        for seq in std::mem::take(&mut self.unheard) {
            let k = (seq - self.base) as usize;
            if heard(seq) || !self.recv[k - 1] {
                continue;
            }
            Control::Nack {
                seq,
                cum: 0,
                missing: Vec::new(),
            }
            .encode(&mut out);
            p2p::send_bytes(private, self.roots[k - 1], TAG_CONTROL, &out)?;
        }
        Ok(())
    }

    /// Nothing in flight and nothing left to receive by multicast in this run (a rank that
    /// will receive a multicast later must keep reading and acknowledging it meanwhile).
    pub fn is_idle(&self) -> bool {
        self.active.is_empty()
            && self.p2p_left.is_empty()
            && self.recv_left == 0
            && self.repairs.is_empty()
    }
}

fn wrong_root(seq: u64, from: u32, root: u32) -> OpError {
    OpError::Truncated(format!(
        "GOAL multicast {seq} comes from rank {from}, but this rank's matching `mrecv` names \
         rank {root}: the ranks' programs disagree"
    ))
}

/// A receiver's timers and the acks/NACKs it has to send to its root.
fn tend(rx: &mut McastReceiver, now: wire::Nanos, private: MPI_Comm) -> Result<(), OpError> {
    if rx.poll_timeout().is_some_and(|t| t <= now) {
        rx.handle_timeout(now);
    }
    while let Some(msg) = rx.poll_control(now) {
        p2p::send_bytes(private, rx.root(), TAG_CONTROL, &msg)?;
    }
    Ok(())
}

fn truncated(seq: u64, root: u32, len: usize, room: usize) -> OpError {
    OpError::Truncated(format!(
        "GOAL multicast {seq}: root rank {root} sends {len} bytes, the `mrecv` has room for \
         {room} (the message would be truncated)"
    ))
}

/// A receiver of the library's own for multicast `seq`, made from its first datagram (which
/// it then takes), or None if the datagram does not authenticate as one of its fragments.
fn early_receiver(
    chan: &Channel,
    now: wire::Nanos,
    d: &[u8],
    seq: u64,
    rank: u32,
) -> Option<Early> {
    let Ok((h, _)) = packet::decode(&chan.ctx, d) else {
        stats::add(&COUNTERS.rejected, 1);
        return None;
    };
    if h.kind != wire::Kind::Data || h.seq != seq {
        return None;
    }
    let len = usize::try_from(h.total_len).ok()?;
    let mut e = Early {
        rx: Rx::new(McastReceiver::new(
            &chan.ctx,
            seq,
            h.root,
            rank,
            len,
            &chan.params,
            now,
        )),
        buf: vec![0u8; len],
    };
    count_outcome(e.rx.rx.handle_datagram(now, d, &mut e.buf));
    Some(e)
}

fn p2p_tag(seq: u64) -> c_int {
    TAG_P2P_BASE + (seq % TAG_P2P_SPAN) as c_int
}

/// One datagram for a receiving multicast: the first makes its receiver.
fn accept(
    chan: &Channel,
    a: &mut Active,
    now: wire::Nanos,
    d: &[u8],
    rank: u32,
) -> Result<(), OpError> {
    let Active::Recv {
        seq, root, rx, buf, ..
    } = a
    else {
        return Ok(());
    };
    if rx.is_none() {
        let Ok((h, _)) = packet::decode(&chan.ctx, d) else {
            stats::add(&COUNTERS.rejected, 1);
            return Ok(());
        };
        if h.kind != wire::Kind::Data || h.seq != *seq {
            return Ok(());
        }
        if h.root != *root {
            return Err(wrong_root(*seq, h.root, *root));
        }
        let len = usize::try_from(h.total_len).unwrap_or(usize::MAX);
        if len > buf.len() {
            return Err(truncated(*seq, *root, len, buf.len()));
        }
        *rx = Some(Rx::new(McastReceiver::new(
            &chan.ctx,
            *seq,
            *root,
            rank,
            len,
            &chan.params,
            now,
        )));
    }
    let r = &mut rx.as_mut().expect("made above").rx;
    let len = r.total_len();
    let sub = buf.sub(0, len).expect("checked against the buffer");
    sub.with_mut(|b| count_outcome(r.handle_datagram(now, d, b)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::{self, validate};

    const THREE: &str = "num_ranks 3;\n\
        rank #0 { a: mrecv 0,4 from 2; b: mcast 0,4; c: mrecv 0,4 from 1; d: mcast 4,4; }\n\
        rank #1 { a: mcast 0,4; b: mrecv 0,4 from 0; c: mrecv 4,4 from 0; d: mrecv 8,4 from 2; }\n\
        rank #2 { a: mrecv 0,4 from 0; b: mrecv 4,4 from 1; c: mcast 8,4; d: mrecv 12,4 from 0; }\n";

    #[test]
    fn every_rank_numbers_a_multicast_alike() {
        let parsed = goal::parse_any(THREE.as_bytes()).unwrap();
        let p = &parsed.program;
        let m = validate::match_messages(p, &parsed.source, None);
        let nums: Vec<Numbering> = (0..3)
            .map(|r| number(&p.ranks[r as usize].schedule, r, 3))
            .collect();
        assert!(nums.iter().all(|n| n.total == 4), "{nums:?}");
        assert_eq!(m.mcast.len(), 8, "4 multicasts, 2 receivers each");
        for &(root, s, rank, r) in &m.mcast {
            let k = nums[root as usize].of[s as usize];
            assert!((1..=4).contains(&k));
            assert_eq!(
                k, nums[rank as usize].of[r as usize],
                "root {root} -> {rank}"
            );
            assert!(nums[rank as usize].recv[k as usize - 1]);
            assert!(!nums[root as usize].recv[k as usize - 1]);
        }
        // Rank 0's two multicasts come first, in action order; then rank 1's, then rank 2's.
        assert_eq!(nums[0].of, vec![4, 1, 3, 2]);
        assert_eq!(nums[1].of, vec![3, 1, 2, 4]);
        assert_eq!(nums[0].recv, vec![false, false, true, true]);
    }

    #[test]
    fn a_schedule_without_multicasts_has_no_numbers() {
        let parsed = goal::parse_any(
            b"num_ranks 2;\nrank #0 { send 0,4 to 1; }\nrank #1 { recv 0,4 from 0; }\n",
        )
        .unwrap();
        let n = number(&parsed.program.ranks[0].schedule, 0, 2);
        assert!(n.is_empty());
        assert_eq!(n, Numbering::default());
    }
}
