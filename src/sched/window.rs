//! Sliding-window execution (the GOAL paper, Sec. III-D, Theorems 3 and 4): a schedule's actions
//! arrive one by one in a topological order, and at most `window` of them are held at a time,
//! read but not completed. A completion whose dependent has not been read yet is remembered in
//! a credit table (the paper's H[a] -> f) and subtracted from that dependent's counter when it
//! arrives. The executor's state is O(window + credits); Theorem 3's adversary needs n/2
//! credits, and `bounded` (Theorem 4) rewrites any schedule so that credits stay below its
//! segment length, at the price of parallelism across segments.
//!
//! Progress never stops for lack of room: the earliest action in the window comes after all
//! its prerequisites, which have therefore all been read, and none of them is still in the
//! window (they are earlier), so they have completed (or started, for `irequ` edges) and it can
//! run. Pure: the `Backend` does all I/O, as for `Execution`.

use super::exec::Backend;
use super::ir::{ActionId, Builder, Op, Schedule};
use std::collections::HashMap;

/// One action as a source hands it over: its id (as the backend will see it), its operation,
/// how many prerequisites it has (completion and start edges together, as
/// `Schedule::prerequisites`), and the actions that wait for its completion and its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streamed {
    pub id: ActionId,
    pub op: Op,
    pub prerequisites: u32,
    pub dependents: Vec<ActionId>,
    pub start_dependents: Vec<ActionId>,
}

/// Where a windowed execution reads its actions: every action exactly once, each after all of
/// its prerequisites.
pub trait ActionSource {
    fn next_action(&mut self) -> Option<Streamed>;
}

/// The actions of an in-memory schedule in a topological order (Kahn's algorithm, smallest id
/// first among the ready ones, so a schedule already in order streams in id order).
#[derive(Clone, Debug)]
pub struct TopoSource<'s> {
    sched: &'s Schedule,
    order: Vec<ActionId>,
    next: usize,
}

impl<'s> TopoSource<'s> {
    pub fn new(sched: &'s Schedule) -> Self {
        TopoSource {
            sched,
            order: topological_order(sched),
            next: 0,
        }
    }
}

impl ActionSource for TopoSource<'_> {
    fn next_action(&mut self) -> Option<Streamed> {
        let &id = self.order.get(self.next)?;
        self.next += 1;
        let s = self.sched;
        Some(Streamed {
            id,
            op: s.op(id).clone(),
            prerequisites: s.prerequisites(id) as u32,
            dependents: s.dependents(id).to_vec(),
            start_dependents: s.start_dependents(id).to_vec(),
        })
    }
}

/// A topological order of `s` over both kinds of edge.
pub fn topological_order(s: &Schedule) -> Vec<ActionId> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = s.len();
    let mut left: Vec<u32> = (0..n as ActionId)
        .map(|id| s.prerequisites(id) as u32)
        .collect();
    let mut ready: BinaryHeap<Reverse<ActionId>> = s.initially_ready().map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(id)) = ready.pop() {
        order.push(id);
        for &d in s.dependents(id).iter().chain(s.start_dependents(id)) {
            left[d as usize] -= 1;
            if left[d as usize] == 0 {
                ready.push(Reverse(d));
            }
        }
    }
    debug_assert_eq!(order.len(), n, "a Schedule is acyclic");
    order
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
}

#[derive(Debug)]
struct Slot {
    op: Option<Op>,
    remaining: u32,
    state: State,
    dependents: Vec<ActionId>,
    /// Dropped at the start, which is all they wait for.
    start_dependents: Vec<ActionId>,
}

/// One run of a streamed schedule with at most `window` actions held at a time.
#[derive(Debug)]
pub struct WindowedExecution<S> {
    src: S,
    exhausted: bool,
    window: usize,
    slots: HashMap<ActionId, Slot>,
    /// Theorem 3's H: completions (and starts, for `irequ`) already seen for actions not read yet.
    credit: HashMap<ActionId, u32>,
    done: Vec<ActionId>,
    starting: Vec<ActionId>,
    started: bool,
    completed: usize,
    running: usize,
    ignored: u64,
    peak_window: usize,
    peak_credit: usize,
    /// Why the stream is not a schedule (counters that disagree with the edges, dependents
    /// that name no action); set once, and the run ends.
    fault: Option<String>,
}

