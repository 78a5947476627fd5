//! This host's facts for `mpicast doctor`: the interface the library would multicast on (chosen
//! by the library's own [`resolve_iface`]), its state, the kernel settings that decide whether
//! multicast arrives and how much of it a socket can hold, and the buffer a socket is granted.
//!
//! Reads getifaddrs, `/sys/class/net`, `/proc/net/route` and `/proc/sys`, and opens one unbound
//! UDP socket to ask for the library's buffer size: nothing is sent, no group is joined. What
//! cannot be read is `None`, never an error: the diagnosis (`doctor::host`) says what it could
//! not check.

use std::net::Ipv4Addr;

use nix::net::if_::InterfaceFlags;

use super::iface::{device_name, parse_routes, read_mtu, route_entry_for, PROBE_GROUP};
use super::{resolve_iface, socket::granted_buffers, Iface};
use crate::config::{in_subnet, Config, IfaceSpec};

/// One network device as getifaddrs shows it, up or down, with or without IPv4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfaceState {
    pub name: String,
    /// Its IPv4 addresses, in kernel order (alias labels folded into their device).
    pub addrs: Vec<Ipv4Addr>,
    /// 0 when neither sysfs nor the ioctl tells.
    pub mtu: u32,
    /// `IFF_UP`: administratively up.
    pub up: bool,
    /// `IFF_RUNNING`: the link is up too (a carrier).
    pub running: bool,
    /// `IFF_MULTICAST`.
    pub multicast: bool,
    /// `IFF_LOOPBACK`.
    pub loopback: bool,
}

/// The usable route to the group the library asks the routing table about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRoute {
    /// The group asked about (the library's probe group, `239.255.0.0`).
    pub group: Ipv4Addr,
    pub dev: String,
    pub dest: Ipv4Addr,
    pub prefix: u8,
}

impl GroupRoute {
    /// A route of the multicast range (inside 224.0.0.0/4) rather than the default route or a
    /// wider one.
    pub fn is_multicast_route(&self) -> bool {
        self.prefix >= 4 && self.dest.is_multicast()
    }

    pub fn is_default(&self) -> bool {
        self.prefix == 0
    }
}

/// What `mpicast doctor --local` knows about this host. Every kernel value is `None` when it
/// could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `MPICAST_IFACE` as the configuration holds it (`None`: the routing table decides).
    pub iface_spec: Option<IfaceSpec>,
    /// `MPICAST_RCVBUF`: the receive and send buffer the library asks for.
    pub rcvbuf_wanted: usize,
    /// `MPICAST_FRAG_BYTES` (`None`: `auto`).
    pub frag_bytes: Option<usize>,
    /// Every device of the host, sorted by name.
    pub ifaces: Vec<IfaceState>,
    /// The interface the library would multicast on, or its error message.
    pub chosen: Result<Iface, String>,
    /// The device that `MPICAST_IFACE` names or matches, or the routing table points at, even
    /// when the library refuses it (down, or without an IPv4 address).
    pub wanted_dev: Option<String>,
    /// The route to the library's probe group.
    pub group_route: Option<GroupRoute>,
    /// `net.core.rmem_max`, `net.core.wmem_max`.
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    /// The receive and send buffer a UDP socket was granted for `rcvbuf_wanted`, as getsockopt
    /// reports them (twice what applies to data: Linux doubles the request for bookkeeping).
    pub rcvbuf_granted: Option<usize>,
    pub sndbuf_granted: Option<usize>,
    /// The grant went past `rmem_max`/`wmem_max` (`SO_RCVBUFFORCE`: root or CAP_NET_ADMIN).
    pub buffer_forced: bool,
    /// `net.ipv4.conf.all.rp_filter` and `net.ipv4.conf.<dev>.rp_filter` of `wanted_dev` (or
    /// the chosen interface).
    pub rp_filter_all: Option<u32>,
    pub rp_filter_iface: Option<u32>,
    /// `net.ipv4.igmp_max_memberships`: groups one socket may join.
    pub igmp_max_memberships: Option<u64>,
}

impl HostFacts {
    /// The device the diagnosis is about: the chosen interface, else the one wanted.
    pub fn dev(&self) -> Option<&str> {
        match &self.chosen {
            Ok(i) => Some(i.name.as_str()),
            Err(_) => self.wanted_dev.as_deref(),
        }
    }

