//! The driver task: the one place that awaits the hooks. It takes the job the
//! core's state names, runs the matching hook against the turn's abort, and
//! feeds the result back as the completion; then it looks again. It owns no
//! delivery logic: every decision stays in the core.
//!
//! It is also where the user's code can fail: a hook that panics (when
//! called or polled) fails its point, and a driver task that is dropped
//! before the agent's end tells the agent so, which then refuses every call
//! instead of accepting work nothing will serve.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::task::Poll;

use courier_core::{Input, PreStepDecision, StepOutcome};

use crate::handle::WeakHandle;
use crate::hooks::{Boundary, Hook, HookPanic, PreStepHook, StepCall, StepHook};
use crate::shared::{Interrupt, Job, Shared};
use crate::sync::{Arc, INSIDE_HOOK, is_marked, marked};
use crate::unwind::{Guarded, drop_guarded, panic_message};

/// Serves one agent: spawn [`DriverTask::run`] on any executor. Named apart
/// from the core's driver (the state of a running turn) because it outlives
/// every turn. Until it runs, no hook is called, no turn gets past its first
/// claim, and `when_idle` after a waking send never resolves. Once it is
/// dropped (its future or task included) before the agent is disposed and
/// idle, every later call on the agent returns [`crate::Error::DriverGone`].
#[must_use = "the agent makes no progress until its driver task runs: spawn `driver.run()`"]
pub struct DriverTask<P, S> {
    shared: Arc<Shared>,
    /// The user's hooks may panic when dropped too.
    pre_step_hook: Guarded<P>,
    step_hook: Guarded<S>,
    #[cfg(feature = "mutants")]
    racy_wake: bool,
}

/// How a hook's call ended.
enum Settled<T> {
    Done(T),
    /// The turn was aborted; the hook's future was dropped.
    Aborted,
    /// The hook panicked; the message.
    Panicked(String),
    /// The log failed: the driver task stops (the hook's future was
    /// dropped), as a crash stops it.
    Stopped,
}

