//! Builds a [`Diagram`] by running inputs through the core and the checker,
//! so the picture shows what this build does (not what a file once said)
//! and marks the first row where a SPEC §7 property broke.

use courier_check::{Checker, Violation};
use courier_core::transcript::{
    Command, RUN_INPUTS_MAX, Script, Stalled, default_completion, parse_command,
};
use courier_core::{Agent, Input};

use super::{Diagram, Row};

/// One agent and its checker, fed input by input.
pub struct Tracer {
    agent: Agent,
    checker: Checker,
    rows: Vec<Row>,
    broken: Option<(usize, Violation)>,
}

impl Tracer {
    /// A tracer over `agent` (fresh, of the variant to draw).
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            checker: Checker::new(),
            rows: Vec::new(),
            broken: None,
        }
    }

    /// Feeds one input and records its row. After the first violation the
    /// checker's ghost state means nothing, so later rows are drawn unchecked.
    pub fn feed(&mut self, input: Input) {
        let result = self.agent.handle(input.clone());
        let outputs: Vec<_> = std::iter::from_fn(|| self.agent.poll_output()).collect();
        if self.broken.is_none() {
            let checked = self
                .checker
                .observe(&input, &result, &outputs)
                .and_then(|()| self.checker.check_inbox(self.agent.inbox()));
            if let Err(violation) = checked {
                self.broken = Some((self.rows.len(), violation));
            }
        }
        self.rows.push(Row {
            input,
            outcome: result.map(|()| outputs),
        });
    }

    /// Feeds every input in order.
    pub fn feed_all(&mut self, inputs: impl IntoIterator<Item = Input>) {
        for input in inputs {
            self.feed(input);
        }
    }

    /// A transcript's `run`: `pass` / `completed` until idle, bounded.
    pub fn run_until_idle(&mut self) -> Result<(), Stalled> {
        for _ in 0..RUN_INPUTS_MAX {
            let Some(input) = default_completion(&self.agent) else {
                return Ok(());
            };
            self.feed(input);
        }
        Err(Stalled)
    }

    /// Runs a transcript's commands: inputs become rows, `run` becomes one
    /// row per completion it feeds; queries and unparsable lines change
    /// nothing and draw nothing. Fails with the line of a `run` that stalled.
    pub fn run_script(&mut self, script: &Script) -> Result<(), (usize, Stalled)> {
        for block in script.blocks() {
            match parse_command(&block.command) {
                Ok(Command::Input(input)) => self.feed(input),
                Ok(Command::Run) => self
                    .run_until_idle()
                    .map_err(|stalled| (block.line, stalled))?,
                Ok(Command::Inbox | Command::Status) | Err(_) => {}
            }
        }
        Ok(())
    }

    /// The finished diagram.
    pub fn finish(self, title: impl Into<String>) -> Diagram {
        Diagram {
            title: title.into(),
            rows: self.rows,
            broken: self.broken,
        }
    }
}
