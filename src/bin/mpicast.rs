//! The `mpicast` command line. `mpicast goal ...` works on GOAL files without MPI;
//! `mpicast topo ...` shows the topology IDs and routing of `MPICAST_Imcast` for a job;
//! `mpicast doctor` checks whether multicast works between the ranks of a job (or on this host).
//!
//! The pure modules it needs (`goal`, `sched`, `algo`, `topology` and the `config` that `algo`
//! reads; `doctor` with the `net` that gathers its facts and the `wire` that sizes datagrams) are
//! compiled into the executable from their sources instead of linking the library crate:
//! the library exports the MPI entry points it replaces, which would drag libmpi into the
//! executable even though these commands never call MPI.

#[allow(dead_code, unused_imports)]
#[path = "../algo/mod.rs"]
mod algo;
#[allow(dead_code, unused_imports)]
#[path = "../config/mod.rs"]
mod config;
#[allow(dead_code, unused_imports)]
#[path = "../doctor/mod.rs"]
mod doctor;
#[allow(dead_code, unused_imports)]
#[path = "../goal/mod.rs"]
mod goal;
#[allow(dead_code, unused_imports)]
#[path = "../net/mod.rs"]
mod net;
#[allow(dead_code, unused_imports)]
#[path = "../rng.rs"]
mod rng;
#[allow(dead_code, unused_imports)]
#[path = "../sched/mod.rs"]
mod sched;
#[allow(dead_code, unused_imports)]
#[path = "../sim/mod.rs"]
mod sim;
#[allow(dead_code, unused_imports)]
#[path = "../topology/mod.rs"]
mod topology;
#[allow(dead_code, unused_imports)]
#[path = "../tune.rs"]
mod tune;
#[allow(dead_code, unused_imports)]
#[path = "../wire/mod.rs"]
mod wire;

#[path = "mpicast/doctor.rs"]
mod doctor_cmd;
#[path = "mpicast/limits.rs"]
mod limits;
#[path = "mpicast/progress.rs"]
mod progress;
#[path = "mpicast/run.rs"]
mod run;
#[path = "mpicast/sim_calibrate.rs"]
mod sim_calibrate;
#[path = "mpicast/sim.rs"]
mod sim_cmd;
#[path = "mpicast/sim_routes.rs"]
mod sim_routes;
#[path = "mpicast/sim_sweep.rs"]
mod sim_sweep;
#[path = "mpicast/sim_timeline.rs"]
mod sim_timeline;
#[path = "mpicast/svg.rs"]
mod svg;
#[path = "mpicast/topo.rs"]
mod topo;
#[path = "mpicast/tune.rs"]
mod tune_cmd;

use goal::{
    binary, dot,
    gen::{self, algo_from_name},
    gen_mmcast, print,
    validate::{self, BufferSizes},
    Dialect, Parsed, Program,
};
use sched::func::{Dtype, Func, Opcode, Predef};
use std::io::{Read, Write};
use std::process::ExitCode;

/// `mpicast --help`: the commands.
const USAGE: &str = "\
usage: mpicast <command> ...
       mpicast --help | --version

commands:
  doctor  will multicast work between the ranks of a job, and what to change if not: who
          hears whom, loss by rate, the repair path, the IGMP querier, and each host's
          interface, MTU, buffers and filters (`mpicast doctor -n N` over MPI, `mpicast
          doctor --local` for this host; `mpicast doctor --help`)
  goal    GOAL programs (collective schedules as text or binary): check, assemble,
          disassemble, generate, draw, bound, and run them on N ranks of this host's MPI
          (`mpicast goal --help`)
  topo    the topology IDs, routing tables and multicast trees of MPICAST_Imcast for a job
          of N ranks placed over a list of hosts (`mpicast topo --help`)
  sim     time a GOAL program (a file or a generator) in the LogGOPS model
          (`mpicast sim --help`)
  tune    measure the host MPI's broadcast against mpicast's on N ranks of your network and
          print the settings that keep mpicast never slower (MPICAST_MIN_BYTES, ...), as
          shell lines or an MPICAST_CONFIG file (`mpicast tune --help`)

