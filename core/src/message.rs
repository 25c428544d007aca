//! Plain values of delivery (SPEC §1): messages and the routing words.
//!
//! A [`Message`] is immutable once built and cheap to clone (one `Arc`), because
//! one accepted message keeps one representation: the inbox, the durable splice,
//! the live notifications and `user/message` all hold the same value.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHasher;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use strum::{Display, EnumString, IntoStaticStr};

use crate::hashing::StringHasher;

/// The opaque identity of one message. Delivery never mints ids.
#[derive(Clone, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(Arc<str>);

/// Equal by address first, then by bytes: an id is mostly compared with a
/// clone of itself (a checker's ghost list against the inbox, an index
/// entry), which then reads no bytes. `Arc<str>`'s own `==` compares bytes.
impl PartialEq for MessageId {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for MessageId {}

/// As the string: equal ids hash alike whatever their address.
impl Hash for MessageId {
    #[inline]
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.0.hash(hasher);
    }
}

impl MessageId {
    /// Wraps any string: ids are opaque to delivery.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, formatter)
    }
}

impl From<&str> for MessageId {
    fn from(id: &str) -> Self {
        Self::new(id)
    }
}

/// The role of a delivered message. Delivery only carries user-role input.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    /// Model-facing user-role content (prompts and injected context alike).
    #[default]
    User,
}

/// Who produced a message. Typed variants carry their producer's durable fields;
/// every other field (and every unknown kind) round-trips through `extra`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Source {
    /// A human prompt: the only kind for which "is this a human prompt?" holds.
    User {
        /// Fields this crate does not interpret.
        extra: Map<String, Value>,
    },
    /// Context a plugin produced.
    Plugin {
        /// The plugin's name.
        plugin: String,
        /// Fields this crate does not interpret (`form`, `summary`, ...).
        extra: Map<String, Value>,
    },
    /// A goal continuation round.
    Goal {
        /// The goal this round belongs to.
        goal_id: String,
        /// The goal's revision.
        revision: u64,
        /// The round; positive rounds advance by one per admitted message.
        round: u64,
        /// Fields this crate does not interpret.
        extra: Map<String, Value>,
    },
    /// Context a tool produced.
    Tool {
        /// Fields this crate does not interpret.
        extra: Map<String, Value>,
    },
    /// Any other producer kind, kept verbatim.
    Other {
        /// The producer kind as written.
        kind: String,
        /// Fields this crate does not interpret.
        extra: Map<String, Value>,
    },
}

impl Source {
    /// A human source with no extra fields.
    pub fn user() -> Self {
        Self::User { extra: Map::new() }
    }

    /// A plugin source with no extra fields.
    pub fn plugin(plugin: impl Into<String>) -> Self {
        Self::Plugin {
            plugin: plugin.into(),
            extra: Map::new(),
        }
    }

    /// A source of the given kind with its required fields defaulted, as the
    /// transcript's `source=<kind>` suffix asks.
    pub fn of_kind(kind: &str) -> Self {
        let extra = Map::new();
        match kind {
            "user" => Self::User { extra },
            "plugin" => Self::plugin("transcript"),
            "goal" => Self::Goal {
                goal_id: "transcript".into(),
                revision: 0,
                round: 0,
                extra,
            },
            "tool" => Self::Tool { extra },
            other => Self::Other {
                kind: other.into(),
                extra,
            },
        }
    }

    /// Why this source's JSON would not read back as a source (see
    /// [`Message::unreadable_when_logged`]), if it would not.
    fn unreadable_when_logged(&self) -> Option<String> {
        let (extra, written): (_, &[&str]) = match self {
            Self::User { extra } | Self::Tool { extra } => (extra, &["kind"]),
            Self::Plugin { extra, .. } => (extra, &["kind", "plugin"]),
            Self::Goal { extra, .. } => (extra, &["kind", "goalId", "revision", "round"]),
            Self::Other { kind, extra } => {
                if matches!(kind.as_str(), "user" | "plugin" | "goal" | "tool") {
                    return Some(format!(
                        "its source is `Other` of kind `{kind}`, which has a variant of its own"
                    ));
                }
                (extra, &["kind"])
            }
        };
        if extra.is_empty() {
            return None;
        }
        let repeated = written.iter().find(|key| extra.contains_key(**key))?;
        Some(format!(
            "its source's extra fields repeat `{repeated}`, which the source writes itself"
        ))
    }

