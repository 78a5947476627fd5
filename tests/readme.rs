//! The README's configuration table must list every variable the library reads, with the
//! default the library uses, and nothing else: its rows are the table of settings
//! (`mpicast::config::VARIABLES`, made from `src/config/table.rs`).

#[test]
fn readme_documents_every_variable() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (name, default, _) in mpicast::config::VARIABLES {
        let row = format!("| `{name}` | `{default}` |");
        assert!(
            readme.contains(&row),
            "README.md lacks the row starting {row}"
        );
    }
    // And no row for a variable the library does not read (a setting removed or renamed).
    let rows: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `MPICAST_"))
        .filter_map(|l| l.split('`').next())
        .collect();
    for r in &rows {
        let name = format!("MPICAST_{r}");
        assert!(
            mpicast::config::VARIABLES
                .iter()
                .any(|(n, _, _)| *n == name),
            "README.md has a row for {name}, which is not a setting"
        );
    }
    assert_eq!(
        rows.len(),
        mpicast::config::VARIABLES.len(),
        "one README row per setting"
    );
}

/// The README's first screen, before the figures, leads to the settings that make a run on one
/// machine multicast (without them such a run hands everything to the host MPI).
#[test]
fn readme_leads_to_the_one_machine_settings_first() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let first = readme
        .split("\n## ")
        .next()
        .expect("README.md has sections");
    assert!(
        readme[first.len()..].starts_with("\n## How fast"),
        "README.md: the first section after the introduction must be the figures"
    );
    for want in [
        "MPICAST_IFACE=lo",
        "MPICAST_TTL=0",
        "MPICAST_TOPO=flat",
        "MPICAST_MIN_BYTES=0",
        "(LD_PRELOAD.md#on-one-machine)",
    ] {
        assert!(
            first.contains(want),
            "README.md's introduction (before ## How fast) lacks {want}"
        );
    }
    let preload = std::fs::read_to_string(format!("{dir}/LD_PRELOAD.md")).unwrap();
    assert!(
        preload.contains("\n### On one machine\n"),
        "LD_PRELOAD.md lacks the section ### On one machine that the README links to"
    );
}
