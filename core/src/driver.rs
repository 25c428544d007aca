//! The driver (SPEC §5): phase, turn and step numbers, the awaited point, the
//! abort signal with its wake latch, the owed turn-end reason, and the
//! transitions that claim, resolve `pre-step` and `step`, and retire.

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::agent::Agent;
use crate::error::Refusal;
use crate::event::{Activity, AwaitPoint, Output, PreStepDecision, StepOutcome};
use crate::inbox::{Inserted, Splice};
use crate::message::{Cause, Message, MessageId, Target, TurnEnd};
use crate::mutant::EagerLatch;
use crate::pending::{Pending, scan};

/// Idle, or running with a driver. Only `start_driver`, `open_turn` and
/// `retire` move between them.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) enum Phase {
    #[default]
    Idle,
    Running(Driver),
}

/// The point a running driver awaits, with what it needs there.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Await {
    /// The pre-step decision over the claimed batch (possibly empty).
    PreStep { batch: Vec<Message> },
    /// The model step's outcome.
    Step,
    /// `split-claim` only: next-step was claimed; the head waits for the
    /// next input.
    ClaimRest { batch: Vec<Message> },
    /// `retiring-gap` only: the turn ended with nothing pending, but the
    /// driver awaits one more point before retiring.
    Retiring,
}

impl Await {
    /// Whether the log shows the turn still open here (`retiring-gap`
    /// awaits after its `turn/end`).
    fn turn_open(&self) -> bool {
        match self {
            Self::PreStep { .. } | Self::Step | Self::ClaimRest { .. } => true,
            Self::Retiring => false,
        }
    }

    pub(crate) fn point(&self) -> AwaitPoint {
        match self {
            Self::Step => AwaitPoint::Step,
            // The planted awaits look like a pre-step to the outside.
            Self::PreStep { .. } | Self::ClaimRest { .. } | Self::Retiring => AwaitPoint::PreStep,
        }
    }

    pub(crate) fn batch(&self) -> Option<&[Message]> {
        match self {
            Self::PreStep { batch } | Self::ClaimRest { batch } => Some(batch),
            Self::Step | Self::Retiring => None,
        }
    }
}

/// The turn's cancellation signal. The latch exists only on an aborted turn.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Signal {
    Live,
    Aborted { cause: Cause, latch: bool },
}

impl Signal {
    pub(crate) fn is_aborted(&self) -> bool {
        matches!(self, Self::Aborted { .. })
    }

    /// First cause wins; a cancel without keep-inbox clears the latch.
    pub(crate) fn abort(&mut self, cause: Cause, keep_inbox: bool) {
        match self {
            Self::Live => {
                *self = Self::Aborted {
                    cause,
                    latch: false,
                }
            }
            Self::Aborted { latch, .. } => *latch &= keep_inbox,
        }
    }

    /// A waking send landed: an aborted turn owes a replay at retirement.
    pub(crate) fn latch(&mut self) {
        if let Self::Aborted { latch, .. } = self {
            *latch = true;
        }
    }

    fn latched(&self) -> bool {
        matches!(self, Self::Aborted { latch: true, .. })
    }
}

/// The turn-end reason owed so far by the open turn's steps.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Owed {
    Completed,
    MaxTokens,
}

impl Owed {
    fn reason(self) -> TurnEnd {
        match self {
            Self::Completed => TurnEnd::Completed,
            Self::MaxTokens => TurnEnd::MaxTokens,
        }
    }
}

/// One running driver: it always awaits `pre-step` or `step`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Driver {
    pub(crate) turn: u64,
    /// The last step opened in this turn (0 before the first).
    pub(crate) step: u64,
    pub(crate) awaiting: Await,
    pub(crate) signal: Signal,
    owed: Option<Owed>,
    /// `eager-latch`: a waking send while live latched too (no field in the
    /// default build).
    pub(crate) eager: EagerLatch,
}

