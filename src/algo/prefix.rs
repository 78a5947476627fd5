//! Topology-aware routing for a non-blocking multicast, after "A Scalable Non-blocking Multicast
//! Scheme for Distributed DAG Scheduling" (ICCS 2009): topology IDs, the Plaxton routing table
//! with holes, and the stage rule that turns every rank's table into a multicast tree rooted at
//! any source. Pure arithmetic over IDs that come in as numbers or text; what travels on the wire
//! and when belongs to the transport (`MPICAST_Imcast`), which calls [`forward`] per message.
//!
//! # Topology IDs
//!
//! Every rank of a communicator has an ID of m digits in base c = 2^b; the longer the common
//! prefix of two IDs, the closer the ranks (like ZIP codes). An ID is a packed `u64`, digit 0 in
//! the high bits ([`TopoId`]), so the longest common prefix is one XOR and a leading-zero count,
//! numeric order is digit order (a prefix subtree is a contiguous range of values, and the value
//! is the paper's "tid in [0..n-1]"), and a job of 2^20 ranks keeps its IDs in one flat 8 MiB
//! array with no allocation per ID (the paper's `topo_ids[]`). The price is m * b <= 64, i.e. at
//! most 2^64 positions, far beyond any machine; c is at most 256 so that a digit fits a byte.
//!
//! Text syntax ([`Shape::parse`]): digits in decimal separated by '.' ("3.17.0"), or, when the
//! base is at most 16 and the text has no '.', one hexadecimal digit per character ("012345" in
//! base 8, as the paper writes them; upper or lower case). In a base above 16 a text without '.'
//! is a single decimal digit. [`TopoId`]'s `Display` writes the hex form up to base 16 and the
//! dotted form above, so printing and parsing round-trip.
//!
//! IDs must be unique within a communicator ([`IdError::Duplicate`]). The paper gives a process
//! the ID of the node it runs on, but two ranks with one ID share all m digits: neither can be in
//! the other's table (condition (2) needs a differing digit), so Lemma 1 fails and a multicast
//! could not reach one from the other. [`derive`] therefore gives the ranks of one host distinct
//! on-host digits (package, NUMA node, core, ...) and, if even those coincide, a last digit that
//! numbers the ranks sharing every fact, in rank order.
//!
//! # Routing table
//!
//! [`RoutingTable::build`] is the O(N) scan of the paper's Fig. 3 (1): m rows, c columns; T[i][j]
//! holds a rank that shares the first i digits with me and has digit j at position i. An entry
//! with no candidate is a hole (the paper's extension of Plaxton: no rank of the job has that
//! prefix, so no destination can be behind it). T[i][my digit i] holds me, as in Plaxton's
//! tables: the paper's condition (2) leaves it out, but "me" there says that my own subtree at
//! level i is reached by going on to level i + 1, and it keeps holes meaning "nobody there".
//!
//! Among several candidates ([`Pick`]) the paper takes a random one or "the closest". All
//! candidates of T[i][j] share exactly i digits with me, so prefix length cannot rank them;
//! `Pick::Nearest` takes the one with the smallest XOR distance to my ID, which is the longest
//! common prefix of the digits after position i, refined bit by bit (the Kademlia metric). IDs are
//! unique, so it has no ties. On a full ID space it is my ID with digit i replaced by j, the
//! hypercube neighbour, so tables spread the load evenly instead of all pointing into the same
//! rank of a subtree. `Pick::Random { seed }` takes the candidate with the smallest hash of
//! (seed, me, candidate): a uniform choice that every rank can reproduce for any other rank from
//! the job's seed alone, independent of scan order.
//!
//! # Forwarding
//!
//! The stage rule (Fig. 3 (2)): a rank that received the message from `prev` forwards only
//! through table rows beyond longest_common_prefix(me, prev), so the paper's
//! `stage = longest_prefix + 1`; the root starts at row 0. A destination d with
//! l = longest_common_prefix(me, d) >= stage belongs to the subtree of entry T[l][d_l] (the ranks
//! sharing l + 1 digits with d); destinations with l < stage are other branches' business.
//! [`forward`] groups the destinations by (l, d_l) and sends one message per non-empty group,
//! lowest level (largest subtree) first. Along any path the level strictly rises, so a
//! destination is at most m hops from the root and no rank is reached twice (Theorems 1 and 2).
//! The garbled listing of Fig. 3 (2) is read as: for each child p, `lcl = longest_prefix(me, p)`;
//! if `lcl >= stage`, the entry T[lcl][digit(p, lcl)] goes into `destinations` unless already
//! there; that is this grouping.
//!
//! Two routings share the grouping and differ in who is the next hop ([`Route`]):
//! - `Route::Table`, the paper's: the next hop is the table entry. If it is not a destination it
//!   forwards as a "virtual master" without delivering. Each hop may carry the whole destination
//!   set (the paper's receivers rebuild it from the task with `get_children`) or only its group:
//!   [`forward`] gives the same hops for both, because it ignores destinations outside my stage.
//! - `Route::Dests`, ours: the next hop is the destination of the group nearest (XOR) to the table
//!   entry, which is the entry itself when that is a destination, so the table's choice still
//!   spreads the load; the message carries the group, trimmed. No rank outside the destination
//!   set ever handles the data, and the same level argument bounds paths by m hops.
//!
//! A hole is never needed: a destination with prefix (my first l digits, j) is itself a
//! candidate for T[l][j]. [`forward`] panics if it meets one, which means the table was built
//! from other IDs than the ones routed on.

