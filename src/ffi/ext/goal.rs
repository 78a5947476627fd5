//! GOAL schedules through the C API: build or load a program, bind buffers, start, wait.

use super::super::guard;
use super::{
    check, request, MPICAST_Request, MPICAST_Status, ARG, ERR_MPI, INTERNAL, NULL_ARG, OK,
};
use crate::coll::goal::{self as progress, Exec, RoundsRun, RunCell, Spare};
use crate::ffi::error::goal_status;
use crate::host::p2p::Region;
use crate::host::{self, MPI_Comm};
use crate::sched::{
    BufRef, Builder, Execution, Func, Op, Schedule, TopoSource, WindowedExecution, ANY_PEER,
    ANY_TAG,
};
use crate::session::CommState;
use crate::transport::goal::{self as core, GoalBackend, Loaded, UserFunc};
use crate::transport::goal_mcast::{self, McastRun};
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A GOAL program bound to a communicator: created with MPICAST_Goal_create, owned
/// by the caller until MPICAST_Goal_free. One handle is used by one thread at a time.
#[allow(non_camel_case_types)]
pub struct MPICAST_Goal {
    // Declared first so that it drops before the program whose schedule it borrows (and
    // `abandon` ends it first in any case).
    run: Option<RunCell>,
    request: Box<MPICAST_Request>,
    loaded: Option<Box<Loaded>>,
    comm: MPI_Comm,
    rank: u32,
    size: u32,
    bound: Vec<(String, Region)>,
    scratch: Vec<u8>,
    /// Registered user functions; `exec user N` calls `users[N]`.
    users: Vec<UserFunc>,
    /// The schedule being built with MPICAST_Goal_send/_recv/_exec/_requ.
    building: Option<Building>,
    /// mpicast's state of `comm` (its multicast channel), made at the first start of a
    /// program with multicast actions.
    mcast: Option<Arc<Mutex<CommState>>>,
    /// The active run is shared with the progress thread.
    threaded: bool,
    /// The active run's registration with the process's progress step
    /// (`progress::register_pending`), until the handle collects or abandons it.
    pending: Option<u64>,
    /// The active run is the program in rounds (`rounds`), not `run`.
    in_rounds: bool,
    /// `comm` among the communicators that cover (`host::progress::add_cover`): the blocking
    /// collectives within it poll on every member, so that a started run goes on through them.
    cover: Option<u64>,
    /// A binary schedule streamed from its mapped file (`MPICAST_GOAL_WINDOW` and
    /// MPICAST_Goal_load_file), with where this rank's checked section starts; `loaded` then
    /// carries its buffers and an empty schedule.
    stream: Option<(Box<host::mapped::Mapped>, crate::goal::binary::StreamStart)>,
    /// The loaded program bound to its memory as a run in rounds (`host::p2p::Rounds`),
    /// made at the first start of a layered point-to-point program without the progress
    /// thread and run again by later starts until the program, a binding or a function
    /// changes (`unpark`). Its runs do not use `run`; shared with the progress step as `run`.
    rounds: Option<Arc<Mutex<RoundsRun>>>,
    /// The memory of the last run, for the next one.
    spare: Spare,
    error: CString,
}

/// A schedule under construction through the builder calls: each action's memory becomes a
/// buffer of its own, named `_builder<k>` and bound at compile time.
#[derive(Default)]
struct Building {
    b: Builder,
    regions: Vec<Region>,
}

impl Building {
    fn buf(&mut self, r: Region) -> Result<BufRef, String> {
        let slot = u16::try_from(self.regions.len() + 1)
            .ok()
            .filter(|&s| s < crate::sched::SCRATCH_SLOT)
            .ok_or("goal: error: too many builder buffers")?;
        self.regions.push(r);
        Ok(BufRef {
            slot,
            offset: 0,
            len: r.len(),
        })
    }
}

const INVALID: c_int = MPICAST_Status::MPICAST_ERR_GOAL_INVALID as c_int;
const STATE: c_int = MPICAST_Status::MPICAST_ERR_GOAL_STATE as c_int;

impl MPICAST_Goal {
    /// A run is active (started and not yet completed or abandoned).
    fn busy(&self) -> bool {
        self.run.is_some() || self.in_rounds
    }

    /// Drops the program in rounds, its outstanding requests cancelled now, under its lock:
    /// a progress step of another thread may still hold a reference to it for a moment.
    fn end_rounds(&mut self) {
        if let Some(rr) = self.rounds.take() {
            let mut g = crate::lock::lock(&rr);
            g.rounds = crate::host::p2p::Rounds::new(self.comm);
        }
    }

    /// The active run leaves the process's progress step (its handle collects or abandons it).
    fn unregister(&mut self) {
        if let Some(id) = self.pending.take() {
            progress::unregister(id);
        }
        self.in_rounds = false;
    }

    /// The program, a buffer binding or a function is about to change (or the handle to
    /// go): what a run kept for the next start goes.
    fn unpark(&mut self) {
        self.spare.unpark();
        self.unregister();
        self.end_rounds();
    }

    /// Installs a loaded (or compiled) program, or records why there is none.
    fn install(&mut self, l: Result<Loaded, String>) -> c_int {
        match l {
            Ok(l) => {
                self.unpark();
                self.loaded = Some(Box::new(l));
                self.stream = None;
                self.error = CString::default();
                OK
            }
            Err(msg) => self.fail(INVALID, msg),
        }
    }

