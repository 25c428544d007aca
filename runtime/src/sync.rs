//! The one door to synchronization primitives: `std::sync` and `std::thread`
//! in a normal build, loom's models under `--cfg loom`, so the loom suite
//! explores the very code the runtime runs. No other file imports
//! `std::sync`; both builds have the same call sites.

use std::time::Duration;

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;

const POISONED: &str = "a thread panicked while holding the agent's lock";

/// Locks `mutex`. A poisoned lock means another thread panicked mid-transition,
/// so the state behind it cannot be trusted: the panic spreads.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect(POISONED)
}

/// Waits on `condvar`, giving `guard` up meanwhile; poisoning as in [`lock`].
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).expect(POISONED)
}

/// [`wait`], for at most `timeout`.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    let (guard, _) = condvar.wait_timeout(guard, timeout).expect(POISONED);
    guard
}
