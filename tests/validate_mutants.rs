//! `courier validate` under mutation: each recorded dsh log, changed one way
//! at a time, gets the verdict SPEC §7 and §11 give that change, and a
//! resume (the core's [`Replay`]) agrees with the validator where SPEC §11
//! says they must: a log cut at any event and closed validates and resumes.
//! CI runs the classes over a few fixtures (a plain log, a hook's splice at
//! a boundary, a fork, a restart, placeholder ids); the ignored sweep runs
//! them over every fixture and prints the count per class.
//!
//! Each class names its expected verdict; a disagreement is either a bug in
//! the validator or a mutation whose verdict SPEC settles otherwise.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use courier_check::validate::{Finding, validate};
use courier_core::log::{END_SEED_LINE, EndSeed, LogLine, Reader, durable_line};
use courier_core::transcript::Runner;
use courier_core::{Agent, Output, Replay, Splice, Stimulus, TurnEnd};
use courier_sim::{Record, Restarts, simulate};

/// What `courier validate` says of a log: the first finding, or why it
/// does not read.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Verdict {
    Valid,
    Invalid { property: String, line: u64 },
    Unreadable { line: u64 },
}

fn verdict(lines: &[String]) -> Verdict {
    let text = lines.join("\n") + "\n";
    let mut first = None;
    let outcome = validate(text.as_bytes(), |Finding { line, violation }| {
        first.get_or_insert((violation.property.to_string(), line));
    });
    match (outcome, first) {
        (Err(error), _) => Verdict::Unreadable { line: error.line },
        (Ok(_), None) => Verdict::Valid,
        (Ok(_), Some((property, line))) => Verdict::Invalid { property, line },
    }
}

fn invalid(property: &str, line: usize) -> Verdict {
    Verdict::Invalid {
        property: property.into(),
        line: line as u64,
    }
}

/// One line of a log as the core's reader reads it.
#[derive(Clone, Debug)]
enum Line {
    Delivery(Output),
    /// A fork's boundary (the reader tells it from a resume's marker).
    ForkBoundary,
    Other,
}

struct Log {
    name: String,
    lines: Vec<String>,
    parsed: Vec<Line>,
}

/// Reads a log for mutation. A record's `seq` is dropped: mutations insert,
/// drop and move records, and dsh refuses a log whose numbers then skip
/// (the reader does too, as a corrupt log) before any property is at stake;
/// without `seq` a record takes the next number, as in dsh's snapshots.
fn read(file: &Path) -> Log {
    let text = std::fs::read_to_string(file).unwrap();
    let unnumbered = |line: &str| {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        let record = value.as_object_mut().unwrap();
        let numbered = record.remove("seq").is_some() | record.remove("seq0").is_some();
        numbered.then(|| json_line(value))
    };
    let lines: Vec<String> = text
        .lines()
        .map(|line| unnumbered(line).unwrap_or_else(|| line.to_owned()))
        .collect();
    let mut reader = Reader::new();
    let parsed = lines
        .iter()
        .map(|line| match reader.line(line).unwrap() {
            LogLine::Delivery(output) => Line::Delivery(output),
            LogLine::EndSeed(EndSeed::ForkBoundary) => Line::ForkBoundary,
            LogLine::Header(_)
            | LogLine::EndSeed(EndSeed::Marker | EndSeed::InSeed)
            | LogLine::Other(_) => Line::Other,
        })
        .collect();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    Log {
        name,
        lines,
        parsed,
    }
}

/// The core's resume over the first `kept` lines: its closers, or why the
/// kept log is corrupt.
fn resume(log: &Log, kept: usize) -> Result<Vec<Output>, String> {
    let mut replay = Replay::new(&Agent::new());
    for line in &log.parsed[..kept] {
        match line {
            Line::Delivery(output) => drop(replay.apply(output).map_err(|e| e.to_string())?),
            Line::ForkBoundary => replay.end_seed(),
            Line::Other => {}
        }
    }
    Ok(replay.closers())
}

