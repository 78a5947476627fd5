use super::*;

/// `hosts[r]` is rank r's host; every rank took part; `sent` of each.
fn results(hosts: &[&str], sent: u32) -> JobResults {
    let n = hosts.len();
    let full = |what: &str, size: usize| Round {
        what: what.into(),
        port: 23000,
        ttl: 1,
        size,
        sent,
        took_part: vec![true; n],
        got: (0..n)
            .map(|r| (0..n).map(|s| if r == s { 0 } else { sent }).collect())
            .collect(),
        hub: None,
    };
    let mut hi = full("multicast", 64);
    hi.port = 23999;
    let mut hs: Vec<&str> = hosts.to_vec();
    hs.dedup();
    JobResults {
        ranks: hosts
            .iter()
            .enumerate()
            .map(|(r, h)| RankInfo {
                host: h.to_string(),
                iface: Some(("eth0".into(), Ipv4Addr::new(10, 0, 0, r as u8 + 1))),
                mtu: 1500,
                payload: 1472,
                join_error: None,
            })
            .collect(),
        hosts: hs
            .iter()
            .map(|h| HostSection {
                host: h.to_string(),
                ranks: (0..n as u32).filter(|&r| hosts[r as usize] == *h).collect(),
                rows: "  interface  eth0\n".into(),
                json: "{\"host\": null}".into(),
                findings: Vec::new(),
            })
            .collect(),
        group: Ipv4Addr::new(239, 255, 0, 1),
        ports: (23000, 23999),
        ttl: 1,
        small: vec![full("multicast", 64), hi],
        large: Some(full("full-size multicast", 1472)),
        retry: None,
        rate_size: 1472,
        link_mbps: Some(100),
        rates: [10u64, 30, 100]
            .iter()
            .map(|&t| RateStep {
                target_mbps: t,
                achieved_mbps: t as f64 * 0.97,
                sent: 200,
                got: vec![200; n],
            })
            .collect(),
        unicast: Some(full("unicast", 64)),
        queriers: hs
            .iter()
            .map(|h| QuerierWatch {
                host: h.to_string(),
                listened_ms: 3000,
                heard: Vec::new(),
                error: None,
            })
            .collect(),
        after_long: None,
    }
}

fn codes(j: &JobResults) -> Vec<&'static str> {
    diagnose(j).iter().map(|f| f.code).collect()
}

fn silence(rd: &mut Round, s: usize, r: usize) {
    rd.got[r][s] = 0;
}

const FOUR: [&str; 4] = ["h1", "h2", "h3", "h4"];

#[test]
fn a_healthy_job_has_no_finding() {
    let j = results(&FOUR, 20);
    assert!(diagnose(&j).is_empty(), "{:?}", diagnose(&j));
    let t = to_text(&j, &[]);
    assert!(t.contains("every pair: all 20 arrived"), "{t}");
    assert!(
        t.contains("Multicast works between every pair of ranks"),
        "{t}"
    );
    assert!(t.contains("highest rate without loss: 97 Mbit/s"), "{t}");
    let v: serde_json::Value = serde_json::from_str(&to_json(&j, &[])).unwrap();
    assert_eq!(v["problems"], 0);
    assert_eq!(v["multicast"][0]["got"][1][0], 20);
    assert_eq!(v["rates"]["loss_free_mbps"], 97.0);
}

#[test]
fn a_rank_that_hears_nobody_is_named_with_the_firewall_fix() {
    let mut j = results(&FOUR, 20);
    for rd in j.small.iter_mut().chain(j.large.iter_mut()) {
        for s in 0..4 {
            silence(rd, s, 2);
        }
    }
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["hears-nothing"], "{d:?}");
    assert!(
        d[0].what.starts_with("rank 2 (h3) hears no multicast"),
        "{}",
        d[0].what
    );
    assert!(
        d[0].fix.contains("udp dport 23000-23999 accept"),
        "{}",
        d[0].fix
    );
    assert!(d[0].fix.contains("--dport 23000:23999"), "{}", d[0].fix);
    // On one port only: the message says which.
    let mut j = results(&FOUR, 20);
    for s in 0..4 {
        silence(&mut j.small[1], s, 2);
    }
    let d = diagnose(&j);
    assert!(
        d[0].what
            .contains("(on port 23999; the other port tried worked)"),
        "{}",
        d[0].what
    );
}

