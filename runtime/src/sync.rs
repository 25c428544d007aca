//! The one door to synchronization primitives: `std::sync` in a normal build,
//! loom's models under `--cfg loom`, so the loom suite explores the very code
//! the runtime runs. No other file imports `std::sync`; both builds have the
//! same call sites.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks `mutex`. A poisoned lock means another thread panicked mid-transition,
/// so the state behind it cannot be trusted: the panic spreads.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("a thread panicked while holding the agent's lock")
}
