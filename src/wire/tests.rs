//! Virtual-time simulation of one root and N-1 receivers running consecutive broadcasts over a
//! hostile network (loss, duplication, reordering, corruption, forgeries, bounded socket
//! buffers), plus the barrier release repair. Every run is seeded; a failure names its seed.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::control::Control;
use super::packet::{self, Header, Kind};
use super::*;

use crate::rng::Rng;

#[derive(Clone, Debug)]
struct Net {
    /// Per delivery (datagram x receiver).
    loss: f64,
    /// Per multicast, lost for every receiver (a drop at the root or the switch).
    common_loss: f64,
    /// Receivers that get no multicast datagram at all (from `dead_from` on).
    dead: Vec<u32>,
    dead_from: Nanos,
    dup: f64,
    /// Duplicates arrive up to this much later: late copies cross into the next operation.
    dup_delay: Nanos,
    corrupt: f64,
    /// Per multicast, a forged datagram (random key) to a random receiver.
    forge: f64,
    delay: Nanos,
    /// Random extra delay per delivery: reordering.
    jitter: Nanos,
    /// Socket buffer capacity in datagrams.
    buf_cap: usize,
    /// Root's time to put one datagram on the wire.
    tx_time: Nanos,
    /// Receiver r needs `proc_time * (1 + r % 4)` per datagram, so some are slower than the root.
    proc_time: Nanos,
    ctrl_delay: Nanos,
}

impl Net {
    fn clean() -> Net {
        Net {
            loss: 0.0,
            common_loss: 0.0,
            dead: vec![],
            dead_from: 0,
            dup: 0.0,
            dup_delay: 0,
            corrupt: 0.0,
            forge: 0.0,
            delay: 20_000,
            jitter: 0,
            buf_cap: 64,
            tx_time: 1_000,
            proc_time: 1_000,
            ctrl_delay: 30_000,
        }
    }

    fn lossy(loss: f64) -> Net {
        Net {
            loss,
            ..Net::clean()
        }
    }
}

#[derive(Clone, Debug)]
struct Cfg {
    n: u32,
    sizes: Vec<usize>,
    params: Params,
    net: Net,
    seed: u64,
    time_limit: Nanos,
}

fn params() -> Params {
    Params::new(64, 32, 1_000_000_000)
}

impl Cfg {
    fn new(n: u32, sizes: &[usize], net: Net, seed: u64) -> Cfg {
        Cfg {
            n,
            sizes: sizes.to_vec(),
            params: params(),
            net,
            seed,
            time_limit: 30_000_000_000,
        }
    }
}

#[derive(Debug, Default)]
struct Report {
    now: Nanos,
    /// Multicasts that at least one receiver did not get intact.
    lost_sends: u64,
    overflows: u64,
    sender: SenderStats,
    rx: ReceiverStats,
    /// Set when the root stalled: its pending ranks then, and the receivers that stalled.
    root_stalled: Option<Vec<u32>>,
    /// At the root's stall: `McastSender::unreached(false)` and `(true)`, and `held_back()`.
    root_unreached: Option<(Vec<u32>, Vec<u32>)>,
    root_held: Vec<u32>,
    rx_stalled: Vec<u32>,
    /// Per op, the time it completed at the root.
    op_end: Vec<Nanos>,
}

enum Ev {
    Arrive {
        to: usize,
        dgram: Vec<u8>,
        bad: bool,
    },
    Ctrl {
        msg: Vec<u8>,
        from: u32,
    },
    Proc {
        r: usize,
    },
}

struct Item {
    t: Nanos,
    id: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.id) == (o.t, o.id)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    // Min-heap on (time, insertion order).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.id).cmp(&(self.t, self.id))
    }
}

struct Rx {
    rank: u32,
    op: usize,
    cur: Option<McastReceiver>,
    buf: Vec<u8>,
    sock: VecDeque<(Vec<u8>, bool)>,
    busy: bool,
    ctrl_last: Nanos,
    gone: bool,
}

const FILL: u8 = 0xEE;
const SEQ0: u64 = 1000;

struct Sim {
    cfg: Cfg,
    ctx: Ctx,
    rng: Rng,
    now: Nanos,
    heap: BinaryHeap<Item>,
    ids: u64,
    data: Vec<Vec<u8>>,
    root: u32,
    rxs: Vec<Rx>,
    rep: Report,
}

impl Sim {
    fn push(&mut self, t: Nanos, ev: Ev) {
        self.ids += 1;
        self.heap.push(Item {
            t,
            id: self.ids,
            ev,
        });
    }

    fn tag(&self) -> String {
        format!("seed {:#x} cfg {:?}", self.cfg.seed, self.cfg)
    }

    fn start_rx(&mut self, i: usize) {
        let rx = &mut self.rxs[i];
        if rx.op == self.cfg.sizes.len() {
            rx.cur = None;
            rx.gone = true;
            return;
        }
        let len = self.cfg.sizes[rx.op];
        rx.buf = vec![FILL; len];
        rx.cur = Some(McastReceiver::new(
            &self.ctx,
            SEQ0 + rx.op as u64,
            self.root,
            rx.rank,
            len,
            &self.cfg.params,
            self.now,
        ));
    }

    fn check_rx_data(&self, i: usize) {
        let rx = &self.rxs[i];
        let Some(r) = &rx.cur else { return };
        let fp = self.cfg.params.frag_payload;
        let data = &self.data[rx.op];
        for f in 0..r.nfrags() {
            let s = f as usize * fp;
            let e = (s + fp).min(data.len());
            let want: &[u8] = if r.has(f) {
                &data[s..e]
            } else {
                &[FILL; 4096][..e - s]
            };
            assert_eq!(
                &rx.buf[s..e],
                want,
                "rank {} op {} frag {f} (has {}): {}",
                rx.rank,
                rx.op,
                r.has(f),
                self.tag()
            );
        }
    }

    fn multicast(&mut self, dgram: &[u8]) {
        let net = self.cfg.net.clone();
        let common = self.rng.chance(net.common_loss);
        let mut lost = false;
        for i in 0..self.rxs.len() {
            let rank = self.rxs[i].rank;
            let dead = net.dead.contains(&rank) && self.now >= net.dead_from;
            if common || dead || self.rng.chance(net.loss) {
                lost = true;
                continue;
            }
            let t = self.now + net.delay + self.rng.below(net.jitter + 1);
            let mut d = dgram.to_vec();
            let bad = self.rng.chance(net.corrupt);
            if bad {
                lost = true;
                if self.rng.chance(0.2) {
                    d.truncate(self.rng.below(d.len() as u64) as usize);
                } else {
                    let bit = self.rng.below(d.len() as u64 * 8) as usize;
                    d[bit / 8] ^= 1 << (bit % 8);
                }
            }
            if self.rng.chance(net.dup) {
                let t2 = t + self.rng.below(net.dup_delay + 1);
                self.push(
                    t2,
                    Ev::Arrive {
                        to: i,
                        dgram: d.clone(),
                        bad,
                    },
                );
            }
            self.push(
                t,
                Ev::Arrive {
                    to: i,
                    dgram: d,
                    bad,
                },
            );
        }
        if lost {
            self.rep.lost_sends += 1;
        }
        if !self.rxs.is_empty() && self.rng.chance(net.forge) {
            let to = self.rng.below(self.rxs.len() as u64) as usize;
            let fake = Ctx {
                key: Key::new(
                    self.rng
                        .next_u64()
                        .to_le_bytes()
                        .repeat(4)
                        .try_into()
                        .unwrap(),
                ),
                ..self.ctx.clone()
            };
            let h = Header {
                kind: Kind::Data,
                job: fake.job,
                comm: fake.comm,
                seq: SEQ0 + self.rng.below(self.cfg.sizes.len() as u64),
                root: self.root,
                frag: 0,
                nfrags: 1,
                total_len: 1,
            };
            let mut d = Vec::new();
            packet::encode(&fake, &h, &[0x66], &mut d);
            self.push(
                self.now + net.delay,
                Ev::Arrive {
                    to,
                    dgram: d,
                    bad: true,
                },
            );
        }
    }

    fn proc_time(&self, i: usize) -> Nanos {
        self.cfg.net.proc_time * (1 + self.rxs[i].rank as u64 % 4)
    }

