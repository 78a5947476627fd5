//! Waiting in the host MPI without stopping the process's progress.
//!
//! MPI's progress rule: an operation that has started completes as long as the ranks it
//! needs are inside MPI. mpicast's multicasts pass through other ranks (the forwarding
//! engines of `transport::forward`), so a rank that blocks in the host MPI must keep moving
//! them, and a started GOAL run must go on while its rank waits elsewhere. While some
//! forwarder or GOAL handle exists in the process (`add_cover`), or some started run is
//! registered (`add_work`), the intercepted calls take their slow path (`active`); and while
//! some forwarder exists or some started run that this thread is not driving itself
//! (`polling`, `driving`), every wait of mpicast and every blocking host call mpicast
//! intercepts becomes its non-blocking form, tested in a loop that runs the process's
//! progress (`poll`, the hook `transport::progress` installs) between two looks. Otherwise the
//! waits are the host's own blocking calls, so a program that never enables a forwarder nor
//! makes a GOAL handle pays one load and a branch per intercepted call, and a GOAL program's
//! own MPICAST_Goal_wait with nothing else started blocks in the host as before.
//!
//! Collectives are special: MPI does not let a non-blocking collective match a blocking one,
//! so a collective may turn non-blocking only where every rank of its communicator makes the
//! same choice. `covered` decides it from what every member knows alike: the communicator
//! lies within the communicator of a forwarder or of a GOAL handle of this process. Both are
//! made and freed collectively on their own communicator, so in a correct program every
//! member of a communicator within one has it when it reaches a collective (and a
//! communicator outside every one has no member that answers yes). A started run alone
//! covers nothing: whether a rank has one is its own business.
//!
//! A root that returned from an eager broadcast before its receivers acknowledged it owes
//! them repairs by the host MPI when UDP is blocked (`coll::duty`): while such a duty is
//! registered (`add_duty`), the intercepted calls take their slow path and the waits poll as
//! well (the progress step looks at the duty), and a collective that cannot turn non-blocking
//! (`collective` where not `covered`) settles the duties first (`settle_duties`).
//!
//! Owns nothing above host/: the hooks are plain function pointers set from above.

use super::{attr, check, comm, MPI_Comm, MPI_Request, MpiResult, SUCCESS};
use mpi_sys::MPI_Status;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Some forwarder or GOAL handle exists in this process (`add_cover`), or some started run
/// is registered (`WORK`): the intercepted calls take their slow path and the waits poll.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Started runs registered as pending work (`add_work`); changed under `FORWARDERS`' lock,
/// as `ACTIVE`, which both decide.
static WORK: AtomicUsize = AtomicUsize::new(0);
/// Channels that owe an eager broadcast's repairs (`add_duty`): a root that returned before
/// every receiver acknowledged. Changed under `FORWARDERS`' lock, as `ACTIVE`.
static DUTY: AtomicUsize = AtomicUsize::new(0);
/// Some communicator covers others (what `covered` asks first: a run alone covers none).
static COVERING: AtomicBool = AtomicBool::new(false);
/// The communicators that cover (`covered`): those of the forwarders and those of the GOAL
/// handles (`add_cover`), as the MPI_COMM_WORLD ranks of their members (sorted).
static FORWARDERS: Mutex<Vec<Cover>> = Mutex::new(Vec::new());

struct Cover {
    id: u64,
    members: Arc<[u32]>,
    /// A forwarder's (counted in `ENGINES`), not only a GOAL handle's.
    forwards: bool,
}
/// The process's progress (one step, never blocking), installed from above.
static HOOK: OnceLock<fn()> = OnceLock::new();
/// What the duties need (`install_duty`): one step of every duty, and the wait that settles
/// them before a blocking collective that cannot be polled.
static DUTY_HOOK: OnceLock<DutyHook> = OnceLock::new();

