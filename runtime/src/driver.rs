//! The driver task: the one place that awaits the hooks. It takes the job the
//! core's state names, runs the matching hook against the turn's abort, and
//! feeds the result back as the completion; then it looks again. It owns no
//! delivery logic: every decision stays in the core.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use courier_core::{Input, PreStepDecision, StepOutcome};

use crate::hooks::{PreStepHook, StepHook};
use crate::shared::{Job, Shared};
use crate::sync::Arc;

/// The task that drives one agent: spawn [`DriverTask::run`] on any
/// executor. Named apart from the core's driver (the state of a running turn)
/// because it outlives every turn. Until it runs, no hook is called, no turn
/// gets past its first claim, and `when_idle` after a waking send never
/// resolves.
#[must_use = "the agent makes no progress until its driver task runs: spawn `driver.run()`"]
pub struct DriverTask<P, S> {
    shared: Arc<Shared>,
    pre_step_hook: P,
    step_hook: S,
    #[cfg(feature = "mutants")]
    racy_wake: bool,
}

impl<P: PreStepHook, S: StepHook> DriverTask<P, S> {
    pub(crate) fn new(shared: Arc<Shared>, pre_step_hook: P, step_hook: S) -> Self {
        Self {
            shared,
            pre_step_hook,
            step_hook,
            #[cfg(feature = "mutants")]
            racy_wake: false,
        }
    }

    /// Plants a lost-wakeup race in the driver task's wait (see the `racy` loom
    /// test); never use it for anything else.
    #[cfg(feature = "mutants")]
    pub fn with_racy_wake(mut self) -> Self {
        self.racy_wake = true;
        self
    }

    /// Serves the agent until it is disposed and idle. A cancel that aborts
    /// the turn drops the hook in flight and completes its point with `fail`;
    /// the core, which knows the turn is aborted, ends it `aborted`.
    pub async fn run(mut self) {
        while let Some(job) = self.next_job().await {
            let completion = match job {
                Job::PreStep(boundary) => {
                    let turn = boundary.turn;
                    let hook = self.pre_step_hook.decide(boundary);
                    let decision = unless_aborted(&self.shared, turn, hook).await;
                    Input::PreStep(decision.unwrap_or(PreStepDecision::Fail))
                }
                Job::Step(call) => {
                    let turn = call.turn;
                    let hook = self.step_hook.step(call);
                    let outcome = unless_aborted(&self.shared, turn, hook).await;
                    Input::Step(outcome.unwrap_or(StepOutcome::Fail))
                }
            };
            self.shared.complete(completion);
        }
    }

    async fn next_job(&self) -> Option<Job> {
        poll_fn(|context| {
            #[cfg(feature = "mutants")]
            if self.racy_wake {
                return self.shared.poll_job_racy(context);
            }
            self.shared.poll_job(context)
        })
        .await
    }
}

/// Runs `hook` until it finishes (`Some`) or `turn` is aborted (`None`, and
/// the hook's future is dropped). The abort is checked first, so a hook is
/// not even polled for a turn that is already aborted.
async fn unless_aborted<F: Future>(shared: &Shared, turn: u64, hook: F) -> Option<F::Output> {
    let mut hook = pin!(hook);
    poll_fn(|context| {
        if shared.poll_aborted(turn, context).is_ready() {
            return Poll::Ready(None);
        }
        hook.as_mut().poll(context).map(Some)
    })
    .await
}
