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
    let ranks = Ranks::of(agent, checker);
    // A byte string equal to a ranked id is written as its rank (tagged, so
    // it cannot pass for raw bytes).
    let mut renaming =
        StringHasher::new(&mut *hasher, |inner: &mut &mut H, bytes: &[u8]| match ranks
            .position(bytes)
        {
            Some(rank) => {
                inner.write_u8(RANK_TAG);
                inner.write_usize(rank);
            }
            None => inner.write(bytes),
        });
    agent.hash(&mut renaming);
    checker.hash_canonical(&mut renaming, |id| ranks.rank(id));
    extra(&ranks, hasher);
}

/// Ids in canonical order: first appearance in `next-step`, `next-turn`, the
/// claimed batch, then the ids admitted in the open step. On the stack up to
/// [`RANKS_INLINE`] ids: the model checker ranks every state it generates,
/// and a heap list cost it an allocation and a free each time.
#[derive(Debug, Default)]
pub struct Ranks<'a> {
    ids: SmallVec<[&'a str; RANKS_INLINE]>,
}

/// More ids than the model checker's bounds hold (26 at most, usually a
/// handful) spill to the heap.
const RANKS_INLINE: usize = 16;

impl<'a> Ranks<'a> {
    /// The canonical order of the ids `(agent, checker)` hold.
    #[inline]
    pub fn of(agent: &'a Agent, checker: &'a Checker) -> Self {
        let inbox = agent.inbox();
        let batch = agent.claimed().unwrap_or(&[]);
        let listed = inbox.list(Target::NextStep).iter();
        let listed = listed.chain(inbox.list(Target::NextTurn)).chain(batch);
        let mut ranks = Self::default();
        for id in listed.map(Message::id).chain(checker.history().admitted()) {
            let id = id.as_str();
            if ranks.position(id.as_bytes()).is_none() {
                ranks.ids.push(id);
            }
        }
        ranks
    }

    /// The rank of `id`; ids outside the lists rank after all listed ones.
    pub fn rank(&self, id: &MessageId) -> usize {
        self.position(id.as_str().as_bytes())
            .unwrap_or(self.ids.len())
    }

    /// Ids are shared `Arc<str>`s, so the hashed id is usually the very
    /// string ranked: a scan by address finds it without reading a byte.
    /// Other strings (a new id, a hook's reason) are compared by length and
    /// first byte before the rest (a `memcmp` call), which tells the
    /// simulator's one-letter ids apart. Ranked ids are distinct, so both
    /// scans find the same rank.
    fn position(&self, bytes: &[u8]) -> Option<usize> {
        let at = |id: &&str| id.as_ptr() == bytes.as_ptr() && id.len() == bytes.len();
        self.ids.iter().position(at).or_else(|| {
            let same = |id: &&str| {
                let id = id.as_bytes();
                id.len() == bytes.len() && id.first() == bytes.first() && id == bytes
            };
            self.ids.iter().position(same)
        })
    }
}

/// Marks a renamed id in the hashed stream (ids are UTF-8, which never
/// holds this byte).
const RANK_TAG: u8 = 0xfe;
