//! Throughput of `courier::validate` in bytes per second, on one core, over
//! two large in-memory logs:
//! - `recorded`: every dsh fixture concatenated many times (each `session`
//!   header starts a new session), a realistic mix where most lines are
//!   events outside the contract (chunks, tool calls) that are only
//!   syntax-checked;
//! - `core`: a log the core writes over many turns, every line a delivery
//!   event (the worst case: each line is fully deserialized and replayed).
//!
//! Each log is also read by two baselines from the same run, which do only
//! the part of the work every reader does: split the bytes into lines, check
//! each is UTF-8, and parse it with `serde_json`, into `IgnoredAny` (syntax
//! only: the validator's floor, since it syntax-checks every line) and into
//! a `serde_json::Value` (a full parse into a generic tree).
//!
//! The goal is at least 100 MB/s.
//!
//! `validate-scale` (or `validate-scale-cpu`) times, per event, logs of
//! 10k, 100k and 1M events built to stress what used to be scanned per
//! event (`courier/`, [`scale_log`]): a pending list of a quarter of the
//! events, and one step admitting another quarter; and what used to be
//! moved per event (`middle/`, [`middle_log`]): every splice at the middle
//! of a list growing to half the events. Time per event must stay flat
//! (within 2x) from 10k to 1M.
//!
//! Run: `cargo bench --bench validate`.

mod clock;
#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use courier_check::validate::validate;
use courier_core::log::{SessionHeader, durable_line};
use courier_core::transcript::default_completion;
use courier_core::{Agent, Input, Message};
use criterion::measurement::Measurement;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use serde::de::{DeserializeOwned, IgnoredAny};

/// Each input is at least this large, so per-log setup is noise.
const LOG_BYTES_MIN: usize = 16 << 20;

fn recorded_log() -> Vec<u8> {
    let files = common::files_with_extension(&common::dsh_logs(), "jsonl");
    let once: Vec<u8> = files
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();
    assert!(
        !once.is_empty(),
        "no logs in {}",
        common::dsh_logs().display()
    );
    once.repeat(LOG_BYTES_MIN.div_ceil(once.len()))
}

/// Turns of a followup plus a steer, run to idle with `pass`/`completed`.
fn core_log() -> Vec<u8> {
    let mut agent = Agent::new();
    let mut log = SessionHeader::new("bench").line() + "\n";
    for turn in 0.. {
        if log.len() >= LOG_BYTES_MIN {
            break;
        }
        let prompt = Message::from(format!("prompt-{turn}").as_str());
        let steer = Message::from(format!("steer-{turn}").as_str());
        agent.handle(Input::followup(prompt)).unwrap();
        agent.handle(Input::steer(steer)).unwrap();
        for _ in 0..16 {
            let Some(input) = default_completion(&agent) else {
                break;
            };
            agent.handle(input).unwrap();
        }
        while let Some(output) = agent.poll_output() {
            if let Some(line) = durable_line(&output) {
                log.push_str(&line);
                log.push('\n');
            }
        }
    }
    log.into_bytes()
}

