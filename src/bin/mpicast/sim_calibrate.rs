//! `mpicast sim calibrate`: measures ping-pongs with the GOAL runner (through the same launch
//! as `mpicast goal run`), fits the simulator's parameters to them (`sim::calibrate`) and
//! writes a file that `mpicast sim --params` reads. This file owns the options, the runs and
//! the output; what to run and what the times mean is the library's.

use crate::run::{self, Launch, Mpi, RunSpec};
use crate::sim::calibrate::{self, Channel, Fit, Measured, Probe};
use crate::sim::{simulate, Options, Params};
use crate::Fail;
use std::fmt::Write as _;
use std::io::{IsTerminal, Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `mpicast sim calibrate --help`.
pub const USAGE: &str = "\
usage: mpicast sim calibrate -n N [--mpi openmpi|mpich] [--sizes LIST] [--reps R] [--passes P]
                             [--stat median|min] [--retries K] [--out FILE] [--no-mcast]
                             [--timeout SECS] [--dir DIR] [--dry-run] [--hostfile H]
                             [--host LIST] [--launcher-arg ARG]...

Fits the simulator's parameters to this machine: runs ping-pong programs on N ranks with
mpicast-goal-run (found as `mpicast goal run` finds it), fits L o g G O to their round-trip
times after netgauge's method (docs/sim.md, Calibration), the multicast channel's mL mo mg mG
the same way, prints the fitted values and each measurement against the fitted model, and
writes them as a `--params` file for `mpicast sim`.

Per size s and channel (point-to-point, then multicast): PRTT(1,0,s), one message and its
reply; PRTT(10,0,s), ten back to back; then PRTT(10,d,s), ten with d ns of computation
between them (d from the first two). Each is one launch of R runs, made P times (all
probes, then all again); a probe's time is the median of R runs of its least disturbed
launch (the fastest of the launches' medians; with --stat min, of their fastest runs).

options:
  -n N              ranks (at least 2; ranks 0 and 1 ping-pong, the others receive the
                    multicasts)
  --mpi M           openmpi (default, mpirun.openmpi) or mpich (mpiexec.mpich)
  --sizes LIST      message sizes in bytes, comma-separated, at least two, 1 to 65535
                    (default 1,256,1024,4096,16384)
  --reps R          runs per launch (default 31)
  --passes P        launches per measurement, interleaved (default 3)
  --stat S          what stands for a launch: the median of its runs (default), or min, the
                    fastest, steadier on a machine that other work keeps busy
  --retries K       a size whose measurements contradict each other (a busy machine) is
                    measured again (P more launches of its probes), at most K times in all
                    (default 3), before giving up
  --out FILE        the parameter file to write (default mpicast-sim.params)
  --no-mcast        point-to-point only (the multicast parameters are not written)
  --timeout SECS    end a launch that takes longer (default 120)
  --dir DIR         where to write the programs (every rank must read them there; default
                    a fresh directory under the system's temporary directory, removed after)
  --dry-run         print the first round's launches, run nothing
  --hostfile H      passed to the launcher (mpich: -f H)
  --host LIST       passed to the launcher (mpich: -hosts LIST)
  --launcher-arg A  one more argument for the launcher, before the runner (repeatable)

As with `mpicast goal run`: without MPICAST_IFACE the ranks run on this host's loopback
(MPICAST_IFACE=lo MPICAST_TTL=0 MPICAST_TOPO=flat); with --hostfile or --host and the
multicast measured, set MPICAST_IFACE to the interface that joins the hosts.

Exit status: 0 fine, 1 errors (no runner, a launch failed, a fit that the measurements
contradict), 2 bad usage.";

const HELP: &str = "mpicast sim calibrate --help";
const DEFAULT_SIZES: [u64; 5] = [1, 256, 1024, 4096, 16384];
const DEFAULT_REPS: u64 = 31;
const DEFAULT_PASSES: usize = 3;
const DEFAULT_RETRIES: usize = 3;
const DEFAULT_OUT: &str = "mpicast-sim.params";
const DEFAULT_TIMEOUT: u64 = 120;

fn usage(m: impl Into<String>) -> Fail {
    Fail::UsageLine(format!("{} (see `{HELP}`)", m.into()))
}

#[derive(Debug)]
struct CalOpts {
    ranks: u32,
    mpi: Mpi,
    sizes: Vec<u64>,
    reps: u64,
    stat: Stat,
    passes: usize,
    retries: usize,
    out: String,
    mcast: bool,
    timeout: Duration,
    dir: Option<PathBuf>,
    dry_run: bool,
    hostfile: Option<String>,
    hosts: Option<String>,
    launcher_args: Vec<String>,
}

fn number<T: crate::limits::Int>(flag: &str, v: &str) -> Result<T, Fail> {
    crate::limits::parse_int(flag, v).map_err(usage)
}

fn parse_sizes(v: &str) -> Result<Vec<u64>, Fail> {
    let mut sizes = Vec::new();
    for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let s: u64 = number("--sizes", w)?;
        if !(1..=calibrate::MAX_SIZE).contains(&s) {
            return Err(usage(format!(
                "--sizes: {s} is not in 1..={} (the model's eager limit S; the fit describes \
                 eager messages only)",
                calibrate::MAX_SIZE
            )));
        }
        sizes.push(s);
    }
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        return Err(usage(
            "--sizes needs at least two different sizes (the per-byte costs are slopes)",
        ));
    }
    Ok(sizes)
}

fn cal_opts(args: &[String]) -> Result<CalOpts, Fail> {
    let mut o = CalOpts {
        ranks: 0,
        mpi: Mpi::OpenMpi,
        sizes: DEFAULT_SIZES.to_vec(),
        reps: DEFAULT_REPS,
        stat: Stat::Median,
        passes: DEFAULT_PASSES,
        retries: DEFAULT_RETRIES,
        out: DEFAULT_OUT.to_string(),
        mcast: true,
        timeout: Duration::from_secs(DEFAULT_TIMEOUT),
        dir: None,
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
            "--passes" => {
                o.passes = number(a, &value(a)?)?;
                if !(1..=100).contains(&o.passes) {
                    return Err(usage("--passes wants 1 to 100"));
                }
            }
            "--retries" => {
                o.retries = number(a, &value(a)?)?;
                if o.retries > 100 {
                    return Err(usage("--retries wants 0 to 100"));
                }
            }
            "--stat" => {
                o.stat = match value(a)?.as_str() {
                    "median" => Stat::Median,
                    "min" => Stat::Min,
                    v => return Err(usage(format!("--stat wants median or min, not `{v}`"))),
                }
            }
            "--out" | "-o" => o.out = value(a)?,
            "--no-mcast" => o.mcast = false,
            "--timeout" => {
                let s: u64 = number(a, &value(a)?)?;
                if s == 0 {
                    return Err(usage("--timeout wants at least 1 second"));
                }
                o.timeout = Duration::from_secs(s);
            }
            "--dir" => o.dir = Some(PathBuf::from(value(a)?)),
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
    o.ranks = ranks.ok_or_else(|| usage("calibrate needs -n N (the number of ranks)"))?;
    if o.ranks < 2 {
        return Err(usage("-n wants at least 2 ranks (a ping-pong)"));
    }
    Ok(o)
}

/// The options of the launcher itself, in its own spelling.
fn launcher_options(o: &CalOpts) -> Vec<String> {
    run::launcher_options(
        o.mpi,
        o.hostfile.as_deref(),
        o.hosts.as_deref(),
        &o.launcher_args,
    )
}

/// What one launch printed that calibration uses.
#[derive(Clone, Debug, Default, PartialEq)]
struct RunnerOutput {
    /// The median (or the only) run's time, in ns.
    median_ns: Option<f64>,
    /// The fastest run's time, in ns.
    min_ns: Option<f64>,
    /// Rank 0's `MPICAST_STATS` counters: datagrams sent, repairs among them.
    dgrams_sent: Option<u64>,
    repairs: Option<u64>,
    /// From `MPICAST_VERBOSE`'s line for the multicast channel: interface and address, and
    /// payload bytes per datagram.
    channel: Option<(String, u64)>,
}

impl RunnerOutput {
    fn time(&self, stat: Stat) -> Option<f64> {
        match stat {
            Stat::Median => self.median_ns,
            Stat::Min => self.min_ns,
        }
    }
}

/// Which of a launch's run times stands for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stat {
    Median,
    Min,
}

impl Stat {
    fn name(self) -> &'static str {
        match self {
            Stat::Median => "median",
            Stat::Min => "min",
        }
    }
}

