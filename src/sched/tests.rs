//! Builder validation and executor behaviour against a fake backend running in virtual time.

use super::testutil::{Preds, Rng};
use super::*;
use std::convert::Infallible;

fn nop(i: u32) -> Op {
    Op::Exec {
        func: Func::User((i % 7) as u16),
        src: BufRef::EMPTY,
        dst: BufRef {
            slot: 1,
            offset: i as usize,
            len: 1,
        },
    }
}

fn builder_with(n: u32) -> (Builder, Vec<ActionId>) {
    let mut b = Builder::new();
    let ids = (0..n).map(|i| b.add(nop(i))).collect();
    (b, ids)
}

fn chain(n: u32) -> Schedule {
    let (mut b, ids) = builder_with(n);
    for w in ids.windows(2) {
        b.requ(w[0], w[1]);
    }
    b.build().unwrap()
}

/// `ids` in a random order (Fisher-Yates).
fn shuffled(rng: &mut Rng, mut ids: Vec<ActionId>) -> Vec<ActionId> {
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.below(i + 1));
    }
    ids
}

/// Random DAG whose topological order is a random permutation of the ids, so that id order
/// says nothing about dependency order.
fn random_dag(rng: &mut Rng, n: u32, edge_pct: u32) -> Schedule {
    let (mut b, ids) = builder_with(n);
    let perm = shuffled(rng, ids);
    for i in 0..perm.len() {
        for j in i + 1..perm.len() {
            if rng.chance(edge_pct) {
                b.requ(perm[i], perm[j]);
                if rng.chance(10) {
                    b.requ(perm[i], perm[j]); // duplicate edge, must be merged
                }
            }
        }
    }
    b.build().unwrap()
}

// ---------------------------------------------------------------- builder

#[test]
fn builder_rejects_unknown_ids() {
    let (mut b, ids) = builder_with(3);
    b.requ(ids[0], 3);
    assert_eq!(b.build(), Err(BuildError::UnknownAction { id: 3, len: 3 }));
    let (mut b, _) = builder_with(3);
    b.requ(u32::MAX, 1);
    assert_eq!(
        b.build(),
        Err(BuildError::UnknownAction {
            id: u32::MAX,
            len: 3
        })
    );
    let mut b = Builder::new();
    b.requ(0, 1);
    assert!(matches!(b.build(), Err(BuildError::UnknownAction { .. })));
}

#[test]
fn builder_rejects_self_dependency() {
    let (mut b, ids) = builder_with(2);
    b.requ(ids[0], ids[1]);
    b.requ(ids[1], ids[1]);
    assert_eq!(b.build(), Err(BuildError::SelfDependency { id: 1 }));
}

#[test]
fn builder_rejects_short_and_long_cycles() {
    for len in [2u32, 3, 17, 100_000] {
        // A cycle of `len` actions hanging off an acyclic prefix and with an acyclic tail, so the
        // reported action must be found on the cycle itself, not just among the unresolved ones.
        let (mut b, ids) = builder_with(len + 20);
        let cyc = &ids[10..10 + len as usize];
        for w in cyc.windows(2) {
            b.requ(w[0], w[1]);
        }
        b.requ(cyc[cyc.len() - 1], cyc[0]);
        for &lead in &ids[..10] {
            b.requ(lead, cyc[0]);
        }
        for &t in &ids[10 + len as usize..] {
            b.requ(cyc[len as usize / 2], t);
        }
        match b.build() {
            Err(BuildError::Cycle { id }) => {
                assert!(cyc.contains(&id), "len {len}: {id} is not on the cycle")
            }
            other => panic!("len {len}: expected a cycle, got {other:?}"),
        }
    }
}

#[test]
fn builder_rejects_cycles_in_random_graphs() {
    let mut rng = Rng::new(0xC1C1E);
    for round in 0..200 {
        let n = 2 + rng.below(60) as u32;
        let (mut b, ids) = builder_with(n);
        let mut edges = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                if rng.chance(8) {
                    edges.push((ids[i as usize], ids[j as usize]));
                }
            }
        }
        // One back edge along an existing forward path closes a cycle.
        let a = rng.below(n as usize - 1) as u32;
        let z = a + 1 + rng.below((n - a - 1) as usize) as u32;
        for k in a..z {
            edges.push((k, k + 1));
        }
        edges.push((z, a));
        for &(x, y) in &edges {
            b.requ(x, y);
        }
        let err = b.build().expect_err("cycle accepted");
        let BuildError::Cycle { id } = err else {
            panic!("round {round}: wrong error {err:?}");
        };
        // The reported action must reach itself.
        let mut seen = vec![false; n as usize];
        let mut stack: Vec<u32> = edges.iter().filter(|e| e.0 == id).map(|e| e.1).collect();
        let mut back = false;
        while let Some(x) = stack.pop() {
            if x == id {
                back = true;
                break;
            }
            if !std::mem::replace(&mut seen[x as usize], true) {
                stack.extend(edges.iter().filter(|e| e.0 == x).map(|e| e.1));
            }
        }
        assert!(back, "round {round}: action {id} is not on a cycle");
    }
}

