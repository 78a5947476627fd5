//! The plans of a small network worked by hand, input errors, and properties over random
//! irregular networks: every destination gets each of its multicasts once, nobody else gets
//! it, every sender has what it sends before it sends it, and the GOAL schedules validate and
//! move the right bytes when replayed.

use super::*;
use crate::goal::validate::{is_valid, validate, BufferSizes};
use crate::goal::{replay, Program};
use crate::sched::testutil::Rng;
use crate::sim::network::RoutingKind;
use crate::sim::updown_tests::random_switched;
use std::collections::{BTreeSet, HashMap};

fn net(text: &str) -> Network {
    Network::parse(text, "net.txt").unwrap_or_else(|e| panic!("{e}"))
}

fn setup(n: &Network) -> (UpDown, Vec<SwitchId>) {
    let root = match n.routing {
        RoutingKind::UpDown { root } => root,
        RoutingKind::Shortest => 0,
    };
    let hosts = n.places(n.hosts.len() as u32).unwrap();
    let sw = hosts.iter().map(|&h| n.hosts[h as usize].switch).collect();
    (UpDown::new(n, root), sw)
}

/// Seed 003's six switches (src/sim/updown_tests.rs, docs/sim.md) with nine hosts:
///
/// ```text
///            s0 [0]             level 0
///          /   |   \
///    [1,6] s1  s2 [2] s5 [5]    level 1
///          |   |   .'
///  [4,8]  s4 ..s3 [3,7]         level 2
/// ```
///
/// Depth-first order s0 s1 s4 s2 s3 s5; the root's children s1, s2, s5 (ring positions 1 to
/// 3, the root switch 0).
/// The six switches of `sim/updown_tests.rs` with three more hosts, routed up-down.
fn six() -> String {
    format!(
        "{}host h6 s1\nhost h7 s3\nhost h8 s4\nrouting updown\n",
        crate::sim::updown_tests::SIX
    )
}

fn mc(source: u32, dests: &[u32]) -> Multicast {
    Multicast {
        source,
        dests: dests.to_vec(),
    }
}

/// Every hop of `plan` as `m:from>to@round`, by multicast, in round order.
fn show(plan: &Plan) -> Vec<String> {
    let mut all = Vec::new();
    for r in 0..plan.ranks() {
        for (h, &t) in plan.sends(r).iter().zip(plan.send_rounds(r)) {
            all.push((h.mcast, t, h.from, h.to));
        }
    }
    all.sort_unstable();
    all.iter()
        .map(|(m, t, f, to)| format!("{m}:{f}>{to}@{t}"))
        .collect()
}

fn six_plan(algo: MmcastAlgo, mcasts: &[Multicast], seed: u64) -> Plan {
    let n = net(&six());
    let (ud, sw) = setup(&n);
    plan(&n, &ud, &sw, mcasts, algo, seed).unwrap()
}

#[test]
fn names_round_trip() {
    for a in MmcastAlgo::ALL {
        assert_eq!(MmcastAlgo::from_name(a.name()), Some(a));
        assert_eq!(
            MmcastAlgo::from_name(&a.name().to_uppercase()),
            Some(a),
            "case-insensitive"
        );
    }
    assert_eq!(MmcastAlgo::from_name("sametree"), None);
}

/// One multicast from the root switch: rank 0 to 3, 7 (on s3) and 5 (on s5).
/// Agents: s3 -> 3 (cost 1: 3 sends to 7), s2 -> 3 via s3 (cost 1), s5 -> 5 (cost 0). The
/// source is on the root switch and the root switch has no destination, so SameTree takes
/// the costliest subtree, s2, whose agent is 3; Binomial and Cyclic agree on a list of two.
#[test]
fn six_one_multicast_by_hand() {
    let m = [mc(0, &[3, 7, 5])];
    let agents = ["0:0>3@0", "0:3>5@1", "0:3>7@2"];
    assert_eq!(show(&six_plan(MmcastAlgo::SameTreeBinomial, &m, 1)), agents);
    assert_eq!(show(&six_plan(MmcastAlgo::SameTreeCyclic, &m, 1)), agents);
    assert_eq!(
        show(&six_plan(MmcastAlgo::Naive, &m, 1)),
        ["0:0>3@0", "0:0>7@1", "0:0>5@2"]
    );
    // Depth-first order 0 (s0), 3 7 (s3), 5 (s5); halving: 0 to 7, then 0 to 3 and 7 to 5.
    assert_eq!(
        show(&six_plan(MmcastAlgo::Spcco, &m, 1)),
        ["0:0>7@0", "0:0>3@1", "0:7>5@1"]
    );
}

