//! `mpicast sim routes FILE`: the switch paths of a network file's routing (`routing updown`:
//! `UpDown`, else `ShortestPaths`), for the emulated switched network of bench/switched.sh,
//! which installs them as static routes. Prints, one line each:
//!
//! ```text
//! routing updown s0                       the routing (and its root)
//! path s1 s3: s1 s0 s2 s3                 every ordered pair of switches: the switches crossed
//! next s1 s3: s0                          every switch and every other switch: the next hop
//!                                         (`-` when it depends on the source: see below)
//! via s1 s3 s2: s0                        on the path from s1 to s3, switch s2 forwards to s0
//! ```
//!
//! Up-down routes need not be destination-based: a switch may send towards one destination by
//! different neighbours for different sources (it is then `next ... -`). The `via SRC DST AT:
//! NEXT` lines (one per switch on each path, the last excepted) are what source-based routes
//! need: bench/switched.sh installs them as one routing table per source switch.

use crate::sim::network::{Network, Node, RoutingKind, SwitchId};
use crate::Fail;
use std::fmt::Write;

pub const USAGE: &str = "\
usage: mpicast sim routes FILE

Prints the routes of the network file FILE (docs/sim.md: Contention and the network file) by
its routing (`routing updown [ROOT]`: up-down routing, else shortest paths), one line each:
  routing updown ROOT | routing shortest
  path SRC DST: SRC ... DST     the switches crossed, for every ordered pair of switches
  next AT DST: HOP              the neighbour AT forwards to for DST; `-` when that depends on
                                the source (up-down routes need not be destination-based)
  via SRC DST AT: HOP           on the path from SRC to DST, switch AT forwards to HOP
  host NAME SWITCH              each host and its switch";

/// `mpicast sim routes ...`.
pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let [f] = args else {
        return Err(Fail::Usage("sim routes takes one FILE".into()));
    };
    let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
    let net = Network::parse(&text, f).map_err(Fail::Io)?;
    print!("{}", routes(&net));
    Ok(())
}

/// The text `run` prints.
pub fn routes(net: &Network) -> String {
    let router = net.router();
    let n = net.switches.len() as SwitchId;
    let name = |s: SwitchId| net.switches[s as usize].name.as_str();
    let mut out = String::new();
    match net.routing {
        RoutingKind::UpDown { root } => writeln!(out, "routing updown {}", name(root)),
        RoutingKind::Shortest => writeln!(out, "routing shortest"),
    }
    .unwrap();
    // paths[a][b]: the switches from a to b, both included.
    let mut paths = vec![vec![Vec::new(); n as usize]; n as usize];
    for a in 0..n {
        for b in 0..n {
            let mut links = Vec::new();
            router.switch_path(net, a, b, &mut links);
            let mut p = vec![a];
            for l in links {
                match net.links[l as usize].to {
                    Node::Switch(t) => p.push(t),
                    Node::Host(_) => unreachable!("switch paths join switches"),
                }
            }
            paths[a as usize][b as usize] = p;
        }
    }
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let p = &paths[a as usize][b as usize];
            let names: Vec<&str> = p.iter().map(|&s| name(s)).collect();
            writeln!(out, "path {} {}: {}", name(a), name(b), names.join(" ")).unwrap();
        }
    }
    // next[at][dst]: the hop every path through `at` towards `dst` takes, if they agree.
    let mut next: Vec<Vec<Option<Option<SwitchId>>>> = vec![vec![None; n as usize]; n as usize];
    let mut via = String::new();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let p = &paths[a as usize][b as usize];
            for w in p.windows(2) {
                let (at, hop) = (w[0], w[1]);
                writeln!(
                    via,
                    "via {} {} {}: {}",
                    name(a),
                    name(b),
                    name(at),
                    name(hop)
                )
                .unwrap();
                let cell = &mut next[at as usize][b as usize];
                *cell = match *cell {
                    None => Some(Some(hop)),
                    Some(Some(h)) if h == hop => Some(Some(h)),
                    Some(_) => Some(None),
                };
            }
        }
    }
    for at in 0..n {
        for b in (0..n).filter(|&b| b != at) {
            let hop = match next[at as usize][b as usize] {
                Some(Some(h)) => name(h),
                // Every switch's own path to b passes through it, so `None` cannot stay.
                Some(None) | None => "-",
            };
            writeln!(out, "next {} {}: {}", name(at), name(b), hop).unwrap();
        }
    }
    out.push_str(&via);
    for h in &net.hosts {
        writeln!(out, "host {} {}", h.name, name(h.switch)).unwrap();
    }
    out
}
