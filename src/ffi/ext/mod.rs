//! mpicast's own C API (`include/mpicast.h`), one file per topic:
//! - `stats`: MPICAST_Get_stats (the counters);
//! - `goal`: GOAL schedules (build or load, bind buffers, start, test, wait), the C side of
//!   `coll::goal`;
//! - `imcast`: the non-blocking multicast to any set of ranks (MPICAST_Mcast_enable, _Imcast,
//!   _Mcast_irecv, _Mcast_iprobe);
//! - `dbcast`: dynamic broadcast (MPICAST_Dbcast_enable, _Dbcast, _Send_defer, _Send_release);
//! - `mmcast`: MPICAST_Mmcast, many multicasts at once;
//! - `request`: waiting for and testing the requests of all of them;
//! - `doctor`: MPICAST_Doctor, the job-wide checks of `mpicast doctor -n N`;
//! - `handles`: C handles of Fortran ones, for the Fortran module;
//! - `check`: the argument checks, and the message of every refusal.
//!
//! Conventions: functions return an `MPICAST_Status` (0 is success) and write results through
//! trailing `*_out` pointers only on success; NULL where a pointer is required gives
//! `MPICAST_ERR_NULL_ARG`; every refusal says why (`check`: `MPICAST_Last_error`, and stderr).

use crate::host::{self, buffer::UserBuf, MPI_Comm, MPI_Datatype};
use crate::wire::matching::Want;
use std::os::raw::c_void;
use std::os::raw::{c_char, c_int};

pub(super) mod check;
mod dbcast;
mod doctor;
mod goal;
mod handles;
mod imcast;
mod mmcast;
mod request;
mod stats;

pub use goal::{MPICAST_Goal, MPICAST_Goal_function};
pub(crate) use request::empty_status;
pub use request::MPICAST_Request;
pub use stats::MPICAST_Stats;

/// Status codes of the extension API. Values are stable and never reused.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MPICAST_Status {
    /// Success.
    MPICAST_OK = 0,
    /// A required pointer argument was NULL.
    MPICAST_ERR_NULL_ARG = 1,
    /// An internal error (a bug): the message went to stderr.
    MPICAST_ERR_INTERNAL = 2,
    /// A call to the host MPI failed.
    MPICAST_ERR_MPI = 3,
    /// The GOAL program is invalid or cannot run here; MPICAST_Goal_error says why.
    MPICAST_ERR_GOAL_INVALID = 4,
    /// The call does not fit the handle's state (no program loaded, a buffer unbound or too
    /// small, a run already active); MPICAST_Goal_error says why.
    MPICAST_ERR_GOAL_STATE = 5,
    /// An argument is out of range or inconsistent (a destination outside the communicator,
    /// repeated, or the root itself; a negative count; a tag out of range; MPI_COMM_NULL, a
    /// freed communicator or an intercommunicator; MPI_DATATYPE_NULL or a freed datatype; a
    /// request that is not live: completed or freed already, a stale copy, never started);
    /// nothing was done. MPICAST_Last_error says which argument.
    MPICAST_ERR_ARG = 6,
    /// The communicator is not enabled for the multicast calls: call MPICAST_Mcast_enable on
    /// it first (collective); for dynamic broadcast and deferred sends, MPICAST_Dbcast_enable.
    MPICAST_ERR_NOT_ENABLED = 7,
    /// A multicast was longer than the receive's buffer: the buffer holds its start, and the
    /// status's MPI_ERROR is MPI_ERR_TRUNCATE (as MPI reports a truncated message).
    MPICAST_ERR_TRUNCATE = 8,
    /// The call needs the progress thread (MPICAST_PROGRESS=thread, or auto in a program
    /// initialised with MPI_THREAD_MULTIPLE, and a host MPI that grants it), and it is not
    /// running.
    MPICAST_ERR_NO_THREAD = 9,
    /// MPICAST_Send_release named a key that no MPICAST_Send_defer registered (or that was
    /// released already); nothing was sent.
    MPICAST_ERR_UNKNOWN_KEY = 10,
    /// The switch topology (MPICAST_SWITCH_TOPOLOGY) cannot be used: unreadable, invalid,
    /// different between ranks, or a host of the job missing from it; the message went to
    /// stderr.
    MPICAST_ERR_TOPOLOGY = 11,
    /// MPI is not initialised, or finalized already: the call needs it; nothing was done.
    MPICAST_ERR_NO_MPI = 12,
}

