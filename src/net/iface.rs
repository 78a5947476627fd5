//! Local IPv4 interfaces and the choice of the one to multicast on.
//!
//! Owns the reading of getifaddrs, `/sys/class/net/*/mtu` and `/proc/net/route`; sends nothing.
//! Errors say what was asked for and list what exists, because the usual cause is a host whose
//! interfaces are named or numbered differently from the one the user looked at.

use std::fmt::Write as _;
use std::io;
use std::net::Ipv4Addr;

use nix::net::if_::InterfaceFlags;

use crate::config::{in_subnet, IfaceSpec};

/// One IPv4 address of one up interface. An interface with several addresses appears once per
/// address; `name` is the device name (an alias label such as `eth0:1` is reported as `eth0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    pub name: String,
    pub index: u32,
    pub addr: Ipv4Addr,
    pub mtu: u32,
}

/// The group used to ask the routing table when the caller has none in mind: the default
/// `MPICAST_GROUP` base, so a `239.0.0.0/8` or `224.0.0.0/4` route wins over the default route.
pub(crate) const PROBE_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 0);

/// Up interfaces with an IPv4 address, sorted by name (addresses of one name in kernel order).
pub fn list_ifaces() -> io::Result<Vec<Iface>> {
    let mut out: Vec<Iface> = Vec::new();
    for ifa in nix::ifaddrs::getifaddrs()? {
        if !ifa.flags.contains(InterfaceFlags::IFF_UP) {
            continue;
        }
        let Some(sin) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) else {
            continue;
        };
        let name = device_name(&ifa.interface_name).to_string();
        // An interface that vanished between getifaddrs and here is simply not listed.
        let Ok(index) = nix::net::if_::if_nametoindex(name.as_str()) else {
            continue;
        };
        let mtu = read_mtu(&name)?;
        out.push(Iface {
            name,
            index,
            addr: sin.ip(),
            mtu,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Resolves `MPICAST_IFACE`; `None` asks the routing table, as the kernel would for the default
/// group. See [`resolve_iface_for`].
pub fn resolve_iface(spec: Option<&IfaceSpec>) -> io::Result<Iface> {
    resolve_iface_for(spec, PROBE_GROUP)
}

/// Resolves `MPICAST_IFACE`:
/// - `Name`: that interface's (first) IPv4 address;
/// - `Addr`: the interface holding that address;
/// - `Cidr`: the first interface, by name, with an address in the subnet (hosts may name their
///   interfaces differently but share the subnet, as with Open MPI's `if_include`);
/// - `None`: the interface of the most specific up route to `group` (in practice a multicast
///   route if there is one, else the default route).
pub fn resolve_iface_for(spec: Option<&IfaceSpec>, group: Ipv4Addr) -> io::Result<Iface> {
    let all = list_ifaces()?;
    let Some(spec) = spec else {
        return routed_iface(&all, group);
    };
    let found = match spec {
        IfaceSpec::Name(n) => all
            .iter()
            .find(|i| &i.name == n || device_name(n) == i.name),
        IfaceSpec::Addr(a) => all.iter().find(|i| i.addr == *a),
        IfaceSpec::Cidr(base, p) => all.iter().find(|i| in_subnet(i.addr, *base, *p)),
    };
    found.cloned().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "mpicast: MPICAST_IFACE={spec} matches no up interface with an IPv4 address; \
                 this host has: {}",
                describe(&all)
            ),
        )
    })
}

fn routed_iface(all: &[Iface], group: Ipv4Addr) -> io::Result<Iface> {
    let text = std::fs::read_to_string("/proc/net/route").map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "mpicast: MPICAST_IFACE is not set and /proc/net/route is unreadable ({e}); \
                 set MPICAST_IFACE to one of: {}",
                describe(all)
            ),
        )
    })?;
    let dev = route_for(&parse_routes(&text), group);
    if let Some(i) = dev
        .as_deref()
        .and_then(|d| all.iter().find(|i| i.name == d))
    {
        return Ok(i.clone());
    }
    let why = match dev {
        Some(d) => format!("the route to {group} uses {d}, which has no IPv4 address or is down"),
        None => format!("no route covers {group} (no default route)"),
    };
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "mpicast: MPICAST_IFACE is not set and {why}; set MPICAST_IFACE to one of: {}",
            describe(all)
        ),
    ))
}

