//! Sequence diagrams of one run: a transcript, a checker counterexample or a
//! simulator race report, drawn as lanes (client, both pending lists, the
//! driver and its two hooks) with one row per input or restart. People
//! debugging a race would rather look than read a 40-line transcript.
//!
//! Rendering is pure: a [`Diagram`] (the inputs, what each emitted and the
//! first property that broke) goes in, SVG or Mermaid text comes out.
//! [`trace`] builds a `Diagram` by running inputs through the core and the
//! checker; [`load`] does so for a file.

mod load;
mod mermaid;
mod sequence;
mod svg;
pub mod trace;

use courier_check::Violation;
use courier_core::{Output, Transition};

pub use load::{
    INPUTS_DRAWN_MAX, from_report, from_transcript, load, picture_beside, svg_beside, title,
    write_beside,
};
pub use mermaid::charted_here;
pub use sequence::{Lane, ROWS_DRAWN_MAX};
pub use svg::drawn_here;

/// A whole run, ready to draw.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagram {
    /// What the run is (a file name, the variant).
    pub title: String,
    /// One row per input or restart, in order.
    pub rows: Vec<Row>,
    /// The first property that broke and the 0-based row where it did.
    pub broken: Option<(usize, Violation)>,
    /// A transcript's `run` that did not reach idle within the completion
    /// cap (a liveness failure), as `line N: why`: the rows end there.
    pub stalled: Option<String>,
    /// Where another implementation first printed something else (a
    /// `courier sim --against` divergence transcript), and what.
    pub diverged: Option<Diverged>,
    /// What the reader should know that the picture does not say (a
    /// variant drawn instead of the one the file names), one line each.
    pub notes: Vec<String>,
}

/// The first row where another implementation's outputs differ from the
/// contract's, drawn beside the contract's own.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diverged {
    /// The 0-based row.
    pub row: usize,
    /// What the other implementation printed there, line by line.
    pub other: Vec<String>,
}

impl Diverged {
    /// One line for the picture and the verdict.
    pub(crate) fn text(&self) -> String {
        // Another program's lines: each at most 200 characters, escaped.
        let other: Vec<String> = self.other.iter().map(crate::files::shown).collect();
        format!(
            "the other implementation printed instead: {}",
            other.join(" | ")
        )
    }
}

/// One row of the picture. A restart (SPEC §11) is not an input: nothing
/// sends it, it replaces the agent, so it is drawn as its own kind of row.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Row {
    /// An input and what the core did with it.
    Input(Transition),
    /// A crash and resume.
    Restart {
        /// How many durable events the crash lost (clamped to the log).
        lose: usize,
        /// The durable events the crash lost, in log order.
        lost: Vec<Output>,
        /// What the resume printed: the closers of the kept log.
        closers: Vec<Output>,
    },
}

/// An output format of `courier diagram`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Format {
    /// A self-contained SVG picture (no scripts, no fonts or links fetched).
    Svg,
    /// Mermaid `sequenceDiagram` text, for Markdown viewers that render it.
    Mermaid,
}

impl Diagram {
    /// The diagram in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Svg => svg::svg(self),
            Format::Mermaid => mermaid::mermaid(self),
        }
    }

    /// One line saying whether and where a property broke (or the run
    /// diverged from another implementation).
    pub fn verdict(&self) -> String {
        match &self.broken {
            None if let Some(stalled) = &self.stalled => {
                format!("liveness failure after row {}: {stalled}", self.rows.len())
            }
            None if let Some(diverged) = &self.diverged => format!(
                "diverges at row {} of {}: {}",
                diverged.row + 1,
                self.rows.len(),
                diverged.text()
            ),
            None => format!("{}, every property holds", self.counted()),
            Some((row, violation)) => format!(
                "{} broke at row {} of {}: {}",
                violation.property,
                row + 1,
                self.rows.len(),
                // A detail may list every pending id: at most 200 characters.
                crate::files::shown(&violation.detail)
            ),
        }
    }

    /// The row the picture must show: the broken one, else the diverged one.
    pub(crate) fn marked_row(&self) -> Option<usize> {
        let broken = self.broken.as_ref().map(|(row, _)| *row);
        broken.or(self.diverged.as_ref().map(|diverged| diverged.row))
    }

    /// A line saying which rows the picture leaves out, when it is longer
    /// than [`ROWS_DRAWN_MAX`] rows.
    pub fn elision(&self) -> Option<String> {
        let gaps: Vec<String> = sequence::shown(&self.rows, self.marked_row())
            .into_iter()
            .filter_map(|shown| match shown {
                sequence::Shown::Elided { from, to } => Some(format!("{}-{to}", from + 1)),
                sequence::Shown::Row(..) => None,
            })
            .collect();
        (!gaps.is_empty()).then(|| {
            format!(
                "note: {} rows, more than the {ROWS_DRAWN_MAX} a picture draws: rows {} \
                 are left out (`courier replay` and `courier shrink` read them all)",
                self.rows.len(),
                gaps.join(", ")
            )
        })
    }

    /// The inputs drawn, and the restarts when there are any.
    fn counted(&self) -> String {
        let restarts = self
            .rows
            .iter()
            .filter(|row| matches!(row, Row::Restart { .. }))
            .count();
        let inputs = self.rows.len() - restarts;
        match restarts {
            0 => format!("{inputs} inputs"),
            1 => format!("{inputs} inputs and 1 restart"),
            _ => format!("{inputs} inputs and {restarts} restarts"),
        }
    }
}

/// The text standing in for rows `from..to` (0-based) left out.
fn elided(from: usize, to: usize) -> String {
    format!(
        "... rows {}-{to} not drawn ({} rows: a picture this long is scrolled, not read) ...",
        from + 1,
        to - from
    )
}
