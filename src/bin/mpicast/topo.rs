//! `mpicast topo`: the topology IDs, routing tables and multicast trees that `MPICAST_Imcast`
//! would use for a job of N ranks placed by slot over a list of hosts, computed by the library's
//! own code (`topology::resolve`, `algo::prefix`) from facts the command line makes up: it does
//! not resolve host names, so hosts are ordered as listed (by address when every host is given
//! as an IPv4 address), and it cannot see where ranks will run, so the ranks of a host are told
//! apart by their slot.
//!
//! It prints every rank's table, so it computes N tables: with `--pick nearest` each from a
//! binary trie over the IDs ([`Router`]) instead of the library's O(N) scan per table, which
//! made the command O(N^2); the tables and trees are the library's own (the tests compare
//! them). The output is written as it is made, and a job whose work would not fit in memory is
//! refused before anything is placed.

use crate::algo::prefix::{forward, Pick, Route, RoutingTable, Topology};
use crate::config::rank_list;
use crate::topology::{resolve, CpuFacts, FileCopy, FileFact, RankFacts, Resolved};
use std::collections::HashMap;
use std::fmt::Write;
use std::net::Ipv4Addr;

/// `mpicast topo --help`.
pub const USAGE: &str = "\
usage: mpicast topo (--hostfile H | --hosts HOST[:K],...) -n N [--base B]
                    [--pick nearest|random] [--seed S] [--file F] [--route dests|table]
                    [--from R --to R,R,...|all]

Prints the topology IDs that the ranks of a job of N ranks would get for MPICAST_Imcast, each
rank's routing table, and with --from/--to the forwarding tree of one multicast, hop by hop.

  --hostfile H   the hosts and their slots: Open MPI's `host slots=K` or MPICH's `host:K`, one
                 host a line, # comments; a host without slots has 1
  --hosts LIST   the same as a list: node1:4,node2:4 (or node1,node2: 1 slot each)
  -n N           the ranks, placed by slot: the slots of the first host, then the next; more
                 ranks than slots go round again (as MPICH does; Open MPI refuses without
                 --oversubscribe)
  --base B       MPICAST_TOPO_BASE, a power of two 2..=256 (default 16)
  --pick P       MPICAST_TOPO_PICK: nearest (default) or random; --seed S the seed of random
                 (default 0; the library draws one per communicator unless MPICAST_TOPO_PICK
                 names it: random:S). random hashes every pair of ranks: N^2 steps in all,
                 half a minute at 100000 ranks
  --file F       MPICAST_TOPO_FILE: IDs from this file instead of derived
  --route R      MPICAST_IMCAST_ROUTE: dests (default) or table
  --from R --to  the root and the destinations of one multicast (`all`: every other rank)

Without --file the IDs are derived as the library derives them, from facts this command can
only make up: it does not resolve host names, so hosts are ordered as listed (by address when
every host is an IPv4 address; the library orders them by their interface addresses), and it
cannot see where ranks will run, so the ranks of a host are told apart by their slot (the
library uses their CPU package, NUMA node and core first).

A job whose work would not fit in the memory this process may use is refused before it starts
(the message gives the estimate and the limit).

Exit status: 0 fine, 1 errors found (a bad hostfile or topology file, IDs refused), 2 bad usage
(or a job too large for the memory).";

/// Why `topo` stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// Bad usage: one line (exit 2).
    Usage(String),
    /// A file or the IDs are wrong: one line (exit 1).
    Failed(String),
    /// The job needs more memory than this process may use: one line (exit 2).
    Limit(String),
}

fn usage<T>(m: impl Into<String>) -> Result<T, Error> {
    Err(Error::Usage(m.into()))
}

/// One line of a hostfile, or one element of --hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSlots {
    pub host: String,
    pub slots: u32,
}

