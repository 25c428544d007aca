//! `courier check` from the outside: exit codes, the report, and (with the
//! planted bugs) a counterexample file that `courier run` replays.

mod common;

use common::{courier, stdout};

#[test]
fn the_design_passes_and_reports_its_counts() {
    let output = courier(&["check", "--messages", "3", "--threads", "1"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for line in ["unique states:", "total states:"] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
    // What varies from run to run is on stderr, so stdout is the same for
    // the same bounds, byte for byte.
    let timed = String::from_utf8_lossy(&output.stderr);
    for line in ["depth:", "wall time:", "states/s:", "peak memory:"] {
        assert!(timed.contains(line), "no `{line}` in:\n{timed}");
        assert!(!text.contains(line), "`{line}` in stdout:\n{text}");
    }
    let again = courier(&["check", "--messages", "3", "--threads", "1"]);
    assert_eq!(stdout(&again), text);
    assert!(text.contains("restarts=1 "), "{text}");
    assert!(
        text.contains("ok: 18 properties hold; 10 goals reached"),
        "{text}"
    );
}

/// The summary reports what the run cost: its wall time and the process's
/// peak memory, each a number in its unit (no timing is asserted).
#[cfg(target_os = "linux")]
#[test]
fn the_summary_reports_wall_time_and_peak_memory() {
    let output = courier(&["check", "--messages", "2", "--restarts", "0"]);
    let text = String::from_utf8_lossy(&output.stderr);
    let value = |label: &str, unit: &str| -> f64 {
        let line = text.lines().find_map(|l| l.strip_prefix(label));
        let line = line.unwrap_or_else(|| panic!("no `{label}` in:\n{text}"));
        let number = line.trim().strip_suffix(unit);
        let number = number.unwrap_or_else(|| panic!("`{label}{line}` is not in {unit}"));
        number.trim().parse().expect("a number")
    };
    let wall = value("wall time:", " s");
    assert!(wall.is_finite() && wall >= 0.0, "{text}");
    // A running process holds at least its own binary's touched pages, and
    // this small a search stays far below a GiB.
    let peak = value("peak memory:", " MiB");
    assert!(peak > 0.1 && peak < 1024.0, "{text}");
}

#[test]
fn without_restarts_the_restart_goals_are_not_asked_for() {
    let args = ["check", "--messages", "3", "--restarts", "0"];
    let output = courier(&args);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok: 18 properties hold; 7 goals reached"),
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
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("rebuild with `--features mutants`"),
        "{error}"
    );
}

/// A negative number is a bad value of its flag, named (before, clap read
/// `-1` as an unknown flag: "unexpected argument '-1' found").
#[test]
fn a_negative_bound_names_its_flag() {
    for (arguments, flag) in [
        (&["check", "--messages", "-1"][..], "--messages"),
        (&["check", "--threads", "-1"], "--threads"),
        (&["check", "--restarts", "-2"], "--restarts"),
        (&["explore", "--port", "-1"], "--port"),
        (&["sim", "--seeds", "0..2", "--jobs", "-1"], "--jobs"),
    ] {
        let output = courier(arguments);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}");
        let error = String::from_utf8_lossy(&output.stderr);
        let first = error.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: invalid value '-") && first.contains(flag),
            "{arguments:?}: {error}"
        );
    }
}

/// `--mutant` takes the core's names, listed by `--help` in every build.
#[test]
fn every_subcommand_lists_the_planted_bugs() {
    for command in ["run", "check", "sim", "diagram", "explore"] {
        let help = courier(&[command, "--help"]);
        let text = String::from_utf8_lossy(&help.stdout);
        for bug in courier_core::Mutant::ALL {
            assert!(
                text.contains(bug.name()),
                "{command} --help lacks {bug}:\n{text}"
            );
        }
    }
    let unknown = courier(&["run", "--mutant", "no-such-bug", "x.txn"]);
    assert_eq!(unknown.status.code(), Some(2));
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

/// A resume bug's counterexample ends in a restart that `courier run`
/// replays: a cut prints as its input, then `restart lose=N`.
#[cfg(feature = "mutants")]
#[test]
fn a_resume_bug_fails_with_a_counterexample_that_restarts() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let out = folder.path().join("resume-skips-claims.txn");
    let out = out.to_str().expect("a utf-8 temporary path");
    let bug = "resume-skips-claims";
    let args = ["check", "--restarts", "1", "--mutant", bug, "--out", out];
    let output = courier(&args);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("violation: replay-matches\n"), "{text}");
    let written = std::fs::read_to_string(out).expect("the counterexample");
    assert!(written.contains("\nrestart lose="), "{written}");
    let replay = courier(&["run", "--mutant", bug, out]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let default = courier(&["run", out]);
    assert_eq!(default.status.code(), Some(1), "{}", stdout(&default));
}
