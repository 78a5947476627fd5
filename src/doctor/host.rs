//! The diagnosis of one host: from its [`HostFacts`], the problems that keep multicast from
//! working or lose data, and the warnings that slow it down or may bite on a job over several
//! hosts, each with the fix in plain words. Pure.

use std::fmt;

use crate::net::host_facts::{HostFacts, IfaceState};
use crate::net::udp_payload_for_mtu;
use crate::wire::packet::{frag_for, MIN_FRAG, OVERHEAD};

/// IPv4 header without options plus the UDP header (as `net` counts them).
const IP_UDP_HEADERS: usize = 28;

/// Smallest MTU that carries mpicast's smallest datagram unfragmented.
pub const MIN_MTU: u32 = (IP_UDP_HEADERS + OVERHEAD + MIN_FRAG) as u32;

/// The groups one socket of mpicast joins: each communicator that multicasts has a socket of
/// its own joined to one group (`net::McastSocket`), and `net.ipv4.igmp_max_memberships`
/// bounds the groups per socket, so any value from 1 up is enough.
pub const GROUPS_PER_SOCKET: u64 = 1;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Multicast will not work on this host, or will lose data.
    Problem,
    /// Multicast works, but slower than it could, or only under conditions named in the text.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Problem => "problem",
            Severity::Warning => "warning",
        })
    }
}

/// One thing found, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// A short stable name (`iface-down`, `rmem-max`, ...) for scripts and tests.
    pub code: &'static str,
    /// What is wrong and what it does to mpicast.
    pub what: String,
    /// The change that cures it: the command, sysctl or variable to set.
    pub fix: String,
}

/// Every code [`diagnose`] gives, so that a finding that travelled as text between ranks gets
/// its code back.
pub const CODES: &[&str] = &[
    "frag-capped",
    "iface-down",
    "iface-no-carrier",
    "iface-no-ipv4",
    "iface-no-multicast",
    "iface-refused",
    "iface-unmatched",
    "igmp-memberships",
    "loopback",
    "mtu-too-small",
    "no-route",
    "not-checked",
    "rcvbuf-granted",
    "rmem-max",
    "rp-filter-strict",
    "wmem-max",
];

/// The code of [`CODES`] spelled `s` (`"other"` for none).
pub fn code_named(s: &str) -> &'static str {
    CODES.iter().find(|c| **c == s).copied().unwrap_or("other")
}

/// A [`Severity::Problem`] finding.
pub fn problem(code: &'static str, what: String, fix: String) -> Finding {
    Finding {
        severity: Severity::Problem,
        code,
        what,
        fix,
    }
}

/// A [`Severity::Warning`] finding.
pub fn warning(code: &'static str, what: String, fix: String) -> Finding {
    Finding {
        severity: Severity::Warning,
        code,
        what,
        fix,
    }
}

/// The data bytes per datagram the library would use on this host alone (the job uses the
/// smallest over its ranks), for an interface of MTU `mtu`.
pub fn frag_on_this_host(mtu: u32, frag_bytes: Option<usize>) -> usize {
    frag_for(udp_payload_for_mtu(mtu), frag_bytes.unwrap_or(0))
}

