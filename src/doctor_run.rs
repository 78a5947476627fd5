//! The measuring half of `mpicast doctor -n N` (`MPICAST_Doctor`): every rank gathers its
//! host's facts, joins a test group on the ports at both ends of `MPICAST_PORT` and multicasts
//! a few datagrams (small, then of the job's largest size) while counting what it hears from
//! the others; rank 0 then multicasts at increasing rates; every rank sends unicast datagrams
//! to the others' addresses (the repair path); one rank per host listens for IGMP queries the
//! whole time (with `--long`, one query interval, after which the group is checked again).
//! The counts travel to rank 0 by the host MPI, which judges them (`doctor::job`, pure) and
//! prints the report. Bounded: a few seconds, plus `--long`'s wait.
//!
//! No `unsafe` here: MPI through `host::comm`, sockets through `net`.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::doctor::host::{code_named, diagnose as diagnose_host, Finding, Severity};
use crate::doctor::job::{
    self, codec, HostSection, JobResults, Options, QuerierWatch, RankInfo, RateStep, Round,
};
use crate::doctor::report;
use crate::host::{comm, MPI_Comm, MpiError};
use crate::net::{self, host_facts, igmp::IgmpListener, McastSocket, UnicastSocket};

const MAGIC: &[u8; 8] = b"MPCDOCTR";
/// MAGIC, nonce (8), tag (1), measure (1), sender (4), sequence (4).
const HEADER: usize = 26;
const SMALL: usize = 64;
/// Largest datagram of the rate test (a jumbo frame's payload): larger would make the low
/// rates' steps long.
const RATE_SIZE_CAP: usize = 8972;
/// Rates tried, in Mbit/s, up to the link's speed.
const RATES: &[u64] = &[10, 30, 100, 300, 1000, 3000, 10_000];
/// A rate step ends after this long even if not every datagram went.
const STEP_LIMIT: Duration = Duration::from_millis(300);
/// Ranks up to which unicast is tried between every pair (beyond: with rank 0 only).
const UNICAST_ALL_PAIRS: usize = 32;

const TAG_HEAR: u8 = 1;
const TAG_RATE: u8 = 2;
const TAG_UNICAST: u8 = 3;
const TAG_RETRY: u8 = 4;
const TAG_AFTER: u8 = 5;

/// What one rank ends with: rank 0's report (empty elsewhere) and whether problems were found
/// (the same on every rank).
pub struct Outcome {
    pub report: String,
    pub problems: bool,
}

fn mpi(e: MpiError) -> String {
    format!("a call to the host MPI failed: {e}")
}

/// Runs the job-wide checks over `comm` (collective; every rank passes the same options).
pub fn run(comm_in: MPI_Comm, opts: &Options) -> Result<Outcome, String> {
    let c = comm::dup(comm_in).map_err(mpi)?;
    let out = run_on(c, opts);
    let _ = comm::free(c);
    out
}

/// Allgathers byte strings of any length: in rank order.
fn allgather_var(c: MPI_Comm, mine: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let lens = codec::from_u32s(
        &comm::allgather_bytes(c, &(mine.len() as u32).to_le_bytes()).map_err(mpi)?,
    );
    let max = lens.iter().copied().max().unwrap_or(0).max(1) as usize;
    let mut padded = mine.to_vec();
    padded.resize(max, 0);
    let all = comm::allgather_bytes(c, &padded).map_err(mpi)?;
    Ok(all
        .chunks(max)
        .zip(&lens)
        .map(|(ch, &l)| ch[..l as usize].to_vec())
        .collect())
}

/// Allgathers one row of u32 per rank: `rows[r]` is rank r's.
fn allgather_rows(c: MPI_Comm, mine: &[u32]) -> Result<Vec<Vec<u32>>, String> {
    let all = comm::allgather_bytes(c, &codec::u32s(mine)).map_err(mpi)?;
    Ok(codec::from_u32s(&all)
        .chunks(mine.len().max(1))
        .map(<[u32]>::to_vec)
        .collect())
}

fn encode_finding(f: &Finding) -> String {
    format!(
        "{}\u{1d}{}\u{1d}{}\u{1d}{}",
        f.severity, f.code, f.what, f.fix
    )
}