#[test]
fn builder_tables_are_consistent() {
    let mut rng = Rng::new(7);
    for _ in 0..100 {
        let n = rng.below(80) as u32;
        let (mut b, ids) = builder_with(n);
        let mut expect = std::collections::BTreeSet::new();
        for _ in 0..rng.below(300) {
            if n < 2 {
                break;
            }
            let x = ids[rng.below(n as usize)];
            let y = ids[rng.below(n as usize)];
            let (x, y) = (x.min(y), x.max(y));
            if x != y {
                b.requ(x, y);
                expect.insert((x, y));
            }
        }
        let s = b.build().unwrap();
        assert_eq!(s.len(), n as usize);
        assert_eq!(s.is_empty(), n == 0);
        assert_eq!(s.edge_count(), expect.len());
        let mut got = std::collections::BTreeSet::new();
        for (id, op) in s.actions() {
            assert_eq!(*op, nop(id));
            let deps = s.dependents(id);
            assert!(deps.windows(2).all(|w| w[0] < w[1]), "sorted and merged");
            got.extend(deps.iter().map(|&d| (id, d)));
            let preq = expect.iter().filter(|e| e.1 == id).count();
            assert_eq!(s.prerequisites(id), preq);
        }
        assert_eq!(got, expect);
        let ready: Vec<_> = s.initially_ready().collect();
        let want: Vec<_> = (0..n).filter(|&i| s.prerequisites(i) == 0).collect();
        assert_eq!(ready, want);
    }
}

#[test]
fn duplicate_edges_merge() {
    let (mut b, ids) = builder_with(3);
    for _ in 0..5 {
        b.requ(ids[0], ids[2]);
    }
    b.requ(ids[1], ids[2]);
    let s = b.build().unwrap();
    assert_eq!(s.prerequisites(2), 2);
    assert_eq!(s.dependents(0), &[2]);
    assert_eq!(s.initially_ready().collect::<Vec<_>>(), vec![0, 1]);
}

#[test]
fn empty_schedule() {
    let s = Builder::new().build().unwrap();
    assert!(s.is_empty());
    assert_eq!(s.initially_ready().count(), 0);
    let mut fake = Fake::new(&s, 1, 50);
    let mut ex = Execution::new(&s);
    assert!(ex.is_done());
    assert_eq!(ex.test(&mut fake), Ok(true));
    assert_eq!(fake.progress_calls, 0);
}

// ---------------------------------------------------------------- fake backend

/// A backend in virtual time: an action completes either inside `start` or at a random later
/// `progress` call. It checks that each action starts exactly once and only after all its
/// prerequisites completed, and it injects bogus completion reports that the executor must
/// ignore.
/// One to three of the `pending` (running) actions, chosen at random, complete: they leave
/// `pending`, are marked in `finished`, and are returned in completion order.
fn complete_some(
    rng: &mut Rng,
    pending: &mut Vec<ActionId>,
    finished: &mut [bool],
) -> Vec<ActionId> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(3) {
        if pending.is_empty() {
            break;
        }
        let k = rng.below(pending.len());
        let id = pending.swap_remove(k);
        finished[id as usize] = true;
        out.push(id);
    }
    out
}

struct Fake<'a> {
    sched: &'a Schedule,
    preds: Preds,
    rng: Rng,
    immediate_pct: u32,
    noise: bool,
    starts: Vec<u32>,
    finished: Vec<bool>,
    pending: Vec<ActionId>,
    injected: u64,
    progress_calls: u64,
}

impl<'a> Fake<'a> {
    fn new(sched: &'a Schedule, seed: u64, immediate_pct: u32) -> Self {
        Fake {
            sched,
            preds: Preds::of(sched),
            rng: Rng::new(seed),
            immediate_pct,
            noise: false,
            starts: vec![0; sched.len()],
            finished: vec![false; sched.len()],
            pending: Vec::new(),
            injected: 0,
            progress_calls: 0,
        }
    }

