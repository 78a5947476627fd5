//! `mpicast goal run`: check a program here, then launch `mpicast-goal-run` (tools/goal_run.c)
//! on N ranks under the chosen MPI's launcher.

use crate::goal::Program;
use crate::sched::{func::Func, BufRef, Op, SCRATCH_SLOT};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The MPI a run uses: its launcher and the flavour directory of its runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
}

impl Mpi {
    pub fn from_name(s: &str) -> Option<Mpi> {
        match s {
            "openmpi" | "ompi" => Some(Mpi::OpenMpi),
            "mpich" => Some(Mpi::Mpich),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// As people write it.
    pub fn title(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "Open MPI",
            Mpi::Mpich => "MPICH",
        }
    }

    pub fn launcher(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpirun.openmpi",
            Mpi::Mpich => "mpiexec.mpich",
        }
    }
}

/// The runner's file name.
pub const RUNNER: &str = "mpicast-goal-run";

/// Per named buffer (slot order), the end of its furthest reference on any rank; only buffers
/// with a nonzero extent are listed (the executor needs nothing bound for the others).
pub fn needed_buffers(p: &Program) -> Vec<(String, usize)> {
    let mut need: BTreeMap<u16, usize> = BTreeMap::new();
    let mut note = |b: &BufRef| {
        if b.slot != SCRATCH_SLOT && b.len > 0 {
            let e = need.entry(b.slot).or_insert(0);
            *e = (*e).max(b.offset.saturating_add(b.len));
        }
    };
    for rp in &p.ranks {
        for (_, op) in rp.schedule.actions() {
            match op {
                Op::Send { buf, .. }
                | Op::Recv { buf, .. }
                | Op::McastSend { buf }
                | Op::McastRecv { buf, .. } => note(buf),
                Op::Exec { src, dst, .. } => {
                    note(src);
                    note(dst);
                }
                Op::Calc { .. } => {}
            }
        }
    }
    need.into_iter()
        .map(|(slot, n)| (p.buffer_name(slot).to_string(), n))
        .collect()
}

/// Why the program cannot run through the runner: ranks that do not fit, buffers not given
/// (with the size each needs), user functions (the runner registers none).
pub fn problems(p: &Program, ranks: u32, given: &[(String, usize)]) -> Vec<String> {
    let mut out = Vec::new();
    if !p.local_view && p.num_ranks() != ranks {
        out.push(format!(
            "the program describes {} ranks, but -n {ranks} was asked for",
            p.num_ranks()
        ));
    }
    for (name, need) in needed_buffers(p) {
        if !given.iter().any(|(g, _)| *g == name) {
            out.push(format!(
                "buffer `{name}` is used by the program but not given: add --buffer {name}={need} \
                 (its furthest reference)"
            ));
        }
    }
    let user = p.ranks.iter().any(|rp| {
        rp.schedule.actions().any(|(_, op)| {
            matches!(
                op,
                Op::Exec {
                    func: Func::User(_),
                    ..
                }
            )
        })
    });
    if user {
        out.push(
            "the program calls `exec user N`: mpicast-goal-run registers no user functions".into(),
        );
    }
    out
}

/// The MPI a runner was linked against, from the shared libraries it names (`libmpi.so.N`
/// for Open MPI, `libmpich.so.N` for MPICH); `None` when it names neither or both.
pub fn runner_mpi(bytes: &[u8]) -> Option<Mpi> {
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    match (has(b"libmpi.so."), has(b"libmpich.so.")) {
        (true, false) => Some(Mpi::OpenMpi),
        (false, true) => Some(Mpi::Mpich),
        _ => None,
    }
}

/// `dir` is `.../build/<flavour>/bin` of the source tree: that flavour.
fn flavour_bin_dir(dir: &Path) -> Option<Mpi> {
    if dir.file_name()? != "bin" {
        return None;
    }
    match dir.parent()?.file_name()?.to_str()? {
        "openmpi" => Some(Mpi::OpenMpi),
        "mpich" => Some(Mpi::Mpich),
        _ => None,
    }
}