/// The library version as a static NUL-terminated string, e.g. "0.1.0". Never NULL; the
/// caller must not free it.
#[no_mangle]
pub extern "C" fn MPICAST_Version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// A static NUL-terminated description of `status`. Never NULL (unknown values give
/// "unknown status"); the caller must not free it.
#[no_mangle]
pub extern "C" fn MPICAST_Status_string(status: c_int) -> *const c_char {
    let s = STATUSES
        .iter()
        .find(|&&st| st as c_int == status)
        .map_or("unknown status\0", |&st| describe(st));
    s.as_ptr() as *const c_char
}

/// Every status, for looking one up by its value (a new status goes here and in `describe`,
/// whose match the compiler holds to be complete).
const STATUSES: [MPICAST_Status; 13] = {
    use MPICAST_Status::*;
    [
        MPICAST_OK,
        MPICAST_ERR_NULL_ARG,
        MPICAST_ERR_INTERNAL,
        MPICAST_ERR_MPI,
        MPICAST_ERR_GOAL_INVALID,
        MPICAST_ERR_GOAL_STATE,
        MPICAST_ERR_ARG,
        MPICAST_ERR_NOT_ENABLED,
        MPICAST_ERR_TRUNCATE,
        MPICAST_ERR_NO_THREAD,
        MPICAST_ERR_UNKNOWN_KEY,
        MPICAST_ERR_TOPOLOGY,
        MPICAST_ERR_NO_MPI,
    ]
};

/// What `MPICAST_Status_string` says of `status`, NUL-terminated.
fn describe(status: MPICAST_Status) -> &'static str {
    use MPICAST_Status::*;
    match status {
        MPICAST_OK => "success\0",
        MPICAST_ERR_NULL_ARG => "a required pointer argument was NULL\0",
        MPICAST_ERR_INTERNAL => "internal error\0",
        MPICAST_ERR_MPI => "a call to the host MPI failed\0",
        MPICAST_ERR_GOAL_INVALID => "the GOAL program is invalid (see MPICAST_Goal_error)\0",
        MPICAST_ERR_GOAL_STATE => {
            "the GOAL handle is not ready for this call (see MPICAST_Goal_error)\0"
        }
        MPICAST_ERR_ARG => "an argument is out of range or inconsistent\0",
        MPICAST_ERR_NOT_ENABLED => {
            "the communicator is not enabled: call MPICAST_Mcast_enable (or, for dynamic \
              broadcast, MPICAST_Dbcast_enable) first\0"
        }
        MPICAST_ERR_TRUNCATE => "message truncated: longer than the receive buffer\0",
        MPICAST_ERR_NO_THREAD => {
            "needs the progress thread (MPICAST_PROGRESS=thread and MPI_THREAD_MULTIPLE)\0"
        }
        MPICAST_ERR_UNKNOWN_KEY => {
            "no deferred send has this key (never registered, or released already)\0"
        }
        MPICAST_ERR_TOPOLOGY => {
            "the switch topology (MPICAST_SWITCH_TOPOLOGY) cannot be used (see stderr)\0"
        }
        MPICAST_ERR_NO_MPI => "MPI is not initialised, or finalized already\0",
    }
}

/// The largest tag of the multicast calls: MPI promises every implementation allows at least
/// this much.
pub(super) const TAG_MAX: c_int = 32767;

/// The receive's source and tag: (any source, any tag, MPI_PROC_NULL) checked against a
/// communicator of `size` ranks; Err says what is wrong.
pub(crate) fn parse_want(source: c_int, tag: c_int, size: u32) -> Result<Option<Want>, String> {
    if source == host::proc_null() {
        return Ok(None);
    }
    let source = if source == host::any_source() {
        None
    } else {
        match u32::try_from(source) {
            Ok(s) if s < size => Some(s),
            _ => {
                return Err(format!(
                    "source is {source}; the communicator has {size} ranks (0 to {}), or use \
                     MPI_ANY_SOURCE or MPI_PROC_NULL",
                    size.saturating_sub(1)
                ))
            }
        }
    };
    let tag = if tag == host::p2p::any_tag() {
        None
    } else if (0..=TAG_MAX).contains(&tag) {
        Some(tag)
    } else {
        return Err(format!(
            "tag is {tag}; it must be 0 to {TAG_MAX}, or MPI_ANY_TAG"
        ));
    };
    Ok(Some(Want { source, tag }))
}