    fn check_all_ran_once(&self) {
        assert!(
            self.starts.iter().all(|&c| c == 1),
            "every action started once"
        );
        assert!(self.finished.iter().all(|&f| f));
        assert!(self.pending.is_empty());
    }
}

impl Backend for Fake<'_> {
    type Error = Infallible;

    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        let i = id as usize;
        assert_eq!(op, self.sched.op(id), "backend got the wrong op for {id}");
        self.starts[i] += 1;
        assert_eq!(self.starts[i], 1, "action {id} started twice");
        for &p in self.preds.get(id) {
            assert!(
                self.finished[p as usize],
                "{id} started before prerequisite {p}"
            );
        }
        if self.rng.chance(self.immediate_pct) {
            self.finished[i] = true;
            done.push(id);
        } else {
            self.pending.push(id);
        }
        Ok(())
    }

    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        self.progress_calls += 1;
        assert!(
            !self.pending.is_empty(),
            "progress called while nothing is running: the executor lost track"
        );
        let n = self.sched.len();
        if self.noise && self.rng.chance(20) {
            // A report for an action that was never started is only safe to inject on its own:
            // mixed with real completions it could become a real one once those start it.
            for _ in 0..1 + self.rng.below(3) {
                let id = self.rng.below(n) as ActionId;
                if self.starts[id as usize] == 0 {
                    done.push(id);
                    self.injected += 1;
                }
            }
            done.push(u32::MAX - self.rng.below(3) as u32);
            self.injected += 1;
            return Ok(());
        }
        for id in complete_some(&mut self.rng, &mut self.pending, &mut self.finished) {
            done.push(id);
            if self.noise && self.rng.chance(30) {
                done.push(id);
                self.injected += 1;
            }
        }
        if self.noise && self.rng.chance(30) {
            let id = self.rng.below(n) as ActionId;
            if self.finished[id as usize] {
                done.push(id);
                self.injected += 1;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- executor

#[test]
fn random_dags_run_every_action_once_in_dependency_order() {
    let mut rng = Rng::new(0x5EED);
    for round in 0..400u64 {
        let n = rng.below(150) as u32;
        let pct = 1 + rng.below(20) as u32;
        let s = random_dag(&mut rng, n, pct);
        for immediate in [0, 40, 100] {
            let seed = round * 1000 + immediate as u64;
            let mut fake = Fake::new(&s, seed, immediate);
            let mut ex = Execution::new(&s);
            ex.wait(&mut fake).unwrap();
            assert!(ex.is_done(), "seed {seed}");
            assert_eq!(ex.completed(), s.len());
            assert_eq!(ex.running(), 0);
            assert_eq!(ex.ignored_completions(), 0);
            fake.check_all_ran_once();
            if immediate == 100 {
                assert_eq!(fake.progress_calls, 0, "all done inside start");
            }
        }
    }
}

#[test]
fn bogus_and_duplicate_completions_are_ignored() {
    let mut rng = Rng::new(0xD0D0);
    let mut total_injected = 0;
    for round in 0..300u64 {
        let n = 1 + rng.below(120) as u32;
        let pct = 1 + rng.below(15) as u32;
        let s = random_dag(&mut rng, n, pct);
        let mut fake = Fake::new(&s, round, 30);
        fake.noise = true;
        let mut ex = Execution::new(&s);
        ex.wait(&mut fake).unwrap();
        fake.check_all_ran_once();
        assert_eq!(ex.ignored_completions(), fake.injected, "round {round}");
        total_injected += fake.injected;
        // A finished run ignores late reports and never calls the backend again.
        let calls = fake.progress_calls;
        assert_eq!(ex.test(&mut fake), Ok(true));
        assert_eq!(fake.progress_calls, calls);
    }
    assert!(
        total_injected > 1000,
        "the noise must actually be exercised"
    );
}

#[test]
fn duplicate_report_does_not_release_dependent_early() {
    // c needs a and b. Reporting a twice must not count as b.
    let (mut b, ids) = builder_with(3);
    b.requ(ids[0], ids[2]);
    b.requ(ids[1], ids[2]);
    let s = b.build().unwrap();

    struct Scripted(Vec<Vec<ActionId>>, Vec<ActionId>);
    impl Backend for Scripted {
        type Error = Infallible;
        fn start(&mut self, id: ActionId, _: &Op, _: &mut Vec<ActionId>) -> Result<(), Infallible> {
            self.1.push(id);
            Ok(())
        }
        fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
            done.extend(self.0.remove(0));
            Ok(())
        }
    }
    let mut be = Scripted(vec![vec![0, 0], vec![0, 2], vec![1], vec![2, 2]], vec![]);
    let mut ex = Execution::new(&s);
    ex.start(&mut be).unwrap();
    assert_eq!(be.1, vec![0, 1]);
    assert_eq!(ex.test(&mut be), Ok(false));
    assert_eq!(be.1, vec![0, 1], "duplicate of 0 must not start 2");
    assert_eq!(ex.test(&mut be), Ok(false));
    assert_eq!(be.1, vec![0, 1], "report for unstarted 2 ignored");
    assert_eq!(ex.test(&mut be), Ok(false));
    assert_eq!(be.1, vec![0, 1, 2]);
    assert_eq!(ex.test(&mut be), Ok(true));
    assert_eq!(ex.ignored_completions(), 4);
}

#[test]
fn million_action_chain_runs_without_recursion() {
    let s = chain(1_000_000);
    assert_eq!(s.initially_ready().collect::<Vec<_>>(), vec![0]);
    for immediate in [100, 50] {
        let mut fake = Fake::new(&s, 99, immediate);
        let mut ex = Execution::new(&s);
        ex.wait(&mut fake).unwrap();
        fake.check_all_ran_once();
    }
}

#[test]
fn wide_schedules_run() {
    const W: u32 = 100_000;
    // Fan-out: one action releases W; fan-in: W independent actions feed one join.
    let (mut b, ids) = builder_with(W + 1);
    for &d in &ids[1..] {
        b.requ(ids[0], d);
    }
    let fan_out = b.build().unwrap();
    assert_eq!(fan_out.dependents(0).len(), W as usize);

    let (mut b, ids) = builder_with(W + 1);
    for &d in &ids[..W as usize] {
        b.requ(d, ids[W as usize]);
    }
    let fan_in = b.build().unwrap();
    assert_eq!(fan_in.initially_ready().count(), W as usize);
    assert_eq!(fan_in.prerequisites(W), W as usize);

    let (b, _) = builder_with(W);
    let flat = b.build().unwrap();

    for s in [&fan_out, &fan_in, &flat] {
        for immediate in [0, 70] {
            let mut fake = Fake::new(s, 3, immediate);
            let mut ex = Execution::new(s);
            ex.wait(&mut fake).unwrap();
            fake.check_all_ran_once();
        }
    }
}

#[test]
fn many_executions_share_one_schedule() {
    let mut rng = Rng::new(42);
    let s = random_dag(&mut rng, 200, 5);
    let mut fakes: Vec<Fake> = (0..8).map(|i| Fake::new(&s, i, 30)).collect();
    let mut exs: Vec<Execution> = (0..8).map(|_| Execution::new(&s)).collect();
    // Interleave the runs step by step.
    let mut live = 8;
    while live > 0 {
        live = 0;
        for (ex, fake) in exs.iter_mut().zip(fakes.iter_mut()) {
            if !ex.test(fake).unwrap() {
                live += 1;
            }
        }
    }
    for f in &fakes {
        f.check_all_ran_once();
    }
    // A reset run starts from scratch and completes again.
    let mut ex = exs.pop().unwrap();
    ex.reset();
    assert_eq!(ex.completed(), 0);
    assert!(!ex.is_done());
    let mut fake = Fake::new(&s, 77, 50);
    ex.wait(&mut fake).unwrap();
    fake.check_all_ran_once();
}

#[test]
fn memory_of_a_finished_run_serves_other_schedules() {
    // The vectors of one run, handed to runs of larger, smaller and half-finished schedules:
    // each new run starts from scratch and runs every action once, as a fresh one would.
    let mut rng = Rng::new(7);
    let big = random_dag(&mut rng, 300, 6);
    let small = random_dag(&mut rng, 5, 2);
    let mut mem = crate::sched::ExecMemory::default();
    for (k, s) in [&small, &big, &small, &big].into_iter().enumerate() {
        let mut ex = Execution::with_memory(s, mem);
        assert_eq!((ex.completed(), ex.running()), (0, 0));
        let mut fake = Fake::new(s, k as u64, 40);
        ex.wait(&mut fake).unwrap();
        fake.check_all_ran_once();
        assert_eq!(ex.ignored_completions(), 0);
        mem = ex.into_memory();
    }
    // A run given up half way leaves nothing behind for the next one.
    let mut ex = Execution::with_memory(&big, mem);
    let mut fake = Fake::new(&big, 9, 0);
    ex.start(&mut fake).unwrap();
    ex.test(&mut fake).unwrap();
    assert!(!ex.is_done());
    let mut ex = Execution::with_memory(&big, ex.into_memory());
    let mut fake = Fake::new(&big, 10, 40);
    ex.wait(&mut fake).unwrap();
    fake.check_all_ran_once();
}

#[test]
fn start_is_idempotent_and_errors_propagate() {
    let s = chain(3);
    struct Failing(u32);
    impl Backend for Failing {
        type Error = &'static str;
        fn start(
            &mut self,
            id: ActionId,
            _: &Op,
            done: &mut Vec<ActionId>,
        ) -> Result<(), Self::Error> {
            self.0 += 1;
            if id == 2 {
                return Err("boom");
            }
            done.push(id);
            Ok(())
        }
        fn progress(&mut self, _: &mut Vec<ActionId>) -> Result<(), Self::Error> {
            Err("no progress expected")
        }
    }
    let mut be = Failing(0);
    let mut ex = Execution::new(&s);
    assert_eq!(ex.start(&mut be), Err("boom"));
    assert_eq!(be.0, 3);
    assert_eq!(ex.completed(), 2);
    assert_eq!(ex.start(&mut be), Ok(()), "second start is a no-op");
    assert_eq!(be.0, 3);
}

// ---------------------------------------------------------------- start dependencies (irequ)

#[test]
fn irequ_edges_build_and_count_as_prerequisites() {
    let (mut b, ids) = builder_with(3);
    b.irequ(ids[0], ids[1]);
    b.irequ(ids[0], ids[1]); // merged
    b.requ(ids[1], ids[2]);
    let s = b.build().unwrap();
    assert_eq!(s.start_dependents(0), [1]);
    assert_eq!(s.dependents(0), [] as [ActionId; 0]);
    assert_eq!(s.prerequisites(1), 1);
    assert_eq!(s.start_edge_count(), 1);
    assert!(s.has_start_dependencies());
    assert!(!chain(3).has_start_dependencies());
    assert_eq!(chain(3).start_dependents(1), [] as [ActionId; 0]);
    // A cycle through both kinds of edges, and a start self-dependency.
    let (mut b, ids) = builder_with(2);
    b.irequ(ids[0], ids[1]);
    b.requ(ids[1], ids[0]);
    assert!(matches!(b.build(), Err(BuildError::Cycle { .. })));
    let (mut b, ids) = builder_with(2);
    b.irequ(ids[1], ids[1]);
    assert_eq!(b.build(), Err(BuildError::SelfDependency { id: 1 }));
}

/// A backend that never completes anything on its own: only starts are observable.
struct StartOnly(Vec<ActionId>);

impl Backend for StartOnly {
    type Error = Infallible;
    fn start(&mut self, id: ActionId, _: &Op, _: &mut Vec<ActionId>) -> Result<(), Infallible> {
        self.0.push(id);
        Ok(())
    }
    fn progress(&mut self, _: &mut Vec<ActionId>) -> Result<(), Infallible> {
        Ok(())
    }
}

#[test]
fn irequ_starts_dependents_when_the_prerequisite_starts() {
    // 0 -irequ-> 1 -irequ-> 2, and 3 requires 2: starting 0 starts 1 and 2 at once, 3 waits.
    let (mut b, ids) = builder_with(4);
    b.irequ(ids[0], ids[1]);
    b.irequ(ids[1], ids[2]);
    b.requ(ids[2], ids[3]);
    let s = b.build().unwrap();
    let mut be = StartOnly(Vec::new());
    let mut ex = Execution::new(&s);
    ex.start(&mut be).unwrap();
    assert_eq!(be.0, [0, 1, 2]);
    assert_eq!(ex.running(), 3);
    assert!(!ex.test(&mut be).unwrap());
    assert_eq!(be.0, [0, 1, 2], "3 needs 2 to complete");
}

#[test]
fn long_irequ_chain_starts_without_recursion() {
    let n = 1_000_000;
    let (mut b, ids) = builder_with(n);
    for w in ids.windows(2) {
        b.irequ(w[0], w[1]);
    }
    let s = b.build().unwrap();
    let mut be = StartOnly(Vec::with_capacity(n as usize));
    let mut ex = Execution::new(&s);
    ex.start(&mut be).unwrap();
    assert_eq!(be.0.len(), n as usize);
    assert!(be.0.windows(2).all(|w| w[0] + 1 == w[1]));
}

// ---------------------------------------------------------------- sliding window (the GOAL paper's Theorems 3, 4)

/// Random DAG with both kinds of edge: completion (`requ`) and start (`irequ`).
fn random_dag_mixed(rng: &mut Rng, n: u32, edge_pct: u32) -> Schedule {
    let (mut b, ids) = builder_with(n);
    let perm = shuffled(rng, ids);
    for i in 0..perm.len() {
        for j in i + 1..perm.len() {
            if rng.chance(edge_pct) {
                if rng.chance(25) {
                    b.irequ(perm[i], perm[j]);
                } else {
                    b.requ(perm[i], perm[j]);
                }
            }
        }
    }
    b.build().unwrap()
}

/// Checks both kinds of edge at every start: completion edges against completed actions,
/// start edges against started ones. Completes started actions in random order.
struct EdgeCheck<'a> {
    sched: &'a Schedule,
    rng: Rng,
    immediate_pct: u32,
    started: Vec<bool>,
    finished: Vec<bool>,
    pending: Vec<ActionId>,
    /// (prerequisite, dependent, start edge)
    preds: Vec<Vec<(ActionId, bool)>>,
}

