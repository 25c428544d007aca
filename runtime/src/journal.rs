//! The ordered off-lock writer of the durable log. Under the agent's lock a
//! transition only moves its durable outputs into the journal's queue (one
//! short lock, no encoding, no I/O), so the queue holds them in the core's
//! emission order. Encoding (if the sink asks for lines: [`Sink::write_event`])
//! and the sink's I/O happen after the agent's lock is released, by whoever
//! holds the writer's token: the [`Sink`] itself (with its line buffer),
//! taken out of the journal's state while it is in use, so
//! at most one batch is written at a time and batches leave the queue in
//! order. No sink code ever runs under the agent's lock, and every sink
//! error is kept and returned to whoever asked for the lines it failed on,
//! and wakes the driver task, which stops at it whatever write met it.
//!
//! How the lines reach the disk is the [`Durability`] policy:
//! - `Sync`: the caller writes its own lines (and every line queued before
//!   them) and syncs before its call returns. Callers that arrive while
//!   another one writes wait for it and then write everything queued
//!   meanwhile with one sync: group commit.
//! - `WriteBehind { max_delay }`: the caller returns at once; a writer
//!   thread, woken when an empty queue receives work, waits `max_delay`
//!   (dsh's fixed batching window), then writes and syncs the whole queue.
//!   A caller that finds more than [`BACKLOG_MAX`] outputs queued writes
//!   them itself, so the queue stays bounded when producers outrun the
//!   writer.

use std::io;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Waker;
use std::time::{Duration, Instant};

use courier_core::Output;

use crate::sink::{Event, Sink};
use crate::sync::{
    Arc, AtomicBool, Condvar, INSIDE_SINK, Mutex, MutexGuard, Ordering, is_marked, lock, marked,
    thread, wait, wait_timeout,
};
use crate::unwind::{drop_guarded, panic_message};

/// When the durable log lines of a transition reach the disk.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Durability {
    /// Every call's durable lines are written and synced (`fsync` for a
    /// [`crate::JsonlFile`]) before the call returns: an accepted send
    /// survives any crash. Concurrent callers share one sync (group
    /// commit). The driver task's completions wait too, blocking the thread
    /// that polls it for the sync (as every call blocks its caller). The
    /// default: see the README for why.
    #[default]
    Sync,
    /// Calls return before their lines are written; a writer thread writes
    /// and syncs them at most `max_delay` after an idle queue got its first
    /// line (dsh's write-behind policy). A crash loses at most the lines of
    /// that window, and accepted sends among them; dispose still syncs.
    /// If the OS refuses the writer thread, the journal writes as under
    /// `Sync` instead: never less durable than asked, and no panic.
    WriteBehind {
        /// The batching window.
        max_delay: Duration,
    },
}

/// Queued outputs beyond which a write-behind caller writes the queue
/// itself instead of leaving it to the writer thread.
pub(crate) const BACKLOG_MAX: usize = 1 << 16;

/// How far the log is, counted in durable outputs since the journal began.
pub(crate) type Position = u64;

pub(crate) struct Journal {
    state: Mutex<State>,
    /// Whether `State::failure` is set: every call checks it before its
    /// transition, and this lets the check skip the lock in the common case.
    failed: AtomicBool,
    /// A batch was written (or failed): waiters for a position recheck.
    written: Condvar,
    /// Work for the write-behind thread, or the journal closed.
    work: Condvar,
}

