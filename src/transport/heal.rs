//! When multicast breaks in the middle of a job: the transport side of `wire::heal`.
//!
//! 1. Repair by unicast. A root whose receiver has not moved for `MPICAST_SUSPECT_MS` while
//!    fragments it lacks went out that long ago (`McastSender::take_unreached`) offers it the
//!    rest (`HealMsg::Offer`), sends it by the host MPI once the receiver asks (`serve`:
//!    `HealMsg::Data` on `TAG_HEAL`; the receiver then waits for it), and remembers the
//!    trouble. Eager broadcasts are repaired by the root's responder by UDP
//!    unicast, barrier releases by its answer to a query, as before; a rank that multicast did
//!    not deliver to twice in a row (`wire::heal::Health`) tells the root (`Control::Trouble`).
//! 2. Switch. The next operation that rank roots (a broadcast, or a barrier at rank 0), it
//!    sends every other rank `HealMsg::Switch` instead of datagrams. Every rank is in that
//!    operation, waiting for its data or release, and sees it: the broadcast then goes by the
//!    host MPI (the barrier is released by it), and every rank takes part in a probe right
//!    after (`probe`, the setup's ladder of datagram sizes, gathered by the host MPI), whose
//!    result all ranks share: `wire::heal::Heal` turns it into the same path on every rank.
//! 3. Return. On the host MPI (or at a smaller size), every rank probes again before the same
//!    operation (counted alike), after 16 operations, then 32, ... up to 1024.

use super::op::OpError;
use super::{progress, Channel};
use crate::host::{self, p2p, MPI_Comm};
use crate::stats::{self, COUNTERS};
use crate::wire::heal::{Decision, HealMsg, Mode};
use crate::wire::{self, pmtu::Choice, Control};
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// MPI tag on the private duplicate of the messages that replace datagrams.
pub const TAG_HEAL: c_int = 3;
/// MPI tag of `Control::Trouble`, which a root reads at the start of its operations.
pub const TAG_TROUBLE: c_int = 4;

/// MPI tag on the private duplicate of a barrier waiter's request for its release, when
/// neither the multicast release nor rank 0's responder (UDP) reached it
/// (`Channel::ask_release`).
pub const TAG_RELEASE_ASK: c_int = 9;

/// Rank 0 looks for such requests at most this often (nanoseconds) while in an operation.
const RELEASE_POLL_NS: wire::Nanos = 1_000_000;

/// The shortest wait for a probe's datagrams (`probe`).
const PROBE_WAIT_MIN: Duration = Duration::from_millis(20);

/// Bytes of one `HealMsg::Data` at most (an int count for the host MPI): longer remainders
/// go in several.
const DATA_MAX: usize = 1 << 30;

impl Channel {
    /// Takes the trouble reports (`Control::Trouble`, on their own tag, so that nothing else
    /// is taken from another loop's messages) waiting on `private` for this rank: they make it
    /// switch the next operation it roots.
    pub fn absorb(&mut self, private: MPI_Comm) -> Result<(), OpError> {
        let mut buf = [0u8; wire::MAX_CONTROL_LEN];
        while let Some((_, len)) = p2p::try_recv_any(private, TAG_TROUBLE, &mut buf)? {
            if let Ok(Control::Trouble { seq }) = Control::decode(&buf[..len]) {
                self.note_trouble(seq);
            }
        }
        Ok(())
    }

    /// Tells `root` that multicast does not reach every rank (`Control::Trouble` about
    /// operation `seq`).
    pub fn report_trouble(&self, private: MPI_Comm, root: u32, seq: u64) -> Result<(), OpError> {
        let mut out = Vec::new();
        Control::Trouble { seq }.encode(&mut out);
        p2p::send_bytes(private, root, TAG_TROUBLE, &out)?;
        Ok(())
    }

    /// The message of `TAG_HEAL` for operation `seq`, if one came (from its root): one that
    /// is kept from before, or the next ones on `private` (those of later operations are
    /// kept, those of earlier ones are over).
    pub fn heal_msg(&mut self, private: MPI_Comm, seq: u64) -> Result<Option<Vec<u8>>, OpError> {
        if let Some(i) = self
            .heal_kept
            .iter()
            .position(|m| HealMsg::decode(m).is_some_and(|h| h.seq() == seq))
        {
            return Ok(Some(self.heal_kept.remove(i)));
        }
        while let Some((_, m)) = p2p::recv_any_probed(private, TAG_HEAL)? {
            match HealMsg::decode(&m).map(|h| h.seq()) {
                Some(s) if s == seq => return Ok(Some(m)),
                Some(s) if s > seq => self.heal_kept.push(m),
                _ => {}
            }
        }
        Ok(None)
    }

