//! The Fortran entry points of the receive and completion calls that dynamic broadcast
//! intercepts (`ffi::dbcast`), for the host bindings that do not pass through the C names.
//! build.rs chooses them per MPI, as for `ffi::fortran`; the test `link_fortran_route`
//! watches which C names each host binding reaches and requires exactly these exports:
//!
//! | binding            | calls                                          | Open MPI 4.1 | MPICH 4.0 |
//! | ------------------ | ---------------------------------------------- | ------------ | --------- |
//! | mpif.h, `use mpi`  | `mpi_recv_`, `mpi_irecv_`, and the completion calls below (all manglings) | exported | not: the host's call the C names |
//! | `use mpi_f08`      | `mpi_recv_f08_`, `mpi_irecv_f08_` (MPICH: `mpi_recv_f08ts_`, `mpi_irecv_f08ts_`) | exported | not: reach C `MPI_Recv` / `MPI_Irecv` |
//! | `use mpi_f08`      | `mpi_wait_f08_`, `mpi_test_f08_`, `mpi_waitall_f08_`, `mpi_testall_f08_`, `mpi_waitany_f08_`, `mpi_testany_f08_`, `mpi_waitsome_f08_`, `mpi_testsome_f08_`, `mpi_iprobe_f08_`, `mpi_probe_f08_`, `mpi_cancel_f08_`, `mpi_request_free_f08_`, `mpi_request_get_status_f08_` | exported | exported |
//!
//! Under MPICH the f08 completion calls are needed although its f08 MPI_Irecv reaches the C
//! name: a receive that C `MPI_Irecv` posted for dynamic broadcast must be completed by
//! mpicast's MPI_Wait, or the host would wait for a message that a broadcast replaced.
//!
//! Cost: while no communicator has dynamic broadcast on (`transport::dbcast::ON`), each entry
//! is one load, a branch, and a jump to the host's own PMPI Fortran entry (looked up once).
//! Afterwards each converts the handles (the host's f2c/c2f for communicators, datatypes and
//! requests; statuses with the host's `MPI_Status_c2f`; array indices from 0-based to
//! 1-based), calls mpicast's C function, and writes `ierror` (optional in mpi_f08, NULL when
//! absent). A receive whose buffer is the host's Fortran MPI_BOTTOM, or that names a handle
//! the host does not know, goes to the host's PMPI Fortran entry untouched (so a dynamic
//! broadcast cannot complete it). The point-to-point sends from Fortran are not intercepted
//! here: under Open MPI they reach the host directly, so they do not count in the order
//! dynamic broadcasts keep with a root's plain messages.

use super::fortran::set_ierr;
use super::{dbcast as c, guard};
use crate::host::{self, fortran as hf, fortran::CachedSymbol, fortran::Fint, MPI_Request};
use crate::transport::dbcast::ON;
use mpi_sys::MPI_Status;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;

/// The host lacks the Fortran entry of a binding the program uses: cannot happen with a
/// consistent host MPI, and guessing would be worse than stopping.
fn no_host_entry(e: &CachedSymbol) -> ! {
    crate::session::say(&format!(
        "mpicast: cannot hand a Fortran call to the host MPI: it has no {}; aborting",
        e.name()
    ));
    host::abort(host::comm_world(), 1)
}

/// Calls the host's entry `$e` (a CachedSymbol) with the application's arguments, unchanged.
macro_rules! to_host {
    ($e:expr; $($a:ident: $t:ty),*) => {{
        let Some(p) = $e.get() else { no_host_entry($e) };
        // SAFETY: the host's PMPI Fortran entry of this binding takes exactly these
        // arguments, each by reference (ierror last).
        let f = unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($t),*)>(p) };
        // SAFETY: forwards the application's own arguments unchanged.
        unsafe { f($($a),*) }
    }};
}

fn logical(b: bool) -> Fint {
    Fint::from(b)
}

/// Writes a Fortran LOGICAL (the default kind, one INTEGER wide, .true. as 1 in both MPIs'
/// Fortran bindings).
///
/// # Safety
/// `p` is NULL or the caller's LOGICAL.
unsafe fn set_logical(p: *mut Fint, v: c_int) {
    if !p.is_null() {
        // SAFETY: as the caller promises.
        unsafe { *p = logical(v != 0) };
    }
}

