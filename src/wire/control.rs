//! control: the receiver -> root messages of one broadcast (cumulative Ack, Nack with missing
//! fragments, Decline of a message of another size). The transport carries them over
//! reliable, ordered MPI point-to-point, so they carry no MAC; they only have to be bounded
//! so a fixed receive buffer always fits them.
//!
//! Layout, little-endian: tag(1) seq(8) cum(4) [count(4) missing(4 * count)] for a Nack;
//! tag(1) seq(8) posted(8) for a Decline; tag(1) seq(8) zero(4) for a Trouble; tag(1) seq(8)
//! cum(4) for a Unicast.

use super::packet::Reject;

const TAG_ACK: u8 = 1;
const TAG_NACK: u8 = 2;
const TAG_DECLINE: u8 = 3;
const TAG_TROUBLE: u8 = 4;
const TAG_UNICAST: u8 = 5;
const ACK_LEN: usize = 1 + 8 + 4;
const DECLINE_LEN: usize = 1 + 8 + 8;

/// Most fragment numbers one Nack lists; a receiver reports the rest in its next round.
pub const MAX_NACK_MISSING: usize = 512;
/// The largest encoded control message.
pub const MAX_CONTROL_LEN: usize = ACK_LEN + 4 + 4 * MAX_NACK_MISSING;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// `cum` leading fragments of operation `seq` are in.
    Ack { seq: u64, cum: u32 },
    /// As Ack, and these fragments (ascending, at most `MAX_NACK_MISSING`) are missing.
    Nack {
        seq: u64,
        cum: u32,
        missing: Vec<u32>,
    },
    /// This receiver takes none of operation `seq`: it posted `posted` bytes, and the
    /// root's message has another size (an erroneous program; the receiver fails its call,
    /// and the root must not wait for it).
    Decline { seq: u64, posted: u64 },
    /// Multicast has not delivered operations to this receiver for a while (their data or
    /// release came by unicast only, `wire::heal::Health`), the last being `seq`: the root
    /// that reads it moves the communicator at the next operation it roots. No ack.
    Trouble { seq: u64 },
    /// The root offered (`wire::heal::HealMsg::Offer`) to send the rest by unicast: this
    /// receiver, which has `cum` leading fragments, waits for it (`HealMsg::Data`).
    Unicast { seq: u64, cum: u32 },
}

impl Control {
    pub fn seq(&self) -> u64 {
        match *self {
            Control::Ack { seq, .. }
            | Control::Nack { seq, .. }
            | Control::Decline { seq, .. }
            | Control::Trouble { seq }
            | Control::Unicast { seq, .. } => seq,
        }
    }

    /// The cumulative ack (0 for a Decline, which acknowledges nothing).
    pub fn cum(&self) -> u32 {
        match *self {
            Control::Ack { cum, .. } | Control::Nack { cum, .. } | Control::Unicast { cum, .. } => {
                cum
            }
            Control::Decline { .. } | Control::Trouble { .. } => 0,
        }
    }

    /// Clears `out` and writes the message. A Nack listing more than `MAX_NACK_MISSING`
    /// fragments is cut to the first ones, so the result never exceeds `MAX_CONTROL_LEN`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        let (tag, missing) = match self {
            Control::Ack { .. } => (TAG_ACK, &[][..]),
            Control::Trouble { .. } => (TAG_TROUBLE, &[][..]),
            Control::Unicast { .. } => (TAG_UNICAST, &[][..]),
            Control::Nack { missing, .. } => {
                (TAG_NACK, &missing[..missing.len().min(MAX_NACK_MISSING)])
            }
            Control::Decline { seq, posted } => {
                out.push(TAG_DECLINE);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&posted.to_le_bytes());
                return;
            }
        };
        out.push(tag);
        out.extend_from_slice(&self.seq().to_le_bytes());
        out.extend_from_slice(&self.cum().to_le_bytes());
        if tag == TAG_NACK {
            out.extend_from_slice(&(missing.len() as u32).to_le_bytes());
            for m in missing {
                out.extend_from_slice(&m.to_le_bytes());
            }
        }
    }

    pub fn decode(b: &[u8]) -> Result<Control, Reject> {
        if b.len() < ACK_LEN {
            return Err(Reject::Short);
        }
        let seq = u64::from_le_bytes(b[1..9].try_into().expect("8 bytes"));
        if b[0] == TAG_DECLINE {
            return match b.len() {
                DECLINE_LEN => Ok(Control::Decline {
                    seq,
                    posted: u64::from_le_bytes(b[9..17].try_into().expect("8 bytes")),
                }),
                n if n < DECLINE_LEN => Err(Reject::Short),
                _ => Err(Reject::Malformed),
            };
        }
        let cum = u32::from_le_bytes(b[9..13].try_into().expect("4 bytes"));
        match b[0] {
            TAG_ACK if b.len() == ACK_LEN => Ok(Control::Ack { seq, cum }),
            TAG_TROUBLE if b.len() == ACK_LEN && cum == 0 => Ok(Control::Trouble { seq }),
            TAG_UNICAST if b.len() == ACK_LEN => Ok(Control::Unicast { seq, cum }),
            TAG_NACK => {
                let rest = &b[ACK_LEN..];
                if rest.len() < 4 {
                    return Err(Reject::Short);
                }
                let count = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
                let list = &rest[4..];
                if count > MAX_NACK_MISSING || list.len() != 4 * count {
                    return Err(Reject::Malformed);
                }
                let missing = list
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                Ok(Control::Nack { seq, cum, missing })
            }
            TAG_ACK | TAG_TROUBLE | TAG_UNICAST => Err(Reject::Malformed),
            _ => Err(Reject::BadKind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let mut out = Vec::new();
        let msgs = [
            Control::Ack { seq: 5, cum: 17 },
            Control::Nack {
                seq: u64::MAX,
                cum: 0,
                missing: vec![],
            },
            Control::Nack {
                seq: 1,
                cum: 3,
                missing: vec![4, 9, u32::MAX],
            },
            Control::Decline {
                seq: 7,
                posted: 20_000,
            },
            Control::Trouble { seq: 12 },
            Control::Unicast { seq: 13, cum: 4 },
        ];
        for m in &msgs {
            m.encode(&mut out);
            assert_eq!(&Control::decode(&out).unwrap(), m);
            for n in 0..out.len() {
                assert!(Control::decode(&out[..n]).is_err(), "{m:?} cut to {n}");
            }
            out.push(0);
            assert!(Control::decode(&out).is_err());
        }
        let big = Control::Nack {
            seq: 1,
            cum: 0,
            missing: (0..5000).collect(),
        };
        big.encode(&mut out);
        assert_eq!(out.len(), MAX_CONTROL_LEN);
        match Control::decode(&out).unwrap() {
            Control::Nack { missing, .. } => {
                assert_eq!(missing, (0..MAX_NACK_MISSING as u32).collect::<Vec<_>>())
            }
            m => panic!("{m:?}"),
        }
        assert_eq!(Control::decode(&[9; 13]), Err(Reject::BadKind));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut s: u64 = 12345;
        for _ in 0..20_000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (s >> 54) as usize;
            let b: Vec<u8> = (0..len)
                .map(|i| (s.rotate_left(i as u32 % 64) >> 3) as u8)
                .collect();
            if let Ok(c) = Control::decode(&b) {
                let mut out = Vec::new();
                c.encode(&mut out);
                assert_eq!(out, b);
            }
        }
    }
}
