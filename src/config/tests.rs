use super::env::has_prefix;
use super::file::EXPECT_LINE;
use super::*;
use crate::algo::prefix::{Pick, Route};
use std::collections::HashMap;
use std::net::Ipv4Addr;

fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| m.get(k).cloned())
}

fn bad(var: &str, value: &str) -> ConfigError {
    let e = cfg(&[(var, value)]).expect_err(&format!("{var}={value} should be rejected"));
    assert_eq!(e.var, var);
    assert_eq!(e.value, value);
    e
}

#[test]
fn defaults() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c, Config::default());
    assert!(!c.disable);
    assert_eq!(c.iface, None);
    assert_eq!(c.ttl, 1);
    assert_eq!(c.group, (Ipv4Addr::new(239, 255, 0, 0), 16));
    assert_eq!(c.ports, (23000, 23999));
    assert_eq!(c.sync, SyncAlgo::Tree);
    assert_eq!(c.min_bytes, MinBytes::Auto);
    assert_eq!(c.frag_bytes, None);
    assert_eq!(c.rcvbuf, 8 * 1024 * 1024);
    assert_eq!(c.timeout_ms, 30_000);
    assert_eq!(c.probe_ms, 500);
    assert!(!c.stats);
    assert_eq!(c.verbose, 0);
}

#[test]
fn table_defaults_agree_with_default() {
    // The table is what users read; parse each documented default and compare.
    let pairs: Vec<(&str, &str)> = VARIABLES
        .iter()
        .filter(|(_, d, _)| !d.starts_with('('))
        .map(|(n, d, _)| (*n, *d))
        .collect();
    assert_eq!(cfg(&pairs).unwrap(), Config::default());
    let names: Vec<&str> = VARIABLES.iter().map(|v| v.0).collect();
    for n in &names {
        assert!(n.starts_with(PREFIX));
        assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n} twice");
    }
    assert_eq!(names.len(), 36);
}

#[test]
fn empty_and_blank_mean_unset() {
    for name in VARIABLES.iter().map(|v| v.0) {
        assert_eq!(cfg(&[(name, "")]).unwrap(), Config::default(), "{name}");
        assert_eq!(cfg(&[(name, "  ")]).unwrap(), Config::default(), "{name}");
    }
}

#[test]
fn booleans() {
    for (v, want) in [
        ("1", true),
        ("true", true),
        ("YES", true),
        ("On", true),
        ("0", false),
        ("false", false),
        ("no", false),
        ("OFF", false),
        (" 1 ", true),
    ] {
        assert_eq!(cfg(&[("MPICAST_DISABLE", v)]).unwrap().disable, want, "{v}");
        assert_eq!(cfg(&[("MPICAST_STATS", v)]).unwrap().stats, want, "{v}");
        let waits = cfg(&[("MPICAST_ROOT_WAITS", v)]).unwrap().root_waits;
        assert_eq!(waits, want, "{v}");
    }
    for v in ["2", "y", "enable", "-1", "truee"] {
        bad("MPICAST_DISABLE", v);
        bad("MPICAST_STATS", v);
        bad("MPICAST_ROOT_WAITS", v);
    }
}

#[test]
fn ttl_and_verbose() {
    assert_eq!(cfg(&[("MPICAST_TTL", "0")]).unwrap().ttl, 0);
    assert_eq!(cfg(&[("MPICAST_TTL", "255")]).unwrap().ttl, 255);
    for v in ["256", "-1", "+3", "abc", "1.0", "0x10"] {
        bad("MPICAST_TTL", v);
    }
    assert_eq!(cfg(&[("MPICAST_VERBOSE", "2")]).unwrap().verbose, 2);
    assert!(cfg(&[("MPICAST_VERBOSE", "3")]).is_err());
    for v in ["4", "255", "x"] {
        bad("MPICAST_VERBOSE", v);
    }
}

#[test]
fn display_names_variable_value_and_expectation() {
    let e = bad("MPICAST_TTL", "abc");
    assert_eq!(
        e.to_string(),
        "mpicast: MPICAST_TTL=abc is invalid: expected an integer 0..=255"
    );
}

#[test]
fn iface_forms() {
    let f = |v| cfg(&[("MPICAST_IFACE", v)]).unwrap().iface.unwrap();
    assert_eq!(f("eth0"), IfaceSpec::Name("eth0".into()));
    assert_eq!(f("eth0:1"), IfaceSpec::Name("eth0:1".into()));
    assert_eq!(f("enp0s31f6"), IfaceSpec::Name("enp0s31f6".into()));
    assert_eq!(f("10.1.2.3"), IfaceSpec::Addr(Ipv4Addr::new(10, 1, 2, 3)));
    assert_eq!(
        f("10.1.0.0/16"),
        IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 0, 0), 16)
    );
    // Host bits are cleared, so `ip addr` output can be pasted.
    assert_eq!(
        f("10.1.2.3/16"),
        IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 0, 0), 16)
    );
    assert_eq!(
        f("10.1.2.3/32"),
        IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 2, 3), 32)
    );
    assert_eq!(f("10.1.2.3/0"), IfaceSpec::Cidr(Ipv4Addr::UNSPECIFIED, 0));
    assert_eq!(f(" lo "), IfaceSpec::Name("lo".into()));
    for v in [
        "10.1.2.300",
        "10.1.2",
        "10.1.0.0/33",
        "10.1.0.0/",
        "10.1.0.0/-1",
        "10.1.0.0/016",
        "/16",
        "10.1.0.0/16/2",
        "averyverylongname0",
        "eth 0",
    ] {
        bad("MPICAST_IFACE", v);
    }
    assert_eq!(
        f("10.1.0.0/ 8"),
        IfaceSpec::Cidr(Ipv4Addr::new(10, 0, 0, 0), 8)
    );
}

#[test]
fn iface_display_roundtrips() {
    for v in ["eth0", "10.1.2.3", "10.1.0.0/16"] {
        let s = cfg(&[("MPICAST_IFACE", v)]).unwrap().iface.unwrap();
        assert_eq!(s.to_string(), v);
    }
}

#[test]
fn group_forms() {
    let f = |v| cfg(&[("MPICAST_GROUP", v)]).unwrap().group;
    assert_eq!(f("239.1.0.0/16"), (Ipv4Addr::new(239, 1, 0, 0), 16));
    assert_eq!(f("224.0.0.0/4"), (Ipv4Addr::new(224, 0, 0, 0), 4));
    assert_eq!(f("239.255.7.7/32"), (Ipv4Addr::new(239, 255, 7, 7), 32));
    assert_eq!(
        f("239.255.255.255/32"),
        (Ipv4Addr::new(239, 255, 255, 255), 32)
    );
    for v in [
        "0.0.0.0/0",      // covers everything
        "224.0.0.0/3",    // wider than the multicast block
        "192.168.0.0/16", // not multicast
        "240.0.0.0/8",    // reserved, just above it
        "239.255.7.7/16", // host bits set: rejected, not normalised
        "239.255.0.0",    // a subnet is required
        "239.255.0.0/33",
        "239.255.0.0/abc",
    ] {
        bad("MPICAST_GROUP", v);
    }
}

