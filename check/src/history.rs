//! The durable half of the properties: a ghost replay of the session log.
//!
//! [`History`] consumes durable outputs one at a time (the core's, or a
//! recorded log's) and checks what a durable log can show: normalized splices,
//! unique pending ids, claim shape, one prompt per turn, balanced turns and
//! steps, and admission. It never reads the core; it rebuilds the inbox from
//! the splices. An id names one occurrence while it is pending (ids are
//! unique while pending, and may be sent again once they left), so the ghost
//! state needs no counters and stays canonical for a model checker.
//!
//! Linear in the log: each check that asks whether an id is pending or was
//! admitted looks it up in a hash `Index` kept beside the ordered list
//! once that list is long, and each pending list is a [`Pending`] sequence
//! whose splice costs O(log n) plus the ids it moves, wherever it lands, so
//! a log with a million pending or admitted ids, spliced at the ends or in
//! the middle, checks as fast per event as a short one.

use std::hash::{Hash, Hasher};

use courier_core::{Cause, Message, MessageId, Output, Pending, Splice, Target, TurnEnd};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::property::{Property, Violation, ensure};

/// How strict the durable checks are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Mode {
    /// Outputs of `courier-core`: `user/message` only right after
    /// `step/start`, no placeholder ids.
    Core,
    /// A recorded dsh log: context may enter later in a step (tool results),
    /// and `{{name}}` placeholder ids carry no identity: dsh's snapshot
    /// tests wrote them over distinct real ids, so two pending messages
    /// may share one (the fixtures' README asks identity checks to skip them).
    Log,
}

/// What one durable output did to the ghost inbox.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Effect {
    /// Occurrences the splice removed, in list order.
    pub removed: Vec<MessageId>,
    /// Occurrences the splice inserted, in order (on the stack for the
    /// usual one or two: every inserting splice the engines check makes one).
    pub inserted: SmallVec<[MessageId; 2]>,
    /// Whether the removal was a claim (pure deletion without outcome).
    pub claim: bool,
}

/// The open turn as the log shows it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct OpenTurn {
    number: u64,
    last_step: u64,
    step_open: bool,
    /// A `next-turn` message was claimed in this turn.
    prompt_claimed: bool,
    /// Lists claimed since the current boundary opened, in order (at most
    /// two in a core's log: on the stack, as `admitted`'s usual few, so a
    /// turn allocates nothing for them).
    boundary_claims: SmallVec<[Target; 2]>,
    /// The open step's pre-step entered a message, placeholders too
    /// ([`Mode::Log`] only).
    entered: bool,
    /// Step 1 ended with nothing entered, which only a crash's closers may
    /// follow ([`Mode::Log`] only; see [`check_empty_first_step`]).
    empty_first_step: bool,
    /// A send landed on `next-turn` since this turn began, so an abort's
    /// latch may replay it ([`Mode::Log`] only; see [`Parked::Abort`]).
    latchable: bool,
    /// Ids the open boundary claimed, which its step's pre-step must enter
    /// right after `step/start`, not later as a tool's context
    /// ([`Mode::Log`] only: in [`Mode::Core`] every `user/message` comes
    /// right after `step/start`).
    batch: SmallVec<[MessageId; 2]>,
    /// `batch`, indexed.
    batch_index: Index,
    /// Ids admitted in the open step.
    admitted: SmallVec<[MessageId; 2]>,
    /// `admitted`, indexed.
    admitted_index: Index,
    /// What the open boundary still owes ([`Mode::Log`] only; the
    /// [`Checker`](crate::Checker) checks a core's boundaries per transition).
    boundary: Boundary,
}

/// A boundary's claims as a log shows them (SPEC §7 `claim-shape`): the
/// transition that opens a boundary claims all of `next-step` and, at a
/// turn's first boundary, the `next-turn` head, before anything else.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct Boundary {
    window: Window,
    /// `next-step` was not empty when the boundary opened and is not claimed yet.
    owes_next_step: bool,
    /// `next-turn` was not empty at `turn/start` and its head is not claimed yet.
    owes_head: bool,
    /// A splice that is not a claim came since the boundary opened (in a
    /// later window: a hook's, or a send while `pre-step` was awaited).
    spliced: bool,
}

/// Where claims may still come.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
enum Window {
    /// No boundary is open, or its claims are over.
    #[default]
    Closed,
    /// Right after `turn/start`: only claims may come before the boundary's
    /// claims are over (no log dsh wrote has anything else there).
    First,
    /// After `step/end`: dsh's listeners run inside the transition, so a
    /// hook's splice may come before the claim (`hook-*-stop-continue`).
    Later,
}

impl Boundary {
    /// Whether a claim the boundary owes is not made yet.
    fn owes(&self) -> bool {
        self.owes_next_step || self.owes_head
    }

    /// What it owes, for a violation's detail.
    fn owed(&self, next_step: usize) -> String {
        let plural = if next_step == 1 { "" } else { "s" };
        let steps = format!("the {next_step} next-step message{plural}");
        match (self.owes_next_step, self.owes_head) {
            (true, true) => format!("{steps} and the next-turn head"),
            (true, false) => steps,
            (false, _) => "the next-turn head".into(),
        }
    }
}

