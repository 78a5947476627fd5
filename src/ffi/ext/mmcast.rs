//! Many multicasts at once (seed 003: agent-based multicast on switched networks):
//! MPICAST_Mmcast, a collective in which every rank may multicast its own buffer to its own
//! set of ranks and receives what the others multicast to it. The work is `coll::mmcast`;
//! here the C arguments become byte regions (derived datatypes packed before and unpacked
//! after).

use super::super::guard;
use super::{check, ERR_MPI, INTERNAL, OK};
use crate::coll::{self, MmcastRecv};
use crate::ffi::error::mmcast_status;
use crate::host::{self, buffer::UserBuf, p2p::Region, MPI_Comm, MPI_Datatype};
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
/// MPICAST_ERR_ARG on every rank when some rank's arguments are out of range, NULL where
/// needed, or do not agree with the others' (that rank's message on stderr, naming the
/// argument; nothing was sent; the next call starts afresh); MPICAST_ERR_TOPOLOGY on every
/// rank when the switch topology cannot be used (rank 0 says why). A communicator that is
/// MPI_COMM_NULL, freed or an intercommunicator is refused on the ranks that pass it
/// (MPICAST_ERR_ARG) before anything is exchanged.
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
            const CALL: &str = "MPICAST_Mmcast";
            // Only what cannot be agreed with the other ranks is refused here, on this rank.
            if let Err(s) = check::mpi_up(CALL).and_then(|()| check::intra(CALL, comm, "comm")) {
                return s;
            }
            let _ = check::session();
            // SAFETY: the lengths the caller promises.
            let ints = |p: *const c_int, n: c_int| -> &[c_int] {
                if n <= 0 || p.is_null() {
                    &[]
                } else {
                    unsafe { std::slice::from_raw_parts(p, n as usize) }
                }
            };
            // Out-of-range ranks travel as u32::MAX and are refused collectively.
            let to_rank = |r: c_int| u32::try_from(r).unwrap_or(u32::MAX);
            let mut packed_send: Vec<u8> = Vec::new();
            let mut bufs: Vec<UserBuf> = Vec::new();
            let mut tmps: Vec<Vec<u8>> = Vec::new();
            let mut recvs: Vec<MmcastRecv> = Vec::new();
            let mut dest_ranks: Vec<u32> = Vec::new();
            // Every other mistake of this rank's is found before anything is exchanged and
            // agreed with the others (coll::mmcast), so that every rank returns
            // MPICAST_ERR_ARG and the next call starts afresh.
            let mut prepare = || -> Result<Region, String> {
                if sendcount < 0 {
                    return Err(format!("sendcount is {sendcount}; it must be 0 or more"));
                }
                if ndests < 0 {
                    return Err(format!("ndests is {ndests}; it must be 0 or more"));
                }
                if nsources < 0 {
                    return Err(format!("nsources is {nsources}; it must be 0 or more"));
                }
                let size = host::comm::size(comm).unwrap_or(0) as i64;
                if i64::from(ndests) >= size {
                    return Err(format!(
                        "ndests is {ndests}; the communicator has {size} ranks, so at most {} \
                         destinations",
                        size - 1
                    ));
                }
                if i64::from(nsources) >= size {
                    return Err(format!(
                        "nsources is {nsources}; the communicator has {size} ranks, so at most {} \
                         sources",
                        size - 1
                    ));
                }
                if ndests > 0 && dests.is_null() {
                    return Err(format!("dests is NULL with ndests {ndests}"));
                }
                if ndests > 0 && sendbuf.is_null() && sendcount > 0 {
                    return Err("sendbuf is NULL with a sendcount above 0".into());
                }
                if nsources > 0 && sources.is_null() {
                    return Err(format!("sources is NULL with nsources {nsources}"));
                }
                if nsources > 0 && recvcounts.is_null() {
                    return Err(format!("recvcounts is NULL with nsources {nsources}"));
                }
                if ndests > 0 && sendtype == host::datatype_null() {
                    return Err("sendtype is MPI_DATATYPE_NULL".into());
                }
                if ndests > 0 && !host::valid::type_live(sendtype) {
                    return Err("sendtype is not a live datatype (freed, or never made)".into());
                }
                if nsources > 0 && recvtype == host::datatype_null() {
                    return Err("recvtype is MPI_DATATYPE_NULL".into());
                }
                if nsources > 0 && !host::valid::type_live(recvtype) {
                    return Err("recvtype is not a live datatype (freed, or never made)".into());
                }
                let (dl, sl, cl) = (
                    ints(dests, ndests),
                    ints(sources, nsources),
                    ints(recvcounts, nsources),
                );
                let dl_ = ints(displs, if displs.is_null() { 0 } else { nsources });
                // The send side: in place, or packed.
                let send = if ndests == 0 {
                    Region::empty()
                } else {
                    let sub = UserBuf::describe(
                        sendbuf as *mut c_void,
                        i64::from(sendcount),
                        sendtype,
                        comm,
                    )
                    .map_err(|_| "the host MPI cannot describe the send buffer".to_string())?;
                    match sub.contiguous_ptr() {
                        // SAFETY: the datatype says these bytes are the application's data,
                        // lent for the call; only read (sends).
                        Some(p) => unsafe { Region::new(p, sub.bytes()) },
                        None => {
                            sub.with_send_bytes(|b| packed_send.extend_from_slice(b))
                                .map_err(|_| {
                                    "the host MPI cannot pack the send buffer".to_string()
                                })?;
                            // SAFETY: our own vector, alive until the run ends below.
                            unsafe { Region::new(packed_send.as_mut_ptr(), packed_send.len()) }
                        }
                    }
                };
                // The receive side: one region per expected message.
                let extent = if nsources > 0 {
                    host::buffer::extent(recvtype)
                        .map_err(|_| "the host MPI cannot give recvtype's extent".to_string())?
                } else {
                    0
                };
                for (i, &c) in cl.iter().enumerate() {
                    if c < 0 {
                        return Err(format!("recvcounts[{i}] is {c}; it must be 0 or more"));
                    }
                    if recvbuf.is_null() && c > 0 {
                        return Err(format!("recvbuf is NULL with recvcounts[{i}] {c}"));
                    }
                }
                for i in 0..sl.len() {
                    let disp = dl_.get(i).copied().unwrap_or(0) as isize;
                    let at = (recvbuf as *mut u8).wrapping_offset(disp * extent) as *mut c_void;
                    let ub = UserBuf::describe(at, i64::from(cl[i]), recvtype, comm)
                        .map_err(|_| format!("the host MPI cannot describe receive buffer {i}"))?;
                    let region = match ub.contiguous_ptr() {
                        // SAFETY: the application lent this area for writing during the call.
                        Some(p) => unsafe { Region::new(p, ub.bytes()) },
                        None => {
                            let mut t = vec![0u8; ub.bytes()];
                            // SAFETY: our own vector, kept in `tmps` (its heap block does not
                            // move) until it is unpacked below.
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
                dest_ranks = dl.iter().map(|&d| to_rank(d)).collect();
                Ok(send)
            };
            let (send, refused) = match prepare() {
                Ok(send) => (send, None),
                Err(why) => (Region::empty(), Some(why)),
            };
            if refused.is_some() {
                // Nothing of this rank's goes into the exchange but the refusal.
                recvs.clear();
                dest_ranks.clear();
            }
            match coll::mmcast(comm, send, &dest_ranks, &recvs, refused) {
                Ok(()) => {}
                Err(e) => return mmcast_status(comm, e),
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
            crate::stats::add(&crate::stats::COUNTERS.mmcast, 1);
            OK
        },
    )
}
