//! What a transcript [`Runner`](super::Runner) keeps of its durable log so
//! that `restart lose=N` can resume from all but the last `N` events: the
//! whole log ([`WholeLog`], which the protocol server shows), or only the
//! events a restart can still lose, after a replay of everything before them
//! ([`TailLog`], so `courier run` of a million commands holds the agent's
//! state, not a million events).

use std::collections::VecDeque;

use crate::agent::Agent;
use crate::event::Output;
use crate::resume::{CorruptLog, Replay};

/// A durable log as a runner keeps it.
pub trait RunnerLog {
    /// Appends a durable event.
    fn push(&mut self, event: Output);

    /// A fresh agent of `agent`'s variant resumed from the log less its
    /// last `lose` events (clamped to the whole log), the log cut to what
    /// it kept; when that does not replay, why, and the log unchanged.
    fn resume(&mut self, agent: &Agent, lose: usize) -> Result<Agent, CorruptLog>;
}

/// Every durable event since the session started, and replays of some of
/// its prefixes (spaced as [`TailLog`]'s checkpoints), so a restart walks
/// only the events after the last one at or before its cut. Replaying the
/// whole log at every restart made `courier serve-protocol` quadratic: 20,000
/// sends, each with its turn, then 20,000 restarts took 37 s, with nothing
/// pending.
#[derive(Clone, Default, Debug)]
pub struct WholeLog {
    pub(super) events: Vec<Output>,
    /// Replays of prefixes, by increasing length, all at most `events.len()`.
    checkpoints: Vec<(usize, Replay)>,
}

impl RunnerLog for WholeLog {
    fn push(&mut self, event: Output) {
        self.events.push(event);
    }

    fn resume(&mut self, agent: &Agent, lose: usize) -> Result<Agent, CorruptLog> {
        let kept = self.events.len() - lose.min(self.events.len());
        let valid = self.checkpoints.partition_point(|(at, _)| *at <= kept);
        self.checkpoints.truncate(valid);
        let (at, mut replay) = match self.checkpoints.last() {
            Some((at, replay)) => (*at, replay.clone()),
            None => (0, Replay::new(agent)),
        };
        walk(
            &mut replay,
            at,
            &self.events[at..kept],
            &mut self.checkpoints,
        )?;
        self.events.truncate(kept);
        Ok(replay.resume())
    }
}

/// Applies `events` to `replay`, the replay of the log's first `at` events,
/// leaving a checkpoint whenever it has walked at least as many events
/// since the last as it holds pending messages (and [`CHECKPOINT_MIN`]), so
/// the checkpoints' clones cost no more than the walks between them.
fn walk<'a>(
    replay: &mut Replay,
    mut at: usize,
    events: impl IntoIterator<Item = &'a Output>,
    checkpoints: &mut Vec<(usize, Replay)>,
) -> Result<(), CorruptLog> {
    let mut last = at;
    for event in events {
        replay.apply(event)?;
        at += 1;
        if at - last >= replay.inbox().len().max(CHECKPOINT_MIN) {
            checkpoints.push((at, replay.clone()));
            last = at;
        }
    }
    Ok(())
}

/// The fewest events a [`TailLog`] holds before it replays the older ones
/// (so a log that no restart cuts deeply is not replayed event by event).
const TAIL_MIN: usize = 1024;

/// The last events of the log and the replay of the events before them (or
/// the first of those that does not replay: every resume from a longer
/// prefix fails on it too, as a resume from the whole log would). Memory:
/// the replayed pending lists plus at most twice the tail.
///
/// Made for restarts that lose `lose_total` events all together: the
/// tail is never cut below `lose_total` events by replaying, and each
/// restart cuts it by no more than it loses, so what the restarts still to
/// come lose is always held (a restart beyond that loses the tail only).
/// Made for no restart at all (`None`), it keeps nothing (the replay costs
/// a sixth of `courier run`'s time on a long file), and a restart then
/// finds no log.
///
/// A restart starts from the last checkpoint at or before its cut (the
/// replay of a prefix, left by an earlier restart's walk), not from the
/// start of the tail: a transcript of many shallow restarts walks each
/// event about once, not once per restart. Checkpoints are at least as far
/// apart as the replay holds pending messages, so their clones cost no
/// more than the walks between them, and they hold no more than the tail.
#[derive(Clone, Debug)]
pub struct TailLog {
    replayed: Result<Replay, CorruptLog>,
    /// How many events `replayed` holds.
    replayed_len: usize,
    tail: VecDeque<Output>,
    lose_total: Option<usize>,
    /// Replays of longer prefixes, by increasing length (counted from the
    /// session's start), all within `replayed_len..=replayed_len + tail.len()`.
    checkpoints: Vec<(usize, Replay)>,
}

/// The fewest events between two checkpoints.
const CHECKPOINT_MIN: usize = 64;

impl TailLog {
    /// An empty log of `prototype`'s variant whose restarts lose at most
    /// `lose_total` events all together (`None`: there are none).
    pub(super) fn new(prototype: &Agent, lose_total: Option<usize>) -> Self {
        Self {
            replayed: Ok(Replay::new(prototype)),
            replayed_len: 0,
            tail: VecDeque::new(),
            lose_total,
            checkpoints: Vec::new(),
        }
    }
}

