//! Mermaid `sequenceDiagram` text, for Markdown viewers that render it.

use std::fmt::{self, Write};
use std::io;
use std::path::Path;

use super::Diagram;
use super::sequence::{Lane, Mark, Shown, Style, shown};

/// The diagram as Mermaid text: one participant per lane, a note opening
/// each row, and the broken row boxed in red with the violation under it.
pub(crate) fn mermaid(diagram: &Diagram) -> String {
    Mermaid(diagram).to_string()
}

/// Whether the whole file at `path` is Mermaid text [`mermaid`] wrote, for
/// `diagram --out` to replace: its header, then only indented lines (a
/// line the user added at the margin, or any file of another kind, is
/// kept).
pub fn charted_here(path: &Path) -> io::Result<bool> {
    let Some(text) = crate::files::whole_text(path)? else {
        return Ok(false);
    };
    let Some(body) = text.strip_prefix(HEADER) else {
        return Ok(false);
    };
    Ok(body.starts_with("    title ")
        && body.ends_with('\n')
        && body.lines().all(|line| line.starts_with("    ")))
}

/// How the text starts.
const HEADER: &str = "sequenceDiagram\n";

/// The text as a `Display`, so every write returns its `fmt::Result`
/// through `?` instead of dropping it, and `to_string` is the one caller.
struct Mermaid<'a>(&'a Diagram);

impl fmt::Display for Mermaid<'_> {
    fn fmt(&self, text: &mut fmt::Formatter<'_>) -> fmt::Result {
        let diagram = self.0;
        text.write_str(HEADER)?;
        writeln!(text, "    title {}", escape(&diagram.title))?;
        for lane in Lane::ALL {
            writeln!(text, "    participant {} as {}", alias(lane), lane.title())?;
        }
        let everyone = format!("{},{}", alias(Lane::Client), alias(Lane::StepHook));
        for shown in shown(&diagram.rows, diagram.marked_row()) {
            let (index, row_marks) = match shown {
                Shown::Row(index, row_marks) => (index, row_marks),
                Shown::Elided { from, to } => {
                    let elided = super::elided(from, to);
                    writeln!(text, "    Note over {everyone}: {}", escape(&elided))?;
                    continue;
                }
            };
            let broken = diagram
                .broken
                .as_ref()
                .filter(|(row, _)| *row == index)
                .map(|(_, violation)| {
                    format!("BROKEN {}: {}", violation.property, violation.detail)
                });
            let diverged = diagram
                .diverged
                .as_ref()
                .filter(|diverged| diverged.row == index)
                .map(|diverged| format!("DIVERGES: {}", diverged.text()));
            let broken = broken.or(diverged);
            if broken.is_some() {
                text.write_str("    rect rgb(253, 226, 226)\n")?;
            }
            writeln!(text, "    Note over {everyone}: row {}", index + 1)?;
            for mark in &row_marks {
                line(text, mark, &everyone)?;
            }
            if let Some(said) = broken {
                writeln!(text, "    Note over {everyone}: {}", escape(&said))?;
                text.write_str("    end\n")?;
            }
        }
        Ok(())
    }
}

/// One arrow or note, indented, on its own line; a crash is a note over
/// `everyone` in an orange band.
fn line(text: &mut impl Write, mark: &Mark, everyone: &str) -> fmt::Result {
    match mark {
        Mark::Arrow {
            from,
            to,
            label,
            style,
        } => writeln!(
            text,
            "    {}{}{}: {}",
            alias(*from),
            arrow(*style),
            alias(*to),
            styled(label, *style)
        ),
        Mark::Note { lane, label, style } => writeln!(
            text,
            "    Note over {}: {}",
            alias(*lane),
            styled(label, *style)
        ),
        Mark::Crash { label } => writeln!(
            text,
            "    rect rgb(255, 224, 178)\n    Note over {everyone}: {}\n    end",
            escape(label)
        ),
    }
}

/// Solid for inputs and the durable log, dashed for live notifications,
/// open-headed for awaits, crossed for refusals, dotted and crossed for
/// events a crash lost.
fn arrow(style: Style) -> &'static str {
    match style {
        Style::Input | Style::Durable => "->>",
        Style::Live => "-->>",
        Style::Await => "--)",
        Style::Refused => "-x",
        Style::Lost => "--x",
    }
}

/// The escaped label; a lost event's is struck through with combining
/// overlays (Mermaid's sequence text has no markup for it) after `lost:`,
/// so it still reads where the overlay does not render.
fn styled(label: &str, style: Style) -> String {
    match style {
        Style::Lost => {
            let struck: String = label.chars().flat_map(|c| [c, '\u{336}']).collect();
            format!("lost: {}", escape(&struck))
        }
        Style::Input | Style::Durable | Style::Live | Style::Await | Style::Refused => {
            escape(label)
        }
    }
}

/// Short participant ids; the titles carry the readable names.
fn alias(lane: Lane) -> &'static str {
    match lane {
        Lane::Client => "C",
        Lane::NextTurn => "NT",
        Lane::NextStep => "NS",
        Lane::Driver => "D",
        Lane::PreStepHook => "P",
        Lane::StepHook => "S",
    }
}

/// Mermaid reads `;` as a statement break and `#` as the start of an entity
/// code, and passes `<`/`>` through as HTML; write them as entity codes.
/// A control or bidi character (from an id, a source kind, a hook's reason)
/// prints escaped in place (`\n`, `\u{1b}`), as every command prints one:
/// it could end a statement, or act on the terminal the text is shown in.
fn escape(text: &str) -> String {
    let text = crate::files::escaped(text);
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '#' => escaped.push_str("#35;"),
            ';' => escaped.push_str("#59;"),
            '<' => escaped.push_str("#60;"),
            '>' => escaped.push_str("#62;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn statement_breaks_and_markup_are_entity_codes() {
        assert_eq!(escape("a;b #c <d>"), "a#59;b #35;c #60;d#62;");
    }

    #[test]
    fn control_and_bidi_characters_print_escaped() {
        assert_eq!(
            escape("a\u{1b}[2J\nb\u{7}\u{202e}c"),
            "a\\u{1b}[2J\\nb\\u{7}\\u{202e}c"
        );
    }
}
