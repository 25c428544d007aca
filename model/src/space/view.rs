//! How the Explorer (`courier explore`) shows a state and an action. The
//! Explorer prints a state with `{:#?}` and an action with `format_action`,
//! so these are written for a person reading the web page: the two pending
//! lists, the phase and awaited point, and the checker's ghost bookkeeping
//! (what a waking send is still owed), one labelled line each.

use std::fmt;

use courier_core::transcript::{Runner, stimulus_line};
use courier_core::{AwaitPoint, Message, MessageId, Status, Stimulus, Target, Wakeup};

use super::{Action, Decision, Move, Space, State};
use crate::vacuity::VacuityGoal;

impl fmt::Debug for State {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agent = self.harness().agent();
        let ghost = self.harness().checker();
        writeln!(formatter, "phase      {}", phase(self))?;
        for target in [Target::NextTurn, Target::NextStep] {
            let list = agent.inbox().list(target).iter().map(Message::id);
            writeln!(formatter, "{:<10} {}", target.as_str(), ids(list))?;
        }
        writeln!(
            formatter,
            "owed       {}   (ghost: waking sends not yet claimed)",
            ids(ghost.owed())
        )?;
        writeln!(
            formatter,
            "parked     {}   (ghost: pending at a stop, until a waking send)",
            ids(ghost.parked())
        )?;
        if ghost.replay_owed() {
            writeln!(
                formatter,
                "replay     owed (ghost: a waking send reached the aborted turn)"
            )?;
        }
        writeln!(
            formatter,
            "agent      last turn {} · when-idle waiters {} · {}",
            agent.last_turn(),
            agent.idle_waiters(),
            if agent.is_disposed() {
                "disposed"
            } else {
                "not disposed"
            }
        )?;
        let spent = &self.spent;
        writeln!(
            formatter,
            "spent      messages {} · cancels {} · edits {} · restarts {}",
            spent.messages, spent.cancels, spent.edits, spent.restarts
        )?;
        let reached: Vec<&str> = VacuityGoal::ALL
            .into_iter()
            .filter(|goal| self.facts.contains(*goal))
            .map(VacuityGoal::name)
            .collect();
        if !reached.is_empty() {
            writeln!(formatter, "goals      {}", reached.join(" "))?;
        }
        match self.violation() {
            None => write!(formatter, "violation  none"),
            Some(violation) => write!(formatter, "violation  BROKEN {violation}"),
        }
    }
}

/// `idle`, or the open turn, its step and what the driver awaits.
fn phase(state: &State) -> String {
    let aborted = if state.harness().checker().turn_aborted() {
        " (aborted)"
    } else {
        ""
    };
    match state.harness().agent().status() {
        Status::Idle => "idle".to_owned(),
        Status::Running {
            turn,
            step,
            awaiting: AwaitPoint::PreStep,
        } => {
            let batch = state.harness().agent().claimed().unwrap_or_default();
            let batch: Vec<&str> = batch.iter().map(|m| m.id().as_str()).collect();
            format!(
                "running turn {turn}{aborted}, step {step}, awaiting pre-step with [{}]",
                batch.join(" ")
            )
        }
        Status::Running {
            turn,
            step,
            awaiting: AwaitPoint::Step,
        } => format!("running turn {turn}{aborted}, awaiting step {turn}.{step}"),
    }
}

/// Space-separated ids, or `-` for none.
fn ids<'a>(ids: impl Iterator<Item = &'a MessageId>) -> String {
    let ids: Vec<&str> = ids.map(MessageId::as_str).collect();
    if ids.is_empty() {
        "-".to_owned()
    } else {
        ids.join(" ")
    }
}

/// The move as the transcript commands it stands for, with the message it
/// would insert left as "next id" and a cut's count of lost writes left as
/// what it keeps (the state decides both).
pub(crate) fn action(step: &Move) -> String {
    match step {
        Move::Input(action) => input(action),
        Move::Restart => "restart lose=0".to_owned(),
        Move::Cut { action, kept } => {
            format!("{}, restart keeping {kept} of its writes", input(action))
        }
    }
}

/// An input action as its transcript command.
fn input(action: &Action) -> String {
    match action {
        Action::Send(Target::NextTurn, Wakeup::Wake) => "followup (next id)".to_owned(),
        Action::Send(Target::NextStep, Wakeup::Wake) => "steer (next id)".to_owned(),
        Action::Send(Target::NextStep, Wakeup::NoWake) => "inject (next id)".to_owned(),
        Action::Send(target @ Target::NextTurn, wakeup @ Wakeup::NoWake) => {
            format!("send (next id) {target} {wakeup}")
        }
        Action::Prepend(target) => format!("prepend {} (next id)", target.as_str()),
        Action::Replace(position) => format!("replace pending #{position} by (next id)"),
        Action::Remove(position) => format!("remove pending #{position}"),
        Action::Cancel { keep_inbox: false } => "cancel user".to_owned(),
        Action::Cancel { keep_inbox: true } => "cancel user keep-inbox".to_owned(),
        Action::Dispose => "dispose".to_owned(),
        Action::WhenIdle => "when-idle".to_owned(),
        Action::PreStep(decision) => format!("pre-step {}", decision_name(*decision)),
        Action::Step(outcome) => format!("step {outcome}"),
    }
}

fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Pass => "pass",
        Decision::Reject => "reject",
        Decision::Fail => "fail",
        Decision::Drop => "enter (without the first)",
        Decision::Add => "enter (plus context ctx)",
        Decision::Reorder => "enter (reversed)",
        Decision::EnterPending => "enter (plus a pending id)",
    }
}

/// One move as transcript blocks (the exact command, `----`, what the core
/// printed; a cut is its input's block, then the restart's), then the state
/// it leads to.
pub(crate) fn step(space: &Space, last: &State, step: Move) -> Option<String> {
    let next = space.next(last, step)?;
    let mut text = String::new();
    for stimulus in space.stimuli(last, step) {
        text.push_str(&stimulus_line(&stimulus));
        text.push_str("\n----\n");
        let printed = match stimulus {
            Stimulus::Input(input) => Runner::new(last.harness().agent().clone()).feed(input),
            Stimulus::Restart { .. } => {
                let closers = space.closers(last, step);
                closers.iter().map(ToString::to_string).collect()
            }
        };
        for line in printed {
            text.push_str(&line);
            text.push('\n');
        }
        text.push('\n');
    }
    text.push_str(&format!("{next:?}"));
    Some(text)
}

#[cfg(test)]
mod tests {
    use courier_core::Agent;

    use super::*;
    use crate::space::Bounds;

    /// `followup A`, `cancel user keep-inbox`, `followup B`: B is latched.
    fn latched(space: &Space) -> (State, State) {
        let followup = Action::Send(Target::NextTurn, Wakeup::Wake);
        let sent = space.next(&space.initial(), followup).unwrap();
        let kept = space
            .next(&sent, Action::Cancel { keep_inbox: true })
            .unwrap();
        let latched = space.next(&kept, followup).unwrap();
        (kept, latched)
    }

    #[test]
    fn a_state_reads_as_its_lists_phase_and_ghost() {
        let space = Space::new(Bounds::default(), Agent::new(), false);
        let view = format!("{:#?}", latched(&space).1);
        for line in [
            "phase      running turn 1 (aborted), step 0, awaiting pre-step with [A]\n",
            "next-turn  B\n",
            "next-step  -\n",
            "owed       B   (ghost",
            "replay     owed",
            "spent      messages 2 · cancels 1 · edits 0 · restarts 0\n",
            "violation  none",
        ] {
            assert!(view.contains(line), "no `{line}` in:\n{view}");
        }
    }

    #[test]
    fn a_step_reads_as_a_transcript_block_then_the_next_state() {
        let space = Space::new(Bounds::default(), Agent::new(), false);
        let (kept, _) = latched(&space);
        let followup = Action::Send(Target::NextTurn, Wakeup::Wake);
        let shown = step(&space, &kept, followup.into()).unwrap();
        assert!(
            shown.starts_with("followup B\n----\nspliced next-turn@0 +B\n~inserted B\n\nphase"),
            "{shown}"
        );
        assert_eq!(action(&followup.into()), "followup (next id)");
    }

    /// A cut reads as its input's block, then the restart's, losing the
    /// writes the crash cut: here the claim splice of A.
    #[test]
    fn a_cut_reads_as_its_input_then_a_restart() {
        let space = Space::new(Bounds::default(), Agent::new(), false);
        let followup = Action::Send(Target::NextTurn, Wakeup::Wake);
        let cut = Move::Cut {
            action: followup,
            kept: 2,
        };
        let shown = step(&space, &space.initial(), cut).unwrap();
        let expected = "followup A\n----\nspliced next-turn@0 +A\n~inserted A\n~status running\n\
            turn/start 1\nspliced next-turn@0 -1\n~claimed A 1\n\n\
            restart lose=1\n----\nturn/end 1 interrupted\n\nphase      idle\n";
        assert!(shown.starts_with(expected), "{shown}");
        assert!(shown.contains("next-turn  A\n"), "{shown}");
        assert!(shown.contains("restarts 1\n"), "{shown}");
        assert_eq!(
            action(&cut),
            "followup (next id), restart keeping 2 of its writes"
        );
        assert_eq!(action(&Move::Restart), "restart lose=0");
    }
}