/// The findings for one host, problems first. `expected_hosts`: how many hosts the job spans,
/// when known (`None`: not known, as for `mpicast doctor --local`).
pub fn diagnose(f: &HostFacts, expected_hosts: Option<usize>) -> Vec<Finding> {
    let mut out = Vec::new();
    let st = f.dev_state();
    if let Err(e) = &f.chosen {
        no_interface(f, st, e, &mut out);
    }
    if let Some(st) = st {
        device(f, st, expected_hosts, &mut out);
    }
    buffers(f, &mut out);
    if f.igmp_max_memberships == Some(0) {
        out.push(problem(
            "igmp-memberships",
            "net.ipv4.igmp_max_memberships is 0: no socket may join a multicast group, so \
             mpicast cannot join any (it joins one group per socket, one socket per \
             communicator)"
                .into(),
            "sysctl -w net.ipv4.igmp_max_memberships=20 (the kernel's default)".into(),
        ));
    }
    let unread: Vec<&str> = [
        (f.rmem_max.is_none(), "net.core.rmem_max"),
        (f.wmem_max.is_none(), "net.core.wmem_max"),
        (
            f.igmp_max_memberships.is_none(),
            "net.ipv4.igmp_max_memberships",
        ),
        (
            f.rp_filter_all.is_none() || (st.is_some() && f.rp_filter_iface.is_none()),
            "rp_filter",
        ),
        (f.rcvbuf_granted.is_none(), "the socket buffer granted"),
    ]
    .into_iter()
    .filter_map(|(missing, name)| missing.then_some(name))
    .collect();
    if !unread.is_empty() {
        out.push(warning(
            "not-checked",
            format!(
                "could not read {} (is /proc mounted?): not checked",
                unread.join(", ")
            ),
            "run the doctor where /proc/sys is readable (outside a restricted container)".into(),
        ));
    }
    out.sort_by_key(|x| x.severity);
    out
}

/// The library finds no interface: say why, from what the device (if any) looks like.
fn no_interface(f: &HostFacts, st: Option<&IfaceState>, err: &str, out: &mut Vec<Finding>) {
    match (&f.iface_spec, st) {
        // The device exists: its own checks (down, no address) say what is wrong with it.
        (_, Some(st)) if !st.up || st.addrs.is_empty() => {}
        (Some(spec), None) => out.push(problem(
            "iface-unmatched",
            format!("MPICAST_IFACE={spec} matches no interface of this host"),
            format!(
                "set MPICAST_IFACE to the interface the hosts share (a name, an address, or a \
                 subnet such as 10.1.0.0/16 that matches on every host); this host has: {}",
                candidates(f)
            ),
        )),
        (None, None) => out.push(problem(
            "no-route",
            match &f.group_route {
                None => "MPICAST_IFACE is not set and no route covers the multicast groups \
                         (no multicast route, no default route): the library cannot choose an \
                         interface"
                    .to_string(),
                Some(r) => format!(
                    "MPICAST_IFACE is not set and the route to the groups uses {}, which this \
                     host does not list",
                    r.dev
                ),
            },
            format!(
                "set MPICAST_IFACE to the interface the hosts share, or add a multicast route \
                 (ip route add 224.0.0.0/4 dev IFACE); this host has: {}",
                candidates(f)
            ),
        )),
        (_, Some(_)) => out.push(problem(
            "iface-refused",
            format!(
                "the library refuses the interface: {}",
                err.trim_start_matches("mpicast: ")
            ),
            format!("set MPICAST_IFACE to one of: {}", candidates(f)),
        )),
    }
}

