//! The host's own path below the threshold: what the exported `MPI_Bcast` reads before
//! anything else, so that a broadcast smaller than every communicator's threshold reaches
//! `PMPI_Bcast` after a handful of instructions (the shim's cost on
//! this path is the whole interposition overhead).
//!
//! Everything the decision needs sits in 4160 bytes: a 64-byte header (the threshold word, the
//! hash multiplier, the count of calls handed over) and a table of the predefined datatypes'
//! sizes, one 8-byte slot per datatype, found with one multiply and one load (the multiplier
//! is chosen when the table is filled so that no two datatypes share a slot). A call touches
//! two cache lines of it. With four ranks sharing two cores, every line and branch counts: a
//! lookup that probed a 4 KiB table of 16-byte slots, a separate `OnceLock` state and a
//! locked counter cost 1.9 ns against 0.55 ns for a bare jump to `PMPI_Bcast`.
//!
//! Safe code only: the slots are atomics written (relaxed) before the threshold word is
//! published (release) and read (relaxed) after it was seen (acquire), or after the table's
//! own one-time initialisation (`filled`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// log2 of the number of slots: 512 slots for at most `MAX_ENTRIES` datatypes, so that a
/// multiplier without collisions is found in a few dozen tries.
const SLOT_BITS: u32 = 9;
const SLOTS: usize = 1 << SLOT_BITS;
/// More predefined datatypes than any MPI has (Open MPI 4.1 and MPICH 4.0: 44 at most).
pub const MAX_ENTRIES: usize = 64;
/// A slot holds `key | size << KEY_BITS`.
const KEY_BITS: u32 = 56;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;
/// A slot before `fill`. `fill` turns every slot it leaves empty into a key that hashes to
/// another slot, so that no lookup can match it.
const EMPTY: u64 = u64::MAX;
/// Multipliers tried before settling for the one with the fewest collisions.
const TRIES: u32 = 4096;

#[repr(C, align(64))]
pub struct FastPath {
    /// 0 while no session is active and enabled; else the smallest broadcast that may go by
    /// multicast on any communicator (`MPICAST_MIN_BYTES`, lowered by any `mpicast_min_bytes`
    /// hint ever recorded) shifted left by one, with the low bit set when the host granted
    /// `MPI_THREAD_MULTIPLE`. A floor of 0 decides nothing.
    word: AtomicUsize,
    /// The table's hash multiplier (odd).
    mult: AtomicU64,
    /// Broadcasts this path handed to the host (part of the `bcast_pmpi` statistic).
    host_calls: AtomicU64,
    filled: AtomicBool,
    slots: [AtomicU64; SLOTS],
}

/// The one instance.
pub static FAST: FastPath = FastPath::new();

impl FastPath {
    pub const fn new() -> FastPath {
        FastPath {
            word: AtomicUsize::new(0),
            mult: AtomicU64::new(1),
            host_calls: AtomicU64::new(0),
            filled: AtomicBool::new(false),
            slots: [const { AtomicU64::new(EMPTY) }; SLOTS],
        }
    }

    #[inline(always)]
    fn slot(key: u64, mult: u64) -> usize {
        (key.wrapping_mul(mult) >> (64 - SLOT_BITS)) as usize
    }

