//! heal: what a communicator does when multicast stops reaching some of its ranks in the
//! middle of a job, as pure logic: the messages a root sends by the host MPI instead of
//! datagrams (`HealMsg`: a receiver's missing data, or the switch of the whole communicator),
//! a rank's record of operations that multicast did not deliver (`Health`), and the
//! communicator's path with its return probes (`Heal`).
//!
//! Every rank of a communicator runs the same `Heal` over the same inputs (the operation's
//! sequence number, which all ranks count alike, and the result of a collective probe, which
//! all ranks gather alike), so they all take the same path at the same operation without
//! another message. Nothing here reads a clock, touches a socket or calls MPI.

use super::pmtu::Choice;

const MSG_DATA: u8 = 1;
const MSG_SWITCH: u8 = 2;
const MSG_OFFER: u8 = 3;
/// Bytes before a `Data` message's payload: kind(1) seq(8) first fragment(4).
pub const DATA_HEADER: usize = 13;
const SWITCH_LEN: usize = 9;
const OFFER_LEN: usize = 17;

/// A message of the host MPI that replaces datagrams of one operation (tag `TAG_HEAL` on the
/// private duplicate: reliable and ordered, so it carries no MAC).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HealMsg<'a> {
    /// Fragments `first..` of broadcast `seq`, back to back (the root's own fragment size):
    /// for a receiver that multicast no longer reaches.
    Data {
        seq: u64,
        first: u32,
        payload: &'a [u8],
    },
    /// Operation `seq` goes by the host MPI (a broadcast) or is released by this message (a
    /// barrier), and the communicator probes its multicast path right after it.
    Switch { seq: u64 },
    /// Multicast does not reach this receiver: the root of `seq` offers the rest (of `len`
    /// bytes in all, so that a receiver no datagram reached can take it) by unicast.
    /// The receiver answers `Control::Unicast` (then waits for `Data`) unless it has finished
    /// meanwhile: the root sends data only to a receiver that waits for it, so that a large
    /// send never waits for a rank that has left.
    Offer { seq: u64, len: u64 },
}

impl HealMsg<'_> {
    pub fn seq(&self) -> u64 {
        match *self {
            HealMsg::Data { seq, .. } | HealMsg::Switch { seq } | HealMsg::Offer { seq, .. } => seq,
        }
    }

    /// Clears `out` and writes the message.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match self {
            HealMsg::Data {
                seq,
                first,
                payload,
            } => {
                out.push(MSG_DATA);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&first.to_le_bytes());
                out.extend_from_slice(payload);
            }
            HealMsg::Switch { seq } => {
                out.push(MSG_SWITCH);
                out.extend_from_slice(&seq.to_le_bytes());
            }
            HealMsg::Offer { seq, len } => {
                out.push(MSG_OFFER);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
            }
        }
    }

    pub fn decode(b: &[u8]) -> Option<HealMsg<'_>> {
        let seq = u64::from_le_bytes(b.get(1..9)?.try_into().ok()?);
        match *b.first()? {
            MSG_DATA if b.len() >= DATA_HEADER => Some(HealMsg::Data {
                seq,
                first: u32::from_le_bytes(b[9..13].try_into().ok()?),
                payload: &b[DATA_HEADER..],
            }),
            MSG_SWITCH if b.len() == SWITCH_LEN => Some(HealMsg::Switch { seq }),
            MSG_OFFER if b.len() == OFFER_LEN => Some(HealMsg::Offer {
                seq,
                len: u64::from_le_bytes(b[9..17].try_into().ok()?),
            }),
            _ => None,
        }
    }
}

/// One rank's record of the operations that multicast did not deliver to it (their data or
/// release came by unicast only): `BAD_IN_A_ROW` of them in a row is trouble, which the rank
/// reports to the root of the operation (one lost release or one short broadcast whose every
/// datagram was lost is what plain loss does now and then, and must not move a communicator).
#[derive(Clone, Debug, Default)]
pub struct Health {
    bad_in_a_row: u32,
}

/// Operations in a row that multicast did not deliver before a rank reports trouble.
pub const BAD_IN_A_ROW: u32 = 2;

impl Health {
    /// An operation ended; `by_mcast`: multicast delivered some of it here. True when this
    /// one makes trouble to report (then the count starts over).
    pub fn record(&mut self, by_mcast: bool) -> bool {
        if by_mcast {
            self.bad_in_a_row = 0;
            return false;
        }
        self.bad_in_a_row += 1;
        if self.bad_in_a_row >= BAD_IN_A_ROW {
            self.bad_in_a_row = 0;
            return true;
        }
        false
    }

    pub fn reset(&mut self) {
        self.bad_in_a_row = 0;
    }
}

