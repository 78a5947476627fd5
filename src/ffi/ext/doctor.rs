//! MPICAST_Doctor: the job-wide checks of `mpicast doctor -n N` (`doctor_run`), callable from
//! any program.

use super::super::guard;
use super::{check, ARG, ERR_MPI, INTERNAL, NULL_ARG, OK};
use crate::doctor::job::Options;
use crate::host::MPI_Comm;
use std::ffi::CStr;
use std::io::Write;
use std::os::raw::{c_char, c_int};

/// Checks whether multicast works between the ranks of `comm`, and why not: collective (every
/// rank calls it, with the same `options`). Each host's interface, MTU, buffers, rp_filter and
/// group limit; who hears whose multicast on the ports at both ends of MPICAST_PORT (small and
/// full-size datagrams); loss as rank 0 multicasts at rising rates; unicast between the
/// ranks' addresses (the repair path); IGMP queries heard. Takes a few seconds (plus `long`).
/// Rank 0 prints the report, with each problem's fix, on standard output (docs/doctor.md).
/// `*problems_out` becomes 1 on every rank when a problem was found, else 0.
/// `options`: NULL or "" for the defaults, or words separated by blanks: `json` (the report as
/// one JSON document), `long` or `long=SECONDS` (listen for an IGMP query that long, 130 s by
/// default, then check the group again), `count=K` (datagrams per sender and port, 20).
/// MPICAST_ERR_ARG for MPI_COMM_NULL, an intercommunicator or an unknown option (the message
/// goes to stderr); MPICAST_ERR_MPI when a call to the host MPI failed.
///
/// # Safety
/// `comm` is a valid communicator handle; `options` is NULL or a NUL-terminated string;
/// `problems_out` is valid for writing one int.
#[no_mangle]
pub unsafe extern "C" fn MPICAST_Doctor(
    comm: MPI_Comm,
    options: *const c_char,
    problems_out: *mut c_int,
) -> c_int {
    guard(
        "MPICAST_Doctor",
        || INTERNAL,
        || {
            if problems_out.is_null() {
                return NULL_ARG;
            }
            const CALL: &str = "MPICAST_Doctor";
            if let Err(s) = check::mpi_up(CALL).and_then(|()| check::intra(CALL, comm, "comm")) {
                return s;
            }
            let text = if options.is_null() {
                String::new()
            } else {
                // SAFETY: checked non-NULL; the caller passes a NUL-terminated string.
                unsafe { CStr::from_ptr(options) }
                    .to_string_lossy()
                    .into_owned()
            };
            let opts = match Options::parse(&text) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("mpicast: MPICAST_Doctor: {e}");
                    return ARG;
                }
            };
            match crate::doctor_run::run(comm, &opts) {
                Ok(out) => {
                    if !out.report.is_empty() {
                        let mut so = std::io::stdout().lock();
                        let _ = so.write_all(out.report.as_bytes());
                        let _ = so.flush();
                    }
                    // SAFETY: checked non-NULL; the caller provides a writable int.
                    unsafe { problems_out.write(c_int::from(out.problems)) };
                    OK
                }
                Err(e) => {
                    eprintln!("mpicast: MPICAST_Doctor: {e}");
                    ERR_MPI
                }
            }
        },
    )
}
