//! The network file of the contention model (`mpicast sim --network FILE`): the switches, the
//! links between them, the hosts that hang on them and where a program's ranks run; and the
//! routes messages take over it. Pure: the caller reads the file and hands over its text and
//! name, which every error starts with, as in ``net.txt:7: unknown switch `s9` ``.
//!
//! # The format
//!
//! One statement a line; `#` starts a comment; words are separated by blanks. Statements may
//! come in any order (a link may name a switch declared further down).
//!
//! ```text
//! switch NAME [NAME...]                  switches, in the order that breaks routing ties
//! link SWITCH SWITCH BANDWIDTH [LATENCY]  a cable: both directions, each with this capacity
//! host NAME SWITCH [BANDWIDTH [LATENCY]] a host and its own link to its switch
//! ranks-per-host K                       rank r runs on host number r / K (file order)
//! rank R[-R2] HOST                       or: these ranks run on HOST
//! routing shortest | updown [ROOT]       how messages find their way (default: shortest)
//! ```
//!
//! A BANDWIDTH is a number and a unit of bits per second: `bit`, `Kbit`, `Mbit`, `Gbit`,
//! `Tbit` (decimal prefixes; `bps`, `Kbps`... and a `/s` suffix are accepted too, case does not
//! matter): `100Mbit`, `2.5Gbit`. A host's link may say `nic` instead, which is also the
//! default: the rate of the host's NIC in the model, one byte per `G` ns. A LATENCY (default 0)
//! is a number with `ns`, `us`, `ms` or `s`; a bare number is ns.
//!
//! Placement: `rank` lines name the host of each rank; without them, `ranks-per-host K`
//! (default 1) places rank r on the (r / K)-th host of the file. The two exclude each other.
//!
//! Routing: `shortest` (`ShortestPaths`, the default) or `updown` (`updown::UpDown`, up-down
//! routing from ROOT, by default the first switch declared); `Network::router` makes it.
//!
//! Refused, with file and line: an unknown statement or a wrong number of words, a switch or
//! host declared twice, a host on two switches, a name that is both a switch and a host, a link
//! to an unknown switch or from a switch to itself, two links between the same two switches, a
//! bad (or zero) bandwidth or a bad latency, switches that cannot all reach each other (the first one that the
//! first switch cannot reach is named), a rank on an unknown host or placed twice, an unknown
//! routing, a root that is not a switch, a second `routing` line. A program
//! with more ranks than the file places is refused when it is simulated (`Network::places`).
//!
//! # Routes
//!
//! A route is the list of directed links a message crosses, the two host links included; a
//! message between two ranks of one host crosses none. Which switch-to-switch links it takes is
//! the business of a `Routing`; `ShortestPaths` takes the fewest switch hops, and among routes
//! as short, the one whose sequence of switches, compared one by one in declaration order,
//! comes first: a breadth-first search from the source switch that visits each switch's
//! neighbours in declaration order and enters each switch from the first switch it got there
//! from. The routes from one source are the paths of that search's tree, so a multicast (the
//! union of its routes) crosses each directed link once. Up-down routing (seed 003) is another
//! `Routing`: `updown.rs`.

use super::updown::UpDown;
use super::PerByte;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;

pub type SwitchId = u32;
pub type HostId = u32;
/// A directed link: each `link` line and each host makes two, one per direction.
pub type LinkId = u32;

/// An end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    Switch(SwitchId),
    Host(HostId),
}

/// The capacity of a directed link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Bits per second (at least 1).
    Bits(u64),
    /// The NIC's rate: one byte per `G` ns (a host link written `nic`, or with no bandwidth).
    Nic,
}

