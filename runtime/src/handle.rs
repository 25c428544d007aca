//! The agent handle: cheap to clone, shareable across threads, and the only
//! way clients reach the core. Each call is one atomic transition; a refused
//! input returns the core's [`Refusal`] (as [`Error::Refused`]) and changed
//! nothing.

use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

#[cfg(doc)]
use courier_core::Refusal;
use courier_core::{CancelCause, Inbox, Input, Message, MessageId, Output, Status, Target, Wakeup};
use tokio::sync::broadcast;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::driver::DriverTask;
use crate::error::Error;
use crate::fanout::Subscriber;
use crate::hooks::{HookPanic, PreStepHook, StepHook};
use crate::journal::Durability;
use crate::observer::Observer;
use crate::resume::{ResumeError, repair_in_place};
use crate::shared::Shared;
use crate::sink::Sink;
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
    /// appending to the same file (in a log that numbers its records, as
    /// dsh's JSONL backend does, numbering them on). A balanced log gets nothing appended, not
    /// even the marker, so resuming twice appends nothing the second time. A
    /// corrupt log is refused naming its line, and the file is not touched;
    /// so is one that ends inside its fork's seed (a fork that never began:
    /// a send appended there would be read as seed, and lost, next time),
    /// and one compressed with zstd (dsh's `session.jsonl.zstd`), as a
    /// whole, saying so: what a resume appends is plain JSONL.
    /// A log another live agent appends to (in this process or another) is
    /// refused untouched with [`ResumeError::Io`] of kind
    /// [`std::io::ErrorKind::ResourceBusy`] naming the file: see
    /// [`JsonlFile`](crate::JsonlFile) for the one-writer lock. A missing
    /// file is [`ResumeError::Io`] of kind [`std::io::ErrorKind::NotFound`]
    /// (start a new log instead); a folder, a FIFO or a device, of kind
    /// [`std::io::ErrorKind::InvalidInput`].
    ///
    /// As for every agent, dropping the last handle while the driver task
    /// lives disposes it: the replayed inbox is discarded, durably (a
    /// canceled splice). To stop and keep the inbox for the next resume,
    /// drop (or abort) the driver task first, as a crash would.
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
        let (kept, sink) = repair_in_place(path)?;
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
    /// is already pending, and, like every call that inserts messages, with
    /// [`Error::Unloggable`] when the log line holding them would not read
    /// back at a resume.
    pub fn send(
        &self,
        message: impl Into<Message>,
        target: Target,
        wakeup: Wakeup,
    ) -> Result<(), Error> {
        self.shared
            .input(Input::send(message.into(), target, wakeup))
    }

    /// `followup = (next-turn, wake)`.
    pub fn followup(&self, message: impl Into<Message>) -> Result<(), Error> {
        self.send(message, Target::NextTurn, Wakeup::Wake)
    }

    /// `steer = (next-step, wake)`.
    pub fn steer(&self, message: impl Into<Message>) -> Result<(), Error> {
        self.send(message, Target::NextStep, Wakeup::Wake)
    }

    /// `inject = (next-step, no-wake)`.
    pub fn inject(&self, message: impl Into<Message>) -> Result<(), Error> {
        self.send(message, Target::NextStep, Wakeup::NoWake)
    }

    /// Edit: add at the end of a list (never wakes).
    pub fn append(&self, target: Target, message: impl Into<Message>) -> Result<(), Error> {
        let message = message.into();
        self.shared.input(Input::Append { target, message })
    }

    /// Edit: add at the front of a list (never wakes).
    pub fn prepend(&self, target: Target, message: impl Into<Message>) -> Result<(), Error> {
        let message = message.into();
        self.shared.input(Input::Prepend { target, message })
    }

    /// Edit: swap the pending `id` for `message` in place.
    pub fn replace(
        &self,
        id: impl Into<MessageId>,
        message: impl Into<Message>,
    ) -> Result<(), Error> {
        let (id, message) = (id.into(), message.into());
        self.shared.input(Input::Replace { id, message })
    }

    /// Edit: drop the pending `id`.
    pub fn remove(&self, id: impl Into<MessageId>) -> Result<(), Error> {
        self.shared.input(Input::Remove { id: id.into() })
    }

    /// Edit: the raw splice; `start` and `removed` are clamped.
    pub fn splice(
        &self,
        target: Target,
        start: usize,
        removed: usize,
        inserted: Vec<Message>,
    ) -> Result<(), Error> {
        self.shared.input(Input::Splice {
            target,
            start,
            removed,
            inserted,
        })
    }

    /// Aborts the running turn (its hook in flight is dropped); without
    /// `keep_inbox`, discards everything pending. The core never refuses
    /// it; it fails only with [`Error::DriverGone`].
    pub fn cancel(&self, cause: CancelCause, keep_inbox: bool) -> Result<(), Error> {
        self.shared.input(Input::Cancel { cause, keep_inbox })
    }

    /// Resolves at the next quiescence: at once when idle, else at the next
    /// retirement that starts no other driver. The waiter is registered by
    /// this call, not by the first poll, so it sees the state as of the call.
    /// Resolves with [`Error::DriverGone`] if the driver task goes first,
    /// with [`Error::Log`] once the log failed (the driver task stops at
    /// it), with [`Error::InsideHook`] when awaited inside one of this
    /// agent's own hooks (the quiescence it waits for needs that hook to
    /// finish), and with [`Error::InsideSink`] inside its sink. Under
    /// [`Durability::Sync`](crate::Durability::Sync) it resolves only once
    /// every line before the quiescence is durable (a crash after it resumes
    /// the turn as ended, not interrupted). An observer that panicked observing this registration, or a
    /// transition no call made while this waited, is reported at the
    /// quiescence, as [`Error::ObserverPanicked`].
    pub fn when_idle(&self) -> WhenIdle {
        WhenIdle {
            ticket: self.shared.when_idle(),
            shared: Arc::clone(&self.shared),
            waiting: false,
        }
    }

    /// Disposes the agent (discards everything pending, aborts the turn, and
    /// refuses every later insertion), waits until it is idle, and writes
    /// and syncs the log, whatever the durability policy. Fails with the
    /// first error the sink ever reported ([`Error::Log`], after the
    /// disposal all the same), with [`Error::DriverGone`] (the driver task
    /// went before the disposal ended: the log stays as a crash leaves it),
    /// with [`Error::ObserverPanicked`] once disposed and written (the
    /// observer panicked at this disposal, or at a transition no call made
    /// while it waited), or, inside one of this agent's own hooks, with
    /// [`Error::InsideHook`] once the disposal started: the turn that hook
    /// belongs to is aborted, so its future is dropped at its next
    /// suspension (inside its sink, with [`Error::InsideSink`], nothing
    /// disposed). Once disposed and written, the sink is dropped (a
    /// [`JsonlFile`](crate::JsonlFile) closed, its one-writer lock
    /// released), so the log can be resumed at once, before the driver task
    /// and the last handle are gone. So it is after [`Error::Log`] or
    /// [`Error::DriverGone`]: this agent will never write to its log again,
    /// so the embedder can resume the file while its handles live.
    pub async fn dispose(&self) -> Result<(), Error> {
        let disposed = match self.shared.dispose() {
            Ok(ticket) => {
                let shared = Arc::clone(&self.shared);
                WhenIdle {
                    shared,
                    ticket,
                    waiting: false,
                }
                .await
            }
            Err(error) => Err(error),
        };
        match disposed {
            Ok(()) | Err(Error::ObserverPanicked(_)) => {
                let flushed = self.shared.flush();
                self.shared.release_log();
                flushed.map_err(Error::Log)?;
                disposed
            }
            Err(error @ (Error::Log(_) | Error::DriverGone)) => {
                self.shared.release_log();
                Err(error)
            }
            Err(
                error @ (Error::InsideHook
                | Error::InsideSink
                | Error::Refused(_)
                | Error::Unloggable { .. }),
            ) => Err(error),
        }
    }

    /// Every output from now on, in emission order: the durable events and
    /// the live notifications alike (filter with [`Output::is_durable`]).
    /// Lossless: a reader that falls behind only uses more memory (for tests
    /// and readers that keep up; see [`Handle::subscribe_bounded`]). The
    /// stream ends when the driver task does.
    pub fn subscribe(&self) -> Notifications {
        let (sender, receiver) = unbounded_channel();
        self.shared.subscribe(Subscriber::Lossless(sender));
        Notifications { receiver }
    }

    /// Every output from now on, keeping at most about `capacity` unread
    /// (rounded up to a power of two, at most [`Handle::BOUNDED_CAPACITY_MAX`]:
    /// the ring is allocated whole up front): a reader that falls further
    /// behind loses the oldest and is told how many ([`Lagged`]), like
    /// tokio's `broadcast`. Memory stays bounded whatever the reader does.
    /// The stream ends when the driver task does.
    pub fn subscribe_bounded(&self, capacity: NonZeroUsize) -> BoundedNotifications {
        let capacity = capacity.get().min(Self::BOUNDED_CAPACITY_MAX);
        let (sender, receiver) = broadcast::channel(capacity);
        self.shared.subscribe(Subscriber::Bounded(sender));
        BoundedNotifications { receiver }
    }

    /// The most outputs a [`Handle::subscribe_bounded`] stream keeps unread
    /// (65,536): a larger capacity is clamped to it, instead of a ring of
    /// that size allocated at once (a panic or an abort, for a huge one).
    pub const BOUNDED_CAPACITY_MAX: usize = 1 << 16;

    /// The observer's panic, once it panicked (it was dropped then): kept
    /// for a panic that no waiting call reported (at a transition the
    /// driver task ran while nobody waited), and for one a call did.
    pub fn observer_panic(&self) -> Option<String> {
        self.shared.observer_panic()
    }

    /// The latest hook panics (up to 64), oldest first, and the pre-step
    /// decisions that failed their boundary though the hook returned (one
    /// entering a message whose line would not read back, or an id twice,
    /// or a pending id: the message says which). Each failed its point, so
    /// its turn ended `error`; the agent went on serving.
    pub fn hook_panics(&self) -> Vec<HookPanic> {
        self.shared.hook_panics()
    }

    /// A handle that does not keep the agent (see [`WeakHandle`]).
    pub fn downgrade(&self) -> WeakHandle {
        WeakHandle::new(Arc::clone(&self.shared))
    }

    /// Idle, or the open turn, its last opened step and the awaited point;
    /// [`Error::DriverGone`] (or the log's failure that stopped it) once the
    /// driver task is gone before the agent's end, as every call answers:
    /// a turn it left open would read `running` for ever.
    pub fn status(&self) -> Result<Status, Error> {
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

/// A handle that does not keep its agent alive: it does not count among the
/// handles whose last drop disposes the agent. Every hook call carries one
/// ([`crate::Boundary::agent`], [`crate::StepCall::agent`]), so a hook can
/// call its agent mid-step, e.g. inject a tool's result:
/// `if let Some(agent) = call.agent.upgrade() { agent.inject(result)?; }`
/// (see `examples/tool_result.rs`).
#[derive(Clone)]
pub struct WeakHandle {
    shared: Arc<Shared>,
}

impl WeakHandle {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// A handle, while the agent has one; `None` once the last handle was
    /// dropped (the agent is then disposed for good).
    pub fn upgrade(&self) -> Option<Handle> {
        self.shared.upgrade().then(|| Handle {
            shared: Arc::clone(&self.shared),
        })
    }
}

impl fmt::Debug for WeakHandle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("WeakHandle")
    }
}