    /// That device's state.
    pub fn dev_state(&self) -> Option<&IfaceState> {
        let d = self.dev()?;
        self.ifaces.iter().find(|i| i.name == d)
    }
}

/// Gathers this host's facts for the settings in `cfg` (the library's configuration: the
/// environment and `MPICAST_CONFIG`).
pub fn gather(cfg: &Config) -> HostFacts {
    let ifaces = list_devices();
    let chosen = resolve_iface(cfg.iface.as_ref()).map_err(|e| e.to_string());
    let routes = std::fs::read_to_string("/proc/net/route")
        .map(|t| parse_routes(&t))
        .unwrap_or_default();
    let group_route = route_entry_for(&routes, PROBE_GROUP).map(|r| GroupRoute {
        group: PROBE_GROUP,
        dev: r.dev.clone(),
        dest: r.dest,
        prefix: u32::from(r.mask).count_ones() as u8,
    });
    let wanted_dev = match &cfg.iface {
        Some(IfaceSpec::Name(n)) => Some(device_name(n).to_string()),
        Some(IfaceSpec::Addr(a)) => ifaces
            .iter()
            .find(|i| i.addrs.contains(a))
            .map(|i| i.name.clone()),
        Some(IfaceSpec::Cidr(base, p)) => ifaces
            .iter()
            .find(|i| i.addrs.iter().any(|a| in_subnet(*a, *base, *p)))
            .map(|i| i.name.clone()),
        None => group_route.as_ref().map(|r| r.dev.clone()),
    };
    let dev = match &chosen {
        Ok(i) => Some(i.name.clone()),
        Err(_) => wanted_dev.clone(),
    };
    let buffers = granted_buffers(cfg.rcvbuf).ok();
    HostFacts {
        hostname: read_text("/proc/sys/kernel/hostname"),
        iface_spec: cfg.iface.clone(),
        rcvbuf_wanted: cfg.rcvbuf,
        frag_bytes: cfg.frag_bytes,
        ifaces,
        chosen,
        wanted_dev,
        group_route,
        rmem_max: read_number("/proc/sys/net/core/rmem_max"),
        wmem_max: read_number("/proc/sys/net/core/wmem_max"),
        rcvbuf_granted: buffers.map(|b| b.0),
        sndbuf_granted: buffers.map(|b| b.1),
        buffer_forced: buffers.is_some_and(|b| b.2),
        rp_filter_all: read_number("/proc/sys/net/ipv4/conf/all/rp_filter").map(|v| v as u32),
        rp_filter_iface: dev
            .filter(|d| is_plain_name(d))
            .and_then(|d| read_number(&format!("/proc/sys/net/ipv4/conf/{d}/rp_filter")))
            .map(|v| v as u32),
        igmp_max_memberships: read_number("/proc/sys/net/ipv4/igmp_max_memberships"),
    }
}

/// The link speed of device `dev` in Mbit/s as sysfs reports it (`None`: unknown, as for
/// loopback, a down link or a virtual device that does not say).
pub fn link_speed_mbps(dev: &str) -> Option<u64> {
    if !is_plain_name(dev) {
        return None;
    }
    read_text(&format!("/sys/class/net/{dev}/speed"))
        .and_then(|t| t.trim().parse::<i64>().ok())
        .filter(|&v| v > 0)
        .map(|v| v as u64)
}

