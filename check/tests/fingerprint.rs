//! The shared fingerprint is canonical over ids: renaming every id gives the
//! same value, while any difference in structure gives a different one.

use courier_check::{Harness, fingerprint};
use courier_core::{Agent, Input, Message, PreStepDecision, Source, StepOutcome};

fn message(id: &str) -> Message {
    Message::text(id, Source::user())
}

/// Feeds `inputs` under the harness from a fresh agent; the fingerprint.
fn after(inputs: Vec<Input>) -> u64 {
    let mut harness = Harness::new(Agent::new());
    for input in inputs {
        let fed = harness.feed(input);
        assert_eq!(fed.violation, None, "the correct core holds");
    }
    assert_eq!(
        harness.fingerprint(),
        fingerprint(harness.agent(), harness.checker())
    );
    harness.fingerprint()
}

/// A running turn with two queued prompts and one steer, ids chosen by `ids`.
fn queued(ids: [&str; 4]) -> Vec<Input> {
    vec![
        Input::followup(message(ids[0])),
        Input::followup(message(ids[1])),
        Input::followup(message(ids[2])),
        Input::steer(message(ids[3])),
    ]
}

#[test]
fn renamed_ids_fingerprint_alike() {
    let original = after(queued(["A", "B", "C", "D"]));
    assert_eq!(original, after(queued(["W", "X", "Y", "Z"])));
    assert_eq!(original, after(queued(["D", "C", "B", "A"])));
}

#[test]
fn structure_and_ghost_change_the_fingerprint() {
    let original = after(queued(["A", "B", "C", "D"]));
    // Same inbox, but an inject owes no wake: the ghost differs.
    let mut injected = queued(["A", "B", "C", "D"]);
    injected[3] = Input::inject(message("D"));
    assert_ne!(original, after(injected));
    let mut stepped = queued(["A", "B", "C", "D"]);
    stepped.push(Input::PreStep(PreStepDecision::Pass));
    assert_ne!(original, after(stepped.clone()));
    stepped.push(Input::Step(StepOutcome::ToolCalls));
    assert_ne!(after(stepped.clone()), original);
    assert_ne!(after(Vec::new()), original);
}

#[test]
fn the_fingerprint_is_a_pure_function() {
    let inputs = queued(["A", "B", "C", "D"]);
    assert_eq!(after(inputs.clone()), after(inputs));
}

#[test]
fn admitted_ids_count_by_position_not_name() {
    let entered = |batch: &[&str]| {
        let batch = batch.iter().map(|id| message(id)).collect();
        after(vec![
            Input::followup(message("A")),
            Input::PreStep(PreStepDecision::Enter(batch)),
        ])
    };
    // Which name a context message has does not matter; that it entered does.
    assert_eq!(entered(&["A", "ctx"]), entered(&["A", "other"]));
    assert_ne!(entered(&["A", "ctx"]), entered(&["A"]));
}

#[test]
fn an_id_spelled_by_two_allocations_ranks_once() {
    // The first boundary claims the first message; a second message of the
    // same name (another allocation) is then queued while the batch holds it.
    let queued_after_claim = |first: &str, second: &str| {
        after(vec![
            Input::followup(message(first)),
            Input::followup(message(second)),
        ])
    };
    assert_eq!(queued_after_claim("A", "A"), queued_after_claim("B", "B"));
    assert_ne!(queued_after_claim("A", "A"), queued_after_claim("A", "B"));
}