/// A `validate-scale` log family: its name and its builder (events to log).
type Family = (&'static str, fn(usize) -> Vec<u8>);

fn message(id: &str) -> String {
    format!(r#"{{"id":"{id}","role":"user","content":"x","source":{{"kind":"user"}}}}"#)
}

/// A splice inserting message `id` at `start` of `next-turn`.
fn send(start: usize, id: &str) -> String {
    let message = message(id);
    format!(
        r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":{start},"inserted":[{message}]}}}}"#
    )
}

/// A log of `events` splices, each at the middle of one growing `next-turn`
/// list: three in four insert one message there, the fourth cancels the
/// message there, so the list grows to half the events and every splice
/// lands where a list that moves elements to make room moves half of it.
fn middle_log(events: usize) -> Vec<u8> {
    let mut log = vec![SessionHeader::new("middle").line()];
    let mut length = 0;
    for k in 0..events {
        let start = length / 2;
        if k % 4 == 3 {
            log.push(format!(
                r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":{start},"removedCount":1,"inserted":[],"outcome":"canceled"}}}}"#
            ));
            length -= 1;
        } else {
            log.push(send(start, &format!("m{k}")));
            length += 1;
        }
    }
    (log.join("\n") + "\n").into_bytes()
}

/// A log of `events` events (lines after the header) whose lists grow with
/// it: a quarter appends (at the end) and prepends (at the front) pending
/// `next-turn` messages one splice each; one turn's one step admits another
/// quarter as context; the rest are turns that each send one message, claim
/// the head and enter a message, each checked against the long list.
fn scale_log(events: usize) -> Vec<u8> {
    let mut log = vec![SessionHeader::new("scale").line()];
    let mut pending = 0;
    for k in 0..events / 4 {
        log.push(send(if k % 2 == 0 { pending } else { 0 }, &format!("p{k}")));
        pending += 1;
    }
    // Turn 1 claims the head of what is pending (SPEC §5), as every turn here.
    let claim = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}}"#;
    log.push(r#"{"type":"turn/start","data":{"turn":1}}"#.into());
    log.push(claim.into());
    pending -= 1;
    log.push(r#"{"type":"step/start","data":{"turn":1,"step":1}}"#.into());
    for k in 0..events / 4 {
        let message = message(&format!("c{k}"));
        log.push(format!(r#"{{"type":"user/message","data":{message}}}"#));
    }
    log.push(r#"{"type":"step/end","data":{"turn":1,"step":1}}"#.into());
    log.push(r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}"#.into());
    let mut turn = 1;
    while log.len() + 7 <= events + 1 {
        turn += 1;
        log.push(send(pending, &format!("t{turn}")));
        log.push(format!(
            r#"{{"type":"turn/start","data":{{"turn":{turn}}}}}"#
        ));
        log.push(claim.into());
        log.push(format!(
            r#"{{"type":"step/start","data":{{"turn":{turn},"step":1}}}}"#
        ));
        // What the step enters is checked against the long pending list.
        let message = message(&format!("u{turn}"));
        log.push(format!(r#"{{"type":"user/message","data":{message}}}"#));
        log.push(format!(
            r#"{{"type":"step/end","data":{{"turn":{turn},"step":1}}}}"#
        ));
        log.push(format!(
            r#"{{"type":"turn/end","data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#
        ));
    }
    (log.join("\n") + "\n").into_bytes()
}

/// The baselines: every non-blank line of `log` checked as UTF-8 and parsed
/// as a `T`; returns the line count, so nothing is optimized away.
fn parse_lines<T: DeserializeOwned>(log: &[u8]) -> u64 {
    let mut lines = 0;
    for line in log.split(|byte| *byte == b'\n') {
        let text = std::str::from_utf8(line).expect("the logs are UTF-8");
        if text.trim().is_empty() {
            continue;
        }
        let value: T = serde_json::from_str(text).expect("every line is JSON");
        std::hint::black_box(value);
        lines += 1;
    }
    lines
}

fn bench<M: Measurement>(criterion: &mut Criterion<M>) {
    let mut group = clock::group(criterion, "validate");
    // Each iteration reads 16 MiB; short flat windows keep the six
    // functions to about half a minute.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, log) in [("recorded", recorded_log()), ("core", core_log())] {
        group.throughput(Throughput::Bytes(log.len() as u64));
        group.bench_function(BenchmarkId::new("courier", name), |bencher| {
            bencher.iter(|| {
                let summary = validate(log.as_slice(), |finding| panic!("{finding}")).unwrap();
                assert!(summary.is_valid() && summary.lines > 1000);
            });
        });
        group.bench_function(BenchmarkId::new("json-ignored", name), |bencher| {
            bencher.iter(|| assert!(parse_lines::<IgnoredAny>(&log) > 1000));
        });
        group.bench_function(BenchmarkId::new("json-value", name), |bencher| {
            bencher.iter(|| assert!(parse_lines::<serde_json::Value>(&log) > 1000));
        });
    }
    group.finish();
    let mut group = clock::group(criterion, "validate-scale");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    let families: [Family; 2] = [("courier", scale_log), ("middle", middle_log)];
    for ((family, build), events) in families
        .into_iter()
        .flat_map(|family| [10_000, 100_000, 1_000_000].map(|events| (family, events)))
    {
        let log = build(events);
        let lines = log.iter().filter(|byte| **byte == b'\n').count() as u64;
        // Every line after the header is an event.
        group.throughput(Throughput::Elements(lines - 1));
        group.bench_function(BenchmarkId::new(family, events), |bencher| {
            bencher.iter(|| {
                let summary = validate(log.as_slice(), |finding| panic!("{finding}")).unwrap();
                assert!(summary.is_valid() && summary.lines == lines);
            });
        });
    }
    group.finish();
}

fn main() {
    clock::main(bench, bench);
}
