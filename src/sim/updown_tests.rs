//! Up-down routing: a small network worked by hand (its tree, its up and down links, routes),
//! the `routing` line of the network file, and properties over random irregular networks
//! checked against a brute-force search of their own (every route legal, as short as a legal
//! route can be, the first of its length, and no cycle of channel dependencies).

use super::network::{LinkId, Network, Node, Routing, RoutingKind, ShortestPaths, SwitchId};
use super::updown::{Dir, UpDown};
use super::{Contention, Params};
use crate::sched::testutil::Rng;
use std::collections::{BTreeSet, VecDeque};

fn net(text: &str) -> Network {
    Network::parse(text, "net.txt").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    Network::parse(text, "net.txt").unwrap_err()
}

fn id(n: &Network, name: &str) -> SwitchId {
    n.switch_named(name)
        .unwrap_or_else(|| panic!("no switch {name}"))
}

/// The switches a route of `r` from `from` passes, by name, `from` first.
fn path(n: &Network, r: &dyn Routing, from: &str, to: &str) -> Vec<String> {
    let mut links = Vec::new();
    r.switch_path(n, id(n, from), id(n, to), &mut links);
    let mut out = vec![from.to_string()];
    out.extend(
        links
            .iter()
            .map(|&l| n.node_name(n.links[l as usize].to).to_string()),
    );
    out
}

fn link(n: &Network, a: &str, b: &str) -> LinkId {
    n.link_between(id(n, a), id(n, b)).unwrap()
}

// ------------------------------------------------------------------------------ by hand

/// Six switches; the root is s0, the first declared. The tree of the breadth-first search
/// (neighbours in declaration order), cross edges dotted, levels on the right:
///
/// ```text
///            s0               0
///          /  |  \
///        s1   s2   s5         1
///        |    |  .'
///        s4 ..s3              2
/// ```
///
/// s0 reaches s1, s2, s5; s1 then reaches s4 and s2 reaches s3. Keys (level, id), lowest
/// nearest the root: s0 (0,0), s1 (1,1), s2 (1,2), s5 (1,5), s3 (2,3), s4 (2,4). Up links go
/// to a lower key: the tree links towards s0, s4->s3 (same level, lower id) and s3->s5 (to a
/// lower level, though to a higher id: the seed's literal "higher id to lower id" would make
/// s5->s3 the up link).
///
/// Routes worked by hand:
/// - s1 to s3. The shortest path s1 s4 s3 goes down (s1->s4, tree) then up (s4->s3): refused.
///   Legal in 3 hops: s1 s0 s2 s3 and s1 s0 s5 s3 (up, down, down); s2 comes before s5.
/// - s3 to s1, the other way: s3 s4 s1 goes down then up; s3 s2 s0 s1 (up, up, down) is first
///   among the legal routes of 3 hops (s3 s5 s0 s1 is the other).
/// - s4 to s5: up s4->s3, up s3->s5, never through the root; back, s5 s3 s4 is down, down.
pub(crate) const SIX: &str = "switch s0 s1 s2 s3 s4 s5
link s0 s1 1Gbit
link s0 s2 1Gbit
link s0 s5 1Gbit
link s1 s4 1Gbit
link s2 s3 1Gbit
link s3 s4 1Gbit
link s5 s3 1Gbit
host h0 s0
host h1 s1
host h2 s2
host h3 s3
host h4 s4
host h5 s5
";

