//! The dependency-driven executor (Listing 1 of the GOAL paper): starts the independent actions, and
//! whenever an action completes, counts down its dependents' prerequisites and starts those that
//! reach zero. What an action does is the `Backend`'s business; this module owns only the
//! bookkeeping of one run, so blocking and non-blocking collectives share it.

use super::ir::{ActionId, Op, Schedule};

/// What actually performs actions: the transports in production, a simulation in tests.
pub trait Backend {
    type Error;
    /// Start an action. It may complete at once (push its id onto `done`) or later (reported by
    /// progress).
    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>)
        -> Result<(), Self::Error>;
    /// Make progress (may block briefly); push ids of actions that completed.
    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Self::Error>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

/// One run of a schedule. All memory is sized at `new`; running it only reuses those vectors.
///
/// Completions the backend reports for actions that are not running (never started, already
/// completed, or not in the schedule) are ignored and counted, because a duplicate counted twice
/// would start a dependent before its other prerequisites finished.
///
/// If the backend returns an error, the error is handed back unchanged and the run should be
/// abandoned: the failed action stays marked as running.
#[derive(Clone, Debug)]
pub struct Execution<'s> {
    sched: &'s Schedule,
    remaining: Vec<u32>,
    state: Vec<State>,
    /// Completion reports not yet processed; used as a stack so that a chain of actions that
    /// complete immediately never holds more than a handful of entries.
    done: Vec<ActionId>,
    /// Actions whose prerequisites are met and that are about to start: a stack rather than
    /// recursion, because a chain of `irequ` edges starts a whole chain at once.
    starting: Vec<ActionId>,
    started: bool,
    running: usize,
    completed: usize,
    ignored: u64,
}

/// The memory of a finished run, kept to size the next run of any schedule without
/// allocating (`Execution::into_memory`, `Execution::with_memory`).
#[derive(Clone, Debug, Default)]
pub struct ExecMemory {
    remaining: Vec<u32>,
    state: Vec<State>,
    done: Vec<ActionId>,
    starting: Vec<ActionId>,
}

impl<'s> Execution<'s> {
    pub fn new(s: &'s Schedule) -> Self {
        Self::with_memory(s, ExecMemory::default())
    }

    /// A fresh run of `s` in the vectors of an earlier run (grown if `s` is larger).
    pub fn with_memory(s: &'s Schedule, m: ExecMemory) -> Self {
        let ExecMemory {
            mut remaining,
            mut state,
            mut done,
            mut starting,
        } = m;
        remaining.clear();
        remaining.extend((0..s.len() as ActionId).map(|id| s.prerequisites(id) as u32));
        state.clear();
        state.resize(s.len(), State::Waiting);
        done.clear();
        starting.clear();
        Execution {
            sched: s,
            remaining,
            state,
            done,
            starting,
            started: false,
            running: 0,
            completed: 0,
            ignored: 0,
        }
    }

    /// Gives the run's vectors back for `with_memory` (the run itself ends here).
    pub fn into_memory(self) -> ExecMemory {
        ExecMemory {
            remaining: self.remaining,
            state: self.state,
            done: self.done,
            starting: self.starting,
        }
    }

    /// Prepares another run of the same schedule, keeping the allocations.
    pub fn reset(&mut self) {
        let s = self.sched;
        for (id, r) in self.remaining.iter_mut().enumerate() {
            *r = s.prerequisites(id as ActionId) as u32;
        }
        self.state.fill(State::Waiting);
        self.done.clear();
        self.starting.clear();
        self.started = false;
        self.running = 0;
        self.completed = 0;
        self.ignored = 0;
    }

    /// The schedule this run executes.
    pub fn schedule(&self) -> &'s Schedule {
        self.sched
    }

    /// Starts every initially-ready action (and whatever their immediate completions unlock).
    /// Calling it again is a no-op.
    pub fn start<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let sched = self.sched;
        for id in sched.initially_ready() {
            self.launch(id, b)?;
        }
        self.drain(b)
    }

    /// One progress step: calls `b.progress`, then for each completed action decrements its
    /// dependents and starts those that reach zero. Returns `Ok(true)` when every action is
    /// complete; a finished run no longer calls the backend. Starts the run if needed.
    pub fn test<B: Backend>(&mut self, b: &mut B) -> Result<bool, B::Error> {
        if !self.started {
            self.start(b)?;
        }
        if self.is_done() {
            return Ok(true);
        }
        b.progress(&mut self.done)?;
        self.drain(b)?;
        Ok(self.is_done())
    }

    /// Runs `test` until every action is complete.
    pub fn wait<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        while !self.test(b)? {}
        Ok(())
    }

    /// True when every action completed.
    pub fn is_done(&self) -> bool {
        self.completed == self.sched.len()
    }

    /// Number of actions completed so far.
    pub fn completed(&self) -> usize {
        self.completed
    }

    /// Number of actions started and not yet completed.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Completion reports that were ignored (duplicates, not started, unknown ids).
    pub fn ignored_completions(&self) -> u64 {
        self.ignored
    }

    /// Starts `id`, then every action whose last prerequisite was `id`'s start (`irequ`).
    fn launch<B: Backend>(&mut self, id: ActionId, b: &mut B) -> Result<(), B::Error> {
        let sched = self.sched;
        self.starting.push(id);
        while let Some(id) = self.starting.pop() {
            debug_assert_eq!(self.state[id as usize], State::Waiting);
            self.state[id as usize] = State::Running;
            self.running += 1;
            b.start(id, sched.op(id), &mut self.done)?;
            for &d in sched.start_dependents(id) {
                let r = &mut self.remaining[d as usize];
                *r -= 1;
                if *r == 0 {
                    self.starting.push(d);
                }
            }
        }
        Ok(())
    }

    fn drain<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        let sched = self.sched;
        while let Some(id) = self.done.pop() {
            match self.state.get(id as usize) {
                Some(State::Running) => {}
                _ => {
                    self.ignored += 1;
                    continue;
                }
            }
            self.state[id as usize] = State::Done;
            self.running -= 1;
            self.completed += 1;
            for &d in sched.dependents(id) {
                let r = &mut self.remaining[d as usize];
                // Cannot underflow: edges are distinct and each completion is counted once.
                *r -= 1;
                if *r == 0 {
                    self.launch(d, b)?;
                }
            }
        }
        Ok(())
    }
}