    fn event(
        &mut self,
        ev: Ev,
        sender: &mut Option<McastSender>,
        op: usize,
        backlog: &mut Vec<(u32, Vec<u8>)>,
    ) {
        match ev {
            Ev::Arrive { to, dgram, bad } => {
                let rx = &mut self.rxs[to];
                if rx.gone {
                    return;
                }
                if rx.sock.len() >= self.cfg.net.buf_cap {
                    self.rep.overflows += 1;
                    return;
                }
                rx.sock.push_back((dgram, bad));
                if !rx.busy {
                    rx.busy = true;
                    let t = self.now + self.proc_time(to);
                    self.push(t, Ev::Proc { r: to });
                }
            }
            Ev::Proc { r } => {
                let now = self.now;
                let rx = &mut self.rxs[r];
                let Some((d, bad)) = rx.sock.pop_front() else {
                    rx.busy = false;
                    return;
                };
                if let Some(cur) = rx.cur.as_mut() {
                    let o = cur.handle_datagram(now, &d, &mut rx.buf);
                    match o {
                        Outcome::Rejected(_) => {
                            assert!(bad, "good datagram rejected: {o:?} {}", self.tag())
                        }
                        Outcome::Foreign => panic!("foreign datagram: {}", self.tag()),
                        _ if bad => panic!("bad datagram not rejected: {o:?} {}", self.tag()),
                        _ => {}
                    }
                }
                let rx = &mut self.rxs[r];
                if rx.sock.is_empty() {
                    rx.busy = false;
                } else {
                    let t = self.now + self.proc_time(r);
                    self.push(t, Ev::Proc { r });
                }
            }
            Ev::Ctrl { msg, from } => {
                let seq = Control::decode(&msg).expect("receiver sent garbage").seq();
                let cur = SEQ0 + op as u64;
                match sender.as_mut() {
                    Some(s) if seq == cur => {
                        s.handle_control(self.now, from, &msg)
                            .unwrap_or_else(|e| panic!("control refused: {e} {}", self.tag()));
                    }
                    _ if seq >= cur => backlog.push((from, msg)),
                    _ => panic!("control for finished op {seq}: {}", self.tag()),
                }
            }
        }
    }

    fn run(cfg: Cfg) -> Report {
        let mut rng = Rng(cfg.seed);
        let ctx = Ctx {
            key: Key::new(rng.bytes(32).try_into().unwrap()),
            job: rng.next_u64(),
            comm: rng.next_u64() as u32,
        };
        let root = rng.below(cfg.n as u64) as u32;
        let data: Vec<Vec<u8>> = cfg.sizes.iter().map(|&s| rng.bytes(s)).collect();
        let rxs = (0..cfg.n)
            .filter(|&r| r != root)
            .map(|rank| Rx {
                rank,
                op: 0,
                cur: None,
                buf: vec![],
                sock: VecDeque::new(),
                busy: false,
                ctrl_last: 0,
                gone: false,
            })
            .collect();
        let mut sim = Sim {
            cfg,
            ctx,
            rng,
            now: 0,
            heap: BinaryHeap::new(),
            ids: 0,
            data,
            root,
            rxs,
            rep: Report::default(),
        };
        sim.drive();
        // Receivers cut off mid-operation: whatever they hold must still be right.
        for i in 0..sim.rxs.len() {
            sim.check_rx_data(i);
            if let Some(c) = &sim.rxs[i].cur {
                sim.rep.rx.accepted += c.stats().accepted;
            }
        }
        sim.rep.now = sim.now;
        sim.rep
    }

