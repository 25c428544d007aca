//! Property test of the core over random input sequences (SPEC §7 state
//! properties, through the shared harness): no panic (debug builds run
//! `check_invariants` after every input), every property holds (a refused
//! input queues nothing, no id is pending twice, the durable splices replay
//! to the inbox...), a refused input changes nothing, no turn after dispose.
//!
//! A pool of five ids makes duplicates, not-pending edits and re-sends of
//! claimed ids common. Some completions are drawn blind, so they often arrive
//! at the wrong point and must be refused; others resolve whatever the driver
//! awaits, so sequences reach deep steps instead of stalling at pre-step.

use courier_check::Harness;
use courier_core::{
    Agent, AwaitPoint, CancelCause, Input, Message, Output, PreStepDecision, Source, Status,
    StepOutcome, Target, Transition, Wakeup,
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

/// Feeds one input under the harness (every SPEC §7 property, the ghost
/// replay of the durable splices against the inbox) and checks what only
/// the core can show: a refused input left the state as it was, and no turn
/// opens after dispose.
fn step(harness: &mut Harness, input: Input) -> Result<(), TestCaseError> {
    let mut before = harness.agent().clone();
    prop_assert!(
        before.poll_output().is_none(),
        "outputs left over from the last input"
    );
    let fed = harness.feed(input);
    harness.check_invariants();
    let Transition {
        input,
        answer,
        outputs,
    } = &fed.transition;
    if let Some(violation) = &fed.violation {
        return Err(TestCaseError::fail(format!(
            "{input:?} -> {answer:?} broke {violation}; outputs {outputs:?}"
        )));
    }
    if let Err(refusal) = answer {
        prop_assert!(
            *harness.agent() == before,
            "{input:?} was refused ({refusal}) but changed the state"
        );
    }
    if before.is_disposed() {
        let opened = outputs
            .iter()
            .any(|o| matches!(o, Output::TurnStart { .. }));
        prop_assert!(!opened, "a turn opened after dispose: {input:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_keep_the_core_consistent(
        actions in prop::collection::vec(action(), 0..=SEQUENCE_LENGTH_MAX)
    ) {
        let mut harness = Harness::new(Agent::new());
        for action in actions {
            let input = action.input(harness.agent());
            step(&mut harness, input)?;
        }
    }
}
