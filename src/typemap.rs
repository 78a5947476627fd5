//! Which datatypes may be sent from (or received into) the application's memory as it lies.
//!
//! An MPI message is the sequence of bytes its type map lists, in the type map's order. A
//! buffer can be handed to the wire in place only when that sequence is exactly the bytes of
//! one memory range in ascending order: no hole between entries, no entry listed before one
//! at a lower address. A type whose true extent equals its size has no hole, but says
//! nothing about the order: a struct of three ints at displacements 8, 4, 0 is dense and yet
//! its first int is the last one in memory. This module decides the question from how a type
//! was built (the combiner and arguments that `MPI_Type_get_envelope`/`get_contents`
//! return), one constructor at a time, from the answers already found for its parts.
//!
//! Pure: `host::datatype` reads the constructors from the host MPI and caches the verdict on
//! the datatype. Whatever this module cannot prove in order and gap-free is `Scattered`,
//! which costs a pack or unpack in type-map order but is always right.

/// The bytes a type map lists, as far as in-place use is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// No bytes at all (size 0).
    Empty,
    /// Exactly the `len` bytes from `off` (relative to the buffer's address), in ascending
    /// order, each once; `len` > 0.
    Run { off: i64, len: i64 },
    /// Anything else: holes, another order, bytes listed twice, or not decided.
    Scattered,
}

/// One part of a constructor: the layout of one element of an old type, and that type's
/// extent (the stride between consecutive elements of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elem {
    pub layout: Layout,
    pub extent: i64,
}

/// How a type was built, with every displacement and stride already in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constructor {
    /// A predefined type: `size` bytes, its true lower bound and true extent. Its type map
    /// lists its parts in ascending order (the pair types of MINLOC/MAXLOC: value, then
    /// index), so it is one run exactly when it has no padding.
    Named {
        size: i64,
        true_lb: i64,
        true_extent: i64,
    },
    /// The same type map as one old type: `MPI_Type_dup`, `MPI_Type_create_resized` (which
    /// moves only the bounds).
    Same(Layout),
    /// `count` elements one after the other (`MPI_Type_contiguous`).
    Contiguous { count: i64, elem: Elem },
    /// `count` blocks of `blocklen` elements, block `i` at `i * stride` bytes
    /// (`MPI_Type_vector`, `MPI_Type_create_hvector`).
    Vector {
        count: i64,
        blocklen: i64,
        stride: i64,
        elem: Elem,
    },
    /// Blocks (`len` elements at `disp` bytes), in the order listed
    /// (`MPI_Type_indexed`, `hindexed`, `indexed_block`, `hindexed_block`).
    Indexed { blocks: Vec<(i64, i64)>, elem: Elem },
    /// Blocks of their own old types (`MPI_Type_create_struct`): (len, disp, elem).
    Struct { blocks: Vec<(i64, i64, Elem)> },
    /// `MPI_Type_create_subarray`: the sub-block `subsizes` at `starts` of an array of
    /// `sizes`, dimension 0 varying slowest (`fortran`: fastest).
    Subarray {
        sizes: Vec<i64>,
        subsizes: Vec<i64>,
        starts: Vec<i64>,
        fortran: bool,
        elem: Elem,
    },
    /// Anything not decided here (darray, the Fortran parameterised types, combiners this
    /// module does not know).
    Unknown,
}

/// The layout of one element of the type `c` builds.
pub fn layout(c: &Constructor) -> Layout {
    layout_checked(c).unwrap_or(Layout::Scattered)
}

