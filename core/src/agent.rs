//! The agent: state plus the output queue, with one way in and one way out.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use crate::driver::{Driver, Phase, Signal};
use crate::error::Refusal;
use crate::event::{Activity, AwaitPoint, Input, Output};
use crate::inbox::{Inbox, Inserted, Outcome, Splice};
use crate::message::{CancelCause, Cause, Message, MessageId, Target, Wakeup};
use crate::mutant::Mutant;

/// What `status` shows: idle, or the open turn, its last opened step and the
/// point the driver awaits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Status {
    /// No driver.
    Idle,
    /// A driver awaits a completion.
    Running {
        /// The open turn.
        turn: u64,
        /// The last step opened in it (0 before the first).
        step: u64,
        /// The completion it waits for.
        awaiting: AwaitPoint,
    },
}

/// The state a model checker hashes: everything but the output queue.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) struct State {
    pub(crate) inbox: Inbox,
    pub(crate) phase: Phase,
    pub(crate) last_turn: u64,
    pub(crate) disposed: bool,
    pub(crate) idle_waiters: u64,
}

/// One agent's delivery state machine (sans-IO).
///
/// Calling contract: feed every input through [`Agent::handle`]; it runs one
/// atomic transition and queues outputs. Then drain [`Agent::poll_output`]
/// until it returns `None` before reacting: a reaction to an output is a later
/// input (no re-entrancy, SPEC decision 1). The getters take `&self` and may
/// be called at any time. When `handle` returns, a running driver always
/// awaits `pre-step` or `step`; a refused input changed nothing and queued
/// nothing.
#[derive(Clone, Debug, Default)]
pub struct Agent {
    pub(crate) state: State,
    outputs: VecDeque<Output>,
    /// The planted bug it runs; the default build has no such field.
    #[cfg(feature = "mutants")]
    mutant: Option<Mutant>,
    /// How many pending messages the debug build's inbox sweep may visit
    /// before the next one (see [`SWEEP_BUDGET`]); not state.
    #[cfg(debug_assertions)]
    sweep_credit: usize,
}

/// The pending messages a debug build's inbox sweep may visit per input,
/// amortized. An inbox of at most this many messages is swept after every
/// input; a larger one after every `len / SWEEP_BUDGET` inputs, so an
/// embedder's debug build with 20,000 pending messages no longer pays a
/// 20,000-message sweep per send. Courier's engines lose nothing: their
/// harness sweeps after every input it feeds.
#[cfg(debug_assertions)]
const SWEEP_BUDGET: usize = 64;

/// The largest output buffer [`Agent::recycle_outputs`] keeps (a
/// transition's outputs are a handful but for a long splice's claim).
const RECYCLED_OUTPUTS_MAX: usize = 1024;

// The output queue is transport, not state: two agents that differ only in
// undrained outputs are the same state to a model checker.
impl PartialEq for Agent {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state && self.mutant() == other.mutant()
    }
}

impl Eq for Agent {}

impl Hash for Agent {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.state.hash(hasher);
        // Hashed only where it can differ, so the correct build's hashes do
        // not change with the feature.
        #[cfg(feature = "mutants")]
        self.mutant.hash(hasher);
    }
}

