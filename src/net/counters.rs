//! The host's UDP counters from `/proc/net/snmp`, read before and after an operation so a stats
//! report or a failed probe can say whether the kernel dropped datagrams (receive buffer full,
//! no socket on the port) rather than the network losing them.
//!
//! The counters are per network namespace and shared by every process in it.

use std::io;

/// UDP counters of this network namespace. A counter the kernel does not report is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpCounters {
    pub in_datagrams: u64,
    pub no_ports: u64,
    pub in_errors: u64,
    pub out_datagrams: u64,
    pub rcvbuf_errors: u64,
    pub sndbuf_errors: u64,
    pub in_csum_errors: u64,
}

impl UdpCounters {
    /// What happened between `earlier` and `self` (saturating, in case a counter wrapped).
    pub fn since(&self, earlier: &UdpCounters) -> UdpCounters {
        UdpCounters {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            no_ports: self.no_ports.saturating_sub(earlier.no_ports),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            out_datagrams: self.out_datagrams.saturating_sub(earlier.out_datagrams),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            sndbuf_errors: self.sndbuf_errors.saturating_sub(earlier.sndbuf_errors),
            in_csum_errors: self.in_csum_errors.saturating_sub(earlier.in_csum_errors),
        }
    }
}

/// Reads `/proc/net/snmp`.
pub fn udp_counters() -> io::Result<UdpCounters> {
    let text = std::fs::read_to_string("/proc/net/snmp")?;
    parse_snmp(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "mpicast: /proc/net/snmp has no readable Udp: header and value lines",
        )
    })
}

/// The file pairs a header line of names with a line of values, both starting with "Udp:".
/// Matching by name keeps this right when a kernel adds or reorders columns.
pub(crate) fn parse_snmp(text: &str) -> Option<UdpCounters> {
    let mut lines = text.lines().filter(|l| l.starts_with("Udp: "));
    let names: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    let values: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if names.len() != values.len() {
        return None;
    }
    let get = |want: &str| {
        names
            .iter()
            .position(|n| *n == want)
            .map_or(0, |k| values[k])
    };
    if !names.contains(&"InDatagrams") {
        return None;
    }
    Some(UdpCounters {
        in_datagrams: get("InDatagrams"),
        no_ports: get("NoPorts"),
        in_errors: get("InErrors"),
        out_datagrams: get("OutDatagrams"),
        rcvbuf_errors: get("RcvbufErrors"),
        sndbuf_errors: get("SndbufErrors"),
        in_csum_errors: get("InCsumErrors"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "\
Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 1001 2 3 994 5 6 7 8 9
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 11 12 13 14 15 16 17 18 19
";

    #[test]
    fn parses_by_column_name() {
        let c = parse_snmp(SNMP).unwrap();
        assert_eq!(
            c,
            UdpCounters {
                in_datagrams: 1001,
                no_ports: 2,
                in_errors: 3,
                out_datagrams: 994,
                rcvbuf_errors: 5,
                sndbuf_errors: 6,
                in_csum_errors: 7,
            }
        );
        // An older kernel without InCsumErrors, columns reordered.
        let old = "Udp: NoPorts InDatagrams InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdp: 1 2 3 4 5 6\n";
        let c = parse_snmp(old).unwrap();
        assert_eq!((c.in_datagrams, c.no_ports, c.in_csum_errors), (2, 1, 0));
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(parse_snmp(""), None);
        assert_eq!(parse_snmp("Udp: InDatagrams NoPorts\n"), None);
        assert_eq!(parse_snmp("Udp: InDatagrams NoPorts\nUdp: 1\n"), None);
        assert_eq!(parse_snmp("Udp: InDatagrams NoPorts\nUdp: 1 x\n"), None);
        assert_eq!(parse_snmp("Udp: A B\nUdp: 1 2\n"), None);
    }

    #[test]
    fn since_subtracts_and_saturates() {
        let a = UdpCounters {
            in_datagrams: 10,
            rcvbuf_errors: 3,
            ..Default::default()
        };
        let b = UdpCounters {
            in_datagrams: 15,
            rcvbuf_errors: 1,
            ..Default::default()
        };
        let d = b.since(&a);
        assert_eq!((d.in_datagrams, d.rcvbuf_errors), (5, 0));
    }

    /// The counters move with what this test does: 20 datagrams sent and received on
    /// loopback count in OutDatagrams and InDatagrams, and 5 to a port nobody listens on in
    /// NoPorts (other processes can only add to them).
    #[test]
    fn reads_this_host() {
        use std::net::UdpSocket;
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // A port that was bound a moment ago and is free now: nobody listens there.
        let closed = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let before = udp_counters().unwrap();
        let mut buf = [0u8; 64];
        for i in 0..20u8 {
            tx.send_to(&[i; 8], rx.local_addr().unwrap()).unwrap();
            assert_eq!(rx.recv(&mut buf).unwrap(), 8);
        }
        for _ in 0..5 {
            let _ = tx.send_to(&[0; 8], closed);
        }
        let d = udp_counters().unwrap().since(&before);
        assert!(d.out_datagrams >= 25, "{d:?}");
        assert!(d.in_datagrams >= 20, "{d:?}");
        assert!(d.no_ports >= 5, "{d:?}");
    }
}
