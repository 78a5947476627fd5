//! The job-wide diagnosis (`mpicast doctor -n N`): from what every rank measured (who heard
//! whose multicast, full-size datagrams, loss at increasing rates, unicast between ranks, IGMP
//! queries heard), the problems and warnings of the whole job, each with its fix, and the
//! report as text or one JSON document. Pure: the measuring is `doctor_run`'s.

use std::fmt::Write;
use std::net::Ipv4Addr;

use super::host::{problem, warning, Finding, Severity};
use super::report::{finding_text, json_str};
use crate::config::rank_list;

/// The options of one job-wide run, as the runner passes them to `MPICAST_Doctor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Write one JSON document instead of the text.
    pub json: bool,
    /// `--long`: seconds to listen for an IGMP query before checking the groups again
    /// (0: not asked).
    pub long_secs: u64,
    /// Datagrams each rank sends per port in the hearing round.
    pub count: u32,
    /// Datagrams per step of the rate test.
    pub rate_count: u32,
    /// The TTL of the second hearing round, when pairs on different hosts did not hear each
    /// other with the configured one.
    pub retry_ttl: u8,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            json: false,
            long_secs: 0,
            count: 20,
            rate_count: 300,
            retry_ttl: 32,
        }
    }
}

/// The default `--long` wait: one IGMP query interval (125 s) and a margin.
pub const LONG_DEFAULT_SECS: u64 = 130;

impl Options {
    /// Parses `json long=S count=K rate_count=K retry_ttl=T`, words separated by blanks.
    pub fn parse(s: &str) -> Result<Options, String> {
        let mut o = Options::default();
        for w in s.split_whitespace() {
            let (k, v) = w.split_once('=').unwrap_or((w, ""));
            let num = |v: &str| -> Result<u64, String> {
                v.parse()
                    .map_err(|_| format!("doctor option `{w}`: expected a number"))
            };
            match k {
                "json" => o.json = true,
                "long" => {
                    o.long_secs = if v.is_empty() {
                        LONG_DEFAULT_SECS
                    } else {
                        num(v)?
                    }
                }
                "count" => o.count = num(v)?.clamp(1, 1000) as u32,
                "rate_count" => o.rate_count = num(v)?.clamp(10, 100_000) as u32,
                "retry_ttl" => o.retry_ttl = num(v)?.clamp(1, 255) as u8,
                _ => return Err(format!("unknown doctor option `{w}`")),
            }
        }
        Ok(o)
    }
}

/// What one rank is, as the job sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankInfo {
    pub host: String,
    /// The interface the library chose on this rank, and its address.
    pub iface: Option<(String, Ipv4Addr)>,
    /// MTU of that interface (0: unknown).
    pub mtu: u32,
    /// The largest UDP payload one unfragmented datagram carries there (0: no interface).
    pub payload: usize,
    /// Why this rank could not join the test group (`None`: it joined).
    pub join_error: Option<String>,
}

/// One host's section: its facts as rows and JSON (by its lowest rank), and its findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSection {
    pub host: String,
    pub ranks: Vec<u32>,
    pub rows: String,
    pub json: String,
    pub findings: Vec<Finding>,
}

/// A round of datagrams from every rank to every rank: `got[r][s]` of `sent` from rank `s`
/// arrived at rank `r`. A rank that could not take part has `sent` 0 in `took_part`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    /// What went: "multicast", "full-size multicast", "unicast".
    pub what: String,
    pub port: u16,
    pub ttl: u8,
    pub size: usize,
    pub sent: u32,
    pub took_part: Vec<bool>,
    pub got: Vec<Vec<u32>>,
    /// Only pairs with this rank were tried (unicast in a large job).
    pub hub: Option<usize>,
}

impl Round {
    fn n(&self) -> usize {
        self.got.len()
    }

    /// Pairs (sender, receiver), different ranks that both took part.
    fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = self.n();
        (0..n).flat_map(move |s| {
            (0..n).filter_map(move |r| {
                (r != s
                    && self.took_part[r]
                    && self.took_part[s]
                    && self.hub.map_or(true, |h| r == h || s == h))
                .then_some((s, r))
            })
        })
    }

    /// Pairs where nothing arrived.
    pub fn silent(&self) -> Vec<(usize, usize)> {
        self.pairs().filter(|&(s, r)| self.got[r][s] == 0).collect()
    }

    /// Pairs where some, not all, arrived.
    pub fn partial(&self) -> Vec<(usize, usize)> {
        self.pairs()
            .filter(|&(s, r)| self.got[r][s] > 0 && self.got[r][s] < self.sent)
            .collect()
    }
}

