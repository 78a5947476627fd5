//! Point-to-point on the private duplicate: zero-byte scouts (non-blocking, tracked by the
//! action that posted them) and the small control messages receivers send to a root.

use super::{check, MPI_Comm, MPI_Request, MpiResult};
use std::os::raw::{c_int, c_void};

/// Scouts carry no data, but MPI wants a valid address anyway.
static SCOUT_BYTE: u8 = 0;

/// Outstanding non-blocking requests, each tagged with the schedule action it belongs to.
#[derive(Default)]
pub struct Requests {
    reqs: Vec<MPI_Request>,
    ids: Vec<u32>,
    indices: Vec<c_int>,
}

impl Requests {
    pub fn isend_empty(&mut self, comm: MPI_Comm, peer: u32, tag: c_int, id: u32) -> MpiResult<()> {
        let at = &SCOUT_BYTE as *const u8 as *mut u8;
        // SAFETY: zero bytes are read from a static address.
        let req = unsafe { post(false, at, 0, peer as c_int, tag, comm) }?;
        self.reqs.push(req);
        self.ids.push(id);
        Ok(())
    }

    pub fn irecv_empty(&mut self, comm: MPI_Comm, peer: u32, tag: c_int, id: u32) -> MpiResult<()> {
        let at = &SCOUT_BYTE as *const u8 as *mut u8;
        // SAFETY: a zero-byte receive never writes to the buffer.
        let req = unsafe { post(true, at, 0, peer as c_int, tag, comm) }?;
        self.reqs.push(req);
        self.ids.push(id);
        Ok(())
    }

    /// Non-blocking send of `r`'s bytes; `r` must stay valid until the request completes.
    pub fn isend_region(
        &mut self,
        comm: MPI_Comm,
        peer: u32,
        tag: c_int,
        r: Region,
        id: u32,
    ) -> MpiResult<()> {
        // SAFETY: `Region::new`'s contract keeps the bytes valid while the request is live.
        let req = unsafe { post(false, r.ptr, r.count()?, peer as c_int, tag, comm) }?;
        self.reqs.push(req);
        self.ids.push(id);
        Ok(())
    }

