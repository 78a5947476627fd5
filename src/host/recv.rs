//! The application's own point-to-point receives, as dynamic broadcast needs to hold them:
//! a receive posted on the host (`MPI_Irecv` into the application's buffer) that a dynamic
//! broadcast may take over instead. The host request stays the application's handle; mpicast
//! looks at it without completing it (`MPI_Request_get_status`), and cancels it when a
//! broadcast takes the receive (a receive that the host matched first cannot be cancelled, and
//! then the point-to-point message wins).

use super::{check, MPI_Comm, MPI_Datatype, MPI_Request, MpiError, MpiResult};
use std::os::raw::{c_int, c_void};

/// A host request handle held by mpicast (a pointer under Open MPI, an int under MPICH).
#[derive(Clone, Copy, Debug)]
pub struct HostReq(pub MPI_Request);

// SAFETY: request handles are process-wide values, never dereferenced by mpicast; a second
// thread calls MPI only when the host granted MPI_THREAD_MULTIPLE.
unsafe impl Send for HostReq {}

/// A handle (request or communicator) as a number, for tables keyed by handle.
pub fn handle_key<T: Copy>(h: T) -> u64 {
    let n = std::mem::size_of::<T>();
    assert!(n <= 8, "a handle wider than 64 bits");
    let mut out = [0u8; 8];
    // SAFETY: `h` is a plain handle of `n` <= 8 bytes, copied as bytes.
    unsafe { std::ptr::copy_nonoverlapping(&h as *const T as *const u8, out.as_mut_ptr(), n) };
    u64::from_ne_bytes(out)
}

/// A completed receive's status, as the host filled it.
#[derive(Clone, Copy)]
pub struct HostStatus(pub mpi_sys::MPI_Status);

impl HostStatus {
    pub fn empty() -> HostStatus {
        // SAFETY: MPI_Status is plain data.
        HostStatus(unsafe { std::mem::zeroed() })
    }

    pub fn source(&self) -> c_int {
        self.0.MPI_SOURCE
    }

    pub fn tag(&self) -> c_int {
        self.0.MPI_TAG
    }

    /// Whether the receive was cancelled rather than matched.
    pub fn cancelled(&self) -> bool {
        let mut flag: c_int = 0;
        // SAFETY: reads a status the host filled.
        unsafe { mpi_sys::PMPI_Test_cancelled(&self.0, &mut flag) };
        flag != 0
    }
}

/// MPI_Irecv on the host: the application's receive.
///
/// # Safety
/// The arguments of MPI_Irecv, with the same requirements.
pub unsafe fn irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<HostReq, c_int> {
    // SAFETY: MPI_Request is a plain handle.
    let mut r: MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's arguments, as MPI_Irecv requires.
    let rc = unsafe { mpi_sys::PMPI_Irecv(buf, count, datatype, source, tag, comm, &mut r) };
    if rc == super::SUCCESS {
        Ok(HostReq(r))
    } else {
        Err(rc)
    }
}

/// Whether the host completed `r` (matched and received, or cancelled), without freeing it:
/// its status when it did.
pub fn peek(r: HostReq) -> MpiResult<Option<HostStatus>> {
    let mut flag: c_int = 0;
    let mut st = HostStatus::empty();
    // SAFETY: a live request of the application's, only looked at.
    check(unsafe { mpi_sys::PMPI_Request_get_status(r.0, &mut flag, &mut st.0) })?;
    Ok((flag != 0).then_some(st))
}

/// Cancels `r` and waits until the host says how it ended (a receive that had not matched is
/// cancelled at once; one that had is received whole): its status, with `cancelled()` true
/// when the cancel took. The request is not freed.
pub fn cancel(r: HostReq) -> MpiResult<HostStatus> {
    let mut h = r.0;
    // SAFETY: a live receive request.
    check(unsafe { mpi_sys::PMPI_Cancel(&mut h) })?;
    loop {
        if let Some(st) = peek(r)? {
            return Ok(st);
        }
        std::thread::yield_now();
    }
}

/// Completes and frees a request the host has completed (`peek` said so): its status.
///
/// # Safety
/// `r` points to the application's request handle.
pub unsafe fn finish(r: *mut MPI_Request) -> (c_int, HostStatus) {
    let mut st = HostStatus::empty();
    // SAFETY: the application's handle, complete on the host.
    let rc = unsafe { mpi_sys::PMPI_Wait(r, &mut st.0) };
    (rc, st)
}

/// The count of bytes a status reports.
pub fn status_bytes(st: &HostStatus) -> u64 {
    let mut n: mpi_sys::MPI_Count = 0;
    // SAFETY: reads a status the host filled.
    let rc = unsafe { mpi_sys::PMPI_Get_elements_x(&st.0, super::byte(), &mut n) };
    if rc == super::SUCCESS && n >= 0 {
        n as u64
    } else {
        0
    }
}

