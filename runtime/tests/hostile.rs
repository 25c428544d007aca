//! A hostile embedder's review of the failure paths `wedge.rs` pins: a
//! driver task that goes in the middle of a disposal, an observer that
//! panics at a transition no call made, a log failure on a write that gives
//! the driver task no work, a sink that calls its own agent, user values
//! whose `Drop` panics (a panic payload's too), and a bounded subscription
//! asked for more than memory holds. Each ends in an answer, never a hang,
//! an abort or a panic blamed on the wrong call. Timeouts here only detect
//! hangs.
#![cfg(not(loom))]

mod common;

use common::{HANG, block_on, bounded, ends, passing};
use std::future::{Future, pending, ready};
use std::io;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::Poll;
use std::time::Duration;

use courier_core::{
    CancelCause, Input, Output, PreStepDecision, Refusal, Status, StepOutcome, Target, Wakeup,
};
use courier_runtime::{
    Boundary, DriverTask, Durability, Error, Handle, JsonlFile, MemoryLog, PreStepHook, Sink,
    StepCall, StepHook, Transition, WeakHandle, pre_step_hook_fn, step_hook_fn,
};

fn completing() -> impl StepHook {
    step_hook_fn(|_| ready(StepOutcome::Completed))
}

/// Yields until the first turn's step hook is awaited.
async fn until_in_a_step(agent: &Handle) {
    while !matches!(agent.status(), Ok(Status::Running { step: 1, .. })) {
        tokio::task::yield_now().await;
    }
}

// ---- 1. The driver task goes after a disposal started ----

#[test]
fn driver_gone_mid_disposal_ends_dispose_and_when_idle_and_frees_the_log() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("log.jsonl");
    let sink = JsonlFile::create(&path).expect("a fresh log");
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("hostile", passing(), step_hook, sink);
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        until_in_a_step(&agent).await;
        let mut disposing = pin!(agent.dispose());
        // One poll applies the disposal: the turn is aborted, its
        // completion not fed yet.
        let first = std::future::poll_fn(|context| Poll::Ready(disposing.as_mut().poll(context)));
        assert!(first.await.is_pending(), "the aborted turn has not ended");
        task.abort();
        assert!(task.await.is_err(), "the task was cancelled");
        let disposed = ends("dispose", disposing).await;
        assert!(matches!(disposed, Err(Error::DriverGone)), "{disposed:?}");
        let idle = ends("when_idle", agent.when_idle()).await;
        assert!(matches!(idle, Err(Error::DriverGone)), "{idle:?}");
    });
    // The failed dispose let the file go, as its docs say.
    let resumed = Handle::resume(&path, passing(), completing());
    assert!(resumed.is_ok(), "the log is free to resume");
}

#[test]
fn driver_gone_after_the_last_handle_disposed_wakes_its_waiter() {
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("hostile", passing(), step_hook, MemoryLog::new());
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        until_in_a_step(&agent).await;
        let waiting = agent.when_idle();
        // The last handle disposes, aborting the turn.
        drop(agent);
        task.abort();
        assert!(task.await.is_err(), "the task was cancelled");
        let idle = ends("the waiter", waiting).await;
        assert!(matches!(idle, Err(Error::DriverGone)), "{idle:?}");
    });
}

// ---- 2. An observer's panic is reported by the call that saw it ----

/// An agent whose observer panics at the first transition `breaks` picks.
fn observed_agent(
    step_hook: impl StepHook,
    breaks: fn(&Input) -> bool,
) -> (Handle, DriverTask<impl PreStepHook, impl StepHook>) {
    let observer = move |transition: Transition| {
        assert!(!breaks(&transition.input), "the checker broke");
    };
    Handle::with_observer(
        "hostile",
        Durability::Sync,
        passing(),
        step_hook,
        MemoryLog::new(),
        observer,
    )
}

fn observer_panicked(result: &Result<(), Error>) -> bool {
    matches!(result, Err(Error::ObserverPanicked(message)) if message == "the checker broke")
}

#[test]
fn observer_panic_at_a_completion_goes_to_the_waiter_not_the_next_call() {
    let (agent, driver) = observed_agent(completing(), |input| matches!(input, Input::Step(_)));
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        let idle = ends("the turn", agent.when_idle()).await;
        assert!(observer_panicked(&idle), "{idle:?}");
        agent
            .followup("b")
            .expect("a later call is not blamed for the completion's panic");
        ends("the next turn", agent.when_idle())
            .await
            .expect("a waiter after the panic is not blamed either");
        assert_eq!(agent.observer_panic().as_deref(), Some("the checker broke"));
    });
}

