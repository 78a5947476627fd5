//! `mpicast tune`: launches `mpicast-tune-run` (tools/tune_run.c) as `mpicast goal run`
//! launches its runner, shows a progress bar while it measures, and prints the curves side by
//! side with the settings `tune` (src/tune.rs, pure) chooses from them, as shell `export`
//! lines; `-o` writes them as an `MPICAST_CONFIG` file, `--svg` plots the curves. This file owns
//! the options, the launch and the output; what the figures mean is `tune`'s.

use crate::progress::Progress;
use crate::run::{self, Launch, Mpi};
use crate::svg;
use crate::tune::{self, Choice, Measured};
use crate::Fail;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `mpicast tune --help`.
pub const USAGE: &str = "\
usage: mpicast tune -n N [--mpi openmpi|mpich] [--sizes LIST] [--reps R] [--warmup W]
                    [-o FILE] [--svg FILE] [--raw FILE] [--timeout SECS] [--dry-run]
                    [--hostfile H] [--host LIST] [--launcher-arg ARG]...
       mpicast tune --from RAW [--mpi M] [-o FILE] [--svg FILE]

Measures, on N ranks of your MPI and network, the host MPI's MPI_Bcast (PMPI_Bcast) and
mpicast's, eager (no scouts) and with scouts, side by side at every size, and the barrier,
then prints the settings that keep the default never slower than the host MPI:
MPICAST_MIN_BYTES, MPICAST_EAGER_BYTES, MPICAST_FRAG_BYTES and MPICAST_RCVBUF, as shell
`export` lines (the table above them is shell comments: `eval \"$(mpicast tune ...)\"` works).
Each figure is the median over R repetitions of the slowest rank's time, with the root
rotating (docs/tune.md says how the settings are chosen).

options:
  -n N              ranks (at least 2; one per host measures the network, as a job would)
  --mpi M           openmpi (default, mpirun.openmpi) or mpich (mpiexec.mpich)
  --sizes LIST      broadcast sizes, comma-separated (suffixes k, KiB, m, MiB), at least two
                    (default 64 B to 4 MiB by powers of 2)
  --reps R          timed repetitions per size and mode (default 11)
  --warmup W        untimed repetitions before them (default 2)
  -o FILE           also write the settings as an MPICAST_CONFIG file, with a header saying
                    how they were measured
  --svg FILE        plot the curves: time against size, both axes logarithmic
  --raw FILE        also keep what the runner printed (every repetition's time)
  --from RAW        launch nothing: choose the settings again from a file --raw kept
  --timeout SECS    end the job if it takes longer (default 900)
  --dry-run         print the launch, run nothing
  --hostfile H      passed to the launcher (mpich: -f H)
  --host LIST       passed to the launcher (mpich: -hosts LIST)
  --launcher-arg A  one more argument for the launcher, before the runner (repeatable)

The runner is mpicast-tune-run: $MPICAST_TUNE_RUNNER, else next to this executable, else
build/<mpi>/bin/ under the current directory (`make lib` builds it). As with `mpicast goal
run`: without MPICAST_IFACE the ranks run on this host's loopback (MPICAST_IFACE=lo
MPICAST_TTL=0 MPICAST_TOPO=flat), which says nothing about a network; with --hostfile or
--host, set MPICAST_IFACE to the network the hosts share. Other MPICAST_* variables (and
MPICAST_CONFIG) apply to the run as to any job; the runner's hints override MIN_BYTES and
EAGER_BYTES on the communicators it measures.

Exit status: 0 fine, 1 errors (no runner, the launch failed, a rank failed or multicast did
not work), 2 bad usage.";

const HELP: &str = "mpicast tune --help";
const DEFAULT_REPS: u32 = 11;
const DEFAULT_WARMUP: u32 = 2;
const DEFAULT_TIMEOUT: u64 = 900;
/// How long a job that printed all its results may take to end.
const FINALIZE_GRACE: Duration = Duration::from_secs(20);
/// The runner's limits: sizes are `int` counts of bytes, at most 64 of them.
const MAX_SIZE: u64 = i32::MAX as u64;
const MAX_SIZES: usize = 64;
pub const RUNNER: &str = "mpicast-tune-run";

