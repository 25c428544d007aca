//! The stateright side of the model. The Explorer's [`Space`] registers one
//! `always` condition per checked property ("no violation of this name") and
//! one `sometimes` per vacuity goal, so a person sees each one's status. The
//! exhaustive check searches [`Search`] instead: one `always` ("no
//! violation"; the counterexample search names the property) and the goals
//! gathered by the model itself, because stateright probes its discovery map
//! once per state per registered property (a ninth of the check's time with
//! 28 of them).

use crate::space::{Move, Space, State};
use crate::vacuity::{Reached, VacuityGoal};
use courier_check::Property;

/// `holds::<P>`: no violation of `Property::ALL[P]` (stateright wants a
/// plain `fn` per property, so the index is a const parameter).
fn holds<const P: usize>(_: &Space, state: &State) -> bool {
    state
        .violation()
        .is_none_or(|violation| violation.property != Property::ALL[P])
}

/// `reached::<G>`: the transition into this state reached `VacuityGoal::ALL[G]`.
fn reached<const G: usize>(_: &Space, state: &State) -> bool {
    state.reached(VacuityGoal::ALL[G])
}

type Condition = fn(&Space, &State) -> bool;

const HOLDS: [Condition; 19] = [
    holds::<0>,
    holds::<1>,
    holds::<2>,
    holds::<3>,
    holds::<4>,
    holds::<5>,
    holds::<6>,
    holds::<7>,
    holds::<8>,
    holds::<9>,
    holds::<10>,
    holds::<11>,
    holds::<12>,
    holds::<13>,
    holds::<14>,
    holds::<15>,
    holds::<16>,
    holds::<17>,
    holds::<18>,
];

const REACHED: [Condition; 10] = [
    reached::<0>,
    reached::<1>,
    reached::<2>,
    reached::<3>,
    reached::<4>,
    reached::<5>,
    reached::<6>,
    reached::<7>,
    reached::<8>,
    reached::<9>,
];

/// Properties only a recorded log can break: goal rounds are read from goal
/// sources, which the model's messages never carry. (`splice-normalized` is
/// checked too: the ghost history applies it to the core's splices.)
pub(crate) const LOG_ONLY: [Property; 1] = [Property::GoalRounds];

// One condition per property and per goal, or `zip` would drop some silently.
const _: () = assert!(HOLDS.len() == Property::ALL.len());
const _: () = assert!(REACHED.len() == VacuityGoal::ALL.len());

/// The properties the model checks, in `Property::ALL` order.
pub fn checked_properties() -> impl Iterator<Item = Property> {
    Property::ALL
        .into_iter()
        .filter(|property| !LOG_ONLY.contains(property))
}

impl stateright::Model for Space {
    type State = State;
    type Action = Move;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Move>) {
        Space::actions(self, state, actions);
    }

    fn next_state(&self, state: &State, action: Move) -> Option<State> {
        self.next(state, action)
    }

    fn format_action(&self, action: &Move) -> String {
        crate::space::view::action(action)
    }

    fn format_step(&self, last_state: &State, action: Move) -> Option<String> {
        crate::space::view::step(self, last_state, action)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        let always = Property::ALL
            .into_iter()
            .zip(HOLDS)
            .filter(|(property, _)| !LOG_ONLY.contains(property))
            .map(|(property, holds)| stateright::Property::always(property.name(), holds));
        let goals: Vec<VacuityGoal> = self.goals().collect();
        let sometimes = VacuityGoal::ALL
            .into_iter()
            .zip(REACHED)
            .filter(|(goal, _)| goals.contains(goal))
            .map(|(goal, reached)| stateright::Property::sometimes(goal.name(), reached));
        always.chain(sometimes).collect()
    }
}

/// The one property the exhaustive check registers.
pub(crate) const NO_VIOLATION: &str = "no violation";

/// The space as the exhaustive check searches it: one `always` for every
/// checked property, and the goals each generated state's incoming
/// transition reached, gathered as it is generated. A state reached twice
/// carries the same goals (they are part of its hash), so the union is the
/// set of goals a `sometimes` per goal would have found, whatever the
/// threads' order.
pub(crate) struct Search {
    space: Space,
    reached: Reached,
}

impl Search {
    pub(crate) fn new(space: Space) -> Self {
        Self {
            space,
            reached: Reached::default(),
        }
    }

    /// Whether some generated state's incoming transition reached `goal`.
    pub(crate) fn reached(&self, goal: VacuityGoal) -> bool {
        self.reached.contains(goal)
    }
}

fn no_violation(_: &Search, state: &State) -> bool {
    state.violation().is_none()
}

impl stateright::Model for Search {
    type State = State;
    type Action = Move;

    fn init_states(&self) -> Vec<State> {
        vec![self.space.initial()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Move>) {
        self.space.actions(state, actions);
    }

    fn next_state(&self, state: &State, action: Move) -> Option<State> {
        let next = self.space.next(state, action)?;
        self.reached.record(next.facts());
        Some(next)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        vec![stateright::Property::always(NO_VIOLATION, no_violation)]
    }
}
