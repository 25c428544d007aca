//! `courier serve-protocol [--mutant NAME]`: the core behind the wire
//! protocol of docs/PROTOCOL.md, on stdin and stdout, so `courier run
//! --against` can test any implementation of the design, this one included.
//! Exit 0 at the end of stdin or when stdout closes, 2 when stdin cannot be
//! read (or a line goes on past 1 GiB more), stdout cannot be written, or the
//! mutant cannot be had (a line longer than 16 MiB is answered as a
//! protocol error, skipped unread).

use std::hint::black_box;
use std::io::{BufRead, ErrorKind, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use courier::claim;
use courier::files;
use courier::variant::MutantArg;
use courier_core::UniqueJson;
use courier_core::log::{LINE_BYTES_MAX, SessionHeader, durable_line, lone_surrogate_escapes};
use courier_core::transcript::Runner;
use courier_core::{Agent, Input, Message, Output, Status, Stimulus, Target};
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
pub(crate) const LINE_MAX: u64 = 16 << 20;

/// Whether a line read through `take(LINE_MAX + 1)` is over the cap: its
/// content, without the newline that ends it, is longer than [`LINE_MAX`]
/// (a line of exactly `LINE_MAX` bytes is read whole, newline and all).
pub(crate) fn overlong(line: &[u8]) -> bool {
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    content.len() as u64 > LINE_MAX
}

/// How much of an overlong line is skipped looking for its end before the
/// input is taken for an endless stream.
const SKIP_MAX: u64 = 1 << 30;

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
            Ok(_) if overlong(&bytes) => {
                // Answered as any line that is not a request, then its rest
                // is skipped unread (memory stays bounded); a line with no
                // end in sight (`/dev/zero`) is no client's, and ends it.
                let reason = format!("line {number}: longer than {LINE_MAX} bytes: not read");
                if let Err(error) =
                    write_answer(&mut output, &[json!({ "error": reason }).to_string()])
                {
                    return closed(&error);
                }
                match (&mut input).take(SKIP_MAX).skip_until(b'\n') {
                    Ok(skipped) if skipped as u64 == SKIP_MAX => {
                        eprintln!(
                            "error: stdin line {number}: longer than {LINE_MAX} bytes, \
                             and no line end within {SKIP_MAX} more"
                        );
                        return ExitCode::from(2);
                    }
                    Ok(_) => continue,
                    Err(error) => {
                        eprintln!("error: cannot read stdin: {error}");
                        return ExitCode::from(2);
                    }
                }
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
        if let Err(error) = write_answer(&mut output, &lines) {
            return closed(&error);
        }
    }
    ExitCode::SUCCESS
}

/// How serving ends when stdout fails: a closed stdout means the client is
/// gone (nothing left to say, and nothing went wrong), anything else is an
/// error.
fn closed(error: &std::io::Error) -> ExitCode {
    files::stdout_failed(error);
    match error.kind() {
        ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        _ => ExitCode::from(2),
    }
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
    let value = match read_line(bytes) {
        Ok(Some(value)) => value,
        Ok(None) => return None,
        Err(reason) => return error(reason),
    };
    let kind = match line_kind(&value) {
        Ok(kind) => kind,
        Err(reason) => return error(reason),
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
    // An input is read as one, so the error says what is wrong with it
    // (serde's untagged `Stimulus` only says that no kind matched).
    if kind == "input" {
        let kind = match &value["input"] {
            Value::String(kind) => format!("input {}", files::shown(kind)),
            _ => "input".to_owned(),
        };
        return match serde_json::from_value::<Input>(value.clone()) {
            Ok(input) => {
                feed(runner, input).map_or_else(|why| error(format!("{kind}: {why}")), Some)
            }
            Err(reason) => {
                let path = culprit(&value, &reason.to_string());
                // A key the input's kind does not have (a `batch` beside a
                // `reject`) is refused as such, whatever it holds, as one
                // that serde ignored is (`line_kind`).
                let mut without = value.clone();
                let removed = without
                    .as_object_mut()
                    .and_then(|object| object.remove(&path));
                if removed.is_some() && serde_json::from_value::<Input>(without).is_ok() {
                    return error(format!("input: unknown key `{}`", files::shown(&path)));
                }
                let field = match path {
                    path if path.is_empty() => String::new(),
                    path => format!("{path}: "),
                };
                error(format!(
                    "{kind}: {field}{}",
                    files::in_json_words(&reason.to_string())
                ))
            }
        };
    }
    match serde_json::from_value::<Stimulus>(value) {
        Ok(Stimulus::Restart { lose }) => Some(restart(runner, lose)),
        Ok(Stimulus::Input(input)) => feed(runner, input).map_or_else(error, Some),
        Err(_) => error(
            "restart: not `{\"restart\":{\"lose\":N}}` with N an integer from 0 to \
             18446744073709551615"
                .to_owned(),
        ),
    }
}

/// One line in as a JSON value; `None` for a blank line.
fn read_line(bytes: &[u8]) -> Result<Option<Value>, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err("not UTF-8".to_owned());
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str(text) {
        Ok(UniqueJson(value)) => Ok(Some(value)),
        Err(reason) if reason.is_data() => Err(reason.to_string()),
        Err(reason) => Err(match lone_surrogate_escapes(text).next() {
            // serde_json's word for it is "unexpected end of hex escape".
            Some((at, unit)) => format!(
                "a string escapes half a UTF-16 surrogate pair alone (`\\u{unit:04x}` at \
                 byte {}): protocol text is Unicode, so send both halves or neither",
                at + 1
            ),
            None => courier_core::log::unread_json(text, &reason)
                .unwrap_or_else(|| format!("not JSON: {reason}")),
        }),
    }
}

