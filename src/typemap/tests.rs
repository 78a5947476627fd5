//! The order check against a brute-force oracle: a model of MPI's type constructors whose
//! type map is written out entry by entry, then merged. The analysis must agree with the
//! oracle on every random type (never a run the map is not, and never Scattered for a run,
//! so that no contiguous type pays for packing), and on the cases that were delivered wrong.

use super::*;
use crate::sched::testutil::Rng;

/// A datatype as built by the application, for the oracle.
#[derive(Debug, Clone)]
enum T {
    /// A predefined type of `n` bytes.
    Prim(i64),
    /// A predefined pair type (MPI_SHORT_INT and the like): `a` bytes, `gap` bytes of padding,
    /// `b` bytes.
    Pair(i64, i64, i64),
    Contig(i64, Box<T>),
    /// Stride in elements of the child.
    Vector(i64, i64, i64, Box<T>),
    /// Stride in bytes.
    HVector(i64, i64, i64, Box<T>),
    /// (len, disp in elements).
    Indexed(Vec<(i64, i64)>, Box<T>),
    /// (len, disp in bytes).
    HIndexed(Vec<(i64, i64)>, Box<T>),
    Struct(Vec<(i64, i64, T)>),
    /// New lower bound and extent.
    Resized(i64, i64, Box<T>),
    Subarray {
        sizes: Vec<i64>,
        subsizes: Vec<i64>,
        starts: Vec<i64>,
        fortran: bool,
        child: Box<T>,
    },
    Dup(Box<T>),
}

/// The type map's entries (offset, length) in type-map order.
fn entries(t: &T, base: i64, out: &mut Vec<(i64, i64)>) {
    match t {
        T::Prim(n) => out.push((base, *n)),
        T::Pair(a, gap, b) => {
            out.push((base, *a));
            out.push((base + a + gap, *b));
        }
        T::Contig(n, c) => {
            for i in 0..*n {
                entries(c, base + i * extent(c), out);
            }
        }
        T::Vector(count, bl, stride, c) => {
            for i in 0..*count {
                for j in 0..*bl {
                    entries(c, base + (i * stride + j) * extent(c), out);
                }
            }
        }
        T::HVector(count, bl, stride, c) => {
            for i in 0..*count {
                for j in 0..*bl {
                    entries(c, base + i * stride + j * extent(c), out);
                }
            }
        }
        T::Indexed(blocks, c) => {
            for &(len, disp) in blocks {
                for j in 0..len {
                    entries(c, base + (disp + j) * extent(c), out);
                }
            }
        }
        T::HIndexed(blocks, c) => {
            for &(len, disp) in blocks {
                for j in 0..len {
                    entries(c, base + disp + j * extent(c), out);
                }
            }
        }
        T::Struct(blocks) => {
            for (len, disp, c) in blocks {
                for j in 0..*len {
                    entries(c, base + disp + j * extent(c), out);
                }
            }
        }
        T::Resized(_, _, c) | T::Dup(c) => entries(c, base, out),
        T::Subarray {
            sizes,
            subsizes,
            starts,
            fortran,
            child,
        } => {
            // Every index of the sub-block, the slowest dimension outermost.
            let n = sizes.len();
            let slow_to_fast: Vec<usize> = if *fortran {
                (0..n).rev().collect()
            } else {
                (0..n).collect()
            };
            let total: i64 = subsizes.iter().product();
            for k in 0..total {
                // Decompose k over the sub-block, fastest dimension last.
                let mut rest = k;
                let mut idx = vec![0i64; n];
                for &d in slow_to_fast.iter().rev() {
                    idx[d] = rest % subsizes[d];
                    rest /= subsizes[d];
                }
                // Linear position in the full array.
                let mut pos = 0;
                for &d in &slow_to_fast {
                    pos = pos * sizes[d] + starts[d] + idx[d];
                }
                entries(child, base + pos * extent(child), out);
            }
        }
    }
}

