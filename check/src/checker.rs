//! Every SPEC §7 property over one transition at a time: the input, whether
//! the core refused it, and the outputs it emitted. The ghost bookkeeping
//! (owed wakes, parked work, the replay owed to a latched send) is kept from
//! inputs and outputs only, so the model checker, the simulator and any other
//! engine share this one checker.

use std::collections::{BTreeSet, VecDeque};
use std::hash::{Hash, Hasher};

use courier_core::hashing::mix;
use courier_core::{
    Abort, Activity, Inbox, Input, Message, MessageId, Output, Pending, Target, Transition, TurnEnd,
};
use smallvec::SmallVec;

use crate::history::{Effect, History, Mode};
use crate::property::{Property, Violation, ensure};

/// The longest pending list `replay-matches` compares whole after every
/// transition (the model checker's and the simulator's lists are far
/// shorter); see [`Checker::check_inbox_after`].
pub(crate) const WHOLE_LIST_MAX: usize = 256;

/// The claim a boundary owes, in the order SPEC §5 emits it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Boundary {
    turn: u64,
    /// Claim splices still expected: list and removed count (at most two:
    /// `next-step`, then the `next-turn` head), on the stack.
    splices: SmallVec<[(Target, usize); 2]>,
    /// `claimed` notifications still expected, in batch order.
    claimed: VecDeque<MessageId>,
    /// Opened by `step/end`: a `turn/end` may follow instead of a claim.
    after_step: bool,
    /// Some part of the claim has been seen.
    started: bool,
}

/// A live notification an edit splice owes: each removed occurrence leaves
/// exactly once (`discarded`), each insertion is announced (`inserted`).
#[derive(Clone, PartialEq, Eq, Debug)]
enum Notice {
    Discarded(MessageId),
    Inserted(MessageId),
}

impl Notice {
    fn matches(&self, output: &Output) -> bool {
        let (owed, same_kind) = match self {
            Self::Discarded(id) => (id, matches!(output, Output::Discarded { .. })),
            Self::Inserted(id) => (id, matches!(output, Output::Inserted { .. })),
        };
        same_kind && output.noticed().is_some_and(|message| message.id() == owed)
    }
}

/// The notices owed, in order, and how many have come.
#[derive(Default)]
struct Notices {
    owed: SmallVec<[Notice; 2]>,
    came: usize,
}

impl Notices {
    fn push_back(&mut self, notice: Notice) {
        self.owed.push(notice);
    }

    /// The next notice owed, now counted as come.
    fn pop_front(&mut self) -> Option<&Notice> {
        let next = self.owed.get(self.came)?;
        self.came += 1;
        Some(next)
    }

    fn front(&self) -> Option<&Notice> {
        self.owed.get(self.came)
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Discarded(id) => write!(formatter, "~discarded {id}"),
            Self::Inserted(id) => write!(formatter, "~inserted {id}"),
        }
    }
}

/// The durable log a restart kept, as the checker is told it.
#[derive(Clone, Copy, Debug)]
pub enum Kept<'a> {
    /// The whole kept log, from the session's start.
    Log(&'a [Output]),
    /// Everything the checker has seen (less what a restart took
    /// back), plus these first writes of a transition that never completed.
    Tail(&'a [Output]),
}

/// The ghost state of the whole-session checks.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Checker {
    history: History,
    status: Activity,
    /// Pending occurrences a waking send made owed.
    owed: BTreeSet<MessageId>,
    /// Occurrences parked by a stop or keep-inbox abort until a waking send.
    parked: BTreeSet<MessageId>,
    /// The open turn was aborted by a cancel or dispose.
    aborted: bool,
    /// A waking send landed on the aborted open turn (and no broad cancel since).
    replay_owed: bool,
    disposed: bool,
}

/// What one transition has shown so far. Its lists start on the stack: the
/// model checker checks every transition it generates, and most supply one
/// message and owe a notice or two.
struct Progress<'a> {
    input: &'a Input,
    /// Messages the input supplied and no splice has inserted yet, last
    /// first: splices insert them in the input's order, so the next one is
    /// at the end and leaves in O(1). Taken from the front, a splice of a
    /// million ids moved the rest once per id (`courier diagram` of one such
    /// `splice` took 57 s).
    supplied: SmallVec<[&'a Message; 2]>,
    /// The agent was idle when the input arrived.
    started_idle: bool,
    boundary: Option<Boundary>,
    /// Live notifications owed by the edit splices seen, in order.
    notices: Notices,
    /// The retiring turn owed a latch replay.
    retiring_replay: bool,
    idle_emitted: bool,
}

