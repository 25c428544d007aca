//! The one vocabulary of Courier: every [`Input`] the core accepts (SPEC §3)
//! and every [`Output`] it emits (SPEC §4). The model checker explores these,
//! the simulator draws them, the transcript runner parses them, the runtime
//! drives them and the validator reads them; nothing defines a second copy.

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr, VariantArray};

use crate::inbox::Splice;
use crate::message::{CancelCause, Message, MessageId, Target, TurnEnd, Wakeup};

/// The point a running driver awaits. Serde and strum spell it the same
/// (kebab-case): JSON, `status` lines and refusals share the words.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Display)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AwaitPoint {
    /// The pre-step decision over a claimed batch.
    PreStep,
    /// The model step's outcome.
    Step,
}

/// What the pre-step listener decided about a claimed batch. Its words
/// (`pass`, `enter`, ...) come from the strum derives, as serde spells them.
/// [`PreStepKind`] lists its variants without the batch (the simulator
/// weighs its draws by it), so a new decision fails to compile where it
/// must be drawn.
#[derive(
    Clone,
    PartialEq,
    Eq,
    Hash,
    Debug,
    Serialize,
    Deserialize,
    EnumString,
    IntoStaticStr,
    strum::EnumDiscriminants,
)]
#[serde(tag = "decision", content = "batch", rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[strum_discriminants(
    name(PreStepKind),
    derive(Hash, VariantArray),
    doc = "The kind of a [`PreStepDecision`], in declaration order (`PreStepKind::VARIANTS`)."
)]
pub enum PreStepDecision {
    /// Enter the claimed batch as is.
    Pass,
    /// The complete entering batch: claimed messages (matched by id),
    /// reordered or dropped, plus new context messages.
    Enter(Vec<Message>),
    /// Reject the proposed step; the turn ends `blocked`.
    Reject,
    /// The listener threw; the turn ends `error`.
    Fail,
}

/// How a model step ended. Its words (`completed`, `max-tokens`, ...) come
/// from the strum derives, the same kebab-case serde writes, so transcripts,
/// the Explorer and JSON cannot drift apart; the model explores and the
/// simulator weighs `StepOutcome::VARIANTS`, so a new outcome is explored
/// and drawn (the simulator's weight is an exhaustive match).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Debug,
    Serialize,
    Deserialize,
    Display,
    EnumString,
    IntoStaticStr,
    VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum StepOutcome {
    /// A final answer: the turn owes `completed`.
    Completed,
    /// A truncated answer: the turn owes `max-tokens`.
    MaxTokens,
    /// The model called tools and owes another step.
    ToolCalls,
    /// The model call failed; the turn ends `error`.
    Fail,
}

