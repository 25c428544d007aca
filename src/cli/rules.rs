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
//!
//! A divergence no rule explains stays unexplained (it fails the run), but
//! may match a [`Gap`]: a class analysed in `tests/divergences/README.md`
//! (a gap in SPEC or a limit of the adapter, not a §6 decision), with a
//! predicate as narrow as a rule's. The summaries count the unexplained ones
//! per gap, and the ones no analysis covers apart: those are news.

use std::collections::HashSet;

use courier_core::transcript::Command;
use courier_core::{Agent, Input, Message, MessageId, PreStepDecision, StepOutcome};

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
    /// The contract's agent just before the command.
    pub before: &'a Agent,
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

/// An analysed class of unexplained divergences (`tests/divergences/`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Gap {
    /// README §1: a pre-step batch enters an id that is pending, or one id
    /// twice; the contract fails the step, dsh opens it (SPEC gap).
    EntersPendingOrRepeatedId,
    /// README §3: a restart the adapter cannot do because dsh left no
    /// session file (no durable event yet, or the session was disposed).
    RestartWithoutSessionFile,
}

impl Gap {
    /// Every gap, in the order they are tried and summarised.
    pub(crate) const ALL: [Gap; 2] = [
        Gap::EntersPendingOrRepeatedId,
        Gap::RestartWithoutSessionFile,
    ];

    /// The name printed in verdicts and summaries.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Gap::EntersPendingOrRepeatedId => "gap-1-enters-pending-or-repeated-id",
            Gap::RestartWithoutSessionFile => "gap-3-restart-without-session-file",
        }
    }

    fn matches(self, divergence: &Divergence<'_>) -> bool {
        match self {
            Gap::EntersPendingOrRepeatedId => enters_pending_or_repeated_id(divergence),
            Gap::RestartWithoutSessionFile => restart_without_session_file(divergence),
        }
    }
}

/// The analysed gap an unexplained `divergence` falls in, or `None` (news).
pub(crate) fn analysed(divergence: &Divergence<'_>) -> Option<Gap> {
    Gap::ALL.into_iter().find(|gap| gap.matches(divergence))
}

/// How a divergence was judged: by a rule, or unexplained (in a known gap
/// or not).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Judged {
    Explained(Rule),
    Unexplained(Option<Gap>),
}

impl Judged {
    pub(crate) fn of(divergence: &Divergence<'_>) -> Self {
        match classify(divergence) {
            Some(rule) => Judged::Explained(rule),
            None => Judged::Unexplained(analysed(divergence)),
        }
    }

    /// `decision-...`, `unexplained (gap-...)` or `unexplained`.
    pub(crate) fn describe(self) -> String {
        match self {
            Judged::Explained(rule) => rule.name().to_owned(),
            Judged::Unexplained(Some(gap)) => format!("unexplained ({})", gap.name()),
            Judged::Unexplained(None) => "unexplained".to_owned(),
        }
    }
}

