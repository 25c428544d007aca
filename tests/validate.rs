//! `courier validate`: every recorded dsh log is accepted, every log the core
//! writes is accepted, each hand-written bad log in `tests/logs/` is rejected
//! with the property and line its header names, and broken input gives a
//! clean error (never a panic).

mod common;

use common::{courier, stdout};

use std::io::BufRead;
use std::path::{Path, PathBuf};

use courier_check::validate::{Finding, Summary, Unreadable, validate};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

fn fixtures() -> Vec<PathBuf> {
    let fixtures = common::files_with_extension(&common::dsh_logs(), "jsonl");
    assert!(fixtures.len() >= 101, "found only {} logs", fixtures.len());
    fixtures
}

/// Validates in memory; the findings, or why the log is unreadable.
fn check(log: impl BufRead) -> (Vec<Finding>, Result<Summary, Unreadable>) {
    let mut findings = Vec::new();
    let outcome = validate(log, |finding| findings.push(finding));
    (findings, outcome)
}

#[test]
fn every_recorded_dsh_log_is_accepted() {
    for file in fixtures() {
        let (findings, outcome) = check(std::fs::read(&file).unwrap().as_slice());
        assert_eq!(findings, [], "{}", file.display());
        let summary = outcome.unwrap_or_else(|e| panic!("{}:{e}", file.display()));
        assert!(summary.lines > 1 && !summary.stopped, "{}", file.display());
    }
}

/// The logs dsh wrote across crashes and resumes (SPEC §11).
fn restart_fixtures() -> Vec<PathBuf> {
    let fixtures = common::files_with_extension(&common::dsh_restart_logs(), "jsonl");
    assert!(fixtures.len() >= 6, "found only {} logs", fixtures.len());
    fixtures
}

