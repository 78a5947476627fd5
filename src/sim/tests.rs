//! Golden values worked out by hand from the rules in `loggops` (defaults L=2500, o=1500,
//! g=1000, G=6, O=0, S=65535 unless a test says otherwise), and a property test that checks
//! random programs against a lower bound and against the functional replay of `goal/replay.rs`.

use super::*;
use crate::goal::{self, gen, Program};
use crate::sched::testutil::Rng;
use crate::sched::{BufRef, Builder, Op};

use crate::goal::replay;

fn parse(src: &str) -> Program {
    goal::parse_any(src.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .program
}

fn run(p: &Program) -> Outcome {
    run_with(p, &Params::default())
}

fn run_with(p: &Program, prm: &Params) -> Outcome {
    simulate(p, prm, Options { trace: true }).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn single_message_both_dialects() {
    let lgs = parse(
        "num_ranks 2\nrank 0 {\nl1: send 1b to 1 tag 0\n}\nrank 1 {\nl1: recv 1b from 0 tag 0\n}\n",
    );
    let paper = parse("rank #0 { send 0,1 to 1; }\nrank #1 { recv 0,1 from 0; }");
    for p in [&lgs, &paper] {
        let o = run(p);
        // Sender: CPU busy 0..o = 1500. Message arrives at o + L = 4000, the receiver's CPU
        // processes it until 4000 + o = 5500 = o + L + o.
        assert_eq!(o.end, [1500, 5500]);
        assert_eq!((o.max, o.max_rank), (5500, 1));
        assert_eq!(o.times(1, 0), (0, 5500));
    }
}

#[test]
fn chain_of_four() {
    let p = parse(
        "rank #0 { send 0,1 to 1; }
         rank #1 { r: recv 0,1 from 0; s: send 0,1 to 2; requ s -> r; }
         rank #2 { r: recv 0,1 from 1; s: send 0,1 to 3; requ s -> r; }
         rank #3 { recv 0,1 from 2; }",
    );
    let o = run(&p);
    // Each hop is o + L + o = 5500 after the previous receive completed:
    // rank 1's receive ends at 5500, its send occupies the CPU 5500..7000;
    // rank 2's receive ends at 11000, its send 11000..12500; rank 3's receive ends at 16500.
    assert_eq!(o.end, [1500, 7000, 12500, 16500]);
    assert_eq!(o.max, 16500);
}

#[test]
fn binomial_tree_of_eight_and_its_critical_path() {
    let p = gen::generate(gen::Algo::BinomialBcast, 8, 0, 1).unwrap();
    let o = run(&p);
    // Root 0 sends to 1, 2, 4 in that order; each send waits for the CPU (o > g):
    //   to 1 at 0, to 2 at 1500, to 4 at 3000; root ends at 4500.
    // Arrivals (+o+L = 4000) and receive ends (+o): rank 1 4000/5500, rank 2 5500/7000,
    //   rank 4 7000/8500.
    // Rank 1 sends to 3 at 5500 and to 5 at 7000 (ends 8500); rank 2 sends to 6 at 7000
    //   (ends 8500).
    // Rank 3 receives at 9500/11000 and sends to 7 at 11000 (ends 12500); rank 5 receives
    //   at 11000/12500; rank 6 at 11000/12500; rank 7 at 15000/16500.
    assert_eq!(o.end, [4500, 8500, 8500, 12500, 8500, 12500, 12500, 16500]);
    assert_eq!((o.max, o.max_rank), (16500, 7));
    // The chain that ends last: 0 -> 1 -> 3 -> 7, each receive followed by the send it enables.
    let path: Vec<(u32, u32, u64, u64, Via)> = critical_path(&o)
        .iter()
        .map(|s| (s.rank, s.action, s.start, s.end, s.via))
        .collect();
    assert_eq!(
        path,
        [
            (0, 0, 0, 1500, Via::None),
            (1, 0, 0, 5500, Via::Message),
            (1, 1, 5500, 7000, Via::Requires),
            (3, 0, 0, 11000, Via::Message),
            (3, 1, 11000, 12500, Via::Requires),
            (7, 0, 0, 16500, Via::Message),
        ]
    );
}

fn dissemination(n: u32) -> String {
    // LogGOPSim's dialect: in round r rank i sends to i + 2^r and receives from i - 2^r;
    // the send of round r + 1 requires the receive of round r.
    let mut s = format!("num_ranks {n}\n");
    let rounds = 32 - (n - 1).leading_zeros();
    for i in 0..n {
        s += &format!("rank {i} {{\n");
        for r in 0..rounds {
            let d = 1 << r;
            s += &format!("s{r}: send 1b to {} tag {r}\n", (i + d) % n);
            s += &format!("r{r}: recv 1b from {} tag {r}\n", (i + n - d) % n);
            if r > 0 {
                s += &format!("s{r} requires r{}\n", r - 1);
            }
        }
        s += "}\n";
    }
    s
}

#[test]
fn dissemination_among_sixteen() {
    let p = parse(&dissemination(16));
    let o = run(&p);
    // Every rank does the same: round r's send starts when round r - 1's receive ended, and
    // the matching message arrives o + L later and is processed for o: 5500 per round, four
    // rounds: 22000, the figure LogGOPSim's README gives for its dissemination_16 example.
    assert_eq!(o.end, vec![22000; 16]);
    assert_eq!(o.max, 22000);
}

#[test]
fn rendezvous_above_s_waits_for_the_receiver() {
    let prog = |late: bool| {
        let r1 = if late {
            "c: calc 10000\nr: recv 70000b from 0 tag 0\nr requires c\n"
        } else {
            "r: recv 70000b from 0 tag 0\n"
        };
        parse(&format!(
            "num_ranks 2\nrank 0 {{\ns: send 70000b to 1 tag 0\nc: calc 100\nc requires s\n}}\nrank 1 {{\n{r1}}}\n"
        ))
    };
    // s = 70000 > S: 69999 * G = 419994.
    // Receive posted at 0: the message arrives at 4000 and matches at once, so the send
    // completes at 4000 (not at o = 1500) and the calc runs 4000..4100. The receiver's CPU
    // works on the message until 4000 + o + 419994 = 425494.
    let o = run(&prog(false));
    assert_eq!(o.times(0, 0), (0, 4000));
    assert_eq!(o.end, [4100, 425494]);
    // Eager (S raised above the size): the send completes at o = 1500, the calc ends at 1600.
    let eager = Params {
        eager_limit: 70000,
        ..Params::default()
    };
    let o = run_with(&prog(false), &eager);
    assert_eq!(o.end, [1600, 425494]);
    // Receive posted only after a 10000 ns calc: the message (at 4000) waits for the busy
    // CPU until 10000 and is processed 10000..10000 + 1500 + 419994 = 431494; the receive,
    // posted at 10000, finds it and matches at once, so the send completes at 10000 and its
    // calc runs 10000..10100; the receive ends when the processing does, at 431494.
    let o = run(&prog(true));
    assert_eq!(o.times(0, 0), (0, 10000));
    assert_eq!(o.end, [10100, 431494]);
}

#[test]
fn calc_is_cpu_time() {
    let p = parse(
        "rank #0 { c: calc 1000; s: send 0,1 to 1; requ s -> c; }
         rank #1 { r: recv 0,1 from 0; c: calc 2000; requ c -> r; }",
    );
    let o = run(&p);
    // Rank 0: calc 0..1000, send 1000..2500. Rank 1: message at 1000 + o + L = 5000,
    // received by 6500, calc 6500..8500.
    assert_eq!(o.end, [2500, 8500]);
}

#[test]
fn nic_gap_and_per_byte_costs() {
    let p = parse(
        "rank #0 { send 0,1000 to 1; send 1000,1000 to 1; }
         rank #1 { recv 0,1000 from 0; recv 1000,1000 from 0; }",
    );
    let o = run(&p);
    // 1000 bytes: (s-1)G = 5994. First send at 0: NIC busy until g + 5994 = 6994, so the
    // second send starts at 6994 (CPU until 8494). Arrivals 4000 and 10994. The first keeps the
    // receiver's CPU for o (4000..5500) and its NIC until 4000 + g + 5994 = 10994; its receive
    // completes when every byte is in, 4000 + o + 5994 = 11494. The second finds CPU and NIC
    // free at 10994 and completes at 10994 + 7494 = 18488.
    assert_eq!(o.times(0, 1), (6994, 8494));
    assert_eq!(o.end, [8494, 18488]);
    assert_eq!(o.times(1, 0).1, 11494);
    assert_eq!(o.times(1, 1).1, 18488);
    // What decided the end: the sender's NIC gap after the first send, then the message.
    let path: Vec<(u32, u32, Via)> = critical_path(&o)
        .iter()
        .map(|s| (s.rank, s.action, s.via))
        .collect();
    assert_eq!(
        path,
        [
            (0, 0, Via::None),
            (0, 1, Via::NicSend),
            (1, 1, Via::Message)
        ]
    );
}

#[test]
fn multicast_is_one_send_reaching_everyone() {
    let p = parse(
        "rank #0 { mcast 0,1; }
         rank #1, #2 { mrecv 0,1 from 0; }
         rank #3 { calc 5000; }",
    );
    let o = run(&p);
    // The root pays o once (0..1500) and one NIC gap; the message reaches every other rank at
    // o + L = 4000 and each receiver's CPU pays o: receives end at 5500. Rank 3 posts no
    // receive but still processes the message, after its calc: 5000..6500.
    assert_eq!(o.end, [1500, 5500, 5500, 6500]);
    assert_eq!(o.matched(1, 0), Some((0, 0)));
    // Six binomial rounds against one multicast: 64 ranks.
    let tree = run(&gen::generate(gen::Algo::BinomialBcast, 64, 0, 1).unwrap());
    let mut b = Builder::new();
    b.add(Op::McastSend { buf: one() });
    let mut schedules = vec![b.build().unwrap()];
    for _ in 1..64 {
        let mut b = Builder::new();
        b.add(Op::McastRecv {
            root: 0,
            buf: one(),
        });
        schedules.push(b.build().unwrap());
    }
    let m = run(&Program::from_schedules(schedules, &[]));
    assert_eq!(m.max, 5500);
    assert!(tree.max > m.max);
}

fn one() -> BufRef {
    BufRef {
        slot: 0,
        offset: 0,
        len: 1,
    }
}

#[test]
fn deadlock_names_ranks_and_actions() {
    let p = parse(
        "rank #0 { r: recv 0,1 from 1; s: send 0,1 to 1; requ s -> r; }
         rank #1 { r: recv 0,1 from 0; s: send 0,1 to 0; requ s -> r; }
         rank #2 { calc 5; }",
    );
    let e = simulate(&p, &Params::default(), Options::default()).unwrap_err();
    let SimError::Deadlock {
        waiting,
        unfinished,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(*unfinished, 4);
    let who: Vec<(u32, u32)> = waiting.iter().map(|w| (w.rank, w.action)).collect();
    assert_eq!(who, [(0, 0), (1, 0), (0, 1), (1, 1)]);
    let text = e.to_string();
    assert!(
        text.contains("rank 0 action 0: recv 1 bytes from 1 tag 0 posted at 0 ns, never matched"),
        "{text}"
    );
    assert!(
        text.contains("rank 1 action 1: send 1 bytes to 0 tag 0 waits for 1"),
        "{text}"
    );
    // A rendezvous send whose receive never comes is named as well.
    let p = parse("num_ranks 2\nrank 0 {\ns: send 70000b to 1 tag 0\n}\nrank 1 {\n}\n");
    let e = simulate(&p, &Params::default(), Options::default()).unwrap_err();
    assert!(
        e.to_string().contains("its receiver never matched it"),
        "{e}"
    );
}

#[test]
fn irequires_starts_with_its_prerequisite() {
    let p = parse(
        "rank #0 { a: calc 3000; b: send 0,1 to 1; irequ b -> a; }
         rank #1 { recv 0,1 from 0; }",
    );
    let o = run(&p);
    // b may start when a starts (0), but a holds the CPU until 3000: b runs 3000..4500 and
    // its message is received at 3000 + 4000 + 1500 = 8500.
    assert_eq!(o.times(0, 1), (3000, 4500));
    assert_eq!(o.end, [4500, 8500]);
    let path = critical_path(&o);
    assert_eq!(
        path.last().map(|s| (s.rank, s.via)),
        Some((1, Via::Message))
    );
    assert_eq!(path[path.len() - 2].via, Via::Cpu);
}

// ------------------------------------------------------------------ random programs

/// A random program whose matching is decided by its structure: messages are made in a global
/// order, every action requires only earlier actions of its rank (so nothing deadlocks), and
/// sends and receives of one (sender, receiver, tag) channel, and multicasts of one root, are
/// chained in order on both sides, so that MPI's order fixes which receive takes which send
/// in any execution. Wildcard receives are left out: with them the replay may legally match
/// differently.
struct Random {
    p: Program,
    meta: Meta,
}

/// Per rank, per action: (message index, the designated send of a receive).
type Meta = Vec<Vec<(usize, Option<(u32, u32)>)>>;

/// Adds `op` to rank `r` with up to two random edges from earlier actions of `r`.
fn add(
    b: &mut [Builder],
    meta: &mut Meta,
    rng: &mut Rng,
    r: u32,
    op: Op,
    k: usize,
    peer: Option<(u32, u32)>,
) -> u32 {
    let bl = &mut b[r as usize];
    let earlier = bl.len();
    let id = bl.add(op);
    for _ in 0..rng.below(3) {
        if earlier > 0 {
            let first = rng.below(earlier) as u32;
            if rng.chance(20) {
                bl.irequ(first, id);
            } else {
                bl.requ(first, id);
            }
        }
    }
    meta[r as usize].push((k, peer));
    id
}

fn random_program(rng: &mut Rng, n: u32, msgs: usize) -> Random {
    let nu = n as usize;
    let mut b: Vec<Builder> = (0..n).map(|_| Builder::new()).collect();
    let mut meta: Meta = vec![Vec::new(); nu];
    let mut cursor = vec![0usize; nu];
    let mut last_send = std::collections::HashMap::new();
    let mut last_recv = std::collections::HashMap::new();
    for k in 0..msgs {
        let len = if rng.chance(30) { 32 } else { 8 };
        match rng.below(10) {
            0 => {
                let r = rng.below(nu) as u32;
                let nanos = rng.below(5000) as u64;
                add(&mut b, &mut meta, rng, r, Op::Calc { nanos }, k, None);
            }
            1 => {
                let root = rng.below(nu) as u32;
                let buf = BufRef {
                    slot: 0,
                    offset: cursor[root as usize],
                    len: 8,
                };
                cursor[root as usize] += 8;
                let s = add(&mut b, &mut meta, rng, root, Op::McastSend { buf }, k, None);
                if let Some(prev) = last_send.insert((root, u32::MAX, u32::MAX), s) {
                    b[root as usize].requ(prev, s);
                }
                for q in (0..n).filter(|&q| q != root) {
                    let buf = BufRef {
                        slot: 0,
                        offset: cursor[q as usize],
                        len: 8,
                    };
                    cursor[q as usize] += 8;
                    let op = Op::McastRecv { root, buf };
                    let r = add(&mut b, &mut meta, rng, q, op, k, Some((root, s)));
                    if let Some(prev) = last_recv.insert((root, q, u32::MAX), r) {
                        b[q as usize].requ(prev, r);
                    }
                }
            }
            _ => {
                let src = rng.below(nu) as u32;
                let dst = (src + 1 + rng.below(nu - 1) as u32) % n;
                let tag = rng.below(3) as u32;
                let sbuf = BufRef {
                    slot: 0,
                    offset: cursor[src as usize],
                    len,
                };
                cursor[src as usize] += len;
                let s = add(
                    &mut b,
                    &mut meta,
                    rng,
                    src,
                    Op::Send {
                        peer: dst,
                        tag,
                        buf: sbuf,
                    },
                    k,
                    None,
                );
                if let Some(prev) = last_send.insert((src, dst, tag), s) {
                    b[src as usize].requ(prev, s);
                }
                let rbuf = BufRef {
                    slot: 0,
                    offset: cursor[dst as usize],
                    len,
                };
                cursor[dst as usize] += len;
                let op = Op::Recv {
                    peer: src,
                    tag,
                    buf: rbuf,
                };
                let r = add(&mut b, &mut meta, rng, dst, op, k, Some((src, s)));
                if let Some(prev) = last_recv.insert((src, dst, tag), r) {
                    b[dst as usize].requ(prev, r);
                }
            }
        }
    }
    let schedules = b.into_iter().map(|b| b.build().unwrap()).collect();
    Random {
        p: Program::from_schedules(schedules, &[]),
        meta,
    }
}

/// Lower bounds on every action's start and end: a message hop costs at least o + L + o from
/// the send's start to the receive's end, a calc its time, a send at least o.
fn lower_bounds(r: &Random, prm: &Params) -> Vec<Vec<(u64, u64)>> {
    let p = &r.p;
    let mut lb: Vec<Vec<(u64, u64)>> = p
        .ranks
        .iter()
        .map(|rp| vec![(0, 0); rp.schedule.len()])
        .collect();
    // Actions of message k depend only on actions of messages below k, or on the send of k.
    let mut order: Vec<(usize, u32, u32)> = Vec::new();
    for (rank, m) in r.meta.iter().enumerate() {
        for (id, &(k, peer)) in m.iter().enumerate() {
            order.push((k, u32::from(peer.is_some()), 0));
            let last = order.len() - 1;
            order[last].2 = ((rank as u64) << 16 | id as u64) as u32;
        }
    }
    order.sort_unstable();
    let hop = prm.overhead + prm.latency + prm.overhead;
    for &(_, _, key) in &order {
        let (rank, id) = ((key >> 16) as usize, key & 0xffff);
        let s = &p.ranks[rank].schedule;
        let mut start = 0;
        for (first, _) in s.actions() {
            if s.dependents(first).contains(&id) {
                start = start.max(lb[rank][first as usize].1);
            }
            if s.start_dependents(first).contains(&id) {
                start = start.max(lb[rank][first as usize].0);
            }
        }
        let end = match *s.op(id) {
            Op::Send { .. } | Op::McastSend { .. } => start + prm.overhead,
            Op::Calc { nanos } => start + nanos,
            Op::Exec { .. } => start,
            Op::Recv { .. } | Op::McastRecv { .. } => {
                let (src, send) = r.meta[rank][id as usize].1.unwrap();
                start.max(lb[src as usize][send as usize].0 + hop)
            }
        };
        lb[rank][id as usize] = (start, end);
    }
    lb
}

/// LogGOPS parameters drawn for a random case, with the given `G`.
fn random_params(rng: &mut Rng, gap_per_byte: PerByte) -> Params {
    Params {
        latency: rng.below(5000) as u64,
        overhead: rng.below(3000) as u64,
        gap: rng.below(3000) as u64,
        gap_per_byte,
        overhead_per_byte: PerByte::ps(rng.below(5000) as u64),
        eager_limit: if rng.chance(50) { 16 } else { 65535 },
        ..Params::default()
    }
}

#[test]
fn random_programs_respect_bounds_and_match_like_the_replay() {
    let mut rng = Rng::new(2026);
    for case in 0..1000u64 {
        let n = 2 + rng.below(6) as u32;
        let msgs = 1 + rng.below(30);
        let r = random_program(&mut rng, n, msgs);
        // Whole and fractional ns per byte alike.
        let g = PerByte::ps(rng.below(20_000) as u64);
        let prm = random_params(&mut rng, g);
        let o = simulate(&r.p, &prm, Options { trace: true })
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let lb = lower_bounds(&r, &prm);
        let mut bound = 0;
        for (rank, acts) in lb.iter().enumerate() {
            for (id, &(s, e)) in acts.iter().enumerate() {
                let (ts, te) = o.times(rank as u32, id as u32);
                assert!(
                    ts >= s && te >= e,
                    "case {case}: rank {rank} action {id}: ({ts}, {te}) below ({s}, {e})"
                );
                bound = bound.max(e);
            }
        }
        assert!(o.max >= bound, "case {case}");
        // Every CPU holding ends with an action here, so the critical path ends at the maximum.
        let path = critical_path(&o);
        assert_eq!(path.last().map(|s| s.end), Some(o.max), "case {case}");
        assert_eq!(path[0].via, Via::None);
        if r.meta.iter().flatten().any(|m| m.1.is_some()) {
            assert!(o.max >= prm.overhead + prm.latency + prm.overhead);
        }
        // Every receive matched its designated send (which MPI order forces here).
        for (rank, m) in r.meta.iter().enumerate() {
            for (id, &(_, peer)) in m.iter().enumerate() {
                if peer.is_some() {
                    assert_eq!(
                        o.matched(rank as u32, id as u32),
                        peer,
                        "case {case}: rank {rank} action {id}, {prm}\n{}",
                        crate::goal::print::to_paper(&r.p)
                    );
                }
            }
        }
        // The replay moves real bytes in a random order: each send's bytes name it, so each
        // receive's bytes say which send it got.
        let bufs: Vec<replay::Buffers> = r
            .p
            .ranks
            .iter()
            .enumerate()
            .map(|(rank, rp)| {
                let mut b = vec![0u8; 4096];
                for (id, op) in rp.schedule.actions() {
                    if let Op::Send { buf, .. } | Op::McastSend { buf } = op {
                        b[buf.offset..buf.offset + 4].copy_from_slice(&(rank as u32).to_le_bytes());
                        b[buf.offset + 4..buf.offset + 8].copy_from_slice(&id.to_le_bytes());
                    }
                }
                vec![b]
            })
            .collect();
        let out = replay::run(&r.p, bufs, case).unwrap_or_else(|e| panic!("case {case}: {e}"));
        for (rank, rp) in r.p.ranks.iter().enumerate() {
            for (id, op) in rp.schedule.actions() {
                if let Op::Recv { buf, .. } | Op::McastRecv { buf, .. } = op {
                    let b = &out[rank][0][buf.offset..buf.offset + 8];
                    let got = (
                        u32::from_le_bytes(b[..4].try_into().unwrap()),
                        u32::from_le_bytes(b[4..].try_into().unwrap()),
                    );
                    assert_eq!(
                        o.matched(rank as u32, id),
                        Some(got),
                        "case {case}: rank {rank} action {id}"
                    );
                }
            }
        }
    }
}

#[test]
fn params_by_name() {
    let mut p = Params::default();
    for (i, n) in Params::NAMES.iter().enumerate() {
        assert!(p.set(n, 10 + i as u64));
    }
    assert!(!p.set("x", 1));
    assert_eq!(p.to_string(), "L=10 o=11 g=12 G=13 O=14 S=15");
}

#[test]
fn every_generator_finishes() {
    for name in gen::NAMES {
        for n in [1u32, 2, 3, 7, 8, 33] {
            let algo = gen::algo_from_name(name, None, None).unwrap();
            let p = gen::generate(algo, n, n / 2, 64).unwrap();
            let o = simulate(&p, &Params::default(), Options { trace: true })
                .unwrap_or_else(|e| panic!("{name} over {n}: {e}"));
            // Anything that moves a message takes at least one hop: o + L + o.
            if n > 1 {
                assert!(o.max >= 5500, "{name} over {n}: {}", o.max);
            }
            assert!(!critical_path(&o).is_empty() || p.action_count() == 0);
        }
    }
}

#[test]
fn a_binary_schedule_streamed_rank_by_rank_simulates_like_its_program() {
    // `mpicast sim FILE.bin` never builds the whole Program: it flattens each rank as the
    // loader hands it over. Labels and placement hints come along.
    let mut p = gen::generate(gen::Algo::ScoutTreeBcast, 13, 4, 3000).unwrap();
    p.ranks[2].hints[0] = goal::Hint { cpu: 1, nic: 1 };
    p.ranks[5].labels[0] = Some("first".into());
    let bytes = goal::binary::assemble(&p).unwrap();
    let mut flat = Flat::new();
    goal::binary::load_each(&bytes, |_, rp| flat.push_rank(&rp)).unwrap();
    assert_eq!(
        (flat.num_ranks(), flat.action_count()),
        (13, p.action_count())
    );
    assert_eq!((flat.cpus(), flat.nics()), (2, 2));
    assert_eq!(flat.label(flat.global(5, 0)), Some("first"));
    assert_eq!(flat.label(flat.global(5, 1)), None);
    let a = simulate(&p, &Params::default(), Options { trace: true }).unwrap();
    let b = simulate_flat(&flat, &Params::default(), Options { trace: true }).unwrap();
    assert_eq!((&a.end, a.events), (&b.end, b.events));
    assert_eq!(critical_path(&a), critical_path(&b));
    // A loader error of the consumer stops the walk.
    let err = goal::binary::load_each(&bytes, |r, _| {
        if r == 3 {
            Err("enough".to_string())
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert_eq!(err.message, "enough");
}

// ------------------------------------------------------------------ with a network

/// Random programs on networks (`simulate_on`): a one-switch star whose host links run at the
/// NIC's rate, or a random connected network. The network only delays messages, so the lower
/// bounds still hold and receives still match their designated sends (MPI's order survives the
/// network); when it delayed none, every time is exactly LogGOPS's.
#[test]
fn random_programs_on_networks() {
    let mut rng = Rng::new(2027);
    let mut undelayed = 0;
    for case in 0..600u64 {
        let n = 2 + rng.below(6) as u32;
        let msgs = 1 + rng.below(30);
        let r = random_program(&mut rng, n, msgs);
        let g = PerByte::ps([0, 1000, 5000, 8000, 20_000, 80, 375][rng.below(7)]);
        let prm = random_params(&mut rng, g);
        let text = if rng.chance(50) {
            let mut s = "switch hub\n".to_string();
            for h in 0..n {
                s += &format!("host h{h} hub nic\n");
            }
            s
        } else {
            super::network_tests::random_network(&mut rng, n)
        };
        let net = Network::parse(&text, "net").unwrap_or_else(|e| panic!("case {case}: {e}"));
        let mut c = Contention::new(&net, n, &prm).unwrap();
        let o = simulate_on(&r.p, &prm, Options { trace: true }, &mut c)
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let lb = lower_bounds(&r, &prm);
        for (rank, acts) in lb.iter().enumerate() {
            for (id, &(s, e)) in acts.iter().enumerate() {
                let (ts, te) = o.times(rank as u32, id as u32);
                assert!(ts >= s && te >= e, "case {case}: rank {rank} action {id}");
            }
        }
        for (rank, m) in r.meta.iter().enumerate() {
            for (id, &(_, peer)) in m.iter().enumerate() {
                if peer.is_some() {
                    assert_eq!(
                        o.matched(rank as u32, id as u32),
                        peer,
                        "case {case}: rank {rank} action {id}, {prm}\n{text}\n{}",
                        crate::goal::print::to_paper(&r.p)
                    );
                }
            }
        }
        let path = critical_path(&o);
        assert_eq!(path.last().map(|s| s.end), Some(o.max), "case {case}");
        if c.delays().1 == 0 {
            undelayed += 1;
            let plain = simulate(&r.p, &prm, Options { trace: true }).unwrap();
            assert_eq!(o.end, plain.end, "case {case}");
            for (rank, rp) in r.p.ranks.iter().enumerate() {
                for (id, _) in rp.schedule.actions() {
                    let rank = rank as u32;
                    assert_eq!(o.times(rank, id), plain.times(rank, id), "case {case}");
                }
            }
            assert_eq!(path, critical_path(&plain), "case {case}");
        }
    }
    assert!(undelayed > 100, "only {undelayed} cases without delays");
}

#[test]
fn multicast_channel_parameters_and_loss_with_repair() {
    let p = parse(
        "rank #0 { mcast 0,14000; }
         rank #1, #2, #3, #4, #5, #6, #7 { mrecv 0,14000 from 0; }",
    );
    // The multicast channel's own o, L and G: the root's CPU 0..4000; arrival at 4000 + 9000 =
    // 13000; each receiver processes mo + 13999 mG = 4000 + 13999 ns: it ends at 30999.
    let own = Params {
        mcast_overhead: Some(4000),
        mcast_latency: Some(9000),
        mcast_gap_per_byte: Some(PerByte::ns(1)),
        ..Params::default()
    };
    let o = run_with(&p, &own);
    assert_eq!(o.end[0], 4000);
    assert!(o.end[1..].iter().all(|&e| e == 13000 + 4000 + 13999));
    // Loss: each receiver ends exactly its repair delay later than without loss (nothing else
    // runs on it), as repair.rs draws it for (root 0, send 0, receiver q, 14000 bytes).
    let lossy = Params {
        mcast_loss_ppm: 150_000,
        ..Params::default()
    };
    let clean = run(&p);
    let lost = run_with(&p, &lossy);
    let mut rounds = 0;
    for q in 1..8u32 {
        let r = repair::repair(&lossy, 0, 0, q, 14000);
        assert_eq!(
            lost.end[q as usize],
            clean.end[q as usize] + r.delay,
            "rank {q}"
        );
        rounds += r.rounds as u64;
    }
    assert!(rounds > 0, "10 datagrams x 7 receivers at 15 % lose some");
    assert_eq!(lost.mcast_repairs, rounds);
    assert_eq!(lost.end[0], clean.end[0]);
}

// ------------------------------------------------------------------ segmented broadcasts

/// Chain of four ranks, root 0, two segments of one byte (size 2, `--segment 1`): no
/// per-byte costs. Ties at one time go to the older event (`queue` order), and a message
/// waiting for the CPU keeps its place.
///   Rank 0 sends segment 0 at 0..1500 (arrives at rank 1 at 4000) and segment 1 at
///     1500..3000 (arrives at 5500). Rank 0 ends at 3000.
///   Rank 1 processes segment 0 at 4000..5500; its forward f0 becomes ready at 5500, but
///     segment 1, sent at 1500, is the older event at 5500 and takes the CPU until 7000.
///     f0 runs 7000..8500 (arrives at rank 2 at 7000 + o + L = 11000); f1 may start only
///     after f0 started (irequ) and waits for the CPU: 8500..10000 (arrives at 12500).
///     Rank 1 ends at 10000.
///   Rank 2: the same 7000 later (11000 + 1500 + 1500 = 14000, sends 14000..15500 and
///     15500..17000, arrivals 18000 and 19500); ends at 17000.
///   Rank 3 processes 18000..19500 and 19500..21000: ends at 21000.
#[test]
fn chain_bcast_of_four_in_two_segments() {
    let p = gen::generate(gen::Algo::ChainBcast { segment: 1 }, 4, 0, 2).unwrap();
    let o = run(&p);
    assert_eq!(o.end, [3000, 10000, 17000, 21000]);
    // Rank 1's forwards: segment 0 (action 2) before segment 1 (action 3).
    assert_eq!(o.times(1, 2), (7000, 8500));
    assert_eq!(o.times(1, 3), (8500, 10000));
    // Rooted anywhere: the same times shifted around the ring.
    let p = gen::generate(gen::Algo::ChainBcast { segment: 1 }, 4, 2, 2).unwrap();
    assert_eq!(run(&p).end, [17000, 21000, 3000, 10000]);
}

/// Binary tree of four ranks (0 -> 1, 2; 1 -> 3), two segments of one byte.
///   Rank 0 sends segment-major: to 1 at 0..1500 (arrives 4000), to 2 at 1500..3000
///     (5500), to 1 at 3000..4500 (7000), to 2 at 4500..6000 (8500); ends at 6000.
///   Rank 1: segment 0 at 4000..5500, forwards it to 3 at 5500..7000 (arrives 9500);
///     segment 1 arrives at 7000 as the CPU frees, 7000..8500, forwarded 8500..10000
///     (arrives 12500); ends at 10000.
///   Rank 2: 5500..7000 and 8500..10000. Rank 3: 9500..11000 and 12500..14000.
#[test]
fn binary_tree_bcast_of_four_in_two_segments() {
    let p = gen::generate(gen::Algo::BinaryTreeBcast { segment: 1 }, 4, 0, 2).unwrap();
    let o = run(&p);
    assert_eq!(o.end, [6000, 10000, 10000, 14000]);
    assert_eq!(o.times(1, 2), (5500, 7000));
    assert_eq!(o.times(1, 3), (8500, 10000));
}

/// The dynamic broadcast over four ranks, root 0, two segments of one byte (far below the
/// chain threshold: the binomial tree of Fig. 1 over the list 1, 2, 3: 0 sends to 2, whose
/// subtree is {3}, then to 1). The root sends child-major, as the library does: both
/// segments to 2 at 0..1500 and 1500..3000 (arriving 4000 and 5500), then both to 1 at
///   3000..4500 and 4500..6000 (7000, 8500); it ends at 6000.
///   Rank 2 is rank 1 of the chain above: forwards at 7000..8500 and 8500..10000 (arriving at
///     rank 3 at 11000 and 12500); ends at 10000. Rank 3 ends at 12500 + 1500 = 14000.
///   Rank 1: 7000..8500 and 8500..10000.
#[test]
fn dbcast_of_four_in_two_segments() {
    let p = gen::generate(gen::Algo::Dbcast { segment: 1 }, 4, 0, 2).unwrap();
    let o = run(&p);
    assert_eq!(o.end, [6000, 10000, 10000, 14000]);
    assert_eq!(o.times(2, 2), (7000, 8500));
}

/// The point of pipelining: 4 MiB over 32 ranks, segments of 64 KiB, the chain beats the
/// binomial tree (about nsegs + n - 2 = 94 segment times against 5 whole messages, i.e. 320
/// segment times); 8 bytes the chain takes 31 hops against the tree's 5 rounds.
#[test]
fn chain_beats_binomial_for_long_messages_only() {
    let time = |algo, size| {
        let p = gen::generate(algo, 32, 0, size).unwrap();
        run(&p).max
    };
    let chain = gen::Algo::ChainBcast {
        segment: gen::DEFAULT_SEGMENT,
    };
    let big = 4 << 20;
    let (c, b) = (time(chain, big), time(gen::Algo::BinomialBcast, big));
    assert!(c * 2 < b, "4 MiB: chain {c} binomial {b}");
    let (c, b) = (time(chain, 8), time(gen::Algo::BinomialBcast, 8));
    assert!(c > 3 * b, "8 B: chain {c} binomial {b}");
    // The binary tree sits in between for the long message.
    let t = time(
        gen::Algo::BinaryTreeBcast {
            segment: gen::DEFAULT_SEGMENT,
        },
        big,
    );
    let c = time(chain, big);
    assert!(c < t && t < time(gen::Algo::BinomialBcast, big), "{c} {t}");
}

/// The dynamic broadcast takes the library's shapes: a long message to 7 recipients goes
/// down the chain (the same program as `chain-bcast` with the library's 8 KiB segments,
/// so the same times), a short one down the binomial tree, which for one segment to 2^k - 1
/// recipients takes k rounds like the binomial broadcast.
#[test]
fn dbcast_follows_the_library_shapes() {
    let dbcast = gen::algo_from_name("dbcast", None, None).unwrap();
    let seg = crate::config::Config::default().segment_bytes;
    let long = 1 << 20;
    let d = run(&gen::generate(dbcast, 8, 3, long).unwrap());
    let c = run(&gen::generate(gen::Algo::ChainBcast { segment: seg }, 8, 3, long).unwrap());
    assert_eq!(d.end, c.end);
    let d = run(&gen::generate(dbcast, 8, 0, 1).unwrap());
    let b = run(&gen::generate(gen::Algo::BinomialBcast, 8, 0, 1).unwrap());
    assert_eq!(d.max, b.max);
    assert_eq!(d.max, 16500);
}

/// Every segmented generator finishes at many sizes (eager and rendezvous segments) and rank
/// counts, rooted anywhere, without deadlock; every rank but a lone root receives something.
#[test]
fn segmented_generators_finish() {
    for n in [1u32, 2, 5, 17, 40, 100] {
        for (size, seg) in [
            (0usize, 1usize),
            (1000, 100),
            (300_000, 65536),
            (200_000, 8192),
        ] {
            for algo in [
                gen::Algo::ChainBcast { segment: seg },
                gen::Algo::BinaryTreeBcast { segment: seg },
                gen::Algo::Dbcast { segment: seg },
            ] {
                let root = n * 2 / 3;
                let p = gen::generate(algo, n, root, size).unwrap();
                let o = simulate(&p, &Params::default(), Options { trace: true })
                    .unwrap_or_else(|e| panic!("{algo:?} n {n} size {size}: {e}"));
                if n > 1 {
                    assert!(o.max >= 5500, "{algo:?} n {n}: {}", o.max);
                }
                assert_eq!(
                    critical_path(&o).last().map(|s| s.end),
                    Some(o.max).filter(|_| n > 1)
                );
            }
        }
    }
}

/// Seed 002's broadcast without scouts over four ranks, root 0: one multicast.
///   1 byte: the root's mcast takes its CPU 0..1500 and arrives everywhere at
///     1500 + 2500 = 4000; each receiver's CPU 4000..5500: ends [1500, 5500, 5500, 5500].
///   100000 bytes: the root's CPU is still 0..1500 (O = 0; the NIC, 0..1000 + 99999·6 =
///     600994, does not make a rank end later); arrival at 4000, in at
///     4000 + 1500 + 99999·6 = 605494 (LogGOPSim's rule: o + max((s-1)·O, (s-1)·G)).
///   The lower bound of the multicast broadcasts: the scout tree adds the gather.
#[test]
fn eager_mcast_bcast_of_four() {
    let p = gen::generate(gen::Algo::EagerMcastBcast, 4, 0, 1).unwrap();
    assert_eq!(run(&p).end, [1500, 5500, 5500, 5500]);
    let p = gen::generate(gen::Algo::EagerMcastBcast, 4, 0, 100_000).unwrap();
    assert_eq!(run(&p).end, [1500, 605494, 605494, 605494]);
    // Rooted anywhere: the same times.
    let p = gen::generate(gen::Algo::EagerMcastBcast, 4, 2, 1).unwrap();
    assert_eq!(run(&p).end, [5500, 5500, 1500, 5500]);
    for n in [4u32, 33] {
        let eager = run(&gen::generate(gen::Algo::EagerMcastBcast, n, 0, 8).unwrap()).max;
        let tree = run(&gen::generate(gen::Algo::ScoutTreeBcast, n, 0, 8).unwrap()).max;
        assert!(eager < tree, "n {n}: eager {eager} scout tree {tree}");
    }
}

/// `imcast-bcast` over four ranks, root 0, the library's defaults (base 16, 8 KiB segments,
/// IP multicast from 16 KiB between hosts).
///   One rank per host, 1 byte: point-to-point, and four one-digit IDs make a flat tree: the
///     root sends to 1, 2, 3 at 0..1500, 1500..3000, 3000..4500 (arriving 4000, 5500, 7000);
///     ends [4500, 5500, 7000, 8500].
///   One rank per host, 100000 bytes: by IP. The root's envelopes (0 bytes, costed as 1) take
///     its CPU 0..1500, 1500..3000, 3000..4500 (arriving 4000, 5500, 7000), then the multicast
///     4500..6000, arriving everywhere at 8500. Rank 1: envelope 4000..5500; rank 3: envelope
///     7000..8500; the data in at 8500 + 1500 + 99999·6 = 609994 for all three.
///   Four ranks on one host (--ppn 4), 20000 bytes: point-to-point (one host), 3 segments
///     (8192, 8192, 3616), root sends segment-major. A full segment holds the NIC
///     1000 + 8191·6 = 50146, so the sends start at k·50146 for k = 0..5 (segments 0 and 1 to
///     1, 2, 3); segment 2 (NIC 1000 + 3615·6 = 22690) to 1 at 300876, to 2 at 323566, to 3 at
///     346256; the root ends at 346256 + 1500 = 347756. Each receiver's last segment arrives
///     4000 later and is in o + 3615·6 = 23190 after: rank 1 at 304876 + 23190 = 328066,
///     rank 2 at 327566 + 23190 = 350756, rank 3 at 350256 + 23190 = 373446.
#[test]
fn imcast_bcast_of_four() {
    let imcast = gen::algo_from_name("imcast-bcast", None, None).unwrap();
    let p = gen::generate(imcast, 4, 0, 1).unwrap();
    assert_eq!(run(&p).end, [4500, 5500, 7000, 8500]);
    let p = gen::generate(imcast, 4, 0, 100_000).unwrap();
    let o = run(&p);
    assert_eq!(o.end, [6000, 609994, 609994, 609994]);
    // Rank 3's envelope receive (action 1, after the multicast receive 0): posted at 0, the
    // envelope in at 8500.
    assert_eq!(o.times(3, 1), (0, 8500));
    let p = gen::generate(imcast.with_ppn(Some(4)), 4, 0, 20_000).unwrap();
    assert_eq!(run(&p).end, [347756, 328066, 350756, 373446]);
}

/// Two hosts of four: the root's first hop is the other host's rank, so the data crosses
/// between hosts before the root serves its own; by IP, the other host's ranks wait for their
/// envelope from their leader, one hop more, but the data comes by the one multicast.
#[test]
fn imcast_bcast_on_two_hosts() {
    let imcast = gen::algo_from_name("imcast", None, None)
        .unwrap()
        .with_ppn(Some(4));
    let o = run(&gen::generate(imcast, 8, 0, 1).unwrap());
    // Root sends to 4 (0..1500), 1, 2, 3; rank 4 receives at 4000..5500, sends to 5, 6, 7
    // at 5500, 7000, 8500 (arriving 9500, 11000, 12500): rank 7 ends at 14000.
    assert_eq!(o.end[4], 10000);
    assert_eq!(o.end[7], 14000);
    let o = run(&gen::generate(imcast, 8, 0, 100_000).unwrap());
    let eager = run(&gen::generate(gen::Algo::EagerMcastBcast, 8, 0, 100_000).unwrap());
    assert!(
        o.max > eager.max && o.max < eager.max + 10_000,
        "{} {}",
        o.max,
        eager.max
    );
}

/// `binomial-isend-bcast` over three ranks, root 0, 2 bytes in segments of 1: the root's
/// children are 1 and 2 (the tree of `binomial-bcast`), which it sends segment 0 to 1, 0 to
/// 2, 1 to 1, 1 to 2. One-byte messages cost no `G`; `o` (1500) outlasts `g` (1000), so
/// the sends take the root's CPU 0..1500, 1500..3000, 3000..4500, 4500..6000 and arrive
/// 4000, 5500, 7000, 8500. Rank 1: in at 5500 and 8500; rank 2: 7000 and 10000. Ends
/// [6000, 8500, 10000]: both children have their copy near the end, as on a shared link;
/// `binomial-bcast` (whole 2-byte messages one after the other, each arriving 6 ns of `G`
/// later) ends [3000, 5506, 7006].
#[test]
fn binomial_isend_bcast_shares_the_root() {
    let algo = gen::Algo::BinomialIsendBcast { segment: 1 };
    let p = gen::generate(algo, 3, 0, 2).unwrap();
    assert_eq!(run(&p).end, [6000, 8500, 10000]);
    let p = gen::generate(gen::Algo::BinomialBcast, 3, 0, 2).unwrap();
    assert_eq!(run(&p).end, [3000, 5506, 7006]);
    // Whole copies, nothing to share (one segment): the binomial tree's own times.
    let p = gen::generate(gen::Algo::BinomialIsendBcast { segment: 8 }, 8, 0, 8).unwrap();
    let q = gen::generate(gen::Algo::BinomialBcast, 8, 0, 8).unwrap();
    assert_eq!(run(&p).end, run(&q).end);
}

#[test]
fn half_a_ns_per_byte_costs_half_the_bytes_after_the_first() {
    // 1001 bytes: the receive completes at o + L + o + max(1000 O, 1000 G) (docs/sim.md);
    // G = 0.5 adds 1000 · 0.5 = 500 ns to G = 0, with O = 0 at both.
    let p = parse("rank #0 { send 0,1001 to 1; }\nrank #1 { recv 0,1001 from 0; }");
    let at = |g: PerByte| {
        let prm = Params {
            gap_per_byte: g,
            ..Params::default()
        };
        run_with(&p, &prm).times(1, 0).1
    };
    assert_eq!(at(PerByte::ns(0)), 5500);
    assert_eq!(at(PerByte::ps(500)), 5500 + 500);
    // The same rule for the CPU's O, and on the NIC's gap after a send.
    let prm = Params {
        gap_per_byte: PerByte::ns(0),
        overhead_per_byte: PerByte::ps(500),
        ..Params::default()
    };
    let o = run_with(&p, &prm);
    assert_eq!(o.end, [1500 + 500, 5500 + 500]);
}

#[test]
fn per_byte_costs_round_to_the_nearest_ns() {
    // One rule everywhere: bytes · ps / 1000, half up; whole ns per byte exactly as before.
    assert_eq!(PerByte::ns(6).time(1000), 6000);
    assert_eq!(PerByte::ps(500).time(1000), 500);
    assert_eq!(PerByte::ps(80).time(1448), 116); // 115.84
    assert_eq!(PerByte::ps(500).time(1), 1); // 0.5: half up
    assert_eq!(PerByte::ps(499).time(1), 0);
    assert_eq!(PerByte::ps(1).time(0), 0);
    assert_eq!(PerByte::ns(u64::MAX / 1000).time(u64::MAX), u64::MAX);
    for (text, ps, shown) in [
        ("0.08", 80, "0.08"),
        ("6", 6000, "6"),
        ("6.000", 6000, "6"),
        (".5", 500, "0.5"),
        ("0.001", 1, "0.001"),
        ("12.345", 12_345, "12.345"),
    ] {
        let v = PerByte::parse("G", text).unwrap();
        assert_eq!(v, PerByte::ps(ps), "{text}");
        assert_eq!(v.to_string(), shown, "{text}");
    }
    assert_eq!(
        PerByte::parse("G", "0.0001").unwrap_err(),
        "G takes at most 3 decimals (1 ps per byte), got `0.0001`"
    );
    assert_eq!(
        PerByte::parse("G", "-1").unwrap_err(),
        "G must not be negative, got `-1`"
    );
    for bad in ["", ".", "x", "1.2.3", "1,5", "+1", "1e3", " 1"] {
        assert!(
            PerByte::parse("O", bad)
                .unwrap_err()
                .starts_with("O wants a non-negative number of ns per byte"),
            "{bad}"
        );
    }
    assert!(PerByte::parse("G", "99999999999999999999")
        .unwrap_err()
        .contains("too large"));
    let mut p = Params::default();
    assert_eq!(p.set_text("mG", "0.08"), Ok(()));
    assert_eq!(p.mcast_gb(), PerByte::ps(80));
    assert!(p.set_text("L", "0.5").is_err());
}

/// Runs `p` with OS noise from `events` (independent offsets from `seed`).
fn run_noisy(p: &Program, prm: &Params, events: &[(u64, u64)], seed: u64) -> Outcome {
    let flat = Flat::from_program(p).unwrap();
    let noise = Noise::new(events.to_vec(), p.num_ranks(), false, seed).unwrap();
    simulate_flat_full(
        &flat,
        prm,
        Options::default(),
        Some(&noise),
        None,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn noise_by_hand() {
    // One message, 1 byte, both ranks reading the trace from its start: an interruption of
    // 300 ns at 1000 and one of 200 at 4500.
    let p = parse(
        "num_ranks 2\nrank 0 {\nl1: send 1b to 1 tag 0\nl2: calc 1000\nl2 requires l1\n}\n\
         rank 1 {\nl1: recv 1b from 0 tag 0\n}\n",
    );
    let flat = Flat::from_program(&p).unwrap();
    let noise = Noise::with_offsets(vec![(1000, 300), (4500, 200)], vec![0, 0]).unwrap();
    let o = simulate_flat_full(
        &flat,
        &Params::default(),
        Options { trace: true },
        Some(&noise),
        None,
        &mut |_, _| {},
    )
    .unwrap();
    // Rank 0: the send's o is 0..1500, and the interruption at 1000 starts within: the CPU
    // is busy until 1800, the send completes then. The message still leaves at o: it
    // arrives at 1500 + 2500 = 4000. The calc runs from 1800 for 1000 ns and meets nothing
    // that starts in 1800..2800: it ends at 2800.
    assert_eq!(o.times(0, 0), (0, 1800));
    assert_eq!(o.times(0, 1), (1800, 2800));
    // Rank 1: takes the message at 4000; its o (4000..5500) meets the one at 4500 (200):
    // in at 5700.
    assert_eq!(o.times(1, 0).1, 5700);
    assert_eq!(o.end, [2800, 5700]);
    assert_eq!(o.noise, 500);
}

/// A token passed from rank to rank along a random path of `hops` messages, with a calc
/// before some hops: at any time one action is under way, so nothing competes for a CPU or
/// NIC.
fn random_token(rng: &mut Rng, n: u32, hops: usize) -> Program {
    let mut b: Vec<Builder> = (0..n).map(|_| Builder::new()).collect();
    let mut last: Vec<Option<u32>> = vec![None; n as usize];
    let push = |b: &mut [Builder], last: &mut [Option<u32>], r: u32, op: Op| {
        let id = b[r as usize].add(op);
        if let Some(prev) = last[r as usize] {
            b[r as usize].requ(prev, id);
        }
        last[r as usize] = Some(id);
    };
    let mut at = 0u32;
    for k in 0..hops {
        if rng.chance(30) {
            let nanos = rng.below(5000) as u64;
            push(&mut b, &mut last, at, Op::Calc { nanos });
        }
        let to = (at + 1 + rng.below(n as usize - 1) as u32) % n;
        let buf = BufRef {
            slot: 0,
            offset: 0,
            len: 1 + rng.below(2000),
        };
        let tag = k as u32;
        push(&mut b, &mut last, at, Op::Send { peer: to, tag, buf });
        push(&mut b, &mut last, to, Op::Recv { peer: at, tag, buf });
        at = to;
    }
    let schedules = b.into_iter().map(|b| b.build().unwrap()).collect();
    Program::from_schedules(schedules, &[])
}

#[test]
fn noise_never_makes_a_rank_finish_earlier_without_competition() {
    // Where nothing competes for a CPU or a NIC (a token passed along a random path), every
    // time is a sum and maximum of costs that noise only lengthens: no rank ends earlier.
    // (Where actions compete, noise can reorder them and a rank, or the whole program, can
    // end earlier: `noise_can_reorder`, and the LogGOPS rules are the same in LogGOPSim.)
    let mut rng = Rng::new(4545);
    for case in 0..600u64 {
        let n = 2 + rng.below(6) as u32;
        let hops = 1 + rng.below(30);
        let p = random_token(&mut rng, n, hops);
        let g = PerByte::ps(rng.below(20_000) as u64);
        let prm = Params {
            eager_limit: 65535,
            ..random_params(&mut rng, g)
        };
        let quiet = run_with(&p, &prm);
        let k = 1 + rng.below(8);
        let events: Vec<(u64, u64)> = (0..k)
            .map(|_| (rng.below(50_000) as u64, 1 + rng.below(3000) as u64))
            .collect();
        let noisy = run_noisy(&p, &prm, &events, case);
        for q in 0..n as usize {
            assert!(
                noisy.end[q] >= quiet.end[q],
                "case {case}: rank {q} ends at {} with noise, {} without",
                noisy.end[q],
                quiet.end[q]
            );
        }
    }
}

#[test]
fn noise_can_reorder() {
    // Noise on one rank can let another rank end earlier: rank 1 sends 366 bytes (A) then
    // 1931 bytes (B) to rank 2, which receives A, sends 1117 bytes (C) to rank 0, then
    // receives B. Quiet: A's send ends at 1500, B's waits for the NIC (1000 + 365·6 = 2190)
    // and starts at 3190; A reaches rank 2 at 4000 and is in at 4000 + 1500 + 2190 = 7690; B
    // arrives at 7190 and takes rank 2's CPU until 8690, so C leaves at 8690 and is in at
    // rank 0 at 8690 + 4000 + 1500 + 1116·6 = 20886. With an interruption of 2191 ns at
    // 1000 on rank 1, A's send holds the CPU until 3691, B starts then and arrives at 7691:
    // C, ready at 7690, takes the CPU first and rank 0 ends 1000 ns earlier, at 19886; rank
    // 2, which now takes B after C, ends later (here the last rank too; on random programs
    // whose ranks each run one chain, noise sometimes makes the whole program end earlier).
    let p = parse(
        "num_ranks 3\nrank 0 {\nl1: recv 1117b from 2 tag 1\n}\n\
         rank 1 {\nl1: send 366b to 2 tag 0\nl2: send 1931b to 2 tag 2\nl2 requires l1\n}\n\
         rank 2 {\nl1: recv 366b from 1 tag 0\nl2: send 1117b to 0 tag 1\n\
         l3: recv 1931b from 1 tag 2\nl2 requires l1\nl3 requires l2\n}\n",
    );
    let quiet = run(&p);
    assert_eq!(quiet.end, [20886, 4690, 20270]);
    let flat = Flat::from_program(&p).unwrap();
    // Rank 1 reads the trace from 0; ranks 0 and 2 from where it is quiet.
    let noise =
        Noise::with_offsets(vec![(1000, 2191), (100_000, 1)], vec![50_000, 0, 50_000]).unwrap();
    let o = simulate_flat_full(
        &flat,
        &Params::default(),
        Options { trace: true },
        Some(&noise),
        None,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(o.times(1, 0), (0, 3691));
    assert_eq!(o.times(2, 1).0, 7690);
    assert_eq!(o.end[0], 19886);
    assert!(o.end[2] > quiet.end[2] && o.max > quiet.max);
}

#[test]
fn noise_on_any_program_adds_nothing_negative() {
    // On the general random programs noise only ever lengthens CPU work; the property test
    // above holds for chains. Here: every run finishes, and the noise reported is what was
    // added (0 exactly when no CPU work met an interruption).
    let mut rng = Rng::new(4546);
    let mut earlier = 0;
    for case in 0..300u64 {
        let n = 2 + rng.below(6) as u32;
        let msgs = 1 + rng.below(30);
        let r = random_program(&mut rng, n, msgs);
        let g = PerByte::ps(rng.below(20_000) as u64);
        let prm = random_params(&mut rng, g);
        let quiet = run_with(&r.p, &prm);
        let events = vec![(rng.below(10_000) as u64, 1 + rng.below(3000) as u64)];
        let noisy = run_noisy(&r.p, &prm, &events, case);
        if noisy.noise == 0 {
            assert_eq!(noisy.end, quiet.end, "case {case}");
        }
        earlier += (0..n as usize)
            .filter(|&q| noisy.end[q] < quiet.end[q])
            .count();
    }
    // Anomalies exist but are rare (see the chain test's comment).
    assert!(earlier < 30, "{earlier} ranks ended earlier with noise");
}