/// Where the runner is: `$MPICAST_GOAL_RUNNER`, else `mpicast-goal-run` next to this
/// executable, else `build/<mpi>/bin/mpicast-goal-run` under `cwd` (the current directory
/// is `Path::new("")`). Next to the executable means in its directory, except when that is
/// `build/<flavour>/bin` of the source tree (`make lib` puts a copy of `mpicast` in each) and
/// `mpi` is the other flavour: then in `build/<mpi>/bin` beside it. A runner linked against
/// another MPI than `mpi` is an error (it cannot join the launcher's job). The error lists
/// the places tried.
pub fn find_runner(
    env: Option<OsString>,
    exe: Option<PathBuf>,
    cwd: &Path,
    mpi: Mpi,
) -> Result<PathBuf, String> {
    find_named_runner(
        RUNNER,
        "MPICAST_GOAL_RUNNER",
        "make goal-tools",
        env,
        exe,
        cwd,
        mpi,
    )
}

/// As [`find_runner`] for the runner `name`, which the variable `var` (whose value is `env`)
/// may name instead, and which `make lib` or `build_hint` builds.
pub fn find_named_runner(
    name: &str,
    var: &str,
    build_hint: &str,
    env: Option<OsString>,
    exe: Option<PathBuf>,
    cwd: &Path,
    mpi: Mpi,
) -> Result<PathBuf, String> {
    let found = |p: PathBuf| -> Result<PathBuf, String> {
        match std::fs::read(&p).ok().as_deref().and_then(runner_mpi) {
            Some(m) if m != mpi => Err(format!(
                "{} is built for {}, not {}: use --mpi {}, or set {var} to a runner built for {}",
                p.display(),
                m.title(),
                mpi.title(),
                m.name(),
                mpi.title()
            )),
            _ => Ok(p),
        }
    };
    if let Some(r) = env.filter(|r| !r.is_empty()) {
        let p = PathBuf::from(r);
        return if p.is_file() {
            found(p)
        } else {
            Err(format!("{var}={} is not a file", p.display()))
        };
    }
    let mut tried = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        match (flavour_bin_dir(dir), dir.parent().and_then(Path::parent)) {
            (Some(f), Some(build)) if f != mpi => {
                tried.push(build.join(mpi.name()).join("bin").join(name))
            }
            _ => tried.push(dir.join(name)),
        }
    }
    let under_cwd = cwd.join("build").join(mpi.name()).join("bin").join(name);
    if !tried.contains(&under_cwd) {
        tried.push(under_cwd);
    }
    for t in &tried {
        if t.is_file() {
            // Absolute, so that every rank finds it whatever its working directory.
            return found(t.canonicalize().unwrap_or_else(|_| t.clone()));
        }
    }
    Err(format!(
        "cannot find {name} (tried {}); build it with `make lib` (or `{build_hint}`) or set \
         {var}",
        tried
            .iter()
            .map(|t| t.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// What to run: the variables to set, the launcher and its arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct Launch {
    pub env: Vec<(String, String)>,
    pub program: String,
    pub args: Vec<OsString>,
}

/// What the rank processes need beyond the runner's own arguments.
pub struct RunSpec<'a> {
    pub mpi: Mpi,
    pub ranks: u32,
    pub runner: &'a Path,
    pub file: &'a str,
    pub buffers: &'a [(String, usize)],
    pub reps: Option<u64>,
    pub check: bool,
    /// `--expect bcast|sum-int32`, passed on.
    pub expect: Option<&'a str>,
}

/// The launch for `spec` in an environment where `var` reads a variable. Without
/// `MPICAST_IFACE` the run is kept on this host's loopback (`MPICAST_IFACE=lo MPICAST_TTL=0`),
/// and, unless `MPICAST_TOPO` is set, every rank joins the multicast (`MPICAST_TOPO=flat`):
/// `auto` would see all ranks on one host and hand every multicast action to the host MPI.
/// As root, Open MPI's consent variables are set unless already there.
pub fn launch(spec: &RunSpec, var: &dyn Fn(&str) -> Option<String>, root: bool) -> Launch {
    let mut args: Vec<OsString> = vec![spec.file.into()];
    for (name, size) in spec.buffers {
        args.push("--buffer".into());
        args.push(format!("{name}={size}").into());
    }
    if let Some(r) = spec.reps {
        args.push("--reps".into());
        args.push(r.to_string().into());
    }
    if spec.check {
        args.push("--check".into());
    }
    if let Some(e) = spec.expect {
        args.push("--expect".into());
        args.push(e.into());
    }
    launch_runner(spec.mpi, spec.ranks, spec.runner, args, var, root, true)
}

/// The launch of any runner on `ranks` ranks with `runner_args`, in the environment `launch`
/// describes (with `loopback`, on this host's loopback unless `MPICAST_IFACE` is set; Open
/// MPI's consent as root).
pub fn launch_runner(
    mpi: Mpi,
    ranks: u32,
    runner: &Path,
    runner_args: Vec<OsString>,
    var: &dyn Fn(&str) -> Option<String>,
    root: bool,
    loopback: bool,
) -> Launch {
    let mut env = Vec::new();
    if loopback && var("MPICAST_IFACE").is_none() {
        env.push(("MPICAST_IFACE".to_string(), "lo".to_string()));
        env.push(("MPICAST_TTL".to_string(), "0".to_string()));
        if var("MPICAST_TOPO").is_none() {
            env.push(("MPICAST_TOPO".to_string(), "flat".to_string()));
        }
    }
    if root && mpi == Mpi::OpenMpi {
        for v in ["OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] {
            if var(v).is_none() {
                env.push((v.to_string(), "1".to_string()));
            }
        }
    }
    let n = ranks.to_string();
    let mut args: Vec<OsString> = match mpi {
        Mpi::OpenMpi => [
            "--oversubscribe",
            "-n",
            &n,
            "--mca",
            "mpi_yield_when_idle",
            "1",
        ]
        .iter()
        .map(OsString::from)
        .collect(),
        Mpi::Mpich => vec!["-n".into(), n.into()],
    };
    args.push(runner.into());
    args.extend(runner_args);
    Launch {
        env,
        program: mpi.launcher().to_string(),
        args,
    }
}

/// The note for stderr when the launch keeps the run on loopback: what it set.
pub fn loopback_note(l: &Launch) -> Option<String> {
    if !l.env.iter().any(|(k, _)| k == "MPICAST_IFACE") {
        return None;
    }
    let set: Vec<String> = l
        .env
        .iter()
        .filter(|(k, _)| k.starts_with("MPICAST_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Some(format!(
        "MPICAST_IFACE is not set: running on this host's loopback ({})",
        set.join(" ")
    ))
}

/// `s` as one word of a shell command line (quoted when it needs to be).
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether this process runs as root (the owner of /proc/self is the effective user), which
/// Open MPI's launcher must be told.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The launch as one shell-quoted line, for --dry-run and error messages.
pub fn render(l: &Launch) -> String {
    let quote = shell_word;
    let mut words: Vec<String> = l
        .env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    words.push(quote(&l.program));
    words.extend(l.args.iter().map(|a| quote(&a.to_string_lossy())));
    words.join(" ")
}

/// Starts `l`: no stdin, stdout piped, stderr to `stderr`. The error says what could not be run
/// (and, when it is not there, that its MPI may not be installed).
pub fn spawn(l: &Launch, stderr: std::process::Stdio) -> Result<std::process::Child, String> {
    use std::process::Stdio;
    std::process::Command::new(&l.program)
        .args(&l.args)
        .envs(l.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                " (is that MPI installed? --mpi chooses openmpi or mpich)"
            } else {
                ""
            };
            format!("cannot run {}: {e}{hint}", l.program)
        })
}

