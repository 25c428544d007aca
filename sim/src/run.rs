//! One seed's run and the evaluation of a fixed trace.
//!
//! A seed decides everything: the root stream draws the swarm configuration,
//! then the seed of the workload stream. The safety phase feeds
//! `inputs_max` generated inputs, checking every property after each; the
//! liveness phase then feeds only awaited completions until the agent is
//! idle with nothing owed ([`Session::settle`]).

use courier_core::{Agent, Input};
use courier_model::Violation;

use crate::generate::Generator;
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
    /// Those inputs, when the trace was recorded (else empty).
    pub trace: Vec<Input>,
    /// The first broken property, if any.
    pub violation: Option<Violation>,
    /// The output hash, when requested (see [`crate::OutputHash`]).
    pub output_hash: Option<String>,
}

/// The swarm configuration and workload stream of `seed`.
pub fn draw(seed: u64) -> (Swarm, Generator) {
    let mut root = Prng::new(seed);
    let swarm = Swarm::draw(&mut root);
    let generator = Generator::new(root.child(), swarm);
    (swarm, generator)
}

/// Runs `seed` against a clone of `prototype`, keeping what `record` asks.
pub fn simulate(seed: u64, prototype: &Agent, record: Record<'_>) -> SeedRun {
    let (swarm, mut generator) = draw(seed);
    let mut session = Session::new(prototype, record);
    let mut violation = None;
    for _ in 0..swarm.inputs_max {
        let input = generator.next_input(session.agent());
        if let Err(broken) = session.feed(input) {
            violation = Some(broken);
            break;
        }
    }
    if violation.is_none() {
        violation = session.settle().err();
    }
    let output_hash = session.output_hash().map(|hash| hash.text());
    SeedRun {
        seed,
        swarm,
        inputs: session.inputs(),
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
    /// What was fed: the trace up to the violation, or the whole trace plus
    /// the liveness phase's completions.
    pub fed: Vec<Input>,
    /// The output hash of everything fed.
    pub output_hash: String,
}

/// Feeds `trace` to a clone of `prototype` and settles it. A report's trace
/// evaluates to the report's violation and hash; a shrinking candidate is
/// kept when it evaluates to the same property.
pub fn evaluate(prototype: &Agent, trace: &[Input]) -> Evaluation {
    let record = Record {
        trace: true,
        hash: true,
        coverage: None,
    };
    let mut session = Session::new(prototype, record);
    let mut violation = None;
    for input in trace {
        if let Err(broken) = session.feed(input.clone()) {
            violation = Some(broken);
            break;
        }
    }
    if violation.is_none() {
        violation = session.settle().err();
    }
    let output_hash = session
        .output_hash()
        .expect("evaluation hashes its outputs")
        .text();
    Evaluation {
        violation,
        fed: session.into_trace(),
        output_hash,
    }
}