/// Reads the runner's stdout (`summary: R runs, median X s, ...`, or `run 1/1: X s ...` for
/// one run) and the library's stderr lines.
fn parse_output(stdout: &str, stderr: &str) -> RunnerOutput {
    let secs = |w: Option<&str>| w.and_then(|w| w.parse::<f64>().ok()).map(|s| s * 1e9);
    let mut out = RunnerOutput::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("summary: ") {
            let mut words = rest.split_whitespace();
            if let Some(i) = rest.split_whitespace().position(|w| w == "median") {
                out.median_ns = secs(words.nth(i + 1));
            }
            let mut words = rest.split_whitespace();
            if let Some(i) = rest.split_whitespace().position(|w| w == "min") {
                out.min_ns = secs(words.nth(i + 1));
            }
        } else if out.median_ns.is_none() && line.starts_with("run 1/1: ") {
            out.median_ns = secs(line.split_whitespace().nth(2));
            out.min_ns = out.median_ns;
        }
    }
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("mpicast: stats: rank=0 ") {
            for w in rest.split_whitespace() {
                match w.split_once('=') {
                    Some(("dgrams_sent", v)) => out.dgrams_sent = v.parse().ok(),
                    Some(("repairs", v)) => out.repairs = v.parse().ok(),
                    _ => {}
                }
            }
        } else if let Some(rest) = line.strip_prefix("mpicast: communicator of ") {
            // `N ranks on GROUP:PORT via IFACE (ADDR): F B per datagram, window W datagrams`
            let via = rest.split_once(" via ").map(|(_, v)| v);
            let iface = via
                .and_then(|v| v.split_once("): "))
                .map(|(i, _)| format!("{i})"));
            let frag = via
                .and_then(|v| v.split_once("): "))
                .and_then(|(_, f)| f.split_whitespace().next())
                .and_then(|f| f.parse().ok());
            if let (Some(i), Some(f)) = (iface, frag) {
                out.channel = Some((i, f));
            }
        }
    }
    out
}

