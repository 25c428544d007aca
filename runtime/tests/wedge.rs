//! The runtime's failure paths, as an embedder meets them (issue 15): a hook
//! that panics, a driver task that is dropped, a sink or observer that
//! panics, a hook that needs its agent, a subscriber that never reads, a
//! stream whose agent is gone, and an agent awaited from inside its own
//! hook. Each ends in an answer, never a hang or an abort. A hang would
//! show as a timeout here (a bound on a wait that must end, never a
//! measurement).
#![cfg(not(loom))]

mod common;

use common::{block_on, ends, passing};
use std::future::{Future, pending, ready};
use std::io;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use courier_core::{CancelCause, Output, PreStepDecision, Refusal, Status, StepOutcome};
use courier_runtime::{
    DriverTask, Durability, Error, Handle, Hook, Lagged, MemoryLog, PreStepHook, Sink, StepCall,
    StepHook, pre_step_hook_fn, step_hook_fn,
};

/// An agent whose hooks pass every batch and complete every step, over a
/// memory log.
fn plain_agent() -> (Handle, DriverTask<impl PreStepHook, impl StepHook>) {
    Handle::new(
        "wedge",
        passing(),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        MemoryLog::new(),
    )
}

fn turn_ends(log: &MemoryLog) -> Vec<String> {
    log.lines()
        .into_iter()
        .filter(|line| line.contains("turn/end"))
        .collect()
}

#[test]
fn dead_driver_a_panicking_step_hook_fails_the_step_and_the_agent_goes_on() {
    let log = MemoryLog::new();
    let calls = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&calls);
    let step_hook = step_hook_fn(move |_| {
        let first = {
            let mut calls = counted.lock().expect("not poisoned");
            *calls += 1;
            *calls == 1
        };
        async move {
            assert!(!first, "the model exploded");
            StepOutcome::Completed
        }
    });
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, log.clone());
    block_on(async {
        tokio::spawn(driver.run());
        let mut outputs = agent.subscribe();
        agent.followup("a").expect("accepted");
        ends("when_idle after a hook panic", agent.when_idle())
            .await
            .expect("the driver task survived the panic");
        agent.followup("b").expect("accepted after the panic");
        ends("the next turn", agent.when_idle())
            .await
            .expect("served");
        let panics = agent.hook_panics();
        assert_eq!(panics.len(), 1, "{panics:?}");
        assert_eq!((panics[0].turn, panics[0].step), (1, 1));
        assert_eq!(panics[0].hook, Hook::Step);
        assert_eq!(panics[0].message, "the model exploded");
        let mut errors = 0;
        while let Some(output) = outputs.try_recv() {
            errors += usize::from(matches!(output, Output::Error { turn: 1, step: 1 }));
        }
        assert_eq!(errors, 1, "one agent/error for the failed step");
    });
    let ends = turn_ends(&log);
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(ends[0].contains("\"error\""), "{}", ends[0]);
    assert!(ends[1].contains("\"completed\""), "{}", ends[1]);
}

#[test]
fn dead_driver_a_pre_step_hook_that_panics_when_called_fails_its_boundary() {
    let log = MemoryLog::new();
    let pre_step_hook = pre_step_hook_fn(|boundary: courier_runtime::Boundary| {
        assert!(boundary.turn != 1, "the listener threw");
        ready(PreStepDecision::Pass)
    });
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("wedge", pre_step_hook, step_hook, log.clone());
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("when_idle", agent.when_idle()).await.expect("served");
        agent.followup("b").expect("accepted");
        ends("when_idle", agent.when_idle()).await.expect("served");
        let panics = agent.hook_panics();
        assert_eq!(panics.len(), 1, "{panics:?}");
        assert_eq!(
            (panics[0].turn, panics[0].step, panics[0].hook),
            (1, 0, Hook::PreStep)
        );
    });
    let ends = turn_ends(&log);
    assert!(ends[0].contains("\"error\""), "{ends:?}");
    assert!(ends[1].contains("\"completed\""), "{ends:?}");
}

