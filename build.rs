//! Compiles the small C file of MPI constants against the same MPI that mpi-sys binds
//! (build-probe-mpi honours MPI_PKG_CONFIG / MPICC the same way), gives the cdylib an
//! explicit SONAME, and tells the crate (cfg flags) which entry points this MPI needs:
//!
//! - `mpicast_large_count`: mpi.h declares `PMPI_Bcast_c` (MPI-4 large counts; MPICH 4.0,
//!   not Open MPI 4.1), so the library exports `MPI_Bcast_c`.
//! - `mpicast_fortran_mpif`: the host's mpif.h / `use mpi` bindings (`mpi_bcast_`,
//!   `mpi_barrier_`) go to PMPI without passing through the C names (Open MPI), so the
//!   library exports them in every mangling. MPICH's call the C `MPI_Bcast`/`MPI_Barrier`,
//!   which we already replace: exporting them too would add a second, Fortran-argument
//!   reading layer over the host's for nothing.
//! - `mpicast_fortran_f08_bcast`: the same for mpi_f08's `mpi_bcast_f08_` (Open MPI; MPICH's
//!   `mpi_bcast_f08ts_` reaches the C `MPI_Bcast`/`MPI_Bcast_c`).
//! - `mpicast_fortran_f08_barrier`: mpi_f08's `mpi_barrier_f08_` goes to PMPI in both.
//! - `mpicast_fortran_f08_init`: mpi_f08's `mpi_init_f08_` / `mpi_init_thread_f08_` go to
//!   PMPI in both (the mpif.h ones do in Open MPI: `mpicast_fortran_mpif` covers them), so
//!   the library exports them to ask for MPI_THREAD_MULTIPLE when MPICAST_PROGRESS=thread.
//! - `mpicast_fortran_p2p_mpif`: the mpif.h / `use mpi` receive, completion and probe calls
//!   that dynamic broadcast intercepts (`mpi_recv_`, `mpi_irecv_`, `mpi_wait_`, ...,
//!   `ffi::fortran_p2p`) go to PMPI without the C names (Open MPI; MPICH's reach them).
//! - `mpicast_fortran_p2p_f08_post`: the same for mpi_f08's `mpi_recv_f08_` and
//!   `mpi_irecv_f08_` (Open MPI; MPICH's `mpi_recv_f08ts_` / `mpi_irecv_f08ts_` reach the
//!   C names).
//! - `mpicast_fortran_p2p_f08_complete`: mpi_f08's wait, test, probe, cancel and
//!   request-free calls go to PMPI in both.
//!
//! The test `link_fortran_route` (scripts/fortran_route.sh) checks these facts against the
//! installed MPI: it watches which C entry points each Fortran binding reaches and requires
//! the library to export exactly the Fortran names whose calls would otherwise miss it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/host/shim.c");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=MPICC");
    for cfg in [
        "mpicast_large_count",
        "mpicast_fortran_mpif",
        "mpicast_fortran_f08_bcast",
        "mpicast_fortran_f08_barrier",
        "mpicast_fortran_f08_init",
        "mpicast_fortran_p2p_mpif",
        "mpicast_fortran_p2p_f08_post",
        "mpicast_fortran_p2p_f08_complete",
    ] {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
    }
    let lib = match build_probe_mpi::probe() {
        Ok(lib) => lib,
        Err(errs) => {
            for e in errs {
                println!("cargo:warning=MPI probe: {e}");
            }
            panic!("mpicast: no MPI found; install libopenmpi-dev or libmpich-dev (make deps)");
        }
    };
    let mut cc = cc::Build::new();
    cc.warnings(true);
    for inc in &lib.include_paths {
        cc.include(inc);
    }
    if let Some(mpicc) = &lib.mpicc {
        cc.compiler(mpicc);
    }

    let probe = probe_header(&cc);
    if probe.large_count {
        println!("cargo:rustc-cfg=mpicast_large_count");
    }
    match probe.flavour {
        Flavour::OpenMpi => {
            println!("cargo:rustc-cfg=mpicast_fortran_mpif");
            println!("cargo:rustc-cfg=mpicast_fortran_f08_bcast");
            println!("cargo:rustc-cfg=mpicast_fortran_f08_barrier");
            println!("cargo:rustc-cfg=mpicast_fortran_f08_init");
            println!("cargo:rustc-cfg=mpicast_fortran_p2p_mpif");
            println!("cargo:rustc-cfg=mpicast_fortran_p2p_f08_post");
            println!("cargo:rustc-cfg=mpicast_fortran_p2p_f08_complete");
        }
        Flavour::Mpich => {
            println!("cargo:rustc-cfg=mpicast_fortran_f08_barrier");
            println!("cargo:rustc-cfg=mpicast_fortran_f08_init");
            println!("cargo:rustc-cfg=mpicast_fortran_p2p_f08_complete");
        }
        // The MPI-5 standard ABI (mpi_abi.h, libmpi_abi.so) has no Fortran in C: no Fortran
        // entry points, and the Fortran handles of MPICAST_Comm_f2c are its integer handles.
        Flavour::Abi => {}
        Flavour::Other => {
            println!("cargo:warning=mpicast: neither Open MPI nor MPICH: no Fortran entry points")
        }
    }

    cc.clone().file("src/host/shim.c").compile("mpicast_shim");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpicast.so.0");
}

enum Flavour {
    OpenMpi,
    Mpich,
    Abi,
    Other,
}

struct Probe {
    flavour: Flavour,
    large_count: bool,
}

/// Runs the preprocessor over mpi.h: which MPI it is, and whether it declares the MPI-4
/// large-count broadcast.
fn probe_header(cc: &cc::Build) -> Probe {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("mpicast_probe.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\n\
         mpicast_probe_openmpi OPEN_MPI\n\
         mpicast_probe_mpich MPICH_NUMVERSION\n\
         mpicast_probe_abi MPI_ABI_VERSION\n\
         mpicast_probe_version MPI_VERSION\n",
    )
    .expect("write the mpi.h probe");
    let text = String::from_utf8_lossy(&cc.clone().file(&src).expand()).into_owned();
    let value = |key: &str| -> Option<String> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let flavour = if value("mpicast_probe_abi ").is_some_and(|v| v != "MPI_ABI_VERSION") {
        Flavour::Abi
    } else if value("mpicast_probe_openmpi ").as_deref() == Some("1") {
        Flavour::OpenMpi
    } else if value("mpicast_probe_mpich ").is_some_and(|v| v != "MPICH_NUMVERSION") {
        Flavour::Mpich
    } else {
        Flavour::Other
    };
    let version: u32 = value("mpicast_probe_version ")
        .and_then(|v| v.trim_matches(|c| c == '(' || c == ')').parse().ok())
        .unwrap_or(0);
    let large_count = version >= 4 && text.contains("PMPI_Bcast_c");
    Probe {
        flavour,
        large_count,
    }
}
