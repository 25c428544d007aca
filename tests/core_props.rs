//! Property test of the core over random input sequences (SPEC §7 state
//! properties a single agent can check about itself): no panic (debug builds
//! run `check_invariants` after every input), a refused input changes nothing
//! and queues nothing, no id is pending twice, and replaying the durable
//! splices from two empty lists reproduces the inbox exactly.
//!
//! A pool of five ids makes duplicates, not-pending edits and re-sends of
//! claimed ids common. Some completions are drawn blind, so they often arrive
//! at the wrong point and must be refused; others resolve whatever the driver
//! awaits, so sequences reach deep steps instead of stalling at pre-step.

use std::collections::{BTreeSet, VecDeque};

use courier_core::{
    Agent, AwaitPoint, CancelCause, Input, Message, Output, PreStepDecision, Source, Status,
    StepOutcome, Target, Wakeup,
};
use proptest::prelude::*;

/// Inputs per generated sequence: long enough for several turns, latches and
/// a dispose, short enough that a case takes microseconds.
const SEQUENCE_LENGTH_MAX: usize = 60;

fn id() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["A", "B", "C", "D", "E"]).prop_map(str::to_owned)
}

fn message() -> impl Strategy<Value = Message> {
    let source = prop_oneof![Just(Source::user()), Just(Source::of_kind("plugin"))];
    (id(), source).prop_map(|(id, source)| Message::text(id.as_str(), source))
}

fn messages() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(message(), 0..=3)
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![Just(Target::NextTurn), Just(Target::NextStep)]
}

/// Splice coordinates: mostly in range, sometimes far past it (clamping must
/// not overflow).
fn coordinate() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..4, 1 => Just(usize::MAX)]
}

fn cause() -> impl Strategy<Value = CancelCause> {
    prop_oneof![
        Just(CancelCause::User),
        Just(CancelCause::Parent),
        Just(CancelCause::Hook {
            reason: "veto".to_owned()
        }),
    ]
}

fn decision() -> impl Strategy<Value = PreStepDecision> {
    prop_oneof![
        6 => Just(PreStepDecision::Pass),
        1 => Just(PreStepDecision::Reject),
        1 => Just(PreStepDecision::Fail),
        2 => messages().prop_map(PreStepDecision::Enter),
    ]
}

fn outcome() -> impl Strategy<Value = StepOutcome> {
    prop_oneof![
        3 => Just(StepOutcome::Completed),
        1 => Just(StepOutcome::MaxTokens),
        3 => Just(StepOutcome::ToolCalls),
        1 => Just(StepOutcome::Fail),
    ]
}

/// Every input kind of SPEC §3; dispose is rare because it makes every later
/// insertion a refusal.
fn input() -> impl Strategy<Value = Input> {
    let wakeup = prop_oneof![Just(Wakeup::Wake), Just(Wakeup::NoWake)];
    prop_oneof![
        6 => (message(), target(), wakeup).prop_map(|(message, target, wakeup)| {
            Input::send(message, target, wakeup)
        }),
        1 => (target(), message()).prop_map(|(target, message)| Input::Append { target, message }),
        1 => (target(), message()).prop_map(|(target, message)| Input::Prepend { target, message }),
        1 => (id(), message()).prop_map(|(id, message)| Input::Replace {
            id: id.as_str().into(),
            message,
        }),
        1 => id().prop_map(|id| Input::Remove { id: id.as_str().into() }),
        1 => (target(), coordinate(), coordinate(), messages()).prop_map(
            |(target, start, removed, inserted)| Input::Splice {
                target,
                start,
                removed,
                inserted,
            }
        ),
        2 => (cause(), any::<bool>())
            .prop_map(|(cause, keep_inbox)| Input::Cancel { cause, keep_inbox }),
        1 => Just(Input::WhenIdle),
        2 => decision().prop_map(Input::PreStep),
        2 => outcome().prop_map(Input::Step),
        // Weighted against the sum of the others: about one dispose in a
        // hundred inputs, so most sequences stay undisposed.
        1 => prop::bool::weighted(0.2).prop_map(|dispose| if dispose {
            Input::Dispose
        } else {
            Input::WhenIdle
        }),
    ]
}

