//! The C ABI: the only place with `#[no_mangle] extern "C"`. Every body runs inside one
//! panic boundary (`guard`; `guard_comm` for a call on a communicator, whose error handler
//! then gets MPI_ERR_OTHER), so no panic ever unwinds into the application or MPI.
//!
//! - `mpi`: the MPI calls mpicast replaces (MPI_Bcast, MPI_Bcast_c, MPI_Barrier) or wraps
//!   (MPI_Init*, MPI_Finalize, MPI_Comm_set_info, MPI_Comm_dup_with_info);
//! - `fortran`: their Fortran entries, where the host's bindings bypass the C names;
//! - `dbcast`: the point-to-point calls dynamic broadcast intercepts (receives, sends, waits,
//!   tests, probes); `fortran_p2p`: their Fortran entries;
//! - `blocking`: the host's blocking collectives and communicator creations, polled while a
//!   forwarding engine exists;
//! - `ext`: the extension calls `MPICAST_*`, by topic;
//! - `error`: the one mapping of internal errors to MPI error codes and extension statuses.

/// Defines an intercepted MPI call `$name` with the parameters given: while no forwarding
/// engine exists in the process, a jump to the host's `$pmpi`; afterwards the body, out of
/// line (so that the fast path is a load, a branch and a jump). The intercepted calls of
/// `dbcast` and `blocking` are defined with it. The body runs after the sends fan-out
/// detection holds (not with `@keep_held`); `on comm` after the parameters names the
/// communicator of a call that has one, whose error handler then gets a panic of that
/// release, as the body's `guard_comm` gives it the body's.
macro_rules! intercept {
    (
        @keep_held
        $(#[$doc:meta])*
        fn $name:ident => $pmpi:ident($($arg:ident: $ty:ty),* $(,)?) $body:block
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
            if !$crate::host::progress::active() {
                // SAFETY: the application's arguments.
                return unsafe { mpi_sys::$pmpi($($arg),*) };
            }
            #[inline(never)]
            #[cold]
            #[allow(clippy::too_many_arguments)]
            unsafe fn slow($($arg: $ty),*) -> std::os::raw::c_int $body
            // SAFETY: the application's arguments.
            unsafe { slow($($arg),*) }
        }
    };
    (
        $(#[$doc:meta])*
        fn $name:ident => $pmpi:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:ident $body:block
    ) => {
        intercept! {
            @keep_held
            $(#[$doc])*
            ///
            /// Sends that fan-out detection holds go first (`transport::fanout`).
            fn $name => $pmpi($($arg: $ty),*) {
                if let Some(rc) = $crate::ffi::release_held_on($comm) {
                    return rc;
                }
                $body
            }
        }
    };
    (
        $(#[$doc:meta])*
        fn $name:ident => $pmpi:ident($($arg:ident: $ty:ty),* $(,)?) $body:block
    ) => {
        intercept! {
            @keep_held
            $(#[$doc])*
            ///
            /// Sends that fan-out detection holds go first (`transport::fanout`).
            fn $name => $pmpi($($arg: $ty),*) {
                if let Some(rc) = $crate::ffi::release_held() {
                    return rc;
                }
                $body
            }
        }
    };
}

/// Before a call that is not an `MPI_Isend` fan-out detection may hold: the held sends go
/// (`transport::fanout`). None, or the call's result when that failed. One load while
/// nothing is held. For a call on a communicator, `release_held_on`.
#[inline]
pub(crate) fn release_held() -> Option<std::os::raw::c_int> {
    if !crate::transport::fanout::held() {
        return None;
    }
    release_held_now(None)
}

/// `release_held` before a call on `comm`: a panic goes to `comm`'s error handler, as the
/// call's own would (`guard_comm`).
#[inline]
pub(crate) fn release_held_on(comm: crate::host::MPI_Comm) -> Option<std::os::raw::c_int> {
    if !crate::transport::fanout::held() {
        return None;
    }
    release_held_now(Some(comm))
}

#[inline(never)]
#[cold]
fn release_held_now(comm: Option<crate::host::MPI_Comm>) -> Option<std::os::raw::c_int> {
    guard(
        "the release of held sends",
        || {
            let code = crate::host::err_other();
            Some(comm.map_or(code, |c| crate::host::call_errhandler(c, code)))
        },
        || {
            crate::transport::fanout::release_all()
                .err()
                .map(error::engine_mpi_code)
        },
    )
}

/// With `MPICAST_FANOUT=on`, a communicator the program made (`newcomm`, after the host's
/// call returned `rc`) gets dynamic broadcast and fan-out detection: collective over it, as
/// its creation was. Intercommunicators and MPI_COMM_NULL are left alone.
pub(crate) fn adopt(
    rc: std::os::raw::c_int,
    newcomm: crate::host::MPI_Comm,
) -> std::os::raw::c_int {
    if rc != crate::host::SUCCESS || !fanout_wanted() || newcomm == crate::host::comm_null() {
        return rc;
    }
    if crate::host::comm::is_inter(newcomm).unwrap_or(true) {
        return rc;
    }
    fanout_on(newcomm)
}

/// `MPICAST_FANOUT` (off when mpicast is disabled or the configuration is bad, which the
/// first collective reports), and `MPICAST_FANOUT_BYTES`; read once.
fn fanout_setting() -> Option<usize> {
    static SETTING: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *SETTING.get_or_init(|| match crate::config::Config::process() {
        Ok(c) if !c.disable && c.fanout => Some(c.fanout_bytes),
        _ => None,
    })
}

fn fanout_wanted() -> bool {
    fanout_setting().is_some()
}

/// Dynamic broadcast and fan-out detection on `comm` (collective over it).
fn fanout_on(comm: crate::host::MPI_Comm) -> std::os::raw::c_int {
    let min = fanout_setting().unwrap_or(0);
    match crate::coll::session_or_die().dbcast_enable(comm) {
        Ok(_) => {
            crate::transport::progress::thread::serve_forwarding();
            crate::transport::fanout::mark(comm, min);
            crate::host::SUCCESS
        }
        Err(e) => crate::host::call_errhandler(comm, e.0),
    }
}

pub mod blocking;
pub mod dbcast;
mod error;
pub mod ext;
// With no Fortran entry point to export (the MPI-5 standard ABI, or an MPI neither Open MPI
// nor MPICH: build.rs), the shared helpers of the Fortran entries go unused.
#[cfg_attr(
    not(any(
        mpicast_fortran_mpif,
        mpicast_fortran_f08_bcast,
        mpicast_fortran_f08_barrier,
        mpicast_fortran_f08_init
    )),
    allow(dead_code, unused_macros)
)]
pub mod fortran;
#[cfg(any(mpicast_fortran_p2p_mpif, mpicast_fortran_p2p_f08_complete))]
pub mod fortran_p2p;
pub mod mpi;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; a panic becomes `fallback()` after a message on stderr.
pub(crate) fn guard<T>(what: &str, fallback: impl FnOnce() -> T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = crate::host::panic_text(p.as_ref());
            crate::session::say(&format!("mpicast: internal error in {what}: {msg}"));
            fallback()
        }
    }
}