/// Prints the unexplained divergences per analysed gap, and those no
/// analysis covers; `count` gives how many were judged so.
pub(crate) fn print_gaps(count: impl Fn(Judged) -> usize) {
    for gap in Gap::ALL {
        let matched = count(Judged::Unexplained(Some(gap)));
        println!("    {}: {matched}", gap.name());
    }
    println!("    not analysed: {}", count(Judged::Unexplained(None)));
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

/// Gap 1: the command is a pre-step `pass` or `enter`; the contract's first
/// differing line is its `~error` (the step failed) where the other side
/// opened the step; and the entering batch (the claimed one under `pass`)
/// names an id twice or an id pending in the contract's inbox.
fn enters_pending_or_repeated_id(divergence: &Divergence<'_>) -> bool {
    let claimed = || divergence.before.claimed().unwrap_or_default().iter();
    let entering: Vec<&MessageId> = match divergence.command {
        Some(Command::Input(Input::PreStep(decision))) => match decision {
            PreStepDecision::Pass => claimed(),
            PreStepDecision::Enter(batch) => batch.iter(),
            PreStepDecision::Reject | PreStepDecision::Fail => return false,
        },
        // `run` passes the batch claimed before it first; its later claims
        // take what is pending, so only that first pass can enter a pending
        // id (and `claimed` is empty unless the agent awaits pre-step).
        Some(Command::Run) => claimed(),
        _ => return false,
    }
    .map(Message::id)
    .collect();
    let Some((_, Some(expected), Some(actual))) =
        first_difference(divergence.expected, divergence.actual)
    else {
        return false;
    };
    let mut seen = HashSet::new();
    let repeated = entering.iter().any(|id| !seen.insert(*id));
    let pending = entering
        .iter()
        .any(|id| divergence.before.inbox().contains(id));
    expected.starts_with("~error ") && actual.starts_with("step/start ") && (repeated || pending)
}

/// Gap 3: the command is a restart the other side answered `unsupported`,
/// and dsh could have no session file: the adapter flushes before every
/// restart, but dsh writes no file for a session with no durable event yet
/// (none printed since the start), and a finished dispose since the last
/// restart removes it.
fn restart_without_session_file(divergence: &Divergence<'_>) -> bool {
    let Some(Command::Restart { .. }) = divergence.command else {
        return false;
    };
    let unsupported = divergence
        .actual
        .first()
        .is_some_and(|line| line.starts_with("error: unsupported: restart"));
    let kept_nothing = !divergence
        .earlier
        .iter()
        .any(|earlier| earlier.printed.iter().any(|line| printed_durable(line)));
    unsupported && (kept_nothing || disposed_since_restart(divergence.earlier))
}

/// Whether a printed line is a durable output's (SPEC §10's forms: the
/// live ones start with `~`; errors and queries are no outputs).
fn printed_durable(line: &str) -> bool {
    const DURABLE: [&str; 6] = [
        "spliced ",
        "turn/start ",
        "step/start ",
        "user/message ",
        "step/end ",
        "turn/end ",
    ];
    DURABLE.iter().any(|prefix| line.starts_with(prefix))
}

/// Whether a `dispose` came after the last restart of `earlier` (disposal
/// dies with the process, SPEC §11).
fn disposed_since_restart(earlier: &[Earlier]) -> bool {
    earlier
        .iter()
        .rev()
        .map(|earlier| earlier.command.as_ref())
        .take_while(|command| !matches!(command, Some(Command::Restart { .. })))
        .any(|command| matches!(command, Some(Command::Input(Input::Dispose))))
}

/// Decision 3: the command inserts a message after a `dispose` (and no
/// restart since: disposal dies with the process, SPEC §11); the contract's
/// first line is `error: disposed: <an inserted id>` and the other side did
/// not refuse it so.
fn dispose_is_final(divergence: &Divergence<'_>) -> bool {
    let Some(Command::Input(input)) = divergence.command else {
        return false;
    };
    let ids: Vec<&str> = input.supplied().iter().map(|m| m.id().as_str()).collect();
    let disposed = disposed_since_restart(divergence.earlier);
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

/// Decision 5: a `step max-tokens` came earlier in the same turn and the
/// first differing line is the other side's `turn/end <n> max-tokens`. It
/// shows at the `step tool-calls` itself, where the contract goes on, or,
/// once a `step tool-calls` followed the `max-tokens` (the contract owes
/// nothing after it, dsh still owes `max-tokens`), at a later completion
/// where dsh ends the turn: a step's `completed` (the contract prints
/// `turn/end <n> completed`) or an empty later boundary (the contract opens
/// a step, or ends `completed` if a later step completed).
fn tool_calls_after_max_tokens(divergence: &Divergence<'_>) -> bool {
    let Some(Command::Input(input @ (Input::Step(_) | Input::PreStep(_)))) = divergence.command
    else {
        return false;
    };
    let Some((_, expected, Some(actual))) =
        first_difference(divergence.expected, divergence.actual)
    else {
        return false;
    };
    let Some(turn) = actual
        .strip_prefix("turn/end ")
        .and_then(|rest| rest.strip_suffix(" max-tokens"))
    else {
        return false;
    };
    let contract_goes_on = !expected.is_some_and(|line| line.starts_with("turn/end "));
    if *input == Input::Step(StepOutcome::ToolCalls) {
        return contract_goes_on && max_tokens_earlier_in_turn(divergence.earlier, false);
    }
    let contract_completes = expected == Some(format!("turn/end {turn} completed").as_str());
    (contract_goes_on || contract_completes) && max_tokens_earlier_in_turn(divergence.earlier, true)
}

/// Whether a `step max-tokens` that did not end its turn came after the
/// last turn boundary of `earlier` (followed there by a `step tool-calls`,
/// when `then_tool_calls`).
fn max_tokens_earlier_in_turn(earlier: &[Earlier], then_tool_calls: bool) -> bool {
    let boundary = |line: &String| line.starts_with("turn/start ") || line.starts_with("turn/end ");
    let mut tool_calls = !then_tool_calls;
    for entry in earlier.iter().rev() {
        let step = |outcome| entry.command == Some(Command::Input(Input::Step(outcome)));
        let max_tokens = step(StepOutcome::MaxTokens);
        if max_tokens && tool_calls && !entry.printed.iter().any(|l| l.starts_with("turn/end ")) {
            return true;
        }
        if entry.printed.iter().any(boundary) {
            return false;
        }
        tool_calls |= step(StepOutcome::ToolCalls);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::transcript::{Runner, parse_command};

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

    /// How the divergence at `line` after `before` is judged; the
    /// contract's agent is the core run over `before`'s commands.
    fn judged(before: &[Earlier], line: &str, expected: &str, actual: &str) -> Judged {
        let mut contract = Runner::new(Agent::new());
        for earlier in before {
            match earlier.command.as_ref().expect("a command") {
                Command::Input(input) => drop(contract.feed(input.clone())),
                Command::Restart { lose } => drop(contract.restart(*lose)),
                Command::Run => drop(contract.execute("run").expect("it settles")),
                Command::Inbox | Command::Status => {}
            }
        }
        let command = parse_command(line).ok();
        let (expected, actual) = (lines(expected), lines(actual));
        Judged::of(&Divergence {
            earlier: before,
            command: command.as_ref(),
            expected: &expected,
            actual: &actual,
            before: contract.agent(),
        })
    }

    fn classified(before: &[Earlier], line: &str, expected: &str, actual: &str) -> Option<Rule> {
        match judged(before, line, expected, actual) {
            Judged::Explained(rule) => Some(rule),
            Judged::Unexplained(_) => None,
        }
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

    /// A max-tokens step, a tool-calls one after it, and a third step.
    const TOOLS_AFTER_TRUNCATED: [(&str, &str); 3] = [
        ("pre-step pass", "step/start 1.2"),
        ("step tool-calls", "step/end 1.2"),
        ("pre-step pass", "step/start 1.3"),
    ];

    #[test]
    fn decision_5_explains_a_later_turn_end_after_tool_calls() {
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&TOOLS_AFTER_TRUNCATED));
        let rule = classified(
            &before,
            "step completed",
            "step/end 1.3\nturn/end 1 completed\n~status idle",
            "step/end 1.3\nturn/end 1 max-tokens\n~status idle",
        );
        assert_eq!(rule, Some(Rule::ToolCallsAfterMaxTokens));
        // An empty later boundary: the contract opens a step, dsh ends.
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&TOOLS_AFTER_TRUNCATED[..2]));
        let rule = classified(
            &before,
            "pre-step enter",
            "step/start 1.3",
            "turn/end 1 max-tokens\n~status idle",
        );
        assert_eq!(rule, Some(Rule::ToolCallsAfterMaxTokens));
    }

    #[test]
    fn decision_5_does_not_explain_a_later_turn_end_without_tool_calls() {
        let completed = "step/end 1.2\nturn/end 1 completed\n~status idle";
        let truncated = "step/end 1.2\nturn/end 1 max-tokens\n~status idle";
        // max-tokens, then a completed step: both sides owe max-tokens, so
        // a contract ending `completed` would be news.
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&[("pre-step pass", "step/start 1.2")]));
        assert_eq!(
            classified(&before, "step completed", completed, truncated),
            None
        );
        // max-tokens, then an empty later boundary: both sides end the
        // turn, so a contract that opens a step would be news.
        let before = earlier(&TRUNCATED);
        assert_eq!(
            classified(&before, "pre-step enter", "step/start 1.2", truncated),
            None
        );
        // Tool calls after max-tokens, but the other side ends otherwise.
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&TOOLS_AFTER_TRUNCATED));
        let blocked = "step/end 1.3\nturn/end 1 blocked";
        let completed = "step/end 1.3\nturn/end 1 completed";
        assert_eq!(
            classified(&before, "step completed", completed, blocked),
            None
        );
        // The tool calls came in the next turn, after a turn boundary.
        let mut before = earlier(&TRUNCATED);
        before.extend(earlier(&[
            ("pre-step enter", "turn/end 1 max-tokens\nturn/start 2"),
            ("pre-step pass", "step/start 2.1"),
            ("step tool-calls", "step/end 2.1"),
            ("pre-step pass", "step/start 2.2"),
        ]));
        let completed = "step/end 2.2\nturn/end 2 completed";
        let truncated = "step/end 2.2\nturn/end 2 max-tokens";
        assert_eq!(
            classified(&before, "step completed", completed, truncated),
            None
        );
    }

    fn gap(before: &[Earlier], line: &str, expected: &str, actual: &str) -> Option<Gap> {
        match judged(before, line, expected, actual) {
            Judged::Unexplained(gap) => gap,
            Judged::Explained(rule) => panic!("explained by {}", rule.name()),
        }
    }

    const CLAIMED: [(&str, &str); 2] = [STARTED, ("steer C", "")];

    #[test]
    fn gap_1_covers_a_batch_entering_a_pending_or_repeated_id() {
        let opened = "step/start 1.1\nuser/message A";
        let failed = "~error 1.0\nturn/end 1 error";
        // A claimed id sent again while the batch awaits its pre-step.
        let mut before = earlier(&CLAIMED);
        before.extend(earlier(&[("followup A", "")]));
        assert_eq!(
            gap(&before, "pre-step pass", failed, opened),
            Some(Gap::EntersPendingOrRepeatedId)
        );
        // The same batch passed by `run`.
        assert_eq!(
            gap(&before, "run", failed, opened),
            Some(Gap::EntersPendingOrRepeatedId)
        );
        // An id named twice.
        let before = earlier(&[STARTED]);
        assert_eq!(
            gap(&before, "pre-step enter A A", failed, opened),
            Some(Gap::EntersPendingOrRepeatedId)
        );
        // `run` with no batch claimed (nothing is entered) is not the gap.
        let before = earlier(&[("followup A", "")]);
        assert_eq!(gap(&before, "run", failed, opened), None);
    }

    #[test]
    fn gap_1_does_not_cover_other_pre_step_divergences() {
        let opened = "step/start 1.1\nuser/message A";
        let failed = "~error 1.0\nturn/end 1 error";
        // Nothing pending or repeated: a plain failure is news.
        let before = earlier(&[STARTED]);
        assert_eq!(gap(&before, "pre-step pass", failed, opened), None);
        // Pending, but the other side also failed the step, differently.
        let mut before = earlier(&CLAIMED);
        before.extend(earlier(&[("followup A", "")]));
        assert_eq!(
            gap(
                &before,
                "pre-step pass",
                failed,
                "~error 1.0\nturn/end 1 blocked"
            ),
            None
        );
    }

    #[test]
    fn gap_3_covers_a_restart_of_an_empty_log_or_after_a_dispose() {
        let unsupported = "error: unsupported: restart: dsh left no session file to resume";
        let refused = earlier(&[("replace A B", "error: not-pending: A")]);
        assert_eq!(
            gap(&refused, "restart", "", unsupported),
            Some(Gap::RestartWithoutSessionFile)
        );
        // Durable events but no turn end yet: dsh keeps a file, so an
        // `unsupported` there is news.
        let before = earlier(&[STARTED]);
        assert_eq!(
            gap(&before, "restart", "turn/end 1 interrupted", unsupported),
            None
        );
        let ended = [
            STARTED,
            ("pre-step pass", ""),
            ("step completed", "step/end 1.1\nturn/end 1 completed"),
        ];
        assert_eq!(gap(&earlier(&ended), "restart", "", unsupported), None);
        let mut disposed = earlier(&ended);
        disposed.extend(earlier(&[("dispose", "")]));
        assert_eq!(
            gap(&disposed, "restart", "", unsupported),
            Some(Gap::RestartWithoutSessionFile)
        );
    }
}