    fn drive(&mut self) {
        let receivers: Vec<u32> = self.rxs.iter().map(|r| r.rank).collect();
        let mut op = 0;
        let mut sender: Option<McastSender> = None;
        let mut backlog: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut tx_free = 0;
        let mut tx_wake = None;
        let mut out = Vec::new();
        for i in 0..self.rxs.len() {
            self.start_rx(i);
        }
        loop {
            // Root: finish and start operations, replay control that arrived early.
            loop {
                if sender.as_ref().is_some_and(|s| s.is_done()) {
                    self.rep.op_end.push(self.now);
                    self.rep.sender.datagrams += sender.as_ref().unwrap().stats().datagrams;
                    self.rep.sender.retransmits += sender.as_ref().unwrap().stats().retransmits;
                    sender = None;
                    op += 1;
                }
                if sender.is_none() && op < self.cfg.sizes.len() {
                    let mut s = McastSender::new(
                        &self.ctx,
                        SEQ0 + op as u64,
                        self.root,
                        &receivers,
                        self.cfg.sizes[op],
                        &self.cfg.params,
                        self.now,
                    );
                    for (from, msg) in std::mem::take(&mut backlog) {
                        let seq = Control::decode(&msg).unwrap().seq();
                        if seq == SEQ0 + op as u64 {
                            s.handle_control(self.now, from, &msg).unwrap();
                        } else {
                            backlog.push((from, msg));
                        }
                    }
                    sender = Some(s);
                    continue;
                }
                break;
            }
            if let Some(s) = sender.as_mut() {
                if s.poll_timeout().is_some_and(|t| t <= self.now) {
                    s.handle_timeout(self.now);
                }
                if tx_free <= self.now && s.poll_transmit(self.now, &self.data[op], &mut out) {
                    self.rep.sender.bytes += out.len() as u64;
                    let d = std::mem::take(&mut out);
                    self.multicast(&d);
                    out = d;
                    tx_free = self.now + self.cfg.net.tx_time;
                    tx_wake = Some(tx_free);
                } else if tx_free <= self.now {
                    tx_wake = None;
                }
            }
            // Receivers: timers, control out, finishing ops.
            for i in 0..self.rxs.len() {
                loop {
                    let now = self.now;
                    let rx = &mut self.rxs[i];
                    let Some(cur) = rx.cur.as_mut() else { break };
                    if cur.poll_timeout().is_some_and(|t| t <= now) {
                        cur.handle_timeout(now);
                    }
                    if cur.stalled(now) {
                        self.rep.rx_stalled.push(rx.rank);
                        self.check_rx_data(i);
                        let rx = &mut self.rxs[i];
                        rx.cur = None;
                        rx.gone = true;
                        break;
                    }
                    let from = rx.rank;
                    let mut msgs = vec![];
                    while let Some(m) = cur.poll_control(now) {
                        assert!(m.len() <= MAX_CONTROL_LEN);
                        msgs.push(m);
                    }
                    let done = cur.is_done();
                    for msg in msgs {
                        let rx = &mut self.rxs[i];
                        rx.ctrl_last = rx.ctrl_last.max(now + self.cfg.net.ctrl_delay);
                        let t = rx.ctrl_last;
                        self.push(t, Ev::Ctrl { msg, from });
                    }
                    if !done {
                        break;
                    }
                    self.check_rx_data(i);
                    let rx = &mut self.rxs[i];
                    let s = rx.cur.as_ref().unwrap().stats();
                    self.rep.rx.accepted += s.accepted;
                    self.rep.rx.duplicates += s.duplicates;
                    self.rep.rx.stale += s.stale;
                    self.rep.rx.rejected += s.rejected;
                    self.rep.rx.nacks += s.nacks;
                    rx.op += 1;
                    self.start_rx(i);
                }
            }
            if let Some(s) = sender.as_ref().filter(|s| s.stalled(self.now)) {
                self.rep.root_stalled = Some(s.pending_ranks());
                self.rep.root_unreached = Some((s.unreached(false), s.unreached(true)));
                self.rep.root_held = s.held_back();
                self.rep.sender.datagrams += s.stats().datagrams;
                self.rep.sender.retransmits += s.stats().retransmits;
                return;
            }
            if sender.is_none() && self.rxs.iter().all(|r| r.gone) {
                return;
            }
            // Jump to the next thing that happens.
            let mut next = self.heap.peek().map(|it| it.t);
            let mut consider = |t: Option<Nanos>| {
                if let Some(t) = t {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            };
            consider(tx_wake);
            consider(sender.as_ref().and_then(|s| s.poll_timeout()));
            for rx in &self.rxs {
                consider(rx.cur.as_ref().and_then(|c| c.poll_timeout()));
            }
            let next = next.unwrap_or_else(|| panic!("deadlock at {}: {}", self.now, self.tag()));
            assert!(next >= self.now, "time went back: {}", self.tag());
            assert!(
                next <= self.cfg.time_limit,
                "not done by {} ns (op {op}): {}",
                self.cfg.time_limit,
                self.tag()
            );
            self.now = next;
            while self.heap.peek().is_some_and(|it| it.t <= self.now) {
                let it = self.heap.pop().unwrap();
                self.event(it.ev, &mut sender, op, &mut backlog);
            }
        }
    }
}

fn run(cfg: Cfg) -> Report {
    let tag = format!("seed {:#x}", cfg.seed);
    let rep = Sim::run(cfg.clone());
    let bytes: usize = cfg.sizes.iter().map(|&s| s * (cfg.n as usize - 1)).sum();
    let frags: u64 = cfg
        .sizes
        .iter()
        .map(|&s| u64::from(cfg.params.nfrags(s)) * (cfg.n as u64 - 1))
        .sum();
    assert!(rep.root_stalled.is_none(), "root stalled: {tag} {rep:?}");
    assert!(
        rep.rx_stalled.is_empty(),
        "receivers stalled: {tag} {rep:?}"
    );
    assert_eq!(rep.op_end.len(), cfg.sizes.len(), "{tag}");
    assert_eq!(
        rep.rx.accepted, frags,
        "{tag}: accepted {} of {frags} fragments ({bytes} B)",
        rep.rx.accepted
    );
    rep
}

fn frag_sizes() -> Vec<usize> {
    let fp = params().frag_payload;
    vec![0, 1, fp - 1, fp, fp + 1, 2000 * fp]
}

const SEEDS_PER_CASE: usize = 3;

/// Every size, group size and loss rate; data checked byte for byte inside the simulation.
#[test]
fn matrix_sizes_ranks_loss() {
    let mut seed = 0x5EED_0000;
    for loss in [0.0, 0.01, 0.05, 0.30] {
        for n in [2, 3, 9, 33] {
            for size in frag_sizes().into_iter().flat_map(|s| [s; SEEDS_PER_CASE]) {
                seed += 1;
                let rep = run(Cfg::new(n, &[size], Net::lossy(loss), seed));
                let nf = u64::from(params().nfrags(size));
                // Loss-free: one datagram per fragment, nothing repeated.
                if loss == 0.0 {
                    assert_eq!(rep.sender.datagrams, nf, "seed {seed:#x} {rep:?}");
                    assert_eq!(rep.overflows, 0, "seed {seed:#x}");
                }
                if loss > 0.0 && loss <= 0.05 {
                    assert!(
                        rep.sender.retransmits <= 3 * rep.lost_sends + 2,
                        "seed {seed:#x} n {n} size {size}: {} retransmits for {} lost sends",
                        rep.sender.retransmits,
                        rep.lost_sends
                    );
                }
                // Clean transfer takes ~4 us per fragment (slowest receiver); each lost repair
                // costs a NACK timer round of 2 ms or more.
                let bound =
                    50_000_000 + (loss * 1.5e9) as u64 + nf * (10_000 + (loss * 1e6) as u64);
                let end = rep.op_end.last().copied().unwrap_or(0);
                assert!(
                    end <= bound,
                    "seed {seed:#x} n {n} size {size} loss {loss}: took {end} ns > {bound}"
                );
            }
        }
    }
}

/// Flow control: with receivers slower than the root and a socket buffer of one window, a
/// loss-free run never overflows; with a quarter window it does (so the check can fail), and
/// the protocol still repairs it.
#[test]
fn window_keeps_socket_buffers_from_overflowing() {
    let fp = params().frag_payload;
    let w = params().window_frags as usize;
    for (seed, n) in [(1u64, 2u32), (2, 9), (3, 33)] {
        let mut net = Net::clean();
        net.buf_cap = w;
        net.proc_time = 3_000; // 3-12 us per datagram against 1 us to send one
        let rep = run(Cfg::new(n, &[3000 * fp], net.clone(), seed));
        assert_eq!(rep.overflows, 0, "seed {seed}");
        assert_eq!(rep.sender.retransmits, 0, "seed {seed}");
        net.buf_cap = w / 4;
        let rep = run(Cfg::new(n, &[3000 * fp], net, seed));
        assert!(
            rep.overflows > 0,
            "seed {seed}: a quarter window never overflowed"
        );
    }
}

/// Consecutive operations with late duplicates, corruption, forgeries and reordering.
#[test]
fn consecutive_ops_hostile_network() {
    let fp = params().frag_payload;
    let sizes = [200 * fp + 7, 1, 0, 500 * fp, 3 * fp, fp];
    let mut stale = 0;
    for seed in 0..6u64 {
        let net = Net {
            loss: 0.03,
            dup: 0.1,
            dup_delay: 3_000_000,
            corrupt: 0.02,
            forge: 0.02,
            jitter: 15_000,
            buf_cap: 1024,
            ..Net::clean()
        };
        let rep = run(Cfg::new(2 + seed as u32 * 3, &sizes, net, 0xC0FFEE + seed));
        assert!(rep.rx.rejected > 0, "seed {seed}: nothing was rejected");
        stale += rep.rx.stale;
    }
    assert!(
        stale > 0,
        "no late duplicate ever crossed into the next operation"
    );
}

/// Total loss towards some receivers: they and the root stall, the root names exactly them,
/// nobody holds wrong bytes (checked by the simulation), the others finish.
#[test]
fn total_loss_stalls_and_names_the_lost() {
    let fp = params().frag_payload;
    for (seed, n, dead, size) in [
        (11u64, 5u32, vec![], 10 * fp),
        (12, 9, vec![3, 7], 20 * fp + 1),
        (13, 33, vec![1], 31 * fp),
    ] {
        let mut cfg = Cfg::new(n, &[size], Net::clean(), seed);
        cfg.params.stall_timeout = 500_000_000;
        // Root choice is seeded: the dead must be receivers.
        let mut rng = Rng(seed);
        let _ = rng.bytes(32);
        let _ = rng.next_u64();
        let _ = rng.next_u64();
        let root = rng.below(n as u64) as u32;
        let mut dead: Vec<u32> = dead.into_iter().filter(|&d| d != root).collect();
        if dead.is_empty() {
            dead = (0..n).filter(|&r| r != root).collect();
        }
        cfg.net.dead = dead.clone();
        let rep = Sim::run(cfg);
        let mut stalled = rep.rx_stalled.clone();
        stalled.sort_unstable();
        assert_eq!(stalled, dead, "seed {seed}");
        assert_eq!(rep.root_stalled.as_deref(), Some(&dead[..]), "seed {seed}");
        assert_eq!(
            rep.sender.datagrams - rep.sender.retransmits,
            u64::from(params().nfrags(size))
        );
        assert!(
            rep.now >= 500_000_000 && rep.now < 2_000_000_000,
            "seed {seed}: {}",
            rep.now
        );
    }
}

/// Losses that hit every receiver (a drop at the root or the switch) are NACKed by all 32 of
/// them, yet cause about one retransmission each (without suppression: well over two).
#[test]
fn nack_suppression_bounds_repairs() {
    let fp = params().frag_payload;
    for seed in 0..3 {
        let net = Net {
            common_loss: 0.05,
            loss: 0.002,
            ..Net::clean()
        };
        let rep = run(Cfg::new(33, &[2000 * fp], net, 0xAB + seed));
        let lost = rep.lost_sends;
        assert!(lost > 50, "seed {seed}: only {lost} lost");
        assert!(
            rep.sender.retransmits * 2 < 3 * lost,
            "seed {seed}: {} retransmits for {lost} lost",
            rep.sender.retransmits
        );
    }
}

#[test]
fn zero_length_is_one_empty_datagram() {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let mut s = McastSender::new(&c, 1, 0, &[1, 2], 0, &p, 0);
    assert!(!s.is_done());
    let mut d = Vec::new();
    assert!(s.poll_transmit(0, &[], &mut d));
    assert_eq!(d.len(), OVERHEAD);
    assert_eq!(packet::peek_seq(&d), Some(1));
    assert_eq!(packet::peek_seq(&d[..OVERHEAD - 1]), None);
    assert!(!s.poll_transmit(0, &[], &mut Vec::new()));
    for rank in [1, 2] {
        let mut r = McastReceiver::new(&c, 1, 0, rank, 0, &p, 0);
        assert!(!r.is_done());
        assert_eq!(r.handle_datagram(0, &d, &mut []), Outcome::Accepted);
        let ack = r.poll_control(0).expect("an ack");
        assert!(r.is_done());
        assert!(!s.is_done());
        s.handle_control(0, rank, &ack).unwrap();
    }
    assert!(s.is_done());
    assert!(s.pending_ranks().is_empty());
}

#[test]
fn sender_refuses_bad_control() {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let data = vec![0u8; 10 * p.frag_payload];
    let mut s = McastSender::new(&c, 7, 0, &[1, 2], data.len(), &p, 0);
    let mut out = Vec::new();
    while s.poll_transmit(0, &data, &mut out) {}
    let mut m = Vec::new();
    Control::Ack { seq: 6, cum: 1 }.encode(&mut m);
    assert_eq!(s.handle_control(0, 1, &m), Err(Reject::WrongSeq));
    Control::Ack { seq: 7, cum: 1 }.encode(&mut m);
    assert_eq!(s.handle_control(0, 9, &m), Err(Reject::Malformed));
    Control::Ack { seq: 7, cum: 11 }.encode(&mut m);
    assert_eq!(s.handle_control(0, 1, &m), Err(Reject::Malformed));
    Control::Nack {
        seq: 7,
        cum: 0,
        missing: vec![10],
    }
    .encode(&mut m);
    assert_eq!(s.handle_control(0, 1, &m), Err(Reject::Malformed));
    assert_eq!(s.pending_ranks(), vec![1, 2]);
    Control::Ack { seq: 7, cum: 10 }.encode(&mut m);
    s.handle_control(0, 2, &m).unwrap();
    assert_eq!(s.pending_ranks(), vec![1]);
    assert!(!s.is_done());
    s.handle_control(0, 1, &m).unwrap();
    assert!(s.is_done());
    assert_eq!(s.poll_timeout(), None);
}

/// Two receivers NACK the same loss: one retransmission; the same NACK after the suppression
/// interval: a second one.
#[test]
fn duplicate_nacks_cause_one_retransmission() {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let data = vec![3u8; 8 * p.frag_payload];
    let mut s = McastSender::new(&c, 7, 0, &[1, 2, 3], data.len(), &p, 0);
    let mut out = Vec::new();
    while s.poll_transmit(0, &data, &mut out) {}
    let mut m = Vec::new();
    Control::Nack {
        seq: 7,
        cum: 2,
        missing: vec![2, 5],
    }
    .encode(&mut m);
    let t = p.nack_initial;
    s.handle_control(t, 1, &m).unwrap();
    assert!(s.poll_transmit(t, &data, &mut out));
    assert!(s.poll_transmit(t, &data, &mut out));
    s.handle_control(t + 1000, 2, &m).unwrap();
    s.handle_control(t + 2000, 3, &m).unwrap();
    assert!(!s.poll_transmit(t + 2000, &data, &mut out));
    assert_eq!(s.stats().retransmits, 2);
    s.handle_control(t + p.nack_initial, 2, &m).unwrap();
    assert!(s.poll_transmit(t + p.nack_initial, &data, &mut out));
    let (h, _) = packet::decode(&c, &out).unwrap();
    assert_eq!(h.frag, 2);
}

/// While the window holds back the rest of the message, the probe repeats the slowest
/// receiver's first missing fragment (what holds everything up) instead of the highest; once
/// everything is sent, the highest again (tail loss).
#[test]
fn probe_sends_the_slowest_hole_while_the_window_is_full() {
    let c = rel_ctx(1, 4);
    let p = params();
    let w = p.window_frags;
    let data = vec![5u8; (w as usize + 8) * p.frag_payload];
    let mut s = McastSender::new(&c, 7, 0, &[1, 2], data.len(), &p, 0);
    let mut out = Vec::new();
    while s.poll_transmit(0, &data, &mut out) {}
    let ack = |s: &mut McastSender, now, from, cum| {
        let mut m = Vec::new();
        Control::Ack { seq: 7, cum }.encode(&mut m);
        s.handle_control(now, from, &m).unwrap();
    };
    ack(&mut s, 10, 1, w);
    ack(&mut s, 10, 2, 5);
    let mut n = 0;
    while s.poll_transmit(10, &data, &mut out) {
        n += 1;
    }
    assert_eq!(n, 5, "the window moved to 5 + {w}");
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    assert!(s.poll_transmit(t, &data, &mut out));
    assert_eq!(packet::decode(&c, &out).unwrap().0.frag, 5);
    // The slow receiver catches up; the rest goes out; the probe goes back to the tail.
    ack(&mut s, t, 2, w + 5);
    while s.poll_transmit(t, &data, &mut out) {}
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    assert!(s.poll_transmit(t, &data, &mut out));
    assert_eq!(packet::decode(&c, &out).unwrap().0.frag, w + 7);
}

/// The tail probe repeats the highest outstanding fragment when acks stop, with backoff.
#[test]
fn tail_probe_backs_off() {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let data = vec![3u8; 5 * p.frag_payload];
    let mut s = McastSender::new(&c, 7, 0, &[1], data.len(), &p, 0);
    let mut out = Vec::new();
    while s.poll_transmit(0, &data, &mut out) {}
    let mut probes = vec![];
    let mut now = 0;
    while probes.len() < 4 {
        now = s.poll_timeout().unwrap();
        s.handle_timeout(now);
        if s.poll_transmit(now, &data, &mut out) {
            assert_eq!(packet::decode(&c, &out).unwrap().0.frag, 4);
            probes.push(now);
        }
    }
    let gaps: Vec<Nanos> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(probes[0], 2 * p.nack_initial);
    assert_eq!(
        gaps,
        vec![4 * p.nack_initial, 8 * p.nack_initial, 16 * p.nack_initial]
    );
    // An ack resets the backoff.
    let mut m = Vec::new();
    Control::Ack { seq: 7, cum: 3 }.encode(&mut m);
    s.handle_control(now, 1, &m).unwrap();
    assert_eq!(s.poll_timeout(), Some(now + 2 * p.nack_initial));
}

/// A 100-fragment message of operation 7 from root 0 to rank 1: the context, the message, the
/// datagrams of the sender's first window, and rank 1's receiver (not yet `arm_nack`ed).
fn first_window() -> (Ctx, Vec<u8>, Vec<Vec<u8>>, McastReceiver) {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let len = 100 * p.frag_payload;
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let mut s = McastSender::new(&c, 7, 0, &[1], len, &p, 0);
    let r = McastReceiver::new(&c, 7, 0, 1, len, &p, 0);
    let mut dg = Vec::new();
    let mut sent = vec![];
    while s.poll_transmit(0, &data, &mut dg) {
        sent.push(dg.clone());
    }
    (c, data, sent, r)
}

/// A receiver of a root that waits for everyone (scouted, not `arm_nack`) asks, after a
/// silence, only for the holes below the highest fragment it saw: the root probes the tail,
/// and fragments past it are, as often as not, what a slow root is sending at that moment.
#[test]
fn scouted_receiver_asks_only_for_holes_after_a_silence() {
    let (_, data, sent, mut r) = first_window();
    let mut buf = vec![0; data.len()];
    for (i, d) in sent.iter().enumerate().take(10) {
        if i != 4 {
            assert_eq!(r.handle_datagram(10, d, &mut buf), Outcome::Accepted);
        }
    }
    // The gap at once, as for any receiver.
    assert!(matches!(
        Control::decode(&r.poll_control(10).unwrap()).unwrap(),
        Control::Nack { missing, .. } if missing == vec![4]
    ));
    // Silences, each longer: the gap again, never 10.. (sent or not, the root's probe says).
    for _ in 0..4 {
        let t = r.poll_timeout().unwrap();
        r.handle_timeout(t);
        match Control::decode(&r.poll_control(t).unwrap()).unwrap() {
            Control::Nack {
                cum: 4, missing, ..
            } => assert_eq!(missing, vec![4]),
            m => panic!("{m:?}"),
        }
    }
    // Without a gap, a silence asks nothing: the root's probe exposes a lost tail.
    assert_eq!(r.handle_datagram(20, &sent[4], &mut buf), Outcome::Accepted);
    // (Fewer than an ack step since the last report: nothing is due.)
    assert_eq!(r.poll_control(20), None);
    let t = r.poll_timeout().unwrap();
    r.handle_timeout(t);
    assert_eq!(r.poll_control(t), None);
    // The probe (the root's highest fragment sent, again) shows the tail's holes.
    assert_eq!(
        r.handle_datagram(t + 1, &sent[20], &mut buf),
        Outcome::Accepted
    );
    match Control::decode(&r.poll_control(t + 1).unwrap()).unwrap() {
        Control::Nack {
            cum: 10, missing, ..
        } => assert_eq!(missing, (10..20).collect::<Vec<_>>()),
        m => panic!("{m:?}"),
    }
}

/// Receiver: a gap is NACKed at once; silence brings a NACK of the gaps and of the fragments
/// after the highest seen, 8 at the first silence and twice as many at each next, with
/// backoff; progress resets the backoff.
#[test]
fn receiver_nacks_gaps_and_tail() {
    let (_, data, sent, mut r) = first_window();
    let p = params();
    let fp = p.frag_payload;
    let len = data.len();
    let mut buf = vec![0; len];
    assert_eq!(sent.len(), p.window_frags as usize);
    for (i, d) in sent.iter().enumerate().take(10) {
        if i != 4 {
            assert_eq!(r.handle_datagram(10, d, &mut buf), Outcome::Accepted);
        }
    }
    assert_eq!(
        r.handle_datagram(10, &sent[0], &mut buf),
        Outcome::Duplicate
    );
    let m = Control::decode(&r.poll_control(10).unwrap()).unwrap();
    assert_eq!(
        m,
        Control::Nack {
            seq: 7,
            cum: 4,
            missing: vec![4]
        }
    );
    assert_eq!(r.poll_control(10), None);
    // An eager broadcast's receiver (the root does not probe the tail: `arm_nack`; the timer
    // runs already, so this changes only what a silence asks for).
    r.arm_nack(10);
    assert_eq!(r.poll_timeout(), Some(10 + p.nack_initial));
    // Silence: the timer lists the gap and the 8 fragments after the highest seen (a stream
    // that is only late must not be asked for a second time in full); as it goes on, twice
    // the reach each time, up to the window's edge (cum + window) at most.
    let silent_nack = |r: &mut McastReceiver, t| {
        r.handle_timeout(t);
        match Control::decode(&r.poll_control(t).unwrap()).unwrap() {
            Control::Nack {
                cum: 4, missing, ..
            } => missing,
            m => panic!("{m:?}"),
        }
    };
    let with_gap =
        |tail: std::ops::Range<u32>| -> Vec<u32> { std::iter::once(4).chain(tail).collect() };
    let t = r.poll_timeout().unwrap();
    assert_eq!(t, 10 + p.nack_initial);
    assert_eq!(silent_nack(&mut r, t), with_gap(10..18));
    assert_eq!(r.poll_timeout(), Some(t + 2 * p.nack_initial));
    assert_eq!(r.stats().nacks, 2);
    let t2 = t + 2 * p.nack_initial;
    assert_eq!(silent_nack(&mut r, t2), with_gap(10..26));
    let t3 = r.poll_timeout().unwrap();
    assert_eq!(t3, t2 + 4 * p.nack_initial);
    // 32 past the highest seen is beyond the window's edge.
    assert_eq!(silent_nack(&mut r, t3), with_gap(10..4 + p.window_frags));
    assert_eq!(r.stats().nacks, 4);
    let t = t3;
    // Repair: cum jumps, the backoff resets and a cumulative ack goes out.
    assert_eq!(
        r.handle_datagram(t + 5, &sent[4], &mut buf),
        Outcome::Accepted
    );
    assert_eq!(r.cum(), 10);
    assert_eq!(r.poll_timeout(), Some(t + 5 + p.nack_initial));
    // Six fragments since the last report is less than the ack step (a quarter window).
    assert_eq!(r.poll_control(t + 5), None);
    for d in &sent[10..12] {
        assert_eq!(r.handle_datagram(t + 6, d, &mut buf), Outcome::Accepted);
    }
    assert_eq!(
        Control::decode(&r.poll_control(t + 6).unwrap()).unwrap(),
        Control::Ack { seq: 7, cum: 12 }
    );
    assert_eq!(&buf[..10 * fp], &data[..10 * fp]);
    assert!(!r.stalled(t + 6 + p.stall_timeout - 1));
    assert!(r.stalled(t + 6 + p.stall_timeout));
}

#[test]
fn receiver_waits_for_first_datagram_then_sender_probe_exposes_total_loss() {
    let c = Ctx {
        key: Key::new([2; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let len = 5 * p.frag_payload;
    let data: Vec<u8> = (0..len).map(|i| (i * 3) as u8).collect();
    let mut r = McastReceiver::new(&c, 3, 0, 1, len, &p, 0);
    // Before any data, silence is the root waiting for scouts: no NACK, only the stall bound.
    assert_eq!(r.poll_timeout(), Some(p.stall_timeout));
    r.handle_timeout(50 * p.nack_initial);
    assert_eq!(r.poll_control(50 * p.nack_initial), None);
    // Every first transmission is lost; the sender's tail probe resends the highest fragment.
    let mut s = McastSender::new(&c, 3, 0, &[1], len, &p, 0);
    let mut dg = Vec::new();
    while s.poll_transmit(0, &data, &mut dg) {}
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    assert!(s.poll_transmit(t, &data, &mut dg));
    let mut buf = vec![0; len];
    assert_eq!(r.handle_datagram(t, &dg, &mut buf), Outcome::Accepted);
    match Control::decode(&r.poll_control(t).unwrap()).unwrap() {
        Control::Nack {
            cum: 0, missing, ..
        } => assert_eq!(missing, vec![0, 1, 2, 3]),
        m => panic!("{m:?}"),
    }
}

#[test]
fn receiver_classifies_other_operations() {
    let c = Ctx {
        key: Key::new([1; 32]),
        job: 1,
        comm: 1,
    };
    let p = params();
    let mut buf = vec![0; 10];
    let mut r = McastReceiver::new(&c, 7, 0, 1, 10, &p, 0);
    let mut d = Vec::new();
    let h = Header {
        kind: Kind::Data,
        job: 1,
        comm: 1,
        seq: 6,
        root: 0,
        frag: 0,
        nfrags: 1,
        total_len: 10,
    };
    packet::encode(&c, &h, &[1; 10], &mut d);
    assert_eq!(r.handle_datagram(0, &d, &mut buf), Outcome::Stale);
    packet::encode(&c, &Header { seq: 8, ..h }, &[1; 10], &mut d);
    assert_eq!(r.handle_datagram(0, &d, &mut buf), Outcome::Foreign);
    packet::encode(
        &c,
        &Header {
            seq: 7,
            root: 2,
            ..h
        },
        &[1; 10],
        &mut d,
    );
    assert_eq!(r.handle_datagram(0, &d, &mut buf), Outcome::Foreign);
    encode_release(&c, 7, 0, &mut d);
    assert_eq!(r.handle_datagram(0, &d, &mut buf), Outcome::Foreign);
    // Authentic but inconsistent with its own size (9 bytes in 2 fragments of 64).
    packet::encode(
        &c,
        &Header {
            seq: 7,
            total_len: 9,
            nfrags: 2,
            ..h
        },
        &[1; 9],
        &mut d,
    );
    assert_eq!(
        r.handle_datagram(0, &d, &mut buf),
        Outcome::Rejected(Reject::Malformed)
    );
    assert_eq!(r.mismatch(), None);
    packet::encode(&c, &Header { seq: 7, ..h }, &[2; 10], &mut d);
    assert_eq!(buf, vec![0; 10]);
    assert_eq!(r.handle_datagram(0, &d, &mut buf), Outcome::Accepted);
    assert_eq!(buf, vec![2; 10]);
    assert!(!r.is_done(), "done before the final ack was handed out");
    assert_eq!(
        Control::decode(&r.poll_control(0).unwrap()).unwrap(),
        Control::Ack { seq: 7, cum: 1 }
    );
    assert!(r.is_done());
    let s = r.stats();
    assert_eq!((s.accepted, s.stale, s.foreign, s.rejected), (1, 1, 3, 1));
}

/// A root sending another size than a receiver posted: the receiver says so at the first
/// fragment (not after the stall timeout), its Decline takes it out of the root's operation,
/// and the root completes with the others.
#[test]
fn size_mismatch_is_seen_at_once_and_declined() {
    let c = rel_ctx(3, 9);
    let p = params();
    let (sent, posted) = (1000usize, 500usize);
    let data: Vec<u8> = (0..sent).map(|i| i as u8).collect();
    let mut tx = McastSender::new(&c, 5, 0, &[1, 2], sent, &p, 0);
    let mut short = McastReceiver::new(&c, 5, 0, 1, posted, &p, 0);
    let mut exact = McastReceiver::new(&c, 5, 0, 2, sent, &p, 0);
    let (mut b1, mut b2) = (vec![0u8; posted], vec![0u8; sent]);
    let mut d = Vec::new();
    assert!(tx.poll_transmit(0, &data, &mut d));
    assert_eq!(short.handle_datagram(1, &d, &mut b1), Outcome::Mismatch);
    assert_eq!(short.mismatch(), Some(sent as u64));
    assert_eq!(
        b1,
        vec![0u8; posted],
        "nothing of the wrong message is stored"
    );
    assert_eq!(
        short.decline(),
        Control::Decline {
            seq: 5,
            posted: posted as u64
        }
    );
    assert_eq!(exact.handle_datagram(1, &d, &mut b2), Outcome::Accepted);
    let mut m = Vec::new();
    short.decline().encode(&mut m);
    tx.handle_control(2, 1, &m).unwrap();
    assert_eq!(tx.declined(), &[(1, posted as u64)]);
    // The rest goes to the receiver that posted the right size; the root is done once it
    // has everything.
    let mut t = 3;
    while !tx.is_done() {
        while tx.poll_transmit(t, &data, &mut d) {
            assert_ne!(exact.handle_datagram(t, &d, &mut b2), Outcome::Mismatch);
        }
        while let Some(msg) = exact.poll_control(t) {
            tx.handle_control(t, 2, &msg).unwrap();
        }
        t += 1_000;
        assert!(t < 1_000_000_000, "the root never finished");
    }
    assert_eq!(b2, data);
    // A Decline for another operation is not this one's.
    let mut other = Vec::new();
    Control::Decline { seq: 6, posted: 1 }.encode(&mut other);
    assert_eq!(tx.handle_control(t, 1, &other), Err(Reject::WrongSeq));
}

fn rel_ctx(comm: u32, k: u8) -> Ctx {
    Ctx {
        key: Key::new([k; 32]),
        job: 77,
        comm,
    }
}

/// The release is lost; the waiter's queries (with backoff) reach the responder, which answers
/// once the root released, even for a communicator among several.
#[test]
fn lost_release_is_repaired_by_query() {
    let p = params();
    let a = rel_ctx(5, 1);
    let b = rel_ctx(6, 2);
    let mut resp = Responder::new();
    resp.register(&a, 0);
    resp.register(&b, 3);
    let mut w = ReleaseWaiter::new(&b, 40, 3, 1, &p, 0);
    let mut q = Vec::new();
    let mut ans = Vec::new();
    assert!(!w.poll_query(p.nack_initial - 1, &mut q));
    let mut times = vec![];
    while times.len() < 3 {
        let t = w.poll_timeout().unwrap();
        w.handle_timeout(t);
        assert!(w.poll_query(t, &mut q));
        times.push(t);
        // Not yet released: no answer.
        assert!(!resp.answer(&q, &mut ans));
    }
    assert_eq!(
        times,
        vec![p.nack_initial, 3 * p.nack_initial, 7 * p.nack_initial]
    );
    resp.released(6, 39);
    assert!(
        !resp.answer(&q, &mut ans),
        "answered a seq not yet released"
    );
    resp.released(5, 40); // another communicator's release does not count
    assert!(!resp.answer(&q, &mut ans));
    resp.released(6, 40);
    assert!(resp.answer(&q, &mut ans));
    let t = times[2] + 1;
    assert_eq!(w.handle_datagram(t, &ans), Outcome::Accepted);
    assert_eq!(w.handle_datagram(t, &ans), Outcome::Duplicate);
    assert!(w.is_done());
    assert_eq!(w.poll_timeout(), None);
    assert!(!w.poll_query(t + p.nack_max, &mut q));
    // Released later barriers still answer earlier queries (the asker then counts them stale).
    resp.released(6, 41);
    assert!(resp.answer(&q, &mut ans));
    let mut w2 = ReleaseWaiter::new(&b, 41, 3, 1, &p, 0);
    assert_eq!(w2.handle_datagram(0, &ans), Outcome::Stale);
    resp.unregister(6);
    assert!(!resp.answer(&q, &mut ans));
}

#[test]
fn responder_rejects_forged_queries() {
    let p = params();
    let a = rel_ctx(5, 1);
    let mut resp = Responder::new();
    resp.register(&a, 0);
    resp.released(5, 10);
    let mut q = Vec::new();
    let mut ans = Vec::new();
    let mut forger = ReleaseWaiter::new(&rel_ctx(5, 9), 10, 0, 1, &p, 0);
    assert!(forger.poll_query(p.nack_initial, &mut q));
    assert!(
        !resp.answer(&q, &mut ans),
        "query with a wrong key answered"
    );
    let mut honest = ReleaseWaiter::new(&a, 10, 0, 1, &p, 0);
    assert!(honest.poll_query(p.nack_initial, &mut q));
    assert!(resp.answer(&q, &mut ans));
    for bit in 0..q.len() * 8 {
        let mut d = q.clone();
        d[bit / 8] ^= 1 << (bit % 8);
        assert!(!resp.answer(&d, &mut ans), "flipped bit {bit} answered");
    }
    // A release is not a query; a query for another root is not ours.
    encode_release(&a, 10, 0, &mut q);
    assert!(!resp.answer(&q, &mut ans));
    let mut other_root = ReleaseWaiter::new(&a, 10, 4, 1, &p, 0);
    assert!(other_root.poll_query(p.nack_initial, &mut q));
    assert!(!resp.answer(&q, &mut ans));
    // The waiter itself ignores forged releases and stalls without one.
    let mut w = ReleaseWaiter::new(&a, 11, 0, 1, &p, 0);
    encode_release(&rel_ctx(5, 9), 11, 0, &mut q);
    assert_eq!(w.handle_datagram(0, &q), Outcome::Rejected(Reject::BadMac));
    encode_release(&a, 12, 0, &mut q);
    assert_eq!(w.handle_datagram(0, &q), Outcome::Foreign);
    assert!(!w.stalled(p.stall_timeout - 1));
    assert!(w.stalled(p.stall_timeout));
    assert_eq!(w.poll_timeout(), Some(p.nack_initial));
}

/// Turns receiver `rx`'s control messages into repair queries for `resp` (NACKs) and feeds
/// the answers back; returns the acks it handed out (what goes to the root by MPI).
fn repair_round(
    rx: &mut McastReceiver,
    resp: &Responder,
    ctx: &Ctx,
    now: Nanos,
    buf: &mut [u8],
) -> Vec<Control> {
    let mut acks = Vec::new();
    let mut q = Vec::new();
    let mut ans = Vec::new();
    while let Some(msg) = rx.poll_control(now) {
        match Control::decode(&msg).unwrap() {
            Control::Nack { seq, missing, .. } => {
                release::encode_repair_query(ctx, seq, rx.root(), rx.rank(), &missing, &mut q);
                let n = resp.answer_repair(&q, &mut ans);
                for d in &ans[..n] {
                    rx.handle_datagram(now, d, buf);
                }
            }
            ack => acks.push(ack),
        }
    }
    acks
}

/// An eager broadcast whose root left at once: the receiver's NACK timer runs from the start,
/// and the root's responder repairs from its copy both holes and total loss; the final ack
/// goes to the root. Once the copy is dropped, nothing is answered.
#[test]
fn eager_broadcast_repaired_by_responder() {
    let p = params();
    let ctx = rel_ctx(8, 3);
    let mut rng = Rng(41);
    let data = rng.bytes(64 * 20 + 17);
    let nfrags = p.nfrags(data.len());
    assert!(nfrags <= p.window());
    let mut resp = Responder::new();
    resp.register(&ctx, 2);
    resp.hold(8, 5, data.clone().into(), p.frag());
    let mut tx = McastSender::new(&ctx, 5, 2, &[0, 1], data.len(), &p, 0);
    let mut sent = Vec::new();
    let mut d = Vec::new();
    while tx.poll_transmit(0, &data, &mut d) {
        sent.push(d.clone());
    }
    assert_eq!(sent.len(), nfrags as usize);
    assert!(tx.all_sent());

    // Rank 0 lost every third datagram, the last one included.
    let mut buf = vec![0u8; data.len()];
    let mut rx = McastReceiver::new(&ctx, 5, 2, 0, data.len(), &p, 0);
    rx.arm_nack(0);
    assert_eq!(rx.poll_timeout(), Some(p.nack_initial));
    for (i, d) in sent.iter().enumerate() {
        if i % 3 != 2 && i + 1 != sent.len() {
            rx.handle_datagram(1, d, &mut buf);
        }
    }
    // The holes below the highest fragment are asked for at once, the tail at the timer.
    let acks = repair_round(&mut rx, &resp, &ctx, 1, &mut buf);
    assert!(acks
        .iter()
        .all(|a| matches!(a, Control::Ack { cum, .. } if *cum < nfrags)));
    assert!(!rx.is_done());
    let t = rx.poll_timeout().unwrap();
    rx.handle_timeout(t);
    let acks = repair_round(&mut rx, &resp, &ctx, t, &mut buf);
    assert!(rx.is_done());
    assert_eq!(buf, data);
    assert_eq!(
        acks.last(),
        Some(&Control::Ack {
            seq: 5,
            cum: nfrags
        })
    );
    for a in &acks {
        let mut m = Vec::new();
        a.encode(&mut m);
        tx.handle_control(t, 0, &m).unwrap();
    }

    // Rank 1 lost everything: its first timer asks for fragment 0 only (the stream may be
    // merely late), each next one for twice as many more after the highest it has.
    let mut buf = vec![0u8; data.len()];
    let mut rx = McastReceiver::new(&ctx, 5, 2, 1, data.len(), &p, 0);
    rx.arm_nack(0);
    let mut t = p.nack_initial;
    let mut got = Vec::new();
    let mut acks = Vec::new();
    while !rx.is_done() {
        assert!(got.len() < 10, "no progress: {got:?}");
        rx.handle_timeout(t);
        let before = rx.stats().accepted;
        acks.extend(repair_round(&mut rx, &resp, &ctx, t, &mut buf));
        got.push(rx.stats().accepted - before);
        t = rx.poll_timeout().unwrap_or(t);
    }
    // 21 fragments: 1, then 8, then the remaining 12 of 16.
    assert_eq!(got, [1, 8, 12]);
    assert_eq!(buf, data);
    for a in &acks {
        let mut m = Vec::new();
        a.encode(&mut m);
        tx.handle_control(t, 1, &m).unwrap();
    }
    assert!(tx.is_done());

    // Another broadcast, a forged or altered query, or a dropped copy: no answer.
    let mut q = Vec::new();
    let mut ans = Vec::new();
    release::encode_repair_query(&ctx, 6, 2, 1, &[0], &mut q);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        0,
        "another broadcast answered"
    );
    release::encode_repair_query(&rel_ctx(8, 4), 5, 2, 1, &[0], &mut q);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        0,
        "a query with a wrong key answered"
    );
    release::encode_repair_query(&ctx, 5, 3, 1, &[0], &mut q);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        0,
        "a query for another root answered"
    );
    release::encode_repair_query(&ctx, 5, 2, 1, &[0, nfrags, 1], &mut q);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        2,
        "a fragment beyond the message answered"
    );
    for bit in 0..q.len() * 8 {
        let mut d = q.clone();
        d[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(
            resp.answer_repair(&d, &mut ans),
            0,
            "flipped bit {bit} answered"
        );
    }
    resp.drop_held(8, 4);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        2,
        "dropping another broadcast dropped this one"
    );
    resp.drop_held(8, 5);
    assert_eq!(resp.answer_repair(&q, &mut ans), 0);
}

