//! dsh's load-time conversions of its older records, followed exactly.
//!
//! dsh (`deepseek-ai/deepseek-harness`) changed some durable records without
//! bumping the log format version (still 0), and its persistence
//! coordinator converts those exact older shapes when it reads a log
//! (`packages/session/session-persistence/src/coordinator.ts`, README:
//! "Backend reads convert the exact supported older records"). Each rule
//! here names the dsh function it follows; a record dsh refuses is refused
//! with dsh's own words. The log file is never rewritten (dsh's storage is
//! append-only too); only the reader's view changes.
//!
//! Not followed, on purpose: the `assistant/message` and `tool/result`
//! conversions (`migrateLegacyMessageEvent`), whose records are outside the
//! delivery contract and never read past their type.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::{Cause, Output, TurnEnd};

/// The format version dsh reads and writes (`SESSION_FORMAT_VERSION`).
const FORMAT_VERSION: u64 = 0;

/// Where a record sits: what dsh's conversions and refusals name.
pub(super) struct At<'a> {
    /// The session's id, from its header.
    pub session: &'a str,
    /// The record's event sequence number.
    pub seq: u64,
}

/// How many records of a log were converted, per rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Conversions {
    /// `turn/start` records that lost their obsolete `trigger`.
    pub turn_start_trigger: u64,
    /// `steering/message` records read as the identified `user/message`.
    pub steering_message: u64,
    /// Pre-identity `user/message` records given their legacy id.
    pub pre_identity_message: u64,
    /// `turn/end` records whose older reason was read in today's words.
    pub turn_end_reason: u64,
}

impl Conversions {
    /// Records converted, all rules together.
    pub fn total(&self) -> u64 {
        self.turn_start_trigger
            + self.steering_message
            + self.pre_identity_message
            + self.turn_end_reason
    }
}

/// The header, as dsh checks it when it restores a session. First its
/// JSONL loader (`packages/session/session-persistence-jsonl/src/format.ts`,
/// `parseHeaderRecord`): another format version is refused before anything
/// else (`refuseForeignFormatVersion`, with `sessionFormatVersionRefusal`'s
/// words), a header without a numeric `version` or a string `id` is not a
/// header at all (`isHeaderLine`: the log is refused as corrupt), and one
/// with the retired `sandboxMode` or `approvalPolicy` is refused
/// (`fromHeaderLine`). Then the session's own check, which every backend's
/// header goes through (`validateSessionHeader`,
/// `packages/core/session/src/index.ts`): `createdAt`, `delegationDepth`
/// and `seedLength`, when present, whole numbers from 0;
/// `origin`, when present, `subagent`; `parentSession` and `agentPreset`,
/// when present, strings. Every header dsh writes (`toHeaderLine`) passes.
///
/// Not followed: the demand that `createdAt` be present (every header dsh
/// writes has one, but a hand-written log's minimal header, `{"type":
/// "session","version":0,"id":"s"}`, stays readable: delivery never reads
/// the time), the JSONL loader's demand that `delegationDepth` be
/// present (dsh's session layer makes it optional, and dsh's own web
/// snapshots, `apps/web/tests/snapshots/*/session.jsonl`, leave it out), and
/// that `cwd` be absolute (snapshots write `{{cwd}}`, Courier's own logs "").
pub(super) fn check_header(header: &Map<String, Value>) -> Result<(), String> {
    let id = match header.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(other) => other.to_string(),
        None => "undefined".into(),
    };
    // A JavaScript number: `0.0` is `0`, and prints as JavaScript prints it.
    let number = |key: &str| match header.get(key) {
        Some(Value::Number(number)) => number.as_f64(),
        _ => None,
    };
    let version = number("version");
    let printed = version.map(javascript_number).unwrap_or_default();
    match version {
        Some(version) if version > FORMAT_VERSION as f64 => {
            return Err(format!(
                "session \"{id}\" uses log format v{printed}, but this harness reads only \
                 v{FORMAT_VERSION}: the log was written by a newer harness — upgrade the \
                 harness to open it"
            ));
        }
        Some(version) if version < FORMAT_VERSION as f64 => {
            return Err(format!(
                "session \"{id}\" uses log format v{printed}, older than the supported \
                 v{FORMAT_VERSION}, and this build ships no upgrade path for it"
            ));
        }
        Some(_) | None => {}
    }
    // `isHeaderLine` refuses a `-0` count (`Object.is(x, -0)`), though
    // `-0 >= 0` holds.
    let negative_zero = ["createdAt", "delegationDepth"]
        .into_iter()
        .find(|key| number(key).is_some_and(|n| n == 0.0 && n.is_sign_negative()));
    let why = match negative_zero {
        _ if version.is_none() || !header.get("id").is_some_and(Value::is_string) => {
            "requires a numeric `version` and a string `id`".to_owned()
        }
        Some(key) => format!("refuses a `{key}` of -0"),
        None => return check_fields(header),
    };
    Err(format!(
        "corrupt session log: first line is not a session header (dsh's JSONL loader {why})"
    ))
}

