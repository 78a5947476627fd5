//! `mpicast sim sweep`: times generated programs over a range of rank counts and sizes,
//! writes one CSV row per point and, on request, plots simulated time against rank count. Each
//! program is dropped before the next is generated, so memory is that of the largest point.

use crate::goal::gen;
use crate::sim::{simulate_flat, Flat, Options, Outcome, Params, SimError};
use crate::sim_cmd::{algo_named, ParamOpts};
use crate::svg::{self, num, Key};
use crate::{num as parse_num, parse_func, Fail};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// `mpicast sim sweep --help`.
pub const USAGE: &str = "\
usage: mpicast sim sweep --gen ALGO[,ALGO...] --ranks LIST [--size LIST] [--root R] [--ways W]
                         [--op FUNC] [--segment BYTES] [--ppn K] [--csv OUT.csv]
                         [--svg OUT.svg]
                         [parameter options]

Generates and simulates every ALGO (generators of `mpicast goal gen`) at every size and rank
count, and writes one CSV row per point: algo,size,ranks,max_ns,events,seconds_of_simulation
(the simulated end of the last rank, the events processed, and the wall-clock seconds the
simulation took, not counting the generation). LIST is numbers separated by commas, where
A..B stands for A, 2A, 4A, ... up to B: `8,64,512`, `8..1048576`, `4..64,100`. --size
defaults to 8.

  --csv OUT.csv     write the rows there instead of to standard output
  --svg OUT.svg     also plot simulated time against ranks (both axes logarithmic), one line
                    per algorithm and size
  -L -o -g -G -O -S N, --set NAME=VALUE, --params FILE   the parameters, as for `mpicast sim`

A line per finished point goes to standard error (on a terminal, one line that is rewritten).
Exit status: 0 fine, 1 errors found (a program that cannot finish), 2 bad usage.";