/// A launch that ran to its end.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `l` with its output captured; ends it (SIGTERM, then SIGKILL) after `limit`.
fn run_captured(l: &Launch, limit: Duration) -> Result<Finished, String> {
    let mut child = run::spawn(l, Stdio::piped())?;
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("piped")));
    let err = reader(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => break None,
            Err(e) => return Err(format!("waiting for {}: {e}", l.program)),
        }
    };
    let Some(status) = status else {
        run::stop(&mut child);
        return Err(format!(
            "the launch did not end within {} s and was stopped (--timeout SECS)",
            limit.as_secs()
        ));
    };
    Ok(Finished {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// The last `n` lines of `s`, indented, for error messages.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(n);
    lines[from..]
        .iter()
        .map(|l| format!("\n  {l}"))
        .collect::<String>()
}

/// The progress line on stderr: rewritten in place on a terminal, one line each otherwise.
struct Progress {
    tty: bool,
    total: usize,
    done: usize,
}

impl Progress {
    fn show(&mut self, what: &str) {
        if self.tty {
            eprint!(
                "\r\x1b[Kmpicast: calibrate: [{}/{}] {what}",
                self.done + 1,
                self.total
            );
            let _ = std::io::stderr().flush();
        }
    }

    fn done(&mut self, what: &str, ns: f64) {
        self.done += 1;
        if !self.tty {
            eprintln!(
                "mpicast: calibrate: [{}/{}] {what}: {:.3} us",
                self.done,
                self.total,
                ns / 1e3
            );
        }
    }

    fn finish(&self) {
        if self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// A directory of programs that removes itself unless the user named it.
struct Workdir {
    path: PathBuf,
    remove: bool,
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// What all runs share.
struct Runs<'a> {
    o: &'a CalOpts,
    runner: PathBuf,
    dir: PathBuf,
    extra: Vec<String>,
    root: bool,
}

impl Runs<'_> {
    fn launch_of(&self, p: &Probe) -> (Launch, String) {
        let file = self.dir.join(p.file_name()).to_string_lossy().into_owned();
        let buffers = [("buf".to_string(), p.buffer_len())];
        let spec = RunSpec {
            mpi: self.o.mpi,
            ranks: self.o.ranks,
            runner: &self.runner,
            file: &file,
            buffers: &buffers,
            reps: Some(self.o.reps),
            check: false,
            expect: None,
        };
        let mut l = run::launch(
            &spec,
            &|v| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned()),
            self.root,
        );
        if p.channel == Channel::Mcast {
            // The root's datagram counters and the channel's interface and datagram size.
            l.env.push(("MPICAST_STATS".into(), "1".into()));
            l.env.push(("MPICAST_VERBOSE".into(), "1".into()));
        }
        (
            run::with_launcher_options(l, &self.runner, &self.extra, self.o.mpi),
            file,
        )
    }

    fn measure(&self, p: &Probe, progress: &mut Progress) -> Result<RunnerOutput, Fail> {
        let (l, file) = self.launch_of(p);
        let text = crate::goal::print::to_paper(&p.program(self.o.ranks));
        std::fs::write(&file, text).map_err(|e| Fail::Io(format!("{file}: {e}")))?;
        progress.show(&p.to_string());
        let fin = run_captured(&l, self.o.timeout).map_err(|m| {
            progress.finish();
            Fail::Io(format!("{p}: {m}\n  command: {}", run::render(&l)))
        })?;
        if fin.code != Some(0) {
            progress.finish();
            let status = fin.code.map_or("ended by a signal".to_string(), |c| {
                format!("exit status {c}")
            });
            return Err(Fail::Io(format!(
                "{p}: the launch failed ({status})\n  command: {}{}",
                run::render(&l),
                tail(&format!("{}\n{}", fin.stdout, fin.stderr), 12)
            )));
        }
        let out = parse_output(&fin.stdout, &fin.stderr);
        let Some(ns) = out.time(self.o.stat) else {
            progress.finish();
            return Err(Fail::Io(format!(
                "{p}: the runner printed no time\n  command: {}{}",
                run::render(&l),
                tail(&fin.stdout, 6)
            )));
        };
        progress.done(&p.to_string(), ns);
        Ok(out)
    }
}

/// The launches so far: per probe, each launch's time (its median, or with --stat min its
/// fastest run).
struct Measurements<'a> {
    runs: &'a Runs<'a>,
    progress: Progress,
    facts: McastFacts,
    probes: Vec<Probe>,
    times: Vec<Vec<f64>>,
}