/// How the communicator's collectives go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Multicast with `frag` data bytes per datagram (the setup's size, or a smaller one
    /// after a probe found that only smaller datagrams pass).
    Mcast { frag: usize },
    /// The host MPI (PMPI on the private duplicate).
    Host,
}

/// What the probe after operation `seq` decided, for the message and the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The path stays as it was (a probe found nothing new, or a switch whose probe found
    /// multicast working at the full size: a false alarm).
    Same,
    /// Multicast no longer reaches every rank: the host MPI from the next operation on.
    ToHost,
    /// Only smaller datagrams reach every rank: `frag` data bytes per datagram.
    StepDown { frag: usize },
    /// From the host MPI (or a smaller size) back to multicast with `frag` bytes.
    Return { frag: usize },
}

/// Operations on the host MPI (or at a smaller size) before the first probe of the return.
pub const PROBE_FIRST: u64 = 16;
/// The interval doubles after every probe that finds multicast still broken, up to this.
pub const PROBE_MAX: u64 = 1024;

/// The communicator's path and when it probes again.
#[derive(Clone, Debug)]
pub struct Heal {
    /// The setup's fragment size: what a return aims at.
    full: usize,
    mode: Mode,
    /// Operations between probes, doubled by every probe that changed nothing.
    interval: u64,
    /// The operation before which the next probe runs (every rank alike), if any.
    next_probe: Option<u64>,
}

impl Heal {
    pub fn new(frag: usize) -> Heal {
        Heal {
            full: frag,
            mode: Mode::Mcast { frag },
            interval: PROBE_FIRST,
            next_probe: None,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn full_frag(&self) -> usize {
        self.full
    }

    /// Operation `seq` is the one before which a probe is due.
    pub fn probe_due(&self, seq: u64) -> bool {
        self.next_probe.is_some_and(|p| seq >= p)
    }

    /// After operation `seq` switched (its root found multicast not reaching some ranks),
    /// the probe right after it found `choice` (`frag_of`: the data bytes of a datagram of
    /// `udp` bytes). Every rank calls this alike.
    pub fn switched(
        &mut self,
        seq: u64,
        choice: Choice,
        frag_of: impl Fn(usize) -> usize,
    ) -> Decision {
        let d = match choice {
            // The full size works: multicast was lost, not broken (or healed at once).
            Choice::Keep => {
                let was = self.mode;
                self.mode = Mode::Mcast { frag: self.full };
                if was == self.mode {
                    Decision::Same
                } else {
                    Decision::Return { frag: self.full }
                }
            }
            Choice::Step { udp } => {
                let frag = frag_of(udp).min(self.full);
                let was = std::mem::replace(&mut self.mode, Mode::Mcast { frag });
                if was == self.mode {
                    Decision::Same
                } else {
                    Decision::StepDown { frag }
                }
            }
            Choice::Nothing => {
                self.mode = Mode::Host;
                Decision::ToHost
            }
        };
        self.interval = PROBE_FIRST;
        self.next_probe =
            (self.mode != Mode::Mcast { frag: self.full }).then(|| seq + self.interval);
        d
    }

    /// The probe due before operation `seq` (`probe_due`) found `choice`. Every rank calls
    /// this alike.
    pub fn probed(
        &mut self,
        seq: u64,
        choice: Choice,
        frag_of: impl Fn(usize) -> usize,
    ) -> Decision {
        let was = self.mode;
        let now = match choice {
            Choice::Keep => Mode::Mcast { frag: self.full },
            Choice::Step { udp } => Mode::Mcast {
                frag: frag_of(udp).min(self.full),
            },
            Choice::Nothing => Mode::Host,
        };
        let better = match (was, now) {
            (_, Mode::Host) => false,
            (Mode::Host, Mode::Mcast { .. }) => true,
            (Mode::Mcast { frag: a }, Mode::Mcast { frag: b }) => b > a,
        };
        let d = if better {
            self.mode = now;
            self.interval = PROBE_FIRST;
            Decision::Return {
                frag: match now {
                    Mode::Mcast { frag } => frag,
                    Mode::Host => unreachable!("not better"),
                },
            }
        } else {
            // Still broken (or no better than now): keep the path, probe less often.
            self.interval = (self.interval * 2).min(PROBE_MAX);
            Decision::Same
        };
        self.next_probe =
            (self.mode != Mode::Mcast { frag: self.full }).then(|| seq + self.interval);
        d
    }
}

/// How one root sends the IP multicasts of `MPICAST_Imcast` (`transport::imcast_ip`), which
/// only the root and the destinations of each take part in: unlike a collective, no probe can
/// be gathered, so the root decides alone, message by message, from what its own multicasts
/// met. Each destination knows from the multicast's envelope how the data comes, so no other
/// rank needs to agree.
///
/// A multicast that needed a unicast repair (a destination that NACKed lacked fragments sent
/// `MPICAST_SUSPECT_MS` ago and took the rest by the host MPI) is bad. `BAD_IN_A_ROW` bad
/// ones in a row (those shorter than the shortest bad one do not count either way: a fault
/// that loses only large datagrams lets short multicasts through) move multicasts to the
/// point-to-point routes: those whose datagrams are larger than the largest rung of the
/// path-MTU ladder (`pmtu::RUNGS`) below the bad one's datagram, or every multicast when
/// the bad one's datagram was below the smallest rung. After `PROBE_FIRST` of them, the next
/// one goes by IP again as a trial: clean, every multicast goes by IP again; repaired, the
/// trial comes after twice as many, up to `PROBE_MAX`.
#[derive(Clone, Debug)]
pub struct RootPath {
    /// The data bytes per datagram.
    frag: usize,
    /// Multicasts of at least this many bytes go point-to-point (`usize::MAX`: none).
    p2p_from: usize,
    /// Bad multicasts in a row, and the shortest of them.
    bad: u32,
    bad_min: usize,
    interval: u64,
    /// Point-to-point multicasts (of at least `p2p_from` bytes) before the next trial.
    left: u64,
    trial_out: bool,
}

/// How one multicast goes (`RootPath::start`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Ip,
    /// By IP, as the trial of a root that had left it.
    Trial,
    /// By the point-to-point routes of the forwarding engine.
    P2p,
}

/// What the end of a multicast changed (`RootPath::finished`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathChange {
    Same,
    /// Multicasts of at least `from` bytes go point-to-point from now on.
    ToP2p {
        from: usize,
    },
    /// A trial went through clean: every multicast goes by IP again.
    Return,
}

