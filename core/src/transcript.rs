//! Transcripts (SPEC §9): the command parser, the output printer and a pure
//! runner. This is the only place the line format lives.

use std::fmt;

use crate::agent::{Agent, Status};
use crate::event::{AwaitPoint, Input, Output, PreStepDecision, StepOutcome};
use crate::message::{CancelCause, Message, MessageId, Source, Target, Wakeup};
use crate::resume::{CorruptLog, Stimulus};
use crate::transition::Transition;

mod file;
mod kept;

pub use file::{
    BLOCK_BYTES_MAX, Block, Item, Items, LayoutError, Mismatch, Outline, Rewriter, Script,
    Unreadable,
};
pub use kept::{RunnerLog, TailLog, WholeLog};

/// One parsed transcript command: a core input or a harness command.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Command {
    /// Feed this input to the agent.
    Input(Input),
    /// Resolve every await with `pass` / `completed` until idle.
    Run,
    /// Print both pending lists.
    Inbox,
    /// Print the status line.
    Status,
    /// Crash, keeping the durable log less its last `lose` events, and
    /// resume (SPEC §11): `restart` or `restart lose=<N>`.
    Restart {
        /// Durable events lost (clamped to the whole log).
        lose: usize,
    },
}

/// A line that is not a command; printed as `error: bad-command: <line>`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BadCommand(pub String);

impl fmt::Display for BadCommand {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "bad-command: {}", self.0)
    }
}

impl std::error::Error for BadCommand {}

/// The first word of every command [`parse_command`] takes (a new command
/// fails `every_input_prints_as_a_command_that_parses_back` until it is
/// here).
const VERBS: [&str; 18] = [
    "send",
    "followup",
    "steer",
    "inject",
    "append",
    "prepend",
    "replace",
    "remove",
    "splice",
    "cancel",
    "dispose",
    "when-idle",
    "pre-step",
    "step",
    "run",
    "inbox",
    "status",
    "restart",
];

/// Whether `line`'s first word is a command's: the cheap test that settles
/// most lines that are not commands (every output line) without splitting
/// them.
pub(crate) fn starts_as_command(line: &str) -> bool {
    line.split_ascii_whitespace()
        .next()
        .is_some_and(|first| VERBS.contains(&first))
}

/// The first words of the lines a block prints (SPEC §9: outputs, the
/// `inbox` lines, an `error:`), none a command's; live outputs start with
/// `~`. `status` prints `idle` or `running ...`, words too common to tell
/// a stray output line by.
const OUTPUT_WORDS: [&str; 9] = [
    "spliced",
    "turn/start",
    "step/start",
    "user/message",
    "step/end",
    "turn/end",
    "error:",
    "next-turn:",
    "next-step:",
];

/// Whether `line` reads as a line a block prints, not as a command: under
/// a command with no `----`, it is an expected line whose `----` was
/// forgotten.
pub(crate) fn starts_as_output(line: &str) -> bool {
    let line = line.trim_ascii_start();
    line.starts_with('~')
        || line
            .split_ascii_whitespace()
            .next()
            .is_some_and(|first| OUTPUT_WORDS.contains(&first))
}

