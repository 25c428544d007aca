//! The async runtime as a user meets it, on tokio: refusals are the core's,
//! the output stream is exactly the core's, hooks see claimed batches and
//! entered messages, a cancel drops the hook in flight, the JSONL file is
//! written as the durability policy says and reports its errors, and the last
//! handle disposes. Every test runs on a single-threaded runtime and waits on
//! events, never on time (the write-behind test polls the file, bounded).
#![cfg(not(loom))]

mod common;

use common::block_on;
use std::future::{Future, ready};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier_core::transcript::Runner;
use courier_core::{
    Agent as Core, CancelCause, Message, MessageId, Output, PreStepDecision, Refusal, Source,
    StepOutcome, Target,
};
use courier_runtime::{
    Boundary, Durability, Error, Handle, JsonlFile, MemoryLog, Notifications, Sink, StepCall,
    pre_step_hook_fn, step_hook_fn,
};

/// Hooks that answer at once: every batch passes, every step completes.
fn plain_agent() -> (Handle, impl Future<Output = ()>, MemoryLog) {
    let log = MemoryLog::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("test", pre_step_hook, step_hook, log.clone());
    (agent, driver.run(), log)
}

/// Reads notifications up to and including `wanted`.
async fn until(notifications: &mut Notifications, wanted: Output) {
    loop {
        match notifications.recv().await {
            Some(output) if output == wanted => return,
            Some(_) => {}
            None => panic!("the stream ended before {wanted}"),
        }
    }
}

/// The core's refusal inside a call's error, if that is what it was.
fn refusal(result: Result<(), Error>) -> Option<Refusal> {
    match result {
        Err(Error::Refused(refusal)) => Some(refusal),
        Ok(()) | Err(_) => None,
    }
}

fn drain(notifications: &mut Notifications) -> Vec<String> {
    std::iter::from_fn(|| notifications.try_recv())
        .map(|output| output.to_string())
        .collect()
}

#[test]
fn refused_inputs_return_the_core_refusal_and_change_nothing() {
    let (agent, driver, log) = plain_agent();
    block_on(async {
        let driver = tokio::spawn(driver);
        let mut notifications = agent.subscribe();
        agent.inject("A").expect("A is fresh");
        drain(&mut notifications);
        let again = agent.followup("A");
        assert_eq!(
            refusal(again),
            Some(Refusal::DuplicateId(MessageId::from("A")))
        );
        let missing = agent.remove("X");
        assert_eq!(
            refusal(missing),
            Some(Refusal::NotPending(MessageId::from("X")))
        );
        assert!(
            drain(&mut notifications).is_empty(),
            "a refusal emits nothing"
        );
        agent.dispose().await.expect("a memory log never fails");
        let late = agent.followup("B");
        assert_eq!(refusal(late), Some(Refusal::Disposed(MessageId::from("B"))));
        driver
            .await
            .expect("the driver ends once disposed and idle");
    });
    let lines = log.lines();
    assert_eq!(lines.len(), 3, "header, A inserted, A discarded: {lines:?}");
}

/// The runtime adds nothing to and removes nothing from the core: its stream
/// for `followup A` then `when_idle` is the transcript of the same inputs
/// with every await resolved by `pass` / `completed`.
#[test]
fn the_output_stream_is_the_cores() {
    let (agent, driver, _log) = plain_agent();
    let streamed = block_on(async {
        let mut notifications = agent.subscribe();
        let driver = tokio::spawn(driver);
        agent.followup("A").expect("A is fresh");
        agent.when_idle().await.expect("the driver task runs");
        agent.dispose().await.expect("a memory log never fails");
        driver.await.expect("the driver ends");
        drain(&mut notifications)
    });
    let mut core = Runner::new(Core::new());
    let mut expected = Vec::new();
    for line in ["followup A", "when-idle", "run", "dispose", "when-idle"] {
        expected.extend(core.execute(line).expect("the core reaches idle"));
    }
    assert_eq!(streamed, expected);
}

