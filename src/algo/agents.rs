//! Multiple multicasts over a switched network with up-down routing: the agent-based
//! algorithms of seed 003 (Liu, Wu and Lin, "Efficient agent-based multicast on wormhole
//! switch-based irregular networks", IPDPS 2003) and the two baselines they are measured
//! against, as a plan of unicast hops (who sends which multicast to whom, in which order) and
//! the GOAL schedule of every rank. Pure: reads a parsed `Network`, its `UpDown` and where the
//! ranks sit; no I/O. docs/agents.md tells the same story with an example.
//!
//! # The algorithms
//!
//! Ranks sit on switches (`switch_of_rank`); D(m,v) is the set of destinations of multicast m
//! on switch v, S(m,v) the children of v in the routing tree whose subtrees hold destinations
//! of m. All messages are unicasts; the route is up-down routing's, which this module does not
//! need: it only chooses the hops.
//!
//! - **Naive**: the source sends to every destination itself, in the order the destinations are
//!   given.
//! - **SPCCO** (Kesavan and Panda, the seed's baseline): the destinations and the source in
//!   the depth-first (pre-)order of their switches in the routing tree, children in declaration
//!   order, ranks of one switch in rank order (the source among them by its rank); the sequence
//!   rotated so that the source comes first (source-partitioned, so different sources start at
//!   different points); then a binomial multicast over it by recursive halving (the holder of a
//!   range sends to the first rank of its upper half, each half goes on alone). Depth-first order
//!   keeps each half inside as few subtrees as it can, which is what the chains (POCs) of CCO
//!   are for; the POCs themselves are not built.
//! - **The agent-based variants** (SameTree/Random x Binomial/Cyclic), in three steps:
//!   1. the source sends m to its *primary agent* (the source is never a destination, so never
//!      an agent: this hop is always made);
//!   2. the primary agent gets m to one destination on the root switch r (A(m,r)'s choice
//!      among D(m,r), if any) and to the agent of every subtree of S(m,r): the *step-2 list*,
//!      in ring order (the root switch first, then the root's children in declaration order);
//!   3. every agent of S(m,r) runs RAM in its subtree, and the root-switch destination sends m to
//!      the rest of D(m,r) by a binomial multicast (recursive halving, itself first, then the
//!      others in rank order from it, wrapping).
//!
//!   *SameTree*: the primary agent is the agent of the root's child subtree that holds the
//!   source, if that subtree holds destinations; otherwise (the source on the root switch, or its
//!   subtree without destinations) the root-switch destination if there is one, else the agent
//!   of the costliest subtree of S(m,r) (first in declaration order among equals). *Random*: the
//!   agent of a subtree of S(m,r) drawn uniformly with `seed` (the root-switch destination only
//!   when S(m,r) is empty); the draw depends on `seed` and the index of the multicast only.
//!
//!   *Binomial*: the step-2 list rotated so that the primary agent comes first, then a binomial
//!   multicast over it by recursive halving. *Cyclic*: the same rotated list as a chain: each
//!   member relays m to the next one to its right in ring order, wrapping, until every member has
//!   it. Each multicast enters the ring at its own primary agent, so in any round different
//!   multicasts travel different parts of the ring (the seed's "circular track"). The seed's ring
//!   holds the primary agents of *all* multicasts, which would make ranks relay multicasts they
//!   are not destinations of; here each multicast's ring holds only its own step-2 list (empty
//!   positions skipped), so **every relay of m is a destination of m** and no rank receives a
//!   multicast it is not a destination of.
//!
//! # RAM, the agent function and the cost function
//!
//! A(m,v): a rank of D(m,v) when v has destinations of m (the seed says "arbitrary": here
//! the (m mod |D(m,v)|)-th in rank order, m the multicast's index, so that many multicasts
//! spread the agent's work over the ranks of a switch rather than all picking its lowest
//! rank, which the contention simulator shows as a hot host link); otherwise the agent of the
//! costliest child in S(m,v) (first in declaration order among equals; the seed's text is cut
//! here and also says "highest cost"). RAM(v), run by A(m,v) once it has m, is
//! `ForwardInSwitch`: the list of members [A(m,v), then the agents of S(m,v) (but the child
//! A(m,v) itself came from) by decreasing cost (declaration order among equals), then the other
//! ranks of D(m,v) in rank order from A(m,v), wrapping], and a binomial multicast over it by
//! recursive doubling (in round t every member of index i < 2^t sends to i + 2^t), so that the
//! costliest subtrees get m first and every informed member, agent or local destination,
//! sends too. A member that is the
//! agent of a child w runs RAM(w) once its own sends at this level are done (A(m,v) does so for
//! the child it stands for).
//!
//! C(m,v) is the time of that schedule in rounds, every unicast one round and every rank
//! making one send a round: the latest over the members of (the round its sends at this level
//! are done, or it got m if it has none) + C(m,w) for its child w. A leaf gives
//! ceil(log2 |D(m,v)|), 0 when empty, as the seed says.
//!
//! # Order of a rank's sends
//!
//! Every hop gets the round the model above gives it (round 0: the first send of a source).
//! A rank's sends, over all multicasts, are in order of (round, multicast index, order within
//! the multicast): the multicasts are interleaved by round. Within one multicast a rank never
//! has two sends in one round, so that is also the order RAM and the binomials make them.
//!
//! # Inputs
//!
//! A multicast with no destinations is allowed and sends nothing. A duplicate destination, a
//! source among its own destinations and a rank out of range are errors (no normalisation);
//! several multicasts from one source are allowed, each is its own index.

