//! MPICAST_Mmcast: several multicasts at once, each rank multicasting its own buffer to its own
//! destination set, scheduled by the agent-based algorithms of seed 003 (`algo::agents`) on
//! the switch topology of `MPICAST_SWITCH_TOPOLOGY` (`topology::switches`), or by SPCCO or
//! the naive one (`MPICAST_MMCAST_ALGO`). The messages go point to point over the host MPI,
//! on a duplicate of the communicator that only this call uses, run by the executor of GOAL
//! schedules (`transport::goal::GoalBackend`).
//!
//! A call: every rank tells every other one what it sends (bytes, destinations) in two
//! allgathers; each rank checks that what it expects (sources and sizes) is what the others
//! send it, and all ranks learn whether every rank agreed (a third allgather, one byte each),
//! so that a mistake on one rank is an error on every rank and no rank waits for ever. Then
//! every rank makes the same plan from the same facts and runs its part of it.

use crate::algo::agents::{self, MmcastAlgo, Multicast};
use crate::config::{Config, MMCAST_ALGOS};
use crate::host::{self, p2p::Region, MPI_Comm, MpiError, SendComm};
use crate::lock::lock;
use crate::sched::{BufRef, Execution};
use crate::sim::network::{Network, RoutingKind, SwitchId};
use crate::sim::updown::UpDown;
use crate::topology::switches::{self, RankHost, NOT_SET};
use crate::transport::goal::{BackendMemory, GoalBackend, GoalError, MAX_TAG};
use std::fmt;

/// What the first MPICAST_Mmcast on a communicator sets up and later ones reuse.
pub struct MmcastComm {
    /// A duplicate of the communicator's private one: the multicasts' tags are theirs alone.
    comm: SendComm,
    /// The switch topology and each rank's switch, or why there is none usable (the same
    /// message on every rank; every call then fails with it).
    topo: Result<Topology, String>,
}

struct Topology {
    net: Network,
    updown: UpDown,
    switch_of_rank: Vec<SwitchId>,
}

impl MmcastComm {
    /// Frees the duplicate (the communicator is going away).
    pub fn free(self) {
        let _ = host::comm::free(self.comm.0);
    }
}

/// One message this rank expects: from `source`, into `region` (exactly its size).
pub struct MmcastRecv {
    pub source: u32,
    pub region: Region,
}

#[derive(Debug)]
pub enum MmcastError {
    /// Arguments wrong or inconsistent between ranks; the message says which rank and why.
    Arg(String),
    /// The switch topology is unusable (unreadable, invalid, a host missing, copies differ).
    Topology(String),
    Mpi(MpiError),
    Run(GoalError),
}

impl fmt::Display for MmcastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MmcastError::Arg(m) | MmcastError::Topology(m) => write!(f, "{m}"),
            MmcastError::Mpi(e) => write!(f, "MPI error: {e}"),
            MmcastError::Run(e) => write!(f, "{e}"),
        }
    }
}

impl From<MpiError> for MmcastError {
    fn from(e: MpiError) -> Self {
        MmcastError::Mpi(e)
    }
}

/// `MPICAST_SWITCH_TOPOLOGY` as named in messages.
fn what(path: &str) -> String {
    format!("MPICAST_SWITCH_TOPOLOGY={path}")
}

/// Collective over `comm` (the communicator's private duplicate): the duplicate of the
/// multicasts and the switch of every rank.
fn set_up(comm: MPI_Comm, cfg: &Config) -> Result<MmcastComm, MpiError> {
    let dup = SendComm(host::comm::dup(comm)?);
    let (_, topo) = gather(comm, cfg)?;
    Ok(MmcastComm { comm: dup, topo })
}