/// The ghost replay of a durable log.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct History {
    mode: Mode,
    next_turn: Pending<MessageId>,
    next_step: Pending<MessageId>,
    /// Both lists, indexed.
    pending_index: Index,
    last_turn: u64,
    turn: Option<OpenTurn>,
    /// The previous durable output opened a step or admitted a message.
    admitting: bool,
    /// The agent stopped or restarted, so only a waking send (a splice that
    /// appends one message) may open the next turn ([`Mode::Log`] only: the
    /// [`Checker`](crate::Checker) sees a core's wakeups themselves).
    parked: Option<Parked>,
    /// How to take back each output observed, while recording.
    undo: Undoing,
}

/// Why a log's agent is idle until a waking send: what a log can show of
/// SPEC §7 `stop-parks` and `no-wake-stays-idle` (a send always writes its
/// splice; a stop, unlike a normal end, never opens the next turn, and a
/// restart resumes idle and wakes nothing, Decision 7).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Parked {
    /// The driver stopped without the pending check: `turn/end blocked`,
    /// `error`, or `completed` before any step (an empty first batch). Its
    /// turn was not aborted, so no latch can replay it (SPEC §5).
    Stop,
    /// A restart: its `turn/end interrupted` closer, or the
    /// `session/end-seed` marker dsh's resume appends.
    Restart,
    /// A turn ended `aborted` with work pending and no send onto
    /// `next-turn` since it began: an abort parks what is pending (Decision
    /// 4), and only a waking send accepted while aborted, which always
    /// lands on `next-turn` (SPEC §5), latches a replay. (A send before the
    /// abort looks the same in a log, so one since the turn began is let
    /// through.)
    Abort,
    /// A turn ended `aborted:disposed`: dispose is final (SPEC §5), so no
    /// send is accepted and no latch replays (SPEC §7 `no-wake-stays-idle`:
    /// no replay is owed after a dispose; dsh's `agent.ts` never latches
    /// while its abort reason is `disposed`). Only a restart ends it: its
    /// marker or closers, or, in a log it left balanced (a resume of which
    /// writes nothing), the first send, which only a restarted agent
    /// accepts.
    Disposed,
    /// Idle with nothing pending: a new session or fork, or a turn that
    /// ended with nothing pending (a normal end then retires, and a latch
    /// replays only pending work). A driver starts only at a waking send,
    /// which writes its splice first, even when a hook then removes it
    /// (dsh: "A wake sent while idle always opens its turn boundary").
    Idle,
}

/// How to take back the outputs a [`History`] observed, one record each,
/// while it records ([`History::record_undo`]): a restart that loses the
/// log's last events undoes them in the ghost, in time proportional to what
/// they moved, instead of replaying the kept log from a copy of a replay of
/// one of its prefixes (a copy of every pending id: quadratic in a run of
/// restarts over a long inbox). Derived from the log, so it takes no part
/// in equality or hashing.
#[derive(Clone, Debug, Default)]
struct Undoing(Option<Vec<Undo>>);

impl PartialEq for Undoing {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Undoing {}

impl Hash for Undoing {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// One observed output, taken back: everything it may have changed but
/// the lists as it stood before, and how to put the lists back. The open
/// turn is kept without its admitted ids: a restart closes the turn it
/// reopens, so they are never read again (and copying them at every output
/// of a step that admitted thousands would be quadratic).
#[derive(Clone, Debug)]
struct Undo {
    last_turn: u64,
    admitting: bool,
    parked: Option<Parked>,
    turn: Option<OpenTurn>,
    lists: Option<Lists>,
}

/// A splice turned around: remove what it inserted, put back what it removed.
#[derive(Clone, Debug)]
struct Lists {
    target: Target,
    start: usize,
    inserted: usize,
    removed: Vec<MessageId>,
}

impl OpenTurn {
    /// This turn with no admitted ids.
    fn shell(&self) -> Self {
        // A recording harness takes a shell at every durable output: the
        // claimed lists are copied as a slice, and the batch (empty but in
        // [`Mode::Log`]) is cloned only when it holds ids (`SmallVec`'s
        // clone collects item by item, even from nothing).
        let batch = if self.batch.is_empty() {
            SmallVec::new()
        } else {
            self.batch.clone()
        };
        Self {
            boundary_claims: SmallVec::from_slice(&self.boundary_claims),
            batch,
            batch_index: self.batch_index.clone(),
            admitted: SmallVec::new(),
            admitted_index: Index::default(),
            ..*self
        }
    }
}

/// How many times each id occurs in an ordered list of ids (placeholder ids
/// of a log may occur more than once), built only once the list is long: a
/// model checker clones histories of a few ids millions of times, where a
/// scan is cheaper than a table, while a log may keep a million pending.
/// Derived from the list it mirrors, so it takes no part in equality or
/// hashing.
#[derive(Clone, Debug, Default)]
struct Index(Option<FxHashMap<MessageId, u32>>);

impl Index {
    /// The list length from which the table is kept.
    const FROM: usize = 32;

    /// Whether `id` is in the list, which `list` iterates.
    fn contains<'a>(&self, id: &MessageId, list: impl IntoIterator<Item = &'a MessageId>) -> bool {
        match &self.0 {
            Some(table) => table.contains_key(id),
            None => list.into_iter().any(|listed| listed == id),
        }
    }

