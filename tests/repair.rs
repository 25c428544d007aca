//! `courier repair` and the kept-log reader behind it, on real dsh logs:
//! every recorded log reads; every prefix of two of them (cut at each line
//! end, and in the middle of each line) reads, dropping a line only when it
//! is torn, and repairs to a log the validator accepts; the command never
//! writes its input and refuses `--out` naming it.

mod common;

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use courier_check::validate::validate;
use courier_core::{MessageId, Target};
use courier_runtime::kept::{self, Torn};

fn fixture(name: &str) -> PathBuf {
    common::dsh_logs().join(name)
}

fn dsh_logs() -> Vec<PathBuf> {
    common::files_with_extension(&common::dsh_logs(), "jsonl")
}

/// The repaired log: the kept bytes, then what a resume appends.
fn repaired(text: &[u8]) -> Result<Vec<u8>, String> {
    let kept = kept::read(text).map_err(|error| error.to_string())?;
    let length = usize::try_from(kept.kept_bytes).expect("small");
    let mut bytes = text[..length].to_vec();
    bytes.extend_from_slice(kept.appended_lines().as_bytes());
    Ok(bytes)
}

fn assert_valid(bytes: &[u8], what: &str) {
    let mut findings = Vec::new();
    let summary = validate(BufReader::new(bytes), |finding| findings.push(finding));
    let summary = summary.unwrap_or_else(|error| panic!("{what}: unreadable: {error}"));
    assert!(summary.is_valid(), "{what}: {findings:?}");
}

#[test]
fn every_recorded_dsh_log_reads() {
    let logs = dsh_logs();
    assert!(logs.len() >= 100, "the dsh fixtures are missing");
    for log in &logs {
        let kept = kept::read_file(log).unwrap_or_else(|error| panic!("{log:?}: {error}"));
        assert_eq!(kept.torn, None, "{log:?}");
    }
}

