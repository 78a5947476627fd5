//! The schedule IR: actions in an index-addressed arena, `requ` edges stored as a compact
//! dependents table, and the `Builder` that validates a graph once so that executors never have
//! to. Mirrors the binary GOAL schedule of seed 004 (independent actions first, then per action a
//! sources counter, the operation and its dependents) without committing to a byte layout yet.

use std::fmt;

/// Index of an action inside one `Schedule`.
pub type ActionId = u32;

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
    Send { peer: u32, tag: u16, buf: BufRef },
    /// Point-to-point receive over the host MPI, on the communicator's private duplicate.
    Recv { peer: u32, tag: u16, buf: BufRef },
    /// Reliable multicast of `buf` to the communicator's group.
    McastSend { buf: BufRef },
    /// Receive the multicast that `root` sends in this operation.
    McastRecv { root: u32, buf: BufRef },
    /// Local transformation of `src` into `dst` (GOAL `exec`); `func` names it in a table the
    /// backend owns.
    Exec { func: u16, src: BufRef, dst: BufRef },
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
}

/// Collects actions and `requ` edges; `build` validates them into a `Schedule`.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    ops: Vec<Op>,
    /// (first, then): `then` waits for `first`. Validated only in `build`, so that generators
    /// can add edges in any order without handling errors at every call.
    edges: Vec<(ActionId, ActionId)>,
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

    /// Number of actions added so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when no action was added yet.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Validates the graph: rejects unknown ids, self-dependencies and cycles; merges duplicate
    /// edges. Runs in O(E log E) without recursion, so long chains cannot overflow the stack.
    pub fn build(self) -> Result<Schedule, BuildError> {
        let Builder { ops, mut edges } = self;
        let len = ops.len();
        for &(first, then) in &edges {
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

        let mut dep_start = vec![0usize; len + 1];
        let mut prereqs = vec![0u32; len];
        for &(first, then) in &edges {
            dep_start[first as usize + 1] += 1;
            prereqs[then as usize] += 1;
        }
        for i in 0..len {
            dep_start[i + 1] += dep_start[i];
        }
        let deps: Vec<ActionId> = edges.iter().map(|&(_, then)| then).collect();
        let ready: Vec<ActionId> = (0..len as ActionId)
            .filter(|&id| prereqs[id as usize] == 0)
            .collect();

        let sched = Schedule {
            ops,
            prereqs,
            dep_start,
            deps,
            ready,
        };
        match unresolved_after_topological_sort(&sched) {
            None => Ok(sched),
            Some(remaining) => Err(BuildError::Cycle {
                id: action_on_cycle(&edges, &remaining),
            }),
        }
    }
}

/// Kahn's algorithm. Returns `None` when every action was ordered, else the per-action count of
/// prerequisites that never completed (non-zero exactly for actions on or behind a cycle).
fn unresolved_after_topological_sort(s: &Schedule) -> Option<Vec<u32>> {
    let mut remaining = s.prereqs.clone();
    let mut stack = s.ready.clone();
    let mut ordered = 0usize;
    while let Some(id) = stack.pop() {
        ordered += 1;
        for &d in s.dependents(id) {
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