fn decode_finding(s: &str) -> Option<Finding> {
    let mut it = s.split('\u{1d}');
    let severity = match it.next()? {
        "problem" => Severity::Problem,
        _ => Severity::Warning,
    };
    Some(Finding {
        severity,
        code: code_named(it.next()?),
        what: it.next()?.to_string(),
        fix: it.next()?.to_string(),
    })
}

/// A datagram of the test: `size` bytes.
fn datagram(nonce: u64, tag: u8, measure: u8, sender: u32, seq: u32, size: usize) -> Vec<u8> {
    let mut d = Vec::with_capacity(size.max(HEADER));
    d.extend_from_slice(MAGIC);
    d.extend_from_slice(&nonce.to_le_bytes());
    d.push(tag);
    d.push(measure);
    d.extend_from_slice(&sender.to_le_bytes());
    d.extend_from_slice(&seq.to_le_bytes());
    d.resize(size.max(HEADER), 0x5a);
    d
}

/// (tag, measure, sender) of one of this job's datagrams.
fn parse(d: &[u8], nonce: u64) -> Option<(u8, u8, u32)> {
    if d.len() < HEADER || &d[..8] != MAGIC || d[8..16] != nonce.to_le_bytes() {
        return None;
    }
    Some((
        d[16],
        d[17],
        u32::from_le_bytes([d[18], d[19], d[20], d[21]]),
    ))
}

/// The sockets of one rank and what they counted.
struct Probe {
    nonce: u64,
    me: usize,
    n: usize,
    /// One per port tried; `None` where it could not be opened.
    socks: Vec<Option<McastSocket>>,
    buf: Vec<u8>,
}

impl Probe {
    /// Reads the sockets until `until`, so that their buffers do not fill.
    fn drain_until(&mut self, until: Instant) {
        while Instant::now() < until {
            let mut sink = vec![Vec::new()];
            self.listen(
                0,
                &mut sink,
                (until - Instant::now()).min(Duration::from_secs(1)),
            );
        }
    }

    /// Reads every queued datagram from every socket, counting those of the rate test:
    /// counts[step][0].
    fn drain(&mut self, tag: u8, counts: &mut [Vec<u32>]) {
        for s in self.socks.iter().flatten() {
            while let Ok(Some(len)) = s.recv(&mut self.buf) {
                if let Some((t, m, _)) = parse(&self.buf[..len], self.nonce) {
                    if t == tag {
                        if let Some(c) = counts.get_mut(usize::from(m)).and_then(|r| r.first_mut())
                        {
                            *c += 1;
                        }
                    }
                }
            }
        }
    }

    fn wait(&self, d: Duration) {
        let fds: Vec<i32> = self.socks.iter().flatten().map(|s| s.fd()).collect();
        if fds.is_empty() {
            std::thread::sleep(d);
        } else {
            let _ = net::wait_readable(&fds, d);
        }
    }

    /// Receives for `d`.
    fn listen(&mut self, tag: u8, counts: &mut [Vec<u32>], d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            self.wait((end - Instant::now()).min(Duration::from_millis(10)));
            self.drain(tag, counts);
        }
    }
}

