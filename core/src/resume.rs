//! Restart (SPEC §11): a crash keeps a prefix of the durable log; a new
//! agent resumes from it. [`Replay`] rebuilds what a resume needs from the
//! kept events one at a time (the pending lists, the last turn opened, the
//! open turn and step), so an engine that cuts one transition's writes
//! replays only the cut: a live agent's state already is the replay of
//! everything it logged (SPEC §7 `replay-matches`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::agent::Agent;
use crate::event::{Input, Output};
use crate::inbox::{Inbox, Splice};
use crate::message::TurnEnd;

/// One thing an engine does to an agent: feed it an input, or crash it and
/// resume from its durable log less the last `lose` events (SPEC §11). A
/// restart is not an [`Input`]: it replaces the agent, which only the engine
/// holding the log can do. In JSON an input is the input itself and a
/// restart is `{"restart":{"lose":N}}`, so traces of inputs read as before.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stimulus {
    /// A crash that keeps all but the last `lose` durable events, then a resume.
    Restart {
        /// Durable events lost (clamped to the whole log).
        lose: usize,
    },
    /// An input.
    #[serde(untagged)]
    Input(Input),
}

impl Stimulus {
    /// Where `trace`'s last restart is: past it, a run keeps no durable log
    /// for one to cut.
    pub fn last_restart(trace: &[Stimulus]) -> Option<usize> {
        trace
            .iter()
            .rposition(|stimulus| matches!(stimulus, Stimulus::Restart { .. }))
    }
}

/// A kept log that cannot be resumed, naming the event (0-based, in the
/// kept log) and what is wrong with it. A corrupt log is never repaired.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CorruptLog {
    /// The offending event's index in the kept log.
    pub index: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for CorruptLog {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "event {}: {}", self.index, self.reason)
    }
}

impl std::error::Error for CorruptLog {}

/// The largest turn number a kept log may hold: JavaScript's largest exact
/// integer (dsh writes turn numbers as JS numbers; Courier counts from 1
/// and would need 285 years at a million turns a second to get there). A
/// resumed agent numbers its turns on from the last kept one by one, so
/// from here it has 2^64 - 2^53 numbers left, which no run exhausts: the
/// core's `last_turn + 1` never overflows.
const TURN_MAX: u64 = (1 << 53) - 1;

/// The open turn of a replayed log, and its open step if one is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Open {
    turn: u64,
    step: Option<u64>,
}

/// What a replay knows of turns: all but its lists.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Turns {
    /// The turn of the last kept `turn/start` (0 if none).
    last_turn: u64,
    /// The turn of the last kept `turn/end` (`resume-renumbers` counts from it).
    last_turn_end: u64,
    open: Option<Open>,
}

impl Turns {
    /// Applies a kept event: one that opens or closes a turn or a step,
    /// or a `user/message` inside a step (a splice changes only the lists).
    fn apply(&mut self, event: &Output) -> Result<(), String> {
        match event {
            Output::Spliced(_) => Ok(()),
            Output::TurnStart { turn } => match self.open {
                // The resumed agent's next turn would have no number.
                None if *turn == u64::MAX => {
                    Err(format!("`{event}` leaves no number for the next turn"))
                }
                None if *turn > TURN_MAX => Err(format!(
                    "`{event}` is past the largest turn number a kept log may hold \
                     ({TURN_MAX}): the resumed agent would run out of numbers"
                )),
                None if *turn > self.last_turn => {
                    self.open = Some(Open {
                        turn: *turn,
                        step: None,
                    });
                    self.last_turn = *turn;
                    Ok(())
                }
                None if self.last_turn == 0 => Err(format!("`{event}`: turns number from 1")),
                None => Err(format!(
                    "`{event}` after turn {} already opened",
                    self.last_turn
                )),
                Some(open) => Err(format!("`{event}` while turn {} is open", open.turn)),
            },
            Output::StepStart { turn, step } => match &mut self.open {
                Some(open) if open.turn == *turn && open.step.is_none() => {
                    open.step = Some(*step);
                    Ok(())
                }
                _ => Err(format!("`{event}` out of place")),
            },
            Output::UserMessage(_) => match self.open {
                Some(Open { step: Some(_), .. }) => Ok(()),
                _ => Err(format!("`{event}` outside an open step")),
            },
            Output::StepEnd { turn, step } => match &mut self.open {
                Some(open) if open.turn == *turn && open.step == Some(*step) => {
                    open.step = None;
                    Ok(())
                }
                _ => Err(format!("`{event}` does not close the open step")),
            },
            Output::TurnEnd { turn, .. } => match self.open {
                Some(Open { turn: open, step }) if open == *turn && step.is_none() => {
                    self.open = None;
                    self.last_turn_end = *turn;
                    Ok(())
                }
                _ => Err(format!("`{event}` does not close the open turn")),
            },
            Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => Err(format!("`{event}` is not a durable event")),
        }
    }
}

