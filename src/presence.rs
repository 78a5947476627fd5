//! Which ranks of the job loaded mpicast, with which settings, which of them are waiting in
//! mpicast's setup of a communicator or (for more than a second) in which call, and which
//! finalized: what a rank needs to say why the others did not arrive, when they do not.
//!
//! mpicast cannot ask the other ranks through MPI: a rank that never loaded it (an
//! `LD_PRELOAD` that Open MPI's mpirun did not forward to remote hosts) would receive
//! whatever mpicast sent, or take part in a collective it never called. So each process
//! that loads mpicast registers itself with the launcher's name service (`host::names`: a
//! local MPI call that sends nothing to any rank) at `MPI_Init`, or at its first intercepted
//! call when initialisation passed elsewhere; a rank waiting in a setup, or long in an
//! operation (`Linger`), says so there too, and a rank that finalizes leaves a note.
//! When a wait runs out, the one rank that reports it (`die_once`) looks the others up.
//!
//! Names: `mpicast1-<job>-<world size>-<kind>-<world rank>`, the job being the launcher's
//! (PMIx namespace) where it says one. Lookups cost a round trip to the launcher each, so
//! they are made only on the way to an abort, by the rank that prints.

use crate::config::{self, Config};
use crate::host::{self, names, MPI_Comm};
use crate::lock::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// This job's prefix of every name, and this process's world rank and size; `None` when
/// there is nobody to tell (one process, or MPI not active).
fn identity() -> Option<(String, u32, u32)> {
    if !host::is_active() {
        return None;
    }
    let world = host::comm_world();
    let (rank, size) = (host::comm::rank(world).ok()?, host::comm::size(world).ok()?);
    if size < 2 {
        return None;
    }
    let job: String = std::env::var("PMIX_NAMESPACE")
        .unwrap_or_else(|_| "0".into())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(40)
        .collect();
    Some((format!("mpicast1-{job}-{size}"), rank, size))
}

fn name(prefix: &str, kind: &str, world_rank: u32) -> String {
    format!("{prefix}-{kind}-{world_rank}")
}

/// What this process registered (name, value), to withdraw it at finalize.
static REGISTERED: Mutex<Option<(String, String)>> = Mutex::new(None);
static TRIED: AtomicBool = AtomicBool::new(false);

/// Registers this process: mpicast's version and the settings every rank must share (or
/// the variable that is invalid). Once per process; a launcher without a name service only
/// leaves later diagnoses less precise.
pub fn register() {
    if TRIED.swap(true, Ordering::AcqRel) {
        return;
    }
    // A library built for the other MPI cannot pass a single handle (the first collective
    // says so and stops the job): nothing here may touch MPI then.
    if host::flavour::check().is_err() {
        return;
    }
    let Some((prefix, rank, _)) = identity() else {
        return;
    };
    let mut value = match Config::process() {
        Ok(c) => here_value(env!("CARGO_PKG_VERSION"), &c),
        Err(e) => format!("{},INVALID:{}", env!("CARGO_PKG_VERSION"), e.var),
    };
    value.truncate(names::max_value_len());
    let n = name(&prefix, "here", rank);
    if names::publish(&n, &value) {
        *lock(&REGISTERED) = Some((n, value));
    }
}

/// Withdraws the registration (at MPI_Finalize, before the host shuts down), leaving a
/// note that this rank finalized: a rank that waits for it in vain then says so, rather
/// than that mpicast was never loaded there.
pub fn unregister() {
    if let Some((n, v)) = lock(&REGISTERED).take() {
        names::unpublish(&n, &v);
        if let Some((prefix, rank, _)) = identity() {
            names::publish(&name(&prefix, "gone", rank), "1");
        }
    }
}

/// Published while this rank waits in a setup (`call` on a communicator of `size` ranks),
/// or for more than a second in an operation (`Linger`); withdrawn when dropped. One at a
/// time per process (`PUBLISHED`): the name is the rank's.
pub struct Waiting(Option<(String, String)>);

/// Whether this process has a `Waiting` published.
static PUBLISHED: AtomicBool = AtomicBool::new(false);