#[test]
fn hooks_see_the_claimed_batch_and_the_entered_messages() {
    let boundaries: Arc<Mutex<Vec<Boundary>>> = Arc::default();
    let steps: Arc<Mutex<Vec<StepCall>>> = Arc::default();
    let seen = Arc::clone(&boundaries);
    // Enters the batch reversed, without its last claimed message, plus one
    // context message.
    let pre_step_hook = pre_step_hook_fn(move |boundary: Boundary| {
        let mut entering: Vec<Message> = boundary.batch.iter().rev().skip(1).cloned().collect();
        entering.push(Message::text("ctx", Source::plugin("test")));
        seen.lock().expect("no panics").push(boundary);
        ready(PreStepDecision::Enter(entering))
    });
    let called = Arc::clone(&steps);
    let step_hook = step_hook_fn(move |call| {
        called.lock().expect("no panics").push(call);
        ready(StepOutcome::Completed)
    });
    let (agent, driver) = Handle::new("test", pre_step_hook, step_hook, MemoryLog::new());
    block_on(async {
        agent.inject("a").expect("a is fresh");
        agent.inject("b").expect("b is fresh");
        agent.followup("P").expect("P is fresh");
        tokio::spawn(driver.run());
        agent.when_idle().await.expect("the driver task runs");
    });
    let boundaries = boundaries.lock().expect("no panics");
    let ids = |messages: &[Message]| -> Vec<String> {
        messages.iter().map(|m| m.id().to_string()).collect()
    };
    assert_eq!(boundaries.len(), 1);
    assert_eq!((boundaries[0].turn, boundaries[0].step), (1, 0));
    assert_eq!(ids(&boundaries[0].batch), ["a", "b", "P"]);
    let steps = steps.lock().expect("no panics");
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].turn, steps[0].step), (1, 1));
    assert_eq!(ids(&steps[0].entered), ["b", "a", "ctx"]);
}

/// Sets its flag when dropped before it finished.
struct DropFlag(Arc<Mutex<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        *self.0.lock().expect("no panics") = true;
    }
}

#[test]
fn a_cancel_drops_the_hook_in_flight_and_the_core_ends_the_turn() {
    let dropped = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&dropped);
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(move |_| {
        let guard = DropFlag(Arc::clone(&flag));
        async move {
            let _guard = guard;
            std::future::pending::<StepOutcome>().await
        }
    });
    let log = MemoryLog::new();
    let (agent, driver) = Handle::new("test", pre_step_hook, step_hook, log.clone());
    block_on(async {
        let mut notifications = agent.subscribe();
        tokio::spawn(driver.run());
        agent.followup("A").expect("A is fresh");
        agent.steer("S").expect("S is fresh");
        until(&mut notifications, Output::StepStart { turn: 1, step: 1 }).await;
        assert!(
            !*dropped.lock().expect("no panics"),
            "the step is in flight"
        );
        agent
            .cancel(
                CancelCause::Hook {
                    reason: "veto".into(),
                },
                true,
            )
            .expect("the driver task runs");
        agent.when_idle().await.expect("the driver task runs");
    });
    assert!(
        *dropped.lock().expect("no panics"),
        "the hook was not dropped"
    );
    assert!(
        agent.inbox().contains(&MessageId::from("S")),
        "keep-inbox parks S"
    );
    let aborted = r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"veto"}}}}"#;
    assert_eq!(log.lines().last().map(String::as_str), Some(aborted));
}

