//! The durable session log in the dsh JSONL shapes
//! (`fixtures/dsh-logs/README.md`): one JSON object per line, a `session`
//! header first, then `{"type": ..., "data": ...}` events. Every log Courier
//! writes and reads goes through this module: writes through
//! [`durable_line`], reads through [`Reader`], which also converts dsh's
//! older records as dsh's own loader does ([`legacy`]).

pub(crate) mod escape;
mod legacy;
mod shape;
mod surface;

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashSet;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use legacy::At;
pub use legacy::Conversions;

use crate::event::Output;
use crate::inbox::Splice;

/// The first line of a session log. Fields this crate does not interpret
/// (`origin`, `parentSession`, `seedLength`, ...) round-trip in `extra`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Log format version (0 in every dsh log).
    pub version: u64,
    /// The session id.
    pub id: String,
    /// Everything else, verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionHeader {
    /// A header for a log Courier writes; no clock is read (`createdAt` 0).
    pub fn new(id: impl Into<String>) -> Self {
        let mut extra = Map::new();
        extra.insert("createdAt".into(), 0.into());
        extra.insert("cwd".into(), "".into());
        extra.insert("delegationDepth".into(), 0.into());
        Self {
            kind: "session".into(),
            version: 0,
            id: id.into(),
            extra,
        }
    }

    /// The header as one JSONL line (without the newline), a lone
    /// surrogate's stand-in escaped as [`encode_durable`] does.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a header always serializes");
        escape::escape_stand_ins(&mut line);
        line
    }
}

/// The JSONL line of a durable output (without the newline); `None` for a
/// live notification, which never reaches the log.
pub fn durable_line(output: &Output) -> Option<String> {
    let mut line = String::new();
    encode_durable(output, &mut line).then_some(line)
}

