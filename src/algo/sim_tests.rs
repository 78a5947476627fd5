//! Whole-collective simulation: every rank's schedule runs on its own `Execution` against one
//! simulated network in virtual time. Ranks enter at random moments, point-to-point messages are
//! matched by (src, dst, tag) in order, a multicast reaches every other rank, and every delivery
//! happens in a seeded random order. The checks are the reasons scouts exist: nobody multicasts
//! to, or leaves a barrier before, a rank that has not entered. An eager broadcast (no scouts)
//! relies instead on the joined socket, which the simulated one models by queueing datagrams
//! that reach a rank before its receive: its checks are that every rank still gets the data.

use super::{barrier, bcast, Sync, TAG_SCOUT, TAG_SCOUT_BARRIER};
use crate::sched::testutil::{Preds, Rng};
use crate::sched::{ActionId, Backend, Execution, Op, Schedule};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;

#[derive(Clone, Copy, Debug)]
enum Coll {
    Bcast { sync: Sync, root: u32, len: usize },
    Barrier,
}

impl Coll {
    fn root(self) -> u32 {
        match self {
            Coll::Bcast { root, .. } => root,
            Coll::Barrier => 0,
        }
    }
    fn len(self) -> usize {
        match self {
            Coll::Bcast { len, .. } => len,
            Coll::Barrier => 0,
        }
    }
    /// Synchronised by scouts (everything but the eager broadcast).
    fn scouted(self) -> bool {
        !matches!(
            self,
            Coll::Bcast {
                sync: Sync::Eager,
                ..
            }
        )
    }
}

type Key = (u32, u32, u32); // (src, dst, tag)

#[derive(Clone, Copy, Debug)]
enum Event {
    Enter(u32),
    /// The oldest in-flight message on this channel arrives.
    Deliver(Key),
    /// A multicast datagram from `from` reaches `to`.
    Mcast {
        to: u32,
        from: u32,
        len: usize,
    },
    /// A send completes locally some time after it started.
    SendDone(u32, ActionId),
}

#[derive(Default)]
struct Chan {
    in_flight: VecDeque<usize>,
    unexpected: VecDeque<usize>,
    posted: VecDeque<(ActionId, usize)>,
}

#[derive(Default, Debug)]
struct Stats {
    sends: u64,
    scouts: u64,
    matched: u64,
    mcast_sends: u64,
    mcast_recvs: u64,
}

struct Net {
    n: u32,
    coll: Coll,
    seed: u64,
    rng: Rng,
    events: Vec<Event>,
    chans: HashMap<Key, Chan>,
    entered: Vec<bool>,
    entered_count: u32,
    /// Completions waiting for the rank's next `progress`.
    completions: Vec<Vec<ActionId>>,
    /// A posted multicast receive per rank, and datagrams the "socket" queued before it.
    mcast_posted: Vec<Option<(ActionId, u32, usize)>>,
    mcast_queued: Vec<Vec<(u32, usize)>>,
    preds: Vec<Preds>,
    started: Vec<Vec<bool>>,
    finished: Vec<Vec<bool>>,
    stats: Stats,
}

impl Net {
    fn all_entered(&self) -> bool {
        self.entered_count == self.n
    }

    /// What the scouts promise: everybody entered (trivially true without scouts).
    fn synchronised(&self) -> bool {
        !self.coll.scouted() || self.all_entered()
    }

    /// Records that `id` completed; reports it at once through `now` or at the next progress.
    fn complete(&mut self, rank: u32, id: ActionId, now: Option<&mut Vec<ActionId>>) {
        let f = &mut self.finished[rank as usize][id as usize];
        assert!(
            !*f,
            "seed {}: rank {rank} action {id} completed twice",
            self.seed
        );
        *f = true;
        match now {
            Some(done) => done.push(id),
            None => self.completions[rank as usize].push(id),
        }
    }

    fn mcast_recv_completes(&mut self, rank: u32, root: u32, from: u32, want: usize, got: usize) {
        assert_eq!(
            root, from,
            "seed {}: rank {rank} got multicast from wrong root",
            self.seed
        );
        assert_eq!(want, got, "seed {}: multicast length", self.seed);
        assert!(
            self.synchronised(),
            "seed {}: rank {rank}'s multicast receive completed before every rank entered",
            self.seed
        );
        self.stats.mcast_recvs += 1;
    }

