//! One collective operation's actions on the wire: the `sched::Backend` that the executor
//! drives. Scouts are zero-byte non-blocking MPI messages on the private duplicate; the
//! multicast actions run the `wire` state machines over the channel's socket, with
//! receivers' control messages going back to the root over MPI (reliable, ordered).

use super::Channel;
use crate::host::{self, p2p, MPI_Comm};
use crate::net;
use crate::sched::{ActionId, Backend, Op};
use crate::stats::{self, COUNTERS};
use crate::wire::{self, McastReceiver, McastSender, Outcome, ReleaseWaiter};
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::Duration;

/// MPI tags on the private duplicate. Scouts use the schedule's own tag.
pub const TAG_CONTROL: c_int = 2;

/// First barrier release query after this much silence (nanoseconds).
const RELEASE_QUERY_AFTER: wire::Nanos = 10_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bcast,
    Barrier,
}

/// The data an operation moves: the root reads, the others write.
pub enum Data<'a> {
    Send(&'a [u8]),
    Recv(&'a mut [u8]),
    None,
}

/// Why an operation could not complete.
#[derive(Debug)]
pub enum OpError {
    Mpi(host::MpiError),
    Io(std::io::Error),
    /// No progress within the configured timeout: `msg` names who is missing; `missing` are
    /// their ranks in `comm` (the communicator the operation's ranks are numbered in, where
    /// this process is `rank`), for the diagnosis the abort message adds; `elsewhere` says
    /// what ranks that run mpicast with the same settings are likely doing instead.
    Stalled {
        msg: String,
        comm: host::SendComm,
        rank: u32,
        missing: Vec<u32>,
        elsewhere: String,
        /// Lines saying that multicast stopped arriving at some ranks (`reach::StopFacts`),
        /// when the operation's record shows it; those ranks are not in `missing`.
        stopped: String,
    },
    Unsupported(&'static str),
    /// A message longer than the buffer that receives it, or one that the receiving rank's
    /// program does not expect from that root (GOAL programs that disagree).
    Truncated(String),
    /// A broadcast whose root sends `sent` bytes while this rank posted `posted`: seen at
    /// the first fragment; this rank has declined the operation at the root.
    SizeMismatch {
        root: u32,
        sent: u64,
        posted: u64,
    },
    /// The operation's root switched it (`transport::heal`): every rank of the communicator
    /// carries it by the host MPI instead (a barrier: it is released), then probes.
    Switched,
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpError::Mpi(e) => write!(f, "{e}"),
            OpError::Io(e) => write!(f, "socket error: {e}"),
            OpError::Stalled { msg: m, .. } | OpError::Truncated(m) => f.write_str(m),
            OpError::Unsupported(w) => write!(f, "internal error: {w}"),
            OpError::SizeMismatch { root, sent, posted } => write!(
                f,
                "the root, rank {root}, broadcasts {sent} bytes, this rank posted {posted}"
            ),
            OpError::Switched => f.write_str("the operation was switched to the host MPI"),
        }
    }
}

impl From<host::MpiError> for OpError {
    fn from(e: host::MpiError) -> Self {
        OpError::Mpi(e)
    }
}
impl From<std::io::Error> for OpError {
    fn from(e: std::io::Error) -> Self {
        OpError::Io(e)
    }
}

/// An eager broadcast whose root returned once its datagrams were out (`Channel::deferred`):
/// its sender, kept to take the acknowledgements, and the copy its responder repairs from.
pub struct Deferred {
    tx: McastSender,
    data: Arc<[u8]>,
    seq: u64,
    rank: u32,
    size: u32,
    /// Its sends of data by the host MPI (`heal::serve`), until they complete.
    uni: p2p::SharedSends,
    /// A step from another call (`Channel::settle_step`) has looked at it: its clock and
    /// the control messages kept for it were taken then.
    resumed: bool,
}

/// What one `Channel::settle_step` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SettleStep {
    /// Nothing is owed any more (no eager broadcast waits for acknowledgements).
    pub done: bool,
    /// A receiver acknowledged, asked, or was served: the receivers are at it.
    pub moved: bool,
}

impl Deferred {
    /// The broadcast's sequence number on its communicator.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl Channel {
    /// The ranks among `missing` (channel ranks) that multicast stopped reaching, as the
    /// lines of an abort message, and the rest of `missing`. `unreached`: the sender's record
    /// of them (`McastSender::unreached`); `at_me`: this receiver saw no datagram of the group
    /// for the whole timeout (`unreached` is then this rank).
    pub fn stopped_at(
        &self,
        unreached: &[u32],
        missing: &[u32],
        at_me: bool,
    ) -> (String, Vec<u32>) {
        let rest: Vec<u32> = missing
            .iter()
            .copied()
            .filter(|r| at_me || !unreached.contains(r))
            .collect();
        if unreached.is_empty() {
            return (String::new(), rest);
        }
        let (job_size, mpi) = super::job_and_mpi();
        let facts = crate::reach::StopFacts {
            group: self.group,
            iface: self.iface_name.clone(),
            stopped_at: unreached
                .iter()
                .filter_map(|&r| self.members.get(r as usize).cloned())
                .collect(),
            earlier_ops: self.ops_done,
            at_receiver: at_me,
            timeout_ms: self.params.stall_timeout / 1_000_000,
            job_size,
            mpi: mpi.to_string(),
        };
        (facts.render(), rest)
    }

    /// Collects the acknowledgements of the eager broadcast this rank returned from early, if
    /// any, then drops its copy. Called before anything else uses the channel (they come by
    /// MPI on `private` and must not be taken for a later operation's), and when the channel
    /// closes. The receivers finish that broadcast without this rank (its responder thread
    /// repairs), so this waits only for them to get there; the tail probe and NACKs by MPI
    /// are served as in the broadcast itself.
    pub fn settle(&mut self, private: MPI_Comm) -> Result<(), OpError> {
        let Some(mut d) = self.deferred.take() else {
            return Ok(());
        };
        let seq = d.seq;
        let now = self.now();
        d.tx.resume(now);
        self.replay_control(seq, &mut d.tx, now);
        // Control messages, then datagrams, are read into the channel's buffer (no allocation
        // on the way to the next operation).
        let mut buf = std::mem::take(&mut self.settle_buf);
        buf.resize(65536, 0);
        let result = self.collect(&mut d, private, &mut buf);
        self.settle_buf = buf;
        if let Some(r) = &self.responder {
            r.drop_held(self.ctx.comm, seq);
        }
        result
    }

