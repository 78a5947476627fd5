//! Dynamic broadcast on the forwarding engine ("Using Dynamic Broadcasts to improve Task-Based
//! Runtime Performances", Euro-Par 2020): only the root knows the recipients; each recipient
//! receives with its ordinary point-to-point receive and never learns that a broadcast brought
//! the data. The routing travels with the data (`wire::dbcast`): root, tag and the trimmed
//! subtree list of a binomial tree (`algo::dbcast`), with priorities; segments go on the
//! engine's own communicator, each rank forwards to its subtree from inside whatever MPI call
//! it is in (or from the progress thread) and delivers into the receive its application posted.
//!
//! A receive of the application on an enabled communicator is posted on the host as usual
//! (`MPI_Irecv` into its buffer), and registered here as well. Whichever comes first wins: the
//! host matches a point-to-point message (mpicast sees it complete, without freeing it), or a
//! broadcast is paired with the receive, which mpicast then cancels on the host; a cancel
//! that does not take means the host matched first, and the broadcast goes to the next receive.
//! So a receive is completed once, by one message.
//!
//! Order. MPI promises that one sender's messages that a receive could take are taken in the
//! order they were sent. For the root's plain messages and its broadcasts to one rank:
//! - a broadcast carries, per recipient, how many plain messages the root had sent it before
//!   (in total and with the broadcast's tag); the recipient counts the plain messages its
//!   receives got from that root, and pairs the broadcast with a receive only once every earlier
//!   plain message that receive could take has been received (`wire::dbcast::Matcher`);
//! - after the root's first broadcast to a rank, its later point-to-point sends to that rank on
//!   the communicator go by the engine too (numbered with the broadcasts, and delivered in that
//!   order), so no plain message can overtake a broadcast. Sends mpicast does not see (the host's
//!   PMPI calls, persistent sends) are not ordered that way.

use super::forward::{EngineError, Outcome, ReqState};
use crate::algo::dbcast::{Recipient, Shape};
use crate::host::buffer::UserBuf;
use crate::host::recv::{self, HostReq, HostStatus};
use crate::host::{self, p2p, MPI_Comm};
use crate::wire::dbcast::{Arrived, Forwarder, Key, Matcher, OutQueue};
use crate::wire::matching::{RecvId, Want};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The MPI tag of dynamic broadcast segments on the engine's communicator.
pub const TAG_DBCAST: c_int = 7;
/// Segments taken in one progress call at most.
const RECV_PER_CALL: usize = 256;

/// How a registered receive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvState {
    /// Waiting on the host and here.
    Posted,
    /// A broadcast took it (the host request is cancelled); its data is still coming.
    Paired(Key),
    /// The host completed it with a point-to-point message (or a cancel of the application's).
    Host,
    /// A broadcast completed it: the status to give.
    Dbcast(Outcome),
}

struct DRecv {
    host: HostReq,
    buf: UserBuf,
    state: RecvState,
    /// Freed by the application (MPI_Request_free): completes unseen, then goes.
    orphan: bool,
}

/// What a look at a registered receive found (`DbcastSide::look`).
pub enum Look {
    /// Still waiting.
    NotYet,
    /// The host completed it with a point-to-point message (or an error: the call's result)
    /// and freed its request; it is forgotten here.
    Host(c_int, HostStatus),
    /// Done as `RecvState` says (a broadcast, or the host earlier): finished the usual way.
    Done(RecvState),
}

/// A broadcast for this rank, arriving.
struct Assembly {
    arrived: Arrived,
    data: Vec<u8>,
    complete: bool,
    taken: bool,
}