    /// The `kind` field as serialized.
    pub fn kind(&self) -> &str {
        match self {
            Self::User { .. } => "user",
            Self::Plugin { .. } => "plugin",
            Self::Goal { .. } => "goal",
            Self::Tool { .. } => "tool",
            Self::Other { kind, .. } => kind,
        }
    }
}

impl Serialize for Source {
    /// `kind` first, then the variant's typed fields, then the extras, written
    /// straight to the serializer (no intermediate map: every log line of a
    /// message serializes its source).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (typed, extra) = match self {
            Self::User { extra } | Self::Tool { extra } | Self::Other { extra, .. } => (0, extra),
            Self::Plugin { extra, .. } => (1, extra),
            Self::Goal { extra, .. } => (3, extra),
        };
        let mut map = serializer.serialize_map(Some(1 + typed + extra.len()))?;
        map.serialize_entry("kind", self.kind())?;
        match self {
            Self::Plugin { plugin, .. } => map.serialize_entry("plugin", plugin)?,
            Self::Goal {
                goal_id,
                revision,
                round,
                ..
            } => {
                map.serialize_entry("goalId", goal_id)?;
                map.serialize_entry("revision", revision)?;
                map.serialize_entry("round", round)?;
            }
            Self::User { .. } | Self::Tool { .. } | Self::Other { .. } => {}
        }
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let UniqueKeys(mut extra) = UniqueKeys::deserialize(deserializer)?;
        let kind = match extra.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => return Err(D::Error::custom("source needs a string `kind`")),
        };
        // A missing field in serde's words (a reader that locates fields
        // climbs to the object lacking it); a present one of the wrong kind
        // named, with what belongs there, so the two read apart.
        let missing = |field: &str| {
            D::Error::custom(format!(
                "missing field `{field}` (a {kind} source needs it)"
            ))
        };
        let wrong = |field: &str, expected: &str, found: &Value| {
            D::Error::custom(format!(
                "{kind} source `{field}`: expected {expected}, found {}",
                described(found)
            ))
        };
        let mut take_string = |field: &str| match extra.remove(field) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(wrong(field, "a string", &other)),
            None => Err(missing(field)),
        };
        let mut source = match kind.as_str() {
            "user" => Self::User { extra },
            "tool" => Self::Tool { extra },
            "plugin" => {
                let plugin = take_string("plugin")?;
                Self::Plugin { plugin, extra }
            }
            "goal" => {
                let goal_id = take_string("goalId")?;
                let mut take_number = |field: &str| match extra.remove(field) {
                    Some(value) => value.as_u64().ok_or_else(|| {
                        let expected = "an integer from 0 to 18446744073709551615";
                        wrong(field, expected, &value)
                    }),
                    None => Err(missing(field)),
                };
                let revision = take_number("revision")?;
                let round = take_number("round")?;
                Self::Goal {
                    goal_id,
                    revision,
                    round,
                    extra,
                }
            }
            _ => Self::Other { kind, extra },
        };
        // Emptied by the removals above (the usual source is `kind` alone),
        // the map still holds the node it was read into: a message read
        // from a log or a report kept about 600 bytes for nothing.
        let (Self::User { extra }
        | Self::Tool { extra }
        | Self::Plugin { extra, .. }
        | Self::Goal { extra, .. }
        | Self::Other { extra, .. }) = &mut source;
        if extra.is_empty() {
            *extra = Map::new();
        }
        Ok(source)
    }
}