impl Rate {
    /// How long `bytes` bytes take to pass, in ns (a bandwidth rounded up; the NIC's rate as
    /// `G` costs bytes, `PerByte::time`); `nic_per_byte` is `G`.
    pub fn time(self, bytes: u64, nic_per_byte: PerByte) -> u64 {
        match self {
            Rate::Nic => nic_per_byte.time(bytes),
            Rate::Bits(bps) => {
                let ns = (bytes as u128 * 8_000_000_000).div_ceil(bps as u128);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rate::Nic => write!(f, "nic"),
            Rate::Bits(b) => {
                for (unit, scale) in [("Tbit", 1e12), ("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)] {
                    if b as f64 >= scale {
                        return write!(f, "{}{unit}", b as f64 / scale);
                    }
                }
                write!(f, "{b}bit")
            }
        }
    }
}

/// One direction of a cable or of a host's link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetLink {
    pub from: Node,
    pub to: Node,
    pub rate: Rate,
    /// ns from when a byte enters the link to when it reaches the far end.
    pub latency: u64,
    /// The line of the file that made it.
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    pub name: String,
    pub line: usize,
    /// Links to other switches, by the other switch's declaration order.
    pub out: Vec<LinkId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub switch: SwitchId,
    /// Host to switch, and switch to host.
    pub up: LinkId,
    pub down: LinkId,
    pub line: usize,
}

/// Where ranks run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Rank r on host r / `ranks` (`line`: of the `ranks-per-host` statement, 0 for the default).
    PerHost { ranks: u32, line: usize },
    /// Rank r on `hosts[r]` (`None`: no `rank` line names r).
    Listed(Vec<Option<HostId>>),
}

/// A parsed network file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// The file's name, as errors give it.
    pub file: String,
    pub switches: Vec<Switch>,
    pub hosts: Vec<Host>,
    pub links: Vec<NetLink>,
    pub placement: Placement,
    /// The `routing` statement (`Shortest` without one).
    pub routing: RoutingKind,
}

/// Which `Routing` a network file asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoutingKind {
    /// `routing shortest`, the default: `ShortestPaths`.
    Shortest,
    /// `routing updown [ROOT]`: `UpDown` from switch `root` (the first declared by default).
    UpDown { root: SwitchId },
}

/// Which switch-to-switch links a message takes: the part of routing that can be swapped
/// (`ShortestPaths`, `UpDown`; the file's `routing` line picks, `Network::router` makes it).
pub trait Routing {
    /// Appends to `out` the links from switch `from` to switch `to`, in order (none when they
    /// are the same switch).
    fn switch_path(&self, net: &Network, from: SwitchId, to: SwitchId, out: &mut Vec<LinkId>);
}

/// Fewest switch hops, ties broken by declaration order (see the module's text). Each source
/// switch's search is made the first time a route leaves it.
#[derive(Debug, Default)]
pub struct ShortestPaths {
    /// Per source switch: the link by which each switch is entered (`NO_LINK` for the source).
    trees: Vec<OnceCell<Vec<LinkId>>>,
}

const NO_LINK: LinkId = LinkId::MAX;

impl ShortestPaths {
    pub fn new(net: &Network) -> Self {
        ShortestPaths {
            trees: (0..net.switches.len()).map(|_| OnceCell::new()).collect(),
        }
    }

    /// The breadth-first tree from `src`: the link that enters each switch.
    fn tree(&self, net: &Network, src: SwitchId) -> &[LinkId] {
        self.trees[src as usize].get_or_init(|| {
            let n = net.switches.len();
            let mut enter = vec![NO_LINK; n];
            let mut seen = vec![false; n];
            let mut queue = std::collections::VecDeque::from([src]);
            seen[src as usize] = true;
            while let Some(s) = queue.pop_front() {
                for &l in &net.switches[s as usize].out {
                    let Node::Switch(t) = net.links[l as usize].to else {
                        continue;
                    };
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        enter[t as usize] = l;
                        queue.push_back(t);
                    }
                }
            }
            enter
        })
    }
}

impl Routing for ShortestPaths {
    fn switch_path(&self, net: &Network, from: SwitchId, to: SwitchId, out: &mut Vec<LinkId>) {
        let enter = self.tree(net, from);
        let first = out.len();
        let mut at = to;
        while at != from {
            let l = enter[at as usize];
            out.push(l);
            let Node::Switch(prev) = net.links[l as usize].from else {
                unreachable!("switch links join switches")
            };
            at = prev;
        }
        out[first..].reverse();
    }
}

impl Network {
    /// Reads a network file; `file` names it in errors (`file:line: what`).
    pub fn parse(text: &str, file: &str) -> Result<Network, String> {
        Parser::new(file).run(text)
    }