/// Parses one command line. A message named by a command is a text message
/// whose content is its id (source `user` unless `source=<kind>` is given);
/// an id named by `enter` that is not in the claimed batch is a `plugin`
/// context message.
pub fn parse_command(line: &str) -> Result<Command, BadCommand> {
    // Read trimmed, as the command runs, so printed trimmed.
    let bad = || BadCommand(line.trim_ascii().to_owned());
    // A line ends only at a line feed (a carriage return only before one,
    // which the file reader takes off), so a carriage return or line feed
    // inside it is no word separator, though `split_ascii_whitespace`
    // splits there: the line is bad.
    if !starts_as_command(line) || line.trim_ascii().contains(['\r', '\n']) {
        return Err(bad());
    }
    // Words are separated by ASCII whitespace only (spaces, tabs): a no-break
    // or other Unicode space is part of a word, which no id allows.
    let mut words: Vec<&str> = line.split_ascii_whitespace().collect();
    if let ["restart", rest @ ..] = words.as_slice() {
        return parse_restart(rest).ok_or_else(bad);
    }
    let source = take_source(&mut words).ok_or_else(bad)?;
    let message = |id: &str| {
        let source = source.clone().unwrap_or_else(Source::user);
        parse_id(id).map(|id| Message::text(id, source))
    };
    let command = match (words.as_slice(), &source) {
        // send A next-turn no-wake source=plugin
        (["send", id, target, wakeup], _) => Input::send(
            message(id).ok_or_else(bad)?,
            target.parse().map_err(|_| bad())?,
            wakeup.parse().map_err(|_| bad())?,
        ),
        // followup A | steer A | inject c source=plugin
        (["followup", id], _) => Input::followup(message(id).ok_or_else(bad)?),
        (["steer", id], _) => Input::steer(message(id).ok_or_else(bad)?),
        (["inject", id], _) => Input::inject(message(id).ok_or_else(bad)?),
        // append next-step r | prepend next-turn A
        ([edit @ ("append" | "prepend"), target, id], _) => {
            let target = target.parse().map_err(|_| bad())?;
            let message = message(id).ok_or_else(bad)?;
            if *edit == "append" {
                Input::Append { target, message }
            } else {
                Input::Prepend { target, message }
            }
        }
        // replace q r
        (["replace", id, new_id], _) => Input::Replace {
            id: parse_id(id).ok_or_else(bad)?,
            message: message(new_id).ok_or_else(bad)?,
        },
        // remove c
        (["remove", id], None) => Input::Remove {
            id: parse_id(id).ok_or_else(bad)?,
        },
        // splice next-turn 0 0 F G (a `source=` needs an id to apply to)
        (["splice", target, start, removed, ids @ ..], _)
            if source.is_none() || !ids.is_empty() =>
        {
            parse_splice([target, start, removed], ids, message).ok_or_else(bad)?
        }
        // cancel user | cancel hook:reason keep-inbox
        (["cancel", cause, rest @ ..], None) => parse_cancel(cause, rest).ok_or_else(bad)?,
        (["dispose"], None) => Input::Dispose,
        (["when-idle"], None) => Input::WhenIdle,
        // pre-step pass | pre-step enter A X
        (["pre-step", decision, ids @ ..], None) => {
            Input::PreStep(parse_decision(decision, ids).ok_or_else(bad)?)
        }
        // step completed | step tool-calls
        (["step", outcome], None) => Input::Step(outcome.parse().map_err(|_| bad())?),
        (["run"], None) => return Ok(Command::Run),
        (["inbox"], None) => return Ok(Command::Inbox),
        (["status"], None) => return Ok(Command::Status),
        _ => return Err(bad()),
    };
    Ok(Command::Input(command))
}

/// `cancel <cause> [keep-inbox]`.
fn parse_cancel(cause: &str, rest: &[&str]) -> Option<Input> {
    let keep_inbox = match rest {
        [] => false,
        ["keep-inbox"] => true,
        _ => return None,
    };
    Some(Input::Cancel {
        cause: parse_cause(cause)?,
        keep_inbox,
    })
}

/// `splice <target> <start> <removed> [<id>...]`, its messages made by
/// `message`.
fn parse_splice(
    [target, start, removed]: [&str; 3],
    ids: &[&str],
    message: impl Fn(&str) -> Option<Message>,
) -> Option<Input> {
    Some(Input::Splice {
        target: target.parse().ok()?,
        start: parse_count(start)?,
        removed: parse_count(removed)?,
        inserted: ids.iter().map(|id| message(id)).collect::<Option<_>>()?,
    })
}

/// Takes a trailing `source=<kind>` off a message command (`Some(None)`
/// when there is none; `None` when it is malformed or has no command).
fn take_source(words: &mut Vec<&str>) -> Option<Option<Source>> {
    let Some(kind) = words.last().and_then(|word| word.strip_prefix("source=")) else {
        return Some(None);
    };
    if kind.is_empty() || words.len() <= 2 {
        return None;
    }
    let source = Source::of_kind(kind);
    words.pop();
    Some(Some(source))
}