impl<P: PreStepHook, S: StepHook> DriverTask<P, S> {
    pub(crate) fn new(shared: Arc<Shared>, pre_step_hook: P, step_hook: S) -> Self {
        Self {
            shared,
            pre_step_hook: Guarded::new(pre_step_hook),
            step_hook: Guarded::new(step_hook),
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
    /// the core, which knows the turn is aborted, ends it `aborted`. A hook
    /// that panics is that point's `fail` too, kept as a [`HookPanic`]. A
    /// log failure stops it, even mid-hook (the hook's future is dropped).
    ///
    /// Its future is `Send` whenever the hooks are (they need not be
    /// `Sync`): no reference to the task itself is held across a wait.
    pub async fn run(mut self) {
        let mut served = 0u32;
        #[cfg(feature = "mutants")]
        let racy = self.racy_wake;
        loop {
            let shared = &*self.shared;
            let job = poll_fn(|context| {
                #[cfg(feature = "mutants")]
                if racy {
                    return shared.poll_job_racy(context);
                }
                shared.poll_job(context)
            })
            .await;
            let Some(job) = job else {
                break;
            };
            if !self.shared.job_durable() {
                // The log failed: nothing is completed, the task stops.
                return;
            }
            let agent = WeakHandle::new(Arc::clone(&self.shared));
            let completion = match job {
                Job::PreStep { turn, step, batch } => {
                    let boundary = Boundary {
                        turn,
                        step,
                        batch,
                        agent,
                    };
                    let hook = self.pre_step_hook.get_mut();
                    let settled = settle(&self.shared, turn, || hook.decide(boundary)).await;
                    let ControlFlow::Continue(decision) =
                        self.failed_unless_done(settled, turn, step, Hook::PreStep)
                    else {
                        return;
                    };
                    let decision =
                        decision.and_then(|decision| self.loggable(decision, turn, step));
                    Input::PreStep(decision.unwrap_or(PreStepDecision::Fail))
                }
                Job::Step {
                    turn,
                    step,
                    entered,
                } => {
                    let call = StepCall {
                        turn,
                        step,
                        entered,
                        agent,
                    };
                    let hook = self.step_hook.get_mut();
                    let settled = settle(&self.shared, turn, || hook.step(call)).await;
                    let ControlFlow::Continue(outcome) =
                        self.failed_unless_done(settled, turn, step, Hook::Step)
                    else {
                        return;
                    };
                    Input::Step(outcome.unwrap_or(StepOutcome::Fail))
                }
            };
            self.shared.complete(completion);
            served = served.wrapping_add(1);
            if served.is_multiple_of(JOBS_PER_YIELD) {
                yield_once().await;
            }
        }
    }

    /// The hook's answer; `None` (the point fails) when it was aborted or
    /// panicked, and a panic is kept for [`crate::Handle::hook_panics`];
    /// `Break` when the log failed (nothing is completed: the driver task
    /// stops).
    fn failed_unless_done<T>(
        &self,
        settled: Settled<T>,
        turn: u64,
        step: u64,
        hook: Hook,
    ) -> ControlFlow<(), Option<T>> {
        match settled {
            Settled::Done(answer) => ControlFlow::Continue(Some(answer)),
            Settled::Aborted => ControlFlow::Continue(None),
            Settled::Panicked(message) => {
                self.shared.hook_panicked(HookPanic {
                    turn,
                    step,
                    hook,
                    message,
                });
                ControlFlow::Continue(None)
            }
            Settled::Stopped => ControlFlow::Break(()),
        }
    }

    /// `decision`, unless it enters a message whose `user/message` line
    /// would not read back at a resume: then `None` (the boundary fails, as
    /// a panic fails it), kept with the panics for
    /// [`crate::Handle::hook_panics`].
    fn loggable(&self, decision: PreStepDecision, turn: u64, step: u64) -> Option<PreStepDecision> {
        let entered = match &decision {
            PreStepDecision::Enter(entered) => entered.as_slice(),
            PreStepDecision::Pass | PreStepDecision::Reject | PreStepDecision::Fail => &[],
        };
        // Each entered message is a `user/message` line of its own.
        let mut lines = entered.chunks(1);
        let Some(error) = lines.find_map(crate::kept::unloggable) else {
            return Some(decision);
        };
        self.shared.hook_panicked(HookPanic {
            turn,
            step,
            hook: Hook::PreStep,
            message: error.to_string(),
        });
        None
    }
}

impl<P, S> Drop for DriverTask<P, S> {
    fn drop(&mut self) {
        self.shared.driver_gone();
    }
}

/// Jobs the driver task serves between two times it gives its thread back:
/// hooks that are always ready at once never make it wait, and without this
/// it would keep its thread from every other task (a cancel, the executor's
/// shutdown) for as long as their turn runs, for ever with a model that
/// always calls tools.
const JOBS_PER_YIELD: u32 = 16;

/// Returns `Pending` once, asking to be polled again: any executor then
/// runs its other ready tasks first.
async fn yield_once() {
    let mut yielded = false;
    poll_fn(|context| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        context.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// Calls the hook with `start` and runs its future until it finishes, `turn`
/// is aborted or the log fails (its future is dropped), or it panics. The
/// abort and the failure are checked before each poll, so a hook is not
/// even polled for a turn that is already aborted. Both the call and each
/// poll run marked as inside this agent's hook, for [`inside_hook_of`]. The
/// future is dropped here, inside the same guard: a hook whose future
/// panics when dropped (a user's guard in it, when a cancel drops it
/// mid-await) has panicked, and the driver task goes on.
async fn settle<F: Future>(
    shared: &Shared,
    turn: u64,
    start: impl FnOnce() -> F,
) -> Settled<F::Output> {
    let hook = match catch_unwind(AssertUnwindSafe(|| inside_hook(shared, start))) {
        Ok(hook) => hook,
        Err(payload) => return Settled::Panicked(panic_message(payload)),
    };
    let mut hook = InFlight {
        future: pin!(Some(hook)),
        shared,
    };
    let settled = poll_fn(|context| {
        if let Poll::Ready(interrupt) = shared.poll_interrupted(turn, context) {
            return Poll::Ready(match interrupt {
                Interrupt::Aborted => Settled::Aborted,
                Interrupt::LogFailed => Settled::Stopped,
            });
        }
        let Some(running) = hook.future.as_mut().as_pin_mut() else {
            unreachable!("the hook's future is dropped only once settled");
        };
        let polled = catch_unwind(AssertUnwindSafe(|| {
            inside_hook(shared, || running.poll(context))
        }));
        match polled {
            Ok(poll) => poll.map(Settled::Done),
            Err(payload) => Poll::Ready(Settled::Panicked(panic_message(payload))),
        }
    })
    .await;
    match (hook.drop_future(), settled) {
        (Ok(()), settled) => settled,
        // Nothing is completed once the log failed, not even a `fail`.
        (Err(payload), Settled::Stopped) => {
            drop_guarded(payload);
            Settled::Stopped
        }
        (Err(payload), Settled::Done(_) | Settled::Aborted | Settled::Panicked(_)) => {
            Settled::Panicked(panic_message(payload))
        }
    }
}

/// A hook's future in flight. However [`settle`] ends, it is dropped in
/// place, marked as inside the hook and under `catch_unwind`: also when
/// `settle` itself is dropped mid-await (the `run` future dropped by the
/// embedder's own `select!`), where a panic in the user's `Drop` would
/// otherwise unwind into the embedder's executor.
struct InFlight<'a, F> {
    future: Pin<&'a mut Option<F>>,
    shared: &'a Shared,
}

impl<F> InFlight<'_, F> {
    /// Drops the future (if not yet); the payload of a panic in its `Drop`.
    fn drop_future(&mut self) -> Result<(), Box<dyn Any + Send>> {
        let future = &mut self.future;
        catch_unwind(AssertUnwindSafe(|| {
            inside_hook(self.shared, || future.as_mut().set(None));
        }))
    }
}

impl<F> Drop for InFlight<'_, F> {
    fn drop(&mut self) {
        // Settled: `settle` dropped the future already.
        if self.future.is_none() {
            return;
        }
        // Dropped mid-await: no point is completed, so the panic is no
        // point's `fail`; it is only kept from unwinding.
        if let Err(payload) = self.drop_future() {
            drop_guarded(payload);
        }
    }
}

/// Runs `body` marked as inside `shared`'s hook.
fn inside_hook<R>(shared: &Shared, body: impl FnOnce() -> R) -> R {
    marked(&INSIDE_HOOK, shared, body)
}

/// Whether this thread is inside one of `shared`'s hooks right now: a wait
/// for that agent from here would wait for itself.
pub(crate) fn inside_hook_of(shared: &Shared) -> bool {
    is_marked(&INSIDE_HOOK, shared)
}
