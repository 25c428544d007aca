//! Many seeds, on one thread or several, with a result that does not depend
//! on thread scheduling: seeds are handed out in increasing order, a worker
//! stops taking seeds above the lowest failure found so far, and the lowest
//! failing seed is the one reported.

use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use courier_core::Agent;
use courier_model::Bounds;

use crate::coverage::Coverage;
use crate::hash::OutputHash;
use crate::run::{Restarts, SeedRun, simulate, simulate_within};
use crate::session::Record;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The seeds, in order.
    pub seeds: Range<u64>,
    /// Worker threads (at least one).
    pub jobs: usize,
    /// Run each seed twice and compare the runs and their output hashes.
    pub check_determinism: bool,
    /// Count distinct abstract states (the fingerprint and its set add
    /// about 16% to a sweep's instructions: BENCHMARKS.md).
    pub coverage: bool,
    /// Draw only inputs the model checker explores within these bounds
    /// ([`simulate_within`]) instead of the free generator's (a bound
    /// never restarts).
    pub bound: Option<Bounds>,
    /// Whether the free generator's runs restart the agent.
    pub restarts: Restarts,
}

/// Why a seed failed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Failure {
    /// A property broke.
    Violation(SeedRun),
    /// The core (or a checker) panicked: an assertion failed.
    Panic {
        /// The seed.
        seed: u64,
        /// The panic message.
        message: String,
    },
    /// Two runs of the same seed differed.
    Nondeterminism {
        /// The seed.
        seed: u64,
        /// What differed.
        difference: String,
    },
}

impl Failure {
    /// The failing seed.
    pub fn seed(&self) -> u64 {
        match self {
            Self::Violation(run) => run.seed,
            Self::Panic { seed, .. } | Self::Nondeterminism { seed, .. } => *seed,
        }
    }
}

/// A finished sweep.
pub struct Swept {
    /// Seeds run (all of them when nothing failed).
    pub seeds: u64,
    /// Inputs fed over all seeds run, counting one run per seed.
    pub inputs: u64,
    /// Restarts over all seeds run, counting one run per seed.
    pub restarts: u64,
    /// Distinct abstract states reached (empty when coverage is off).
    pub coverage: Coverage,
    /// The lowest failing seed's failure.
    pub failure: Option<Failure>,
}

/// Shared between workers.
struct Shared<'a> {
    plan: &'a Plan,
    prototype: &'a Agent,
    next_index: AtomicU64,
    lowest_failure: AtomicU64,
    failures: Mutex<BTreeMap<u64, Failure>>,
    on_seed: &'a (dyn Fn(u64) + Sync),
}

/// Runs every seed of `plan` on clones of `prototype`. `on_seed` hears the
/// input count of each finished seed (for a progress bar).
pub fn sweep(plan: &Plan, prototype: &Agent, on_seed: &(dyn Fn(u64) + Sync)) -> Swept {
    let shared = Shared {
        plan,
        prototype,
        next_index: AtomicU64::new(0),
        lowest_failure: AtomicU64::new(u64::MAX),
        failures: Mutex::new(BTreeMap::new()),
        on_seed,
    };
    let totals: Vec<Totals> = if plan.jobs <= 1 {
        vec![work(&shared)]
    } else {
        std::thread::scope(|scope| {
            // Workers take seeds from one counter, so fewer of them (when
            // the system refuses a thread) give the same result: the
            // calling thread works too, so there is always one.
            let workers: Vec<_> = (1..plan.jobs)
                .map_while(|_| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, || work(&shared))
                        .ok()
                })
                .collect();
            let mut totals = vec![work(&shared)];
            totals.extend(
                workers
                    .into_iter()
                    .map(|worker| worker.join().expect("a sweep worker panicked")),
            );
            totals
        })
    };
    let mut swept = Swept {
        seeds: 0,
        inputs: 0,
        restarts: 0,
        coverage: Coverage::default(),
        failure: None,
    };
    for totals in totals {
        swept.seeds += totals.seeds;
        swept.inputs += totals.inputs;
        swept.restarts += totals.restarts;
        swept.coverage.merge(totals.coverage);
    }
    let failures = shared.failures.into_inner().expect("no worker panicked");
    swept.failure = failures.into_values().next();
    swept
}

