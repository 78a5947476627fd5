//! The host's blocking calls that mpicast does not otherwise run, kept from stopping the
//! forwarding of multicasts routed through this rank (`host::progress`): while a forwarding
//! engine exists in the process, a blocking collective on a communicator that lies within an
//! engine's (`host::progress::covered`: every rank then makes the same choice, as MPI
//! requires of non-blocking collectives) runs as its non-blocking form, polled with the
//! process's progress; communicator creation there first waits, polled, for every rank to
//! arrive; `MPI_Sendrecv` and `MPI_Sendrecv_replace` become two non-blocking calls (through
//! mpicast's own, so dynamic broadcasts may complete their receive). The point-to-point
//! calls, waits and probes are in `ffi::dbcast`.
//!
//! A root that owes an eager broadcast's repairs (`coll::duty`) makes these calls take their
//! slow path as well: the point-to-point ones poll the duty, and a collective that stays the
//! host's blocking call settles it first (`host::progress::collective`).
//!
//! Cost: while no engine exists and nothing is owed, one load, a branch and a jump to the
//! host's call.

use super::dbcast::{MPI_Irecv, MPI_Isend, MPI_Wait};
use super::guard_comm;
use crate::host::buffer::UserBuf;
use crate::host::{self, MPI_Comm, MPI_Datatype, MPI_Request};
use mpi_sys::{MPI_Info, MPI_Op, MPI_Status};
use std::os::raw::{c_int, c_void};

