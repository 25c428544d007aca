//! Why a call on a [`crate::Handle`] did not do what it asked.

use std::fmt;
use std::io;

use courier_core::{MessageId, Refusal};

/// A call's failure: the core's refusal, or a reason the runtime around
/// the core cannot serve the call.
#[derive(Debug)]
pub enum Error {
    /// The core refused the input (SPEC §5); nothing changed.
    Refused(Refusal),
    /// The driver task is gone (dropped, or its task aborted) before the
    /// agent's end (disposed and idle; a disposal it left midway, its turn
    /// aborted but not ended, never ends): nothing will ever run a hook,
    /// finish a turn or resolve a waiter again, so the call was not made.
    /// The log is left as a crash leaves it; [`crate::Handle::resume`]
    /// picks it up.
    DriverGone,
    /// Awaited inside one of the agent's own hooks: the driver task is
    /// waiting for that very hook, so the wait could never end.
    InsideHook,
    /// Called inside the agent's own [`crate::Sink`] (while the journal
    /// writes or flushes the log through it, on the calling thread), under
    /// any [`crate::Durability`]: the call would wait for the log's writer,
    /// which that very sink holds, so it was not made.
    InsideSink,
    /// The log's sink failed or panicked (the first error it ever
    /// reported), during this call's transition (which was applied) or
    /// before it (then the call was not made: accepting work the log cannot
    /// record would lose it at the next crash). During it, the outcome is
    /// what the file kept, as after a crash mid-write: a transition writes
    /// several lines (a send that wakes the agent: its `spliced`, then
    /// `turn/start` and the claim), and the failure may cut a later one, so
    /// a resume may find the send pending; a caller that must know reads
    /// the resumed inbox. Nothing is written after it,
    /// and the driver task stops, as a crash stops it: no hook runs on lines
    /// the log did not keep, and `when_idle` and `dispose` end with this
    /// error. [`crate::Handle::resume`] goes on from what the file kept.
    Log(io::Error),
    /// The message would be logged in a line that does not read back (see
    /// [`courier_core::Message::unreadable_when_logged`]): accepted, it
    /// would make the log impossible to resume, so the call was not made.
    Unloggable {
        /// The message's id.
        id: MessageId,
        /// Why its line would not read back.
        reason: String,
    },
    /// The [`crate::Observer`] panicked observing this call's transition
    /// (which was applied); the observer was dropped. `when_idle` and
    /// `dispose` return it once their wait ends, for their own transitions
    /// and for those no call made (the driver task's completions, the last
    /// handle's disposal) while they waited; see
    /// [`crate::Handle::observer_panic`].
    ObserverPanicked(String),
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(refusal) => write!(formatter, "refused: {refusal}"),
            Self::DriverGone => formatter.write_str(
                "the agent's driver task is gone (dropped or aborted): nothing serves this agent any more",
            ),
            Self::InsideHook => formatter.write_str(
                "awaited inside the agent's own hook, which the driver task is waiting for: it would never resolve",
            ),
            Self::InsideSink => formatter.write_str(
                "called inside the agent's own sink, which holds the log's writer the call would wait for",
            ),
            Self::Log(error) => write!(formatter, "the session log failed: {error}"),
            Self::Unloggable { id, reason } => write!(
                formatter,
                "message {}: not logged, since a resume could not read it back: {reason}",
                id.as_str()
            ),
            Self::ObserverPanicked(message) => {
                write!(formatter, "the observer panicked and was dropped: {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Refused(refusal) => Some(refusal),
            Self::Log(error) => Some(error),
            Self::DriverGone
            | Self::InsideHook
            | Self::InsideSink
            | Self::Unloggable { .. }
            | Self::ObserverPanicked(_) => None,
        }
    }
}
