//! `courier-runtime`: the thin async runtime over `courier-core`: an [`Agent`] handle that
//! clients call from any thread, and one [`Driver`] task that awaits the
//! user's [`PreStep`] and [`Model`] hooks and feeds their results back to the
//! core. All delivery decisions stay in the core; this layer only serializes
//! inputs (one mutex), wakes the driver without losing a wake, routes outputs
//! to a [`Sink`] and to subscribers, and resolves `when_idle` waiters. An
//! optional [`Observer`] sees each transition whole, for external checkers.
//!
//! Executor-agnostic: nothing here spawns or sleeps, so the loom suite runs
//! the real driver under `loom::future::block_on`, and the CLI runs it on tokio.

mod driver;
mod fanout;
mod handle;
mod hooks;
mod observer;
mod shared;
mod sink;
mod sync;

pub use driver::Driver;
pub use handle::{Agent, Notifications, WhenIdle};
pub use hooks::{Boundary, Model, ModelFn, PreStep, PreStepFn, StepCall, model_fn, pre_step_fn};
pub use observer::{Observer, Transition};
pub use sink::{JsonlFile, MemoryLog, Sink};
