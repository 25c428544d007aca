//! Runs every transcript (SPEC §9) against a fresh agent through the core's
//! pure `Script` API: the shared scenarios, `tests/scenarios/*.txn` and
//! `tests/regressions/*.txn`. One failure lists every mismatching block, so a
//! behaviour change shows its whole blast radius at once.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use courier_core::Agent;
use courier_core::transcript::{Mismatch, Script};

/// The shared catalog had 57 scenarios when this test was written; fewer
/// means the folder lookup went wrong, not that the catalog shrank.
const SHARED_SCENARIOS_MIN: usize = 57;

/// Runs one file and describes each problem as `file:line` plus a diff.
fn problems_of(path: &Path) -> Vec<String> {
    let name = common::display(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => return vec![format!("{name}: cannot read: {error}")],
    };
    let script = match Script::parse(&text) {
        Ok(script) => script,
        Err(error) => return vec![format!("{name}:{}: {}", error.line, error.reason)],
    };
    let actual = match script.run(&Agent::new()) {
        Ok(actual) => actual,
        Err((line, stalled)) => return vec![format!("{name}:{line}: {stalled}")],
    };
    let mut problems = Vec::new();
    for Mismatch { block, actual } in script.mismatches(&actual) {
        let Some(expected) = &block.expected else {
            problems.push(format!(
                "{name}:{}: {}\n  (no `----`: a block without expected output fails)",
                block.line, block.command
            ));
            continue;
        };
        let mut report = format!("{name}:{}: {}", block.line, block.command);
        for line in expected {
            write!(report, "\n  - {line}").expect("writing to a String");
        }
        for line in actual {
            write!(report, "\n  + {line}").expect("writing to a String");
        }
        problems.push(report);
    }
    problems
}

#[test]
fn every_transcript_matches_its_expected_output() {
    let shared = common::files_with_extension(&common::shared_scenarios(), "txn");
    assert!(
        shared.len() >= SHARED_SCENARIOS_MIN,
        "found only {} shared scenarios in {}",
        shared.len(),
        common::shared_scenarios().display()
    );
    let files = common::all_transcripts();
    assert!(
        files.len() > shared.len(),
        "no project scenarios under tests/scenarios"
    );
    let problems: Vec<String> = files.iter().flat_map(|path| problems_of(path)).collect();
    assert!(
        problems.is_empty(),
        "{} mismatching block(s) in {} transcript(s) (- expected, + actual):\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
}

/// Each project scenario says which SPEC rule it pins, so a failure can be
/// judged against the contract rather than rewritten blindly.
#[test]
fn every_project_scenario_says_what_it_pins() {
    let mut unpinned = Vec::new();
    for directory in common::project_scenario_dirs() {
        for path in common::files_with_extension(&directory, "txn") {
            let text = std::fs::read_to_string(&path).expect("a readable scenario");
            if !text.lines().any(|line| line.starts_with("# pins: ")) {
                unpinned.push(common::display(&path));
            }
        }
    }
    assert!(
        unpinned.is_empty(),
        "scenarios without a `# pins: ` comment: {unpinned:?}"
    );
}