use crate::sched::{ActionId, BufRef, Builder, Op, Schedule};
use crate::sim::network::{Network, SwitchId};
use crate::sim::updown::UpDown;
use std::collections::BTreeMap;

/// Which algorithm plans the hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmcastAlgo {
    Naive,
    Spcco,
    SameTreeBinomial,
    SameTreeCyclic,
    RandomBinomial,
    RandomCyclic,
}

impl MmcastAlgo {
    pub const ALL: [MmcastAlgo; 6] = [
        MmcastAlgo::Naive,
        MmcastAlgo::Spcco,
        MmcastAlgo::SameTreeBinomial,
        MmcastAlgo::SameTreeCyclic,
        MmcastAlgo::RandomBinomial,
        MmcastAlgo::RandomCyclic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MmcastAlgo::Naive => "naive",
            MmcastAlgo::Spcco => "spcco",
            MmcastAlgo::SameTreeBinomial => "sametree-binomial",
            MmcastAlgo::SameTreeCyclic => "sametree-cyclic",
            MmcastAlgo::RandomBinomial => "random-binomial",
            MmcastAlgo::RandomCyclic => "random-cyclic",
        }
    }

    /// The algorithm called `s` (as `name` gives it), ignoring case.
    pub fn from_name(s: &str) -> Option<MmcastAlgo> {
        MmcastAlgo::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
    }
}

/// One multicast: `source` sends one message to every rank of `dests`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Multicast {
    pub source: u32,
    pub dests: Vec<u32>,
}

/// Rank `from` sends multicast `mcast`'s message to rank `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub mcast: u32,
    pub from: u32,
    pub to: u32,
}

/// The hops of every multicast, by rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    ranks: u32,
    mcasts: usize,
    /// Per rank: its sends in the order it makes them, and the round of each.
    sends: Vec<Vec<Hop>>,
    rounds: Vec<Vec<u32>>,
    /// Per rank: (multicast, parent), ascending by multicast.
    recvs: Vec<Vec<(u32, u32)>>,
    /// The last round any hop is made in, plus one (0 without hops).
    span: u32,
}

impl Plan {
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// Number of multicasts planned.
    pub fn mcasts(&self) -> usize {
        self.mcasts
    }

    /// The sends of `rank`, in the order it makes them.
    pub fn sends(&self, rank: u32) -> &[Hop] {
        &self.sends[rank as usize]
    }

    /// The model's round of each of `sends(rank)`.
    pub fn send_rounds(&self, rank: u32) -> &[u32] {
        &self.rounds[rank as usize]
    }

    /// The multicasts `rank` receives, with who sends each: (multicast, parent), ascending.
    pub fn receives(&self, rank: u32) -> &[(u32, u32)] {
        &self.recvs[rank as usize]
    }

    /// Who sends multicast `mcast` to `rank` (`None`: its source, or not a destination).
    pub fn parent(&self, mcast: u32, rank: u32) -> Option<u32> {
        let r = &self.recvs[rank as usize];
        r.binary_search_by_key(&mcast, |&(m, _)| m)
            .ok()
            .map(|i| r[i].1)
    }

    /// Rounds of the unit-cost model (one round per unicast, one send a round per rank, each
    /// multicast on its own) until the last hop arrives: the plan's own estimate, not a
    /// simulation (contention and the sharing of a rank by several multicasts are left out).
    pub fn span(&self) -> u32 {
        self.span
    }
}

