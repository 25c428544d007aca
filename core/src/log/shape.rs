//! What a delivery record that does not parse should have held, in the
//! log's words: serde names its own types ("invalid length 0, expected
//! struct Fields with 4 elements"), which tells a user neither the field
//! nor what belongs there. Run only on a line already refused, so a log
//! that reads pays nothing for it.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::message::{Cause, TurnEnd};

/// What a message must be (SPEC §1, as `fixtures/dsh-logs/README.md` writes it).
const MESSAGE: &str = "a message (an object with `id`, `role`, `content` and `source`)";

/// The first field of a delivery record's `data` that is not what the
/// record needs, said as `` `field` is ...: expected ... ``; `None` when
/// nothing this knows is wrong (serde's own words are kept then).
pub(super) fn explain(kind: &str, data: Option<&Value>) -> Option<String> {
    let Some(data) = data else {
        return Some("`data` is missing: expected an object".into());
    };
    let problem = match kind {
        "agent/inbox/spliced" => splice(data),
        "turn/start" => fields(data, &["turn"]),
        "step/start" | "step/end" => fields(data, &["turn", "step"]),
        "turn/end" => match fields(data, &["turn"]) {
            None => return turn_end_reason(data),
            problem => problem,
        },
        "user/message" => message(data),
        _ => None,
    }?;
    let Problem {
        path,
        found,
        expected,
    } = problem;
    Some(format!("`data{path}` {found}: expected {expected}"))
}

/// A wrong field: where (after `data`), what is there, what belongs there.
struct Problem {
    path: String,
    found: String,
    expected: &'static str,
}

impl Problem {
    fn new(path: String, value: Option<&Value>, expected: &'static str) -> Self {
        Self {
            path,
            found: found(value),
            expected,
        }
    }
}

/// The value as a user would name it.
fn found(value: Option<&Value>) -> String {
    match value {
        None => "is missing".into(),
        Some(Value::Null) => "is null".into(),
        Some(Value::Bool(flag)) => format!("is {flag}"),
        Some(Value::Number(number)) => format!("is {number}"),
        Some(Value::String(text)) => format!("is the string {text:?}"),
        Some(Value::Array(items)) if items.is_empty() => "is an empty array".into(),
        Some(Value::Array(_)) => "is an array".into(),
        Some(Value::Object(_)) => "is an object".into(),
    }
}

/// The record's data as an object, or the problem that it is not one.
fn object(data: &Value) -> Result<&Map<String, Value>, Problem> {
    data.as_object()
        .ok_or_else(|| Problem::new(String::new(), Some(data), "an object"))
}

/// A count or a number of the log: `JSON.parse` reads `1.0` as `1`.
fn is_whole(value: &Value) -> bool {
    value.as_u64().is_some()
        || value
            .as_f64()
            .is_some_and(|x| x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_991.0)
}

/// Each of `names` a whole number.
fn fields(data: &Value, names: &[&str]) -> Option<Problem> {
    let fields = match object(data) {
        Ok(fields) => fields,
        Err(problem) => return Some(problem),
    };
    names.iter().find_map(|name| {
        let value = fields.get(*name);
        (!value.is_some_and(is_whole)).then(|| {
            Problem::new(
                format!(".{name}"),
                value,
                "a whole number from 0 to 18446744073709551615",
            )
        })
    })
}

/// A `turn/end`'s `reason` that does not read, named at the innermost part
/// serde refuses (an abort's cause, else the reason), in serde's words: its
/// types list the kinds, so they are not listed again here.
fn turn_end_reason(data: &Value) -> Option<String> {
    const KINDED: &str = "an object with a `kind`";
    let reason = data.get("reason");
    let Some(reason) = reason.filter(|reason| reason.is_object()) else {
        let found = found(reason);
        return Some(format!(
            "`data.reason` {found}: expected {KINDED} (how the turn ended)"
        ));
    };
    let aborted = reason.get("kind").and_then(Value::as_str) == Some("aborted");
    if let Some(cause) = reason.get("reason").filter(|_| aborted) {
        let said = |why: &dyn std::fmt::Display| {
            format!("`data.reason.reason` {}: {why}", found(Some(cause)))
        };
        if !cause.is_object() {
            return Some(said(&format_args!(
                "expected {KINDED} (why it was aborted)"
            )));
        }
        if let Err(error) = Cause::deserialize(cause) {
            return Some(said(&error));
        }
    }
    let error = TurnEnd::deserialize(reason).err()?;
    Some(format!("`data.reason` {}: {error}", found(Some(reason))))
}

