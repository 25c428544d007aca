//! Embedding `courier-runtime` in a tokio program: a [`Handle`] with a
//! pre-step hook and a step hook of its own, the [`DriverTask`] spawned on
//! the program's runtime, a followup, a steer while a step is in flight,
//! `when_idle`, the durable log, and dispose.
//!
//! The step hook stands in for an LLM call. It reports each step it enters
//! and waits for the program's go-ahead before answering, so the program
//! knows the step is in flight when it steers: no sleeps, so the run is
//! deterministic (one thread) and takes milliseconds. The asserts pin the
//! turn and step structure, so running the example checks it.
//!
//! `cargo run -p courier-runtime --example embed`

use std::future::ready;

use courier_core::{
    Message, MessageId, Output, PreStepDecision, Source, Status, StepOutcome, TurnEnd,
};
use courier_runtime::{
    Boundary, DriverTask, Handle, MemoryLog, PreStepHook, StepCall, StepHook, pre_step_hook_fn,
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The step hook: a fake LLM that asks for a tool in a turn's first step
/// (`tool-calls`, so the turn owes another step) and gives its final answer
/// (`completed`) in the next.
struct FakeLlm {
    /// Each step as it begins, for the program to see.
    entered: UnboundedSender<StepCall>,
    /// One go-ahead per step: the program answers when it has done what it
    /// wanted to do during the step.
    go_ahead: UnboundedReceiver<()>,
}

impl StepHook for FakeLlm {
    async fn step(&mut self, call: StepCall) -> StepOutcome {
        let first = call.step == 1;
        self.entered
            .send(call)
            .expect("the program watches the steps");
        let go_ahead = self.go_ahead.recv().await;
        go_ahead.expect("the program answers every step");
        if first {
            StepOutcome::ToolCalls
        } else {
            StepOutcome::Completed
        }
    }
}

/// The program's side of [`FakeLlm`].
struct Steps {
    entered: UnboundedReceiver<StepCall>,
    go_ahead: UnboundedSender<()>,
}

impl Steps {
    /// Waits for the next step to begin and returns its turn, step and the
    /// ids that entered it.
    async fn next(&mut self) -> (u64, u64, Vec<String>) {
        let call = self.entered.recv().await.expect("the step hook lives");
        let ids = call.entered.iter().map(|m| m.id().to_string()).collect();
        (call.turn, call.step, ids)
    }

    /// Lets the step in flight answer.
    fn answer(&self) {
        self.go_ahead.send(()).expect("the step hook listens");
    }
}

/// The pre-step hook: at a turn's first boundary it adds a context message
/// after the claimed batch (what a plugin would inject); later boundaries
/// pass their batch as is.
fn with_context(boundary: Boundary) -> PreStepDecision {
    if boundary.step > 0 {
        return PreStepDecision::Pass;
    }
    let context = format!("context.{}", boundary.turn);
    let mut entering = boundary.batch;
    entering.push(Message::text(context.as_str(), Source::plugin("embed")));
    PreStepDecision::Enter(entering)
}

fn build(log: &MemoryLog) -> (Handle, DriverTask<impl PreStepHook, FakeLlm>, Steps) {
    let (entered_sender, entered) = unbounded_channel();
    let (go_ahead, go_ahead_receiver) = unbounded_channel();
    let step_hook = FakeLlm {
        entered: entered_sender,
        go_ahead: go_ahead_receiver,
    };
    let pre_step_hook = pre_step_hook_fn(|boundary| ready(with_context(boundary)));
    let (handle, driver) = Handle::new("embed", pre_step_hook, step_hook, log.clone());
    (handle, driver, Steps { entered, go_ahead })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let log = MemoryLog::new();
    let (handle, driver, mut steps) = build(&log);
    let mut notifications = handle.subscribe();
    let driver = tokio::spawn(driver.run());

    handle.followup("question").expect("a fresh id");
    let first = steps.next().await;
    assert_eq!(first, (1, 1, vec!["question".into(), "context.1".into()]));
    // Step 1.1 is in flight: the steer waits for the turn's next step.
    handle.steer("steer").expect("a fresh id");
    assert!(handle.inbox().contains(&MessageId::from("steer")));
    steps.answer();
    let second = steps.next().await;
    assert_eq!(second, (1, 2, vec!["steer".into()]));
    steps.answer();
    handle.when_idle().await.expect("the driver task runs");
    assert_eq!(handle.status().expect("served"), Status::Idle);
    assert!(handle.inbox().is_empty(), "everything was claimed");

    let outputs: Vec<Output> = std::iter::from_fn(|| notifications.try_recv()).collect();
    check_structure(&outputs);
    println!("# live and durable outputs, in emission order (~ live)");
    for output in &outputs {
        println!("  {output}");
    }
    handle.dispose().await.expect("a memory log never fails");
    drop(handle);
    driver.await.expect("the driver task ends once disposed");

    let lines = log.lines();
    println!("# the durable session log (JSONL)");
    for line in &lines {
        println!("{line}");
    }
    let durable = outputs.iter().filter(|output| output.is_durable()).count();
    // The header, the turn's durable outputs, and nothing from dispose: the
    // inbox was empty and no turn was running.
    assert_eq!(lines.len(), 1 + durable, "the log is the durable outputs");
}

/// One turn of two steps that ends `completed`, and one `idle`.
fn check_structure(outputs: &[Output]) {
    let mut turns = Vec::new();
    let mut steps = Vec::new();
    let mut ends = Vec::new();
    let mut idles = 0;
    for output in outputs {
        match output {
            Output::TurnStart { turn } => turns.push(*turn),
            Output::StepStart { turn, step } => steps.push((*turn, *step)),
            Output::TurnEnd { turn, reason } => ends.push((*turn, reason.clone())),
            Output::Idle => idles += 1,
            // Inbox traffic, entered messages and status: not structure.
            Output::Spliced(_)
            | Output::UserMessage(_)
            | Output::StepEnd { .. }
            | Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. } => {}
        }
    }
    assert_eq!(turns, [1]);
    assert_eq!(steps, [(1, 1), (1, 2)]);
    assert_eq!(ends, [(1, TurnEnd::Completed)]);
    assert_eq!(idles, 1, "one waiter, resolved once");
}