/// The header's other fields, checked as dsh's session store checks them.
fn check_fields(header: &Map<String, Value>) -> Result<(), String> {
    if header.contains_key("sandboxMode") || header.contains_key("approvalPolicy") {
        return Err("session header uses retired policy baseline fields".into());
    }
    let count = |value: &Value| {
        value
            .as_f64()
            .is_some_and(|n| n.fract() == 0.0 && (0.0..=SAFE).contains(&n))
    };
    for key in ["createdAt", "delegationDepth", "seedLength"] {
        if !header.get(key).is_none_or(count) {
            return Err(format!(
                "session header {key} must be a non-negative safe integer"
            ));
        }
    }
    if !header
        .get("origin")
        .is_none_or(|origin| origin == "subagent")
    {
        return Err("session header origin must be \"subagent\"".into());
    }
    for key in ["cwd", "parentSession", "agentPreset"] {
        if !header.get(key).is_none_or(Value::is_string) {
            return Err(format!("session header {key} must be a string"));
        }
    }
    Ok(())
}

/// A number as JavaScript's `String(number)` prints it (ECMAScript's
/// `Number::toString`), as dsh's refusals print a version: `1e+21`,
/// `1e-7`, `1.5e+300`; `-0` prints `0`.
fn javascript_number(number: f64) -> String {
    ryu_js::Buffer::new().format(number).to_owned()
}

/// `Number.MAX_SAFE_INTEGER`: dsh's counts and numbers are safe integers.
pub(super) const SAFE: f64 = 9_007_199_254_740_991.0;

/// Event types of dsh's obsolete v0 vocabulary, refused as `assertSupportedEvents`
/// (coordinator.ts) refuses them: `request/header-delta`, `mode/set`, and a
/// `request/header` whose reason is `fallback`. `None` for anything else.
pub(super) fn refusal(kind: &str, data: Option<&RawValue>, at: &At) -> Option<String> {
    let At { session, seq } = at;
    match kind {
        "request/header-delta" | "mode/set" => Some(format!(
            "session \"{session}\" contains unsupported legacy {kind} event at seq {seq}"
        )),
        "request/header" => {
            /// Only the reason is read; the rest (prompts, tools) is skipped.
            #[derive(serde::Deserialize)]
            struct Reason {
                reason: Option<Value>,
            }
            // Headers are large (prompts, tool schemas): only data that
            // could spell `fallback` (a letter can only be escaped as
            // `\u`) is read.
            let raw = data.map_or("", RawValue::get);
            if !raw.contains("fallback") && !raw.contains("\\u") {
                return None;
            }
            let reason = serde_json::from_str::<Reason>(raw).ok();
            let fallback = reason
                .and_then(|r| r.reason)
                .is_some_and(|r| r == "fallback");
            fallback.then(|| {
                format!(
                    "session \"{session}\" contains unsupported legacy request/header \
                     reason \"fallback\" at seq {seq}"
                )
            })
        }
        _ => None,
    }
}

/// dsh's `legacyMessageId`: the deterministic id of a message persisted
/// before messages had ids.
fn legacy_message_id(at: &At) -> Value {
    Value::String(format!("legacy-message:{}:{}", at.session, at.seq))
}

