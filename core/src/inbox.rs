//! The inbox (SPEC §2): two ordered lists of pending messages and the one
//! normalized splice primitive every change goes through. It knows nothing
//! about drivers.

use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, Hash, Hasher};

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::message::{Message, MessageId, Target};
use crate::pending::Pending;

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
    pub inserted: Inserted,
    /// `canceled` on ordinary removals; absent on claims and pure insertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

/// A splice's inserted messages. A send or an append inserts one, and one
/// message is held inline: the commonest edit's `spliced` allocates nothing
/// (a heap vector of one cost a claim cycle about a tenth of its
/// instructions, see `BENCHMARKS.md`). It reads, serializes, hashes and
/// prints as the slice it holds, as a `Vec` did.
pub type Inserted = SmallVec<[Message; 1]>;

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Splice {
    /// A splice that changes nothing emits nothing (SPEC §5).
    pub(crate) fn is_noop(&self) -> bool {
        self.removed_count == 0 && self.inserted.is_empty()
    }
}

/// The pending-id index: for each id hash, how many pending messages have
/// it. `rustc-hash`'s fixed, unkeyed hasher keeps process entropy out of the
/// core (nothing here resists crafted collisions, and nothing needs to: the
/// index is never iterated, so the hash cannot reach an output), and it is
/// far cheaper than SipHash, which was the largest single cost of a claim
/// cycle (see `BENCHMARKS.md`).
///
/// It holds hashes, not ids, so keeping it touches no reference counts: a set
/// of ids cost an atomic increment per send and a decrement per claim, about
/// a tenth of a claim cycle. A hash it does not count rules an id out at
/// once, which is the answer for every accepted send; a hash it counts is
/// confirmed in the lists (see [`Inbox::contains`]).
type IdIndex = FxHashMap<u64, u32>;

/// The hash of an id, as the index counts it.
fn id_hash(id: &MessageId) -> u64 {
    FxBuildHasher.hash_one(id)
}

/// Where `id` is in the lists, if it is: O(log n) expected whatever their
/// lengths (see [`Pending::locate`]).
fn locate(
    next_turn: &mut Pending<Message>,
    next_step: &mut Pending<Message>,
    id: &MessageId,
) -> Option<(Target, usize)> {
    match next_step.locate(id) {
        Some(index) => Some((Target::NextStep, index)),
        None => Some((Target::NextTurn, next_turn.locate(id)?)),
    }
}

