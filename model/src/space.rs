//! The stateright model: every interleaving of client inputs and driver
//! completions up to a bound, fed through the core and the checker by the
//! shared [`Harness`].
//!
//! A state is the harness (the core agent, the checker's ghost and the first
//! violation, which makes the state terminal), the budget spent so far, the
//! goal tags and the goals the incoming transition reached. `next_state` is
//! [`Space::next`]: clone, then one [`Move`] through the harness. Ids are opaque, so states are hashed canonically over
//! ids ([`courier_check::fingerprint()`]): renamed twins count once, whatever the search
//! order (this is stateright's symmetry reduction without `symmetry_fn`, so it
//! holds for BFS too).
//!
//! A [`Move`] is an input run to completion or a crash and resume (SPEC §11).
//! A crash may cut the log anywhere, but losing whole earlier transitions
//! keeps the same log as crashing in an earlier state, so from each state
//! the model tries only a restart at the end of the log and, for each
//! enabled input, that input cut after each prefix of its durable writes,
//! the whole one included: a restart at the end of the log resumes from
//! the agent's lists ([`Harness::crash`]) and replays nothing, so the whole
//! cut (the same kept log) is what replays an input's last write. Both are
//! decided by the state alone, as stateright needs.

use std::hash::{Hash, Hasher};

use courier_core::{
    Agent, AwaitPoint, CancelCause, Input, InputKind, Message, MessageId, Output, PreStepDecision,
    Source, Status, StepOutcome, Stimulus, Target, Transition, Wakeup,
};
use serde_json::Value;
use strum::VariantArray;

use crate::vacuity::{self, Before, Facts, Tags, VacuityGoal};
use courier_check::Violation;
use courier_check::hash_with;
use courier_check::{Harness, NoHooks};

pub(crate) mod view;

/// How far the exploration goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bounds {
    /// Distinct messages inserted over a run (sends, prepends, replacements).
    pub messages: u8,
    /// Cancels and disposes over a run.
    pub cancels: u8,
    /// Inbox edits (prepend, replace, remove) over a run.
    pub edits: u8,
    /// The last step of a turn that may still end in `tool-calls`.
    pub steps: u8,
    /// Crashes and resumes over a run (0: none). Each one multiplies the
    /// space by the ways a log can be cut, so the default is one: every
    /// resume bug shows after a single restart.
    pub restarts: u8,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            messages: 3,
            cancels: 2,
            edits: 1,
            steps: 2,
            restarts: 1,
        }
    }
}

/// The budget a path has spent. Public so that another engine walking the
/// same space (the simulator's `--coverage-bound` workloads) keeps its budget
/// by the model's own rules ([`Space::enabled`], [`Spent::spend`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Spent {
    messages: u8,
    cancels: u8,
    edits: u8,
    restarts: u8,
}

/// One explored state. Its `Debug` is the Explorer's readable view
/// (`space/view.rs`), not a field dump.
#[derive(Clone, PartialEq)]
pub struct State {
    /// The agent under the shared checker; its first broken property makes
    /// the state terminal. Boxed: the search moves each generated state
    /// several times (out of `next`, into its stack of states to visit),
    /// and moving the whole harness inline cost more than an allocation.
    harness: Box<Harness>,
    spent: Spent,
    tags: Tags,
    /// Goals reached by the transition that led here.
    facts: Facts,
    /// Hash ids canonically (symmetry reduction); fixed for a run.
    symmetric: bool,
}

impl State {
    /// The first broken property on the path here, if any.
    pub fn violation(&self) -> Option<&Violation> {
        self.harness.broken()
    }

    /// The agent and its checker.
    pub(crate) fn harness(&self) -> &Harness {
        &self.harness
    }

    /// The abstract state's [`courier_check::fingerprint()`]: the agent and the
    /// checker's ghost, without the budget, tags and goals the model keeps.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.harness.fingerprint()
    }

    /// Whether the transition that led here reached `goal`.
    pub fn reached(&self, goal: VacuityGoal) -> bool {
        self.facts.contains(goal)
    }

    /// The goals the transition that led here reached.
    pub(crate) fn facts(&self) -> Facts {
        self.facts
    }
}

