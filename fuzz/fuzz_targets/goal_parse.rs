//! Any bytes as GOAL text, in both dialects: no panic, and whatever parses prints to text that
//! parses to the same program, assembles, loads back equal, and validates without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::goal::{binary, dot, lgs, paper, parse_any, print, validate, Program};

fn check(p: &Program) {
    let text = print::to_paper(p);
    let again = paper::parse(text.as_bytes())
        .unwrap_or_else(|e| panic!("printed text does not parse: {e}\n{text}"))
        .program;
    assert_eq!(
        print::to_paper(&again),
        text,
        "paper text is not a fixed point"
    );
    let bin = binary::assemble(p).expect("small inputs assemble");
    let back = binary::load(&bin).unwrap_or_else(|e| panic!("own binary does not load: {e}"));
    assert_eq!(&back, p, "binary round trip");
    if let Ok(l) = print::to_loggopsim(p) {
        let q = lgs::parse(l.as_bytes())
            .unwrap_or_else(|e| panic!("printed LogGOPSim text does not parse: {e}\n{l}"))
            .program;
        assert_eq!(print::to_loggopsim(&q).unwrap(), l);
    }
    let _ = validate::validate(p, None, &validate::BufferSizes::default());
    let _ = dot::to_dot(p);
}

/// True when a number of 5 digits or more follows `#`, `rank` or `num_ranks`: such a group
/// is legal (up to `goal::MAX_RANKS`) and costs memory per rank, so fuzzing it would only
/// measure allocation speed.
fn big_group(data: &[u8]) -> bool {
    for key in [&b"#"[..], b"rank", b"num_ranks"] {
        for (i, w) in data.windows(key.len()).enumerate() {
            if w == key {
                let rest = &data[i + key.len()..];
                let digits = rest
                    .iter()
                    .skip_while(|c| **c == b' ' || **c == b'\t')
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits >= 5 {
                    return true;
                }
            }
        }
    }
    false
}

fuzz_target!(|data: &[u8]| {
    if big_group(data) {
        return;
    }
    for p in [lgs::parse(data), paper::parse(data), parse_any(data)]
        .into_iter()
        .flatten()
    {
        check(&p.program);
    }
});