    /// A peer rank of the communicator (`any`: MPI_ANY_SOURCE allowed).
    fn peer(&self, r: c_int, any: bool) -> Option<u32> {
        if any && r == crate::host::any_source() {
            Some(ANY_PEER)
        } else {
            u32::try_from(r).ok().filter(|&r| r < self.size)
        }
    }

    /// Adds an action to the schedule being built.
    fn add(
        &mut self,
        op: impl FnOnce(&mut Building) -> Result<Op, String>,
        action_out: *mut c_int,
    ) -> c_int {
        let bd = self.building.get_or_insert_with(Building::default);
        if bd.b.len() >= c_int::MAX as usize {
            return self.fail(STATE, "goal: error: the schedule being built is full");
        }
        let op = match op(bd) {
            Ok(op) => op,
            Err(m) => return self.fail(STATE, m),
        };
        let id = bd.b.add(op);
        // SAFETY: the exported callers checked `action_out` is non-NULL and writable.
        unsafe { action_out.write(id as c_int) };
        OK
    }

    /// With a sliding window configured: maps `path` and, if it is a binary schedule, keeps
    /// it as a stream (this rank's section checked in one pass, nothing held per action; the
    /// cross-rank checks of a whole load are skipped: `mpicast goal check` does them).
    /// None when the file is text (loaded whole instead).
    fn load_stream(&mut self, path: &str) -> Option<c_int> {
        let map = match host::mapped::Mapped::open(path) {
            Ok(m) => m,
            Err(e) => return Some(self.fail(INVALID, format!("{path}: error: cannot read: {e}"))),
        };
        if !map.bytes().starts_with(&crate::goal::binary::MAGIC) {
            return None;
        }
        let release = &mut |at: usize| map.release_before(at);
        let info = match crate::goal::binary::stream_rank_releasing(map.bytes(), self.rank, release)
        {
            Ok((info, _)) => info,
            Err(e) => return Some(self.fail(INVALID, format!("{path}: error: {e}"))),
        };
        if !info.local_view && info.num_ranks != self.size {
            let m = format!(
                "{path}: error: the program describes {} ranks, the communicator has {}",
                info.num_ranks, self.size
            );
            return Some(self.fail(INVALID, m));
        }
        if info.has_mcast {
            let m = format!(
                "{path}: error: multicast actions are not streamed (MPICAST_GOAL_WINDOW): \
                 load the program whole, without the window"
            );
            return Some(self.fail(INVALID, m));
        }
        let start = info.start;
        let loaded = Loaded {
            schedule: Builder::new().build().expect("an empty schedule"),
            buffers: info.buffers,
            needed: info.needed,
            scratch_len: info.scratch_len,
            users: info.users,
            mcast: Default::default(),
            // Streamed runs go through the window.
            layers: None,
        };
        let status = self.install(Ok(loaded));
        self.stream = Some((Box::new(map), start));
        Some(status)
    }

    /// mpicast's state of the handle's communicator, made on first use (collective over it).
    fn mcast_state(&mut self) -> Result<Arc<Mutex<CommState>>, c_int> {
        if let Some(s) = &self.mcast {
            return Ok(s.clone());
        }
        let session = check::session();
        match session.comm_state(self.comm, "MPICAST_Goal_start") {
            Ok(s) => {
                self.mcast = Some(s.clone());
                Ok(s)
            }
            Err(e) => Err(self.fail(
                ERR_MPI,
                format!("goal: error: setting up multicast on the communicator: {e}"),
            )),
        }
    }

    fn fail(&mut self, status: c_int, msg: impl Into<String>) -> c_int {
        let msg: String = msg.into().replace('\0', " ");
        self.error = CString::new(msg).unwrap_or_default();
        status
    }

    /// A started run becomes the handle's active run; its request goes to `request_out`
    /// (non-NULL).
    fn begin(&mut self, run: RunCell, request_out: *mut *mut MPICAST_Request) -> c_int {
        self.threaded = progress::register(&run);
        if let RunCell::Shared(r) = &run {
            self.pending = Some(progress::register_pending(r));
        }
        self.run = Some(run);
        self.hand_out(request_out)
    }

    /// The program in rounds started: registered with the process's progress step as `begin`
    /// registers a run; its request goes to `request_out` (non-NULL).
    fn begin_rounds(&mut self, request_out: *mut *mut MPICAST_Request) -> c_int {
        if let Some(rr) = &self.rounds {
            self.in_rounds = true;
            self.pending = Some(progress::register_pending(rr));
        }
        self.hand_out(request_out)
    }

    /// A run started (in `run`, or in `rounds` with nothing further to record): writes
    /// the handle's request to `request_out`.
    fn hand_out(&mut self, request_out: *mut *mut MPICAST_Request) -> c_int {
        let req: *mut MPICAST_Request = &mut *self.request;
        // SAFETY: the caller checked `request_out` non-NULL.
        unsafe { request_out.write(req) };
        OK
    }

    fn start_failed(&mut self, e: core::GoalError) -> c_int {
        self.fail(goal_status(&e), format!("goal: start failed: {e}"))
    }