impl Measurements<'_> {
    /// One more launch of `p`.
    fn measure(&mut self, p: &Probe) -> Result<(), Fail> {
        let out = self.runs.measure(p, &mut self.progress)?;
        if p.channel == Channel::Mcast {
            if let (Some(s), Some(r)) = (out.dgrams_sent, out.repairs) {
                self.facts.sent += s;
                self.facts.repairs += r;
                self.facts.counted = true;
            }
            if out.channel.is_some() {
                self.facts.channel = out.channel.clone();
            }
        }
        let t = out.time(self.runs.o.stat).unwrap_or(f64::NAN);
        match self.probes.iter().position(|q| q == p) {
            Some(i) => self.times[i].push(t),
            None => {
                self.probes.push(*p);
                self.times.push(vec![t]);
            }
        }
        Ok(())
    }

    /// `passes` launches of every probe of `probes`, pass after pass.
    fn measure_all(&mut self, probes: &[Probe], passes: usize) -> Result<(), Fail> {
        for _ in 0..passes {
            for p in probes {
                self.measure(p)?;
            }
        }
        Ok(())
    }

    /// Each probe's time: that of its least disturbed launch (the fastest of its launches'
    /// medians). Other work on the machine slows whole launches, by a factor of several on a
    /// busy one, and never speeds one up.
    fn times(&self) -> Vec<Measured> {
        self.probes
            .iter()
            .zip(&self.times)
            .map(|(p, t)| Measured {
                probe: *p,
                ns: least(t),
            })
            .collect()
    }

    /// `passes` more launches of the single message and the burst of `channel` at `size`
    /// (and of the point-to-point single whose way back a multicast probe uses), then of the
    /// delayed burst: the same one if its delay still fits the new medians, else a new one in
    /// place of the old.
    fn again(&mut self, channel: Channel, size: u64, passes: usize) -> Result<(), Fail> {
        let mut redo = vec![Probe::single(channel, size), Probe::burst(channel, size)];
        if channel == Channel::Mcast {
            redo.push(Probe::single(Channel::P2p, size));
        }
        self.progress.total += passes * redo.len();
        self.measure_all(&redo, passes)?;
        let fresh = calibrate::second_round(&self.times());
        let Some(new) = fresh
            .into_iter()
            .find(|p| (p.channel, p.size) == (channel, size))
        else {
            return Ok(());
        };
        let old = self
            .probes
            .iter()
            .position(|p| (p.channel, p.size) == (channel, size) && p.n > 1 && p.delay > 0);
        match old {
            Some(i) if self.probes[i].delay.abs_diff(new.delay) * 5 <= new.delay => {
                let p = self.probes[i];
                self.progress.total += passes;
                self.measure_all(&[p], passes)
            }
            _ => {
                if let Some(i) = old {
                    self.probes.remove(i);
                    self.times.remove(i);
                }
                self.progress.total += passes;
                self.measure_all(&[new], passes)
            }
        }
    }
}

/// The smallest number of `v` (NaN if it has none).
fn least(v: &[f64]) -> f64 {
    v.iter()
        .copied()
        .filter(|t| !t.is_nan())
        .min_by(f64::total_cmp)
        .unwrap_or(f64::NAN)
}