/// Where a rank waits, as its `wait` name says: in mpicast's setup of a communicator, or in
/// the operation itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WaitKind {
    Setup,
    Operation,
}

/// The value of a `wait` name: `call:size` for a setup (the first format), `call:size:op`
/// for an operation. No spaces and no `=` (see `here_value`).
pub fn wait_value(call: &str, size: u32, kind: WaitKind) -> String {
    match kind {
        WaitKind::Setup => format!("{call}:{size}"),
        WaitKind::Operation => format!("{call}:{size}:op"),
    }
}

/// Parses a `wait` value: (call, size as written, kind).
pub fn parse_wait(value: &str) -> (&str, &str, WaitKind) {
    let mut parts = value.splitn(3, ':');
    let call = parts.next().unwrap_or("");
    let size = parts.next().unwrap_or("?");
    let kind = match parts.next() {
        Some("op") => WaitKind::Operation,
        _ => WaitKind::Setup,
    };
    (call, size, kind)
}

pub fn waiting(call: &str, size: u32) -> Waiting {
    publish_wait(call, size, WaitKind::Setup)
}

fn publish_wait(call: &str, size: u32, kind: WaitKind) -> Waiting {
    let Some((prefix, rank, _)) = identity() else {
        return Waiting(None);
    };
    if PUBLISHED.swap(true, Ordering::AcqRel) {
        return Waiting(None);
    }
    let n = name(&prefix, "wait", rank);
    let v = wait_value(call, size, kind);
    if names::publish(&n, &v) {
        Waiting(Some((n, v)))
    } else {
        PUBLISHED.store(false, Ordering::Release);
        Waiting(None)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some((n, v)) = self.0.take() {
            names::unpublish(&n, &v);
            PUBLISHED.store(false, Ordering::Release);
        }
    }
}

/// How long a wait lasts before the rank says where it waits.
const LINGER: Duration = Duration::from_secs(1);

/// A wait loop's note in the name service: once the wait has lasted a second (`tick` is
/// called between two looks), the rank publishes which call it waits in (and the size of
/// its communicator; 0: not known to the loop), so that a rank
/// whose operation stalls on it can say "rank 1 is waiting in MPI_Barrier" rather than
/// guess; withdrawn when the wait ends (dropped). Costs a clock read per look and one
/// publication per long wait; nothing on the progress thread, which only drives.
pub struct Linger {
    call: &'static str,
    size: u32,
    since: Option<Instant>,
    said: Option<Waiting>,
    /// Leave the note when dropped (`keep`).
    kept: std::cell::Cell<bool>,
}

impl Linger {
    pub fn new(call: &'static str, size: u32) -> Linger {
        Linger {
            call,
            size,
            since: None,
            said: None,
            kept: std::cell::Cell::new(false),
        }
    }

    /// The wait failed and the job is about to end: leave the note for the rank that prints
    /// the message (it looks a moment later, when this wait's operation is gone).
    pub fn keep(&self) {
        self.kept.set(true);
    }

    pub fn tick(&mut self) {
        if self.said.is_some() {
            return;
        }
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) >= LINGER && !on_progress_thread() {
            self.said = Some(publish_wait(self.call, self.size, WaitKind::Operation));
        }
    }
}

impl Drop for Linger {
    fn drop(&mut self) {
        if self.kept.get() {
            if let Some(w) = self.said.take() {
                std::mem::forget(w);
            }
        }
    }
}

/// The library's progress thread (`MPICAST_PROGRESS=thread`) never talks to the name
/// service: those calls set the error handlers of MPI_COMM_WORLD and MPI_COMM_SELF for
/// their duration (`host::names`), which would race with the application's own calls.
fn on_progress_thread() -> bool {
    std::thread::current().name() == Some("mpicast-progress")
}

/// What rank `r` of `comm` is doing, as the name service says, for a message: "rank 1 is
/// waiting in MPI_Barrier on a communicator of 4 ranks", "rank 1 waits in no call that
/// mpicast polls" ... `None` when nobody can tell (no name service, one process, or this is
/// the progress thread).
pub fn doing(comm: MPI_Comm, r: u32) -> Option<String> {
    if on_progress_thread() {
        return None;
    }
    let seen = look(comm, &[r])?;
    let (_, s) = seen.into_iter().next()?;
    Some(describe_doing(r, &s))
}