impl RootPath {
    /// A root whose datagrams carry `frag` data bytes at most.
    pub fn new(frag: usize) -> Self {
        RootPath {
            frag,
            p2p_from: usize::MAX,
            bad: 0,
            bad_min: usize::MAX,
            interval: PROBE_FIRST,
            left: 0,
            trial_out: false,
        }
    }

    /// The shortest multicast that goes point-to-point after a bad one of `len` bytes: the
    /// first whose datagrams are larger than the largest rung below the bad one's datagram.
    fn bound(&self, len: usize) -> usize {
        let dgram = len.min(self.frag) + super::OVERHEAD;
        super::pmtu::RUNGS
            .iter()
            .find(|&&r| r < dgram)
            .map_or(0, |&r| r.saturating_sub(super::OVERHEAD) + 1)
    }

    /// How a multicast of `len` bytes goes.
    pub fn start(&mut self, len: usize) -> Via {
        if len < self.p2p_from {
            return Via::Ip;
        }
        if self.left > 0 {
            self.left -= 1;
            return Via::P2p;
        }
        if self.trial_out {
            return Via::P2p;
        }
        self.trial_out = true;
        Via::Trial
    }

    /// A multicast of `len` bytes that went `via` IP ended; `repaired`: some destination
    /// took a unicast repair.
    pub fn finished(&mut self, via: Via, len: usize, repaired: bool) -> PathChange {
        match via {
            Via::P2p => PathChange::Same,
            Via::Trial => {
                self.trial_out = false;
                if repaired {
                    self.interval = (self.interval * 2).min(PROBE_MAX);
                    self.left = self.interval;
                    PathChange::Same
                } else {
                    *self = RootPath::new(self.frag);
                    PathChange::Return
                }
            }
            Via::Ip if repaired => {
                self.bad += 1;
                self.bad_min = self.bad_min.min(len);
                if self.bad < BAD_IN_A_ROW || self.bad_min >= self.p2p_from {
                    return PathChange::Same;
                }
                self.p2p_from = self.bound(self.bad_min).min(self.p2p_from);
                self.bad = 0;
                self.bad_min = usize::MAX;
                self.interval = PROBE_FIRST;
                self.left = PROBE_FIRST;
                PathChange::ToP2p {
                    from: self.p2p_from,
                }
            }
            Via::Ip => {
                if len >= self.bad_min {
                    self.bad = 0;
                    self.bad_min = usize::MAX;
                }
                PathChange::Same
            }
        }
    }