    /// Ends an active run; outstanding requests are cancelled first. Under the run's lock
    /// when it is shared, so the progress thread never touches it afterwards.
    fn abandon(&mut self) {
        self.unregister();
        if let Some(r) = self.run.take() {
            self.spare.retire(r);
        }
    }

    /// Drives the active run (`block`: until done). Returns done.
    pub(super) fn drive(&mut self, block: bool) -> Result<bool, c_int> {
        if self.in_rounds {
            let Some(rr) = self.rounds.as_ref() else {
                self.unregister();
                return Ok(true);
            };
            // Under the lock: the progress step skips the run meanwhile (a wait polls it).
            let mut r = crate::lock::lock(rr);
            let moved = match r.failed.take() {
                Some(e) => Err(e),
                None if !r.rounds.is_active() => Ok(true),
                // Waits poll only for other work (`host::progress::driving`).
                None if block => host::progress::driving(|| r.rounds.wait().map(|()| true)),
                None => r.rounds.test(),
            };
            drop(r);
            return match moved {
                Ok(false) => {
                    // A test loop of the owner's keeps the rest of the process moving too
                    // (MPI's progress rule): other runs and the forwarding engines.
                    crate::transport::progress::poll_in_loop();
                    Ok(false)
                }
                Ok(true) => {
                    self.unregister();
                    Ok(true)
                }
                Err(e) => {
                    self.unregister();
                    // Outstanding requests cancelled.
                    self.end_rounds();
                    let e = core::GoalError::Mpi(e);
                    Err(self.fail(goal_status(&e), format!("goal: run failed: {e}")))
                }
            };
        }
        // Without the progress thread nobody else drives the run: waiting may block inside
        // the host MPI until a request completes, as a hand-written MPI_Waitall does.
        let wait_in_mpi = block && !self.threaded;
        let outcome = loop {
            // Borrowed, not cloned: when the run ends, `abandon` finds its cell unshared and
            // keeps it for the next run.
            let Some(run) = self.run.as_mut() else {
                return Ok(true);
            };
            let mut r = run.lock();
            // Blocking with a shared run's lock held would stall the progress thread for
            // nothing: step, and let go between steps. Steps that complete actions follow
            // each other at once; only a step that completed nothing gives the core away.
            let before = r.completed();
            r.set_blocking(wait_in_mpi);
            let over = host::progress::driving(|| r.step(false));
            r.set_blocking(false);
            if over {
                break r.take_outcome();
            }
            let moved = r.completed() != before;
            drop(r);
            if !moved {
                // Nothing of this run moved: the rest of the process's progress (other runs,
                // the forwarding engines) gets its step, as in every wait and test loop of
                // MPI's (a relay of someone else's multicast may be waiting on this rank).
                crate::transport::progress::poll_in_loop();
            }
            if !block {
                return Ok(false);
            }
            if !moved {
                std::thread::yield_now();
            }
        };
        self.abandon();
        match outcome {
            None | Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(self.fail(goal_status(&e), format!("goal: run failed: {e}"))),
        }
    }
}

impl Drop for MPICAST_Goal {
    fn drop(&mut self) {
        self.abandon();
        self.unpark();
        if let Some(id) = self.cover.take() {
            host::progress::remove_forwarder(id);
        }
        if host::is_active() {
            let _ = host::comm::free(self.comm);
        }
    }
}

/// Creates a GOAL handle on a private duplicate of `comm` (collective over `comm`, like
/// MPI_Comm_dup). On success `*goal_out` owns the handle: free it with MPICAST_Goal_free before
/// MPI_Finalize. `goal_out` must not be NULL.
///
/// # Safety
/// `goal_out` is NULL or valid for writing one pointer; `comm` is a valid intracommunicator.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_create(
    comm: MPI_Comm,
    goal_out: *mut *mut MPICAST_Goal,
) -> c_int {
    guard(
        "MPICAST_Goal_create",
        || INTERNAL,
        || {
            const CALL: &str = "MPICAST_Goal_create";
            let checked = check::non_null(CALL, goal_out, "goal_out")
                .and_then(|()| check::mpi_up(CALL))
                .and_then(|()| check::intra(CALL, comm, "comm"));
            if let Err(s) = checked {
                return s;
            }
            let Ok(dup) = host::comm::dup(comm) else {
                return ERR_MPI;
            };
            let (Ok(rank), Ok(size)) = (host::comm::rank(dup), host::comm::size(dup)) else {
                let _ = host::comm::free(dup);
                return ERR_MPI;
            };
            let mut g = Box::new(MPICAST_Goal {
                run: None,
                request: Box::new(MPICAST_Request::goal(std::ptr::null_mut())),
                loaded: None,
                comm: dup,
                rank,
                size,
                bound: Vec::new(),
                scratch: Vec::new(),
                users: Vec::new(),
                building: None,
                mcast: None,
                threaded: false,
                pending: None,
                in_rounds: false,
                cover: host::progress::add_cover(dup).ok(),
                stream: None,
                rounds: None,
                spare: Spare::default(),
                error: CString::default(),
            });
            let p: *mut MPICAST_Goal = &mut *g;
            g.request.goal = p;
            request::enlist(&mut *g.request);
            let raw = Box::into_raw(g);
            request::enlist_goal(raw);
            // SAFETY: checked non-NULL; the caller provides a writable pointer.
            unsafe { goal_out.write(raw) };
            OK
        },
    )
}

