//! [`Pending`]: a pending list (the inbox's messages, the checker's ghost
//! ids) whose splice costs O(log n) plus the items it moves, wherever it
//! lands.
//!
//! A list is a `VecDeque` (what the model checker clones millions of
//! times: one allocation, no tree) until a splice lands strictly inside it
//! while it is longer than [`Pending::LONG_FROM`] items; then it becomes an
//! implicit treap in an arena, so a log that inserts or removes in the
//! middle of a long list over and over stays linear, while one that only
//! appends, prepends and claims from the front keeps the deque's O(1) ends.
//! `imbl`'s RRB vector was measured first and rejected: repeated split and
//! append at the middle of one vector fragment its leaves (milliseconds
//! per splice past 100,000 splices, 1.6 GB at 350,000; BENCHMARKS.md).
//!
//! Finding an item by its key ([`Pending::locate`]: a `remove`, a `replace`,
//! a refused duplicate) scans a list of at most [`Pending::LONG_FROM`]
//! items; a longer one becomes a treap whose nodes are indexed by their
//! key's hash and linked to their parents, so the item's position is a walk
//! up the tree, O(log n) expected (a scan per input made 100,000 removes
//! from the end of a deque quadratic: 56 s). The index is built only by the
//! first such lookup: the claim cycle and the model checker, whose lists
//! are short or only spliced at their ends, never pay for it. (A map from
//! id to position beside the deque was the alternative: every splice
//! shifts the positions after it, and keeping the map at all would cost
//! the claim cycle a map update per message.)

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Range;

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::hashing::mix;
use crate::message::{Message, MessageId};

/// An item a list can find by its key: a message by its id.
pub trait Keyed {
    /// What names an item; equal keys name the same item.
    type Key: Eq + Hash + ?Sized;

    /// This item's key.
    fn key(&self) -> &Self::Key;
}

impl Keyed for Message {
    type Key = MessageId;

    #[inline]
    fn key(&self) -> &MessageId {
        self.id()
    }
}

/// The checker's ghost lists hold bare ids.
impl Keyed for MessageId {
    type Key = MessageId;

    #[inline]
    fn key(&self) -> &MessageId {
        self
    }
}

/// How many items key lookups on this thread have visited (compared in a
/// scan, or walked through in a treap's chain and up to its root): debug
/// builds count them so a test can bound a lookup's work without timing it
/// (`tests/linear_inbox.rs`); release builds keep no count.
#[cfg(debug_assertions)]
pub fn lookup_visits() -> u64 {
    VISITS.with(std::cell::Cell::get)
}

#[cfg(debug_assertions)]
thread_local! {
    static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Adds `count` to [`lookup_visits`]; nothing in a release build.
#[inline(always)]
fn visited(count: usize) {
    #[cfg(debug_assertions)]
    VISITS.with(|visits| visits.set(visits.get() + count as u64));
    #[cfg(not(debug_assertions))]
    let _ = count;
}

/// The first of `items` whose key is `key`, with its position: the one
/// scan by key, counted in [`lookup_visits`]. Callers scan only short
/// lists (at most [`Pending::LONG_FROM`] items) or lists with no index.
pub(crate) fn scan<'a, T: Keyed + 'a>(
    items: impl IntoIterator<Item = &'a T>,
    key: &T::Key,
) -> Option<(usize, &'a T)> {
    let mut compared = 0;
    let found = items.into_iter().enumerate().find(|(_, item)| {
        compared += 1;
        item.key() == key
    });
    visited(compared);
    found
}

/// The hash a treap's key index files `key` under: `rustc-hash`'s fixed
/// hasher, as the inbox's own index (no process entropy in the core).
fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    FxBuildHasher.hash_one(key)
}

/// An ordered list of pending items.
#[derive(Clone, Debug)]
pub struct Pending<T>(Shape<T>);

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self(Shape::Short(VecDeque::new()))
    }
}

#[derive(Clone, Debug)]
enum Shape<T> {
    /// Spliced at its ends and never looked up by key while long, or
    /// short: a middle splice moves at most half of [`Pending::LONG_FROM`]
    /// ids, a lookup compares at most that many.
    Short(VecDeque<T>),
    /// Spliced in the middle, or looked up by key, once long: positions
    /// found and split in O(log n) expected. Boxed, so a `Pending` is no
    /// larger than the deque (the model checker copies its states).
    Long(Box<Treap<T>>),
}