mpicast is the command line of libmpicast.so, the library that makes MPI_Bcast and
MPI_Barrier use UDP multicast under an MPI program (LD_PRELOAD; see README.md). These
commands need no MPI, except those that launch a job of N ranks with mpirun or mpiexec:
`goal run`, `doctor -n N`, `sim calibrate` and `tune` (not `doctor --local` nor
`tune --from`).

Exit status: 0 fine, 1 errors found, 2 bad usage.";

/// `mpicast goal --help`.
const GOAL_USAGE: &str = "\
usage: mpicast goal <command> ...

  check FILE [--buffer NAME=SIZE]... [--dialect paper|loggopsim]
        parse and validate (text in either dialect, or a binary schedule); with buffer
        sizes, also check every buffer range (the un-named buffer is `buf`)
  asm FILE -o OUT [--dialect D]
        assemble text into a binary schedule
  disasm FILE [--dialect paper|loggopsim]
        print a binary schedule (or a text file) as text, by default in its own dialect
  gen ALGO --ranks N [--root R] [--size S] [--ways W] [--op FUNC] [--segment B] [--ppn K]
        [--dialect D] [-o OUT]
  gen mmcast-ALGO --network FILE (--mcasts SPEC | --k K [--dests D]) [--seed SEED]
        [--size S]
        [--dialect D] [-o OUT]
        print a generated schedule as text (or binary with -o OUT.bin); ALGO is one of
        binomial-bcast, dissemination-allreduce, scout-tree-bcast, scout-linear-bcast,
        mcast-barrier, chain-bcast, binary-tree-bcast, dbcast, eager-mcast-bcast,
        imcast-bcast, binomial-isend-bcast; FUNC like sumInt32 (dissemination only); B the
        segment bytes of chain-bcast and binary-tree-bcast (65536), dbcast and imcast-bcast
        (8192), binomial-isend-bcast (16384); K the ranks per host of imcast-bcast (1).
        mmcast-ALGO: several multicasts at once over the switches of a network file (its
        ranks, its up-down tree; docs/agents.md), ALGO one of naive, spcco,
        sametree-binomial, sametree-cyclic, random-binomial, random-cyclic; SPEC like
        `0:1,2,5;3:0,4` (source:destinations;...), or K multicasts from distinct random
        sources to D random ranks each (half the ranks); SEED seeds the draws and the random-*
        primary agents (1); multicast m is `buf` at offset m*S, S bytes (8); --topology
        FILE is --network FILE, and MPICAST_SWITCH_TOPOLOGY names it when neither is given
  dot FILE
        print the schedule as a Graphviz digraph
  bound FILE --every K [-o OUT] [--dialect D]
        the same program with a dummy action (calc 0) after every K actions of each rank,
        so that a sliding window (MPICAST_GOAL_WINDOW) never holds more than K pending
        dependency counts (the GOAL paper's bound on pending completions), at the price of
        parallelism across the dummies
  run FILE -n N [--mpi openmpi|mpich] [--buffer NAME=SIZE]... [--reps R] [--check]
        [--expect bcast|sum-int32] [--dry-run]
        check FILE as `check` does (and that it fits N ranks and names no buffer left out),
        then run it on N ranks: mpirun.openmpi (default) or mpiexec.mpich
        launches mpicast-goal-run ($MPICAST_GOAL_RUNNER, else next to this executable,
        else build/<mpi>/bin/ under the current directory). Without MPICAST_IFACE in the
        environment the ranks get MPICAST_IFACE=lo MPICAST_TTL=0 (this host's loopback
        only) and, unless MPICAST_TOPO is set, MPICAST_TOPO=flat, so that the multicast
        actions multicast between ranks of one host instead of going point to point.
        --check: `buf` must end identical on every rank; --expect bcast: also equal to rank
        0's (the runner's fill pattern), --expect sum-int32: to the int32 sum of every rank's
        initial `buf`; --dry-run prints the command

FILE may be `-` for standard input. Exit status: 0 fine, 1 errors found, 2 bad usage.";

