//! The shortest counterexample: a breadth-first search by depth over the
//! same space and the same canonical state hash, single-threaded and in a
//! fixed action order, so the path (and the property it breaks) is the same
//! on every run. stateright's own paths are neither minimal nor stable
//! across threads; it proves a violation exists, this finds the shortest.
//! The same walk enumerates the checker's abstract states for the
//! simulator's coverage ([`crate::reachable_fingerprints`]).

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::ops::ControlFlow;

use courier_core::Agent;
use courier_core::Stimulus;
use courier_core::transcript::{Runner, inbox_lines, record};

use crate::space::{Move, Space, State};
use courier_check::Violation;

/// A shortest path to a broken property.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Counterexample {
    /// The inputs and restarts from a fresh agent, in order (a crash in
    /// the middle of a transition is its input, then a restart losing the
    /// writes the crash cut).
    pub trace: Vec<Stimulus>,
    /// What the last input broke.
    pub violation: Violation,
}

impl Counterexample {
    /// The path as a transcript (SPEC §9) of `agent`, which must be a fresh
    /// agent of the variant explored, headed by the violation as comments.
    pub fn transcript(&self, agent: &Agent) -> String {
        let detail = self.violation.detail.replace('\n', " ");
        let header = format!(
            "# courier check counterexample: violation: {}\n# {detail}\n\n",
            self.violation.property
        );
        let mut text = header + &record(agent, &self.trace);
        // A restart prints only closers: what it got wrong may show only in
        // the inbox it resumed, so the transcript asks for it.
        if let Some(Stimulus::Restart { .. }) = self.trace.last() {
            let mut runner = Runner::new(agent.clone());
            for stimulus in &self.trace {
                runner.apply(stimulus.clone());
            }
            text.push_str("inbox\n----\n");
            for line in inbox_lines(runner.agent()) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    }
}

/// One reached state: its parent's index and the move that led here.
struct Node {
    parent: usize,
    action: Option<Move>,
}

/// Fingerprints are already hashes: the set need not hash them again.
type Seen = HashSet<u64, BuildHasherDefault<DefaultHasher>>;

/// The shortest path in `space` to a state that breaks a property, if any.
/// Visits every state up to that depth (all of them when there is none).
pub fn shortest_counterexample(space: &Space) -> Option<Counterexample> {
    let mut nodes = Vec::new();
    breadth_first(space, |state, step| {
        let (parent, action) = step.map_or((0, None), |(parent, action)| (parent, Some(action)));
        nodes.push(Node { parent, action });
        match state.violation() {
            Some(violation) => ControlFlow::Break(Counterexample {
                trace: trace(space, &path_to(&nodes, nodes.len() - 1)),
                violation: violation.clone(),
            }),
            None => ControlFlow::Continue(()),
        }
    })
}

/// Visits each state of `space` once (by its canonical state hash),
/// breadth-first in the fixed action order, so every run visits the same
/// states in the same order. `reached` hears each new state, numbered from 0
/// in visiting order, with its parent's number and the action that led
/// there (`None` for the initial state), and may stop the search.
pub(crate) fn breadth_first<B>(
    space: &Space,
    mut reached: impl FnMut(&State, Option<(usize, Move)>) -> ControlFlow<B>,
) -> Option<B> {
    let initial = space.initial();
    let mut seen = Seen::default();
    seen.insert(state_hash(&initial));
    if let ControlFlow::Break(found) = reached(&initial, None) {
        return Some(found);
    }
    let mut frontier = VecDeque::from([(initial, 0)]);
    let mut visited = 1;
    let mut actions = Vec::new();
    while let Some((state, index)) = frontier.pop_front() {
        space.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let Some(next) = space.next(&state, action) else {
                continue;
            };
            if !seen.insert(state_hash(&next)) {
                continue;
            }
            if let ControlFlow::Break(found) = reached(&next, Some((index, action))) {
                return Some(found);
            }
            frontier.push_back((next, visited));
            visited += 1;
        }
    }
    None
}

/// The whole model state's hash (budget, tags and goals included): the
/// search's dedup key, not the abstract state's fingerprint.
fn state_hash(state: &State) -> u64 {
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// The moves from the initial state to node `index`.
fn path_to(nodes: &[Node], mut index: usize) -> Vec<Move> {
    let mut path = Vec::new();
    while let Some(action) = nodes[index].action {
        path.push(action);
        index = nodes[index].parent;
    }
    path.reverse();
    path
}

/// Replays `path` to read the stimuli each move stood for.
fn trace(space: &Space, path: &[Move]) -> Vec<Stimulus> {
    let mut state = space.initial();
    let mut trace = Vec::with_capacity(path.len());
    for step in path {
        trace.extend(space.stimuli(&state, *step));
        state = space
            .next(&state, *step)
            .expect("a replayed move leads where it led before");
    }
    trace
}
