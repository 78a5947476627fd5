//! check: what every decoder of `wire` keeps for any input, as functions that panic when it
//! is broken. The fuzz targets of `fuzz/` (`wire_datagram`, `wire_segment`, `wire_dbcast`)
//! and the property tests (`wire/decode_tests.rs`, run by `cargo test`) call them.
//!
//! A decoder never panics, and what it accepts is canonical: encoding what it read gives the
//! very bytes back, so two different byte strings never mean the same thing. Each function
//! says whether the decoder accepted the input (the property tests count that some did).

use super::packet::{self, Header, Kind};
use super::{control::Control, dbcast, forward, heal::HealMsg, Ctx};

/// A datagram as received: `packet::decode` and the unauthenticated peeks.
pub fn datagram(ctx: &Ctx, b: &[u8]) -> bool {
    let _ = (
        packet::peek_comm(b),
        packet::peek_seq(b),
        packet::peek_root(b),
    );
    match packet::decode(ctx, b) {
        Ok((h, payload)) => {
            let mut again = Vec::new();
            packet::encode(ctx, &h, payload, &mut again);
            assert_eq!(again, b, "datagram {h:?} is not canonical");
            true
        }
        Err(_) => false,
    }
}

/// A datagram this rank's peers could send: `h` and `payload` encoded under `ctx` decode to
/// themselves, or are refused as inconsistent (a field the encoder does not check).
pub fn datagram_fields(ctx: &Ctx, h: &Header, payload: &[u8]) -> bool {
    let mut b = Vec::new();
    packet::encode(ctx, h, payload, &mut b);
    match packet::decode(ctx, &b) {
        Ok((got, p)) => {
            assert_eq!((&got, p), (h, payload), "datagram round trip");
            true
        }
        Err(e) => {
            assert!(
                e == packet::Reject::Malformed
                    || (e == packet::Reject::WrongJob && h.job != ctx.job)
                    || (e == packet::Reject::WrongComm && h.comm != ctx.comm),
                "{h:?} encoded by us refused as {e:?}"
            );
            false
        }
    }
}

/// The kind of datagram numbered `k` (every kind, for generators of headers).
pub fn kind(k: u8) -> Kind {
    [
        Kind::Data,
        Kind::Release,
        Kind::ReleaseQuery,
        Kind::Probe,
        Kind::RepairQuery,
    ][usize::from(k) % 5]
}

/// A receiver's control message (`Control::decode`).
pub fn control(b: &[u8]) -> bool {
    match Control::decode(b) {
        Ok(c) => {
            let mut again = Vec::new();
            c.encode(&mut again);
            assert_eq!(again, b, "control {c:?} is not canonical");
            true
        }
        Err(_) => false,
    }
}

/// A segment of `MPICAST_Imcast`'s forwarding (`forward::decode`) for `seg_bytes`.
pub fn segment(b: &[u8], seg_bytes: usize) -> bool {
    match forward::decode(b, seg_bytes) {
        Ok(s) => {
            let mut again = Vec::new();
            forward::encode(&s.h, s.dests.as_deref(), &b[s.payload_at..], &mut again);
            assert_eq!(again, b, "segment {:?} is not canonical", s.h);
            true
        }
        Err(_) => false,
    }
}

/// A segment of dynamic broadcast (`dbcast::decode`) for `seg_bytes`.
pub fn dbcast(b: &[u8], seg_bytes: usize) -> bool {
    match dbcast::decode(b, seg_bytes) {
        Ok(s) => {
            let mut again = Vec::new();
            dbcast::encode(&s.h, s.list.as_deref(), &b[s.payload_at..], &mut again);
            assert_eq!(again, b, "dbcast segment {:?} is not canonical", s.h);
            true
        }
        Err(_) => false,
    }
}

/// A message of the self-healing transport (`HealMsg::decode`).
pub fn heal(b: &[u8]) -> bool {
    match HealMsg::decode(b) {
        Some(m) => {
            let mut again = Vec::new();
            m.encode(&mut again);
            assert_eq!(again, b, "heal message {m:?} is not canonical");
            true
        }
        None => false,
    }
}