/// One answer carries at most `REPAIR_ANSWER_BYTES` of fragments (what a receiving socket
/// takes at once); the receiver's next query gets the rest.
#[test]
fn repair_answers_are_bounded() {
    let p = Params::new(1000, 1024, 1_000_000_000);
    let ctx = rel_ctx(9, 5);
    let data = Rng(7).bytes(1000 * 300);
    let mut resp = Responder::new();
    resp.register(&ctx, 0);
    resp.hold(9, 1, data.clone().into(), p.frag());
    let mut buf = vec![0u8; data.len()];
    let mut rx = McastReceiver::new(&ctx, 1, 0, 1, data.len(), &p, 0);
    rx.arm_nack(0);
    let mut t = p.nack_initial;
    let mut rounds = 0;
    while !rx.is_done() {
        rx.handle_timeout(t);
        repair_round(&mut rx, &resp, &ctx, t, &mut buf);
        t += p.nack_max;
        rounds += 1;
        assert!(rounds < 10, "no progress");
    }
    assert_eq!(buf, data);
    // 300 fragments of 1000 B, at most 131 per answer; the queries reach 1, 8, 16, 32, 64,
    // 128 (answered in full) and 256 fragments past the highest one received.
    assert_eq!(rounds, 7);
    let mut q = Vec::new();
    let mut ans = Vec::new();
    let all: Vec<u32> = (0..300).collect();
    release::encode_repair_query(&ctx, 1, 0, 1, &all, &mut q);
    assert_eq!(
        resp.answer_repair(&q, &mut ans),
        release::REPAIR_ANSWER_BYTES / 1000
    );
}