    /// What an eager broadcast this rank returned from early still owes, looked at once
    /// without waiting, from any call of the application while the channel is idle (the
    /// duty of `coll::duty`: a root whose receivers may need their NACKs by the host MPI
    /// served while it sits in a host call): the receivers' acknowledgements and NACKs taken,
    /// offers and repairs by the host MPI sent, the waiters of a barrier it released answered
    /// (rank 0). Never a stall: a receiver may be computing still, and the next operation's
    /// `settle` judges that. Done once every receiver acknowledged and the repairs went.
    pub fn settle_step(&mut self, private: MPI_Comm) -> Result<SettleStep, OpError> {
        let Some(mut d) = self.deferred.take() else {
            return Ok(SettleStep {
                done: true,
                moved: false,
            });
        };
        let seq = d.seq;
        if !d.resumed {
            let now = self.now();
            d.tx.resume(now);
            self.replay_control(seq, &mut d.tx, now);
            d.resumed = true;
        }
        let mut buf = std::mem::take(&mut self.settle_buf);
        buf.resize(65536, 0);
        let r = self.settle_once(&mut d, private, &mut buf);
        self.settle_buf = buf;
        let moved = match r {
            Ok(m) => m,
            Err(e) => {
                self.deferred = Some(d);
                return Err(e);
            }
        };
        if d.tx.is_done() && d.uni.test()? == 0 {
            if let Some(r) = &self.responder {
                r.drop_held(self.ctx.comm, seq);
            }
            return Ok(SettleStep { done: true, moved });
        }
        self.deferred = Some(d);
        Ok(SettleStep { done: false, moved })
    }

    /// One look of `collect` (and of `settle_step`) at broadcast `d`: true if a receiver
    /// acknowledged, asked, or was offered or served the rest.
    fn settle_once(
        &mut self,
        d: &mut Deferred,
        private: MPI_Comm,
        buf: &mut [u8],
    ) -> Result<bool, OpError> {
        let seq = d.seq;
        let now = self.now();
        let mut moved = self.answer_release_asks(private, d.rank)?;
        moved |= take_control(self, private, &mut d.tx, seq, buf, now)?;
        // Receivers that asked by MPI and that neither multicast nor the responder reached
        // (UDP blocked while the host MPI works): the rest by unicast.
        for r in d.tx.take_unreached(now, self.suspect_ns, false) {
            super::heal::offer(private, r, seq, d.data.len())?;
            self.trouble = true;
            moved = true;
        }
        for (r, first) in d.tx.take_serve() {
            let frag = self.params.frag();
            super::heal::serve(&mut d.uni, private, r, seq, first, frag, &d.data)?;
            moved = true;
        }
        if d.tx.is_done() {
            return Ok(moved);
        }
        let before = d.tx.stats();
        if d.tx.poll_timeout().is_some_and(|t| t <= now) {
            d.tx.handle_timeout(now);
        }
        let data = d.data.clone();
        transmit(self, &mut d.tx, now, &data, true)?;
        drain(self, seq, buf);
        count_tx(before, d.tx.stats());
        Ok(moved)
    }

    /// `settle`'s loop: until every receiver acknowledged broadcast `d`.
    fn collect(
        &mut self,
        d: &mut Deferred,
        private: MPI_Comm,
        buf: &mut [u8],
    ) -> Result<(), OpError> {
        let seq = d.seq;
        loop {
            self.settle_once(d, private, buf)?;
            if d.tx.is_done() {
                while d.uni.test()? > 0 {
                    super::progress::poll();
                    std::thread::yield_now();
                }
                return Ok(());
            }
            let now = self.now();
            if d.tx.stalled(now) {
                let missing = d.tx.pending_ranks();
                let (stopped, rest) = self.stopped_at(&d.tx.unreached(false), &missing, false);
                return Err(OpError::Stalled {
                    msg: format!(
                        "{}: the root returned at once (eager) and has had no acknowledgement \
                         for {} ms since it came back for them; {} still missing data",
                        describe(Kind::Bcast, seq, d.size, d.rank),
                        self.params.stall_timeout / 1_000_000,
                        crate::config::rank_list(&missing)
                    ),
                    comm: host::SendComm(private),
                    rank: d.rank,
                    elsewhere: not_multicast(Kind::Bcast, d.data.len(), true),
                    missing: rest,
                    stopped,
                });
            }
            // Not `ack_wait`'s sleep: the acknowledgements owed here usually arrive within
            // moments, and sleeping made 64 KiB eager broadcasts slower
            // (bench/results/2026-11-25-cluster/README.md).
            super::progress::poll();
            std::thread::yield_now();
        }
    }
}

enum Mcast {
    Idle,
    Sender(McastSender, ActionId),
    Receiver(McastReceiver, ActionId),
    Waiter(ReleaseWaiter, ActionId),
}

