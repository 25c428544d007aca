//! The sync layer: the core behind one mutex, with the driver task's wake slot
//! and the `when_idle` tickets beside it. Each handle call and each driver
//! task completion is one critical section that runs the core's transition,
//! hands its outputs to the subscribers in emission order, queues the
//! durable ones in the journal and picks whom to wake. After the lock is
//! released, the journal writes as the durability policy says (under `Sync`
//! the call waits for its lines to be synced, and learns of a sink failure),
//! then the wakers run: a `when_idle` that resolves under `Sync` finds the
//! turn's lines durable.
//!
//! Why no wake is lost: the driver task looks for work and parks its waker in
//! one critical section, and an input that gives it work (starts a core
//! driver, aborts the turn, disposes) takes that waker in the critical
//! section that gave the work. Splitting the look and the park across two critical sections loses a
//! wake sent between them; the `racy` loom test plants exactly that.
//!
//! Why nothing hangs once the driver task is gone: its drop marks the agent
//! [`Driver::Gone`] under the lock, wakes every `when_idle` waiter and ends
//! every subscription; from then on a call that needs the driver task is
//! refused with [`Error::DriverGone`] before it reaches the core. Only an
//! agent at its end (disposed and idle) needs it no more: a disposal the
//! driver task left midway (its turn aborted, the completion never fed)
//! needs it to end.
//!
//! Why a log failure stops the driver task whatever write met it: the
//! journal wakes the waker the driver task parks there too (see
//! [`Journal::stopped`]), so a failure on a write that gives the driver task
//! no work (an edit while idle, the write-behind thread's) stops it as
//! well, and its end ends the subscriptions and wakes the waiters.

use std::collections::BTreeMap;
use std::io;
use std::mem;
use std::ops::RangeInclusive;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll, Waker};

use courier_core::log::SessionHeader;
use courier_core::{
    Agent as Core, AwaitPoint, Inbox, Input, Message, Output, PreStepDecision, Refusal, Status,
};

use crate::driver::inside_hook_of;
use crate::error::Error;
use crate::fanout::{Fanout, Subscriber};
use crate::hooks::{Hook, HookPanic};
use crate::journal::{Durability, Journal, WriterThread};
use crate::observer::{Observer, Transition};
use crate::sink::Sink;
use crate::sync::{Arc, Mutex, lock};
use crate::unwind::{drop_guarded, panic_text};

/// What the driver task must do next for the core.
pub(crate) enum Job {
    /// Ask the pre-step hook about a claimed batch.
    PreStep {
        turn: u64,
        step: u64,
        batch: Vec<Message>,
    },
    /// Run the step hook on what entered the step.
    Step {
        turn: u64,
        step: u64,
        entered: Vec<Message>,
    },
}

/// Why the driver task stops awaiting a hook.
pub(crate) enum Interrupt {
    /// A cancel or dispose aborted the turn: its point fails.
    Aborted,
    /// The log failed: the driver task stops.
    LogFailed,
}

/// Whether a driver task still serves the agent.
enum Driver {
    Serving,
    /// Dropped: no completion will ever come.
    Gone,
}

/// No waiter reports an observer's panic: a client's input does.
const NO_WAITER: RangeInclusive<u64> = RangeInclusive::new(1, 0);

/// The most recent hook panics kept for [`crate::Handle::hook_panics`].
const HOOK_PANICS_KEPT: usize = 64;

pub(crate) struct Shared {
    locked: Mutex<Locked>,
    journal: Arc<Journal>,
    writer: WriterThread,
}

struct Locked {
    core: Core,
    /// The driver task's waker while it waits for work or for an abort.
    driver_task: Option<Waker>,
    /// What the open step entered, read off `user/message` outputs, until
    /// the driver task takes it for the step hook (one job per step).
    entered: Vec<Message>,
    idle: Tickets,
    fanout: Fanout,
    /// Live [`crate::Handle`]s; the last one to go disposes the agent.
    handles: usize,
    /// Wakers to run once the lock is released.
    wake: Vec<Waker>,
    /// Sees every transition; without one, `run` copies nothing.
    observer: Option<Box<dyn Observer>>,
    /// What the user supplied that a section let go (an observer that
    /// panicked, that panic's payload), dropped once the lock is released:
    /// its `Drop` may call back into the agent (an observer that owns a
    /// handle), which would wait for the lock its own thread holds.
    released: Released,
    driver: Driver,
    /// The observer's panic; it is dropped then, so there is only one.
    observer_panic: Option<ObserverPanic>,
    /// The latest hook panics, oldest first.
    hook_panics: Vec<HookPanic>,
}