/// As `parse_want` for a multicast receive of rank `me`, refused with MPICAST_ERR_ARG (a
/// receive from oneself too: a multicast never goes to its own root, so it could never
/// match).
pub(crate) fn want(
    call: &str,
    source: c_int,
    tag: c_int,
    size: u32,
    me: u32,
) -> Result<Option<Want>, c_int> {
    if u32::try_from(source) == Ok(me) {
        return Err(check::refuse(
            call,
            ARG,
            &format!(
                "source is {me}, this rank: a multicast never goes to its own root, so this \
                 receive could never match"
            ),
        ));
    }
    parse_want(source, tag, size).map_err(|why| check::refuse(call, ARG, &why))
}

/// A multicast's tag: 0 to TAG_MAX.
pub(super) fn send_tag(call: &str, tag: c_int) -> Result<c_int, c_int> {
    if (0..=TAG_MAX).contains(&tag) {
        Ok(tag)
    } else {
        Err(check::refuse(
            call,
            ARG,
            &format!("tag is {tag}; it must be 0 to {TAG_MAX}"),
        ))
    }
}

/// The arguments of a multicast's send side, as MPICAST_Imcast and MPICAST_Dbcast take them:
/// `n` ranks at `list` (the arguments `n_name` and `list_name`).
pub(super) struct SendArgs<'a> {
    pub buf: *const c_void,
    pub count: c_int,
    pub datatype: MPI_Datatype,
    pub list: *const c_int,
    pub n: c_int,
    pub list_name: &'a str,
    pub n_name: &'a str,
    pub tag: c_int,
    pub comm: MPI_Comm,
}

impl SendArgs<'_> {
    /// Checks every argument before anything is done, in the order of the call's parameters
    /// (the request pointer first): the destination ranks, and the buffer described.
    ///
    /// # Safety
    /// `list` holds `n` ints when `n` is in range (the caller's contract).
    pub(super) unsafe fn check<T>(
        &self,
        call: &str,
        request_out: *const T,
    ) -> Result<(Vec<u32>, UserBuf), c_int> {
        check::non_null(call, request_out, "request_out")?;
        let (size, me) = check::on_comm(call, self.comm)?;
        check::count(call, self.count, 0, "count")?;
        if self.count > 0 {
            check::non_null(call, self.buf, "buf")?;
        }
        check::datatype(call, self.datatype, "datatype")?;
        send_tag(call, self.tag)?;
        let n = dest_count(call, self.n, self.n_name, size)?;
        check::non_null(call, self.list, self.list_name)?;
        // SAFETY: `n` ints, as the caller promises.
        let list = unsafe { std::slice::from_raw_parts(self.list, n) };
        let ranks = dest_list(call, list, self.list_name, false, size, me)?;
        let ub = UserBuf::describe(
            self.buf as *mut c_void,
            i64::from(self.count),
            self.datatype,
            self.comm,
        )
        .map_err(|_| check::refuse(call, ERR_MPI, "the host MPI cannot describe the buffer"))?;
        Ok((ranks, ub))
    }
}

/// A destination count `n` (the argument `name`) that a communicator of `size` ranks can hold:
/// every rank but the root at most (a larger count is a mistake, and its list would be read
/// past its end).
pub(super) fn dest_count(call: &str, n: c_int, name: &str, size: u32) -> Result<usize, c_int> {
    let n = check::count(call, n, 1, name)?;
    if n as u64 >= u64::from(size) {
        return Err(check::refuse(
            call,
            ARG,
            &format!(
                "{name} is {n}; the communicator has {size} ranks, so at most {} destinations \
                 (every rank but the root)",
                size.saturating_sub(1)
            ),
        ));
    }
    Ok(n)
}