/// The dynamic broadcast side of one communicator's engine.
pub struct DbcastSide {
    rank: u32,
    fwd: Forwarder,
    matcher: Matcher,
    queue: OutQueue,
    sends: p2p::SharedSends,
    assemblies: HashMap<Key, Assembly>,
    recvs: FxHashMap<RecvId, DRecv>,
    next_recv: RecvId,
    /// Receives a broadcast took whose data is still coming (`deliver` looks only when some
    /// are).
    paired: usize,
    /// Bytes of broadcasts no receive has taken, and the bound.
    unexpected: usize,
    unexpected_limit: usize,
    /// Root side: plain messages sent to each rank, in total and per tag.
    plain_total: FxHashMap<u32, u64>,
    plain_tag: FxHashMap<(u32, c_int), u64>,
    /// Ranks this root sent a broadcast to: its later sends to them go by the engine.
    by_engine: FxHashSet<u32>,
    /// Plain sends of released deferred sends, each group with the request it completes.
    plain: Vec<(Vec<HostReq>, Arc<ReqState>)>,
    /// Since when some broadcast has waited for plain messages a posted receive could take,
    /// and how long it may (MPICAST_TIMEOUT_MS).
    blocked_since: Option<Instant>,
    stall_limit: Duration,
    pub activity: u64,
    /// Segments sent and received on the engine's communicator (for the end: `segments`).
    segs_out: u64,
    segs_in: u64,
}

impl DbcastSide {
    pub fn new(
        rank: u32,
        ranks: u32,
        seg_bytes: usize,
        unexpected_limit: usize,
        stall_limit: Duration,
    ) -> DbcastSide {
        DbcastSide {
            rank,
            fwd: Forwarder::new(rank, ranks, seg_bytes),
            matcher: Matcher::default(),
            queue: OutQueue::default(),
            sends: p2p::SharedSends::default(),
            assemblies: HashMap::new(),
            recvs: FxHashMap::default(),
            next_recv: 0,
            paired: 0,
            unexpected: 0,
            unexpected_limit,
            plain_total: FxHashMap::default(),
            plain_tag: FxHashMap::default(),
            by_engine: FxHashSet::default(),
            plain: Vec::new(),
            blocked_since: None,
            stall_limit,
            activity: 0,
            segs_out: 0,
            segs_in: 0,
        }
    }

    fn before(&self, rank: u32, tag: c_int) -> (u64, u64) {
        (
            self.plain_total.get(&rank).copied().unwrap_or(0),
            self.plain_tag.get(&(rank, tag)).copied().unwrap_or(0),
        )
    }

    /// Starts a broadcast of `data` (packed) to `list` (in tree order for `shape`) with `tag`:
    /// the data is copied, so the request is done at once.
    pub fn start(
        &mut self,
        comm: MPI_Comm,
        list: &[Recipient],
        shape: Shape,
        tag: c_int,
        data: &[u8],
    ) -> Result<Arc<ReqState>, EngineError> {
        let (tot, per) = (&self.plain_total, &self.plain_tag);
        let before = |r: u32| {
            (
                tot.get(&r).copied().unwrap_or(0),
                per.get(&(r, tag)).copied().unwrap_or(0),
            )
        };
        let s = self.fwd.start(list, shape, tag, data, &before);
        for r in list {
            self.by_engine.insert(r.rank);
        }
        for o in s.send {
            self.queue.push(o);
        }
        self.flush(comm)?;
        Ok(self.sent(tag))
    }

    fn sent(&self, tag: c_int) -> Arc<ReqState> {
        ReqState::done_with(Outcome {
            source: self.rank as c_int,
            tag,
            bytes: 0,
            error: host::SUCCESS,
        })
    }

    /// Payload bytes per segment.
    pub fn seg_bytes(&self) -> usize {
        self.fwd.seg_bytes()
    }

    /// Whether this root's sends to `dest` go by the engine (it broadcast to `dest` before).
    pub fn by_engine(&self, dest: u32) -> bool {
        self.by_engine.contains(&dest)
    }

    /// A plain message of this root to `dest` with `tag` went by the host.
    pub fn count_plain(&mut self, dest: u32, tag: c_int) {
        *self.plain_total.entry(dest).or_insert(0) += 1;
        *self.plain_tag.entry((dest, tag)).or_insert(0) += 1;
    }

    /// A point-to-point message to `dest` by the engine (numbered with the broadcasts).
    pub fn direct(&mut self, comm: MPI_Comm, dest: u32, tag: c_int, data: &[u8]) -> MpiOr<()> {
        let before = self.before(dest, tag);
        let s = self.fwd.direct(dest, 0, tag, data, before);
        for o in s.send {
            self.queue.push(o);
        }
        self.flush(comm)
    }

