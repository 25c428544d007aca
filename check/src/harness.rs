//! The one harness every engine drives (raft-rs's `harness`, quinn's test
//! `Pair`): feed an input to an agent, drain its outputs, check the
//! transition against every property and the inbox against the ghost
//! replay, and hand the result to optional hooks (coverage, traces, rows).
//! The model checker, the simulator, the diagram tracer and the tests only
//! add a driver loop; the runtime, which owns its agent, checks what its
//! observer sees with the same [`Monitor`].

use courier_core::transcript::{self, Command, Script, Stalled, parse_command};
use courier_core::{Agent, CorruptLog, Inbox, Input, Output, Replay, Status, Stimulus, Transition};

use crate::checker::{Checker, Kept};
use crate::durable_log::{DurableLog, Replayed};
use crate::property::{Property, Violation};
use crate::sweep::Sweeps;

/// The shared checker and the first property it saw break. After that the
/// ghost no longer mirrors the core, so later transitions go unchecked.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Monitor {
    checker: Checker,
    broken: Option<Violation>,
}

impl Monitor {
    /// The monitor of a fresh agent.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks one transition and, given the core's inbox after it,
    /// `replay-matches`. Returns the violation this transition showed: the
    /// run's first, or `None` (also for every transition after the first).
    pub fn observe(&mut self, transition: &Transition, inbox: Option<&Inbox>) -> Option<Violation> {
        if self.broken.is_some() {
            return None;
        }
        let inbox_matches = |checker: &Checker| {
            inbox.map_or(Ok(()), |i| {
                checker.check_inbox_after(i, &transition.outputs)
            })
        };
        let checked = self
            .checker
            .observe(transition)
            .and_then(|()| inbox_matches(&self.checker));
        let violation = checked.err()?;
        self.broken = Some(violation.clone());
        Some(violation)
    }

    /// Checks a restart: the ghost rebuilt from `kept`, `printed` against
    /// the kept log's closers, the resumed agent idle and its inbox against
    /// the ghost replay. Returns the run's first violation, as `observe`.
    pub fn restart(
        &mut self,
        kept: Kept<'_>,
        printed: &[Output],
        resumed: &Agent,
    ) -> Option<Violation> {
        if self.broken.is_some() {
            return None;
        }
        let idle = || match resumed.status() {
            Status::Idle => Ok(()),
            Status::Running { .. } => Err(Violation {
                property: Property::ResumeCloses,
                detail: "the restart left the agent running".to_owned(),
            }),
        };
        let checked = self
            .checker
            .restart(kept, printed)
            .and_then(|()| idle())
            .and_then(|()| self.checker.check_inbox(resumed.inbox()));
        let violation = checked.err()?;
        self.broken = Some(violation.clone());
        Some(violation)
    }

    /// The ghost state.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// The first broken property, if one broke.
    pub fn broken(&self) -> Option<&Violation> {
        self.broken.as_ref()
    }

    /// Records `violation` unless one broke already.
    fn break_with(&mut self, violation: Violation) {
        self.broken.get_or_insert(violation);
    }
}

/// One fed input: the transition and the property it broke, if it was the
/// first to break one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Fed {
    /// What the core did.
    pub transition: Transition,
    /// The run's first violation, when this transition showed it.
    pub violation: Option<Violation>,
}

/// One crash and resume (SPEC §11): the durable events lost, the closers
/// the resume printed, and the property it broke, if it was the first.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Restarted {
    /// How many durable events the crash lost (clamped to the log).
    pub lose: usize,
    /// The lost events, in log order (empty for a harness without a log).
    pub lost: Vec<Output>,
    /// What the resume printed: the kept log's closers, for a correct core.
    pub closers: Vec<Output>,
    /// The run's first violation, when this restart showed it.
    pub violation: Option<Violation>,
}

/// What an engine adds to every fed input and restart: coverage, a trace,
/// diagram rows.
pub trait Hooks {
    /// Runs after each input is fed and checked.
    fn after(&mut self, harness: &Harness, fed: &Fed);

    /// Runs after each restart is checked.
    fn restarted(&mut self, harness: &Harness, restarted: &Restarted) {
        let _ = (harness, restarted);
    }
}

/// No hooks.
pub struct NoHooks;

impl Hooks for NoHooks {
    fn after(&mut self, _: &Harness, _: &Fed) {}
}

impl<F: FnMut(&Harness, &Fed)> Hooks for F {
    fn after(&mut self, harness: &Harness, fed: &Fed) {
        self(harness, fed);
    }
}

/// An agent under the shared checker.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Harness {
    agent: Agent,
    monitor: Monitor,
    /// The durable log since the session started, when the engine restarts
    /// by `lose` (the model checker keeps none: its states must not grow
    /// with their history).
    log: Option<DurableLog>,
    /// When the core's invariants are swept next (amortized: linear runs).
    sweeps: Sweeps,
}

