//! Coverage: the distinct abstract states a sweep reached, counted with the
//! model checker's own fingerprint ([`courier_check::fingerprint()`]: the
//! agent plus the checker's ghost, canonical over id renaming), so the two
//! numbers measure the same thing. A free sweep's count has no denominator
//! (its workloads leave every bound the checker explores); a sweep kept
//! inside a bound (`Plan::bound`) is measured against the checker's set at
//! that bound ([`courier_model::reachable_fingerprints`]) as a [`Fraction`].

use std::collections::{BTreeSet, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use courier_check::{Fed, Harness, Hooks, Restarted};

/// The fingerprints are already hashes: store them through an identity
/// hasher (fixed, no process entropy; the set is only ever counted).
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// A set of state fingerprints.
#[derive(Clone)]
pub struct Coverage {
    states: HashSet<u64, BuildHasherDefault<Identity>>,
    /// The latest fingerprint recorded in each slot, chosen by its low
    /// bits: one found here is in `states` already. Most visits revisit a
    /// recent state (every seed starts from the initial one), and a probe
    /// of a set of hundreds of thousands misses the cache (it was 7.6% of
    /// `courier sim --seeds 0..20000`'s time); this table stays in it.
    recent: Box<[u64]>,
}

/// Slots of the recent table: 32 KiB.
const RECENT_SLOTS: usize = 1 << 12;

impl Default for Coverage {
    /// A slot holds only fingerprints whose low bits are its index, so
    /// each starts with a value whose low bits are not: it matches none.
    fn default() -> Self {
        Self {
            states: HashSet::default(),
            recent: (0..RECENT_SLOTS as u64).map(|slot| slot ^ 1).collect(),
        }
    }
}

impl Coverage {
    /// Records the state the harness stands in.
    pub(crate) fn visit(&mut self, harness: &Harness) {
        self.record(harness.fingerprint());
    }

    fn record(&mut self, state: u64) {
        let slot = &mut self.recent[state as usize & (RECENT_SLOTS - 1)];
        if *slot != state {
            *slot = state;
            self.states.insert(state);
        }
    }

    /// Adds another worker's states.
    pub(crate) fn merge(&mut self, other: Coverage) {
        self.states.extend(other.states);
    }

    /// How many distinct states were reached.
    pub fn states(&self) -> usize {
        self.states.len()
    }

    /// These states against `checker`, the model checker's set.
    pub fn against(&self, checker: &BTreeSet<u64>) -> Fraction {
        let inside = self
            .states
            .iter()
            .filter(|state| checker.contains(state))
            .count();
        Fraction {
            reached: self.states(),
            checker: checker.len(),
            inside,
            outside: self.states() - inside,
        }
    }
}

/// A refused input changes nothing, so its state is already counted.
impl Hooks for Coverage {
    fn after(&mut self, harness: &Harness, fed: &Fed) {
        if fed.transition.answer.is_ok() {
            self.visit(harness);
        }
    }

    /// A resumed agent is a state like any other (closers or not).
    fn restarted(&mut self, harness: &Harness, _: &Restarted) {
        self.visit(harness);
    }
}

/// A sweep's states against the model checker's set at the same bound.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Fraction {
    /// Distinct states the sweep reached.
    pub reached: usize,
    /// Distinct states in the checker's set.
    pub checker: usize,
    /// Reached states the checker's set holds.
    pub inside: usize,
    /// Reached states it does not: nonzero only if the sweep left the bound
    /// or the two engines fingerprint a state differently.
    pub outside: usize,
}

impl Fraction {
    /// The percentage of the checker's set the sweep reached.
    pub fn percent(&self) -> f64 {
        100.0 * self.inside as f64 / self.checker.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Agent, Input, Message, Source};

    #[test]
    fn a_state_counts_once_and_a_new_one_adds_one() {
        let mut coverage = Coverage::default();
        let mut harness = Harness::new(Agent::new());
        coverage.visit(&harness);
        coverage.visit(&harness);
        assert_eq!(coverage.states(), 1);
        let send = Input::inject(Message::text("A", Source::user()));
        let fed = harness.feed_with(send.clone(), &mut coverage);
        assert_eq!(fed.violation, None);
        assert_eq!(coverage.states(), 2);
        let refused = harness.feed_with(send, &mut coverage);
        assert!(refused.transition.answer.is_err(), "A is pending");
        assert_eq!(coverage.states(), 2, "a refusal is no new state");
        let mut other = Coverage::default();
        other.visit(&Harness::new(Agent::new()));
        coverage.merge(other);
        assert_eq!(coverage.states(), 2);
    }

    #[test]
    fn a_state_evicted_from_the_recent_table_still_counts_once() {
        let mut coverage = Coverage::default();
        let state = 5 << 40 | 7;
        let same_slot = state + RECENT_SLOTS as u64;
        // Each slot's starting value, and 0, are fingerprints like others.
        for fingerprint in [state, same_slot, state, 7 ^ 1, 0, 1, same_slot, 0] {
            coverage.record(fingerprint);
        }
        assert_eq!(coverage.states(), 5);
        assert_eq!(
            coverage.states.iter().copied().collect::<BTreeSet<u64>>(),
            BTreeSet::from([state, same_slot, 7 ^ 1, 0, 1])
        );
    }

    #[test]
    fn a_fraction_counts_states_inside_and_outside_the_checkers_set() {
        let mut coverage = Coverage::default();
        let harness = Harness::new(Agent::new());
        coverage.visit(&harness);
        let initial = harness.fingerprint();
        let set = BTreeSet::from([initial, initial ^ 1, initial ^ 2, initial ^ 3]);
        let fraction = coverage.against(&set);
        assert_eq!(
            fraction,
            Fraction {
                reached: 1,
                checker: 4,
                inside: 1,
                outside: 0
            }
        );
        assert_eq!(fraction.percent(), 25.0);
        let other = coverage.against(&BTreeSet::from([initial ^ 1]));
        assert_eq!((other.inside, other.outside), (0, 1));
    }
}