    /// `direct`, after which this root's later sends to `dest` go by the engine too (fan-out
    /// detection's group of one: a later plain send must not overtake it).
    pub fn direct_ordered(
        &mut self,
        comm: MPI_Comm,
        dest: u32,
        tag: c_int,
        data: &[u8],
    ) -> MpiOr<()> {
        self.by_engine.insert(dest);
        self.direct(comm, dest, tag, data)
    }

    /// Plain sends that a release made on the host: `state` completes when all have.
    pub fn plain_sends(&mut self, reqs: Vec<HostReq>, state: Arc<ReqState>) {
        self.plain.push((reqs, state));
    }

    /// Registers the application's receive `host` (posted on the host into `buf`), wanting
    /// `want`; pairs it at once with a broadcast that is here already.
    pub fn post(&mut self, host: HostReq, buf: UserBuf, want: Want) -> Result<RecvId, EngineError> {
        let id = self.next_recv;
        self.next_recv += 1;
        self.recvs.insert(
            id,
            DRecv {
                host,
                buf,
                state: RecvState::Posted,
                orphan: false,
            },
        );
        let mut work = Vec::new();
        if let Some(m) = self.matcher.post(id, want) {
            work.push((id, m));
        }
        self.pair_all(work)?;
        self.deliver()?;
        Ok(id)
    }

    /// How receive `id` stands (None: not ours, or gone).
    pub fn state(&self, id: RecvId) -> Option<RecvState> {
        self.recvs.get(&id).map(|r| r.state)
    }

    /// How receive `id` stands, after a look at its host request if it is only posted (a
    /// point-to-point message that completed it is counted then).
    pub fn poll(&mut self, id: RecvId) -> Result<Option<RecvState>, EngineError> {
        let Some(r) = self.recvs.get(&id) else {
            return Ok(None);
        };
        if r.state == RecvState::Posted {
            if let Some(st) = recv::peek(r.host)? {
                let work = self.host_done(id, &st);
                self.pair_all(work)?;
                self.deliver()?;
            }
        }
        Ok(self.state(id))
    }

    /// The application's wait or test looks at receive `id`: one only posted is tested on the
    /// host, which completes and frees it when a point-to-point message came (counted, and
    /// forgotten here: `Look::Host`), so that the common case costs one host call.
    pub fn look(&mut self, id: RecvId) -> Result<Look, EngineError> {
        let Some(r) = self.recvs.get_mut(&id) else {
            return Ok(Look::Done(RecvState::Host));
        };
        if r.state != RecvState::Posted {
            return Ok(match r.state {
                RecvState::Paired(_) => Look::NotYet,
                s => Look::Done(s),
            });
        }
        let (rc, st) = recv::test_status(&mut r.host);
        let Some(st) = st else {
            return Ok(Look::NotYet);
        };
        let work = if rc == host::SUCCESS {
            self.host_done(id, &st)
        } else {
            // Completed in error: nothing to count.
            self.matcher.withdraw(id);
            Vec::new()
        };
        self.recvs.remove(&id);
        self.pair_all(work)?;
        self.deliver()?;
        Ok(Look::Host(rc, st))
    }

    /// Forgets a completed receive (its application handle was completed).
    pub fn forget(&mut self, id: RecvId) {
        self.recvs.remove(&id);
    }

    /// The application cancels receive `id`: true when it was still only posted (withdrawn
    /// here; the caller cancels it on the host), false when a message already took it.
    pub fn cancel(&mut self, id: RecvId) -> bool {
        match self.recvs.get_mut(&id) {
            Some(r) if r.state == RecvState::Posted => {
                self.matcher.withdraw(id);
                r.state = RecvState::Host;
                true
            }
            _ => false,
        }
    }