/// One step of the rate test: rank 0 multicast `sent` datagrams of the round's size at
/// `target_mbps` (it managed `achieved_mbps`); `got[r]` arrived at rank `r`.
#[derive(Clone, Debug, PartialEq)]
pub struct RateStep {
    pub target_mbps: u64,
    pub achieved_mbps: f64,
    pub sent: u32,
    pub got: Vec<u32>,
}

/// What one host heard of IGMP queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuerierWatch {
    pub host: String,
    pub listened_ms: u64,
    /// Sources of membership queries heard.
    pub heard: Vec<Ipv4Addr>,
    /// Why it could not listen (a raw socket needs root or CAP_NET_RAW).
    pub error: Option<String>,
}

/// Everything the job measured.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResults {
    pub ranks: Vec<RankInfo>,
    pub hosts: Vec<HostSection>,
    pub group: Ipv4Addr,
    pub ports: (u16, u16),
    pub ttl: u8,
    /// Small datagrams, one round per port tried (the ends of `MPICAST_PORT`).
    pub small: Vec<Round>,
    /// Datagrams of the job's largest size, on the first port.
    pub large: Option<Round>,
    /// Small datagrams again at a higher TTL, when pairs on different hosts failed.
    pub retry: Option<Round>,
    pub rate_size: usize,
    pub link_mbps: Option<u64>,
    pub rates: Vec<RateStep>,
    pub unicast: Option<Round>,
    pub queriers: Vec<QuerierWatch>,
    /// `--long`: the seconds waited, and small datagrams after it.
    pub after_long: Option<(u64, Round)>,
}

impl JobResults {
    fn who(&self, r: usize) -> String {
        format!("rank {r} ({})", self.ranks[r].host)
    }

    fn same_host(&self, a: usize, b: usize) -> bool {
        self.ranks[a].host == self.ranks[b].host
    }

    fn hosts_of(&self, ranks: &[usize]) -> String {
        let mut hs: Vec<&str> = ranks.iter().map(|&r| self.ranks[r].host.as_str()).collect();
        hs.sort_unstable();
        hs.dedup();
        hs.join(", ")
    }

    fn ranks_text(&self, ranks: &[usize]) -> String {
        let rs: Vec<u32> = ranks.iter().map(|&r| r as u32).collect();
        format!(
            "{} {} ({})",
            if rs.len() == 1 { "rank" } else { "ranks" },
            rank_list(&rs)
                .trim_start_matches("ranks ")
                .trim_start_matches("rank "),
            self.hosts_of(ranks)
        )
    }

    fn port_range(&self) -> String {
        if self.ports.0 == self.ports.1 {
            self.ports.0.to_string()
        } else {
            format!("{}-{}", self.ports.0, self.ports.1)
        }
    }

    /// Whether rank `r`'s loss in the lowest rate step was at least `share`.
    fn lossy_at_low_rate(&self, r: usize, share: f64) -> Option<f64> {
        let st = self.rates.first()?;
        if st.sent == 0 || r == 0 || !self.small.first()?.took_part[r] {
            return None;
        }
        let loss = 1.0 - f64::from(st.got[r].min(st.sent)) / f64::from(st.sent);
        (loss >= share).then_some(loss)
    }
}