/// `restart` | `restart lose=3`: one optional non-negative count.
fn parse_restart(words: &[&str]) -> Option<Command> {
    let lose = match words {
        [] => 0,
        [lose] => parse_count(lose.strip_prefix("lose=")?)?,
        _ => return None,
    };
    Some(Command::Restart { lose })
}

/// A count (splice coordinates, `lose=N`): a non-negative integer written
/// in digits, no sign. Every count is clamped (to the list, to the log), so
/// one too large for `usize` is clamped here rather than refused.
fn parse_count(word: &str) -> Option<usize> {
    if word.is_empty() || !word.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(word.parse().unwrap_or(usize::MAX))
}

/// Ids match `[A-Za-z0-9][A-Za-z0-9_.-]*`.
fn parse_id(word: &str) -> Option<MessageId> {
    is_id(word).then(|| MessageId::new(word))
}

/// An id as a transcript line shows it: as written when it is one by SPEC
/// §10's pattern, else JSON-quoted (`"A B"`, `"a,b"`), so an id from a log,
/// the runtime or another implementation never reads as two ids, or as
/// none.
pub fn shown_id(id: &MessageId) -> std::borrow::Cow<'_, str> {
    match is_id(id.as_str()) {
        true => std::borrow::Cow::Borrowed(id.as_str()),
        false => {
            std::borrow::Cow::Owned(serde_json::Value::String(id.as_str().to_owned()).to_string())
        }
    }
}

