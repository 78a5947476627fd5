//! Is a datatype's type map one ascending run of memory? The decision is `typemap`'s; this
//! module reads how the type was built from the host (`MPI_Type_get_envelope`,
//! `MPI_Type_get_contents`, recursively through its old types) and caches the answer on
//! the datatype as an attribute of mpicast's own keyval. An attribute lives and dies with
//! its datatype, so a handle freed and handed out again for another type never finds an old
//! answer; `MPI_Type_dup` copies it (a duplicate has the same type map).
//!
//! Predefined types never come here (`buffer::UserBuf::describe` decides them from their
//! size and true extent, without a call), and a type the host cannot describe to us is
//! taken as not in order: packing is always right.

use super::{MPI_Datatype, SUCCESS};
use crate::typemap::{self, Constructor, Elem, Layout};
use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

// From shim.c: the host's combiner as mpicast's code (`combiner`), and the lengths of the
// arrays `MPI_Type_get_contents` fills; the host's MPI_ORDER_FORTRAN.
extern "C" {
    fn mpicast_c_type_envelope(
        t: MPI_Datatype,
        ni: *mut c_int,
        na: *mut c_int,
        nd: *mut c_int,
    ) -> c_int;
    static MPICAST_C_ORDER_FORTRAN: c_int;
}

/// The codes of `mpicast_c_type_envelope`.
mod combiner {
    pub const NAMED: i32 = 1;
    pub const DUP: i32 = 2;
    pub const CONTIGUOUS: i32 = 3;
    pub const VECTOR: i32 = 4;
    pub const HVECTOR: i32 = 5;
    pub const INDEXED: i32 = 6;
    pub const HINDEXED: i32 = 7;
    pub const INDEXED_BLOCK: i32 = 8;
    pub const HINDEXED_BLOCK: i32 = 9;
    pub const STRUCT: i32 = 10;
    pub const SUBARRAY: i32 = 11;
    pub const RESIZED: i32 = 12;
}

/// Attribute values: the answer for one element of the type.
const IN_ORDER: usize = 1;
const SCATTERED: usize = 2;

/// Nesting deeper than this is not followed (answered Scattered): a bound on the recursion,
/// far above what programs build.
const MAX_DEPTH: u32 = 64;

/// Whether one element of `dtype` (a derived datatype) lists its bytes as one ascending run
/// without holes, or no bytes at all. False when the host cannot tell us.
pub fn in_order(dtype: MPI_Datatype) -> bool {
    matches!(layout(dtype, 0), Layout::Run { .. } | Layout::Empty)
}

fn layout(dtype: MPI_Datatype, depth: u32) -> Layout {
    let (mut ni, mut na, mut nd) = (0, 0, 0);
    // SAFETY: writes three ints; the host checks the handle.
    let code = unsafe { mpicast_c_type_envelope(dtype, &mut ni, &mut na, &mut nd) };
    if code == combiner::NAMED {
        return named(dtype).map_or(Layout::Scattered, |c| typemap::layout(&c));
    }
    if code == 0 || depth > MAX_DEPTH {
        return Layout::Scattered;
    }
    let key = keyval();
    if let Some(k) = key {
        match get_attr(dtype, k) {
            Some(IN_ORDER) => return run_of(dtype).unwrap_or(Layout::Scattered),
            Some(_) => return Layout::Scattered,
            None => {}
        }
    }
    let l = decode(dtype, code, ni, na, nd, depth).unwrap_or(Layout::Scattered);
    if let Some(k) = key {
        let token = match l {
            Layout::Run { .. } | Layout::Empty => IN_ORDER,
            Layout::Scattered => SCATTERED,
        };
        set_attr(dtype, k, token);
    }
    l
}

/// Size and true bounds: what a predefined type's constructor is.
fn named(dtype: MPI_Datatype) -> Option<Constructor> {
    let (size, true_lb, true_extent) = sizes(dtype)?;
    Some(Constructor::Named {
        size,
        true_lb,
        true_extent,
    })
}

