//! The schedule IR: actions in an index-addressed arena, `requ` edges stored as a compact
//! dependents table, and the `Builder` that validates a graph once so that executors never have
//! to. Mirrors the binary GOAL schedule of the GOAL paper (independent actions first, then per action a
//! sources counter, the operation and its dependents); `goal::binary` is its byte layout.

use std::fmt;

use super::func::Func;

/// Index of an action inside one `Schedule`.
pub type ActionId = u32;

/// `Recv::peer` that matches a message from any rank (LogGOPSim's `from -1`).
pub const ANY_PEER: u32 = u32::MAX;
/// `Recv::tag` that matches any tag (LogGOPSim's `tag -1`).
pub const ANY_TAG: u32 = u32::MAX;
/// The slot of bytes with no home: LogGOPSim schedules state sizes but no buffers, so they
/// replay traffic from and into a scratch area at least as large as the largest such `len`,
/// which the executor provides. Offsets in it mean nothing and are always 0.
pub const SCRATCH_SLOT: u16 = u16::MAX;

/// Where an action's bytes live: a slot (0 = the collective's user buffer, others bound later),
/// an offset into it and a length. Slots rather than pointers keep a schedule reusable across calls
/// with different buffers, which is what lets callers cache it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufRef {
    pub slot: u16,
    pub offset: usize,
    pub len: usize,
}

impl BufRef {
    /// The zero-length buffer that scouts and barrier releases carry.
    pub const EMPTY: BufRef = BufRef {
        slot: 0,
        offset: 0,
        len: 0,
    };
}

/// One primitive action of a rank's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Point-to-point send over the host MPI, on the communicator's private duplicate.
    Send { peer: u32, tag: u32, buf: BufRef },
    /// Point-to-point receive over the host MPI, on the communicator's private duplicate.
    /// `peer` may be `ANY_PEER` and `tag` `ANY_TAG`.
    Recv { peer: u32, tag: u32, buf: BufRef },
    /// Reliable multicast of `buf` to the communicator's group.
    McastSend { buf: BufRef },
    /// Receive the multicast that `root` sends in this operation.
    McastRecv { root: u32, buf: BufRef },
    /// Local transformation (GOAL `exec`): `dst = src op dst` for a predefined function
    /// (`sched::func::apply`), or a registered user function called on both buffers.
    Exec {
        func: Func,
        src: BufRef,
        dst: BufRef,
    },
    /// Local computation of `nanos` nanoseconds with no data (LogGOPSim `calc`): the executor
    /// spins for that long, so a traffic replay keeps the file's compute gaps.
    Calc { nanos: u64 },
}

/// Why a graph could not become a `Schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A `requ` named an action that was never added.
    UnknownAction { id: ActionId, len: usize },
    /// A `requ` made an action wait for itself.
    SelfDependency { id: ActionId },
    /// The `requ` edges form a cycle; `id` lies on it.
    Cycle { id: ActionId },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BuildError::UnknownAction { id, len } => {
                write!(f, "requ names action {id}, but only {len} actions exist")
            }
            BuildError::SelfDependency { id } => write!(f, "action {id} requires itself"),
            BuildError::Cycle { id } => {
                write!(f, "requ edges form a cycle through action {id}")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// A validated, immutable per-rank schedule: acyclic, every edge between existing actions.
/// Built once and shared (`&Schedule` or `Arc<Schedule>`) by any number of executions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    ops: Vec<Op>,
    /// Number of distinct prerequisites of each action (the paper's "num sources").
    prereqs: Vec<u32>,
    /// Dependents of action `i` are `deps[dep_start[i]..dep_start[i + 1]]`, ascending.
    dep_start: Vec<usize>,
    deps: Vec<ActionId>,
    /// Start-dependents (`irequ`): `sdeps[sdep_start[i]..sdep_start[i + 1]]` may start once `i`
    /// has started. Empty tables for schedules without such edges.
    sdep_start: Vec<usize>,
    sdeps: Vec<ActionId>,
    /// Actions without prerequisites, ascending.
    ready: Vec<ActionId>,
}

impl Schedule {
    /// Number of actions.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when there is nothing to do (e.g. a collective over one rank).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The operation of action `id`. Panics if `id` is out of range.
    pub fn op(&self, id: ActionId) -> &Op {
        &self.ops[id as usize]
    }

    /// How many distinct actions must complete before `id` may start.
    pub fn prerequisites(&self, id: ActionId) -> usize {
        self.prereqs[id as usize] as usize
    }

    /// The actions that wait for `id`, ascending, each listed once.
    pub fn dependents(&self, id: ActionId) -> &[ActionId] {
        let i = id as usize;
        &self.deps[self.dep_start[i]..self.dep_start[i + 1]]
    }

    /// The actions that may start once `id` has started (`irequ`), ascending, each listed once.
    pub fn start_dependents(&self, id: ActionId) -> &[ActionId] {
        let i = id as usize;
        match self.sdep_start.get(i + 1) {
            Some(&end) => &self.sdeps[self.sdep_start[i]..end],
            None => &[],
        }
    }

    /// True when some action waits for another's start rather than its completion.
    pub fn has_start_dependencies(&self) -> bool {
        !self.sdeps.is_empty()
    }