/// The checks of the device the library would use (or was asked to).
fn device(f: &HostFacts, st: &IfaceState, expected_hosts: Option<usize>, out: &mut Vec<Finding>) {
    let d = &st.name;
    if !st.up {
        out.push(problem(
            "iface-down",
            format!("interface {d} is down: nothing is sent or received on it"),
            format!("ip link set dev {d} up (or set MPICAST_IFACE to an interface that is up)"),
        ));
    } else if !st.running {
        out.push(problem(
            "iface-no-carrier",
            format!("interface {d} is up but its link is not (no carrier)"),
            format!("check the cable or switch port of {d} (ip link show dev {d})"),
        ));
    }
    // Loopback carries multicast without the flag (Linux leaves it off there): the tests of
    // the library multicast on it.
    if !st.multicast && !st.loopback {
        out.push(problem(
            "iface-no-multicast",
            format!("interface {d} lacks the MULTICAST flag: the kernel will not multicast on it"),
            format!("ip link set dev {d} multicast on"),
        ));
    }
    if st.addrs.is_empty() {
        out.push(problem(
            "iface-no-ipv4",
            format!(
                "interface {d} has no IPv4 address: mpicast joins groups and sends from the \
                 interface's IPv4 address"
            ),
            format!(
                "give {d} an address (ip addr add ADDRESS/PREFIX dev {d}), or set MPICAST_IFACE \
                 to an interface that has one: {}",
                candidates(f)
            ),
        ));
    }
    if st.loopback && expected_hosts != Some(1) {
        out.push(warning(
            "loopback",
            format!(
                "the loopback interface {d} is chosen: multicast on it reaches only the ranks \
                 on this host{}",
                match expected_hosts {
                    Some(n) => format!(", and the job spans {n} hosts"),
                    None => " (fine for a job on one host)".to_string(),
                }
            ),
            format!(
                "for a job over several hosts, set MPICAST_IFACE to the interface they share: {}",
                candidates_beyond_loopback(f)
            ),
        ));
    }
    if st.mtu > 0 && st.mtu < MIN_MTU {
        out.push(problem(
            "mtu-too-small",
            format!(
                "the MTU of {d} is {} bytes, below the {MIN_MTU} that mpicast's smallest \
                 datagram needs ({MIN_FRAG} bytes of data, {OVERHEAD} of header and \
                 authentication, {IP_UDP_HEADERS} of IP and UDP)",
                st.mtu
            ),
            format!("ip link set dev {d} mtu 1500 (on every host)"),
        ));
    } else if st.mtu > 0 {
        let allowed = frag_on_this_host(st.mtu, None);
        if let Some(want) = f.frag_bytes.filter(|&w| w > allowed) {
            out.push(warning(
                "frag-capped",
                format!(
                    "MPICAST_FRAG_BYTES={want} is more than the MTU of {d} ({} bytes) allows: \
                     the library sends {allowed} bytes of data per datagram instead",
                    st.mtu
                ),
                format!(
                    "set MPICAST_FRAG_BYTES={allowed} or leave it unset (auto), or raise the \
                     MTU of {d} on every host (ip link set dev {d} mtu N) if the network \
                     carries it"
                ),
            ));
        }
    }
    let rp = f.rp_filter_all.max(f.rp_filter_iface);
    let others = f
        .ifaces
        .iter()
        .filter(|i| !i.loopback && i.up && !i.addrs.is_empty())
        .count();
    if rp == Some(1) && !st.loopback && others > 1 {
        out.push(warning(
            "rp-filter-strict",
            format!(
                "strict reverse-path filtering on {d} (rp_filter {} for all, {} for {d}; the \
                 kernel applies the larger): a multicast datagram is dropped when the route \
                 back to its sender's address leaves through another interface. It matters on \
                 hosts like this one, with several interfaces, when the other hosts' addresses \
                 on {d} are routed elsewhere (say, the default route on a management network \
                 and no route of the data network's subnet on {d}); then the setup probe fails \
                 and the host MPI carries the broadcasts",
                show(f.rp_filter_all),
                show(f.rp_filter_iface)
            ),
            format!(
                "sysctl -w net.ipv4.conf.{d}.rp_filter=2 (loose: any route back will do; being \
                 the larger value, it wins over all's 1 too)"
            ),
        ));
    }
}