struct State {
    /// Durable outputs not yet taken by a writer, in emission order.
    queue: Vec<Output>,
    /// The last batch's emptied buffer, swapped in for the queue at the
    /// next take, so a steady load allocates no batch.
    spare: Vec<Output>,
    /// Outputs ever queued: the position of the last one.
    queued: Position,
    /// Outputs written to the sink and synced.
    synced: Position,
    /// The writer's token: `None` while a writer has it out.
    writer: Option<Writer>,
    /// The first error the sink returned. After one, nothing more is
    /// written: a log with a hole in it would mislead its reader.
    failure: Option<io::Error>,
    /// The driver task's waker while it waits, woken by the failure: a
    /// write that does not wake it otherwise (an edit while idle, the
    /// write-behind thread's) still stops it.
    driver: Option<Waker>,
    /// Callers blocked on `written`, so a writer skips the notify when none.
    waiting: usize,
    /// The write-behind thread will look at the queue without a wake: it is
    /// running, or timing a window.
    armed: bool,
    /// No more outputs come; the write-behind thread writes what is left and
    /// stops.
    closed: bool,
    /// The policy in force: the one asked for, or `Sync` when the
    /// write-behind thread could not be started.
    durability: Durability,
    /// Lines were queued from inside the sink (the last handle dropped
    /// there): the writer that has the token writes them before it puts the
    /// token back, since nobody waits for them.
    owed: bool,
    /// The sink is to be let go once the writer that has the token puts it
    /// back ([`Journal::release`] asked from inside the sink).
    release: bool,
}

/// The write-behind thread, joined when the journal closes.
pub(crate) struct WriterThread(Option<thread::JoinHandle<()>>);

impl Journal {
    /// A journal writing to `sink`, after `first` (the header of a new log)
    /// is written and synced there. With `WriteBehind`, also the thread
    /// that writes behind.
    pub(crate) fn new(
        mut sink: Box<dyn Sink>,
        first: Option<&str>,
        durability: Durability,
    ) -> (Arc<Self>, WriterThread) {
        let failure = first.and_then(|line| {
            let written = guarded(|| sink.write_line(line).and_then(|()| sink.flush()));
            written.err()
        });
        let state = State {
            queue: Vec::new(),
            spare: Vec::new(),
            queued: 0,
            synced: 0,
            writer: Some(Writer {
                sink,
                line: String::new(),
            }),
            failure,
            driver: None,
            waiting: 0,
            armed: false,
            closed: false,
            durability,
            owed: false,
            release: false,
        };
        let journal = Arc::new(Self {
            failed: AtomicBool::new(state.failure.is_some()),
            state: Mutex::new(state),
            written: Condvar::new(),
            work: Condvar::new(),
        });
        let writer = match durability {
            Durability::Sync => None,
            Durability::WriteBehind { max_delay } => {
                let behind = Arc::clone(&journal);
                let spawned = thread::Builder::new()
                    .name("courier-journal".into())
                    .spawn(move || behind.write_behind(max_delay));
                if spawned.is_err() {
                    lock(&journal.state).durability = Durability::Sync;
                }
                spawned.ok()
            }
        };
        (journal, WriterThread(writer))
    }

    /// Queues a transition's durable outputs (the caller holds the agent's
    /// lock, which is what orders them) and says what the caller must do
    /// about them once it has released the agent's lock ([`Journal::settle`]).
    /// Under `Sync` it writes them itself: with the writer's token when it
    /// is free (taken here, with the queue, so the write needs no second
    /// look at the journal), else by waiting for whoever has it. Under
    /// `WriteBehind` it does nothing, unless the queue is over
    /// [`BACKLOG_MAX`]: then it helps the writer.
    pub(crate) fn enqueue(&self, outputs: &mut Vec<Output>) -> Settle {
        if outputs.is_empty() {
            return Settle::Nothing;
        }
        let mut state = lock(&self.state);
        let position = push(&mut state, outputs);
        match state.durability {
            Durability::Sync => match state.writer.take() {
                Some(writer) if state.failure.is_none() => Settle::Write(take(&mut state, writer)),
                writer => {
                    state.writer = writer;
                    Settle::Through(position)
                }
            },
            Durability::WriteBehind { .. } => {
                let backlog = state.queue.len();
                let wake = !mem::replace(&mut state.armed, true);
                drop(state);
                if wake {
                    self.work.notify_one();
                }
                if backlog > BACKLOG_MAX {
                    Settle::Through(position)
                } else {
                    Settle::Nothing
                }
            }
        }
    }