/// The job's findings: each host's own (named with its host), then those of the job. Problems
/// first.
pub fn diagnose(j: &JobResults) -> Vec<Finding> {
    let mut out = Vec::new();
    for h in &j.hosts {
        for f in &h.findings {
            let mut f = f.clone();
            f.what = format!("{}: {}", h.host, f.what);
            out.push(f);
        }
    }
    let n = j.ranks.len();
    let cant: Vec<usize> = (0..n)
        .filter(|&r| j.ranks[r].join_error.is_some())
        .collect();
    if !cant.is_empty() {
        let why = j.ranks[cant[0]].join_error.clone().unwrap_or_default();
        out.push(problem(
            "no-join",
            format!(
                "{} could not join the test group: {why}",
                j.ranks_text(&cant)
            ),
            "see that host's findings above (its interface); mpicast falls back to the host \
             MPI on every communicator that holds such a rank"
                .into(),
        ));
    }
    mtus(j, &mut out);
    hearing(j, &mut out);
    if let (Some(l), Some(s)) = (&j.large, j.small.first()) {
        let too_big: Vec<(usize, usize)> = l
            .silent()
            .into_iter()
            .filter(|&(a, b)| s.got[b][a] > 0)
            .collect();
        if !too_big.is_empty() {
            out.push(problem(
                "path-mtu",
                format!(
                    "datagrams of {} bytes (the largest the job's MTUs allow) do not get through \
                     where small ones do, {}: a link or router on the way has a smaller MTU than \
                     the hosts' interfaces, or drops fragments",
                    l.size,
                    pair_list(j, &too_big)
                ),
                format!(
                    "mpicast copes by itself: each communicator's setup also tries datagrams of \
                     {} bytes and uses the largest that reaches every rank (one message says \
                     which), and a communicator where this starts in mid-job moves to smaller \
                     datagrams; for full-size datagrams (fewer per byte), give the path the \
                     hosts' MTU",
                    rungs_text()
                ),
            ));
        }
    }
    loss(j, &mut out);
    if let Some(u) = &j.unicast {
        let silent = u.silent();
        if !silent.is_empty() {
            out.push(problem(
                "unicast-blocked",
                format!(
                    "UDP between ranks' own addresses does not arrive, {}: the repairs, \
                     acknowledgements and releases of mpicast travel that way, so broadcasts \
                     would stall",
                    pair_list(j, &silent)
                ),
                "allow UDP between the hosts' addresses on the multicast interface (any port: \
                 the library's unicast sockets use ephemeral ports), e.g. nft add rule inet \
                 filter input ip saddr <the hosts' subnet> udp accept"
                    .into(),
            ));
        }
    }
    querier(j, &mut out);
    out.sort_by_key(|f| f.severity);
    out
}

fn pair_list(j: &JobResults, pairs: &[(usize, usize)]) -> String {
    let shown: Vec<String> = pairs
        .iter()
        .take(4)
        .map(|&(s, r)| format!("{} to {}", j.who(s), j.who(r)))
        .collect();
    let more = pairs.len().saturating_sub(shown.len());
    if more > 0 {
        format!("from {} and {more} more pairs", shown.join(", "))
    } else {
        format!("from {}", shown.join(", "))
    }
}

fn mtus(j: &JobResults, out: &mut Vec<Finding>) {
    let known: Vec<(usize, u32)> = j
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.mtu > 0 && r.iface.is_some())
        .map(|(i, r)| (i, r.mtu))
        .collect();
    let Some(&(_, max)) = known.iter().max_by_key(|(_, m)| *m) else {
        return;
    };
    let small: Vec<usize> = known
        .iter()
        .filter(|(_, m)| *m < max)
        .map(|(i, _)| *i)
        .collect();
    if small.is_empty() {
        return;
    }
    let min = known.iter().map(|(_, m)| *m).min().unwrap_or(max);
    let payload = j
        .ranks
        .iter()
        .filter(|r| r.payload > 0)
        .map(|r| r.payload)
        .min()
        .unwrap_or(0);
    out.push(warning(
        "mtu-differs",
        format!(
            "the multicast interfaces' MTUs differ: {} {} MTU {min}, the others up to {max}; \
             mpicast cuts every datagram of the job to the smallest ({payload} bytes of UDP \
             payload), so the hosts with the larger MTU send more datagrams than they could",
            j.hosts_of(&small),
            if small.len() == 1 { "has" } else { "have" }
        ),
        format!(
            "give every host's interface the same MTU (ip link set dev IFACE mtu {max} on {})",
            j.hosts_of(&small)
        ),
    ));
}

/// Who hears whom: the ranks that hear nobody, those nobody hears, pairs across hosts that
/// a higher TTL would join, and what is left.
fn hearing(j: &JobResults, out: &mut Vec<Finding>) {
    let Some(first) = j.small.first() else {
        return;
    };
    let n = first.n();
    let took: Vec<usize> = (0..n).filter(|&r| first.took_part[r]).collect();
    if took.len() < 2 {
        return;
    }
    let mut silent_any: Vec<(usize, usize)> = Vec::new();
    for rd in &j.small {
        for p in rd.silent() {
            if !silent_any.contains(&p) {
                silent_any.push(p);
            }
        }
    }
    if silent_any.is_empty() {
        return;
    }
    let before = out.len();
    hearing_findings(j, &took, silent_any, out);
    // With --long: pairs silent at the start that heard each other after the wait.
    if let Some((secs, after)) = &j.after_long {
        for f in out[before..].iter_mut() {
            f.what.push_str(&format!(
                "; after the {secs} s wait of --long {}",
                if after.silent().is_empty() {
                    "every pair heard each other: the network learned the group late (a \
                     snooping switch whose querier had just started?), too late for a job's \
                     start"
                } else {
                    "some pairs still heard nothing"
                }
            ));
        }
    }
}