use std::fmt;

/// The marker of a hole in [`RoutingTable`]'s flat array: one integer per entry, as in the paper.
const HOLE: u32 = u32::MAX;

/// Base and length of a communicator's topology IDs: c = 2^b, m digits, m * b <= 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    bits: u32,
    digits: u32,
}

/// One rank's topology ID: m digits in base c packed into a `u64`, digit 0 in the high bits.
/// Ordered by value, which is the lexicographic order of the digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopoId {
    value: u64,
    shape: Shape,
}

/// Why an ID, a shape or a set of IDs was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdError {
    /// The base is not a power of two in 2..=256.
    Base(u32),
    /// No digits, or more than fit in 64 bits at this base.
    Digits { digits: u32, base: u32 },
    /// Text that is neither dotted decimal digits nor hex digits.
    Syntax { text: String, why: &'static str },
    /// Right syntax, wrong number of digits.
    DigitCount { got: usize, want: u32 },
    /// A digit (as written) not below the base; `position` counts from 0 at the left.
    DigitOutOfBase {
        position: usize,
        digit: String,
        base: u32,
    },
    /// A packed value with bits beyond m * b.
    Value { value: u64, shape: Shape },
    /// An ID of another shape than the communicator's.
    WrongShape { got: Shape, want: Shape },
    /// Two ranks with one ID (IDs must be unique, see the module documentation).
    Duplicate { first: u32, second: u32, id: String },
    /// A communicator needs at least one rank.
    NoRanks,
    /// More ranks than a `u32` rank with a hole marker can name.
    TooManyRanks(usize),
    /// [`derive`]: a rank with another number of facts than rank 0.
    FactLevels { rank: u32, got: usize, want: usize },
    /// The error of rank `rank`'s ID.
    AtRank { rank: u32, error: Box<IdError> },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Base(b) => write!(f, "base {b} is not a power of two from 2 to 256"),
            IdError::Digits { digits, base } => write!(
                f,
                "{digits} digits in base {base}: need at least 1 and at most 64 bits in all"
            ),
            IdError::Syntax { text, why } => write!(f, "topology ID {text:?}: {why}"),
            IdError::DigitCount { got, want } => {
                write!(f, "topology ID has {got} digits, want {want}")
            }
            IdError::DigitOutOfBase {
                position,
                digit,
                base,
            } => write!(
                f,
                "digit {position} of topology ID is {digit}, not below base {base}"
            ),
            IdError::Value { value, shape } => {
                write!(f, "value {value:#x} does not fit {shape}")
            }
            IdError::WrongShape { got, want } => {
                write!(f, "topology ID of {got} in a communicator of {want}")
            }
            IdError::Duplicate { first, second, id } => {
                write!(f, "ranks {first} and {second} both have topology ID {id}")
            }
            IdError::NoRanks => write!(f, "no ranks"),
            IdError::TooManyRanks(n) => write!(f, "{n} ranks are too many"),
            IdError::FactLevels { rank, got, want } => {
                write!(f, "rank {rank} has {got} topology facts, rank 0 has {want}")
            }
            IdError::AtRank { rank, error } => write!(f, "rank {rank}: {error}"),
        }
    }
}

