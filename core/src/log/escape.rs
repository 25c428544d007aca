//! The writer's half of the reader's lone-surrogate reading
//! (`lone_surrogate` in `log.rs`): the reader reads a JSON string's lone
//! UTF-16 surrogate escape `\udXXX` as the private-use character U+F0000 +
//! unit, so every line Courier writes escapes each character U+FD800 to
//! U+FDFFF back to `\udXXX`. dsh then reads back the very unit it wrote,
//! and Courier the very character it holds.

use std::fmt::Write;

/// The UTF-8 lead byte of every stand-in (U+FD800 to U+FDFFF are
/// `F3 BD A0 80` to `F3 BD BF BF`), and of no ASCII or two- or
/// three-byte character: a line without it holds no stand-in, which one
/// vectorized byte search (`memchr`) tells.
const STAND_IN_LEAD: u8 = 0xF3;

/// The lone surrogate unit `character` stands for, when it is a stand-in.
fn unit(character: char) -> Option<u32> {
    let unit = u32::from(character).checked_sub(0xF0000)?;
    (0xD800..0xE000).contains(&unit).then_some(unit)
}

/// Rewrites every stand-in in the JSON `line` as the escape of its unit
/// (`\ud83d` for U+FD83D). A stand-in only occurs inside a JSON string (the
/// rest of a line is ASCII), where the escape means the same to a JSON
/// reader. A line without one is left as it is, neither copied nor
/// allocated. A high unit's stand-in just before a low one's would be
/// written as a pair, which reads as one other character; no reading makes
/// such neighbours (the reader pairs them), only a string holding those
/// private-use characters themselves, the collision `lone_surrogate` names.
pub(super) fn escape_stand_ins(line: &mut String) {
    if memchr::memchr(STAND_IN_LEAD, line.as_bytes()).is_none() {
        return;
    }
    let mut escaped = String::with_capacity(line.len() + 8);
    for character in line.chars() {
        match unit(character) {
            // Writing to a `String` cannot fail.
            Some(unit) => {
                let _ = write!(escaped, "\\u{unit:04x}");
            }
            None => escaped.push(character),
        }
    }
    *line = escaped;
}

/// How long `json` is once written: each stand-in (four bytes) becomes its
/// six-byte escape (see [`escape_stand_ins`]).
pub(crate) fn escaped_len(json: &str) -> usize {
    if memchr::memchr(STAND_IN_LEAD, json.as_bytes()).is_none() {
        return json.len();
    }
    let stand_ins = json.chars().filter(|character| unit(*character).is_some());
    json.len()
        .saturating_add(stand_ins.count().saturating_mul(2))
}

/// Whether `text` holds a high unit's stand-in just before a low one's:
/// written, they read back as one other character (see
/// [`escape_stand_ins`]), so such a string does not survive a log.
pub(crate) fn pairs_stand_ins(text: &str) -> bool {
    if memchr::memchr(STAND_IN_LEAD, text.as_bytes()).is_none() {
        return false;
    }
    let units = text.chars().map(unit);
    units
        .clone()
        .zip(units.skip(1))
        .any(|pair| matches!(pair, (Some(0xD800..0xDC00), Some(0xDC00..0xE000))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogLine, SessionHeader, durable_line, parse_line};
    use crate::{Message, MessageId, Output, Source, Splice, Target};

    #[test]
    fn every_stand_in_is_written_as_the_escape_the_reader_reads_it_from() {
        for unit in 0xD800..0xE000_u32 {
            let stand_in = char::from_u32(0xF0000 + unit).expect("a scalar value");
            let id = format!("a{stand_in}b");
            let line = durable_line(&Output::UserMessage(Message::from(id.as_str()))).unwrap();
            assert!(
                line.contains(&format!(r#""id":"a\u{unit:04x}b""#)),
                "{line}"
            );
            assert!(!line.contains(stand_in), "{line}");
            let LogLine::Delivery(Output::UserMessage(read)) = parse_line(&line).unwrap() else {
                panic!("not a user/message: {line}");
            };
            assert_eq!(read.id(), &MessageId::from(id.as_str()), "{line}");
        }
    }

    #[test]
    fn only_the_stand_ins_are_escaped() {
        // Neighbours of the range, with the same lead byte, and other text.
        let text = "\u{FD7FF}\u{FD800}é\u{FDFFF}\u{FE000}\u{10FFFF}x\u{C0000}";
        let mut line = format!(r#"{{"id":"{text}"}}"#);
        escape_stand_ins(&mut line);
        assert_eq!(
            line,
            "{\"id\":\"\u{FD7FF}\\ud800é\\udfff\u{FE000}\u{10FFFF}x\u{C0000}\"}"
        );
    }

    #[test]
    fn a_line_without_a_stand_in_keeps_its_buffer() {
        let mut line = String::with_capacity(64);
        line.push_str(r#"{"id":"plain é ✓ 😀"}"#);
        let (before, capacity) = (line.clone(), line.capacity());
        escape_stand_ins(&mut line);
        assert_eq!(
            (line.as_str(), line.capacity()),
            (before.as_str(), capacity)
        );
    }

    #[test]
    fn a_header_and_every_event_carrying_a_stand_in_are_escaped() {
        let header = SessionHeader::new("s\u{FDC00}").line();
        assert!(header.contains(r#""id":"s\udc00""#), "{header}");
        let message = Message::text("m\u{FD83D}", Source::user());
        let splice = Output::Spliced(Splice {
            target: Target::NextTurn,
            start: 0,
            removed_count: 0,
            inserted: [message].into_iter().collect(),
            outcome: None,
        });
        let line = durable_line(&splice).unwrap();
        // The id and the text block holding it.
        assert_eq!(line.matches(r#"m\ud83d""#).count(), 2, "{line}");
        assert_eq!(parse_line(&line).unwrap(), LogLine::Delivery(splice));
    }
}