fn hearing_findings(
    j: &JobResults,
    took: &[usize],
    mut silent_any: Vec<(usize, usize)>,
    out: &mut Vec<Finding>,
) {
    let cross: Vec<(usize, usize)> = silent_any
        .iter()
        .copied()
        .filter(|&(s, r)| !j.same_host(s, r))
        .collect();
    // A higher TTL joined the hosts: the TTL is the cause.
    if let Some(rt) = &j.retry {
        let fixed: Vec<(usize, usize)> = cross
            .iter()
            .copied()
            .filter(|&(s, r)| rt.got[r][s] > 0)
            .collect();
        if !fixed.is_empty() {
            let fix = if j.ttl == 0 {
                "MPICAST_TTL=1 (hosts on one segment; add one per router between them)".to_string()
            } else {
                format!(
                    "MPICAST_TTL={} or more: one more than the routers between the hosts (it \
                     worked with {})",
                    j.ttl + 1,
                    rt.ttl
                )
            };
            out.push(problem(
                "ttl",
                format!(
                    "multicast with MPICAST_TTL={} does not reach other hosts ({}), and with \
                     TTL {} it does{}",
                    j.ttl,
                    pair_list(j, &fixed),
                    rt.ttl,
                    if j.ttl == 0 {
                        ": TTL 0 keeps every datagram on its own host"
                    } else {
                        ": a router on the way counts the TTL down to 0"
                    }
                ),
                fix,
            ));
            silent_any.retain(|p| !fixed.contains(p));
            if silent_any.is_empty() {
                return;
            }
        }
    }
    let hears_none: Vec<usize> = took
        .iter()
        .copied()
        .filter(|&r| {
            took.iter()
                .filter(|&&s| s != r && !j.same_host(s, r))
                .all(|&s| silent_any.contains(&(s, r)))
                && took.iter().any(|&s| s != r && !j.same_host(s, r))
        })
        .collect();
    let heard_by_none: Vec<usize> = took
        .iter()
        .copied()
        .filter(|&s| {
            took.iter()
                .filter(|&&r| r != s && !j.same_host(s, r))
                .all(|&r| silent_any.contains(&(s, r)))
                && took.iter().any(|&r| r != s && !j.same_host(s, r))
        })
        .collect();
    // Nobody on another host hears anybody: nothing crosses between the hosts.
    if hears_none.len() == took.len() {
        out.push(problem(
            "no-crossing",
            format!(
                "no multicast gets from any host to another ({} pairs silent){}; ranks on one \
                 host hear each other",
                silent_any.len(),
                ports_note(j, &silent_any)
            ),
            format!(
                "check that MPICAST_IFACE names the interface that joins the hosts; that \
                 switches pass multicast (IGMP snooping needs a querier on the segment: \
                 `mpicast doctor --long`); that no firewall drops UDP to ports {} (nft add rule \
                 inet filter input udp dport {} accept)",
                j.port_range(),
                j.port_range()
            ),
        ));
        return;
    }
    let mut explained: Vec<(usize, usize)> = Vec::new();
    let deaf: Vec<usize> = hears_none
        .iter()
        .copied()
        .filter(|r| !heard_by_none.contains(r))
        .collect();
    if !deaf.is_empty() {
        let pairs: Vec<(usize, usize)> = silent_any
            .iter()
            .copied()
            .filter(|p| deaf.contains(&p.1))
            .collect();
        out.push(problem(
            "hears-nothing",
            format!(
                "{} {} no multicast from the other hosts{}, while {} {} heard by them and the \
                 others hear each other: something on {} drops incoming multicast, most often \
                 a firewall rule on the UDP ports",
                j.ranks_text(&deaf),
                if deaf.len() == 1 { "hears" } else { "hear" },
                ports_note(j, &pairs),
                if deaf.len() == 1 { "it" } else { "they" },
                if deaf.len() == 1 { "is" } else { "are" },
                j.hosts_of(&deaf)
            ),
            format!(
                "on {}: allow UDP to ports {} (nft add rule inet filter input udp dport {} \
                 accept, or iptables -I INPUT -p udp --dport {} -j ACCEPT); check rp_filter \
                 (sysctl net.ipv4.conf.all.rp_filter) if the host has several interfaces",
                j.hosts_of(&deaf),
                j.port_range(),
                j.port_range(),
                j.port_range().replace('-', ":")
            ),
        ));
        explained.extend(pairs);
    }
    let mute: Vec<usize> = heard_by_none
        .iter()
        .copied()
        .filter(|r| !hears_none.contains(r))
        .collect();
    if !mute.is_empty() {
        let pairs: Vec<(usize, usize)> = silent_any
            .iter()
            .copied()
            .filter(|p| mute.contains(&p.0))
            .collect();
        out.push(problem(
            "heard-by-nobody",
            format!(
                "no other host hears the multicast of {}{}, though {} the others",
                j.ranks_text(&mute),
                ports_note(j, &pairs),
                if mute.len() == 1 {
                    "it hears"
                } else {
                    "they hear"
                }
            ),
            format!(
                "on {}: an output firewall rule (nft list ruleset; iptables -L OUTPUT), or the \
                 datagrams leave by another interface than MPICAST_IFACE (ip route get {})",
                j.hosts_of(&mute),
                j.group
            ),
        ));
        explained.extend(pairs);
    }
    let both: Vec<usize> = hears_none
        .iter()
        .copied()
        .filter(|r| heard_by_none.contains(r))
        .collect();
    if !both.is_empty() {
        let pairs: Vec<(usize, usize)> = silent_any
            .iter()
            .copied()
            .filter(|p| both.contains(&p.0) || both.contains(&p.1))
            .collect();
        out.push(problem(
            "cut-off",
            format!(
                "{} neither {} nor {} heard by the other hosts{}, though they hear each other",
                j.ranks_text(&both),
                if both.len() == 1 {
                    "hears them"
                } else {
                    "hear them"
                },
                if both.len() == 1 { "is" } else { "are" },
                ports_note(j, &pairs)
            ),
            format!(
                "on {}: is the multicast interface up and on the same network as the others \
                 (see the host's findings)? a firewall dropping UDP to ports {} both ways?",
                j.hosts_of(&both),
                j.port_range()
            ),
        ));
        explained.extend(pairs);
    }
    let rest: Vec<(usize, usize)> = silent_any
        .iter()
        .copied()
        .filter(|p| !explained.contains(p))
        .collect();
    if !rest.is_empty() {
        out.push(problem(
            "pairs-silent",
            format!(
                "multicast does not arrive {}{}",
                pair_list(j, &rest),
                ports_note(j, &rest)
            ),
            "a switch or router between those hosts filters multicast (IGMP snooping without a \
             querier, a multicast ACL): `mpicast doctor --long`, and the switch's IGMP settings"
                .into(),
        ));
    }
}