/// One atomic transition's trigger: a client input or a driver completion.
///
/// [`InputKind`] lists its variants without their data (the simulator
/// weighs its draws by it), so a new input fails to compile wherever an
/// engine must handle it.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, strum::EnumDiscriminants)]
#[serde(tag = "input", rename_all = "kebab-case")]
#[strum_discriminants(
    name(InputKind),
    derive(Hash, strum::VariantArray),
    doc = "The kind of an [`Input`], in declaration order (`InputKind::VARIANTS`)."
)]
pub enum Input {
    /// `send(message, target, wakeup)`; see [`Input::followup`] and friends.
    Send {
        /// The complete message; the caller owns its id.
        message: Message,
        /// The queue it joins.
        target: Target,
        /// Whether it should make the model run.
        wakeup: Wakeup,
    },
    /// Edit: add at the end of a list (never wakes).
    Append {
        /// The list.
        target: Target,
        /// The message.
        message: Message,
    },
    /// Edit: add at the front of a list (never wakes).
    Prepend {
        /// The list.
        target: Target,
        /// The message.
        message: Message,
    },
    /// Edit: swap a pending message for another in place.
    Replace {
        /// The pending id to replace.
        id: MessageId,
        /// Its replacement.
        message: Message,
    },
    /// Edit: drop a pending message.
    Remove {
        /// The pending id to drop.
        id: MessageId,
    },
    /// Edit: the raw splice; coordinates are clamped.
    Splice {
        /// The list.
        target: Target,
        /// Where to start (clamped to the list length).
        start: usize,
        /// How many to remove (clamped to what exists).
        removed: usize,
        /// What to insert at `start`.
        inserted: Vec<Message>,
    },
    /// Abort the running turn; without `keep_inbox`, discard everything pending.
    Cancel {
        /// Why.
        cause: CancelCause,
        /// Keep queued and steering items (emits nothing by itself).
        keep_inbox: bool,
    },
    /// `cancel(disposed)` without keep-inbox, then refuse every later insertion.
    Dispose,
    /// Register a waiter that resolves at quiescence.
    WhenIdle,
    /// The pre-step listener's decision (valid only while awaiting pre-step).
    PreStep(PreStepDecision),
    /// The model step's outcome (valid only while awaiting step).
    Step(#[serde(deserialize_with = "outcome_of_step")] StepOutcome),
}

/// A step's outcome as its one key, whose value is `null` (`{"completed":
/// null}`). Read by hand: serde reads a unit variant inside an internally
/// tagged enum from an empty object too, so `{"completed":{}}` passed.
fn outcome_of_step<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<StepOutcome, D::Error> {
    use serde::de::{Error, Unexpected};
    use serde_json::Value;
    let outcome = std::collections::BTreeMap::<String, Value>::deserialize(deserializer)?;
    let mut entries = outcome.into_iter();
    let (Some((key, value)), None) = (entries.next(), entries.next()) else {
        return Err(D::Error::invalid_value(
            Unexpected::Map,
            &"map with a single key",
        ));
    };
    let Ok(outcome) = key.parse::<StepOutcome>() else {
        let names = <StepOutcome as strum::VariantNames>::VARIANTS;
        return Err(D::Error::unknown_variant(&key, names));
    };
    let unexpected = match &value {
        Value::Null => return Ok(outcome),
        Value::Bool(flag) => Unexpected::Bool(*flag),
        Value::Number(number) => match (number.as_u64(), number.as_i64()) {
            (Some(unsigned), _) => Unexpected::Unsigned(unsigned),
            (None, Some(signed)) => Unexpected::Signed(signed),
            (None, None) => Unexpected::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => Unexpected::Str(text),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    };
    Err(D::Error::invalid_type(unexpected, &"unit"))
}

/// The first key of `sent`, at any depth, that `read` (`sent` read as an
/// [`Input`] and written back) lacks: one serde ignored (a misspelt
/// `reason` in a cancel's cause), which would change nothing silently;
/// named by its path (`cause.reason`, `inserted[1].zz`). Engines that read
/// inputs from JSON (the protocol server, race reports) refuse it.
pub fn dropped_key(sent: &serde_json::Value, read: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let inside = |step: String, inner: String| match inner.starts_with('[') {
        true => format!("{step}{inner}"),
        false => format!("{step}.{inner}"),
    };
    match (sent, read) {
        (Value::Object(sent), Value::Object(read)) => {
            sent.iter().find_map(|(key, value)| match read.get(key) {
                None => Some(key.clone()),
                Some(kept) => dropped_key(value, kept).map(|inner| inside(key.clone(), inner)),
            })
        }
        (Value::Array(sent), Value::Array(read)) => {
            sent.iter()
                .zip(read)
                .enumerate()
                .find_map(|(index, (value, kept))| {
                    dropped_key(value, kept).map(|inner| inside(format!("[{index}]"), inner))
                })
        }
        _ => None,
    }
}

/// A JSON value read refusing a key given twice in one object, at any
/// depth: serde_json keeps the last silently, so `{"query":"inbox",
/// "query":"status"}` would be answered as one of the two. Engines that
/// read inputs from JSON (the protocol server, race reports) read them so.
pub struct UniqueJson(pub serde_json::Value);

impl<'de> serde::Deserialize<'de> for UniqueJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(UniqueJson)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::from(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::from(value))
    }