/// An agent whose step hook never finishes, its driver task spawned, and the
/// first turn's step open.
async fn stuck_in_a_step() -> (Handle, tokio::task::JoinHandle<()>, MemoryLog) {
    let log = MemoryLog::new();
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, log.clone());
    let task = tokio::spawn(driver.run());
    agent.followup("a").expect("accepted");
    while !matches!(agent.status(), Ok(Status::Running { step: 1, .. })) {
        tokio::task::yield_now().await;
    }
    (agent, task, log)
}

#[test]
fn dead_driver_an_aborted_driver_task_fails_every_later_call() {
    block_on(async {
        let (agent, task, log) = stuck_in_a_step().await;
        let waiting = agent.when_idle();
        task.abort();
        assert!(task.await.is_err(), "the task was cancelled");
        let before = log.lines();
        assert!(matches!(agent.followup("b"), Err(Error::DriverGone)));
        assert!(matches!(
            agent.cancel(CancelCause::User, true),
            Err(Error::DriverGone)
        ));
        assert!(matches!(
            ends("a waiter from before", waiting).await,
            Err(Error::DriverGone)
        ));
        assert!(matches!(
            ends("a new waiter", agent.when_idle()).await,
            Err(Error::DriverGone)
        ));
        assert!(matches!(
            ends("dispose", agent.dispose()).await,
            Err(Error::DriverGone)
        ));
        assert_eq!(log.lines(), before, "nothing logged after the driver went");
        assert!(!agent.inbox().contains(&"b".into()), "b was never inserted");
        // Nor does the open turn it left read as live: before, `status`
        // said `running` for ever.
        assert!(matches!(agent.status(), Err(Error::DriverGone)));
    });
}

#[test]
fn dead_driver_a_driver_task_dropped_unspawned_fails_the_first_send() {
    let (agent, driver) = plain_agent();
    drop(driver);
    assert!(matches!(agent.followup("a"), Err(Error::DriverGone)));
    assert!(matches!(agent.status(), Err(Error::DriverGone)));
}

#[test]
fn dead_driver_after_a_normal_end_the_core_still_answers() {
    let (agent, driver) = plain_agent();
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        agent.dispose().await.expect("disposed");
        task.await.expect("the driver task ended");
        assert!(matches!(
            agent.followup("b"),
            Err(Error::Refused(Refusal::Disposed(_)))
        ));
        ends("when_idle", agent.when_idle())
            .await
            .expect("an idle disposed agent resolves at once");
        assert_eq!(agent.status().expect("at its end"), Status::Idle);
    });
}

#[test]
fn weak_handle_a_step_hook_injects_a_tool_result_without_keeping_the_agent() {
    let log = MemoryLog::new();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&steps);
    let step_hook = step_hook_fn(move |call: StepCall| {
        seen.lock().expect("not poisoned").push(
            call.entered
                .iter()
                .map(|message| message.id().as_str().to_owned())
                .collect::<Vec<_>>(),
        );
        let outcome = if call.step == 1 {
            let agent = call.agent.upgrade().expect("a user handle is alive");
            agent.inject("tool-result").expect("injected");
            StepOutcome::ToolCalls
        } else {
            StepOutcome::Completed
        };
        ready(outcome)
    });
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, log.clone());
    let weak = agent.downgrade();
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("question").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
        drop(agent);
        ends("the driver task after the last handle", task)
            .await
            .expect("it ended");
    });
    assert_eq!(
        *steps.lock().expect("not poisoned"),
        [vec!["question".to_owned()], vec!["tool-result".to_owned()]]
    );
    assert!(weak.upgrade().is_none(), "the agent is gone for good");
    let last = log.lines().pop().expect("a log");
    assert!(last.contains("turn/end"), "the log ends its turn: {last}");
}