impl<S: ActionSource> WindowedExecution<S> {
    /// `window` is at least 1.
    pub fn new(src: S, window: usize) -> Self {
        WindowedExecution {
            src,
            exhausted: false,
            window: window.max(1),
            slots: HashMap::new(),
            credit: HashMap::new(),
            done: Vec::new(),
            starting: Vec::new(),
            started: false,
            completed: 0,
            running: 0,
            ignored: 0,
            peak_window: 0,
            peak_credit: 0,
            fault: None,
        }
    }

    /// The source, e.g. to ask it whether it ended early.
    pub fn source(&self) -> &S {
        &self.src
    }

    /// Why the stream turned out not to be a valid schedule: the run stopped there (`test`
    /// reports it finished). Never set for a `TopoSource` over a `Schedule`.
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    fn set_fault(&mut self, msg: String) {
        if self.fault.is_none() {
            self.fault = Some(msg);
        }
    }

    /// Reads actions while there is room and starts those that are ready, until neither
    /// reading nor immediate completions change anything.
    pub fn start<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        if !self.started {
            self.started = true;
        }
        self.settle(b)
    }

    /// One progress step: the backend's completions, then refilling the window. `Ok(true)`
    /// once every action of the source has completed, or once the stream proved invalid
    /// (`fault`).
    pub fn test<B: Backend>(&mut self, b: &mut B) -> Result<bool, B::Error> {
        if !self.started {
            self.start(b)?;
        }
        if self.is_done() || self.fault.is_some() {
            return Ok(true);
        }
        if self.running > 0 {
            b.progress(&mut self.done)?;
            self.settle(b)?;
        }
        if self.exhausted && self.slots.is_empty() && !self.credit.is_empty() {
            let mut ids: Vec<ActionId> = self.credit.keys().copied().collect();
            ids.sort_unstable();
            ids.truncate(5);
            self.set_fault(format!("dependents {ids:?} name no action of the schedule"));
        } else if !self.is_done() && self.running == 0 && self.fault.is_none() {
            // Nothing runs, so nothing will complete: the held actions wait for more
            // prerequisites than there are edges.
            let mut ids: Vec<ActionId> = self.slots.keys().copied().collect();
            ids.sort_unstable();
            ids.truncate(5);
            self.set_fault(format!(
                "actions {ids:?} wait for more prerequisites than list them as dependents"
            ));
        }
        Ok(self.is_done() || self.fault.is_some())
    }

    /// Runs `test` until every action is complete.
    pub fn wait<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        while !self.test(b)? {}
        Ok(())
    }

    pub fn is_done(&self) -> bool {
        self.exhausted && self.slots.is_empty()
    }

    /// Actions completed so far.
    pub fn completed(&self) -> usize {
        self.completed
    }

    /// Actions started and not yet completed.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Completion reports ignored (duplicates, actions not running, unknown ids).
    pub fn ignored_completions(&self) -> u64 {
        self.ignored
    }

    /// The most actions held at once (never above the window).
    pub fn peak_window(&self) -> usize {
        self.peak_window
    }

    /// The most credit entries held at once (Theorem 3's extra space).
    pub fn peak_credit(&self) -> usize {
        self.peak_credit
    }

    fn settle<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        loop {
            self.drain(b)?;
            if !self.fill(b)? {
                return Ok(());
            }
        }
    }

    /// Reads while there is room; true if anything was read.
    fn fill<B: Backend>(&mut self, b: &mut B) -> Result<bool, B::Error> {
        let mut read = false;
        while !self.exhausted && self.slots.len() < self.window {
            let Some(s) = self.src.next_action() else {
                self.exhausted = true;
                break;
            };
            read = true;
            let seen = self.credit.remove(&s.id).unwrap_or(0);
            if seen > s.prerequisites || self.slots.contains_key(&s.id) {
                self.set_fault(format!(
                    "action {} is listed as a dependent {seen} times, its counter says {}, or                      it comes twice",
                    s.id, s.prerequisites
                ));
                self.exhausted = true;
                break;
            }
            let remaining = s.prerequisites - seen;
            let id = s.id;
            self.slots.insert(
                id,
                Slot {
                    op: Some(s.op),
                    remaining,
                    state: State::Waiting,
                    dependents: s.dependents,
                    start_dependents: s.start_dependents,
                },
            );
            self.peak_window = self.peak_window.max(self.slots.len());
            if remaining == 0 {
                self.launch(id, b)?;
            }
            if !self.done.is_empty() {
                self.drain(b)?;
            }
        }
        Ok(read)
    }

    /// One prerequisite of `d` is satisfied; true if `d` became ready.
    fn satisfy(&mut self, d: ActionId) -> bool {
        match self.slots.get_mut(&d) {
            Some(slot) if slot.state == State::Waiting && slot.remaining > 0 => {
                slot.remaining -= 1;
                slot.remaining == 0
            }
            Some(_) => {
                self.set_fault(format!(
                    "action {d} is listed as a dependent more often than its counter says"
                ));
                false
            }
            None => {
                *self.credit.entry(d).or_insert(0) += 1;
                self.peak_credit = self.peak_credit.max(self.credit.len());
                false
            }
        }
    }

    fn launch<B: Backend>(&mut self, id: ActionId, b: &mut B) -> Result<(), B::Error> {
        self.starting.push(id);
        while let Some(id) = self.starting.pop() {
            let Some(slot) = self.slots.get_mut(&id) else {
                continue;
            };
            slot.state = State::Running;
            let op = slot.op.take().expect("an action starts once");
            let sdeps = std::mem::take(&mut slot.start_dependents);
            self.running += 1;
            b.start(id, &op, &mut self.done)?;
            for d in sdeps {
                if self.satisfy(d) {
                    self.starting.push(d);
                }
            }
        }
        Ok(())
    }

    fn drain<B: Backend>(&mut self, b: &mut B) -> Result<(), B::Error> {
        while let Some(id) = self.done.pop() {
            let running = matches!(self.slots.get(&id), Some(s) if s.state == State::Running);
            if !running {
                self.ignored += 1;
                continue;
            }
            let slot = self.slots.remove(&id).expect("checked above");
            self.running -= 1;
            self.completed += 1;
            for d in slot.dependents {
                if self.satisfy(d) {
                    self.launch(d, b)?;
                }
            }
        }
        Ok(())
    }
}