#[test]
fn a_rank_nobody_hears_and_a_rank_cut_off() {
    let mut j = results(&FOUR, 20);
    for r in 0..4 {
        silence(&mut j.small[0], 1, r);
        silence(&mut j.small[1], 1, r);
    }
    assert_eq!(codes(&j), ["heard-by-nobody"]);
    for s in 0..4 {
        silence(&mut j.small[0], s, 1);
        silence(&mut j.small[1], s, 1);
    }
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["cut-off"], "{d:?}");
    assert!(d[0].what.contains("rank 1 (h2)"), "{}", d[0].what);
}

#[test]
fn ranks_on_one_host_hear_each_other_but_nothing_crosses() {
    let hosts = ["a", "a", "b", "b"];
    let mut j = results(&hosts, 20);
    for rd in j.small.iter_mut() {
        for (s, r) in [
            (0, 2),
            (0, 3),
            (1, 2),
            (1, 3),
            (2, 0),
            (2, 1),
            (3, 0),
            (3, 1),
        ] {
            silence(rd, s, r);
        }
    }
    assert_eq!(codes(&j), ["no-crossing"]);
    // The same, with a higher TTL that works: the TTL is named, with its fix.
    j.ttl = 0;
    j.retry = Some(results(&hosts, 20).small[0].clone());
    j.retry.as_mut().unwrap().ttl = 32;
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["ttl"], "{d:?}");
    assert!(d[0]
        .what
        .contains("TTL 0 keeps every datagram on its own host"));
    assert!(d[0].fix.starts_with("MPICAST_TTL=1"), "{}", d[0].fix);
}

#[test]
fn full_size_datagrams_lost_where_small_arrive_is_the_path_mtu() {
    let mut j = results(&FOUR, 20);
    silence(j.large.as_mut().unwrap(), 0, 3);
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["path-mtu"], "{d:?}");
    assert!(
        d[0].what.contains("rank 0 (h1) to rank 3 (h4)"),
        "{}",
        d[0].what
    );
}

#[test]
fn mtus_that_differ_are_a_warning() {
    let mut j = results(&FOUR, 20);
    j.ranks[2].mtu = 1000;
    j.ranks[2].payload = 972;
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["mtu-differs"]);
    assert_eq!(d[0].severity, Severity::Warning);
    assert!(
        d[0].what.contains("h3 has MTU 1000, the others up to 1500"),
        "{}",
        d[0].what
    );
    assert!(d[0].what.contains("972 bytes"), "{}", d[0].what);
}

#[test]
fn steady_loss_at_a_low_rate_is_named_and_congestion_is_not() {
    let mut j = results(&FOUR, 20);
    for st in j.rates.iter_mut() {
        st.got[1] = 190;
    }
    j.small[0].got[1][0] = 19;
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["loss"], "{d:?}");
    assert!(d[0].what.contains("rank 1 (h2) 5.0 %"), "{}", d[0].what);
    assert_eq!(loss_free_rate(&j), None);
    let t = to_text(&j, &d);
    assert!(
        t.contains("some lost from rank 0 (h1) to rank 1 (h2)"),
        "{t}"
    );
    // Loss only at the top rate: congestion, no finding, and the rate below is the answer.
    let mut j = results(&FOUR, 20);
    j.rates[2].got[3] = 150;
    assert!(diagnose(&j).is_empty());
    assert_eq!(loss_free_rate(&j).map(|r| r.0), Some(30));
}

