//! Each vacuity goal is reached by the shortest story that tells it, on the
//! last input of the story and not before; near misses reach nothing.

use courier_core::{Agent, StepOutcome, Target, Wakeup};
use courier_model::{Action, Bounds, Decision, Space, VacuityGoal};

const FOLLOWUP: Action = Action::Send(Target::NextTurn, Wakeup::Wake);
const STEER: Action = Action::Send(Target::NextStep, Wakeup::Wake);
const INJECT: Action = Action::Send(Target::NextStep, Wakeup::NoWake);
const QUEUE: Action = Action::Send(Target::NextTurn, Wakeup::NoWake);
const KEEP: Action = Action::Cancel { keep_inbox: true };
const CANCEL: Action = Action::Cancel { keep_inbox: false };
const PASS: Action = Action::PreStep(Decision::Pass);
const COMPLETED: Action = Action::Step(StepOutcome::Completed);

/// The goals each input of `story` reached, in order.
fn reached(story: &[Action]) -> Vec<Vec<VacuityGoal>> {
    let space = Space::new(Bounds::default(), Agent::new(), true);
    let mut state = space.initial();
    let mut reached = Vec::new();
    for action in story {
        state = space
            .next(&state, *action)
            .unwrap_or_else(|| panic!("{action:?} changed nothing"));
        assert!(state.violation().is_none(), "{:?}", state.violation());
        let goals = VacuityGoal::ALL.into_iter().filter(|g| state.reached(*g));
        reached.push(goals.collect());
    }
    reached
}

/// `story` reaches exactly `goal`, on its last input only.
fn tells(story: &[Action], goal: VacuityGoal) {
    let reached = reached(story);
    let (last, before) = reached.split_last().unwrap();
    assert_eq!(last, &vec![goal], "{story:?}");
    assert!(before.iter().all(Vec::is_empty), "{story:?}: {reached:?}");
}

#[test]
fn a_latched_wake_replays_at_retirement() {
    tells(
        &[FOLLOWUP, PASS, KEEP, FOLLOWUP, COMPLETED],
        VacuityGoal::LatchReplay,
    );
}

#[test]
fn work_parked_by_a_keep_inbox_cancel_runs_after_a_later_send() {
    let story = [FOLLOWUP, PASS, INJECT, KEEP, COMPLETED, FOLLOWUP];
    tells(&story, VacuityGoal::KeptWorkRuns);
}

#[test]
fn an_idle_inject_rides_along_a_followup() {
    tells(&[INJECT, FOLLOWUP], VacuityGoal::IdleInjectRides);
}

#[test]
fn a_steer_joins_the_open_turn_at_its_next_boundary() {
    tells(
        &[FOLLOWUP, PASS, STEER, COMPLETED],
        VacuityGoal::SteerJoinsStep,
    );
}

#[test]
fn a_reject_blocks_the_turn() {
    tells(
        &[FOLLOWUP, Action::PreStep(Decision::Reject)],
        VacuityGoal::Reject,
    );
}

#[test]
fn a_cancel_lands_while_the_pre_step_decision_is_awaited() {
    tells(&[FOLLOWUP, CANCEL], VacuityGoal::CancelAtPreStep);
}

#[test]
fn a_next_turn_no_wake_item_rides_along() {
    tells(&[QUEUE, FOLLOWUP], VacuityGoal::NoWakeTurnRides);
}

#[test]
fn near_misses_reach_no_goal() {
    let none = |story: &[Action]| {
        let reached = reached(story);
        assert!(reached.iter().all(Vec::is_empty), "{story:?}: {reached:?}");
    };
    // A cancel while a step is awaited.
    none(&[FOLLOWUP, PASS, CANCEL]);
    // A steer while idle starts its own turn: it joins no open turn.
    none(&[STEER]);
    // An inject into a running turn is claimed at its next boundary, not by
    // a followup that found the agent idle.
    none(&[FOLLOWUP, PASS, INJECT, Action::Step(StepOutcome::ToolCalls)]);
    // A keep-inbox cancel with nothing pending parks nothing.
    none(&[FOLLOWUP, PASS, KEEP, COMPLETED, FOLLOWUP]);
}
