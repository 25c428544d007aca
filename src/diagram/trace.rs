//! Builds a [`Diagram`] by running inputs through the core under the shared
//! harness, so the picture shows what this build does (not what a file once
//! said) and marks the first row where a SPEC §7 property broke.

use courier_check::{Fed, Harness, Hooks, Restarted, Violation};
use courier_core::transcript::{Script, Stalled};
use courier_core::{Agent, Input, Stimulus};

use super::{Diagram, Row};

/// One agent under the checker, fed input by input, and the rows drawn.
pub struct Tracer {
    harness: Harness,
    rows: Rows,
}

/// The hook that turns every fed input and every restart into a row.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    broken: Option<(usize, Violation)>,
}

impl Rows {
    /// Adds `row`, marked when it showed the run's first violation.
    fn push(&mut self, row: Row, violation: Option<&Violation>) {
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
        self.harness.run_script(script, &mut self.rows)
    }

    /// The finished diagram.
    pub fn finish(self, title: impl Into<String>) -> Diagram {
        Diagram {
            title: title.into(),
            rows: self.rows.rows,
            broken: self.rows.broken,
            stalled: None,
            diverged: None,
            notes: Vec::new(),
        }
    }
}