#[test]
fn ports() {
    let f = |v| cfg(&[("MPICAST_PORT", v)]).unwrap().ports;
    assert_eq!(f("5000"), (5000, 5000));
    assert_eq!(f("1024-65535"), (1024, 65535));
    assert_eq!(f("23000 - 23010"), (23000, 23010));
    assert_eq!(f("7000-7000"), (7000, 7000));
    for v in [
        "1023",
        "80-9000",
        "9000-8000",
        "65536",
        "5000-",
        "-5000",
        "5000-6000-7000",
        "x",
    ] {
        bad("MPICAST_PORT", v);
    }
}

#[test]
fn sync() {
    let f = |v| cfg(&[("MPICAST_SYNC", v)]).unwrap().sync;
    assert_eq!(f("tree"), SyncAlgo::Tree);
    assert_eq!(f("LINEAR"), SyncAlgo::Linear);
    bad("MPICAST_SYNC", "ring");
}

#[test]
fn sizes_and_suffixes() {
    let f = |v| match cfg(&[("MPICAST_MIN_BYTES", v)]).unwrap().min_bytes {
        MinBytes::Fixed(n) => n,
        MinBytes::Auto => panic!("{v} gave auto"),
    };
    assert_eq!(f("0"), 0);
    assert_eq!(f("1500"), 1500);
    assert_eq!(f("4k"), 4096);
    assert_eq!(f("4K"), 4096);
    assert_eq!(f("4KiB"), 4096);
    assert_eq!(f("4kib"), 4096);
    assert_eq!(f("4 KiB"), 4096);
    assert_eq!(f("2m"), 2 << 20);
    assert_eq!(f("2M"), 2 << 20);
    assert_eq!(f("2MiB"), 2 << 20);
    assert_eq!(f("1G"), 1 << 30);
    for v in [
        "4kB",
        "4MB",
        "1.5M",
        "-1",
        "k",
        "4 k b",
        "4x",
        "99999999999999999999",
        "18014398509481984G",
    ] {
        bad("MPICAST_MIN_BYTES", v);
    }
}

#[test]
fn frag_bytes() {
    let f = |v| cfg(&[("MPICAST_FRAG_BYTES", v)]).unwrap().frag_bytes;
    assert_eq!(f("64"), Some(64));
    assert_eq!(f("65000"), Some(65000));
    assert_eq!(f("8k"), Some(8192));
    assert_eq!(f("auto"), None);
    for v in ["63", "65001", "64k", "0", "x"] {
        bad("MPICAST_FRAG_BYTES", v);
    }
}

#[test]
fn topo() {
    let f = |v| cfg(&[("MPICAST_TOPO", v)]).unwrap().topo;
    assert_eq!(cfg(&[]).unwrap().topo, Topo::Auto);
    assert_eq!(f("auto"), Topo::Auto);
    assert_eq!(f("FLAT"), Topo::Flat);
    assert_eq!(f(" leaders "), Topo::Leaders);
    for v in ["tree", "hier", "1"] {
        bad("MPICAST_TOPO", v);
    }
}

#[test]
fn rcvbuf() {
    let f = |v| cfg(&[("MPICAST_RCVBUF", v)]).unwrap().rcvbuf;
    assert_eq!(f("64k"), 65536);
    assert_eq!(f("65536"), 65536);
    assert_eq!(f("32MiB"), 32 << 20);
    assert_eq!(f("1G"), 1 << 30);
    for v in ["65535", "63k", "2G", "0", "lots"] {
        bad("MPICAST_RCVBUF", v);
    }
}

#[test]
fn timeouts() {
    let c = cfg(&[("MPICAST_TIMEOUT_MS", "1"), ("MPICAST_PROBE_MS", "20000")]).unwrap();
    assert_eq!((c.timeout_ms, c.probe_ms), (1, 20000));
    for v in ["0", "-5", "1s", "1.5"] {
        bad("MPICAST_TIMEOUT_MS", v);
        bad("MPICAST_PROBE_MS", v);
    }
}

#[test]
fn progress_is_auto_by_default_and_takes_three_words() {
    assert_eq!(cfg(&[]).unwrap().progress, Progress::Auto);
    for (word, want) in [
        ("auto", Progress::Auto),
        ("POLL", Progress::Poll),
        ("thread", Progress::Thread),
    ] {
        assert_eq!(cfg(&[("MPICAST_PROGRESS", word)]).unwrap().progress, want);
    }
    let e = cfg(&[("MPICAST_PROGRESS", "threads")]).unwrap_err();
    assert!(e.to_string().contains("auto, poll or thread"), "{e}");
}

#[test]
fn every_variable_is_parsed() {
    let c = cfg(&[
        ("MPICAST_DISABLE", "yes"),
        ("MPICAST_IFACE", "ib0"),
        ("MPICAST_TTL", "4"),
        ("MPICAST_GROUP", "239.7.0.0/24"),
        ("MPICAST_PORT", "30000-30099"),
        ("MPICAST_SYNC", "linear"),
        ("MPICAST_TOPO", "leaders"),
        ("MPICAST_MIN_BYTES", "0"),
        ("MPICAST_FRAG_BYTES", "8000"),
        ("MPICAST_RCVBUF", "16M"),
        ("MPICAST_TIMEOUT_MS", "100"),
        ("MPICAST_PROBE_MS", "50"),
        ("MPICAST_STATS", "on"),
        ("MPICAST_VERBOSE", "2"),
        ("MPICAST_PROGRESS", "Thread"),
        ("MPICAST_EAGER_BYTES", "2k"),
        ("MPICAST_ROOT_WAITS", "1"),
        ("MPICAST_GOAL_WINDOW", "64"),
        ("MPICAST_TOPO_ID", "0.7"),
        ("MPICAST_TOPO_FILE", "/etc/mpicast/topo"),
        ("MPICAST_TOPO_BASE", "8"),
        ("MPICAST_TOPO_PICK", "random:42"),
        ("MPICAST_IMCAST_ROUTE", "table"),
        ("MPICAST_SEGMENT_BYTES", "64k"),
        ("MPICAST_IMCAST_BUFFER", "2MiB"),
        ("MPICAST_IMCAST_TRANSPORT", "p2p"),
        ("MPICAST_IMCAST_IP_SHARE", "75"),
        ("MPICAST_IMCAST_IP_BYTES", "1k"),
        ("MPICAST_DBCAST_TREE", "Topo"),
        ("MPICAST_DBCAST_CHAIN_BYTES", "off"),
        ("MPICAST_SWITCH_TOPOLOGY", "/etc/fabric.net"),
        ("MPICAST_MMCAST_ALGO", "SameTree-Cyclic"),
        ("MPICAST_FANOUT", "on"),
        ("MPICAST_FANOUT_BYTES", "4k"),
    ])
    .unwrap();
    assert_eq!(
        c,
        Config {
            disable: true,
            iface: Some(IfaceSpec::Name("ib0".into())),
            ttl: 4,
            group: (Ipv4Addr::new(239, 7, 0, 0), 24),
            ports: (30000, 30099),
            sync: SyncAlgo::Linear,
            topo: Topo::Leaders,
            min_bytes: MinBytes::Fixed(0),
            frag_bytes: Some(8000),
            rcvbuf: 16 << 20,
            timeout_ms: 100,
            probe_ms: 50,
            suspect_ms: 200,
            stats: true,
            verbose: 2,
            progress: Progress::Thread,
            eager_bytes: 2048,
            root_waits: true,
            goal_window: 64,
            topo_id: Some("0.7".into()),
            topo_file: Some("/etc/mpicast/topo".into()),
            topo_base: 8,
            topo_pick: TopoPick::Random { seed: Some(42) },
            imcast_route: Route::Table,
            switch_topology: Some("/etc/fabric.net".into()),
            mmcast_algo: "sametree-cyclic".into(),
            segment_bytes: 64 << 10,
            imcast_buffer: 2 << 20,
            imcast_transport: ImcastTransport::P2p,
            imcast_ip_share: 75,
            imcast_ip_bytes: 1024,
            dbcast_tree: DbcastTree::Topo,
            dbcast_chain_bytes: None,
            fanout: true,
            fanout_bytes: 4 << 10,
        }
    );
}

