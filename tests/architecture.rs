//! docs/architecture.md opens with the table of where each capability lives: every capability
//! has its row, and every file the table names exists (a bare name continues the directory of
//! the path before it in the same row).

#[test]
fn the_capability_table_names_real_files() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{dir}/docs/architecture.md")).unwrap();
    let table: Vec<&str> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| capability"))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    let names: Vec<&str> = table
        .iter()
        .map(|r| r.trim_start_matches('|').split('|').next().unwrap().trim())
        .collect();
    assert_eq!(
        names,
        ["Bcast", "Barrier", "Imcast", "Dbcast", "Mmcast", "GOAL", "doctor", "tune", "sim"]
    );
    let mut checked = 0;
    for row in table {
        let mut cur = String::new();
        let words = row.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)));
        for w in words {
            let is_file = [".rs", ".c", ".F90", ".sh"].iter().any(|e| w.ends_with(e));
            if !(is_file || w.ends_with('/')) || !w.contains(['/', '.']) {
                continue;
            }
            let path = if w.contains('/') {
                cur = match w.rfind('/') {
                    Some(i) if is_file => w[..i].to_string(),
                    _ => w.trim_end_matches('/').to_string(),
                };
                w.to_string()
            } else {
                format!("{cur}/{w}")
            };
            assert!(
                std::path::Path::new(&format!("{dir}/{path}")).exists(),
                "docs/architecture.md names {path}, which does not exist: {row}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} paths found in the table");
}
