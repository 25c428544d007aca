//! The one door to synchronization primitives: `std::sync` and `std::thread`
//! in a normal build, loom's models under `--cfg loom`, so the loom suite
//! explores the very code the runtime runs. No other file imports
//! `std::sync` or declares a thread-local; both builds have the same call
//! sites.

use std::cell::RefCell;
use std::sync::PoisonError;
use std::time::Duration;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(not(loom))]
std::thread_local! {
    /// The agents whose hooks this thread is calling or polling (their
    /// addresses, innermost last); see `driver::inside_hook`.
    pub(crate) static INSIDE_HOOK: Marks = const { RefCell::new(Vec::new()) };
    /// The journals whose sinks this thread is calling (their addresses,
    /// innermost last); see `journal::Journal::inside_sink`.
    pub(crate) static INSIDE_SINK: Marks = const { RefCell::new(Vec::new()) };
}
#[cfg(loom)]
loom::thread_local! {
    pub(crate) static INSIDE_HOOK: Marks = RefCell::new(Vec::new());
    pub(crate) static INSIDE_SINK: Marks = RefCell::new(Vec::new());
}

/// The owners a thread is inside, as a stack: one agent's sink may call
/// another agent whose sink calls the first, and that call must still be
/// seen as inside the first's sink (a single mark would have forgotten it).
type Marks = RefCell<Vec<usize>>;

/// One of the marks above: which agents' hooks, or which journals' sinks,
/// this thread is inside.
#[cfg(not(loom))]
pub(crate) type Mark = std::thread::LocalKey<Marks>;
#[cfg(loom)]
pub(crate) type Mark = loom::thread::LocalKey<Marks>;

/// Runs `body` with `mark` naming `owner` too; the mark is as it was after,
/// also when `body` unwinds.
pub(crate) fn marked<T, R>(mark: &'static Mark, owner: &T, body: impl FnOnce() -> R) -> R {
    struct Restore(&'static Mark, usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|inside| inside.borrow_mut().truncate(self.1));
        }
    }
    let depth = mark.with(|inside| {
        let mut inside = inside.borrow_mut();
        inside.push(address(owner));
        inside.len() - 1
    });
    let _restore = Restore(mark, depth);
    body()
}

/// Whether this thread is inside `owner`'s mark (see [`marked`]), at any depth.
pub(crate) fn is_marked<T>(mark: &'static Mark, owner: &T) -> bool {
    mark.with(|inside| inside.borrow().contains(&address(owner)))
}

fn address<T>(owner: &T) -> usize {
    std::ptr::from_ref(owner) as usize
}

/// Locks `mutex`. Nothing user-supplied runs under the runtime's locks
/// unguarded and the core never panics, so a poisoned lock holds a state as
/// good as any: it is taken, not spread (a panic here, in a `Drop` during
/// unwinding, would abort the process).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar`, giving `guard` up meanwhile; poisoning as in [`lock`].
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// [`wait`], for at most `timeout`.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    let (guard, _) = condvar
        .wait_timeout(guard, timeout)
        .unwrap_or_else(PoisonError::into_inner);
    guard
}

/// Sleeps for `duration` of real time, in both builds: for waiting on
/// another process (a log's lock, see `sink::take_writer`), which is not a
/// primitive any model explores.
pub(crate) fn pause(duration: Duration) {
    std::thread::sleep(duration);
}
