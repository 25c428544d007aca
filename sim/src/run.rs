//! One seed's run and the evaluation of a fixed trace.
//!
//! A seed decides everything: the root stream draws the swarm configuration,
//! then the seed of the workload stream. The safety phase feeds
//! `inputs_max` generated inputs (fewer when a bounded workload runs out of
//! enabled actions), checking every property after each, and restarts the
//! agent at the swarm's rate (SPEC §11, see `faults.rs`); the
//! liveness phase (never restarted) then feeds only awaited completions until the agent is
//! idle with nothing owed ([`Session::settle`]).

use courier_check::Violation;
use courier_core::{Agent, Input, Stimulus};
use courier_model::{Bounds, Space};

use crate::bounded::Bounded;
use crate::faults::Faults;
use crate::generate::Generator;
use crate::hash::OutputHash;
use crate::prng::Prng;
use crate::session::{Record, Session};
use crate::swarm::Swarm;

/// What one seed did.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// The configuration it drew.
    pub swarm: Swarm,
    /// How many inputs were fed, both phases, up to and including a
    /// violating one.
    pub inputs: u64,
    /// How many restarts were applied, a violating one included.
    pub restarts: u64,
    /// The inputs and restarts in order, when the trace was recorded
    /// (else empty).
    pub trace: Vec<Stimulus>,
    /// The first broken property, if any.
    pub violation: Option<Violation>,
    /// The output hash, when requested (see [`crate::OutputHash`]).
    pub output_hash: Option<OutputHash>,
}

/// Whether a run restarts the agent in its safety phase.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Restarts {
    /// At the rate the seed's swarm draws (the default).
    #[default]
    Drawn,
    /// Never (`--no-restarts`): the swarm's rate reads 0, every other
    /// knob and the input stream are the seed's own.
    Off,
}

/// The swarm configuration and workload stream of `seed`.
pub fn draw(seed: u64, restarts: Restarts) -> (Swarm, Generator) {
    let (swarm, stream, _) = root(seed, restarts);
    (swarm, Generator::new(stream, swarm))
}

/// The swarm configuration `seed` draws, the seed of its workload stream,
/// and its fault stream (separate, so restarts draw nothing from inputs).
fn root(seed: u64, restarts: Restarts) -> (Swarm, Prng, Faults) {
    let mut root = Prng::new(seed);
    let swarm = Swarm::draw(&mut root);
    let stream = root.child();
    let mut fault_stream = root.child();
    let swarm = match restarts {
        Restarts::Drawn => swarm.with_restart_rate(&mut fault_stream),
        Restarts::Off => swarm,
    };
    let faults = Faults::new(fault_stream, swarm.restart_percent);
    (swarm, stream, faults)
}

/// Where a run's safety-phase inputs come from.
pub(crate) trait Workload {
    /// The next input for `agent`; `None` ends the safety phase early.
    fn draw(&mut self, agent: &Agent) -> Option<Input>;

    /// The core accepted the last input drawn.
    fn accepted(&mut self) {}
}

/// The simulator's own generator.
impl Workload for Generator {
    fn draw(&mut self, agent: &Agent) -> Option<Input> {
        Some(self.next_input(agent))
    }
}

/// Runs `seed` against a clone of `prototype`, keeping what `record` asks.
pub fn simulate(seed: u64, restarts: Restarts, prototype: &Agent, record: Record<'_>) -> SeedRun {
    let (swarm, stream, faults) = root(seed, restarts);
    let generator = Generator::new(stream, swarm);
    run(seed, swarm, prototype, record, generator, faults)
}

/// Runs `seed` as [`simulate`] does, with the same swarm configuration,
/// but draws only inputs the model checker explores within `bounds`, so
/// every state reached is in the checker's set at `bounds` (see
/// `courier_model::reachable_fingerprints`). It never restarts: that set is
/// the checker's space without restarts (the model's restarts crash at the
/// end of its log or inside one input's writes, never the simulator's cut
/// anywhere in the log, so a restarted seed could leave the set).
pub fn simulate_within(
    seed: u64,
    bounds: Bounds,
    prototype: &Agent,
    record: Record<'_>,
) -> SeedRun {
    let (swarm, stream, faults) = root(seed, Restarts::Off);
    let space = Space::new(bounds, prototype.clone(), true);
    let workload = Bounded::new(stream, swarm, space);
    run(seed, swarm, prototype, record, workload, faults)
}

