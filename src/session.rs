//! Process state and per-communicator state.
//!
//! Nothing here relies on intercepting MPI_Init or MPI_Finalize (Open MPI's Fortran
//! bindings bypass the C entry points). The session starts on the first intercepted call;
//! a communicator's state is made on its first collective and cached on it with an
//! attribute, freed by the attribute's delete callback when the application frees the
//! communicator; an attribute on MPI_COMM_SELF, deleted first thing in MPI_Finalize, tears
//! down whatever is left (communicators never freed are found in the registry) and stops
//! the responder thread before the host MPI shuts down.

use crate::algo::{
    self,
    hosts::{Hosts, Layout},
};
use crate::config::{Config, ConfigError, Topo};
use crate::fastpath::FAST;
use crate::host::{self, MPI_Comm};
use crate::lock::lock;
use crate::transport::{self, responder::ResponderThread, Channel};
use std::collections::{BTreeMap, HashMap};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Why a call cannot go through mpicast at all.
#[derive(Debug)]
pub enum SessionError {
    Config(ConfigError),
    Flavour(String),
    Mpi(host::MpiError),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Config(e) => write!(f, "{e}"),
            SessionError::Flavour(m) => write!(f, "{m}"),
            SessionError::Mpi(e) => write!(f, "mpicast: setup failed: {e}"),
        }
    }
}

/// How collectives on one communicator are carried.
pub enum Path {
    /// One rank: nothing to move.
    Alone,
    /// The host MPI, for the reason given (printed once at setup).
    Host(String),
    /// IP multicast.
    Mcast(Box<Channel>),
    /// Several ranks per host: one leader per host multicasts, the host MPI carries the
    /// data inside each host.
    Hier(Box<Hier>),
}

/// The two levels of a communicator whose hosts hold several ranks each.
pub struct Hier {
    /// The ranks of this host (a split of the private duplicate, ordered by rank).
    pub local: host::SendComm,
    pub hosts: Hosts,
    /// Host leaders only: the communicator of all leaders and how it multicasts.
    pub lead: Option<Leaders>,
}

pub struct Leaders {
    /// Leader k is the leader of host k.
    pub comm: host::SendComm,
    pub path: LeaderPath,
}

pub enum LeaderPath {
    /// Only one host.
    Alone,
    /// Multicast did not work between the hosts: the host MPI on the leaders' communicator.
    Host,
    Mcast(Box<Channel>),
}

pub struct CommState {
    /// Private duplicate for scouts and control messages.
    pub private: host::SendComm,
    pub size: u32,
    pub rank: u32,
    /// Sequence number of the last multicast operation (all ranks count alike).
    pub seq: u64,
    pub cfg: Config,
    pub path: Path,
    /// Smaller broadcasts go to the host MPI (`cfg.min_bytes` resolved for this path).
    pub min_bytes: usize,
    /// The forwarding engine of the multicast calls, once MPICAST_Mcast_enable made it.
    pub fwd: Option<Arc<Mutex<transport::forward::Engine>>>,
    /// What MPICAST_Mmcast set up at its first call on the communicator (`coll::mmcast`).
    pub mmcast: Option<crate::coll::MmcastComm>,
}

/// The per-communicator MPI_Info keys that belong to mpicast.
pub const HINT_KEYS: [&str; 6] = [
    "mpicast",
    "mpicast_sync",
    "mpicast_min_bytes",
    "mpicast_eager_bytes",
    "mpicast_mmcast_algo",
    crate::topology::INFO_KEY,
];

/// Hint values as given (validated when the communicator's state is made).
type HintMap = BTreeMap<String, String>;

pub struct Session {
    pub cfg: Config,
    keyval: c_int,
    registry: Mutex<HashMap<usize, Arc<Mutex<CommState>>>>,
    /// mpicast hints seen by the interposed MPI_Comm_set_info / MPI_Comm_dup_with_info,
    /// cached on the communicator with their own attribute (copied by MPI_Comm_dup, as
    /// MPI copies a communicator's hints, and freed with the communicator).
    hint_keyval: c_int,
    hints: Mutex<HashMap<usize, HintMap>>,
    /// Set when MPI_Finalize deletes our MPI_COMM_SELF attribute.
    finalized: AtomicBool,
    next_token: Mutex<usize>,
    pub responder: Mutex<Option<ResponderThread>>,
    world_rank: u32,
}

static SESSION: OnceLock<Result<Arc<Session>, String>> = OnceLock::new();
static STARTING: Mutex<()> = Mutex::new(());