fn usage(m: impl Into<String>) -> Fail {
    Fail::UsageLine(format!("{} (see `{HELP}`)", m.into()))
}

#[derive(Debug, PartialEq)]
struct TuneOpts {
    ranks: u32,
    mpi: Mpi,
    sizes: Vec<u64>,
    reps: u32,
    warmup: u32,
    out: Option<String>,
    svg: Option<String>,
    raw: Option<String>,
    from: Option<String>,
    timeout: Duration,
    dry_run: bool,
    hostfile: Option<String>,
    hosts: Option<String>,
    launcher_args: Vec<String>,
}

/// 64 B .. 4 MiB by powers of 2.
fn default_sizes() -> Vec<u64> {
    (6..=22).map(|k| 1u64 << k).collect()
}

fn number<T: crate::limits::Int>(flag: &str, v: &str) -> Result<T, Fail> {
    crate::limits::parse_int(flag, v).map_err(usage)
}

fn parse_sizes(v: &str) -> Result<Vec<u64>, Fail> {
    let mut sizes = Vec::new();
    for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let s = tune::parse_size(w)
            .ok_or_else(|| usage(format!("--sizes: `{w}` is not a size (64, 4k, 1MiB)")))?;
        if !(1..=MAX_SIZE).contains(&s) {
            return Err(usage(format!(
                "--sizes: {w} is not in 1..={MAX_SIZE} bytes"
            )));
        }
        sizes.push(s);
    }
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        return Err(usage(
            "--sizes needs at least two different sizes (a curve)",
        ));
    }
    if sizes.len() > MAX_SIZES {
        return Err(usage(format!("--sizes: at most {MAX_SIZES} sizes")));
    }
    Ok(sizes)
}

fn tune_opts(args: &[String]) -> Result<TuneOpts, Fail> {
    let mut o = TuneOpts {
        ranks: 0,
        mpi: Mpi::OpenMpi,
        sizes: default_sizes(),
        reps: DEFAULT_REPS,
        warmup: DEFAULT_WARMUP,
        out: None,
        svg: None,
        raw: None,
        from: None,
        timeout: Duration::from_secs(DEFAULT_TIMEOUT),
        dry_run: false,
        hostfile: None,
        hosts: None,
        launcher_args: Vec::new(),
    };
    let mut ranks = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| usage(format!("{flag} needs a value")))
        };
        match a.as_str() {
            "-n" | "--ranks" => ranks = Some(number::<u32>(a, &value(a)?)?),
            "--mpi" => {
                let v = value(a)?;
                o.mpi = Mpi::from_name(&v)
                    .ok_or_else(|| usage(format!("--mpi wants openmpi or mpich, not `{v}`")))?;
            }
            "--sizes" => o.sizes = parse_sizes(&value(a)?)?,
            "--reps" => {
                o.reps = number(a, &value(a)?)?;
                if !(1..=100_000).contains(&o.reps) {
                    return Err(usage("--reps wants 1 to 100000"));
                }
            }
            "--warmup" => {
                o.warmup = number(a, &value(a)?)?;
                if o.warmup > 1000 {
                    return Err(usage("--warmup wants 0 to 1000"));
                }
            }
            "-o" | "--out" => o.out = Some(value(a)?),
            "--svg" => o.svg = Some(value(a)?),
            "--raw" => o.raw = Some(value(a)?),
            "--from" => o.from = Some(value(a)?),
            "--timeout" => {
                let s: u64 = number(a, &value(a)?)?;
                if s == 0 {
                    return Err(usage("--timeout wants at least 1 second"));
                }
                o.timeout = Duration::from_secs(s);
            }
            "--dry-run" => o.dry_run = true,
            "--hostfile" => o.hostfile = Some(value(a)?),
            "--host" | "--hosts" => o.hosts = Some(value(a)?),
            "--launcher-arg" => o.launcher_args.push(value(a)?),
            s => {
                return Err(usage(format!(
                    "unknown {} `{s}`",
                    if s.starts_with('-') {
                        "option"
                    } else {
                        "argument"
                    }
                )))
            }
        }
    }
    if o.from.is_some() {
        if ranks.is_some() || o.raw.is_some() || o.dry_run {
            return Err(usage(
                "--from launches nothing: no -n, --raw or --dry-run with it",
            ));
        }
        return Ok(o);
    }
    o.ranks = ranks.ok_or_else(|| usage("tune needs -n N (the number of ranks)"))?;
    if o.ranks < 2 {
        return Err(usage(
            "-n wants at least 2 ranks (a broadcast needs a receiver)",
        ));
    }
    Ok(o)
}