    /// Multicasts of at least this many bytes go point-to-point (None: all by IP).
    pub fn p2p_from(&self) -> Option<usize> {
        (self.p2p_from != usize::MAX).then_some(self.p2p_from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag_of(udp: usize) -> usize {
        udp - 64
    }

    #[test]
    fn messages_round_trip_and_reject_garbage() {
        let mut out = Vec::new();
        let payload = [7u8; 100];
        let m = HealMsg::Data {
            seq: 9,
            first: 3,
            payload: &payload,
        };
        m.encode(&mut out);
        assert_eq!(out.len(), DATA_HEADER + 100);
        assert_eq!(HealMsg::decode(&out), Some(m));
        HealMsg::Switch { seq: u64::MAX }.encode(&mut out);
        assert_eq!(
            HealMsg::decode(&out),
            Some(HealMsg::Switch { seq: u64::MAX })
        );
        let mut o2 = Vec::new();
        HealMsg::Offer {
            seq: 4,
            len: 1 << 40,
        }
        .encode(&mut o2);
        assert_eq!(
            HealMsg::decode(&o2),
            Some(HealMsg::Offer {
                seq: 4,
                len: 1 << 40
            })
        );
        o2.truncate(SWITCH_LEN);
        assert_eq!(HealMsg::decode(&o2), None, "an offer without its length");
        out.push(0);
        assert_eq!(HealMsg::decode(&out), None);
        assert_eq!(HealMsg::decode(&[]), None);
        assert_eq!(HealMsg::decode(&[MSG_DATA, 1, 2]), None);
        assert_eq!(HealMsg::decode(&[9; 20]), None);
    }

    #[test]
    fn health_needs_bad_operations_in_a_row() {
        let mut h = Health::default();
        assert!(!h.record(false));
        assert!(!h.record(true)); // a good one in between starts over
        assert!(!h.record(false));
        assert!(h.record(false));
        assert!(!h.record(false)); // reported: counts again from zero
        assert!(h.record(false));
    }

    #[test]
    fn a_broken_group_goes_to_the_host_and_probes_with_backoff_then_returns() {
        let mut h = Heal::new(65000);
        assert!(!h.probe_due(1));
        assert_eq!(h.switched(10, Choice::Nothing, frag_of), Decision::ToHost);
        assert_eq!(h.mode(), Mode::Host);
        assert!(!h.probe_due(25));
        assert!(h.probe_due(26));
        // Still broken: next after 32, then 64 operations.
        assert_eq!(h.probed(26, Choice::Nothing, frag_of), Decision::Same);
        assert!(!h.probe_due(57) && h.probe_due(58));
        assert_eq!(h.probed(58, Choice::Nothing, frag_of), Decision::Same);
        assert!(!h.probe_due(121) && h.probe_due(122));
        // Works again: back to the full size, and no more probes.
        assert_eq!(
            h.probed(122, Choice::Keep, frag_of),
            Decision::Return { frag: 65000 }
        );
        assert_eq!(h.mode(), Mode::Mcast { frag: 65000 });
        assert!(!h.probe_due(u64::MAX));
    }

    #[test]
    fn the_backoff_is_capped() {
        let mut h = Heal::new(1000);
        h.switched(0, Choice::Nothing, frag_of);
        let mut seq = 0;
        for _ in 0..20 {
            seq += 1;
            while !h.probe_due(seq) {
                seq += 1;
            }
            h.probed(seq, Choice::Nothing, frag_of);
        }
        assert!(h.probe_due(seq + PROBE_MAX));
        assert!(!h.probe_due(seq + PROBE_MAX - 1));
    }

    #[test]
    fn large_datagrams_lost_steps_down_then_back_up() {
        let mut h = Heal::new(65000);
        assert_eq!(
            h.switched(5, Choice::Step { udp: 1472 }, frag_of),
            Decision::StepDown { frag: 1408 }
        );
        assert_eq!(h.mode(), Mode::Mcast { frag: 1408 });
        // A switch again that finds the same size (a late report of the first trouble)
        // changes nothing.
        assert_eq!(
            h.switched(6, Choice::Step { udp: 1472 }, frag_of),
            Decision::Same
        );
        assert!(!h.probe_due(21) && h.probe_due(22));
        // Probes continue to find the way back up; the same small size changes nothing.
        assert_eq!(
            h.probed(22, Choice::Step { udp: 1472 }, frag_of),
            Decision::Same
        );
        assert_eq!(
            h.probed(54, Choice::Keep, frag_of),
            Decision::Return { frag: 65000 }
        );
        // From the host, a smaller size is a return too.
        h.switched(60, Choice::Nothing, frag_of);
        assert_eq!(
            h.probed(76, Choice::Step { udp: 8972 }, frag_of),
            Decision::Return { frag: 8908 }
        );
        // ...and a worse one than the current is not taken by a periodic probe.
        assert_eq!(h.probed(92, Choice::Nothing, frag_of), Decision::Same);
        assert_eq!(h.mode(), Mode::Mcast { frag: 8908 });
    }

    #[test]
    fn a_false_alarm_keeps_multicast() {
        let mut h = Heal::new(65000);
        assert_eq!(h.switched(3, Choice::Keep, frag_of), Decision::Same);
        assert_eq!(h.mode(), Mode::Mcast { frag: 65000 });
        assert!(!h.probe_due(1000));
    }

    /// The context (key of bytes `key`, communicator `comm`) and parameters of the virtual-time
    /// multicasts below: 1000-byte fragments, a window of 16, a 10 s stall.
    fn virtual_channel(key: u8, comm: u32) -> (crate::wire::Ctx, crate::wire::Params) {
        use crate::wire::{Ctx, Key, Params};
        let ctx = Ctx {
            key: Key::new([key; 32]),
            job: 1,
            comm,
        };
        (ctx, Params::new(1000, 16, 10_000_000_000))
    }

    /// Virtual time: one root, three receivers; from fragment `dead_from` on, multicast no
    /// longer reaches receiver 2 (each datagram to the others is lost with `loss`). The root
    /// serves it by "unicast" (`accept_range`, as `transport::heal::serve` does over the host
    /// MPI) once `take_unreached` names it: every byte arrives everywhere, only receiver 2 is
    /// named, not before `SUSPECT` of silence, and the sender is done.
    fn dead_receiver(seed: u64, dead_from: u32, loss_pct: u64, present: bool) {
        use crate::wire::{McastReceiver, McastSender};
        const SUSPECT: Nanos = 50_000_000;
        const STEP: Nanos = 100_000;
        let (ctx, params) = virtual_channel(3, 2);
        let mut rng = crate::rng::Rng::new(seed);
        let len = 37_123;
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + seed as usize) as u8).collect();
        let mut tx = McastSender::new(&ctx, 5, 0, &[1, 2, 3], len, &params, 0);
        let mut rxs: Vec<McastReceiver> = (1..4)
            .map(|r| McastReceiver::new(&ctx, 5, 0, r, len, &params, 0))
            .collect();
        for rx in &mut rxs {
            rx.arm_nack(0);
        }
        let mut bufs = vec![vec![0u8; len]; 3];
        let mut named = Vec::new();
        let mut dgram = Vec::new();
        let mut now = 0;
        while !(tx.is_done() && rxs.iter().all(|r| r.is_done())) {
            assert!(now < 5_000_000_000, "seed {seed}: no end");
            if tx.poll_timeout().is_some_and(|t| t <= now) {
                tx.handle_timeout(now);
            }
            while tx.poll_transmit(now, &data, &mut dgram) {
                let f = crate::wire::packet::decode(&ctx, &dgram).unwrap().0.frag;
                for (i, rx) in rxs.iter_mut().enumerate() {
                    let dead = i == 1 && f >= dead_from;
                    if !dead && rng.below(100) >= loss_pct {
                        rx.handle_datagram(now, &dgram, &mut bufs[i]);
                    }
                }
            }
            for (i, rx) in rxs.iter_mut().enumerate() {
                if rx.poll_timeout().is_some_and(|t| t <= now) {
                    rx.handle_timeout(now);
                }
                while let Some(c) = rx.poll_control(now) {
                    let _ = tx.handle_control(now, i as u32 + 1, &c);
                }
            }
            for r in tx.take_unreached(now, SUSPECT, present) {
                assert_eq!(r, 2, "seed {seed}: only receiver 2 is unreached");
                assert!(now >= SUSPECT, "seed {seed}: named after {now} ns");
                named.push(r);
                // The offer reaches it; it asks; the root serves from its cum.
                let mut c = Vec::new();
                Control::Unicast {
                    seq: 5,
                    cum: rxs[1].cum(),
                }
                .encode(&mut c);
                tx.handle_control(now, r, &c).unwrap();
            }
            for (r, first) in tx.take_serve() {
                assert_eq!(r, 2);
                let start = first as usize * 1000;
                let n = rxs[1].accept_range(now, first, &data[start..], &mut bufs[1]);
                assert!(n.is_some(), "seed {seed}: the range is refused");
            }
            now += STEP;
        }
        assert_eq!(named, vec![2], "seed {seed}");
        for b in &bufs {
            assert!(b == &data, "seed {seed}: wrong bytes");
        }
    }

