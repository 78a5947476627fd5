//! `mpicast doctor`: will multicast work on this cluster, and if not, why and what to change.
//!
//! Built so far: the per-host part. `net::host_facts` gathers one host's facts (the interface
//! the library would choose, its state, the kernel's buffer, filter and membership settings);
//! [`host::diagnose`] turns them into findings, each with its fix in plain words. Pure: no I/O
//! here, so every finding is tested with made-up facts. The job-wide part (a launch over MPI:
//! who hears whom, loss by rate, the IGMP querier, the unicast repair path) is not built yet.

pub mod host;
pub mod job;
pub mod report;

pub use host::{diagnose, Finding, Severity};