#[test]
fn the_tree_and_the_directions_by_hand() {
    let n = net(SIX);
    let ud = UpDown::new(&n, 0);
    assert_eq!(ud.root(), 0);
    let levels: Vec<u32> = (0..6).map(|s| ud.level(s)).collect();
    assert_eq!(levels, [0, 1, 1, 2, 2, 1]);
    let parent = |s: &str| ud.parent_link(id(&n, s)).map(|l| n.link_name(l));
    assert_eq!(parent("s0"), None);
    assert_eq!(parent("s1").as_deref(), Some("s1->s0"));
    assert_eq!(parent("s2").as_deref(), Some("s2->s0"));
    assert_eq!(parent("s5").as_deref(), Some("s5->s0"));
    assert_eq!(parent("s4").as_deref(), Some("s4->s1"));
    assert_eq!(parent("s3").as_deref(), Some("s3->s2"));
    assert_eq!(ud.children(&n, 0), [1, 2, 5]);
    assert_eq!(ud.children(&n, 2), [3]);
    assert_eq!(ud.children(&n, 3), Vec::<SwitchId>::new());
    for (a, b, tree, dir) in [
        ("s1", "s0", true, Dir::Up),
        ("s0", "s1", true, Dir::Down),
        ("s3", "s2", true, Dir::Up),
        ("s4", "s1", true, Dir::Up),
        ("s4", "s3", false, Dir::Up),
        ("s3", "s4", false, Dir::Down),
        ("s3", "s5", false, Dir::Up),
        ("s5", "s3", false, Dir::Down),
    ] {
        let l = link(&n, a, b);
        assert_eq!((ud.is_tree(l), ud.dir(l)), (tree, Some(dir)), "{a}->{b}");
    }
    // A host's link has no direction.
    assert_eq!(ud.dir(n.hosts[0].up), None);
    assert_eq!(ud.dir(n.hosts[0].down), None);
}

#[test]
fn routes_by_hand() {
    let n = net(SIX);
    let ud = UpDown::new(&n, 0);
    let sp = ShortestPaths::new(&n);
    assert_eq!(path(&n, &sp, "s1", "s3"), ["s1", "s4", "s3"]);
    assert_eq!(path(&n, &ud, "s1", "s3"), ["s1", "s0", "s2", "s3"]);
    assert_eq!(path(&n, &sp, "s3", "s1"), ["s3", "s4", "s1"]);
    assert_eq!(path(&n, &ud, "s3", "s1"), ["s3", "s2", "s0", "s1"]);
    assert_eq!(path(&n, &ud, "s4", "s5"), ["s4", "s3", "s5"]);
    assert_eq!(path(&n, &ud, "s5", "s4"), ["s5", "s3", "s4"]);
    assert_eq!(path(&n, &ud, "s2", "s4"), ["s2", "s3", "s4"]);
    assert_eq!(path(&n, &ud, "s4", "s2"), ["s4", "s3", "s2"]);
    assert_eq!(path(&n, &ud, "s2", "s2"), ["s2"]);
    assert_eq!(ud.route(&n, 1, 1), Vec::<LinkId>::new());
    // Another root, another tree: from s3, s1 hangs below s4 and the short way is all up.
    let ud3 = UpDown::new(&n, 3);
    assert_eq!(
        (0..6).map(|s| ud3.level(s)).collect::<Vec<_>>(),
        [2, 2, 1, 0, 1, 1]
    );
    assert_eq!(path(&n, &ud3, "s1", "s3"), ["s1", "s4", "s3"]);
    assert_eq!(path(&n, &ud3, "s1", "s2"), ["s1", "s0", "s2"]);
}

#[test]
fn the_routing_line_picks_the_routing() {
    assert_eq!(net(SIX).routing, RoutingKind::Shortest);
    assert_eq!(
        net(&format!("{SIX}routing shortest\n")).routing,
        RoutingKind::Shortest
    );
    assert_eq!(
        net(&format!("{SIX}routing updown\n")).routing,
        RoutingKind::UpDown { root: 0 }
    );
    // The root may be named before it is declared.
    assert_eq!(
        net(&format!("routing updown s3 # a comment\n{SIX}")).routing,
        RoutingKind::UpDown { root: 3 }
    );
    // The simulator routes as the file says: rank i is on host hi, on switch si.
    let route = |text: &str, a: u32, b: u32| {
        let n = net(text);
        let c = Contention::new(&n, 6, &Params::default()).unwrap();
        c.route(a, b)
            .iter()
            .map(|&l| n.link_name(l))
            .collect::<Vec<_>>()
    };
    assert_eq!(route(SIX, 1, 3), ["h1->s1", "s1->s4", "s4->s3", "s3->h3"]);
    assert_eq!(
        route(&format!("{SIX}routing updown\n"), 1, 3),
        ["h1->s1", "s1->s0", "s0->s2", "s2->s3", "s3->h3"]
    );
    assert_eq!(
        route(&format!("{SIX}routing updown s3\n"), 1, 3),
        ["h1->s1", "s1->s4", "s4->s3", "s3->h3"]
    );
    assert_eq!(
        route(&format!("{SIX}routing updown s3\n"), 1, 2),
        ["h1->s1", "s1->s0", "s0->s2", "s2->h2"]
    );
}

