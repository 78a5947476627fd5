use super::*;
use crate::algo::prefix::{forward, Pick, Route, RoutingTable};
use crate::sched::testutil::Rng;

/// A rank on `host` (address 10.0.0.`a`), nothing else known.
fn rank(host: &str, a: u8) -> RankFacts {
    RankFacts {
        host: host.to_string(),
        addr: u32::from(std::net::Ipv4Addr::new(10, 0, 0, a)),
        ..RankFacts::default()
    }
}

fn with_env(mut f: RankFacts, id: &str) -> RankFacts {
    f.explicit = Some(Explicit {
        source: IdSource::Env,
        text: id.to_string(),
    });
    f
}

fn with_cpu(mut f: RankFacts, package: u32, node: u32, core: u32) -> RankFacts {
    f.cpu = CpuFacts {
        cpu: core,
        package,
        node,
        core,
    };
    f
}

fn ids(r: &Resolved) -> Vec<String> {
    let t = &r.topology;
    (0..t.ranks()).map(|k| t.id(k).to_string()).collect()
}

fn err(facts: &[RankFacts], file: Option<&FileCopy>) -> String {
    resolve(facts, file)
        .expect_err("should be refused")
        .to_string()
}

const NAME: &str = "MPICAST_TOPO_FILE=/x";

fn copy(text: &str) -> FileCopy {
    FileCopy::from_bytes(text.as_bytes(), NAME, 16)
}

/// `facts` with the file `c` read on every rank.
fn reading(facts: &[RankFacts], c: &FileCopy) -> Vec<RankFacts> {
    facts
        .iter()
        .cloned()
        .map(|mut f| {
            f.file = c.fact();
            f
        })
        .collect()
}

