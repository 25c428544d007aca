//! The durable log a harness keeps so it can restart losing any number of
//! events (SPEC §11), and checkpoints of the two replays a restart makes of
//! its kept prefix: the core's [`Replay`] and the ghost's [`History`].
//!
//! A restart used to replay the whole kept log twice (the core's resume and
//! the ghost's rebuild), so a session's restarts cost the log's length each.
//! Both replays are deterministic functions of the log prefix they walked
//! (and the agent's variant, fixed for a session), so a replay state kept at
//! event `n` is exactly the state a replay from the start reaches at `n`.
//! A restart starts from the last checkpoint at or before its cut and walks
//! only the events after it, leaving checkpoints on the way; the core still
//! replays every kept event through its own [`Replay::apply`], about once
//! per event instead of once per restart. A cut keeps a prefix, so
//! checkpoints up to the cut stay valid; the ones past it are dropped.

use std::hash::{Hash, Hasher};

use courier_core::{Agent, CorruptLog, Output, Replay};

use crate::history::{History, Mode};
use crate::property::Violation;

/// The fewest events walked between two checkpoints: a restart walks again
/// at most this many events it walked before (or as many as the replay
/// holds pending messages, when more), plus those logged since. A
/// checkpoint's two clones cost about as much as walking one or two events
/// of a short inbox; `courier sim --seeds 0..300` ran fewest instructions
/// at 8 (of 32, 16, 8 and 4; see BENCHMARKS.md, "Sixth pass"). They cost
/// as many messages as are pending, so checkpoints are at least that many
/// events apart: at every 8 events, a transcript of 20,000 sends and
/// 20,000 restarts held 2.4 GB of checkpoints in `courier diagram`
/// (quadratic), as the checkpoints of `courier run`'s log are spaced
/// (`TailLog` in `courier_core::transcript`).
const CHECKPOINT_EVERY: usize = 8;

/// Both replays after the first `at` events of the log.
#[derive(Clone, Debug)]
struct Checkpoint {
    at: usize,
    core: Replay,
    /// The ghost's history (a walk whose ghost broke a property keeps no
    /// later checkpoint).
    ghost: History,
}

/// The kept prefix of a restart, replayed.
pub(crate) struct Replayed {
    /// The core's replay of the kept events, ready to resume.
    pub(crate) core: Replay,
    /// The ghost's history of the kept events, or the violation it showed.
    pub(crate) ghost: Result<History, Violation>,
}

/// The durable events since the session started, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct DurableLog {
    events: Vec<Output>,
    /// Increasing `at`, all at most `events.len()`.
    checkpoints: Vec<Checkpoint>,
    /// Whether the last checkpoint is the one a walk left at its end
    /// ([`DurableLog::leave_tip`]), closer to the one before it than the
    /// spacing: the next walk's end replaces it.
    tip: bool,
}

impl DurableLog {
    /// The log's length.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// Appends durable events.
    pub(crate) fn extend<'a>(&mut self, events: impl IntoIterator<Item = &'a Output>) {
        self.events.extend(events.into_iter().cloned());
    }

    /// Cuts the log after its first `kept` events and returns the rest.
    pub(crate) fn split_off(&mut self, kept: usize) -> Vec<Output> {
        let valid = self.checkpoints.partition_point(|c| c.at <= kept);
        self.tip &= valid == self.checkpoints.len();
        self.checkpoints.truncate(valid);
        self.events.split_off(kept)
    }

    /// Replays the whole log as the core resumes it (a fresh agent of
    /// `variant`'s kind) and as the ghost rebuilds it, from the last
    /// checkpoint on. Fails with the first event the core cannot replay,
    /// as [`Agent::resume`] does.
    pub(crate) fn replay(&mut self, variant: &Agent) -> Result<Replayed, CorruptLog> {
        let (mut at, mut core, mut ghost) = match self.checkpoints.last() {
            Some(checkpoint) => (
                checkpoint.at,
                checkpoint.core.clone(),
                Ok(checkpoint.ghost.clone()),
            ),
            None => (0, Replay::new(variant), Ok(History::new(Mode::Core))),
        };
        let mut last = at;
        for event in &self.events[at..] {
            core.apply(event)?;
            if let Ok(history) = &mut ghost
                && let Err(violation) = history.observe(event)
            {
                ghost = Err(violation);
            }
            at += 1;
            if at - last >= CHECKPOINT_EVERY.max(core.inbox().len())
                && let Ok(history) = &ghost
            {
                last = at;
                self.checkpoints.push(Checkpoint {
                    at,
                    core: core.clone(),
                    ghost: history.clone(),
                });
                self.tip = false;
            }
        }
        self.leave_tip(at, &core, &ghost);
        Ok(Replayed { core, ghost })
    }

    /// Leaves the walk's end `at` as a checkpoint, so that the next restart
    /// cutting there (a run of restarts that lose nothing) clones it instead
    /// of walking the spacing again. It replaces the previous walk's end
    /// unless checkpoints were spaced since, so at most one checkpoint is
    /// closer to the one before it than the spacing, and their memory stays
    /// within about twice the log's.
    fn leave_tip(&mut self, at: usize, core: &Replay, ghost: &Result<History, Violation>) {
        let Ok(history) = ghost else {
            return;
        };
        if self.checkpoints.last().is_some_and(|last| last.at == at) {
            return;
        }
        if self.tip {
            self.checkpoints.pop();
        }
        self.checkpoints.push(Checkpoint {
            at,
            core: core.clone(),
            ghost: history.clone(),
        });
        self.tip = true;
    }
}

