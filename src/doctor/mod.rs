//! `mpicast doctor`: will multicast work on this cluster, and if not, why and what to change.
//! Pure: no I/O here, so every finding is tested with made-up facts.
//!
//! - `host`: one host's diagnosis, from the facts `net::host_facts` gathers (the interface the
//!   library would choose, its state, the kernel's buffer, filter and membership settings),
//!   each finding with its fix in plain words;
//! - `job`: the job-wide diagnosis (`mpicast doctor -n N`) from what every rank measured: who
//!   heard whom, full-size datagrams, loss by rate, unicast, the IGMP querier;
//! - `report`: the reports, as text or JSON.
//!
//! The measuring under MPI is `crate::doctor_run` (in the library, for MPICAST_Doctor and the
//! runner of the command line).

pub mod host;
pub mod job;
pub mod report;

pub use host::{diagnose, Finding, Severity};