/// The numbers of `text`: comma-separated items, each `N` or `A..B` (A, 2A, 4A, ... while at
/// most B), each at least `min`; sorted, without repeats.
pub fn parse_list(flag: &str, text: &str, min: u64) -> Result<Vec<u64>, String> {
    let number = |s: &str| -> Result<u64, String> {
        let v: u64 = s.trim().parse().map_err(|e: std::num::ParseIntError| {
            if *e.kind() == std::num::IntErrorKind::PosOverflow {
                format!("{flag} wants numbers of at most {}, not `{s}`", u64::MAX)
            } else {
                format!("{flag} wants numbers such as 8,64 or 8..1024, not `{s}`")
            }
        })?;
        if v < min {
            return Err(format!("{flag} wants numbers of at least {min}, not {v}"));
        }
        Ok(v)
    };
    let mut out = Vec::new();
    for item in text.split(',') {
        match item.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a == 0 {
                    return Err(format!("{flag}: a range doubles, so it cannot start at 0"));
                }
                if a > b {
                    return Err(format!("{flag}: the range {a}..{b} is empty"));
                }
                let mut v = a;
                while v <= b {
                    out.push(v);
                    v = match v.checked_mul(2) {
                        Some(w) => w,
                        None => break,
                    };
                }
            }
            None => out.push(number(item)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// One simulated point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub algo: String,
    pub size: u64,
    pub ranks: u32,
    pub max_ns: u64,
    pub events: u64,
    /// Wall-clock seconds that `simulate` took.
    pub seconds: f64,
}

pub const CSV_HEADER: &str = "algo,size,ranks,max_ns,events,seconds_of_simulation";

/// The CSV row of `p` (without its newline). Algorithm names are the generators' own, which
/// need no quoting.
pub fn csv_row(p: &Point) -> String {
    format!(
        "{},{},{},{},{},{:.6}",
        p.algo, p.size, p.ranks, p.max_ns, p.events, p.seconds
    )
}

/// One line of the plot: an algorithm at one size.
pub struct Series {
    pub label: String,
    /// (ranks, simulated ns), by increasing ranks.
    pub points: Vec<(u32, u64)>,
}

// The tab10 palette; past ten series, colours come round again with a dash.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const LEFT: f64 = 80.0;
const TOP: f64 = 48.0;
const PLOT_W: f64 = 720.0;
const PLOT_H: f64 = 440.0;
const LEGEND_W: f64 = 240.0;

/// Ticks of the log-scaled time axis over [`lo`, `hi`] (powers of ten): every decade, and 2
/// and 5 times it when the axis spans at most two decades.
fn time_ticks(lo: i32, hi: i32) -> Vec<f64> {
    let mut t = Vec::new();
    for k in lo..=hi {
        let d = 10f64.powi(k);
        t.push(d);
        if hi - lo <= 2 && k < hi {
            t.push(2.0 * d);
            t.push(5.0 * d);
        }
    }
    t
}

/// The plot's scales: ranks from 2^x0 to 2^x1 across, time from 10^y0 to 10^y1 ns up.
#[derive(Clone, Copy)]
struct Axes {
    x0: f64,
    x1: f64,
    y0: i32,
    y1: i32,
}

impl Axes {
    fn x(&self, r: u32) -> f64 {
        LEFT + ((r.max(1) as f64).log2() - self.x0) / (self.x1 - self.x0) * PLOT_W
    }

    fn y(&self, v: f64) -> f64 {
        TOP + PLOT_H - (v.log10() - self.y0 as f64) / (self.y1 - self.y0) as f64 * PLOT_H
    }
}

/// A time of 0 (a program with nothing to do) is drawn at 1 ns: a log axis has no 0.
fn drawn_ns(ns: u64) -> f64 {
    ns.max(1) as f64
}

/// The plot of `series`: simulated time (log10) against ranks (log2), a legend and the
/// parameters.
pub fn plot(series: &[Series], prm: &Params) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (rmin, rmax) = all().fold((u32::MAX, 1u32), |(a, b), &(r, _)| (a.min(r), b.max(r)));
    let rmin = rmin.min(rmax).max(1);
    let (mut x0, mut x1) = ((rmin as f64).log2(), (rmax as f64).log2());
    if x1 - x0 < 1.0 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    let t = drawn_ns;
    let (tmin, tmax) = all().fold((f64::MAX, 1.0f64), |(a, b), &(_, ns)| {
        (a.min(t(ns)), b.max(t(ns)))
    });
    let tmin = tmin.min(tmax);
    let y0 = tmin.log10().floor() as i32;
    let mut y1 = tmax.log10().ceil() as i32;
    if y1 == y0 {
        y1 += 1;
    }
    let axes = Axes { x0, x1, y0, y1 };
    let (bottom, right) = (TOP + PLOT_H, LEFT + PLOT_W);
    let width = right + LEGEND_W;
    let legend_h = series.len() as f64 * 16.0;
    let height = (bottom + 52.0).max(TOP + legend_h + 8.0);

    let mut s = svg::open(width, height);
    svg::text(
        &mut s,
        LEFT,
        18.0,
        "start",
        "title",
        "mpicast sim sweep: simulated time against ranks",
    );
    svg::text(
        &mut s,
        LEFT,
        34.0,
        "start",
        "params",
        &format!("{prm} (ns; S in bytes)"),
    );
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>",
        num(LEFT),
        num(TOP),
        num(PLOT_W),
        num(PLOT_H)
    );
    rank_axis(&mut s, axes);
    time_axis(&mut s, axes);
    let keys = curves(&mut s, axes, series);
    svg::legend(
        &mut s,
        right + 16.0,
        TOP,
        &keys,
        keys.len().max(1),
        LEGEND_W,
    );
    svg::close(&mut s);
    s
}

/// Rank ticks at the powers of two, labelled at most about twelve times.
fn rank_axis(s: &mut String, axes: Axes) {
    let bottom = TOP + PLOT_H;
    let _ = writeln!(s, "<g class=\"x-axis\">");
    let ks: Vec<i32> = (axes.x0.ceil() as i32..=axes.x1.floor() as i32).collect();
    let every = ks.len().div_ceil(12).max(1);
    for (i, &k) in ks.iter().enumerate() {
        let tx = axes.x(1u32 << k);
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#dddddd\"/>",
            num(tx),
            num(TOP),
            num(bottom + 4.0)
        );
        if i % every == 0 {
            svg::text(
                s,
                tx,
                bottom + 16.0,
                "middle",
                "x-tick",
                &(1u64 << k).to_string(),
            );
        }
    }
    svg::text(
        s,
        LEFT + PLOT_W / 2.0,
        bottom + 36.0,
        "middle",
        "axis-label",
        "ranks (log scale)",
    );
    let _ = writeln!(s, "</g>");
}