/// Parses a hostfile: Open MPI's `host [slots=K] [max_slots=M] ...` or MPICH's `host[:K]`,
/// `#` comments, blank lines. Other `key=value` words of Open MPI's syntax are ignored.
/// `name` is how errors name the file.
pub fn parse_hostfile(text: &str, name: &str) -> Result<Vec<HostSlots>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut words = content.split_whitespace();
        let first = words.next().expect("not empty");
        let mut hs = parse_host(first).map_err(|e| format!("{name}:{line}: {e}"))?;
        for w in words {
            match w.split_once('=') {
                Some(("slots", k)) => {
                    hs.slots = k.parse().map_err(|e: std::num::ParseIntError| {
                        if *e.kind() == std::num::IntErrorKind::PosOverflow {
                            format!("{name}:{line}: slots={k} is more than {}", u32::MAX)
                        } else {
                            format!("{name}:{line}: slots=`{k}` is not a number")
                        }
                    })?;
                }
                Some(_) => {}
                None => {
                    return Err(format!(
                        "{name}:{line}: `{w}` after the host: expected slots=K (Open MPI) or \
                         host:K (MPICH)"
                    ))
                }
            }
        }
        out.push(hs);
    }
    if out.is_empty() {
        return Err(format!("{name}: no hosts"));
    }
    Ok(out)
}

/// `host` or `host:K`.
fn parse_host(s: &str) -> Result<HostSlots, String> {
    let (host, slots) = match s.split_once(':') {
        None => (s, 1),
        Some((h, k)) => (
            h,
            k.parse::<u32>().map_err(|e| {
                if *e.kind() == std::num::IntErrorKind::PosOverflow {
                    format!("`{s}`: the slots after ':' are more than {}", u32::MAX)
                } else {
                    format!("`{s}`: the slots after ':' are not a number")
                }
            })?,
        ),
    };
    let ok = !host.is_empty()
        && host
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        return Err(format!("`{host}` is not a host name"));
    }
    Ok(HostSlots {
        host: host.to_string(),
        slots,
    })
}

/// Where the ranks of a job run.
#[derive(Debug, PartialEq, Eq)]
pub struct Placement {
    /// The hosts, in the order they first appear.
    pub names: Vec<String>,
    /// Per rank: (index in `names`, slot on that host).
    pub ranks: Vec<(usize, u32)>,
}

/// Places `n` ranks by slot. A host listed twice continues its slots. O(hosts + n).
pub fn place(hosts: &[HostSlots], n: u32) -> Result<Placement, String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut index = Vec::with_capacity(hosts.len());
    for h in hosts {
        let i = *seen.entry(h.host.to_ascii_lowercase()).or_insert_with(|| {
            names.push(h.host.clone());
            names.len() - 1
        });
        index.push(i);
    }
    let total: u64 = hosts.iter().map(|h| u64::from(h.slots)).sum();
    if total == 0 {
        return Err("the hosts have no slots".into());
    }
    // Rounds over the hosts that have slots (the others would make each round long).
    let with_slots: Vec<(u32, usize)> = hosts
        .iter()
        .zip(&index)
        .filter(|(h, _)| h.slots > 0)
        .map(|(h, &i)| (h.slots, i))
        .collect();
    let mut used = vec![0u32; names.len()];
    let mut out = Vec::with_capacity(n as usize);
    'fill: loop {
        for &(slots, i) in &with_slots {
            for _ in 0..slots {
                if out.len() == n as usize {
                    break 'fill;
                }
                out.push((i, used[i]));
                used[i] += 1;
            }
        }
    }
    Ok(Placement { names, ranks: out })
}

struct Opts {
    hosts: Option<Vec<HostSlots>>,
    ranks: Option<u32>,
    base: u32,
    pick: Option<String>,
    seed: Option<u64>,
    file: Option<String>,
    route: Route,
    from: Option<u32>,
    to: Option<String>,
}

fn number<T: crate::limits::Int>(flag: &str, v: &str) -> Result<T, Error> {
    crate::limits::parse_int(flag, v).map_err(Error::Usage)
}