/// The observer's panic, kept for [`crate::Handle::observer_panic`].
struct ObserverPanic {
    message: String,
    /// The `when_idle` tickets (`dispose`'s too) that report it once their
    /// `idle` comes: the waiter whose registration it observed, or every
    /// waiter still waiting through a transition no call made (a
    /// completion, the last handle's disposal). Empty when a client's input
    /// reported it, or nobody waited.
    tickets: RangeInclusive<u64>,
}

/// User values to drop outside the lock (see [`Locked::released`]).
#[derive(Default)]
struct Released {
    observer: Option<Box<dyn Observer>>,
    payload: Option<Box<dyn std::any::Any + Send>>,
}

impl Released {
    /// Drops each, guarded, after the lock: the caller has released it.
    fn drop_unlocked(self) {
        drop_guarded(self.observer);
        drop_guarded(self.payload);
    }
}

/// One transition's run: the core's answer, and the observer's panic if it
/// panicked observing it, for the caller to route ([`Locked::keep_panic`]).
#[must_use = "the observer's panic must be routed to whoever reports it"]
struct Ran {
    answer: Result<(), Refusal>,
    panic: Option<String>,
}

/// `when_idle` waiters. Every waiter waits for the next quiescence after
/// its call, so the waiters that call while one is unresolved wait for the
/// same one: only the first of them is fed to the core as a waiter, and its
/// `idle` resolves them all. The core then owes at most one `idle` at a
/// time, however many waits a caller starts and abandons (a `timeout`
/// around `when_idle`, a `select!` branch that loses), and a future dropped
/// unresolved takes its waker back ([`Shared::forget_waiter`]).
#[derive(Default)]
struct Tickets {
    issued: u64,
    /// Every ticket up to here is resolved; the core holds a waiter for
    /// the ones after it, if any.
    resolved: u64,
    waiting: BTreeMap<u64, Waker>,
}

impl Shared {
    /// A fresh agent; its log starts with the `session` header.
    pub(crate) fn new(
        sink: Box<dyn Sink>,
        session_id: &str,
        observer: Option<Box<dyn Observer>>,
        durability: Durability,
    ) -> Self {
        let header = SessionHeader::new(session_id).line();
        Self::build(Core::new(), sink, Some(&header), observer, durability)
    }

    /// Goes on with `core`, resumed from a log the sink appends to. Its
    /// queued first outputs are the closers, which the resume already wrote
    /// durably: they are dropped here, not written twice.
    pub(crate) fn resumed(mut core: Core, sink: Box<dyn Sink>, durability: Durability) -> Self {
        while core.poll_output().is_some() {}
        Self::build(core, sink, None, None, durability)
    }

    fn build(
        core: Core,
        sink: Box<dyn Sink>,
        header: Option<&str>,
        observer: Option<Box<dyn Observer>>,
        durability: Durability,
    ) -> Self {
        let (journal, writer) = Journal::new(sink, header, durability);
        let locked = Locked {
            core,
            driver_task: None,
            entered: Vec::new(),
            idle: Tickets::default(),
            fanout: Fanout::default(),
            handles: 1,
            wake: Vec::new(),
            observer,
            driver: Driver::Serving,
            observer_panic: None,
            released: Released::default(),
            hook_panics: Vec::new(),
        };
        Self {
            locked: Mutex::new(locked),
            journal,
            writer,
        }
    }

    /// One critical section. After unlocking, it lets the journal write as
    /// the policy asks (a write error is kept there, for later calls and
    /// `dispose`), then wakes whoever the section chose.
    fn with<R>(&self, body: impl FnOnce(&mut Locked) -> R) -> R {
        self.section(body).0
    }

