//! What a transcript [`Runner`](super::Runner) keeps of its durable log so
//! that `restart lose=N` can resume from all but the last `N` events: the
//! whole log ([`WholeLog`], which the protocol server shows), or only what
//! the restarts to come can lose ([`TailLog`], so `courier run` of a million
//! commands holds the agent's state, not a million events).
//!
//! Both keep a [`Tip`]: a replay of the log (the whole log for a
//! [`TailLog`]; for a [`WholeLog`], the events up to the last restart) and
//! an [`Undo`] for each event a restart can still lose. A restart undoes
//! the lost events, in time proportional to what they moved. It used to
//! start from a copy of a replay kept at an earlier event, which cost as
//! many messages as were pending: 20,000 pending messages and then 20,000
//! `restart lose=1` took 52 s in `courier run` (0.10 s now).

use std::collections::VecDeque;

use crate::agent::Agent;
use crate::event::Output;
use crate::resume::{CorruptLog, Replay, Undo};

/// A durable log as a runner keeps it.
pub trait RunnerLog {
    /// Appends a durable event.
    fn push(&mut self, event: Output);

    /// Replaces `agent` with a fresh agent of its variant resumed from the
    /// log less its last `lose` events (clamped to what the log holds), the
    /// log cut to what it kept; when that does not replay, says why and
    /// changes nothing.
    fn resume(&mut self, agent: &mut Agent, lose: usize) -> Result<(), CorruptLog>;
}

/// The replay of a log's events so far, and how to take back its last ones.
#[derive(Clone, Debug)]
struct Tip {
    /// The replay of every event before the first that did not replay.
    replay: Replay,
    /// How to take back the last replayed events, oldest first: at most
    /// `hold` of them.
    undo: VecDeque<Undo>,
    hold: usize,
    /// The first event that did not replay, and how many were pushed after
    /// it (not replayed: every resume from a longer prefix fails on it, as a
    /// resume from the whole log would). Only a planted bug writes one.
    stuck: Option<(CorruptLog, usize)>,
}

impl Tip {
    /// An empty log of `prototype`'s variant that can take back `hold` events.
    fn new(prototype: &Agent, hold: usize) -> Self {
        Self {
            replay: Replay::new(prototype),
            undo: VecDeque::new(),
            hold,
            stuck: None,
        }
    }

    /// How many of the last events a restart can lose.
    fn held(&self) -> usize {
        self.undo.len() + self.stuck.as_ref().map_or(0, |(_, after)| after + 1)
    }

    fn push(&mut self, event: &Output) {
        if let Some((_, after)) = &mut self.stuck {
            *after += 1;
            return;
        }
        match self.replay.apply(event) {
            Ok(undo) => {
                if self.undo.len() == self.hold {
                    self.undo.pop_front();
                }
                if self.hold > 0 {
                    self.undo.push_back(undo);
                }
            }
            Err(corrupt) => self.stuck = Some((corrupt, 0)),
        }
    }

    /// [`RunnerLog::resume`] losing `lose` events (at most [`Tip::held`]).
    ///
    /// A correct agent's state is the replay of its log, so it is undone
    /// the same way and resumed: no copy of the pending lists. A planted
    /// bug may break that (`resume-skips-claims` does), so a mutant resumes
    /// from a copy of the replay.
    fn resume(&mut self, agent: &mut Agent, lose: usize) -> Result<(), CorruptLog> {
        let unreplayed = self.held() - self.undo.len();
        if let Some((corrupt, _)) = &self.stuck
            && lose < unreplayed
        {
            return Err(corrupt.clone());
        }
        self.stuck = None;
        let lost = self.undo.len() - (lose - unreplayed).min(self.undo.len());
        let lost: Vec<Undo> = self.undo.drain(lost..).rev().collect();
        for undo in &lost {
            self.replay.undo(undo);
        }
        let replay = match agent.mutant() {
            None => {
                let mut live = Replay::from(std::mem::take(agent));
                for undo in &lost {
                    live.undo(undo);
                }
                live
            }
            Some(_) => self.replay.clone(),
        };
        *agent = replay.resume();
        Ok(())
    }
}

