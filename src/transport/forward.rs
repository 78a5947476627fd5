//! The forwarding engine of one communicator over the host MPI: `wire::forward` (routing and
//! segments) and `wire::matching` (receives against arrived multicasts), carried by
//! point-to-point messages on a duplicate of the communicator that only this engine uses, so
//! nothing of it ever meets the application's messages.
//!
//! Segments are received whole, whatever their size, by probing (MPI_Improbe, then MPI_Mrecv
//! into a buffer of the probed size), and passed on with MPI_Isend from a shared buffer that
//! lives until every send of it completed. A multicast for this rank is assembled in memory
//! of the engine's and copied into the receive's buffer once it is complete and matched (one
//! copy, and an unpack for a non-contiguous datatype). Multicasts no receive has taken yet
//! are held up to a bound (`unexpected_limit`); past it the job ends with a message, since
//! dropping one would break the delivery promise.
//!
//! Progress happens only when someone calls `progress`: every wait and intercepted MPI call
//! of the process does, through `transport::progress`, and so does the progress thread
//! (`MPICAST_PROGRESS`). A rank that computes for a long time without calling MPI holds up
//! the multicasts routed through it: MPI moves nothing of ours meanwhile (docs/imcast.md
//! measures it).

use super::imcast_ip::IpSide;
use crate::algo::prefix::{Route, RoutingTable, Topology};
use crate::config::ImcastTransport;
use crate::host::buffer::UserBuf;
use crate::host::{self, p2p, MPI_Comm, MpiResult, SendComm};
use crate::wire::forward::{Arrived, Forwarder, MsgKey};
use crate::wire::matching::{Matcher, RecvId, Want};
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The MPI tag of every segment on the engine's communicator.
const TAG_SEGMENT: c_int = 1;
/// Segments taken in one progress call at most, so that the caller gets back to its work.
const RECV_PER_CALL: usize = 256;

/// How a request ended (what its MPI_Status says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub source: c_int,
    pub tag: c_int,
    /// Bytes received (0 for a send).
    pub bytes: u64,
    /// An MPI error class for the status (MPI_SUCCESS, or MPI_ERR_TRUNCATE).
    pub error: c_int,
}

/// A request of the engine: done once, then its outcome stays.
#[derive(Default)]
pub struct ReqState {
    done: AtomicBool,
    outcome: Mutex<Outcome>,
}

impl ReqState {
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    pub fn outcome(&self) -> Outcome {
        *crate::lock::lock(&self.outcome)
    }

    pub(crate) fn finish(&self, o: Outcome) {
        *crate::lock::lock(&self.outcome) = o;
        self.done.store(true, Ordering::Release);
    }

    /// A request done at once (a receive from MPI_PROC_NULL, a send with nothing to wait for).
    pub fn done_with(o: Outcome) -> Arc<ReqState> {
        let r = Arc::new(ReqState::default());
        r.finish(o);
        r
    }
}

impl host::grequest::Completion for ReqState {
    fn is_done(&self) -> bool {
        ReqState::is_done(self)
    }
    fn status(&self) -> (c_int, c_int, c_int, u64) {
        let o = self.outcome();
        (o.source, o.tag, o.error, o.bytes)
    }
}

/// A multicast for this rank, arriving.
struct Assembly {
    arrived: Arrived,
    data: Vec<u8>,
    complete: bool,
    /// The receive that took it.
    taken: Option<RecvId>,
    /// The rank its segments come from (the last hop), and when the last one came.
    via: u32,
    last: std::time::Instant,
    /// Whether this rank said that it stalled.
    said: bool,
}

struct Recv {
    buf: UserBuf,
    state: Arc<ReqState>,
    /// The multicast it took, once matched.
    msg: Option<MsgKey>,
}

