//! Builds a [`Diagram`] by running inputs through the core under the shared
//! harness, so the picture shows what this build does (not what a file once
//! said) and marks the first row where a SPEC §7 property broke.

use courier_check::{Harness, Hooks, Step, Violation};
use courier_core::transcript::{Script, Stalled};
use courier_core::{Agent, Input, Stimulus, Transition};

use super::Diagram;

/// One agent under the checker, fed input by input, and the rows drawn.
pub struct Tracer {
    harness: Harness,
    rows: Rows,
}

/// The hook that turns every fed input into a row.
#[derive(Default)]
struct Rows {
    rows: Vec<Transition>,
    broken: Option<(usize, Violation)>,
}

impl Hooks for Rows {
    fn after(&mut self, _: &Harness, step: &Step) {
        if let Some(violation) = &step.violation {
            self.broken = Some((self.rows.len(), violation.clone()));
        }
        self.rows.push(step.transition.clone());
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

    /// Applies a simulator trace: inputs as [`Tracer::feed_all`], restarts
    /// through the harness (no row: a restart is not an input).
    pub fn apply_all(&mut self, stimuli: impl IntoIterator<Item = Stimulus>) {
        for stimulus in stimuli {
            self.harness.apply(stimulus, &mut self.rows);
        }
    }

    /// Runs a transcript's commands: inputs become rows, `run` becomes one
    /// row per completion it feeds; queries and unparsable lines change
    /// nothing and draw nothing. Fails with the line of a `run` that stalled.
    pub fn run_script(&mut self, script: &Script) -> Result<(), (usize, Stalled)> {
        self.harness.run_script(script, &mut self.rows)
    }

    /// The finished diagram.
    pub fn finish(self, title: impl Into<String>) -> Diagram {
        Diagram {
            title: title.into(),
            rows: self.rows.rows,
            broken: self.rows.broken,
        }
    }
}
