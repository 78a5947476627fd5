//! Communicator queries and the few collectives the shim itself needs (setup agreement),
//! all through PMPI on communicators the caller owns.

use super::{check, MPI_Comm, MPI_Info, MpiResult};
use std::os::raw::{c_char, c_int, c_void};

pub fn size(comm: MPI_Comm) -> MpiResult<u32> {
    let mut n: c_int = 0;
    // SAFETY: writes one int.
    check(unsafe { mpi_sys::PMPI_Comm_size(comm, &mut n) })?;
    Ok(n as u32)
}

pub fn rank(comm: MPI_Comm) -> MpiResult<u32> {
    let mut r: c_int = 0;
    // SAFETY: writes one int.
    check(unsafe { mpi_sys::PMPI_Comm_rank(comm, &mut r) })?;
    Ok(r as u32)
}

pub fn is_inter(comm: MPI_Comm) -> MpiResult<bool> {
    let mut flag: c_int = 0;
    // SAFETY: writes one int.
    check(unsafe { mpi_sys::PMPI_Comm_test_inter(comm, &mut flag) })?;
    Ok(flag != 0)
}

/// A private duplicate: scouts and control messages live in its context, so they can never
/// match an application's receive (even a wildcard one).
pub fn dup(comm: MPI_Comm) -> MpiResult<MPI_Comm> {
    let mut out = super::comm_null();
    // SAFETY: writes one handle.
    check(unsafe { mpi_sys::PMPI_Comm_dup(comm, &mut out) })?;
    Ok(out)
}

/// A duplicate in the making (PMPI_Comm_idup): the caller decides how long to wait for the
/// other ranks, instead of blocking in PMPI_Comm_dup until they all come.
pub struct Idup {
    req: mpi_sys::MPI_Request,
    // Boxed: MPI writes the new handle here when the request completes.
    out: Box<MPI_Comm>,
    done: bool,
}

impl Idup {
    pub fn start(comm: MPI_Comm) -> MpiResult<Idup> {
        let mut out = Box::new(super::comm_null());
        // SAFETY: the request handle is plain data, written by the call.
        let mut req: mpi_sys::MPI_Request = unsafe { std::mem::zeroed() };
        // SAFETY: `out` is a heap slot that lives as long as the request (see Drop).
        check(unsafe { mpi_sys::PMPI_Comm_idup(comm, &mut *out, &mut req) })?;
        Ok(Idup {
            req,
            out,
            done: false,
        })
    }

    /// The duplicate, once every rank has come.
    pub fn test(&mut self) -> MpiResult<Option<MPI_Comm>> {
        if !self.done {
            let mut flag: c_int = 0;
            // SAFETY: req is live until done.
            check(unsafe { mpi_sys::PMPI_Test(&mut self.req, &mut flag, super::status_ignore()) })?;
            self.done = flag != 0;
        }
        Ok(self.done.then_some(*self.out))
    }
}

impl Drop for Idup {
    fn drop(&mut self) {
        // An Idup dropped before it completes belongs to a job that is being aborted: its
        // request is left to MPI_Abort (waiting for it would wait for the ranks that never
        // came, and cancelling a collective is not allowed).
    }
}

/// The rank in MPI_COMM_WORLD of every rank of `comm`; `None` for ranks outside it (a
/// communicator that spans several jobs).
pub fn world_ranks(comm: MPI_Comm) -> MpiResult<Vec<Option<u32>>> {
    let n = size(comm)?;
    // SAFETY: MPI_Group is a plain handle.
    let (mut g, mut w): (mpi_sys::MPI_Group, mpi_sys::MPI_Group) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    let ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut out: Vec<c_int> = vec![0; n as usize];
    // SAFETY: each call writes handles or `n` ints into buffers of that size; the groups are
    // freed before returning.
    unsafe {
        check(mpi_sys::PMPI_Comm_group(comm, &mut g))?;
        check(mpi_sys::PMPI_Comm_group(super::comm_world(), &mut w))?;
        let rc =
            mpi_sys::PMPI_Group_translate_ranks(g, n as c_int, ranks.as_ptr(), w, out.as_mut_ptr());
        mpi_sys::PMPI_Group_free(&mut g);
        mpi_sys::PMPI_Group_free(&mut w);
        check(rc)?;
    }
    Ok(out.into_iter().map(|r| u32::try_from(r).ok()).collect())
}