    /// The application freed receive `id`'s request: one still only posted is withdrawn (the
    /// host keeps its receive, as MPI_Request_free leaves it); one a broadcast took completes
    /// into its buffer unseen.
    pub fn orphan(&mut self, id: RecvId) {
        let Some(r) = self.recvs.get_mut(&id) else {
            return;
        };
        match r.state {
            RecvState::Posted => {
                self.matcher.withdraw(id);
                self.recvs.remove(&id);
            }
            RecvState::Paired(_) => r.orphan = true,
            RecvState::Host | RecvState::Dbcast(_) => {
                self.recvs.remove(&id);
            }
        }
    }

    /// MPI_Improbe/MPI_Mprobe: takes the first broadcast a receive of `want` would take now,
    /// so that no receive gets it but the MPI_Mrecv of its message handle (`take_data`).
    pub fn take_probed(&mut self, want: Want) -> Option<Arrived> {
        let m = self.matcher.probe(want)?;
        self.matcher.take(m.key)?;
        if let Some(a) = self.assemblies.get_mut(&m.key) {
            a.taken = true;
            self.unexpected = self
                .unexpected
                .saturating_sub(usize::try_from(a.arrived.len).unwrap_or(usize::MAX));
        }
        Some(m)
    }

    /// The data of a probed broadcast once it is whole (it leaves the engine).
    pub fn take_data(&mut self, key: Key) -> Option<(Arrived, Vec<u8>)> {
        if !self.assemblies.get(&key)?.complete {
            return None;
        }
        let a = self.assemblies.remove(&key)?;
        Some((a.arrived, a.data))
    }

    /// The host matched a plain message from `root` with `tag` outside a registered receive
    /// (MPI_Improbe, MPI_Mprobe): counted as received.
    pub fn note_plain(&mut self, root: u32, tag: c_int) -> Result<(), EngineError> {
        let work = self.matcher.plain_received(root, tag);
        self.pair_all(work)?;
        self.deliver()
    }

    /// The first broadcast a receive of `want` would take now (MPI_Iprobe).
    pub fn probe(&self, want: Want) -> Option<Arrived> {
        self.matcher.probe(want)
    }

    /// Moves what can move: segments in (forwarded, assembled), the host's completions of
    /// registered receives, pairs, deliveries, queued sends out.
    pub fn progress(&mut self, comm: MPI_Comm) -> Result<(), EngineError> {
        let mut work = Vec::new();
        for _ in 0..RECV_PER_CALL {
            let Some((from, bytes)) = p2p::recv_any_probed(comm, TAG_DBCAST)? else {
                break;
            };
            self.activity += 1;
            self.segs_in += 1;
            let bytes: Arc<[u8]> = Arc::from(bytes);
            let h = self.fwd.handle(from, bytes.clone()).map_err(|e| {
                EngineError::Protocol(format!("dynamic broadcast segment from rank {from}: {e:?}"))
            })?;
            for o in h.send {
                self.queue.push(o);
            }
            if let Some(a) = h.arrived {
                let len = usize::try_from(a.len).map_err(|_| {
                    EngineError::Protocol(format!("a dynamic broadcast of {} bytes", a.len))
                })?;
                self.assemblies.insert(
                    a.key,
                    Assembly {
                        arrived: a,
                        data: Vec::with_capacity(len),
                        complete: false,
                        taken: false,
                    },
                );
                self.unexpected += len;
                work.extend(self.matcher.arrive(a));
                if self.unexpected > self.unexpected_limit {
                    return Err(EngineError::Full(format!(
                        "rank {}: {} bytes of dynamic broadcasts came that no receive has taken, \
                         more than MPICAST_IMCAST_BUFFER ({} bytes): post receives earlier, or \
                         raise it",
                        self.rank, self.unexpected, self.unexpected_limit
                    )));
                }
            }
            if let Some((key, offset, range)) = h.data {
                let a = self.assemblies.get_mut(&key).ok_or_else(|| {
                    EngineError::Protocol(format!("data of {key:?} before its start"))
                })?;
                if offset != a.data.len() {
                    return Err(EngineError::Protocol(format!(
                        "{key:?}: segments out of order"
                    )));
                }
                a.data.extend_from_slice(&bytes[range]);
            }
            if let Some(key) = h.complete {
                if let Some(a) = self.assemblies.get_mut(&key) {
                    a.complete = true;
                }
            }
        }
        // Receives the host completed with a point-to-point message: counted, so that
        // broadcasts sent after them may be paired. Looked at only while some broadcast
        // waits for such counts (a wait or test of one receive looks at it alone, `poll`):
        // with many receives posted, looking at all of them in every call would cost more
        // than the application's own calls.
        if !work.is_empty() || !self.matcher.blocked().is_empty() {
            let posted: Vec<(RecvId, HostReq)> = self
                .recvs
                .iter()
                .filter(|(_, r)| r.state == RecvState::Posted)
                .map(|(id, r)| (*id, r.host))
                .collect();
            for (id, h) in posted {
                if let Some(st) = recv::peek(h)? {
                    work.extend(self.host_done(id, &st));
                }
            }
        }
        self.pair_all(work)?;
        self.deliver()?;
        self.flush(comm)?;
        for (reqs, state) in self.plain.iter_mut() {
            let mut err = None;
            reqs.retain_mut(|r| match recv::test_free(r) {
                Ok(done) => !done,
                Err(e) => {
                    err = Some(e);
                    false
                }
            });
            if let Some(e) = err {
                return Err(EngineError::Mpi(e));
            }
            if reqs.is_empty() {
                state.finish(Outcome {
                    source: self.rank as c_int,
                    tag: 0,
                    bytes: 0,
                    error: host::SUCCESS,
                });
            }
        }
        self.plain.retain(|(reqs, _)| !reqs.is_empty());
        let blocked = !self.matcher.blocked().is_empty();
        self.blocked_since = match (blocked, self.blocked_since) {
            (false, _) => None,
            (true, Some(t)) => Some(t),
            (true, None) => Some(Instant::now()),
        };
        if self
            .blocked_since
            .is_some_and(|t| t.elapsed() > self.stall_limit)
        {
            return Err(EngineError::Protocol(self.stalled()));
        }
        Ok(())
    }