/// Two multicasts: rank 4 (on s4, below s1) to everyone else, and rank 2 (on s2) to 4, 8, 5.
#[test]
fn six_two_multicasts_by_hand() {
    let m = [mc(4, &[0, 1, 2, 3, 5, 6, 7, 8]), mc(2, &[4, 8, 5])];
    // m0: agents s4 -> 8 (cost 0), s1 -> 1 (members 1, agent of s4 8, 6: cost 2),
    // s3 -> 3 (3, 7: cost 1), s2 -> 2 (2, agent of s3 3: cost 2), s5 -> 5 (cost 0).
    // Step-2 list [0 (root switch), 1 (s1), 2 (s2), 5 (s5)]; SameTree: the source is below
    // s1, so the primary agent is 1.
    // m1: D(m1,s4) = 4, 8 rotated by the index 1: s4 -> 8 (8, 4: cost 1), s1 -> 8 via s4
    // (cost 1), s5 -> 5; list [8 (s1), 5 (s5)]; the source's subtree s2 has no destination
    // of m1 and the root switch none either, so the costliest subtree's agent, 8.
    assert_eq!(
        show(&six_plan(MmcastAlgo::SameTreeBinomial, &m, 1)),
        [
            // m0: 4 to 1; halving over [1, 2, 5, 0]: 1 to 5, then 1 to 2 and 5 to 0; then
            // RAM(s1) by 1: 1 to 8 (s4's agent, costlier), 1 to 6; RAM(s2) by 2: 2 to 3;
            // RAM(s3) by 3: 3 to 7.
            "0:4>1@0", "0:1>5@1", "0:1>2@2", "0:5>0@2", "0:1>8@3", "0:2>3@3", "0:1>6@4", "0:3>7@4",
            // m1: 2 to 8; 8 to 5, then RAM(s1) = RAM(s4) by 8: 8 to 4.
            "1:2>8@0", "1:8>5@1", "1:8>4@2",
        ]
    );
    assert_eq!(
        show(&six_plan(MmcastAlgo::SameTreeCyclic, &m, 1)),
        [
            // m0: the ring from 1 (s1) rightwards: 1, 2, 5, then 0 (the root switch, wrapping).
            "0:4>1@0", "0:1>2@1", "0:1>8@2", "0:2>5@2", "0:1>6@3", "0:2>3@3", "0:5>0@3", "0:3>7@4",
            "1:2>8@0", "1:8>5@1", "1:8>4@2",
        ]
    );
    // Depth-first order: 0 (s0), 1 6 (s1), 4 8 (s4), 2 (s2), 3 7 (s3), 5 (s5).
    // m0 rotated to its source: 4 8 2 3 7 5 0 1 6; m1: 2 4 8 5 rotated: 2 5 4 8.
    assert_eq!(
        show(&six_plan(MmcastAlgo::Spcco, &m, 1)),
        [
            // Halving over nine: 4 to the fifth after it (5), then 4 to 3 and 5 to 1, ...
            "0:4>5@0", "0:4>3@1", "0:5>1@1", "0:1>6@2", "0:3>7@2", "0:4>2@2", "0:5>0@2", "0:4>8@3",
            "1:2>4@0", "1:2>5@1", "1:4>8@1",
        ]
    );
}

#[test]
fn random_primary_is_a_subtree_agent_and_fixed_by_seed() {
    let m = [mc(4, &[0, 1, 2, 3, 5, 6, 7, 8])];
    let mut firsts = BTreeSet::new();
    for seed in 0..40 {
        let a = six_plan(MmcastAlgo::RandomBinomial, &m, seed);
        assert_eq!(a, six_plan(MmcastAlgo::RandomBinomial, &m, seed));
        let first = a.sends(4)[0].to;
        assert!([1, 2, 5].contains(&first), "agents of s1, s2, s5: {first}");
        firsts.insert(first);
        let c = six_plan(MmcastAlgo::RandomCyclic, &m, seed);
        assert_eq!(c.sends(4)[0].to, first, "same draw for Cyclic");
    }
    assert_eq!(firsts.len(), 3, "every subtree gets drawn");
}

