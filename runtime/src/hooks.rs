//! The two user-supplied async hooks the driver task awaits: the pre-step
//! hook's decision over a claimed batch and the step hook's run of one step
//! (where an agent calls its LLM). Each is a trait, so a hook can keep state
//! across calls, plus a closure adapter for the common case. The driver task
//! runs one hook at a time; a cancel that aborts the turn drops the hook's
//! future (that is how cancellation reaches it), and the core still decides
//! how the turn ends (a log failure drops it too, and the driver task stops
//! there). A hook that panics fails its point instead (SPEC §5 `fail`), and
//! the panic is kept as a [`HookPanic`]; a hook whose `Drop` panics is
//! caught when the driver task drops it.
//!
//! Each call carries a [`WeakHandle`] to its agent, so a hook can call the
//! agent mid-step (a tool's result injected into the next step) without
//! keeping it alive: a strong handle held by a hook would keep the agent
//! and its driver task from ever ending.

use std::future::Future;

use courier_core::{Message, PreStepDecision, StepOutcome};

use crate::handle::WeakHandle;

/// A boundary of a running turn: what the core claimed for the next step.
#[derive(Clone, Debug)]
pub struct Boundary {
    /// The open turn.
    pub turn: u64,
    /// Steps opened in this turn so far (0 at the turn's first boundary).
    pub step: u64,
    /// The claimed batch, `next-step` items first; possibly empty.
    pub batch: Vec<Message>,
    /// The agent, without keeping it alive.
    pub agent: WeakHandle,
}

/// One step: the messages that entered it.
#[derive(Clone, Debug)]
pub struct StepCall {
    /// The open turn.
    pub turn: u64,
    /// The step's number within the turn (1-based).
    pub step: u64,
    /// The entering batch the pre-step decision admitted, in order.
    pub entered: Vec<Message>,
    /// The agent, without keeping it alive.
    pub agent: WeakHandle,
}

/// Which hook a [`HookPanic`] came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Hook {
    /// The [`PreStepHook`]: its point was completed with `fail`.
    PreStep,
    /// The [`StepHook`]: its point was completed with `fail`.
    Step,
}

/// A user hook that panicked (while called or polled). The driver task
/// completed the awaited point with `fail`, so the core ended the turn
/// `error` (after `agent/error`) and the agent went on serving.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HookPanic {
    /// The turn whose point failed.
    pub turn: u64,
    /// The step: the boundary's steps opened so far, or the step run.
    pub step: u64,
    /// The hook that panicked.
    pub hook: Hook,
    /// The panic's message (its `&str` or `String` payload).
    pub message: String,
}

/// Decides what enters the next step (SPEC §3 `pre-step`).
pub trait PreStepHook: Send + 'static {
    /// The decision over one boundary's claimed batch.
    fn decide(&mut self, boundary: Boundary) -> impl Future<Output = PreStepDecision> + Send;
}

/// Runs one step (SPEC §3 `step`); its outcome says whether the turn goes on.
pub trait StepHook: Send + 'static {
    /// The outcome of one step.
    fn step(&mut self, call: StepCall) -> impl Future<Output = StepOutcome> + Send;
}

/// A [`PreStepHook`] made of a closure; see [`pre_step_hook_fn`].
pub struct PreStepHookFn<F>(F);

/// A [`StepHook`] made of a closure; see [`step_hook_fn`].
pub struct StepHookFn<F>(F);

/// Wraps `decide(boundary) -> future of the decision` as a [`PreStepHook`].
pub fn pre_step_hook_fn<F, Decision>(decide: F) -> PreStepHookFn<F>
where
    F: FnMut(Boundary) -> Decision + Send + 'static,
    Decision: Future<Output = PreStepDecision> + Send,
{
    PreStepHookFn(decide)
}

/// Wraps `step(call) -> future of the outcome` as a [`StepHook`].
pub fn step_hook_fn<F, Outcome>(step: F) -> StepHookFn<F>
where
    F: FnMut(StepCall) -> Outcome + Send + 'static,
    Outcome: Future<Output = StepOutcome> + Send,
{
    StepHookFn(step)
}

impl<F, Decision> PreStepHook for PreStepHookFn<F>
where
    F: FnMut(Boundary) -> Decision + Send + 'static,
    Decision: Future<Output = PreStepDecision> + Send,
{
    fn decide(&mut self, boundary: Boundary) -> impl Future<Output = PreStepDecision> + Send {
        (self.0)(boundary)
    }
}

impl<F, Outcome> StepHook for StepHookFn<F>
where
    F: FnMut(StepCall) -> Outcome + Send + 'static,
    Outcome: Future<Output = StepOutcome> + Send,
{
    fn step(&mut self, call: StepCall) -> impl Future<Output = StepOutcome> + Send {
        (self.0)(call)
    }
}
