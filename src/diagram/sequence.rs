//! Which lane each input and output belongs to: the one place that decides
//! the picture's shape, shared by the SVG and Mermaid renderers.

use courier_core::transcript::command_line;
use courier_core::{Input, MessageId, Output, PreStepDecision, Splice, Target, Transition};
use strum::{IntoStaticStr, VariantArray};

use super::Row;

/// A lane of the diagram, left to right (declaration order); the derives
/// give its titles, the list lanes spelled as their targets.
#[derive(Clone, Copy, PartialEq, Eq, Debug, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "kebab-case")]
pub enum Lane {
    /// Whoever sends and edits: the user, plugins, the parent.
    Client,
    /// The pending `next-turn` list.
    NextTurn,
    /// The pending `next-step` list.
    NextStep,
    /// The driver: turns, steps and claims.
    Driver,
    /// The pre-step listener that decides what enters a step.
    #[strum(serialize = "pre-step hook")]
    PreStepHook,
    /// The model step.
    #[strum(serialize = "step hook")]
    StepHook,
}

impl Lane {
    /// Every lane, left to right (the derive's table, as an array).
    pub const ALL: [Lane; <Lane as VariantArray>::VARIANTS.len()] =
        *<Self as VariantArray>::VARIANTS
            .first_chunk()
            .expect("the whole table");

    /// The title drawn at the top of the lane.
    pub fn title(self) -> &'static str {
        self.into()
    }

    /// The position from the left, 0-based.
    pub(super) fn index(self) -> usize {
        self as usize
    }

    fn list(target: Target) -> Self {
        match target {
            Target::NextTurn => Self::NextTurn,
            Target::NextStep => Self::NextStep,
        }
    }
}

/// How a mark is drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Style {
    /// The row's input.
    Input,
    /// An input the core refused, or its error.
    Refused,
    /// A durable output (the session log).
    Durable,
    /// A live notification.
    Live,
    /// What the driver awaits when control returns.
    Await,
    /// A durable event a crash lost: drawn where it was, struck through.
    Lost,
}

/// One thing drawn in a row.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Mark {
    /// An arrow between two different lanes.
    Arrow {
        from: Lane,
        to: Lane,
        label: String,
        style: Style,
    },
    /// A box on one lane.
    Note {
        lane: Lane,
        label: String,
        style: Style,
    },
    /// A band across every lane: the crash that opens a restart row.
    Crash { label: String },
}

/// What the driver awaits, followed through the outputs across rows.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Awaiting {
    Nothing,
    PreStep(u64, Vec<MessageId>),
    Step(u64, u64),
}

/// The most ids one mark lists, and the most marks of one kind in a run a
/// row draws, before the rest are only counted (`… and N more`): a splice
/// of 80,000 messages is one row of a few marks, not 80,000 marks and a
/// label of 80,000 ids, so a picture's size follows its rows, not its ids.
pub(super) const IDS_SHOWN: usize = 8;

/// What stands for `count` ids or marks left out.
fn more(count: usize) -> String {
    format!("… and {count} more")
}

/// The most rows a picture draws: beyond it a picture is scrolled, not
/// read, and its text grows past what viewers open.
pub const ROWS_DRAWN_MAX: usize = 2_000;

/// What a renderer draws in order: a row (0-based) with its marks, or a
/// run of rows left out.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Shown {
    /// One row and its marks.
    Row(usize, Vec<Mark>),
    /// Rows `from..to` (0-based), not drawn.
    Elided { from: usize, to: usize },
}

/// The rows drawn (each with its marks) and the runs left out: every row
/// up to [`ROWS_DRAWN_MAX`]; past it the first half of that many, then the
/// half that ends at the broken row (or at the end). Every row's marks are
/// still worked out in order (each row's await follows from the ones
/// before), in one pass.
pub(super) fn shown(rows: &[Row], broken: Option<usize>) -> Vec<Shown> {
    let half = ROWS_DRAWN_MAX / 2;
    let kept = |index: usize| -> bool {
        if rows.len() <= ROWS_DRAWN_MAX || index < half {
            return true;
        }
        let end = broken.map_or(rows.len(), |row| row + 1).max(ROWS_DRAWN_MAX);
        (end - half..end).contains(&index)
    };
    let mut shown = Vec::new();
    for (index, marks) in marks(rows).enumerate() {
        if kept(index) {
            shown.push(Shown::Row(index, marks));
            continue;
        }
        match shown.last_mut() {
            Some(Shown::Elided { to, .. }) => *to = index + 1,
            Some(Shown::Row(..)) | None => shown.push(Shown::Elided {
                from: index,
                to: index + 1,
            }),
        }
    }
    shown
}