/// Parses `text` (NUL-terminated GOAL, either dialect: the paper's or LogGOPSim's), validates
/// the whole program and keeps this rank's schedule, replacing any previous program (buffer
/// bindings stay). Not collective. On failure returns MPICAST_ERR_GOAL_INVALID and
/// MPICAST_Goal_error gives `goal:line:col: error: message`. The text is copied.
///
/// # Safety
/// `goal` is NULL or a live handle; `text` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_load_text(
    goal: *mut MPICAST_Goal,
    text: *const c_char,
) -> c_int {
    guard(
        "MPICAST_Goal_load_text",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || text.is_null() {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle used by one thread at a time.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is active");
            }
            // SAFETY: checked non-NULL; NUL-terminated per the contract.
            let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
            g.install(core::load(bytes, "goal", g.rank, g.size))
        },
    )
}

/// Like MPICAST_Goal_load_text, from the file at `path`: GOAL text of either dialect, or a
/// binary schedule (`mpicast goal asm`), recognised by its magic. Errors name the file
/// (`path:line:col: error: ...`); a file that cannot be read gives MPICAST_ERR_GOAL_INVALID
/// with the system's reason. Not collective. With MPICAST_GOAL_WINDOW set, a binary schedule
/// is not loaded but streamed from a read-only mapping of the file as runs advance (this
/// rank's section is checked, not the matching across ranks; the file must stay unchanged
/// until the handle is freed or another program is loaded).
///
/// # Safety
/// `goal` is NULL or a live handle; `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_load_file(
    goal: *mut MPICAST_Goal,
    path: *const c_char,
) -> c_int {
    guard(
        "MPICAST_Goal_load_file",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || path.is_null() {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle used by one thread at a time.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is active");
            }
            // SAFETY: checked non-NULL; NUL-terminated per the contract.
            let path = unsafe { CStr::from_ptr(path) }
                .to_string_lossy()
                .into_owned();
            if host::init::goal_window().0 > 0 {
                // A binary file is streamed; text is loaded whole below.
                if let Some(status) = g.load_stream(&path) {
                    return status;
                }
            }
            match std::fs::read(&path) {
                Ok(bytes) => g.install(core::load(&bytes, &path, g.rank, g.size)),
                Err(e) => g.fail(INVALID, format!("{path}: error: cannot read: {e}")),
            }
        },
    )
}

/// Like MPICAST_Goal_load_text, from `len` bytes at `bytes`: a binary schedule (or text). The
/// bytes are copied. Not collective.
///
/// # Safety
/// `goal` is NULL or a live handle; `bytes` is NULL or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_load_binary(
    goal: *mut MPICAST_Goal,
    bytes: *const c_void,
    len: usize,
) -> c_int {
    guard(
        "MPICAST_Goal_load_binary",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || (bytes.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle used by one thread at a time.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is active");
            }
            let data: &[u8] = if len == 0 {
                &[]
            } else {
                // SAFETY: checked non-NULL; valid for `len` bytes per the contract.
                unsafe { std::slice::from_raw_parts(bytes as *const u8, len) }
            };
            g.install(core::load(data, "goal", g.rank, g.size))
        },
    )
}

/// A user function for GOAL `exec` actions: computes into `dst` (`dst_len` bytes) from `src`
/// (`src_len` bytes), with the `ctx` given at registration; returns 0 on success.
#[allow(non_camel_case_types)]
pub type MPICAST_Goal_function = Option<
    unsafe extern "C" fn(
        src: *const c_void,
        src_len: usize,
        dst: *mut c_void,
        dst_len: usize,
        ctx: *mut c_void,
    ) -> c_int,
>;

/// Registers `func` with `ctx` as this handle's next user function and writes its number to
/// `*id_out` (0 for the first, then 1, 2, ...): `exec user N` in GOAL text, or "user N" in
/// MPICAST_Goal_exec, calls it as `func(src, src_len, dst, dst_len, ctx)`. It must return 0 on
/// success; anything else ends the run with MPICAST_ERR_GOAL_INVALID. `src` may overlap `dst`.
/// The function runs on the thread that drives progress: the application's, inside
/// MPICAST_Goal_test, MPICAST_Goal_wait or any other MPI call it makes while the run is
/// started, or the progress thread (see MPICAST_PROGRESS).
///
/// # Safety
/// `goal` is NULL or a live handle; `func` a function of the stated type that stays callable
/// while the handle lives; `id_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_reg_func(
    goal: *mut MPICAST_Goal,
    func: MPICAST_Goal_function,
    ctx: *mut c_void,
    id_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_reg_func",
        || INTERNAL,
        || {
            let (false, Some(f), false) = (!request::goal_live(goal), func, id_out.is_null())
            else {
                return NULL_ARG;
            };
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            if g.users.len() > u16::MAX as usize {
                return g.fail(STATE, "goal: error: 65536 user functions are registered");
            }
            g.unpark();
            g.users.push(UserFunc { f, ctx });
            // SAFETY: checked non-NULL.
            unsafe { id_out.write((g.users.len() - 1) as c_int) };
            OK
        },
    )
}