impl std::error::Error for IdError {}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} digits in base {}", self.digits, self.base())
    }
}

impl Shape {
    /// `digits` digits in base `base`. Refused unless the base is a power of two in 2..=256,
    /// `digits >= 1` and `digits * log2(base) <= 64`.
    pub fn new(base: u32, digits: u32) -> Result<Shape, IdError> {
        let bits = bits_of_base(base)?;
        if digits == 0 || u64::from(digits) * u64::from(bits) > 64 {
            return Err(IdError::Digits { digits, base });
        }
        Ok(Shape { bits, digits })
    }

    /// The fewest digits of base `base` that give `ranks` ranks a position each (at least 1):
    /// the paper's log2(n) / log2(c) rows, rounded up.
    pub fn for_ranks(base: u32, ranks: u64) -> Result<Shape, IdError> {
        let bits = bits_of_base(base)?;
        let need = 64 - ranks.saturating_sub(1).leading_zeros();
        Shape::new(base, need.div_ceil(bits).max(1))
    }

    /// c, the base.
    pub fn base(self) -> u32 {
        1 << self.bits
    }

    /// b = log2(c), bits per digit.
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// m, the number of digits: the rows of a routing table.
    pub fn digits(self) -> u32 {
        self.digits
    }

    /// The ID of these digits, digit 0 first.
    pub fn id(self, digits: &[u32]) -> Result<TopoId, IdError> {
        if digits.len() != self.digits as usize {
            return Err(IdError::DigitCount {
                got: digits.len(),
                want: self.digits,
            });
        }
        let mut value = 0u64;
        for (position, &d) in digits.iter().enumerate() {
            if d >= self.base() {
                return Err(IdError::DigitOutOfBase {
                    position,
                    digit: d.to_string(),
                    base: self.base(),
                });
            }
            value = shl(value, self.bits) | u64::from(d);
        }
        Ok(TopoId { value, shape: self })
    }

    /// The ID whose packed value (digit 0 in the high bits) is `value`.
    pub fn id_from_value(self, value: u64) -> Result<TopoId, IdError> {
        if self.width() < 64 && value >> self.width() != 0 {
            return Err(IdError::Value { value, shape: self });
        }
        Ok(TopoId { value, shape: self })
    }

    /// Parses an ID: dotted decimal digits ("3.17.0"), or in a base up to 16 without '.', one hex
    /// digit per character ("012345"). Surrounding white space is ignored.
    pub fn parse(self, text: &str) -> Result<TopoId, IdError> {
        let t = text.trim();
        let syntax = |why| IdError::Syntax {
            text: text.to_string(),
            why,
        };
        if t.is_empty() {
            return Err(syntax("empty"));
        }
        let mut digits = Vec::with_capacity(self.digits as usize);
        if t.contains('.') || self.base() > 16 {
            for (position, part) in t.split('.').enumerate() {
                if part.is_empty() {
                    return Err(syntax("empty digit between dots"));
                }
                if !part.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(syntax("a dotted digit is not decimal"));
                }
                let out = || IdError::DigitOutOfBase {
                    position,
                    digit: part.to_string(),
                    base: self.base(),
                };
                match part.parse::<u32>() {
                    Ok(d) if d < self.base() => digits.push(d),
                    _ => return Err(out()),
                }
            }
        } else {
            for (position, ch) in t.chars().enumerate() {
                let d = ch
                    .to_digit(16)
                    .ok_or_else(|| syntax("not a hex digit (or use dotted decimal digits)"))?;
                if d >= self.base() {
                    return Err(IdError::DigitOutOfBase {
                        position,
                        digit: ch.to_string(),
                        base: self.base(),
                    });
                }
                digits.push(d);
            }
        }
        self.id(&digits)
    }

    fn width(self) -> u32 {
        self.bits * self.digits
    }

    fn digit_of(self, value: u64, k: usize) -> usize {
        let shift = (self.digits - 1 - k as u32) * self.bits;
        ((value >> shift) & u64::from(self.base() - 1)) as usize
    }

    /// Longest common prefix in digits of two packed values of this shape.
    fn lcp(self, a: u64, b: u64) -> usize {
        let x = a ^ b;
        if x == 0 {
            return self.digits as usize;
        }
        // Both values are below 2^width, so the first 64 - width bits of x are zero.
        ((x.leading_zeros() - (64 - self.width())) / self.bits) as usize
    }

    /// The first `k` digits of `value` as text, in the syntax of `Display` for IDs.
    fn prefix_text(self, value: u64, k: usize) -> String {
        let mut s = String::new();
        for i in 0..k {
            let d = self.digit_of(value, i);
            if self.base() <= 16 {
                s.push(char::from_digit(d as u32, 16).expect("digit below 16"));
            } else {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(&d.to_string());
            }
        }
        s
    }
}