impl RunnerLog for TailLog {
    fn push(&mut self, event: Output) {
        let Some(lose_total) = self.lose_total else {
            return;
        };
        self.tail.push_back(event);
        let keep = lose_total.max(TAIL_MIN);
        if self.tail.len() < keep.saturating_mul(2) {
            return;
        }
        // Amortised: half the tail goes into the replay at once.
        let older = self.tail.len() - keep;
        for event in self.tail.drain(..older) {
            if let Ok(replay) = &mut self.replayed
                && let Err(corrupt) = replay.apply(&event)
            {
                self.replayed = Err(corrupt);
            }
        }
        self.replayed_len += older;
        let gone = self
            .checkpoints
            .partition_point(|(at, _)| *at < self.replayed_len);
        self.checkpoints.drain(..gone);
    }

    /// A `lose` beyond the tail (past the `lose_total` it was made with,
    /// once older events were replayed) loses the whole tail: the events
    /// before it are no longer held.
    fn resume(&mut self, _agent: &Agent, lose: usize) -> Result<Agent, CorruptLog> {
        if self.lose_total.is_none() {
            return Err(CorruptLog {
                index: 0,
                reason: "no log kept: the runner was made for no restart".to_owned(),
            });
        }
        let kept = self.tail.len() - lose.min(self.tail.len());
        let cut = self.replayed_len + kept;
        let valid = self.checkpoints.partition_point(|(at, _)| *at <= cut);
        self.checkpoints.truncate(valid);
        let (at, mut replay) = match self.checkpoints.last() {
            Some((at, replay)) => (*at, replay.clone()),
            None => (self.replayed_len, self.replayed.clone()?),
        };
        let events = self.tail.range(at - self.replayed_len..kept);
        walk(&mut replay, at, events, &mut self.checkpoints)?;
        self.tail.truncate(kept);
        Ok(replay.resume())
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::transcript::{Command, Runner, parse_command};

    /// A turn per message, each logging seven events, shallow restarts
    /// (some inside a step, some in a row) and a few that cut back `deep`
    /// events, long after the oldest events went into the replay.
    fn commands(deep: usize) -> Vec<String> {
        let mut commands = Vec::new();
        for k in 0..3 * super::TAIL_MIN {
            commands.push(format!("followup m{k}"));
            commands.push("pre-step pass".to_owned());
            if k % 97 == 0 {
                commands.push(format!("restart lose={}", k % 7));
                commands.push("restart lose=2".to_owned());
            }
            commands.push("step completed".to_owned());
            if k % 701 == 700 {
                commands.push(format!("restart lose={deep}"));
                commands.push("inbox".to_owned());
            }
        }
        commands
    }

    fn lose(command: &str) -> usize {
        match parse_command(command) {
            Ok(Command::Restart { lose }) => lose,
            _ => 0,
        }
    }

    #[test]
    fn a_runner_keeping_the_tail_prints_what_one_keeping_the_whole_log_does() {
        for deep in [3, super::TAIL_MIN + 5] {
            let commands = commands(deep);
            let lose_total: usize = commands.iter().map(|command| lose(command)).sum();
            let mut to_lose = lose_total;
            let mut whole = Runner::new(Agent::new());
            let mut tail = Runner::keeping(Agent::new(), Some(to_lose));
            for command in &commands {
                let printed = whole.execute(command);
                assert_eq!(tail.execute(command), printed, "{command}");
                // Once older events are replayed, what the restarts still
                // to come lose is held.
                to_lose -= lose(command);
                let log = &tail.log;
                assert!(log.replayed_len == 0 || log.tail.len() >= to_lose);
            }
            assert!(tail.log.replayed_len > 0);
            // The tail holds at most twice what the restarts lose.
            let (held, replayed) = (tail.log.tail.len(), tail.log.replayed_len);
            assert!(held < 2 * lose_total.max(super::TAIL_MIN), "{held}");
            assert_eq!(held + replayed, whole.log().len());
            assert_eq!(tail.agent(), whole.agent());
        }
    }

    /// A runner keeping the whole log resumes from its checkpoints as a
    /// replay of the kept log from the start does, at every restart of a
    /// long session (shallow and deep cuts, back and forth over them); it
    /// replayed the whole log at every restart, which `courier
    /// serve-protocol` did for each `{"restart":...}` line.
    #[test]
    fn a_runner_keeping_the_whole_log_resumes_from_checkpoints_as_from_the_start() {
        let mut runner = Runner::new(Agent::new());
        for command in commands(super::TAIL_MIN + 5) {
            if let Ok(Command::Restart { lose }) = parse_command(&command) {
                let log = runner.log();
                let kept = &log[..log.len() - lose.min(log.len())];
                let mut expected = runner.agent().resume(kept).expect("replays");
                let closers = std::iter::from_fn(|| expected.poll_output());
                let closers: Vec<String> = closers.map(|closer| closer.to_string()).collect();
                assert_eq!(runner.execute(&command), Ok(closers), "{command}");
                assert_eq!(runner.agent(), &expected, "{command}");
            } else {
                runner.execute(&command).expect("a command");
            }
        }
        assert!(!runner.log.checkpoints.is_empty());
    }

    #[test]
    fn a_runner_made_for_no_restart_keeps_no_log() {
        let mut runner = Runner::keeping(Agent::new(), None);
        for command in ["followup A", "pre-step pass", "step completed"] {
            assert!(!runner.execute(command).unwrap().is_empty(), "{command}");
        }
        assert!(runner.log.tail.is_empty());
        assert_eq!(
            runner.execute("restart"),
            Ok(vec![
                "error: corrupt-log: event 0: no log kept: the runner was made for no restart"
                    .to_owned()
            ])
        );
    }
}