/// The session, started on first use. Errors (bad configuration, wrong MPI flavour) are
/// sticky: every later call sees the same message.
pub fn get() -> Result<Arc<Session>, String> {
    if let Some(s) = SESSION.get() {
        return s.clone();
    }
    let _guard = lock(&STARTING);
    SESSION
        .get_or_init(|| start().map_err(|e| e.to_string()))
        .clone()
}

/// Writes `line` and a newline to stderr in one write, so that a line of one rank is never
/// split by other output (`eprintln!` writes the newline separately, and a launcher that
/// forwards the ranks' output can put another line between; the tests parse these lines).
pub fn say(line: &str) {
    let mut l = String::with_capacity(line.len() + 1);
    l.push_str(line);
    l.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr(), l.as_bytes());
}

/// The session if it has started successfully, without starting it: the hot path's check.
pub fn started() -> Option<&'static Session> {
    match SESSION.get() {
        Some(Ok(s)) => Some(s.as_ref()),
        _ => None,
    }
}

fn start() -> Result<Arc<Session>, SessionError> {
    host::flavour::check().map_err(SessionError::Flavour)?;
    // Registered at MPI_Init where mpicast saw it; here for the paths it did not see (a bad
    // setting is registered too, as such).
    crate::presence::register();
    let cfg = Config::process().map_err(SessionError::Config)?;
    static STATE: host::attr::Callbacks = host::attr::Callbacks {
        copy: None,
        delete: on_comm_delete,
    };
    static HINTS: host::attr::Callbacks = host::attr::Callbacks {
        copy: Some(on_hints_copy),
        delete: on_hints_delete,
    };
    static FINALIZE: host::attr::Callbacks = host::attr::Callbacks {
        copy: None,
        delete: on_finalize,
    };
    let keyval = host::attr::create_keyval(&STATE).map_err(SessionError::Mpi)?;
    let hint_keyval = host::attr::create_keyval(&HINTS).map_err(SessionError::Mpi)?;
    let self_keyval = host::attr::create_keyval(&FINALIZE).map_err(SessionError::Mpi)?;
    host::attr::set(host::comm_self(), self_keyval, 0).map_err(SessionError::Mpi)?;
    let world_rank = host::comm::rank(host::comm_world()).map_err(SessionError::Mpi)?;
    // With MPICAST_VERBOSE=2 every broadcast takes the long way, where the ones handed to the
    // host MPI are logged with the reason.
    if !cfg.disable && cfg.verbose < 2 {
        // The fast path reads the table only once the floor is set.
        host::buffer::init_predefined();
        let concurrent = host::query_thread() == host::thread_multiple();
        FAST.publish(cfg.min_bytes.floor(), concurrent);
    }
    // What goes to the host MPI before any communicator is set up (a job on one host).
    if cfg.verbose >= 1 && world_rank == 0 {
        if let Some(note) = crate::stats::start_note(&cfg) {
            say(&note);
        }
    }
    Ok(Arc::new(Session {
        cfg,
        keyval,
        registry: Mutex::new(HashMap::new()),
        hint_keyval,
        hints: Mutex::new(HashMap::new()),
        finalized: AtomicBool::new(false),
        next_token: Mutex::new(1),
        responder: Mutex::new(None),
        world_rank,
    }))
}

impl Session {
    /// This process's rank in MPI_COMM_WORLD.
    pub fn world_rank(&self) -> u32 {
        self.world_rank
    }

    /// True while MPI is initialised and not finalised, without asking MPI: the session
    /// exists only after MPI_Init, and learns of MPI_Finalize through its attribute.
    pub fn active(&self) -> bool {
        !self.finalized.load(Ordering::Acquire)
    }

    /// The state of `comm`, made on first use by `call` (a name for messages). Collective
    /// over `comm` when it is made: the first collective call on a communicator is made by
    /// all its ranks, but a rank that did not load mpicast, or whose settings or count sent
    /// its call to the host MPI, never comes; the wait for them is bounded (`private_dup`).
    pub fn comm_state(
        &self,
        comm: MPI_Comm,
        call: &str,
    ) -> Result<Arc<Mutex<CommState>>, host::MpiError> {
        if let Some(token) = host::attr::get(comm, self.keyval)? {
            if let Some(st) = lock(&self.registry).get(&token) {
                return Ok(st.clone());
            }
        }
        let state = Arc::new(Mutex::new(self.make_state(comm, call)?));
        let token = self.new_token();
        lock(&self.registry).insert(token, state.clone());
        host::attr::set(comm, self.keyval, token)?;
        Ok(state)
    }

