//! Which switch each rank hangs on, from the switch topology of `MPICAST_SWITCH_TOPOLOGY` (the
//! network file of `mpicast sim --network`, docs/sim.md): the agent-based multicasts of seed 003
//! (`algo::agents`) need it. Pure: the library gathers one [`RankHost`] record per rank with an
//! allgather and every rank calls [`place`] on the same records and the same file, so every
//! rank gets the same placement or the same error.
//!
//! # How a rank finds its switch
//!
//! 1. `rank R[-R2] HOST` lines, when the file has them, place ranks by their rank in
//!    MPI_COMM_WORLD (so a file can spread the ranks of one machine over switches, as tests
//!    do); a rank they leave out is an error.
//! 2. Otherwise a `host NAME SWITCH` line names the rank's host: NAME is its host name (the
//!    whole name, or the first label of either: `node3` matches `node3.cluster.example`) or
//!    one of its IPv4 addresses other than loopback (`10.1.0.3`). A host that no line names,
//!    or that two lines name, is an error that says which rank, host and addresses, and lists
//!    the file's hosts.
//!
//! `ranks-per-host` says how the simulator places the ranks of a program; a running job's
//! ranks are where the launcher put them, so the library ignores it.

use crate::sim::network::{Network, Placement, SwitchId};
use std::net::Ipv4Addr;

/// What a rank tells the others about where it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankHost {
    /// Its rank in MPI_COMM_WORLD.
    pub world_rank: u32,
    /// The host name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// Its IPv4 addresses, loopback ones included (they match nothing).
    pub addrs: Vec<Ipv4Addr>,
    /// The digest of the file as this rank read it (`topology::digest`), 0 when it could not.
    pub file_digest: u64,
}

/// The size of an encoded [`RankHost`]: a host name of up to 255 bytes, 32 addresses.
pub const RECORD_BYTES: usize = 4 + 8 + 1 + 255 + 1 + 32 * 4;

impl RankHost {
    /// The fixed-size record of the allgather (longer names and address lists are cut; a cut
    /// name still matches by its first label).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_BYTES);
        out.extend_from_slice(&self.world_rank.to_le_bytes());
        out.extend_from_slice(&self.file_digest.to_le_bytes());
        let name = &self.hostname.as_bytes()[..self.hostname.len().min(255)];
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.resize(4 + 8 + 1 + 255, 0);
        let addrs = &self.addrs[..self.addrs.len().min(32)];
        out.push(addrs.len() as u8);
        for a in addrs {
            out.extend_from_slice(&a.octets());
        }
        out.resize(RECORD_BYTES, 0);
        out
    }

    pub fn decode(b: &[u8]) -> Result<RankHost, String> {
        if b.len() < RECORD_BYTES {
            return Err(format!("a record of {} bytes, not {RECORD_BYTES}", b.len()));
        }
        let world_rank = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
        let file_digest = u64::from_le_bytes(b[4..12].try_into().expect("8 bytes"));
        let n = b[12] as usize;
        let hostname = String::from_utf8_lossy(&b[13..13 + n]).into_owned();
        let at = 4 + 8 + 1 + 255;
        let k = (b[at] as usize).min(32);
        let addrs = (0..k)
            .map(|i| {
                let o = at + 1 + 4 * i;
                Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3])
            })
            .collect();
        Ok(RankHost {
            world_rank,
            hostname,
            addrs,
            file_digest,
        })
    }
}

/// The first label of a host name (`node3` of `node3.cluster.example`).
fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Whether the file's host `name` is the host of `r`.
fn names(name: &str, r: &RankHost) -> bool {
    if let Ok(a) = name.parse::<Ipv4Addr>() {
        return !a.is_loopback() && r.addrs.contains(&a);
    }
    !r.hostname.is_empty()
        && (name == r.hostname || short(name) == r.hostname || name == short(&r.hostname))
}

/// `RankHost::file_digest` of a rank that did not set `MPICAST_SWITCH_TOPOLOGY` (0: set but
/// unreadable; a digest is at least 2).
pub const NOT_SET: u64 = 1;

/// Whether every rank read the same file (`what` names it in errors): none left it unset,
/// none failed to read it, all copies have one digest. Checked before the file is parsed, so
/// that every rank parses the same bytes and fails alike.
pub fn copies_agree(what: &str, ranks: &[RankHost]) -> Result<(), String> {
    let Some(first) = ranks.first() else {
        return Ok(());
    };
    if let Some(i) = ranks.iter().position(|r| r.file_digest == NOT_SET) {
        return Err(format!("{what}: not set on rank {i}: set it on every rank"));
    }
    if let Some((i, r)) = ranks
        .iter()
        .enumerate()
        .find(|(_, r)| r.file_digest != first.file_digest)
    {
        return Err(format!(
            "{what}: ranks read different files (rank 0 and rank {i}, on host {}, differ): \
             every rank must find the same file",
            r.hostname
        ));
    }
    if first.file_digest == 0 {
        return Err(format!("{what}: the file could not be read"));
    }
    Ok(())
}