fn opts(args: &[String]) -> Result<Opts, Error> {
    let mut o = Opts {
        hosts: None,
        ranks: None,
        base: 16,
        pick: None,
        seed: None,
        file: None,
        route: Route::Dests,
        from: None,
        to: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
        };
        match a.as_str() {
            "--hostfile" => {
                let path = value(a)?;
                if o.hosts.is_some() {
                    return usage("give --hostfile or --hosts, once");
                }
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Error::Failed(format!("{path}: {e}")))?;
                o.hosts = Some(parse_hostfile(&text, &path).map_err(Error::Failed)?);
            }
            "--hosts" | "--host" => {
                let list = value(a)?;
                if o.hosts.is_some() {
                    return usage("give --hostfile or --hosts, once");
                }
                let hs: Result<Vec<HostSlots>, String> = list
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| parse_host(s.trim()))
                    .collect();
                let hs = hs.map_err(|e| Error::Usage(format!("--hosts: {e}")))?;
                if hs.is_empty() {
                    return usage("--hosts needs at least one host");
                }
                o.hosts = Some(hs);
            }
            "-n" | "--ranks" | "-np" => {
                let n: u32 = number(a, &value(a)?)?;
                if n == 0 {
                    return usage("-n wants at least 1 rank");
                }
                o.ranks = Some(n);
            }
            "--base" => {
                let v = value(a)?;
                let b: u32 = number(a, &v)?;
                if !(2..=256).contains(&b) || !b.is_power_of_two() {
                    return usage(format!(
                        "--base wants a power of two from 2 to 256, not `{v}`"
                    ));
                }
                o.base = b;
            }
            "--pick" => o.pick = Some(value(a)?),
            "--seed" => o.seed = Some(number(a, &value(a)?)?),
            "--file" => o.file = Some(value(a)?),
            "--route" => {
                o.route = match value(a)?.to_ascii_lowercase().as_str() {
                    "dests" => Route::Dests,
                    "table" => Route::Table,
                    v => return usage(format!("--route wants dests or table, not `{v}`")),
                }
            }
            "--from" => o.from = Some(number(a, &value(a)?)?),
            "--to" => o.to = Some(value(a)?),
            other => return usage(format!("unknown option `{other}`")),
        }
    }
    Ok(o)
}

fn pick_of(o: &Opts) -> Result<Pick, Error> {
    let p = o.pick.as_deref().unwrap_or("nearest").to_ascii_lowercase();
    let given = match p.as_str() {
        "nearest" => {
            if o.seed.is_some() {
                return usage("--seed goes with --pick random");
            }
            return Ok(Pick::Nearest);
        }
        "random" => None,
        _ => match p.strip_prefix("random:").map(str::parse::<u64>) {
            Some(Ok(s)) => Some(s),
            _ => {
                return usage(format!(
                    "--pick wants nearest, random or random:SEED, not `{p}`"
                ))
            }
        },
    };
    match (given, o.seed) {
        (Some(a), Some(b)) if a != b => usage(format!("--pick {p} and --seed {b} disagree")),
        (s, t) => Ok(Pick::Random {
            seed: s.or(t).unwrap_or(0),
        }),
    }
}

fn dest_list(v: &str, n: u32, from: u32) -> Result<Vec<u32>, Error> {
    if v.trim() == "all" {
        return Ok((0..n).filter(|&r| r != from).collect());
    }
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (number::<u32>("--to", a)?, number::<u32>("--to", b)?),
            None => {
                let r = number::<u32>("--to", part)?;
                (r, r)
            }
        };
        if lo > hi || hi >= n {
            return usage(format!("--to: `{part}` is not a rank (or range) of 0..{n}"));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return usage("--to needs at least one rank");
    }
    Ok(out)
}

/// About the bytes `topo` has yet to take for `n` ranks over `hosts` (IDs in base `base`, from
/// a file of `file_bytes` when given): per rank, its place, its facts record with a copy of its
/// host's name, the work of `resolve`, its ID and its leaf and node of the trie; per host, its
/// names and index; per byte of the file, its lines parsed and indexed (measured: some 40
/// bytes); with a multicast, per rank its destination lists and its share of the text of the
/// tree, a rank number at every level. The tables are made and printed one at a time, so they
/// do not add up.
fn memory_needed(
    n: u32,
    hosts: &[HostSlots],
    base: u32,
    file_bytes: Option<u64>,
    multicast: bool,
) -> u64 {
    let n64 = u64::from(n);
    let name = hosts.iter().map(|h| h.host.len()).max().unwrap_or(0) as u64;
    let facts = std::mem::size_of::<RankFacts>() as u64 + name + 32;
    let resolve = if file_bytes.is_some() { 224 } else { 96 };
    let mut per_rank = 16 + facts + resolve + 8 + 40;
    if multicast {
        let bits = base.trailing_zeros().max(1);
        let most = 64 / bits;
        // Derived IDs: the digits of the host index and of the slot.
        let derived = (64 - n64.leading_zeros()).div_ceil(bits) + 2;
        let digits = if file_bytes.is_some() {
            most
        } else {
            derived.min(most)
        };
        per_rank += 48 + 64 + 12 * u64::from(digits);
    }
    n64.saturating_mul(per_rank)
        .saturating_add((hosts.len() as u64).saturating_mul(192))
        .saturating_add(file_bytes.unwrap_or(0).saturating_mul(48))
}

