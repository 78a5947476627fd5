//! Any bytes as a received datagram, and any header fields and payload as a datagram this
//! rank's peers could send: no panic, what decodes is canonical, what we encode decodes to
//! itself (`wire::check`). The first byte chooses the reading.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::wire::{check, packet::Header, Ctx, Key};

fn ctx() -> Ctx {
    Ctx {
        key: Key::new([9; 32]),
        job: 77,
        comm: 5,
    }
}

fuzz_target!(|data: &[u8]| {
    let ctx = ctx();
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    if how & 1 == 0 {
        check::datagram(&ctx, rest);
        return;
    }
    // kind(1) job(1: ours or not) comm(1) seq(8) root(4) frag(4) nfrags(4) total_len(8)
    if rest.len() < 31 {
        return;
    }
    let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(rest[i..i + 8].try_into().unwrap());
    let h = Header {
        kind: check::kind(rest[0]),
        job: if rest[1] == 0 { 1 } else { ctx.job },
        comm: if rest[2] == 0 { 1 } else { ctx.comm },
        seq: u64_at(3),
        root: u32_at(11),
        frag: u32_at(15),
        nfrags: u32_at(19),
        total_len: u64_at(23),
    };
    check::datagram_fields(&ctx, &h, &rest[31..]);
});