/// Days since 1970-01-01 as a civil (proleptic Gregorian) date.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "this host".into())
}

/// The hosts of the job, in words.
fn hosts_text(o: &CalOpts) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &o.hostfile {
        match std::fs::read_to_string(f)
            .map_err(|e| e.to_string())
            .and_then(|t| crate::topo::parse_hostfile(&t, f))
        {
            Ok(h) => parts.push(format!(
                "{} (hostfile {f})",
                h.iter()
                    .map(|h| h.host.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Err(_) => parts.push(format!("hostfile {f}")),
        }
    }
    if let Some(h) = &o.hosts {
        parts.push(h.replace(',', ", "));
    }
    if parts.is_empty() {
        format!("{} (this host only)", hostname())
    } else {
        parts.join("; ")
    }
}

/// What the measurements say beyond the fit: the multicast channel's interface and datagram
/// size, and the loss the root's counters suggest.
#[derive(Default)]
struct McastFacts {
    channel: Option<(String, u64)>,
    sent: u64,
    repairs: u64,
    counted: bool,
}

/// The notes of the report: the closed forms', the fit's, what the library said of its
/// multicast channel and datagrams, and the simulator's (`sim_notes`).
fn all_notes(o: &CalOpts, fit: &Fit, facts: &McastFacts, sim_notes: &[String]) -> Vec<String> {
    let mut notes: Vec<String> = fit
        .p2p
        .notes
        .iter()
        .map(|n| format!("p2p closed form, {n}"))
        .collect();
    if let Some(m) = &fit.mcast {
        notes.extend(m.notes.iter().map(|n| format!("mcast closed form, {n}")));
    }
    notes.extend(fit.notes.iter().cloned());
    if o.mcast {
        match &facts.channel {
            Some((iface, frag)) => notes.push(format!(
                "mcast: multicast over {iface}, {frag} B per datagram (mF {frag})"
            )),
            None => notes.push(
                "mcast: the library reported no multicast channel: the multicasts went point \
                 to point (MPICAST_TOPO, or multicast unavailable), and mL mo mg mG describe \
                 that"
                    .into(),
            ),
        }
        if facts.counted {
            notes.push(format!(
                "mcast mloss: rank 0 sent {} datagrams, {} of them repairs (an upper bound of \
                 the loss: a late acknowledgement also causes a repeat)",
                facts.sent, facts.repairs
            ));
        } else {
            notes.push("mcast mloss: no datagram counters from rank 0; mloss left at 0".into());
        }
    }
    notes.extend(sim_notes.iter().cloned());
    notes
}

/// The printed report: the fitted values, the notes, each point against the model.
fn report(o: &CalOpts, fit: &Fit, facts: &McastFacts, sim_notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mpicast sim calibrate: {} ranks, {}, sizes {} bytes, bursts of {}, {} x {} runs each \
         (the fastest launch's {})",
        o.ranks,
        o.mpi.title(),
        o.sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" "),
        calibrate::BURST,
        o.passes,
        o.reps,
        o.stat.name()
    );
    let _ = writeln!(
        s,
        "closed-form fit (ns; G and O in ns per byte)  ->  polished over all points, as written:"
    );
    let p = &fit.params;
    let c = &fit.p2p;
    let _ = writeln!(
        s,
        "  p2p:   L={:.1} o={:.1} g={:.1}{} G={:.4} O={:.4}  ->  L {} o {} g {} G {} O {}",
        c.latency,
        c.overhead,
        c.gap,
        if c.gap_hidden { " (hidden)" } else { "" },
        c.gap_per_byte,
        c.overhead_per_byte,
        p.latency,
        p.overhead,
        p.gap,
        p.gap_per_byte,
        p.overhead_per_byte
    );
    if let Some(m) = &fit.mcast {
        let _ = writeln!(
            s,
            "  mcast: mL={:.1} mo={:.1} mg={:.1}{} mG={:.4}  ->  mL {} mo {} mg {} mG {}",
            m.latency,
            m.overhead,
            m.gap,
            if m.gap_hidden { " (hidden)" } else { "" },
            m.gap_per_byte,
            p.mcast_l(),
            p.mcast_o(),
            p.mcast_g(),
            p.mcast_gb()
        );
        let _ = writeln!(
            s,
            "         mF {} mloss {} mnack {} (the default: not measured)",
            p.mcast_frag,
            p.mcast_loss_ppm as f64 / 1e6,
            p.mcast_nack
        );
    }
    let notes = all_notes(o, fit, facts, sim_notes);
    if !notes.is_empty() {
        let _ = writeln!(s, "notes:");
        for n in &notes {
            let _ = writeln!(s, "  {n}");
        }
    }
    let _ = writeln!(s, "measured times against the fitted model:");
    let _ = writeln!(
        s,
        "  {:<28} {:>14} {:>14} {:>9}",
        "probe", "measured ns", "model ns", "residual"
    );
    for r in &fit.residuals {
        let _ = writeln!(
            s,
            "  {:<28} {:>14.0} {:>14} {:>+8.1}%",
            r.probe.to_string(),
            r.measured,
            r.fitted,
            100.0 * r.relative()
        );
    }
    let worst = worst_residual(fit);
    let _ = writeln!(
        s,
        "largest residual: {:.1}% over {} points",
        100.0 * worst,
        fit.residuals.len()
    );
    s
}

/// The parameter file: a comment header, then the parameters.
fn params_file(o: &CalOpts, fit: &Fit, facts: &McastFacts, command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# mpicast sim parameters, fitted by mpicast sim calibrate"
    );
    let _ = writeln!(s, "# date: {}", utc_now());
    let _ = writeln!(s, "# command: {command}");
    let _ = writeln!(
        s,
        "# MPI: {} ({} ranks); hosts: {}",
        o.mpi.title(),
        o.ranks,
        hosts_text(o)
    );
    if o.mcast {
        let _ = writeln!(
            s,
            "# multicast: {}",
            facts.channel.as_ref().map_or(
                "no channel reported (point to point instead)".to_string(),
                |(i, f)| format!("{i}, {f} B per datagram")
            )
        );
    }
    let _ = writeln!(
        s,
        "# sizes {} bytes; bursts of {}; the fastest of {} launches' {} of {} runs; S and mnack \
         are not measured",
        o.sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        calibrate::BURST,
        o.passes,
        o.stat.name(),
        o.reps
    );
    let worst = worst_residual(fit);
    let _ = writeln!(
        s,
        "# largest residual {:.1}% over {} measured points (mpicast sim calibrate prints them)",
        100.0 * worst,
        fit.residuals.len()
    );
    let mut prm = fit.params;
    if !o.mcast {
        // Not measured: leave the multicast channel at "as point-to-point".
        let d = Params::default();
        prm.mcast_frag = d.mcast_frag;
        prm.mcast_loss_ppm = d.mcast_loss_ppm;
    }
    s += &prm.as_file();
    s
}