    /// This rank roots operation `seq` and knows that multicast does not reach every rank:
    /// every other rank is told (`HealMsg::Switch`) instead of sent datagrams. True if so.
    pub fn switch_now(
        &mut self,
        private: MPI_Comm,
        rank: u32,
        size: u32,
        seq: u64,
    ) -> Result<bool, OpError> {
        self.absorb(private)?;
        if !self.trouble {
            return Ok(false);
        }
        let mut out = Vec::new();
        HealMsg::Switch { seq }.encode(&mut out);
        for r in (0..size).filter(|&r| r != rank) {
            p2p::send_bytes(private, r, TAG_HEAL, &out)?;
        }
        Ok(true)
    }

    /// Asks rank 0 by the host MPI for the release of barrier `seq` (UDP blocked while the
    /// host MPI works: neither its multicast nor its responder's answer came).
    pub fn ask_release(&self, private: MPI_Comm, seq: u64) -> Result<(), OpError> {
        p2p::send_bytes(private, 0, TAG_RELEASE_ASK, &seq.to_le_bytes())?;
        Ok(())
    }

    /// Rank 0 (`rank`), in any operation of the channel and at most once a millisecond:
    /// answers the waiters that ask for the release of a barrier it has released
    /// (`HealMsg::Data` of no bytes on `TAG_HEAL`: released by unicast). An ask for a barrier
    /// not released yet is dropped: its waiter asks again. True if it answered one.
    pub fn answer_release_asks(&mut self, private: MPI_Comm, rank: u32) -> Result<bool, OpError> {
        if rank != 0 {
            return Ok(false);
        }
        let now = self.now();
        if now < self.release_poll_at {
            return Ok(false);
        }
        self.release_poll_at = now.saturating_add(RELEASE_POLL_NS);
        let mut b = [0u8; 8];
        let mut out = Vec::new();
        let mut answered = false;
        while let Some((src, len)) = p2p::try_recv_any(private, TAG_RELEASE_ASK, &mut b)? {
            let seq = u64::from_le_bytes(b);
            if len != b.len() || seq > self.released_upto {
                continue;
            }
            HealMsg::Data {
                seq,
                first: 0,
                payload: &[],
            }
            .encode(&mut out);
            p2p::send_bytes(private, src, TAG_HEAL, &out)?;
            stats::add(&COUNTERS.unicast, 1);
            answered = true;
        }
        Ok(answered)
    }

    /// A receiver reported trouble at operation `seq` (`Control::Trouble`): news unless the
    /// communicator switched since.
    pub fn note_trouble(&mut self, seq: u64) {
        if seq > self.switched_at {
            self.trouble = true;
        }
    }

    /// Operation `seq` switched (every rank calls this after it, alike): the probe, the path
    /// it gives, and one message from rank 0 of the communicator.
    pub fn after_switch(
        &mut self,
        private: MPI_Comm,
        rank: u32,
        size: u32,
        seq: u64,
    ) -> Result<(), OpError> {
        self.trouble = false;
        self.switched_at = seq;
        self.health.reset();
        // Evidence came before: the probe that confirms it waits the whole suspicion time (a
        // loaded host may take that long to read its socket).
        let wait = Duration::from_nanos(self.suspect_ns).max(PROBE_WAIT_MIN);
        let (choice, seen) = self.probe(private, rank, size, seq, wait)?;
        let d = self.heal.switched(seq, choice, frag_of);
        self.apply(d, rank, size, seq, &seen);
        Ok(())
    }

    /// Before operation `seq` (every rank alike): the probe of a communicator that left
    /// multicast, when it is due. The path the operation takes.
    pub fn before_op(
        &mut self,
        private: MPI_Comm,
        rank: u32,
        size: u32,
        seq: u64,
    ) -> Result<Mode, OpError> {
        if self.heal.probe_due(seq) {
            let wait = Duration::from_nanos(self.suspect_ns / 4).max(PROBE_WAIT_MIN);
            let (choice, seen) = self.probe(private, rank, size, seq, wait)?;
            let d = self.heal.probed(seq, choice, frag_of);
            self.apply(d, rank, size, seq, &seen);
        }
        Ok(self.heal.mode())
    }

