//! Every planted bug of SPEC §8 is found by a small seed range, reported by a
//! property its row allows, replays to the same violation and output hash,
//! and shrinks to a transcript of at most 12 commands that the correct core
//! answers differently (while breaking no property on it).
#![cfg(feature = "mutants")]

use courier_check::{Harness, NoHooks, caught_by};
use courier_core::transcript::Script;
use courier_core::{Agent, Mutant, Stimulus};
use courier_sim::{Failure, Plan, Restarts, SeedRun, evaluate, shrink, sweep, transcript};

/// Each bug is found below this seed (the CLI's must-show uses `0..1000`).
const SEEDS: std::ops::Range<u64> = 0..200;

/// The shrunk transcript's size bound.
const COMMANDS_MAX: usize = 12;

fn first_failure(mutant: Mutant) -> SeedRun {
    let plan = Plan {
        seeds: SEEDS,
        jobs: 1,
        check_determinism: false,
        coverage: true,
        bound: None,
        restarts: Restarts::Drawn,
    };
    match sweep(&plan, &Agent::with_mutant(Some(mutant)), &|_| {}).failure {
        Some(Failure::Violation(run)) => run,
        other => panic!("{mutant}: no violation in seeds {SEEDS:?} ({other:?})"),
    }
}

#[test]
fn every_planted_bug_is_found_replayed_and_shrunk() {
    for mutant in Mutant::ALL {
        let prototype = Agent::with_mutant(Some(mutant));
        let run = first_failure(mutant);
        let violation = run.violation.clone().expect("a violation failure");
        assert!(
            caught_by(mutant).contains(&violation.property),
            "{mutant}: seed {} reported {violation}, not one of {:?}",
            run.seed,
            caught_by(mutant)
        );

        let replayed = evaluate(&prototype, &run.trace);
        let again = evaluate(&prototype, &run.trace);
        assert_eq!(
            replayed.violation.as_ref().map(|v| v.property),
            Some(violation.property),
            "{mutant}: the trace does not replay"
        );
        assert_eq!(replayed.output_hash, again.output_hash, "{mutant}");

        let shrunk = shrink(&prototype, &run.trace, violation.property).expect("reproduces");
        assert_eq!(shrunk.violation.property, violation.property, "{mutant}");
        assert!(
            shrunk.trace.len() <= COMMANDS_MAX,
            "{mutant}: shrunk to {} stimuli",
            shrunk.trace.len()
        );
        assert_correct_core_differs(mutant, &prototype, &shrunk.trace);
    }
}

/// The shrunk transcript, recorded on the mutant, fails under the correct
/// core (some block's output differs) and the correct core breaks no
/// property on the same inputs.
fn assert_correct_core_differs(mutant: Mutant, prototype: &Agent, trace: &[Stimulus]) {
    let text = transcript(prototype, trace);
    let script = Script::parse(&text).expect("a recorded transcript parses");
    let on_mutant = script.run(prototype).expect("no `run` command");
    assert_eq!(
        script.mismatches(&on_mutant),
        [],
        "{mutant}: the transcript does not replay"
    );
    let on_correct = script.run(&Agent::new()).expect("no `run` command");
    assert_ne!(
        script.mismatches(&on_correct),
        [],
        "{mutant}: the correct core agrees:\n{text}"
    );

    let mut harness = Harness::new(Agent::new());
    for stimulus in trace {
        if let Some(violation) = harness.apply(stimulus.clone(), &mut NoHooks) {
            panic!("{mutant}: the correct core breaks {violation} on:\n{text}");
        }
    }
}

#[test]
fn a_mutant_sweep_reports_the_lowest_failing_seed_whatever_the_jobs() {
    let lowest = |jobs| {
        let plan = Plan {
            seeds: 0..200,
            jobs,
            check_determinism: false,
            coverage: true,
            bound: None,
            restarts: Restarts::Drawn,
        };
        let swept = sweep(&plan, &Agent::with_mutant(Some(Mutant::EarlyIdle)), &|_| {});
        swept.failure.map(|failure| failure.seed())
    };
    let single = lowest(1);
    assert!(single.is_some(), "early-idle not found");
    assert_eq!(lowest(2), single);
    assert_eq!(lowest(4), single);
}
