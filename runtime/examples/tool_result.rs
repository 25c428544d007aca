//! A tool whose result goes back into the agent mid-step, from inside the
//! step hook, without the hook keeping the agent alive.
//!
//! Every hook call carries a [`WeakHandle`] (`StepCall::agent`). The step
//! hook below plays an LLM that calls a tool in a turn's first step: it
//! upgrades the weak handle for the length of the call, injects the tool's
//! result (`inject` = next-step, no wake, so it enters the very next step of
//! this turn), and answers `tool-calls`. The next step sees the result and
//! the model answers `completed`.
//!
//! Because the hook holds no strong handle between calls, dropping the
//! program's last handle disposes the agent and ends the driver task, which
//! flushes the log; a strong handle stored in the hook (a late-filled slot)
//! would keep both alive forever.
//!
//! `cargo run -p courier-runtime --example tool_result`

use std::future::ready;

use courier_core::{Message, PreStepDecision, Source, StepOutcome};
use courier_runtime::{Handle, MemoryLog, StepCall, WeakHandle, pre_step_hook_fn, step_hook_fn};
use serde_json::json;

/// The fake LLM's one step: call the tool first, answer once its result is in.
fn step(call: StepCall) -> StepOutcome {
    let ids: Vec<&str> = call.entered.iter().map(|m| m.id().as_str()).collect();
    println!("turn {} step {} entered {ids:?}", call.turn, call.step);
    if call.step > 1 {
        return StepOutcome::Completed;
    }
    run_tool(&call.agent, call.turn);
    StepOutcome::ToolCalls
}

/// Runs the "tool" and injects its result into the agent's next step.
fn run_tool(agent: &WeakHandle, turn: u64) {
    let Some(agent) = agent.upgrade() else {
        // The program dropped its last handle: nobody wants the result.
        return;
    };
    let result = Message::new(
        format!("tool-result-{turn}").as_str().into(),
        json!({"tool": "clock", "output": "12:00"}),
        Source::plugin("clock"),
    );
    agent.inject(result).expect("the agent takes the result");
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let log = MemoryLog::new();
    let (agent, driver) = Handle::new(
        "tool-result",
        pre_step_hook_fn(|_| ready(PreStepDecision::Pass)),
        step_hook_fn(|call| ready(step(call))),
        log.clone(),
    );
    let driver = tokio::spawn(driver.run());
    agent.followup("what time is it?").expect("accepted");
    agent.when_idle().await.expect("the driver task runs");

    // The program's last handle goes: the agent is disposed and the driver
    // task ends, though the hook could still reach the agent.
    drop(agent);
    driver.await.expect("the driver task ended");

    let lines = log.lines();
    let entered: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("user/message"))
        .collect();
    assert_eq!(entered.len(), 2, "the question, then the tool's result");
    assert!(entered[1].contains("tool-result-1"), "{}", entered[1]);
    println!(
        "log: {} lines, ending {}",
        lines.len(),
        lines[lines.len() - 1]
    );
}