/// Plans `mcasts` with `algo`. `switch_of_rank[r]`: the switch rank r's host hangs on (its
/// length is the number of ranks). `seed` fixes the Random variants' choices (same inputs, same
/// plan, on every rank).
pub fn plan(
    net: &Network,
    updown: &UpDown,
    switch_of_rank: &[SwitchId],
    mcasts: &[Multicast],
    algo: MmcastAlgo,
    seed: u64,
) -> Result<Plan, String> {
    let ranks = u32::try_from(switch_of_rank.len()).map_err(|_| "too many ranks".to_string())?;
    let nsw = net.switches.len();
    if let Some(r) = switch_of_rank.iter().position(|&s| s as usize >= nsw) {
        return Err(format!(
            "rank {r} is on switch {} but the network has {nsw} switches",
            switch_of_rank[r]
        ));
    }
    if mcasts.len() >= u32::MAX as usize {
        return Err(format!("{} multicasts are too many", mcasts.len()));
    }
    validate(ranks, mcasts)?;
    let ctx = Ctx::new(net, updown, switch_of_rank);
    let mut all: Vec<(u32, u32, u32, Hop)> = Vec::new(); // (round, mcast, seq, hop)
    for (i, m) in mcasts.iter().enumerate() {
        let mut mc = Mc::new(&ctx, i as u32, m);
        match algo {
            MmcastAlgo::Naive => {
                for (k, &d) in m.dests.iter().enumerate() {
                    mc.hop(k as u32, m.source, d);
                }
            }
            MmcastAlgo::Spcco => mc.spcco(),
            MmcastAlgo::SameTreeBinomial => mc.agents(Primary::SameTree, Relay::Binomial),
            MmcastAlgo::SameTreeCyclic => mc.agents(Primary::SameTree, Relay::Cyclic),
            MmcastAlgo::RandomBinomial => mc.agents(Primary::Random(seed), Relay::Binomial),
            MmcastAlgo::RandomCyclic => mc.agents(Primary::Random(seed), Relay::Cyclic),
        }
        for (seq, (round, hop)) in mc.hops.into_iter().enumerate() {
            all.push((round, i as u32, seq as u32, hop));
        }
    }
    all.sort_unstable_by_key(|&(round, m, seq, _)| (round, m, seq));
    let n = ranks as usize;
    let mut sends = vec![Vec::new(); n];
    let mut rounds = vec![Vec::new(); n];
    let mut recvs = vec![Vec::new(); n];
    let mut span = 0;
    for &(round, m, _, hop) in &all {
        sends[hop.from as usize].push(hop);
        rounds[hop.from as usize].push(round);
        recvs[hop.to as usize].push((m, hop.from));
        span = span.max(round + 1);
    }
    for r in &mut recvs {
        r.sort_unstable();
        debug_assert!(
            r.windows(2).all(|w| w[0].0 != w[1].0),
            "a rank receives a multicast twice"
        );
    }
    Ok(Plan {
        ranks,
        mcasts: mcasts.len(),
        sends,
        rounds,
        recvs,
        span,
    })
}

fn validate(ranks: u32, mcasts: &[Multicast]) -> Result<(), String> {
    let mut seen = vec![u32::MAX; ranks as usize];
    for (i, m) in mcasts.iter().enumerate() {
        if m.source >= ranks {
            return Err(format!(
                "multicast {i}: source {} is not below the {ranks} ranks",
                m.source
            ));
        }
        for &d in &m.dests {
            if d >= ranks {
                return Err(format!(
                    "multicast {i}: destination {d} is not below the {ranks} ranks"
                ));
            }
            if d == m.source {
                return Err(format!(
                    "multicast {i}: source {d} is among its own destinations"
                ));
            }
            if seen[d as usize] == i as u32 {
                return Err(format!("multicast {i}: destination {d} is given twice"));
            }
            seen[d as usize] = i as u32;
        }
    }
    Ok(())
}