/// `mpicast topo ARGS`: the text to print, written to `out` as it is made. Every error but a
/// failed write is found before anything is written.
pub fn run_to(args: &[String], out: &mut dyn std::io::Write) -> Result<(), Error> {
    let o = opts(args)?;
    let Some(hosts) = o.hosts.as_ref() else {
        return usage("topo needs --hostfile H or --hosts LIST");
    };
    let Some(n) = o.ranks else {
        return usage("topo needs -n N (the number of ranks)");
    };
    let pick = pick_of(&o)?;
    let from_to = match (o.from, o.to.as_deref()) {
        (None, None) => None,
        (Some(f), Some(t)) => {
            if f >= n {
                return usage(format!("--from {f} is not a rank of 0..{n}"));
            }
            Some((f, t))
        }
        _ => return usage("--from and --to go together"),
    };
    let file_bytes = o
        .file
        .as_deref()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()));
    crate::limits::check_memory(
        &format!("topo of {n} ranks"),
        memory_needed(n, hosts, o.base, file_bytes, from_to.is_some()),
    )
    .map_err(Error::Limit)?;
    let root_and_dests = match from_to {
        Some((f, t)) => Some((f, dest_list(t, n, f)?)),
        None => None,
    };
    let Placement {
        names,
        ranks: placed,
    } = place(hosts, n).map_err(Error::Failed)?;

    // Addresses: the hosts' own when all are IPv4 addresses, else the listed order (inside
    // 0.0.0.0/8, which no host's interface has, so no file line matches them by address).
    let addrs: Vec<u32> = match names
        .iter()
        .map(|h| h.parse::<Ipv4Addr>().map(u32::from))
        .collect::<Result<Vec<u32>, _>>()
    {
        Ok(a) => a,
        Err(_) => (1..=names.len() as u32).collect(),
    };
    let file = o
        .file
        .as_deref()
        .map(|path| FileCopy::read(path, path, o.base));
    let facts: Vec<RankFacts> = placed
        .iter()
        .map(|&(h, slot)| RankFacts {
            host: names[h].clone(),
            addr: addrs[h],
            slot,
            cpu: CpuFacts::UNKNOWN,
            base: o.base,
            file: file.as_ref().map_or(FileFact::NotSet, FileCopy::fact),
            ..RankFacts::default()
        })
        .collect();
    let resolved = resolve(&facts, file.as_ref()).map_err(|e| Error::Failed(e.to_string()))?;
    drop(facts);
    let router = Router::new(&resolved.topology, pick);
    let tree = match root_and_dests {
        Some((root, dests)) => Some(tree(&router, o.route, root, &dests)?),
        None => None,
    };
    report(
        &o,
        &names,
        &placed,
        &resolved,
        &router,
        tree.as_deref(),
        out,
    )
}

/// `mpicast topo ARGS`: the text to print.
#[cfg(test)]
pub fn run(args: &[String]) -> Result<String, Error> {
    let mut out = Vec::new();
    run_to(args, &mut out)?;
    Ok(String::from_utf8(out).expect("the report is text"))
}

