//! What an action does on the wire, for one communicator: the `wire` protocols carried by
//! `net` sockets and the host MPI (`host`). Never decides *whether* multicast is used (that is
//! `coll`'s and `session`'s) and never touches MPI handles of the application.
//!
//! This file: the communicator's multicast `Channel` and `setup`, the collective that decides
//! once per communicator whether multicast works: rank 0 draws the group, port, key and ids
//! and broadcasts them with the host MPI (a rank of another setup version gets an error
//! naming both); every rank opens and joins; rank 0 multicasts probe datagrams until everyone
//! has reported through a non-blocking allgather; the result is the same on every rank.
//!
//! The parts:
//! - `op`: the `sched::Backend` of MPI_Bcast and MPI_Barrier (scouts over PMPI, the
//!   multicast actions over the channel); `responder`: the per-process thread that answers
//!   release and repair queries after this rank left;
//! - `goal`, `goal_mcast`: the backend of GOAL runs over the host MPI, and their multicast
//!   actions over the channel;
//! - `forward`: the forwarding engine of MPICAST_Imcast (`wire::forward` over PMPI on a
//!   communicator of its own); `imcast_ip`: its IP multicast body;
//! - `dbcast`: dynamic broadcast on the forwarding engine; `fanout`: an unmodified program's
//!   sends of one datum to several ranks held and released as one dynamic broadcast;
//! - `progress`: the one progress of the process, which every wait of mpicast calls.

pub mod dbcast;
pub mod fanout;
pub mod forward;
pub mod goal;
pub mod goal_mcast;
pub mod heal;
pub mod imcast_ip;
pub mod op;
pub mod progress;
pub mod responder;

use crate::config::Config;
use crate::host::{self, MPI_Comm};
use crate::lock::lock;
use crate::net::{self, Iface, McastSocket, UnicastSocket};
use crate::session::Session;
use crate::wire::{self, Ctx, Key, Params};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The multicast side of one communicator.
pub struct Channel {
    pub sock: McastSocket,
    pub ctx: Ctx,
    pub params: Params,
    /// Every rank's responder, by rank: where receivers of an eager broadcast ask its root
    /// for lost fragments, and barrier waiters ask rank 0 for a lost release.
    pub responders: Vec<SocketAddrV4>,
    /// Lazily opened socket for release and repair queries and their answers.
    pub query_sock: Option<UnicastSocket>,
    pub iface_addr: Ipv4Addr,
    pub epoch: Instant,
    /// This process's responder: barrier releases (rank 0) and the copies of eager
    /// broadcasts this rank rooted are recorded there for the responder thread.
    pub responder: Option<responder::ResponderHandle>,
    /// An eager broadcast this rank rooted and returned from before every receiver
    /// acknowledged it (at most one): its acknowledgements are collected by `settle`, at the
    /// start of this rank's next operation on the channel and when the channel closes.
    pub deferred: Option<op::Deferred>,
    /// The communicator is registered as a duty while `deferred` may be owed
    /// (`coll::duty`): the application's calls look at it meanwhile.
    pub duty: bool,
    /// MPICAST_ROOT_WAITS: the root of an eager broadcast waits for every acknowledgement
    /// before it returns, instead of leaving that to `settle`.
    pub root_waits: bool,
    /// `settle`'s receive buffer, kept between calls.
    pub settle_buf: Vec<u8>,
    /// Control messages for a later operation that reached this rank while it was still the
    /// root of an earlier one (receivers may ask for data as soon as they enter): replayed
    /// when that operation's sender starts.
    pub early_control: Vec<(u32, Vec<u8>)>,
    /// Datagram buffers a sender fills before handing them to the kernel in one sendmmsg;
    /// kept with the channel so that an operation allocates nothing.
    pub tx_batch: Vec<Vec<u8>>,
    /// `tx_batch[tx_unsent.clone()]` were taken from a sender but not yet accepted by the
    /// kernel (a non-blocking transmit found the device queue full): sent before anything new.
    pub tx_unsent: std::ops::Range<usize>,
    /// Datagrams of multicasts that this rank has not started yet: an eager broadcast's root
    /// does not wait for scouts, so its data may reach a rank still busy with an earlier
    /// operation of the communicator, and a GOAL run's `mrecv` may still wait for its
    /// prerequisites.
    pub early_dgrams: EarlyDgrams,
    /// The group and port, and the interface (name and address), for messages.
    pub group: (Ipv4Addr, u16),
    pub iface_name: String,
    /// Every rank of the channel as a user knows it (world rank, host), by channel rank:
    /// the messages that name ranks multicast stopped reaching.
    pub members: Vec<crate::reach::Who>,
    /// Multicast operations completed on this channel: evidence that multicast reached
    /// every rank before, when one stops arriving.
    pub ops_done: u64,
    /// The path of the communicator when multicast breaks mid-job (`heal`): alike on every
    /// rank.
    pub heal: wire::heal::Heal,
    /// This rank's record of operations multicast did not deliver here.
    pub health: wire::heal::Health,
    /// This rank knows that multicast does not reach every rank (it served one by unicast,
    /// or a receiver said so): the next operation it roots switches.
    pub trouble: bool,
    /// `MPICAST_SUSPECT_MS`, in nanoseconds.
    pub suspect_ns: wire::Nanos,
    /// The smallest receive buffer granted among the ranks: the window of another size.
    pub min_rcvbuf: usize,
    /// `HealMsg`s of later operations, kept for them.
    pub heal_kept: Vec<Vec<u8>>,
    /// The last operation that switched: trouble reported about earlier ones is old news.
    pub switched_at: u64,
    /// Rank 0 said that the communicator left multicast / came back (once each).
    pub heal_said: (bool, bool),
    /// How this rank's GOAL multicasts go (`goal_mcast`: decided by the root alone, like
    /// `MPICAST_Imcast`'s), and what it said about it (to leave IP multicast, to return).
    pub goal_path: wire::heal::RootPath,
    pub goal_said: (bool, bool),
    /// GOAL repair messages (`HealMsg` on `goal_mcast::TAG_GOAL_HEAL`) of a later run.
    pub goal_kept: Vec<Vec<u8>>,
    /// Rank 0: the last barrier it released, and when it next looks for waiters that ask
    /// for their release by the host MPI (`heal::answer_release_asks`).
    pub released_upto: u64,
    pub release_poll_at: wire::Nanos,
    /// The datagram buffers of an operation (to encode, to receive), lent to each in turn
    /// (`op::OpBackend`): allocating and clearing 128 KiB for every broadcast and barrier
    /// was a good part of a small one's work.
    pub op_bufs: (Vec<u8>, Vec<u8>),
    /// A broadcast receiver's datagrams, several per system call (`take_rx_batch`).
    pub rx_batch: net::RecvBatch,
}

