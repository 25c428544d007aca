//! Claim throughput (issue 7): N messages sent to the sans-IO core and claimed
//! through one boundary, against moving the same N messages through a
//! `VecDeque` (the floor), a tokio unbounded channel and a crossbeam unbounded
//! channel, and against the same claim cycle on dsh's own agent loop (issue
//! 13 item 7), timed inside node by the dsh adapter. See `BENCHMARKS.md` for
//! what each timed region holds.
//!
//! Every function gets the same pre-built input: a fresh `Vec` of N
//! [`Message`] handles (cheap `Arc` clones of one set built once), made by
//! criterion's setup outside the timed region and emptied inside it. Each
//! function keeps its container (agent, queue, channel, runtime) across
//! iterations, so allocations that a steady state reuses are not counted.

mod common;

use std::collections::VecDeque;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use courier::claim;
use courier_core::{Agent, Message};
use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group};
use serde_json::{Value, json};

/// One claim cycle of the core, from idle back to idle (`courier::claim`).
/// Every output is drained after each input, as the calling contract
/// requires, and dropped.
#[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
fn claim_cycle(agent: &mut Agent, batch: &mut Vec<Message>) {
    let cycle = claim::run(agent, batch, |agent| {
        while let Some(output) = agent.poll_output() {
            black_box(output);
        }
    });
    assert!(cycle.is_ok(), "the claim cycle is never refused");
}

/// Runs one cycle outside the measurement and checks that it is the cycle
/// this bench claims to time: one claim splice of all N, N `claimed`s, N
/// `user/message`s, and the agent idle again.
fn check_claim_cycle(count: usize) {
    let mut agent = Agent::new();
    let mut outputs = Vec::new();
    claim::run(&mut agent, &mut common::messages(count), |agent| {
        outputs.extend(std::iter::from_fn(|| agent.poll_output()))
    })
    .expect("the claim cycle is never refused");
    if let Some(wrong) = claim::wrong(&outputs, &agent, count, 1) {
        panic!("not the claim cycle: {wrong}");
    }
}

/// One function's work on one batch, which it empties.
type Cycle<'a> = dyn FnMut(&mut Vec<Message>) + 'a;

/// The floor: push N messages onto a queue, then pop and drop them.
#[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
fn vecdeque_cycle(queue: &mut VecDeque<Message>, batch: &mut Vec<Message>) {
    queue.extend(batch.drain(..));
    while let Some(message) = queue.pop_front() {
        black_box(message);
    }
}

/// crossbeam's unbounded channel: send N, then receive N, on one thread.
#[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
fn crossbeam_cycle(
    (sender, receiver): &(
        crossbeam_channel::Sender<Message>,
        crossbeam_channel::Receiver<Message>,
    ),
    batch: &mut Vec<Message>,
) {
    let count = batch.len();
    for message in batch.drain(..) {
        sender.send(message).expect("the receiver is alive");
    }
    for _ in 0..count {
        black_box(receiver.try_recv().expect("sent above"));
    }
}

/// dsh's agent loop behind the adapter (adapters/dsh, docs/PROTOCOL.md),
/// asked over its `bench` line to run the claim cycle itself: the time is
/// node's own clock around the cycles, so the pipe and JSON are not counted.
struct Dsh {
    node: Child,
    /// `None` once closed, which ends the adapter.
    stdin: Option<ChildStdin>,
    answers: Lines<BufReader<ChildStdout>>,
}

impl Dsh {
    /// The adapter's bundle under node, or why it cannot run here.
    fn start() -> Result<Self, String> {
        let driver = dsh_adapter().join("dist/driver.mjs");
        if !driver.is_file() {
            return Err(format!(
                "the dsh adapter is not built ({} is missing: npm ci && npm run build in adapters/dsh)",
                driver.display()
            ));
        }
        let mut node = Command::new("node")
            .arg(&driver)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot run node: {error}"))?;
        let (Some(stdin), Some(stdout)) = (node.stdin.take(), node.stdout.take()) else {
            unreachable!("both pipes were asked for");
        };
        let answers = BufReader::new(stdout).lines();
        Ok(Self {
            node,
            stdin: Some(stdin),
            answers,
        })
    }

    /// `cycles` claim cycles of `count` messages on a fresh dsh agent: the
    /// adapter checks the cycle (each claim takes the whole batch, every
    /// message is claimed and enters the step, idle after) and answers the
    /// nanoseconds the cycles took.
    fn cycles(&mut self, count: usize, cycles: u64) -> Duration {
        let request = json!({ "bench": { "batch": count, "cycles": cycles } });
        let stdin = self.stdin.as_mut().expect("open until dropped");
        writeln!(stdin, "{request}").expect("the adapter reads its stdin");
        let answer = self.next_value();
        let settled = self.next_value();
        assert_eq!(settled, json!({ "settled": true }), "after {answer}");
        let nanoseconds = answer
            .pointer("/bench/nanoseconds")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("the adapter's answer to {request}: {answer}"));
        Duration::from_nanos(nanoseconds)
    }

    fn next_value(&mut self) -> Value {
        let line = self
            .answers
            .next()
            .expect("the adapter answers before it exits")
            .expect("the adapter's stdout is readable");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{line:?}: {error}"))
    }
}