/// The marks of every row, in order.
fn marks(rows: &[Row]) -> impl Iterator<Item = Vec<Mark>> {
    let mut awaiting = Awaiting::Nothing;
    rows.iter().map(move |row| match row {
        Row::Input(transition) => row_marks(transition, &mut awaiting),
        Row::Restart {
            lose,
            lost,
            closers,
        } => {
            // The resumed agent starts afresh; its closers (or what a
            // planted bug prints instead) say what it then awaits.
            awaiting = Awaiting::Nothing;
            let mut marks = restart_marks(*lose, lost, closers);
            closers
                .iter()
                .for_each(|output| follow(&mut awaiting, output));
            marks.extend(await_mark(&awaiting));
            marks
        }
    })
}

/// A restart row: the crash band, each lost event where it was drawn but
/// struck through (it never happened), then the closers the resume wrote.
fn restart_marks(lose: usize, lost: &[Output], closers: &[Output]) -> Vec<Mark> {
    let lost_events = match lose {
        0 => "nothing lost".to_owned(),
        1 => "the last durable event lost".to_owned(),
        _ => format!("the last {lose} durable events lost"),
    };
    let closed = closers.iter().find_map(|output| {
        let Output::TurnEnd { turn, .. } = output else {
            return None;
        };
        Some(format!("the resume closes turn {turn}"))
    });
    let closing = closed.unwrap_or_else(|| match closers.len() {
        0 => "the resume writes nothing".to_owned(),
        count => format!("the resume prints {count} outputs"),
    });
    let label = format!("crash · restart lose={lose}: {lost_events}, {closing}");
    let mut marks = vec![Mark::Crash { label }];
    // The list lane of the latest splice (as in `row_marks`); a restart
    // row starts at `next-turn`, as a send does.
    let mut list = Lane::NextTurn;
    let struck = lost.iter().map(|output| (output, true));
    for (output, lost) in struck.chain(closers.iter().map(|output| (output, false))) {
        if let Output::Spliced(splice) = output {
            list = Lane::list(splice.target);
        }
        let mark = output_mark(output, list, false);
        marks.push(if lost { mark.struck() } else { mark });
    }
    collapsed(marks)
}

/// `marks` with every run of more than [`IDS_SHOWN`] marks of one kind (the
/// same lanes, style and first word: one `~inserted` per message of a
/// splice, one `~claimed` and one `user/message` per message of a claim)
/// cut to its first [`IDS_SHOWN`] and one mark counting the rest.
fn collapsed(marks: Vec<Mark>) -> Vec<Mark> {
    let mut kept: Vec<Mark> = Vec::new();
    let mut run = 0;
    let mut left_out = 0;
    for mark in marks {
        let same = kept.last().is_some_and(|last| last.kind() == mark.kind());
        if !same {
            flush_left_out(&mut kept, &mut left_out);
            run = 0;
        }
        run += 1;
        if run > IDS_SHOWN && mark.kind().is_some() {
            left_out += 1;
        } else {
            kept.push(mark);
        }
    }
    flush_left_out(&mut kept, &mut left_out);
    kept
}

/// A label's first word: what a run's marks have in common.
fn first_word(label: &str) -> &str {
    label.split(' ').next().unwrap_or_default()
}

/// After a run cut short: one mark like its last, counting the `left_out`.
fn flush_left_out(kept: &mut Vec<Mark>, left_out: &mut usize) {
    if *left_out == 0 {
        return;
    }
    let word = first_word;
    let counted = match kept.last() {
        Some(Mark::Arrow {
            from,
            to,
            label,
            style,
        }) => Mark::Arrow {
            from: *from,
            to: *to,
            label: format!("{} {}", more(*left_out), word(label)),
            style: *style,
        },
        Some(Mark::Note { lane, label, style }) => Mark::Note {
            lane: *lane,
            label: format!("{} {}", more(*left_out), word(label)),
            style: *style,
        },
        Some(Mark::Crash { .. }) | None => return,
    };
    kept.push(counted);
    *left_out = 0;
}