#[test]
fn bounded_subscription_reports_what_it_skipped_and_keeps_the_latest() {
    let (agent, _driver) = plain_agent();
    let capacity = NonZeroUsize::new(4).expect("non-zero");
    let mut bounded = agent.subscribe_bounded(capacity);
    let mut lossless = agent.subscribe();
    for n in 0..50 {
        agent
            .append(courier_core::Target::NextTurn, format!("m{n}").as_str())
            .expect("accepted");
    }
    let all: Vec<Output> = std::iter::from_fn(|| lossless.try_recv()).collect();
    assert_eq!(all.len(), 100, "spliced + inserted per append");
    let Some(Err(Lagged { skipped })) = bounded.try_recv() else {
        panic!("the reader fell behind and is told so first");
    };
    let kept: Vec<Output> = std::iter::from_fn(|| bounded.try_recv())
        .map(|read| read.expect("no second gap"))
        .collect();
    assert_eq!(skipped as usize + kept.len(), all.len());
    assert_eq!(kept.len(), capacity.get());
    assert_eq!(kept, all[all.len() - kept.len()..]);
}

#[test]
fn stream_end_a_subscriber_holding_a_handle_sees_its_stream_end() {
    let (agent, driver) = plain_agent();
    block_on(async {
        let task = tokio::spawn(driver.run());
        let mut outputs = agent.subscribe();
        let mut bounded = agent.subscribe_bounded(NonZeroUsize::new(1024).expect("non-zero"));
        let kept = agent.clone();
        agent.followup("a").expect("accepted");
        agent.dispose().await.expect("disposed");
        task.await.expect("the driver task ended");
        let mut read = 0;
        while ends("the lossless stream", outputs.recv()).await.is_some() {
            read += 1;
        }
        assert!(read > 0, "the outputs before the end were read first");
        while ends("the bounded stream", bounded.recv()).await.is_some() {}
        let mut late = kept.subscribe();
        assert!(
            late.recv().await.is_none(),
            "a late subscription starts ended"
        );
    });
}

/// What a [`self_waiting`] hook awaits on its own agent.
#[derive(Clone, Copy)]
enum SelfWait {
    Idle,
    Dispose,
}

/// A step hook that awaits its own agent and records whether the wait
/// answered [`Error::InsideHook`].
fn self_waiting(wait: SelfWait, answers: &Arc<Mutex<Vec<bool>>>) -> impl StepHook {
    let answers = Arc::clone(answers);
    step_hook_fn(move |call: StepCall| {
        let answers = Arc::clone(&answers);
        async move {
            let agent = call.agent.upgrade().expect("alive");
            let waited = match wait {
                SelfWait::Idle => agent.when_idle().await,
                SelfWait::Dispose => agent.dispose().await,
            };
            answers
                .lock()
                .expect("not poisoned")
                .push(matches!(waited, Err(Error::InsideHook)));
            StepOutcome::Completed
        }
    })
}

#[test]
fn self_wait_when_idle_inside_the_agents_own_hook_is_an_error() {
    let answers = Arc::new(Mutex::new(Vec::new()));
    let step_hook = self_waiting(SelfWait::Idle, &answers);
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, MemoryLog::new());
    block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
    });
    assert_eq!(*answers.lock().expect("not poisoned"), [true]);
}

#[test]
fn self_wait_dispose_inside_the_agents_own_hook_disposes_and_says_so() {
    let answers = Arc::new(Mutex::new(Vec::new()));
    let step_hook = self_waiting(SelfWait::Dispose, &answers);
    let log = MemoryLog::new();
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, log.clone());
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the driver task", task).await.expect("it ended");
    });
    assert_eq!(*answers.lock().expect("not poisoned"), [true]);
    let ends = turn_ends(&log);
    assert!(ends[0].contains("aborted"), "{ends:?}");
}

/// A sink that panics on its `n`-th line.
struct PanickingSink {
    lines: usize,
    panic_at: usize,
}