/// The line's kind (`input`, `restart`, `query` or `bench`): an object with
/// exactly one of those keys and no key its kind does not have (a misspelt
/// `keep_inbox`, a `"log"` beside a query would be ignored, so the line
/// would not be done as written).
fn line_kind(value: &Value) -> Result<&'static str, String> {
    let Some(object) = value.as_object() else {
        return Err(format!("not a JSON object: {}", kind_of(value)));
    };
    let kinds: Vec<&'static str> = ["input", "restart", "query", "bench"]
        .into_iter()
        .filter(|key| object.contains_key(*key))
        .collect();
    let [kind] = kinds[..] else {
        return Err(format!(
            "an object with exactly one of the keys `input`, `restart`, `query`, `bench`, \
             got {}",
            if kinds.is_empty() {
                "none".to_owned()
            } else {
                kinds.join(", ")
            }
        ));
    };
    let extra = match kind {
        "input" => serde_json::from_value::<Input>(value.clone())
            .ok()
            .and_then(|input| serde_json::to_value(input).ok())
            .and_then(|read| courier_core::dropped_key(value, &read))
            .map(|key| files::shown(&key)),
        "restart" => first_unknown(value, |key| key == "restart")
            .or_else(|| first_unknown(&value["restart"], |key| key == "lose")),
        "bench" => first_unknown(value, |key| key == "bench").or_else(|| {
            first_unknown(&value["bench"], |key| {
                ["batch", "cycles", "log"].contains(&key)
            })
        }),
        _ => first_unknown(value, |key| key == "query"),
    };
    match extra {
        Some(key) => Err(format!("{kind}: unknown key `{key}`")),
        None => Ok(kind),
    }
}

/// The path (`message.id`, `inserted[1].id`) of the field an input's
/// `reason` is about, or `""` when it is the whole line's. serde cannot say
/// it (the input's enum is internally tagged, so its fields are read from a
/// buffer that keeps no path), but it reads an object's fields (keys in
/// order) and an array's items in order and stops at the first that fails,
/// so level by level: in an array, the culprit is the first item that
/// fails alike on its own (the array then cut to it, so each item is read
/// once and deeper levels read one item); in an object, the last entry of
/// the shortest prefix of its entries that fails alike, found by halving
/// (tag keys, `input`, `kind`, `decision`, always stay: without them
/// nothing reads). A container that fails alike with no entries is itself
/// the culprit, and a missing field the object's that lacks it.
fn culprit(value: &Value, reason: &str) -> String {
    const TAGS: [&str; 3] = ["input", "kind", "decision"];
    let is_tag = |key: &str| TAGS.contains(&key);
    let fails_alike = |line: Value| fails_alike(line, reason);
    // The line as it is cut down, the path in it, and the path as sent.
    let mut line = value.clone();
    let mut path: Vec<Value> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    // The line with the container at `path` replaced by `with`.
    let replaced = |line: &Value, path: &[Value], with: Value| {
        let mut cut = line.clone();
        if let Some(container) = entry_mut(&mut cut, path) {
            *container = with;
        }
        cut
    };
    loop {
        match entry(&line, &path).cloned() {
            Some(Value::Array(items)) => {
                let empty = replaced(&line, &path, Value::Array(Vec::new()));
                if items.is_empty() || fails_alike(empty.clone()) {
                    break;
                }
                let one = |item: &Value| replaced(&empty, &path, Value::Array(vec![item.clone()]));
                let Some(index) = items.iter().position(|item| fails_alike(one(item))) else {
                    break;
                };
                line = one(&items[index]);
                path.push(Value::from(0));
                shown.push(format!("[{index}]"));
            }
            Some(Value::Object(object)) => {
                let keys: Vec<&String> = object.keys().filter(|key| !is_tag(key)).collect();
                let prefix = |kept: usize| {
                    let mut entries = 0;
                    let mut cut = object.clone();
                    cut.retain(|key, _| {
                        entries += usize::from(!is_tag(key));
                        is_tag(key) || entries <= kept
                    });
                    fails_alike(replaced(&line, &path, Value::Object(cut)))
                };
                if keys.is_empty() || prefix(0) {
                    break;
                }
                // `high` fails alike (every entry is the line as it
                // stands), `low - 1` does not.
                let (mut low, mut high) = (1, keys.len());
                while low < high {
                    let middle = low + (high - low) / 2;
                    match prefix(middle) {
                        true => high = middle,
                        false => low = middle + 1,
                    }
                }
                let key = keys[low - 1].clone();
                shown.push(format!(".{}", files::shown(&key)));
                path.push(Value::String(key));
            }
            Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) | None => {
                break;
            }
        }
    }
    climb_to_missing(&line, &mut path, &mut shown, reason);
    shown.concat().trim_start_matches('.').to_owned()
}