    /// `id` joins the list.
    fn insert(&mut self, id: &MessageId) {
        if let Some(table) = &mut self.0 {
            *table.entry(id.clone()).or_default() += 1;
        }
    }

    /// `id` leaves the list.
    fn remove(&mut self, id: &MessageId) {
        if let Some(table) = &mut self.0
            && let Some(count) = table.get_mut(id)
        {
            *count -= 1;
            if *count == 0 {
                table.remove(id);
            }
        }
    }

    /// Builds the table when the list, which `list` iterates, reaches
    /// `length` ids; drops it when the list is empty.
    fn fit<'a>(&mut self, length: usize, list: impl IntoIterator<Item = &'a MessageId>) {
        if length == 0 {
            self.0 = None;
        } else if self.0.is_none() && length >= Self::FROM {
            let mut table = FxHashMap::default();
            for id in list {
                *table.entry(id.clone()).or_default() += 1;
            }
            self.0 = Some(table);
        }
    }
}

impl PartialEq for Index {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Index {}

impl Hash for Index {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl History {
    /// An empty log.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            next_turn: Pending::default(),
            next_step: Pending::default(),
            pending_index: Index::default(),
            last_turn: 0,
            turn: None,
            admitting: false,
            parked: Self::parked_idle(mode),
            undo: Undoing::default(),
        }
    }

    /// A log's agent starts idle with nothing pending; the
    /// [`Checker`](crate::Checker) sees a core's wakeups themselves.
    fn parked_idle(mode: Mode) -> Option<Parked> {
        (mode == Mode::Log).then_some(Parked::Idle)
    }

    /// The ghost list of `target`.
    pub fn list(&self, target: Target) -> &Pending<MessageId> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    fn list_mut(&mut self, target: Target) -> &mut Pending<MessageId> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Every pending occurrence, `next-step` first.
    pub fn pending(&self) -> impl Iterator<Item = &MessageId> {
        self.next_step.iter().chain(&self.next_turn)
    }

    /// Whether anything is pending.
    pub fn has_pending(&self) -> bool {
        !self.next_turn.is_empty() || !self.next_step.is_empty()
    }

    /// The closers a restart over this log must write (SPEC §11):
    /// `step/end` of an open step, then `turn/end interrupted` of an open turn.
    pub fn closers(&self) -> Vec<Output> {
        let Some(turn) = &self.turn else {
            return Vec::new();
        };
        let number = turn.number;
        let step_end = turn.step_open.then_some(Output::StepEnd {
            turn: number,
            step: turn.last_step,
        });
        let turn_end = Output::TurnEnd {
            turn: number,
            reason: TurnEnd::Interrupted,
        };
        step_end.into_iter().chain([turn_end]).collect()
    }

    /// The open turn's number.
    pub fn open_turn(&self) -> Option<u64> {
        self.turn.as_ref().map(|turn| turn.number)
    }

    /// Whether the open turn has opened a step yet.
    pub(crate) fn turn_has_stepped(&self) -> bool {
        self.turn.as_ref().is_some_and(|turn| turn.last_step > 0)
    }

    /// The ids admitted in the open step, in admission order.
    pub fn admitted(&self) -> &[MessageId] {
        self.turn.as_ref().map_or(&[], |turn| &turn.admitted)
    }

    /// Hashes everything but the two ghost lists (see `Checker::hash_canonical`);
    /// destructured, so a new field cannot be left out silently.
    pub(crate) fn hash_turns<H: std::hash::Hasher>(&self, hasher: &mut H) {
        use std::hash::Hash;
        let Self {
            mode,
            next_turn: _,
            next_step: _,
            pending_index: _,
            last_turn,
            turn,
            admitting,
            parked,
            undo: _,
        } = self;
        mode.hash(hasher);
        last_turn.hash(hasher);
        turn.hash(hasher);
        admitting.hash(hasher);
        parked.hash(hasher);
    }

    /// A fork's copied history ends: the child's inbox starts empty, turn
    /// numbers continue.
    pub(crate) fn end_seed(&mut self) {
        *self = self.forked();
    }

    /// The history a fork's boundary here leaves ([`History::end_seed`]),
    /// built without copying the lists it empties: a seed read both ways
    /// builds one at each of its markers (linear in the log, not markers
    /// times pending).
    pub(crate) fn forked(&self) -> Self {
        Self {
            last_turn: self.last_turn,
            undo: self.undo.clone(),
            ..Self::new(self.mode)
        }
    }

    /// Whether a `user/message` of `id` now would admit an occurrence the
    /// boundary claimed: a pre-step's entry (right after `step/start` or
    /// another entry) of an id in the claimed batch, or of a placeholder,
    /// which has no identity to look up ([`Mode::Log`] only). An id outside
    /// the batch, or one entered after the pre-step, is context (SPEC §7).
    pub fn admits(&self, id: &MessageId) -> bool {
        let claimed = |turn: &OpenTurn| turn.batch_index.contains(id, &turn.batch);
        let batch = self.turn.as_ref().is_some_and(claimed);
        self.admitting && (batch || !self.has_identity(id))
    }

