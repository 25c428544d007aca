//! The wire protocol (docs/PROTOCOL.md) from both ends: `courier run
//! --against` driving `courier serve-protocol` must agree with `courier run`
//! on every shared scenario, and must catch a planted bug served behind it.

mod bench_line;
mod common;

use std::path::PathBuf;

use bench_line::{answers, check_bench_line, check_ids_are_strings};
use common::{courier, files_with_extension, shared_restart_scenarios, shared_scenarios, stdout};

/// The command that serves the core (with `extra` arguments) over the protocol.
fn served(extra: &str) -> String {
    let binary = env!("CARGO_BIN_EXE_courier");
    format!("'{binary}' serve-protocol {extra}")
}

/// The `courier` binary under test.
fn server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_courier"))
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files = files_with_extension(&shared_scenarios(), "txn");
    files.extend(files_with_extension(&shared_restart_scenarios(), "txn"));
    files
}

#[test]
fn the_served_core_passes_every_shared_scenario() {
    let files = scenario_files();
    assert!(files.len() > 50, "only {} scenarios found", files.len());
    let command = served("");
    let mut arguments = vec!["run", "--against", command.as_str()];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    arguments.extend(names.iter().map(String::as_str));
    let output = courier(&arguments);
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains(&format!(
            "\n{} passed, 0 failed, 0 unreadable\n",
            files.len()
        )),
        "{text}"
    );
}

/// The core answers the protocol's `bench` line as the dsh adapter does
/// (tests/dsh.rs): checked claim cycles, their time and their log.
#[test]
fn the_served_core_answers_the_bench_line() {
    check_bench_line(&server(), &["serve-protocol"]);
}