pub struct Engine {
    comm: SendComm,
    rank: u32,
    fwd: Forwarder,
    matcher: Matcher,
    assemblies: HashMap<MsgKey, Assembly>,
    recvs: HashMap<RecvId, Recv>,
    next_recv: RecvId,
    sends: p2p::SharedSends,
    /// Bytes of multicasts that came and no receive has taken.
    unexpected: usize,
    unexpected_limit: usize,
    /// Segments taken so far (the progress thread backs off while it stays the same).
    activity: u64,
    /// The IP multicast side, when the engine's communicator has a working group.
    ip: Option<IpSide>,
    ip_policy: IpPolicy,
    /// At close, how long the IP side may take to finish what it sends and receives.
    ip_drain: std::time::Duration,
    /// Dynamic broadcast, once MPICAST_Dbcast_enable turned it on (`transport::dbcast`).
    pub dbcast: Option<super::dbcast::DbcastSide>,
    /// A multicast for this rank that stops arriving for this long is reported (once):
    /// MPICAST_TIMEOUT_MS; and when it was last looked for.
    stall: std::time::Duration,
    stall_check: std::time::Instant,
    /// Its entry among the process's forwarders (`host::progress`), once registered.
    forwarder: Option<u64>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(id) = self.forwarder.take() {
            host::progress::remove_forwarder(id);
        }
    }
}

/// When a multicast goes by IP multicast rather than point-to-point.
#[derive(Clone, Copy, Debug)]
pub struct IpPolicy {
    pub transport: ImcastTransport,
    /// `auto`: from this share (percent) of the other ranks as destinations...
    pub share: u32,
    /// ...and this many bytes...
    pub min_bytes: usize,
    /// ...when multicast goes between hosts (more than one host, or MPICAST_TOPO=flat).
    pub between_hosts: bool,
    /// Ranks of the communicator.
    pub ranks: u32,
}

impl IpPolicy {
    /// Point-to-point only.
    pub fn p2p(ranks: u32) -> IpPolicy {
        IpPolicy {
            transport: ImcastTransport::P2p,
            share: 100,
            min_bytes: usize::MAX,
            between_hosts: false,
            ranks,
        }
    }

    /// Whether a multicast of `len` bytes to `ndests` ranks goes by IP (given a group).
    pub fn wants_ip(&self, ndests: usize, len: usize) -> bool {
        match self.transport {
            ImcastTransport::P2p => false,
            ImcastTransport::Ip => true,
            // One destination gains nothing from a group (one copy either way), and every
            // rank of the group receives the datagrams: at least two destinations, and the
            // share of the communicator.
            ImcastTransport::Auto => {
                let others = u64::from(self.ranks.saturating_sub(1)).max(1);
                self.between_hosts
                    && ndests >= 2
                    && len >= self.min_bytes
                    && (ndests as u64) * 100 >= u64::from(self.share) * others
            }
        }
    }
}

/// Why a call on the engine failed.
#[derive(Debug)]
pub enum EngineError {
    Mpi(host::MpiError),
    /// A segment that is not ours, or inconsistent (a bug, or another program on the
    /// engine's private communicator: impossible by construction).
    Protocol(String),
    /// More unexpected data than the bound.
    Full(String),
}

impl From<host::MpiError> for EngineError {
    fn from(e: host::MpiError) -> Self {
        EngineError::Mpi(e)
    }
}

impl From<super::op::OpError> for EngineError {
    fn from(e: super::op::OpError) -> Self {
        match e {
            super::op::OpError::Mpi(m) => EngineError::Mpi(m),
            other => EngineError::Protocol(format!("IP multicast: {other}")),
        }
    }
}

impl Engine {
    /// An engine over `comm`, the engine's own duplicate (it takes ownership and frees it).
    pub fn new(
        comm: MPI_Comm,
        rank: u32,
        topo: Arc<Topology>,
        table: RoutingTable,
        route: Route,
        seg_bytes: usize,
        unexpected_limit: usize,
    ) -> Engine {
        Engine {
            comm: SendComm(comm),
            rank,
            fwd: Forwarder::new(rank, topo, table, route, seg_bytes),
            matcher: Matcher::default(),
            assemblies: HashMap::new(),
            recvs: HashMap::new(),
            next_recv: 0,
            sends: p2p::SharedSends::default(),
            unexpected: 0,
            unexpected_limit,
            activity: 0,
            ip: None,
            ip_policy: IpPolicy::p2p(0),
            ip_drain: std::time::Duration::ZERO,
            dbcast: None,
            forwarder: None,
            stall: std::time::Duration::from_secs(30),
            stall_check: std::time::Instant::now(),
        }
    }

    /// This engine's communicator (mpicast's own duplicate).
    pub fn comm(&self) -> MPI_Comm {
        self.comm.0
    }

    /// The topology ID of `rank` as a number (close ranks have close numbers).
    pub fn topo_key(&self, rank: u32) -> u64 {
        self.fwd.topology().id(rank).value()
    }