/// How a turn stops: with the final pending check (normal end), or without it.
enum Stop {
    Normal,
    Parked,
}

impl Agent {
    /// Opens turn `last_turn + 1` with fresh abort state and claims its first
    /// boundary, all inside the current transition.
    pub(crate) fn open_turn(&mut self) {
        // No overflow: `last_turn` counts by one from 0, or from a resumed
        // log's, which `Replay` keeps at most 2^53 - 1 (see `resume.rs`).
        let turn = self.state.last_turn + 1;
        self.state.last_turn = turn;
        self.emit(Output::TurnStart { turn });
        let awaiting = self.claim(turn, true);
        self.state.phase = Phase::Running(Driver {
            turn,
            step: 0,
            awaiting,
            signal: Signal::Live,
            owed: None,
            eager: EagerLatch::default(),
        });
    }

    /// The atomic claim of a boundary: all of `next-step`, then (first
    /// boundary only) the `next-turn` head; splices first, then `claimed`s
    /// in batch order.
    fn claim(&mut self, turn: u64, first: bool) -> Await {
        let steering = self.state.inbox.list(Target::NextStep).len();
        let head_waiting = !self.state.inbox.list(Target::NextTurn).is_empty();
        let take_head = head_waiting && (first || self.prompt_every_step());
        let mut batch = self.claim_front(Target::NextStep, steering);
        if take_head && self.split_claim(steering) {
            self.announce_claims(&batch, turn);
            return Await::ClaimRest { batch };
        }
        let head = self.claim_front(Target::NextTurn, usize::from(take_head));
        let at = if self.turn_first() { 0 } else { batch.len() };
        batch.splice(at..at, head);
        self.announce_claims(&batch, turn);
        Await::PreStep { batch }
    }

    /// A claim's pure deletion from the front of a list, recorded durably.
    pub(crate) fn claim_front(&mut self, target: Target, count: usize) -> Vec<Message> {
        if count == 0 {
            return Vec::new();
        }
        let taken = self.state.inbox.take_front(target, count);
        debug_assert_eq!(taken.len(), count, "claimed past the list");
        self.emit(Output::Spliced(Splice {
            target,
            start: 0,
            removed_count: taken.len(),
            inserted: Inserted::new(),
            outcome: None,
        }));
        taken
    }

    pub(crate) fn announce_claims(&mut self, batch: &[Message], turn: u64) {
        for message in batch {
            self.emit(Output::Claimed {
                message: message.clone(),
                turn,
            });
        }
    }

    /// Takes the driver out of the phase if it awaits `point`; refuses
    /// (changing nothing) otherwise.
    fn take_driver(&mut self, point: AwaitPoint) -> Result<Driver, Refusal> {
        match self.take_phase() {
            Phase::Running(driver) if driver.awaiting.point() == point => Ok(driver),
            phase => {
                self.state.phase = phase;
                Err(Refusal::NotAwaiting(point))
            }
        }
    }

    /// Resolves the pre-step decision (SPEC §10 order: abort, reject, fail).
    pub(crate) fn complete_pre_step(&mut self, decision: PreStepDecision) -> Result<(), Refusal> {
        let mut driver = self.take_driver(AwaitPoint::PreStep)?;
        let batch = match std::mem::replace(&mut driver.awaiting, Await::Step) {
            Await::PreStep { batch } => batch,
            // The planted awaits resolve whatever the decision says.
            Await::ClaimRest { batch } => {
                self.split_claim_rest(driver, batch);
                return Ok(());
            }
            Await::Retiring => {
                self.retire(driver);
                return Ok(());
            }
            // take_driver let only pre-step points through; put it back.
            Await::Step => {
                self.state.phase = Phase::Running(driver);
                return Err(Refusal::NotAwaiting(AwaitPoint::PreStep));
            }
        };
        if let Signal::Aborted { cause, .. } = &driver.signal {
            let reason = TurnEnd::Aborted {
                reason: cause.clone(),
            };
            return self.end_turn(driver, reason, Stop::Parked);
        }
        let entering = match decision {
            PreStepDecision::Reject => return self.reject(driver, batch),
            PreStepDecision::Fail => return self.fail(driver),
            // One atomic claim took the batch out of the pending lists, so it
            // names no id twice (unique-pending).
            PreStepDecision::Pass => batch,
            PreStepDecision::Enter(messages) => {
                let entering = claimed_values(messages, &batch);
                if named_twice(&entering).is_some() {
                    return self.fail(driver);
                }
                entering
            }
        };
        if self.pending_among(&entering).is_some() {
            return self.fail(driver);
        }
        match (entering.is_empty(), driver.step, driver.owed) {
            (true, 0, _) => self.end_turn(driver, TurnEnd::Completed, Stop::Parked),
            (true, _, Some(owed)) => self.end_turn(driver, owed.reason(), Stop::Normal),
            _ => {
                self.open_step(driver, entering);
                Ok(())
            }
        }
    }

