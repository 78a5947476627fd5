//! Up-down routing (seed 003, section 2.1, after Autonet): the deadlock-free routing of
//! switched networks that the agent-based multicasts of seed 003 assume. Owns the routing tree
//! (a breadth-first spanning tree of the switches), the tree and cross edges, the direction of
//! every switch-to-switch link (up or down) and the legal route of any pair; a `Routing`, so
//! that `mpicast sim --network FILE` routes by it when the file says `routing updown`.
//! Pure: reads a parsed `Network`, touches nothing else.
//!
//! # The rules, and what the seed leaves open
//!
//! - **Root**: the first switch declared (Autonet's rule, the lowest id; the seed does not say),
//!   or the one a `routing updown ROOT` line names.
//! - **Tree**: a breadth-first search from the root that takes each switch's neighbours in
//!   declaration order; a switch's parent is the switch that reached it first. The links of
//!   the tree are tree edges, the others cross edges; a cross edge joins switches whose levels
//!   differ by at most one (the search is breadth-first).
//! - **Up**: a link is up when it goes towards the root: to a switch of a lower level, or of the
//!   same level and a lower id. That is Autonet's rule. The seed says "a cross edge going from a
//!   higher id to a lower one" without the level; taken literally, a cross edge from a switch
//!   of level 1 and id 4 to one of level 2 and id 2 would be up, and with ids that do not grow
//!   with the level the up links can close a cycle (a deadlock; the tests have one). Both
//!   agree when the ids follow the levels, as in a network numbered breadth-first; the levels
//!   come first here. Up links always lower (level, id), so they cannot close a cycle; a down
//!   link is the reverse of an up one.
//! - **Legal route**: no up link after a down link. Among legal routes the shortest in hops;
//!   among those, the one whose sequence of switches, compared one by one in declaration
//!   order, comes first (as `ShortestPaths` breaks its ties). It is found by a breadth-first
//!   search over (switch, phase) states, phase 0 while the route may still go up and 1 once it
//!   has gone down, that takes neighbours in declaration order and enters each state from the
//!   first state that reached it; the route ends at the first state of the destination reached.
//!
//! The legal route may be longer than the shortest path (a down link then an up link is
//! refused), and the routes from one switch need not form a tree of switches: a switch can be
//! reached once still going up and once going down. A multicast in the contention model takes
//! the union of its routes and still crosses each directed link once.

use super::network::{LinkId, Network, Node, Routing, SwitchId};
use std::cell::OnceCell;
use std::collections::VecDeque;

/// The direction of a switch-to-switch link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Towards the root: to a lower (level, id).
    Up,
    Down,
}

/// The routing tree of a network and the routes it allows.
#[derive(Debug)]
pub struct UpDown {
    root: SwitchId,
    /// Per switch: hops from the root in the tree.
    level: Vec<u32>,
    /// Per switch: the link to its parent (`None` for the root).
    parent: Vec<Option<LinkId>>,
    /// Per directed link: its direction (`None` for a host's link) and whether it is a tree edge.
    dir: Vec<Option<Dir>>,
    tree: Vec<bool>,
    /// Per source switch: the search over states, made the first time a route leaves it.
    searches: Vec<OnceCell<Search>>,
}

/// No predecessor: the source state, or a state not reached.
const NONE: u32 = u32::MAX;

/// The breadth-first search over (switch, phase) states from one switch; state `2s + phase`.
#[derive(Debug)]
struct Search {
    /// Per state: the link that entered it and the state it came from (`NONE`: not reached, or
    /// the source).
    enter: Vec<(LinkId, u32)>,
    /// Per switch: the state at which the search reached it first.
    first: Vec<u32>,
}