/// Bytes of datagrams kept for multicasts not started yet, at most (beyond this they are
/// dropped and repaired by the protocol like any loss).
pub const EARLY_MAX_BYTES: usize = 8 << 20;

/// Datagrams kept for the multicast of their sequence number, replayed when it starts; at
/// most `EARLY_MAX_BYTES` of them.
#[derive(Default)]
pub struct EarlyDgrams {
    dgrams: Vec<(u64, Vec<u8>)>,
    bytes: usize,
}

impl EarlyDgrams {
    /// Keeps datagram `d` of multicast `seq`, unless the store is full.
    pub fn keep(&mut self, seq: u64, d: &[u8]) {
        if self.bytes + d.len() <= EARLY_MAX_BYTES {
            self.bytes += d.len();
            self.dgrams.push((seq, d.to_vec()));
        }
    }

    /// Takes out the datagrams of multicast `seq`, in the order they came.
    pub fn take(&mut self, seq: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if self.dgrams.iter().any(|&(s, _)| s == seq) {
            let all = std::mem::take(&mut self.dgrams);
            for (s, d) in all {
                if s == seq {
                    self.bytes -= d.len();
                    out.push(d);
                } else {
                    self.dgrams.push((s, d));
                }
            }
        }
        out
    }

    /// Forgets the datagrams of multicasts up to `seq`: those operations are over here.
    pub fn forget_through(&mut self, seq: u64) {
        let bytes = &mut self.bytes;
        self.dgrams.retain(|(s, d)| {
            if *s <= seq {
                *bytes -= d.len();
            }
            *s > seq
        });
    }
}

/// A receiver's datagrams per recvmmsg: at most this many bytes of buffer...
const RX_BATCH_BYTES: usize = 128 << 10;
/// ...and at most this many datagrams.
const RX_BATCH_MAX: usize = 64;

/// Datagrams handed to the kernel per sendmmsg.
pub const TX_BATCH: usize = 32;

impl Channel {
    pub fn now(&self) -> wire::Nanos {
        self.epoch.elapsed().as_nanos() as wire::Nanos
    }

    /// The receive batch, made at first use: as many datagrams of this channel's size as fit
    /// in `RX_BATCH_BYTES`, from 1 to `RX_BATCH_MAX`.
    pub fn take_rx_batch(&mut self) -> net::RecvBatch {
        let cap = self.params.frag() + wire::packet::OVERHEAD;
        if self.rx_batch.slots() == 0 || self.rx_batch.cap() < cap {
            let slots = (RX_BATCH_BYTES / cap).clamp(1, RX_BATCH_MAX);
            self.rx_batch = net::RecvBatch::new(slots, cap);
        }
        std::mem::take(&mut self.rx_batch)
    }

    /// The socket for unicast queries and their answers, opened at first use.
    pub fn query_sock(&mut self) -> std::io::Result<&UnicastSocket> {
        if self.query_sock.is_none() {
            self.query_sock = Some(UnicastSocket::open(self.iface_addr)?);
        }
        Ok(self.query_sock.as_ref().expect("opened above"))
    }

