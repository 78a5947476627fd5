//! Parsers, printers, binary form, validation and generators, end to end.

use super::binary::{assemble, load};
use super::gen::{generate, Algo};
use super::print::{to_loggopsim, to_paper};
use super::replay::{self as sim, Buffers};
use super::validate::{validate, BufferSizes};
use super::*;
use crate::sched::func::{Dtype, Func, Opcode, Predef};
use crate::sched::testutil::Rng;
use crate::sched::{BufRef, Op, ANY_PEER, ANY_TAG, SCRATCH_SLOT};

fn paper_ok(src: &str) -> Parsed {
    match paper::parse(src.as_bytes()) {
        Ok(p) => p,
        Err(e) => panic!("{}\n--- input ---\n{src}", e.render("test")),
    }
}

fn lgs_ok(src: &str) -> Parsed {
    match lgs::parse(src.as_bytes()) {
        Ok(p) => p,
        Err(e) => panic!("{}\n--- input ---\n{src}", e.render("test")),
    }
}

fn paper_err(src: &str) -> Diagnostic {
    match paper::parse(src.as_bytes()) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(e) => e,
    }
}

fn lgs_err(src: &str) -> Diagnostic {
    match lgs::parse(src.as_bytes()) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(e) => e,
    }
}

fn at(d: &Diagnostic, line: u32, col: u32, needle: &str) {
    assert_eq!(
        (d.loc.line, d.loc.col),
        (line, col),
        "location of: {}",
        d.message
    );
    assert!(
        d.message.contains(needle),
        "`{}` lacks `{needle}`",
        d.message
    );
}

/// text -> program -> binary -> program is the identity, and printing both gives the same
/// text, which parses back to the same program again.
fn round_trip(p: &Program) {
    let bin = assemble(p).expect("assembles");
    let q = load(&bin).unwrap_or_else(|e| panic!("own output does not load: {e}"));
    assert_eq!(&q, p, "binary round trip");
    let t1 = to_paper(p);
    let t2 = to_paper(&q);
    assert_eq!(t1, t2);
    let again = paper_ok(&t1).program;
    assert_eq!(to_paper(&again), t1, "paper text is a fixed point");
    let bin2 = assemble(&again).unwrap();
    assert_eq!(to_paper(&load(&bin2).unwrap()), t1);
    if let Ok(l1) = to_loggopsim(p) {
        let back = lgs_ok(&l1).program;
        assert_eq!(
            to_loggopsim(&back).unwrap(),
            l1,
            "LogGOPSim text is a fixed point"
        );
        if !print::uses_buffers(p) {
            assert_eq!(
                back.ranks, p.ranks,
                "LogGOPSim text keeps a traffic replay exactly"
            );
        }
    }
}

fn no_diagnostics(p: &Parsed) {
    let d = validate(&p.program, Some(&p.source), &BufferSizes::default());
    assert!(d.is_empty(), "{:#?}", d);
}

// ------------------------------------------------------------------ the paper's dialect

const EXAMPLE2: &str = include_str!("testdata/paper/example2.goal");

