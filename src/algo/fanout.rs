//! Fan-out detection for programs that know nothing of dynamic broadcast (`MPICAST_FANOUT`):
//! the send side of the seed's "detection of broadcasts" ("noticing on creating a send request
//! that one already exists for the same data, and aggregating them into a single request with
//! a list of recipients"), done in the shim instead of the runtime. The sends a program
//! issues one after another are held (deferred); those of one datum (same bytes, tag and
//! communicator) are gathered into a group, and at the next call that is not such a send the
//! groups go, in the order they were made: one with several recipients as one dynamic
//! broadcast, one with a single recipient as a send.
//!
//! Pure: which sends join which group, and which groups must go before a send that is not
//! held. It never sees MPI; `transport::fanout` holds the state and releases the groups.
//!
//! Order. MPI promises that one sender's messages to one destination are received in the
//! order they were sent (for a receive that could take either). Groups go in the order they
//! were made, each to all its recipients at once, so a destination receives the groups that
//! name it in that order. A send may therefore join the latest group of its datum only if no
//! later group names its destination, and only if that group does not name it already (a
//! datum sent twice to one rank goes twice, as two messages in order); otherwise it starts a
//! new group. A send that is not held (too small, blocking, another mode) must not overtake
//! the held ones to its destination: every group up to the last one naming it goes first.

/// One group: the sends of one datum, one per destination, in the order they were issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group<K, D, P> {
    /// What makes sends the same datum (the caller's: bytes, tag, communicator).
    pub key: K,
    /// Each send's destination and what the caller keeps for it.
    pub sends: Vec<(D, P)>,
}

impl<K, D: PartialEq, P> Group<K, D, P> {
    fn names(&self, dest: &D) -> bool {
        self.sends.iter().any(|(d, _)| d == dest)
    }
}

/// The held sends of one process, as groups in the order they were made.
#[derive(Debug)]
pub struct Collector<K, D, P> {
    groups: Vec<Group<K, D, P>>,
    held: usize,
}

impl<K, D, P> Default for Collector<K, D, P> {
    fn default() -> Self {
        Collector {
            groups: Vec::new(),
            held: 0,
        }
    }
}

impl<K: PartialEq, D: PartialEq, P> Collector<K, D, P> {
    /// Whether no send is held.
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// How many sends are held.
    pub fn held(&self) -> usize {
        self.held
    }

    /// How many groups are held.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Holds a send of datum `key` to `dest`: it joins the latest group of `key` when that
    /// keeps every destination's order (no later group names `dest`, and that group does not
    /// name it yet), else it starts a new group.
    pub fn defer(&mut self, key: K, dest: D, payload: P) {
        self.held += 1;
        let latest = self.groups.iter().rposition(|g| g.key == key);
        if let Some(i) = latest {
            let clear = !self.groups[i..].iter().any(|g| g.names(&dest));
            if clear {
                self.groups[i].sends.push((dest, payload));
                return;
            }
        }
        self.groups.push(Group {
            key,
            sends: vec![(dest, payload)],
        });
    }

    /// The groups that must go before a send to `dest` that is not held (in order): every
    /// group up to the last one naming `dest`; none when no group names it.
    pub fn before_send_to(&mut self, dest: &D) -> Vec<Group<K, D, P>> {
        match self.groups.iter().rposition(|g| g.names(dest)) {
            Some(last) => self.take(last + 1),
            None => Vec::new(),
        }
    }

    /// Every group, in order (the next call that is not a held send).
    pub fn take_all(&mut self) -> Vec<Group<K, D, P>> {
        self.take(self.groups.len())
    }

