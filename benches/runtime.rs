//! The async runtime end to end (issues 7 and 14): N messages through the
//! `courier_runtime` handle to hooks that answer at once, under each
//! durability policy, against the same N messages through a tokio unbounded
//! channel on the same runtime flavour (a current-thread runtime); and sends
//! per second to a real file from 1, 4 and 16 client threads per policy,
//! with the fsyncs each send cost under group commit. See `BENCHMARKS.md`
//! for what each timed region holds.
//!
//! As in the claim bench, every function gets a fresh `Vec` of N [`Message`]
//! handles built by criterion's setup (cheap `Arc` clones of one set) and
//! empties it inside the timed region; the agent, its driver task, the
//! channels and the runtime live across iterations, so the figures are a
//! steady state.

mod clock;
mod common;

use std::collections::VecDeque;
use std::fs::File;
use std::future::ready;
use std::hint::black_box;
use std::io::{self, BufWriter, Seek, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use courier_core::{Message, Output, PreStepDecision, Status, StepOutcome};
use courier_runtime::{Durability, Event, Handle, JsonlFile, Sink, pre_step_hook_fn, step_hook_fn};
use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// An in-memory log as an embedder keeps one (as `MemoryLog` does): each
/// durable event as its value, so the runtime encodes nothing for it. So
/// that no memory grows across iterations, it drops what it holds every
/// [`KEPT_MAX`] events (the drops are timed too: a kept log's events are
/// dropped some day).
struct InMemory {
    events: Vec<Output>,
}

/// Events an [`InMemory`] log holds before it drops them.
const KEPT_MAX: usize = 1 << 12;

impl InMemory {
    fn new() -> Self {
        Self {
            events: Vec::with_capacity(KEPT_MAX),
        }
    }
}

impl Sink for InMemory {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        black_box(line);
        Ok(())
    }

    fn write_event(&mut self, event: Event<'_>) -> io::Result<()> {
        if self.events.len() == KEPT_MAX {
            self.events.clear();
        }
        self.events.push(event.into_output());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A real file that never grows past one write-behind window: each flush
/// writes, `fdatasync`s, then empties it. Lines reach the file as
/// `JsonlFile`'s do (through an 8 KiB buffer) and every flush costs its
/// sync, but a long run fills no disk.
struct RewoundFile {
    writer: BufWriter<File>,
}

impl RewoundFile {
    fn new() -> Self {
        let file = tempfile::tempfile().expect("a temporary file");
        Self {
            writer: BufWriter::new(file),
        }
    }
}

impl Sink for RewoundFile {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.writer.write_all(line.as_bytes())?;
        self.writer.write_all(b"\n")
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()?;
        let file = self.writer.get_mut();
        file.sync_data()?;
        file.set_len(0)?;
        file.rewind()?;
        Ok(())
    }
}

/// Batches of new messages the setup keeps alive (see [`Mode::encodes`]).
const GRAVEYARD: usize = 256;

/// The write-behind window the benches use.
const WINDOW: Duration = Duration::from_millis(1);

/// The end-to-end modes: where the log goes and how it is written.
#[derive(Clone, Copy)]
enum Mode {
    /// [`InMemory`], each call writing its own events (`Durability::Sync`).
    MemorySync,
    /// [`InMemory`], written behind by the writer thread.
    MemoryBehind,
    /// [`RewoundFile`], written behind (write and fdatasync each window).
    FileBehind,
}

impl Mode {
    /// Whether the log encodes lines. Such a mode gets new messages every
    /// iteration, not clones of one set: a message's JSON is kept once
    /// encoded (`Message::json`), so clones would be encoded only once in
    /// the whole run, which no real session does. The setup keeps a clone
    /// of the latest [`GRAVEYARD`] batches, so a batch's last drop (frees
    /// the other functions never pay) happens there, untimed.
    fn encodes(self) -> bool {
        match self {
            Mode::MemorySync | Mode::MemoryBehind => false,
            Mode::FileBehind => true,
        }
    }

    const ALL: [(Mode, &'static str); 3] = [
        (Mode::MemorySync, "handle-memory-sync"),
        (Mode::MemoryBehind, "handle-memory-behind"),
        (Mode::FileBehind, "handle-file-behind"),
    ];
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
    fn new(mode: Mode) -> Self {
        let entered = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&entered);
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let step_hook = step_hook_fn(move |call| {
            counted.fetch_add(call.entered.len(), Ordering::Relaxed);
            ready(StepOutcome::Completed)
        });
        let behind = Durability::WriteBehind { max_delay: WINDOW };
        let (agent, driver) = match mode {
            Mode::MemorySync => Handle::with_durability(
                "bench",
                Durability::Sync,
                pre_step_hook,
                step_hook,
                InMemory::new(),
            ),
            Mode::MemoryBehind => {
                Handle::with_durability("bench", behind, pre_step_hook, step_hook, InMemory::new())
            }
            Mode::FileBehind => {
                let file = RewoundFile::new();
                Handle::with_durability("bench", behind, pre_step_hook, step_hook, file)
            }
        };
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
    #[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
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
fn check_handle_cycle(count: usize, mode: Mode) {
    let mut handle = HandleBench::new(mode);
    handle.cycle(&mut common::messages(count));
    assert_eq!(handle.entered.load(Ordering::Relaxed), count);
    assert_eq!(
        handle.agent.status().expect("served"),
        Status::Idle,
        "the cycle ends idle"
    );
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

    #[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
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
    // Short windows: the five functions at three sizes finish in about a minute.
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for count in common::BATCH_SIZES {
        // Fresh containers per batch size, so one size's capacity never
        // carries over to the next.
        let mut task = TokioTask::new(count);
        let mut same_task = common::TokioChannel::new();
        let prebuilt = common::messages(count);
        group.throughput(Throughput::Elements(count as u64));
        let mut bench = |name: &str, fresh: bool, cycle: &mut Cycle<'_>| {
            let mut graveyard = VecDeque::new();
            let mut setup = || {
                if !fresh {
                    return prebuilt.clone();
                }
                let batch = common::messages(count);
                graveyard.push_back(batch.clone());
                if graveyard.len() > GRAVEYARD {
                    graveyard.pop_front();
                }
                batch
            };
            group.bench_function(BenchmarkId::new(name, count), |bencher| {
                bencher.iter_batched_ref(&mut setup, &mut *cycle, BatchSize::SmallInput)
            });
        };
        for (mode, name) in Mode::ALL {
            check_handle_cycle(count, mode);
            let mut handle = HandleBench::new(mode);
            bench(name, mode.encodes(), &mut |batch| handle.cycle(batch));
        }
        bench("tokio-task", false, &mut |batch| task.cycle(batch));
        bench("tokio-same-task", false, &mut |batch| {
            same_task.cycle(batch)
        });
    }
    group.finish();
}

/// Sends per durability iteration, shared out among the client threads.
const SENDS: usize = 192;

/// A [`JsonlFile`] that counts its flushes (each one an `fdatasync`).
struct Counted {
    file: JsonlFile,
    flushes: Arc<AtomicUsize>,
}

impl Sink for Counted {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.file.write_line(line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.file.flush()
    }
}

/// A fresh agent logging to a fresh file under `durability`, and its flush
/// count after the header's. Its driver task is kept but never run (the
/// sends are injects: nothing starts a turn); a dropped one would make
/// every send fail with `DriverGone`.
struct SendBench {
    agent: Handle,
    flushes: Arc<AtomicUsize>,
    _driver: Box<dyn std::any::Any>,
    _folder: tempfile::TempDir,
}

impl SendBench {
    fn new(durability: Durability) -> Self {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let file = JsonlFile::create(folder.path().join("log.jsonl")).expect("a log file");
        let flushes = Arc::new(AtomicUsize::new(0));
        let sink = Counted {
            file,
            flushes: Arc::clone(&flushes),
        };
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
        let (agent, driver) =
            Handle::with_durability("bench", durability, pre_step_hook, step_hook, sink);
        flushes.store(0, Ordering::Relaxed);
        Self {
            agent,
            flushes,
            _driver: Box::new(driver),
            _folder: folder,
        }
    }

    /// [`SENDS`] injects from `senders` threads at once, each its share.
    fn sends(&self, senders: usize) {
        thread::scope(|scope| {
            for sender in 0..senders {
                let agent = &self.agent;
                scope.spawn(move || {
                    for index in (sender..SENDS).step_by(senders) {
                        agent
                            .inject(format!("s{index:04}").as_str())
                            .expect("ids are fresh");
                    }
                });
            }
        });
    }
}

/// Sends per second to a real file, per policy and number of client
/// threads; first prints the fsyncs per send each count of senders costs
/// under `Sync` (group commit), from one untimed round.
fn durability<M: Measurement>(criterion: &mut Criterion<M>) {
    let mut group = clock::group(criterion, "durability");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.sample_size(10);
    group.throughput(Throughput::Elements(SENDS as u64));
    let policies = [
        ("sync", Durability::Sync),
        (
            "write-behind",
            Durability::WriteBehind { max_delay: WINDOW },
        ),
    ];
    for senders in [1, 4, 16] {
        let counted = SendBench::new(Durability::Sync);
        counted.sends(senders);
        let fsyncs = counted.flushes.load(Ordering::Relaxed);
        assert_eq!(counted.agent.inbox().len(), SENDS, "every send is pending");
        eprintln!(
            "durability/sync/{senders}: {SENDS} sends, {fsyncs} fsyncs, {:.3} fsyncs per send",
            fsyncs as f64 / SENDS as f64
        );
        for (name, policy) in policies {
            group.bench_function(BenchmarkId::new(name, senders), |bencher| {
                bencher.iter_batched(
                    || SendBench::new(policy),
                    |bench| {
                        bench.sends(senders);
                        bench
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

fn both<M: Measurement>(criterion: &mut Criterion<M>) {
    runtime(criterion);
    durability(criterion);
}

fn main() {
    clock::main(both, both);
}