/// "MPI_Barrier on a communicator of 4 ranks"; a call whose communicator the wait did not
/// know (size 0) alone.
fn on(call: &str, size: &str) -> String {
    if size == "0" {
        call.to_string()
    } else {
        format!("{call} on a communicator of {size} ranks")
    }
}

/// `doing`'s words for what the name service says of rank `r` (pure, for the tests).
pub fn describe_doing(r: u32, seen: &Seen) -> String {
    match seen {
        Seen::Absent => format!("rank {r} never registered with mpicast (it is not loaded there)"),
        Seen::Finalized => format!("rank {r} has called MPI_Finalize"),
        Seen::Here {
            waiting: Some(w), ..
        } => {
            let (call, size, kind) = parse_wait(w);
            match kind {
                WaitKind::Setup => format!(
                    "rank {r} is waiting in mpicast's setup of a communicator of {size} ranks \
                     ({call})"
                ),
                WaitKind::Operation => format!("rank {r} is waiting in {}", on(call, size)),
            }
        }
        Seen::Here { waiting: None, .. } => format!(
            "rank {r} is not waiting in any call that mpicast polls: it computes, or it is \
             blocked in a call of the host MPI"
        ),
    }
}

/// What the name service says of one rank.
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    /// Not registered: mpicast is not loaded there (or it has not initialised MPI yet).
    Absent,
    /// Registered, and withdrawn at its MPI_Finalize.
    Finalized,
    /// Registered, with its version and settings (variable, value); `waiting`: in the setup
    /// of a communicator or in an operation, as it said (`wait_value`).
    Here {
        version: String,
        settings: Vec<(String, String)>,
        waiting: Option<String>,
    },
}

/// A registration value: the version, then `NAME:value` for every agreed setting, comma
/// separated. No spaces and no `=`: Hydra's name service carries values in a text protocol
/// of space-separated `key=value` words, and would cut them there.
pub fn here_value(version: &str, cfg: &Config) -> String {
    let mut v = version.to_string();
    for (k, val) in cfg.agreed() {
        v.push(',');
        v.push_str(&k[config::PREFIX.len()..]);
        v.push(':');
        v.push_str(&val);
    }
    v
}

/// Parses a registration value (`here_value`'s format).
pub fn parse_here(value: &str) -> (String, Vec<(String, String)>) {
    let mut parts = value.split(',');
    let version = parts.next().unwrap_or("").to_string();
    let settings = parts
        .filter_map(|p| p.split_once(':'))
        .map(|(k, v)| (format!("{}{k}", config::PREFIX), v.to_string()))
        .collect();
    (version, settings)
}

/// Looks up ranks `suspects` of `comm` (by their rank in `comm`).
fn look(comm: MPI_Comm, suspects: &[u32]) -> Option<Vec<(u32, Seen)>> {
    let (prefix, _, _) = identity()?;
    let world = host::comm::world_ranks(comm).ok()?;
    let mut out = Vec::new();
    for &r in suspects {
        let Some(Some(w)) = world.get(r as usize).copied() else {
            continue;
        };
        let seen = match names::lookup(&name(&prefix, "here", w)) {
            None if names::lookup(&name(&prefix, "gone", w)).is_some() => Seen::Finalized,
            None => Seen::Absent,
            Some(v) => {
                let (version, settings) = parse_here(&v);
                Seen::Here {
                    version,
                    settings,
                    waiting: names::lookup(&name(&prefix, "wait", w)),
                }
            }
        };
        out.push((r, seen));
    }
    Some(out)
}

/// Why ranks `missing` of a communicator did not come, in lines for a message (each
/// starting with a newline and an indent): the facts the name service has about them,
/// compared with this rank (`me`, configured as `cfg`). `elsewhere`: what to say of ranks
/// that run mpicast with the same settings but are not in the operation.
pub fn explain(comm: MPI_Comm, me: u32, cfg: &Config, missing: &[u32], elsewhere: &str) -> String {
    let Some(seen) = look(comm, missing) else {
        return format!(
            "\n  (the launcher's name service did not answer, so mpicast cannot tell why; \
             the usual causes: mpicast not loaded on those ranks (with Open MPI, pass \
             -x LD_PRELOAD=... to mpirun), MPICAST_* settings that differ between ranks, or \
             {elsewhere})"
        );
    };
    Explanation::from_seen(me, cfg, &seen).render(elsewhere)
}

