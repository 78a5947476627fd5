//! The application's (buffer, count, datatype) as bytes. A buffer whose type map is one
//! ascending run of memory is used in place; anything else is packed before sending and
//! unpacked after receiving, with the host's own MPI_Pack/MPI_Unpack (type-map order), so
//! every derived datatype (and MPI_BOTTOM) works and any two datatypes of the same type
//! signature match, as they do under the host MPI.

use super::{check, MPI_Comm, MPI_Datatype, MpiError, MpiResult};
use crate::fastpath::{FAST, MAX_ENTRIES};
use crate::lock::lock;
use std::os::raw::{c_int, c_void};

pub struct UserBuf {
    ptr: *mut c_void,
    /// 64-bit: MPI-4 large-count calls (`MPI_Bcast_c`) describe their buffers here too.
    count: i64,
    dtype: MPI_Datatype,
    comm: MPI_Comm,
    bytes: usize,
    /// Start of the data when it is one contiguous run of `bytes` bytes.
    contiguous: Option<*mut u8>,
    /// The datatype's true lower bound (an absolute address with MPI_BOTTOM).
    true_lb: isize,
}

// SAFETY: the pointers are the application's buffer, lent to a non-blocking operation
// until it completes (MPI's contract for every non-blocking call); the handles are
// process-wide values. A UserBuf moves to another thread only inside the forwarding engine,
// whose lock serialises its use, and only where the host granted MPI_THREAD_MULTIPLE.
unsafe impl Send for UserBuf {}

/// What MPI_Pack/MPI_Unpack get for the application's buffer: its address and `n` elements
/// of its datatype, or, for MPI_BOTTOM, an address of the data and a datatype of its own
/// whose displacements are relative to it (MPICH 4.0 refuses a NULL buffer in MPI_Pack and
/// MPI_Unpack, MPI_BOTTOM included). The own datatype is freed on drop.
struct Addressed {
    ptr: *mut c_void,
    dtype: MPI_Datatype,
    count: c_int,
    own: bool,
}

impl Drop for Addressed {
    fn drop(&mut self) {
        if self.own {
            // SAFETY: a datatype this value made and nobody else holds.
            unsafe { mpi_sys::PMPI_Type_free(&mut self.dtype) };
        }
    }
}

/// The extent of `dtype` in bytes (what displacements in elements of it are multiplied by).
pub fn extent(dtype: MPI_Datatype) -> MpiResult<isize> {
    let (mut lb, mut extent): (mpi_sys::MPI_Aint, mpi_sys::MPI_Aint) = (0, 0);
    // SAFETY: writes two integers; the host checks the handle.
    check(unsafe { mpi_sys::PMPI_Type_get_extent(dtype, &mut lb, &mut extent) })?;
    // MPI_Aint is isize under Open MPI and i64 under MPICH.
    #[allow(clippy::unnecessary_cast)]
    Ok(extent as isize)
}

/// Size in bytes of `count` elements of `dtype`, or `None` when the host rejects the datatype
/// or the count is negative (the caller then hands the call to the host, which reports it).
/// Predefined datatypes are looked up in a table made once (no call), any other costs one
/// PMPI call.
#[inline(always)]
pub fn payload_bytes(count: i64, dtype: MPI_Datatype) -> Option<u64> {
    if count < 0 {
        return None;
    }
    init_predefined();
    let size = match FAST.size(handle_key(dtype)) {
        Some(s) => s,
        None => type_size(dtype)?,
    };
    size.checked_mul(count as u64)
}

/// `payload_bytes` for a predefined datatype, for the entry points' fast path: only after
/// `FAST.decide()` said the path is open (the table is filled before it opens); None for
/// anything else, without calling anything, so that the fast path needs no stack frame.
#[inline(always)]
pub fn predefined_payload_bytes(count: i64, dtype: MPI_Datatype) -> Option<u64> {
    if count < 0 {
        return None;
    }
    FAST.size(handle_key(dtype))?.checked_mul(count as u64)
}