/// What a value is, for an error: a number as written, else its kind (a
/// string or object may be long, and is the writer's to see).
fn described(value: &Value) -> String {
    match value {
        Value::Number(number) => number.to_string(),
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A message's content. Most messages (every transcript's and workload's)
/// hold one text block naming their own id: kept as that fact instead of as
/// JSON, such a message costs no allocation for it (as a `Value` it was a
/// map node and four strings, about a kilobyte: a million pending messages
/// took a gigabyte). Its JSON, equality and digest are those of the `Value`
/// it stands for, which [`Content::of`] never keeps as `Json`.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Content {
    /// `[{"type": "text", "text": <the message's id>}]`.
    OwnIdText,
    /// Anything else.
    Json(Value),
}

impl Content {
    /// `content` for a message with `id`, in its one representation.
    fn of(id: &MessageId, content: Value) -> Self {
        match &content {
            Value::Array(blocks) => match blocks.as_slice() {
                [Value::Object(block)]
                    if block.len() == 2
                        && block.get("type").and_then(Value::as_str) == Some("text")
                        && block.get("text").and_then(Value::as_str) == Some(id.as_str()) =>
                {
                    Self::OwnIdText
                }
                _ => Self::Json(content),
            },
            _ => Self::Json(content),
        }
    }

    /// The JSON it stands for.
    fn value(&self, id: &MessageId) -> Cow<'_, Value> {
        match self {
            Self::OwnIdText => {
                Cow::Owned(serde_json::json!([{ "type": "text", "text": id.as_str() }]))
            }
            Self::Json(value) => Cow::Borrowed(value),
        }
    }
}

/// The fields of a message, shared behind one `Arc` by every holder.
#[derive(Clone, Debug)]
struct MessageData {
    id: MessageId,
    role: Role,
    content: Content,
    source: Source,
    /// Fields beyond the four (dsh writes none): kept, so a message read
    /// from a log is written back whole.
    extra: Map<String, Value>,
    /// [`Message::digest`], computed on first use; not part of the value.
    digest: OnceLock<u64>,
    /// The fields above as JSON, once a log line asked ([`Message::json`]):
    /// a logged message is written twice (its splice and its
    /// `user/message`), and encoding is most of what a log line costs. Not
    /// part of the value either.
    json: OnceLock<Box<str>>,
}

/// The fields as they are read (`content` as JSON).
struct Fields {
    id: MessageId,
    role: Role,
    content: Value,
    source: Source,
    extra: Map<String, Value>,
}

impl MessageData {
    fn new(
        Fields {
            id,
            role,
            content,
            source,
            extra,
        }: Fields,
    ) -> Self {
        Self {
            content: Content::of(&id, content),
            id,
            role,
            source,
            extra,
            digest: OnceLock::new(),
            json: OnceLock::new(),
        }
    }
}

impl Serialize for MessageData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_map(Some(4 + self.extra.len()))?;
        fields.serialize_entry("id", &self.id)?;
        fields.serialize_entry("role", &self.role)?;
        fields.serialize_entry("content", &*self.content.value(&self.id))?;
        fields.serialize_entry("source", &self.source)?;
        for (key, value) in &self.extra {
            fields.serialize_entry(key, value)?;
        }
        fields.end()
    }
}

impl<'de> Deserialize<'de> for MessageData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FieldsVisitor).map(Self::new)
    }
}

/// Reads a message object: the four fields once each, any other key once
/// too (a key named twice would lose one of its values).
struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a message: an object with `id`, `role`, `content` and `source`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        use serde::de::Error;
        // Checked before the value is read, so the error names the key.
        fn fresh<T, E: Error>(slot: &Option<T>, key: &'static str) -> Result<(), E> {
            match slot {
                None => Ok(()),
                Some(_) => Err(E::duplicate_field(key)),
            }
        }
        let (mut id, mut role, mut content, mut source) = (None, None, None, None);
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<FieldKey>()? {
            match key {
                FieldKey::Id => {
                    fresh(&id, "id")?;
                    id = Some(map.next_value()?);
                }
                FieldKey::Role => {
                    fresh(&role, "role")?;
                    role = Some(map.next_value()?);
                }
                FieldKey::Content => {
                    fresh(&content, "content")?;
                    content = Some(map.next_value()?);
                }
                FieldKey::Source => {
                    fresh(&source, "source")?;
                    source = Some(map.next_value()?);
                }
                FieldKey::Other(key) => {
                    if extra.contains_key(&key) {
                        return Err(A::Error::custom(format_args!("duplicate key `{key}`")));
                    }
                    extra.insert(key, map.next_value()?);
                }
            }
        }
        Ok(Fields {
            id: id.ok_or_else(|| A::Error::missing_field("id"))?,
            role: role.ok_or_else(|| A::Error::missing_field("role"))?,
            content: content.ok_or_else(|| A::Error::missing_field("content"))?,
            source: source.ok_or_else(|| A::Error::missing_field("source"))?,
            extra,
        })
    }
}