/// How to take back one replayed event, as a restart that loses it must:
/// what the replay knew of turns before it, and the splice that puts its
/// lists back (the event's own splice turned around: its inserted messages
/// removed, the ones it removed inserted again). A runner that keeps these
/// for a log's last events resumes by undoing the lost ones, in time
/// proportional to what they moved, not to the pending lists.
#[derive(Clone, Debug)]
pub struct Undo {
    turns: Turns,
    splice: Option<Splice>,
}

/// A durable log replayed to what a resume needs.
#[derive(Clone, Debug)]
pub struct Replay {
    /// A fresh agent of the variant that resumes (carries the planted bug).
    prototype: Agent,
    inbox: Inbox,
    turns: Turns,
    /// Events applied, so an error names the index.
    events: usize,
}

impl Replay {
    /// The replay of an empty log, resuming as `prototype`'s variant.
    pub fn new(prototype: &Agent) -> Self {
        Self {
            prototype: prototype.fresh(),
            inbox: Inbox::default(),
            turns: Turns::default(),
            events: 0,
        }
    }

    /// The replay of everything `agent` has logged: its inbox, its last
    /// turn, its open turn and (while it awaits a step) open step.
    pub fn of(agent: &Agent) -> Self {
        Self::from(agent.clone())
    }

    /// Applies the next kept event: a durable output (a live one has no
    /// place in a log and is refused).
    /// Returns how to take it back; a refused event changed nothing.
    pub fn apply(&mut self, event: &Output) -> Result<Undo, CorruptLog> {
        let index = self.events;
        let turns = self.turns;
        let corrupt = |reason: String| CorruptLog { index, reason };
        // Every event goes through the turns' exhaustive match (a splice
        // leaves the turns as they are); a splice then changes the lists.
        self.turns.apply(event).map_err(corrupt)?;
        let splice = match event.splice() {
            Some(splice) => self.splice(splice).map_err(corrupt)?,
            None => None,
        };
        self.events += 1;
        Ok(Undo { turns, splice })
    }

    /// Takes back `undo`, the last event this replay applied, or the last
    /// one applied to a replay in the same state (the live agent's).
    pub fn undo(&mut self, undo: &Undo) {
        self.turns = undo.turns;
        if let Some(splice) = &undo.splice {
            self.inbox.apply(splice);
        }
        self.events = self.events.saturating_sub(1);
    }

    /// The pending lists the kept events replay to.
    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// A fork's boundary (SPEC §11: its first `session/end-seed`): the fork
    /// starts empty, so the copied lists and any open turn are forgotten; the
    /// turn numbers go on, since `last_turn` is that of the last kept
    /// `turn/start`. Only the reader knows a boundary from a resume's marker.
    pub fn end_seed(&mut self) {
        self.inbox = Inbox::default();
        self.turns.open = None;
        self.turns.last_turn_end = self.turns.last_turn;
    }

    /// The replay a fork's boundary here leaves ([`Replay::end_seed`]),
    /// built without copying the inbox it empties: a seed read both ways
    /// builds one at each of its markers (linear in the log, not markers
    /// times pending).
    pub fn forked(&self) -> Self {
        let mut forked = Self {
            prototype: self.prototype.clone(),
            inbox: Inbox::default(),
            turns: self.turns,
            events: self.events,
        };
        forked.end_seed();
        forked
    }