/// Receive and send buffers against `MPICAST_RCVBUF`.
fn buffers(f: &HostFacts, out: &mut Vec<Finding>) {
    let want = f.rcvbuf_wanted;
    let effect_rcv = "and the window (half the smallest receive buffer among the ranks) \
                      shrinks with it: fewer datagrams in flight, slower broadcasts";
    let effect_snd = "so the sender waits for room more often";
    for (name, max, effect) in [
        ("rmem_max", f.rmem_max, effect_rcv),
        ("wmem_max", f.wmem_max, effect_snd),
    ] {
        let Some(max) = max else { continue };
        if (max as usize) < want {
            let kind = if name == "rmem_max" {
                "receive"
            } else {
                "send"
            };
            out.push(warning(
                if name == "rmem_max" {
                    "rmem-max"
                } else {
                    "wmem-max"
                },
                format!(
                    "net.core.{name} is {} ({max} bytes): ranks that do not run as root get a \
                     {kind} buffer of that size instead of the {} (MPICAST_RCVBUF) the library \
                     asks for, {effect}",
                    size(max as usize),
                    size(want)
                ),
                format!(
                    "sysctl -w net.core.{name}={want} (and a line net.core.{name} = {want} in \
                     /etc/sysctl.d/ to keep it), on every host"
                ),
            ));
        }
    }
    // A grant below the request despite a large enough rmem_max (or when forced): another
    // limit (a container's namespace, a cgroup) is in the way.
    if let Some(g) = f.rcvbuf_granted {
        let covered = f.rmem_max.is_some_and(|m| (m as usize) < want) && !f.buffer_forced;
        if g / 2 < want && !covered {
            out.push(warning(
                "rcvbuf-granted",
                format!(
                    "a socket asking for {} of receive buffer was granted {} (getsockopt \
                     reports {g}, twice the usable size), although net.core.rmem_max allows \
                     more",
                    size(want),
                    size(g / 2)
                ),
                "look for a limit of the container or network namespace; or lower \
                 MPICAST_RCVBUF to what is granted"
                    .into(),
            ));
        }
    }
}

fn show(v: Option<u32>) -> String {
    v.map_or_else(|| "?".into(), |v| v.to_string())
}

