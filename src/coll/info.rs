//! MPI_Comm_set_info and MPI_Comm_dup_with_info: the host does the call; mpicast notes its
//! own keys (`mpicast`, `mpicast_sync`, `mpicast_min_bytes`, `mpicast_eager_bytes`) on the
//! way, because hosts need not return keys they do not know from MPI_Comm_get_info (Open MPI
//! 4.1 and MPICH 4.0 both drop them). The key `mpicast_dbcast` set to `on` turns dynamic
//! broadcast on for the communicator (both calls are collective, as `MPICAST_Dbcast_enable`);
//! `mpicast_fanout=on` does too, and groups the program's MPI_Isends there into dynamic
//! broadcasts (`MPICAST_FANOUT` for one communicator).

use super::session_or_die;
use crate::host::{self, MPI_Comm, MPI_Info};
use std::os::raw::c_int;

/// Records our keys of `info` on `comm` after the host accepted the call.
fn record(comm: MPI_Comm, info: MPI_Info) -> c_int {
    if host::comm::info_entries(info, &crate::session::HINT_KEYS).is_empty() {
        return host::SUCCESS;
    }
    let session = session_or_die();
    match session.record_hints(comm, info) {
        Ok(()) => host::SUCCESS,
        Err(e) => host::call_errhandler(comm, e.0),
    }
}

/// The info key that turns dynamic broadcast on.
pub const DBCAST_KEY: &str = "mpicast_dbcast";

/// The value of an on/off key `key` of `info` for `comm`: `on` (or true, yes, 1) runs
/// `switch_on`, collective; other values leave it as it is (off cannot be undone); one that
/// is neither on nor off gets a warning, once.
fn on_off_hint(
    comm: MPI_Comm,
    info: MPI_Info,
    key: &str,
    switch_on: impl FnOnce() -> c_int,
) -> c_int {
    let Some((_, v)) = host::comm::info_entries(info, &[key]).into_iter().next() else {
        return host::SUCCESS;
    };
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => switch_on(),
        "off" | "false" | "no" | "0" => host::SUCCESS,
        other => {
            crate::presence::say_once(
                comm,
                &format!("mpicast: MPI_Info key {key}={other:?}: on or off; ignored"),
            );
            host::SUCCESS
        }
    }
}

/// `mpicast_dbcast=on`: dynamic broadcast on for `comm`.
fn dbcast_hint(comm: MPI_Comm, info: MPI_Info) -> c_int {
    on_off_hint(comm, info, DBCAST_KEY, || {
        match session_or_die().dbcast_enable(comm) {
            Ok(_) => host::SUCCESS,
            Err(e) => host::call_errhandler(comm, e.0),
        }
    })
}

/// The info key that turns dynamic broadcast and fan-out detection on (`MPICAST_FANOUT` for
/// one communicator; `transport::fanout`).
pub const FANOUT_KEY: &str = "mpicast_fanout";

/// `mpicast_fanout=on`: dynamic broadcast on for `comm` (collective), and the program's
/// MPI_Isends on it grouped into dynamic broadcasts (`MPICAST_FANOUT_BYTES` and more).
fn fanout_hint(comm: MPI_Comm, info: MPI_Info) -> c_int {
    on_off_hint(comm, info, FANOUT_KEY, || {
        match session_or_die().dbcast_enable(comm) {
            Ok(_) => {
                let min = crate::config::Config::process().map_or(1 << 10, |c| c.fanout_bytes);
                crate::transport::fanout::mark(comm, min);
                host::SUCCESS
            }
            Err(e) => host::call_errhandler(comm, e.0),
        }
    })
}

/// The keys that switch something on for `comm`: dynamic broadcast, then fan-out detection.
fn switches(comm: MPI_Comm, info: MPI_Info) -> c_int {
    match dbcast_hint(comm, info) {
        host::SUCCESS => fanout_hint(comm, info),
        rc => rc,
    }
}

pub fn set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let rc = host::pmpi_comm_set_info(comm, info);
    if rc != host::SUCCESS || !host::is_active() {
        return rc;
    }
    match record(comm, info) {
        host::SUCCESS => switches(comm, info),
        rc => rc,
    }
}

pub fn dup_with_info(comm: MPI_Comm, info: MPI_Info) -> (c_int, MPI_Comm) {
    let (rc, new) = host::pmpi_comm_dup_with_info(comm, info);
    if rc != host::SUCCESS || !host::is_active() || new == host::comm_null() {
        return (rc, new);
    }
    match record(new, info) {
        host::SUCCESS => (switches(new, info), new),
        rc => (rc, new),
    }
}