/// A 100-fragment broadcast (seq 4, root 0, to rank 1) in a window of 256 fragments (ACKs
/// every 64): its parameters, context, data and every datagram, all sent at time 0.
fn stream_of_100(seed: u64) -> (Params, Ctx, Vec<u8>, Vec<Vec<u8>>) {
    let p = Params::new(64, 256, 1_000_000_000);
    let c = rel_ctx(3, 1);
    let data = Rng(seed).bytes(64 * 100);
    let mut tx = McastSender::new(&c, 4, 0, &[1], data.len(), &p, 0);
    let mut sent = Vec::new();
    let mut d = Vec::new();
    while tx.poll_transmit(0, &data, &mut d) {
        sent.push(d.clone());
    }
    (p, c, data, sent)
}

#[test]
fn batch_wait_follows_the_stream_rate() {
    use super::receiver::BATCH_MAX;
    // ACKs every 64 fragments: the batch is BATCH_MAX.
    let (p, c, data, sent) = stream_of_100(3);
    assert_eq!(sent.len(), 100);
    let mut buf = vec![0u8; data.len()];
    let mut rx = McastReceiver::new(&c, 4, 0, 1, data.len(), &p, 0);
    // Nothing known before the first datagram.
    assert_eq!(rx.batch_wait(0), None);
    let gap: Nanos = 100_000; // one datagram per 100 us
    let t0: Nanos = 5_000_000;
    let at = |i: usize| t0 + gap * i as Nanos;
    let mut waits = Vec::new();
    for (i, dg) in sent.iter().enumerate() {
        rx.handle_datagram(at(i), dg, &mut buf);
        waits.push(rx.batch_wait(at(i)));
    }
    assert_eq!(rx.cum(), 100);
    assert_eq!(buf, data);
    // The rate counts only after 8 fragments.
    assert!(waits[..7].iter().all(Option::is_none), "{waits:?}");
    // Then BATCH_MAX datagrams' worth of time, while more than BATCH_MAX are left.
    let full = gap * Nanos::from(BATCH_MAX);
    assert!(waits[7..83].iter().all(|w| *w == Some(full)), "{waits:?}");
    // Near the end the wait shrinks so that the last datagram is waited for, not slept past:
    // after fragment i, 99 - i are left and the wait covers 98 - i of them.
    for (i, w) in waits.iter().enumerate().take(98).skip(83) {
        let want = gap * (98 - i) as Nanos;
        let want = (want >= 20_000).then_some(want);
        assert_eq!(*w, want, "after fragment {i}");
    }
    assert_eq!(waits[98], None);
    assert_eq!(waits[99], None, "complete");
}