/// PMPI_Comm_split: ranks with the same `color` form one new communicator, ordered by
/// `key`; `None` (MPI_UNDEFINED) takes part in the call but gets no communicator.
pub fn split(comm: MPI_Comm, color: Option<u32>, key: u32) -> MpiResult<Option<MPI_Comm>> {
    // SAFETY: constant read.
    let undefined = unsafe { super::c::MPICAST_C_UNDEFINED };
    let color = color.map_or(undefined, |c| c as c_int);
    let mut out = super::comm_null();
    // SAFETY: writes one handle.
    check(unsafe { mpi_sys::PMPI_Comm_split(comm, color, key as c_int, &mut out) })?;
    Ok(if out == super::comm_null() {
        None
    } else {
        Some(out)
    })
}

pub fn free(mut comm: MPI_Comm) -> MpiResult<()> {
    // SAFETY: the caller owns `comm` (a duplicate we made) and never uses it again.
    check(unsafe { mpi_sys::PMPI_Comm_free(&mut comm) })
}

/// The host's own barrier on one of our communicators (its non-blocking form, polled, where
/// `progress::covered` says every rank turns it so).
pub fn barrier(comm: MPI_Comm) -> MpiResult<()> {
    check(super::progress::own(|| {
        super::progress::collective(
            comm,
            // SAFETY: no pointers.
            || unsafe { mpi_sys::PMPI_Barrier(comm) },
            // SAFETY: writes the request.
            |r| unsafe { mpi_sys::PMPI_Ibarrier(comm, r) },
        )
    }))
}

/// A sum over the ranks of `comm` of two counters, that the caller drives: started here,
/// then `step` until it gives the sums. For a closing engine, which must keep taking what the
/// others still send it while it waits for them, and give up after a bound. Dropping it
/// unfinished leaves the host's request behind (the caller then ends the job).
pub struct OpenSum {
    req: super::MPI_Request,
    // Boxed: the host reads and writes them until the request completes, wherever `self` moves.
    vals: Box<[u64; 2]>,
    out: Box<[u64; 2]>,
}

impl OpenSum {
    pub fn start(comm: MPI_Comm, vals: [u64; 2]) -> MpiResult<OpenSum> {
        let mut s = OpenSum {
            req: super::progress::request_null(),
            vals: Box::new(vals),
            out: Box::new([0; 2]),
        };
        // SAFETY: both boxes hold two u64s and live in `s` until the request completes (or
        // the job ends); `comm` is live.
        check(unsafe {
            mpi_sys::PMPI_Iallreduce(
                s.vals.as_ptr() as *const c_void,
                s.out.as_mut_ptr() as *mut c_void,
                2,
                super::c::MPICAST_C_UINT64,
                super::c::MPICAST_C_SUM,
                comm,
                &mut s.req,
            )
        })?;
        Ok(s)
    }

    /// The sums, once every rank has given its counters.
    pub fn step(&mut self) -> MpiResult<Option<[u64; 2]>> {
        let mut flag: c_int = 0;
        // SAFETY: our live request (MPI_REQUEST_NULL once it completed: flag is then set).
        check(unsafe { mpi_sys::PMPI_Test(&mut self.req, &mut flag, super::status_ignore()) })?;
        Ok((flag != 0).then_some(*self.out))
    }
}

/// Broadcasts `buf` (same length everywhere) from `root` with the host's own broadcast: its
/// non-blocking form on every rank (mpicast's setup calls are rare, and a rank waiting here
/// keeps forwarding), waited for with `progress::wait_own`.
pub fn bcast_bytes(comm: MPI_Comm, buf: &mut [u8], root: u32) -> MpiResult<()> {
    let mut req = super::progress::request_null();
    // SAFETY: buf is valid for buf.len() bytes until the request completes below; every rank
    // passes the same length.
    check(unsafe {
        mpi_sys::PMPI_Ibcast(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            super::byte(),
            root as c_int,
            comm,
            &mut req,
        )
    })?;
    super::progress::wait_own(&mut req)
}

/// Gathers `mine` (same length everywhere) from every rank, in rank order.
pub fn allgather_bytes(comm: MPI_Comm, mine: &[u8]) -> MpiResult<Vec<u8>> {
    let n = size(comm)? as usize;
    let mut out = vec![0u8; mine.len() * n];
    let mut req = super::progress::request_null();
    // SAFETY: out holds n * mine.len() bytes; both buffers outlive the request, waited for
    // below. Non-blocking on every rank, as in `bcast_bytes`.
    check(unsafe {
        mpi_sys::PMPI_Iallgather(
            mine.as_ptr() as *const c_void,
            mine.len() as c_int,
            super::byte(),
            out.as_mut_ptr() as *mut c_void,
            mine.len() as c_int,
            super::byte(),
            comm,
            &mut req,
        )
    })?;
    super::progress::wait_own(&mut req)?;
    Ok(out)
}

/// Non-blocking allgather, so that rank 0 can keep sending probe datagrams while it waits.
pub struct Iallgather {
    req: mpi_sys::MPI_Request,
    // Boxed so the addresses handed to MPI stay put while the request is live.
    _mine: Box<[u8]>,
    out: Box<[u8]>,
    done: bool,
}