/// The facts of `explain`, grouped (pure, for the tests).
#[derive(Debug, Default, PartialEq)]
pub struct Explanation {
    pub absent: Vec<u32>,
    pub finalized: Vec<u32>,
    pub other_version: Vec<(u32, String)>,
    pub differences: Vec<String>,
    pub waiting: Vec<(u32, String)>,
    pub same: Vec<u32>,
}

impl Explanation {
    pub fn from_seen(me: u32, cfg: &Config, seen: &[(u32, Seen)]) -> Explanation {
        let mut e = Explanation::default();
        // As the other ranks registered theirs: cut where the name service cuts (`register`).
        let mut value = here_value(env!("CARGO_PKG_VERSION"), cfg);
        value.truncate(names::max_value_len());
        let mine = parse_here(&value).1;
        let mut compared = vec![(me, mine.clone())];
        for (r, s) in seen {
            match s {
                Seen::Absent => e.absent.push(*r),
                Seen::Finalized => e.finalized.push(*r),
                Seen::Here {
                    version,
                    settings,
                    waiting,
                } => {
                    if version != env!("CARGO_PKG_VERSION") {
                        e.other_version.push((*r, version.clone()));
                    }
                    if let Some(w) = waiting {
                        e.waiting.push((*r, w.clone()));
                    } else if *settings == mine {
                        e.same.push(*r);
                    }
                    if *settings != mine {
                        compared.push((*r, settings.clone()));
                    }
                }
            }
        }
        e.differences = config::differences(&compared);
        e
    }

    pub fn render(&self, elsewhere: &str) -> String {
        let mut out = String::new();
        let rl = |rs: &[u32]| config::rank_list(rs);
        if !self.absent.is_empty() {
            out.push_str(&format!(
                "\n  {} never registered with mpicast: mpicast is not loaded there. With Open \
                 MPI, mpirun passes LD_PRELOAD only to the ranks on its own host unless told: \
                 mpirun -x LD_PRELOAD=/path/to/libmpicast.so ...; with MPICH use -genv \
                 LD_PRELOAD ...; or link the program with -lmpicast",
                rl(&self.absent)
            ));
        }
        if !self.finalized.is_empty() {
            let one = self.finalized.len() == 1;
            out.push_str(&format!(
                "\n  {} {} called MPI_Finalize already: {} left this operation behind, or \
                 never called it",
                rl(&self.finalized),
                if one { "has" } else { "have" },
                if one { "it" } else { "they" }
            ));
        }
        for (r, v) in &self.other_version {
            out.push_str(&format!(
                "\n  rank {r} runs mpicast {v}, this rank {}: every rank needs the same library",
                env!("CARGO_PKG_VERSION")
            ));
        }
        if !self.differences.is_empty() {
            out.push_str(
                "\n  settings differ between ranks (every rank must see the same MPICAST_* \
                 values: mpirun -x NAME=value, Hydra's -genv, or one MPICAST_CONFIG file):",
            );
            for d in &self.differences {
                out.push_str(&format!("\n    {d}"));
            }
        }
        if !self.waiting.is_empty() {
            let mut by_call: Vec<(String, Vec<u32>)> = Vec::new();
            for (r, w) in &self.waiting {
                match by_call.iter_mut().find(|(c, _)| c == w) {
                    Some((_, rs)) => rs.push(*r),
                    None => by_call.push((w.clone(), vec![*r])),
                }
            }
            for (value, rs) in by_call {
                let (call, size, kind) = parse_wait(&value);
                let verb = if rs.len() == 1 { "is" } else { "are" };
                out.push_str(&match kind {
                    WaitKind::Setup => format!(
                        "\n  {} {verb} waiting in mpicast's setup of a communicator of {size} \
                         ranks ({call}) too",
                        rl(&rs)
                    ),
                    WaitKind::Operation => {
                        format!("\n  {} {verb} waiting in {}", rl(&rs), on(call, size))
                    }
                });
            }
        }
        if !self.same.is_empty() {
            let one = self.same.len() == 1;
            out.push_str(&format!(
                "\n  {} {} mpicast with the same settings but {} not in it: {elsewhere}",
                rl(&self.same),
                if one { "runs" } else { "run" },
                if one { "is" } else { "are" }
            ));
        }
        out
    }
}