/// Two lists are equal when they hold the same ids in the same order,
/// whatever their shape.
impl<T: PartialEq> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Shape::Short(list), Shape::Short(other)) => list == other,
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }
}

impl<T: Eq> Eq for Pending<T> {}

/// Hashed as a `VecDeque` is (the length, then the ids), so the model
/// checker's state hashes did not change with the type.
impl<T: Hash> Hash for Pending<T> {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.len().hash(hasher);
        self.iter().for_each(|id| id.hash(hasher));
    }
}

impl<'a, T> IntoIterator for &'a Pending<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    #[inline]
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> Pending<T> {
    /// The length past which a middle splice makes a list a treap:
    /// below it the splice moves at most 64 ids, about what a treap's
    /// descent costs.
    pub const LONG_FROM: usize = 128;

    /// How many items are pending.
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

    /// The item at `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        match &self.0 {
            Shape::Short(list) => list.get(index),
            Shape::Long(treap) => treap.get(index),
        }
    }

    /// The first item.
    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// The items in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_, T> {
        Iter(match &self.0 {
            Shape::Short(list) => IterShape::Short(list.iter()),
            Shape::Long(treap) => IterShape::Long(treap.iter()),
        })
    }

    /// The items in order as a deque's two slices, while the list is one
    /// (`None` once it is a treap): a comparison of two short lists then
    /// runs over slices instead of stepping two iterators of either shape.
    #[inline]
    pub fn as_slices(&self) -> Option<(&[T], &[T])> {
        match &self.0 {
            Shape::Short(list) => Some(list.as_slices()),
            Shape::Long(_) => None,
        }
    }

    /// The items in `range` (clamped to the list), in order: found in
    /// O(log n) in a treap, not by walking from the front.
    pub fn range(&self, range: Range<usize>) -> std::iter::Take<Iter<'_, T>> {
        let start = range.start.min(self.len());
        let shape = match &self.0 {
            Shape::Short(list) => IterShape::Short(list.range(start..)),
            Shape::Long(treap) => IterShape::Long(treap.iter_from(start)),
        };
        Iter(shape).take(range.len())
    }

    /// Empties the list.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

impl<T: Keyed> Pending<T> {
    /// The position of the first item whose key is `key`, if any: a scan
    /// of a list of at most [`Pending::LONG_FROM`] items; in a longer one
    /// O(log n) expected through the treap's key index, which the first
    /// lookup builds (making the list a treap if it was a deque). The
    /// items, their order and so equality and hashing do not change.
    pub fn locate(&mut self, key: &T::Key) -> Option<usize> {
        match &mut self.0 {
            Shape::Short(list) if list.len() > Self::LONG_FROM => {
                let mut treap = Treap::from_items(std::mem::take(list));
                treap.build_index();
                self.0 = Shape::Long(Box::new(treap));
            }
            Shape::Short(_) => {}
            Shape::Long(treap) => treap.build_index(),
        }
        self.position(key)
    }

    /// [`Pending::locate`] without changing the list: through the key index
    /// if a lookup built it, else a scan.
    pub fn position(&self, key: &T::Key) -> Option<usize> {
        match &self.0 {
            Shape::Long(treap) if treap.index.is_some() => treap.position(key),
            Shape::Short(_) | Shape::Long(_) => scan(self, key).map(|(at, _)| at),
        }
    }

    /// Adds `item` at the end: O(1) amortized in either shape's deque,
    /// O(log n) in a treap.
    #[inline]
    pub fn push_back(&mut self, item: T) {
        match &mut self.0 {
            Shape::Short(list) => list.push_back(item),
            Shape::Long(treap) => {
                let end = treap.len();
                treap.insert(end, [item]);
            }
        }
    }