    /// Non-blocking receive into `r`; `peer` may be `any_source()`, `tag` `any_tag()`.
    pub fn irecv_region(
        &mut self,
        comm: MPI_Comm,
        peer: c_int,
        tag: c_int,
        r: Region,
        id: u32,
    ) -> MpiResult<()> {
        // SAFETY: `Region::new`'s contract keeps the bytes valid and writable while the
        // request is live; MPI writes at most `count` bytes.
        let req = unsafe { post(true, r.ptr, r.count()?, peer, tag, comm) }?;
        self.reqs.push(req);
        self.ids.push(id);
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Pushes the ids of completed requests onto `done` and forgets them.
    pub fn testsome(&mut self, done: &mut Vec<u32>) -> MpiResult<()> {
        self.some(done, false)
    }

    /// As `testsome`, but blocks inside the host MPI until at least one request completed
    /// (its own progress loop, as a hand-written `MPI_Waitall` would wait).
    pub fn waitsome(&mut self, done: &mut Vec<u32>) -> MpiResult<()> {
        self.some(done, true)
    }

    fn some(&mut self, done: &mut Vec<u32>, wait: bool) -> MpiResult<()> {
        if self.reqs.is_empty() {
            return Ok(());
        }
        if self.reqs.len() == 1 {
            // One request: MPI_Wait / MPI_Test, the calls a hand-written loop would make
            // (the *some forms cost more per call in the MPIs we host on).
            let mut flag: c_int = 1;
            // SAFETY: a live request handle owned by us; the status is ignored.
            check(unsafe {
                if wait {
                    super::progress::wait(&mut self.reqs[0], super::status_ignore())
                } else {
                    mpi_sys::PMPI_Test(&mut self.reqs[0], &mut flag, super::status_ignore())
                }
            })?;
            if flag != 0 {
                done.push(self.ids[0]);
                self.reqs.clear();
                self.ids.clear();
            }
            return Ok(());
        }
        self.indices.resize(self.reqs.len(), 0);
        let mut outcount: c_int = 0;
        let (n, reqs, indices) = (
            self.reqs.len() as c_int,
            self.reqs.as_mut_ptr(),
            self.indices.as_mut_ptr(),
        );
        // SAFETY: arrays sized to incount; statuses ignored.
        check(unsafe {
            if wait {
                super::progress::waitsome(
                    n,
                    reqs,
                    &mut outcount,
                    indices,
                    mpi_sys::RSMPI_STATUSES_IGNORE,
                )
            } else {
                mpi_sys::PMPI_Testsome(
                    n,
                    reqs,
                    &mut outcount,
                    indices,
                    mpi_sys::RSMPI_STATUSES_IGNORE,
                )
            }
        })?;
        if outcount <= 0 {
            // MPI_UNDEFINED (no active requests) or nothing finished.
            return Ok(());
        }
        // Highest index first, so that each swap_remove leaves the others in place.
        let finished = &mut self.indices[..outcount as usize];
        finished.sort_unstable_by(|a, b| b.cmp(a));
        for &i in finished.iter() {
            let i = i as usize;
            done.push(self.ids[i]);
            self.reqs.swap_remove(i);
            self.ids.swap_remove(i);
        }
        Ok(())
    }

    /// Cancels and completes whatever is outstanding, so that MPI holds no request to memory
    /// about to be freed or reused; keeps the vectors for the next user.
    pub fn cancel_all(&mut self) {
        // Only finds requests on an error path or an abandoned run. Zero-byte scouts always
        // complete once peers act.
        cancel(&mut self.reqs);
        self.ids.clear();
    }
}

/// Posts a non-blocking send of the `count` bytes at `ptr` (with `recv`, a receive into
/// them) and returns its request.
///
/// # Safety
/// The bytes stay valid (and, for a receive, writable and untouched by anyone else) until
/// the request completes.
unsafe fn post(
    recv: bool,
    ptr: *mut u8,
    count: c_int,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<MPI_Request> {
    // SAFETY: request handles are plain data written by MPI.
    let mut req: MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: the caller keeps the bytes valid; MPI touches at most `count` of them.
    check(unsafe {
        if recv {
            mpi_sys::PMPI_Irecv(
                ptr as *mut c_void,
                count,
                super::byte(),
                peer,
                tag,
                comm,
                &mut req,
            )
        } else {
            mpi_sys::PMPI_Isend(
                ptr as *const c_void,
                count,
                super::byte(),
                peer,
                tag,
                comm,
                &mut req,
            )
        }
    })?;
    Ok(req)
}

/// Cancels and completes `reqs` (live requests owned by the caller), emptying the vector.
fn cancel(reqs: &mut Vec<MPI_Request>) {
    for r in reqs.iter_mut() {
        // SAFETY: live request handles owned by the caller.
        unsafe {
            mpi_sys::PMPI_Cancel(r);
            mpi_sys::PMPI_Wait(r, super::status_ignore());
        }
    }
    reqs.clear();
}

/// One call of a `Rounds` run: a non-blocking send or receive of a region.
#[derive(Clone, Copy)]
struct Call {
    recv: bool,
    ptr: *mut u8,
    count: c_int,
    peer: c_int,
    tag: c_int,
}

/// A point-to-point schedule that runs in layers (`sched::Layers`), bound to its memory:
/// each layer's calls are posted together and waited for with one `MPI_Waitall` (or tested
/// with one `MPI_Testall`) before the next layer is posted, as a hand-written collective
/// does. Filled once (`push`, `end_layer`), then run any number of times (`start`, then
/// `wait` or `test` until done); the regions must stay valid meanwhile.
pub struct Rounds {
    comm: MPI_Comm,
    calls: Vec<Call>,
    /// Layer k is `calls[bounds[k]..bounds[k + 1]]`.
    bounds: Vec<usize>,
    reqs: Vec<MPI_Request>,
    /// The layer outstanding while `active`.
    layer: usize,
    active: bool,
}

impl Rounds {
    pub fn new(comm: MPI_Comm) -> Self {
        Rounds {
            comm,
            calls: Vec::new(),
            bounds: vec![0],
            reqs: Vec::new(),
            layer: 0,
            active: false,
        }
    }

    /// Adds a send (or, with `recv`, a receive; `peer` may be `any_source()`, `tag`
    /// `any_tag()`) of `r` to the layer being filled.
    pub fn push(&mut self, recv: bool, r: Region, peer: c_int, tag: c_int) -> MpiResult<()> {
        self.calls.push(Call {
            recv,
            ptr: r.ptr,
            count: r.count()?,
            peer,
            tag,
        });
        Ok(())
    }

    /// Ends the layer being filled.
    pub fn end_layer(&mut self) {
        self.bounds.push(self.calls.len());
    }

    /// A run posted and not yet complete.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Posts the first layer. On an error the run stays active with what was posted
    /// (dropping the `Rounds` cancels it).
    pub fn start(&mut self) -> MpiResult<()> {
        debug_assert!(!self.active && self.reqs.is_empty());
        self.layer = 0;
        self.active = self.bounds.len() > 1;
        if self.active {
            self.post()?;
        }
        Ok(())
    }

    /// Blocks in the host MPI until the run completed.
    pub fn wait(&mut self) -> MpiResult<()> {
        while self.active {
            // SAFETY: live request handles owned by us, `len` of them; statuses ignored.
            check(unsafe {
                super::progress::waitall(
                    self.reqs.len() as c_int,
                    self.reqs.as_mut_ptr(),
                    mpi_sys::RSMPI_STATUSES_IGNORE,
                )
            })?;
            self.next()?;
        }
        Ok(())
    }

    /// Moves the run on without blocking; true once it completed.
    pub fn test(&mut self) -> MpiResult<bool> {
        while self.active {
            let mut flag: c_int = 0;
            // SAFETY: live request handles owned by us, `len` of them; statuses ignored.
            check(unsafe {
                mpi_sys::PMPI_Testall(
                    self.reqs.len() as c_int,
                    self.reqs.as_mut_ptr(),
                    &mut flag,
                    mpi_sys::RSMPI_STATUSES_IGNORE,
                )
            })?;
            if flag == 0 {
                return Ok(false);
            }
            self.next()?;
        }
        Ok(true)
    }

    /// The outstanding layer completed: post the next one, or end the run.
    fn next(&mut self) -> MpiResult<()> {
        self.reqs.clear();
        self.layer += 1;
        if self.layer + 1 == self.bounds.len() {
            self.active = false;
            return Ok(());
        }
        self.post()
    }

    fn post(&mut self) -> MpiResult<()> {
        let (from, to) = (self.bounds[self.layer], self.bounds[self.layer + 1]);
        for c in &self.calls[from..to] {
            // SAFETY: `Region::new`'s contract keeps each call's bytes valid (and writable
            // for a receive) while its request is live; MPI touches at most `count` bytes.
            let req = unsafe { post(c.recv, c.ptr, c.count, c.peer, c.tag, self.comm) }?;
            self.reqs.push(req);
        }
        Ok(())
    }
}

// SAFETY: the raw pointers are views of the application's memory bound by a GOAL handle
// (`Region::new`'s contract) and MPI handles. A `Rounds` reaches another thread only behind
// its handle's mutex (`coll::goal::RoundsRun`), stepped by the process's progress from
// inside an MPI call of that thread, which the application's thread level lets call MPI.
unsafe impl Send for Rounds {}

impl Drop for Rounds {
    /// Cancels what a run abandoned midway left outstanding.
    fn drop(&mut self) {
        cancel(&mut self.reqs);
    }
}

// SAFETY: MPI request handles are process-wide values that MPI owns; a `Requests` reaches
// another thread only inside a GOAL run, behind its handle's mutex (`coll::goal::run`), and is
// used there from inside an MPI call of that thread (or under MPI_THREAD_MULTIPLE, by the
// progress thread), which the application's thread level lets call MPI.
unsafe impl Send for Requests {}

impl Drop for Requests {
    fn drop(&mut self) {
        self.cancel_all();
    }
}

fn err_count() -> c_int {
    mpi_sys::MPI_ERR_COUNT as c_int
}

/// MPI_ANY_TAG.
pub fn any_tag() -> c_int {
    // SAFETY: an initialised constant of mpi-sys' C shim.
    unsafe { mpi_sys::RSMPI_ANY_TAG }
}

/// A registered user function (a GOAL `exec user N`): `f(src, src_len, dst, dst_len, ctx)`,
/// 0 on success.
pub type UserFn = unsafe extern "C" fn(
    src: *const c_void,
    src_len: usize,
    dst: *mut c_void,
    dst_len: usize,
    ctx: *mut c_void,
) -> c_int;

/// A user function with the context pointer it was registered with.
#[derive(Clone, Copy)]
pub struct UserFunc {
    pub f: UserFn,
    pub ctx: *mut c_void,
}

// SAFETY: the application registered the function and its context for runs of its GOAL
// handle, which may call it on whichever thread drives the run (MPICAST_Goal_reg_func says
// so); the pointer is handed back to the function, never dereferenced by us.
unsafe impl Send for UserFunc {}

/// A span of memory that someone else owns (the application's buffer bound to a GOAL slot,
/// or a scratch area): a raw view, because MPI requests keep using it after any Rust borrow
/// would have ended. Whoever creates one promises it stays valid for as long as it is used.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: `Region::new`'s contract: the bytes stay valid while the region is used and nothing
// else accesses them meanwhile, whichever thread uses it (a GOAL run reaches another thread
// only behind its handle's mutex: `coll::goal::run`).
unsafe impl Send for Region {}

impl Region {
    /// # Safety
    /// `ptr` is valid for reads and writes of `len` bytes (or `len` is 0) for as long as the
    /// region or any part of it is used, and nothing else accesses those bytes meanwhile
    /// except through regions.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Region {
        Region { ptr, len }
    }

    /// No bytes: what a zero-length reference to a buffer nobody bound stands for.
    pub fn empty() -> Region {
        Region {
            ptr: std::ptr::NonNull::dangling().as_ptr(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The length as an MPI count (MPI_ERR_COUNT beyond `c_int`).
    fn count(&self) -> MpiResult<c_int> {
        c_int::try_from(self.len).map_err(|_| super::MpiError(err_count()))
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `len` bytes from `offset`, or None when that leaves the region.
    pub fn sub(&self, offset: usize, len: usize) -> Option<Region> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        Some(Region {
            ptr: self.ptr.wrapping_add(offset),
            len,
        })
    }

    /// A copy of the bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        if self.len == 0 {
            return Vec::new();
        }
        // SAFETY: `new`'s contract; the slice lives only inside this call.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }

    /// Runs `f` on the bytes, writable. The caller must not have a request in flight on
    /// these bytes (the executor only calls it for actions whose prerequisites completed).
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        if self.len == 0 {
            return f(&mut []);
        }
        // SAFETY: `new`'s contract; the slice does not outlive this call.
        f(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    /// Calls a registered C function `f(src, src_len, self, self_len, ctx)` (a GOAL
    /// `exec user N`) and returns its status. `src` may overlap `self`: the function sees
    /// the raw pointers, as C code would. `ctx` is opaque here: only the function reads it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn call_user(&self, src: Region, f: UserFn, ctx: *mut c_void) -> c_int {
        // SAFETY: both regions are valid per `new`'s contract; the function was registered
        // by the application with the documented signature, and gets exactly the lengths.
        unsafe {
            f(
                src.ptr as *const c_void,
                src.len,
                self.ptr as *mut c_void,
                self.len,
                ctx,
            )
        }
    }
}

/// One call into the host MPI that receives nothing (an `MPI_Iprobe` on `comm`): the host
/// moves its pending requests, the application's included, only inside its calls.
pub fn kick(comm: MPI_Comm) -> MpiResult<()> {
    let mut flag: c_int = 0;
    // SAFETY: writes flag; the status is ignored.
    check(unsafe {
        mpi_sys::PMPI_Iprobe(
            super::any_source(),
            any_tag(),
            comm,
            &mut flag,
            super::status_ignore(),
        )
    })
}

/// Blocking send of a small control message (eager on every MPI we target).
pub fn send_bytes(comm: MPI_Comm, peer: u32, tag: c_int, bytes: &[u8]) -> MpiResult<()> {
    // SAFETY: bytes valid for its length.
    check(unsafe {
        mpi_sys::PMPI_Send(
            bytes.as_ptr() as *const c_void,
            bytes.len() as c_int,
            super::byte(),
            peer as c_int,
            tag,
            comm,
        )
    })
}

/// Receives one pending message with `tag` from any source, if there is one:
/// Some((source, length)). Never blocks.
pub fn try_recv_any(comm: MPI_Comm, tag: c_int, buf: &mut [u8]) -> MpiResult<Option<(u32, usize)>> {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Status is plain data.
    let mut status: mpi_sys::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: writes flag and status.
    check(unsafe { mpi_sys::PMPI_Iprobe(super::any_source(), tag, comm, &mut flag, &mut status) })?;
    if flag == 0 {
        return Ok(None);
    }
    // SAFETY: status was filled by Iprobe.
    let src = unsafe { super::c::mpicast_c_status_source(&status) };
    let mut count: c_int = 0;
    // SAFETY: reads the status, writes count.
    check(unsafe { mpi_sys::PMPI_Get_count(&status, super::byte(), &mut count) })?;
    let len = (count.max(0) as usize).min(buf.len());
    // SAFETY: receives at most buf.len() bytes from the probed source; a longer message
    // would be an MPI truncation error, reported as such.
    check(unsafe {
        mpi_sys::PMPI_Recv(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            super::byte(),
            src,
            tag,
            comm,
            super::status_ignore(),
        )
    })?;
    Ok(Some((src as u32, len)))
}

/// Non-blocking sends of shared byte buffers (the forwarding engine's segments, one buffer
/// often sent to several ranks): each buffer is kept alive until its send completes.
#[derive(Default)]
pub struct SharedSends {
    reqs: Vec<MPI_Request>,
    bufs: Vec<std::sync::Arc<[u8]>>,
    indices: Vec<c_int>,
}

// SAFETY: request handles are process-wide values (pointers MPI owns under Open MPI, ints
// under MPICH), never dereferenced by us; the buffers are reference-counted and immutable.
// The engine that owns this is locked by its users, and a second thread calls MPI only when
// the host granted MPI_THREAD_MULTIPLE.
unsafe impl Send for SharedSends {}

impl SharedSends {
    pub fn isend(
        &mut self,
        comm: MPI_Comm,
        peer: u32,
        tag: c_int,
        bytes: std::sync::Arc<[u8]>,
    ) -> MpiResult<()> {
        let count = c_int::try_from(bytes.len()).map_err(|_| super::MpiError(err_count()))?;
        // SAFETY: the buffer is kept in `bufs` until the request completes (`test`), and
        // sends only read it.
        let req = unsafe {
            post(
                false,
                bytes.as_ptr() as *mut u8,
                count,
                peer as c_int,
                tag,
                comm,
            )
        }?;
        self.reqs.push(req);
        self.bufs.push(bytes);
        Ok(())
    }

    /// Forgets the sends that completed (and their buffers); how many are still out.
    pub fn test(&mut self) -> MpiResult<usize> {
        if self.reqs.is_empty() {
            return Ok(0);
        }
        let n = self.reqs.len();
        self.indices.resize(n, 0);
        let mut outcount: c_int = 0;
        // SAFETY: `n` live requests and room for `n` indices; statuses ignored.
        check(unsafe {
            mpi_sys::PMPI_Testsome(
                n as c_int,
                self.reqs.as_mut_ptr(),
                &mut outcount,
                self.indices.as_mut_ptr(),
                super::c::MPICAST_C_STATUSES_IGNORE,
            )
        })?;
        if outcount > 0 {
            let mut done: Vec<usize> = self.indices[..outcount as usize]
                .iter()
                .map(|&i| i as usize)
                .collect();
            done.sort_unstable_by(|a, b| b.cmp(a));
            for i in done {
                self.reqs.swap_remove(i);
                self.bufs.swap_remove(i);
            }
        }
        Ok(self.reqs.len())
    }

    pub fn len(&self) -> usize {
        self.reqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
}

impl Drop for SharedSends {
    /// Sends still out when their engine goes (its communicator freed at MPI_Finalize or
    /// by the application): waited for, since their buffers go with this value.
    fn drop(&mut self) {
        for r in self.reqs.iter_mut() {
            // SAFETY: live request handles owned by us.
            unsafe { super::progress::wait(r, super::status_ignore()) };
        }
    }
}

/// The next message with `tag` from any rank on `comm`, received whole into a buffer of its
/// own size (MPI_Improbe, then MPI_Mrecv): its source and bytes, or `None` when none is
/// waiting.
pub fn recv_any_probed(comm: MPI_Comm, tag: c_int) -> MpiResult<Option<(u32, Vec<u8>)>> {
    // SAFETY: MPI_Message is a plain handle.
    let mut msg: mpi_sys::MPI_Message = unsafe { std::mem::zeroed() };
    let (mut source, mut bytes): (c_int, c_int) = (0, 0);
    // SAFETY: writes one handle and two ints.
    if unsafe { super::c::mpicast_c_improbe(comm, tag, &mut msg, &mut source, &mut bytes) } == 0 {
        return Ok(None);
    }
    let mut buf = vec![0u8; bytes.max(0) as usize];
    // SAFETY: `buf` holds exactly the probed message's bytes; the matched message is
    // received once.
    check(unsafe {
        mpi_sys::PMPI_Mrecv(
            buf.as_mut_ptr() as *mut c_void,
            bytes,
            super::byte(),
            &mut msg,
            super::status_ignore(),
        )
    })?;
    Ok(Some((source as u32, buf)))
}
