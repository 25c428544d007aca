//! Issue 15, item 7, as an embedder meets it: a send through the runtime's
//! [`Handle`] in a debug build (the core's invariant checks on) must not
//! cost more with more pending. Counted in bytes allocated on the calling
//! thread by `allocation_counter` (under `Durability::Sync` the caller
//! also writes its lines), not timed.
#![cfg(not(loom))]

use std::future::ready;
use std::io;

use courier_core::{Message, PreStepDecision, Source, StepOutcome, Target};
use courier_runtime::{Event, Handle, Sink, pre_step_hook_fn, step_hook_fn};

/// A sink that keeps nothing, so the log's growth is not counted.
struct Discard;

impl Sink for Discard {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        Ok(())
    }

    fn write_event(&mut self, event: Event<'_>) -> io::Result<()> {
        drop(event.into_output());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn fresh(next: &mut usize, count: usize) -> Vec<Message> {
    let messages = (*next..*next + count)
        .map(|k| Message::text(format!("m-{k:06}").as_str(), Source::user()))
        .collect();
    *next += count;
    messages
}

/// Fills `next-step` to `pending`, then returns the bytes allocated per
/// `inject` over `sends` injects (messages built beforehand).
fn bytes_per_send(agent: &Handle, next: &mut usize, pending: usize, sends: usize) -> u64 {
    while agent.inbox().len() < pending {
        let count = (pending - agent.inbox().len()).min(500);
        let start = agent.inbox().list(Target::NextStep).len();
        let inserted = fresh(next, count);
        agent
            .splice(Target::NextStep, start, 0, inserted)
            .expect("fresh ids are accepted");
    }
    let messages = fresh(next, sends);
    let counted = allocation_counter::measure(|| {
        for message in messages {
            agent.inject(message).expect("a fresh id is accepted");
        }
    });
    counted.bytes_total / sends as u64
}

#[test]
fn debug_cost_a_send_through_the_runtime_does_not_grow_with_pending() {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, _driver) = Handle::new("debug-cost", pre_step_hook, step_hook, Discard);
    let mut next = 0;
    let small = bytes_per_send(&agent, &mut next, 2_000, 512);
    let large = bytes_per_send(&agent, &mut next, 20_000, 512);
    println!("bytes allocated per send: {small} at 2,000 pending, {large} at 20,000");
    assert!(
        large <= 2 * small.max(1024),
        "a send allocates {large} bytes at 20,000 pending, {small} at 2,000"
    );
}
