//! One atomic transition as every engine sees it: the input, the core's
//! answer and what it emitted. The model checker, the simulator, the diagram
//! tracer and the runtime's observer all hand this one value to the checker.

use crate::agent::Agent;
use crate::error::Refusal;
use crate::event::{Input, Output};

/// One transition of the core.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Transition {
    /// The input fed: a client's, or the driver's completion.
    pub input: Input,
    /// The core's answer; a refused input changed nothing and emitted nothing.
    pub answer: Result<(), Refusal>,
    /// What the transition emitted, in emission order.
    pub outputs: Vec<Output>,
}

impl Agent {
    /// Runs one transition and drains its outputs into a [`Transition`]:
    /// [`Agent::handle`] then [`Agent::poll_output`] until empty.
    pub fn transition(&mut self, input: Input) -> Transition {
        let answer = self.handle(input.clone());
        let outputs = self.take_outputs();
        Transition {
            input,
            answer,
            outputs,
        }
    }
}