    /// An event outside the contract (the model's answer, a tool's call or
    /// result): the open step's pre-step is over, so a `user/message` after
    /// it is a tool's context, which the boundary's claimed batch is not.
    pub fn other_event(&mut self) {
        self.admitting = false;
    }

    /// A resume's `session/end-seed` marker (any but a fork's boundary):
    /// the agent resumed idle (SPEC §11). A resume writes its closers before
    /// its marker (dsh's `prepareCore`: `interruptedTurnClosers`), so a turn
    /// still open here is a restart that wrote none.
    pub fn resumed(&mut self) -> Result<(), Violation> {
        if let Some(turn) = &self.turn {
            let number = turn.number;
            return Err(Violation::new(
                Property::ResumeCloses,
                format!("session/end-seed while turn {number} is open: a resume closes it first"),
            ));
        }
        self.parked = Some(Parked::Restart);
        Ok(())
    }

    /// Whether `id` carries identity (placeholders in logs do not).
    fn has_identity(&self, id: &MessageId) -> bool {
        self.mode == Mode::Core || !is_placeholder(id)
    }

    fn is_pending(&self, id: &MessageId) -> bool {
        self.has_identity(id) && self.pending_index.contains(id, self.pending())
    }

    /// Records from now on how to take back each output it observes, for
    /// [`History::undo`] (a harness that restarts from its durable log).
    pub(crate) fn record_undo(&mut self) {
        self.undo.0.get_or_insert_default();
    }

    /// Stops recording and forgets what it recorded.
    pub(crate) fn stop_recording_undo(&mut self) {
        self.undo.0 = None;
    }

    /// How many of the last outputs observed [`History::undo`] can take
    /// back: all since recording began (the log's events since the
    /// session's start), unless a violation stopped it.
    pub(crate) fn undoable(&self) -> Option<usize> {
        self.undo.0.as_ref().map(Vec::len)
    }

    /// Takes back the last `count` outputs observed (at most
    /// [`History::undoable`]): the history of the log less them.
    pub(crate) fn undo(&mut self, count: usize) {
        let Some(mut records) = self.undo.0.take() else {
            return;
        };
        let kept = records.len() - count.min(records.len());
        for undo in records.drain(kept..).rev() {
            self.take_back(undo);
        }
        self.undo.0 = Some(records);
    }

    fn take_back(&mut self, undo: Undo) {
        let Undo {
            last_turn,
            admitting,
            parked,
            turn,
            lists,
        } = undo;
        if let Some(lists) = lists {
            self.put_back(lists);
        }
        self.last_turn = last_turn;
        self.admitting = admitting;
        self.parked = parked;
        self.turn = turn;
    }

    /// Undoes a splice: removes the ids it inserted, puts back those it
    /// removed.
    fn put_back(&mut self, lists: Lists) {
        let Lists {
            target,
            start,
            inserted,
            removed,
        } = lists;
        for id in self.list_mut(target).remove(start..start + inserted) {
            self.pending_index.remove(&id);
        }
        let length = self.next_turn.len() + self.next_step.len() + removed.len();
        let pending = self.next_step.iter().chain(&self.next_turn);
        self.pending_index.fit(length, pending);
        for id in &removed {
            self.pending_index.insert(id);
        }
        self.list_mut(target).insert(start, removed);
    }

    /// What an output may change, as it stands before it (see [`Undo`]).
    fn before(&self) -> Undo {
        Undo {
            last_turn: self.last_turn,
            admitting: self.admitting,
            parked: self.parked,
            turn: self.turn.as_ref().map(OpenTurn::shell),
            lists: None,
        }
    }

    /// Checks and applies one durable output; live outputs are ignored.
    pub fn observe(&mut self, output: &Output) -> Result<Effect, Violation> {
        if !output.is_durable() {
            return self.apply(output);
        }
        let Some(mut records) = self.undo.0.take() else {
            return self.apply(output);
        };
        // A violation (the `?` below) stops the recording: the history no
        // longer mirrors its log, and the run has failed.
        let before = self.before();
        let effect = self.apply(output)?;
        let lists = output.splice().map(|splice| Lists {
            target: splice.target,
            start: splice.start,
            inserted: effect.inserted.len(),
            removed: effect.removed.clone(),
        });
        records.push(Undo { lists, ..before });
        self.undo.0 = Some(records);
        Ok(effect)
    }

    fn apply(&mut self, output: &Output) -> Result<Effect, Violation> {
        // Checked after the output's own checks, which name a broken
        // sequence more precisely (a second `step/end` is `balanced`).
        let empty_first_step = self.empty_first_step();
        let effect = self.apply_output(output)?;
        match empty_first_step {
            Some(turn) => check_empty_first_step(turn, output).map(|()| effect),
            None => Ok(effect),
        }
    }

    /// The open turn's number when its first step ended having entered
    /// nothing ([`Mode::Log`] only).
    fn empty_first_step(&self) -> Option<u64> {
        let turn = self.turn.as_ref()?;
        (self.mode == Mode::Log && turn.empty_first_step).then_some(turn.number)
    }