#[test]
fn dbcast_chain_bytes() {
    let f = |v| cfg(&[("MPICAST_DBCAST_CHAIN_BYTES", v)]).map(|c| c.dbcast_chain_bytes);
    assert_eq!(f("256k").unwrap(), Some(256 << 10));
    assert_eq!(f("0").unwrap(), Some(0));
    assert_eq!(f("OFF").unwrap(), None);
    let e = f("soon").unwrap_err().to_string();
    assert!(
        e.contains("MPICAST_DBCAST_CHAIN_BYTES") && e.contains("off"),
        "{e}"
    );
}

#[test]
fn imcast_buffer_has_a_floor() {
    let buf = |v| cfg(&[("MPICAST_IMCAST_BUFFER", v)]).map(|c| c.imcast_buffer);
    assert_eq!(buf("1MiB").unwrap(), 1 << 20);
    assert_eq!(buf("1g").unwrap(), 1 << 30);
    let e = buf("64k").unwrap_err().to_string();
    assert!(
        e.contains("MPICAST_IMCAST_BUFFER") && e.contains("1MiB"),
        "{e}"
    );
    assert!(buf("lots").is_err());
}

#[test]
fn topology_settings() {
    let c = cfg(&[]).unwrap();
    assert_eq!(
        (c.topo_id, c.topo_file, c.topo_base, c.topo_pick),
        (None, None, 16, TopoPick::Nearest)
    );
    assert_eq!((c.imcast_route, c.segment_bytes), (Route::Dests, 8192));
    assert_eq!(
        (c.imcast_transport, c.imcast_ip_share, c.imcast_ip_bytes),
        (ImcastTransport::Auto, 25, 16384)
    );
    let t = cfg(&[
        ("MPICAST_IMCAST_TRANSPORT", "IP"),
        ("MPICAST_IMCAST_IP_SHARE", "100"),
        ("MPICAST_IMCAST_IP_BYTES", "1MiB"),
    ])
    .unwrap();
    assert_eq!(
        (t.imcast_transport, t.imcast_ip_share, t.imcast_ip_bytes),
        (ImcastTransport::Ip, 100, 1 << 20)
    );
    for (k, v) in [
        ("MPICAST_IMCAST_TRANSPORT", "udp"),
        ("MPICAST_IMCAST_IP_SHARE", "0"),
        ("MPICAST_IMCAST_IP_SHARE", "101"),
        ("MPICAST_IMCAST_IP_BYTES", "lots"),
    ] {
        assert!(
            cfg(&[(k, v)]).unwrap_err().to_string().contains(k),
            "{k}={v}"
        );
    }

    let base = |v| cfg(&[("MPICAST_TOPO_BASE", v)]).unwrap().topo_base;
    for (v, b) in [
        ("2", 2),
        ("4", 4),
        ("8", 8),
        ("16", 16),
        ("256", 256),
        (" 32 ", 32),
    ] {
        assert_eq!(base(v), b, "{v}");
    }
    for v in [
        "0", "1", "3", "12", "512", "-16", "+16", "0x10", "16k", "sixteen",
    ] {
        let e = bad("MPICAST_TOPO_BASE", v);
        assert!(e.expected.contains("power of two"), "{}", e.expected);
    }

    // IDs: as many digits as written, each below the base.
    let id = |pairs: &[(&str, &str)]| cfg(pairs).map(|c| c.topo_id);
    assert_eq!(id(&[("MPICAST_TOPO_ID", "01a3")]), Ok(Some("01a3".into())));
    assert_eq!(
        id(&[("MPICAST_TOPO_ID", " 0.1.10.3 ")]),
        Ok(Some("0.1.10.3".into()))
    );
    assert_eq!(
        id(&[("MPICAST_TOPO_ID", "0.200"), ("MPICAST_TOPO_BASE", "256")]),
        Ok(Some("0.200".into()))
    );
    assert_eq!(
        id(&[("MPICAST_TOPO_ID", "0123"), ("MPICAST_TOPO_BASE", "8")]),
        Ok(Some("0123".into()))
    );
    for v in ["0x12", "01g3", "0..1", "0.16", "1.-1", &"f".repeat(17)] {
        bad("MPICAST_TOPO_ID", v);
    }
    let e = cfg(&[("MPICAST_TOPO_ID", "0193"), ("MPICAST_TOPO_BASE", "8")]).unwrap_err();
    assert_eq!(
        (e.var.as_str(), e.value.as_str()),
        ("MPICAST_TOPO_ID", "0193")
    );
    assert!(
        e.expected.contains("base 8") && e.expected.contains("digit 2 of topology ID is 9"),
        "{}",
        e.expected
    );
    // Above base 16 only dotted digits: "12" is one digit, twelve.
    assert!(cfg(&[("MPICAST_TOPO_ID", "12"), ("MPICAST_TOPO_BASE", "32")]).is_ok());
    assert!(cfg(&[("MPICAST_TOPO_ID", "1a"), ("MPICAST_TOPO_BASE", "32")]).is_err());

    assert_eq!(
        cfg(&[("MPICAST_TOPO_FILE", " /a b/topo ")])
            .unwrap()
            .topo_file,
        Some("/a b/topo".into())
    );

    let pick = |v| cfg(&[("MPICAST_TOPO_PICK", v)]).unwrap().topo_pick;
    assert_eq!(pick("nearest"), TopoPick::Nearest);
    assert_eq!(pick("Random"), TopoPick::Random { seed: None });
    assert_eq!(pick("random:7"), TopoPick::Random { seed: Some(7) });
    assert_eq!(
        pick("random: 18446744073709551615"),
        TopoPick::Random {
            seed: Some(u64::MAX)
        }
    );
    for v in [
        "closest",
        "random:",
        "random:x",
        "random:-1",
        "random:18446744073709551616",
    ] {
        bad("MPICAST_TOPO_PICK", v);
    }
    assert_eq!(pick("random:7").pick(99), Pick::Random { seed: 7 });
    assert_eq!(pick("random").pick(99), Pick::Random { seed: 99 });
    assert_eq!(pick("nearest").pick(99), Pick::Nearest);
    for v in ["nearest", "random", "random:7"] {
        assert_eq!(pick(v).to_string(), v);
    }

    let route = |v| cfg(&[("MPICAST_IMCAST_ROUTE", v)]).unwrap().imcast_route;
    assert_eq!(route("TABLE"), Route::Table);
    assert_eq!(route("dests"), Route::Dests);
    for v in ["tree", "dest", "1"] {
        bad("MPICAST_IMCAST_ROUTE", v);
    }
    // Every value but auto names a planner of algo::agents, and every planner has one.
    use crate::algo::agents::MmcastAlgo;
    for n in MMCAST_ALGOS.iter().filter(|n| **n != "auto") {
        assert!(MmcastAlgo::from_name(n).is_some(), "{n}");
    }
    assert_eq!(MMCAST_ALGOS.len(), MmcastAlgo::ALL.len() + 1);
    let algo = |v| cfg(&[("MPICAST_MMCAST_ALGO", v)]).unwrap().mmcast_algo;
    assert_eq!(algo("Random-Cyclic"), "random-cyclic");
    assert_eq!(algo("SPCCO"), "spcco");
    for v in ["agents", "cco", "sametree"] {
        bad("MPICAST_MMCAST_ALGO", v);
    }

    let seg = |v| cfg(&[("MPICAST_SEGMENT_BYTES", v)]).unwrap().segment_bytes;
    assert_eq!(seg("64"), 64);
    assert_eq!(seg("8k"), 8192);
    assert_eq!(seg("16MiB"), 16 << 20);
    for v in ["63", "0", "16777217", "32M", "1G", "8kB", "x"] {
        bad("MPICAST_SEGMENT_BYTES", v);
    }
}