/// One session touching every durable event type (splices with and
/// without removals and sources with extras, steps, a blocked and a
/// cancelled turn) logged to `sink`.
fn varied_session(sink: impl Sink) {
    let blocks = Arc::new(Mutex::new(true));
    let pre_step_hook = pre_step_hook_fn(move |_| {
        let mut first = blocks.lock().expect("no panics");
        let decision = if std::mem::take(&mut *first) {
            PreStepDecision::Reject
        } else {
            PreStepDecision::Pass
        };
        ready(decision)
    });
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("varied", pre_step_hook, step_hook, sink);
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("A").expect("A is fresh");
        agent.when_idle().await.expect("the driver task runs");
        let mut extra = serde_json::Map::new();
        extra.insert("form".into(), "notice \"quoted\" \u{e9}".into());
        let source = Source::Plugin {
            plugin: "p".into(),
            extra,
        };
        let content = serde_json::json!([{"type": "text", "text": "line\nbreak"}]);
        let plugin = Message::new(MessageId::from("P"), content, source);
        agent.append(Target::NextTurn, plugin).expect("P is fresh");
        agent.prepend(Target::NextStep, "Q").expect("Q is fresh");
        agent.remove("Q").expect("Q is pending");
        agent.steer("B").expect("B is fresh");
        agent.when_idle().await.expect("the driver task runs");
        agent.inject("C").expect("C is fresh");
        agent.dispose().await.expect("the log was written");
    });
}