/// The future of [`Handle::when_idle`].
#[must_use = "a when-idle waiter does nothing unless awaited"]
pub struct WhenIdle {
    shared: Arc<Shared>,
    ticket: u64,
    /// Polled and not yet ready: it may have left a waker behind.
    waiting: bool,
}

impl Future for WhenIdle {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = self.shared.poll_idle(self.ticket, context);
        self.waiting = polled.is_pending();
        polled
    }
}

/// A wait abandoned unresolved (a `timeout`, a `select!` branch that lost)
/// takes its waker back, so abandoned waits on a busy agent hold nothing.
impl Drop for WhenIdle {
    fn drop(&mut self) {
        if self.waiting {
            self.shared.forget_waiter(self.ticket);
        }
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

/// Outputs a [`BoundedNotifications`] reader skipped because it fell behind.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Lagged {
    /// How many outputs were dropped, oldest first, since the last read.
    pub skipped: u64,
}

/// A bounded subscription; see [`Handle::subscribe_bounded`].
pub struct BoundedNotifications {
    receiver: broadcast::Receiver<Output>,
}

impl BoundedNotifications {
    /// The next output, or how many were skipped before it; `None` once the
    /// driver task is gone and everything kept was read.
    pub async fn recv(&mut self) -> Option<Result<Output, Lagged>> {
        match self.receiver.recv().await {
            Ok(output) => Some(Ok(output)),
            Err(broadcast::error::RecvError::Lagged(skipped)) => Some(Err(Lagged { skipped })),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// [`BoundedNotifications::recv`] without waiting: `None` when nothing
    /// is ready.
    pub fn try_recv(&mut self) -> Option<Result<Output, Lagged>> {
        match self.receiver.try_recv() {
            Ok(output) => Some(Ok(output)),
            Err(broadcast::error::TryRecvError::Lagged(skipped)) => Some(Err(Lagged { skipped })),
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                None
            }
        }
    }
}