#[test]
fn example2_parses_as_in_the_paper() {
    let p = paper_ok(EXAMPLE2);
    no_diagnostics(&p);
    let prog = &p.program;
    assert_eq!(prog.num_ranks(), 3);
    let r0 = &prog.ranks[0].schedule;
    assert_eq!(r0.len(), 4);
    let sum8 = Func::Predef(Predef::new(Opcode::Sum, Dtype::Int8).unwrap());
    assert_eq!(
        *r0.op(2),
        Op::Exec {
            func: sum8,
            src: BufRef {
                slot: 0,
                offset: 501,
                len: 1
            },
            dst: BufRef {
                slot: 0,
                offset: 503,
                len: 1
            },
        }
    );
    // Example 4: r1 and r2 independent, e1 and e2 with one source each.
    assert_eq!(r0.initially_ready().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(r0.dependents(0), [2]);
    assert_eq!(r0.prerequisites(3), 1);
    assert_eq!(prog.ranks[1], prog.ranks[2]);
    assert_eq!(p.source.action(0, 2), Loc { line: 6, col: 3 });
    round_trip(prog);
    // The EBNF-strict spelling is the same program.
    let strict = paper_ok(include_str!("testdata/paper/example2_ebnf.goal"));
    assert_eq!(strict.program, *prog);
}

#[test]
fn example2_gives_real_sums_on_three_ranks() {
    let p = paper_ok(EXAMPLE2).program;
    for seed in 0..50 {
        let mut bufs: Vec<Buffers> = (0..3).map(|_| vec![vec![0u8; 600]]).collect();
        bufs[0][0][501] = 10;
        bufs[0][0][502] = 20;
        bufs[1][0][501] = 7;
        bufs[2][0][501] = 250; // 20 + 250 wraps in Int8 arithmetic to 14
        let out = sim::run(&p, bufs, seed).unwrap();
        assert_eq!(out[0][0][503], 17, "seed {seed}: d00 + d01");
        assert_eq!(out[0][0][504], 14, "seed {seed}: d10 + d02");
        assert_eq!(out[0][0][501], 10, "inputs stay");
    }
}

#[test]
fn paper_corpus_parses_validates_round_trips() {
    for (name, text) in [
        ("example2", EXAMPLE2),
        (
            "example2_ebnf",
            include_str!("testdata/paper/example2_ebnf.goal"),
        ),
        ("local_view", include_str!("testdata/paper/local_view.goal")),
        (
            "mcast_named",
            include_str!("testdata/paper/mcast_named.goal"),
        ),
        (
            "all_functions",
            include_str!("testdata/paper/all_functions.goal"),
        ),
    ] {
        let p = paper_ok(text);
        let d = validate(&p.program, Some(&p.source), &BufferSizes::default());
        assert!(validate::is_valid(&d), "{name}: {d:#?}");
        round_trip(&p.program);
        // Auto-detection finds the dialect.
        assert_eq!(
            parse_any(text.as_bytes()).unwrap().program,
            p.program,
            "{name}"
        );
    }
    let lv = paper_ok(include_str!("testdata/paper/local_view.goal")).program;
    assert!(lv.local_view);
    assert_eq!(lv.ranks[0].schedule.len(), 4);
    let mc = paper_ok(include_str!("testdata/paper/mcast_named.goal")).program;
    assert_eq!(mc.buffers, ["buf", "data", "out"]);
}

#[test]
fn multicast_program_delivers() {
    let p = paper_ok(include_str!("testdata/paper/mcast_named.goal")).program;
    for seed in 0..20 {
        let bufs: Vec<Buffers> = (0..4u8)
            .map(|r| vec![vec![], vec![r; 64], vec![0; 64]])
            .collect();
        let out = sim::run(&p, bufs, seed).unwrap();
        for (r, b) in out.iter().enumerate().skip(1) {
            assert_eq!(b[2], vec![0u8; 64], "rank {r} copied root's data");
        }
    }
}

#[test]
fn paper_errors_say_where_and_what() {
    at(
        &paper_err("rank #0 {\n  send 0,1 too 1;\n}"),
        2,
        12,
        "expected `to`, found `too`",
    );
    at(
        &paper_err("rank #0 {\n  a: send 0,1 to 1;\n  requ a -> b;\n}"),
        3,
        13,
        "no action is labelled `b`",
    );
    at(
        &paper_err("rank #0 {\n a: calc 1;\n b: calc 2;\n requ a -> b;\n requ b -> a;\n}"),
        4,
        2,
        "cycle",
    );
    at(
        &paper_err("rank #0 { a: calc 1; requ a -> a; }"),
        1,
        22,
        "requires itself",
    );
    at(
        &paper_err("rank #0 { a: calc 1; a: calc 2; }"),
        1,
        22,
        "already defined",
    );
    at(&paper_err("rank #0 { send: calc 1; }"), 1, 11, "keyword");
    at(
        &paper_err("rank #0 { exec sumFloat8 with 0,1 1,1; }"),
        1,
        16,
        "Float8",
    );
    at(
        &paper_err("rank #0 { exec bandFloat32 with 0,4 4,4; }"),
        1,
        16,
        "bitwise",
    );
    at(
        &paper_err("rank #0 { exec frob with 0,4 4,4; }"),
        1,
        16,
        "expected a function",
    );
    let d = diags(
        "rank #0 { send 0,1 to 0 tag any; recv 1,1 from any tag any; }",
        &[],
    );
    assert_eq!(d.len(), 1, "{d:?}");
    at(&d[0], 1, 11, "MPI has no such send");
    at(
        &paper_err("rank #0 { send 0,1 to 1 }"),
        1,
        25,
        "expected `;`",
    );
    at(
        &paper_err("rank #0 { send 0,1 to 1;"),
        1,
        25,
        "expected a statement or `}`",
    );
    at(
        &paper_err("rank #0 {} rank #0 {}"),
        1,
        17,
        "already has a block",
    );
    at(
        &paper_err("num_ranks 2; rank #2 {}"),
        1,
        19,
        "not below num_ranks 2",
    );
    at(&paper_err("send 0,1 to 1; rank #0 {}"), 1, 16, "local view");
    at(
        &paper_err("rank #0 {} send 0,1 to 1;"),
        1,
        12,
        "outside a `rank` block",
    );
    at(&paper_err(""), 1, 1, "empty program");
    at(
        &paper_err("rank #0 { send 99999999999999999999,1 to 1; }"),
        1,
        16,
        "64 bits",
    );
    at(
        &paper_err("rank #0 { send scratch+4,1 to 1; }"),
        1,
        24,
        "scratch",
    );
    // `#` outside a rank list is a comment, inside it a rank.
    let p = paper_ok("rank #1 { # comment #2\n calc 5; } # rank #3 {}");
    assert_eq!(p.program.num_ranks(), 2);
}

// ------------------------------------------------------------------ LogGOPSim's dialect

#[test]
fn lgs_reads_schedgen_output() {
    let p = lgs_ok(include_str!("testdata/lgs/bcast8.goal"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    no_diagnostics(&p);
    let r1 = &p.program.ranks[1];
    assert_eq!(r1.schedule.len(), 3);
    assert_eq!(
        *r1.schedule.op(0),
        Op::Recv {
            peer: 0,
            tag: 0,
            buf: BufRef {
                slot: SCRATCH_SLOT,
                offset: 0,
                len: 1024
            }
        }
    );
    assert_eq!(r1.schedule.dependents(0), [1, 2]);
    assert_eq!(r1.label(2), Some("l3"));
    round_trip(&p.program);
    // Printing in the LogGOPSim dialect gives back the file (modulo its blank lines).
    let text = to_loggopsim(&p.program).unwrap();
    let squash = |s: &str| {
        s.lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let original = include_str!("testdata/lgs/bcast8.goal");
    // schedgen writes the requires right after the send; we write them after all actions.
    let sorted = |s: String| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(squash(&text)), sorted(squash(original)));
}

#[test]
fn lgs_corpus_parses_validates_round_trips() {
    for (name, text) in [
        ("bcast8", include_str!("testdata/lgs/bcast8.goal")),
        (
            "dissemination4",
            include_str!("testdata/lgs/dissemination4.goal"),
        ),
        ("quirks", include_str!("testdata/lgs/quirks.goal")),
        ("crlf", include_str!("testdata/lgs/crlf.goal")),
        (
            "ring_pipeline",
            include_str!("testdata/lgs/ring_pipeline.goal"),
        ),
        (
            "single_rank_implicit",
            include_str!("testdata/lgs/single_rank_implicit.goal"),
        ),
    ] {
        let p = lgs_ok(text);
        let d = validate(&p.program, Some(&p.source), &BufferSizes::default());
        assert!(validate::is_valid(&d), "{name}: {d:#?}");
        round_trip(&p.program);
        assert_eq!(
            parse_any(text.as_bytes()).unwrap().program,
            p.program,
            "{name}"
        );
        // A traffic replay runs in the simulation on scratch buffers.
        let bufs = vec![vec![Vec::new()]; p.program.ranks.len()];
        sim::run(&p.program, bufs, 7).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn lgs_quirks_are_read_like_txt2bin() {
    let p = lgs_ok(include_str!("testdata/lgs/quirks.goal"));
    let r0 = &p.program.ranks[0];
    // l2:send8bto2tag6cpu1nic2
    assert_eq!(
        *r0.schedule.op(1),
        Op::Send {
            peer: 2,
            tag: 6,
            buf: BufRef {
                slot: SCRATCH_SLOT,
                offset: 0,
                len: 8
            }
        }
    );
    assert_eq!(r0.hints[1], Hint { cpu: 1, nic: 2 });
    assert!(matches!(
        r0.schedule.op(2),
        Op::Recv {
            peer: ANY_PEER,
            tag: ANY_TAG,
            ..
        }
    ));
    // Labels `to` and `tag`; `tag irequires to`.
    assert_eq!(r0.label(3), Some("to"));
    assert_eq!(r0.schedule.start_dependents(3), [4]);
    // The send outside a block went to rank 2, and the file ended inside rank 2's block.
    let r2 = &p.program.ranks[2];
    assert_eq!(r2.schedule.len(), 2);
    assert_eq!(r2.schedule.dependents(0), [1]);
    let w: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        w.iter().any(|m| m.contains("outside a `rank N { }` block")),
        "{w:?}"
    );
    assert!(w.iter().any(|m| m.contains("missing `}`")), "{w:?}");
    // Printing in the paper dialect renames labels it reserves.
    let text = to_paper(&p.program);
    assert!(text.contains("to_: calc 100;"), "{text}");
}

#[test]
fn lgs_edge_cases() {
    // Trailing text after the last block is ignored, with a warning.
    let p = lgs_ok("num_ranks 1\nrank 0 {\n}\n!!! not goal at all {{{");
    assert_eq!(p.warnings.len(), 1);
    at(&p.warnings[0], 4, 1, "ignored");
    // Duplicate label: the first wins.
    let p = lgs_ok("num_ranks 1\nrank 0 {\na: calc 1\na: calc 2\nb: calc 3\nb requires a\n}\n");
    assert_eq!(p.program.ranks[0].schedule.dependents(0), [2]);
    assert_eq!(p.program.ranks[0].label(1), None);
    assert!(p.warnings[0].message.contains("first definition"));
    // A repeated block replaces the first.
    let p = lgs_ok("num_ranks 2\nrank 0 {\ncalc 1\n}\nrank 0 {\ncalc 2\ncalc 3\n}\nrank 1 {\n}\n");
    assert_eq!(p.program.ranks[0].schedule.len(), 2);
    // Whitespace at a line start is skipped (txt2bin mis-scans it: see lgs.rs).
    let p = lgs_ok("num_ranks 1\nrank 0 {\n   a: calc 1\n\t}\n");
    assert_eq!(p.program.ranks[0].schedule.len(), 1);
    // Numbers wider than their field are truncated like txt2bin does, with a warning.
    let p = lgs_ok("num_ranks 1\nrank 0 {\ncalc 1 cpu 257\n}\n");
    assert_eq!(p.program.ranks[0].hints[0].cpu, 1);
    assert!(p.warnings[0].message.contains("8 bits"));
    // Empty file, and blocks that never reach the last rank.
    at(&lgs_err(""), 1, 1, "number of ranks is undefined");
    at(
        &lgs_err("num_ranks 3\nrank 0 {\n}\n"),
        4,
        1,
        "ends before the block of rank 2",
    );
    at(
        &lgs_err("num_ranks 2\nrank 1 {\n}\n"),
        2,
        6,
        "first block is rank 1",
    );
    at(
        &lgs_err("num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\n"),
        4,
        6,
        "rank order",
    );
    at(
        &lgs_err("num_ranks 1\nrank 3 {\n}\n"),
        2,
        6,
        "not below num_ranks",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend 8b to 0 // c\n}\n"),
        3,
        14,
        "`tag`, `cpu`, `nic` or a line end",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend8b to 0\n}\n"),
        3,
        8,
        "expected `:`, `requires`",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend 8 to 0\n}\n"),
        3,
        8,
        "`b` after the size",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend 8b from 0\n}\n"),
        3,
        9,
        "expected `to`",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend 8b to -1\n}\n"),
        3,
        12,
        "no wildcard",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\ncalc 5 nic 1\n}\n"),
        3,
        8,
        "`cpu` or a line end",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nsend 8b to 0 cpu 1 tag 0\n}\n"),
        3,
        20,
        "`nic` or a line end",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\nb: calc 1\nb requires a\na: calc 2\n}\n"),
        4,
        12,
        "not defined",
    );
    at(
        &lgs_err("num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\na requires b\nb requires a\n}\n"),
        5,
        1,
        "cycle",
    );
    at(&lgs_err("num_ranks 2\n}\n}\n"), 3, 1, "closes no block");
    at(&lgs_err("num_ranks 1\n/* open"), 2, 1, "never closed");
    at(
        &lgs_err("num_ranks 1\nrank 0 {\ncalc 1\r\r\n}\n"),
        3,
        7,
        "line end",
    );
    at(
        &lgs_err("num_ranks 2\nrank 0 {\n}\nnum_ranks 3\n"),
        4,
        11,
        "changes",
    );
}

