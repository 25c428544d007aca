//! Issue 15's failure paths once more, each as the next variant an embedder
//! writes: a hook that panics with a payload that is not a string, a hook
//! whose future panics when a cancel drops it, a hook that keeps the last
//! handle, a cancel from inside a subscriber, a stream whose driver task
//! was aborted, a wait on the agent inside its pre-step hook, and a dispose
//! racing sends from other threads on a multi-thread runtime. Each ends in
//! an answer (a hang shows as a bounded wait failing, never a timing), no
//! accepted send is lost, and every log validates.
#![cfg(not(loom))]

mod common;

use common::{ends, passing};
use std::future::{pending, ready};
use std::io::BufReader;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier_check::validate::validate;
use courier_core::{CancelCause, Output, PreStepDecision, StepOutcome, Target};
use courier_runtime::{
    Boundary, Error, Handle, Hook, MemoryLog, StepCall, pre_step_hook_fn, step_hook_fn,
};

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

fn assert_valid(log: &MemoryLog) {
    let text = log.lines().join("\n") + "\n";
    let mut findings = Vec::new();
    let summary = validate(BufReader::new(text.as_bytes()), |finding| {
        findings.push(finding);
    });
    assert!(summary.expect("readable").is_valid(), "{findings:?}");
}

/// Returns once `log` has a `step/start`.
async fn step_started(log: &MemoryLog) {
    ends("the step", async {
        while !log.lines().iter().any(|line| line.contains("step/start")) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

fn turn_ends(log: &MemoryLog) -> Vec<String> {
    let lines = log.lines().into_iter();
    lines.filter(|line| line.contains("turn/end")).collect()
}

#[test]
fn dead_driver_a_hook_panicking_with_a_non_string_payload_fails_its_step() {
    let log = MemoryLog::new();
    let step_hook = step_hook_fn(|call: StepCall| async move {
        if call.turn == 1 {
            std::panic::panic_any(42_u32);
        }
        StepOutcome::Completed
    });
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, log.clone());
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the failed turn", agent.when_idle())
            .await
            .expect("served");
        agent.followup("b").expect("accepted after the panic");
        ends("the next turn", agent.when_idle())
            .await
            .expect("served");
        let panics = agent.hook_panics();
        assert_eq!(panics.len(), 1, "{panics:?}");
        assert_eq!(panics[0].hook, Hook::Step);
        assert!(
            panics[0].message.contains("not a string"),
            "{:?}",
            panics[0].message
        );
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
    let ends = turn_ends(&log);
    assert!(
        ends[0].contains("\"error\"") && ends[1].contains("\"completed\""),
        "{ends:?}"
    );
    assert_valid(&log);
}

/// Panics when dropped, as a user's guard in a hook's future may.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("the connection pool's guard broke");
        }
    }
}

#[test]
fn dead_driver_a_hook_future_that_panics_when_a_cancel_drops_it_leaves_the_agent_serving() {
    let log = MemoryLog::new();
    let step_hook = step_hook_fn(|call: StepCall| async move {
        if call.turn == 1 {
            let _guard = PanicsOnDrop;
            pending::<()>().await;
        }
        StepOutcome::Completed
    });
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, log.clone());
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        step_started(&log).await;
        agent.cancel(CancelCause::User, true).expect("cancelled");
        ends("the aborted turn", agent.when_idle())
            .await
            .expect("served");
        agent.followup("b").expect("accepted");
        ends("the next turn", agent.when_idle())
            .await
            .expect("served");
        let panics = agent.hook_panics();
        assert_eq!(panics.len(), 1, "{panics:?}");
        assert_eq!(panics[0].message, "the connection pool's guard broke");
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
    let ends = turn_ends(&log);
    assert!(
        ends[0].contains("aborted") && ends[1].contains("\"completed\""),
        "{ends:?}"
    );
    assert_valid(&log);
}