impl TopoId {
    /// The packed value, digit 0 in the high bits: the paper's tid in [0, c^m).
    pub fn value(self) -> u64 {
        self.value
    }

    pub fn shape(self) -> Shape {
        self.shape
    }

    /// Digit `k` (0 is the leftmost, the most significant). Panics unless `k < m`.
    pub fn digit(self, k: usize) -> u32 {
        assert!(
            k < self.shape.digits as usize,
            "digit {k} of {}",
            self.shape
        );
        self.shape.digit_of(self.value, k) as u32
    }

    /// All m digits, digit 0 first.
    pub fn digits(self) -> Vec<u32> {
        (0..self.shape.digits as usize)
            .map(|k| self.digit(k))
            .collect()
    }

    /// The number of leading digits the two IDs share (m if equal). Panics if the shapes differ.
    pub fn longest_common_prefix(self, other: TopoId) -> usize {
        assert_eq!(self.shape, other.shape, "IDs of different shapes");
        self.shape.lcp(self.value, other.value)
    }
}

impl fmt::Display for TopoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            &self
                .shape
                .prefix_text(self.value, self.shape.digits as usize),
        )
    }
}

/// The topology IDs of a communicator's ranks (the paper's `topo_ids[]`), unique, all of one
/// shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    shape: Shape,
    ids: Vec<u64>,
}

impl Topology {
    /// Rank r has the packed ID `values[r]`. Refused if empty, if a value does not fit the shape
    /// or if two ranks share an ID (the pair reported is the one whose later rank is lowest).
    pub fn new(shape: Shape, values: Vec<u64>) -> Result<Topology, IdError> {
        if values.is_empty() {
            return Err(IdError::NoRanks);
        }
        if values.len() >= HOLE as usize {
            return Err(IdError::TooManyRanks(values.len()));
        }
        for (rank, &v) in values.iter().enumerate() {
            shape.id_from_value(v).map_err(|e| at_rank(rank, e))?;
        }
        let mut sorted: Vec<(u64, u32)> = values
            .iter()
            .enumerate()
            .map(|(r, &v)| (v, r as u32))
            .collect();
        sorted.sort_unstable();
        let dup = sorted
            .windows(2)
            .filter(|w| w[0].0 == w[1].0)
            .min_by_key(|w| w[1].1);
        if let Some(w) = dup {
            // Name the lowest rank with that ID, which need not be w[0] in a run of three.
            let first = sorted
                .iter()
                .find(|&&(v, _)| v == w[0].0)
                .expect("the pair's own value")
                .1;
            return Err(IdError::Duplicate {
                first,
                second: w[1].1,
                id: TopoId {
                    value: w[0].0,
                    shape,
                }
                .to_string(),
            });
        }
        Ok(Topology { shape, ids: values })
    }