/// (lb, ub) as MPI defines them, without alignment padding (the analysis takes every extent
/// as given, so any consistent rule will do).
fn bounds(t: &T) -> (i64, i64) {
    let mut placed: Vec<(i64, &T)> = Vec::new();
    match t {
        T::Prim(n) => return (0, *n),
        T::Pair(a, gap, b) => return (0, a + gap + b),
        T::Resized(lb, ext, _) => return (*lb, lb + ext),
        T::Dup(c) => return bounds(c),
        T::Subarray { sizes, child, .. } => {
            let (lb, _) = bounds(child);
            return (lb, lb + sizes.iter().product::<i64>() * extent(child));
        }
        T::Contig(n, c) => (0..*n).for_each(|i| placed.push((i * extent(c), c))),
        T::Vector(count, bl, stride, c) => {
            for i in 0..*count {
                for j in 0..*bl {
                    placed.push(((i * stride + j) * extent(c), c));
                }
            }
        }
        T::HVector(count, bl, stride, c) => {
            for i in 0..*count {
                for j in 0..*bl {
                    placed.push((i * stride + j * extent(c), c));
                }
            }
        }
        T::Indexed(blocks, c) => {
            for &(len, disp) in blocks {
                (0..len).for_each(|j| placed.push(((disp + j) * extent(c), c)));
            }
        }
        T::HIndexed(blocks, c) => {
            for &(len, disp) in blocks {
                (0..len).for_each(|j| placed.push((disp + j * extent(c), c)));
            }
        }
        T::Struct(blocks) => {
            for (len, disp, c) in blocks {
                (0..*len).for_each(|j| placed.push((disp + j * extent(c), c)));
            }
        }
    }
    let lo = placed.iter().map(|(p, c)| p + bounds(c).0).min();
    let hi = placed.iter().map(|(p, c)| p + bounds(c).1).max();
    (lo.unwrap_or(0), hi.unwrap_or(0))
}

fn extent(t: &T) -> i64 {
    let (lb, ub) = bounds(t);
    ub - lb
}

/// What the oracle says: the entries merged.
fn brute(t: &T, count: i64) -> Layout {
    let mut e = Vec::new();
    for i in 0..count {
        entries(t, i * extent(t), &mut e);
    }
    let mut acc = Layout::Empty;
    for (off, len) in e.into_iter().filter(|&(_, len)| len > 0) {
        acc = match acc {
            Layout::Empty => Layout::Run { off, len },
            Layout::Run { off: o, len: l } if o + l == off => Layout::Run {
                off: o,
                len: l + len,
            },
            _ => return Layout::Scattered,
        };
    }
    acc
}

fn elem(t: &T) -> Elem {
    Elem {
        layout: analyze(t),
        extent: extent(t),
    }
}

/// What `host::datatype` does: the constructor, with the children's answers.
fn constructor(t: &T) -> Constructor {
    match t {
        T::Prim(n) => Constructor::Named {
            size: *n,
            true_lb: 0,
            true_extent: *n,
        },
        T::Pair(a, gap, b) => Constructor::Named {
            size: a + b,
            true_lb: 0,
            true_extent: a + gap + b,
        },
        T::Contig(n, c) => Constructor::Contiguous {
            count: *n,
            elem: elem(c),
        },
        T::Vector(count, bl, stride, c) => Constructor::Vector {
            count: *count,
            blocklen: *bl,
            stride: stride * extent(c),
            elem: elem(c),
        },
        T::HVector(count, bl, stride, c) => Constructor::Vector {
            count: *count,
            blocklen: *bl,
            stride: *stride,
            elem: elem(c),
        },
        T::Indexed(blocks, c) => Constructor::Indexed {
            blocks: blocks.iter().map(|&(l, d)| (l, d * extent(c))).collect(),
            elem: elem(c),
        },
        T::HIndexed(blocks, c) => Constructor::Indexed {
            blocks: blocks.clone(),
            elem: elem(c),
        },
        T::Struct(blocks) => Constructor::Struct {
            blocks: blocks.iter().map(|(l, d, c)| (*l, *d, elem(c))).collect(),
        },
        T::Resized(_, _, c) | T::Dup(c) => Constructor::Same(analyze(c)),
        T::Subarray {
            sizes,
            subsizes,
            starts,
            fortran,
            child,
        } => Constructor::Subarray {
            sizes: sizes.clone(),
            subsizes: subsizes.clone(),
            starts: starts.clone(),
            fortran: *fortran,
            elem: elem(child),
        },
    }
}

fn analyze(t: &T) -> Layout {
    layout(&constructor(t))
}

fn int() -> Box<T> {
    Box::new(T::Prim(4))
}

#[test]
fn struct_listed_backwards_is_not_in_place() {
    // The reported case: three ints at 8, 4, 0 are dense (true extent 12 = size) but the
    // type map reads the last one first.
    let back = T::Struct(vec![
        (1, 8, T::Prim(4)),
        (1, 4, T::Prim(4)),
        (1, 0, T::Prim(4)),
    ]);
    assert_eq!(analyze(&back), Layout::Scattered);
    assert_eq!(brute(&back, 1), Layout::Scattered);
    let fwd = T::Struct(vec![
        (1, 0, T::Prim(4)),
        (1, 4, T::Prim(4)),
        (1, 8, T::Prim(4)),
    ]);
    assert_eq!(analyze(&fwd), Layout::Run { off: 0, len: 12 });
    assert!(in_place(analyze(&fwd), extent(&fwd), 100));
}

