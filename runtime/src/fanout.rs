//! Hands each output, in emission order, to the durable sink (durable ones
//! only, as JSONL) and to every subscriber (all of them).

use std::io;

use courier_core::Output;
use courier_core::log::{SessionHeader, durable_line};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::sink::Sink;

pub(crate) struct Fanout {
    sink: Box<dyn Sink>,
    /// The first write or flush error. After one, nothing more is written: a
    /// log with a hole in it would mislead its reader.
    failure: Option<io::Error>,
    /// Unbounded so a slow reader never loses a notification; a subscriber
    /// that dropped its receiver is forgotten at the next output.
    subscribers: Vec<UnboundedSender<Output>>,
}

impl Fanout {
    /// Starts the log with its `session` header.
    pub(crate) fn new(sink: Box<dyn Sink>, session_id: &str) -> Self {
        let mut fanout = Self {
            sink,
            failure: None,
            subscribers: Vec::new(),
        };
        fanout.write(&SessionHeader::new(session_id).line());
        fanout
    }

    /// Goes on with a log that already has its header (a resume).
    pub(crate) fn resumed(sink: Box<dyn Sink>) -> Self {
        Self {
            sink,
            failure: None,
            subscribers: Vec::new(),
        }
    }

    pub(crate) fn subscribe(&mut self) -> UnboundedReceiver<Output> {
        let (sender, receiver) = unbounded_channel();
        self.subscribers.push(sender);
        receiver
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
            .retain(|subscriber| subscriber.send(output.clone()).is_ok());
    }

    /// Flushes, then reports the first error the sink ever returned.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.flush_sink();
        match &self.failure {
            None => Ok(()),
            Some(error) => Err(io::Error::new(error.kind(), error.to_string())),
        }
    }

    fn write(&mut self, line: &str) {
        if self.failure.is_none() {
            self.failure = self.sink.write_line(line).err();
        }
    }

    fn flush_sink(&mut self) {
        if self.failure.is_none() {
            self.failure = self.sink.flush().err();
        }
    }
}
