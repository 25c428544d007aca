//! The durable session log in the dsh JSONL shapes
//! (`fixtures/dsh-logs/README.md`): one JSON object per line, a `session`
//! header first, then `{"type": ..., "data": ...}` events. Every log Courier
//! writes and reads goes through this module.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::Output;

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

    /// The header as one JSONL line (without the newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("a header always serializes")
    }
}

/// The JSONL line of a durable output (without the newline); `None` for a
/// live notification, which never reaches the log.
pub fn durable_line(output: &Output) -> Option<String> {
    output
        .is_durable()
        .then(|| serde_json::to_string(output).expect("an output always serializes"))
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
    /// `session/end-seed`: a fork's copied history ends at its first one
    /// (the header has `seedLength`); a resume appends one as a marker.
    EndSeed,
    /// Any other event type: outside the delivery contract, skipped.
    Other(String),
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

/// Parses one JSONL line. A delivery event with a wrong shape is an error; an
/// unknown event type is [`LogLine::Other`].
pub fn parse_line(line: &str) -> Result<LogLine, serde_json::Error> {
    #[derive(Deserialize)]
    struct Tagged {
        #[serde(rename = "type")]
        kind: String,
    }
    let tagged: Tagged = serde_json::from_str(line)?;
    parse_contract_line(&tagged.kind, line).unwrap_or(Ok(LogLine::Other(tagged.kind)))
}

/// Parses, in one pass, a line whose `type` the caller already knows (a
/// streaming reader peeks it at the front of the line); `None` when that
/// type is outside the contract, whose data this module never reads. `kind`
/// must be the line's own `type`.
pub fn parse_contract_line(kind: &str, line: &str) -> Option<Result<LogLine, serde_json::Error>> {
    match kind {
        "session" => Some(serde_json::from_str(line).map(LogLine::Header)),
        "session/end-seed" => {
            Some(serde_json::from_str::<IgnoredAny>(line).map(|_| LogLine::EndSeed))
        }
        kind if DELIVERY_TYPES.contains(&kind) => {
            Some(serde_json::from_str(line).map(LogLine::Delivery))
        }
        _ => None,
    }
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
    fn a_known_type_parses_as_parse_line_does() {
        let lines = [
            r#"{"type":"session","version":0,"id":"s","parentSession":"p"}"#,
            r#"{"type":"session/end-seed","data":{}}"#,
            r#"{"type":"step/end","data":{"turn":1,"step":2}}"#,
        ];
        for line in lines {
            let kind: Value = serde_json::from_str(line).unwrap();
            let kind = kind["type"].as_str().unwrap();
            let parsed = parse_contract_line(kind, line).unwrap().unwrap();
            assert_eq!(parsed, parse_line(line).unwrap(), "{line}");
        }
        let chunk = r#"{"type":"assistant/chunk","data":{}}"#;
        assert!(parse_contract_line("assistant/chunk", chunk).is_none());
        let cut = r#"{"type":"session/end-seed","data":{"#;
        assert!(
            parse_contract_line("session/end-seed", cut)
                .unwrap()
                .is_err()
        );
        assert!(
            parse_contract_line("turn/start", r#"{"type":"turn/start"}"#)
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn live_outputs_never_reach_the_log() {
        assert_eq!(durable_line(&Output::Idle), None);
    }
}