/// "8 MiB", "208 KiB", "1000 B".
pub fn size(b: usize) -> String {
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b % (1 << 10) == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// "eth0 192.0.2.2 (mtu 1500), lo 127.0.0.1 (mtu 65536), eth1 (down, no IPv4)".
fn candidates(f: &HostFacts) -> String {
    list(f.ifaces.iter())
}

fn candidates_beyond_loopback(f: &HostFacts) -> String {
    let s = list(
        f.ifaces
            .iter()
            .filter(|i| !i.loopback && i.up && !i.addrs.is_empty()),
    );
    if s == NONE {
        "this host has no other interface that is up with an IPv4 address".into()
    } else {
        s
    }
}

const NONE: &str = "no interface";

fn list<'a>(it: impl Iterator<Item = &'a IfaceState>) -> String {
    let mut parts = Vec::new();
    for i in it {
        let mut s = i.name.clone();
        for a in &i.addrs {
            s.push(' ');
            s.push_str(&a.to_string());
        }
        let mut notes = Vec::new();
        if i.mtu > 0 {
            notes.push(format!("mtu {}", i.mtu));
        }
        if !i.up {
            notes.push("down".into());
        }
        if i.addrs.is_empty() {
            notes.push("no IPv4".into());
        }
        if !i.multicast {
            notes.push("no MULTICAST flag".into());
        }
        s.push_str(&format!(" ({})", notes.join(", ")));
        parts.push(s);
    }
    if parts.is_empty() {
        NONE.into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IfaceSpec;
    use crate::net::host_facts::GroupRoute;
    use crate::net::Iface;
    use std::net::Ipv4Addr;

    const ETH0: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    fn dev(name: &str, addr: Option<Ipv4Addr>, mtu: u32) -> IfaceState {
        IfaceState {
            name: name.into(),
            addrs: addr.into_iter().collect(),
            mtu,
            up: true,
            running: true,
            multicast: true,
            loopback: name == "lo",
        }
    }

    /// A healthy host: eth0 chosen by the default route, sysctls raised, rp_filter loose.
    fn healthy() -> HostFacts {
        HostFacts {
            hostname: Some("node1".into()),
            iface_spec: None,
            rcvbuf_wanted: 8 << 20,
            frag_bytes: None,
            ifaces: vec![
                dev("eth0", Some(ETH0), 1500),
                dev("lo", Some(Ipv4Addr::LOCALHOST), 65536),
            ],
            chosen: Ok(Iface {
                name: "eth0".into(),
                index: 2,
                addr: ETH0,
                mtu: 1500,
            }),
            wanted_dev: Some("eth0".into()),
            group_route: Some(GroupRoute {
                group: Ipv4Addr::new(239, 255, 0, 0),
                dev: "eth0".into(),
                dest: Ipv4Addr::UNSPECIFIED,
                prefix: 0,
            }),
            rmem_max: Some(16 << 20),
            wmem_max: Some(16 << 20),
            rcvbuf_granted: Some(16 << 20),
            sndbuf_granted: Some(16 << 20),
            buffer_forced: false,
            rp_filter_all: Some(0),
            rp_filter_iface: Some(2),
            igmp_max_memberships: Some(20),
        }
    }

    fn codes(f: &HostFacts, hosts: Option<usize>) -> Vec<(&'static str, Severity)> {
        diagnose(f, hosts)
            .into_iter()
            .map(|x| (x.code, x.severity))
            .collect()
    }

    fn only(f: &HostFacts, code: &str) -> Finding {
        let all = diagnose(f, Some(4));
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(all[0].code, code, "{all:#?}");
        all[0].clone()
    }

    fn refused(f: &mut HostFacts, why: &str) {
        f.chosen = Err(format!("mpicast: {why}"));
    }

    #[test]
    fn a_healthy_host_has_nothing() {
        assert_eq!(codes(&healthy(), Some(4)), vec![]);
        assert_eq!(codes(&healthy(), None), vec![]);
    }

    #[test]
    fn interface_down() {
        let mut f = healthy();
        f.ifaces[0].up = false;
        f.ifaces[0].running = false;
        refused(&mut f, "MPICAST_IFACE=eth0 matches no up interface");
        f.iface_spec = Some(IfaceSpec::Name("eth0".into()));
        let x = only(&f, "iface-down");
        assert_eq!(x.severity, Severity::Problem);
        assert!(x.fix.contains("ip link set dev eth0 up"), "{}", x.fix);
    }

    #[test]
    fn interface_without_carrier() {
        let mut f = healthy();
        f.ifaces[0].running = false;
        let x = only(&f, "iface-no-carrier");
        assert_eq!(x.severity, Severity::Problem);
    }

    #[test]
    fn interface_without_multicast() {
        let mut f = healthy();
        f.ifaces[0].multicast = false;
        let x = only(&f, "iface-no-multicast");
        assert_eq!(x.severity, Severity::Problem);
        assert_eq!(x.fix, "ip link set dev eth0 multicast on");
    }

    #[test]
    fn interface_without_ipv4() {
        let mut f = healthy();
        f.ifaces[0].addrs.clear();
        f.iface_spec = Some(IfaceSpec::Name("eth0".into()));
        refused(
            &mut f,
            "MPICAST_IFACE=eth0 matches no up interface with an IPv4 address",
        );
        let x = only(&f, "iface-no-ipv4");
        assert_eq!(x.severity, Severity::Problem);
        assert!(x.fix.contains("ip addr add"), "{}", x.fix);
        assert!(
            x.fix.contains("lo 127.0.0.1"),
            "names the candidates: {}",
            x.fix
        );
    }

    #[test]
    fn a_spec_that_matches_nothing_names_the_candidates() {
        let mut f = healthy();
        f.iface_spec = Some(IfaceSpec::Cidr(Ipv4Addr::new(10, 1, 0, 0), 16));
        f.wanted_dev = None;
        refused(&mut f, "MPICAST_IFACE=10.1.0.0/16 matches no up interface");
        let x = only(&f, "iface-unmatched");
        assert_eq!(x.severity, Severity::Problem);
        assert!(x.what.contains("MPICAST_IFACE=10.1.0.0/16"), "{}", x.what);
        assert!(x.fix.contains("eth0 192.0.2.2 (mtu 1500)"), "{}", x.fix);
        assert!(x.fix.contains("lo 127.0.0.1 (mtu 65536)"), "{}", x.fix);
        // A name that no device has.
        f.iface_spec = Some(IfaceSpec::Name("ib0".into()));
        f.wanted_dev = Some("ib0".into());
        only(&f, "iface-unmatched");
    }

    #[test]
    fn no_route_and_no_setting() {
        let mut f = healthy();
        f.group_route = None;
        f.wanted_dev = None;
        refused(
            &mut f,
            "MPICAST_IFACE is not set and no route covers 239.255.0.0",
        );
        let x = only(&f, "no-route");
        assert!(x.fix.contains("ip route add 224.0.0.0/4"), "{}", x.fix);
        assert!(x.fix.contains("MPICAST_IFACE"), "{}", x.fix);
    }

    #[test]
    fn small_rmem_max_is_named_with_the_sysctl_and_value() {
        let mut f = healthy();
        f.rmem_max = Some(212992);
        f.rcvbuf_granted = Some(2 * 212992);
        let x = only(&f, "rmem-max");
        assert_eq!(x.severity, Severity::Warning);
        assert!(x.what.contains("208 KiB"), "{}", x.what);
        assert!(x.what.contains("8 MiB"), "{}", x.what);
        assert!(
            x.fix.starts_with("sysctl -w net.core.rmem_max=8388608"),
            "{}",
            x.fix
        );
        // As root the grant is forced, but other ranks still meet the cap.
        f.buffer_forced = true;
        f.rcvbuf_granted = Some(16 << 20);
        only(&f, "rmem-max");
        // The request follows MPICAST_RCVBUF.
        f.rcvbuf_wanted = 128 << 10;
        assert_eq!(codes(&f, Some(4)), vec![]);
    }

    #[test]
    fn small_wmem_max() {
        let mut f = healthy();
        f.wmem_max = Some(212992);
        let x = only(&f, "wmem-max");
        assert!(
            x.fix.starts_with("sysctl -w net.core.wmem_max=8388608"),
            "{}",
            x.fix
        );
    }

    #[test]
    fn a_grant_below_the_request_despite_rmem_max() {
        let mut f = healthy();
        f.rcvbuf_granted = Some(1 << 20);
        let x = only(&f, "rcvbuf-granted");
        assert_eq!(x.severity, Severity::Warning);
    }

    #[test]
    fn strict_rp_filter_matters_with_several_interfaces() {
        let mut f = healthy();
        f.rp_filter_iface = Some(1);
        // One interface besides lo: every route back leaves through it; nothing to say.
        assert_eq!(codes(&f, Some(4)), vec![]);
        f.ifaces
            .push(dev("eth1", Some(Ipv4Addr::new(10, 1, 0, 5)), 1500));
        let x = only(&f, "rp-filter-strict");
        assert_eq!(x.severity, Severity::Warning);
        assert!(
            x.fix
                .starts_with("sysctl -w net.ipv4.conf.eth0.rp_filter=2"),
            "{}",
            x.fix
        );
        // `all` strict makes it strict too (the kernel takes the larger); loose wins over it.
        f.rp_filter_iface = Some(0);
        f.rp_filter_all = Some(1);
        only(&f, "rp-filter-strict");
        f.rp_filter_iface = Some(2);
        assert_eq!(codes(&f, Some(4)), vec![]);
    }

    #[test]
    fn no_group_memberships() {
        let mut f = healthy();
        f.igmp_max_memberships = Some(0);
        let x = only(&f, "igmp-memberships");
        assert_eq!(x.severity, Severity::Problem);
        assert!(x.fix.contains("net.ipv4.igmp_max_memberships=20"));
        // One group per socket: the default 20, and even 1, are plenty.
        f.igmp_max_memberships = Some(GROUPS_PER_SOCKET);
        assert_eq!(codes(&f, Some(4)), vec![]);
    }

    #[test]
    fn mtu_too_small_for_any_datagram() {
        let mut f = healthy();
        f.ifaces[0].mtu = 150;
        let x = only(&f, "mtu-too-small");
        assert_eq!(x.severity, Severity::Problem);
        assert!(x.what.contains("156"), "{}", x.what);
        f.ifaces[0].mtu = MIN_MTU;
        assert_eq!(codes(&f, Some(4)), vec![]);
    }

    #[test]
    fn frag_bytes_above_what_the_mtu_allows() {
        let mut f = healthy();
        assert_eq!(frag_on_this_host(1500, None), 1408);
        assert_eq!(frag_on_this_host(9000, None), 8908);
        assert_eq!(frag_on_this_host(65536, None), 65507 - 64);
        assert_eq!(frag_on_this_host(1500, Some(1000)), 1000);
        f.frag_bytes = Some(8000);
        let x = only(&f, "frag-capped");
        assert_eq!(x.severity, Severity::Warning);
        assert!(x.what.contains("1408"), "{}", x.what);
        assert!(x.fix.contains("MPICAST_FRAG_BYTES=1408"), "{}", x.fix);
        f.frag_bytes = Some(1408);
        assert_eq!(codes(&f, Some(4)), vec![]);
    }

    fn on_loopback() -> HostFacts {
        let mut f = healthy();
        f.iface_spec = Some(IfaceSpec::Name("lo".into()));
        f.wanted_dev = Some("lo".into());
        f.chosen = Ok(Iface {
            name: "lo".into(),
            index: 1,
            addr: Ipv4Addr::LOCALHOST,
            mtu: 65536,
        });
        f
    }

    #[test]
    fn loopback_warns_unless_the_job_is_on_one_host() {
        let f = on_loopback();
        assert_eq!(codes(&f, Some(1)), vec![]);
        let x = only(&f, "loopback");
        assert_eq!(x.severity, Severity::Warning);
        assert!(x.what.contains("spans 4 hosts"), "{}", x.what);
        assert!(x.fix.contains("eth0 192.0.2.2"), "{}", x.fix);
        assert!(!x.fix.contains("lo 127"), "{}", x.fix);
        assert_eq!(codes(&f, None), vec![("loopback", Severity::Warning)]);
        // Linux leaves the MULTICAST flag off on lo, and multicasts on it all the same.
        let mut h = on_loopback();
        h.ifaces[1].multicast = false;
        assert_eq!(codes(&h, Some(1)), vec![]);
        // Strict rp_filter does not apply to what loopback carries.
        let mut g = on_loopback();
        g.rp_filter_all = Some(1);
        g.ifaces
            .push(dev("eth1", Some(Ipv4Addr::new(10, 1, 0, 5)), 1500));
        assert_eq!(codes(&g, Some(1)), vec![]);
    }

    #[test]
    fn unreadable_values_are_said_not_guessed() {
        let mut f = healthy();
        f.rmem_max = None;
        f.rp_filter_iface = None;
        let x = only(&f, "not-checked");
        assert_eq!(x.severity, Severity::Warning);
        assert!(x.what.contains("net.core.rmem_max"), "{}", x.what);
        assert!(x.what.contains("rp_filter"), "{}", x.what);
    }

    #[test]
    fn problems_come_before_warnings() {
        let mut f = healthy();
        f.rmem_max = Some(1 << 20);
        f.ifaces[0].multicast = false;
        f.igmp_max_memberships = Some(0);
        let c = codes(&f, Some(4));
        assert_eq!(
            c,
            vec![
                ("iface-no-multicast", Severity::Problem),
                ("igmp-memberships", Severity::Problem),
                ("rmem-max", Severity::Warning),
            ]
        );
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(8 << 20), "8 MiB");
        assert_eq!(size(212992), "208 KiB");
        assert_eq!(size(1000), "1000 B");
    }
}
