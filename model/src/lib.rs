//! `courier-model`: the exhaustive model check of Courier. The stateright
//! space of every interleaving of inputs up to a bound, fed through
//! `courier-check`'s harness; its search, the vacuity goals and the Explorer.
#![warn(missing_docs)]

mod conditions;
mod explore;
mod reach;
mod search;
mod space;
mod vacuity;

pub use conditions::checked_properties;
pub use explore::{Checked, Counts, Verdict, check};
pub use reach::reachable_fingerprints;
pub use search::{Counterexample, shortest_counterexample};
pub use space::{Action, Bounds, Decision, Move, Space, Spent, State};
pub use vacuity::VacuityGoal;