#[test]
fn topology_settings_are_agreed_but_not_the_id() {
    let a = Config::default();
    let names: Vec<&str> = a.agreed().iter().map(|(k, _)| *k).collect();
    for n in [
        "MPICAST_TOPO_BASE",
        "MPICAST_TOPO_PICK",
        "MPICAST_IMCAST_ROUTE",
        "MPICAST_SEGMENT_BYTES",
        "MPICAST_TOPO_FILE",
    ] {
        assert!(names.contains(&n), "{n} is agreed");
    }
    assert!(!names.contains(&"MPICAST_TOPO_ID"), "IDs differ per rank");
    let id = Config::from_vars([("MPICAST_TOPO_ID", "3")]).unwrap();
    assert_eq!(a.agreed_line(), id.agreed_line());

    // Paths as agreed values: no blank, '=' or ',' (the formats that carry them), never
    // "(unset)", bounded, and different paths stay different.
    let path = |p: &str| {
        Config::from_vars([("MPICAST_TOPO_FILE", p)])
            .unwrap()
            .agreed()
            .into_iter()
            .find(|(k, _)| *k == "MPICAST_TOPO_FILE")
            .unwrap()
            .1
    };
    assert_eq!(path("/etc/mpicast/topo-1.txt"), "/etc/mpicast/topo-1.txt");
    assert_eq!(path("/a b/x=y,z%(unset)"), "/a%20b/x%3Dy%2Cz%25%28unset%29");
    assert_eq!(path("/café"), "/caf%C3%A9");
    let long = format!("/{}", "d/".repeat(150));
    let longer = format!("/x{}", "d/".repeat(150));
    assert!(path(&long).len() <= 200 && path(&long).starts_with("..."));
    assert_ne!(path(&long), path(&longer));
    let unset = a
        .agreed()
        .into_iter()
        .find(|(k, _)| *k == "MPICAST_TOPO_FILE")
        .unwrap()
        .1;
    assert_eq!(unset, "(unset)");
    let b = Config::from_vars([
        ("MPICAST_TOPO_FILE", "/my topo"),
        ("MPICAST_TOPO_BASE", "8"),
    ])
    .unwrap();
    let d = differences(&[
        (0, parse_agreed_line(&a.agreed_line())),
        (1, parse_agreed_line(&b.agreed_line())),
    ]);
    assert_eq!(
        d,
        vec![
            "MPICAST_TOPO_BASE: 16 on rank 0; 8 on rank 1".to_string(),
            "MPICAST_TOPO_FILE: (unset) on rank 0; /my%20topo on rank 1".to_string(),
        ]
    );
    // The line the setup compares stays inside its 512 bytes with the longest path (451 bytes
    // with MPICAST_FANOUT's place).
    let worst = Config::from_vars([
        ("MPICAST_TOPO_FILE", long.as_str()),
        ("MPICAST_TOPO_PICK", "random:18446744073709551615"),
        ("MPICAST_IFACE", "10.1.0.0/16"),
        ("MPICAST_PORT", "30000-30099"),
    ])
    .unwrap();
    assert!(worst.agreed_line().len() < 470, "{}", worst.agreed_line());
}

#[test]
fn from_vars_rejects_typos_and_ignores_others() {
    let ok = Config::from_vars([("PATH", "/bin"), ("MPICAST_TTL", "3"), ("OMPI_X", "y")]).unwrap();
    assert_eq!(ok.ttl, 3);

    let e = Config::from_vars([("MPICAST_IFAEC", "eth0")]).unwrap_err();
    assert_eq!(e.var, "MPICAST_IFAEC");
    assert_eq!(e.value, "eth0");
    assert!(
        e.expected.contains("did you mean MPICAST_IFACE?"),
        "{}",
        e.expected
    );

    // Environment names are case-sensitive, so a lower-case name would otherwise be lost.
    let e = Config::from_vars([("mpicast_ttl", "3")]).unwrap_err();
    assert!(
        e.expected.contains("did you mean MPICAST_TTL?"),
        "{}",
        e.expected
    );

    // Far from everything: list what exists.
    let e = Config::from_vars([("MPICAST_SOMETHING_ELSE_ENTIRELY", "1")]).unwrap_err();
    assert!(e.expected.contains("MPICAST_RCVBUF"), "{}", e.expected);

    // An unknown name with an empty value is unset, like every other empty value.
    assert_eq!(
        Config::from_vars([("MPICAST_IFAEC", "")]).unwrap(),
        Config::default()
    );

    // Bad values are still caught after the name check, and the last duplicate wins.
    let e = Config::from_vars([("MPICAST_TTL", "1"), ("MPICAST_TTL", "x")]).unwrap_err();
    assert_eq!((e.var.as_str(), e.value.as_str()), ("MPICAST_TTL", "x"));
    let c = Config::from_vars([("MPICAST_TTL", "x"), ("MPICAST_TTL", "9")]).unwrap();
    assert_eq!(c.ttl, 9);
    // A tool's variable, inherited by the ranks it starts, is accepted and changes nothing.
    assert_eq!(
        Config::from_vars([("MPICAST_GOAL_RUNNER", "/opt/mpicast-goal-run")]).unwrap(),
        Config::default()
    );
}