#[test]
fn records_round_trip() {
    let mut a = with_cpu(rank("node07.cluster.example", 7), 1, 3, 12);
    a.slot = 5;
    a.base = 8;
    a.file = FileFact::Read {
        digest: 0x0123_4567_89ab_cdef,
    };
    a.explicit = Some(Explicit {
        source: IdSource::Info,
        text: "0.1.2".into(),
    });
    let b = RankFacts {
        file: FileFact::Unreadable { os_error: 13 },
        ..RankFacts::default()
    };
    let mut c = with_env(rank("héte", 1), "ff");
    c.file = FileFact::Unreadable { os_error: -1 };
    for f in [a, b, c, RankFacts::default()] {
        let bytes = f.encode();
        assert!(bytes.len() <= MAX_RECORD_BYTES);
        assert_eq!(RankFacts::decode(&bytes), Ok(f.clone()));
        // Padding to a fixed width, with anything, is ignored.
        let mut padded = bytes.clone();
        padded.resize(MAX_RECORD_BYTES, 0xee);
        assert_eq!(RankFacts::decode(&padded), Ok(f.clone()));
        // A record cut short is refused, never misread.
        for cut in 0..bytes.len() {
            assert!(RankFacts::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
    // The longest texts fit MAX_RECORD_BYTES; longer ones are cut on a character boundary
    // and marked.
    let long = with_env(rank(&"h".repeat(400), 1), &"é".repeat(200));
    let bytes = long.encode();
    assert_eq!(bytes.len(), MAX_RECORD_BYTES - 1);
    let back = RankFacts::decode(&bytes).unwrap();
    assert!(back.explicit_cut && back.host_cut);
    assert_eq!(back.host.len(), MAX_TEXT);
    assert_eq!(back.explicit.as_ref().unwrap().text.chars().count(), 127);
    assert_eq!(RankFacts::decode(&back.encode()), Ok(back.clone()));
    let e = resolve(&[back], None).unwrap_err().to_string();
    assert!(e.contains("rank 0: MPICAST_TOPO_ID=") && e.contains("longer than 255 bytes"));

    let mut v2 = RankFacts::default().encode();
    v2[2] = 2;
    let e = RankFacts::decode(&v2).unwrap_err().to_string();
    assert!(e.contains("format 2, this mpicast reads format 1"), "{e}");
    let mut bad = RankFacts::default().encode();
    bad[32] = 9;
    assert!(RankFacts::decode(&bad).is_err());
    bad[32] = 0;
    bad[3] = 4;
    assert!(RankFacts::decode(&bad).is_err());
    // An ID from the switch topology travels with its source.
    let sw = RankFacts {
        explicit: Some(Explicit {
            source: IdSource::Switch,
            text: "1.0.2".into(),
        }),
        ..RankFacts::default()
    };
    assert_eq!(RankFacts::decode(&sw.encode()), Ok(sw.clone()));
}

#[test]
fn first_found_wins() {
    let e = |i, v| Explicit::first_found(i, v);
    assert_eq!(e(None, None), None);
    assert_eq!(e(Some(" "), Some("")), None);
    assert_eq!(e(Some("01"), Some("02")).unwrap().source, IdSource::Info);
    assert_eq!(e(Some(""), Some("02")).unwrap().source, IdSource::Env);
    assert_eq!(e(None, Some("02")).unwrap().text, "02");
}

#[test]
fn explicit_ids() {
    let facts: Vec<RankFacts> = ["10", "11", " 00 ", "01"]
        .iter()
        .enumerate()
        .map(|(r, id)| with_env(rank("h", r as u8), id))
        .collect();
    let r = resolve(&facts, None).unwrap();
    assert_eq!(ids(&r), ["10", "11", "00", "01"]);
    assert_eq!(r.source, Source::Env);
    assert_eq!(r.layout, vec![("given", 2)]);
    assert_eq!(r.source.to_string(), "MPICAST_TOPO_ID");

    // The file is not read when every rank has its own ID.
    let broken = copy("this is not a file");
    let r2 = resolve(&reading(&facts, &broken), Some(&broken)).unwrap();
    assert_eq!(r2, r);

    let set = |k: usize, id: &str| {
        let mut f = facts.clone();
        f[k] = with_env(f[k].clone(), id);
        f
    };
    assert_eq!(
        err(&set(2, "0x"), None),
        "rank 2: MPICAST_TOPO_ID=0x: topology ID \"0x\": not a hex digit (or use dotted \
         decimal digits)"
    );
    assert_eq!(
        err(&set(3, "012"), None),
        "rank 3: MPICAST_TOPO_ID=012: 3 digits, but rank 0's ID (MPICAST_TOPO_ID=10) has 2 \
         (every ID of a communicator has the same number of digits)"
    );
    assert_eq!(
        err(&set(3, "11"), None),
        "ranks 1 and 3 both have topology ID 11 (MPICAST_TOPO_ID on both); IDs must differ"
    );
    let mut base8: Vec<RankFacts> = set(1, "19")
        .into_iter()
        .map(|mut f| {
            f.base = 8;
            f
        })
        .collect();
    assert_eq!(
        err(&base8, None),
        "rank 1: MPICAST_TOPO_ID=19: digit 1 of topology ID is 9, not below base 8"
    );
    base8[2].base = 16;
    assert_eq!(
        err(&base8, None),
        "rank 2: MPICAST_TOPO_BASE=16: rank 0 has 8 (every rank must have the same)"
    );
    assert_eq!(
        err(&set(0, &"1".repeat(17)), None),
        format!(
            "rank 0: MPICAST_TOPO_ID={}: 17 digits in base 16: need at least 1 and at most 64 \
             bits in all",
            "1".repeat(17)
        )
    );

    // Through the info key, with dotted digits above base 16.
    let info: Vec<RankFacts> = ["0.200", "1.3", "0.7"]
        .iter()
        .map(|id| RankFacts {
            base: 256,
            explicit: Some(Explicit {
                source: IdSource::Info,
                text: id.to_string(),
            }),
            ..RankFacts::default()
        })
        .collect();
    let r = resolve(&info, None).unwrap();
    assert_eq!(ids(&r), ["0.200", "1.3", "0.7"]);
    assert_eq!(r.source, Source::Info);
}

#[test]
fn sources_do_not_mix() {
    let mut facts: Vec<RankFacts> = (0..8).map(|r| rank("h", r)).collect();
    for f in &mut facts[..4] {
        *f = with_env(f.clone(), "0");
    }
    assert_eq!(
        err(&facts, None),
        "topology IDs from mixed sources: MPICAST_TOPO_ID on ranks 0-3; no ID on ranks 4-7 \
         (give every rank of the communicator its ID the same way, or none)"
    );
    for (r, f) in facts.iter_mut().enumerate() {
        *f = with_env(f.clone(), &format!("{r}"));
    }
    facts[5].explicit.as_mut().unwrap().source = IdSource::Info;
    assert_eq!(
        err(&facts, None),
        "topology IDs from mixed sources: MPICAST_TOPO_ID on ranks 0-4, 6, 7; MPI_Info key \
         mpicast_topo_id on rank 5 (give every rank of the communicator its ID the same way, or \
         none)"
    );
}

#[test]
fn file_format() {
    let f = TopoFile::parse(
        "# the cluster\n\nnode01 00   # first\n\tnode02\t01\n10.1.0.9 10\nNode03.example 1f\n",
        NAME,
        16,
    )
    .unwrap();
    assert!(!f.has_slots());
    assert_eq!(f.shape(), Shape::new(16, 2).unwrap());
    assert_eq!(f.name(), NAME);
    let hosts: Vec<(&str, usize, String)> = f
        .entries()
        .iter()
        .map(|e| (e.host.as_str(), e.line, e.id.to_string()))
        .collect();
    assert_eq!(
        hosts,
        [
            ("node01", 3, "00".to_string()),
            ("node02", 4, "01".to_string()),
            ("10.1.0.9", 5, "10".to_string()),
            ("Node03.example", 6, "1f".to_string()),
        ]
    );
    let s = TopoFile::parse("a:0 0.1\na:1 0.2\nb:0 1.0\n", NAME, 4).unwrap();
    assert!(s.has_slots());
    assert_eq!(s.entries()[1].slot, Some(1));

    let bad = |text: &str| TopoFile::parse(text, NAME, 16).unwrap_err().to_string();
    for (text, want) in [
        ("a 0\nb 1 2\n", "MPICAST_TOPO_FILE=/x:2: expected `HOST ID` or `HOST:SLOT ID`, got 3 fields"),
        ("a\n", "MPICAST_TOPO_FILE=/x:1: expected `HOST ID` or `HOST:SLOT ID`, got 1 field"),
        ("a:x 0\n", "MPICAST_TOPO_FILE=/x:1: slot `x` of `a:x` is not a number"),
        ("a: 0\n", "MPICAST_TOPO_FILE=/x:1: `a:` has no slot after ':'"),
        ("a:-1 0\n", "MPICAST_TOPO_FILE=/x:1: slot `-1` of `a:-1` is not a number"),
        ("a/b 0\n", "MPICAST_TOPO_FILE=/x:1: `a/b` is not a host name (letters, digits, '-', '_', '.') or an IPv4 address"),
        ("a 0\nb 0g\n", "MPICAST_TOPO_FILE=/x:2: topology ID \"0g\": not a hex digit (or use dotted decimal digits)"),
        ("a 00\n\n# c\nb 012\n", "MPICAST_TOPO_FILE=/x:4: ID 012 has 3 digits, line 1's has 2 (every ID of the file has the same number)"),
        ("a 0\nb:1 1\n", "MPICAST_TOPO_FILE=/x:2: `b:1` has a slot but line 1 has none: give HOST:SLOT on every line or on none"),
        ("a:0 0\nb 1\n", "MPICAST_TOPO_FILE=/x:2: `b` has no slot but line 1 has one: give HOST:SLOT on every line or on none"),
        ("a 0\nA 1\n", "MPICAST_TOPO_FILE=/x:2: A is on line 1 already"),
        ("a:0 0\na:0 1\n", "MPICAST_TOPO_FILE=/x:2: a:0 is on line 1 already"),
        ("a 0\nb 1\nc 0\n", "MPICAST_TOPO_FILE=/x:3: ID 0 is a's already (line 1)"),
        ("# nothing\n\n", "MPICAST_TOPO_FILE=/x: no entries (lines `HOST ID` or `HOST:SLOT ID`)"),
    ] {
        assert_eq!(bad(text), want, "{text:?}");
    }
    assert_eq!(
        TopoFile::parse("a 08\n", NAME, 8).unwrap_err().to_string(),
        "MPICAST_TOPO_FILE=/x:1: digit 1 of topology ID is 8, not below base 8"
    );
    assert_eq!(
        TopoFile::parse("a 0\n", NAME, 12).unwrap_err().to_string(),
        "MPICAST_TOPO_FILE=/x: base 12 is not a power of two from 2 to 256"
    );
    let c = FileCopy::from_bytes(b"a 0\nb 1\n\xff 2\n", NAME, 16);
    assert_eq!(
        c.file().unwrap_err().to_string(),
        "MPICAST_TOPO_FILE=/x:3: not UTF-8 text"
    );
    let gone = FileCopy::read("/nonexistent/mpicast-topology-test", NAME, 16);
    assert_eq!(gone.fact(), FileFact::Unreadable { os_error: 2 });
    assert!(gone
        .file()
        .unwrap_err()
        .to_string()
        .starts_with("MPICAST_TOPO_FILE=/x: cannot read it: No such file"));
}

#[test]
fn host_files_give_host_ids() {
    let c = copy("node1 00\nnode2 01\n# spare\nnode3 10\n");
    // One rank per host: the file's IDs exactly, whatever the CPU facts.
    let one = reading(
        &[
            with_cpu(rank("node3", 3), 0, 0, 7),
            with_cpu(rank("NODE1", 1), 1, 1, 3),
        ],
        &c,
    );
    let r = resolve(&one, Some(&c)).unwrap();
    assert_eq!(ids(&r), ["10", "00"]);
    assert_eq!(r.source, Source::File(NAME.into()));
    assert_eq!(r.layout, vec![("file", 2)]);

    // Several ranks per host: a digit numbers them in rank order.
    let two = reading(
        &[
            rank("node2", 2),
            rank("node1", 1),
            rank("node2", 2),
            rank("node1", 1),
        ],
        &c,
    );
    let r = resolve(&two, Some(&c)).unwrap();
    assert_eq!(ids(&r), ["010", "000", "011", "001"]);
    assert_eq!(r.layout, vec![("file", 2), ("rank on host", 1)]);

    // With CPU facts: package, then core, then rank order on one core.
    let cpu = reading(
        &[
            with_cpu(rank("node1", 1), 1, 0, 4),
            with_cpu(rank("node1", 1), 0, 0, 9),
            with_cpu(rank("node1", 1), 0, 0, 2),
            with_cpu(rank("node1", 1), 1, 0, 4),
            with_cpu(rank("node2", 2), 0, 0, 0),
        ],
        &c,
    );
    let r = resolve(&cpu, Some(&c)).unwrap();
    assert_eq!(ids(&r), ["00100", "00010", "00000", "00101", "01000"]);
    assert_eq!(
        r.layout,
        vec![
            ("file", 2),
            ("package", 1),
            ("core", 1),
            ("rank on host", 1)
        ]
    );

    // Matching: by the first label either way, and by address.
    let c2 = copy("node1.cluster.example 0\nnode2 1\n10.0.0.9 2\n");
    let m = reading(
        &[
            rank("node1", 1),
            rank("node2.cluster.example", 2),
            rank("gw", 9),
        ],
        &c2,
    );
    assert_eq!(ids(&resolve(&m, Some(&c2)).unwrap()), ["0", "1", "2"]);

    let missing = reading(&[rank("node1", 1), rank("node7", 7)], &c);
    assert_eq!(
        err(&missing, Some(&c)),
        "rank 1: MPICAST_TOPO_FILE=/x: host node7 has no ID"
    );
    let c3 = copy("node7.a 0\nnode7.b 1\n");
    let ambiguous = reading(&[rank("node7", 7)], &c3);
    assert_eq!(
        err(&ambiguous, Some(&c3)),
        "rank 0: MPICAST_TOPO_FILE=/x: host node7 matches node7.a (line 1) and node7.b (line 2) \
         by its first label: write its full name in the file"
    );
    let c4 = copy("node7 0\n");
    let merged = reading(&[rank("node7.a", 1), rank("node7.b", 2)], &c4);
    assert_eq!(
        err(&merged, Some(&c4)),
        "rank 1: MPICAST_TOPO_FILE=/x: host node7.b and rank 0's host node7.a both match node7 \
         of the file by their first label: write the full names in the file"
    );
}

#[test]
fn slot_files_give_rank_ids() {
    let c = copy("a:0 00\na:1 01\nb:0 10\nb:1 11\n");
    // Slots counted per host in rank order when the launcher's are not known.
    let f = reading(
        &[rank("a", 1), rank("b", 2), rank("b", 2), rank("a", 1)],
        &c,
    );
    let r = resolve(&f, Some(&c)).unwrap();
    assert_eq!(ids(&r), ["00", "10", "11", "01"]);
    assert_eq!(r.layout, vec![("given", 2)]);
    // The launcher's slots when every rank knows its own (a sub-communicator).
    let mut sub = reading(&[rank("b", 2), rank("a", 1)], &c);
    sub[0].slot = 1;
    sub[1].slot = 1;
    assert_eq!(ids(&resolve(&sub, Some(&c)).unwrap()), ["11", "01"]);
    sub[1].slot = 2;
    assert_eq!(
        err(&sub, Some(&c)),
        "rank 1: MPICAST_TOPO_FILE=/x: host a slot 2 has no ID (the file gives a slots 0, 1)"
    );
    let gone = reading(&[rank("c", 3)], &c);
    assert_eq!(
        err(&gone, Some(&c)),
        "rank 0: MPICAST_TOPO_FILE=/x: host c has no line"
    );
    // Two ranks claiming one slot.
    let mut twice = reading(&[rank("a", 1), rank("a", 1)], &c);
    twice[0].slot = 0;
    twice[1].slot = 0;
    assert_eq!(
        err(&twice, Some(&c)),
        "ranks 0 and 1 both have topology ID 00 (MPICAST_TOPO_FILE=/x gives both the same \
         entry); IDs must differ"
    );
}

#[test]
fn every_rank_reads_the_same_file() {
    let c = copy("a 0\nb 1\n");
    let mut f = reading(&[rank("a", 1), rank("b", 2), rank("a", 1)], &c);
    f[2].file = FileFact::Unreadable { os_error: 13 };
    assert_eq!(
        err(&f, Some(&c)),
        "rank 2: MPICAST_TOPO_FILE=/x: cannot read it on a: Permission denied (os error 13)"
    );
    f[2].file = FileFact::Read { digest: 1 };
    assert_eq!(
        err(&f, Some(&c)),
        "rank 2: MPICAST_TOPO_FILE=/x: the copy on a differs from rank 0's on a (every rank \
         must read the same file)"
    );
    // A file that does not parse: its line, the same on every rank.
    let broken = copy("a 0\nb\n");
    let f = reading(&[rank("a", 1), rank("b", 2)], &broken);
    assert_eq!(
        err(&f, Some(&broken)),
        "MPICAST_TOPO_FILE=/x:2: expected `HOST ID` or `HOST:SLOT ID`, got 1 field"
    );
    // Parsed in another base than the ranks'.
    let f8 = reading(&[rank("a", 1)], &c);
    let c8 = FileCopy::from_bytes(b"a 0\nb 1\n", NAME, 8);
    assert_eq!(
        err(&f8, Some(&c8)),
        "MPICAST_TOPO_FILE=/x: parsed in base 8, the ranks have MPICAST_TOPO_BASE=16"
    );
}

#[test]
fn derived_ids_follow_addresses_then_cpus() {
    // Hosts by address, not by rank: 10.0.0.9 is the last host although rank 0 runs there.
    let facts = vec![
        rank("z", 9),
        rank("a", 1),
        rank("m", 5),
        rank("a", 1),
        rank("z", 9),
    ];
    let r = resolve(&facts, None).unwrap();
    assert_eq!(r.source, Source::Derived);
    assert_eq!(ids(&r), ["20", "00", "10", "01", "21"]);
    assert_eq!(r.layout, vec![("host", 1), ("rank on host", 1)]);

    // One rank per host: the host digit alone.
    let r = resolve(&[rank("a", 3), rank("b", 2)], None).unwrap();
    assert_eq!(ids(&r), ["1", "0"]);
    assert_eq!(r.layout, vec![("host", 1)]);
    // One rank.
    let r = resolve(&[rank("a", 3)], None).unwrap();
    assert_eq!(ids(&r), ["0"]);

    // CPU facts: package, NUMA node, core, dense within the levels before them; a host where a
    // rank does not know its package uses rank order alone.
    let facts = vec![
        with_cpu(rank("a", 1), 1, 1, 0),
        with_cpu(rank("a", 1), 0, 0, 8),
        with_cpu(rank("a", 1), 0, 0, 0),
        with_cpu(rank("a", 1), 1, 1, 8),
        with_cpu(rank("b", 2), 0, 0, 0),
        with_cpu(rank("b", 2), UNKNOWN, 0, 4),
        with_cpu(rank("b", 2), 0, 0, 0),
    ];
    let r = resolve(&facts, None).unwrap();
    assert_eq!(
        ids(&r),
        ["0100", "0010", "0000", "0110", "1000", "1001", "1002"]
    );
    assert_eq!(
        r.layout,
        vec![
            ("host", 1),
            ("package", 1),
            ("core", 1),
            ("rank on host", 1)
        ]
    );
    // A known level after an unknown one is not used: node known, package not.
    let facts = vec![
        with_cpu(rank("a", 1), UNKNOWN, 0, 1),
        with_cpu(rank("a", 1), UNKNOWN, 1, 2),
    ];
    assert_eq!(ids(&resolve(&facts, None).unwrap()), ["0", "1"]);

    // Base 2, too many derived digits for 64 bits.
    let wide: Vec<RankFacts> = (0..3)
        .map(|k| {
            let mut f = with_cpu(rank("a", k), u32::MAX - 1, u32::MAX - 1 - u32::from(k), 0);
            f.base = 2;
            f
        })
        .collect();
    assert!(resolve(&wide, None).is_ok(), "values are ranked, not used");
}

#[test]
fn derived_ids_are_unique_and_hosts_are_subtrees() {
    let mut rng = Rng::new(7);
    for case in 0..300 {
        let base = [2, 4, 8, 16, 256][case % 5];
        let n = 1 + rng.below(60);
        let hosts = 1 + rng.below(9);
        let facts: Vec<RankFacts> = (0..n)
            .map(|_| {
                let h = rng.below(hosts);
                let mut f = rank(&format!("h{h}"), h as u8 + 1);
                f.base = base;
                let maybe = |rng: &mut Rng, m: usize| {
                    if rng.below(10) == 0 {
                        UNKNOWN
                    } else {
                        rng.below(m) as u32
                    }
                };
                f.cpu = CpuFacts {
                    cpu: 0,
                    package: maybe(&mut rng, 2),
                    node: maybe(&mut rng, 4),
                    core: maybe(&mut rng, 64),
                };
                f
            })
            .collect();
        // Through the wire format, as the library gets them.
        let facts: Vec<RankFacts> = facts
            .iter()
            .map(|f| RankFacts::decode(&f.encode()).unwrap())
            .collect();
        let r = resolve(&facts, None).unwrap();
        let t = &r.topology;
        let digits: u32 = r.layout.iter().map(|(_, d)| d).sum();
        assert_eq!(digits, t.shape().digits(), "case {case}");
        for a in 0..n as u32 {
            for b in 0..n as u32 {
                let (fa, fb) = (&facts[a as usize], &facts[b as usize]);
                if a != b {
                    assert_ne!(t.id(a), t.id(b), "case {case}");
                }
                // Ranks of one host share more digits with each other than with any other
                // host's rank.
                for c in 0..n as u32 {
                    let fc = &facts[c as usize];
                    if a != b && fa.addr == fb.addr && fa.addr != fc.addr {
                        assert!(
                            t.longest_common_prefix(a, b) > t.longest_common_prefix(a, c),
                            "case {case}: ranks {a} {b} {c}"
                        );
                    }
                }
            }
        }
        // And the topology routes: a multicast from rank 0 reaches everyone once.
        let tables: Vec<RoutingTable> = (0..n as u32)
            .map(|me| RoutingTable::build(t, me, Pick::Nearest))
            .collect();
        let dests: Vec<u32> = (1..n as u32).collect();
        let mut got = vec![0u32; n];
        let mut queue = vec![(0u32, None, dests)];
        while let Some((me, prev, d)) = queue.pop() {
            let fw = forward(t, &tables[me as usize], Route::Dests, prev, &d);
            if fw.deliver {
                got[me as usize] += 1;
            }
            for h in fw.hops {
                queue.push((h.to, Some(me), h.dests));
            }
        }
        assert_eq!(got[1..], vec![1; n - 1][..], "case {case}");
    }
}

#[test]
fn stat_lines() {
    let fields: Vec<String> = (3..=52).map(|k| k.to_string()).collect();
    let line = format!("1234 (a) b (c)) {}\n", fields.join(" "));
    assert_eq!(sysfs::processor_of_stat(&line), Some(39));
    assert_eq!(sysfs::processor_of_stat("1234 (x) R 1 2"), None);
    assert_eq!(sysfs::processor_of_stat(""), None);
    assert_eq!(sysfs::processor_of_stat("no parenthesis"), None);
}

#[test]
fn sysfs_trees() {
    let dir = std::env::temp_dir().join(format!("mpicast-topology-sysfs-{}", std::process::id()));
    let cpu = dir.join("cpu3");
    std::fs::create_dir_all(cpu.join("topology")).unwrap();
    std::fs::create_dir_all(cpu.join("node1")).unwrap();
    std::fs::create_dir_all(cpu.join("nodeX")).unwrap();
    std::fs::write(cpu.join("topology/physical_package_id"), "1\n").unwrap();
    std::fs::write(cpu.join("topology/core_id"), "12\n").unwrap();
    assert_eq!(
        sysfs::from_sysfs(Some(3), &dir),
        CpuFacts {
            cpu: 3,
            package: 1,
            node: 1,
            core: 12
        }
    );
    // An architecture that reports no package, a kernel without NUMA.
    std::fs::write(cpu.join("topology/physical_package_id"), "-1\n").unwrap();
    std::fs::remove_dir(cpu.join("node1")).unwrap();
    assert_eq!(
        sysfs::from_sysfs(Some(3), &dir),
        CpuFacts {
            cpu: 3,
            package: UNKNOWN,
            node: UNKNOWN,
            core: 12
        }
    );
    assert_eq!(
        sysfs::from_sysfs(Some(4), &dir),
        CpuFacts {
            cpu: 4,
            ..CpuFacts::UNKNOWN
        }
    );
    assert_eq!(sysfs::from_sysfs(None, &dir), CpuFacts::UNKNOWN);
    std::fs::remove_dir_all(&dir).unwrap();
    // This machine: whatever it reports, nothing fails; Linux always says where we run.
    let here = sysfs::read();
    if cfg!(target_os = "linux") {
        assert_ne!(here.cpu, UNKNOWN);
    }
}
