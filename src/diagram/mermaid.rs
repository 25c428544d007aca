//! Mermaid `sequenceDiagram` text, for Markdown viewers that render it.

use std::fmt::Write;

use super::Diagram;
use super::sequence::{Lane, Mark, Style, marks};

/// The diagram as Mermaid text: one participant per lane, a note opening
/// each row, and the broken row boxed in red with the violation under it.
pub fn mermaid(diagram: &Diagram) -> String {
    let mut text = String::from("sequenceDiagram\n");
    let _ = writeln!(text, "    title {}", escape(&diagram.title));
    for lane in Lane::ALL {
        let _ = writeln!(text, "    participant {} as {}", alias(lane), lane.title());
    }
    let everyone = format!("{},{}", alias(Lane::Client), alias(Lane::StepHook));
    for (index, row_marks) in marks(&diagram.rows).iter().enumerate() {
        let broken = diagram
            .broken
            .as_ref()
            .filter(|(row, _)| *row == index)
            .map(|(_, violation)| violation);
        if broken.is_some() {
            text.push_str("    rect rgb(253, 226, 226)\n");
        }
        let _ = writeln!(text, "    Note over {everyone}: row {}", index + 1);
        for mark in row_marks {
            text.push_str("    ");
            text.push_str(&line(mark));
            text.push('\n');
        }
        if let Some(violation) = broken {
            let _ = writeln!(
                text,
                "    Note over {everyone}: BROKEN {}: {}",
                violation.property,
                escape(&violation.detail)
            );
            text.push_str("    end\n");
        }
    }
    text
}

fn line(mark: &Mark) -> String {
    match mark {
        Mark::Arrow {
            from,
            to,
            label,
            style,
        } => format!(
            "{}{}{}: {}",
            alias(*from),
            arrow(*style),
            alias(*to),
            escape(label)
        ),
        Mark::Note { lane, label, .. } => format!("Note over {}: {}", alias(*lane), escape(label)),
    }
}

/// Solid for inputs and the durable log, dashed for live notifications,
/// open-headed for awaits, crossed for refusals.
fn arrow(style: Style) -> &'static str {
    match style {
        Style::Input | Style::Durable => "->>",
        Style::Live => "-->>",
        Style::Await => "--)",
        Style::Refused => "-x",
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
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '#' => escaped.push_str("#35;"),
            ';' => escaped.push_str("#59;"),
            '<' => escaped.push_str("#60;"),
            '>' => escaped.push_str("#62;"),
            '\n' => escaped.push(' '),
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
}
