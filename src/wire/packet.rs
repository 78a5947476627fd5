//! packet: the one datagram format of mpicast (data fragments, barrier release, release query,
//! repair query, setup probe) and its authentication.
//!
//! Layout, little-endian, fixed: magic(4) version(1) kind(1) reserved(2) job(8) comm(4) root(4)
//! seq(8) frag(4) nfrags(4) total_len(8) | payload | MAC(16). The MAC covers header||payload:
//! up to `SHORT_MAC_MAX` bytes (a datagram of a 1500- or 4096-byte MTU) it is SipHash-2-4 with
//! 128-bit output under the key's short half, above it keyed BLAKE3 truncated to 16 bytes (the
//! length selects the MAC, so a datagram is valid under one of them at most). Both are keyed
//! PRFs; SipHash is 4.7 times cheaper than BLAKE3 at 1.5 KB, where BLAKE3 cannot hash chunks in
//! parallel, and BLAKE3 1.6 times cheaper at 64 KB (BENCHMARKS.md, CPU per byte). Only magic
//! and version are read before the MAC is verified (and `peek_comm`, which only chooses which
//! key to verify with).

use std::fmt;

use super::Ctx;

pub const MAGIC: [u8; 4] = *b"MPCW";
/// 2: the MAC of short datagrams is SipHash-2-4 (1: BLAKE3 for all).
pub const VERSION: u8 = 2;
pub const HEADER_LEN: usize = 48;
pub const MAC_LEN: usize = 16;
pub const OVERHEAD: usize = HEADER_LEN + MAC_LEN;

/// Smallest data payload per datagram, whatever the MTU says.
pub const MIN_FRAG: usize = 64;

/// Data bytes per datagram for ranks whose smallest UDP payload is `min_payload` (what the
/// smallest MTU among them allows), capped by `MPICAST_FRAG_BYTES` when it is set (`cap` > 0):
/// the size every rank of a communicator derives from the same gathered facts.
pub fn frag_for(min_payload: usize, cap: usize) -> usize {
    let mut frag = min_payload.saturating_sub(OVERHEAD);
    if cap > 0 {
        frag = frag.min(cap);
    }
    frag.max(MIN_FRAG)
}

// Field offsets inside the header.
const O_VERSION: usize = 4;
const O_KIND: usize = 5;
const O_RESERVED: usize = 6;
const O_JOB: usize = 8;
const O_COMM: usize = 16;
const O_ROOT: usize = 20;
const O_SEQ: usize = 24;
const O_FRAG: usize = 32;
const O_NFRAGS: usize = 36;
const O_TOTAL: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Data = 1,
    Release = 2,
    ReleaseQuery = 3,
    Probe = 4,
    /// A receiver's request to the root's responder for fragments of a broadcast the root has
    /// already left: the payload lists them (u32 each, little-endian), `frag` names the asker.
    RepairQuery = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Data,
            2 => Kind::Release,
            3 => Kind::ReleaseQuery,
            4 => Kind::Probe,
            5 => Kind::RepairQuery,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub job: u64,
    pub comm: u32,
    pub seq: u64,
    pub root: u32,
    pub frag: u32,
    pub nfrags: u32,
    pub total_len: u64,
}

/// Why a datagram or control message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reject {
    Short,
    BadMagic,
    BadVersion,
    BadKind,
    BadMac,
    WrongJob,
    WrongComm,
    Malformed,
    /// A control message for another operation than the one being run.
    WrongSeq,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reject::Short => "datagram too short",
            Reject::BadMagic => "bad magic",
            Reject::BadVersion => "unsupported version",
            Reject::BadKind => "unknown kind",
            Reject::BadMac => "authentication failed",
            Reject::WrongJob => "datagram of another job",
            Reject::WrongComm => "datagram of another communicator",
            Reject::Malformed => "inconsistent fields",
            Reject::WrongSeq => "message of another operation",
        })
    }
}

impl std::error::Error for Reject {}

/// Longest header||payload authenticated by SipHash; longer ones by BLAKE3.
pub const SHORT_MAC_MAX: usize = 4096;

fn mac(ctx: &Ctx, authed: &[u8]) -> [u8; MAC_LEN] {
    if authed.len() <= SHORT_MAC_MAX {
        use siphasher::sip128::{Hasher128, SipHasher24};
        use std::hash::Hasher;
        let mut h = SipHasher24::new_with_key(ctx.key.short());
        h.write(authed);
        return h.finish128().as_bytes();
    }
    let hash = blake3::Hasher::new_keyed(ctx.key.bytes())
        .update(authed)
        .finalize();
    let mut m = [0; MAC_LEN];
    m.copy_from_slice(&hash.as_bytes()[..MAC_LEN]);
    m
}

