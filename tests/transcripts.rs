//! Runs every transcript (SPEC §9) against a fresh agent through the core's
//! pure `Script` API: the shared scenarios, `tests/scenarios/*.txn` and
//! `tests/regressions/*.txn`. One failure lists every mismatching block, so a
//! behaviour change shows its whole blast radius at once.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use courier_core::Agent;
use courier_core::transcript::{Mismatch, Script};

/// The shared catalog had 57 scenarios when this test was written; fewer
/// means the folder lookup went wrong, not that the catalog shrank.
const SHARED_SCENARIOS_MIN: usize = 57;

/// Runs one file and describes each problem as `file:line` plus a diff.
fn problems_of(path: &Path) -> Vec<String> {
    let name = common::display(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => return vec![format!("{name}: cannot read: {error}")],
    };
    let script = match Script::parse(&text) {
        Ok(script) => script,
        Err(error) => return vec![format!("{name}:{}: {}", error.line, error.reason)],
    };
    let actual = match script.run(&Agent::new()) {
        Ok(actual) => actual,
        Err((line, stalled)) => return vec![format!("{name}:{line}: {stalled}")],
    };
    let mut problems = Vec::new();
    for Mismatch { block, actual } in script.mismatches(&actual) {
        let Some(expected) = &block.expected else {
            problems.push(format!(
                "{name}:{}: {}\n  (no `----`: a block without expected output fails)",
                block.line, block.command
            ));
            continue;
        };
        let mut report = format!("{name}:{}: {}", block.line, block.command);
        for line in expected {
            write!(report, "\n  - {line}").expect("writing to a String");
        }
        for line in actual {
            write!(report, "\n  + {line}").expect("writing to a String");
        }
        problems.push(report);
    }
    problems
}

