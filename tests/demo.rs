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

#[test]
fn demo_crash_resumes_from_the_file_with_the_closers_and_the_pending_sends() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let log = folder.path().join("crash.jsonl");
    let printed = courier(&["demo", "--crash", "--log"], &log);
    let lines: Vec<&str> = printed.lines().collect();
    let after = |marker: &str| {
        let at = lines.iter().position(|line| line.starts_with(marker));
        at.unwrap_or_else(|| panic!("no `{marker}` line in:\n{printed}"))
    };
    // The crash comes mid-step, with S and B accepted and pending.
    let crash = after("> crash");
    assert_eq!(lines[crash - 1], "  ~inserted B", "{printed}");
    // The resume prints the closers of turn 1, then the inbox it rebuilt.
    let resume = after("> resume");
    assert!(resume == crash + 1, "{printed}");
    assert_eq!(
        lines[resume + 1..resume + 6],
        [
            "  step/end 1.1   (closer, appended to the file)",
            "  turn/end 1 interrupted   (closer, appended to the file)",
            "  resumed next-step: [S]",
            "  resumed next-turn: [B]",
            "  resumed idle; the next turn is 2",
        ],
        "{printed}"
    );
    // The next turn is 2, and it takes what the crash left pending.
    assert!(printed.contains("  turn/start 2\n"), "{printed}");
    assert!(
        printed.contains("  model: step 2.1 reads S B\n"),
        "{printed}"
    );
    assert!(printed.contains("  model: step 3.1 reads C\n"), "{printed}");
    let session = printed
        .strip_suffix(&format!("log written to {}\n", log.display()))
        .expect("the last line names the log");
    insta::with_settings!({
        snapshot_path => "../snapshots",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("demo-crash", session);
    });

    // The file holds the crashed turn, its closers and the resumed run: it
    // validates, and every message was claimed once (A lost by nobody).
    courier(&["validate"], &log);
    let text = std::fs::read_to_string(&log).expect("the log reads");
    let lines = text
        .lines()
        .filter(|line| !line.contains("session/end-seed"));
    let (ledger, pending) = Ledger::from_log(lines);
    let counts = ledger.balance(&pending);
    assert_eq!((counts.inserted, counts.claimed), (4, 4), "{ledger:?}");
}