#[test]
fn weak_handle_a_hook_holding_the_last_handle_disposes_the_agent_when_it_lets_go() {
    let log = MemoryLog::new();
    let (released, release) = tokio::sync::oneshot::channel::<()>();
    let release = Arc::new(Mutex::new(Some(release)));
    let step_hook = step_hook_fn(move |call: StepCall| {
        let release = release.lock().expect("not poisoned").take();
        async move {
            let agent = call.agent.upgrade().expect("the user's handle is alive");
            if let Some(release) = release {
                // The user drops its handle meanwhile: this one is the last.
                drop(release.await);
            }
            agent
                .inject("tool-result")
                .expect("the agent is still alive");
            drop(agent);
            StepOutcome::ToolCalls
        }
    });
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, log.clone());
    let weak = agent.downgrade();
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("question").expect("accepted");
        step_started(&log).await;
        drop(agent);
        drop(released);
        ends("the driver task after the hook's handle", task)
            .await
            .expect("no panic");
    });
    assert!(weak.upgrade().is_none(), "the agent is gone for good");
    let ends = turn_ends(&log);
    assert!(ends.len() == 1 && ends[0].contains("aborted"), "{ends:?}");
    assert_valid(&log);
}

#[test]
fn bounded_subscription_a_subscriber_that_cancels_what_it_reads_ends_the_turn() {
    let log = MemoryLog::new();
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, log.clone());
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        let mut outputs = agent.subscribe_bounded(NonZeroUsize::new(2).expect("non-zero"));
        let canceller = agent.clone();
        let subscriber = tokio::spawn(async move {
            while let Some(read) = outputs.recv().await {
                if let Ok(Output::StepStart { .. }) = read {
                    canceller
                        .cancel(CancelCause::User, false)
                        .expect("cancelled");
                }
            }
        });
        for round in 0..3 {
            agent
                .followup(format!("m{round}").as_str())
                .expect("accepted");
            ends("the cancelled turn", agent.when_idle())
                .await
                .expect("served");
        }
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
        ends("the subscriber's stream", subscriber)
            .await
            .expect("no panic");
    });
    let ends = turn_ends(&log);
    assert_eq!(ends.len(), 3, "{ends:?}");
    assert!(ends.iter().all(|end| end.contains("aborted")), "{ends:?}");
    assert_valid(&log);
}

#[test]
fn stream_end_an_aborted_driver_task_ends_every_stream() {
    let step_hook = step_hook_fn(|_| pending::<StepOutcome>());
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, MemoryLog::new());
    multi_thread().block_on(async {
        let mut lossless = agent.subscribe();
        let mut bounded = agent.subscribe_bounded(NonZeroUsize::new(8).expect("non-zero"));
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        while ends("a step", lossless.recv()).await != Some(Output::StepStart { turn: 1, step: 1 })
        {
        }
        task.abort();
        assert!(task.await.is_err(), "the task was cancelled");
        while ends("the lossless stream", lossless.recv()).await.is_some() {}
        while ends("the bounded stream", bounded.recv()).await.is_some() {}
        assert!(
            agent.subscribe().recv().await.is_none(),
            "a late one starts ended"
        );
    });
}

#[test]
fn self_wait_when_idle_inside_the_agents_own_pre_step_hook_is_an_error() {
    let answers = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::clone(&answers);
    let pre_step_hook = pre_step_hook_fn(move |boundary: Boundary| {
        let answered = Arc::clone(&answered);
        async move {
            let agent = boundary.agent.upgrade().expect("alive");
            let waited = agent.when_idle().await;
            answered
                .lock()
                .expect("not poisoned")
                .push(matches!(waited, Err(Error::InsideHook)));
            PreStepDecision::Pass
        }
    });
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("embedder", pre_step_hook, step_hook, MemoryLog::new());
    multi_thread().block_on(async {
        tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
    });
    let answers = answers.lock().expect("not poisoned");
    assert!(
        !answers.is_empty() && answers.iter().all(|inside| *inside),
        "{answers:?}"
    );
}