impl Default for Checker {
    fn default() -> Self {
        Self::new()
    }
}

impl Checker {
    /// The checker of a fresh agent.
    pub fn new() -> Self {
        Self {
            history: History::new(Mode::Core),
            status: Activity::Idle,
            owed: BTreeSet::new(),
            parked: BTreeSet::new(),
            aborted: false,
            replay_owed: false,
            disposed: false,
        }
    }

    /// The ghost replay of the durable outputs seen so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Whether the ghost agent is idle with nothing owed (the liveness goal).
    pub fn quiescent(&self) -> bool {
        self.status == Activity::Idle && self.owed.is_empty()
    }

    /// Whether the open turn was aborted by a cancel or dispose (the model
    /// checker's goals ask whether a cancel found a live turn).
    pub fn turn_aborted(&self) -> bool {
        self.aborted
    }

    /// The pending occurrences a waking send still owes a claim to (the
    /// Explorer shows them).
    pub fn owed(&self) -> impl Iterator<Item = &MessageId> {
        self.owed.iter()
    }

    /// The occurrences a stop parked until a later waking send.
    pub fn parked(&self) -> impl Iterator<Item = &MessageId> {
        self.parked.iter()
    }

    /// Whether a waking send reached the aborted open turn, so its
    /// retirement owes a latch replay.
    pub fn replay_owed(&self) -> bool {
        self.replay_owed
    }

    /// How many pending occurrences a waking send still owes a claim to.
    pub fn owed_count(&self) -> usize {
        self.owed.len()
    }

    /// `replay-matches`: the ghost replay of every durable splice equals the
    /// core's inbox, compared whole.
    pub fn check_inbox(&self, inbox: &Inbox) -> Result<(), Violation> {
        self.compare_inbox(inbox, |_, ghost, real| same_ids(ghost, real))
    }

    /// `replay-matches` after a transition that printed `outputs`: lists of
    /// up to `WHOLE_LIST_MAX` (256) occurrences are compared whole; a longer one
    /// by its length, its ends and the windows this transition's splices
    /// wrote, so a long trace whose inbox grows to thousands (a diagram of a
    /// huge race report) is checked in linear time, not quadratic.
    pub fn check_inbox_after(&self, inbox: &Inbox, outputs: &[Output]) -> Result<(), Violation> {
        self.compare_inbox(inbox, |target, ghost, real| {
            let same_at = |index: usize| ghost.get(index) == real.get(index).map(Message::id);
            if ghost.len() != real.len() {
                return false;
            }
            if ghost.len() <= WHOLE_LIST_MAX {
                return same_ids(ghost, real);
            }
            let windows = outputs.iter().filter_map(|output| {
                let Output::Spliced(splice) = output else {
                    return None;
                };
                (splice.target == target)
                    .then(|| splice.start..splice.start + splice.inserted.len())
            });
            same_at(0) && same_at(ghost.len() - 1) && windows.flatten().all(same_at)
        })
    }

