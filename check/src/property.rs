//! The names of the checked properties: SPEC §7's, plus the log-only checks
//! that SPEC leaves unnamed. Every engine reports violations by these names.

use std::fmt;

use strum::{Display, EnumString, IntoStaticStr, VariantArray};

/// One named check; the derives give its names (kebab-case) and parsing.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Debug,
    Display,
    EnumString,
    IntoStaticStr,
    VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Property {
    /// No id is pending twice.
    UniquePending,
    /// Applying every durable splice from empty gives the inbox.
    ReplayMatches,
    /// Each inserted occurrence leaves at most once, by claim or by discard.
    SingleExit,
    /// Every inserted message is one the input itself supplied.
    InsertedByInput,
    /// A claim opens its boundary: splices, then `claimed`s in batch order.
    ClaimShape,
    /// A turn claims at most one `next-turn` message, at its first boundary.
    OnePromptPerTurn,
    /// Turns and steps nest and number 1, 2, 3...
    Balanced,
    /// A running agent always has an open turn when control returns.
    NoGaps,
    /// `user/message` only right after `step/start`, for claimed or context ids.
    Admission,
    /// Status changes alternate, starting with `running`.
    StatusAlternates,
    /// A keep-inbox cancel removes and inserts nothing.
    KeepInboxSilent,
    /// Work pending at a stop is not claimed before a later waking send.
    StopParks,
    /// Only a waking send (or an owed latch replay) starts a driver.
    NoWakeStaysIdle,
    /// Nothing owed is pending when the agent settles idle.
    NoLostWakeup,
    /// `idle` only when the agent stays idle with nothing owed.
    QuiescentWhenIdle,
    /// A restart prints exactly its kept log's closers and leaves the agent idle.
    ResumeCloses,
    /// A refused input emits nothing (SPEC §10).
    RefusalSilent,
    /// Recorded splices are as the core writes them: coordinates normalized,
    /// something changed, `outcome` only on a removal (log checks).
    SpliceNormalized,
    /// Positive goal rounds advance by one per admitted goal message (log checks).
    GoalRounds,
}

impl Property {
    /// Every property, SPEC §7 order first (the derive's table, as an array).
    pub const ALL: [Property; <Property as VariantArray>::VARIANTS.len()] =
        *<Self as VariantArray>::VARIANTS
            .first_chunk()
            .expect("the whole table");

    /// The exact name SPEC §7 gives (or the added name).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A broken property with what was wrong, naming the ids and numbers involved.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Violation {
    /// The property that broke.
    pub property: Property,
    /// What was wrong.
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(property: Property, detail: impl Into<String>) -> Self {
        Self {
            property,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.property, self.detail)
    }
}

impl std::error::Error for Violation {}

/// Returns a violation of `property` unless `holds`.
pub(crate) fn ensure(
    holds: bool,
    property: Property,
    detail: impl FnOnce() -> String,
) -> Result<(), Violation> {
    if holds {
        Ok(())
    } else {
        Err(Violation::new(property, detail()))
    }
}
