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

    fn launcher(self) -> &'static str {
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

/// Where the runner is: `$MPICAST_GOAL_RUNNER`, else `mpicast-goal-run` next to this
/// executable, else `build/<mpi>/bin/mpicast-goal-run` under `cwd` (the current directory
/// is `Path::new("")`). The error lists the places tried.
pub fn find_runner(
    env: Option<OsString>,
    exe: Option<PathBuf>,
    cwd: &Path,
    mpi: Mpi,
) -> Result<PathBuf, String> {
    if let Some(r) = env.filter(|r| !r.is_empty()) {
        let p = PathBuf::from(r);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("MPICAST_GOAL_RUNNER={} is not a file", p.display()))
        };
    }
    let mut tried = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        tried.push(dir.join(RUNNER));
    }
    tried.push(cwd.join("build").join(mpi.name()).join("bin").join(RUNNER));
    for t in &tried {
        if t.is_file() {
            // Absolute, so that every rank finds it whatever its working directory.
            return Ok(t.canonicalize().unwrap_or_else(|_| t.clone()));
        }
    }
    Err(format!(
        "cannot find {RUNNER} (tried {}); build it with `make goal-tools` or set \
         MPICAST_GOAL_RUNNER",
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
/// `MPICAST_IFACE` the run is kept on this host's loopback (`MPICAST_IFACE=lo MPICAST_TTL=0`);
/// as root, Open MPI's consent variables are set unless already there.
pub fn launch(spec: &RunSpec, var: &dyn Fn(&str) -> Option<String>, root: bool) -> Launch {
    let mut env = Vec::new();
    if var("MPICAST_IFACE").is_none() {
        env.push(("MPICAST_IFACE".to_string(), "lo".to_string()));
        env.push(("MPICAST_TTL".to_string(), "0".to_string()));
    }
    if root && spec.mpi == Mpi::OpenMpi {
        for v in ["OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] {
            if var(v).is_none() {
                env.push((v.to_string(), "1".to_string()));
            }
        }
    }
    let n = spec.ranks.to_string();
    let mut args: Vec<OsString> = match spec.mpi {
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
    args.push(spec.runner.into());
    args.push(spec.file.into());
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
    Launch {
        env,
        program: spec.mpi.launcher().to_string(),
        args,
    }
}

/// The launch as one shell-quoted line, for --dry-run and error messages.
pub fn render(l: &Launch) -> String {
    fn quote(s: &str) -> String {
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    }
    let mut words: Vec<String> = l
        .env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    words.push(quote(&l.program));
    words.extend(l.args.iter().map(|a| quote(&a.to_string_lossy())));
    words.join(" ")
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
            "MPICAST_IFACE=lo MPICAST_TTL=0 OMPI_ALLOW_RUN_AS_ROOT=1 \
             OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --oversubscribe -n 4 --mca \
             mpi_yield_when_idle 1 /r/mpicast-goal-run f.goal --buffer buf=64 --reps 3 --check"
        );
        // The caller's interface is left alone (and its TTL), and not root: no consent vars.
        let set = |v: &str| (v == "MPICAST_IFACE").then(|| "eth1".to_string());
        let l = launch(&spec, &set, false);
        assert!(l.env.is_empty(), "{:?}", l.env);
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
            "MPICAST_IFACE=lo MPICAST_TTL=0 mpiexec.mpich -n 4 /r/mpicast-goal-run f.goal \
             --buffer buf=64 --expect sum-int32"
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
}