/// Collective over `comm`: every rank's host facts gathered, and the switch topology with each
/// rank's switch (or why not, the same on every rank); `true` when some rank set
/// `MPICAST_SWITCH_TOPOLOGY` (without it, every rank is on one switch).
fn gather(comm: MPI_Comm, cfg: &Config) -> Result<(bool, Result<Topology, String>), MpiError> {
    let size = host::comm::size(comm)? as usize;
    let text = cfg
        .switch_topology
        .as_deref()
        .map(|p| std::fs::read(p).map_err(|e| format!("{}: {e}", what(p))));
    let mine = RankHost {
        world_rank: host::comm::world_ranks(comm)?
            .get(host::comm::rank(comm)? as usize)
            .copied()
            .flatten()
            .unwrap_or(u32::MAX),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        addrs: crate::net::list_ifaces()
            .map(|l| l.into_iter().map(|i| i.addr).collect())
            .unwrap_or_default(),
        file_digest: match &text {
            None => NOT_SET,
            Some(Ok(b)) => crate::topology::digest(b).max(2),
            Some(Err(_)) => 0,
        },
    };
    let all = host::comm::allgather_bytes(comm, &mine.encode())?;
    let ranks: Result<Vec<RankHost>, String> = all
        .chunks(switches::RECORD_BYTES)
        .map(RankHost::decode)
        .collect();
    let any_set = ranks
        .as_ref()
        .map_or(true, |r| r.iter().any(|h| h.file_digest != NOT_SET));
    Ok((
        any_set,
        ranks.and_then(|ranks| topology(cfg, text, &ranks, size)),
    ))
}

/// Collective over `comm` (MPICAST_Mcast_enable's setup): the topology IDs of
/// `MPICAST_SWITCH_TOPOLOGY` (`switches::topo_ids`) for `MPICAST_Imcast`, rank by rank, or
/// why it cannot give them (the same message on every rank); `None` when no rank set it.
pub fn switch_topo_ids(
    comm: MPI_Comm,
    cfg: &Config,
) -> Result<Option<Result<Vec<String>, String>>, MpiError> {
    let (any_set, topo) = gather(comm, cfg)?;
    if !any_set {
        return Ok(None);
    }
    Ok(Some(topo.and_then(|t| {
        switches::topo_ids(&t.net, &t.updown, &t.switch_of_rank, cfg.topo_base)
            .map_err(|e| format!("MPICAST_SWITCH_TOPOLOGY: {e}"))
    })))
}

/// The topology from the gathered records; the same answer on every rank.
fn topology(
    cfg: &Config,
    text: Option<Result<Vec<u8>, String>>,
    ranks: &[RankHost],
    size: usize,
) -> Result<Topology, String> {
    let all_unset = ranks.iter().all(|r| r.file_digest == NOT_SET);
    let (net, switch_of_rank) = match (text, all_unset) {
        (None, true) => (
            Network::parse("switch all\n", "(one switch)").expect("a valid network"),
            vec![0; size],
        ),
        (None, false) => {
            return Err(
                "MPICAST_SWITCH_TOPOLOGY is set on some ranks and not on others: set it on \
                 every rank or on none"
                    .to_string(),
            )
        }
        (Some(Err(e)), _) => return Err(e),
        (Some(Ok(bytes)), _) => {
            let path = cfg.switch_topology.as_deref().unwrap_or("");
            let w = what(path);
            switches::copies_agree(&w, ranks)?;
            let text = String::from_utf8_lossy(&bytes);
            let net =
                Network::parse(&text, path).map_err(|e| format!("MPICAST_SWITCH_TOPOLOGY: {e}"))?;
            let placed = switches::place(&net, &w, ranks)?;
            (net, placed)
        }
    };
    // The agent-based algorithms assume up-down routing: from the file's root, if it names
    // one, else from the first switch declared.
    let root = match net.routing {
        RoutingKind::UpDown { root } => root,
        RoutingKind::Shortest => 0,
    };
    let updown = UpDown::new(&net, root);
    Ok(Topology {
        net,
        updown,
        switch_of_rank,
    })
}