/// The time axis: its ticks ([`time_ticks`]) with grid lines, and its label.
fn time_axis(s: &mut String, axes: Axes) {
    let _ = writeln!(s, "<g class=\"y-axis\">");
    for v in time_ticks(axes.y0, axes.y1) {
        let ty = axes.y(v);
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#dddddd\"/>",
            num(LEFT - 4.0),
            num(ty),
            num(LEFT + PLOT_W)
        );
        svg::text(s, LEFT - 6.0, ty + 4.0, "end", "y-tick", &svg::duration(v));
    }
    let (lx, ly) = (16.0, TOP + PLOT_H / 2.0);
    let _ = writeln!(
        s,
        "<text class=\"axis-label\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" \
         transform=\"rotate(-90 {0} {1})\">simulated time (log scale)</text>",
        num(lx),
        num(ly)
    );
    let _ = writeln!(s, "</g>");
}

/// Each series' line and points, in the colours of the palette (dashed after each round of
/// it); returns their keys for the legend.
fn curves(s: &mut String, axes: Axes, series: &[Series]) -> Vec<Key<'static>> {
    let mut keys = Vec::new();
    for (i, se) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let dash = if (i / PALETTE.len()) % 2 == 1 {
            " stroke-dasharray=\"6 3\""
        } else {
            ""
        };
        let mut d = String::new();
        for (j, &(r, ns)) in se.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{},{}",
                if j == 0 { "M" } else { " L" },
                num(axes.x(r)),
                num(axes.y(drawn_ns(ns)))
            );
        }
        let _ = writeln!(
            s,
            "<path class=\"series\" d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>"
        );
        for &(r, ns) in &se.points {
            let _ = writeln!(
                s,
                "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{colour}\"><title>{}: {r} ranks, {ns} ns</title></circle>",
                num(axes.x(r)),
                num(axes.y(drawn_ns(ns))),
                svg::escape(&se.label)
            );
        }
        keys.push(Key {
            colour,
            line: true,
            label: se.label.clone(),
        });
    }
    keys
}

struct SweepOpts {
    algos: Vec<String>,
    ranks: Vec<u64>,
    sizes: Vec<u64>,
    root: Option<u32>,
    ways: Option<u32>,
    segment: Option<usize>,
    ppn: Option<u32>,
    op: Option<crate::sched::Func>,
    prm: ParamOpts,
    csv: Option<String>,
    svg: Option<String>,
}

fn sweep_opts(args: &[String]) -> Result<SweepOpts, Fail> {
    let mut o = SweepOpts {
        algos: Vec::new(),
        ranks: Vec::new(),
        sizes: vec![8],
        root: None,
        ways: None,
        segment: None,
        ppn: None,
        op: None,
        prm: ParamOpts::default(),
        csv: None,
        svg: None,
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
            "--gen" => o.algos.extend(value(a)?.split(',').map(str::to_string)),
            "--ranks" | "-n" => {
                o.ranks = parse_list(a, &value(a)?, 1).map_err(Fail::Usage)?;
                if let Some(&big) = o.ranks.iter().find(|&&r| r > u32::MAX as u64) {
                    return Err(Fail::Usage(format!(
                        "{a}: {big} ranks are too many (at most {})",
                        u32::MAX
                    )));
                }
            }
            "--size" => o.sizes = parse_list(a, &value(a)?, 0).map_err(Fail::Usage)?,
            "--root" => o.root = Some(parse_num(a, &value(a)?)?),
            "--ways" => o.ways = Some(parse_num(a, &value(a)?)?),
            "--segment" => o.segment = Some(parse_num(a, &value(a)?)?),
            "--ppn" => o.ppn = Some(parse_num(a, &value(a)?)?),
            "--op" => o.op = Some(parse_func(&value(a)?)?),
            "--csv" => o.csv = Some(value(a)?),
            "--svg" => o.svg = Some(value(a)?),
            s => return Err(Fail::Usage(format!("sim sweep: unknown argument `{s}`"))),
        }
    }
    if o.algos.is_empty() {
        return Err(Fail::Usage("sim sweep needs --gen ALGO[,ALGO...]".into()));
    }
    if o.ranks.is_empty() {
        return Err(Fail::Usage("sim sweep needs --ranks LIST".into()));
    }
    Ok(o)
}