#[test]
fn observer_panic_at_a_completion_nobody_waited_for_is_kept_not_blamed() {
    let (agent, driver) = observed_agent(completing(), |input| matches!(input, Input::Step(_)));
    let mut outputs = agent.subscribe();
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        while !matches!(
            ends("the turn", outputs.recv()).await,
            Some(Output::TurnEnd { .. })
        ) {}
        agent.followup("b").expect("not blamed");
        ends("the next turn", agent.when_idle())
            .await
            .expect("not blamed");
    });
    assert_eq!(agent.observer_panic().as_deref(), Some("the checker broke"));
}

#[test]
fn observer_panic_at_a_when_idle_is_that_waiters() {
    let (agent, driver) = observed_agent(completing(), |input| *input == Input::WhenIdle);
    block_on(async {
        tokio::spawn(driver.run());
        let idle = ends("when_idle", agent.when_idle()).await;
        assert!(observer_panicked(&idle), "{idle:?}");
        agent.followup("a").expect("not blamed");
    });
}

#[test]
fn observer_panic_at_a_dispose_is_that_disposes_after_it_ends() {
    let log = MemoryLog::new();
    let observer = |transition: Transition| {
        assert!(transition.input != Input::Dispose, "the checker broke");
    };
    let (agent, driver) = Handle::with_observer(
        "hostile",
        Durability::Sync,
        passing(),
        completing(),
        log.clone(),
        observer,
    );
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        let disposed = ends("dispose", agent.dispose()).await;
        assert!(observer_panicked(&disposed), "{disposed:?}");
        ends("the driver task", task).await.expect("it ended");
        assert!(matches!(
            agent.followup("b"),
            Err(Error::Refused(Refusal::Disposed(_)))
        ));
    });
    let last = log.lines().pop().expect("a log");
    assert!(
        last.contains("turn/end"),
        "the disposal was written: {last}"
    );
}

#[test]
fn observer_panic_at_the_last_handles_disposal_goes_to_the_waiter() {
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = observed_agent(step_hook, |input| *input == Input::Dispose);
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        until_in_a_step(&agent).await;
        let waiting = agent.when_idle();
        drop(agent);
        let idle = ends("the waiter", waiting).await;
        assert!(observer_panicked(&idle), "{idle:?}");
        ends("the driver task", task).await.expect("it ended");
    });
}

// ---- 3. A log failure stops the driver task whatever write met it ----

/// A sink that fails every write once `failing` is set.
#[derive(Clone, Default)]
struct Breakable {
    failing: Arc<AtomicBool>,
}