#[derive(Debug)]
enum Fail {
    /// Bad usage: one line, and a pointer to the help (exit 2).
    Usage(String),
    /// Bad usage that its one line explains in full (exit 2).
    UsageLine(String),
    /// A usage text for stderr (exit 2): a command given nothing to do.
    UsageText(&'static str),
    Errors,
    Io(String),
    /// Reported already; exit with this status.
    Exit(u8),
}

/// What `args` (without the program name) asks for, and the help its usage errors point to.
fn dispatch(args: &[String]) -> (Result<(), Fail>, &'static str) {
    let top = "mpicast --help";
    match args.first().map(String::as_str) {
        None => (Err(Fail::UsageText(USAGE)), top),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            (Ok(()), top)
        }
        Some("help") => match args.get(1).map(String::as_str) {
            None => {
                println!("{USAGE}");
                (Ok(()), top)
            }
            Some("goal") => {
                println!("{GOAL_USAGE}");
                (Ok(()), top)
            }
            Some("topo") => {
                println!("{}", topo::USAGE);
                (Ok(()), top)
            }
            Some("sim") => {
                println!("{}", sim_cmd::USAGE);
                (Ok(()), top)
            }
            Some("doctor") => {
                println!("{}", doctor_cmd::USAGE);
                (Ok(()), top)
            }
            Some("tune") => {
                println!("{}", tune_cmd::USAGE);
                (Ok(()), top)
            }
            Some(c) => (Err(Fail::Usage(format!("no command `{c}`"))), top),
        },
        Some("-V" | "--version") => {
            println!("mpicast {}", env!("CARGO_PKG_VERSION"));
            (Ok(()), top)
        }
        Some("doctor") => (doctor_cmd::run(&args[1..]), "mpicast doctor --help"),
        Some("goal") => (goal_cmd(&args[1..]), "mpicast goal --help"),
        Some("topo") => (topo_cmd(&args[1..]), "mpicast topo --help"),
        Some("tune") => (tune_cmd::run(&args[1..]), "mpicast tune --help"),
        Some("sim") if args.get(1).is_some_and(|a| a == "sweep") => {
            (sim_sweep::run(&args[2..]), "mpicast sim sweep --help")
        }
        Some("sim") => (sim_cmd::run(&args[1..]), "mpicast sim --help"),
        Some(o) if o.starts_with('-') => (Err(Fail::Usage(format!("unknown option `{o}`"))), top),
        Some(other) => (Err(Fail::Usage(format!("unknown command `{other}`"))), top),
    }
}

/// What a panic prints instead of Rust's message and backtrace: one line. A failed write to
/// standard output (a closed pipe) is said as such; anything else is a bug of mpicast.
fn panic_line(
    payload: &(dyn std::any::Any + Send),
    location: Option<&std::panic::Location<'_>>,
) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    let what = what.lines().next().unwrap_or(what);
    if what.starts_with("failed printing to std") {
        return format!("mpicast: {what}");
    }
    let at = location
        .map(|l| format!(" (at {}:{})", l.file(), l.line()))
        .unwrap_or_default();
    format!("mpicast: internal error: {what}{at}")
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("{}", panic_line(info.payload(), info.location()))
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A panic has said its line (the hook); it ends the command with status 1.
    let Ok((result, help)) = std::panic::catch_unwind(|| dispatch(&args)) else {
        return ExitCode::from(1);
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Errors) => ExitCode::from(1),
        Err(Fail::Exit(code)) => ExitCode::from(code),
        Err(Fail::Io(m)) => {
            eprintln!("mpicast: {m}");
            ExitCode::from(1)
        }
        Err(Fail::Usage(m)) => {
            eprintln!("mpicast: {m} (see `{help}`)");
            ExitCode::from(2)
        }
        Err(Fail::UsageLine(m)) => {
            eprintln!("mpicast: {m}");
            ExitCode::from(2)
        }
        Err(Fail::UsageText(u)) => {
            eprintln!("{u}");
            ExitCode::from(2)
        }
    }
}

