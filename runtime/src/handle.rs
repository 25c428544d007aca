//! The agent handle: cheap to clone, shareable across threads, and the only
//! way clients reach the core. Each call is one atomic transition; a refused
//! input returns the core's [`Refusal`] and changed nothing.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use courier_core::{
    CancelCause, Inbox, Input, Message, MessageId, Output, Refusal, Status, Target, Wakeup,
};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::driver::DriverTask;
use crate::hooks::{PreStepHook, StepHook};
use crate::journal::Durability;
use crate::observer::Observer;
use crate::resume::{ResumeError, repair_in_place};
use crate::shared::Shared;
use crate::sink::{JsonlFile, Sink};
use crate::sync::Arc;

/// A handle to one agent the runtime runs (`Clone + Send + Sync`); the agent
/// itself, a `courier_core::Agent`, sits behind it and is reached only
/// through its calls. Dropping the last handle disposes the agent, which lets
/// its driver task finish.
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// A fresh idle agent whose durable log goes to `sink` (header first,
    /// with `session_id`), and the driver task that serves its hooks.
    pub fn new<P: PreStepHook, S: StepHook>(
        session_id: &str,
        pre_step_hook: P,
        step_hook: S,
        sink: impl Sink,
    ) -> (Self, DriverTask<P, S>) {
        Self::with_durability(
            session_id,
            Durability::default(),
            pre_step_hook,
            step_hook,
            sink,
        )
    }

    /// [`Handle::new`] with the log written as `durability` says.
    pub fn with_durability<P: PreStepHook, S: StepHook>(
        session_id: &str,
        durability: Durability,
        pre_step_hook: P,
        step_hook: S,
        sink: impl Sink,
    ) -> (Self, DriverTask<P, S>) {
        let shared = Shared::new(Box::new(sink), session_id, None, durability);
        Self::build(shared, pre_step_hook, step_hook)
    }

    /// [`Handle::with_durability`], plus an `observer` handed every
    /// transition (input, answer, outputs) in the core's order, so a test
    /// can run a checker that needs the inputs too. See [`Observer`] for
    /// what it must not do.
    pub fn with_observer<P: PreStepHook, S: StepHook>(
        session_id: &str,
        durability: Durability,
        pre_step_hook: P,
        step_hook: S,
        sink: impl Sink,
        observer: impl Observer,
    ) -> (Self, DriverTask<P, S>) {
        let observer: Box<dyn Observer> = Box::new(observer);
        let shared = Shared::new(Box::new(sink), session_id, Some(observer), durability);
        Self::build(shared, pre_step_hook, step_hook)
    }

    /// Resumes the agent whose log is the file at `path` (SPEC §11), written
    /// by Courier or by dsh: the file is repaired in place (a torn final line
    /// cut off; an open turn's closers and a `session/end-seed` marker, as dsh
    /// writes at a resume, appended and fsync'd), then the agent starts idle
    /// with the replayed inbox and the next turn number, and goes on
    /// appending to the same file. A balanced log gets nothing appended, not
    /// even the marker, so resuming twice appends nothing the second time. A
    /// corrupt log is refused naming its line, and the file is not touched.
    pub fn resume<P: PreStepHook, S: StepHook>(
        path: impl AsRef<Path>,
        pre_step_hook: P,
        step_hook: S,
    ) -> Result<(Self, DriverTask<P, S>), ResumeError> {
        Self::resume_with(path, Durability::default(), pre_step_hook, step_hook)
    }

    /// [`Handle::resume`], going on with the log written as `durability`
    /// says (the repair itself is always synced).
    pub fn resume_with<P: PreStepHook, S: StepHook>(
        path: impl AsRef<Path>,
        durability: Durability,
        pre_step_hook: P,
        step_hook: S,
    ) -> Result<(Self, DriverTask<P, S>), ResumeError> {
        let path = path.as_ref();
        let kept = repair_in_place(path)?;
        let sink = JsonlFile::append(path)?;
        let shared = Shared::resumed(kept.replay.resume(), Box::new(sink), durability);
        Ok(Self::build(shared, pre_step_hook, step_hook))
    }

    fn build<P: PreStepHook, S: StepHook>(
        shared: Shared,
        pre_step_hook: P,
        step_hook: S,
    ) -> (Self, DriverTask<P, S>) {
        let shared = Arc::new(shared);
        let driver = DriverTask::new(Arc::clone(&shared), pre_step_hook, step_hook);
        (Self { shared }, driver)
    }

    /// `send(message, target, wakeup)`; refused when disposed or when the id
    /// is already pending.
    pub fn send(
        &self,
        message: impl Into<Message>,
        target: Target,
        wakeup: Wakeup,
    ) -> Result<(), Refusal> {
        self.shared
            .input(Input::send(message.into(), target, wakeup))
    }

    /// `followup = (next-turn, wake)`.
    pub fn followup(&self, message: impl Into<Message>) -> Result<(), Refusal> {
        self.send(message, Target::NextTurn, Wakeup::Wake)
    }

    /// `steer = (next-step, wake)`.
    pub fn steer(&self, message: impl Into<Message>) -> Result<(), Refusal> {
        self.send(message, Target::NextStep, Wakeup::Wake)
    }

    /// `inject = (next-step, no-wake)`.
    pub fn inject(&self, message: impl Into<Message>) -> Result<(), Refusal> {
        self.send(message, Target::NextStep, Wakeup::NoWake)
    }

    /// Edit: add at the end of a list (never wakes).
    pub fn append(&self, target: Target, message: impl Into<Message>) -> Result<(), Refusal> {
        let message = message.into();
        self.shared.input(Input::Append { target, message })
    }

    /// Edit: add at the front of a list (never wakes).
    pub fn prepend(&self, target: Target, message: impl Into<Message>) -> Result<(), Refusal> {
        let message = message.into();
        self.shared.input(Input::Prepend { target, message })
    }

    /// Edit: swap the pending `id` for `message` in place.
    pub fn replace(
        &self,
        id: impl Into<MessageId>,
        message: impl Into<Message>,
    ) -> Result<(), Refusal> {
        let (id, message) = (id.into(), message.into());
        self.shared.input(Input::Replace { id, message })
    }

    /// Edit: drop the pending `id`.
    pub fn remove(&self, id: impl Into<MessageId>) -> Result<(), Refusal> {
        self.shared.input(Input::Remove { id: id.into() })
    }

    /// Edit: the raw splice; `start` and `removed` are clamped.
    pub fn splice(
        &self,
        target: Target,
        start: usize,
        removed: usize,
        inserted: Vec<Message>,
    ) -> Result<(), Refusal> {
        self.shared.input(Input::Splice {
            target,
            start,
            removed,
            inserted,
        })
    }

    /// Aborts the running turn (its hook in flight is dropped); without
    /// `keep_inbox`, discards everything pending. Never refused.
    pub fn cancel(&self, cause: CancelCause, keep_inbox: bool) {
        let cancelled = self.shared.input(Input::Cancel { cause, keep_inbox });
        cancelled.expect("cancel is never refused");
    }

    /// Resolves at the next quiescence: at once when idle, else at the next
    /// retirement that starts no other driver. The waiter is registered by
    /// this call, not by the first poll, so it sees the state as of the call.
    pub fn when_idle(&self) -> WhenIdle {
        WhenIdle {
            ticket: self.shared.when_idle(),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Disposes the agent (discards everything pending, aborts the turn, and
    /// refuses every later insertion), waits until it is idle, and writes
    /// and syncs the log, whatever the durability policy. Returns the first
    /// error the sink ever reported.
    pub async fn dispose(&self) -> io::Result<()> {
        let disposed = self.shared.input(Input::Dispose);
        disposed.expect("dispose is never refused");
        self.when_idle().await;
        self.shared.flush()
    }

    /// Every output from now on, in emission order: the durable events and
    /// the live notifications alike (filter with [`Output::is_durable`]).
    /// Lossless: a reader that falls behind only uses more memory.
    pub fn subscribe(&self) -> Notifications {
        Notifications {
            receiver: self.shared.subscribe(),
        }
    }

    /// Idle, or the open turn, its last opened step and the awaited point.
    pub fn status(&self) -> Status {
        self.shared.status()
    }

    /// A copy of both pending lists.
    pub fn inbox(&self) -> Inbox {
        self.shared.inbox()
    }
}

impl Clone for Handle {
    fn clone(&self) -> Self {
        self.shared.handle_cloned();
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.handle_dropped();
    }
}

/// The future of [`Handle::when_idle`].
#[must_use = "a when-idle waiter does nothing unless awaited"]
pub struct WhenIdle {
    shared: Arc<Shared>,
    ticket: u64,
}

impl Future for WhenIdle {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        self.shared.poll_idle(self.ticket, context)
    }
}

/// A subscription to an agent's outputs; see [`Handle::subscribe`].
pub struct Notifications {
    receiver: UnboundedReceiver<Output>,
}

impl Notifications {
    /// The next output; `None` once the agent and its driver task are gone and
    /// everything was read.
    pub async fn recv(&mut self) -> Option<Output> {
        self.receiver.recv().await
    }

    /// The next output already delivered, without waiting.
    pub fn try_recv(&mut self) -> Option<Output> {
        self.receiver.try_recv().ok()
    }
}
