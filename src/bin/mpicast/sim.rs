//! `mpicast sim`: times a GOAL program (a file in either text dialect or the binary schedule,
//! or a generated one) in the LogGOPS model of `sim::loggops` and prints when each rank ends,
//! the maximum and, on request, the critical path. This file owns the options and the output;
//! the model is the library's (`src/sim/`).

use crate::goal::{binary, gen, lgsbin, Dialect};
use crate::progress::Progress;
use crate::sim::{
    critical_path, simulate_flat_full, Contention, Flat, Network, Noise, Options, Outcome, Params,
    SimError,
};
use crate::{goal, load_bytes, num, parse_func, read_input, Fail};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// `mpicast sim --help`.
pub const USAGE: &str = "\
usage: mpicast sim FILE [options]
       mpicast sim --gen ALGO --ranks N [--size BYTES] [--root R] [--ways W] [--op FUNC]
                   [--segment BYTES] [--ppn K] [options]
       mpicast sim --gen mmcast-ALGO --network FILE (--mcasts SPEC | --k K [--dests D])
                   [--seed SEED] [--size BYTES] [options]
       mpicast sim sweep --gen ALGO[,ALGO...] --ranks LIST [--size LIST] [--csv OUT.csv]
                         [--svg OUT.svg] [parameter options]   (`mpicast sim sweep --help`)
       mpicast sim calibrate -n N [--mpi openmpi|mpich] [--sizes LIST] [--reps R] [--out FILE] ...
       mpicast sim routes FILE   (the switch paths of a network file's routing: `--help`)

Simulates a GOAL program in the LogGOPS model (LogGOPSim's rules: docs/sim.md) and prints each
rank's end time (for at most 64 ranks), the maximum, and with --critical-path the chain of
actions that ends last. FILE is text in either dialect or a binary schedule (`-`: standard
input; a LogGOPSim binary schedule from txt2bin is read too); --gen takes the program from a generator of `mpicast goal gen` (binomial-bcast,
dissemination-allreduce, scout-tree-bcast, scout-linear-bcast, mcast-barrier, chain-bcast,
binary-tree-bcast, dbcast, eager-mcast-bcast, imcast-bcast, binomial-isend-bcast; --size
default 8; --segment: the segment bytes of the pipelined ones, default 65536, for dbcast and
imcast-bcast the library's 8192, for binomial-isend-bcast 16384; --ppn: ranks per host of
imcast-bcast, default 1). --gen mmcast-ALGO: the multiple multicasts of `mpicast goal gen
mmcast-ALGO` (docs/agents.md) over the ranks of the --network file, timed with its contention.

options (times in ns, sizes in bytes; defaults are LogGOPSim's):
  -L N              latency (2500)
  -o N              CPU overhead per message (1500)
  -g N              NIC gap per message (1000)
  -G X              NIC gap per byte, ns with up to 3 decimals: 0.08 is 100 Gbit/s (6)
  -O X              CPU overhead per byte, as -G (0)
  -S N              largest eager message; larger ones use rendezvous (65535)
  --set NAME=VALUE  any parameter, also the multicast channel's: mL mo mg mG (its own
                    L o g G; default: as point-to-point), mF (datagram payload, 1400),
                    mloss (loss probability per datagram and receiver, 0), mnack (ns before
                    a receiver asks again for a lost tail, 2000000), mseed (fixes the
                    pseudo-random losses, 1)
  --params FILE     `name value` lines of the same names, `#` comments; options given on
                    the command line override the file
  --recv-cpu R      how long a message keeps its receiver's CPU: model (o + (s-1)O, the
                    NIC takes the bytes meanwhile; the default) or loggopsim (until the
                    last byte is in, o + max((s-1)O, (s-1)G), as LogGOPSim charges it)
  --ready-order R   actions ready at once start kind first (sends, then receives, then
                    computations; the default, LogGOPSim's order) or in program order
  --noise-trace F   OS noise: F lists CPU interruptions, `start length` in ns a line (as
                    LogGOPSim's --noise-trace); each rank reads it from its own place
  --noise-cosched   every rank reads the noise trace from the same place
  --noise-seed N    fixes each rank's place in the noise trace (1)
  --qstat           the matching queues: the longest posted-receive and unexpected-message
                    queue, and how many entries the matching looked at
  --critical-path   print the chain of actions that ends last
  --timing          say on stderr how long building and simulating took (events per second)
  --no-progress     no progress bar on stderr (it shows only when stderr is a terminal)
  --timeline OUT    draw the run as an SVG, one lane per rank, time to the right (at most
                    256 ranks and 20000 actions)
  --trace-json OUT  write the run as a Chrome trace (JSON that Perfetto and
                    chrome://tracing open): a process per rank, its CPU and NIC as threads,
                    messages as flows
  --network FILE    share the links of a switched network: FILE declares `switch NAME`,
                    `link SW1 SW2 BANDWIDTH [LATENCY]`, `host NAME SWITCH [BANDWIDTH]`
                    and `ranks-per-host K` or `rank R HOST` lines (docs/sim.md: Contention
                    and the network file); messages then queue on busy links;
                    --topology FILE is the same
  --dialect D       read FILE as paper or loggopsim text only

`mpicast sim calibrate` measures ping-pongs on N ranks of this machine's MPI and writes the
fitted parameters as a --params file (`mpicast sim calibrate --help`).

A program that would not fit in the memory this process may use is refused before it is built
(the message gives the estimate and the limit; docs/sim.md).

Exit status: 0 fine, 1 errors found (a bad file, a program that cannot finish), 2 bad usage
(or a program too large for the memory).";

/// Reads `name value` lines into `prm`; errors name `file` and the line.
pub fn parse_params(text: &str, file: &str, prm: &mut Params) -> Result<(), String> {
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{file}:{}", i + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, value] = words[..] else {
            return Err(format!("{at}: expected `name value`, got `{line}`"));
        };
        prm.set_text(name, value)
            .map_err(|m| format!("{at}: {m}"))?;
    }
    Ok(())
}

/// The options that set parameters, which `sim` and `sim sweep` share: -L -o -g -G -O -S,
/// --set and --params.
#[derive(Default)]
pub struct ParamOpts {
    file: Option<String>,
    set: Vec<(String, String)>,
}

impl ParamOpts {
    /// Whether `flag` is one of these options (each takes a value).
    pub fn takes(flag: &str) -> bool {
        matches!(
            flag,
            "-L" | "-o"
                | "-g"
                | "-G"
                | "-O"
                | "-S"
                | "--set"
                | "--params"
                | "--recv-cpu"
                | "--ready-order"
        )
    }

    /// Records `flag value`, refusing a bad name or value at once.
    pub fn take(&mut self, flag: &str, v: String) -> Result<(), Fail> {
        match flag {
            "--params" => self.file = Some(v),
            "--set" => {
                let Some((name, val)) = v.split_once('=') else {
                    return Err(Fail::Usage(format!("--set wants NAME=VALUE, got `{v}`")));
                };
                Params::default().set_text(name, val).map_err(Fail::Usage)?;
                self.set.push((name.to_string(), val.to_string()));
            }
            _ => {
                let name = flag.trim_start_matches('-');
                Params::default().set_text(name, &v).map_err(Fail::Usage)?;
                self.set.push((name.to_string(), v));
            }
        }
        Ok(())
    }

    /// The defaults, then the file, then the options in the order given.
    pub fn params(&self) -> Result<Params, Fail> {
        let mut prm = Params::default();
        if let Some(f) = &self.file {
            let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            parse_params(&text, f, &mut prm).map_err(Fail::Io)?;
        }
        for (name, v) in &self.set {
            prm.set_text(name, v).map_err(Fail::Usage)?;
        }
        Ok(prm)
    }
}

struct SimOpts {
    file: Option<String>,
    gen: Option<String>,
    ranks: Option<u32>,
    size: Option<usize>,
    root: Option<u32>,
    ways: Option<u32>,
    segment: Option<usize>,
    ppn: Option<u32>,
    op: Option<crate::sched::Func>,
    dialect: Option<Dialect>,
    prm: ParamOpts,
    critical: bool,
    timing: bool,
    progress: bool,
    timeline: Option<String>,
    network: Option<String>,
    noise: Option<String>,
    noise_cosched: bool,
    noise_seed: u64,
    qstat: bool,
    trace_json: Option<String>,
    mm: crate::MmcastOpts,
}

fn sim_opts(args: &[String]) -> Result<SimOpts, Fail> {
    let mut o = SimOpts {
        file: None,
        gen: None,
        ranks: None,
        size: None,
        root: None,
        ways: None,
        segment: None,
        ppn: None,
        op: None,
        dialect: None,
        prm: ParamOpts::default(),
        critical: false,
        timing: false,
        progress: true,
        timeline: None,
        network: None,
        noise: None,
        noise_cosched: false,
        noise_seed: 1,
        qstat: false,
        trace_json: None,
        mm: crate::MmcastOpts::default(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| Fail::Usage(format!("{flag} needs a value")))
        };
        match a.as_str() {
            p if ParamOpts::takes(p) => {
                let v = value(p)?;
                o.prm.take(p, v)?;
            }
            "--critical-path" => o.critical = true,
            "--timing" => o.timing = true,
            "--no-progress" => o.progress = false,
            "--timeline" => o.timeline = Some(value(a)?),
            "--noise-trace" => o.noise = Some(value(a)?),
            "--noise-cosched" => o.noise_cosched = true,
            "--qstat" => o.qstat = true,
            "--trace-json" => o.trace_json = Some(value(a)?),
            "--noise-seed" => o.noise_seed = num(a, &value(a)?)?,
            "--network" | "--topology" => {
                let v = value(a)?;
                o.mm.take(a, &v)?;
                o.network = Some(v);
            }
            f if crate::MmcastOpts::takes(f) => {
                let v = value(f)?;
                o.mm.take(f, &v)?
            }
            "--gen" => o.gen = Some(value(a)?),
            "--ranks" | "-n" => o.ranks = Some(num(a, &value(a)?)?),
            "--size" => o.size = Some(num(a, &value(a)?)?),
            "--root" => o.root = Some(num(a, &value(a)?)?),
            "--ways" => o.ways = Some(num(a, &value(a)?)?),
            "--segment" => o.segment = Some(num(a, &value(a)?)?),
            "--ppn" => o.ppn = Some(num(a, &value(a)?)?),
            "--op" => o.op = Some(parse_func(&value(a)?)?),
            "--dialect" => {
                o.dialect = Some(match value(a)?.as_str() {
                    "paper" => Dialect::Paper,
                    "loggopsim" | "lgs" => Dialect::LogGopSim,
                    d => return Err(Fail::Usage(format!("unknown dialect `{d}`"))),
                })
            }
            s if s.starts_with('-') && s != "-" => {
                return Err(Fail::Usage(format!("unknown option `{s}`")))
            }
            f => {
                if let Some(first) = &o.file {
                    return Err(Fail::Usage(format!(
                        "sim takes one FILE, got {first} and {f}"
                    )));
                }
                o.file = Some(f.to_string());
            }
        }
    }
    Ok(o)
}

/// The program is built: what the run adds (`traced`: with the trace) must fit in what is left.
fn check_run_memory(name: &str, flat: &Flat, traced: bool) -> Result<(), Fail> {
    let more = crate::sim::loggops::run_bytes(
        u64::from(flat.num_ranks()),
        flat.action_count() as u64,
        flat.cpus() as u64,
        flat.nics() as u64,
        traced,
    );
    crate::limits::check_memory(
        &format!(
            "simulating {name} ({} ranks, {} actions)",
            flat.num_ranks(),
            flat.action_count()
        ),
        more,
    )
    .map_err(Fail::UsageLine)
}

/// `--timing`: how long building `flat` and simulating it took (`cpu`: CPU seconds of the
/// run, if known), and the rate of events.
fn say_timing(flat: &Flat, out: &Outcome, built: Duration, ran: Duration, cpu: Option<f64>) {
    let per_cpu = cpu
        .filter(|&c| c > 0.0)
        .map(|c| {
            format!(
                "; {c:.2} s of CPU: {:.2} M events per CPU second",
                out.events as f64 / c / 1e6
            )
        })
        .unwrap_or_default();
    eprintln!(
        "timing: program built in {:.3} s ({} actions, {:.1} MiB in the simulator's \
         form); simulated in {:.3} s: {} events, {:.2} M events/s{per_cpu}",
        built.as_secs_f64(),
        flat.action_count(),
        flat.bytes() as f64 / (1 << 20) as f64,
        ran.as_secs_f64(),
        out.events,
        out.events as f64 / ran.as_secs_f64().max(1e-9) / 1e6
    );
}

/// `mpicast sim ...`.
pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.is_empty() {
        return Err(Fail::UsageText(USAGE));
    }
    if args[0] == "calibrate" {
        return crate::sim_calibrate::run(&args[1..]);
    }
    if args[0] == "routes" {
        return crate::sim_routes::run(&args[1..]);
    }
    if args[0] == "help" || args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let o = sim_opts(args)?;
    let prm = o.prm.params()?;
    if let Some(path) = &o.timeline {
        // Found now rather than after a long simulation.
        crate::limits::check_writable(path).map_err(Fail::Io)?;
    }
    let traced = o.critical || o.timeline.is_some() || o.trace_json.is_some();
    let built = Instant::now();
    let (name, flat) = match (&o.file, &o.gen) {
        (Some(_), Some(_)) => {
            return Err(Fail::Usage("give a FILE or --gen ALGO, not both".into()));
        }
        (None, None) => return Err(Fail::Usage("sim needs a FILE or --gen ALGO".into())),
        (Some(f), None) => {
            check_file_memory(f, traced)?;
            (f.clone(), from_file(f, o.dialect)?)
        }
        (None, Some(algo)) => (algo.clone(), generated(&o, algo)?),
    };
    let built = built.elapsed();
    check_run_memory(&name, &flat, traced)?;
    let ran = Instant::now();
    let cpu_before = cpu_seconds();
    let mut bar = Progress::new("simulating", o.progress);
    if o.timeline.is_some() {
        crate::sim_timeline::check(&flat).map_err(Fail::UsageLine)?;
    }
    let mut net = match &o.network {
        None => None,
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            let n = Network::parse(&text, f).map_err(Fail::Io)?;
            Some(Contention::new(&n, flat.num_ranks(), &prm).map_err(Fail::Io)?)
        }
    };
    let noise = match &o.noise {
        None => None,
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            let events = Noise::parse(&text).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            let n = Noise::new(events, flat.num_ranks(), o.noise_cosched, o.noise_seed)
                .map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            Some(n)
        }
    };
    let opts = Options {
        trace: o.critical || o.timeline.is_some() || o.trace_json.is_some(),
    };
    let mut progress = |done, all| bar.update(done, all);
    let result = simulate_flat_full(
        &flat,
        &prm,
        opts,
        noise.as_ref(),
        net.as_mut(),
        &mut progress,
    );
    bar.finish();
    let ran = ran.elapsed();
    let cpu = cpu_seconds().zip(cpu_before).map(|(a, b)| a - b);
    match result {
        Ok(out) => {
            print!("{}", report(&name, &flat, &prm, &out, o.critical));
            if o.qstat {
                let q = &out.queues;
                println!(
                    "queues: longest posted-receive queue {} (rank {}), longest unexpected \
                     queue {} (rank {}); {} messages found their receive posted ({} entries \
                     looked at), {} receives found their message waiting ({} entries looked at)",
                    q.posted_max,
                    q.posted_max_rank,
                    q.unexpected_max,
                    q.unexpected_max_rank,
                    q.matched_posted,
                    q.posted_searched,
                    q.matched_unexpected,
                    q.unexpected_searched
                );
            }
            if let Some(f) = &o.noise {
                println!(
                    "noise: {} ns added to CPU work over all ranks ({f}, {}, seed {})",
                    out.noise,
                    if o.noise_cosched {
                        "co-scheduled"
                    } else {
                        "independent"
                    },
                    o.noise_seed
                );
            }
            if let Some(c) = &net {
                println!("{}", c.summary());
            }
            if let Some(path) = &o.timeline {
                let svg = crate::sim_timeline::render(&name, &flat, &prm, &out);
                std::fs::write(path, svg).map_err(|e| Fail::Io(format!("{path}: {e}")))?;
            }
            if let Some(path) = &o.trace_json {
                let json = crate::sim_timeline::chrome_trace(&name, &flat, &prm, &out);
                std::fs::write(path, json).map_err(|e| Fail::Io(format!("{path}: {e}")))?;
            }
            if o.timing {
                say_timing(&flat, &out, built, ran, cpu);
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("{name}: error: {e}");
            if matches!(e, SimError::Deadlock { .. }) {
                eprintln!("{name}: note: `mpicast goal check` tells which sends and receives cannot match");
            }
            Err(Fail::Errors)
        }
    }
}

