//! `courier demo` as a user meets it: its output is pinned as an insta
//! snapshot under `snapshots/` (so it must be deterministic: two runs are
//! compared too), and the log `--log` writes passes `courier validate` and
//! the shared durable checks, with every message claimed.
#![cfg(not(loom))]

#[path = "../runtime/tests/ledger/mod.rs"]
mod ledger;

use std::collections::BTreeSet;
use std::path::Path;

use ledger::Ledger;

/// Runs `courier <command> <log>` and returns its stdout; it must succeed.
fn courier(arguments: &[&str], log: &Path) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(arguments)
        .arg(log)
        .output()
        .expect("the courier binary runs");
    assert!(output.status.success(), "{arguments:?} failed: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8 stdout")
}

#[test]
fn demo_prints_a_deterministic_session_and_logs_it() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let log = folder.path().join("demo.jsonl");
    let printed = courier(&["demo", "--log"], &log);
    assert_eq!(
        printed,
        courier(&["demo", "--log"], &log),
        "two runs print the same"
    );
    courier(&["validate"], &log);
    let written = format!("log written to {}\n", log.display());
    let session = printed
        .strip_suffix(&written)
        .expect("the last line names the log");
    insta::with_settings!({
        snapshot_path => "../snapshots",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("demo", session);
    });

    let text = std::fs::read_to_string(&log).expect("the log reads");
    let (ledger, pending) = Ledger::from_log(text.lines());
    let counts = ledger.balance(&pending);
    assert_eq!((counts.inserted, counts.claimed), (5, 5), "{ledger:?}");
    let claimed: BTreeSet<&str> = ledger.claimed.keys().map(|id| id.as_str()).collect();
    assert_eq!(claimed, BTreeSet::from(["A", "B", "C", "S", "c"]));
}