/// The run of a type already known to be in order: it starts at the true lower bound and
/// is as long as the type's size.
fn run_of(dtype: MPI_Datatype) -> Option<Layout> {
    let (size, true_lb, _) = sizes(dtype)?;
    Some(if size == 0 {
        Layout::Empty
    } else {
        Layout::Run {
            off: true_lb,
            len: size,
        }
    })
}

fn sizes(dtype: MPI_Datatype) -> Option<(i64, i64, i64)> {
    let mut size: mpi_sys::MPI_Count = 0;
    let (mut tlb, mut text): (mpi_sys::MPI_Count, mpi_sys::MPI_Count) = (0, 0);
    // SAFETY: each call writes plain integers.
    let ok = unsafe {
        mpi_sys::PMPI_Type_size_x(dtype, &mut size) == SUCCESS
            && mpi_sys::PMPI_Type_get_true_extent_x(dtype, &mut tlb, &mut text) == SUCCESS
    };
    ok.then_some((size, tlb, text))
}

fn extent(dtype: MPI_Datatype) -> Option<i64> {
    let (mut lb, mut ext): (mpi_sys::MPI_Count, mpi_sys::MPI_Count) = (0, 0);
    // SAFETY: writes two integers.
    let rc = unsafe { mpi_sys::PMPI_Type_get_extent_x(dtype, &mut lb, &mut ext) };
    (rc == SUCCESS).then_some(ext)
}

/// The old types `MPI_Type_get_contents` returned; the derived ones are new references
/// that must be freed, the predefined ones must not.
struct OldTypes(Vec<MPI_Datatype>);

impl Drop for OldTypes {
    fn drop(&mut self) {
        for t in &mut self.0 {
            let (mut ni, mut na, mut nd) = (0, 0, 0);
            // SAFETY: a handle the host gave us; writes three ints.
            let code = unsafe { mpicast_c_type_envelope(*t, &mut ni, &mut na, &mut nd) };
            if code != combiner::NAMED {
                // SAFETY: frees our reference only (the application's handles are others).
                unsafe { mpi_sys::PMPI_Type_free(t) };
            }
        }
    }
}