/// The ports of the hearing rounds on which pair `p` (sender, receiver) heard nothing.
fn ports_of(j: &JobResults, p: (usize, usize)) -> Vec<u16> {
    j.small
        .iter()
        .filter(|rd| rd.got[p.1][p.0] == 0 && rd.took_part[p.0] && rd.took_part[p.1])
        .map(|rd| rd.port)
        .collect()
}

/// For a message about `pairs`: which ports they failed on, when not on every port tried.
fn ports_note(j: &JobResults, pairs: &[(usize, usize)]) -> String {
    let mut ps: Vec<u16> = pairs.iter().flat_map(|&p| ports_of(j, p)).collect();
    ps.sort_unstable();
    ps.dedup();
    if ps.len() >= j.small.len() {
        String::new()
    } else {
        format!(
            " (on port {}; the other port{} tried worked)",
            ps.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if j.small.len() - ps.len() == 1 {
                ""
            } else {
                "s"
            }
        )
    }
}

/// Loss at the lowest rate: not congestion.
fn loss(j: &JobResults, out: &mut Vec<Finding>) {
    let Some(st) = j.rates.first() else {
        return;
    };
    let lossy: Vec<(usize, f64)> = (1..j.ranks.len())
        .filter_map(|r| j.lossy_at_low_rate(r, 0.01).map(|l| (r, l)))
        .collect();
    // Some loss, not all: all lost is a hearing problem, named above.
    let lossy: Vec<(usize, f64)> = lossy.into_iter().filter(|(_, l)| *l < 1.0).collect();
    if lossy.is_empty() {
        return;
    }
    let list: Vec<String> = lossy
        .iter()
        .map(|&(r, l)| format!("{} {:.1} %", j.who(r), l * 100.0))
        .collect();
    let ranks: Vec<usize> = lossy.iter().map(|(r, _)| *r).collect();
    out.push(warning(
        "loss",
        format!(
            "datagrams from rank 0 are lost even at {} Mbit/s, the lowest rate tried: {}; at a \
             rate that low it is not congestion but a faulty link or port, or a filter dropping \
             a share of the datagrams. mpicast repairs what is lost (the data stay right), but \
             each repair costs a round trip",
            st.target_mbps,
            list.join(", ")
        ),
        format!(
            "on {}: the interface's error counters (ip -s link, ethtool -S), the cable and \
             switch port, and firewall rules with a random or rate match (nft list ruleset)",
            j.hosts_of(&ranks)
        ),
    ));
}