    /// [`Shared::with`], also returning how the section's lines were
    /// written: an error when this caller's sync met the sink's failure.
    fn section<R>(&self, body: impl FnOnce(&mut Locked) -> R) -> (R, io::Result<()>) {
        let mut locked = lock(&self.locked);
        let result = body(&mut locked);
        let settle = self.journal.enqueue(&mut locked.fanout.durable);
        let wake = mem::take(&mut locked.wake);
        let released = mem::take(&mut locked.released);
        drop(locked);
        released.drop_unlocked();
        let synced = self.journal.settle(settle);
        for waker in wake {
            waker.wake();
        }
        (result, synced)
    }

    /// [`Shared::with`] from inside the sink: the section's lines are owed
    /// to the writer up this thread's stack ([`Journal::owe`]).
    fn section_in_sink<R>(&self, body: impl FnOnce(&mut Locked) -> R) -> R {
        let mut locked = lock(&self.locked);
        let result = body(&mut locked);
        self.journal.owe(&mut locked.fanout.durable);
        let wake = mem::take(&mut locked.wake);
        let released = mem::take(&mut locked.released);
        drop(locked);
        released.drop_unlocked();
        for waker in wake {
            waker.wake();
        }
        result
    }

    /// A client input: one transition of the core, unless nothing would
    /// serve what it starts, the log could not read its messages back, or
    /// the log can no longer record it (a cancel or a dispose still winds
    /// the agent down).
    pub(crate) fn input(&self, input: Input) -> Result<(), Error> {
        debug_assert!(
            !input.is_completion(),
            "completions belong to the driver task"
        );
        debug_assert!(input != Input::WhenIdle, "a waiter needs its ticket");
        if self.journal.inside_sink() {
            return Err(Error::InsideSink);
        }
        // Every sink's log must read back at a resume, the memory log's too.
        if let Some(error) = crate::kept::unloggable(input.supplied()) {
            return Err(error);
        }
        let winds_down = matches!(input, Input::Cancel { .. } | Input::Dispose);
        if !winds_down {
            self.journal.failure().map_err(Error::Log)?;
        }
        let (result, synced) = self.section(|locked| {
            locked.served()?;
            let Ran { answer, panic } = locked.run(input);
            // A refusal is the call's answer (the panic is kept all the
            // same); an applied input reports the panic.
            let panic = locked.keep_panic(panic, NO_WAITER);
            answer?;
            panic.map_or(Ok(()), |message| Err(Error::ObserverPanicked(message)))
        });
        result.map_err(|error| self.unserved(error))?;
        synced.map_err(Error::Log)
    }

    /// The driver task's completion of the point it was awaiting. An
    /// observer's panic here is no call's: every waiter waiting through it
    /// reports it.
    pub(crate) fn complete(&self, completion: Input) {
        debug_assert!(completion.is_completion(), "clients feed no completions");
        self.with(|locked| {
            // A decision the core fails (SPEC §5) is told why, as a panic
            // is: checked under the lock the completion runs in (an aborted
            // turn ends `aborted` whatever the decision).
            if let (
                Input::PreStep(PreStepDecision::Enter(entering)),
                Status::Running { turn, step, .. },
            ) = (&completion, locked.core.status())
                && locked.core.abort_cause().is_none()
                && let Some(why) = locked.core.unenterable(entering)
            {
                locked.record_hook_panic(HookPanic {
                    turn,
                    step,
                    hook: Hook::PreStep,
                    message: why.to_string(),
                });
            }
            let waiting = locked.idle.unresolved();
            let Ran { answer, panic } = locked.run(completion);
            // Only the driver task feeds completions and no client input moves
            // the awaited point, so the point the job named is still awaited.
            answer.expect("the driver task completes the point it was given");
            drop(locked.keep_panic(panic, waiting));
        });
    }

    /// Registers a `when_idle` waiter now and returns its ticket.
    pub(crate) fn when_idle(&self) -> u64 {
        self.with(Locked::register_waiter)
    }