impl Hash for State {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        let Self {
            harness,
            spent,
            tags,
            facts,
            symmetric,
        } = self;
        let (agent, checker) = (harness.agent(), harness.checker());
        if *symmetric {
            hash_with(agent, checker, hasher, |ranks, hasher| {
                tags.hash_ranked(ranks, hasher);
            });
        } else {
            agent.hash(hasher);
            checker.hash(hasher);
            tags.hash(hasher);
        }
        spent.hash(hasher);
        facts.hash(hasher);
        // A violating state is terminal: which property broke is enough.
        harness.broken().map(|v| v.property).hash(hasher);
    }
}

/// What the pre-step listener does in the model (explored in declaration
/// order, `Decision::VARIANTS`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, VariantArray)]
pub enum Decision {
    /// Enter the claimed batch as is.
    Pass,
    /// End the turn `blocked`.
    Reject,
    /// The listener threw.
    Fail,
    /// Enter the batch without its first message.
    Drop,
    /// Enter the batch plus a new context message.
    Add,
    /// Enter the batch in reverse order.
    Reorder,
    /// Enter the batch plus a pending message (the core must fail the turn).
    EnterPending,
}

/// One model action; [`Space::input`] turns it into a core [`Input`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Action {
    /// Send the next fresh message.
    Send(Target, Wakeup),
    /// Prepend the next fresh message.
    Prepend(Target),
    /// Replace the pending message at this position (next-step first) by the
    /// next fresh message.
    Replace(usize),
    /// Remove the pending message at this position (next-step first).
    Remove(usize),
    /// `cancel user`, with or without keep-inbox.
    Cancel {
        /// Keep the inbox.
        keep_inbox: bool,
    },
    /// `dispose`.
    Dispose,
    /// Register a `when-idle` waiter (at most one is outstanding).
    WhenIdle,
    /// Resolve the pre-step await.
    PreStep(Decision),
    /// Resolve the step await.
    Step(StepOutcome),
}

/// One model step: stateright's action. An input that completes, or a crash
/// and resume, which no core [`Input`] stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Move {
    /// The action's input, run to completion.
    Input(Action),
    /// A crash at the end of the log, then a resume: `restart`.
    Restart,
    /// The action's input crashes after the first `kept` of its durable
    /// writes reached the log (fewer than all), then a resume: the input's
    /// command, then `restart lose=<the rest>`.
    Cut {
        /// The input that never completed.
        action: Action,
        /// Its durable writes kept.
        kept: u8,
    },
}

impl From<Action> for Move {
    fn from(action: Action) -> Self {
        Self::Input(action)
    }
}

const SENDS: [(Target, Wakeup); 4] = [
    (Target::NextTurn, Wakeup::Wake),
    (Target::NextStep, Wakeup::Wake),
    (Target::NextStep, Wakeup::NoWake),
    (Target::NextTurn, Wakeup::NoWake),
];

/// The id of the context message `Decision::Add` enters (never pending).
const CONTEXT_ID: &str = "ctx";

/// The explored space: bounds, the agent variant, and the id pool.
#[derive(Clone, Debug)]
pub struct Space {
    bounds: Bounds,
    agent: Agent,
    symmetric: bool,
    /// `A`, `B`, ...: the k-th inserted message takes the k-th id.
    pool: Vec<Message>,
    context: Message,
}

impl Space {
    /// The space of `agent` (fresh: the default design or a planted bug)
    /// within `bounds`; `symmetric` hashes states canonically over ids.
    pub fn new(bounds: Bounds, agent: Agent, symmetric: bool) -> Self {
        assert!(bounds.messages <= 26, "the id pool is A..Z");
        let pool = (0..bounds.messages)
            .map(|k| message(&char::from(b'A' + k).to_string(), Source::user()))
            .collect();
        Self {
            bounds,
            agent,
            symmetric,
            pool,
            context: message(CONTEXT_ID, Source::plugin("model")),
        }
    }

    /// The bounds explored.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// The goals the check must reach in this space: those a restart
    /// reaches only when restarts are on.
    pub fn goals(&self) -> impl Iterator<Item = VacuityGoal> + use<> {
        let restarts = self.bounds.restarts > 0;
        VacuityGoal::ALL
            .into_iter()
            .filter(move |goal| restarts || !goal.needs_restart())
    }

    /// The same space with no restarts.
    pub fn without_restarts(&self) -> Self {
        let mut space = self.clone();
        space.bounds.restarts = 0;
        space
    }

    /// A fresh agent of the explored variant (to replay a counterexample).
    pub fn fresh_agent(&self) -> Agent {
        self.agent.clone()
    }