impl Iallgather {
    pub fn start(comm: MPI_Comm, mine: &[u8]) -> MpiResult<Iallgather> {
        let n = size(comm)? as usize;
        let mine: Box<[u8]> = mine.into();
        let mut out = vec![0u8; mine.len() * n].into_boxed_slice();
        // SAFETY: the request handle is plain data; it is written by PMPI_Iallgather.
        let mut req: mpi_sys::MPI_Request = unsafe { std::mem::zeroed() };
        // SAFETY: both buffers are heap allocations owned by the returned value, which
        // waits for the request before dropping them.
        check(unsafe {
            mpi_sys::PMPI_Iallgather(
                mine.as_ptr() as *const c_void,
                mine.len() as c_int,
                super::byte(),
                out.as_mut_ptr() as *mut c_void,
                mine.len() as c_int,
                super::byte(),
                comm,
                &mut req,
            )
        })?;
        Ok(Iallgather {
            req,
            _mine: mine,
            out,
            done: false,
        })
    }

    pub fn test(&mut self) -> MpiResult<bool> {
        if !self.done {
            let mut flag: c_int = 0;
            // SAFETY: req is live until done.
            check(unsafe { mpi_sys::PMPI_Test(&mut self.req, &mut flag, super::status_ignore()) })?;
            self.done = flag != 0;
        }
        Ok(self.done)
    }

    pub fn wait(mut self) -> MpiResult<Vec<u8>> {
        if !self.done {
            super::progress::wait_own(&mut self.req)?;
            self.done = true;
        }
        Ok(std::mem::take(&mut self.out).into_vec())
    }
}

impl Drop for Iallgather {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: the buffers must outlive the request, so complete it before freeing.
            unsafe { mpi_sys::PMPI_Wait(&mut self.req, super::status_ignore()) };
        }
    }
}

/// Sums u64 counters over the communicator onto `root`.
pub fn reduce_sum_u64(comm: MPI_Comm, vals: &[u64], root: u32) -> MpiResult<Vec<u64>> {
    let mut out = vec![0u64; vals.len()];
    let mut req = super::progress::request_null();
    // SAFETY: both buffers hold vals.len() u64s and outlive the request, waited for below.
    // Non-blocking on every rank, as in `bcast_bytes`.
    check(unsafe {
        mpi_sys::PMPI_Ireduce(
            vals.as_ptr() as *const c_void,
            out.as_mut_ptr() as *mut c_void,
            vals.len() as c_int,
            super::c::MPICAST_C_UINT64,
            super::c::MPICAST_C_SUM,
            root as c_int,
            comm,
            &mut req,
        )
    })?;
    super::progress::wait_own(&mut req)?;
    Ok(out)
}

/// The MPI_Info hints set on `comm` that belong to mpicast, as the host reports them:
/// (key, value) pairs. Hosts may drop keys they do not know, so this is only a fallback for
/// hints the interposed MPI_Comm_set_info did not see.
pub fn info_hints(comm: MPI_Comm, keys: &[&str]) -> MpiResult<Vec<(String, String)>> {
    let mut info = super::info_null();
    // SAFETY: writes one handle, which we free below.
    check(unsafe { mpi_sys::PMPI_Comm_get_info(comm, &mut info) })?;
    let found = info_entries(info, keys);
    // SAFETY: the handle came from PMPI_Comm_get_info and is ours to free.
    unsafe { mpi_sys::PMPI_Info_free(&mut info) };
    Ok(found)
}

/// The entries of `info` among `keys`: (key, value) pairs. MPI_INFO_NULL has none.
pub fn info_entries(info: MPI_Info, keys: &[&str]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    if info == super::info_null() {
        return found;
    }
    // SAFETY: constant read.
    let vlen = unsafe { super::c::MPICAST_C_MAX_INFO_VAL }.max(1);
    let mut val = vec![0u8; vlen as usize + 1];
    for key in keys {
        let ckey = std::ffi::CString::new(*key).expect("hint keys have no NUL");
        let mut flag: c_int = 0;
        // SAFETY: val holds vlen + 1 bytes as the call requires; ckey is NUL-terminated.
        let rc = unsafe {
            mpi_sys::PMPI_Info_get(
                info,
                ckey.as_ptr(),
                vlen,
                val.as_mut_ptr() as *mut c_char,
                &mut flag,
            )
        };
        if rc == super::SUCCESS && flag != 0 {
            let end = val.iter().position(|&b| b == 0).unwrap_or(val.len());
            found.push((
                key.to_string(),
                String::from_utf8_lossy(&val[..end]).into_owned(),
            ));
        }
    }
    found
}