fn launch_of(o: &TuneOpts, runner: &Path, var: &dyn Fn(&str) -> Option<String>) -> Launch {
    let sizes: Vec<String> = o.sizes.iter().map(u64::to_string).collect();
    let args: Vec<OsString> = vec![
        "--sizes".into(),
        sizes.join(",").into(),
        "--reps".into(),
        o.reps.to_string().into(),
        "--warmup".into(),
        o.warmup.to_string().into(),
        "--rcvbuf".into(),
        tune::DEFAULT_RCVBUF.to_string().into(),
    ];
    let l = run::launch_runner(o.mpi, o.ranks, runner, args, var, run::is_root(), true);
    let extra = run::launcher_options(
        o.mpi,
        o.hostfile.as_deref(),
        o.hosts.as_deref(),
        &o.launcher_args,
    );
    run::with_launcher_options(l, runner, &extra, o.mpi)
}

/// How long one size takes, roughly, for the progress bar: a fixed cost and the bytes.
fn weight(bytes: u64) -> u64 {
    bytes + (16 << 10)
}

/// Runs `l`, reading the runner's stdout line by line (the progress bar follows the sizes it
/// reports); ends it (SIGTERM, then SIGKILL) after `limit`. Returns stdout and stderr.
fn run_streamed(l: &Launch, o: &TuneOpts) -> Result<(String, String), String> {
    let mut child = run::spawn(l, Stdio::piped())?;
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut err_pipe = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let total: u64 = o.sizes.iter().map(|&b| 3 * weight(b)).sum::<u64>() + 2 * weight(0);
    let mut done = 0u64;
    let mut bar = Progress::new("mpicast: tune", true);
    // Not on a terminal (a log): one line per size instead of the bar.
    let tty = std::io::stderr().is_terminal();
    let mut sizes_done = 0;
    bar.update(0, total);
    let mut stdout = String::new();
    let start = Instant::now();
    // When the runner printed `done`: from then on only MPI_Finalize is left.
    let mut done_at: Option<Instant> = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                if line == "done" {
                    done_at = Some(Instant::now());
                }
                let mut w = line.split_whitespace();
                match (w.next(), w.next(), w.next()) {
                    (Some("bcast"), Some(b), mode) => {
                        let b = b.parse().unwrap_or(0);
                        done += weight(b);
                        if !tty && mode == Some("scouts") {
                            sizes_done += 1;
                            eprintln!(
                                "mpicast: tune: [{sizes_done}/{}] {} measured",
                                o.sizes.len(),
                                tune::size_words(b)
                            );
                        }
                    }
                    (Some("barrier"), _, _) => done += weight(0),
                    _ => {}
                }
                bar.update(done, total);
                stdout.push_str(&line);
                stdout.push('\n');
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Stdout closed: the job is ending.
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if done_at.is_some_and(|t| t.elapsed() >= FINALIZE_GRACE) => break None,
            Ok(None) if start.elapsed() < o.timeout => {}
            Ok(None) => break None,
            Err(e) => return Err(format!("waiting for {}: {e}", l.program)),
        }
    };
    bar.finish();
    let Some(status) = status else {
        run::stop(&mut child);
        if done_at.is_some() {
            // Every figure is in: a launcher whose MPI_Finalize hangs (MPICH's, on the
            // emulated cluster) costs the job's end, not the results.
            eprintln!(
                "mpicast: tune: the job printed its results but had not ended {} s later: \
                 stopped it (a hang in MPI_Finalize)",
                FINALIZE_GRACE.as_secs()
            );
            let _ = reader.join();
            stdout.extend(rx.try_iter().flat_map(|l| [l, "\n".to_string()]));
            return Ok((stdout, err_reader.join().unwrap_or_default()));
        }
        return Err(format!(
            "the job did not end within {} s and was stopped (--timeout SECS)",
            o.timeout.as_secs()
        ));
    };
    let _ = reader.join();
    stdout.extend(rx.try_iter().flat_map(|l| [l, "\n".to_string()]));
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(failed(status, l, &stdout, &stderr));
    }
    Ok((stdout, stderr))
}