#[test]
fn unicast_that_does_not_arrive_is_a_problem_and_hubs_limit_the_pairs() {
    let mut j = results(&FOUR, 20);
    let u = j.unicast.as_mut().unwrap();
    u.got[0][3] = 0;
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["unicast-blocked"]);
    assert!(
        d[0].what.contains("rank 3 (h4) to rank 0 (h1)"),
        "{}",
        d[0].what
    );
    // With a hub, the pairs not tried are not silent.
    let u = j.unicast.as_mut().unwrap();
    u.got[0][3] = 20;
    u.hub = Some(0);
    u.got[2][1] = 0;
    assert!(diagnose(&j).is_empty());
}

#[test]
fn long_wait_finds_a_missing_querier_and_an_expired_group() {
    let mut j = results(&FOUR, 20);
    let mut after = j.small[0].clone();
    j.after_long = Some((130, after.clone()));
    assert_eq!(codes(&j), ["no-querier"]);
    silence(&mut after, 0, 1);
    j.after_long = Some((130, after));
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["group-expired", "no-querier"], "{d:?}");
    assert!(
        d[0].what.contains("IGMP snooping without a querier"),
        "{}",
        d[0].what
    );
    j.queriers[0].heard.push(Ipv4Addr::new(10, 0, 0, 254));
    assert_eq!(codes(&j), ["group-expired"]);
    let t = to_text(&j, &diagnose(&j));
    assert!(t.contains("h1: queries heard from 10.0.0.254"), "{t}");
    assert!(t.contains("after 130 s (--long)"), "{t}");
}

#[test]
fn host_findings_and_failed_joins_carry_their_host() {
    let mut j = results(&FOUR, 20);
    j.hosts[1].findings.push(Finding {
        severity: Severity::Problem,
        code: "iface-down",
        what: "the interface eth0 is down".into(),
        fix: "ip link set dev eth0 up".into(),
    });
    j.ranks[1].join_error = Some("no interface".into());
    for rd in j.small.iter_mut().chain(j.large.iter_mut()) {
        rd.took_part[1] = false;
    }
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["iface-down", "no-join"], "{d:?}");
    assert_eq!(d[0].what, "h2: the interface eth0 is down");
    let t = to_text(&j, &d);
    assert!(t.contains("    to\\from"), "{t}");
    assert!(
        t.contains("?"),
        "ranks that did not take part show as ?: {t}"
    );
    let v: serde_json::Value = serde_json::from_str(&to_json(&j, &d)).unwrap();
    assert_eq!(v["problems"], 2);
    assert_eq!(v["findings"][0]["code"], "iface-down");
}

#[test]
fn options_parse() {
    assert_eq!(Options::parse("").unwrap(), Options::default());
    let o = Options::parse("json long count=5").unwrap();
    assert!(o.json);
    assert_eq!(o.long_secs, LONG_DEFAULT_SECS);
    assert_eq!(o.count, 5);
    assert_eq!(Options::parse("long=20").unwrap().long_secs, 20);
    assert!(Options::parse("loud").unwrap_err().contains("loud"));
    assert!(Options::parse("count=x").unwrap_err().contains("number"));
}

#[test]
fn codec_round_trips() {
    assert_eq!(
        codec::split(&codec::join(&["a b", "", "c"])),
        ["a b", "", "c"]
    );
    assert_eq!(
        codec::from_u32s(&codec::u32s(&[1, u32::MAX, 0])),
        [1, u32::MAX, 0]
    );
}

#[test]
fn a_group_learned_late_is_said_with_the_problem() {
    let hosts = ["a", "b"];
    let mut j = results(&hosts, 20);
    let after = j.small[0].clone();
    for rd in j.small.iter_mut() {
        silence(rd, 0, 1);
        silence(rd, 1, 0);
    }
    j.after_long = Some((12, after));
    j.queriers[0].heard.push(Ipv4Addr::UNSPECIFIED);
    let d = diagnose(&j);
    assert_eq!(codes(&j), ["no-crossing"], "{d:?}");
    assert!(
        d[0].what
            .contains("after the 12 s wait of --long every pair heard each other"),
        "{}",
        d[0].what
    );
}

#[test]
fn one_host_has_no_querier_to_miss() {
    let mut j = results(&["a", "a"], 20);
    j.after_long = Some((5, j.small[0].clone()));
    assert!(diagnose(&j).is_empty());
}