/// Adds to the schedule being built (this rank's local view; the other ranks build theirs)
/// a send of `len` bytes at `buf` to rank `dest` of the communicator with `tag` (0..32767),
/// and writes the action's number to `*action_out`. The memory must stay valid until the
/// handle is freed or another program is compiled or loaded. See MPICAST_Goal_compile.
///
/// # Safety
/// `goal` is NULL or a live handle; `buf` valid for reads of `len` bytes (NULL only with 0)
/// for the life of the program; `action_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_send(
    goal: *mut MPICAST_Goal,
    buf: *const c_void,
    len: usize,
    dest: c_int,
    tag: c_int,
    action_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_send",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || action_out.is_null() || (buf.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            let Some(peer) = g.peer(dest, false) else {
                return g.fail(
                    INVALID,
                    format!("goal: error: send to rank {dest}: no such rank"),
                );
            };
            let Some(tag) = tag_of(tag, false) else {
                return g.fail(
                    INVALID,
                    format!("goal: error: send tag {tag} is not 0..32767"),
                );
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes; sends only read.
            let r = unsafe { Region::new(buf as *mut u8, len) };
            g.add(
                |bd| {
                    Ok(Op::Send {
                        peer,
                        tag,
                        buf: bd.buf(r)?,
                    })
                },
                action_out,
            )
        },
    )
}

/// Adds a receive of up to `len` bytes into `buf` from rank `source` (or MPI_ANY_SOURCE) with
/// `tag` (0..32767 or MPI_ANY_TAG). Otherwise as MPICAST_Goal_send.
///
/// # Safety
/// As MPICAST_Goal_send, with `buf` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_recv(
    goal: *mut MPICAST_Goal,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
    action_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_recv",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || action_out.is_null() || (buf.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            let Some(peer) = g.peer(source, true) else {
                return g.fail(
                    INVALID,
                    format!("goal: error: receive from rank {source}: no such rank"),
                );
            };
            let Some(tag) = tag_of(tag, true) else {
                return g.fail(
                    INVALID,
                    format!("goal: error: receive tag {tag} is not 0..32767 or MPI_ANY_TAG"),
                );
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes.
            let r = unsafe { Region::new(buf as *mut u8, len) };
            g.add(
                |bd| {
                    Ok(Op::Recv {
                        peer,
                        tag,
                        buf: bd.buf(r)?,
                    })
                },
                action_out,
            )
        },
    )
}

/// Adds a multicast of `len` bytes at `buf` from this rank to every other rank of the
/// communicator: each of them must add a matching MPICAST_Goal_mcast_recv naming this rank
/// (the k-th multicast of a root pairs with the k-th multicast receive from it). Carried by
/// the communicator's reliable multicast channel, or by point-to-point messages where it
/// has none. Otherwise as MPICAST_Goal_send.
///
/// # Safety
/// As MPICAST_Goal_send.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_mcast_send(
    goal: *mut MPICAST_Goal,
    buf: *const c_void,
    len: usize,
    action_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_mcast_send",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || action_out.is_null() || (buf.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes; sends only read.
            let r = unsafe { Region::new(buf as *mut u8, len) };
            g.add(|bd| Ok(Op::McastSend { buf: bd.buf(r)? }), action_out)
        },
    )
}

/// Adds the receive of a multicast from rank `root` (not this rank) into `buf`, which holds up
/// to `len` bytes (a longer multicast is an error of the run). Otherwise as
/// MPICAST_Goal_mcast_send.
///
/// # Safety
/// As MPICAST_Goal_send, with `buf` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_mcast_recv(
    goal: *mut MPICAST_Goal,
    buf: *mut c_void,
    len: usize,
    root: c_int,
    action_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_mcast_recv",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || action_out.is_null() || (buf.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            let Some(root) = g.peer(root, false).filter(|&r| r != g.rank) else {
                return g.fail(
                    INVALID,
                    format!(
                        "goal: error: multicast receive from rank {root}: not another rank of the communicator"
                    ),
                );
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes.
            let r = unsafe { Region::new(buf as *mut u8, len) };
            g.add(
                |bd| {
                    Ok(Op::McastRecv {
                        root,
                        buf: bd.buf(r)?,
                    })
                },
                action_out,
            )
        },
    )
}

/// Adds a local computation `dst = src (function) dst`, element-wise: `function` is a GOAL
/// function name such as "sumInt32", "maxFloat64", "copyUInt8" (predefined: equal lengths, a
/// whole number of elements) or "user N" (a function from MPICAST_Goal_reg_func, registered
/// by the time the program starts). Otherwise as MPICAST_Goal_send.
///
/// # Safety
/// As MPICAST_Goal_send; `function` NULL or NUL-terminated; `src` readable for `src_len`
/// bytes and `dst` writable for `dst_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_exec(
    goal: *mut MPICAST_Goal,
    function: *const c_char,
    src: *const c_void,
    src_len: usize,
    dst: *mut c_void,
    dst_len: usize,
    action_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_exec",
        || INTERNAL,
        || {
            if !request::goal_live(goal)
                || function.is_null()
                || action_out.is_null()
                || (src.is_null() && src_len > 0)
                || (dst.is_null() && dst_len > 0)
            {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            // SAFETY: NUL-terminated per the contract.
            let name = unsafe { CStr::from_ptr(function) }
                .to_string_lossy()
                .into_owned();
            let Some(func) = Func::from_name(&name) else {
                return g.fail(
                    INVALID,
                    format!(
                        "goal: error: `{name}` is not a function: expected e.g. sumInt32 \
                         (max min sum prod land lor lxor band bor bxor copy with Int, UInt or \
                         Float and 8, 16, 32 or 64) or `user N`"
                    ),
                );
            };
            if let Func::Predef(p) = func {
                if let Err(e) = crate::sched::func::check_lengths(p, src_len, dst_len) {
                    return g.fail(INVALID, format!("goal: error: exec {name}: {e}"));
                }
            }
            // SAFETY: the caller promises both stay valid for their lengths.
            let (s, d) = unsafe {
                (
                    Region::new(src as *mut u8, src_len),
                    Region::new(dst as *mut u8, dst_len),
                )
            };
            g.add(
                |bd| {
                    Ok(Op::Exec {
                        func,
                        src: bd.buf(s)?,
                        dst: bd.buf(d)?,
                    })
                },
                action_out,
            )
        },
    )
}