    fn reject(&mut self, driver: Driver, batch: Vec<Message>) -> Result<(), Refusal> {
        self.requeue_on_reject(batch);
        self.end_turn(driver, TurnEnd::Blocked, Stop::Parked)
    }

    fn fail(&mut self, driver: Driver) -> Result<(), Refusal> {
        self.emit(Output::Error {
            turn: driver.turn,
            step: driver.step,
        });
        self.end_turn(driver, TurnEnd::Error, Stop::Parked)
    }

    fn open_step(&mut self, mut driver: Driver, entering: Vec<Message>) {
        // No overflow: one step per input, from 0 in each turn.
        driver.step += 1;
        self.emit(Output::StepStart {
            turn: driver.turn,
            step: driver.step,
        });
        for message in entering {
            self.emit(Output::UserMessage(message));
        }
        driver.awaiting = Await::Step;
        self.state.phase = Phase::Running(driver);
    }

    /// Resolves the model step.
    pub(crate) fn complete_step(&mut self, outcome: StepOutcome) -> Result<(), Refusal> {
        let mut driver = self.take_driver(AwaitPoint::Step)?;
        self.emit(Output::StepEnd {
            turn: driver.turn,
            step: driver.step,
        });
        if let Signal::Aborted { cause, .. } = &driver.signal {
            let reason = TurnEnd::Aborted {
                reason: cause.clone(),
            };
            return self.end_turn(driver, reason, Stop::Parked);
        }
        driver.owed = match (outcome, driver.owed) {
            (StepOutcome::Fail, _) => return self.fail(driver),
            (StepOutcome::ToolCalls, _) => None,
            (StepOutcome::MaxTokens, _) | (StepOutcome::Completed, Some(Owed::MaxTokens)) => {
                Some(Owed::MaxTokens)
            }
            (StepOutcome::Completed, _) => Some(Owed::Completed),
        };
        let steering = !self.state.inbox.list(Target::NextStep).is_empty();
        match driver.owed {
            Some(owed) if !steering => self.end_turn(driver, owed.reason(), Stop::Normal),
            _ => {
                driver.awaiting = self.claim(driver.turn, false);
                self.state.phase = Phase::Running(driver);
                Ok(())
            }
        }
    }

    /// Emits `turn/end`, then either opens the next turn (normal end with
    /// something pending) or retires. The check and the retirement are one
    /// transition (SPEC decision 2).
    fn end_turn(&mut self, driver: Driver, reason: TurnEnd, stop: Stop) -> Result<(), Refusal> {
        self.emit(Output::TurnEnd {
            turn: driver.turn,
            reason,
        });
        match stop {
            Stop::Normal if !self.state.inbox.is_empty() => self.open_turn(),
            Stop::Normal => {
                if let Some(driver) = self.retiring_gap(driver) {
                    self.retire(driver);
                }
            }
            Stop::Parked => self.retire(driver),
        }
        Ok(())
    }