    /// Actions with no prerequisites, ascending: the ones an executor starts first.
    pub fn initially_ready(&self) -> impl Iterator<Item = ActionId> + '_ {
        self.ready.iter().copied()
    }

    /// Every action id with its operation, in arena order.
    pub fn actions(&self) -> impl Iterator<Item = (ActionId, &Op)> + '_ {
        self.ops
            .iter()
            .enumerate()
            .map(|(i, op)| (i as ActionId, op))
    }

    /// Total number of distinct `requ` edges.
    pub fn edge_count(&self) -> usize {
        self.deps.len()
    }

    /// Total number of distinct `irequ` edges.
    pub fn start_edge_count(&self) -> usize {
        self.sdeps.len()
    }
}

/// Collects actions and `requ` edges; `build` validates them into a `Schedule`.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    ops: Vec<Op>,
    /// (first, then): `then` waits for `first`. Validated only in `build`, so that generators
    /// can add edges in any order without handling errors at every call.
    edges: Vec<(ActionId, ActionId)>,
    /// (first, then): `then` waits for `first` to start (`irequ`).
    start_edges: Vec<(ActionId, ActionId)>,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an action and returns its id (ids are dense, in insertion order).
    /// Panics if the arena would exceed `u32::MAX` actions.
    pub fn add(&mut self, op: Op) -> ActionId {
        let id = ActionId::try_from(self.ops.len()).expect("schedule exceeds u32::MAX actions");
        self.ops.push(op);
        id
    }

    /// `then` may start only after `first` completed (GOAL: `requ then -> first`).
    pub fn requ(&mut self, first: ActionId, then: ActionId) {
        self.edges.push((first, then));
    }

    /// `then` may start only after `first` started (LogGOPSim `then irequires first`).
    pub fn irequ(&mut self, first: ActionId, then: ActionId) {
        self.start_edges.push((first, then));
    }

    /// Number of actions added so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when no action was added yet.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Validates the graph: rejects unknown ids, self-dependencies and cycles (through either
    /// kind of edge); merges duplicate edges. Runs in O(E log E) without recursion, so long
    /// chains cannot overflow the stack.
    pub fn build(self) -> Result<Schedule, BuildError> {
        let Builder {
            ops,
            mut edges,
            mut start_edges,
        } = self;
        let len = ops.len();
        for &(first, then) in edges.iter().chain(&start_edges) {
            for id in [first, then] {
                if id as usize >= len {
                    return Err(BuildError::UnknownAction { id, len });
                }
            }
            if first == then {
                return Err(BuildError::SelfDependency { id: first });
            }
        }
        // Sorting by (first, then) both merges duplicates and lays the edges out exactly as the
        // dependents table wants them.
        edges.sort_unstable();
        edges.dedup();
        start_edges.sort_unstable();
        start_edges.dedup();

        let mut prereqs = vec![0u32; len];
        let (dep_start, deps) = table(len, &edges, &mut prereqs);
        let (sdep_start, sdeps) = if start_edges.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            table(len, &start_edges, &mut prereqs)
        };
        let ready: Vec<ActionId> = (0..len as ActionId)
            .filter(|&id| prereqs[id as usize] == 0)
            .collect();

        let sched = Schedule {
            ops,
            prereqs,
            dep_start,
            deps,
            sdep_start,
            sdeps,
            ready,
        };
        match unresolved_after_topological_sort(&sched) {
            None => Ok(sched),
            Some(remaining) => {
                let mut all = edges;
                all.extend_from_slice(&start_edges);
                all.sort_unstable();
                Err(BuildError::Cycle {
                    id: action_on_cycle(&all, &remaining),
                })
            }
        }
    }
}

/// The CSR table of sorted, distinct edges; counts each edge as a prerequisite of its head.
fn table(
    len: usize,
    edges: &[(ActionId, ActionId)],
    prereqs: &mut [u32],
) -> (Vec<usize>, Vec<ActionId>) {
    let mut start = vec![0usize; len + 1];
    for &(first, then) in edges {
        start[first as usize + 1] += 1;
        prereqs[then as usize] += 1;
    }
    for i in 0..len {
        start[i + 1] += start[i];
    }
    (start, edges.iter().map(|&(_, then)| then).collect())
}

/// Kahn's algorithm. Returns `None` when every action was ordered, else the per-action count of
/// prerequisites that never completed (non-zero exactly for actions on or behind a cycle).
fn unresolved_after_topological_sort(s: &Schedule) -> Option<Vec<u32>> {
    let mut remaining = s.prereqs.clone();
    let mut stack = s.ready.clone();
    let mut ordered = 0usize;
    while let Some(id) = stack.pop() {
        ordered += 1;
        for &d in s.dependents(id).iter().chain(s.start_dependents(id)) {
            let r = &mut remaining[d as usize];
            *r -= 1;
            if *r == 0 {
                stack.push(d);
            }
        }
    }
    (ordered != s.len()).then_some(remaining)
}

/// Every unresolved action has at least one unresolved prerequisite, so walking backwards along
/// such prerequisites must revisit an action; the first revisited one lies on a cycle.
fn action_on_cycle(sorted_edges: &[(ActionId, ActionId)], remaining: &[u32]) -> ActionId {
    let len = remaining.len();
    let unresolved = |id: ActionId| remaining[id as usize] != 0;
    let mut pred_of = vec![ActionId::MAX; len];
    for &(first, then) in sorted_edges {
        if unresolved(first) && unresolved(then) {
            pred_of[then as usize] = first;
        }
    }
    let mut seen = vec![false; len];
    let mut at = (0..len as ActionId)
        .find(|&id| unresolved(id))
        .expect("a failed sort leaves an unresolved action");
    while !seen[at as usize] {
        seen[at as usize] = true;
        at = pred_of[at as usize];
    }
    at
}
