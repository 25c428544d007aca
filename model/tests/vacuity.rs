//! Each vacuity goal is reached by the shortest story that tells it, on the
//! last input of the story and not before; near misses reach nothing.

use courier_core::{Agent, StepOutcome, Target, Wakeup};
use courier_model::{Action, Bounds, Decision, Move, Space, VacuityGoal};

const FOLLOWUP: Move = Move::Input(Action::Send(Target::NextTurn, Wakeup::Wake));
const STEER: Move = Move::Input(Action::Send(Target::NextStep, Wakeup::Wake));
const INJECT: Move = Move::Input(Action::Send(Target::NextStep, Wakeup::NoWake));
const QUEUE: Move = Move::Input(Action::Send(Target::NextTurn, Wakeup::NoWake));
const KEEP: Move = Move::Input(Action::Cancel { keep_inbox: true });
const CANCEL: Move = Move::Input(Action::Cancel { keep_inbox: false });
const PASS: Move = Move::Input(Action::PreStep(Decision::Pass));
const REJECT: Move = Move::Input(Action::PreStep(Decision::Reject));
const COMPLETED: Move = Move::Input(Action::Step(StepOutcome::Completed));
const TOOL_CALLS: Move = Move::Input(Action::Step(StepOutcome::ToolCalls));
/// `remove` of the first pending message, crashed before its splice was kept.
const LOST_REMOVE: Move = Move::Cut {
    action: Action::Remove(0),
    kept: 0,
};

/// The goals each move of `story` reached, in order.
fn reached(story: &[Move]) -> Vec<Vec<VacuityGoal>> {
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
fn tells(story: &[Move], goal: VacuityGoal) {
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
    tells(&[FOLLOWUP, REJECT], VacuityGoal::Reject);
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
fn a_restart_closes_the_open_step() {
    tells(
        &[FOLLOWUP, PASS, Move::Restart],
        VacuityGoal::RestartClosesStep,
    );
}

#[test]
fn a_restart_that_lost_a_removal_brings_the_message_back() {
    tells(&[QUEUE, LOST_REMOVE], VacuityGoal::RestartResurrects);
}

#[test]
fn work_pending_at_a_restart_runs_after_a_later_send() {
    // B was injected into the crashed turn before its first boundary.
    tells(
        &[FOLLOWUP, INJECT, Move::Restart, FOLLOWUP],
        VacuityGoal::RestartParkedRuns,
    );
}

#[test]
fn a_restart_of_an_idle_agent_is_no_move() {
    let space = Space::new(Bounds::default(), Agent::new(), true);
    let queued = space.next(&space.initial(), QUEUE).unwrap();
    assert!(space.next(&queued, Move::Restart).is_none());
}

#[test]
fn near_misses_reach_no_goal() {
    let none = |story: &[Move]| {
        let reached = reached(story);
        assert!(reached.iter().all(Vec::is_empty), "{story:?}: {reached:?}");
    };
    // A cancel while a step is awaited.
    none(&[FOLLOWUP, PASS, CANCEL]);
    // A steer while idle starts its own turn: it joins no open turn.
    none(&[STEER]);
    // An inject into a running turn is claimed at its next boundary, not by
    // a followup that found the agent idle.
    none(&[FOLLOWUP, PASS, INJECT, TOOL_CALLS]);
    // A keep-inbox cancel with nothing pending parks nothing.
    none(&[FOLLOWUP, PASS, KEEP, COMPLETED, FOLLOWUP]);
    // A send whose splice was lost brings nothing back, and leaves nothing
    // pending for the next turn.
    let lost_inject = Move::Cut {
        action: Action::Send(Target::NextStep, Wakeup::NoWake),
        kept: 0,
    };
    none(&[FOLLOWUP, lost_inject, FOLLOWUP]);
    // A restart before the first step opened closes only the turn, and
    // resumes nothing pending: the later turn claims only B.
    none(&[FOLLOWUP, Move::Restart, FOLLOWUP]);
}
