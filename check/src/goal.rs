//! `goal-rounds`, a log-only check: positive goal rounds fold from admitted
//! `user/message` events (the seed: "a positive round advances only from an
//! admitted continuation user/message").
//!
//! Rule: for each `goalId`, the admitted goal messages with `round >= 1` carry
//! rounds 1, 2, 3, ... in log order, each exactly one more than the previous
//! positive round of that goal. The first positive round must be 1, as in
//! every recorded dsh goal log (`goal-goal-round-driver`: rounds 1 then 2 in
//! turns 2 and 3). Round 0 is a goal's state change, not a round, and is
//! skipped (transcripts' `source=goal` sends round 0). Rounds are keyed by
//! `goalId` only, across revisions: dsh keeps `roundsStarted` when a goal's
//! revision changes. Only admissions count (the caller passes only a
//! pre-step's entries); an inserted or discarded goal message, or one a tool
//! enters later in a step as context, advances nothing. Message ids play no part (the recorded goal
//! messages all carry the placeholder `{{sessionId}}`), and goal ids are
//! compared as written, placeholders included (`goal-{{sessionId}}`).

use std::collections::BTreeMap;

use courier_core::{Output, Source};

use crate::property::{Property, Violation, ensure};

/// The last admitted positive round of every goal seen so far.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) struct GoalRounds {
    last_round: BTreeMap<String, u64>,
}

impl GoalRounds {
    /// No goal seen yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Checks one durable output; only goal `user/message`s with a positive
    /// round matter. After a violation the goal continues from the round the
    /// log showed, so one skipped round is reported once, not at every later
    /// message.
    pub(crate) fn observe(&mut self, output: &Output) -> Result<(), Violation> {
        let Output::UserMessage(message) = output else {
            return Ok(());
        };
        let Source::Goal { goal_id, round, .. } = message.source() else {
            return Ok(());
        };
        let round = *round;
        if round == 0 {
            return Ok(());
        }
        let previous = self.last_round.insert(goal_id.clone(), round);
        // `None` after the largest round: no round can follow it.
        let expected = previous.map_or(Some(1), |last| last.checked_add(1));
        let id = message.id();
        ensure(Some(round) == expected, Property::GoalRounds, || {
            let expected = expected.map_or("none".into(), |next| next.to_string());
            match previous {
                None => format!("user/message {id} opens goal {goal_id} at round {round}, not 1"),
                Some(last) => format!(
                    "user/message {id} of goal {goal_id} has round {round} after round {last} (expected {expected})"
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use courier_core::{Message, Output, Source};

    use super::*;

    fn admitted(goal_id: &str, round: u64) -> Output {
        let source = Source::Goal {
            goal_id: goal_id.into(),
            revision: 1,
            round,
            extra: Default::default(),
        };
        Output::UserMessage(Message::text("g", source))
    }

    #[test]
    fn rounds_count_one_two_three_per_goal() {
        let mut rounds = GoalRounds::new();
        for output in [
            admitted("a", 1),
            admitted("b", 1),
            admitted("a", 0),
            admitted("a", 2),
            admitted("b", 2),
            admitted("a", 3),
        ] {
            assert_eq!(rounds.observe(&output), Ok(()));
        }
        let other = Output::UserMessage(Message::from("u"));
        assert_eq!(rounds.observe(&other), Ok(()));
    }

    #[test]
    fn a_first_round_past_one_a_skip_and_a_repeat_break() {
        let mut rounds = GoalRounds::new();
        let first = rounds.observe(&admitted("a", 2)).unwrap_err();
        assert_eq!(first.property, Property::GoalRounds);
        assert!(first.detail.contains("round 2, not 1"), "{first}");
        // The goal continues from round 2: 3 is fine, 5 skips, 5 repeats.
        assert_eq!(rounds.observe(&admitted("a", 3)), Ok(()));
        let skip = rounds.observe(&admitted("a", 5)).unwrap_err();
        assert!(skip.detail.contains("round 5 after round 3"), "{skip}");
        let repeat = rounds.observe(&admitted("a", 5)).unwrap_err();
        assert!(repeat.detail.contains("(expected 6)"), "{repeat}");
    }

    #[test]
    fn the_largest_round_does_not_overflow() {
        let mut rounds = GoalRounds::new();
        assert!(rounds.observe(&admitted("a", u64::MAX)).is_err());
        assert!(rounds.observe(&admitted("a", u64::MAX)).is_err());
    }
}
