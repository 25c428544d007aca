//! Hands each output, in emission order, to every subscriber (all of them)
//! and sets the durable ones aside for the journal, which encodes and writes
//! them once the agent's lock is released.

use courier_core::Output;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

#[derive(Default)]
pub(crate) struct Fanout {
    /// The open critical section's durable outputs, for
    /// [`crate::journal::Journal::enqueue`]; emptied by it.
    pub(crate) durable: Vec<Output>,
    /// Unbounded so a slow reader never loses a notification; a subscriber
    /// that dropped its receiver is forgotten at the next output.
    subscribers: Vec<UnboundedSender<Output>>,
}

impl Fanout {
    pub(crate) fn subscribe(&mut self) -> UnboundedReceiver<Output> {
        let (sender, receiver) = unbounded_channel();
        self.subscribers.push(sender);
        receiver
    }

    pub(crate) fn deliver(&mut self, output: Output) {
        self.subscribers
            .retain(|subscriber| subscriber.send(output.clone()).is_ok());
        if output.is_durable() {
            self.durable.push(output);
        }
    }
}