    /// Removes the items in `range` (within the list), in order. A treap
    /// left empty (a claim took everything) is a deque again, so the claim
    /// cycle gets its O(1) ends back after one lookup made the list a tree.
    ///
    /// Panics if `range` is not within the list, as `VecDeque::drain`
    /// does: callers check a splice's bounds first (the core normalizes
    /// it, and `History` reports `splice-normalized` for a log's).
    pub fn remove(&mut self, range: Range<usize>) -> Vec<T> {
        self.fit(range.start, range.end);
        match &mut self.0 {
            Shape::Short(list) => list.drain(range).collect(),
            Shape::Long(treap) => {
                let removed = treap.remove(range);
                if treap.len() == 0 {
                    self.clear();
                }
                removed
            }
        }
    }

    /// Becomes a treap before a splice of `start..end` (the ids it
    /// removes) that touches neither end of a list longer than
    /// [`Pending::LONG_FROM`]: there a `VecDeque` moves up to half the
    /// list, while at its ends (dsh appends, prepends and claims from the
    /// front) it costs nothing per id already pending. Back to a deque only
    /// once empty ([`Pending::remove`]), so each conversion's O(n) follows
    /// more than `LONG_FROM` insertions: amortized O(1) per id.
    fn fit(&mut self, start: usize, end: usize) {
        if let Shape::Short(list) = &mut self.0
            && list.len() > Self::LONG_FROM
            && start > 0
            && end < list.len()
        {
            let items = std::mem::take(list);
            self.0 = Shape::Long(Box::new(Treap::from_items(items)));
        }
    }

    /// Inserts `items` before position `start` (at most the length).
    ///
    /// Panics if `start` is past the end, as `VecDeque::split_off` does;
    /// callers check it first, as for [`Pending::remove`].
    pub fn insert(&mut self, start: usize, items: impl IntoIterator<Item = T>) {
        self.fit(start, start);
        match &mut self.0 {
            Shape::Short(list) if start == list.len() => list.extend(items),
            Shape::Short(list) if start <= list.len() - start => {
                // Move the shorter side once: the front here.
                let mut front: Vec<T> = list.drain(..start).collect();
                front.extend(items);
                for item in front.into_iter().rev() {
                    list.push_front(item);
                }
            }
            Shape::Short(list) => {
                let mut back = list.split_off(start);
                list.extend(items);
                list.append(&mut back);
            }
            Shape::Long(treap) => treap.insert(start, items),
        }
    }
}

/// The items of a [`Pending`] in order.
pub struct Iter<'a, T>(IterShape<'a, T>);

enum IterShape<'a, T> {
    Short(std::collections::vec_deque::Iter<'a, T>),
    Long(TreapIter<'a, T>),
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        match &mut self.0 {
            IterShape::Short(iter) => iter.next(),
            IterShape::Long(iter) => iter.next(),
        }
    }

    /// Picks the shape once, not per item (`for_each`, `count` and a hash
    /// of the whole list go through here).
    #[inline]
    fn fold<B, F: FnMut(B, &'a T) -> B>(self, init: B, f: F) -> B {
        match self.0 {
            IterShape::Short(iter) => iter.fold(init, f),
            IterShape::Long(iter) => iter.fold(init, f),
        }
    }
}

/// No node: an empty subtree.
const NIL: usize = usize::MAX;

/// One item of a [`Treap`], with its subtree.
#[derive(Clone, Debug)]
struct Node<T> {
    /// `None` only in a freed slot: a removal moves the item out.
    item: Option<T>,
    /// Heap order: a parent's priority is at least its children's.
    priority: u64,
    /// Ids in this subtree.
    size: usize,
    left: usize,
    right: usize,
    /// [`NIL`] at the root: a node's position is a walk up to it.
    parent: usize,
    /// The neighbours in this node's chain of the key index (the nodes
    /// whose keys have one hash); unused while the treap has no index.
    twins: Twins,
}

/// The nodes before and after one node in its chain of a treap's key
/// index ([`NIL`] at the chain's ends).
#[derive(Clone, Copy, Debug)]
struct Twins {
    before: usize,
    after: usize,
}

impl Twins {
    /// Alone in its chain, or not indexed.
    const NONE: Self = Self {
        before: NIL,
        after: NIL,
    };
}

/// A treap's key index: each key hash's first node in its chain.
type KeyIndex = FxHashMap<u64, usize>;