/// The duties' step and settling wait (see `install_duty`).
#[derive(Clone, Copy)]
pub struct DutyHook {
    /// One step of every duty no thread holds, never blocking.
    pub step: fn(),
    /// Waits (stepping) until the duties are over, or none moves for a while, or all that are
    /// left are held by someone else.
    pub settle: fn(),
}
/// Changes whenever a forwarder comes or goes (the `covered` cache's generation; never 0).
static EPOCH: AtomicU64 = AtomicU64::new(1);

/// Whether the intercepted calls take their slow path: some forwarder or GOAL handle exists,
/// or a started run (`polling` then says whether a wait must run the process's progress).
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Forwarders among `FORWARDERS` (a GOAL handle's cover alone gives a wait nothing to move).
static ENGINES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Started runs this thread is driving right now (`driving`): a wait of theirs has
    /// nothing of them to move.
    static DRIVING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether a wait must run the process's progress between its looks: some forwarder exists,
/// or some started run that this thread is not driving right now. Otherwise (only GOAL
/// handles, or only the run this thread is driving) the host's blocking call waits as well,
/// and better: it needs no pauses between looks.
#[inline]
pub fn polling() -> bool {
    if !active() {
        return false;
    }
    ENGINES.load(Ordering::Acquire) > 0
        || DUTY.load(Ordering::Acquire) > 0
        || WORK.load(Ordering::Acquire) > DRIVING.with(|d| d.get())
}

/// Runs `f` while this thread drives one started run (its owner's MPICAST_Goal_test/_wait):
/// the waits inside `f` poll only for other work (`polling`).
pub fn driving<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DRIVING.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    DRIVING.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}

/// Changes whenever a forwarder comes or goes.
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Installs the process's progress step (once; later calls keep the first).
pub fn install(hook: fn()) {
    let _ = HOOK.set(hook);
}

/// Installs what the duties need (once; later calls keep the first).
pub fn install_duty(hook: DutyHook) {
    let _ = DUTY_HOOK.set(hook);
}

/// A duty came: the root of an eager broadcast returned before every receiver acknowledged
/// it, and the receivers may need it to serve their NACKs by the host MPI (UDP blocked while
/// the host MPI works). Until `remove_duty`, the intercepted calls take their slow path, the
/// waits poll (and with them the duty's step), and a blocking collective that cannot be
/// polled (`collective`, not `covered`) settles the duties first.
pub fn add_duty() {
    raise(&DUTY);
}

/// A duty of `add_duty` is over; with nothing else pending the calls are the host's again.
pub fn remove_duty() {
    lower(&DUTY, "remove_duty without add_duty");
}