#[test]
fn batch_wait_declines_when_the_stream_stops_or_is_too_fast_or_slow() {
    let (p, c, data, sent) = stream_of_100(4);
    let mut d = Vec::new();
    let feed = |gap: Nanos, n: usize| {
        let mut buf = vec![0u8; data.len()];
        let mut rx = McastReceiver::new(&c, 4, 0, 1, data.len(), &p, 0);
        for (i, dg) in sent.iter().take(n).enumerate() {
            rx.handle_datagram(gap * i as Nanos, dg, &mut buf);
        }
        rx
    };
    // Steady at 50 us: a wait, until a read finds nothing for longer than one gap.
    let rx = feed(50_000, 20);
    let last: Nanos = 50_000 * 19;
    assert_eq!(rx.batch_wait(last), Some(50_000 * 16));
    assert_eq!(rx.batch_wait(last + 50_000), Some(50_000 * 16));
    assert_eq!(rx.batch_wait(last + 50_001), None);
    // Never past the NACK timer (2 ms after the last fragment): 120 us apart asks for 1.92 ms,
    // which a read 100 us later cuts to the 1.9 ms left.
    let rx = feed(120_000, 20);
    let last: Nanos = 120_000 * 19;
    assert_eq!(rx.poll_timeout(), Some(last + 2_000_000));
    assert_eq!(rx.batch_wait(last), Some(120_000 * 16));
    assert_eq!(rx.batch_wait(last + 100_000), Some(1_900_000));
    // 1 us apart: 16 us of waiting is not worth a sleep.
    assert_eq!(feed(1_000, 20).batch_wait(19_000), None);
    // 1 ms apart: a stream this slow costs no CPU; 16 ms of sleep would only add latency.
    assert_eq!(feed(1_000_000, 20).batch_wait(19_000_000), None);
    // A small window (ACK every 8 fragments) halves the batch to 4, so the root's window
    // keeps moving while the receiver sleeps.
    let small = params();
    let mut tx = McastSender::new(&c, 5, 0, &[1], data.len(), &small, 0);
    let mut buf = vec![0u8; data.len()];
    let mut rx = McastReceiver::new(&c, 5, 0, 1, data.len(), &small, 0);
    let mut t = 0;
    for _ in 0..12 {
        assert!(tx.poll_transmit(t, &data, &mut d));
        rx.handle_datagram(t, &d, &mut buf);
        t += 50_000;
    }
    assert_eq!(rx.batch_wait(t - 50_000), Some(4 * 50_000));
}