    fn new_token(&self) -> usize {
        let mut t = lock(&self.next_token);
        *t += 1;
        *t
    }

    /// Records the mpicast keys of `info`, just set on `comm` by MPI_Comm_set_info or
    /// MPI_Comm_dup_with_info (collective, like those calls). Keys not in `info` keep their
    /// earlier values. A communicator already set up is torn down, to be set up again with
    /// the new hints at its next collective.
    pub fn record_hints(&self, comm: MPI_Comm, info: host::MPI_Info) -> host::MpiResult<()> {
        let entries = host::comm::info_entries(info, &HINT_KEYS);
        if entries.is_empty() {
            return Ok(());
        }
        for (k, v) in &entries {
            let mut h = crate::config::Hints::default();
            if let (Ok(true), Some(m)) = (h.set(k, v), h.min_bytes) {
                FAST.lower(m.floor());
            }
        }
        match host::attr::get(comm, self.hint_keyval)? {
            Some(token) => {
                let mut all = lock(&self.hints);
                all.entry(token).or_default().extend(entries);
            }
            None => {
                let token = self.new_token();
                lock(&self.hints).insert(token, entries.into_iter().collect());
                host::attr::set(comm, self.hint_keyval, token)?;
            }
        }
        if host::attr::get(comm, self.keyval)?.is_some() {
            host::attr::delete(comm, self.keyval)?;
        }
        Ok(())
    }