#[test]
fn every_transcript_matches_its_expected_output() {
    let shared = common::files_with_extension(&common::shared_scenarios(), "txn");
    assert!(
        shared.len() >= SHARED_SCENARIOS_MIN,
        "found only {} shared scenarios in {}",
        shared.len(),
        common::shared_scenarios().display()
    );
    let files = common::all_transcripts();
    assert!(
        files.len() > shared.len(),
        "no project scenarios under tests/scenarios"
    );
    let problems: Vec<String> = files.iter().flat_map(|path| problems_of(path)).collect();
    assert!(
        problems.is_empty(),
        "{} mismatching block(s) in {} transcript(s) (- expected, + actual):\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
}

/// Each project scenario says which SPEC rule it pins, so a failure can be
/// judged against the contract rather than rewritten blindly.
#[test]
fn every_project_scenario_says_what_it_pins() {
    let mut unpinned = Vec::new();
    for directory in common::project_scenario_dirs() {
        for path in common::files_with_extension(&directory, "txn") {
            let text = std::fs::read_to_string(&path).expect("a readable scenario");
            if !text.lines().any(|line| line.starts_with("# pins: ")) {
                unpinned.push(common::display(&path));
            }
        }
    }
    assert!(
        unpinned.is_empty(),
        "scenarios without a `# pins: ` comment: {unpinned:?}"
    );
}

/// A form a transcript can show: what SPEC calls it, and how to recognise
/// one command line (`Command`) or one expected output line (`Output`).
enum Form {
    Command(&'static str, fn(&str) -> bool),
    Output(&'static str, fn(&str) -> bool),
}

/// Every command form of SPEC §9 and every output line, refusal and query
/// answer of §9, §10 and §11 (each turn-end reason, each refusal kind, both
/// awaited points, empty and non-empty lists, the three kinds of splice).
/// A transcript suite that lost the only block showing one of them would
/// no longer pin that rule; this keeps the rule table honest.
const FORMS: &[Form] = &[
    Form::Command("send next-turn wake", |c| {
        c.starts_with("send ") && c.contains(" next-turn wake")
    }),
    Form::Command("send next-turn no-wake", |c| {
        c.starts_with("send ") && c.contains(" next-turn no-wake")
    }),
    Form::Command("send next-step wake", |c| {
        c.starts_with("send ") && c.contains(" next-step wake")
    }),
    Form::Command("send next-step no-wake", |c| {
        c.starts_with("send ") && c.contains(" next-step no-wake")
    }),
    Form::Command("source=<kind>", |c| c.contains(" source=")),
    Form::Command("followup", |c| c.starts_with("followup ")),
    Form::Command("steer", |c| c.starts_with("steer ")),
    Form::Command("inject", |c| c.starts_with("inject ")),
    Form::Command("append", |c| c.starts_with("append ")),
    Form::Command("prepend", |c| c.starts_with("prepend ")),
    Form::Command("replace", |c| c.starts_with("replace ")),
    Form::Command("remove", |c| c.starts_with("remove ")),
    Form::Command("splice", |c| c.starts_with("splice ")),
    Form::Command("cancel user", |c| c.starts_with("cancel user")),
    Form::Command("cancel parent", |c| c.starts_with("cancel parent")),
    Form::Command("cancel hook:<reason>", |c| c.starts_with("cancel hook:")),
    Form::Command("cancel ... keep-inbox", |c| {
        c.starts_with("cancel ") && c.ends_with(" keep-inbox")
    }),
    Form::Command("dispose", |c| c == "dispose"),
    Form::Command("when-idle", |c| c == "when-idle"),
    Form::Command("pre-step pass", |c| c == "pre-step pass"),
    Form::Command("pre-step reject", |c| c == "pre-step reject"),
    Form::Command("pre-step fail", |c| c == "pre-step fail"),
    Form::Command("pre-step enter <ids>", |c| c.starts_with("pre-step enter ")),
    Form::Command("pre-step enter (empty batch)", |c| c == "pre-step enter"),
    Form::Command("step completed", |c| c == "step completed"),
    Form::Command("step max-tokens", |c| c == "step max-tokens"),
    Form::Command("step tool-calls", |c| c == "step tool-calls"),
    Form::Command("step fail", |c| c == "step fail"),
    Form::Command("run", |c| c == "run"),
    Form::Command("inbox", |c| c == "inbox"),
    Form::Command("status", |c| c == "status"),
    Form::Command("restart", |c| c == "restart"),
    Form::Command("restart lose=<N>", |c| c.starts_with("restart lose=")),
    Form::Output("spliced insertion", |o| {
        o.starts_with("spliced ")
            && o.contains(" +")
            && !o.contains(" -")
            && !o.ends_with(" canceled")
    }),
    Form::Output("spliced +A,B", |o| {
        o.starts_with("spliced ") && o.contains(" +") && o.contains(',')
    }),
    Form::Output("claim of next-step", |o| {
        o.starts_with("spliced next-step@0 -") && !o.contains(" +") && !o.ends_with(" canceled")
    }),
    Form::Output("claim of the next-turn head", |o| {
        o == "spliced next-turn@0 -1"
    }),
    Form::Output("canceled removal", |o| {
        o.starts_with("spliced ") && !o.contains(" +") && o.ends_with(" -1 canceled")
    }),
    Form::Output("canceled removal of several", |o| {
        o.starts_with("spliced ")
            && !o.contains(" +")
            && o.ends_with(" canceled")
            && !o.ends_with(" -1 canceled")
    }),
    Form::Output("canceled replacement", |o| {
        o.starts_with("spliced ")
            && o.contains(" -")
            && o.contains(" +")
            && o.ends_with(" canceled")
    }),
    Form::Output("splice at a later index", |o| {
        o.starts_with("spliced ") && !o.contains("@0 ")
    }),
    Form::Output("turn/start", |o| o.starts_with("turn/start ")),
    Form::Output("step/start", |o| o.starts_with("step/start ")),
    Form::Output("user/message", |o| o.starts_with("user/message ")),
    Form::Output("step/end", |o| o.starts_with("step/end ")),
    Form::Output("turn/end completed", |o| {
        o.starts_with("turn/end ") && o.ends_with(" completed")
    }),
    Form::Output("turn/end max-tokens", |o| {
        o.starts_with("turn/end ") && o.ends_with(" max-tokens")
    }),
    Form::Output("turn/end blocked", |o| {
        o.starts_with("turn/end ") && o.ends_with(" blocked")
    }),
    Form::Output("turn/end error", |o| {
        o.starts_with("turn/end ") && o.ends_with(" error")
    }),
    Form::Output("turn/end aborted:user", |o| {
        o.starts_with("turn/end ") && o.ends_with(" aborted:user")
    }),
    Form::Output("turn/end aborted:parent", |o| {
        o.starts_with("turn/end ") && o.ends_with(" aborted:parent")
    }),
    Form::Output("turn/end aborted:hook:<reason>", |o| {
        o.starts_with("turn/end ") && o.contains(" aborted:hook:")
    }),
    Form::Output("turn/end aborted:disposed", |o| {
        o.starts_with("turn/end ") && o.ends_with(" aborted:disposed")
    }),
    Form::Output("turn/end interrupted", |o| {
        o.starts_with("turn/end ") && o.ends_with(" interrupted")
    }),
    Form::Output("~inserted", |o| o.starts_with("~inserted ")),
    Form::Output("~claimed", |o| o.starts_with("~claimed ")),
    Form::Output("~discarded", |o| o.starts_with("~discarded ")),
    Form::Output("~status running", |o| o == "~status running"),
    Form::Output("~status idle", |o| o == "~status idle"),
    Form::Output("~error n.0 (no step opened)", |o| {
        o.starts_with("~error ") && o.ends_with(".0")
    }),
    Form::Output("~error n.s (a step opened)", |o| {
        o.starts_with("~error ") && !o.ends_with(".0")
    }),
    Form::Output("~idle", |o| o == "~idle"),
    Form::Output("error: duplicate-id", |o| {
        o.starts_with("error: duplicate-id: ")
    }),
    Form::Output("error: disposed", |o| o.starts_with("error: disposed: ")),
    Form::Output("error: not-pending", |o| {
        o.starts_with("error: not-pending: ")
    }),
    Form::Output("error: not-awaiting: pre-step", |o| {
        o == "error: not-awaiting: pre-step"
    }),
    Form::Output("error: not-awaiting: step", |o| {
        o == "error: not-awaiting: step"
    }),
    Form::Output("error: bad-command", |o| {
        o.starts_with("error: bad-command: ")
    }),
    Form::Output("status idle", |o| o == "idle"),
    Form::Output("status awaiting=pre-step", |o| {
        o.starts_with("running turn=") && o.ends_with(" awaiting=pre-step")
    }),
    Form::Output("status awaiting=step", |o| {
        o.starts_with("running turn=") && o.ends_with(" awaiting=step")
    }),
    Form::Output("inbox next-turn: (empty)", |o| o == "next-turn:"),
    Form::Output("inbox next-turn: <ids>", |o| o.starts_with("next-turn: ")),
    Form::Output("inbox next-step: (empty)", |o| o == "next-step:"),
    Form::Output("inbox next-step: <ids>", |o| o.starts_with("next-step: ")),
];

#[test]
fn every_command_and_output_form_of_the_spec_is_pinned_by_a_transcript() {
    let mut commands = Vec::new();
    let mut outputs = Vec::new();
    for path in common::all_transcripts() {
        let text = std::fs::read_to_string(&path).expect("a readable transcript");
        let script = Script::parse(&text).expect("a transcript that parses");
        for block in script.blocks() {
            commands.push(block.command.clone());
            outputs.extend(
                block
                    .expected
                    .iter()
                    .flatten()
                    .map(|line| line.trim_end().to_owned()),
            );
        }
    }
    let unpinned: Vec<&str> = FORMS
        .iter()
        .filter_map(|form| match form {
            Form::Command(name, shows) => (!commands.iter().any(|c| shows(c))).then_some(*name),
            Form::Output(name, shows) => (!outputs.iter().any(|o| shows(o))).then_some(*name),
        })
        .collect();
    assert!(unpinned.is_empty(), "no transcript shows: {unpinned:?}");
}
