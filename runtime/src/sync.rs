//! The one door to synchronization primitives: `std::sync` in a normal build,
//! loom's models under `--cfg loom`, so the loom suite explores the very code
//! the runtime runs. No other file imports `std::sync` or `thread_local!`;
//! both builds have the same call sites.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(loom))]
std::thread_local! {
    /// The agent whose hook this thread is calling or polling (its
    /// address), 0 for none; see `driver::inside_hook`.
    pub(crate) static INSIDE_HOOK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    pub(crate) static INSIDE_HOOK: std::cell::Cell<usize> = std::cell::Cell::new(0);
}

/// Locks `mutex`. Nothing user-supplied runs under the runtime's locks
/// unguarded and the core never panics, so a poisoned lock holds a state as
/// good as any: it is taken, not spread (a panic here, in a `Drop` during
/// unwinding, would abort the process).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