    fn start(&mut self, me: u32, id: ActionId, op: &Op, done: &mut Vec<ActionId>) {
        let seed = self.seed;
        let (n, coll) = (self.n, self.coll);
        assert!(
            self.entered[me as usize],
            "seed {seed}: rank {me} acts before entering"
        );
        let s = &mut self.started[me as usize][id as usize];
        assert!(!*s, "seed {seed}: rank {me} started {id} twice");
        *s = true;
        for &p in self.preds[me as usize].get(id) {
            assert!(
                self.finished[me as usize][p as usize],
                "seed {seed}: rank {me} started {id} before its prerequisite {p}"
            );
        }
        match *op {
            Op::Send { peer, tag, buf } => {
                assert!(peer < n && peer != me, "seed {seed}: bad peer {peer}");
                self.stats.sends += 1;
                if tag == TAG_SCOUT || tag == TAG_SCOUT_BARRIER {
                    assert_eq!(buf.len, 0, "scouts carry no data");
                    self.stats.scouts += 1;
                }
                let key = (me, peer, tag);
                self.chans
                    .entry(key)
                    .or_default()
                    .in_flight
                    .push_back(buf.len);
                self.events.push(Event::Deliver(key));
                if self.rng.chance(50) {
                    self.complete(me, id, Some(done));
                } else {
                    self.events.push(Event::SendDone(me, id));
                }
            }
            Op::Recv { peer, tag, buf } => {
                assert!(peer < n && peer != me, "seed {seed}: bad peer {peer}");
                let chan = self.chans.entry((peer, me, tag)).or_default();
                match chan.unexpected.pop_front() {
                    Some(len) => {
                        assert_eq!(len, buf.len, "seed {seed}: message length");
                        self.stats.matched += 1;
                        self.complete(me, id, Some(done));
                    }
                    None => chan.posted.push_back((id, buf.len)),
                }
            }
            Op::McastSend { buf } => {
                assert_eq!(me, coll.root(), "seed {seed}: only the root multicasts");
                assert_eq!(buf.len, coll.len());
                assert!(
                    self.synchronised(),
                    "seed {seed}: root {me} multicasts before every rank entered"
                );
                self.stats.mcast_sends += 1;
                for to in (0..n).filter(|&r| r != me) {
                    self.events.push(Event::Mcast {
                        to,
                        from: me,
                        len: buf.len,
                    });
                }
                self.complete(me, id, Some(done));
            }
            Op::McastRecv { root, buf } => {
                assert_eq!(root, coll.root(), "seed {seed}: McastRecv names wrong root");
                assert_ne!(me, root);
                assert!(
                    self.mcast_posted[me as usize].is_none(),
                    "one multicast recv per rank"
                );
                if let Some((from, len)) = self.mcast_queued[me as usize].pop() {
                    self.mcast_recv_completes(me, root, from, buf.len, len);
                    self.complete(me, id, Some(done));
                } else {
                    self.mcast_posted[me as usize] = Some((id, root, buf.len));
                }
            }
            Op::Exec { .. } | Op::Calc { .. } => {
                panic!("seed {seed}: scout schedules have no exec or calc")
            }
        }
    }

    /// Applies one event; returns the rank that may now make progress.
    fn apply(&mut self, ev: Event) -> u32 {
        match ev {
            Event::Enter(r) => {
                self.entered[r as usize] = true;
                self.entered_count += 1;
                r
            }
            Event::Deliver(key) => {
                let chan = self.chans.get_mut(&key).expect("channel exists");
                let len = chan.in_flight.pop_front().expect("a message per event");
                match chan.posted.pop_front() {
                    Some((id, want)) => {
                        assert_eq!(want, len, "seed {}: message length", self.seed);
                        self.stats.matched += 1;
                        self.complete(key.1, id, None);
                    }
                    None => chan.unexpected.push_back(len),
                }
                key.1
            }
            Event::Mcast { to, from, len } => {
                match self.mcast_posted[to as usize].take() {
                    Some((id, root, want)) => {
                        self.mcast_recv_completes(to, root, from, want, len);
                        self.complete(to, id, None);
                    }
                    None => self.mcast_queued[to as usize].push((from, len)),
                }
                to
            }
            Event::SendDone(r, id) => {
                self.complete(r, id, None);
                r
            }
        }
    }
}

struct Port<'a> {
    net: &'a mut Net,
    rank: u32,
}

impl Backend for Port<'_> {
    type Error = Infallible;

    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        self.net.start(self.rank, id, op, done);
        Ok(())
    }

    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        done.append(&mut self.net.completions[self.rank as usize]);
        Ok(())
    }
}

fn schedule_of(coll: Coll, n: u32, me: u32) -> Schedule {
    match coll {
        Coll::Bcast { sync, root, len } => bcast(sync, n, root, me, len),
        Coll::Barrier => barrier(n, me),
    }
}

fn simulate(coll: Coll, n: u32, seed: u64) -> Stats {
    let scheds: Vec<Schedule> = (0..n).map(|me| schedule_of(coll, n, me)).collect();
    run(coll, &scheds, seed)
}

