//! The schedule engine shared by every collective: the per-rank action DAG (`ir`) and the
//! dependency-driven executor that runs it against a `Backend` (`exec`). Pure code: no MPI, no
//! sockets, no clock; the backend does all I/O. The GOAL text and binary forms will grow here on
//! top of the same `Builder` and `Schedule`.

pub mod exec;
pub mod ir;

pub use exec::{Backend, Execution};
pub use ir::{ActionId, BufRef, BuildError, Builder, Op, Schedule};

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