impl<'a> EdgeCheck<'a> {
    fn new(sched: &'a Schedule, seed: u64, immediate_pct: u32) -> Self {
        let mut preds = vec![Vec::new(); sched.len()];
        for (id, _) in sched.actions() {
            for &d in sched.dependents(id) {
                preds[d as usize].push((id, false));
            }
            for &d in sched.start_dependents(id) {
                preds[d as usize].push((id, true));
            }
        }
        EdgeCheck {
            sched,
            rng: Rng::new(seed),
            immediate_pct,
            started: vec![false; sched.len()],
            finished: vec![false; sched.len()],
            pending: Vec::new(),
            preds,
        }
    }
}

impl Backend for EdgeCheck<'_> {
    type Error = Infallible;
    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        assert_eq!(op, self.sched.op(id));
        assert!(!self.started[id as usize], "{id} started twice");
        for &(p, start_edge) in &self.preds[id as usize] {
            if start_edge {
                assert!(self.started[p as usize], "{id} started before {p} started");
            } else {
                assert!(
                    self.finished[p as usize],
                    "{id} started before {p} completed"
                );
            }
        }
        self.started[id as usize] = true;
        if self.rng.chance(self.immediate_pct) {
            self.finished[id as usize] = true;
            done.push(id);
        } else {
            self.pending.push(id);
        }
        Ok(())
    }
    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        assert!(!self.pending.is_empty(), "progress with nothing running");
        done.extend(complete_some(
            &mut self.rng,
            &mut self.pending,
            &mut self.finished,
        ));
        Ok(())
    }
}

