//! Listening for IGMP membership queries (`mpicast doctor`): a raw IGMP socket sees the
//! queries a querier sends to 224.0.0.1 on any interface of the host. Needs root or
//! CAP_NET_RAW; without, the open fails and the doctor says the querier was not checked.

use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read};
use std::net::Ipv4Addr;
use std::time::Duration;

/// IGMP message type of a membership query (v1, v2 and v3 alike).
const MEMBERSHIP_QUERY: u8 = 0x11;

pub struct IgmpListener {
    sock: Socket,
}

impl IgmpListener {
    /// A raw IGMP socket whose reads wait at most `tick`.
    pub fn open(tick: Duration) -> io::Result<IgmpListener> {
        let sock = Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(libc::IPPROTO_IGMP)),
        )?;
        sock.set_read_timeout(Some(tick))?;
        Ok(IgmpListener { sock })
    }

    /// The source of the next membership query, `Ok(None)` when none came within the tick
    /// (or the packet was another IGMP message).
    pub fn next_query(&self) -> io::Result<Option<Ipv4Addr>> {
        let mut buf = [0u8; 1500];
        match (&self.sock).read(&mut buf) {
            Ok(n) => Ok(query_source(&buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// The source address of `packet` (an IPv4 packet as a raw socket delivers it, header
/// included) when it carries an IGMP membership query.
pub fn query_source(packet: &[u8]) -> Option<Ipv4Addr> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != 2 {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let igmp = packet.get(ihl..)?;
    (igmp.len() >= 8 && igmp[0] == MEMBERSHIP_QUERY)
        .then(|| Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(kind: u8, ihl_words: u8) -> Vec<u8> {
        let mut p = vec![0u8; usize::from(ihl_words) * 4 + 8];
        p[0] = 0x40 | ihl_words;
        p[9] = 2;
        p[12..16].copy_from_slice(&[10, 77, 0, 254]);
        p[usize::from(ihl_words) * 4] = kind;
        p
    }

    #[test]
    fn queries_are_told_from_reports() {
        assert_eq!(
            query_source(&packet(0x11, 6)),
            Some(Ipv4Addr::new(10, 77, 0, 254))
        );
        assert_eq!(
            query_source(&packet(0x11, 5)),
            Some(Ipv4Addr::new(10, 77, 0, 254))
        );
        assert_eq!(query_source(&packet(0x16, 6)), None, "a v2 report");
        assert_eq!(query_source(&packet(0x22, 6)), None, "a v3 report");
        let mut udp = packet(0x11, 5);
        udp[9] = 17;
        assert_eq!(query_source(&udp), None, "not IGMP");
        assert_eq!(query_source(&packet(0x11, 5)[..24]), None, "cut short");
    }
}