/// Every durable event since the session started, and how to take each
/// back (the checking harness keeps one too). The tip replays the events
/// only when a restart comes (a session's events after its last restart
/// are never replayed), and a restart that keeps fewer events than it
/// loses replays the kept ones afresh instead of taking back the lost
/// ones: either way a restart costs at most about twice the smaller side
/// of its cut, and each event is taken back at most once.
#[derive(Clone, Debug)]
pub struct WholeLog {
    events: Vec<Output>,
    /// The replay of the first `replayed` events.
    tip: Tip,
    replayed: usize,
}

impl WholeLog {
    /// An empty log of `prototype`'s variant.
    pub fn new(prototype: &Agent) -> Self {
        Self {
            events: Vec::new(),
            tip: Tip::new(prototype, usize::MAX),
            replayed: 0,
        }
    }

    /// The events, in order.
    pub fn events(&self) -> &[Output] {
        &self.events
    }
}

/// Equal logs hold equal events; the replay is derived from them.
impl PartialEq for WholeLog {
    fn eq(&self, other: &Self) -> bool {
        self.events == other.events
    }
}

impl Eq for WholeLog {}

impl std::hash::Hash for WholeLog {
    fn hash<H: std::hash::Hasher>(&self, hasher: &mut H) {
        self.events.hash(hasher);
    }
}

impl RunnerLog for WholeLog {
    fn push(&mut self, event: Output) {
        self.events.push(event);
    }

    fn resume(&mut self, agent: &mut Agent, lose: usize) -> Result<(), CorruptLog> {
        let lose = lose.min(self.events.len());
        let kept = self.events.len() - lose;
        if kept < lose {
            let mut tip = Tip::new(agent, usize::MAX);
            self.events[..kept].iter().for_each(|event| tip.push(event));
            if let Some((corrupt, _)) = &tip.stuck {
                return Err(corrupt.clone());
            }
            *agent = tip.replay.clone().resume();
            self.tip = tip;
        } else {
            let unreplayed = &self.events[self.replayed..];
            unreplayed.iter().for_each(|event| self.tip.push(event));
            self.replayed = self.events.len();
            self.tip.resume(agent, lose)?;
        }
        self.replayed = kept;
        self.events.truncate(kept);
        Ok(())
    }
}

/// The replay of the log, and how to take back as many of its last events
/// as the restarts to come can lose: made for restarts that lose
/// `lose_total` events all together, it holds the last `lose_total` (a
/// restart beyond that loses only those). Made for no restart at all
/// (`None`), it keeps nothing (the replay costs a sixth of `courier run`'s
/// time on a long file), and a restart then finds no log.
#[derive(Clone, Debug)]
pub struct TailLog {
    tip: Option<Tip>,
}

impl TailLog {
    /// An empty log of `prototype`'s variant whose restarts lose at most
    /// `lose_total` events all together (`None`: there are none).
    pub(super) fn new(prototype: &Agent, lose_total: Option<usize>) -> Self {
        Self {
            tip: lose_total.map(|hold| Tip::new(prototype, hold)),
        }
    }
}

impl RunnerLog for TailLog {
    fn push(&mut self, event: Output) {
        if let Some(tip) = &mut self.tip {
            tip.push(&event);
        }
    }