    /// Compares each pending list of the ghost with the core's by `same`.
    fn compare_inbox(
        &self,
        inbox: &Inbox,
        same: impl Fn(Target, &Pending<MessageId>, &Pending<Message>) -> bool,
    ) -> Result<(), Violation> {
        for target in [Target::NextTurn, Target::NextStep] {
            let ghost = self.history.list(target);
            let real = inbox.list(target);
            ensure(same(target, ghost, real), Property::ReplayMatches, || {
                let ids = |ids: Vec<&MessageId>| {
                    ids.iter()
                        .map(|id| id.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let ghost = ids(ghost.iter().collect());
                let real = ids(real.iter().map(Message::id).collect());
                format!(
                    "{}: replayed [{ghost}] but the inbox holds [{real}]",
                    target.as_str()
                )
            })?;
        }
        Ok(())
    }

    /// Checks one transition: the input, the core's answer, and its outputs.
    /// `replay-matches` needs the core's inbox: see [`Checker::check_inbox`].
    pub fn observe(&mut self, transition: &Transition) -> Result<(), Violation> {
        let Transition {
            input,
            answer,
            outputs,
        } = transition;
        if let Err(refusal) = answer {
            return ensure(outputs.is_empty(), Property::RefusalSilent, || {
                format!(
                    "refused input ({refusal}) emitted {} outputs",
                    outputs.len()
                )
            });
        }
        let mut progress = self.begin(input);
        for (index, output) in outputs.iter().enumerate() {
            self.output(&mut progress, output, &outputs[index + 1..])?;
        }
        self.finish(progress)
    }

    fn begin<'a>(&mut self, input: &'a Input) -> Progress<'a> {
        let started_idle = self.status == Activity::Idle;
        if input.wakes() {
            // A waking send unparks everything; on an aborted turn it latches.
            self.parked.clear();
            if self.history.open_turn().is_some() && self.aborted {
                self.replay_owed = true;
            }
        }
        // Pushed one by one: `SmallVec`'s `extend` (reserving, then a
        // generic loop) cost several times the usual one or two pushes.
        let mut supplied = SmallVec::new();
        for message in input.supplied().iter().rev() {
            supplied.push(message);
        }
        Progress {
            input,
            supplied,
            started_idle,
            boundary: None,
            notices: Notices::default(),
            retiring_replay: false,
            idle_emitted: false,
        }
    }

    fn output(
        &mut self,
        progress: &mut Progress<'_>,
        output: &Output,
        rest: &[Output],
    ) -> Result<(), Violation> {
        if self.check_boundary(progress, output)? {
            return Ok(());
        }
        if let Some(expected) = progress.notices.pop_front() {
            ensure(expected.matches(output), Property::SingleExit, || {
                format!("expected `{expected}` after the splice, got `{output}`")
            })?;
            return Ok(());
        }
        match output {
            Output::Inserted { .. } | Output::Discarded { .. } => Err(Violation::new(
                Property::SingleExit,
                format!("`{output}` with no splice"),
            )),
            Output::Status { status } => self.status_change(progress, *status, rest),
            Output::Idle => self.idle(progress),
            Output::Claimed { .. } => Err(Violation::new(
                Property::ClaimShape,
                format!("`{output}` outside a boundary's claim"),
            )),
            Output::Error { .. } => Ok(()),
            Output::Spliced(_)
            | Output::TurnStart { .. }
            | Output::StepStart { .. }
            | Output::UserMessage(_)
            | Output::StepEnd { .. }
            | Output::TurnEnd { .. } => self.durable(progress, output),
        }
    }

    fn durable(&mut self, progress: &mut Progress<'_>, output: &Output) -> Result<(), Violation> {
        let stepped = self.history.turn_has_stepped();
        let effect = self.history.observe(output)?;
        match output {
            Output::Spliced(splice) => self.spliced(progress, &splice.inserted, effect)?,
            Output::TurnStart { turn } => {
                ensure(
                    self.status == Activity::Running,
                    Property::StatusAlternates,
                    || format!("turn/start {turn} while idle"),
                )?;
                self.aborted = false;
                self.replay_owed = false;
                progress.boundary = Some(self.boundary(*turn, true));
            }
            Output::StepEnd { turn, .. } => {
                progress.boundary = Some(self.boundary(*turn, false));
            }
            Output::TurnEnd { reason, .. } => {
                // Stops without the pending check forgive and park what is pending.
                let stop = match reason {
                    TurnEnd::Blocked | TurnEnd::Error => true,
                    TurnEnd::Completed => !stepped,
                    // Only a restart's repair writes `interrupted` (see `restart`).
                    TurnEnd::MaxTokens | TurnEnd::Aborted { .. } | TurnEnd::Interrupted => false,
                };
                if stop {
                    self.owed.clear();
                    self.parked = self.history.pending().cloned().collect();
                }
                progress.retiring_replay = self.replay_owed;
            }
            // History checked these; the ghost's own state does not change.
            Output::StepStart { .. } | Output::UserMessage(_) => {}
            // `output` routes only durable outputs here.
            Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => {}
        }
        Ok(())
    }