    /// The routing the file asks for (`routing`; shortest paths without it).
    pub fn router(&self) -> Box<dyn Routing> {
        match self.routing {
            RoutingKind::Shortest => Box::new(ShortestPaths::new(self)),
            RoutingKind::UpDown { root } => Box::new(UpDown::new(self, root)),
        }
    }

    pub fn switch_named(&self, name: &str) -> Option<SwitchId> {
        self.switches
            .iter()
            .position(|s| s.name == name)
            .map(|i| i as SwitchId)
    }

    pub fn host_named(&self, name: &str) -> Option<HostId> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .map(|i| i as HostId)
    }

    pub fn node_name(&self, n: Node) -> &str {
        match n {
            Node::Switch(s) => &self.switches[s as usize].name,
            Node::Host(h) => &self.hosts[h as usize].name,
        }
    }

    /// `from->to`.
    pub fn link_name(&self, l: LinkId) -> String {
        let k = &self.links[l as usize];
        format!("{}->{}", self.node_name(k.from), self.node_name(k.to))
    }

    /// The directed link from switch `a` to switch `b`, if a cable joins them.
    pub fn link_between(&self, a: SwitchId, b: SwitchId) -> Option<LinkId> {
        self.switches[a as usize]
            .out
            .iter()
            .copied()
            .find(|&l| self.links[l as usize].to == Node::Switch(b))
    }

    /// The host of every rank of a program of `ranks` ranks; an error (naming the file) when
    /// the file places fewer.
    pub fn places(&self, ranks: u32) -> Result<Vec<HostId>, String> {
        let file = &self.file;
        match &self.placement {
            Placement::PerHost { ranks: k, line } => {
                let room = self.hosts.len() as u64 * *k as u64;
                if (ranks as u64) <= room {
                    return Ok((0..ranks).map(|r| r / k).collect());
                }
                let hosts = match self.hosts.len() {
                    1 => "1 host".to_string(),
                    n => format!("{n} hosts"),
                };
                Err(if *line == 0 {
                    format!(
                        "{file}: the program has {ranks} ranks but {hosts} hold {room} (one rank \
                         per host; `ranks-per-host K` places more)"
                    )
                } else {
                    format!(
                        "{file}:{line}: the program has {ranks} ranks but {hosts} with {k} ranks \
                         per host hold {room}"
                    )
                })
            }
            Placement::Listed(hosts) => (0..ranks)
                .map(|r| {
                    hosts.get(r as usize).copied().flatten().ok_or_else(|| {
                        format!(
                            "{file}: rank {r} has no host (the program has {ranks} ranks; \
                             no `rank` line names it)"
                        )
                    })
                })
                .collect(),
        }
    }

    /// Sets `out` to the route from host `from` to host `to`: its uplink, the switch path of
    /// `routing`, the downlink of `to`; empty when `from == to`.
    pub fn route(&self, routing: &dyn Routing, from: HostId, to: HostId, out: &mut Vec<LinkId>) {
        out.clear();
        if from == to {
            return;
        }
        let (a, b) = (&self.hosts[from as usize], &self.hosts[to as usize]);
        out.push(a.up);
        routing.switch_path(self, a.switch, b.switch, out);
        out.push(b.down);
    }
}

// ------------------------------------------------------------------------------ the parser

/// The bandwidth units, bits per second.
const RATE_UNITS: [(&str, u64); 5] = [
    ("bit", 1),
    ("kbit", 1_000),
    ("mbit", 1_000_000),
    ("gbit", 1_000_000_000),
    ("tbit", 1_000_000_000_000),
];

/// A non-negative decimal number as (digits without the point, number of fraction digits).
fn decimal(s: &str) -> Option<(u128, u32)> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        || int.len() + frac.len() > 30
    {
        return None;
    }
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    Some((digits, frac.len() as u32))
}

/// `number * scale`, rounded to the nearest integer; `None` when it does not fit a u64.
fn scaled(num: (u128, u32), scale: u64) -> Option<u64> {
    let div = 10u128.pow(num.1);
    let v = num.0.checked_mul(scale as u128)?;
    u64::try_from((v + div / 2) / div).ok()
}