    /// Queues outputs from inside the sink, where the writer's token is
    /// out on this very thread (a sink that dropped the agent's last
    /// handle): waiting for it would never end, so the writer writes them
    /// before it puts the token back.
    pub(crate) fn owe(&self, outputs: &mut Vec<Output>) {
        if outputs.is_empty() {
            return;
        }
        let mut state = lock(&self.state);
        push(&mut state, outputs);
        state.owed = true;
    }

    /// Does what [`Journal::enqueue`] said, with the agent's lock released;
    /// the first error the sink ever reported if the caller's lines were to
    /// be synced.
    pub(crate) fn settle(&self, settle: Settle) -> io::Result<()> {
        match settle {
            Settle::Nothing => Ok(()),
            Settle::Through(position) => self.sync_through(position),
            Settle::Write(taken) => {
                let end = taken.end;
                let state = self.write(taken);
                self.synced_through(state, end)
            }
        }
    }

    /// The first error the sink ever reported (a copy: `io::Error` is not
    /// `Clone`). Without one, answered without the journal's lock, and
    /// without a call (every input asks: see `BENCHMARKS.md`).
    #[inline]
    pub(crate) fn failure(&self) -> io::Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.kept_failure()
    }

    /// [`Journal::failure`] once the flag is set: the error, under the lock.
    fn kept_failure(&self) -> io::Result<()> {
        match &lock(&self.state).failure {
            None => Ok(()),
            Some(error) => Err(io::Error::new(error.kind(), error.to_string())),
        }
    }

    /// Whether the log failed (the driver task stops); else `waker` is kept,
    /// to be woken by the failure when it comes. Checked and kept under the
    /// journal's lock, where the failure is set, so none comes unseen
    /// between the two.
    pub(crate) fn stopped(&self, waker: &Waker) -> bool {
        let mut state = lock(&self.state);
        if state.failure.is_some() {
            return true;
        }
        match &state.driver {
            Some(parked) if parked.will_wake(waker) => {}
            _ => state.driver = Some(waker.clone()),
        }
        false
    }

    /// Whether this thread is inside this journal's sink right now: a call
    /// on its agent from there would wait for the writer's token the sink
    /// holds.
    pub(crate) fn inside_sink(&self) -> bool {
        is_marked(&INSIDE_SINK, self)
    }

    /// Writes and syncs every output queued so far, under any policy (a
    /// flush, or `dispose`); returns the first error the sink ever reported.
    pub(crate) fn sync_all(&self) -> io::Result<()> {
        let queued = lock(&self.state).queued;
        self.sync_through(queued)
    }

    /// Under `Sync`, returns once everything queued so far is written and
    /// synced: a `when_idle` that resolves then finds its turn's lines
    /// durable (they were queued in the section that resolved it, which
    /// another caller may still be writing). Under `WriteBehind`, nothing:
    /// its window is the policy.
    pub(crate) fn sync_under_sync(&self) -> io::Result<()> {
        let state = lock(&self.state);
        match state.durability {
            Durability::Sync => {
                let queued = state.queued;
                self.synced_through(state, queued)
            }
            Durability::WriteBehind { .. } => Ok(()),
        }
    }

    /// Returns once everything up to `position` is written and synced, by
    /// this caller or by the writer that had the token: whoever takes the
    /// token writes the whole queue, so waiters that arrived meanwhile share
    /// its one sync.
    pub(crate) fn sync_through(&self, position: Position) -> io::Result<()> {
        self.synced_through(lock(&self.state), position)
    }

    /// [`Journal::sync_through`], the journal's lock already held.
    fn synced_through<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        position: Position,
    ) -> io::Result<()> {
        loop {
            // Lines an earlier group commit kept are kept, whatever a later
            // batch met before this caller woke; a caller with no lines of
            // its own (a flush of an empty log) is told of any failure.
            let kept = state.synced >= position;
            match &state.failure {
                Some(error) if !kept || position == 0 => {
                    return Err(io::Error::new(error.kind(), error.to_string()));
                }
                _ if kept => return Ok(()),
                _ => {}
            }
            state = match state.writer.take() {
                Some(writer) => {
                    let taken = take(&mut state, writer);
                    drop(state);
                    self.write(taken)
                }
                None => {
                    state.waiting += 1;
                    let mut state = wait(&self.written, state);
                    state.waiting -= 1;
                    state
                }
            };
        }
    }

    /// With the token out and the journal's lock released: encodes, writes
    /// and syncs the batch, then puts the token back and wakes the waiters.
    /// Lines owed from inside the sink ([`Journal::owe`]) are written in
    /// further batches first, and a release asked from inside it lets the
    /// sink go as the token goes back.
    fn write(&self, mut taken: Taken) -> MutexGuard<'_, State> {
        let (mut state, written) = loop {
            let Taken {
                mut writer,
                mut batch,
                end,
            } = taken;
            let written = self.in_sink(|| guarded(|| writer.write(&mut batch)));
            batch.clear();
            let mut state = lock(&self.state);
            state.spare = batch;
            if written.is_ok() {
                state.synced = end;
                if mem::take(&mut state.owed) && !state.queue.is_empty() {
                    taken = take(&mut state, writer);
                    drop(state);
                    continue;
                }
            }
            if mem::take(&mut state.release) {
                let sink = mem::replace(&mut writer.sink, Box::new(Released));
                state.writer = Some(writer);
                drop(state);
                drop_guarded(sink);
                state = lock(&self.state);
            } else {
                state.writer = Some(writer);
            }
            break (state, written);
        };
        let stopped = match written {
            Ok(()) => None,
            Err(error) => {
                state.failure.get_or_insert(error);
                self.failed.store(true, Ordering::Release);
                // Queued while this batch failed: never written either.
                state.queue.clear();
                state.owed = false;
                state.driver.take()
            }
        };
        if state.waiting > 0 {
            self.written.notify_all();
        }
        match stopped {
            None => state,
            Some(driver) => {
                // Woken with the journal's lock released: the driver task's
                // next look takes the agent's lock, then this one.
                drop(state);
                driver.wake();
                lock(&self.state)
            }
        }
    }

    /// Runs `body`, which calls the sink, marked as inside it (see
    /// [`Journal::inside_sink`]).
    fn in_sink<R>(&self, body: impl FnOnce() -> R) -> R {
        marked(&INSIDE_SINK, self, body)
    }

    /// The write-behind thread: sleeps until an empty queue gets work, lets
    /// the window pass, writes and syncs the queue; on close, writes what is
    /// left and stops.
    fn write_behind(&self, max_delay: Duration) {
        let mut state = lock(&self.state);
        loop {
            while state.queue.is_empty() && !state.closed {
                state.armed = false;
                state = wait(&self.work, state);
            }
            // A window too long for the clock (`Duration::MAX`) has no
            // deadline: the queue waits for the close.
            let deadline = Instant::now().checked_add(max_delay);
            while !state.closed {
                let Some(deadline) = deadline else {
                    state = wait(&self.work, state);
                    continue;
                };
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = wait_timeout(&self.work, state, deadline - now);
            }
            let closed = state.closed;
            let queued = state.queued;
            drop(state);
            // An error is kept in the state, for the caller who asks.
            let _ = self.sync_through(queued);
            state = lock(&self.state);
            if closed && state.queue.is_empty() {
                return;
            }
        }
    }

    /// Lets the sink go once a disposal ended and everything is written: a
    /// disposed agent never logs again, so its file is closed (and its
    /// one-writer lock released) at once, not when the last reference to
    /// the agent goes, and another agent may resume it right away. Waits
    /// for a writer that has the token out. Anything queued after this
    /// (nothing should be) meets [`Released`] and fails visibly.
    pub(crate) fn release(&self) {
        let mut state = lock(&self.state);
        if self.inside_sink() {
            // The token is out on this thread, up the stack: its writer
            // lets the sink go when it puts the token back.
            state.release = true;
            return;
        }
        loop {
            if let Some(writer) = &mut state.writer {
                let sink = mem::replace(&mut writer.sink, Box::new(Released));
                drop(state);
                drop_guarded(sink);
                return;
            }
            state.waiting += 1;
            state = wait(&self.written, state);
            state.waiting -= 1;
        }
    }

    /// No more outputs come: the write-behind thread writes the rest and
    /// stops (joined here), so a dropped agent's last lines reach the disk.
    pub(crate) fn close(&self, writer: &mut WriterThread) {
        lock(&self.state).closed = true;
        self.work.notify_one();
        if let Some(thread) = writer.0.take() {
            // It catches its sink's panics, so it ends; this runs in `Drop`,
            // which must not panic either way.
            drop_guarded(thread.join());
        }
    }
}