    fn resume(&mut self, agent: &mut Agent, lose: usize) -> Result<(), CorruptLog> {
        let Some(tip) = &mut self.tip else {
            return Err(CorruptLog {
                index: 0,
                reason: "no log kept: the runner was made for no restart".to_owned(),
            });
        };
        let lose = lose.min(tip.held());
        tip.resume(agent, lose)
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::transcript::{Command, Runner, parse_command};

    /// A session with everything a restart can take back: sends into long
    /// pending lists, edits and splices in their middle, steps that claim
    /// batches, cancels, a run now and then that drains the backlog; and
    /// restarts: shallow, in a row, inside steps, and a few that cut back
    /// `deep` events.
    fn commands(deep: usize) -> Vec<String> {
        let mut commands = Vec::new();
        for k in 0..3000 {
            commands.push(format!("followup m{k}"));
            let extra = match k % 9 {
                0 => format!("steer s{k}"),
                1 => "pre-step pass".to_owned(),
                2 => "step tool-calls".to_owned(),
                3 => format!("replace m{} r{k}", k - 1),
                4 => format!("splice next-turn 3 2 x{k} y{k}"),
                5 => format!("remove m{}", k - 2),
                6 => "step completed".to_owned(),
                7 if k % 50 == 7 => "cancel user".to_owned(),
                _ => format!("append next-step a{k}"),
            };
            commands.push(extra);
            if k % 97 == 0 {
                commands.push(format!("restart lose={}", k % 7));
                commands.push("restart lose=2".to_owned());
            }
            if k % 400 == 399 {
                commands.push("run".to_owned());
            }
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
        for deep in [3, 1500] {
            let commands = commands(deep);
            let lose_total: usize = commands.iter().map(|command| lose(command)).sum();
            let mut to_lose = lose_total;
            let mut whole = Runner::new(Agent::new());
            let mut tail = Runner::keeping(Agent::new(), Some(to_lose));
            for command in &commands {
                let printed = whole.execute(command);
                assert_eq!(tail.execute(command), printed, "{command}");
                // What the restarts still to come lose is held, and no
                // more than they lose all together.
                to_lose -= lose(command);
                let held = tail.log.tip.as_ref().expect("a log").held();
                assert!(held >= to_lose.min(whole.log().len()), "{command}");
                assert!(held <= lose_total, "{command}");
            }
            assert_eq!(tail.agent(), whole.agent());
        }
    }

    /// At every restart of a long session (shallow and deep cuts, back and
    /// forth over them), a runner resumes as a replay of the kept log from
    /// the start does, or fails as it does: the correct design by undoing
    /// its own state, a planted bug from a copy of the log's replay.
    fn resumes_as_from_the_start(prototype: &Agent) {
        let mut runner = Runner::new(prototype.clone());
        for command in commands(1500) {
            let Ok(Command::Restart { lose }) = parse_command(&command) else {
                runner.execute(&command).expect("a command");
                continue;
            };
            let log = runner.log();
            let kept = &log[..log.len() - lose.min(log.len())];
            match runner.agent().resume(kept) {
                Ok(mut expected) => {
                    let closers = std::iter::from_fn(|| expected.poll_output());
                    let closers: Vec<String> = closers.map(|c| c.to_string()).collect();
                    assert_eq!(runner.execute(&command), Ok(closers), "{command}");
                    assert_eq!(runner.agent(), &expected, "{command}");
                }
                Err(corrupt) => {
                    let before = runner.agent().clone();
                    let printed = runner.execute(&command);
                    assert_eq!(printed, Ok(vec![format!("error: corrupt-log: {corrupt}")]));
                    assert_eq!(runner.agent(), &before, "{command}");
                }
            }
        }
    }

    #[test]
    fn a_runner_resumes_as_a_replay_of_the_kept_log_from_the_start() {
        resumes_as_from_the_start(&Agent::new());
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn a_planted_bug_resumes_as_a_replay_of_the_kept_log_from_the_start() {
        use strum::VariantArray;
        for mutant in crate::Mutant::VARIANTS {
            resumes_as_from_the_start(&Agent::with_mutant(Some(*mutant)));
        }
    }

    #[test]
    fn a_runner_made_for_no_restart_keeps_no_log() {
        let mut runner = Runner::keeping(Agent::new(), None);
        for command in ["followup A", "pre-step pass", "step completed"] {
            assert!(!runner.execute(command).unwrap().is_empty(), "{command}");
        }
        assert!(runner.log.tip.is_none());
        assert_eq!(
            runner.execute("restart"),
            Ok(vec![
                "error: corrupt-log: event 0: no log kept: the runner was made for no restart"
                    .to_owned()
            ])
        );
    }
}
