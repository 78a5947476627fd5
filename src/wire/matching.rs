//! matching: which posted receive takes which multicast, as MPI matches point-to-point
//! messages. A receive names a source (or any) and a tag (or any); posted receives are tried
//! in the order they were posted, messages in the order they became visible. One root's
//! multicasts to this rank become visible in the order the root sent them (their sequence
//! numbers), whatever paths they took: one that overtook an earlier one waits, unseen, until
//! the earlier one has come. So two multicasts of one source with one tag are received in
//! their send order, as MPI promises for messages.
//!
//! Pure: ids in, pairs of (receive, message) out. The transport holds the data and the
//! application's buffers.

use super::forward::{Arrived, MsgKey};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A posted receive's id (the transport's).
pub type RecvId = u64;

/// What a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// `None`: any source.
    pub source: Option<u32>,
    /// `None`: any tag.
    pub tag: Option<i32>,
}

impl Want {
    fn accepts(&self, m: &Arrived) -> bool {
        self.source.map_or(true, |s| s == m.key.root) && self.tag.map_or(true, |t| t == m.tag)
    }
}

#[derive(Default)]
pub struct Matcher {
    /// Per root, the sequence number of the next multicast to become visible.
    next_seq: HashMap<u32, u64>,
    /// Arrived but not visible yet (an earlier one of the same root has not come).
    held: BTreeMap<(u32, u64), Arrived>,
    /// Visible and not taken by a receive, in the order they became visible.
    unmatched: VecDeque<Arrived>,
    /// Receives not matched yet, in the order they were posted.
    posted: VecDeque<(RecvId, Want)>,
}

impl Matcher {
    /// Posts a receive: the message it takes at once, if one is there.
    pub fn post(&mut self, id: RecvId, want: Want) -> Option<Arrived> {
        if let Some(i) = self.unmatched.iter().position(|m| want.accepts(m)) {
            return self.unmatched.remove(i);
        }
        self.posted.push_back((id, want));
        None
    }

    /// Withdraws a posted receive that has not matched (a freed or cancelled request); false
    /// if it was not waiting.
    pub fn withdraw(&mut self, id: RecvId) -> bool {
        match self.posted.iter().position(|(r, _)| *r == id) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// A multicast's first segment came: the pairs of (receive, message) this makes, the
    /// message itself and any later ones of its root that were waiting for it to become
    /// visible first.
    pub fn arrive(&mut self, m: Arrived) -> Vec<(RecvId, Arrived)> {
        let root = m.key.root;
        self.held.insert((root, m.seq), m);
        let mut matched = Vec::new();
        loop {
            let next = *self.next_seq.get(&root).unwrap_or(&0);
            let Some(v) = self.held.remove(&(root, next)) else {
                break;
            };
            self.next_seq.insert(root, next + 1);
            match self.posted.iter().position(|(_, w)| w.accepts(&v)) {
                Some(i) => {
                    let (id, _) = self.posted.remove(i).expect("found");
                    matched.push((id, v));
                }
                None => self.unmatched.push_back(v),
            }
        }
        matched
    }

    /// The first visible message a receive of `want` would take (MPI_Iprobe).
    pub fn probe(&self, want: Want) -> Option<Arrived> {
        self.unmatched.iter().find(|m| want.accepts(m)).copied()
    }

    /// Takes the message `probe` found (a receive posted right after the probe).
    pub fn take(&mut self, key: MsgKey) -> Option<Arrived> {
        let i = self.unmatched.iter().position(|m| m.key == key)?;
        self.unmatched.remove(i)
    }

    /// Messages that came and no receive has taken.
    pub fn unmatched(&self) -> usize {
        self.unmatched.len() + self.held.len()
    }

    /// The messages that came and no receive has taken, visible ones first.
    pub fn unmatched_list(&self) -> Vec<Arrived> {
        self.unmatched
            .iter()
            .chain(self.held.values())
            .copied()
            .collect()
    }

    /// Receives posted and not matched.
    pub fn waiting(&self) -> usize {
        self.posted.len()
    }
}