fn is_goal(output: &Output) -> bool {
    matches!(output, Output::UserMessage(message) if matches!(message.source(), courier_core::Source::Goal { .. }))
}

fn json_line(value: serde_json::Value) -> String {
    serde_json::to_string(&value).unwrap()
}

/// Where dropping the `user/message` at `index` leaves a first step that
/// entered nothing, the line (after the drop) of the event that shows it:
/// the first delivery event after the step's `step/end`, unless that is
/// the `turn/end interrupted` a crash's repair writes.
fn empty_first_step_after_drop(log: &Log, index: usize) -> Option<usize> {
    let delivery = |j: usize| match &log.parsed[j] {
        Line::Delivery(output) => Some(output),
        Line::ForkBoundary | Line::Other => None,
    };
    let start = (0..index).rev().find_map(|j| match delivery(j) {
        Some(Output::StepStart { step, .. }) => Some((j, *step)),
        _ => None,
    })?;
    let end =
        (index..log.parsed.len()).find(|&j| matches!(delivery(j), Some(Output::StepEnd { .. })))?;
    let entered = (start.0..end)
        .filter(|&j| j != index && matches!(delivery(j), Some(Output::UserMessage(_))))
        .count();
    if start.1 != 1 || entered > 0 {
        return None;
    }
    let next = (end + 1..log.parsed.len()).find(|&j| delivery(j).is_some())?;
    let closer = matches!(
        delivery(next),
        Some(Output::TurnEnd {
            reason: TurnEnd::Interrupted,
            ..
        })
    );
    // Line numbers are 1-based, and the drop moved `next` up by one.
    (!closer).then_some(next)
}