    /// Why the broadcasts that wait for plain messages cannot be delivered.
    fn stalled(&self) -> String {
        let list: Vec<String> = self
            .matcher
            .blocked()
            .iter()
            .map(|(_, m)| {
                format!(
                    "from rank {} with tag {} ({} plain messages of that root sent before it, {} \
                     with its tag)",
                    m.key.root, m.tag, m.before_total, m.before_tag
                )
            })
            .collect();
        format!(
            "rank {}: dynamic broadcasts waited more than MPICAST_TIMEOUT_MS ({} ms) for \
             point-to-point messages their root sent before them: {}. Those messages were not \
             received through the receive calls mpicast intercepts on this communicator (a \
             persistent receive, MPI_Sendrecv or a PMPI call does not count), so the order MPI \
             promises cannot be kept",
            self.rank,
            self.stall_limit.as_millis(),
            list.join("; ")
        )
    }

    /// Receive `id` was completed by the host with `st`: the pairs that this makes possible.
    fn host_done(&mut self, id: RecvId, st: &HostStatus) -> Vec<(RecvId, Arrived)> {
        self.matcher.withdraw(id);
        if let Some(r) = self.recvs.get_mut(&id) {
            r.state = RecvState::Host;
        }
        self.activity += 1;
        if st.cancelled() || st.source() < 0 {
            return Vec::new();
        }
        self.matcher.plain_received(st.source() as u32, st.tag())
    }

    /// Gives each paired broadcast its receive: the host receive is cancelled; when the cancel
    /// does not take (the host matched a message first), that message completes the receive
    /// and the broadcast goes back to be paired again.
    fn pair_all(&mut self, mut work: Vec<(RecvId, Arrived)>) -> Result<(), EngineError> {
        while let Some((id, m)) = work.pop() {
            let Some(r) = self.recvs.get(&id) else {
                work.extend(self.matcher.unpair(m));
                continue;
            };
            let st = recv::cancel(r.host)?;
            if st.cancelled() {
                self.recvs.get_mut(&id).expect("present").state = RecvState::Paired(m.key);
                self.paired += 1;
                if let Some(a) = self.assemblies.get_mut(&m.key) {
                    a.taken = true;
                    self.unexpected = self
                        .unexpected
                        .saturating_sub(usize::try_from(a.arrived.len).unwrap_or(usize::MAX));
                }
            } else {
                work.extend(self.host_done(id, &st));
                work.extend(self.matcher.unpair(m));
            }
        }
        Ok(())
    }

