//! Test helpers shared by the `sched` and `algo` tests: a seeded PRNG (tests must replay) and the
//! reverse of a schedule's dependents table, so checkers can ask "did every prerequisite finish?".

use super::ir::{ActionId, Schedule};

/// `crate::rng`'s SplitMix64, with the draws these tests make of it.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        crate::rng::next(&mut self.0)
    }

    /// Uniform-ish in `0..n`; `n` must be non-zero.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// True with probability `pct` percent.
    pub(crate) fn chance(&mut self, pct: u32) -> bool {
        self.below(100) < pct as usize
    }
}

/// Prerequisites of every action, derived from `Schedule::dependents`.
pub(crate) struct Preds {
    start: Vec<usize>,
    list: Vec<ActionId>,
}

impl Preds {
    pub(crate) fn of(s: &Schedule) -> Self {
        let n = s.len();
        let mut start = vec![0usize; n + 1];
        for (id, _) in s.actions() {
            for &d in s.dependents(id) {
                start[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0; start[n]];
        for (id, _) in s.actions() {
            for &d in s.dependents(id) {
                list[fill[d as usize]] = id;
                fill[d as usize] += 1;
            }
        }
        Preds { start, list }
    }

    pub(crate) fn get(&self, id: ActionId) -> &[ActionId] {
        &self.list[self.start[id as usize]..self.start[id as usize + 1]]
    }
}
