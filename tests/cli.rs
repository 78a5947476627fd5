//! The `mpicast` command line as a user meets it: help, version, usage errors and their exit
//! status, and the environment that `goal run` gives the ranks (with --dry-run, so no MPI
//! is launched).

use std::path::PathBuf;
use std::process::{Command, Output};

fn mpicast(args: &[&str]) -> Output {
    mpicast_env(args, &[], &[])
}

fn mpicast_env(args: &[&str], set: &[(&str, &str)], unset: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpicast"));
    c.args(args);
    for v in unset {
        c.env_remove(v);
    }
    for (k, v) in set {
        c.env(k, v);
    }
    c.output().expect("run mpicast")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_and_version() {
    for flag in ["--help", "-h", "help"] {
        let o = mpicast(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{flag}");
        let out = text(&o.stdout);
        assert!(out.starts_with("usage: mpicast <command>"), "{flag}: {out}");
        assert!(
            out.contains("\n  goal "),
            "{flag}: lists the goal command: {out}"
        );
    }
    for args in [
        &["goal", "--help"][..],
        &["goal", "-h"],
        &["help", "goal"],
        &["goal", "gen", "--help"],
    ] {
        let o = mpicast(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(
            text(&o.stdout).starts_with("usage: mpicast goal <command>"),
            "{args:?}"
        );
    }
    let o = mpicast(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o.stdout),
        format!("mpicast {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_2() {
    // Nothing to do: the usage, on stderr.
    let o = mpicast(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(text(&o.stderr).starts_with("usage: mpicast <command>"));
    let o = mpicast(&["goal"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).starts_with("usage: mpicast goal <command>"));
    // A mistake: one line, pointing to the help.
    for (args, line) in [
        (
            &["nosuch"][..],
            "mpicast: unknown command `nosuch` (see `mpicast --help`)\n",
        ),
        (
            &["--nosuch"],
            "mpicast: unknown option `--nosuch` (see `mpicast --help`)\n",
        ),
        (
            &["goal", "nosuch"],
            "mpicast: unknown goal command `nosuch` (see `mpicast goal --help`)\n",
        ),
        (
            &["goal", "gen"],
            "mpicast: gen needs an ALGO (see `mpicast goal --help`)\n",
        ),
        (
            &["goal", "bound", "f", "--every", "0"],
            "mpicast: --every wants at least 1 (see `mpicast goal --help`)\n",
        ),
    ] {
        let o = mpicast(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&o.stderr), line, "{args:?}");
    }
    // An unknown algorithm: one line that lists the known ones.
    let o = mpicast(&["goal", "gen", "nosuch", "--ranks", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "mpicast: unknown algorithm `nosuch`; known: binomial-bcast, dissemination-allreduce, \
         scout-tree-bcast, scout-linear-bcast, mcast-barrier\n"
    );
}

#[test]
fn goal_run_environment() {
    let dir = std::env::temp_dir().join(format!("mpicast-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let goal: PathBuf = dir.join("bcast.goal");
    let g = goal.to_str().unwrap();
    let o = mpicast(&[
        "goal",
        "gen",
        "scout-tree-bcast",
        "--ranks",
        "4",
        "--size",
        "64",
        "-o",
        g,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // A stand-in runner: named by the variable, recognised as an Open MPI build.
    let runner = dir.join("mpicast-goal-run");
    std::fs::write(&runner, b"\0libmpicast.so.0\0libmpi.so.40\0").unwrap();
    let r = runner.to_str().unwrap();
    let run = [
        "goal",
        "run",
        g,
        "-n",
        "4",
        "--buffer",
        "buf=64",
        "--dry-run",
    ];
    let clean = ["MPICAST_IFACE", "MPICAST_TTL", "MPICAST_TOPO"];

    // Loopback: multicast between the ranks of this host, so the topology is flat.
    let o = mpicast_env(&run, &[("MPICAST_GOAL_RUNNER", r)], &clean);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let line = text(&o.stdout);
    assert!(
        line.starts_with("MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat "),
        "{line}"
    );
    assert!(
        line.contains(&format!(" {r} {g} --buffer buf=64")),
        "{line}"
    );
    // The caller's topology is kept; the caller's interface leaves everything to the caller.
    let o = mpicast_env(
        &run,
        &[("MPICAST_GOAL_RUNNER", r), ("MPICAST_TOPO", "leaders")],
        &clean,
    );
    let line = text(&o.stdout);
    assert!(
        line.starts_with("MPICAST_IFACE=lo MPICAST_TTL=0 ") && !line.contains("MPICAST_TOPO"),
        "{line}"
    );
    let o = mpicast_env(
        &run,
        &[("MPICAST_GOAL_RUNNER", r), ("MPICAST_IFACE", "eth9")],
        &clean,
    );
    assert!(!text(&o.stdout).contains("MPICAST_"), "{}", text(&o.stdout));
    // A runner of the other MPI is refused before anything is launched.
    let mut mpich = run.to_vec();
    mpich.extend(["--mpi", "mpich"]);
    let o = mpicast_env(&mpich, &[("MPICAST_GOAL_RUNNER", r)], &clean);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("is built for Open MPI, not MPICH: use --mpi openmpi"));
    std::fs::remove_dir_all(&dir).unwrap();
}