#[test]
fn routing_line_errors_name_file_and_line() {
    let form = "routing shortest | routing updown [ROOT]";
    for (text, want) in [
        (
            "switch a\nrouting fastest\n".to_string(),
            "net.txt:2: unknown routing `fastest` (known: shortest, updown)".to_string(),
        ),
        (
            "switch a\nrouting updown z\n".into(),
            "net.txt:2: unknown switch `z`".into(),
        ),
        (
            "switch a\nrouting updown\nrouting shortest\n".into(),
            "net.txt:3: routing is given twice (first on line 2)".into(),
        ),
        (
            "switch a\nrouting shortest a\n".into(),
            format!(
                "net.txt:2: `routing shortest` has no root: expected `{form}`, got `routing \
                 shortest a`"
            ),
        ),
        (
            "switch a\nrouting\n".into(),
            format!("net.txt:2: expected `{form}`, got `routing`"),
        ),
        (
            "switch a b\nlink a b 1Gbit\nrouting updown a b\n".into(),
            format!("net.txt:3: expected `{form}`, got `routing updown a b`"),
        ),
        (
            "switch a\nhost h a\nrouting updown h\n".into(),
            "net.txt:3: unknown switch `h`".into(),
        ),
        // A disconnected network is refused before any routing is made.
        (
            "switch a b c\nlink a b 1Gbit\nrouting updown c\n".into(),
            "net.txt:1: switch `c` cannot be reached from switch `a`: the switches must form \
             one connected network"
                .into(),
        ),
    ] {
        assert_eq!(err(&text), want, "{text:?}");
    }
}

// ------------------------------------------------------------------------------ deadlock

/// Whether the channel dependency graph of the routes between every pair of switches (a link
/// depends on the next one of a route) has a cycle: Kahn's topological sort.
fn has_dependency_cycle(n: &Network, r: &dyn Routing) -> bool {
    let nl = n.links.len();
    let mut edges = BTreeSet::new();
    let mut route = Vec::new();
    for a in 0..n.switches.len() as SwitchId {
        for b in 0..n.switches.len() as SwitchId {
            route.clear();
            r.switch_path(n, a, b, &mut route);
            for w in route.windows(2) {
                edges.insert((w[0], w[1]));
            }
        }
    }
    let mut indeg = vec![0usize; nl];
    let mut next = vec![Vec::new(); nl];
    for &(x, y) in &edges {
        indeg[y as usize] += 1;
        next[x as usize].push(y);
    }
    let mut queue: VecDeque<usize> = (0..nl).filter(|&l| indeg[l] == 0).collect();
    let mut done = 0;
    while let Some(l) = queue.pop_front() {
        done += 1;
        for &m in &next[l] {
            indeg[m as usize] -= 1;
            if indeg[m as usize] == 0 {
                queue.push_back(m as usize);
            }
        }
    }
    done < nl
}

#[test]
fn a_ring_of_five_deadlocks_with_shortest_paths_but_not_up_down() {
    // Each switch sends two hops clockwise along s_i->s_i+1->s_i+2: the five clockwise links
    // wait on each other in a circle. Up-down routing breaks it at the root.
    let mut text = "switch s0 s1 s2 s3 s4\n".to_string();
    for i in 0..5 {
        text += &format!("link s{i} s{} 1Gbit\n", (i + 1) % 5);
    }
    let n = net(&text);
    assert!(has_dependency_cycle(&n, &ShortestPaths::new(&n)));
    let ud = UpDown::new(&n, 0);
    assert!(!has_dependency_cycle(&n, &ud));
    // The tree: s1 and s4 on level 1, s2 (below s1) and s3 (below s4) on level 2; the cross
    // edge s2-s3 joins one level, so s3->s2 (lower id) is up. s2 s3 s4 would go down (s2->s3)
    // then up (s3->s4, the tree): the route goes round by the root instead, up, up, down.
    assert_eq!(path(&n, &ud, "s2", "s4"), ["s2", "s1", "s0", "s4"]);
    assert_eq!(path(&n, &ud, "s4", "s2"), ["s4", "s0", "s1", "s2"]);
    // Down, down; and up, up: both the short way.
    assert_eq!(path(&n, &ud, "s1", "s3"), ["s1", "s2", "s3"]);
    assert_eq!(path(&n, &ud, "s3", "s1"), ["s3", "s2", "s1"]);
    assert_eq!(path(&n, &ud, "s1", "s4"), ["s1", "s0", "s4"]);
    assert_eq!(path(&n, &ud, "s2", "s0"), ["s2", "s1", "s0"]);
}