    /// The state before any input.
    pub fn initial(&self) -> State {
        State {
            harness: Box::new(Harness::bare(self.agent.clone())),
            spent: Spent::default(),
            tags: Tags::default(),
            facts: Facts::default(),
            symmetric: self.symmetric,
        }
    }

    /// The moves enabled in `state`, in a fixed order: the enabled inputs,
    /// then, while the restart budget lasts, a restart and each input cut
    /// after each prefix of its durable writes, the whole one included.
    pub fn actions(&self, state: &State, moves: &mut Vec<Move>) {
        if state.violation().is_some() {
            return;
        }
        let mut actions = Vec::new();
        self.enabled(state.harness.agent(), state.spent, &mut actions);
        moves.extend(actions.iter().copied().map(Move::Input));
        if state.spent.restarts >= self.bounds.restarts {
            return;
        }
        moves.push(Move::Restart);
        for action in actions {
            let (_, durable) = self.scratch(state, action);
            let cuts = u8::try_from(durable.len()).expect("a transition writes few events");
            // An input that writes nothing has only the empty cut, which
            // is the restart.
            if cuts > 0 {
                moves.extend((0..=cuts).map(|kept| Move::Cut { action, kept }));
            }
        }
    }

    /// What `action`'s input does to a copy of `state`'s agent: the
    /// transition and its durable writes (what a crash can cut).
    fn scratch(&self, state: &State, action: Action) -> (Transition, Vec<Output>) {
        let mut agent = state.harness.agent().clone();
        let transition = agent.transition(self.input(state, action));
        let durable = transition.outputs.iter().filter(|o| o.is_durable());
        let durable = durable.cloned().collect();
        (transition, durable)
    }

    /// The stimuli `step` stands for in `state`, as a transcript replays
    /// them: a cut is its input, then a restart losing the writes it cut.
    pub fn stimuli(&self, state: &State, step: Move) -> Vec<Stimulus> {
        match step {
            Move::Input(action) => vec![Stimulus::Input(self.input(state, action))],
            Move::Restart => vec![Stimulus::Restart { lose: 0 }],
            Move::Cut { action, kept } => {
                let (transition, durable) = self.scratch(state, action);
                let lose = durable.len() - usize::from(kept);
                vec![
                    Stimulus::Input(transition.input),
                    Stimulus::Restart { lose },
                ]
            }
        }
    }

    /// The actions enabled for `agent` once `spent` of the budget is used,
    /// in a fixed order: [`Space::actions`] without a state around them.
    pub fn enabled(&self, agent: &Agent, spent: Spent, actions: &mut Vec<Action>) {
        for kind in InputKind::VARIANTS {
            self.actions_of(*kind, agent, spent, actions);
        }
    }

    /// The enabled actions of one kind of the core's input. Exhaustive over
    /// [`InputKind`], so a new input does not compile until the model says
    /// how it explores it (or why it does not).
    fn actions_of(&self, kind: InputKind, agent: &Agent, spent: Spent, actions: &mut Vec<Action>) {
        let disposed = agent.is_disposed();
        let fresh = spent.messages < self.bounds.messages && !disposed;
        let edits = spent.edits < self.bounds.edits;
        let cancels = spent.cancels < self.bounds.cancels;
        let pending = agent.inbox().len();
        match kind {
            InputKind::Send if fresh => {
                actions.extend(SENDS.map(|(target, wakeup)| Action::Send(target, wakeup)));
            }
            InputKind::Prepend if fresh && edits => {
                actions.extend(Target::ALL.map(Action::Prepend))
            }
            InputKind::Replace if fresh && edits => {
                actions.extend((0..pending).map(Action::Replace))
            }
            InputKind::Remove if edits => actions.extend((0..pending).map(Action::Remove)),
            InputKind::Cancel if cancels => {
                actions.push(Action::Cancel { keep_inbox: false });
                actions.push(Action::Cancel { keep_inbox: true });
            }
            InputKind::Dispose if cancels && !disposed => actions.push(Action::Dispose),
            // At most one waiter is outstanding.
            InputKind::WhenIdle if agent.idle_waiters() == 0 => actions.push(Action::WhenIdle),
            InputKind::PreStep => self.decisions(agent, actions),
            InputKind::Step => self.outcomes(agent, actions),
            // An append is a send that never wakes, and a raw splice is what
            // prepend, replace and remove already are: the core runs all of
            // them through one splice, so the model explores those three.
            InputKind::Append | InputKind::Splice => {}
            // Out of budget, disposed, or a waiter already outstanding.
            InputKind::Send
            | InputKind::Prepend
            | InputKind::Replace
            | InputKind::Remove
            | InputKind::Cancel
            | InputKind::Dispose
            | InputKind::WhenIdle => {}
        }
    }