/// Whether `record` has every `required` key and no other
/// (dsh's `hasOnlyKeys` without optional keys).
fn has_only_keys(record: &Map<String, Value>, required: &[&str]) -> bool {
    record.keys().all(|key| required.contains(&key.as_str()))
        && required.iter().all(|key| record.contains_key(*key))
}

/// JavaScript's `Number.isSafeInteger` over a JSON value.
fn is_safe_integer(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_f64)
        .is_some_and(|n| n.fract() == 0.0 && n.abs() <= SAFE)
}

/// `migrateLegacyTurnStartEvent`: a pre-react-loop `turn/start` loses its
/// obsolete `trigger` once its whole old envelope checks (`turn` a safe
/// integer from 1, only `turn` and `trigger`, a trigger with a non-empty
/// `kind`); otherwise it is malformed. `None` when there is no trigger.
pub(super) fn turn_start(data: &Map<String, Value>, at: &At) -> Option<Result<Output, String>> {
    if !data.contains_key("trigger") {
        return None;
    }
    // `JSON.parse` reads `1.0` and `1e0` as 1: a number, not only a `u64`.
    let turn = data.get("turn").and_then(Value::as_f64);
    let kind = data.get("trigger").and_then(|t| t.get("kind"));
    let well_formed = is_safe_integer(data.get("turn"))
        && turn.is_some_and(|turn| turn >= 1.0)
        && has_only_keys(data, &["turn", "trigger"])
        && data.get("trigger").is_some_and(Value::is_object)
        && kind
            .and_then(Value::as_str)
            .is_some_and(|kind| !kind.is_empty());
    Some(match turn {
        // A safe integer from 1: exact as a `u64`.
        Some(turn) if well_formed => Ok(Output::TurnStart { turn: turn as u64 }),
        _ => Err(malformed("turn/start", at)),
    })
}

/// `migrateLegacyTurnEndEvent`, which dsh applies to every `turn/end`: the
/// envelope must be exactly `turn` (a safe integer from 1) and `reason` (an
/// object with a string `kind`); the plain kinds must carry nothing else.
/// The older reasons are converted: a bare `aborted` (its cause was not
/// recorded) to `aborted` with dsh's `legacy` cause, `disposed` to
/// `aborted:disposed`, and an `error` with its `step` and `message` (and
/// `code`) or `failure` to `error`. `Ok(None)`: today's shape, read as it
/// is. One departure: dsh's current `error` reason carries an `error`
/// object, while the contract's (what Courier writes) is a bare
/// `{"kind":"error"}`, which dsh would call malformed; it is read as today's.
pub(super) fn turn_end(data: &Map<String, Value>, at: &At) -> Result<Option<Output>, String> {
    let malformed = || malformed("turn/end", at);
    let turn = data.get("turn").and_then(Value::as_f64);
    let reason = data.get("reason").and_then(Value::as_object);
    let kind = reason.and_then(|reason| reason.get("kind")?.as_str());
    let (Some(turn), Some(reason), Some(kind)) = (turn, reason, kind) else {
        return Err(malformed());
    };
    if turn < 1.0 || !is_safe_integer(data.get("turn")) {
        // dsh's words say only that the shape is wrong: which part is said
        // too (a turn past 2^53 - 1 is today's shape otherwise).
        return Err(format!(
            "{}: its `turn` is not a whole number from 1 to 2^53 - 1 \
             (9007199254740991, the largest JSON.parse reads exactly)",
            malformed()
        ));
    }
    if !has_only_keys(data, &["turn", "reason"]) {
        return Err(malformed());
    }
    // A safe integer from 1: exact as a `u64`.
    let turn = turn as u64;
    let bare = has_only_keys(reason, &["kind"]);
    let converted = match kind {
        "completed" | "blocked" | "max-tokens" | "interrupted" if bare => return Ok(None),
        "completed" | "blocked" | "max-tokens" | "interrupted" => return Err(malformed()),
        "aborted" if reason.contains_key("reason") => return Ok(None),
        "aborted" if bare => TurnEnd::Aborted {
            reason: Cause::Legacy,
        },
        "disposed" if bare => TurnEnd::Aborted {
            reason: Cause::Disposed,
        },
        "error" if bare || reason.contains_key("error") => return Ok(None),
        "error" if older_error(reason) => TurnEnd::Error,
        "aborted" | "disposed" | "error" => return Err(malformed()),
        _ => return Ok(None),
    };
    Ok(Some(Output::TurnEnd {
        turn,
        reason: converted,
    }))
}

