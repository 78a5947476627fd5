//! Where this process runs inside its host, from the files Linux exposes: the CPU it last ran on
//! (field 39, "processor", of `/proc/thread-self/stat`, or of `/proc/self/stat` on kernels
//! before 3.17), then that CPU's `topology/physical_package_id` and `topology/core_id` and its
//! NUMA node (the `nodeK` entry) under `/sys/devices/system/cpu/cpuN/`.
//!
//! Why these files and not hwloc: they need no dependency and no `unsafe` (plain reads), and
//! package, NUMA node and core are all [`super::resolve`] orders ranks by. hwloc knows more
//! (caches, dies, PCI locality) but is a C library: every user's build of mpicast would need
//! it and its headers, for facts that do not change the IDs.
//!
//! Anything missing (no `/proc` or `/sys`, a container that hides them, a kernel without NUMA,
//! an architecture that reports a package of -1) is [`UNKNOWN`], and `resolve` then tells the
//! ranks of that host apart by rank order.
//!
//! The facts are a snapshot: a rank that is not bound to a core may run elsewhere a moment
//! later. Read them once, at the first use of a communicator, and let every rank use the same
//! gathered facts from then on; bind ranks (`mpirun --bind-to core`, Hydra's `-bind-to core`)
//! for facts that stay true.

use super::{CpuFacts, UNKNOWN};
use std::path::Path;

/// This process's (calling thread's) placement, as the running system reports it.
pub fn read() -> CpuFacts {
    let stat = std::fs::read_to_string("/proc/thread-self/stat")
        .or_else(|_| std::fs::read_to_string("/proc/self/stat"))
        .unwrap_or_default();
    from_sysfs(
        processor_of_stat(&stat),
        Path::new("/sys/devices/system/cpu"),
    )
}

/// The facts of CPU `cpu` (`None`: not known) under `cpu_dir` (`/sys/devices/system/cpu`, or
/// a copy of it in a test).
pub fn from_sysfs(cpu: Option<u32>, cpu_dir: &Path) -> CpuFacts {
    let Some(cpu) = cpu else {
        return CpuFacts::UNKNOWN;
    };
    let dir = cpu_dir.join(format!("cpu{cpu}"));
    let number = |file: &str| -> u32 {
        std::fs::read_to_string(dir.join("topology").join(file))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v != UNKNOWN)
            .unwrap_or(UNKNOWN)
    };
    CpuFacts {
        cpu,
        package: number("physical_package_id"),
        node: node_of(&dir).unwrap_or(UNKNOWN),
        core: number("core_id"),
    }
}

/// The K of the `nodeK` entry in a CPU's directory (the lowest, should there be several).
fn node_of(dir: &Path) -> Option<u32> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let k = name.to_str()?.strip_prefix("node")?;
            if k.is_empty() || !k.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            k.parse::<u32>().ok().filter(|&v| v != UNKNOWN)
        })
        .min()
}

/// Field 39 ("processor") of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself hold spaces and ')', so fields are counted from the last ')'.
pub fn processor_of_stat(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the ')'.
    rest.split_whitespace()
        .nth(39 - 3)?
        .parse::<u32>()
        .ok()
        .filter(|&v| v != UNKNOWN)
}