fn report(
    o: &Opts,
    names: &[String],
    placed: &[(usize, u32)],
    r: &Resolved,
    router: &Router,
    tree: Option<&str>,
    out: &mut dyn std::io::Write,
) -> Result<(), Error> {
    let t = &r.topology;
    let n = t.ranks();
    let mut s = String::new();
    // Written out whenever this much has gathered.
    const CHUNK: usize = 1 << 16;
    let mut flush = |s: &mut String, at_least: usize| -> Result<(), Error> {
        if s.len() >= at_least {
            out.write_all(s.as_bytes())
                .map_err(|e| Error::Failed(format!("standard output: {e}")))?;
            s.clear();
        }
        Ok(())
    };
    let slots: u64 = o.hosts.iter().flatten().map(|h| u64::from(h.slots)).sum();
    let _ = writeln!(
        s,
        "{n} rank{} placed by slot over {} host{} ({slots} slot{}{})",
        plural(n as usize),
        names.len(),
        plural(names.len()),
        plural(slots as usize),
        if u64::from(n) > slots {
            "; more ranks than slots: placement went round again"
        } else {
            ""
        }
    );
    let layout: Vec<String> = r
        .layout
        .iter()
        .map(|(what, d)| format!("{what} ({d} digit{})", plural(*d as usize)))
        .collect();
    let _ = writeln!(
        s,
        "topology IDs: {}, {}; digits: {}",
        r.source,
        t.shape(),
        layout.join(", ")
    );
    if o.file.is_none() {
        let order = if names.iter().all(|h| h.parse::<Ipv4Addr>().is_ok()) {
            "by address"
        } else {
            "as listed (this command does not resolve names; the library orders hosts by \
             address)"
        };
        let _ = writeln!(
            s,
            "note: hosts ordered {order}; the ranks of a host told apart by slot (the library \
             uses CPU package, NUMA node and core first)"
        );
    }
    let hw = names.iter().map(String::len).max().unwrap_or(4).max(4);
    let rw = (n - 1).to_string().len().max(4);
    let _ = writeln!(s, "\n{:>rw$}  {:<hw$}  slot  ID", "rank", "host");
    for (rank, &(h, slot)) in placed.iter().enumerate() {
        let _ = writeln!(
            s,
            "{rank:>rw$}  {:<hw$}  {slot:>4}  {}",
            names[h],
            t.id(rank as u32)
        );
        flush(&mut s, CHUNK)?;
    }
    let pick_name = match router.pick {
        Pick::Nearest => "nearest".to_string(),
        Pick::Random { seed } => format!("random, seed {seed}"),
    };
    let _ = writeln!(s, "\nrouting tables (pick {pick_name}):");
    for me in 0..n {
        s.push('\n');
        s.push_str(&router.table(me).render(router.topo));
        flush(&mut s, CHUNK)?;
    }
    if let Some(tree) = tree {
        s.push('\n');
        s.push_str(tree);
    }
    flush(&mut s, 0)
}

fn plural(k: usize) -> &'static str {
    if k == 1 {
        ""
    } else {
        "s"
    }
}

/// The marker of a hole in a table's entries (as in `RoutingTable`).
const HOLE: u32 = u32::MAX;

/// A node of [`Router`]'s trie: the bit its two subtrees differ in first (counted from the
/// top of the IDs), or [`LEAF`] with the rank in `kid[0]`.
#[derive(Clone, Copy, Debug)]
struct Node {
    bit: u32,
    kid: [u32; 2],
}

const LEAF: u32 = u32::MAX;

/// Every rank's routing table as `RoutingTable::build` makes it, and `prefix::forward` over
/// them, without the O(N) scan per table that made printing every table O(N^2).
///
/// With `Pick::Nearest`, T[l][d] of the rank with ID x is the rank nearest to x (by XOR) among
/// those whose ID starts with x's first l digits and then d. In a binary trie of the IDs with a
/// node only where they branch (PATRICIA), those ranks are whole subtrees hanging off x's own
/// path at bits of digit l, and the nearest leaf of a subtree is found by following x's bits
/// down. The trie is built once, O(N log N); a table then takes O(m c depth).
/// `Pick::Random` hashes every (rank, candidate) pair, so no structure of the IDs helps: its
/// tables are the library's own scan, O(N) each.
pub struct Router<'t> {
    topo: &'t Topology,
    pick: Pick,
    rows: usize,
    cols: usize,
    bits: u32,
    width: u32,
    /// The trie (`Pick::Nearest` only), its root first.
    nodes: Vec<Node>,
}

