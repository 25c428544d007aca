//! The planted bugs of SPEC §8, compiled only with the `mutants` feature.
//! Each acts at the exact branch it names; the engines must catch every one.

use std::fmt;
use std::str::FromStr;

use crate::agent::Agent;
use crate::driver::{Await, Driver, Phase};
use crate::error::Refusal;
use crate::message::{Message, Target};

/// One planted bug, selected at run time by its SPEC name.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Mutant {
    /// A waking send after an abort does not latch.
    NoLatch,
    /// After the final empty check the driver awaits once more before retiring.
    RetiringGap,
    /// Every waking send while running latches, replaying pre-abort work.
    EagerLatch,
    /// next-step and the next-turn head are claimed in two transitions.
    SplitClaim,
    /// `reject` puts the claimed batch back at the front of next-step.
    RequeueOnReject,
    /// The batch puts the next-turn head before the next-step items.
    TurnFirst,
    /// A no-wake send starts a driver when idle.
    InjectWakes,
    /// Every boundary of a turn also claims the next-turn head.
    PromptEveryStep,
    /// `when-idle` waiters resolve before a latch replay starts its driver.
    EarlyIdle,
}

impl Mutant {
    /// All nine, in SPEC order.
    pub const ALL: [Mutant; 9] = [
        Self::NoLatch,
        Self::RetiringGap,
        Self::EagerLatch,
        Self::SplitClaim,
        Self::RequeueOnReject,
        Self::TurnFirst,
        Self::InjectWakes,
        Self::PromptEveryStep,
        Self::EarlyIdle,
    ];

    /// The SPEC name.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoLatch => "no-latch",
            Self::RetiringGap => "retiring-gap",
            Self::EagerLatch => "eager-latch",
            Self::SplitClaim => "split-claim",
            Self::RequeueOnReject => "requeue-on-reject",
            Self::TurnFirst => "turn-first",
            Self::InjectWakes => "inject-wakes",
            Self::PromptEveryStep => "prompt-every-step",
            Self::EarlyIdle => "early-idle",
        }
    }

    /// The properties SPEC §8 allows to report it (the first that breaks).
    pub fn caught_by(self) -> &'static [&'static str] {
        match self {
            Self::NoLatch => &["no-lost-wakeup"],
            Self::RetiringGap => &["no-gaps", "no-lost-wakeup"],
            Self::EagerLatch => &["no-wake-stays-idle", "stop-parks"],
            Self::SplitClaim => &["claim-shape", "no-gaps"],
            Self::RequeueOnReject => &["inserted-by-input"],
            Self::TurnFirst => &["claim-shape"],
            Self::InjectWakes => &["no-wake-stays-idle"],
            Self::PromptEveryStep => &["one-prompt-per-turn", "claim-shape"],
            Self::EarlyIdle => &["quiescent-when-idle"],
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// An unknown mutant name, with the known ones for the message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UnknownMutant(pub String);

impl fmt::Display for UnknownMutant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
        write!(
            formatter,
            "unknown mutant `{}` (known: {})",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownMutant {}

impl FromStr for Mutant {
    type Err = UnknownMutant;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mutant| mutant.name() == name)
            .ok_or_else(|| UnknownMutant(name.to_owned()))
    }
}

impl Agent {
    /// `no-latch` and `eager-latch` act where a waking send meets a running
    /// driver; returns whether the bug took over from the correct latch.
    pub(crate) fn plant_send_bug(&mut self, aborted: bool) -> bool {
        let mutant = self.mutant;
        let Some(driver) = self.driver_mut() else {
            return false;
        };
        match mutant {
            Some(Mutant::NoLatch) => aborted,
            Some(Mutant::EagerLatch) if !aborted => {
                driver.eager_latch = true;
                true
            }
            _ => false,
        }
    }

    /// Resolves the awaits only mutants have, whatever the decision says.
    pub(crate) fn resolve_planted_await(
        &mut self,
        mut driver: Driver,
        awaiting: Await,
    ) -> Result<(), Refusal> {
        match awaiting {
            Await::ClaimRest { mut batch } => {
                let head_waiting = usize::from(!self.state.inbox.list(Target::NextTurn).is_empty());
                let head = self.claim_front(Target::NextTurn, head_waiting);
                self.announce_claims(&head, driver.turn);
                batch.extend(head);
                driver.awaiting = Await::PreStep { batch };
                self.state.phase = Phase::Running(driver);
            }
            Await::Retiring => self.retire(driver),
            Await::PreStep { .. } | Await::Step => unreachable!("not a planted await"),
        }
        Ok(())
    }

    /// `requeue-on-reject`: the rejected batch comes back by itself.
    pub(crate) fn requeue(&mut self, batch: Vec<Message>) {
        let fresh: Vec<Message> = batch
            .into_iter()
            .filter(|message| !self.state.inbox.contains(message.id()))
            .collect();
        let splice = self
            .state
            .inbox
            .normalize(Target::NextStep, 0, 0, fresh, None);
        // A disposed agent refuses the insertion; the bug then has no effect.
        let _refused = self.edit(splice);
    }
}