/// One Fortran status argument, received into a C status.
struct OneStatus {
    f: *mut Fint,
    c: MPI_Status,
}

impl OneStatus {
    fn new(f: *mut Fint) -> Self {
        let f = if f.is_null() || hf::is_status_ignore(f as *const c_void, false) {
            std::ptr::null_mut()
        } else {
            f
        };
        // SAFETY: MPI_Status is plain integers.
        OneStatus {
            f,
            c: unsafe { std::mem::zeroed() },
        }
    }

    /// The C status argument (MPI_STATUS_IGNORE for Fortran's).
    fn c_ptr(&mut self) -> *mut MPI_Status {
        if self.f.is_null() {
            host::status_ignore()
        } else {
            &mut self.c
        }
    }

    /// Copies the C status into the Fortran one.
    fn give(&self) {
        if !self.f.is_null() {
            // SAFETY: the application's status of MPI_STATUS_SIZE INTEGERs.
            unsafe { hf::status_c2f(&self.c, self.f) };
        }
    }
}

/// A Fortran array of statuses, received into C statuses.
struct Statuses {
    f: *mut Fint,
    c: Vec<MPI_Status>,
}

impl Statuses {
    fn new(f: *mut Fint, n: usize) -> Self {
        let f = if f.is_null() || hf::is_status_ignore(f as *const c_void, true) {
            std::ptr::null_mut()
        } else {
            f
        };
        // SAFETY: MPI_Status is plain integers.
        let c = (0..if f.is_null() { 0 } else { n })
            .map(|_| unsafe { std::mem::zeroed() })
            .collect();
        Statuses { f, c }
    }

    fn c_ptr(&mut self) -> *mut MPI_Status {
        if self.f.is_null() {
            host::statuses_ignore()
        } else {
            self.c.as_mut_ptr()
        }
    }

    /// Copies status `i` into the Fortran array.
    fn give(&self, i: usize) {
        if let (false, Some(c)) = (self.f.is_null(), self.c.get(i)) {
            // SAFETY: the application's array of at least i + 1 statuses.
            unsafe { hf::status_c2f(c, self.f.add(i * hf::status_size())) };
        }
    }
}

/// A Fortran array of requests as C requests.
struct Requests {
    f: *mut Fint,
    c: Vec<MPI_Request>,
}

impl Requests {
    /// # Safety
    /// `f` holds `n` requests.
    unsafe fn new(f: *mut Fint, n: usize) -> Self {
        // SAFETY: as the caller promises.
        let c = (0..n)
            .map(|i| hf::request_f2c(unsafe { *f.add(i) }))
            .collect();
        Requests { f, c }
    }

    /// Writes every request back (completed ones are MPI_REQUEST_NULL now).
    fn give_back(&self) {
        for (i, r) in self.c.iter().enumerate() {
            // SAFETY: the application's array of `n` requests.
            unsafe { *self.f.add(i) = hf::request_c2f(*r) };
        }
    }
}

/// `count` read from Fortran; None for NULL or negative (left to the host).
///
/// # Safety
/// `p` is NULL or the caller's INTEGER.
unsafe fn count_of(p: *const Fint) -> Option<usize> {
    // SAFETY: as the caller promises.
    (!p.is_null())
        .then(|| unsafe { *p })
        .and_then(|n| usize::try_from(n).ok())
}

// ---------------------------------------------------------------------------------------
// The calls. Each reads the application's arguments and says whether the call is mpicast's
// (`Ours`: what runs it) or the host's, untouched (None); the exported entry (`p2p_entry!`)
// does the rest, the same for every call.

/// A Fortran call that mpicast runs: `run` inside the panic boundary of `what` (through the
/// error handler of `comm` when the call names a communicator, as MPI_Bcast's), its result
/// then written to `ierror` by the entry.
struct Ours<F> {
    what: &'static str,
    comm: Option<host::MPI_Comm>,
    run: F,
}

impl<F: FnOnce() -> c_int> Ours<F> {
    /// A call on no communicator (a request's completion).
    fn call(what: &'static str, run: F) -> Option<Self> {
        Some(Ours {
            what,
            comm: None,
            run,
        })
    }

    /// A call on communicator `comm`.
    fn on(what: &'static str, comm: host::MPI_Comm, run: F) -> Option<Self> {
        Some(Ours {
            what,
            comm: Some(comm),
            run,
        })
    }

