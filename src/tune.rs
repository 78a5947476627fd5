//! Pure: what `mpicast tune` makes of its measurements (docs/tune.md). It reads the lines
//! `mpicast-tune-run` (tools/tune_run.c) prints, sums each curve up (median and quartiles of
//! the per-repetition times) and chooses `MPICAST_MIN_BYTES`, `MPICAST_EAGER_BYTES`,
//! `MPICAST_FRAG_BYTES` and `MPICAST_RCVBUF` from them. It launches nothing and reads no
//! clock; the command line (src/bin/mpicast/tune.rs) owns the run and the output.

use std::fmt;

/// The smallest relative margin between two curves that counts as a difference, whatever the
/// quartiles say: with few repetitions the quartiles of a quiet run can be closer than what a
/// second run would show.
pub const MIN_MARGIN: f64 = 0.05;

/// Repairs above this share of the datagrams sent get a note.
pub const LOSS_NOTE: f64 = 0.01;

/// The library's own default for `MPICAST_EAGER_BYTES`, kept when eager and scouts are even.
pub const DEFAULT_EAGER_BYTES: u64 = 1 << 20;

/// The library's default `MPICAST_RCVBUF`.
pub const DEFAULT_RCVBUF: u64 = 8 << 20;

/// `MPICAST_MIN_BYTES` when mpicast was slower at every size measured: larger than any
/// broadcast the runner can measure (its sizes are `int` counts of bytes).
pub const NEVER_BYTES: u64 = 1 << 30;

/// One curve at one size: the per-repetition times (ns, the slowest rank's) summed up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    pub min: f64,
    pub reps: usize,
}

impl Summary {
    /// Nearest-rank quartiles (the median of an even count is the mean of the middle two).
    /// `None` for no samples or a sample that is not a finite non-negative number.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|t| !t.is_finite() || *t < 0.0) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Summary {
            median,
            p25: rank(0.25),
            p75: rank(0.75),
            min: v[0],
            reps: n,
        })
    }

    /// The interquartile range relative to the median: how much a repetition moves.
    pub fn spread(&self) -> f64 {
        if self.median > 0.0 {
            (self.p75 - self.p25) / self.median
        } else {
            0.0
        }
    }
}

/// The three broadcasts at one size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub bytes: u64,
    pub host: Summary,
    pub eager: Summary,
    pub scouts: Summary,
}

/// One host of the job as the runner saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub ranks: u32,
    /// `net.core.rmem_max`, if readable.
    pub rmem_max: Option<u64>,
    /// What getsockopt(SO_RCVBUF) reported after asking for the run's `rcvbuf` (Linux reports
    /// twice the request it applied).
    pub granted: Option<u64>,
}

/// Everything one run of the runner printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    pub ranks: u32,
    pub reps: u32,
    /// The receive buffer the runner asked for (what the library asks for).
    pub rcvbuf: u64,
    pub hosts: Vec<Host>,
    /// In size order.
    pub points: Vec<Point>,
    /// Host MPI's barrier and mpicast's.
    pub barrier: Option<(Summary, Summary)>,
    pub dgrams_sent: u64,
    pub repairs: u64,
}