pub struct OpBackend<'a> {
    chan: &'a mut Channel,
    private: MPI_Comm,
    rank: u32,
    size: u32,
    seq: u64,
    kind: Kind,
    data: Data<'a>,
    reqs: p2p::Requests,
    /// Peers of scout receives not yet complete, for the timeout message.
    waiting_for: Vec<(ActionId, u32)>,
    mcast: Mcast,
    /// The root of the operation (for control messages).
    root: u32,
    dgram: Vec<u8>,
    rbuf: Vec<u8>,
    cbuf: Vec<u8>,
    last_progress: wire::Nanos,
    timeout: wire::Nanos,
    /// An eager broadcast that fits the window: its root's responder keeps a copy, so that
    /// receivers ask it for lost fragments by UDP, not the root by MPI (`repair_to`), and the
    /// root may return before the acknowledgements (`Channel::deferred`).
    eager: bool,
    /// Receiver of such a broadcast: its root's responder.
    repair_to: Option<std::net::SocketAddrV4>,
    /// Receivers sent their scouts before the root multicast (not an eager broadcast): at a
    /// stall, every receiver still missing data is known to be in the operation.
    scouted: bool,
    /// A receiver's datagrams of this communicator's group read from the multicast socket,
    /// and its fragments accepted from the multicast socket and from unicast repairs: whether
    /// multicast still reaches this rank.
    mcast_seen: u64,
    mcast_accepted: u64,
    repair_accepted: u64,
    /// Root of such a broadcast: its responder holds a copy, dropped when the sender is done.
    held: bool,
    /// A receiver that took a shorter message than it posted (the root's size), as the host
    /// MPI does (`takes_shorter_message`).
    received: Option<usize>,
    /// The root's sends of data by the host MPI to receivers multicast does not reach
    /// (`heal::serve`): the operation completes once they have.
    uni: p2p::SharedSends,
    /// A barrier waiter released by the multicast datagram (not by a query's answer).
    released_by_mcast: bool,
    /// A barrier waiter asks rank 0 for its release by the host MPI from then on.
    ask_release_at: wire::Nanos,
    /// A receiver that asked for the rest by unicast (`HealMsg::Offer`) finishes only once
    /// it came: the root's send of it must find this rank.
    unicast: Unicast,
    /// After a second of waiting, the name service says which call this rank waits in (for
    /// the messages of the ranks that wait for it).
    linger: crate::presence::Linger,
}

/// Bytes of an operation's receive buffer: any datagram fits.
const RBUF_LEN: usize = 65536;

