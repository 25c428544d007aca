//! The abstract states the checker reaches at a bound: the set the
//! simulator's coverage is measured against (`courier sim --coverage-bound`).
//!
//! A model state is more than its abstract state: it also carries the budget
//! spent, the goal tags and facts, so the model's unique-state count is not
//! the denominator the simulator needs. This walks the model's own space with
//! the deterministic [`breadth_first`] search and keeps each state's
//! [`courier_check::fingerprint()`] of the agent and ghost alone, the very number the
//! simulator records per state.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::ops::ControlFlow;

use crate::search::breadth_first;
use crate::space::Space;

/// The [`courier_check::fingerprint()`] of every state reachable in `space` where every
/// property holds (the simulator stops at a violation, so it never counts a
/// violating state either), without restarts: the bounded workload draws
/// only inputs, so a state only a restart reaches would count against it.
/// Symmetric or not, the set is the same: states merged by renaming share
/// their fingerprint and their successors' ones.
pub fn reachable_fingerprints(space: &Space) -> BTreeSet<u64> {
    let mut reached = BTreeSet::new();
    breadth_first::<Infallible>(&space.without_restarts(), |state, _| {
        if state.violation().is_none() {
            reached.insert(state.fingerprint());
        }
        ControlFlow::Continue(())
    });
    reached
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Bounds;
    use courier_core::Agent;

    fn bounds(messages: u8) -> Bounds {
        Bounds {
            messages,
            ..Bounds::default()
        }
    }

    #[test]
    fn the_set_holds_the_initial_state_and_grows_with_the_bound() {
        let space = |messages| Space::new(bounds(messages), Agent::new(), true);
        let none = reachable_fingerprints(&space(0));
        let one = reachable_fingerprints(&space(1));
        let two = reachable_fingerprints(&space(2));
        let initial = space(0).initial().fingerprint();
        assert!(none.contains(&initial) && two.contains(&initial));
        assert!(none.is_subset(&one) && one.is_subset(&two));
        assert!(none.len() < one.len() && one.len() < two.len());
    }

    /// The symmetry reduction merges renamed states before they are
    /// expanded; were it unsound for this projection, the sets would differ.
    #[test]
    fn symmetry_does_not_change_the_set() {
        let symmetric = Space::new(bounds(2), Agent::new(), true);
        let plain = Space::new(bounds(2), Agent::new(), false);
        assert_eq!(
            reachable_fingerprints(&symmetric),
            reachable_fingerprints(&plain)
        );
    }
}