/// Whether `word` is an id as SPEC §10 spells them (`[A-Za-z0-9][A-Za-z0-9_.-]*`):
/// what a transcript line can name.
fn is_id(word: &str) -> bool {
    let mut characters = word.chars();
    let first = characters.next().is_some_and(|c| c.is_ascii_alphanumeric());
    first && characters.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `disposed` is not a cancel cause (use `dispose`); a hook needs a reason.
fn parse_cause(word: &str) -> Option<CancelCause> {
    match word {
        "user" => Some(CancelCause::User),
        "parent" => Some(CancelCause::Parent),
        _ => {
            let reason = word
                .strip_prefix("hook:")
                .filter(|reason| !reason.is_empty())?;
            Some(CancelCause::Hook {
                reason: reason.to_owned(),
            })
        }
    }
}

/// The decision word, then the entering ids (only `enter` takes any).
fn parse_decision(word: &str, ids: &[&str]) -> Option<PreStepDecision> {
    match (word.parse().ok()?, ids) {
        (PreStepDecision::Enter(_), ids) => {
            let context = |id: &&str| Some(Message::text(parse_id(id)?, Source::of_kind("plugin")));
            Some(PreStepDecision::Enter(
                ids.iter().map(context).collect::<Option<_>>()?,
            ))
        }
        (
            decision @ (PreStepDecision::Pass | PreStepDecision::Reject | PreStepDecision::Fail),
            [],
        ) => Some(decision),
        (PreStepDecision::Pass | PreStepDecision::Reject | PreStepDecision::Fail, [_, ..]) => None,
    }
}

/// Prints an input back as the command that parses to it (message sources
/// other than the command's default print as `source=<kind>`).
pub fn command_line(input: &Input) -> String {
    match input {
        Input::Send {
            message,
            target,
            wakeup,
        } => send_line(message, *target, *wakeup),
        Input::Append { target, message } => {
            format!("append {target} {}{}", message.id(), source_suffix(message))
        }
        Input::Prepend { target, message } => {
            format!(
                "prepend {target} {}{}",
                message.id(),
                source_suffix(message)
            )
        }
        Input::Replace { id, message } => {
            format!("replace {id} {}{}", message.id(), source_suffix(message))
        }
        Input::Remove { id } => format!("remove {id}"),
        Input::Splice {
            target,
            start,
            removed,
            inserted,
        } => splice_line(*target, *start, *removed, inserted),
        Input::Cancel { cause, keep_inbox } => {
            let keep = if *keep_inbox { " keep-inbox" } else { "" };
            let cause = crate::message::Cause::from(cause.clone());
            format!("cancel {cause}{keep}")
        }
        Input::Dispose => "dispose".to_owned(),
        Input::WhenIdle => "when-idle".to_owned(),
        Input::PreStep(decision) => pre_step_line(decision),
        Input::Step(outcome) => format!("step {outcome}"),
    }
}

/// ` source=<kind>` for a message whose source is not the default `user`.
fn source_suffix(message: &Message) -> String {
    match message.source().kind() {
        "user" => String::new(),
        kind => format!(" source={kind}"),
    }
}

/// A send prints as its shorthand verb; only a no-wake next-turn send has
/// none and prints in full.
fn send_line(message: &Message, target: Target, wakeup: Wakeup) -> String {
    let verb = match (target, wakeup) {
        (Target::NextTurn, Wakeup::Wake) => "followup",
        (Target::NextStep, Wakeup::Wake) => "steer",
        (Target::NextStep, Wakeup::NoWake) => "inject",
        (Target::NextTurn, Wakeup::NoWake) => {
            let id = message.id();
            return format!("send {id} {target} {wakeup}{}", source_suffix(message));
        }
    };
    format!("{verb} {}{}", message.id(), source_suffix(message))
}

/// The inserted ids follow the coordinates; the first one's source stands
/// for all (the parser gives every id the same source).
fn splice_line(target: Target, start: usize, removed: usize, inserted: &[Message]) -> String {
    let mut line = format!("splice {target} {start} {removed}");
    for message in inserted {
        line.push(' ');
        line.push_str(message.id().as_str());
    }
    if let Some(first) = inserted.first() {
        line.push_str(&source_suffix(first));
    }
    line
}

fn pre_step_line(decision: &PreStepDecision) -> String {
    let word: &'static str = decision.into();
    match decision {
        PreStepDecision::Enter(messages) => {
            let mut line = format!("pre-step {word}");
            for message in messages {
                line.push(' ');
                line.push_str(message.id().as_str());
            }
            line
        }
        PreStepDecision::Pass | PreStepDecision::Reject | PreStepDecision::Fail => {
            format!("pre-step {word}")
        }
    }
}

impl fmt::Display for Output {
    /// The transcript line of one output; live ones start with `~`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spliced(splice) => {
                write!(
                    formatter,
                    "spliced {}@{}",
                    splice.target.as_str(),
                    splice.start
                )?;
                if splice.removed_count > 0 {
                    write!(formatter, " -{}", splice.removed_count)?;
                }
                if !splice.inserted.is_empty() {
                    let ids: Vec<_> = splice.inserted.iter().map(|m| shown_id(m.id())).collect();
                    write!(formatter, " +{}", ids.join(","))?;
                }
                if splice.outcome.is_some() {
                    formatter.write_str(" canceled")?;
                }
                Ok(())
            }
            Self::TurnStart { turn } => write!(formatter, "turn/start {turn}"),
            Self::StepStart { turn, step } => write!(formatter, "step/start {turn}.{step}"),
            Self::UserMessage(message) => {
                write!(formatter, "user/message {}", shown_id(message.id()))
            }
            Self::StepEnd { turn, step } => write!(formatter, "step/end {turn}.{step}"),
            Self::TurnEnd { turn, reason } => write!(formatter, "turn/end {turn} {reason}"),
            Self::Inserted { message } => write!(formatter, "~inserted {}", shown_id(message.id())),
            Self::Claimed { message, turn } => {
                write!(formatter, "~claimed {} {turn}", shown_id(message.id()))
            }
            Self::Discarded { message } => {
                write!(formatter, "~discarded {}", shown_id(message.id()))
            }
            Self::Status { status } => match status {
                crate::event::Activity::Idle => formatter.write_str("~status idle"),
                crate::event::Activity::Running => formatter.write_str("~status running"),
            },
            Self::Error { turn, step } => write!(formatter, "~error {turn}.{step}"),
            Self::Idle => formatter.write_str("~idle"),
        }
    }
}