/// An implicit treap: a binary tree in list order, heap-ordered by
/// pseudo-random priorities, so its depth is O(log n) expected; a position
/// is found by subtree sizes. Nodes live in one arena (cloned with one
/// copy); freed slots are reused. The priorities come from a fixed-seed
/// generator, so the same log builds the same tree on every run, and they
/// do not depend on the ids, so a log cannot unbalance it.
#[derive(Clone, Debug)]
struct Treap<T> {
    nodes: Vec<Node<T>>,
    free: Vec<usize>,
    root: usize,
    /// The priority generator's state (splitmix64).
    seed: u64,
    /// The key index, once a lookup by key built it: each key hash's first
    /// node; the others with that hash follow through [`Node::twins`], so
    /// a collision costs a comparison of keys, never a wrong answer.
    index: Option<KeyIndex>,
}

impl<T> Treap<T> {
    fn from_items(items: impl IntoIterator<Item = T>) -> Self
    where
        T: Keyed,
    {
        let mut treap = Self {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            seed: 0,
            index: None,
        };
        treap.insert(0, items);
        treap
    }

    fn len(&self) -> usize {
        self.size(self.root)
    }

    fn size(&self, node: usize) -> usize {
        self.node(node).map_or(0, |node| node.size)
    }

    fn node(&self, node: usize) -> Option<&Node<T>> {
        self.nodes.get(node)
    }

    fn at(&mut self, node: usize) -> &mut Node<T> {
        &mut self.nodes[node]
    }

    fn get(&self, mut index: usize) -> Option<&T> {
        let mut node = self.node(self.root)?;
        loop {
            let left = self.size(node.left);
            if index < left {
                node = self.node(node.left)?;
            } else if index == left {
                return node.item.as_ref();
            } else {
                index -= left + 1;
                node = self.node(node.right)?;
            }
        }
    }

