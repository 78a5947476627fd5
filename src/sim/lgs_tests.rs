//! The simulator against LogGOPSim: the schedules of Schedgen's patterns, written
//! here as Schedgen writes them (LogGOPSim text, labels `l1`, `l2`, ... in Schedgen's order),
//! timed under both receiver-CPU rules. Every LogGOPSim figure below came from LogGOPSim at
//! spcl/LogGOPSim 76451de (its own CMake build, `schedgen ... -o x.goal; txt2bin -i x.goal -o
//! x.bin; LogGOPSim -f x.bin [set B] --batchmode`), run on 2026-11-29; set A is LogGOPSim's
//! defaults, set B is `-L 5000 -o 2000 -g 1500 -G 2 -O 1 -S 1024`. With `recv-cpu loggopsim`
//! every row equals LogGOPSim; with the model's rule (the default) the rows where a receiver
//! takes messages back to back differ by that rule alone (`gather_of_three_by_hand` works the
//! smallest case out).

use super::*;
use crate::goal::{self, Program};
use std::fmt::Write;

/// LogGOPSim text of `ranks` rank bodies (each a list of statements).
fn text(ranks: &[Vec<String>]) -> String {
    let mut s = format!("num_ranks {}\n", ranks.len());
    for (r, body) in ranks.iter().enumerate() {
        let _ = write!(s, "\nrank {r} {{\n");
        for line in body {
            s += line;
            s.push('\n');
        }
        s += "}\n";
    }
    s
}

