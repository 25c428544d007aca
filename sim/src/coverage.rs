//! Coverage: the distinct abstract states a sweep reached, counted with the
//! model checker's own fingerprint ([`courier_model::fingerprint`]: the
//! agent plus the checker's ghost, canonical over id renaming), so the two
//! numbers measure the same thing. Only the count is reported: the fraction
//! of the model checker's state set would need that set (the model exposes
//! counts only) and the same bound (its runs bound messages and depth, the
//! simulator's bound run length and an id pool).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use courier_core::Agent;
use courier_model::{Checker, fingerprint};

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
#[derive(Default, Clone)]
pub struct Coverage(HashSet<u64, BuildHasherDefault<Identity>>);

impl Coverage {
    /// Records the state `(agent, checker)`.
    pub fn visit(&mut self, agent: &Agent, checker: &Checker) {
        self.0.insert(fingerprint(agent, checker));
    }

    /// Adds another worker's states.
    pub fn merge(&mut self, other: Coverage) {
        self.0.extend(other.0);
    }

    /// How many distinct states were reached.
    pub fn states(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Input, Message, Source};

    #[test]
    fn a_state_counts_once_and_a_new_one_adds_one() {
        let mut coverage = Coverage::default();
        let mut agent = Agent::new();
        let mut checker = Checker::new();
        coverage.visit(&agent, &checker);
        coverage.visit(&agent, &checker);
        assert_eq!(coverage.states(), 1);
        let send = Input::inject(Message::text("A", Source::user()));
        checker.step(&mut agent, send).expect("holds");
        coverage.visit(&agent, &checker);
        assert_eq!(coverage.states(), 2);
        let mut other = Coverage::default();
        other.visit(&Agent::new(), &Checker::new());
        coverage.merge(other);
        assert_eq!(coverage.states(), 2);
    }
}
