//! Checks of the topology IDs, the tables against their definition (brute force) and the
//! multicast by simulation over whole jobs: random topologies with holes, every routing, every
//! (or sampled) source, random destination sets. Failures print the case's seed to replay it.

use super::*;
use crate::sched::testutil::Rng;
use std::collections::{HashSet, VecDeque};
use std::time::Instant;

fn shape(base: u32, digits: u32) -> Shape {
    Shape::new(base, digits).unwrap()
}

fn topo_of(base: u32, digits: u32, texts: &[&str]) -> Topology {
    Topology::parse(shape(base, digits), texts.iter().copied()).unwrap()
}

fn shuffle<T>(rng: &mut Rng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

/// `n` distinct values below 2^width.
fn distinct_values(rng: &mut Rng, n: usize, width: u32) -> Vec<u64> {
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    if width < 20 && (1usize << width) <= 4 * n {
        let mut all: Vec<u64> = (0..1u64 << width).collect();
        shuffle(rng, &mut all);
        all.truncate(n);
        return all;
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let v = rng.next_u64() & mask;
        if seen.insert(v) {
            out.push(v);
        }
    }
    out
}

/// A random topology of about `n` ranks (at least 1) in base 2^bits, ranks in random order
/// over the IDs. Four kinds: uniform with holes, a full ID space, clusters under a few prefixes
/// with large holes between them, and derived from uneven hosts.
fn random_topology(rng: &mut Rng, bits: u32, n: usize) -> Topology {
    let base = 1u32 << bits;
    let least = Shape::for_ranks(base, n as u64).unwrap().digits();
    let most = 64 / bits;
    let digits = (least + rng.below(3) as u32).min(most);
    let s = shape(base, digits);
    let width = bits * digits;
    let mut values = match rng.below(4) {
        0 => distinct_values(rng, n, width),
        1 => {
            // The first n positions of the fewest digits holding n (holes only at the end), or,
            // if not much larger, the whole space (no holes).
            let s0 = shape(base, least);
            let full = 1u64 << (bits * least);
            let count = if full <= (2 * n as u64).max(64) && rng.chance(50) {
                full
            } else {
                n as u64
            };
            return Topology::new(s0, shuffled(rng, (0..count).collect())).unwrap();
        }
        2 => {
            let keep = 1 + rng.below(digits as usize) as u32; // prefix digits fixed per cluster
            let clusters = 1 + rng.below(6);
            let prefixes =
                distinct_values(rng, clusters.min(1 << (bits * keep).min(16)), bits * keep);
            let low = width - bits * keep;
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for _ in 0..4 * n {
                let p = prefixes[rng.below(prefixes.len())];
                let suffix = if low == 0 {
                    0
                } else {
                    rng.next_u64() & ((1u64 << low) - 1)
                };
                let v = shl(p, low) | suffix;
                if seen.insert(v) {
                    out.push(v);
                }
                if out.len() == n {
                    break;
                }
            }
            out
        }
        _ => {
            let mut facts = Vec::new();
            let hosts = 1 + rng.below(n.clamp(1, 64));
            let per = n.div_ceil(hosts);
            for h in 0..hosts {
                let here = 1 + rng.below(per * 2);
                for k in 0..here {
                    facts.push(vec![h as u32, (k % 2) as u32, (k / 2) as u32]);
                    if facts.len() == n {
                        break;
                    }
                }
                if facts.len() == n {
                    break;
                }
            }
            shuffle(rng, &mut facts);
            return derive(base, &facts).unwrap();
        }
    };
    if values.is_empty() {
        values.push(0);
    }
    Topology::new(s, shuffled(rng, values)).unwrap()
}

fn shuffled(rng: &mut Rng, mut v: Vec<u64>) -> Vec<u64> {
    shuffle(rng, &mut v);
    v
}

fn random_pick(rng: &mut Rng) -> Pick {
    if rng.chance(50) {
        Pick::Nearest
    } else {
        Pick::Random {
            seed: rng.next_u64(),
        }
    }
}

#[test]
fn shapes_and_their_limits() {
    assert_eq!(shape(16, 5).base(), 16);
    assert_eq!(shape(16, 5).bits(), 4);
    assert_eq!(shape(16, 16).digits(), 16);
    assert_eq!(shape(256, 8).to_string(), "8 digits in base 256");
    assert_eq!(Shape::new(2, 64).map(|s| s.digits()), Ok(64));
    for bad in [0, 1, 3, 12, 512] {
        assert_eq!(Shape::new(bad, 2), Err(IdError::Base(bad)));
    }
    assert_eq!(
        Shape::new(16, 17),
        Err(IdError::Digits {
            digits: 17,
            base: 16
        })
    );
    assert!(Shape::new(8, 0).is_err());
    // The paper's sizes: 4096 in base 8 is 4 digits; 2^20 in base 16 is 5; 2^30 in base 32, 6.
    assert_eq!(Shape::for_ranks(8, 4096).unwrap().digits(), 4);
    assert_eq!(Shape::for_ranks(16, 1 << 20).unwrap().digits(), 5);
    assert_eq!(Shape::for_ranks(32, 1 << 30).unwrap().digits(), 6);
    assert_eq!(Shape::for_ranks(16, (1 << 20) + 1).unwrap().digits(), 6);
    assert_eq!(Shape::for_ranks(2, 1).unwrap().digits(), 1);
    assert_eq!(Shape::for_ranks(2, 2).unwrap().digits(), 1);
    assert_eq!(Shape::for_ranks(2, 3).unwrap().digits(), 2);
}

#[test]
fn parses_hex_and_dotted_ids() {
    let octal = shape(8, 6);
    let id = octal.parse("012345").unwrap();
    assert_eq!(id.digits(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(id.value(), 0o12345);
    assert_eq!(id.to_string(), "012345");
    assert_eq!(octal.parse(" 0.1.2.3.4.5\n"), Ok(id));
    let hex = shape(16, 3);
    assert_eq!(hex.parse("aF0").unwrap().digits(), [10, 15, 0]);
    assert_eq!(hex.parse("10.15.0").unwrap().to_string(), "af0");
    let wide = shape(32, 3);
    let id = wide.parse("3.17.0").unwrap();
    assert_eq!(id.digits(), [3, 17, 0]);
    assert_eq!(id.to_string(), "3.17.0");
    // Above base 16 a text without dots is one decimal digit.
    assert_eq!(shape(32, 1).parse("20").unwrap().digits(), [20]);
    assert_eq!(shape(16, 1).parse("c").unwrap().digits(), [12]);

    assert_eq!(
        octal.parse("01234"),
        Err(IdError::DigitCount { got: 5, want: 6 })
    );
    assert_eq!(
        octal.parse("012385"),
        Err(IdError::DigitOutOfBase {
            position: 4,
            digit: "8".into(),
            base: 8
        })
    );
    assert_eq!(
        wide.parse("3.32.0"),
        Err(IdError::DigitOutOfBase {
            position: 1,
            digit: "32".into(),
            base: 32
        })
    );
    assert!(matches!(
        wide.parse("3.99999999999.0"),
        Err(IdError::DigitOutOfBase { position: 1, .. })
    ));
    for bad in [
        "", "  ", "1..2", "1.2.", "01 2", "0x12", "g12", "1.a.2", "+1.2.3",
    ] {
        assert!(
            matches!(hex.parse(bad), Err(IdError::Syntax { .. })),
            "{bad:?}: {:?}",
            hex.parse(bad)
        );
    }
    assert_eq!(
        hex.id(&[1, 2]),
        Err(IdError::DigitCount { got: 2, want: 3 })
    );
    assert!(hex.id(&[1, 2, 16]).is_err());
    assert_eq!(hex.id_from_value(0xfff).map(|i| i.value()), Ok(0xfff));
    assert!(hex.id_from_value(0x1000).is_err());
    assert!(shape(2, 64).id_from_value(u64::MAX).is_ok());
    let e = octal.parse("9").unwrap_err().to_string();
    assert!(e.contains("not below base 8"), "{e}");
}

#[test]
fn display_and_parse_round_trip() {
    let mut rng = Rng::new(0x1d5);
    for _ in 0..5000 {
        let bits = 1 + rng.below(8) as u32;
        let digits = 1 + rng.below((64 / bits) as usize) as u32;
        let s = shape(1 << bits, digits);
        let mask = u64::MAX >> (64 - bits * digits);
        let v = rng.next_u64() & mask;
        let id = s.id_from_value(v).unwrap();
        assert_eq!(s.parse(&id.to_string()), Ok(id), "{s}, {v:#x}");
        assert_eq!(s.id(&id.digits()), Ok(id));
        // Longest common prefix against the digit-by-digit definition.
        let w = s
            .id_from_value(v ^ ((rng.next_u64() >> rng.below(64)) & mask))
            .unwrap();
        let (a, b) = (id.digits(), w.digits());
        let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        assert_eq!(id.longest_common_prefix(w), want, "{id} {w}");
    }
}

#[test]
fn topologies_refuse_bad_sets() {
    let s = shape(4, 3);
    assert_eq!(Topology::new(s, vec![]), Err(IdError::NoRanks));
    assert_eq!(
        Topology::new(s, vec![0, 64]),
        Err(IdError::AtRank {
            rank: 1,
            error: Box::new(IdError::Value {
                value: 64,
                shape: s
            })
        })
    );
    // The pair reported is the one whose later rank comes first: ranks 1 and 3 (ID 001).
    assert_eq!(
        Topology::new(s, vec![5, 1, 7, 1, 5, 5]),
        Err(IdError::Duplicate {
            first: 1,
            second: 3,
            id: "001".into()
        })
    );
    assert_eq!(
        Topology::new(s, vec![9, 2, 9, 9]),
        Err(IdError::Duplicate {
            first: 0,
            second: 2,
            id: "021".into()
        })
    );
    let e = Topology::parse(s, ["000", "013", "0123"]).unwrap_err();
    assert_eq!(
        e,
        IdError::AtRank {
            rank: 2,
            error: Box::new(IdError::DigitCount { got: 4, want: 3 })
        }
    );
    assert_eq!(e.to_string(), "rank 2: topology ID has 4 digits, want 3");
    let t = topo_of(4, 3, &["000", "013", "330"]);
    assert_eq!(t.ranks(), 3);
    assert_eq!(t.id(1).digits(), [0, 1, 3]);
    assert_eq!(t.values(), [0, 7, 60]);
    assert_eq!(t.longest_common_prefix(0, 1), 1);
    assert_eq!(t.longest_common_prefix(0, 2), 0);
    assert_eq!(t.longest_common_prefix(2, 2), 3);
}

#[test]
fn derived_ids_put_hosts_first() {
    // Three hosts, ranks out of host order, [host, package, core].
    let facts = [
        [2, 0, 0],
        [0, 0, 0],
        [0, 0, 1],
        [1, 1, 5],
        [0, 1, 0],
        [2, 0, 1],
    ];
    let t = derive(4, &facts).unwrap();
    // host 0..=2: 1 digit; package 0..=1: 1 digit; core 0..=5: 2 digits; no ties: none.
    assert_eq!(t.shape(), shape(4, 4));
    let ids: Vec<String> = (0..6).map(|r| t.id(r).to_string()).collect();
    assert_eq!(ids, ["2000", "0000", "0001", "1111", "0100", "2001"]);
    // Same host: at least the host digit; same package too: at least two.
    assert_eq!(t.longest_common_prefix(1, 2), 3);
    assert_eq!(t.longest_common_prefix(1, 4), 1);
    assert_eq!(t.longest_common_prefix(0, 5), 3);
    assert_eq!(t.longest_common_prefix(0, 1), 0);

    // Only host indices, two ranks per host: a last level numbers them.
    let t = derive(16, &[[0], [3], [0], [3], [0]]).unwrap();
    assert_eq!(t.shape(), shape(16, 2));
    let ids: Vec<String> = (0..5).map(|r| t.id(r).to_string()).collect();
    assert_eq!(ids, ["00", "30", "01", "31", "02"]);

    // One rank, no facts: one digit 0. Facts all zero: the same.
    let none: [[u32; 0]; 1] = [[]];
    assert_eq!(derive(2, &none).unwrap().id(0).to_string(), "0");
    assert_eq!(derive(8, &[[0, 0]]).unwrap().shape(), shape(8, 1));

    assert_eq!(derive::<[u32; 1]>(2, &[]), Err(IdError::NoRanks));
    assert_eq!(derive(6, &[[0]]), Err(IdError::Base(6)));
    assert_eq!(
        derive(2, &[vec![0, 1], vec![1]]),
        Err(IdError::FactLevels {
            rank: 1,
            got: 1,
            want: 2
        })
    );
    // 32 + 32 + 1 bits do not fit.
    let big = [[u32::MAX, u32::MAX, 1]];
    assert_eq!(
        derive(2, &big),
        Err(IdError::Digits {
            digits: 65,
            base: 2
        })
    );
    // Exactly 64 bits is fine.
    let t = derive(16, &[[u32::MAX, u32::MAX], [0, 0]]).unwrap();
    assert_eq!(t.id(0).value(), u64::MAX);
    assert_eq!(t.shape().digits(), 16);
}

#[test]
fn derived_prefixes_follow_the_facts() {
    let mut rng = Rng::new(0xde71);
    for case in 0..300 {
        let bits = [1, 2, 3, 4, 8][rng.below(5)];
        let levels = rng.below(4);
        let n = 1 + rng.below(200);
        let spread: Vec<u32> = (0..levels).map(|_| 1 + rng.below(20) as u32).collect();
        let facts: Vec<Vec<u32>> = (0..n)
            .map(|_| {
                spread
                    .iter()
                    .map(|&s| rng.below(s as usize) as u32)
                    .collect()
            })
            .collect();
        let t = derive(1 << bits, &facts).unwrap();
        assert!(
            Topology::new(t.shape(), t.values().to_vec()).is_ok(),
            "case {case}"
        );
        // Digits per level, to know where each level starts.
        let width = |max: u32| digits_for(max, bits) as usize;
        let widths: Vec<usize> = (0..levels)
            .map(|l| width(facts.iter().map(|f| f[l]).max().unwrap()))
            .collect();
        for a in 0..n {
            for b in (a + 1..n).step_by(1 + n / 20) {
                let same = facts[a]
                    .iter()
                    .zip(&facts[b])
                    .take_while(|(x, y)| x == y)
                    .count();
                let lcp = t.longest_common_prefix(a as u32, b as u32);
                let upto: usize = widths[..same].iter().sum();
                assert!(lcp >= upto, "case {case}: ranks {a} {b} share {same} facts");
                if same < levels {
                    assert!(lcp < upto + widths[same], "case {case}: ranks {a} {b}");
                }
            }
        }
    }
}

#[test]
fn hosts_are_numbered_by_address() {
    // Text orders as text ("10.0.0.12" first); addresses as numbers.
    let addrs = ["10.0.0.7", "10.0.0.3", "10.0.0.7", "10.0.0.12", "10.0.0.3"];
    assert_eq!(host_index_by_address(&addrs), [2, 1, 2, 0, 1]);
    let ips: Vec<std::net::Ipv4Addr> = ["10.0.0.7", "10.0.0.3", "10.0.0.12"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    assert_eq!(host_index_by_address(&ips), [1, 0, 2]);
    assert!(host_index_by_address::<u32>(&[]).is_empty());
}

/// Every entry against conditions (1) and (2), holes against the absence of candidates,
/// Nearest against the brute-force minimum, Random against its reproducibility.
#[test]
fn tables_match_their_definition() {
    let mut rng = Rng::new(0x7ab1e);
    for case in 0..400 {
        let seed = rng.next_u64();
        let mut r = Rng::new(seed);
        let bits = [1, 2, 4][r.below(3)];
        let n = 1 + r.below(if case % 10 == 0 { 600 } else { 60 });
        let topo = random_topology(&mut r, bits, n);
        let s = topo.shape();
        let (m, c) = (s.digits() as usize, s.base() as usize);
        let pick = random_pick(&mut r);
        let n = topo.ranks();
        for me in (0..n).step_by(1 + n as usize / 30) {
            let t = RoutingTable::build(&topo, me, pick);
            assert_eq!((t.me(), t.rows(), t.cols()), (me, m, c));
            let x = topo.id(me);
            let mut holes = 0;
            for i in 0..m {
                for j in 0..c {
                    let cands: Vec<u32> = (0..n)
                        .filter(|&p| p != me)
                        .filter(|&p| {
                            let y = topo.id(p);
                            x.longest_common_prefix(y) == i && y.digit(i) == j as u32
                        })
                        .collect();
                    let e = t.get(i, j);
                    let ctx = || format!("seed {seed:#x}: rank {me} T[{i}][{j}] = {e:?}");
                    if j as u32 == x.digit(i) {
                        assert_eq!(e, Some(me), "{}", ctx());
                        continue;
                    }
                    match e {
                        None => {
                            assert!(cands.is_empty(), "{}: hole, yet {cands:?}", ctx());
                            holes += 1;
                        }
                        Some(y) => assert!(cands.contains(&y), "{}: not in {cands:?}", ctx()),
                    }
                    if pick == Pick::Nearest && !cands.is_empty() {
                        let best = cands
                            .iter()
                            .min_by_key(|&&p| topo.id(p).value() ^ x.value())
                            .copied();
                        assert_eq!(e, best, "{}", ctx());
                    }
                }
            }
            assert_eq!(t.holes(), holes);
            assert_eq!(RoutingTable::build(&topo, me, pick), t, "seed {seed:#x}");
        }
    }
}

#[test]
fn nearest_on_a_full_space_is_the_hypercube_neighbour() {
    for (base, digits) in [(2, 6), (4, 3), (16, 2), (8, 3)] {
        let s = shape(base, digits);
        let n = 1u64 << (s.bits() * digits);
        // Rank r has ID n - 1 - r, so ranks and IDs differ.
        let topo = Topology::new(s, (0..n).rev().collect()).unwrap();
        for me in 0..n as u32 {
            let t = RoutingTable::build(&topo, me, Pick::Nearest);
            assert_eq!(t.holes(), 0);
            let x = topo.id(me).digits();
            for i in 0..digits as usize {
                for j in 0..base {
                    let mut y = x.clone();
                    y[i] = j;
                    let rank = (n - 1 - s.id(&y).unwrap().value()) as u32;
                    assert_eq!(t.get(i, j as usize), Some(rank));
                }
            }
        }
    }
}

#[test]
fn random_pick_is_reproducible_and_spreads() {
    // Rank 0 is 000; T[0][1] has the 4 candidates 1xx, T[1][1] the two 01x.
    let topo = topo_of(2, 3, &["000", "100", "101", "110", "111", "010", "011"]);
    let mut seen0 = [0u32; 7];
    let mut seen1 = [0u32; 7];
    for seed in 0..400u64 {
        let t = RoutingTable::build(&topo, 0, Pick::Random { seed });
        assert_eq!(t, RoutingTable::build(&topo, 0, Pick::Random { seed }));
        seen0[t.get(0, 1).unwrap() as usize] += 1;
        seen1[t.get(1, 1).unwrap() as usize] += 1;
        assert_eq!(t.get(2, 1), None);
    }
    for r in 1..=4 {
        assert!((60..=140).contains(&seen0[r]), "T[0][1]: {seen0:?}");
    }
    for r in 5..=6 {
        assert!((140..=260).contains(&seen1[r]), "T[1][1]: {seen1:?}");
    }
    // Other ranks with the same seed choose independently of rank 0.
    let a: Vec<_> = (1..7)
        .map(|me| RoutingTable::build(&topo, me, Pick::Random { seed: 1 }))
        .collect();
    let b: Vec<_> = (1..7)
        .map(|me| RoutingTable::build(&topo, me, Pick::Random { seed: 2 }))
        .collect();
    assert_ne!(a, b);
}

/// The paper's Fig. 2: 001 multicasts to {010, 100, 101} over eight nodes in base 2.
#[test]
fn paper_figure_2() {
    let ids = ["000", "001", "010", "011", "100", "101", "110", "111"];
    let topo = topo_of(2, 3, &ids);
    let dests = [2, 4, 5];
    let t = |me| RoutingTable::build(&topo, me, Pick::Nearest);
    // The root at stage 0: 100 and 101 behind T[0][1] = 101 (nearest to 001), 010 behind
    // T[1][1] = 011 (nearest: 001 ^ 011 = 010 < 001 ^ 010 = 011).
    let f = forward(&topo, &t(1), Route::Table, None, &dests);
    assert!(!f.deliver);
    let hops: Vec<(u32, usize, Vec<u32>)> = f
        .hops
        .into_iter()
        .map(|h| (h.to, h.level, h.dests))
        .collect();
    assert_eq!(hops, [(5, 0, vec![4, 5]), (3, 1, vec![2])]);
    // 101 delivers and passes 100 on at level 2; 011 is a virtual master for 010.
    let f = forward(&topo, &t(5), Route::Table, Some(1), &dests);
    assert!(f.deliver);
    assert_eq!(f.hops.len(), 1);
    assert_eq!((f.hops[0].to, f.hops[0].level), (4, 2));
    let f = forward(&topo, &t(3), Route::Table, Some(1), &dests);
    assert!(!f.deliver);
    assert_eq!((f.hops[0].to, f.hops[0].level), (2, 2));
    for leaf in [4, 2] {
        let f = forward(&topo, &t(leaf), Route::Table, Some(leaf ^ 1), &dests);
        assert!(f.deliver && f.hops.is_empty());
    }
    // Ours: 010 is reached directly; 101 is still the entry for {100, 101}.
    let f = forward(&topo, &t(1), Route::Dests, None, &dests);
    let hops: Vec<(u32, usize, Vec<u32>)> = f
        .hops
        .into_iter()
        .map(|h| (h.to, h.level, h.dests))
        .collect();
    assert_eq!(hops, [(5, 0, vec![4, 5]), (2, 1, vec![2])]);
    let f = forward(&topo, &t(5), Route::Dests, Some(1), &[4, 5]);
    assert!(f.deliver);
    assert_eq!(
        f.hops,
        [Hop {
            to: 4,
            level: 2,
            dests: vec![4]
        }]
    );
}

#[test]
fn forwarding_edge_cases() {
    let one = topo_of(16, 1, &["7"]);
    let t = RoutingTable::build(&one, 0, Pick::Nearest);
    assert_eq!(t.holes(), 15);
    for route in [Route::Table, Route::Dests] {
        let f = forward(&one, &t, route, None, &[0]);
        assert!(f.deliver && f.hops.is_empty());
        let f = forward(&one, &t, route, None, &[]);
        assert!(!f.deliver && f.hops.is_empty());
    }
    // Destinations outside my stage are ignored; duplicates go together.
    let topo = topo_of(2, 3, &["000", "001", "010", "011", "100"]);
    let t = RoutingTable::build(&topo, 2, Pick::Nearest);
    let f = forward(&topo, &t, Route::Dests, Some(0), &[4, 1, 3, 3, 2]);
    assert!(f.deliver);
    assert_eq!(
        f.hops,
        [Hop {
            to: 3,
            level: 2,
            dests: vec![3, 3]
        }]
    );
}

#[test]
#[should_panic(expected = "not built from these IDs")]
fn a_table_of_other_ids_is_refused() {
    let a = topo_of(2, 2, &["00", "01"]);
    let b = topo_of(2, 2, &["00", "01", "10"]);
    let t = RoutingTable::build(&a, 0, Pick::Nearest);
    // b has 3 ranks, so the table passes the shape check but has a hole where b has rank 2.
    forward(&b, &t, Route::Table, None, &[2]);
}

/// Where a multicast check failed.
struct At<'a> {
    ctx: &'a str,
    route: Route,
    rank: u32,
    prev: Option<u32>,
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let At {
            ctx,
            route,
            rank,
            prev,
        } = self;
        write!(f, "{ctx}, {route:?}: rank {rank} from {prev:?}")
    }
}

/// A whole job: lazily built tables and the message's walk from rank to rank.
struct Job {
    topo: Topology,
    pick: Pick,
    tables: Vec<Option<RoutingTable>>,
}

impl Job {
    fn new(topo: Topology, pick: Pick) -> Job {
        let tables = vec![None; topo.ranks() as usize];
        Job { topo, pick, tables }
    }

    /// Simulates one multicast and checks it; returns (messages, longest path).
    fn multicast(&mut self, route: Route, root: u32, dests: &[u32], ctx: &str) -> (usize, usize) {
        let n = self.topo.ranks() as usize;
        let m = self.topo.shape().digits() as usize;
        let mut is_dest = vec![false; n];
        for &d in dests {
            is_dest[d as usize] = true;
        }
        let mut handled = vec![false; n];
        let mut delivered = vec![0u32; n];
        let (mut messages, mut longest) = (0, 0);
        // (rank, previous hop, what the previous hop's forward gave for it, depth)
        let mut queue = VecDeque::from([(root, None::<u32>, dests.to_vec(), 0usize)]);
        while let Some((r, prev, group, depth)) = queue.pop_front() {
            // Formatted only if an assertion fails: the walk visits every rank.
            let ctx = At {
                ctx,
                route,
                rank: r,
                prev,
            };
            assert!(!handled[r as usize], "{ctx}: handled twice");
            handled[r as usize] = true;
            assert!(depth <= m, "{ctx}: {depth} hops, m = {m}");
            longest = longest.max(depth);
            if route == Route::Dests && prev.is_some() {
                assert!(is_dest[r as usize], "{ctx}: not a destination");
            }
            let carried: &[u32] = match route {
                Route::Table => dests, // the paper's: every hop knows the whole set
                Route::Dests => &group,
            };
            let (topo, pick) = (&self.topo, self.pick);
            let t =
                self.tables[r as usize].get_or_insert_with(|| RoutingTable::build(topo, r, pick));
            let f = forward(topo, t, route, prev, carried);
            if route == Route::Table {
                let g = forward(topo, t, route, prev, &group);
                assert_eq!(f, g, "{ctx}: trimmed list routes otherwise");
            }
            if f.deliver {
                delivered[r as usize] += 1;
            } else if prev.is_some() {
                assert!(
                    !f.hops.is_empty(),
                    "{ctx}: virtual master with nothing to do"
                );
            }
            let stage = prev.map_or(0, |p| topo.longest_common_prefix(r, p) + 1);
            for h in f.hops {
                assert_ne!(h.to, r, "{ctx}");
                assert_eq!(h.level, topo.longest_common_prefix(r, h.to), "{ctx}");
                assert!(
                    h.level >= stage,
                    "{ctx}: level {} below stage {stage}",
                    h.level
                );
                for &d in &h.dests {
                    assert!(is_dest[d as usize], "{ctx}: {d} is no destination");
                    assert!(
                        topo.longest_common_prefix(d, h.to) > h.level,
                        "{ctx}: {d} outside the subtree of {}",
                        h.to
                    );
                }
                messages += 1;
                queue.push_back((h.to, Some(r), h.dests, depth + 1));
            }
        }
        for d in 0..n {
            assert_eq!(
                delivered[d],
                u32::from(is_dest[d]),
                "{ctx}, {route:?}: rank {d}"
            );
        }
        if route == Route::Dests {
            let others = dests.iter().filter(|&&d| d != root).count();
            assert_eq!(messages, others, "{ctx}: one message per destination");
        }
        (messages, longest)
    }
}

fn random_dests(rng: &mut Rng, n: u32) -> Vec<u32> {
    let mut d: Vec<u32> = match rng.below(6) {
        0 => vec![rng.below(n as usize) as u32],
        1 => (0..n).collect(),
        2 => (0..n).filter(|_| rng.chance(50)).collect(),
        3 => (0..n).filter(|_| rng.chance(5)).collect(),
        4 => {
            // A run of ranks, often one host's.
            let a = rng.below(n as usize) as u32;
            (a..n.min(a + 1 + rng.below(16) as u32)).collect()
        }
        _ => (0..1 + rng.below(8))
            .map(|_| rng.below(n as usize) as u32)
            .collect(),
    };
    d.sort_unstable();
    d.dedup();
    shuffle(rng, &mut d);
    d
}

/// Random jobs of up to `max_n` ranks: `cases` topologies, up to `sources` roots each (all of
/// them for small jobs), a few destination sets per root, both routings.
fn simulate_jobs(name: &str, seed: u64, cases: usize, max_n: usize, sources: usize) {
    let start = Instant::now();
    let mut rng = Rng::new(seed);
    let (mut casts, mut messages, mut longest) = (0usize, 0usize, 0usize);
    for case in 0..cases {
        let case_seed = rng.next_u64();
        let mut r = Rng::new(case_seed);
        let bits = [1, 2, 4][r.below(3)];
        let n = match case {
            0 => 1,
            1 => max_n,
            _ => 1 + r.below(max_n),
        };
        let topo = random_topology(&mut r, bits, n);
        let pick = random_pick(&mut r);
        let n = topo.ranks();
        let ctx = format!(
            "{name} case {case} seed {case_seed:#x}: {n} ranks, {}, {pick:?}",
            topo.shape()
        );
        let mut job = Job::new(topo, pick);
        let roots: Vec<u32> = if n as usize <= sources {
            (0..n).collect()
        } else {
            (0..sources).map(|_| r.below(n as usize) as u32).collect()
        };
        for root in roots {
            for _ in 0..2 {
                let dests = random_dests(&mut r, n);
                let ctx = format!("{ctx}, root {root}, {} dests", dests.len());
                for route in [Route::Table, Route::Dests] {
                    let (msgs, depth) = job.multicast(route, root, &dests, &ctx);
                    casts += 1;
                    messages += msgs;
                    longest = longest.max(depth);
                }
            }
        }
    }
    eprintln!(
        "{name}: {casts} multicasts, {messages} messages, longest path {longest} hops, {:?}",
        start.elapsed()
    );
}

#[test]
fn multicast_small_jobs_every_source() {
    simulate_jobs("small", 0x5a11, 400, 40, 40);
}

#[test]
fn multicast_medium_jobs() {
    simulate_jobs("medium", 0x3ed1, 60, 512, 12);
}

#[test]
fn multicast_large_jobs() {
    simulate_jobs("large", 0x1a29e, 8, 4096, 4);
}

/// The paper's figure: a million cores in base 16 give a table of 5 rows by 16 columns.
#[test]
fn million_rank_table_is_5_by_16() {
    let s = Shape::for_ranks(16, 1 << 20).unwrap();
    assert_eq!(s.digits(), 5);
    // Ranks numbered across the space in a scrambled order, so ID is not rank.
    let values: Vec<u64> = (0..1u64 << 20).map(|r| (r * 0x9_e377) & 0xf_ffff).collect();
    let start = Instant::now();
    let topo = Topology::new(s, values).unwrap();
    let checked = start.elapsed();
    for pick in [Pick::Nearest, Pick::Random { seed: 42 }] {
        let start = Instant::now();
        let t = RoutingTable::build(&topo, 123_456, pick);
        let took = start.elapsed();
        assert_eq!((t.rows(), t.cols(), t.holes()), (5, 16, 0));
        eprintln!("2^20 ranks: IDs checked in {checked:?}, {pick:?} table built in {took:?}");
        assert!(took.as_secs_f64() < 5.0, "{took:?}");
    }
}

#[test]
fn renders_a_table() {
    let topo = topo_of(4, 3, &["000", "013", "330", "001", "021", "100"]);
    let t = RoutingTable::build(&topo, 0, Pick::Nearest);
    let want = "\
rank 0: topology ID 000, 3 digits in base 4; * = me, - = hole
level prefix | 0 1 2 3
    0        | * 5 - 2
    1 0      | * 1 4 -
    2 00     | * 3 - -
";
    assert_eq!(t.render(&topo), want);
    let wide = topo_of(32, 2, &["0.0", "17.3", "0.31"]);
    let r = RoutingTable::build(&wide, 2, Pick::Nearest).render(&wide);
    assert!(
        r.starts_with("rank 2: topology ID 0.31, 2 digits in base 32;"),
        "{r}"
    );
    assert!(r.contains("\n    1 0      |  0  -  -"), "{r}");
}