/// Where the rows go, flushed after each so that a long sweep can be watched.
fn csv_out(path: Option<&str>) -> Result<Box<dyn Write>, Fail> {
    Ok(match path {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| Fail::Io(format!("{p}: {e}")))?,
        )),
        None => Box::new(std::io::stdout()),
    })
}

/// The algorithms of `o`, each once, by the generators' full names (which rows and legends
/// use), whichever alias was given.
fn full_names(o: &SweepOpts) -> Result<Vec<(&str, gen::Algo)>, Fail> {
    let mut algos: Vec<(&str, gen::Algo)> = Vec::new();
    for name in &o.algos {
        let algo = algo_named(name, o.ways, o.op, o.segment, o.ppn)?;
        let full = gen::NAMES
            .iter()
            .copied()
            .find(|n| {
                gen::algo_from_name(n, o.ways, o.op)
                    .map(|a| a.with_segment(o.segment).with_ppn(o.ppn))
                    == Some(algo)
            })
            .unwrap_or(name.as_str());
        if !algos.iter().any(|&(n, _)| n == full) {
            algos.push((full, algo));
        }
    }
    Ok(algos)
}

/// What can be found wrong before the first point rather than hours into the sweep: a root
/// outside the smallest job, sizes a generator refuses, a point too large for memory, a plot
/// that cannot be written.
fn check_before_running(o: &SweepOpts, algos: &[(&str, gen::Algo)]) -> Result<(), Fail> {
    let smallest = o.ranks[0];
    if let Some(root) = o.root {
        if root as u64 >= smallest {
            return Err(Fail::Usage(format!(
                "--root {root} is not below the smallest rank count, {smallest}"
            )));
        }
    }
    // Sizes a generator refuses (say, an allreduce of 3 bytes of int32) are refused before
    // anything runs: one rank is enough to find out.
    for &(name, algo) in algos {
        for &size in &o.sizes {
            gen::generate(algo, 1, 0, size as usize)
                .map_err(|e| Fail::Usage(format!("{name} with --size {size}: {e}")))?;
        }
    }
    // The largest point must fit in memory (points run one at a time), and the plot must be
    // writable: both found before the first point rather than hours into the sweep.
    for &(name, algo) in algos {
        for &size in &o.sizes {
            for &n in &o.ranks {
                let n = n as u32;
                let (actions, deps) = crate::limits::program_size(algo, n, size as usize);
                let need = crate::limits::sim_bytes(u64::from(n), actions, deps, false)
                    .saturating_add(crate::limits::generator_bytes(algo, n));
                crate::limits::check_memory(
                    &format!("sim sweep: {name} with --size {size} on {n} ranks"),
                    need,
                )
                .map_err(Fail::UsageLine)?;
            }
        }
    }
    if let Some(path) = &o.svg {
        crate::limits::check_writable(path).map_err(Fail::Io)?;
    }

    Ok(())
}

/// One point: the program of `algo` on `n` ranks with messages of `size` bytes, simulated;
/// and how long that took, in seconds.
fn simulate_point(
    algo: gen::Algo,
    n: u32,
    size: u64,
    o: &SweepOpts,
    prm: &Params,
    what: &str,
) -> Result<(Result<Outcome, SimError>, f64), Fail> {
    // Streamed into the simulator's form: at 2^20 ranks the whole Program would
    // take several times the memory.
    let mut program = Flat::new();
    let (actions, deps) = crate::limits::program_size(algo, n, size as usize);
    crate::limits::reserve(&mut program, n, actions, deps)
        .map_err(|e| Fail::Io(format!("{what}: {e}")))?;
    gen::generate_each(algo, n, o.root.unwrap_or(0), size as usize, |s| {
        program.push_schedule(&s, &[])
    })
    .map_err(Fail::Usage)?;
    let clock = Instant::now();
    let result = simulate_flat(&program, prm, Options { trace: false });
    let seconds = clock.elapsed().as_secs_f64();
    drop(program);
    Ok((result, seconds))
}