    /// Collects what an earlier broadcast still owes (`settle`), then stops answering for
    /// the channel. `private`: the communicator's private duplicate, still valid. A failure
    /// cannot be reported to a caller any more (the communicator is going away): it is said.
    pub fn close(mut self, session: &Session, private: MPI_Comm) {
        if let Err(e) = self.settle(private) {
            crate::session::say(&format!("mpicast: while freeing a communicator: {e}"));
        }
        if let Some(r) = lock(&session.responder).as_ref() {
            r.unregister(self.ctx.comm);
        }
    }
}

const SETUP_VERSION: u32 = 1;
const SETUP_LEN: usize = 96;
/// Where rank 0 writes its library's version (`CARGO_PKG_VERSION`, zero-padded, cut to fit):
/// only for the message that a rank of another setup version gives. Bytes a library before
/// it left zero, and no decoder reads otherwise.
const SETUP_LIB_AT: std::ops::Range<usize> = 72..SETUP_LEN;

/// What rank 0 decides for everyone.
struct SetupMsg {
    ok: bool,
    group: Ipv4Addr,
    port: u16,
    key: [u8; 32],
    job: u64,
    comm: u32,
    frag_bytes: u32,
}

impl SetupMsg {
    fn encode(&self) -> [u8; SETUP_LEN] {
        let mut b = [0u8; SETUP_LEN];
        b[0..4].copy_from_slice(&SETUP_VERSION.to_le_bytes());
        b[4] = self.ok as u8;
        b[8..12].copy_from_slice(&self.group.octets());
        b[12..14].copy_from_slice(&self.port.to_le_bytes());
        b[16..48].copy_from_slice(&self.key);
        b[48..56].copy_from_slice(&self.job.to_le_bytes());
        b[56..60].copy_from_slice(&self.comm.to_le_bytes());
        b[68..72].copy_from_slice(&self.frag_bytes.to_le_bytes());
        let lib = env!("CARGO_PKG_VERSION").as_bytes();
        let n = lib.len().min(SETUP_LIB_AT.len());
        b[SETUP_LIB_AT.start..SETUP_LIB_AT.start + n].copy_from_slice(&lib[..n]);
        b
    }

    /// Rank 0's message, or, when rank 0 runs another setup version (another libmpicast),
    /// what to tell the user: both versions, and rank 0's library version when it sent one.
    fn decode(b: &[u8; SETUP_LEN]) -> Result<SetupMsg, String> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let theirs = u32_at(0);
        if theirs != SETUP_VERSION {
            let lib = &b[SETUP_LIB_AT];
            let lib = &lib[..lib.iter().position(|&c| c == 0).unwrap_or(lib.len())];
            let lib = match String::from_utf8_lossy(lib) {
                l if l.is_empty() => "a library that does not say its version".to_string(),
                l => format!("libmpicast {l}"),
            };
            return Err(format!(
                "mpicast: rank 0 of this communicator sent setup message version {theirs} \
                 ({lib}), this rank reads version {SETUP_VERSION} (libmpicast {}): every rank \
                 must load the same libmpicast",
                env!("CARGO_PKG_VERSION")
            ));
        }
        let ip = |i: usize| Ipv4Addr::new(b[i], b[i + 1], b[i + 2], b[i + 3]);
        Ok(SetupMsg {
            ok: b[4] != 0,
            group: ip(8),
            port: u16::from_le_bytes([b[12], b[13]]),
            key: b[16..48].try_into().unwrap(),
            job: u64::from_le_bytes(b[48..56].try_into().unwrap()),
            comm: u32_at(56),
            frag_bytes: u32_at(68),
        })
    }
}

/// Random bytes from the kernel; a failure here only weakens group/port spreading and the
/// key, so it is reported as a setup failure rather than silently using zeros.
fn random_bytes(out: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(out)
}

/// The interface is resolved once per process: the configuration is per process too.
fn iface(cfg: &Config) -> Result<Iface, String> {
    static IFACE: OnceLock<Result<Iface, String>> = OnceLock::new();
    IFACE
        .get_or_init(|| net::resolve_iface(cfg.iface.as_ref()).map_err(|e| e.to_string()))
        .clone()
}

/// The address of the interface this process multicasts on (its identity as a host: ranks
/// with the same address share one network stack), or `None` when none can be chosen.
pub fn local_addr(cfg: &Config) -> Option<Ipv4Addr> {
    iface(cfg).ok().map(|i| i.addr)
}

/// Rank 0's choice of group address and port inside the configured ranges.
fn draw_group(cfg: &Config, rnd: u64) -> (Ipv4Addr, u16) {
    let (base, prefix) = cfg.group;
    let host_bits = 32 - prefix as u32;
    let base = u32::from(base)
        & if prefix == 0 {
            0
        } else {
            u32::MAX << host_bits
        };
    let span: u64 = 1u64 << host_bits;
    // Avoid the all-zeros and all-ones host parts where the range allows it.
    let off = if span > 2 {
        1 + (rnd % (span - 2))
    } else {
        rnd % span
    };
    let group = Ipv4Addr::from(base.wrapping_add(off as u32));
    let (lo, hi) = cfg.ports;
    let port = lo + ((rnd >> 32) % (hi as u64 - lo as u64 + 1)) as u16;
    (group, port)
}