fn program(ranks: &[Vec<String>]) -> Program {
    goal::lgs::parse(text(ranks).as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .program
}

/// Statements of one rank, labelled in order.
#[derive(Default)]
struct Rank {
    lines: Vec<String>,
    n: usize,
}

impl Rank {
    fn op(&mut self, what: String) -> usize {
        self.n += 1;
        self.lines.push(format!("l{}: {what}", self.n));
        self.n
    }
    fn send(&mut self, bytes: u64, to: u32) -> usize {
        self.op(format!("send {bytes}b to {to} tag 0"))
    }
    fn recv(&mut self, bytes: u64, from: u32) -> usize {
        self.op(format!("recv {bytes}b from {from} tag 0"))
    }
    fn calc(&mut self, ns: u64) -> usize {
        self.op(format!("calc {ns}"))
    }
    fn requires(&mut self, then: usize, first: usize) {
        self.lines.push(format!("l{then} requires l{first}"));
    }
}

/// Schedgen's `--nb NB [--nb-poll P]`: a rank's first statements are a calc of NB ns, or a
/// chain of ceil(NB/P) calcs of P ns.
fn nb_prefix(r: &mut Rank, nb: u64, poll: u64) {
    if nb == 0 {
        return;
    }
    if poll == 0 {
        r.calc(nb);
        return;
    }
    let mut last = 0;
    let mut i = 0;
    while i < nb {
        let cur = r.calc(poll);
        if i > 0 {
            r.requires(cur, last);
        }
        last = cur;
        i += poll;
    }
}

fn gather(n: u32, size: u64) -> Program {
    let ranks: Vec<Vec<String>> = (0..n)
        .map(|r| {
            let mut k = Rank::default();
            if r == 0 {
                for src in 1..n {
                    k.recv(size, src);
                }
            } else {
                k.send(size, 0);
            }
            k.lines
        })
        .collect();
    program(&ranks)
}

fn linear_alltoall(n: u32, size: u64) -> Program {
    let ranks: Vec<Vec<String>> = (0..n)
        .map(|r| {
            let mut k = Rank::default();
            for step in 1..n {
                k.send(size, (r + step) % n);
                k.recv(size, (r + n - step) % n);
            }
            k.lines
        })
        .collect();
    program(&ranks)
}

/// Schedgen's `pipelinedring` (a chain from rank 0): `size / seg` segments of `seg` bytes.
fn pipelined_ring(n: u32, size: u64, seg: u64) -> Program {
    let segs = size / seg;
    let ranks: Vec<Vec<String>> = (0..n)
        .map(|r| {
            let mut k = Rank::default();
            for _ in 0..segs {
                if r == 0 {
                    k.send(seg, 1);
                } else if r == n - 1 {
                    k.recv(seg, r - 1);
                } else {
                    let rv = k.recv(seg, r - 1);
                    let s = k.send(seg, r + 1);
                    k.requires(s, rv);
                }
            }
            k.lines
        })
        .collect();
    program(&ranks)
}

/// Schedgen's `binomialtreebcast` from rank 0, with its `--nb`/`--nb-poll` prefix.
fn binomial(n: u32, size: u64, nb: u64, poll: u64) -> Program {
    let ranks: Vec<Vec<String>> = (0..n)
        .map(|r| {
            let mut k = Rank::default();
            nb_prefix(&mut k, nb, poll);
            let mut mask = 1u32;
            let mut got = None;
            if r > 0 {
                let top = 1u32 << (31 - r.leading_zeros());
                got = Some(k.recv(size, r - top));
                mask = top << 1;
            }
            while (mask as u64) < n as u64 {
                if r + mask < n {
                    let s = k.send(size, r + mask);
                    if let Some(rv) = got {
                        k.requires(s, rv);
                    }
                }
                mask <<= 1;
            }
            k.lines
        })
        .collect();
    program(&ranks)
}

fn set_a() -> Params {
    Params::default()
}

fn set_b() -> Params {
    Params {
        latency: 5000,
        overhead: 2000,
        gap: 1500,
        gap_per_byte: PerByte::ns(2),
        overhead_per_byte: PerByte::ns(1),
        eager_limit: 1024,
        ..Params::default()
    }
}

/// The maximum end under the model's rule and under LogGOPSim's.
fn both(p: &Program, prm: &Params) -> (u64, u64) {
    let run = |recv_cpu| {
        let prm = Params { recv_cpu, ..*prm };
        simulate(p, &prm, Options::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .max
    };
    (run(RecvCpu::Model), run(RecvCpu::LogGOPSim))
}

#[test]
fn the_text_is_schedgens() {
    // `schedgen -p binomialtreebcast -s 4 -d 8 --nb 100 --nb-poll 30`, rank 1, verbatim.
    let ranks: Vec<Vec<String>> = (0..4)
        .map(|r| {
            let mut k = Rank::default();
            nb_prefix(&mut k, 100, 30);
            if r == 1 {
                let rv = k.recv(8, 0);
                let s = k.send(8, 3);
                k.requires(s, rv);
            }
            k.lines
        })
        .collect();
    let t = text(&ranks);
    assert!(t.contains(
        "rank 1 {\nl1: calc 30\nl2: calc 30\nl2 requires l1\nl3: calc 30\nl3 requires l2\n\
         l4: calc 30\nl4 requires l3\nl5: recv 8b from 0 tag 0\nl6: send 8b to 3 tag 0\n\
         l6 requires l5\n}"
    ));
    // The binomial tree's shape: rank 1 of 8 receives from 0, then sends to 3 and 5.
    let p = binomial(8, 8, 0, 0);
    let s = &p.ranks[1].schedule;
    let r1: Vec<String> = (0..s.len() as u32).map(|i| describe(s.op(i))).collect();
    assert_eq!(
        r1,
        [
            "recv 8 bytes from 0 tag 0",
            "send 8 bytes to 3 tag 0",
            "send 8 bytes to 5 tag 0"
        ]
    );
}

#[test]
fn gather_of_three_by_hand() {
    // Ranks 1 and 2 send 1024 bytes at 0; both messages reach rank 0 at o + L = 4000, rank
    // 1's first (it was made first). Rank 0 takes it at 4000: CPU o = 1500, NIC receive side
    // g + 1023·G = 7138 (until 11138), in at 4000 + 1500 + 6138 = 11638.
    // Model: the CPU is free at 5500, so rank 2's message is taken when the NIC is, at 11138,
    // and is in at 11138 + 7638 = 18776.
    // LogGOPSim: the CPU is held until 11638, rank 2's message is taken then: 19276.
    let p = gather(3, 1024);
    assert_eq!(both(&p, &set_a()), (18776, 19276));
    // LogGOPSim 76451de, `schedgen -p gather -s 3 -d 1024`, defaults: 19276.
}

#[test]
fn rows_where_the_receiver_rule_decides() {
    // (what, program, set, mpicast with the model's rule, LogGOPSim = mpicast with
    // `recv-cpu loggopsim`). The model's rule frees the receiver's CPU after o + (s-1)·O, so a
    // receiver taking messages back to back is paced by its NIC, g + (s-1)·G, not by
    // o + (s-1)·G: faster when G > O. The pipelined ring in set B (rendezvous segments of
    // 128 KiB) is slower under it: each stage's CPU, free earlier, takes the next segment's
    // message before it forwards the last one, and the rendezvous makes the next stage wait.
    let rows: [(&str, Program, Params, u64, u64); 8] = [
        (
            "gather 64 1KiB A",
            gather(64, 1024),
            set_a(),
            454194,
            485194,
        ),
        (
            "gather 64 1KiB B",
            gather(64, 1024),
            set_b(),
            230898,
            261898,
        ),
        (
            "gather 1024 1KiB A",
            gather(1024, 1024),
            set_a(),
            7306674,
            7817674,
        ),
        (
            "linear_alltoall 64 1KiB A",
            linear_alltoall(64, 1024),
            set_a(),
            454194,
            733194,
        ),
        (
            "linear_alltoall 64 64KiB B",
            linear_alltoall(64, 65536),
            set_b(),
            8574945,
            12638115,
        ),
        (
            "pipelinedring 64 1KiB segment 128 A",
            pipelined_ring(64, 1024, 128),
            set_a(),
            483220,
            700590,
        ),
        (
            "pipelinedring 1024 1MiB segment 128KiB B",
            pipelined_ring(1024, 1 << 20, 1 << 17),
            set_b(),
            415512748,
            280687041,
        ),
        (
            "binomial --nb 10000 --nb-poll 1000, 4 ranks 1KiB A",
            binomial(4, 1024, 10000, 1000),
            set_a(),
            23276,
            24276,
        ),
    ];
    for (what, p, prm, model, lgs) in &rows {
        assert_eq!(both(p, prm), (*model, *lgs), "{what}");
    }
}

#[test]
fn rows_that_agree_under_both_rules() {
    // The 1-byte rows (no (s-1)·G to overlap) and the overlap of `--nb`: equal to LogGOPSim
    // whichever rule. Before retried actions kept their tie number, the ring of 1-byte
    // segments gave 10780000 and 97020000 (every stage received all before forwarding any)
    // and the 5-rank alltoall 14500; before sends started ahead of a calc ready with them,
    // the `--nb` broadcast gave 56552.
    let rows: [(&str, Program, Params, u64); 7] = [
        (
            "linear_alltoall 5 1B A",
            linear_alltoall(5, 1),
            set_a(),
            12000,
        ),
        (
            "linear_alltoall 8 1B A",
            linear_alltoall(8, 1),
            set_a(),
            21000,
        ),
        (
            "pipelinedring 8 1KiB segment 1 A",
            pipelined_ring(8, 1024, 1),
            set_a(),
            4054000,
        ),
        (
            "pipelinedring 64 1KiB segment 1 A",
            pipelined_ring(64, 1024, 1),
            set_a(),
            4533000,
        ),
        (
            "binomial --nb 10000, 16 ranks 1KiB A",
            binomial(16, 1024, 10000, 0),
            set_a(),
            52552,
        ),
        ("binomial 8 1KiB A", binomial(8, 1024, 0, 0), set_a(), 34914),
        (
            "binomial 1024 1KiB B",
            binomial(1024, 1024, 0, 0),
            set_b(),
            BINOMIAL_1024_B,
        ),
    ];
    for (what, p, prm, lgs) in &rows {
        assert_eq!(both(p, prm), (*lgs, *lgs), "{what}");
    }
}

/// LogGOPSim 76451de: `schedgen -p binomialtreebcast -s 1024 -d 1024`, set B.
const BINOMIAL_1024_B: u64 = 110460;

#[test]
fn ready_order_program_is_the_old_order() {
    // Rank 0 of the `--nb 10000` broadcast has a calc and two sends ready at 0. In program
    // order the calc takes the CPU first (0..10000) and the first send leaves at 10000. Kind
    // first, the first send leaves at 0 (CPU until 1500, NIC until g + 1023·G = 7138); the
    // second waits for the NIC and the calc for the CPU: the calc, free first, runs
    // 1500..11500, and the second send leaves after it.
    let p = binomial(4, 1024, 10000, 0);
    let prm = Params {
        ready_order: ReadyOrder::Program,
        ..Params::default()
    };
    let o = simulate(&p, &prm, Options { trace: true }).unwrap();
    assert_eq!(o.times(0, 1).0, 10000);
    let o = simulate(&p, &Params::default(), Options { trace: true }).unwrap();
    assert_eq!(o.times(0, 1).0, 0);
    assert_eq!(o.times(0, 0), (1500, 11500));
    assert_eq!(o.times(0, 2).0, 11500);
}

#[test]
fn queue_statistics() {
    // The 3-rank gather: rank 0 posts both receives at 0 (a posted queue of 2); each
    // message finds its receive first in the queue (1 entry looked at each).
    let o = simulate(&gather(3, 1024), &set_a(), Options::default()).unwrap();
    assert_eq!(
        o.queues,
        QueueStats {
            posted_max: 2,
            posted_max_rank: 0,
            posted_searched: 2,
            matched_posted: 2,
            ..QueueStats::default()
        }
    );
    // Rank 0 sends tags 0, 1, 2 (leaving at 0, 1500, 3000, in at rank 1 from 4000, 5500,
    // 7000); rank 1 receives tag 2, then 1, then 0. Its receive of tag 2 is posted at 0 (a
    // posted queue of 1); tags 0 and 1 each look at it and wait as unexpected (a queue of 2);
    // tag 2 finds it. The receive of tag 1 then looks at 2 entries, that of tag 0 at 1.
    let p = goal::lgs::parse(
        b"num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\nl2: send 8b to 1 tag 1\n\
          l3: send 8b to 1 tag 2\n}\nrank 1 {\nl1: recv 8b from 0 tag 2\n\
          l2: recv 8b from 0 tag 1\nl3: recv 8b from 0 tag 0\nl2 requires l1\n\
          l3 requires l2\n}\n",
    )
    .unwrap()
    .program;
    let o = simulate(&p, &set_a(), Options::default()).unwrap();
    assert_eq!(
        o.queues,
        QueueStats {
            posted_max: 1,
            posted_max_rank: 1,
            unexpected_max: 2,
            unexpected_max_rank: 1,
            posted_searched: 3,
            unexpected_searched: 3,
            matched_posted: 1,
            matched_unexpected: 2,
        }
    );
}

/// Hands over at most `step` bytes a read: the streamed parser must not care where reads end.
struct Trickle<'a> {
    src: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.src.len());
        buf[..n].copy_from_slice(&self.src[..n]);
        self.src = &self.src[n..];
        Ok(n)
    }
}