    /// Disposes and registers the waiter for the disposal's end in one
    /// critical section, so its `idle` is emitted before the driver task can
    /// see the agent disposed and idle, end, and end the subscriptions with
    /// it. A log failure met on the way is kept, for the flush after; an
    /// observer's panic, for the waiter's end.
    pub(crate) fn dispose(&self) -> Result<u64, Error> {
        if self.journal.inside_sink() {
            return Err(Error::InsideSink);
        }
        self.with(|locked| {
            locked.served()?;
            // Never refused.
            let Ran { answer: _, panic } = locked.run(Input::Dispose);
            let ticket = locked.register_waiter();
            drop(locked.keep_panic(panic, ticket..=ticket));
            Ok(ticket)
        })
        .map_err(|error| self.unserved(error))
    }

    /// A call's error, the log's failure instead of [`Error::DriverGone`]
    /// when that failure is what stopped the driver task.
    fn unserved(&self, error: Error) -> Error {
        match (error, self.journal.failure()) {
            (Error::DriverGone, Err(failure)) => Error::Log(failure),
            (error, _) => error,
        }
    }

    /// Ready when the ticket's `idle` came (with the observer's panic if
    /// this waiter reports it); an error when the log failed (the driver
    /// task stops at it: this `idle` may never come, and one that came may
    /// not be kept) or when it never can come (the driver task is gone, or
    /// this is polled inside one of the agent's own hooks, which the driver
    /// task is waiting for, or inside its sink, which holds the writer's
    /// token the driver task's completion waits for). Under `Sync`, ready
    /// only once the lines queued before the `idle` are durable.
    /// A [`crate::WhenIdle`] dropped before it resolved: its waker, if it
    /// left one, goes (its ticket still resolves with the others).
    /// (Only the lock: nothing is fed to the core or written, so this may
    /// run inside the sink too.)
    pub(crate) fn forget_waiter(&self, ticket: u64) {
        let waker = lock(&self.locked).idle.waiting.remove(&ticket);
        drop(waker);
    }

    pub(crate) fn poll_idle(
        &self,
        ticket: u64,
        context: &mut Context<'_>,
    ) -> Poll<Result<(), Error>> {
        let inside_hook = inside_hook_of(self);
        let inside_sink = self.journal.inside_sink();
        let polled = self.with(|locked| {
            if let Err(error) = self.journal.failure() {
                return Poll::Ready(Err(Error::Log(error)));
            }
            if locked.idle.resolved(ticket) {
                return Poll::Ready(match &locked.observer_panic {
                    Some(panic) if panic.tickets.contains(&ticket) => {
                        Err(Error::ObserverPanicked(panic.message.clone()))
                    }
                    Some(_) | None => Ok(()),
                });
            }
            if let Err(error) = locked.served() {
                return Poll::Ready(Err(error));
            }
            if inside_hook {
                return Poll::Ready(Err(Error::InsideHook));
            }
            if inside_sink {
                return Poll::Ready(Err(Error::InsideSink));
            }
            locked.idle.wait(ticket, context.waker());
            Poll::Pending
        });
        match polled {
            // Its sync would wait for the writer's token this sink holds.
            Poll::Ready(Ok(())) if inside_sink => Poll::Ready(Err(Error::InsideSink)),
            Poll::Ready(Ok(())) => Poll::Ready(self.journal.sync_under_sync().map_err(Error::Log)),
            other => other,
        }
    }

    /// The next job, `None` once the agent is disposed and idle or its log
    /// failed (the driver task's end), or a parked waker.
    ///
    /// Why a log failure ends the driver task: the log is the agent's truth
    /// (SPEC §11: an event that was not kept never happened), and nothing is
    /// written after its first failure, so a hook run now could act on a
    /// message whose `spliced` was never kept. The agent stops as a crash
    /// stops it; a resume from the file goes on from what was kept. Under
    /// `Sync` a job's lines are synced before its hook runs
    /// ([`Shared::job_durable`]), so no hook ever sees a line that failed.
    pub(crate) fn poll_job(&self, context: &mut Context<'_>) -> Poll<Option<Job>> {
        if self.journal.failure().is_err() {
            return Poll::Ready(None);
        }
        self.with(|locked| match locked.look() {
            Poll::Pending if self.journal.stopped(context.waker()) => Poll::Ready(None),
            Poll::Pending => {
                park(&mut locked.driver_task, context.waker());
                Poll::Pending
            }
            ready => ready,
        })
    }