fn querier(j: &JobResults, out: &mut Vec<Finding>) {
    let Some((secs, after)) = &j.after_long else {
        return;
    };
    let heard: Vec<&QuerierWatch> = j.queriers.iter().filter(|q| !q.heard.is_empty()).collect();
    let listened = j.queriers.iter().any(|q| q.error.is_none());
    // One host (loopback, or a single machine) has no switch in between.
    if heard.is_empty() && listened && j.hosts.len() > 1 {
        out.push(warning(
            "no-querier",
            format!(
                "no IGMP membership query was heard in {secs} s: if a switch between the hosts \
                 snoops IGMP, it stops forwarding a group some minutes after the last query \
                 (about 260 s), and multicast stops in the middle of a long job"
            ),
            "enable an IGMP querier on the segment (the switch's `ip igmp snooping querier`, or \
             on a Linux bridge: ip link set dev BRIDGE type bridge mcast_querier 1), or turn \
             IGMP snooping off for that VLAN"
                .into(),
        ));
    }
    let first = j.small.first();
    let lost: Vec<(usize, usize)> = after
        .silent()
        .into_iter()
        .filter(|&(s, r)| first.is_some_and(|f| f.got[r][s] > 0))
        .collect();
    if !lost.is_empty() {
        out.push(problem(
            "group-expired",
            format!(
                "multicast that arrived at the start no longer does after {secs} s, {}: a \
                 switch dropped the group (IGMP snooping{})",
                pair_list(j, &lost),
                if heard.is_empty() {
                    " without a querier"
                } else {
                    ""
                }
            ),
            "enable an IGMP querier on the segment, or turn IGMP snooping off for that VLAN".into(),
        ));
    }
}

/// The highest target rate at which no receiver lost anything, and what was reached there.
pub fn loss_free_rate(j: &JobResults) -> Option<(u64, f64)> {
    j.rates
        .iter()
        .filter(|st| {
            st.sent > 0
                && (1..st.got.len())
                    .filter(|&r| j.small.first().is_some_and(|f| f.took_part[r]))
                    .all(|r| st.got[r] >= st.sent)
        })
        .map(|st| (st.target_mbps, st.achieved_mbps))
        .max_by_key(|(t, _)| *t)
}

fn matrix_text(j: &JobResults, rd: &Round) -> String {
    let n = rd.n();
    let mut s = String::new();
    let silent = rd.silent();
    let partial = rd.partial();
    if rd.port == 0 {
        let _ = writeln!(
            s,
            "{} ({} bytes between the ranks' own addresses, {} per pair{}):",
            rd.what,
            rd.size,
            rd.sent,
            if rd.hub.is_some() {
                ", pairs with rank 0 only"
            } else {
                ""
            }
        );
    } else {
        let _ = writeln!(
            s,
            "{} ({} bytes, port {}, TTL {}, {} per sender):",
            rd.what, rd.size, rd.port, rd.ttl, rd.sent
        );
    }
    if n <= 16 {
        let _ = write!(s, "    to\\from");
        for c in 0..n {
            let _ = write!(s, "{c:>5}");
        }
        s.push('\n');
        for r in 0..n {
            let _ = write!(s, "    {r:>7}");
            for c in 0..n {
                let cell = if r == c {
                    "-".to_string()
                } else if !rd.took_part[r] || !rd.took_part[c] {
                    "?".to_string()
                } else {
                    rd.got[r][c].to_string()
                };
                let _ = write!(s, "{cell:>5}");
            }
            s.push('\n');
        }
    }
    if silent.is_empty() && partial.is_empty() {
        let _ = writeln!(s, "    every pair: all {} arrived", rd.sent);
    } else {
        if !silent.is_empty() {
            let _ = writeln!(s, "    nothing arrived {}", pair_list(j, &silent));
        }
        if !partial.is_empty() {
            let _ = writeln!(s, "    some lost {}", pair_list(j, &partial));
        }
    }
    s
}