#[test]
fn names_other_tools_own_pass() {
    // CMake's find_package, module systems and package managers set these.
    for name in [
        "MPICAST_ROOT",
        "mpicast_ROOT",
        "mpicast_DIR",
        "MPICAST_HOME",
        "MPICAST_PREFIX",
        "Mpicast_Dir",
    ] {
        assert_eq!(
            Config::from_vars([(name, "/opt/mpicast")]),
            Ok(Config::default()),
            "{name}"
        );
    }
    // A real typo still stops, with the suggestion; so does a name that only ends alike.
    let e = Config::from_vars([("MPICAST_ROOT_WAIT", "1")]).unwrap_err();
    assert!(
        e.expected.contains("did you mean MPICAST_ROOT_WAITS?"),
        "{}",
        e.expected
    );
    assert!(Config::from_vars([("MPICAST_LIB_DIR", "/x")]).is_err());
    assert!(Config::from_vars([("MPICAST_DIRS", "/x")]).is_err());
}

#[test]
fn agreed_settings_round_trip_and_differences() {
    let a = Config::default();
    let b = Config::from_vars([("MPICAST_MIN_BYTES", "0"), ("MPICAST_SYNC", "linear")]).unwrap();
    let line = a.agreed_line();
    assert!(line.contains("MIN_BYTES=auto") && line.contains("PORT=23000-23999"));
    let back = parse_agreed_line(&line);
    let want: Vec<(String, String)> = a
        .agreed()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(back, want);
    assert_ne!(a.agreed_line(), b.agreed_line());
    let ranks = vec![
        (0, parse_agreed_line(&a.agreed_line())),
        (1, parse_agreed_line(&b.agreed_line())),
        (2, parse_agreed_line(&a.agreed_line())),
        (3, parse_agreed_line(&a.agreed_line())),
    ];
    let d = differences(&ranks);
    assert_eq!(
        d,
        vec![
            "MPICAST_SYNC: tree on ranks 0, 2, 3; linear on rank 1".to_string(),
            "MPICAST_MIN_BYTES: auto on ranks 0, 2, 3; 0 on rank 1".to_string(),
        ]
    );
    assert!(differences(&ranks[..1]).is_empty());
    assert_eq!(rank_list(&[5, 0, 1, 2, 7, 8]), "ranks 0-2, 5, 7, 8");
    assert_eq!(rank_list(&[4]), "rank 4");
}

#[test]
fn from_env_reads_the_process_environment() {
    // Only checks it does not fail on this process's environment (which the test harness may
    // give MPICAST_* values); parsing itself is covered through from_vars.
    let vars: Vec<(String, String)> = std::env::vars().filter(|(k, _)| has_prefix(k)).collect();
    assert_eq!(
        Config::from_env(),
        Config::from_vars_reading(vars, |p| std::fs::read_to_string(p)
            .map_err(|e| e.to_string()))
    );
}

/// `from_vars_reading` over `env` with one file, `path` -> `text`.
fn with_file(env: &[(&str, &str)], path: &str, text: &str) -> Result<Config, ConfigError> {
    let (path, text) = (path.to_string(), text.to_string());
    Config::from_vars_reading(env.iter().copied(), move |p| {
        if p == path {
            Ok(text)
        } else {
            Err("No such file or directory (os error 2)".into())
        }
    })
}

#[test]
fn config_file_settings() {
    let text = "# written by mpicast tune\r\n\
                \n\
                MPICAST_MIN_BYTES=4KiB\n\
                export MPICAST_EAGER_BYTES='64k'\n\
                \t export   MPICAST_SYNC = \"linear\"  # scouts to the root\n\
                MPICAST_TOPO_FILE=\" /a b/topo#1 \"\n\
                MPICAST_TTL=3 # a comment\n\
                MPICAST_TOPO_FILE=/t#2\n\
                MPICAST_GROUP=\n\
                MPICAST_ROOT=/opt/mpicast\n\
                MPICAST_TTL=4\r\n";
    let f = parse_config_file("/f", text).unwrap();
    let got: Vec<(usize, &str, &str)> = f
        .iter()
        .map(|s| (s.line, s.name.as_str(), s.value.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, "MPICAST_MIN_BYTES", "4KiB"),
            (4, "MPICAST_EAGER_BYTES", "64k"),
            (5, "MPICAST_SYNC", "linear"),
            (6, "MPICAST_TOPO_FILE", " /a b/topo#1 "),
            (7, "MPICAST_TTL", "3"),
            (8, "MPICAST_TOPO_FILE", "/t#2"),
            (9, "MPICAST_GROUP", ""),
            (10, "MPICAST_ROOT", "/opt/mpicast"),
            (11, "MPICAST_TTL", "4"),
        ]
    );
    let c = with_file(&[("MPICAST_CONFIG", " /f ")], "/f", text).unwrap();
    assert_eq!(c.min_bytes, MinBytes::Fixed(4096));
    assert_eq!(c.eager_bytes, 64 << 10);
    assert_eq!(c.sync, SyncAlgo::Linear);
    // The last of a name wins, as in a shell; an empty value is unset.
    assert_eq!(c.topo_file.as_deref(), Some("/t#2"));
    assert_eq!(c.ttl, 4);
    assert_eq!(c.group, Config::default().group);
    // The port's value has no comment in it, so it is checked whole (and rejected).
    assert!(with_file(
        &[("MPICAST_CONFIG", "/f")],
        "/f",
        "MPICAST_PORT=30000-30099#x"
    )
    .is_err());
    // Only comments: the defaults.
    assert_eq!(
        with_file(&[("MPICAST_CONFIG", "/f")], "/f", "# nothing\n\n   \n"),
        Ok(Config::default())
    );
    // The same values from the file and from the environment make the same
    // configuration, so the ranks' comparison cannot tell them apart.
    let env = Config::from_vars([
        ("MPICAST_MIN_BYTES", "4KiB"),
        ("MPICAST_EAGER_BYTES", "64k"),
        ("MPICAST_SYNC", "linear"),
        ("MPICAST_TOPO_FILE", "/t#2"),
        ("MPICAST_TTL", "4"),
    ])
    .unwrap();
    assert_eq!(c, env);
    assert_eq!(c.agreed_line(), env.agreed_line());
}

