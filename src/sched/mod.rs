//! The schedule engine shared by every collective: the per-rank action DAG (`ir`) and the
//! dependency-driven executor that runs it against a `Backend` (`exec`). Pure code: no MPI, no
//! sockets, no clock; the backend does all I/O.
//!
//! - `func`: the predefined `exec` functions;
//! - `window`: sliding-window execution in bounded memory (the GOAL paper's Theorems 3 and 4);
//! - `layers`: schedules that run in rounds;
//! - `testutil` (tests only): the reverse dependency table and the tests' draws.
//!
//! The GOAL text and binary forms live in `crate::goal`, on top of the same `Builder` and
//! `Schedule`.

pub mod exec;
pub mod func;
pub mod ir;
pub mod layers;
pub mod window;

pub use exec::{Backend, ExecMemory, Execution};
pub use func::{Dtype, Func, Opcode, Predef};
pub use ir::{
    ActionId, BufRef, BuildError, Builder, Op, Schedule, ANY_PEER, ANY_TAG, SCRATCH_SLOT,
};
pub use layers::Layers;
pub use window::{ActionSource, Streamed, TopoSource, WindowedExecution};

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
