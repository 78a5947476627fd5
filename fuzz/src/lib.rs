//! The pure modules of mpicast, compiled from their sources for the fuzz targets.

#[allow(dead_code, unused_imports)]
#[path = "../../src/algo/mod.rs"]
pub mod algo;
#[allow(dead_code, unused_imports)]
#[path = "../../src/config/mod.rs"]
pub mod config;
#[allow(dead_code, unused_imports)]
#[path = "../../src/goal/mod.rs"]
pub mod goal;
#[allow(dead_code, unused_imports)]
#[path = "../../src/sched/mod.rs"]
pub mod sched;