/// CPU time (user and system) this process has used, from /proc/self/stat (Linux; `None`
/// elsewhere): on a shared machine it says more than the wall clock.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on every Linux architecture mpicast builds for.
    Some(ticks / 100.0)
}

/// Refuses a FILE whose program cannot fit, before reading it: its size times what a byte of
/// it becomes, measured: about 3 for a binary schedule (the simulator's form and the run's
/// state), 4 for LogGOPSim text (read a line at a time; 2^20-rank binomial broadcast: 89 MiB
/// of text, 315 MiB at the peak), 16 for the paper's text (parsed whole first).
fn check_file_memory(f: &str, traced: bool) -> Result<(), Fail> {
    if f == "-" {
        return Ok(());
    }
    let Ok(meta) = std::fs::metadata(f) else {
        return Ok(()); // reading it says why
    };
    let mut head = Vec::new();
    let _ = std::fs::File::open(f).and_then(|file| {
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 1 << 16), &mut head)
    });
    let binary = head.starts_with(&binary::MAGIC) || lgsbin::is_lgs_binary(&head);
    let lgs_text = goal::guess_dialect(&head) == Some(Dialect::LogGopSim);
    let factor = match (binary, lgs_text, traced) {
        (true, _, false) => 3,
        (true, _, true) => 4,
        (false, true, false) => 4,
        (false, true, true) => 5,
        (false, false, _) => 16,
    };
    crate::limits::check_memory(
        &format!("sim {f} ({})", crate::limits::human(meta.len())),
        meta.len().saturating_mul(factor),
    )
    .map_err(Fail::UsageLine)
}

