//! The inbox (SPEC §2): two ordered lists of pending messages and the one
//! normalized splice primitive every change goes through. It knows nothing
//! about drivers.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::message::{Message, MessageId, Target};

/// Why a splice removed messages, as recorded durably.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Removed by an edit or a cancel (never by a claim).
    Canceled,
}

/// One normalized inbox change: the durable `agent/inbox/spliced` record.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Splice {
    /// The list it changes.
    pub target: Target,
    /// Where, already clamped to the list.
    pub start: usize,
    /// How many messages it removes, already clamped to what is there.
    #[serde(rename = "removedCount", default, skip_serializing_if = "is_zero")]
    pub removed_count: usize,
    /// The messages it inserts at `start`, in order.
    pub inserted: Vec<Message>,
    /// `canceled` on ordinary removals; absent on claims and pure insertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Splice {
    /// A splice that changes nothing emits nothing (SPEC §5).
    pub fn is_noop(&self) -> bool {
        self.removed_count == 0 && self.inserted.is_empty()
    }
}

/// The pending-id index uses a fixed-key hasher so no process entropy exists
/// anywhere in the core; it is never iterated.
type IdIndex = HashSet<MessageId, BuildHasherDefault<DefaultHasher>>;

/// Both pending lists. An id is pending at most once across them.
#[derive(Clone, Debug, Default)]
pub struct Inbox {
    next_turn: VecDeque<Message>,
    next_step: VecDeque<Message>,
    /// Derived from the lists; kept only so a send need not scan them.
    pending: IdIndex,
}

// Equality and hashing cover the lists only: the index is derived from them.
impl PartialEq for Inbox {
    fn eq(&self, other: &Self) -> bool {
        self.next_turn == other.next_turn && self.next_step == other.next_step
    }
}

impl Eq for Inbox {}

impl Hash for Inbox {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.next_turn.hash(state);
        self.next_step.hash(state);
    }
}

impl Inbox {
    /// The pending messages of one list, in order.
    pub fn list(&self, target: Target) -> &VecDeque<Message> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    fn list_mut(&mut self, target: Target) -> &mut VecDeque<Message> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Whether `id` is pending in either list.
    pub fn contains(&self, id: &MessageId) -> bool {
        self.pending.contains(id)
    }

    /// Whether both lists are empty.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// How many messages are pending in both lists.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Where `id` is pending, if it is.
    pub fn find(&self, id: &MessageId) -> Option<(Target, usize)> {
        if !self.contains(id) {
            return None;
        }
        Target::ALL.into_iter().find_map(|target| {
            let index = self.list(target).iter().position(|m| m.id() == id)?;
            Some((target, index))
        })
    }

    /// Builds the normalized splice: `start` clamped to the list length and
    /// `removed` clamped to what exists from there.
    pub fn normalize(
        &self,
        target: Target,
        start: usize,
        removed: usize,
        inserted: Vec<Message>,
        outcome: Option<Outcome>,
    ) -> Splice {
        let length = self.list(target).len();
        let start = start.min(length);
        let removed_count = removed.min(length - start);
        let outcome = if removed_count == 0 { None } else { outcome };
        Splice {
            target,
            start,
            removed_count,
            inserted,
            outcome,
        }
    }

    /// The first inserted id that would be pending twice once `splice` is
    /// applied (so replacing A by A is fine).
    pub fn duplicate(&self, splice: &Splice) -> Option<MessageId> {
        let removed = self
            .list(splice.target)
            .range(splice.start..splice.start + splice.removed_count);
        let removed_ids: Vec<&MessageId> = removed.map(Message::id).collect();
        for (index, message) in splice.inserted.iter().enumerate() {
            let id = message.id();
            let pending_after = self.contains(id) && !removed_ids.contains(&id);
            let inserted_twice = splice.inserted[..index].iter().any(|m| m.id() == id);
            if pending_after || inserted_twice {
                return Some(id.clone());
            }
        }
        None
    }

    /// Applies a normalized splice that [`Inbox::duplicate`] accepted and
    /// returns the removed messages in list order.
    pub fn apply(&mut self, splice: &Splice) -> Vec<Message> {
        debug_assert!(self.duplicate(splice).is_none(), "splice not checked");
        let range = splice.start..splice.start + splice.removed_count;
        let list = self.list_mut(splice.target);
        debug_assert!(range.end <= list.len(), "splice not normalized");
        let removed: Vec<Message> = list.drain(range).collect();
        for (offset, message) in splice.inserted.iter().enumerate() {
            list.insert(splice.start + offset, message.clone());
        }
        for message in &removed {
            self.pending.remove(message.id());
        }
        for message in &splice.inserted {
            let fresh = self.pending.insert(message.id().clone());
            debug_assert!(fresh, "unique-pending broken by {}", message.id());
        }
        removed
    }

    /// Removes the first `count` messages of a list (a claim's pure deletion).
    pub fn take_front(&mut self, target: Target, count: usize) -> Vec<Message> {
        let list = self.list_mut(target);
        let count = count.min(list.len());
        let taken: Vec<Message> = list.drain(..count).collect();
        for message in &taken {
            self.pending.remove(message.id());
        }
        taken
    }

    /// Checks that the index matches the lists and no id is pending twice.
    pub fn check_invariants(&self) {
        let listed = self.next_turn.len() + self.next_step.len();
        assert_eq!(
            listed,
            self.pending.len(),
            "unique-pending: an id is pending twice"
        );
        for message in self.next_turn.iter().chain(&self.next_step) {
            assert!(
                self.pending.contains(message.id()),
                "index lost {}",
                message.id()
            );
        }
    }
}