/// Prints `message`, met by every rank of communicator `comm`, about once in the whole job
/// however many communicators meet the same condition (an interface that does not exist
/// fails the setup of every one): only the lowest world rank of `comm` prints, a process
/// prints a message once, and not at all when the name service says another process
/// printed it already.
pub fn say_once(comm: MPI_Comm, message: &str) {
    say_once_as(comm, message, message)
}

/// `say_once` where messages that differ only in details (a group address drawn per
/// communicator) count as one: `key` says which.
pub fn say_once_as(comm: MPI_Comm, key: &str, message: &str) {
    static SAID: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let lowest = host::comm::world_ranks(comm)
        .ok()
        .and_then(|w| w.into_iter().flatten().min());
    let me = host::comm::rank(host::comm_world()).ok();
    if lowest.is_some() && lowest != me {
        return;
    }
    if first_in_job(&SAID, "said", key) {
        crate::session::say(message);
    }
}

/// Whether this process is the first to meet `key`: not met before here (`said`), nor, by
/// the launcher's name service, in another process (a name `<job>-<kind>-<digest>`, which
/// this call then publishes). Two processes at the same moment may both be first.
fn first_in_job(said: &Mutex<Vec<u64>>, kind: &str, key: &str) -> bool {
    let key = digest(key.as_bytes());
    {
        let mut said = lock(said);
        if said.contains(&key) {
            return false;
        }
        said.push(key);
    }
    if let Some((prefix, _, _)) = identity() {
        let n = format!("{prefix}-{kind}-{key:016x}");
        if names::lookup(&n).is_some() {
            return false;
        }
        names::publish(&n, "1");
    }
    true
}

/// Prints `message`, which any rank may meet on its own (a root that moved its multicasts
/// off IP multicast), about once in the whole job: a process prints a message of `key` once,
/// and not at all when the name service says another process printed it already (two that
/// meet it at the same moment may both print).
pub fn say_first(key: &str, message: &str) {
    static SAID: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    if first_in_job(&SAID, "first", key) {
        crate::session::say(message);
    }
}

