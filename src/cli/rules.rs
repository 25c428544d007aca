//! Named rules (issue 13 item 5): each SPEC §6 decision that departs from
//! dsh, as a predicate that classifies a divergence as expected. A rule
//! looks only at the FIRST differing output line of the first differing
//! command, and explains it by the decision's own condition, so a new bug in
//! another implementation cannot hide behind a rule that merely matches the
//! command. `run --against` (per transcript block) and `sim --against` (per
//! stimulus) both build a [`Divergence`] and ask [`classify`].
//!
//! Decisions 1 (no re-entrancy) and 2 (atomic final check) have no rule: the
//! protocol feeds one input at a time and settles the implementation between
//! inputs, so no reaction runs inside a transition and no send can land
//! between the final pending check and the retirement. Decision 7 (restart
//! wakes nothing) is dsh's behaviour too, so it explains nothing.

use courier_core::transcript::Command;
use courier_core::{Input, Message, StepOutcome};

/// One earlier command and what the contract printed for it (both sides
/// printed the same, or this would be the divergence).
#[derive(Clone, Debug)]
pub(crate) struct Earlier {
    /// The command; `None` for a line that does not parse.
    pub command: Option<Command>,
    /// The contract's lines.
    pub printed: Vec<String>,
}

/// The first command whose outputs differ, with everything before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Divergence<'a> {
    /// The commands before it, oldest first.
    pub earlier: &'a [Earlier],
    /// The command itself; `None` for a line that does not parse.
    pub command: Option<&'a Command>,
    /// What the contract (the core) printed.
    pub expected: &'a [String],
    /// What the other implementation printed.
    pub actual: &'a [String],
}

/// A named rule: a SPEC §6 decision that departs from dsh.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Rule {
    /// Decision 3: dispose is final.
    DisposeIsFinal,
    /// Decision 5: tool calls after `max-tokens` owe another step.
    ToolCallsAfterMaxTokens,
}

impl Rule {
    /// Every rule, in the order they are tried and summarised.
    pub(crate) const ALL: [Rule; 2] = [Rule::DisposeIsFinal, Rule::ToolCallsAfterMaxTokens];

    /// The name printed in verdicts and summaries.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Rule::DisposeIsFinal => "decision-3-dispose-is-final",
            Rule::ToolCallsAfterMaxTokens => "decision-5-tool-calls-after-max-tokens",
        }
    }

    fn explains(self, divergence: &Divergence<'_>) -> bool {
        match self {
            Rule::DisposeIsFinal => dispose_is_final(divergence),
            Rule::ToolCallsAfterMaxTokens => tool_calls_after_max_tokens(divergence),
        }
    }
}

/// The rule that explains `divergence`, or `None` (unexplained).
pub(crate) fn classify(divergence: &Divergence<'_>) -> Option<Rule> {
    Rule::ALL.into_iter().find(|rule| rule.explains(divergence))
}

/// The index of the first line where the two sides differ, with each side's
/// line there (`None` past its end); `None` when they are equal.
fn first_difference<'a>(
    expected: &'a [String],
    actual: &'a [String],
) -> Option<(usize, Option<&'a str>, Option<&'a str>)> {
    let length = expected.len().max(actual.len());
    (0..length)
        .map(|index| {
            let side = |lines: &'a [String]| lines.get(index).map(String::as_str);
            (index, side(expected), side(actual))
        })
        .find(|(_, expected, actual)| expected != actual)
}

/// The messages an input inserts; empty for one that inserts none.
fn inserted(input: &Input) -> Vec<&Message> {
    match input {
        Input::Send { message, .. }
        | Input::Append { message, .. }
        | Input::Prepend { message, .. }
        | Input::Replace { message, .. } => vec![message],
        Input::Splice { inserted, .. } => inserted.iter().collect(),
        Input::Remove { .. }
        | Input::Cancel { .. }
        | Input::Dispose
        | Input::WhenIdle
        | Input::PreStep(_)
        | Input::Step(_) => Vec::new(),
    }
}

/// Decision 3: the command inserts a message after a `dispose` (and no
/// restart since: disposal dies with the process, SPEC §11); the contract's
/// first line is `error: disposed: <an inserted id>` and the other side did
/// not refuse it so.
fn dispose_is_final(divergence: &Divergence<'_>) -> bool {
    let Some(Command::Input(input)) = divergence.command else {
        return false;
    };
    let ids: Vec<&str> = inserted(input).iter().map(|m| m.id().as_str()).collect();
    let disposed = divergence
        .earlier
        .iter()
        .rev()
        .map(|earlier| earlier.command.as_ref())
        .take_while(|command| !matches!(command, Some(Command::Restart { .. })))
        .any(|command| matches!(command, Some(Command::Input(Input::Dispose))));
    let Some((0, Some(expected), _)) = first_difference(divergence.expected, divergence.actual)
    else {
        return false;
    };
    disposed
        && divergence.expected.len() == 1
        && expected
            .strip_prefix("error: disposed: ")
            .is_some_and(|id| ids.contains(&id))
}

