//! What a user calls, below the C boundary: each call decides between the host MPI (PMPI)
//! and mpicast, takes its schedule from `algo`, and runs it over the communicator's transport.
//! Arguments we do not handle go to PMPI untouched, so the host reports its own errors for
//! them. Knows no C types beyond MPI handles, and nothing of datagrams (that is `transport`).
//!
//! - `bcast`: MPI_Bcast (scouts, then one reliable multicast), and the size threshold that
//!   the exported entry reads first;
//! - `barrier`: MPI_Barrier (scouts up the tree, one multicast release);
//! - `hier`: the two-level forms of both for hosts holding several ranks (`MPICAST_TOPO`);
//! - `info`: mpicast's MPI_Info keys, noted after the host's MPI_Comm_set_info and
//!   MPI_Comm_dup_with_info;
//! - `mmcast`: MPICAST_Mmcast, many multicasts at once on the switch topology
//!   (`algo::agents`);
//! - `goal`: the runs of GOAL programs of MPICAST_Goal_* (`ffi::ext::goal` is their C side);
//! - `duty`: the repairs an eager broadcast's root still owes its receivers.

mod barrier;
mod bcast;
pub mod duty;
pub mod goal;
mod hier;
mod info;
mod mmcast;

pub use barrier::barrier;
pub use bcast::{bcast, bcast_below_threshold};
pub use info::{dup_with_info, set_info};
pub use mmcast::{mmcast, switch_topo_ids, MmcastComm, MmcastError, MmcastRecv};

use crate::host::{self, MPI_Comm};
use crate::sched::{Execution, Schedule};
use crate::session::{self, Session};
use crate::transport::op::{Data, Kind, OpBackend, OpError};
use crate::transport::Channel;
use std::os::raw::c_int;
use std::sync::OnceLock;

/// The session, or the end of the job with a clear message: a library built for the other
/// MPI flavour cannot even name the communicator to abort, and a bad MPICAST_* setting must
/// never be ignored.
pub(crate) fn session_or_die() -> &'static Session {
    static FLAVOUR: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(msg) = FLAVOUR.get_or_init(host::flavour::check) {
        crate::session::say(msg);
        host::exit_now(1);
    }
    match session::get() {
        Ok(_) => session::started().expect("the session has just started"),
        // Every rank meets a bad setting in its environment: one of them says it.
        Err(msg) => crate::presence::die_once(host::comm_world(), || msg),
    }
}

/// Runs one operation's schedule to completion, after what an earlier eager broadcast of
/// this rank still owes (`Channel::settle`). `eager`: a broadcast without scouts.
#[allow(clippy::too_many_arguments)]
fn run(
    chan: &mut Channel,
    private: MPI_Comm,
    rank: u32,
    size: u32,
    seq: u64,
    kind: Kind,
    data: Data<'_>,
    sched: &Schedule,
    eager: bool,
) -> Result<Option<usize>, OpError> {
    chan.settle(private)?;
    chan.absorb(private)?;
    let mut be = OpBackend::new(chan, private, rank, size, seq, kind, data).eager(eager);
    let mut ex = Execution::new(sched);
    ex.start(&mut be)?;
    ex.wait(&mut be)?;
    let received = be.received();
    drop(be);
    chan.ops_done += 1;
    Ok(received)
}

/// Turns an operation failure into what MPI promises: the communicator's error handler for
/// host errors, and an abort with a message for a multicast group that stopped delivering
/// (a silent hang is never an option).
fn fail(comm: MPI_Comm, e: OpError) -> c_int {
    match e {
        OpError::Mpi(e) => host::call_errhandler(comm, e.0),
        OpError::Stalled {
            msg,
            comm: numbered,
            rank,
            missing,
            elsewhere,
            stopped,
        } => crate::presence::die_once(comm, || {
            let why = match session::started() {
                Some(s) if !missing.is_empty() => {
                    crate::presence::explain(numbered.0, rank, &s.cfg, &missing, &elsewhere)
                }
                _ => String::new(),
            };
            // Multicasts routed through this rank that it could not pass on, if any.
            let held = crate::transport::forward::describe_pending_all();
            format!("mpicast: {msg}{stopped}{why}{held}\n  aborting")
        }),
        OpError::Io(e) => {
            crate::session::say(&format!(
                "mpicast: socket error during a collective: {e}; aborting"
            ));
            host::abort(comm, 1)
        }
        OpError::Switched => {
            crate::session::say(
                "mpicast: internal error: a switched operation was not carried; aborting",
            );
            host::abort(comm, 1)
        }
        OpError::Unsupported(what) => {
            crate::session::say(&format!("mpicast: internal error: {what}; aborting"));
            host::abort(comm, 1)
        }
        OpError::Truncated(msg) => {
            crate::session::say(&format!("mpicast: {msg}; aborting"));
            host::abort(comm, 1)
        }
        // What the host MPIs report for the same error, in mpicast's words: the communicator's
        // error handler decides (fatal by default, which prints the string).
        OpError::SizeMismatch { root, sent, posted } => {
            let class = if sent > posted {
                mpi_sys::MPI_ERR_TRUNCATE
            } else {
                mpi_sys::MPI_ERR_OTHER
            } as c_int;
            let msg = format!(
                "mpicast: MPI_Bcast: message sizes do not match: the root, rank {root}, sends \
                 {sent} bytes, this rank posted {posted} ({})",
                if sent > posted {
                    "message truncated"
                } else {
                    "a shorter message than posted"
                }
            );
            host::raise(comm, class, &msg)
        }
    }
}
