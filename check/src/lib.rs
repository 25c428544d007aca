//! `courier-check`: what every engine checks the core against, written once
//! over the core's `Input`/`Output` vocabulary: the properties of SPEC §7
//! ([`Checker`] with its ghost state, [`History`] for the durable half), the
//! canonical [`fingerprint()`] of an abstract state, the [`Harness`] every
//! engine drives, and the log validator.
#![warn(missing_docs)]

mod checker;
mod fingerprint;
mod goal;
mod harness;
pub mod history;
mod mutant;
mod property;
mod sweep;
pub mod validate;

pub use checker::{Checker, Kept};
pub use fingerprint::{Ranks, fingerprint, hash_with};
pub use harness::{Fed, Harness, Hooks, Monitor, NoHooks, Restarted};
pub use history::{History, Mode};
pub use mutant::caught_by;
pub use property::{Property, Violation};