/// Per-rank facts gathered by the probe allgather.
const INFO_LEN: usize = 60;
/// Bytes of the short host name a rank reports (longer names are cut).
const HOST_LEN: usize = 24;
#[derive(Clone, Copy)]
struct RankInfo {
    /// 0 = could not open/join, 1 = opened but saw no probe, 2 = ready.
    status: u32,
    errno: u32,
    rcvbuf_kib: u32,
    max_payload: u32,
    /// The rank's responder thread.
    responder: SocketAddrV4,
    /// Its rank in MPI_COMM_WORLD, the address of its interface, its short host name
    /// (zero-padded): how messages name it.
    world: u32,
    addr: Ipv4Addr,
    host: [u8; HOST_LEN],
    /// The largest probe datagram it received (bytes; the prober: the largest it sent).
    max_seen: u32,
}

impl RankInfo {
    fn encode(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        for (i, v) in [self.status, self.errno, self.rcvbuf_kib, self.max_payload]
            .iter()
            .enumerate()
        {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[16..20].copy_from_slice(&self.responder.ip().octets());
        b[20..22].copy_from_slice(&self.responder.port().to_le_bytes());
        b[24..28].copy_from_slice(&self.world.to_le_bytes());
        b[28..32].copy_from_slice(&self.addr.octets());
        b[32..32 + HOST_LEN].copy_from_slice(&self.host);
        b[56..60].copy_from_slice(&self.max_seen.to_le_bytes());
        b
    }
    fn decode(b: &[u8]) -> RankInfo {
        let f = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
        RankInfo {
            status: f(0),
            errno: f(1),
            rcvbuf_kib: f(2),
            max_payload: f(3),
            responder: SocketAddrV4::new(
                Ipv4Addr::new(b[16], b[17], b[18], b[19]),
                u16::from_le_bytes([b[20], b[21]]),
            ),
            world: f(6),
            addr: Ipv4Addr::new(b[28], b[29], b[30], b[31]),
            host: b[32..32 + HOST_LEN].try_into().unwrap(),
            max_seen: f(14),
        }
    }

    fn who(&self) -> crate::reach::Who {
        let end = self.host.iter().position(|&c| c == 0).unwrap_or(HOST_LEN);
        crate::reach::Who {
            world: self.world,
            host: String::from_utf8_lossy(&self.host[..end]).into_owned(),
            addr: self.addr,
        }
    }
}

/// This host's short name (up to the first dot), cut to `HOST_LEN` bytes at a character
/// boundary.
fn short_host() -> [u8; HOST_LEN] {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim().split('.').next().unwrap_or("");
    let mut end = name.len().min(HOST_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut b = [0u8; HOST_LEN];
    b[..end].copy_from_slice(&name.as_bytes()[..end]);
    b
}

/// The size of the job and the name of the MPI, for the command a message suggests.
pub fn job_and_mpi() -> (u32, &'static str) {
    let size = host::comm::size(host::comm_world()).unwrap_or(0);
    let mpi = match host::flavour::built_for() {
        host::flavour::Flavour::OpenMpi => "openmpi",
        host::flavour::Flavour::Mpich => "mpich",
        host::flavour::Flavour::Abi => "abi",
        host::flavour::Flavour::Unknown => "",
    };
    (size, mpi)
}

/// Collective over `private`. Ok(Ok(channel)) when multicast works for every rank,
/// Ok(Err(reason)) when the communicator must use the host MPI (same answer everywhere),
/// Err(e) when the host MPI itself failed.
pub fn setup(
    session: &Session,
    private: MPI_Comm,
    size: u32,
    rank: u32,
    cfg: &Config,
) -> Result<Result<Channel, String>, host::MpiError> {
    let iface = iface(cfg);
    // Rank 0 decides.
    let mut msg_bytes = [0u8; SETUP_LEN];
    let mut local_error: Option<String> = None;
    if rank == 0 {
        let msg = match rank0_draw(cfg, &iface) {
            Ok(m) => m,
            Err(e) => {
                local_error = Some(e);
                SetupMsg {
                    ok: false,
                    group: Ipv4Addr::UNSPECIFIED,
                    port: 0,
                    key: [0; 32],
                    job: 0,
                    comm: 0,
                    frag_bytes: 0,
                }
            }
        };
        msg_bytes = msg.encode();
    }
    host::comm::bcast_bytes(private, &mut msg_bytes, 0)?;
    let msg = match SetupMsg::decode(&msg_bytes) {
        Ok(m) => m,
        Err(why) => {
            // Not a reason to use the host MPI: rank 0 and its like go on with multicast.
            // The error handler gets a code whose string says why, where the host gives one.
            crate::session::say(&why);
            let code = host::error_code(host::err_other(), &why).unwrap_or_else(host::err_other);
            return Err(host::MpiError(code));
        }
    };
    if !msg.ok {
        // Every rank sees the same flag: nobody opens anything.
        // Rank 0's reason is usually this rank's too (the interface comes from the same
        // settings), so that whichever rank reports it says why.
        let (job_size, mpi) = job_and_mpi();
        let facts = crate::reach::ProbeFailure {
            local_error: local_error.or_else(|| iface.as_ref().err().cloned()),
            job_size,
            mpi: mpi.to_string(),
            ..Default::default()
        };
        return Ok(Err(facts.render()));
    }
    let ctx = Ctx {
        key: Key::new(msg.key),
        job: msg.job,
        comm: msg.comm,
    };

    // Every rank opens and joins.
    let mut info = RankInfo {
        status: 0,
        errno: 0,
        rcvbuf_kib: 0,
        max_payload: 0,
        responder: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
        world: host::comm::rank(host::comm_world()).unwrap_or(rank),
        addr: iface.as_ref().map_or(Ipv4Addr::UNSPECIFIED, |i| i.addr),
        host: short_host(),
        max_seen: 0,
    };
    let opened = iface.as_ref().map_err(|e| e.clone()).and_then(|ifc| {
        McastSocket::open(ifc, msg.group, msg.port, cfg.ttl, cfg.rcvbuf)
            .map(|s| (s, ifc.clone()))
            .map_err(|e| {
                info.errno = e.raw_os_error().unwrap_or(0) as u32;
                format!(
                    "cannot join {}:{} on {} ({}): {e}",
                    msg.group, msg.port, ifc.name, ifc.addr
                )
            })
    });
    // Every rank may root an eager broadcast, whose repairs its responder serves.
    let opened = opened.and_then(|(sock, ifc)| {
        info.responder = start_responder(session, ifc.addr)?;
        Ok((sock, ifc))
    });
    // The probes: a small one, then one of each size of the ladder (`wire::pmtu`), from the
    // datagram this communicator would use (as rank 0 sees its interface) down through the
    // common MTUs. Each carries the ladder's top in `total_len`, so that a receiver stops
    // waiting as soon as the largest has come.
    let top = iface.as_ref().map_or(0, |i| {
        wire::packet::frag_for(net::max_udp_payload(i), msg.frag_bytes as usize)
            + wire::packet::OVERHEAD
    });
    let probes = if rank == 0 {
        probe_dgrams(&ctx, 0, top)
    } else {
        Vec::new()
    };
    if let Ok((sock, ifc)) = &opened {
        info.status = 1;
        info.rcvbuf_kib = (sock.rcvbuf() / 1024) as u32;
        info.max_payload = net::max_udp_payload(ifc) as u32;
    }
    // Probe: rank 0 keeps multicasting while the others wait (bounded) for one.
    let gathered = if rank == 0 {
        if opened.is_ok() {
            info.status = 2;
            info.max_seen = top as u32;
        }
        let mut ag = host::comm::Iallgather::start(private, &info.encode())?;
        let deadline =
            Instant::now() + Duration::from_millis(cfg.probe_ms.saturating_mul(4) + 1000);
        loop {
            if let Ok((sock, _)) = &opened {
                for p in &probes {
                    let _ = sock.send(p);
                }
            }
            if ag.test()? || Instant::now() > deadline {
                break;
            }
            progress::poll();
            std::thread::sleep(progress::max_sleep(Duration::from_millis(2)));
        }
        ag.wait()?
    } else {
        if let Ok((sock, _)) = &opened {
            let own = info.max_payload as usize;
            if let Some(seen) = wait_probe(sock, &ctx, 0, own, Duration::from_millis(cfg.probe_ms))
            {
                info.status = 2;
                info.max_seen = seen as u32;
            }
        }
        host::comm::Iallgather::start(private, &info.encode())?.wait()?
    };
    let infos: Vec<RankInfo> = gathered.chunks(INFO_LEN).map(RankInfo::decode).collect();
    let failed: Vec<u32> = (0..size)
        .filter(|&r| infos[r as usize].status != 2)
        .collect();
    if !failed.is_empty() {
        let (job_size, mpi) = job_and_mpi();
        let infos = &infos;
        let failed = &failed;
        let of = move |st: u32| {
            failed
                .iter()
                .filter(move |&&r| infos[r as usize].status == st)
        };
        let facts = crate::reach::ProbeFailure {
            group: Some((msg.group, msg.port)),
            iface: iface.as_ref().ok().map(|i| (i.name.clone(), i.addr)),
            probe_ms: cfg.probe_ms,
            prober: Some(infos[0].who()),
            local_error: opened.as_ref().err().cloned(),
            cant_join: of(0)
                .filter(|&&r| r != rank || opened.is_ok())
                .map(|&r| {
                    let e = infos[r as usize].errno;
                    let why = if e == 0 {
                        String::new()
                    } else {
                        std::io::Error::from_raw_os_error(e as i32).to_string()
                    };
                    (infos[r as usize].who(), why)
                })
                .collect(),
            no_probe: of(1).map(|&r| infos[r as usize].who()).collect(),
            job_size,
            mpi: mpi.to_string(),
        };
        return Ok(Err(facts.render()));
    }
    let (sock, ifc) = opened.expect("status 2 means opened");
    // This rank's own data datagrams come back to its socket (multicast loops back to every
    // local member); the kernel drops them, so the root reads none of them (a system call and
    // a copy per datagram it sends, otherwise). Without the filter they are read and dropped.
    let (kind, words) = wire::packet::data_of(ctx.comm, rank);
    if let Err(e) = sock.drop_matching(kind, &words) {
        if cfg.verbose >= 2 {
            crate::session::say(&format!(
                "mpicast: rank {rank}: no socket filter for its own datagrams: {e}"
            ));
        }
    }
    // Everybody derives the same fragment size and window from the same gathered facts: the
    // smallest interface's, and no larger than what the probe saw reach every rank.
    let min_payload = infos
        .iter()
        .map(|i| i.max_payload as usize)
        .min()
        .unwrap_or(1472);
    // What the probe must show: the prober's largest datagram, or less where a rank's own
    // interface takes less (that rank's MTU, not the path, sets the size then).
    let top = (infos[0].max_seen as usize).min(min_payload);
    let seen_min = infos.iter().map(|i| i.max_seen as usize).min().unwrap_or(0);
    let min_payload = match wire::pmtu::choose(top, seen_min) {
        wire::pmtu::Choice::Keep => min_payload,
        wire::pmtu::Choice::Step { udp } => {
            let frag = wire::packet::frag_for(min_payload.min(udp), msg.frag_bytes as usize);
            if rank == 0 {
                crate::session::say(&format!(
                    "mpicast: a communicator of {size} ranks on {} ({}): multicast datagrams \
                     of {top} bytes do not reach every rank (missing at {}), those of {udp} \
                     bytes do: a switch or link with a smaller MTU than the hosts'? It uses \
                     {frag} data bytes per datagram (MPICAST_FRAG_BYTES sets a size; `mpicast \
                     doctor` tells more)",
                    ifc.name,
                    ifc.addr,
                    short_list(&infos, |i| (i.max_seen as usize) < top),
                ));
            }
            min_payload.min(udp)
        }
        wire::pmtu::Choice::Nothing => {
            return Ok(Err(format!(
                "multicast datagrams large enough to carry data ({} bytes) do not reach \
                 every rank on {} ({}), though small probes do (missing at {})",
                wire::pmtu::SMALLEST,
                ifc.name,
                ifc.addr,
                short_list(&infos, |i| (i.max_seen as usize) < wire::pmtu::SMALLEST),
            )));
        }
    };
    let frag = wire::packet::frag_for(min_payload, msg.frag_bytes as usize);
    let min_rcvbuf = infos
        .iter()
        .map(|i| i.rcvbuf_kib as usize * 1024)
        .min()
        .unwrap_or(0);
    let params = Params::new(
        frag,
        window_frags(min_rcvbuf, frag),
        cfg.timeout_ms * 1_000_000,
    );
    let responder = lock(&session.responder).as_ref().map(|r| {
        r.register(&ctx, rank);
        r.handle()
    });
    if cfg.verbose >= 1 && rank == 0 {
        crate::session::say(&format!(
            "mpicast: communicator of {size} ranks on {}:{} via {} ({}): {} B per datagram, window {} datagrams",
            msg.group, msg.port, ifc.name, ifc.addr, frag, params.window_frags
        ));
    }
    Ok(Ok(Channel {
        sock,
        ctx,
        params,
        responders: infos.iter().map(|i| i.responder).collect(),
        query_sock: None,
        iface_addr: ifc.addr,
        epoch: Instant::now(),
        responder,
        deferred: None,
        duty: false,
        root_waits: cfg.root_waits,
        settle_buf: Vec::new(),
        early_control: Vec::new(),
        tx_batch: Vec::new(),
        tx_unsent: 0..0,
        early_dgrams: EarlyDgrams::default(),
        group: (msg.group, msg.port),
        iface_name: format!("{} ({})", ifc.name, ifc.addr),
        members: infos.iter().map(RankInfo::who).collect(),
        ops_done: 0,
        heal: wire::heal::Heal::new(frag),
        health: wire::heal::Health::default(),
        trouble: false,
        suspect_ns: cfg.suspect_ms.saturating_mul(1_000_000),
        min_rcvbuf,
        heal_kept: Vec::new(),
        switched_at: 0,
        heal_said: (false, false),
        goal_path: wire::heal::RootPath::new(frag),
        goal_said: (false, false),
        goal_kept: Vec::new(),
        released_upto: 0,
        op_bufs: (Vec::new(), Vec::new()),
        rx_batch: net::RecvBatch::default(),
        release_poll_at: 0,
    }))
}

/// Fragments in flight beyond the slowest receiver: half of the smallest receive buffer,
/// counting each datagram at its kernel cost (payload plus sk_buff overhead, page-rounded),
/// so that retransmissions and stale datagrams still fit.
fn window_frags(rcvbuf: usize, frag: usize) -> u32 {
    let per = (frag + wire::packet::OVERHEAD + 1024).div_ceil(4096) * 4096;
    ((rcvbuf / 2) / per).clamp(4, 1 << 16) as u32
}

fn rank0_draw(cfg: &Config, iface: &Result<Iface, String>) -> Result<SetupMsg, String> {
    // Without an interface nobody multicasts: say why once, from here.
    iface.as_ref().map_err(|e| e.clone())?;
    let mut rnd = [0u8; 56];
    random_bytes(&mut rnd).map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    let (group, port) = draw_group(cfg, u64::from_le_bytes(rnd[0..8].try_into().unwrap()));
    Ok(SetupMsg {
        ok: true,
        group,
        port,
        key: rnd[8..40].try_into().unwrap(),
        job: u64::from_le_bytes(rnd[40..48].try_into().unwrap()),
        comm: u32::from_le_bytes(rnd[48..52].try_into().unwrap()),
        frag_bytes: cfg.frag_bytes.unwrap_or(0) as u32,
    })
}

/// This process's responder thread, started at first use; its address.
fn start_responder(session: &Session, addr: Ipv4Addr) -> Result<SocketAddrV4, String> {
    let mut r = lock(&session.responder);
    if r.is_none() {
        *r = Some(
            responder::ResponderThread::start(addr)
                .map_err(|e| format!("cannot start the responder thread on {addr}: {e}"))?,
        );
    }
    Ok(r.as_ref().expect("started above").addr())
}

/// The probe datagrams of probe `seq` (0: the setup's; a later one carries the operation it
/// runs before, so that a late datagram of an earlier probe is not taken for it): a small
/// one, then one of each size of the ladder (`wire::pmtu`) from `top` down. Each carries
/// `top` in `total_len`, so that a receiver stops waiting as soon as the largest has come.
fn probe_dgrams(ctx: &Ctx, seq: u64, top: usize) -> Vec<Vec<u8>> {
    let zeros = vec![0u8; top];
    let sizes = std::iter::once(wire::packet::OVERHEAD).chain(wire::pmtu::ladder(top));
    sizes
        .map(|size| {
            let mut out = Vec::new();
            wire::packet::encode(
                ctx,
                &wire::packet::Header {
                    kind: wire::packet::Kind::Probe,
                    job: ctx.job,
                    comm: ctx.comm,
                    seq,
                    root: 0,
                    frag: 0,
                    nfrags: 0,
                    total_len: top as u64,
                },
                &zeros[..size.saturating_sub(wire::packet::OVERHEAD)],
                &mut out,
            );
            out
        })
        .collect()
}

/// Waits (bounded) for the prober's probes of probe `seq`: the size of the largest that
/// came, once the largest of its ladder has, or one as large as this rank's own interface
/// takes (`own`), or when the bound is up; None when none came.
fn wait_probe(
    sock: &McastSocket,
    ctx: &Ctx,
    seq: u64,
    own: usize,
    bound: Duration,
) -> Option<usize> {
    let deadline = Instant::now() + bound;
    let mut buf = vec![0u8; 65536];
    let mut seen: Option<usize> = None;
    loop {
        while let Ok(Some(len)) = sock.recv(&mut buf) {
            if let Ok((h, _)) = wire::packet::decode(ctx, &buf[..len]) {
                if h.kind == wire::packet::Kind::Probe && h.seq == seq {
                    seen = Some(seen.map_or(len, |s| s.max(len)));
                    if len as u64 >= h.total_len.min(own as u64) {
                        return seen;
                    }
                }
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return seen;
        }
        progress::poll();
        let _ = net::wait_readable(
            &[sock.fd()],
            progress::max_sleep((deadline - now).min(Duration::from_millis(20))),
        );
    }
}

/// The ranks whose facts pass `pick`, by host (`reach::by_host`).
fn short_list(infos: &[RankInfo], pick: impl Fn(&RankInfo) -> bool) -> String {
    let who: Vec<crate::reach::Who> = infos
        .iter()
        .filter(|i| pick(i))
        .map(RankInfo::who)
        .collect();
    crate::reach::by_host(&who)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_stay_in_range() {
        let mut cfg = Config {
            group: (Ipv4Addr::new(239, 255, 0, 0), 16),
            ports: (23000, 23999),
            ..Default::default()
        };
        for r in [0u64, 1, u64::MAX, 0x1234_5678_9abc_def0] {
            let (g, p) = draw_group(&cfg, r);
            assert_eq!(g.octets()[0..2], [239, 255]);
            assert_ne!(g.octets()[2..4], [0, 0]);
            assert_ne!(g.octets()[2..4], [255, 255]);
            assert!((23000..=23999).contains(&p));
        }
        cfg.group = (Ipv4Addr::new(239, 255, 77, 7), 32);
        cfg.ports = (23777, 23777);
        assert_eq!(
            draw_group(&cfg, 99),
            (Ipv4Addr::new(239, 255, 77, 7), 23777)
        );
    }

    #[test]
    fn window_fits_half_the_buffer() {
        // 1400 + 64 + 1024 bytes round up to one page: 4 MiB / 4 KiB.
        assert_eq!(window_frags(8 << 20, 1400), 1024);
        // 65000 + 64 + 1024 bytes round up to 17 pages: 8 MiB / 68 KiB.
        assert_eq!(window_frags(16 << 20, 65000), 120);
        assert_eq!(window_frags(0, 1400), 4);
    }

    fn sample_setup() -> SetupMsg {
        SetupMsg {
            ok: true,
            group: Ipv4Addr::new(239, 255, 1, 2),
            port: 23456,
            key: [7; 32],
            job: 42,
            comm: 9,
            frag_bytes: 1000,
        }
    }

    #[test]
    fn setup_message_round_trips() {
        let m = sample_setup();
        let d = SetupMsg::decode(&m.encode()).unwrap();
        assert_eq!(
            (d.group, d.port, d.key, d.job, d.comm),
            (m.group, m.port, m.key, m.job, m.comm)
        );
        assert_eq!((d.frag_bytes, d.ok), (1000, true));
    }

    /// A rank of another setup version gets an error naming both versions and rank 0's
    /// library, not a panic; a message from a library that sent no version says so.
    #[test]
    fn setup_message_of_another_version_is_a_clear_error() {
        let m = sample_setup();
        let mut b = m.encode();
        b[0..4].copy_from_slice(&(SETUP_VERSION + 1).to_le_bytes());
        b[SETUP_LIB_AT].fill(0);
        b[SETUP_LIB_AT.start..SETUP_LIB_AT.start + 6].copy_from_slice(b"9.8.7x");
        let e = SetupMsg::decode(&b)
            .err()
            .expect("a version mismatch is an error");
        let ours = env!("CARGO_PKG_VERSION");
        assert!(
            e.contains(&format!("version {}", SETUP_VERSION + 1))
                && e.contains(&format!("version {SETUP_VERSION}"))
                && e.contains("libmpicast 9.8.7x")
                && e.contains(&format!("libmpicast {ours}")),
            "{e}"
        );
        b[SETUP_LIB_AT].fill(0);
        let e = SetupMsg::decode(&b).err().expect("still an error");
        assert!(e.contains("does not say its version"), "{e}");
        // The version field is all a decoder checks: the library bytes change nothing else.
        b[0..4].copy_from_slice(&SETUP_VERSION.to_le_bytes());
        let d = SetupMsg::decode(&b).expect("same setup version");
        assert_eq!((d.port, d.comm, d.frag_bytes), (23456, 9, 1000));
    }

    #[test]
    fn rank_info_round_trips() {
        let i = RankInfo {
            status: 2,
            errno: 98,
            rcvbuf_kib: 8192,
            max_payload: 65507,
            responder: SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 3), 40001),
            world: 17,
            addr: Ipv4Addr::new(10, 77, 0, 3),
            host: *b"node-with-a-long-name-12",
            max_seen: 1472,
        };
        let d = RankInfo::decode(&i.encode());
        assert_eq!(
            (
                d.status,
                d.errno,
                d.rcvbuf_kib,
                d.max_payload,
                d.responder,
                d.max_seen
            ),
            (
                i.status,
                i.errno,
                i.rcvbuf_kib,
                i.max_payload,
                i.responder,
                1472
            )
        );
        let w = d.who();
        assert_eq!((w.world, w.addr), (17, i.addr));
        assert_eq!(w.host, "node-with-a-long-name-12");
        let mut short = [0u8; HOST_LEN];
        short[..2].copy_from_slice(b"h1");
        assert_eq!(RankInfo { host: short, ..i }.who().host, "h1");
    }

    #[test]
    fn early_datagrams_by_sequence_number_and_bounded() {
        let mut e = EarlyDgrams::default();
        e.keep(5, b"a");
        e.keep(6, b"bb");
        e.keep(5, b"c");
        assert_eq!(e.take(5), [b"a".to_vec(), b"c".to_vec()]);
        assert!(e.take(5).is_empty());
        assert_eq!(e.bytes, 2);
        e.keep(7, b"d");
        e.forget_through(6);
        assert_eq!(e.bytes, 1);
        assert!(e.take(6).is_empty());
        assert_eq!(e.take(7), [b"d".to_vec()]);
        assert_eq!(e.bytes, 0);
        // Full: what does not fit is not kept (the protocol repairs it).
        let big = vec![0u8; EARLY_MAX_BYTES - 1];
        e.keep(8, &big);
        e.keep(8, b"xy");
        e.keep(8, b"z");
        let got = e.take(8);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], b"z");
        assert_eq!(e.bytes, 0);
    }
}
