//! `mpicast sim`: times a GOAL program (a file in either text dialect or the binary schedule,
//! or a generated one) in the LogGOPS model of `sim::loggops` and prints when each rank ends,
//! the maximum and, on request, the critical path. This file owns the options and the output;
//! the model is the library's (`src/sim/`).

use crate::goal::{gen, Dialect, Program};
use crate::sim::{critical_path, describe, simulate, Options, Params, SimError};
use crate::{load, num, parse_func, Fail};
use std::fmt::Write;

/// `mpicast sim --help`.
pub const USAGE: &str = "\
usage: mpicast sim FILE [options]
       mpicast sim --gen ALGO --ranks N [--size BYTES] [--root R] [--ways W] [--op FUNC] [options]
       mpicast sim calibrate -n N [--mpi openmpi|mpich] [--sizes LIST] [--reps R] [--out FILE] ...

Simulates a GOAL program in the LogGOPS model (LogGOPSim's rules: docs/sim.md) and prints each
rank's end time (for at most 64 ranks), the maximum, and with --critical-path the chain of
actions that ends last. FILE is text in either dialect or a binary schedule (`-`: standard
input); --gen takes the program from a generator of `mpicast goal gen` (binomial-bcast,
dissemination-allreduce, scout-tree-bcast, scout-linear-bcast, mcast-barrier; --size default 8).

options (times in ns, sizes in bytes; defaults are LogGOPSim's):
  -L N              latency (2500)
  -o N              CPU overhead per message (1500)
  -g N              NIC gap per message (1000)
  -G N              NIC gap per byte (6)
  -O N              CPU overhead per byte (0)
  -S N              largest eager message; larger ones use rendezvous (65535)
  --set NAME=VALUE  any parameter, also the multicast channel's: mL mo mg mG (its own
                    L o g G; default: as point-to-point), mF (datagram payload, 1400),
                    mloss (loss probability per datagram and receiver, 0), mnack (ns before
                    a receiver asks again for a lost tail, 2000000)
  --params FILE     `name value` lines of the same names, `#` comments; options given on
                    the command line override the file
  --critical-path   print the chain of actions that ends last
  --dialect D       read FILE as paper or loggopsim text only

`mpicast sim calibrate` measures ping-pongs on N ranks of this machine's MPI and writes the
fitted parameters as a --params file (`mpicast sim calibrate --help`).

Exit status: 0 fine, 1 errors found (a bad file, a program that cannot finish), 2 bad usage.";

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

struct SimOpts {
    file: Option<String>,
    gen: Option<String>,
    ranks: Option<u32>,
    size: Option<usize>,
    root: Option<u32>,
    ways: Option<u32>,
    op: Option<crate::sched::Func>,
    dialect: Option<Dialect>,
    params_file: Option<String>,
    set: Vec<(String, String)>,
    critical: bool,
}

fn sim_opts(args: &[String]) -> Result<SimOpts, Fail> {
    let mut o = SimOpts {
        file: None,
        gen: None,
        ranks: None,
        size: None,
        root: None,
        ways: None,
        op: None,
        dialect: None,
        params_file: None,
        set: Vec::new(),
        critical: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| Fail::Usage(format!("{flag} needs a value")))
        };
        match a.as_str() {
            "-L" | "-o" | "-g" | "-G" | "-O" | "-S" => {
                let v = value(a)?;
                Params::default()
                    .set_text(&a[1..], &v)
                    .map_err(Fail::Usage)?;
                o.set.push((a[1..].to_string(), v));
            }
            "--set" => {
                let v = value(a)?;
                let Some((name, val)) = v.split_once('=') else {
                    return Err(Fail::Usage(format!("--set wants NAME=VALUE, got `{v}`")));
                };
                Params::default().set_text(name, val).map_err(Fail::Usage)?;
                o.set.push((name.to_string(), val.to_string()));
            }
            "--params" => o.params_file = Some(value(a)?),
            "--critical-path" => o.critical = true,
            "--gen" => o.gen = Some(value(a)?),
            "--ranks" | "-n" => o.ranks = Some(num(a, &value(a)?)?),
            "--size" => o.size = Some(num(a, &value(a)?)?),
            "--root" => o.root = Some(num(a, &value(a)?)?),
            "--ways" => o.ways = Some(num(a, &value(a)?)?),
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

/// `mpicast sim ...`.
pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.is_empty() {
        return Err(Fail::UsageText(USAGE));
    }
    if args[0] == "calibrate" {
        return crate::sim_calibrate::run(&args[1..]);
    }
    if args[0] == "help" || args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let o = sim_opts(args)?;
    let mut prm = Params::default();
    if let Some(f) = &o.params_file {
        let text = std::fs::read_to_string(f).map_err(|e| Fail::Io(format!("{f}: {e}")))?;
        parse_params(&text, f, &mut prm).map_err(Fail::Io)?;
    }
    for (name, v) in &o.set {
        prm.set_text(name, v).map_err(Fail::Usage)?;
    }
    let (name, program) = match (&o.file, &o.gen) {
        (Some(_), Some(_)) => {
            return Err(Fail::Usage("give a FILE or --gen ALGO, not both".into()));
        }
        (None, None) => return Err(Fail::Usage("sim needs a FILE or --gen ALGO".into())),
        (Some(f), None) => (f.clone(), load(f, o.dialect)?.program),
        (None, Some(algo)) => (algo.clone(), generated(&o, algo)?),
    };
    match simulate(&program, &prm, Options { trace: o.critical }) {
        Ok(out) => {
            print!("{}", report(&name, &program, &prm, &out, o.critical));
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

fn generated(o: &SimOpts, name: &str) -> Result<Program, Fail> {
    let algo = gen::algo_from_name(name, o.ways, o.op).ok_or_else(|| {
        Fail::UsageLine(format!(
            "unknown algorithm `{name}`; known: {}",
            gen::NAMES.join(", ")
        ))
    })?;
    let n = o
        .ranks
        .ok_or_else(|| Fail::Usage("--gen needs --ranks N".into()))?;
    gen::generate(algo, n, o.root.unwrap_or(0), o.size.unwrap_or(8)).map_err(Fail::Usage)
}

/// The printed result: a header, per-rank end times up to 64 ranks, the maximum, and the
/// critical path when asked.
fn report(
    name: &str,
    p: &Program,
    prm: &Params,
    out: &crate::sim::Outcome,
    critical: bool,
) -> String {
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
            let rp = &p.ranks[st.rank as usize];
            let label = rp
                .label(st.action)
                .map(|l| format!(" ({l})"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:>12} {:>12} {:>6} {:>7}  {:<16} {}{label}",
                st.start,
                st.end,
                st.rank,
                st.action,
                st.via.name(),
                describe(rp.schedule.op(st.action))
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
            "p.txt:2: unknown parameter `x` (known: L o g G O S mL mo mg mG mF mloss mnack)"
        );
        assert_eq!(err("\n\ng -5"), "p.txt:3: g must not be negative, got `-5`");
        assert_eq!(
            err("G 1.5"),
            "p.txt:1: G wants a non-negative integer, not `1.5`"
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
    fn multicast_parameters_round_trip_through_a_file() {
        let mut p = Params::default();
        parse_params("mL 9000\nmG 80\nmloss 0.025\nmF 8192\n", "p", &mut p).unwrap();
        assert_eq!((p.mcast_l(), p.mcast_o(), p.mcast_gb()), (9000, 1500, 80));
        assert_eq!((p.mcast_loss_ppm, p.mcast_frag), (25_000, 8192));
        let mut q = Params::default();
        parse_params(&p.as_file(), "q", &mut q).unwrap();
        assert_eq!(p, q);
        assert!(p.to_string().contains("mL=9000 mo=1500"));
        assert!(!Params::default().to_string().contains("mL"));
    }
}
