//! `tests/regressions/*.txn`: minimal traces the simulator found and shrank.
//! Each holds the correct core's outputs (`tests/transcripts.rs` compares
//! them) and breaks no property on the correct core
//! (`check/tests/scenarios.rs` runs every project transcript, these
//! included, under the checker); here a file naming a planted bug (`#
//! mutant: NAME`, `# violates: PROPERTY`) must still catch it: under that
//! mutant the shared checker reports that property.
#![cfg(feature = "mutants")]

mod common;

use std::path::PathBuf;

use courier_check::{Harness, NoHooks, Violation};
use courier_core::Agent;
use courier_core::transcript::Script;

fn regression_files() -> Vec<PathBuf> {
    common::files_with_extension(&common::workspace().join("tests/regressions"), "txn")
}

/// The value of a `# key: value` header line.
fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("# {key}: ");
    text.lines().find_map(|line| line.strip_prefix(&prefix))
}

/// Feeds every command of `script` under the harness (`run` feeds the
/// default completions until idle); the first violation, if any.
fn check(script: &Script, agent: Agent) -> Option<Violation> {
    let mut harness = Harness::new(agent);
    let ran = harness.run_script(script, &mut NoHooks);
    ran.unwrap_or_else(|(line, stalled)| panic!("line {line}: {stalled}"));
    harness.broken().cloned()
}

#[test]
fn every_planted_regression_still_catches_its_bug() {
    use courier_core::Mutant;
    let mut caught = Vec::new();
    for path in regression_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let Some(name) = header(&text, "mutant") else {
            continue;
        };
        let mutant: Mutant = name.parse().expect("a known mutant");
        let property = header(&text, "violates").expect("a `# violates:` line");
        let script = Script::parse(&text).expect("a well-formed transcript");
        let violation = check(&script, Agent::with_mutant(Some(mutant)));
        assert_eq!(
            violation.as_ref().map(|v| v.property.name()),
            Some(property),
            "{}: {violation:?}",
            path.display()
        );
        caught.push(mutant);
    }
    caught.sort();
    assert_eq!(caught, Mutant::ALL, "one regression per planted bug");
}
