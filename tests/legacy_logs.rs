//! dsh's older records (`tests/legacy-logs/README.md`): each conversion dsh's
//! loader makes is made by Courier's one log reader, so `courier validate`,
//! a resume's reader (`courier repair`) and the reader itself agree, and a
//! record dsh refuses is refused with dsh's reason and its line.

mod common;

use common::{courier, stdout};

use courier_core::Output;
use courier_core::log::{LogLine, Reader};
use courier_runtime::kept;

fn legacy_log(name: &str) -> String {
    format!("tests/legacy-logs/{name}.jsonl")
}

/// The `--format json` report of one log, and the exit code.
fn report(name: &str) -> (serde_json::Value, Option<i32>) {
    let output = courier(&["validate", "--format", "json", &legacy_log(name)]);
    let report = serde_json::from_str(stdout(&output).trim()).unwrap();
    (report, output.status.code())
}

/// The ids of the `user/message`s the reader reads from a log.
fn message_ids(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(common::workspace().join(legacy_log(name))).unwrap();
    let mut reader = Reader::new();
    let mut ids = Vec::new();
    for line in text.lines() {
        if let LogLine::Delivery(Output::UserMessage(message)) = reader.line(line).unwrap() {
            ids.push(message.id().to_string());
        }
    }
    ids
}

/// A converted log validates, its report counts the conversions by rule,
/// and a resume reads it (nothing to close, nothing pending).
fn converts(name: &str, rule: &str, count: u64) {
    let (report, code) = report(name);
    assert_eq!((report["status"].as_str(), code), (Some("valid"), Some(0)));
    let conversions = &report["conversions"];
    assert_eq!(conversions[rule], count, "{report}");
    assert_eq!(conversions["total"], count, "{report}");
    let kept = kept::read_file(&common::workspace().join(legacy_log(name))).unwrap();
    assert!(kept.closers().is_empty() && kept.torn.is_none());
}

#[test]
fn a_pre_identity_message_reads_with_dsh_s_legacy_id() {
    converts("pre-identity-message", "pre-identity-message", 2);
    assert_eq!(
        message_ids("pre-identity-message"),
        ["legacy-message:old-1:4", "legacy-message:old-1:8"]
    );
}

#[test]
fn a_turn_start_trigger_is_dropped() {
    converts("turn-start-trigger", "turn-start-trigger", 1);
}

#[test]
fn a_steering_message_reads_as_the_identified_user_message() {
    let (report, _) = report("steering-message");
    assert_eq!(report["conversions"]["steering-message"], 2, "{report}");
    assert_eq!(report["conversions"]["pre-identity-message"], 0, "{report}");
    assert_eq!(report["status"], "valid", "{report}");
    assert_eq!(
        message_ids("steering-message"),
        ["legacy-message:old-3:4", "S"]
    );
}

#[test]
fn a_current_log_reports_no_conversion() {
    let output = courier(&[
        "validate",
        "--format",
        "json",
        "tests/logs/valid-concatenated-sessions.jsonl",
    ]);
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["conversions"]["total"], 0, "{report}");
}

/// A record dsh's loader refuses is unreadable at its line, in dsh's words,
/// for `validate` and for a resume alike.
fn refused(name: &str, line: u64, reason: &str) {
    let (report, code) = report(name);
    assert_eq!(code, Some(2));
    assert_eq!(report["status"], "unreadable");
    assert_eq!(report["error"]["line"], line, "{report}");
    let said = report["error"]["reason"].as_str().unwrap();
    assert!(said.contains(reason), "{said}");
    let error = kept::read_file(&common::workspace().join(legacy_log(name))).unwrap_err();
    assert_eq!(error.line, line, "{error}");
    assert!(error.reason.contains(reason), "{error}");
}

#[test]
fn an_obsolete_event_type_is_refused_as_dsh_refuses_it() {
    refused(
        "refused-mode-set",
        3,
        "session \"old-4\" contains unsupported legacy mode/set event at seq 1",
    );
}

#[test]
fn a_header_without_version_is_refused_as_dsh_s_loader_refuses_it() {
    refused(
        "refused-header-without-version",
        1,
        "corrupt session log: first line is not a session header",
    );
}

#[test]
fn a_header_dsh_no_longer_restores_is_refused_in_dsh_s_words() {
    refused(
        "refused-header-retired-policy",
        1,
        "session header uses retired policy baseline fields",
    );
}

#[test]
fn header_values_dsh_refuses_are_refused_in_dsh_s_words() {
    refused(
        "refused-header-negative-zero",
        1,
        "corrupt session log: first line is not a session header (dsh's JSONL loader refuses a `createdAt` of -0)",
    );
    refused(
        "refused-header-cwd-not-a-string",
        1,
        "session header cwd must be a string",
    );
}

#[test]
fn a_seq_gap_is_refused_as_dsh_s_loader_refuses_it() {
    refused(
        "refused-seq-gap",
        3,
        "corrupt session log: seq gap in committed region (expected 1, got 2)",
    );
}

/// The `turn/end` reasons the reader reads from a log, in order.
fn turn_ends(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(common::workspace().join(legacy_log(name))).unwrap();
    let mut reader = Reader::new();
    let mut reasons = Vec::new();
    for line in text.lines() {
        if let LogLine::Delivery(Output::TurnEnd { reason, .. }) = reader.line(line).unwrap() {
            reasons.push(reason.to_string());
        }
    }
    reasons
}

#[test]
fn an_older_turn_end_reason_reads_in_today_s_words() {
    converts("turn-end-reason", "turn-end-reason", 3);
    assert_eq!(
        turn_ends("turn-end-reason"),
        ["error", "aborted:legacy", "aborted:disposed"]
    );
    // Today's reasons are read as they are, and counted as nothing.
    assert_eq!(turn_ends("turn-start-trigger"), ["completed"]);
}

#[test]
fn a_malformed_turn_end_is_refused_as_dsh_refuses_it() {
    refused(
        "refused-turn-end",
        8,
        "session \"old-6\" contains malformed pre-react-loop turn/end at seq 6",
    );
}