    fn apply_output(&mut self, output: &Output) -> Result<Effect, Violation> {
        let admitting = std::mem::replace(&mut self.admitting, false);
        match output {
            Output::Spliced(splice) => return self.splice(splice),
            Output::TurnStart { turn } => self.turn_start(*turn)?,
            Output::StepStart { turn, step } => self.step_start(*turn, *step)?,
            Output::UserMessage(message) => self.user_message(message, admitting)?,
            Output::StepEnd { turn, step } => self.step_end(*turn, *step)?,
            Output::TurnEnd { turn, reason } => self.turn_end(*turn, reason)?,
            Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => self.admitting = admitting,
        }
        Ok(Effect::default())
    }

    fn splice(&mut self, splice: &Splice) -> Result<Effect, Violation> {
        let length = self.list(splice.target).len();
        let target = splice.target.as_str();
        // A splice that does not apply to the replayed lists: the log's
        // inbox is not the replay of its splices (SPEC §11's corrupt log).
        ensure(splice.start <= length, Property::ReplayMatches, || {
            format!(
                "{target} splice starts at {} past length {length}",
                splice.start
            )
        })?;
        let available = length - splice.start;
        ensure(
            splice.removed_count <= available,
            Property::ReplayMatches,
            || {
                format!(
                    "{target} splice at {} removes {} of {available}",
                    splice.start, splice.removed_count
                )
            },
        )?;
        let claim = splice.outcome.is_none() && splice.removed_count > 0;
        if claim {
            self.check_claim(splice)?;
        }
        let next_step = self.next_step.len();
        let range = splice.start..splice.start + splice.removed_count;
        // Most splices (a send, an append) remove nothing: skip the empty
        // drain, as the core's `Inbox::apply` does.
        let removed = if range.is_empty() {
            Vec::new()
        } else {
            self.list_mut(splice.target).remove(range)
        };
        for id in &removed {
            self.pending_index.remove(id);
        }
        let inserted = self.insert(splice)?;
        // Maybe a waking send: a send writes one message onto the end of its
        // list and nothing else (SPEC §5), so an `append` looks the same; a
        // replace, a prepend or a splice of several is an edit, which never
        // wakes.
        let send = splice.outcome.is_none()
            && splice.removed_count == 0
            && splice.start == length
            && inserted.len() == 1;
        if send {
            self.parked = None;
            if let (Mode::Log, Target::NextTurn, Some(turn)) =
                (self.mode, splice.target, self.turn.as_mut())
            {
                turn.latchable = true;
            }
        }
        // The log-only checks come after those above, which name the
        // property of a splice that breaks both.
        if self.mode == Mode::Log {
            self.check_written(splice)?;
        }
        if claim {
            self.note_claim(splice.target, &removed);
        } else {
            self.note_boundary_splice(splice, next_step)?;
        }
        Ok(Effect {
            removed,
            inserted,
            claim,
        })
    }

    /// Checks each inserted id is not pending (nor inserted twice), then
    /// puts them in place.
    fn insert(&mut self, splice: &Splice) -> Result<SmallVec<[MessageId; 2]>, Violation> {
        // Pushed one by one, as `Checker`'s supplied messages (cheaper
        // than `extend` for the usual one or two).
        let mut ids: SmallVec<[MessageId; 2]> = SmallVec::new();
        for message in &splice.inserted {
            ids.push(message.id().clone());
        }
        let length = self.next_turn.len() + self.next_step.len() + ids.len();
        let pending = self.next_step.iter().chain(&self.next_turn);
        self.pending_index.fit(length, pending);
        for (at, id) in ids.iter().enumerate() {
            let listed = self.next_step.iter().chain(&self.next_turn);
            let seen = listed.chain(&ids[..at]);
            let pending = self.has_identity(id) && self.pending_index.contains(id, seen);
            ensure(!pending, Property::UniquePending, || {
                format!(
                    "{id} inserted into {} while pending",
                    splice.target.as_str()
                )
            })?;
            self.pending_index.insert(id);
        }
        self.list_mut(splice.target)
            .insert(splice.start, ids.iter().cloned());
        Ok(ids)
    }

    /// A log holds only splices the core writes (SPEC §5): one that changes
    /// nothing is not written, and `outcome` marks a removal, never a pure
    /// insertion (none of dsh's logs has either). The core's own splices
    /// are built so ([`Mode::Core`]).
    fn check_written(&self, splice: &Splice) -> Result<(), Violation> {
        let target = splice.target.as_str();
        let start = splice.start;
        let removes = splice.removed_count > 0;
        ensure(
            removes || !splice.inserted.is_empty(),
            Property::SpliceNormalized,
            || format!("{target} splice at {start} removes and inserts nothing"),
        )?;
        ensure(
            removes || splice.outcome.is_none(),
            Property::SpliceNormalized,
            || format!("{target} splice at {start} removes nothing but has an outcome"),
        )
    }

    /// A splice that is not a claim ends a first boundary's claims, which
    /// must all have come (see [`Window::First`]), and is noted at a later
    /// one; `next_step` is the length of `next-step` before the splice.
    fn note_boundary_splice(&mut self, splice: &Splice, next_step: usize) -> Result<(), Violation> {
        let Some(turn) = self.turn.as_mut().filter(|turn| !turn.step_open) else {
            return Ok(());
        };
        let boundary = turn.boundary;
        match boundary.window {
            Window::First => {}
            Window::Later => {
                turn.boundary.spliced = true;
                // The claim takes `next-step` as the hooks left it: a
                // hook's removal of all of it leaves nothing owed.
                turn.boundary.owes_next_step &= !self.next_step.is_empty();
                return Ok(());
            }
            Window::Closed => return Ok(()),
        }
        let number = turn.number;
        ensure(!boundary.owes(), Property::ClaimShape, || {
            let target = splice.target.as_str();
            let owed = boundary.owed(next_step);
            format!("{target} splice in turn {number}'s first boundary before it claimed {owed}")
        })?;
        turn.boundary.window = Window::Closed;
        Ok(())
    }

