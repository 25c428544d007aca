//! Never panic (issue 16, class 2): arbitrary bytes, and near-misses built
//! from each format's own words, thrown at every reader of a user's file —
//! the transcript parser and runner, the log validator, the race-report
//! reader. Each answers with an error, never a panic. Bounded (a few
//! hundred cases each), so it runs in CI in seconds.

use courier_core::Agent;
use courier_core::transcript::{Script, parse_command};
use courier_sim::Report;
use proptest::prelude::*;

/// Bytes that are mostly the format's own pieces, so the readers get past
/// their first check: lines of `words` joined by random separators.
fn near_miss(words: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => proptest::sample::select(words).prop_map(|word| word.as_bytes().to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

const TRANSCRIPT_WORDS: &[&str] = &[
    "followup A",
    "steer B",
    "inject c",
    "send q next-turn no-wake",
    "run",
    "inbox",
    "status",
    "restart lose=",
    "pre-step enter A",
    "step completed",
    "cancel hook:",
    "splice next-turn 0 1 X",
    "----",
    "\n",
    "\r\n",
    "\n\n",
    "# note",
    " ",
    "\u{feff}",
    "source=",
    "99999999999999999999",
];

const LOG_WORDS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"type\"",
    "\"session\"",
    "\"splice\"",
    "\"turn/start\"",
    "\"turn/end\"",
    "\"step/start\"",
    "\"id\"",
    "\"turn\"",
    "1",
    "-1",
    "1e999",
    "null",
    "\"target\"",
    "\"next-turn\"",
    "\"inserted\"",
    "\"start\"",
    "\n",
    "\"session/end-seed\"",
];

const REPORT_WORDS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"format\"",
    "2",
    "1",
    "\"seed\"",
    "\"trace\"",
    "\"mutant\"",
    "null",
    "\"swarm\"",
    "\"property\"",
    "\"detail\"",
    "\"output_hash\"",
    "\"send\"",
    "\"restart\"",
    "{\"lose\":18446744073709551615}",
    "\"dispose\"",
    "\"input\"",
    "\"A\\n----\"",
];

/// Parses and, when it parses, runs a transcript on the correct core.
fn transcript(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines() {
        let _answer = parse_command(line);
    }
    if let Ok(script) = Script::parse(&text)
        && let Ok(actual) = script.run(&Agent::new())
    {
        let _rendered = script.render(&actual);
    }
}

fn log(bytes: &[u8]) {
    let _answer = courier_check::validate::validate(bytes, |_finding| {});
}

fn report(bytes: &[u8]) {
    let _answer = Report::read(bytes, bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panic_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        transcript(&bytes);
        log(&bytes);
        report(&bytes);
    }

    #[test]
    fn never_panic_transcript_near_misses(bytes in near_miss(TRANSCRIPT_WORDS)) {
        transcript(&bytes);
    }

    #[test]
    fn never_panic_log_near_misses(bytes in near_miss(LOG_WORDS)) {
        log(&bytes);
    }

    #[test]
    fn never_panic_report_near_misses(bytes in near_miss(REPORT_WORDS)) {
        report(&bytes);
    }
}