/// Makes action `action` wait until action `required` has completed (GOAL's
/// `requ action -> required`). Both are numbers returned by the builder calls of the schedule
/// being built. Cycles are reported by MPICAST_Goal_compile.
///
/// # Safety
/// `goal` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_requ(
    goal: *mut MPICAST_Goal,
    action: c_int,
    required: c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_requ",
        || INTERNAL,
        || {
            if !request::goal_live(goal) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            let n = g.building.as_ref().map_or(0, |b| b.b.len());
            let ok = |a: c_int| a >= 0 && (a as usize) < n;
            if !ok(action) || !ok(required) {
                return g.fail(
                    INVALID,
                    format!(
                        "goal: error: requ {action} -> {required}: the schedule being built has \
                         actions 0..{n}"
                    ),
                );
            }
            if let Some(b) = g.building.as_mut() {
                b.b.requ(required as u32, action as u32);
            }
            OK
        },
    )
}

/// Ends the schedule being built and makes it this handle's program, replacing any earlier
/// one (as MPICAST_Goal_load_text would); the builder starts empty again. Every rank of the
/// communicator compiles its own part, and the parts must match (each send a receive, sizes
/// that fit): unlike loaded text, a built schedule is not checked across ranks. Errors:
/// MPICAST_ERR_GOAL_INVALID for a dependency cycle, MPICAST_ERR_GOAL_STATE during a run.
///
/// # Safety
/// `goal` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_compile(goal: *mut MPICAST_Goal) -> c_int {
    guard(
        "MPICAST_Goal_compile",
        || INTERNAL,
        || {
            if !request::goal_live(goal) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is active");
            }
            let Building { b, regions } = g.building.take().unwrap_or_default();
            let schedule: Schedule = match b.build() {
                Ok(s) => s,
                Err(e) => return g.fail(INVALID, format!("goal: error: {e}")),
            };
            let mut buffers = vec![crate::goal::DEFAULT_BUFFER.to_string()];
            let mut needed = vec![0usize];
            g.unpark();
            g.bound.retain(|(n, _)| !n.starts_with("_builder"));
            for (k, r) in regions.into_iter().enumerate() {
                let name = format!("_builder{}", k + 1);
                needed.push(r.len());
                g.bound.push((name.clone(), r));
                buffers.push(name);
            }
            let mut users: Vec<u16> = schedule
                .actions()
                .filter_map(|(_, op)| match op {
                    Op::Exec {
                        func: Func::User(n),
                        ..
                    } => Some(*n),
                    _ => None,
                })
                .collect();
            users.sort_unstable();
            users.dedup();
            let mcast = goal_mcast::number(&schedule, g.rank, g.size);
            g.install(Ok(Loaded {
                layers: crate::sched::Layers::of(&schedule),
                schedule,
                buffers,
                needed,
                scratch_len: 0,
                users,
                mcast,
            }))
        },
    )
}

fn tag_of(tag: c_int, recv: bool) -> Option<u32> {
    if recv && tag == crate::host::p2p::any_tag() {
        Some(ANY_TAG)
    } else {
        u32::try_from(tag).ok().filter(|&t| t <= core::MAX_TAG)
    }
}

/// Binds the buffer named `name` (`buf` is the default buffer of un-named references) to
/// `len` bytes at `ptr`, replacing an earlier binding of that name. The memory stays the
/// caller's; it must remain valid and untouched while a run is active. Not allowed during a
/// run (MPICAST_ERR_GOAL_STATE).
///
/// # Safety
/// `goal` is NULL or a live handle; `name` NULL or NUL-terminated; `ptr` valid for reads and
/// writes of `len` bytes during every later run (NULL only with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_bind_buffer(
    goal: *mut MPICAST_Goal,
    name: *const c_char,
    ptr: *mut c_void,
    len: usize,
) -> c_int {
    guard(
        "MPICAST_Goal_bind_buffer",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || name.is_null() || (ptr.is_null() && len > 0) {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is active");
            }
            // SAFETY: NUL-terminated per the contract.
            let name = unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: the caller promises `ptr` is valid for `len` bytes during runs.
            let r = unsafe { Region::new(ptr as *mut u8, len) };
            g.unpark();
            g.bound.retain(|(n, _)| *n != name);
            g.bound.push((name, r));
            OK
        },
    )
}

