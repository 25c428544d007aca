//! Vacuity guards: situations the exhaustive check must reach, or a passing
//! check proves little. Each goal is a fact about one transition, read from
//! its input, its outputs and the state before it; the goals that span
//! several transitions remember how a pending message got there with a
//! [`Tags`] entry, dropped once the message leaves the inbox.

use std::sync::atomic::{AtomicU16, Ordering};

use strum::{Display, IntoStaticStr, VariantArray};

use courier_core::{
    Activity, Agent, AwaitPoint, Input, MessageId, Output, PreStepDecision, Status, Target,
    Transition, TurnEnd, Wakeup,
};

use courier_check::Checker;
use courier_check::Ranks;

/// One situation the check must reach at least once; the derives give its
/// reported names and their table.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Display, IntoStaticStr, VariantArray,
)]
pub enum VacuityGoal {
    /// A retirement replays a latched wake: `status idle` then `status running`.
    #[strum(serialize = "latch-replay")]
    LatchReplay,
    /// Work parked by a keep-inbox cancel is claimed after a later waking send.
    #[strum(serialize = "keep-inbox-parked-work-runs")]
    KeptWorkRuns,
    /// A next-step item injected while idle is claimed by a later followup.
    #[strum(serialize = "idle-inject-rides-followup")]
    IdleInjectRides,
    /// A steer sent into a live turn is claimed by that turn's next boundary.
    #[strum(serialize = "steer-joins-next-step")]
    SteerJoinsStep,
    /// A pre-step `reject` ends its turn `blocked`.
    #[strum(serialize = "reject")]
    Reject,
    /// A cancel aborts a live turn that awaits its pre-step decision.
    #[strum(serialize = "cancel-awaiting-pre-step")]
    CancelAtPreStep,
    /// A next-turn no-wake item is claimed by a turn something else woke.
    #[strum(serialize = "next-turn-no-wake-rides")]
    NoWakeTurnRides,
    /// A restart closes the step the crash left open (prints `step/end`).
    #[strum(serialize = "restart-closes-step")]
    RestartClosesStep,
    /// A restart brings back a message an edit removed, because the crash
    /// lost the edit's canceled splice.
    #[strum(serialize = "restart-resurrects-removed")]
    RestartResurrects,
    /// A message pending at a restart is claimed by a later waking send.
    #[strum(serialize = "restart-parked-work-runs")]
    RestartParkedRuns,
}

impl VacuityGoal {
    /// Every goal (the derive's table, as an array).
    pub const ALL: [VacuityGoal; <VacuityGoal as VariantArray>::VARIANTS.len()] =
        *<Self as VariantArray>::VARIANTS
            .first_chunk()
            .expect("the whole table");