/// Fills the table of predefined datatype sizes (`fastpath::FAST`), once; MPI must be
/// initialised. Done at the session's start, before the fast path opens, or by the first
/// broadcast that needs a size.
pub fn init_predefined() {
    if FAST.is_filled() {
        return;
    }
    fill_predefined();
}

#[cold]
#[inline(never)]
fn fill_predefined() {
    static FILLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = lock(&FILLING);
    if FAST.is_filled() {
        return;
    }
    // SAFETY: MPI_Datatype is a plain handle; the C side writes at most MAX of them.
    let mut handles: Vec<MPI_Datatype> = vec![unsafe { std::mem::zeroed() }; MAX_ENTRIES];
    // SAFETY: `handles` holds MAX writable handles.
    let n = unsafe { super::c::mpicast_c_predefined(handles.as_mut_ptr(), MAX_ENTRIES as c_int) };
    handles.truncate(n.max(0) as usize);
    let entries: Vec<(u64, u64)> = handles
        .into_iter()
        .filter_map(|h| Some((handle_key(h), type_size(h)?)))
        .filter(|&(k, _)| k != 0)
        .collect();
    FAST.fill(&entries);
}

#[inline(never)]
fn type_size(dtype: MPI_Datatype) -> Option<u64> {
    let mut size: mpi_sys::MPI_Count = 0;
    // SAFETY: writes one integer; an invalid handle is reported through the return code.
    let rc = unsafe { mpi_sys::PMPI_Type_size_x(dtype, &mut size) };
    if rc != super::SUCCESS || size < 0 {
        return None;
    }
    Some(size as u64)
}

/// The bits of a datatype handle, as a key (`datatype::fingerprint`).
pub(super) fn type_key(h: MPI_Datatype) -> u64 {
    handle_key(h)
}

/// The bits of a handle (a pointer in Open MPI, an int in MPICH), as a table key.
#[inline(always)]
fn handle_key(h: MPI_Datatype) -> u64 {
    let mut k = 0u64;
    let n = std::mem::size_of::<MPI_Datatype>().min(std::mem::size_of::<u64>());
    // SAFETY: copies the first `n` bytes of a plain handle value into an integer.
    unsafe {
        std::ptr::copy_nonoverlapping(
            &h as *const MPI_Datatype as *const u8,
            &mut k as *mut u64 as *mut u8,
            n,
        )
    };
    k
}

/// A datatype's size, extent, true lower bound and true extent, as the host says.
type Shape = (
    mpi_sys::MPI_Count,
    mpi_sys::MPI_Aint,
    mpi_sys::MPI_Aint,
    mpi_sys::MPI_Aint,
);

thread_local! {
    /// The shape of the predefined datatype this thread described last (predefined handles
    /// live as long as MPI, so the answer holds): a receive loop asks the host nothing.
    static LAST_SHAPE: std::cell::Cell<(u64, Shape)> = const { std::cell::Cell::new((0, (0, 0, 0, 0))) };
}

/// The shape of `dtype` (from the per-thread memory for a predefined type described before).
fn shape(dtype: MPI_Datatype) -> MpiResult<Shape> {
    let key = handle_key(dtype);
    let predefined = key != 0 && FAST.size(key).is_some();
    if predefined {
        let (k, s) = LAST_SHAPE.with(|c| c.get());
        if k == key {
            return Ok(s);
        }
    }
    let mut size: mpi_sys::MPI_Count = 0;
    let (mut lb, mut extent): (mpi_sys::MPI_Aint, mpi_sys::MPI_Aint) = (0, 0);
    let (mut tlb, mut textent): (mpi_sys::MPI_Aint, mpi_sys::MPI_Aint) = (0, 0);
    // SAFETY: each call writes plain integers.
    unsafe {
        check(mpi_sys::PMPI_Type_size_x(dtype, &mut size))?;
        check(mpi_sys::PMPI_Type_get_extent(dtype, &mut lb, &mut extent))?;
        check(mpi_sys::PMPI_Type_get_true_extent(
            dtype,
            &mut tlb,
            &mut textent,
        ))?;
    }
    let s = (size, extent, tlb, textent);
    if predefined {
        LAST_SHAPE.with(|c| c.set((key, s)));
    }
    Ok(s)
}