    /// Under `Sync`, whether every line queued so far is durable, once the
    /// driver task has a job and before its hook runs: a client's send can
    /// start the job and still be syncing its `spliced` (the driver task's
    /// own completion synced only its own lines), and a hook must never act
    /// on a message whose line failed. Under `WriteBehind`, true (its window
    /// is the policy).
    pub(crate) fn job_durable(&self) -> bool {
        self.journal.sync_under_sync().is_ok()
    }

    /// Planted race: looks under one lock and parks under another, so a send
    /// that starts a core driver in between finds no waker and the driver
    /// task sleeps through it. Only the `racy` loom test runs this.
    #[cfg(feature = "mutants")]
    pub(crate) fn poll_job_racy(&self, context: &mut Context<'_>) -> Poll<Option<Job>> {
        if let ready @ Poll::Ready(_) = self.with(Locked::look) {
            return ready;
        }
        self.with(|locked| park(&mut locked.driver_task, context.waker()));
        Poll::Pending
    }

    /// Ready once the log failed or a cancel or dispose aborted `turn`;
    /// parks the driver task's waker otherwise, so either reaches the hook
    /// in flight.
    pub(crate) fn poll_interrupted(&self, turn: u64, context: &mut Context<'_>) -> Poll<Interrupt> {
        self.with(|locked| {
            if self.journal.stopped(context.waker()) {
                return Poll::Ready(Interrupt::LogFailed);
            }
            let open =
                matches!(locked.core.status(), Status::Running { turn: open, .. } if open == turn);
            if open && locked.core.abort_cause().is_some() {
                return Poll::Ready(Interrupt::Aborted);
            }
            park(&mut locked.driver_task, context.waker());
            Poll::Pending
        })
    }

    pub(crate) fn subscribe(&self, subscriber: Subscriber) {
        self.with(|locked| locked.fanout.subscribe(subscriber));
    }

    /// The driver task dropped a hook's panic into the record.
    pub(crate) fn hook_panicked(&self, panic: HookPanic) {
        self.with(|locked| locked.record_hook_panic(panic));
    }

    pub(crate) fn hook_panics(&self) -> Vec<HookPanic> {
        self.with(|locked| locked.hook_panics.clone())
    }

    pub(crate) fn observer_panic(&self) -> Option<String> {
        self.with(|locked| {
            let panic = locked.observer_panic.as_ref();
            panic.map(|panic| panic.message.clone())
        })
    }

    /// The driver task is being dropped: whatever it was serving stays
    /// unserved. Waiters wake (to their error, or to an `idle` that came),
    /// subscriptions end, and the log is synced as far as it got.
    pub(crate) fn driver_gone(&self) {
        let unreachable = self.with(|locked| {
            locked.driver = Driver::Gone;
            let waiting = mem::take(&mut locked.idle.waiting);
            locked.wake.extend(waiting.into_values());
            locked.fanout.close();
            locked.handles == 0
        });
        // Kept in the journal for whoever asks next.
        let _ = self.journal.sync_all();
        // The last handle went first (see `handle_dropped`).
        if unreachable {
            self.release_log();
        }
    }

    pub(crate) fn status(&self) -> Result<Status, Error> {
        self.with(|locked| locked.served().map(|()| locked.core.status()))
            .map_err(|error| self.unserved(error))
    }

    pub(crate) fn inbox(&self) -> Inbox {
        self.with(|locked| locked.core.inbox().clone())
    }