/// Splits `100Mbit` into `100` and `Mbit`.
fn number_and_unit(s: &str) -> (&str, &str) {
    let cut = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    s.split_at(cut)
}

/// Parses a bandwidth such as `100Mbit`, `2.5Gbit`, `10Gbps` or `1Gbit/s`, in bits per second.
pub fn parse_bandwidth(s: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "bad bandwidth `{s}`: want a number and a unit of bits per second (bit, Kbit, \
             Mbit, Gbit, Tbit), such as 100Mbit"
        )
    };
    let (num, unit) = number_and_unit(s);
    let unit = unit.to_ascii_lowercase();
    let unit = unit.strip_suffix("/s").unwrap_or(&unit);
    let unit = match unit.strip_suffix("bps") {
        Some(prefix) => format!("{prefix}bit"),
        None => unit.to_string(),
    };
    let scale = RATE_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|u| u.1)
        .ok_or_else(bad)?;
    let v = scaled(decimal(num).ok_or_else(bad)?, scale).ok_or_else(bad)?;
    if v == 0 {
        return Err(format!(
            "bandwidth `{s}` is below 1 bit per second: a link must carry something"
        ));
    }
    Ok(v)
}

/// Parses a latency such as `500ns`, `1.5us`, `2ms` or `300` (ns), in ns.
pub fn parse_latency(s: &str) -> Result<u64, String> {
    let bad = || format!("bad latency `{s}`: want a number of ns, us, ms or s, such as 500ns");
    let (num, unit) = number_and_unit(s);
    let scale = match unit {
        "" | "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad()),
    };
    scaled(decimal(num).ok_or_else(bad)?, scale).ok_or_else(bad)
}

/// The largest rank a `rank` line may name (the table of listed ranks is kept whole).
pub const MAX_LISTED_RANK: u32 = (1 << 24) - 1;

/// A rank or a range of ranks `R1-R2`.
fn parse_ranks(s: &str) -> Result<(u32, u32), String> {
    let one = |t: &str| {
        let r = t
            .parse::<u32>()
            .map_err(|_| format!("`{s}` is not a rank: want R or R1-R2, such as 0-15"))?;
        if r > MAX_LISTED_RANK {
            return Err(format!(
                "rank {r} is too large for a `rank` line (at most {MAX_LISTED_RANK})"
            ));
        }
        Ok(r)
    };
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (one(a)?, one(b)?),
        None => (one(s)?, one(s)?),
    };
    if lo > hi {
        return Err(format!("rank range `{s}` runs backwards"));
    }
    Ok((lo, hi))
}

/// The statements the parser keeps for its second pass.
enum Stmt<'a> {
    Link {
        a: &'a str,
        b: &'a str,
        rate: Rate,
        latency: u64,
    },
    Host {
        name: &'a str,
        switch: &'a str,
        rate: Rate,
        latency: u64,
    },
    Rank {
        lo: u32,
        hi: u32,
        host: &'a str,
    },
    /// `routing updown ROOT`: the root is looked up once every switch is known.
    Root(&'a str),
}

const FORMS: [(&str, &str); 6] = [
    ("switch", "switch NAME [NAME...]"),
    ("link", "link SWITCH SWITCH BANDWIDTH [LATENCY]"),
    ("host", "host NAME SWITCH [BANDWIDTH [LATENCY]]"),
    ("ranks-per-host", "ranks-per-host K"),
    ("rank", "rank R[-R2] HOST"),
    ("routing", "routing shortest | routing updown [ROOT]"),
];

/// What pass 1 keeps for the later passes: the statements after `switch`, in line order, and
/// the lines of `ranks-per-host` and `routing` (each may be given once).
#[derive(Default)]
struct Statements<'t> {
    stmts: Vec<(usize, Stmt<'t>)>,
    per_host: Option<usize>,
    routing: Option<usize>,
}

struct Parser<'f> {
    file: &'f str,
    net: Network,
    switch_ids: HashMap<String, SwitchId>,
    host_ids: HashMap<String, HostId>,
}

