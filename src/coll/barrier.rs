//! MPI_Barrier: scouts climb the binary tree to rank 0, which releases everyone with one
//! zero-data multicast (seed 002, section 3.2).

use super::{fail, run, session_or_die};
use crate::algo;
use crate::host::{self, MPI_Comm};
use crate::session::Path;
use crate::stats::{self, COUNTERS};
use crate::transport::op::{Data, Kind};
use std::os::raw::c_int;

fn to_host(comm: MPI_Comm) -> c_int {
    stats::add(&COUNTERS.barrier_pmpi, 1);
    host::pmpi_barrier(comm)
}

pub fn barrier(comm: MPI_Comm) -> c_int {
    if !host::is_active() || comm == host::comm_null() {
        return to_host(comm);
    }
    let session = session_or_die();
    if session.cfg.disable {
        return to_host(comm);
    }
    let (Ok(false), Ok(size)) = (host::comm::is_inter(comm), host::comm::size(comm)) else {
        return to_host(comm);
    };
    let state = match session.comm_state(comm) {
        Ok(s) => s,
        Err(e) => return host::call_errhandler(comm, e.0),
    };
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    let st = &mut *st;
    let chan = match &mut st.path {
        Path::Alone => {
            stats::add(&COUNTERS.barrier_mcast, 1);
            return host::SUCCESS;
        }
        Path::Host(_) => return to_host(comm),
        Path::Mcast(ch) => ch,
    };
    stats::add(&COUNTERS.barrier_mcast, 1);
    st.seq += 1;
    if st.cfg.verbose >= 2 {
        eprintln!(
            "mpicast: rank {} MPI_Barrier op {} by multicast",
            st.rank, st.seq
        );
    }
    let sched = algo::barrier(size, st.rank);
    match run(
        chan,
        st.private.0,
        st.rank,
        size,
        st.seq,
        Kind::Barrier,
        Data::None,
        &sched,
    ) {
        Ok(()) => host::SUCCESS,
        Err(e) => fail(comm, e),
    }
}