/// The fit of the measurements of `m`, measuring a probe again where they do not fit the model
/// (up to `o.retries` times), with the multicast channel's datagram size and loss from what
/// the library said (its facts, returned too).
fn fitted(mut m: Measurements<'_>, o: &CalOpts) -> Result<(Fit, McastFacts), Fail> {
    let mut retried = 0;
    let mut fit = loop {
        match calibrate::fit(&m.times(), &Params::default()) {
            Ok(f) => break f,
            Err(calibrate::FitError::Inconsistent { probe, why }) if retried < o.retries => {
                retried += 1;
                m.progress.finish();
                eprintln!(
                    "mpicast: calibrate: {probe}: {why}\nmpicast: calibrate: measuring {} at \
                     {} bytes again ({retried} of {} retries)",
                    probe.channel.name(),
                    probe.size,
                    o.retries
                );
                m.again(probe.channel, probe.size, o.passes)?;
            }
            Err(e) => {
                m.progress.finish();
                return Err(Fail::Io(format!(
                    "calibrate: the measurements do not fit the model: {e}"
                )));
            }
        }
    };
    m.progress.finish();
    let facts = m.facts;
    if o.mcast {
        if let Some((_, frag)) = &facts.channel {
            fit.params.mcast_frag = (*frag).max(1);
        }
        if facts.counted {
            let p = calibrate::loss_from_counts(facts.sent, facts.repairs, o.ranks - 1);
            fit.params.mcast_loss_ppm = (p * 1e6).round().min(999_999.0) as u32;
        }
    }
    Ok((fit, facts))
}