    /// Completes the receives whose broadcast is whole: the data into the application's
    /// buffer, the status kept for its wait.
    fn deliver(&mut self) -> Result<(), EngineError> {
        if self.paired == 0 {
            return Ok(());
        }
        let ready: Vec<(RecvId, Key)> = self
            .recvs
            .iter()
            .filter_map(|(id, r)| match r.state {
                RecvState::Paired(k) if self.assemblies.get(&k).is_some_and(|a| a.complete) => {
                    Some((*id, k))
                }
                _ => None,
            })
            .collect();
        for (id, key) in ready {
            let a = self.assemblies.remove(&key).expect("ready");
            let r = self.recvs.get_mut(&id).expect("ready");
            let (n, error) = super::forward::fill(&mut r.buf, &a.data)?;
            self.activity += 1;
            self.paired -= 1;
            if r.orphan {
                self.recvs.remove(&id);
            } else {
                r.state = RecvState::Dbcast(Outcome {
                    source: a.arrived.key.root as c_int,
                    tag: a.arrived.tag,
                    bytes: n as u64,
                    error,
                });
            }
        }
        Ok(())
    }

    /// Posts the queued segments, highest priority first. All of them: a segment held back
    /// would wait for this rank's next mpicast call, and the application may be about to
    /// block elsewhere (a collective of the host), while a posted send is moved by the host
    /// in any of its calls. So the priorities order the sends that wait together (the forwards
    /// of one progress step, a root's first hops), as the host's queues then keep them.
    fn flush(&mut self, comm: MPI_Comm) -> MpiOr<()> {
        self.sends.test()?;
        while let Some(o) = self.queue.pop() {
            self.sends.isend(comm, o.to, TAG_DBCAST, o.bytes)?;
            self.segs_out += 1;
        }
        Ok(())
    }

    /// Nothing in flight: no send out or queued, nothing passing through, no receive of the
    /// application waiting on a broadcast's data.
    pub fn is_idle(&self) -> bool {
        self.sends.is_empty()
            && self.plain.is_empty()
            && self.queue.is_empty()
            && self.fwd.relays_in_flight() == 0
            && self.paired == 0
    }

    /// Segments this rank has sent and received so far (summed over the ranks, they are equal
    /// when nothing is in flight).
    pub fn segments(&self) -> [u64; 2] {
        [self.segs_out, self.segs_in]
    }

    /// MPICAST_TIMEOUT_MS, as this side uses it.
    pub fn stall_limit(&self) -> Duration {
        self.stall_limit
    }

    /// The broadcasts that came to this rank and that no receive of the application took
    /// (for the message when the engine goes).
    pub fn unclaimed(&self) -> Vec<String> {
        let mut v: Vec<&Assembly> = self.assemblies.values().filter(|a| !a.taken).collect();
        v.sort_by_key(|a| (a.arrived.key.root, a.arrived.seq));
        v.iter()
            .map(|a| {
                format!(
                    "from rank {} with tag {}, {} bytes",
                    a.arrived.key.root, a.arrived.tag, a.arrived.len
                )
            })
            .collect()
    }

