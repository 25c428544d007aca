//! One agent under the shared [`Harness`]: every input is fed, its outputs
//! drained and checked against every SPEC §7 property before the next one.
//! The same session runs a generated workload, replays a report's trace and
//! evaluates a shrinking candidate, so all three judge a trace identically.
//! A trace is a sequence of [`Stimulus`]: inputs and restarts.

use courier_check::{Fed, Harness, NoHooks, Property, Violation};
use courier_core::transcript::default_completion;
use courier_core::{Activity, Agent, Input, Output, Stimulus};

use crate::coverage::Coverage;
use crate::faults::LogShape;
use crate::hash::OutputHash;

/// The liveness phase's stall budget: completions fed since the last claim
/// or retirement. The correct core makes progress every two or three
/// completions once no client input arrives; the budget resets on progress
/// (TigerBeetle's VOPR resets its tick budget on each new reply).
pub const STALL_INPUTS_MAX: usize = 16;

/// A hard cap on the whole liveness phase, past what the messages pending
/// when it starts need (four completions each, as a transcript's `run`
/// allows: [`courier_core::transcript::run_inputs_max`]'s reasoning), so even a core that keeps
/// making "progress" forever ends in a reported failure, never a hang,
/// while a long inbox drains.
pub const LIVENESS_INPUTS_MAX: usize = 4096;

/// What a session keeps besides checking; the throughput path keeps
/// nothing but coverage.
#[derive(Default)]
pub struct Record<'a> {
    /// Keep every stimulus (reports, replay and shrinking need the trace;
    /// a sweep re-runs a failing seed to get it).
    pub trace: bool,
    /// Hash every printed output line (formats every output: slower).
    pub hash: bool,
    /// Collect the fingerprints of the states reached.
    pub coverage: Option<&'a mut Coverage>,
}

/// An agent under the shared checker, and what was fed to it.
pub struct Session<'a> {
    harness: Harness,
    /// Stimuli applied, kept only when recording the trace.
    fed: Vec<Stimulus>,
    inputs: u64,
    restarts: u64,
    /// The durable log's length and transition boundaries, where a
    /// restart may cut.
    log: LogShape,
    /// The core accepted the last input fed.
    accepted: bool,
    keep_trace: bool,
    hash: Option<OutputHash>,
    coverage: Option<&'a mut Coverage>,
}

impl<'a> Session<'a> {
    /// A session on a clone of `prototype` (the default agent or a mutant).
    pub fn new(prototype: &Agent, record: Record<'a>) -> Self {
        let harness = Harness::new(prototype.clone());
        let mut coverage = record.coverage;
        if let Some(coverage) = &mut coverage {
            coverage.visit(&harness);
        }
        Self {
            harness,
            fed: Vec::new(),
            inputs: 0,
            restarts: 0,
            log: LogShape::default(),
            accepted: false,
            keep_trace: record.trace,
            hash: record.hash.then(OutputHash::default),
            coverage,
        }
    }

    /// For a run that never restarts: the harness keeps no durable log
    /// (it cloned every durable output). A later [`Session::restart`]
    /// must lose nothing.
    pub(crate) fn keep_no_log(&mut self) {
        self.harness.keep_no_log();
    }

    /// The agent as it stands.
    pub fn agent(&self) -> &Agent {
        self.harness.agent()
    }

    /// How many inputs were fed, the violating one included.
    pub fn inputs(&self) -> u64 {
        self.inputs
    }

    /// How many restarts were applied, a violating one included.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The shape of the durable log so far.
    pub(crate) fn log(&self) -> &LogShape {
        &self.log
    }

    /// Whether the core accepted the last input fed (a refused input
    /// changed nothing).
    pub fn accepted(&self) -> bool {
        self.accepted
    }

    /// Gives up the applied stimuli (empty unless the trace was recorded).
    pub fn into_trace(self) -> Vec<Stimulus> {
        self.fed
    }

    /// The output hash so far, when it is on.
    pub fn output_hash(&self) -> Option<OutputHash> {
        self.hash
    }

    /// Feeds one input and checks the transition. Returns whether it made
    /// liveness progress (a claim or a retirement).
    pub fn feed(&mut self, input: Input) -> Result<bool, Violation> {
        let Fed {
            transition,
            violation,
        } = match &mut self.coverage {
            Some(coverage) => self.harness.feed_with(input, *coverage),
            None => self.harness.feed(input),
        };
        // The harness sweeps the core's invariants after every input in
        // debug builds; never let a release build run the simulator with
        // them off.
        if !cfg!(debug_assertions) {
            self.harness.check_invariants();
        }
        if let Some(hash) = &mut self.hash {
            hash.add(&transition.answer, &transition.outputs);
        }
        self.inputs += 1;
        self.accepted = transition.answer.is_ok();
        let progress = transition.outputs.iter().any(is_progress);
        self.log
            .wrote(transition.outputs.iter().filter(|o| o.is_durable()).count());
        if self.keep_trace {
            self.fed.push(Stimulus::Input(transition.input));
        }
        self.harness.recycle_outputs(transition.outputs);
        match violation {
            Some(violation) => Err(violation),
            None => Ok(progress),
        }
    }