impl Sink for PanickingSink {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        self.lines += 1;
        assert!(self.lines != self.panic_at, "the disk is on fire");
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn sink_panic_is_an_error_the_caller_sees_and_no_call_panics_after() {
    let sink = PanickingSink {
        lines: 0,
        panic_at: 2,
    };
    let (agent, driver) = Handle::new(
        "wedge",
        passing(),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        sink,
    );
    block_on(async {
        tokio::spawn(driver.run());
        let first = agent.followup("a");
        assert!(
            matches!(&first, Err(Error::Log(error)) if error.to_string().contains("the disk is on fire")),
            "{first:?}"
        );
        // The driver task stopped at the failure: no hook runs on `a`,
        // whose lines were never kept, so its turn never ends.
        let idle = ends("when_idle", agent.when_idle()).await;
        assert!(matches!(idle, Err(Error::Log(_))), "{idle:?}");
        let disposed = ends("dispose", agent.dispose()).await;
        assert!(matches!(disposed, Err(Error::Log(_))), "{disposed:?}");
    });
    drop(agent);
}

#[test]
fn sink_panic_in_an_observer_does_not_poison_the_agent() {
    let observer = |transition: courier_runtime::Transition| {
        assert!(
            !matches!(transition.input, courier_core::Input::Send { .. }),
            "the observer broke"
        );
    };
    let (agent, driver) = Handle::with_observer(
        "wedge",
        Durability::Sync,
        passing(),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        MemoryLog::new(),
        observer,
    );
    block_on(async {
        tokio::spawn(driver.run());
        let sent = agent.followup("a");
        assert!(
            matches!(&sent, Err(Error::ObserverPanicked(message)) if message == "the observer broke"),
            "{sent:?}"
        );
        ends("when_idle", agent.when_idle()).await.expect("served");
        agent.followup("b").expect("later calls work");
        ends("when_idle", agent.when_idle()).await.expect("served");
    });
}

#[test]
fn dispose_twice_at_once_while_a_step_hook_never_completes_ends_both() {
    block_on(async {
        let (agent, task, log) = stuck_in_a_step().await;
        let other = agent.clone();
        let (first, second) = ends("two disposes", async {
            tokio::join!(agent.dispose(), other.dispose())
        })
        .await;
        assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
        ends("the driver task", task).await.expect("no panic");
        let ends = turn_ends(&log);
        assert_eq!(ends.len(), 1, "{ends:?}");
        assert!(ends[0].contains("aborted"), "{ends:?}");
        assert!(matches!(agent.followup("late"), Err(Error::Refused(_))));
    });
}

#[test]
fn the_last_handle_dropped_while_a_step_hook_never_completes_ends_the_driver() {
    block_on(async {
        let (agent, task, log) = stuck_in_a_step().await;
        let weak = agent.downgrade();
        drop(agent);
        ends("the driver task", task).await.expect("no panic");
        assert!(weak.upgrade().is_none(), "the agent is gone");
        let ends = turn_ends(&log);
        assert!(ends.len() == 1 && ends[0].contains("aborted"), "{ends:?}");
    });
}

#[test]
fn a_subscriber_dropped_mid_stream_costs_the_others_nothing() {
    block_on(async {
        let (agent, driver) = plain_agent();
        let task = tokio::spawn(driver.run());
        let mut kept = agent.subscribe();
        let mut dropped = agent.subscribe();
        let mut bounded = agent.subscribe_bounded(NonZeroUsize::MIN);
        agent.followup("a").expect("accepted");
        assert!(ends("a first output", dropped.recv()).await.is_some());
        drop(dropped);
        drop(bounded.try_recv());
        drop(bounded);
        agent.followup("b").expect("accepted");
        ends("idle", agent.when_idle()).await.expect("served");
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
        let mut turns = 0;
        while let Some(output) = ends("the stream", kept.recv()).await {
            turns += usize::from(matches!(output, Output::TurnEnd { .. }));
        }
        assert_eq!(turns, 2, "the kept subscriber saw both turns end");
    });
}

/// Runs `body` on a thread of its own and returns its answer, or `None`
/// when it has not answered within [`common::HANG`]: a deadlock or a task
/// that never yields fails the test instead of hanging it (the stuck
/// thread is left behind).
fn within_bound<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (answer, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || drop(answer.send(body())));
    answered.recv_timeout(common::HANG).ok()
}