    fn iter(&self) -> TreapIter<'_, T> {
        self.iter_from(0)
    }

    /// The items from position `index` on: the stack holds the nodes at and
    /// after it on the path down to it.
    fn iter_from(&self, mut index: usize) -> TreapIter<'_, T> {
        let mut stack = Vec::new();
        let mut node = self.root;
        while let Some(visited) = self.node(node) {
            let left = self.size(visited.left);
            if index <= left {
                stack.push(node);
                if index == left {
                    break;
                }
                node = visited.left;
            } else {
                index -= left + 1;
                node = visited.right;
            }
        }
        TreapIter { treap: self, stack }
    }

    /// The next priority of the splitmix64 stream from `seed`
    /// ([`mix`] of the state, then the state steps).
    fn priority(&mut self) -> u64 {
        let priority = mix(self.seed);
        self.seed = self.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        priority
    }

    fn new_node(&mut self, item: T) -> usize {
        let node = Node {
            item: Some(item),
            priority: self.priority(),
            size: 1,
            left: NIL,
            right: NIL,
            parent: NIL,
            twins: Twins::NONE,
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

    /// Recomputes `node`'s size after a change of its children, and makes
    /// it their parent.
    fn update(&mut self, node: usize) {
        let (left, right) = (self.at(node).left, self.at(node).right);
        let size = self.size(left) + 1 + self.size(right);
        self.at(node).size = size;
        for child in [left, right] {
            if let Some(child) = self.nodes.get_mut(child) {
                child.parent = node;
            }
        }
    }

    /// Makes `root` the tree's root, with no parent.
    fn set_root(&mut self, root: usize) {
        self.root = root;
        if let Some(node) = self.nodes.get_mut(root) {
            node.parent = NIL;
        }
    }

    /// `node`'s position: its left subtree, plus, on the walk up, every
    /// ancestor it lies right of and that ancestor's left subtree.
    fn rank(&self, node: usize) -> usize {
        let mut rank = self.size(self.nodes[node].left);
        let mut child = node;
        let mut depth = 0;
        while let Some(parent) = self.node(self.nodes[child].parent) {
            if parent.right == child {
                rank += self.size(parent.left) + 1;
            }
            child = self.nodes[child].parent;
            depth += 1;
        }
        visited(depth);
        rank
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
}

impl<T: Keyed> Treap<T> {
    fn insert(&mut self, start: usize, items: impl IntoIterator<Item = T>) {
        let mut run = NIL;
        for item in items {
            let node = self.new_node(item);
            self.link(node);
            run = self.merge(run, node);
        }
        let (first, rest) = self.split(self.root, start);
        let first = self.merge(first, run);
        let root = self.merge(first, rest);
        self.set_root(root);
    }

    fn remove(&mut self, range: Range<usize>) -> Vec<T> {
        let (first, rest) = self.split(self.root, range.start);
        let (taken, last) = self.split(rest, range.len());
        let root = self.merge(first, last);
        self.set_root(root);
        // The taken subtree's slots in list order; each item leaves the
        // index, moves out, and its slot is freed for reuse.
        let mut order = Vec::with_capacity(range.len());
        let mut stack = Vec::new();
        let mut node = taken;
        loop {
            while let Some(visited) = self.node(node) {
                stack.push(node);
                node = visited.left;
            }
            let Some(top) = stack.pop() else { break };
            order.push(top);
            node = self.nodes[top].right;
        }
        for &slot in &order {
            self.unlink(slot);
        }
        self.free.extend(&order);
        order
            .into_iter()
            .filter_map(|slot| self.nodes[slot].item.take())
            .collect()
    }

    /// Builds the key index, unless it is built: every live node, once.
    fn build_index(&mut self) {
        if self.index.is_some() {
            return;
        }
        self.index = Some(FxHashMap::default());
        for node in 0..self.nodes.len() {
            self.link(node);
        }
    }

    /// The arena, the index and `node`'s hash, if the index is built and
    /// `node` holds an item: what [`Treap::link`] and [`Treap::unlink`]
    /// change.
    fn chain_of(&mut self, node: usize) -> Option<(&mut Vec<Node<T>>, &mut KeyIndex, u64)> {
        let Self {
            nodes,
            index: Some(index),
            ..
        } = self
        else {
            return None;
        };
        let hash = key_hash(nodes[node].item.as_ref()?.key());
        Some((nodes, index, hash))
    }

    /// Files a live `node` first in its hash's chain, if the index is built.
    fn link(&mut self, node: usize) {
        let Some((nodes, index, hash)) = self.chain_of(node) else {
            return;
        };
        let after = match index.entry(hash) {
            Entry::Occupied(mut first) => std::mem::replace(first.get_mut(), node),
            Entry::Vacant(first) => {
                first.insert(node);
                NIL
            }
        };
        nodes[node].twins = Twins { before: NIL, after };
        if let Some(next) = nodes.get_mut(after) {
            next.twins.before = node;
        }
    }

    /// Takes a live `node` out of its chain, if the index is built.
    fn unlink(&mut self, node: usize) {
        let Some((nodes, index, hash)) = self.chain_of(node) else {
            return;
        };
        let Twins { before, after } = std::mem::replace(&mut nodes[node].twins, Twins::NONE);
        match nodes.get_mut(before) {
            Some(previous) => previous.twins.after = after,
            None if after == NIL => {
                index.remove(&hash);
            }
            None => {
                index.insert(hash, after);
            }
        }
        if let Some(next) = nodes.get_mut(after) {
            next.twins.before = before;
        }
    }

    /// The first position of `key`, through the index (built): the least
    /// rank among the nodes of its hash's chain whose keys are `key`.
    fn position(&self, key: &T::Key) -> Option<usize> {
        let index = self.index.as_ref()?;
        let mut node = index.get(&key_hash(key)).copied().unwrap_or(NIL);
        let mut first = None;
        while let Some(twin) = self.node(node) {
            visited(1);
            if twin.item.as_ref().is_some_and(|item| item.key() == key) {
                let rank = self.rank(node);
                first = Some(first.map_or(rank, |best: usize| best.min(rank)));
            }
            node = twin.twins.after;
        }
        first
    }
}

/// A [`Treap`]'s items in order: the path of nodes still to visit.
struct TreapIter<'a, T> {
    treap: &'a Treap<T>,
    stack: Vec<usize>,
}

impl<T> TreapIter<'_, T> {
    fn descend(&mut self, mut node: usize) {
        while let Some(visited) = self.treap.node(node) {
            self.stack.push(node);
            node = visited.left;
        }
    }
}

