//! The thin async runtime over `courier-core`. It runs one core
//! `courier_core::Agent` behind a [`Handle`] that clients clone and call from
//! any thread, and one [`DriverTask`] that awaits the embedder's
//! [`PreStepHook`] and [`StepHook`] and feeds their results back to the core
//! as completions.
//!
//! All delivery decisions stay in the core; this crate only serializes
//! inputs (one mutex), wakes the driver task without losing a wake, routes
//! outputs to subscribers ([`Handle::subscribe`]) and the durable ones to a
//! [`Sink`] (as the dsh JSONL session log, encoded and written outside the
//! lock, in order, as the [`Durability`] policy says), and resolves
//! [`Handle::when_idle`] waiters. An optional [`Observer`] sees each [`Transition`] whole, for
//! external checkers such as `courier_check::Monitor`.
//!
//! [`Handle::resume`] starts from a log file after a crash (SPEC §11), read
//! by [`kept`], the one reader of kept logs (`courier repair` uses it too).
//!
//! Executor-agnostic: nothing here spawns a task, so the embedder spawns
//! [`DriverTask::run`] where it likes (the `courier demo` CLI and
//! `examples/embed.rs` use tokio; only `Durability::WriteBehind` starts a
//! thread of its own, which reads the clock for its window), and the loom suite (`tests/loom.rs`,
//! under `--cfg loom`, where the `sync` shim swaps in loom's primitives) runs
//! the real driver task under `loom::future::block_on`.
//!
//! ```no_run
//! use std::future::ready;
//!
//! use courier_core::{PreStepDecision, StepOutcome};
//! use courier_runtime::{Handle, MemoryLog, pre_step_hook_fn, step_hook_fn};
//!
//! # async fn embed() {
//! let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
//! let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
//! let (handle, driver) = Handle::new("session", pre_step_hook, step_hook, MemoryLog::new());
//! tokio::spawn(driver.run());
//! handle.followup("hello").expect("a fresh id");
//! handle.when_idle().await.expect("the driver task runs");
//! handle.dispose().await.expect("a memory log never fails");
//! # }
//! ```

mod driver;
mod error;
mod fanout;
mod handle;
mod hooks;
mod journal;
pub mod kept;
mod observer;
mod resume;
mod shared;
mod sink;
mod sync;
mod unwind;

pub use driver::DriverTask;
pub use error::Error;
pub use handle::{BoundedNotifications, Handle, Lagged, Notifications, WeakHandle, WhenIdle};
pub use hooks::{
    Boundary, Hook, HookPanic, PreStepHook, PreStepHookFn, StepCall, StepHook, StepHookFn,
    pre_step_hook_fn, step_hook_fn,
};
pub use journal::Durability;
pub use observer::{Observer, Transition};
pub use resume::ResumeError;
pub use sink::{Event, JsonlFile, MemoryLog, Sink};
