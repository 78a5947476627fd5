//! Which MPI this library was built for, and which one it runs under. A library built for
//! Open MPI and loaded under MPICH (or the reverse) would misread every handle, so the
//! first call checks and stops with a message instead of crashing.

use std::os::raw::{c_char, c_int};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    OpenMpi,
    Mpich,
    /// The MPI-5 standard ABI (`mpi_abi.h`, `libmpi_abi.so`): whichever MPI provides it.
    Abi,
    Unknown,
}

impl Flavour {
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "Open MPI",
            Flavour::Mpich => "MPICH",
            Flavour::Abi => "the MPI-5 standard ABI",
            Flavour::Unknown => "an unknown MPI",
        }
    }
    /// The directory name used by `make lib` for this flavour's build.
    pub fn build_dir(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "openmpi",
            Flavour::Mpich => "mpich",
            Flavour::Abi => "abi",
            Flavour::Unknown => "<flavour>",
        }
    }
}

pub fn built_for() -> Flavour {
    // SAFETY: an initialised constant of the C shim.
    match unsafe { super::c::MPICAST_C_FLAVOUR } {
        1 => Flavour::OpenMpi,
        2 => Flavour::Mpich,
        3 => Flavour::Abi,
        _ => Flavour::Unknown,
    }
}

/// The host's MPI_Get_library_version string. This call has the same C signature in every
/// MPI, so it is safe to make before we know the flavour matches.
pub fn library_version() -> String {
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING of both flavours.
    let rc =
        unsafe { mpi_sys::PMPI_Get_library_version(buf.as_mut_ptr() as *mut c_char, &mut len) };
    if rc != 0 {
        return String::new();
    }
    let len = (len.max(0) as usize).min(buf.len());
    let s = &buf[..len];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).trim().to_string()
}

/// Classifies a version string.
pub fn classify(version: &str) -> Flavour {
    if version.contains("Open MPI") {
        Flavour::OpenMpi
    } else if version.contains("MPICH") || version.contains("Intel(R) MPI") {
        Flavour::Mpich
    } else {
        Flavour::Unknown
    }
}

/// The MPI family whose behaviour the running library meets: the one it was built for, or,
/// built for the standard ABI, the one that provides it (from its version string).
/// Read once (after MPI_Init).
pub fn running_family() -> Flavour {
    static FAMILY: std::sync::OnceLock<Flavour> = std::sync::OnceLock::new();
    *FAMILY.get_or_init(|| match built_for() {
        Flavour::Abi => classify(&library_version()),
        f => f,
    })
}

/// Err(message) when the running MPI is not the one this library was built for.
pub fn check() -> Result<(), String> {
    let built = built_for();
    if built == Flavour::Abi {
        // Linked against libmpi_abi.so: whichever MPI provides it speaks the same ABI.
        return Ok(());
    }
    let version = library_version();
    let running = classify(&version);
    if running == built || running == Flavour::Unknown {
        return Ok(());
    }
    Err(format!(
        "mpicast: this libmpicast.so was built for {} but the program runs under {} ({}); \
         use the library built for it (build/{}/lib/libmpicast.so) or unset LD_PRELOAD",
        built.name(),
        running.name(),
        version.lines().next().unwrap_or(""),
        running.build_dir()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn classify_strings() {
        assert_eq!(
            classify("Open MPI v4.1.4, package: Debian"),
            Flavour::OpenMpi
        );
        assert_eq!(classify("MPICH Version:\t4.0.2"), Flavour::Mpich);
        assert_eq!(classify("Something"), Flavour::Unknown);
    }
}