impl UserBuf {
    /// Describes the buffer; fails (with the host's error) if the datatype is invalid.
    pub fn describe(
        ptr: *mut c_void,
        count: i64,
        dtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> MpiResult<UserBuf> {
        init_predefined();
        let (size, extent, tlb, textent) = shape(dtype)?;
        if size < 0 || count < 0 {
            return Err(MpiError(mpi_sys::MPI_ERR_COUNT as c_int));
        }
        let bytes = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_mul(usize::try_from(count).ok()?))
            .ok_or(MpiError(mpi_sys::MPI_ERR_COUNT as c_int))?;
        // In place only when the type map lists one ascending run of bytes: a dense type
        // (true extent = size) may still list them in another order (a struct of ints at
        // displacements 8, 4, 0), and the message is the type map's order, not memory's.
        // Holes rule a type out at once; predefined types list their parts in order, so for
        // them density decides; a dense derived type is decoded once and the answer cached
        // on it (`datatype`).
        let dense = textent as i128 == size as i128;
        let one_in_order = if FAST.size(handle_key(dtype)).is_some() || !dense {
            dense
        } else {
            super::datatype::in_order(dtype)
        };
        let in_place = one_in_order && (count <= 1 || extent as i128 == size as i128);
        let contiguous = if in_place || bytes == 0 {
            // wrapping: with MPI_BOTTOM the true lower bound is an absolute address.
            // MPI_Aint is isize under Open MPI and i64 under MPICH: the cast is needed for one.
            #[allow(clippy::unnecessary_cast)]
            Some((ptr as *mut u8).wrapping_offset(tlb as isize))
        } else {
            None
        };
        Ok(UserBuf {
            ptr,
            count,
            dtype,
            comm,
            bytes,
            contiguous,
            // MPI_Aint is isize under Open MPI and i64 under MPICH.
            #[allow(clippy::unnecessary_cast)]
            true_lb: tlb as isize,
        })
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The start of the data when it lies in place as one run of `bytes()` bytes.
    pub fn contiguous_ptr(&self) -> Option<*mut u8> {
        self.contiguous
    }

    pub fn is_contiguous(&self) -> bool {
        self.contiguous.is_some()
    }

    /// Runs `f` over the bytes to send (the root's side of a broadcast).
    pub fn with_send_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> MpiResult<R> {
        if self.bytes == 0 {
            return Ok(f(&[]));
        }
        if let Some(p) = self.contiguous {
            // SAFETY: the datatype says these `bytes` bytes from p are the application's
            // data, readable for the duration of the call that lent them to us.
            let s = unsafe { std::slice::from_raw_parts(p as *const u8, self.bytes) };
            return Ok(f(s));
        }
        let packed = self.pack()?;
        Ok(f(&packed))
    }

    /// Runs `f` over a byte buffer to fill, then stores it into the application's buffer.
    /// `f` says how much it filled: all of it (`Ok(None)`), the first `n` bytes
    /// (`Ok(Some(n))`: a shorter message; whole elements of the datatype are stored, the
    /// rest of the buffer is left as it was), or nothing (`Err`: the buffer is untouched).
    pub fn with_recv_bytes<E>(
        &mut self,
        f: impl FnOnce(&mut [u8]) -> Result<Option<usize>, E>,
    ) -> MpiResult<Result<(), E>> {
        if self.bytes == 0 {
            return Ok(f(&mut []).map(|_| ()));
        }
        if let Some(p) = self.contiguous {
            // SAFETY: as in with_send_bytes, and the application lent the buffer for writing.
            let s = unsafe { std::slice::from_raw_parts_mut(p, self.bytes) };
            return Ok(f(s).map(|_| ()));
        }
        let mut tmp = vec![0u8; self.bytes];
        match f(&mut tmp) {
            Ok(None) => self.unpack(&tmp, self.int_count()?)?,
            Ok(Some(n)) => {
                let elem = self.bytes / usize::try_from(self.count).unwrap_or(1).max(1);
                let whole = n.min(self.bytes) / elem.max(1);
                self.unpack(&tmp[..whole * elem], whole as c_int)?;
            }
            Err(e) => return Ok(Err(e)),
        }
        Ok(Ok(()))
    }

    /// The host's own broadcast of this buffer over `comm` (one of our private
    /// communicators) from `root`: the host-local stage of a two-level broadcast.
    pub fn host_bcast(&mut self, root: u32, comm: MPI_Comm) -> MpiResult<()> {
        // The application's own (buffer, count, datatype), lent for this broadcast.
        check(super::progress::own(|| {
            super::pmpi_bcast(self.ptr, self.count, self.dtype, root as c_int, comm)
        }))
    }

    /// The count as MPI_Pack/MPI_Unpack take it. Only contiguous buffers may exceed an int
    /// (a non-contiguous one that large is not packable, and goes to the host).
    fn int_count(&self) -> MpiResult<c_int> {
        c_int::try_from(self.count).map_err(|_| MpiError(mpi_sys::MPI_ERR_COUNT as c_int))
    }

    /// `n` elements of the buffer, as MPI_Pack/MPI_Unpack take them (see `Addressed`).
    fn addressed(&self, n: c_int) -> MpiResult<Addressed> {
        if !self.ptr.is_null() || self.true_lb == 0 {
            return Ok(Addressed {
                ptr: self.ptr,
                dtype: self.dtype,
                count: n,
                own: false,
            });
        }
        // n elements displaced by minus the lowest address: their map, relative to it.
        let disp = -(self.true_lb as mpi_sys::MPI_Aint);
        let mut t: MPI_Datatype = super::byte();
        // SAFETY: one block of n elements; writes one handle.
        check(unsafe { mpi_sys::PMPI_Type_create_struct(1, &n, &disp, &self.dtype, &mut t) })?;
        // SAFETY: commits the handle just made (MPI may write it back).
        let rc = unsafe { mpi_sys::PMPI_Type_commit(&mut t) };
        // Made before the check, so that the type is freed either way.
        let made = Addressed {
            ptr: self.true_lb as *mut c_void,
            dtype: t,
            count: 1,
            own: true,
        };
        check(rc)?;
        Ok(made)
    }

    fn pack(&self) -> MpiResult<Vec<u8>> {
        let limit = c_int::MAX as usize;
        if self.bytes > limit {
            return Err(MpiError(mpi_sys::MPI_ERR_COUNT as c_int));
        }
        let a = self.addressed(self.int_count()?)?;
        let mut out = vec![0u8; self.bytes];
        let mut pos: c_int = 0;
        // SAFETY: out has `bytes` bytes, the exact packed size of (count, dtype) in the
        // native representation; MPI checks that it fits.
        check(unsafe {
            mpi_sys::PMPI_Pack(
                a.ptr as *const c_void,
                a.count,
                a.dtype,
                out.as_mut_ptr() as *mut c_void,
                self.bytes as c_int,
                &mut pos,
                self.comm,
            )
        })?;
        if pos as usize != self.bytes {
            return Err(MpiError(mpi_sys::MPI_ERR_TYPE as c_int));
        }
        Ok(out)
    }

    /// Stores the first `count` elements of packed `data` into the application's buffer.
    fn unpack(&mut self, data: &[u8], count: c_int) -> MpiResult<()> {
        let a = self.addressed(count)?;
        let mut pos: c_int = 0;
        // SAFETY: data holds the packed form of (count, dtype); MPI writes into the
        // application's buffer as the datatype describes.
        check(unsafe {
            mpi_sys::PMPI_Unpack(
                data.as_ptr() as *const c_void,
                data.len() as c_int,
                &mut pos,
                a.ptr,
                a.count,
                a.dtype,
                self.comm,
            )
        })
    }
}

/// Whether (buf, count, dtype) can be packed by us at all (the packed size fits an int).
pub fn packable(bytes: usize) -> bool {
    bytes <= c_int::MAX as usize
}