/// [`durable_line`] into `line`, replacing what it held: a writer that
/// encodes many lines through one buffer allocates nothing once the buffer
/// is as long as its longest line. `false` (and `line` empty) for a live
/// notification.
///
/// The two events that carry messages are written here around each
/// message's kept JSON ([`Message::json`](crate::Message::json)), so a message a log writes
/// twice is encoded once; the others go through `Output`'s `Serialize`.
/// The lines are byte for byte what `Serialize` writes (the tests compare
/// them on every shape), but for the stand-in a lone UTF-16 surrogate is
/// read as (see [`lone_surrogate_escapes`]), written back as the escape it
/// was read from (`\ud83d`), so dsh and Courier read back what they wrote.
pub fn encode_durable(output: &Output, line: &mut String) -> bool {
    line.clear();
    match output {
        Output::Spliced(splice) => splice_line(splice, line),
        Output::UserMessage(message) => {
            line.push_str(r#"{"type":"user/message","data":"#);
            line.push_str(message.json());
            line.push('}');
        }
        Output::TurnStart { .. }
        | Output::StepStart { .. }
        | Output::StepEnd { .. }
        | Output::TurnEnd { .. } => {
            let mut bytes = std::mem::take(line).into_bytes();
            serde_json::to_writer(&mut bytes, output).expect("an output always serializes");
            *line = String::from_utf8(bytes).expect("serde_json writes UTF-8");
        }
        Output::Inserted { .. }
        | Output::Claimed { .. }
        | Output::Discarded { .. }
        | Output::Status { .. }
        | Output::Error { .. }
        | Output::Idle => return false,
    }
    escape::escape_stand_ins(line);
    true
}

/// An `agent/inbox/spliced` line in [`Splice`]'s field order: `removedCount`
/// only when not zero, `outcome` only when set.
fn splice_line(splice: &Splice, line: &mut String) {
    use std::fmt::Write;
    line.push_str(r#"{"type":"agent/inbox/spliced","data":{"target":""#);
    line.push_str(splice.target.as_str());
    // Writing to a `String` cannot fail.
    let _ = write!(line, r#"","start":{}"#, splice.start);
    if splice.removed_count != 0 {
        let _ = write!(line, r#","removedCount":{}"#, splice.removed_count);
    }
    line.push_str(r#","inserted":["#);
    for (index, message) in splice.inserted.iter().enumerate() {
        if index > 0 {
            line.push(',');
        }
        line.push_str(message.json());
    }
    line.push(']');
    if let Some(outcome) = &splice.outcome {
        line.push_str(r#","outcome":"#);
        line.push_str(&serde_json::to_string(outcome).expect("an outcome serializes"));
    }
    line.push_str("}}");
}

/// The `session/end-seed` line a resume appends after its closers, as dsh
/// does: a marker that a reader replays across (only a fork's first one is
/// a boundary).
pub const END_SEED_LINE: &str = r#"{"type":"session/end-seed","data":{}}"#;

/// One parsed log line.
#[derive(Clone, PartialEq, Debug)]
pub enum LogLine {
    /// The `session` header.
    Header(SessionHeader),
    /// A delivery event (a durable [`Output`]).
    Delivery(Output),
    /// `session/end-seed`: a fork's boundary, or a marker a resume appended.
    EndSeed(EndSeed),
    /// Any other event type: outside the delivery contract, skipped. A
    /// `user/message` that replaces a span of the model-visible surface
    /// (`surfaceOp` `replace`: a compaction checkpoint) is one too: it
    /// rewrites history, it delivers nothing ([`surface`]).
    Other(String),
}

/// What a `session/end-seed` line is (SPEC §11).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EndSeed {
    /// A fork's copied history ends here: the fork's inbox starts empty.
    ForkBoundary,
    /// A marker a resume appended: the reader replays across it.
    Marker,
    /// A marker inside a fork's seed, before its boundary: copied from its
    /// parent, where it was the parent's own fork boundary (a fork of a
    /// fork) or a marker the parent's resume appended. The child's log does
    /// not say which (the child's header names only its own `seedLength`,
    /// and the two are written alike), and dsh reads neither: it replays a
    /// fork's inbox from `seedLength` on.
    InSeed,
}

/// Event types that are delivery events and must parse as an [`Output`].
const DELIVERY_TYPES: [&str; 6] = [
    "agent/inbox/spliced",
    "turn/start",
    "step/start",
    "user/message",
    "step/end",
    "turn/end",
];

/// dsh's packed chunk rows: one line standing for as many chunk events as
/// its `texts` (or `args`) has members (`decodeStorageRecord`,
/// `packages/core/session/src/chunk-rows.ts`).
const PACKED_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// Why a line cannot be read.
#[derive(Debug)]
pub enum LineError {
    /// Not JSON: what a torn write leaves.
    NotJson(serde_json::Error),
    /// JSON, but not a record of the log: not an object, a duplicate key,
    /// a delivery event of the wrong shape.
    Shape(serde_json::Error),
    /// A record dsh's loader refuses too, in dsh's words.
    Refused(String),
}

impl From<serde_json::Error> for LineError {
    fn from(error: serde_json::Error) -> Self {
        if error.is_data() {
            Self::Shape(error)
        } else {
            Self::NotJson(error)
        }
    }
}

impl fmt::Display for LineError {
    /// A parse error without serde_json's "at line 1" (the caller names the line).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = match self {
            Self::Refused(reason) => {
                return write!(formatter, "refused as dsh refuses it: {reason}");
            }
            Self::NotJson(error) | Self::Shape(error) => error,
        };
        let text = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        match text.strip_suffix(&position) {
            Some(message) => write!(
                formatter,
                "cannot parse: {message} (column {})",
                error.column()
            ),
            None => write!(formatter, "cannot parse: {text}"),
        }
    }
}

/// The one reader of log lines: every log Courier reads (the validator, a
/// resume, `courier repair`) goes through it, line by line, so all of them
/// read the same records the same way. It keeps what dsh's conversions need
/// (the session id and each record's event sequence number) and counts the
/// records it converted ([`legacy`]).
///
/// A line is read in one pass for its envelope (an object with unique
/// top-level keys, whatever the whitespace), then only a delivery event's
/// own data is deserialized; records outside the contract are only
/// syntax-checked. Blank lines are the caller's to skip.
#[derive(Clone, Debug, Default)]
pub struct Reader {
    /// The current session's id (a later header starts a new session).
    session: String,
    /// The event sequence number the next record gets when it names none
    /// (dsh's snapshots drop `seq`; its reader numbers events from 0).
    next_seq: u64,
    /// The current session's `seedLength` until its fork boundary is read.
    seed: Option<u64>,
    conversions: Conversions,
    /// The last record wrote its `seq` (dsh's JSONL backend does).
    numbered: bool,
    /// The last record's `time` as written, when it had one (`timed`); a
    /// packed row's last member's (`time0` plus its gaps).
    time: String,
    timed: bool,
}

/// How the last record read was numbered, for a writer that appends after
/// it: dsh's loader refuses a `turn/end` after a gap in `seq`
/// (`SessionLogScanner`), so records appended to a log that numbers its
/// records must go on numbering them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Stamp {
    /// The `seq` the next record takes.
    pub next_seq: u64,
    /// The last record's `time` as written (dsh's milliseconds), if it had
    /// one: the latest time the log knows.
    pub time: Option<String>,
}

impl Stamp {
    /// `line`, a record Courier writes (`{"type":...,"data":...}`), with
    /// this numbering in its envelope as dsh writes it (`seq`, `time`, then
    /// `data`).
    pub fn envelope(&self, line: &str) -> String {
        let mut fields = format!(r#","seq":{}"#, self.next_seq);
        if let Some(time) = &self.time {
            fields.push_str(r#","time":"#);
            fields.push_str(time);
        }
        fields.push_str(r#","data":"#);
        line.replacen(r#","data":"#, &fields, 1)
    }
}

impl Reader {
    /// A reader before any line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records converted so far.
    pub fn conversions(&self) -> Conversions {
        self.conversions
    }

    /// How the last record read was numbered: `None` when it wrote no
    /// `seq` (as dsh's snapshots and Courier's own logs), or no record was
    /// read since the last header.
    pub fn stamp(&self) -> Option<Stamp> {
        self.numbered.then(|| Stamp {
            next_seq: self.next_seq,
            time: self.timed.then(|| self.time.clone()),
        })
    }

    /// Reads one (non-blank) line.
    ///
    /// A string escaping half of a UTF-16 surrogate pair (`"\ud83d"`) is
    /// JSON that dsh writes (`JSON.stringify` of a string cut inside an
    /// emoji) and reads (`JSON.parse`), but serde_json refuses; such a line
    /// is read again with each lone half as its `lone_surrogate` stand-in,
    /// one private-use character per code unit, so two ids that differ in a
    /// lone half (which differ to dsh, comparing UTF-16 code units) stay two.
    /// Only the failing path looks for them.
    ///
    /// Likewise a number written with a fraction or an exponent that is a
    /// safe integer (`1.0`, `1e0`) is the integer to `JSON.parse`, so dsh
    /// reads `{"turn":1.0}` as turn 1 (and its checks, `Number.isSafeInteger`,
    /// pass); serde_json refuses it for a `u64`, so such numbers are
    /// written as integers for the second reading.
    ///
    /// Either may hide the other (serde_json stops at the first), so a line
    /// refused as not JSON or for its shape is read again, once, with both
    /// mended; the file is never changed.
    ///
    /// A delivery record of the wrong shape is refused naming its field and
    /// what belongs there, in the log's words ([`shape`]).
    pub fn line(&mut self, text: &str) -> Result<LogLine, LineError> {
        self.mended(text).map_err(|error| match error {
            // Explained from the value serde_json builds, where the last of
            // a key's values wins: it would name a field of that one.
            LineError::Shape(ref shape) if duplicate(shape) => error,
            LineError::Shape(_) => explained(text).or_else(|| not_json(text)).unwrap_or(error),
            LineError::NotJson(ref reason) => too_deep(text, reason).unwrap_or(error),
            LineError::Refused(_) => error,
        })
    }

    /// [`Reader::line`], serde's errors as they are.
    fn mended(&mut self, text: &str) -> Result<LogLine, LineError> {
        let (next_seq, conversions) = (self.next_seq, self.conversions);
        let error = match self.record(text) {
            Err(error @ (LineError::NotJson(_) | LineError::Shape(_))) => error,
            read => return read,
        };
        let surrogates = lone_surrogates_replaced(text);
        let mended = match integral_numbers_as_integers(surrogates.as_deref().unwrap_or(text)) {
            Some(mended) => mended,
            None => surrogates.ok_or(error)?,
        };
        (self.next_seq, self.conversions) = (next_seq, conversions);
        self.record(&mended)
    }

    fn record(&mut self, text: &str) -> Result<LogLine, LineError> {
        let envelope = match Envelope::read(text, true) {
            Ok(envelope) => envelope,
            Err(_) => Envelope::read(text, false)?,
        };
        let replaces = match envelope.surface_op {
            Some(op) if envelope.kind == "user/message" => surface::replaces(op)?,
            _ => false,
        };
        match self.event(text, envelope)? {
            // A surface replacement (a compaction checkpoint) is read and
            // checked as a message, then skipped: it delivers nothing.
            LogLine::Delivery(Output::UserMessage(_)) if replaces => {
                Ok(LogLine::Other("user/message".into()))
            }
            event => Ok(event),
        }
    }

    /// Keeps the record's time, as written, for the next record's stamp: a
    /// packed row's `time0` is its first member's, and its last member's is
    /// `time0` plus every gap (`elapsed`; `decodeStorageRecord`).
    fn keep_time(&mut self, envelope: &Envelope, elapsed: i64) {
        let time = envelope.time.or(envelope.time0);
        self.timed = time.is_some();
        let Some(time) = time else {
            return;
        };
        self.time.clear();
        match serde_json::from_str::<i64>(time.get()) {
            Ok(first) if envelope.time.is_none() && elapsed != 0 => {
                let last = first.saturating_add(elapsed);
                self.time.push_str(&last.to_string());
            }
            _ => self.time.push_str(time.get()),
        }
    }

    /// One record from its envelope.
    fn event(&mut self, text: &str, envelope: Envelope) -> Result<LogLine, LineError> {
        let kind = envelope.kind.as_ref();
        if kind == "session" {
            return self.header(text);
        }
        let (seq, elapsed) = self.number(kind, &envelope)?;
        self.numbered = envelope.seq.is_some();
        self.keep_time(&envelope, elapsed);
        let at = At {
            session: &self.session,
            seq,
        };
        if let Some(reason) = legacy::refusal(kind, envelope.data, &at) {
            return Err(LineError::Refused(reason));
        }
        if kind == "turn/end" {
            // dsh checks every `turn/end` envelope and converts the older
            // reasons (`migrateLegacyTurnEndEvent`); rare enough to read
            // each one's data as fields.
            let fields: Map<String, Value> =
                serde_json::from_str(envelope.data.map_or("null", RawValue::get))?;
            if let Some(converted) = legacy::turn_end(&fields, &at).map_err(LineError::Refused)? {
                self.conversions.turn_end_reason += 1;
                return Ok(LogLine::Delivery(converted));
            }
        }
        if let Some(output) = envelope.read {
            return Ok(LogLine::Delivery(output));
        }
        let data = || envelope.data.map(RawValue::get).unwrap_or("null");
        match kind {
            "session/end-seed" => Ok(LogLine::EndSeed(self.end_seed(seq))),
            "turn/start" => {
                // Only data that could name a `trigger` (an escape could
                // spell it) is read as fields; the rest parses directly.
                let raw = data();
                if raw.contains("trigger") || raw.contains('\\') {
                    let fields: Map<String, Value> = serde_json::from_str(raw)?;
                    if let Some(converted) = legacy::turn_start(&fields, &at) {
                        self.conversions.turn_start_trigger += 1;
                        return converted.map(LogLine::Delivery).map_err(LineError::Refused);
                    }
                }
                Ok(LogLine::Delivery(serde_json::from_str(text)?))
            }
            "steering/message" => {
                let mut message = legacy::steering_message(serde_json::from_str(data())?, &at)
                    .map_err(LineError::Refused)?;
                self.conversions.steering_message += 1;
                if legacy::pre_identity_message(&mut message, &at) {
                    self.conversions.pre_identity_message += 1;
                }
                let message = serde_json::from_value(Value::Object(message))?;
                Ok(LogLine::Delivery(Output::UserMessage(message)))
            }
            "user/message" => match serde_json::from_str(text) {
                Ok(output) => Ok(LogLine::Delivery(output)),
                Err(error) => {
                    let Ok(Value::Object(mut message)) = serde_json::from_str(data()) else {
                        return Err(error.into());
                    };
                    if !legacy::pre_identity_message(&mut message, &at) {
                        return Err(error.into());
                    }
                    self.conversions.pre_identity_message += 1;
                    let message = serde_json::from_value(Value::Object(message))?;
                    Ok(LogLine::Delivery(Output::UserMessage(message)))
                }
            },
            kind if DELIVERY_TYPES.contains(&kind) => {
                Ok(LogLine::Delivery(serde_json::from_str(text)?))
            }
            kind => Ok(LogLine::Other(kind.to_owned())),
        }
    }

    /// The record's event number, and the next record's counted past it
    /// (a packed row holds several events); with the time from its first
    /// event to its last (a packed row's gaps, `dt`).
    fn number(&mut self, kind: &str, envelope: &Envelope<'_>) -> Result<(u64, i64), LineError> {
        let seq = match envelope
            .seq
            .map(|seq| (seq, serde_json::from_str::<u64>(seq.get())))
        {
            Some((_, Ok(seq))) => seq,
            // A safe whole number written `3.0` is read again as `3`
            // (`mended`).
            Some((seq, Err(error)))
                if serde_json::from_str::<f64>(seq.get())
                    .is_ok_and(|n| n.fract() == 0.0 && (0.0..=legacy::SAFE).contains(&n)) =>
            {
                return Err(error.into());
            }
            // Not a number dsh's `seq` check could match (`3.5`, `-1`,
            // `null`, `"3"`): refused in its words.
            Some((seq, Err(_))) => {
                let expected = self.next_seq;
                let got = seq.get();
                return Err(LineError::Refused(format!(
                    "corrupt session log: seq gap in committed region (expected {expected}, got {got})"
                )));
            }
            None => self.next_seq,
        };
        // dsh's JSONL loader numbers events from 0 and refuses a record
        // whose `seq` is not the next number (`SessionLogScanner`,
        // `session-persistence-jsonl/src/format.ts`; it drops the rest as a
        // torn tail when no `turn/end` follows, which Courier does not do
        // silently). A record without `seq` (dsh's snapshots drop it,
        // Courier writes none) takes the next number.
        if seq != self.next_seq {
            let expected = self.next_seq;
            return Err(LineError::Refused(format!(
                "corrupt session log: seq gap in committed region (expected {expected}, got {seq})"
            )));
        }
        let (members, elapsed) = if PACKED_TYPES.contains(&kind) {
            packed_members(kind, envelope.data)?
        } else {
            (1, 0)
        };
        self.next_seq = seq.saturating_add(members);
        Ok((seq, elapsed))
    }

    /// A `session` header: its version checked as dsh's loader checks it, and
    /// a new session (event numbers from 0) begun.
    fn header(&mut self, text: &str) -> Result<LogLine, LineError> {
        let fields: Map<String, Value> = serde_json::from_str(text)?;
        legacy::check_header(&fields).map_err(LineError::Refused)?;
        let header: SessionHeader = serde_json::from_value(Value::Object(fields))?;
        self.session.clone_from(&header.id);
        self.next_seq = 0;
        self.numbered = false;
        self.seed = header
            .extra
            .get("seedLength")
            .and_then(Value::as_f64)
            .map(|length| length as u64);
        Ok(LogLine::Header(header))
    }

    /// Whether the `session/end-seed` numbered `seq` is the fork's boundary.
    /// SPEC §11 names the first one; dsh replays a fork's inbox from event
    /// `seedLength` on (`Inbox`, `packages/core/agent/src/inbox.ts`) and
    /// copies the parent's events whole, markers included (a parent that
    /// had resumed, or was a fork), so its boundary is the marker that
    /// ends the seed: the seed's last event when that is one (a seed is
    /// marked once, `Session`'s constructor), else the one right after it.
    /// Both hold with the first marker numbered from `seedLength - 1` on;
    /// one earlier sits inside the seed (a parent's resume marker, even
    /// two events before its end: a resume, then one inbox edit, then the
    /// fork). Once; an earlier one is [`EndSeed::InSeed`].
    fn end_seed(&mut self, seq: u64) -> EndSeed {
        match self.seed {
            Some(length) if seq.saturating_add(1) >= length => {
                self.seed = None;
                EndSeed::ForkBoundary
            }
            Some(_) => EndSeed::InSeed,
            None => EndSeed::Marker,
        }
    }
}

/// Whether serde refused a key given twice (the envelope's, or a field's).
fn duplicate(error: &serde_json::Error) -> bool {
    let error = error.to_string();
    error.starts_with("duplicate key") || error.starts_with("duplicate field")
}

/// Why a delivery record that does not parse is wrong, in the log's words,
/// when [`shape::explain`] can tell.
fn explained(text: &str) -> Option<LineError> {
    let Ok(Value::Object(record)) = serde_json::from_str(text) else {
        return None;
    };
    let kind = record.get("type").and_then(Value::as_str)?;
    if !DELIVERY_TYPES.contains(&kind) {
        return None;
    }
    let why = shape::explain(kind, record.get("data"))?;
    Some(LineError::Shape(de::Error::custom(format!("{kind} {why}"))))
}

/// A line refused for its shape at its first token (a `[` where a record's
/// object belongs) that is not JSON at all either (`[1,2`): what a torn
/// write leaves, and so called, like any other line that is not JSON.
fn not_json(text: &str) -> Option<LineError> {
    let error = serde_json::from_str::<IgnoredAny>(text).err()?;
    (!error.is_data()).then_some(LineError::NotJson(error))
}

/// The longest log line a reader takes (the validator, a resume, `courier
/// repair`); a longer one is refused at its line rather than buffered (dsh
/// inlines images, so this is generous).
pub const LINE_BYTES_MAX: u64 = 1 << 28;

/// serde_json's recursion limit: it reads arrays and objects nested at
/// most `DEPTH_LIMIT - 1` deep, and refuses the next level.
pub(crate) const DEPTH_LIMIT: usize = 128;

/// Why serde_json did not read `text`, when it is JSON all the same
/// (`JSON.parse` reads it): nested deeper than [`DEPTH_LIMIT`] (a message's
/// `content` may be anything), or holding a number past a double's range
/// (`1e400`, which `JSON.parse` reads as `Infinity`). `None` when `text` is
/// not JSON. Its syntax is checked by skipping it, which has no depth
/// limit and reads no number. Every reader of JSON lines (the log's, the
/// protocol's) says this instead of "not JSON": a whole line is no torn
/// write, and a resume that took it for one would drop a record.
pub fn unread_json(text: &str, reason: &serde_json::Error) -> Option<String> {
    serde_json::from_str::<IgnoredAny>(text).ok()?;
    Some(if reason.to_string().starts_with("number out of range") {
        format!(
            "a number out of range (column {}): past a double's, which JSON.parse \
             reads as Infinity and Courier does not read",
            reason.column()
        )
    } else {
        format!(
            "JSON nested more than {} arrays and objects deep (column {}), \
             more than Courier reads",
            DEPTH_LIMIT - 1,
            reason.column()
        )
    })
}

/// A line refused as not JSON that is JSON all the same ([`unread_json`])
/// is refused for its shape, as whole.
fn too_deep(text: &str, reason: &serde_json::Error) -> Option<LineError> {
    let why = unread_json(text, reason)?;
    Some(LineError::Shape(de::Error::custom(format!(
        "{why} (the line is whole, not torn)"
    ))))
}

/// Parses one JSONL line on its own (no session before it: event numbers
/// from 0, an empty session id), as [`Reader::line`] reads it.
pub fn parse_line(line: &str) -> Result<LogLine, LineError> {
    Reader::new().line(line)
}

/// How many chunk events a packed row stands for; a row without members is
/// malformed, as dsh's `validateRunData` says.
fn packed_members(kind: &str, data: Option<&RawValue>) -> Result<(u64, i64), LineError> {
    #[derive(Deserialize)]
    struct Members {
        texts: Option<Vec<IgnoredAny>>,
        args: Option<Vec<IgnoredAny>>,
        /// Read as any JSON: gaps that are no integers leave the count be.
        dt: Option<Value>,
    }
    let members = data.and_then(|data| serde_json::from_str::<Members>(data.get()).ok());
    // The row's span, when every gap is a whole number (dsh writes safe
    // integers); else none is assumed.
    let gaps = members.as_ref().and_then(|m| m.dt.as_ref()?.as_array());
    let gaps = gaps.and_then(|gaps| gaps.iter().map(Value::as_i64).collect::<Option<Vec<_>>>());
    let elapsed = gaps.map_or(0, |gaps| gaps.into_iter().fold(0i64, i64::saturating_add));
    let count = members
        .and_then(|m| m.texts.or(m.args))
        .map_or(0, |m| m.len());
    // dsh's `validateRunData` names the row's own payload key.
    let payload = if kind == "tool-call-chunks" {
        "args"
    } else {
        "texts"
    };
    match count {
        0 => Err(LineError::Refused(format!(
            "malformed {kind} storage row: {payload} must be a non-empty string array"
        ))),
        count => Ok((count as u64, elapsed)),
    }
}

/// A line's top-level object: its `type`, its `data` and its `seq` (or a
/// packed row's `seq0`) left unparsed, every other key skipped. Read by
/// hand so that a line that is not an object, or names a key twice, is
/// refused the same way however it is spaced.
struct Envelope<'a> {
    kind: Cow<'a, str>,
    data: Option<&'a RawValue>,
    seq: Option<&'a RawValue>,
    /// When the record was written, as written.
    time: Option<&'a RawValue>,
    /// A packed row's first member's time (its `time0`), as written.
    time0: Option<&'a RawValue>,
    /// How a message event enters the model-visible surface.
    surface_op: Option<&'a RawValue>,
    /// The delivery event, when its data was deserialized in the same pass.
    read: Option<Output>,
}

impl<'a> Envelope<'a> {
    /// Reads the envelope of `text`; with `inline`, the data of a delivery
    /// event whose `type` comes first (as every writer puts it) and that
    /// needs no conversion is deserialized as it is met, so the line is read
    /// once. An error then may be one a conversion would cure: the caller
    /// reads the line again without `inline`.
    fn read(text: &'a str, inline: bool) -> Result<Self, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let envelope = deserializer.deserialize_map(EnvelopeVisitor { inline })?;
        deserializer.end()?;
        Ok(envelope)
    }
}

/// Delivery events read in the envelope's pass; the others (`turn/start`,
/// `turn/end`) may need a conversion or a check that looks at their data
/// first.
const INLINE_TYPES: [&str; 4] = [
    "agent/inbox/spliced",
    "step/start",
    "user/message",
    "step/end",
];

struct EnvelopeVisitor {
    inline: bool,
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON object (one log record)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind: Option<Cow<'de, str>> = None;
        let mut data = None;
        let mut read = None;
        let mut seq = None;
        let mut time = None;
        let mut time0 = None;
        let mut surface_op = None;
        let mut others = KeySet::default();
        while let Some(Text(key)) = map.next_key()? {
            let fresh = match key.as_ref() {
                "type" => kind.replace(map.next_value::<Text>()?.0).is_none(),
                "data" if data.is_some() || read.is_some() => false,
                "data" => {
                    match kind.as_deref() {
                        Some(kind) if self.inline && INLINE_TYPES.contains(&kind) => {
                            read = Some(map.next_value_seed(TaggedSeed(kind))?);
                        }
                        _ => data = Some(map.next_value()?),
                    }
                    true
                }
                "seq" | "seq0" => seq.replace(map.next_value()?).is_none(),
                "time" => time.replace(map.next_value()?).is_none(),
                "time0" => time0.replace(map.next_value()?).is_none(),
                "surfaceOp" => surface_op.replace(map.next_value()?).is_none(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    others.insert(key.clone())
                }
            };
            if !fresh {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
        Ok(Envelope {
            kind,
            data,
            seq,
            time,
            time0,
            surface_op,
            read,
        })
    }
}

/// An [`Output`] from its type and its data, the data read from `data`
/// (the line's own deserializer, positioned at it): a map of the two that
/// `Output`'s own adjacently tagged `Deserialize` reads, so its shapes are
/// written down once.
struct Tagged<'k, D> {
    kind: Option<&'k str>,
    data: Option<D>,
}

/// Reads an [`Output`] of the type it holds from the data it is given.
struct TaggedSeed<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for TaggedSeed<'_> {
    type Value = Output;

    fn deserialize<D: Deserializer<'de>>(self, data: D) -> Result<Output, D::Error> {
        let map = Tagged {
            kind: Some(self.0),
            data: Some(data),
        };
        Output::deserialize(MapAccessDeserializer::new(map))
    }
}

impl<'de, D: Deserializer<'de>> MapAccess<'de> for Tagged<'_, D> {
    type Error = D::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, D::Error> {
        let key = match (self.kind, &self.data) {
            (Some(_), _) => "type",
            (None, Some(_)) => "data",
            (None, None) => return Ok(None),
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, D::Error> {
        match (self.kind.take(), self.data.take()) {
            (Some(kind), data) => {
                self.data = data;
                seed.deserialize(kind.into_deserializer())
            }
            (None, Some(data)) => seed.deserialize(data),
            (None, None) => Err(de::Error::custom("a value asked after the last key")),
        }
    }
}

/// A string borrowed from the line when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// The other top-level keys seen: a short list (records have a few), a
/// hash set past that, so a hostile line of many keys stays linear.
#[derive(Default)]
struct KeySet<'a> {
    few: [Cow<'a, str>; KeySet::FEW],
    len: usize,
    many: FxHashSet<Cow<'a, str>>,
}

impl<'a> KeySet<'a> {
    /// Keys kept in the list (no allocation) before the set is used.
    const FEW: usize = 8;

    /// Adds `key`; `false` when it was already there.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        if self.few[..self.len].contains(&key) || self.many.contains(&key) {
            return false;
        }
        if self.len < Self::FEW {
            self.few[self.len] = key;
            self.len += 1;
        } else {
            self.many.insert(key);
        }
        true
    }
}

/// What a blank line is: not JSON, so refused before the last line (SPEC
/// §11 drops only a torn final line; dsh's loader stops its committed
/// prefix there, and throws when a `turn/end` follows), and torn as the last.
pub const BLANK_LINE: &str = "a blank line: not JSON";

/// Said of a log whose first line starts with a UTF-8 byte order mark:
/// no JSON parser reads it, and it is no torn tail either.
pub const BOM_HINT: &str = " (the line starts with a byte order mark: save the file without one)";

/// What to add about a line holding a carriage return that no line feed
/// follows (a file saved with classic Mac line ends): only `\n` and `\r\n`
/// end a line, so such a file reads as one long line. One wording for
/// the readers of a user's transcript or log (`run`, `diagram`, `validate`).
pub fn lone_cr_hint(line: &str) -> &'static str {
    let bytes = line.as_bytes();
    let lone = memchr::memchr_iter(b'\r', bytes).any(|at| bytes.get(at + 1) != Some(&b'\n'));
    match lone {
        true => {
            " (its lines end in a lone carriage return, which ends no line: only LF and CRLF do)"
        }
        false => "",
    }
}

/// The first bytes of a Zstandard frame: dsh's default session log,
/// `session.jsonl.zstd`, is a series of such frames.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The words for a log compressed as dsh compresses it, written once for
/// [`ZSTD_COMPRESSED`] and [`encoding_hint`].
macro_rules! zstd_compressed {
    () => {
        "compressed with zstd, as dsh writes `session.jsonl.zstd`: decompress it first \
         (`zstd -d`), or have `courier repair LOG --out FILE` write its kept lines as plain JSONL"
    };
}

/// Why a reader of plain JSONL only (a resume, which appends plain lines)
/// refuses a file that starts with [`ZSTD_MAGIC`], in place of "not
/// UTF-8": `courier validate` and `courier repair` read such a log.
pub const ZSTD_COMPRESSED: &str = zstd_compressed!();

/// What to add to "not UTF-8" about a file whose first bytes are `start`,
/// when they are a UTF-16 byte order mark (an editor on Windows saves one
/// so) or Zstandard's magic number (dsh's compressed log): every byte after
/// it reads as invalid UTF-8, and "byte 1 is invalid" alone would not say
/// why. One wording for every reader of a user's file (transcripts,
/// `validate`, `repair`, resume).
pub fn encoding_hint(start: &[u8]) -> &'static str {
    match start {
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => {
            " (it starts with a UTF-16 byte order mark: save it as UTF-8)"
        }
        _ if start.starts_with(&ZSTD_MAGIC) => concat!(" (it is ", zstd_compressed!(), ")"),
        _ => "",
    }
}

/// The character a lone UTF-16 surrogate code unit `unit` (U+D800 to
/// U+DFFF) is read as: U+F0000 + `unit`, U+FD800 to U+FDFFF, in the
/// supplementary private-use area A, so its last four hex digits are the
/// unit's. The mapping is one to one, so the reading is lossless and the
/// same escape (`\ud83d`, `\uD83D`) is always the same character. A real
/// string collides with it only by holding that private-use character
/// itself (written as is, or as the pair `\udbb6\udc00` to
/// `\udbb7\udfff`), which no text a person types does. Every line Courier
/// writes escapes the character back to `\uXXXX` (`escape`), so a log
/// written again reads the same to dsh as to Courier.
fn lone_surrogate(unit: u16) -> Option<char> {
    (0xD800..0xE000)
        .contains(&unit)
        .then(|| char::from_u32(0xF0000 + u32::from(unit)))
        .flatten()
}

/// Where `text` escapes a lone UTF-16 surrogate (`\uXXXX`, a high half not
/// followed by an escaped low half, or a low half alone): each escape's
/// byte offset and code unit, in order. Backslashes only occur inside JSON
/// strings, so escapes are found without tracking strings.
pub fn lone_surrogate_escapes(text: &str) -> impl Iterator<Item = (usize, u16)> + '_ {
    let unit = |at: usize| -> Option<u16> {
        let hex = text.get(at..at + 6)?.strip_prefix("\\u")?;
        u16::from_str_radix(hex, 16).ok()
    };
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            if bytes[at] != b'\\' {
                at += 1;
                continue;
            }
            let Some(first) = unit(at) else {
                at += 2; // `\\`, `\"` or another two-character escape
                continue;
            };
            let pair = (0xD800..0xDC00).contains(&first)
                && unit(at + 6).is_some_and(|second| (0xDC00..0xE000).contains(&second));
            let found = at;
            at += if pair { 12 } else { 6 };
            if !pair && (0xD800..0xE000).contains(&first) {
                return Some((found, first));
            }
        }
        None
    })
}

