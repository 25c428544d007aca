//! `courier-model`: the properties of SPEC §7, written once over the core's
//! `Input`/`Output` vocabulary, and the engines' shared checking front end.
#![warn(missing_docs)]

mod checker;
mod fingerprint;
pub mod goal;
pub mod history;
mod property;

pub use checker::{Checker, Stepped};
pub use fingerprint::{fingerprint, hash_canonical};
pub use goal::GoalRounds;
pub use history::{History, Mode};
pub use property::{Property, Violation};