    /// The fragment size and window of `d`, its counter, and rank 0's message.
    fn apply(&mut self, d: Decision, rank: u32, size: u32, seq: u64, seen: &[u32]) {
        let top = (self.heal.full_frag() + wire::OVERHEAD) as u32;
        let missing: Vec<crate::reach::Who> = seen
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s < top)
            .filter_map(|(r, _)| self.members.get(r).cloned())
            .collect();
        let at = crate::reach::by_host(&missing);
        let head = format!(
            "mpicast: a communicator of {size} ranks on {}:{} via {}",
            self.group.0, self.group.1, self.iface_name
        );
        let said = match d {
            Decision::Same => None,
            Decision::ToHost => {
                stats::add(&COUNTERS.heal_host, 1);
                Some(format!(
                    "{head}: multicast stopped reaching {at} at operation {seq}: its collectives \
                     go by the host MPI from now on; it probes multicast again after {} \
                     operations (`mpicast doctor` tells more)",
                    wire::heal::PROBE_FIRST
                ))
            }
            Decision::StepDown { frag } => {
                stats::add(&COUNTERS.heal_step, 1);
                self.set_frag(frag);
                Some(format!(
                    "{head}: multicast datagrams of {top} bytes stopped reaching {at} at \
                     operation {seq}, those of {} bytes do: it uses {frag} data bytes per \
                     datagram from now on (a switch or link with a smaller MTU?)",
                    frag + wire::OVERHEAD
                ))
            }
            Decision::Return { frag } => {
                stats::add(&COUNTERS.heal_return, 1);
                self.set_frag(frag);
                Some(format!(
                    "{head}: multicast reaches every rank again (probe before operation {seq}): \
                     back to multicast, {frag} data bytes per datagram"
                ))
            }
        };
        if let Some(line) = said {
            let first = match d {
                Decision::Return { .. } => !std::mem::replace(&mut self.heal_said.1, true),
                _ => !std::mem::replace(&mut self.heal_said.0, true),
            };
            if rank == 0 && first {
                crate::session::say(&line);
            }
        }
    }

    fn set_frag(&mut self, frag: usize) {
        self.params.frag_payload = frag;
        self.params.window_frags = super::window_frags(self.min_rcvbuf, frag);
    }

    /// The collective probe of operation `seq`: rank 0 multicasts one datagram of each size
    /// of the ladder from the setup's size down, every rank reports the largest it received
    /// within `bound` (the switch's probe: `MPICAST_SUSPECT_MS`; a return probe: a quarter of
    /// it; at least `PROBE_WAIT_MIN`; by the host MPI),
    /// and all choose alike. Returns the choice and every rank's report. A probe that finds
    /// multicast still broken costs every rank that wait: short, since probes are repeated.
    fn probe(
        &mut self,
        private: MPI_Comm,
        rank: u32,
        size: u32,
        seq: u64,
        bound: Duration,
    ) -> Result<(Choice, Vec<u32>), OpError> {
        let top = self.heal.full_frag() + wire::OVERHEAD;
        let mine: u32 = if rank == 0 {
            top as u32
        } else {
            super::wait_probe(&self.sock, &self.ctx, seq, top, bound).unwrap_or(0) as u32
        };
        let mut ag = host::comm::Iallgather::start(private, &mine.to_le_bytes())?;
        if rank == 0 {
            let probes = super::probe_dgrams(&self.ctx, seq, top);
            // Long enough for every rank's bound, then the gather alone.
            let stop = Instant::now() + bound * 2 + Duration::from_millis(100);
            loop {
                if Instant::now() < stop {
                    for p in &probes {
                        let _ = self.sock.send(p);
                    }
                }
                if ag.test()? {
                    break;
                }
                progress::poll();
                std::thread::sleep(progress::max_sleep(Duration::from_millis(2)));
            }
            // Our own looped-back probes go now, not into the next operation's socket.
            let mut b = vec![0u8; 65536];
            while let Ok(Some(_)) = self.sock.recv(&mut b) {}
        }
        let seen: Vec<u32> = ag
            .wait()?
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        debug_assert_eq!(seen.len(), size as usize);
        let min = seen.iter().copied().min().unwrap_or(0) as usize;
        Ok((wire::pmtu::choose(top, min), seen))
    }

    /// An operation's data or release reached this rank by multicast (`by_mcast`) or not;
    /// after `wire::heal::BAD_IN_A_ROW` that did not, the root of this one (`root`) is told.
    pub fn record_delivery(
        &mut self,
        private: MPI_Comm,
        root: u32,
        rank: u32,
        seq: u64,
        by_mcast: bool,
    ) -> Result<(), OpError> {
        if self.health.record(by_mcast) {
            if root == rank {
                self.trouble = true;
            } else {
                self.report_trouble(private, root, seq)?;
            }
        }
        Ok(())
    }
}