fn decode(
    dtype: MPI_Datatype,
    code: c_int,
    ni: c_int,
    na: c_int,
    nd: c_int,
    depth: u32,
) -> Option<Layout> {
    let (ni, na, nd) = (
        usize::try_from(ni).ok()?,
        usize::try_from(na).ok()?,
        usize::try_from(nd).ok()?,
    );
    let (ints, aints, old) = contents(dtype, ni, na, nd)?;
    let elem = |i: usize| -> Option<Elem> {
        let t = *old.0.get(i)?;
        Some(Elem {
            layout: layout(t, depth + 1),
            extent: extent(t)?,
        })
    };
    let int = |i: usize| -> Option<i64> { ints.get(i).map(|&v| v as i64) };
    #[allow(clippy::unnecessary_cast)] // MPI_Aint is isize under Open MPI, i64 under MPICH
    let aint = |i: usize| -> Option<i64> { aints.get(i).map(|&v| v as i64) };
    // `n` values of `f(i)` for i from `first`.
    let list = |n: i64, f: &dyn Fn(usize) -> Option<i64>, first: usize| -> Option<Vec<i64>> {
        (0..usize::try_from(n).ok()?)
            .map(|i| f(first + i))
            .collect()
    };
    let c = match code {
        combiner::DUP | combiner::RESIZED => Constructor::Same(elem(0)?.layout),
        combiner::CONTIGUOUS => Constructor::Contiguous {
            count: int(0)?,
            elem: elem(0)?,
        },
        combiner::VECTOR | combiner::HVECTOR => {
            let e = elem(0)?;
            let stride = if code == combiner::VECTOR {
                int(2)?.checked_mul(e.extent)?
            } else {
                aint(0)?
            };
            Constructor::Vector {
                count: int(0)?,
                blocklen: int(1)?,
                stride,
                elem: e,
            }
        }
        combiner::INDEXED | combiner::HINDEXED => {
            let (n, e) = (int(0)?, elem(0)?);
            let lens = list(n, &int, 1)?;
            let disps = if code == combiner::INDEXED {
                let d = list(n, &int, 1 + lens.len())?;
                d.iter()
                    .map(|&d| d.checked_mul(e.extent))
                    .collect::<Option<Vec<_>>>()?
            } else {
                list(n, &aint, 0)?
            };
            Constructor::Indexed {
                blocks: lens.into_iter().zip(disps).collect(),
                elem: e,
            }
        }
        combiner::INDEXED_BLOCK | combiner::HINDEXED_BLOCK => {
            let (n, len, e) = (int(0)?, int(1)?, elem(0)?);
            let disps = if code == combiner::INDEXED_BLOCK {
                list(n, &int, 2)?
                    .iter()
                    .map(|&d| d.checked_mul(e.extent))
                    .collect::<Option<Vec<_>>>()?
            } else {
                list(n, &aint, 0)?
            };
            Constructor::Indexed {
                blocks: disps.into_iter().map(|d| (len, d)).collect(),
                elem: e,
            }
        }
        combiner::STRUCT => {
            let n = int(0)?;
            let lens = list(n, &int, 1)?;
            let disps = list(n, &aint, 0)?;
            let mut blocks = Vec::with_capacity(lens.len());
            for (i, (len, disp)) in lens.into_iter().zip(disps).enumerate() {
                blocks.push((len, disp, elem(i)?));
            }
            Constructor::Struct { blocks }
        }
        combiner::SUBARRAY => {
            let n = int(0)?;
            let sizes = list(n, &int, 1)?;
            let subsizes = list(n, &int, 1 + sizes.len())?;
            let starts = list(n, &int, 1 + 2 * sizes.len())?;
            // SAFETY: an initialised constant of the C shim.
            let fortran = int(1 + 3 * sizes.len())? == unsafe { MPICAST_C_ORDER_FORTRAN } as i64;
            Constructor::Subarray {
                sizes,
                subsizes,
                starts,
                fortran,
                elem: elem(0)?,
            }
        }
        _ => Constructor::Unknown,
    };
    Some(typemap::layout(&c))
}

/// Entries a fingerprint may have: a type built from more is not fingerprinted.
const MAX_FINGERPRINT: usize = 4096;

/// How `dtype` was built, as numbers: equal fingerprints mean the same type map (the same
/// constructors with the same arguments over the same predefined types), whatever the
/// handles. Fan-out detection (`transport::fanout`) compares them, because a runtime may
/// make a new datatype for each send of one datum. None when the host cannot describe it
/// or it is too large to compare cheaply.
pub fn fingerprint(dtype: MPI_Datatype) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    print(dtype, 0, &mut out)?;
    Some(out)
}

fn print(dtype: MPI_Datatype, depth: u32, out: &mut Vec<i64>) -> Option<()> {
    let (mut ni, mut na, mut nd) = (0, 0, 0);
    // SAFETY: writes three ints; the host checks the handle.
    let code = unsafe { mpicast_c_type_envelope(dtype, &mut ni, &mut na, &mut nd) };
    if code == combiner::NAMED {
        out.extend([-1, super::buffer::type_key(dtype) as i64]);
        return Some(());
    }
    if code == 0 || depth > MAX_DEPTH {
        return None;
    }
    let (ni, na, nd) = (
        usize::try_from(ni).ok()?,
        usize::try_from(na).ok()?,
        usize::try_from(nd).ok()?,
    );
    if out.len() + ni + na + 4 > MAX_FINGERPRINT {
        return None;
    }
    let (ints, aints, old) = contents(dtype, ni, na, nd)?;
    out.extend([i64::from(code), ni as i64, na as i64, nd as i64]);
    out.extend(ints.iter().map(|&v| i64::from(v)));
    #[allow(clippy::unnecessary_cast)] // MPI_Aint is isize under Open MPI, i64 under MPICH
    out.extend(aints.iter().map(|&v| v as i64));
    for &t in &old.0 {
        print(t, depth + 1, out)?;
    }
    Some(())
}

