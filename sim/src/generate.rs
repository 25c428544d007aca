//! Draws the next [`Input`] from a seed's stream, looking at the agent only
//! through its public getters (so every drawn input is one a client could
//! send). Completions aim at the point the driver awaits, edits mostly name
//! pending ids, and everything else is drawn blind, so refusals happen too.
//!
//! Messages are built exactly as the transcript parser builds them (text
//! content, `user` or `plugin` source; entered ids as `plugin` messages), so
//! a trace written with `courier_core::transcript::record` replays the same
//! run under `courier run`.

use courier_core::{
    Agent, AwaitPoint, CancelCause, Input, InputKind, Message, PreStepDecision, PreStepKind,
    Source, Status, StepOutcome, Target, Wakeup,
};
use strum::VariantArray;

use crate::prng::{Prng, running_totals};
use crate::swarm::{InputWeights, POOL_SIZE_MAX, PreStepWeights, StepWeights, Swarm};

/// The ids a pool draws from, in order.
const POOL_IDS: [&str; POOL_SIZE_MAX as usize] = ["A", "B", "C", "D", "E", "F", "G", "H"];

thread_local! {
    /// Every pool message with a `user` source, then with a `plugin` source,
    /// built once per thread: a message allocates its JSON content, and
    /// seeds are short enough for that to show.
    static POOL: (Vec<Message>, Vec<Message>) = {
        let build = |kind: &str| -> Vec<Message> {
            POOL_IDS
                .iter()
                .map(|id| Message::text(*id, Source::of_kind(kind)))
                .collect()
        };
        (build("user"), build("plugin"))
    };
}

/// One kind of input the generator draws: a kind of the core's [`Input`],
/// with a send split by its policy and a completion drawn by role.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Send(Target, Wakeup),
    Append,
    Prepend,
    Replace,
    Remove,
    Splice,
    Cancel,
    Dispose,
    WhenIdle,
    /// The completion the driver awaits (a refused one when idle).
    Completion,
    /// A completion for the point the driver does not await (refused).
    StrayCompletion,
}

/// The kinds one kind of the core's input is drawn as, in draw order.
/// Exhaustive over [`InputKind`], so a new input does not compile until the
/// simulator draws it.
fn drawn_as(kind: InputKind) -> &'static [Kind] {
    match kind {
        InputKind::Send => &[
            Kind::Send(Target::NextTurn, Wakeup::Wake),
            Kind::Send(Target::NextStep, Wakeup::Wake),
            Kind::Send(Target::NextStep, Wakeup::NoWake),
            Kind::Send(Target::NextTurn, Wakeup::NoWake),
        ],
        InputKind::Append => &[Kind::Append],
        InputKind::Prepend => &[Kind::Prepend],
        InputKind::Replace => &[Kind::Replace],
        InputKind::Remove => &[Kind::Remove],
        InputKind::Splice => &[Kind::Splice],
        InputKind::Cancel => &[Kind::Cancel],
        InputKind::Dispose => &[Kind::Dispose],
        InputKind::WhenIdle => &[Kind::WhenIdle],
        // A completion is drawn by role; the point the driver awaits makes
        // it a pre-step decision or a step outcome (see `completion`).
        InputKind::PreStep => &[Kind::Completion, Kind::StrayCompletion],
        InputKind::Step => &[],
    }
}

/// The swarm's weight of `kind`.
fn weight(kind: Kind, weights: &InputWeights) -> u32 {
    match kind {
        Kind::Send(Target::NextTurn, Wakeup::Wake) => weights.followup,
        Kind::Send(Target::NextStep, Wakeup::Wake) => weights.steer,
        Kind::Send(Target::NextStep, Wakeup::NoWake) => weights.inject,
        Kind::Send(Target::NextTurn, Wakeup::NoWake) => weights.queue,
        Kind::Append => weights.append,
        Kind::Prepend => weights.prepend,
        Kind::Replace => weights.replace,
        Kind::Remove => weights.remove,
        Kind::Splice => weights.splice,
        Kind::Cancel => weights.cancel,
        Kind::Dispose => weights.dispose,
        Kind::WhenIdle => weights.when_idle,
        Kind::Completion => weights.completion,
        Kind::StrayCompletion => weights.stray_completion,
    }
}

/// The swarm's weight of a kind of pre-step decision; exhaustive, so a new
/// decision does not compile until the simulator weighs it.
fn pre_step_weight(kind: PreStepKind, weights: &PreStepWeights) -> u32 {
    match kind {
        PreStepKind::Pass => weights.pass,
        PreStepKind::Enter => weights.enter,
        PreStepKind::Reject => weights.reject,
        PreStepKind::Fail => weights.fail,
    }
}

