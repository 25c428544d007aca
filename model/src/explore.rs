//! The exhaustive check: stateright's multi-threaded depth-first search over
//! [`Space`], then, only if a property broke, [`shortest_counterexample`].
//! The verdict depends on the space alone, never on thread timing: whether
//! any property breaks and which goals are reached are facts of the whole
//! space, and the reported violation is the shortest path's.

use std::thread::sleep;
use std::time::Duration;

use stateright::{Checker as _, HasDiscoveries, Model as _};

use crate::conditions::{NO_VIOLATION, Search};
use crate::search::{Counterexample, shortest_counterexample};
use crate::space::Space;
use crate::vacuity::VacuityGoal;

/// How far a search has come.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Counts {
    /// States generated, counting every revisit.
    pub total: usize,
    /// Distinct states (up to renaming ids, when symmetric).
    pub unique: usize,
    /// The deepest path explored, in inputs.
    pub depth: usize,
}

/// What the check concluded.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// Every property holds and every goal was reached.
    Holds,
    /// Every property holds, but these goals were never reached.
    Vacuous(Vec<VacuityGoal>),
    /// A property broke; the shortest path that breaks one.
    Broken(Counterexample),
}

/// A finished check.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Checked {
    /// The stateright search's counts (it stops at the first violation).
    pub counts: Counts,
    /// The conclusion.
    pub verdict: Verdict,
}

/// How often the caller looks whether the search has finished; a small
/// space finishes in milliseconds, so this bounds the report's wall time.
const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// `progress` hears from a running search every this many polls (100 ms).
const POLLS_PER_PROGRESS: usize = 20;

/// Checks every property over `space` with `threads` workers, calling
/// `progress` now and then while the search runs.
pub fn check(space: Space, threads: usize, mut progress: impl FnMut(Counts)) -> Checked {
    let mut checker = Search::new(space.clone())
        .checker()
        .threads(threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_dfs();
    let handles = checker.handles();
    let mut polls = 0usize;
    while !handles.iter().all(|handle| handle.is_finished()) {
        if polls.is_multiple_of(POLLS_PER_PROGRESS) {
            progress(counts(&checker));
        }
        polls += 1;
        sleep(POLL_INTERVAL);
    }
    for handle in handles {
        handle.join().expect("a checker thread panicked");
    }
    let counts = counts(&checker);
    progress(counts);
    let broken = checker.discoveries().contains_key(NO_VIOLATION);
    let verdict = if broken {
        let shortest = shortest_counterexample(&space);
        Verdict::Broken(shortest.expect("the breadth-first search finds what stateright found"))
    } else {
        let missed: Vec<VacuityGoal> = space
            .goals()
            .filter(|goal| !checker.model().reached(*goal))
            .collect();
        if missed.is_empty() {
            Verdict::Holds
        } else {
            Verdict::Vacuous(missed)
        }
    };
    Checked { counts, verdict }
}

fn counts(checker: &impl stateright::Checker<Search>) -> Counts {
    Counts {
        total: checker.state_count(),
        unique: checker.unique_state_count(),
        depth: checker.max_depth(),
    }
}