/// Every device getifaddrs lists (each appears at least with its link-layer entry, up or down),
/// with its IPv4 addresses and flags, sorted by name.
pub fn list_devices() -> Vec<IfaceState> {
    let mut out: Vec<IfaceState> = Vec::new();
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return out;
    };
    for ifa in all {
        let name = device_name(&ifa.interface_name).to_string();
        let k = match out.iter().position(|i| i.name == name) {
            Some(k) => k,
            None => {
                out.push(IfaceState {
                    mtu: read_mtu(&name).unwrap_or(0),
                    name,
                    addrs: Vec::new(),
                    up: false,
                    running: false,
                    multicast: false,
                    loopback: false,
                });
                out.len() - 1
            }
        };
        let d = &mut out[k];
        d.up |= ifa.flags.contains(InterfaceFlags::IFF_UP);
        d.running |= ifa.flags.contains(InterfaceFlags::IFF_RUNNING);
        d.multicast |= ifa.flags.contains(InterfaceFlags::IFF_MULTICAST);
        d.loopback |= ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK);
        if let Some(sin) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) {
            d.addrs.push(sin.ip());
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A device name that can be a path component under `/proc/sys/net/ipv4/conf`.
fn is_plain_name(d: &str) -> bool {
    !d.is_empty() && d != "." && d != ".." && !d.contains('/')
}

fn read_text(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn read_number(path: &str) -> Option<u64> {
    read_text(path)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(spec: &str) -> HostFacts {
        let cfg = Config::from_vars([("MPICAST_IFACE", spec)]).unwrap();
        gather(&cfg)
    }

    #[test]
    fn loopback_facts() {
        let f = on("lo");
        let lo = f.chosen.as_ref().expect("lo is chosen");
        assert_eq!(lo.name, "lo");
        assert_eq!(lo.addr, Ipv4Addr::LOCALHOST);
        assert_eq!(f.dev(), Some("lo"));
        assert_eq!(f.wanted_dev.as_deref(), Some("lo"));
        let st = f.dev_state().expect("lo is listed");
        assert!(st.up && st.running && st.loopback, "{st:?}");
        assert!(st.addrs.contains(&Ipv4Addr::LOCALHOST));
        assert_eq!(st.mtu, lo.mtu);
        assert_eq!(st.mtu, 65536);
        assert_eq!(f.rcvbuf_wanted, 8 << 20);
        assert_eq!(f.frag_bytes, None);
        // Readable on any Linux with /proc; the values differ between machines.
        assert!(f.rmem_max.is_some() && f.wmem_max.is_some());
        assert!(f.igmp_max_memberships.is_some());
        assert!(f.rp_filter_all.is_some() && f.rp_filter_iface.is_some());
        let g = f.rcvbuf_granted.expect("a socket is granted a buffer");
        assert!(g > 0 && f.sndbuf_granted.unwrap() > 0);
        if f.buffer_forced {
            assert!(g >= 8 << 20, "forced, granted {g}");
        }
        let names: Vec<&str> = f.ifaces.iter().map(|i| i.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn a_name_that_matches_nothing() {
        let f = on("nosuchif9");
        let e = f.chosen.as_ref().unwrap_err();
        assert!(e.contains("MPICAST_IFACE=nosuchif9"), "{e}");
        assert_eq!(f.wanted_dev.as_deref(), Some("nosuchif9"));
        assert_eq!(f.dev_state(), None);
        assert_eq!(f.rp_filter_iface, None);
    }

    #[test]
    fn subnet_and_address_find_lo() {
        for spec in ["127.0.0.0/8", "127.0.0.1"] {
            let f = on(spec);
            assert_eq!(
                f.chosen.as_ref().map(|i| i.name.as_str()),
                Ok("lo"),
                "{spec}"
            );
            assert_eq!(f.wanted_dev.as_deref(), Some("lo"), "{spec}");
        }
    }

    #[test]
    fn the_group_route_is_the_librarys() {
        let f = gather(&Config::default());
        match (&f.group_route, &f.chosen) {
            (Some(r), Ok(i)) => assert_eq!(r.dev, i.name),
            (None, Err(e)) => assert!(e.contains("no route covers"), "{e}"),
            (Some(r), Err(e)) => assert!(e.contains(&r.dev), "{e}"),
            (None, Ok(i)) => panic!("chose {i:?} without a route"),
        }
        assert_eq!(f.wanted_dev, f.group_route.as_ref().map(|r| r.dev.clone()));
    }

    #[test]
    fn route_kinds() {
        let r = |dest: [u8; 4], prefix| GroupRoute {
            group: PROBE_GROUP,
            dev: "x".into(),
            dest: Ipv4Addr::from(dest),
            prefix,
        };
        assert!(r([224, 0, 0, 0], 4).is_multicast_route());
        assert!(r([239, 0, 0, 0], 8).is_multicast_route());
        assert!(!r([0, 0, 0, 0], 0).is_multicast_route());
        assert!(r([0, 0, 0, 0], 0).is_default());
        assert!(!r([224, 0, 0, 0], 3).is_multicast_route());
    }
}