/// Whether `line` fails to read as an input with the same `reason`.
fn fails_alike(line: Value, reason: &str) -> bool {
    serde_json::from_value::<Input>(line).is_err_and(|error| error.to_string() == reason)
}

/// For a missing field, climbs `path` (and `shown`) to the object that
/// lacks it: the prefix search of [`culprit`] may stop at whichever entry
/// first makes an object read that far.
fn climb_to_missing(line: &Value, path: &mut Vec<Value>, shown: &mut Vec<String>, reason: &str) {
    // An array where an object belongs (`"cause": []`, read as a struct's
    // fields in a row) is the one missing it.
    let at_object = !matches!(entry(line, path), Some(Value::Array(_)));
    if let Some(missing) = reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
        .filter(|_| at_object)
    {
        // The object that lacks it: given it (as null), the line no
        // longer fails alike.
        let lacks = |path: &[Value]| {
            let mut given = line.clone();
            entry_mut(&mut given, path)
                .and_then(Value::as_object_mut)
                .filter(|object| !object.contains_key(missing))
                .map(|object| object.insert(missing.to_owned(), Value::Null))
                .is_some()
                && !fails_alike(given, reason)
        };
        while !lacks(path) {
            if path.pop().is_none() {
                break;
            }
            shown.pop();
        }
    }
}

/// The entry of `value` at `path` (keys as strings, indices as numbers).
fn entry<'a>(value: &'a Value, path: &[Value]) -> Option<&'a Value> {
    path.iter().try_fold(value, |value, step| match step {
        Value::String(key) => value.get(key),
        index => value.get(usize::try_from(index.as_u64()?).ok()?),
    })
}

/// [`entry`], to change.
fn entry_mut<'a>(value: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Value::String(key) => value.get_mut(key),
        index => value.get_mut(usize::try_from(index.as_u64()?).ok()?),
    })
}

/// The first key of `object` (when it is one) that `known` does not take.
fn first_unknown(object: &Value, known: impl Fn(&str) -> bool) -> Option<String> {
    object
        .as_object()?
        .keys()
        .find(|key| !known(key))
        .map(files::shown)
}

