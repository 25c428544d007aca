//! `courier validate` under the hostile-input classes of issue 16 that
//! concern it: stay linear (3), bounded memory (4), exit codes and messages
//! that tell the truth (5). Speed itself is measured by `benches/validate.rs`
//! (`BENCHMARKS.md`); these tests pin what the linear structures must still
//! get right.

mod common;

use common::{courier, stdout};

use courier_check::validate::{Finding, validate};
use courier_check::{History, Mode};
use courier_core::{Message, Output, Splice, Target};

const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#;

fn message(id: &str) -> String {
    format!(r#"{{"id":"{id}","role":"user","content":"x","source":{{"kind":"user"}}}}"#)
}

/// The first boundary's claim of the `next-turn` head.
const CLAIM: &str = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}}"#;

fn splice(start: usize, ids: &[String]) -> String {
    let inserted: Vec<String> = ids.iter().map(|id| message(id)).collect();
    format!(
        r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":{start},"inserted":[{}]}}}}"#,
        inserted.join(",")
    )
}

fn findings(log: &str) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    validate(log.as_bytes(), |Finding { line, violation }| {
        found.push((line, violation.to_string()));
    })
    .unwrap();
    found
}

/// A tiny generator (the same sequence on every run).
struct Draws(u64);

impl Draws {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % bound as u64) as usize
    }
}

#[test]
fn stay_linear_splices_keep_list_order_past_the_index_threshold() {
    // Splices at drawn positions into a list growing well past the point
    // where History indexes it, against a plain vector as the model.
    let mut history = History::new(Mode::Log);
    let mut model: Vec<String> = Vec::new();
    let mut draws = Draws(7);
    for round in 0..300 {
        let start = draws.below(model.len() + 1);
        let removed = draws.below((model.len() - start).min(3) + 1);
        // As the core writes splices: each changes something, and only a
        // removal has an outcome.
        let count = draws.below(6).max(usize::from(removed == 0));
        let inserted: Vec<String> = (0..count).map(|k| format!("m{round}.{k}")).collect();
        let messages = inserted.iter().map(|id| Message::from(id.as_str()));
        let output = Output::Spliced(Splice {
            target: Target::NextTurn,
            start,
            removed_count: removed,
            inserted: messages.collect(),
            outcome: (removed > 0).then_some(courier_core::Outcome::Canceled),
        });
        history.observe(&output).unwrap();
        model.splice(start..start + removed, inserted);
        let listed: Vec<&str> = history
            .list(Target::NextTurn)
            .iter()
            .map(|id| id.as_str())
            .collect();
        assert_eq!(listed, model, "after round {round}");
    }
    assert!(model.len() > 100, "the list grew to {}", model.len());
}

#[test]
fn stay_linear_a_pending_or_twice_admitted_id_is_found_in_a_long_list() {
    let ids: Vec<String> = (0..1000).map(|k| format!("p{k}")).collect();
    // An id inserted again while pending, found among 1000 (line 3), and
    // one inserted twice in one splice (line 3 of the second log).
    let again = format!(
        "{HEADER}\n{}\n{}\n",
        splice(0, &ids),
        splice(500, &ids[700..701])
    );
    assert_eq!(
        findings(&again),
        [(
            3,
            "unique-pending: p700 inserted into next-turn while pending".to_owned()
        )]
    );
    let mut twice = ids[10..].to_vec();
    twice.push("p999".into());
    let log = format!(
        "{HEADER}\n{}\n{}\n",
        splice(0, &ids[..10]),
        splice(10, &twice)
    );
    assert_eq!(
        findings(&log),
        [(
            3,
            "unique-pending: p999 inserted into next-turn while pending".to_owned()
        )]
    );
    // The 1001st context message of a step repeats the 900th.
    let mut step = vec![
        HEADER.to_owned(),
        splice(0, &["w".to_owned()]),
        r#"{"type":"turn/start","data":{"turn":1}}"#.into(),
        CLAIM.into(),
        r#"{"type":"step/start","data":{"turn":1,"step":1}}"#.into(),
    ];
    for id in ids.iter().chain(&ids[899..900]) {
        step.push(format!(
            r#"{{"type":"user/message","data":{}}}"#,
            message(id)
        ));
    }
    assert_eq!(
        findings(&(step.join("\n") + "\n")),
        [(
            1006,
            "admission: user/message p899 admitted twice in step 1.1".to_owned()
        )]
    );
}

