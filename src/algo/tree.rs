//! The binary scout tree of Chen, Carrasco and Apon's paper, laid out like a binary heap over ranks relative to the root:
//! v = (rank - root) mod n, parent (v - 1) / 2, children 2v + 1 and 2v + 2. Its height is
//! floor(log2 n), so scouts need that many hops to reach the root.

/// Rank relative to the root. Written without `%` because these run on every schedule build and
/// in exhaustive tests; `rank < n` and `root < n` keep every sum below `n`.
fn relative(n: u32, root: u32, rank: u32) -> u32 {
    if rank >= root {
        rank - root
    } else {
        rank + (n - root)
    }
}

fn absolute(n: u32, root: u32, v: u32) -> u32 {
    let wrap = n - root;
    if v >= wrap {
        v - wrap
    } else {
        v + root
    }
}

fn check(n: u32, root: u32, rank: u32) {
    assert!(
        root < n && rank < n,
        "tree over {n} ranks: root {root} and rank {rank} must be below {n}"
    );
}

/// The rank `rank` sends its scout to, or `None` for the root.
/// Panics unless `root < n` and `rank < n`.
pub fn tree_parent(n: u32, root: u32, rank: u32) -> Option<u32> {
    check(n, root, rank);
    match relative(n, root, rank) {
        0 => None,
        v => Some(absolute(n, root, (v - 1) / 2)),
    }
}

/// The ranks whose scouts `rank` receives (zero, one or two, in relative order).
/// Panics unless `root < n` and `rank < n`.
pub fn tree_children(n: u32, root: u32, rank: u32) -> TreeChildren {
    check(n, root, rank);
    // u64: 2v + 2 overflows u32 for the upper half of a huge communicator.
    let first = 2 * u64::from(relative(n, root, rank)) + 1;
    TreeChildren {
        next: first,
        end: (first + 2).min(u64::from(n)),
        n,
        root,
    }
}

/// Iterator over a rank's children in the scout tree.
#[derive(Clone, Debug)]
pub struct TreeChildren {
    next: u64,
    end: u64,
    n: u32,
    root: u32,
}

impl Iterator for TreeChildren {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next >= self.end {
            return None;
        }
        // Below `end <= n`, so it fits in u32.
        let v = self.next as u32;
        self.next += 1;
        Some(absolute(self.n, self.root, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let k = self.end.saturating_sub(self.next) as usize;
        (k, Some(k))
    }
}

impl ExactSizeIterator for TreeChildren {}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor_log2(n: u32) -> u32 {
        31 - n.leading_zeros()
    }

    /// For every root of every n in `ns`: exactly the root lacks a parent, a breadth-first walk
    /// down `tree_children` reaches every rank exactly once with the child's `tree_parent`
    /// pointing back, and no rank is deeper than floor(log2 n). The walk visiting everyone via
    /// agreeing parent links is what proves every parent chain ends at the root within its
    /// depth; each rank costs O(1), which keeps the ~360M (n, root, rank) triples to seconds.
    fn check_every_root(ns: std::ops::RangeInclusive<u32>) {
        let mut depth = Vec::new();
        let mut queue = Vec::new();
        for n in ns {
            let bound = floor_log2(n);
            for root in 0..n {
                depth.clear();
                depth.resize(n as usize, u32::MAX);
                queue.clear();
                depth[root as usize] = 0;
                queue.push(root);
                let mut head = 0;
                let mut max_depth = 0;
                while head < queue.len() {
                    let r = queue[head];
                    head += 1;
                    let d = depth[r as usize] + 1;
                    for c in tree_children(n, root, r) {
                        assert_eq!(
                            tree_parent(n, root, c),
                            Some(r),
                            "n {n} root {root} child {c}"
                        );
                        assert_eq!(depth[c as usize], u32::MAX, "n {n} root {root}: {c} twice");
                        depth[c as usize] = d;
                        max_depth = max_depth.max(d);
                        queue.push(c);
                    }
                }
                assert_eq!(
                    queue.len(),
                    n as usize,
                    "n {n} root {root}: unreachable ranks"
                );
                assert!(max_depth <= bound, "n {n} root {root}: depth {max_depth}");
                assert_eq!(tree_parent(n, root, root), None);
            }
            // The heap layout is as shallow as a binary tree can be: the bound is reached.
            let deepest = (0..n).map(|r| chain_len(n, 0, r)).max().unwrap();
            assert_eq!(deepest, bound, "n {n}");
        }
    }

    fn chain_len(n: u32, root: u32, mut rank: u32) -> u32 {
        let mut steps = 0;
        while let Some(p) = tree_parent(n, root, rank) {
            rank = p;
            steps += 1;
            assert!(
                steps <= floor_log2(n) + 1,
                "n {n} root {root}: chain too long"
            );
        }
        assert_eq!(rank, root);
        steps
    }

    // Split by equal shares of n^2 work so the test harness can use both cores.
    #[test]
    fn every_root_1_to_645() {
        check_every_root(1..=645);
    }
    #[test]
    fn every_root_646_to_813() {
        check_every_root(646..=813);
    }
    #[test]
    fn every_root_814_to_930() {
        check_every_root(814..=930);
    }
    #[test]
    fn every_root_931_to_1024() {
        check_every_root(931..=1024);
    }

    #[test]
    fn parent_chains_walked_directly() {
        // The naive check, on a sample, as a cross-check of the breadth-first argument.
        for n in [1, 2, 3, 7, 8, 100, 1023, 1024, 4097] {
            for root in [0, n / 3, n - 1] {
                for rank in 0..n {
                    chain_len(n, root, rank);
                }
            }
        }
    }

    #[test]
    fn matches_the_heap_formula() {
        // n = 7, root 0: 1,2 -> 0; 3,4 -> 1; 5,6 -> 2.
        let parents: Vec<_> = (0..7).map(|r| tree_parent(7, 0, r)).collect();
        assert_eq!(
            parents,
            [None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(2)]
        );
        assert_eq!(tree_children(7, 0, 1).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(tree_children(7, 0, 3).count(), 0);
        // Root 5 of 7: relative v = (rank - 5) mod 7, so rank 6 is v1 and rank 0 is v2.
        assert_eq!(tree_children(7, 5, 5).collect::<Vec<_>>(), [6, 0]);
        assert_eq!(tree_children(7, 5, 6).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(tree_children(7, 5, 0).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(tree_parent(7, 5, 4), Some(0));
        assert_eq!(tree_children(6, 0, 2).collect::<Vec<_>>(), [5]);
        assert_eq!(tree_children(6, 0, 2).len(), 1);
    }

    #[test]
    fn huge_communicators_do_not_overflow() {
        let n = u32::MAX;
        let root = n - 1;
        let last = n - 2; // relative v = n - 1, the deepest leaf
        assert_eq!(tree_children(n, root, last).count(), 0);
        let mid = (n - 1) / 2 - 1; // relative v = (n-1)/2: children 2v+1 = n, out of range
        assert_eq!(tree_children(n, root, mid).count(), 0);
        assert_eq!(chain_len(n, root, last), floor_log2(n));
        assert_eq!(tree_parent(n, 0, n - 1), Some((n - 2) / 2));
    }

    #[test]
    #[should_panic(expected = "must be below")]
    fn root_out_of_range_panics() {
        tree_parent(4, 4, 0);
    }

    #[test]
    #[should_panic(expected = "must be below")]
    fn rank_out_of_range_panics() {
        tree_children(4, 0, 9);
    }
}