    fn visit_string<E>(self, value: String) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<serde_json::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueJson(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<serde_json::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let UniqueJson(value) = map.next_value()?;
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key `{key}`"
                )));
            }
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
}

impl Input {
    /// `followup = (next-turn, wake)`.
    pub fn followup(message: Message) -> Self {
        Self::send(message, Target::NextTurn, Wakeup::Wake)
    }

    /// `steer = (next-step, wake)`.
    pub fn steer(message: Message) -> Self {
        Self::send(message, Target::NextStep, Wakeup::Wake)
    }

    /// `inject = (next-step, no-wake)`.
    pub fn inject(message: Message) -> Self {
        Self::send(message, Target::NextStep, Wakeup::NoWake)
    }

    /// The primitive all three aliases fix a policy of.
    pub fn send(message: Message, target: Target, wakeup: Wakeup) -> Self {
        Self::Send {
            message,
            target,
            wakeup,
        }
    }

    /// Whether this input is a driver completion rather than a client input.
    /// Listed in full, so a new input must say.
    pub fn is_completion(&self) -> bool {
        match self {
            Self::PreStep(_) | Self::Step(_) => true,
            Self::Send { .. }
            | Self::Append { .. }
            | Self::Prepend { .. }
            | Self::Replace { .. }
            | Self::Remove { .. }
            | Self::Splice { .. }
            | Self::Cancel { .. }
            | Self::Dispose
            | Self::WhenIdle => false,
        }
    }

    /// Whether this is a waking send (`followup`, `steer`, or `send` with
    /// `wake`): the only input that may start a driver or latch a replay
    /// (SPEC §7 `no-wake-stays-idle`). Listed in full, so a new input must
    /// say.
    pub fn wakes(&self) -> bool {
        match self {
            Self::Send { wakeup, .. } => *wakeup == Wakeup::Wake,
            Self::Append { .. }
            | Self::Prepend { .. }
            | Self::Replace { .. }
            | Self::Remove { .. }
            | Self::Splice { .. }
            | Self::Cancel { .. }
            | Self::Dispose
            | Self::WhenIdle
            | Self::PreStep(_)
            | Self::Step(_) => false,
        }
    }

    /// What a cancel or dispose asks for; `None` for every other input.
    pub fn abort(&self) -> Option<Abort> {
        match self {
            Self::Cancel { keep_inbox, .. } => Some(Abort {
                keep_inbox: *keep_inbox,
                dispose: false,
            }),
            Self::Dispose => Some(Abort {
                keep_inbox: false,
                dispose: true,
            }),
            Self::Send { .. }
            | Self::Append { .. }
            | Self::Prepend { .. }
            | Self::Replace { .. }
            | Self::Remove { .. }
            | Self::Splice { .. }
            | Self::WhenIdle
            | Self::PreStep(_)
            | Self::Step(_) => None,
        }
    }

    /// The messages the input hands the inbox, in order (a refused input
    /// inserts none of them; `enter`'s batch is not an insertion). Listed
    /// in full, so a new input must say.
    pub fn supplied(&self) -> &[Message] {
        match self {
            Self::Send { message, .. }
            | Self::Append { message, .. }
            | Self::Prepend { message, .. }
            | Self::Replace { message, .. } => std::slice::from_ref(message),
            Self::Splice { inserted, .. } => inserted,
            Self::Remove { .. }
            | Self::Cancel { .. }
            | Self::Dispose
            | Self::WhenIdle
            | Self::PreStep(_)
            | Self::Step(_) => &[],
        }
    }
}

/// What a cancel or a dispose asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Abort {
    /// Keep the pending lists (a keep-inbox cancel).
    pub keep_inbox: bool,
    /// `dispose`: also refuse every later insertion.
    pub dispose: bool,
}

/// Whether the agent has a driver.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// No driver.
    Idle,
    /// A driver is running a turn.
    Running,
}

