//! `mpicast doctor`: will multicast work on this cluster, and what to change if not. This file
//! owns the options and the output. `--local`: this host's facts, gathered by
//! `net::host_facts` and judged by `doctor::host`, the library's own code. `-n N`: a launch of
//! `mpicast-doctor-run` over MPI, whose ranks measure and whose rank 0 prints the job's report
//! (`doctor_run` and `doctor::job` in the library).

use crate::config::Config;
use crate::doctor::host::{diagnose, Severity};
use crate::doctor::report::{to_json, to_text};
use crate::net::host_facts::gather;
use crate::run::{self, Launch, Mpi};
use crate::Fail;
use std::ffi::OsString;
use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `mpicast doctor --help`.
pub const USAGE: &str = "\
usage: mpicast doctor -n N [--mpi openmpi|mpich] [--hostfile H] [--host LIST]
                      [--launcher-arg ARG]... [--long[=SECONDS]] [--json] [--count K]
                      [--timeout SECONDS] [--dry-run]
       mpicast doctor --local [--json]

Will mpicast's multicast work between the ranks of a job, and if not, why and what to change.

-n N launches N ranks of mpicast-doctor-run under the chosen MPI (found as `mpicast goal run`
finds its runner; MPICAST_DOCTOR_RUNNER overrides), with the settings the library would use
(the MPICAST_* environment and MPICAST_CONFIG). They report, per host: the interface that
MPICAST_IFACE selects (unset: the interface of the route to the groups, as the library
chooses), its address, MTU and flags, the buffers, rp_filter and group limit; and for the job:
who hears whose multicast (small and full-size datagrams, on the ports at both ends of
MPICAST_PORT; again at TTL 32 if hosts do not hear each other), the loss as rank 0 multicasts
at rising rates up to the link (the highest rate without loss), unicast between the ranks'
addresses (the repair path), and the IGMP queries heard. Each problem comes with its fix. It
takes a few seconds. The datagrams go where the library's would: on the interface chosen.

