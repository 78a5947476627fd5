//! Any bytes as a binary schedule: no panic, and whatever loads re-assembles to a schedule that
//! loads equal, prints, reparses and validates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::goal::{binary, paper, print, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = binary::load(data) else { return };
    let bin = binary::assemble(&p).expect("loaded programs assemble");
    assert_eq!(binary::load(&bin).expect("re-assembled loads"), p);
    let text = print::to_paper(&p);
    let again = paper::parse(text.as_bytes())
        .unwrap_or_else(|e| panic!("printed text does not parse: {e}\n{text}"))
        .program;
    assert_eq!(print::to_paper(&again), text);
    let _ = validate::validate(&p, None, &validate::BufferSizes::default());
});
