//! `courier run` as a user meets it: the built binary on temporary files,
//! checking exit codes (0 pass, 1 mismatch, 2 unreadable or malformed), the
//! readable diff, refusals printed as `error:` lines that leave the state
//! unchanged, and `--rewrite`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::PASSING;
use tempfile::TempDir;

/// One finished `courier` invocation.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn courier(arguments: &[&str], files: &[&Path]) -> Run {
    let output: Output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(arguments)
        .args(files)
        .output()
        .expect("the courier binary runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
    }
}

/// Writes `text` to `name` in a fresh temporary folder.
fn scenario(name: &str, text: &str) -> (TempDir, PathBuf) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join(name);
    std::fs::write(&path, text).expect("a writable temporary file");
    (folder, path)
}

#[test]
fn a_passing_file_exits_zero() {
    let (_folder, path) = scenario("pass.txn", PASSING);
    let run = courier(&["run"], &[&path]);
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("ok "), "{}", run.stdout);
    assert!(
        run.stdout.contains("1 passed, 0 failed, 0 unreadable"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_wrong_expectation_exits_one_with_a_readable_diff() {
    let wrong = PASSING.replace("turn/end 1 completed", "turn/end 1 blocked");
    let (_folder, path) = scenario("wrong.txn", &wrong);
    let run = courier(&["run"], &[&path]);
    assert_eq!(run.code, Some(1), "stdout:\n{}", run.stdout);
    let location = format!("{}:11: run", path.display());
    assert!(
        run.stdout.contains(&location),
        "no `{location}` in:\n{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("- turn/end 1 blocked"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("+ turn/end 1 completed"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("0 passed, 1 failed"), "{}", run.stdout);
    // Only the mismatching block is reported.
    assert!(!run.stdout.contains("followup A"), "{}", run.stdout);
}

#[test]
fn a_missing_file_exits_two_naming_it() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let missing = folder.path().join("absent.txn");
    let (_other, passing) = scenario("pass.txn", PASSING);
    let run = courier(&["run"], &[&passing, &missing]);
    assert_eq!(run.code, Some(2), "stderr:\n{}", run.stderr);
    assert!(
        run.stderr.contains(&missing.display().to_string()),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("1 passed, 0 failed, 1 unreadable"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_malformed_file_exits_two_naming_file_and_line() {
    let (_folder, path) = scenario("malformed.txn", "# comment\n----\n");
    let run = courier(&["run"], &[&path]);
    assert_eq!(run.code, Some(2), "stderr:\n{}", run.stderr);
    let location = format!("{}:2:", path.display());
    assert!(
        run.stderr.contains(&location),
        "no `{location}` in:\n{}",
        run.stderr
    );
}

#[test]
fn a_block_without_separator_fails_under_run() {
    let (_folder, path) = scenario("no-separator.txn", "status\n");
    let run = courier(&["run"], &[&path]);
    assert_eq!(run.code, Some(1), "stdout:\n{}", run.stdout);
    assert!(run.stdout.contains(":1: status"), "{}", run.stdout);
    assert!(run.stdout.contains("--rewrite adds it"), "{}", run.stdout);
}

/// SPEC §10 and issue 2's "Must show": each refused command prints its
/// `error:` line and only that; the blocks after it show the state as it was.
const REFUSALS: &str = "\
# pins: refusals print one error line and change nothing
followup A
----
spliced next-turn@0 +A
~inserted A
~status running
turn/start 1
spliced next-turn@0 -1
~claimed A 1

inject c
----
spliced next-step@0 +c
~inserted c

frobnicate c
----
error: bad-command: frobnicate c

inject c
----
error: duplicate-id: c

followup c
----
error: duplicate-id: c

step completed
----
error: not-awaiting: step

status
----
running turn=1 step=0 awaiting=pre-step

inbox
----
next-turn:
next-step: c

pre-step pass
----
step/start 1.1
user/message A

step completed
----
step/end 1.1
spliced next-step@0 -1
~claimed c 1

";

#[test]
fn refusals_print_an_error_line_and_change_nothing() {
    let (_folder, path) = scenario("refusals.txn", REFUSALS);
    let run = courier(&["run"], &[&path]);
    assert_eq!(run.code, Some(0), "stdout:\n{}", run.stdout);

    // The same commands with every expectation left empty: what the runner
    // writes back is exactly the file above, error lines included.
    let blank = strip_expectations(REFUSALS);
    let (_other, blank_path) = scenario("refusals-blank.txn", &blank);
    let rewrite = courier(&["run", "--rewrite"], &[&blank_path]);
    assert_eq!(rewrite.code, Some(0), "stdout:\n{}", rewrite.stdout);
    let written = std::fs::read_to_string(&blank_path).expect("the rewritten file");
    assert_eq!(written, REFUSALS);
}

/// Keeps comments, commands and `----`, dropping every expected line.
fn strip_expectations(text: &str) -> String {
    let mut kept = String::new();
    let mut in_expectation = false;
    for line in text.lines() {
        if line.is_empty() {
            in_expectation = false;
        }
        if !in_expectation {
            kept.push_str(line);
            kept.push('\n');
        }
        if line == "----" {
            in_expectation = true;
        }
    }
    kept
}

#[test]
fn rewrite_writes_actual_outputs_keeping_comments_and_commands() {
    let before = "\
# a comment that must survive
followup A
----
this line is wrong

# a block without its separator, and no final blank line
status";
    let after = "\
# a comment that must survive
followup A
----
spliced next-turn@0 +A
~inserted A
~status running
turn/start 1
spliced next-turn@0 -1
~claimed A 1

# a block without its separator, and no final blank line
status
----
running turn=1 step=0 awaiting=pre-step

";
    let (_folder, path) = scenario("rewrite.txn", before);
    let run = courier(&["run", "--rewrite"], &[&path]);
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("rewrote"), "{}", run.stdout);
    let written = std::fs::read_to_string(&path).expect("the rewritten file");
    assert_eq!(written, after);

    let again = courier(&["run"], &[&path]);
    assert_eq!(again.code, Some(0), "stdout:\n{}", again.stdout);
}

#[test]
fn a_missing_final_blank_line_is_accepted() {
    let trimmed = PASSING.trim_end();
    assert!(!trimmed.ends_with('\n'));
    let (_folder, path) = scenario("no-final-newline.txn", trimmed);
    let run = courier(&["run"], &[&path]);
    assert_eq!(run.code, Some(0), "stdout:\n{}", run.stdout);
}
