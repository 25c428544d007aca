//! The model checker's speed (issue 7) in states per second, at the bound
//! `courier check` explores by default without restarts (`Bounds::default()`
//! with `restarts: 0`, symmetry on: the bare-core baseline below replays
//! inputs, and a restart is none).
//! A state count alone says little, so the same run times the same
//! exploration without parts of the checker:
//! - `check/threads-1` and `check/threads-2`: `courier_model::check`, the
//!   function `courier check` calls (stateright's depth-first search, then
//!   the verdict);
//! - `bfs`: `courier_model::shortest_counterexample` over the same space,
//!   which, when nothing breaks, visits every state with a plain
//!   single-threaded breadth-first search and a `HashSet` of state hashes:
//!   the same transitions, property checks and state hashes without
//!   stateright;
//! - `bare-core`: only the core's share of that work, every transition the
//!   exploration computes (including the refused and no-op ones it drops) as
//!   clone the agent, `handle` the input, drain and drop the outputs: no
//!   ghost checker, no vacuity tags, no hashing, no visited set.
//!
//! Every function sets `Throughput::Elements` to the checker's total state
//! count (states generated, revisits included: what `courier check` reports
//! as states/s), so the `thrpt` lines compare directly; only `check/*`'s is
//! a true state rate. Run: `cargo bench --bench check`.

mod clock;

use std::collections::{HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::hint::black_box;
use std::time::Duration;

use courier_core::{Agent, Input};
use courier_model::{Bounds, Move, Space, State, Verdict, check, shortest_counterexample};
use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

/// The bound `courier check` uses without arguments, less its restarts,
/// with symmetry on.
fn space() -> Space {
    Space::new(Bounds::default(), Agent::new(), true).without_restarts()
}

/// Every core transition the exploration computes, recorded once outside
/// the measurement: the agent of each distinct state, and each enabled
/// action's input with the index of the agent it applies to.
struct Transitions {
    agents: Vec<Agent>,
    inputs: Vec<(usize, Input)>,
    /// States generated, as stateright counts them: the initial state plus
    /// every transition that leads to a state (revisits included).
    generated: usize,
    /// Distinct states.
    unique: usize,
}

/// A breadth-first walk of `space` that carries, beside each state, a bare
/// agent fed the same inputs: the core is deterministic, so it is the
/// state's agent (which the model does not expose).
fn transitions(space: &Space) -> Transitions {
    let initial = space.initial();
    let mut seen = HashSet::from([state_hash(&initial)]);
    let mut frontier = VecDeque::from([(initial, space.fresh_agent())]);
    let mut recorded = Transitions {
        agents: Vec::new(),
        inputs: Vec::new(),
        generated: 1,
        unique: 1,
    };
    let mut actions = Vec::new();
    while let Some((state, agent)) = frontier.pop_front() {
        let index = recorded.agents.len();
        recorded.agents.push(agent.clone());
        space.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let input = match action {
                Move::Input(action) => space.input(&state, action),
                Move::Restart | Move::Cut { .. } => unreachable!("the space has no restarts"),
            };
            recorded.inputs.push((index, input.clone()));
            let Some(next) = space.next(&state, action) else {
                continue;
            };
            recorded.generated += 1;
            if !seen.insert(state_hash(&next)) {
                continue;
            }
            recorded.unique += 1;
            let mut next_agent = agent.clone();
            let accepted = next_agent.handle(input);
            assert!(accepted.is_ok(), "a transition to a new state is accepted");
            while next_agent.poll_output().is_some() {}
            frontier.push_back((next, next_agent));
        }
    }
    recorded
}

fn state_hash(state: &State) -> u64 {
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// The core's share: each recorded transition on a fresh clone of its agent.
fn bare_core(transitions: &Transitions) {
    for (index, input) in &transitions.inputs {
        let mut agent = transitions.agents[*index].clone();
        let answer = agent.handle(input.clone());
        black_box(answer.is_ok());
        while let Some(output) = agent.poll_output() {
            black_box(output);
        }
        black_box(&agent);
    }
}

fn bench<M: Measurement>(criterion: &mut Criterion<M>) {
    let space = space();
    let recorded = transitions(&space);
    // The walk above must be the exploration `check` does, or the baseline
    // times different work.
    let checked = check(space.clone(), 1, |_| {});
    assert_eq!(checked.verdict, Verdict::Holds);
    assert_eq!(checked.counts.total, recorded.generated);
    assert_eq!(checked.counts.unique, recorded.unique);
    assert!(shortest_counterexample(&space).is_none());

    let mut group = clock::group(criterion, "check");
    // Each iteration is a whole exploration (about 0.1 s), so a few flat
    // samples suffice; the four functions finish in well under a minute.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(checked.counts.total as u64));
    for threads in [1, 2] {
        group.bench_function(
            BenchmarkId::new("check", format!("threads-{threads}")),
            |b| {
                b.iter(|| {
                    let checked = check(space.clone(), threads, |_| {});
                    assert_eq!(checked.counts.total, recorded.generated);
                })
            },
        );
    }
    group.bench_function("bfs", |b| {
        b.iter(|| assert!(shortest_counterexample(&space).is_none()))
    });
    group.bench_function("bare-core", |b| b.iter(|| bare_core(&recorded)));
    group.finish();
}

fn main() {
    clock::main(bench, bench);
}