impl Drop for OpBackend<'_> {
    fn drop(&mut self) {
        // The buffers go back to the channel for the next operation.
        self.chan.op_bufs = (
            std::mem::take(&mut self.dgram),
            std::mem::take(&mut self.rbuf),
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unicast {
    No,
    Asked,
    Got,
}

impl<'a> OpBackend<'a> {
    pub fn new(
        chan: &'a mut Channel,
        private: MPI_Comm,
        rank: u32,
        size: u32,
        seq: u64,
        kind: Kind,
        data: Data<'a>,
    ) -> Self {
        let now = chan.now();
        let timeout = chan.params.stall_timeout;
        let (mut dgram, mut rbuf) = std::mem::take(&mut chan.op_bufs);
        dgram.clear();
        dgram.reserve(RBUF_LEN);
        rbuf.resize(RBUF_LEN, 0);
        OpBackend {
            chan,
            private,
            rank,
            size,
            seq,
            kind,
            data,
            reqs: p2p::Requests::default(),
            waiting_for: Vec::new(),
            mcast: Mcast::Idle,
            root: 0,
            dgram,
            rbuf,
            cbuf: vec![0u8; wire::control::MAX_CONTROL_LEN],
            last_progress: now,
            timeout,
            eager: false,
            repair_to: None,
            scouted: true,
            mcast_seen: 0,
            mcast_accepted: 0,
            repair_accepted: 0,
            held: false,
            received: None,
            uni: p2p::SharedSends::default(),
            released_by_mcast: false,
            ask_release_at: wire::Nanos::MAX,
            unicast: Unicast::No,
            linger: crate::presence::Linger::new(
                match kind {
                    Kind::Bcast => "MPI_Bcast",
                    Kind::Barrier => "MPI_Barrier",
                },
                size,
            ),
        }
    }

    /// The length of the message this receiver took, when it was shorter than the buffer
    /// (only where the host MPI would take it too: `takes_shorter_message`).
    pub fn received(&self) -> Option<usize> {
        self.received
    }

    /// A broadcast without scouts (`algo::Sync::Eager`): see `eager`.
    pub fn eager(mut self, eager: bool) -> Self {
        let len = match &self.data {
            Data::Send(d) => d.len(),
            Data::Recv(d) => d.len(),
            Data::None => 0,
        };
        self.eager = eager && self.chan.params.fits_window(len);
        self.scouted = !eager;
        self
    }

    /// Gives this rank's responder a copy of eager broadcast `seq` to answer repair queries
    /// from.
    fn hold(&mut self, seq: u64, copy: &Arc<[u8]>) {
        if let Some(r) = &self.chan.responder {
            r.hold(
                self.chan.ctx.comm,
                seq,
                copy.clone(),
                self.chan.params.frag(),
            );
            self.held = true;
        }
    }

    /// Drives the multicast state machine; true if anything moved.
    fn drive_mcast(&mut self, done: &mut Vec<ActionId>) -> Result<bool, OpError> {
        let now = self.chan.now();
        let mut moved = false;
        let mut restart = None;
        match &mut self.mcast {
            Mcast::Idle => {}
            Mcast::Sender(tx, id) => {
                let data = match &self.data {
                    Data::Send(d) => *d,
                    _ => return Err(OpError::Unsupported("multicast send without data")),
                };
                let before = tx.stats();
                moved |= transmit(self.chan, tx, now, data, true)?;
                drain(self.chan, self.seq, &mut self.rbuf);
                moved |= take_control(self.chan, self.private, tx, self.seq, &mut self.cbuf, now)?;
                if tx.poll_timeout().is_some_and(|t| t <= now) {
                    tx.handle_timeout(now);
                }
                count_tx(before, tx.stats());
                for r in tx.take_unreached(now, self.chan.suspect_ns, self.scouted) {
                    super::heal::offer(self.private, r, self.seq, data.len())?;
                    self.chan.trouble = true;
                }
                for (r, first) in tx.take_serve() {
                    let frag = self.chan.params.frag();
                    super::heal::serve(
                        &mut self.uni,
                        self.private,
                        r,
                        self.seq,
                        first,
                        frag,
                        data,
                    )?;
                    moved = true;
                }
                if tx.is_done() && self.uni.test()? > 0 {
                    // Everyone has it, or has it on its way by the host MPI: those sends
                    // still read the buffer.
                    return Ok(moved);
                }
                if tx.is_done() {
                    if self.held {
                        if let Some(r) = &self.chan.responder {
                            r.drop_held(self.chan.ctx.comm, self.seq);
                        }
                    }
                    done.push(*id);
                    self.mcast = Mcast::Idle;
                    return Ok(true);
                }
                if tx.stalled(now) {
                    let missing = tx.pending_ranks();
                    let unreached = tx.unreached(self.scouted);
                    // Those the window holds back wait for the unreached, nothing else.
                    let held = if unreached.is_empty() {
                        Vec::new()
                    } else {
                        tx.held_back()
                    };
                    let missing: Vec<u32> =
                        missing.into_iter().filter(|r| !held.contains(r)).collect();
                    let waiting = if held.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({} received all that was sent and wait for them: the window \
                             cannot move)",
                            crate::config::rank_list(&held)
                        )
                    };
                    return Err(self.stalled_unreached(
                        format!(
                            "{}: the root has had no acknowledgement for {} ms; {} still \
                             missing data{waiting}",
                            describe(self.kind, self.seq, self.size, self.rank),
                            self.timeout / 1_000_000,
                            crate::config::rank_list(&missing)
                        ),
                        missing,
                        &unreached,
                    ));
                }
            }
            Mcast::Receiver(rx, id) => {
                let buf: &mut [u8] = match &mut self.data {
                    Data::Recv(d) => d,
                    _ => return Err(OpError::Unsupported("multicast receive without a buffer")),
                };
                // At most a burst per pass (a batch per system call), each batch stamped with
                // the time it was read: a receiver slower than the root would otherwise read
                // for longer than the NACK timer with one stale clock, and hold its
                // acknowledgement back until the socket is empty (the root's window stops
                // meanwhile).
                let mut burst = 0;
                let mut now = now;
                let mut batch = self.chan.take_rx_batch();
                while burst < RX_BURST {
                    let n = match self.chan.sock.recv_batch(&mut batch) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) => {
                            self.chan.rx_batch = batch;
                            return Err(e.into());
                        }
                    };
                    burst += n;
                    now = self.chan.now();
                    for i in 0..n {
                        self.mcast_seen += 1;
                        let d = batch.get(i);
                        if !keep_if_later(self.chan, self.seq, d) {
                            let got = count_outcome(rx.handle_datagram(now, d, buf));
                            self.mcast_accepted += got as u64;
                            moved |= got;
                        }
                    }
                    if n < batch.slots() {
                        break; // the socket is empty
                    }
                }
                self.chan.rx_batch = batch;
                if self.repair_to.is_some() {
                    if let Some(qs) = &self.chan.query_sock {
                        while let Ok(Some((len, _))) = qs.recv_from(&mut self.rbuf) {
                            let got =
                                count_outcome(rx.handle_datagram(now, &self.rbuf[..len], buf));
                            self.repair_accepted += got as u64;
                            moved |= got;
                        }
                    }
                }
                // The root's messages by the host MPI: the rest of the data, or the switch.
                while let Some(m) = self.chan.heal_msg(self.private, self.seq)? {
                    match wire::heal::HealMsg::decode(&m) {
                        Some(wire::heal::HealMsg::Data { first, payload, .. }) => {
                            if let Some(n) = rx.accept_range(now, first, payload, buf) {
                                stats::add(&COUNTERS.dgrams_recv, u64::from(n));
                                self.repair_accepted += u64::from(n);
                                moved |= n > 0;
                            }
                            self.unicast = Unicast::Got;
                        }
                        Some(wire::heal::HealMsg::Offer { .. })
                            if self.unicast == Unicast::No && !rx.is_done() =>
                        {
                            // Multicast does not reach this rank: the rest by unicast, which
                            // this rank now waits for.
                            wire::Control::Unicast {
                                seq: self.seq,
                                cum: rx.cum(),
                            }
                            .encode(&mut self.dgram);
                            p2p::send_bytes(self.private, rx.root(), TAG_CONTROL, &self.dgram)?;
                            self.unicast = Unicast::Asked;
                        }
                        Some(wire::heal::HealMsg::Switch { .. }) => {
                            wait_all(&mut self.reqs)?;
                            return Err(OpError::Switched);
                        }
                        Some(wire::heal::HealMsg::Offer { .. }) | None => {}
                    }
                }
                let root = self.root;
                if let Some(sent) = rx.mismatch() {
                    let posted = buf.len() as u64;
                    if sent < posted && takes_shorter_message() && self.received.is_none() {
                        restart = Some(sent as usize);
                    } else {
                        // Out of this operation at the root, then fail here at once.
                        rx.decline().encode(&mut self.dgram);
                        p2p::send_bytes(self.private, root, TAG_CONTROL, &self.dgram)?;
                        return Err(OpError::SizeMismatch { root, sent, posted });
                    }
                }
                {
                    if rx.poll_timeout().is_some_and(|t| t <= now) {
                        rx.handle_timeout(now);
                    }
                    while let Some(msg) = rx.poll_message(now) {
                        match (&msg, self.repair_to) {
                            // The root's responder repairs; acks go to the root, which
                            // collects them when it comes back for them.
                            (wire::Control::Nack { seq, missing, .. }, Some(to)) => {
                                if rx.quiet(now, self.chan.suspect_ns) {
                                    // The responder's repairs do not come either (UDP blocked
                                    // while the host MPI works?): the root hears it by MPI
                                    // too, and offers the rest by unicast (`settle`).
                                    msg.encode(&mut self.dgram);
                                    p2p::send_bytes(self.private, root, TAG_CONTROL, &self.dgram)?;
                                }
                                let q = &mut self.dgram;
                                wire::release::encode_repair_query(
                                    &self.chan.ctx,
                                    *seq,
                                    root,
                                    self.rank,
                                    missing,
                                    q,
                                );
                                // Not counted as a repair: a root that is merely late gets
                                // these too. Its responder counts the fragments it sends.
                                self.chan.query_sock()?.send_to(q, to)?;
                            }
                            _ => {
                                msg.encode(&mut self.dgram);
                                p2p::send_bytes(self.private, root, TAG_CONTROL, &self.dgram)?;
                            }
                        }
                    }
                    if rx.is_done() && self.unicast != Unicast::Asked {
                        done.push(*id);
                        self.mcast = Mcast::Idle;
                        repairs_carried(
                            self.chan,
                            self.rank,
                            self.mcast_accepted,
                            self.repair_accepted,
                        );
                        let by_mcast = self.mcast_accepted > 0 || self.repair_accepted == 0;
                        self.chan.record_delivery(
                            self.private,
                            root,
                            self.rank,
                            self.seq,
                            by_mcast,
                        )?;
                        return Ok(true);
                    }
                    if rx.stalled(now) {
                        let msg = format!(
                            "{}: no data from root rank {root} for {} ms",
                            describe(self.kind, self.seq, self.size, self.rank),
                            self.timeout / 1_000_000
                        );
                        // Not one datagram of the group came here in the whole timeout,
                        // though multicast reached this rank before.
                        if self.mcast_seen == 0 && self.scouted {
                            let (stopped, _) = self.chan.stopped_at(&[self.rank], &[root], true);
                            let mut e = self.stalled(msg, vec![root], false);
                            if let OpError::Stalled { stopped: s, .. } = &mut e {
                                *s = stopped;
                            }
                            return Err(e);
                        }
                        return Err(self.stalled(msg, vec![root], false));
                    }
                }
            }
            Mcast::Waiter(w, id) => {
                while let Some(len) = self.chan.sock.recv(&mut self.rbuf)? {
                    let d = &self.rbuf[..len];
                    if !keep_if_later(self.chan, self.seq, d) {
                        let got = count_outcome(w.handle_datagram(now, d));
                        self.released_by_mcast |= got;
                        moved |= got;
                    }
                }
                let mut by_unicast = false;
                if let Some(m) = self.chan.heal_msg(self.private, self.seq)? {
                    match wire::heal::HealMsg::decode(&m) {
                        Some(wire::heal::HealMsg::Switch { .. }) => {
                            wait_all(&mut self.reqs)?;
                            return Err(OpError::Switched);
                        }
                        // Rank 0's answer by the host MPI (`ask_release`).
                        Some(wire::heal::HealMsg::Data { .. }) => by_unicast = true,
                        _ => {}
                    }
                }
                if !w.is_done() && !by_unicast && now >= self.ask_release_at {
                    // Neither the release nor the responder's answer came for the suspicion
                    // time: rank 0 is asked by the host MPI too, and again as long as the
                    // silence lasts.
                    self.chan.ask_release(self.private, self.seq)?;
                    self.ask_release_at = now.saturating_add(self.chan.suspect_ns);
                }
                if w.poll_timeout().is_some_and(|t| t <= now) {
                    w.handle_timeout(now);
                }
                if !w.is_done() && w.poll_query(now, &mut self.dgram) {
                    let to = self.chan.responders[0];
                    self.chan.query_sock()?.send_to(&self.dgram, to)?;
                    stats::add(&COUNTERS.repairs, 1);
                }
                if let Some(qs) = &self.chan.query_sock {
                    while let Ok(Some((len, _))) = qs.recv_from(&mut self.rbuf) {
                        moved |= count_outcome(w.handle_datagram(now, &self.rbuf[..len]));
                    }
                }
                if w.is_done() || by_unicast {
                    done.push(*id);
                    self.mcast = Mcast::Idle;
                    let by_mcast = self.released_by_mcast;
                    self.chan
                        .record_delivery(self.private, 0, self.rank, self.seq, by_mcast)?;
                    return Ok(true);
                }
                if w.stalled(now) {
                    let msg = format!(
                        "{}: no release from rank 0 for {} ms",
                        describe(self.kind, self.seq, self.size, self.rank),
                        self.timeout / 1_000_000
                    );
                    return Err(self.stalled(msg, vec![0], false));
                }
            }
        }
        if let Some(len) = restart {
            self.take_shorter(len, now);
            moved = true;
        }
        Ok(moved)
    }

    /// Starts this rank's multicast receive of the operation from `root` (`len` bytes).
    fn start_recv(
        &mut self,
        id: ActionId,
        root: u32,
        len: usize,
        now: wire::Nanos,
    ) -> Result<(), OpError> {
        match self.kind {
            Kind::Barrier => {
                // The release comes only after every scout reached rank 0, which on a
                // loaded host can take longer than a data NACK timer: query later.
                let mut p = self.chan.params.clone();
                p.nack_initial = p.nack_initial.max(RELEASE_QUERY_AFTER);
                let w = ReleaseWaiter::new(&self.chan.ctx, self.seq, root, self.rank, &p, now);
                self.ask_release_at = now.saturating_add(self.chan.suspect_ns.max(p.nack_initial));
                self.mcast = Mcast::Waiter(w, id);
            }
            Kind::Bcast => {
                let mut rx = McastReceiver::new(
                    &self.chan.ctx,
                    self.seq,
                    root,
                    self.rank,
                    len,
                    &self.chan.params,
                    now,
                );
                // What an eager root sent while this rank was in an earlier operation.
                let Data::Recv(data) = &mut self.data else {
                    return Err(OpError::Unsupported("multicast receive without a buffer"));
                };
                for d in self.chan.early_dgrams.take(self.seq) {
                    self.mcast_accepted += count_outcome(rx.handle_datagram(now, &d, data)) as u64;
                }
                self.chan.early_dgrams.forget_through(self.seq);
                if self.eager {
                    // The root does not wait for scouts: silence is loss from now on, and
                    // its responder answers.
                    self.repair_to = self.chan.responders.get(root as usize).copied();
                    self.chan.query_sock()?;
                    rx.arm_nack(now);
                }
                self.root = root;
                self.mcast = Mcast::Receiver(rx, id);
            }
        }
        Ok(())
    }

    /// Starts this rank's receive over for the root's shorter message of `len` bytes, into
    /// the start of the buffer (the rest stays as it was). The fragment that showed the size
    /// was not kept: it comes again as a repair.
    fn take_shorter(&mut self, len: usize, now: wire::Nanos) {
        let Mcast::Receiver(_, id) = self.mcast else {
            return;
        };
        if let Data::Recv(d) = std::mem::replace(&mut self.data, Data::None) {
            self.data = Data::Recv(&mut d[..len]);
        }
        let mut rx = McastReceiver::new(
            &self.chan.ctx,
            self.seq,
            self.root,
            self.rank,
            len,
            &self.chan.params,
            now,
        );
        rx.arm_nack(now);
        self.mcast = Mcast::Receiver(rx, id);
        self.received = Some(len);
    }

    /// Sleeps until something can happen: on the socket when only the socket matters; a root
    /// with everything sent sleeps as `McastSender::ack_wait` says; otherwise a yield so MPI
    /// progress (which needs our calls) keeps going.
    fn idle(&mut self) {
        self.linger.tick();
        let socket_only =
            self.reqs.is_empty() && matches!(self.mcast, Mcast::Receiver(..) | Mcast::Waiter(..));
        if socket_only {
            // The host MPI moves the application's own requests only inside MPI calls (a
            // rendezvous send of the application's, a synchronous send to this rank): one
            // call per wake-up keeps them going while this rank waits on the socket, as the
            // host's own barrier would.
            let _ = p2p::kick(self.private);
            let now = self.chan.now();
            if let Mcast::Receiver(rx, _) = &self.mcast {
                if let Some(wait) = rx.batch_wait(now) {
                    std::thread::sleep(super::progress::max_sleep(Duration::from_nanos(wait)));
                    return;
                }
            }
            let next = match &self.mcast {
                Mcast::Receiver(rx, _) => rx.poll_timeout(),
                Mcast::Waiter(w, _) => w.poll_timeout(),
                _ => None,
            };
            let wait = next
                .map(|t| t.saturating_sub(now))
                .unwrap_or(1_000_000)
                .clamp(10_000, KICK_EVERY_NS);
            let mut fds = vec![self.chan.sock.fd()];
            if let Some(q) = &self.chan.query_sock {
                fds.push(q.fd());
            }
            let _ =
                net::wait_readable(&fds, super::progress::max_sleep(Duration::from_nanos(wait)));
        } else if let Some(wait) = match &self.mcast {
            Mcast::Sender(tx, _) => tx.ack_wait(self.chan.now()),
            _ => None,
        } {
            std::thread::sleep(super::progress::max_sleep(Duration::from_nanos(wait)));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Datagrams a receiver reads from the socket before it looks at its timers and sends what
/// acknowledgements are due (`drive_mcast`).
const RX_BURST: usize = 64;

/// Hands the kernel every datagram the sender has ready, up to `TX_BATCH` per system call;
/// true if any went out. `wait`: while the send buffer or the device queue is full, wait
/// (bounded, as `McastSocket::send_batch` does) until it takes them; otherwise keep what it
/// did not take in `chan.tx_unsent` and return, for a non-blocking operation whose caller
/// comes back. Datagrams left unsent by an earlier call go out first, whoever calls.
pub(super) fn transmit(
    chan: &mut Channel,
    tx: &mut McastSender,
    now: wire::Nanos,
    data: &[u8],
    wait: bool,
) -> Result<bool, OpError> {
    let mut moved = false;
    if !chan.tx_unsent.is_empty() {
        let (sent, all) = flush(chan, wait)?;
        moved |= sent;
        if !all {
            return Ok(moved);
        }
    }
    if chan.tx_batch.len() < super::TX_BATCH {
        chan.tx_batch.resize_with(super::TX_BATCH, Vec::new);
    }
    loop {
        let mut n = 0;
        while n < chan.tx_batch.len() && tx.poll_transmit(now, data, &mut chan.tx_batch[n]) {
            n += 1;
        }
        if n == 0 {
            break;
        }
        chan.tx_unsent = 0..n;
        let (sent, all) = flush(chan, wait)?;
        moved |= sent;
        if !all || n < chan.tx_batch.len() {
            break;
        }
    }
    Ok(moved)
}

/// Sends `chan.tx_unsent`: (any went out, all went out).
fn flush(chan: &mut Channel, wait: bool) -> Result<(bool, bool), OpError> {
    let mut moved = false;
    while !chan.tx_unsent.is_empty() {
        let refs: Vec<&[u8]> = chan.tx_batch[chan.tx_unsent.clone()]
            .iter()
            .map(|d| d.as_slice())
            .collect();
        let k = if wait {
            chan.sock.send_batch(&refs)?
        } else {
            chan.sock.try_send_batch(&refs)?
        };
        if k == 0 {
            if wait {
                return Err(OpError::Io(std::io::Error::other(
                    "sendmmsg sent no datagram",
                )));
            }
            return Ok((moved, false));
        }
        moved = true;
        chan.tx_unsent.start += k;
    }
    Ok((moved, true))
}

/// Whether a broadcast receiver takes a message shorter than its buffer, as the host MPI's
/// own broadcast does: Open MPI 4.1 delivers it and returns success; MPICH 4.0 fails with
/// "message sizes do not match" (so does mpicast, through the error handler). A longer
/// message is MPI_ERR_TRUNCATE under both.
pub fn takes_shorter_message() -> bool {
    host::flavour::running_family() == host::flavour::Flavour::OpenMpi
}

impl OpBackend<'_> {
    /// The stall of this operation: `missing` are the ranks it waits for; `from_root`: this
    /// rank is the root (or rank 0 of a barrier) and they are the others.
    fn stalled(&self, msg: String, missing: Vec<u32>, from_root: bool) -> OpError {
        self.linger.keep();
        let len = match &self.data {
            Data::Send(d) => d.len(),
            Data::Recv(d) => d.len(),
            Data::None => 0,
        };
        OpError::Stalled {
            msg,
            comm: host::SendComm(self.private),
            rank: self.rank,
            missing,
            elsewhere: not_multicast(self.kind, len, from_root),
            stopped: String::new(),
        }
    }

    /// The stall of a root: `missing` receivers, of which `unreached` are those multicast
    /// stopped reaching (`McastSender::unreached`).
    fn stalled_unreached(&self, msg: String, missing: Vec<u32>, unreached: &[u32]) -> OpError {
        let (stopped, rest) = self.chan.stopped_at(unreached, &missing, false);
        let mut e = self.stalled(msg, rest, true);
        if let OpError::Stalled { stopped: s, .. } = &mut e {
            *s = stopped;
        }
        e
    }
}

/// Waits for every request still out (a switched operation's scouts, all sent and received
/// by the time its root switched).
fn wait_all(reqs: &mut p2p::Requests) -> Result<(), OpError> {
    let mut done = Vec::new();
    while !reqs.is_empty() {
        reqs.waitsome(&mut done)?;
    }
    Ok(())
}

/// A rank waiting on its socket alone calls the host MPI at least this often (ns), so that
/// the application's own requests move meanwhile.
const KICK_EVERY_NS: u64 = 1_000_000;

/// Fragments at least, of one broadcast, before repairs that carried most of it say that
/// multicast no longer arrives here.
const REPAIRS_WARN_MIN: u64 = 16;

/// A receiver finished a broadcast: when unicast repairs carried most of it (an eager
/// broadcast's receiver asks the root's responder, which answers by unicast, so a rank that
/// multicast no longer reaches still gets its data, only slower), one warning per process.
fn repairs_carried(chan: &Channel, rank: u32, mcast: u64, repaired: u64) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if repaired >= REPAIRS_WARN_MIN
        && repaired > mcast * 4
        && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        if let Some(me) = chan.members.get(rank as usize) {
            let (job_size, mpi) = super::job_and_mpi();
            crate::session::say(&crate::reach::repairs_warning(
                me,
                chan.group,
                repaired,
                mcast + repaired,
                job_size,
                mpi,
            ));
        }
    }
}