/// The data bytes of a datagram of `udp` bytes.
fn frag_of(udp: usize) -> usize {
    udp.saturating_sub(wire::OVERHEAD)
        .max(wire::packet::MIN_FRAG)
}

/// Sends receiver `to` fragments `first..` of broadcast `seq` (`frag` bytes each) by the host
/// MPI, through `sends` (the caller waits for them before its buffer goes).
pub fn serve(
    sends: &mut p2p::SharedSends,
    private: MPI_Comm,
    to: u32,
    seq: u64,
    first: u32,
    frag: usize,
    data: &[u8],
) -> Result<(), OpError> {
    serve_on(sends, private, TAG_HEAL, to, seq, first, frag, data)
}

/// As `serve`, with tag `tag` (an IP multicast of `MPICAST_Imcast`: `imcast_ip`).
#[allow(clippy::too_many_arguments)]
pub fn serve_on(
    sends: &mut p2p::SharedSends,
    comm: MPI_Comm,
    tag: c_int,
    to: u32,
    seq: u64,
    first: u32,
    frag: usize,
    data: &[u8],
) -> Result<(), OpError> {
    let per = (DATA_MAX / frag.max(1)).max(1) * frag.max(1);
    let mut at = (first as usize * frag).min(data.len());
    loop {
        let end = (at + per).min(data.len());
        let mut out = Vec::with_capacity(wire::heal::DATA_HEADER + end - at);
        HealMsg::Data {
            seq,
            first: (at / frag.max(1)) as u32,
            payload: &data[at..end],
        }
        .encode(&mut out);
        sends.isend(comm, to, tag, Arc::from(out))?;
        stats::add(&COUNTERS.unicast, 1);
        at = end;
        if at >= data.len() {
            return Ok(());
        }
    }
}

/// Tells receiver `to` of broadcast `seq` (of `len` bytes) that multicast does not reach it
/// (`HealMsg::Offer`: small, so the send never waits for it).
pub fn offer(private: MPI_Comm, to: u32, seq: u64, len: usize) -> Result<(), OpError> {
    offer_on(private, TAG_HEAL, to, seq, len)
}

/// As `offer`, with tag `tag`.
pub fn offer_on(comm: MPI_Comm, tag: c_int, to: u32, seq: u64, len: usize) -> Result<(), OpError> {
    let mut out = Vec::new();
    HealMsg::Offer {
        seq,
        len: len as u64,
    }
    .encode(&mut out);
    p2p::send_bytes(comm, to, tag, &out)?;
    Ok(())
}

/// A root's own path for the multicasts only it decides (`wire::heal::RootPath`: those of
/// `MPICAST_Imcast` and of GOAL runs, `what`) changed after one whose `served` destinations
/// took a unicast repair: the counter, and a message naming their hosts, once per kind (to
/// leave IP multicast, to come back) in the whole job (`presence::say_first`; `said`: this
/// rank's own record), not once per root: the other roots that meet the same fault follow
/// without a word.
pub fn root_path_changed(
    chan: &Channel,
    said: &mut (bool, bool),
    me: u32,
    what: &str,
    change: wire::heal::PathChange,
    served: &[u32],
) {
    use wire::heal::PathChange;
    let line = match change {
        PathChange::Same => return,
        PathChange::ToP2p { from } => {
            stats::add(&COUNTERS.heal_host, 1);
            if std::mem::replace(&mut said.0, true) {
                return;
            }
            let who: Vec<crate::reach::Who> = served
                .iter()
                .filter_map(|&r| chan.members.get(r as usize).cloned())
                .collect();
            let which = if from == 0 {
                "all its multicasts go".to_string()
            } else {
                format!(
                    "its multicasts of {from} bytes and more (datagrams over {} bytes) go",
                    (from - 1).min(chan.params.frag_payload) + wire::OVERHEAD
                )
            };
            (
                "left",
                format!(
                    "mpicast: rank {me}: IP multicast of {what} stopped reaching {} (repaired \
                     by unicast): {which} point-to-point from now on; it tries IP multicast \
                     again after {} of them (other roots that meet the same do so without a \
                     message; `mpicast doctor` tells more)",
                    crate::reach::by_host(&who),
                    wire::heal::PROBE_FIRST
                ),
            )
        }
        PathChange::Return => {
            stats::add(&COUNTERS.heal_return, 1);
            if std::mem::replace(&mut said.1, true) {
                return;
            }
            (
                "back",
                format!(
                    "mpicast: rank {me}: IP multicast reaches the destinations of {what} \
                     again: back to IP multicast"
                ),
            )
        }
    };
    crate::presence::say_first(&format!("root path {what} {}", line.0), &line.1);
}