/// A message's key: the four are matched without allocating.
enum FieldKey {
    Id,
    Role,
    Content,
    Source,
    Other(String),
}

impl<'de> Deserialize<'de> for FieldKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = FieldKey;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a key")
            }

            fn visit_str<E>(self, key: &str) -> Result<FieldKey, E> {
                Ok(match key {
                    "id" => FieldKey::Id,
                    "role" => FieldKey::Role,
                    "content" => FieldKey::Content,
                    "source" => FieldKey::Source,
                    other => FieldKey::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A JSON object whose keys are each named once: serde_json's own `Map`
/// keeps the last of a repeated key, and the other value would be lost.
struct UniqueKeys(Map<String, Value>);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = UniqueKeys;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
                let mut keys = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if keys.contains_key(&key) {
                        return Err(serde::de::Error::custom(format_args!(
                            "duplicate key `{key}`"
                        )));
                    }
                    keys.insert(key, map.next_value()?);
                }
                Ok(UniqueKeys(keys))
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

// The value is the fields; the digest and the JSON are derived from them.
impl PartialEq for MessageData {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.id,
            self.role,
            &self.content,
            &self.source,
            &self.extra,
        ) == (
            &other.id,
            other.role,
            &other.content,
            &other.source,
            &other.extra,
        )
    }
}

impl Eq for MessageData {}

/// One identified, immutable user-role message (the seed's `UserMessage`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Message(Arc<MessageData>);

/// The id, then the [`Message::digest`] of the rest: the engines'
/// fingerprints hash every pending message of every state, and hashing the
/// JSON content each time was most of their cost.
impl Hash for Message {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.id().hash(hasher);
        self.digest().hash(hasher);
    }
}

impl Message {
    /// Freezes a message. Delivery only reads `id` and `source.kind`.
    pub fn new(id: MessageId, content: Value, source: Source) -> Self {
        Self(Arc::new(MessageData::new(Fields {
            id,
            role: Role::User,
            content,
            source,
            extra: Map::new(),
        })))
    }

    /// A message whose content is one text block holding its id; what
    /// transcripts and generated workloads send.
    pub fn text(id: impl Into<MessageId>, source: Source) -> Self {
        Self(Arc::new(MessageData {
            id: id.into(),
            role: Role::User,
            content: Content::OwnIdText,
            source,
            extra: Map::new(),
            digest: OnceLock::new(),
            json: OnceLock::new(),
        }))
    }

    /// The occurrence identity.
    pub fn id(&self) -> &MessageId {
        &self.0.id
    }

    /// The producer.
    pub fn source(&self) -> &Source {
        &self.0.source
    }

    /// The message as one JSON object, exactly as its `Serialize` writes
    /// it; encoded at the first call and kept as long as the message.
    pub fn json(&self) -> &str {
        self.0.json.get_or_init(|| {
            // Cannot fail: a message is strings, numbers and `Value`s under
            // string keys, and only a map with non-string keys or a failing
            // `Serialize` makes `serde_json::to_string` fail.
            let json = serde_json::to_string(self).expect("a message always serializes");
            json.into_boxed_str()
        })
    }

    /// A 64-bit digest of the role, content, source and extra fields (FxHash: fixed, the
    /// same in every run), in which every string equal to the message's own
    /// id is written as a marker. Messages that differ only in their id (a
    /// text block holding it, as [`Message::text`] builds) digest alike, so
    /// a hash canonical over id renaming can use it. Computed once per
    /// message, on first use (a sent message never pays for it).
    pub fn digest(&self) -> u64 {
        *self.0.digest.get_or_init(|| {
            let own = self.id().as_str().as_bytes();
            let mut hasher = StringHasher::new(FxHasher::default(), |inner, bytes| {
                if bytes == own {
                    inner.write_u8(OWN_ID);
                } else {
                    inner.write(bytes);
                }
            });
            let MessageData {
                id,
                role,
                content,
                source,
                extra,
                digest: _,
                json: _,
            } = &*self.0;
            (role, &*content.value(id), source, extra).hash(&mut hasher);
            hasher.finish()
        })
    }
}

