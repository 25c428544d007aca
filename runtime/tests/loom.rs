//! Loom models of the runtime's sync layer: the core behind its mutex, the
//! driver's wake slot and the `when_idle` tickets, with the real driver future
//! under `loom::future::block_on` (no tokio). Each model has three loom threads
//! (the test, one client, the driver) and a handful of inputs, and asserts
//! where every message went.
//!
//! `RUSTFLAGS='--cfg loom' cargo test -p courier-runtime --release --test loom`
//! runs it (the
//! preemption bound is set here, not by `LOOM_MAX_PREEMPTIONS`); add
//! `--features mutants` for the `racy` test, and `-- --nocapture` to see how
//! many executions each model explored.
#![cfg(loom)]

#[cfg(not(debug_assertions))]
compile_error!(
    "the loom suite needs debug assertions; the release profile keeps them for this package"
);

mod ledger;

use std::collections::BTreeSet;
use std::future::ready;
// Counted outside the model: loom does not see or explore these.
use std::sync::Arc as OutsideArc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use courier_core::{CancelCause, Output, PreStepDecision, StepOutcome, Target};
use courier_runtime::{
    DriverTask, Handle, MemoryLog, PreStepHook, Sink, StepHook, pre_step_hook_fn, step_hook_fn,
};
use ledger::Ledger;
use loom::future::block_on;
use loom::thread;

/// Forced context switches per execution. A lost wake needs two (stop the
/// driver between its look and its park, then let a sender run), and so does
/// a send landing between a cancel and the retirement it races; 2 keeps each
/// model to a few thousand executions.
const PREEMPTION_BOUND: usize = 2;

/// Explores `model` under the bound and reports how many executions it took.
fn explore(name: &str, model: fn()) {
    let executions = OutsideArc::new(AtomicUsize::new(0));
    let counter = OutsideArc::clone(&executions);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(PREEMPTION_BOUND);
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let executions = executions.load(Ordering::Relaxed);
    assert!(executions > 1, "{name}: loom explored no interleaving");
    println!("loom {name}: preemption bound {PREEMPTION_BOUND}, {executions} executions");
}

/// An agent whose hooks answer at once: every batch passes, every step
/// completes. The races under test are between clients and the driver, not
/// inside hooks.
fn agent() -> (
    Handle,
    DriverTask<impl PreStepHook, impl StepHook>,
    MemoryLog,
) {
    let log = MemoryLog::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("loom", pre_step_hook, step_hook, log.clone());
    (agent, driver, log)
}

/// Disposes, lets the driver finish, and replays the log.
fn finish(agent: Handle, driver: thread::JoinHandle<()>, log: &MemoryLog) -> Ledger {
    block_on(agent.dispose()).expect("a memory log never fails");
    drop(agent);
    driver.join().expect("the driver does not panic");
    let (ledger, pending) = Ledger::from_log(log.lines());
    assert!(pending.is_empty(), "dispose leaves nothing pending");
    ledger
}

/// Two clients send at once (one followup each, one steer) while the driver
/// runs. At quiescence nothing is pending and each message was claimed once.
fn sends(racy: bool) {
    let (agent, driver, log) = agent();
    #[cfg(feature = "mutants")]
    let driver = if racy {
        driver.with_racy_wake()
    } else {
        driver
    };
    #[cfg(not(feature = "mutants"))]
    assert!(!racy, "the racy wake needs --features mutants");
    let driver = thread::spawn(move || block_on(driver.run()));
    let client = agent.clone();
    let sender = thread::spawn(move || {
        client.followup("A").expect("A is fresh");
        client.steer("B").expect("B is fresh");
    });
    agent.followup("C").expect("C is fresh");
    sender.join().expect("the sender does not panic");
    block_on(agent.when_idle()).expect("the driver task runs");
    assert!(agent.inbox().is_empty(), "a waking message was lost");
    let ledger = finish(agent, driver, &log);
    for id in ["A", "B", "C"] {
        assert!(ledger.claimed_once(id), "{id} not claimed exactly once");
    }
    ledger.balance(&BTreeSet::new());
}

#[test]
fn concurrent_sends_are_each_claimed_once_and_none_is_lost() {
    explore("sends", || sends(false));
}

