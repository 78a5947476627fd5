//! The C side of GOAL schedules (`MPICAST_Goal_*`): build or load a program, bind buffers,
//! start, test, wait. Each call checks its pointers, converts its arguments (C memory into
//! `host::p2p::Region`s, C strings into text), calls the runtime (`coll::goal::Goal`), writes
//! its outputs, and records a failure's message for MPICAST_Goal_error with the status
//! `ffi::error::goal_fault_status` maps it to.

use super::super::guard;
use super::{check, request, MPICAST_Request, ARG, ERR_MPI, INTERNAL, NULL_ARG, OK};
use crate::coll::goal::{Goal, GoalFault, Lent, RunParts};
use crate::ffi::error::goal_fault_status;
use crate::host::p2p::{Region, UserFunc};
use crate::host::MPI_Comm;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

/// A GOAL program bound to a communicator: created with MPICAST_Goal_create, owned
/// by the caller until MPICAST_Goal_free. One handle is used by one thread at a time.
#[allow(non_camel_case_types)]
pub struct MPICAST_Goal {
    goal: Goal,
    request: Box<MPICAST_Request>,
    error: CString,
}

impl MPICAST_Goal {
    /// Records why a call failed (for MPICAST_Goal_error) and returns its status.
    fn fail(&mut self, e: GoalFault) -> c_int {
        let msg = e.to_string().replace('\0', " ");
        self.error = CString::new(msg).unwrap_or_default();
        goal_fault_status(&e)
    }

    /// A call's status: OK, or its failure recorded.
    fn status(&mut self, r: Result<(), GoalFault>) -> c_int {
        match r {
            Ok(()) => OK,
            Err(e) => self.fail(e),
        }
    }

    /// A program is loaded or compiled: the last error goes with the old program.
    fn installed(&mut self, r: Result<(), GoalFault>) -> c_int {
        if r.is_ok() {
            self.error = CString::default();
        }
        self.status(r)
    }

    /// A builder call's status, its action's number written to `action_out` (non-NULL).
    fn added(&mut self, r: Result<c_int, GoalFault>, action_out: *mut c_int) -> c_int {
        match r {
            Ok(id) => {
                // SAFETY: the exported callers checked `action_out` is non-NULL and writable.
                unsafe { action_out.write(id) };
                OK
            }
            Err(e) => self.fail(e),
        }
    }

    /// Drives the active run (`block`: until done). Returns done.
    pub(super) fn drive(&mut self, block: bool) -> Result<bool, c_int> {
        self.goal.drive(block).map_err(|e| self.fail(e))
    }
}

/// The memory a run borrows from its handle, for as long as the run exists.
///
/// # Safety
/// `p` is what `Goal::start` hands over: the parts of the handle's own memory.
unsafe fn lend(p: RunParts) -> Lent {
    // SAFETY: the schedule and the mapping are boxed inside the handle and the scratch area is
    // its vector; none is replaced, resized or dropped while a run exists (loading, compiling
    // and binding are refused during a run, the scratch is resized only before a run exists,
    // and `Goal` ends its run before it drops them: `RunParts`), so the borrows outlive
    // their use.
    unsafe {
        Lent {
            schedule: &*p.schedule,
            stream: p.stream.map(|m| &*m),
            scratch: Region::new(p.scratch, p.scratch_len),
        }
    }
}

/// The live handle `goal`, or NULL_ARG.
///
/// # Safety
/// `goal` is NULL or a pointer the caller promises is a handle used by this thread only.
unsafe fn live<'a>(goal: *mut MPICAST_Goal) -> Result<&'a mut MPICAST_Goal, c_int> {
    if !request::goal_live(goal) {
        return Err(NULL_ARG);
    }
    // SAFETY: checked live (so non-NULL); a live handle used by one thread at a time.
    Ok(unsafe { &mut *goal })
}