#[test]
fn every_dsh_log_written_across_a_restart_is_accepted() {
    for file in restart_fixtures() {
        let (findings, outcome) = check(std::fs::read(&file).unwrap().as_slice());
        assert_eq!(findings, [], "{}", file.display());
        let summary = outcome.unwrap_or_else(|e| panic!("{}:{e}", file.display()));
        assert!(summary.lines > 1 && !summary.stopped, "{}", file.display());
    }
    let mut arguments = vec!["validate".to_string()];
    arguments.extend(restart_fixtures().iter().map(|f| f.display().to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let output = courier(&arguments);
    assert_eq!(
        (stdout(&output), output.status.code()),
        (String::new(), Some(0))
    );
}

/// r05 resumes with X and A pending from before its `session/end-seed`: a
/// resume's marker. The same log headed as a fork makes that end-seed its
/// boundary, so the inbox starts empty there and the next splice breaks.
#[test]
fn only_a_forks_first_end_seed_empties_the_inbox() {
    let file = common::dsh_restart_logs().join("r05-restart-loses-claim.jsonl");
    let log = std::fs::read_to_string(file).unwrap();
    let (findings, outcome) = check(log.as_bytes());
    assert_eq!((findings, outcome.unwrap().is_valid()), (vec![], true));
    let (header, events) = log.split_once('\n').unwrap();
    let fork = header.replacen('{', r#"{"seedLength":3,"parentSession":"p","#, 1);
    let (findings, _) = check(format!("{fork}\n{events}").as_bytes());
    let found: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        ["5: replay-matches: next-turn splice starts at 1 past length 0"]
    );
}

/// dsh forks only between turns (`_forkSeed` in `core/session/src/index.ts`
/// refuses a boundary inside an open turn: `OPEN_TURN`), so a fork whose
/// seed ends inside one is not a log dsh writes: `balanced` at the
/// boundary. Before, the fork's empty start hid the open turn.
#[test]
fn a_forks_seed_that_ends_inside_an_open_turn_is_unbalanced() {
    let message = |id: &str| {
        format!(r#"{{"id":"{id}","role":"user","content":[],"source":{{"kind":"user"}}}}"#)
    };
    let send = |id: &str| {
        format!(
            r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":0,"inserted":[{}]}}}}"#,
            message(id)
        )
    };
    let claim = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}}"#;
    let turn = |kind: &str, turn: u64| {
        format!(
            r#"{{"type":"turn/{kind}","data":{{"turn":{turn}{}}}}}"#,
            if kind == "end" {
                r#","reason":{"kind":"completed"}"#
            } else {
                ""
            }
        )
    };
    let step = |kind: &str, turn: u64| {
        format!(r#"{{"type":"step/{kind}","data":{{"turn":{turn},"step":1}}}}"#)
    };
    let admit = |id: &str| format!(r#"{{"type":"user/message","data":{}}}"#, message(id));
    let seed = |closed: bool| {
        let mut seed = vec![
            send("A"),
            turn("start", 1),
            claim.to_owned(),
            step("start", 1),
            admit("A"),
            step("end", 1),
        ];
        if closed {
            seed.push(turn("end", 1));
        }
        seed
    };
    let log = |seed: Vec<String>| {
        let header = format!(
            r#"{{"type":"session","version":0,"id":"c","createdAt":0,"delegationDepth":1,"parentSession":"p","seedLength":{}}}"#,
            seed.len()
        );
        let fork = [
            send("B"),
            turn("start", 2),
            claim.to_owned(),
            step("start", 2),
            admit("B"),
            step("end", 2),
            turn("end", 2),
        ];
        let end_seed = r#"{"type":"session/end-seed","data":{}}"#.to_owned();
        let lines = [vec![header], seed, vec![end_seed], fork.to_vec()].concat();
        lines.join("\n") + "\n"
    };
    let (findings, _) = check(log(seed(false)).as_bytes());
    let found: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        ["8: balanced: the fork's seed ends inside open turn 1 (dsh forks only between turns)"]
    );
    // Closed before the boundary, the same seed is a fork dsh writes.
    let (findings, outcome) = check(log(seed(true)).as_bytes());
    assert_eq!(findings.len(), 0, "{findings:?}");
    assert!(outcome.unwrap().is_valid());
}

/// What a broken resume leaves in a log, as `tests/logs` holds it: the
/// line of the first event that shows it, and what is wrong there.
#[test]
fn a_broken_resume_is_seen_at_the_line_that_shows_it() {
    let cases = [
        (
            "resume-closes-crash-without-closers",
            "7: resume-closes: session/end-seed while turn 1 is open: a resume closes it first",
        ),
        (
            "resume-closes-interrupted-inside-step",
            "6: resume-closes: turn/end 1 interrupted inside step 1.1",
        ),
        (
            "no-wake-stays-idle-resume-wakes",
            "8: no-wake-stays-idle: turn/start 2 after a restart with no send since: \
             a resume wakes nothing",
        ),
        (
            "balanced-resume-renumbers-from-turn-end",
            "18: balanced: turn/start 2 where turn 3 was next",
        ),
        (
            "replay-matches-resume-claims-again",
            "12: replay-matches: next-turn splice at 0 removes 1 of 0",
        ),
    ];
    for (name, finding) in cases {
        let file = common::workspace().join("tests/logs").join(name);
        let log = std::fs::read(file.with_extension("jsonl")).unwrap();
        let (findings, outcome) = check(log.as_slice());
        let found: Vec<String> = findings.iter().map(ToString::to_string).collect();
        assert_eq!(found, [finding], "{name}");
        assert!(outcome.unwrap().stopped, "{name}");
    }
}

#[test]
fn the_cli_accepts_every_recorded_dsh_log() {
    let mut arguments = vec!["validate".to_string()];
    arguments.extend(fixtures().iter().map(|f| f.display().to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let output = courier(&arguments);
    assert_eq!(stdout(&output), "");
    assert_eq!(output.status.code(), Some(0));
    let summary = String::from_utf8(output.stderr).unwrap();
    assert!(
        summary.ends_with(" valid, 0 invalid, 0 unreadable\n"),
        "{summary}"
    );
}

/// `(property, line)` pairs a `tests/logs` header promises under `expect`.
fn expected(file: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(file).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let pairs = header["expect"].as_array().expect("a header with `expect`");
    pairs
        .iter()
        .map(|pair| {
            let property = pair["property"].as_str().unwrap().to_string();
            (property, pair["line"].as_u64().unwrap())
        })
        .collect()
}

/// A detail says what the log shows: a second `step/end` finds no step
/// open (not "the open step is" the one that ended).
#[test]
fn a_step_end_with_no_step_open_says_so() {
    let log = common::workspace().join("tests/logs/balanced-step-end-twice.jsonl");
    let (findings, outcome) = check(std::fs::read(log).unwrap().as_slice());
    assert!(outcome.is_ok(), "{outcome:?}");
    let details: Vec<&str> = findings
        .iter()
        .map(|f| f.violation.detail.as_str())
        .collect();
    assert_eq!(
        details,
        ["step/end 1.1 but no step is open (step 1.1 has ended)"]
    );
}

#[test]
fn each_bad_log_is_rejected_with_its_property_and_line() {
    let logs = common::files_with_extension(&common::workspace().join("tests/logs"), "jsonl");
    let mut properties = Vec::new();
    for file in &logs {
        let expected = expected(file);
        let (findings, outcome) = check(std::fs::read(file).unwrap().as_slice());
        assert!(outcome.is_ok(), "{}: {outcome:?}", file.display());
        let found: Vec<(String, u64)> = findings
            .iter()
            .map(|f| (f.violation.property.to_string(), f.line))
            .collect();
        assert_eq!(found, expected, "{}: {findings:#?}", file.display());
        let name = file.file_stem().unwrap().to_str().unwrap();
        match expected.first() {
            Some((property, _)) => assert!(name.starts_with(property.as_str()), "{name}"),
            None => assert!(name.starts_with("valid-"), "{name}"),
        }
        properties.extend(expected.into_iter().map(|(property, _)| property));
    }
    for property in [
        "splice-normalized",
        "replay-matches",
        "unique-pending",
        "claim-shape",
        "one-prompt-per-turn",
        "balanced",
        "admission",
        "stop-parks",
        "no-wake-stays-idle",
        "resume-closes",
        "goal-rounds",
    ] {
        assert!(
            properties.iter().any(|p| p == property),
            "no bad log for {property}"
        );
    }
}

#[test]
fn the_cli_names_file_line_property_and_detail() {
    let output = courier(&[
        "validate",
        "tests/logs/claim-shape-head-before-steering.jsonl",
        "tests/logs/goal-rounds-skips-and-repeats.jsonl",
        "tests/logs/valid-concatenated-sessions.jsonl",
    ]);
    assert_eq!(
        stdout(&output),
        "tests/logs/claim-shape-head-before-steering.jsonl:5: claim-shape: \
         turn 1 claims the next-turn head before next-step\n\
         tests/logs/goal-rounds-skips-and-repeats.jsonl:13: goal-rounds: \
         user/message r3 of goal g1 has round 3 after round 1 (expected 2)\n\
         tests/logs/goal-rounds-skips-and-repeats.jsonl:34: goal-rounds: \
         user/message r4 of goal g1 has round 4 after round 4 (expected 5)\n"
    );
    assert_eq!(output.status.code(), Some(1));
    let summary = String::from_utf8(output.stderr).unwrap();
    assert_eq!(summary, "1 valid, 2 invalid, 0 unreadable\n");
}

#[test]
fn the_cli_reports_json_per_file() {
    let output = courier(&[
        "validate",
        "--format",
        "json",
        "tests/logs/balanced-nested-turn.jsonl",
        "tests/logs/valid-concatenated-sessions.jsonl",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let reports: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        reports[0],
        serde_json::json!({
            "file": "tests/logs/balanced-nested-turn.jsonl",
            "status": "invalid",
            "lines": 5,
            "torn": null,
            "torn-frame": null,
            "stopped": true,
            "violations": [{
                "line": 5,
                "property": "balanced",
                "detail": "turn/start 2 while turn 1 is open",
            }],
            "conversions": {
                "total": 0,
                "turn-start-trigger": 0,
                "steering-message": 0,
                "pre-identity-message": 0,
                "turn-end-reason": 0,
            },
        })
    );
    assert_eq!(reports[1]["status"], "valid");
    assert_eq!(reports.len(), 2);
}

#[test]
fn the_cli_exits_2_naming_the_line_that_does_not_parse() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("truncated.jsonl");
    let kept = "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n\
               {\"type\":\"agent/inbox/spliced\",\"data\":{\"target\":\"next-turn\",\"start\":0,\"inserted\":[{\"id\":\"A\",\"role\":\"user\",\"content\":[],\"source\":{\"kind\":\"user\"}}]}}\n\
               {\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n";
    let cut = "{\"type\":\"assistant/chunk\",\"data\":{\"text\":\"cut";
    // Cut in the middle: the file is unreadable there.
    std::fs::write(&file, format!("{kept}{cut}\n{kept}")).unwrap();
    let name = file.display().to_string();
    let output = courier(&[
        "validate",
        &name,
        "tests/logs/valid-concatenated-sessions.jsonl",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let errors = String::from_utf8(output.stderr).unwrap();
    let first = errors.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("error: {name}:4: cannot parse: EOF while parsing")),
        "{errors}"
    );
    assert!(!first.contains("torn"), "{errors}");
    assert!(
        errors.ends_with("1 valid, 0 invalid, 1 unreadable\n"),
        "{errors}"
    );
    // Cut at the end, as a crash leaves it: dropped, and said (SPEC §11).
    std::fs::write(&file, format!("{kept}{cut}")).unwrap();
    let output = courier(&["validate", &name]);
    assert_eq!(
        (stdout(&output), output.status.code()),
        (String::new(), Some(0))
    );
    let errors = String::from_utf8(output.stderr).unwrap();
    assert!(
        errors.starts_with(&format!(
            "note: {name}:4: a torn final line (cannot parse: EOF while parsing"
        )),
        "{errors}"
    );
    let output = courier(&["validate", "--format", "json", &name]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (&report["status"], &report["lines"], &report["torn"]),
        (&"valid".into(), &3.into(), &4.into())
    );
    let missing = courier(&["validate", "tests/logs/no-such-file.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn every_log_the_core_writes_is_accepted() {
    let scenarios = common::all_transcripts();
    assert!(
        scenarios.len() >= 57,
        "found only {} scenarios",
        scenarios.len()
    );
    let folder = tempfile::tempdir().unwrap();
    let mut written = vec!["validate".to_string()];
    let restarts = common::files_with_extension(&common::shared_restart_scenarios(), "txn");
    assert!(
        restarts.len() >= 6,
        "found only {} restart scenarios",
        restarts.len()
    );
    assert!(restarts.iter().all(|restart| scenarios.contains(restart)));
    let mut logs = String::new();
    for scenario in &scenarios {
        let log = common::scenario_log(scenario);
        let (findings, outcome) = check(log.as_bytes());
        assert_eq!(findings, [], "{}:\n{log}", common::display(scenario));
        assert!(outcome.unwrap().is_valid());
        let file = folder
            .path()
            .join(scenario.file_stem().unwrap())
            .with_extension("jsonl");
        std::fs::write(&file, &log).unwrap();
        written.push(file.display().to_string());
        logs.push_str(&log);
    }
    // The logs exercise every durable shape, including canceled splices.
    for shape in [
        "\"agent/inbox/spliced\"",
        "\"outcome\":\"canceled\"",
        "\"turn/start\"",
        "\"step/start\"",
        "\"user/message\"",
        "\"step/end\"",
        "\"turn/end\"",
        "\"interrupted\"",
    ] {
        assert!(logs.contains(shape), "no {shape} in any scenario log");
    }
    let arguments: Vec<&str> = written.iter().map(String::as_str).collect();
    let output = courier(&arguments);
    assert_eq!(
        (stdout(&output), output.status.code()),
        (String::new(), Some(0))
    );
}

#[test]
fn a_log_must_open_with_a_session_header() {
    let chunk = "{\"type\":\"assistant/chunk\",\"data\":{}}\n";
    let (_, outcome) = check(chunk.as_bytes());
    assert_eq!(outcome.unwrap_err().line, 1);
    // A blank line is not JSON: refused in
    // the middle, said torn at the end.
    let (_, outcome) = check("\n \n".as_bytes());
    let error = outcome.unwrap_err();
    assert_eq!(
        (error.line, error.reason.as_str()),
        (1, "a blank line: not JSON")
    );
    let header = "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\r\n";
    let (findings, outcome) = check(header.as_bytes());
    assert_eq!((findings, outcome.unwrap().lines), (vec![], 1));
    let (_, outcome) = check(format!("{header}\r\n").as_bytes());
    let summary = outcome.unwrap();
    assert_eq!(
        (summary.lines, summary.torn.map(|torn| torn.line)),
        (1, Some(2))
    );
    let (_, outcome) = check(format!("{header} \t\n{header}").as_bytes());
    let error = outcome.unwrap_err();
    assert_eq!(error.line, 2);
    assert!(!error.reason.contains("torn"), "{error:?}");
}

/// A transcript given to `validate` (a `#` comment or a command first) is
/// said to be one; other text that is not JSON is not.
#[test]
fn a_transcript_is_said_to_be_one() {
    let hint = "(a transcript? `courier run` runs those)";
    for text in [
        "# a note\nfollowup A\n----\n",
        "followup A\n----\n~inserted A\n",
    ] {
        let error = check(text.as_bytes()).1.unwrap_err();
        assert_eq!(error.line, 1);
        assert!(error.reason.ends_with(hint), "{error:?}");
    }
    for text in ["folowup A\n----\n", "hello\nworld\n"] {
        let error = check(text.as_bytes()).1.unwrap_err();
        assert!(!error.reason.contains(hint), "{error:?}");
    }
}

#[test]
fn non_utf8_bad_numbers_and_bad_shapes_are_unreadable_at_their_line() {
    let header =
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n";
    let cases: [(&[u8], &str); 5] = [
        (b"{\"type\":\"tool/result\",\"data\":\"\xff\"}", "not UTF-8"),
        (
            b"{\"type\":\"turn/start\",\"data\":{\"turn\":1e999}}",
            "cannot parse",
        ),
        (
            b"{\"type\":\"turn/start\",\"data\":{\"turn\":99999999999999999999}}",
            "cannot parse",
        ),
        (
            b"{\"type\":\"turn/start\",\"data\":{\"turn\":-1}}",
            "cannot parse",
        ),
        (
            b"{\"type\":\"goal/change\",\"data\":{}} trailing",
            "cannot parse: trailing",
        ),
    ];
    for (line, reason) in cases {
        // Followed by a line: a final one that is not JSON is a torn tail.
        let log = [header.as_bytes(), line, b"\n", header.as_bytes()].concat();
        let (_, outcome) = check(log.as_slice());
        let error = outcome.unwrap_err();
        assert_eq!(error.line, 2, "{error}");
        assert!(error.reason.starts_with(reason), "{error}");
    }
}

/// Without its newline, a final line that does not read is torn however it
/// fails (the writer never finished it: `repair` and a resume drop it), and
/// the drop says why; with its newline, only one that is not JSON is. An
/// unterminated final line that reads is checked: its violation is found.
#[test]
fn an_unterminated_final_line_is_torn_however_it_fails_and_checked_when_it_reads() {
    let header =
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n";
    let unreadable: [(&[u8], &str); 4] = [
        (
            b"{\"type\":\"turn/start\",\"data\":{}}",
            "`data.turn` is missing",
        ),
        (b"[1,2", "EOF while parsing a list"),
        (b"7", "expected a JSON object"),
        (b"{\"type\":\"tool/result\",\"data\":\"\xff\"}", "not UTF-8"),
    ];
    for (last, reason) in unreadable {
        let (findings, outcome) = check([header.as_bytes(), last].concat().as_slice());
        let summary = outcome.unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(findings, []);
        let torn = summary.torn.clone().expect("torn");
        assert_eq!((summary.lines, torn.line), (1, 2));
        assert!(torn.reason.contains(reason), "{torn:?}");
        let terminated = [header.as_bytes(), last, b"\n"].concat();
        match check(terminated.as_slice()).1 {
            Err(error) => assert_eq!(error.line, 2, "{error}"),
            // Not UTF-8 is what a torn write leaves, terminated or not.
            Ok(summary) => assert_eq!(summary.torn.map(|torn| torn.line), Some(2)),
        }
    }
    let claim_of_nothing = "{\"type\":\"agent/inbox/spliced\",\"data\":{\"target\":\"next-turn\",\"start\":0,\"deleteCount\":1,\"inserted\":[]}}";
    let (findings, outcome) = check(format!("{header}{claim_of_nothing}").as_bytes());
    assert_eq!(outcome.unwrap().torn, None);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].line, 2);
}

/// A delivery record of the wrong shape names the field and what belongs
/// there in the log's words, never serde's names for Courier's own types
/// (`"inserted":[[]]` said "invalid length 0, expected struct Fields with 4
/// elements").
#[test]
fn a_bad_shape_names_its_field_and_what_belongs_there() {
    let header =
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n";
    let message = r#"{"id":"A","role":"user","content":[],"source":{"kind":"user"}}"#;
    let splice = |rest: &str| {
        format!(
            r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":0,{rest}}}}}"#
        )
    };
    let cases = [
        (
            splice(r#""inserted":[[]]"#),
            "agent/inbox/spliced `data.inserted[0]` is an empty array: expected a message \
             (an object with `id`, `role`, `content` and `source`)",
        ),
        (
            splice(&format!(
                r#""inserted":[{message},{{"id":"B","role":"assistant"}}]"#
            )),
            "agent/inbox/spliced `data.inserted[1].role` is the string \"assistant\": expected `user`",
        ),
        (
            splice(r#""inserted":{}"#),
            "agent/inbox/spliced `data.inserted` is an object: expected an array of messages",
        ),
        (
            splice(&format!(r#""inserted":[{message}],"outcome":"done""#)),
            "agent/inbox/spliced `data.outcome` is the string \"done\": expected `canceled` (or no `outcome`)",
        ),
        (
            r#"{"type":"agent/inbox/spliced","data":{"target":"now","start":0,"inserted":[]}}"#
                .into(),
            "agent/inbox/spliced `data.target` is the string \"now\": expected `next-turn` or `next-step`",
        ),
        (
            r#"{"type":"step/end","data":{"turn":1,"step":-1}}"#.into(),
            "step/end `data.step` is -1: expected a whole number from 0 to 18446744073709551615",
        ),
        (
            r#"{"type":"turn/start","data":{"turn":18446744073709551616}}"#.into(),
            "turn/start `data.turn` is 1.8446744073709552e+19: expected a whole number \
             from 0 to 18446744073709551615",
        ),
        (
            r#"{"type":"user/message","data":[1,2,3,4]}"#.into(),
            "user/message `data` is an array: expected a message \
             (an object with `id`, `role`, `content` and `source`)",
        ),
        (
            r#"{"type":"turn/start"}"#.into(),
            "turn/start `data` is missing: expected an object",
        ),
    ];
    for (line, reason) in cases {
        let log = format!("{header}{line}\n");
        let (_, outcome) = check(log.as_bytes());
        let error = outcome.unwrap_err();
        assert_eq!(error.to_string(), format!("2: cannot parse: {reason}"));
    }
}

/// A proptest runner with a fixed seed and no regression files: the same
/// cases every run.
fn runner() -> TestRunner {
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// The 1-based line holding byte `offset` of `log`.
fn line_of(log: &[u8], offset: usize) -> u64 {
    1 + log[..offset].iter().filter(|&&byte| byte == b'\n').count() as u64
}

#[test]
fn a_log_cut_inside_a_line_is_dropped_at_the_end_and_unreadable_in_the_middle() {
    let logs: Vec<Vec<u8>> = fixtures()
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let cuts = (0..logs.len(), any::<prop::sample::Index>());
    runner()
        .run(&cuts, |(which, cut)| {
            let log = &logs[which];
            let cut = cut.index(log.len());
            let line_start = log[..cut]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |n| n + 1);
            // Keep at least one byte of the line and drop at least one.
            prop_assume!(cut > line_start && log[cut] != b'\n');
            let line = line_of(log, cut);
            let terminated = [&log[..cut], b"\n"].concat();
            for torn in [&log[..cut], &terminated[..]] {
                // Torn only while it is the last line, terminated or not
                // (SPEC §11): dropped, and the prefix before it is valid (a
                // log may end anywhere). A torn header is all there is,
                // which `courier repair` refuses too: unreadable.
                let (findings, outcome) = check(torn);
                prop_assert_eq!(findings, vec![]);
                match outcome {
                    Ok(summary) => {
                        prop_assert!(line > 1);
                        prop_assert_eq!(
                            (summary.lines, summary.torn.as_ref().map(|torn| torn.line)),
                            (line - 1, Some(line))
                        );
                        prop_assert!(summary.is_valid());
                    }
                    Err(error) => {
                        prop_assert_eq!(error.line, 1);
                        prop_assert!(error.reason.contains(
                            "a torn only line, as a crash leaves it: no `session` header was kept"
                        ));
                    }
                }
            }
            let followed = [&terminated[..], b"{\"type\":\"x\",\"data\":{}}\n"].concat();
            let Err(error) = check(&followed[..]).1 else {
                return Err(TestCaseError::fail("a cut line in the middle was accepted"));
            };
            prop_assert!(!error.reason.contains("torn"), "{}", error);
            Ok(())
        })
        .unwrap();
}

#[test]
fn garbled_bytes_give_a_clean_verdict_at_or_after_their_line() {
    let logs: Vec<Vec<u8>> = fixtures()
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let garbles = (
        0..logs.len(),
        any::<prop::sample::Index>(),
        prop::collection::vec(any::<u8>(), 1..24),
        0..4usize,
    );
    // How many garbled logs came out valid, invalid and unreadable.
    let verdicts = std::cell::Cell::new([0u32; 3]);
    runner()
        .run(&garbles, |(which, at, bytes, removed)| {
            let mut log = logs[which].clone();
            let at = at.index(log.len());
            let end = (at + removed).min(log.len());
            log.splice(at..end, bytes.iter().copied());
            let line = line_of(&log, at);
            let (findings, outcome) = check(log.as_slice());
            for finding in &findings {
                prop_assert!(finding.line >= line, "{} before line {}", finding, line);
            }
            let mut counts = verdicts.get();
            match outcome {
                Ok(summary) => counts[usize::from(!summary.is_valid())] += 1,
                Err(error) => {
                    let garbled = line + bytes.iter().filter(|&&b| b == b'\n').count() as u64;
                    prop_assert!((line..=garbled).contains(&error.line), "{}", error);
                    counts[2] += 1;
                }
            }
            verdicts.set(counts);
            Ok(())
        })
        .unwrap();
    // Byte noise almost always breaks the JSON; both verdicts must occur.
    let [valid, _, unreadable] = verdicts.get();
    assert!(
        valid > 0 && unreadable > 0,
        "{valid} valid, {unreadable} unreadable"
    );
}

#[test]
fn moved_lines_give_violations_at_or_after_the_move_and_never_a_panic() {
    let logs: Vec<Vec<String>> = fixtures()
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        })
        .collect();
    let moves = (0..logs.len(), any::<prop::sample::Index>(), 0..3usize);
    let invalid = std::cell::Cell::new(0);
    runner()
        .run(&moves, |(which, at, kind)| {
            let mut lines = logs[which].clone();
            // Never line 0: without its header the log is not a session log.
            let at = 1 + at.index(lines.len() - 1);
            let next = (at + 1).min(lines.len() - 1);
            match kind {
                0 => drop(lines.remove(at)),
                1 => lines.insert(at, lines[at].clone()),
                _ => lines.swap(at, next),
            }
            let (findings, outcome) = check(lines.join("\n").as_bytes());
            prop_assert!(outcome.is_ok(), "{:?}", outcome);
            for finding in &findings {
                prop_assert!(
                    finding.line > at as u64,
                    "{} before line {}",
                    finding,
                    at + 1
                );
            }
            invalid.set(invalid.get() + u32::from(!findings.is_empty()));
            Ok(())
        })
        .unwrap();
    assert!(invalid.get() > 0, "no moved line broke a property");
}

/// A violation stops the checking, not the reading: a line further on
/// that no reader can read still makes the log unreadable (2 wins over 1),
/// after the violation is reported; a torn final line after a stop is
/// still only dropped.
#[test]
fn a_stop_at_a_violation_still_reads_the_lines_after_it() {
    let header = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#;
    let broken = r#"{"type":"step/start","data":{"turn":1,"step":1}}"#;
    let later = r#"{"type":"turn/start","data":{"turn":1}}"#;
    let log = format!("{header}\n{broken}\n{later}\n{{\"type\":\n{later}\n");
    let (findings, outcome) = check(log.as_bytes());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].line, 2);
    let unreadable = outcome.expect_err("line 4 is not JSON");
    assert_eq!(unreadable.line, 4, "{unreadable:?}");
    let torn = format!("{header}\n{broken}\n{later}\n{{\"type\":");
    let (findings, outcome) = check(torn.as_bytes());
    assert_eq!(findings.len(), 1, "{findings:?}");
    let summary = outcome.expect("a torn final line is dropped");
    assert!(summary.stopped, "{summary:?}");
    assert_eq!(summary.lines, 2, "{summary:?}");
    assert_eq!(summary.torn.map(|torn| torn.line), Some(4));
}
