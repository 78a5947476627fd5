//! Compiles the small C file of MPI constants against the same MPI that mpi-sys binds
//! (build-probe-mpi honours MPI_PKG_CONFIG / MPICC the same way), and gives the cdylib
//! an explicit SONAME.

fn main() {
    println!("cargo:rerun-if-changed=src/host/shim.c");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=MPICC");
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
    cc.file("src/host/shim.c").warnings(true);
    for inc in &lib.include_paths {
        cc.include(inc);
    }
    if let Some(mpicc) = &lib.mpicc {
        cc.compiler(mpicc);
    }
    cc.compile("mpicast_shim");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpicast.so.0");
}