impl Sink for Breakable {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(io::Error::other("the disk is gone"));
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// After the log failed: the driver task ends, so does the stream, and
/// `when_idle` and `dispose` end with the log's error.
async fn stopped_by_the_log(
    agent: &Handle,
    task: tokio::task::JoinHandle<()>,
    mut outputs: courier_runtime::Notifications,
) {
    ends("the driver task", task).await.expect("no panic");
    while ends("the stream", outputs.recv()).await.is_some() {}
    let idle = ends("when_idle", agent.when_idle()).await;
    assert!(matches!(idle, Err(Error::Log(_))), "{idle:?}");
    let disposed = ends("dispose", agent.dispose()).await;
    assert!(matches!(disposed, Err(Error::Log(_))), "{disposed:?}");
}

#[test]
fn log_failure_on_an_edit_while_idle_stops_the_driver_task() {
    let sink = Breakable::default();
    let failing = Arc::clone(&sink.failing);
    let (agent, driver) = Handle::new("hostile", passing(), completing(), sink);
    block_on(async {
        let task = tokio::spawn(driver.run());
        let outputs = agent.subscribe();
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
        failing.store(true, Ordering::SeqCst);
        let appended = agent.append(Target::NextTurn, "b");
        assert!(matches!(appended, Err(Error::Log(_))), "{appended:?}");
        stopped_by_the_log(&agent, task, outputs).await;
    });
}

#[test]
fn log_failure_on_the_write_behind_thread_stops_the_driver_task() {
    let sink = Breakable::default();
    let failing = Arc::clone(&sink.failing);
    let durability = Durability::WriteBehind {
        max_delay: Duration::ZERO,
    };
    let (agent, driver) =
        Handle::with_durability("hostile", durability, passing(), completing(), sink);
    block_on(async {
        let task = tokio::spawn(driver.run());
        let outputs = agent.subscribe();
        failing.store(true, Ordering::SeqCst);
        agent
            .append(Target::NextTurn, "b")
            .expect("written behind: the failure comes later");
        stopped_by_the_log(&agent, task, outputs).await;
    });
}

#[test]
fn log_failure_mid_step_drops_the_hook_and_stops_the_driver_task() {
    let sink = Breakable::default();
    let failing = Arc::clone(&sink.failing);
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("hostile", passing(), step_hook, sink);
    block_on(async {
        let task = tokio::spawn(driver.run());
        let outputs = agent.subscribe();
        agent.followup("a").expect("accepted");
        until_in_a_step(&agent).await;
        failing.store(true, Ordering::SeqCst);
        let injected = agent.append(Target::NextTurn, "b");
        assert!(matches!(injected, Err(Error::Log(_))), "{injected:?}");
        stopped_by_the_log(&agent, task, outputs).await;
    });
}

/// A sink that holds the flush of the batch holding `turn/end` until the
/// test lets it go, then holds the flush of the batch holding message `b`
/// and fails it (a disk that fills there), saying when each is held.
struct HeldThenFailing {
    batch: Vec<String>,
    held: mpsc::Sender<&'static str>,
    turn_end: Option<mpsc::Receiver<()>>,
    failing: Option<mpsc::Receiver<()>>,
}

impl Sink for HeldThenFailing {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.batch.push(line.to_owned());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let holds = |needle: &str| batch.iter().any(|line| line.contains(needle));
        if holds("\"turn/end\"")
            && let Some(gate) = self.turn_end.take()
        {
            self.held.send("turn/end").expect("the test waits");
            gate.recv().expect("the test lets it go");
        }
        if holds("\"id\":\"b\"")
            && let Some(gate) = self.failing.take()
        {
            self.held.send("b").expect("the test waits");
            gate.recv().expect("the test lets it go");
            return Err(io::Error::other("the disk is full"));
        }
        Ok(())
    }
}