/// What a JSON value is, for an error.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `{"bench":{"batch":N,"cycles":K[,"log":PATH]}}` (docs/PROTOCOL.md): K
/// claim cycles of N messages (`courier::claim`) on fresh agents of the
/// served variant; the protocol's own agent is untouched. The cycles run
/// twice: once checked cycle by cycle (their durable outputs written as a
/// session log when asked), then timed on another fresh agent, each output
/// dropped as it comes, as the claim bench does. The core is
/// deterministic, so both runs are the same cycles. Every message is built
/// before the clock starts, so N × K is capped at [`BENCH_MESSAGES_MAX`].
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
    if batch
        .checked_mul(cycles)
        .is_none_or(|messages| messages > BENCH_MESSAGES_MAX)
    {
        return Err(format!(
            "bench batch × cycles must be at most {BENCH_MESSAGES_MAX} messages \
             (each is built before the clock starts), got {batch} × {cycles}"
        ));
    }
    let log = match request.get("log") {
        None => None,
        Some(Value::String(path)) if !path.is_empty() => Some(Path::new(path)),
        Some(_) => return Err("bench log must be a file path".to_owned()),
    };
    // Refused as every command's output is, before the cycles run.
    if let Some(path) = log {
        if files::is_stdout(path) {
            return Err(format!(
                "bench log {}: this server's stdout, where its answers go: refused",
                files::named(path)
            ));
        }
        let output = files::Output {
            flag: "bench log",
            path,
        };
        // The requests may come from a file: it is this server's input.
        files::check_paths(&[Path::new("/dev/stdin")], &[output])?;
        // A path from a protocol line, not from who runs the server: it
        // never replaces a file.
        if let Some(refusal) = files::refused_existing("bench log", path) {
            return Err(refusal);
        }
    }
    match log {
        None => checked_cycles(pristine, batch, cycles, |_| Ok(()))?,
        Some(path) => {
            // The log is written as the cycles are checked, and kept only
            // when every cycle is the claim cycle.
            let mut checked = Ok(());
            let written = courier::files::create_with(path, |file| {
                writeln!(file, "{}", SessionHeader::new("bench").line())?;
                checked = checked_cycles(pristine, batch, cycles, |outputs| {
                    outputs
                        .iter()
                        .filter_map(durable_line)
                        .try_for_each(|line| writeln!(file, "{line}"))
                        .map_err(|error| format!("bench log {}: {error}", files::named(path)))
                });
                match &checked {
                    Ok(()) => Ok(()),
                    Err(reason) => Err(std::io::Error::other(reason.clone())),
                }
            });
            checked?;
            written.map_err(|error| format!("bench log {}: {error}", files::named(path)))?;
        }
    }
    let refused = |refusal| format!("bench: the claim cycle was refused: {refusal}");
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

/// The most messages a `bench` line may ask for (batch × cycles): they are
/// built before the clock starts, about 150 bytes each.
const BENCH_MESSAGES_MAX: usize = 1 << 20;

/// Runs `cycles` claim cycles of `batch` on a fresh agent, checking each
/// as it ends (one cycle's outputs in memory at a time) and handing its
/// outputs to `keep`; the first cycle that is not the claim cycle, or the
/// first error of `keep`, is the error.
fn checked_cycles(
    pristine: &Agent,
    batch: usize,
    cycles: usize,
    mut keep: impl FnMut(&[Output]) -> Result<(), String>,
) -> Result<(), String> {
    let mut agent = pristine.clone();
    let mut outputs = Vec::new();
    for (cycle, mut messages) in claim::batches(batch, cycles).into_iter().enumerate() {
        outputs.clear();
        claim::run(&mut agent, &mut messages, |agent| {
            outputs.extend(std::iter::from_fn(|| agent.poll_output()));
        })
        .map_err(|refusal| format!("bench: the claim cycle was refused: {refusal}"))?;
        if let Some(wrong) = claim::wrong(&outputs, &agent, batch, 1) {
            return Err(format!(
                "bench: not the claim cycle: cycle {}: {wrong}",
                cycle + 1
            ));
        }
        keep(&outputs)?;
    }
    Ok(())
}

/// Feeds `input`, unless a message it supplies would write a log line that
/// no reader takes back (the `log` answer is read by `courier validate`,
/// as the runtime's log is by a resume): that is a protocol error, as the
/// runtime refuses it (`Error::Unloggable`).
fn feed(runner: &mut Runner, input: Input) -> Result<Vec<String>, String> {
    let line_max = usize::try_from(LINE_BYTES_MAX).unwrap_or(usize::MAX);
    if let Some((message, why)) = Message::unreadable_when_logged(input.supplied(), line_max) {
        return Err(format!(
            "message {}: not logged, since a resume could not read it back: {why}",
            files::shown(&message.id().as_str())
        ));
    }
    let transition = runner.transition(input);
    Ok(match transition.answer {
        Err(refusal) => vec![json!({ "refused": refusal.to_string() }).to_string()],
        Ok(()) => outputs(&transition.outputs),
    })
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
        .map(|output| {
            // The field order `Output` declares (`type` first, as in a log);
            // an output that cannot be encoded is said, not dropped.
            serde_json::to_string(output).unwrap_or_else(|error| {
                json!({ "error": format!("an output cannot be encoded: {error}") }).to_string()
            })
        })
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
