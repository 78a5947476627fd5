//! Property tests of the wire decoders: random bytes, valid messages with random fields, and
//! valid messages mutated (bits flipped, bytes overwritten, cut, extended) go through
//! `wire::check`, which panics if a decoder panics or accepts bytes that are not canonical.
//! The fuzz targets of `fuzz/` run the same checks under libFuzzer (nightly, `cargo fuzz`);
//! these run in every `cargo test`. Seeded: a failure names its seed and case.

use super::check;
use super::control::Control;
use super::heal::HealMsg;
use super::packet::Header;
use super::{dbcast, forward, Ctx, Key};
use crate::algo::dbcast::Shape;
use crate::rng::Rng;

const CASES: u32 = 20_000;

/// One mutation of `b`: a bit flipped, a byte overwritten, the end cut, or bytes added.
fn mutate(rng: &mut Rng, b: &[u8]) -> Vec<u8> {
    let mut m = b.to_vec();
    match rng.below(5) {
        0 if !m.is_empty() => {
            let i = rng.below(m.len() as u64) as usize;
            m[i] ^= 1 << rng.below(8);
        }
        1 if !m.is_empty() => {
            let i = rng.below(m.len() as u64) as usize;
            m[i] = rng.next_u64() as u8;
        }
        2 => m.truncate(rng.below(m.len() as u64 + 1) as usize),
        3 => {
            let n = 1 + rng.below(16) as usize;
            m.extend(rng.bytes(n));
        }
        _ => {
            // A length or count field made large: the first 4-byte field after byte 30.
            if m.len() > 40 {
                let i = 30 + rng.below(8) as usize;
                m[i..i + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            }
        }
    }
    m
}

/// A small number, often 0 or 1 or at a boundary, sometimes anything.
fn num(rng: &mut Rng, small: u64) -> u64 {
    match rng.below(4) {
        0 => rng.below(2),
        1 | 2 => rng.below(small + 1),
        _ => rng.next_u64(),
    }
}

fn ctx() -> Ctx {
    Ctx {
        key: Key::new([9; 32]),
        job: 77,
        comm: 5,
    }
}

/// Runs `case` for every seed, saying which failed; (valid inputs made, accepted).
fn each_case(name: &str, mut case: impl FnMut(&mut Rng) -> (u32, u32)) -> (u32, u32) {
    let (mut tried, mut accepted) = (0, 0);
    for seed in 0..u64::from(CASES) {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&mut rng)));
        match r {
            Ok((t, a)) => {
                tried += t;
                accepted += a;
            }
            Err(_) => panic!("{name}: case with seed {seed} failed (see above)"),
        }
    }
    (tried, accepted)
}

#[test]
fn datagrams_decode_canonically_and_never_panic() {
    let ctx = ctx();
    let (tried, accepted) = each_case("datagram", |rng| {
        let len = rng.below(200) as usize;
        check::datagram(&ctx, &rng.bytes(len));
        let h = Header {
            kind: check::kind(rng.below(5) as u8),
            job: if rng.below(8) == 0 { 1 } else { ctx.job },
            comm: if rng.below(8) == 0 { 1 } else { ctx.comm },
            seq: num(rng, 9),
            root: num(rng, 9) as u32,
            frag: num(rng, 4) as u32,
            nfrags: num(rng, 5) as u32,
            total_len: num(rng, 300),
        };
        let n = rng.below(64) as usize;
        let payload = rng.bytes(n);
        let ok = check::datagram_fields(&ctx, &h, &payload);
        let mut b = Vec::new();
        super::packet::encode(&ctx, &h, &payload, &mut b);
        let m = mutate(rng, &b);
        // Authenticated: a change the MAC does not cover cannot exist.
        assert!(
            m == b || !check::datagram(&ctx, &m),
            "mutated datagram accepted"
        );
        (1, u32::from(ok))
    });
    // Not vacuous: a good share of the random headers is consistent, and round trips.
    assert!(accepted * 10 >= tried, "{accepted} of {tried} accepted");
}

#[test]
fn control_messages_decode_canonically_and_never_panic() {
    let (tried, accepted) = each_case("control", |rng| {
        let len = rng.below(64) as usize;
        check::control(&rng.bytes(len));
        let c = match rng.below(3) {
            0 => Control::Ack {
                seq: num(rng, 9),
                cum: num(rng, 9) as u32,
            },
            1 => Control::Nack {
                seq: num(rng, 9),
                cum: num(rng, 9) as u32,
                missing: (0..rng.below(20)).map(|_| num(rng, 9) as u32).collect(),
            },
            _ => Control::Decline {
                seq: num(rng, 9),
                posted: num(rng, 9),
            },
        };
        let mut b = Vec::new();
        c.encode(&mut b);
        assert_eq!(Control::decode(&b), Ok(c));
        let ok = check::control(&b);
        check::control(&mutate(rng, &b));
        (1, u32::from(ok))
    });
    // Every valid message made was accepted as it was.
    assert_eq!(accepted, tried);
}

