//! The simulator's event queue: a radix heap. Simulated time never goes backwards (every event
//! is scheduled at or after the one being handled) and each event carries a unique sequence
//! number, so the keys `(time, seq)` that leave the queue only grow. A radix heap uses exactly
//! that: an item sits in the bucket numbered by the highest bit in which its time differs from the
//! last time taken out, and only the lowest non-empty bucket is ever sorted out again. Each item
//! moves down a few buckets in its life instead of climbing a binary heap of a million entries
//! at every push and pop, and the buckets are scanned in order, which the cache likes; at 2^20
//! ranks it is what makes the simulator several times faster than `BinaryHeap`.

/// A min-queue of `(time, seq)` keys, each with its value. Keys pushed must not be below the
/// last key popped (debug builds check it).
///
/// The radix is on the time alone; the items of the earliest time are then taken out of the
/// buckets at once into `now` and sorted by sequence number. A radix on the whole `(time, seq)`
/// key would sort those ties one bit of the sequence at a time instead, moving each item some
/// twenty times when a binomial tree over 2^20 ranks makes half a million events of the same
/// time; here an item moves only while its time is ahead, and the ties are sorted once (they
/// were mostly pushed in order already, which the sort notices).
pub struct RadixQueue<T> {
    /// The time of the items in `now`: the last time taken out of the buckets.
    last: u64,
    /// Items at time `last` in sequence order; `now[head..]` are still in the queue.
    now: Vec<(u64, T)>,
    head: usize,
    /// Bucket `b` (1 to 64) holds the items whose time differs from `last` first in bit
    /// `b - 1` (bucket 0 is `now`).
    buckets: Vec<Vec<(u64, u64, T)>>,
    len: usize,
}