impl Harness {
    /// A harness over `agent` (fresh: the correct design or a planted bug)
    /// that keeps the durable log, so it can restart losing any number of
    /// events ([`Harness::restart`]).
    pub fn new(agent: Agent) -> Self {
        Self {
            log: Some(DurableLog::default()),
            ..Self::bare(agent)
        }
    }

    /// A harness that keeps no log, for the model checker, whose states
    /// must not grow with their history: it restarts only with what it has
    /// seen ([`Harness::crash`]), and `restart` clamps `lose` to 0.
    pub fn bare(agent: Agent) -> Self {
        Self {
            agent,
            monitor: Monitor::new(),
            log: None,
            sweeps: Sweeps::default(),
        }
    }

    /// Keeps no durable log from now on, for an engine that will not
    /// restart by `lose` (a simulator seed whose restart rate is 0): a
    /// harness that keeps a log clones every durable output into it. A
    /// later restart clamps `lose` to 0, as [`Harness::bare`]'s does.
    pub fn keep_no_log(&mut self) {
        self.log = None;
    }

    /// The agent as it stands.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// [`Agent::check_invariants`] after an input, for a release engine
    /// that sweeps after every input (a debug build's [`Harness::feed`]
    /// already does): every input while the inbox is small, amortized over
    /// a large one (a sweep visits it all); a sweep that finds them broken
    /// panics naming the input that broke them (see `sweep.rs`).
    pub fn check_invariants(&mut self) {
        self.sweeps.after_input(&mut self.agent);
    }

    /// The checker's ghost state.
    pub fn checker(&self) -> &Checker {
        self.monitor.checker()
    }

    /// The first broken property, if one broke.
    pub fn broken(&self) -> Option<&Violation> {
        self.monitor.broken()
    }

    /// The canonical [`crate::fingerprint()`] of the agent and the ghost.
    pub fn fingerprint(&self) -> u64 {
        crate::fingerprint(&self.agent, self.checker())
    }

    /// Feeds one input and checks the transition.
    pub fn feed(&mut self, input: Input) -> Fed {
        let transition = self.agent.transition(input);
        self.sweeps.fed(&transition.input);
        // The engines sweep the core's invariants after every input, in
        // release builds too (the simulator): a large inbox amortized.
        if cfg!(debug_assertions) {
            self.sweeps.after_input(&mut self.agent);
        }
        if let Some(log) = &mut self.log {
            log.extend(transition.outputs.iter().filter(|o| o.is_durable()));
        }
        let violation = self.monitor.observe(&transition, Some(self.agent.inbox()));
        Fed {
            transition,
            violation,
        }
    }

    /// [`Harness::feed`], then `hooks`.
    pub fn feed_with(&mut self, input: Input, hooks: &mut impl Hooks) -> Fed {
        let fed = self.feed(input);
        hooks.after(self, &fed);
        fed
    }

    /// Applies one stimulus: feeds an input, or restarts.
    pub fn apply(&mut self, stimulus: Stimulus, hooks: &mut impl Hooks) -> Option<Violation> {
        match stimulus {
            Stimulus::Input(input) => self.feed_with(input, hooks).violation,
            Stimulus::Restart { lose } => self.restart(lose, hooks).violation,
        }
    }

    /// Crashes, keeping the durable log less its last `lose` events, and
    /// resumes a fresh agent of the same variant from it; checks the
    /// restart. Without a log (see [`Harness::bare`]) `lose` is clamped to 0.
    ///
    /// A restart that loses nothing keeps the whole log: a correct agent's
    /// state is its replay and, while no property broke, the checker's ghost
    /// is the ghost's, so it resumes from them as [`Harness::crash`] does,
    /// without a replay or a copy of the pending lists (which made a
    /// diagram of 20,000 sends and 20,000 restarts take 34 s). A planted
    /// bug's agent may not be its log's replay, so it is replayed.
    pub fn restart(&mut self, lose: usize, hooks: &mut impl Hooks) -> Restarted {
        let (agent, monitor) = (&self.agent, &self.monitor);
        let replays = |log: &mut DurableLog| {
            lose.min(log.len()) > 0 || agent.mutant().is_some() || monitor.broken().is_some()
        };
        let Some(mut log) = self.log.take_if(replays) else {
            return self.crash(&[], hooks);
        };
        let lost = log.split_off(log.len() - lose.min(log.len()));
        let (restarted, replays) = match log.replay(&self.agent) {
            Ok(Replayed { core, ghost }) => {
                let kept = Kept::Replayed(ghost.as_ref());
                (self.resumed(Ok((core.resume(), kept)), lost), true)
            }
            Err(corrupt) => (self.resumed(Err(corrupt), lost), false),
        };
        // A log that did not replay left the agent as it was: so is its log.
        let written = if replays {
            &restarted.closers
        } else {
            &restarted.lost
        };
        log.extend(written.iter().filter(|o| o.is_durable()));
        self.log = Some(log);
        hooks.restarted(self, &restarted);
        restarted
    }