    /// Writes and syncs every line queued so far; the first error the sink
    /// ever returned, if any.
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.journal.sync_all()
    }

    /// The disposal ended and the log is written: lets the sink go (see
    /// [`Journal::release`]).
    pub(crate) fn release_log(&self) {
        self.journal.release();
    }

    pub(crate) fn handle_cloned(&self) {
        self.with(|locked| locked.handles += 1);
    }

    /// A [`crate::WeakHandle`] becomes a handle while the agent still has
    /// one; after the last one went, the agent is disposed and stays gone.
    pub(crate) fn upgrade(&self) -> bool {
        self.with(|locked| {
            let alive = locked.handles > 0;
            if alive {
                locked.handles += 1;
            }
            alive
        })
    }

    /// The last handle disposes, so the driver task ends instead of waiting
    /// for inputs that can no longer come (without a driver task, there is
    /// nothing to end). Never panics: it runs in `Drop`. An observer's panic
    /// at that disposal is no call's: the waiters still waiting report it.
    ///
    /// Once the last handle and the driver task are both gone, nothing can
    /// reach the agent again (a [`crate::WeakHandle`] a hook kept no longer
    /// upgrades), so its log is written and let go, whichever goes last: the
    /// file can be resumed while such a weak handle lives.
    ///
    /// Dropped inside the agent's own sink (a sink that held the last
    /// handle), where the writer's token is out on this thread: the
    /// disposal's lines are left to that writer, and so is letting the sink
    /// go; waiting for either would never end.
    pub(crate) fn handle_dropped(&self) {
        let inside_sink = self.journal.inside_sink();
        let dropped = |locked: &mut Locked| {
            locked.handles = locked.handles.saturating_sub(1);
            let last = locked.handles == 0 && !locked.core.is_disposed();
            if last && let Driver::Serving = locked.driver {
                let waiting = locked.idle.unresolved();
                // Dispose is never refused.
                let Ran { answer: _, panic } = locked.run(Input::Dispose);
                drop(locked.keep_panic(panic, waiting));
            }
            locked.handles == 0 && matches!(locked.driver, Driver::Gone)
        };
        if inside_sink {
            if self.section_in_sink(dropped) {
                self.release_log();
            }
            return;
        }
        if self.with(dropped) {
            let _ = self.journal.sync_all();
            self.release_log();
        }
    }
}

impl Locked {
    /// Keeps a hook's failure for [`crate::Handle::hook_panics`] (the
    /// latest [`HOOK_PANICS_KEPT`]).
    fn record_hook_panic(&mut self, panic: HookPanic) {
        if self.hook_panics.len() == HOOK_PANICS_KEPT {
            self.hook_panics.remove(0);
        }
        self.hook_panics.push(panic);
    }

    /// A `when_idle` waiter's ticket, fed to the core as its input unless
    /// the core already holds a waiter for the next quiescence (see
    /// [`Tickets`]); the waiter reports an observer's panic at its
    /// registration.
    fn register_waiter(&mut self) -> u64 {
        let (ticket, feed) = self.idle.issue();
        if feed {
            // Never refused.
            let Ran { answer: _, panic } = self.run(Input::WhenIdle);
            drop(self.keep_panic(panic, ticket..=ticket));
        }
        ticket
    }

    /// Whether a call can be served: a driver task runs, or the agent is at
    /// its end, disposed and idle (then the core answers for itself,
    /// refusing insertions, and every wait resolves at once).
    fn served(&self) -> Result<(), Error> {
        let ended = self.core.is_disposed() && self.core.status() == Status::Idle;
        match self.driver {
            Driver::Gone if !ended => Err(Error::DriverGone),
            Driver::Gone | Driver::Serving => Ok(()),
        }
    }

    /// Keeps the observer's panic of the transition just run (if it
    /// panicked), reported by the waiters holding `tickets`; returns its
    /// message, for a caller that reports it itself.
    fn keep_panic(
        &mut self,
        panic: Option<String>,
        tickets: RangeInclusive<u64>,
    ) -> Option<String> {
        let message = panic?;
        debug_assert!(self.observer_panic.is_none(), "a dropped observer panicked");
        self.observer_panic = Some(ObserverPanic {
            message: message.clone(),
            tickets,
        });
        Some(message)
    }

    /// Runs one transition, delivers its outputs and picks whom to wake; an
    /// observer gets the transition last, still under the lock, so the order
    /// it sees is the core's. One that panics is dropped (it missed a
    /// transition, so what it checks no longer holds), guarded.
    fn run(&mut self, input: Input) -> Ran {
        if self.observer.is_none() {
            let answer = self.transition(input, None);
            return Ran {
                answer,
                panic: None,
            };
        }
        let mut outputs = Vec::new();
        let answer = self.transition(input.clone(), Some(&mut outputs));
        let mut panic = None;
        if let Some(observer) = &mut self.observer {
            let transition = Transition {
                input,
                answer: answer.clone(),
                outputs,
            };
            let observed = catch_unwind(AssertUnwindSafe(|| observer.observe(transition)));
            if let Err(payload) = observed {
                panic = Some(panic_text(&*payload));
                self.released = Released {
                    observer: self.observer.take(),
                    payload: Some(payload),
                };
            }
        }
        Ran { answer, panic }
    }

