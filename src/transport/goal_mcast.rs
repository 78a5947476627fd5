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
//! What arrives for a multicast this rank has not started yet is kept and replayed at its
//! start; a receiver is made when the first datagram tells the message's length, so an
//! `mrecv` larger than the `mcast` gets the shorter message, as an MPI receive would.
//!
//! Where the communicator does not multicast (one host with the host MPI's path, several
//! ranks per host, multicast unavailable), a multicast is carried by point-to-point messages
//! from the root to every other rank on the state's private duplicate, with a tag per
//! sequence number: the same semantics, without the wire.

use super::op::{control_seq, count_outcome, transmit, OpError, TAG_CONTROL};
use super::Channel;
use crate::host::p2p::{self, Region, Requests};
use crate::sched::{ActionId, Op, Schedule};
use crate::session::{CommState, Path};
use crate::stats::{self, COUNTERS};
use crate::wire::{self, packet, McastReceiver, McastSender};
use std::os::raw::c_int;
use std::sync::{Arc, Mutex, MutexGuard};

/// Point-to-point multicasts use tags from here (TAG_CONTROL and the scouts' tags are below).
const TAG_P2P_BASE: c_int = 64;
/// Distinct tags per sequence number, modulo this (MPI_TAG_UB is at least 32767): two
/// multicasts whose tags collide are never both in flight between the same two ranks.
const TAG_P2P_SPAN: u64 = 16384;

/// Bytes of datagrams kept for multicasts not started yet, at most (beyond this they are
/// dropped and repaired by the protocol like any loss).
const EARLY_MAX_BYTES: usize = 8 << 20;

/// The multicasts of one rank's schedule: per action, its number within a run (1-based; 0
/// for an action that is not a multicast), and how many a run has in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbering {
    pub of: Vec<u32>,
    pub total: u32,
    /// Per number (index number - 1): whether this rank receives that multicast.
    pub recv: Vec<bool>,
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
    Numbering {
        of,
        total: before[n],
        recv,
    }
}

enum Active {
    Send {
        id: ActionId,
        seq: u64,
        tx: McastSender,
        data: Region,
    },
    Recv {
        id: ActionId,
        seq: u64,
        root: u32,
        /// Made by the first datagram, which carries the length.
        rx: Option<McastReceiver>,
        buf: Region,
        since: wire::Nanos,
    },
}