    /// Claims are pure deletions from the front, inside an open turn and
    /// outside a step, `next-step` before the head, one head per turn.
    fn check_claim(&self, splice: &Splice) -> Result<(), Violation> {
        let target = splice.target.as_str();
        ensure(splice.inserted.is_empty(), Property::ClaimShape, || {
            format!("{target} removal without outcome also inserts")
        })?;
        ensure(splice.start == 0, Property::ClaimShape, || {
            format!("{target} claim starts at {}, not the front", splice.start)
        })?;
        let Some(turn) = &self.turn else {
            return Err(Violation::new(
                Property::ClaimShape,
                format!("{target} claim outside a turn"),
            ));
        };
        let number = turn.number;
        ensure(!turn.step_open, Property::ClaimShape, || {
            format!("{target} claim inside step {number}.{}", turn.last_step)
        })?;
        match splice.target {
            Target::NextStep => {
                ensure(
                    !turn.boundary_claims.contains(&Target::NextTurn),
                    Property::ClaimShape,
                    || format!("turn {number} claims next-step after the next-turn head"),
                )?;
                ensure(
                    !turn.boundary_claims.contains(&Target::NextStep),
                    Property::ClaimShape,
                    || format!("turn {number} claims next-step twice at one boundary"),
                )?;
                self.check_whole_next_step(number, splice.removed_count)?;
            }
            Target::NextTurn => {
                // In a log, `next-step` is claimed first (a crash may cut
                // the boundary after it, never before it).
                ensure(!turn.boundary.owes_next_step, Property::ClaimShape, || {
                    format!("turn {number} claims the next-turn head before next-step")
                })?;
                ensure(
                    splice.removed_count == 1,
                    Property::OnePromptPerTurn,
                    || {
                        format!(
                            "turn {number} claims {} next-turn messages",
                            splice.removed_count
                        )
                    },
                )?;
                ensure(!turn.prompt_claimed, Property::OnePromptPerTurn, || {
                    format!("turn {number} claims a second next-turn message")
                })?;
                ensure(turn.last_step == 0, Property::OnePromptPerTurn, || {
                    format!(
                        "turn {number} claims a next-turn message after step {}",
                        turn.last_step
                    )
                })?;
            }
        }
        // Only a log's boundaries have windows (see `opened`); checked last,
        // so a claim that also breaks a check above is named by it.
        let closed = self.mode == Mode::Log && turn.boundary.window == Window::Closed;
        ensure(!closed, Property::ClaimShape, || {
            format!("{target} claim in turn {number} after its first boundary's claims ended")
        })
    }

    /// A boundary claims all of `next-step` as it stood. In [`Mode::Core`]
    /// the [`Checker`](crate::Checker) checks the whole boundary against the
    /// transition; a log has no transitions, so [`Mode::Log`] checks it here.
    fn check_whole_next_step(&self, turn: u64, removed: usize) -> Result<(), Violation> {
        let length = self.next_step.len();
        let whole = self.mode == Mode::Core || removed == length;
        ensure(whole, Property::ClaimShape, || {
            format!("turn {turn} claims {removed} of the {length} next-step messages, not all")
        })
    }

    fn note_claim(&mut self, target: Target, removed: &[MessageId]) {
        let log = self.mode == Mode::Log;
        if let Some(turn) = &mut self.turn {
            // Only a log's batch is kept (the checker sees a core's per
            // transition), and only ids with an identity (`has_identity`).
            for id in removed.iter().filter(|id| log && !is_placeholder(id)) {
                turn.batch_index.insert(id);
                turn.batch.push(id.clone());
            }
            turn.batch_index.fit(turn.batch.len(), &turn.batch);
            turn.boundary_claims.push(target);
            turn.prompt_claimed |= target == Target::NextTurn;
            match target {
                Target::NextStep => turn.boundary.owes_next_step = false,
                Target::NextTurn => turn.boundary.owes_head = false,
            }
        }
    }