impl<'f> Parser<'f> {
    fn new(file: &'f str) -> Self {
        Parser {
            file,
            net: Network {
                file: file.to_string(),
                switches: Vec::new(),
                hosts: Vec::new(),
                links: Vec::new(),
                placement: Placement::PerHost { ranks: 1, line: 0 },
                routing: RoutingKind::Shortest,
            },
            switch_ids: HashMap::new(),
            host_ids: HashMap::new(),
        }
    }

    fn at(&self, line: usize, msg: impl fmt::Display) -> String {
        format!("{}:{line}: {msg}", self.file)
    }

    fn switch(&self, line: usize, name: &str) -> Result<SwitchId, String> {
        self.switch_ids
            .get(name)
            .copied()
            .ok_or_else(|| self.at(line, format!("unknown switch `{name}`")))
    }

    fn add_link(&mut self, from: Node, to: Node, rate: Rate, latency: u64, line: usize) -> LinkId {
        self.net.links.push(NetLink {
            from,
            to,
            rate,
            latency,
            line,
        });
        (self.net.links.len() - 1) as LinkId
    }

    fn run(mut self, text: &str) -> Result<Network, String> {
        // Pass 1, in line order: the form of each statement, its numbers, and the switches.
        let mut seen = Statements::default();
        for (i, raw) in text.lines().enumerate() {
            let words: Vec<&str> = raw
                .split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if !words.is_empty() {
                self.statement(i + 1, &words, &mut seen)?;
            }
        }
        if self.net.switches.is_empty() {
            return Err(format!("{}: no switch declared", self.file));
        }

        // Pass 2, in line order: links and hosts, now that every switch is known.
        let mut cables: HashMap<(SwitchId, SwitchId), usize> = HashMap::new();
        for (line, st) in &seen.stmts {
            let line = *line;
            match *st {
                Stmt::Link {
                    a,
                    b,
                    rate,
                    latency,
                } => self.connect(line, (a, b), rate, latency, &mut cables)?,
                Stmt::Host {
                    name,
                    switch,
                    rate,
                    latency,
                } => self.hang_host(line, name, switch, rate, latency)?,
                Stmt::Root(name) => {
                    let root = self.switch(line, name)?;
                    self.net.routing = RoutingKind::UpDown { root };
                }
                Stmt::Rank { .. } => {}
            }
        }
        let links = &self.net.links;
        for s in &mut self.net.switches {
            s.out.sort_by_key(|&l| match links[l as usize].to {
                Node::Switch(t) => t,
                Node::Host(_) => unreachable!("only switch links are listed"),
            });
        }
        self.check_connected()?;

        // Pass 3: ranks, now that every host is known.
        self.place_ranks(&seen)?;
        Ok(self.net)
    }

    /// Pass 1 of one statement (`words`, not empty, on `line`): its form and numbers checked;
    /// switches declared; the rest kept in `seen` for the later passes.
    fn statement<'t>(
        &mut self,
        line: usize,
        words: &[&'t str],
        seen: &mut Statements<'t>,
    ) -> Result<(), String> {
        let kw = words[0];
        let Some(&(_, form)) = FORMS.iter().find(|f| f.0 == kw) else {
            let known: Vec<&str> = FORMS.iter().map(|f| f.0).collect();
            return Err(self.at(
                line,
                format!("unknown statement `{kw}` (known: {})", known.join(", ")),
            ));
        };
        let n = words.len();
        let arity_ok = match kw {
            "switch" => n >= 2,
            "link" => n == 4 || n == 5,
            "host" => (3..=5).contains(&n),
            "ranks-per-host" => n == 2,
            "routing" => n == 2 || n == 3,
            _ => n == 3,
        };
        if !arity_ok {
            return Err(self.at(
                line,
                format!("expected `{form}`, got `{}`", words.join(" ")),
            ));
        }
        let latency = |w: Option<&&str>| match w {
            Some(w) => parse_latency(w).map_err(|m| self.at(line, m)),
            None => Ok(0),
        };
        match kw {
            "switch" => self.declare_switches(line, &words[1..])?,
            "link" => {
                if words[1] == words[2] {
                    return Err(self.at(line, format!("link from switch `{}` to itself", words[1])));
                }
                let rate = Rate::Bits(parse_bandwidth(words[3]).map_err(|m| self.at(line, m))?);
                let latency = latency(words.get(4))?;
                seen.stmts.push((
                    line,
                    Stmt::Link {
                        a: words[1],
                        b: words[2],
                        rate,
                        latency,
                    },
                ));
            }
            "host" => {
                let rate = match words.get(3) {
                    None => Rate::Nic,
                    Some(w) if w.eq_ignore_ascii_case("nic") => Rate::Nic,
                    Some(w) => Rate::Bits(parse_bandwidth(w).map_err(|m| self.at(line, m))?),
                };
                let latency = latency(words.get(4))?;
                seen.stmts.push((
                    line,
                    Stmt::Host {
                        name: words[1],
                        switch: words[2],
                        rate,
                        latency,
                    },
                ));
            }
            "ranks-per-host" => self.ranks_per_host(line, words[1], seen)?,
            "routing" => self.routing(line, words, form, seen)?,
            _ => {
                let (lo, hi) = parse_ranks(words[1]).map_err(|m| self.at(line, m))?;
                seen.stmts.push((
                    line,
                    Stmt::Rank {
                        lo,
                        hi,
                        host: words[2],
                    },
                ));
            }
        }
        Ok(())
    }