    /// Fills the table with (handle key, size in bytes) pairs, once (later calls do nothing);
    /// must come before `publish`. Entries that cannot be packed (a key of 56 bits or more, a
    /// size of 256 or more) are left out, as is any that would share a slot in the unlikely
    /// case that no multiplier separates them all: those datatypes take the long way, which
    /// asks the host for their size.
    pub fn fill(&self, entries: &[(u64, u64)]) {
        if self.filled.load(Ordering::Acquire) {
            return;
        }
        let usable: Vec<(u64, u64)> = entries
            .iter()
            .copied()
            .filter(|&(k, s)| k & !KEY_MASK == 0 && s < 256)
            .take(MAX_ENTRIES)
            .collect();
        let mult = choose_multiplier(usable.iter().map(|&(k, _)| k));
        for (k, s) in usable {
            let slot = &self.slots[Self::slot(k, mult)];
            if slot.load(Ordering::Relaxed) == EMPTY {
                slot.store(k | s << KEY_BITS, Ordering::Relaxed);
            }
        }
        // An empty slot holds a key that does not hash to it: a lookup only reads the slot
        // its key hashes to, so it can never match one (whatever the key, with no test more).
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.load(Ordering::Relaxed) == EMPTY {
                let stranger = (0..)
                    .map(|d| KEY_MASK - d)
                    .find(|&y| Self::slot(y, mult) != i)
                    .expect("keys hash to more than one slot");
                slot.store(stranger, Ordering::Relaxed);
            }
        }
        self.mult.store(mult, Ordering::Relaxed);
        self.filled.store(true, Ordering::Release);
    }

    /// Whether `fill` has run (with acquire: the slots it wrote are visible after true).
    pub fn is_filled(&self) -> bool {
        self.filled.load(Ordering::Acquire)
    }

    /// The size of the datatype with this key, if the table has it. Call only after `fill`
    /// (seen through `is_filled` or through a non-zero `decide`).
    #[inline(always)]
    pub fn size(&self, key: u64) -> Option<u64> {
        let e =
            self.slots[Self::slot(key, self.mult.load(Ordering::Relaxed))].load(Ordering::Relaxed);
        (e & KEY_MASK == key).then_some(e >> KEY_BITS)
    }

    /// Opens the path: broadcasts below `floor` bytes go to the host. `concurrent`: the host
    /// granted MPI_THREAD_MULTIPLE.
    pub fn publish(&self, floor: usize, concurrent: bool) {
        self.word.store(word(floor, concurrent), Ordering::Release);
    }

    /// Lowers the floor (a hint asked for a smaller threshold); nothing while closed.
    pub fn lower(&self, floor: usize) {
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w != 0).then(|| w.min(word(floor, w & 1 != 0)))
            });
    }

    /// Closes the path (MPI_Finalize): every broadcast takes the long way.
    pub fn close(&self) {
        self.word.store(0, Ordering::Release);
    }

    /// (floor, calls may be concurrent) while open, else None.
    #[inline(always)]
    pub fn decide(&self) -> Option<(usize, bool)> {
        match self.word.load(Ordering::Acquire) {
            0 => None,
            w => Some((w >> 1, w & 1 != 0)),
        }
    }

    /// The floor (0 while closed).
    pub fn floor(&self) -> usize {
        self.word.load(Ordering::Acquire) >> 1
    }

    /// Counts one broadcast handed to the host by this path. A locked read-modify-write only
    /// when calls may be concurrent: otherwise one thread at a time calls (MPI_THREAD_
    /// SERIALIZED and below: the application orders its threads' MPI calls), and a plain load
    /// and store is exact.
    #[inline(always)]
    pub fn count_host_call(&self, concurrent: bool) {
        let c = &self.host_calls;
        if concurrent {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }

    pub fn host_calls(&self) -> u64 {
        self.host_calls.load(Ordering::Relaxed)
    }
}

impl Default for FastPath {
    fn default() -> Self {
        FastPath::new()
    }
}

fn word(floor: usize, concurrent: bool) -> usize {
    (floor.min(usize::MAX >> 1) << 1) | usize::from(concurrent)
}