/// Theorem 4: the same actions, with a dummy (`calc 0`) after every `k` actions of a
/// topological order, such that every action of a segment waits for the dummy before it and
/// the dummy after it waits for the whole segment; edges that cross a dummy are dropped (the
/// dummies imply them) and start edges across one become completion order. Run through a
/// window in that order, at most `k` credits are held (tested), whatever the schedule. Returns the schedule and,
/// per new action, the id it had (None for a dummy).
pub fn bounded(s: &Schedule, k: usize) -> (Schedule, Vec<Option<ActionId>>) {
    let k = k.max(1);
    let order = topological_order(s);
    let mut b = Builder::new();
    let mut origin = Vec::with_capacity(order.len() + order.len() / k + 1);
    let mut new_id = vec![0 as ActionId; s.len()];
    let mut segment = vec![0usize; s.len()];
    let mut prev_dummy: Option<ActionId> = None;
    let mut members: Vec<ActionId> = Vec::new();
    let mut seg = 0usize;
    for (pos, &id) in order.iter().enumerate() {
        let n = b.add(s.op(id).clone());
        origin.push(Some(id));
        new_id[id as usize] = n;
        segment[id as usize] = seg;
        if let Some(d) = prev_dummy {
            b.requ(d, n);
        }
        members.push(n);
        if (pos + 1) % k == 0 && pos + 1 < order.len() {
            let d = b.add(Op::Calc { nanos: 0 });
            origin.push(None);
            for &m in &members {
                b.requ(m, d);
            }
            members.clear();
            prev_dummy = Some(d);
            seg += 1;
        }
    }
    for &id in &order {
        let sg = segment[id as usize];
        for &d in s.dependents(id) {
            if segment[d as usize] == sg {
                b.requ(new_id[id as usize], new_id[d as usize]);
            }
        }
        for &d in s.start_dependents(id) {
            if segment[d as usize] == sg {
                b.irequ(new_id[id as usize], new_id[d as usize]);
            }
        }
    }
    let out = b
        .build()
        .expect("a topological order with forward edges is acyclic");
    (out, origin)
}