    #[test]
    fn a_receiver_multicast_stopped_reaching_is_served_by_unicast() {
        for seed in 0..20 {
            dead_receiver(seed, (seed % 5) as u32 * 9, 0, true);
            dead_receiver(seed, 3, 10, true);
            // An eager broadcast: only a receiver that asks counts (it NACKs its holes).
            dead_receiver(seed, 1, 5, false);
        }
    }

    use crate::wire::{Control, Nanos};

    #[test]
    fn a_late_receiver_is_not_unreached() {
        use crate::wire::{Ctx, Key, McastSender, Params};
        let ctx = Ctx {
            key: Key::new([3; 32]),
            job: 1,
            comm: 2,
        };
        let params = Params::new(1000, 16, 10_000_000_000);
        let data = vec![1u8; 5000];
        let mut tx = McastSender::new(&ctx, 5, 0, &[1, 2], data.len(), &params, 0);
        let mut d = Vec::new();
        while tx.poll_transmit(0, &data, &mut d) {}
        // Nobody acknowledged for a second; nobody asked: late, not unreached (eager).
        assert!(tx.take_unreached(1_000_000_000, 1, false).is_empty());
        // Present (they sent their scouts): both are, once.
        assert_eq!(tx.take_unreached(1_000_000_000, 1, true), vec![1, 2]);
        assert!(tx.take_unreached(2_000_000_000, 1, true).is_empty());
        // Until they answer, the root waits: one had everything meanwhile (its ack), the
        // other asks and is served from its cum.
        assert!(!tx.is_done());
        let mut c = Vec::new();
        Control::Ack { seq: 5, cum: 5 }.encode(&mut c);
        tx.handle_control(2_000_000_000, 1, &c).unwrap();
        Control::Unicast { seq: 5, cum: 2 }.encode(&mut c);
        tx.handle_control(2_000_000_000, 2, &c).unwrap();
        assert_eq!(tx.take_serve(), vec![(2, 2)]);
        assert!(tx.take_serve().is_empty());
        assert!(tx.is_done());
    }