    /// The pre-step decisions that differ for the claimed batch, when the
    /// driver awaits one.
    fn decisions(&self, agent: &Agent, actions: &mut Vec<Action>) {
        let Status::Running {
            awaiting: AwaitPoint::PreStep,
            ..
        } = agent.status()
        else {
            return;
        };
        let batch = agent.claimed().map_or(0, <[Message]>::len);
        let pending = !agent.inbox().is_empty();
        let useful = |decision: &Decision| match decision {
            Decision::Drop => batch >= 1,
            Decision::Reorder => batch >= 2,
            Decision::EnterPending => pending,
            Decision::Pass | Decision::Reject | Decision::Fail | Decision::Add => true,
        };
        let decisions = Decision::VARIANTS.iter().copied().filter(useful);
        actions.extend(decisions.map(Action::PreStep));
    }

    /// The step outcomes, when the driver awaits a step (`tool-calls` only
    /// up to the step bound).
    fn outcomes(&self, agent: &Agent, actions: &mut Vec<Action>) {
        let Status::Running {
            awaiting: AwaitPoint::Step,
            step,
            ..
        } = agent.status()
        else {
            return;
        };
        let tools = step < u64::from(self.bounds.steps);
        let outcomes = StepOutcome::VARIANTS.iter().copied();
        let outcomes = outcomes.filter(|o| tools || *o != StepOutcome::ToolCalls);
        actions.extend(outcomes.map(Action::Step));
    }

    /// The core input `action` stands for in `state`.
    pub fn input(&self, state: &State, action: Action) -> Input {
        self.input_for(state.harness.agent(), state.spent, action)
    }

    /// The core input `action` stands for, for `agent` once `spent` of the
    /// budget is used: [`Space::input`] without a state around them.
    pub fn input_for(&self, agent: &Agent, spent: Spent, action: Action) -> Input {
        let fresh = || self.pool[usize::from(spent.messages)].clone();
        match action {
            Action::Send(target, wakeup) => Input::send(fresh(), target, wakeup),
            Action::Prepend(target) => Input::Prepend {
                target,
                message: fresh(),
            },
            Action::Replace(position) => Input::Replace {
                id: pending_at(agent, position),
                message: fresh(),
            },
            Action::Remove(position) => Input::Remove {
                id: pending_at(agent, position),
            },
            Action::Cancel { keep_inbox } => Input::Cancel {
                cause: CancelCause::User,
                keep_inbox,
            },
            Action::Dispose => Input::Dispose,
            Action::WhenIdle => Input::WhenIdle,
            Action::PreStep(decision) => Input::PreStep(self.decision(agent, decision)),
            Action::Step(outcome) => Input::Step(outcome),
        }
    }

    fn decision(&self, agent: &Agent, decision: Decision) -> PreStepDecision {
        // The batch is copied only for the decisions that enter a list.
        let batch = agent.claimed().unwrap_or(&[]).iter().cloned();
        let entering = match decision {
            Decision::Pass => return PreStepDecision::Pass,
            Decision::Reject => return PreStepDecision::Reject,
            Decision::Fail => return PreStepDecision::Fail,
            Decision::Drop => batch.skip(1).collect(),
            Decision::Add => batch.chain([self.context.clone()]).collect(),
            Decision::Reorder => batch.rev().collect(),
            Decision::EnterPending => {
                let inbox = agent.inbox();
                let pending = Target::ALL.iter().flat_map(|t| inbox.list(*t)).next();
                batch.chain(pending.cloned()).collect()
            }
        };
        PreStepDecision::Enter(entering)
    }

    /// Takes `step` from a copy of `state` under the checker. `None` when it
    /// changes nothing (a refusal, an idle `when-idle`, a cancel with
    /// nothing to cancel, a restart with nothing live to lose): stateright
    /// reads that as "no new state".
    pub fn next(&self, state: &State, step: impl Into<Move>) -> Option<State> {
        match step.into() {
            Move::Input(action) => self.feed(state, action),
            Move::Restart => self.crash(state, None),
            Move::Cut { action, kept } => self.crash(state, Some((action, kept))),
        }
    }

