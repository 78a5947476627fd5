//! The C ABI: the only place with `#[no_mangle] extern "C"`. Every body runs inside one
//! panic boundary (`guard`), so no panic ever unwinds into the application or MPI.

pub mod ext;
pub mod fortran;
pub mod mpi;
pub mod progress;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; a panic becomes `fallback()` after a message on stderr.
pub(crate) fn guard<T>(what: &str, fallback: impl FnOnce() -> T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            crate::session::say(&format!("mpicast: internal error in {what}: {msg}"));
            fallback()
        }
    }
}