/// Equal logs hold equal events; the checkpoints are derived from them.
impl PartialEq for DurableLog {
    fn eq(&self, other: &Self) -> bool {
        self.events == other.events
    }
}

impl Eq for DurableLog {}

impl Hash for DurableLog {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.events.hash(hasher);
    }
}

#[cfg(test)]
mod tests {
    use courier_core::{Input, Message, Source};

    use super::*;

    /// A log of many turns, the durable outputs of a real agent.
    fn logged(turns: usize) -> (Agent, Vec<Output>) {
        let mut agent = Agent::new();
        let mut events = Vec::new();
        for turn in 0..turns {
            let message = Message::text(format!("M{turn}").as_str(), Source::user());
            let mut input = Some(Input::followup(message));
            while let Some(next) = input {
                let transition = agent.transition(next);
                events.extend(transition.outputs.into_iter().filter(|o| o.is_durable()));
                input = courier_core::transcript::default_completion(&agent);
            }
        }
        (agent, events)
    }

    /// Every cut, in an order that moves back and forth over the
    /// checkpoints, replays to what a replay from the start gives: the
    /// same resumed agent and the same ghost.
    #[test]
    fn a_checkpointed_replay_is_the_replay_from_the_start() {
        let (agent, events) = logged(12);
        assert!(events.len() > 3 * CHECKPOINT_EVERY, "{}", events.len());
        let mut log = DurableLog::default();
        log.extend(&events);
        let mut cuts: Vec<usize> = (0..=events.len()).rev().step_by(7).collect();
        cuts.extend([events.len(), 5, events.len() - 1, 2 * CHECKPOINT_EVERY]);
        for kept in cuts {
            let mut cut = log.clone();
            cut.split_off(kept);
            let replayed = cut.replay(&agent).expect("the core's log replays");
            let mut ghost = History::new(Mode::Core);
            for event in &events[..kept] {
                ghost.observe(event).expect("the core's log holds");
            }
            assert_eq!(replayed.ghost, Ok(ghost), "ghost at {kept}");
            let resumed = agent.resume(&events[..kept]).expect("replays");
            assert_eq!(replayed.core.resume(), resumed, "core at {kept}");
            // The next cut starts from this walk's checkpoints.
            log = DurableLog {
                events: events.clone(),
                checkpoints: cut.checkpoints,
                tip: cut.tip,
            };
        }
    }

    /// Checkpoints of a long inbox are as far apart as it is long: a log of
    /// sends that pile up, restarted after each of the first half and many
    /// times at its end,
    /// keeps checkpoints holding about as many messages as the log has
    /// events. At one every 8 events they held an eighth of the square
    /// (`courier diagram` of 20,000 sends and 20,000 restarts took 2.4 GB).
    #[test]
    fn checkpoints_of_a_long_inbox_hold_no_more_messages_than_the_log() {
        let agent = Agent::new();
        let mut events = Vec::new();
        let mut log = DurableLog::default();
        let held = |log: &DurableLog| -> usize {
            let pending = log.checkpoints.iter().map(|c| c.core.inbox().len());
            pending.sum()
        };
        let mut resumed = agent.clone();
        for k in 0..2000 {
            let message = Message::text(format!("M{k}").as_str(), Source::user());
            let transition = resumed.transition(Input::followup(message));
            let durable = transition.outputs.iter().filter(|o| o.is_durable());
            events.extend(durable.clone().cloned());
            log.extend(durable);
            if k < 1000 {
                resumed = log.replay(&agent).expect("replays").core.resume();
            }
            assert!(
                held(&log) <= 2 * log.len() + 64,
                "after {k}: {}",
                held(&log)
            );
        }
        for _ in 0..2000 {
            log.replay(&agent).expect("replays");
        }
        assert!(held(&log) <= 2 * log.len() + 64, "{}", held(&log));
        let last = log.replay(&agent).expect("replays").core.resume();
        assert_eq!(last, agent.resume(&events).expect("replays"));
    }

    /// A corrupt event is reported at its index in the whole log, also when
    /// the walk starts from a checkpoint after the log's start.
    #[test]
    fn a_corrupt_event_is_named_from_a_checkpoint_too() {
        let (agent, events) = logged(12);
        let mut log = DurableLog::default();
        log.extend(&events);
        log.replay(&agent).expect("replays");
        assert!(!log.checkpoints.is_empty());
        let bad = Output::TurnEnd {
            turn: 99,
            reason: courier_core::TurnEnd::Interrupted,
        };
        log.extend([&bad]);
        let corrupt = log
            .replay(&agent)
            .map(drop)
            .expect_err("turn 99 is not open");
        assert_eq!(corrupt.index, events.len());
        assert_eq!(
            Some(corrupt),
            agent.resume(&log.events).map(drop).err(),
            "as a replay from the start names it"
        );
    }
}
