//! UDP networking: which interface to use (`iface`), the multicast and unicast sockets and
//! waiting on them (`socket`), the kernel's UDP counters (`counters`), and for `mpicast
//! doctor` this host's facts (`host_facts`) and the IGMP queries heard (`igmp`).
//!
//! Owns every socket system call of mpicast (the only other `unsafe` users are `ffi/` and
//! `host/`). Knows nothing of datagram contents, ranks or MPI: `wire/` gives bytes, this moves them.

mod counters;
pub mod host_facts;
mod iface;
pub mod igmp;
mod socket;

pub use counters::{udp_counters, UdpCounters};
pub use iface::{list_ifaces, resolve_iface, resolve_iface_for, Iface};
pub use socket::{
    granted_buffers, wait_readable, wait_readable_into, McastSocket, RecvBatch, UnicastSocket,
    SEND_WAIT_LIMIT,
};

/// IPv4 header without options plus the UDP header.
const IP_UDP_HEADERS: usize = 20 + 8;
/// Largest UDP payload IPv4 can carry: 65535 minus the headers.
pub const MAX_UDP_PAYLOAD: usize = 65507;

/// Largest UDP payload that fits this interface's MTU unfragmented, capped at [`MAX_UDP_PAYLOAD`]
/// (loopback's 65536-byte MTU would otherwise exceed what IPv4 allows).
pub fn max_udp_payload(iface: &Iface) -> usize {
    udp_payload_for_mtu(iface.mtu)
}

/// Largest UDP payload that an MTU of `mtu` bytes carries unfragmented (see [`max_udp_payload`]).
pub fn udp_payload_for_mtu(mtu: u32) -> usize {
    (mtu as usize)
        .saturating_sub(IP_UDP_HEADERS)
        .min(MAX_UDP_PAYLOAD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn with_mtu(mtu: u32) -> Iface {
        Iface {
            name: "x".into(),
            index: 1,
            addr: Ipv4Addr::LOCALHOST,
            mtu,
        }
    }

    #[test]
    fn payload_from_mtu() {
        assert_eq!(max_udp_payload(&with_mtu(1500)), 1472);
        assert_eq!(max_udp_payload(&with_mtu(9000)), 8972);
        assert_eq!(max_udp_payload(&with_mtu(65536)), 65507);
        assert_eq!(max_udp_payload(&with_mtu(65535)), 65507);
        assert_eq!(max_udp_payload(&with_mtu(20)), 0);
    }
}