fn splice(data: &Value) -> Option<Problem> {
    let fields = match object(data) {
        Ok(fields) => fields,
        Err(problem) => return Some(problem),
    };
    let target = fields.get("target");
    if !matches!(
        target.and_then(Value::as_str),
        Some("next-turn" | "next-step")
    ) {
        return Some(Problem::new(
            ".target".into(),
            target,
            "`next-turn` or `next-step`",
        ));
    }
    let counts = [("start", false), ("removedCount", true)];
    for (name, optional) in counts {
        let value = fields.get(name);
        let fine = match value {
            None => optional,
            Some(value) => is_whole(value),
        };
        if !fine {
            return Some(Problem::new(
                format!(".{name}"),
                value,
                "a whole number from 0 to 18446744073709551615",
            ));
        }
    }
    let outcome = fields.get("outcome");
    if outcome.is_some_and(|outcome| outcome.as_str() != Some("canceled")) {
        return Some(Problem::new(
            ".outcome".into(),
            outcome,
            "`canceled` (or no `outcome`)",
        ));
    }
    let inserted = fields.get("inserted");
    let Some(messages) = inserted.and_then(Value::as_array) else {
        return Some(Problem::new(
            ".inserted".into(),
            inserted,
            "an array of messages",
        ));
    };
    messages.iter().enumerate().find_map(|(at, item)| {
        message(item).map(|problem| Problem {
            path: format!(".inserted[{at}]{}", problem.path),
            ..problem
        })
    })
}

fn message(data: &Value) -> Option<Problem> {
    let Some(fields) = data.as_object() else {
        return Some(Problem::new(String::new(), Some(data), MESSAGE));
    };
    let id = fields.get("id");
    if !id.is_some_and(Value::is_string) {
        return Some(Problem::new(
            ".id".into(),
            id,
            "a string (the message's id)",
        ));
    }
    let role = fields.get("role");
    if role.and_then(Value::as_str) != Some("user") {
        return Some(Problem::new(".role".into(), role, "`user`"));
    }
    if !fields.contains_key("content") {
        return Some(Problem::new(
            ".content".into(),
            None,
            "the message's content",
        ));
    }
    let source = fields.get("source");
    let kind = source.and_then(|source| source.get("kind"));
    if !kind.is_some_and(Value::is_string) {
        return match source {
            Some(Value::Object(_)) => Some(Problem::new(
                ".source.kind".into(),
                kind,
                "a string (who produced the message)",
            )),
            _ => Some(Problem::new(
                ".source".into(),
                source,
                "an object with a string `kind`",
            )),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explained(kind: &str, data: &str) -> Option<String> {
        explain(kind, Some(&serde_json::from_str(data).unwrap()))
    }

    #[test]
    fn the_first_wrong_field_is_named_with_what_belongs_there() {
        let message = r#"{"id":"A","role":"user","content":[],"source":{"kind":"user"}}"#;
        let splice = |rest: &str| format!(r#"{{"target":"next-step","start":1.0,{rest}}}"#);
        let cases = [
            (
                splice(&format!(r#""removedCount":"2","inserted":[{message}]"#)),
                "`data.removedCount` is the string \"2\": expected a whole number from 0 to 18446744073709551615",
            ),
            (
                splice(&format!(
                    r#""inserted":[{message},{{"id":"B","role":"user"}}]"#
                )),
                "`data.inserted[1].content` is missing: expected the message's content",
            ),
            (
                splice(r#""inserted":[{"id":"B","role":"user","content":1,"source":{}}]"#),
                "`data.inserted[0].source.kind` is missing: expected a string (who produced the message)",
            ),
        ];
        for (data, expected) in cases {
            let found = explained("agent/inbox/spliced", &data);
            assert_eq!(found.as_deref(), Some(expected), "{data}");
        }
    }

    /// A `turn/end` reason is named at its innermost wrong part, an
    /// abort's cause included. Before, serde's words named no field
    /// (`missing field `reason` (column 89)`).
    #[test]
    fn a_wrong_turn_end_reason_is_named_at_its_innermost_part() {
        let cases = [
            (
                r#"{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"hook"}}}"#,
                "`data.reason.reason` is an object: missing field `reason`",
            ),
            (
                r#"{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"weird"}}}"#,
                "`data.reason.reason` is an object: unknown variant `weird`, expected one of \
                 `user`, `parent`, `hook`, `disposed`, `legacy`",
            ),
            (
                r#"{"turn":1,"reason":"completed"}"#,
                "`data.reason` is the string \"completed\": expected an object with a `kind` \
                 (how the turn ended)",
            ),
            (
                r#"{"turn":1}"#,
                "`data.reason` is missing: expected an object with a `kind` (how the turn ended)",
            ),
            (
                r#"{"turn":1,"reason":{"kind":"aborted","reason":"user"}}"#,
                "`data.reason.reason` is the string \"user\": expected an object with a `kind` \
                 (why it was aborted)",
            ),
            (
                r#"{"turn":1,"reason":{"kind":"finished"}}"#,
                "`data.reason` is an object: unknown variant `finished`, expected one of \
                 `completed`, `max-tokens`, `blocked`, `aborted`, `error`, `interrupted`",
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(
                explained("turn/end", data).as_deref(),
                Some(expected),
                "{data}"
            );
        }
        let fine = r#"{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}"#;
        assert_eq!(explained("turn/end", fine), None);
    }

    /// Where nothing this knows is wrong (`1.0` is a whole number, as
    /// `JSON.parse` reads it; a goal source's own fields are the source's
    /// to name), serde's words stay.
    #[test]
    fn a_record_right_in_every_field_it_knows_is_left_to_serde() {
        let goal = r#"{"id":"A","role":"user","content":[],"source":{"kind":"goal","goalId":"g"}}"#;
        assert_eq!(explained("user/message", goal), None);
        assert_eq!(explained("step/end", r#"{"turn":1.0,"step":2}"#), None);
        assert_eq!(explained("session/title", "[]"), None);
    }
}