/// An `error` reason of dsh's older shapes: a `step` (a safe integer from
/// 0) with either a `failure` (`message` and `code` strings, optional
/// `status`, `providerRetryAfterMs` numbers and `requestId` string) or a
/// `message` string and an optional `code` string.
fn older_error(reason: &Map<String, Value>) -> bool {
    let step = reason.get("step");
    if !is_safe_integer(step) || step.and_then(Value::as_f64).is_none_or(|step| step < 0.0) {
        return false;
    }
    let string =
        |record: &Map<String, Value>, key: &str| record.get(key).is_some_and(Value::is_string);
    let absent_or = |record: &Map<String, Value>, key: &str, check: fn(&Value) -> bool| {
        record.get(key).is_none_or(check)
    };
    if let Some(Value::Object(failure)) = reason.get("failure") {
        let allowed = [
            "message",
            "code",
            "status",
            "providerRetryAfterMs",
            "requestId",
        ];
        return has_only_keys(reason, &["kind", "step", "failure"])
            && failure.keys().all(|key| allowed.contains(&key.as_str()))
            && string(failure, "message")
            && string(failure, "code")
            && absent_or(failure, "status", Value::is_number)
            && absent_or(failure, "providerRetryAfterMs", Value::is_number)
            && absent_or(failure, "requestId", Value::is_string);
    }
    let keys: &[&str] = if reason.contains_key("code") {
        &["kind", "step", "message", "code"]
    } else {
        &["kind", "step", "message"]
    };
    has_only_keys(reason, keys)
        && string(reason, "message")
        && absent_or(reason, "code", Value::is_string)
}

/// `migrateLegacySteeringEvent`: the removed `steering/message` becomes
/// the same identified `user/message`: a wrapped `{turn, message}` is its
/// message, an older `{turn, content, source}` gets the legacy id and role
/// `user` (both then go through [`pre_identity_message`], as in dsh's
/// `snapshotStoredEvents`). Anything else is malformed.
pub(super) fn steering_message(data: Value, at: &At) -> Result<Map<String, Value>, String> {
    let Value::Object(mut data) = data else {
        return Err(malformed("steering/message", at));
    };
    let turn = is_safe_integer(data.get("turn"));
    if turn
        && has_only_keys(&data, &["turn", "message"])
        && let Some(Value::Object(message)) = data.remove("message")
    {
        return Ok(message);
    }
    if !turn || !has_only_keys(&data, &["turn", "content", "source"]) {
        return Err(malformed("steering/message", at));
    }
    data.remove("turn");
    data.insert("id".into(), legacy_message_id(at));
    data.insert("role".into(), "user".into());
    Ok(data)
}

/// `migrateLegacyMessageEvent`, `user/message` arm: a message with
/// `content` and `source` but no `id`, `role` or `message` predates message
/// ids and gets the legacy id and role `user` (`true`). Any other shape
/// stays as it is (a malformed current record is refused, not
/// guessed into validity).
pub(super) fn pre_identity_message(data: &mut Map<String, Value>, at: &At) -> bool {
    let legacy = ["id", "role", "message"]
        .iter()
        .all(|key| !data.contains_key(*key))
        && data.contains_key("content")
        && data.contains_key("source");
    if legacy {
        data.insert("id".into(), legacy_message_id(at));
        data.insert("role".into(), "user".into());
    }
    legacy
}

/// dsh's words for an older record whose shape is not the one it converts.
fn malformed(kind: &str, at: &At) -> String {
    let At { session, seq } = at;
    format!("session \"{session}\" contains malformed pre-react-loop {kind} at seq {seq}")
}
