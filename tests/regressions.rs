//! `tests/regressions/*.txn`: minimal traces the simulator found and shrank.
//! Each holds the correct core's outputs; the correct core must reproduce
//! them and break no property on them. A file naming a planted bug
//! (`# mutant: NAME`, `# violates: PROPERTY`) must still catch it: under that
//! mutant the shared checker reports that property.

use std::path::{Path, PathBuf};

use courier_core::Agent;
use courier_core::transcript::{
    Command, RUN_INPUTS_MAX, Script, default_completion, parse_command,
};
use courier_model::{Checker, Violation};

/// Nine planted bugs, one regression each, when this test was written.
const REGRESSIONS_MIN: usize = 9;

fn regression_files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("tests/regressions exists")
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txn"))
        .collect();
    files.sort();
    files
}

/// The value of a `# key: value` header line.
fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("# {key}: ");
    text.lines().find_map(|line| line.strip_prefix(&prefix))
}

/// Feeds every command of `script` through the checker (`run` feeds the
/// default completions until idle); the first violation, if any.
fn check(script: &Script, mut agent: Agent) -> Option<Violation> {
    let mut checker = Checker::new();
    for block in script.blocks() {
        let checked = match parse_command(&block.command) {
            Ok(Command::Input(input)) => checker.step(&mut agent, input).map(drop),
            Ok(Command::Run) => settle(&mut checker, &mut agent),
            Ok(Command::Inbox | Command::Status) | Err(_) => Ok(()),
        };
        if let Err(violation) = checked {
            return Some(violation);
        }
    }
    None
}

/// `run` under the checker, with the runner's own cap.
fn settle(checker: &mut Checker, agent: &mut Agent) -> Result<(), Violation> {
    for _ in 0..RUN_INPUTS_MAX {
        let Some(input) = default_completion(agent) else {
            return Ok(());
        };
        checker.step(agent, input)?;
    }
    panic!("`run` did not settle within {RUN_INPUTS_MAX} completions")
}

#[test]
fn every_regression_holds_on_the_correct_core() {
    let files = regression_files();
    assert!(
        files.len() >= REGRESSIONS_MIN,
        "{} regressions",
        files.len()
    );
    for path in files {
        let name = path.display();
        let text = std::fs::read_to_string(&path).expect("readable");
        let script = Script::parse(&text).expect("a well-formed transcript");
        let actual = script.run(&mut Agent::new()).expect("settles");
        for (block, actual) in script.blocks().zip(&actual) {
            assert_eq!(
                block.expected.as_ref(),
                Some(actual),
                "{name}:{}: {}",
                block.line,
                block.command
            );
        }
        assert_eq!(check(&script, Agent::new()), None, "{name}");
        assert!(header(&text, "pins").is_some(), "{name}: no `# pins:` line");
    }
}

#[cfg(feature = "mutants")]
#[test]
fn every_planted_regression_still_catches_its_bug() {
    use courier_core::Mutant;
    let mut caught = Vec::new();
    for path in regression_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let Some(name) = header(&text, "mutant") else {
            continue;
        };
        let mutant: Mutant = name.parse().expect("a known mutant");
        let property = header(&text, "violates").expect("a `# violates:` line");
        let script = Script::parse(&text).expect("a well-formed transcript");
        let violation = check(&script, Agent::with_mutant(Some(mutant)));
        assert_eq!(
            violation.as_ref().map(|v| v.property.name()),
            Some(property),
            "{}: {violation:?}",
            path.display()
        );
        caught.push(mutant);
    }
    caught.sort();
    assert_eq!(caught, Mutant::ALL, "one regression per planted bug");
}