#[test]
fn indexed_blocks_out_of_order() {
    // Dense, but the second block comes first in memory.
    let t = T::Indexed(vec![(2, 3), (3, 0)], int());
    assert_eq!(analyze(&t), Layout::Scattered);
    let t = T::Indexed(vec![(3, 0), (0, 99), (2, 3)], int());
    assert_eq!(analyze(&t), Layout::Run { off: 0, len: 20 });
    // A gap: in order, not dense.
    let t = T::Indexed(vec![(3, 0), (2, 4)], int());
    assert_eq!(analyze(&t), Layout::Scattered);
}

#[test]
fn vectors() {
    // stride == blocklen: contiguous; negative stride: the highest block first.
    assert_eq!(
        analyze(&T::Vector(4, 2, 2, int())),
        Layout::Run { off: 0, len: 32 }
    );
    assert_eq!(analyze(&T::Vector(4, 2, -2, int())), Layout::Scattered);
    assert_eq!(analyze(&T::Vector(4, 2, 3, int())), Layout::Scattered);
    // One block, whatever the stride.
    assert_eq!(
        analyze(&T::Vector(1, 2, -7, int())),
        Layout::Run { off: 0, len: 8 }
    );
    assert_eq!(analyze(&T::Vector(0, 2, 3, int())), Layout::Empty);
    assert_eq!(analyze(&T::HVector(3, 1, -4, int())), Layout::Scattered);
    assert_eq!(
        analyze(&T::HVector(3, 1, 4, int())),
        Layout::Run { off: 0, len: 12 }
    );
}

#[test]
fn resized_and_dup_keep_the_map() {
    // A negative lower bound moves the bounds, not the data.
    let r = T::Resized(-8, 20, Box::new(T::Contig(3, int())));
    assert_eq!(analyze(&r), Layout::Run { off: 0, len: 12 });
    // ...but count > 1 then steps by 20 bytes: holes.
    assert!(!in_place(analyze(&r), extent(&r), 2));
    assert!(in_place(analyze(&r), extent(&r), 1));
    let d = T::Dup(Box::new(T::Vector(2, 1, -1, int())));
    assert_eq!(analyze(&d), Layout::Scattered);
}

#[test]
fn subarrays() {
    let sub = |sizes: &[i64], subsizes: &[i64], starts: &[i64], fortran| T::Subarray {
        sizes: sizes.to_vec(),
        subsizes: subsizes.to_vec(),
        starts: starts.to_vec(),
        fortran,
        child: int(),
    };
    // Full rows of a C array: one run from row 2.
    assert_eq!(
        analyze(&sub(&[5, 4], &[2, 4], &[2, 0], false)),
        Layout::Run { off: 32, len: 32 }
    );
    // The same shape in Fortran order is full columns... of the other dimension: holes.
    assert_eq!(
        analyze(&sub(&[5, 4], &[2, 4], &[2, 0], true)),
        Layout::Scattered
    );
    assert_eq!(
        analyze(&sub(&[5, 4], &[5, 1], &[0, 3], true)),
        Layout::Run { off: 60, len: 20 }
    );
    // One row, part of it.
    assert_eq!(
        analyze(&sub(&[5, 4], &[1, 2], &[1, 1], false)),
        Layout::Run { off: 20, len: 8 }
    );
    assert_eq!(
        analyze(&sub(&[5, 4], &[0, 2], &[1, 1], false)),
        Layout::Empty
    );
}

#[test]
fn pair_types_with_padding() {
    // MPI_SHORT_INT: short, 2 bytes of padding, int.
    assert_eq!(analyze(&T::Pair(2, 2, 4)), Layout::Scattered);
    // MPI_2INT.
    assert_eq!(analyze(&T::Pair(4, 0, 4)), Layout::Run { off: 0, len: 8 });
    assert_eq!(analyze(&T::Prim(0)), Layout::Empty);
}

#[test]
fn unknown_and_overflow_are_scattered() {
    assert_eq!(layout(&Constructor::Unknown), Layout::Scattered);
    let huge = Elem {
        layout: Layout::Run {
            off: 0,
            len: i64::MAX / 2,
        },
        extent: i64::MAX / 2,
    };
    assert_eq!(
        layout(&Constructor::Contiguous {
            count: 3,
            elem: huge
        }),
        Layout::Scattered
    );
    assert_eq!(
        layout(&Constructor::Contiguous {
            count: -1,
            elem: huge
        }),
        Layout::Scattered
    );
}