/// Why the job `l` failed with `status`: its exit status as the runner means it, the
/// command, and the end of its output.
fn failed(status: std::process::ExitStatus, l: &Launch, stdout: &str, stderr: &str) -> String {
    let what = match status.code() {
        Some(3) => "a broadcast delivered wrong data".to_string(),
        Some(4) => "a mode did not take the path it measures".to_string(),
        Some(c) => format!("exit status {c}"),
        None => "ended by a signal".to_string(),
    };
    format!(
        "the job failed ({what})\n  command: {}{}",
        run::render(l),
        tail(&format!("{stdout}\n{stderr}"), 12)
    )
}

/// The last `n` non-empty lines of `s`, indented, for error messages.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(n);
    lines[from..]
        .iter()
        .map(|l| format!("\n  {l}"))
        .collect::<String>()
}

/// The datagram payload the library chose, from `MPICAST_VERBOSE=1`'s channel line.
fn frag_from(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let rest = l.strip_prefix("mpicast: communicator of ")?;
        let (_, after) = rest.split_once("): ")?;
        after.split_whitespace().next()?.parse().ok()
    })
}

/// The table and the settings, as shell text: comments, then `export` lines.
fn report(m: &Measured, c: &Choice, mpi: Mpi, frag: Option<u64>) -> String {
    let mut s = String::new();
    let hosts = m.hosts.len();
    let _ = writeln!(
        s,
        "# mpicast tune: {} ranks on {} host{}, {}; per size the median of {} repetitions of \
         the slowest rank's time, roots rotating",
        m.ranks,
        hosts,
        if hosts == 1 { "" } else { "s" },
        mpi.title(),
        m.reps
    );
    let _ = writeln!(
        s,
        "# {:>9} {:>11} {:>11} {:>11} {:>7}  (ratio: mpicast as set below / host MPI)",
        "bytes", "host MPI", "eager", "scouts", "ratio"
    );
    for p in &m.points {
        let mc = tune::mcast_at(p, c.eager_bytes);
        let by = match c.min_bytes {
            tune::MinBytes::From(b) if p.bytes >= b => "mpicast",
            _ => "host MPI",
        };
        let _ = writeln!(
            s,
            "# {:>9} {:>11} {:>11} {:>11} {:>7.2}  {}",
            tune::size_words(p.bytes),
            tune::duration(p.host.median),
            tune::duration(p.eager.median),
            tune::duration(p.scouts.median),
            mc.median / p.host.median,
            by
        );
    }
    if let Some((h, b)) = &m.barrier {
        let _ = writeln!(
            s,
            "# barrier: host MPI {}, mpicast {} ({:.2})",
            tune::duration(h.median),
            tune::duration(b.median),
            b.median / h.median
        );
    }
    if let Some(f) = frag {
        let _ = writeln!(s, "# datagram payload in use: {f} B");
    }
    for n in &c.notes {
        let _ = writeln!(s, "# note: {n}");
    }
    for ((name, value), why) in c.settings().iter().zip(&c.why) {
        let _ = writeln!(s, "# {why}");
        let _ = writeln!(s, "export {name}={value}");
    }
    s
}