#[test]
fn topological_order_respects_both_kinds_of_edge() {
    let mut rng = Rng::new(0x70F0);
    for _ in 0..200 {
        let n = rng.below(80) as u32;
        let pct = 1 + rng.below(15) as u32;
        let s = random_dag_mixed(&mut rng, n, pct);
        let order = window::topological_order(&s);
        assert_eq!(order.len(), s.len());
        let mut pos = vec![usize::MAX; s.len()];
        for (i, &id) in order.iter().enumerate() {
            assert_eq!(pos[id as usize], usize::MAX, "{id} listed twice");
            pos[id as usize] = i;
        }
        for (id, _) in s.actions() {
            for &d in s.dependents(id).iter().chain(s.start_dependents(id)) {
                assert!(pos[id as usize] < pos[d as usize]);
            }
        }
    }
    // Already in order: streams in id order.
    assert_eq!(window::topological_order(&chain(5)), vec![0, 1, 2, 3, 4]);
}

#[test]
fn windowed_runs_every_action_once_in_dependency_order() {
    let mut rng = Rng::new(0x3D0E);
    for round in 0..300u64 {
        let n = rng.below(120) as u32;
        let pct = 1 + rng.below(20) as u32;
        let s = random_dag_mixed(&mut rng, n, pct);
        for (w, immediate) in [(1, 0), (2, 40), (3, 100), (8, 0), (1000, 40)] {
            let seed = round * 1000 + w as u64;
            let mut be = EdgeCheck::new(&s, seed, immediate);
            let mut ex = WindowedExecution::new(TopoSource::new(&s), w);
            ex.wait(&mut be).unwrap();
            assert!(ex.is_done());
            assert_eq!(ex.completed(), s.len(), "seed {seed} window {w}");
            assert_eq!(ex.running(), 0);
            assert_eq!(ex.ignored_completions(), 0);
            assert!(
                ex.peak_window() <= w,
                "held {} > window {w}",
                ex.peak_window()
            );
            assert!(be.finished.iter().all(|&f| f));
        }
        // The requ-only checker with its injected bogus and duplicate reports.
        let pct = 1 + rng.below(20) as u32;
        let s = random_dag(&mut rng, n, pct);
        let mut fake = Fake::new(&s, round, 30);
        fake.noise = true;
        let mut ex = WindowedExecution::new(TopoSource::new(&s), 1 + rng.below(6));
        ex.wait(&mut fake).unwrap();
        fake.check_all_ran_once();
        assert_eq!(ex.ignored_completions(), fake.injected);
    }
}