impl Agent {
    /// A fresh, idle agent with empty lists and no turns run.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh agent that runs the named planted bug (SPEC §8).
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mutant: Option<Mutant>) -> Self {
        Self {
            mutant,
            ..Self::default()
        }
    }

    /// The planted bug this agent runs, if any.
    #[cfg(feature = "mutants")]
    pub fn mutant(&self) -> Option<Mutant> {
        self.mutant
    }

    /// The planted bug this agent runs: none in this build.
    #[cfg(not(feature = "mutants"))]
    #[inline(always)]
    pub const fn mutant(&self) -> Option<Mutant> {
        None
    }

    /// Whether this agent runs the planted bug `bug` (SPEC §8).
    #[cfg(feature = "mutants")]
    #[inline]
    pub fn runs(&self, bug: Mutant) -> bool {
        self.mutant == Some(bug)
    }

    /// Whether this agent runs the planted bug `bug`: never in this build, so
    /// every `if self.runs(..)` branch compiles away.
    #[cfg(not(feature = "mutants"))]
    #[inline(always)]
    pub const fn runs(&self, bug: Mutant) -> bool {
        let _ = bug;
        false
    }

    /// A fresh agent of the same variant (the planted bug, if any).
    pub fn fresh(&self) -> Self {
        Self {
            #[cfg(feature = "mutants")]
            mutant: self.mutant,
            ..Self::default()
        }
    }

    /// A resume's state (SPEC §11): the replayed lists and the last turn,
    /// on a fresh agent.
    pub(crate) fn restore(&mut self, inbox: Inbox, last_turn: u64) {
        self.state.inbox = inbox;
        self.state.last_turn = last_turn;
    }

    /// Runs one atomic transition. A refusal changes nothing and emits nothing.
    pub fn handle(&mut self, input: Input) -> Result<(), Refusal> {
        let result = match input {
            Input::Send {
                message,
                target,
                wakeup,
            } => self.send(message, target, wakeup),
            Input::Append { target, message } => self.append(target, message),
            Input::Prepend { target, message } => self.edit(self.state.inbox.normalize(
                target,
                0,
                0,
                Inserted::from_buf([message]),
                None,
            )),
            Input::Replace { id, message } => self.replace(&id, Some(message)),
            Input::Remove { id } => self.replace(&id, None),
            Input::Splice {
                target,
                start,
                removed,
                inserted,
            } => self.edit(self.state.inbox.normalize(
                target,
                start,
                removed,
                Inserted::from_vec(inserted),
                Some(Outcome::Canceled),
            )),
            Input::Cancel { cause, keep_inbox } => {
                self.cancel(cause, keep_inbox);
                Ok(())
            }
            Input::Dispose => {
                self.abort(Cause::Disposed, false);
                self.state.disposed = true;
                Ok(())
            }
            Input::WhenIdle => {
                self.when_idle();
                Ok(())
            }
            Input::PreStep(decision) => self.complete_pre_step(decision),
            Input::Step(outcome) => self.complete_step(outcome),
        };
        #[cfg(debug_assertions)]
        self.debug_check();
        result
    }

    /// The debug build's check after an input: the driver's invariants
    /// every time, the inbox sweep within [`SWEEP_BUDGET`] (amortized).
    #[cfg(debug_assertions)]
    fn debug_check(&mut self) {
        self.check_phase();
        if self.state.inbox.is_swept() {
            // Unchanged since its sweep: nothing to check, no credit spent.
            return;
        }
        self.sweep_credit = self.sweep_credit.saturating_add(SWEEP_BUDGET);
        if self.sweep_credit >= self.state.inbox.len() {
            self.sweep_credit = 0;
            self.state.inbox.sweep();
        }
    }

    /// Pops the oldest queued output.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Every queued output, oldest first: `poll_output` until `None`, but
    /// the queue's buffer becomes the vector (no copy, no growing vector;
    /// an engine's transition is mostly this and its clone of the state).
    pub(crate) fn take_outputs(&mut self) -> Vec<Output> {
        if self.outputs.is_empty() {
            // A refusal: the queue keeps its buffer for the next transition.
            return Vec::new();
        }
        Vec::from(std::mem::take(&mut self.outputs))
    }

    /// Hands back a transition's drained output vector: emptied, its buffer
    /// queues the next transition's outputs (kept only while the queue is
    /// empty and smaller). A queue grown from nothing on every transition
    /// was about a twentieth of `courier sim`'s instructions (an allocation,
    /// reallocations and a free per input); the output queue is transport,
    /// not state, so equality, hashing and clones do not see it. A buffer
    /// past [`RECYCLED_OUTPUTS_MAX`] is dropped: one huge splice's must not
    /// stay with the agent for good.
    pub fn recycle_outputs(&mut self, mut buffer: Vec<Output>) {
        if self.outputs.is_empty()
            && buffer.capacity() > self.outputs.capacity()
            && buffer.capacity() <= RECYCLED_OUTPUTS_MAX
        {
            buffer.clear();
            self.outputs = VecDeque::from(buffer);
        }
    }

    /// The pending lists.
    pub fn inbox(&self) -> &Inbox {
        &self.state.inbox
    }

    /// Idle, or the open turn, last opened step and awaited point.
    pub fn status(&self) -> Status {
        match &self.state.phase {
            Phase::Idle => Status::Idle,
            Phase::Running(driver) => Status::Running {
                turn: driver.turn,
                step: driver.step,
                awaiting: driver.awaiting.point(),
            },
        }
    }

    /// The batch the driver claimed, while it awaits the pre-step decision.
    pub fn claimed(&self) -> Option<&[Message]> {
        match &self.state.phase {
            Phase::Running(driver) => driver.awaiting.batch(),
            Phase::Idle => None,
        }
    }

    /// The cause that aborted the open turn (first cause wins), if one did:
    /// a runtime uses it to drop the hook in flight; the core still ends the
    /// turn when that hook's completion arrives.
    pub fn abort_cause(&self) -> Option<&Cause> {
        match &self.driver()?.signal {
            Signal::Aborted { cause, .. } => Some(cause),
            Signal::Live => None,
        }
    }

    /// Whether `dispose` ran.
    pub fn is_disposed(&self) -> bool {
        self.state.disposed
    }

    /// The number of the last turn opened (0 before any).
    pub fn last_turn(&self) -> u64 {
        self.state.last_turn
    }

    /// Unresolved `when-idle` waiters.
    pub fn idle_waiters(&self) -> u64 {
        self.state.idle_waiters
    }

    /// Asserts the state invariants, sweeping the whole inbox unless it
    /// has not changed since its last sweep (after most completions and
    /// status changes it has not: skipping those was a tenth of `courier
    /// sim`'s instructions). Debug builds check after every input, sweeping
    /// a large inbox only now and then (see [`Agent::handle`]); engines
    /// call this after every input they feed.
    pub fn check_invariants(&mut self) {
        self.state.inbox.sweep();
        self.check_phase();
    }

    /// The invariants of the driver and the waiters: constant time.
    fn check_phase(&self) {
        let state = &self.state;
        match &state.phase {
            Phase::Idle => assert_eq!(state.idle_waiters, 0, "idle with unresolved waiters"),
            Phase::Running(driver) => {
                assert_eq!(
                    driver.turn, state.last_turn,
                    "the open turn is the last turn"
                );
                if driver.awaiting.point() == AwaitPoint::Step {
                    assert!(driver.step >= 1, "awaiting a step that never opened");
                }
                if state.disposed {
                    assert!(driver.signal.is_aborted(), "disposed with a live turn");
                }
            }
        }
    }

    /// The single emission point; checks the shape it can see locally.
    pub(crate) fn emit(&mut self, output: Output) {
        if let Output::UserMessage(_) = output {
            let after_step_start = matches!(
                self.outputs.back(),
                Some(Output::StepStart { .. } | Output::UserMessage(_))
            );
            debug_assert!(after_step_start, "user/message outside step/start");
        }
        self.outputs.push_back(output);
    }

    pub(crate) fn driver(&self) -> Option<&Driver> {
        match &self.state.phase {
            Phase::Running(driver) => Some(driver),
            Phase::Idle => None,
        }
    }

    pub(crate) fn driver_mut(&mut self) -> Option<&mut Driver> {
        match &mut self.state.phase {
            Phase::Running(driver) => Some(driver),
            Phase::Idle => None,
        }
    }

    fn send(&mut self, message: Message, target: Target, wakeup: Wakeup) -> Result<(), Refusal> {
        let aborted = self
            .driver()
            .is_some_and(|driver| driver.signal.is_aborted());
        let wake = wakeup == Wakeup::Wake;
        // A waking send cannot steer a dying turn; it queues a whole new turn.
        let target = if wake && aborted {
            Target::NextTurn
        } else {
            target
        };
        self.append(target, message)?;
        if !wake {
            self.inject_wakes();
            return Ok(());
        }
        if self.driver().is_none() {
            self.start_driver();
            return Ok(());
        }
        if self.no_latch(aborted) || self.eager_latch(aborted) {
            return Ok(());
        }
        // A live driver claims the message at a later boundary; an aborted one
        // latches a wake that its retirement replays.
        if let Some(driver) = self.driver_mut() {
            driver.signal.latch();
        }
        Ok(())
    }

    /// Replace (`Some`) or remove (`None`) the pending occurrence of `id`.
    fn replace(&mut self, id: &MessageId, message: Option<Message>) -> Result<(), Refusal> {
        if let Some(message) = &message {
            self.refuse_if_disposed(std::slice::from_ref(message))?;
        }
        let (target, index) = self
            .state
            .inbox
            .find(id)
            .ok_or_else(|| Refusal::NotPending(id.clone()))?;
        let inserted = message.into_iter().collect();
        let splice =
            self.state
                .inbox
                .normalize(target, index, 1, inserted, Some(Outcome::Canceled));
        self.edit(splice)
    }

    fn refuse_if_disposed(&self, inserted: &[Message]) -> Result<(), Refusal> {
        match inserted.first() {
            Some(first) if self.state.disposed => Err(Refusal::Disposed(first.id().clone())),
            _ => Ok(()),
        }
    }

    /// Checks then applies one normalized edit splice, emitting
    /// `spliced`, then `discarded` per removal, then `inserted` per insertion.
    pub(crate) fn edit(&mut self, splice: Splice) -> Result<(), Refusal> {
        self.refuse_if_disposed(&splice.inserted)?;
        if let Some(id) = self.state.inbox.duplicate(&splice) {
            return Err(Refusal::DuplicateId(id));
        }
        if splice.is_noop() {
            return Ok(());
        }
        let removed = self.state.inbox.apply(&splice);
        let (target, inserted) = (
            splice.target,
            splice.start..splice.start + splice.inserted.len(),
        );
        self.emit(Output::Spliced(splice));
        for message in removed {
            self.emit(Output::Discarded { message });
        }
        // The inserted messages now sit at `inserted` in their list: clone
        // them from there rather than copying the splice's vector first.
        for index in inserted {
            if let Some(message) = self.state.inbox.list(target).get(index) {
                let message = message.clone();
                self.emit(Output::Inserted { message });
            }
        }
        Ok(())
    }

    /// [`Agent::edit`] of the splice that adds `message` at the end of
    /// `target` (a send or an append): the same refusals and outputs
    /// (`spliced`, then `inserted`), with one index probe and no removal
    /// bookkeeping, since it is most of what a claim cycle does.
    fn append(&mut self, target: Target, message: Message) -> Result<(), Refusal> {
        self.refuse_if_disposed(std::slice::from_ref(&message))?;
        let inbox = &mut self.state.inbox;
        let start = inbox
            .push_back(target, &message)
            .map_err(Refusal::DuplicateId)?;
        let inserted = message.clone();
        self.emit(Output::Spliced(Splice {
            target,
            start,
            removed_count: 0,
            inserted: Inserted::from_buf([message]),
            outcome: None,
        }));
        self.emit(Output::Inserted { message: inserted });
        Ok(())
    }

    fn cancel(&mut self, cause: CancelCause, keep_inbox: bool) {
        self.abort(cause.into(), keep_inbox);
    }

    /// Without `keep_inbox`, discard `next-step` then `next-turn` and clear the
    /// latch; then abort a live turn with `cause` (first cause wins).
    fn abort(&mut self, cause: Cause, keep_inbox: bool) {
        if !keep_inbox {
            for target in Target::ALL {
                let length = self.state.inbox.list(target).len();
                let splice = self.state.inbox.normalize(
                    target,
                    0,
                    length,
                    Inserted::new(),
                    Some(Outcome::Canceled),
                );
                let removal = self.edit(splice);
                debug_assert!(removal.is_ok(), "a pure removal is never refused");
            }
        }
        if let Some(driver) = self.driver_mut() {
            driver.signal.abort(cause, keep_inbox);
            driver.eager.abort(keep_inbox);
        }
    }

    fn when_idle(&mut self) {
        match self.state.phase {
            Phase::Idle => self.emit(Output::Idle),
            Phase::Running(_) => self.state.idle_waiters += 1,
        }
    }

    /// Resolves every `when-idle` waiter.
    pub(crate) fn resolve_waiters(&mut self) {
        for _ in 0..std::mem::take(&mut self.state.idle_waiters) {
            self.emit(Output::Idle);
        }
    }

    /// Idle → running: the only place a driver is born.
    pub(crate) fn start_driver(&mut self) {
        // Unreachable from any input: every caller checks first (a waking
        // send and `inject-wakes` find no driver, a retirement has taken
        // it, and a resumed agent is fresh).
        assert!(self.driver().is_none(), "start_driver while running");
        self.emit(Output::Status {
            status: Activity::Running,
        });
        self.open_turn();
    }

    pub(crate) fn take_phase(&mut self) -> Phase {
        std::mem::take(&mut self.state.phase)
    }
}