impl fmt::Display for Status {
    /// `idle` or `running turn=N step=S awaiting=pre-step|step`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Idle => formatter.write_str("idle"),
            Self::Running {
                turn,
                step,
                awaiting,
            } => write!(
                formatter,
                "running turn={turn} step={step} awaiting={awaiting}"
            ),
        }
    }
}

/// The two `inbox` lines: `next-turn: A B` and `next-step: C`.
pub fn inbox_lines(agent: &Agent) -> Vec<String> {
    [Target::NextTurn, Target::NextStep]
        .into_iter()
        .map(|target| {
            let mut line = format!("{}:", target.as_str());
            for message in agent.inbox().list(target) {
                line.push(' ');
                line.push_str(&shown_id(message.id()));
            }
            line
        })
        .collect()
}

/// The cap on completions one `run` may feed, past what the messages
/// pending when it starts need ([`run_inputs_max`]); reaching it is a
/// liveness failure, never a hang.
pub const RUN_INPUTS_MAX: usize = 10_000;

/// The completions one `run` may feed when `pending` messages wait: the
/// correct design claims at least one message a turn, and a turn takes two
/// completions (`pass`, `completed`), so a long inbox reaches idle within
/// four per message; only a run that loops beyond that stalls.
pub fn run_inputs_max(pending: usize) -> usize {
    RUN_INPUTS_MAX.saturating_add(pending.saturating_mul(4))
}

/// `run` did not reach idle within the completions it was allowed
/// ([`run_inputs_max`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Stalled {
    /// How many completions it fed.
    pub completions: usize,
}

impl fmt::Display for Stalled {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "run did not reach idle within {} completions",
            self.completions
        )
    }
}

impl std::error::Error for Stalled {}

/// The printed lines of one transition: the error line of a refusal, else
/// one line per output.
fn printed(transition: &Transition) -> Vec<String> {
    match &transition.answer {
        Err(refusal) => vec![format!("error: {refusal}")],
        Ok(()) => transition.outputs.iter().map(Output::to_string).collect(),
    }
}

/// One agent and its durable log, as a transcript runs them: a `restart`
/// cuts the log and resumes a fresh agent of the same variant from it. The
/// log is kept whole ([`Runner::new`]) or, when the largest restart is known
/// beforehand, only as far back as a restart can cut ([`Runner::keeping`]).
#[derive(Clone, Debug)]
pub struct Runner<L = WholeLog> {
    agent: Agent,
    /// Every durable output since the session started, closers included
    /// (less what restarts lost), or as much of it as restarts need.
    log: L,
}

impl Runner {
    /// A runner over `agent` (fresh: the correct design or a planted bug).
    pub fn new(agent: Agent) -> Self {
        let log = WholeLog::new(&agent);
        Self { agent, log }
    }

    /// The durable log since the session started (less what restarts lost,
    /// plus their closers).
    pub fn log(&self) -> &[Output] {
        self.log.events()
    }
}

impl Runner<TailLog> {
    /// A runner over `agent` whose restarts lose at most `lose_total` events
    /// all together (see [`Outline::lose_total`]; beyond that, a restart
    /// loses only the events still held; `None`: it never restarts, and
    /// keeps no log): it holds the agent and the log's last events, not the
    /// whole log.
    pub fn keeping(agent: Agent, lose_total: Option<usize>) -> Self {
        let log = TailLog::new(&agent, lose_total);
        Self { agent, log }
    }
}

impl<L: RunnerLog> Runner<L> {
    /// The agent as it stands.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Feeds one input, logs its durable outputs and returns what it printed.
    pub fn feed(&mut self, input: Input) -> Vec<String> {
        printed(&self.transition(input))
    }

    /// Feeds one input and logs its durable outputs; the whole transition
    /// comes back for engines that speak outputs, not lines (the protocol).
    pub fn transition(&mut self, input: Input) -> Transition {
        let transition = self.agent.transition(input);
        let durable = transition.outputs.iter().filter(|o| o.is_durable());
        for output in durable {
            self.log.push(output.clone());
        }
        transition
    }