/// Calls the user's sink; a panic in it is its failure, so it never
/// unwinds through the writer (which holds the writer's token) or a lock.
fn guarded(call: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|payload| {
        Err(io::Error::other(format!(
            "the sink panicked: {}",
            panic_message(payload)
        )))
    })
}

/// The writer's token: the sink, and the one buffer its lines are encoded
/// in (if it asks for lines), reused from line to line and batch to batch.
struct Writer {
    sink: Box<dyn Sink>,
    line: String,
}

impl Drop for Writer {
    /// A user's sink may panic in `Drop` too; the journal goes with the
    /// agent's last reference, from the driver task or a `Drop`.
    fn drop(&mut self) {
        drop_guarded(mem::replace(&mut self.sink, Box::new(Released)));
    }
}

impl Writer {
    /// Hands each output to the sink (moved: a sink that keeps values
    /// keeps these), in order, then makes them durable.
    fn write(&mut self, batch: &mut Vec<Output>) -> io::Result<()> {
        for output in batch.drain(..) {
            self.line.clear();
            self.sink.write_event(Event::new(output, &mut self.line))?;
        }
        self.sink.flush()
    }
}

/// The sink of a journal whose agent's disposal released its own.
struct Released;

impl Sink for Released {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        Err(io::Error::other(
            "the log was closed when the agent was disposed",
        ))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a caller does about its lines once the agent's lock is released:
/// see [`Journal::enqueue`].
#[must_use = "a taken writer's token must be given back by `Journal::settle`"]
pub(crate) enum Settle {
    /// Nothing: no lines, or they are written behind.
    Nothing,
    /// Wait until the log is synced through this position (writing it if
    /// the token comes free first).
    Through(Position),
    /// Write this batch, which holds the caller's lines, with the token.
    Write(Taken),
}

/// The writer's token and the queue it took, up to position `end`.
pub(crate) struct Taken {
    writer: Writer,
    batch: Vec<Output>,
    end: Position,
}

/// Queues `outputs` (none after a failure: nothing more is written then,
/// and the caller who asks gets the error); the position of the last.
fn push(state: &mut State, outputs: &mut Vec<Output>) -> Position {
    state.queued += outputs.len() as u64;
    if state.failure.is_some() {
        outputs.clear();
    } else if state.queue.is_empty() {
        // The common case: the buffers trade places, nothing is copied.
        mem::swap(&mut state.queue, outputs);
    } else {
        state.queue.append(outputs);
    }
    state.queued
}

/// Takes the whole queue for the holder of the token `writer` (the spare
/// buffer becomes the queue).
fn take(state: &mut State, writer: Writer) -> Taken {
    let spare = mem::take(&mut state.spare);
    Taken {
        writer,
        batch: mem::replace(&mut state.queue, spare),
        end: state.queued,
    }
}