/// This rank's part of one MPICAST_Mmcast over `comm`: `send` to `dests` (none: this rank
/// multicasts nothing), `recvs` from their sources. Collective. `refused`: what the caller
/// found wrong with this rank's C arguments (a negative count, a NULL list, a bad datatype),
/// agreed with the others like the checks here, so that every rank returns the error.
pub fn mmcast(
    comm: MPI_Comm,
    send: Region,
    dests: &[u32],
    recvs: &[MmcastRecv],
    refused: Option<String>,
) -> Result<(), MmcastError> {
    let session = super::session_or_die();
    let state = session.comm_state(comm, "MPICAST_Mmcast")?;
    let mut st = lock(&state);
    if st.mmcast.is_none() {
        let m = set_up(st.private.0, &st.cfg)?;
        st.mmcast = Some(m);
    }
    let (rank, size) = (st.rank, st.size);
    let algo_name = st.cfg.mmcast_algo.clone();
    let m = st.mmcast.as_ref().expect("set up above");
    let dup = m.comm.0;

    // This rank's own arguments, checked before anything is exchanged.
    let local = match refused {
        Some(why) => Err(format!(
            "mpicast: MPICAST_Mmcast (rank {rank} of {size}): {why}"
        )),
        None => check_local(rank, size, dests, recvs),
    };

    let (ndests, bytes) = exchange_heads(dup, (rank, size), &algo_name, local, dests, &send)?;
    let mcasts = gather_multicasts(dup, dests, &ndests)?;
    agree_expected(dup, (rank, size), &mcasts, &bytes, recvs)?;
    if mcasts.is_empty() {
        return Ok(());
    }
    if mcasts.len() > MAX_TAG as usize + 1 {
        return Err(MmcastError::Arg(format!(
            "mpicast: MPICAST_Mmcast: {} ranks multicast at once; at most {} can (one MPI tag each)",
            mcasts.len(),
            MAX_TAG + 1
        )));
    }
    let topo = m
        .topo
        .as_ref()
        .map_err(|e| MmcastError::Topology(e.clone()))?;
    let auto = agents::auto_choice(mcasts.len(), topo.net.switches.len());
    let algo = if algo_name == "auto" {
        auto
    } else {
        MmcastAlgo::from_name(&algo_name).unwrap_or(auto)
    };
    let plan = agents::plan(
        &topo.net,
        &topo.updown,
        &topo.switch_of_rank,
        &mcasts,
        algo,
        1,
    )
    .map_err(|e| MmcastError::Arg(format!("mpicast: MPICAST_Mmcast: {e}")))?;
    run_part(dup, rank, &plan, &mcasts, &bytes, send, recvs)
}

/// 1: every rank's flag (its own arguments refused), the algorithm (its place in
/// MMCAST_ALGOS: every rank must plan alike), bytes and number of destinations, gathered
/// (collective); an error on every rank if any rank refused its arguments or plans otherwise.
/// Returns each rank's number of destinations and bytes.
fn exchange_heads(
    dup: MPI_Comm,
    (rank, size): (u32, u32),
    algo_name: &str,
    local: Result<(), String>,
    dests: &[u32],
    send: &Region,
) -> Result<(Vec<usize>, Vec<u64>), MmcastError> {
    let algo_no = MMCAST_ALGOS
        .iter()
        .position(|a| *a == algo_name)
        .unwrap_or(0) as u8;
    let mut head = Vec::with_capacity(16);
    head.push(u8::from(local.is_err()));
    head.push(algo_no);
    head.extend_from_slice(&[0; 2]);
    head.extend_from_slice(&(dests.len() as u32).to_le_bytes());
    head.extend_from_slice(&(send.len() as u64).to_le_bytes());
    let heads = host::comm::allgather_bytes(dup, &head)?;
    let field = |r: usize, a: usize, b: usize| &heads[16 * r + a..16 * r + b];
    let bad_local: Vec<u32> = (0..size)
        .filter(|&r| field(r as usize, 0, 1)[0] != 0)
        .collect();
    let ndests: Vec<usize> = (0..size as usize)
        .map(|r| u32::from_le_bytes(field(r, 4, 8).try_into().expect("4 bytes")) as usize)
        .collect();
    let bytes: Vec<u64> = (0..size as usize)
        .map(|r| u64::from_le_bytes(field(r, 8, 16).try_into().expect("8 bytes")))
        .collect();
    if let Some(r) = (0..size as usize).find(|&r| field(r, 1, 2)[0] != algo_no) {
        let name = |n: u8| MMCAST_ALGOS.get(n as usize).copied().unwrap_or("?");
        return Err(MmcastError::Arg(format!(
            "mpicast: MPICAST_Mmcast: the ranks do not plan alike: MPICAST_MMCAST_ALGO (or the \
             hint mpicast_mmcast_algo) is {} on rank {rank} and {} on rank {r}; give every rank \
             the same",
            name(algo_no),
            name(field(r, 1, 2)[0])
        )));
    }
    if !bad_local.is_empty() {
        return Err(MmcastError::Arg(match local {
            Err(e) => e,
            Ok(()) => format!(
                "mpicast: MPICAST_Mmcast: {} arguments out of range (see {} message)",
                ranks_said(&bad_local, "passed", "passed"),
                if bad_local.len() == 1 { "its" } else { "their" }
            ),
        }));
    }
    Ok((ndests, bytes))
}

