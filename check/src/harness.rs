//! The one harness every engine drives (raft-rs's `harness`, quinn's test
//! `Pair`): feed an input to an agent, drain its outputs, check the
//! transition against every property and the inbox against the ghost
//! replay, and hand the result to optional hooks (coverage, traces, rows).
//! The model checker, the simulator, the diagram tracer and the tests only
//! add a driver loop; the runtime, which owns its agent, checks what its
//! observer sees with the same [`Monitor`].

use courier_core::transcript::{self, Command, Script, Stalled, parse_command};
use courier_core::{Agent, Inbox, Input, Status, Transition};

use crate::checker::Checker;
use crate::property::Violation;

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
        let inbox_matches = |checker: &Checker| inbox.map_or(Ok(()), |i| checker.check_inbox(i));
        let checked = self
            .checker
            .observe(transition)
            .and_then(|()| inbox_matches(&self.checker));
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
}

/// One fed input: the transition and the property it broke, if it was the
/// first to break one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Step {
    /// What the core did.
    pub transition: Transition,
    /// The run's first violation, when this transition showed it.
    pub violation: Option<Violation>,
}

/// What an engine adds to every fed input: coverage, a trace, diagram rows.
pub trait Hooks {
    /// Runs after each input is fed and checked.
    fn after(&mut self, harness: &Harness, step: &Step);
}

/// No hooks.
pub struct NoHooks;

impl Hooks for NoHooks {
    fn after(&mut self, _: &Harness, _: &Step) {}
}

impl<F: FnMut(&Harness, &Step)> Hooks for F {
    fn after(&mut self, harness: &Harness, step: &Step) {
        self(harness, step);
    }
}

/// An agent under the shared checker.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Harness {
    agent: Agent,
    monitor: Monitor,
}

impl Harness {
    /// A harness over `agent` (fresh: the correct design or a planted bug).
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            monitor: Monitor::new(),
        }
    }

    /// The agent as it stands.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The checker's ghost state.
    pub fn checker(&self) -> &Checker {
        self.monitor.checker()
    }

    /// The first broken property, if one broke.
    pub fn broken(&self) -> Option<&Violation> {
        self.monitor.broken()
    }

    /// The canonical [`crate::fingerprint`] of the agent and the ghost.
    pub fn fingerprint(&self) -> u64 {
        crate::fingerprint(&self.agent, self.checker())
    }

    /// Feeds one input and checks the transition.
    pub fn feed(&mut self, input: Input) -> Step {
        let transition = self.agent.transition(input);
        let violation = self.monitor.observe(&transition, Some(self.agent.inbox()));
        Step {
            transition,
            violation,
        }
    }

    /// [`Harness::feed`], then `hooks`.
    pub fn feed_with(&mut self, input: Input, hooks: &mut impl Hooks) -> Step {
        let step = self.feed(input);
        hooks.after(self, &step);
        step
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
