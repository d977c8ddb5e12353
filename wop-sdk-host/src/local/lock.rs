//! A poisoned lock is still the state it guards: the local host never gives up a table because a
//! thread panicked while holding it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The guard of `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