    /// What the crash and resume of `step` print (the kept log's closers,
    /// for a correct core); nothing for an input.
    pub(crate) fn closers(&self, state: &State, step: Move) -> Vec<Output> {
        let in_flight = match step {
            Move::Input(_) => return Vec::new(),
            Move::Restart => Vec::new(),
            Move::Cut { action, kept } => {
                let (_, mut durable) = self.scratch(state, action);
                durable.truncate(usize::from(kept));
                durable
            }
        };
        let mut harness = state.harness.clone();
        harness.crash(&in_flight, &mut NoHooks).closers
    }

    /// Crashes a copy of `state` and resumes it: at the end of the log, or
    /// (`cut`) with the first `kept` durable writes of an action's input
    /// that never completed. Only the restart is charged, plus the action
    /// when some of its writes were kept (they may have inserted a message).
    fn crash(&self, state: &State, cut: Option<(Action, u8)>) -> Option<State> {
        let scratch = cut.map(|(action, kept)| (self.scratch(state, action), kept));
        let in_flight = scratch.as_ref().map_or(&[][..], |((_, durable), kept)| {
            &durable[..usize::from(*kept)]
        });
        let mut next = state.clone();
        let restarted = next.harness.crash(in_flight, &mut NoHooks);
        next.spent.restarts += 1;
        if restarted.violation.is_some() {
            next.facts = Facts::default();
            return Some(next);
        }
        if let Some((action, kept)) = cut
            && kept > 0
        {
            next.spent.spend(action);
        }
        let before = Before {
            agent: state.harness.agent(),
            checker: state.harness.checker(),
            tags: &state.tags,
        };
        let cut = scratch.as_ref().map(|((transition, _), _)| transition);
        (next.facts, next.tags) =
            vacuity::restarted(&before, cut, &restarted.closers, next.harness.agent());
        // A crash of an idle agent with nothing live to lose is no step.
        let unchanged = next.facts == Facts::default() && next.harness == state.harness;
        (!unchanged).then_some(next)
    }

    /// Feeds `action`'s input to a copy of `state` through the checker.
    fn feed(&self, state: &State, action: Action) -> Option<State> {
        let input = self.input(state, action);
        let mut next = state.clone();
        let fed = next.harness.feed(input);
        if let Some(violation) = &fed.violation {
            // A property the model has no `always` for would pass unseen.
            assert!(
                !crate::conditions::LOG_ONLY.contains(&violation.property),
                "the core broke a log-only property: {violation}"
            );
            next.facts = Facts::default();
            return Some(next);
        }
        if fed.transition.answer.is_err() {
            return None;
        }
        let may_idle = matches!(
            action,
            Action::Cancel { .. } | Action::Dispose | Action::WhenIdle
        );
        if may_idle && next.harness == state.harness {
            return None;
        }
        next.spent.spend(action);
        let before = Before {
            agent: state.harness.agent(),
            checker: state.harness.checker(),
            tags: &state.tags,
        };
        (next.facts, next.tags) = vacuity::observe(&before, &fed.transition, next.harness.agent());
        Some(next)
    }
}

impl Spent {
    /// Charges `action` to the budget; the model does so for every
    /// transition that changes the state.
    pub fn spend(&mut self, action: Action) {
        match action {
            Action::Send(..) => self.messages += 1,
            Action::Prepend(_) | Action::Replace(_) => {
                self.messages += 1;
                self.edits += 1;
            }
            Action::Remove(_) => self.edits += 1,
            Action::Cancel { .. } | Action::Dispose => self.cancels += 1,
            Action::WhenIdle | Action::PreStep(_) | Action::Step(_) => {}
        }
    }
}

/// A model message: the id is all delivery reads, so the content is empty.
fn message(id: &str, source: Source) -> Message {
    Message::new(MessageId::from(id), Value::Null, source)
}

/// The id of the pending message at `position`, counting `next-step` first.
fn pending_at(agent: &Agent, position: usize) -> MessageId {
    let inbox = agent.inbox();
    let mut pending = Target::ALL.iter().flat_map(|t| inbox.list(*t));
    pending
        .nth(position)
        .expect("actions only name pending positions")
        .id()
        .clone()
}
