//! The README's configuration table must list every variable the library reads, with the
//! default the library uses.

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
}