thread_local! {
    /// This thread runs a host collective of mpicast's own (`own`), inside one of its
    /// operations: the duties are not its business there.
    static OWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a host collective mpicast calls for itself inside one of its operations (a
/// two-level stage, a switched broadcast): it does not settle the duties first
/// (`settle_duties`), which the application's next call does.
pub fn own<R>(f: impl FnOnce() -> R) -> R {
    struct Leave(bool);
    impl Drop for Leave {
        fn drop(&mut self) {
            OWN.with(|o| o.set(self.0));
        }
    }
    let _leave = Leave(OWN.with(|o| o.replace(true)));
    f()
}

/// Duties registered now (for tests and diagnostics).
pub fn duties() -> usize {
    DUTY.load(Ordering::Acquire)
}

/// One step of every duty (nothing while none is registered): called by every progress step.
#[inline]
pub fn step_duties() {
    if DUTY.load(Ordering::Acquire) > 0 {
        if let Some(h) = DUTY_HOOK.get() {
            (h.step)()
        }
    }
}

/// Before a blocking call of the application's that cannot be polled: waits until the
/// duties are over (bounded: see `DutyHook::settle`). Nothing while none is registered, nor
/// inside mpicast's own use of a host collective (`own`).
#[inline]
pub fn settle_duties() {
    if DUTY.load(Ordering::Acquire) > 0 && !OWN.with(|o| o.get()) {
        if let Some(h) = DUTY_HOOK.get() {
            (h.settle)()
        }
    }
}

/// One step of the process's progress (the duties' alone before `install`).
pub fn poll() {
    if let Some(h) = HOOK.get() {
        h()
    } else {
        step_duties()
    }
}

fn forwarders() -> std::sync::MutexGuard<'static, Vec<Cover>> {
    crate::lock::lock(&FORWARDERS)
}

/// A forwarder over `comm` came: its id for `remove_forwarder`. From now on the waits poll.
pub fn add_forwarder(comm: MPI_Comm) -> MpiResult<u64> {
    add(comm, true)
}

/// A communicator on which GOAL runs will start came (a GOAL handle's, made and freed
/// collectively like a forwarder's): from now on the blocking collectives on every
/// communicator within it turn non-blocking (`covered`), so that they poll while a run is
/// pending (`add_work`), on every member alike; and, as with a forwarder, the intercepted
/// calls take their slow path (`active`), which must reach that decision on every member,
/// whether or not this rank has a run. Its id for `remove_forwarder`.
pub fn add_cover(comm: MPI_Comm) -> MpiResult<u64> {
    add(comm, false)
}

fn add(comm: MPI_Comm, forwards: bool) -> MpiResult<u64> {
    let mut members: Vec<u32> = comm::world_ranks(comm)?.into_iter().flatten().collect();
    members.sort_unstable();
    let id = EPOCH.fetch_add(1, Ordering::AcqRel) + 1;
    let mut all = forwarders();
    all.push(Cover {
        id,
        members: members.into(),
        forwards,
    });
    if forwards {
        ENGINES.fetch_add(1, Ordering::AcqRel);
    }
    COVERING.store(true, Ordering::Release);
    ACTIVE.store(true, Ordering::Release);
    Ok(id)
}

/// Whether the waits poll: some communicator covers, or some run is started, or some duty
/// is owed (under `FORWARDERS`' lock).
fn pending(all: &[Cover], work: usize) -> bool {
    work > 0 || DUTY.load(Ordering::Acquire) > 0 || !all.is_empty()
}

/// The forwarder (or cover) `id` went; with the last one the waits are the host's again.
pub fn remove_forwarder(id: u64) {
    let mut all = forwarders();
    let gone = all.iter().filter(|c| c.id == id && c.forwards).count();
    all.retain(|c| c.id != id);
    ENGINES.fetch_sub(gone, Ordering::AcqRel);
    EPOCH.fetch_add(1, Ordering::AcqRel);
    COVERING.store(!all.is_empty(), Ordering::Release);
    ACTIVE.store(
        pending(&all, WORK.load(Ordering::Acquire)),
        Ordering::Release,
    );
}

/// A started run (a GOAL schedule) needs the process's progress until `remove_work`: from
/// now on the waits poll. Unlike a forwarder it is this rank's own business, so it changes
/// no communicator's `covered` answer (every member of a communicator must answer alike).
pub fn add_work() {
    raise(&WORK);
}

/// A run of `add_work` ended; with no forwarder and no other run the waits are the host's.
pub fn remove_work() {
    lower(&WORK, "remove_work without add_work");
}

/// One more started run or duty (`counter`): from now on the waits poll. Under the
/// forwarders' lock, as every change of what is pending.
fn raise(counter: &AtomicUsize) {
    let _all = forwarders();
    counter.fetch_add(1, Ordering::AcqRel);
    ACTIVE.store(true, Ordering::Release);
}

/// One started run or duty fewer; with nothing else pending the waits are the host's.
fn lower(counter: &AtomicUsize, unpaired: &str) {
    let all = forwarders();
    let before = counter.fetch_sub(1, Ordering::AcqRel);
    debug_assert!(before > 0, "{unpaired}");
    ACTIVE.store(
        pending(&all, WORK.load(Ordering::Acquire)),
        Ordering::Release,
    );
}

/// Started runs registered now (for tests and diagnostics).
pub fn work() -> usize {
    WORK.load(Ordering::Acquire)
}

/// The keyval caching `covered`'s answer on a communicator (copied to nothing, deleted with
/// it, so a handle the host reuses never finds an old answer).
fn cover_keyval() -> Option<c_int> {
    static CB: attr::Callbacks = attr::Callbacks {
        copy: None,
        delete: |_| {},
    };
    static KEYVAL: OnceLock<Option<c_int>> = OnceLock::new();
    *KEYVAL.get_or_init(|| attr::create_keyval(&CB).ok())
}

/// Whether a blocking collective on `comm` turns non-blocking: some forwarder (or GOAL
/// handle's communicator, `add_cover`) of this process has every rank of `comm` among its
/// members (see the module's text for why every
/// member answers alike). Intercommunicators never do. Cached on the communicator per epoch.
pub fn covered(comm: MPI_Comm) -> bool {
    if !COVERING.load(Ordering::Relaxed) || comm == super::comm_null() {
        return false;
    }
    let epoch = EPOCH.load(Ordering::Acquire);
    let key = cover_keyval();
    if let Some(k) = key {
        if let Ok(Some(t)) = attr::get(comm, k) {
            if (t >> 1) as u64 == epoch {
                return t & 1 != 0;
            }
        }
    }
    let answer = compute_covered(comm);
    if let Some(k) = key {
        let _ = attr::set(comm, k, ((epoch as usize) << 1) | usize::from(answer));
    }
    answer
}

fn compute_covered(comm: MPI_Comm) -> bool {
    if comm::is_inter(comm).unwrap_or(true) {
        return false;
    }
    let Ok(ranks) = comm::world_ranks(comm) else {
        return false;
    };
    let Some(ranks) = ranks.into_iter().collect::<Option<Vec<u32>>>() else {
        return false;
    };
    forwarders()
        .iter()
        .any(|c| ranks.iter().all(|r| c.members.binary_search(r).is_ok()))
}

/// How every wait loop of mpicast spends the time between two looks: spinning first (a
/// message on its way arrives within microseconds), then yielding the core (ranks often share
/// cores), then sleeps that grow to 200 us, so that a long wait leaves the cores to the ranks.
#[derive(Default)]
pub struct Pause(u32);

impl Pause {
    pub fn pause(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < SPINS {
            std::hint::spin_loop();
        } else if self.0 < 256 {
            std::thread::yield_now();
        } else {
            let us = u64::from((self.0 - 256) / 16).clamp(5, 200);
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
    }

    /// Something moved: look hard again.
    pub fn reset(&mut self) {
        self.0 = 0;
    }

    /// Still in the first spins of a wait: the answer is most likely moments away, and a
    /// progress step (a probe on every engine) would only delay seeing it.
    pub fn spinning(&self) -> bool {
        self.0 < SPINS
    }
}

/// Looks of a wait before it runs progress steps between them.
const SPINS: u32 = 16;

/// Tests with `test` (Some: done, with its return code) until done, running the process's
/// progress between two looks once the first spins are over.
fn poll_until(mut test: impl FnMut() -> Option<c_int>) -> c_int {
    let mut pause = Pause::default();
    loop {
        if let Some(rc) = test() {
            return rc;
        }
        if !pause.spinning() {
            poll();
            if let Some(rc) = test() {
                return rc;
            }
        }
        pause.pause();
    }
}

/// MPI_Wait: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Wait.
pub unsafe fn wait(req: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Wait(req, status) };
    }
    poll_until(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Test(req, &mut flag, status) };
        (rc != SUCCESS || flag != 0).then_some(rc)
    })
}

