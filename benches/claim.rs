//! Claim throughput (issue 7): N messages sent to the sans-IO core and claimed
//! through one boundary, against moving the same N messages through a
//! `VecDeque` (the floor), a tokio unbounded channel and a crossbeam unbounded
//! channel. See `BENCHMARKS.md` for what each timed region holds.
//!
//! Every function gets the same pre-built input: a fresh `Vec` of N
//! [`Message`] handles (cheap `Arc` clones of one set built once), made by
//! criterion's setup outside the timed region and emptied inside it. Each
//! function keeps its container (agent, queue, channel, runtime) across
//! iterations, so allocations that a steady state reuses are not counted.

mod common;

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;

use courier_core::{Agent, Input, Message, Output, PreStepDecision, Status, StepOutcome};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group};

/// One claim cycle of the core, from idle back to idle: `inject` all but the
/// last message (no-wake: the agent stays idle and they wait in `next-step`),
/// `steer` the last (it wakes: the driver starts and its first boundary claims
/// all N at once), `pre-step pass` (the step opens with N `user/message`s),
/// `step completed` (the turn ends with nothing pending and the agent
/// retires). Every output is drained after each input, as the calling
/// contract requires, and dropped.
#[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
fn claim_cycle(agent: &mut Agent, batch: &mut Vec<Message>) {
    let last = batch.pop().expect("batch sizes are positive");
    for message in batch.drain(..) {
        handle(agent, Input::inject(message));
    }
    handle(agent, Input::steer(last));
    handle(agent, Input::PreStep(PreStepDecision::Pass));
    handle(agent, Input::Step(StepOutcome::Completed));
}

fn handle(agent: &mut Agent, input: Input) {
    let accepted = agent.handle(input);
    assert!(accepted.is_ok(), "the claim cycle is never refused");
    while let Some(output) = agent.poll_output() {
        black_box(output);
    }
}

/// Runs one cycle outside the measurement and checks that it is the cycle
/// this bench claims to time: one claim splice of all N, N `claimed`s, N
/// `user/message`s, and the agent idle again.
fn check_claim_cycle(count: usize) {
    let mut agent = Agent::new();
    let mut batch = common::messages(count);
    let last = batch.pop().expect("batch sizes are positive");
    let mut outputs = Vec::new();
    let inputs = batch
        .into_iter()
        .map(Input::inject)
        .chain([Input::steer(last)])
        .chain([Input::PreStep(PreStepDecision::Pass)])
        .chain([Input::Step(StepOutcome::Completed)]);
    for input in inputs {
        agent
            .handle(input)
            .expect("the claim cycle is never refused");
        outputs.extend(std::iter::from_fn(|| agent.poll_output()));
    }
    let claims: Vec<usize> = outputs
        .iter()
        .filter_map(|output| {
            let Output::Spliced(splice) = output else {
                return None;
            };
            splice.inserted.is_empty().then_some(splice.removed_count)
        })
        .collect();
    assert_eq!(claims, [count], "one boundary claims the whole batch");
    let claimed = outputs
        .iter()
        .filter(|output| matches!(output, Output::Claimed { .. }))
        .count();
    let entered = outputs
        .iter()
        .filter(|output| matches!(output, Output::UserMessage(_)))
        .count();
    assert_eq!(claimed, count, "every message is claimed");
    assert_eq!(entered, count, "every message enters the step");
    assert_eq!(agent.status(), Status::Idle, "the cycle ends idle");
    assert!(agent.inbox().is_empty(), "the cycle leaves nothing pending");
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

fn claim(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("claim");
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