/// The program of FILE in the simulator's form. A binary schedule (mpicast's, or
/// LogGOPSim's from txt2bin) is read rank by rank without building the whole `Program`;
/// so is LogGOPSim's text (Schedgen's output), a line at a time, when its first words say
/// that dialect (`from_lgs_text`). Text in the paper's dialect is parsed whole first.
fn from_file(f: &str, dialect: Option<Dialect>) -> Result<Flat, Fail> {
    let mut flat = Flat::new();
    let (head, mut rest) = open_head(f)?;
    if head.starts_with(&binary::MAGIC) || lgsbin::is_lgs_binary(&head) {
        let bytes = whole(f, head, rest)?;
        let loaded = if bytes.starts_with(&binary::MAGIC) {
            binary::load_each(&bytes, |_, rp| flat.push_rank(&rp))
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            lgsbin::load_each(&bytes, |_, rp| flat.push_rank(&rp))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        loaded.map_err(|e| {
            eprintln!("{f}: error: {e}");
            Fail::Errors
        })?;
        return Ok(flat);
    }
    let lgs_first = match dialect {
        Some(d) => d == Dialect::LogGopSim,
        None => goal::guess_dialect(&head) == Some(Dialect::LogGopSim),
    };
    if !lgs_first {
        let bytes = whole(f, head, rest)?;
        let program = load_bytes(f, &bytes, dialect)?.program;
        drop(bytes);
        for r in &program.ranks {
            flat.push_rank(r)
                .map_err(|e| Fail::Io(format!("{f}: {e}")))?;
        }
        return Ok(flat);
    }
    // Standard input cannot be read twice: it is kept whole for the other dialect (still
    // without the parsed program of all ranks).
    let (kept, result) = if f == "-" {
        let bytes = whole(f, head, rest)?;
        let r = goal::lgs::parse_each(&mut &bytes[..], &mut |_, rp| flat.push_rank(&rp));
        (Some(bytes), r)
    } else {
        let mut input = std::io::Read::chain(&head[..], &mut rest);
        let r = goal::lgs::parse_each(&mut input, &mut |_, rp| flat.push_rank(&rp));
        (None, r)
    };
    let e1 = match result {
        Ok(warnings) => {
            for w in &warnings {
                eprintln!("{}", w.render(f));
            }
            return Ok(flat);
        }
        Err(e) => e,
    };
    if dialect.is_some() {
        eprintln!("{}", e1.render(f));
        return Err(Fail::Errors);
    }
    // As `goal::parse_any`: the other dialect, and if it fails too the error that got further.
    drop(flat);
    let bytes = match kept {
        Some(b) => b,
        None => read_input(f)?,
    };
    match goal::paper::parse(&bytes) {
        Ok(p) => {
            for w in &p.warnings {
                eprintln!("{}", w.render(f));
            }
            drop(bytes);
            let mut flat = Flat::new();
            for r in &p.program.ranks {
                flat.push_rank(r)
                    .map_err(|e| Fail::Io(format!("{f}: {e}")))?;
            }
            Ok(flat)
        }
        Err(e2) => {
            let e = if e2.loc > e1.loc { e2 } else { e1 };
            eprintln!("{}", e.render(f));
            Err(Fail::Errors)
        }
    }
}

/// The first bytes of FILE (up to 64 KiB; `-`: standard input) and the reader of the rest.
fn open_head(f: &str) -> Result<(Vec<u8>, Box<dyn std::io::Read>), Fail> {
    let io = |e: std::io::Error| {
        Fail::Io(if f == "-" {
            format!("standard input: {e}")
        } else {
            format!("{f}: {e}")
        })
    };
    let mut input: Box<dyn std::io::Read> = if f == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(f).map_err(io)?)
    };
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut input, 1 << 16), &mut head)
        .map_err(io)?;
    Ok((head, input))
}