    /// Runs the call and writes its result to `ierror`.
    ///
    /// # Safety
    /// `ierror` is NULL or the caller's INTEGER.
    unsafe fn finish(self, ierror: *mut Fint) {
        let rc = match self.comm {
            Some(comm) => super::guard_comm(self.what, comm, self.run),
            None => guard(self.what, host::err_other, self.run),
        };
        // SAFETY: as the caller promises.
        unsafe { set_ierr(ierror, rc) };
    }
}

/// MPI_Recv from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Recv, each by reference.
#[cfg(any(mpicast_fortran_p2p_mpif, mpicast_fortran_p2p_f08_post))]
unsafe fn recv_f(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: as the caller promises.
    let (n, ct, s, g, cc) = unsafe { posted(buf, count, datatype, source, tag, comm) }?;
    Ours::on("MPI_Recv (Fortran)", cc, move || {
        let mut st = OneStatus::new(status);
        // SAFETY: the application's arguments, converted.
        let rc = unsafe { c::MPI_Recv(buf, n, ct, s, g, cc, st.c_ptr()) };
        st.give();
        rc
    })
}

/// MPI_Irecv from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Irecv, each by reference.
#[cfg(any(mpicast_fortran_p2p_mpif, mpicast_fortran_p2p_f08_post))]
unsafe fn irecv_f(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    request: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    let (n, ct, s, g, cc) = unsafe { posted(buf, count, datatype, source, tag, comm) }?;
    Ours::on("MPI_Irecv (Fortran)", cc, move || {
        let mut r = hf::request_f2c(0);
        // SAFETY: the application's arguments, converted; `r` is ours.
        let rc = unsafe { c::MPI_Irecv(buf, n, ct, s, g, cc, &mut r) };
        if rc == host::SUCCESS {
            // SAFETY: the application's request, checked non-NULL.
            unsafe { *request = hf::request_c2f(r) };
        }
        rc
    })
}

/// A receive's arguments (count, datatype, source, tag, communicator) in C; None when one
/// is NULL, the buffer is the host's Fortran MPI_BOTTOM, or a handle is not the host's.
///
/// # Safety
/// Each pointer is NULL or the caller's INTEGER.
#[cfg(any(mpicast_fortran_p2p_mpif, mpicast_fortran_p2p_f08_post))]
unsafe fn posted(
    buf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
) -> Option<(c_int, host::MPI_Datatype, c_int, c_int, host::MPI_Comm)> {
    if [count, datatype, source, tag, comm]
        .iter()
        .any(|p| p.is_null())
        || hf::is_sentinel(buf)
    {
        return None;
    }
    // SAFETY: by reference from Fortran; checked non-NULL.
    let (n, t, s, g, cm) = unsafe { (*count, *datatype, *source, *tag, *comm) };
    Some((n, hf::type_f2c(t)?, s, g, hf::comm_f2c(cm)?))
}

/// MPI_Wait from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Wait.
unsafe fn wait_f(request: *mut Fint, status: *mut Fint) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() {
        return None;
    }
    Ours::call("MPI_Wait (Fortran)", move || {
        // SAFETY: the application's request, checked non-NULL.
        let mut r = hf::request_f2c(unsafe { *request });
        let mut st = OneStatus::new(status);
        // SAFETY: our request and status.
        let rc = unsafe { c::MPI_Wait(&mut r, st.c_ptr()) };
        // SAFETY: as above.
        unsafe { *request = hf::request_c2f(r) };
        st.give();
        rc
    })
}

/// MPI_Test from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Test.
unsafe fn test_f(
    request: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() || flag.is_null() {
        return None;
    }
    Ours::call("MPI_Test (Fortran)", move || {
        // SAFETY: the application's request, checked non-NULL.
        let mut r = hf::request_f2c(unsafe { *request });
        let mut st = OneStatus::new(status);
        let mut done: c_int = 0;
        // SAFETY: our request, flag and status.
        let rc = unsafe { c::MPI_Test(&mut r, &mut done, st.c_ptr()) };
        // SAFETY: the application's request and flag.
        unsafe {
            *request = hf::request_c2f(r);
            set_logical(flag, done);
        }
        if done != 0 {
            st.give();
        }
        rc
    })
}

