//! The one place where an internal error becomes what a C caller sees: an MPI error code for
//! the MPI calls mpicast replaces or intercepts (`engine_mpi_code`), an `MPICAST_Status` for
//! the extension calls (`engine_status`, `goal_status`, `goal_fault_status`,
//! `mmcast_status`). An error of the host MPI itself (`host::MpiError`) is the host's code as
//! it is, or MPICAST_ERR_MPI for an extension call. Calling a communicator's error handler is the caller's part (`guard_comm`).

use super::ext::{check, MPICAST_Status, ARG, ERR_MPI, TOPOLOGY};
use crate::coll::goal::GoalFault;
use crate::coll::MmcastError;
use crate::host::{self, MPI_Comm};
use crate::session;
use crate::transport::forward::EngineError;
use crate::transport::goal::GoalError;
use std::os::raw::c_int;

/// An MPI call's result for an engine error: the host's code for an MPI error; an engine that
/// cannot go on ends the job (`fatal`).
pub(crate) fn engine_mpi_code(e: EngineError) -> c_int {
    match e {
        EngineError::Mpi(m) => m.0,
        EngineError::Full(m) | EngineError::Protocol(m) => fatal(&m),
    }
}

/// An extension call's status for an engine error: MPICAST_ERR_MPI for an MPI error; an
/// engine that cannot go on ends the job (`fatal`).
pub(crate) fn engine_status(e: EngineError) -> c_int {
    match e {
        EngineError::Mpi(_) => ERR_MPI,
        EngineError::Full(m) | EngineError::Protocol(m) => fatal(&m),
    }
}

/// An extension call's status for a GOAL run that failed: MPICAST_ERR_MPI when the host MPI or
/// a multicast action failed, MPICAST_ERR_GOAL_INVALID when the program did (a user function's
/// code, a buffer reference out of range, a schedule that is not one).
pub(crate) fn goal_status(e: &GoalError) -> c_int {
    match e {
        GoalError::Mpi(_) | GoalError::Mcast(_) => ERR_MPI,
        _ => MPICAST_Status::MPICAST_ERR_GOAL_INVALID as c_int,
    }
}

/// A GOAL handle's call's status for `e` (its message is the handle's MPICAST_Goal_error):
/// MPICAST_ERR_GOAL_INVALID for a program or argument that is not valid,
/// MPICAST_ERR_GOAL_STATE for a call that cannot be made now, MPICAST_ERR_MPI when setting up
/// the communicator's multicast failed, and a run's failure as `goal_status` says.
pub(crate) fn goal_fault_status(e: &GoalFault) -> c_int {
    match e {
        GoalFault::Invalid(_) => MPICAST_Status::MPICAST_ERR_GOAL_INVALID as c_int,
        GoalFault::State(_) => MPICAST_Status::MPICAST_ERR_GOAL_STATE as c_int,
        GoalFault::Setup(_) => ERR_MPI,
        GoalFault::Start(e) | GoalFault::Run(e) => goal_status(e),
    }
}

/// MPICAST_Mmcast's status for `e`, with its message on stderr (rank 0's for what every rank
/// of `comm` knows alike) and, for an argument, in MPICAST_Last_error.
pub(crate) fn mmcast_status(comm: MPI_Comm, e: MmcastError) -> c_int {
    let rank0 = host::comm::rank(comm).is_ok_and(|r| r == 0);
    match e {
        MmcastError::Arg(m) => {
            check::remember(&m);
            // A rank's own mistake names it; the summary of the others' is said by rank 0.
            if m.contains("(rank ") || rank0 {
                session::say(&m);
            }
            ARG
        }
        MmcastError::Topology(m) => {
            if rank0 {
                session::say(&format!("mpicast: MPICAST_Mmcast: {m}"));
            }
            TOPOLOGY
        }
        MmcastError::Mpi(_) => ERR_MPI,
        MmcastError::Run(e) => {
            session::say(&format!("mpicast: MPICAST_Mmcast: {e}"));
            ERR_MPI
        }
    }
}

/// An engine that cannot go on (unexpected data past its bound, a broken segment) ends the job
/// with its reason: a multicast cannot be lost, and no error code could say what was.
fn fatal(why: &str) -> ! {
    session::say(&format!("mpicast: {why}; aborting"));
    host::abort(host::comm_world(), 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::MpiError;
    use crate::sched::func::FuncError;
    use crate::transport::op::OpError;

    /// The host's own code comes through an MPI call; an extension call says MPICAST_ERR_MPI.
    #[test]
    fn an_mpi_error_of_an_engine_is_the_hosts_code_or_err_mpi() {
        assert_eq!(engine_mpi_code(EngineError::Mpi(MpiError(17))), 17);
        assert_eq!(engine_status(EngineError::Mpi(MpiError(17))), ERR_MPI);
    }

    /// What failed in the MPI or the network is MPICAST_ERR_MPI; what failed in the program
    /// is MPICAST_ERR_GOAL_INVALID.
    #[test]
    fn a_goal_run_fails_with_err_mpi_only_for_mpi_and_multicast() {
        let invalid = MPICAST_Status::MPICAST_ERR_GOAL_INVALID as c_int;
        let io = std::io::Error::other("x");
        let cases = [
            (GoalError::Mpi(MpiError(1)), ERR_MPI),
            (GoalError::Mcast(OpError::Io(io)), ERR_MPI),
            (GoalError::Func(FuncError::User(3)), invalid),
            (
                GoalError::User {
                    id: 1,
                    func: 2,
                    code: 3,
                },
                invalid,
            ),
            (GoalError::OutOfRange { id: 1, slot: 2 }, invalid),
            (GoalError::Schedule("x".into()), invalid),
        ];
        for (e, want) in cases {
            assert_eq!(goal_status(&e), want, "{e}");
        }
    }

    /// A call that cannot be made now, a program that is not valid, a failed setup and a run's
    /// failure each have their own status; a run's is `goal_status`'s.
    #[test]
    fn a_goal_call_fails_with_the_status_of_its_fault() {
        let state = MPICAST_Status::MPICAST_ERR_GOAL_STATE as c_int;
        let invalid = MPICAST_Status::MPICAST_ERR_GOAL_INVALID as c_int;
        let cases = [
            (GoalFault::State("s".into()), state),
            (GoalFault::Invalid("i".into()), invalid),
            (GoalFault::Setup("m".into()), ERR_MPI),
            (GoalFault::Start(GoalError::Mpi(MpiError(1))), ERR_MPI),
            (GoalFault::Run(GoalError::Schedule("x".into())), invalid),
        ];
        for (e, want) in cases {
            assert_eq!(goal_fault_status(&e), want, "{e}");
        }
        let run = GoalFault::Run(GoalError::Schedule("x".into())).to_string();
        assert!(run.starts_with("goal: run failed: "), "{run}");
        let start = GoalFault::Start(GoalError::Schedule("x".into())).to_string();
        assert!(start.starts_with("goal: start failed: "), "{start}");
    }
}