/// `mpicast sim calibrate ...` (`args` after `calibrate`).
pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    if args.is_empty() {
        return Err(Fail::UsageText(USAGE));
    }
    let o = cal_opts(args)?;
    let on_other_hosts = o.hostfile.is_some() || o.hosts.is_some() || !o.launcher_args.is_empty();
    if o.mcast && on_other_hosts && std::env::var_os("MPICAST_IFACE").is_none() {
        return Err(usage(
            "with --hostfile, --host or --launcher-arg, set MPICAST_IFACE to the interface \
             that joins the hosts (without it the ranks multicast on loopback, which reaches no \
             other host), or give --no-mcast",
        ));
    }
    let runner = run::find_runner(
        std::env::var_os("MPICAST_GOAL_RUNNER"),
        std::env::current_exe().ok(),
        Path::new(""),
        o.mpi,
    )
    .map_err(Fail::Io)?;
    let channels: Vec<Channel> = if o.mcast {
        vec![Channel::P2p, Channel::Mcast]
    } else {
        vec![Channel::P2p]
    };
    let first = calibrate::first_round(&channels, &o.sizes);
    let root = run::is_root();
    let work = match &o.dir {
        Some(d) => Workdir {
            path: d.clone(),
            remove: false,
        },
        None => Workdir {
            path: std::env::temp_dir().join(format!("mpicast-calibrate-{}", std::process::id())),
            remove: !o.dry_run,
        },
    };
    let runs = Runs {
        o: &o,
        runner,
        dir: work.path.clone(),
        extra: launcher_options(&o),
        root,
    };
    if o.dry_run {
        for p in &first {
            println!("{}", run::render(&runs.launch_of(p).0));
        }
        println!(
            "# then PRTT({},d,s) for every size and channel, d from the medians above",
            calibrate::BURST
        );
        return Ok(());
    }
    // The parameter file comes after the measurements: find out now that it can be written.
    crate::limits::check_writable(&o.out).map_err(Fail::Io)?;
    std::fs::create_dir_all(&work.path)
        .map_err(|e| Fail::Io(format!("{}: {e}", work.path.display())))?;
    if let Some(note) = run::loopback_note(&runs.launch_of(&first[0]).0) {
        eprintln!("mpicast: {note}");
    }
    let mut m = Measurements {
        runs: &runs,
        progress: Progress {
            tty: std::io::stderr().is_terminal(),
            total: o.passes * first.len() * 3 / 2,
            done: 0,
        },
        facts: McastFacts::default(),
        probes: Vec::new(),
        times: Vec::new(),
    };
    // Every probe once per pass, the passes one after the other, so that a slow spell of the
    // machine spoils one launch of a probe rather than all of them.
    m.measure_all(&first, o.passes)?;
    let second = calibrate::second_round(&m.times());
    m.measure_all(&second, o.passes)?;
    let (fit, facts) = fitted(m, &o)?;
    let sim_notes = check_against_simulator(&fit, o.ranks);
    print!("{}", report(&o, &fit, &facts, &sim_notes));
    let command = std::iter::once("mpicast".to_string())
        .chain(std::env::args().skip(1).map(|a| run::shell_word(&a)))
        .collect::<Vec<_>>()
        .join(" ");
    let text = params_file(&o, &fit, &facts, &command);
    std::fs::write(&o.out, &text).map_err(|e| Fail::Io(format!("{}: {e}", o.out)))?;
    println!(
        "wrote {} (use it with `mpicast sim --params {}`)",
        o.out, o.out
    );
    Ok(())
}

/// Simulates every probe under the fitted parameters, without losses (the fit's formulas have
/// none): where the simulator disagrees with the formulas, says so.
fn check_against_simulator(fit: &Fit, ranks: u32) -> Vec<String> {
    let mut params = fit.params;
    params.mcast_loss_ppm = 0;
    let mut notes = Vec::new();
    for ch in [Channel::P2p, Channel::Mcast] {
        let off: Vec<&calibrate::Residual> = fit
            .residuals
            .iter()
            .filter(|r| r.probe.channel == ch)
            .filter(|r| {
                simulate(&r.probe.program(ranks), &params, Options::default())
                    .map_or(true, |o| o.max != r.fitted)
            })
            .collect();
        if let Some(first) = off.first() {
            notes.push(format!(
                "{}: the simulator times {} of the probes differently from the fit's formulas \
                 (first: {})",
                ch.name(),
                off.len(),
                first.probe
            ));
        }
    }
    notes
}