/// `mpicast sim sweep ...`.
pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.is_empty() {
        return Err(Fail::UsageText(USAGE));
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let o = sweep_opts(args)?;
    let prm = o.prm.params()?;
    let algos = full_names(&o)?;
    check_before_running(&o, &algos)?;

    let io = |what: &str, e: std::io::Error| Fail::Io(format!("{what}: {e}"));
    let csv_name = o.csv.as_deref().unwrap_or("standard output");
    let mut csv = csv_out(o.csv.as_deref())?;
    writeln!(csv, "{CSV_HEADER}").map_err(|e| io(csv_name, e))?;
    let tty = std::io::stderr().is_terminal();
    let total = algos.len() * o.sizes.len() * o.ranks.len();
    let mut done = 0;
    let mut series = Vec::new();
    for &(name, algo) in &algos {
        for &size in &o.sizes {
            let mut points = Vec::new();
            for &n in &o.ranks {
                let n = n as u32;
                let what = format!("{name}, {size} B, {n} ranks");
                if tty {
                    eprint!("\r\x1b[Ksweep [{}/{total}] {what} ...", done + 1);
                }
                let (result, seconds) = simulate_point(algo, n, size, &o, &prm, &what)?;
                let out = match result {
                    Ok(out) => out,
                    Err(e) => {
                        if tty {
                            eprintln!();
                        }
                        eprintln!("{what}: error: {e}");
                        return Err(Fail::Errors);
                    }
                };
                done += 1;
                let p = Point {
                    algo: name.to_string(),
                    size,
                    ranks: n,
                    max_ns: out.max,
                    events: out.events,
                    seconds,
                };
                if tty {
                    eprint!("\r\x1b[K");
                }
                writeln!(csv, "{}", csv_row(&p)).map_err(|e| io(csv_name, e))?;
                csv.flush().map_err(|e| io(csv_name, e))?;
                let line = format!(
                    "sweep [{done}/{total}] {what}: {} ns, {} events, {seconds:.3} s",
                    out.max, out.events
                );
                if tty {
                    eprint!("{line}");
                } else {
                    eprintln!("{line}");
                }
                points.push((n, out.max));
            }
            series.push(Series {
                label: format!("{name}, {size} B"),
                points,
            });
        }
    }
    if tty {
        eprintln!();
    }
    if let Some(path) = &o.svg {
        std::fs::write(path, plot(&series, &prm)).map_err(|e| io(path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_doubling_ranges() {
        let l = |t: &str| parse_list("--ranks", t, 1);
        assert_eq!(l("8,64,512").unwrap(), [8, 64, 512]);
        assert_eq!(l("8..64").unwrap(), [8, 16, 32, 64]);
        assert_eq!(l("8..100").unwrap(), [8, 16, 32, 64]);
        assert_eq!(l("3..3").unwrap(), [3]);
        assert_eq!(l("4..16,12,4").unwrap(), [4, 8, 12, 16]);
        assert_eq!(l("8..1048576").unwrap().len(), 18);
        assert_eq!(l("8..1048576").unwrap().last(), Some(&1048576));
        assert_eq!(parse_list("--size", "0,1..4", 0).unwrap(), [0, 1, 2, 4]);
        // Doubling stops before it overflows.
        assert_eq!(
            parse_list("--size", "9223372036854775808..18446744073709551615", 0).unwrap(),
            [1 << 63]
        );
        assert_eq!(
            l("0").unwrap_err(),
            "--ranks wants numbers of at least 1, not 0"
        );
        assert_eq!(l("64..8").unwrap_err(), "--ranks: the range 64..8 is empty");
        assert_eq!(
            parse_list("--size", "0..8", 0).unwrap_err(),
            "--size: a range doubles, so it cannot start at 0"
        );
        assert_eq!(
            l("8,,16").unwrap_err(),
            "--ranks wants numbers such as 8,64 or 8..1024, not ``"
        );
        assert_eq!(
            l("8..x").unwrap_err(),
            "--ranks wants numbers such as 8,64 or 8..1024, not `x`"
        );
    }

    #[test]
    fn csv_rows_have_the_header_s_columns() {
        let p = Point {
            algo: "binomial-bcast".into(),
            size: 8,
            ranks: 512,
            max_ns: 51_984,
            events: 1534,
            seconds: 0.0012345678,
        };
        assert_eq!(csv_row(&p), "binomial-bcast,8,512,51984,1534,0.001235");
        assert_eq!(
            csv_row(&p).split(',').count(),
            CSV_HEADER.split(',').count()
        );
    }

    fn count(s: &str, needle: &str) -> usize {
        s.matches(needle).count()
    }

    #[test]
    fn the_plot_has_a_line_per_series_and_labelled_log_axes() {
        let series = vec![
            Series {
                label: "binomial-bcast, 8 B".into(),
                points: vec![(8, 16_500), (64, 33_000), (512, 49_500)],
            },
            Series {
                label: "a<b & c".into(),
                points: vec![(8, 5_000), (64, 7_000), (512, 9_000)],
            },
        ];
        let s = plot(&series, &Params::default());
        assert!(s.starts_with("<?xml") && s.ends_with("</svg>\n"));
        assert_eq!(count(&s, "<path class=\"series\""), 2);
        assert_eq!(count(&s, "<circle class=\"point\""), 6);
        // Ranks 8 to 512: a tick at every power of two, at equal distances.
        let ticks: Vec<(f64, String)> = s
            .lines()
            .filter(|l| l.starts_with("<text class=\"x-tick\""))
            .map(|l| {
                let x = l.split("x=\"").nth(1).unwrap().split('"').next().unwrap();
                let label = l.split('>').nth(1).unwrap().split('<').next().unwrap();
                (x.parse().unwrap(), label.to_string())
            })
            .collect();
        let want = ["8", "16", "32", "64", "128", "256", "512"];
        assert_eq!(ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), want);
        for (i, (tx, _)) in ticks.iter().enumerate() {
            let at = LEFT + i as f64 * PLOT_W / 6.0;
            assert!((tx - at).abs() < 0.01, "tick {i} at {tx}, not {at}");
        }
        assert!(!s.contains(">4</text>") && !s.contains(">1024</text>"));
        // Times from 5 µs to 49.5 µs: decades 1 µs to 100 µs, with 2 and 5 between.
        for label in ["1 µs", "2 µs", "5 µs", "10 µs", "20 µs", "50 µs", "100 µs"] {
            assert!(s.contains(&format!(">{label}</text>")), "tick {label}");
        }
        assert!(!s.contains(">200 µs</text>"));
        assert!(s.contains(">ranks (log scale)</text>"));
        assert!(s.contains(">simulated time (log scale)</text>"));
        // The first series starts at the left edge, at the height of 16.5 µs on an axis from
        // 1 µs to 100 µs (above its middle, 10 µs).
        let first = s
            .lines()
            .find(|l| l.starts_with("<path class=\"series\""))
            .unwrap();
        let y_half = TOP + PLOT_H / 2.0;
        let y_16500 = TOP + PLOT_H - (16_500f64.log10() - 3.0) / 2.0 * PLOT_H;
        assert!(
            first.contains(&format!("d=\"M{},{} L", num(LEFT), num(y_16500))),
            "{first}"
        );
        assert!(y_16500 < y_half);
        // Legend labels are escaped; the raw text is nowhere.
        assert!(s.contains(">a&lt;b &amp; c</text>"));
        assert!(!s.contains("a<b"));
    }

    #[test]
    fn a_single_point_still_has_axes() {
        let s = plot(
            &[Series {
                label: "x".into(),
                points: vec![(1, 0)],
            }],
            &Params::default(),
        );
        assert_eq!(count(&s, "<path class=\"series\""), 1);
        assert!(s.contains(">1</text>"), "{s}");
        assert!(s.contains(">1 ns</text>") && s.contains(">10 ns</text>"));
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }
}