/// Starts a run of the loaded program on this rank (the matching ranks must start theirs
/// too). On success `*request_out` is the run's request, owned by `goal` (do not free it);
/// collect it with MPICAST_Goal_test or MPICAST_Goal_wait. Once started, the run completes
/// as long as its ranks are in any MPI call: it moves on inside MPICAST_Goal_test and
/// MPICAST_Goal_wait, and also inside every other MPI call of this rank that waits or tests
/// (MPI_Barrier, MPI_Recv, MPI_Wait, ..., in both progress modes), so a rank may start its
/// part and then block elsewhere. MPICAST_ERR_GOAL_STATE when no program is loaded, a run is
/// active, or a buffer the program uses is unbound or too small.
///
/// # Safety
/// `goal` is NULL or a live handle; `request_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_start(
    goal: *mut MPICAST_Goal,
    request_out: *mut *mut MPICAST_Request,
) -> c_int {
    guard(
        "MPICAST_Goal_start",
        || INTERNAL,
        || {
            if !request::goal_live(goal) || request_out.is_null() {
                return NULL_ARG;
            }
            // SAFETY: checked non-NULL; a live handle.
            let g = unsafe { &mut *goal };
            if g.busy() {
                return g.fail(STATE, "goal: error: a run is already active");
            }
            let Some(l) = g.loaded.as_deref() else {
                return g.fail(STATE, "goal: error: no program loaded");
            };
            // The program in rounds, bound at an earlier start.
            if let Some(rr) = g.rounds.as_ref() {
                let started = {
                    let mut r = crate::lock::lock(rr);
                    r.failed = None;
                    r.rounds.start()
                };
                return match started {
                    Ok(()) => g.begin_rounds(request_out),
                    Err(e) => {
                        g.end_rounds();
                        g.start_failed(core::GoalError::Mpi(e))
                    }
                };
            }
            // The last run of this program, with the same buffers and functions, kept whole.
            if let Some(r) = g.spare.restart() {
                return match r {
                    Ok(cell) => g.begin(cell, request_out),
                    Err(e) => g.start_failed(e),
                };
            }
            // First, while every rank is here: a program with multicasts needs the
            // communicator's channel, made collectively at the first such start.
            let state = if l.mcast.is_empty() {
                None
            } else {
                match g.mcast_state() {
                    Ok(s) => Some(s),
                    Err(status) => return status,
                }
            };
            let Some(l) = g.loaded.as_deref() else {
                return g.fail(STATE, "goal: error: no program loaded");
            };
            let mut mem = std::mem::take(&mut g.spare.backend);
            let slots = &mut mem.slots;
            for (name, &need) in l.buffers.iter().zip(&l.needed) {
                let r = g.bound.iter().find(|(n, _)| n == name).map(|&(_, r)| r);
                match r {
                    None if need > 0 => {
                        let m = format!("goal: error: buffer `{name}` ({need} bytes) is not bound");
                        return g.fail(STATE, m);
                    }
                    Some(r) if r.len() < need => {
                        let m = format!(
                        "goal: error: buffer `{name}` is bound to {} bytes, the program uses {need}",
                        r.len()
                    );
                        return g.fail(STATE, m);
                    }
                    _ => slots.push(r),
                }
            }
            if let Some(n) = l.users.iter().find(|&&n| n as usize >= g.users.len()) {
                let m = format!(
                    "goal: error: the program calls user function {n}, but {} are registered (MPICAST_Goal_reg_func)",
                    g.users.len()
                );
                return g.fail(STATE, m);
            }
            mem.users.extend(g.users.iter().copied().map(Some));
            let mcast = state.map(|s| (McastRun::begin(s, &l.mcast), l.mcast.of.clone()));
            let scratch_len = l.scratch_len;
            if g.scratch.len() < scratch_len {
                g.scratch.resize(scratch_len, 0);
            }
            // SAFETY: the scratch vector lives in the handle and is not resized while a run is
            // active (only here, before the run exists); the run ends before the handle drops.
            let scratch = unsafe { Region::new(g.scratch.as_mut_ptr(), g.scratch.len()) };
            let (window, verbose) = host::init::goal_window();
            // A point-to-point program in rounds, run whole by the application thread: one
            // wait call per layer, no bookkeeping per action (`sched::Layers`).
            let in_rounds = g.stream.is_none()
                && (window == 0 || l.schedule.len() <= window)
                && !crate::transport::progress::thread::threads_wanted();
            if let Some(layers) = l.layers.as_ref().filter(|_| in_rounds) {
                let r = core::rounds(g.comm, &l.schedule, layers, &mem.slots, scratch);
                mem.slots.clear();
                mem.users.clear();
                g.spare.backend = mem;
                let mut r = match r {
                    Ok(r) => r,
                    Err(e) => return g.start_failed(e),
                };
                if let Err(e) = r.start() {
                    drop(r);
                    return g.start_failed(core::GoalError::Mpi(e));
                }
                g.rounds = Some(Arc::new(Mutex::new(RoundsRun::new(r))));
                return g.begin_rounds(request_out);
            }
            let sched: *const crate::sched::Schedule = &l.schedule;
            // SAFETY: the schedule is boxed inside `loaded`, which is neither replaced
            // (load_text refuses during a run) nor dropped while `run` exists (`run` is declared
            // first and `abandon` clears it first), so the reference outlives its use.
            let sched: &'static crate::sched::Schedule = unsafe { &*sched };
            let mut backend = GoalBackend::with_memory(g.comm, mem, scratch, mcast);
            let mut run = if let Some((map, at)) = &g.stream {
                let map: *const host::mapped::Mapped = &**map;
                // SAFETY: the mapping is boxed in the handle and, like the schedule above,
                // neither replaced nor dropped while a run exists.
                let map: &'static host::mapped::Mapped = unsafe { &*map };
                // Checked at load; the file must not change while the handle streams it.
                let stream = crate::goal::binary::resume(map.bytes(), *at);
                say_once(&STREAMED_SAID, verbose, || {
                    format!(
                        "mpicast: rank {}: GOAL run of {} actions streamed from a mapped file through a sliding window of {window} (MPICAST_GOAL_WINDOW)",
                        g.rank,
                        stream.actions_left()
                    )
                });
                Exec::Streamed(Box::new(WindowedExecution::new(stream, window)), map, 0)
            } else if window > 0 && sched.len() > window {
                say_once(&WINDOWED_SAID, verbose, || {
                    format!(
                        "mpicast: rank {}: GOAL run of {} actions through a sliding window of {window} (MPICAST_GOAL_WINDOW)",
                        g.rank,
                        sched.len()
                    )
                });
                Exec::Windowed(Box::new(WindowedExecution::new(
                    TopoSource::new(sched),
                    window,
                )))
            } else {
                Exec::Full(Execution::with_memory(
                    sched,
                    std::mem::take(&mut g.spare.exec),
                ))
            };
            if let Err(e) = run.start(&mut backend) {
                drop(run);
                drop(backend);
                return g.start_failed(e);
            }
            // Shared always: the process's progress step moves every started run.
            let cell = RunCell::new(run, backend, &mut g.spare, true);
            g.begin(cell, request_out)
        },
    )
}