/// `guard` for an MPI call on communicator `comm`: a panic becomes MPI_ERR_OTHER through the
/// communicator's error handler (fatal by default), as the host's own errors there would.
pub(crate) fn guard_comm(
    what: &str,
    comm: crate::host::MPI_Comm,
    f: impl FnOnce() -> std::os::raw::c_int,
) -> std::os::raw::c_int {
    guard(
        what,
        || crate::host::call_errhandler(comm, crate::host::err_other()),
        f,
    )
}

/// After the host's MPI_Init or MPI_Init_thread returned `rc`: on success, this process
/// registers with the launcher's name service (`presence`), so that a rank that waits for
/// it in vain can tell that it did load mpicast, and with which settings; with
/// `MPICAST_FANOUT=on`, MPI_COMM_WORLD gets dynamic broadcast and fan-out detection.
fn after_init(rc: std::os::raw::c_int) -> std::os::raw::c_int {
    if rc == crate::host::SUCCESS {
        crate::presence::register();
        if fanout_wanted() {
            return fanout_on(crate::host::comm_world());
        }
    }
    rc
}

/// Runs when the library is loaded: warns when this process's `MPI_Bcast` is not
/// mpicast's. That happens when a program links libmpicast after the MPI library (`-lmpi
/// -lmpicast`): the dynamic linker then takes every MPI function from the MPI library and
/// mpicast, loaded but never called, does nothing. One warning per job (from the process
/// the launcher calls rank 0, or any process it does not number).
#[used]
#[link_section = ".init_array"]
static LINK_ORDER_CHECK: extern "C" fn() = link_order_check;

extern "C" fn link_order_check() {
    guard(
        "the link order check",
        || (),
        || {
            if first_definition_is_ours("MPI_Bcast") == Some(false) && launcher_rank_is_zero() {
                crate::session::say(
                    "mpicast: warning: libmpicast is loaded, but this program's MPI_Bcast is the \
                 MPI library's: libmpicast comes after it on the link line, so mpicast is never \
                 called. Link with -lmpicast before the MPI library (the `mpicc ... -lmpicast` \
                 order does it), or load it with LD_PRELOAD instead.",
                );
            }
        },
    )
}

/// Whether the definition of `symbol` that the program's calls bind to (the first in the
/// global lookup order) is in this library; `None` when it cannot tell.
fn first_definition_is_ours(symbol: &str) -> Option<bool> {
    let name = std::ffi::CString::new(symbol).ok()?;
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if found.is_null() {
        return None;
    }
    // This function is not exported, so its address is certainly inside this library.
    let here = first_definition_is_ours as *const std::ffi::c_void;
    let base = |p: *const std::ffi::c_void| {
        // SAFETY: Dl_info is plain data; dladdr fills it for an address of a loaded object.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        (unsafe { libc::dladdr(p, &mut info) } != 0).then_some(info.dli_fbase)
    };
    Some(base(found)? == base(here)?)
}