/// MPI_Waitall from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Waitall.
unsafe fn waitall_f(
    count: *const Fint,
    requests: *mut Fint,
    statuses: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's count, or NULL.
    let n = unsafe { count_of(count) }.filter(|_| !requests.is_null())?;
    Ours::call("MPI_Waitall (Fortran)", move || {
        // SAFETY: the application's array of `n` requests.
        let mut r = unsafe { Requests::new(requests, n) };
        let mut st = Statuses::new(statuses, n);
        // SAFETY: our arrays of `n`.
        let rc = unsafe { c::MPI_Waitall(n as c_int, r.c.as_mut_ptr(), st.c_ptr()) };
        r.give_back();
        (0..n).for_each(|i| st.give(i));
        rc
    })
}

/// MPI_Testall from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Testall.
unsafe fn testall_f(
    count: *const Fint,
    requests: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's count, or NULL.
    let n = unsafe { count_of(count) }.filter(|_| !requests.is_null() && !flag.is_null())?;
    Ours::call("MPI_Testall (Fortran)", move || {
        // SAFETY: the application's array of `n` requests.
        let mut r = unsafe { Requests::new(requests, n) };
        let mut st = Statuses::new(statuses, n);
        let mut done: c_int = 0;
        // SAFETY: our arrays of `n`.
        let rc = unsafe { c::MPI_Testall(n as c_int, r.c.as_mut_ptr(), &mut done, st.c_ptr()) };
        r.give_back();
        // SAFETY: the application's flag.
        unsafe { set_logical(flag, done) };
        if done != 0 {
            (0..n).for_each(|i| st.give(i));
        }
        rc
    })
}

/// A C index (0-based, or MPI_UNDEFINED) as Fortran's (1-based).
fn index_c2f(i: c_int) -> Fint {
    if i == host::undefined() || i < 0 {
        i
    } else {
        i + 1
    }
}

/// MPI_Waitany from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Waitany.
unsafe fn waitany_f(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's count, or NULL.
    let n = unsafe { count_of(count) }.filter(|_| !requests.is_null() && !index.is_null())?;
    Ours::call("MPI_Waitany (Fortran)", move || {
        // SAFETY: the application's array of `n` requests.
        let mut r = unsafe { Requests::new(requests, n) };
        let mut st = OneStatus::new(status);
        let mut i: c_int = host::undefined();
        // SAFETY: our array of `n`, index and status.
        let rc = unsafe { c::MPI_Waitany(n as c_int, r.c.as_mut_ptr(), &mut i, st.c_ptr()) };
        r.give_back();
        // SAFETY: the application's index.
        unsafe { *index = index_c2f(i) };
        st.give();
        rc
    })
}

/// MPI_Testany from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Testany.
unsafe fn testany_f(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's count, or NULL.
    let n = unsafe { count_of(count) }
        .filter(|_| !requests.is_null() && !index.is_null() && !flag.is_null())?;
    Ours::call("MPI_Testany (Fortran)", move || {
        // SAFETY: the application's array of `n` requests.
        let mut r = unsafe { Requests::new(requests, n) };
        let mut st = OneStatus::new(status);
        let mut i: c_int = host::undefined();
        let mut done: c_int = 0;
        // SAFETY: our array of `n`, index, flag and status.
        let rc =
            unsafe { c::MPI_Testany(n as c_int, r.c.as_mut_ptr(), &mut i, &mut done, st.c_ptr()) };
        r.give_back();
        // SAFETY: the application's index and flag.
        unsafe {
            *index = index_c2f(i);
            set_logical(flag, done);
        }
        if done != 0 {
            st.give();
        }
        rc
    })
}

/// MPI_Waitsome (`test` false) or MPI_Testsome from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Waitsome / MPI_Testsome.
unsafe fn some_f(
    test: bool,
    incount: *const Fint,
    requests: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's count, or NULL.
    let n = unsafe { count_of(incount) }
        .filter(|_| !requests.is_null() && !outcount.is_null() && !indices.is_null())?;
    let what = if test {
        "MPI_Testsome (Fortran)"
    } else {
        "MPI_Waitsome (Fortran)"
    };
    Ours::call(what, move || {
        // SAFETY: the application's array of `n` requests.
        let mut r = unsafe { Requests::new(requests, n) };
        let mut st = Statuses::new(statuses, n);
        let mut out: c_int = host::undefined();
        let f = if test {
            c::MPI_Testsome
        } else {
            c::MPI_Waitsome
        };
        // SAFETY: our arrays of `n`; the application's indices (INTEGER is int) of `n`.
        let rc = unsafe { f(n as c_int, r.c.as_mut_ptr(), &mut out, indices, st.c_ptr()) };
        r.give_back();
        // SAFETY: the application's outcount.
        unsafe { *outcount = out };
        if out != host::undefined() {
            for k in 0..usize::try_from(out).unwrap_or(0).min(n) {
                st.give(k);
                // SAFETY: within the application's indices.
                unsafe { *indices.add(k) = index_c2f(*indices.add(k)) };
            }
        }
        rc
    })
}