/// The GOAL schedule of `rank`: for each multicast it receives, the receive from its parent
/// (tag = the multicast's index, into `buf(m)`), in multicast order; then its sends in the
/// plan's order (tag = the multicast's index, from `buf(m)`), each requiring the receive of
/// its multicast (a source's sends require nothing). Sends do not wait for one another: the
/// order is the order of the actions.
pub fn schedule(plan: &Plan, rank: u32, buf: impl Fn(u32) -> BufRef) -> Schedule {
    let mut b = Builder::new();
    let mut got: BTreeMap<u32, ActionId> = BTreeMap::new();
    for &(m, parent) in plan.receives(rank) {
        let id = b.add(Op::Recv {
            peer: parent,
            tag: m,
            buf: buf(m),
        });
        got.insert(m, id);
    }
    for h in plan.sends(rank) {
        let id = b.add(Op::Send {
            peer: h.to,
            tag: h.mcast,
            buf: buf(h.mcast),
        });
        if let Some(&r) = got.get(&h.mcast) {
            b.requ(r, id);
        }
    }
    b.build()
        .expect("receives come before the sends that need them")
}

/// Sends of a binomial multicast over `n` members, member 0 first, by recursive doubling:
/// (round, from, to), in round t every i < 2^t sends to i + 2^t.
fn doubling(n: usize) -> Vec<(u32, usize, usize)> {
    let mut out = Vec::new();
    let mut t = 0u32;
    while (1usize << t) < n {
        let step = 1usize << t;
        for i in 0..step.min(n - step) {
            out.push((t, i, i + step));
        }
        t += 1;
    }
    out
}

/// Sends of a binomial multicast over `n` members, member 0 first, by recursive halving: the
/// holder of a range sends to the first of its upper half (the lower half keeps the extra one),
/// then both halves go on alone. Sorted by round.
fn halving(n: usize) -> Vec<(u32, usize, usize)> {
    fn go(lo: usize, hi: usize, t: u32, out: &mut Vec<(u32, usize, usize)>) {
        if hi - lo <= 1 {
            return;
        }
        let mid = lo + (hi - lo).div_ceil(2);
        out.push((t, lo, mid));
        go(lo, mid, t + 1, out);
        go(mid, hi, t + 1, out);
    }
    let mut out = Vec::new();
    if n > 0 {
        go(0, n, 0, &mut out);
    }
    out.sort_by_key(|&(t, from, _)| (t, from));
    out
}

/// A chain over `n` members: member i sends to i + 1 in round i.
fn chain(n: usize) -> Vec<(u32, usize, usize)> {
    (1..n).map(|i| ((i - 1) as u32, i - 1, i)).collect()
}

/// When each of `n` members has m and when its sends of `sends` (rounds from `t0`) are done:
/// (informed, free). Member 0 has m at `t0`.
fn timing(n: usize, sends: &[(u32, usize, usize)], t0: u32) -> (Vec<u32>, Vec<u32>) {
    let mut informed = vec![t0; n];
    let mut free = vec![t0; n];
    for &(t, from, to) in sends {
        debug_assert!(informed[from] <= t0 + t, "a member sends before it has m");
        informed[to] = t0 + t + 1;
        free[from] = free[from].max(t0 + t + 1);
    }
    for i in 0..n {
        free[i] = free[i].max(informed[i]);
    }
    (informed, free)
}

/// The routing tree's shape, shared by all multicasts.
struct Ctx<'a> {
    switch_of_rank: &'a [SwitchId],
    root: SwitchId,
    children: Vec<Vec<SwitchId>>,
    /// Children before parents.
    post: Vec<SwitchId>,
    /// Per switch: its index in the depth-first preorder (children in declaration order).
    pre: Vec<u32>,
    /// Per switch: the root's child whose subtree holds it (`None` for the root).
    top: Vec<Option<SwitchId>>,
}

impl<'a> Ctx<'a> {
    fn new(net: &Network, ud: &UpDown, switch_of_rank: &'a [SwitchId]) -> Ctx<'a> {
        let n = net.switches.len();
        let children: Vec<Vec<SwitchId>> = (0..n as u32).map(|s| ud.children(net, s)).collect();
        let root = ud.root();
        let mut pre = vec![0; n];
        let mut order = Vec::with_capacity(n);
        let mut top = vec![None; n];
        let mut stack = vec![root];
        while let Some(s) = stack.pop() {
            pre[s as usize] = order.len() as u32;
            order.push(s);
            for &c in children[s as usize].iter().rev() {
                top[c as usize] = if s == root { Some(c) } else { top[s as usize] };
                stack.push(c);
            }
        }
        // A child comes after its parent in preorder, so before it in reverse.
        let post = order.iter().rev().copied().collect();
        Ctx {
            switch_of_rank,
            root,
            children,
            post,
            pre,
            top,
        }
    }
}

/// What a member does once its sends at one level are done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    Nothing,
    /// RAM in the subtree of this switch, as its agent.
    Ram(SwitchId),
    /// The binomial multicast over the root switch's destinations.
    RootLocal,
}