#[test]
fn input_errors() {
    let n = net(&six());
    let (ud, sw) = setup(&n);
    let e = |m: &[Multicast]| plan(&n, &ud, &sw, m, MmcastAlgo::SameTreeBinomial, 0).unwrap_err();
    assert_eq!(
        e(&[mc(9, &[1])]),
        "multicast 0: source 9 is not below the 9 ranks"
    );
    assert_eq!(
        e(&[mc(0, &[1]), mc(1, &[0, 12])]),
        "multicast 1: destination 12 is not below the 9 ranks"
    );
    assert_eq!(
        e(&[mc(3, &[1, 3])]),
        "multicast 0: source 3 is among its own destinations"
    );
    assert_eq!(
        e(&[mc(3, &[1, 2, 1])]),
        "multicast 0: destination 1 is given twice"
    );
    assert!(plan(&n, &ud, &[0, 9], &[], MmcastAlgo::Naive, 0)
        .unwrap_err()
        .contains("switch 9"));
    // Allowed: two multicasts from one source, and one with no destination.
    let p = plan(
        &n,
        &ud,
        &sw,
        &[mc(3, &[1]), mc(3, &[1, 2]), mc(4, &[])],
        MmcastAlgo::Spcco,
        0,
    )
    .unwrap();
    assert_eq!(p.receives(1), [(0, 3), (1, 3)]);
    assert_eq!(p.parent(2, 4), None);
    assert!(p.sends(4).is_empty());
}

#[test]
fn schedule_tags_and_buffers() {
    let m = [mc(4, &[0, 1, 2, 3, 5, 6, 7, 8]), mc(2, &[4, 8, 5])];
    let p = six_plan(MmcastAlgo::SameTreeBinomial, &m, 1);
    let buf = |m: u32| BufRef {
        slot: 0,
        offset: m as usize * 10,
        len: 10,
    };
    // Rank 4: source of m0 (sends to 1 at once), receives m1 from 8 and is a leaf of it.
    let s = schedule(&p, 4, buf);
    let ops: Vec<Op> = s.actions().map(|(_, o)| o.clone()).collect();
    let recv = |peer, m| Op::Recv {
        peer,
        tag: m,
        buf: buf(m),
    };
    let send = |peer, m| Op::Send {
        peer,
        tag: m,
        buf: buf(m),
    };
    assert_eq!(ops, [recv(8, 1), send(1, 0)]);
    assert_eq!(s.edge_count(), 0);
    // Rank 8: receives m0 from 1, m1 from 2, and relays m1 to 5 then 4.
    let s = schedule(&p, 8, buf);
    let ops: Vec<Op> = s.actions().map(|(_, o)| o.clone()).collect();
    assert_eq!(ops, [recv(1, 0), recv(2, 1), send(5, 1), send(4, 1)]);
    assert!(s.dependents(0).is_empty());
    assert_eq!(s.dependents(1), [2, 3]);
    assert_eq!(s.initially_ready().collect::<Vec<_>>(), [0, 1]);
}

// ------------------------------------------------------------------------------ properties

/// Adds 0 to 2 extra hosts per switch (`xI`), so switches hold several ranks.
fn with_hosts(rng: &mut Rng, text: &str) -> String {
    let nsw = text.lines().next().unwrap().split_whitespace().count() - 1;
    let mut out = text.to_string();
    let mut k = 0;
    for s in 0..nsw {
        for _ in 0..rng.below(3) {
            out += &format!("host x{k} s{s}\n");
            k += 1;
        }
    }
    out
}

/// `k` multicasts, sources drawn at random (repeats allowed when `k` > ranks / 2), each to a
/// random set of 0 to all other ranks.
fn random_mcasts(rng: &mut Rng, ranks: u32, k: usize) -> Vec<Multicast> {
    (0..k)
        .map(|_| {
            let source = rng.below(ranks as usize) as u32;
            let want = rng.below(ranks as usize);
            let mut dests: Vec<u32> = (0..ranks).filter(|&r| r != source).collect();
            for i in (1..dests.len()).rev() {
                dests.swap(i, rng.below(i + 1));
            }
            dests.truncate(want);
            Multicast { source, dests }
        })
        .collect()
}