/// The mutants of one log: `(class, what was done, the mutated lines,
/// the verdict SPEC gives)`.
fn mutants(log: &Log) -> Vec<(&'static str, String, Vec<String>, Verdict)> {
    let mut out = Vec::new();
    let lines = &log.lines;
    let delivery = |index: usize| match &log.parsed[index] {
        Line::Delivery(output) => Some(output),
        Line::ForkBoundary | Line::Other => None,
    };
    let next_delivery = |after: usize| (after + 1..lines.len()).find(|&j| delivery(j).is_some());
    for (index, line) in lines.iter().enumerate().skip(1) {
        let Some(output) = delivery(index) else {
            continue;
        };
        let at = index + 1;
        // SPEC §11: a crash keeps any prefix; with its closers (and the
        // marker dsh's resume appends) it is a valid log. Cut before `index`.
        let closers = resume(log, index)
            .unwrap_or_else(|error| panic!("{}: a prefix of a valid log: {error}", log.name));
        let mut cut = lines[..index].to_vec();
        cut.extend(closers.iter().filter_map(durable_line));
        cut.push(END_SEED_LINE.into());
        out.push((
            "crash-cut",
            format!("cut before line {at}"),
            cut,
            Verdict::Valid,
        ));
        // SPEC §5: a splice that changes nothing is never written.
        let mut noop = lines.clone();
        let empty = serde_json::json!({"type": "agent/inbox/spliced",
            "data": {"target": "next-turn", "start": 0, "inserted": []}});
        noop.insert(index, json_line(empty));
        let detail = format!("no-op splice at line {at}");
        out.push((
            "no-op-splice",
            detail,
            noop,
            invalid("splice-normalized", at),
        ));
        // SPEC §5: `outcome` marks a removal, never a pure insertion.
        if let Output::Spliced(Splice {
            removed_count: 0, ..
        }) = output
        {
            let mut marked = lines.clone();
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["data"]["outcome"] = "canceled".into();
            marked[index] = json_line(value);
            let detail = format!("outcome on the insertion at line {at}");
            let expected = invalid("splice-normalized", at);
            out.push(("insertion-outcome", detail, marked, expected));
        }
        let mut duplicated = lines.clone();
        duplicated.insert(index, line.clone());
        match output {
            // `balanced`: a structural event twice is out of place.
            Output::TurnStart { .. }
            | Output::StepStart { .. }
            | Output::StepEnd { .. }
            | Output::TurnEnd { .. } => {
                let detail = format!("duplicate line {at}");
                out.push(("duplicate", detail, duplicated, invalid("balanced", at + 1)));
                let mut renumbered = lines.clone();
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                let turn = value["data"]["turn"].as_u64().unwrap();
                value["data"]["turn"] = (turn + 1).into();
                renumbered[index] = json_line(value);
                let detail = format!("turn + 1 at line {at}");
                out.push(("renumber", detail, renumbered, invalid("balanced", at)));
            }
            // `unique-pending`: the same message inserted again while pending.
            Output::Spliced(Splice {
                removed_count: 0,
                inserted,
                ..
            }) if inserted.iter().all(|m| !m.id().as_str().starts_with("{{")) => {
                let detail = format!("duplicate line {at}");
                let expected = invalid("unique-pending", at + 1);
                out.push(("duplicate", detail, duplicated, expected));
            }
            // Goal messages also count rounds (`goal-rounds`): not dropped
            // or reordered here.
            Output::UserMessage(message) if !is_goal(output) => {
                // The entering batch may drop a claimed message, unless it
                // was a first step's only one: an empty first batch opens
                // no step (`admission`, seen at the next event unless that
                // is a crash's closer).
                let mut dropped = lines.clone();
                dropped.remove(index);
                let expected = match empty_first_step_after_drop(log, index) {
                    Some(next) => invalid("admission", next),
                    None => Verdict::Valid,
                };
                out.push((
                    "drop-message",
                    format!("delete line {at}"),
                    dropped,
                    expected,
                ));
                // A fresh id is a context message.
                let mut fresh = lines.clone();
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["data"]["id"] = format!("fresh-{at}").into();
                fresh[index] = json_line(value);
                out.push((
                    "fresh-id",
                    format!("new id at line {at}"),
                    fresh,
                    Verdict::Valid,
                ));
                // `admission`: only inside an open step.
                let end = (index..lines.len())
                    .find(|&j| matches!(delivery(j), Some(Output::StepEnd { .. })));
                if let Some(end) = end {
                    let mut moved = lines.clone();
                    let message = moved.remove(index);
                    moved.insert(end, message);
                    let detail = format!("line {at} after its step/end");
                    out.push(("move-message", detail, moved, invalid("admission", end + 1)));
                }
                // The entering batch may reorder the messages of a step.
                if let Some(next) = next_delivery(index)
                    && delivery(next).is_some_and(|next| {
                        matches!(next, Output::UserMessage(_)) && !is_goal(next)
                    })
                {
                    let mut swapped = lines.clone();
                    swapped.swap(index, next);
                    let detail = format!("swap lines {at} and {}", next + 1);
                    out.push(("swap-messages", detail, swapped, Verdict::Valid));
                }
            }
            Output::UserMessage(_) | Output::Spliced(_) => {}
            Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => unreachable!("a live output in a log"),
        }
        // `claim-shape`: a boundary that opens a step without its claim
        // (one made when the boundary opened: a claim after a hook's splice
        // may claim what was not pending then).
        let claim = |output: &Output| matches!(output, Output::Spliced(splice) if splice.outcome.is_none() && splice.removed_count > 0);
        let previous = (1..index).rev().find_map(delivery);
        let opening = previous.is_some_and(|previous| {
            claim(previous) || matches!(previous, Output::TurnStart { .. } | Output::StepEnd { .. })
        });
        if claim(output)
            && opening
            && let Some(next) = next_delivery(index)
            && matches!(delivery(next), Some(Output::StepStart { .. }))
        {
            let mut unclaimed = lines.clone();
            unclaimed.remove(index);
            let detail = format!("delete claim at line {at}");
            out.push((
                "delete-claim",
                detail,
                unclaimed,
                invalid("claim-shape", next),
            ));
        }
        // The log cannot tell one normal turn end from another, but only a
        // crash's closer may end a first boundary before its claims, and a
        // stop (blocked, error, completed before any step) parks the
        // pending work: a turn/start after it with no splice that inserts
        // (a send) breaks `stop-parks`.
        if let Output::TurnEnd { reason, .. } = output
            && !matches!(reason, courier_core::TurnEnd::Interrupted)
        {
            let stepped = (1..index)
                .rev()
                .map_while(|j| match delivery(j) {
                    Some(Output::TurnStart { .. }) => None,
                    other => Some(other),
                })
                .any(|event| matches!(event, Some(Output::StepStart { .. })));
            let woken = (index + 1..lines.len())
                .find_map(|j| match delivery(j) {
                    Some(Output::TurnStart { .. }) => Some(Some(j)),
                    Some(Output::Spliced(splice)) if !splice.inserted.is_empty() => Some(None),
                    _ => None,
                })
                .flatten();
            for kind in ["completed", "max-tokens", "blocked", "error"] {
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                if value["data"]["reason"]["kind"] == kind {
                    continue;
                }
                value["data"]["reason"] = serde_json::json!({"kind": kind});
                let mut ended = lines.clone();
                ended[index] = json_line(value);
                let detail = format!("{kind} at line {at}");
                let stop = matches!(kind, "blocked" | "error") || (kind == "completed" && !stepped);
                let expected = match woken {
                    Some(start) if stop => invalid("stop-parks", start + 1),
                    _ => Verdict::Valid,
                };
                out.push(("turn-end-kind", detail, ended, expected));
            }
        }
    }
    out
}

