//! A 64-bit fingerprint of the abstract state (core agent plus checker ghost)
//! that is the same for two states equal up to a renaming of message ids.
//!
//! Ids are opaque (SPEC §1): a state where `A` is queued behind `B` behaves
//! like the one where `B` is queued behind `A`, so the model checker counts
//! them once and the simulator's coverage does too. Every id a state holds
//! sits in an ordered list (the two pending lists, the claimed batch, the ids
//! admitted in the open step; the ghost's id sets are subsets of pending), so
//! ranking ids by first appearance in those lists is canonical. The state is
//! then hashed through a [`StringHasher`] that writes each id as its rank.
//! This works on the core's derived `Hash` without reading its private
//! fields: a `str` hashes as one `write` of its bytes (then `write_u8(0xff)`),
//! and the core hashes ids only as strings inside ordered containers. A
//! message hashes as its id and its [`Message::digest`], which writes the
//! message's own id in its content and source as a marker, so it is renamed
//! too (and its JSON content is hashed once per message, not per state).

use std::cell::Cell;
use std::hash::{BuildHasher, Hash, Hasher};

use courier_core::hashing::StringHasher;
use courier_core::{Agent, Message, MessageId, Target};
use smallvec::SmallVec;

use crate::checker::Checker;

/// The fingerprint the simulator and the model checker share: stable across
/// runs (fixed seeds), canonical over ids. `ahash` rather than std's
/// SipHash: nothing here resists crafted collisions (a fingerprint is a
/// dedup key of states the engines themselves generate) and SipHash cost
/// about a sixth of the simulator's time.
pub fn fingerprint(agent: &Agent, checker: &Checker) -> u64 {
    let mut hasher = ahash::RandomState::with_seeds(1, 2, 3, 4).build_hasher();
    hash_canonical(agent, checker, &mut hasher);
    hasher.finish()
}

/// Feeds the canonical form of `(agent, checker)` to any hasher.
fn hash_canonical<H: Hasher>(agent: &Agent, checker: &Checker, hasher: &mut H) {
    hash_with(agent, checker, hasher, |_, _| {});
}

/// Feeds the canonical form of `(agent, checker)`, then `extra` hashes more
/// id-keyed data by rank; the model checker's state hashes through this so
/// its dedup merges renamed states.
pub fn hash_with<H: Hasher>(
    agent: &Agent,
    checker: &Checker,
    hasher: &mut H,
    extra: impl FnOnce(&Ranks<'_>, &mut H),
) {
    let mut ranks = Ranks::default();
    ranks.rank_all(agent, checker);
    // A byte string equal to a ranked id is written as its rank (tagged, so
    // it cannot pass for raw bytes), in one write.
    let mut renaming =
        StringHasher::new(&mut *hasher, |inner: &mut &mut H, bytes: &[u8]| match ranks
            .position(bytes)
        {
            Some(rank) => inner.write_u64(RANKED | rank as u64),
            None => inner.write(bytes),
        });
    agent.hash(&mut renaming);
    checker.hash_canonical(&mut renaming, |id| ranks.rank(id));
    extra(&ranks, hasher);
}

/// Ids in canonical order: first appearance in `next-step`, `next-turn`, the
/// claimed batch, then the ids admitted in the open step. On the stack up to
/// `RANKS_INLINE` ids: the model checker ranks every state it generates,
/// and a heap list cost it an allocation and a free each time.
#[derive(Debug, Default)]
pub struct Ranks<'a> {
    ids: SmallVec<[&'a str; RANKS_INLINE]>,
    /// The rank after the last one found: the agent hashes each list in
    /// order, so the next id looked up is usually the next ranked one.
    next: Cell<usize>,
}

/// More ids than the model checker's bounds hold (26 at most, usually a
/// handful) spill to the heap.
const RANKS_INLINE: usize = 16;

impl<'a> Ranks<'a> {
    /// Ranks the ids `(agent, checker)` hold in canonical order (filled in
    /// place: a returned `Ranks` was copied out, 264 bytes per state).
    #[inline]
    fn rank_all(&mut self, agent: &'a Agent, checker: &'a Checker) {
        let inbox = agent.inbox();
        let batch = agent.claimed().unwrap_or(&[]);
        let listed = inbox.list(Target::NextStep).iter();
        let listed = listed.chain(inbox.list(Target::NextTurn)).chain(batch);
        for id in listed.map(Message::id).chain(checker.history().admitted()) {
            let id = id.as_str();
            // One pass, by address or bytes: a new id is compared with
            // every ranked one once (`position` would scan twice).
            let ranked =
                |other: &&str| same_at(other, id.as_bytes()) || same_bytes(other, id.as_bytes());
            if !self.ids.iter().any(ranked) {
                self.ids.push(id);
            }
        }
    }

    /// The rank of `id`; ids outside the lists rank after all listed ones.
    #[inline]
    pub fn rank(&self, id: &MessageId) -> usize {
        self.position(id.as_str().as_bytes())
            .unwrap_or(self.ids.len())
    }

    /// The rank of the string `bytes`, if it is a ranked id. The rank after
    /// the last one found is tried first, by address and inline; the scans
    /// are not.
    #[inline]
    fn position(&self, bytes: &[u8]) -> Option<usize> {
        let next = self.next.get();
        if self.ids.get(next).is_some_and(|id| same_at(id, bytes)) {
            self.next.set(next + 1);
            return Some(next);
        }
        self.scan(bytes)
    }

    /// Ids are shared `Arc<str>`s, so the hashed id is usually the very
    /// string ranked: a scan by address finds it without reading a byte.
    /// Other strings (a new id, a hook's reason) are compared by length and
    /// first byte before the rest (a `memcmp` call), which tells the
    /// simulator's one-letter ids apart. Ranked ids are distinct, so both
    /// scans find the same rank.
    #[inline(never)]
    fn scan(&self, bytes: &[u8]) -> Option<usize> {
        let at = |id: &&str| same_at(id, bytes);
        let same = |id: &&str| same_bytes(id, bytes);
        let rank = self
            .ids
            .iter()
            .position(at)
            .or_else(|| self.ids.iter().position(same));
        if let Some(rank) = rank {
            self.next.set(rank + 1);
        }
        rank
    }
}

/// Whether `id` is the very string `bytes` (same address and length).
#[inline]
fn same_at(id: &str, bytes: &[u8]) -> bool {
    id.as_ptr() == bytes.as_ptr() && id.len() == bytes.len()
}

/// Whether `id` spells `bytes`: length and first byte before the rest.
#[inline]
fn same_bytes(id: &str, bytes: &[u8]) -> bool {
    let id = id.as_bytes();
    id.len() == bytes.len() && id.first() == bytes.first() && id == bytes
}

/// Marks a renamed id in the hashed stream: its top byte, which no rank
/// reaches, is one UTF-8 never holds.
const RANKED: u64 = 0xfe << 56;