/// 64-bit FNV-1a: a digest that is the same in every process.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Ends the job over `comm` after a failure that several ranks may meet at about the same
/// time (a setup nobody else joins, an operation that stalls): only the lowest world rank
/// among those reporting prints `message()`, the others stay quiet and wait for its abort.
/// Each reporting rank claims a name, waits a moment for lower ranks to claim theirs, and
/// prints unless one did. Without a name service every reporting rank prints.
pub fn die_once(comm: MPI_Comm, message: impl FnOnce() -> String) -> ! {
    let quiet = match identity() {
        Some((prefix, rank, _)) if names::publish(&name(&prefix, "fatal", rank), "1") => {
            std::thread::sleep(Duration::from_millis(300));
            (0..rank).any(|r| names::lookup(&name(&prefix, "fatal", r)).is_some())
        }
        _ => false,
    };
    if quiet {
        // The printing rank's MPI_Abort ends this process; abort on our own only if it
        // does not come (one launcher message instead of one per rank).
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    } else {
        crate::session::say(&message());
        // A launcher that kills the job on MPI_Abort may drop what it has not forwarded yet.
        std::thread::sleep(Duration::from_millis(300));
    }
    host::abort(comm, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here(cfg: &Config, waiting: Option<&str>) -> Seen {
        let (version, settings) = parse_here(&here_value(env!("CARGO_PKG_VERSION"), cfg));
        Seen::Here {
            version,
            settings,
            waiting: waiting.map(str::to_string),
        }
    }

    #[test]
    fn explains_each_kind_of_absence() {
        let me = Config::default();
        let zero = Config::from_vars([("MPICAST_MIN_BYTES", "0")]).unwrap();
        let seen = vec![
            (1, Seen::Absent),
            (2, here(&zero, None)),
            (3, here(&me, None)),
            (4, here(&me, Some("MPI_Bcast:6"))),
            (5, Seen::Absent),
            (6, Seen::Finalized),
        ];
        let e = Explanation::from_seen(0, &me, &seen);
        assert_eq!(e.absent, vec![1, 5]);
        assert_eq!(e.finalized, vec![6]);
        assert_eq!(e.same, vec![3]);
        assert_eq!(e.waiting, vec![(4, "MPI_Bcast:6".to_string())]);
        assert_eq!(
            e.differences,
            vec!["MPICAST_MIN_BYTES: auto on rank 0; 0 on rank 2".to_string()]
        );
        let text = e.render("they called another collective");
        assert!(
            text.contains("ranks 1, 5 never registered with mpicast"),
            "{text}"
        );
        assert!(text.contains("-x LD_PRELOAD="), "{text}");
        assert!(
            text.contains("rank 6 has called MPI_Finalize already: it left this operation"),
            "{text}"
        );
        assert!(
            text.contains("MPICAST_MIN_BYTES: auto on rank 0; 0 on rank 2"),
            "{text}"
        );
        assert!(
            text.contains(
                "rank 4 is waiting in mpicast's setup of a communicator of 6 ranks (MPI_Bcast)"
            ),
            "{text}"
        );
        assert!(
            text.contains("rank 3 runs mpicast with the same settings but is not in it: they called another collective"),
            "{text}"
        );
    }

    #[test]
    fn says_which_call_a_rank_waits_in() {
        for (call, size, kind) in [
            ("MPI_Bcast", 6, WaitKind::Setup),
            ("MPI_Barrier", 4, WaitKind::Operation),
            ("MPICAST_Wait", 0, WaitKind::Operation),
        ] {
            let v = wait_value(call, size, kind);
            assert!(!v.contains(' ') && !v.contains('='), "{v}");
            assert_eq!(parse_wait(&v), (call, size.to_string().as_str(), kind));
        }
        let me = Config::default();
        let seen = vec![
            (1, here(&me, Some("MPI_Barrier:4:op"))),
            (2, here(&me, Some("MPI_Barrier:4:op"))),
            (3, here(&me, Some("MPI_Bcast:4"))),
        ];
        let text = Explanation::from_seen(0, &me, &seen).render("elsewhere");
        assert!(
            text.contains("ranks 1, 2 are waiting in MPI_Barrier on a communicator of 4 ranks"),
            "{text}"
        );
        assert!(
            text.contains(
                "rank 3 is waiting in mpicast's setup of a communicator of 4 ranks (MPI_Bcast) too"
            ),
            "{text}"
        );
        assert!(!text.contains("elsewhere"), "{text}");
        assert_eq!(
            describe_doing(0, &seen[0].1.clone()),
            "rank 0 is waiting in MPI_Barrier on a communicator of 4 ranks"
        );
        assert_eq!(
            describe_doing(4, &here(&me, Some("MPICAST_Wait:0:op"))),
            "rank 4 is waiting in MPICAST_Wait"
        );
        assert!(
            describe_doing(5, &here(&me, None)).starts_with("rank 5 is not waiting in any call")
        );
        assert!(describe_doing(6, &Seen::Absent).starts_with("rank 6 never registered"));
        assert_eq!(
            describe_doing(7, &Seen::Finalized),
            "rank 7 has called MPI_Finalize"
        );
    }

    #[test]
    fn registration_values_parse_back() {
        let c = Config::from_vars([("MPICAST_SYNC", "linear")]).unwrap();
        let value = here_value("9.9.9", &c);
        assert!(!value.contains(' ') && !value.contains('='), "{value}");
        let (v, s) = parse_here(&value);
        assert_eq!(v, "9.9.9");
        let want: Vec<(String, String)> = c
            .agreed()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(s, want);
        assert_eq!(parse_here("9.9.9"), ("9.9.9".to_string(), vec![]));
    }
}
