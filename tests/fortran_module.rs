//! include/mpicast.f90 (the Fortran module, written by hand) must cover the generated C
//! header: an interface bound to every MPICAST_* function, every status value with its
//! number, and the MPICAST_Stats fields in the C order. The rule in docs/architecture.md
//! ("Extension calls") is that a new extension call gets its Fortran interface in the same
//! change; this test is what enforces it.

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The Fortran source without comments, lower-cased, with runs of blanks as one space.
fn fortran_code(src: &str) -> String {
    src.lines()
        .map(|l| l.split('!').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
        .to_ascii_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn fortran_module_covers_the_header() {
    let header = read("include/mpicast.h");
    let f90_raw = read("include/mpicast.f90");
    let f90 = fortran_code(&f90_raw);
    let mut missing = Vec::new();

    // Functions: "<type> MPICAST_Name(" at the start of a declaration line.
    let functions: Vec<&str> = header
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(");"))
        .filter_map(|l| {
            let start = l.find("MPICAST_")?;
            let end = start + l[start..].find('(')?;
            Some(&l[start..end])
        })
        .collect();
    assert!(
        functions.len() >= 3,
        "found too few functions in the header: {functions:?}"
    );
    for f in &functions {
        // The bind(C) name keeps its case; the Fortran name is case-insensitive.
        if !f90_raw.contains(&format!("bind(C, name=\"{f}\")")) {
            missing.push(format!("an interface with bind(C, name=\"{f}\")"));
        }
    }

    // Status values: "  MPICAST_X = N,".
    for l in header.lines().map(str::trim) {
        let Some((name, value)) = l.trim_end_matches(',').split_once(" = ") else {
            continue;
        };
        if name.starts_with("MPICAST_") && value.parse::<i64>().is_ok() {
            let want = format!(
                "integer(c_int), parameter, public :: {} = {value}",
                name.to_ascii_lowercase()
            );
            if !f90.contains(&want) {
                missing.push(want);
            }
        }
    }

    // MPICAST_Stats: the fields in the C order, as 64-bit integers.
    let body = header
        .split("typedef struct MPICAST_Stats {")
        .nth(1)
        .and_then(|s| s.split("} MPICAST_Stats;").next())
        .expect("MPICAST_Stats in the header");
    let fields: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("uint64_t "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let decl: String = fields
        .iter()
        .map(|f| format!("integer(c_int64_t) :: {f} "))
        .collect();
    let want = format!(
        "type, bind(c), public :: mpicast_stats {}end type mpicast_stats",
        decl
    );
    if !f90.contains(&want) {
        missing.push(format!("MPICAST_Stats as in the header: {want}"));
    }

    assert!(
        missing.is_empty(),
        "include/mpicast.f90 lacks what include/mpicast.h has:\n  {}",
        missing.join("\n  ")
    );
}