/// A hearing round: every rank sends `count` small datagrams on each of `socks` (and, with
/// `large`, that many of `large` bytes on the first), and counts what it hears. Returns, per
/// measure (each port, then the large), got[receiver][sender].
#[allow(clippy::too_many_arguments)]
fn hearing(
    c: MPI_Comm,
    nonce: u64,
    me: usize,
    n: usize,
    socks_used: &[Option<McastSocket>],
    tag: u8,
    count: u32,
    large: Option<usize>,
) -> Result<Vec<Vec<Vec<u32>>>, String> {
    let ports = socks_used.len();
    let measures = ports + usize::from(large.is_some());
    let mut counts = vec![vec![0u32; n]; measures];
    comm::barrier(c).map_err(mpi)?;
    let me_u = me as u32;
    let mut buf = vec![0u8; 65536];
    for seq in 0..count {
        for (k, s) in socks_used.iter().enumerate() {
            if let Some(s) = s {
                let _ = s.send(&datagram(nonce, tag, k as u8, me_u, seq, SMALL));
                if k == 0 {
                    if let Some(size) = large {
                        let _ = s.send(&datagram(nonce, tag, ports as u8, me_u, seq, size));
                    }
                }
            }
        }
        let end = Instant::now() + Duration::from_millis(3);
        while Instant::now() < end {
            count_from(socks_used, &mut buf, nonce, tag, me, &mut counts);
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    let settle = Instant::now() + Duration::from_millis(150);
    while Instant::now() < settle {
        count_from(socks_used, &mut buf, nonce, tag, me, &mut counts);
        std::thread::sleep(Duration::from_millis(2));
    }
    comm::barrier(c).map_err(mpi)?;
    let drain = Instant::now() + Duration::from_millis(50);
    while Instant::now() < drain {
        count_from(socks_used, &mut buf, nonce, tag, me, &mut counts);
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut out = Vec::with_capacity(measures);
    for row in &counts {
        out.push(allgather_rows(c, row)?);
    }
    Ok(out)
}

fn count_from(
    socks: &[Option<McastSocket>],
    buf: &mut [u8],
    nonce: u64,
    tag: u8,
    me: usize,
    counts: &mut [Vec<u32>],
) {
    for s in socks.iter().flatten() {
        while let Ok(Some(len)) = s.recv(buf) {
            if let Some((t, m, sender)) = parse(&buf[..len], nonce) {
                if t == tag && sender as usize != me {
                    if let Some(c) = counts
                        .get_mut(usize::from(m))
                        .and_then(|row| row.get_mut(sender as usize))
                    {
                        *c += 1;
                    }
                }
            }
        }
    }
}

fn round(
    what: &str,
    port: u16,
    ttl: u8,
    size: usize,
    sent: u32,
    took_part: &[bool],
    got: Vec<Vec<u32>>,
) -> Round {
    Round {
        what: what.to_string(),
        port,
        ttl,
        size,
        sent,
        took_part: took_part.to_vec(),
        got,
        hub: None,
    }
}

/// The rate test: rank 0 multicasts on `p.socks[0]` at each rate of [`RATES`] up to the link
/// (and stops once it cannot reach the rate asked); the others count. Every rank returns the
/// same steps, got[r] gathered.
fn rates(
    c: MPI_Comm,
    p: &mut Probe,
    size: usize,
    per_step: u32,
    link: Option<u64>,
) -> Result<Vec<RateStep>, String> {
    let targets: Vec<u64> = RATES
        .iter()
        .copied()
        .filter(|&r| link.map_or(true, |l| r <= l.saturating_mul(3) / 2))
        .collect();
    let mut steps: Vec<(u64, f64, u32)> = Vec::new();
    let mut counts = vec![vec![0u32; 1]; targets.len()];
    for (k, &target) in targets.iter().enumerate() {
        let mut achieved = 0f32;
        let mut sent = 0u32;
        if p.me == 0 {
            if let Some(Some(s)) = p.socks.first() {
                let gap = Duration::from_secs_f64((size * 8) as f64 / (target as f64 * 1e6));
                let t0 = Instant::now();
                let mut d = datagram(p.nonce, TAG_RATE, k as u8, 0, 0, size);
                while sent < per_step && t0.elapsed() < STEP_LIMIT {
                    let due = t0 + gap * sent;
                    let now = Instant::now();
                    if due > now + Duration::from_micros(200) {
                        std::thread::sleep(due - now);
                    } else if due > now {
                        std::thread::yield_now();
                        continue;
                    }
                    d[22..26].copy_from_slice(&sent.to_le_bytes());
                    if s.send(&d).is_err() {
                        break;
                    }
                    sent += 1;
                }
                let secs = t0.elapsed().as_secs_f64().max(1e-6);
                achieved = ((sent as usize * size * 8) as f64 / secs / 1e6) as f32;
            }
        }
        let mine = [achieved.to_le_bytes(), sent.to_le_bytes()].concat();
        let mut ag = comm::Iallgather::start(c, &mine).map_err(mpi)?;
        while !ag.test().map_err(mpi)? {
            p.wait(Duration::from_millis(2));
            p.drain(TAG_RATE, &mut counts);
        }
        let all = ag.wait().map_err(mpi)?;
        p.listen(TAG_RATE, &mut counts, Duration::from_millis(30));
        let got_achieved = f32::from_le_bytes([all[0], all[1], all[2], all[3]]) as f64;
        let got_sent = u32::from_le_bytes([all[4], all[5], all[6], all[7]]);
        steps.push((target, got_achieved, got_sent));
        // The link is full: higher rates would only say so again.
        if got_sent == 0 || got_achieved < 0.7 * target as f64 {
            break;
        }
    }
    let mine: Vec<u32> = (0..steps.len()).map(|k| counts[k][0]).collect();
    let rows = allgather_rows(c, &mine)?;
    Ok(steps
        .iter()
        .enumerate()
        .map(|(k, &(target, achieved, sent))| RateStep {
            target_mbps: target,
            achieved_mbps: achieved,
            sent,
            got: (0..p.n)
                .map(|r| if r == 0 { sent } else { rows[r][k] })
                .collect(),
        })
        .collect())
}

/// What the unicast round gathered: got[receiver][sender], who took part, the hub.
type Unicast = (Vec<Vec<u32>>, Vec<bool>, Option<usize>);

/// Unicast between the ranks' addresses: every pair (or, beyond [`UNICAST_ALL_PAIRS`] ranks,
/// every rank with rank 0). got[receiver][sender].
fn unicast(c: MPI_Comm, p: &Probe, addr: Option<Ipv4Addr>, count: u32) -> Result<Unicast, String> {
    let sock = addr.and_then(|a| UnicastSocket::open(a).ok());
    let mine = match &sock {
        Some(s) => {
            let l = s.local_addr();
            [u32::from(*l.ip()), u32::from(l.port())]
        }
        None => [0, 0],
    };
    let peers = allgather_rows(c, &mine)?;
    let took: Vec<bool> = peers.iter().map(|r| r[1] != 0).collect();
    let hub = (p.n > UNICAST_ALL_PAIRS).then_some(0usize);
    let mut counts = vec![vec![0u32; p.n]; 1];
    let mut buf = vec![0u8; 2048];
    comm::barrier(c).map_err(mpi)?;
    let mut take = |counts: &mut [Vec<u32>]| {
        if let Some(s) = &sock {
            while let Ok(Some((len, _))) = s.recv_from(&mut buf) {
                if let Some((t, _, sender)) = parse(&buf[..len], p.nonce) {
                    if t == TAG_UNICAST {
                        if let Some(c) = counts[0].get_mut(sender as usize) {
                            *c += 1;
                        }
                    }
                }
            }
        }
    };
    if let Some(s) = &sock {
        for seq in 0..count {
            for (r, peer) in peers.iter().enumerate() {
                let tested = r != p.me && took[r] && hub.map_or(true, |h| r == h || p.me == h);
                if tested {
                    let to = SocketAddrV4::new(Ipv4Addr::from(peer[0]), peer[1] as u16);
                    let _ = s.send_to(
                        &datagram(p.nonce, TAG_UNICAST, 0, p.me as u32, seq, SMALL),
                        to,
                    );
                }
            }
            take(&mut counts);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let settle = Instant::now() + Duration::from_millis(150);
    while Instant::now() < settle {
        take(&mut counts);
        std::thread::sleep(Duration::from_millis(2));
    }
    comm::barrier(c).map_err(mpi)?;
    std::thread::sleep(Duration::from_millis(30));
    take(&mut counts);
    Ok((allgather_rows(c, &counts[0])?, took, hub))
}

/// The IGMP watch of one host, on a thread until `stop`.
fn watch_igmp(stop: Arc<AtomicBool>) -> JoinHandle<(u64, Vec<Ipv4Addr>, Option<String>)> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let l = match IgmpListener::open(Duration::from_millis(100)) {
            Ok(l) => l,
            Err(e) => {
                return (
                    0,
                    Vec::new(),
                    Some(format!(
                        "a raw IGMP socket: {e}{}",
                        if e.kind() == std::io::ErrorKind::PermissionDenied {
                            " (needs root or CAP_NET_RAW)"
                        } else {
                            ""
                        }
                    )),
                )
            }
        };
        let mut heard = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match l.next_query() {
                Ok(Some(a)) if !heard.contains(&a) => heard.push(a),
                Ok(_) => {}
                Err(e) => return (t0.elapsed().as_millis() as u64, heard, Some(e.to_string())),
            }
        }
        (t0.elapsed().as_millis() as u64, heard, None)
    })
}

fn nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15
}

