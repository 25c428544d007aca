//! `courier-core`: the sans-IO delivery state machine of `SPEC.md`.
//!
//! No I/O, clock, threads, randomness or async: [`Agent::handle`] takes one
//! [`Input`], runs one atomic transition and queues [`Output`]s that the caller
//! drains with [`Agent::poll_output`]. Every engine of Courier (model checker,
//! simulator, transcript runner, runtime, log validator) drives this one type.
#![warn(missing_docs)]

mod agent;
mod driver;
mod error;
mod event;
pub mod hashing;
mod inbox;
pub mod log;
mod message;
mod mutant;
pub mod pending;
mod resume;
pub mod seed;
pub mod transcript;
mod transition;

pub use agent::{Agent, Status};
pub use driver::Unenterable;
pub use error::Refusal;
pub use event::{
    Abort, Activity, AwaitPoint, Input, InputKind, Output, PreStepDecision, PreStepKind,
    StepOutcome, UniqueJson, dropped_key,
};
pub use inbox::{Inbox, Inserted, Outcome, Splice};
pub use message::{CancelCause, Cause, Message, MessageId, Source, Target, TurnEnd, Wakeup};
pub use mutant::Mutant;
pub use pending::Pending;
pub use resume::{CorruptLog, Replay, Stimulus, Undo};
pub use transition::Transition;
