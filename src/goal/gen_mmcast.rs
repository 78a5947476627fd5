//! The multiple multicasts of `algo::agents` as GOAL programs, for `mpicast goal gen
//! mmcast-ALGO` and `mpicast sim --gen mmcast-ALGO`: a network file says where the ranks sit,
//! a list (or a seeded draw) says who multicasts to whom. Multicast m's message lives in the
//! default buffer at offset m * size, so a program of k multicasts needs a buffer of k * size
//! bytes and runs under `mpicast goal run` like any other. Pure: the caller reads the file.

use super::Program;
use crate::algo::agents::{self, MmcastAlgo, Multicast};
use crate::sched::BufRef;
use crate::sim::network::{Network, Placement, RoutingKind};
use crate::sim::updown::UpDown;

/// What the generators' names start with.
pub const PREFIX: &str = "mmcast-";

/// The algorithm of a generator name such as `mmcast-sametree-cyclic` (case-insensitive);
/// `None` without the prefix or for an unknown algorithm.
pub fn algo_of(name: &str) -> Option<MmcastAlgo> {
    let head = name.get(..PREFIX.len())?;
    if !head.eq_ignore_ascii_case(PREFIX) {
        return None;
    }
    MmcastAlgo::from_name(&name[PREFIX.len()..])
}

/// The generator names, for help texts and errors.
pub fn names() -> Vec<String> {
    MmcastAlgo::ALL
        .iter()
        .map(|a| format!("{PREFIX}{}", a.name()))
        .collect()
}

/// How many ranks the network file places: hosts times `ranks-per-host` (one by default), or
/// as many as its `rank` lines name.
pub fn ranks_of(net: &Network) -> u32 {
    match &net.placement {
        Placement::PerHost { ranks, .. } => net.hosts.len() as u32 * ranks,
        Placement::Listed(hosts) => hosts.len() as u32,
    }
}

/// Parses `SOURCE:DEST,DEST,...;SOURCE:...` (spaces allowed, a source may have no
/// destination, a trailing `;` is ignored).
pub fn parse_spec(spec: &str) -> Result<Vec<Multicast>, String> {
    let num = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| format!("--mcasts: `{}` is not a rank", s.trim()))
    };
    let mut out = Vec::new();
    for part in spec.split(';') {
        if part.trim().is_empty() {
            continue;
        }
        let (src, dests) = part
            .split_once(':')
            .ok_or_else(|| format!("--mcasts: `{}` wants SOURCE:DEST,DEST,...", part.trim()))?;
        let dests = if dests.trim().is_empty() {
            Vec::new()
        } else {
            dests.split(',').map(num).collect::<Result<_, _>>()?
        };
        out.push(Multicast {
            source: num(src)?,
            dests,
        });
    }
    if out.is_empty() {
        return Err("--mcasts names no multicast".into());
    }
    Ok(out)
}

/// `k` multicasts from distinct sources drawn with `seed`, each to `dests` other ranks drawn
/// at random (half the ranks, rounded down, by default), each list in ascending order.
pub fn draw(ranks: u32, k: u32, dests: Option<u32>, seed: u64) -> Result<Vec<Multicast>, String> {
    if k == 0 || k > ranks {
        return Err(format!(
            "--k {k}: the sources are distinct ranks, 1 to {ranks}"
        ));
    }
    let d = dests.unwrap_or(ranks / 2);
    if d >= ranks {
        return Err(format!(
            "--dests {d}: a multicast has at most {} other ranks",
            ranks - 1
        ));
    }
    let mut z = seed;
    let mut below = |n: u32| (crate::rng::next(&mut z) % u64::from(n)) as u32;
    let mut all: Vec<u32> = (0..ranks).collect();
    for i in (1..all.len()).rev() {
        all.swap(i, below(i as u32 + 1) as usize);
    }
    Ok(all[..k as usize]
        .iter()
        .map(|&source| {
            let mut others: Vec<u32> = (0..ranks).filter(|&r| r != source).collect();
            for i in (1..others.len()).rev() {
                others.swap(i, below(i as u32 + 1) as usize);
            }
            others.truncate(d as usize);
            others.sort_unstable();
            Multicast {
                source,
                dests: others,
            }
        })
        .collect())
}