    /// The hints in force on `comm`: what the host reports, overridden by what the
    /// interposed calls recorded.
    fn hints_of(&self, comm: MPI_Comm) -> host::MpiResult<HintMap> {
        let mut map: HintMap = host::comm::info_hints(comm, &HINT_KEYS)?
            .into_iter()
            .collect();
        if let Some(token) = host::attr::get(comm, self.hint_keyval)? {
            if let Some(h) = lock(&self.hints).get(&token) {
                map.extend(h.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        Ok(map)
    }

    fn make_state(&self, comm: MPI_Comm, call: &str) -> Result<CommState, host::MpiError> {
        let size = host::comm::size(comm)?;
        let rank = host::comm::rank(comm)?;
        let mut cfg = self.cfg.clone();
        let mut hint_error = None;
        let hints = self.hints_of(comm)?;
        let mut h = crate::config::Hints::default();
        for (k, v) in &hints {
            if let Err(e) = h.set(k, v) {
                hint_error = Some(e.to_string());
            }
        }
        cfg = cfg.with_hints(&h);
        let private = self.private_dup(comm, size, rank, call)?;
        if size > 1 {
            agree_on_settings(comm, private, rank, &cfg, call)?;
        }
        let path = if size == 1 {
            Path::Alone
        } else if cfg.disable || h.enabled == Some(false) {
            Path::Host("disabled".into())
        } else if let Some(e) = hint_error {
            if rank == 0 {
                say(&format!("{e}; using the host MPI for this communicator"));
            }
            Path::Host(e)
        } else {
            self.multicast_path(private, size, rank, &cfg)?
        };
        let members = match &path {
            Path::Hier(h) => h.hosts.hosts(),
            _ => size,
        };
        let min_bytes = cfg.min_bytes.resolve(members);
        if cfg.verbose >= 1 && rank == 0 && size > 1 {
            say(&describe_path(size, &path, min_bytes, &cfg, members));
        }
        Ok(CommState {
            private: host::SendComm(private),
            size,
            rank,
            seq: 0,
            cfg,
            path,
            min_bytes,
            fwd: None,
            mmcast: None,
        })
    }

    /// Enables the multicast calls (MPICAST_Imcast and the receives) on `comm`: collective
    /// over `comm`, like the first collective that sets its state up (which it does if none
    /// did yet). Every rank learns every rank's topology ID, builds its routing table and
    /// gets a forwarding engine on a duplicate of its own. A second call does nothing.
    pub fn mcast_enable(
        &self,
        comm: MPI_Comm,
    ) -> Result<Arc<Mutex<transport::forward::Engine>>, host::MpiError> {
        let state = self.comm_state(comm, "MPICAST_Mcast_enable")?;
        let mut st = lock(&state);
        if let Some(e) = &st.fwd {
            return Ok(e.clone());
        }
        let (private, rank) = (st.private.0, st.rank);
        let info_id = self.hints_of(comm)?.remove(crate::topology::INFO_KEY);
        let resolved = match self.topology(private, &st.cfg, info_id.as_deref())? {
            Ok(r) => r,
            Err(msg) => {
                if rank == 0 {
                    say(&format!("mpicast: MPICAST_Mcast_enable: {msg}"));
                }
                return Err(host::MpiError(host::err_arg()));
            }
        };
        // The seed of MPICAST_TOPO_PICK=random: rank 0's, so that every table could be
        // rebuilt anywhere (as `mpicast topo` does).
        let drawn = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (u64::from(std::process::id()) << 32);
        let mut b = drawn.to_le_bytes();
        host::comm::bcast_bytes(private, &mut b, 0)?;
        let seed = u64::from_le_bytes(b);
        let cfg = &st.cfg;
        if cfg.verbose >= 1 && rank == 0 {
            let layout: Vec<String> = resolved
                .layout
                .iter()
                .map(|(what, n)| format!("{what} ({n})"))
                .collect();
            say(&format!(
                "mpicast: multicast calls enabled on a communicator of {} ranks: topology IDs: \
                 {}, digits: {}; route {}, segments of {} bytes",
                resolved.topology.ranks(),
                resolved.source,
                layout.join(", "),
                format!("{:?}", cfg.imcast_route).to_lowercase(),
                cfg.segment_bytes
            ));
        }
        let topo = Arc::new(resolved.topology);
        let table = crate::algo::prefix::RoutingTable::build(&topo, rank, cfg.topo_pick.pick(seed));
        let own = host::comm::dup(private)?;
        let size = topo.ranks();
        let mut fresh = transport::forward::Engine::new(
            own,
            rank,
            topo,
            table,
            cfg.imcast_route,
            cfg.segment_bytes,
            cfg.imcast_buffer,
        );
        fresh.set_stall(Duration::from_millis(cfg.timeout_ms));
        let engine = Arc::new(Mutex::new(fresh));
        // The IP multicast side: a group of the engine's own communicator (collective).
        if cfg.imcast_transport != crate::config::ImcastTransport::P2p {
            let addrs = iface_addrs(own, cfg)?;
            let between_hosts =
                cfg.topo == Topo::Flat || (!addrs.contains(&0) && Hosts::group(&addrs).hosts() > 1);
            let never =
                cfg.imcast_transport == crate::config::ImcastTransport::Auto && !between_hosts;
            let setup = if never {
                Ok(Err(
                    "all ranks share one host (auto uses IP multicast between hosts, \
                        or with MPICAST_TOPO=flat)"
                        .to_string(),
                ))
            } else {
                transport::setup(self, own, size, rank, cfg)
            };
            match setup? {
                Ok(chan) => {
                    if cfg.verbose >= 1 && rank == 0 {
                        say(&format!(
                            "mpicast: MPICAST_Imcast may send by IP multicast \
                             (MPICAST_IMCAST_TRANSPORT={}{})",
                            cfg.imcast_transport,
                            if cfg.imcast_transport == crate::config::ImcastTransport::Auto {
                                format!(
                                    ": from {}% of the ranks and {} bytes on",
                                    cfg.imcast_ip_share, cfg.imcast_ip_bytes
                                )
                            } else {
                                String::new()
                            }
                        ));
                    }
                    lock(&engine).set_ip(
                        Some(transport::imcast_ip::IpSide::new(chan, rank)),
                        transport::forward::IpPolicy {
                            transport: cfg.imcast_transport,
                            share: cfg.imcast_ip_share,
                            min_bytes: cfg.imcast_ip_bytes,
                            between_hosts,
                            ranks: size,
                        },
                        Duration::from_millis(cfg.timeout_ms),
                    );
                }
                Err(why) => {
                    if cfg.verbose >= 1 && rank == 0 {
                        say(&format!(
                            "mpicast: MPICAST_Imcast goes point-to-point only: {why}"
                        ));
                    }
                }
            }
        }
        transport::forward::register(&engine)?;
        st.fwd = Some(engine.clone());
        Ok(engine)
    }

    /// Turns dynamic broadcast on for `comm` (collective, as `mcast_enable`, which it does
    /// first if nobody did): the engine gets its dynamic broadcast side, and the application's
    /// receives on `comm` may be completed by broadcasts from then on. A second call does
    /// nothing.
    pub fn dbcast_enable(
        &self,
        comm: MPI_Comm,
    ) -> Result<Arc<Mutex<transport::forward::Engine>>, host::MpiError> {
        let engine = self.mcast_enable(comm)?;
        let (seg, limit, stall) = {
            let st = self.comm_state(comm, "MPICAST_Dbcast_enable")?;
            let st = lock(&st);
            (
                st.cfg.segment_bytes,
                st.cfg.imcast_buffer,
                Duration::from_millis(st.cfg.timeout_ms),
            )
        };
        {
            let mut e = lock(&engine);
            if e.dbcast.is_none() {
                let ranks = host::comm::size(comm)?;
                e.dbcast = Some(transport::dbcast::DbcastSide::new(
                    e.rank(),
                    ranks,
                    seg,
                    limit,
                    stall,
                ));
            }
        }
        transport::dbcast::enable(comm, &engine);
        Ok(engine)
    }

    /// The forwarding engine of `comm` if MPICAST_Mcast_enable made one (no collective).
    pub fn mcast_engine(&self, comm: MPI_Comm) -> Option<Arc<Mutex<transport::forward::Engine>>> {
        let token = host::attr::get(comm, self.keyval).ok()??;
        let state = lock(&self.registry).get(&token)?.clone();
        let st = lock(&state);
        st.fwd.clone()
    }

    /// Collective over `private`: every rank's facts (an explicit ID from the info key or
    /// `MPICAST_TOPO_ID`, the host, its address, its slot and CPU, what it read at
    /// `MPICAST_TOPO_FILE`) gathered, and the topology IDs they give (`topology::resolve`), or
    /// why they give none (the same on every rank).
    fn topology(
        &self,
        private: MPI_Comm,
        cfg: &Config,
        info_id: Option<&str>,
    ) -> Result<Result<crate::topology::Resolved, String>, host::MpiError> {
        use crate::topology::{self as topo, Explicit, RankFacts};
        let file = cfg.topo_file.as_deref().map(|path| {
            topo::FileCopy::read(path, &format!("MPICAST_TOPO_FILE={path}"), cfg.topo_base)
        });
        let slot = ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse::<u32>().ok())
            .unwrap_or(topo::UNKNOWN);
        // IDs from the switch topology, for ranks that have none of their own: collective,
        // so every rank gathers whether or not it set MPICAST_SWITCH_TOPOLOGY.
        let switch_ids = crate::coll::switch_topo_ids(private, cfg)?;
        // The same answer on every rank: a broken switch topology is every rank's error.
        let switch_ids = match switch_ids {
            Some(Err(e)) => return Ok(Err(e)),
            Some(Ok(ids)) => Some(ids),
            None => None,
        };
        let explicit = match (
            Explicit::first_found(info_id, cfg.topo_id.as_deref()),
            switch_ids,
        ) {
            (Some(e), _) => Some(e),
            (None, None) => None,
            (None, Some(ids)) => Some(Explicit {
                source: topo::IdSource::Switch,
                text: ids[host::comm::rank(private)? as usize].clone(),
            }),
        };
        let mine = RankFacts {
            explicit,
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            addr: transport::local_addr(cfg).map_or(0, u32::from),
            slot,
            cpu: topo::sysfs::read(),
            base: cfg.topo_base,
            file: file.as_ref().map_or(topo::FileFact::NotSet, |f| f.fact()),
            ..RankFacts::default()
        };
        let mut record = mine.encode();
        record.resize(topo::MAX_RECORD_BYTES, 0);
        let all = host::comm::allgather_bytes(private, &record)?;
        let mut facts = Vec::new();
        for (r, chunk) in all.chunks(topo::MAX_RECORD_BYTES).enumerate() {
            match RankFacts::decode(chunk) {
                Ok(f) => facts.push(f),
                Err(e) => return Ok(Err(format!("rank {r}: {e}"))),
            }
        }
        Ok(topo::resolve(&facts, file.as_ref()).map_err(|e| e.to_string()))
    }

    /// The private duplicate of `comm` (PMPI_Comm_idup), waiting at most
    /// `MPICAST_TIMEOUT_MS` for the other ranks to come. A rank that waits longer than a
    /// second says so in the launcher's name service (`presence::waiting`); one that waits
    /// in vain ends the job with one message saying which ranks did not come and why
    /// (`presence::explain`). The other ranks are in the host MPI's collective of the same
    /// call, or elsewhere, and the job cannot go on without them.
    fn private_dup(
        &self,
        comm: MPI_Comm,
        size: u32,
        rank: u32,
        call: &str,
    ) -> Result<MPI_Comm, host::MpiError> {
        if size == 1 {
            return host::comm::dup(comm);
        }
        let mut dup = host::comm::Idup::start(comm)?;
        let started = Instant::now();
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        let mut said = None;
        let mut pause = Duration::from_micros(1);
        loop {
            if let Some(c) = dup.test()? {
                drop(said);
                return Ok(c);
            }
            let waited = started.elapsed();
            if said.is_none() && waited > Duration::from_secs(1) {
                said = Some(crate::presence::waiting(call, size));
            }
            if waited > timeout {
                let missing: Vec<u32> = (0..size).filter(|&r| r != rank).collect();
                let cfg = self.cfg.clone();
                let call = call.to_string();
                crate::presence::die_once(comm, move || {
                    format!(
                        "mpicast: {call} on a communicator of {size} ranks (this is rank {rank}): \
                         not every rank came to mpicast's setup of the communicator within {} ms \
                         (MPICAST_TIMEOUT_MS){}\n  aborting",
                        timeout.as_millis(),
                        crate::presence::explain(
                            comm,
                            rank,
                            &cfg,
                            &missing,
                            "they are in another call, or their call went to the host MPI \
                             (for MPI_Bcast: a count or datatype that makes their message \
                             smaller than MPICAST_MIN_BYTES)"
                        )
                    )
                });
            }
            // MPI progresses inside PMPI_Test: look often at first, then every millisecond;
            // the multicasts routed through this rank move meanwhile.
            transport::progress::poll();
            if pause < Duration::from_micros(50) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(transport::progress::max_sleep(pause));
            }
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    /// Collective over `private`: how this communicator multicasts, from where its ranks
    /// run (`MPICAST_TOPO`) and whether multicast works between them.
    fn multicast_path(
        &self,
        private: MPI_Comm,
        size: u32,
        rank: u32,
        cfg: &Config,
    ) -> Result<Path, host::MpiError> {
        let layout = if cfg.topo == Topo::Flat {
            (Layout::Flat, None)
        } else {
            // Each rank's interface address names its host. A rank without one makes the
            // layout flat, and the setup below then falls back with the reason.
            let addrs = iface_addrs(private, cfg)?;
            if addrs.contains(&0) {
                (Layout::Flat, None)
            } else {
                let hosts = Hosts::group(&addrs);
                (algo::hosts::layout(cfg.topo, &hosts), Some(hosts))
            }
        };
        match layout {
            (Layout::OneHost, _) => {
                crate::stats::note_one_host();
                if rank == 0 && cfg.verbose >= 1 {
                    say(&format!(
                        "mpicast: all {size} ranks of a communicator share one host: the host MPI carries its collectives (MPICAST_TOPO=flat multicasts anyway)"
                    ));
                }
                Ok(Path::Host("all ranks on one host".into()))
            }
            (Layout::Leaders, Some(hosts)) => Ok(Path::Hier(Box::new(
                self.leaders(private, rank, hosts, cfg)?,
            ))),
            _ => Ok(match self.channel(private, size, rank, cfg)? {
                Some(ch) => Path::Mcast(Box::new(ch)),
                None => Path::Host("multicast unavailable".into()),
            }),
        }
    }

    /// The multicast channel over `comm` (collective), or `None` after a warning when
    /// multicast does not work between its ranks.
    fn channel(
        &self,
        comm: MPI_Comm,
        size: u32,
        rank: u32,
        cfg: &Config,
    ) -> Result<Option<Channel>, host::MpiError> {
        Ok(match transport::setup(self, comm, size, rank, cfg)? {
            Ok(ch) => Some(ch),
            Err(reason) => {
                crate::stats::add(&crate::stats::COUNTERS.fallbacks, 1);
                // Once in the job: every communicator meets the same problem, and the
                // first one's facts are what a user needs (the group differs between them).
                crate::presence::say_once_as(
                    comm,
                    "multicast unavailable",
                    &format!(
                        "mpicast: warning: multicast unavailable: {}; the host MPI carries the \
                         collectives of the communicators concerned",
                        reason.trim_start_matches("mpicast: ")
                    ),
                );
                None
            }
        })
    }

    /// Splits `private` into one communicator per host and one of the host leaders, and
    /// sets up the leaders' multicast channel.
    fn leaders(
        &self,
        private: MPI_Comm,
        rank: u32,
        hosts: Hosts,
        cfg: &Config,
    ) -> Result<Hier, host::MpiError> {
        let me = rank as usize;
        let my_host = hosts.host_of[me];
        let local =
            host::comm::split(private, Some(my_host), rank)?.expect("every rank has a host colour");
        let is_leader = hosts.local_rank[me] == 0;
        let leaders = host::comm::split(private, is_leader.then_some(0), rank)?;
        let mut lead = None;
        if let Some(lc) = leaders {
            // Hosts are numbered by their lowest rank, so a leader's rank among the leaders
            // is its host's number.
            let n = hosts.hosts();
            let path = if n == 1 {
                LeaderPath::Alone
            } else {
                match self.channel(lc, n, my_host, cfg)? {
                    Some(ch) => LeaderPath::Mcast(Box::new(ch)),
                    None => LeaderPath::Host,
                }
            };
            lead = Some(Leaders {
                comm: host::SendComm(lc),
                path,
            });
        }
        if rank == 0 && cfg.verbose >= 1 {
            say(&format!(
                "mpicast: a communicator of {} ranks on {} hosts: one leader per host multicasts, the host MPI spreads data inside each host",
                hosts.ranks(),
                hosts.hosts()
            ));
        }
        Ok(Hier {
            local: host::SendComm(local),
            hosts,
            lead,
        })
    }

    fn drop_state(&self, token: usize) {
        let st = lock(&self.registry).remove(&token);
        if let Some(st) = st {
            let mut st = lock(&st);
            st.teardown(self);
        }
    }

    fn finalize(&self) {
        FAST.close();
        self.finalized.store(true, Ordering::Release);
        if self.cfg.stats && self.world_rank == 0 {
            say(&crate::stats::report_line(
                self.world_rank,
                &crate::stats::snapshot(),
                &self.cfg,
            ));
        }
        // In creation order, the same on every rank for communicators made in the same order:
        // closing may wait for other ranks (IP multicasts still being acknowledged).
        let mut tokens: Vec<usize> = lock(&self.registry).keys().copied().collect();
        tokens.sort_unstable();
        for t in tokens {
            self.drop_state(t);
        }
        if let Some(r) = lock(&self.responder).take() {
            r.stop();
        }
        crate::presence::unregister();
    }
}

/// Every rank's interface address on `comm` (collective), as u32; 0 for a rank without one.
/// The address names the host: ranks with one address share a host.
fn iface_addrs(comm: MPI_Comm, cfg: &Config) -> Result<Vec<u32>, host::MpiError> {
    let mine = transport::local_addr(cfg).map_or(0, u32::from);
    let all = host::comm::allgather_bytes(comm, &mine.to_le_bytes())?;
    Ok(all
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl CommState {
    fn teardown(&mut self, session: &Session) {
        if let Some(e) = self.fwd.take() {
            // Closing is collective (the engine's last sums run on its communicator), so
            // every rank must close it here. A progress step of another thread (the progress
            // thread, or an application thread under MPI_THREAD_MULTIPLE) may hold the engine
            // for a moment: wait for it to let go. Only an engine held past the stall bound
            // stays open until MPI_Finalize, with a message.
            let mut e = e;
            let limit = std::time::Duration::from_millis(self.cfg.timeout_ms);
            let start = std::time::Instant::now();
            loop {
                match Arc::try_unwrap(e) {
                    Ok(m) => {
                        crate::lock::into_inner(m).close(session);
                        break;
                    }
                    Err(back) if start.elapsed() < limit => {
                        e = back;
                        std::thread::yield_now();
                    }
                    Err(_) => {
                        crate::session::say(&format!(
                            "mpicast: warning: a communicator's forwarding engine was still in \
                             use by another thread after {} ms: it closes at MPI_Finalize",
                            limit.as_millis()
                        ));
                        break;
                    }
                }
            }
        }
        match std::mem::replace(&mut self.path, Path::Host("freed".into())) {
            Path::Mcast(ch) => ch.close(session, self.private.0),
            Path::Hier(h) => {
                if let Some(l) = h.lead {
                    if let LeaderPath::Mcast(ch) = l.path {
                        ch.close(session, l.comm.0);
                    }
                    let _ = host::comm::free(l.comm.0);
                }
                let _ = host::comm::free(h.local.0);
            }
            _ => {}
        }
        if let Some(m) = self.mmcast.take() {
            m.free();
        }
        if self.private.0 != host::comm_null() {
            // Errors here cannot be reported to anyone; the communicator is going away.
            let _ = host::comm::free(self.private.0);
            self.private = host::SendComm(host::comm_null());
        }
    }
}

/// `MPICAST_VERBOSE=1`: how a communicator's collectives are carried, and the threshold in
/// force for its broadcasts, with where that number comes from.
fn describe_path(size: u32, path: &Path, min_bytes: usize, cfg: &Config, members: u32) -> String {
    let head = format!("mpicast: a communicator of {size} ranks");
    match path {
        Path::Host(why) => format!("{head}: the host MPI carries its collectives ({why})"),
        Path::Alone => format!("{head}: nothing to move"),
        Path::Mcast(_) | Path::Hier(_) => {
            let threshold = if min_bytes == usize::MAX {
                "no broadcast multicasts".to_string()
            } else {
                format!("broadcasts of {min_bytes} bytes and more multicast, smaller ones go to the host MPI")
            };
            let why =
                match cfg.min_bytes {
                    crate::config::MinBytes::Fixed(_) => {
                        "MPICAST_MIN_BYTES (or the mpicast_min_bytes hint)".to_string()
                    }
                    crate::config::MinBytes::Auto if members <= 2 => {
                        format!(
                    "MPICAST_MIN_BYTES=auto: {members} {} multicast, and with two the host \
                     MPI's point-to-point is faster at every size",
                    if matches!(path, Path::Hier(_)) { "hosts" } else { "ranks" }
                )
                    }
                    crate::config::MinBytes::Auto => {
                        format!(
                    "MPICAST_MIN_BYTES=auto: {members} {} multicast; 32 KiB is the largest \
                     crossover measured (1 Gbit/s links); on 100 Mbit/s links 1500-4096 \
                     bytes is enough (set MPICAST_MIN_BYTES)",
                    if matches!(path, Path::Hier(_)) { "hosts" } else { "ranks" }
                )
                    }
                };
            format!("{head}: {threshold} ({why})")
        }
    }
}

/// Collective over `private`, the new duplicate of `comm` (every rank has come): the call
/// that set it up and the settings that must be the same on every rank are compared by a
/// digest; where they differ, every rank's are gathered and the job ends with one message
/// from rank 0 naming each variable, its values and their ranks. (Ranks whose settings send
/// one call to mpicast and another to the host MPI can meet in the setup from different
/// calls: a broadcast on some ranks, the barrier after it on the others.)
fn agree_on_settings(
    comm: MPI_Comm,
    private: MPI_Comm,
    rank: u32,
    cfg: &Config,
    call: &str,
) -> Result<(), host::MpiError> {
    let line = format!("CALL={call} {}", cfg.agreed_line());
    let digest = crate::presence::digest(line.as_bytes());
    let all = host::comm::allgather_bytes(private, &digest.to_le_bytes())?;
    if all.chunks(8).all(|c| c == digest.to_le_bytes()) {
        return Ok(());
    }
    const LINE: usize = 512;
    let mut mine = [0u8; LINE];
    let n = line.len().min(LINE);
    mine[..n].copy_from_slice(&line.as_bytes()[..n]);
    let lines = host::comm::allgather_bytes(private, &mine)?;
    let ranks: Vec<(u32, Vec<(String, String)>)> = lines
        .chunks(LINE)
        .enumerate()
        .map(|(r, b)| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            (
                r as u32,
                crate::config::parse_agreed_line(&String::from_utf8_lossy(&b[..end])),
            )
        })
        .collect();
    let diffs: Vec<String> = crate::config::differences(&ranks)
        .into_iter()
        .map(|d| d.replace("MPICAST_CALL:", "the call that set it up:"))
        .collect();
    let msg = format!(
        "mpicast: the ranks of a communicator of {} ranks do not agree on how to set it up \
         for mpicast (every rank must see the same MPICAST_* values and MPI_Info hints: \
         mpirun -x NAME=value, Hydra's -genv, or one MPICAST_CONFIG file; and make the same \
         calls):\n  {}\n  aborting",
        ranks.len(),
        diffs.join("\n  ")
    );
    if rank == 0 {
        say(&msg);
        // A launcher that kills the job on MPI_Abort may drop what it has not forwarded yet.
        std::thread::sleep(Duration::from_millis(300));
        host::abort(comm, 1);
    }
    // Rank 0 ends the job; the others wait for it quietly.
    std::thread::sleep(Duration::from_secs(10));
    host::abort(comm, 1)
}

fn on_comm_delete(token: usize) {
    if let Some(Ok(s)) = SESSION.get() {
        s.drop_state(token);
    }
}

fn on_hints_copy(token: usize) -> Option<usize> {
    let Some(Ok(s)) = SESSION.get() else {
        return None;
    };
    let copy = lock(&s.hints).get(&token).cloned()?;
    let new = s.new_token();
    lock(&s.hints).insert(new, copy);
    Some(new)
}

fn on_hints_delete(token: usize) {
    if let Some(Ok(s)) = SESSION.get() {
        lock(&s.hints).remove(&token);
    }
}

fn on_finalize(_token: usize) {
    if let Some(Ok(s)) = SESSION.get() {
        s.finalize();
    }
}
