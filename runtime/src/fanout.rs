//! Hands each output, in emission order, to every subscriber (all of them)
//! and sets the durable ones aside for the journal, which encodes and writes
//! them once the agent's lock is released. Lossless subscribers get an
//! unbounded channel; bounded ones a ring that drops the oldest and counts
//! what it dropped (tokio's `broadcast`, one per subscriber).

use courier_core::Output;
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedSender;

#[derive(Default)]
pub(crate) struct Fanout {
    /// The open critical section's durable outputs, for
    /// [`crate::journal::Journal::enqueue`]; emptied by it.
    pub(crate) durable: Vec<Output>,
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
    /// Adds a subscriber; once closed, it is dropped at once, so its
    /// stream starts ended.
    pub(crate) fn subscribe(&mut self, subscriber: Subscriber) {
        if !self.closed {
            self.subscribers.push(subscriber);
        }
    }

    /// Ends every subscription (their streams end once read): nothing more
    /// will be delivered.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.subscribers.clear();
    }

    /// Inlined into the drain loop: a call per output cost 5% of the
    /// runtime bench's cycle (callgrind, `BENCHMARKS.md`).
    #[inline]
    pub(crate) fn deliver(&mut self, output: Output) {
        if !self.subscribers.is_empty() {
            self.subscribers
                .retain(|subscriber| subscriber.send(&output));
        }
        if output.is_durable() {
            self.durable.push(output);
        }
    }
}
