//! The checked-in include/mpicast.h must be what the pinned cbindgen makes of the
//! sources. `MPICAST_REGEN_HEADER=1 cargo test --test header` (make header) rewrites it.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cfg =
        cbindgen::Config::from_file(Path::new(dir).join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(cfg)
        .generate()
        .expect("cbindgen could not parse the crate");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = Path::new(dir).join("include/mpicast.h");
    if std::env::var_os("MPICAST_REGEN_HEADER").is_some() {
        std::fs::write(&path, &fresh).expect("write include/mpicast.h");
        return;
    }
    let current = std::fs::read(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "include/mpicast.h is stale: run `make header` and commit it"
    );
}