#[test]
fn every_prefix_of_a_dsh_log_repairs() {
    for name in [
        "max-tokens-continue__session.jsonl",
        "parallel-tool-calls__session.jsonl",
    ] {
        let text = fs::read(fixture(name)).expect("a vendored fixture");
        let ends = text.iter().enumerate().filter(|(_, byte)| **byte == b'\n');
        let mut start = 0;
        for (line, (end, _)) in ends.enumerate() {
            let whole = &text[..=end];
            let bytes = repaired(whole).unwrap_or_else(|error| panic!("{name}:{error}"));
            assert_valid(&bytes, &format!("{name} cut after line {}", line + 1));
            let middle = &text[..(start + end) / 2];
            if line == 0 {
                // Cut inside the header: no session to resume.
                let refused = kept::read(middle).expect_err("a torn header");
                assert!(
                    refused.reason.contains("its only line is torn"),
                    "{refused}"
                );
                start = end + 1;
                continue;
            }
            let kept = kept::read(middle).unwrap_or_else(|error| panic!("{name}:{error}"));
            let torn = Some(Torn::NoNewline {
                line: line as u64 + 1,
            });
            assert_eq!(kept.torn, torn, "{name} cut inside line {}", line + 1);
            assert_eq!(kept.kept_bytes as usize, start);
            start = end + 1;
        }
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn courier_repair(arguments: &[&Path]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_courier"))
        .arg("repair")
        .args(arguments)
        .output()
        .expect("the courier binary runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("utf-8"),
        stderr: String::from_utf8(output.stderr).expect("utf-8"),
    }
}

/// A recorded log cut five bytes into its first `step/end` (a torn tail in
/// an open step), in a fresh folder: the folder, the cut file, the whole
/// log's text, and where the torn line starts.
fn cut_mid_step() -> (tempfile::TempDir, PathBuf, String, usize) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let input = folder.path().join("cut.jsonl");
    let text = fs::read_to_string(fixture("max-tokens-continue__session.jsonl")).expect("fixture");
    let cut = text.find(r#""type":"step/end""#).expect("a step ends") - 1;
    fs::write(&input, &text[..cut + 5]).expect("writable");
    (folder, input, text, cut)
}

#[test]
fn repair_writes_a_new_file_and_never_its_input() {
    let (folder, input, text, cut) = cut_mid_step();
    let out = folder.path().join("repaired.jsonl");
    let run = courier_repair(&[&input, Path::new("--out"), &out]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("torn tail: dropped"), "{}", run.stdout);
    assert!(
        run.stdout.contains("turn/end 1 interrupted"),
        "{}",
        run.stdout
    );
    assert_eq!(fs::read_to_string(&input).expect("kept"), &text[..cut + 5]);
    let repaired = fs::read(&out).expect("written");
    assert!(repaired.starts_with(&text.as_bytes()[..cut]));
    assert_valid(&repaired, "the repaired file");
    let again = courier_repair(&[&out]);
    assert!(
        again.stdout.contains("closers to append: 0"),
        "{}",
        again.stdout
    );

    let run = courier_repair(&[&input, Path::new("--out"), &input]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("is the input"), "{}", run.stderr);
    assert!(run.stderr.contains("cut.jsonl"), "{}", run.stderr);
    let run = courier_repair(&[&input, Path::new("--out"), &out]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("exists"), "{}", run.stderr);
    assert_eq!(fs::read(&out).expect("kept"), repaired);
    assert_eq!(fs::read_to_string(&input).expect("kept"), &text[..cut + 5]);
}

/// `--out /dev/stdout` writes the repaired log to stdout, alone (the
/// report goes to stderr), as every command writes a device in place; a
/// regular file that exists is still refused. Before, `/dev/stdout` was
/// refused as a file that exists.
#[test]
fn repair_writes_stdout_in_place_with_the_report_on_stderr() {
    let (_folder, input, text, cut) = cut_mid_step();
    let run = courier_repair(&[&input, Path::new("--out"), Path::new("/dev/stdout")]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with(&text[..cut]), "{}", run.stdout);
    assert!(!run.stdout.contains("torn tail"), "{}", run.stdout);
    assert!(run.stderr.contains("torn tail: dropped"), "{}", run.stderr);
    assert_valid(run.stdout.as_bytes(), "the log written to stdout");
    let run = courier_repair(&[&input, Path::new("--out"), Path::new("/dev/null")]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// A pending id escaping a lone surrogate (`\ud83d`, read as U+FD83D)
/// stays escaped in the repaired file: the kept lines are copied as they
/// are and the lines appended never write the stand-in raw, so the file
/// validates and reads back to the one id, to dsh as to Courier.
#[test]
fn repair_keeps_a_lone_surrogate_id_escaped() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let text = fs::read_to_string(fixture("max-tokens-continue__session.jsonl")).expect("fixture");
    let id = "3a6a5c9e-0f9c-4c8f-9f57-6f2f7f3d5a01";
    let lone = text.replace(id, &format!("{id}\\ud83d"));
    // The header, the send, `turn/start`: turn 1 open, the send pending.
    let cut: String = lone.split_inclusive('\n').take(3).collect();
    assert!(cut.contains(r#"01\ud83d""#), "{cut}");
    let input = folder.path().join("lone.jsonl");
    fs::write(&input, &cut).expect("writable");
    let out = folder.path().join("repaired.jsonl");
    let run = courier_repair(&[&input, Path::new("--out"), &out]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("turn/end 1 interrupted"),
        "{}",
        run.stdout
    );
    let repaired = fs::read_to_string(&out).expect("written");
    assert!(repaired.starts_with(&cut), "{repaired}");
    assert!(!repaired.contains('\u{fd83d}'), "{repaired}");
    assert_valid(repaired.as_bytes(), "the repaired file");
    let kept = kept::read(repaired.as_bytes()).expect("reads");
    let pending: Vec<&MessageId> = kept
        .replay
        .inbox()
        .list(Target::NextTurn)
        .iter()
        .map(|message| message.id())
        .collect();
    assert_eq!(
        pending,
        [&MessageId::from(format!("{id}\u{fd83d}").as_str())]
    );
}

#[test]
fn repair_refuses_a_corrupt_log_naming_the_line() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let input = folder.path().join("corrupt.jsonl");
    let text = fs::read_to_string(fixture("max-tokens-continue__session.jsonl")).expect("fixture");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{not json";
    fs::write(&input, lines.join("\n") + "\n").expect("writable");
    let run = courier_repair(&[&input]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("corrupt.jsonl:3:"), "{}", run.stderr);
}

/// What cutting one log at every line end and inside every line gave.
#[derive(Default)]
struct Cuts {
    prefixes: usize,
    /// Cut inside the header: refused, as a resume refuses it.
    headerless: usize,
    /// Cut inside a fork's seed, before its boundary: refused, as a resume
    /// refuses it (the fork never began).
    seeded: usize,
    closed: usize,
    torn: usize,
    /// Cuts inside a line, of the logs that repair or were cut inside
    /// their header.
    inside: usize,
}

impl Cuts {
    /// Cuts `text` (named `what`) at every line end and inside every line:
    /// each prefix reads, and its repair (kept lines plus closers) is a log
    /// the validator accepts.
    fn add(&mut self, what: &str, text: &[u8]) {
        let mut start = 0;
        for end in (0..text.len()).filter(|&index| text[index] == b'\n') {
            for cut in [end + 1, (start + end) / 2] {
                self.prefixes += 1;
                self.inside += usize::from(cut > start && cut <= end);
                let kept = match kept::read(&text[..cut]) {
                    Ok(kept) => kept,
                    // A cut inside the header keeps no session to resume.
                    Err(error) if start == 0 && cut <= end => {
                        assert!(error.reason.contains("no `session` header kept"), "{error}");
                        self.headerless += 1;
                        continue;
                    }
                    Err(error) if error.reason.contains("inside its fork's seed") => {
                        self.seeded += 1;
                        self.inside -= usize::from(cut > start && cut <= end);
                        continue;
                    }
                    Err(error) => panic!("{what} cut at byte {cut}: {error}"),
                };
                let bytes = repaired(&text[..cut]).expect("read above");
                assert_valid(&bytes, &format!("{what} cut at byte {cut}"));
                self.closed += usize::from(!kept.closers().is_empty());
                self.torn += usize::from(kept.torn.is_some());
            }
            start = end + 1;
        }
        assert_eq!(
            self.torn + self.headerless,
            self.inside,
            "a line is dropped only when cut inside it"
        );
    }
}

/// Every dsh log cut at every line end and inside every line (a few
/// seconds in debug); prints the figures of the README.
#[test]
fn every_prefix_of_every_dsh_log_repairs() {
    let mut cuts = Cuts::default();
    for log in dsh_logs() {
        let text = fs::read(&log).expect("readable");
        cuts.add(&format!("{log:?}"), &text);
    }
    let Cuts {
        prefixes,
        headerless,
        seeded,
        closed,
        torn,
        ..
    } = cuts;
    assert!(seeded > 0, "the fork logs were cut inside their seeds");
    println!(
        "{prefixes} prefixes: {headerless} cut inside the header and {seeded} inside a fork's seed refused, the rest repaired; {closed} needed closers, {torn} dropped a torn line"
    );
}

/// The log the core writes for every transcript (the project's and the
/// shared ones, restarts and their closers included), cut at every line end
/// and inside every line: a crash at any write leaves a log that repairs
/// to one the validator accepts, so a resume never meets a log the core
/// itself could not have left.
#[test]
fn every_prefix_of_every_scenario_log_repairs() {
    let scenarios = common::all_transcripts();
    assert!(scenarios.len() >= 100, "found only {}", scenarios.len());
    let mut cuts = Cuts::default();
    for scenario in &scenarios {
        let log = common::scenario_log(scenario);
        cuts.add(&common::display(scenario), log.as_bytes());
    }
    assert!(
        cuts.closed > 0 && cuts.torn > 0,
        "the cuts exercised repair"
    );
}

/// `validate` and `repair` read the same logs the same way: on every
/// hand-written log (`tests/logs/`, `tests/legacy-logs/`), a log `repair`
/// refuses is invalid or unreadable at that very line, and a log in which
/// `validate` finds an id pending twice is refused by `repair`. The one
/// difference: a `{{name}}` placeholder pending twice (dsh's snapshot tests
/// wrote placeholders over distinct real ids) is valid, as the fixtures'
/// README asks, but one agent cannot hold two pending messages with one id,
/// so `repair` refuses to resume it and says so.
#[test]
fn validate_and_repair_agree_on_every_hand_written_log() {
    let mut logs = Vec::new();
    for folder in ["tests/logs", "tests/legacy-logs"] {
        logs.extend(common::files_with_extension(
            &common::workspace().join(folder),
            "jsonl",
        ));
    }
    let mut refused = 0;
    let mut placeholders = 0;
    for log in &logs {
        let text = fs::read(log).expect("readable");
        let mut findings = Vec::new();
        let verdict = validate(BufReader::new(text.as_slice()), |f| findings.push(f));
        let first = match &verdict {
            Err(unreadable) => Some((unreadable.line, "unreadable".to_string())),
            Ok(_) => findings
                .first()
                .map(|f| (f.line, f.violation.property.to_string())),
        };
        match kept::read(text.as_slice()) {
            // One file is one session to resume; validate checks a
            // concatenation of sessions as a series.
            Err(error) if error.reason.contains("second `session` header") => {}
            Err(error)
                if error.reason.starts_with("{{") && error.reason.contains("pending twice") =>
            {
                placeholders += 1;
                assert_eq!(first, None, "{log:?}: a placeholder pending twice is valid");
            }
            Err(error) => {
                refused += 1;
                assert_eq!(
                    first.as_ref().map(|(line, _)| *line),
                    Some(error.line),
                    "{log:?}: repair refuses ({error}), validate says {first:?}"
                );
            }
            Ok(_) => assert!(
                first
                    .as_ref()
                    .is_none_or(|(_, property)| property != "unique-pending"),
                "{log:?}: validate says {first:?}, repair accepts it"
            ),
        }
    }
    assert!(refused > 0, "no hand-written log is corrupt");
    assert_eq!(
        placeholders, 1,
        "valid-placeholders-context-and-forks.jsonl"
    );
}

/// A log that numbers its records (dsh's JSONL backend writes `seq` and
/// `time`), cut at every line end: the closers and marker a repair appends
/// go on numbering it, as dsh's own closers do, so dsh's loader (which
/// refuses a `turn/end` after a gap in `seq`) reads the repaired log; they
/// carry the last kept record's `time`. A log without `seq` gets none.
/// When a record's last event happened: its `time`, or for a packed chunk
/// row its `time0` plus every gap of its `dt` (dsh's `decodeStorageRecord`).
fn last_time(record: &serde_json::Value) -> serde_json::Value {
    match record.get("time0") {
        None => record["time"].clone(),
        Some(first) => {
            let gaps = record["data"]["dt"]
                .as_array()
                .expect("a packed row has dt");
            let gaps: i64 = gaps.iter().map(|gap| gap.as_i64().expect("whole")).sum();
            serde_json::Value::from(first.as_i64().expect("whole") + gaps)
        }
    }
}

/// A crash while the model streams leaves a packed chunk row last: the
/// closers a repair appends take its last member's time (`time0` plus its
/// gaps) and go on numbering from its last member. Before, they had no
/// `time` at all, which dsh's restore refuses (`assertSessionEventEnvelope`).
#[test]
fn a_repair_after_a_packed_chunk_row_numbers_and_times_its_closers() {
    let message = r#"{"id":"A","role":"user","content":[{"type":"text","text":"A"}],"source":{"kind":"user"}}"#;
    let log = [
        r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#.to_owned(),
        format!(
            r#"{{"type":"agent/inbox/spliced","seq":0,"time":100,"data":{{"target":"next-turn","start":0,"inserted":[{message}]}}}}"#
        ),
        r#"{"type":"turn/start","seq":1,"time":101,"data":{"turn":1}}"#.to_owned(),
        r#"{"type":"agent/inbox/spliced","seq":2,"time":102,"data":{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}}"#.to_owned(),
        r#"{"type":"step/start","seq":3,"time":103,"data":{"turn":1,"step":1}}"#.to_owned(),
        format!(r#"{{"type":"user/message","seq":4,"time":104,"data":{message}}}"#),
        r#"{"type":"text-chunks","seq0":5,"time0":200,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#.to_owned(),
    ]
    .join("\n")
        + "\n";
    let repaired = repaired(log.as_bytes()).expect("repairs");
    let closers = String::from_utf8(repaired[log.len()..].to_vec()).expect("UTF-8");
    assert_eq!(
        closers,
        "{\"type\":\"step/end\",\"seq\":8,\"time\":202,\"data\":{\"turn\":1,\"step\":1}}\n\
         {\"type\":\"turn/end\",\"seq\":9,\"time\":202,\"data\":{\"turn\":1,\"reason\":{\"kind\":\"interrupted\"}}}\n\
         {\"type\":\"session/end-seed\",\"seq\":10,\"time\":202,\"data\":{}}\n"
    );
    assert_valid(&repaired, "the repaired log");
}

#[test]
fn a_repair_numbers_its_lines_on_in_a_log_that_numbers_its_records() {
    let mut appended = 0;
    for log in common::files_with_extension(&common::dsh_restart_logs(), "jsonl") {
        let text = fs::read(&log).expect("readable");
        let ends = text.iter().enumerate().filter(|(_, byte)| **byte == b'\n');
        for (end, _) in ends.skip(1) {
            let cut = &text[..=end];
            let repaired = repaired(cut).unwrap_or_else(|error| panic!("{log:?}: {error}"));
            let records: Vec<serde_json::Value> = repaired
                .split(|byte| *byte == b'\n')
                .filter(|line| !line.is_empty())
                .skip(1)
                .map(|line| serde_json::from_slice(line).expect("JSON"))
                .collect();
            let kept = cut.iter().filter(|byte| **byte == b'\n').count() - 1;
            for (seq, record) in records.iter().enumerate() {
                assert_eq!(record["seq"], seq, "{log:?} cut at {end}: {record}");
            }
            let last_time = last_time(&records[kept - 1]);
            for record in &records[kept..] {
                assert_eq!(record["time"], last_time, "{log:?} cut at {end}");
            }
            appended += records.len() - kept;
            assert_valid(&repaired, &format!("{log:?} cut at {end}"));
        }
    }
    assert!(appended > 0, "no cut needed closers");
    let unnumbered = "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n\
        {\"type\":\"agent/inbox/spliced\",\"data\":{\"target\":\"next-turn\",\"start\":0,\"inserted\":[{\"id\":\"A\",\"role\":\"user\",\"content\":[],\"source\":{\"kind\":\"user\"}}]}}\n\
        {\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n";
    let repaired = String::from_utf8(repaired(unnumbered.as_bytes()).unwrap()).unwrap();
    let closers = &repaired[unnumbered.len()..];
    assert_eq!(
        closers,
        "{\"type\":\"turn/end\",\"data\":{\"turn\":1,\"reason\":{\"kind\":\"interrupted\"}}}\n\
         {\"type\":\"session/end-seed\",\"data\":{}}\n"
    );
}
