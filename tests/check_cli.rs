//! `courier check` from the outside: exit codes, the report, and (with the
//! planted bugs) a counterexample file that `courier run` replays.

mod common;

use common::{courier, stdout};

#[test]
fn the_design_passes_and_reports_its_counts() {
    let output = courier(&["check", "--messages", "3", "--threads", "1"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for line in [
        "unique states:",
        "total states:",
        "depth:",
        "wall time:",
        "states/s:",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
    assert!(
        text.contains("ok: 17 properties hold; 7 goals reached"),
        "{text}"
    );
}

#[test]
fn an_unreached_goal_fails_the_check() {
    let output = courier(&["check", "--messages", "2"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("goal never reached: keep-inbox-parked-work-runs"),
        "{text}"
    );
}

#[cfg(not(feature = "mutants"))]
#[test]
fn a_mutant_needs_the_feature() {
    let output = courier(&["check", "--mutant", "no-latch"]);
    assert_eq!(output.status.code(), Some(2));
}

#[cfg(feature = "mutants")]
#[test]
fn a_planted_bug_fails_with_a_replayable_counterexample() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let out = folder.path().join("early-idle.txn");
    let out = out.to_str().expect("a utf-8 temporary path");
    let args = [
        "check",
        "--messages",
        "3",
        "--mutant",
        "early-idle",
        "--out",
        out,
    ];
    let output = courier(&args);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("violation: quiescent-when-idle\n"), "{text}");
    let replay = courier(&["run", "--mutant", "early-idle", out]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let default = courier(&["run", out]);
    assert_eq!(default.status.code(), Some(1), "{}", stdout(&default));
}
