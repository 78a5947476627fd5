//! The IP multicast body of `MPICAST_Imcast` (`MPICAST_IMCAST_TRANSPORT=ip|auto`): the root
//! sends the data once, by the multicast group of the engine's own communicator, with the
//! reliable protocol of the broadcasts (`wire::McastSender` / `wire::McastReceiver`: window,
//! NACKs, repairs, acknowledgements), its sender naming only the destinations as receivers.
//! The destinations, their tag and their order travel as an envelope along the routes of
//! `wire::forward`, so that matching and per-root order are the same as for multicasts
//! carried point-to-point.
//!
//! Every rank of the communicator gets every datagram (one group). A datagram is taken by
//! the receiver its envelope made; one whose envelope has not come yet waits in a bounded
//! cache (`UNCLAIMED_BYTES`, oldest dropped first: the protocol repairs what a destination
//! misses), which is also where the datagrams of multicasts for other ranks age out. The
//! receivers' acknowledgements and NACKs go to the root over the host MPI, on the engine's
//! communicator with a tag of their own.
//!
//! Datagrams carry (root, message number at the root); the data of one multicast is keyed by
//! them everywhere.
//!
//! When multicast breaks (all datagrams lost, only large ones, a share): a destination that
//! lacks data NACKs; the root offers the rest by unicast (`HealMsg::Offer`, tag `TAG_IP_REPAIR`)
//! to each destination that asked and still lacks fragments the root sent `MPICAST_SUSPECT_MS`
//! or more ago (`McastSender::take_unreached`); the destination answers `Control::Unicast` with
//! the fragments it has, unless it finished meanwhile, and then waits for `HealMsg::Data`, which
//! the root sends by the host MPI on the engine's communicator. A destination that asked
//! finishes only with that data, so the root's send is always received; its late datagrams
//! (and a late repair) are dropped, the multicast being over. The root decides alone how its
//! following multicasts go (`wire::heal::RootPath`): after two repaired ones in a row, those
//! of that length and more take the point-to-point routes, with one message naming the
//! hosts, and a trial by IP after 16, 32 .. 1024 of them brings them back when it passes.

use super::op::{control_seq, count_outcome, count_tx, transmit, OpError};
use super::Channel;
use crate::host::{p2p, MPI_Comm};
use crate::wire::forward::MsgKey;
use crate::wire::heal::{HealMsg, RootPath, Via};
use crate::wire::{self, packet, Control, McastReceiver, McastSender};
use std::collections::{HashMap, HashSet, VecDeque};
use std::os::raw::c_int;

/// The tag of acknowledgements and NACKs on the engine's communicator.
pub const TAG_IP_CONTROL: c_int = 2;
/// The tag of a root's unicast repairs (`HealMsg::Offer`, `HealMsg::Data`) on the engine's
/// communicator.
pub const TAG_IP_REPAIR: c_int = 5;
/// Datagrams without their envelope are kept up to this many bytes.
const UNCLAIMED_BYTES: usize = 8 << 20;
/// Multicasts received to the end that are remembered, so that their late copies are
/// dropped at once instead of filling the cache.
const FINISHED_KEPT: usize = 4096;
/// While this rank receives no IP multicast, the host MPI is asked for repairs at most this
/// often (and for acknowledgements while it sends none), to take and drop late ones: each
/// probe that finds nothing is a round of the host's progress engine (under Open MPI a poll,
/// and a yield with `mpi_yield_when_idle`), 15 to 40 us on a loaded host, and every progress
/// step of the engine paid two of them, also while a small multicast by point-to-point waited
/// to be seen (`MPICAST_Imcast` of 1 KiB took 0.1 ms more than the flat tree for it).
/// `IDLE_PROBE_NS` while the engine has no receive posted, `BUSY_PROBE_NS` while it has.
const IDLE_PROBE_NS: wire::Nanos = 1_000_000;
const BUSY_PROBE_NS: wire::Nanos = 100_000_000;

struct Send {
    seq: u64,
    tx: McastSender,
    data: Vec<u8>,
    /// How it went (`RootPath::start`), and its fragment size.
    via: Via,
    frag: usize,
    /// Destinations served by unicast.
    served: Vec<u32>,
}

struct Recv {
    rx: McastReceiver,
    buf: Vec<u8>,
    /// It answered the root's offer: it finishes only with the unicast data.
    asked: bool,
    got: bool,
}

/// The IP side of one rank's engine.
pub struct IpSide {
    chan: Channel,
    me: u32,
    sends: Vec<Send>,
    recvs: HashMap<MsgKey, Recv>,
    unclaimed: VecDeque<(MsgKey, Vec<u8>)>,
    unclaimed_bytes: usize,
    finished: HashSet<MsgKey>,
    finished_order: VecDeque<MsgKey>,
    rbuf: Vec<u8>,
    cbuf: Vec<u8>,
    /// Datagrams and control messages handled so far (the progress thread's activity).
    pub activity: u64,
    /// How this rank's multicasts go, and the unicast repairs it has out.
    path: RootPath,
    repairs: p2p::SharedSends,
    /// What this rank said about its path (to leave multicast, to come back), once each.
    said: (bool, bool),
    /// When the host MPI was last asked for late repairs and acknowledgements
    /// (`IDLE_PROBE_NS`), and whether this rank ever sent or received an IP multicast (none
    /// can come before).
    idle_probed: wire::Nanos,
    used: bool,
}