/// What ranks that run mpicast with the same settings, but are not in an operation of `len`
/// bytes, are most likely doing: in another call, or (a broadcast) in the host MPI's
/// broadcast because their count, unlike this rank's, was below the threshold.
fn not_multicast(kind: Kind, len: usize, waiting_for_receivers: bool) -> String {
    match kind {
        Kind::Barrier => "they are in another call (or still computing)".to_string(),
        Kind::Bcast if waiting_for_receivers => format!(
            "they are in another call, or called MPI_Bcast with a count or datatype that makes \
             their message smaller than the threshold (MPICAST_MIN_BYTES), so that their call \
             went to the host MPI while this rank's {len} bytes went by multicast"
        ),
        Kind::Bcast => format!(
            "it is in another call, or called MPI_Bcast with a count or datatype that makes its \
             message smaller than the threshold (MPICAST_MIN_BYTES), so that its call went to \
             the host MPI while this rank's {len} bytes wait for a multicast"
        ),
    }
}

fn describe(kind: Kind, seq: u64, size: u32, rank: u32) -> String {
    let what = match kind {
        Kind::Bcast => "MPI_Bcast",
        Kind::Barrier => "MPI_Barrier",
    };
    format!("{what} (operation {seq} on a communicator of {size} ranks, this is rank {rank})")
}

