//! `courier sim`, `courier replay` and `courier shrink` end to end: exit
//! codes, the lines users and scripts read, and the report round trip.

use std::path::PathBuf;

mod common;

use common::{courier, stdout};

/// A path named `name` in a fresh temporary folder (removed when the
/// folder is dropped): nothing there yet, and never shared with another
/// run of these tests (a fixed path under cargo's temp folder was, so two
/// runs at once overwrote each other's reports).
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join(name);
    (folder, path)
}

#[test]
fn a_passing_range_prints_a_summary_and_exits_0() {
    let output = courier(&["sim", "--seeds", "0..40", "--jobs", "2"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("sim seeds=0..40 mutant=none jobs=2"),
        "{text}"
    );
    assert!(text.contains("passed: 40 seeds, "), "{text}");
    assert!(text.contains("distinct abstract states"), "{text}");
    // The time is on stderr, so stdout is the same byte for byte for the
    // same seeds, whatever the jobs.
    let timed = String::from_utf8_lossy(&output.stderr);
    assert!(timed.contains(" inputs/s)"), "{timed}");
    assert!(!text.contains("inputs/s"), "{text}");
    let again = courier(&["sim", "--seeds", "0..40", "--jobs", "1"]);
    assert_eq!(stdout(&again), text.replace("jobs=2", "jobs=1"));
}

#[test]
fn a_single_seed_prints_its_swarm_banner() {
    let output = courier(&["sim", "--seeds", "0", "--check-determinism"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with(concat!(
            "seed=0 version=",
            env!("CARGO_PKG_VERSION"),
            " mutant=none inputs_max=24 pool_size=6 "
        )),
        "{text}"
    );
    assert!(text.contains(" restarts=5%\n"), "{text}");
    assert!(
        text.contains("passed: 1 seeds, 27 inputs, 0 restarts"),
        "{text}"
    );
}

#[test]
fn restarts_are_on_by_default_and_can_be_turned_off() {
    let on = courier(&["sim", "--seeds", "0..40"]);
    let text = stdout(&on);
    assert_eq!(on.status.code(), Some(0), "{text}");
    assert!(text.contains(" restarts=on "), "{text}");
    assert!(!text.contains(", 0 restarts,"), "{text}");
    let off = courier(&["sim", "--seeds", "0..40", "--no-restarts"]);
    let text = stdout(&off);
    assert_eq!(off.status.code(), Some(0), "{text}");
    assert!(text.contains(" restarts=off "), "{text}");
    assert!(text.contains(", 0 restarts,"), "{text}");
    let seed = courier(&["sim", "--seeds", "0", "--no-restarts"]);
    assert!(
        stdout(&seed).contains(" restarts=0%\n"),
        "{}",
        stdout(&seed)
    );
}

/// A format 1 report (before restarts: inputs only, no restart rate in the
/// swarm) still replays.
#[test]
fn a_format_1_report_still_replays() {
    use courier_check::Property;
    use courier_core::{Input, Message, Source, Stimulus};
    use courier_sim::{Prng, Report, Swarm};

    let report = Report {
        format: 1,
        seed: 0,
        mutant: None,
        swarm: Swarm::draw(&mut Prng::new(0)).without_restarts(),
        property: Property::NoLostWakeup,
        detail: "made up".to_owned(),
        output_hash: "fnv1a64:0000000000000000".parse().expect("a hash"),
        trace: vec![Stimulus::Input(Input::followup(Message::text(
            "A",
            Source::user(),
        )))],
    };
    let json = report.to_json();
    let old = json.replace(",\n    \"restart_percent\": 0", "");
    assert!(!old.contains("restart"), "{old}");
    let (_path_folder, path) = scratch("format-1.json");
    std::fs::write(&path, old).expect("writable");
    let output = courier(&["replay", path.to_str().expect("utf-8")]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("no violation: the trace passes"), "{text}");
}

#[test]
fn coverage_can_be_turned_off() {
    let output = courier(&["sim", "--seeds", "0..20", "--no-coverage"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("passed: 20 seeds, ") && text.contains("coverage off"),
        "{text}"
    );
}

#[test]
fn a_coverage_bound_reports_the_share_of_the_checkers_states() {
    let output = courier(&["sim", "--seeds", "0..200", "--coverage-bound", "2"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("coverage bound: messages=2 cancels=2 edits=1 steps=2"),
        "{text}"
    );
    assert!(text.contains("passed: 200 seeds, "), "{text}");
    let coverage = text
        .lines()
        .find_map(|line| line.strip_prefix("coverage: "))
        .expect("a coverage line");
    assert!(
        coverage.ends_with(", 0 outside the checker's set"),
        "{text}"
    );
    let reached: usize = coverage
        .split(' ')
        .next()
        .and_then(|count| count.parse().ok())
        .expect("a count first");
    assert!(reached > 1, "{text}");
    // Coverage is measured on the correct design only.
    let mutant = courier(&[
        "sim",
        "--seeds",
        "0..2",
        "--coverage-bound",
        "2",
        "--mutant",
        "no-latch",
    ]);
    assert_eq!(mutant.status.code(), Some(2));
    let error = String::from_utf8_lossy(&mutant.stderr);
    assert!(error.contains("cannot be used with '--mutant"), "{error}");
    // `check --messages 0` is refused: the same bound is refused here
    // (it was a run of one input per seed that reported 50% coverage).
    let none = courier(&["sim", "--seeds", "0..2", "--coverage-bound", "0"]);
    assert_eq!(none.status.code(), Some(2));
    let error = String::from_utf8_lossy(&none.stderr);
    assert!(error.contains("0 is not in 1..=26"), "{error}");
}

#[test]
fn shards_split_the_range() {
    let output = courier(&["sim", "--seeds", "0..40", "--shard", "2/4"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.starts_with("sim seeds=10..20 "), "{text}");
    assert!(text.contains("passed: 10 seeds"), "{text}");
}

#[test]
fn bad_arguments_and_bad_reports_exit_2() {
    assert_eq!(courier(&["sim", "--seeds", "5..5"]).status.code(), Some(2));
    assert_eq!(
        courier(&["sim", "--seeds", "0..4", "--shard", "0/2"])
            .status
            .code(),
        Some(2)
    );
    let (_missing_folder, missing) = scratch("missing.json");
    let output = courier(&["replay", missing.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2));

    let (_malformed_folder, malformed) = scratch("malformed.json");
    std::fs::write(&malformed, "{\"format\": 1, \"seed\": \"x\"}").expect("writable");
    let output = courier(&["replay", malformed.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("not a race report"), "{error}");

    let (_future_folder, future) = scratch("future.json");
    std::fs::write(&future, "{\"format\": 99}").expect("writable");
    let output = courier(&["replay", future.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("format 99, but this build reads formats 1 to 2"),
        "{error}"
    );
    let output = courier(&["shrink", future.to_str().expect("utf-8"), "--out", "x.txn"]);
    assert_eq!(output.status.code(), Some(2));
}

/// The must-show loop on one planted bug: sim finds it and writes a report,
/// replay prints the same violation line and hash, shrink writes a small
/// transcript that passes on the mutant and fails on the correct core.
#[cfg(feature = "mutants")]
#[test]
fn a_planted_bug_is_found_replayed_and_shrunk_from_the_command_line() {
    let (_report_folder, report) = scratch("no-latch.json");
    let report_path = report.to_str().expect("utf-8");
    let found = found_no_latch(report_path);
    let found_text = stdout(&found);
    assert_eq!(found.status.code(), Some(1), "{found_text}");
    let violation = line_starting(&found_text, "violation: ");
    assert!(
        violation.starts_with("violation: no-lost-wakeup seed="),
        "{found_text}"
    );
    let hash = line_starting(&found_text, "outputs: ");
    assert!(found_text.contains(&format!("replay: courier replay {report_path}")));

    let replayed = courier(&["replay", report_path]);
    let replayed_text = stdout(&replayed);
    assert_eq!(replayed.status.code(), Some(1), "{replayed_text}");
    assert_eq!(line_starting(&replayed_text, "violation: "), violation);
    assert_eq!(
        line_starting(&replayed_text, "outputs: "),
        format!("{hash} (same as the report)")
    );
    assert!(!replayed_text.contains("note: "), "{replayed_text}");

    let (_shrunk_folder, shrunk) = scratch("no-latch.txn");
    let shrunk_path = shrunk.to_str().expect("utf-8");
    let output = courier(&["shrink", report_path, "--out", shrunk_path]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let transcript = std::fs::read_to_string(&shrunk).expect("written");
    let commands = transcript.lines().filter(|line| *line == "----").count();
    assert!(
        (1..=12).contains(&commands),
        "{commands} commands:\n{transcript}"
    );
    let on_mutant = courier(&["run", "--mutant", "no-latch", shrunk_path]);
    assert_eq!(on_mutant.status.code(), Some(0), "{}", stdout(&on_mutant));
    let on_correct = courier(&["run", shrunk_path]);
    assert_eq!(on_correct.status.code(), Some(1), "{}", stdout(&on_correct));
    // The transcript names its variant, so `diagram` draws the mutant's run
    // (and its violation) without being told.
    let drawn = courier(&["diagram", shrunk_path]);
    let drawn_text = String::from_utf8_lossy(&drawn.stderr).into_owned() + &stdout(&drawn);
    assert!(
        drawn_text.contains("no-lost-wakeup broke at row"),
        "{drawn_text}"
    );
}

/// A restart bug: the report's trace holds a restart, replay reproduces its
/// hash (closers included), and the shrunk transcript has a `restart`
/// block and ends with the `inbox` query that shows the bug.
#[cfg(feature = "mutants")]
#[test]
fn a_resume_bug_is_found_and_shrunk_to_a_transcript_with_a_restart() {
    let (_report_folder, report) = scratch("resume-skips-claims.json");
    let report_path = report.to_str().expect("utf-8");
    let mutant = "resume-skips-claims";
    let found = courier(&[
        "sim",
        "--seeds",
        "0..1000",
        "--mutant",
        mutant,
        "--report",
        report_path,
    ]);
    let found_text = stdout(&found);
    assert_eq!(found.status.code(), Some(1), "{found_text}");
    let violation = line_starting(&found_text, "violation: ");
    assert!(
        violation.starts_with("violation: replay-matches seed="),
        "{found_text}"
    );
    assert!(
        std::fs::read_to_string(&report)
            .expect("written")
            .contains("\"restart\""),
        "the trace holds a restart"
    );
    let replayed = courier(&["replay", report_path]);
    let replayed_text = stdout(&replayed);
    assert_eq!(line_starting(&replayed_text, "violation: "), violation);
    assert!(
        line_starting(&replayed_text, "outputs: ").ends_with("(same as the report)"),
        "{replayed_text}"
    );

    let (_shrunk_folder, shrunk) = scratch("resume-skips-claims.txn");
    let shrunk_path = shrunk.to_str().expect("utf-8");
    let output = courier(&["shrink", report_path, "--out", shrunk_path]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let transcript = std::fs::read_to_string(&shrunk).expect("written");
    assert!(
        transcript.contains("\nrestart lose=") && transcript.contains("\ninbox\n----\n"),
        "{transcript}"
    );
    let on_mutant = courier(&["run", "--mutant", mutant, shrunk_path]);
    assert_eq!(on_mutant.status.code(), Some(0), "{}", stdout(&on_mutant));
    let on_correct = courier(&["run", shrunk_path]);
    assert_eq!(on_correct.status.code(), Some(1), "{}", stdout(&on_correct));
}

/// A violation's detail may list every owed id: `replay` (like `sim` and
/// `shrink`) prints at most 200 characters of it and its length, as the
/// README says. Before, a report whose trace owed 2,000 wakes printed a
/// `detail:` line of over 10,000 characters.
#[cfg(feature = "mutants")]
#[test]
fn a_long_violation_detail_is_cut_to_200_characters() {
    let (_folder, report) = scratch("owed.json");
    let report_path = report.to_str().expect("utf-8");
    let found = found_no_latch(report_path);
    assert_eq!(found.status.code(), Some(1), "{}", stdout(&found));
    // The same report, its trace replaced: a turn aborted with A pending
    // (the latch the planted bug drops), then 2,000 waking sends.
    let text = std::fs::read_to_string(&report).expect("written");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let send = |id: &str| {
        serde_json::json!({"input": "send", "message": {"id": id, "role": "user",
            "content": [{"type": "text", "text": id}], "source": {"kind": "user"}},
            "target": "next-step", "wakeup": "wake"})
    };
    let mut trace = vec![
        send("A"),
        serde_json::json!({"input": "cancel", "cause": {"kind": "user"}, "keep_inbox": true}),
    ];
    trace.extend((0..2_000).map(|n| send(&format!("m{n}"))));
    trace.push(serde_json::json!({"input": "pre-step", "decision": "pass"}));
    value["trace"] = serde_json::Value::Array(trace);
    std::fs::write(&report, value.to_string()).expect("writable");
    let replayed = courier(&["replay", report_path]);
    let replayed_text = stdout(&replayed);
    assert_eq!(replayed.status.code(), Some(1), "{replayed_text}");
    let detail = line_starting(&replayed_text, "detail: ");
    assert!(
        detail.chars().count() < 260 && detail.ends_with(" bytes in all)"),
        "{detail}"
    );
}

/// An edited report is never replayed as if it were the seed's: settings
/// the seed does not draw and a detail the run does not give get a note
/// each, and a hash that is not one is refused (exit 2) instead of being
/// reported as a mismatch.
#[cfg(feature = "mutants")]
#[test]
fn an_edited_report_says_what_differs() {
    let (_folder, report) = scratch("no-latch.json");
    let report_path = report.to_str().expect("utf-8");
    assert_eq!(found_no_latch(report_path).status.code(), Some(1));
    let original = std::fs::read_to_string(&report).expect("written");
    let edit = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut json: serde_json::Value = serde_json::from_str(&original).expect("a report");
        change(&mut json);
        std::fs::write(&report, json.to_string()).expect("writable");
        courier(&["replay", report_path])
    };

    let replayed = edit(&|json| json["swarm"]["inputs_max"] = 3.into());
    let text = stdout(&replayed);
    assert_eq!(replayed.status.code(), Some(1), "{text}");
    assert!(text.contains(" now draws "), "{text}");
    assert!(text.contains("(same as the report)"), "{text}");

    let replayed = edit(&|json| json["detail"] = "x".into());
    let text = stdout(&replayed);
    assert!(
        text.contains("note: the report's detail says x\n"),
        "{text}"
    );

    let replayed = edit(&|json| json["output_hash"] = "sha1:zz".into());
    assert_eq!(replayed.status.code(), Some(2));
    let error = String::from_utf8_lossy(&replayed.stderr);
    assert!(
        error.contains("\"sha1:zz\" is not an output hash"),
        "{error}"
    );
}

/// `courier sim --seeds 0..100 --mutant no-latch --report REPORT`.
#[cfg(feature = "mutants")]
fn found_no_latch(report: &str) -> std::process::Output {
    courier(&[
        "sim", "--seeds", "0..100", "--mutant", "no-latch", "--report", report,
    ])
}

#[cfg(feature = "mutants")]
fn line_starting(text: &str, prefix: &str) -> String {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"))
        .to_owned()
}

/// A reader that goes (`| head -2`) ends a long range quietly (exit 2, as
/// a write to a closed stdout does), though `sim` prints nothing more
/// until its summary. Before, it ran the whole range for nobody.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_a_long_range() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(["sim", "--seeds", "0..100000000", "--no-coverage"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("courier runs");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped")).lines();
    let banner = lines.next().expect("a banner").expect("a line");
    assert!(banner.starts_with("sim seeds=0..100000000"), "{banner}");
    drop(lines);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().expect("killed");
            panic!("sim went on after its reader was gone");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(2));
}
