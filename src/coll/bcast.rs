//! MPI_Bcast: scouts (binary tree or linear) to the root, then one reliable multicast.

use super::{fail, hier, run, session_or_die};
use crate::algo;
use crate::config::SyncAlgo;
use crate::fastpath::FAST;
use crate::host::{self, buffer::UserBuf, MPI_Comm, MPI_Datatype, MpiResult};
use crate::session::{self, Path};
use crate::stats::{self, COUNTERS};
use crate::transport::op::{Data, Kind, OpError};
use crate::transport::Channel;
use crate::wire::heal::Mode;
use std::os::raw::{c_int, c_void};

/// The host MPI's broadcast, counted; with `MPICAST_VERBOSE=2` one line says why (`why`
/// is only called then).
#[inline(always)]
fn to_host(
    buf: *mut c_void,
    count: i64,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    why: impl FnOnce() -> String,
) -> c_int {
    stats::add(&COUNTERS.bcast_pmpi, 1);
    if let Some(s) = session::started() {
        if s.cfg.verbose >= 2 {
            log_host(s, count, root, &why());
        }
    }
    host::pmpi_bcast(buf, count, dtype, root, comm)
}

#[cold]
#[inline(never)]
fn log_host(s: &session::Session, count: i64, root: c_int, why: &str) {
    crate::session::say(&format!(
        "mpicast: rank {} MPI_Bcast of {count} elements from root {root} to the host MPI: {why}",
        s.world_rank()
    ));
}

/// The host MPI's broadcast, at once, for a message below every communicator's threshold
/// while the session is active: one load, the datatype's size (a table lookup for the
/// predefined ones) and one compare decide; `Some(status)` when taken. Inlined into the
/// exported entry points ahead of everything else, because the shim's cost on this path is
/// the whole interposition overhead: it calls nothing but the
/// host, so the entry point needs no stack frame. Anything it cannot decide without a call
/// (a derived datatype, a negative count) goes the long way, which hands MPI_COMM_NULL,
/// MPI_IN_PLACE and bad arguments to the host just as this path does. Cannot panic.
#[inline(always)]
pub fn bcast_below_threshold(
    buf: *mut c_void,
    count: i64,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    let (floor, concurrent) = FAST.decide()?;
    match host::buffer::predefined_payload_bytes(count, dtype) {
        Some(b) if b < floor as u64 => {
            FAST.count_host_call(concurrent);
            Some(host::pmpi_bcast(buf, count, dtype, root, comm))
        }
        _ => None,
    }
}

