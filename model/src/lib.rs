//! `courier-model`: the properties of SPEC §7, written once over the core's
//! `Input`/`Output` vocabulary, the engines' shared checking front end, and
//! the exhaustive model check over every interleaving up to a bound.
#![warn(missing_docs)]

mod checker;
mod conditions;
mod explore;
mod fingerprint;
pub mod goal;
pub mod history;
mod property;
mod reach;
mod search;
mod space;
mod vacuity;

pub use checker::{Checker, Stepped};
pub use conditions::checked_properties;
pub use explore::{Checked, Counts, Verdict, check};
pub use fingerprint::{fingerprint, hash_canonical};
pub use goal::GoalRounds;
pub use history::{History, Mode};
pub use property::{Property, Violation};
pub use reach::reachable_fingerprints;
pub use search::{Counterexample, shortest_counterexample};
pub use space::{Action, Bounds, Decision, Space, Spent, State};
pub use vacuity::VacuityGoal;