/// The multicast side of one GOAL run.
pub struct McastRun {
    state: Arc<Mutex<CommState>>,
    base: u64,
    total: u64,
    /// Per number - 1: whether this rank receives it (`Numbering::recv`).
    recv: Vec<bool>,
    active: Vec<Active>,
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
        let base = {
            let mut st = lock(&state);
            let base = st.seq;
            st.seq += u64::from(n.total);
            if let Path::Mcast(chan) = &mut st.path {
                chan.early_dgrams.retain(|(s, _)| *s > base);
            }
            base
        };
        McastRun {
            state,
            base,
            total: u64::from(n.total),
            recv: n.recv.clone(),
            active: Vec::new(),
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
                stats::add(&COUNTERS.bytes_mcast, data.len() as u64);
                self.active.push(Active::Send { id, seq, tx, data });
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
                let mut a = Active::Recv {
                    id,
                    seq,
                    root,
                    rx: None,
                    buf,
                    since: now,
                };
                let early = std::mem::take(&mut chan.early_dgrams);
                for (s, d) in early {
                    if s == seq {
                        accept(chan, &mut a, now, &d, rank)?;
                    } else {
                        chan.early_dgrams.push((s, d));
                    }
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

    /// Moves every active multicast on; completed actions go to `done`.
    pub fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), OpError> {
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
        if self.active.is_empty() {
            return Ok(());
        }
        let state = self.state.clone();
        let mut st = lock(&state);
        let (private, rank, size) = (st.private.0, st.rank, st.size);
        let Path::Mcast(chan) = &mut st.path else {
            return Ok(());
        };
        let chan: &mut Channel = chan;
        let now = chan.now();
        // Datagrams, to the receiver of their multicast.
        let mut kept: usize = chan.early_dgrams.iter().map(|(_, d)| d.len()).sum();
        while let Some(len) = chan.sock.recv(&mut self.rbuf)? {
            let d = &self.rbuf[..len];
            let Some(seq) = packet::peek_seq(d) else {
                continue;
            };
            let mine = self.active.iter().position(|a| match a {
                Active::Recv { seq: s, .. } => *s == seq,
                Active::Send { .. } => false,
            });
            match mine {
                Some(i) => accept(chan, &mut self.active[i], now, d, rank)?,
                // One of this rank's own (looped back), or one sent by a faster root that
                // this rank has not started: keep only the latter.
                None if self.expects(seq) && kept + d.len() <= EARLY_MAX_BYTES => {
                    kept += d.len();
                    chan.early_dgrams.push((seq, d.to_vec()))
                }
                None => {}
            }
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
        let timeout = chan.params.stall_timeout;
        let mut i = 0;
        while i < self.active.len() {
            let finished = match &mut self.active[i] {
                Active::Send { seq, tx, data, .. } => {
                    let before = tx.stats();
                    data.with_mut(|d| transmit(chan, tx, now, d))?;
                    if tx.poll_timeout().is_some_and(|t| t <= now) {
                        tx.handle_timeout(now);
                        data.with_mut(|d| transmit(chan, tx, now, d))?;
                    }
                    let after = tx.stats();
                    stats::add(&COUNTERS.dgrams_sent, after.datagrams - before.datagrams);
                    stats::add(&COUNTERS.repairs, after.retransmits - before.retransmits);
                    if !tx.is_done() && tx.stalled(now) {
                        let missing: Vec<String> =
                            tx.pending_ranks().iter().map(|r| r.to_string()).collect();
                        return Err(OpError::Stalled(format!(
                            "GOAL multicast {seq} from rank {rank} of {size}: no acknowledgement \
                             for {} ms; ranks still missing data: {}",
                            timeout / 1_000_000,
                            missing.join(", ")
                        )));
                    }
                    tx.is_done()
                }
                Active::Recv {
                    seq,
                    root,
                    rx,
                    since,
                    ..
                } => match rx {
                    None => {
                        if now.saturating_sub(*since) > timeout {
                            return Err(OpError::Stalled(format!(
                                "GOAL multicast {seq} on rank {rank} of {size}: nothing from \
                                 root rank {root} for {} ms",
                                timeout / 1_000_000
                            )));
                        }
                        false
                    }
                    Some(rx) => {
                        if rx.poll_timeout().is_some_and(|t| t <= now) {
                            rx.handle_timeout(now);
                        }
                        while let Some(msg) = rx.poll_control(now) {
                            p2p::send_bytes(private, *root, TAG_CONTROL, &msg)?;
                        }
                        if !rx.is_done() && rx.stalled(now) {
                            return Err(OpError::Stalled(format!(
                                "GOAL multicast {seq} on rank {rank} of {size}: no data from \
                                 root rank {root} for {} ms",
                                timeout / 1_000_000
                            )));
                        }
                        rx.is_done()
                    }
                },
            };
            if finished {
                let a = self.active.swap_remove(i);
                if let Active::Recv { seq, .. } = a {
                    // Late copies of it are dropped from now on.
                    if let Some(r) = self.recv.get_mut((seq - self.base - 1) as usize) {
                        *r = false;
                    }
                }
                done.push(match a {
                    Active::Send { id, .. } | Active::Recv { id, .. } => id,
                });
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Whether a datagram of multicast `seq` that no active receiver takes is worth keeping:
    /// one this run receives later, or one of a later run (never this rank's own, which
    /// come back to it over loopback).
    fn expects(&self, seq: u64) -> bool {
        match seq.checked_sub(self.base) {
            None | Some(0) => false,
            Some(k) if k <= self.total => self.recv[k as usize - 1],
            Some(_) => true,
        }
    }

    /// Nothing in flight.
    pub fn is_idle(&self) -> bool {
        self.active.is_empty() && self.p2p_left.is_empty()
    }
}

fn p2p_tag(seq: u64) -> c_int {
    TAG_P2P_BASE + (seq % TAG_P2P_SPAN) as c_int
}

fn lock(s: &Arc<Mutex<CommState>>) -> MutexGuard<'_, CommState> {
    s.lock().unwrap_or_else(|p| p.into_inner())
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
        if h.kind != wire::Kind::Data || h.seq != *seq || h.root != *root {
            return Ok(());
        }
        let len = usize::try_from(h.total_len).unwrap_or(usize::MAX);
        if len > buf.len() {
            return Err(OpError::Truncated(format!(
                "GOAL multicast {seq}: root rank {root} sends {len} bytes, the `mrecv` has room \
                 for {} (the message would be truncated)",
                buf.len()
            )));
        }
        *rx = Some(McastReceiver::new(
            &chan.ctx,
            *seq,
            *root,
            rank,
            len,
            &chan.params,
            now,
        ));
    }
    let r = rx.as_mut().expect("made above");
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