#[test]
fn never_yields_a_model_that_always_calls_tools_can_still_be_canceled() {
    // Hooks ready at once never make the driver task wait: on a
    // one-thread executor, only its own yields let the canceller run.
    let ended = within_bound(|| {
        let log = MemoryLog::new();
        let step_hook = step_hook_fn(|_| ready(StepOutcome::ToolCalls));
        let (agent, driver) = Handle::new("wedge", passing(), step_hook, log.clone());
        block_on(async {
            tokio::spawn(driver.run());
            let canceller = agent.clone();
            tokio::spawn(async move { canceller.cancel(CancelCause::User, false) });
            agent.followup("a").expect("accepted");
            agent.when_idle().await.expect("served");
        });
        turn_ends(&log)
    });
    let ends = ended.expect("the turn ended: the driver task let the canceller run");
    assert!(ends.len() == 1 && ends[0].contains("aborted"), "{ends:?}");
}

/// A guard in a hook's future whose `Drop` panics.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the hook's guard broke");
    }
}

#[test]
fn dead_driver_a_run_future_dropped_mid_hook_whose_drop_panics_unwinds_nothing() {
    let step_hook = step_hook_fn(|_| async {
        let _guard = PanicsOnDrop;
        pending::<()>().await;
        StepOutcome::Completed
    });
    let (agent, driver) = Handle::new("wedge", passing(), step_hook, MemoryLog::new());
    block_on(async {
        agent.followup("a").expect("accepted");
        let mut run = Box::pin(driver.run());
        // The embedder's own `select!`, not a spawned task: no executor
        // catches what unwinds from the drop.
        tokio::select! {
            () = &mut run => unreachable!("the step never completes"),
            () = tokio::task::yield_now() => {}
        }
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(run)));
        assert!(dropped.is_ok(), "the hook's panic unwound out of the drop");
        let later = agent.followup("b");
        assert!(matches!(later, Err(Error::DriverGone)), "{later:?}");
    });
}

/// A sink that, at the line naming `b`, waits for its own agent's
/// quiescence, and keeps what the wait answered.
#[derive(Clone, Default)]
struct WaitsInside {
    agent: Arc<Mutex<Option<courier_runtime::WeakHandle>>>,
    answers: Arc<Mutex<Vec<String>>>,
}

