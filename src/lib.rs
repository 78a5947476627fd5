//! mpicast: MPI_Bcast and MPI_Barrier over reliable UDP IP multicast, loaded with
//! LD_PRELOAD under an unmodified MPI program or linked. See docs/architecture.md.

pub mod algo;
pub mod config;
pub mod goal;
pub mod reach;
// Pure: the one seeded generator (SplitMix64), of the library and its tests.
pub mod rng;
pub mod sched;
pub mod sim;
pub mod topology;
// Pure: the settings `mpicast tune` chooses from its measurements.
pub mod tune;
pub mod typemap;
pub mod wire;

pub mod host;
// The poison-tolerant lock helpers every lock site uses.
pub mod lock;
pub mod net;
// Pure, but over the facts that `net` gathers.
pub mod doctor;
pub mod doctor_run;

pub mod coll;
pub mod fastpath;
pub mod ffi;
pub mod presence;
pub mod session;
pub mod stats;
pub mod transport;