pub(super) fn control_seq(msg: &[u8]) -> Option<u64> {
    wire::control::Control::decode(msg).ok().map(|c| c.seq())
}

impl Channel {
    /// Hands sender `tx` of multicast `seq` the control messages that came for it before it
    /// started (receivers may speak first); forgets those of earlier multicasts, which are
    /// over, and keeps those of later ones.
    fn replay_control(&mut self, seq: u64, tx: &mut McastSender, now: wire::Nanos) {
        self.early_control
            .retain(|(src, msg)| match control_seq(msg) {
                Some(s) if s == seq => {
                    let _ = tx.handle_control(now, *src, msg);
                    false
                }
                Some(s) => s > seq,
                None => false,
            });
    }
}

/// Takes every control message waiting on `private` for sender `tx` of multicast `seq`
/// (those of a later multicast are kept for it); true if any was for `tx`.
fn take_control(
    chan: &mut Channel,
    private: MPI_Comm,
    tx: &mut McastSender,
    seq: u64,
    buf: &mut [u8],
    now: wire::Nanos,
) -> Result<bool, OpError> {
    let mut moved = false;
    while let Some((src, len)) = p2p::try_recv_any(private, TAG_CONTROL, buf)? {
        let msg = &buf[..len];
        if let Ok(wire::Control::Trouble { seq: s }) = wire::Control::decode(msg) {
            chan.note_trouble(s);
            continue;
        }
        match tx.handle_control(now, src, msg) {
            Err(wire::Reject::WrongSeq) if control_seq(msg) > Some(seq) => {
                chan.early_control.push((src, msg.to_vec()));
            }
            // Older operations' messages cannot arrive (a root takes every receiver's last
            // word before its next operation: in it, or in `settle`), and a malformed one
            // cannot come from our own library on a private communicator: drop either.
            _ => moved = true,
        }
    }
    Ok(moved)
}

