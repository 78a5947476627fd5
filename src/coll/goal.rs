//! GOAL programs run over MPI, below the C boundary (`ffi::ext::goal` converts the arguments
//! of the `MPICAST_Goal_*` calls and maps the errors): a run of a loaded program, its
//! registration with the process's progress (`transport::progress`, and the progress thread),
//! and what a handle keeps between runs (`run`).

pub mod run;

pub use run::{register, register_pending, unregister, Exec, RoundsRun, RunCell, Spare};