/// Options common to the subcommands, parsed in one pass.
#[derive(Default)]
struct Opts {
    positional: Vec<String>,
    out: Option<String>,
    dialect: Option<Dialect>,
    buffers: Vec<(String, usize)>,
    ranks: Option<u32>,
    root: Option<u32>,
    size: Option<usize>,
    ways: Option<u32>,
    segment: Option<usize>,
    ppn: Option<u32>,
    every: Option<usize>,
    expect: Option<String>,
    op: Option<Func>,
    mm: MmcastOpts,
    mpi: Option<run::Mpi>,
    reps: Option<u64>,
    check: bool,
    dry_run: bool,
}

fn num<T: limits::Int>(flag: &str, v: &str) -> Result<T, Fail> {
    limits::parse_int(flag, v).map_err(Fail::Usage)
}

fn parse_func(v: &str) -> Result<Func, Fail> {
    let bad = || Fail::Usage(format!("--op wants a function like sumInt32, not `{v}`"));
    let op = Opcode::ALL
        .into_iter()
        .find(|o| v.starts_with(o.name()))
        .ok_or_else(bad)?;
    let ty = Dtype::from_name(&v[op.name().len()..]).ok_or_else(bad)?;
    Predef::new(op, ty).map(Func::Predef).ok_or_else(bad)
}

fn opts(args: &[String]) -> Result<Opts, Fail> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| Fail::Usage(format!("{flag} needs a value")))
        };
        match a.as_str() {
            "-o" | "--output" => o.out = Some(value(a)?),
            "--dialect" => {
                o.dialect = Some(match value(a)?.as_str() {
                    "paper" => Dialect::Paper,
                    "loggopsim" | "lgs" => Dialect::LogGopSim,
                    d => return Err(Fail::Usage(format!("unknown dialect `{d}`"))),
                })
            }
            "--buffer" | "-b" => {
                let v = value(a)?;
                let (name, size) = v
                    .split_once('=')
                    .ok_or_else(|| Fail::Usage(format!("--buffer wants NAME=SIZE, not `{v}`")))?;
                o.buffers.push((name.to_string(), num("--buffer", size)?));
            }
            "--ranks" | "-n" => o.ranks = Some(num(a, &value(a)?)?),
            "--root" => o.root = Some(num(a, &value(a)?)?),
            "--size" => o.size = Some(num(a, &value(a)?)?),
            "--ways" => o.ways = Some(num(a, &value(a)?)?),
            "--segment" => o.segment = Some(num(a, &value(a)?)?),
            "--ppn" => o.ppn = Some(num(a, &value(a)?)?),
            "--every" => {
                let k: usize = num(a, &value(a)?)?;
                if k == 0 {
                    return Err(Fail::Usage("--every wants at least 1".into()));
                }
                o.every = Some(k)
            }
            "--op" => o.op = Some(parse_func(&value(a)?)?),
            f if MmcastOpts::takes(f) => {
                let v = value(f)?;
                o.mm.take(f, &v)?
            }
            "--mpi" => {
                let v = value(a)?;
                o.mpi = Some(run::Mpi::from_name(&v).ok_or_else(|| {
                    Fail::Usage(format!("--mpi wants openmpi or mpich, not `{v}`"))
                })?)
            }
            "--reps" => {
                let r: u64 = num(a, &value(a)?)?;
                if !(1..=100_000_000).contains(&r) {
                    return Err(Fail::Usage("--reps wants 1 to 100000000".into()));
                }
                o.reps = Some(r)
            }
            "--check" => o.check = true,
            "--expect" => {
                let v = value(a)?;
                if v != "bcast" && v != "sum-int32" {
                    return Err(Fail::Usage(format!(
                        "--expect wants bcast or sum-int32, not `{v}`"
                    )));
                }
                o.expect = Some(v);
                o.check = true;
            }
            "--dry-run" => o.dry_run = true,
            s if s.starts_with('-') && s != "-" => {
                return Err(Fail::Usage(format!("unknown option `{s}`")))
            }
            _ => o.positional.push(a.clone()),
        }
    }
    Ok(o)
}