/// `text` read a line at a time into the simulator's form (what `mpicast sim` does with
/// LogGOPSim text), `step` bytes a read, with the warnings.
fn streamed(text: &[u8], step: usize) -> (Flat, Vec<goal::Diagnostic>) {
    let mut flat = Flat::new();
    let mut order = Vec::new();
    let warnings = goal::lgs::parse_each(&mut Trickle { src: text, step }, &mut |r, rp| {
        order.push(r);
        flat.push_rank(&rp)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        order.iter().copied().eq(0..order.len() as u32),
        "ranks out of order"
    );
    (flat, warnings)
}

#[test]
fn streamed_text_gives_the_same_program_and_times() {
    let mut programs = vec![
        ("gather 64", gather(64, 1024)),
        ("alltoall 16", linear_alltoall(16, 1)),
        ("ring 8", pipelined_ring(8, 1024, 1)),
        ("binomial nb", binomial(16, 1024, 10000, 1000)),
        // More text than a read chunk: the buffer is cut behind the parser many times.
        ("binomial 4096", binomial(4096, 8, 0, 0)),
    ];
    for (name, algo, n) in [
        ("gen binomial", goal::gen::Algo::BinomialBcast, 300),
        (
            "gen binary tree",
            goal::gen::Algo::BinaryTreeBcast { segment: 1000 },
            33,
        ),
        ("gen chain", goal::gen::Algo::ChainBcast { segment: 512 }, 9),
    ] {
        programs.push((name, goal::gen::generate(algo, n, 0, 4096).unwrap()));
    }
    for (name, p) in &programs {
        let text = goal::print::to_loggopsim(p).unwrap();
        let whole = goal::lgs::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let old = Flat::from_program(&whole.program).unwrap();
        let want = simulate(p, &Params::default(), Options::default()).unwrap();
        for step in [1, 7, 4096, usize::MAX] {
            let (flat, warnings) = streamed(text.as_bytes(), step);
            assert_eq!(flat, old, "{name}, {step} bytes a read");
            assert_eq!(warnings, whole.warnings, "{name}");
            let got = simulate_flat(&flat, &Params::default(), Options::default()).unwrap();
            assert_eq!(got.end, want.end, "{name}: per-rank end times");
            assert_eq!(got.events, want.events, "{name}");
        }
    }
}

/// Files with the dialect's quirks (a block repeated, which replaces the first; statements
/// outside blocks; a missing last `}`; CRLF line ends; text after the last block): the same
/// ranks and warnings streamed as parsed whole, and the same first error for broken text.
#[test]
fn streamed_text_keeps_the_quirks_and_errors() {
    let files = [
        include_str!("../goal/testdata/lgs/bcast8.goal"),
        include_str!("../goal/testdata/lgs/crlf.goal"),
        include_str!("../goal/testdata/lgs/dissemination4.goal"),
        include_str!("../goal/testdata/lgs/quirks.goal"),
        include_str!("../goal/testdata/lgs/ring_pipeline.goal"),
        include_str!("../goal/testdata/lgs/single_rank_implicit.goal"),
        "num_ranks 2\nrank 0 {\nl1: calc 5\n}\nrank 0 {\nl1: calc 7\n}\nrank 1 {\n}\n  trailing\n",
    ];
    for src in files {
        let whole = goal::lgs::parse(src.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{src}"));
        for step in [1, 3, usize::MAX] {
            let mut ranks = Vec::new();
            let warnings = goal::lgs::parse_each(
                &mut Trickle {
                    src: src.as_bytes(),
                    step,
                },
                &mut |_, rp| {
                    ranks.push(rp);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(ranks, whole.program.ranks, "{src}");
            assert_eq!(warnings, whole.warnings, "{src}");
        }
    }
    for bad in [
        "num_ranks 2\nrank 0 {\nl1: calc 5\n}\nrank 1 {\nl1: send 8b to 0\nl2 requires l3\n}\n",
        "num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\n",
        "num_ranks 2\nrank 0 {\n/* open\n\n",
        "num_ranks 2\nrank 0 {\nl1: calc 5\n}\n",
    ] {
        let e = goal::lgs::parse(bad.as_bytes()).unwrap_err();
        let mut n = 0;
        let e2 = goal::lgs::parse_each(
            &mut Trickle {
                src: bad.as_bytes(),
                step: 2,
            },
            &mut |_, _| {
                n += 1;
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(e, e2, "{bad}");
    }
}
