//! Builds a [`Diagram`] by running inputs through the core under the shared
//! harness, so the picture shows what this build does (not what a file once
//! said) and marks the first row where a SPEC §7 property broke.

use courier_check::{Fed, Harness, Hooks, Restarted, Violation};
use courier_core::transcript::{Command, Script, Stalled, parse_command};
use courier_core::{Agent, Input, Stimulus};

use super::{Diagram, Row};

/// One agent under the checker, fed input by input, and the rows drawn.
pub struct Tracer {
    harness: Harness,
    rows: Rows,
}

/// The most rows a diagram keeps while its run is checked: each holds its
/// transition's outputs, and a transcript's `run` feeds a row per
/// completion, so a few blocks over a long inbox made millions (3 GB for an
/// 8 MB file), of which a picture draws [`super::ROWS_DRAWN_MAX`].
pub const ROWS_KEPT_MAX: usize = 2 * super::INPUTS_DRAWN_MAX;

/// The hook that turns every fed input and every restart into a row.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    broken: Option<(usize, Violation)>,
    /// Rows past [`ROWS_KEPT_MAX`], counted, not kept.
    past: usize,
}

impl Rows {
    /// Adds `row`, marked when it showed the run's first violation.
    fn push(&mut self, row: Row, violation: Option<&Violation>) {
        if self.rows.len() >= ROWS_KEPT_MAX {
            self.past += 1;
            return;
        }
        if let Some(violation) = violation {
            self.broken = Some((self.rows.len(), violation.clone()));
        }
        self.rows.push(row);
    }
}

impl Hooks for Rows {
    fn after(&mut self, _: &Harness, fed: &Fed) {
        let row = Row::Input(fed.transition.clone());
        self.push(row, fed.violation.as_ref());
    }

    fn restarted(&mut self, _: &Harness, restarted: &Restarted) {
        let row = Row::Restart {
            lose: restarted.lose,
            lost: restarted.lost.clone(),
            closers: restarted.closers.clone(),
        };
        self.push(row, restarted.violation.as_ref());
    }
}

impl Tracer {
    /// A tracer over `agent` (fresh, of the variant to draw).
    pub fn new(agent: Agent) -> Self {
        Self {
            harness: Harness::new(agent),
            rows: Rows::default(),
        }
    }

    /// Feeds every input in order, one row each. After the first violation
    /// the harness stops checking, so later rows are drawn unchecked.
    pub fn feed_all(&mut self, inputs: impl IntoIterator<Item = Input>) {
        for input in inputs {
            self.harness.feed_with(input, &mut self.rows);
        }
    }

    /// Applies every stimulus in order (an input, or a crash and resume),
    /// one row each; for traces that restart. Past the last restart no
    /// durable log is kept (nothing would cut it).
    pub fn apply_all(&mut self, stimuli: &[Stimulus]) {
        let last_restart = Stimulus::last_restart(stimuli);
        if last_restart.is_none() {
            self.harness.keep_no_log();
        }
        for (at, stimulus) in stimuli.iter().enumerate() {
            // The violation is kept by the hook, at its row.
            drop(self.harness.apply(stimulus.clone(), &mut self.rows));
            if Some(at) == last_restart {
                self.harness.keep_no_log();
            }
        }
    }

    /// Runs a transcript's commands: inputs and restarts become rows, `run`
    /// becomes one row per completion it feeds; queries and unparsable lines change
    /// nothing and draw nothing. Fails with the line of a `run` that stalled,
    /// its rows drawn up to there.
    pub fn run_script(&mut self, script: &Script) -> Result<(), (usize, Stalled)> {
        // A script that never restarts keeps no durable log (nothing would
        // cut it), as a trace past its last restart keeps none.
        let restarts = script
            .blocks()
            .any(|block| matches!(parse_command(&block.command), Ok(Command::Restart { .. })));
        if !restarts {
            self.harness.keep_no_log();
        }
        self.harness.run_script(script, &mut self.rows)
    }

    /// The finished diagram, unless its run made more rows than a diagram
    /// keeps.
    pub fn finish(self, title: impl Into<String>) -> Result<Diagram, String> {
        let Rows { rows, broken, past } = self.rows;
        if past > 0 {
            return Err(format!(
                "{} rows (a `run` draws a row per completion it feeds): too long to draw \
                 usefully (at most {ROWS_KEPT_MAX}); `courier run` checks it",
                rows.len() + past
            ));
        }
        Ok(Diagram {
            title: title.into(),
            rows,
            broken,
            stalled: None,
            diverged: None,
            notes: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{ROWS_KEPT_MAX, Rows, Tracer};
    use crate::diagram::Row;
    use courier_check::Harness;
    use courier_core::Agent;

    /// Rows past the cap are counted, not kept, and the diagram is refused
    /// naming them all: memory stays bounded by the cap, not by the run.
    #[test]
    fn a_run_past_the_rows_kept_is_counted_and_refused() {
        let mut rows = Rows::default();
        for _ in 0..ROWS_KEPT_MAX + 5 {
            let restart = Row::Restart {
                lose: 0,
                lost: Vec::new(),
                closers: Vec::new(),
            };
            rows.push(restart, None);
        }
        assert_eq!(rows.rows.len(), ROWS_KEPT_MAX);
        let tracer = Tracer {
            harness: Harness::new(Agent::new()),
            rows,
        };
        let refused = tracer.finish("t").unwrap_err();
        assert!(refused.starts_with("200005 rows"), "{refused}");
    }
}