impl Mark {
    /// What marks of one run share (lanes, style and the label's first
    /// word); `None` for a crash, which is never cut.
    fn kind(&self) -> Option<(Lane, Lane, Style, &str)> {
        let word = first_word;
        match self {
            Mark::Arrow {
                from,
                to,
                label,
                style,
            } => Some((*from, *to, *style, word(label))),
            Mark::Note { lane, label, style } => Some((*lane, *lane, *style, word(label))),
            Mark::Crash { .. } => None,
        }
    }

    /// The same mark, drawn as lost.
    fn struck(self) -> Self {
        match self {
            Mark::Arrow {
                from, to, label, ..
            } => Mark::Arrow {
                from,
                to,
                label,
                style: Style::Lost,
            },
            Mark::Note { lane, label, .. } => Mark::Note {
                lane,
                label,
                style: Style::Lost,
            },
            crash @ Mark::Crash { .. } => crash,
        }
    }
}

fn row_marks(row: &Transition, awaiting: &mut Awaiting) -> Vec<Mark> {
    let (from, to) = input_lanes(row);
    let label = input_label(&row.input);
    let outputs = match &row.answer {
        Err(refusal) => {
            return vec![
                Mark::Arrow {
                    from,
                    to,
                    label,
                    style: Style::Refused,
                },
                Mark::Note {
                    lane: to,
                    label: format!("error: {refusal}"),
                    style: Style::Refused,
                },
            ];
        }
        Ok(()) => &row.outputs,
    };
    let mut marks = vec![Mark::Arrow {
        from,
        to,
        label,
        style: Style::Input,
    }];
    let before = awaiting.clone();
    let mut list = to;
    for output in outputs {
        if let Output::Spliced(splice) = output {
            list = Lane::list(splice.target);
        }
        follow(awaiting, output);
        marks.push(output_mark(output, list, row.input.is_completion()));
    }
    if *awaiting != before {
        marks.extend(await_mark(awaiting));
    }
    collapsed(marks)
}

/// The input's transcript line, a list of more than [`IDS_SHOWN`] messages
/// cut to its first ones and a count of the rest.
fn input_label(input: &Input) -> String {
    let cut = |messages: &[courier_core::Message]| messages[..IDS_SHOWN].to_vec();
    let (shorter, left_out) = match input {
        Input::Splice {
            target,
            start,
            removed,
            inserted,
        } if inserted.len() > IDS_SHOWN => (
            Input::Splice {
                target: *target,
                start: *start,
                removed: *removed,
                inserted: cut(inserted),
            },
            inserted.len() - IDS_SHOWN,
        ),
        Input::PreStep(PreStepDecision::Enter(batch)) if batch.len() > IDS_SHOWN => (
            Input::PreStep(PreStepDecision::Enter(cut(batch))),
            batch.len() - IDS_SHOWN,
        ),
        Input::Send { .. }
        | Input::Append { .. }
        | Input::Prepend { .. }
        | Input::Replace { .. }
        | Input::Remove { .. }
        | Input::Splice { .. }
        | Input::Cancel { .. }
        | Input::Dispose
        | Input::WhenIdle
        | Input::PreStep(_)
        | Input::Step(_) => return command_line(input),
    };
    format!("{} {}", command_line(&shorter), more(left_out))
}

/// An output's transcript line, a splice of more than [`IDS_SHOWN`]
/// messages cut as [`input_label`] cuts one.
fn output_label(output: &Output) -> String {
    match output {
        Output::Spliced(splice) if splice.inserted.len() > IDS_SHOWN => {
            let shorter = Splice {
                inserted: splice.inserted[..IDS_SHOWN].iter().cloned().collect(),
                ..*splice
            };
            format!(
                "{} ({} inserted)",
                Output::Spliced(shorter),
                more(splice.inserted.len() - IDS_SHOWN)
            )
        }
        Output::Spliced(_)
        | Output::TurnStart { .. }
        | Output::StepStart { .. }
        | Output::UserMessage(_)
        | Output::StepEnd { .. }
        | Output::TurnEnd { .. }
        | Output::Inserted { .. }
        | Output::Claimed { .. }
        | Output::Discarded { .. }
        | Output::Status { .. }
        | Output::Error { .. }
        | Output::Idle => output.to_string(),
    }
}