fn read_input(path: &str) -> Result<Vec<u8>, Fail> {
    if path == "-" {
        let mut v = Vec::new();
        std::io::stdin()
            .read_to_end(&mut v)
            .map_err(|e| Fail::Io(format!("standard input: {e}")))?;
        return Ok(v);
    }
    std::fs::read(path).map_err(|e| Fail::Io(format!("{path}: {e}")))
}

/// Text in either dialect or a binary schedule; parse errors and warnings go to stderr.
fn load(path: &str, dialect: Option<Dialect>) -> Result<Parsed, Fail> {
    load_bytes(path, &read_input(path)?, dialect)
}

/// `load` of what was read from `path` already (standard input can be read only once).
fn load_bytes(path: &str, bytes: &[u8], dialect: Option<Dialect>) -> Result<Parsed, Fail> {
    if bytes.starts_with(&binary::MAGIC) {
        return match binary::load(bytes) {
            Ok(program) => Ok(Parsed {
                program,
                source: Default::default(),
                warnings: Vec::new(),
            }),
            Err(e) => {
                eprintln!("{path}: error: {e}");
                Err(Fail::Errors)
            }
        };
    }
    if goal::lgsbin::is_lgs_binary(bytes) {
        return match goal::lgsbin::load(bytes) {
            Ok(program) => Ok(Parsed {
                program,
                source: Default::default(),
                warnings: Vec::new(),
            }),
            Err(e) => {
                eprintln!("{path}: error: {e}");
                Err(Fail::Errors)
            }
        };
    }
    let parsed = match dialect {
        Some(d) => goal::parse(bytes, d),
        None => goal::parse_any(bytes),
    };
    match parsed {
        Ok(p) => {
            for w in &p.warnings {
                eprintln!("{}", w.render(path));
            }
            Ok(p)
        }
        Err(e) => {
            eprintln!("{}", e.render(path));
            Err(Fail::Errors)
        }
    }
}

fn one_file(o: &Opts, cmd: &str) -> Result<String, Fail> {
    match o.positional.as_slice() {
        [f] => Ok(f.clone()),
        [] => Err(Fail::Usage(format!("{cmd} needs a FILE"))),
        more => Err(Fail::Usage(format!(
            "{cmd} takes one FILE, got {}",
            more.join(" ")
        ))),
    }
}

fn write_output(path: Option<&str>, bytes: &[u8]) -> Result<(), Fail> {
    match path {
        None | Some("-") => std::io::stdout()
            .write_all(bytes)
            .map_err(|e| Fail::Io(format!("standard output: {e}"))),
        Some(p) => std::fs::write(p, bytes).map_err(|e| Fail::Io(format!("{p}: {e}"))),
    }
}

fn text(p: &Program, dialect: Dialect) -> Result<String, Fail> {
    match dialect {
        Dialect::Paper => Ok(print::to_paper(p)),
        Dialect::LogGopSim => {
            if print::uses_buffers(p) {
                eprintln!(
                    "mpicast: note: the LogGOPSim dialect keeps sizes only; buffer offsets are \
                     dropped"
                );
            }
            print::to_loggopsim(p).map_err(|e| Fail::Io(e.to_string()))
        }
    }
}

