//! Every shared and project transcript runs clean under the checker; each
//! planted-bug scenario breaks a property its SPEC §8 row names.

use std::path::Path;

use courier_check::{Harness, NoHooks, Violation};
use courier_core::Agent;
use courier_core::transcript::Script;

#[path = "../../tests/common/mod.rs"]
mod common;

/// Runs a transcript's commands under the harness; the first violation.
fn check(file: &Path, agent: Agent) -> Option<Violation> {
    let script = Script::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut harness = Harness::new(agent);
    let ran = harness.run_script(&script, &mut NoHooks);
    ran.unwrap_or_else(|(line, stalled)| panic!("{}:{line}: {stalled}", file.display()));
    harness.broken().cloned()
}

#[test]
fn every_scenario_holds_every_property() {
    let files = common::all_transcripts();
    assert!(files.len() >= 57, "found only {} scenarios", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| check(file, Agent::new()).map(|v| format!("{}: {v}", file.display())))
        .collect();
    assert!(failures.is_empty(), "violations:\n{}", failures.join("\n"));
}

#[cfg(feature = "mutants")]
#[test]
fn planted_bug_scenarios_break_their_property() {
    use courier_core::Mutant;
    let cases = [
        ("m01", Mutant::NoLatch),
        ("m02", Mutant::NoLatch),
        ("m05", Mutant::SplitClaim),
        ("m08", Mutant::InjectWakes),
        ("m09", Mutant::InjectWakes),
        ("m12", Mutant::EarlyIdle),
        ("m13", Mutant::EarlyIdle),
    ];
    for (prefix, mutant) in cases {
        let file = common::files_with_extension(&common::shared_scenarios(), "txn")
            .into_iter()
            .find(|file| {
                file.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with(prefix)
            })
            .unwrap();
        let violation = check(&file, Agent::with_mutant(Some(mutant)))
            .unwrap_or_else(|| panic!("{prefix} under {mutant}: no violation"));
        assert!(
            courier_check::caught_by(mutant).contains(&violation.property),
            "{prefix} under {mutant}: {violation}"
        );
    }
}