/// Where the input's arrow starts and ends.
fn input_lanes(row: &Transition) -> (Lane, Lane) {
    match &row.input {
        // A waking send to an aborted turn lands in `next-turn` whatever its
        // target: point at where it landed.
        Input::Send { target, .. } => (Lane::Client, edited_list(row, Lane::list(*target))),
        Input::Append { target, .. }
        | Input::Prepend { target, .. }
        | Input::Splice { target, .. } => (Lane::Client, Lane::list(*target)),
        Input::Replace { .. } | Input::Remove { .. } => {
            (Lane::Client, edited_list(row, Lane::NextTurn))
        }
        Input::Cancel { .. } | Input::Dispose | Input::WhenIdle => (Lane::Client, Lane::Driver),
        Input::PreStep(_) => (Lane::PreStepHook, Lane::Driver),
        Input::Step(_) => (Lane::StepHook, Lane::Driver),
    }
}

/// The list the row's first splice changed, else `otherwise`.
fn edited_list(row: &Transition, otherwise: Lane) -> Lane {
    let outputs = &row.outputs;
    outputs
        .iter()
        .find_map(|output| {
            let Output::Spliced(splice) = output else {
                return None;
            };
            Some(Lane::list(splice.target))
        })
        .unwrap_or(otherwise)
}

/// One output's mark; `list` is the lane of the latest splice, which the
/// `inserted`/`discarded` notifications after it are about.
fn output_mark(output: &Output, list: Lane, by_completion: bool) -> Mark {
    let label = output_label(output);
    let arrow = |from, to, style| Mark::Arrow {
        from,
        to,
        label: label.clone(),
        style,
    };
    let note = |lane, style| Mark::Note {
        lane,
        label: label.clone(),
        style,
    };
    match output {
        Output::Spliced(splice) => {
            let claim = splice.outcome.is_none() && splice.inserted.is_empty();
            match (claim, by_completion) {
                (true, _) => arrow(list, Lane::Driver, Style::Durable),
                (false, true) => arrow(Lane::Driver, list, Style::Durable),
                (false, false) => note(list, Style::Durable),
            }
        }
        Output::StepStart { .. } | Output::UserMessage(_) => {
            arrow(Lane::Driver, Lane::StepHook, Style::Durable)
        }
        Output::TurnStart { .. } | Output::StepEnd { .. } | Output::TurnEnd { .. } => {
            note(Lane::Driver, Style::Durable)
        }
        Output::Inserted { .. } | Output::Discarded { .. } => {
            arrow(list, Lane::Client, Style::Live)
        }
        Output::Claimed { .. } | Output::Status { .. } | Output::Error { .. } | Output::Idle => {
            arrow(Lane::Driver, Lane::Client, Style::Live)
        }
    }
}

/// Moves the awaited point along one output: a boundary (turn start or step
/// end) claims and awaits pre-step, a step start awaits the step, a turn end
/// awaits nothing until the next turn starts.
fn follow(awaiting: &mut Awaiting, output: &Output) {
    match output {
        Output::TurnStart { turn } | Output::StepEnd { turn, .. } => {
            *awaiting = Awaiting::PreStep(*turn, Vec::new());
        }
        Output::Claimed { message, .. } => {
            if let Awaiting::PreStep(_, batch) = awaiting {
                batch.push(message.id().clone());
            }
        }
        Output::StepStart { turn, step } => *awaiting = Awaiting::Step(*turn, *step),
        Output::TurnEnd { .. } => *awaiting = Awaiting::Nothing,
        Output::Spliced(_)
        | Output::UserMessage(_)
        | Output::Inserted { .. }
        | Output::Discarded { .. }
        | Output::Status { .. }
        | Output::Error { .. }
        | Output::Idle => {}
    }
}

fn await_mark(awaiting: &Awaiting) -> Option<Mark> {
    let (to, label) = match awaiting {
        Awaiting::Nothing => return None,
        Awaiting::PreStep(_, batch) => {
            let mut ids: Vec<&str> = batch
                .iter()
                .take(IDS_SHOWN)
                .map(MessageId::as_str)
                .collect();
            let counted = (batch.len() > IDS_SHOWN).then(|| more(batch.len() - IDS_SHOWN));
            ids.extend(counted.as_deref());
            (
                Lane::PreStepHook,
                format!("awaits pre-step [{}]", ids.join(" ")),
            )
        }
        Awaiting::Step(turn, step) => (Lane::StepHook, format!("awaits step {turn}.{step}")),
    };
    Some(Mark::Arrow {
        from: Lane::Driver,
        to,
        label,
        style: Style::Await,
    })
}