    /// A kept splice must apply as written: inside its list, inserting no
    /// id that is pending. Returns the splice that takes it back.
    fn splice(&mut self, splice: &Splice) -> Result<Option<Splice>, String> {
        if self.prototype.resume_skips_claims(splice) {
            return Ok(None);
        }
        let length = self.inbox.list(splice.target).len();
        // A hostile log may carry any numbers: no overflow, no panic.
        let end = splice.start.checked_add(splice.removed_count);
        if end.is_none_or(|end| end > length) {
            return Err(format!(
                "`{}` does not apply to a {} list of {length}",
                Output::Spliced(splice.clone()),
                splice.target
            ));
        }
        if let Some(id) = self.inbox.duplicate(splice) {
            return Err(format!("{id} would be pending twice"));
        }
        let removed = self.inbox.apply(splice);
        Ok(Some(Splice {
            target: splice.target,
            start: splice.start,
            removed_count: splice.inserted.len(),
            inserted: removed.into(),
            outcome: None,
        }))
    }

    /// The closers the kept log needs: `step/end` of an open step, then
    /// `turn/end interrupted` of an open turn.
    pub fn closers(&self) -> Vec<Output> {
        let Some(Open { turn, step }) = self.turns.open else {
            return Vec::new();
        };
        let step_end = step.map(|step| Output::StepEnd { turn, step });
        let turn_end = Output::TurnEnd {
            turn,
            reason: TurnEnd::Interrupted,
        };
        step_end.into_iter().chain([turn_end]).collect()
    }

    /// The resumed agent: idle, not disposed, no waiters, the replayed
    /// inbox and last turn, nothing woken (Decision 7); the closers are
    /// queued as its first outputs.
    pub fn resume(self) -> Agent {
        let closers = self.closers();
        let mut agent = self.prototype;
        let last_turn = if agent.resume_renumbers() {
            self.turns.last_turn_end
        } else {
            self.turns.last_turn
        };
        agent.restore(self.inbox, last_turn);
        if !agent.resume_no_closers() {
            for closer in closers {
                agent.emit(closer);
            }
        }
        agent.resume_wakes();
        agent
    }
}

/// The replay of everything `agent` has logged, taking its lists rather
/// than copying them: a live agent's state is the replay of its log (SPEC
/// §7 `replay-matches`), unless it runs a planted bug that breaks that.
impl From<Agent> for Replay {
    fn from(agent: Agent) -> Self {
        let open = agent.logged_open().map(|(turn, step)| Open { turn, step });
        let last_turn = agent.last_turn();
        Self {
            prototype: agent.fresh(),
            inbox: agent.state.inbox,
            turns: Turns {
                last_turn,
                last_turn_end: last_turn - u64::from(open.is_some()),
                open,
            },
            events: 0,
        }
    }
}