    fn turn_start(&mut self, number: u64) -> Result<(), Violation> {
        if let Some(open) = &self.turn {
            let open = open.number;
            return Err(Violation::new(
                Property::Balanced,
                format!("turn/start {number} while turn {open} is open"),
            ));
        }
        let expected = self.last_turn + 1;
        ensure(number == expected, Property::Balanced, || {
            format!("turn/start {number} where turn {expected} was next")
        })?;
        match self.parked {
            None => {}
            Some(Parked::Stop) => {
                return Err(Violation::new(
                    Property::StopParks,
                    format!(
                        "turn/start {number} after a stop (turn {}) with no send since: the work it parked waits for a waking send",
                        self.last_turn
                    ),
                ));
            }
            Some(Parked::Abort) => {
                return Err(Violation::new(
                    Property::StopParks,
                    format!(
                        "turn/start {number} after turn {} was aborted with work pending and no send onto next-turn since it began: an abort parks that work until a waking send",
                        self.last_turn
                    ),
                ));
            }
            Some(Parked::Disposed) => {
                return Err(Violation::new(
                    Property::NoWakeStaysIdle,
                    format!(
                        "turn/start {number} after turn {} ended aborted:disposed: a disposed agent starts no driver until a restart",
                        self.last_turn
                    ),
                ));
            }
            Some(Parked::Restart) => {
                return Err(Violation::new(
                    Property::NoWakeStaysIdle,
                    format!(
                        "turn/start {number} after a restart with no send since: a resume wakes nothing"
                    ),
                ));
            }
            Some(Parked::Idle) => {
                let since = match self.last_turn {
                    0 => "the session began".to_owned(),
                    turn => format!("turn {turn} ended with nothing pending"),
                };
                return Err(Violation::new(
                    Property::NoWakeStaysIdle,
                    format!(
                        "turn/start {number} with no send since {since}: only a waking send starts a driver"
                    ),
                ));
            }
        }
        self.last_turn = number;
        self.turn = Some(OpenTurn {
            number,
            last_step: 0,
            step_open: false,
            prompt_claimed: false,
            boundary_claims: SmallVec::new(),
            entered: false,
            empty_first_step: false,
            latchable: false,
            batch: SmallVec::new(),
            batch_index: Index::default(),
            admitted: SmallVec::new(),
            admitted_index: Index::default(),
            boundary: self.opened(Window::First),
        });
        Ok(())
    }

    /// The boundary a log opens now: what it owes is what is pending.
    /// Default (owing nothing) in [`Mode::Core`], whose state stays as the
    /// model checker hashes it.
    fn opened(&self, window: Window) -> Boundary {
        if self.mode == Mode::Core {
            return Boundary::default();
        }
        Boundary {
            window,
            owes_next_step: !self.next_step.is_empty(),
            owes_head: window == Window::First && !self.next_turn.is_empty(),
            spliced: false,
        }
    }

    fn open(&mut self, what: &str, number: u64) -> Result<&mut OpenTurn, Violation> {
        let open = self.turn.as_ref().map(|turn| turn.number);
        match (open, &mut self.turn) {
            (Some(open), Some(turn)) if open == number => Ok(turn),
            (Some(open), _) => Err(Violation::new(
                Property::Balanced,
                format!("{what} names turn {number} but turn {open} is open"),
            )),
            (None, _) => Err(Violation::new(
                Property::Balanced,
                format!("{what} names turn {number} but no turn is open"),
            )),
        }
    }

    fn step_start(&mut self, number: u64, step: u64) -> Result<(), Violation> {
        let next_step = self.next_step.len();
        let turn = self.open("step/start", number)?;
        ensure(!turn.step_open, Property::Balanced, || {
            format!(
                "step/start {number}.{step} inside step {number}.{}",
                turn.last_step
            )
        })?;
        let expected = turn.last_step + 1;
        ensure(step == expected, Property::Balanced, || {
            format!("step/start {number}.{step} where step {number}.{expected} was next")
        })?;
        let boundary = std::mem::take(&mut turn.boundary);
        ensure(!boundary.owes(), Property::ClaimShape, || {
            let owed = boundary.owed(next_step);
            format!("step/start {number}.{step} though its boundary did not claim {owed}")
        })?;
        turn.last_step = step;
        turn.step_open = true;
        turn.entered = false;
        turn.admitted.clear();
        turn.admitted_index = Index::default();
        self.admitting = true;
        Ok(())
    }

    fn user_message(&mut self, message: &Message, admitting: bool) -> Result<(), Violation> {
        let id = message.id();
        let identity = self.has_identity(id);
        let pending = self.is_pending(id);
        let strict = self.mode == Mode::Core;
        let Some(turn) = self.turn.as_mut().filter(|turn| turn.step_open) else {
            return Err(Violation::new(
                Property::Admission,
                format!("user/message {id} outside an open step"),
            ));
        };
        // Formatted only for a violation: this runs for every admission.
        let (number, last_step) = (turn.number, turn.last_step);
        let step = || format!("{number}.{last_step}");
        ensure(admitting || !strict, Property::Admission, || {
            format!("user/message {id} not right after step/start {}", step())
        })?;
        let claimed = !admitting && turn.batch_index.contains(id, &turn.batch);
        ensure(!claimed, Property::Admission, || {
            format!(
                "user/message {id}, claimed for step {}, enters it after its pre-step, not right after step/start",
                step()
            )
        })?;
        ensure(!pending, Property::Admission, || {
            format!("user/message {id} in step {} while {id} is pending", step())
        })?;
        // Only the pre-step's entries: a tool's context later in the step
        // does not make an empty first batch a step.
        turn.entered |= !strict && admitting;
        if identity {
            let twice = turn.admitted_index.contains(id, &turn.admitted);
            ensure(!twice, Property::Admission, || {
                format!("user/message {id} admitted twice in step {}", step())
            })?;
            turn.admitted.push(id.clone());
            turn.admitted_index.insert(id);
            turn.admitted_index.fit(turn.admitted.len(), &turn.admitted);
        }
        // A tool's context does not reopen the pre-step's entries.
        self.admitting = admitting;
        Ok(())
    }

