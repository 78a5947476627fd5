//! The one lock policy of the library: a lock whose holder panicked is taken anyway.
//!
//! Every panic of mpicast is caught at the C boundary (`ffi::guard`) and becomes an MPI error
//! code, so the process lives on after it; a poisoned lock would turn that one error into a
//! panic at every later call. The state behind each lock is left consistent between
//! statements (tables, queues, counters), so taking it after a panic is safe. Owns nothing
//! else; uses nothing of the crate.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `m.lock()`, poisoned or not.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `m.get_mut()`, poisoned or not.
pub fn get_mut<T: ?Sized>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// `m.into_inner()`, poisoned or not.
pub fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// `l.read()`, poisoned or not.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// `l.write()`, poisoned or not.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A lock poisoned by a panicking holder still gives its value, as it was left.
    #[test]
    fn a_poisoned_lock_is_taken_anyway() {
        let m = Arc::new(Mutex::new(1));
        let l = Arc::new(RwLock::new(1));
        let (m2, l2) = (m.clone(), l.clone());
        let r = std::thread::spawn(move || {
            let mut g = m2.lock().unwrap();
            let mut w = l2.write().unwrap();
            *g = 2;
            *w = 3;
            panic!("poison both");
        })
        .join();
        assert!(r.is_err());
        assert!(m.is_poisoned() && l.is_poisoned());
        assert_eq!(*lock(&m), 2);
        assert_eq!(*read(&l), 3);
        *write(&l) = 4;
        assert_eq!(*read(&l), 4);
        let mut m = Arc::try_unwrap(m).unwrap();
        *get_mut(&mut m) = 5;
        assert_eq!(*lock(&m), 5);
    }
}