/// How deep a message's own JSON may nest (its object is level 1) for
/// every log line that carries it to read back: a splice holds it at level
/// 4 (`{"data":{"inserted":[{...}]}}`), and serde_json reads at most
/// `DEPTH_LIMIT - 1` levels.
const LOGGED_DEPTH_MAX: usize = crate::log::DEPTH_LIMIT - 4;

/// The most a log line adds around a message (its envelope and splice
/// fields), with room to spare.
const ENVELOPE_BYTES: usize = 1024;

/// What [`Message::unreadable_when_logged`] learns of the values it walks:
/// an upper bound of their JSON's length, and whether a string holds two
/// stand-ins that would be written as one character.
struct Walk {
    bytes: usize,
    paired: bool,
}

impl Walk {
    /// Walks `value`, held at nesting `level`; `false` when it nests past
    /// [`LOGGED_DEPTH_MAX`] (the walk stops there: its recursion is
    /// bounded whatever the value).
    fn value(&mut self, value: &Value, level: usize) -> bool {
        // A scalar, its separator and its key's quotes at most.
        self.bytes = self.bytes.saturating_add(32);
        match value {
            Value::String(text) => {
                self.string(text);
                true
            }
            Value::Array(items) => {
                level < LOGGED_DEPTH_MAX && items.iter().all(|item| self.value(item, level + 1))
            }
            Value::Object(map) => level < LOGGED_DEPTH_MAX && self.map(map, level + 1),
            Value::Null | Value::Bool(_) | Value::Number(_) => true,
        }
    }

    /// Walks an object's fields, the object at `level`. Most messages
    /// carry no extra fields: an empty map costs one test.
    #[inline]
    fn map(&mut self, map: &Map<String, Value>, level: usize) -> bool {
        map.is_empty() || self.fields(map, level)
    }

    fn fields(&mut self, map: &Map<String, Value>, level: usize) -> bool {
        map.iter().all(|(key, value)| {
            self.string(key);
            self.value(value, level)
        })
    }

    /// A string's JSON: at most six bytes a byte (`\u001f`). An ASCII
    /// string (most ids and texts: one cheap pass) holds no stand-in.
    fn string(&mut self, text: &str) {
        self.bytes = self.bytes.saturating_add(text.len().saturating_mul(6));
        self.paired |= !text.is_ascii() && crate::log::escape::pairs_stand_ins(text);
    }
}

impl Message {
    /// Why a log line holding `messages` (a splice's insertions, or one
    /// message) would not read back as written, if it would not, and the
    /// message that makes it so: a resume must read every line an accepted
    /// send wrote (SPEC §11), so a runtime that logs text refuses such
    /// messages first. A value nested deeper than a log line holds; a
    /// source whose extra fields repeat one it writes itself (a duplicate
    /// key) or whose kind has its own variant (its fields then go
    /// unchecked); a string holding the stand-ins of a high and a low
    /// surrogate side by side (written as a pair, they read back as one
    /// other character); or a line longer than `line_bytes_max`.
    pub fn unreadable_when_logged(
        messages: &[Message],
        line_bytes_max: usize,
    ) -> Option<(&Message, String)> {
        let mut walk = Walk {
            bytes: 0,
            paired: false,
        };
        for message in messages {
            if let Some(why) = message.walk(&mut walk) {
                return Some((message, why));
            }
        }
        let room = line_bytes_max.saturating_sub(ENVELOPE_BYTES);
        if walk.bytes <= room {
            return None;
        }
        // The bound is rough; only lines near the limit are measured: each
        // message's JSON as written (a stand-in grows from four bytes to
        // six) and the comma after it.
        let written = messages.iter().fold(0_usize, |total, message| {
            let json = crate::log::escape::escaped_len(message.json());
            total.saturating_add(json).saturating_add(1)
        });
        let last = messages.last()?;
        (written > room).then(|| {
            (
                last,
                format!(
                    "its log line would be longer than a log line may be ({line_bytes_max} bytes)"
                ),
            )
        })
    }

