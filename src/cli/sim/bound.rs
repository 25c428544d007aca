//! `courier sim --coverage-bound M`: the seeds draw only inputs the model
//! checker explores at `--messages M` (its other bounds at their defaults),
//! and the summary says which share of the checker's abstract states they
//! reached. The checker's set is enumerated here, after the sweep, by the
//! model's own breadth-first walk; a simulated state outside it means the
//! engines fingerprint a state differently, which fails the run.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Instant;

use courier_core::Agent;
use courier_model::{Bounds, Space, reachable_fingerprints};
use courier_sim::Coverage;

/// The bounds of `courier check --messages M`.
pub(super) fn bounds(messages: u8) -> Bounds {
    Bounds {
        messages,
        ..Bounds::default()
    }
}

/// The banner line naming the bound.
pub(super) fn banner(bounds: Bounds) -> String {
    format!(
        "coverage bound: messages={} cancels={} edits={} steps={} \
         (only inputs the checker explores)",
        bounds.messages, bounds.cancels, bounds.edits, bounds.steps
    )
}

/// Prints the sweep's `coverage` as a share of the checker's set at
/// `bounds` for `prototype`'s variant; exit 1 if a state lies outside it.
pub(super) fn report(bounds: Bounds, prototype: &Agent, coverage: &Coverage) -> ExitCode {
    let started = Instant::now();
    let checker: BTreeSet<u64> =
        reachable_fingerprints(&Space::new(bounds, prototype.clone(), true));
    courier::status!(
        "checker's set: {} abstract states at messages={}",
        checker.len(),
        bounds.messages,
    );
    // On stderr, as the sweep's time: stdout is the same for the same seeds.
    eprintln!(
        "checker's set built in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let fraction = coverage.against(&checker);
    courier::status!(
        "coverage: {} of {} checker states ({:.2}%), {} outside the checker's set",
        fraction.inside,
        fraction.checker,
        fraction.percent(),
        fraction.outside
    );
    if fraction.outside > 0 {
        courier::status!(
            "error: {} simulated states are not in the checker's set: \
             the engines fingerprint a state differently",
            fraction.outside
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
