//! The durable JSONL log (dsh shapes, `courier_core::log`) of one multi-turn
//! transcript, pinned as an insta snapshot under `snapshots/`, so any change
//! to a durable shape or to what the core logs shows up as a reviewed diff.
//! Every line must also parse back to the value that wrote it.

use courier_core::log::{self, LogLine, SessionHeader};
use courier_core::transcript::{self, Command, Script};
use courier_core::{Agent, Output};

/// The transcript whose log is pinned: three turns, a steer, an idle inject,
/// a keep-inbox cancel and a latch replay.
const SCENARIO: &str = "tests/scenarios/demo-latch-replay.txn";

/// Runs the transcript and returns every output per block, as values (the
/// runner's API gives printed lines only; a refusal has none).
fn outputs_per_block(script: &Script) -> Vec<Vec<Output>> {
    let mut agent = Agent::new();
    let mut per_block = Vec::new();
    for block in script.blocks() {
        let command = transcript::parse_command(&block.command).expect("a valid command");
        let mut outputs = Vec::new();
        let mut feed = |agent: &mut Agent, input| outputs.extend(agent.transition(input).outputs);
        match command {
            Command::Input(input) => feed(&mut agent, input),
            Command::Run => transcript::run_until_idle(&mut agent, |agent| agent, feed)
                .expect("`run` reaches idle"),
            Command::Inbox | Command::Status => {}
            Command::Restart { .. } => panic!("the pinned scenario has no restart"),
        }
        per_block.push(outputs);
    }
    per_block
}

#[test]
fn demo_transcript_log_is_stable_and_parses_back() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO);
    let text = std::fs::read_to_string(&path).expect("the demo scenario");
    let script = Script::parse(&text).expect("a well-formed scenario");
    let per_block = outputs_per_block(&script);

    // The values are the ones the transcript pins: printing them gives each
    // block's expected lines (queries print lines that are not outputs).
    for (block, outputs) in script.blocks().zip(&per_block) {
        let command = transcript::parse_command(&block.command).expect("a valid command");
        if matches!(command, Command::Inbox | Command::Status) {
            continue;
        }
        let printed: Vec<String> = outputs.iter().map(Output::to_string).collect();
        assert_eq!(
            Some(&printed),
            block.expected.as_ref(),
            "{SCENARIO}:{}",
            block.line
        );
    }

    let header = SessionHeader::new("demo-latch-replay");
    let outputs: Vec<&Output> = per_block.iter().flatten().collect();
    let mut lines = vec![header.line()];
    lines.extend(
        outputs
            .iter()
            .filter_map(|output| log::durable_line(output)),
    );
    let turns = outputs
        .iter()
        .filter(|output| matches!(output, Output::TurnStart { .. }))
        .count();
    assert!(turns >= 2, "the pinned log must span several turns");

    assert_eq!(
        log::parse_line(&lines[0]).expect("the header parses"),
        LogLine::Header(header)
    );
    let durable: Vec<&&Output> = outputs.iter().filter(|o| o.is_durable()).collect();
    assert_eq!(durable.len(), lines.len() - 1);
    for (line, output) in lines[1..].iter().zip(durable) {
        let parsed = log::parse_line(line).unwrap_or_else(|error| panic!("{line}: {error}"));
        assert_eq!(parsed, LogLine::Delivery((*output).clone()), "{line}");
    }

    let log = lines.join("\n") + "\n";
    insta::with_settings!({
        snapshot_path => "../snapshots",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("log-demo-latch-replay", log);
    });
}