fn run(coll: Coll, scheds: &[Schedule], seed: u64) -> Stats {
    let n = scheds.len() as u32;
    let mut execs: Vec<Execution> = scheds.iter().map(Execution::new).collect();
    let mut net = Net {
        n,
        coll,
        seed,
        rng: Rng::new(seed),
        events: (0..n).map(Event::Enter).collect(),
        chans: HashMap::new(),
        entered: vec![false; n as usize],
        entered_count: 0,
        completions: vec![Vec::new(); n as usize],
        mcast_posted: vec![None; n as usize],
        mcast_queued: vec![Vec::new(); n as usize],
        preds: scheds.iter().map(Preds::of).collect(),
        started: scheds.iter().map(|s| vec![false; s.len()]).collect(),
        finished: scheds.iter().map(|s| vec![false; s.len()]).collect(),
        stats: Stats::default(),
    };
    while !net.events.is_empty() {
        let k = net.rng.below(net.events.len());
        let ev = net.events.swap_remove(k);
        let r = net.apply(ev);
        if !net.entered[r as usize] {
            continue; // it will find its queued messages when it enters
        }
        let ex = &mut execs[r as usize];
        let done = ex
            .test(&mut Port {
                net: &mut net,
                rank: r,
            })
            .unwrap();
        assert!(
            !done || net.synchronised(),
            "seed {seed}: rank {r} left the collective before every rank entered"
        );
    }
    for (r, ex) in execs.iter().enumerate() {
        assert!(
            ex.is_done(),
            "seed {seed}: {coll:?} n {n}: rank {r} deadlocked after {} of {} actions",
            ex.completed(),
            ex.schedule().len()
        );
        assert_eq!(ex.ignored_completions(), 0);
    }
    for (key, chan) in &net.chans {
        assert!(
            chan.in_flight.is_empty() && chan.unexpected.is_empty() && chan.posted.is_empty(),
            "seed {seed}: unmatched traffic on {key:?}"
        );
    }
    assert!(net.mcast_queued.iter().all(Vec::is_empty));
    let st = net.stats;
    assert_eq!(
        st.sends, st.matched,
        "seed {seed}: every send has one receive"
    );
    let scouts = if coll.scouted() { u64::from(n) - 1 } else { 0 };
    assert_eq!(
        st.scouts, scouts,
        "seed {seed}: n - 1 scouts, none when eager"
    );
    assert_eq!(
        st.mcast_sends,
        u64::from(n > 1),
        "seed {seed}: one multicast"
    );
    assert_eq!(st.mcast_recvs, u64::from(n) - 1, "seed {seed}");
    st
}

fn seed_of(tag: u64, n: u32, root: u32) -> u64 {
    tag << 48 | u64::from(n) << 24 | u64::from(root)
}

fn all_collectives(n: u32, root: u32) -> [(u64, Coll); 4] {
    let len = (n as usize * 37 + root as usize) % 5000; // includes zero-length broadcasts
    [
        (
            1,
            Coll::Bcast {
                sync: Sync::Tree,
                root,
                len,
            },
        ),
        (
            2,
            Coll::Bcast {
                sync: Sync::Linear,
                root,
                len,
            },
        ),
        (3, Coll::Barrier),
        (
            5,
            Coll::Bcast {
                sync: Sync::Eager,
                root,
                len,
            },
        ),
    ]
}

#[test]
fn every_root_up_to_64_ranks() {
    for n in 1..=64 {
        for root in 0..n {
            for (tag, coll) in all_collectives(n, root) {
                if matches!(coll, Coll::Barrier) && root != 0 {
                    continue;
                }
                simulate(coll, n, seed_of(tag, n, root));
            }
        }
    }
}

#[test]
fn barrier_under_many_arrival_orders() {
    for n in [2, 3, 5, 8, 13, 31, 64] {
        for round in 0..50 {
            simulate(Coll::Barrier, n, seed_of(4, n, round));
        }
    }
}

#[test]
fn large_communicators_with_a_few_roots() {
    for n in [100u32, 255, 256, 511, 1000, 1024] {
        for root in [0, 1, n / 2, n - 1] {
            for (tag, coll) in all_collectives(n, root) {
                if matches!(coll, Coll::Barrier) && root != 0 {
                    continue;
                }
                simulate(coll, n, seed_of(tag, n, root));
            }
        }
    }
}

/// The simulator must be able to fail: a broadcast whose root does not wait for scouts is caught
/// multicasting before everyone entered, for some arrival order.
#[test]
fn simulator_catches_a_root_that_skips_the_scouts() {
    let n = 8;
    let scheds: Vec<Schedule> = (0..n)
        .map(|me| {
            let mut b = crate::sched::Builder::new();
            let buf = crate::sched::BufRef::EMPTY;
            if me == 0 {
                b.add(Op::McastSend { buf });
            } else {
                b.add(Op::McastRecv { root: 0, buf });
            }
            b.build().unwrap()
        })
        .collect();
    let caught = (0..20).any(|seed| {
        let err = std::panic::catch_unwind(|| run(Coll::Barrier, &scheds, seed));
        match err {
            Ok(_) => false,
            Err(e) => e
                .downcast_ref::<String>()
                .is_some_and(|m| m.contains("multicasts before every rank entered")),
        }
    });
    assert!(caught);
}