/// `len` bytes at `ptr` as a region (the caller checked that `ptr` is non-NULL or `len` 0).
///
/// # Safety
/// `ptr` valid for `len` bytes for as long as the region is used (the calls' contracts).
unsafe fn region(ptr: *const c_void, len: usize) -> Region {
    // SAFETY: the caller's promise.
    unsafe { Region::new(ptr as *mut u8, len) }
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
            let Ok(goal) = Goal::new(comm) else {
                return ERR_MPI;
            };
            let mut g = Box::new(MPICAST_Goal {
                goal,
                request: Box::new(MPICAST_Request::goal(std::ptr::null_mut())),
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !text.is_null() => g,
                _ => return NULL_ARG,
            };
            // SAFETY: checked non-NULL; NUL-terminated per the contract.
            let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
            let r = g.goal.load(bytes, "goal");
            g.installed(r)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !path.is_null() => g,
                _ => return NULL_ARG,
            };
            // SAFETY: checked non-NULL; NUL-terminated per the contract.
            let path = unsafe { CStr::from_ptr(path) }.to_string_lossy();
            let r = g.goal.load_file(&path);
            g.installed(r)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(bytes.is_null() && len > 0) => g,
                _ => return NULL_ARG,
            };
            let data: &[u8] = if len == 0 {
                &[]
            } else {
                // SAFETY: checked non-NULL; valid for `len` bytes per the contract.
                unsafe { std::slice::from_raw_parts(bytes as *const u8, len) }
            };
            let r = g.goal.load(data, "goal");
            g.installed(r)
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
            // SAFETY: the caller's contract.
            let (Ok(g), Some(f), false) = (unsafe { live(goal) }, func, id_out.is_null()) else {
                return NULL_ARG;
            };
            match g.goal.reg_func(UserFunc { f, ctx }) {
                Ok(id) => {
                    // SAFETY: checked non-NULL.
                    unsafe { id_out.write(id as c_int) };
                    OK
                }
                Err(e) => g.fail(e),
            }
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(action_out.is_null() || (buf.is_null() && len > 0)) => g,
                _ => return NULL_ARG,
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes; sends only read.
            let r = g.goal.send(unsafe { region(buf, len) }, dest, tag);
            g.added(r, action_out)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(action_out.is_null() || (buf.is_null() && len > 0)) => g,
                _ => return NULL_ARG,
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes.
            let r = g.goal.recv(unsafe { region(buf, len) }, source, tag);
            g.added(r, action_out)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(action_out.is_null() || (buf.is_null() && len > 0)) => g,
                _ => return NULL_ARG,
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes; sends only read.
            let r = g.goal.mcast_send(unsafe { region(buf, len) });
            g.added(r, action_out)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(action_out.is_null() || (buf.is_null() && len > 0)) => g,
                _ => return NULL_ARG,
            };
            // SAFETY: the caller promises `buf` stays valid for `len` bytes.
            let r = g.goal.mcast_recv(unsafe { region(buf, len) }, root);
            g.added(r, action_out)
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
            let missing = function.is_null()
                || action_out.is_null()
                || (src.is_null() && src_len > 0)
                || (dst.is_null() && dst_len > 0);
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !missing => g,
                _ => return NULL_ARG,
            };
            // SAFETY: NUL-terminated per the contract.
            let name = unsafe { CStr::from_ptr(function) }.to_string_lossy();
            // SAFETY: the caller promises both stay valid for their lengths.
            let (s, d) = unsafe { (region(src, src_len), region(dst, dst_len)) };
            let r = g.goal.exec(&name, s, d);
            g.added(r, action_out)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) => g,
                Err(s) => return s,
            };
            let r = g.goal.requ(action, required);
            g.status(r)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) => g,
                Err(s) => return s,
            };
            let r = g.goal.compile();
            g.installed(r)
        },
    )
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !(name.is_null() || (ptr.is_null() && len > 0)) => g,
                _ => return NULL_ARG,
            };
            // SAFETY: NUL-terminated per the contract.
            let name = unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: the caller promises `ptr` is valid for `len` bytes during runs.
            let r = g.goal.bind(name, unsafe { region(ptr, len) });
            g.status(r)
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
            // SAFETY: the caller's contract.
            let g = match unsafe { live(goal) } {
                Ok(g) if !request_out.is_null() => g,
                _ => return NULL_ARG,
            };
            // SAFETY: `Goal::start` lends its own parts.
            if let Err(e) = g.goal.start(check::session, |p| unsafe { lend(p) }) {
                return g.fail(e);
            }
            let req: *mut MPICAST_Request = &mut *g.request;
            // SAFETY: checked non-NULL.
            unsafe { request_out.write(req) };
            OK
        },
    )
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