/// One generated action: a raw input, or a completion of whatever point the
/// driver awaits when the action runs (which is refused while idle).
#[derive(Clone, Debug)]
enum Action {
    Input(Input),
    Complete(PreStepDecision, StepOutcome),
}

impl Action {
    fn input(self, agent: &Agent) -> Input {
        match self {
            Self::Input(input) => input,
            Self::Complete(decision, outcome) => match agent.status() {
                Status::Running {
                    awaiting: AwaitPoint::Step,
                    ..
                } => Input::Step(outcome),
                Status::Running { .. } | Status::Idle => Input::PreStep(decision),
            },
        }
    }
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        2 => input().prop_map(Action::Input),
        1 => (decision(), outcome()).prop_map(|(decision, outcome)| Action::Complete(decision, outcome)),
    ]
}

/// The two lists rebuilt from durable `spliced` records only.
#[derive(Default)]
struct Replay {
    next_turn: VecDeque<Message>,
    next_step: VecDeque<Message>,
}

impl Replay {
    fn list_mut(&mut self, target: Target) -> &mut VecDeque<Message> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Applies one record; a durable splice is already normalized, so its
    /// range must lie inside the replayed list.
    fn apply(&mut self, output: &Output) -> Result<(), TestCaseError> {
        let Output::Spliced(splice) = output else {
            return Ok(());
        };
        let list = self.list_mut(splice.target);
        let end = splice.start + splice.removed_count;
        prop_assert!(
            end <= list.len(),
            "spliced {:?} past a replayed list of {}",
            splice,
            list.len()
        );
        list.drain(splice.start..end);
        for (offset, message) in splice.inserted.iter().enumerate() {
            list.insert(splice.start + offset, message.clone());
        }
        Ok(())
    }
}

/// Feeds one input, drains its outputs and checks every property.
fn step(agent: &mut Agent, replay: &mut Replay, input: Input) -> Result<(), TestCaseError> {
    prop_assert!(!agent.has_output(), "outputs left over from the last input");
    let before = agent.clone();
    let was_disposed = agent.is_disposed();
    let result = agent.handle(input.clone());
    agent.check_invariants();
    let outputs: Vec<Output> = std::iter::from_fn(|| agent.poll_output()).collect();
    if let Err(refusal) = &result {
        prop_assert!(
            *agent == before,
            "{input:?} was refused ({refusal}) but changed the state"
        );
        prop_assert!(
            outputs.is_empty(),
            "{input:?} was refused ({refusal}) but emitted {outputs:?}"
        );
    }
    for output in &outputs {
        replay.apply(output)?;
        if was_disposed {
            let opened = matches!(output, Output::TurnStart { .. });
            prop_assert!(!opened, "a turn opened after dispose: {input:?}");
        }
    }
    let inbox = agent.inbox();
    let pending: Vec<_> = Target::ALL
        .into_iter()
        .flat_map(|target| inbox.list(target).iter().map(Message::id))
        .collect();
    let distinct: BTreeSet<_> = pending.iter().map(|id| id.as_str()).collect();
    prop_assert_eq!(
        distinct.len(),
        pending.len(),
        "an id is pending twice: {:?}",
        pending
    );
    prop_assert_eq!(inbox.len(), pending.len());
    prop_assert_eq!(&replay.next_turn, inbox.list(Target::NextTurn));
    prop_assert_eq!(&replay.next_step, inbox.list(Target::NextStep));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_keep_the_core_consistent(
        actions in prop::collection::vec(action(), 0..=SEQUENCE_LENGTH_MAX)
    ) {
        let mut agent = Agent::new();
        let mut replay = Replay::default();
        for action in actions {
            let input = action.input(&agent);
            step(&mut agent, &mut replay, input)?;
        }
    }
}
