//! Any bytes as a segment of MPICAST_Imcast's forwarding, for a segment size the first two
//! bytes choose: no panic, and what decodes is canonical (`wire::check::segment`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::wire::check;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let seg_bytes = usize::from(u16::from_le_bytes([data[0], data[1]]));
    check::segment(&data[2..], seg_bytes);
});