#[test]
fn config_file_errors_name_the_file_and_line() {
    let e = |text: &str| {
        with_file(&[("MPICAST_CONFIG", "/etc/m.conf")], "/etc/m.conf", text).unwrap_err()
    };
    let at = |l: usize| Some(format!("MPICAST_CONFIG: /etc/m.conf line {l}"));

    // A bad value: the environment's error, with the line.
    let x = e("# c\nMPICAST_SYNC=tree\nMPICAST_TTL=x\n");
    assert_eq!((x.var.as_str(), x.value.as_str()), ("MPICAST_TTL", "x"));
    assert_eq!(x.origin, at(3));
    assert_eq!(
        x.to_string(),
        "mpicast: MPICAST_CONFIG: /etc/m.conf line 3: MPICAST_TTL=x is invalid: expected \
         an integer 0..=255"
    );
    assert_eq!(
        x.expected,
        Config::from_vars([("MPICAST_TTL", "x")])
            .unwrap_err()
            .expected
    );
    // Checked after merging: an ID against the base the environment gives.
    let x = with_file(
        &[("MPICAST_CONFIG", "/f"), ("MPICAST_TOPO_BASE", "8")],
        "/f",
        "\nMPICAST_TOPO_ID=09\n",
    )
    .unwrap_err();
    assert_eq!(
        (x.var.as_str(), x.origin.as_deref()),
        ("MPICAST_TOPO_ID", Some("MPICAST_CONFIG: /f line 2"))
    );

    // A typo, with the suggestion.
    let x = e("MPICAST_TTL=1\n\nMPICAST_MIN_BYTE=4k\n");
    assert_eq!(x.var, "MPICAST_MIN_BYTE");
    assert_eq!(x.origin, at(3));
    assert!(
        x.to_string().starts_with(
            "mpicast: MPICAST_CONFIG: /etc/m.conf line 3: MPICAST_MIN_BYTE=4k is invalid"
        ) && x.expected.contains("did you mean MPICAST_MIN_BYTES?"),
        "{x}"
    );
    // ... but with an empty value it is unset, as in the environment.
    assert!(with_file(&[("MPICAST_CONFIG", "/f")], "/f", "MPICAST_MIN_BYTE=\n").is_ok());

    // Lines that are no settings, quoted whole.
    for (text, line, why) in [
        ("MPICAST_TTL=1\nMPICAST_TTL 3\n", 2, "no '='"),
        ("MPICAST_TTL=1\n\n=3\n", 3, "not a variable name"),
        ("MPICAST TTL=3", 1, "not a variable name"),
        ("export=3", 1, "settings only"),
        (
            "exportMPICAST_TTL=3",
            1,
            "the file holds mpicast's settings only",
        ),
        ("MPICAST_SYNC='linear", 1, "not closed"),
        (
            "MPICAST_SYNC=\"linear\" tree",
            1,
            "follows the closing quote",
        ),
        ("MPICAST_SYNC='linear\"", 1, "not closed"),
    ] {
        let x = e(text);
        assert_eq!(x.origin, at(line), "{text}");
        assert!(x.to_string().contains(why), "{text}: {x}");
    }
    let x = e("MPICAST_TTL=1\nMPICAST_TTL 3\n");
    assert_eq!(
        x.to_string(),
        format!(
            "mpicast: MPICAST_CONFIG: /etc/m.conf line 2: `MPICAST_TTL 3` is invalid: \
             expected {EXPECT_LINE}; there is no '='"
        )
    );

    // Not mpicast's.
    let x = e("MPICAST_TTL=1\nOMPI_MCA_btl=tcp\n");
    assert_eq!((x.var.as_str(), x.origin.clone()), ("OMPI_MCA_btl", at(2)));

    // No nesting, whatever the letter case.
    for t in [
        "MPICAST_CONFIG=/other",
        "export mpicast_config='/etc/m.conf'",
    ] {
        let x = e(t);
        assert_eq!(
            (x.var.as_str(), x.origin.clone()),
            (CONFIG_VAR, at(1)),
            "{t}"
        );
        assert!(x.expected.contains("cannot name another"), "{}", x.expected);
    }

    // A file that cannot be read: the variable and why.
    let x = with_file(&[("MPICAST_CONFIG", "/nope")], "/f", "").unwrap_err();
    assert_eq!(
        (x.var.as_str(), x.value.as_str(), x.origin.as_deref()),
        (CONFIG_VAR, "/nope", None)
    );
    assert_eq!(
        x.to_string(),
        "mpicast: MPICAST_CONFIG=/nope is invalid: expected the path of a readable file of \
         settings, NAME=VALUE lines (reading it failed: No such file or directory (os error 2))"
    );
}

#[test]
fn config_file_under_the_environment() {
    let text = "MPICAST_MIN_BYTES=4KiB\nMPICAST_SYNC=linear\nMPICAST_TTL=3\nMPICAST_STATS=1\n";
    let c = with_file(
        &[
            ("MPICAST_CONFIG", "/f"),
            // Set: wins over the file.
            ("MPICAST_SYNC", "tree"),
            // Empty (or blank): unset, so the file's value applies.
            ("MPICAST_MIN_BYTES", ""),
            ("MPICAST_TTL", "  "),
            // Not in the file: the environment's as always.
            ("MPICAST_PROBE_MS", "900"),
        ],
        "/f",
        text,
    )
    .unwrap();
    assert_eq!(c.sync, SyncAlgo::Tree);
    assert_eq!(c.min_bytes, MinBytes::Fixed(4096));
    assert_eq!(c.ttl, 3);
    assert!(c.stats);
    assert_eq!(c.probe_ms, 900);

    // The environment's value is checked as ever, and the error is the environment's.
    let x = with_file(
        &[("MPICAST_CONFIG", "/f"), ("MPICAST_TTL", "y")],
        "/f",
        text,
    )
    .unwrap_err();
    assert_eq!((x.var.as_str(), x.origin.as_deref()), ("MPICAST_TTL", None));
    // A bad value in the file hidden by the environment's good one is still an error:
    // the file is checked whole.
    let x = with_file(
        &[("MPICAST_CONFIG", "/f"), ("MPICAST_TTL", "2")],
        "/f",
        "\nMPICAST_TTL=300\n",
    )
    .unwrap_err();
    assert_eq!(
        (x.var.as_str(), x.origin.as_deref()),
        ("MPICAST_TTL", Some("MPICAST_CONFIG: /f line 2"))
    );
    // A file's duplicate: the last one is checked, as it is the one in force.
    let c = with_file(
        &[("MPICAST_CONFIG", "/f")],
        "/f",
        "MPICAST_TTL=x\nMPICAST_TTL=5\n",
    );
    assert_eq!(c.map(|c| c.ttl), Ok(5));
    // Order does not matter: the environment wins wherever MPICAST_CONFIG is in it.
    let c = with_file(
        &[("MPICAST_SYNC", "tree"), ("MPICAST_CONFIG", "/f")],
        "/f",
        text,
    )
    .unwrap();
    assert_eq!(c.sync, SyncAlgo::Tree);
    // MPICAST_CONFIG empty or unset: no file is read.
    let none = |env: &[(&str, &str)]| {
        Config::from_vars_reading(env.iter().copied(), |_| -> Result<String, String> {
            panic!("read")
        })
    };
    assert_eq!(none(&[("MPICAST_CONFIG", " ")]), Ok(Config::default()));
    assert_eq!(none(&[("MPICAST_TTL", "2")]).unwrap().ttl, 2);
    // from_vars reads no file and takes the name as known.
    assert_eq!(
        Config::from_vars([("MPICAST_CONFIG", "/nope")]),
        Ok(Config::default())
    );
    assert!(VARIABLES.iter().any(|(n, _, _)| *n == CONFIG_VAR));
    // A typo in the environment is still caught before the file is read.
    let x = with_file(
        &[("MPICAST_CONFIG", "/f"), ("MPICAST_CONFG", "/g")],
        "/f",
        text,
    )
    .unwrap_err();
    assert!(
        x.expected.contains("did you mean MPICAST_CONFIG?"),
        "{}",
        x.expected
    );
}

#[test]
fn subnet_math() {
    let a = Ipv4Addr::new(10, 1, 2, 3);
    assert!(in_subnet(a, Ipv4Addr::new(10, 1, 0, 0), 16));
    assert!(!in_subnet(a, Ipv4Addr::new(10, 2, 0, 0), 16));
    assert!(in_subnet(a, Ipv4Addr::UNSPECIFIED, 0));
    assert!(in_subnet(a, a, 32));
    assert!(!in_subnet(a, Ipv4Addr::new(10, 1, 2, 4), 32));
    assert!(in_subnet(a, Ipv4Addr::new(10, 1, 2, 2), 31));
}