#[test]
fn ack_wait_grows_with_the_operation_and_stops_at_the_timer() {
    let p = Params::new(64, 256, 1_000_000_000);
    let c = rel_ctx(3, 2);
    let data = Rng(5).bytes(64 * 40);
    let t0: Nanos = 1_000_000;
    let mut tx = McastSender::new(&c, 9, 0, &[1, 2], data.len(), &p, t0);
    let mut d = Vec::new();
    // Datagrams still to send: never a wait.
    assert_eq!(tx.ack_wait(t0 + 3_000_000), None);
    while tx.poll_transmit(t0, &data, &mut d) {}
    assert!(tx.all_sent());
    // 1/64 of the time the operation has run, from 20 us (1.28 ms in) ...
    assert_eq!(tx.ack_wait(t0 + 1_000_000), None);
    assert_eq!(tx.ack_wait(t0 + 1_280_000), Some(20_000));
    assert_eq!(tx.ack_wait(t0 + 3_000_000), Some(3_000_000 / 64));
    // ... never past the tail probe (2 * nack_initial = 4 ms after the start) ...
    assert_eq!(tx.poll_timeout(), Some(t0 + 4_000_000));
    assert_eq!(tx.ack_wait(t0 + 3_990_000), None);
    // ... and at most 500 us, however long the acknowledgements take.
    let mut most = 0;
    let mut t = t0 + 4_000_000;
    while t < t0 + 200_000_000 {
        if tx.poll_timeout().is_some_and(|due| due <= t) {
            tx.handle_timeout(t);
            assert_eq!(tx.ack_wait(t), None, "a probe to send");
            while tx.poll_transmit(t, &data, &mut d) {}
        }
        if let Some(w) = tx.ack_wait(t) {
            let due = tx.poll_timeout().unwrap();
            assert!(w >= 20_000 && w <= (t - t0) / 64 && w <= 500_000 && t + w <= due);
            most = most.max(w);
        }
        t += 100_000;
    }
    assert_eq!(most, 500_000);
    // A root that comes back for its acknowledgements starts over: short waits first.
    tx.resume(t);
    assert_eq!(tx.ack_wait(t + 640_000), None);
    assert_eq!(tx.ack_wait(t + 2_560_000), Some(40_000));
    for r in [1, 2] {
        let mut m = Vec::new();
        Control::Ack { seq: 9, cum: 40 }.encode(&mut m);
        tx.handle_control(t + 3_000_000, r, &m).unwrap();
    }
    assert!(tx.is_done());
    assert_eq!(tx.ack_wait(t + 10_000_000), None);
}