fn say(me: usize, what: &str) {
    if me == 0 {
        eprintln!("mpicast doctor: {what}");
    }
}

/// Who is where: every rank's host, address, interface, MTU and datagram, gathered.
struct Who {
    /// Per rank: host name, address, interface, MTU, datagram size, settings error.
    fields: Vec<Vec<String>>,
    /// Per rank: what tells its host (its name and address).
    keys: Vec<String>,
    /// Per rank: its host as the report names it.
    hosts_of: Vec<String>,
    nhosts: usize,
}

impl Who {
    /// `r` is the lowest rank of its host.
    fn leader(&self, r: usize) -> bool {
        self.keys.iter().position(|k| *k == self.keys[r]) == Some(r)
    }
}

/// Gathers who is where (collective); `Err(outcome)` when some rank's settings would be
/// refused, which ends the run.
fn who_is_where(
    c: MPI_Comm,
    me: usize,
    facts: &host_facts::HostFacts,
    cfg_err: &str,
) -> Result<Result<Who, Outcome>, String> {
    let chosen = facts.chosen.as_ref().ok();
    let hostname = facts.hostname.clone().unwrap_or_else(|| "?".into());
    let mtu = facts.dev_state().map_or(0, |s| s.mtu);
    let payload = chosen.map_or(0, net::max_udp_payload);
    let mine = codec::join(&[
        &hostname,
        &chosen.map_or(String::new(), |i| i.addr.to_string()),
        chosen.map_or("", |i| i.name.as_str()),
        &mtu.to_string(),
        &payload.to_string(),
        cfg_err,
    ]);
    let all = allgather_var(c, &mine)?;
    let fields: Vec<Vec<String>> = all.iter().map(|b| codec::split(b)).collect();
    let bad_cfg: Vec<(usize, String)> = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| !f[5].is_empty())
        .map(|(r, f)| (r, f[5].clone()))
        .collect();
    if !bad_cfg.is_empty() {
        let rs: Vec<u32> = bad_cfg.iter().map(|(r, _)| *r as u32).collect();
        let report = if me == 0 {
            format!(
                "mpicast doctor: the library would refuse the settings of {}: {}\n",
                crate::config::rank_list(&rs),
                bad_cfg[0].1.trim_start_matches("mpicast: ")
            )
        } else {
            String::new()
        };
        return Ok(Err(Outcome {
            report,
            problems: true,
        }));
    }
    let key = |f: &Vec<String>| format!("{}|{}", f[0], f[1]);
    let keys: Vec<String> = fields.iter().map(key).collect();
    let mut distinct: Vec<String> = keys.clone();
    distinct.sort();
    distinct.dedup();
    let mut names: Vec<String> = fields.iter().map(|f| f[0].clone()).collect();
    names.sort();
    names.dedup();
    // Hosts that share a name (network namespaces, containers) are told by their address.
    let display = |f: &Vec<String>| -> String {
        if names.len() == distinct.len() {
            f[0].clone()
        } else if f[1].is_empty() {
            format!("{}[no multicast address]", f[0])
        } else {
            format!("{}[{}]", f[0], f[1])
        }
    };
    let hosts_of: Vec<String> = fields.iter().map(display).collect();
    Ok(Ok(Who {
        fields,
        keys,
        hosts_of,
        nhosts: distinct.len(),
    }))
}