/// The safety phase on `workload`, then the liveness phase.
fn run(
    seed: u64,
    swarm: Swarm,
    prototype: &Agent,
    record: Record<'_>,
    mut workload: impl Workload,
    mut faults: Faults,
) -> SeedRun {
    let mut session = Session::new(prototype, record);
    if faults.never() {
        session.keep_no_log();
    }
    let mut violation = None;
    for _ in 0..swarm.inputs_max {
        if let Some(lose) = faults.restart(session.log()) {
            if let Err(broken) = session.restart(lose) {
                violation = Some(broken);
                break;
            }
            continue;
        }
        let Some(input) = workload.draw(session.agent()) else {
            break;
        };
        if let Err(broken) = session.feed(input) {
            violation = Some(broken);
            break;
        }
        if session.accepted() {
            workload.accepted();
        }
    }
    if violation.is_none() {
        violation = session.settle().err();
    }
    let output_hash = session.output_hash();
    SeedRun {
        seed,
        swarm,
        inputs: session.inputs(),
        restarts: session.restarts(),
        trace: session.into_trace(),
        violation,
        output_hash,
    }
}

/// A fixed trace judged as a run: fed in order until a property breaks,
/// then settled as the liveness phase.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Evaluation {
    /// The first broken property, if any.
    pub violation: Option<Violation>,
    /// What was applied: the trace up to the violation, or the whole trace
    /// plus the liveness phase's completions.
    pub fed: Vec<Stimulus>,
    /// The output hash of everything fed.
    pub output_hash: OutputHash,
}

/// Feeds `trace` to a clone of `prototype` and settles it. A report's trace
/// evaluates to the report's violation and hash; a shrinking candidate is
/// kept when it evaluates to the same property (see `judge`).
pub fn evaluate(prototype: &Agent, trace: &[Stimulus]) -> Evaluation {
    let record = Record {
        trace: true,
        hash: true,
        coverage: None,
    };
    let (session, violation) = feed_and_settle(Session::new(prototype, record), trace);
    let output_hash = session
        .output_hash()
        .expect("evaluation hashes its outputs");
    Evaluation {
        violation,
        fed: session.into_trace(),
        output_hash,
    }
}

/// [`evaluate`] without the output hash, which formats every output (an
/// eighth of a shrink's time on a million stimuli): the first broken
/// property, if any, and what was fed.
pub(crate) fn judge(prototype: &Agent, trace: &[Stimulus]) -> (Option<Violation>, Vec<Stimulus>) {
    let record = Record {
        trace: true,
        hash: false,
        coverage: None,
    };
    let (session, violation) = feed_and_settle(Session::new(prototype, record), trace);
    (violation, session.into_trace())
}

/// Applies `trace` in order until a property breaks, then settles as the
/// liveness phase does; the session and the first broken property. Past
/// the trace's last restart nothing reads the durable log a restart would
/// cut, so none is kept from there on (most of a long replay's memory).
fn feed_and_settle<'a>(
    mut session: Session<'a>,
    trace: &[Stimulus],
) -> (Session<'a>, Option<Violation>) {
    let mut violation = None;
    let last_restart = Stimulus::last_restart(trace);
    if last_restart.is_none() {
        session.keep_no_log();
    }
    for (at, stimulus) in trace.iter().enumerate() {
        if let Err(broken) = session.apply(stimulus.clone()) {
            violation = Some(broken);
            break;
        }
        if Some(at) == last_restart {
            session.keep_no_log();
        }
    }
    if violation.is_none() {
        violation = session.settle().err();
    }
    (session, violation)
}