    fn take(&mut self, n: usize) -> Vec<Group<K, D, P>> {
        let out: Vec<_> = self.groups.drain(..n).collect();
        self.held -= out.iter().map(|g| g.sends.len()).sum::<usize>();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    type C = Collector<u32, u32, usize>;

    fn dests(g: &Group<u32, u32, usize>) -> Vec<u32> {
        g.sends.iter().map(|s| s.0).collect()
    }

    #[test]
    fn one_datum_to_three_ranks_is_one_group() {
        let mut c = C::default();
        for (i, d) in [1, 2, 3].into_iter().enumerate() {
            c.defer(7, d, i);
        }
        assert_eq!(c.held(), 3);
        let gs = c.take_all();
        assert_eq!(gs.len(), 1);
        assert_eq!(dests(&gs[0]), vec![1, 2, 3]);
        assert!(c.is_empty());
    }

    #[test]
    fn interleaved_tiles_group_by_datum() {
        // StarPU's burst: two tiles, each to ranks 1 and 2, interleaved.
        let mut c = C::default();
        c.defer(10, 1, 0);
        c.defer(20, 1, 1);
        c.defer(10, 2, 2);
        c.defer(20, 2, 3);
        let gs = c.take_all();
        assert_eq!(gs.len(), 2);
        assert_eq!((gs[0].key, dests(&gs[0])), (10, vec![1, 2]));
        assert_eq!((gs[1].key, dests(&gs[1])), (20, vec![1, 2]));
    }

    #[test]
    fn a_join_that_would_reorder_starts_a_new_group() {
        // A->1, B->2, B->1, A->2: A going first would give rank 2 A before B.
        let mut c = C::default();
        c.defer(1, 1, 0);
        c.defer(2, 2, 1);
        c.defer(2, 1, 2);
        c.defer(1, 2, 3);
        let gs = c.take_all();
        let got: Vec<(u32, Vec<u32>)> = gs.iter().map(|g| (g.key, dests(g))).collect();
        assert_eq!(got, vec![(1, vec![1]), (2, vec![2, 1]), (1, vec![2])]);
    }

    #[test]
    fn a_datum_sent_twice_to_one_rank_goes_twice() {
        let mut c = C::default();
        c.defer(5, 1, 0);
        c.defer(5, 2, 1);
        c.defer(5, 1, 2);
        let gs = c.take_all();
        assert_eq!(gs.len(), 2);
        assert_eq!(dests(&gs[0]), vec![1, 2]);
        assert_eq!(dests(&gs[1]), vec![1]);
        assert_eq!(gs[1].sends[0].1, 2);
    }

    #[test]
    fn a_plain_send_takes_the_groups_up_to_its_destination() {
        let mut c = C::default();
        c.defer(1, 1, 0);
        c.defer(2, 2, 1);
        c.defer(3, 3, 2);
        assert!(c.before_send_to(&4).is_empty());
        let gs = c.before_send_to(&2);
        assert_eq!(gs.iter().map(|g| g.key).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(c.held(), 1);
        assert_eq!(c.take_all()[0].key, 3);
    }

    /// Random programs: every held send goes once, each group names a rank at most once,
    /// and every destination receives in the order the sends were issued.
    #[test]
    fn random_programs_keep_every_destination_in_order() {
        let seed = 0x005e_edf0_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng::new(seed);
        let mut grouped = 0usize;
        for _ in 0..2000 {
            let mut c = C::default();
            let ranks = 1 + rng.below(6) as u32;
            // Per destination: the issue numbers it received, in order.
            let mut got: Vec<Vec<usize>> = vec![Vec::new(); ranks as usize];
            let mut sent: Vec<Vec<usize>> = vec![Vec::new(); ranks as usize];
            let deliver = |gs: Vec<Group<u32, u32, usize>>, got: &mut Vec<Vec<usize>>| {
                let mut n = 0;
                for g in gs {
                    let mut seen = Vec::new();
                    for (d, p) in g.sends {
                        assert!(!seen.contains(&d), "a group names rank {d} twice");
                        seen.push(d);
                        got[d as usize].push(p);
                    }
                    n += usize::from(seen.len() > 1);
                }
                n
            };
            for i in 0..(1 + rng.below(40) as usize) {
                let d = rng.below(u64::from(ranks)) as u32;
                sent[d as usize].push(i);
                match rng.below(10) {
                    0 => {
                        // A send that is not held.
                        grouped += deliver(c.before_send_to(&d), &mut got);
                        got[d as usize].push(i);
                    }
                    1 => {
                        grouped += deliver(c.take_all(), &mut got);
                        c.defer(rng.below(3) as u32, d, i);
                    }
                    _ => c.defer(rng.below(3) as u32, d, i),
                }
            }
            grouped += deliver(c.take_all(), &mut got);
            assert!(c.is_empty());
            assert_eq!(got, sent);
        }
        assert!(grouped > 1000, "only {grouped} groups of several ranks");
    }
}