/// One thing the core emitted, in emission order. Durable variants form the
/// session log; live ones are notifications. JSON shapes follow the dsh logs.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum Output {
    /// Durable: one normalized inbox change.
    #[serde(rename = "agent/inbox/spliced")]
    Spliced(Splice),
    /// Durable: a turn opened.
    #[serde(rename = "turn/start")]
    TurnStart {
        /// Turn number, 1-based across drivers.
        turn: u64,
    },
    /// Durable: a step opened.
    #[serde(rename = "step/start")]
    StepStart {
        /// Its turn.
        turn: u64,
        /// Step number, 1-based within the turn.
        step: u64,
    },
    /// Durable: a message entered the model's view.
    #[serde(rename = "user/message")]
    UserMessage(Message),
    /// Durable: a step closed.
    #[serde(rename = "step/end")]
    StepEnd {
        /// Its turn.
        turn: u64,
        /// Its step.
        step: u64,
    },
    /// Durable: a turn closed.
    #[serde(rename = "turn/end")]
    TurnEnd {
        /// Its number.
        turn: u64,
        /// Why it ended.
        reason: TurnEnd,
    },
    /// Live: a message became pending.
    #[serde(rename = "agent/inbox/inserted")]
    Inserted {
        /// The message.
        message: Message,
    },
    /// Live: a boundary claimed a message for a turn.
    #[serde(rename = "agent/inbox/claimed")]
    Claimed {
        /// The message.
        message: Message,
        /// The claiming turn.
        turn: u64,
    },
    /// Live: an edit or cancel removed a pending message.
    #[serde(rename = "agent/inbox/discarded")]
    Discarded {
        /// The message.
        message: Message,
    },
    /// Live: the agent went idle or running.
    #[serde(rename = "agent/status")]
    Status {
        /// The new activity.
        status: Activity,
    },
    /// Live: the pre-step listener or the model step failed.
    #[serde(rename = "agent/error")]
    Error {
        /// The failing turn.
        turn: u64,
        /// The last step opened in it, 0 if none.
        step: u64,
    },
    /// Live: one `when-idle` waiter resolved.
    #[serde(rename = "idle")]
    Idle,
}

impl Output {
    /// Whether the output belongs in the durable session log. Listed in
    /// full, so a new output must say.
    pub fn is_durable(&self) -> bool {
        match self {
            Self::Spliced(_)
            | Self::TurnStart { .. }
            | Self::StepStart { .. }
            | Self::UserMessage(_)
            | Self::StepEnd { .. }
            | Self::TurnEnd { .. } => true,
            Self::Inserted { .. }
            | Self::Claimed { .. }
            | Self::Discarded { .. }
            | Self::Status { .. }
            | Self::Error { .. }
            | Self::Idle => false,
        }
    }

    /// The message a live inbox notification (`inserted`, `claimed`,
    /// `discarded`) is about; `None` for every other output.
    pub fn noticed(&self) -> Option<&Message> {
        match self {
            Self::Inserted { message }
            | Self::Claimed { message, .. }
            | Self::Discarded { message } => Some(message),
            Self::Spliced(_)
            | Self::TurnStart { .. }
            | Self::StepStart { .. }
            | Self::UserMessage(_)
            | Self::StepEnd { .. }
            | Self::TurnEnd { .. }
            | Self::Status { .. }
            | Self::Error { .. }
            | Self::Idle => None,
        }
    }

    /// The inbox change a `spliced` output carries; `None` for every other
    /// output. Listed in full, so a new output must say.
    pub fn splice(&self) -> Option<&Splice> {
        match self {
            Self::Spliced(splice) => Some(splice),
            Self::TurnStart { .. }
            | Self::StepStart { .. }
            | Self::UserMessage(_)
            | Self::StepEnd { .. }
            | Self::TurnEnd { .. }
            | Self::Inserted { .. }
            | Self::Claimed { .. }
            | Self::Discarded { .. }
            | Self::Status { .. }
            | Self::Error { .. }
            | Self::Idle => None,
        }
    }
}