/// The plan of `mcasts` on `net` (ranks placed by the file, the routing tree from the
/// `routing updown` root, or the first switch under `routing shortest`) with `seed` for the
/// Random variants.
pub fn plan(
    net: &Network,
    algo: MmcastAlgo,
    mcasts: &[Multicast],
    seed: u64,
) -> Result<agents::Plan, String> {
    let root = match net.routing {
        RoutingKind::UpDown { root } => root,
        RoutingKind::Shortest => 0,
    };
    let hosts = net.places(ranks_of(net))?;
    let sw: Vec<_> = hosts
        .iter()
        .map(|&h| net.hosts[h as usize].switch)
        .collect();
    agents::plan(net, &UpDown::new(net, root), &sw, mcasts, algo, seed)
}

/// The program of `mcasts` over the ranks of `net`, `size` bytes each.
pub fn generate(
    net: &Network,
    algo: MmcastAlgo,
    mcasts: &[Multicast],
    size: usize,
    seed: u64,
) -> Result<Program, String> {
    size.checked_mul(mcasts.len())
        .ok_or_else(|| format!("{} multicasts of {size} bytes overflow", mcasts.len()))?;
    let p = plan(net, algo, mcasts, seed)?;
    let buf = |m: u32| BufRef {
        slot: 0,
        offset: m as usize * size,
        len: size,
    };
    let schedules = (0..p.ranks())
        .map(|r| agents::schedule(&p, r, buf))
        .collect();
    Ok(Program::from_schedules(schedules, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::{print, replay};

    const NET: &str = "switch s0 s1 s2
link s0 s1 1Gbit
link s0 s2 1Gbit
host h0 s0
host h1 s1
host h2 s1
host h3 s2
routing updown
";

    #[test]
    fn names() {
        assert_eq!(algo_of("mmcast-spcco"), Some(MmcastAlgo::Spcco));
        assert_eq!(
            algo_of("MMCAST-Random-Cyclic"),
            Some(MmcastAlgo::RandomCyclic)
        );
        assert_eq!(algo_of("spcco"), None);
        assert_eq!(algo_of("mmcast-"), None);
        assert_eq!(super::names().len(), 6);
    }

    #[test]
    fn specs() {
        assert_eq!(
            parse_spec(" 0:1,2,5; 3:0 ,4;2:;").unwrap(),
            [
                Multicast {
                    source: 0,
                    dests: vec![1, 2, 5]
                },
                Multicast {
                    source: 3,
                    dests: vec![0, 4]
                },
                Multicast {
                    source: 2,
                    dests: vec![]
                },
            ]
        );
        assert_eq!(
            parse_spec("0-1").unwrap_err(),
            "--mcasts: `0-1` wants SOURCE:DEST,DEST,..."
        );
        assert_eq!(
            parse_spec("0:1,x").unwrap_err(),
            "--mcasts: `x` is not a rank"
        );
        assert_eq!(parse_spec(";").unwrap_err(), "--mcasts names no multicast");
    }

    #[test]
    fn draws() {
        let m = draw(10, 4, None, 7).unwrap();
        assert_eq!(m, draw(10, 4, None, 7).unwrap());
        let sources: std::collections::BTreeSet<u32> = m.iter().map(|m| m.source).collect();
        assert_eq!(sources.len(), 4);
        for x in &m {
            assert_eq!(x.dests.len(), 5);
            assert!(!x.dests.contains(&x.source));
        }
        assert!(draw(10, 11, None, 1).is_err());
        assert!(draw(10, 0, None, 1).is_err());
        assert!(draw(10, 2, Some(10), 1).is_err());
        assert_eq!(draw(10, 2, Some(9), 1).unwrap()[0].dests.len(), 9);
    }

    #[test]
    fn program_prints_and_replays() {
        let net = Network::parse(NET, "net.txt").unwrap();
        let mcasts = parse_spec("0:1,2,3;3:0,2").unwrap();
        let p = generate(&net, MmcastAlgo::SameTreeCyclic, &mcasts, 4, 1).unwrap();
        assert_eq!(p.num_ranks(), 4);
        let text = print::to_paper(&p);
        assert!(text.contains("tag 1"), "{text}");
        let mut bufs = vec![vec![vec![0u8; 8]]; 4];
        bufs[0][0][..4].copy_from_slice(b"abcd");
        bufs[3][0][4..].copy_from_slice(b"wxyz");
        let out = replay::run(&p, bufs, 3).unwrap();
        assert_eq!(out[1][0], b"abcd\0\0\0\0");
        assert_eq!(out[2][0], b"abcdwxyz");
        assert_eq!(out[3][0], b"abcdwxyz");
        assert_eq!(out[0][0], b"abcdwxyz");
        let e = generate(&net, MmcastAlgo::Naive, &parse_spec("4:1").unwrap(), 4, 1);
        assert_eq!(
            e.unwrap_err(),
            "multicast 0: source 4 is not below the 4 ranks"
        );
    }
}