/// Multicast that stops arriving at some receivers in the middle of a run (a switch that
/// drops the group, a firewall rule): earlier broadcasts complete, then the root stalls and
/// its record names exactly those receivers as unreached, whether they stopped hearing before
/// the broadcast began (nothing acknowledged) or in its middle; the receivers that hear
/// everything are never named.
#[test]
fn multicast_stopping_mid_run_names_the_unreached() {
    let fp = params().frag_payload;
    for (seed, n, mid) in [(21u64, 6u32, false), (22, 9, true), (23, 5, true)] {
        let sizes = [40 * fp, 40 * fp, 40 * fp, 40 * fp];
        let mut cfg = Cfg::new(n, &sizes, Net::clean(), seed);
        cfg.params.stall_timeout = 500_000_000;
        // When the operations end on a healthy network: the cut comes between the second
        // and the third, or early in the second.
        let ends = Sim::run(cfg.clone()).op_end;
        let dead_from = if mid {
            // Ten fragments into the second (the root puts one out per `tx_time`).
            ends[0] + 10 * cfg.net.tx_time
        } else {
            ends[1] + 1
        };
        let mut rng = Rng(seed);
        let _ = rng.bytes(32);
        let _ = rng.next_u64();
        let _ = rng.next_u64();
        let root = rng.below(n as u64) as u32;
        let dead: Vec<u32> = (0..n).filter(|&r| r != root && r % 3 == 1).collect();
        cfg.net.dead = dead.clone();
        cfg.net.dead_from = dead_from;
        let rep = Sim::run(cfg);
        println!(
            "seed {seed:#x}: cut at {dead_from} ns, {} ops done before the stall",
            rep.op_end.len()
        );
        assert_eq!(rep.op_end.len(), if mid { 1 } else { 2 }, "seed {seed:#x}");
        // The others may wait too, for the window that the unreached hold back.
        let stalled = rep.root_stalled.clone().expect("stalled");
        assert!(dead.iter().all(|d| stalled.contains(d)), "seed {seed:#x}");
        let (asking, present) = rep.root_unreached.clone().expect("stalled");
        // With scouts every pending receiver is in the operation.
        assert_eq!(present, dead, "seed {seed:#x}");
        // Without, those that asked for data: all of them here, as each got the root's tail
        // probe or a gap before the cut, or asks after its silence.
        assert!(
            asking.iter().all(|r| dead.contains(r)),
            "seed {seed:#x}: {asking:?}"
        );
        // Every other pending receiver has all that was sent.
        let mut explained = present.clone();
        explained.extend(&rep.root_held);
        explained.sort_unstable();
        assert_eq!(explained, stalled, "seed {seed:#x}");
    }
}

/// A receiver that never asks is not named without scouts (it may be in another call); one
/// that asked since its last progress is, and progress clears it.
#[test]
fn unreached_needs_presence_or_a_request() {
    let p = Params::new(64, 8, 1_000_000_000);
    let ctx = Ctx {
        key: Key::new([3; 32]),
        job: 1,
        comm: 2,
    };
    let data = vec![7u8; 64 * 4];
    let mut tx = McastSender::new(&ctx, 5, 0, &[0, 1, 2, 3], data.len(), &p, 0);
    let mut out = Vec::new();
    while tx.poll_transmit(0, &data, &mut out) {}
    let ctl = |c: Control| {
        let mut b = Vec::new();
        c.encode(&mut b);
        b
    };
    tx.handle_control(10, 1, &ctl(Control::Ack { seq: 5, cum: 4 }))
        .unwrap();
    tx.handle_control(
        10,
        2,
        &ctl(Control::Nack {
            seq: 5,
            cum: 0,
            missing: vec![0, 1],
        }),
    )
    .unwrap();
    assert_eq!(tx.pending_ranks(), vec![2, 3]);
    assert_eq!(tx.unreached(false), vec![2]);
    assert_eq!(tx.unreached(true), vec![2, 3]);
    // Rank 2 progresses: it is reached again until it asks again.
    tx.handle_control(20, 2, &ctl(Control::Ack { seq: 5, cum: 2 }))
        .unwrap();
    assert!(tx.unreached(false).is_empty());
    tx.handle_control(
        30,
        2,
        &ctl(Control::Nack {
            seq: 5,
            cum: 2,
            missing: vec![2],
        }),
    )
    .unwrap();
    assert_eq!(tx.unreached(false), vec![2]);
}
