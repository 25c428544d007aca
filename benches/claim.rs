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

use std::collections::VecDeque;
use std::hint::black_box;

use courier_core::{
    Agent, Input, Message, MessageId, Output, PreStepDecision, Source, Status, StepOutcome,
};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Messages per claim: one alone, a burst of steering, and a flood.
const BATCH_SIZES: [usize; 3] = [1, 16, 256];

/// N distinct human text messages, as a client would build them.
fn messages(count: usize) -> Vec<Message> {
    (0..count)
        .map(|index| {
            let id = MessageId::new(format!("message-{index:04}"));
            Message::text(id, Source::user())
        })
        .collect()
}

/// One claim cycle of the core, from idle back to idle: `inject` all but the
/// last message (no-wake: the agent stays idle and they wait in `next-step`),
/// `steer` the last (it wakes: the driver starts and its first boundary claims
/// all N at once), `pre-step pass` (the step opens with N `user/message`s),
/// `step completed` (the turn ends with nothing pending and the agent
/// retires). Every output is drained after each input, as the calling
/// contract requires, and dropped.
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
    let mut batch = messages(count);
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
        .filter_map(|output| match output {
            Output::Spliced(splice) if splice.inserted.is_empty() => Some(splice.removed_count),
            _ => None,
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

fn claim(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("claim");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    for count in BATCH_SIZES {
        check_claim_cycle(count);
        let prebuilt = messages(count);
        let setup = || prebuilt.clone();
        group.throughput(Throughput::Elements(count as u64));

        let mut agent = Agent::new();
        group.bench_function(BenchmarkId::new("core", count), |bencher| {
            bencher.iter_batched_ref(
                setup,
                |batch| claim_cycle(&mut agent, batch),
                BatchSize::SmallInput,
            )
        });

        let mut queue = VecDeque::new();
        group.bench_function(BenchmarkId::new("vecdeque", count), |bencher| {
            bencher.iter_batched_ref(
                setup,
                |batch| {
                    queue.extend(batch.drain(..));
                    while let Some(message) = queue.pop_front() {
                        black_box(message);
                    }
                },
                BatchSize::SmallInput,
            )
        });

        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        group.bench_function(BenchmarkId::new("tokio-mpsc", count), |bencher| {
            bencher.iter_batched_ref(
                setup,
                |batch| {
                    runtime.block_on(async {
                        for message in batch.drain(..) {
                            sender.send(message).expect("the receiver is alive");
                        }
                        for _ in 0..count {
                            black_box(receiver.recv().await);
                        }
                    })
                },
                BatchSize::SmallInput,
            )
        });

        let (sender, receiver) = crossbeam_channel::unbounded();
        group.bench_function(BenchmarkId::new("crossbeam", count), |bencher| {
            bencher.iter_batched_ref(
                setup,
                |batch| {
                    for message in batch.drain(..) {
                        sender.send(message).expect("the receiver is alive");
                    }
                    for _ in 0..count {
                        black_box(receiver.try_recv().expect("sent above"));
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, claim);
criterion_main!(benches);