    /// A GOAL receiver that no datagram reached has no receiver to NACK with; it says it waits
    /// (an empty NACK at cum 0, `transport::goal_mcast`), even before the root started, and
    /// then counts as asking: named once `SUSPECT` passed after the first fragment went out.
    /// A multicast that goes point-to-point from the start offers everyone at once.
    #[test]
    fn a_waiting_receiver_no_datagram_reached_is_named_and_take_all_offers_everyone() {
        use crate::wire::McastSender;
        let (ctx, params) = virtual_channel(3, 2);
        let data = vec![1u8; 5000];
        let mut tx = McastSender::new(&ctx, 5, 0, &[1, 2], data.len(), &params, 0);
        let mut c = Vec::new();
        Control::Nack {
            seq: 5,
            cum: 0,
            missing: vec![],
        }
        .encode(&mut c);
        tx.handle_control(0, 2, &c).unwrap();
        let mut d = Vec::new();
        while tx.poll_transmit(10, &data, &mut d) {}
        assert!(tx.take_unreached(9, 1, false).is_empty(), "not yet");
        assert!(tx.take_unreached(10 + 999, 1000, false).is_empty());
        assert_eq!(tx.take_unreached(10 + 1000, 1000, false), vec![2]);
        assert!(tx.take_unreached(u64::MAX / 2, 1000, false).is_empty());
        // Point-to-point from the start: both, once, nothing sent; done when both asked.
        let mut tx = McastSender::new(&ctx, 6, 0, &[1, 2], data.len(), &params, 0);
        assert_eq!(tx.take_all(), vec![1, 2]);
        assert!(tx.take_all().is_empty());
        assert!(!tx.is_done());
        for r in [1, 2] {
            Control::Unicast { seq: 6, cum: 0 }.encode(&mut c);
            tx.handle_control(5, r, &c).unwrap();
        }
        assert_eq!(tx.take_serve(), vec![(1, 0), (2, 0)]);
        assert!(tx.is_done());
        assert_eq!(tx.stats().datagrams, 0);
    }

    #[test]
    fn accept_range_checks_its_bounds() {
        use crate::wire::{Ctx, Key, McastReceiver, Params};
        let ctx = Ctx {
            key: Key::new([3; 32]),
            job: 1,
            comm: 2,
        };
        let params = Params::new(1000, 16, 10_000_000_000);
        let mut rx = McastReceiver::new(&ctx, 1, 0, 1, 2500, &params, 0);
        let mut buf = vec![0u8; 2500];
        let data: Vec<u8> = (0..2500).map(|i| i as u8).collect();
        assert_eq!(rx.accept_range(0, 3, &data[..], &mut buf), None);
        assert_eq!(rx.accept_range(0, 1, &data[1000..1999], &mut buf), None);
        assert_eq!(rx.accept_range(0, 0, &data[..], &mut buf), Some(3));
        assert_eq!(rx.accept_range(0, 2, &data[2000..], &mut buf), Some(0));
        assert_eq!(buf, data);
        assert_eq!(rx.cum(), 3);
    }

    /// The shortest multicast whose datagrams are larger than `rung` bytes.
    fn above(rung: usize) -> usize {
        rung - crate::wire::OVERHEAD + 1
    }

