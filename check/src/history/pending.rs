//! [`Pending`]: a ghost pending list whose splice costs O(log n) plus the
//! ids it moves, wherever it lands.
//!
//! A list is a `VecDeque` (what the model checker clones millions of
//! times: one allocation, no tree) until a splice lands strictly inside it
//! while it is longer than [`Pending::LONG_FROM`] ids; then it becomes an
//! implicit treap in an arena, so a log that inserts or removes in the
//! middle of a long list over and over stays linear, while one that only
//! appends, prepends and claims from the front keeps the deque's O(1) ends.
//! `imbl`'s RRB vector was measured first and rejected: repeated split and
//! append at the middle of one vector fragment its leaves (milliseconds
//! per splice past 100,000 splices, 1.6 GB at 350,000; BENCHMARKS.md).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::ops::Range;

use courier_core::MessageId;

/// An ordered list of pending ids.
#[derive(Clone, Debug, Default)]
pub struct Pending(Shape);

#[derive(Clone, Debug)]
enum Shape {
    /// Spliced at its ends, or short: a middle splice moves at most half
    /// of [`Pending::LONG_FROM`] ids.
    Short(VecDeque<MessageId>),
    /// Spliced in the middle once long: positions found and split in
    /// O(log n) expected. Boxed, so a `Pending` is no larger than the deque
    /// (the model checker copies its states).
    Long(Box<Treap>),
}

impl Default for Shape {
    fn default() -> Self {
        Self::Short(VecDeque::new())
    }
}

/// Two lists are equal when they hold the same ids in the same order,
/// whatever their shape.
impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Shape::Short(list), Shape::Short(other)) => list == other,
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }
}

impl Eq for Pending {}

/// Hashed as a `VecDeque` is (the length, then the ids), so the model
/// checker's state hashes did not change with the type.
impl Hash for Pending {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.len().hash(hasher);
        self.iter().for_each(|id| id.hash(hasher));
    }
}

impl<'a> IntoIterator for &'a Pending {
    type Item = &'a MessageId;
    type IntoIter = Iter<'a>;

    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Pending {
    /// The length past which a middle splice makes a list a [`Treap`]:
    /// below it the splice moves at most 64 ids, about what a treap's
    /// descent costs.
    pub const LONG_FROM: usize = 128;

    /// How many ids are pending.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Shape::Short(list) => list.len(),
            Shape::Long(treap) => treap.len(),
        }
    }

    /// Whether nothing is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id at `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&MessageId> {
        match &self.0 {
            Shape::Short(list) => list.get(index),
            Shape::Long(treap) => treap.get(index),
        }
    }

    /// The first id.
    #[inline]
    pub fn front(&self) -> Option<&MessageId> {
        self.get(0)
    }

    /// The ids in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.0 {
            Shape::Short(list) => IterShape::Short(list.iter()),
            Shape::Long(treap) => IterShape::Long(treap.iter()),
        })
    }

    /// Empties the list.
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Removes the ids in `range` (within the list), in order.
    pub(crate) fn remove(&mut self, range: Range<usize>) -> Vec<MessageId> {
        self.fit(range.start, range.end);
        match &mut self.0 {
            Shape::Short(list) => list.drain(range).collect(),
            Shape::Long(treap) => treap.remove(range),
        }
    }

    /// Becomes a treap before a splice of `start..end` (the ids it
    /// removes) that touches neither end of a list longer than
    /// [`Pending::LONG_FROM`]: there a `VecDeque` moves up to half the
    /// list, while at its ends (dsh appends, prepends and claims from the
    /// front) it costs nothing per id already pending. Never back: a log
    /// cannot make it convert twice.
    fn fit(&mut self, start: usize, end: usize) {
        if let Shape::Short(list) = &self.0
            && list.len() > Self::LONG_FROM
            && start > 0
            && end < list.len()
        {
            self.0 = Shape::Long(Box::new(Treap::from_ids(list.iter())));
        }
    }

    /// Inserts `ids` before position `start` (at most the length).
    pub(crate) fn insert(&mut self, start: usize, ids: &[MessageId]) {
        self.fit(start, start);
        match &mut self.0 {
            Shape::Short(list) if start <= list.len() - start => {
                // Move the shorter side once: the front here.
                let front: Vec<MessageId> = list.drain(..start).collect();
                for id in front.iter().chain(ids).rev() {
                    list.push_front(id.clone());
                }
            }
            Shape::Short(list) => {
                let mut back = list.split_off(start);
                list.extend(ids.iter().cloned());
                list.append(&mut back);
            }
            Shape::Long(treap) => treap.insert(start, ids),
        }
    }
}