/// MPI_Waitsome from Fortran (`some_f`).
///
/// # Safety
/// The arguments of the Fortran MPI_Waitsome.
unsafe fn waitsome_f(
    i: *const Fint,
    r: *mut Fint,
    o: *mut Fint,
    x: *mut Fint,
    s: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's arguments.
    unsafe { some_f(false, i, r, o, x, s) }
}

/// MPI_Testsome from Fortran (`some_f`).
///
/// # Safety
/// The arguments of the Fortran MPI_Testsome.
unsafe fn testsome_f(
    i: *const Fint,
    r: *mut Fint,
    o: *mut Fint,
    x: *mut Fint,
    s: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: the caller's arguments.
    unsafe { some_f(true, i, r, o, x, s) }
}

/// A probe's (source, tag, communicator) in C; None when one is NULL or the communicator is
/// not the host's.
///
/// # Safety
/// Each pointer is NULL or the caller's INTEGER.
unsafe fn probed(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
) -> Option<(c_int, c_int, host::MPI_Comm)> {
    if [source, tag, comm].iter().any(|p| p.is_null()) {
        return None;
    }
    // SAFETY: by reference from Fortran; checked non-NULL.
    let (s, g, cm) = unsafe { (*source, *tag, *comm) };
    Some((s, g, hf::comm_f2c(cm)?))
}

/// MPI_Iprobe from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Iprobe.
unsafe fn iprobe_f(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    if flag.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    let (s, g, cc) = unsafe { probed(source, tag, comm) }?;
    Ours::on("MPI_Iprobe (Fortran)", cc, move || {
        let mut st = OneStatus::new(status);
        let mut found: c_int = 0;
        // SAFETY: the application's arguments, converted.
        let rc = unsafe { c::MPI_Iprobe(s, g, cc, &mut found, st.c_ptr()) };
        // SAFETY: the application's flag.
        unsafe { set_logical(flag, found) };
        if found != 0 {
            st.give();
        }
        rc
    })
}

/// MPI_Probe from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Probe.
unsafe fn probe_f(
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    // SAFETY: as the caller promises.
    let (s, g, cc) = unsafe { probed(source, tag, comm) }?;
    Ours::on("MPI_Probe (Fortran)", cc, move || {
        let mut st = OneStatus::new(status);
        // SAFETY: the application's arguments, converted.
        let rc = unsafe { c::MPI_Probe(s, g, cc, st.c_ptr()) };
        st.give();
        rc
    })
}

/// MPI_Cancel from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Cancel.
unsafe fn cancel_f(request: *mut Fint) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() {
        return None;
    }
    Ours::call("MPI_Cancel (Fortran)", move || {
        // SAFETY: the application's request, checked non-NULL.
        let mut r = hf::request_f2c(unsafe { *request });
        // SAFETY: our request.
        unsafe { c::MPI_Cancel(&mut r) }
    })
}

/// MPI_Request_free from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Request_free.
unsafe fn request_free_f(request: *mut Fint) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() {
        return None;
    }
    Ours::call("MPI_Request_free (Fortran)", move || {
        // SAFETY: the application's request, checked non-NULL.
        let mut r = hf::request_f2c(unsafe { *request });
        // SAFETY: our request.
        let rc = unsafe { c::MPI_Request_free(&mut r) };
        if rc == host::SUCCESS {
            // SAFETY: as above.
            unsafe { *request = hf::request_c2f(r) };
        }
        rc
    })
}