/// `count` is 64-bit: MPI_Bcast and the MPI-4 large-count MPI_Bcast_c take this one path.
pub fn bcast(
    buf: *mut c_void,
    count: i64,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if comm == host::comm_null() || host::is_in_place(buf) || count < 0 {
        return to_host(buf, count, dtype, root, comm, || {
            "MPI_COMM_NULL, MPI_IN_PLACE or a negative count (the host reports it)".into()
        });
    }
    // The fast path, first: a started session knows MPI is active without asking it, and a
    // message below every communicator's threshold needs one PMPI call to be sent on.
    let session = match session::started() {
        Some(s) if s.active() => s,
        Some(_) => {
            return to_host(buf, count, dtype, root, comm, || {
                "after MPI_Finalize".into()
            })
        }
        None if !host::is_active() => {
            return to_host(buf, count, dtype, root, comm, || "MPI is not active".into())
        }
        None => session_or_die(),
    };
    if session.cfg.disable {
        return to_host(buf, count, dtype, root, comm, || "MPICAST_DISABLE".into());
    }
    match host::buffer::payload_bytes(count, dtype) {
        // Active and enabled here (the session started), so this is the session's floor.
        Some(b) if b >= FAST.floor() as u64 => {}
        Some(b) => {
            return to_host(buf, count, dtype, root, comm, || {
                format!(
                    "{b} bytes, below the smallest threshold of any communicator ({} bytes)",
                    FAST.floor()
                )
            })
        }
        None => {
            return to_host(buf, count, dtype, root, comm, || {
                "a datatype the host rejects (it reports the error)".into()
            })
        }
    }
    let (Ok(false), Ok(size)) = (host::comm::is_inter(comm), host::comm::size(comm)) else {
        return to_host(buf, count, dtype, root, comm, || {
            "an intercommunicator (or one the host rejects)".into()
        });
    };
    if root < 0 || root as u32 >= size {
        return to_host(buf, count, dtype, root, comm, || {
            "a root outside the communicator (the host reports it)".into()
        });
    }
    let Ok(mut ub) = UserBuf::describe(buf, count, dtype, comm) else {
        return to_host(buf, count, dtype, root, comm, || {
            "a datatype mpicast cannot describe".into()
        });
    };
    let bytes = ub.bytes();
    if !ub.is_contiguous() && !host::buffer::packable(bytes) {
        return to_host(buf, count, dtype, root, comm, || {
            format!("{bytes} bytes of a non-contiguous datatype: more than MPI_Pack takes")
        });
    }
    let state = match session.comm_state(comm, "MPI_Bcast") {
        Ok(s) => s,
        Err(e) => return host::call_errhandler(comm, e.0),
    };
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    let st = &mut *st;
    match &st.path {
        Path::Alone => {
            stats::add(&COUNTERS.bcast_mcast, 1);
            return host::SUCCESS;
        }
        Path::Host(why) => {
            return to_host(buf, count, dtype, root, comm, || {
                format!("this communicator uses the host MPI ({why})")
            })
        }
        Path::Mcast(_) | Path::Hier(_) => {}
    }
    if bytes < st.min_bytes {
        return to_host(buf, count, dtype, root, comm, || {
            format!(
                "{bytes} bytes, below this communicator's threshold of {} bytes",
                st.min_bytes
            )
        });
    }
    stats::add(&COUNTERS.bcast_mcast, 1);
    if bytes == 0 {
        // Nothing to move, and MPI_Bcast does not synchronise.
        return host::SUCCESS;
    }
    st.seq += 1;
    let sync = match st.cfg.sync {
        _ if bytes <= st.cfg.eager_bytes => algo::Sync::Eager,
        SyncAlgo::Tree => algo::Sync::Tree,
        SyncAlgo::Linear => algo::Sync::Linear,
    };
    let root = root as u32;
    if st.cfg.verbose >= 2 {
        crate::session::say(&format!(
            "mpicast: rank {} MPI_Bcast op {} root {root} {bytes} B by multicast ({})",
            st.rank,
            st.seq,
            match sync {
                algo::Sync::Eager => "eager, no scouts",
                algo::Sync::Tree => "tree scouts",
                algo::Sync::Linear => "linear scouts",
            }
        ));
    }
    let (private, rank, size, seq) = (st.private.0, st.rank, st.size, st.seq);
    let (result, sent) = match &mut st.path {
        Path::Mcast(chan) => (
            mcast_bcast(chan, private, rank, size, seq, root, sync, &mut ub),
            rank == root,
        ),
        Path::Hier(h) => hier::bcast(h, rank, seq, root, sync, &mut ub),
        Path::Alone | Path::Host(_) => unreachable!("handled above"),
    };
    // A root that returned before its receivers acknowledged owes them until they have.
    super::duty::register(&state, st);
    match result {
        Ok(Ok(())) => {
            if sent {
                stats::add(&COUNTERS.bytes_mcast, bytes as u64);
            }
            host::SUCCESS
        }
        Ok(Err(e)) => fail(comm, e),
        Err(e) => host::call_errhandler(comm, e.0),
    }
}

/// One broadcast of `ub` from `root` over a multicast channel among `size` ranks of
/// `private`: the root sends, the others receive.
#[allow(clippy::too_many_arguments)]
pub(super) fn mcast_bcast(
    chan: &mut Channel,
    private: MPI_Comm,
    rank: u32,
    size: u32,
    seq: u64,
    root: u32,
    sync: algo::Sync,
    ub: &mut UserBuf,
) -> MpiResult<Result<(), OpError>> {
    match chan.before_op(private, rank, size, seq) {
        Ok(Mode::Host) => return ub.host_bcast(root, private).map(Ok),
        Ok(Mode::Mcast { .. }) => {}
        Err(OpError::Mpi(e)) => return Err(e),
        Err(e) => return Ok(Err(e)),
    }
    let sched = algo::bcast(sync, size, root, rank, ub.bytes());
    let r = if rank == root {
        ub.with_send_bytes(|d| {
            let sent = run(
                chan,
                private,
                rank,
                size,
                seq,
                Kind::Bcast,
                Data::Send(d),
                &sched,
                sync == algo::Sync::Eager,
            );
            sent.map(|_| ())
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
                sync == algo::Sync::Eager,
            )
        })
    };
    match r {
        // Its root switched it: every rank carries it by the host MPI, then probes.
        Ok(Err(OpError::Switched)) => {
            ub.host_bcast(root, private)?;
            Ok(chan.after_switch(private, rank, size, seq))
        }
        r => r,
    }
}