    #[test]
    fn a_root_leaves_ip_after_two_repaired_multicasts_and_comes_back_by_trials() {
        let mut p = RootPath::new(65000);
        assert_eq!(p.start(100_000), Via::Ip);
        // One repaired multicast is what plain loss does now and then.
        assert_eq!(p.finished(Via::Ip, 100_000, true), PathChange::Same);
        assert_eq!(p.finished(Via::Ip, 100_000, false), PathChange::Same);
        assert_eq!(p.finished(Via::Ip, 100_000, true), PathChange::Same);
        // Datagrams of 65000 bytes and more failed: those above the 9000-byte MTU's go.
        let from = above(8972);
        assert_eq!(
            p.finished(Via::Ip, 200_000, true),
            PathChange::ToP2p { from }
        );
        assert_eq!(p.p2p_from(), Some(from));
        // Shorter ones still go by IP; longer ones point-to-point for PROBE_FIRST, then a trial.
        assert_eq!(p.start(from - 1), Via::Ip);
        for _ in 0..PROBE_FIRST {
            assert_eq!(p.start(from), Via::P2p);
        }
        assert_eq!(p.start(150_000), Via::Trial);
        // While the trial is out, the others go point-to-point.
        assert_eq!(p.start(150_000), Via::P2p);
        // A multicast started by IP before the switch ends repaired: no news.
        assert_eq!(p.finished(Via::Ip, 150_000, true), PathChange::Same);
        assert_eq!(p.finished(Via::P2p, 150_000, false), PathChange::Same);
        // The trial needed a repair: twice as many before the next.
        assert_eq!(p.finished(Via::Trial, 150_000, true), PathChange::Same);
        for _ in 0..2 * PROBE_FIRST {
            assert_eq!(p.start(100_000), Via::P2p);
        }
        assert_eq!(p.start(100_000), Via::Trial);
        assert_eq!(p.finished(Via::Trial, 100_000, false), PathChange::Return);
        assert_eq!(p.p2p_from(), None);
        assert_eq!(p.start(1 << 30), Via::Ip);
    }

    #[test]
    fn short_multicasts_that_pass_do_not_hide_large_ones_that_do_not() {
        // Only datagrams over 1500 bytes are lost: short multicasts go through in between.
        let mut p = RootPath::new(65000);
        assert_eq!(p.finished(Via::Ip, 70_000, true), PathChange::Same);
        assert_eq!(p.finished(Via::Ip, 800, false), PathChange::Same);
        assert_eq!(
            p.finished(Via::Ip, 65_000, true),
            PathChange::ToP2p { from: above(8972) }
        );
        assert_eq!(p.start(800), Via::Ip);
        assert_eq!(p.start(65_000), Via::P2p);
        // Datagrams of a few kilobytes fail too: down to the 1500-byte MTU's.
        assert_eq!(p.finished(Via::Ip, 3000, true), PathChange::Same);
        assert_eq!(
            p.finished(Via::Ip, 5000, true),
            PathChange::ToP2p { from: above(1472) }
        );
        assert_eq!(p.start(above(1472) - 1), Via::Ip);
        assert_eq!(p.start(above(1472)), Via::P2p);
        // Then the short ones fail too (all multicast lost): every multicast.
        assert_eq!(p.finished(Via::Ip, 100, true), PathChange::Same);
        assert_eq!(
            p.finished(Via::Ip, 900, true),
            PathChange::ToP2p { from: 0 }
        );
        assert_eq!(p.start(1), Via::P2p);
        // A multicast as long as a bad one that passes starts the count over.
        let mut q = RootPath::new(65000);
        assert_eq!(q.finished(Via::Ip, 5000, true), PathChange::Same);
        assert_eq!(q.finished(Via::Ip, 5000, false), PathChange::Same);
        assert_eq!(q.finished(Via::Ip, 5000, true), PathChange::Same);
        // A root with small datagrams: the bound follows its datagrams, not the lengths.
        let mut r = RootPath::new(1400);
        r.finished(Via::Ip, 1_000_000, true);
        assert_eq!(
            r.finished(Via::Ip, 1_000_000, true),
            PathChange::ToP2p { from: above(548) }
        );
    }

    #[test]
    fn the_trial_interval_is_capped() {
        let mut p = RootPath::new(65000);
        p.finished(Via::Ip, 10, true);
        p.finished(Via::Ip, 10, true);
        for _ in 0..20 {
            let mut n = 0;
            while p.start(10) == Via::P2p {
                n += 1;
            }
            assert!(n <= PROBE_MAX, "{n} multicasts before a trial");
            p.finished(Via::Trial, 10, true);
        }
        let mut n = 0;
        while p.start(10) == Via::P2p {
            n += 1;
        }
        assert_eq!(n, PROBE_MAX);
    }