/// 2: every rank's destinations (`ndests` of each), padded to the longest list and gathered
/// (collective): the multicasts, by source.
fn gather_multicasts(
    dup: MPI_Comm,
    dests: &[u32],
    ndests: &[usize],
) -> Result<Vec<Multicast>, MmcastError> {
    let widest = ndests.iter().copied().max().unwrap_or(0);
    let mut list = Vec::with_capacity(4 * widest);
    for &d in dests {
        list.extend_from_slice(&d.to_le_bytes());
    }
    list.resize(4 * widest, 0);
    let lists = if widest == 0 {
        Vec::new()
    } else {
        host::comm::allgather_bytes(dup, &list)?
    };
    let mut mcasts: Vec<Multicast> = Vec::new();
    for (r, &n) in ndests.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let at = 4 * widest * r;
        let dests = (0..n)
            .map(|i| {
                let o = at + 4 * i;
                u32::from_le_bytes(lists[o..o + 4].try_into().expect("4 bytes"))
            })
            .collect();
        mcasts.push(Multicast {
            source: r as u32,
            dests,
        });
    }
    Ok(mcasts)
}

/// 3: does what this rank expects match what is sent to it? Every rank learns whether every
/// rank agreed (collective).
fn agree_expected(
    dup: MPI_Comm,
    (rank, size): (u32, u32),
    mcasts: &[Multicast],
    bytes: &[u64],
    recvs: &[MmcastRecv],
) -> Result<(), MmcastError> {
    let agree = check_expected(rank, mcasts, bytes, recvs);
    let flags = host::comm::allgather_bytes(dup, &[u8::from(agree.is_err())])?;
    let bad: Vec<u32> = (0..size).filter(|&r| flags[r as usize] != 0).collect();
    if !bad.is_empty() {
        return Err(MmcastError::Arg(match agree {
            Err(e) => e,
            Ok(()) => format!(
                "mpicast: MPICAST_Mmcast: {} other messages than are sent to {} (see {} message)",
                ranks_said(&bad, "expects", "expect"),
                if bad.len() == 1 { "it" } else { "them" },
                if bad.len() == 1 { "its" } else { "their" }
            ),
        }));
    }
    Ok(())
}