fn goal_cmd(args: &[String]) -> Result<(), Fail> {
    let Some(cmd) = args.first() else {
        return Err(Fail::UsageText(GOAL_USAGE));
    };
    if matches!(cmd.as_str(), "-h" | "--help" | "help")
        || args[1..].iter().any(|a| a == "-h" || a == "--help")
    {
        println!("{GOAL_USAGE}");
        return Ok(());
    }
    let o = opts(&args[1..])?;
    match cmd.as_str() {
        "check" => {
            let f = one_file(&o, "check")?;
            let (_, summary, errors) = check(&f, &o)?;
            println!("{summary}");
            if errors > 0 {
                return Err(Fail::Errors);
            }
            Ok(())
        }
        "asm" => {
            let f = one_file(&o, "asm")?;
            let out = o
                .out
                .as_deref()
                .ok_or_else(|| Fail::Usage("asm needs -o OUT".into()))?;
            let p = load(&f, o.dialect)?;
            let bin = binary::assemble(&p.program).map_err(Fail::Io)?;
            write_output(Some(out), &bin)
        }
        "disasm" => {
            let f = one_file(&o, "disasm")?;
            let p = load(&f, None)?;
            let d = o.dialect.unwrap_or(p.program.dialect);
            write_output(o.out.as_deref(), text(&p.program, d)?.as_bytes())
        }
        "dot" => {
            let f = one_file(&o, "dot")?;
            let p = load(&f, o.dialect)?;
            write_output(o.out.as_deref(), dot::to_dot(&p.program).as_bytes())
        }
        "gen" => {
            let name = match o.positional.as_slice() {
                [a] => a.clone(),
                [] => return Err(Fail::Usage("gen needs an ALGO".into())),
                more => {
                    return Err(Fail::Usage(format!(
                        "gen takes one ALGO, got {}",
                        more.join(" ")
                    )))
                }
            };
            if let Some(algo) = gen_mmcast::algo_of(&name) {
                let p = mmcast_program(algo, &o.mm, o.ranks, o.size.unwrap_or(8))?;
                return write_program(&o, &p);
            }
            let algo = algo_from_name(&name, o.ways, o.op)
                .ok_or_else(|| unknown_algorithm(&name))?
                .with_segment(o.segment)
                .with_ppn(o.ppn);
            o.mm.refuse(true)?;
            let n = o
                .ranks
                .ok_or_else(|| Fail::Usage("gen needs --ranks N".into()))?;
            let size = o.size.unwrap_or(8);
            let (actions, deps) = limits::program_size(algo, n, size);
            let need = limits::gen_bytes(u64::from(n), actions, deps)
                .saturating_add(limits::generator_bytes(algo, n));
            limits::check_memory(&format!("goal gen {name} --ranks {n}"), need)
                .map_err(Fail::UsageLine)?;
            let p = gen::generate(algo, n, o.root.unwrap_or(0), size).map_err(Fail::Usage)?;
            write_program(&o, &p)
        }
        "bound" => {
            let f = one_file(&o, "bound")?;
            let k = o
                .every
                .ok_or_else(|| Fail::Usage("bound needs --every K".into()))?;
            let mut p = load(&f, o.dialect)?.program;
            for rp in &mut p.ranks {
                let (t, origin) = sched::window::bounded(&rp.schedule, k);
                let pick = |o: &Option<u32>| o.map(|o| o as usize);
                rp.labels = origin
                    .iter()
                    .map(|o| pick(o).and_then(|o| rp.labels[o].clone()))
                    .collect();
                rp.hints = origin
                    .iter()
                    .map(|o| pick(o).map_or(goal::Hint::default(), |o| rp.hints[o]))
                    .collect();
                rp.schedule = t;
            }
            let d = o.dialect.unwrap_or(p.dialect);
            write_output(o.out.as_deref(), text(&p, d)?.as_bytes())
        }
        "run" => run_cmd(&o),
        other => Err(Fail::Usage(format!("unknown goal command `{other}`"))),
    }
}

/// `mpicast topo ...`: see `topo::USAGE`.
fn topo_cmd(args: &[String]) -> Result<(), Fail> {
    if args.is_empty() {
        return Err(Fail::UsageText(topo::USAGE));
    }
    if args[0] == "help" || args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{}", topo::USAGE);
        return Ok(());
    }
    // Written as it is made: at a million ranks the text is hundreds of MiB.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match topo::run_to(args, &mut out) {
        Ok(()) => out
            .flush()
            .map_err(|e| Fail::Io(format!("standard output: {e}"))),
        Err(topo::Error::Usage(m)) => Err(Fail::Usage(m)),
        Err(topo::Error::Failed(m)) => Err(Fail::Io(m)),
        Err(topo::Error::Limit(m)) => Err(Fail::UsageLine(m)),
    }
}

