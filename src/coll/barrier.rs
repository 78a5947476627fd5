//! MPI_Barrier: scouts climb the binary tree to rank 0, which releases everyone with one
//! zero-data multicast (Chen, Carrasco and Apon's paper, section 3.2).

use super::{fail, hier, run, session_or_die};
use crate::algo;
use crate::host::{self, MPI_Comm};
use crate::session::{self, Path};
use crate::stats::{self, COUNTERS};
use crate::transport::op::{Data, Kind, OpError};
use crate::transport::Channel;
use crate::wire::heal::Mode;
use std::os::raw::c_int;

/// The host MPI's barrier, counted; with `MPICAST_VERBOSE=2` one line says why.
fn to_host(comm: MPI_Comm, why: &str) -> c_int {
    stats::add(&COUNTERS.barrier_pmpi, 1);
    if let Some(s) = session::started() {
        if s.cfg.verbose >= 2 {
            crate::session::say(&format!(
                "mpicast: rank {} MPI_Barrier to the host MPI: {why}",
                s.world_rank()
            ));
        }
    }
    host::pmpi_barrier(comm)
}

pub fn barrier(comm: MPI_Comm) -> c_int {
    if comm == host::comm_null() {
        return to_host(comm, "MPI_COMM_NULL (the host reports it)");
    }
    let session = match session::started() {
        Some(s) if s.active() => s,
        Some(_) => return to_host(comm, "after MPI_Finalize"),
        None if !host::is_active() => return to_host(comm, "MPI is not active"),
        None => session_or_die(),
    };
    if session.cfg.disable {
        return to_host(comm, "MPICAST_DISABLE");
    }
    let (Ok(false), Ok(size)) = (host::comm::is_inter(comm), host::comm::size(comm)) else {
        return to_host(comm, "an intercommunicator (or one the host rejects)");
    };
    let state = match session.comm_state(comm, "MPI_Barrier") {
        Ok(s) => s,
        Err(e) => return host::call_errhandler(comm, e.0),
    };
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    let st = &mut *st;
    match &st.path {
        Path::Alone => {
            stats::add(&COUNTERS.barrier_mcast, 1);
            return host::SUCCESS;
        }
        Path::Host(why) => {
            let why = format!("this communicator uses the host MPI ({why})");
            return to_host(comm, &why);
        }
        Path::Mcast(_) | Path::Hier(_) => {}
    }
    stats::add(&COUNTERS.barrier_mcast, 1);
    st.seq += 1;
    if st.cfg.verbose >= 2 {
        crate::session::say(&format!(
            "mpicast: rank {} MPI_Barrier op {} by multicast",
            st.rank, st.seq
        ));
    }
    let (private, rank, seq) = (st.private.0, st.rank, st.seq);
    let result = match &mut st.path {
        Path::Mcast(chan) => Ok(mcast_barrier(chan, private, rank, size, seq)),
        Path::Hier(h) => hier::barrier(h, rank, seq),
        Path::Alone | Path::Host(_) => unreachable!("handled above"),
    };
    match result {
        Ok(Ok(())) => host::SUCCESS,
        Ok(Err(e)) => fail(comm, e),
        Err(e) => host::call_errhandler(comm, e.0),
    }
}

/// One barrier over a multicast channel among `size` ranks of `private`.
pub(super) fn mcast_barrier(
    chan: &mut Channel,
    private: MPI_Comm,
    rank: u32,
    size: u32,
    seq: u64,
) -> Result<(), OpError> {
    match chan.before_op(private, rank, size, seq)? {
        Mode::Host => return host::comm::barrier(private).map_err(OpError::Mpi),
        Mode::Mcast { .. } => {}
    }
    let sched = algo::barrier(size, rank);
    match run(
        chan,
        private,
        rank,
        size,
        seq,
        Kind::Barrier,
        Data::None,
        &sched,
        false,
    ) {
        // Rank 0 released it by the host MPI: every rank probes.
        Err(OpError::Switched) => chan.after_switch(private, rank, size, seq),
        r => r.map(|_| ()),
    }
}
