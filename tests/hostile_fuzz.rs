//! Never panic (issue 16, class 2): arbitrary bytes, and near-misses built
//! from each format's own words, thrown at every reader of a user's file —
//! the transcript parser and runner, the log validator, the race-report
//! reader — and at `courier serve-protocol`'s lines. Each answers with an
//! error, never a panic. Bounded (a few hundred cases each, a few dozen
//! processes), so it runs in CI in seconds.

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

/// Pieces of protocol lines (docs/PROTOCOL.md). Numbers are small, as a
/// `bench` line of big ones takes the time it asks for.
const PROTOCOL_WORDS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    "\"",
    "\n",
    " ",
    "\u{feff}",
    "\u{ff}",
    "1",
    "0",
    "-1",
    "1e400",
    "null",
    r#"{"input":"send","message":{"id":"A","role":"user","content":[{"type":"text","text":"A"}],"source":{"kind":"user"}},"target":"next-turn","wakeup":"wake"}"#,
    r#""message":{"id":"B","role":"user","content":[],"source":{"kind":"user"}}"#,
    r#"{"input":"pre-step","decision":"pass"}"#,
    r#"{"input":"pre-step","decision":"enter","batch":["#,
    r#"{"input":"step","completed":null}"#,
    r#"{"input":"cancel","cause":{"kind":"user"},"keep_inbox":true}"#,
    r#"{"input":"dispose"}"#,
    r#"{"input":"#,
    r#"{"restart":{"lose":"#,
    r#"{"query":"inbox"}"#,
    r#"{"query":"status"}"#,
    r#"{"query":"log"}"#,
    r#"{"bench":{"batch":"#,
    r#","cycles":"#,
    r#","log":"/dev/null""#,
    r#""input":"#,
    r#""query":"#,
];

/// Feeds `bytes` to one `courier serve-protocol`: it answers every line
/// that is not blank with exactly one `{"settled":true}`, exits 0 at the
/// end of input, and never panics.
fn protocol(bytes: &[u8]) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_courier"))
        .arg("serve-protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("courier runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    // Written from a thread: the answers fill stdout's pipe meanwhile.
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("courier ends");
    writer.join().expect("the writer").expect("stdin written");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The segment after the last newline is a line too when not blank
    // (the server answers a final line without its newline).
    let lines = bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !std::str::from_utf8(line).is_ok_and(|text| text.trim().is_empty()))
        .count();
    let settled = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| *line == r#"{"settled":true}"#)
        .count();
    assert_eq!(settled, lines, "one answer per line: {stderr}");
}

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

proptest! {
    // A process per case: fewer cases, each of many lines.
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn never_panic_protocol_near_misses(
        lines in proptest::collection::vec(near_miss(PROTOCOL_WORDS), 0..24),
        noise in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = lines.join(&b'\n');
        bytes.push(b'\n');
        bytes.extend(noise);
        protocol(&bytes);
    }
}
