//! A seed's workload kept inside a model-checker bound, so the states it
//! reaches can be counted as a fraction of the checker's set at that bound
//! (`courier sim --coverage-bound`).
//!
//! The free [`crate::Generator`] leaves every bound the checker explores: it
//! appends and splices, re-sends pool ids, enters arbitrary batches and
//! builds messages the model never builds, so its states are not comparable
//! with the checker's. This workload draws only the actions the model's own
//! [`Space`] enables, turns them into inputs with the same `Space` (ids `A`,
//! `B`, ... in insertion order, the model's message shape) and spends the
//! model's budget by the model's rule ([`Spent::spend`]). What stays the
//! simulator's own is the choice among them: the seed's swarm weights pick
//! the kind of input (by the free generator's table), then the outcome.

use courier_core::{Agent, Input, StepOutcome};
use courier_model::{Action, Decision, Space, Spent};

use crate::generate::{Kind, KindTable};
use crate::prng::Prng;
use crate::run::Workload;
use crate::swarm::Swarm;

/// One seed's stream of in-bound inputs.
pub(crate) struct Bounded {
    prng: Prng,
    swarm: Swarm,
    kinds: KindTable,
    space: Space,
    spent: Spent,
    /// The actions enabled now (reused between draws).
    enabled: Vec<Action>,
    /// The action behind the last input drawn, charged once it is accepted.
    drawn: Option<Action>,
}

impl Bounded {
    /// The stream drawn from `prng` under `swarm`, inside `space`.
    pub(crate) fn new(prng: Prng, swarm: Swarm, space: Space) -> Self {
        Self {
            prng,
            swarm,
            kinds: KindTable::new(&swarm),
            space,
            spent: Spent::default(),
            enabled: Vec::new(),
            drawn: None,
        }
    }

    /// The weight of `action` among the enabled actions of its kind: the
    /// swarm's keep-inbox rate and completion mixes, else uniform.
    fn weight_within(&self, action: Action) -> u32 {
        let (pre_step, step) = (&self.swarm.pre_step, &self.swarm.step);
        match action {
            Action::Cancel { keep_inbox: true } => self.swarm.keep_inbox_percent,
            Action::Cancel { keep_inbox: false } => 100 - self.swarm.keep_inbox_percent,
            Action::PreStep(Decision::Pass) => pre_step.pass,
            Action::PreStep(Decision::Reject) => pre_step.reject,
            Action::PreStep(Decision::Fail) => pre_step.fail,
            // Each way the model enters a batch stands for the free
            // generator's `enter`.
            Action::PreStep(
                Decision::Drop | Decision::Add | Decision::Reorder | Decision::EnterPending,
            ) => pre_step.enter,
            Action::Step(StepOutcome::Completed) => step.completed,
            Action::Step(StepOutcome::MaxTokens) => step.max_tokens,
            Action::Step(StepOutcome::ToolCalls) => step.tool_calls,
            Action::Step(StepOutcome::Fail) => step.fail,
            // One of a kind: the kind's weight alone decides.
            Action::Send(..)
            | Action::Prepend(_)
            | Action::Replace(_)
            | Action::Remove(_)
            | Action::Dispose
            | Action::WhenIdle => 1,
        }
    }
}

impl Workload for Bounded {
    /// An action the space enables, of a kind the swarm draws; `None` when
    /// there is none (the safety phase then ends early).
    fn draw(&mut self, agent: &Agent) -> Option<Input> {
        self.enabled.clear();
        self.space.enabled(agent, self.spent, &mut self.enabled);
        let mut kinds = vec![0; self.kinds.kinds().len()];
        for action in &self.enabled {
            let index = self.kinds.index(kind_of(*action));
            kinds[index] = self.kinds.weights()[index];
        }
        let kind = self.prng.pick(&kinds)?;
        let weights: Vec<u32> = self
            .enabled
            .iter()
            .map(|action| {
                let same = self.kinds.index(kind_of(*action)) == kind;
                if same { self.weight_within(*action) } else { 0 }
            })
            .collect();
        let index = self
            .prng
            .pick(&weights)
            .expect("each kind has a weighted action");
        let action = self.enabled[index];
        self.drawn = Some(action);
        Some(self.space.input_for(agent, self.spent, action))
    }

    /// Charges the action drawn as the model does. The model also leaves
    /// uncharged a cancel that changed nothing; charging it here only
    /// disables actions sooner, so the run still stays inside the
    /// checker's set (telling such a cancel apart would cost a state
    /// comparison per cancel, for under a point more coverage at 2 to 4
    /// messages, measured).
    fn accepted(&mut self) {
        if let Some(action) = self.drawn.take() {
            self.spent.spend(action);
        }
    }
}

/// The free generator's kind for `action`.
fn kind_of(action: Action) -> Kind {
    match action {
        Action::Send(target, wakeup) => Kind::Send(target, wakeup),
        Action::Prepend(_) => Kind::Prepend,
        Action::Replace(_) => Kind::Replace,
        Action::Remove(_) => Kind::Remove,
        Action::Cancel { .. } => Kind::Cancel,
        Action::Dispose => Kind::Dispose,
        Action::WhenIdle => Kind::WhenIdle,
        Action::PreStep(_) | Action::Step(_) => Kind::Completion,
    }
}