impl<'t> Router<'t> {
    pub fn new(topo: &'t Topology, pick: Pick) -> Router<'t> {
        let shape = topo.shape();
        let (bits, digits) = (shape.bits(), shape.digits());
        let mut r = Router {
            topo,
            pick,
            rows: digits as usize,
            cols: shape.base() as usize,
            bits,
            width: bits * digits,
            nodes: Vec::new(),
        };
        if pick == Pick::Nearest {
            let mut sorted: Vec<(u64, u32)> = topo
                .values()
                .iter()
                .enumerate()
                .map(|(rank, &v)| (v, rank as u32))
                .collect();
            sorted.sort_unstable();
            r.nodes.reserve(2 * sorted.len());
            r.grow(&sorted);
        }
        r
    }

    /// Adds the subtree of `sorted` (IDs sharing their bits above the first that differs, and
    /// unique); gives its node.
    fn grow(&mut self, sorted: &[(u64, u32)]) -> u32 {
        let at = self.nodes.len() as u32;
        if let [(_, rank)] = sorted {
            self.nodes.push(Node {
                bit: LEAF,
                kid: [*rank, 0],
            });
            return at;
        }
        let (lo, hi) = (sorted[0].0, sorted[sorted.len() - 1].0);
        let bit = (lo ^ hi).leading_zeros() - (64 - self.width);
        let mask = 1u64 << (self.width - 1 - bit);
        let split = sorted.partition_point(|&(v, _)| v & mask == 0);
        self.nodes.push(Node { bit, kid: [0, 0] });
        let left = self.grow(&sorted[..split]);
        let right = self.grow(&sorted[split..]);
        self.nodes[at as usize].kid = [left, right];
        at
    }

    /// Bit `k` of `v`, counted from the top of the IDs.
    fn bit_of(&self, v: u64, k: u32) -> usize {
        ((v >> (self.width - 1 - k)) & 1) as usize
    }

    /// Digit `k` of `v` (0 is the most significant).
    fn digit(&self, v: u64, k: usize) -> usize {
        let shift = (self.rows - 1 - k) as u32 * self.bits;
        ((v >> shift) & (self.cols as u64 - 1)) as usize
    }

    /// The leaf of the subtree at `node` nearest to `x`: the one that follows x's bits
    /// wherever it can (higher bits weigh more than all lower ones together).
    fn nearest(&self, mut node: u32, x: u64) -> u32 {
        loop {
            let nd = self.nodes[node as usize];
            if nd.bit == LEAF {
                return nd.kid[0];
            }
            node = nd.kid[self.bit_of(x, nd.bit)];
        }
    }

    /// Rank `me`'s table, as `RoutingTable::build` makes it.
    pub fn table(&self, me: u32) -> RoutingTable {
        let (rows, cols) = (self.rows, self.cols);
        if self.nodes.is_empty() {
            return RoutingTable::build(self.topo, me, self.pick);
        }
        let ids = self.topo.values();
        let x = ids[me as usize];
        let mut entries = vec![HOLE; rows * cols];
        for i in 0..rows {
            entries[i * cols + self.digit(x, i)] = me;
        }
        let mut stack: Vec<u32> = Vec::new();
        let mut node = 0u32;
        loop {
            let nd = self.nodes[node as usize];
            if nd.bit == LEAF {
                break; // me
            }
            let mine = self.bit_of(x, nd.bit);
            // The other side shares exactly x's bits above nd.bit: its ranks share l digits
            // with x and differ from it in digit l. Its subtrees down to the end of digit l
            // each hold one value of digit l, that is one entry of row l.
            let l = (nd.bit / self.bits) as usize;
            let end = (l as u32 + 1) * self.bits;
            stack.push(nd.kid[1 - mine]);
            while let Some(sub) = stack.pop() {
                let sn = self.nodes[sub as usize];
                if sn.bit == LEAF || sn.bit >= end {
                    let y = self.nearest(sub, x);
                    entries[l * cols + self.digit(ids[y as usize], l)] = y;
                } else {
                    stack.extend(sn.kid);
                }
            }
            node = nd.kid[mine];
        }
        RoutingTable::from_entries(self.topo, me, entries)
    }
}

/// The forwarding tree of one multicast, hop by hop, with a check that every destination gets
/// it exactly once and no other rank does.
fn tree(router: &Router, route: Route, root: u32, dests: &[u32]) -> Result<String, Error> {
    let n = router.topo.ranks() as usize;
    let mut s = String::new();
    let route_name = match route {
        Route::Dests => "dests",
        Route::Table => "table",
    };
    let _ = writeln!(
        s,
        "multicast from rank {root} to {} (route {route_name}):",
        rank_list(dests)
    );
    let mut delivered = vec![0u32; n];
    let mut relays: Vec<u32> = Vec::new();
    let mut messages = 0usize;
    let mut depth = 0usize;
    let mut level: Vec<(u32, Option<u32>, Vec<u32>)> = vec![(root, None, dests.to_vec())];
    while !level.is_empty() {
        let mut next = Vec::new();
        for (me, prev, carried) in level {
            let fw = forward(router.topo, &router.table(me), route, prev, &carried);
            if prev.is_some() {
                if fw.deliver {
                    delivered[me as usize] += 1;
                } else {
                    relays.push(me);
                }
            } else if fw.deliver {
                // The root among the destinations has the data already.
                delivered[me as usize] += 1;
            }
            for h in fw.hops {
                let relay = if dests.binary_search(&h.to).is_ok() {
                    ""
                } else {
                    ", forwards only"
                };
                let _ = writeln!(
                    s,
                    "  hop {}: {me} -> {} (table row {}{relay}) for {}",
                    depth + 1,
                    h.to,
                    h.level,
                    rank_list(&h.dests)
                );
                messages += 1;
                next.push((h.to, Some(me), h.dests));
            }
        }
        level = next;
        if !level.is_empty() {
            depth += 1;
        }
        if depth > 64 {
            return Err(Error::Failed("the tree does not end: a routing bug".into()));
        }
    }
    let wrong: Vec<u32> = (0..n as u32)
        .filter(|&r| {
            let want = u32::from(dests.binary_search(&r).is_ok());
            delivered[r as usize] != want
        })
        .collect();
    if !wrong.is_empty() {
        return Err(Error::Failed(format!(
            "the tree delivers wrongly to {}: a routing bug",
            rank_list(&wrong)
        )));
    }
    relays.sort_unstable();
    relays.dedup();
    let _ = writeln!(
        s,
        "every destination once; {messages} message{}, depth {depth}{}",
        plural(messages),
        if relays.is_empty() {
            String::new()
        } else {
            format!("; {} forward without delivering", rank_list(&relays))
        }
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hostfiles_of_both_mpis() {
        let h = parse_hostfile(
            "# cluster\nnode1 slots=4 max_slots=8\nnode2:2\n\nnode3   # one slot\n",
            "H",
        )
        .unwrap();
        let got: Vec<(&str, u32)> = h.iter().map(|x| (x.host.as_str(), x.slots)).collect();
        assert_eq!(got, [("node1", 4), ("node2", 2), ("node3", 1)]);
        for (text, want) in [
            ("node1 slots=x\n", "H:1: slots=`x` is not a number"),
            (
                "node1:x\n",
                "H:1: `node1:x`: the slots after ':' are not a number",
            ),
            (
                "node1 4\n",
                "H:1: `4` after the host: expected slots=K (Open MPI) or host:K (MPICH)",
            ),
            ("a/b\n", "H:1: `a/b` is not a host name"),
            ("# none\n", "H: no hosts"),
        ] {
            assert_eq!(parse_hostfile(text, "H").unwrap_err(), want, "{text:?}");
        }
    }

    #[test]
    fn placement_by_slot() {
        let hs = |v: &[(&str, u32)]| -> Vec<HostSlots> {
            v.iter()
                .map(|&(h, k)| HostSlots {
                    host: h.into(),
                    slots: k,
                })
                .collect()
        };
        let p = place(&hs(&[("a", 2), ("b", 1)]), 5).unwrap();
        assert_eq!(p.names, ["a", "b"]);
        assert_eq!(p.ranks, [(0, 0), (0, 1), (1, 0), (0, 2), (0, 3)]);
        let p = place(&hs(&[("a", 1), ("b", 0), ("A", 1)]), 3).unwrap();
        assert_eq!(p.names, ["a", "b"]);
        assert_eq!(p.ranks, [(0, 0), (0, 1), (0, 2)]);
        assert!(place(&hs(&[("a", 0)]), 1).is_err());
    }

    #[test]
    fn options() {
        let o = |v: &[&str]| run(&args(v)).map(|_| ());
        assert_eq!(
            o(&["-n", "4"]),
            Err(Error::Usage(
                "topo needs --hostfile H or --hosts LIST".into()
            ))
        );
        assert_eq!(
            o(&["--hosts", "a,b"]),
            Err(Error::Usage("topo needs -n N (the number of ranks)".into()))
        );
        assert_eq!(
            o(&["--hosts", "a", "-n", "2", "--base", "12"]),
            Err(Error::Usage(
                "--base wants a power of two from 2 to 256, not `12`".into()
            ))
        );
        assert_eq!(
            o(&["--hosts", "a", "-n", "2", "--seed", "3"]),
            Err(Error::Usage("--seed goes with --pick random".into()))
        );
        assert_eq!(
            o(&["--hosts", "a", "-n", "2", "--from", "0"]),
            Err(Error::Usage("--from and --to go together".into()))
        );
        assert_eq!(
            o(&["--hosts", "a", "-n", "2", "--from", "0", "--to", "2"]),
            Err(Error::Usage(
                "--to: `2` is not a rank (or range) of 0..2".into()
            ))
        );
        assert!(o(&["--hosts", "a:2", "-n", "2", "--pick", "random:5", "--seed", "5"]).is_ok());
        assert_eq!(
            dest_list("3, 1-2,1", 5, 0).unwrap(),
            [1, 2, 3],
            "sorted, without repeats"
        );
        assert_eq!(dest_list("all", 4, 2).unwrap(), [0, 1, 3]);
    }

    /// xorshift64*: repeatable draws for the comparisons below.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, k: u64) -> u64 {
            self.next() % k.max(1)
        }
    }

