//! Which ranks share a host, and what that means for the multicast: pure arithmetic over the
//! interface address each rank reported at setup (ranks with the same address share one
//! network stack, so one copy of a datagram reaches all of them).

use crate::config::Topo;

/// Ranks grouped by host, hosts numbered in order of their lowest rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosts {
    /// Host number of each rank.
    pub host_of: Vec<u32>,
    /// Position of each rank among the ranks of its host (ranks in increasing order).
    pub local_rank: Vec<u32>,
    /// Number of ranks on each host.
    pub host_size: Vec<u32>,
    /// The leader (lowest rank) of each host.
    pub leader: Vec<u32>,
}

impl Hosts {
    /// Groups ranks by their reported address (`addrs[r]` is rank r's).
    pub fn group<A: PartialEq>(addrs: &[A]) -> Hosts {
        let mut firsts: Vec<usize> = Vec::new();
        let mut host_of = Vec::with_capacity(addrs.len());
        let mut local_rank = Vec::with_capacity(addrs.len());
        let mut host_size: Vec<u32> = Vec::new();
        for (r, a) in addrs.iter().enumerate() {
            let h = match firsts.iter().position(|&f| addrs[f] == *a) {
                Some(h) => h,
                None => {
                    firsts.push(r);
                    host_size.push(0);
                    firsts.len() - 1
                }
            };
            host_of.push(h as u32);
            local_rank.push(host_size[h]);
            host_size[h] += 1;
        }
        Hosts {
            host_of,
            local_rank,
            host_size,
            leader: firsts.into_iter().map(|f| f as u32).collect(),
        }
    }

    pub fn hosts(&self) -> u32 {
        self.leader.len() as u32
    }

    pub fn ranks(&self) -> u32 {
        self.host_of.len() as u32
    }
}

/// How one communicator takes part in multicast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every rank joins the group.
    Flat,
    /// The leader of each host joins; the other ranks get data from it through the host MPI.
    Leaders,
    /// All ranks share one host: the host MPI (its shared memory crosses no wire).
    OneHost,
}

pub fn layout(topo: Topo, hosts: &Hosts) -> Layout {
    let (h, n) = (hosts.hosts(), hosts.ranks());
    match topo {
        Topo::Flat => Layout::Flat,
        _ if h == n => Layout::Flat,
        Topo::Leaders => Layout::Leaders,
        Topo::Auto if h == 1 => Layout::OneHost,
        Topo::Auto => Layout::Leaders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_order_of_lowest_rank() {
        let h = Hosts::group(&[7, 3, 7, 3, 9]);
        assert_eq!(h.host_of, vec![0, 1, 0, 1, 2]);
        assert_eq!(h.local_rank, vec![0, 0, 1, 1, 0]);
        assert_eq!(h.host_size, vec![2, 2, 1]);
        assert_eq!(h.leader, vec![0, 1, 4]);
        assert_eq!((h.hosts(), h.ranks()), (3, 5));
    }

    #[test]
    fn leaders_are_local_rank_zero_and_cover_every_rank() {
        // Every pattern of 1..=8 ranks over up to 3 hosts.
        for n in 1..=8u32 {
            let mut pattern = vec![0u32; n as usize];
            loop {
                let h = Hosts::group(&pattern);
                assert_eq!(h.host_size.iter().sum::<u32>(), n);
                for (host, &l) in h.leader.iter().enumerate() {
                    assert_eq!(h.host_of[l as usize], host as u32);
                    assert_eq!(h.local_rank[l as usize], 0);
                    // The leader is the lowest rank of its host.
                    assert!((0..l).all(|r| h.host_of[r as usize] != host as u32));
                }
                // Ranks of a host are numbered 0..size in rank order.
                for host in 0..h.hosts() {
                    let locals: Vec<u32> = (0..n)
                        .filter(|&r| h.host_of[r as usize] == host)
                        .map(|r| h.local_rank[r as usize])
                        .collect();
                    assert_eq!(locals, (0..h.host_size[host as usize]).collect::<Vec<_>>());
                }
                // Next pattern (base 3 counter).
                let mut i = 0;
                while i < pattern.len() && pattern[i] == 2 {
                    pattern[i] = 0;
                    i += 1;
                }
                if i == pattern.len() {
                    break;
                }
                pattern[i] += 1;
            }
        }
    }

    #[test]
    fn layout_choices() {
        let one = Hosts::group(&[1, 1, 1, 1]);
        let each = Hosts::group(&[1, 2, 3, 4]);
        let two = Hosts::group(&[1, 1, 2, 2]);
        assert_eq!(layout(Topo::Auto, &one), Layout::OneHost);
        assert_eq!(layout(Topo::Auto, &each), Layout::Flat);
        assert_eq!(layout(Topo::Auto, &two), Layout::Leaders);
        assert_eq!(layout(Topo::Flat, &one), Layout::Flat);
        assert_eq!(layout(Topo::Flat, &two), Layout::Flat);
        assert_eq!(layout(Topo::Leaders, &one), Layout::Leaders);
        assert_eq!(layout(Topo::Leaders, &each), Layout::Flat);
        assert_eq!(layout(Topo::Leaders, &two), Layout::Leaders);
    }
}