    /// Walks this message into `walk`; why it would not read back, when
    /// that shows in the message alone.
    fn walk(&self, walk: &mut Walk) -> Option<String> {
        let MessageData {
            id,
            role: _,
            content,
            source,
            extra,
            digest: _,
            json: _,
        } = &*self.0;
        if let Some(why) = source.unreadable_when_logged() {
            return Some(why);
        }
        walk.string(id.as_str());
        let content = match content {
            Content::OwnIdText => true,
            Content::Json(value) => walk.value(value, 1),
        };
        let source = match source {
            Source::User { extra }
            | Source::Plugin { extra, .. }
            | Source::Goal { extra, .. }
            | Source::Tool { extra }
            | Source::Other { extra, .. } => walk.map(extra, 2),
        };
        if !(content && source && walk.map(extra, 1)) {
            return Some(format!(
                "its JSON nests more than {LOGGED_DEPTH_MAX} arrays and objects deep, \
                 more than a log line that carries it can hold"
            ));
        }
        walk.paired.then(|| {
            "a string in it holds the stand-ins of a high and a low surrogate side \
             by side, which a log writes as a pair and reads back as one other character"
                .to_owned()
        })
    }
}

/// Stands for the message's own id in its digest: never a byte of UTF-8,
/// so it cannot pass for a string's bytes.
const OWN_ID: u8 = 0xfd;

impl fmt::Debug for Message {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "Message({:?}, {})",
            self.id(),
            self.source().kind()
        )
    }
}

impl From<&str> for Message {
    /// A human text message whose content is its id.
    fn from(id: &str) -> Self {
        Self::text(id, Source::user())
    }
}

/// Which queue an item joins. Serde and strum spell it the same (kebab-case).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Debug,
    Serialize,
    Deserialize,
    Display,
    EnumString,
    IntoStaticStr,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Target {
    /// A whole new turn.
    NextTurn,
    /// The active turn's next step.
    NextStep,
}

impl Target {
    /// Both targets in the order a cancel clears them (`next-step` first).
    pub const ALL: [Target; 2] = [Target::NextStep, Target::NextTurn];

    /// The transcript and JSON spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether an item should make the model run. Serde and strum spell it the
/// same (kebab-case).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Display, EnumString)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Wakeup {
    /// Reserve a driver when idle (or latch one after an abort).
    Wake,
    /// Stay parked until another delivery wakes the driver.
    NoWake,
}

/// Why a client cancelled a turn. `disposed` is not here: only `dispose` may
/// use it, so a cancel cannot claim it.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CancelCause {
    /// A human asked.
    User,
    /// The parent agent asked.
    Parent,
    /// A hook asked, with its (non-empty) reason.
    Hook {
        /// The hook's reason.
        reason: String,
    },
}

/// Why a turn was aborted: a cancel's cause, or disposal. Printed as its
/// kebab-case kind, a hook's as `hook:<reason>`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Display)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Cause {
    /// A human asked.
    User,
    /// The parent agent asked.
    Parent,
    /// A hook asked, with its reason.
    #[strum(to_string = "hook:{reason}")]
    Hook {
        /// The hook's reason.
        reason: String,
    },
    /// The agent was disposed.
    Disposed,
    /// Read only from an old dsh log whose bare `aborted` recorded no
    /// cause (dsh's loader names it `legacy`); the core never writes it.
    Legacy,
}

impl From<CancelCause> for Cause {
    fn from(cause: CancelCause) -> Self {
        match cause {
            CancelCause::User => Self::User,
            CancelCause::Parent => Self::Parent,
            CancelCause::Hook { reason } => Self::Hook { reason },
        }
    }
}