/// Reads the runner's stdout. Lines it does not know are skipped (the launcher may add
/// some); a line of a known kind that does not parse is an error naming it, and so is an
/// output without the final `done` (the job ended early).
pub fn parse_runner(text: &str) -> Result<Measured, String> {
    let mut m = Measured::default();
    let mut rows: Vec<(u64, [Option<Summary>; 3])> = Vec::new();
    let mut done = false;
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("runner output line {}: {why}: `{line}`", i + 1);
        let mut w = line.split_whitespace();
        match w.next() {
            Some("tune-run") => {
                if w.next() != Some("1") {
                    return Err(bad("a runner of another version"));
                }
                for kv in w {
                    match kv.split_once('=') {
                        Some(("ranks", v)) => m.ranks = v.parse().map_err(|_| bad("ranks"))?,
                        Some(("reps", v)) => m.reps = v.parse().map_err(|_| bad("reps"))?,
                        Some(("rcvbuf", v)) => m.rcvbuf = v.parse().map_err(|_| bad("rcvbuf"))?,
                        _ => {}
                    }
                }
                header = true;
            }
            Some("host") => {
                let name = w.next().ok_or_else(|| bad("no host name"))?.to_string();
                let mut h = Host {
                    name,
                    ranks: 0,
                    rmem_max: None,
                    granted: None,
                };
                for kv in w {
                    // -1: the runner could not read it.
                    let num = |v: &str| v.parse::<i64>().ok().and_then(|n| u64::try_from(n).ok());
                    match kv.split_once('=') {
                        Some(("ranks", v)) => h.ranks = v.parse().map_err(|_| bad("ranks"))?,
                        Some(("rmem_max", v)) => h.rmem_max = num(v),
                        Some(("granted", v)) => h.granted = num(v),
                        _ => {}
                    }
                }
                m.hosts.push(h);
            }
            Some("bcast") => {
                let bytes: u64 = w
                    .next()
                    .and_then(|b| b.parse().ok())
                    .ok_or_else(|| bad("no size"))?;
                let slot = match w.next() {
                    Some("host") => 0,
                    Some("eager") => 1,
                    Some("scouts") => 2,
                    _ => return Err(bad("unknown mode")),
                };
                let s = times(w).ok_or_else(|| bad("times"))?;
                let at = match rows.iter().position(|(b, _)| *b == bytes) {
                    Some(at) => at,
                    None => {
                        rows.push((bytes, [None; 3]));
                        rows.len() - 1
                    }
                };
                rows[at].1[slot] = Some(s);
            }
            Some("barrier") => {
                let which = w.next();
                let s = times(w).ok_or_else(|| bad("times"))?;
                let (host, mcast) = m.barrier.get_or_insert((s, s));
                match which {
                    Some("host") => *host = s,
                    Some("mcast") => *mcast = s,
                    _ => return Err(bad("unknown barrier")),
                }
            }
            Some("traffic") => {
                for kv in w {
                    match kv.split_once('=') {
                        Some(("dgrams_sent", v)) => {
                            m.dgrams_sent = v.parse().map_err(|_| bad("dgrams_sent"))?
                        }
                        Some(("repairs", v)) => {
                            m.repairs = v.parse().map_err(|_| bad("repairs"))?
                        }
                        _ => {}
                    }
                }
            }
            Some("done") => done = true,
            _ => {}
        }
    }
    if !header {
        return Err("the runner printed no `tune-run` header (is it mpicast-tune-run?)".into());
    }
    if !done {
        return Err("the runner's output ends before `done` (the job ended early)".into());
    }
    for (bytes, [h, e, s]) in rows {
        match (h, e, s) {
            (Some(host), Some(eager), Some(scouts)) => m.points.push(Point {
                bytes,
                host,
                eager,
                scouts,
            }),
            _ => return Err(format!("{bytes} bytes: not every mode was measured")),
        }
    }
    m.points.sort_by_key(|p| p.bytes);
    Ok(m)
}

fn times<'a>(w: impl Iterator<Item = &'a str>) -> Option<Summary> {
    let v: Option<Vec<f64>> = w.map(|t| t.parse::<f64>().ok()).collect();
    Summary::of(&v?)
}

/// `MPICAST_MIN_BYTES` as chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinBytes {
    /// From this measured size on, mpicast (with the chosen eager threshold) is never slower.
    From(u64),
    /// Slower somewhere at the largest size measured: nothing measured says to multicast.
    Never,
}

/// What a setting was chosen from, in one line for the output.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub min_bytes: MinBytes,
    pub eager_bytes: u64,
    pub rcvbuf: u64,
    /// One line per setting: MIN, EAGER, FRAG, RCVBUF.
    pub why: [String; 4],
    /// Things to know that no setting fixes (buffers capped, loss, the barrier).
    pub notes: Vec<String>,
}

