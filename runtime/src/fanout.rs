//! Hands each output, in emission order, to the durable sink (durable ones
//! only, as JSONL) and to every subscriber (all of them): lossless ones
//! through an unbounded channel, bounded ones through a ring that drops the
//! oldest and counts what it dropped (tokio's `broadcast`, one per
//! subscriber).

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};

use courier_core::Output;
use courier_core::log::{SessionHeader, durable_line};
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedSender;

use crate::driver::panic_message;
use crate::sink::Sink;

pub(crate) struct Fanout {
    sink: Box<dyn Sink>,
    /// The first write or flush error. After one, nothing more is written: a
    /// log with a hole in it would mislead its reader.
    failure: Option<io::Error>,
    /// A subscriber that dropped its receiver is forgotten at the next
    /// output.
    subscribers: Vec<Subscriber>,
    /// Set once the driver task is gone: subscriptions have ended, and a
    /// new one starts ended.
    closed: bool,
}

/// One subscriber's sending end.
pub(crate) enum Subscriber {
    /// Never drops an output; a slow reader only uses more memory.
    Lossless(UnboundedSender<Output>),
    /// Keeps the latest outputs up to its capacity.
    Bounded(broadcast::Sender<Output>),
}

impl Subscriber {
    /// Whether the receiver is still there.
    fn send(&self, output: &Output) -> bool {
        match self {
            Self::Lossless(sender) => sender.send(output.clone()).is_ok(),
            Self::Bounded(sender) => sender.send(output.clone()).is_ok(),
        }
    }
}

impl Fanout {
    /// Starts the log with its `session` header.
    pub(crate) fn new(sink: Box<dyn Sink>, session_id: &str) -> Self {
        let mut fanout = Self::resumed(sink);
        fanout.write(&SessionHeader::new(session_id).line());
        fanout
    }

    /// Goes on with a log that already has its header (a resume).
    pub(crate) fn resumed(sink: Box<dyn Sink>) -> Self {
        Self {
            sink,
            failure: None,
            subscribers: Vec::new(),
            closed: false,
        }
    }

    /// Adds a subscriber; once closed, it is dropped at once, so its
    /// stream starts ended.
    pub(crate) fn subscribe(&mut self, subscriber: Subscriber) {
        if !self.closed {
            self.subscribers.push(subscriber);
        }
    }

    /// Ends every subscription (their streams end once read) and flushes the
    /// log: nothing more will be delivered.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.subscribers.clear();
        self.flush_sink();
    }

    pub(crate) fn deliver(&mut self, output: &Output) {
        if let Some(line) = durable_line(output) {
            self.write(&line);
        }
        // A turn's end is where a reader of the file expects a whole turn.
        if let Output::TurnEnd { .. } = output {
            self.flush_sink();
        }
        self.subscribers
            .retain(|subscriber| subscriber.send(output));
    }

    /// Flushes, then reports the first error the sink ever returned.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.flush_sink();
        self.failure()
    }

    /// The first error the sink ever reported (a copy: `io::Error` is not
    /// `Clone`).
    pub(crate) fn failure(&self) -> io::Result<()> {
        match &self.failure {
            None => Ok(()),
            Some(error) => Err(io::Error::new(error.kind(), error.to_string())),
        }
    }

    fn write(&mut self, line: &str) {
        self.guarded(|sink| sink.write_line(line));
    }

    fn flush_sink(&mut self) {
        self.guarded(|sink| sink.flush());
    }

    /// Calls the user's sink unless it already failed; a panic in it is its
    /// failure, so it never unwinds through the agent's lock.
    fn guarded(&mut self, call: impl FnOnce(&mut dyn Sink) -> io::Result<()>) {
        if self.failure.is_some() {
            return;
        }
        let sink = &mut *self.sink;
        self.failure = match catch_unwind(AssertUnwindSafe(|| call(sink))) {
            Ok(result) => result.err(),
            Err(payload) => Some(io::Error::other(format!(
                "the sink panicked: {}",
                panic_message(payload.as_ref())
            ))),
        };
    }
}