    /// `switch NAME [NAME...]`.
    fn declare_switches(&mut self, line: usize, names: &[&str]) -> Result<(), String> {
        for &name in names {
            if let Some(&s) = self.switch_ids.get(name) {
                let first = self.net.switches[s as usize].line;
                return Err(self.at(
                    line,
                    format!("switch `{name}` is declared twice (first on line {first})"),
                ));
            }
            self.switch_ids
                .insert(name.to_string(), self.net.switches.len() as SwitchId);
            self.net.switches.push(Switch {
                name: name.to_string(),
                line,
                out: Vec::new(),
            });
        }
        Ok(())
    }

    /// A statement `kw` that may be given once: `first` is the line it was given on.
    fn once(&self, line: usize, kw: &str, first: &mut Option<usize>) -> Result<(), String> {
        if let Some(first) = *first {
            return Err(self.at(line, format!("{kw} is given twice (first on line {first})")));
        }
        *first = Some(line);
        Ok(())
    }

    /// `ranks-per-host K`.
    fn ranks_per_host(
        &mut self,
        line: usize,
        k: &str,
        seen: &mut Statements<'_>,
    ) -> Result<(), String> {
        self.once(line, "ranks-per-host", &mut seen.per_host)?;
        let k = k.parse::<u32>().ok().filter(|&k| k > 0).ok_or_else(|| {
            self.at(
                line,
                format!("ranks-per-host wants a positive integer, not `{k}`"),
            )
        })?;
        self.net.placement = Placement::PerHost { ranks: k, line };
        Ok(())
    }

    /// `routing shortest` or `routing updown [ROOT]` (the root is looked up in pass 2).
    fn routing<'t>(
        &mut self,
        line: usize,
        words: &[&'t str],
        form: &str,
        seen: &mut Statements<'t>,
    ) -> Result<(), String> {
        self.once(line, "routing", &mut seen.routing)?;
        match words[1] {
            "shortest" if words.len() == 2 => self.net.routing = RoutingKind::Shortest,
            "shortest" => {
                return Err(self.at(
                    line,
                    format!(
                        "`routing shortest` has no root: expected `{form}`, got `{}`",
                        words.join(" ")
                    ),
                ))
            }
            "updown" => {
                self.net.routing = RoutingKind::UpDown { root: 0 };
                if let Some(&root) = words.get(2) {
                    seen.stmts.push((line, Stmt::Root(root)));
                }
            }
            other => {
                return Err(self.at(
                    line,
                    format!("unknown routing `{other}` (known: shortest, updown)"),
                ))
            }
        }
        Ok(())
    }