    /// The rank of this process in the engine's communicator.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// How long a multicast for this rank may stop arriving before the engine says so
    /// (`MPICAST_TIMEOUT_MS`).
    pub fn set_stall(&mut self, stall: std::time::Duration) {
        self.stall = stall;
    }

    /// Says (once per multicast) which multicasts for this rank have stopped arriving half
    /// way for longer than `stall`, and through which rank they come: that rank holds them
    /// up (it computes without calling MPI, or it is blocked in a call mpicast cannot poll).
    /// Looked at once a second at most.
    fn report_stalls(&mut self) {
        let now = std::time::Instant::now();
        if now.duration_since(self.stall_check) < std::time::Duration::from_secs(1) {
            return;
        }
        self.stall_check = now;
        for a in self.assemblies.values_mut() {
            if a.complete || a.said || now.duration_since(a.last) < self.stall {
                continue;
            }
            a.said = true;
            let through = if a.via == a.arrived.key.root {
                "straight from its root".to_string()
            } else {
                format!("through rank {}", a.via)
            };
            // What the rank that holds it up does, as the name service says (one lookup
            // per stall); the usual causes where nobody can tell.
            let doing = crate::presence::doing(self.comm.0, a.via).unwrap_or_else(|| {
                format!(
                    "rank {} computes without calling MPI, or is blocked in a call mpicast \
                     does not poll",
                    a.via
                )
            });
            crate::session::say(&format!(
                "mpicast: rank {} waits for a multicast from rank {} (tag {}, {} of {} bytes \
                 so far) that comes {through}; nothing more has come for {} ms: rank {} holds \
                 it up: {doing} (docs/imcast.md, \"Progress\")",
                self.rank,
                a.arrived.key.root,
                a.arrived.tag,
                a.data.len(),
                a.arrived.len,
                now.duration_since(a.last).as_millis(),
                a.via
            ));
        }
    }