/// Decision 5: the command is `step tool-calls` and a `step max-tokens`
/// came earlier in the same turn; the first differing line is the other
/// side's `turn/end <n> max-tokens`, where the contract goes on.
fn tool_calls_after_max_tokens(divergence: &Divergence<'_>) -> bool {
    if divergence.command != Some(&Command::Input(Input::Step(StepOutcome::ToolCalls))) {
        return false;
    }
    let Some((_, expected, Some(actual))) =
        first_difference(divergence.expected, divergence.actual)
    else {
        return false;
    };
    let ends_max_tokens = actual
        .strip_prefix("turn/end ")
        .is_some_and(|rest| rest.ends_with(" max-tokens"));
    let contract_goes_on = !expected.is_some_and(|line| line.starts_with("turn/end "));
    ends_max_tokens && contract_goes_on && max_tokens_earlier_in_turn(divergence.earlier)
}

/// Whether a `step max-tokens` that did not end its turn came after the
/// last turn boundary of `earlier`.
fn max_tokens_earlier_in_turn(earlier: &[Earlier]) -> bool {
    let boundary = |line: &String| line.starts_with("turn/start ") || line.starts_with("turn/end ");
    for entry in earlier.iter().rev() {
        let max_tokens = entry.command == Some(Command::Input(Input::Step(StepOutcome::MaxTokens)));
        if max_tokens && !entry.printed.iter().any(|l| l.starts_with("turn/end ")) {
            return true;
        }
        if entry.printed.iter().any(boundary) {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::transcript::parse_command;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    /// Earlier commands from `(command line, printed text)` pairs.
    fn earlier(pairs: &[(&str, &str)]) -> Vec<Earlier> {
        pairs
            .iter()
            .map(|(line, printed)| Earlier {
                command: parse_command(line).ok(),
                printed: lines(printed),
            })
            .collect()
    }

    fn classified(before: &[Earlier], line: &str, expected: &str, actual: &str) -> Option<Rule> {
        let command = parse_command(line).ok();
        let (expected, actual) = (lines(expected), lines(actual));
        classify(&Divergence {
            earlier: before,
            command: command.as_ref(),
            expected: &expected,
            actual: &actual,
        })
    }

    const STARTED: (&str, &str) = ("followup A", "~status running\nturn/start 1");

    #[test]
    fn decision_3_explains_an_insertion_after_dispose() {
        let before = earlier(&[STARTED, ("dispose", "")]);
        let accepted = "spliced next-turn@0 +B\n~inserted B";
        let rule = classified(&before, "followup B", "error: disposed: B", accepted);
        assert_eq!(rule, Some(Rule::DisposeIsFinal));
        let rule = classified(
            &before,
            "splice next-turn 0 0 X",
            "error: disposed: X",
            accepted,
        );
        assert_eq!(rule, Some(Rule::DisposeIsFinal));
    }

    #[test]
    fn decision_3_does_not_explain_other_divergences() {
        let accepted = "spliced next-turn@0 +B\n~inserted B";
        // No dispose earlier.
        let before = earlier(&[STARTED]);
        assert_eq!(
            classified(&before, "followup B", "error: disposed: B", accepted),
            None
        );
        // A restart since the dispose: disposal died with the process.
        let before = earlier(&[
            STARTED,
            ("dispose", ""),
            ("restart", "turn/end 1 interrupted"),
        ]);
        assert_eq!(
            classified(&before, "followup B", "error: disposed: B", accepted),
            None
        );
        // Disposed, but the difference is something else.
        let before = earlier(&[STARTED, ("dispose", "")]);
        assert_eq!(
            classified(&before, "remove B", "error: not-pending: B", ""),
            None
        );
        assert_eq!(
            classified(&before, "followup B", "error: disposed: C", accepted),
            None
        );
    }

    const TRUNCATED: [(&str, &str); 3] = [
        STARTED,
        ("pre-step pass", "step/start 1.1"),
        ("step max-tokens", "step/end 1.1"),
    ];

    #[test]
    fn decision_5_explains_a_turn_ended_max_tokens_after_tool_calls() {
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&[("pre-step pass", "step/start 1.2")]));
        let rule = classified(
            &before,
            "step tool-calls",
            "step/end 1.2",
            "step/end 1.2\nturn/end 1 max-tokens\n~status idle",
        );
        assert_eq!(rule, Some(Rule::ToolCallsAfterMaxTokens));
    }

    #[test]
    fn decision_5_does_not_explain_other_divergences() {
        let ended = "step/end 1.2\nturn/end 1 max-tokens\n~status idle";
        // No max-tokens step in this turn: it was in the previous one.
        let before = earlier(&[
            ("step max-tokens", "step/end 1.1\nturn/end 1 max-tokens"),
            ("followup B", "turn/start 2"),
            ("pre-step pass", "step/start 2.1"),
        ]);
        assert_eq!(
            classified(&before, "step tool-calls", "step/end 2.1", ended),
            None
        );
        // The right condition, but the other side ends the turn otherwise.
        let before = earlier(&TRUNCATED);
        let completed = "step/end 1.2\nturn/end 1 completed";
        assert_eq!(
            classified(&before, "step tool-calls", "step/end 1.2", completed),
            None
        );
        // Another command.
        assert_eq!(
            classified(&before, "step completed", "step/end 1.2", ended),
            None
        );
    }
}