/// The text report.
pub fn to_text(j: &JobResults, findings: &[Finding]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mpicast doctor: {} ranks on {} host{}; test group {} ports {}, MPICAST_TTL={}\n",
        j.ranks.len(),
        j.hosts.len(),
        if j.hosts.len() == 1 { "" } else { "s" },
        j.group,
        j.small
            .iter()
            .map(|r| r.port.to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        j.ttl
    );
    for h in &j.hosts {
        let rs: Vec<u32> = h.ranks.clone();
        let _ = writeln!(s, "host {} ({}):", h.host, rank_list(&rs));
        s.push_str(&h.rows);
        s.push('\n');
    }
    for rd in j.small.iter().chain(j.large.iter()).chain(j.retry.iter()) {
        s.push_str(&matrix_text(j, rd));
        s.push('\n');
    }
    if !j.rates.is_empty() {
        let _ = writeln!(
            s,
            "loss by rate (rank 0 multicasts {}-byte datagrams; link {}):",
            j.rate_size,
            j.link_mbps
                .map_or("speed unknown".to_string(), |m| format!("{m} Mbit/s"))
        );
        for st in &j.rates {
            let worst = (1..st.got.len())
                .filter(|&r| j.small.first().is_some_and(|f| f.took_part[r]))
                .map(|r| {
                    (
                        r,
                        1.0 - f64::from(st.got[r].min(st.sent)) / f64::from(st.sent.max(1)),
                    )
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let _ = writeln!(
                s,
                "    {:>6} Mbit/s asked, sent at {:>7.1}: {} datagrams, {}",
                st.target_mbps,
                st.achieved_mbps,
                st.sent,
                match worst {
                    Some((r, l)) if l > 0.0 =>
                        format!("worst loss {:.1} % at {}", l * 100.0, j.who(r)),
                    Some(_) => "no loss".to_string(),
                    None => "no receiver".to_string(),
                }
            );
        }
        match loss_free_rate(j) {
            Some((t, a)) => {
                let _ = writeln!(
                    s,
                    "    highest rate without loss: {a:.0} Mbit/s (asked {t})\n"
                );
            }
            None => s.push_str("    every rate tried lost datagrams\n\n"),
        }
    }
    if let Some(u) = &j.unicast {
        s.push_str(&matrix_text(j, u));
        s.push('\n');
    }
    s.push_str("IGMP querier:\n");
    for q in &j.queriers {
        let _ = writeln!(
            s,
            "    {}: {}",
            q.host,
            match (&q.error, q.heard.is_empty()) {
                (Some(e), _) => format!("not checked ({e})"),
                (None, true) => format!("no query heard in {:.1} s", q.listened_ms as f64 / 1000.0),
                (None, false) => format!(
                    "queries heard from {}",
                    q.heard
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        );
    }
    match &j.after_long {
        Some((secs, rd)) => {
            let _ = writeln!(s, "\nafter {secs} s (--long):");
            s.push_str(&matrix_text(j, rd));
        }
        None => s.push_str(
            "    (queries come every 125 s or so: `--long` listens for one interval and checks \
             that the group still arrives after it)\n",
        ),
    }
    s.push('\n');
    for f in findings {
        s.push_str(&finding_text(f));
    }
    let problems = findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count();
    let warnings = findings.len() - problems;
    let _ = writeln!(
        s,
        "{problems} problem{}, {warnings} warning{}. {}",
        if problems == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
        if problems == 0 {
            "Multicast works between every pair of ranks."
        } else {
            "Multicast does not work between every pair of ranks, or loses data."
        }
    );
    s
}

fn round_json(rd: &Round) -> String {
    let rows: Vec<String> = rd
        .got
        .iter()
        .map(|row| {
            format!(
                "[{}]",
                row.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    format!(
        "{{\"what\": {}, \"port\": {}, \"ttl\": {}, \"size\": {}, \"sent\": {}, \"took_part\": \
         [{}], \"got\": [{}]}}",
        json_str(&rd.what),
        rd.port,
        rd.ttl,
        rd.size,
        rd.sent,
        rd.took_part
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        rows.join(", ")
    )
}

fn opt_json(rd: Option<&Round>) -> String {
    rd.map_or_else(|| "null".into(), round_json)
}

/// The JSON report: one object.
pub fn to_json(j: &JobResults, findings: &[Finding]) -> String {
    let mut s = String::from("{\n");
    let problems = findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count();
    let _ = writeln!(s, "  \"ranks\": {},", j.ranks.len());
    let _ = writeln!(s, "  \"group\": {},", json_str(&j.group.to_string()));
    let _ = writeln!(s, "  \"ports\": [{}, {}],", j.ports.0, j.ports.1);
    let _ = writeln!(s, "  \"ttl\": {},", j.ttl);
    let ranks: Vec<String> = j
        .ranks
        .iter()
        .map(|r| {
            format!(
                "{{\"host\": {}, \"iface\": {}, \"address\": {}, \"mtu\": {}, \"payload\": {}, \
                 \"join_error\": {}}}",
                json_str(&r.host),
                r.iface.as_ref().map_or("null".into(), |(n, _)| json_str(n)),
                r.iface
                    .as_ref()
                    .map_or("null".into(), |(_, a)| json_str(&a.to_string())),
                r.mtu,
                r.payload,
                r.join_error.as_deref().map_or("null".into(), json_str)
            )
        })
        .collect();
    let _ = writeln!(s, "  \"rank_info\": [{}],", ranks.join(", "));
    let hosts: Vec<String> = j
        .hosts
        .iter()
        .map(|h| {
            format!(
                "{{\"host\": {}, \"ranks\": [{}], \"facts\": {}}}",
                json_str(&h.host),
                h.ranks
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                h.json.trim_end()
            )
        })
        .collect();
    let _ = writeln!(s, "  \"hosts\": [{}],", hosts.join(",\n    "));
    let _ = writeln!(
        s,
        "  \"multicast\": [{}],",
        j.small
            .iter()
            .map(round_json)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(s, "  \"full_size\": {},", opt_json(j.large.as_ref()));
    let _ = writeln!(s, "  \"ttl_retry\": {},", opt_json(j.retry.as_ref()));
    let steps: Vec<String> = j
        .rates
        .iter()
        .map(|st| {
            format!(
                "{{\"target_mbps\": {}, \"achieved_mbps\": {:.1}, \"sent\": {}, \"got\": [{}]}}",
                st.target_mbps,
                st.achieved_mbps,
                st.sent,
                st.got
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  \"rates\": {{\"size\": {}, \"link_mbps\": {}, \"loss_free_mbps\": {}, \"steps\": [{}]}},",
        j.rate_size,
        j.link_mbps.map_or("null".into(), |m| m.to_string()),
        loss_free_rate(j).map_or("null".into(), |(_, a)| format!("{a:.1}")),
        steps.join(", ")
    );
    let _ = writeln!(s, "  \"unicast\": {},", opt_json(j.unicast.as_ref()));
    let qs: Vec<String> = j
        .queriers
        .iter()
        .map(|q| {
            format!(
                "{{\"host\": {}, \"listened_ms\": {}, \"heard\": [{}], \"error\": {}}}",
                json_str(&q.host),
                q.listened_ms,
                q.heard
                    .iter()
                    .map(|a| json_str(&a.to_string()))
                    .collect::<Vec<_>>()
                    .join(", "),
                q.error.as_deref().map_or("null".into(), json_str)
            )
        })
        .collect();
    let _ = writeln!(s, "  \"queriers\": [{}],", qs.join(", "));
    let _ = writeln!(
        s,
        "  \"after_long\": {},",
        j.after_long
            .as_ref()
            .map_or("null".into(), |(secs, rd)| format!(
                "{{\"seconds\": {secs}, \"round\": {}}}",
                round_json(rd)
            ))
    );
    let _ = writeln!(s, "  \"problems\": {problems},");
    let _ = writeln!(s, "  \"warnings\": {},", findings.len() - problems);
    let fs: Vec<String> = findings
        .iter()
        .map(|x| {
            format!(
                "{{\"severity\": {}, \"code\": {}, \"what\": {}, \"fix\": {}}}",
                json_str(&x.severity.to_string()),
                json_str(x.code),
                json_str(&x.what),
                json_str(&x.fix)
            )
        })
        .collect();
    let _ = writeln!(s, "  \"findings\": [{}]", fs.join(",\n    "));
    s.push_str("}\n");
    s
}

/// Fixed-layout encodings of what ranks exchange (lists of u32), and of strings, for the
/// allgathers of `doctor_run`.
pub mod codec {
    /// Strings joined by the unit separator (never in host names or messages).
    pub fn join(fields: &[&str]) -> Vec<u8> {
        fields.join("\u{1f}").into_bytes()
    }

    pub fn split(bytes: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(bytes)
            .split('\u{1f}')
            .map(str::to_string)
            .collect()
    }

    pub fn u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    pub fn from_u32s(b: &[u8]) -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
}

/// "8972, 1472 and 548": the rungs of the library's ladder of datagram sizes
/// (`wire::pmtu::RUNGS`), for the path-MTU finding.
fn rungs_text() -> String {
    let r: Vec<String> = crate::wire::pmtu::RUNGS
        .iter()
        .map(|n| n.to_string())
        .collect();
    match r.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => r.join(""),
    }
}

#[cfg(test)]
mod tests;
