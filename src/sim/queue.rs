//! The simulator's event queue: a radix heap. Simulated time never goes backwards (every event
//! is scheduled at or after the one being handled) and each event carries a unique sequence
//! number, so the keys `(time, seq)` that leave the queue only grow. A radix heap uses exactly
//! that: an item sits in the bucket numbered by the highest bit in which its key differs from the
//! last key taken out, and only the lowest non-empty bucket is ever sorted out again. Each item
//! moves down a few buckets in its life instead of climbing a binary heap of a million entries
//! at every push and pop, and the buckets are scanned in order, which the cache likes; at 2^20
//! ranks it is what makes the simulator several times faster than `BinaryHeap`.

/// A min-queue of `(time, seq)` keys, each with its value. Keys pushed must not be below the
/// last key popped (debug builds check it).
pub struct RadixQueue<T> {
    last: u128,
    buckets: Vec<Vec<(u128, T)>>,
    len: usize,
}

fn key(time: u64, seq: u64) -> u128 {
    ((time as u128) << 64) | seq as u128
}

impl<T> Default for RadixQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RadixQueue<T> {
    pub fn new() -> Self {
        RadixQueue {
            last: 0,
            buckets: (0..=128).map(|_| Vec::new()).collect(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bucket(&self, k: u128) -> usize {
        (128 - (k ^ self.last).leading_zeros()) as usize
    }

    /// Adds `v` at key `(time, seq)`.
    pub fn push(&mut self, time: u64, seq: u64, v: T) {
        let k = key(time, seq);
        debug_assert!(k >= self.last, "a key below the last one popped");
        let b = self.bucket(k);
        self.buckets[b].push((k, v));
        self.len += 1;
    }

    /// Takes out the value of the smallest key, with its time.
    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.pop_with_seq().map(|(t, _, v)| (t, v))
    }

    /// Takes out the value of the smallest key, with its time and sequence number.
    pub fn pop_with_seq(&mut self) -> Option<(u64, u64, T)> {
        if self.buckets[0].is_empty() {
            let i = self.buckets.iter().position(|b| !b.is_empty())?;
            let min = self.buckets[i].iter().map(|e| e.0).min()?;
            self.last = min;
            // Every item of bucket i differs from the new minimum below bit i: they all go
            // to lower buckets. The vector is put back so its memory is reused.
            let mut items = std::mem::take(&mut self.buckets[i]);
            for (k, v) in items.drain(..) {
                let b = self.bucket(k);
                self.buckets[b].push((k, v));
            }
            self.buckets[i] = items;
        }
        let (k, v) = self.buckets[0].pop()?;
        self.len -= 1;
        Some(((k >> 64) as u64, k as u64, v))
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
}
