//! Schedule generators: ranks and topology in, a per-rank `Schedule` (or a plan) out. Pure
//! functions with no I/O; what the actions do on the wire belongs to the transports, when they
//! run to `sched`.
//!
//! - `tree`: the rank arithmetic of the binary scout tree; `scout`: the broadcast and barrier of
//!   Chen, Carrasco and Apon's paper (scouts over point-to-point, then one multicast);
//! - `hosts`: which ranks share a host (the two-level forms of `coll::hier`);
//! - `binomial`, `dissemination`: the GOAL paper's Listings 2 and 3; `pipeline`: chain,
//!   binary-tree and relay broadcasts of long messages;
//! - `prefix`: topology IDs, the routing table and the stage rule of MPICAST_Imcast;
//!   `imcast_sched`: that multicast as schedules, for the simulator;
//! - `dbcast`: the tree of a dynamic broadcast over its recipient list; `dbcast_sched`: as
//!   schedules; `fanout`: which of a program's sends form one dynamic broadcast
//!   (`MPICAST_FANOUT`);
//! - `agents`: the multiple multicasts of seed 003 (naive, SPCCO, agent-based) over up-down
//!   routing.

pub mod agents;
pub mod binomial;
pub mod dbcast;
pub mod dbcast_sched;
pub mod dissemination;
pub mod fanout;
pub mod hosts;
pub mod imcast_sched;
pub mod pipeline;
pub mod prefix;
pub mod scout;
pub mod tree;

pub use scout::{barrier, bcast, Sync};
pub use tree::{tree_children, tree_parent, TreeChildren};

/// Point-to-point tag of the zero-byte scout messages of a broadcast on the private
/// communicator.
pub const TAG_SCOUT: u32 = 1;

/// The tag of a barrier's scouts: their own, so that in an erroneous program where one rank
/// calls MPI_Barrier and another MPI_Bcast on the same communicator neither takes the
/// other's scouts for its own (the root would multicast to ranks that wait for a release,
/// and blame the network); both wait, and the message of the timeout says where each is.
pub const TAG_SCOUT_BARRIER: u32 = 6;

#[cfg(test)]
mod sim_tests;
