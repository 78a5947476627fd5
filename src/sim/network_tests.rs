//! The network file, its routes and the contention model: parser errors one by one, routes on
//! small graphs worked by hand, golden times worked by hand from the rules of `contention`, and
//! a property test over random connected networks and random traffic.

use super::network::{parse_bandwidth, parse_latency, LinkId, Network, Placement, Rate};
use super::*;
use crate::goal::{self, gen, Program};
use crate::sched::testutil::Rng;

fn net(text: &str) -> Network {
    Network::parse(text, "net.txt").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    Network::parse(text, "net.txt").unwrap_err()
}

fn names(n: &Network, route: &[LinkId]) -> Vec<String> {
    route.iter().map(|&l| n.link_name(l)).collect()
}

/// The route from rank `a` to rank `b` (rank i on host i unless the file says otherwise).
fn route(n: &Network, a: u32, b: u32) -> Vec<String> {
    let ranks = a.max(b) + 1;
    let c = Contention::new(n, ranks, &Params::default()).unwrap();
    names(n, &c.route(a, b))
}

fn parse(src: &str) -> Program {
    goal::parse_any(src.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .program
}

// ------------------------------------------------------------------------------ the file

#[test]
fn a_file_with_everything() {
    let n = net("# two racks
switch core      # the spine
switch rack0 rack1
link core rack0 10Gbit 200ns
link rack1 core 2.5Gbit
host a rack0 1Gbit 50ns
host b rack0            # at the NIC's rate
host c rack1 nic 1us
ranks-per-host 2
");
    assert_eq!(
        n.switches
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["core", "rack0", "rack1"]
    );
    assert_eq!(n.hosts.len(), 3);
    assert_eq!(n.hosts[2].switch, 2);
    // Two directed links per cable and per host, in file order.
    assert_eq!(n.links.len(), 10);
    assert_eq!(n.link_name(0), "core->rack0");
    assert_eq!(n.link_name(1), "rack0->core");
    assert_eq!(
        (n.links[0].rate, n.links[0].latency),
        (Rate::Bits(10_000_000_000), 200)
    );
    assert_eq!(n.link_name(2), "rack1->core");
    assert_eq!(n.links[3].rate, Rate::Bits(2_500_000_000));
    assert_eq!(n.link_name(n.hosts[0].up), "a->rack0");
    assert_eq!(n.link_name(n.hosts[0].down), "rack0->a");
    assert_eq!(
        (
            n.links[n.hosts[0].up as usize].rate,
            n.links[n.hosts[0].down as usize].latency
        ),
        (Rate::Bits(1_000_000_000), 50)
    );
    assert_eq!(n.links[n.hosts[1].up as usize].rate, Rate::Nic);
    assert_eq!(
        (
            n.links[n.hosts[2].up as usize].rate,
            n.links[n.hosts[2].up as usize].latency
        ),
        (Rate::Nic, 1000)
    );
    assert_eq!(n.placement, Placement::PerHost { ranks: 2, line: 9 });
    assert_eq!(n.places(5).unwrap(), [0, 0, 1, 1, 2]);
    assert_eq!(n.places(6).unwrap(), [0, 0, 1, 1, 2, 2]);
    assert_eq!(
        n.places(7).unwrap_err(),
        "net.txt:9: the program has 7 ranks but 3 hosts with 2 ranks per host hold 6"
    );
    assert_eq!(n.link_between(0, 2), Some(3));
    assert_eq!(n.link_between(1, 2), None);
}

#[test]
fn rank_lines_place_ranks() {
    let n = net("switch s\nhost a s\nhost b s\nrank 0-2 b\nrank 3 a\nrank 5 a\n");
    assert_eq!(n.places(4).unwrap(), [1, 1, 1, 0]);
    assert_eq!(
        n.places(6).unwrap_err(),
        "net.txt: rank 4 has no host (the program has 6 ranks; no `rank` line names it)"
    );
    // Without placement: one rank per host, in file order.
    let n = net("host b s\nswitch s\nhost a s\n");
    assert_eq!(n.places(2).unwrap(), [0, 1]);
    assert_eq!(
        n.places(3).unwrap_err(),
        "net.txt: the program has 3 ranks but 2 hosts hold 2 (one rank per host; \
         `ranks-per-host K` places more)"
    );
}

#[test]
fn bandwidths_and_latencies() {
    for (text, bps) in [
        ("100Mbit", 100_000_000),
        ("1Gbit", 1_000_000_000),
        ("100Gbit", 100_000_000_000),
        ("2.5Gbit", 2_500_000_000),
        ("10Gbps", 10_000_000_000),
        ("1gbit/s", 1_000_000_000),
        ("1500kbit", 1_500_000),
        ("9600bit", 9600),
        ("0.5Tbit", 500_000_000_000),
    ] {
        assert_eq!(parse_bandwidth(text), Ok(bps), "{text}");
    }
    for bad in ["fast", "10", "1.2.3Gbit", "Gbit", "-1Gbit", "1GB/s", ""] {
        assert_eq!(
            parse_bandwidth(bad).unwrap_err(),
            format!(
                "bad bandwidth `{bad}`: want a number and a unit of bits per second (bit, Kbit, \
                 Mbit, Gbit, Tbit), such as 100Mbit"
            )
        );
    }
    assert_eq!(
        parse_bandwidth("0Mbit").unwrap_err(),
        "bandwidth `0Mbit` is below 1 bit per second: a link must carry something"
    );
    for (text, ns) in [
        ("500ns", 500),
        ("1.5us", 1500),
        ("2ms", 2_000_000),
        ("1s", 1_000_000_000),
        ("300", 300),
        ("0", 0),
    ] {
        assert_eq!(parse_latency(text), Ok(ns), "{text}");
    }
    assert_eq!(
        parse_latency("5 min").unwrap_err(),
        "bad latency `5 min`: want a number of ns, us, ms or s, such as 500ns"
    );
    // Time on a link: rounded up to the ns; `nic` at G per byte.
    let six = PerByte::ns(6);
    assert_eq!(Rate::Bits(1_000_000_000).time(1000, six), 8000);
    assert_eq!(Rate::Bits(3_000_000_000).time(1, six), 3);
    assert_eq!(Rate::Nic.time(1000, six), 6000);
    // A fraction of a ns per byte: the product, rounded to the nearest ns.
    assert_eq!(Rate::Nic.time(1000, PerByte::ps(80)), 80);
    assert_eq!(Rate::Nic.time(1001, PerByte::ps(500)), 501);
    assert_eq!(Rate::Bits(2_500_000_000).to_string(), "2.5Gbit");
}

#[test]
fn parser_errors_name_file_and_line() {
    let cases: [(&str, &str); 24] = [
        ("", "net.txt: no switch declared"),
        ("# nothing\nhost a s\n", "net.txt: no switch declared"),
        ("switch s\nrouter r\n", "net.txt:2: unknown statement `router` (known: switch, link, host, ranks-per-host, rank, routing)"),
        ("switch\n", "net.txt:1: expected `switch NAME [NAME...]`, got `switch`"),
        ("switch a b\nlink a b\n", "net.txt:2: expected `link SWITCH SWITCH BANDWIDTH [LATENCY]`, got `link a b`"),
        ("switch a\nhost h\n", "net.txt:2: expected `host NAME SWITCH [BANDWIDTH [LATENCY]]`, got `host h`"),
        ("switch a\nhost h a 1Gbit 1us x\n", "net.txt:2: expected `host NAME SWITCH [BANDWIDTH [LATENCY]]`, got `host h a 1Gbit 1us x`"),
        ("switch a\nrank 0\n", "net.txt:2: expected `rank R[-R2] HOST`, got `rank 0`"),
        ("switch a b\nswitch c a\n", "net.txt:2: switch `a` is declared twice (first on line 1)"),
        ("switch a\nlink a b 1Gbit\n", "net.txt:2: unknown switch `b`"),
        ("switch a\nhost h z\n", "net.txt:2: unknown switch `z`"),
        ("switch a\nlink a a 1Gbit\n", "net.txt:2: link from switch `a` to itself"),
        ("switch a b\nlink a b 1Gbit\nlink b a 10Gbit\n", "net.txt:3: a second link between `b` and `a` (the first is on line 2)"),
        ("switch a b\nlink a b fast\n", "net.txt:2: bad bandwidth `fast`: want a number and a unit of bits per second (bit, Kbit, Mbit, Gbit, Tbit), such as 100Mbit"),
        ("switch a b\nlink a b 1Gbit soon\n", "net.txt:2: bad latency `soon`: want a number of ns, us, ms or s, such as 500ns"),
        ("switch a\nhost h a 0bit\n", "net.txt:2: bandwidth `0bit` is below 1 bit per second: a link must carry something"),
        ("switch a\nhost h a\nhost h a 1Gbit\n", "net.txt:3: host `h` is declared twice (first on line 2)"),
        ("switch a b\nlink a b 1Gbit\nhost h a\nhost h b\n", "net.txt:4: host `h` is on switch `a` already (line 3); a host hangs on one switch"),
        ("switch a\nhost a a\n", "net.txt:2: `a` is a switch (line 1); a host needs a name of its own"),
        ("switch a b c d\nlink a b 1Gbit\nlink c d 1Gbit\n", "net.txt:1: switch `c` cannot be reached from switch `a`: the switches must form one connected network"),
        ("switch a\nhost h a\nrank 0 g\n", "net.txt:3: rank 0 is placed on unknown host `g`"),
        ("switch a\nhost h a\nrank 0-3 h\nrank 2 h\n", "net.txt:4: rank 2 is placed twice (first on line 3)"),
        ("switch a\nhost h a\nranks-per-host 2\nrank 0 h\n", "net.txt:4: `rank` lines and `ranks-per-host` (line 3) exclude each other"),
        ("switch a\nranks-per-host 0\n", "net.txt:2: ranks-per-host wants a positive integer, not `0`"),
    ];
    for (text, want) in cases {
        assert_eq!(err(text), want, "{text:?}");
    }
    assert_eq!(
        err("switch a\nranks-per-host 1\nranks-per-host 2\n"),
        "net.txt:3: ranks-per-host is given twice (first on line 2)"
    );
    assert_eq!(
        err("switch a\nhost h a\nrank x h\n"),
        "net.txt:3: `x` is not a rank: want R or R1-R2, such as 0-15"
    );
    assert_eq!(
        err("switch a\nhost h a\nrank 3-1 h\n"),
        "net.txt:3: rank range `3-1` runs backwards"
    );
    assert_eq!(
        err("switch a\nhost h a\nrank 0-99999999 h\n"),
        "net.txt:3: rank 99999999 is too large for a `rank` line (at most 16777215)"
    );
    // The unreachable switch named is the first one in file order, on its own line.
    assert_eq!(
        err("switch a\nswitch b\nswitch c\nlink a c 1Gbit\n"),
        "net.txt:2: switch `b` cannot be reached from switch `a`: the switches must form one connected network"
    );
    // A switch used before its declaration is fine.
    assert!(Network::parse("link a b 1Gbit\nhost h b\nswitch a b\n", "n").is_ok());
}

// ------------------------------------------------------------------------------ routes

#[test]
fn routes_on_a_ring_of_four() {
    // s0 - s1 - s2 - s3 - s0; host hi on si, rank i on host hi. Two shortest routes join
    // opposite switches: the one through the switch declared first is taken.
    let hosts = "host h0 s0\nhost h1 s1\nhost h2 s2\nhost h3 s3\n";
    let links = [
        "link s0 s1 1Gbit\n",
        "link s1 s2 1Gbit\n",
        "link s2 s3 1Gbit\n",
        "link s3 s0 1Gbit\n",
    ];
    let forward = format!("switch s0 s1 s2 s3\n{}{hosts}", links.concat());
    let backward = format!(
        "switch s0 s1 s2 s3\n{}{}{}{}{hosts}",
        links[3], links[1], links[2], links[0]
    );
    for text in [forward, backward] {
        let n = net(&text);
        assert_eq!(route(&n, 0, 2), ["h0->s0", "s0->s1", "s1->s2", "s2->h2"]);
        assert_eq!(route(&n, 2, 0), ["h2->s2", "s2->s1", "s1->s0", "s0->h0"]);
        assert_eq!(route(&n, 1, 3), ["h1->s1", "s1->s0", "s0->s3", "s3->h3"]);
        assert_eq!(route(&n, 3, 1), ["h3->s3", "s3->s0", "s0->s1", "s1->h1"]);
        assert_eq!(route(&n, 0, 3), ["h0->s0", "s0->s3", "s3->h3"]);
        assert_eq!(route(&n, 3, 2), ["h3->s3", "s3->s2", "s2->h2"]);
    }
    // Declaring s3 before s1 turns the ties the other way.
    let n = net(&format!("switch s0 s3 s2 s1\n{}{hosts}", links.concat()));
    assert_eq!(route(&n, 0, 2), ["h0->s0", "s0->s3", "s3->s2", "s2->h2"]);
    assert_eq!(route(&n, 1, 3), ["h1->s1", "s1->s0", "s0->s3", "s3->h3"]);
}

#[test]
fn routes_on_a_line_and_a_star() {
    let n = net("switch a b c\nlink a b 1Gbit\nlink b c 1Gbit\nhost x a\nhost y c\nhost z b\n");
    assert_eq!(route(&n, 0, 1), ["x->a", "a->b", "b->c", "c->y"]);
    assert_eq!(route(&n, 1, 2), ["y->c", "c->b", "b->z"]);
    let n = net(
        "switch hub l0 l1 l2\nlink hub l0 1Gbit\nlink hub l1 1Gbit\nlink l2 hub 1Gbit\n\
                 host h0 l0\nhost h1 l1\nhost h2 l2\nhost h3 hub\n",
    );
    assert_eq!(route(&n, 0, 2), ["h0->l0", "l0->hub", "hub->l2", "l2->h2"]);
    assert_eq!(route(&n, 2, 3), ["h2->l2", "l2->hub", "hub->h3"]);
    // Two ranks of one host: no link; two hosts of one switch: their two links.
    let n = net("switch s\nhost a s\nhost b s\nranks-per-host 2\n");
    assert_eq!(route(&n, 0, 1), Vec::<String>::new());
    assert_eq!(route(&n, 1, 2), ["a->s", "s->b"]);
}

// ------------------------------------------------------------------------------ contention

/// Two switches joined by a 1 Gbit link, hosts h0 h1 on s0 and h2 h3 on s1 (1 Gbit links):
/// with G = 8 ns per byte the links run at the NIC's rate.
const TWO_RACKS: &str = "switch s0 s1
link s0 s1 1Gbit
host h0 s0 1Gbit
host h1 s0 1Gbit
host h2 s1 1Gbit
host h3 s1 1Gbit
";

fn g8() -> Params {
    Params {
        gap_per_byte: PerByte::ns(8),
        ..Params::default()
    }
}

#[test]
fn two_messages_sharing_a_link_take_twice_as_long_as_one() {
    let n = net(TWO_RACKS);
    let mut c = Contention::new(&n, 4, &g8()).unwrap();
    // 1000 bytes take 8000 ns on every link and out of the NIC. Both leave at 1500 (LogGOPS
    // arrival 4000). 0 -> 2 has every link free: tail at 1500 + 8000 = 9500, nothing added.
    // 1 -> 3 finds s0->s1 busy until 9500: it crosses 9500..17500 and so does s1->h3, its
    // tail is in at 17500: twice the 8000 ns of the first, 8000 ns added to its arrival.
    assert_eq!(c.deliver(0, 0, 2, 1500, 1000, 4000), 4000);
    assert_eq!(c.deliver(1, 0, 3, 1500, 1000, 4000), 12000);
    let s0s1 = n.link_between(0, 1).unwrap();
    assert_eq!(c.link_use(s0s1), (2000, 2, 16000));
    assert_eq!(c.busy_until(s0s1), 17500);
    assert_eq!(c.delays(), (2, 1, 8000));
    // Disjoint links: 0 -> 1 inside s0 and 2 -> 3 inside s1 do not slow each other.
    let mut c = Contention::new(&n, 4, &g8()).unwrap();
    assert_eq!(c.deliver(0, 0, 1, 1500, 1000, 4000), 4000);
    assert_eq!(c.deliver(2, 0, 3, 1500, 1000, 4000), 4000);
    assert_eq!(c.link_use(s0s1), (0, 0, 0));
    assert_eq!(c.delays(), (2, 0, 0));
}

#[test]
fn the_same_two_messages_in_the_engine() {
    let p = parse(
        "rank #0 { send 0,1000 to 2; }
         rank #1 { send 0,1000 to 3; }
         rank #2 { recv 0,1000 from 0; }
         rank #3 { recv 0,1000 from 1; }",
    );
    let prm = g8();
    // LogGOPS: each message arrives at o + L = 4000 and is processed for o + 999·G = 9492:
    // both receivers end at 13492.
    let alone = simulate(&p, &prm, Options::default()).unwrap();
    assert_eq!(alone.end, [1500, 1500, 13492, 13492]);
    // On the two racks the second message arrives 8000 ns later: 12000 + 9492 = 21492.
    let n = net(TWO_RACKS);
    let mut c = Contention::new(&n, 4, &prm).unwrap();
    let o = simulate_on(&p, &prm, Options { trace: true }, &mut c).unwrap();
    assert_eq!(o.end, [1500, 1500, 13492, 21492]);
    assert_eq!(critical_path(&o).last().map(|s| s.via), Some(Via::Message));
    // Disjoint: 0 -> 1 and 2 -> 3 both end at 13492.
    let p = parse(
        "rank #0 { send 0,1000 to 1; }
         rank #1 { recv 0,1000 from 0; }
         rank #2 { send 0,1000 to 3; }
         rank #3 { recv 0,1000 from 2; }",
    );
    let mut c = Contention::new(&n, 4, &prm).unwrap();
    let o = simulate_on(&p, &prm, Options::default(), &mut c).unwrap();
    assert_eq!(o.end, [1500, 13492, 1500, 13492]);
}

#[test]
fn a_multicast_crosses_each_link_once() {
    let n = net(TWO_RACKS);
    let s0s1 = n.link_between(0, 1).unwrap();
    let mut c = Contention::new(&n, 4, &g8()).unwrap();
    c.multicast(0, 0, 1500, 1000, 4000);
    // One copy over s0->s1 that s1 gives to h2 and h3; h1 gets its own from s0. No link is
    // shared by two messages, so every arrival is LogGOPS's.
    assert_eq!(
        (c.arrival(1), c.arrival(2), c.arrival(3)),
        (4000, 4000, 4000)
    );
    assert_eq!(c.link_use(s0s1), (1000, 1, 8000));
    assert_eq!(c.link_use(n.hosts[0].up), (1000, 1, 8000));
    for h in 1..4 {
        assert_eq!(c.link_use(n.hosts[h].down).1, 1);
    }
    assert_eq!(c.delays(), (3, 0, 0));
    // Three sends instead: three copies over s0->s1 and over h0's own link; leaving together
    // they queue: tails at 9500, 17500, 25500.
    let mut c = Contention::new(&n, 4, &g8()).unwrap();
    let at: Vec<u64> = (1..4)
        .map(|q| c.deliver(0, q, q, 1500, 1000, 4000))
        .collect();
    assert_eq!(at, [4000, 12000, 20000]);
    assert_eq!(c.link_use(s0s1).0, 2000);
    assert_eq!(c.link_use(n.hosts[0].up), (3000, 3, 24000));
    // A multicast program: the root reaches ranks on both switches at LogGOPS's time.
    let p = parse("rank #0 { mcast 0,1000; } rank #1, #2, #3 { mrecv 0,1000 from 0; }");
    let mut c = Contention::new(&n, 4, &g8()).unwrap();
    let o = simulate_on(&p, &g8(), Options::default(), &mut c).unwrap();
    assert_eq!(o.end, simulate(&p, &g8(), Options::default()).unwrap().end);
    assert_eq!(c.link_use(s0s1).1, 1);
}

#[test]
fn slow_links_and_latencies_add_to_l() {
    let p = parse("rank #0 { send 0,1000 to 1; } rank #1 { recv 0,1000 from 0; }");
    let prm = g8();
    // 100 Mbit: 80000 ns for 1000 bytes on each link, against the NIC's 8000: the tail is in
    // at 1500 + 80000 (cut-through: the second link carries it at the same time as the
    // first), 72000 later than LogGOPS: arrival 76000, processed by 76000 + 9492.
    let n = net("switch s\nhost a s 100Mbit\nhost b s 100Mbit\n");
    let mut c = Contention::new(&n, 2, &prm).unwrap();
    let o = simulate_on(&p, &prm, Options::default(), &mut c).unwrap();
    assert_eq!(o.end, [1500, 85492]);
    // At the NIC's rate with 100 ns on each host link: 200 ns more than LogGOPS.
    let n = net("switch s\nhost a s nic 100ns\nhost b s nic 100\n");
    let mut c = Contention::new(&n, 2, &prm).unwrap();
    let o = simulate_on(&p, &prm, Options::default(), &mut c).unwrap();
    assert_eq!(o.end, [1500, 13692]);
    // A fast network does not beat the NIC: 100 Gbit links give LogGOPS's time.
    let n = net("switch s\nhost a s 100Gbit\nhost b s 100Gbit\n");
    let mut c = Contention::new(&n, 2, &prm).unwrap();
    let o = simulate_on(&p, &prm, Options::default(), &mut c).unwrap();
    assert_eq!(o.end, [1500, 13492]);
}

/// A one-switch star with one host per rank, host links at `rate`.
fn star(n: u32, rate: &str) -> Network {
    let mut s = "switch hub\n".to_string();
    for h in 0..n {
        s += &format!("host h{h} hub {rate}\n");
    }
    net(&s)
}

#[test]
fn a_star_at_the_nics_rate_without_sharing_is_loggops() {
    // G = 8 ns per byte is 1 Gbit/s. In these programs no link carries two messages at once
    // (a rank's sends are g + (s-1)·G apart, more than the 8·s ns a message holds its link,
    // and each rank receives one message at a time), so every time is LogGOPS's.
    let prm = g8();
    let programs = [
        gen::generate(gen::Algo::BinomialBcast, 8, 0, 1000).unwrap(),
        gen::generate(gen::Algo::BinomialBcast, 16, 5, 1).unwrap(),
        dissemination(16),
    ];
    for p in &programs {
        let plain = simulate(p, &prm, Options { trace: true }).unwrap();
        for rate in ["1Gbit", "nic", ""] {
            let n = star(p.num_ranks(), rate);
            let mut c = Contention::new(&n, p.num_ranks(), &prm).unwrap();
            let o = simulate_on(p, &prm, Options { trace: true }, &mut c).unwrap();
            assert_eq!(o.end, plain.end, "{rate}");
            assert_eq!(o.events, plain.events);
            assert_eq!(critical_path(&o), critical_path(&plain));
            assert_eq!(c.delays().1, 0);
        }
    }
    // The dissemination of LogGOPSim's README: 22000 ns, network or not.
    let p = dissemination(16);
    let mut c = Contention::new(&star(16, "1Gbit"), 16, &prm).unwrap();
    assert_eq!(
        simulate_on(&p, &prm, Options::default(), &mut c)
            .unwrap()
            .max,
        22000
    );
}

#[test]
fn too_few_places_is_an_error_when_simulating() {
    let n = net("switch s\nhost a s\nhost b s\n");
    let e = Contention::new(&n, 3, &Params::default()).err().unwrap();
    assert_eq!(
        e,
        "net.txt: the program has 3 ranks but 2 hosts hold 2 (one rank per host; \
         `ranks-per-host K` places more)"
    );
}

#[test]
fn mpi_order_survives_a_bigger_second_message() {
    // A small message then a big one from rank 0 to rank 1, both queued on s0->s1 behind rank
    // 2's traffic, on links faster than the NIC (G = 8 ns per byte is 1 Gbit/s; the links run
    // at 100 Gbit/s). The arrival is the tail's time minus the s·G LogGOPS charges at the
    // receiver, and the big one's s·G is larger: it must still not pass the small one.
    let n = net("switch s0 s1\nlink s0 s1 100Gbit\nhost a s0 100Gbit\nhost b s1 100Gbit\nhost c s0 100Gbit\n");
    let mut c = Contention::new(&n, 3, &g8()).unwrap();
    // Rank 2's 125000 bytes leave at 0: out of its NIC at 1000000, which is when they have
    // left s0->s1 and s1->b too (cut-through); nothing added.
    assert_eq!(c.deliver(2, 0, 1, 0, 125_000, 2500), 2500);
    // 100 bytes at 100 (out of the NIC at 900): s0->s1 and s1->b from 1000000 to 1000008.
    // Arrival 2600 + 1000008 - 900.
    let small = c.deliver(0, 0, 1, 100, 100, 2600);
    assert_eq!(small, 1_001_708);
    // 10000 bytes at 2000 (out of the NIC at 82000): s0->s1 from 1000008 to 1000808 (800 ns
    // at 100 Gbit), its tail at b then too: 4500 + 1000808 - 82000 = 923308, before the small
    // one. Raised to the small one's arrival.
    let big = c.deliver(0, 1, 1, 2000, 10_000, 4500);
    assert_eq!(big, small);
    assert_eq!(c.busy_until(n.link_between(0, 1).unwrap()), 1_000_808);
}

/// LogGOPSim's dissemination among `n` ranks (as in its README): in round r rank i sends 1
/// byte to i + 2^r and receives from i - 2^r; a round's send waits for the last receive.
fn dissemination(n: u32) -> Program {
    let mut s = format!("num_ranks {n}\n");
    for i in 0..n {
        s += &format!("rank {i} {{\n");
        let mut d = 1;
        let mut r = 0;
        while d < n {
            s += &format!(
                "s{r}: send 1b to {} tag {r}\nr{r}: recv 1b from {} tag {r}\n",
                (i + d) % n,
                (i + n - d) % n
            );
            if r > 0 {
                s += &format!("s{r} requires r{}\n", r - 1);
            }
            d *= 2;
            r += 1;
        }
        s += "}\n";
    }
    parse(&s)
}

// ------------------------------------------------------------------------------ properties

/// A random connected network as text: a random tree over the switches plus random extra
/// cables, written in a random order, hosts on random switches, a random placement.
pub(super) fn random_network(rng: &mut Rng, ranks: u32) -> String {
    let nsw = 1 + rng.below(7);
    let rates = ["100Mbit", "1Gbit", "2.5Gbit", "10Gbit", "400Mbit"];
    let mut lines: Vec<String> = Vec::new();
    let mut cables = std::collections::BTreeSet::new();
    for s in 1..nsw {
        cables.insert((rng.below(s), s));
    }
    for _ in 0..rng.below(nsw * 2) {
        let (a, b) = (rng.below(nsw), rng.below(nsw));
        if a != b {
            cables.insert((a.min(b), a.max(b)));
        }
    }
    for (a, b) in cables {
        let lat = if rng.chance(30) {
            format!(" {}ns", rng.below(300))
        } else {
            String::new()
        };
        let (a, b) = if rng.chance(50) { (a, b) } else { (b, a) };
        lines.push(format!(
            "link s{a} s{b} {}{lat}",
            rates[rng.below(rates.len())]
        ));
    }
    let nhosts = 1 + rng.below(ranks as usize);
    for h in 0..nhosts {
        let rate = match rng.below(3) {
            0 => String::new(),
            1 => " nic".to_string(),
            _ => format!(" {}", rates[rng.below(rates.len())]),
        };
        lines.push(format!("host h{h} s{}{rate}", rng.below(nsw)));
    }
    if rng.chance(50) {
        for r in 0..ranks {
            lines.push(format!("rank {r} h{}", rng.below(nhosts)));
        }
    } else {
        lines.push(format!(
            "ranks-per-host {}",
            (ranks as usize).div_ceil(nhosts)
        ));
    }
    // Shuffle: the file's order must not matter, except the switches' own.
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i + 1));
    }
    let sw: Vec<String> = (0..nsw).map(|s| format!("s{s}")).collect();
    format!("switch {}\n{}\n", sw.join(" "), lines.join("\n"))
}

