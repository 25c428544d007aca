//! The two user-supplied async hooks the driver awaits: the pre-step
//! decision over a claimed batch and the model step. Each is a trait, so a
//! hook can keep state across calls, plus a closure adapter for the common
//! case. The driver runs one hook at a time; a cancel that aborts the turn
//! drops the hook's future (that is how cancellation reaches it), and the
//! core still decides how the turn ends.

use std::future::Future;

use courier_core::{Message, PreStepDecision, StepOutcome};

/// A boundary of a running turn: what the core claimed for the next step.
#[derive(Clone, Debug)]
pub struct Boundary {
    /// The open turn.
    pub turn: u64,
    /// Steps opened in this turn so far (0 at the turn's first boundary).
    pub step: u64,
    /// The claimed batch, `next-step` items first; possibly empty.
    pub batch: Vec<Message>,
}

/// One model step: the messages that entered it.
#[derive(Clone, Debug)]
pub struct StepCall {
    /// The open turn.
    pub turn: u64,
    /// The step's number within the turn (1-based).
    pub step: u64,
    /// The entering batch the pre-step decision admitted, in order.
    pub entered: Vec<Message>,
}

/// Decides what enters the next step (SPEC §3 `pre-step`).
pub trait PreStep: Send + 'static {
    /// The decision over one boundary's claimed batch.
    fn decide(&mut self, boundary: Boundary) -> impl Future<Output = PreStepDecision> + Send;
}

/// Runs one model step (SPEC §3 `step`).
pub trait Model: Send + 'static {
    /// The outcome of one step.
    fn step(&mut self, call: StepCall) -> impl Future<Output = StepOutcome> + Send;
}

/// A [`PreStep`] hook made of a closure; see [`pre_step_fn`].
pub struct PreStepFn<F>(F);

/// A [`Model`] hook made of a closure; see [`model_fn`].
pub struct ModelFn<F>(F);

/// Wraps `decide(boundary) -> future of the decision` as a [`PreStep`] hook.
pub fn pre_step_fn<F, Decision>(decide: F) -> PreStepFn<F>
where
    F: FnMut(Boundary) -> Decision + Send + 'static,
    Decision: Future<Output = PreStepDecision> + Send,
{
    PreStepFn(decide)
}

/// Wraps `step(call) -> future of the outcome` as a [`Model`] hook.
pub fn model_fn<F, Outcome>(step: F) -> ModelFn<F>
where
    F: FnMut(StepCall) -> Outcome + Send + 'static,
    Outcome: Future<Output = StepOutcome> + Send,
{
    ModelFn(step)
}

impl<F, Decision> PreStep for PreStepFn<F>
where
    F: FnMut(Boundary) -> Decision + Send + 'static,
    Decision: Future<Output = PreStepDecision> + Send,
{
    fn decide(&mut self, boundary: Boundary) -> impl Future<Output = PreStepDecision> + Send {
        (self.0)(boundary)
    }
}

impl<F, Outcome> Model for ModelFn<F>
where
    F: FnMut(StepCall) -> Outcome + Send + 'static,
    Outcome: Future<Output = StepOutcome> + Send,
{
    fn step(&mut self, call: StepCall) -> impl Future<Output = StepOutcome> + Send {
        (self.0)(call)
    }
}