/// The invariants of any plan: every destination of m receives m once, from a rank that had
/// it an earlier round; nobody else receives m; the hops of m form a tree from the source.
fn check_plan(p: &Plan, mcasts: &[Multicast], what: &str) {
    let mut arrive: HashMap<(u32, u32), u32> = HashMap::new(); // (m, rank) -> round it has m
    let mut hops = Vec::new();
    for r in 0..p.ranks() {
        assert_eq!(p.sends(r).len(), p.send_rounds(r).len());
        let mut last = None;
        for (h, &t) in p.sends(r).iter().zip(p.send_rounds(r)) {
            assert_eq!(h.from, r, "{what}");
            assert!(
                last.map_or(true, |l| l <= t),
                "{what}: rank {r} out of order"
            );
            last = Some(t);
            hops.push((t, *h));
            assert!(
                arrive.insert((h.mcast, h.to), t + 1).is_none(),
                "{what}: rank {} gets multicast {} twice",
                h.to,
                h.mcast
            );
            assert_eq!(p.parent(h.mcast, h.to), Some(r), "{what}");
        }
    }
    for (i, m) in mcasts.iter().enumerate() {
        arrive.insert((i as u32, m.source), 0);
        let got: BTreeSet<u32> = (0..p.ranks())
            .filter(|&r| p.parent(i as u32, r).is_some())
            .collect();
        let want: BTreeSet<u32> = m.dests.iter().copied().collect();
        assert_eq!(got, want, "{what}: receivers of multicast {i}");
    }
    for (t, h) in hops {
        let had = arrive
            .get(&(h.mcast, h.from))
            .unwrap_or_else(|| panic!("{what}: {h:?} from a rank without the message"));
        assert!(
            *had <= t,
            "{what}: {h:?} in round {t}, before it arrives ({had})"
        );
    }
}

/// The GOAL program of `p`, multicast m at offset m * size of the default buffer; validates it,
/// replays it with real bytes and checks every destination's copy and that nothing else is
/// written.
fn check_replay(p: &Plan, mcasts: &[Multicast], size: usize, seed: u64, what: &str) {
    let k = mcasts.len();
    let buf = |m: u32| BufRef {
        slot: 0,
        offset: m as usize * size,
        len: size,
    };
    let prog = Program::from_schedules((0..p.ranks()).map(|r| schedule(p, r, buf)).collect(), &[]);
    let sizes = BufferSizes(HashMap::from([(
        crate::goal::DEFAULT_BUFFER.to_string(),
        k * size,
    )]));
    let diags = validate(&prog, None, &sizes);
    assert!(is_valid(&diags), "{what}: {diags:?}");
    let pattern = |m: usize, i: usize| (m * 31 + i * 7 + 1) as u8;
    let mut bufs: Vec<replay::Buffers> = vec![vec![vec![0u8; k * size]]; p.ranks() as usize];
    for (i, m) in mcasts.iter().enumerate() {
        for j in 0..size {
            bufs[m.source as usize][0][i * size + j] = pattern(i, j);
        }
    }
    let out = replay::run(&prog, bufs, seed).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (i, m) in mcasts.iter().enumerate() {
        for r in 0..p.ranks() {
            let region = &out[r as usize][0][i * size..(i + 1) * size];
            let has = r == m.source || m.dests.contains(&r);
            for (j, &b) in region.iter().enumerate() {
                let want = if has { pattern(i, j) } else { 0 };
                assert_eq!(b, want, "{what}: rank {r}, multicast {i}, byte {j}");
            }
        }
    }
}

#[test]
fn random_networks_every_variant() {
    let mut rng = Rng::new(0x0003_a6e7);
    for case in 0..60 {
        let base = random_switched(&mut rng);
        let text = with_hosts(&mut rng, &base);
        let n = net(&text);
        let (ud, sw) = setup(&n);
        let ranks = sw.len() as u32;
        let k = 1 + rng.below(ranks as usize);
        let mcasts = random_mcasts(&mut rng, ranks, k);
        let seed = rng.next_u64();
        for algo in MmcastAlgo::ALL {
            let what = format!(
                "case {case} {} ({ranks} ranks, {k} multicasts)",
                algo.name()
            );
            let p = plan(&n, &ud, &sw, &mcasts, algo, seed).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                p,
                plan(&n, &ud, &sw, &mcasts, algo, seed).unwrap(),
                "{what}"
            );
            check_plan(&p, &mcasts, &what);
            if case % 4 == 0 {
                check_replay(&p, &mcasts, 3, case, &what);
            }
        }
    }
}

