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

use super::op::{control_seq, count_outcome, count_tx, transmit, OpError};
use super::Channel;
use crate::host::{p2p, MPI_Comm};
use crate::wire::forward::MsgKey;
use crate::wire::{self, packet, McastReceiver, McastSender};
use std::collections::{HashMap, HashSet, VecDeque};
use std::os::raw::c_int;

/// The tag of acknowledgements and NACKs on the engine's communicator.
pub const TAG_IP_CONTROL: c_int = 2;
/// Datagrams without their envelope are kept up to this many bytes.
const UNCLAIMED_BYTES: usize = 8 << 20;
/// Multicasts received to the end that are remembered, so that their late copies are
/// dropped at once instead of filling the cache.
const FINISHED_KEPT: usize = 4096;

struct Send {
    seq: u64,
    tx: McastSender,
    data: Vec<u8>,
}

struct Recv {
    rx: McastReceiver,
    buf: Vec<u8>,
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
        }
    }

    /// Starts sending multicast `key` (this rank's) of `data` to `dests`.
    pub fn send(&mut self, key: MsgKey, dests: &[u32], data: Vec<u8>) {
        let now = self.chan.now();
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
        });
    }

    /// The envelope of multicast `key` for this rank came: its receiver starts, with what
    /// the cache holds of it.
    pub fn expect(&mut self, key: MsgKey, len: usize) {
        let now = self.chan.now();
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
    pub fn progress(&mut self, comm: MPI_Comm) -> Result<Vec<(MsgKey, Vec<u8>)>, OpError> {
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
        } else {
            // Late ones, for multicasts that are over: taken and dropped.
            while p2p::try_recv_any(comm, TAG_IP_CONTROL, &mut self.cbuf)?.is_some() {}
        }
        // Senders: new fragments, repairs, probes.
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
            if s.tx.is_done() {
                self.sends.swap_remove(i);
            } else {
                i += 1;
            }
        }
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
            if r.rx.is_done() {
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
        self.sends.is_empty() && self.recvs.is_empty()
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