/// Each host's facts and findings, from its lowest rank (collective).
fn host_sections(
    c: MPI_Comm,
    me: usize,
    facts: &host_facts::HostFacts,
    who: &Who,
) -> Result<Vec<HostSection>, String> {
    let n = who.keys.len();
    let section = if who.leader(me) {
        let fs = diagnose_host(facts, Some(who.nhosts));
        let enc: Vec<String> = fs.iter().map(encode_finding).collect();
        codec::join(&[
            &report::facts_rows(facts),
            &report::to_json(facts, &fs),
            &enc.join("\u{1e}"),
        ])
    } else {
        Vec::new()
    };
    let sections = allgather_var(c, &section)?;
    let mut hosts: Vec<HostSection> = Vec::new();
    for (r, section) in sections.iter().enumerate() {
        if !who.leader(r) {
            continue;
        }
        let f = codec::split(section);
        hosts.push(HostSection {
            host: who.hosts_of[r].clone(),
            ranks: (0..n)
                .filter(|&q| who.keys[q] == who.keys[r])
                .map(|q| q as u32)
                .collect(),
            rows: f.first().cloned().unwrap_or_default(),
            json: f.get(1).cloned().unwrap_or_default(),
            findings: f
                .get(2)
                .map(|s| s.split('\u{1e}').filter_map(decode_finding).collect())
                .unwrap_or_default(),
        });
    }
    Ok(hosts)
}