/// The rank the launcher gave this process is 0, or it gave none.
fn launcher_rank_is_zero() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .map_or(true, |r| r.trim() == "0")
}

#[cfg(test)]
mod tests {
    /// The text from `open` at `from` to its matching `close` (both included).
    fn balanced(s: &str, from: usize, open: u8, close: u8) -> &str {
        let mut depth = 0;
        for (i, &b) in s.as_bytes()[from..].iter().enumerate() {
            if b == open {
                depth += 1;
            } else if b == close {
                depth -= 1;
                if depth == 0 {
                    return &s[from..=from + i];
                }
            }
        }
        panic!("unbalanced from byte {from}")
    }

    /// The body of the first item `start` begins in `s`.
    fn body_of<'a>(s: &'a str, start: &str) -> &'a str {
        let at = s.find(start).unwrap_or_else(|| panic!("no {start}"));
        balanced(s, at + s[at..].find('{').unwrap(), b'{', b'}')
    }

    /// A `fn MPI_*` of a source file that takes a communicator.
    struct OnComm<'a> {
        name: String,
        /// Between its parameters and its body (`on comm` for `intercept!`).
        between: &'a str,
        /// None for a `collective!` or `creation!` without a body of its own.
        body: Option<&'a str>,
        /// Defined by `intercept!` without `@keep_held`: held sends are released before it.
        releases: bool,
    }

    fn calls_on_a_comm(s: &str) -> Vec<OnComm<'_>> {
        let mut found = Vec::new();
        for (at, _) in s.match_indices("fn MPI_") {
            let name: String = s[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let open = at + s[at..].find('(').unwrap();
            let params = balanced(s, open, b'(', b')');
            if !params.contains("MPI_Comm") {
                continue;
            }
            let after = open + params.len();
            let brace = after + s[after..].find('{').unwrap();
            let between = &s[after..brace];
            let body = (!between.contains('}')).then(|| balanced(s, brace, b'{', b'}'));
            let intercept = s[..at]
                .rfind("intercept! {")
                .filter(|&m| !s[m..at].contains("\n}\n"));
            let releases = intercept.is_some_and(|m| !s[m..at].contains("@keep_held"));
            found.push(OnComm {
                name,
                between,
                body,
                releases,
            });
        }
        found
    }

    /// Every MPI call mpicast defines that takes a communicator hands a panic to that
    /// communicator's error handler (`guard_comm`), as the host's own errors there would go,
    /// the release of held sends before it included (`release_held_on`, or `intercept!`'s
    /// `on comm`). A source check: it reads the definitions as written.
    #[test]
    fn every_call_on_a_communicator_panics_into_its_error_handler() {
        let (mpi, blocking) = (include_str!("mpi.rs"), include_str!("blocking.rs"));
        let mut checked = Vec::new();
        for (file, s) in [
            ("mpi.rs", mpi),
            ("dbcast.rs", include_str!("dbcast.rs")),
            ("blocking.rs", blocking),
        ] {
            for c in calls_on_a_comm(s) {
                let at = format!("{} ({file})", c.name);
                if c.releases || c.body.is_none() {
                    assert!(c.between.contains(" on "), "{at}: say `on comm`");
                }
                // A `collective!` or `creation!` without a body: those macros are checked below.
                if let Some(body) = c.body {
                    // (MPI_Bcast and MPI_Bcast_c through `bcast_guarded`, checked below.)
                    assert!(
                        ["guard_comm(", "call_errhandler(", "bcast_guarded("]
                            .iter()
                            .any(|g| body.contains(g)),
                        "{at}: a panic must go to the communicator's error handler"
                    );
                    // MPI_Comm_free of a NULL pointer has no communicator to report to.
                    assert!(
                        c.name == "MPI_Comm_free" || !body.contains("release_held()"),
                        "{at}: release_held_on(comm), not release_held()"
                    );
                }
                checked.push(c.name);
            }
        }
        assert!(body_of(mpi, "fn bcast_guarded(").contains("guard_comm("));
        for m in ["macro_rules! collective", "macro_rules! creation"] {
            let body = body_of(blocking, m);
            assert!(body.contains("guard_comm("), "{m}: no guard_comm");
            assert!(
                body.contains(") on $comm {"),
                "{m}: not intercept!'s `on $comm`"
            );
        }
        // The check found the calls it is about.
        for name in [
            "MPI_Bcast",
            "MPI_Barrier",
            "MPI_Recv",
            "MPI_Comm_free",
            "MPI_Sendrecv",
            "MPI_Allreduce",
            "MPI_Comm_split",
        ] {
            assert!(
                checked.iter().any(|c| c == name),
                "{name} not found: {checked:?}"
            );
        }
    }
}