/// Under `Sync`, no hook is handed a message whose line is not yet kept: a
/// followup that lands while the driver task syncs its own completion
/// starts the next turn with nobody to wake, and the driver task, back from
/// that sync, found the job and ran the pre-step hook on `b` while `b`'s
/// line was still being written, and that write failed. Now the driver task
/// syncs a job's lines before its hook runs, meets the failure, and stops.
#[test]
fn a_hook_never_sees_a_send_whose_line_is_not_yet_kept_under_sync() {
    let (held, holding) = mpsc::channel();
    let (end_turn, turn_end) = mpsc::channel();
    let (fail, failing) = mpsc::channel();
    let sink = HeldThenFailing {
        batch: Vec::new(),
        held,
        turn_end: Some(turn_end),
        failing: Some(failing),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_hook = Arc::clone(&seen);
    let pre_step = pre_step_hook_fn(move |boundary: Boundary| {
        let ids = boundary.batch.iter().map(|m| m.id().as_str().to_owned());
        seen_by_hook.lock().expect("not poisoned").extend(ids);
        ready(PreStepDecision::Pass)
    });
    let (agent, driver) = Handle::new("hostile", pre_step, completing(), sink);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let task = runtime.spawn(driver.run());
    agent.followup("a").expect("accepted");
    assert_eq!(holding.recv_timeout(HANG), Ok("turn/end"));
    // The driver task is inside its completion's sync: `b` starts turn 2.
    let sender = agent.clone();
    let followup = std::thread::spawn(move || sender.followup("b"));
    let started = std::time::Instant::now();
    while !matches!(agent.status(), Ok(Status::Running { turn: 2, .. })) {
        assert!(started.elapsed() < HANG, "turn 2 never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    end_turn.send(()).expect("the sink waits");
    assert_eq!(holding.recv_timeout(HANG), Ok("b"));
    // `b`'s line is being written: before, the hook ran on it now.
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    while std::time::Instant::now() < deadline && seen.lock().expect("not poisoned").len() < 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    fail.send(()).expect("the sink waits");
    let sent = followup.join().expect("no panic");
    assert!(matches!(sent, Err(Error::Log(_))), "{sent:?}");
    runtime.block_on(async { ends("the driver task", task).await.expect("no panic") });
    assert_eq!(*seen.lock().expect("not poisoned"), ["a"]);
}

// ---- 4. A sink that calls its own agent ----

/// A sink that, once it knows its agent, injects into it from `write_line`
/// and keeps what the call answered.
#[derive(Clone, Default)]
struct CallingBack {
    agent: Arc<Mutex<Option<WeakHandle>>>,
    answers: Arc<Mutex<Vec<String>>>,
}

impl Sink for CallingBack {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        let agent = self.agent.lock().expect("not poisoned").take();
        if let Some(agent) = agent.and_then(|weak| weak.upgrade()) {
            let answer = match agent.inject("from-the-sink") {
                Ok(()) => "ok".to_owned(),
                Err(error) => format!("{error:?}"),
            };
            self.answers.lock().expect("not poisoned").push(answer);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn a_sink_calling_its_own_agent_is_refused(durability: Durability) {
    let sink = CallingBack::default();
    let (agent, driver) =
        Handle::with_durability("hostile", durability, passing(), completing(), sink.clone());
    *sink.agent.lock().expect("not poisoned") = Some(agent.downgrade());
    let (done, outcome) = mpsc::channel();
    let caller = agent.clone();
    // On a thread of its own: a deadlock there is seen as a timeout here.
    std::thread::spawn(move || {
        let appended = caller.append(Target::NextTurn, "a");
        let flushed = block_on(caller.dispose());
        let sent = done.send((appended.is_ok(), flushed.is_ok()));
        sent.expect("the test waits for it");
    });
    let Ok(outcome) = outcome.recv_timeout(HANG) else {
        // Their drops would wait for the deadlocked writer too.
        std::mem::forget((agent, driver));
        panic!("the call deadlocked");
    };
    drop(driver);
    assert_eq!(outcome, (true, true));
    assert_eq!(
        *sink.answers.lock().expect("not poisoned"),
        ["InsideSink".to_owned()]
    );
    assert!(
        !agent.inbox().contains(&"from-the-sink".into()),
        "the sink's call was not made"
    );
}

#[test]
fn sink_calling_its_own_agent_under_sync_is_refused_not_deadlocked() {
    a_sink_calling_its_own_agent_is_refused(Durability::Sync);
}

#[test]
fn sink_calling_its_own_agent_under_write_behind_is_refused_too() {
    a_sink_calling_its_own_agent_is_refused(Durability::WriteBehind {
        max_delay: Duration::ZERO,
    });
}

/// The last handle's drop disposes the agent from inside its own sink:
/// neither a deadlock on the writer nor a panic, and the driver task ends.
fn the_last_handle_dropped_inside_the_sink_ends_the_agent(durability: Durability) {
    let sink = DroppingAt::new("\"turn/end\"");
    let (agent, driver) =
        Handle::with_durability("hostile", durability, passing(), completing(), sink.given());
    let weak = agent.downgrade();
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        block_on(async {
            let task = tokio::spawn(driver.run());
            agent.steer("a").expect("accepted");
            *sink.agent.lock().expect("not poisoned") = Some(agent);
            let ended = bounded(task).await.map(|joined| joined.is_ok());
            let sent = done.send(ended);
            sent.expect("the test waits for it");
        });
    });
    let ended = outcome.recv_timeout(HANG * 2).expect("the thread answers");
    assert_eq!(ended, Ok(true), "the driver task ended, not panicked");
    assert!(weak.upgrade().is_none(), "the agent is disposed for good");
}

#[test]
fn last_handle_dropped_inside_the_sink_under_sync_disposes_the_agent() {
    the_last_handle_dropped_inside_the_sink_ends_the_agent(Durability::Sync);
}

#[test]
fn last_handle_dropped_inside_the_sink_under_write_behind_disposes_the_agent() {
    the_last_handle_dropped_inside_the_sink_ends_the_agent(Durability::WriteBehind {
        max_delay: Duration::ZERO,
    });
}

/// A sink that keeps its lines and holds its agent's last handle, dropped
/// from inside `write_line` at the first line holding `at`.
#[derive(Clone)]
struct DroppingAt {
    at: &'static str,
    agent: Arc<Mutex<Option<Handle>>>,
    lines: Arc<Mutex<Vec<String>>>,
    /// Set when the copy handed to the agent (`given`) is dropped.
    released: Arc<AtomicBool>,
    given: bool,
}

impl DroppingAt {
    fn new(at: &'static str) -> Self {
        Self {
            at,
            agent: Arc::default(),
            lines: Arc::default(),
            released: Arc::default(),
            given: false,
        }
    }

    /// The copy to hand to the agent.
    fn given(&self) -> Self {
        let mut given = self.clone();
        given.given = true;
        given
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("not poisoned").clone()
    }
}

impl Drop for DroppingAt {
    fn drop(&mut self) {
        if self.given {
            self.released.store(true, Ordering::SeqCst);
        }
    }
}

impl Sink for DroppingAt {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.lines
            .lock()
            .expect("not poisoned")
            .push(line.to_owned());
        if line.contains(self.at) {
            let last = self.agent.lock().expect("not poisoned").take();
            drop(last);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The last handle dropped inside the sink mid-turn, with a message
/// pending: its disposal writes lines (the pending message discarded, the
/// turn aborted), which the writer that holds the token on this very
/// thread must write itself. Before, the disposal waited for that token:
/// the driver task's thread hung.
fn the_last_handle_dropped_inside_the_sink_writes_its_disposal(durability: Durability) {
    let sink = DroppingAt::new("\"step/end\"");
    let tool_calls = step_hook_fn(|_| ready(StepOutcome::ToolCalls));
    let (agent, driver) =
        Handle::with_durability("hostile", durability, passing(), tool_calls, sink.given());
    let (done, outcome) = mpsc::channel();
    let holder = sink.clone();
    std::thread::spawn(move || {
        block_on(async {
            agent
                .send("q", Target::NextTurn, Wakeup::NoWake)
                .expect("accepted");
            agent.followup("a").expect("accepted");
            *holder.agent.lock().expect("not poisoned") = Some(agent);
            let ended = bounded(tokio::spawn(driver.run())).await;
            let sent = done.send(ended.map(|joined| joined.is_ok()));
            sent.expect("the test waits for it");
        });
    });
    let ended = outcome
        .recv_timeout(HANG * 2)
        .expect("the driver task's thread answers");
    assert_eq!(ended, Ok(true), "the driver task ended, not panicked");
    let lines = sink.lines();
    let disposed = lines.iter().filter(|line| line.contains("\"disposed\""));
    assert!(disposed.count() > 0, "the disposal was written: {lines:#?}");
    let starts = lines.iter().filter(|line| line.contains("\"turn/start\""));
    let ends = lines.iter().filter(|line| line.contains("\"turn/end\""));
    assert_eq!(
        starts.count(),
        ends.count(),
        "every turn closed: {lines:#?}"
    );
}

#[test]
fn last_handle_dropped_inside_the_sink_mid_turn_under_sync_writes_the_disposal() {
    the_last_handle_dropped_inside_the_sink_writes_its_disposal(Durability::Sync);
}

#[test]
fn last_handle_dropped_inside_the_sink_mid_turn_under_write_behind_writes_the_disposal() {
    the_last_handle_dropped_inside_the_sink_writes_its_disposal(Durability::WriteBehind {
        max_delay: Duration::ZERO,
    });
}

/// Under `WriteBehind`, the driver task dropped with its tokio runtime,
/// then the log written (the driver's exit syncs it) reaches a line at
/// which the sink drops the last handle: the agent is unreachable, so its
/// sink is let go, by the writer that holds the token on this thread once
/// it puts it back. Before, the release waited for that token:
/// `drop(runtime)` never returned. (Under `Sync` the send writes its line
/// itself, before the sink holds the handle, so nothing is left to write.)
#[test]
fn last_handle_dropped_inside_the_sink_after_the_driver_lets_the_log_go() {
    let sink = DroppingAt::new("spliced");
    let (done, outcome) = mpsc::channel();
    let holder = sink.clone();
    let durability = Durability::WriteBehind {
        max_delay: Duration::from_secs(3600),
    };
    std::thread::spawn(move || {
        let step = step_hook_fn(|_| pending::<StepOutcome>());
        let (agent, driver) =
            Handle::with_durability("hostile", durability, passing(), step, holder.given());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a tokio runtime");
        runtime.spawn(driver.run());
        runtime.block_on(tokio::task::yield_now());
        let sent = agent.followup("a");
        // A hook's weak handle keeps the agent's memory, not its log.
        let weak = agent.downgrade();
        *holder.agent.lock().expect("not poisoned") = Some(agent);
        drop(runtime);
        done.send((sent.is_ok(), weak))
            .expect("the test waits for it");
    });
    let (sent, weak) = outcome
        .recv_timeout(HANG)
        .expect("dropping the runtime returned");
    assert!(sent, "the followup was accepted");
    assert!(weak.upgrade().is_none(), "the agent is gone for good");
    let lines = sink.lines();
    assert!(
        lines.iter().any(|line| line.contains("spliced")),
        "{lines:#?}"
    );
    let held = sink.agent.lock().expect("not poisoned").is_some();
    assert!(!held, "the sink dropped the last handle");
    let released = sink.released.load(Ordering::SeqCst);
    assert!(released, "the agent let its sink go");
}

// ---- 5. Drops and payloads that panic ----

/// Panics when dropped, once.
struct Bomb(AtomicBool);

impl Bomb {
    fn armed() -> Self {
        Self(AtomicBool::new(true))
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0.swap(false, Ordering::SeqCst) {
            panic!("a user's Drop exploded");
        }
    }
}

/// A sink whose `Drop` panics.
struct BombSink {
    _bomb: Bomb,
}

impl Sink for BombSink {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Hooks whose `Drop` panics.
struct BombHooks {
    _bomb: Bomb,
}

impl PreStepHook for BombHooks {
    fn decide(&mut self, _boundary: Boundary) -> impl Future<Output = PreStepDecision> + Send {
        ready(PreStepDecision::Pass)
    }
}

impl StepHook for BombHooks {
    fn step(&mut self, _call: StepCall) -> impl Future<Output = StepOutcome> + Send {
        ready(StepOutcome::Completed)
    }
}

#[test]
fn drop_panics_of_a_sink_are_caught_when_the_agent_is_simply_dropped() {
    let (agent, driver) = Handle::new(
        "hostile",
        passing(),
        completing(),
        BombSink {
            _bomb: Bomb::armed(),
        },
    );
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
        // The last handle disposes; the driver task ends and drops the
        // agent's last reference, and with it the sink.
        drop(agent);
        ends("the driver task", task)
            .await
            .expect("the sink's Drop did not panic through the driver task");
    });
}

#[test]
fn drop_panics_of_hooks_sink_and_observer_are_caught_even_while_unwinding() {
    let observer = {
        let bomb = Bomb::armed();
        move |_: Transition| {
            let _ = &bomb;
        }
    };
    let (agent, driver) = Handle::with_observer(
        "hostile",
        Durability::Sync,
        BombHooks {
            _bomb: Bomb::armed(),
        },
        BombHooks {
            _bomb: Bomb::armed(),
        },
        BombSink {
            _bomb: Bomb::armed(),
        },
        observer,
    );
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(driver)));
    assert!(dropped.is_ok(), "the hooks' Drop did not panic through");
    // The last handle, and with it the agent, goes while another panic
    // unwinds: a panic escaping a Drop there would abort the process.
    let unwound = catch_unwind(AssertUnwindSafe(move || {
        let _agent = agent;
        panic!("the embedder's own panic");
    }));
    let payload = unwound.expect_err("the embedder's panic");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the embedder's own panic")
    );
}

#[test]
fn payload_whose_drop_panics_is_a_hook_panic_like_any_other() {
    let step_hook = step_hook_fn(|call: StepCall| {
        let first = call.turn == 1;
        async move {
            if first {
                panic_any(Bomb::armed());
            }
            StepOutcome::Completed
        }
    });
    let (agent, driver) = Handle::new("hostile", passing(), step_hook, MemoryLog::new());
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle())
            .await
            .expect("the driver task survived the payload");
        agent.followup("b").expect("served");
        ends("the next turn", agent.when_idle())
            .await
            .expect("served");
        assert_eq!(agent.hook_panics().len(), 1);
        agent.dispose().await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
}