    /// Sends everything still queued before the engine goes (bounded by `limit`).
    pub fn drain(&mut self, comm: MPI_Comm, limit: Duration) {
        let start = Instant::now();
        while !(self.queue.is_empty() && self.sends.is_empty()) && start.elapsed() < limit {
            if self.progress(comm).is_err() {
                break;
            }
            // The other engines too: their ranks may be waiting on this one.
            super::progress::poll();
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

type MpiOr<T> = Result<T, EngineError>;

/// Whether any communicator of the process has dynamic broadcast on: the Fortran receive
/// entries (`ffi::fortran_p2p`) read this first and go straight to the host while it is false.
pub static ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

type EngineRef = std::sync::Weak<std::sync::Mutex<super::forward::Engine>>;

/// The enabled communicators (by handle) and their engines.
static COMMS: std::sync::RwLock<Vec<(u64, EngineRef)>> = std::sync::RwLock::new(Vec::new());

/// The application's receive requests (by handle) that a broadcast may complete, with their
/// communicator's key (and sends on enabled communicators: `POLLED_SEND`).
static RECVS: std::sync::Mutex<Option<FxHashMap<u64, (u64, RecvId)>>> = std::sync::Mutex::new(None);

/// The tracked request that is a send on an enabled communicator (not a receive): a wait
/// for it forwards broadcasts meanwhile, since its receiver may be waiting for one that
/// this rank must pass on.
pub const POLLED_SEND: RecvId = RecvId::MAX;

/// The enabled communicators' handles, read without a lock by the intercepted calls on any
/// communicator (a handle of a communicator freed since may stay: the lookup then says no).
const FAST_KEYS: usize = 16;
static KEYS: [std::sync::atomic::AtomicU64; FAST_KEYS] =
    [const { std::sync::atomic::AtomicU64::new(0) }; FAST_KEYS];
static NKEYS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// More enabled communicators than `KEYS` holds: every communicator takes the long way.
static OVERFLOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// How many requests are tracked (the wait and test calls look up nothing while it is 0).
static NTRACKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether `comm` may have dynamic broadcast on (false: certainly not), without a lock.
#[inline]
pub fn maybe_enabled(comm: MPI_Comm) -> bool {
    use std::sync::atomic::Ordering::Acquire;
    let key = recv::handle_key(comm);
    let n = NKEYS.load(Acquire).min(FAST_KEYS);
    KEYS[..n].iter().any(|k| k.load(Acquire) == key) || OVERFLOW.load(Acquire)
}

/// Turns dynamic broadcast on for `comm`, whose engine is `engine` (with its side made).
pub fn enable(comm: MPI_Comm, engine: &Arc<std::sync::Mutex<super::forward::Engine>>) {
    let key = recv::handle_key(comm);
    if !maybe_enabled(comm) {
        use std::sync::atomic::Ordering::{AcqRel, Release};
        let i = NKEYS.load(std::sync::atomic::Ordering::Acquire);
        if i < FAST_KEYS {
            KEYS[i].store(key, Release);
            NKEYS.fetch_add(1, AcqRel);
        } else {
            OVERFLOW.store(true, Release);
        }
    }
    let mut all = crate::lock::write(&COMMS);
    all.retain(|(k, w)| *k != key && w.strong_count() > 0);
    all.push((key, Arc::downgrade(engine)));
    COMMS_EPOCH.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    ON.store(true, std::sync::atomic::Ordering::Release);
}

/// The engine of `comm` if dynamic broadcast is on there.
pub fn engine_of(comm: MPI_Comm) -> Option<Arc<std::sync::Mutex<super::forward::Engine>>> {
    if !maybe_enabled(comm) {
        return None;
    }
    engine_of_key(recv::handle_key(comm))
}

/// `engine_of` by the communicator's key.
fn engine_of_key(key: u64) -> Option<Arc<std::sync::Mutex<super::forward::Engine>>> {
    let epoch = COMMS_EPOCH.load(std::sync::atomic::Ordering::Acquire);
    // The last answer of this thread, while no communicator was enabled or freed since.
    if let Some(hit) = LAST.with(|l| {
        let l = l.borrow();
        (l.0 == key && l.1 == epoch).then(|| l.2.upgrade())
    }) {
        return hit;
    }
    let all = crate::lock::read(&COMMS);
    let w = all
        .iter()
        .find(|(k, _)| *k == key)
        .map_or_else(std::sync::Weak::new, |(_, w)| w.clone());
    drop(all);
    let found = w.upgrade();
    LAST.with(|l| *l.borrow_mut() = (key, epoch, w));
    found
}

/// Bumped whenever a communicator is enabled or forgotten (`engine_of`'s cache).
static COMMS_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    /// This thread's last `engine_of` answer: (communicator key, epoch, engine).
    static LAST: std::cell::RefCell<(u64, u64, EngineRef)> =
        const { std::cell::RefCell::new((0, 0, std::sync::Weak::new())) };
}

/// Forgets `comm` (it is being freed).
pub fn disable(comm: MPI_Comm) {
    let key = recv::handle_key(comm);
    crate::lock::write(&COMMS).retain(|(k, _)| *k != key);
    COMMS_EPOCH.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
}

/// Records that the application's request `req` is receive `id` (or `POLLED_SEND`) on the
/// enabled communicator `comm`.
pub fn track(req: host::MPI_Request, comm: MPI_Comm, id: RecvId) {
    track_key(req, recv::handle_key(comm), id);
}

/// `track`, with the communicator's key (as `take_tracked` gave it).
pub fn track_key(req: host::MPI_Request, comm: u64, id: RecvId) {
    let mut g = crate::lock::lock(&RECVS);
    let m = g.get_or_insert_with(FxHashMap::default);
    m.insert(recv::handle_key(req), (comm, id));
    // A store under the lock (no read-modify-write): the count is the table's size.
    NTRACKED.store(m.len(), std::sync::atomic::Ordering::Release);
}

/// The engine and receive of the application's request `req`, if a broadcast may complete it.
pub fn tracked(
    req: host::MPI_Request,
) -> Option<(Arc<std::sync::Mutex<super::forward::Engine>>, RecvId)> {
    if NTRACKED.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return None;
    }
    let (comm, id) = *crate::lock::lock(&RECVS)
        .as_ref()?
        .get(&recv::handle_key(req))?;
    Some((engine_of_key(comm)?, id))
}

/// `tracked`, and stops tracking it (a wait that will complete it: one lock, not two); with
/// the communicator's key, to track it again (`track_key`) if the wait fails.
pub fn take_tracked(
    req: host::MPI_Request,
) -> Option<(Arc<std::sync::Mutex<super::forward::Engine>>, RecvId, u64)> {
    if NTRACKED.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return None;
    }
    let (comm, id) = {
        let mut g = crate::lock::lock(&RECVS);
        let m = g.as_mut()?;
        let v = m.remove(&recv::handle_key(req))?;
        NTRACKED.store(m.len(), std::sync::atomic::Ordering::Release);
        v
    };
    Some((engine_of_key(comm)?, id, comm))
}