    /// The claim a boundary must make: all of `next-step`, then (first
    /// boundary) the `next-turn` head.
    fn boundary(&self, turn: u64, first: bool) -> Boundary {
        let steering = self.history.list(Target::NextStep);
        let head = self
            .history
            .list(Target::NextTurn)
            .front()
            .filter(|_| first);
        let mut splices = SmallVec::new();
        if !steering.is_empty() {
            splices.push((Target::NextStep, steering.len()));
        }
        if head.is_some() {
            splices.push((Target::NextTurn, 1));
        }
        let claimed = steering.iter().chain(head).cloned().collect();
        Boundary {
            turn,
            splices,
            claimed,
            after_step: !first,
            started: false,
        }
    }

    /// `claim-shape`: once a boundary opens, its claim comes first and whole.
    /// Returns whether `output` was a `claimed` notification it accounted for.
    fn check_boundary(
        &self,
        progress: &mut Progress<'_>,
        output: &Output,
    ) -> Result<bool, Violation> {
        let Some(boundary) = &mut progress.boundary else {
            return Ok(false);
        };
        if boundary.splices.is_empty() && boundary.claimed.is_empty() {
            progress.boundary = None;
            return Ok(false);
        }
        let turn = boundary.turn;
        match output {
            Output::Spliced(splice) if splice.outcome.is_none() && splice.removed_count > 0 => {
                let expected = (!boundary.splices.is_empty()).then(|| boundary.splices.remove(0));
                let got = (splice.target, splice.removed_count);
                ensure(expected == Some(got), Property::ClaimShape, || {
                    format!(
                        "turn {turn} claim `{output}` where {} was due",
                        due(expected)
                    )
                })?;
                boundary.started = true;
                Ok(false)
            }
            Output::Claimed {
                message,
                turn: claimed_turn,
            } if boundary.splices.is_empty() => {
                let expected = boundary.claimed.pop_front();
                ensure(
                    expected.as_ref() == Some(message.id()) && *claimed_turn == turn,
                    Property::ClaimShape,
                    || {
                        format!(
                            "`{output}` where `~claimed {} {turn}` was due",
                            due_id(&expected)
                        )
                    },
                )?;
                Ok(true)
            }
            Output::TurnEnd { .. } | Output::Error { .. }
                if boundary.after_step && !boundary.started =>
            {
                progress.boundary = None;
                Ok(false)
            }
            // Anything else (a guard above failing included) breaks the claim.
            Output::Spliced(_)
            | Output::Claimed { .. }
            | Output::TurnEnd { .. }
            | Output::Error { .. }
            | Output::TurnStart { .. }
            | Output::StepStart { .. }
            | Output::UserMessage(_)
            | Output::StepEnd { .. }
            | Output::Inserted { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Idle => Err(Violation::new(
                Property::ClaimShape,
                format!(
                    "`{output}` inside turn {turn}'s claim; {} still due",
                    boundary_due(boundary)
                ),
            )),
        }
    }

    fn spliced(
        &mut self,
        progress: &mut Progress<'_>,
        inserted: &[Message],
        effect: Effect,
    ) -> Result<(), Violation> {
        if let Input::Cancel {
            keep_inbox: true, ..
        } = progress.input
        {
            return Err(Violation::new(
                Property::KeepInboxSilent,
                "a keep-inbox cancel spliced the inbox",
            ));
        }
        for id in &effect.removed {
            self.owed.remove(id);
            let parked = self.parked.remove(id);
            ensure(!(effect.claim && parked), Property::StopParks, || {
                format!("{id} claimed while parked by a stop, before a later waking send")
            })?;
            if !effect.claim {
                progress.notices.push_back(Notice::Discarded(id.clone()));
            }
        }
        let waking = progress.input.wakes();
        for (id, message) in effect.inserted.iter().zip(inserted) {
            let Some(position) = progress.supplied.iter().rposition(|m| *m == message) else {
                return Err(Violation::new(
                    Property::InsertedByInput,
                    format!("{id} inserted but the input did not supply it"),
                ));
            };
            progress.supplied.remove(position);
            if waking {
                self.owed.insert(id.clone());
            }
            progress.notices.push_back(Notice::Inserted(id.clone()));
        }
        Ok(())
    }

    fn status_change(
        &mut self,
        progress: &mut Progress<'_>,
        status: Activity,
        rest: &[Output],
    ) -> Result<(), Violation> {
        ensure(self.status != status, Property::StatusAlternates, || {
            format!("status {status:?} twice in a row")
        })?;
        self.status = status;
        match status {
            Activity::Running => self.start(progress),
            Activity::Idle => self.retire(progress, rest),
        }
    }

    /// `no-wake-stays-idle`: a driver starts only for a waking send that
    /// found the agent idle, or for a replay the retiring turn owed.
    fn start(&mut self, progress: &mut Progress<'_>) -> Result<(), Violation> {
        ensure(!progress.idle_emitted, Property::QuiescentWhenIdle, || {
            "`~idle` before `~status running` in one progress".to_owned()
        })?;
        if progress.input.wakes() && std::mem::take(&mut progress.started_idle) {
            return Ok(());
        }
        ensure(
            std::mem::take(&mut progress.retiring_replay),
            Property::NoWakeStaysIdle,
            || "a driver started without a waking send or an owed latch replay".to_owned(),
        )
    }

    /// `no-lost-wakeup` at a retirement that starts no driver.
    fn retire(&mut self, progress: &mut Progress<'_>, rest: &[Output]) -> Result<(), Violation> {
        if let Some(turn) = self.history.open_turn() {
            return Err(Violation::new(
                Property::Balanced,
                format!("idle with turn {turn} open"),
            ));
        }
        let running = Output::Status {
            status: Activity::Running,
        };
        let replays = rest.contains(&running);
        if replays {
            return Ok(());
        }
        ensure(self.owed.is_empty(), Property::NoLostWakeup, || {
            format!("retired with {} owed: {}", self.owed.len(), self.owed_ids())
        })?;
        ensure(
            !(progress.retiring_replay && self.history.has_pending() && !self.disposed),
            Property::NoLostWakeup,
            || "a latched wake was not replayed though work is pending".to_owned(),
        )
    }

    fn idle(&mut self, progress: &mut Progress<'_>) -> Result<(), Violation> {
        ensure(
            self.status == Activity::Idle,
            Property::QuiescentWhenIdle,
            || "`~idle` while running".to_owned(),
        )?;
        ensure(self.owed.is_empty(), Property::QuiescentWhenIdle, || {
            format!("`~idle` with {} owed", self.owed_ids())
        })?;
        progress.idle_emitted = true;
        Ok(())
    }

    fn finish(&mut self, progress: Progress<'_>) -> Result<(), Violation> {
        if let Some(boundary) = &progress.boundary {
            let pending = !boundary.splices.is_empty() || !boundary.claimed.is_empty();
            ensure(!pending, Property::ClaimShape, || {
                format!(
                    "turn {} awaits with {} unclaimed",
                    boundary.turn,
                    boundary_due(boundary)
                )
            })?;
        }
        if let Some(expected) = progress.notices.front() {
            return Err(Violation::new(
                Property::SingleExit,
                format!("`{expected}` never came"),
            ));
        }
        self.apply_cancel(progress.input);
        match (self.status, self.history.open_turn()) {
            (Activity::Running, None) => Err(Violation::new(
                Property::NoGaps,
                "running with no open turn when control returned",
            )),
            (Activity::Idle, _) => ensure(self.owed.is_empty(), Property::NoLostWakeup, || {
                format!("idle with {} owed", self.owed_ids())
            }),
            (Activity::Running, Some(_)) => Ok(()),
        }
    }

    /// A cancel aborts a live turn (forgiving what is pending) after its
    /// discards; without keep-inbox it also drops an owed replay.
    fn apply_cancel(&mut self, input: &Input) {
        let Some(Abort {
            keep_inbox,
            dispose,
        }) = input.abort()
        else {
            return;
        };
        if !keep_inbox {
            self.replay_owed = false;
        }
        if dispose {
            self.disposed = true;
            self.owed.clear();
        }
        if self.history.open_turn().is_some() && !self.aborted {
            self.aborted = true;
            self.owed.clear();
            if keep_inbox {
                self.parked.extend(self.history.pending().cloned());
            }
        }
    }

    /// Records how to take back each durable output from now on, for
    /// [`Checker::undo`] (a harness that keeps its durable log).
    pub(crate) fn record_undo(&mut self) {
        self.history.record_undo();
    }

    /// Stops recording (a harness that no longer keeps its log).
    pub(crate) fn stop_recording_undo(&mut self) {
        self.history.stop_recording_undo();
    }

    /// Takes back the last `count` durable outputs from the ghost history:
    /// a restart that lost them, before [`Checker::restart`] with
    /// [`Kept::Tail`].
    pub(crate) fn undo(&mut self, count: usize) {
        debug_assert!(self.history.undoable().is_some_and(|held| held >= count));
        self.history.undo(count);
    }

    /// Follows a restart (SPEC §7's last paragraph, §11): the ghost is
    /// rebuilt from the kept log (the durable half replayed; nothing owed,
    /// parked or latched; status afresh) and `printed`, what the restart
    /// printed, must be exactly the kept log's closers (`resume-closes`).
    pub fn restart(&mut self, kept: Kept<'_>, printed: &[Output]) -> Result<(), Violation> {
        let events = match kept {
            Kept::Log(log) => {
                self.history = History::new(Mode::Core);
                log
            }
            Kept::Tail(tail) => tail,
        };
        for event in events {
            self.history.observe(event)?;
        }
        let closers = self.history.closers();
        ensure(printed == closers, Property::ResumeCloses, || {
            let lines = |outputs: &[Output]| {
                let lines: Vec<String> = outputs.iter().map(Output::to_string).collect();
                format!("[{}]", lines.join(", "))
            };
            format!(
                "the restart printed {} where the kept log's closers are {}",
                lines(printed),
                lines(&closers)
            )
        })?;
        for closer in printed {
            self.history.observe(closer)?;
        }
        // Only the durable history survives; the rest died with the process.
        let history = std::mem::replace(&mut self.history, History::new(Mode::Core));
        *self = Self {
            history,
            ..Self::new()
        };
        Ok(())
    }

    /// Feeds the ghost state to `hasher` for [`crate::fingerprint()`]: ids go
    /// through `hasher` (which renames them) and the id sets are fed in an
    /// order-free form over canonical ranks, so states equal up to renaming
    /// hash alike. The ghost lists are left out: `replay-matches` holds them
    /// equal to the core's inbox, which is hashed, in every state that has
    /// not broken a property.
    pub(crate) fn hash_canonical<H: Hasher>(
        &self,
        hasher: &mut H,
        rank: impl Fn(&MessageId) -> usize,
    ) {
        // Destructured, so a new ghost field cannot be left out silently
        // (two states differing only in it would merge).
        let Self {
            history,
            status,
            owed,
            parked,
            aborted,
            replay_owed,
            disposed,
        } = self;
        history.hash_turns(hasher);
        status.hash(hasher);
        for set in [owed, parked] {
            // A sum of mixed ranks is independent of the set's name order
            // and needs no allocation.
            let mixed = set.iter().map(|id| mix(rank(id) as u64));
            set.len().hash(hasher);
            mixed.fold(0u64, u64::wrapping_add).hash(hasher);
        }
        aborted.hash(hasher);
        replay_owed.hash(hasher);
        disposed.hash(hasher);
    }

    fn owed_ids(&self) -> String {
        let ids: Vec<&str> = self.owed.iter().map(MessageId::as_str).collect();
        ids.join(" ")
    }
}

/// Whether the ghost list holds the ids of the core's, in order. Lengths
/// first, and empty lists (most, after every input) end there. Two lists
/// that each lie in one slice (the usual short deque) are zipped as slices,
/// a tight loop; others by their iterators. Ids compare by address first
/// (the ghost's are clones of the messages' own). Always inline: it runs
/// twice per input, and as a call (`#[inline]` was not taken) its entry and
/// exit cost about a fifth of it.
#[inline(always)]
fn same_ids(ghost: &Pending<MessageId>, real: &Pending<Message>) -> bool {
    let same = |(id, message): (&MessageId, &Message)| id == message.id();
    ghost.len() == real.len()
        && (ghost.is_empty()
            || match (ghost.as_slices(), real.as_slices()) {
                (Some((ids, [])), Some((messages, []))) => ids.iter().zip(messages).all(same),
                _ => ghost.iter().zip(real).all(same),
            })
}

fn due(expected: Option<(Target, usize)>) -> String {
    match expected {
        Some((target, count)) => format!("`spliced {}@0 -{count}`", target.as_str()),
        None => "no claim splice".to_owned(),
    }
}

fn due_id(expected: &Option<MessageId>) -> String {
    expected
        .as_ref()
        .map_or_else(|| "nothing".to_owned(), |id| id.to_string())
}

fn boundary_due(boundary: &Boundary) -> String {
    let splices: Vec<String> = boundary.splices.iter().map(|s| due(Some(*s))).collect();
    let claimed: Vec<&str> = boundary.claimed.iter().map(MessageId::as_str).collect();
    format!(
        "splices [{}] and claims [{}]",
        splices.join(", "),
        claimed.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use courier_core::pending::Keyed;
    use courier_core::{Agent, Source};

    use super::*;

    fn messages(ids: &[&str]) -> Vec<Message> {
        ids.iter()
            .map(|id| Message::text(*id, Source::user()))
            .collect()
    }

    /// `items` pushed at the back, or (`wrapped`) all but the first pushed
    /// and the first put in front, which wraps a deque: both comparison
    /// paths must give one answer.
    fn list<T: Clone + Keyed>(items: &[T], wrapped: bool) -> Pending<T> {
        let mut list = Pending::default();
        let (first, rest) = items.split_first().expect("a non-empty list");
        for item in if wrapped { rest } else { items } {
            list.push_back(item.clone());
        }
        if wrapped {
            list.insert(0, [first.clone()]);
        }
        list
    }

    #[test]
    fn same_ids_holds_for_the_same_order_in_any_layout() {
        let real = messages(&["A", "B", "C"]);
        let ids: Vec<MessageId> = real.iter().map(|m| m.id().clone()).collect();
        // A ghost id is a clone of the message's, or spelled anew.
        let spelled: Vec<MessageId> = ["A", "B", "C"].map(MessageId::from).to_vec();
        let swapped: Vec<MessageId> = ["A", "C", "B"].map(MessageId::from).to_vec();
        for (ghost_wrapped, real_wrapped) in
            [(false, false), (false, true), (true, false), (true, true)]
        {
            let core = list(&real, real_wrapped);
            assert!(same_ids(&list(&ids, ghost_wrapped), &core));
            assert!(same_ids(&list(&spelled, ghost_wrapped), &core));
            assert!(!same_ids(&list(&swapped, ghost_wrapped), &core));
            assert!(!same_ids(&list(&ids[..2], ghost_wrapped), &core));
        }
        assert!(same_ids(&Pending::default(), &Pending::default()));
    }

    /// `inserted-by-input` takes a splice's messages from the input's in
    /// order, each once. Taken from the front of the list, each moved the
    /// rest: a splice of a million ids took 57 s in `courier diagram`, so
    /// this one of 100,000 took seconds in a debug build. A message the
    /// input did not supply still breaks it.
    #[test]
    fn inserted_by_input_takes_a_long_splice_s_messages_in_order() {
        let ids: Vec<String> = (0..100_000).map(|k| format!("m{k}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let input = Input::Splice {
            target: Target::NextTurn,
            start: 0,
            removed: 0,
            inserted: messages(&ids),
        };
        let transition = Agent::new().transition(input);
        assert_eq!(transition.outputs.len(), 1 + ids.len());
        assert_eq!(Checker::new().observe(&transition), Ok(()));
        let mut forged = transition;
        forged.outputs.truncate(1);
        let Output::Spliced(splice) = &mut forged.outputs[0] else {
            panic!("a splice first");
        };
        splice.inserted.truncate(3);
        splice.inserted[1] = messages(&["z"]).remove(0);
        let Input::Splice { inserted, .. } = &mut forged.input else {
            unreachable!("a splice in");
        };
        inserted.truncate(3);
        let broken = Checker::new()
            .observe(&forged)
            .expect_err("z was not supplied");
        assert_eq!(broken.property, Property::InsertedByInput, "{broken:?}");
        assert!(broken.detail.starts_with("z inserted"), "{broken:?}");
    }
}