/// The `-o` file: a header (command, date, hosts), then the report.
fn config_file(args: &[String], m: &Measured, body: &str, date: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# MPICAST_CONFIG file written by `mpicast tune` on {date}"
    );
    let cmd: Vec<String> = args.iter().map(|a| run::shell_word(a)).collect();
    let _ = writeln!(s, "# command: mpicast tune {}", cmd.join(" "));
    let names: Vec<String> = m
        .hosts
        .iter()
        .map(|h| {
            format!(
                "{} ({} rank{})",
                h.name,
                h.ranks,
                if h.ranks == 1 { "" } else { "s" }
            )
        })
        .collect();
    let _ = writeln!(s, "# hosts: {}", names.join(", "));
    if let Ok(v) = std::env::var("MPICAST_IFACE") {
        let _ = writeln!(s, "# measured with MPICAST_IFACE={v}");
    }
    s.push_str(body);
    s
}

const W: f64 = 760.0;
const H: f64 = 470.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 40.0;
const PLOT_W: f64 = 620.0;
const PLOT_H: f64 = 330.0;

/// A grid line and a label at each decade of time from 10^`decades.0` to 10^`decades.1` ns
/// (`y`: where a time goes).
fn time_grid(s: &mut String, decades: (i32, i32), y: impl Fn(f64) -> f64) {
    for d in decades.0..=decades.1 {
        let t = 10f64.powi(d);
        let yy = y(t);
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>",
            svg::num(LEFT),
            svg::num(yy),
            svg::num(LEFT + PLOT_W),
            svg::num(yy)
        );
        svg::text(s, LEFT - 6.0, yy + 4.0, "end", "ax", &svg::duration(t));
    }
}

/// The threshold chosen, `b` bytes: a dashed line across the plot at `xx`, and its setting.
fn threshold_marker(s: &mut String, xx: f64, b: u64) {
    let _ = writeln!(
        s,
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#999\" \
         stroke-dasharray=\"4 3\"/>",
        svg::num(xx),
        svg::num(TOP),
        svg::num(TOP + PLOT_H)
    );
    svg::text(
        s,
        xx + 4.0,
        TOP + 12.0,
        "start",
        "ax",
        &format!("MPICAST_MIN_BYTES={}", tune::size(b)),
    );
}

/// Time against size, both logarithmic: the host MPI, eager and scouts, and the threshold.
fn plot(m: &Measured, c: &Choice, title: &str) -> String {
    let pts = &m.points;
    let (b0, b1) = (
        pts.first().map_or(1, |p| p.bytes) as f64,
        pts.last().map_or(2, |p| p.bytes) as f64,
    );
    let (x0, x1) = (b0.log2(), b1.log2().max(b0.log2() + 1.0));
    let all = pts
        .iter()
        .flat_map(|p| [p.host.median, p.eager.median, p.scouts.median])
        .filter(|t| *t > 0.0);
    let (lo, hi) = all.fold((f64::MAX, 0f64), |(a, b), t| (a.min(t), b.max(t)));
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 10.0) };
    let y0 = lo.log10().floor();
    let y1 = hi.log10().ceil().max(y0 + 1.0);
    let x = |b: f64| LEFT + (b.max(1.0).log2() - x0) / (x1 - x0) * PLOT_W;
    let y = |t: f64| TOP + PLOT_H - (t.max(1.0).log10() - y0) / (y1 - y0) * PLOT_H;
    let mut s = svg::open(W, H);
    s.push_str("<style>.t{font-size:13px;font-weight:bold}.ax{fill:#333}.key{fill:#333}</style>\n");
    svg::text(&mut s, W / 2.0, 22.0, "middle", "t", title);
    // Axes and grid: decades of time, each measured size.
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
        svg::num(LEFT),
        svg::num(TOP),
        svg::num(PLOT_W),
        svg::num(PLOT_H)
    );
    time_grid(&mut s, (y0 as i32, y1 as i32), y);
    let step = pts.len().div_ceil(9).max(1);
    for p in pts.iter().step_by(step) {
        let xx = x(p.bytes as f64);
        svg::text(
            &mut s,
            xx,
            TOP + PLOT_H + 16.0,
            "middle",
            "ax",
            &tune::size_words(p.bytes),
        );
    }
    svg::text(
        &mut s,
        LEFT + PLOT_W / 2.0,
        TOP + PLOT_H + 36.0,
        "middle",
        "ax",
        "broadcast size (log scale)",
    );
    let _ = writeln!(
        s,
        "<text class=\"ax\" x=\"18\" y=\"{0}\" text-anchor=\"middle\" \
         transform=\"rotate(-90 18 {0})\">median time of the slowest rank (log scale)</text>",
        svg::num(TOP + PLOT_H / 2.0)
    );
    if let tune::MinBytes::From(b) = c.min_bytes {
        threshold_marker(&mut s, x(b as f64), b);
    }
    /// A curve: its colour, its label, and its median at a point.
    type Series = (&'static str, &'static str, fn(&tune::Point) -> f64);
    let series: [Series; 3] = [
        ("#d62728", "host MPI (PMPI_Bcast)", |p| p.host.median),
        ("#1f77b4", "mpicast, eager", |p| p.eager.median),
        ("#2ca02c", "mpicast, scouts", |p| p.scouts.median),
    ];
    for (colour, _, f) in &series {
        let path: Vec<String> = pts
            .iter()
            .map(|p| format!("{},{}", svg::num(x(p.bytes as f64)), svg::num(y(f(p)))))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
    }
    let keys: Vec<svg::Key> = series
        .iter()
        .map(|(colour, label, _)| svg::Key {
            colour,
            line: true,
            label: label.to_string(),
        })
        .collect();
    svg::legend(&mut s, LEFT + 10.0, TOP + 10.0, &keys, 3, 200.0);
    svg::close(&mut s);
    s
}

pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    if args.is_empty() {
        return Err(Fail::UsageText(USAGE));
    }
    let o = tune_opts(args)?;
    let var = |v: &str| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned());
    if (o.hostfile.is_some() || o.hosts.is_some()) && var("MPICAST_IFACE").is_none() {
        // Loopback multicast never leaves a host: the figures would be the host MPI's alone.
        return Err(usage(
            "--hostfile/--host without MPICAST_IFACE would multicast on each host's loopback: \
             set MPICAST_IFACE to the network the hosts share",
        ));
    }
    if let Some(from) = &o.from {
        let text = std::fs::read_to_string(from).map_err(|e| Fail::Io(format!("{from}: {e}")))?;
        let m = tune::parse_runner(&text).map_err(|e| Fail::Io(format!("{from}: {e}")))?;
        return finish(args, &o, &m, None);
    }
    let runner = run::find_named_runner(
        RUNNER,
        "MPICAST_TUNE_RUNNER",
        "make tune-tools",
        std::env::var_os("MPICAST_TUNE_RUNNER"),
        std::env::current_exe().ok(),
        Path::new(""),
        o.mpi,
    )
    .map_err(Fail::Io)?;
    let mut l = launch_of(&o, &runner, &var);
    let note = run::loopback_note(&l);
    if var("MPICAST_VERBOSE").is_none() {
        // The channel's line says which datagram size the library chose.
        l.env.push(("MPICAST_VERBOSE".into(), "1".into()));
    }
    if o.dry_run {
        println!("{}", run::render(&l));
        return Ok(());
    }
    // The files come after the measurement: find out now that they can be written.
    for path in [&o.out, &o.svg, &o.raw].into_iter().flatten() {
        crate::limits::check_writable(path).map_err(Fail::Io)?;
    }
    if let Some(note) = note {
        eprintln!("mpicast: {note}");
    }
    let (stdout, stderr) = run_streamed(&l, &o).map_err(Fail::Io)?;
    if let Some(path) = &o.raw {
        std::fs::write(path, &stdout).map_err(|e| Fail::Io(format!("{path}: {e}")))?;
    }
    let m = tune::parse_runner(&stdout).map_err(|e| {
        Fail::Io(format!(
            "{e}\n  command: {}{}",
            run::render(&l),
            tail(&stdout, 6)
        ))
    })?;
    finish(args, &o, &m, frag_from(&stderr))
}