/// Whether any request is tracked (a quick test before looking at each of an array).
pub fn any_tracked() -> bool {
    NTRACKED.load(std::sync::atomic::Ordering::Acquire) > 0
}

/// Stops tracking `req` (its handle is completed or freed).
pub fn untrack(req: host::MPI_Request) {
    if NTRACKED.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return;
    }
    if let Some(m) = crate::lock::lock(&RECVS).as_mut() {
        if m.remove(&recv::handle_key(req)).is_some() {
            NTRACKED.store(m.len(), std::sync::atomic::Ordering::Release);
        }
    }
}

/// The tree for `len` bytes to `ranks` with `prio` (or none): its shape
/// (MPICAST_DBCAST_CHAIN_BYTES) and the order of the list in it (MPICAST_DBCAST_TREE).
pub fn tree_order(
    e: &super::forward::Engine,
    ranks: &[u32],
    prio: Option<&[i32]>,
    len: usize,
) -> (Shape, Vec<Recipient>) {
    use crate::algo::dbcast as tree;
    use crate::config::DbcastTree;
    let cfg = crate::session::get().ok();
    let how = cfg
        .as_ref()
        .map_or(DbcastTree::Binomial, |s| s.cfg.dbcast_tree);
    let chain = cfg.and_then(|s| s.cfg.dbcast_chain_bytes).map(|b| b as u64);
    let seg = e.dbcast.as_ref().map_or(1, |d| d.seg_bytes());
    let shape = tree::shape_for(ranks.len(), len as u64, seg, chain);
    let key = |r: u32| e.topo_key(r);
    let order = match how {
        DbcastTree::Binomial => tree::order_for(shape, ranks, prio, None),
        DbcastTree::Topo => tree::order_for(shape, ranks, prio, Some(&key)),
    };
    (shape, order)
}