/// The sockets of the probes: one per port of the group on `chosen`, `None` where it could
/// not be opened (the first error into `join_error`, unless one is there).
fn open_socks(
    chosen: Option<&net::Iface>,
    group: Ipv4Addr,
    ports: &[u16],
    ttl: u8,
    rcvbuf: usize,
    join_error: &mut Option<String>,
) -> Vec<Option<McastSocket>> {
    ports
        .iter()
        .map(|&port| {
            let i = chosen?;
            match McastSocket::open(i, group, port, ttl, rcvbuf) {
                Ok(s) => Some(s),
                Err(e) => {
                    join_error.get_or_insert_with(|| {
                        e.to_string().trim_start_matches("mpicast: ").into()
                    });
                    None
                }
            }
        })
        .collect()
}

/// Every rank's interface, datagram and join error, for the report (collective).
fn rank_infos(c: MPI_Comm, who: &Who, join_error: Option<&str>) -> Result<Vec<RankInfo>, String> {
    let join_errors = allgather_var(c, join_error.unwrap_or("").as_bytes())?;
    Ok((0..who.fields.len())
        .map(|r| {
            let f = &who.fields[r];
            RankInfo {
                host: who.hosts_of[r].clone(),
                iface: (!f[2].is_empty())
                    .then(|| (f[2].clone(), f[1].parse().unwrap_or(Ipv4Addr::UNSPECIFIED))),
                mtu: f[3].parse().unwrap_or(0),
                payload: f[4].parse().unwrap_or(0),
                join_error: (!join_errors[r].is_empty())
                    .then(|| String::from_utf8_lossy(&join_errors[r]).into_owned()),
            }
        })
        .collect())
}

/// What each host's watch for IGMP queries heard (collective; `watch`: this rank's, if it
/// watched).
fn querier_watches(
    c: MPI_Comm,
    who: &Who,
    watch: Option<(u64, Vec<Ipv4Addr>, Option<String>)>,
) -> Result<Vec<QuerierWatch>, String> {
    let wenc = match &watch {
        Some((ms, heard, err)) => codec::join(&[
            &ms.to_string(),
            &heard
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(","),
            err.as_deref().unwrap_or(""),
        ]),
        None => Vec::new(),
    };
    let watches = allgather_var(c, &wenc)?;
    Ok((0..who.fields.len())
        .filter(|&r| who.leader(r))
        .map(|r| {
            let f = codec::split(&watches[r]);
            QuerierWatch {
                host: who.hosts_of[r].clone(),
                listened_ms: f.first().and_then(|v| v.parse().ok()).unwrap_or(0),
                heard: f
                    .get(1)
                    .map(|v| v.split(',').filter_map(|a| a.parse().ok()).collect())
                    .unwrap_or_default(),
                error: f.get(2).filter(|e| !e.is_empty()).cloned(),
            }
        })
        .collect())
}

/// Rank 0's `v` (collective).
fn root_u64(c: MPI_Comm, v: u64) -> Result<u64, String> {
    let mut b = v.to_le_bytes();
    comm::bcast_bytes(c, &mut b, 0).map_err(mpi)?;
    Ok(u64::from_le_bytes(b))
}

/// The group and ports the probes use: the settings' group (its first address but one for a
/// range) and both ports of the range.
fn probe_group(cfg: &Config) -> (Ipv4Addr, Vec<u16>) {
    let group = if cfg.group.1 >= 32 {
        cfg.group.0
    } else {
        Ipv4Addr::from(u32::from(cfg.group.0) | 1)
    };
    let mut ports = vec![cfg.ports.0];
    if cfg.ports.1 != cfg.ports.0 {
        ports.push(cfg.ports.1);
    }
    (group, ports)
}

/// Who hears whom: small datagrams on each port (`opened`: who opened which), and full-size
/// ones (`large` bytes, the job's datagram) on the first, when there is such a size.
fn first_rounds(
    c: MPI_Comm,
    p: &Probe,
    opts: &Options,
    ports: &[u16],
    ttl: u8,
    opened: &[Vec<u32>],
    large: usize,
) -> Result<(Vec<Round>, Option<Round>), String> {
    let heard = hearing(
        c,
        p.nonce,
        p.me,
        p.n,
        &p.socks,
        TAG_HEAR,
        opts.count,
        (large >= HEADER).then_some(large),
    )?;
    let mut small = Vec::new();
    for (k, &port) in ports.iter().enumerate() {
        let took: Vec<bool> = opened.iter().map(|o| o[k] != 0).collect();
        small.push(round(
            "multicast",
            port,
            ttl,
            SMALL,
            opts.count,
            &took,
            heard[k].clone(),
        ));
    }
    let large_round = (large >= HEADER).then(|| {
        round(
            "full-size multicast",
            ports[0],
            ttl,
            large,
            opts.count,
            &small[0].took_part,
            heard[ports.len()].clone(),
        )
    });
    Ok((small, large_round))
}