/// The root's and the destinations' key of a datagram, unauthenticated (for routing only).
fn peek_key(d: &[u8]) -> Option<MsgKey> {
    Some(MsgKey {
        root: packet::peek_root(d)?,
        msg: packet::peek_seq(d)?,
    })
}

impl IpSide {
    pub fn new(chan: Channel, me: u32) -> IpSide {
        let path = RootPath::new(chan.params.frag_payload);
        IpSide {
            chan,
            me,
            sends: Vec::new(),
            recvs: HashMap::new(),
            unclaimed: VecDeque::new(),
            unclaimed_bytes: 0,
            finished: HashSet::new(),
            finished_order: VecDeque::new(),
            rbuf: vec![0u8; 65536],
            cbuf: vec![0u8; wire::control::MAX_CONTROL_LEN],
            activity: 0,
            path,
            repairs: p2p::SharedSends::default(),
            said: (false, false),
            idle_probed: 0,
            used: false,
        }
    }

    /// How a multicast of `len` bytes of this rank goes: by IP (`send` with what this
    /// returns), or None: by the point-to-point routes, since IP multicast did not reach
    /// its destinations lately.
    pub fn route(&mut self, len: usize) -> Option<Via> {
        match self.path.start(len) {
            Via::P2p => None,
            via => Some(via),
        }
    }

    /// Starts sending multicast `key` (this rank's) of `data` to `dests`, `via` as `route`
    /// said.
    pub fn send(&mut self, key: MsgKey, dests: &[u32], data: Vec<u8>, via: Via) {
        let now = self.chan.now();
        self.used = true;
        let tx = McastSender::new(
            &self.chan.ctx,
            key.msg,
            self.me,
            dests,
            data.len(),
            &self.chan.params,
            now,
        );
        self.sends.push(Send {
            seq: key.msg,
            tx,
            data,
            via,
            frag: self.chan.params.frag_payload,
            served: Vec::new(),
        });
    }

    /// The envelope of multicast `key` for this rank came: its receiver starts, with what
    /// the cache holds of it.
    pub fn expect(&mut self, key: MsgKey, len: usize) {
        let now = self.chan.now();
        self.used = true;
        let mut r = Recv {
            rx: McastReceiver::new(
                &self.chan.ctx,
                key.msg,
                key.root,
                self.me,
                len,
                &self.chan.params,
                now,
            ),
            buf: vec![0u8; len],
            asked: false,
            got: false,
        };
        // The root may have sent everything already: silence from now on means loss.
        r.rx.arm_nack(now);
        let mut taken = 0;
        self.unclaimed.retain(|(k, d)| {
            if *k != key {
                return true;
            }
            taken += d.len();
            count_outcome(r.rx.handle_datagram(now, d, &mut r.buf));
            false
        });
        self.unclaimed_bytes -= taken;
        self.recvs.insert(key, r);
    }