    /// Topologies of every kind: derived from hosts (dense, with holes), and IDs drawn at
    /// random from small and from full 64-bit spaces, in every base.
    fn topologies() -> Vec<Topology> {
        use crate::algo::prefix::{derive, Shape};
        let mut d = Draw(0x9E37_79B9_7F4A_7C15);
        let mut out = Vec::new();
        for base in [2u32, 4, 16, 256] {
            for n in [1u32, 2, 3, 17, 100, 257] {
                let hosts = 1 + d.below(u64::from(n)) as u32;
                let facts: Vec<[u32; 2]> = (0..n).map(|r| [r % hosts, r / hosts]).collect();
                out.push(derive(base, &facts).unwrap());
                let bits = base.trailing_zeros();
                for digits in [64 / bits, (12 / bits).max(1) + 1] {
                    let shape = Shape::new(base, digits).unwrap();
                    let width = bits * digits;
                    let mut values = std::collections::BTreeSet::new();
                    let space = if width >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << width) - 1
                    };
                    if u64::from(n) > space {
                        continue;
                    }
                    while values.len() < n as usize {
                        values.insert(d.next() & space);
                    }
                    let mut values: Vec<u64> = values.into_iter().collect();
                    // Not in ID order: ranks and IDs shuffled.
                    for i in (1..values.len()).rev() {
                        values.swap(i, d.below(i as u64 + 1) as usize);
                    }
                    out.push(Topology::new(shape, values).unwrap());
                }
            }
        }
        out
    }

    /// The router's tables are the library's, entry for entry (their text and forwarding are
    /// the library's own `render` and `forward`).
    #[test]
    fn router_is_the_librarys_routing() {
        for t in topologies() {
            for pick in [Pick::Nearest, Pick::Random { seed: 3 }] {
                let router = Router::new(&t, pick);
                for me in 0..t.ranks() {
                    let lib = RoutingTable::build(&t, me, pick);
                    assert_eq!(router.table(me), lib, "{} rank {me} {pick:?}", t.shape());
                }
            }
        }
    }

    #[test]
    fn memory_estimates_grow_with_the_job() {
        let hs = parse_hostfile("a slots=2\nb slots=2\n", "H").unwrap();
        let small = memory_needed(1000, &hs, 16, None, false);
        assert!(small > 100_000 && small < 1_000_000, "{small}");
        assert!(memory_needed(1000, &hs, 16, None, true) > small);
        assert!(memory_needed(1000, &hs, 16, Some(1 << 20), false) > small + (1 << 20));
        // A billion ranks: hundreds of GiB, refused on any machine of today.
        assert!(memory_needed(1_000_000_000, &hs, 16, None, false) > 200 << 30);
        let e = run(&args(&["--hosts", "a,b", "-n", "4294967295"])).unwrap_err();
        assert!(
            matches!(&e, Error::Limit(m) if m.starts_with("topo of 4294967295 ranks needs about")),
            "{e:?}"
        );
    }
}