/// An odd multiplier under which the keys fall into distinct slots, or, failing that within
/// `TRIES` candidates (a fixed sequence: the choice is the same in every process of a job),
/// the one with the fewest collisions.
fn choose_multiplier(keys: impl Iterator<Item = u64> + Clone) -> u64 {
    let mut state = 0x6d70_6963_6173_7421u64;
    let (mut best, mut best_clashes) = (1u64, usize::MAX);
    for _ in 0..TRIES {
        let mult = crate::rng::next(&mut state) | 1;
        let mut used = [0u64; SLOTS / 64];
        let mut clashes = 0;
        for k in keys.clone() {
            let s = FastPath::slot(k, mult);
            let bit = 1u64 << (s % 64);
            if used[s / 64] & bit != 0 {
                clashes += 1;
            }
            used[s / 64] |= bit;
        }
        if clashes < best_clashes {
            (best, best_clashes) = (mult, clashes);
            if clashes == 0 {
                break;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(entries: &[(u64, u64)]) -> FastPath {
        let f = FastPath::new();
        f.fill(entries);
        f
    }

    /// Handles shaped like Open MPI's (addresses of predefined objects a few hundred bytes
    /// apart) and like MPICH's (0x4c00_SSNN with the size in the second byte).
    fn shapes() -> Vec<Vec<(u64, u64)>> {
        let ompi: Vec<(u64, u64)> = (0..44)
            .map(|i| (0x7f3a_1c2e_4000 + i * 0x240, 1 + i % 32))
            .collect();
        let mpich: Vec<(u64, u64)> = (0..44)
            .map(|i| {
                let size = [1u64, 2, 4, 8, 16][i as usize % 5];
                (0x4c00_0000 | size << 8 | (i + 1), size)
            })
            .collect();
        vec![ompi, mpich]
    }

    #[test]
    fn every_entry_is_found_in_one_slot_and_nothing_else() {
        for entries in shapes() {
            let f = filled(&entries);
            for &(k, s) in &entries {
                assert_eq!(f.size(k), Some(s), "key {k:#x}");
            }
            for &(k, _) in &entries {
                for other in [k + 1, k + 8, k ^ 0x100, 0, 0x0c00_0000] {
                    if entries.iter().all(|&(e, _)| e != other) {
                        assert_eq!(f.size(other), None, "key {other:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn unpackable_entries_are_left_out() {
        let f = filled(&[(1 << 56, 4), (0x10, 256), (0x20, 255)]);
        assert_eq!(f.size(1 << 56), None);
        assert_eq!(f.size(0x10), None);
        assert_eq!(f.size(0x20), Some(255));
    }

    #[test]
    fn no_key_matches_an_empty_slot() {
        for entries in [vec![(0x20, 4)], vec![(KEY_MASK, 2)], vec![]] {
            let f = filled(&entries);
            let mut state = 7;
            let probes = (0..20_000).map(|_| crate::rng::next(&mut state) & KEY_MASK);
            let edges = [0, 1, 0x20, KEY_MASK, KEY_MASK - 1, KEY_MASK - 2];
            for k in probes.chain(edges) {
                let want = entries.iter().find(|&&(e, _)| e == k).map(|&(_, s)| s);
                assert_eq!(f.size(k), want, "key {k:#x}");
            }
        }
    }

    /// Of the entries given, the first `MAX_ENTRIES` are candidates and the rest take the
    /// long way; of the candidates, the first to reach a slot (under the multiplier chosen)
    /// keeps it with its own size, and the later ones of that slot take the long way. With
    /// no clash among them (the multiplier search separates 64 keys of this shape), every
    /// candidate is found: a lost key fails here.
    #[test]
    fn clashing_keys_leave_the_later_ones_to_the_long_way() {
        let entries: Vec<(u64, u64)> = (1..=SLOTS as u64 + 10).map(|k| (k * 8, k % 200)).collect();
        let f = filled(&entries);
        let mult = f.mult.load(Ordering::Relaxed);
        let mut taken = std::collections::HashSet::new();
        let mut found = 0;
        for (i, &(k, s)) in entries.iter().enumerate() {
            let first_in_slot = taken.insert(FastPath::slot(k, mult));
            let want = (i < MAX_ENTRIES && first_in_slot).then_some(s);
            assert_eq!(f.size(k), want, "entry {i}, key {k:#x}");
            found += usize::from(want.is_some());
        }
        assert_eq!(found, MAX_ENTRIES, "keys lost to clashes");

        // A true clash, which no multiplier separates: the same key twice.
        let f = filled(&[(0x40, 4), (0x48, 2), (0x40, 8)]);
        assert_eq!((f.size(0x40), f.size(0x48)), (Some(4), Some(2)));
    }

    #[test]
    fn fill_happens_once() {
        let f = filled(&[(0x40, 4)]);
        f.fill(&[(0x80, 8)]);
        assert_eq!(f.size(0x40), Some(4));
        assert_eq!(f.size(0x80), None);
    }

    #[test]
    fn the_word_opens_lowers_and_closes() {
        let f = FastPath::new();
        assert_eq!(f.decide(), None);
        f.lower(10);
        assert_eq!(f.decide(), None, "lowering a closed path opens nothing");
        f.publish(4096, false);
        assert_eq!(f.decide(), Some((4096, false)));
        f.lower(8192);
        assert_eq!(f.floor(), 4096);
        f.lower(1024);
        assert_eq!(f.decide(), Some((1024, false)));
        f.publish(usize::MAX, true);
        assert_eq!(f.decide(), Some((usize::MAX >> 1, true)));
        f.lower(0);
        assert_eq!(
            f.decide(),
            Some((0, true)),
            "open, but a floor of 0 decides nothing"
        );
        f.close();
        assert_eq!((f.decide(), f.floor()), (None, 0));
    }

    #[test]
    fn counting_is_exact_either_way() {
        let f = FastPath::new();
        for i in 0..10 {
            f.count_host_call(i % 2 == 0);
        }
        assert_eq!(f.host_calls(), 10);
    }

    #[test]
    fn the_header_takes_one_cache_line() {
        assert_eq!(std::mem::size_of::<FastPath>(), 64 + SLOTS * 8);
        assert_eq!(std::mem::align_of::<FastPath>(), 64);
    }
}