/// MPI_Request_get_status from Fortran.
///
/// # Safety
/// The arguments of the Fortran MPI_Request_get_status.
unsafe fn request_get_status_f(
    request: *const Fint,
    flag: *mut Fint,
    status: *mut Fint,
) -> Option<Ours<impl FnOnce() -> c_int>> {
    if request.is_null() || flag.is_null() {
        return None;
    }
    Ours::call("MPI_Request_get_status (Fortran)", move || {
        // SAFETY: the application's request, checked non-NULL.
        let r = hf::request_f2c(unsafe { *request });
        let mut st = OneStatus::new(status);
        let mut done: c_int = 0;
        // SAFETY: our flag and status.
        let rc = unsafe { c::MPI_Request_get_status(r, &mut done, st.c_ptr()) };
        // SAFETY: the application's flag.
        unsafe { set_logical(flag, done) };
        if done != 0 {
            st.give();
        }
        rc
    })
}

// ---------------------------------------------------------------------------------------
// The exported names.

/// Exports `$imp` under each Fortran name given, each with its own lookup of the host
/// entries `$hosts` (tried in order). While dynamic broadcast is off the entry goes straight
/// to the host's. (The host list and the parameter list are one token tree each, so that
/// they can repeat once per name.)
macro_rules! p2p_entries {
    ($what:literal, $imp:ident $hosts:tt $params:tt as $($name:ident),+) => {
        $( p2p_entry!($what, $imp, $hosts, $params, $name); )+
    };
}

macro_rules! p2p_entry {
    ($what:literal, $imp:ident, [$($host:literal),+], ($($a:ident: $t:ty),*), $name:ident) => {
        #[doc = concat!("Fortran ", $what, " (`", stringify!($name), "`): see the module doc.")]
        ///
        /// # Safety
        /// Called from Fortran: every argument by reference, as the MPI binding says;
        /// `ierror` may be NULL.
        #[no_mangle]
        #[allow(non_snake_case)]
        pub unsafe extern "C" fn $name($($a: $t,)* ierror: *mut Fint) {
            static HOST: CachedSymbol = CachedSymbol::new(&[$($host),+]);
            if ON.load(Ordering::Relaxed) {
                // SAFETY: the application's arguments.
                if let Some(ours) = unsafe { $imp($($a),*) } {
                    // SAFETY: the caller's ierror, or NULL.
                    return unsafe { ours.finish(ierror) };
                }
            }
            to_host!(&HOST; $($a: $t,)* ierror: *mut Fint)
        }
    };
}

// mpif.h and `use mpi` (Open MPI): every mangling, as `ffi::fortran` exports MPI_Bcast.
#[cfg(mpicast_fortran_p2p_mpif)]
mod mpif {
    use super::*;