/// MPI_Waitall: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Waitall.
pub unsafe fn waitall(n: c_int, reqs: *mut MPI_Request, statuses: *mut MPI_Status) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Waitall(n, reqs, statuses) };
    }
    poll_until(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Testall(n, reqs, &mut flag, statuses) };
        (rc != SUCCESS || flag != 0).then_some(rc)
    })
}

/// MPI_Waitany: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Waitany.
pub unsafe fn waitany(
    n: c_int,
    reqs: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Waitany(n, reqs, index, status) };
    }
    poll_until(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Testany(n, reqs, index, &mut flag, status) };
        (rc != SUCCESS || flag != 0).then_some(rc)
    })
}

/// MPI_Waitsome: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Waitsome.
pub unsafe fn waitsome(
    n: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Waitsome(n, reqs, outcount, indices, statuses) };
    }
    poll_until(|| {
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Testsome(n, reqs, outcount, indices, statuses) };
        // SAFETY: written by the host.
        (rc != SUCCESS || unsafe { *outcount } != 0).then_some(rc)
    })
}

/// MPI_Probe: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Probe.
pub unsafe fn probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Probe(source, tag, comm, status) };
    }
    poll_until(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Iprobe(source, tag, comm, &mut flag, status) };
        (rc != SUCCESS || flag != 0).then_some(rc)
    })
}

