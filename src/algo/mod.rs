//! Schedule generators: ranks and topology in, a per-rank `Schedule` out. Pure functions with no
//! I/O; what the actions do on the wire belongs to the transports, when they run to `sched`.
//! `tree` owns the rank arithmetic of the binary scout tree, `scout` the broadcast and barrier of
//! Chen, Carrasco and Apon's paper (scouts gathered over point-to-point, then one multicast).

pub mod agents;
pub mod binomial;
pub mod dbcast;
pub mod dbcast_sched;
pub mod dissemination;
pub mod hosts;
pub mod imcast_sched;
pub mod pipeline;
pub mod prefix;
pub mod scout;
pub mod tree;

pub use scout::{barrier, bcast, Sync};
pub use tree::{tree_children, tree_parent, TreeChildren};

/// Point-to-point tag of the zero-byte scout messages on the private communicator.
pub const TAG_SCOUT: u32 = 1;

#[cfg(test)]
mod sim_tests;