/// Counts what sender statistics `before` -> `after` say went out.
pub(super) fn count_tx(before: wire::SenderStats, after: wire::SenderStats) {
    stats::add(&COUNTERS.dgrams_sent, after.datagrams - before.datagrams);
    stats::add(&COUNTERS.repairs, after.retransmits - before.retransmits);
}

/// Reads the channel's socket empty: our own looped-back copies and stale datagrams must
/// never fill the buffer that a later operation's data needs. A later operation's datagram
/// (an eager root that is done with operation `seq`) is kept for then.
fn drain(chan: &mut Channel, seq: u64, rbuf: &mut [u8]) {
    while let Ok(Some(len)) = chan.sock.recv(rbuf) {
        keep_if_later(chan, seq, &rbuf[..len]);
    }
}

/// Keeps datagram `d` if it belongs to a later operation than `seq` (a root that sent
/// without scouts while this rank was still in operation `seq`); true if it did.
fn keep_if_later(chan: &mut Channel, seq: u64, d: &[u8]) -> bool {
    match wire::packet::peek_seq(d) {
        Some(s) if s > seq => {
            chan.early_dgrams.keep(s, d);
            true
        }
        _ => false,
    }
}

pub(super) fn count_outcome(o: Outcome) -> bool {
    match o {
        Outcome::Accepted => {
            stats::add(&COUNTERS.dgrams_recv, 1);
            true
        }
        Outcome::Rejected(_) => {
            stats::add(&COUNTERS.rejected, 1);
            false
        }
        Outcome::Duplicate | Outcome::Stale | Outcome::Foreign | Outcome::Mismatch => false,
    }
}