    /// Moves what can move; the multicasts for this rank that are now whole, with their data.
    /// `quiet`: the engine has no receive posted (late repairs and acknowledgements are taken
    /// more often).
    pub fn progress(
        &mut self,
        comm: MPI_Comm,
        quiet: bool,
    ) -> Result<Vec<(MsgKey, Vec<u8>)>, OpError> {
        let now = self.chan.now();
        // Datagrams.
        while let Some(len) = self.chan.sock.recv(&mut self.rbuf)? {
            let d = &self.rbuf[..len];
            let Some(key) = peek_key(d) else {
                continue;
            };
            self.activity += 1;
            if key.root == self.me || self.finished.contains(&key) {
                continue;
            }
            match self.recvs.get_mut(&key) {
                Some(r) => {
                    count_outcome(r.rx.handle_datagram(now, d, &mut r.buf));
                }
                None => {
                    self.unclaimed_bytes += d.len();
                    self.unclaimed.push_back((key, d.to_vec()));
                    while self.unclaimed_bytes > UNCLAIMED_BYTES {
                        let Some((_, old)) = self.unclaimed.pop_front() else {
                            break;
                        };
                        self.unclaimed_bytes -= old.len();
                    }
                }
            }
        }
        // Late repairs and acknowledgements, of multicasts that are over, are taken (and
        // dropped) now and then, not at every step; none before this rank's first IP
        // multicast.
        let every = if quiet { IDLE_PROBE_NS } else { BUSY_PROBE_NS };
        let due = self.used && now.saturating_sub(self.idle_probed) >= every;
        if due {
            self.idle_probed = now;
        }
        // Unicast repairs, from the roots of the multicasts this rank receives.
        while !self.recvs.is_empty() || due {
            let Some((src, m)) = p2p::recv_any_probed(comm, TAG_IP_REPAIR)? else {
                break;
            };
            self.activity += 1;
            let Some(h) = HealMsg::decode(&m) else {
                continue;
            };
            let key = MsgKey {
                root: src,
                msg: h.seq(),
            };
            // One for a multicast that is over (it finished by multicast before the offer
            // came) is dropped.
            let Some(r) = self.recvs.get_mut(&key) else {
                continue;
            };
            match h {
                HealMsg::Offer { .. } if !r.asked && !r.rx.is_done() => {
                    r.asked = true;
                    let mut out = Vec::new();
                    Control::Unicast {
                        seq: key.msg,
                        cum: r.rx.cum(),
                    }
                    .encode(&mut out);
                    p2p::send_bytes(comm, key.root, TAG_IP_CONTROL, &out)?;
                }
                HealMsg::Data { first, payload, .. } if r.asked && !r.got => {
                    if r.rx.accept_range(now, first, payload, &mut r.buf).is_none() {
                        return Err(OpError::Truncated(format!(
                            "a unicast repair of {} bytes from fragment {first} that does not \
                             fit a multicast of {} bytes from rank {}",
                            payload.len(),
                            r.buf.len(),
                            key.root
                        )));
                    }
                    r.got = true;
                }
                _ => {}
            }
        }
        // Acknowledgements and NACKs, to the sender of their multicast.
        if !self.sends.is_empty() {
            while let Some((src, len)) = p2p::try_recv_any(comm, TAG_IP_CONTROL, &mut self.cbuf)? {
                self.activity += 1;
                let msg = &self.cbuf[..len];
                let Some(seq) = control_seq(msg) else {
                    continue;
                };
                if let Some(s) = self.sends.iter_mut().find(|s| s.seq == seq) {
                    let _ = s.tx.handle_control(now, src, msg);
                }
            }
        } else if due {
            // Late ones, for multicasts that are over: taken and dropped.
            while p2p::try_recv_any(comm, TAG_IP_CONTROL, &mut self.cbuf)?.is_some() {}
        }
        // Senders: new fragments, repairs, probes; unicast to the destinations multicast
        // does not reach.
        let mut i = 0;
        while i < self.sends.len() {
            let s = &mut self.sends[i];
            let before = s.tx.stats();
            transmit(&mut self.chan, &mut s.tx, now, &s.data, false)?;
            if s.tx.poll_timeout().is_some_and(|t| t <= now) {
                s.tx.handle_timeout(now);
                transmit(&mut self.chan, &mut s.tx, now, &s.data, false)?;
            }
            count_tx(before, s.tx.stats());
            for r in s.tx.take_unreached(now, self.chan.suspect_ns, false) {
                super::heal::offer_on(comm, TAG_IP_REPAIR, r, s.seq, s.data.len())?;
            }
            for (to, first) in s.tx.take_serve() {
                super::heal::serve_on(
                    &mut self.repairs,
                    comm,
                    TAG_IP_REPAIR,
                    to,
                    s.seq,
                    first,
                    s.frag,
                    &s.data,
                )?;
                s.served.push(to);
            }
            if s.tx.is_done() {
                let s = self.sends.swap_remove(i);
                let change = self
                    .path
                    .finished(s.via, s.data.len(), !s.served.is_empty());
                super::heal::root_path_changed(
                    &self.chan,
                    &mut self.said,
                    self.me,
                    "MPICAST_Imcast",
                    change,
                    &s.served,
                );
            } else {
                i += 1;
            }
        }
        self.repairs.test()?;
        // Receivers: timers, acknowledgements, completion.
        let mut whole = Vec::new();
        let mut done = Vec::new();
        for (key, r) in self.recvs.iter_mut() {
            if r.rx.poll_timeout().is_some_and(|t| t <= now) {
                r.rx.handle_timeout(now);
            }
            while let Some(msg) = r.rx.poll_control(now) {
                p2p::send_bytes(comm, key.root, TAG_IP_CONTROL, &msg)?;
            }
            // One that asked for the rest by unicast finishes with it, so that the root's
            // send is received.
            if r.rx.is_done() && (r.got || !r.asked) {
                done.push(*key);
            }
        }
        for key in done {
            let r = self.recvs.remove(&key).expect("listed");
            self.finished.insert(key);
            self.finished_order.push_back(key);
            if self.finished_order.len() > FINISHED_KEPT {
                if let Some(old) = self.finished_order.pop_front() {
                    self.finished.remove(&old);
                }
            }
            whole.push((key, r.buf));
        }
        Ok(whole)
    }

    /// Nothing of ours in flight.
    pub fn is_idle(&self) -> bool {
        self.sends.is_empty() && self.recvs.is_empty() && self.repairs.is_empty()
    }

    /// What is unfinished, for a message.
    pub fn describe_pending(&self) -> String {
        format!(
            "{} sent and not acknowledged, {} being received",
            self.sends.len(),
            self.recvs.len()
        )
    }

    /// The destinations that have not acknowledged this rank's multicasts, and the roots of
    /// the multicasts this rank still receives.
    pub fn pending_ranks(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self
            .sends
            .iter()
            .flat_map(|s| s.tx.pending_ranks())
            .chain(self.recvs.keys().map(|k| k.root))
            .collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// The channel, for closing.
    pub fn into_channel(self) -> Channel {
        self.chan
    }
}