/// Two threads send while a third disposes, on a multi-thread runtime:
/// every send either returns `Ok` and is in the log (then discarded by
/// the disposal or claimed by a turn), or is refused as disposed; the
/// driver task ends and the log validates. Seeded rounds, no timing.
#[test]
fn dead_driver_a_dispose_racing_sends_from_other_threads_loses_no_send() {
    let runtime = multi_thread();
    for round in 0..50 {
        let log = MemoryLog::new();
        let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
        let (agent, driver) = Handle::new("race", passing(), step_hook, log.clone());
        let accepted = runtime.block_on(async {
            let task = tokio::spawn(driver.run());
            let senders: Vec<_> = (0..2)
                .map(|thread| {
                    let agent = agent.clone();
                    std::thread::spawn(move || {
                        let mut accepted = Vec::new();
                        for n in 0..200 {
                            let id = format!("r{round}-t{thread}-{n}");
                            let target = if n % 2 == 0 {
                                Target::NextTurn
                            } else {
                                Target::NextStep
                            };
                            match agent.send(id.as_str(), target, courier_core::Wakeup::Wake) {
                                Ok(()) => accepted.push(id),
                                Err(Error::Refused(courier_core::Refusal::Disposed(_))) => break,
                                Err(other) => panic!("{id}: {other}"),
                            }
                        }
                        accepted
                    })
                })
                .collect();
            tokio::time::sleep(Duration::from_micros(50 * (round % 7))).await;
            ends("dispose", agent.dispose()).await.expect("written");
            ends("the driver task", task).await.expect("no panic");
            senders
                .into_iter()
                .flat_map(|sender| sender.join().expect("no panic"))
                .collect::<Vec<_>>()
        });
        let text = log.lines().join("\n");
        for id in &accepted {
            assert!(
                text.contains(&format!("\"id\":\"{id}\"")),
                "round {round}: {id} was accepted but never logged"
            );
        }
        assert_valid(&log);
    }
}

/// The self-wait diagnosis is made inside the hook's own poll: a wait the
/// hook hands to another task is an ordinary wait, which resolves once the
/// turn ends some other way (here a cancel from outside).
#[test]
fn self_wait_a_wait_handed_to_another_task_resolves_when_the_turn_is_cancelled() {
    type Waiting = tokio::task::JoinHandle<Result<(), Error>>;
    let slot: Arc<Mutex<Option<Waiting>>> = Arc::new(Mutex::new(None));
    let filled = Arc::clone(&slot);
    let step_hook = step_hook_fn(move |call: StepCall| {
        let agent = call.agent.upgrade().expect("alive");
        let waiting = tokio::spawn(async move { agent.when_idle().await });
        *filled.lock().expect("not poisoned") = Some(waiting);
        pending::<StepOutcome>()
    });
    let (agent, driver) = Handle::new("embedder", passing(), step_hook, MemoryLog::new());
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the hook", async {
            while slot.lock().expect("not poisoned").is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        let waiting = slot.lock().expect("not poisoned").take().expect("filled");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the turn is still running");
        agent.cancel(CancelCause::User, true).expect("cancelled");
        let waited = ends("the handed-off wait", waiting)
            .await
            .expect("no panic");
        assert!(waited.is_ok(), "{waited:?}");
        ends("dispose", agent.dispose()).await.expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
}

/// A hook that is `Send` but not `Sync` (a `Cell`, a std `Receiver`): its
/// driver task still spawns on a multi-thread runtime, since `run`'s future
/// holds no reference to the task across a wait. Before, `tokio::spawn`
/// did not compile for such hooks (the future borrowed the task).
#[test]
fn hooks_that_are_not_sync_still_spawn_on_a_multi_thread_runtime() {
    struct Counting {
        calls: std::cell::Cell<u32>,
    }
    impl courier_runtime::PreStepHook for Counting {
        fn decide(
            &mut self,
            _boundary: Boundary,
        ) -> impl std::future::Future<Output = PreStepDecision> + Send {
            self.calls.set(self.calls.get() + 1);
            ready(PreStepDecision::Pass)
        }
    }
    let (calls, counted) = std::sync::mpsc::channel::<u64>();
    let step_hook = step_hook_fn(move |call: StepCall| {
        let sent = calls.send(call.turn);
        ready(if sent.is_ok() {
            StepOutcome::Completed
        } else {
            StepOutcome::Fail
        })
    });
    let pre_step_hook = Counting {
        calls: std::cell::Cell::new(0),
    };
    let log = MemoryLog::new();
    let (agent, driver) = Handle::new("not-sync", pre_step_hook, step_hook, log.clone());
    multi_thread().block_on(async {
        let task = tokio::spawn(driver.run());
        agent.followup("a").expect("accepted");
        ends("the turn", agent.when_idle()).await.expect("served");
        ends("the disposal", agent.dispose())
            .await
            .expect("written");
        ends("the driver task", task).await.expect("no panic");
    });
    assert_eq!(counted.try_iter().collect::<Vec<_>>(), [1]);
    assert_valid(&log);
}