    /// An IP multicast of `MPICAST_Imcast` in virtual time (no scouts: a destination counts
    /// only once it asked, `take_unreached(.., false)`, as `transport::imcast_ip` does): the
    /// datagrams for receiver 2 stop at fragment `dead_from` (or, with `large_only`, every
    /// full-size datagram is lost for it: a 1500-byte path), the others lose `loss_pct`
    /// percent. The root offers receiver 2 the rest, which answers with its cum and is served;
    /// the others, held back by the window while receiver 2 lacks data, are not offered
    /// anything; late datagrams after the repair change nothing; every byte is right.
    fn imcast_receiver_asks(seed: u64, dead_from: u32, large_only: bool, loss_pct: u64) {
        use crate::wire::{McastReceiver, McastSender};
        const SUSPECT: Nanos = 50_000_000;
        const STEP: Nanos = 100_000;
        let (ctx, params) = virtual_channel(5, 3);
        let mut rng = crate::rng::Rng::new(seed);
        let len = 23_456 + seed as usize * 13;
        let data: Vec<u8> = (0..len).map(|i| (i * 11 + seed as usize) as u8).collect();
        let mut tx = McastSender::new(&ctx, 9, 0, &[1, 2, 3], len, &params, 0);
        let mut rxs: Vec<McastReceiver> = (1..4)
            .map(|r| McastReceiver::new(&ctx, 9, 0, r, len, &params, 0))
            .collect();
        for rx in &mut rxs {
            rx.arm_nack(0);
        }
        let mut bufs = vec![vec![0u8; len]; 3];
        let mut asked = [false; 3];
        let mut served = [false; 3];
        let mut dgram = Vec::new();
        let mut sent: Vec<Vec<u8>> = Vec::new();
        let mut now = 0;
        while !(tx.is_done() && rxs.iter().all(|r| r.is_done())) {
            assert!(now < 5_000_000_000, "seed {seed}: no end");
            if tx.poll_timeout().is_some_and(|t| t <= now) {
                tx.handle_timeout(now);
            }
            while tx.poll_transmit(now, &data, &mut dgram) {
                sent.push(dgram.clone());
                let f = crate::wire::packet::decode(&ctx, &dgram).unwrap().0.frag;
                let full = dgram.len() >= 1000 + crate::wire::OVERHEAD;
                for (i, rx) in rxs.iter_mut().enumerate() {
                    let dead = i == 1 && if large_only { full } else { f >= dead_from };
                    if !dead && rng.below(100) >= loss_pct {
                        rx.handle_datagram(now, &dgram, &mut bufs[i]);
                    }
                }
            }
            for (i, rx) in rxs.iter_mut().enumerate() {
                if rx.poll_timeout().is_some_and(|t| t <= now) {
                    rx.handle_timeout(now);
                }
                while let Some(c) = rx.poll_control(now) {
                    let _ = tx.handle_control(now, i as u32 + 1, &c);
                }
            }
            for r in tx.take_unreached(now, SUSPECT, false) {
                // The offer reaches it; unless it has finished meanwhile, it asks.
                let i = r as usize - 1;
                assert!(now >= SUSPECT, "seed {seed}: offered after {now} ns");
                assert!(!asked[i], "seed {seed}: offered twice");
                asked[i] = true;
                if !rxs[i].is_done() {
                    let mut c = Vec::new();
                    Control::Unicast {
                        seq: 9,
                        cum: rxs[i].cum(),
                    }
                    .encode(&mut c);
                    tx.handle_control(now, r, &c).unwrap();
                }
            }
            for (r, first) in tx.take_serve() {
                assert!(now >= SUSPECT, "seed {seed}: served after {now} ns");
                let i = r as usize - 1;
                served[i] = true;
                let start = first as usize * 1000;
                let n = rxs[i].accept_range(now, first, &data[start..], &mut bufs[i]);
                assert!(n.is_some(), "seed {seed}: the range is refused");
                // Late copies of every datagram, after the repair: nothing changes.
                for d in &sent {
                    rxs[i].handle_datagram(now, d, &mut bufs[i]);
                }
                assert!(
                    bufs[i] == data,
                    "seed {seed}: wrong bytes after late datagrams"
                );
            }
            now += STEP;
        }
        assert!(
            asked[1] && served[1],
            "seed {seed}: receiver 2 was not repaired"
        );
        assert!(
            !asked[0] && !asked[2],
            "seed {seed}: a reached receiver was offered"
        );
        for b in &bufs {
            assert!(b == &data, "seed {seed}: wrong bytes");
        }
    }

    #[test]
    fn an_imcast_destination_multicast_does_not_reach_asks_and_gets_every_byte() {
        for seed in 0..16 {
            imcast_receiver_asks(seed, 0, false, 0); // nothing arrives
            imcast_receiver_asks(seed, (seed % 4) as u32 * 5, false, 5); // stops mid-way
            imcast_receiver_asks(seed, 0, true, 0); // only the short last datagram passes
        }
    }
}