/// Theorem 3's adversary (Fig. 3): i -> i+1 for all i, and j -> j + n/2 for j < n/2.
fn adversary(n: u32) -> Schedule {
    let (mut b, ids) = builder_with(n);
    for i in 0..n as usize - 1 {
        b.requ(ids[i], ids[i + 1]);
    }
    for j in 0..n as usize / 2 {
        b.requ(ids[j], ids[j + n as usize / 2]);
    }
    b.build().unwrap()
}

#[test]
fn theorem_3_adversary_needs_n_over_2_credits_and_theorem_4_bounds_them() {
    for n in [10u32, 100, 1000] {
        let s = adversary(n);
        let mut be = EdgeCheck::new(&s, 7, 100);
        let mut ex = WindowedExecution::new(TopoSource::new(&s), 2);
        ex.wait(&mut be).unwrap();
        assert_eq!(ex.completed(), n as usize);
        assert!(ex.peak_window() <= 2);
        // Each of the first n/2 completions leaves a credit for its partner n/2 ahead: the
        // bound is tight.
        assert_eq!(ex.peak_credit(), n as usize / 2, "n {n}");
        for k in [1usize, 3, 8] {
            let (t, origin) = window::bounded(&s, k);
            assert_eq!(origin.iter().filter(|o| o.is_some()).count(), n as usize);
            let mut be = EdgeCheck::new(&t, 9, 50);
            let mut ex = WindowedExecution::new(TopoSource::new(&t), 2);
            ex.wait(&mut be).unwrap();
            assert_eq!(ex.completed(), t.len());
            assert!(
                ex.peak_credit() <= k,
                "n {n} k {k}: peak credit {}",
                ex.peak_credit()
            );
        }
    }
}