/// `goal check`'s work: loads and validates `f` (diagnostics to stderr); gives the program,
/// the summary line and the number of errors.
fn check(f: &str, o: &Opts) -> Result<(Program, String, usize), Fail> {
    let p = load(f, o.dialect)?;
    let sizes = BufferSizes(o.buffers.iter().cloned().collect());
    for (name, _) in &o.buffers {
        if p.program.slot_of(name).is_none() {
            eprintln!("{f}: warning: no action uses buffer `{name}`");
        }
    }
    let diags = validate::validate(&p.program, Some(&p.source), &sizes);
    for d in &diags {
        eprintln!("{}", d.render(f));
    }
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors + p.warnings.len();
    let summary = format!(
        "{f}: {} dialect, {} ranks, {} actions: {errors} errors, {warnings} warnings",
        p.program.dialect.name(),
        p.program.num_ranks(),
        p.program.action_count()
    );
    Ok((p.program, summary, errors))
}

/// `goal gen`'s output: text in the asked dialect, or binary to a `.bin` file.
fn write_program(o: &Opts, p: &goal::Program) -> Result<(), Fail> {
    match o.out.as_deref() {
        Some(path) if path.ends_with(".bin") => {
            let bin = binary::assemble(p).map_err(Fail::Io)?;
            write_output(Some(path), &bin)
        }
        out => write_output(
            out,
            text(p, o.dialect.unwrap_or(Dialect::Paper))?.as_bytes(),
        ),
    }
}

/// The usage error of an unknown generator, listing the known ones.
fn unknown_algorithm(name: &str) -> Fail {
    Fail::UsageLine(format!(
        "unknown algorithm `{name}`; known: {}, {}",
        gen::NAMES.join(", "),
        gen_mmcast::names().join(", ")
    ))
}

/// The options of the `mmcast-*` generators (`goal::gen_mmcast`), shared by `goal gen` and
/// `sim --gen`.
#[derive(Default)]
pub(crate) struct MmcastOpts {
    network: Option<String>,
    mcasts: Option<String>,
    k: Option<u32>,
    dests: Option<u32>,
    seed: Option<u64>,
}

impl MmcastOpts {
    pub(crate) fn takes(flag: &str) -> bool {
        matches!(
            flag,
            "--network" | "--topology" | "--mcasts" | "--k" | "--dests" | "--seed"
        )
    }

    pub(crate) fn take(&mut self, flag: &str, v: &str) -> Result<(), Fail> {
        match flag {
            "--network" | "--topology" => self.network = Some(v.to_string()),
            "--mcasts" => self.mcasts = Some(v.to_string()),
            "--k" => self.k = Some(num(flag, v)?),
            "--dests" => self.dests = Some(num(flag, v)?),
            _ => self.seed = Some(num(flag, v)?),
        }
        Ok(())
    }

