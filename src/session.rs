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
use crate::transport::{self, responder::ResponderThread, Channel};
use std::collections::{BTreeMap, HashMap};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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
}

/// The per-communicator MPI_Info keys that belong to mpicast.
pub const HINT_KEYS: [&str; 4] = [
    "mpicast",
    "mpicast_sync",
    "mpicast_min_bytes",
    "mpicast_eager_bytes",
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
    let _guard = STARTING.lock().unwrap_or_else(|p| p.into_inner());
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
    let cfg = Config::from_env().map_err(SessionError::Config)?;
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
    if !cfg.disable {
        // The fast path reads the table only once the floor is set.
        host::buffer::init_predefined();
        let concurrent = host::query_thread() == host::thread_multiple();
        FAST.publish(cfg.min_bytes.floor(), concurrent);
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
    /// True while MPI is initialised and not finalised, without asking MPI: the session
    /// exists only after MPI_Init, and learns of MPI_Finalize through its attribute.
    pub fn active(&self) -> bool {
        !self.finalized.load(Ordering::Acquire)
    }

    /// The state of `comm`, made on first use. Collective over `comm` when it is made, which
    /// is fine: the first collective call on a communicator is made by all its ranks.
    pub fn comm_state(&self, comm: MPI_Comm) -> Result<Arc<Mutex<CommState>>, host::MpiError> {
        if let Some(token) = host::attr::get(comm, self.keyval)? {
            if let Some(st) = self.registry.lock().unwrap().get(&token) {
                return Ok(st.clone());
            }
        }
        let state = Arc::new(Mutex::new(self.make_state(comm)?));
        let token = self.new_token();
        self.registry.lock().unwrap().insert(token, state.clone());
        host::attr::set(comm, self.keyval, token)?;
        Ok(state)
    }

    fn new_token(&self) -> usize {
        let mut t = self.next_token.lock().unwrap();
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
                let mut all = self.hints.lock().unwrap();
                all.entry(token).or_default().extend(entries);
            }
            None => {
                let token = self.new_token();
                self.hints
                    .lock()
                    .unwrap()
                    .insert(token, entries.into_iter().collect());
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
            if let Some(h) = self.hints.lock().unwrap().get(&token) {
                map.extend(h.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        Ok(map)
    }

    fn make_state(&self, comm: MPI_Comm) -> Result<CommState, host::MpiError> {
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
        let private = host::comm::dup(comm)?;
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
        Ok(CommState {
            private: host::SendComm(private),
            size,
            rank,
            seq: 0,
            cfg,
            path,
            min_bytes,
        })
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
            let mine = transport::local_addr(cfg).map_or(0, u32::from);
            let all = host::comm::allgather_bytes(private, &mine.to_le_bytes())?;
            let addrs: Vec<u32> = all
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if addrs.contains(&0) {
                (Layout::Flat, None)
            } else {
                let hosts = Hosts::group(&addrs);
                (algo::hosts::layout(cfg.topo, &hosts), Some(hosts))
            }
        };
        match layout {
            (Layout::OneHost, _) => {
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
                if rank == 0 {
                    say(&format!(
                        "mpicast: warning: multicast unavailable for a communicator of {size} ranks: {reason}; using the host MPI for it"
                    ));
                }
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
        let st = self.registry.lock().unwrap().remove(&token);
        if let Some(st) = st {
            let mut st = st.lock().unwrap_or_else(|p| p.into_inner());
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
            ));
        }
        let tokens: Vec<usize> = self.registry.lock().unwrap().keys().copied().collect();
        for t in tokens {
            self.drop_state(t);
        }
        if let Some(r) = self.responder.lock().unwrap().take() {
            r.stop();
        }
    }
}

impl CommState {
    fn teardown(&mut self, session: &Session) {
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
        if self.private.0 != host::comm_null() {
            // Errors here cannot be reported to anyone; the communicator is going away.
            let _ = host::comm::free(self.private.0);
            self.private = host::SendComm(host::comm_null());
        }
    }
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
    let copy = s.hints.lock().unwrap().get(&token).cloned()?;
    let new = s.new_token();
    s.hints.lock().unwrap().insert(new, copy);
    Some(new)
}

fn on_hints_delete(token: usize) {
    if let Some(Ok(s)) = SESSION.get() {
        s.hints.lock().unwrap().remove(&token);
    }
}

fn on_finalize(_token: usize) {
    if let Some(Ok(s)) = SESSION.get() {
        s.finalize();
    }
}