/// The largest relative residual of a fit, as a fraction.
fn worst_residual(fit: &Fit) -> f64 {
    fit.residuals
        .iter()
        .map(|r| r.relative().abs())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn opts(s: &str) -> CalOpts {
        match cal_opts(&args(s)) {
            Ok(o) => o,
            Err(_) => panic!("{s}: refused"),
        }
    }

    fn usage_of(s: &str) -> String {
        match cal_opts(&args(s)) {
            Err(Fail::UsageLine(m)) => m,
            Err(_) => panic!("{s}: not a usage error"),
            Ok(o) => panic!("{s}: accepted: {o:?}"),
        }
    }

    #[test]
    fn options_and_their_errors() {
        let o = opts("-n 3 --mpi mpich --sizes 4096,1,1 --reps 5 --out p");
        assert_eq!(
            (o.ranks, o.mpi, o.reps, o.out.as_str()),
            (3, Mpi::Mpich, 5, "p")
        );
        assert_eq!(o.sizes, [1, 4096]);
        let d = opts("-n 2");
        assert_eq!(d.sizes, DEFAULT_SIZES);
        assert!(d.mcast && d.out == DEFAULT_OUT);
        for (a, want) in [
            ("--sizes 1,2", "calibrate needs -n N"),
            ("-n 1", "-n wants at least 2 ranks"),
            (
                "-n 2 --sizes 8",
                "--sizes needs at least two different sizes",
            ),
            ("-n 2 --sizes 1,70000", "--sizes: 70000 is not in 1..=65535"),
            ("-n 2 --sizes 0,8", "--sizes: 0 is not in"),
            ("-n 2 --sizes 1,x", "--sizes wants a number, not `x`"),
            ("-n 2 --mpi lam", "--mpi wants openmpi or mpich, not `lam`"),
            ("-n 2 --reps 0", "--reps wants 1 to 100000"),
            ("-n 2 --stat mean", "--stat wants median or min, not `mean`"),
            ("-n 2 --bogus", "unknown option `--bogus`"),
            ("-n 2 file", "unknown argument `file`"),
            ("-n", "-n needs a value"),
        ] {
            let m = usage_of(a);
            assert!(m.starts_with(want), "{a}: {m}");
            assert!(
                m.ends_with("(see `mpicast sim calibrate --help`)"),
                "{a}: {m}"
            );
        }
    }

    #[test]
    fn launcher_options_go_before_the_runner() {
        let runner = Path::new("/r/mpicast-goal-run");
        let o = opts("-n 2 --hostfile hf --launcher-arg --bind-to --launcher-arg none");
        let extra = launcher_options(&o);
        assert_eq!(extra, ["--hostfile", "hf", "--bind-to", "none"]);
        let l = Launch {
            env: vec![("MPICAST_IFACE".into(), "lo".into())],
            program: "mpirun.openmpi".into(),
            args: ["-n", "2", "/r/mpicast-goal-run", "f.goal"]
                .iter()
                .map(std::ffi::OsString::from)
                .collect(),
        };
        let l = run::with_launcher_options(l, runner, &extra, Mpi::OpenMpi);
        let words: Vec<String> = l
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = words
            .iter()
            .position(|w| w == "/r/mpicast-goal-run")
            .unwrap();
        assert_eq!(&words[2..6], ["--hostfile", "hf", "--bind-to", "none"]);
        assert!(
            words[6..at]
                .windows(2)
                .any(|w| w == ["-x", "MPICAST_IFACE"]),
            "{words:?}"
        );
        let m = opts("-n 2 --mpi mpich --hostfile hf --host a,b");
        assert_eq!(launcher_options(&m), ["-f", "hf", "-hosts", "a,b"]);
    }

    #[test]
    fn runner_output_is_read() {
        let out = parse_output(
            "run 1/3: 0.000002800 s (slowest of 2 ranks)\nrun 2/3: 0.000002700 s (slowest of 2 \
             ranks)\nrun 3/3: 0.000009 s (slowest of 2 ranks)\nsummary: 3 runs, median \
             0.000002800 s, min 0.000002700 s, max 0.000009000 s\n",
            "mpicast: communicator of 2 ranks on 239.255.56.209:23497 via lo (127.0.0.1): 65443 \
             B per datagram, window 120 datagrams\nmpicast: stats: rank=0 bcast_mcast=0 \
             dgrams_sent=51 dgrams_recv=51 repairs=2 rejected=0\n",
        );
        assert_eq!(out.median_ns.map(f64::round), Some(2800.0));
        assert_eq!(out.min_ns.map(f64::round), Some(2700.0));
        assert_eq!((out.dgrams_sent, out.repairs), (Some(51), Some(2)));
        assert_eq!(out.channel, Some(("lo (127.0.0.1)".to_string(), 65443)));
        let one = parse_output("run 1/1: 0.000001500 s (slowest of 2 ranks)\n", "");
        assert_eq!(one.median_ns.map(f64::round), Some(1500.0));
        assert_eq!(one.time(Stat::Min).map(f64::round), Some(1500.0));
        assert_eq!(parse_output("", "").median_ns, None);
    }

    #[test]
    fn dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
    }
}