    /// Pass 2 of `link A B ...`: a link each way (`cables`: the line of each pair linked).
    fn connect(
        &mut self,
        line: usize,
        (a, b): (&str, &str),
        rate: Rate,
        latency: u64,
        cables: &mut HashMap<(SwitchId, SwitchId), usize>,
    ) -> Result<(), String> {
        let (sa, sb) = (self.switch(line, a)?, self.switch(line, b)?);
        if let Some(first) = cables.insert((sa.min(sb), sa.max(sb)), line) {
            return Err(self.at(
                line,
                format!("a second link between `{a}` and `{b}` (the first is on line {first})"),
            ));
        }
        let ab = self.add_link(Node::Switch(sa), Node::Switch(sb), rate, latency, line);
        let ba = self.add_link(Node::Switch(sb), Node::Switch(sa), rate, latency, line);
        self.net.switches[sa as usize].out.push(ab);
        self.net.switches[sb as usize].out.push(ba);
        Ok(())
    }

    /// Pass 2 of `host NAME SWITCH ...`: the host, and its links up and down.
    fn hang_host(
        &mut self,
        line: usize,
        name: &str,
        switch: &str,
        rate: Rate,
        latency: u64,
    ) -> Result<(), String> {
        if let Some(&s) = self.switch_ids.get(name) {
            let first = self.net.switches[s as usize].line;
            return Err(self.at(
                line,
                format!("`{name}` is a switch (line {first}); a host needs a name of its own"),
            ));
        }
        let sw = self.switch(line, switch)?;
        if let Some(&h) = self.host_ids.get(name) {
            let old = &self.net.hosts[h as usize];
            let on = &self.net.switches[old.switch as usize].name;
            return Err(self.at(
                line,
                if old.switch == sw {
                    format!(
                        "host `{name}` is declared twice (first on line {})",
                        old.line
                    )
                } else {
                    format!(
                        "host `{name}` is on switch `{on}` already (line {}); a host hangs on \
                         one switch",
                        old.line
                    )
                },
            ));
        }
        let h = self.net.hosts.len() as HostId;
        let up = self.add_link(Node::Host(h), Node::Switch(sw), rate, latency, line);
        let down = self.add_link(Node::Switch(sw), Node::Host(h), rate, latency, line);
        self.host_ids.insert(name.to_string(), h);
        self.net.hosts.push(Host {
            name: name.to_string(),
            switch: sw,
            up,
            down,
            line,
        });
        Ok(())
    }

    /// Every switch must reach every other (links go both ways: one search suffices).
    fn check_connected(&self) -> Result<(), String> {
        let tree = ShortestPaths::new(&self.net);
        let enter = tree.tree(&self.net, 0);
        if let Some(s) = (1..self.net.switches.len()).find(|&s| enter[s] == NO_LINK) {
            let sw = &self.net.switches[s];
            return Err(self.at(
                sw.line,
                format!(
                    "switch `{}` cannot be reached from switch `{}`: the switches must form one \
                     connected network",
                    sw.name, self.net.switches[0].name
                ),
            ));
        }
        Ok(())
    }

    /// Pass 3: the `rank` lines, now that every host is known.
    fn place_ranks(&mut self, seen: &Statements<'_>) -> Result<(), String> {
        let mut listed: Vec<Option<HostId>> = Vec::new();
        let mut listed_on: Vec<usize> = Vec::new();
        for (line, st) in &seen.stmts {
            let Stmt::Rank { lo, hi, host } = *st else {
                continue;
            };
            let line = *line;
            if let Some(first) = seen.per_host {
                return Err(self.at(
                    line,
                    format!("`rank` lines and `ranks-per-host` (line {first}) exclude each other"),
                ));
            }
            let h = self.host_ids.get(host).copied().ok_or_else(|| {
                self.at(
                    line,
                    format!("rank {lo} is placed on unknown host `{host}`"),
                )
            })?;
            if listed.len() <= hi as usize {
                listed.resize(hi as usize + 1, None);
                listed_on.resize(hi as usize + 1, 0);
            }
            for r in lo..=hi {
                if listed[r as usize].is_some() {
                    let first = listed_on[r as usize];
                    return Err(self.at(
                        line,
                        format!("rank {r} is placed twice (first on line {first})"),
                    ));
                }
                listed[r as usize] = Some(h);
                listed_on[r as usize] = line;
            }
        }
        if !listed.is_empty() {
            self.net.placement = Placement::Listed(listed);
        }
        Ok(())
    }
}
