//! `mpicast topo`: the topology IDs, routing tables and multicast trees that `MPICAST_Imcast`
//! would use for a job of N ranks placed by slot over a list of hosts, computed by the library's
//! own code (`topology::resolve`, `algo::prefix`) from facts the command line makes up: it does
//! not resolve host names, so hosts are ordered as listed (by address when every host is given
//! as an IPv4 address), and it cannot see where ranks will run, so the ranks of a host are told
//! apart by their slot.

use crate::algo::prefix::{forward, Pick, Route, RoutingTable};
use crate::config::rank_list;
use crate::topology::{resolve, CpuFacts, FileCopy, FileFact, RankFacts, Resolved};
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
                 names it: random:S)
  --file F       MPICAST_TOPO_FILE: IDs from this file instead of derived
  --route R      MPICAST_IMCAST_ROUTE: dests (default) or table
  --from R --to  the root and the destinations of one multicast (`all`: every other rank)

Without --file the IDs are derived as the library derives them, from facts this command can
only make up: it does not resolve host names, so hosts are ordered as listed (by address when
every host is an IPv4 address; the library orders them by their interface addresses), and it
cannot see where ranks will run, so the ranks of a host are told apart by their slot (the
library uses their CPU package, NUMA node and core first).

Exit status: 0 fine, 1 errors found (a bad hostfile or topology file, IDs refused), 2 bad usage.";

/// Why `topo` stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// Bad usage: one line (exit 2).
    Usage(String),
    /// A file or the IDs are wrong: one line (exit 1).
    Failed(String),
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
                    hs.slots = k
                        .parse()
                        .map_err(|_| format!("{name}:{line}: slots=`{k}` is not a number"))?;
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
            k.parse::<u32>()
                .map_err(|_| format!("`{s}`: the slots after ':' are not a number"))?,
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

/// Places `n` ranks by slot. A host listed twice continues its slots.
pub fn place(hosts: &[HostSlots], n: u32) -> Result<Placement, String> {
    let mut names: Vec<String> = Vec::new();
    let mut index = Vec::with_capacity(hosts.len());
    for h in hosts {
        let i = match names.iter().position(|x| x.eq_ignore_ascii_case(&h.host)) {
            Some(i) => i,
            None => {
                names.push(h.host.clone());
                names.len() - 1
            }
        };
        index.push(i);
    }
    let total: u64 = hosts.iter().map(|h| u64::from(h.slots)).sum();
    if total == 0 {
        return Err("the hosts have no slots".into());
    }
    let mut used = vec![0u32; names.len()];
    let mut out = Vec::with_capacity(n as usize);
    'fill: loop {
        for (h, &i) in hosts.iter().zip(&index) {
            for _ in 0..h.slots {
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

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, Error> {
    v.parse()
        .or_else(|_| usage(format!("{flag} wants a number, not `{v}`")))
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

/// `mpicast topo ARGS`: the text to print.
pub fn run(args: &[String]) -> Result<String, Error> {
    let o = opts(args)?;
    let Some(hosts) = o.hosts.as_ref() else {
        return usage("topo needs --hostfile H or --hosts LIST");
    };
    let Some(n) = o.ranks else {
        return usage("topo needs -n N (the number of ranks)");
    };
    let pick = pick_of(&o)?;
    let root_and_dests = match (o.from, o.to.as_deref()) {
        (None, None) => None,
        (Some(f), Some(t)) => {
            if f >= n {
                return usage(format!("--from {f} is not a rank of 0..{n}"));
            }
            Some((f, dest_list(t, n, f)?))
        }
        _ => return usage("--from and --to go together"),
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
    report(&o, &names, &placed, &resolved, pick, root_and_dests)
}

fn report(
    o: &Opts,
    names: &[String],
    placed: &[(usize, u32)],
    r: &Resolved,
    pick: Pick,
    multicast: Option<(u32, Vec<u32>)>,
) -> Result<String, Error> {
    let t = &r.topology;
    let n = t.ranks();
    let mut s = String::new();
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
    }
    let tables: Vec<RoutingTable> = (0..n).map(|me| RoutingTable::build(t, me, pick)).collect();
    let pick_name = match pick {
        Pick::Nearest => "nearest".to_string(),
        Pick::Random { seed } => format!("random, seed {seed}"),
    };
    let _ = writeln!(s, "\nrouting tables (pick {pick_name}):");
    for table in &tables {
        let _ = write!(s, "\n{}", table.render(t));
    }
    if let Some((root, dests)) = multicast {
        s.push('\n');
        s.push_str(&tree(t, &tables, o.route, root, &dests)?);
    }
    Ok(s)
}

fn plural(k: usize) -> &'static str {
    if k == 1 {
        ""
    } else {
        "s"
    }
}

/// The forwarding tree of one multicast, hop by hop, with a check that every destination gets
/// it exactly once and no other rank does.
fn tree(
    t: &crate::algo::prefix::Topology,
    tables: &[RoutingTable],
    route: Route,
    root: u32,
    dests: &[u32],
) -> Result<String, Error> {
    let n = t.ranks() as usize;
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
            let fw = forward(t, &tables[me as usize], route, prev, &carried);
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
}