impl Backend for OpBackend<'_> {
    type Error = OpError;

    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), OpError> {
        let now = self.chan.now();
        match op {
            Op::Send { peer, tag, .. } => {
                self.reqs
                    .isend_empty(self.private, *peer, *tag as c_int, id)?
            }
            Op::Recv { peer, tag, .. } => {
                self.reqs
                    .irecv_empty(self.private, *peer, *tag as c_int, id)?;
                self.waiting_for.push((id, *peer));
            }
            Op::McastSend { buf } => match self.kind {
                _ if self
                    .chan
                    .switch_now(self.private, self.rank, self.size, self.seq)? =>
                {
                    return Err(OpError::Switched);
                }
                Kind::Barrier => {
                    if let Some(r) = &self.chan.responder {
                        r.released(self.chan.ctx.comm, self.seq);
                    }
                    self.chan.released_upto = self.seq;
                    wire::release::encode_release(
                        &self.chan.ctx,
                        self.seq,
                        self.rank,
                        &mut self.dgram,
                    );
                    self.chan.sock.send(&self.dgram)?;
                    stats::add(&COUNTERS.dgrams_sent, 1);
                    done.push(id);
                }
                Kind::Bcast => {
                    let receivers: Vec<u32> = (0..self.size).filter(|&r| r != self.rank).collect();
                    let tx = McastSender::new(
                        &self.chan.ctx,
                        self.seq,
                        self.rank,
                        &receivers,
                        buf.len,
                        &self.chan.params,
                        now,
                    );
                    let mut tx = tx;
                    let seq = self.seq;
                    self.chan.replay_control(seq, &mut tx, now);
                    if self.eager {
                        // Receivers ask the responder for repairs: it needs the copy.
                        let Data::Send(data) = &self.data else {
                            return Err(OpError::Unsupported("multicast send without data"));
                        };
                        if self.chan.responder.is_none() {
                            return Err(OpError::Unsupported(
                                "eager broadcast without a responder",
                            ));
                        }
                        let copy: Arc<[u8]> = Arc::from(*data);
                        if !self.chan.root_waits {
                            // An eager root never reads its socket in the operation: the
                            // looped-back copies of its last one go now.
                            drain(self.chan, seq, &mut self.rbuf);
                            let before = tx.stats();
                            transmit(self.chan, &mut tx, now, &copy, true)?;
                            count_tx(before, tx.stats());
                        }
                        // Held only once every datagram is with the kernel (a non-waiting
                        // root): until then none can have been lost, and answering a receiver
                        // that asks while they are being handed over (its first NACK comes
                        // after `nack_initial`, and the link may still be queueing them) would
                        // send them all a second time on the root's own link.
                        self.hold(seq, &copy);
                        if !self.chan.root_waits && tx.all_sent() && self.chan.tx_unsent.is_empty()
                        {
                            self.chan.deferred = Some(Deferred {
                                tx,
                                data: copy,
                                seq,
                                rank: self.rank,
                                size: self.size,
                                uni: p2p::SharedSends::default(),
                                resumed: false,
                            });
                            done.push(id);
                            return Ok(());
                        }
                    }
                    self.mcast = Mcast::Sender(tx, id);
                }
            },
            Op::McastRecv { root, buf } if self.chan.trouble && *root != self.rank => {
                // This rank knows that multicast does not reach every rank: the root of this
                // operation learns it too (and switches the next one it roots), so that the
                // communicator moves at the first root that comes, not only at this rank.
                self.chan.report_trouble(self.private, *root, self.seq)?;
                self.start_recv(id, *root, buf.len, now)?;
            }
            Op::McastRecv { root, buf } => self.start_recv(id, *root, buf.len, now)?,
            Op::Exec { .. } => {
                return Err(OpError::Unsupported(
                    "exec actions in a built-in collective",
                ))
            }
            Op::Calc { .. } => {
                return Err(OpError::Unsupported(
                    "calc actions in a built-in collective",
                ))
            }
        }
        Ok(())
    }

    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), OpError> {
        self.chan.answer_release_asks(self.private, self.rank)?;
        let before = done.len();
        self.reqs.testsome(done)?;
        if done.len() > before {
            let finished = &done[before..];
            self.waiting_for.retain(|(id, _)| !finished.contains(id));
        }
        let moved = self.drive_mcast(done)?;
        let now = self.chan.now();
        if moved || done.len() > before {
            self.last_progress = now;
            return Ok(());
        }
        if !self.waiting_for.is_empty() && now.saturating_sub(self.last_progress) > self.timeout {
            let peers: Vec<u32> = self.waiting_for.iter().map(|(_, p)| *p).collect();
            let msg = format!(
                "{}: no scout from {} for {} ms",
                describe(self.kind, self.seq, self.size, self.rank),
                crate::config::rank_list(&peers),
                self.timeout / 1_000_000
            );
            return Err(self.stalled(msg, peers, true));
        }
        // Nothing moved here: the multicasts routed through this rank move meanwhile.
        super::progress::poll();
        self.idle();
        Ok(())
    }
}