#[test]
fn bounded_memory_json_streams_every_finding_of_a_file_on_its_line() {
    // 3000 goal-rounds findings (each checked past: 3000 goal messages
    // claimed from `next-step` at the first boundary, each admitted with
    // round 7), then a line that does not parse: the file's one JSON line
    // holds all of them and the error.
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("rounds.jsonl");
    let goal = |k: usize| {
        format!(
            r#"{{"id":"g{k}","role":"user","content":"x","source":{{"kind":"goal","goalId":"g","revision":1,"round":7}}}}"#
        )
    };
    let goals: Vec<String> = (0..3000).map(goal).collect();
    let mut log = vec![
        HEADER.to_owned(),
        splice(0, &["w".to_owned()]),
        format!(
            r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-step","start":0,"inserted":[{}]}}}}"#,
            goals.join(",")
        ),
        r#"{"type":"turn/start","data":{"turn":1}}"#.into(),
        r#"{"type":"agent/inbox/spliced","data":{"target":"next-step","start":0,"removedCount":3000,"inserted":[]}}"#.into(),
        CLAIM.into(),
        r#"{"type":"step/start","data":{"turn":1,"step":1}}"#.into(),
    ];
    for goal in &goals {
        log.push(format!(r#"{{"type":"user/message","data":{goal}}}"#));
    }
    // Not the last line (that would be a torn tail, dropped).
    log.push("{cut".into());
    log.push(HEADER.to_owned());
    std::fs::write(&file, log.join("\n") + "\n").unwrap();
    let output = courier(&["validate", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 1, "one JSON line per file");
    let report: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    let violations = report["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 3000);
    assert_eq!(violations[0]["line"], 8);
    assert_eq!(violations[2999]["line"], 3007);
    assert_eq!(violations[1]["property"], "goal-rounds");
    assert_eq!(report["status"], "unreadable");
    assert_eq!(report["error"]["line"], 3008);
}

#[test]
fn truthful_errors_a_line_that_is_not_an_object_is_unreadable_at_its_line() {
    let folder = tempfile::tempdir().unwrap();
    for line in [
        r#"["x"]"#,
        r#"["session/end-seed"]"#,
        "3",
        "null",
        r#""turn/start""#,
    ] {
        let file = folder.path().join("array.jsonl");
        std::fs::write(&file, format!("{HEADER}\n{line}\n")).unwrap();
        let output = courier(&["validate", file.to_str().unwrap()]);
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{line}: {error}");
        let expected = format!("error: {}:2: cannot parse: invalid type:", file.display());
        assert!(error.starts_with(&expected), "{line}: {error}");
        assert!(error.contains("expected a JSON object"), "{line}: {error}");
    }
}

#[test]
fn truthful_errors_a_duplicate_key_is_refused_however_the_line_is_spaced() {
    let spellings = [
        r#"{"type":"assistant/chunk","type":"session/end-seed","data":{}}"#,
        r#"{ "type": "assistant/chunk", "type": "session/end-seed", "data": {} }"#,
        "{\"type\"\t:\t\"assistant/chunk\" ,\t\"type\":\"session/end-seed\",\"data\":{}}",
        r#"{"type":"turn/start","data":{"turn":1},"data":{"turn":2}}"#,
        r#"{ "data": {"turn":1}, "type": "turn/start", "data": {"turn":2} }"#,
        r#"{"type":"x","surfaceOp":"a","surfaceOp":"b"}"#,
        r#"{"type":"x","surfaceOp":"a","surf\u0061ceOp":"b"}"#,
    ];
    for line in spellings {
        let log = format!("{HEADER}\n{line}\n");
        let error = validate(log.as_bytes(), |_| {}).unwrap_err();
        assert_eq!(error.line, 2, "{line}: {error}");
        assert!(
            error.reason.starts_with("cannot parse: duplicate key `"),
            "{line}: {error}"
        );
    }
}

#[test]
fn never_panic_a_closed_or_full_stdout_ends_validate_cleanly() {
    use std::process::{Command, Stdio};
    let binary = env!("CARGO_BIN_EXE_courier");
    let logs: Vec<String> = (0..200)
        .map(|_| "tests/logs/goal-rounds-skips-and-repeats.jsonl".to_owned())
        .collect();
    // The reader goes away before the first line (before the child
    // starts, so no write of its gets in first): the run ends quietly.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = Command::new(binary)
        .arg("validate")
        .args(&logs)
        .current_dir(common::workspace())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!error.contains("panicked"), "{error}");
    // Quietly, with every command's code for a closed stdout (README:
    // "Files, errors and exit codes"): the verdict of the unread files is
    // unknown.
    assert!(error.is_empty(), "{error}");
    assert_eq!(output.status.code(), Some(2), "{error}");
    // A full disk under stdout is an error line and exit 2.
    let Ok(full) = std::fs::File::create("/dev/full") else {
        return;
    };
    let output = Command::new(binary)
        .args(["validate", "--format", "json"])
        .args(&logs)
        .current_dir(common::workspace())
        .stdout(full)
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{error}");
    assert!(
        error.starts_with("error: cannot write to stdout:"),
        "{error}"
    );
}
