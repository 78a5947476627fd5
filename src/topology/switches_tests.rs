use super::*;

fn net(text: &str) -> Network {
    Network::parse(text, "fabric.net").unwrap()
}

fn rank(world: u32, name: &str, addrs: &[&str]) -> RankHost {
    RankHost {
        world_rank: world,
        hostname: name.to_string(),
        addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
        file_digest: 7,
    }
}

const TWO: &str = "switch s0 s1\nlink s0 s1 1Gbit\nhost node0 s0\nhost 10.1.0.2 s1\n\
                   host node2.cluster s1\n";

#[test]
fn hosts_by_name_short_name_and_address() {
    let n = net(TWO);
    let ranks = [
        rank(0, "node0.cluster", &["127.0.0.1", "10.1.0.1"]),
        rank(1, "other", &["127.0.0.1", "10.1.0.2"]),
        rank(2, "node2", &["10.1.0.3"]),
        rank(3, "node0", &["10.1.0.1"]),
    ];
    assert_eq!(place(&n, "F", &ranks).unwrap(), vec![0, 1, 1, 0]);
}

#[test]
fn a_missing_host_is_named_with_its_addresses_and_the_files_hosts() {
    let n = net(TWO);
    let ranks = [
        rank(0, "node0", &[]),
        rank(1, "node9", &["127.0.0.1", "10.1.0.9"]),
    ];
    let e = place(&n, "MPICAST_SWITCH_TOPOLOGY=f.net", &ranks).unwrap_err();
    assert!(e.starts_with("MPICAST_SWITCH_TOPOLOGY=f.net: "), "{e}");
    assert!(e.contains("rank 1: `node9` (addresses: 10.1.0.9)"), "{e}");
    assert!(e.contains("node0, 10.1.0.2, node2.cluster"), "{e}");
    assert!(!e.contains("127.0.0.1"), "{e}");
}

#[test]
fn loopback_lines_match_nothing() {
    let n = net("switch s0\nhost 127.0.0.1 s0\n");
    let e = place(&n, "F", &[rank(0, "a", &["127.0.0.1"])]).unwrap_err();
    assert!(e.contains("none but loopback"), "{e}");
}

#[test]
fn a_host_named_twice_is_refused_with_both_lines() {
    let n = net("switch s0 s1\nlink s0 s1 1Gbit\nhost node0 s0\nhost 10.1.0.1 s1\n");
    let e = place(&n, "F", &[rank(0, "node0", &["10.1.0.1"])]).unwrap_err();
    assert!(
        e.starts_with("F:4: host `10.1.0.1` and line 3 (`node0`)"),
        "{e}"
    );
}

#[test]
fn rank_lines_place_by_world_rank_and_must_cover_the_job() {
    let text = "switch s0 s1\nlink s0 s1 1Gbit\nhost h0 s0\nhost h1 s1\nrank 0-1 h0\nrank 2-3 h1\n";
    let n = net(text);
    // A sub-communicator of world ranks 3, 0, 2 on one machine.
    let ranks = [rank(3, "m", &[]), rank(0, "m", &[]), rank(2, "m", &[])];
    assert_eq!(place(&n, "F", &ranks).unwrap(), vec![1, 0, 1]);
    let e = place(&n, "F", &[rank(4, "m", &[])]).unwrap_err();
    assert!(
        e.contains("rank 0 (rank 4 of MPI_COMM_WORLD) has no `rank` line"),
        "{e}"
    );
}

#[test]
fn copies_must_agree_and_be_readable() {
    let mut b = rank(1, "node0", &[]);
    b.file_digest = 8;
    let e = copies_agree("F", &[rank(0, "node0", &[]), b]).unwrap_err();
    assert!(
        e.contains("ranks read different files (rank 0 and rank 1"),
        "{e}"
    );
    let mut c = rank(0, "node0", &[]);
    c.file_digest = 0;
    assert!(copies_agree("F", &[c])
        .unwrap_err()
        .contains("could not be read"));
    let mut d = rank(1, "node0", &[]);
    d.file_digest = NOT_SET;
    let e = copies_agree("F", &[rank(0, "node0", &[]), d]).unwrap_err();
    assert!(e.contains("F: not set on rank 1"), "{e}");
    assert_eq!(
        copies_agree("F", &[rank(0, "a", &[]), rank(1, "b", &[])]),
        Ok(())
    );
}

#[test]
fn records_round_trip_and_cut_long_lists() {
    let r = rank(12, "node7.example.org", &["10.0.0.1", "192.168.3.4"]);
    let e = r.encode();
    assert_eq!(e.len(), RECORD_BYTES);
    assert_eq!(RankHost::decode(&e).unwrap(), r);
    let mut long = r.clone();
    long.hostname = "x".repeat(300);
    long.addrs = (0..40).map(|i| Ipv4Addr::new(10, 0, 0, i)).collect();
    let d = RankHost::decode(&long.encode()).unwrap();
    assert_eq!(d.hostname.len(), 255);
    assert_eq!(d.addrs.len(), 32);
    assert!(RankHost::decode(&e[..10]).is_err());
}

#[test]
fn topology_ids_follow_the_routing_tree() {
    use crate::sim::updown::UpDown;
    // s0 root; s1, s2 below it; s3 below s1; s3-s2 a cross edge.
    let n = net(
        "switch s0 s1 s2 s3\nlink s0 s1 1Gbit\nlink s0 s2 1Gbit\nlink s1 s3 1Gbit\n\
                 link s3 s2 1Gbit\nhost h0 s0\n",
    );
    let ud = UpDown::new(&n, 0);
    let ids = topo_ids(&n, &ud, &[0, 3, 3, 2, 1, 0], 16).unwrap();
    assert_eq!(ids, ["0.0.0", "1.1.0", "1.1.1", "2.0.0", "1.0.0", "0.0.1"]);
    // Subtrees share prefixes: s1's ranks (and s3's below it) start with 1.
    // One rank per switch: no on-switch digit; one switch: one digit.
    assert_eq!(
        topo_ids(&n, &ud, &[1, 2, 3], 16).unwrap(),
        ["1.0", "2.0", "1.1"]
    );
    let one = net("switch s0\n");
    assert_eq!(
        topo_ids(&one, &UpDown::new(&one, 0), &[0, 0, 0], 2).unwrap(),
        ["0.0", "0.1", "1.0"]
    );
    assert_eq!(
        topo_ids(&one, &UpDown::new(&one, 0), &[0], 2).unwrap(),
        ["0"]
    );
    let e = topo_ids(&n, &ud, &[0], 2).unwrap_err();
    assert!(
        e.contains("switch s0 has 2 switches below it") && e.contains("(it is 2)"),
        "{e}"
    );
}
