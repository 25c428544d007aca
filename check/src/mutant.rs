//! Which properties may report each planted bug (SPEC §8's "caught by"
//! column): the core only names the bugs, the checker knows what breaks.

use courier_core::Mutant;

use crate::property::Property;

/// The properties SPEC §8 allows to report `bug` (the first that breaks).
pub fn caught_by(bug: Mutant) -> &'static [Property] {
    use Property::{
        Admission, Balanced, ClaimShape, InsertedByInput, NoGaps, NoLostWakeup, NoWakeStaysIdle,
        OnePromptPerTurn, QuiescentWhenIdle, ReplayMatches, ResumeCloses, SingleExit, StopParks,
        UniquePending,
    };
    match bug {
        Mutant::NoLatch => &[NoLostWakeup],
        Mutant::RetiringGap => &[NoGaps, NoLostWakeup],
        Mutant::EagerLatch => &[NoWakeStaysIdle, StopParks],
        Mutant::SplitClaim => &[ClaimShape, NoGaps],
        Mutant::RequeueOnReject => &[InsertedByInput],
        Mutant::TurnFirst => &[ClaimShape],
        Mutant::InjectWakes => &[NoWakeStaysIdle],
        Mutant::PromptEveryStep => &[OnePromptPerTurn, ClaimShape],
        Mutant::EarlyIdle => &[QuiescentWhenIdle],
        Mutant::ResumeWakes => &[NoWakeStaysIdle, ResumeCloses],
        Mutant::ResumeNoClosers => &[ResumeCloses, Balanced],
        Mutant::ResumeRenumbers => &[Balanced],
        Mutant::ResumeSkipsClaims => &[
            ReplayMatches,
            ClaimShape,
            SingleExit,
            UniquePending,
            Admission,
        ],
    }
}