/// This rank's part of `plan`, run to its end by the GOAL executor on `dup`: slot 0 is this
/// rank's own buffer, slot 1 + i the i-th expected message.
fn run_part(
    dup: MPI_Comm,
    rank: u32,
    plan: &agents::Plan,
    mcasts: &[Multicast],
    bytes: &[u64],
    send: Region,
    recvs: &[MmcastRecv],
) -> Result<(), MmcastError> {
    let mine = mcasts.iter().position(|mc| mc.source == rank);
    let slot_of = |mc: u32| -> BufRef {
        let src = mcasts[mc as usize].source;
        let len = bytes[src as usize] as usize;
        let slot = if Some(mc as usize) == mine {
            0
        } else {
            1 + recvs
                .iter()
                .position(|r| r.source == src)
                .expect("checked: every multicast this rank takes part in is expected")
                as u16
        };
        BufRef {
            slot,
            offset: 0,
            len,
        }
    };
    let schedule = agents::schedule(plan, rank, slot_of);
    let mut memory = BackendMemory::default();
    memory.slots.push(Some(send));
    memory.slots.extend(recvs.iter().map(|r| Some(r.region)));
    let mut backend = GoalBackend::with_memory(dup, memory, Region::empty(), None);
    backend.set_blocking(true);
    let mut exec = Execution::new(&schedule);
    exec.start(&mut backend).map_err(MmcastError::Run)?;
    exec.wait(&mut backend).map_err(MmcastError::Run)?;
    Ok(())
}

/// "rank 3 expects" or "ranks 1, 4 expect".
fn ranks_said(r: &[u32], one: &str, many: &str) -> String {
    let l: Vec<String> = r.iter().map(|x| x.to_string()).collect();
    match r.len() {
        1 => format!("rank {} {one}", l[0]),
        _ => format!("ranks {} {many}", l.join(", ")),
    }
}

/// This rank's arguments on their own: destinations in range, distinct, not itself; sources
/// likewise.
fn check_local(rank: u32, size: u32, dests: &[u32], recvs: &[MmcastRecv]) -> Result<(), String> {
    let at = format!("mpicast: MPICAST_Mmcast (rank {rank} of {size})");
    let mut seen = vec![false; size as usize];
    for &d in dests {
        if d >= size {
            return Err(format!(
                "{at}: destination {d} is not a rank of the communicator"
            ));
        }
        if d == rank {
            return Err(format!("{at}: a rank cannot be among its own destinations"));
        }
        if std::mem::replace(&mut seen[d as usize], true) {
            return Err(format!("{at}: destination {d} is listed twice"));
        }
    }
    let mut seen = vec![false; size as usize];
    for r in recvs {
        if r.source >= size {
            return Err(format!(
                "{at}: source {} is not a rank of the communicator",
                r.source
            ));
        }
        if r.source == rank {
            return Err(format!("{at}: a rank cannot expect a message from itself"));
        }
        if std::mem::replace(&mut seen[r.source as usize], true) {
            return Err(format!("{at}: source {} is listed twice", r.source));
        }
    }
    Ok(())
}

/// Whether `recvs` are exactly the multicasts that name `rank`, with their sizes.
fn check_expected(
    rank: u32,
    mcasts: &[Multicast],
    bytes: &[u64],
    recvs: &[MmcastRecv],
) -> Result<(), String> {
    let at = format!("mpicast: MPICAST_Mmcast (rank {rank})");
    for mc in mcasts.iter().filter(|mc| mc.dests.contains(&rank)) {
        let Some(r) = recvs.iter().find(|r| r.source == mc.source) else {
            return Err(format!(
                "{at}: rank {} multicasts to this rank, which does not list it among its \
                 sources",
                mc.source
            ));
        };
        let b = bytes[mc.source as usize];
        if r.region.len() as u64 != b {
            return Err(format!(
                "{at}: rank {} sends {b} bytes, this rank expects {} from it (the type \
                 signatures must match, as in MPI)",
                mc.source,
                r.region.len()
            ));
        }
    }
    if let Some(r) = recvs.iter().find(|r| {
        !mcasts
            .iter()
            .any(|mc| mc.source == r.source && mc.dests.contains(&rank))
    }) {
        return Err(format!(
            "{at}: expects a message from rank {}, which does not multicast to this rank",
            r.source
        ));
    }
    Ok(())
}
