//! The splice primitive over many ids (issue 16: it was quadratic in the
//! ids it inserts): the refusals name the same first offending id as
//! before, and a middle insertion keeps list order.

use courier_core::{Agent, Input, Message, MessageId, Refusal, Source, Target};

fn messages(ids: &[&str]) -> Vec<Message> {
    ids.iter()
        .map(|id| Message::text(*id, Source::user()))
        .collect()
}

fn splice(agent: &mut Agent, start: usize, removed: usize, ids: &[&str]) -> Result<(), Refusal> {
    let inserted = messages(ids);
    let input = Input::Splice {
        target: Target::NextTurn,
        start,
        removed,
        inserted,
    };
    let answer = agent.handle(input);
    while agent.poll_output().is_some() {}
    answer
}

fn listed(agent: &Agent) -> Vec<&str> {
    let list = agent.inbox().list(Target::NextTurn);
    list.iter().map(|m| m.id().as_str()).collect()
}

fn duplicate(id: &str) -> Result<(), Refusal> {
    Err(Refusal::DuplicateId(MessageId::from(id)))
}

#[test]
fn splice_inserts_in_the_middle_in_order_and_refuses_naming_the_first_repeat() {
    let mut agent = Agent::new();
    assert_eq!(splice(&mut agent, 0, 0, &["A", "B", "C"]), Ok(()));
    // Replacing B by itself, between two fresh ids, is fine.
    assert_eq!(splice(&mut agent, 1, 1, &["X", "B", "Y"]), Ok(()));
    assert_eq!(listed(&agent), ["A", "X", "B", "Y", "C"]);
    // The first id seen twice in the list as it would stand (SPEC §10: checked
    // after it is applied), whichever way it repeats.
    assert_eq!(
        splice(&mut agent, 0, 0, &["P", "Q", "P", "A"]),
        duplicate("P")
    );
    assert_eq!(
        splice(&mut agent, 0, 0, &["P", "C", "Q", "Q"]),
        duplicate("Q")
    );
    // A removed id may come back; one left pending outside the range may not.
    assert_eq!(splice(&mut agent, 0, 2, &["X", "A", "B"]), duplicate("B"));
    assert_eq!(listed(&agent), ["A", "X", "B", "Y", "C"]);
    assert_eq!(splice(&mut agent, 4, 5, &["Z", "C"]), Ok(()));
    assert_eq!(listed(&agent), ["A", "X", "B", "Y", "Z", "C"]);
    agent.check_invariants();
}

#[test]
fn splice_of_many_ids_into_a_long_list() {
    let ids: Vec<String> = (0..20_000).map(|k| format!("m-{k:05}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (front, back) = ids.split_at(10_000);
    let mut agent = Agent::new();
    assert_eq!(splice(&mut agent, 0, 0, back), Ok(()));
    assert_eq!(splice(&mut agent, 0, 0, front), Ok(()));
    assert_eq!(listed(&agent), ids);
    // Every id back in place of itself, then once more on top: refused.
    assert_eq!(splice(&mut agent, 0, 20_000, &ids), Ok(()));
    assert_eq!(
        splice(&mut agent, 20_000, 0, &ids[19_999..]),
        duplicate("m-19999")
    );
    agent.check_invariants();
}

/// An append (its own fast path: one index probe) answers, emits and leaves
/// the inbox exactly as the general splice that inserts the same message at
/// the end of the list, refusals included: an id pending in either list, and
/// any insertion once disposed.
#[test]
fn an_append_is_the_splice_at_the_end_of_its_list() {
    let (mut appended, mut spliced) = (Agent::new(), Agent::new());
    let steps = [
        ("A", Target::NextTurn),
        ("B", Target::NextStep),
        ("A", Target::NextStep),
        ("B", Target::NextTurn),
        ("C", Target::NextTurn),
        ("C", Target::NextTurn),
    ];
    let mut refused = 0;
    for (id, target) in steps {
        let message = Message::text(id, Source::user());
        let end = spliced.inbox().list(target).len();
        let append = appended.handle(Input::Append {
            target,
            message: message.clone(),
        });
        let splice = spliced.handle(Input::Splice {
            target,
            start: end,
            removed: 0,
            inserted: vec![message],
        });
        refused += usize::from(append.is_err());
        assert_eq!(append, splice, "{id} to {target:?}");
        let outputs: Vec<_> = std::iter::from_fn(|| appended.poll_output()).collect();
        let expected: Vec<_> = std::iter::from_fn(|| spliced.poll_output()).collect();
        assert_eq!(outputs, expected, "{id} to {target:?}");
        assert_eq!(appended.inbox(), spliced.inbox(), "{id} to {target:?}");
        appended.check_invariants();
    }
    assert_eq!(refused, 3, "each repeated id is refused");
    assert_eq!(listed(&appended), ["A", "C"]);
    for agent in [&mut appended, &mut spliced] {
        assert_eq!(agent.handle(Input::Dispose), Ok(()));
        while agent.poll_output().is_some() {}
    }
    let append = appended.handle(Input::Append {
        target: Target::NextTurn,
        message: Message::from("D"),
    });
    assert_eq!(append, Err(Refusal::Disposed(MessageId::from("D"))));
    assert_eq!(appended.poll_output(), None, "a refusal emits nothing");
}