/// The ids of a [`Pending`] in order.
pub struct Iter<'a>(IterShape<'a>);

enum IterShape<'a> {
    Short(std::collections::vec_deque::Iter<'a, MessageId>),
    Long(TreapIter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a MessageId;

    #[inline]
    fn next(&mut self) -> Option<&'a MessageId> {
        match &mut self.0 {
            IterShape::Short(iter) => iter.next(),
            IterShape::Long(iter) => iter.next(),
        }
    }
}

/// No node: an empty subtree.
const NIL: usize = usize::MAX;

/// One id of a [`Treap`], with its subtree.
#[derive(Clone, Debug)]
struct Node {
    id: MessageId,
    /// Heap order: a parent's priority is at least its children's.
    priority: u64,
    /// Ids in this subtree.
    size: usize,
    left: usize,
    right: usize,
}

/// An implicit treap: a binary tree in list order, heap-ordered by
/// pseudo-random priorities, so its depth is O(log n) expected; a position
/// is found by subtree sizes. Nodes live in one arena (cloned with one
/// copy); freed slots are reused. The priorities come from a fixed-seed
/// generator, so the same log builds the same tree on every run, and they
/// do not depend on the ids, so a log cannot unbalance it.
#[derive(Clone, Debug)]
struct Treap {
    nodes: Vec<Node>,
    free: Vec<usize>,
    root: usize,
    /// The priority generator's state (splitmix64).
    seed: u64,
}