/// Defines the blocking collective `$name` on communicator `$comm` (`intercept!`): with an
/// engine, `host::progress::collective` with `$ipmpi`.
macro_rules! collective {
    (
        $(#[$doc:meta])*
        fn $name:ident => $pmpi:ident / $ipmpi:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:ident
    ) => {
        intercept! {
            $(#[$doc])*
            ///
            /// # Safety
            /// The arguments of the MPI call of this name.
            fn $name => $pmpi($($arg: $ty),*) on $comm {
                guard_comm(
                    stringify!($name),
                    $comm,
                    || {
                        host::progress::collective(
                            $comm,
                            // SAFETY: the application's arguments.
                            || unsafe { mpi_sys::$pmpi($($arg),*) },
                            // SAFETY: as above; the request is waited for before returning.
                            |r| unsafe { mpi_sys::$ipmpi($($arg,)* r) },
                        )
                    },
                )
            }
        }
    };
}

collective! {
    /// MPI_Allreduce, polled where a forwarding engine covers `comm`.
    fn MPI_Allreduce => PMPI_Allreduce / PMPI_Iallreduce(
        sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
        op: MPI_Op, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Reduce, polled where a forwarding engine covers `comm`.
    fn MPI_Reduce => PMPI_Reduce / PMPI_Ireduce(
        sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
        op: MPI_Op, root: c_int, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Allgather, polled where a forwarding engine covers `comm`.
    fn MPI_Allgather => PMPI_Allgather / PMPI_Iallgather(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Allgatherv, polled where a forwarding engine covers `comm`.
    fn MPI_Allgatherv => PMPI_Allgatherv / PMPI_Iallgatherv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
        recvtype: MPI_Datatype, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Gather, polled where a forwarding engine covers `comm`.
    fn MPI_Gather => PMPI_Gather / PMPI_Igather(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int,
        comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Gatherv, polled where a forwarding engine covers `comm`.
    fn MPI_Gatherv => PMPI_Gatherv / PMPI_Igatherv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
        recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Scatter, polled where a forwarding engine covers `comm`.
    fn MPI_Scatter => PMPI_Scatter / PMPI_Iscatter(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int,
        comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Scatterv, polled where a forwarding engine covers `comm`.
    fn MPI_Scatterv => PMPI_Scatterv / PMPI_Iscatterv(
        sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int,
        sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int,
        recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Alltoall, polled where a forwarding engine covers `comm`.
    fn MPI_Alltoall => PMPI_Alltoall / PMPI_Ialltoall(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Alltoallv, polled where a forwarding engine covers `comm`.
    fn MPI_Alltoallv => PMPI_Alltoallv / PMPI_Ialltoallv(
        sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
        rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Alltoallw, polled where a forwarding engine covers `comm`.
    fn MPI_Alltoallw => PMPI_Alltoallw / PMPI_Ialltoallw(
        sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
        sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
        rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Scan, polled where a forwarding engine covers `comm`.
    fn MPI_Scan => PMPI_Scan / PMPI_Iscan(
        sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
        op: MPI_Op, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Exscan, polled where a forwarding engine covers `comm`.
    fn MPI_Exscan => PMPI_Exscan / PMPI_Iexscan(
        sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
        op: MPI_Op, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Reduce_scatter, polled where a forwarding engine covers `comm`.
    fn MPI_Reduce_scatter => PMPI_Reduce_scatter / PMPI_Ireduce_scatter(
        sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int,
        datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
    ) on comm
}

collective! {
    /// MPI_Reduce_scatter_block, polled where a forwarding engine covers `comm`.
    fn MPI_Reduce_scatter_block => PMPI_Reduce_scatter_block / PMPI_Ireduce_scatter_block(
        sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int,
        datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
    ) on comm
}

intercept! {
    /// MPI_Comm_dup: MPI_Comm_idup, polled, where a forwarding engine covers `comm`; with
    /// MPICAST_FANOUT=on, the new communicator gets fan-out detection (`super::adopt`).
    ///
    /// # Safety
    /// The arguments of MPI_Comm_dup.
    fn MPI_Comm_dup => PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) on comm {
        let rc = guard_comm("MPI_Comm_dup", comm, || {
            host::progress::collective(
                comm,
                // SAFETY: the application's arguments.
                || unsafe { mpi_sys::PMPI_Comm_dup(comm, newcomm) },
                // SAFETY: as above; the request is waited for before returning.
                |r| unsafe { mpi_sys::PMPI_Comm_idup(comm, newcomm, r) },
            )
        });
        // SAFETY: the host wrote the new communicator on success.
        super::adopt(rc, if rc == host::SUCCESS { unsafe { *newcomm } } else { host::comm_null() })
    }
}

/// Defines communicator creation `$name` on `$comm`, which has no non-blocking form
/// (`intercept!`): with an engine, where it covers `$comm`, a polled barrier first
/// (`host::progress::gather_first`), so that the host's call finds every rank there.
macro_rules! creation {
    (fn $name:ident => $pmpi:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:ident into $new:ident) => {
        intercept! {
            #[doc = concat!(
                "`", stringify!($name), "`: every rank gathered first, polled, where a ",
                "forwarding engine covers the communicator.\n\n# Safety\nThe arguments of the ",
                "MPI call."
            )]
            fn $name => $pmpi($($arg: $ty),*) on $comm {
                let rc = guard_comm(
                    stringify!($name),
                    $comm,
                    || host::progress::gather_first($comm),
                );
                if rc != host::SUCCESS {
                    return rc;
                }
                // SAFETY: the application's arguments.
                let rc = unsafe { mpi_sys::$pmpi($($arg),*) };
                // SAFETY: the host wrote the new communicator (or MPI_COMM_NULL) on success.
                super::adopt(rc, if rc == host::SUCCESS { unsafe { *$new } } else { host::comm_null() })
            }
        }
    };
}

creation! {
    fn MPI_Comm_split => PMPI_Comm_split(
        comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm,
    ) on comm into newcomm
}

creation! {
    fn MPI_Comm_split_type => PMPI_Comm_split_type(
        comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm,
    ) on comm into newcomm
}

creation! {
    fn MPI_Comm_create => PMPI_Comm_create(
        comm: MPI_Comm, group: mpi_sys::MPI_Group, newcomm: *mut MPI_Comm,
    ) on comm into newcomm
}

intercept! {
    /// MPI_Sendrecv: while a forwarding engine exists, mpicast's own MPI_Irecv and MPI_Isend
    /// (so that a dynamic broadcast may complete the receive, and the send keeps its order
    /// against this rank's broadcasts), then its polled waits.
    ///
    /// # Safety
    /// The arguments of MPI_Sendrecv.
    fn MPI_Sendrecv => PMPI_Sendrecv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) on comm {
        guard_comm(
            "MPI_Sendrecv",
            comm,
            || {
                let mut rr = host::progress::request_null();
                // SAFETY: the application's receive arguments; waited for below.
                let rc = unsafe {
                    MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &mut rr)
                };
                if rc != host::SUCCESS {
                    return rc;
                }
                // SAFETY: the application's send arguments, the receive's request.
                unsafe {
                    send_then_wait(sendbuf, sendcount, sendtype, dest, sendtag, comm, rr, status)
                }
            },
        )
    }
}

/// Posts the send half of a send-receive, then waits for both halves (the receive, `rr`,
/// already posted): the first error, the receive's status.
///
/// # Safety
/// The arguments of the send; `rr` is a live receive request; `status` as for MPI_Recv.
#[allow(clippy::too_many_arguments)]
unsafe fn send_then_wait(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    comm: MPI_Comm,
    mut rr: MPI_Request,
    status: *mut MPI_Status,
) -> c_int {
    let mut sr = host::progress::request_null();
    // SAFETY: the application's arguments.
    let rc = unsafe { MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &mut sr) };
    // SAFETY: our requests; the application's status.
    let rrc = unsafe { MPI_Wait(&mut rr, status) };
    if rc != host::SUCCESS {
        return rc;
    }
    // SAFETY: our request.
    let src = unsafe { MPI_Wait(&mut sr, host::status_ignore()) };
    if rrc != host::SUCCESS {
        rrc
    } else {
        src
    }
}

intercept! {
    /// MPI_Sendrecv_replace: while a forwarding engine exists, the message is received into a
    /// buffer of ours (its bytes in type-map order) while the application's buffer is sent,
    /// then stored into the application's buffer; as MPI_Sendrecv otherwise.
    ///
    /// # Safety
    /// The arguments of MPI_Sendrecv_replace.
    fn MPI_Sendrecv_replace => PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) on comm {
        let host_call = || {
            // SAFETY: the application's arguments.
            unsafe {
                mpi_sys::PMPI_Sendrecv_replace(
                    buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
                )
            }
        };
        guard_comm(
            "MPI_Sendrecv_replace",
            comm,
            || {
                let ub = UserBuf::describe(buf, i64::from(count.max(0)), datatype, comm);
                let Ok(mut ub) = ub else {
                    // Arguments the host reports on.
                    return host_call();
                };
                let mut tmp = vec![0u8; ub.bytes()];
                let Ok(len) = c_int::try_from(tmp.len()) else {
                    return host_call();
                };
                let mut st = host::recv::HostStatus::empty();
                let mut rr = host::progress::request_null();
                // SAFETY: our buffer of `len` bytes, alive until the receive completed below.
                let rc = unsafe {
                    MPI_Irecv(
                        tmp.as_mut_ptr() as *mut c_void,
                        len,
                        host::byte(),
                        source,
                        recvtag,
                        comm,
                        &mut rr,
                    )
                };
                if rc != host::SUCCESS {
                    return rc;
                }
                // SAFETY: the application's buffer as the send; our receive and status.
                let rc = unsafe {
                    send_then_wait(buf, count, datatype, dest, sendtag, comm, rr, &mut st.0)
                };
                if rc != host::SUCCESS {
                    return rc;
                }
                let got = usize::try_from(host::recv::status_bytes(&st))
                    .unwrap_or(usize::MAX)
                    .min(tmp.len());
                let whole = got == tmp.len();
                let stored = ub.with_recv_bytes(|dst| -> Result<Option<usize>, ()> {
                    dst[..got].copy_from_slice(&tmp[..got]);
                    Ok(if whole { None } else { Some(got) })
                });
                if let Err(e) = stored {
                    return e.0;
                }
                if !status.is_null() && status != host::status_ignore() {
                    // SAFETY: writable, as the application promises.
                    unsafe { status.write(st.0) };
                }
                host::SUCCESS
            },
        )
    }
}