/// MPI_Isend on the host, from the application's buffer.
///
/// # Safety
/// The arguments of MPI_Isend; the buffer stays valid until the request completes.
pub unsafe fn isend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<HostReq, c_int> {
    // SAFETY: MPI_Request is a plain handle.
    let mut r: MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's arguments, as MPI_Isend requires.
    let rc = unsafe { mpi_sys::PMPI_Isend(buf, count, datatype, dest, tag, comm, &mut r) };
    if rc == super::SUCCESS {
        Ok(HostReq(r))
    } else {
        Err(rc)
    }
}

/// Tests the application's receive `r` on the host, completing (and freeing) it when the
/// host is done with it: the call's result and, when complete, its status (`r` is then
/// MPI_REQUEST_NULL).
pub fn test_status(r: &mut HostReq) -> (c_int, Option<HostStatus>) {
    let mut flag: c_int = 0;
    let mut st = HostStatus::empty();
    // SAFETY: a live request; the host writes the flag and the status.
    let rc = unsafe { mpi_sys::PMPI_Test(&mut r.0, &mut flag, &mut st.0) };
    (rc, (rc != super::SUCCESS || flag != 0).then_some(st))
}

/// Tests a request of mpicast's own: true (and freed) when complete.
pub fn test_free(r: &mut HostReq) -> MpiResult<bool> {
    let mut flag: c_int = 0;
    // SAFETY: a live request owned by mpicast; the status is ignored.
    check(unsafe { mpi_sys::PMPI_Test(&mut r.0, &mut flag, super::status_ignore()) })?;
    Ok(flag != 0)
}

extern "C" {
    fn mpicast_c_fake_message(id: std::os::raw::c_uint) -> mpi_sys::MPI_Message;
}

/// A message handle of mpicast's own (one the host never gives out), numbered `id`.
pub fn fake_message(id: u32) -> mpi_sys::MPI_Message {
    // SAFETY: a pure function of the C shim.
    unsafe { mpicast_c_fake_message(id) }
}

/// MPI_MESSAGE_NULL.
pub fn message_null() -> mpi_sys::MPI_Message {
    // SAFETY: an initialised constant of mpi-sys' C shim.
    unsafe { mpi_sys::RSMPI_MESSAGE_NULL }
}

/// A generalized request complete at once whose status says (source, tag, error, bytes): a
/// receive mpicast completed itself (MPI_Imrecv of a dynamic broadcast), or a send whose data
/// mpicast copied (any source and tag, nothing received).
pub fn completed_request_with(
    source: c_int,
    tag: c_int,
    error: c_int,
    bytes: u64,
) -> MpiResult<MPI_Request> {
    let req = pending_request_with(source, tag, error, bytes)?;
    complete_request(req)?;
    Ok(req)
}

/// Completes a request of `pending_request_with` (once); the application may have freed it
/// already (MPI_Request_free), which MPI allows for a generalized request.
pub fn complete_request(req: MPI_Request) -> MpiResult<()> {
    // SAFETY: a generalized request of ours, started and not completed yet.
    check(unsafe { mpi_sys::PMPI_Grequest_complete(req) })
}

/// A generalized request whose status will say (source, tag, error, bytes), not complete
/// until `complete_request` (a send fan-out detection holds: `transport::fanout`).
pub fn pending_request_with(
    source: c_int,
    tag: c_int,
    error: c_int,
    bytes: u64,
) -> MpiResult<MPI_Request> {
    type Facts = (c_int, c_int, c_int, u64);
    unsafe extern "C" fn query(e: *mut c_void, status: *mut mpi_sys::MPI_Status) -> c_int {
        super::callback("a completed request's query", || {
            // SAFETY: the box made below, alive until `free`.
            let (s, t, err, b) = unsafe { *(e as *const Facts) };
            // SAFETY: the host's status argument.
            unsafe { super::status_fill(status, s, t, err, b) };
            super::SUCCESS
        })
    }
    unsafe extern "C" fn free(e: *mut c_void) -> c_int {
        super::callback("a completed request's free", || {
            // SAFETY: the box made below, given back once.
            drop(unsafe { Box::from_raw(e as *mut Facts) });
            super::SUCCESS
        })
    }
    unsafe extern "C" fn cancel(_e: *mut c_void, _c: c_int) -> c_int {
        super::callback("a completed request's cancel", || super::SUCCESS)
    }
    let extra = Box::into_raw(Box::new((source, tag, error, bytes))) as *mut c_void;
    // SAFETY: MPI_Request is a plain handle.
    let mut req: MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: callbacks with MPI's signatures; `extra` lives until `free`.
    let rc = unsafe {
        mpi_sys::PMPI_Grequest_start(Some(query), Some(free), Some(cancel), extra, &mut req)
    };
    if rc != super::SUCCESS {
        // SAFETY: the host did not take it.
        drop(unsafe { Box::from_raw(extra as *mut Facts) });
        return Err(MpiError(rc));
    }
    Ok(req)
}
