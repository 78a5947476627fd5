//! Schedules that run in rounds. Many collectives (a binomial broadcast, a scatter, the rounds
//! of LibNBC's schedules) are, on each rank, a sequence of layers: some point-to-point actions
//! without prerequisites, then actions that each require every action of the layer before,
//! and so on. For such a schedule, "start a layer, wait for all of it, start the next" starts
//! every action exactly when the dependency-driven executor (`exec`) would, so a backend can
//! run it with one wait call per layer and no bookkeeping per action (`host::p2p::Rounds`).
//! `Layers::of` finds that form, and refuses anything else: another op than send and recv,
//! an `irequ` edge, or an action that does not require the whole layer before it (it could
//! start earlier under the executor, and waiting for the rest could even deadlock).

use super::ir::{ActionId, Op, Schedule};

/// A schedule's actions in layers: layer `k` is `order[bounds[k]..bounds[k + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    order: Vec<ActionId>,
    bounds: Vec<usize>,
}

impl Layers {
    /// The layers of `s`, or None when `s` is not layered point-to-point (see the module
    /// comment). An empty schedule has no layers.
    pub fn of(s: &Schedule) -> Option<Layers> {
        let n = s.len();
        for (id, op) in s.actions() {
            if !matches!(op, Op::Send { .. } | Op::Recv { .. })
                || !s.start_dependents(id).is_empty()
            {
                return None;
            }
        }
        let mut order: Vec<ActionId> = s.initially_ready().collect();
        let mut bounds = vec![0];
        if n > 0 {
            bounds.push(order.len());
        }
        // How many actions of the current layer each action requires.
        let mut count = vec![0usize; n];
        let mut from = 0;
        while from < order.len() {
            let to = order.len();
            let width = to - from;
            for i in from..to {
                for &d in s.dependents(order[i]) {
                    if count[d as usize] == 0 {
                        order.push(d);
                    }
                    count[d as usize] += 1;
                }
            }
            for &d in &order[to..] {
                let c = count[d as usize];
                if c != width || s.prerequisites(d) != width {
                    return None;
                }
            }
            if order.len() > to {
                bounds.push(order.len());
            }
            from = to;
        }
        // Acyclic (a `Schedule` is), so every action was reached.
        debug_assert_eq!(order.len(), n);
        Some(Layers { order, bounds })
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// True for the layers of an empty schedule.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The actions of layer `k`.
    pub fn layer(&self, k: usize) -> &[ActionId] {
        &self.order[self.bounds[k]..self.bounds[k + 1]]
    }

    /// All actions, layer after layer.
    pub fn order(&self) -> &[ActionId] {
        &self.order
    }
}
