//! Refused inputs (SPEC §10). A refusal changes nothing and emits nothing.

use std::fmt;

use crate::event::AwaitPoint;
use crate::message::MessageId;

/// Why the core refused an input; one variant per SPEC §10 kind.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Refusal {
    /// The input would make this id pending twice.
    DuplicateId(MessageId),
    /// The agent is disposed and the input would insert this message.
    Disposed(MessageId),
    /// A replace or remove named an id that is not pending.
    NotPending(MessageId),
    /// A completion arrived for a point the driver is not awaiting.
    NotAwaiting(AwaitPoint),
}

impl Refusal {
    /// The SPEC's name of the kind, as transcripts print it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::DuplicateId(_) => "duplicate-id",
            Self::Disposed(_) => "disposed",
            Self::NotPending(_) => "not-pending",
            Self::NotAwaiting(_) => "not-awaiting",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        match self {
            Self::DuplicateId(id) | Self::Disposed(id) | Self::NotPending(id) => {
                write!(formatter, "{kind}: {id}")
            }
            Self::NotAwaiting(point) => write!(formatter, "{kind}: {point}"),
        }
    }
}

impl std::error::Error for Refusal {}