#[test]
fn bounded_keeps_every_original_ordering() {
    // Every path of the original schedule is still a path of the transformed one: a
    // prerequisite completes (or, for a start edge, starts) before its dependent starts.
    let mut rng = Rng::new(0xB0B0);
    for _ in 0..100 {
        let n = 1 + rng.below(60) as u32;
        let pct = 1 + rng.below(20) as u32;
        let s = random_dag_mixed(&mut rng, n, pct);
        let k = 1 + rng.below(6);
        let (t, origin) = window::bounded(&s, k);
        let mut be = EdgeCheck::new(&t, 3, 30);
        let mut ex = WindowedExecution::new(TopoSource::new(&t), 1 + rng.below(4));
        // Record the order in which original actions start and complete.
        ex.wait(&mut be).unwrap();
        assert_eq!(ex.completed(), t.len());
        let mut reach = vec![vec![false; t.len()]; t.len()];
        for &id in window::topological_order(&t).iter().rev() {
            for &d in t.dependents(id).iter().chain(t.start_dependents(id)) {
                reach[id as usize][d as usize] = true;
                let row = reach[d as usize].clone();
                for (x, &r) in row.iter().enumerate() {
                    if r {
                        reach[id as usize][x] = true;
                    }
                }
            }
        }
        let mut new_of = vec![0usize; s.len()];
        for (new, o) in origin.iter().enumerate() {
            if let Some(o) = o {
                new_of[*o as usize] = new;
            }
        }
        for (id, _) in s.actions() {
            for &d in s.dependents(id).iter().chain(s.start_dependents(id)) {
                assert!(
                    reach[new_of[id as usize]][new_of[d as usize]],
                    "edge {id} -> {d} lost (k {k})"
                );
            }
        }
    }
}

// ---------------------------------------------------------------- layers

fn p2p(send: bool, peer: u32) -> Op {
    let buf = BufRef {
        slot: 0,
        offset: 0,
        len: 8,
    };
    if send {
        Op::Send { peer, tag: 0, buf }
    } else {
        Op::Recv { peer, tag: 0, buf }
    }
}