impl<T: Copy> Default for RadixQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// `T: Copy`: the items of the current time are read in place, front to back, and the batch
/// is cleared once it is all taken (the engine's events are a few numbers).
impl<T: Copy> RadixQueue<T> {
    pub fn new() -> Self {
        RadixQueue {
            last: 0,
            now: Vec::new(),
            head: 0,
            buckets: (0..=64).map(|_| Vec::new()).collect(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bucket(&self, time: u64) -> usize {
        (64 - (time ^ self.last).leading_zeros()) as usize
    }

    /// Adds `v` at key `(time, seq)`.
    pub fn push(&mut self, time: u64, seq: u64, v: T) {
        debug_assert!(time >= self.last, "a time below the last one popped");
        self.len += 1;
        if time != self.last {
            let b = self.bucket(time);
            self.buckets[b].push((time, seq, v));
            return;
        }
        // At the current time: a fresh sequence number (the engine's usual case) goes last;
        // an older one is put in its place.
        debug_assert!(
            self.head == 0 || self.now[self.head - 1].0 < seq,
            "a key below the last one popped"
        );
        if self.now.last().map_or(true, |e| e.0 < seq) {
            self.now.push((seq, v));
        } else {
            let i = self.head + self.now[self.head..].partition_point(|e| e.0 < seq);
            self.now.insert(i, (seq, v));
        }
    }

    /// The value `k` places after the next one to be popped, if it is among the items of the
    /// current time (a look ahead that never sorts anything out of the buckets).
    pub fn peek_ahead(&self, k: usize) -> Option<&T> {
        self.now.get(self.head + k).map(|e| &e.1)
    }

    /// Takes out the value of the smallest key, with its time.
    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.pop_with_seq().map(|(t, _, v)| (t, v))
    }

    /// Takes out the value of the smallest key, with its time and sequence number.
    pub fn pop_with_seq(&mut self) -> Option<(u64, u64, T)> {
        if self.head == self.now.len() {
            self.refill()?;
        }
        let (seq, v) = self.now[self.head];
        self.head += 1;
        self.len -= 1;
        Some((self.last, seq, v))
    }

    /// Moves the items of the earliest time left into `now`, sorted by sequence number.
    /// `None` when the queue is empty.
    fn refill(&mut self) -> Option<()> {
        self.now.clear();
        self.head = 0;
        let i = self.buckets.iter().position(|b| !b.is_empty())?;
        let min = self.buckets[i].iter().map(|e| e.0).min()?;
        self.last = min;
        // Every item of bucket i differs from the new minimum below bit i - 1: they all go
        // to lower buckets or to `now`. The vector is put back so its memory is reused.
        let mut items = std::mem::take(&mut self.buckets[i]);
        for (time, seq, v) in items.drain(..) {
            if time == min {
                self.now.push((seq, v));
            } else {
                let b = self.bucket(time);
                self.buckets[b].push((time, seq, v));
            }
        }
        self.buckets[i] = items;
        self.now.sort_unstable_by_key(|e| e.0);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn pops_in_key_order_like_a_binary_heap() {
        let mut rng = Rng::new(7);
        for case in 0..200 {
            let mut q = RadixQueue::new();
            let mut h = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            let spread = [1usize, 10, 1000, 1 << 20][case % 4];
            for step in 0..2000 {
                if rng.below(3) != 0 || h.is_empty() {
                    // Pushed at or after now, often at exactly now, with a fresh sequence.
                    let t = now + rng.below(spread) as u64;
                    seq += 1;
                    q.push(t, seq, step);
                    h.push(Reverse((t, seq, step)));
                } else {
                    let Reverse((t, _, v)) = h.pop().unwrap();
                    assert_eq!(q.pop(), Some((t, v)), "case {case} step {step}");
                    now = t;
                }
                assert_eq!(q.len(), h.len());
            }
            while let Some(Reverse((t, _, v))) = h.pop() {
                assert_eq!(q.pop(), Some((t, v)));
            }
            assert!(q.is_empty() && q.pop().is_none());
        }
    }

    #[test]
    fn an_item_put_back_later_keeps_its_sequence() {
        // A postponed event keeps its old sequence number: it goes before a later-made event
        // of the same time.
        let mut q = RadixQueue::new();
        q.push(10, 1, "postponed");
        q.push(10, 2, "b");
        assert_eq!(q.pop(), Some((10, "postponed")));
        q.push(20, 1, "postponed");
        q.push(20, 3, "c");
        assert_eq!(q.pop(), Some((10, "b")));
        assert_eq!(q.pop(), Some((20, "postponed")));
        assert_eq!(q.pop(), Some((20, "c")));
    }

    #[test]
    fn peek_ahead_sees_only_the_current_time() {
        let mut q = RadixQueue::new();
        for (t, seq, v) in [(5, 1, "a"), (5, 2, "b"), (5, 3, "c"), (9, 4, "d")] {
            q.push(t, seq, v);
        }
        assert_eq!(q.peek_ahead(0), None, "nothing sorted out yet");
        assert_eq!(q.pop(), Some((5, "a")));
        assert_eq!((q.peek_ahead(0), q.peek_ahead(1)), (Some(&"b"), Some(&"c")));
        assert_eq!(q.peek_ahead(2), None, "a later time stays in its bucket");
        assert_eq!(q.pop(), Some((5, "b")));
        assert_eq!(q.pop(), Some((5, "c")));
        assert_eq!(q.pop(), Some((9, "d")));
        assert_eq!(q.peek_ahead(0), None);
    }

    #[test]
    fn an_older_sequence_at_the_current_time_goes_in_its_place() {
        // Not what the engine does (its items at the current time are fresh), but the queue
        // keeps the key order for any key not below the last popped.
        let mut q = RadixQueue::new();
        for (seq, v) in [(1, "a"), (5, "e"), (7, "g")] {
            q.push(10, seq, v);
        }
        assert_eq!(q.pop_with_seq(), Some((10, 1, "a")));
        q.push(10, 6, "f");
        q.push(10, 3, "c");
        q.push(10, 8, "h");
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, v)| v).collect();
        assert_eq!(rest, ["c", "e", "f", "g", "h"]);
    }
}