    fn step_end(&mut self, number: u64, step: u64) -> Result<(), Violation> {
        let log = self.mode == Mode::Log;
        let turn = self.open("step/end", number)?;
        let last = turn.last_step;
        ensure(
            turn.step_open && step == last,
            Property::Balanced,
            || match (turn.step_open, last) {
                (true, _) => {
                    format!("step/end {number}.{step} but the open step is {number}.{last}")
                }
                (false, 0) => {
                    format!("step/end {number}.{step} but no step of turn {number} has started")
                }
                (false, _) => format!(
                    "step/end {number}.{step} but no step is open (step {number}.{last} has ended)"
                ),
            },
        )?;
        turn.step_open = false;
        turn.boundary_claims.clear();
        turn.batch.clear();
        turn.batch_index = Index::default();
        turn.empty_first_step = log && step == 1 && !turn.entered;
        let boundary = self.opened(Window::Later);
        if let Some(turn) = &mut self.turn {
            turn.boundary = boundary;
        }
        Ok(())
    }

    fn turn_end(&mut self, number: u64, reason: &TurnEnd) -> Result<(), Violation> {
        let next_step = self.next_step.len();
        let turn = self.open("turn/end", number)?;
        let step = turn.last_step;
        let latchable = turn.latchable;
        // A restart's repair writes the open step's `step/end` first.
        let property = match reason {
            TurnEnd::Interrupted => Property::ResumeCloses,
            TurnEnd::Completed
            | TurnEnd::MaxTokens
            | TurnEnd::Blocked
            | TurnEnd::Aborted { .. }
            | TurnEnd::Error => Property::Balanced,
        };
        ensure(!turn.step_open, property, || {
            format!("turn/end {number} {reason} inside step {number}.{step}")
        })?;
        // A first boundary claims in `turn/start`'s transition, so only a
        // crash's closer comes before its claims; a later boundary is
        // opened only by a step that did not abort or fail, which the log
        // cannot tell, so its end is not checked.
        let boundary = turn.boundary;
        let first = boundary.window == Window::First && *reason != TurnEnd::Interrupted;
        ensure(!(first && boundary.owes()), Property::ClaimShape, || {
            let owed = boundary.owed(next_step);
            format!("turn/end {number} {reason} though its first boundary did not claim {owed}")
        })?;
        // After `step/end`, a turn ends `completed` or `max-tokens` only with
        // `next-step` empty, else the next boundary claims it (SPEC §5; dsh
        // checks `nextStep.length === 0` right before the end); `blocked` is
        // a `pre-step` answer, so that boundary claimed what it owed. A
        // step that aborted or failed ends its turn whatever is pending.
        let later = boundary.window == Window::Later;
        let unclaimed = later && !turn.boundary_claims.contains(&Target::NextStep);
        let owed = match reason {
            TurnEnd::Completed | TurnEnd::MaxTokens => unclaimed && next_step > 0,
            TurnEnd::Blocked => later && boundary.owes_next_step && !boundary.spliced,
            TurnEnd::Aborted { .. } | TurnEnd::Error | TurnEnd::Interrupted => false,
        };
        ensure(!owed, Property::ClaimShape, || {
            let plural = if next_step == 1 { "" } else { "s" };
            format!(
                "turn/end {number} {reason} though the boundary after step {number}.{step} did not claim the {next_step} next-step message{plural}"
            )
        })?;
        self.turn = None;
        if self.mode == Mode::Log {
            self.parked = match reason {
                TurnEnd::Blocked | TurnEnd::Error => Some(Parked::Stop),
                // No step, so no step owed `max-tokens`: a stepless end
                // is the empty first batch's stop whatever it is called.
                TurnEnd::Completed | TurnEnd::MaxTokens if step == 0 => Some(Parked::Stop),
                TurnEnd::Interrupted => Some(Parked::Restart),
                TurnEnd::Aborted {
                    reason: Cause::Disposed,
                } => Some(Parked::Disposed),
                TurnEnd::Aborted { .. } if self.has_pending() => {
                    (!latchable).then_some(Parked::Abort)
                }
                TurnEnd::Completed | TurnEnd::MaxTokens | TurnEnd::Aborted { .. } => {
                    (!self.has_pending()).then_some(Parked::Idle)
                }
            };
        }
        Ok(())
    }
}

/// An empty first batch ends its turn `completed` with no step (SPEC §5;
/// dsh: "it spends no model call"), so a first step of turn `turn` that
/// entered nothing was cut by a crash: only its closer, `turn/end
/// interrupted`, may follow its `step/end`.
fn check_empty_first_step(turn: u64, output: &Output) -> Result<(), Violation> {
    let closer = matches!(
        output,
        Output::TurnEnd {
            reason: TurnEnd::Interrupted,
            ..
        }
    );
    ensure(closer || !output.is_durable(), Property::Admission, || {
        format!(
            "step {turn}.1 entered nothing: an empty first batch ends turn {turn} completed before any step"
        )
    })
}

/// `{{name}}` ids are snapshot placeholders shared by unrelated messages.
fn is_placeholder(id: &MessageId) -> bool {
    let id = id.as_str();
    id.starts_with("{{") && id.ends_with("}}")
}
