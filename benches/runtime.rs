//! The async runtime end to end (issue 7): N messages through the
//! `courier_runtime` handle to hooks that answer at once, against the same N
//! messages through a tokio unbounded channel on the same runtime flavour (a
//! current-thread runtime). See `BENCHMARKS.md` for what each timed region
//! holds.
//!
//! As in the claim bench, every function gets a fresh `Vec` of N [`Message`]
//! handles built by criterion's setup (cheap `Arc` clones of one set) and
//! empties it inside the timed region; the agent, its driver task, the
//! channels and the runtime live across iterations, so the figures are a
//! steady state.

mod clock;
mod common;

use std::future::ready;
use std::hint::black_box;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use courier_core::{Message, PreStepDecision, Status, StepOutcome};
use courier_runtime::{Handle, Sink, pre_step_hook_fn, step_hook_fn};
use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// A log that keeps nothing: the runtime still serializes every durable
/// output to its JSONL line (that is part of its cost), but no memory grows
/// across iterations and no disk is touched.
struct Discard;

impl Sink for Discard {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        black_box(line);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One agent's handle and its driver task on a current-thread runtime, with
/// hooks that answer at once (`pass`, `completed`). `entered` counts the
/// messages the step hook was handed, so a cycle can be checked to deliver
/// them all.
struct HandleBench {
    runtime: Runtime,
    agent: Handle,
    entered: Arc<AtomicUsize>,
}

impl HandleBench {
    fn new() -> Self {
        let entered = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&entered);
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let step_hook = step_hook_fn(move |call| {
            counted.fetch_add(call.entered.len(), Ordering::Relaxed);
            ready(StepOutcome::Completed)
        });
        let (agent, driver) = Handle::new("bench", pre_step_hook, step_hook, Discard);
        let runtime = current_thread();
        runtime.spawn(driver.run());
        Self {
            runtime,
            agent,
            entered,
        }
    }

    /// One delivery cycle, from idle back to idle: `inject` all but the last
    /// message (no-wake), `steer` the last (it wakes the driver task, whose
    /// first boundary claims all N), then await `when_idle` while the driver
    /// runs the pre-step hook on the batch and the step hook on the N
    /// entered messages.
    fn cycle(&mut self, batch: &mut Vec<Message>) {
        let agent = &self.agent;
        let last = batch.pop().expect("batch sizes are positive");
        self.runtime.block_on(async {
            for message in batch.drain(..) {
                agent.inject(message).expect("ids are fresh");
            }
            agent.steer(last).expect("ids are fresh");
            agent.when_idle().await.expect("the driver task runs");
        });
    }
}

/// Runs one cycle outside the measurement and checks that it is the cycle
/// this bench claims to time: all N messages reach the step hook and the
/// agent ends idle with nothing pending.
fn check_handle_cycle(count: usize) {
    let mut handle = HandleBench::new();
    handle.cycle(&mut common::messages(count));
    assert_eq!(handle.entered.load(Ordering::Relaxed), count);
    assert_eq!(handle.agent.status(), Status::Idle, "the cycle ends idle");
    assert!(handle.agent.inbox().is_empty(), "nothing is left pending");
}

/// The baseline: a tokio unbounded channel into a consumer task (as the
/// driver is a task), which receives N messages and then acknowledges on a
/// second channel (as `when_idle` resolves); the producer awaits the ack.
struct TokioTask {
    runtime: Runtime,
    sender: UnboundedSender<Message>,
    acks: UnboundedReceiver<()>,
}

impl TokioTask {
    fn new(count: usize) -> Self {
        let runtime = current_thread();
        let (sender, mut receiver) = unbounded_channel::<Message>();
        let (ack, acks) = unbounded_channel();
        runtime.spawn(async move {
            loop {
                for _ in 0..count {
                    match receiver.recv().await {
                        Some(message) => drop(black_box(message)),
                        None => return,
                    }
                }
                if ack.send(()).is_err() {
                    return;
                }
            }
        });
        Self {
            runtime,
            sender,
            acks,
        }
    }

    fn cycle(&mut self, batch: &mut Vec<Message>) {
        let Self {
            runtime,
            sender,
            acks,
        } = self;
        runtime.block_on(async {
            for message in batch.drain(..) {
                sender.send(message).expect("the consumer is alive");
            }
            acks.recv().await.expect("the consumer acknowledges");
        });
    }
}

/// One function's work on one batch, which it empties.
type Cycle<'a> = dyn FnMut(&mut Vec<Message>) + 'a;

fn runtime<M: Measurement>(criterion: &mut Criterion<M>) {
    let mut group = clock::group(criterion, "runtime");
    // Short windows: the three functions at three sizes finish in about 40 s.
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for count in common::BATCH_SIZES {
        check_handle_cycle(count);
        // Fresh containers per batch size, so one size's capacity never
        // carries over to the next.
        let mut handle = HandleBench::new();
        let mut task = TokioTask::new(count);
        let mut same_task = common::TokioChannel::new();
        let prebuilt = common::messages(count);
        let setup = || prebuilt.clone();
        group.throughput(Throughput::Elements(count as u64));
        let mut bench = |name: &str, cycle: &mut Cycle<'_>| {
            group.bench_function(BenchmarkId::new(name, count), |bencher| {
                bencher.iter_batched_ref(setup, &mut *cycle, BatchSize::SmallInput)
            });
        };
        bench("handle", &mut |batch| handle.cycle(batch));
        bench("tokio-task", &mut |batch| task.cycle(batch));
        bench("tokio-same-task", &mut |batch| same_task.cycle(batch));
    }
    group.finish();
}

fn main() {
    clock::main(runtime, runtime);
}
