//! Coverage against the model checker: a sweep kept inside a bound reaches
//! only states of the checker's set at that bound (the two engines
//! fingerprint states alike), and a real share of it.

use std::collections::BTreeSet;

use courier_core::{Agent, Input, Stimulus};
use courier_model::{Bounds, Space, reachable_fingerprints};
use courier_sim::{Plan, Record, Restarts, simulate, simulate_within, sweep};

/// The CI bound: small enough for a debug build.
const BOUNDS: Bounds = Bounds {
    messages: 2,
    cancels: 2,
    edits: 1,
    steps: 2,
    restarts: 0,
};

fn checker_set() -> BTreeSet<u64> {
    reachable_fingerprints(&Space::new(BOUNDS, Agent::new(), true))
}

#[test]
fn every_state_a_bounded_sweep_reaches_is_in_the_checkers_set() {
    let plan = Plan {
        seeds: 0..400,
        jobs: 2,
        check_determinism: true,
        coverage: true,
        bound: Some(BOUNDS),
        restarts: Restarts::Drawn,
    };
    let swept = sweep(&plan, &Agent::new(), &|_| {});
    assert!(swept.failure.is_none(), "{:?}", swept.failure);
    let fraction = swept.coverage.against(&checker_set());
    assert_eq!(fraction.outside, 0, "{fraction:?}");
    assert_eq!(fraction.inside, fraction.reached);
    assert!(fraction.inside > 1, "{fraction:?}");
    assert!(fraction.percent() > 0.0, "{fraction:?}");
}

/// The free generator does leave the bound, which is why the fraction
/// needs the bounded workload.
#[test]
fn a_free_sweep_leaves_the_bound() {
    let plan = Plan {
        seeds: 0..50,
        jobs: 1,
        check_determinism: false,
        coverage: true,
        bound: None,
        restarts: Restarts::Drawn,
    };
    let swept = sweep(&plan, &Agent::new(), &|_| {});
    assert!(swept.coverage.against(&checker_set()).outside > 0);
}

/// A bounded run mints the model's ids in order and no more than the bound
/// allows; its swarm configuration is the seed's, as in a free run, less
/// restarts (the checker explores none).
#[test]
fn a_bounded_run_inserts_the_models_ids_in_order() {
    let traced = || Record {
        trace: true,
        ..Record::default()
    };
    let mut both = 0;
    for seed in 0..40 {
        let run = simulate_within(seed, BOUNDS, &Agent::new(), traced());
        let free = simulate(seed, Restarts::Drawn, &Agent::new(), traced());
        assert_eq!(run.swarm, free.swarm.without_restarts());
        assert_eq!(run.restarts, 0);
        let inserted: Vec<&str> = run
            .trace
            .iter()
            .filter_map(|stimulus| match stimulus {
                Stimulus::Restart { .. } => None,
                Stimulus::Input(input) => Some(input),
            })
            .filter_map(|input| match input {
                Input::Send { message, .. }
                | Input::Prepend { message, .. }
                | Input::Replace { message, .. } => Some(message.id().as_str()),
                Input::Append { .. }
                | Input::Remove { .. }
                | Input::Splice { .. }
                | Input::Cancel { .. }
                | Input::Dispose
                | Input::WhenIdle
                | Input::PreStep(_)
                | Input::Step(_) => None,
            })
            .collect();
        assert!(
            ["A", "B"].starts_with(&inserted),
            "seed {seed}: {inserted:?}"
        );
        both += usize::from(inserted.len() == 2);
    }
    assert!(both > 0, "no seed spent the whole message budget");
}
