//! The one door to synchronization primitives: `std::sync` in a normal build,
//! loom's models under `--cfg loom`, so the loom suite explores the very code
//! the runtime runs. No other file imports `std::sync` or `thread_local!`;
//! both builds have the same call sites.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Locks `mutex`. Nothing user-supplied runs under the runtime's locks
/// unguarded and the core never panics, so a poisoned lock holds a state as
/// good as any: it is taken, not spread (a panic here, in a `Drop` during
/// unwinding, would abort the process).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