/// Locality, the point of the agents: every subtree of the root's children, and the root
/// switch, is entered by exactly one hop of each multicast with destinations there (its agent's,
/// or the root-switch destination's); everything else stays inside.
#[test]
fn agents_enter_each_subtree_once() {
    let mut rng = Rng::new(0x0003_0002);
    for case in 0..40 {
        let base = random_switched(&mut rng);
        let text = with_hosts(&mut rng, &base);
        let n = net(&text);
        let (ud, sw) = setup(&n);
        let ranks = sw.len() as u32;
        let k = 1 + rng.below(4);
        let mcasts = random_mcasts(&mut rng, ranks, k);
        let root = ud.root();
        // The root's child subtree of every switch (None: the root).
        let mut top = vec![None; n.switches.len()];
        let mut stack: Vec<(SwitchId, Option<SwitchId>)> = ud
            .children(&n, root)
            .into_iter()
            .map(|c| (c, Some(c)))
            .collect();
        while let Some((s, t)) = stack.pop() {
            top[s as usize] = t;
            stack.extend(ud.children(&n, s).into_iter().map(|c| (c, t)));
        }
        let part = |r: u32| top[sw[r as usize] as usize];
        for algo in &MmcastAlgo::ALL[2..] {
            let p = plan(&n, &ud, &sw, &mcasts, *algo, case).unwrap();
            for (i, m) in mcasts.iter().enumerate() {
                let mut entered: HashMap<Option<SwitchId>, u32> = HashMap::new();
                for r in 0..ranks {
                    for h in p.sends(r).iter().filter(|h| h.mcast == i as u32) {
                        if part(h.from) != part(h.to) || h.from == m.source {
                            *entered.entry(part(h.to)).or_default() += 1;
                        }
                    }
                }
                let parts: BTreeSet<Option<SwitchId>> = m.dests.iter().map(|&d| part(d)).collect();
                for t in &parts {
                    assert_eq!(
                        entered.get(t).copied().unwrap_or(0),
                        1,
                        "case {case} {}: multicast {i} enters {t:?}",
                        algo.name()
                    );
                }
                assert_eq!(entered.len(), parts.len(), "case {case} {}", algo.name());
            }
        }
    }
}

/// The Random variants with seed 1 on the two multicasts above: both draw s5's agent, 5.
#[test]
fn six_random_by_hand() {
    let m = [mc(4, &[0, 1, 2, 3, 5, 6, 7, 8]), mc(2, &[4, 8, 5])];
    // m0: the list [0, 1, 2, 5] from 5: [5, 0, 1, 2]. Halving: 5 to 1, then 5 to 0 and 1 to
    // 2; RAM(s1) by 1 and RAM(s2) by 2 as under SameTree. m1: [8, 5] from 5: 5 to 8, 8 to 4.
    assert_eq!(
        show(&six_plan(MmcastAlgo::RandomBinomial, &m, 1)),
        [
            "0:4>5@0", "0:5>1@1", "0:1>2@2", "0:5>0@2", "0:1>8@3", "0:2>3@3", "0:1>6@4", "0:3>7@4",
            "1:2>5@0", "1:5>8@1", "1:8>4@2",
        ]
    );
    // Cyclic: 5 to 0 (wrapping to the root switch), 0 to 1, 1 to 2, each then its subtree.
    assert_eq!(
        show(&six_plan(MmcastAlgo::RandomCyclic, &m, 1)),
        [
            "0:4>5@0", "0:5>0@1", "0:0>1@2", "0:1>2@3", "0:1>8@4", "0:2>3@4", "0:1>6@5", "0:3>7@5",
            "1:2>5@0", "1:5>8@1", "1:8>4@2",
        ]
    );
}

/// One switch: no subtrees, the step-2 list is the root switch's destination alone.
#[test]
fn one_switch() {
    let n = net("switch s0\nhost a s0\nhost b s0\nhost c s0\nhost d s0\nhost e s0\n");
    let (ud, sw) = setup(&n);
    let mcasts = [mc(0, &[1, 2, 3, 4]), mc(2, &[0]), mc(4, &[])];
    for algo in MmcastAlgo::ALL {
        let p = plan(&n, &ud, &sw, &mcasts, algo, 5).unwrap();
        check_plan(&p, &mcasts, algo.name());
        check_replay(&p, &mcasts, 5, 1, algo.name());
    }
    // The agent of m0 is 1 (index 0), who gets it from 0 and halves [1, 2, 3, 4].
    assert_eq!(
        show(&plan(&n, &ud, &sw, &mcasts, MmcastAlgo::SameTreeCyclic, 5).unwrap()),
        ["0:0>1@0", "0:1>3@1", "0:1>2@2", "0:3>4@2", "1:2>0@0"]
    );
}

#[test]
fn auto_takes_spcco_until_many_multicasts_on_many_switches() {
    assert_eq!(auto_choice(1, 1), MmcastAlgo::Spcco);
    assert_eq!(auto_choice(15, 128), MmcastAlgo::Spcco);
    assert_eq!(auto_choice(512, 7), MmcastAlgo::Spcco);
    assert_eq!(auto_choice(16, 8), MmcastAlgo::SameTreeCyclic);
}