// ------------------------------------------------------------------ binary form

#[test]
fn binary_rejects_damage_without_panicking() {
    let progs = [
        paper_ok(EXAMPLE2).program,
        paper_ok(include_str!("testdata/paper/all_functions.goal")).program,
        lgs_ok(include_str!("testdata/lgs/ring_pipeline.goal")).program,
    ];
    let mut rng = Rng::new(42);
    for p in &progs {
        let bin = assemble(p).unwrap();
        assert_eq!(&bin[..8], &binary::MAGIC);
        for cut in 0..bin.len() {
            assert!(load(&bin[..cut]).is_err(), "truncated at {cut} loads");
        }
        for _ in 0..20_000 {
            let mut b = bin.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.next_u64() as u8;
            }
            if let Ok(q) = load(&b) {
                // Whatever loads is a consistent program that survives another round.
                assert_eq!(load(&assemble(&q).unwrap()).unwrap(), q);
            }
        }
    }
    let mut bin = assemble(&progs[0]).unwrap();
    bin[8] = 2;
    assert!(load(&bin).unwrap_err().message.contains("version 2"));
    assert!(load(b"#!goal").is_err());
}

// ------------------------------------------------------------------ validation

fn diags(src: &str, sizes: &[(&str, usize)]) -> Vec<Diagnostic> {
    let p = parse_any(src.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let sizes = BufferSizes(sizes.iter().map(|&(n, s)| (n.to_string(), s)).collect());
    validate(&p.program, Some(&p.source), &sizes)
}

#[test]
fn validation_finds_what_matching_needs() {
    let d = diags(
        "rank #0 {\n send 0,4 to 1;\n send 0,4 to 1 tag 2;\n}\nrank #1 {\n recv 0,4 from 0;\n recv 4,2 from 0 tag 3;\n}\n",
        &[],
    );
    let msgs: Vec<String> = d.iter().map(|d| d.render("f")).collect();
    assert_eq!(d.len(), 2, "{msgs:#?}");
    at(&d[0], 3, 2, "tag 2 has no matching receive");
    at(&d[1], 7, 2, "tag 3 has no matching send");
    // Sizes of matched pairs; truncation is an error, a short message a warning.
    let d = diags(
        "rank #0 { send 0,8 to 1; send 0,2 to 1; }\nrank #1 { recv 0,4 from 0; recv 4,4 from 0; }",
        &[],
    );
    assert_eq!(d.len(), 2);
    assert!(
        d[0].is_error() && d[0].message.contains("truncated"),
        "{:?}",
        d[0]
    );
    assert!(!d[1].is_error() && d[1].message.contains("only 2 bytes"));
    // Wildcards take what is left.
    let d = diags(
        "rank #0 { recv 0,4 from any tag any; recv 4,4 from 2 tag any; }\nrank #1 { send 0,4 to 0 tag 9; }\nrank #2 { send 0,4 to 0 tag 1; }",
        &[],
    );
    assert!(d.is_empty(), "{d:?}");
    // Peers out of range, multicast without receivers, exec lengths, buffer sizes.
    let d = diags(
        "num_ranks 2;\nrank #0 { send 0,4 to 5; mcast x+0,4; exec sumInt32 with 0,4 4,3; }\nrank #1 { mrecv x+0,2 from 1; calc 3; }",
        &[("x", 3), ("buf", 6)],
    );
    let msgs: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
    for needle in [
        "send to rank 5",
        "outside its 3 bytes",
        "equal lengths",
        "bytes 4..7 of buffer `buf`",
        "multicast receive from this rank itself",
        "has no `mrecv ... from 0` on rank 1",
    ] {
        assert!(
            msgs.iter().any(|m| m.contains(needle)),
            "{needle}: {msgs:#?}"
        );
    }
}

#[test]
fn validation_warns_about_unordered_overlaps() {
    let d = diags(
        "rank #0 {\n a: recv 0,8 from 1;\n b: send 4,8 to 1;\n c: exec copyUInt8 with 100,4 4,4;\n requ c -> a;\n}\nrank #1 { send 0,8 to 0; recv 0,8 from 0; }",
        &[],
    );
    let w: Vec<&Diagnostic> = d.iter().filter(|d| d.rank == Some(0)).collect();
    assert_eq!(w.len(), 2, "{d:#?}");
    at(w[0], 3, 2, "`b` and `a`");
    at(w[1], 4, 2, "`c` and `b`");
    // Ordered through a chain: no warning.
    let d = diags(
        "rank #0 { a: recv 0,8 from 1; x: calc 1; b: send 0,8 to 1; requ x -> a; requ b -> x; }\nrank #1 { send 0,8 to 0; recv 8,8 from 0; }",
        &[],
    );
    assert!(d.is_empty(), "{d:?}");
}

// ------------------------------------------------------------------ generators

fn int32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

#[test]
fn binomial_broadcast_delivers_for_1_to_64_ranks() {
    for n in 1..=64u32 {
        for root in [0, n / 2, n - 1] {
            let p = generate(Algo::BinomialBcast, n, root, 16).unwrap();
            assert!(
                validate(&p, None, &BufferSizes::default()).is_empty(),
                "n {n}"
            );
            round_trip(&p);
            let bufs: Vec<Buffers> = (0..n)
                .map(|r| {
                    vec![if r == root {
                        (0..16).collect()
                    } else {
                        vec![0xee; 16]
                    }]
                })
                .collect();
            let out = sim::run(&p, bufs, u64::from(n * 100 + root)).unwrap();
            for (r, b) in out.iter().enumerate() {
                assert_eq!(
                    b[0],
                    (0..16).collect::<Vec<u8>>(),
                    "n {n} root {root} rank {r}"
                );
            }
        }
    }
}

#[test]
fn dissemination_allreduce_sums_for_1_to_64_ranks() {
    let sum = Func::Predef(Predef::new(Opcode::Sum, Dtype::Int32).unwrap());
    for n in 1..=64u32 {
        for ways in 1..=3 {
            let algo = Algo::DisseminationAllreduce { ways, func: sum };
            let p = generate(algo, n, 0, 12).unwrap();
            let d = validate(&p, None, &BufferSizes::default());
            assert!(d.is_empty(), "n {n} ways {ways}: {d:#?}");
            round_trip(&p);
            let input = |r: u32| [r as i32 + 1, 1000 * r as i32, -(r as i32)];
            let expect: Vec<i32> = (0..3).map(|k| (0..n).map(|r| input(r)[k]).sum()).collect();
            for seed in 0..3 {
                let bufs: Vec<Buffers> = (0..n)
                    .map(|r| vec![int32s(&input(r)), vec![0; 12 * ways as usize]])
                    .collect();
                let out = sim::run(&p, bufs, u64::from(n) * 10 + seed)
                    .unwrap_or_else(|e| panic!("n {n} ways {ways}: {e}"));
                for (r, b) in out.iter().enumerate() {
                    assert_eq!(b[0], int32s(&expect), "n {n} ways {ways} rank {r}");
                }
            }
        }
    }
}

#[test]
fn multicast_generators_validate_and_deliver() {
    for n in 1..=64u32 {
        for algo in [
            Algo::ScoutTreeBcast,
            Algo::ScoutLinearBcast,
            Algo::McastBarrier,
        ] {
            let root = n - 1;
            let p = generate(algo, n, root, 32).unwrap();
            let d = validate(&p, None, &BufferSizes::default());
            assert!(d.is_empty(), "{algo:?} n {n}: {d:#?}");
            round_trip(&p);
            let src = if algo == Algo::McastBarrier { 0 } else { root };
            let bufs: Vec<Buffers> = (0..n)
                .map(|r| vec![if r == src { vec![7; 32] } else { vec![0; 32] }])
                .collect();
            let out = sim::run(&p, bufs, u64::from(n)).unwrap();
            if algo != Algo::McastBarrier {
                assert!(out.iter().all(|b| b[0] == vec![7; 32]), "{algo:?} n {n}");
            }
        }
    }
}

#[test]
fn generated_text_is_stable_and_dot_renders() {
    let p = generate(Algo::BinomialBcast, 4, 0, 8).unwrap();
    let text = to_paper(&p);
    assert_eq!(
        text,
        "num_ranks 4;\nrank #0 {\n  send 0,8 to 1;\n  send 0,8 to 2;\n}\nrank #1 {\n  a0: recv 0,8 from 0;\n  a1: send 0,8 to 3;\n  requ a1 -> a0;\n}\nrank #2 {\n  recv 0,8 from 0;\n}\nrank #3 {\n  recv 0,8 from 1;\n}\n"
    );
    let dot = dot::to_dot(&p);
    assert!(dot.starts_with("digraph goal {"));
    assert!(dot.contains("r1_0 -> r1_1;"));
    assert!(dot.contains("r0_0 -> r1_0 [style=dotted"));
    assert!(dot.trim_end().ends_with('}'));
}

/// The program of LogGOPSim text `src` as LogGOPSim's txt2bin stores it (the format of the
/// differential oracle used while writing `lgs`; see docs/goal.md): per rank its actions in
/// order (kind, peer, size, tag, cpu, nic) and its edges sorted, or `REJECT` and why.
fn txt2bin_form(src: &[u8]) -> String {
    let p = match lgs::parse(src) {
        Err(e) => return format!("REJECT {}\n", e.render("f")),
        Ok(p) => p,
    };
    let mut s = String::new();
    let n = p.program.num_ranks();
    for (r, rp) in p.program.ranks.iter().enumerate() {
        s += &format!("rank {r} of {n}\n");
        for (id, op) in rp.schedule.actions() {
            let h = rp.hints[id as usize];
            let (t, peer, size, tag) = match *op {
                Op::Send { peer, tag, buf } => ('S', peer, buf.len as u64, tag),
                Op::Recv { peer, tag, buf } => ('R', peer, buf.len as u64, tag),
                Op::Calc { nanos } => ('C', 0, nanos, 0),
                _ => unreachable!(),
            };
            s += &format!(
                "  {t} peer {peer} size {size} tag {tag} cpu {} nic {}\n",
                h.cpu, h.nic
            );
        }
        let mut edges = Vec::new();
        for (id, _) in rp.schedule.actions() {
            for &d in rp.schedule.dependents(id) {
                edges.push(format!("  {d} requires {id}\n"));
            }
            for &d in rp.schedule.start_dependents(id) {
                edges.push(format!("  {d} irequires {id}\n"));
            }
        }
        edges.sort();
        s += &edges.concat();
    }
    s
}

/// The txt2bin form says what the files say, read by hand: bcast8.goal's ranks 0, 1 and 7
/// (actions in the order written, `l2 requires l1` as action 1 requiring action 0), and
/// quirks.goal's statements that txt2bin's scanner reads in its own way (`cpu1nic2` glued,
/// `from -1` as any source, `tag -1` as any tag, a statement after `}` in the next block).
#[test]
fn txt2bin_form_says_what_the_files_say() {
    let bcast8 = txt2bin_form(include_bytes!("testdata/lgs/bcast8.goal"));
    let rank = |text: &str, r: usize| -> String {
        let from = text.find(&format!("rank {r} of ")).unwrap();
        let rest = &text[from..];
        let to = rest[1..].find("rank ").map_or(rest.len(), |i| i + 1);
        rest[..to].to_string()
    };
    let send = |peer: u32| format!("  S peer {peer} size 1024 tag 0 cpu 0 nic 0\n");
    let recv = |peer: u32| format!("  R peer {peer} size 1024 tag 0 cpu 0 nic 0\n");
    assert_eq!(
        rank(&bcast8, 0),
        format!("rank 0 of 8\n{}{}{}", send(1), send(2), send(4))
    );
    assert_eq!(
        rank(&bcast8, 1),
        format!(
            "rank 1 of 8\n{}{}{}  1 requires 0\n  2 requires 0\n",
            recv(0),
            send(3),
            send(5)
        )
    );
    assert_eq!(rank(&bcast8, 7), format!("rank 7 of 8\n{}", recv(3)));
    assert_eq!(bcast8.matches("rank ").count(), 8, "{bcast8}");

    let quirks = txt2bin_form(include_bytes!("testdata/lgs/quirks.goal"));
    let r0 = rank(&quirks, 0);
    assert!(r0.starts_with("rank 0 of 3\n  S peer 1 size 8 tag 5 cpu 0 nic 0\n  S peer 2 size 8 tag 6 cpu 1 nic 2\n"), "{r0}");
    assert!(
        r0.contains("  R peer 4294967295 size 16 tag 4294967295 cpu 0 nic 0\n"),
        "{r0}"
    );
    assert!(
        r0.contains("  C peer 0 size 200 tag 0 cpu 3 nic 0\n"),
        "{r0}"
    );
    assert!(r0.contains("  1 requires 0\n"), "{r0}");
    assert!(r0.contains(" irequires 3\n"), "{r0}");
    let r2 = rank(&quirks, 2);
    assert!(
        r2.contains("  S peer 0 size 16 tag 77 cpu 0 nic 0\n"),
        "{r2}"
    );
    assert!(r2.contains("  R peer 0 size 8 tag 6 cpu 0 nic 0\n"), "{r2}");

    let refused = txt2bin_form(b"num_ranks 1\nrank 0 {\nl1: send 8b to 0\nl1 requires l1\n}\n");
    assert!(refused.starts_with("REJECT "), "{refused}");
}

/// Not a test: the tool of that comparison. Run with
/// `GOAL_DUMP_DIR=dir cargo test --lib goal::tests::dump_for_txt2bin_diff -- --ignored`:
/// writes `txt2bin_form` of every `*.goal` in `dir` to `<file>.mpicast` beside it.
#[test]
#[ignore]
fn dump_for_txt2bin_diff() {
    let dir = std::env::var("GOAL_DUMP_DIR").expect("GOAL_DUMP_DIR names the directory");
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "goal") {
            continue;
        }
        let mut o = path.clone().into_os_string();
        o.push(".mpicast");
        std::fs::write(o, txt2bin_form(&std::fs::read(&path).unwrap())).unwrap();
    }
}