#[test]
fn the_seeds_literal_rule_would_deadlock_here() {
    // Root s0; s3 and s4 on level 1; s2 below s3 (s3 is searched first), s1 below s4. Cross
    // edges s4-s2 (levels 1 and 2) and s2-s1 (both on level 2). Read literally, the seed makes
    // a cross edge up from the higher id to the lower: s4->s2 and s2->s1, and with the tree's
    // s1->s4 the up links close a cycle. By level first: s2->s4, s2->s1, s1->s4 are up.
    let n = net("switch s0 s1 s2 s3 s4
link s0 s3 1Gbit
link s0 s4 1Gbit
link s3 s2 1Gbit
link s4 s1 1Gbit
link s4 s2 1Gbit
link s1 s2 1Gbit
");
    let ud = UpDown::new(&n, 0);
    assert_eq!(
        (0..5).map(|s| ud.level(s)).collect::<Vec<_>>(),
        [0, 2, 2, 1, 1]
    );
    assert_eq!(n.link_name(ud.parent_link(id(&n, "s2")).unwrap()), "s2->s3");
    assert_eq!(n.link_name(ud.parent_link(id(&n, "s1")).unwrap()), "s1->s4");
    let literal_up = |l: LinkId| {
        let k = &n.links[l as usize];
        let (Node::Switch(a), Node::Switch(b)) = (k.from, k.to) else {
            unreachable!()
        };
        if ud.is_tree(l) {
            ud.level(b) < ud.level(a)
        } else {
            b < a
        }
    };
    let cycle = [
        link(&n, "s4", "s2"),
        link(&n, "s2", "s1"),
        link(&n, "s1", "s4"),
    ];
    assert!(cycle.iter().all(|&l| literal_up(l)));
    assert_eq!(
        cycle.map(|l| ud.dir(l).unwrap()),
        [Dir::Down, Dir::Up, Dir::Up]
    );
    assert!(!has_dependency_cycle(&n, &ud));
    // s3 s2 s1 goes down then up (s2->s1): s3 s0 s4 s1 instead; and back, s1 s2 s3 goes down
    // then up (s2->s3): s1 s4 s0 s3, up, up, down.
    assert_eq!(path(&n, &ud, "s3", "s1"), ["s3", "s0", "s4", "s1"]);
    assert_eq!(path(&n, &ud, "s1", "s3"), ["s1", "s4", "s0", "s3"]);
    assert_eq!(path(&n, &ud, "s2", "s4"), ["s2", "s4"]);
    assert_eq!(path(&n, &ud, "s2", "s1"), ["s2", "s1"]);
}

// ------------------------------------------------------------------------------ properties

/// A random irregular network of 4 to 64 switches, each with 1 to `max` (2 to 8) cables, `max`
/// at most: a random tree plus random extra cables (at least one, so there is a cycle).
/// Switches are declared in a random order, so their ids do not follow the shape; one host
/// per switch, `hI` on `sI`; `routing updown`, at a random root a third of the time. Also
/// the networks of `algo::agents`' tests.
pub(crate) fn random_switched(rng: &mut Rng) -> String {
    let nsw = 4 + rng.below(61);
    let max = 2 + rng.below(7);
    let mut deg = vec![0usize; nsw];
    let mut cables = BTreeSet::new();
    for s in 1..nsw {
        let open: Vec<usize> = (0..s).filter(|&p| deg[p] < max).collect();
        let p = open[rng.below(open.len())];
        cables.insert((p, s));
        deg[p] += 1;
        deg[s] += 1;
    }
    let want = nsw - 1 + 1 + rng.below(nsw * (max - 1) / 2 + 1);
    for _ in 0..nsw * 20 {
        if cables.len() >= want {
            break;
        }
        let (a, b) = (rng.below(nsw), rng.below(nsw));
        let c = (a.min(b), a.max(b));
        if a != b && deg[a] < max && deg[b] < max && cables.insert(c) {
            deg[a] += 1;
            deg[b] += 1;
        }
    }
    if cables.len() == nsw - 1 {
        // Two leaves of a tree of 4 or more switches are never joined: join two.
        let leaves: Vec<usize> = (0..nsw).filter(|&s| deg[s] == 1).collect();
        assert!(cables.insert((leaves[0], leaves[1])));
    }
    let mut order: Vec<usize> = (0..nsw).collect();
    for i in (1..nsw).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let names: Vec<String> = order.iter().map(|s| format!("s{s}")).collect();
    let mut text = format!("switch {}\n", names.join(" "));
    for (a, b) in cables {
        text += &format!("link s{a} s{b} 1Gbit\n");
    }
    for s in 0..nsw {
        text += &format!("host h{s} s{s}\n");
    }
    if rng.chance(33) {
        text += &format!("routing updown s{}\n", rng.below(nsw));
    } else {
        text += "routing updown\n";
    }
    text
}

/// Hops from `src` to every switch (the plain graph; not the code under test).
fn bfs(n: &Network, src: SwitchId) -> Vec<u32> {
    let mut d = vec![u32::MAX; n.switches.len()];
    d[src as usize] = 0;
    let mut q = VecDeque::from([src]);
    while let Some(s) = q.pop_front() {
        for &l in &n.switches[s as usize].out {
            let Node::Switch(t) = n.links[l as usize].to else {
                unreachable!()
            };
            if d[t as usize] == u32::MAX {
                d[t as usize] = d[s as usize] + 1;
                q.push_back(t);
            }
        }
    }
    d
}

#[test]
fn random_irregular_networks() {
    let mut rng = Rng::new(0x003);
    let mut longer = 0;
    for case in 0..80 {
        let text = random_switched(&mut rng);
        let n = Network::parse(&text, "r").unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let RoutingKind::UpDown { root } = n.routing else {
            panic!("case {case}: {:?}", n.routing)
        };
        let ud = UpDown::new(&n, root);
        let k = n.switches.len();
        let cables = n
            .links
            .iter()
            .filter(|l| matches!(l.from, Node::Switch(_)))
            .count()
            / 2;
        assert!(cables >= k, "case {case}: no cycle");
        let from_root = bfs(&n, root);
        let hops: Vec<Vec<u32>> = (0..k as SwitchId).map(|s| bfs(&n, s)).collect();

        // The tree: levels are hops from the root, every other switch has one parent a level
        // up, the tree links are the parents' (both ways), cross edges join levels at most one
        // apart, and a link is up exactly when it goes to a lower (level, id).
        let key = |s: SwitchId| (from_root[s as usize], s);
        let mut tree_links = BTreeSet::new();
        for s in 0..k as SwitchId {
            assert_eq!(ud.level(s), from_root[s as usize], "case {case}");
            match ud.parent_link(s) {
                None => assert_eq!(s, root, "case {case}"),
                Some(p) => {
                    let l = &n.links[p as usize];
                    assert_eq!(l.from, Node::Switch(s), "case {case}");
                    let Node::Switch(up) = l.to else { panic!() };
                    assert_eq!(from_root[up as usize] + 1, from_root[s as usize]);
                    assert!(ud.children(&n, up).contains(&s), "case {case}");
                    tree_links.insert(p);
                    tree_links.insert(n.link_between(up, s).unwrap());
                }
            }
        }
        assert_eq!(tree_links.len(), 2 * (k - 1), "case {case}");
        let children: usize = (0..k as SwitchId).map(|s| ud.children(&n, s).len()).sum();
        assert_eq!(children, k - 1, "case {case}");
        // Per state 2s + phase, the legal moves (oracle's own up and down).
        let mut moves: Vec<Vec<(u32, SwitchId)>> = vec![Vec::new(); 2 * k];
        for (i, l) in n.links.iter().enumerate() {
            let (Node::Switch(a), Node::Switch(b)) = (l.from, l.to) else {
                assert_eq!(ud.dir(i as LinkId), None, "case {case}");
                continue;
            };
            let up = key(b) < key(a);
            let want = if up { Dir::Up } else { Dir::Down };
            assert_eq!(ud.dir(i as LinkId), Some(want), "case {case}");
            assert_eq!(
                ud.is_tree(i as LinkId),
                tree_links.contains(&(i as LinkId)),
                "case {case}"
            );
            assert!(from_root[a as usize].abs_diff(from_root[b as usize]) <= 1);
            if up {
                moves[2 * a as usize].push((2 * b, b));
            } else {
                moves[2 * a as usize].push((2 * b + 1, b));
                moves[2 * a as usize + 1].push((2 * b + 1, b));
            }
        }
        // Brute force: hops between all pairs of states.
        let dist: Vec<Vec<u32>> = (0..2 * k as u32)
            .map(|src| {
                let mut d = vec![u32::MAX; 2 * k];
                d[src as usize] = 0;
                let mut q = VecDeque::from([src]);
                while let Some(st) = q.pop_front() {
                    for &(t, _) in &moves[st as usize] {
                        if d[t as usize] == u32::MAX {
                            d[t as usize] = d[st as usize] + 1;
                            q.push_back(t);
                        }
                    }
                }
                d
            })
            .collect();
        let to_target = |st: u32, t: SwitchId| {
            dist[st as usize][2 * t as usize].min(dist[st as usize][2 * t as usize + 1])
        };

        for a in 0..k as SwitchId {
            for b in 0..k as SwitchId {
                let r = ud.route(&n, a, b);
                // Connects a to b, link by link.
                let mut at = a;
                for &l in &r {
                    assert_eq!(n.links[l as usize].from, Node::Switch(at), "case {case}");
                    let Node::Switch(t) = n.links[l as usize].to else {
                        panic!("case {case}: a host link in a switch path")
                    };
                    at = t;
                }
                assert_eq!(at, b, "case {case}");
                // Legal: every up link before every down link.
                let dirs: Vec<Dir> = r.iter().map(|&l| ud.dir(l).unwrap()).collect();
                let downs = dirs
                    .iter()
                    .position(|&d| d == Dir::Down)
                    .unwrap_or(dirs.len());
                assert!(
                    dirs[downs..].iter().all(|&d| d == Dir::Down),
                    "case {case}: {a} to {b}: {dirs:?}"
                );
                // As short as a legal route can be, never shorter than a path.
                let best = to_target(2 * a, b);
                assert_eq!(r.len() as u32, best, "case {case}: {a} to {b}\n{text}");
                assert!(best >= hops[a as usize][b as usize]);
                longer += (best > hops[a as usize][b as usize]) as usize;
                // The first such route in declaration order: at each step, the lowest switch
                // from which the rest can still be done in the hops left.
                let mut st = 2 * a;
                for (i, &l) in r.iter().enumerate() {
                    let left = best - i as u32 - 1;
                    let &(next, sw) = moves[st as usize]
                        .iter()
                        .filter(|&&(t, _)| to_target(t, b) == left)
                        .min_by_key(|&&(_, sw)| sw)
                        .unwrap();
                    assert_eq!(
                        n.links[l as usize].to,
                        Node::Switch(sw),
                        "case {case}: {a} to {b}, hop {i}"
                    );
                    st = next;
                }
            }
        }
        assert!(!has_dependency_cycle(&n, &ud), "case {case}\n{text}");

        // The simulator takes these routes between hosts: rank i on host hi, on switch si.
        let c = Contention::new(&n, k as u32, &Params::default()).unwrap();
        for _ in 0..20 {
            let (ra, rb) = (rng.below(k) as u32, rng.below(k) as u32);
            let (ha, hb) = (&n.hosts[ra as usize], &n.hosts[rb as usize]);
            let mut want = Vec::new();
            if ra != rb {
                want.push(ha.up);
                want.extend(ud.route(&n, ha.switch, hb.switch));
                want.push(hb.down);
            }
            assert_eq!(c.route(ra, rb), want, "case {case}");
        }
    }
    // The property is not vacuous: up-down routing had to take the long way somewhere.
    assert!(longer > 100, "{longer}");
}
