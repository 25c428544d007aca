//! The planted bugs of SPEC §8. Their names exist in every build; their code
//! runs only with the `mutants` feature. Each bug is one hook below, called
//! from the exact branch it corrupts; every hook starts with [`Agent::runs`],
//! a constant `false` without the feature, so the default build's optimizer
//! drops the hook and the branch that calls it.

use strum::{Display, EnumString, IntoStaticStr, VariantArray};

use crate::agent::Agent;
use crate::driver::{Await, Driver, Phase};
use crate::inbox::{Inserted, Splice};
use crate::message::{Message, Target};

/// One planted bug, named as in SPEC §8 (kebab-case, declaration order).
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
    /// A restart with anything pending starts a driver.
    ResumeWakes,
    /// A restart leaves the crashed step and turn open.
    ResumeNoClosers,
    /// A restart counts turns from the last `turn/end` kept, not the last
    /// `turn/start`.
    ResumeRenumbers,
    /// A restart's replay skips claim splices, so claimed messages come
    /// back pending.
    ResumeSkipsClaims,
}

impl Mutant {
    /// Every planted bug, in SPEC order (the derive's table, as an array).
    pub const ALL: [Mutant; <Mutant as VariantArray>::VARIANTS.len()] =
        *<Self as VariantArray>::VARIANTS
            .first_chunk()
            .expect("the whole table");

    /// The SPEC name.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// `eager-latch`'s extra latch on a live driver. Without the feature it has
/// no field, so the correct driver carries nothing for it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) struct EagerLatch(#[cfg(feature = "mutants")] bool);

impl EagerLatch {
    /// A waking send into a live turn latched.
    #[inline]
    fn set(&mut self) {
        #[cfg(feature = "mutants")]
        {
            self.0 = true;
        }
    }

    /// A cancel without keep-inbox clears it, like the real latch.
    #[inline]
    pub(crate) fn abort(&mut self, keep_inbox: bool) {
        #[cfg(feature = "mutants")]
        {
            self.0 &= keep_inbox;
        }
        #[cfg(not(feature = "mutants"))]
        let _ = keep_inbox;
    }

    /// Whether it is set (a constant `false` without the feature).
    #[cfg(feature = "mutants")]
    pub(crate) fn is_set(self) -> bool {
        self.0
    }

    /// Whether it is set (a constant `false` without the feature).
    #[cfg(not(feature = "mutants"))]
    #[inline(always)]
    pub(crate) const fn is_set(self) -> bool {
        false
    }
}

impl Agent {
    /// `no-latch`: whether a waking send into an aborted turn skips its latch.
    #[inline]
    pub(crate) fn no_latch(&self, aborted: bool) -> bool {
        self.runs(Mutant::NoLatch) && aborted
    }

    /// `eager-latch`: a waking send into a live turn latches too; returns
    /// whether the bug took the send over.
    #[inline]
    pub(crate) fn eager_latch(&mut self, aborted: bool) -> bool {
        if !self.runs(Mutant::EagerLatch) || aborted {
            return false;
        }
        let Some(driver) = self.driver_mut() else {
            return false;
        };
        driver.eager.set();
        true
    }

    /// `inject-wakes`: a no-wake send starts a driver when idle.
    #[inline]
    pub(crate) fn inject_wakes(&mut self) {
        if self.runs(Mutant::InjectWakes) && self.driver().is_none() {
            self.start_driver();
        }
    }

    /// `prompt-every-step`: whether a later boundary claims the head too.
    #[inline]
    pub(crate) fn prompt_every_step(&self) -> bool {
        self.runs(Mutant::PromptEveryStep)
    }

    /// `split-claim`: whether this claim stops after next-step, leaving the
    /// head for the next input ([`Agent::split_claim_rest`]).
    #[inline]
    pub(crate) fn split_claim(&self, steering: usize) -> bool {
        self.runs(Mutant::SplitClaim) && steering > 0
    }

    /// `split-claim`'s second transition: any input at the gap claims the
    /// next-turn head and then awaits the pre-step decision.
    pub(crate) fn split_claim_rest(&mut self, mut driver: Driver, mut batch: Vec<Message>) {
        let head_waiting = usize::from(!self.state.inbox.list(Target::NextTurn).is_empty());
        let head = self.claim_front(Target::NextTurn, head_waiting);
        self.announce_claims(&head, driver.turn);
        batch.extend(head);
        driver.awaiting = Await::PreStep { batch };
        self.state.phase = Phase::Running(driver);
    }

    /// `turn-first`: whether the head goes before the next-step items.
    #[inline]
    pub(crate) fn turn_first(&self) -> bool {
        self.runs(Mutant::TurnFirst)
    }

    /// `requeue-on-reject`: the rejected batch comes back by itself.
    #[inline]
    pub(crate) fn requeue_on_reject(&mut self, batch: Vec<Message>) {
        if !self.runs(Mutant::RequeueOnReject) {
            return;
        }
        let inbox = &mut self.state.inbox;
        let fresh: Inserted = batch
            .into_iter()
            .filter(|message| inbox.find(message.id()).is_none())
            .collect();
        let splice = self
            .state
            .inbox
            .normalize(Target::NextStep, 0, 0, fresh, None);
        // A disposed agent refuses the insertion; the bug then has no effect.
        let _refused = self.edit(splice);
    }

    /// `retiring-gap`: instead of retiring after the final empty check, the
    /// driver awaits one more point (a waking send there is not latched);
    /// returns the driver when the bug does not run.
    #[inline]
    pub(crate) fn retiring_gap(&mut self, mut driver: Driver) -> Option<Driver> {
        if !self.runs(Mutant::RetiringGap) {
            return Some(driver);
        }
        driver.awaiting = Await::Retiring;
        self.state.phase = Phase::Running(driver);
        None
    }

    /// `early-idle`: `when-idle` waiters resolve before a latch replay.
    #[inline]
    pub(crate) fn early_idle(&mut self) {
        if self.runs(Mutant::EarlyIdle) {
            self.resolve_waiters();
        }
    }

    /// `resume-wakes`: a resumed agent with anything pending starts a driver.
    #[inline]
    pub(crate) fn resume_wakes(&mut self) {
        if self.runs(Mutant::ResumeWakes) && !self.state.inbox.is_empty() {
            self.start_driver();
        }
    }

    /// `resume-no-closers`: whether the repair writes no closers.
    #[inline]
    pub(crate) fn resume_no_closers(&self) -> bool {
        self.runs(Mutant::ResumeNoClosers)
    }

    /// `resume-renumbers`: whether turns go on from the last `turn/end`.
    #[inline]
    pub(crate) fn resume_renumbers(&self) -> bool {
        self.runs(Mutant::ResumeRenumbers)
    }

    /// `resume-skips-claims`: whether the replay skips this splice (a claim:
    /// a pure removal without an outcome).
    #[inline]
    pub(crate) fn resume_skips_claims(&self, splice: &Splice) -> bool {
        let claim = splice.outcome.is_none() && splice.inserted.is_empty();
        self.runs(Mutant::ResumeSkipsClaims) && claim && splice.removed_count > 0
    }
}