/// MPI_Mprobe: the host's, or polled while a forwarder exists.
///
/// # Safety
/// The arguments of MPI_Mprobe.
pub unsafe fn mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut mpi_sys::MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    if !polling() {
        // SAFETY: the caller's arguments.
        return unsafe { mpi_sys::PMPI_Mprobe(source, tag, comm, message, status) };
    }
    poll_until(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's arguments.
        let rc = unsafe { mpi_sys::PMPI_Improbe(source, tag, comm, &mut flag, message, status) };
        (rc != SUCCESS || flag != 0).then_some(rc)
    })
}

/// Waits for a request of mpicast's own (statuses ignored), polled while a forwarder exists.
pub fn wait_own(req: &mut MPI_Request) -> MpiResult<()> {
    // SAFETY: a live request of ours; the status is ignored.
    check(unsafe { wait(req, super::status_ignore()) })
}

/// A request that is no request.
pub fn request_null() -> MPI_Request {
    // SAFETY: an initialised constant of mpi-sys' C shim.
    unsafe { mpi_sys::RSMPI_REQUEST_NULL }
}

/// Runs the blocking collective `blocking` on `comm`, or, where `covered`, its non-blocking
/// form `start` (which posts a request) waited for with polling. Not covered, it is the
/// host's blocking call, which nothing polls: the duties (`add_duty`) are settled first.
pub fn collective(
    comm: MPI_Comm,
    blocking: impl FnOnce() -> c_int,
    start: impl FnOnce(&mut MPI_Request) -> c_int,
) -> c_int {
    if !covered(comm) {
        settle_duties();
        return blocking();
    }
    let mut req = request_null();
    let rc = start(&mut req);
    if rc != SUCCESS {
        return rc;
    }
    // SAFETY: the request just posted; the status is ignored.
    unsafe { wait(&mut req, super::status_ignore()) }
}

/// Before a blocking call on `comm` that has no non-blocking form (communicator creation):
/// where `covered`, a barrier waited for with polling, so that every rank has come and the
/// call itself cannot keep one waiting for a rank that must forward first.
pub fn gather_first(comm: MPI_Comm) -> c_int {
    collective(
        comm,
        || SUCCESS,
        // SAFETY: writes the request.
        |r| unsafe { mpi_sys::PMPI_Ibarrier(comm, r) },
    )
}

/// A blocking point-to-point call `blocking`, or, while a forwarder exists, its non-blocking
/// form `start` waited for with polling (point-to-point forms match each other, so no rank
/// needs to choose alike).
pub fn p2p(
    blocking: impl FnOnce() -> c_int,
    start: impl FnOnce(&mut MPI_Request) -> c_int,
) -> c_int {
    // SAFETY: MPI_STATUS_IGNORE.
    unsafe { p2p_status(blocking, start, super::status_ignore()) }
}

/// `p2p` for a call that fills a status.
///
/// # Safety
/// `status` is MPI_STATUS_IGNORE or writable.
pub unsafe fn p2p_status(
    blocking: impl FnOnce() -> c_int,
    start: impl FnOnce(&mut MPI_Request) -> c_int,
    status: *mut MPI_Status,
) -> c_int {
    if !polling() {
        return blocking();
    }
    let mut req = request_null();
    let rc = start(&mut req);
    if rc != SUCCESS {
        return rc;
    }
    // SAFETY: the request just posted; `status` as the caller promises.
    unsafe { wait(&mut req, status) }
}
