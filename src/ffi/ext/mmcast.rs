//! Many multicasts at once (seed 003: agent-based multicast on switched networks):
//! MPICAST_Mmcast, a collective in which every rank may multicast its own buffer to its own
//! set of ranks and receives what the others multicast to it. The work is `coll::mmcast`;
//! here the C arguments become byte regions (derived datatypes packed before and unpacked
//! after).

use super::super::guard;
use super::{intra_size, ARG, ERR_MPI, INTERNAL, NULL_ARG, OK, TOPOLOGY};
use crate::coll::{self, MmcastError, MmcastRecv};
use crate::host::{self, buffer::UserBuf, p2p::Region, MPI_Comm, MPI_Datatype};
use crate::session;
use std::os::raw::{c_int, c_void};

/// Collective over `comm`: this rank multicasts `sendcount` elements of `sendtype` at
/// `sendbuf` to the `ndests` ranks in `dests` (none: it multicasts nothing; distinct, not
/// itself), and receives from each of the `nsources` ranks in `sources` (distinct, not
/// itself) the message it multicasts, `recvcounts[i]` elements of `recvtype` at `recvbuf` +
/// `displs[i]` times the extent of `recvtype`. What a rank expects must be what is sent to it:
/// `sources` lists exactly the ranks whose `dests` name this rank, and the sizes in bytes
/// agree (the type signatures match, as in MPI). The messages are scheduled by the algorithm of
/// MPICAST_MMCAST_ALGO on the switch topology of MPICAST_SWITCH_TOPOLOGY (docs/agents.md) and
/// travel point to point over the host MPI on a duplicate of `comm` of mpicast's own; ranks
/// relay only multicasts they receive themselves. Returns when this rank's part is done: its
/// buffer sent on and its receives complete.
///
/// MPICAST_ERR_ARG on every rank when some rank's arguments are out of range or do not agree
/// with the others' (that rank's message on stderr; nothing was sent); MPICAST_ERR_TOPOLOGY on
/// every rank when the switch topology cannot be used (rank 0 says why);
/// MPICAST_ERR_NULL_ARG (on this rank only, as the others cannot know) for a NULL list or
/// buffer that is needed.
///
/// # Safety
/// `sendbuf` holds `sendcount` elements of `sendtype` (NULL when nothing is sent); `dests`
/// holds `ndests` ints, `sources`, `recvcounts` and `displs` `nsources` ints each (NULL when
/// the count is 0); the receive areas are writable and do not overlap.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPICAST_Mmcast(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dests: *const c_int,
    ndests: c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    sources: *const c_int,
    nsources: c_int,
    comm: MPI_Comm,
) -> c_int {
    guard(
        "MPICAST_Mmcast",
        || INTERNAL,
        || {
            let Some(_) = intra_size(comm) else {
                return ARG;
            };
            if sendcount < 0 || ndests < 0 || nsources < 0 {
                return ARG;
            }
            if (ndests > 0 && (dests.is_null() || (sendbuf.is_null() && sendcount > 0)))
                || (nsources > 0 && (sources.is_null() || recvcounts.is_null()))
            {
                return NULL_ARG;
            }
            // SAFETY: the lengths the caller promises.
            let ints = |p: *const c_int, n: c_int| -> &[c_int] {
                if n == 0 || p.is_null() {
                    &[]
                } else {
                    unsafe { std::slice::from_raw_parts(p, n as usize) }
                }
            };
            let (dl, sl, cl) = (
                ints(dests, ndests),
                ints(sources, nsources),
                ints(recvcounts, nsources),
            );
            let dl_ = ints(displs, if displs.is_null() { 0 } else { nsources });
            // Out-of-range ranks travel as u32::MAX and are refused collectively.
            let to_rank = |r: c_int| u32::try_from(r).unwrap_or(u32::MAX);
            let dest_ranks: Vec<u32> = dl.iter().map(|&d| to_rank(d)).collect();

            // The send side: in place, or packed.
            let mut packed_send: Vec<u8> = Vec::new();
            let send = if ndests == 0 {
                Region::empty()
            } else {
                let Ok(sub) =
                    UserBuf::describe(sendbuf as *mut c_void, i64::from(sendcount), sendtype, comm)
                else {
                    return ARG;
                };
                match sub.contiguous_ptr() {
                    // SAFETY: the datatype says these bytes are the application's data, lent
                    // for the call; only read (sends).
                    Some(p) => unsafe { Region::new(p, sub.bytes()) },
                    None => {
                        if sub
                            .with_send_bytes(|b| packed_send.extend_from_slice(b))
                            .is_err()
                        {
                            return ERR_MPI;
                        }
                        // SAFETY: our own vector, alive until the run ends below.
                        unsafe { Region::new(packed_send.as_mut_ptr(), packed_send.len()) }
                    }
                }
            };

            // The receive side: one region per expected message.
            let extent = if nsources > 0 {
                match host::buffer::extent(recvtype) {
                    Ok(e) => e,
                    Err(_) => return ARG,
                }
            } else {
                0
            };
            let mut bufs: Vec<UserBuf> = Vec::with_capacity(sl.len());
            let mut tmps: Vec<Vec<u8>> = Vec::with_capacity(sl.len());
            let mut recvs: Vec<MmcastRecv> = Vec::with_capacity(sl.len());
            for i in 0..sl.len() {
                if cl[i] < 0 {
                    return ARG;
                }
                let disp = dl_.get(i).copied().unwrap_or(0) as isize;
                let at = (recvbuf as *mut u8).wrapping_offset(disp * extent) as *mut c_void;
                if recvbuf.is_null() && cl[i] > 0 {
                    return NULL_ARG;
                }
                let Ok(ub) = UserBuf::describe(at, i64::from(cl[i]), recvtype, comm) else {
                    return ARG;
                };
                let region = match ub.contiguous_ptr() {
                    // SAFETY: the application lent this area for writing during the call.
                    Some(p) => unsafe { Region::new(p, ub.bytes()) },
                    None => {
                        let mut t = vec![0u8; ub.bytes()];
                        // SAFETY: our own vector, kept in `tmps` (its heap block does not move)
                        // until it is unpacked below.
                        let r = unsafe { Region::new(t.as_mut_ptr(), t.len()) };
                        tmps.push(t);
                        r
                    }
                };
                recvs.push(MmcastRecv {
                    source: to_rank(sl[i]),
                    region,
                });
                bufs.push(ub);
            }
            match coll::mmcast(comm, send, &dest_ranks, &recvs) {
                Ok(()) => {}
                Err(e) => return report(comm, e),
            }
            drop(packed_send);
            // Unpack what came into temporary buffers, in order.
            let mut t = tmps.into_iter();
            for ub in bufs.iter_mut() {
                if ub.contiguous_ptr().is_some() {
                    continue;
                }
                let Some(tmp) = t.next() else { break };
                let r = ub.with_recv_bytes(|dst| {
                    dst.copy_from_slice(&tmp);
                    Ok::<_, ()>(None)
                });
                if !matches!(r, Ok(Ok(()))) {
                    return ERR_MPI;
                }
            }
            OK
        },
    )
}

/// The status of a failed call, with its message on stderr (rank 0's for what every rank
/// knows alike).
fn report(comm: MPI_Comm, e: MmcastError) -> c_int {
    let rank0 = host::comm::rank(comm).is_ok_and(|r| r == 0);
    match e {
        MmcastError::Arg(m) => {
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