    /// What this engine holds for others or waits for, in words (None when idle): for a
    /// timeout's message on this rank.
    pub fn describe_pending(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (from, key, to, left) in self.fwd.relays() {
            parts.push(format!(
                "a multicast from rank {} coming through rank {from} ({left} segments still \
                 to come) that this rank passes on to ranks {}",
                key.root,
                crate::config::rank_list(to)
            ));
        }
        for a in self.assemblies.values().filter(|a| !a.complete) {
            parts.push(format!(
                "a multicast from rank {} for this rank, {} of {} bytes so far, last from rank {}",
                a.arrived.key.root,
                a.data.len(),
                a.arrived.len,
                a.via
            ));
        }
        if !self.sends.is_empty() {
            parts.push("segments it sent that are not yet received".to_string());
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Gives the engine its IP multicast side (a channel set up on its communicator).
    /// `drain`: how long closing waits for the IP multicasts still going (`close`).
    pub fn set_ip(&mut self, side: Option<IpSide>, policy: IpPolicy, drain: std::time::Duration) {
        self.ip = side;
        self.ip_policy = policy;
        self.ip_drain = drain;
    }

    /// Whether a multicast of `len` bytes to `ndests` ranks would go by IP multicast.
    pub fn goes_by_ip(&self, ndests: usize, len: usize) -> bool {
        self.ip.is_some() && self.ip_policy.wants_ip(ndests, len)
    }

    /// Starts a multicast of `data` (already packed) to `dests` with `tag`: every segment to
    /// every first hop is posted at once. The data is copied, so the request is done at once
    /// (the application's buffer may be reused when it completes). A progress step follows,
    /// unless the engine had nothing in flight and the multicast goes point-to-point: then
    /// only the sends are tested (which pushes them out where the host MPI did not at once),
    /// since a step would also probe for segments, a round of the host's progress engine (a
    /// yield under Open MPI with `mpi_yield_when_idle`) that the caller pays; the
    /// caller's next call steps.
    pub fn imcast(
        &mut self,
        dests: &[u32],
        tag: c_int,
        data: &[u8],
    ) -> Result<Arc<ReqState>, EngineError> {
        let idle = self.is_idle();
        // By IP unless this rank's IP multicasts of this length stopped reaching their
        // destinations lately (`imcast_ip`: then point-to-point, as if the policy said so).
        let via = if self.goes_by_ip(dests.len(), data.len()) {
            self.ip.as_mut().and_then(|ip| ip.route(data.len()))
        } else {
            None
        };
        let s = if let Some(via) = via {
            // The data by datagrams of the engine's group, sent and repaired in `progress`
            // until every destination has acknowledged it; the envelopes take the routes.
            let s = self.fwd.start_envelope(dests, tag, data.len() as u64);
            self.ip
                .as_mut()
                .expect("goes_by_ip")
                .send(s.key, dests, data.to_vec(), via);
            s
        } else {
            self.fwd.start(dests, tag, data)
        };
        for o in s.send {
            self.sends.isend(self.comm.0, o.to, TAG_SEGMENT, o.bytes)?;
        }
        if via.is_some() || !idle {
            self.progress()?;
        } else {
            self.sends.test()?;
        }
        Ok(ReqState::done_with(Outcome {
            source: self.rank as c_int,
            tag,
            bytes: 0,
            error: host::SUCCESS,
        }))
    }

    /// Posts a receive into `buf` of a multicast from `want`.
    pub fn irecv(&mut self, buf: UserBuf, want: Want) -> Result<Arc<ReqState>, EngineError> {
        let id = self.next_recv;
        self.next_recv += 1;
        let state = Arc::new(ReqState::default());
        self.recvs.insert(
            id,
            Recv {
                buf,
                state: state.clone(),
                msg: None,
            },
        );
        if let Some(m) = self.matcher.post(id, want) {
            self.take(id, m.key);
        }
        self.progress()?;
        Ok(state)
    }

    /// The first multicast a receive of `want` would take, if one is here (its first
    /// segment came): (source, tag, length).
    pub fn iprobe(&mut self, want: Want) -> Result<Option<Arrived>, EngineError> {
        self.progress()?;
        Ok(self.matcher.probe(want))
    }

    /// Withdraws a receive that has not matched (MPICAST_Request_free on it); a matched one
    /// completes into its buffer as usual, unseen.
    pub fn forget(&mut self, state: &Arc<ReqState>) {
        let id = self
            .recvs
            .iter()
            .find(|(_, r)| Arc::ptr_eq(&r.state, state))
            .map(|(id, _)| *id);
        if let Some(id) = id {
            if self.matcher.withdraw(id) {
                self.recvs.remove(&id);
            }
        }
    }

    fn take(&mut self, id: RecvId, key: MsgKey) {
        if let Some(r) = self.recvs.get_mut(&id) {
            r.msg = Some(key);
        }
        if let Some(a) = self.assemblies.get_mut(&key) {
            a.taken = Some(id);
            self.unexpected = self
                .unexpected
                .saturating_sub(usize::try_from(a.arrived.len).unwrap_or(usize::MAX));
        }
    }

    /// Moves what can move: takes the segments that came (passing them on, assembling ours),
    /// forgets completed sends, and completes receives whose multicast is whole.
    pub fn progress(&mut self) -> Result<(), EngineError> {
        let mut hurry = false;
        for _ in 0..RECV_PER_CALL {
            let Some((from, bytes)) = p2p::recv_any_probed(self.comm.0, TAG_SEGMENT)? else {
                break;
            };
            self.activity += 1;
            let bytes: Arc<[u8]> = Arc::from(bytes);
            let h = self
                .fwd
                .handle(from, bytes.clone())
                .map_err(|e| EngineError::Protocol(format!("segment from rank {from}: {e:?}")))?;
            for o in h.send {
                self.sends.isend(self.comm.0, o.to, TAG_SEGMENT, o.bytes)?;
            }
            if let Some(a) = h.arrived {
                let len = usize::try_from(a.len).map_err(|_| {
                    EngineError::Protocol(format!("a multicast of {} bytes", a.len))
                })?;
                if h.envelope {
                    let ip = self.ip.as_mut().ok_or_else(|| {
                        EngineError::Protocol(format!(
                            "an IP multicast from rank {} on a communicator without a group",
                            a.key.root
                        ))
                    })?;
                    ip.expect(a.key, len);
                }
                self.assemblies.insert(
                    a.key,
                    Assembly {
                        arrived: a,
                        // IP multicasts are received into the IP side's buffer.
                        data: if h.envelope {
                            Vec::new()
                        } else {
                            Vec::with_capacity(len)
                        },
                        complete: false,
                        taken: None,
                        via: from,
                        last: std::time::Instant::now(),
                        said: false,
                    },
                );
                self.unexpected += len;
                for (id, m) in self.matcher.arrive(a) {
                    self.take(id, m.key);
                }
                if self.unexpected > self.unexpected_limit {
                    return Err(EngineError::Full(format!(
                        "rank {}: {} bytes of multicasts came that no MPICAST_Mcast_irecv has \
                         taken, more than MPICAST_IMCAST_BUFFER ({} bytes): post receives \
                         earlier, or raise it",
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
                a.last = std::time::Instant::now();
            }
            if let Some(key) = h.complete {
                if let Some(a) = self.assemblies.get_mut(&key) {
                    a.complete = true;
                    if a.taken.is_some() {
                        hurry = true;
                        break;
                    }
                }
            }
        }
        if hurry {
            // A receive waits for what just came: the step ends here and completes it, so
            // that its caller sees it before another probe of the host MPI delays it (one
            // that finds nothing is a round of the host's progress engine: under Open MPI a
            // poll, and a yield with `mpi_yield_when_idle`, 15 to 40 us on a loaded host;
            // BENCHMARKS.md, Small messages). The next step takes the rest.
            return Ok(self.deliver()?);
        }
        if let Some(ip) = self.ip.as_mut() {
            let before = ip.activity;
            // Late repairs and acknowledgements are taken often only while no receive of
            // this rank waits (their probes would delay it).
            for (key, data) in ip.progress(self.comm.0, self.recvs.is_empty())? {
                if let Some(a) = self.assemblies.get_mut(&key) {
                    a.data = data;
                    a.complete = true;
                }
            }
            self.activity += ip.activity - before;
        }
        self.sends.test()?;
        self.deliver()?;
        self.report_stalls();
        if let Some(d) = self.dbcast.as_mut() {
            let before = d.activity;
            d.progress(self.comm.0)?;
            self.activity += d.activity - before;
        }
        Ok(())
    }

    /// Completes the receives whose multicast is matched and whole.
    fn deliver(&mut self) -> MpiResult<()> {
        let ready: Vec<(RecvId, MsgKey)> = self
            .recvs
            .iter()
            .filter_map(|(id, r)| {
                let key = r.msg?;
                self.assemblies
                    .get(&key)
                    .filter(|a| a.complete)
                    .map(|_| (*id, key))
            })
            .collect();
        for (id, key) in ready {
            let a = self.assemblies.remove(&key).expect("ready");
            let mut r = self.recvs.remove(&id).expect("ready");
            let (n, error) = fill(&mut r.buf, &a.data)?;
            r.state.finish(Outcome {
                source: a.arrived.key.root as c_int,
                tag: a.arrived.tag,
                bytes: n as u64,
                error,
            });
        }
        Ok(())
    }

    /// Nothing in flight: no send out, no receive posted, nothing passing through.
    pub fn is_idle(&self) -> bool {
        self.sends.is_empty()
            && self.recvs.is_empty()
            && self.fwd.relays_in_flight() == 0
            && self.ip.as_ref().map_or(true, |ip| ip.is_idle())
            && self.dbcast.as_ref().map_or(true, |d| d.is_idle())
    }

    /// Called when the communicator goes: waits for the sends still out (their buffers go
    /// with the engine), then frees the engine's communicator.
    pub fn close(mut self, session: &crate::session::Session) {
        let _ = self.progress();
        if let Some(d) = self.dbcast.as_mut() {
            d.drain(
                self.comm.0,
                self.ip_drain.max(std::time::Duration::from_secs(1)),
            );
            close_dbcast(d, self.comm.0, self.rank);
        }
        // IP multicasts still going: this rank's, whose destinations have not acknowledged
        // everything (their requests completed at once), and those coming to it. Every rank
        // that closes does the same, so they finish together; a rank that never comes costs
        // the bound, and is named.
        let start = std::time::Instant::now();
        while self.ip.as_ref().is_some_and(|ip| !ip.is_idle()) {
            if start.elapsed() >= self.ip_drain {
                let ip = self.ip.as_ref().expect("checked");
                crate::session::say(&format!(
                    "mpicast: rank {}: IP multicasts unfinished when the communicator went \
                     ({}); ranks that never answered: {:?}",
                    self.rank,
                    ip.describe_pending(),
                    ip.pending_ranks()
                ));
                break;
            }
            if self.progress().is_err() {
                break;
            }
            // The other communicators' engines too: their ranks may be waiting on this one.
            super::progress::poll();
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        let left = self.matcher.unmatched_list();
        if !left.is_empty() {
            let list: Vec<String> = left
                .iter()
                .map(|m| {
                    format!(
                        "from rank {} with tag {}, {} bytes",
                        m.key.root, m.tag, m.len
                    )
                })
                .collect();
            crate::session::say(&format!(
                "mpicast: rank {}: {} multicast{} came to this rank and no MPICAST_Mcast_irecv \
                 took {}: {}",
                self.rank,
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                if list.len() == 1 { "it" } else { "them" },
                list.join("; ")
            ));
        }
        if let Some(ip) = self.ip.take() {
            ip.into_channel().close(session, self.comm.0);
        }
        self.sends = p2p::SharedSends::default();
        let _ = host::comm::free(self.comm.0);
    }
}

/// The end of a dynamic-broadcast side (every rank of the communicator closes it together,
/// at MPI_Comm_free or MPI_Finalize): each rank goes on taking (and passing on) the segments
/// the others send it until, summed over the ranks, every segment sent has been received
/// (rounds of a sum it drives, while it moves its own), so that a broadcast the application
/// never received neither leaves its root's send pending, which would hang MPI_Finalize, nor
/// stops half way down its tree. A rank that does not come within MPICAST_TIMEOUT_MS ends the
/// job with a message; broadcasts that came and were never received are named, once.
fn close_dbcast(d: &mut super::dbcast::DbcastSide, comm: MPI_Comm, rank: u32) {
    let limit = d.stall_limit();
    let start = std::time::Instant::now();
    let mut pause = host::progress::Pause::default();
    'rounds: while let Ok(mut sum) = host::comm::OpenSum::start(comm, d.segments()) {
        loop {
            // Errors of the application's making (data past MPICAST_IMCAST_BUFFER, order)
            // no longer matter here: what counts is taking what comes.
            let _ = d.progress(comm);
            match sum.step() {
                Ok(Some([sent, received])) if sent == received => break 'rounds,
                Ok(Some(_)) => continue 'rounds,
                Ok(None) => {}
                Err(_) => break 'rounds,
            }
            if start.elapsed() > limit {
                crate::session::say(&format!(
                    "mpicast: rank {rank}: closing a communicator with dynamic broadcast \
                     (MPI_Comm_free or MPI_Finalize), the other ranks did not come within \
                     MPICAST_TIMEOUT_MS ({} ms); every rank must free it, or finalize; aborting",
                    limit.as_millis()
                ));
                host::abort(host::comm_world(), 1);
            }
            super::progress::poll();
            pause.pause();
        }
    }
    let left = d.unclaimed();
    if !left.is_empty() {
        crate::session::say(&format!(
            "mpicast: rank {rank}: {} dynamic broadcast{} came to this rank and no receive took \
             {}: {}",
            left.len(),
            if left.len() == 1 { "" } else { "s" },
            if left.len() == 1 { "it" } else { "them" },
            left.join("; ")
        ));
    }
}

/// Copies a multicast's `data` into a receive's buffer (unpacked for a non-contiguous
/// datatype): the bytes copied, and the status's error, MPI_ERR_TRUNCATE when the data is
/// longer than the buffer (which then holds its start).
pub(crate) fn fill(buf: &mut UserBuf, data: &[u8]) -> MpiResult<(usize, c_int)> {
    let posted = buf.bytes();
    let n = data.len().min(posted);
    let error = if data.len() > posted {
        mpi_sys::MPI_ERR_TRUNCATE as c_int
    } else {
        host::SUCCESS
    };
    let whole = n == posted;
    buf.with_recv_bytes(|dst| -> Result<Option<usize>, ()> {
        dst[..n].copy_from_slice(&data[..n]);
        Ok(if whole { None } else { Some(n) })
    })?
    .ok();
    Ok((n, error))
}

/// The engines of every communicator, for the progress of calls that hold none of them
/// (`transport::progress`: every wait of the process steps them all).
static ENGINES: Mutex<Vec<std::sync::Weak<Mutex<Engine>>>> = Mutex::new(Vec::new());

/// Registers an engine for the progress steps (`transport::progress`), and among the
/// process's forwarders (`host::progress`), so that from now on every wait of the process
/// moves it.
pub fn register(e: &Arc<Mutex<Engine>>) -> MpiResult<()> {
    super::progress::install();
    {
        let mut all = crate::lock::lock(&ENGINES);
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(e));
    }
    // After the push: a step that sees the new epoch finds the engine in the list.
    let mut g = crate::lock::lock(e);
    if g.forwarder.is_none() {
        g.forwarder = Some(host::progress::add_forwarder(g.comm.0)?);
    }
    Ok(())
}

/// The engines whose communicator is still there.
fn live_engines() -> Vec<Arc<Mutex<Engine>>> {
    crate::lock::lock(&ENGINES)
        .iter()
        .filter_map(|w| w.upgrade())
        .collect()
}

/// What `try_progress` found.
pub struct Tried {
    /// Some engine exists.
    pub engines: bool,
    /// Some engine moved something (a segment, a completion).
    pub moved: bool,
}

/// The registered engines, as weak references (for a caller that keeps the list between
/// steps, refreshed when `host::progress::epoch` changes).
pub fn engines() -> Vec<std::sync::Weak<Mutex<Engine>>> {
    let mut all = crate::lock::lock(&ENGINES);
    all.retain(|w| w.strong_count() > 0);
    all.clone()
}

/// The progress step over the engines of `list` that are still there: every engine that no
/// other thread holds right now, once. An engine that cannot go on (unexpected data past its
/// bound) ends the job, as in an application's call.
pub fn try_progress(list: &[std::sync::Weak<Mutex<Engine>>]) -> Tried {
    let mut moved = false;
    let mut any = false;
    for w in list {
        let Some(e) = w.upgrade() else {
            continue;
        };
        any = true;
        let Ok(mut g) = e.try_lock() else {
            continue;
        };
        let before = g.activity;
        match g.progress() {
            Ok(()) => moved |= g.activity != before,
            Err(EngineError::Mpi(_)) => {}
            Err(EngineError::Full(m)) | Err(EngineError::Protocol(m)) => {
                crate::session::say(&format!("mpicast: {m}; aborting"));
                host::abort(host::comm_world(), 1)
            }
        }
    }
    Tried {
        engines: any,
        moved,
    }
}

/// What the engines of this process hold for others or wait for (engines another thread
/// holds are skipped), for a timeout's message: empty when nothing.
pub fn describe_pending_all() -> String {
    let mut out = String::new();
    for e in live_engines() {
        let Ok(g) = e.try_lock() else {
            continue;
        };
        if let Some(d) = g.describe_pending() {
            out.push_str(&format!(
                "\n  rank {} of a communicator with multicast calls holds {d}",
                g.rank
            ));
        }
    }
    out
}

/// Withdraws a receive that has not matched, whichever engine holds it.
pub fn forget_everywhere(state: &Arc<ReqState>) {
    let engines = live_engines();
    for e in engines {
        crate::lock::lock(&e).forget(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_ip_from_two_destinations_the_share_and_the_size() {
        let p = IpPolicy {
            transport: ImcastTransport::Auto,
            share: 25,
            min_bytes: 16 << 10,
            between_hosts: true,
            ranks: 9,
        };
        // 8 others: 25 % is 2.
        assert!(p.wants_ip(2, 16 << 10));
        assert!(p.wants_ip(8, 1 << 20));
        assert!(!p.wants_ip(1, 1 << 20), "one destination");
        assert!(!p.wants_ip(8, (16 << 10) - 1), "too small");
        let big = IpPolicy { ranks: 100, ..p };
        assert!(
            !big.wants_ip(24, 1 << 20) && big.wants_ip(25, 1 << 20),
            "share of 99"
        );
        let one_host = IpPolicy {
            between_hosts: false,
            ..p
        };
        assert!(!one_host.wants_ip(8, 1 << 20));
        let two = IpPolicy { ranks: 2, ..p };
        assert!(!two.wants_ip(1, 1 << 20));
        // The explicit settings: always, never.
        for (t, want) in [(ImcastTransport::Ip, true), (ImcastTransport::P2p, false)] {
            let q = IpPolicy {
                transport: t,
                ..one_host
            };
            assert_eq!(q.wants_ip(1, 1), want);
        }
    }
}