/// A sink that panics with a payload whose `Drop` panics.
struct PayloadBombSink;

impl Sink for PayloadBombSink {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        if line.contains("spliced") {
            panic_any(Bomb::armed());
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn payload_whose_drop_panics_from_a_sink_is_the_logs_failure() {
    let (agent, driver) = Handle::new("hostile", passing(), completing(), PayloadBombSink);
    block_on(async {
        let task = tokio::spawn(driver.run());
        let sent = agent.followup("a");
        assert!(matches!(sent, Err(Error::Log(_))), "{sent:?}");
        ends("the driver task", task).await.expect("no panic");
    });
}

// ---- 6. A bounded subscription asked for more than memory holds ----

#[test]
fn bounded_subscription_of_a_huge_capacity_is_clamped() {
    let (agent, _driver) = Handle::new("hostile", passing(), completing(), MemoryLog::new());
    for capacity in [usize::MAX, 1 << 40, Handle::BOUNDED_CAPACITY_MAX + 1] {
        let capacity = NonZeroUsize::new(capacity).expect("non-zero");
        let mut outputs = agent.subscribe_bounded(capacity);
        agent
            .append(Target::NextTurn, format!("m{capacity}").as_str())
            .expect("accepted");
        assert!(matches!(outputs.try_recv(), Some(Ok(_))));
    }
}

// ---- A panicking observer that owns a handle ----

/// An observer that panics is let go after the agent's lock is released:
/// one that owns a handle drops it then, and that handle's `Drop` takes the
/// lock. Before, it was dropped under the lock, and the call that fed the
/// panicking transition never returned (the thread waited on its own lock).
#[test]
fn a_panicking_observer_that_owns_a_handle_is_let_go_outside_the_lock() {
    let slot: Arc<Mutex<Option<Handle>>> = Arc::default();
    let owned = Arc::clone(&slot);
    let mut seen = 0;
    let observer = move |_: Transition| {
        let _keeps = &owned;
        seen += 1;
        if seen == 2 {
            panic!("observer boom");
        }
    };
    let (agent, driver) = Handle::with_observer(
        "observer-owns-a-handle",
        Durability::Sync,
        passing(),
        completing(),
        MemoryLog::new(),
        observer,
    );
    *slot.lock().expect("the slot") = Some(agent.clone());
    drop(slot);
    let (sent, answers) = mpsc::channel();
    std::thread::spawn(move || {
        let first = agent.inject("a");
        let second = agent.inject("b");
        let third = agent.inject("c");
        sent.send((first, second, third)).expect("the test waits");
        drop(driver);
    });
    let (first, second, third) = answers.recv_timeout(HANG).expect("every call returns");
    assert!(first.is_ok(), "{first:?}");
    assert!(
        matches!(&second, Err(Error::ObserverPanicked(message)) if message == "observer boom"),
        "{second:?}"
    );
    assert!(third.is_ok(), "the agent goes on serving: {third:?}");
}

// ---- Abandoned waits ----

/// Every waiter waits for the next quiescence, so waits started while one
/// is unresolved share the core's one waiter, and a wait dropped unresolved
/// (a `timeout`, a `select!` branch that lost) takes its waker back: 10,000
/// abandoned waits on a busy agent cost one `idle`, and the live waiter
/// still resolves. Before, each left the core an `idle` to emit and a waker
/// (27.7 M in 5 s took 1.37 GB; 20,001 `idle`s here).
#[test]
fn abandoned_when_idle_waits_are_not_kept() {
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("abandoned-waits", passing(), step_hook, MemoryLog::new());
    let mut outputs = agent.subscribe();
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        until_in_a_step(&agent).await;
        let live = agent.when_idle();
        for _ in 0..10_000 {
            let mut abandoned = pin!(agent.when_idle());
            let polled =
                std::future::poll_fn(|context| Poll::Ready(abandoned.as_mut().poll(context))).await;
            assert!(polled.is_pending(), "the agent is busy");
        }
        agent
            .cancel(CancelCause::User, true)
            .expect("the cancel is accepted");
        tokio::time::timeout(HANG, live)
            .await
            .expect("the live waiter resolves")
            .expect("without an error");
    });
    let idles = std::iter::from_fn(|| outputs.try_recv())
        .filter(|output| matches!(output, Output::Idle))
        .count();
    assert_eq!(idles, 1, "one quiescence, one `idle`");
}