    /// A usage error when an option of the `mmcast-*` generators comes with another one
    /// (`network`: whether `--network` counts; `sim` takes it for every program).
    pub(crate) fn refuse(&self, network: bool) -> Result<(), Fail> {
        let given = [
            ("--network", network && self.network.is_some()),
            ("--mcasts", self.mcasts.is_some()),
            ("--k", self.k.is_some()),
            ("--dests", self.dests.is_some()),
            ("--seed", self.seed.is_some()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((f, _)) => Err(Fail::Usage(format!(
                "{f} is for the mmcast-* generators only"
            ))),
            None => Ok(()),
        }
    }
}

/// The program of an `mmcast-*` generator: ranks and switches from `--network`, the
/// multicasts from `--mcasts` or drawn by `--k`/`--dests`/`--seed`, `size` bytes each.
pub(crate) fn mmcast_program(
    algo: algo::agents::MmcastAlgo,
    m: &MmcastOpts,
    ranks: Option<u32>,
    size: usize,
) -> Result<goal::Program, Fail> {
    let name = format!("{}{}", gen_mmcast::PREFIX, algo.name());
    if ranks.is_some() {
        return Err(Fail::Usage(format!(
            "{name} takes its ranks from --network, not --ranks"
        )));
    }
    // The switch topology: the option (`--network` or its synonym `--topology`), else the
    // library's MPICAST_SWITCH_TOPOLOGY.
    let from_env = std::env::var("MPICAST_SWITCH_TOPOLOGY")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let f = m
        .network
        .as_deref()
        .or(from_env.as_deref())
        .ok_or_else(|| {
            Fail::Usage(format!(
                "{name} needs --network FILE (or --topology FILE, or MPICAST_SWITCH_TOPOLOGY)"
            ))
        })?;
    let seed = m.seed.unwrap_or(1);
    let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
    let net = sim::Network::parse(&text, f).map_err(Fail::Io)?;
    let mcasts = match (&m.mcasts, m.k) {
        (Some(_), Some(_)) => {
            return Err(Fail::Usage("give --mcasts or --k, not both".into()));
        }
        (None, None) => {
            return Err(Fail::Usage(format!("{name} needs --mcasts SPEC or --k K")));
        }
        (Some(spec), None) => {
            if m.dests.is_some() {
                return Err(Fail::Usage("--dests goes with --k, not --mcasts".into()));
            }
            gen_mmcast::parse_spec(spec).map_err(Fail::Usage)?
        }
        (None, Some(k)) => {
            gen_mmcast::draw(gen_mmcast::ranks_of(&net), k, m.dests, seed).map_err(Fail::Usage)?
        }
    };
    gen_mmcast::generate(&net, algo, &mcasts, size, seed).map_err(Fail::Usage)
}

/// `goal run`: check, find the runner, exec the launcher (or print it with --dry-run).
fn run_cmd(o: &Opts) -> Result<(), Fail> {
    let f = one_file(o, "run")?;
    if f == "-" {
        return Err(Fail::Usage(
            "run needs a FILE that every rank can read, not `-`".into(),
        ));
    }
    let ranks = o
        .ranks
        .ok_or_else(|| Fail::Usage("run needs -n N (the number of ranks)".into()))?;
    if ranks == 0 {
        return Err(Fail::Usage("-n wants at least 1 rank".into()));
    }
    let (program, summary, errors) = check(&f, o)?;
    if errors > 0 {
        eprintln!("{summary}");
        return Err(Fail::Errors);
    }
    let problems = run::problems(&program, ranks, &o.buffers);
    if !problems.is_empty() {
        for m in &problems {
            eprintln!("{f}: error: {m}");
        }
        return Err(Fail::Exit(2));
    }
    let mpi = o.mpi.unwrap_or(run::Mpi::OpenMpi);
    let runner = run::find_runner(
        std::env::var_os("MPICAST_GOAL_RUNNER"),
        std::env::current_exe().ok(),
        std::path::Path::new(""),
        mpi,
    )
    .map_err(Fail::Io)?;
    let spec = run::RunSpec {
        mpi,
        ranks,
        runner: &runner,
        file: &f,
        buffers: &o.buffers,
        reps: o.reps,
        check: o.check,
        expect: o.expect.as_deref(),
    };
    let root = run::is_root();
    let l = run::launch(
        &spec,
        &|v| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned()),
        root,
    );
    if o.dry_run {
        println!("{}", run::render(&l));
        return Ok(());
    }
    if let Some(note) = run::loopback_note(&l) {
        eprintln!("mpicast: {note}");
    }
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&l.program)
        .args(&l.args)
        .envs(l.env.iter().map(|(k, v)| (k, v)))
        .exec();
    Err(Fail::Io(format!("cannot run {}: {err}", run::render(&l))))
}

#[cfg(test)]
mod tests {
    use super::panic_line;

    #[test]
    fn a_panic_is_one_line_without_rust_internals() {
        let at = std::panic::Location::caller();
        assert_eq!(
            panic_line(
                &"index out of bounds: the len is 3 but the index is 5",
                Some(at)
            ),
            format!(
                "mpicast: internal error: index out of bounds: the len is 3 but the index is 5 \
                 (at {}:{})",
                at.file(),
                at.line()
            )
        );
        let owned: Box<dyn std::any::Any + Send> = Box::new(String::from("first\nsecond"));
        assert_eq!(panic_line(&*owned, None), "mpicast: internal error: first");
        assert_eq!(
            panic_line(
                &"failed printing to stdout: Broken pipe (os error 32)",
                None
            ),
            "mpicast: failed printing to stdout: Broken pipe (os error 32)"
        );
        assert_eq!(
            panic_line(&5u8, None),
            "mpicast: internal error: a panic without a message"
        );
    }
}