    /// The transition itself; `record` collects copies of its outputs.
    fn transition(
        &mut self,
        input: Input,
        record: Option<&mut Vec<Output>>,
    ) -> Result<(), Refusal> {
        let before = self.core.status();
        let aborts = input.abort().is_some();
        self.core.handle(input)?;
        let started = before == Status::Idle && self.core.status() != Status::Idle;
        if started || aborts {
            self.wake.extend(self.driver_task.take());
        }
        self.drain(record);
        Ok(())
    }

    fn drain(&mut self, mut record: Option<&mut Vec<Output>>) {
        while let Some(output) = self.core.poll_output() {
            match &output {
                Output::StepStart { .. } => self.entered.clear(),
                Output::UserMessage(message) => self.entered.push(message.clone()),
                Output::Idle => {
                    let woken = self.idle.resolve_all();
                    self.wake.extend(woken);
                }
                // The rest only go to the fanout.
                Output::Spliced(_)
                | Output::TurnStart { .. }
                | Output::StepEnd { .. }
                | Output::TurnEnd { .. }
                | Output::Inserted { .. }
                | Output::Claimed { .. }
                | Output::Discarded { .. }
                | Output::Status { .. }
                | Output::Error { .. } => {}
            }
            if let Some(record) = record.as_deref_mut() {
                record.push(output.clone());
            }
            self.fanout.deliver(output);
        }
    }

    /// The job the core's state asks for: `Ready(None)` when the driver task
    /// is done for good, `Pending` when it must wait for a wake.
    fn look(&mut self) -> Poll<Option<Job>> {
        let job = match self.core.status() {
            Status::Idle if self.core.is_disposed() => return Poll::Ready(None),
            Status::Idle => return Poll::Pending,
            Status::Running {
                turn,
                step,
                awaiting: AwaitPoint::PreStep,
            } => {
                let batch = self.core.claimed().unwrap_or_default();
                Job::PreStep {
                    turn,
                    step,
                    batch: batch.to_vec(),
                }
            }
            Status::Running {
                turn,
                step,
                awaiting: AwaitPoint::Step,
            } => Job::Step {
                turn,
                step,
                entered: mem::take(&mut self.entered),
            },
        };
        Poll::Ready(Some(job))
    }
}

impl Drop for Shared {
    /// The write-behind thread writes the last lines before the agent goes;
    /// the user's observer may panic in `Drop` (the sink is guarded in the
    /// journal's).
    fn drop(&mut self) {
        self.journal.close(&mut self.writer);
        drop_guarded(lock(&self.locked).observer.take());
    }
}

/// Keeps the driver task's latest waker; the task is the same between polls,
/// so an equal waker is not cloned again.
fn park(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(parked) if parked.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

impl Tickets {
    /// A new ticket, and whether the core must be given a waiter for it
    /// (none waits for the next quiescence yet).
    fn issue(&mut self) -> (u64, bool) {
        let feed = self.resolved == self.issued;
        self.issued += 1;
        (self.issued, feed)
    }

    /// The core's `idle`: every ticket issued so far resolves (all of them
    /// waited for this quiescence), and their wakers are returned.
    fn resolve_all(&mut self) -> Vec<Waker> {
        debug_assert!(self.resolved < self.issued, "an idle nobody waited for");
        self.resolved = self.issued;
        mem::take(&mut self.waiting).into_values().collect()
    }

    fn resolved(&self, ticket: u64) -> bool {
        ticket <= self.resolved
    }

    /// The tickets still waiting.
    fn unresolved(&self) -> RangeInclusive<u64> {
        self.resolved + 1..=self.issued
    }

    fn wait(&mut self, ticket: u64, waker: &Waker) {
        self.waiting.insert(ticket, waker.clone());
    }
}