fn layout_checked(c: &Constructor) -> Option<Layout> {
    match c {
        &Constructor::Named {
            size,
            true_lb,
            true_extent,
        } => Some(if size == 0 {
            Layout::Empty
        } else if size > 0 && true_extent == size {
            Layout::Run {
                off: true_lb,
                len: size,
            }
        } else {
            Layout::Scattered
        }),
        Constructor::Same(l) => Some(*l),
        Constructor::Contiguous { count, elem } => repeat(*elem, *count),
        Constructor::Vector {
            count,
            blocklen,
            stride,
            elem,
        } => {
            let block = repeat(*elem, *blocklen)?;
            strided(block, *count, *stride)
        }
        Constructor::Indexed { blocks, elem } => {
            let mut acc = Layout::Empty;
            for &(len, disp) in blocks {
                acc = append(acc, shift(repeat(*elem, len)?, disp)?)?;
            }
            Some(acc)
        }
        Constructor::Struct { blocks } => {
            let mut acc = Layout::Empty;
            for &(len, disp, elem) in blocks {
                acc = append(acc, shift(repeat(elem, len)?, disp)?)?;
            }
            Some(acc)
        }
        Constructor::Subarray {
            sizes,
            subsizes,
            starts,
            fortran,
            elem,
        } => subarray(sizes, subsizes, starts, *fortran, *elem),
        Constructor::Unknown => Some(Layout::Scattered),
    }
}

/// `count` consecutive elements (each `elem.extent` after the one before). `None` on
/// overflow or a negative count (the caller then says Scattered).
pub fn repeat(elem: Elem, count: i64) -> Option<Layout> {
    strided(elem.layout, count, elem.extent)
}

/// `count` copies of `one`, copy `i` shifted by `i * stride` bytes.
fn strided(one: Layout, count: i64, stride: i64) -> Option<Layout> {
    if count < 0 {
        return None;
    }
    match one {
        _ if count == 0 => Some(Layout::Empty),
        Layout::Empty => Some(Layout::Empty),
        Layout::Scattered => Some(Layout::Scattered),
        run if count == 1 => Some(run),
        // Each copy must start where the one before ends: then the copies, listed in order,
        // are one ascending run. A stride of anything else leaves a hole, overlaps, or (a
        // negative stride) lists a higher copy first.
        Layout::Run { off, len } if stride == len => Some(Layout::Run {
            off,
            len: len.checked_mul(count)?,
        }),
        Layout::Run { .. } => Some(Layout::Scattered),
    }
}

fn shift(l: Layout, by: i64) -> Option<Layout> {
    Some(match l {
        Layout::Run { off, len } => Layout::Run {
            off: off.checked_add(by)?,
            len,
        },
        other => other,
    })
}

/// `next` listed after `acc`: one run only when it starts where `acc` ends.
fn append(acc: Layout, next: Layout) -> Option<Layout> {
    Some(match (acc, next) {
        (Layout::Scattered, _) | (_, Layout::Scattered) => Layout::Scattered,
        (Layout::Empty, l) | (l, Layout::Empty) => l,
        (Layout::Run { off, len }, Layout::Run { off: o2, len: l2 }) => {
            if off.checked_add(len)? == o2 {
                Layout::Run {
                    off,
                    len: len.checked_add(l2)?,
                }
            } else {
                Layout::Scattered
            }
        }
    })
}

/// The sub-block, built as nested vectors from the fastest dimension out: the elements of
/// the fastest dimension are consecutive, each slower dimension steps by the product of the
/// faster full sizes.
fn subarray(
    sizes: &[i64],
    subsizes: &[i64],
    starts: &[i64],
    fortran: bool,
    elem: Elem,
) -> Option<Layout> {
    let n = sizes.len();
    if subsizes.len() != n || starts.len() != n || n == 0 {
        return None;
    }
    // Dimensions from the fastest to the slowest.
    let order: Vec<usize> = if fortran {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    };
    let mut acc = elem.layout;
    let mut stride = elem.extent; // bytes between consecutive indices of this dimension
    for d in order {
        let (size, sub, start) = (sizes[d], subsizes[d], starts[d]);
        if size < 0 || sub < 0 || start < 0 {
            return None;
        }
        acc = shift(strided(acc, sub, stride)?, start.checked_mul(stride)?)?;
        stride = stride.checked_mul(size)?;
    }
    Some(acc)
}

/// Whether `count` elements of a type whose one element has layout `one` and extent
/// `extent` are one ascending run (or nothing at all): the test a buffer must pass to be
/// used in place.
pub fn in_place(one: Layout, extent: i64, count: i64) -> bool {
    matches!(
        repeat(
            Elem {
                layout: one,
                extent
            },
            count
        ),
        Some(Layout::Run { .. } | Layout::Empty)
    )
}

#[cfg(test)]
mod tests;
