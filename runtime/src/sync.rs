//! The one door to synchronization primitives: `std::sync` and `std::thread`
//! in a normal build, loom's models under `--cfg loom`, so the loom suite
//! explores the very code the runtime runs. No other file imports
//! `std::sync` or declares a thread-local; both builds have the same call
//! sites.

use std::cell::{Cell, RefCell};
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
    static HOOK_INNERMOST: Cell<usize> = const { Cell::new(0) };
    static HOOK_OUTER: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    static SINK_INNERMOST: Cell<usize> = const { Cell::new(0) };
    static SINK_OUTER: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}
#[cfg(loom)]
loom::thread_local! {
    static HOOK_INNERMOST: Cell<usize> = Cell::new(0);
    static HOOK_OUTER: RefCell<Vec<usize>> = RefCell::new(Vec::new());
    static SINK_INNERMOST: Cell<usize> = Cell::new(0);
    static SINK_OUTER: RefCell<Vec<usize>> = RefCell::new(Vec::new());
}

#[cfg(not(loom))]
type LocalKey<T> = std::thread::LocalKey<T>;
#[cfg(loom)]
type LocalKey<T> = loom::thread::LocalKey<T>;

/// The owners (their addresses) a thread is inside, as a stack: one
/// agent's sink may call another agent whose sink calls the first, and that
/// call must still be seen as inside the first's sink. The innermost is a
/// thread-local of its own, with nothing to drop, so the common case (one
/// owner at a time, at every sink call and hook poll) costs one cell's read
/// and write; the owners around it are looked at only when nested.
pub(crate) struct Mark {
    /// The innermost owner, 0 for none.
    innermost: &'static LocalKey<Cell<usize>>,
    /// The owners around it, outermost first (empty unless nested).
    outer: &'static LocalKey<RefCell<Vec<usize>>>,
}

/// The agents whose hooks this thread is calling or polling; see
/// `driver::inside_hook`.
pub(crate) static INSIDE_HOOK: Mark = Mark {
    innermost: &HOOK_INNERMOST,
    outer: &HOOK_OUTER,
};

/// The journals whose sinks this thread is calling; see
/// `journal::Journal::inside_sink`.
pub(crate) static INSIDE_SINK: Mark = Mark {
    innermost: &SINK_INNERMOST,
    outer: &SINK_OUTER,
};

/// Runs `body` with `mark` naming `owner` too; the mark is as it was after,
/// also when `body` unwinds.
#[inline]
pub(crate) fn marked<T, R>(mark: &'static Mark, owner: &T, body: impl FnOnce() -> R) -> R {
    struct Restore(&'static Mark, usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.innermost.with(|innermost| innermost.set(self.1));
            if self.1 != 0 {
                self.0.outer.with(|outer| outer.borrow_mut().pop());
            }
        }
    }
    let previous = mark
        .innermost
        .with(|innermost| innermost.replace(address(owner)));
    if previous != 0 {
        mark.outer.with(|outer| outer.borrow_mut().push(previous));
    }
    let _restore = Restore(mark, previous);
    body()
}

/// Whether this thread is inside `owner`'s mark (see [`marked`]), at any depth.
#[inline]
pub(crate) fn is_marked<T>(mark: &'static Mark, owner: &T) -> bool {
    let owner = address(owner);
    match mark.innermost.with(Cell::get) {
        0 => false,
        innermost if innermost == owner => true,
        _ => mark.outer.with(|outer| outer.borrow().contains(&owner)),
    }
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
