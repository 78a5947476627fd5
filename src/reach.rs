//! reach: what the library tells a user when multicast does not reach some ranks, at the
//! setup probe of a communicator or in the middle of a job, in the words a user acts on (the
//! ranks and their hosts, the group, port and interface, the likely causes, the tool that
//! finds out why).
//!
//! Pure: it renders facts that `transport` gathers (the probe's allgather, a stalled
//! operation's record of who acknowledged what); it touches no MPI, socket or clock.

use crate::config::rank_list;
use std::net::Ipv4Addr;

/// A rank as a user knows it: its rank in `MPI_COMM_WORLD` and its host (the short host
/// name, which may be the same on every host of a container cluster, and the address of the
/// interface it multicasts on, which is not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Who {
    pub world: u32,
    pub host: String,
    pub addr: Ipv4Addr,
}

impl Who {
    fn host_label(&self) -> String {
        match (self.host.is_empty(), self.addr.is_unspecified()) {
            (true, true) => "an unknown host".to_string(),
            (true, false) => self.addr.to_string(),
            (false, true) => self.host.clone(),
            (false, false) => format!("{} ({})", self.host, self.addr),
        }
    }
}

/// Hosts named in one message, at most; the rest are counted.
const MAX_HOSTS: usize = 6;

/// `who` grouped by host, in order of their lowest rank: "host a (10.0.0.2): rank 2; host b
/// (10.0.0.3): ranks 4-7", at most `MAX_HOSTS` hosts and then how many more.
pub fn by_host(who: &[Who]) -> String {
    let mut hosts: Vec<(String, Vec<u32>)> = Vec::new();
    let mut sorted = who.to_vec();
    sorted.sort_by_key(|w| w.world);
    for w in &sorted {
        let label = w.host_label();
        match hosts.iter_mut().find(|(h, _)| *h == label) {
            Some((_, rs)) => rs.push(w.world),
            None => hosts.push((label, vec![w.world])),
        }
    }
    let mut parts: Vec<String> = hosts
        .iter()
        .take(MAX_HOSTS)
        .map(|(h, rs)| format!("host {h}: {}", rank_list(rs)))
        .collect();
    if hosts.len() > MAX_HOSTS {
        let rest: usize = hosts[MAX_HOSTS..].iter().map(|(_, rs)| rs.len()).sum();
        parts.push(format!(
            "and {} more hosts ({rest} ranks)",
            hosts.len() - MAX_HOSTS
        ));
    }
    parts.join("; ")
}

/// The command that finds out why, for a job of `job_size` ranks under `mpi`
/// ("openmpi"/"mpich", or empty when unknown).
pub fn doctor_hint(job_size: u32, mpi: &str, long: bool) -> String {
    let mut cmd = format!("mpicast doctor -n {job_size}");
    if !mpi.is_empty() {
        cmd.push_str(&format!(" --mpi {mpi}"));
    }
    if long {
        cmd.push_str(" --long");
    }
    format!("run `{cmd}` with this job's launcher options (docs/doctor.md) to find out why")
}

/// What the setup probe of one communicator saw when it failed.
#[derive(Clone, Debug, Default)]
pub struct ProbeFailure {
    pub group: Option<(Ipv4Addr, u16)>,
    /// The interface rank 0 multicast on: name and address.
    pub iface: Option<(String, Ipv4Addr)>,
    pub probe_ms: u64,
    /// Rank 0 of the communicator (the prober).
    pub prober: Option<Who>,
    /// Rank 0's own failure to open or join, said as it is.
    pub local_error: Option<String>,
    /// Ranks that could not open or join the group, with the error.
    pub cant_join: Vec<(Who, String)>,
    /// Ranks that joined but never heard rank 0's probe.
    pub no_probe: Vec<Who>,
    pub job_size: u32,
    pub mpi: String,
}

