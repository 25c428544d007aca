//! Protocol lines checked from either end (tests/protocol.rs for the
//! served core, tests/dsh.rs for the dsh adapter): the `bench` line, and
//! ids that are not strings. Only the
//! `courier` package's tests include it: it runs the `courier` binary.

use std::path::Path;

use crate::common::{courier, stdout};

/// The protocol's `bench` line (docs/PROTOCOL.md) from the implementation
/// that `program` with `arguments` serves: 3 claim cycles of 4 answer a
/// positive duration, and the session log they write is valid and holds 3
/// claims of the whole batch, 12 `user/message`s and 3 turns; a bad request
/// answers a protocol error naming its line, and so does a log path where
/// a file is (a protocol line never replaces one), which stays as it was;
/// the protocol's own agent is left idle.
pub(crate) fn check_bench_line(program: &Path, arguments: &[&str]) {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let log = scratch.path().join("bench.jsonl");
    let request = serde_json::json!({ "bench": { "batch": 4, "cycles": 3, "log": log } });
    let lines = format!(
        "{request}\n{{\"bench\":{{\"batch\":0,\"cycles\":3}}}}\n{request}\n{{\"query\":\"status\"}}\n"
    );
    let text = answers(program, arguments, &lines);
    let answers: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .collect();
    let settled = serde_json::json!({ "settled": true });
    let [bench, end_1, refused, end_2, again, end_3, status, end_4] = &answers[..] else {
        panic!("four answers, each settled:\n{text}");
    };
    assert!(
        [end_1, end_2, end_3, end_4]
            .iter()
            .all(|end| **end == settled),
        "{text}"
    );
    assert_eq!(bench["bench"]["batch"], 4, "{text}");
    assert_eq!(bench["bench"]["cycles"], 3, "{text}");
    let nanoseconds = bench["bench"]["nanoseconds"].as_u64();
    assert!(nanoseconds.is_some_and(|time| time > 0), "{text}");
    let why = refused["error"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("line 2: bench batch must be a positive integer"),
        "{text}"
    );
    let why = again["error"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("line 3: bench log ")
            && why.ends_with(" exists: refused (write a new file)"),
        "{text}"
    );
    assert_eq!(*status, serde_json::json!({ "status": "idle" }), "{text}");

    let log_name = log.display().to_string();
    let validated = courier(&["validate", &log_name]);
    assert_eq!(validated.status.code(), Some(0), "{}", stdout(&validated));
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("the bench wrote its log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .collect();
    let of_type = |kind: &'static str| events.iter().filter(move |event| event["type"] == kind);
    let claims: Vec<u64> = of_type("agent/inbox/spliced")
        .filter(|splice| {
            splice["data"]["inserted"]
                .as_array()
                .is_some_and(Vec::is_empty)
        })
        .filter_map(|splice| splice["data"]["removedCount"].as_u64())
        .collect();
    assert_eq!(claims, [4, 4, 4], "one claim of the whole batch per cycle");
    assert_eq!(of_type("user/message").count(), 12, "every message enters");
    assert_eq!(of_type("turn/end").count(), 3, "one turn per cycle");
}

/// A message id (or a `remove` id) that is not a JSON string, or a target
/// or wakeup that is not one of its words, is a protocol error at either
/// end (docs/PROTOCOL.md), naming its line and input kind, and changes
/// nothing; the same id as a string is taken. dsh's own inbox
/// would take `1` and deliver it, so its adapter checks.
pub(crate) fn check_ids_are_strings(program: &Path, arguments: &[&str]) {
    let message = |id: &str| {
        format!(
            r#"{{"id":{id},"role":"user","content":[{{"type":"text","text":"x"}}],"source":{{"kind":"user"}}}}"#
        )
    };
    let lines = [
        format!(
            r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"no-wake"}}"#,
            message("1")
        ),
        format!(
            r#"{{"input":"splice","target":"next-step","start":0,"removed":0,"inserted":[{},{}]}}"#,
            message(r#""a""#),
            message("null")
        ),
        r#"{"input":"remove","id":{}}"#.to_owned(),
        r#"{"query":"inbox"}"#.to_owned(),
        format!(
            r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"no-wake"}}"#,
            message(r#""1""#)
        ),
        r#"{"query":"inbox"}"#.to_owned(),
        format!(
            r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"maybe"}}"#,
            message(r#""2""#)
        ),
        format!(
            r#"{{"input":"append","message":{},"target":"nowhere"}}"#,
            message(r#""3""#)
        ),
        r#"{"query":"inbox"}"#.to_owned(),
    ];
    let text = answers(program, arguments, &(lines.join("\n") + "\n"));
    let settled = serde_json::json!({ "settled": true });
    let answers: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .filter(|answer| *answer != settled)
        .collect();
    let errors: Vec<&str> = answers
        .iter()
        .filter_map(|answer| answer["error"].as_str())
        .collect();
    let [send, splice, remove, wakeup, target] = errors[..] else {
        panic!("five errors:\n{text}");
    };
    for (error, said) in [
        (
            wakeup,
            "line 7: input send: wakeup: unknown variant `maybe`, expected `wake` or `no-wake`",
        ),
        (
            target,
            "line 8: input append: target: unknown variant `nowhere`, expected `next-turn` or `next-step`",
        ),
    ] {
        assert_eq!(error, said, "{text}");
    }
    for (error, start) in [
        (send, "line 1: input send: "),
        (splice, "line 2: input splice: "),
        (remove, "line 3: input remove: "),
    ] {
        assert!(error.starts_with(start), "{error} is not {start}...");
        assert!(error.contains("expected a string"), "{error}");
    }
    let inbox = |next_turn: &[&str]| serde_json::json!({ "inbox": { "next-turn": next_turn, "next-step": [] } });
    assert_eq!(answers[3], inbox(&[]), "nothing changed:\n{text}");
    let inboxes: Vec<&serde_json::Value> = answers
        .iter()
        .filter(|answer| answer.get("inbox").is_some())
        .collect();
    assert_eq!(
        inboxes,
        [&inbox(&[]), &inbox(&["1"]), &inbox(&["1"])],
        "the string id is taken, unknown words change nothing:\n{text}"
    );
}

/// What `program` with `arguments` answers to `lines` on its stdin, once
/// it ended with exit 0 at their end.
pub(crate) fn answers(program: &Path, arguments: &[&str], lines: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(program)
        .args(arguments)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the implementation starts");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    stdin
        .write_all(lines.as_bytes())
        .expect("it reads its stdin");
    drop(stdin);
    let output = child.wait_with_output().expect("it runs");
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    text
}