impl Choice {
    /// The settings as (name, value) in the syntax the library parses.
    pub fn settings(&self) -> [(&'static str, String); 4] {
        let min = match self.min_bytes {
            MinBytes::From(b) => size(b),
            MinBytes::Never => size(NEVER_BYTES),
        };
        [
            ("MPICAST_MIN_BYTES", min),
            ("MPICAST_EAGER_BYTES", size(self.eager_bytes)),
            ("MPICAST_FRAG_BYTES", "auto".to_string()),
            ("MPICAST_RCVBUF", size(self.rcvbuf)),
        ]
    }
}

/// The margin between curves at one point: the larger of [`MIN_MARGIN`] and half the sum of
/// the two curves' relative interquartile ranges, so that one median must exceed the other by
/// more than the two half-ranges together (roughly: their interquartile ranges do not overlap).
pub fn margin(a: &Summary, b: &Summary) -> f64 {
    ((a.spread() + b.spread()) / 2.0).max(MIN_MARGIN)
}

/// `a` is slower than `b` beyond the margin.
fn slower(a: &Summary, b: &Summary) -> bool {
    a.median > b.median * (1.0 + margin(a, b))
}

/// The mpicast curve with broadcasts up to `eager` bytes eager and larger ones with scouts.
pub fn mcast_at(p: &Point, eager: u64) -> &Summary {
    if p.bytes <= eager {
        &p.eager
    } else {
        &p.scouts
    }
}

/// `MPICAST_EAGER_BYTES`: the cut between eager and scouts that makes the mpicast curve
/// fastest, scored as the number of sizes at which the side the cut puts them on is slower
/// than the other beyond the margin. Candidates are 0 (scouts always) and every size
/// measured; among equal scores the one nearest the library's default (1 MiB, in powers of
/// two) wins, so that a run in which both are even leaves the default alone.
pub fn choose_eager(points: &[Point]) -> u64 {
    let cost = |cut: u64| {
        points
            .iter()
            .filter(|p| {
                if p.bytes <= cut {
                    slower(&p.eager, &p.scouts)
                } else {
                    slower(&p.scouts, &p.eager)
                }
            })
            .count()
    };
    let mut candidates: Vec<u64> = vec![0];
    candidates.extend(points.iter().map(|p| p.bytes));
    // The default itself is a candidate too, unless it lies outside what was measured.
    if points.iter().any(|p| p.bytes >= DEFAULT_EAGER_BYTES)
        && points.iter().any(|p| p.bytes < DEFAULT_EAGER_BYTES)
    {
        candidates.push(DEFAULT_EAGER_BYTES);
    }
    let dist = |c: u64| ((c.max(1) as f64).log2() - (DEFAULT_EAGER_BYTES as f64).log2()).abs();
    let cut = candidates
        .into_iter()
        .min_by(|&a, &b| {
            cost(a)
                .cmp(&cost(b))
                .then(dist(a).total_cmp(&dist(b)))
                .then(a.cmp(&b))
        })
        .unwrap_or(DEFAULT_EAGER_BYTES);
    // Eager at every size measured, all of them below the default: nothing was measured
    // between the largest and the default, so the default stays.
    let largest = points.last().map_or(0, |p| p.bytes);
    if cut == largest && largest < DEFAULT_EAGER_BYTES {
        DEFAULT_EAGER_BYTES
    } else {
        cut
    }
}

/// `MPICAST_MIN_BYTES`: the smallest measured size from which mpicast (eager up to `eager`)
/// is never slower than the host MPI beyond the margin at any larger measured size, and at
/// which it is faster by more than the margin (so that a second run would still find it
/// ahead there). Sizes between two measured ones count as the larger: the threshold is a
/// measured size, never a guess between two.
pub fn choose_min(points: &[Point], eager: u64) -> MinBytes {
    let mut from = None;
    for p in points.iter().rev() {
        let m = mcast_at(p, eager);
        if slower(m, &p.host) {
            break;
        }
        if slower(&p.host, m) {
            from = Some(p.bytes);
        }
    }
    match from {
        Some(b) => MinBytes::From(b),
        None => MinBytes::Never,
    }
}

/// All four settings from one run, with the reasons and notes.
pub fn choose(m: &Measured) -> Choice {
    let pts = &m.points;
    let eager = choose_eager(pts);
    let min_bytes = choose_min(pts, eager);
    let largest = pts.last().map_or(0, |p| p.bytes);
    let why_min = match min_bytes {
        MinBytes::From(b) => {
            let below = pts.iter().rev().find(|p| p.bytes < b);
            let p = pts.iter().find(|p| p.bytes == b).expect("a measured size");
            let r = mcast_at(p, eager).median / p.host.median;
            match below {
                Some(q) => format!(
                    "from {} on mpicast is never slower than the host MPI (at {}: {:.2} times \
                     its time; at {}, {:.2})",
                    size_words(b),
                    size_words(b),
                    r,
                    size_words(q.bytes),
                    mcast_at(q, eager).median / q.host.median
                ),
                None => format!(
                    "mpicast is faster at every size measured ({:.2} times the host MPI's time \
                     at {}, the smallest)",
                    r,
                    size_words(b)
                ),
            }
        }
        MinBytes::Never => format!(
            "mpicast is not ahead of the host MPI beyond the run-to-run spread at {} (the \
             largest size measured) or below: nothing measured says to multicast",
            size_words(largest)
        ),
    };
    let why_eager = if eager == 0 {
        "scouts were faster at every size measured".to_string()
    } else if pts
        .iter()
        .all(|p| !slower(&p.eager, &p.scouts) && !slower(&p.scouts, &p.eager))
    {
        "eager and scouts are even within the spread at every size: the library's default"
            .to_string()
    } else if eager >= largest {
        format!(
            "eager is not slower than scouts at any size measured (up to {}){}",
            size_words(largest),
            if eager > largest {
                ": the library's default"
            } else {
                ""
            }
        )
    } else {
        format!(
            "eager up to {}, scouts above: the cut with the fewest sizes on the slower side",
            size_words(eager)
        )
    };
    let why_frag = "not measured: the datagram size follows the smallest MTU among the ranks \
                    (what `auto` does); set it only below a path MTU smaller than the \
                    interfaces'"
        .to_string();
    let asked = if m.rcvbuf > 0 {
        m.rcvbuf
    } else {
        DEFAULT_RCVBUF
    };
    let mut notes = Vec::new();
    // Linux reports twice what it applied; a grant below twice the request was capped.
    let capped: Vec<&Host> = m
        .hosts
        .iter()
        .filter(|h| h.granted.is_some_and(|g| g < asked.saturating_mul(2)))
        .collect();
    let why_rcvbuf = if capped.is_empty() && !m.hosts.is_empty() {
        format!(
            "the library's request, {}, which every host grants",
            size_words(asked)
        )
    } else if m.hosts.is_empty() {
        "the library's request (the hosts' grants were not reported)".to_string()
    } else {
        let worst = capped.iter().filter_map(|h| h.granted).min().unwrap_or(0) / 2;
        notes.push(format!(
            "{} grant{} only {} of the {} asked for (net.core.rmem_max{}): the window shrinks \
             to half of it; raise it with `sysctl -w net.core.rmem_max={}` (and wmem_max) or \
             run the job as root (SO_RCVBUFFORCE)",
            capped
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if capped.len() == 1 { "s" } else { "" },
            size_words(worst),
            size_words(asked),
            capped
                .iter()
                .filter_map(|h| h.rmem_max)
                .min()
                .map_or(String::new(), |r| format!(" = {r}")),
            asked
        ));
        "kept at the library's request: a smaller one would not help, a larger one is capped \
         too (see the note on rmem_max)"
            .to_string()
    };
    if m.dgrams_sent > 0 {
        let loss = m.repairs as f64 / m.dgrams_sent as f64;
        if loss > LOSS_NOTE {
            notes.push(format!(
                "{:.1} % of the datagrams were sent again (repairs {} of {}): receive buffers \
                 cannot overflow (the window is half the smallest), so this is loss on the \
                 way; a larger MPICAST_RCVBUF does not cure it (`mpicast doctor` measures \
                 the loss rate by send rate)",
                loss * 100.0,
                m.repairs,
                m.dgrams_sent
            ));
        }
    }
    if let Some((host, mcast)) = &m.barrier {
        if slower(mcast, host) {
            notes.push(format!(
                "MPI_Barrier by multicast takes {:.2} times the host MPI's ({} against {}); \
                 no setting hands barriers alone to the host MPI",
                mcast.median / host.median,
                duration(mcast.median),
                duration(host.median)
            ));
        }
    }
    Choice {
        min_bytes,
        eager_bytes: eager,
        rcvbuf: asked,
        why: [why_min, why_eager, why_frag, why_rcvbuf],
        notes,
    }
}

/// A size as the library parses it: `4KiB`, `1MiB`, `1GiB`, else plain bytes (`1500`).
pub fn size(b: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if b >= unit && b % unit == 0 {
            return format!("{}{name}", b / unit);
        }
    }
    b.to_string()
}

