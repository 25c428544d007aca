//! What a transcript [`Runner`](super::Runner) keeps of its durable log so
//! that `restart lose=N` can resume from all but the last `N` events: the
//! whole log ([`WholeLog`], which the protocol server shows), or only the
//! events a restart can still lose, after a replay of everything before them
//! ([`TailLog`], so `courier run` of a million commands holds the agent's
//! state, not a million events).

use std::collections::VecDeque;

use crate::agent::Agent;
use crate::event::Output;
use crate::resume::{CorruptLog, Replay};

/// A durable log as a runner keeps it.
pub trait Kept {
    /// Appends a durable event.
    fn push(&mut self, event: Output);

    /// A fresh agent of `agent`'s variant resumed from the log less its
    /// last `lose` events (clamped to the whole log), the log cut to what
    /// it kept; when that does not replay, why, and the log unchanged.
    fn resume(&mut self, agent: &Agent, lose: usize) -> Result<Agent, CorruptLog>;
}

/// Every durable event since the session started.
#[derive(Clone, Default, Debug)]
pub struct WholeLog(pub(super) Vec<Output>);

impl Kept for WholeLog {
    fn push(&mut self, event: Output) {
        self.0.push(event);
    }

    fn resume(&mut self, agent: &Agent, lose: usize) -> Result<Agent, CorruptLog> {
        let kept = self.0.len() - lose.min(self.0.len());
        let resumed = agent.resume(&self.0[..kept])?;
        self.0.truncate(kept);
        Ok(resumed)
    }
}

/// The fewest events a [`TailLog`] holds before it replays the older ones
/// (so a log that no restart cuts deeply is not replayed event by event).
const TAIL_MIN: usize = 1024;

/// The last events of the log, at least `lose_max` of them, and the replay
/// of the events before them (or the first of those that does not replay:
/// every resume from a longer prefix fails on it too, as a resume from the
/// whole log would). Memory: the replayed pending lists plus at most twice
/// the tail.
#[derive(Clone, Debug)]
pub struct TailLog {
    replayed: Result<Replay, CorruptLog>,
    /// How many events `replayed` holds.
    replayed_len: usize,
    tail: VecDeque<Output>,
    lose_max: usize,
}

impl TailLog {
    /// An empty log of `prototype`'s variant whose restarts lose at most
    /// `lose_max` events.
    pub(super) fn new(prototype: &Agent, lose_max: usize) -> Self {
        Self {
            replayed: Ok(Replay::new(prototype)),
            replayed_len: 0,
            tail: VecDeque::new(),
            lose_max,
        }
    }
}

impl Kept for TailLog {
    fn push(&mut self, event: Output) {
        self.tail.push_back(event);
        let keep = self.lose_max.max(TAIL_MIN);
        if self.tail.len() < keep.saturating_mul(2) {
            return;
        }
        // Amortised: half the tail goes into the replay at once.
        let older = self.tail.len() - keep;
        for event in self.tail.drain(..older) {
            if let Ok(replay) = &mut self.replayed
                && let Err(corrupt) = replay.apply(&event)
            {
                self.replayed = Err(corrupt);
            }
        }
        self.replayed_len += older;
    }

    /// A `lose` beyond the tail (more than the `lose_max` it was made
    /// with, once older events were replayed) loses the whole tail: the
    /// events before it are no longer held.
    fn resume(&mut self, _agent: &Agent, lose: usize) -> Result<Agent, CorruptLog> {
        let kept = self.tail.len() - lose.min(self.tail.len());
        let mut replay = self.replayed.clone()?;
        for event in self.tail.range(..kept) {
            replay.apply(event)?;
        }
        self.tail.truncate(kept);
        Ok(replay.resume())
    }
}