/// What one worker ran.
#[derive(Default)]
struct Totals {
    seeds: u64,
    inputs: u64,
    restarts: u64,
    coverage: Coverage,
}

/// One worker: takes seeds in order until they run out or a lower seed failed.
fn work(shared: &Shared<'_>) -> Totals {
    let range = &shared.plan.seeds;
    let length = range.end.saturating_sub(range.start);
    let mut totals = Totals::default();
    loop {
        let taken = shared
            .next_index
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |index| {
                (index < length).then_some(index + 1)
            });
        let Ok(index) = taken else { break };
        let seed = range.start + index;
        if seed > shared.lowest_failure.load(Ordering::Relaxed) {
            break;
        }
        let ((run_inputs, run_restarts), failure) = run_seed(shared, seed, &mut totals.coverage);
        totals.seeds += 1;
        totals.inputs += run_inputs;
        totals.restarts += run_restarts;
        (shared.on_seed)(run_inputs);
        if let Some(failure) = failure {
            shared.lowest_failure.fetch_min(seed, Ordering::Relaxed);
            let mut failures = shared.failures.lock().expect("no worker panicked");
            failures.insert(seed, failure);
        }
    }
    totals
}

/// One seed; a panic inside it (a failed assertion in the core) becomes a
/// failure for that seed instead of taking the sweep down without one.
/// Only determinism checks keep the trace and hash on the first run; a
/// failing seed is run again with its trace recorded (runs are
/// deterministic, which `--check-determinism` checks).
fn run_seed(
    shared: &Shared<'_>,
    seed: u64,
    coverage: &mut Coverage,
) -> ((u64, u64), Option<Failure>) {
    let check = shared.plan.check_determinism;
    let prototype = shared.prototype;
    let guarded = panic::catch_unwind(AssertUnwindSafe(|| {
        let record = Record {
            trace: check,
            hash: check,
            coverage: shared.plan.coverage.then_some(&mut *coverage),
        };
        let run_with = |record| match shared.plan.bound {
            Some(bounds) => simulate_within(seed, bounds, prototype, record),
            None => simulate(seed, shared.plan.restarts, prototype, record),
        };
        let run = run_with(record);
        let again = (check || run.violation.is_some()).then(|| run_with(traced()));
        (run, again)
    }));
    let (run, again) = match guarded {
        Ok(runs) => runs,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic".to_owned());
            return ((0, 0), Some(Failure::Panic { seed, message }));
        }
    };
    let inputs = (run.inputs, run.restarts);
    let Some(again) = again else {
        return (inputs, None);
    };
    let differs = if check {
        difference(&run, &again)
    } else {
        (again.violation != run.violation).then(|| "the verdicts differ".to_owned())
    };
    if let Some(difference) = differs {
        return (inputs, Some(Failure::Nondeterminism { seed, difference }));
    }
    let failure = again
        .violation
        .is_some()
        .then_some(Failure::Violation(again));
    (inputs, failure)
}

/// A run that keeps its trace and output hash.
fn traced() -> Record<'static> {
    Record {
        trace: true,
        hash: true,
        coverage: None,
    }
}

/// What differs between two runs of one seed, if anything.
fn difference(first: &SeedRun, second: &SeedRun) -> Option<String> {
    if first.swarm != second.swarm {
        return Some("the swarm configuration differs".to_owned());
    }
    if first.inputs != second.inputs {
        return Some(format!("{} inputs, then {}", first.inputs, second.inputs));
    }
    if first.restarts != second.restarts {
        return Some(format!(
            "{} restarts, then {}",
            first.restarts, second.restarts
        ));
    }
    if let Some(index) = (0..first.trace.len().max(second.trace.len()))
        .find(|&index| first.trace.get(index) != second.trace.get(index))
    {
        return Some(format!("the traces differ at stimulus {}", index + 1));
    }
    if first.output_hash != second.output_hash {
        return Some(format!(
            "the outputs differ: {} then {}",
            shown(first.output_hash),
            shown(second.output_hash)
        ));
    }
    (first.violation != second.violation).then(|| "the verdicts differ".to_owned())
}

/// A run's output hash as a note prints it.
fn shown(hash: Option<OutputHash>) -> String {
    hash.map_or_else(|| "none".to_owned(), |hash| hash.to_string())
}
