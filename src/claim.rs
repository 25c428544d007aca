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

/// The inputs of one cycle over `batch`, which they empty. An empty batch
/// has no cycle: its completions would be refused (nothing is awaited).
pub fn inputs(batch: &mut Vec<Message>) -> impl Iterator<Item = Input> + '_ {
    let last = batch.pop().map(Input::steer);
    batch.drain(..).map(Input::inject).chain(last).chain([
        Input::PreStep(PreStepDecision::Pass),
        Input::Step(StepOutcome::Completed),
    ])
}

/// Runs one cycle over `batch` (which it empties), handing every output to
/// `sink` as soon as its input is handled, as the calling contract requires.
/// The core refuses none of it; a planted bug may.
pub fn run(
    agent: &mut Agent,
    batch: &mut Vec<Message>,
    mut sink: impl FnMut(Output),
) -> Result<(), Refusal> {
    for input in inputs(batch) {
        agent.handle(input)?;
        while let Some(output) = agent.poll_output() {
            sink(output);
        }
    }
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