/// The switch of every rank of a communicator (`ranks[i]` is rank i's record), as the file
/// `net` says (`what` names it in errors, e.g. `MPICAST_SWITCH_TOPOLOGY=/etc/fabric.net`). The
/// same records and file give the same answer on every rank (`copies_agree` checks the file).
pub fn place(net: &Network, what: &str, ranks: &[RankHost]) -> Result<Vec<SwitchId>, String> {
    if let Placement::Listed(hosts) = &net.placement {
        return ranks
            .iter()
            .enumerate()
            .map(|(i, r)| {
                hosts
                    .get(r.world_rank as usize)
                    .copied()
                    .flatten()
                    .map(|h| net.hosts[h as usize].switch)
                    .ok_or_else(|| {
                        format!(
                            "{what}: rank {i} (rank {} of MPI_COMM_WORLD) has no `rank` line; \
                             the file places ranks with `rank` lines, so it must place every \
                             rank of the job",
                            r.world_rank
                        )
                    })
            })
            .collect();
    }
    let mut out = Vec::with_capacity(ranks.len());
    for (i, r) in ranks.iter().enumerate() {
        let found: Vec<&crate::sim::network::Host> =
            net.hosts.iter().filter(|h| names(&h.name, r)).collect();
        match found.as_slice() {
            [h] => out.push(h.switch),
            [] => {
                let addrs: Vec<String> = r
                    .addrs
                    .iter()
                    .filter(|a| !a.is_loopback())
                    .map(|a| a.to_string())
                    .collect();
                let listed: Vec<&str> = net.hosts.iter().map(|h| h.name.as_str()).collect();
                return Err(format!(
                    "{what}: no `host` line names the host of rank {i}: `{}` (addresses: {}); \
                     the file's hosts are {}. Name each host of the job by its name or one of \
                     its addresses, or place ranks with `rank R HOST` lines",
                    r.hostname,
                    if addrs.is_empty() {
                        "none but loopback".to_string()
                    } else {
                        addrs.join(", ")
                    },
                    listed.join(", ")
                ));
            }
            [a, b, ..] => {
                return Err(format!(
                    "{what}:{}: host `{}` and line {} (`{}`) both name the host of rank {i} \
                     (`{}`): a host must be named once",
                    b.line, b.name, a.line, a.name, r.hostname
                ));
            }
        }
    }
    Ok(out)
}

/// Topology IDs for `MPICAST_Imcast` made from the switch topology, one per rank, as dotted
/// decimal text: the path from the root of the up-down routing tree down to the rank's switch
/// (digit k is 1 + the position, among its parent's children in declaration order, of the
/// switch at level k + 1; 0 once the path has ended), then the rank's place among the ranks of
/// its switch (in rank order), in as many digits as the fullest switch needs. Ranks of one
/// subtree share a prefix, so the prefix routing of `MPICAST_Imcast` hands a multicast to one
/// rank per subtree, which passes it on inside its subtree: the agents of seed 003. Every
/// digit must be below `base` (`MPICAST_TOPO_BASE`); the error says which switch has too many
/// children or ranks.
pub fn topo_ids(
    net: &Network,
    updown: &crate::sim::updown::UpDown,
    switch_of_rank: &[SwitchId],
    base: u32,
) -> Result<Vec<String>, String> {
    let path = |mut s: SwitchId| -> Vec<u32> {
        let mut digits = Vec::new();
        while let Some(l) = updown.parent_link(s) {
            let crate::sim::network::Node::Switch(p) = net.links[l as usize].to else {
                unreachable!("a tree link joins two switches")
            };
            let pos = updown
                .children(net, p)
                .iter()
                .position(|&c| c == s)
                .expect("a switch is among its parent's children");
            digits.push(pos as u32 + 1);
            s = p;
        }
        digits.reverse();
        digits
    };
    for (s, sw) in net.switches.iter().enumerate() {
        let n = updown.children(net, s as SwitchId).len() as u32;
        if n >= base {
            return Err(format!(
                "switch {} has {n} switches below it in the routing tree: topology IDs from \
                 the switch topology need MPICAST_TOPO_BASE above {n} (it is {base})",
                sw.name
            ));
        }
    }
    let mut on_switch = vec![0u32; net.switches.len()];
    let mut local = Vec::with_capacity(switch_of_rank.len());
    for &s in switch_of_rank {
        local.push(on_switch[s as usize]);
        on_switch[s as usize] += 1;
    }
    let fullest = on_switch.iter().copied().max().unwrap_or(1);
    let mut width = 0usize;
    let mut room = 1u64;
    while room < u64::from(fullest) {
        room *= u64::from(base);
        width += 1;
    }
    let paths: Vec<Vec<u32>> = (0..net.switches.len() as SwitchId).map(path).collect();
    let depth = switch_of_rank
        .iter()
        .map(|&s| paths[s as usize].len())
        .max()
        .unwrap_or(0);
    let width = if depth + width == 0 { 1 } else { width };
    Ok(switch_of_rank
        .iter()
        .zip(&local)
        .map(|(&s, &k)| {
            let mut d = paths[s as usize].clone();
            d.resize(depth, 0);
            let mut low = Vec::with_capacity(width);
            let mut v = k;
            for _ in 0..width {
                low.push(v % base);
                v /= base;
            }
            d.extend(low.iter().rev());
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect())
}

#[cfg(test)]
#[path = "switches_tests.rs"]
mod tests;