/// A round of small datagrams again, on one socket: its name, TTL and tag.
#[derive(Clone, Copy)]
struct Again {
    what: &'static str,
    ttl: u8,
    tag: u8,
}

/// Who hears whom again with small datagrams on `sock` (collective; `port` the one it is on).
/// `took`: who takes part; `None`: who has a socket.
fn round_again(
    c: MPI_Comm,
    p: &Probe,
    opts: &Options,
    again: Again,
    port: u16,
    sock: Option<McastSocket>,
    took: Option<&[bool]>,
) -> Result<Round, String> {
    let first = [sock];
    let got = hearing(c, p.nonce, p.me, p.n, &first, again.tag, opts.count, None)?;
    let took: Vec<bool> = match took {
        Some(t) => t.to_vec(),
        None => allgather_rows(c, &[u32::from(first[0].is_some())])?
            .iter()
            .map(|r| r[0] != 0)
            .collect(),
    };
    Ok(round(
        again.what,
        port,
        again.ttl,
        SMALL,
        opts.count,
        &took,
        got[0].clone(),
    ))
}

/// `--long`: listens for IGMP queries until `until` (the watch runs meanwhile; the sockets are
/// kept read), then who hears whom again on the first socket (collective).
fn after_wait(
    c: MPI_Comm,
    p: &mut Probe,
    opts: &Options,
    port: u16,
    ttl: u8,
    took: &[bool],
    until: Instant,
) -> Result<Round, String> {
    say(
        p.me,
        &format!(
            "listening for IGMP queries for {} s (--long), then who hears whom again",
            opts.long_secs
        ),
    );
    p.drain_until(until);
    let first = p.socks.first_mut().and_then(Option::take);
    let again = Again {
        what: "multicast after the wait",
        ttl,
        tag: TAG_AFTER,
    };
    round_again(c, p, opts, again, port, first, Some(took))
}

/// Loss by rate, with datagrams of the job's size (`large`, within bounds): the size, rank 0's
/// link speed if it knows it, and the steps (collective).
fn rate_round(
    c: MPI_Comm,
    p: &mut Probe,
    chosen: Option<&net::Iface>,
    large: usize,
    opts: &Options,
) -> Result<(usize, Option<u64>, Vec<RateStep>), String> {
    let link = chosen.and_then(|i| host_facts::link_speed_mbps(&i.name));
    let link0 = Some(root_u64(c, link.unwrap_or(0))?).filter(|&l| l > 0);
    let rate_size = large.clamp(HEADER, RATE_SIZE_CAP);
    let steps = rates(c, p, rate_size, opts.rate_count, link0)?;
    Ok((rate_size, link0, steps))
}

/// Unicast between the ranks, the repair path (collective; `addr`: this rank's).
fn unicast_round(
    c: MPI_Comm,
    p: &Probe,
    addr: Option<Ipv4Addr>,
    opts: &Options,
) -> Result<Round, String> {
    let (ugot, utook, hub) = unicast(c, p, addr, opts.count.min(10))?;
    let mut uround = round("unicast", 0, 64, SMALL, opts.count.min(10), &utook, ugot);
    uround.hub = hub;
    Ok(uround)
}

/// Pairs on different hosts that heard nothing: would a higher TTL join them? If the TTL
/// (`at`: the first port and its TTL) is below `opts.retry_ttl`, who hears whom at that TTL on
/// a socket of its own, from `open_hi` (collective).
fn retry_round(
    c: MPI_Comm,
    p: &Probe,
    opts: &Options,
    at: (u16, u8),
    small: &[Round],
    ranks: &[RankInfo],
    open_hi: impl FnOnce() -> Option<McastSocket>,
) -> Result<Option<Round>, String> {
    let cross_silent = small.iter().any(|rd| {
        rd.silent()
            .iter()
            .any(|&(s, r)| ranks[s].host != ranks[r].host)
    });
    if !cross_silent || at.1 >= opts.retry_ttl {
        return Ok(None);
    }
    say(p.me, &format!("again with TTL {}", opts.retry_ttl));
    let again = Again {
        what: "multicast at a higher TTL",
        ttl: opts.retry_ttl,
        tag: TAG_RETRY,
    };
    round_again(c, p, opts, again, at.0, open_hi(), None).map(Some)
}