/// How a turn ended (`turn/end.reason`). Printed as its kebab-case kind
/// (the words a step outcome shares with it), an abort as `aborted:<cause>`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Display)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum TurnEnd {
    /// The model gave its final answer.
    Completed,
    /// The model was truncated.
    MaxTokens,
    /// The pre-step decision rejected the step.
    Blocked,
    /// A cancel or disposal aborted the turn.
    #[strum(to_string = "aborted:{reason}")]
    Aborted {
        /// The first cause that aborted it.
        reason: Cause,
    },
    /// The pre-step listener or the model step failed.
    Error,
    /// Written only by a restart's repair (SPEC §11): the process died
    /// while the turn was open.
    Interrupted,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_equal_by_bytes_whatever_their_allocation() {
        use std::hash::BuildHasher;
        let hash = |id: &MessageId| rustc_hash::FxBuildHasher.hash_one(id);
        let (one, other) = (MessageId::new("A"), MessageId::new(String::from("A")));
        assert!(!Arc::ptr_eq(&one.0, &other.0));
        assert_eq!(one, other);
        assert_eq!(hash(&one), hash(&other));
        assert_eq!(one, one.clone());
        assert_ne!(one, MessageId::new("B"));
        assert_ne!(MessageId::new("AB"), MessageId::new("AC"));
    }

    #[test]
    fn the_digest_renames_only_the_messages_own_id() {
        let text = |id: &str, source: Source| Message::text(id, source).digest();
        assert_eq!(text("A", Source::user()), text("B", Source::user()));
        assert_ne!(text("A", Source::user()), text("A", Source::plugin("p")));
        let naming = |id: &str, named: &str| {
            Message::new(id.into(), serde_json::json!(named), Source::user()).digest()
        };
        assert_eq!(naming("A", "A"), naming("B", "B"));
        assert_ne!(
            naming("A", "B"),
            naming("A", "A"),
            "another id stays itself"
        );
        assert_ne!(naming("A", "B"), naming("A", "C"));
    }

    #[test]
    fn a_computed_digest_is_not_part_of_the_value() {
        let digested = Message::text("A", Source::user());
        let fresh = Message::text("A", Source::user());
        let _ = digested.digest();
        assert_eq!(digested, fresh);
        let json = serde_json::to_string(&digested).expect("serializes");
        assert_eq!(json, serde_json::to_string(&fresh).expect("serializes"));
        let value: Value = serde_json::from_str(&json).expect("parses");
        let mut keys: Vec<&str> = value
            .as_object()
            .map(|fields| fields.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        assert_eq!(keys, ["content", "id", "role", "source"], "no digest field");
        let read: Message = serde_json::from_str(&json).expect("parses");
        assert_eq!((read.digest(), &read), (digested.digest(), &fresh));
    }

    /// A text block naming the message's own id is held as that fact, and
    /// is the same value, JSON and digest as when built from its JSON; any
    /// other content stays as written.
    #[test]
    fn own_id_text_is_the_json_it_stands_for() {
        let own = |id: &str| serde_json::json!([{ "type": "text", "text": id }]);
        let built = Message::new("A".into(), own("A"), Source::user());
        let text = Message::text("A", Source::user());
        assert!(matches!(built.0.content, Content::OwnIdText));
        assert_eq!(built, text);
        assert_eq!(built.digest(), text.digest());
        assert_eq!(built.json(), text.json());
        let value: Value = serde_json::from_str(text.json()).expect("parses");
        assert_eq!(value["content"], own("A"));
        let read: Message = serde_json::from_str(text.json()).expect("parses");
        assert!(matches!(read.0.content, Content::OwnIdText));
        assert_eq!(read, text);
        let others = [
            own("B"),
            serde_json::json!([{ "type": "text", "text": "A", "cache": true }]),
            serde_json::json!([{ "type": "image", "text": "A" }]),
            serde_json::json!([own("A")[0], own("A")[0]]),
            serde_json::json!("A"),
        ];
        for other in others {
            let message = Message::new("A".into(), other.clone(), Source::user());
            assert!(matches!(&message.0.content, Content::Json(kept) if *kept == other));
            assert_ne!(message, text, "{other}");
            let value: Value = serde_json::from_str(message.json()).expect("parses");
            assert_eq!(value["content"], other);
        }
    }

    /// Fields beyond the four, in the message or its source, are written
    /// back as read and are part of the value; a key named twice is
    /// refused, since one of its values would be lost.
    #[test]
    fn extra_fields_round_trip_and_a_key_named_twice_is_refused() {
        let json = r#"{"id":"A","role":"user","content":"A","source":{"kind":"tool","call":7},"meta":{"x":[1]}}"#;
        let read: Message = serde_json::from_str(json).expect("parses");
        let written: Value = serde_json::from_str(read.json()).expect("parses");
        assert_eq!(
            written,
            serde_json::from_str::<Value>(json).expect("parses")
        );
        let plain: Message =
            serde_json::from_str(&json.replace(r#","meta":{"x":[1]}"#, "")).expect("parses");
        assert_ne!(read, plain);
        assert_ne!(read.digest(), plain.digest());
        for (twice, error) in [
            (
                json.replace(r#""meta""#, r#""x":1,"x""#),
                "duplicate key `x`",
            ),
            (
                json.replace(r#""call""#, r#""kind":"user","call""#),
                "duplicate key `kind`",
            ),
            (
                json.replace(r#""meta""#, r#""role""#),
                "duplicate field `role`",
            ),
            (
                json.replace(r#""meta":{"x":[1]}"#, r#""id":"B""#),
                "duplicate field `id`",
            ),
        ] {
            let refused = serde_json::from_str::<Message>(&twice).unwrap_err();
            assert!(refused.to_string().contains(error), "{twice}: {refused}");
        }
        let missing = serde_json::from_str::<Message>(r#"{"id":"A","role":"user","content":"A"}"#);
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `source`")
        );
    }
}

#[cfg(test)]
mod logged {
    use super::*;

    fn with_text(length: usize) -> Message {
        Message::new(
            MessageId::new("m"),
            Value::String("a".repeat(length)),
            Source::user(),
        )
    }

    /// Why a line of `messages` would not read back, under `limit` bytes.
    fn said(messages: &[Message], limit: usize) -> Option<String> {
        Message::unreadable_when_logged(messages, limit).map(|(_, why)| why)
    }

    #[test]
    fn a_line_longer_than_the_limit_is_said_and_a_rough_bound_alone_is_not() {
        // 1,024 bytes of envelope: 976 left for the messages' JSON.
        let limit = 2_000;
        // Its rough bound (six bytes a byte) is past the room; its JSON is not.
        assert_eq!(said(&[with_text(300)], limit), None);
        let long = said(&[with_text(1_500)], limit);
        assert!(long.is_some_and(|why| why.contains("longer than a log line")));
        // Each fits; the line holding both does not.
        assert_eq!(said(&[with_text(500)], limit), None);
        let both = said(&[with_text(500), with_text(500)], limit);
        assert!(both.is_some_and(|why| why.contains("longer than a log line")));
    }

    /// Near the limit the line is measured as written, not bounded by
    /// half as much again: a message whose JSON fits is taken, and a
    /// stand-in counts as its six-byte escape. Before, JSON past two
    /// thirds of the room was refused (a 180 MiB message under 256 MiB).
    #[test]
    fn a_line_near_the_limit_is_measured_as_written() {
        let limit = 1_024 + 3_000;
        let json = |message: &Message| message.json().len();
        let fits = with_text(2_900);
        assert!(json(&fits) < 3_000 && json(&fits) * 3 / 2 > 3_000);
        assert_eq!(said(&[fits], limit), None);
        // 700 stand-ins: 2,800 bytes held, 4,200 written.
        let stand_ins = Message::new(
            MessageId::new("m"),
            Value::String("\u{FD83D}".repeat(700)),
            Source::user(),
        );
        assert!(json(&stand_ins) < 3_000);
        let refused = said(&[stand_ins], limit);
        assert!(refused.is_some_and(|why| why.contains("longer than a log line")));
    }

    #[test]
    fn an_other_source_of_a_typed_kind_is_said_and_of_another_kind_is_not() {
        let other = |kind: &str| {
            let source = Source::Other {
                kind: kind.into(),
                extra: Map::new(),
            };
            said(
                &[Message::new(MessageId::new("m"), Value::Null, source)],
                1 << 20,
            )
        };
        assert!(other("plugin").is_some());
        assert_eq!(other("webhook"), None);
    }

    #[test]
    fn stand_ins_side_by_side_are_said_and_apart_or_alone_are_not() {
        let id = |id: &str| said(&[Message::text(id, Source::user())], 1 << 20);
        // U+FD83D then U+FDE00: written `\ud83d\ude00`, read as U+1F600.
        assert!(id("a\u{FD83D}\u{FDE00}").is_some_and(|why| why.contains("stand-ins")));
        assert_eq!(id("a\u{FD83D}b\u{FDE00}"), None);
        assert_eq!(id("a\u{FDE00}\u{FD83D}"), None);
        assert_eq!(id("a\u{FD83D}"), None);
    }
}
