//! `courier-sim`: the seeded deterministic simulator of Courier.
//!
//! One seed decides a whole run (TigerBeetle's VOPR): it draws a swarm
//! configuration, then a workload of the core's own [`courier_core::Input`]s
//! and restarts ([`courier_core::Stimulus`]: a crash that loses part of the
//! durable log, then a resume), each checked by the shared
//! [`courier_check::Checker`] before the next;
//! a liveness phase then requires the agent to settle idle with nothing owed.
//! A failure becomes a [`Report`] that replays exactly ([`evaluate`]) and
//! shrinks to a minimal trace ([`shrink()`]). No clock, threads or entropy
//! reach a result: only the seed does.
#![warn(missing_docs)]

mod bounded;
mod coverage;
mod faults;
mod generate;
mod hash;
mod prng;
mod report;
mod run;
mod session;
mod shrink;
mod swarm;
mod sweep;

pub use coverage::{Coverage, Fraction};
pub use generate::Generator;
pub use hash::OutputHash;
pub use prng::Prng;
pub use report::{REPORT_FORMAT, REPORT_FORMAT_OLDEST, Report, ReportError};
pub use run::{Evaluation, Restarts, SeedRun, draw, evaluate, simulate, simulate_within};
pub use session::{LIVENESS_INPUTS_MAX, Record, STALL_INPUTS_MAX, Session};
pub use shrink::{
    Budget, Extent, NotReproduced, Shrunk, shrink, shrink_by, shrink_within, transcript,
};
pub use swarm::{InputWeights, PreStepWeights, StepWeights, Swarm};
pub use sweep::{Failure, Plan, Swept, sweep};