#[test]
fn binomial_broadcasts_are_layered_on_every_rank() {
    for n in 1..=64u32 {
        for me in 0..n {
            let s = crate::algo::binomial::bcast(n, 0, me, 64);
            let l = Layers::of(&s).unwrap_or_else(|| panic!("rank {me} of {n} not layered"));
            assert_eq!(l.order().len(), s.len());
            // Every action of a layer requires the whole layer before it.
            for k in 1..l.len() {
                for &a in l.layer(k) {
                    assert_eq!(s.prerequisites(a), l.layer(k - 1).len());
                    for &p in l.layer(k - 1) {
                        assert!(s.dependents(p).contains(&a));
                    }
                }
            }
            let want = match (me == 0, s.is_empty()) {
                (_, true) => 0,
                (true, false) => 1,
                // A leaf receives; an inner rank receives, then sends.
                (false, false) => 1 + usize::from(s.len() > 1),
            };
            assert_eq!(l.len(), want, "rank {me} of {n}");
        }
    }
}

#[test]
fn layers_refuse_what_the_executor_would_start_earlier() {
    // recv 0; send 1 requires 0; send 2 independent: 1 does not wait for 2 under the executor.
    let mut b = Builder::new();
    let r = b.add(p2p(false, 1));
    let s1 = b.add(p2p(true, 2));
    b.add(p2p(true, 3));
    b.requ(r, s1);
    assert_eq!(Layers::of(&b.build().unwrap()), None);
    // Two layers of two, the second requiring only half of the first.
    let mut b = Builder::new();
    let ids: Vec<_> = (0..4).map(|i| b.add(p2p(i % 2 == 0, i))).collect();
    b.requ(ids[0], ids[2]);
    b.requ(ids[1], ids[2]);
    b.requ(ids[0], ids[3]);
    assert_eq!(Layers::of(&b.clone().build().unwrap()), None);
    b.requ(ids[1], ids[3]);
    let l = Layers::of(&b.build().unwrap()).unwrap();
    assert_eq!(
        (l.len(), l.layer(0), l.layer(1)),
        (2, &[0, 1][..], &[2, 3][..])
    );
    // An edge that skips a layer: 2 requires 1 and 0, 1 requires 0.
    let mut b = Builder::new();
    let ids: Vec<_> = (0..3).map(|i| b.add(p2p(true, i))).collect();
    b.requ(ids[0], ids[1]);
    b.requ(ids[1], ids[2]);
    b.requ(ids[0], ids[2]);
    assert_eq!(Layers::of(&b.build().unwrap()), None);
    // Other ops, and irequ.
    let (b, _) = builder_with(2);
    assert_eq!(Layers::of(&b.build().unwrap()), None);
    let mut b = Builder::new();
    let a = b.add(p2p(true, 0));
    let c = b.add(p2p(false, 0));
    b.irequ(a, c);
    assert_eq!(Layers::of(&b.build().unwrap()), None);
    // A chain is layered, one action per layer; nothing is no layers.
    let mut b = Builder::new();
    let ids: Vec<_> = (0..5).map(|i| b.add(p2p(i % 2 == 1, 0))).collect();
    for w in ids.windows(2) {
        b.requ(w[0], w[1]);
    }
    assert_eq!(Layers::of(&b.build().unwrap()).unwrap().len(), 5);
    let l = Layers::of(&Builder::new().build().unwrap()).unwrap();
    assert!(l.is_empty());
}

#[test]
fn layered_runs_start_what_the_executor_starts() {
    // Random layered DAGs: running layer by layer with every completion order the fake
    // backend picks never starts an action before its prerequisites (Fake checks), and the
    // executor finds them layered exactly when every edge joins whole adjacent layers.
    let mut rng = Rng::new(0x1A7E);
    for _ in 0..300 {
        let mut b = Builder::new();
        let mut prev: Vec<ActionId> = Vec::new();
        let mut all_full = true;
        for _ in 0..1 + rng.below(5) {
            let width = 1 + rng.below(4);
            let cur: Vec<_> = (0..width)
                .map(|_| b.add(p2p(rng.chance(50), rng.below(8) as u32)))
                .collect();
            for &c in &cur {
                for &p in &prev {
                    if rng.chance(95) {
                        b.requ(p, c);
                    } else {
                        all_full = false;
                    }
                }
            }
            prev = cur;
        }
        let s = b.build().unwrap();
        let l = Layers::of(&s);
        assert_eq!(l.is_some(), all_full);
        if let Some(l) = l {
            let mut fake = Fake::new(&s, rng.next_u64(), 30);
            let mut done = Vec::new();
            for k in 0..l.len() {
                for &a in l.layer(k) {
                    fake.start(a, s.op(a), &mut done).unwrap();
                }
                while !fake.pending.is_empty() {
                    fake.progress(&mut done).unwrap();
                }
            }
            fake.check_all_ran_once();
        }
    }
}