fn run_on(c: MPI_Comm, opts: &Options) -> Result<Outcome, String> {
    let n = comm::size(c).map_err(mpi)? as usize;
    let me = comm::rank(c).map_err(mpi)? as usize;
    let (cfg, cfg_err) = match Config::from_env() {
        Ok(cfg) => (cfg, String::new()),
        Err(e) => (Config::default(), e.to_string()),
    };
    let facts = host_facts::gather(&cfg);
    let chosen = facts.chosen.as_ref().ok().cloned();

    let who = match who_is_where(c, me, &facts, &cfg_err)? {
        Ok(who) => who,
        Err(refused) => return Ok(refused),
    };
    let hosts = host_sections(c, me, &facts, &who)?;

    // The watch for IGMP queries, one per host.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = who.leader(me).then(|| watch_igmp(stop.clone()));
    let t_start = Instant::now();

    let nonce = root_u64(c, nonce())?;
    let (group, ports) = probe_group(&cfg);
    let mut join_error = match &facts.chosen {
        Err(e) => Some(e.trim_start_matches("mpicast: ").to_string()),
        Ok(_) => None,
    };
    let open = |ttl: u8, join_error: &mut Option<String>| {
        open_socks(chosen.as_ref(), group, &ports, ttl, cfg.rcvbuf, join_error)
    };
    let socks = open(cfg.ttl, &mut join_error);
    let mut p = Probe {
        nonce,
        me,
        n,
        socks,
        buf: vec![0u8; 65536],
    };
    let opened: Vec<u32> = p.socks.iter().map(|s| u32::from(s.is_some())).collect();
    let opened_all = allgather_rows(c, &opened)?;
    let ranks = rank_infos(c, &who, join_error.as_deref())?;
    // The job's datagram: the smallest of every rank's largest.
    let large = ranks.iter().map(|r| r.payload).filter(|&s| s > 0).min();
    let large = large.unwrap_or(0);

    let hosts_said = match who.nhosts {
        1 => "1 host".to_string(),
        h => format!("{h} hosts"),
    };
    say(me, &format!("{n} ranks on {hosts_said}: who hears whom"));
    let (small, large_round) = first_rounds(c, &p, opts, &ports, cfg.ttl, &opened_all, large)?;
    let open_hi = || open(opts.retry_ttl, &mut None).into_iter().next().flatten();
    let retry = retry_round(c, &p, opts, (ports[0], cfg.ttl), &small, &ranks, open_hi)?;

    say(me, "loss by rate");
    let (rate_size, link0, steps) = rate_round(c, &mut p, chosen.as_ref(), large, opts)?;

    say(me, "unicast between the ranks (the repair path)");
    let uround = unicast_round(c, &p, chosen.as_ref().map(|i| i.addr), opts)?;

    let after_long = if opts.long_secs > 0 {
        let until = t_start + Duration::from_secs(opts.long_secs);
        let round = after_wait(
            c,
            &mut p,
            opts,
            ports[0],
            cfg.ttl,
            &small[0].took_part,
            until,
        )?;
        Some((opts.long_secs, round))
    } else {
        None
    };

    stop.store(true, Ordering::Relaxed);
    let watch = watcher.and_then(|h| h.join().ok());
    let queriers = querier_watches(c, &who, watch)?;

    let results = JobResults {
        ranks,
        hosts,
        group,
        ports: cfg.ports,
        ttl: cfg.ttl,
        small,
        large: large_round,
        retry,
        rate_size,
        link_mbps: link0,
        rates: steps,
        unicast: Some(uround),
        queriers,
        after_long,
    };
    Ok(outcome(me, opts, &results))
}

/// The findings of the job's results, and their report (rank 0's; empty elsewhere).
fn outcome(me: usize, opts: &Options, results: &JobResults) -> Outcome {
    let findings = job::diagnose(results);
    let problems = findings.iter().any(|f| f.severity == Severity::Problem);
    let report = if me == 0 {
        if opts.json {
            job::to_json(results, &findings)
        } else {
            job::to_text(results, &findings)
        }
    } else {
        String::new()
    };
    Outcome { report, problems }
}
