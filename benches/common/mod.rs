//! What the `claim` and `runtime` benches share, so both time the same
//! inputs and the same tokio baseline (`tokio-mpsc` / `tokio-same-task`).

use std::hint::black_box;

use courier_core::{Message, MessageId, Source};

/// Messages per cycle: one alone, a burst of steering, and a flood.
pub(crate) const BATCH_SIZES: [usize; 3] = [1, 16, 256];

/// N distinct human text messages, as a client would build them.
pub(crate) fn messages(count: usize) -> Vec<Message> {
    (0..count)
        .map(|index| {
            let id = MessageId::new(format!("message-{index:04}"));
            Message::text(id, Source::user())
        })
        .collect()
}

/// Tokio's unbounded channel: send N, then receive N, inside one `block_on`
/// of a current-thread runtime.
pub(crate) struct TokioChannel {
    runtime: tokio::runtime::Runtime,
    sender: tokio::sync::mpsc::UnboundedSender<Message>,
    receiver: tokio::sync::mpsc::UnboundedReceiver<Message>,
}

impl TokioChannel {
    pub(crate) fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        Self {
            runtime,
            sender,
            receiver,
        }
    }

    #[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
    pub(crate) fn cycle(&mut self, batch: &mut Vec<Message>) {
        let count = batch.len();
        let Self {
            runtime,
            sender,
            receiver,
        } = self;
        runtime.block_on(async {
            for message in batch.drain(..) {
                sender.send(message).expect("the receiver is alive");
            }
            for _ in 0..count {
                black_box(receiver.recv().await.expect("sent above"));
            }
        });
    }
}