/// Small random types, biased towards the ones that are dense (blocks placed where the one
/// before ends, in order or shuffled), where the analysis has something to get wrong.
fn gen(r: &mut Rng, depth: u32) -> T {
    let leaf = depth == 0 || r.chance(25);
    if leaf {
        return match r.below(6) {
            0 => T::Pair(2, r.below(3) as i64, 4),
            1 => T::Prim(0),
            n => T::Prim([1, 2, 4, 8][n - 2]),
        };
    }
    let child = Box::new(gen(r, depth - 1));
    let small = |r: &mut Rng| r.below(4) as i64;
    let tight = r.chance(60);
    match r.below(9) {
        0 => T::Contig(small(r), child),
        1 => {
            let bl = small(r);
            let stride = if tight { bl } else { r.below(9) as i64 - 4 };
            T::Vector(small(r), bl, stride, child)
        }
        2 => {
            let bl = small(r);
            let ext = extent(&child);
            let stride = if tight {
                bl * ext
            } else {
                r.below(40) as i64 - 20
            };
            T::HVector(small(r), bl, stride, child)
        }
        3 | 4 => {
            // Blocks laid out one after the other, then maybe listed in another order.
            let n = 1 + r.below(4);
            let mut at = 0;
            let mut blocks = Vec::new();
            for _ in 0..n {
                let len = small(r);
                blocks.push((len, at));
                at += len + if tight { 0 } else { small(r) };
            }
            if r.chance(50) {
                for i in (1..blocks.len()).rev() {
                    blocks.swap(i, r.below(i + 1));
                }
            }
            if r.chance(50) {
                T::Indexed(blocks, child)
            } else {
                let ext = extent(&child);
                let bytes = blocks.iter().map(|&(l, d)| (l, d * ext)).collect();
                T::HIndexed(bytes, child)
            }
        }
        5 => {
            let n = 1 + r.below(4);
            let mut at = r.below(3) as i64 - 1;
            let mut blocks = Vec::new();
            for _ in 0..n {
                let c = gen(r, depth - 1);
                let len = 1 + small(r) / 2;
                let (lb, _) = bounds(&c);
                blocks.push((len, at - lb, c.clone()));
                at += len * extent(&c) + if tight { 0 } else { small(r) };
            }
            if r.chance(50) {
                for i in (1..blocks.len()).rev() {
                    blocks.swap(i, r.below(i + 1));
                }
            }
            T::Struct(blocks)
        }
        6 => {
            let (lb, ub) = bounds(&child);
            let new_lb = lb - r.below(6) as i64;
            let ext = (ub - new_lb) + if tight { 0 } else { small(r) };
            T::Resized(new_lb, ext, child)
        }
        7 => {
            let n = 1 + r.below(3);
            let mut sizes = Vec::new();
            let mut subsizes = Vec::new();
            let mut starts = Vec::new();
            for _ in 0..n {
                let size = 1 + r.below(4) as i64;
                let sub = if r.chance(50) {
                    size
                } else {
                    r.below(size as usize + 1) as i64
                };
                sizes.push(size);
                subsizes.push(sub);
                starts.push(r.below((size - sub) as usize + 1) as i64);
            }
            T::Subarray {
                sizes,
                subsizes,
                starts,
                fortran: r.chance(50),
                child,
            }
        }
        _ => T::Dup(child),
    }
}

#[test]
fn random_types_agree_with_the_written_out_map() {
    let seed = 0x7E57_0022;
    let mut r = Rng::new(seed);
    let (mut runs, mut scattered) = (0, 0);
    for case in 0..20_000 {
        let t = gen(&mut r, 3);
        let count = r.below(4) as i64;
        let one = analyze(&t);
        assert_eq!(one, brute(&t, 1), "seed {seed:#x} case {case}: {t:?}");
        let want = brute(&t, count);
        let got = in_place(one, extent(&t), count);
        assert_eq!(
            got,
            want != Layout::Scattered,
            "seed {seed:#x} case {case}: count {count} of {t:?}"
        );
        match want {
            Layout::Run { .. } => runs += 1,
            Layout::Scattered => scattered += 1,
            Layout::Empty => {}
        }
    }
    // The generator must exercise both answers.
    assert!(
        runs > 2000 && scattered > 2000,
        "{runs} runs, {scattered} scattered"
    );
}