--local checks this host alone: nothing is sent and no group is joined.

  -n N              ranks (at least 2; spread them over the hosts to check, one per host is
                    enough)
  --mpi M           openmpi (default, mpirun.openmpi) or mpich (mpiexec.mpich)
  --hostfile H      passed to the launcher (mpich: -f H)
  --host LIST       passed to the launcher (mpich: -hosts LIST)
  --launcher-arg A  one more argument for the launcher, before the runner (repeatable)
  --long[=S]        listen for an IGMP query for S seconds (default 130, one query interval
                    and a margin), then check that the group still arrives: a switch that
                    snoops IGMP without a querier stops forwarding it after a few minutes
  --json            the report as one JSON document on standard output
  --count K         datagrams per sender and port in the hearing test (default 20)
  --timeout S       end the launch after S seconds (default 120, plus --long's wait)
  --dry-run         print the launch, run nothing
  --local           this host only

Exit status: 0 multicast works between every pair of ranks (warnings allowed), 1 a problem
found (or the launch failed), 2 bad usage.";

/// The variable that names the runner, overriding the lookup.
const RUNNER_VAR: &str = "MPICAST_DOCTOR_RUNNER";
const RUNNER: &str = "mpicast-doctor-run";
/// How long the launcher may take to end after the runner printed its verdict.
const AFTER_REPORT: Duration = Duration::from_secs(20);
/// The runner's last line on standard output.
const VERDICT: &str = "mpicast-doctor-run: verdict ";

/// The options of `mpicast doctor -n N`.
#[derive(Debug, PartialEq)]
pub struct JobOpts {
    pub ranks: u32,
    pub mpi: Mpi,
    pub hostfile: Option<String>,
    pub hosts: Option<String>,
    pub launcher_args: Vec<String>,
    pub long: Option<u64>,
    pub json: bool,
    pub count: Option<u32>,
    pub timeout: Option<u64>,
    pub dry_run: bool,
}

fn usage(m: impl Into<String>) -> Fail {
    Fail::Usage(m.into())
}

/// Parses the options of `mpicast doctor` after `doctor`: `Ok(None)` for `--local`.
pub fn job_opts(args: &[String]) -> Result<Option<JobOpts>, Fail> {
    let mut o = JobOpts {
        ranks: 0,
        mpi: Mpi::OpenMpi,
        hostfile: None,
        hosts: None,
        launcher_args: Vec::new(),
        long: None,
        json: false,
        count: None,
        timeout: None,
        dry_run: false,
    };
    let mut local = false;
    let mut ranks = None;
    let mut it = args.iter();
    let value = |flag: &str, it: &mut std::slice::Iter<String>| -> Result<String, Fail> {
        it.next()
            .cloned()
            .ok_or_else(|| usage(format!("{flag} needs a value")))
    };
    fn number<T: crate::limits::Int>(flag: &str, v: &str) -> Result<T, Fail> {
        crate::limits::parse_int(flag, v).map_err(usage)
    }
    while let Some(a) = it.next() {
        match a.as_str() {
            "--local" => local = true,
            "--json" => o.json = true,
            "--dry-run" => o.dry_run = true,
            "-n" | "--np" => {
                let v = value(a, &mut it)?;
                ranks = Some(number::<u32>(a, &v)?);
            }
            "--mpi" => {
                let v = value(a, &mut it)?;
                o.mpi = Mpi::from_name(&v)
                    .ok_or_else(|| usage(format!("--mpi wants openmpi or mpich, not `{v}`")))?;
            }
            "--hostfile" => o.hostfile = Some(value(a, &mut it)?),
            "--host" => o.hosts = Some(value(a, &mut it)?),
            "--launcher-arg" => o.launcher_args.push(value(a, &mut it)?),
            "--long" => o.long = Some(crate::doctor::job::LONG_DEFAULT_SECS),
            l if l.starts_with("--long=") => {
                let s: u64 = number("--long", &l["--long=".len()..])?;
                if s == 0 {
                    return Err(usage("--long wants a number of seconds above 0"));
                }
                o.long = Some(s);
            }
            "--count" => {
                let v = value(a, &mut it)?;
                let k: u32 = number(a, &v)?;
                if !(1..=1000).contains(&k) {
                    return Err(usage("--count wants 1 to 1000"));
                }
                o.count = Some(k);
            }
            "--timeout" => {
                let v = value(a, &mut it)?;
                o.timeout = Some(number(a, &v)?);
            }
            x if x.starts_with('-') => return Err(usage(format!("unknown option `{x}`"))),
            x => return Err(usage(format!("unexpected argument `{x}`"))),
        }
    }
    if local {
        if ranks.is_some() {
            return Err(usage("--local checks this host only: it takes no -n"));
        }
        return Ok(None);
    }
    let n = ranks.ok_or_else(|| {
        usage("doctor needs -n N (ranks to launch over MPI) or --local (this host only)")
    })?;
    if n < 2 {
        return Err(usage(
            "-n wants at least 2 ranks (who hears whom needs two)",
        ));
    }
    o.ranks = n;
    Ok(Some(o))
}

/// The runner's own arguments.
fn runner_args(o: &JobOpts) -> Vec<String> {
    let mut v = Vec::new();
    if o.json {
        v.push("json".to_string());
    }
    if let Some(s) = o.long {
        v.push(format!("long={s}"));
    }
    if let Some(k) = o.count {
        v.push(format!("count={k}"));
    }
    v
}

/// The launch of the runner for `o`, in an environment where `var` reads a variable. Unlike
/// `mpicast goal run`, nothing of mpicast's environment is set: the doctor checks what the
/// library would do with the caller's settings.
pub fn launch(
    o: &JobOpts,
    runner: &std::path::Path,
    var: &dyn Fn(&str) -> Option<String>,
    root: bool,
) -> Launch {
    let args = runner_args(o).into_iter().map(OsString::from).collect();
    let l = run::launch_runner(o.mpi, o.ranks, runner, args, var, root, false);
    let extra = run::launcher_options(
        o.mpi,
        o.hostfile.as_deref(),
        o.hosts.as_deref(),
        &o.launcher_args,
    );
    run::with_launcher_options(l, runner, &extra, o.mpi)
}

/// The runner's standard output without its verdict line, and the verdict (`Some(true)`:
/// problems).
pub fn split_verdict(out: &str) -> (String, Option<bool>) {
    let mut verdict = None;
    let mut kept = String::with_capacity(out.len());
    for line in out.split_inclusive('\n') {
        match line.trim_end().strip_prefix(VERDICT) {
            Some("ok") => verdict = Some(false),
            Some("problems") => verdict = Some(true),
            _ => kept.push_str(line),
        }
    }
    (kept, verdict)
}

fn job(o: &JobOpts) -> Result<(), Fail> {
    let runner = run::find_named_runner(
        RUNNER,
        RUNNER_VAR,
        "make doctor-tools",
        std::env::var_os(RUNNER_VAR),
        std::env::current_exe().ok(),
        std::path::Path::new(""),
        o.mpi,
    )
    .map_err(Fail::Io)?;
    let l = launch(
        o,
        &runner,
        &|v| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned()),
        run::is_root(),
    );
    if o.dry_run {
        println!("{}", run::render(&l));
        return Ok(());
    }
    if std::env::var_os("MPICAST_IFACE").is_none() {
        eprintln!(
            "mpicast doctor: MPICAST_IFACE is not set: checking the interface the library \
             would choose (the route to the groups)"
        );
    }
    let limit = Duration::from_secs(o.timeout.unwrap_or(120) + o.long.unwrap_or(0));
    let mut child = run::spawn(&l, Stdio::inherit()).map_err(Fail::Io)?;
    let so = child.stdout.take().expect("piped");
    // Lines as they come, so that a launcher that hangs after the report (MPICH's MPI_Finalize
    // does on the emulated cluster) can be stopped once the verdict is in.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(so);
        let mut line = String::new();
        while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
            if tx.send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    let mut out = String::new();
    let mut verdict_at: Option<Instant> = None;
    let start = Instant::now();
    let mut stopped_after_report = false;
    let status = loop {
        while let Ok(l) = rx.try_recv() {
            if l.starts_with(VERDICT) {
                verdict_at = Some(Instant::now());
            }
            out.push_str(&l);
        }
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if verdict_at.is_some_and(|t| t.elapsed() > AFTER_REPORT) => {
                stopped_after_report = true;
                break None;
            }
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => break None,
            Err(e) => return Err(Fail::Io(format!("waiting for {}: {e}", l.program))),
        }
    };
    if status.is_none() {
        run::stop(&mut child);
    }
    let _ = reader.join();
    while let Ok(l) = rx.try_recv() {
        out.push_str(&l);
    }
    if stopped_after_report {
        eprintln!(
            "mpicast doctor: the launcher had not ended {} s after the report (ranks hanging in \
             MPI_Finalize); stopped it",
            AFTER_REPORT.as_secs()
        );
    }
    let (report, verdict) = split_verdict(&out);
    print!("{report}");
    match (status, verdict) {
        (_, Some(false)) => Ok(()),
        (_, Some(true)) => Err(Fail::Exit(1)),
        (None, None) => Err(Fail::Io(format!(
            "the launch did not end within {} s and was stopped (--timeout SECONDS)\n  command: {}",
            limit.as_secs(),
            run::render(&l)
        ))),
        (Some(st), None) => Err(Fail::Io(format!(
            "the launch failed ({}) before the checks ended\n  command: {}",
            st.code()
                .map_or("ended by a signal".to_string(), |c| format!(
                    "exit status {c}"
                )),
            run::render(&l)
        ))),
    }
}

pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.iter().any(|a| a == "-h" || a == "--help") || args.first().is_some_and(|a| a == "help")
    {
        println!("{USAGE}");
        return Ok(());
    }
    let json = args.iter().any(|a| a == "--json");
    if let Some(o) = job_opts(args)? {
        return job(&o);
    }
    // A setting the library would refuse is itself the first problem: it would not start.
    let cfg = Config::from_env().map_err(|e| {
        Fail::Io(format!(
            "the library would refuse these settings: {}",
            e.to_string().trim_start_matches("mpicast: ")
        ))
    })?;
    let facts = gather(&cfg);
    let findings = diagnose(&facts, None);
    let out = if json {
        to_json(&facts, &findings)
    } else {
        to_text(&facts, &findings)
    };
    print!("{out}");
    if findings.iter().any(|f| f.severity == Severity::Problem) {
        Err(Fail::Exit(1))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IfaceSpec;
    use crate::doctor::report::json_str;
    use crate::net::host_facts::HostFacts;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn err(s: &str) -> String {
        match job_opts(&args(s)) {
            Err(Fail::Usage(m)) => m,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn job_options() {
        let o = job_opts(&args(
            "-n 4 --mpi mpich --hostfile hf --long=20 --json --count 5 --launcher-arg -v",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(o.ranks, 4);
        assert_eq!(o.mpi, Mpi::Mpich);
        assert_eq!(o.long, Some(20));
        assert_eq!(runner_args(&o), ["json", "long=20", "count=5"]);
        let l = launch(
            &o,
            std::path::Path::new("/r/mpicast-doctor-run"),
            &|_| None,
            true,
        );
        assert_eq!(l.program, "mpiexec.mpich");
        assert!(
            l.env.is_empty(),
            "no Open MPI consent for MPICH, no MPICAST_* set"
        );
        let words: Vec<String> = l
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            words,
            [
                "-n",
                "4",
                "-f",
                "hf",
                "-v",
                "/r/mpicast-doctor-run",
                "json",
                "long=20",
                "count=5"
            ]
        );
        let o = job_opts(&args("-n 2 --long")).unwrap().unwrap();
        assert_eq!(o.long, Some(crate::doctor::job::LONG_DEFAULT_SECS));
        let l = launch(&o, std::path::Path::new("r"), &|_| None, true);
        assert_eq!(l.program, "mpirun.openmpi");
        assert_eq!(l.env.len(), 2, "Open MPI's consent as root: {:?}", l.env);
        assert!(job_opts(&args("--local")).unwrap().is_none());
        assert!(err("").contains("-n N"));
        assert!(err("-n 1").contains("at least 2"));
        assert!(err("-n 2 --long=0").contains("above 0"));
        assert!(err("-n 2 --count 0").contains("1 to 1000"));
        assert!(err("-n x").contains("number"));
        assert!(err("-n 2 --mpi lam").contains("openmpi or mpich"));
        assert!(err("--local -n 2").contains("no -n"));
        assert!(err("-n 2 --bogus").contains("--bogus"));
    }

    #[test]
    fn the_verdict_line_is_taken_out() {
        let (r, v) = split_verdict("report\nlast\nmpicast-doctor-run: verdict ok\n");
        assert_eq!((r.as_str(), v), ("report\nlast\n", Some(false)));
        let (r, v) = split_verdict("x\nmpicast-doctor-run: verdict problems\n");
        assert_eq!((r.as_str(), v), ("x\n", Some(true)));
        assert_eq!(split_verdict("no verdict\n").1, None);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        let v: serde_json::Value = serde_json::from_str(&json_str("x\ty\u{7f}\"")).unwrap();
        assert_eq!(v, "x\ty\u{7f}\"");
    }

    fn lo_facts() -> HostFacts {
        let cfg = Config {
            iface: Some(IfaceSpec::Name("lo".into())),
            ..Config::default()
        };
        gather(&cfg)
    }

    #[test]
    fn reports_parse_and_agree() {
        let f = lo_facts();
        let d = diagnose(&f, None);
        let v: serde_json::Value = serde_json::from_str(&to_json(&f, &d)).unwrap();
        assert_eq!(v["iface"]["name"], "lo");
        assert_eq!(v["iface"]["mtu"], 65536);
        assert_eq!(v["iface_setting"], "lo");
        assert_eq!(v["findings"].as_array().unwrap().len(), d.len());
        let t = to_text(&f, &d);
        assert!(t.contains("lo (MPICAST_IFACE=lo)"), "{t}");
        assert!(t.contains("warning: the loopback interface lo"), "{t}");
        // The same facts with every finding there is: still one valid document.
        let mut g = f.clone();
        g.iface_spec = Some(IfaceSpec::Name("nosuchif9".into()));
        g.chosen = Err("mpicast: \"quoted\"\nand a newline".into());
        g.wanted_dev = Some("nosuchif9".into());
        g.rmem_max = None;
        let d = diagnose(&g, None);
        let v: serde_json::Value = serde_json::from_str(&to_json(&g, &d)).unwrap();
        assert_eq!(v["iface"], serde_json::Value::Null);
        assert_eq!(v["iface_error"], "mpicast: \"quoted\"\nand a newline");
        assert!(v["problems"].as_u64().unwrap() >= 1);
        let v: serde_json::Value = serde_json::from_str(&to_json(&g, &[])).unwrap();
        assert_eq!(v["findings"], serde_json::json!([]));
    }
}
