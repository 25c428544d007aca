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
//! The goal is at least 100 MB/s. Run: `cargo bench --bench validate`.

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
}

fn main() {
    clock::main(bench, bench);
}