#[derive(Clone, Copy)]
enum Primary {
    SameTree,
    Random(u64),
}

#[derive(Clone, Copy)]
enum Relay {
    Binomial,
    Cyclic,
}

const NO_RANK: u32 = u32::MAX;

/// One multicast being planned.
struct Mc<'c, 'a> {
    ctx: &'c Ctx<'a>,
    index: u32,
    source: u32,
    dests: Vec<u32>,
    /// Per switch: D(m,v) in rank order, rotated left by m's index (its agent first).
    local: Vec<Vec<u32>>,
    /// Per switch: the subtree holds destinations.
    has: Vec<bool>,
    cost: Vec<u32>,
    agent: Vec<u32>,
    /// Per switch without local destinations: the child whose agent it takes.
    via: Vec<Option<SwitchId>>,
    /// (round, hop) in the order made.
    hops: Vec<(u32, Hop)>,
}

impl<'c, 'a> Mc<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>, index: u32, m: &Multicast) -> Self {
        let n = ctx.children.len();
        let mut local = vec![Vec::new(); n];
        for &d in &m.dests {
            local[ctx.switch_of_rank[d as usize] as usize].push(d);
        }
        for l in &mut local {
            l.sort_unstable();
            // The agent is the first: multicast m takes the (m mod |D|)-th in rank order, so
            // that many multicasts do not all make the same rank of a switch their agent.
            if !l.is_empty() {
                let k = index as usize % l.len();
                l.rotate_left(k);
            }
        }
        Mc {
            ctx,
            index,
            source: m.source,
            dests: m.dests.clone(),
            local,
            has: vec![false; n],
            cost: vec![0; n],
            agent: vec![NO_RANK; n],
            via: vec![None; n],
            hops: Vec::new(),
        }
    }

    fn hop(&mut self, round: u32, from: u32, to: u32) {
        self.hops.push((
            round,
            Hop {
                mcast: self.index,
                from,
                to,
            },
        ));
    }

    /// Agents and costs of every switch, children first.
    fn agents_and_costs(&mut self) {
        for i in 0..self.ctx.post.len() {
            let v = self.ctx.post[i] as usize;
            let kids = &self.ctx.children[v];
            self.has[v] = !self.local[v].is_empty() || kids.iter().any(|&w| self.has[w as usize]);
            if !self.has[v] {
                continue;
            }
            if let Some(&a) = self.local[v].first() {
                self.agent[v] = a;
            } else {
                let mut best: Option<SwitchId> = None;
                for &w in kids {
                    if self.has[w as usize]
                        && best.map_or(true, |b| self.cost[w as usize] > self.cost[b as usize])
                    {
                        best = Some(w);
                    }
                }
                let w = best.expect("a subtree with destinations has a child that holds them");
                self.agent[v] = self.agent[w as usize];
                self.via[v] = Some(w);
            }
            let members = self.forward_in_switch(v as SwitchId);
            let sends = doubling(members.len());
            let (_, free) = timing(members.len(), &sends, 0);
            self.cost[v] = members
                .iter()
                .zip(&free)
                .map(|(&(_, w), &f)| f + self.work_cost(w))
                .max()
                .unwrap_or(0);
        }
    }

    fn work_cost(&self, w: Work) -> u32 {
        match w {
            Work::Ram(s) => self.cost[s as usize],
            _ => 0,
        }
    }

    /// The members of RAM(v), the agent of v first, each with what it does afterwards.
    fn forward_in_switch(&self, v: SwitchId) -> Vec<(u32, Work)> {
        let vi = v as usize;
        let mut out = vec![(
            self.agent[vi],
            self.via[vi].map_or(Work::Nothing, Work::Ram),
        )];
        let mut subs: Vec<SwitchId> = self.ctx.children[vi]
            .iter()
            .copied()
            .filter(|&w| self.has[w as usize] && Some(w) != self.via[vi])
            .collect();
        // Stable: declaration order among equal costs.
        subs.sort_by_key(|&w| std::cmp::Reverse(self.cost[w as usize]));
        out.extend(subs.iter().map(|&w| (self.agent[w as usize], Work::Ram(w))));
        out.extend(self.local[vi].iter().skip(1).map(|&d| (d, Work::Nothing)));
        out
    }

    /// RAM(v) from round `t0`, when the agent of v has m.
    fn ram(&mut self, v: SwitchId, t0: u32) {
        let members = self.forward_in_switch(v);
        self.run(&members, &doubling(members.len()), t0);
    }

    /// Makes the hops of `sends` among `members` from round `t0`, then each member's work.
    fn run(&mut self, members: &[(u32, Work)], sends: &[(u32, usize, usize)], t0: u32) {
        let (_, free) = timing(members.len(), sends, t0);
        for &(t, from, to) in sends {
            self.hop(t0 + t, members[from].0, members[to].0);
        }
        for (i, &(_, w)) in members.iter().enumerate() {
            match w {
                Work::Nothing => {}
                Work::Ram(s) => self.ram(s, free[i]),
                Work::RootLocal => {
                    let root = self.ctx.root as usize;
                    let locals: Vec<(u32, Work)> = self.local[root]
                        .iter()
                        .map(|&d| (d, Work::Nothing))
                        .collect();
                    self.run(&locals, &halving(locals.len()), free[i]);
                }
            }
        }
    }

    fn agents(&mut self, primary: Primary, relay: Relay) {
        self.agents_and_costs();
        let root = self.ctx.root;
        let r = root as usize;
        // The step-2 list in ring order: the root switch, then its children.
        let mut list: Vec<(u32, Work)> = Vec::new();
        if let Some(&d) = self.local[r].first() {
            list.push((d, Work::RootLocal));
        }
        for &w in &self.ctx.children[r] {
            if self.has[w as usize] {
                list.push((self.agent[w as usize], Work::Ram(w)));
            }
        }
        if list.is_empty() {
            return;
        }
        let subtree = |s: SwitchId| list.iter().position(|&(_, w)| w == Work::Ram(s));
        let first_sub = usize::from(!self.local[r].is_empty());
        let p = match primary {
            Primary::SameTree => {
                let src_sw = self.ctx.switch_of_rank[self.source as usize];
                match self.ctx.top[src_sw as usize].and_then(subtree) {
                    Some(i) => i,
                    None if first_sub == 1 => 0,
                    None => {
                        let mut best = first_sub;
                        for i in first_sub..list.len() {
                            if self.work_cost(list[i].1) > self.work_cost(list[best].1) {
                                best = i;
                            }
                        }
                        best
                    }
                }
            }
            Primary::Random(seed) => {
                let subs = list.len() - first_sub;
                if subs == 0 {
                    0
                } else {
                    let mut z = seed ^ u64::from(self.index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    first_sub + (crate::rng::next(&mut z) % subs as u64) as usize
                }
            }
        };
        self.hop(0, self.source, list[p].0);
        list.rotate_left(p);
        let sends = match relay {
            Relay::Binomial => halving(list.len()),
            Relay::Cyclic => chain(list.len()),
        };
        self.run(&list, &sends, 1);
    }

    fn spcco(&mut self) {
        let key = |r: u32| {
            (
                self.ctx.pre[self.ctx.switch_of_rank[r as usize] as usize],
                r,
            )
        };
        let mut seq: Vec<u32> = self.dests.clone();
        if seq.is_empty() {
            return;
        }
        seq.push(self.source);
        seq.sort_unstable_by_key(|&r| key(r));
        let at = seq
            .iter()
            .position(|&r| r == self.source)
            .expect("the source is in");
        seq.rotate_left(at);
        let members: Vec<(u32, Work)> = seq.iter().map(|&r| (r, Work::Nothing)).collect();
        self.run(&members, &halving(members.len()), 0);
    }
}

/// What `MPICAST_MMCAST_ALGO=auto` runs for `mcasts` multicasts at once on a topology of
/// `switches` switches: SameTree-Cyclic from 16 multicasts on 8 switches or more, else SPCCO.
/// From the simulator on random irregular networks of 16 to 128 switches (bench/agents_sim.py;
/// BENCHMARKS.md): SPCCO is the fastest up to 4 to 8 multicasts, the agent-based variants from
/// 8 to 16 on (up to 1.67 times faster at 64), the cyclic ones the best or within 6 % of it
/// there; and on the emulated network of 5 switches and 9 hosts, where the agents' relays do
/// not pay, SPCCO is within the spread of the fastest at 1 and 2 multicasts.
pub fn auto_choice(mcasts: usize, switches: usize) -> MmcastAlgo {
    if mcasts >= 16 && switches >= 8 {
        MmcastAlgo::SameTreeCyclic
    } else {
        MmcastAlgo::Spcco
    }
}

#[cfg(test)]
#[path = "agents_tests.rs"]
mod tests;