/// Switch-to-switch hop counts, all pairs (Floyd-Warshall: not the code under test).
fn hops(n: &Network) -> Vec<Vec<usize>> {
    let k = n.switches.len();
    let mut d = vec![vec![usize::MAX / 2; k]; k];
    for (i, row) in d.iter_mut().enumerate() {
        row[i] = 0;
    }
    for l in &n.links {
        if let (network::Node::Switch(a), network::Node::Switch(b)) = (l.from, l.to) {
            d[a as usize][b as usize] = 1;
        }
    }
    for m in 0..k {
        for i in 0..k {
            for j in 0..k {
                d[i][j] = d[i][j].min(d[i][m] + d[m][j]);
            }
        }
    }
    d
}

#[test]
fn random_networks_and_traffic() {
    let mut rng = Rng::new(403);
    for case in 0..400 {
        let ranks = 2 + rng.below(9) as u32;
        let text = random_network(&mut rng, ranks);
        let n = Network::parse(&text, "r").unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let prm = Params {
            gap_per_byte: PerByte::ps([0, 1000, 5000, 8000, 20_000, 80, 375][rng.below(7)]),
            ..Params::default()
        };
        let host = n.places(ranks).unwrap();
        let d = hops(&n);
        let mut c = Contention::new(&n, ranks, &prm).unwrap();
        // Every route is a chain of links from the sender's host to the receiver's, with as
        // few switch hops as the graph allows.
        for a in 0..ranks {
            for b in 0..ranks {
                let r = c.route(a, b);
                let (ha, hb) = (
                    &n.hosts[host[a as usize] as usize],
                    &n.hosts[host[b as usize] as usize],
                );
                if host[a as usize] == host[b as usize] {
                    assert!(r.is_empty(), "case {case}");
                    continue;
                }
                assert_eq!((r[0], *r.last().unwrap()), (ha.up, hb.down), "case {case}");
                for w in r.windows(2) {
                    assert_eq!(
                        n.links[w[0] as usize].to, n.links[w[1] as usize].from,
                        "case {case}"
                    );
                }
                assert_eq!(
                    r.len() - 2,
                    d[ha.switch as usize][hb.switch as usize],
                    "case {case}\n{text}"
                );
            }
        }
        // Random traffic, sent in time order.
        let mut t = 0u64;
        let mut want = vec![(0u64, 0u64, 0u64); n.links.len()];
        let mut last = std::collections::HashMap::new();
        for m in 0..1 + rng.below(40) as u32 {
            t += if rng.chance(40) {
                0
            } else {
                rng.below(20000) as u64
            };
            let bytes = [1u64, 8, 1000, 65536][rng.below(4)];
            let free = t + 2500;
            let src = rng.below(ranks as usize) as u32;
            let mcast = rng.chance(20);
            let mut arrivals = Vec::new();
            let mut used = std::collections::BTreeSet::new();
            if mcast {
                c.multicast(src, m, t, bytes, free);
                for q in (0..ranks).filter(|&q| q != src) {
                    used.extend(c.route(src, q));
                    arrivals.push((q, c.arrival(q)));
                }
            } else {
                let dst = rng.below(ranks as usize) as u32;
                arrivals.push((dst, c.deliver(src, m, dst, t, bytes, free)));
                used.extend(c.route(src, dst));
            }
            for l in used {
                let w = &mut want[l as usize];
                w.0 += bytes;
                w.1 += 1;
                w.2 += n.links[l as usize].rate.time(bytes, prm.gap_per_byte);
            }
            for (dst, at) in arrivals {
                assert_eq!(c.arrived(src, m, dst), at, "case {case}");
                // Alone on the network, by the closed form of cut-through: LogGOPS, plus the
                // route's latencies, plus what its slowest link makes the tail wait over the
                // NIC's own s·G.
                let r = c.route(src, dst);
                let lat: u64 = r.iter().map(|&l| n.links[l as usize].latency).sum();
                let own = prm.gap_per_byte.time(bytes);
                let slow = r
                    .iter()
                    .map(|&l| n.links[l as usize].rate.time(bytes, prm.gap_per_byte))
                    .max()
                    .unwrap_or(0);
                let solo = free + lat + slow.max(own) - own;
                let mut fresh = Contention::new(&n, ranks, &prm).unwrap();
                let first = if mcast {
                    fresh.multicast(src, 0, t, bytes, free);
                    fresh.arrival(dst)
                } else {
                    fresh.deliver(src, 0, dst, t, bytes, free)
                };
                assert_eq!(first, solo, "case {case}: message {m} to {dst} alone");
                // Never earlier than alone, and never before the last of the same channel.
                assert!(
                    at >= solo,
                    "case {case}: message {m} to {dst}: {at} < {solo}"
                );
                let prev = last.insert((src, dst, mcast), at).unwrap_or(0);
                assert!(at >= prev, "case {case}: message {m} to {dst} overtook");
            }
        }
        // Bytes and messages over each link are what the routes imply (a multicast's once),
        // and a link carried one message at a time: it was held at least as long as its
        // messages need, and its busy times do not overlap (they fit between 0 and the time it
        // is free).
        for (l, w) in want.iter().enumerate() {
            let l = l as LinkId;
            let (bytes, msgs, held) = c.link_use(l);
            assert_eq!(
                (bytes, msgs),
                (w.0, w.1),
                "case {case}: link {}",
                n.link_name(l)
            );
            assert!(
                held >= w.2 && c.busy_until(l) >= held,
                "case {case}: link {}",
                n.link_name(l)
            );
        }
    }
}