/// The destination list (the argument `name`) of a multicast from `me`: distinct ranks of a
/// communicator of `size`, none of them `me`, at least one (the caller checked the count).
/// `one`: the argument is a single rank, not a list.
pub(super) fn dest_list(
    call: &str,
    list: &[c_int],
    name: &str,
    one: bool,
    size: u32,
    me: u32,
) -> Result<Vec<u32>, c_int> {
    let mut seen = vec![false; size as usize];
    let mut ranks = Vec::with_capacity(list.len());
    for (i, &d) in list.iter().enumerate() {
        let at = if one {
            name.to_string()
        } else {
            format!("{name}[{i}]")
        };
        let why = match u32::try_from(d) {
            Ok(r) if r >= size => format!(
                "{at} is {d}; the communicator has {size} ranks (0 to {})",
                size - 1
            ),
            Ok(r) if r == me => format!("{at} is {d}, this rank: the root is no destination"),
            Ok(r) if seen[r as usize] => format!("{at} is {d}, named twice"),
            Ok(r) => {
                seen[r as usize] = true;
                ranks.push(r);
                continue;
            }
            Err(_) => format!("{at} is {d}; ranks are 0 or more"),
        };
        return Err(check::refuse(call, ARG, &why));
    }
    Ok(ranks)
}

pub(super) const OK: c_int = MPICAST_Status::MPICAST_OK as c_int;
pub(super) const NULL_ARG: c_int = MPICAST_Status::MPICAST_ERR_NULL_ARG as c_int;
pub(super) const INTERNAL: c_int = MPICAST_Status::MPICAST_ERR_INTERNAL as c_int;
pub(super) const ERR_MPI: c_int = MPICAST_Status::MPICAST_ERR_MPI as c_int;
pub(super) const ARG: c_int = MPICAST_Status::MPICAST_ERR_ARG as c_int;
pub(super) const NOT_ENABLED: c_int = MPICAST_Status::MPICAST_ERR_NOT_ENABLED as c_int;
pub(super) const TRUNCATE: c_int = MPICAST_Status::MPICAST_ERR_TRUNCATE as c_int;
pub(super) const NO_THREAD: c_int = MPICAST_Status::MPICAST_ERR_NO_THREAD as c_int;
pub(super) const UNKNOWN_KEY: c_int = MPICAST_Status::MPICAST_ERR_UNKNOWN_KEY as c_int;
pub(super) const TOPOLOGY: c_int = MPICAST_Status::MPICAST_ERR_TOPOLOGY as c_int;
pub(super) const NO_MPI: c_int = MPICAST_Status::MPICAST_ERR_NO_MPI as c_int;

#[cfg(test)]
mod tests {
    use super::*;

    fn string_of(code: c_int) -> String {
        // SAFETY: MPICAST_Status_string returns a static NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(MPICAST_Status_string(code)) }
            .to_str()
            .unwrap()
            .to_string()
    }

    /// `STATUSES` is every status of the header, by name and value, and each has its own
    /// description; values beyond them are "unknown status".
    #[test]
    fn every_status_of_the_header_has_its_own_string() {
        let header = include_str!("../../../include/mpicast.h");
        let body = &header[header.find("typedef enum MPICAST_Status {").unwrap()..];
        let body = &body[..body.find('}').unwrap()];
        let in_header: Vec<(String, c_int)> = body
            .lines()
            .map(str::trim)
            .filter_map(|l| {
                // `MPICAST_NAME = value,` (comment lines may start with a name too).
                let (name, value) = l.trim_end_matches(',').split_once(" = ")?;
                let name_only = name.starts_with("MPICAST_")
                    && name.bytes().all(|c| c.is_ascii_uppercase() || c == b'_');
                Some((name.to_string(), value.parse().ok()?)).filter(|_| name_only)
            })
            .collect();
        let ours: Vec<(String, c_int)> = STATUSES
            .iter()
            .map(|&s| (format!("{s:?}"), s as c_int))
            .collect();
        assert_eq!(ours, in_header);
        let mut said: Vec<String> = STATUSES.iter().map(|&s| string_of(s as c_int)).collect();
        assert!(said.iter().all(|s| !s.is_empty() && s != "unknown status"));
        said.sort();
        said.dedup();
        assert_eq!(said.len(), STATUSES.len(), "two statuses say the same");
        for code in [-1, STATUSES.len() as c_int, 1000] {
            assert_eq!(string_of(code), "unknown status");
        }
        assert_eq!(string_of(OK), "success");
    }
}