    /// Crashes the agent, keeping its durable log less the last `lose`
    /// events, resumes it and checks the restart (SPEC §11). The closers it
    /// printed go into the output hash like any input's outputs.
    pub fn restart(&mut self, lose: usize) -> Result<(), Violation> {
        let restarted = match &mut self.coverage {
            Some(coverage) => self.harness.restart(lose, *coverage),
            None => self.harness.restart(lose, &mut NoHooks),
        };
        let (closers, violation) = (restarted.closers, restarted.violation);
        debug_assert_eq!(
            restarted.lose,
            lose.min(self.log.len()),
            "the shape tracks the log"
        );
        if !cfg!(debug_assertions) {
            self.harness.check_invariants();
        }
        if let Some(hash) = &mut self.hash {
            hash.add(&Ok(()), &closers);
        }
        self.restarts += 1;
        self.accepted = true;
        self.log
            .restarted(lose, closers.iter().filter(|o| o.is_durable()).count());
        if self.keep_trace {
            self.fed.push(Stimulus::Restart { lose });
        }
        violation.map_or(Ok(()), Err)
    }

    /// Applies one stimulus; an input's liveness progress is dropped.
    pub fn apply(&mut self, stimulus: Stimulus) -> Result<(), Violation> {
        match stimulus {
            Stimulus::Input(input) => self.feed(input).map(drop),
            Stimulus::Restart { lose } => self.restart(lose),
        }
    }

    /// The liveness phase: no client inputs, only the completions the driver
    /// awaits (`pass`, `completed`, as the transcript's `run` feeds them),
    /// until nothing is pending. Fails on a property, or with a liveness
    /// failure when the stall budget or the phase cap runs out.
    pub fn settle(&mut self) -> Result<(), Violation> {
        self.settle_within(STALL_INPUTS_MAX)
    }

    fn settle_within(&mut self, stall_inputs_max: usize) -> Result<(), Violation> {
        let mut stalled = 0;
        let pending = self.harness.agent().inbox().len();
        for _ in 0..LIVENESS_INPUTS_MAX.saturating_add(pending.saturating_mul(4)) {
            if self.harness.pending_reason().is_none() {
                return Ok(());
            }
            let Some(input) = default_completion(self.harness.agent()) else {
                break;
            };
            if stalled == stall_inputs_max {
                return Err(self.liveness_failure(&format!(
                    "after {stall_inputs_max} completions without a claim or a retirement"
                )));
            }
            stalled = if self.feed(input)? { 0 } else { stalled + 1 };
        }
        match self.harness.pending_reason() {
            None => Ok(()),
            Some(_) => Err(self.liveness_failure("when the liveness phase ended")),
        }
    }

    /// Names the unmet liveness goal: a lost wake when a waking send is
    /// still owed, else the agent is not quiescent.
    fn liveness_failure(&self, when: &str) -> Violation {
        let reason = self.harness.pending_reason().unwrap_or("nothing");
        let property = if self.harness.checker().owed_count() > 0 {
            Property::NoLostWakeup
        } else {
            Property::QuiescentWhenIdle
        };
        Violation {
            property,
            detail: format!("liveness: {reason} {when}"),
        }
    }
}

/// A claim or a retirement: the liveness phase's notion of progress.
fn is_progress(output: &Output) -> bool {
    matches!(
        output,
        Output::Claimed { .. }
            | Output::Status {
                status: Activity::Idle
            }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Message, Source};

    #[test]
    fn settling_resolves_every_await_and_leaves_nothing_pending() {
        let mut session = Session::new(&Agent::new(), Record::default());
        assert_eq!(session.harness.pending_reason(), None);
        let followup = Input::followup(Message::text("A", Source::user()));
        assert_eq!(
            session.feed(followup),
            Ok(true),
            "the first claim is progress"
        );
        let steer = Input::steer(Message::text("B", Source::user()));
        assert_eq!(session.feed(steer), Ok(false));
        assert_eq!(
            session.harness.pending_reason(),
            Some("a driver is still running")
        );
        assert_eq!(session.settle(), Ok(()));
        assert_eq!(session.harness.pending_reason(), None);
        assert_eq!(session.agent().status(), courier_core::Status::Idle);
        assert!(session.inputs() > 2, "settling fed completions");
        assert!(
            session.into_trace().is_empty(),
            "the trace was not recorded"
        );
    }

    /// A restart's closers are printed lines, so the hash covers them: the
    /// same inputs then a restart that closes a turn, or one that lost the
    /// turn's start and prints nothing, hash differently.
    #[test]
    fn the_output_hash_covers_a_restarts_closers() {
        let hashed = |lose| {
            let record = Record {
                trace: true,
                hash: true,
                coverage: None,
            };
            let mut session = Session::new(&Agent::new(), record);
            let followup = Input::followup(Message::text("A", Source::user()));
            session.feed(followup).expect("holds");
            session.restart(lose).expect("holds");
            assert_eq!((session.inputs(), session.restarts()), (1, 1));
            (session.output_hash(), session.into_trace())
        };
        let (closed, trace) = hashed(0);
        assert_eq!(trace.last(), Some(&Stimulus::Restart { lose: 0 }));
        let (lost_start, _) = hashed(2);
        assert_ne!(closed, lost_start);
    }

    #[test]
    fn a_stall_is_a_liveness_failure_naming_what_is_owed() {
        let mut session = Session::new(&Agent::new(), Record::default());
        let followup = Input::followup(Message::text("A", Source::user()));
        session.feed(followup).expect("holds");
        let stall = session.settle_within(0).expect_err("no budget to settle");
        assert_eq!(stall.property, Property::QuiescentWhenIdle);
        assert_eq!(
            stall.detail,
            "liveness: a driver is still running \
             after 0 completions without a claim or a retirement"
        );
        let steer = Input::steer(Message::text("B", Source::user()));
        session.feed(steer).expect("holds");
        let stall = session.settle_within(0).expect_err("no budget to settle");
        assert_eq!(stall.property, Property::NoLostWakeup, "B is owed a claim");
    }
}