/// The report on stdout, and the files asked for.
fn finish(args: &[String], o: &TuneOpts, m: &Measured, frag: Option<u64>) -> Result<(), Fail> {
    let c = tune::choose(m);
    let body = report(m, &c, o.mpi, frag);
    print!("{body}");
    let date = crate::sim_calibrate::utc_now();
    if let Some(path) = &o.out {
        std::fs::write(path, config_file(args, m, &body, &date))
            .map_err(|e| Fail::Io(format!("{path}: {e}")))?;
        eprintln!("mpicast: tune: wrote {path} (load it with MPICAST_CONFIG={path})");
    }
    if let Some(path) = &o.svg {
        let title = format!(
            "MPI_Bcast, {} ranks on {} hosts, {} ({date})",
            m.ranks,
            m.hosts.len(),
            o.mpi.title()
        );
        std::fs::write(path, plot(m, &c, &title)).map_err(|e| Fail::Io(format!("{path}: {e}")))?;
        eprintln!("mpicast: tune: wrote {path}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn ok(s: &str) -> TuneOpts {
        match tune_opts(&args(s)) {
            Ok(o) => o,
            Err(_) => panic!("`{s}` was refused"),
        }
    }

    fn err(s: &str) -> String {
        match tune_opts(&args(s)) {
            Err(Fail::UsageLine(m)) => m,
            Ok(o) => panic!("`{s}` was accepted: {o:?}"),
            Err(_) => panic!("`{s}`: another error"),
        }
    }

    #[test]
    fn options_and_their_errors() {
        let o = ok("-n 4");
        assert_eq!(o.sizes.first(), Some(&64));
        assert_eq!(o.sizes.last(), Some(&(4 << 20)));
        assert_eq!(o.sizes.len(), 17);
        assert_eq!((o.reps, o.warmup, o.mpi), (11, 2, Mpi::OpenMpi));
        let o = ok("-n 3 --mpi mpich --sizes 4k,64,1MiB,64 --reps 3 -o f");
        assert_eq!(o.sizes, [64, 4096, 1 << 20]);
        assert_eq!(
            (o.mpi, o.reps, o.out.as_deref()),
            (Mpi::Mpich, 3, Some("f"))
        );
        assert!(err("--reps 3").contains("needs -n N"));
        assert!(err("-n 1").contains("at least 2 ranks"));
        assert!(err("-n 4 --sizes 64").contains("at least two"));
        assert!(err("-n 4 --sizes 64,4q").contains("`4q` is not a size"));
        assert!(err("-n 4 --sizes 0,64").contains("not in 1..="));
        assert!(err("-n 4 --sizes 64,4g").contains("not in 1..="));
        assert!(err("-n 4 --reps 0").contains("--reps wants 1 to"));
        assert!(err("-n 4 --mpi lam").contains("openmpi or mpich, not `lam`"));
        assert!(err("-n 4 --frob").contains("unknown option `--frob`"));
        assert!(err("-n 4 stray").contains("unknown argument `stray`"));
        assert!(err("-n 4 --svg").contains("--svg needs a value"));
        assert!(err("--from f -n 3").contains("--from launches nothing"));
        assert_eq!(ok("--from f -o x").from.as_deref(), Some("f"));
    }

    #[test]
    fn launch_forwards_the_sizes_and_the_hosts() {
        let o = ok("-n 6 --sizes 64,1k --reps 5 --hostfile hf");
        let set = |v: &str| (v == "MPICAST_IFACE").then(|| "10.9.0.0/24".to_string());
        let l = launch_of(&o, Path::new("/r/mpicast-tune-run"), &set);
        let line = run::render(&l);
        // (Open MPI is also told to forward the process's MPICAST_* variables with -x.)
        assert!(
            line.contains(" --mca mpi_yield_when_idle 1 --hostfile hf "),
            "{line}"
        );
        assert!(
            line.ends_with(
                "/r/mpicast-tune-run --sizes 64,1024 --reps 5 --warmup 2 --rcvbuf 8388608"
            ),
            "{line}"
        );
        assert!(!line.contains("MPICAST_IFACE=lo"), "{line}");
        // Without an interface: loopback, and MPICH spells the hostfile -f.
        let o = ok("-n 3 --mpi mpich --hostfile hf");
        let l = launch_of(&o, Path::new("/r/x"), &|_| None);
        let line = run::render(&l);
        assert!(line.starts_with("MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat"));
        assert!(
            line.contains("mpiexec.mpich -n 3 -f hf /r/x --sizes 64,128,"),
            "{line}"
        );
    }

    fn measured() -> Measured {
        tune::parse_runner(
            "tune-run 1 ranks=3 hosts=1 reps=3 warmup=1 sizes=2 rcvbuf=8388608\n\
             host vm ranks=3 rmem_max=4194304 granted=16777216\n\
             bcast 1024 host 10000 10000 10000\n\
             bcast 1024 eager 20000 20000 20000\n\
             bcast 1024 scouts 30000 30000 30000\n\
             bcast 4096 host 50000 50000 50000\n\
             bcast 4096 eager 20000 20000 20000\n\
             bcast 4096 scouts 30000 30000 30000\n\
             barrier host 9000 9000 9000\n\
             barrier mcast 6000 6000 6000\n\
             traffic dgrams_sent=100 repairs=0\n\
             done\n",
        )
        .unwrap()
    }

    #[test]
    fn the_report_is_a_shell_script_and_a_config_file() {
        let m = measured();
        let c = tune::choose(&m);
        let r = report(&m, &c, Mpi::OpenMpi, Some(1408));
        // Every line is a comment or an export: the library's file parser and sh take it.
        for line in r.lines() {
            assert!(
                line.starts_with("# ") || line.starts_with("export MPICAST_"),
                "{line}"
            );
        }
        assert!(r.contains("export MPICAST_MIN_BYTES=4KiB\n"), "{r}");
        assert!(r.contains("export MPICAST_EAGER_BYTES=1MiB\n"), "{r}");
        assert!(r.contains("export MPICAST_FRAG_BYTES=auto\n"), "{r}");
        assert!(r.contains("export MPICAST_RCVBUF=8MiB\n"), "{r}");
        assert!(r.contains("#     1 KiB     10.0 µs     20.0 µs     30.0 µs    2.00  host MPI"));
        assert!(r.contains("#     4 KiB     50.0 µs     20.0 µs     30.0 µs    0.40  mpicast"));
        assert!(r.contains("# barrier: host MPI 9.0 µs, mpicast 6.0 µs (0.67)"));
        assert!(r.contains("# datagram payload in use: 1408 B"));
        let f = config_file(
            &args("-n 3 --sizes 1k,4k"),
            &m,
            &r,
            "2026-11-26 20:00:00 UTC",
        );
        assert!(f.starts_with("# MPICAST_CONFIG file written by `mpicast tune` on 2026-11-26"));
        assert!(f.contains("# command: mpicast tune -n 3 --sizes 1k,4k\n"));
        assert!(f.contains("# hosts: vm (3 ranks)\n"));
    }

    #[test]
    fn the_datagram_size_from_the_verbose_line() {
        let e = "mpicast: communicator of 3 ranks on 239.255.1.2:23430 via lo (127.0.0.1): \
                 65443 B per datagram, window 120 datagrams\n";
        assert_eq!(frag_from(e), Some(65443));
        assert_eq!(frag_from("mpicast: something else\n"), None);
    }

    #[test]
    fn the_plot_has_three_curves_and_the_threshold() {
        let m = measured();
        let c = tune::choose(&m);
        let s = plot(&m, &c, "t <1>");
        assert_eq!(s.matches("<polyline").count(), 3);
        assert!(s.contains("MPICAST_MIN_BYTES=4KiB"));
        assert!(s.contains("t &lt;1&gt;"));
        assert!(s.contains(">mpicast, scouts</text>"));
        assert!(s.trim_end().ends_with("</svg>"));
    }
}