impl UpDown {
    /// The routing tree of `net` from switch `root`. `net` must be connected, as
    /// `Network::parse` makes sure.
    pub fn new(net: &Network, root: SwitchId) -> UpDown {
        let n = net.switches.len();
        assert!((root as usize) < n, "root switch {root} of {n}");
        let mut level = vec![u32::MAX; n];
        let mut parent = vec![None; n];
        let mut tree = vec![false; net.links.len()];
        level[root as usize] = 0;
        let mut queue = VecDeque::from([root]);
        while let Some(s) = queue.pop_front() {
            for &l in &net.switches[s as usize].out {
                let t = to_switch(net, l);
                if level[t as usize] == u32::MAX {
                    level[t as usize] = level[s as usize] + 1;
                    let back = net
                        .link_between(t, s)
                        .expect("every cable makes two directed links");
                    parent[t as usize] = Some(back);
                    tree[l as usize] = true;
                    tree[back as usize] = true;
                    queue.push_back(t);
                }
            }
        }
        if let Some(s) = level.iter().position(|&l| l == u32::MAX) {
            panic!(
                "up-down routing: switch `{}` cannot be reached from the root `{}`",
                net.switches[s].name, net.switches[root as usize].name
            );
        }
        let dir = net
            .links
            .iter()
            .map(|k| match (k.from, k.to) {
                (Node::Switch(a), Node::Switch(b)) => {
                    let key = |s: SwitchId| (level[s as usize], s);
                    Some(if key(b) < key(a) { Dir::Up } else { Dir::Down })
                }
                _ => None,
            })
            .collect();
        UpDown {
            root,
            level,
            parent,
            dir,
            tree,
            searches: (0..n).map(|_| OnceCell::new()).collect(),
        }
    }

    pub fn root(&self) -> SwitchId {
        self.root
    }

    /// Hops from the root to switch `s` in the tree.
    pub fn level(&self, s: SwitchId) -> u32 {
        self.level[s as usize]
    }

    /// The link from switch `s` up to its parent in the tree (`None` for the root).
    pub fn parent_link(&self, s: SwitchId) -> Option<LinkId> {
        self.parent[s as usize]
    }

    /// The direction of directed link `l`; `None` for a host's link.
    pub fn dir(&self, l: LinkId) -> Option<Dir> {
        self.dir[l as usize]
    }

    /// Whether link `l` is an edge of the tree (both directions are); a switch-to-switch link
    /// that is not is a cross edge.
    pub fn is_tree(&self, l: LinkId) -> bool {
        self.tree[l as usize]
    }

    /// The switches below `s` in the tree, in declaration order.
    pub fn children(&self, net: &Network, s: SwitchId) -> Vec<SwitchId> {
        net.switches[s as usize]
            .out
            .iter()
            .map(|&l| to_switch(net, l))
            .filter(|&t| self.parent[t as usize].map(|p| to_switch(net, p)) == Some(s))
            .collect()
    }

    /// The legal route from switch `from` to switch `to`: its links, in order.
    pub fn route(&self, net: &Network, from: SwitchId, to: SwitchId) -> Vec<LinkId> {
        let mut out = Vec::new();
        self.switch_path(net, from, to, &mut out);
        out
    }

    fn search(&self, net: &Network, src: SwitchId) -> &Search {
        self.searches[src as usize].get_or_init(|| {
            let n = net.switches.len();
            let mut enter = vec![(NONE, NONE); 2 * n];
            let mut first = vec![NONE; n];
            let mut seen = vec![false; 2 * n];
            let start = 2 * src;
            seen[start as usize] = true;
            first[src as usize] = start;
            let mut queue = VecDeque::from([start]);
            while let Some(st) = queue.pop_front() {
                let (s, phase) = (st / 2, st % 2);
                for &l in &net.switches[s as usize].out {
                    let next = match (phase, self.dir[l as usize]) {
                        (0, Some(Dir::Up)) => 0,
                        (_, Some(Dir::Down)) => 1,
                        _ => continue,
                    };
                    let t = to_switch(net, l);
                    let ts = 2 * t + next;
                    if !seen[ts as usize] {
                        seen[ts as usize] = true;
                        enter[ts as usize] = (l, st);
                        if first[t as usize] == NONE {
                            first[t as usize] = ts;
                        }
                        queue.push_back(ts);
                    }
                }
            }
            Search { enter, first }
        })
    }
}

impl Routing for UpDown {
    fn switch_path(&self, net: &Network, from: SwitchId, to: SwitchId, out: &mut Vec<LinkId>) {
        let search = self.search(net, from);
        let begin = out.len();
        // Every switch is reached: from any switch the tree's up links lead to the root and
        // its down links to every switch.
        let mut st = search.first[to as usize];
        while st != 2 * from {
            let (l, prev) = search.enter[st as usize];
            out.push(l);
            st = prev;
        }
        out[begin..].reverse();
    }
}

fn to_switch(net: &Network, l: LinkId) -> SwitchId {
    match net.links[l as usize].to {
        Node::Switch(t) => t,
        Node::Host(_) => unreachable!("a switch lists only its links to switches"),
    }
}