/// The journal under `Durability::Sync`: each send returns only once its
/// own line is written, even when the other client holds the writer's token
/// (it waits, then shares that writer's sync or writes the rest itself),
/// and the log keeps the order the agent's lock gave the two sends. No
/// driver task: the injects start no turn.
fn synced_sends() {
    let (agent, _driver, log) = agent();
    let written = |log: &MemoryLog, id: &str| {
        let lines = log.lines();
        lines
            .iter()
            .position(|line| line.contains(&format!(r#""id":"{id}""#)))
    };
    let client = agent.clone();
    let client_log = log.clone();
    let sender = thread::spawn(move || {
        client.inject("A").expect("A is fresh");
        assert!(written(&client_log, "A").is_some(), "A returned unwritten");
    });
    agent.inject("B").expect("B is fresh");
    assert!(written(&log, "B").is_some(), "B returned unwritten");
    sender.join().expect("the sender does not panic");
    let (a, b) = (written(&log, "A"), written(&log, "B"));
    let inbox = agent.inbox();
    let pending: Vec<&str> = inbox
        .list(Target::NextStep)
        .iter()
        .map(|message| message.id().as_str())
        .collect();
    let logged = if a < b { ["A", "B"] } else { ["B", "A"] };
    assert_eq!(pending, logged, "the log's order is the lock's");
}

#[test]
fn a_synced_send_returns_after_its_line_is_written() {
    explore("synced", synced_sends);
}

/// A sink that fails every call once `failing` is set, and keeps the lines
/// of each flush that succeeded (what a crash would find on the disk).
struct FailingLater {
    written: Vec<String>,
    kept: OutsideArc<std::sync::Mutex<Vec<String>>>,
    failing: OutsideArc<AtomicBool>,
}

impl FailingLater {
    fn failed(&self) -> std::io::Result<()> {
        match self.failing.load(Ordering::SeqCst) {
            true => Err(std::io::Error::other("the disk is gone")),
            false => Ok(()),
        }
    }
}

impl Sink for FailingLater {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        self.failed()?;
        self.written.push(line.to_owned());
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.failed()?;
        let mut kept = self.kept.lock().expect("only the sink locks it");
        kept.append(&mut self.written);
        Ok(())
    }
}

/// Under `Durability::Sync` a call is told `Err(Log)` only if its line was
/// not kept: a client whose line another client's group commit kept is told
/// `Ok`, even when a later batch fails before it wakes. Three clients: one
/// holds the writer's token while the other two queue; the second writes
/// both their lines, then makes the sink fail and sends again.
fn kept_lines_are_told_kept() {
    let kept = OutsideArc::new(std::sync::Mutex::new(Vec::new()));
    let failing = OutsideArc::new(AtomicBool::new(false));
    let sink = FailingLater {
        written: Vec::new(),
        kept: OutsideArc::clone(&kept),
        failing: OutsideArc::clone(&failing),
    };
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, _driver) = Handle::new("loom", pre_step_hook, step_hook, sink);
    let client = agent.clone();
    let waiter = thread::spawn(move || client.inject("A").is_ok());
    let client = agent.clone();
    let later = thread::spawn(move || {
        let _either = client.inject("B");
        failing.store(true, Ordering::SeqCst);
        let _failed = client.inject("C");
    });
    let _either = agent.inject("M");
    later.join().expect("the client does not panic");
    let told_kept = waiter.join().expect("the client does not panic");
    let kept = kept.lock().expect("the sink is done").clone();
    let is_kept = kept.iter().any(|line| line.contains(r#""id":"A""#));
    assert_eq!(
        told_kept, is_kept,
        "A told kept: {told_kept}; kept: {kept:?}"
    );
}

#[test]
fn a_call_whose_line_was_kept_is_never_told_it_failed() {
    explore("kept-then-failed", kept_lines_are_told_kept);
}

/// A keep-inbox cancel races a client's followup while turn 1 runs, and the
/// canceller then sends too. Whatever the order, the send after the cancel is
/// never lost: it is latched and replayed if the turn was aborted, or it
/// wakes the agent itself; and the racing send ends up claimed as well,
/// because the later send's turn (or replay) picks it up.
fn cancel_races_send() {
    let (agent, driver, log) = agent();
    agent.followup("A").expect("A is fresh");
    let driver = thread::spawn(move || block_on(driver.run()));
    let client = agent.clone();
    let sender = thread::spawn(move || client.followup("B").expect("B is fresh"));
    agent
        .cancel(CancelCause::User, true)
        .expect("the driver task runs");
    agent.followup("C").expect("C is fresh");
    sender.join().expect("the sender does not panic");
    block_on(agent.when_idle()).expect("the driver task runs");
    assert!(agent.inbox().is_empty(), "the latched send was lost");
    let ledger = finish(agent, driver, &log);
    for id in ["A", "B", "C"] {
        assert!(ledger.claimed_once(id), "{id} not claimed exactly once");
    }
    ledger.balance(&BTreeSet::new());
}

#[test]
fn keep_inbox_cancel_racing_a_send_latches() {
    explore("latch", cancel_races_send);
}

/// A waiter registered after a followup resolves only once that followup's
/// turn ended and nothing is pending or running, even while another client
/// sends. Checked on the live notifications up to the waiter's `idle`.
fn idle_is_quiescent() {
    let (agent, driver, log) = agent();
    let mut notifications = agent.subscribe();
    let driver = thread::spawn(move || block_on(driver.run()));
    let client = agent.clone();
    let sender = thread::spawn(move || client.followup("B").expect("B is fresh"));
    agent.followup("A").expect("A is fresh");
    block_on(agent.when_idle()).expect("the driver task runs");
    let seen: Vec<Output> = std::iter::from_fn(|| notifications.try_recv()).collect();
    let idle = seen.iter().position(|output| *output == Output::Idle);
    let before = &seen[..idle.expect("resolved before the core emitted idle")];
    let opened = before
        .iter()
        .filter(|output| matches!(output, Output::TurnStart { .. }));
    let closed = before
        .iter()
        .filter(|output| matches!(output, Output::TurnEnd { .. }));
    assert_eq!(opened.count(), closed.count(), "resolved with a turn open");
    let ledger = Ledger::from_live(before);
    assert!(ledger.claimed_once("A"), "resolved before A was claimed");
    ledger.balance(&BTreeSet::new());
    sender.join().expect("the sender does not panic");
    finish(agent, driver, &log);
}

#[test]
fn when_idle_resolves_only_at_quiescence() {
    explore("when-idle", idle_is_quiescent);
}

/// A step hook that never returns is ended by a cancel alone: the abort
/// must wake the driver task parked on the hook, which drops it and completes the
/// step; the core then ends the turn `aborted`. A lost abort wake deadlocks.
fn cancel_reaches_the_hook() {
    let log = MemoryLog::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| std::future::pending());
    let (agent, driver) = Handle::new("loom", pre_step_hook, step_hook, log.clone());
    let driver = thread::spawn(move || block_on(driver.run()));
    agent.followup("A").expect("A is fresh");
    agent
        .cancel(CancelCause::User, false)
        .expect("the driver task runs");
    block_on(agent.when_idle()).expect("the driver task runs");
    let ledger = finish(agent, driver, &log);
    assert!(ledger.claimed_once("A"), "A not claimed exactly once");
    let aborted = r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}}"#;
    assert!(
        log.lines().iter().any(|line| line == aborted),
        "turn 1 did not end aborted"
    );
}

#[test]
fn a_cancel_reaches_the_hook_in_flight() {
    explore("abort", cancel_reaches_the_hook);
}

/// The planted lost wake (the driver looks and parks under two locks) must
/// be found. Loom aborts the process on a deadlock, so the model runs in a
/// child process of this test binary and the parent asserts that it died of
/// one.
#[cfg(feature = "mutants")]
#[test]
fn racy_wake_is_caught_as_a_deadlock() {
    const CHILD: &str = "COURIER_LOOM_RACY_CHILD";
    if std::env::var_os(CHILD).is_some() {
        explore("racy", || sends(true));
        return;
    }
    let test_binary = std::env::current_exe().expect("the test binary has a path");
    let child = std::process::Command::new(test_binary)
        .args([
            "racy_wake_is_caught_as_a_deadlock",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(
        !child.status.success(),
        "loom explored the racy wake and found nothing"
    );
    let report = stderr.lines().find(|line| line.starts_with("deadlock;"));
    let report = report.unwrap_or_else(|| panic!("the racy child failed otherwise:\n{stderr}"));
    println!("loom racy: caught: {report}");
}