/// Found by `goal_parse`: a send target of 2^32-1 (written so, or truncated to it) printed as
/// `to -1`, which txt2bin refuses.
#[test]
fn fuzz_regressions() {
    let p = lgs_ok("num_ranks 1\nrank 0 {\nsend 4b to 4294967295\n}\n");
    assert!(matches!(
        p.program.ranks[0].schedule.op(0),
        Op::Send { peer: u32::MAX, .. }
    ));
    let text = to_loggopsim(&p.program).unwrap();
    assert!(text.contains("to 4294967295 tag 0"), "{text}");
    assert_eq!(lgs_ok(&text).program, p.program);
    round_trip(&p.program);
}

// ---------------------------------------------------------------- streamed binary schedules

/// Starts and completes every action at once, recording the operations in start order.
struct Immediate(Vec<Op>);

impl crate::sched::Backend for Immediate {
    type Error = std::convert::Infallible;
    fn start(
        &mut self,
        id: crate::sched::ActionId,
        op: &Op,
        done: &mut Vec<crate::sched::ActionId>,
    ) -> Result<(), Self::Error> {
        self.0.push(op.clone());
        done.push(id);
        Ok(())
    }
    fn progress(&mut self, _: &mut Vec<crate::sched::ActionId>) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[test]
fn streamed_sections_run_the_same_actions_through_any_window() {
    use crate::sched::{Execution, WindowedExecution};
    let algos = [
        Algo::BinomialBcast,
        Algo::DisseminationAllreduce {
            ways: 2,
            func: Func::Predef(Predef::new(Opcode::Sum, Dtype::Int32).unwrap()),
        },
        Algo::ScoutTreeBcast,
    ];
    for algo in algos {
        for n in [1u32, 2, 5, 16] {
            let p = generate(algo, n, 0, 64).unwrap();
            let bin = assemble(&p).unwrap();
            for rank in 0..n {
                let (info, _) = super::binary::stream_rank(&bin, rank).unwrap();
                let sched = &p.ranks[rank as usize].schedule;
                assert_eq!(info.actions, sched.len());
                assert_eq!(info.num_ranks, n);
                assert_eq!(
                    info.has_mcast,
                    matches!(algo, Algo::ScoutTreeBcast) && n > 1
                );
                // Each window over a fresh stream, and over one resumed from `info.start`
                // (what every run of a streamed file after its load reads).
                for (w, resumed) in [1usize, 2, 7]
                    .into_iter()
                    .flat_map(|w| [(w, false), (w, true)])
                {
                    let stream = if resumed {
                        super::binary::resume(&bin, info.start)
                    } else {
                        super::binary::stream_rank(&bin, rank).unwrap().1
                    };
                    let mut got = Immediate(Vec::new());
                    let mut ex = WindowedExecution::new(stream, w);
                    ex.wait(&mut got).unwrap();
                    assert_eq!(ex.fault(), None);
                    assert!(ex.peak_window() <= w);
                    let mut want = Immediate(Vec::new());
                    Execution::new(sched).wait(&mut want).unwrap();
                    let key = |o: &Op| format!("{o:?}");
                    let mut a: Vec<String> = got.0.iter().map(key).collect();
                    let mut b: Vec<String> = want.0.iter().map(key).collect();
                    a.sort();
                    b.sort();
                    assert_eq!(
                        a, b,
                        "{algo:?} n {n} rank {rank} window {w} resumed {resumed}"
                    );
                }
            }
        }
    }
}

#[test]
fn streams_refuse_backward_edges_and_report_bad_counters() {
    use crate::sched::WindowedExecution;
    // `a` requires `b`, which comes later: not streamable.
    let p = paper_ok("num_ranks 1;\nrank #0 { a: calc 1; b: calc 2; requ a -> b; }\n").program;
    let bin = assemble(&p).unwrap();
    let e = super::binary::stream_rank(&bin, 0).err().expect("refused");
    assert!(e.message.contains("before its dependents"), "{e}");
    // The same in order streams; then a sources counter raised by hand makes the run stop
    // with a fault instead of waiting forever.
    let p = paper_ok("num_ranks 1;\nrank #0 { a: calc 1; b: calc 2; requ b -> a; }\n").program;
    let mut bin = assemble(&p).unwrap();
    let (_, stream) = super::binary::stream_rank(&bin, 0).unwrap();
    let mut ex = WindowedExecution::new(stream, 1);
    ex.wait(&mut Immediate(Vec::new())).unwrap();
    assert_eq!((ex.completed(), ex.fault()), (2, None));
    // Header: magic 8, version 2, flags 2, ranks 4, buffers 4, "buf" 4 + 3, then the rank
    // table's first offset. The section: num_actions, num_independent, one independent
    // offset, then action a, whose first field is its sources counter.
    let sec = u64::from_le_bytes(bin[27..35].try_into().unwrap()) as usize;
    assert_eq!(bin[sec..sec + 4], 2u32.to_le_bytes(), "two actions");
    let first_action = sec + 4 + 4 + 4;
    bin[first_action..first_action + 4].copy_from_slice(&5u32.to_le_bytes());
    let (_, stream) = super::binary::stream_rank(&bin, 0).unwrap();
    let mut ex = WindowedExecution::new(stream, 1);
    ex.wait(&mut Immediate(Vec::new())).unwrap();
    assert!(
        ex.fault().is_some_and(|f| f.contains("more prerequisites")),
        "{:?}",
        ex.fault()
    );
    assert_eq!(ex.completed(), 0);
}

// ------------------------------------------------------------------ segmented broadcasts

/// `algo`'s broadcast of `size` bytes from `root` over `n` ranks validates, round-trips
/// through both texts and the binary form when `texts`, and its replay (real bytes, a random
/// event order from `rng`) leaves the root's bytes in every rank's buffer.
fn bcast_delivers(algo: Algo, n: u32, root: u32, size: usize, texts: bool, rng: &mut Rng) {
    let what = format!("{algo:?} n {n} root {root} size {size}");
    let p = generate(algo, n, root, size).unwrap();
    let d = validate(&p, None, &BufferSizes::default());
    assert!(d.is_empty(), "{what}: {d:#?}");
    if texts {
        round_trip(&p);
    }
    let data: Vec<u8> = (0..size).map(|i| (i * 7 + 1) as u8).collect();
    let bufs: Vec<Buffers> = (0..n)
        .map(|r| {
            vec![if r == root {
                data.clone()
            } else {
                vec![0; size]
            }]
        })
        .collect();
    let out =
        sim::run(&p, bufs, rng.below(1 << 30) as u64).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (r, b) in out.iter().enumerate() {
        assert_eq!(b[0], data, "{what}: rank {r}");
    }
}

/// The pipelined, dynamic and Open MPI-like binomial broadcasts over 1..=40 ranks, several roots, sizes and segment
/// sizes: each validates, round-trips through both texts and the binary form, and its replay
/// (real bytes, random event order) leaves the root's bytes in every rank's buffer.
#[test]
fn segmented_broadcasts_validate_and_deliver() {
    let mut rng = Rng::new(0x5E6);
    for n in 1..=40u32 {
        for root in [0, n / 3, n - 1] {
            for (size, segment) in [(0usize, 4usize), (1, 1), (13, 4), (64, 64), (100, 7)] {
                for algo in [
                    Algo::ChainBcast { segment },
                    Algo::BinaryTreeBcast { segment },
                    Algo::Dbcast { segment },
                    Algo::BinomialIsendBcast { segment },
                ] {
                    bcast_delivers(algo, n, root, size, n <= 12, &mut rng);
                }
            }
        }
    }
}

#[test]
fn segmented_broadcasts_by_name_and_refusals() {
    use super::gen::{algo_from_name, DEFAULT_SEGMENT, NAMES};
    for name in ["chain-bcast", "binary-tree-bcast", "dbcast"] {
        assert!(NAMES.contains(&name));
    }
    assert_eq!(
        algo_from_name("chain", None, None),
        Some(Algo::ChainBcast {
            segment: DEFAULT_SEGMENT
        })
    );
    let dbcast = algo_from_name("dbcast", None, None).unwrap();
    assert_eq!(
        dbcast,
        Algo::Dbcast {
            segment: crate::config::Config::default().segment_bytes
        }
    );
    assert_eq!(
        algo_from_name("binary-tree-bcast", None, None)
            .unwrap()
            .with_segment(Some(5)),
        Algo::BinaryTreeBcast { segment: 5 }
    );
    assert_eq!(
        Algo::BinomialBcast.with_segment(Some(5)),
        Algo::BinomialBcast
    );
    assert_eq!(dbcast.with_segment(None), dbcast);
    // The default segment, or the whole message when it is smaller: one send per hop.
    let p = generate(algo_from_name("chain", None, None).unwrap(), 3, 0, 1000).unwrap();
    assert_eq!(p.action_count(), 4);
    let p = generate(algo_from_name("chain", None, None).unwrap(), 3, 0, 65537).unwrap();
    assert_eq!(p.action_count(), 8);
    let e = generate(Algo::ChainBcast { segment: 0 }, 3, 0, 8).unwrap_err();
    assert!(e.contains("at least one byte"), "{e}");
    let e = generate(Algo::Dbcast { segment: 1 }, 3, 3, 8).unwrap_err();
    assert!(e.contains("root 3"), "{e}");
    let e = generate(Algo::BinaryTreeBcast { segment: 1 }, 3, 0, 1 << 31).unwrap_err();
    assert!(e.contains("too many"), "{e}");
}

/// The broadcast without scouts and the topology-aware multicast (`imcast-bcast`, by
/// point-to-point segments below 16 KiB or on one host, by an envelope and one IP multicast
/// above) validate, and their functional replay in random event orders leaves the root's
/// bytes in every rank's buffer, for any ranks per host.
#[test]
fn eager_and_imcast_broadcasts_validate_and_deliver() {
    let mut rng = Rng::new(0x1CA5);
    for n in 1..=24u32 {
        for root in [0, n / 3, n - 1] {
            for (size, segment) in [(0usize, 8192usize), (100, 7), (20_000, 8192)] {
                let mut algos = vec![Algo::EagerMcastBcast];
                for ppn in [1, 3, 4, 32] {
                    algos.push(Algo::ImcastBcast { segment, ppn });
                }
                for algo in algos {
                    bcast_delivers(algo, n, root, size, n <= 8 && size <= 100, &mut rng);
                }
            }
        }
    }
}

#[test]
fn eager_and_imcast_by_name_and_refusals() {
    use super::gen::{algo_from_name, NAMES};
    for name in ["eager-mcast-bcast", "imcast-bcast"] {
        assert!(NAMES.contains(&name));
    }
    assert_eq!(
        algo_from_name("eager-mcast", None, None),
        Some(Algo::EagerMcastBcast)
    );
    let imcast = algo_from_name("imcast", None, None).unwrap();
    assert_eq!(
        imcast,
        Algo::ImcastBcast {
            segment: crate::config::Config::default().segment_bytes,
            ppn: 1
        }
    );
    assert_eq!(
        imcast.with_segment(Some(5)).with_ppn(Some(4)),
        Algo::ImcastBcast { segment: 5, ppn: 4 }
    );
    assert_eq!(imcast.with_ppn(None), imcast);
    assert_eq!(
        Algo::EagerMcastBcast
            .with_ppn(Some(4))
            .with_segment(Some(5)),
        Algo::EagerMcastBcast
    );
    let e = generate(imcast.with_ppn(Some(0)), 3, 0, 8).unwrap_err();
    assert!(e.contains("--ppn"), "{e}");
    let e = generate(imcast, 3, 3, 8).unwrap_err();
    assert!(e.contains("root 3"), "{e}");
    let e = generate(Algo::EagerMcastBcast, 3, 3, 8).unwrap_err();
    assert!(e.contains("root 3"), "{e}");
    // Eager: one action per rank. imcast of 1000 bytes over 4 ranks on 4 hosts: the root's
    // three sends and three receives; of 20000 bytes by IP: 3 envelopes and the multicast at
    // the root, an envelope and a multicast receive at each other rank.
    assert_eq!(
        generate(Algo::EagerMcastBcast, 4, 0, 8)
            .unwrap()
            .action_count(),
        4
    );
    assert_eq!(generate(imcast, 4, 0, 1000).unwrap().action_count(), 6);
    assert_eq!(generate(imcast, 4, 0, 20_000).unwrap().action_count(), 10);
}