    /// Applies one stimulus: an input, or a restart.
    pub fn apply(&mut self, stimulus: Stimulus) -> Vec<String> {
        match stimulus {
            Stimulus::Input(input) => self.feed(input),
            Stimulus::Restart { lose } => self.restart(lose),
        }
    }

    /// Crashes, keeping the log less its last `lose` events, and resumes;
    /// prints the closers. A log that does not replay (only a planted bug
    /// writes one) prints an error and changes nothing.
    pub fn restart(&mut self, lose: usize) -> Vec<String> {
        match self.crash(lose) {
            Err(corrupt) => vec![format!("error: corrupt-log: {corrupt}")],
            Ok(closers) => closers.iter().map(Output::to_string).collect(),
        }
    }

    /// [`Runner::restart`] returning the closers as outputs (or why the kept
    /// log does not replay, changing nothing).
    pub fn crash(&mut self, lose: usize) -> Result<Vec<Output>, CorruptLog> {
        self.log.resume(&mut self.agent, lose)?;
        let closers: Vec<Output> = std::iter::from_fn(|| self.agent.poll_output()).collect();
        for closer in closers.iter().filter(|o| o.is_durable()) {
            self.log.push(closer.clone());
        }
        Ok(closers)
    }

    /// Executes one command line and returns what it printed.
    pub fn execute(&mut self, line: &str) -> Result<Vec<String>, Stalled> {
        let printed = match parse_command(line) {
            Err(bad) => vec![format!("error: {bad}")],
            Ok(Command::Input(input)) => self.feed(input),
            Ok(Command::Inbox) => inbox_lines(&self.agent),
            Ok(Command::Status) => vec![self.agent.status().to_string()],
            Ok(Command::Restart { lose }) => self.restart(lose),
            Ok(Command::Run) => {
                let mut printed = Vec::new();
                run_until_idle(
                    self,
                    |runner| &runner.agent,
                    |runner, input| printed.extend(runner.feed(input)),
                )?;
                printed
            }
        };
        Ok(printed)
    }
}

/// The completion `run` feeds next: `pass` at pre-step, `completed` at a
/// step; `None` when idle.
pub fn default_completion(agent: &Agent) -> Option<Input> {
    match agent.status() {
        Status::Idle => None,
        Status::Running {
            awaiting: AwaitPoint::PreStep,
            ..
        } => Some(Input::PreStep(PreStepDecision::Pass)),
        Status::Running {
            awaiting: AwaitPoint::Step,
            ..
        } => Some(Input::Step(StepOutcome::Completed)),
    }
}

/// `run`: resolves each await of the agent `driven` holds with `pass` /
/// `completed` until idle, feeding through `feed`; the printing runner and
/// the checking harness share this one loop and its cap.
pub fn run_until_idle<D>(
    driven: &mut D,
    agent: impl Fn(&D) -> &Agent,
    mut feed: impl FnMut(&mut D, Input),
) -> Result<(), Stalled> {
    let completions = run_inputs_max(agent(driven).inbox().len());
    for _ in 0..completions {
        let Some(input) = default_completion(agent(driven)) else {
            return Ok(());
        };
        feed(driven, input);
    }
    Err(Stalled { completions })
}

/// Writes a transcript of `trace` run on `agent`: each stimulus as its
/// command line, then `----` and what it printed. Counterexamples, shrunk
/// race reports and regressions are all written this way, so they replay
/// with `courier run`.
pub fn record(agent: &Agent, trace: &[Stimulus]) -> String {
    let mut runner = Runner::new(agent.clone());
    let mut text = String::new();
    for stimulus in trace {
        text.push_str(&stimulus_line(stimulus));
        text.push_str("\n----\n");
        for line in runner.apply(stimulus.clone()) {
            text.push_str(&line);
            text.push('\n');
        }
        text.push('\n');
    }
    text
}