/// The swarm's weight of a step outcome; exhaustive, so a new outcome does
/// not compile until the simulator weighs it.
fn step_weight(outcome: StepOutcome, weights: &StepWeights) -> u32 {
    match outcome {
        StepOutcome::Completed => weights.completed,
        StepOutcome::MaxTokens => weights.max_tokens,
        StepOutcome::ToolCalls => weights.tool_calls,
        StepOutcome::Fail => weights.fail,
    }
}

/// Every kind in draw order with the swarm's weight of each (the bounded
/// workload of `--coverage-bound` draws its kinds by the same table).
#[derive(Clone, Debug)]
pub(crate) struct KindTable {
    kinds: Vec<Kind>,
    weights: Vec<u32>,
    /// The running totals of `weights`, for [`Prng::pick_cumulative`].
    totals: Vec<u64>,
}

impl KindTable {
    pub(crate) fn new(swarm: &Swarm) -> Self {
        let kinds: Vec<Kind> = InputKind::VARIANTS
            .iter()
            .flat_map(|kind| drawn_as(*kind))
            .copied()
            .collect();
        let weights: Vec<u32> = kinds.iter().map(|k| weight(*k, &swarm.inputs)).collect();
        let totals = running_totals(&weights);
        Self {
            kinds,
            weights,
            totals,
        }
    }

    /// The kinds, in draw order.
    pub(crate) fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// The weights, one per kind.
    pub(crate) fn weights(&self) -> &[u32] {
        &self.weights
    }

    /// The position of `kind` in draw order.
    pub(crate) fn index(&self, kind: Kind) -> usize {
        self.kinds
            .iter()
            .position(|listed| *listed == kind)
            .expect("every kind is listed")
    }
}

/// A seed's input stream.
pub struct Generator {
    prng: Prng,
    swarm: Swarm,
    kinds: KindTable,
    /// The seed's pool with a `user` source, then with a `plugin` source.
    users: Vec<Message>,
    plugins: Vec<Message>,
}

impl Generator {
    /// The stream of one seed's workload under `swarm`.
    pub fn new(prng: Prng, swarm: Swarm) -> Self {
        let kinds = KindTable::new(&swarm);
        let size = swarm.pool_size as usize;
        let (users, plugins) =
            POOL.with(|(users, plugins)| (users[..size].to_vec(), plugins[..size].to_vec()));
        Self {
            prng,
            swarm,
            kinds,
            users,
            plugins,
        }
    }

    /// The next input for `agent` as it stands.
    pub(crate) fn next_input(&mut self, agent: &Agent) -> Input {
        let kind = self
            .prng
            .pick_cumulative(&self.kinds.totals)
            .map_or(Kind::Completion, |index| self.kinds.kinds()[index]);
        match kind {
            Kind::Send(target, wakeup) => Input::send(self.message(), target, wakeup),
            Kind::Append => Input::Append {
                target: self.target(),
                message: self.message(),
            },
            Kind::Prepend => Input::Prepend {
                target: self.target(),
                message: self.message(),
            },
            Kind::Replace => Input::Replace {
                id: self.edited(agent).id().clone(),
                message: self.message(),
            },
            Kind::Remove => Input::Remove {
                id: self.edited(agent).id().clone(),
            },
            Kind::Splice => self.splice(agent),
            Kind::Cancel => self.cancel(),
            Kind::Dispose => Input::Dispose,
            Kind::WhenIdle => Input::WhenIdle,
            Kind::Completion => self.completion(agent),
            Kind::StrayCompletion => self.stray_completion(agent),
        }
    }

    fn target(&mut self) -> Target {
        if self.prng.chance(1, 2) {
            Target::NextTurn
        } else {
            Target::NextStep
        }
    }

    /// A pool message; its source is `plugin` at the swarm's rate.
    fn message(&mut self) -> Message {
        let plugin = self.prng.chance(self.swarm.plugin_percent, 100);
        self.message_of(plugin)
    }

    fn message_of(&mut self, plugin: bool) -> Message {
        let index = self.prng.index(self.users.len()).expect("a non-empty pool");
        let pool = if plugin { &self.plugins } else { &self.users };
        pool[index].clone()
    }

    /// The message an edit names: usually a pending one, else any pool id
    /// (which the core refuses as `not-pending` unless it happens to be).
    fn edited(&mut self, agent: &Agent) -> Message {
        let inbox = agent.inbox();
        if inbox.is_empty() || self.prng.chance(1, 4) {
            return self.message_of(false);
        }
        let index = self.prng.index(inbox.len()).expect("a non-empty inbox");
        let steering = inbox.list(Target::NextStep);
        let queued = || inbox.list(Target::NextTurn).get(index - steering.len());
        match steering.get(index).or_else(queued) {
            Some(message) => message.clone(),
            // Not drawn: `index` is below the inbox's length.
            None => self.message_of(false),
        }
    }