impl Agent {
    /// A fresh agent of this one's variant, resumed from `kept`, a prefix
    /// of the durable log since the session started (SPEC §11). Its first
    /// outputs are the closers.
    pub fn resume<'a>(
        &self,
        kept: impl IntoIterator<Item = &'a Output>,
    ) -> Result<Agent, CorruptLog> {
        let mut replay = Replay::new(self);
        for event in kept {
            replay.apply(event)?;
        }
        Ok(replay.resume())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::Outcome;
    use crate::message::{Message, Source, Target};

    fn message(id: &str) -> Message {
        Message::text(id, Source::user())
    }

    fn spliced(target: Target, start: usize, removed: usize, inserted: &[&str]) -> Output {
        Output::Spliced(Splice {
            target,
            start,
            removed_count: removed,
            inserted: inserted.iter().map(|id| message(id)).collect(),
            outcome: None,
        })
    }

    fn resume(kept: &[Output]) -> Result<Agent, CorruptLog> {
        Agent::new().resume(kept)
    }

    #[test]
    fn a_crashed_step_is_closed_and_the_lists_replayed() {
        let kept = [
            spliced(Target::NextTurn, 0, 0, &["A", "B"]),
            Output::TurnStart { turn: 1 },
            spliced(Target::NextTurn, 0, 1, &[]),
            Output::StepStart { turn: 1, step: 1 },
            Output::UserMessage(message("A")),
        ];
        let mut agent = resume(&kept).expect("a valid prefix");
        let closers: Vec<Output> = std::iter::from_fn(|| agent.poll_output()).collect();
        assert_eq!(
            closers,
            [
                Output::StepEnd { turn: 1, step: 1 },
                Output::TurnEnd {
                    turn: 1,
                    reason: TurnEnd::Interrupted
                }
            ]
        );
        let ids: Vec<&str> = agent
            .inbox()
            .list(Target::NextTurn)
            .iter()
            .map(|m| m.id().as_str())
            .collect();
        assert_eq!(ids, ["B"]);
        assert_eq!(agent.last_turn(), 1);
        assert_eq!(agent.status(), crate::agent::Status::Idle);
    }

    #[test]
    fn a_corrupt_log_is_refused_naming_the_event() {
        let a = spliced(Target::NextStep, 0, 0, &["A"]);
        let cases = [
            (
                vec![spliced(Target::NextStep, 1, 0, &["A"])],
                0,
                "does not apply",
            ),
            (vec![a.clone(), a.clone()], 1, "pending twice"),
            (
                vec![spliced(Target::NextTurn, 0, 1, &[])],
                0,
                "does not apply",
            ),
            (
                vec![Output::TurnStart { turn: 1 }, Output::TurnStart { turn: 2 }],
                1,
                "while turn 1 is open",
            ),
            (
                vec![Output::StepEnd { turn: 1, step: 1 }],
                0,
                "does not close",
            ),
            (
                vec![Output::UserMessage(message("A"))],
                0,
                "outside an open step",
            ),
            (vec![Output::Idle], 0, "not a durable event"),
            (
                vec![
                    Output::TurnStart { turn: 2 },
                    Output::TurnEnd {
                        turn: 2,
                        reason: TurnEnd::Interrupted,
                    },
                    Output::TurnStart { turn: 1 },
                ],
                2,
                "already opened",
            ),
            (
                vec![Output::TurnStart { turn: u64::MAX }],
                0,
                "no number for the next turn",
            ),
            (
                vec![Output::TurnStart { turn: 0 }],
                0,
                "`turn/start 0`: turns number from 1",
            ),
        ];
        for (kept, index, reason) in cases {
            let error = resume(&kept).expect_err("corrupt");
            assert_eq!(error.index, index, "{error}");
            assert!(error.reason.contains(reason), "{error}");
        }
    }

    /// A kept turn number so large that the resumed agent could run out
    /// of numbers is refused, not resumed (the largest it keeps still
    /// resumes): before, `turn/start` of
    /// `u64::MAX - 1` resumed, and the second turn after it overflowed
    /// `last_turn + 1` in `open_turn` (a panic in a debug build, turn 0 in
    /// a release one).
    #[test]
    fn a_turn_number_near_the_end_of_u64_is_refused() {
        let turn = u64::MAX - 1;
        let kept = [
            Output::TurnStart { turn },
            Output::TurnEnd {
                turn,
                reason: TurnEnd::Interrupted,
            },
        ];
        let largest = [Output::TurnStart { turn: TURN_MAX }];
        assert_eq!(
            resume(&largest).map(|agent| agent.last_turn()),
            Ok(TURN_MAX)
        );
        let error = resume(&kept).expect_err("no numbers for two more turns");
        assert_eq!(error.index, 0, "{error}");
        assert!(error.reason.contains("largest turn number"), "{error}");
    }

    #[test]
    fn a_canceled_splice_replays_like_any_other() {
        let mut removal = spliced(Target::NextStep, 0, 1, &[]);
        if let Output::Spliced(splice) = &mut removal {
            splice.outcome = Some(Outcome::Canceled);
        }
        let kept = [spliced(Target::NextStep, 0, 0, &["A", "B"]), removal];
        let agent = resume(&kept).expect("valid");
        let ids: Vec<&str> = agent
            .inbox()
            .list(Target::NextStep)
            .iter()
            .map(|m| m.id().as_str())
            .collect();
        assert_eq!(ids, ["B"]);
    }

    #[test]
    fn a_stimulus_reads_old_traces_of_inputs() {
        let input: Stimulus = serde_json::from_str(r#"{"input":"dispose"}"#).unwrap();
        assert_eq!(input, Stimulus::Input(Input::Dispose));
        let restart: Stimulus = serde_json::from_str(r#"{"restart":{"lose":3}}"#).unwrap();
        assert_eq!(restart, Stimulus::Restart { lose: 3 });
        assert_eq!(
            serde_json::to_string(&restart).unwrap(),
            r#"{"restart":{"lose":3}}"#
        );
    }
}