/// `text` with every [`lone_surrogate_escapes`] escape replaced by its
/// `lone_surrogate` stand-in; `None` when it has none.
fn lone_surrogates_replaced(text: &str) -> Option<String> {
    let mut mended = String::new();
    let mut copied = 0;
    for (at, unit) in lone_surrogate_escapes(text) {
        mended.push_str(&text[copied..at]);
        mended.extend(lone_surrogate(unit));
        copied = at + 6;
    }
    (copied > 0).then(|| {
        mended.push_str(&text[copied..]);
        mended
    })
}

/// `text` with every number written with a fraction or an exponent whose
/// value is a safe integer (`1.0`, `2e3`, `-0.0`), and `-0`, written as
/// that integer;
/// `None` when it has none. Numbers are found outside strings only, in one
/// pass; anything else (duplicate keys included) is left as it is, for the
/// reader to judge again.
fn integral_numbers_as_integers(text: &str) -> Option<String> {
    use legacy::SAFE;
    let bytes = text.as_bytes();
    let mut mended = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    at += 1;
                }
                let number = &text[start..at];
                // `-0` is an integer to JavaScript, a float to serde.
                if !number.contains(['.', 'e', 'E']) && number != "-0" {
                    continue;
                }
                let Ok(value) = number.parse::<f64>() else {
                    continue;
                };
                if value.fract() == 0.0 && value.abs() <= SAFE {
                    mended.push_str(&text[copied..start]);
                    // A safe integer: exact as an `i64`.
                    mended.push_str(&(value as i64).to_string());
                    copied = at;
                }
            }
            _ => at += 1,
        }
    }
    (copied > 0).then(|| {
        mended.push_str(&text[copied..]);
        mended
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsh_shapes_parse_and_serialize_back() {
        let lines = [
            r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"inserted":[{"id":"a","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"plugin","plugin":"p","form":"notice"}}]}}"#,
            r#"{"type":"agent/inbox/spliced","data":{"target":"next-step","start":0,"removedCount":2,"inserted":[],"outcome":"canceled"}}"#,
            r#"{"type":"turn/start","data":{"turn":1}}"#,
            r#"{"type":"step/start","data":{"turn":1,"step":1}}"#,
            r#"{"type":"user/message","data":{"id":"g","role":"user","content":"x","source":{"kind":"goal","goalId":"g1","revision":1,"round":2}}}"#,
            r#"{"type":"step/end","data":{"turn":1,"step":1}}"#,
            r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"veto"}}}}"#,
        ];
        for line in lines {
            let LogLine::Delivery(output) = parse_line(line).unwrap() else {
                panic!("not a delivery event: {line}");
            };
            let written = durable_line(&output).unwrap();
            let reread: Value = serde_json::from_str(&written).unwrap();
            let original: Value = serde_json::from_str(line).unwrap();
            assert_eq!(reread, original, "round trip of {line}");
        }
    }

    #[test]
    fn extra_top_level_fields_and_unknown_types_are_tolerated() {
        let line = r#"{"type":"user/message","data":{"id":"u","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
        assert!(matches!(
            parse_line(line),
            Ok(LogLine::Delivery(Output::UserMessage(_)))
        ));
        let error_end = r#"{"type":"turn/end","data":{"turn":2,"reason":{"kind":"error","error":{"code":"AUTH"}}}}"#;
        assert!(matches!(
            parse_line(error_end),
            Ok(LogLine::Delivery(Output::TurnEnd { .. }))
        ));
        let chunk = r#"{"type":"assistant/chunk","data":{"turn":1}}"#;
        assert_eq!(
            parse_line(chunk).unwrap(),
            LogLine::Other("assistant/chunk".into())
        );
        assert!(parse_line(r#"{"type":"turn/start","data":{}}"#).is_err());
        assert!(parse_line("{not json").is_err());
    }

    #[test]
    fn a_line_must_be_an_object_with_each_key_once_however_spaced() {
        for line in [
            r#"["x"]"#,
            r#"["session/end-seed"]"#,
            "3",
            r#""turn/start""#,
        ] {
            assert!(
                matches!(parse_line(line), Err(LineError::Shape(_))),
                "{line}"
            );
        }
        let twice = [
            r#"{"type":"assistant/chunk","type":"session/end-seed"}"#,
            r#"{ "type" : "assistant/chunk" , "type" : "session/end-seed" }"#,
            r#"{"type":"turn/start","data":{"turn":1},"data":{"turn":2}}"#,
            // The last value malformed: said twice, not read as that one.
            r#"{"type":"turn/start","data":{"turn":1},"data":{}}"#,
            r#"{"type":"x","surfaceOp":1,"surfaceOp":2}"#,
            r#"{"type":"x","s\u0075rfaceOp":1,"surfaceOp":2}"#,
        ];
        for line in twice {
            let error = parse_line(line).unwrap_err().to_string();
            assert!(error.contains("duplicate key"), "{line}: {error}");
        }
        let spaced = r#" { "data" : { "turn" : 1 } , "type" : "turn/start" } "#;
        assert_eq!(
            parse_line(spaced).unwrap(),
            LogLine::Delivery(Output::TurnStart { turn: 1 })
        );
        let many: String = (0..5000).map(|k| format!(r#""k{k}":0,"#)).collect();
        let line = format!(r#"{{{many}"type":"x"}}"#);
        assert_eq!(parse_line(&line).unwrap(), LogLine::Other("x".into()));
    }

    /// A line that opens an array where a record belongs is refused for
    /// its shape only when it is JSON; cut short, it is not JSON (a torn
    /// write), whatever its first character.
    #[test]
    fn a_line_opening_an_array_is_torn_when_it_is_not_json() {
        for torn in ["[1,2", "[", &"[".repeat(100_000)] {
            let error = parse_line(torn).unwrap_err();
            assert!(matches!(error, LineError::NotJson(_)), "{error:?}");
        }
        for whole in ["[1,2]", "[]", "1", "\"record\""] {
            let error = parse_line(whole).unwrap_err();
            assert!(matches!(error, LineError::Shape(_)), "{whole}: {error:?}");
        }
    }

    #[test]
    fn json_nested_past_the_depth_limit_is_refused_for_its_shape_not_torn() {
        let nested = |depth: usize| {
            let content = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            format!(
                r#"{{"type":"user/message","data":{{"id":"m","role":"user","content":{content},"source":{{"kind":"user"}}}}}}"#
            )
        };
        // The line adds two levels around `content`: 127 in all read, 128
        // are refused, and the error names the deepest that reads.
        assert!(parse_line(&nested(125)).is_ok());
        for depth in [126, 200] {
            let error = parse_line(&nested(depth)).unwrap_err();
            assert!(matches!(error, LineError::Shape(_)), "{error:?}");
            assert!(
                error.to_string().contains("nested more than 127 arrays"),
                "{error}"
            );
        }
        // Cut short, the same line is not JSON: a torn write.
        let torn = nested(200);
        let torn = &torn[..torn.len() - 3];
        assert!(matches!(parse_line(torn), Err(LineError::NotJson(_))));
        // A number past a double's range (`JSON.parse` reads `Infinity`) is
        // whole JSON too, refused for that number, not for a depth.
        for number in ["1e400", "-1e400"] {
            let line = format!(
                r#"{{"type":"user/message","data":{{"id":"m","role":"user","content":[{{"n":{number}}}],"source":{{"kind":"user"}}}}}}"#
            );
            let error = parse_line(&line).unwrap_err();
            assert!(matches!(error, LineError::Shape(_)), "{error:?}");
            let reason = error.to_string();
            assert!(
                reason.contains("a number out of range (column "),
                "{reason}"
            );
            assert!(!reason.contains("nested"), "{reason}");
        }
    }

    #[test]
    fn a_lone_surrogate_escape_reads_as_its_own_private_use_character() {
        let line = |text: &str| {
            format!(
                r#"{{"type":"user/message","data":{{"id":"m","role":"user","content":"{text}","source":{{"kind":"user"}}}}}}"#
            )
        };
        let content = |text: &str| match parse_line(&line(text)) {
            Ok(LogLine::Delivery(Output::UserMessage(message))) => {
                let json: Value = serde_json::from_str(message.json()).unwrap();
                json["content"].as_str().unwrap().to_owned()
            }
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(content(r"a\ud83d"), "a\u{fd83d}");
        assert_eq!(
            content(r"\ude00b\ud83d\ud83d\ude00"),
            "\u{fde00}b\u{fd83d}\u{1f600}"
        );
        // One character per code unit, whatever the escape's case: two
        // lone halves stay two, one written twice stays one.
        assert_ne!(content(r"a\ud800"), content(r"a\ud801"));
        assert_eq!(content(r"a\uDBFF"), content(r"a\udbff"));
        assert_eq!(content(r"\udfff"), "\u{fdfff}");
        // Escapes around them are left as they are.
        assert_eq!(content(r#"\\ud83d \" \u0041"#), r#"\ud83d " A"#);
        // A line that is not JSON stays so, lone surrogate or not.
        let torn = line(r"\ud83d");
        assert!(matches!(
            parse_line(&torn[..40]),
            Err(LineError::NotJson(_))
        ));
        // A retried line counts its event once.
        let (reader, read) = read_all(&[HEADER, &line(r"\ud83d"), &line("x")]);
        assert!(read.iter().all(Result::is_ok), "{read:?}");
        assert_eq!(reader.next_seq, 2);
    }

    /// Reads a log with one reader, as every caller does.
    fn read_all(lines: &[&str]) -> (Reader, Vec<Result<LogLine, LineError>>) {
        let mut reader = Reader::new();
        let read = lines.iter().map(|line| reader.line(line)).collect();
        (reader, read)
    }

    const HEADER: &str =
        r#"{"type":"session","version":0,"id":"s1","createdAt":0,"delegationDepth":0}"#;

    fn message_id(line: &Result<LogLine, LineError>) -> String {
        match line {
            Ok(LogLine::Delivery(Output::UserMessage(message))) => message.id().to_string(),
            other => panic!("not a user/message: {other:?}"),
        }
    }

    #[test]
    fn a_pre_identity_message_gets_dsh_s_legacy_id_from_its_event_number() {
        let packed = r#"{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}"#;
        let legacy = r#"{"type":"user/message","data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
        let numbered =
            r#"{"type":"user/message","seq":5,"data":{"content":"x","source":{"kind":"user"}}}"#;
        let (reader, read) = read_all(&[HEADER, legacy, packed, legacy, numbered, legacy]);
        assert_eq!(message_id(&read[1]), "legacy-message:s1:0");
        assert_eq!(message_id(&read[3]), "legacy-message:s1:4");
        assert_eq!(message_id(&read[4]), "legacy-message:s1:5");
        assert_eq!(message_id(&read[5]), "legacy-message:s1:6");
        assert_eq!(reader.conversions().pre_identity_message, 4);
        assert_eq!(reader.conversions().total(), 4);
        // A current-looking message missing its id is not guessed into validity.
        let half = r#"{"type":"user/message","data":{"role":"user","content":"x","source":{"kind":"user"}}}"#;
        let (reader, read) = read_all(&[HEADER, half]);
        assert!(matches!(read[1], Err(LineError::Shape(_))));
        assert_eq!(reader.conversions().total(), 0);
    }

    /// A `seq` that is no event number (`3.5`, `-1`, `null`, `"1"`) is a
    /// gap in dsh's words too (`event.seq !== this.events.length`); a safe
    /// whole number written `1.0` is that number.
    #[test]
    fn a_seq_that_is_no_event_number_is_a_gap_in_dsh_s_words() {
        let title = r#"{"type":"session/title","seq":0,"data":{}}"#;
        for seq in ["3.5", "-1", "null", r#""1""#] {
            let line = format!(r#"{{"type":"turn/start","seq":{seq},"data":{{"turn":1}}}}"#);
            let (_, read) = read_all(&[HEADER, title, &line]);
            let Some(Err(LineError::Refused(reason))) = read.last() else {
                panic!("{seq}: {read:?}");
            };
            let expected =
                format!("corrupt session log: seq gap in committed region (expected 1, got {seq})");
            assert_eq!(reason, &expected);
        }
        let whole = r#"{"type":"turn/start","seq":1.0,"data":{"turn":1}}"#;
        let (reader, read) = read_all(&[HEADER, title, whole]);
        assert!(read.iter().all(Result::is_ok), "{read:?}");
        assert_eq!(reader.next_seq, 2);
    }

    /// An empty packed row is refused in dsh's words, naming its own
    /// payload key (`validateRunData`).
    /// A packed row's last member happened at `time0` plus its gaps: what
    /// a writer appending after it stamps. A row whose gaps are no integers
    /// (dsh would not write one) still reads, stamped `time0`; a `time`
    /// beside `time0` is the record's. Before the first, the stamp had no
    /// time at all; a first version of it refused the other two.
    #[test]
    fn a_packed_rows_stamp_is_its_last_members_time() {
        let row = |envelope: &str, dt: &str| {
            format!(
                r#"{{"type":"text-chunks","seq0":0,{envelope},"data":{{"turn":1,"step":1,"index":0,"dt":{dt},"texts":["a","b","c"]}}}}"#
            )
        };
        for (envelope, dt, time) in [
            (r#""time0":200"#, "[1,2]", "203"),
            (r#""time0":200"#, "[1,-5]", "196"),
            (r#""time0":200"#, "[0.5,1]", "200"),
            (r#""time0":200"#, r#""1,2""#, "200"),
            (r#""time":7,"time0":200"#, "[1,2]", "7"),
        ] {
            let row = row(envelope, dt);
            let (reader, read) = read_all(&[HEADER, &row]);
            assert!(read.iter().all(Result::is_ok), "{row}: {read:?}");
            let stamp = reader.stamp().expect("numbered");
            assert_eq!(
                (stamp.next_seq, stamp.time.as_deref()),
                (3, Some(time)),
                "{row}"
            );
        }
    }

    #[test]
    fn an_empty_packed_row_is_refused_naming_its_payload() {
        let empty = |kind: &str, key: &str| {
            format!(
                r#"{{"type":"{kind}","data":{{"turn":1,"step":1,"index":0,"dt":[],"{key}":[]}}}}"#
            )
        };
        for (kind, key) in [("text-chunks", "texts"), ("tool-call-chunks", "args")] {
            let (_, read) = read_all(&[HEADER, &empty(kind, key)]);
            let Some(Err(LineError::Refused(reason))) = read.last() else {
                panic!("{kind}: {read:?}");
            };
            let expected =
                format!("malformed {kind} storage row: {key} must be a non-empty string array");
            assert_eq!(reason, &expected);
        }
    }

    #[test]
    fn a_seq_that_is_not_the_next_event_number_is_refused_as_dsh_refuses_it() {
        let at = |seq: &str| format!(r#"{{"type":"turn/start","{seq},"data":{{"turn":1}}}}"#);
        let packed = r#"{"type":"text-chunks","seq0":1,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b"]}}"#;
        let title = r#"{"type":"session/title","data":{}}"#;
        // In order, with or without `seq`, a packed row counting its members.
        let (reader, read) = read_all(&[HEADER, title, packed, &at(r#"seq":3"#), title]);
        assert!(read.iter().all(Result::is_ok), "{read:?}");
        assert_eq!(reader.next_seq, 5);
        for (lines, expected, got) in [
            (vec![HEADER, title, &at(r#"seq":2"#)], 1, 2),
            (vec![HEADER, &at(r#"seq":1"#)], 0, 1),
            (vec![HEADER, title, packed, &at(r#"seq":2"#)], 3, 2),
            (vec![HEADER, title, title, packed], 2, 1),
        ] {
            let (_, read) = read_all(&lines);
            let Some(Err(LineError::Refused(reason))) = read.last() else {
                panic!("{lines:?}: {read:?}");
            };
            assert_eq!(
                reason,
                &format!(
                    "corrupt session log: seq gap in committed region (expected {expected}, got {got})"
                )
            );
        }
        // A later header starts numbering again.
        let (_, read) = read_all(&[HEADER, title, HEADER, &at(r#"seq":0"#)]);
        assert!(read.iter().all(Result::is_ok), "{read:?}");
    }

    #[test]
    fn a_turn_start_trigger_is_dropped_only_from_the_whole_old_envelope() {
        let old = r#"{"type":"turn/start","data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}"#;
        let escaped = r#"{"type":"turn/start","data":{"turn":2,"trigg\u0065r":{"kind":"m"}}}"#;
        let (reader, read) = read_all(&[HEADER, old, escaped]);
        assert_eq!(
            read[1].as_ref().unwrap(),
            &LogLine::Delivery(Output::TurnStart { turn: 1 })
        );
        assert_eq!(
            read[2].as_ref().unwrap(),
            &LogLine::Delivery(Output::TurnStart { turn: 2 })
        );
        assert_eq!(reader.conversions().turn_start_trigger, 2);
        // dsh checks the old envelope on what `JSON.parse` gives: `1.0` and
        // `3e0` are the turns 1 and 3 (`Number.isSafeInteger(1.0)`).
        let fraction = r#"{"type":"turn/start","data":{"turn":1.0,"trigger":{"kind":"m"}}}"#;
        let exponent = r#"{"type":"turn/start","data":{"turn":3e0,"trigger":{"kind":"m"}}}"#;
        let (_, read) = read_all(&[HEADER, fraction, exponent]);
        assert_eq!(
            read[1].as_ref().unwrap(),
            &LogLine::Delivery(Output::TurnStart { turn: 1 })
        );
        assert_eq!(
            read[2].as_ref().unwrap(),
            &LogLine::Delivery(Output::TurnStart { turn: 3 })
        );
        for bad in [
            r#"{"type":"turn/start","data":{"turn":1,"trigger":{"kind":""}}}"#,
            r#"{"type":"turn/start","data":{"turn":0,"trigger":{"kind":"message"}}}"#,
            r#"{"type":"turn/start","data":{"turn":0.0,"trigger":{"kind":"message"}}}"#,
            r#"{"type":"turn/start","data":{"turn":1.5,"trigger":{"kind":"message"}}}"#,
            r#"{"type":"turn/start","data":{"turn":1,"trigger":{"kind":"m"},"x":1}}"#,
        ] {
            let (_, read) = read_all(&[HEADER, bad]);
            let Err(LineError::Refused(reason)) = &read[1] else {
                panic!("accepted {bad}");
            };
            assert_eq!(
                reason,
                r#"session "s1" contains malformed pre-react-loop turn/start at seq 0"#
            );
        }
    }

    /// A message's numbers come back from its line exactly: the writer
    /// prints the shortest text that reads back as the same double, which
    /// only an exact parser reads so (before, about 3 in 10 random doubles
    /// came back one ulp off, and a resumed inbox held another message).
    #[test]
    fn a_number_in_a_message_reads_back_as_written() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2000 {
            state = crate::hashing::mix(state);
            let number = f64::from_bits(state);
            if !number.is_finite() {
                continue;
            }
            let message = crate::Message::new(
                "m".into(),
                serde_json::json!([number]),
                crate::Source::user(),
            );
            let output = Output::UserMessage(message.clone());
            let line = durable_line(&output).expect("durable");
            let (_, read) = read_all(&[HEADER, &line]);
            let Ok(LogLine::Delivery(Output::UserMessage(back))) = &read[1] else {
                panic!("not read back: {line}: {:?}", read[1]);
            };
            assert_eq!(back, &message, "{line}");
        }
    }

    /// A `turn/end` of today's shape but for its `turn` is refused in dsh's
    /// words, and the refusal says it is the turn.
    #[test]
    fn a_turn_end_past_the_safe_integers_says_its_turn_is_wrong() {
        for turn in ["9007199254740992", "0", "1.5", "-1"] {
            let line = format!(
                r#"{{"type":"turn/end","data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#
            );
            let (_, read) = read_all(&[HEADER, &line]);
            let Err(LineError::Refused(reason)) = &read[1] else {
                panic!("accepted {line}");
            };
            assert!(
                reason.starts_with(
                    r#"session "s1" contains malformed pre-react-loop turn/end at seq 0: its `turn`"#
                ),
                "{reason}"
            );
        }
    }

    #[test]
    fn a_steering_message_becomes_the_identified_user_message() {
        let bare = r#"{"type":"steering/message","data":{"turn":1,"content":"s","source":{"kind":"user"}}}"#;
        let wrapped = r#"{"type":"steering/message","data":{"turn":1,"message":{"id":"w","role":"user","content":"s","source":{"kind":"user"}}}}"#;
        let old_wrapped = r#"{"type":"steering/message","data":{"turn":1,"message":{"content":"s","source":{"kind":"user"}}}}"#;
        let (reader, read) = read_all(&[HEADER, bare, wrapped, old_wrapped]);
        assert_eq!(message_id(&read[1]), "legacy-message:s1:0");
        assert_eq!(message_id(&read[2]), "w");
        assert_eq!(message_id(&read[3]), "legacy-message:s1:2");
        let converted = reader.conversions();
        assert_eq!(
            (converted.steering_message, converted.pre_identity_message),
            (3, 1)
        );
        let bad = r#"{"type":"steering/message","data":{"turn":1,"content":"s"}}"#;
        let (_, read) = read_all(&[HEADER, bad]);
        assert!(matches!(&read[1], Err(LineError::Refused(reason))
            if reason == r#"session "s1" contains malformed pre-react-loop steering/message at seq 0"#));
    }

    #[test]
    fn obsolete_event_types_and_other_versions_are_refused_in_dsh_s_words() {
        let lines = [
            (
                r#"{"type":"mode/set","data":{}}"#,
                "unsupported legacy mode/set event at seq 0",
            ),
            (
                r#"{"type":"request/header-delta","data":{}}"#,
                "unsupported legacy request/header-delta event at seq 0",
            ),
            (
                r#"{"type":"request/header","data":{"header":{},"reason":"fallback"}}"#,
                "unsupported legacy request/header reason \"fallback\" at seq 0",
            ),
        ];
        for (line, reason) in lines {
            let (_, read) = read_all(&[HEADER, line]);
            let Err(LineError::Refused(refused)) = &read[1] else {
                panic!("accepted {line}");
            };
            assert_eq!(refused, &format!("session \"s1\" contains {reason}"));
        }
        let initial = r#"{"type":"request/header","data":{"header":{},"reason":"initial"}}"#;
        assert!(read_all(&[HEADER, initial]).1[1].is_ok());
        let cases = [
            (
                r#"{"type":"session","id":"s"}"#,
                "corrupt session log: first line is not a session header",
            ),
            (
                r#"{"type":"session","version":"0","id":"s"}"#,
                "corrupt session log: first line is not a session header",
            ),
            (
                r#"{"type":"session","version":1,"id":"s"}"#,
                "session \"s\" uses log format v1, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":1.0,"id":"s"}"#,
                "session \"s\" uses log format v1, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":-1,"id":"s"}"#,
                "session \"s\" uses log format v-1, older than the supported v0",
            ),
            // Printed as JavaScript prints the number (`String(1e21)`).
            (
                r#"{"type":"session","version":1e21,"id":"s"}"#,
                "session \"s\" uses log format v1e+21, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":1.5e300,"id":"s"}"#,
                "session \"s\" uses log format v1.5e+300, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":2.50,"id":"s"}"#,
                "session \"s\" uses log format v2.5, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":123e18,"id":"s"}"#,
                "session \"s\" uses log format v123000000000000000000, but this harness",
            ),
            (
                r#"{"type":"session","version":1e-7,"id":"s"}"#,
                "session \"s\" uses log format v1e-7, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":0.000001,"id":"s"}"#,
                "session \"s\" uses log format v0.000001, but this harness reads only v0",
            ),
            (
                r#"{"type":"session","version":-0.0000012,"id":"s"}"#,
                "session \"s\" uses log format v-0.0000012, older than the supported v0",
            ),
            (
                r#"{"type":"session","version":-12e-8,"id":"s"}"#,
                "session \"s\" uses log format v-1.2e-7, older than the supported v0",
            ),
        ];
        // Every header dsh writes reads (`toHeaderLine`: its optional fields
        // present or not), and `0.0` is `0` to JavaScript.
        for header in [
            r#"{"type":"session","version":0.0,"id":"s","createdAt":1.7e12,"delegationDepth":0}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":0}"#,
            r#"{"type":"session","version":0,"id":"s"}"#,
            r#"{"type":"session","version":0,"id":"s","delegationDepth":0}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":5,"cwd":"/w","parentSession":"p","seedLength":3,"origin":"subagent","delegationDepth":2,"agentPreset":"a","later":true}"#,
        ] {
            assert!(matches!(parse_line(header), Ok(LogLine::Header(h)) if h.version == 0));
        }
        // What dsh's `isHeaderLine`, `fromHeaderLine` and `validateSessionHeader` refuse.
        let h = |fields: &str| format!(r#"{{"type":"session","version":0,"id":"s",{fields}}}"#);
        let depth = "session header delegationDepth must be a non-negative safe integer";
        let created = "session header createdAt must be a non-negative safe integer";
        let refused = [
            (h(r#""createdAt":-1"#), created),
            (h(r#""createdAt":0.5"#), created),
            (h(r#""createdAt":"0""#), created),
            (h(r#""createdAt":0,"delegationDepth":"0""#), depth),
            (h(r#""createdAt":0,"delegationDepth":-2"#), depth),
            (
                h(r#""createdAt":0,"seedLength":1.5"#),
                "session header seedLength must be a non-negative safe integer",
            ),
            (
                h(r#""createdAt":0,"origin":"user""#),
                "session header origin must be \"subagent\"",
            ),
            (
                h(r#""createdAt":0,"agentPreset":1"#),
                "session header agentPreset must be a string",
            ),
            (
                h(r#""createdAt":0,"parentSession":null"#),
                "session header parentSession must be a string",
            ),
            (
                h(r#""createdAt":0,"sandboxMode":"x""#),
                "session header uses retired policy baseline fields",
            ),
            (
                h(r#""createdAt":0,"approvalPolicy":null"#),
                "session header uses retired policy baseline fields",
            ),
            (
                r#"{"type":"session","version":0,"id":7,"createdAt":0}"#.to_owned(),
                "corrupt session log: first line is not a session header",
            ),
        ];
        let cases = cases
            .map(|(header, reason)| (header.to_owned(), reason))
            .into_iter()
            .chain(refused);
        for (header, reason) in cases {
            let Err(LineError::Refused(refused)) = parse_line(&header) else {
                panic!("accepted {header}");
            };
            assert!(refused.starts_with(reason), "{header}: {refused}");
        }
    }

    #[test]
    fn integral_numbers_with_a_fraction_or_exponent_read_as_json_parse_reads_them() {
        let read = |line: &str| parse_line(line).map_err(|error| error.to_string());
        for (line, expected) in [
            (
                r#"{"type":"turn/start","data":{"turn":1.0}}"#,
                Output::TurnStart { turn: 1 },
            ),
            (
                r#"{"type":"step/end","seq":0.0,"data":{"turn":2e0,"step":1E+1}}"#,
                Output::StepEnd { turn: 2, step: 10 },
            ),
            (
                // JavaScript's `-0 === 0`.
                r#"{"type":"step/end","seq":-0,"data":{"turn":2,"step":-0}}"#,
                Output::StepEnd { turn: 2, step: 0 },
            ),
            (
                r#"{"type":"turn/start","data":{"turn":9007199254740991.0}}"#,
                Output::TurnStart {
                    turn: 9_007_199_254_740_991,
                },
            ),
        ] {
            assert_eq!(read(line), Ok(LogLine::Delivery(expected)), "{line}");
        }
        let splice = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0.0,"removedCount":1.0,"inserted":[],"outcome":"canceled"}}"#;
        assert!(
            matches!(read(splice), Ok(LogLine::Delivery(Output::Spliced(s))) if s.removed_count == 1)
        );
        // A string that looks like a number is left alone, so is a number
        // that is no integer, or not a safe one.
        let text = r#"{"type":"user/message","data":{"id":"1.0","role":"user","content":"2.0 \" 3.0","source":{"kind":"user"}}}"#;
        let Ok(LogLine::Delivery(Output::UserMessage(message))) = read(text) else {
            panic!("{text}");
        };
        assert_eq!(message.id().as_str(), "1.0");
        assert_eq!(integral_numbers_as_integers(text), None);
        for line in [
            r#"{"type":"turn/start","data":{"turn":1.5}}"#,
            r#"{"type":"turn/start","data":{"turn":1e300}}"#,
            r#"{"type":"turn/start","data":{"turn":9007199254740993.0}}"#,
            r#"{"type":"turn/start","data":{"turn":-1.0}}"#,
        ] {
            assert!(
                matches!(parse_line(line), Err(LineError::Shape(_))),
                "{line}"
            );
        }
        // With a lone surrogate on the same line: both are mended.
        let both = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0.0,"inserted":[{"id":"m","role":"user","content":"a\ud83d","source":{"kind":"user"}}]}}"#;
        let mended = read(both);
        assert!(
            matches!(&mended, Ok(LogLine::Delivery(Output::Spliced(s))) if s.inserted.len() == 1),
            "{mended:?}"
        );
        // A duplicate key stays one when the numbers are rewritten.
        let twice = r#"{"type":"turn/start","data":{"turn":1.0,"turn":2}}"#;
        assert!(read(twice).unwrap_err().contains("duplicate field"));
        let twice = r#"{"type":"turn/start","data":{"turn":1,"turn":"x"}}"#;
        assert!(read(twice).unwrap_err().contains("duplicate field"));
    }

    #[test]
    fn a_surface_replacement_message_is_read_then_skipped() {
        let checkpoint = r#"{"type":"user/message","data":{"content":[],"source":{"kind":"plugin","plugin":"compact","compactionId":"c"},"role":"user","id":"k"},"sourceEventSeqs":[3],"surfaceOp":{"op":"replace","start":0,"end":2}}"#;
        let (reader, read) = read_all(&[HEADER, checkpoint]);
        assert_eq!(
            read[1].as_ref().unwrap(),
            &LogLine::Other("user/message".into())
        );
        assert_eq!(reader.next_seq, 1);
        let appended = checkpoint.replace(r#"{"op":"replace","start":0,"end":2}"#, r#""append""#);
        assert!(matches!(
            parse_line(&appended),
            Ok(LogLine::Delivery(Output::UserMessage(_)))
        ));
        // Still a message: a malformed one is refused, replacement or not.
        let malformed = checkpoint.replace(r#""id":"k""#, r#""id":7"#);
        assert!(matches!(parse_line(&malformed), Err(LineError::Shape(_))));
        let bad_op = checkpoint.replace(r#""op":"replace""#, r#""op":"insert""#);
        assert!(matches!(parse_line(&bad_op), Err(LineError::Refused(_))));
        let twice = checkpoint.replace(r#""surfaceOp""#, r#""surfaceOp":"append","surfaceOp""#);
        assert!(
            parse_line(&twice)
                .unwrap_err()
                .to_string()
                .contains("duplicate key")
        );
    }

    #[test]
    fn live_outputs_never_reach_the_log() {
        assert_eq!(durable_line(&Output::Idle), None);
        let mut line = String::from("left over");
        assert!(!encode_durable(&Output::Idle, &mut line));
        assert_eq!(line, "");
    }

    /// Messages of every source kind, with content and extras that need
    /// escaping (quotes, controls, non-ASCII) and numbers of each kind;
    /// fresh each call, so their JSON is not kept yet.
    fn varied_messages() -> Vec<crate::Message> {
        use crate::{Message, MessageId, Source};
        let mut extra = Map::new();
        extra.insert("form".into(), "a \"quoted\"\n\u{1}\u{e9}\u{1f600}".into());
        extra.insert("weight".into(), serde_json::json!(1.5));
        extra.insert("count".into(), serde_json::json!(-3));
        let content = serde_json::json!({"k": [1, null, true, 2.5e10, "x\\y", {"z": []}]});
        vec![
            Message::from("plain"),
            Message::new(
                MessageId::new("w\u{e9}ird \"id\"\\"),
                content,
                Source::Plugin {
                    plugin: "p\t".into(),
                    extra: extra.clone(),
                },
            ),
            Message::new(
                MessageId::new("g"),
                serde_json::json!("text"),
                Source::Goal {
                    goal_id: "g1".into(),
                    revision: 2,
                    round: u64::MAX,
                    extra: Map::new(),
                },
            ),
            Message::new(
                MessageId::new("o"),
                serde_json::json!([]),
                Source::Other {
                    kind: "custom".into(),
                    extra,
                },
            ),
            Message::new(
                MessageId::new("t"),
                Value::Null,
                Source::Tool { extra: Map::new() },
            ),
        ]
    }

    #[test]
    fn every_line_is_what_serialize_writes() {
        use crate::inbox::{Inserted, Outcome};
        use crate::{Cause, Target, TurnEnd};
        let mut outputs = vec![
            Output::TurnStart { turn: 1 },
            Output::StepStart { turn: 1, step: 2 },
            Output::StepEnd { turn: 3, step: 4 },
        ];
        let reasons = [
            TurnEnd::Completed,
            TurnEnd::Interrupted,
            TurnEnd::Aborted {
                reason: Cause::Hook {
                    reason: "v\"eto".into(),
                },
            },
        ];
        for reason in reasons {
            outputs.push(Output::TurnEnd { turn: 5, reason });
        }
        for target in Target::ALL {
            for (removed_count, outcome) in [(0, None), (2, Some(Outcome::Canceled)), (7, None)] {
                for taken in [0, 1, 5] {
                    let inserted: Inserted = varied_messages().into_iter().take(taken).collect();
                    outputs.push(Output::Spliced(Splice {
                        target,
                        start: 12,
                        removed_count,
                        inserted,
                        outcome,
                    }));
                }
            }
        }
        outputs.extend(varied_messages().into_iter().map(Output::UserMessage));
        for output in outputs {
            let expected = serde_json::to_string(&output).unwrap();
            // Once as the messages' JSON is made, once as it is kept.
            for _ in 0..2 {
                assert_eq!(durable_line(&output).as_ref(), Some(&expected));
            }
        }
        // A kept message still reads back as itself.
        let message = varied_messages().swap_remove(1);
        let line = durable_line(&Output::UserMessage(message.clone())).unwrap();
        assert_eq!(
            parse_line(&line).unwrap(),
            LogLine::Delivery(Output::UserMessage(message))
        );
    }

    #[test]
    fn a_reused_buffer_holds_exactly_the_latest_line() {
        let long = Output::UserMessage(crate::Message::from("a-rather-long-message-id"));
        let short = Output::TurnStart { turn: 7 };
        let mut line = String::new();
        assert!(encode_durable(&long, &mut line));
        assert_eq!(Some(line.clone()), durable_line(&long));
        assert!(encode_durable(&short, &mut line));
        assert_eq!(line, r#"{"type":"turn/start","data":{"turn":7}}"#);
    }
}