    /// The name the check reports.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Whether only a restart can reach the goal (a check without restarts
    /// does not ask for it).
    pub fn needs_restart(self) -> bool {
        match self {
            Self::RestartClosesStep | Self::RestartResurrects | Self::RestartParkedRuns => true,
            Self::LatchReplay
            | Self::KeptWorkRuns
            | Self::IdleInjectRides
            | Self::SteerJoinsStep
            | Self::Reject
            | Self::CancelAtPreStep
            | Self::NoWakeTurnRides => false,
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// The goals one transition reached.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) struct Facts(u16);

const _: () = assert!(VacuityGoal::ALL.len() <= 16, "a goal is one bit of Facts");

impl Facts {
    /// Whether `goal` is among them.
    pub(crate) fn contains(self, goal: VacuityGoal) -> bool {
        self.0 & goal.bit() != 0
    }

    fn insert(&mut self, goal: VacuityGoal) {
        self.0 |= goal.bit();
    }
}

/// The goals reached anywhere in a search so far, shared by its threads.
#[derive(Debug, Default)]
pub(crate) struct Reached(AtomicU16);

impl Reached {
    /// Adds the goals of one transition. Most states add none, and the
    /// rest mostly add goals already in: those only read the shared word.
    pub(crate) fn record(&self, facts: Facts) {
        if facts.0 & !self.0.load(Ordering::Relaxed) != 0 {
            self.0.fetch_or(facts.0, Ordering::Relaxed);
        }
    }

    /// Whether a recorded transition reached `goal` (read once the search's
    /// threads have been joined).
    pub(crate) fn contains(&self, goal: VacuityGoal) -> bool {
        self.0.load(Ordering::Relaxed) & goal.bit() != 0
    }
}

/// How a pending message got where it is, as far as a goal cares.
const KEPT: u8 = 1;
const IDLE_INJECT: u8 = 2;
const STEER: u8 = 4;
const NO_WAKE_TURN: u8 = 8;
const RESTARTED: u8 = 16;

/// Tagged pending messages, sorted by id; only the ids a goal follows.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub(crate) struct Tags(Vec<(MessageId, u8)>);

impl Tags {
    fn get(&self, id: &MessageId) -> u8 {
        self.0
            .iter()
            .find(|(tagged, _)| tagged == id)
            .map_or(0, |(_, tags)| *tags)
    }

    fn add(&mut self, id: &MessageId, tag: u8) {
        match self.0.binary_search_by(|(tagged, _)| tagged.cmp(id)) {
            Ok(index) => self.0[index].1 |= tag,
            Err(index) => self.0.insert(index, (id.clone(), tag)),
        }
    }

    /// Hashes the tags over canonical ranks, in an order-free form (the
    /// list is sorted by name, which renaming does not preserve).
    pub(crate) fn hash_ranked<H: std::hash::Hasher>(&self, ranks: &Ranks<'_>, hasher: &mut H) {
        let tagged = self.0.iter().map(|(id, tags)| {
            let rank = ranks.rank(id) as u64;
            courier_core::hashing::mix(rank << 8 | u64::from(*tags))
        });
        hasher.write_usize(self.0.len());
        hasher.write_u64(tagged.fold(0, u64::wrapping_add));
    }
}

/// The agent and ghost before a transition, as the goals need them.
pub(crate) struct Before<'a> {
    pub(crate) agent: &'a Agent,
    pub(crate) checker: &'a Checker,
    pub(crate) tags: &'a Tags,
}

/// The goals `transition` reached, and the tags after it (`agent` is the agent
/// after the transition).
pub(crate) fn observe(
    before: &Before<'_>,
    transition: &Transition,
    agent: &Agent,
) -> (Facts, Tags) {
    let mut facts = transition_facts(before, transition);
    let open_turn = match before.agent.status() {
        Status::Running { turn, .. } => Some(turn),
        Status::Idle => None,
    };
    let followup = matches!(
        transition.input,
        Input::Send {
            target: Target::NextTurn,
            wakeup: Wakeup::Wake,
            ..
        }
    );
    let waking = transition.input.wakes();
    for output in &transition.outputs {
        let Output::Claimed { message, turn } = output else {
            continue;
        };
        let tags = before.tags.get(message.id());
        if tags & KEPT != 0 {
            facts.insert(VacuityGoal::KeptWorkRuns);
        }
        if tags & IDLE_INJECT != 0 && followup {
            facts.insert(VacuityGoal::IdleInjectRides);
        }
        if tags & STEER != 0 && open_turn == Some(*turn) {
            facts.insert(VacuityGoal::SteerJoinsStep);
        }
        if tags & NO_WAKE_TURN != 0 {
            facts.insert(VacuityGoal::NoWakeTurnRides);
        }
        if tags & RESTARTED != 0 && waking {
            facts.insert(VacuityGoal::RestartParkedRuns);
        }
    }
    (facts, retag(before, transition, agent))
}

/// The goals a restart reached, and the tags after it (`closers` is what
/// the resume printed, `agent` the resumed agent). `cut` is the transition
/// the crash cut short, as it would have completed; `None` for a restart at
/// the end of the log.
pub(crate) fn restarted(
    before: &Before<'_>,
    cut: Option<&Transition>,
    closers: &[Output],
    agent: &Agent,
) -> (Facts, Tags) {
    let mut facts = Facts::default();
    let closes_step = |o: &Output| matches!(o, Output::StepEnd { .. });
    if closers.iter().any(closes_step) {
        facts.insert(VacuityGoal::RestartClosesStep);
    }
    let pending = |id: &MessageId| agent.inbox().contains(id);
    if let Some(transition) = cut
        && is_edit(&transition.input)
    {
        let discarded = transition.outputs.iter();
        let discarded = discarded.filter(|o| matches!(o, Output::Discarded { .. }));
        if discarded
            .filter_map(Output::noticed)
            .any(|m| pending(m.id()))
        {
            facts.insert(VacuityGoal::RestartResurrects);
        }
    }
    // Tags follow pending messages only; whatever is pending now waits for
    // a waking send.
    let mut tags = before.tags.clone();
    tags.0.retain(|(id, _)| pending(id));
    let inbox = agent.inbox();
    for message in Target::ALL.iter().flat_map(|t| inbox.list(*t)) {
        tags.add(message.id(), RESTARTED);
    }
    (facts, tags)
}

/// Whether `input` edits the inbox (what can remove a pending message
/// without claiming it, beside a cancel).
fn is_edit(input: &Input) -> bool {
    match input {
        Input::Prepend { .. }
        | Input::Replace { .. }
        | Input::Remove { .. }
        | Input::Splice { .. } => true,
        Input::Send { .. }
        | Input::Append { .. }
        | Input::Cancel { .. }
        | Input::Dispose
        | Input::WhenIdle
        | Input::PreStep(_)
        | Input::Step(_) => false,
    }
}

/// Goals one transition shows by itself.
fn transition_facts(before: &Before<'_>, transition: &Transition) -> Facts {
    let mut facts = Facts::default();
    let status = |activity: Activity| move |o: &Output| matches!(o, Output::Status { status } if *status == activity);
    let retired = transition.outputs.iter().position(status(Activity::Idle));
    if retired.is_some_and(|index| {
        transition.outputs[index..]
            .iter()
            .any(status(Activity::Running))
    }) {
        facts.insert(VacuityGoal::LatchReplay);
    }
    let blocked = transition.outputs.iter().any(|output| {
        matches!(
            output,
            Output::TurnEnd {
                reason: TurnEnd::Blocked,
                ..
            }
        )
    });
    if matches!(transition.input, Input::PreStep(PreStepDecision::Reject)) && blocked {
        facts.insert(VacuityGoal::Reject);
    }
    let cancel = transition.input.abort().is_some();
    if cancel && awaits_live(before, AwaitPoint::PreStep) {
        facts.insert(VacuityGoal::CancelAtPreStep);
    }
    facts
}

/// Whether the agent awaited `point` in a turn no cancel had aborted yet.
fn awaits_live(before: &Before<'_>, point: AwaitPoint) -> bool {
    let awaits =
        matches!(before.agent.status(), Status::Running { awaiting, .. } if awaiting == point);
    awaits && !before.checker.turn_aborted()
}

/// The tags after the transition: new ones for the input, minus every
/// message that left the inbox (claimed or discarded).
fn retag(before: &Before<'_>, transition: &Transition, agent: &Agent) -> Tags {
    let mut tags = before.tags.clone();
    let running = matches!(before.agent.status(), Status::Running { .. });
    let live = running && !before.checker.turn_aborted();
    match &transition.input {
        Input::Send {
            message,
            target,
            wakeup,
        } => {
            let tag = match (target, wakeup) {
                (Target::NextStep, Wakeup::NoWake) if !running => IDLE_INJECT,
                (Target::NextStep, Wakeup::Wake) if live => STEER,
                (Target::NextTurn, Wakeup::NoWake) => NO_WAKE_TURN,
                _ => 0,
            };
            if tag != 0 {
                tags.add(message.id(), tag);
            }
        }
        Input::Cancel {
            keep_inbox: true, ..
        } if live => {
            let inbox = agent.inbox();
            for message in Target::ALL.iter().flat_map(|t| inbox.list(*t)) {
                tags.add(message.id(), KEPT);
            }
        }
        Input::Append { .. }
        | Input::Prepend { .. }
        | Input::Replace { .. }
        | Input::Remove { .. }
        | Input::Splice { .. }
        | Input::Cancel { .. }
        | Input::Dispose
        | Input::WhenIdle
        | Input::PreStep(_)
        | Input::Step(_) => {}
    }
    tags.0.retain(|(id, _)| !left(&transition.outputs, id));
    tags
}

/// Whether `outputs` claim or discard `id`.
fn left(outputs: &[Output], id: &MessageId) -> bool {
    outputs.iter().any(|output| {
        let left = matches!(output, Output::Claimed { .. } | Output::Discarded { .. });
        left && output.noticed().is_some_and(|message| message.id() == id)
    })
}