// The comparison must not leak how many leading bytes of a forgery were right.
fn mac_eq(a: &[u8], b: &[u8; MAC_LEN]) -> bool {
    a.len() == MAC_LEN && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Writes header, payload and MAC into `out` (cleared first; its capacity is reused).
/// Does not check that the header is consistent: that is the decoder's job.
pub fn encode(ctx: &Ctx, h: &Header, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(OVERHEAD + payload.len());
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(h.kind as u8);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&h.job.to_le_bytes());
    out.extend_from_slice(&h.comm.to_le_bytes());
    out.extend_from_slice(&h.root.to_le_bytes());
    out.extend_from_slice(&h.seq.to_le_bytes());
    out.extend_from_slice(&h.frag.to_le_bytes());
    out.extend_from_slice(&h.nfrags.to_le_bytes());
    out.extend_from_slice(&h.total_len.to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    out.extend_from_slice(payload);
    let m = mac(ctx, out);
    out.extend_from_slice(&m);
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn check_prefix(dgram: &[u8]) -> Result<(), Reject> {
    if dgram.len() < OVERHEAD {
        return Err(Reject::Short);
    }
    if dgram[..4] != MAGIC {
        return Err(Reject::BadMagic);
    }
    if dgram[O_VERSION] != VERSION {
        return Err(Reject::BadVersion);
    }
    Ok(())
}

/// The communicator id of a datagram, unauthenticated: only for choosing the key to verify with.
pub fn peek_comm(dgram: &[u8]) -> Option<u32> {
    check_prefix(dgram).ok()?;
    Some(u32_at(dgram, O_COMM))
}

/// The operation (sequence number) of a datagram, unauthenticated: only for choosing which of
/// several concurrent operations verifies it.
pub fn peek_seq(dgram: &[u8]) -> Option<u64> {
    check_prefix(dgram).ok()?;
    Some(u64_at(dgram, O_SEQ))
}

/// What identifies a data datagram that rank `root` of communicator `comm` sent, for a
/// socket filter (`net::McastSocket::drop_matching`): the kind's byte (offset, value) and the
/// little-endian words (offset, value) of the communicator and the root.
pub fn data_of(comm: u32, root: u32) -> ((u32, u8), [(u32, u32); 2]) {
    (
        (O_KIND as u32, Kind::Data as u8),
        [(O_COMM as u32, comm), (O_ROOT as u32, root)],
    )
}

/// The root of a datagram's operation, unauthenticated: only for choosing which of several
/// concurrent operations (of several roots) verifies it.
pub fn peek_root(dgram: &[u8]) -> Option<u32> {
    check_prefix(dgram).ok()?;
    Some(u32_at(dgram, O_ROOT))
}

/// Verifies and parses a datagram; the payload borrows from `dgram`.
pub fn decode<'a>(ctx: &Ctx, dgram: &'a [u8]) -> Result<(Header, &'a [u8]), Reject> {
    check_prefix(dgram)?;
    let (authed, tag) = dgram.split_at(dgram.len() - MAC_LEN);
    if !mac_eq(tag, &mac(ctx, authed)) {
        return Err(Reject::BadMac);
    }
    let kind = Kind::from_u8(authed[O_KIND]).ok_or(Reject::BadKind)?;
    let h = Header {
        kind,
        job: u64_at(authed, O_JOB),
        comm: u32_at(authed, O_COMM),
        root: u32_at(authed, O_ROOT),
        seq: u64_at(authed, O_SEQ),
        frag: u32_at(authed, O_FRAG),
        nfrags: u32_at(authed, O_NFRAGS),
        total_len: u64_at(authed, O_TOTAL),
    };
    if h.job != ctx.job {
        return Err(Reject::WrongJob);
    }
    if h.comm != ctx.comm {
        return Err(Reject::WrongComm);
    }
    let payload = &authed[HEADER_LEN..];
    let reserved_ok = authed[O_RESERVED..O_JOB].iter().all(|&b| b == 0);
    let len = payload.len() as u64;
    let consistent = reserved_ok
        && match kind {
            // A fragment is non-empty, inside a non-empty message, and no fragment can be
            // shorter than the message average. The exact size depends on the receiver's
            // frag_payload, which it checks itself. An empty message is one empty fragment.
            Kind::Data if h.total_len == 0 => h.frag == 0 && h.nfrags == 1 && len == 0,
            Kind::Data => {
                h.frag < h.nfrags
                    && len > 0
                    && len <= h.total_len
                    && u64::from(h.nfrags) <= h.total_len
                    && len.saturating_mul(u64::from(h.frag)) < h.total_len
            }
            Kind::Release | Kind::ReleaseQuery => len == 0 && h.nfrags == 0 && h.total_len == 0,
            Kind::Probe => true,
            Kind::RepairQuery => len > 0 && len % 4 == 0 && h.nfrags == 0 && h.total_len == 0,
        };
    if !consistent {
        return Err(Reject::Malformed);
    }
    Ok((h, payload))
}

#[cfg(test)]
mod tests {
    use super::super::{Ctx, Key};
    use super::*;

    fn ctx() -> Ctx {
        Ctx {
            key: Key::new([7; 32]),
            job: 0x1122_3344_5566_7788,
            comm: 42,
        }
    }

    fn data_header(frag: u32, nfrags: u32, total_len: u64) -> Header {
        Header {
            kind: Kind::Data,
            job: ctx().job,
            comm: ctx().comm,
            seq: 9,
            root: 3,
            frag,
            nfrags,
            total_len,
        }
    }

    use crate::rng::next;

    #[test]
    fn frag_follows_the_mtu_and_the_cap() {
        // 1500-byte MTU: 1472 of UDP payload, 1408 of data (the README's MTU - 92).
        assert_eq!(frag_for(1472, 0), 1408);
        assert_eq!(frag_for(1472, 8000), 1408);
        assert_eq!(frag_for(1472, 1000), 1000);
        assert_eq!(frag_for(65507, 0), 65507 - OVERHEAD);
        assert_eq!(frag_for(100, 0), MIN_FRAG);
        assert_eq!(frag_for(0, 0), MIN_FRAG);
    }

    #[test]
    fn round_trip() {
        let c = ctx();
        let payload: Vec<u8> = (0..100u8).collect();
        let h = data_header(2, 3, 300);
        let mut out = Vec::new();
        encode(&c, &h, &payload, &mut out);
        assert_eq!(out.len(), OVERHEAD + payload.len());
        let (h2, p2) = decode(&c, &out).unwrap();
        assert_eq!(h2, h);
        assert_eq!(p2, &payload[..]);
        assert_eq!(peek_comm(&out), Some(42));
        for kind in [Kind::Release, Kind::ReleaseQuery, Kind::Probe] {
            let h = Header {
                kind,
                frag: 0,
                nfrags: 0,
                total_len: 0,
                ..h
            };
            encode(&c, &h, &[], &mut out);
            assert_eq!(decode(&c, &out).unwrap(), (h, &[][..]));
        }
    }

    #[test]
    fn every_bit_flip_is_rejected() {
        let c = ctx();
        let mut out = Vec::new();
        encode(&c, &data_header(1, 4, 250), &[0xA5; 64], &mut out);
        assert!(decode(&c, &out).is_ok());
        for bit in 0..out.len() * 8 {
            let mut d = out.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            let r = decode(&c, &d);
            assert!(r.is_err(), "bit {bit} flip accepted");
            if bit >= 40 {
                assert_eq!(r.unwrap_err(), Reject::BadMac, "bit {bit}");
            }
        }
    }

    /// Both MACs, on each side of `SHORT_MAC_MAX`: a round trip, a flipped payload bit, a
    /// key that differs in one bit (of the half each MAC uses, or through the derivation),
    /// and a datagram cut to the other MAC's length are all rejected.
    #[test]
    fn short_and_long_datagrams_each_have_their_mac() {
        let c = ctx();
        let mut out = Vec::new();
        for payload_len in [
            0,
            1400,
            SHORT_MAC_MAX - HEADER_LEN,
            SHORT_MAC_MAX - HEADER_LEN + 1,
            9000,
            65000,
        ] {
            let payload: Vec<u8> = (0..payload_len).map(|i| (i * 7) as u8).collect();
            let h = data_header(0, 1, payload_len as u64);
            encode(&c, &h, &payload, &mut out);
            assert_eq!(out.len(), OVERHEAD + payload_len);
            assert_eq!(decode(&c, &out).unwrap(), (h, &payload[..]));
            for byte in [HEADER_LEN, out.len() - MAC_LEN - 1, out.len() - 1] {
                if byte < HEADER_LEN + payload_len || byte >= out.len() - MAC_LEN {
                    let mut d = out.clone();
                    d[byte] ^= 0x10;
                    assert_eq!(decode(&c, &d), Err(Reject::BadMac), "{payload_len}: {byte}");
                }
            }
            for bit in [0, 100, 255] {
                let mut b = *c.key.bytes();
                b[bit / 8] ^= 1 << (bit % 8);
                let other = Ctx {
                    key: Key::new(b),
                    ..c.clone()
                };
                assert_eq!(
                    decode(&other, &out),
                    Err(Reject::BadMac),
                    "{payload_len}: {bit}"
                );
            }
        }
        // The two halves differ: the short MAC's key is not the first half of the long one's.
        assert_ne!(c.key.short()[..], c.key.bytes()[..16]);
    }

    #[test]
    fn wrong_key_job_comm_and_truncation() {
        let c = ctx();
        let mut out = Vec::new();
        encode(&c, &data_header(0, 1, 10), &[1; 10], &mut out);
        let mut other = c.clone();
        other.key = Key::new({
            let mut b = *other.key.bytes();
            b[31] ^= 1;
            b
        });
        assert_eq!(decode(&other, &out), Err(Reject::BadMac));
        let other = Ctx {
            job: c.job + 1,
            ..c.clone()
        };
        assert_eq!(decode(&other, &out), Err(Reject::WrongJob));
        let other = Ctx {
            comm: 43,
            ..c.clone()
        };
        assert_eq!(decode(&other, &out), Err(Reject::WrongComm));
        for n in 0..out.len() {
            let r = decode(&c, &out[..n]);
            assert!(r.is_err(), "truncated to {n} accepted");
        }
        assert_eq!(decode(&c, &out[..OVERHEAD - 1]), Err(Reject::Short));
        let mut long = out.clone();
        long.push(0);
        assert!(decode(&c, &long).is_err());
    }

    #[test]
    fn authentic_but_inconsistent_is_malformed() {
        let c = ctx();
        let mut out = Vec::new();
        let bad = [
            (data_header(3, 3, 30), 10), // frag out of range
            (data_header(0, 1, 10), 0),  // empty fragment
            (data_header(0, 1, 10), 11), // longer than the message
            (data_header(0, 0, 0), 1),   // data of an empty message
            (data_header(0, 2, 0), 0),   // an empty message in two fragments
            (data_header(1, 1, 0), 0),   // the second fragment of an empty message
            (data_header(0, 20, 10), 1), // more fragments than bytes
            (data_header(2, 3, 20), 10), // offset beyond the end
        ];
        for (h, len) in bad {
            encode(&c, &h, &vec![0; len], &mut out);
            assert_eq!(decode(&c, &out), Err(Reject::Malformed), "{h:?} len {len}");
        }
        // The one fragment of an empty message.
        encode(&c, &data_header(0, 1, 0), &[], &mut out);
        assert!(decode(&c, &out).is_ok());
        let h = Header {
            kind: Kind::Release,
            total_len: 1,
            ..data_header(0, 0, 0)
        };
        encode(&c, &h, &[], &mut out);
        assert_eq!(decode(&c, &out), Err(Reject::Malformed));
        // Unknown kind with a valid MAC.
        encode(&c, &data_header(0, 1, 4), &[0; 4], &mut out);
        out[5] = 9;
        let n = out.len() - MAC_LEN;
        let m = mac(&c, &out[..n]);
        out[n..].copy_from_slice(&m);
        assert_eq!(decode(&c, &out), Err(Reject::BadKind));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let c = ctx();
        let mut s = 0xDEAD_BEEF;
        let mut accepted = 0;
        let mut valid = Vec::new();
        encode(&c, &data_header(0, 1, 32), &[5; 32], &mut valid);
        for i in 0..20_000 {
            let len = (next(&mut s) % 200) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| next(&mut s) as u8).collect();
            // Half of the inputs get a valid prefix so they reach the MAC and field checks.
            if i % 2 == 0 && len >= 5 {
                d[..4].copy_from_slice(&MAGIC);
                d[4] = VERSION;
            }
            if i % 7 == 0 {
                d = valid.clone();
                let k = (next(&mut s) % d.len() as u64) as usize;
                d[k] = next(&mut s) as u8;
                d.truncate((next(&mut s) % (d.len() as u64 + 1)) as usize);
            }
            if decode(&c, &d).is_ok() {
                accepted += 1;
            }
            let _ = peek_comm(&d);
        }
        // Only untouched copies of the valid datagram (a byte rewritten with its own value and
        // no truncation) can pass.
        assert!(accepted < 20, "{accepted} random inputs accepted");
    }
}