impl ProbeFailure {
    /// The reason of the one warning (after "multicast unavailable: ").
    pub fn render(&self) -> String {
        let mut why = Vec::new();
        if let Some(e) = &self.local_error {
            why.push(e.clone());
        }
        if !self.cant_join.is_empty() {
            // Grouped by error: usually one error everywhere.
            let mut by_err: Vec<(String, Vec<Who>)> = Vec::new();
            for (w, e) in &self.cant_join {
                match by_err.iter_mut().find(|(x, _)| x == e) {
                    Some((_, ws)) => ws.push(w.clone()),
                    None => by_err.push((e.clone(), vec![w.clone()])),
                }
            }
            for (e, ws) in by_err {
                let e = if e.is_empty() {
                    String::new()
                } else {
                    format!(" ({e})")
                };
                why.push(format!("could not join the group{e} on {}", by_host(&ws)));
            }
        }
        if !self.no_probe.is_empty() {
            let group = self
                .group
                .map_or("the group".to_string(), |(g, p)| format!("{g}:{p}"));
            let host = self
                .prober
                .as_ref()
                .filter(|w| !w.host.is_empty())
                .map_or(String::new(), |w| format!(" host {}", w.host));
            let from = match &self.iface {
                Some((n, a)) => format!(" from{host} on {n} ({a})"),
                None => self
                    .prober
                    .as_ref()
                    .map_or(String::new(), |w| format!(" from host {}", w.host_label())),
            };
            why.push(format!(
                "rank 0's probe to {group}{from} did not arrive within {} ms \
                 (MPICAST_PROBE_MS) at {}",
                self.probe_ms,
                by_host(&self.no_probe)
            ));
        }
        if why.is_empty() {
            why.push("rank 0 could not set up multicast".to_string());
        }
        format!(
            "{}; {}",
            why.join("; "),
            doctor_hint(self.job_size, &self.mpi, false)
        )
    }
}

/// What a stalled multicast operation knows of the ranks it waits for.
#[derive(Clone, Debug)]
pub struct StopFacts {
    /// The group, port and interface of the communicator.
    pub group: (Ipv4Addr, u16),
    pub iface: String,
    /// Ranks (as users know them) that multicast stopped reaching.
    pub stopped_at: Vec<Who>,
    /// Multicast operations this channel completed before (the setup probe reached every
    /// rank too, so multicast did work there once).
    pub earlier_ops: u64,
    /// Seen by the receiver itself (no datagram of the group arrived during the timeout),
    /// not by the root (it sent, and sent again, and they acknowledged nothing).
    pub at_receiver: bool,
    pub timeout_ms: u64,
    pub job_size: u32,
    pub mpi: String,
}

impl StopFacts {
    /// The lines of the abort message that say multicast stopped arriving (each starting
    /// with a newline and an indent, as `presence::explain`'s).
    pub fn render(&self) -> String {
        let (g, p) = self.group;
        let earlier = match self.earlier_ops {
            0 => "the setup probe reached them".to_string(),
            1 => "the setup probe and 1 earlier operation reached them".to_string(),
            n => format!("the setup probe and {n} earlier operations reached them"),
        };
        let seen = if self.at_receiver {
            format!(
                "not one datagram sent to {g}:{p} on {} arrived there in {} ms, although \
                 {earlier} (unless the root never sent)",
                self.iface, self.timeout_ms
            )
        } else {
            format!(
                "they are in this operation, and the root multicast to {g}:{p} on {} and \
                 repeated what they asked for, but they acknowledged no new data for {} ms, \
                 although {earlier}",
                self.iface, self.timeout_ms
            )
        };
        format!(
            "\n  multicast stopped arriving at {}: {seen}\
             \n  the usual causes: a switch with IGMP snooping and no querier on the segment \
             (it drops the group a few minutes after the job joined it: enable the switch's \
             IGMP querier), or a firewall rule added on those hosts (allow UDP to MPICAST_PORT \
             and IGMP); {}",
            by_host(&self.stopped_at),
            doctor_hint(self.job_size, &self.mpi, true)
        )
    }
}

