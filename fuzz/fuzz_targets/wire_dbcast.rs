//! Any bytes as a segment of dynamic broadcast, for a segment size the first two bytes
//! choose: no panic, and what decodes is canonical (`wire::check::dbcast`); the same bytes as
//! a receiver's control message (`wire::check::control`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::wire::check;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let seg_bytes = usize::from(u16::from_le_bytes([data[0], data[1]]));
    check::dbcast(&data[2..], seg_bytes);
    check::control(&data[2..]);
});