impl Treap {
    fn from_ids<'a>(ids: impl IntoIterator<Item = &'a MessageId>) -> Self {
        let mut treap = Self {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            seed: 0,
        };
        let ids: Vec<MessageId> = ids.into_iter().cloned().collect();
        treap.insert(0, &ids);
        treap
    }

    fn len(&self) -> usize {
        self.size(self.root)
    }

    fn size(&self, node: usize) -> usize {
        self.node(node).map_or(0, |node| node.size)
    }

    fn node(&self, node: usize) -> Option<&Node> {
        self.nodes.get(node)
    }

    fn at(&mut self, node: usize) -> &mut Node {
        &mut self.nodes[node]
    }

    fn get(&self, mut index: usize) -> Option<&MessageId> {
        let mut node = self.node(self.root)?;
        loop {
            let left = self.size(node.left);
            if index < left {
                node = self.node(node.left)?;
            } else if index == left {
                return Some(&node.id);
            } else {
                index -= left + 1;
                node = self.node(node.right)?;
            }
        }
    }

    fn iter(&self) -> TreapIter<'_> {
        let mut iter = TreapIter {
            treap: self,
            stack: Vec::new(),
        };
        iter.descend(self.root);
        iter
    }

    fn priority(&mut self) -> u64 {
        self.seed = self.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn new_node(&mut self, id: MessageId) -> usize {
        let node = Node {
            id,
            priority: self.priority(),
            size: 1,
            left: NIL,
            right: NIL,
        };
        match self.free.pop() {
            Some(slot) => {
                *self.at(slot) = node;
                slot
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    fn update(&mut self, node: usize) {
        let (left, right) = (self.at(node).left, self.at(node).right);
        let size = self.size(left) + 1 + self.size(right);
        self.at(node).size = size;
    }

    /// Splits `node`'s subtree into its first `index` ids and the rest.
    fn split(&mut self, node: usize, index: usize) -> (usize, usize) {
        if node == NIL {
            return (NIL, NIL);
        }
        let left = self.at(node).left;
        let before = self.size(left);
        if index <= before {
            let (first, rest) = self.split(left, index);
            self.at(node).left = rest;
            self.update(node);
            (first, node)
        } else {
            let right = self.at(node).right;
            let (first, rest) = self.split(right, index - before - 1);
            self.at(node).right = first;
            self.update(node);
            (node, rest)
        }
    }

    /// Joins two subtrees, `first`'s ids before `second`'s.
    fn merge(&mut self, first: usize, second: usize) -> usize {
        if first == NIL {
            return second;
        }
        if second == NIL {
            return first;
        }
        if self.at(first).priority >= self.at(second).priority {
            let right = self.at(first).right;
            let joined = self.merge(right, second);
            self.at(first).right = joined;
            self.update(first);
            first
        } else {
            let left = self.at(second).left;
            let joined = self.merge(first, left);
            self.at(second).left = joined;
            self.update(second);
            second
        }
    }

    fn insert(&mut self, start: usize, ids: &[MessageId]) {
        let mut run = NIL;
        for id in ids {
            let node = self.new_node(id.clone());
            run = self.merge(run, node);
        }
        let (first, rest) = self.split(self.root, start);
        let first = self.merge(first, run);
        self.root = self.merge(first, rest);
    }

    fn remove(&mut self, range: Range<usize>) -> Vec<MessageId> {
        let (first, rest) = self.split(self.root, range.start);
        let (taken, last) = self.split(rest, range.len());
        self.root = self.merge(first, last);
        let mut freed = TreapIter {
            treap: self,
            stack: Vec::new(),
        };
        freed.descend(taken);
        let removed: Vec<MessageId> = freed.by_ref().cloned().collect();
        // The freed slots, in any order (each subtree's nodes once).
        let mut slots = vec![taken];
        while let Some(slot) = slots.pop() {
            if slot != NIL {
                let node = &self.nodes[slot];
                slots.extend([node.left, node.right]);
                self.free.push(slot);
            }
        }
        removed
    }
}

/// A [`Treap`]'s ids in order: the path of nodes still to visit.
struct TreapIter<'a> {
    treap: &'a Treap,
    stack: Vec<usize>,
}

impl TreapIter<'_> {
    fn descend(&mut self, mut node: usize) {
        while let Some(visited) = self.treap.node(node) {
            self.stack.push(node);
            node = visited.left;
        }
    }
}

impl<'a> Iterator for TreapIter<'a> {
    type Item = &'a MessageId;

    fn next(&mut self) -> Option<&'a MessageId> {
        let treap = self.treap;
        let node = treap.node(self.stack.pop()?)?;
        self.descend(node.right);
        Some(&node.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &Pending) -> Vec<String> {
        list.iter().map(|id| id.as_str().to_owned()).collect()
    }

    /// Random splices on both shapes against a plain vector, across the
    /// switch to a treap and back through removals.
    #[test]
    fn splices_match_a_vector_across_shapes() {
        let mut list = Pending::default();
        let mut model: Vec<String> = Vec::new();
        let mut seed = 7u64;
        let mut below = |bound: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % bound as u64) as usize
        };
        for round in 0..3000 {
            let start = below(model.len() + 1);
            let removed = below((model.len() - start).min(3) + 1);
            // Grows for 2000 rounds, then shrinks.
            let count = if round < 2000 { below(6) } else { below(2) };
            let inserted: Vec<String> = (0..count).map(|k| format!("m{round}.{k}")).collect();
            let gone: Vec<String> = model.drain(start..start + removed).collect();
            model.splice(start..start, inserted.iter().cloned());
            let taken = list.remove(start..start + removed);
            let new: Vec<MessageId> = inserted
                .iter()
                .map(|id| MessageId::new(id.as_str()))
                .collect();
            list.insert(start, &new);
            let taken: Vec<String> = taken.iter().map(|id| id.as_str().to_owned()).collect();
            assert_eq!(taken, gone, "round {round}");
            assert_eq!(list.len(), model.len());
            if round % 50 == 0 || round > 2990 {
                assert_eq!(ids(&list), model, "round {round}");
                let at = below(model.len().max(1));
                assert_eq!(
                    list.get(at).map(MessageId::as_str),
                    model.get(at).map(String::as_str)
                );
            }
        }
        assert!(matches!(list.0, Shape::Long(_)), "the list became a treap");
        // Equal by content whatever the shape.
        let mut short = Pending::default();
        let all: Vec<MessageId> = model.iter().map(|id| MessageId::new(id.as_str())).collect();
        short.insert(0, &all[..10]);
        let mut long = list.clone();
        long.remove(10..model.len());
        assert_eq!(short, long);
        assert!(matches!(long.0, Shape::Long(_)) && matches!(short.0, Shape::Short(_)));
    }

    /// Splices at the ends (dsh's appends, prepends and claims) keep a long
    /// list a deque; the first one strictly inside makes it a treap.
    #[test]
    fn only_a_middle_splice_of_a_long_list_makes_a_treap() {
        let mut list = Pending::default();
        for k in 0..500 {
            let id = [MessageId::new(format!("m{k}"))];
            let start = if k % 2 == 0 { 0 } else { list.len() };
            list.insert(start, &id);
        }
        list.remove(0..1);
        list.remove(list.len() - 3..list.len());
        assert!(matches!(list.0, Shape::Short(_)));
        let before = ids(&list);
        list.remove(1..2);
        assert!(matches!(list.0, Shape::Long(_)));
        assert_eq!(ids(&list).len(), before.len() - 1);
        assert_eq!(ids(&list)[1..], before[2..]);
    }
}