impl Sink for WaitsInside {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        if !line.contains(r#""id":"b""#) {
            return Ok(());
        }
        let agent = self.agent.lock().expect("not poisoned").take();
        if let Some(agent) = agent {
            // Polled once, as a blocking wait would first poll it (an
            // executor cannot run inside the executor that runs this send).
            let waited = agent.upgrade().map(|agent| {
                let mut waiter = std::pin::pin!(agent.when_idle());
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                waiter.as_mut().poll(&mut context)
            });
            self.answers
                .lock()
                .expect("not poisoned")
                .push(format!("{waited:?}"));
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn self_wait_when_idle_inside_the_agents_own_sink_is_an_error() {
    let sink = WaitsInside::default();
    let answers = Arc::clone(&sink.answers);
    let waited = within_bound(move || {
        let (agent, driver) = Handle::new(
            "wedge",
            passing(),
            step_hook_fn(|_| pending::<StepOutcome>()),
            sink.clone(),
        );
        *sink.agent.lock().expect("not poisoned") = Some(agent.downgrade());
        block_on(async {
            tokio::spawn(driver.run());
            agent.followup("a").expect("accepted");
            // A turn runs; the sink waits for its end while it holds the
            // writer's token, which that end needs.
            agent.inject("b").map(drop)
        })
    });
    assert!(waited.is_some(), "the send whose sink waits for idle hung");
    let answers = answers.lock().expect("not poisoned").clone();
    assert_eq!(answers, ["Some(Ready(Err(InsideSink)))"]);
}

/// A sink that forwards each user message it logs to another agent, and
/// keeps what each forward answered.
#[derive(Clone, Default)]
struct Forwarding {
    peer: Arc<Mutex<Option<courier_runtime::WeakHandle>>>,
    answers: Arc<Mutex<Vec<String>>>,
}

impl Sink for Forwarding {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        let peer = self.peer.lock().expect("not poisoned").clone();
        if line.contains("agent/inbox/spliced")
            && let Some(peer) = peer.and_then(|peer| peer.upgrade())
        {
            let forwarded = peer.inject("forwarded");
            self.answers
                .lock()
                .expect("not poisoned")
                .push(format!("{forwarded:?}"));
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn self_wait_two_agents_whose_sinks_call_each_other_get_inside_sink() {
    let (first_sink, second_sink) = (Forwarding::default(), Forwarding::default());
    let answers = (
        Arc::clone(&first_sink.answers),
        Arc::clone(&second_sink.answers),
    );
    let sent = within_bound(move || {
        let (first, first_driver) = Handle::new(
            "first",
            passing(),
            step_hook_fn(|_| pending::<StepOutcome>()),
            first_sink.clone(),
        );
        let (second, second_driver) = Handle::new(
            "second",
            passing(),
            step_hook_fn(|_| pending::<StepOutcome>()),
            second_sink.clone(),
        );
        *first_sink.peer.lock().expect("not poisoned") = Some(second.downgrade());
        *second_sink.peer.lock().expect("not poisoned") = Some(first.downgrade());
        // The first's sink logs `a` and forwards to the second, whose sink
        // forwards back to the first, whose writer's token this thread
        // holds: that call must be refused, not wait for itself.
        let sent = format!("{:?}", first.inject("a"));
        drop((first_driver, second_driver));
        sent
    });
    assert_eq!(sent.as_deref(), Some("Ok(())"), "the send hung or failed");
    let first = answers.0.lock().expect("not poisoned").clone();
    let second = answers.1.lock().expect("not poisoned").clone();
    assert_eq!(
        (first, second),
        (
            vec!["Ok(())".to_owned()],
            vec!["Err(InsideSink)".to_owned()]
        )
    );
}

#[test]
fn never_panics_write_behind_with_an_endless_window_writes_at_dispose() {
    // The window has no deadline the clock can hold: the journal's thread
    // waits for the close instead of panicking on `now + max_delay`.
    let journal_panics = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&journal_panics);
    // Left installed: it only counts, then does what the hook before it did.
    let chained = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("courier-journal") {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        chained(info);
    }));
    let log = MemoryLog::new();
    let durability = Durability::WriteBehind {
        max_delay: std::time::Duration::MAX,
    };
    let (agent, driver) = Handle::with_durability(
        "wedge",
        durability,
        passing(),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        log.clone(),
    );
    block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("idle", agent.when_idle()).await.expect("served");
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
    // The journal's thread is joined when the agent goes.
    drop(agent);
    assert_eq!(journal_panics.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(turn_ends(&log).len(), 1, "{:?}", log.lines());
}

/// A sink whose lines become durable only when its slow sync ends.
#[derive(Clone, Default)]
struct SlowSync {
    written: Arc<Mutex<Vec<String>>>,
    durable: Arc<Mutex<Vec<String>>>,
}

impl Sink for SlowSync {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.written
            .lock()
            .expect("not poisoned")
            .push(line.to_owned());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let written = std::mem::take(&mut *self.written.lock().expect("not poisoned"));
        self.durable.lock().expect("not poisoned").extend(written);
        Ok(())
    }
}

#[test]
fn sync_when_idle_resolves_once_the_turns_lines_are_durable() {
    // The driver task's completion ends the turn and is still syncing its
    // lines when a fresh waiter finds the agent idle: the waiter waits for
    // that sync (a crash after it resumes the turn as ended).
    let sink = SlowSync::default();
    let durable = Arc::clone(&sink.durable);
    let (agent, driver) = Handle::with_durability(
        "wedge",
        Durability::Sync,
        passing(),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        sink,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("idle", async {
            while !matches!(agent.status(), Ok(Status::Idle)) {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        })
        .await;
        ends("when_idle", agent.when_idle()).await.expect("served");
        let durable = durable.lock().expect("not poisoned").clone();
        assert!(
            durable.iter().any(|line| line.contains("turn/end")),
            "idle, yet the turn's end is not durable: {durable:?}"
        );
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
}