/// A size for people: `4 KiB`, `1500 B`.
pub fn size_words(b: u64) -> String {
    let s = size(b);
    match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => format!("{} {}", &s[..i], &s[i..]),
        None => format!("{s} B"),
    }
}

/// Parses a size as the library does (bytes, or k/KiB, m/MiB, g/GiB).
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = v[..digits].parse().ok()?;
    let mult: u64 = match v[digits..].trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `ns` in µs or ms with three significant digits.
pub fn duration(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

impl fmt::Display for MinBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MinBytes::From(b) => write!(f, "{}", size_words(*b)),
            MinBytes::Never => write!(f, "never"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A curve point whose repetitions sit at `t` with a spread of ±`s` (relative).
    fn at(t: f64, s: f64) -> Summary {
        Summary::of(&[t * (1.0 - s), t, t, t * (1.0 + s)]).unwrap()
    }

    fn pt(bytes: u64, host: f64, eager: f64, scouts: f64) -> Point {
        Point {
            bytes,
            host: at(host, 0.01),
            eager: at(eager, 0.01),
            scouts: at(scouts, 0.01),
        }
    }

    #[test]
    fn summaries_are_nearest_rank_quartiles() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            (s.median, s.p25, s.p75, s.min, s.reps),
            (3.0, 2.0, 4.0, 1.0, 5)
        );
        assert!((s.spread() - 2.0 / 3.0).abs() < 1e-12);
        let e = Summary::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((e.median, e.p25, e.p75), (2.5, 1.0, 3.0));
        assert_eq!(Summary::of(&[7.0]).unwrap().spread(), 0.0);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        assert!(Summary::of(&[-1.0]).is_none());
    }

    #[test]
    fn the_crossover_is_the_first_size_of_a_winning_run() {
        // Host MPI ahead up to 1 KiB, mpicast from 2 KiB on.
        let pts = [
            pt(256, 10.0, 30.0, 40.0),
            pt(1024, 20.0, 25.0, 35.0),
            pt(2048, 40.0, 30.0, 39.0),
            pt(4096, 80.0, 40.0, 45.0),
            pt(1 << 20, 9000.0, 1000.0, 1050.0),
        ];
        let eager = choose_eager(&pts);
        assert_eq!(eager, 1 << 20);
        assert_eq!(choose_min(&pts, eager), MinBytes::From(2048));
        // Eager alone at 2 KiB is what wins; with scouts everywhere it would be 4 KiB.
        assert_eq!(choose_min(&pts, 0), MinBytes::From(4096));
    }

    #[test]
    fn within_the_noise_is_not_a_win() {
        // At 2 KiB mpicast is 3 % faster: inside the 5 % margin, so not a crossover yet.
        let mut pts = vec![
            pt(1024, 20.0, 25.0, 35.0),
            pt(2048, 40.0, 38.8, 45.0),
            pt(4096, 80.0, 40.0, 45.0),
        ];
        assert_eq!(choose_min(&pts, 1 << 20), MinBytes::From(4096));
        // ... but 3 % slower at 8 KiB is within the spread: not a reason to give up 4 KiB.
        pts.push(pt(8192, 100.0, 103.0, 110.0));
        pts.push(pt(16384, 200.0, 100.0, 110.0));
        assert_eq!(choose_min(&pts, 1 << 20), MinBytes::From(4096));
        // A wide spread widens the margin: 20 % faster when a repetition of either moves by
        // 25 % is noise.
        let noisy = [Point {
            bytes: 4096,
            host: at(100.0, 0.25),
            eager: at(80.0, 0.25),
            scouts: at(80.0, 0.25),
        }];
        assert!((margin(&noisy[0].host, &noisy[0].eager) - 0.25).abs() < 1e-9);
        assert_eq!(choose_min(&noisy, 1 << 20), MinBytes::Never);
        let quiet = [Point {
            host: at(100.0, 0.01),
            eager: at(80.0, 0.01),
            ..noisy[0]
        }];
        assert_eq!(choose_min(&quiet, 1 << 20), MinBytes::From(4096));
    }

    #[test]
    fn never_slower_above_the_threshold() {
        // Ahead at 1 KiB, behind at 4 KiB, ahead from 16 KiB: the threshold is 16 KiB.
        let pts = [
            pt(1024, 40.0, 20.0, 30.0),
            pt(4096, 50.0, 70.0, 80.0),
            pt(16384, 200.0, 100.0, 120.0),
            pt(65536, 800.0, 300.0, 320.0),
        ];
        assert_eq!(choose_min(&pts, 1 << 20), MinBytes::From(16384));
        // Behind at the largest size: nothing is safe, whatever happened below.
        let mut lost = pts.to_vec();
        lost.push(pt(1 << 20, 1000.0, 2000.0, 2100.0));
        assert_eq!(choose_min(&lost, 1 << 20), MinBytes::Never);
        let c = choose(&Measured {
            points: lost,
            ..Measured::default()
        });
        assert_eq!(c.settings()[0].1, "1GiB");
        assert!(
            c.why[0].contains("1 MiB (the largest size measured)"),
            "{}",
            c.why[0]
        );
        // Ahead everywhere: the smallest size measured.
        assert_eq!(choose_min(&pts[2..], 1 << 20), MinBytes::From(16384));
        assert_eq!(choose_min(&[], 1 << 20), MinBytes::Never);
    }

    #[test]
    fn the_eager_cut_follows_the_curves() {
        // Eager ahead up to 64 KiB, scouts ahead above.
        let pts = [
            pt(1024, 50.0, 10.0, 20.0),
            pt(65536, 500.0, 100.0, 150.0),
            pt(262144, 2000.0, 600.0, 400.0),
            pt(1 << 20, 8000.0, 2500.0, 1500.0),
            pt(4 << 20, 32000.0, 9000.0, 6000.0),
        ];
        assert_eq!(choose_eager(&pts), 65536);
        // Scouts ahead everywhere: 0.
        let scouts: Vec<Point> = pts.iter().map(|p| pt(p.bytes, 99.0, 20.0, 10.0)).collect();
        assert_eq!(choose_eager(&scouts), 0);
        // Eager ahead everywhere: the largest size measured (nearest the default of those
        // that cost nothing, and no cut inside the range).
        let eager: Vec<Point> = pts.iter().map(|p| pt(p.bytes, 99.0, 10.0, 20.0)).collect();
        assert_eq!(choose_eager(&eager), 4 << 20);
        // ... unless they all lie below the default: above them nothing was measured.
        assert_eq!(choose_eager(&eager[..2]), 1 << 20);
        let c = choose(&Measured {
            points: eager[..2].to_vec(),
            ..Measured::default()
        });
        assert!(
            c.why[1].ends_with("(up to 64 KiB): the library's default"),
            "{}",
            c.why[1]
        );
        // Even everywhere: the library's default stays.
        let even: Vec<Point> = pts.iter().map(|p| pt(p.bytes, 99.0, 10.0, 10.2)).collect();
        assert_eq!(choose_eager(&even), 1 << 20);
        let c = choose(&Measured {
            points: even,
            ..Measured::default()
        });
        assert!(c.why[1].contains("even"), "{}", c.why[1]);
        // Scouts ahead at 64 KiB too: the cut moves below it.
        let mut blip = pts.to_vec();
        blip[1] = pt(65536, 500.0, 100.0, 80.0);
        assert_eq!(choose_eager(&blip), 1024);
    }

    #[test]
    fn rcvbuf_loss_and_barrier_notes() {
        let pts = vec![pt(4096, 80.0, 40.0, 45.0)];
        let host = |name: &str, granted| Host {
            name: name.into(),
            ranks: 1,
            rmem_max: Some(212992),
            granted: Some(granted),
        };
        let mut m = Measured {
            rcvbuf: 8 << 20,
            hosts: vec![host("a", 16 << 20), host("b", 16 << 20)],
            points: pts,
            dgrams_sent: 1000,
            repairs: 5,
            barrier: Some((at(50.0, 0.01), at(40.0, 0.01))),
            ..Measured::default()
        };
        let c = choose(&m);
        assert_eq!(c.rcvbuf, 8 << 20);
        assert_eq!(c.settings()[3].1, "8MiB");
        assert_eq!(c.settings()[2].1, "auto");
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        m.hosts[1] = host("b", 425984);
        m.repairs = 50;
        m.barrier = Some((at(40.0, 0.01), at(60.0, 0.01)));
        let c = choose(&m);
        assert_eq!(c.rcvbuf, 8 << 20);
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        assert!(c.notes[0].starts_with("b grants only 208 KiB of the 8 MiB"));
        assert!(c.notes[0].contains("rmem_max = 212992"));
        assert!(c.notes[1].starts_with("5.0 % of the datagrams"));
        assert!(c.notes[2].contains("1.50 times the host MPI's"));
    }

    #[test]
    fn sizes_print_as_the_library_parses_them() {
        assert_eq!(size(4096), "4KiB");
        assert_eq!(size(1 << 20), "1MiB");
        assert_eq!(size(1500), "1500");
        assert_eq!(size(0), "0");
        assert_eq!(size(3 << 30), "3GiB");
        assert_eq!(size_words(1500), "1500 B");
        assert_eq!(size_words(65536), "64 KiB");
        for b in [0u64, 64, 1500, 4096, 1 << 20, 1 << 30] {
            assert_eq!(parse_size(&size(b)), Some(b));
        }
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("2 MiB"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("4q"), None);
    }

    const OUT: &str = "tune-run 1 ranks=3 hosts=1 reps=3 warmup=1 sizes=2 rcvbuf=8388608\n\
        host vm ranks=3 rmem_max=4194304 granted=16777216\n\
        bcast 64 host 8756 3587 18024\n\
        bcast 64 eager 145171 203831 151322\n\
        bcast 64 scouts 259183 139009 77795\n\
        bcast 4096 host 69229 52627 41257\n\
        bcast 4096 eager 87273 115385 115055\n\
        bcast 4096 scouts 137015 212466 97292\n\
        barrier host 9892 9750 11878\n\
        barrier mcast 55893 61509 70741\n\
        traffic dgrams_sent=212 repairs=4\n\
        done\n";

    #[test]
    fn reads_the_runner_output() {
        let m = parse_runner(OUT).unwrap();
        assert_eq!((m.ranks, m.reps, m.rcvbuf), (3, 3, 8 << 20));
        assert_eq!(m.hosts.len(), 1);
        assert_eq!(m.hosts[0].granted, Some(16 << 20));
        assert_eq!(m.points.len(), 2);
        assert_eq!(m.points[0].bytes, 64);
        assert_eq!(m.points[0].host.median, 8756.0);
        assert_eq!(m.points[1].scouts.min, 97292.0);
        let (h, b) = m.barrier.unwrap();
        assert_eq!((h.median, b.median), (9892.0, 61509.0));
        assert_eq!((m.dgrams_sent, m.repairs), (212, 4));
        // Ended early, no header, a mode missing, a bad number.
        assert!(parse_runner(&OUT.replace("done\n", ""))
            .unwrap_err()
            .contains("before `done`"));
        assert!(parse_runner("done\n")
            .unwrap_err()
            .contains("no `tune-run`"));
        let missing = OUT.replace("bcast 64 eager 145171 203831 151322\n", "");
        assert!(parse_runner(&missing)
            .unwrap_err()
            .contains("64 bytes: not every mode"));
        let e = parse_runner(&OUT.replace("8756", "x")).unwrap_err();
        assert!(e.contains("line 3: times"), "{e}");
        // The launcher's own lines are skipped.
        assert!(parse_runner(&format!("Warning: something\n{OUT}")).is_ok());
        // A host that could not read its rmem_max.
        let m = parse_runner(&OUT.replace("rmem_max=4194304", "rmem_max=-1")).unwrap();
        assert_eq!(m.hosts[0].rmem_max, None);
    }
}