#[test]
fn a_memory_log_reads_as_the_file_the_same_session_writes() {
    let log = MemoryLog::new();
    varied_session(log.clone());
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("session.jsonl");
    varied_session(JsonlFile::create(&path).expect("a writable file"));
    let written = std::fs::read_to_string(&path).expect("the file reads");
    let kept = log.lines();
    assert_eq!(kept, written.lines().collect::<Vec<_>>());
    // Every durable event type, a removal and an escaped string were written.
    let types: std::collections::BTreeSet<String> = written
        .lines()
        .skip(1)
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            event["type"].as_str().expect("a type").to_owned()
        })
        .collect();
    assert_eq!(types.len(), 6, "{types:?}");
    assert!(written.contains(r#""removedCount":1"#), "{written}");
    assert!(written.contains(r#"\"quoted\""#), "{written}");
}

#[test]
fn under_sync_each_call_is_on_disk_when_it_returns() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("session.jsonl");
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a writable file");
    let (agent, driver) = Handle::new("file", pre_step_hook, step_hook, sink);
    let read = || std::fs::read_to_string(&path).expect("the file reads");
    block_on(async {
        // The driver task is not running yet: only the send's own lines.
        agent.append(Target::NextTurn, "B").expect("B is fresh");
        let last = read().lines().last().expect("a line").to_owned();
        assert!(
            last.contains(r#""id":"B""#),
            "the append is on disk: {last}"
        );
        tokio::spawn(driver.run());
        agent.followup("A").expect("A is fresh");
        agent.when_idle().await.expect("the driver task runs");
        let text = read();
        let last = text.lines().last().expect("lines were written");
        assert!(
            last.contains(r#""type":"turn/end""#),
            "the turn is on disk when when_idle resolves: {last}"
        );
        agent.dispose().await.expect("the file was written");
    });
}

#[test]
fn write_behind_holds_lines_for_its_window_and_dispose_writes_them() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let read = |path: &std::path::Path| std::fs::read_to_string(path).expect("the file reads");
    let open = |name: &str, max_delay: Duration| {
        let path = folder.path().join(name);
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
        let sink = JsonlFile::create(&path).expect("a writable file");
        let durability = Durability::WriteBehind { max_delay };
        let (agent, driver) =
            Handle::with_durability("file", durability, pre_step_hook, step_hook, sink);
        (path, agent, driver)
    };
    block_on(async {
        // A window longer than the test: nothing but the header is written
        // until dispose.
        let (path, agent, driver) = open("long.jsonl", Duration::from_secs(600));
        tokio::spawn(driver.run());
        agent.followup("A").expect("A is fresh");
        agent.when_idle().await.expect("the driver task runs");
        assert_eq!(read(&path).lines().count(), 1, "only the header so far");
        agent.dispose().await.expect("the file was written");
        let last = read(&path).lines().last().expect("a line").to_owned();
        assert!(
            last.contains(r#""type":"turn/end""#),
            "dispose wrote: {last}"
        );

        // A short window: the lines arrive without dispose.
        let (path, agent, driver) = open("short.jsonl", Duration::from_millis(5));
        tokio::spawn(driver.run());
        agent.followup("A").expect("A is fresh");
        agent.when_idle().await.expect("the driver task runs");
        let mut waited = Duration::ZERO;
        while !read(&path).contains(r#""type":"turn/end""#) {
            assert!(waited < Duration::from_secs(30), "never written behind");
            std::thread::sleep(Duration::from_millis(5));
            waited += Duration::from_millis(5);
        }
        agent.dispose().await.expect("the file was written");
    });
}

/// A sink whose every write fails.
struct Broken;

impl Sink for Broken {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        Err(io::Error::other("disk full"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_refuses_later_work_and_dispose_reports_it() {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("broken", pre_step_hook, step_hook, Broken);
    block_on(async {
        tokio::spawn(driver.run());
        // The header's write already failed: work the log cannot record is
        // not taken.
        let sent = agent.followup("A");
        assert!(
            matches!(&sent, Err(Error::Log(error)) if error.to_string() == "disk full"),
            "{sent:?}"
        );
        assert!(agent.inbox().is_empty(), "A was not accepted");
        // The driver task stopped at the failure: a wait ends with it.
        let idle = agent.when_idle().await;
        assert!(matches!(idle, Err(Error::Log(_))), "{idle:?}");
        let error = agent.dispose().await.expect_err("the failure surfaces");
        assert_eq!(error.to_string(), "the session log failed: disk full");
    });
}

/// A sink that fails from its `lines`-th write on.
struct FailsAfter {
    lines: usize,
}

impl Sink for FailsAfter {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        match self.lines.checked_sub(1) {
            Some(left) => {
                self.lines = left;
                Ok(())
            }
            None => Err(io::Error::other("disk full")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_sink_failing_behind_is_reported_and_the_agent_still_ends() {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let durability = Durability::WriteBehind {
        max_delay: Duration::from_millis(1),
    };
    // The header and one more line go through; the writer thread's batch
    // fails on the next.
    let sink = FailsAfter { lines: 2 };
    let (agent, driver) =
        Handle::with_durability("broken", durability, pre_step_hook, step_hook, sink);
    block_on(async {
        let driver = tokio::spawn(driver.run());
        // Once the writer thread has met the failure, work the log cannot
        // record is refused; when that happens depends on the thread.
        let mut refused = false;
        for id in ["A", "B", "C"] {
            match agent.followup(id) {
                Ok(()) => assert!(!refused, "{id} accepted after a refusal"),
                Err(Error::Log(error)) => {
                    assert_eq!(error.to_string(), "disk full");
                    refused = true;
                }
                Err(other) => panic!("{id}: {other}"),
            }
            agent.when_idle().await.expect("the driver task runs");
        }
        assert!(
            agent.inbox().is_empty(),
            "every accepted message was claimed"
        );
        let error = agent.dispose().await.expect_err("the failure surfaces");
        assert_eq!(error.to_string(), "the session log failed: disk full");
        drop(agent);
        // The agent's end joins the writer thread: it must have stopped.
        driver.await.expect("the driver task ends");
    });
}

#[test]
fn dropping_the_last_handle_disposes_and_ends_the_driver() {
    let (agent, driver, log) = plain_agent();
    block_on(async {
        let driver = tokio::spawn(driver);
        let clone = agent.clone();
        agent.inject("A").expect("A is fresh");
        drop(agent);
        assert!(
            clone.inbox().contains(&MessageId::from("A")),
            "a clone keeps it"
        );
        drop(clone);
        driver.await.expect("the driver ends after the last handle");
    });
    let discarded = r#"{"type":"agent/inbox/spliced","data":{"target":"next-step","start":0,"removedCount":1,"inserted":[],"outcome":"canceled"}}"#;
    assert_eq!(log.lines().last().map(String::as_str), Some(discarded));
}

#[test]
fn the_handle_is_clone_send_and_sync() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Handle>();
}
