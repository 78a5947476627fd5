//! MPI_Bcast: scouts (binary tree or linear) to the root, then one reliable multicast.

use super::{fail, run, session_or_die};
use crate::algo;
use crate::config::SyncAlgo;
use crate::host::{self, buffer::UserBuf, MPI_Comm, MPI_Datatype};
use crate::session::Path;
use crate::stats::{self, COUNTERS};
use crate::transport::op::{Data, Kind};
use std::os::raw::{c_int, c_void};

fn to_host(
    buf: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    stats::add(&COUNTERS.bcast_pmpi, 1);
    host::pmpi_bcast(buf, count, dtype, root, comm)
}

pub fn bcast(
    buf: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if !host::is_active() || comm == host::comm_null() || host::is_in_place(buf) || count < 0 {
        return to_host(buf, count, dtype, root, comm);
    }
    let session = session_or_die();
    if session.cfg.disable {
        return to_host(buf, count, dtype, root, comm);
    }
    let (Ok(false), Ok(size)) = (host::comm::is_inter(comm), host::comm::size(comm)) else {
        return to_host(buf, count, dtype, root, comm);
    };
    if root < 0 || root as u32 >= size {
        return to_host(buf, count, dtype, root, comm);
    }
    let Ok(mut ub) = UserBuf::describe(buf, count, dtype, comm) else {
        return to_host(buf, count, dtype, root, comm);
    };
    let bytes = ub.bytes();
    if !ub.is_contiguous() && !host::buffer::packable(bytes) {
        return to_host(buf, count, dtype, root, comm);
    }
    let state = match session.comm_state(comm) {
        Ok(s) => s,
        Err(e) => return host::call_errhandler(comm, e.0),
    };
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    let st = &mut *st;
    let chan = match &mut st.path {
        Path::Alone => {
            stats::add(&COUNTERS.bcast_mcast, 1);
            return host::SUCCESS;
        }
        Path::Host(_) => return to_host(buf, count, dtype, root, comm),
        Path::Mcast(ch) => ch,
    };
    if bytes < st.cfg.min_bytes {
        return to_host(buf, count, dtype, root, comm);
    }
    stats::add(&COUNTERS.bcast_mcast, 1);
    if bytes == 0 {
        // Nothing to move, and MPI_Bcast does not synchronise.
        return host::SUCCESS;
    }
    st.seq += 1;
    let sync = match st.cfg.sync {
        SyncAlgo::Tree => algo::Sync::Tree,
        SyncAlgo::Linear => algo::Sync::Linear,
    };
    let root = root as u32;
    if st.cfg.verbose >= 2 {
        eprintln!(
            "mpicast: rank {} MPI_Bcast op {} root {root} {bytes} B by multicast ({:?} scouts)",
            st.rank, st.seq, st.cfg.sync
        );
    }
    let sched = algo::bcast(sync, st.size, root, st.rank, bytes);
    let (private, rank, seq) = (st.private.0, st.rank, st.seq);
    let result = if rank == root {
        ub.with_send_bytes(|d| {
            run(
                chan,
                private,
                rank,
                size,
                seq,
                Kind::Bcast,
                Data::Send(d),
                &sched,
            )
        })
    } else {
        ub.with_recv_bytes(|d| {
            run(
                chan,
                private,
                rank,
                size,
                seq,
                Kind::Bcast,
                Data::Recv(d),
                &sched,
            )
        })
    };
    match result {
        Ok(Ok(())) => {
            if rank == root {
                stats::add(&COUNTERS.bytes_mcast, bytes as u64);
            }
            host::SUCCESS
        }
        Ok(Err(e)) => fail(comm, e),
        Err(e) => host::call_errhandler(comm, e.0),
    }
}