/// Ends a launcher: SIGTERM, which it passes on to its ranks (SIGKILL would leave them
/// behind), then, after 5 s, SIGKILL; waits for it.
pub fn stop(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let grace = std::time::Instant::now();
    while grace.elapsed() < std::time::Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The options of the launcher itself, in its own spelling: where the ranks go (`--hostfile`,
/// `--host`; MPICH's `-f`, `-hosts`) and the caller's own arguments.
pub fn launcher_options(
    mpi: Mpi,
    hostfile: Option<&str>,
    hosts: Option<&str>,
    extra: &[String],
) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(h) = hostfile {
        v.push(match mpi {
            Mpi::OpenMpi => "--hostfile".to_string(),
            Mpi::Mpich => "-f".to_string(),
        });
        v.push(h.to_string());
    }
    if let Some(h) = hosts {
        v.push(match mpi {
            Mpi::OpenMpi => "--host".to_string(),
            Mpi::Mpich => "-hosts".to_string(),
        });
        v.push(h.to_string());
    }
    v.extend(extra.iter().cloned());
    v
}

/// `l` with `extra` given to the launcher just before the runner, and, for Open MPI on other
/// hosts, `-x NAME` for each mpicast variable the ranks must see (Open MPI forwards only
/// what it is told to; MPICH's launcher forwards the whole environment).
pub fn with_launcher_options(mut l: Launch, runner: &Path, extra: &[String], mpi: Mpi) -> Launch {
    if extra.is_empty() {
        return l;
    }
    let at = l
        .args
        .iter()
        .position(|a| Path::new(a) == runner)
        .unwrap_or(l.args.len());
    let mut add: Vec<OsString> = extra.iter().map(OsString::from).collect();
    if mpi == Mpi::OpenMpi {
        let mut names: Vec<String> = l.env.iter().map(|(k, _)| k.clone()).collect();
        names.extend(std::env::vars_os().filter_map(|(k, _)| {
            let k = k.to_string_lossy().into_owned();
            k.starts_with("MPICAST_").then_some(k)
        }));
        names.sort();
        names.dedup();
        for k in names.iter().filter(|k| k.starts_with("MPICAST_")) {
            add.push("-x".into());
            add.push(k.into());
        }
    }
    l.args.splice(at..at, add);
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> Program {
        crate::goal::parse_any(text.as_bytes()).unwrap().program
    }

    const AR: &str = "num_ranks 2;\n\
        rank #0 { a: send 0,8 to 1; b: recv tmp+8,8 from 1; c: exec sumInt32 with tmp+8,8 0,8;\n\
                  requ c -> b; requ c -> a; }\n\
        rank #1 { a: send 0,16 to 0; b: recv tmp+0,16 from 0; }\n";

    #[test]
    fn buffers_and_their_extents() {
        // Rank 1's 16-byte send and rank 0's 8 bytes at tmp+8 both need 16 bytes.
        let p = program(AR);
        assert_eq!(
            needed_buffers(&p),
            [("buf".to_string(), 16), ("tmp".to_string(), 16)]
        );
        let given = [("buf".to_string(), 16)];
        let probs = problems(&p, 2, &given);
        assert_eq!(probs.len(), 1, "{probs:?}");
        assert!(probs[0].contains("buffer `tmp`") && probs[0].contains("--buffer tmp=16"));
        let all = [("buf".to_string(), 16), ("tmp".to_string(), 16)];
        assert!(problems(&p, 2, &all).is_empty());
        assert!(problems(&p, 3, &all)[0].contains("describes 2 ranks, but -n 3"));
        // A local view fits any group; calc needs no buffer.
        let local = program("c0: calc 5;\n");
        assert!(needed_buffers(&local).is_empty());
        assert!(problems(&local, 7, &[]).is_empty());
        // User functions cannot run through the runner.
        let user = program("exec user 0 with 0,4 x+0,4;\n");
        let probs = problems(&user, 1, &[("buf".into(), 4), ("x".into(), 4)]);
        assert!(probs.iter().any(|m| m.contains("exec user N")), "{probs:?}");
    }

    #[test]
    fn loopback_only_without_iface() {
        let runner = Path::new("/r/mpicast-goal-run");
        let bufs = [("buf".to_string(), 64)];
        let spec = RunSpec {
            mpi: Mpi::OpenMpi,
            ranks: 4,
            runner,
            file: "f.goal",
            buffers: &bufs,
            reps: Some(3),
            check: true,
            expect: None,
        };
        let unset = |_: &str| None;
        let l = launch(&spec, &unset, true);
        assert_eq!(
            render(&l),
            "MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat OMPI_ALLOW_RUN_AS_ROOT=1 \
             OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --oversubscribe -n 4 --mca \
             mpi_yield_when_idle 1 /r/mpicast-goal-run f.goal --buffer buf=64 --reps 3 --check"
        );
        // The caller's interface is left alone (and its TTL), and not root: no consent vars.
        let set = |v: &str| (v == "MPICAST_IFACE").then(|| "eth1".to_string());
        let l = launch(&spec, &set, false);
        assert!(l.env.is_empty(), "{:?}", l.env);
        assert_eq!(loopback_note(&l), None);
        // A topology of the caller's own is kept on loopback too.
        let topo = |v: &str| (v == "MPICAST_TOPO").then(|| "leaders".to_string());
        let l = launch(&spec, &topo, false);
        assert_eq!(
            l.env,
            [
                ("MPICAST_IFACE".to_string(), "lo".to_string()),
                ("MPICAST_TTL".to_string(), "0".to_string())
            ]
        );
        assert_eq!(
            loopback_note(&l).unwrap(),
            "MPICAST_IFACE is not set: running on this host's loopback \
             (MPICAST_IFACE=lo MPICAST_TTL=0)"
        );
        let spec = RunSpec {
            mpi: Mpi::Mpich,
            reps: None,
            check: false,
            expect: Some("sum-int32"),
            ..spec
        };
        let l = launch(&spec, &unset, true);
        assert_eq!(
            render(&l),
            "MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat mpiexec.mpich -n 4 \
             /r/mpicast-goal-run f.goal --buffer buf=64 --expect sum-int32"
        );
        assert_eq!(
            loopback_note(&l).unwrap(),
            "MPICAST_IFACE is not set: running on this host's loopback \
             (MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat)"
        );
    }

    #[test]
    fn runner_lookup_order() {
        let dir = std::env::temp_dir().join(format!("mpicast-run-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("mpicast");
        let next = dir.join(RUNNER);
        // Not there: the error names every place tried.
        let e = find_runner(None, Some(exe.clone()), &dir, Mpi::Mpich).unwrap_err();
        assert!(e.contains(&next.display().to_string()) && e.contains("build/mpich/bin"));
        // The source tree's build directory under cwd ...
        let built = dir.join("build/mpich/bin").join(RUNNER);
        std::fs::create_dir_all(built.parent().unwrap()).unwrap();
        std::fs::write(&built, b"").unwrap();
        assert_eq!(
            find_runner(None, Some(exe.clone()), &dir, Mpi::Mpich).unwrap(),
            built.canonicalize().unwrap()
        );
        assert!(find_runner(None, Some(exe.clone()), &dir, Mpi::OpenMpi).is_err());
        // ... unless one is next to the executable.
        std::fs::write(&next, b"").unwrap();
        assert_eq!(
            find_runner(None, Some(exe.clone()), &dir, Mpi::Mpich).unwrap(),
            next.canonicalize().unwrap()
        );
        // The variable wins, and must name a file.
        let other = dir.join("other");
        let e = find_runner(
            Some(other.clone().into()),
            Some(exe.clone()),
            &dir,
            Mpi::Mpich,
        );
        assert!(e.unwrap_err().contains("is not a file"));
        std::fs::write(&other, b"").unwrap();
        assert_eq!(
            find_runner(Some(other.clone().into()), Some(exe), &dir, Mpi::Mpich).unwrap(),
            other
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn runner_next_to_a_copy_in_the_build_tree() {
        // make lib: build/<flavour>/bin/{mpicast,mpicast-goal-run} for each flavour.
        let dir = std::env::temp_dir().join(format!("mpicast-run-tree-{}", std::process::id()));
        let bin = |f: &str| dir.join("build").join(f).join("bin");
        for f in ["openmpi", "mpich"] {
            std::fs::create_dir_all(bin(f)).unwrap();
        }
        std::fs::write(bin("openmpi").join(RUNNER), b"\0libmpi.so.40\0").unwrap();
        std::fs::write(bin("mpich").join(RUNNER), b"\0libmpich.so.12\0").unwrap();
        let exe = bin("openmpi").join("mpicast");
        let elsewhere = Path::new("/nonexistent-cwd");
        // Run from anywhere: the runner beside the command, or its sibling flavour's.
        let ompi = find_runner(None, Some(exe.clone()), elsewhere, Mpi::OpenMpi).unwrap();
        assert_eq!(ompi, bin("openmpi").join(RUNNER).canonicalize().unwrap());
        let mpich = find_runner(None, Some(exe.clone()), elsewhere, Mpi::Mpich).unwrap();
        assert_eq!(mpich, bin("mpich").join(RUNNER).canonicalize().unwrap());
        // An installation holds one flavour: asking for the other says which it is.
        let inst = dir.join("prefix/bin");
        std::fs::create_dir_all(&inst).unwrap();
        std::fs::copy(bin("openmpi").join(RUNNER), inst.join(RUNNER)).unwrap();
        let e = find_runner(None, Some(inst.join("mpicast")), elsewhere, Mpi::Mpich).unwrap_err();
        assert!(
            e.contains("is built for Open MPI, not MPICH: use --mpi openmpi"),
            "{e}"
        );
        // So does a runner named by the variable.
        let e = find_runner(
            Some(bin("mpich").join(RUNNER).into()),
            None,
            elsewhere,
            Mpi::OpenMpi,
        )
        .unwrap_err();
        assert!(e.contains("is built for MPICH, not Open MPI"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn runner_flavour_from_its_libraries() {
        assert_eq!(
            runner_mpi(b"x\0libmpi.so.40\0libmpicast.so.0\0"),
            Some(Mpi::OpenMpi)
        );
        assert_eq!(
            runner_mpi(b"x\0libmpich.so.12\0libmpicast.so.0\0"),
            Some(Mpi::Mpich)
        );
        // Neither (not a runner we know), or both: no verdict.
        assert_eq!(runner_mpi(b"libmpicast.so.0"), None);
        assert_eq!(runner_mpi(b"libmpi.so.40 libmpich.so.12"), None);
    }
}
