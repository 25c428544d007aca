//! The simulator's speed (issue 7) in inputs per second over a fixed seed
//! range, on one thread, against the same inputs without the simulator:
//! - `sweep/coverage` and `sweep/no-coverage`: `courier_sim::sweep`, what
//!   `courier sim --seeds 0..1000` runs (with and without `--no-coverage`;
//!   the free generator, not `--coverage-bound`):
//!   per seed, draw a swarm, generate each input from the agent's state,
//!   feed it, check every property and the core's invariants, restart the
//!   agent at the seed's rate (checked too), then settle;
//! - `sweep/no-restarts`: `sweep/coverage` with `--no-restarts`;
//! - `replay-checked`: the inputs the `no-restarts` seeds fed (recorded
//!   once, outside the measurement) fed again through a [`Session`], so
//!   every property is checked but nothing is generated;
//! - `bare-core`: the same inputs fed to a bare core (`handle`, then drain
//!   and drop the outputs), nothing checked. `sweep / bare-core` is the
//!   simulator's whole overhead, `replay-checked / bare-core` the checking's.
//!
//! Each function's `Throughput::Elements` is the inputs it feeds (restarts
//! are not counted): the sweeps with restarts feed their own count, the
//! others the `no-restarts` count.
//! Run: `cargo bench --bench sim`.

mod clock;

use std::hint::black_box;
use std::ops::Range;
use std::time::Duration;

use courier_core::{Agent, Input, Stimulus};
use courier_sim::{Plan, Record, Restarts, Session, simulate, sweep};
use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput};

/// About 120k inputs: a few tens of milliseconds per sweep.
const SEEDS: Range<u64> = 0..1000;

fn plan(coverage: bool, restarts: Restarts) -> Plan {
    Plan {
        seeds: SEEDS,
        jobs: 1,
        check_determinism: false,
        coverage,
        bound: None,
        restarts,
    }
}

/// Every input each seed fed without restarts, both phases, in order.
fn traces(prototype: &Agent) -> Vec<Vec<Input>> {
    let record = || Record {
        trace: true,
        ..Record::default()
    };
    SEEDS
        .map(|seed| {
            let run = simulate(seed, Restarts::Off, prototype, record());
            assert!(run.violation.is_none(), "seed {seed} passes");
            assert_eq!(run.trace.len() as u64, run.inputs);
            let inputs = run.trace.into_iter().map(|stimulus| match stimulus {
                Stimulus::Input(input) => input,
                Stimulus::Restart { .. } => unreachable!("restarts are off"),
            });
            inputs.collect()
        })
        .collect()
}

fn replay_checked(prototype: &Agent, traces: Vec<Vec<Input>>) {
    for trace in traces {
        let mut session = Session::new(prototype, Record::default());
        for input in trace {
            session.feed(input).expect("the seed passed when recorded");
        }
        black_box(session.inputs());
    }
}

fn bare_core(prototype: &Agent, traces: Vec<Vec<Input>>) {
    for trace in traces {
        let mut agent = prototype.clone();
        for input in trace {
            black_box(agent.handle(input).is_ok());
            while let Some(output) = agent.poll_output() {
                black_box(output);
            }
        }
        black_box(&agent);
    }
}

fn bench<M: Measurement>(criterion: &mut Criterion<M>) {
    let prototype = Agent::new();
    let recorded = traces(&prototype);
    let inputs: u64 = recorded.iter().map(|trace| trace.len() as u64).sum();
    let swept = sweep(&plan(false, Restarts::Off), &prototype, &|_| {});
    assert!(swept.failure.is_none(), "the default core passes");
    assert_eq!(swept.inputs, inputs, "the recorded inputs are the sweep's");
    let with_restarts = sweep(&plan(false, Restarts::Drawn), &prototype, &|_| {});
    assert!(with_restarts.failure.is_none(), "the default core passes");
    assert!(with_restarts.restarts > 0, "some seeds restart");

    let mut group = clock::group(criterion, "sim");
    group.sample_size(20);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let sweeps = [
        ("coverage", true, Restarts::Drawn, with_restarts.inputs),
        ("no-coverage", false, Restarts::Drawn, with_restarts.inputs),
        ("no-restarts", true, Restarts::Off, inputs),
    ];
    for (name, coverage, restarts, fed) in sweeps {
        let plan = plan(coverage, restarts);
        group.throughput(Throughput::Elements(fed));
        group.bench_function(BenchmarkId::new("sweep", name), |b| {
            b.iter(|| {
                let swept = sweep(&plan, &prototype, &|_| {});
                assert_eq!(swept.inputs, fed);
            })
        });
    }
    group.throughput(Throughput::Elements(inputs));
    // The replays own their inputs, as the sweep's generator does; cloning
    // the recorded traces (handle clones) happens in criterion's setup.
    let setup = || recorded.clone();
    group.bench_function("replay-checked", |b| {
        b.iter_batched(
            setup,
            |traces| replay_checked(&prototype, traces),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("bare-core", |b| {
        b.iter_batched(
            setup,
            |traces| bare_core(&prototype, traces),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn main() {
    clock::main(bench, bench);
}