/// The one warning of a process whose broadcasts came mostly by unicast repairs: multicast
/// no longer reaches it, but the data still arrives (slower). `repaired` of the `total`
/// fragments of one broadcast came that way.
pub fn repairs_warning(
    me: &Who,
    group: (Ipv4Addr, u16),
    repaired: u64,
    total: u64,
    job_size: u32,
    mpi: &str,
) -> String {
    let (g, p) = group;
    format!(
        "mpicast: warning: multicast to {g}:{p} no longer arrives at {}: {repaired} of the \
         {total} fragments of a broadcast came by unicast repair from its root, so \
         broadcasts and barriers are slower than they should be (the usual causes: a switch \
         with IGMP snooping and no querier on the segment, or a firewall rule); the data \
         stays correct, MPICAST_STATS=1 counts the repairs; {}",
        by_host(std::slice::from_ref(me)),
        doctor_hint(job_size, mpi, true)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(world: u32, host: &str, last: u8) -> Who {
        Who {
            world,
            host: host.to_string(),
            addr: Ipv4Addr::new(10, 77, 3, last),
        }
    }

    #[test]
    fn ranks_grouped_by_host_and_compressed() {
        let w = [
            who(5, "b", 2),
            who(2, "a", 1),
            who(4, "b", 2),
            who(6, "b", 2),
        ];
        assert_eq!(
            by_host(&w),
            "host a (10.77.3.1): rank 2; host b (10.77.3.2): ranks 4-6"
        );
        // Same name everywhere (containers, namespaces): the address tells them apart.
        let w: Vec<Who> = (0..9).map(|i| who(i, "node", i as u8 + 1)).collect();
        let s = by_host(&w);
        assert!(s.starts_with("host node (10.77.3.1): rank 0; "), "{s}");
        assert!(s.ends_with("and 3 more hosts (3 ranks)"), "{s}");
        let anon = Who {
            world: 3,
            host: String::new(),
            addr: Ipv4Addr::UNSPECIFIED,
        };
        assert_eq!(by_host(&[anon]), "host an unknown host: rank 3");
    }

    #[test]
    fn probe_failure_names_ranks_hosts_group_and_doctor() {
        let f = ProbeFailure {
            group: Some((Ipv4Addr::new(239, 255, 1, 2), 23456)),
            iface: Some(("eth1".into(), Ipv4Addr::new(10, 77, 3, 1))),
            probe_ms: 200,
            prober: Some(who(0, "h1", 1)),
            no_probe: vec![who(2, "h3", 3), who(3, "h3", 3)],
            cant_join: vec![(who(1, "h2", 2), "No such device".into())],
            job_size: 4,
            mpi: "openmpi".into(),
            ..Default::default()
        };
        let s = f.render();
        assert_eq!(
            s,
            "could not join the group (No such device) on host h2 (10.77.3.2): rank 1; \
             rank 0's probe to 239.255.1.2:23456 from host h1 on eth1 (10.77.3.1) did not \
             arrive within 200 ms (MPICAST_PROBE_MS) at host h3 (10.77.3.3): ranks 2, 3; \
             run `mpicast doctor -n 4 --mpi openmpi` with this job's launcher options \
             (docs/doctor.md) to find out why"
        );
        // Many ranks stay one short line.
        let f = ProbeFailure {
            no_probe: (1..1000).map(|i| who(i, "n", (i / 100) as u8)).collect(),
            job_size: 1000,
            ..f
        };
        let s = f.render();
        assert!(s.len() < 800, "{} bytes: {s}", s.len());
        assert!(s.contains("ranks 100-199"), "{s}");
        assert!(s.contains("and 4 more hosts (400 ranks)"), "{s}");
    }

    #[test]
    fn probe_failure_without_facts_still_names_the_doctor() {
        let f = ProbeFailure {
            local_error: Some("MPICAST_IFACE=nonexistent0: no such interface".into()),
            job_size: 2,
            ..Default::default()
        };
        assert_eq!(
            f.render(),
            "MPICAST_IFACE=nonexistent0: no such interface; run `mpicast doctor -n 2` with \
             this job's launcher options (docs/doctor.md) to find out why"
        );
    }

    #[test]
    fn stop_message_names_hosts_causes_and_the_long_doctor() {
        let f = StopFacts {
            group: (Ipv4Addr::new(239, 255, 9, 9), 23001),
            iface: "mpicast0 (10.77.3.1)".into(),
            stopped_at: vec![who(2, "h3", 3)],
            earlier_ops: 41,
            at_receiver: false,
            timeout_ms: 30000,
            job_size: 4,
            mpi: "mpich".into(),
        };
        let s = f.render();
        assert!(
            s.starts_with("\n  multicast stopped arriving at host h3 (10.77.3.3): rank 2: "),
            "{s}"
        );
        assert!(
            s.contains("239.255.9.9:23001 on mpicast0 (10.77.3.1)"),
            "{s}"
        );
        assert!(s.contains("no new data for 30000 ms, although the setup probe and 41 earlier operations reached them"), "{s}");
        assert!(s.contains("IGMP snooping and no querier"), "{s}");
        assert!(
            s.contains("`mpicast doctor -n 4 --mpi mpich --long`"),
            "{s}"
        );
        let r = StopFacts {
            at_receiver: true,
            earlier_ops: 0,
            ..f
        }
        .render();
        assert!(r.contains("not one datagram sent to 239.255.9.9:23001 on mpicast0 (10.77.3.1) arrived there in 30000 ms, although the setup probe reached them"), "{r}");
    }

    #[test]
    fn repairs_warning_names_this_host() {
        let s = repairs_warning(
            &who(3, "h4", 4),
            (Ipv4Addr::new(239, 255, 0, 7), 23100),
            700,
            745,
            8,
            "openmpi",
        );
        assert!(
            s.starts_with(
                "mpicast: warning: multicast to 239.255.0.7:23100 no longer arrives at host h4 \
                 (10.77.3.4): rank 3: 700 of the 745 fragments of a broadcast came by unicast \
                 repair from its root"
            ),
            "{s}"
        );
        assert!(
            s.contains("`mpicast doctor -n 8 --mpi openmpi --long`"),
            "{s}"
        );
    }
}
