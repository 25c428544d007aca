//! Issue 15, item 7: a debug build's invariant check must not cost each
//! input a sweep of everything pending. Counted in bytes the check
//! allocates (its sweep builds sets over the pending ids), not timed: the
//! bytes a send allocates must not grow with the number of messages pending.
//! `allocation_counter` counts the bytes this thread allocates (other
//! tests' threads do not disturb the count).

use courier_core::{Agent, Input, Message, Source, Target};

/// `count` fresh messages, numbered from `*next`.
fn fresh(next: &mut usize, count: usize) -> Vec<Message> {
    let messages = (*next..*next + count)
        .map(|k| Message::text(format!("m-{k:06}").as_str(), Source::user()))
        .collect();
    *next += count;
    messages
}

/// Fills `agent`'s `next-step` to `pending` messages with splices of a
/// few hundred, then returns the bytes allocated per `inject` over `sends`
/// injects (messages built beforehand, outputs drained).
fn bytes_per_send(agent: &mut Agent, next: &mut usize, pending: usize, sends: usize) -> u64 {
    while agent.inbox().len() < pending {
        let count = (pending - agent.inbox().len()).min(500);
        let start = agent.inbox().list(Target::NextStep).len();
        let inserted = fresh(next, count);
        let splice = Input::Splice {
            target: Target::NextStep,
            start,
            removed: 0,
            inserted,
        };
        agent.handle(splice).expect("fresh ids are accepted");
        while agent.poll_output().is_some() {}
    }
    let messages = fresh(next, sends);
    let counted = allocation_counter::measure(|| {
        for message in messages {
            agent
                .handle(Input::inject(message))
                .expect("a fresh id is accepted");
            while agent.poll_output().is_some() {}
        }
    });
    counted.bytes_total / sends as u64
}

#[test]
fn debug_cost_per_send_does_not_grow_with_pending() {
    let (mut agent, mut next) = (Agent::new(), 0);
    let small = bytes_per_send(&mut agent, &mut next, 2_000, 512);
    let large = bytes_per_send(&mut agent, &mut next, 20_000, 512);
    println!("bytes allocated per send: {small} at 2,000 pending, {large} at 20,000");
    // Before the fix a debug build swept every pending id per send: 20,000
    // pending cost about ten times 2,000. Amortized, the two are alike.
    assert!(
        large <= 2 * small.max(1024),
        "a send allocates {large} bytes at 20,000 pending, {small} at 2,000"
    );
}