    /// Parses one ID per rank (see [`Shape::parse`]); errors name the rank.
    pub fn parse<'a, I: IntoIterator<Item = &'a str>>(
        shape: Shape,
        texts: I,
    ) -> Result<Topology, IdError> {
        let mut values = Vec::new();
        for (rank, t) in texts.into_iter().enumerate() {
            values.push(shape.parse(t).map_err(|e| at_rank(rank, e))?.value);
        }
        Topology::new(shape, values)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The number of ranks, N.
    pub fn ranks(&self) -> u32 {
        self.ids.len() as u32
    }

    /// Rank `rank`'s ID. Panics unless `rank < N`.
    pub fn id(&self, rank: u32) -> TopoId {
        TopoId {
            value: self.ids[rank as usize],
            shape: self.shape,
        }
    }

    /// The packed IDs, rank order (what an allgather at setup would exchange).
    pub fn values(&self) -> &[u64] {
        &self.ids
    }

    /// How many leading digits ranks `a` and `b` share (m only for a == b).
    pub fn longest_common_prefix(&self, a: u32, b: u32) -> usize {
        self.shape.lcp(self.ids[a as usize], self.ids[b as usize])
    }
}

fn at_rank(rank: usize, error: IdError) -> IdError {
    IdError::AtRank {
        rank: rank as u32,
        error: Box::new(error),
    }
}

fn bits_of_base(base: u32) -> Result<u32, IdError> {
    if !(2..=256).contains(&base) || !base.is_power_of_two() {
        return Err(IdError::Base(base));
    }
    Ok(base.trailing_zeros())
}

/// `v << s` that gives 0 for s = 64 (a single level of 64 bits).
fn shl(v: u64, s: u32) -> u64 {
    v.checked_shl(s).unwrap_or(0)
}

/// Digits of `bits` bits needed for values up to `max` (0 for max = 0).
fn digits_for(max: u32, bits: u32) -> u32 {
    (32 - max.leading_zeros()).div_ceil(bits)
}

/// Numbers each rank's host in the order of the hosts' addresses (`addrs[r]` is rank r's
/// interface address): nearby addresses usually mean nearby hosts, so the host index is the
/// right first fact for [`derive`].
pub fn host_index_by_address<A: Ord>(addrs: &[A]) -> Vec<u32> {
    let mut distinct: Vec<&A> = addrs.iter().collect();
    distinct.sort();
    distinct.dedup();
    addrs
        .iter()
        .map(|a| distinct.binary_search(&a).expect("every address is listed") as u32)
        .collect()
}

/// Topology IDs in base `base` from per-rank facts, outermost first: `facts[r]` is e.g.
/// `[host index, package, NUMA node, core]` of rank r (every rank the same number of facts).
///
/// Each fact level gets the fewest digits that hold its largest value (none if it is always 0),
/// and the levels are concatenated in order, so ranks that agree on the first k facts share at
/// least the digits of those k levels and ranks that differ on a level share fewer than the
/// digits up to and including it: ranks on one host share a longer prefix than any two ranks on
/// different hosts. Ranks with identical facts get one more level numbering them in rank order,
/// so that the IDs are unique. Refused if the digits exceed 64 bits.
pub fn derive<F: AsRef<[u32]>>(base: u32, facts: &[F]) -> Result<Topology, IdError> {
    let bits = bits_of_base(base)?;
    let n = facts.len();
    if n == 0 {
        return Err(IdError::NoRanks);
    }
    if n >= HOLE as usize {
        return Err(IdError::TooManyRanks(n));
    }
    let want = facts[0].as_ref().len();
    let mut max = vec![0u32; want];
    for (rank, f) in facts.iter().enumerate() {
        let f = f.as_ref();
        if f.len() != want {
            return Err(IdError::FactLevels {
                rank: rank as u32,
                got: f.len(),
                want,
            });
        }
        for (m, &v) in max.iter_mut().zip(f) {
            *m = (*m).max(v);
        }
    }
    // Number the ranks that share every fact, lowest rank first.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| facts[a].as_ref().cmp(facts[b].as_ref()).then(a.cmp(&b)));
    let mut tie = vec![0u32; n];
    for w in order.windows(2) {
        if facts[w[0]].as_ref() == facts[w[1]].as_ref() {
            tie[w[1]] = tie[w[0]] + 1;
        }
    }
    let mut widths: Vec<u32> = max.iter().map(|&m| digits_for(m, bits)).collect();
    widths.push(digits_for(tie.iter().copied().max().unwrap_or(0), bits));
    let digits = widths.iter().sum::<u32>().max(1);
    let shape = Shape::new(base, digits)?;
    let values = (0..n)
        .map(|r| {
            let levels = facts[r].as_ref().iter().chain(std::iter::once(&tie[r]));
            levels
                .zip(&widths)
                .fold(0u64, |v, (&f, &w)| shl(v, w * bits) | u64::from(f))
        })
        .collect();
    let topo = Topology { shape, ids: values };
    debug_assert!(Topology::new(shape, topo.ids.clone()).is_ok());
    Ok(topo)
}

/// How a table entry is chosen among several candidates (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The candidate with the smallest hash of (seed, me, candidate); one seed for the job.
    Random { seed: u64 },
    /// The candidate with the smallest XOR distance to my ID (longest common prefix after the
    /// entry's digit; unique, since IDs are).
    Nearest,
}