/// Runs every mutant of `files`, asserting its verdict; the count per class.
fn sweep(files: &[PathBuf]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    let mut wrong = Vec::new();
    for file in files {
        let log = read(file);
        assert_eq!(verdict(&log.lines), Verdict::Valid, "{}", log.name);
        for (class, detail, lines, expected) in mutants(&log) {
            *counts.entry(class).or_default() += 1;
            let actual = verdict(&lines);
            if actual != expected {
                wrong.push(format!(
                    "{} {class} {detail}: {actual:?}, not {expected:?}",
                    log.name
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    counts
}

#[test]
fn each_mutation_of_a_few_dsh_logs_gets_the_verdict_spec_gives_it() {
    let files = [
        common::dsh_logs().join("multi-turn__session.jsonl"),
        common::dsh_logs().join("hook-cc-stop-continue__session.jsonl"),
        common::dsh_logs().join("subagent-fork-in-process__session.1.jsonl"),
        common::dsh_logs().join("goal-goal-round-driver__session.expected.jsonl"),
        common::dsh_restart_logs().join("r03-restart-drops-latch.jsonl"),
    ];
    let counts = sweep(&files);
    // Every class ran.
    for class in [
        "crash-cut",
        "no-op-splice",
        "insertion-outcome",
        "duplicate",
        "renumber",
        "drop-message",
        "fresh-id",
        "move-message",
        "swap-messages",
        "delete-claim",
        "turn-end-kind",
    ] {
        assert!(
            counts.get(class).is_some_and(|&n| n > 0),
            "no {class} mutant"
        );
    }
}

#[test]
#[ignore = "every fixture: cargo test --test validate_mutants -- --ignored --nocapture"]
fn each_mutation_of_every_dsh_log_gets_the_verdict_spec_gives_it() {
    let mut files = common::files_with_extension(&common::dsh_logs(), "jsonl");
    files.extend(common::files_with_extension(
        &common::dsh_restart_logs(),
        "jsonl",
    ));
    let counts = sweep(&files);
    let total: usize = counts.values().sum();
    println!("{} logs, {total} mutants: {counts:?}", files.len());
}

/// The durable log a simulated seed writes, restarts included (a crash
/// keeps a prefix of the log and appends the closers, as the transcript
/// runner does), with a header.
fn simulated_log(seed: u64) -> (Vec<String>, u64) {
    let record = Record {
        trace: true,
        hash: false,
        coverage: None,
    };
    let run = simulate(seed, Restarts::Drawn, &Agent::new(), record);
    assert_eq!(run.violation, None, "seed {seed}");
    let mut runner = Runner::new(Agent::new());
    for stimulus in run.trace {
        match stimulus {
            Stimulus::Input(input) => {
                runner.transition(input);
            }
            Stimulus::Restart { lose } => {
                runner.crash(lose).expect("the core's log resumes");
            }
        }
    }
    let mut lines = vec![courier_core::log::SessionHeader::new(format!("seed-{seed}")).line()];
    lines.extend(runner.log().iter().filter_map(durable_line));
    (lines, run.restarts)
}

/// Validates the logs of `seeds`; the restarts and lines they held.
fn simulated_logs_validate(seeds: std::ops::Range<u64>) -> (u64, usize) {
    let (mut restarts, mut lines) = (0, 0);
    for seed in seeds {
        let (log, restarted) = simulated_log(seed);
        restarts += restarted;
        lines += log.len();
        assert_eq!(verdict(&log), Verdict::Valid, "seed {seed}");
    }
    (restarts, lines)
}

#[test]
fn every_log_a_simulated_seed_writes_across_restarts_is_accepted() {
    let (restarts, _) = simulated_logs_validate(0..200);
    assert!(restarts > 0, "no seed restarted");
}

#[test]
#[ignore = "2,000 seeds: cargo test --release --test validate_mutants -- --ignored --nocapture"]
fn every_log_of_two_thousand_simulated_seeds_is_accepted() {
    let (restarts, lines) = simulated_logs_validate(0..2000);
    println!("2000 seeds: {restarts} restarts, {lines} log lines, all valid");
}

/// The durable log of `script` run on `agent` (restarts keep a prefix and
/// append the closers, as the transcript runner does), with a header.
#[cfg(feature = "mutants")]
fn transcript_log(text: &str, agent: Agent) -> Vec<String> {
    let script = courier_core::transcript::Script::parse(text).unwrap();
    let mut runner = Runner::new(agent);
    for block in script.blocks() {
        runner.execute(&block.command).expect("`run` reaches idle");
    }
    let mut lines = vec![courier_core::log::SessionHeader::new("planted").line()];
    lines.extend(runner.log().iter().filter_map(durable_line));
    lines
}

/// The durable log of each planted bug's regression (SPEC §8) is judged
/// as a recorded log: the correct core's is valid; a bug's is refused when
/// the log shows it. Most bugs live in what a log does not keep (wakeups,
/// status, `idle`, the batch a pre-step listener may reorder, a resume's
/// own inputs), so their logs read like a correct core's.
#[cfg(feature = "mutants")]
#[test]
fn the_log_of_each_planted_bugs_regression_is_refused_where_it_shows() {
    let shows = [
        // The replayed turn claims a steer sent before the abort: no send
        // onto next-turn since the turn began, so nothing could latch.
        ("eager-latch", invalid("stop-parks", 10)),
        ("prompt-every-step", invalid("one-prompt-per-turn", 9)),
        ("resume-renumbers", invalid("balanced", 7)),
    ];
    let regressions = common::workspace().join("tests/regressions");
    let mut seen = 0;
    for path in common::files_with_extension(&regressions, "txn") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            verdict(&transcript_log(&text, Agent::new())),
            Verdict::Valid
        );
        let Some(name) = text.lines().find_map(|l| l.strip_prefix("# mutant: ")) else {
            continue;
        };
        seen += 1;
        let mutant: courier_core::Mutant = name.parse().unwrap();
        let expected = shows
            .iter()
            .find(|(shown, _)| *shown == name)
            .map_or(Verdict::Valid, |(_, verdict)| verdict.clone());
        let lines = transcript_log(&text, Agent::with_mutant(Some(mutant)));
        assert_eq!(verdict(&lines), expected, "{name}");
    }
    assert_eq!(seen, courier_core::Mutant::ALL.len());
}
