//! Two-level collectives for communicators whose hosts hold several ranks each
//! (`MPICAST_TOPO`): one leader per host takes part in the multicast, and the host MPI
//! carries the data between the ranks of a host, where it crosses no wire.
//!
//! Broadcast from `root` on host R: (1) on host R, the host MPI broadcasts from the root
//! to its host-mates, so R's leader has the data; (2) the leaders multicast from R's
//! leader; (3) on every other host the host MPI broadcasts from the leader. Barrier: a host
//! barrier (every rank of the host has entered), the leaders' multicast barrier (every host
//! has), a host barrier again (nobody leaves before that).

use super::barrier::mcast_barrier;
use super::bcast::mcast_bcast;
use crate::algo;
use crate::host::{self, buffer::UserBuf, MpiResult};
use crate::session::{Hier, LeaderPath};
use crate::transport::op::OpError;

/// Returns the outcome and whether this rank sent the multicast data.
pub fn bcast(
    h: &mut Hier,
    rank: u32,
    seq: u64,
    root: u32,
    sync: algo::Sync,
    ub: &mut UserBuf,
) -> (MpiResult<Result<(), OpError>>, bool) {
    let hosts = &h.hosts;
    let me = rank as usize;
    let root_host = hosts.host_of[root as usize];
    let my_host = hosts.host_of[me];
    let shared = hosts.host_size[my_host as usize] > 1;
    if my_host == root_host && shared {
        if let Err(e) = ub.host_bcast(hosts.local_rank[root as usize], h.local.0) {
            return (Err(e), false);
        }
    }
    let mut sent = false;
    if let Some(lead) = &mut h.lead {
        let r = match &mut lead.path {
            LeaderPath::Alone => Ok(Ok(())),
            LeaderPath::Host => ub.host_bcast(root_host, lead.comm.0).map(Ok),
            LeaderPath::Mcast(chan) => {
                sent = my_host == root_host;
                mcast_bcast(
                    chan,
                    lead.comm.0,
                    my_host,
                    hosts.hosts(),
                    seq,
                    root_host,
                    sync,
                    ub,
                )
            }
        };
        if !matches!(r, Ok(Ok(()))) {
            return (r, false);
        }
    }
    if my_host != root_host && shared {
        if let Err(e) = ub.host_bcast(0, h.local.0) {
            return (Err(e), sent);
        }
    }
    (Ok(Ok(())), sent)
}

pub fn barrier(h: &mut Hier, rank: u32, seq: u64) -> MpiResult<Result<(), OpError>> {
    let hosts = &h.hosts;
    let my_host = hosts.host_of[rank as usize];
    let shared = hosts.host_size[my_host as usize] > 1;
    if shared {
        host::comm::barrier(h.local.0)?;
    }
    if let Some(lead) = &mut h.lead {
        match &mut lead.path {
            LeaderPath::Alone => {}
            LeaderPath::Host => host::comm::barrier(lead.comm.0)?,
            LeaderPath::Mcast(chan) => {
                if let Err(e) = mcast_barrier(chan, lead.comm.0, my_host, hosts.hosts(), seq) {
                    return Ok(Err(e));
                }
            }
        }
    }
    if shared {
        host::comm::barrier(h.local.0)?;
    }
    Ok(Ok(()))
}