#[cfg(feature = "mutants")]
#[test]
fn a_planted_bug_behind_the_protocol_fails_m01() {
    let file = shared_scenarios().join("m01-no-latch.txn");
    let command = served("--mutant no-latch");
    let output = courier(&["run", "--against", &command, &file.display().to_string()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL") && text.contains("    - ~status running"),
        "{text}"
    );
}

#[test]
fn an_implementation_that_cannot_start_exits_two_naming_the_file() {
    let file = shared_scenarios().join("m01-no-latch.txn");
    let output = courier(&["run", "--against", "exit 3", &file.display().to_string()]);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{errors}");
    assert!(errors.contains("m01-no-latch.txn:6: "), "{errors}");
}

/// Malformed lines answer an error naming the line, then the marker; the
/// server keeps serving and ends with exit 0 at the end of input.
#[test]
fn the_server_names_bad_lines_and_goes_on() {
    let input = "garbage\n{\"query\":\"what\"}\n{\"input\":\"frob\"}\n{\"query\":\"status\"}\n{\"input\":\"step\",\"completed\":null}\n";
    let text = answers(&server(), &["serve-protocol"], input);
    let lines: Vec<&str> = text.lines().collect();
    let settled = r#"{"settled":true}"#;
    assert_eq!(lines.len(), 10, "{lines:?}");
    assert!(
        lines[0].starts_with(r#"{"error":"line 1: not JSON"#),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with(r#"{"error":"line 2: unknown query"#),
        "{lines:?}"
    );
    assert!(lines[4].starts_with(r#"{"error":"line 3: "#), "{lines:?}");
    assert_eq!(lines[6], r#"{"status":"idle"}"#);
    assert_eq!(lines[8], r#"{"refused":"not-awaiting: step"}"#);
    for marker in [1, 3, 5, 7, 9] {
        assert_eq!(lines[marker], settled);
    }
}

/// A line of JSON nested deeper than serde_json reads (a message's content
/// 200 arrays deep) was answered `not JSON: recursion limit exceeded`; it
/// is JSON, so the error names its depth (or its number past a double's
/// range), and a line cut short is still not JSON.
#[test]
fn the_server_names_a_line_too_deep_as_json_too_deep_not_as_not_json() {
    let content = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let line = format!(
        r#"{{"input":"send","message":{{"id":"A","role":"user","content":{content},"source":{{"kind":"user"}}}},"target":"next-turn","wakeup":"wake"}}"#
    );
    let input = format!(
        "{line}\n{}\n{}\n",
        &line[..line.len() - 2],
        r#"{"query":1e400}"#
    );
    let text = answers(&server(), &["serve-protocol"], &input);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(
        lines[0]
            .starts_with(r#"{"error":"line 1: JSON nested more than 127 arrays and objects deep"#),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with(r#"{"error":"line 2: not JSON"#),
        "{lines:?}"
    );
    // A number past a double's range is JSON too (`JSON.parse` reads
    // Infinity): named for that number, not for a depth.
    assert!(
        lines[4].starts_with(r#"{"error":"line 3: a number out of range (column 14)"#),
        "{lines:?}"
    );
}

/// A message the core would take but whose log line no reader takes back
/// (nested too deep once the line wraps it) is a protocol error, as the
/// runtime refuses it, and is not fed: before, a send of content nested 124
/// deep was accepted and the `log` answer held a line `courier validate`
/// refuses. One level less is fed, and its log validates.
#[test]
fn a_message_whose_log_line_would_not_read_back_is_refused_unfed() {
    let send = |id: &str, depth: usize| {
        let content = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        format!(
            r#"{{"input":"send","message":{{"id":"{id}","role":"user","content":{content},"source":{{"kind":"user"}}}},"target":"next-turn","wakeup":"no-wake"}}"#
        )
    };
    let input = format!(
        "{}\n{}\n{}\n",
        send("A", 123),
        send("B", 124),
        r#"{"query":"inbox"}"#
    );
    let text = answers(&server(), &["serve-protocol"], &input);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{lines:?}");
    assert!(lines[0].contains(r#""id":"A""#), "{lines:?}");
    assert!(
        lines[3].starts_with(
            r#"{"error":"line 2: input send: message B: not logged, since a resume could not read it back"#
        ),
        "{lines:?}"
    );
    assert_eq!(
        lines[5], r#"{"inbox":{"next-step":[],"next-turn":["A"]}}"#,
        "{lines:?}"
    );
}

/// A message id that is not a string is a protocol error naming its line
/// and input kind, as at the dsh adapter's end (tests/dsh.rs).
#[test]
fn the_served_core_refuses_an_id_that_is_not_a_string() {
    check_ids_are_strings(&server(), &["serve-protocol"]);
}

/// A goal source's bad field is named by its path and said to be what it
/// is not (a number of the wrong range, a string), and a missing one by
/// the object that lacks it. Before, both read "goal source needs
/// `revision`", blamed on the field before it.
#[test]
fn a_goal_sources_bad_field_is_named_apart_from_a_missing_one() {
    let line = |fields: &str| {
        format!(
            r#"{{"input":"send","message":{{"id":"C","role":"user","content":[],"source":{{"kind":"goal","goalId":"g",{fields}}}}},"target":"next-turn","wakeup":"no-wake"}}"#
        )
    };
    let input = [
        line(r#""revision":-1,"round":1"#),
        line(r#""revision":1,"round":"2""#),
        line(r#""round":1"#),
    ]
    .join("\n");
    let text = answers(&server(), &["serve-protocol"], &format!("{input}\n"));
    let errors: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("{\"error"))
        .collect();
    assert_eq!(
        errors,
        [
            r#"{"error":"line 1: input send: message.source.revision: goal source `revision`: expected an integer from 0 to 18446744073709551615, found -1"}"#,
            r#"{"error":"line 2: input send: message.source.round: goal source `round`: expected an integer from 0 to 18446744073709551615, found a string"}"#,
            r#"{"error":"line 3: input send: message.source: missing field `revision` (a goal source needs it)"}"#,
        ]
    );
}

/// A step's outcome is its one key with `null`: an empty object there was
/// read as `null` (serde reads a unit variant of an internally tagged enum
/// from `{}`), so `{"completed":{}}` completed the step.
#[test]
fn a_step_outcome_other_than_null_is_refused() {
    let input = [
        r#"{"input":"step","completed":{}}"#,
        r#"{"input":"step","fail":{"x":1}}"#,
        r#"{"input":"step","completed":null}"#,
    ]
    .join("\n");
    let text = answers(&server(), &["serve-protocol"], &format!("{input}\n"));
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| *line != r#"{"settled":true}"#)
        .collect();
    assert_eq!(
        lines,
        [
            r#"{"error":"line 1: input step: completed: invalid type: an object, expected null"}"#,
            r#"{"error":"line 2: input step: fail: invalid type: an object, expected null"}"#,
            r#"{"refused":"not-awaiting: step"}"#,
        ]
    );
}