#[test]
fn min_bytes_auto_follows_the_member_count() {
    let auto = |m| MinBytes::Auto.resolve(m);
    assert_eq!(auto(2), usize::MAX);
    assert_eq!(auto(3), 32768);
    assert_eq!(auto(9), 32768);
    assert_eq!(auto(1000), 32768);
    // Never below the floor used to skip the lookup, never above for fixed values.
    assert!((2..100).all(|m| auto(m) >= MinBytes::Auto.floor()));
    assert_eq!(MinBytes::Fixed(7).resolve(2), 7);
    assert_eq!(MinBytes::Fixed(7).floor(), 7);
    let e = cfg(&[("MPICAST_MIN_BYTES", "automatic")]).unwrap_err();
    assert!(e.expected.contains("auto"), "{}", e.expected);
    assert_eq!(
        cfg(&[("MPICAST_MIN_BYTES", " Auto ")]).unwrap().min_bytes,
        MinBytes::Auto
    );
}

#[test]
fn hints() {
    let mut h = Hints::default();
    assert_eq!(h.set("mpicast", "off"), Ok(true));
    assert_eq!(h.set("mpicast_sync", "linear"), Ok(true));
    assert_eq!(h.set("mpicast_min_bytes", "64k"), Ok(true));
    assert_eq!(h.set("mpicast_eager_bytes", "0"), Ok(true));
    assert_eq!(h.set("cb_nodes", "4"), Ok(false));
    assert_eq!(
        h,
        Hints {
            enabled: Some(false),
            sync: Some(SyncAlgo::Linear),
            min_bytes: Some(MinBytes::Fixed(65536)),
            eager_bytes: Some(0),
            mmcast_algo: None,
        }
    );
    let c = Config::default().with_hints(&h);
    assert!(c.disable);
    assert_eq!(c.sync, SyncAlgo::Linear);
    assert_eq!(c.min_bytes, MinBytes::Fixed(65536));
    assert_eq!(c.eager_bytes, 0);
    assert!(h.set("mpicast_eager_bytes", "lots").is_err());
    assert_eq!(h.set("mpicast_mmcast_algo", "SPCCO"), Ok(true));
    assert_eq!(h.mmcast_algo.as_deref(), Some("spcco"));
    assert!(h.set("mpicast_mmcast_algo", "agents").is_err());
    assert_eq!(
        Config::default().with_hints(&h).mmcast_algo,
        "spcco",
        "the hint wins over the variable"
    );
    assert_eq!(h.set("mpicast_min_bytes", "AUTO"), Ok(true));
    assert_eq!(h.min_bytes, Some(MinBytes::Auto));

    // Empty clears; "on" cannot undo the process-wide kill switch.
    assert_eq!(h.set("mpicast_sync", ""), Ok(true));
    assert_eq!(h.sync, None);
    assert_eq!(h.set("mpicast", "on"), Ok(true));
    let off = Config {
        disable: true,
        ..Config::default()
    };
    assert!(off.with_hints(&h).disable);
    assert!(!Config::default().with_hints(&h).disable);
    assert_eq!(
        Config::default().with_hints(&Hints::default()),
        Config::default()
    );

    let e = h.set("mpicast_sync", "ring").unwrap_err();
    assert_eq!(e.var, "MPI_Info key mpicast_sync");
    assert!(h.set("mpicast", "maybe").is_err());
    assert!(h.set("mpicast_min_bytes", "1.5k").is_err());
    assert!(h.set("mpicast_min_byte", "1").is_err());
    // A failed set leaves the previous value.
    assert_eq!(h.enabled, Some(true));
}

/// What every setting does, recorded from the code before the settings became one table
/// (`tests/data/config_snapshot.txt`): every variable with each sample value (its fields
/// that differ from the defaults, or the error's text), the table of variables, the
/// defaults, the agreed line of sample environments, every hint key with sample values,
/// and the errors of unknown names and of a file. `MPICAST_BLESS=1` rewrites the file.
#[test]
fn snapshot_of_every_setting() {
    let got = snapshot();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/config_snapshot.txt"
    );
    if std::env::var_os("MPICAST_BLESS").is_some() {
        std::fs::write(path, &got).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap();
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} of {path} differs", i + 1);
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "{path}: line count"
    );
}

/// The fields of `c` that differ from the default's, each as its Debug text.
fn changed(c: &Config) -> String {
    // The top-level fields of a pretty Debug: a line indented by four spaces starts one.
    fn fields(c: &Config) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in format!("{c:#?}").lines() {
            let top = l.len() > 4 && l[4..].starts_with(|c: char| c.is_ascii_lowercase());
            match out.last_mut() {
                Some(f) if !top => f.push_str(l.trim()),
                _ => out.push(l.trim().to_string()),
            }
        }
        out
    }
    let base = fields(&Config::default());
    let diff: Vec<String> = fields(c)
        .into_iter()
        .filter(|f| !base.contains(f))
        .collect();
    if diff.is_empty() {
        "(defaults)".to_string()
    } else {
        diff.join(" ")
    }
}