#[test]
fn forwarding_segments_decode_canonically_and_never_panic() {
    let (tried, accepted) = each_case("segment", |rng| {
        let seg_bytes = 1 + rng.below(64) as usize;
        let len = rng.below(200) as usize;
        check::segment(&rng.bytes(len), seg_bytes);
        let envelope = rng.below(4) == 0;
        let total_len = num(rng, 300);
        let nsegs = if envelope {
            1
        } else {
            forward::nsegs(total_len, seg_bytes)
        };
        let seg = rng.below(u64::from(nsegs).min(1000)) as u32;
        let h = forward::SegHeader {
            root: num(rng, 9) as u32,
            tag: num(rng, 9) as i32,
            msg: num(rng, 9),
            total_len,
            seg,
            nsegs,
            envelope,
        };
        let dests: Vec<forward::Dest> = (0..rng.below(6))
            .map(|_| forward::Dest {
                rank: num(rng, 9) as u32,
                seq: num(rng, 9),
            })
            .collect();
        let payload = if envelope {
            Vec::new()
        } else {
            rng.bytes(forward::seg_len(total_len, seg, seg_bytes))
        };
        let mut b = Vec::new();
        forward::encode(&h, (seg == 0).then_some(&dests[..]), &payload, &mut b);
        let s = forward::decode(&b, seg_bytes).expect("a consistent segment decodes");
        assert_eq!((s.h, &b[s.payload_at..]), (h, &payload[..]));
        assert_eq!(s.dests, (seg == 0).then_some(dests));
        let ok = check::segment(&b, seg_bytes);
        check::segment(&mutate(rng, &b), seg_bytes);
        (1, u32::from(ok))
    });
    // Every valid message made was accepted as it was.
    assert_eq!(accepted, tried);
}

#[test]
fn dbcast_segments_decode_canonically_and_never_panic() {
    let (tried, accepted) = each_case("dbcast", |rng| {
        let seg_bytes = 1 + rng.below(64) as usize;
        let len = rng.below(300) as usize;
        check::dbcast(&rng.bytes(len), seg_bytes);
        let total_len = num(rng, 300);
        let nsegs = forward::nsegs(total_len, seg_bytes);
        let seg = rng.below(u64::from(nsegs).min(1000)) as u32;
        let h = dbcast::SegHeader {
            root: num(rng, 9) as u32,
            tag: num(rng, 9) as i32,
            msg: num(rng, 9),
            total_len,
            seg,
            nsegs,
            shape: if rng.below(2) == 0 {
                Shape::Binomial
            } else {
                Shape::Chain
            },
        };
        let list: Vec<dbcast::Entry> = (0..1 + rng.below(5))
            .map(|_| dbcast::Entry {
                rank: num(rng, 9) as u32,
                priority: num(rng, 9) as i32,
                seq: num(rng, 9),
                before_total: num(rng, 9),
                before_tag: num(rng, 9),
            })
            .collect();
        let payload = rng.bytes(forward::seg_len(total_len, seg, seg_bytes));
        let mut b = Vec::new();
        dbcast::encode(&h, (seg == 0).then_some(&list[..]), &payload, &mut b);
        let s = dbcast::decode(&b, seg_bytes).expect("a consistent segment decodes");
        assert_eq!((s.h, &b[s.payload_at..]), (h, &payload[..]));
        assert_eq!(s.list, (seg == 0).then_some(list));
        let ok = check::dbcast(&b, seg_bytes);
        check::dbcast(&mutate(rng, &b), seg_bytes);
        (1, u32::from(ok))
    });
    // Every valid message made was accepted as it was.
    assert_eq!(accepted, tried);
}

#[test]
fn heal_messages_decode_canonically_and_never_panic() {
    let (tried, accepted) = each_case("heal", |rng| {
        let len = rng.below(40) as usize;
        check::heal(&rng.bytes(len));
        let n = rng.below(64) as usize;
        let payload = rng.bytes(n);
        let seq = num(rng, 9);
        let m = match rng.below(3) {
            0 => HealMsg::Data {
                seq,
                first: num(rng, 9) as u32,
                payload: &payload,
            },
            1 => HealMsg::Switch { seq },
            _ => HealMsg::Offer {
                seq,
                len: num(rng, 9),
            },
        };
        let mut b = Vec::new();
        m.encode(&mut b);
        assert_eq!(HealMsg::decode(&b), Some(m.clone()));
        let ok = check::heal(&b);
        check::heal(&mutate(rng, &b));
        (1, u32::from(ok))
    });
    // Every valid message made was accepted as it was.
    assert_eq!(accepted, tried);
}
