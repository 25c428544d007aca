//! The core's inbox under inputs that look an id up in a long list (issue 16
//! §3, stay linear): a `remove` or `replace` per input, duplicates of a
//! pending id refused per input, and a step entering every message of a
//! long claim. Each used to scan a list per id, so 100,000 removes from the
//! end of a long inbox took 56 s.
//!
//! Nothing is timed: a debug build counts the items lookups visit
//! (`courier_core::pending::lookup_visits`), and each case bounds them per
//! input (a scan per input visits half the list, 5,000 ids, where a
//! lookup in the indexed treap walks a few dozen). Each case also checks
//! every answer and the lists left. The `#[ignore]`d million-id run is the
//! size a scan per input cannot finish (`cargo test --release --test
//! linear_inbox -- --ignored`).

use courier_core::{
    Agent, Input, Message, Output, PreStepDecision, Refusal, Source, Status, Target, Wakeup,
};

/// Pending messages per case in CI.
const PENDING: usize = 10_000;

/// The items a lookup may visit, on average, in an indexed list of
/// [`PENDING`] ids: its hash's chain and the walk up a treap of expected
/// depth about 2 ln n (about 18 here), with room to spare.
const VISITS_PER_INPUT: u64 = 100;

/// Runs `case` and checks the items its lookups visited stay within
/// [`VISITS_PER_INPUT`] per input of its `inputs` (debug builds count them).
fn bounded(inputs: usize, case: impl FnOnce()) {
    let before = visits();
    case();
    if let (Some(before), Some(after)) = (before, visits()) {
        let bound = VISITS_PER_INPUT * inputs as u64;
        let visits = after - before;
        assert!(visits <= bound, "{visits} items visited, more than {bound}");
    }
}

/// The items this thread's lookups have visited, if this build counts them.
fn visits() -> Option<u64> {
    #[cfg(debug_assertions)]
    return Some(courier_core::pending::lookup_visits());
    #[cfg(not(debug_assertions))]
    None
}

fn message(id: &str) -> Message {
    Message::text(id, Source::user())
}

/// The input's result, its outputs drained as the calling contract asks.
fn handle(agent: &mut Agent, input: Input) -> Result<(), Refusal> {
    let result = agent.handle(input);
    while agent.poll_output().is_some() {}
    result
}

/// An idle agent with `m0`..`m<count-1>` pending in `next-step` (injected:
/// appended at the end, so the list stays a deque).
fn injected(count: usize) -> Agent {
    let mut agent = Agent::new();
    for k in 0..count {
        let input = Input::inject(message(&format!("m{k}")));
        assert_eq!(handle(&mut agent, input), Ok(()));
    }
    agent
}

fn pending(agent: &Agent, target: Target) -> Vec<String> {
    let list = agent.inbox().list(target).iter();
    list.map(|message| message.id().as_str().to_owned())
        .collect()
}

/// Removes every id, the last first: the list is a deque until the first
/// lookup (it was only appended to).
fn removes_from_the_end(count: usize) {
    let mut agent = injected(count);
    for k in (0..count).rev() {
        let id = format!("m{k}");
        let input = Input::Remove {
            id: id.as_str().into(),
        };
        assert_eq!(handle(&mut agent, input), Ok(()), "remove {id}");
    }
    assert!(agent.inbox().is_empty());
    let gone = Input::Remove { id: "m0".into() };
    assert_eq!(
        handle(&mut agent, gone),
        Err(Refusal::NotPending("m0".into()))
    );
}

#[test]
fn stay_linear_removes_from_the_end_of_a_long_inbox() {
    bounded(2 * PENDING, || removes_from_the_end(PENDING));
}

#[test]
#[ignore = "a million ids: run in release (see the module's comment)"]
fn stay_linear_a_million_removes_from_the_end() {
    removes_from_the_end(1_000_000);
}

#[test]
fn stay_linear_removes_and_replaces_all_over_a_long_inbox() {
    bounded(PENDING + PENDING / 3 * 2, || {
        let mut agent = injected(PENDING);
        // Every third id replaced, every third removed, from the middle out.
        let mut model: Vec<Option<String>> = (0..PENDING).map(|k| Some(format!("m{k}"))).collect();
        let order = (0..PENDING / 2).flat_map(|d| [PENDING / 2 + d, PENDING / 2 - 1 - d]);
        for k in order {
            let id = format!("m{k}");
            let input = match k % 3 {
                0 => Input::Remove {
                    id: id.as_str().into(),
                },
                1 => Input::Replace {
                    id: id.as_str().into(),
                    message: message(&format!("r{k}")),
                },
                _ => continue,
            };
            assert_eq!(handle(&mut agent, input), Ok(()), "{id}");
            model[k] = (k % 3 == 1).then(|| format!("r{k}"));
        }
        let model: Vec<String> = model.into_iter().flatten().collect();
        assert_eq!(pending(&agent, Target::NextStep), model);
    });
}

#[test]
fn stay_linear_duplicates_of_the_last_pending_id_are_refused() {
    bounded(2 * PENDING, || {
        let mut agent = injected(PENDING);
        let last = format!("m{}", PENDING - 1);
        let duplicate = Refusal::DuplicateId(last.as_str().into());
        for k in 0..PENDING {
            let input = match k % 4 {
                0 => Input::inject(message(&last)),
                1 => Input::send(message(&last), Target::NextTurn, Wakeup::NoWake),
                2 => Input::Append {
                    target: Target::NextTurn,
                    message: message(&last),
                },
                _ => Input::Splice {
                    target: Target::NextTurn,
                    start: 0,
                    removed: 0,
                    inserted: vec![message(&last)],
                },
            };
            assert_eq!(
                handle(&mut agent, input),
                Err(duplicate.clone()),
                "input {k}"
            );
        }
        assert!(agent.inbox().list(Target::NextTurn).is_empty());
        assert_eq!(agent.inbox().len(), PENDING);
        assert_eq!(pending(&agent, Target::NextStep).last(), Some(&last));
    });
}

/// A step that enters every message of a long claim, in reverse: each
/// entering id is matched to its claimed occurrence through an index, not
/// a scan of the batch per id.
#[test]
fn stay_linear_a_step_enters_every_message_of_a_long_claim() {
    bounded(PENDING + 2, || {
        let mut agent = injected(PENDING);
        assert_eq!(handle(&mut agent, Input::followup(message("A"))), Ok(()));
        assert_eq!(agent.claimed().map(<[Message]>::len), Some(PENDING + 1));
        let ids = (0..PENDING).rev().map(|k| format!("m{k}"));
        let entering: Vec<Message> = ids.chain(["A".to_owned()]).map(|id| message(&id)).collect();
        let decision = Input::PreStep(PreStepDecision::Enter(entering));
        assert_eq!(agent.handle(decision), Ok(()));
        let admitted: Vec<String> = std::iter::from_fn(|| agent.poll_output())
            .filter_map(|output| {
                let Output::UserMessage(message) = output else {
                    return None;
                };
                Some(message.id().as_str().to_owned())
            })
            .collect();
        let expected: Vec<String> = (0..PENDING).rev().map(|k| format!("m{k}")).collect();
        assert_eq!(admitted[..PENDING], expected);
        assert_eq!(admitted[PENDING..], ["A"]);
        let status = agent.status();
        assert!(
            matches!(status, Status::Running { step: 1, .. }),
            "{status:?}"
        );
    });
}
