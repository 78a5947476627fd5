//! A file mapped read-only into memory. Its pages come from the page cache when touched and
//! can be dropped again by the kernel (they are clean and file-backed, and the mapping asks
//! for sequential read-ahead), so a run streaming a long binary GOAL schedule keeps resident
//! only what it is reading, not the whole file.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and private; nothing writes through it, so sharing the
// bytes between threads is sharing immutable memory.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps the whole file at `path`.
    pub fn open(path: &str) -> io::Result<Mapped> {
        let f = File::open(path)?;
        let len = usize::try_from(f.metadata()?.len())
            .map_err(|_| io::Error::other("file larger than the address space"))?;
        if len == 0 {
            return Ok(Mapped {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh read-only private mapping of an open file descriptor; the kernel
        // checks every argument. The descriptor may close afterwards (the mapping stays).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: advice on the mapping just made; failure only loses the hint.
        unsafe { libc::madvise(p, len, libc::MADV_SEQUENTIAL) };
        Ok(Mapped { ptr: p, len })
    }

    /// Tells the kernel that this process will not read the bytes before `offset` again:
    /// their pages leave its resident set (they stay in the page cache, reclaimable). Whole
    /// pages only; a no-op below one page.
    pub fn release_before(&self, offset: usize) {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let end = offset.min(self.len) / page * page;
        if end == 0 {
            return;
        }
        // SAFETY: a page-aligned prefix of our own read-only private mapping, which nothing
        // wrote (so no private copy is lost); a later read would fault the file in again.
        unsafe { libc::madvise(self.ptr, end, libc::MADV_DONTNEED) };
    }

    pub fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` maps `len` readable bytes until `drop`; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping made in `open`, once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}