impl<'a, T> Iterator for TreapIter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let treap = self.treap;
        let node = treap.node(self.stack.pop()?)?;
        self.descend(node.right);
        node.item.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MessageId;

    type Pending = super::Pending<MessageId>;

    /// A seeded generator of numbers below a bound (an LCG: tests only).
    fn below_from(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |bound| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % bound as u64) as usize
        }
    }

    fn ids(list: &Pending) -> Vec<String> {
        list.iter().map(|id| id.as_str().to_owned()).collect()
    }

    /// Random splices on both shapes against a plain vector, across the
    /// switch to a treap and back through removals.
    #[test]
    fn splices_match_a_vector_across_shapes() {
        let mut list = Pending::default();
        let mut model: Vec<String> = Vec::new();
        let mut below = below_from(7);
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
            list.insert(start, new);
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
                let end = (at + below(8)).min(model.len());
                let ranged: Vec<&str> = list.range(at..end).map(MessageId::as_str).collect();
                assert_eq!(ranged, model[at.min(end)..end], "round {round}");
                // A fold (one shape dispatch) and a deque's slices see the
                // same items in the same order.
                let folded = list.iter().fold(Vec::new(), |mut all, id| {
                    all.push(id.as_str());
                    all
                });
                assert_eq!(folded, model, "round {round}");
                match list.as_slices() {
                    Some((front, back)) => {
                        assert!(matches!(list.0, Shape::Short(_)));
                        let joined: Vec<&str> =
                            front.iter().chain(back).map(MessageId::as_str).collect();
                        assert_eq!(joined, model, "round {round}");
                    }
                    None => assert!(matches!(list.0, Shape::Long(_))),
                }
            }
        }
        assert!(matches!(list.0, Shape::Long(_)), "the list became a treap");
        // Equal by content whatever the shape.
        let mut short = Pending::default();
        let all: Vec<MessageId> = model.iter().map(|id| MessageId::new(id.as_str())).collect();
        short.insert(0, all[..10].iter().cloned());
        let mut long = list.clone();
        long.remove(10..model.len());
        assert_eq!(short, long);
        assert!(matches!(long.0, Shape::Long(_)) && matches!(short.0, Shape::Short(_)));
    }

    /// Lookups by key after random splices, in every shape (a short deque,
    /// a long one a lookup turns into an indexed treap, a treap a middle
    /// splice made and a lookup indexes), match a scan of a vector: every
    /// pending id at its position, and absent ids nowhere.
    #[test]
    fn lookups_by_key_match_a_scan_across_shapes() {
        let mut below = below_from(11);
        // Two lists: one looked up from the start (so indexed as soon as it
        // is long), one only once it is long and middle-spliced.
        let mut early = Pending::default();
        let mut late = Pending::default();
        let mut model: Vec<String> = Vec::new();
        let mut next = 0;
        for round in 0..2500 {
            // Mostly end splices for 600 rounds (the deque stays a deque
            // past LONG_FROM), then anywhere; grows, then shrinks.
            let anywhere = round >= 600;
            let start = match below(3) {
                0 => 0,
                1 => model.len(),
                _ if anywhere => below(model.len() + 1),
                _ => model.len(),
            };
            let removed = below((model.len() - start).min(2) + 1);
            let count = if round < 1800 { below(4) } else { below(2) };
            let inserted: Vec<String> = (next..next + count).map(|k| format!("m{k}")).collect();
            next += count;
            model.splice(start..start + removed, inserted.iter().cloned());
            for list in [&mut early, &mut late] {
                list.remove(start..start + removed);
                list.insert(start, inserted.iter().map(|id| MessageId::new(id.as_str())));
            }
            let probe = below(next.max(1));
            let id = MessageId::new(format!("m{probe}"));
            let expected = model.iter().position(|listed| listed == id.as_str());
            assert_eq!(early.locate(&id), expected, "round {round}");
            assert_eq!(late.position(&id), expected, "round {round}");
            if round == 1200 {
                assert!(matches!(&late.0, Shape::Long(treap) if treap.index.is_none()));
            }
            if round % 100 == 99 {
                for (at, listed) in model.iter().enumerate() {
                    let id = MessageId::new(listed.as_str());
                    assert_eq!(early.locate(&id), Some(at), "round {round}");
                    assert_eq!(early.position(&id), Some(at), "round {round}");
                    // `late` is looked up only by scans until round 1200.
                    let found = if round < 1200 {
                        late.position(&id)
                    } else {
                        late.locate(&id)
                    };
                    assert_eq!(found, Some(at), "round {round}");
                }
                assert_eq!(ids(&early), model, "round {round}");
                assert_eq!(early, late);
            }
        }
        for list in [&early, &late] {
            assert!(matches!(&list.0, Shape::Long(treap) if treap.index.is_some()));
        }
    }

    /// A long deque spliced only at its ends becomes an indexed treap at
    /// its first lookup, with the same items in the same order; a short one
    /// stays a deque.
    #[test]
    fn a_lookup_indexes_a_long_list_only() {
        let mut list = Pending::default();
        let all: Vec<MessageId> = (0..300).map(|k| MessageId::new(format!("m{k}"))).collect();
        list.insert(0, all[..Pending::LONG_FROM].iter().cloned());
        assert_eq!(list.locate(&all[5]), Some(5));
        assert!(matches!(list.0, Shape::Short(_)));
        list.insert(list.len(), all[Pending::LONG_FROM..].iter().cloned());
        let before = list.clone();
        assert_eq!(list.locate(&all[299]), Some(299));
        assert!(matches!(&list.0, Shape::Long(treap) if treap.index.is_some()));
        assert_eq!(list, before);
        assert_eq!(list.locate(&MessageId::new("absent")), None);
        // Removed ids leave the index; inserted ones join it.
        list.remove(0..10);
        list.insert(100, [MessageId::new("new")]);
        assert_eq!(list.locate(&all[5]), None);
        assert_eq!(list.locate(&all[10]), Some(0));
        assert_eq!(list.locate(&MessageId::new("new")), Some(100));
        assert_eq!(list.locate(&all[299]), Some(290));
        // Emptied (a claim of everything), it is a deque again.
        list.remove(0..list.len());
        assert!(matches!(list.0, Shape::Short(_)) && list.is_empty());
    }

    /// An item whose key's hash the test controls: keys that share a hash
    /// (`hash % 3`, so most do), and keys that repeat.
    #[derive(Clone, Debug, PartialEq)]
    struct Colliding {
        key: Bucketed,
        serial: usize,
    }

    /// A key hashed by its bucket only.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Bucketed(usize);

    impl Hash for Bucketed {
        fn hash<H: Hasher>(&self, hasher: &mut H) {
            (self.0 % 3).hash(hasher);
        }
    }

    impl Keyed for Colliding {
        type Key = Bucketed;

        fn key(&self) -> &Bucketed {
            &self.key
        }
    }

    /// With hashes that collide and keys that repeat, a lookup still finds
    /// the first item with exactly that key, as a scan does.
    #[test]
    fn colliding_hashes_and_repeated_keys_still_find_the_first_item() {
        let mut list = super::Pending::<Colliding>::default();
        let mut model: Vec<Colliding> = Vec::new();
        let mut below = below_from(3);
        for round in 0..1500 {
            let start = below(model.len() + 1);
            let removed = below((model.len() - start).min(2) + 1);
            let count = if round < 1000 { below(4) } else { below(2) };
            let inserted: Vec<Colliding> = (0..count)
                .map(|k| Colliding {
                    key: Bucketed(below(200)),
                    serial: round * 4 + k,
                })
                .collect();
            model.splice(start..start + removed, inserted.iter().cloned());
            list.remove(start..start + removed);
            list.insert(start, inserted);
            let key = Bucketed(below(200));
            let expected = model.iter().position(|item| item.key == key);
            assert_eq!(list.locate(&key), expected, "round {round}");
        }
        assert!(matches!(&list.0, Shape::Long(treap) if treap.index.is_some()));
        assert!(list.iter().eq(model.iter()));
    }

    /// Splices at the ends (dsh's appends, prepends and claims) keep a long
    /// list a deque; the first one strictly inside makes it a treap.
    #[test]
    fn only_a_middle_splice_of_a_long_list_makes_a_treap() {
        let mut list = Pending::default();
        for k in 0..500 {
            let id = [MessageId::new(format!("m{k}"))];
            let start = if k % 2 == 0 { 0 } else { list.len() };
            list.insert(start, id);
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
