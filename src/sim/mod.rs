//! The timing simulator: runs a GOAL `Program` (one `sched::Schedule` per rank) in the LogGOPS
//! model of LogGOPSim (Hoefler, Schneider, Lumsdaine, HPDC 2010) and says when each rank ends,
//! which rank ends last and, on request, which chain of actions made it end then.
//!
//! Not to be confused with `goal/replay.rs`, the functional replay that tests use: that one moves
//! real bytes in a random order and checks results; this one moves no bytes and computes times.
//! Pure code: no I/O, no clock, no MPI, no `unsafe`. The model and its rules are in `loggops`
//! (and in docs/sim.md), with the program in its compact form in `flat`, the event queue in
//! `queue` and multicast loss and repair in `repair`; the optional network and its
//! contention in `network` and `contention`, up-down routing (seed 003) in `updown`;
//! `calibrate` fits the parameters to measured ping-pongs (the programs it generates and the
//! fit; `mpicast sim calibrate` runs them). The command line is `mpicast sim`
//! (src/bin/mpicast/sim.rs).

pub mod calibrate;
pub mod contention;
pub mod flat;
pub mod loggops;
pub mod network;
pub mod noise;
pub mod queue;
pub mod repair;
pub mod updown;

pub use contention::Contention;
pub use flat::Flat;
pub use loggops::{
    critical_path, describe, simulate, simulate_flat, simulate_flat_full, simulate_flat_on,
    simulate_flat_with, simulate_on, Link, Options, Outcome, Params, PerByte, QueueStats,
    ReadyOrder, RecvCpu, SimError, Step, Via, Waiting,
};
pub use network::Network;
pub use noise::Noise;

#[cfg(test)]
mod lgs_tests;
#[cfg(test)]
mod network_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod updown_tests;