/// The command line of a stimulus: an input's, or `restart lose=<N>`.
pub fn stimulus_line(stimulus: &Stimulus) -> String {
    match stimulus {
        Stimulus::Input(input) => command_line(input),
        Stimulus::Restart { lose } => format!("restart lose={lose}"),
    }
}

/// Whether `stimulus` prints as a command line that reads back as the same
/// stimulus, so a transcript of it parses and means it (a trace read from a
/// file may hold an id with a newline, a space in a source or a cause).
pub fn check_transcribable(stimulus: &Stimulus) -> Result<(), BadCommand> {
    let line = stimulus_line(stimulus);
    let same = match (parse_command(&line), stimulus) {
        (Ok(Command::Input(parsed)), Stimulus::Input(input)) => parsed == *input,
        (Ok(Command::Restart { lose: parsed }), Stimulus::Restart { lose }) => parsed == *lose,
        (
            Ok(
                Command::Input(_)
                | Command::Restart { .. }
                | Command::Run
                | Command::Inbox
                | Command::Status,
            )
            | Err(_),
            _,
        ) => false,
    };
    if same { Ok(()) } else { Err(BadCommand(line)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_prints_as_a_command_that_parses_back() {
        let inputs = [
            "send q next-turn no-wake source=goal",
            "followup A",
            "steer S source=plugin",
            "inject c",
            "append next-step r",
            "prepend next-turn P",
            "replace q r2",
            "remove c",
            "splice next-step 0 1 X Y",
            "cancel hook:veto keep-inbox",
            "cancel parent",
            "dispose",
            "when-idle",
            "pre-step enter A X",
            "pre-step enter",
            "pre-step reject",
            "step tool-calls",
        ];
        let mut kinds = Vec::new();
        for line in inputs {
            let Ok(Command::Input(input)) = parse_command(line) else {
                panic!("`{line}` did not parse");
            };
            assert_eq!(command_line(&input), line);
            kinds.push(crate::InputKind::from(&input));
        }
        // The parser is not a match the compiler checks: a new input kind
        // fails here until it has a line above.
        for kind in <crate::InputKind as strum::VariantArray>::VARIANTS {
            assert!(kinds.contains(kind), "no transcript line for {kind:?}");
        }
    }

    /// A layout error tells a forgotten `----` by the lines below it: each
    /// line every input can print must read as an output.
    #[test]
    fn every_printed_line_reads_as_an_output_and_none_as_a_command() {
        let script = Script::parse(
            "followup A\nsteer B\ninject C\npre-step enter A Z\nstep tool-calls\n\
             pre-step fail\nwhen-idle\nfollowup D\nremove D\nsplice next-turn 0 0 E\n\
             cancel\ninbox\nfollowup A\nrestart\ndispose\n",
        )
        .unwrap();
        let printed = script.run(&Agent::default()).unwrap();
        let mut kinds = std::collections::BTreeSet::new();
        for line in printed.iter().flatten() {
            assert!(
                starts_as_output(line),
                "`{line}` does not read as an output"
            );
            assert!(!starts_as_command(line), "`{line}` reads as a command");
            kinds.insert(line.split([' ', '@']).next().unwrap().to_owned());
        }
        for word in OUTPUT_WORDS {
            assert!(
                kinds.contains(word),
                "no line starts with `{word}`: {kinds:?}"
            );
        }
        for live in [
            "~inserted",
            "~claimed",
            "~discarded",
            "~status",
            "~error",
            "~idle",
        ] {
            assert!(kinds.contains(live), "no `{live}` line: {kinds:?}");
        }
    }

    #[test]
    fn a_recorded_transcript_replays_clean() {
        let mut trace: Vec<Stimulus> = ["followup A", "steer B", "pre-step pass", "step completed"]
            .into_iter()
            .map(|line| match parse_command(line) {
                Ok(Command::Input(input)) => Stimulus::Input(input),
                other => panic!("{line}: {other:?}"),
            })
            .collect();
        trace.push(Stimulus::Restart { lose: 2 });
        let text = record(&Agent::new(), &trace);
        let script = Script::parse(&text).unwrap();
        let actual = script.run(&Agent::new()).unwrap();
        assert_eq!(script.mismatches(&actual), []);
        assert!(text.contains("~claimed B 1"), "{text}");
        // The restart lost the claim of B and `step/end 1.1`: the step is
        // open again, so it is closed, and B is pending again.
        assert!(
            text.ends_with("restart lose=2\n----\nstep/end 1.1\nturn/end 1 interrupted\n\n"),
            "{text}"
        );
    }

    #[test]
    fn restart_commands_parse_strictly() {
        assert_eq!(parse_command("restart"), Ok(Command::Restart { lose: 0 }));
        assert_eq!(
            parse_command("restart lose=12"),
            Ok(Command::Restart { lose: 12 })
        );
        for line in [
            "restart lose=",
            "restart lose=+1",
            "restart lose=-1",
            "restart now",
            "restart lose=1 lose=2",
        ] {
            assert_eq!(parse_command(line), Err(BadCommand(line.to_owned())));
        }
    }

    #[test]
    fn a_block_without_its_dashes_or_with_other_lines_mismatches() {
        let script =
            Script::parse("inbox\n----\nnext-turn:\nnext-step:\n\nstatus\n\nstatus\n----\nbusy\n")
                .unwrap();
        let actual = script.run(&Agent::new()).unwrap();
        let lines: Vec<usize> = script
            .mismatches(&actual)
            .iter()
            .map(|mismatch| mismatch.block.line)
            .collect();
        assert_eq!(lines, [6, 8]);
    }

    #[test]
    fn a_passing_file_renders_to_itself_byte_for_byte() {
        let file = "\u{feff}# c\r\n  status  \r\n----\r\nidle\r\n\r\n\r\ninbox\r\n----\r\nnext-turn:\r\nnext-step:";
        let script = Script::parse(file).unwrap();
        let actual = script.run(&Agent::new()).unwrap();
        assert_eq!(script.mismatches(&actual), []);
        assert_eq!(script.render(&actual), file);
        // A changed block is written in the file's own line ending.
        let stale = file.replace("idle", "busy");
        let script = Script::parse(&stale).unwrap();
        assert_eq!(script.render(&actual), file);
    }

    #[test]
    fn only_stimuli_that_read_back_as_themselves_are_transcribable() {
        let input = |id: &str| Stimulus::Input(Input::followup(Message::text(id, Source::user())));
        assert_eq!(check_transcribable(&input("A-1.b_2")), Ok(()));
        assert_eq!(check_transcribable(&Stimulus::Restart { lose: 3 }), Ok(()));
        for id in ["A\n----\nB", "A B", "-A", ""] {
            assert!(check_transcribable(&input(id)).is_err(), "{id:?}");
        }
        let spaced = Stimulus::Input(Input::followup(Message::text("A", Source::of_kind("a b"))));
        assert!(check_transcribable(&spaced).is_err());
    }

    #[test]
    fn malformed_lines_are_bad_commands() {
        for line in [
            "frobnicate A",
            "cancel disposed",
            "cancel hook:",
            "splice next-turn -1 0",
            "splice next-turn +1 0",
            "followup -A",
            "followup A B",
            "step done",
            "remove A source=user",
            "splice next-turn 0 1 source=goal",
            "splice next-step 0 0 source=plugin",
            // Only spaces and tabs separate words: another space is text.
            "followup\u{a0}A",
            "restart\u{3000}lose=0",
            // Nor does a carriage return or line feed inside a line.
            "followup\rA",
            "followup A\rB",
            "step\npass",
        ] {
            assert_eq!(
                parse_command(line),
                Err(BadCommand(line.to_owned())),
                "{line}"
            );
        }
        // Read trimmed, and printed as read.
        for (line, printed) in [
            ("   followup  \t", "followup"),
            ("\tfollowup A B ", "followup A B"),
        ] {
            assert_eq!(
                parse_command(line),
                Err(BadCommand(printed.to_owned())),
                "{line}"
            );
        }
    }
}