fn snapshot() -> String {
    use std::fmt::Write;
    const SAMPLES: &[&str] = &[
        "",
        " ",
        "0",
        "1",
        "2",
        "3",
        "4",
        "7",
        "8",
        "16",
        "25",
        "63",
        "64",
        "100",
        "101",
        "255",
        "256",
        "500",
        "1023",
        "1024",
        "5000",
        "+5",
        "-1",
        "1.5",
        "x",
        "yes",
        "No",
        "on",
        "OFF",
        "true",
        "auto",
        "AUTO",
        "tree",
        "linear",
        "flat",
        "leaders",
        "poll",
        "thread",
        "nearest",
        "random",
        "random:42",
        "random:x",
        "dests",
        "table",
        "p2p",
        "ip",
        "binomial",
        "topo",
        "spcco",
        "naive",
        "SameTree-Cyclic",
        "random-binomial",
        "agents",
        "4k",
        "64k",
        "65k",
        "1MiB",
        "2m",
        "8MiB",
        "1G",
        "2G",
        "4kB",
        "1 KiB",
        " 64 ",
        "65000",
        "65001",
        "16MiB",
        "17MiB",
        "eth0",
        "averyverylongname0",
        "10.1.2.3",
        "10.1.2.3/16",
        "10.1.2.300",
        "239.1.0.0/16",
        "239.1.2.3/16",
        "224.0.0.0/3",
        "30000-30099",
        "9000-8000",
        "0.7",
        "01a3",
        "0.1.10.3",
        "0.16",
        "zz",
        "/etc/mpicast/topo",
        "/a b/x=y",
        "99999999999999999999",
    ];
    let mut out = String::new();
    writeln!(out, "# variables: name | default | help").unwrap();
    for (n, d, h) in VARIABLES {
        writeln!(out, "{n} | {d} | {h}").unwrap();
    }
    writeln!(out, "# defaults").unwrap();
    writeln!(out, "{:?}", Config::default()).unwrap();
    writeln!(out, "agreed: {}", Config::default().agreed_line()).unwrap();
    writeln!(out, "# each variable alone").unwrap();
    for (name, _, _) in VARIABLES.iter().filter(|v| v.0 != CONFIG_VAR) {
        for v in SAMPLES {
            let r = match Config::from_vars([(*name, *v)]) {
                Ok(c) => format!("{} | agreed: {}", changed(&c), c.agreed_line()),
                Err(e) => format!("error: {e}"),
            };
            writeln!(out, "{name}={v:?} -> {r}").unwrap();
        }
    }
    writeln!(out, "# topology IDs against the base").unwrap();
    for base in ["2", "8", "16", "32", "256"] {
        for id in ["0.1", "01", "0f", "0.255", "1.2.3", "ff", "0.7"] {
            let r = match Config::from_vars([("MPICAST_TOPO_BASE", base), ("MPICAST_TOPO_ID", id)])
            {
                Ok(c) => changed(&c),
                Err(e) => format!("error: {e}"),
            };
            writeln!(out, "base {base} id {id} -> {r}").unwrap();
        }
    }
    writeln!(out, "# hints").unwrap();
    let keys = [
        "mpicast",
        "mpicast_sync",
        "mpicast_min_bytes",
        "mpicast_eager_bytes",
        "mpicast_mmcast_algo",
        "mpicast_topo_id",
        "mpicast_typo",
        "MPICAST_SYNC",
        "cb_nodes",
    ];
    for k in keys {
        for v in SAMPLES {
            let mut h = Hints::default();
            let r = match h.set(k, v) {
                Ok(ours) => format!(
                    "Ok({ours}) {h:?} | default with it: {} | disabled with it: {}",
                    changed(&Config::default().with_hints(&h)),
                    changed(
                        &Config {
                            disable: true,
                            ..Config::default()
                        }
                        .with_hints(&h)
                    ),
                ),
                Err(e) => format!("error: {e}"),
            };
            writeln!(out, "hint {k}={v:?} -> {r}").unwrap();
        }
    }
    writeln!(out, "# names").unwrap();
    for name in [
        "MPICAST_SEGMENT_BYTE",
        "MPICAST_IFAEC",
        "mpicast_ttl",
        "MPICAST_XYZZY_FOO",
        "MPICAST_ROOT",
        "mpicast_DIR",
        "MPICAST_GOAL_RUNNER",
        "MPICAST_LIB_DIR",
        "OTHER",
    ] {
        let r = match Config::from_vars([(name, "1")]) {
            Ok(c) => changed(&c),
            Err(e) => format!("error: {e}"),
        };
        writeln!(out, "{name}=1 -> {r}").unwrap();
    }
    writeln!(out, "# sample environments").unwrap();
    let envs: &[&[(&str, &str)]] = &[
        &[
            ("MPICAST_SYNC", "linear"),
            ("MPICAST_MIN_BYTES", "0"),
            ("MPICAST_PORT", "5000"),
        ],
        &[
            ("MPICAST_DISABLE", "1"),
            ("MPICAST_TOPO", "flat"),
            ("MPICAST_EAGER_BYTES", "0"),
            ("MPICAST_FRAG_BYTES", "1400"),
            ("MPICAST_GROUP", "239.7.0.0/24"),
            ("MPICAST_TTL", "0"),
            ("MPICAST_ROOT_WAITS", "on"),
            ("MPICAST_TOPO_BASE", "8"),
            ("MPICAST_TOPO_PICK", "random"),
            ("MPICAST_IMCAST_ROUTE", "table"),
            ("MPICAST_SEGMENT_BYTES", "64k"),
            ("MPICAST_IMCAST_TRANSPORT", "ip"),
            ("MPICAST_TOPO_FILE", "/etc/mpicast topo"),
            ("MPICAST_RCVBUF", "1G"),
            ("MPICAST_VERBOSE", "2"),
            ("MPICAST_TOPO_ID", "0.7"),
        ],
        &[("MPICAST_TTL", "x"), ("MPICAST_SYNC", "ring")],
        &[("MPICAST_TOPO_ID", "zz"), ("MPICAST_TOPO_BASE", "4")],
    ];
    for env in envs {
        let r = match Config::from_vars(env.iter().copied()) {
            Ok(c) => format!(
                "{} | agreed: {} | {:?}",
                changed(&c),
                c.agreed_line(),
                c.agreed()
            ),
            Err(e) => format!("error: {e}"),
        };
        writeln!(out, "{env:?} -> {r}").unwrap();
    }
    writeln!(out, "# a file").unwrap();
    for text in [
        "MPICAST_TTL=3\nexport MPICAST_SYNC='linear' # c\n",
        "MPICAST_TTL=3\nMPICAST_SYNC=ring\n",
        "MPICAST_SEGMENT_BYTE=1\n",
        "TTL=3\n",
        "nothing here\n",
        "MPICAST_CONFIG=/x\n",
        "MPICAST_TTL='3\n",
    ] {
        let r = match with_file(&[("MPICAST_CONFIG", "/f"), ("MPICAST_TTL", "")], "/f", text) {
            Ok(c) => changed(&c),
            Err(e) => format!("error: {e}"),
        };
        writeln!(out, "{text:?} -> {r}").unwrap();
    }
    out
}

#[test]
fn the_table_is_consistent() {
    use super::table::ROWS;
    assert_eq!(
        ROWS.len() + 1,
        VARIABLES.len(),
        "every row but MPICAST_CONFIG's"
    );
    for (row, (name, _, _)) in ROWS.iter().zip(&VARIABLES[1..]) {
        assert_eq!(row.var, *name);
    }
    // The agreed line's places: 0, 1, ... with none twice, so the line's order is fixed.
    let mut at: Vec<u8> = ROWS.iter().filter_map(|r| r.agreed.map(|a| a.0)).collect();
    at.sort_unstable();
    assert_eq!(at, (0..at.len() as u8).collect::<Vec<_>>());
    assert_eq!(Config::default().agreed().len(), 17);
    // The MPI_Info keys, in the order of the message naming them.
    assert_eq!(
        HINT_KEYS,
        [
            "mpicast",
            "mpicast_sync",
            "mpicast_min_bytes",
            "mpicast_eager_bytes",
            "mpicast_mmcast_algo",
            "mpicast_topo_id"
        ]
    );
    let late: Vec<&str> = ROWS.iter().filter(|r| r.late).map(|r| r.var).collect();
    assert_eq!(late, ["MPICAST_TOPO_ID"]);
}

/// A row's parser is the hint's: the same values are taken, with the same message.
#[test]
fn hints_parse_as_their_variables() {
    use super::table::ROWS;
    for row in ROWS {
        let Some(hint) = &row.hint else { continue };
        for v in [
            "0", "1", "off", "64k", "auto", "linear", "spcco", "x", "1.5k",
        ] {
            let env = Config::from_vars([(row.var, v)]).map(|_| ());
            let mut h = Hints::default();
            let info = h.set(hint.key, v).map(|_| ());
            assert_eq!(
                env.map_err(|e| e.expected),
                info.map_err(|e| e.expected),
                "{} and {} with {v}",
                row.var,
                hint.key
            );
        }
    }
}