/// Both pending lists. An id is pending at most once across them.
#[derive(Clone, Debug, Default)]
pub struct Inbox {
    next_turn: Pending<Message>,
    next_step: Pending<Message>,
    /// Derived from the lists; kept only so a send need not scan them.
    pending: IdIndex,
    /// Whether [`Inbox::sweep`] checked the lists as they stand, so a check
    /// after an input that left them alone (a completion, a status change)
    /// need not sweep them again. Not state.
    swept: bool,
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
    pub fn list(&self, target: Target) -> &Pending<Message> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    /// Every change to the lists goes through here, so it is where a sweep
    /// goes stale.
    fn list_mut(&mut self, target: Target) -> &mut Pending<Message> {
        self.swept = false;
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Whether `id` is pending in either list, without changing them (for
    /// engines that hold an `&Inbox`; the core's own inputs use
    /// `Inbox::find`).
    ///
    /// An uncounted hash answers at once. A counted one (the id is pending,
    /// or its 64-bit hash collides) is confirmed in the lists: through their
    /// key index once `Inbox::find` built it, else by a scan.
    pub fn contains(&self, id: &MessageId) -> bool {
        self.counted(id)
            && Target::ALL
                .into_iter()
                .any(|t| self.list(t).position(id).is_some())
    }

    /// Whether the index counts `id`'s hash: `false` means not pending.
    fn counted(&self, id: &MessageId) -> bool {
        !self.is_empty() && self.pending.contains_key(&id_hash(id))
    }

    /// Whether both lists are empty.
    pub fn is_empty(&self) -> bool {
        self.next_turn.is_empty() && self.next_step.is_empty()
    }

    /// How many messages are pending in both lists.
    pub fn len(&self) -> usize {
        self.next_turn.len() + self.next_step.len()
    }

    fn count(&mut self, id: &MessageId) {
        *self.pending.entry(id_hash(id)).or_default() += 1;
    }

    fn uncount(&mut self, id: &MessageId) {
        let hash = id_hash(id);
        let count = self.pending.get_mut(&hash);
        // Unreachable from any input: only a message taken out of a list is
        // uncounted, and every message went in counted (`push_back`,
        // `apply`); `check_invariants` sweeps that the index counts the lists.
        let count = count.expect("the index counts every pending id");
        *count -= 1;
        if *count == 0 {
            self.pending.remove(&hash);
        }
    }

    /// Where `id` is pending, if it is: an uncounted hash answers at once;
    /// a counted one costs O(log n) expected however long the lists are (a
    /// list longer than [`Pending::LONG_FROM`] becomes a treap indexed by
    /// id the first time, see [`Pending::locate`]), so a `remove`, a
    /// `replace` or a refused duplicate per input stays linear.
    pub(crate) fn find(&mut self, id: &MessageId) -> Option<(Target, usize)> {
        if !self.counted(id) {
            return None;
        }
        locate(&mut self.next_turn, &mut self.next_step, id)
    }

    /// Builds the normalized splice: `start` clamped to the list length and
    /// `removed` clamped to what exists from there.
    pub(crate) fn normalize(
        &self,
        target: Target,
        start: usize,
        removed: usize,
        inserted: Inserted,
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

    /// Adds `message` at the end of `target` (a send or an append) and
    /// returns where it now sits, or the id if it is already pending.
    ///
    /// The same check and change as [`Inbox::duplicate`] then
    /// [`Inbox::apply`] of the splice that appends it, but the commonest
    /// edit hashes the id once and probes the index once (the two passes
    /// were nearly a third of a claim cycle's instructions, see
    /// `BENCHMARKS.md`).
    pub(crate) fn push_back(
        &mut self,
        target: Target,
        message: &Message,
    ) -> Result<usize, MessageId> {
        let id = message.id();
        let Self {
            next_turn,
            next_step,
            pending,
            ..
        } = &mut *self;
        match pending.entry(id_hash(id)) {
            Entry::Vacant(slot) => {
                slot.insert(1);
            }
            // The hash is counted: the id is pending, or its hash collides.
            Entry::Occupied(mut slot) => {
                if locate(next_turn, next_step, id).is_some() {
                    return Err(id.clone());
                }
                *slot.get_mut() += 1;
            }
        }
        let list = self.list_mut(target);
        list.push_back(message.clone());
        Ok(list.len() - 1)
    }

    /// The id a refusal names when `splice` would leave an id pending twice
    /// (so replacing A by A is fine): the first id seen twice in the lists
    /// as they would stand, `next-turn` then `next-step`. SPEC §10 checks a
    /// splice "after it is applied", and dsh's inbox names that id (its
    /// `validate` scans the candidate lists in that order); when several
    /// ids repeat, the first inserted one can differ (`splice next-turn 0 0
    /// B A` over `A B` leaves `B A A B`: `A`).
    ///
    /// Linear in the splice, not in the lists: only inserted ids can repeat
    /// (nothing is pending twice before), so each one's occurrences are its
    /// inserted positions and, found in O(log n) ([`Inbox::find`]), its
    /// pending one unless the splice removes it. A send allocates nothing.
    pub(crate) fn duplicate(&mut self, splice: &Splice) -> Option<MessageId> {
        let (target, start) = (splice.target, splice.start);
        let removed = start..start + splice.removed_count;
        // Where a pending message would sit once the splice is applied.
        let after = |(list, index): (Target, usize)| match list == target && index >= removed.start
        {
            false => Some((list, index)),
            true if index < removed.end => None,
            true => Some((list, index - splice.removed_count + splice.inserted.len())),
        };
        if let [message] = splice.inserted.as_slice() {
            let id = message.id();
            return self.find(id).and_then(after).map(|_| id.clone());
        }
        let mut occurrences = FxHashMap::<&MessageId, SmallVec<[(Target, usize); 2]>>::default();
        for (offset, message) in splice.inserted.iter().enumerate() {
            occurrences
                .entry(message.id())
                .or_default()
                .push((target, start + offset));
        }
        // (where its second occurrence would sit, the id): the least names it.
        let mut first_repeat: Option<((Target, usize), &MessageId)> = None;
        for message in &splice.inserted {
            let id = message.id();
            let Some(mut at) = occurrences.remove(id) else {
                continue;
            };
            at.extend(self.find(id).and_then(after));
            at.sort_unstable();
            if let Some(&second) = at.get(1)
                && first_repeat.is_none_or(|(least, _)| second < least)
            {
                first_repeat = Some((second, id));
            }
        }
        first_repeat.map(|(_, id)| id.clone())
    }

    /// Applies a normalized splice that [`Inbox::duplicate`] accepted and
    /// returns the removed messages in list order.
    pub(crate) fn apply(&mut self, splice: &Splice) -> Vec<Message> {
        debug_assert!(self.duplicate(splice).is_none(), "splice not checked");
        let range = splice.start..splice.start + splice.removed_count;
        let list = self.list_mut(splice.target);
        debug_assert!(range.end <= list.len(), "splice not normalized");
        // The common splices (a send, a claim-free append) remove nothing and
        // insert at the end: skip the empty drain and the tail move (which
        // cost a claim cycle 18% more instructions per message).
        let removed: Vec<Message> = if range.is_empty() {
            Vec::new()
        } else {
            list.remove(range)
        };
        // At the end this appends; in the middle of a long list it costs
        // O(log n) (a `Pending` becomes a tree), not a move of the tail.
        list.insert(splice.start, splice.inserted.iter().cloned());
        for message in &removed {
            self.uncount(message.id());
        }
        for message in &splice.inserted {
            self.count(message.id());
        }
        removed
    }

    /// Removes the first `count` messages of a list (a claim's pure deletion).
    pub(crate) fn take_front(&mut self, target: Target, count: usize) -> Vec<Message> {
        let list = self.list_mut(target);
        let count = count.min(list.len());
        let taken = list.remove(0..count);
        if self.is_empty() {
            // The claim took everything pending (the usual boundary): one
            // clear instead of a hash and probe per message.
            self.pending.clear();
        } else {
            for message in &taken {
                self.uncount(message.id());
            }
        }
        taken
    }

    /// [`Inbox::check_invariants`], unless the lists have not changed since
    /// the last sweep.
    pub(crate) fn sweep(&mut self) {
        if !self.swept {
            self.check_invariants();
            self.swept = true;
        }
    }

    /// Whether the lists have been swept as they stand (for the debug
    /// build's own check after each input).
    #[cfg(debug_assertions)]
    pub(crate) fn is_swept(&self) -> bool {
        self.swept
    }

    /// Checks that no id is pending twice and the index counts the lists,
    /// and panics naming the broken one: only a bug in the core can break
    /// them (every input is checked before it changes the lists), which is
    /// what the engines call this to find.
    pub(crate) fn check_invariants(&self) {
        if self.len() <= SMALL_SWEEP {
            self.check_small();
            return;
        }
        let len = self.len();
        let mut ids = FxHashSet::<&MessageId>::with_capacity_and_hasher(len, FxBuildHasher);
        let mut counted = IdIndex::with_capacity_and_hasher(len, FxBuildHasher);
        for message in self.next_turn.iter().chain(&self.next_step) {
            let id = message.id();
            assert!(ids.insert(id), "unique-pending: {id} is pending twice");
            *counted.entry(id_hash(id)).or_default() += 1;
        }
        assert!(
            counted == self.pending,
            "the index does not count the lists"
        );
    }

    /// [`Inbox::check_invariants`] for a small inbox, without building two
    /// sets: the simulator sweeps after every input, and its inboxes are
    /// small, so the sets' allocations were about 15% of its time. The id
    /// hashes, sorted on the stack, give the index's counts; only ids whose
    /// hashes are equal are compared.
    fn check_small(&self) {
        let listed = self.next_turn.iter().chain(&self.next_step);
        let mut hashed = [(0, 0); SMALL_SWEEP];
        for (slot, (index, message)) in hashed.iter_mut().zip(listed.enumerate()) {
            *slot = (id_hash(message.id()), index);
        }
        let hashed = &mut hashed[..self.len()];
        hashed.sort_unstable();
        let id_at = |index: usize| {
            let turn = self.next_turn.len();
            let message = match index.checked_sub(turn) {
                Some(step) => self.next_step.get(step),
                None => self.next_turn.get(index),
            };
            message.map(Message::id)
        };
        let mut distinct = 0;
        for run in hashed.chunk_by(|a, b| a.0 == b.0) {
            for (k, (_, index)) in run.iter().enumerate() {
                let id = id_at(*index);
                for (_, other) in &run[k + 1..] {
                    assert!(
                        id != id_at(*other),
                        "unique-pending: {id:?} is pending twice"
                    );
                }
            }
            let count = self.pending.get(&run[0].0).map(|count| *count as usize);
            assert!(
                count == Some(run.len()),
                "the index does not count the lists"
            );
            distinct += 1;
        }
        assert!(
            distinct == self.pending.len(),
            "the index does not count the lists"
        );
    }
}

/// The inbox size up to which [`Inbox::check_invariants`] sorts hashes on
/// the stack instead of building sets.
const SMALL_SWEEP: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Source;

    /// An inbox with `next-step` holding `ids` and its index built from them.
    fn inbox(ids: &[String]) -> Inbox {
        let mut inbox = Inbox::default();
        for id in ids {
            inbox
                .next_step
                .push_back(Message::text(id.as_str(), Source::user()));
            inbox.count(&MessageId::from(id.as_str()));
        }
        inbox
    }

    fn ids(count: usize) -> Vec<String> {
        (0..count).map(|k| format!("m-{k}")).collect()
    }

    /// Both sweeps (sorted hashes for a small inbox, sets for a large one) catch an
    /// id pending twice and an index that does not count the lists.
    #[test]
    fn both_sweeps_catch_what_they_check() {
        for count in [2, SMALL_SWEEP, SMALL_SWEEP + 1, 40] {
            inbox(&ids(count)).check_invariants();
            let mut twice = ids(count);
            twice[count - 1] = twice[0].clone();
            let broken = std::panic::catch_unwind(|| inbox(&twice).check_invariants());
            assert!(broken.is_err(), "{count}: an id pending twice passed");
            let mut stale = inbox(&ids(count));
            stale.count(&MessageId::from("gone"));
            let broken = std::panic::catch_unwind(|| stale.check_invariants());
            assert!(broken.is_err(), "{count}: an extra index entry passed");
            let mut short = inbox(&ids(count));
            short.uncount(&MessageId::from("m-1"));
            let broken = std::panic::catch_unwind(|| short.check_invariants());
            assert!(broken.is_err(), "{count}: a missing index entry passed");
        }
    }

    /// A sweep goes stale with every change to the lists (a send, a splice,
    /// a claim), so a check never skips a changed inbox.
    #[test]
    fn every_change_unsweeps() {
        let message = |id: &str| Message::text(id, Source::user());
        let mut inbox = Inbox::default();
        assert!(!inbox.swept, "a new inbox counts as swept");
        let changes: [fn(&mut Inbox, &Message); 3] = [
            |inbox, m| drop(inbox.push_back(Target::NextStep, m)),
            |inbox, m| {
                let splice = inbox.normalize(
                    Target::NextTurn,
                    0,
                    1,
                    Inserted::from_buf([m.clone()]),
                    None,
                );
                inbox.apply(&splice);
            },
            |inbox, _| drop(inbox.take_front(Target::NextStep, 1)),
        ];
        for (k, change) in changes.into_iter().enumerate() {
            inbox.sweep();
            assert!(inbox.swept);
            change(&mut inbox, &message(&format!("m-{k}")));
            assert!(!inbox.swept, "change {k} left the sweep standing");
        }
    }

    /// A refused splice names the first id seen twice in the lists as they
    /// would stand (`next-turn`, then `next-step`), as a scan of the applied
    /// splice finds it: checked against that scan over random small inboxes
    /// and splices, both targets, removals included.
    #[test]
    fn a_refused_splice_names_the_first_repeat_of_the_applied_lists() {
        let names = ["A", "B", "C", "D", "E"];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        for _ in 0..20_000 {
            let mut inbox = Inbox::default();
            let mut lists: [Vec<&str>; 2] = [Vec::new(), Vec::new()];
            for name in names {
                let which = next(3);
                if let Some(list) = lists.get_mut(which) {
                    let target = [Target::NextTurn, Target::NextStep][which];
                    inbox
                        .push_back(target, &Message::from(name))
                        .expect("distinct");
                    list.push(name);
                }
            }
            let which = next(2);
            let target = [Target::NextTurn, Target::NextStep][which];
            let inserted: Vec<&str> = (0..next(4)).map(|_| names[next(names.len())]).collect();
            let splice = inbox.normalize(
                target,
                next(4),
                next(3),
                Inserted::from_vec(inserted.iter().map(|id| Message::from(*id)).collect()),
                None,
            );
            let mut applied = lists.clone();
            applied[which].splice(
                splice.start..splice.start + splice.removed_count,
                inserted.iter().copied(),
            );
            let mut seen = FxHashSet::default();
            let expected = applied.concat().into_iter().find(|id| !seen.insert(*id));
            let named = inbox.duplicate(&splice);
            assert_eq!(
                named.as_ref().map(MessageId::as_str),
                expected,
                "{lists:?} {splice:?}"
            );
        }
    }
}