/// The whole of FILE from what `open_head` gave.
fn whole(f: &str, mut head: Vec<u8>, mut rest: Box<dyn std::io::Read>) -> Result<Vec<u8>, Fail> {
    rest.read_to_end(&mut head)
        .map_err(|e| Fail::Io(format!("{f}: {e}")))?;
    Ok(head)
}

fn generated(o: &SimOpts, name: &str) -> Result<Flat, Fail> {
    if let Some(algo) = crate::gen_mmcast::algo_of(name) {
        let p = crate::mmcast_program(algo, &o.mm, o.ranks, o.size.unwrap_or(8))?;
        let mut flat = Flat::new();
        for r in &p.ranks {
            flat.push_rank(r)
                .map_err(|e| Fail::Io(format!("{name}: {e}")))?;
        }
        return Ok(flat);
    }
    let algo = algo_named(name, o.ways, o.op, o.segment, o.ppn)?;
    o.mm.refuse(false)?;
    let n = o
        .ranks
        .ok_or_else(|| Fail::Usage("--gen needs --ranks N".into()))?;
    let size = o.size.unwrap_or(8);
    let traced = o.critical || o.timeline.is_some() || o.trace_json.is_some();
    let (actions, deps) = crate::limits::program_size(algo, n, size);
    let need = crate::limits::sim_bytes(u64::from(n), actions, deps, traced)
        .saturating_add(crate::limits::generator_bytes(algo, n));
    let what = format!("sim --gen {name} --ranks {n}");
    crate::limits::check_memory(&what, need).map_err(Fail::UsageLine)?;
    let mut flat = Flat::new();
    crate::limits::reserve(&mut flat, n, actions, deps)
        .map_err(|e| Fail::Io(format!("{what}: {e}")))?;
    let mut too_big = None;
    let mut bar = Progress::new("generating", o.progress);
    gen::generate_each(algo, n, o.root.unwrap_or(0), size, |s| {
        let r = flat.num_ranks() as u64;
        if r % 4096 == 0 {
            bar.update(r, n as u64);
        }
        flat.push_schedule(&s, &[]).map_err(|e| {
            too_big = Some(e.clone());
            e
        })
    })
    .map_err(|e| match too_big {
        Some(_) => Fail::Io(format!("{name}: {e}")),
        None => Fail::Usage(e),
    })?;
    Ok(flat)
}

