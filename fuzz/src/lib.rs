//! The pure modules of mpicast, compiled from their sources for the fuzz targets (the same
//! set the command line includes, as `algo`, `goal`, `sim`, `topology` and `config` use one
//! another, and `wire` uses `algo` and `rng`).

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
#[path = "../../src/rng.rs"]
pub mod rng;
#[allow(dead_code, unused_imports)]
#[path = "../../src/sched/mod.rs"]
pub mod sched;
#[allow(dead_code, unused_imports)]
#[path = "../../src/sim/mod.rs"]
pub mod sim;
#[allow(dead_code, unused_imports)]
#[path = "../../src/topology/mod.rs"]
pub mod topology;
#[allow(dead_code, unused_imports)]
#[path = "../../src/wire/mod.rs"]
pub mod wire;