impl Drop for Dsh {
    fn drop(&mut self) {
        // At the end of its stdin the adapter removes its scratch folders
        // and exits 0.
        drop(self.stdin.take());
        let _ = self.node.wait();
    }
}

/// `adapters/dsh` of this checkout (`COURIER_DSH_ADAPTER` overrides it, as
/// for `courier run --against dsh`).
fn dsh_adapter() -> PathBuf {
    std::env::var_os("COURIER_DSH_ADAPTER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/dsh"),
        PathBuf::from,
    )
}

fn claim(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("claim");
    let mut dsh = Dsh::start()
        .map_err(|reason| eprintln!("claim/dsh skipped: {reason}"))
        .ok();
    for count in common::BATCH_SIZES {
        check_claim_cycle(count);
        // Fresh containers per batch size, so one size's capacity never
        // carries over to the next.
        let mut agent = Agent::new();
        let mut queue = VecDeque::new();
        let mut tokio_channel = common::TokioChannel::new();
        let crossbeam_channel = crossbeam_channel::unbounded();
        let prebuilt = common::messages(count);
        let setup = || prebuilt.clone();
        group.throughput(Throughput::Elements(count as u64));
        let mut bench = |name: &str, cycle: &mut Cycle<'_>| {
            group.bench_function(BenchmarkId::new(name, count), |bencher| {
                bencher.iter_batched_ref(setup, &mut *cycle, BatchSize::SmallInput)
            });
        };
        bench("core", &mut |batch| claim_cycle(&mut agent, batch));
        bench("vecdeque", &mut |batch| vecdeque_cycle(&mut queue, batch));
        bench("tokio-mpsc", &mut |batch| tokio_channel.cycle(batch));
        bench("crossbeam", &mut |batch| {
            crossbeam_cycle(&crossbeam_channel, batch)
        });
        if let Some(dsh) = &mut dsh {
            // A cycle takes milliseconds on dsh, and its session grows with
            // every cycle: ten samples of equal length, each on a fresh agent.
            group.sample_size(10).sampling_mode(SamplingMode::Flat);
            group.bench_function(BenchmarkId::new("dsh", count), |bencher| {
                bencher.iter_custom(|cycles| dsh.cycles(count, cycles))
            });
            group.sample_size(100).sampling_mode(SamplingMode::Auto);
        }
    }
    group.finish();
}

/// Profiling mode, for `valgrind --tool=callgrind` or `perf`: with
/// `COURIER_PROFILE=<function>:<batch size>:<cycles>` (for example
/// `core:256:1000`) the binary runs exactly that many cycles of one function
/// and exits without criterion, so instruction counts divide evenly. It
/// prints the time of the cycles alone (inputs are built before), wall and
/// on-CPU.
fn profile(spec: &str) {
    let fields: Vec<&str> = spec.split(':').collect();
    let [name, count, cycles] = fields[..] else {
        panic!("COURIER_PROFILE wants <function>:<batch size>:<cycles>, got {spec:?}");
    };
    let count: usize = count.parse().expect("batch size is a number");
    let cycles: usize = cycles.parse().expect("cycles is a number");
    let prebuilt = common::messages(count);
    let mut cycle: Box<Cycle<'_>> = match name {
        "core" => {
            let mut agent = Agent::new();
            Box::new(move |batch| claim_cycle(&mut agent, batch))
        }
        "vecdeque" => {
            let mut queue = VecDeque::new();
            Box::new(move |batch| vecdeque_cycle(&mut queue, batch))
        }
        "tokio-mpsc" => {
            let mut channel = common::TokioChannel::new();
            Box::new(move |batch| channel.cycle(batch))
        }
        "crossbeam" => {
            let channel = crossbeam_channel::unbounded();
            Box::new(move |batch| crossbeam_cycle(&channel, batch))
        }
        other => panic!("unknown function {other:?}"),
    };
    // As criterion's `iter_batched_ref` does: build every input first, then
    // time only the cycles.
    let mut batches: Vec<Vec<Message>> = (0..cycles).map(|_| prebuilt.clone()).collect();
    let (start, start_on_cpu) = (Instant::now(), thread_cpu_nanoseconds());
    for batch in &mut batches {
        cycle(batch);
    }
    let (elapsed, on_cpu) = (start.elapsed(), thread_cpu_nanoseconds() - start_on_cpu);
    let messages = (cycles * count).max(1) as f64;
    let wall = elapsed.as_secs_f64() * 1e9 / messages;
    let cpu = on_cpu as f64 / messages;
    eprintln!(
        "{name}/{count}: {cycles} cycles in {elapsed:?}: {wall:.1} ns wall, {cpu:.1} ns on-CPU per message"
    );
}

/// Time this thread has spent on a CPU, in nanoseconds. On a busy machine it
/// is steadier than wall time, which also counts time spent descheduled.
fn thread_cpu_nanoseconds() -> u64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid, writable timespec for the call's duration.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

criterion_group!(benches, claim);

// `criterion_main!` plus the profiling switch.
fn main() {
    if let Ok(spec) = std::env::var("COURIER_PROFILE") {
        profile(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
