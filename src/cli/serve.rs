//! `courier serve-protocol [--mutant NAME]`: the core behind the wire
//! protocol of docs/PROTOCOL.md, on stdin and stdout, so `courier run
//! --against` can test any implementation of the design, this one included.
//! Exit 0 at the end of stdin or when stdout closes, 2 when stdin cannot be
//! read (or holds a line longer than 16 MiB), stdout cannot be written, or
//! the mutant cannot be had.

use std::hint::black_box;
use std::io::{BufRead, ErrorKind, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use courier::claim;
use courier::variant::MutantArg;
use courier_core::log::{SessionHeader, durable_line};
use courier_core::transcript::Runner;
use courier_core::{Agent, Input, Output, Status, Stimulus, Target};
use serde_json::{Value, json};

/// Arguments of `courier serve-protocol`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Serve a planted bug of SPEC §8 (needs `--features mutants`).
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
}

/// The marker that ends every answer: the client reads up to it.
const SETTLED: &str = r#"{"settled":true}"#;

/// The longest request line read (a request names one input; a line this
/// long is not one, and reading it whole would take the memory it asks).
const LINE_MAX: u64 = 16 << 20;

pub(crate) fn main(args: &Args) -> ExitCode {
    let Some(agent) = super::agent(args.mutant) else {
        return ExitCode::from(2);
    };
    // What a `bench` line starts from: a fresh agent of the served variant.
    let pristine = agent.clone();
    let mut runner = Runner::new(agent);
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut bytes = Vec::new();
    for number in 1.. {
        bytes.clear();
        match (&mut input)
            .take(LINE_MAX + 1)
            .read_until(b'\n', &mut bytes)
        {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(read) if read as u64 > LINE_MAX => {
                eprintln!("error: stdin line {number}: longer than {LINE_MAX} bytes");
                return ExitCode::from(2);
            }
            Ok(_) => {}
            Err(error) => {
                eprintln!("error: cannot read stdin: {error}");
                return ExitCode::from(2);
            }
        }
        let Some(lines) = answer(&mut runner, &pristine, number, &bytes) else {
            continue;
        };
        match write_answer(&mut output, &lines) {
            Ok(()) => {}
            // A closed stdout means the client is gone: nothing left to say.
            Err(error) if error.kind() == ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: cannot write stdout: {error}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}

fn write_answer(output: &mut impl Write, lines: &[String]) -> std::io::Result<()> {
    for line in lines {
        writeln!(output, "{line}")?;
    }
    writeln!(output, "{SETTLED}")?;
    output.flush()
}

/// The lines answering one line in (without the marker); `None` for a blank
/// line, which the protocol ignores.
fn answer(
    runner: &mut Runner,
    pristine: &Agent,
    number: usize,
    bytes: &[u8],
) -> Option<Vec<String>> {
    let error = |reason: String| {
        Some(vec![
            json!({ "error": format!("line {number}: {reason}") }).to_string(),
        ])
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return error("not UTF-8".to_owned());
    };
    if text.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(reason) => return error(format!("not JSON: {reason}")),
    };
    if let Some(query) = value.get("query") {
        return match query.as_str() {
            Some("inbox") => Some(vec![inbox(runner.agent()).to_string()]),
            Some("status") => Some(vec![status(runner.agent()).to_string()]),
            Some("log") => Some(vec![log(runner).to_string()]),
            _ => error(format!("unknown query: {query}")),
        };
    }
    if let Some(request) = value.get("bench") {
        return match bench(pristine, request) {
            Ok(answer) => Some(vec![answer.to_string()]),
            Err(reason) => error(reason),
        };
    }
    match serde_json::from_value::<Stimulus>(value) {
        Ok(Stimulus::Input(input)) => Some(feed(runner, input)),
        Ok(Stimulus::Restart { lose }) => Some(restart(runner, lose)),
        Err(reason) => error(format!(
            "neither an input, a restart, a query nor a bench: {reason}"
        )),
    }
}

/// `{"bench":{"batch":N,"cycles":K[,"log":PATH]}}` (docs/PROTOCOL.md): K
/// claim cycles of N messages (`courier::claim`) on fresh agents of the
/// served variant; the protocol's own agent is untouched. The cycles run
/// twice: once keeping every output, to check them (and write their durable
/// ones as a session log when asked), then timed on another fresh agent,
/// each output dropped as it comes, as the claim bench does. The core is
/// deterministic, so both runs are the same cycles.
fn bench(pristine: &Agent, request: &Value) -> Result<Value, String> {
    let positive = |key: &str| {
        let value = request.get(key).unwrap_or(&Value::Null);
        value
            .as_u64()
            .filter(|&number| number > 0)
            .and_then(|number| usize::try_from(number).ok())
            .ok_or_else(|| format!("bench {key} must be a positive integer, got {value}"))
    };
    let (batch, cycles) = (positive("batch")?, positive("cycles")?);
    let log = match request.get("log") {
        None => None,
        Some(Value::String(path)) if !path.is_empty() => Some(Path::new(path)),
        Some(_) => return Err("bench log must be a file path".to_owned()),
    };
    let refused = |refusal| format!("bench: the claim cycle was refused: {refusal}");
    let mut agent = pristine.clone();
    let mut outputs = Vec::new();
    for mut messages in claim::batches(batch, cycles) {
        claim::run(&mut agent, &mut messages, |agent| {
            outputs.extend(std::iter::from_fn(|| agent.poll_output()));
        })
        .map_err(refused)?;
    }
    if let Some(wrong) = claim::wrong(&outputs, &agent, batch, cycles) {
        return Err(format!("bench: not the claim cycle: {wrong}"));
    }
    if let Some(path) = log {
        let lines = std::iter::once(SessionHeader::new("bench").line())
            .chain(outputs.iter().filter_map(durable_line));
        let text: String = lines.map(|line| line + "\n").collect();
        courier::files::replace(path, text)
            .map_err(|error| format!("bench log {}: {error}", path.display()))?;
    }
    let mut agent = pristine.clone();
    let mut batches = claim::batches(batch, cycles);
    let start = Instant::now();
    for messages in &mut batches {
        claim::run(&mut agent, messages, |agent| {
            while let Some(output) = agent.poll_output() {
                black_box(output);
            }
        })
        .map_err(refused)?;
    }
    let nanoseconds = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    Ok(json!({ "bench": { "batch": batch, "cycles": cycles, "nanoseconds": nanoseconds } }))
}

fn feed(runner: &mut Runner, input: Input) -> Vec<String> {
    let transition = runner.transition(input);
    match transition.answer {
        Err(refusal) => vec![json!({ "refused": refusal.to_string() }).to_string()],
        Ok(()) => outputs(&transition.outputs),
    }
}

fn restart(runner: &mut Runner, lose: usize) -> Vec<String> {
    match runner.crash(lose) {
        Err(corrupt) => vec![json!({ "refused": format!("corrupt-log: {corrupt}") }).to_string()],
        Ok(closers) => outputs(&closers),
    }
}

fn outputs(outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .map(|output| json!(output).to_string())
        .collect()
}

/// `{"log":[lines]}`: the durable log a transcript's runner keeps (what
/// restarts kept, and their closers), under a header, as JSONL lines.
fn log(runner: &Runner) -> Value {
    let header = serde_json::to_string(&SessionHeader::new("courier"));
    let lines = header
        .into_iter()
        .chain(runner.log().iter().filter_map(durable_line));
    json!({ "log": lines.collect::<Vec<_>>() })
}

/// `{"inbox":{"next-turn":[ids],"next-step":[ids]}}`.
fn inbox(agent: &Agent) -> Value {
    let ids = |target| -> Vec<&str> {
        let list = agent.inbox().list(target);
        list.iter().map(|message| message.id().as_str()).collect()
    };
    json!({ "inbox": { "next-turn": ids(Target::NextTurn), "next-step": ids(Target::NextStep) } })
}

/// `{"status":"idle"}` or `{"status":{"turn":T,"step":S,"awaiting":A}}`.
fn status(agent: &Agent) -> Value {
    match agent.status() {
        Status::Idle => json!({ "status": "idle" }),
        Status::Running {
            turn,
            step,
            awaiting,
        } => json!({ "status": { "turn": turn, "step": step, "awaiting": awaiting } }),
    }
}

#[cfg(test)]
mod tests {
    use courier_core::transcript::{Command, parse_command};

    /// The shapes docs/PROTOCOL.md shows are the ones serde writes.
    #[test]
    fn the_documented_input_shapes_are_serdes() {
        let shapes = [
            (
                "followup A",
                r#"{"input":"send","message":{"id":"A","role":"user","content":[{"type":"text","text":"A"}],"source":{"kind":"user"}},"target":"next-turn","wakeup":"wake"}"#,
            ),
            ("step completed", r#"{"input":"step","completed":null}"#),
            ("pre-step pass", r#"{"input":"pre-step","decision":"pass"}"#),
            (
                "cancel user keep-inbox",
                r#"{"input":"cancel","cause":{"kind":"user"},"keep_inbox":true}"#,
            ),
            ("remove A", r#"{"input":"remove","id":"A"}"#),
            ("dispose", r#"{"input":"dispose"}"#),
        ];
        for (line, json) in shapes {
            let Ok(Command::Input(input)) = parse_command(line) else {
                panic!("{line}");
            };
            let read: courier_core::Input = serde_json::from_str(json).unwrap();
            assert_eq!(read, input, "{line}");
            let written: serde_json::Value = serde_json::to_value(&input).unwrap();
            let expected: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(written, expected, "{line}");
        }
    }
}
