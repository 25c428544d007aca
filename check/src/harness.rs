//! The one harness every engine drives (raft-rs's `harness`, quinn's test
//! `Pair`): feed an input to an agent, drain its outputs, check the
//! transition against every property and the inbox against the ghost
//! replay, and hand the result to optional hooks (coverage, traces, rows).
//! The model checker, the simulator, the diagram tracer and the tests only
//! add a driver loop; the runtime, which owns its agent, checks what its
//! observer sees with the same [`Monitor`].

use courier_core::transcript::{
    self, Command, RunnerLog, Script, Stalled, WholeLog, parse_command,
};
use courier_core::{Agent, CorruptLog, Inbox, Input, Output, Replay, Status, Stimulus, Transition};

use crate::checker::{Checker, Kept};
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
            .and_then(|()| match kept {
                // Rebuilt from the whole kept log: compared whole.
                Kept::Log(_) => self.checker.check_inbox(resumed.inbox()),
                // Carried over: compared as after a transition that wrote
                // the tail (whole while short, else the ends and the tail's
                // windows, so restarts over a long inbox stay linear).
                Kept::Tail(tail) => self.checker.check_inbox_after(resumed.inbox(), tail),
            });
        let violation = checked.err()?;
        self.broken = Some(violation.clone());
        Some(violation)
    }

    /// The ghost state.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// Takes back the last `count` durable outputs from the ghost (a
    /// restart that lost them), while no property broke (after that the
    /// ghost is not checked).
    fn undo(&mut self, count: usize) {
        if self.broken.is_none() {
            self.checker.undo(count);
        }
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
    log: Option<WholeLog>,
    /// When the core's invariants are swept next (amortized: linear runs).
    sweeps: Sweeps,
}

impl Harness {
    /// A harness over `agent` (fresh: the correct design or a planted bug)
    /// that keeps the durable log, so it can restart losing any number of
    /// events ([`Harness::restart`]).
    pub fn new(agent: Agent) -> Self {
        let mut monitor = Monitor::new();
        monitor.checker.record_undo();
        Self {
            log: Some(WholeLog::new(&agent)),
            monitor,
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
        self.monitor.checker.stop_recording_undo();
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
            for output in transition.outputs.iter().filter(|o| o.is_durable()) {
                log.push(output.clone());
            }
        }
        let violation = self.monitor.observe(&transition, Some(self.agent.inbox()));
        Fed {
            transition,
            violation,
        }
    }

    /// Hands a fed transition's outputs back to the agent, whose next
    /// transition queues into their buffer ([`Agent::recycle_outputs`]).
    pub fn recycle_outputs(&mut self, outputs: Vec<Output>) {
        self.agent.recycle_outputs(outputs);
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
    /// The log takes back the lost events from the agent (see
    /// `courier_core::WholeLog`) and the checker's ghost takes them back
    /// from itself (see `History::undo`), in time proportional to what they
    /// moved: a restart replayed the kept log from a copy of a replay of one
    /// of its prefixes, which cost as many messages as were pending (a
    /// diagram of 20,000 sends and then 20,000 `restart lose=1` took 56 s).
    pub fn restart(&mut self, lose: usize, hooks: &mut impl Hooks) -> Restarted {
        let Some(mut log) = self.log.take() else {
            return self.crash(&[], hooks);
        };
        let events = log.events();
        let lost = events[events.len() - lose.min(events.len())..].to_vec();
        let restarted = match log.resume(&mut self.agent, lost.len()) {
            Ok(()) => {
                self.monitor.undo(lost.len());
                let agent = std::mem::take(&mut self.agent);
                let restarted = self.resumed(Ok((agent, Kept::Tail(&[]))), lost);
                for closer in restarted.closers.iter().filter(|o| o.is_durable()) {
                    log.push(closer.clone());
                }
                restarted
            }
            // A log that did not replay left the agent as it was: so is its log.
            Err(corrupt) => self.resumed(Err(corrupt), lost),
        };
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
            let closers = restarted.closers.iter().filter(|o| o.is_durable());
            for event in in_flight.iter().chain(closers) {
                log.push(event.clone());
            }
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
        self.sweeps.restarted();
        if cfg!(debug_assertions) {
            self.sweeps.after_input(&mut self.agent);
        }
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
    use crate::history::{History, Mode};

    /// A command of a long session: sends that pile up in long lists,
    /// edits and splices in their middle, steps that claim, cancels that
    /// keep the inbox, and restarts losing from nothing to a deep cut.
    fn command(k: u64, draw: &mut impl FnMut(u64) -> u64) -> String {
        if k % 1000 == 999 {
            return "restart lose=2500".to_owned();
        }
        match draw(40) {
            0..16 => format!("followup m{k}"),
            16..18 => format!("steer s{k}"),
            18..22 => "pre-step pass".to_owned(),
            22..26 => "step tool-calls".to_owned(),
            26..28 => "step completed".to_owned(),
            28..30 => format!("replace m{} r{k}", draw(k + 1)),
            30..32 => format!("splice next-turn {} 1 x{k} y{k}", draw(300)),
            32 => "cancel user keep-inbox".to_owned(),
            33..37 => format!("remove m{}", draw(k + 1)),
            _ => format!("restart lose={}", [0, 0, 1, 2, 5, 40][draw(6) as usize]),
        }
    }

    /// At every restart of a long session, the harness's agent and ghost
    /// are what a replay of the kept log from the start gives (the log and
    /// the ghost take back the lost events instead of replaying).
    #[test]
    fn a_restart_leaves_what_a_replay_of_the_kept_log_gives() {
        let mut state = 7_u64;
        let mut draw = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % n
        };
        let mut harness = Harness::new(Agent::new());
        let (mut restarts, mut longest) = (0, 0);
        for k in 0..8000 {
            let line = command(k, &mut draw);
            let lose = match parse_command(&line) {
                Ok(Command::Input(input)) => {
                    assert_eq!(harness.feed(input).violation, None, "{line}");
                    longest = longest.max(harness.agent.inbox().len());
                    continue;
                }
                Ok(Command::Restart { lose }) => lose,
                _ => panic!("{line}"),
            };
            let events = harness.log.as_ref().expect("a log").events();
            let kept = &events[..events.len() - lose.min(events.len())];
            let mut expected = harness.agent.resume(kept).expect("the log replays");
            let mut ghost = History::new(Mode::Core);
            kept.iter()
                .for_each(|event| drop(ghost.observe(event).expect("a valid log")));
            let restarted = harness.restart(lose, &mut NoHooks);
            assert_eq!(restarted.violation, None, "{line}");
            let closers: Vec<Output> = std::iter::from_fn(|| expected.poll_output()).collect();
            assert_eq!(restarted.closers, closers, "{line}");
            closers
                .iter()
                .for_each(|closer| drop(ghost.observe(closer).expect("closes")));
            assert_eq!(harness.agent, expected, "{line}");
            assert_eq!(harness.checker().history(), &ghost, "{line}");
            restarts += 1;
        }
        assert!(
            restarts > 300 && longest > 200,
            "{restarts} restarts, {longest} pending"
        );
    }

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