/// "eth0 192.0.2.2 (mtu 1400), lo 127.0.0.1 (mtu 65536)" for error messages.
fn describe(all: &[Iface]) -> String {
    if all.is_empty() {
        return "no up interface with an IPv4 address".to_string();
    }
    let mut s = String::new();
    for (k, i) in all.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{} {} (mtu {})", i.name, i.addr, i.mtu);
    }
    s
}

/// The device behind an alias label (`eth0:1` -> `eth0`); sysfs and the ioctls know only devices.
pub(super) fn device_name(label: &str) -> &str {
    label.split(':').next().unwrap_or(label)
}

pub(super) fn read_mtu(dev: &str) -> io::Result<u32> {
    if let Some(m) = std::fs::read_to_string(format!("/sys/class/net/{dev}/mtu"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
    {
        return Ok(m);
    }
    // /sys may not be mounted in a container; the ioctl works without it.
    mtu_ioctl(dev)
}

fn mtu_ioctl(dev: &str) -> io::Result<u32> {
    let bytes = dev.as_bytes();
    // SAFETY: ifreq is plain old data; all-zero is a valid value (empty name, zero union).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    if bytes.len() >= req.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("mpicast: interface name {dev:?} is not a valid device name"),
        ));
    }
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    // SAFETY: the fd is a valid open socket owned by `sock` for the duration of the call; `req`
    // is a properly initialised, NUL-terminated ifreq the kernel writes the MTU into.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::SIOCGIFMTU as _,
            &mut req,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFMTU succeeded, so the kernel filled the ifru_mtu member of the union.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    Ok(u32::try_from(mtu).unwrap_or(0))
}

/// One line of `/proc/net/route`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub dev: String,
    pub dest: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub flags: u32,
    pub metric: u32,
}

const RTF_UP: u32 = 0x0001;
const RTF_REJECT: u32 = 0x0200;

/// Parses `/proc/net/route`; lines that do not parse are skipped (the format is fixed, so only a
/// header or a truncated read would).
pub(crate) fn parse_routes(text: &str) -> Vec<Route> {
    // The kernel prints each big-endian address as a native u32 with %08X, so the native bytes of
    // the parsed number are the address bytes in network order.
    let addr = |s: &str| {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| Ipv4Addr::from(v.to_ne_bytes()))
    };
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 {
                return None;
            }
            Some(Route {
                dev: f[0].to_string(),
                dest: addr(f[1])?,
                flags: u32::from_str_radix(f[3], 16).ok()?,
                metric: f[6].parse().ok()?,
                mask: addr(f[7])?,
            })
        })
        .collect()
}

/// Device of the longest-prefix, then lowest-metric, usable route to `dst`.
pub(crate) fn route_for(routes: &[Route], dst: Ipv4Addr) -> Option<String> {
    route_entry_for(routes, dst).map(|r| r.dev.clone())
}