// --- the attribute cache ---

unsafe extern "C" fn on_copy(
    _old: MPI_Datatype,
    _keyval: c_int,
    _extra: *mut c_void,
    val_in: *mut c_void,
    val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    super::callback("a datatype attribute's copy", || {
        // SAFETY: for C attributes MPI passes a pointer to the new value and to the flag. The
        // value is a plain token (nothing is owned), so the duplicate may carry it as it is.
        unsafe {
            *(val_out as *mut *mut c_void) = val_in;
            *flag = 1;
        }
        SUCCESS
    })
}

unsafe extern "C" fn on_delete(
    _t: MPI_Datatype,
    _keyval: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    // The token owns nothing: the attribute's going is all there is to it.
    super::callback("a datatype attribute's delete", || SUCCESS)
}

/// mpicast's datatype keyval, made at first use; `None` when the host refused it (then
/// nothing is cached, every look decodes again).
fn keyval() -> Option<c_int> {
    static KEYVAL: OnceLock<Option<c_int>> = OnceLock::new();
    *KEYVAL.get_or_init(|| {
        let mut key: c_int = super::keyval_invalid();
        // SAFETY: the callbacks have the C signatures MPI expects and use no extra state.
        let rc = unsafe {
            mpi_sys::PMPI_Type_create_keyval(
                Some(on_copy),
                Some(on_delete),
                &mut key,
                std::ptr::null_mut(),
            )
        };
        (rc == SUCCESS).then_some(key)
    })
}

fn get_attr(dtype: MPI_Datatype, key: c_int) -> Option<usize> {
    let mut val: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: for C attributes MPI writes the stored pointer value into `val`.
    let rc = unsafe {
        mpi_sys::PMPI_Type_get_attr(
            dtype,
            key,
            &mut val as *mut *mut c_void as *mut c_void,
            &mut flag,
        )
    };
    (rc == SUCCESS && flag != 0).then_some(val as usize)
}

fn set_attr(dtype: MPI_Datatype, key: c_int, token: usize) {
    // SAFETY: the value is an integer token in a pointer, never dereferenced. A failure
    // only means the next look decodes again.
    unsafe { mpi_sys::PMPI_Type_set_attr(dtype, key, token as *mut c_void) };
}

/// The constructor arguments of a derived datatype (`MPI_Type_get_contents`), with the
/// counts its envelope announced; the old types are freed when the result goes.
fn contents(
    dtype: MPI_Datatype,
    ni: usize,
    na: usize,
    nd: usize,
) -> Option<(Vec<c_int>, Vec<mpi_sys::MPI_Aint>, OldTypes)> {
    let mut ints: Vec<c_int> = vec![0; ni];
    let mut aints: Vec<mpi_sys::MPI_Aint> = vec![0; na];
    // SAFETY: MPI_Datatype is a plain handle.
    let mut types: Vec<MPI_Datatype> = vec![unsafe { std::mem::zeroed() }; nd];
    // SAFETY: each array holds exactly as many elements as the envelope announced.
    let rc = unsafe {
        mpi_sys::PMPI_Type_get_contents(
            dtype,
            ni as c_int,
            na as c_int,
            nd as c_int,
            ints.as_mut_ptr(),
            aints.as_mut_ptr(),
            types.as_mut_ptr(),
        )
    };
    // Wrapped (to be freed) only when the host filled the handles in.
    (rc == SUCCESS).then(|| (ints, aints, OldTypes(types)))
}