/// One rank's routing table: m rows, c columns, an entry a rank, me or a hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingTable {
    me: u32,
    rows: usize,
    cols: usize,
    entries: Vec<u32>,
}

impl RoutingTable {
    /// Rank `me`'s table over `topo`: one scan of all ranks (O(N) time, O(m * c) space).
    /// Panics unless `me < N`.
    pub fn build(topo: &Topology, me: u32, pick: Pick) -> RoutingTable {
        assert!(
            me < topo.ranks(),
            "rank {me} of a topology of {} ranks",
            topo.ranks()
        );
        let shape = topo.shape;
        let (rows, cols) = (shape.digits as usize, shape.base() as usize);
        let mut entries = vec![HOLE; rows * cols];
        let mut best = vec![0u64; rows * cols];
        let x = topo.ids[me as usize];
        for (p, &y) in topo.ids.iter().enumerate() {
            if p == me as usize {
                continue;
            }
            // IDs are unique, so l < m and y's digit l differs from mine.
            let l = shape.lcp(x, y);
            let at = l * cols + shape.digit_of(y, l);
            let key = match pick {
                Pick::Nearest => x ^ y,
                Pick::Random { seed } => random_key(seed, me, p as u32),
            };
            // Strictly smaller: on equal random keys the lower rank, scanned first, stays.
            if entries[at] == HOLE || key < best[at] {
                entries[at] = p as u32;
                best[at] = key;
            }
        }
        for i in 0..rows {
            entries[i * cols + shape.digit_of(x, i)] = me;
        }
        RoutingTable {
            me,
            rows,
            cols,
            entries,
        }
    }

    /// Rank `me`'s table from its `entries` (m * c of them, row by row, `u32::MAX` for a hole,
    /// `me` at its own digit of each row), as a faster builder of every table made them
    /// (`mpicast topo`). Panics unless their number fits `topo`.
    pub fn from_entries(topo: &Topology, me: u32, entries: Vec<u32>) -> RoutingTable {
        let (rows, cols) = (topo.shape.digits as usize, topo.shape.base() as usize);
        assert!(
            me < topo.ranks() && entries.len() == rows * cols,
            "{} entries for rank {me} of a {rows}x{cols} topology of {} ranks",
            entries.len(),
            topo.ranks()
        );
        RoutingTable {
            me,
            rows,
            cols,
            entries,
        }
    }

    /// The rank whose table this is.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// r = m.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// c.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// T[i][j]: `None` for a hole, `Some(me)` at j = my digit i. Panics unless i < m, j < c.
    pub fn get(&self, i: usize, j: usize) -> Option<u32> {
        assert!(
            i < self.rows && j < self.cols,
            "T[{i}][{j}] of {}x{}",
            self.rows,
            self.cols
        );
        Some(self.entries[i * self.cols + j]).filter(|&e| e != HOLE)
    }

    /// The number of holes.
    pub fn holes(&self) -> usize {
        self.entries.iter().filter(|&&e| e == HOLE).count()
    }

    /// The table as text, one row per level with my prefix up to it; `*` is me, `-` a hole.
    /// Panics if `topo` is not the topology of this table.
    pub fn render(&self, topo: &Topology) -> String {
        use fmt::Write;
        self.check(topo);
        let shape = topo.shape;
        let x = topo.ids[self.me as usize];
        let cell = (topo.ranks() - 1)
            .to_string()
            .len()
            .max(self.cols.to_string().len());
        let pre = shape
            .prefix_text(x, self.rows - 1)
            .len()
            .max("prefix".len());
        let mut s = String::new();
        let _ = writeln!(
            s,
            "rank {}: topology ID {}, {}; * = me, - = hole",
            self.me,
            topo.id(self.me),
            shape
        );
        let _ = write!(s, "level {:<pre$} |", "prefix");
        for j in 0..self.cols {
            let _ = write!(s, " {j:>cell$}");
        }
        s.push('\n');
        for i in 0..self.rows {
            let _ = write!(s, "{i:>5} {:<pre$} |", shape.prefix_text(x, i));
            for j in 0..self.cols {
                let e = match self.get(i, j) {
                    None => "-".to_string(),
                    Some(r) if r == self.me => "*".to_string(),
                    Some(r) => r.to_string(),
                };
                let _ = write!(s, " {e:>cell$}");
            }
            s.push('\n');
        }
        s
    }