    p2p_entries!("MPI_Recv", recv_f
        [b"pmpi_recv_\0", b"pmpi_recv\0", b"pmpi_recv__\0", b"PMPI_RECV\0"]
        (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
         tag: *const Fint, comm: *const Fint, status: *mut Fint)
        as mpi_recv_, mpi_recv__, mpi_recv, MPI_RECV);
    p2p_entries!("MPI_Irecv", irecv_f
        [b"pmpi_irecv_\0", b"pmpi_irecv\0", b"pmpi_irecv__\0", b"PMPI_IRECV\0"]
        (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
         tag: *const Fint, comm: *const Fint, request: *mut Fint)
        as mpi_irecv_, mpi_irecv__, mpi_irecv, MPI_IRECV);
    p2p_entries!("MPI_Wait", wait_f
        [b"pmpi_wait_\0", b"pmpi_wait\0", b"pmpi_wait__\0", b"PMPI_WAIT\0"]
        (request: *mut Fint, status: *mut Fint)
        as mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT);
    p2p_entries!("MPI_Test", test_f
        [b"pmpi_test_\0", b"pmpi_test\0", b"pmpi_test__\0", b"PMPI_TEST\0"]
        (request: *mut Fint, flag: *mut Fint, status: *mut Fint)
        as mpi_test_, mpi_test__, mpi_test, MPI_TEST);
    p2p_entries!("MPI_Waitall", waitall_f
        [b"pmpi_waitall_\0", b"pmpi_waitall\0", b"pmpi_waitall__\0", b"PMPI_WAITALL\0"]
        (count: *const Fint, requests: *mut Fint, statuses: *mut Fint)
        as mpi_waitall_, mpi_waitall__, mpi_waitall, MPI_WAITALL);
    p2p_entries!("MPI_Testall", testall_f
        [b"pmpi_testall_\0", b"pmpi_testall\0", b"pmpi_testall__\0", b"PMPI_TESTALL\0"]
        (count: *const Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut Fint)
        as mpi_testall_, mpi_testall__, mpi_testall, MPI_TESTALL);
    p2p_entries!("MPI_Waitany", waitany_f
        [b"pmpi_waitany_\0", b"pmpi_waitany\0", b"pmpi_waitany__\0", b"PMPI_WAITANY\0"]
        (count: *const Fint, requests: *mut Fint, index: *mut Fint, status: *mut Fint)
        as mpi_waitany_, mpi_waitany__, mpi_waitany, MPI_WAITANY);
    p2p_entries!("MPI_Testany", testany_f
        [b"pmpi_testany_\0", b"pmpi_testany\0", b"pmpi_testany__\0", b"PMPI_TESTANY\0"]
        (count: *const Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
         status: *mut Fint)
        as mpi_testany_, mpi_testany__, mpi_testany, MPI_TESTANY);
    p2p_entries!("MPI_Waitsome", waitsome_f
        [b"pmpi_waitsome_\0", b"pmpi_waitsome\0", b"pmpi_waitsome__\0", b"PMPI_WAITSOME\0"]
        (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
         statuses: *mut Fint)
        as mpi_waitsome_, mpi_waitsome__, mpi_waitsome, MPI_WAITSOME);
    p2p_entries!("MPI_Testsome", testsome_f
        [b"pmpi_testsome_\0", b"pmpi_testsome\0", b"pmpi_testsome__\0", b"PMPI_TESTSOME\0"]
        (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
         statuses: *mut Fint)
        as mpi_testsome_, mpi_testsome__, mpi_testsome, MPI_TESTSOME);
    p2p_entries!("MPI_Iprobe", iprobe_f
        [b"pmpi_iprobe_\0", b"pmpi_iprobe\0", b"pmpi_iprobe__\0", b"PMPI_IPROBE\0"]
        (source: *const Fint, tag: *const Fint, comm: *const Fint, flag: *mut Fint,
         status: *mut Fint)
        as mpi_iprobe_, mpi_iprobe__, mpi_iprobe, MPI_IPROBE);
    p2p_entries!("MPI_Probe", probe_f
        [b"pmpi_probe_\0", b"pmpi_probe\0", b"pmpi_probe__\0", b"PMPI_PROBE\0"]
        (source: *const Fint, tag: *const Fint, comm: *const Fint, status: *mut Fint)
        as mpi_probe_, mpi_probe__, mpi_probe, MPI_PROBE);
    p2p_entries!("MPI_Cancel", cancel_f
        [b"pmpi_cancel_\0", b"pmpi_cancel\0", b"pmpi_cancel__\0", b"PMPI_CANCEL\0"]
        (request: *mut Fint)
        as mpi_cancel_, mpi_cancel__, mpi_cancel, MPI_CANCEL);
    p2p_entries!("MPI_Request_free", request_free_f
        [b"pmpi_request_free_\0", b"pmpi_request_free\0", b"pmpi_request_free__\0",
         b"PMPI_REQUEST_FREE\0"]
        (request: *mut Fint)
        as mpi_request_free_, mpi_request_free__, mpi_request_free, MPI_REQUEST_FREE);
    p2p_entries!("MPI_Request_get_status", request_get_status_f
        [b"pmpi_request_get_status_\0", b"pmpi_request_get_status\0",
         b"pmpi_request_get_status__\0", b"PMPI_REQUEST_GET_STATUS\0"]
        (request: *const Fint, flag: *mut Fint, status: *mut Fint)
        as mpi_request_get_status_, mpi_request_get_status__, mpi_request_get_status,
        MPI_REQUEST_GET_STATUS);
}

// mpi_f08's receives (Open MPI; MPICH's reach the C names). TYPE(MPI_Datatype),
// TYPE(MPI_Comm), TYPE(MPI_Request) and TYPE(MPI_Status) are INTEGERs passed by reference
// like mpif.h's; the optional ierror is NULL when left out.
#[cfg(mpicast_fortran_p2p_f08_post)]
mod f08_post {
    use super::*;