    /// Running → idle. A latched wake replays at once if anything is pending;
    /// otherwise every `when-idle` waiter resolves.
    pub(crate) fn retire(&mut self, driver: Driver) {
        debug_assert!(
            self.driver().is_none(),
            "retire with the driver still in place"
        );
        self.emit(Output::Status {
            status: Activity::Idle,
        });
        let latched = driver.signal.latched() || driver.eager.is_set();
        let replay = latched && !self.state.inbox.is_empty() && !self.state.disposed;
        if replay {
            self.early_idle();
            self.start_driver();
        } else {
            self.resolve_waiters();
        }
    }
}

/// Why a step cannot open with the messages a pre-step decision enters
/// (SPEC §5: entering a repeated or a pending id is a `fail`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Unenterable {
    /// The batch names this id twice.
    Twice(MessageId),
    /// This id is pending.
    Pending(MessageId),
}

impl std::fmt::Display for Unenterable {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Twice(id) => write!(formatter, "the decision enters {id:?} twice"),
            Self::Pending(id) => write!(formatter, "the decision enters {id:?}, which is pending"),
        }
    }
}

impl Agent {
    /// Why `entering`, a pre-step decision's batch, cannot open a step
    /// (the boundary then fails); `None` when it can. A claim takes its
    /// batch out of the pending lists, so neither holds for a `pass`. (It
    /// takes `&mut`: a long pending list indexes its ids when first asked.)
    pub fn unenterable(&mut self, entering: &[Message]) -> Option<Unenterable> {
        if let Some(twice) = named_twice(entering) {
            return Some(Unenterable::Twice(twice.clone()));
        }
        let pending = self.pending_among(entering)?;
        Some(Unenterable::Pending(pending.id().clone()))
    }

    /// The first of `entering` that is pending.
    fn pending_among<'m>(&mut self, entering: &'m [Message]) -> Option<&'m Message> {
        // Nothing pending (a claim that took everything, the usual step)
        // rules every entering id out without a lookup per message.
        let inbox = &mut self.state.inbox;
        if inbox.is_empty() {
            return None;
        }
        entering
            .iter()
            .find(|message| inbox.find(message.id()).is_some())
    }
}

/// The first id a decision's entering batch names twice (linear: one set).
fn named_twice(entering: &[Message]) -> Option<&MessageId> {
    let mut named = FxHashSet::with_capacity_and_hasher(entering.len(), FxBuildHasher);
    let twice = entering.iter().find(|message| !named.insert(message.id()));
    twice.map(Message::id)
}

/// The entering batch as values: an id from the claimed batch is that
/// claimed occurrence; any other id is a new context message.
///
/// A batch longer than [`Pending::LONG_FROM`] is indexed by id first: a
/// scan of it per entering id made a step that enters every message of a
/// long claim quadratic (50,000 ids: 8 s). A short one is scanned, as a
/// short pending list is, so the model checker's steps allocate nothing.
fn claimed_values(messages: Vec<Message>, batch: &[Message]) -> Vec<Message> {
    let long = batch.len() > Pending::<Message>::LONG_FROM;
    let index: Option<FxHashMap<&MessageId, &Message>> = long.then(|| {
        batch
            .iter()
            .map(|claimed| (claimed.id(), claimed))
            .collect()
    });
    let claimed = |id: &MessageId| match &index {
        Some(index) => index.get(id).copied(),
        None => scan(batch, id).map(|(_, claimed)| claimed),
    };
    messages
        .into_iter()
        .map(|message| claimed(message.id()).cloned().unwrap_or(message))
        .collect()
}

impl Agent {
    /// The turn the log shows open, with its open step while the driver
    /// awaits one: what a crash now would have to close.
    pub(crate) fn logged_open(&self) -> Option<(u64, Option<u64>)> {
        let driver = self.driver()?;
        let step = (driver.awaiting.point() == AwaitPoint::Step).then_some(driver.step);
        driver.awaiting.turn_open().then_some((driver.turn, step))
    }
}