    fn check(&self, topo: &Topology) {
        assert!(
            self.me < topo.ranks()
                && self.rows == topo.shape.digits as usize
                && self.cols == topo.shape.base() as usize,
            "table of rank {} ({}x{}) used with a topology of {} ranks, {}",
            self.me,
            self.rows,
            self.cols,
            topo.ranks(),
            topo.shape
        );
    }
}

fn random_key(seed: u64, me: u32, candidate: u32) -> u64 {
    use crate::rng::mix;
    mix(mix(seed) ^ (u64::from(me) << 32 | u64::from(candidate)))
}

/// Who the next hop is (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The paper's: the table entry, which may be a virtual master that only forwards.
    Table,
    /// Ours: a destination of the entry's subtree, carrying that subtree's destinations.
    Dests,
}

/// One message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The next hop's rank.
    pub to: u32,
    /// The table row used: longest_common_prefix(me, to).
    pub level: usize,
    /// The destinations in `to`'s subtree (those sharing level + 1 digits with `to`), in the order
    /// they came; `to` itself among them if it is one. What a `Route::Dests` message carries.
    pub dests: Vec<u32>,
}

/// What a rank does with one multicast message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    /// Whether I am a destination (a virtual master forwards without delivering).
    pub deliver: bool,
    /// The messages to send, lowest level (largest subtree) first, then by digit.
    pub hops: Vec<Hop>,
}

/// What rank `table.me()` does with a multicast message to `dests` that came from `prev`
/// (`None` at the root). For `Route::Dests`, `dests` is the list the message carried; for
/// `Route::Table` either the whole destination set or the carried list (same result).
/// Destinations outside my stage are ignored: they are another branch's. Duplicates are
/// harmless (each rank is still handled once) but carried along. O(|dests| + m * c).
///
/// Panics if a rank is out of range, if `prev` is me, or if the table is not one of `topo`.
pub fn forward(
    topo: &Topology,
    table: &RoutingTable,
    route: Route,
    prev: Option<u32>,
    dests: &[u32],
) -> Forward {
    table.check(topo);
    let shape = topo.shape;
    let (me, cols) = (table.me, table.cols);
    let n = topo.ranks();
    let x = topo.ids[me as usize];
    let stage = match prev {
        None => 0,
        Some(p) => {
            assert!(p < n && p != me, "rank {me} received from rank {p}");
            shape.lcp(x, topo.ids[p as usize]) + 1
        }
    };
    // Counting sort of the destinations by table entry (level * c + digit), stable.
    let buckets = table.entries.len();
    let mut start = vec![0usize; buckets + 1];
    let mut bucket = Vec::with_capacity(dests.len());
    let mut deliver = false;
    for &d in dests {
        assert!(d < n, "destination {d} of {n} ranks");
        let b = if d == me {
            deliver = true;
            None
        } else {
            let y = topo.ids[d as usize];
            let l = shape.lcp(x, y);
            (l >= stage).then(|| l * cols + shape.digit_of(y, l))
        };
        if let Some(b) = b {
            start[b + 1] += 1;
        }
        bucket.push(b);
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut fill = start.clone();
    let mut grouped = vec![0u32; start[buckets]];
    for (&d, b) in dests.iter().zip(&bucket) {
        if let Some(b) = *b {
            grouped[fill[b]] = d;
            fill[b] += 1;
        }
    }
    let mut hops = Vec::new();
    for b in 0..buckets {
        let group = &grouped[start[b]..start[b + 1]];
        if group.is_empty() {
            continue;
        }
        let entry = table.entries[b];
        assert!(
            entry != HOLE,
            "rank {me}: destination {} behind the hole T[{}][{}]: table not built from these IDs",
            group[0],
            b / cols,
            b % cols
        );
        let to = match route {
            Route::Table => entry,
            Route::Dests => {
                let e = topo.ids[entry as usize];
                *group
                    .iter()
                    .min_by_key(|&&d| (topo.ids[d as usize] ^ e, d))
                    .expect("group is not empty")
            }
        };
        hops.push(Hop {
            to,
            level: b / cols,
            dests: group.to_vec(),
        });
    }
    Forward { deliver, hops }
}

#[cfg(test)]
mod tests;