    /// Crashes with `in_flight`, the first durable writes of a transition
    /// that never completed, kept on top of everything logged so far, and
    /// resumes. Needs no log: the agent's state is the replay of its log.
    /// With nothing in flight the resume cannot fail, so it takes the
    /// agent's lists instead of copying them.
    pub fn crash(&mut self, in_flight: &[Output], hooks: &mut impl Hooks) -> Restarted {
        let mut replay = match in_flight {
            [] => Replay::from(std::mem::take(&mut self.agent)),
            [..] => Replay::of(&self.agent),
        };
        let replayed = in_flight
            .iter()
            .try_for_each(|event| replay.apply(event).map(drop));
        let resumed = replayed.map(|()| (replay.resume(), Kept::Tail(in_flight)));
        let replayed = resumed.is_ok();
        let restarted = self.resumed(resumed, Vec::new());
        if let Some(log) = self.log.as_mut().filter(|_| replayed) {
            log.extend(in_flight);
            log.extend(restarted.closers.iter().filter(|o| o.is_durable()));
        }
        hooks.restarted(self, &restarted);
        restarted
    }

    /// Takes the resumed agent (or reports the kept log that did not
    /// replay, which only a planted bug writes) and checks the restart.
    fn resumed(
        &mut self,
        resumed: Result<(Agent, Kept<'_>), CorruptLog>,
        lost: Vec<Output>,
    ) -> Restarted {
        let lose = lost.len();
        let (mut agent, kept) = match resumed {
            Ok(resumed) => resumed,
            Err(corrupt) => {
                let violation = Violation {
                    property: Property::ReplayMatches,
                    detail: format!("the kept log does not replay: {corrupt}"),
                };
                let first = self.monitor.broken().is_none().then_some(violation.clone());
                self.monitor.break_with(violation);
                return Restarted {
                    lose,
                    lost,
                    closers: Vec::new(),
                    violation: first,
                };
            }
        };
        let closers: Vec<Output> = std::iter::from_fn(|| agent.poll_output()).collect();
        let violation = self.monitor.restart(kept, &closers, &agent);
        self.agent = agent;
        self.sweeps.replaced();
        Restarted {
            lose,
            lost,
            closers,
            violation,
        }
    }

    /// A transcript's `run` under the checker: `pass` / `completed` until
    /// idle, bounded (hooks see every completion).
    pub fn run_until_idle(&mut self, hooks: &mut impl Hooks) -> Result<(), Stalled> {
        transcript::run_until_idle(
            self,
            |harness| &harness.agent,
            |harness, input| drop(harness.feed_with(input, hooks)),
        )
    }

    /// Runs a transcript's commands under the checker: inputs are fed,
    /// `run` feeds completions until idle, queries and unparsable lines feed
    /// nothing. Fails with the line of a `run` that stalled.
    pub fn run_script(
        &mut self,
        script: &Script,
        hooks: &mut impl Hooks,
    ) -> Result<(), (usize, Stalled)> {
        for block in script.blocks() {
            match parse_command(&block.command) {
                Ok(Command::Input(input)) => drop(self.feed_with(input, hooks)),
                Ok(Command::Restart { lose }) => drop(self.restart(lose, hooks)),
                Ok(Command::Run) => self
                    .run_until_idle(hooks)
                    .map_err(|stalled| (block.line, stalled))?,
                Ok(Command::Inbox | Command::Status) | Err(_) => {}
            }
        }
        Ok(())
    }

    /// What still keeps the run from being quiescent, or `None` when it is
    /// (TigerBeetle's `pending()`): the liveness goal every engine shares.
    pub fn pending_reason(&self) -> Option<&'static str> {
        let checker = self.checker();
        if self.agent.status() != Status::Idle {
            Some("a driver is still running")
        } else if checker.owed_count() > 0 {
            Some("a waking send is still owed a claim")
        } else if self.agent.idle_waiters() > 0 {
            Some("a when-idle waiter is unresolved")
        } else if !checker.quiescent() {
            Some("the checker's ghost agent is not quiescent")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use courier_core::{Message, Source, TurnEnd};

    use super::*;

    /// A harness that keeps no log can only restart keeping everything
    /// (the closers of the open turn); one that keeps it loses what it is
    /// told, and then the turn's start with it.
    #[test]
    fn a_harness_without_a_log_restarts_losing_nothing() {
        let restarted = |keep_log: bool| {
            let mut harness = Harness::new(Agent::new());
            if !keep_log {
                harness.keep_no_log();
            }
            let followup = Input::followup(Message::text("A", Source::user()));
            assert_eq!(harness.feed(followup).violation, None);
            let restarted = harness.restart(usize::MAX, &mut NoHooks);
            assert_eq!(restarted.violation, None);
            (restarted.lose, restarted.closers)
        };
        let interrupted = Output::TurnEnd {
            turn: 1,
            reason: TurnEnd::Interrupted,
        };
        let (lose, closers) = restarted(false);
        assert_eq!(lose, 0);
        assert!(closers.ends_with(&[interrupted]), "{closers:?}");
        let (lose, closers) = restarted(true);
        assert!(lose > 0, "the whole log is lost");
        assert_eq!(closers, []);
    }
}