/// The generator called `name`, or a usage error that lists the known ones.
pub fn algo_named(
    name: &str,
    ways: Option<u32>,
    op: Option<crate::sched::Func>,
    segment: Option<usize>,
    ppn: Option<u32>,
) -> Result<gen::Algo, Fail> {
    gen::algo_from_name(name, ways, op)
        .map(|a| a.with_segment(segment).with_ppn(ppn))
        .ok_or_else(|| {
            Fail::UsageLine(format!(
                "unknown algorithm `{name}`; known: {}, {}",
                gen::NAMES.join(", "),
                crate::gen_mmcast::names().join(", ")
            ))
        })
}

/// The printed result: a header, per-rank end times up to 64 ranks, the maximum, and the
/// critical path when asked.
fn report(name: &str, p: &Flat, prm: &Params, out: &crate::sim::Outcome, critical: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{name}: {} ranks, {} actions; {prm} (ns; S in bytes)",
        p.num_ranks(),
        p.action_count()
    );
    if p.num_ranks() <= 64 {
        for (r, e) in out.end.iter().enumerate() {
            let _ = writeln!(s, "rank {r}: {e} ns");
        }
    }
    let _ = writeln!(
        s,
        "maximum: {} ns at rank {} ({:.9} s); {} events",
        out.max,
        out.max_rank,
        out.max as f64 / 1e9,
        out.events
    );
    if prm.mcast_loss_ppm > 0 {
        let _ = writeln!(
            s,
            "multicast loss: {} datagrams lost, repaired in {} NACK rounds (mloss {}, mseed {})",
            out.mcast_lost,
            out.mcast_repairs,
            prm.mcast_loss_ppm as f64 / 1e6,
            prm.mcast_seed
        );
    }
    if critical {
        let path = critical_path(out);
        let _ = writeln!(
            s,
            "critical path ({} actions, ends at {} ns on rank {}):",
            path.len(),
            out.max,
            out.max_rank
        );
        let _ = writeln!(
            s,
            "  {:>12} {:>12} {:>6} {:>7}  {:<16} action",
            "start", "end", "rank", "action", "waited for"
        );
        for st in &path {
            let g = p.global(st.rank, st.action);
            let label = p.label(g).map(|l| format!(" ({l})")).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:>12} {:>12} {:>6} {:>7}  {:<16} {}{label}",
                st.start,
                st.end,
                st.rank,
                st.action,
                st.via.name(),
                p.act(g).describe()
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_files_name_file_and_line() {
        let mut p = Params::default();
        parse_params(
            "# fitted\nL 5000\n\no 10 # per message\nS 0\n",
            "p.txt",
            &mut p,
        )
        .unwrap();
        assert_eq!((p.latency, p.overhead, p.eager_limit), (5000, 10, 0));
        let err = |t: &str| parse_params(t, "p.txt", &mut Params::default()).unwrap_err();
        assert_eq!(
            err("L 1\nx 3\n"),
            "p.txt:2: unknown parameter `x` (known: L o g G O S mL mo mg mG mF mloss mnack mseed \
             recv-cpu ready-order)"
        );
        assert_eq!(
            err("recv-cpu nic"),
            "p.txt:1: recv-cpu is model or loggopsim, not `nic`"
        );
        assert_eq!(err("\n\ng -5"), "p.txt:3: g must not be negative, got `-5`");
        assert_eq!(
            err("L 1.5"),
            "p.txt:1: L wants a non-negative integer, not `1.5`"
        );
        // G, O and mG take ns per byte to the ps.
        assert_eq!(
            err("G 0.0001"),
            "p.txt:1: G takes at most 3 decimals (1 ps per byte), got `0.0001`"
        );
        assert_eq!(err("\nG -1"), "p.txt:2: G must not be negative, got `-1`");
        assert_eq!(
            err("O 1e-3"),
            "p.txt:1: O wants a non-negative number of ns per byte such as 8 or 0.08, not `1e-3`"
        );
        assert_eq!(
            err("mG ."),
            "p.txt:1: mG wants a non-negative number of ns per byte such as 8 or 0.08, not `.`"
        );
        assert_eq!(err("L"), "p.txt:1: expected `name value`, got `L`");
        assert_eq!(
            err("mloss 1"),
            "p.txt:1: mloss must be at least 0 and below 1, got `1`"
        );
        assert_eq!(
            err("mloss x"),
            "p.txt:1: mloss wants a fraction such as 0.01, not `x`"
        );
        assert_eq!(err("mF 0"), "p.txt:1: mF must be at least 1 byte");
    }

    #[test]
    fn fractional_per_byte_costs_parse_and_print_back() {
        use crate::sim::PerByte;
        let mut p = Params::default();
        parse_params("G 0.08\nO .5\nmG 1.250\n", "p", &mut p).unwrap();
        assert_eq!(
            (p.gap_per_byte, p.overhead_per_byte, p.mcast_gb()),
            (PerByte::ps(80), PerByte::ps(500), PerByte::ps(1250))
        );
        let file = p.as_file();
        assert!(file.contains("G 0.08\nO 0.5\n"), "{file}");
        assert!(file.contains("mG 1.25\n"), "{file}");
        assert!(p.to_string().contains("G=0.08 O=0.5"), "{p}");
        let mut q = Params::default();
        parse_params(&file, "q", &mut q).unwrap();
        assert_eq!(p, q);
        // Whole ns per byte print as integers.
        assert!(Params::default().as_file().contains("G 6\nO 0\n"));
        assert!(Params::default().to_string().contains("G=6 O=0"));
    }

    #[test]
    fn rules_round_trip_and_print_only_when_set() {
        use crate::sim::{ReadyOrder, RecvCpu};
        let mut p = Params::default();
        parse_params("recv-cpu loggopsim\nready-order program\n", "p", &mut p).unwrap();
        assert_eq!(
            (p.recv_cpu, p.ready_order),
            (RecvCpu::LogGOPSim, ReadyOrder::Program)
        );
        let mut q = Params::default();
        parse_params(&p.as_file(), "q", &mut q).unwrap();
        assert_eq!(p, q);
        assert!(p
            .to_string()
            .ends_with(" recv-cpu=loggopsim ready-order=program"));
        let d = Params::default();
        assert!(!d.to_string().contains("recv-cpu") && !d.as_file().contains("recv-cpu"));
        // The options of the command line set them too.
        let mut o = ParamOpts::default();
        assert!(ParamOpts::takes("--recv-cpu") && ParamOpts::takes("--ready-order"));
        o.take("--recv-cpu", "loggopsim".into()).unwrap();
        assert_eq!(o.params().unwrap().recv_cpu, RecvCpu::LogGOPSim);
        assert!(o.take("--ready-order", "first".into()).is_err());
    }

    #[test]
    fn multicast_parameters_round_trip_through_a_file() {
        let mut p = Params::default();
        parse_params("mL 9000\nmG 80\nmloss 0.025\nmF 8192\n", "p", &mut p).unwrap();
        assert_eq!(
            (p.mcast_l(), p.mcast_o(), p.mcast_gb()),
            (9000, 1500, crate::sim::PerByte::ns(80))
        );
        assert_eq!((p.mcast_loss_ppm, p.mcast_frag), (25_000, 8192));
        let mut q = Params::default();
        parse_params(&p.as_file(), "q", &mut q).unwrap();
        assert_eq!(p, q);
        assert!(p.to_string().contains("mL=9000 mo=1500"));
        assert!(!Params::default().to_string().contains("mL"));
    }
}