static STREAMED_SAID: AtomicBool = AtomicBool::new(false);
static WINDOWED_SAID: AtomicBool = AtomicBool::new(false);

/// With `MPICAST_VERBOSE` >= 1, writes `line()` to stderr (`session::say`) the first time
/// `said` is asked.
fn say_once(said: &AtomicBool, verbose: u8, line: impl FnOnce() -> String) {
    if verbose >= 1 && !said.swap(true, Ordering::Relaxed) {
        crate::session::say(&line());
    }
}

/// Drives the run until it completes. Returns MPICAST_OK at once for a completed run. On an
/// error the run is abandoned and MPICAST_Goal_error says why.
///
/// # Safety
/// `request` is NULL or a request of a live goal.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_wait(request: *mut MPICAST_Request) -> c_int {
    guard(
        "MPICAST_Goal_wait",
        || INTERNAL,
        || {
            if request.is_null() {
                return NULL_ARG;
            }
            // SAFETY: a request points to its live goal.
            let g = unsafe { &mut *(*request).goal };
            match g.drive(true) {
                Ok(_) => OK,
                Err(s) => s,
            }
        },
    )
}

/// One progress step; `*done_out` becomes 1 when the run completed, else 0 (written only on
/// success).
///
/// # Safety
/// `request` is NULL or a request of a live goal; `done_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_test(
    request: *mut MPICAST_Request,
    done_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Goal_test",
        || INTERNAL,
        || {
            if request.is_null() || done_out.is_null() {
                return NULL_ARG;
            }
            // SAFETY: a request points to its live goal.
            let g = unsafe { &mut *(*request).goal };
            match g.drive(false) {
                Ok(done) => {
                    // SAFETY: checked non-NULL.
                    unsafe { done_out.write(c_int::from(done)) };
                    OK
                }
                Err(s) => s,
            }
        },
    )
}

/// The last error message of `goal` as NUL-terminated text ("" when none), owned by the
/// handle and valid until its next call; NULL only when `goal` is NULL.
///
/// # Safety
/// `goal` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_error(goal: *const MPICAST_Goal) -> *const c_char {
    guard("MPICAST_Goal_error", std::ptr::null, || {
        if !request::goal_live(goal as *mut MPICAST_Goal) {
            return std::ptr::null();
        }
        // SAFETY: checked non-NULL; a live handle.
        unsafe { &*goal }.error.as_ptr()
    })
}

/// Frees the handle, its request and its communicator duplicate; an active run is
/// abandoned. Call before MPI_Finalize. NULL is a no-op.
///
/// # Safety
/// `goal` is NULL or a handle from MPICAST_Goal_create, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Goal_free(goal: *mut MPICAST_Goal) {
    guard(
        "MPICAST_Goal_free",
        || (),
        || {
            if request::goal_live(goal) {
                request::unlist_goal(goal);
                // SAFETY: created by Box::into_raw in MPICAST_Goal_create, live; ownership
                // returns here.
                let mut g = unsafe { Box::from_raw(goal) };
                request::unlist(&mut *g.request);
                drop(g);
            } else if !goal.is_null() {
                check::refuse(
                    "MPICAST_Goal_free",
                    ARG,
                    "goal is not a live GOAL handle (freed already, or never made)",
                );
            }
        },
    )
}
