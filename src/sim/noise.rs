//! Operating-system noise injected from a trace (LogGOPSim's `--noise-trace`): a list of
//! interruptions of a CPU, `start length` in ns, taken as one period that repeats. Each rank
//! reads the trace from its own place (a pseudo-random offset fixed by a seed), or all ranks
//! from the same place (`cosched`: co-scheduled noise, as LogGOPSim's `--noise-cosched`).
//!
//! The rule, LogGOPSim's: a stretch of CPU work of nominal length `len` that starts at `t`
//! (a send's or a message's `o`, a `calc`) on rank `r` is lengthened by the noise it meets:
//! the rest of an interruption under way at `t`, plus the whole of every interruption that
//! starts within `[t, t + len)` (times in the trace: `t` plus the rank's offset, modulo the
//! period). Interruptions that start within the added time itself are not counted again.

use crate::rng;

/// A noise trace and where each rank reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noise {
    /// Interruptions (start, length), sorted by start, all starting within the period.
    events: Vec<(u64, u64)>,
    /// `sums[i]`: the lengths of `events[..i]` added up.
    sums: Vec<u64>,
    /// The trace's length: the end of its last interruption.
    period: u64,
    /// Each rank's place in the trace.
    offsets: Vec<u64>,
}

impl Noise {
    /// Reads a trace: one interruption a line, `start length` in ns (LogGOPSim's files have
    /// a tab between them and may write decimals, which are rounded), `#` comment lines and
    /// blank lines skipped. The error names the line.
    pub fn parse(text: &str) -> Result<Vec<(u64, u64)>, String> {
        let mut out = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let num = |w: Option<&str>| -> Option<u64> {
                let v: f64 = w?.parse().ok()?;
                (v.is_finite() && (0.0..1.8e19).contains(&v)).then(|| v.round() as u64)
            };
            let mut words = line.split_whitespace();
            let (Some(start), Some(len), None) =
                (num(words.next()), num(words.next()), words.next())
            else {
                return Err(format!(
                    "line {}: expected `start length` (non-negative ns), got `{line}`",
                    i + 1
                ));
            };
            out.push((start, len));
        }
        Ok(out)
    }

    /// The noise of `events` for `ranks` ranks. Each rank's offset is a number below the
    /// period drawn from `seed` and the rank (the same for all ranks with `cosched`).
    /// Errors for a trace without noise (no interruption, or all of length 0).
    pub fn new(
        events: Vec<(u64, u64)>,
        ranks: u32,
        cosched: bool,
        seed: u64,
    ) -> Result<Noise, String> {
        let mut n = Noise::with_offsets(events, Vec::new())?;
        n.offsets = (0..ranks)
            .map(|r| {
                let key = if cosched { 0 } else { u64::from(r) + 1 };
                rng::mix(seed ^ rng::mix(key)) % n.period
            })
            .collect();
        Ok(n)
    }

    /// The noise of `events` with rank `r` reading the trace from `offsets[r]` (0 for ranks
    /// not listed).
    pub fn with_offsets(mut events: Vec<(u64, u64)>, offsets: Vec<u64>) -> Result<Noise, String> {
        events.retain(|e| e.1 > 0);
        events.sort_unstable();
        let period = events
            .iter()
            .map(|&(s, l)| s.saturating_add(l))
            .max()
            .ok_or("the noise trace has no interruption of non-zero length")?;
        let mut sums = Vec::with_capacity(events.len() + 1);
        let mut acc = 0u64;
        sums.push(0);
        for e in &events {
            acc = acc.saturating_add(e.1);
            sums.push(acc);
        }
        Ok(Noise {
            events,
            sums,
            period,
            offsets,
        })
    }

    /// The trace's period (the end of its last interruption).
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The noise lengths of the interruptions that start in `[0, x)` of one period.
    fn before(&self, x: u64) -> u64 {
        self.sums[self.events.partition_point(|e| e.0 < x)]
    }

    /// How much longer CPU work of `len` ns that starts at `t` on `rank` takes.
    pub fn delay(&self, rank: u32, t: u64, len: u64) -> u64 {
        let p = self.period;
        let off = self.offsets.get(rank as usize).copied().unwrap_or(0);
        let a = ((u128::from(t) + u128::from(off)) % u128::from(p)) as u64;
        let mut noise = 0u64;
        // The rest of an interruption under way at a.
        let i = self.events.partition_point(|e| e.0 <= a);
        if i > 0 {
            let (s, l) = self.events[i - 1];
            noise += (s + l).saturating_sub(a);
        }
        if len == 0 {
            return noise;
        }
        // Every interruption that starts in (a, a + len), over as many periods as it spans.
        let total = self.sums[self.events.len()];
        let end = u128::from(a) + u128::from(len);
        let wraps = (end / u128::from(p)) as u64;
        let rest = (end % u128::from(p)) as u64;
        let after_a = total - self.before(a + 1);
        let within = if wraps == 0 {
            self.before(rest) - self.before(a + 1)
        } else {
            after_a
                .saturating_add(total.saturating_mul(wraps - 1))
                .saturating_add(self.before(rest))
        };
        noise.saturating_add(within)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_loggopsim_traces() {
        let t = "# a comment\n0\t100\n1000.4\t50.6\n\n2500 10\n";
        assert_eq!(Noise::parse(t).unwrap(), [(0, 100), (1000, 51), (2500, 10)]);
        let e = Noise::parse("0 100\n5 x\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(Noise::parse("1 2 3").is_err());
        assert!(Noise::parse("-1 2").is_err());
        assert!(Noise::new(vec![(5, 0)], 1, false, 1).is_err());
    }

    #[test]
    fn delay_by_hand() {
        // Period 3000: interruptions at 0 (100 ns), 1000 (50), 2500 (500); rank 0 reads the
        // trace from 0, rank 1 from 700.
        let n = Noise::with_offsets(vec![(1000, 50), (0, 100), (2500, 500)], vec![0, 700]).unwrap();
        assert_eq!(n.period(), 3000);
        // Rank 0, work 200..400: nothing under way, nothing starts: no noise.
        assert_eq!(n.delay(0, 200, 200), 0);
        // 50..250: the first is under way (until 100): 50.
        assert_eq!(n.delay(0, 50, 200), 50);
        // 900..1100: the one at 1000 starts within: 50.
        assert_eq!(n.delay(0, 900, 200), 50);
        // 1000..1100 starts exactly with it: under way at 1000, all 50 of it.
        assert_eq!(n.delay(0, 1000, 100), 50);
        // 2900..3100 (wraps to 100): the rest of 2500+500 (100) and the one at 0 (100).
        assert_eq!(n.delay(0, 2900, 200), 200);
        // Work of 7000 from 0: under way at 0 (100), then within (0, 7000): 1000, 2500,
        // then 3000 (= 0), 4000, 5500, then 6000, 7000 is not < 7000... 6000 (0 again) only.
        assert_eq!(n.delay(0, 0, 7000), 100 + 50 + 500 + 100 + 50 + 500 + 100);
        // Rank 1 reads from 700: its 300..500 is the trace's 1000..1200.
        assert_eq!(n.delay(1, 300, 200), 50);
        // Zero-length work meets only what is under way.
        assert_eq!(n.delay(0, 2600, 0), 400);
    }

    #[test]
    fn offsets_repeat_and_cosched_shares_one() {
        let ev = vec![(0, 10), (100, 10)];
        let a = Noise::new(ev.clone(), 64, false, 7).unwrap();
        let b = Noise::new(ev.clone(), 64, false, 7).unwrap();
        assert_eq!(a, b);
        assert!(a.offsets.iter().any(|&o| o != a.offsets[0]));
        let c = Noise::new(ev, 64, true, 7).unwrap();
        assert!(c.offsets.iter().all(|&o| o == c.offsets[0]));
    }
}
