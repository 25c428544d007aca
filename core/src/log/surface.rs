//! How a `user/message` enters dsh's model-visible surface (its `surfaceOp`),
//! as dsh's session checks it (`packages/core/session/src/surface.ts`,
//! `surfaceOpOf` and `isReplaceOp`).
//!
//! `"append"` is a message that joined the conversation: a delivery. An
//! object `{"op":"replace","start":S,"end":E}` replaces the surface span
//! from event S to event E with this message: compaction writes its
//! checkpoint so (`compaction-basic/src/region.ts`, `commitCompactionBody`,
//! with source `{"kind":"plugin","plugin":"compact"}`), between turns
//! (`compactNow`, `turn: null`), before a step (the `agent/pre-step`
//! listener) or inside one (overflow recovery). It delivers nothing, so the
//! reader skips it. A record without `surfaceOp` is read as a delivery (the
//! contract's logs, and Courier's, leave it out).

use serde::Deserialize;
use serde_json::value::RawValue;

use super::LineError;
use super::legacy::SAFE;

/// Whether a `user/message`'s `surfaceOp` replaces a surface span (`false`:
/// it appends); anything else is refused in dsh's words.
pub(super) fn replaces(op: &RawValue) -> Result<bool, LineError> {
    /// dsh's exact replace shape: these three keys and no other.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Replace {
        op: String,
        start: f64,
        end: f64,
    }
    let refused = |what: &str| {
        LineError::Refused(format!(
            "session event \"user/message\" carries an invalid {what}surfaceOp"
        ))
    };
    let raw = op.get();
    if raw == r#""append""# {
        return Ok(false);
    }
    if raw.starts_with('"') {
        // The same string with escapes (rare: read only then).
        return match serde_json::from_str::<String>(raw) {
            Ok(op) if op == "append" => Ok(false),
            _ => Err(refused("")),
        };
    }
    if !raw.starts_with('{') {
        return Err(refused(""));
    }
    let replace: Replace = serde_json::from_str(raw).map_err(|_| refused("replace "))?;
    let event_seq = |n: f64| n.fract() == 0.0 && (0.0..=SAFE).contains(&n);
    if replace.op == "replace" && event_seq(replace.start) && event_seq(replace.end) {
        Ok(true)
    } else {
        Err(refused("replace "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(op: &str) -> Result<bool, String> {
        let raw: Box<RawValue> = serde_json::from_str(op).unwrap();
        replaces(&raw).map_err(|error| error.to_string())
    }

    #[test]
    fn append_appends_and_a_whole_replace_replaces() {
        assert_eq!(read(r#""append""#), Ok(false));
        assert_eq!(read(r#""\u0061ppend""#), Ok(false));
        assert_eq!(read(r#"{"op":"replace","start":4,"end":4}"#), Ok(true));
        assert_eq!(
            read(r#" { "end" : 9 , "start" : 0, "op": "replace" }"#),
            Ok(true)
        );
    }

    #[test]
    fn any_other_surface_op_is_refused_in_dsh_s_words() {
        let invalid = "refused as dsh refuses it: session event \"user/message\" carries an invalid surfaceOp";
        for op in [r#""replace""#, "1", "null", r#"["append"]"#, r#""Append""#] {
            assert_eq!(read(op), Err(invalid.to_owned()), "{op}");
        }
        let replace = "refused as dsh refuses it: session event \"user/message\" carries an invalid replace surfaceOp";
        for op in [
            r#"{"op":"append","start":1,"end":1}"#,
            r#"{"op":"replace","start":1}"#,
            r#"{"op":"replace","start":-1,"end":1}"#,
            r#"{"op":"replace","start":1.5,"end":2}"#,
            r#"{"op":"replace","start":1,"end":2,"x":0}"#,
            r#"{"op":"replace","start":"1","end":2}"#,
        ] {
            assert_eq!(read(op), Err(replace.to_owned()), "{op}");
        }
    }
}