    /// A raw splice: coordinates may overshoot (the core clamps them); all
    /// inserted messages share one source, as the transcript line prints it.
    fn splice(&mut self, agent: &Agent) -> Input {
        let target = self.target();
        let length = agent.inbox().list(target).len() as u64;
        let start = self.prng.below(length + 2) as usize;
        let removed = self.prng.below(3) as usize;
        let plugin = self.prng.chance(self.swarm.plugin_percent, 100);
        let count = self.prng.below(3);
        let inserted = (0..count).map(|_| self.message_of(plugin)).collect();
        Input::Splice {
            target,
            start,
            removed,
            inserted,
        }
    }

    fn cancel(&mut self) -> Input {
        let cause = match self.prng.below(4) {
            0 | 1 => CancelCause::User,
            2 => CancelCause::Parent,
            _ => CancelCause::Hook {
                reason: "veto".to_owned(),
            },
        };
        let keep_inbox = self.prng.chance(self.swarm.keep_inbox_percent, 100);
        Input::Cancel { cause, keep_inbox }
    }

    /// The completion the driver awaits; a refused one when idle.
    fn completion(&mut self, agent: &Agent) -> Input {
        match agent.status() {
            Status::Running {
                awaiting: AwaitPoint::PreStep,
                ..
            } => Input::PreStep(self.pre_step(agent)),
            Status::Running {
                awaiting: AwaitPoint::Step,
                ..
            } => Input::Step(self.step()),
            Status::Idle => self.stray_completion(agent),
        }
    }

    /// A completion for a point the driver is not awaiting.
    fn stray_completion(&mut self, agent: &Agent) -> Input {
        match agent.status() {
            Status::Running {
                awaiting: AwaitPoint::PreStep,
                ..
            } => Input::Step(self.step()),
            Status::Running {
                awaiting: AwaitPoint::Step,
                ..
            } => Input::PreStep(self.pre_step(agent)),
            Status::Idle if self.prng.chance(1, 2) => Input::Step(self.step()),
            Status::Idle => Input::PreStep(self.pre_step(agent)),
        }
    }

    /// A decision drawn by the swarm's weights (`pass` when all are zero),
    /// over every kind of decision the core has.
    fn pre_step(&mut self, agent: &Agent) -> PreStepDecision {
        let weights = &self.swarm.pre_step;
        let table: [u32; PreStepKind::VARIANTS.len()] =
            std::array::from_fn(|index| pre_step_weight(PreStepKind::VARIANTS[index], weights));
        let drawn = self.prng.pick(&table);
        match drawn.and_then(|index| PreStepKind::VARIANTS.get(index).copied()) {
            Some(PreStepKind::Pass) | None => PreStepDecision::Pass,
            Some(PreStepKind::Enter) => {
                PreStepDecision::Enter(self.entering(agent.claimed().unwrap_or(&[])))
            }
            Some(PreStepKind::Reject) => PreStepDecision::Reject,
            Some(PreStepKind::Fail) => PreStepDecision::Fail,
        }
    }

    /// An entering batch: each claimed message kept with probability 3/4,
    /// maybe two swapped, maybe one context message from the pool (which
    /// fails the pre-step if that id is pending, as SPEC §10 says).
    fn entering(&mut self, claimed: &[Message]) -> Vec<Message> {
        let mut entering: Vec<Message> = Vec::with_capacity(claimed.len() + 1);
        for message in claimed {
            if self.prng.chance(3, 4) {
                entering.push(self.as_entered(message));
            }
        }
        if entering.len() > 1 && self.prng.chance(1, 4) {
            let first = self.prng.index(entering.len()).expect("non-empty");
            let second = self.prng.index(entering.len()).expect("non-empty");
            entering.swap(first, second);
        }
        if self.prng.chance(1, 4) {
            entering.push(self.message_of(true));
        }
        entering
    }

    /// The transcript names entered ids only, and parses them as `plugin`
    /// messages; the core matches claimed ones by id.
    fn as_entered(&self, message: &Message) -> Message {
        self.plugins
            .iter()
            .find(|pooled| pooled.id() == message.id())
            .cloned()
            .unwrap_or_else(|| Message::text(message.id().clone(), Source::of_kind("plugin")))
    }

    /// An outcome drawn by the swarm's weights (`completed` when all are
    /// zero), over every outcome the core has.
    fn step(&mut self) -> StepOutcome {
        let weights = &self.swarm.step;
        let table: [u32; StepOutcome::VARIANTS.len()] =
            std::array::from_fn(|index| step_weight(StepOutcome::VARIANTS[index], weights));
        self.prng
            .pick(&table)
            .and_then(|index| StepOutcome::VARIANTS.get(index).copied())
            .unwrap_or(StepOutcome::Completed)
    }
}