    p2p_entries!("mpi_f08 MPI_Recv", recv_f [b"pmpi_recv_f08_\0"]
        (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
         tag: *const Fint, comm: *const Fint, status: *mut Fint)
        as mpi_recv_f08_);
    p2p_entries!("mpi_f08 MPI_Irecv", irecv_f [b"pmpi_irecv_f08_\0"]
        (buf: *mut c_void, count: *const Fint, datatype: *const Fint, source: *const Fint,
         tag: *const Fint, comm: *const Fint, request: *mut Fint)
        as mpi_irecv_f08_);
}

// mpi_f08's completion and probe calls (both MPIs). The host's own: Open MPI's
// `pmpi_*_f08_`, MPICH's `pmpir_*_f08_`.
#[cfg(mpicast_fortran_p2p_f08_complete)]
mod f08_complete {
    use super::*;

    p2p_entries!("mpi_f08 MPI_Wait", wait_f [b"pmpi_wait_f08_\0", b"pmpir_wait_f08_\0"]
        (request: *mut Fint, status: *mut Fint)
        as mpi_wait_f08_);
    p2p_entries!("mpi_f08 MPI_Test", test_f [b"pmpi_test_f08_\0", b"pmpir_test_f08_\0"]
        (request: *mut Fint, flag: *mut Fint, status: *mut Fint)
        as mpi_test_f08_);
    p2p_entries!("mpi_f08 MPI_Waitall", waitall_f
        [b"pmpi_waitall_f08_\0", b"pmpir_waitall_f08_\0"]
        (count: *const Fint, requests: *mut Fint, statuses: *mut Fint)
        as mpi_waitall_f08_);
    p2p_entries!("mpi_f08 MPI_Testall", testall_f
        [b"pmpi_testall_f08_\0", b"pmpir_testall_f08_\0"]
        (count: *const Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut Fint)
        as mpi_testall_f08_);
    p2p_entries!("mpi_f08 MPI_Waitany", waitany_f
        [b"pmpi_waitany_f08_\0", b"pmpir_waitany_f08_\0"]
        (count: *const Fint, requests: *mut Fint, index: *mut Fint, status: *mut Fint)
        as mpi_waitany_f08_);
    p2p_entries!("mpi_f08 MPI_Testany", testany_f
        [b"pmpi_testany_f08_\0", b"pmpir_testany_f08_\0"]
        (count: *const Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
         status: *mut Fint)
        as mpi_testany_f08_);
    p2p_entries!("mpi_f08 MPI_Waitsome", waitsome_f
        [b"pmpi_waitsome_f08_\0", b"pmpir_waitsome_f08_\0"]
        (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
         statuses: *mut Fint)
        as mpi_waitsome_f08_);
    p2p_entries!("mpi_f08 MPI_Testsome", testsome_f
        [b"pmpi_testsome_f08_\0", b"pmpir_testsome_f08_\0"]
        (incount: *const Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
         statuses: *mut Fint)
        as mpi_testsome_f08_);
    p2p_entries!("mpi_f08 MPI_Iprobe", iprobe_f
        [b"pmpi_iprobe_f08_\0", b"pmpir_iprobe_f08_\0"]
        (source: *const Fint, tag: *const Fint, comm: *const Fint, flag: *mut Fint,
         status: *mut Fint)
        as mpi_iprobe_f08_);
    p2p_entries!("mpi_f08 MPI_Probe", probe_f [b"pmpi_probe_f08_\0", b"pmpir_probe_f08_\0"]
        (source: *const Fint, tag: *const Fint, comm: *const Fint, status: *mut Fint)
        as mpi_probe_f08_);
    p2p_entries!("mpi_f08 MPI_Cancel", cancel_f [b"pmpi_cancel_f08_\0", b"pmpir_cancel_f08_\0"]
        (request: *mut Fint)
        as mpi_cancel_f08_);
    p2p_entries!("mpi_f08 MPI_Request_free", request_free_f
        [b"pmpi_request_free_f08_\0", b"pmpir_request_free_f08_\0"]
        (request: *mut Fint)
        as mpi_request_free_f08_);
    p2p_entries!("mpi_f08 MPI_Request_get_status", request_get_status_f
        [b"pmpi_request_get_status_f08_\0", b"pmpir_request_get_status_f08_\0"]
        (request: *const Fint, flag: *mut Fint, status: *mut Fint)
        as mpi_request_get_status_f08_);
}