/// The longest-prefix, then lowest-metric, usable route to `dst`: the one [`route_for`] takes.
pub(crate) fn route_entry_for(routes: &[Route], dst: Ipv4Addr) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| r.flags & RTF_UP != 0 && r.flags & RTF_REJECT == 0)
        .filter(|r| u32::from(dst) & u32::from(r.mask) == u32::from(r.dest) & u32::from(r.mask))
        .min_by_key(|r| (std::cmp::Reverse(u32::from(r.mask).count_ones()), r.metric))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lo_of(spec: IfaceSpec) -> Iface {
        let i = resolve_iface(Some(&spec)).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(i.name, "lo", "{spec}");
        i
    }

    #[test]
    fn lists_loopback() {
        let all = list_ifaces().unwrap();
        let lo = all.iter().find(|i| i.name == "lo").expect("lo is listed");
        assert_eq!(lo.addr, Ipv4Addr::LOCALHOST);
        assert!(lo.index > 0);
        assert!(lo.mtu >= 1500, "lo mtu {}", lo.mtu);
        let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn mtu_from_ioctl_matches_sysfs() {
        let lo = list_ifaces()
            .unwrap()
            .into_iter()
            .find(|i| i.name == "lo")
            .unwrap();
        assert_eq!(mtu_ioctl("lo").unwrap(), lo.mtu);
        assert!(mtu_ioctl("nosuchdev0").is_err());
        assert!(mtu_ioctl("a-name-longer-than-ifnamsiz").is_err());
    }

    #[test]
    fn resolves_lo_three_ways() {
        let a = lo_of(IfaceSpec::Name("lo".into()));
        let b = lo_of(IfaceSpec::Addr(Ipv4Addr::LOCALHOST));
        let c = lo_of(IfaceSpec::Cidr(Ipv4Addr::new(127, 0, 0, 0), 8));
        assert_eq!((a.index, a.addr), (b.index, b.addr));
        assert_eq!((a.index, a.addr), (c.index, c.addr));
        // An alias label of lo resolves to lo's own address too.
        lo_of(IfaceSpec::Name("lo:0".into()));
    }

    #[test]
    fn bad_specs_list_what_exists() {
        for spec in [
            IfaceSpec::Name("nosuchif9".into()),
            IfaceSpec::Addr(Ipv4Addr::new(198, 51, 100, 77)),
            IfaceSpec::Cidr(Ipv4Addr::new(198, 51, 100, 0), 24),
        ] {
            let e = resolve_iface(Some(&spec)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound);
            let msg = e.to_string();
            assert!(msg.contains(&format!("MPICAST_IFACE={spec}")), "{msg}");
            assert!(msg.contains("lo 127.0.0.1"), "{msg}");
        }
    }

    #[test]
    fn default_choice_is_consistent_with_the_routing_table() {
        let routes = parse_routes(&std::fs::read_to_string("/proc/net/route").unwrap());
        match (resolve_iface(None), route_for(&routes, PROBE_GROUP)) {
            (Ok(i), Some(dev)) => assert_eq!(i.name, dev),
            (Err(e), None) => assert!(e.to_string().contains("no route covers"), "{e}"),
            (Err(e), Some(dev)) => assert!(e.to_string().contains(&dev), "{e}"),
            (Ok(i), None) => panic!("chose {i:?} without a route"),
        }
    }

    const ROUTES: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth1\t00000000\t010A0A0A\t0003\t0\t0\t50\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
ib0\t000000E0\t00000000\t0001\t0\t0\t0\t000000F0\t0\t0\t0
dead0\t00FFFFEF\t00000000\t0201\t0\t0\t0\t00FFFFFF\t0\t0\t0
down0\t0000FFEF\t00000000\t0000\t0\t0\t0\t0000FFFF\t0\t0\t0
garbage line
";

    #[test]
    fn parses_proc_net_route() {
        let r = parse_routes(ROUTES);
        assert_eq!(r.len(), 6);
        assert_eq!(r[2].dev, "eth0");
        assert_eq!(r[2].dest, Ipv4Addr::new(192, 0, 2, 0));
        assert_eq!(r[2].mask, Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(r[0].metric, 100);
        assert_eq!(r[3].dest, Ipv4Addr::new(224, 0, 0, 0));
        assert_eq!(r[3].mask, Ipv4Addr::new(240, 0, 0, 0));
    }

    #[test]
    fn route_choice() {
        let r = parse_routes(ROUTES);
        // The multicast route beats the default routes; reject and down routes never win.
        assert_eq!(
            route_for(&r, Ipv4Addr::new(239, 255, 0, 0)).as_deref(),
            Some("ib0")
        );
        assert_eq!(
            route_for(&r, Ipv4Addr::new(239, 255, 255, 1)).as_deref(),
            Some("ib0")
        );
        // Among default routes the lower metric wins.
        assert_eq!(
            route_for(&r, Ipv4Addr::new(8, 8, 8, 8)).as_deref(),
            Some("eth1")
        );
        assert_eq!(
            route_for(&r, Ipv4Addr::new(192, 0, 2, 9)).as_deref(),
            Some("eth0")
        );
        let only_local = parse_routes(
            &ROUTES
                .lines()
                .take(1)
                .chain(ROUTES.lines().skip(3).take(1))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        assert_eq!(route_for(&only_local, Ipv4Addr::new(239, 255, 0, 0)), None);
    }
}
