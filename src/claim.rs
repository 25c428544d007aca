//! The claim cycle: the unit of the claim benchmark (`benches/claim.rs`,
//! BENCHMARKS.md) and of the wire protocol's `bench` line
//! (docs/PROTOCOL.md), so both time, and check, the same thing.
//!
//! From idle back to idle: `inject` all but the last of N messages (no
//! wake: the agent stays idle and they wait in `next-step`), `steer` the
//! last (it wakes: the driver starts and its first boundary claims all N at
//! once), `pre-step pass` (the step opens with N `user/message`s), `step
//! completed` (the turn ends with nothing pending and the agent retires).

use courier_core::{
    Agent, Input, Message, MessageId, Output, PreStepDecision, Refusal, Source, Status, StepOutcome,
};

/// Runs one cycle over `batch` (which it empties), calling `drain` after
/// each input, which must take every output (`Agent::poll_output`) as the
/// calling contract requires. The core refuses none of it; a planted bug
/// may, and so would an empty batch (nothing wakes the agent, so the
/// completions are not awaited).
///
/// Plain loops, not a chain of iterators (each layer of a chain moves the
/// large `Input` once more), and the caller drains, so its loop is compiled
/// where the outputs are dropped: both cost the claim bench instructions.
pub fn run(
    agent: &mut Agent,
    batch: &mut Vec<Message>,
    mut drain: impl FnMut(&mut Agent),
) -> Result<(), Refusal> {
    let last = batch.pop();
    for message in batch.drain(..) {
        agent.handle(Input::inject(message))?;
        drain(agent);
    }
    if let Some(last) = last {
        agent.handle(Input::steer(last))?;
        drain(agent);
    }
    agent.handle(Input::PreStep(PreStepDecision::Pass))?;
    drain(agent);
    agent.handle(Input::Step(StepOutcome::Completed))?;
    drain(agent);
    Ok(())
}

/// `cycles` batches of `count` human text messages, every id distinct
/// (`bench-<cycle>-<index>`), so a log of them repeats no id.
pub fn batches(count: usize, cycles: usize) -> Vec<Vec<Message>> {
    (0..cycles)
        .map(|cycle| {
            (0..count)
                .map(|index| {
                    Message::text(
                        MessageId::new(format!("bench-{cycle}-{index}")),
                        Source::user(),
                    )
                })
                .collect()
        })
        .collect()
}

/// What makes `outputs` (every output of `cycles` cycles of `count`
/// messages, in order) and the agent after them not those cycles, if
/// anything: each cycle has one claim splice taking all `count`, every
/// message is claimed and enters its step, and the agent ends idle with
/// nothing pending.
pub fn wrong(outputs: &[Output], agent: &Agent, count: usize, cycles: usize) -> Option<String> {
    let claims: Vec<usize> = outputs
        .iter()
        .filter_map(|output| {
            let Output::Spliced(splice) = output else {
                return None;
            };
            splice.inserted.is_empty().then_some(splice.removed_count)
        })
        .collect();
    let claimed = outputs
        .iter()
        .filter(|output| matches!(output, Output::Claimed { .. }))
        .count();
    let entered = outputs
        .iter()
        .filter(|output| matches!(output, Output::UserMessage(_)))
        .count();
    let messages = count * cycles;
    if claims != vec![count; cycles] {
        Some(format!(
            "claims of {claims:?} in {cycles} cycles of {count}"
        ))
    } else if claimed != messages {
        Some(format!("{claimed} claimed of {messages}"))
    } else if entered != messages {
        Some(format!("{entered} user/message of {messages}"))
    } else if agent.status() != Status::Idle {
        Some("the agent is running after the cycles".to_owned())
    } else if !agent.inbox().is_empty() {
        Some("messages left pending after the cycles".to_owned())
    } else {
        None
    }
}
