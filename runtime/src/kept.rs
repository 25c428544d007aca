//! The one reader of a kept session log (SPEC §11), for a resume and for
//! `courier repair`: it streams a JSONL log written by Courier or by dsh,
//! drops a torn final line, refuses corruption anywhere else naming its
//! 1-based line, and replays the rest through the core's [`Replay`], so
//! what it reports is exactly what a resume would rebuild.
//!
//! Linear in the log's size, with one reused line buffer: a log may have
//! millions of lines. Beside the replay it mirrors the pending lists, only
//! to name the messages a crashed turn claimed and so lost.
//!
//! Choices:
//! - Only a fork's (header with `seedLength`) first `session/end-seed` is a
//!   boundary: the fork starts empty there. Every other end-seed is the
//!   marker a resume appends, and the replay goes on across it.
//! - A blank line is not JSON: corruption in
//!   the middle, a torn tail at the end. A second `session` header is
//!   corruption (a resume continues one session), and so is a log that
//!   kept no header (a resume would not know its session).
//! - A final line is torn when it has no terminating newline (even if it
//!   happens to parse: the writer never finished it) or is not JSON.
//! - A log compressed with zstd (dsh's `session.jsonl.zstd`, told by its
//!   first bytes) is refused as a whole, saying so: a resume appends plain
//!   JSONL. `courier repair` hands this reader the decompressed lines.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use courier_core::log::{
    BLANK_LINE, BOM_HINT, END_SEED_LINE, EndSeed, LINE_BYTES_MAX, LineError, LogLine, Reader,
    SessionHeader, Stamp, ZSTD_COMPRESSED, ZSTD_MAGIC, durable_line, encoding_hint, lone_cr_hint,
};
use courier_core::seed::Readings;
use courier_core::{Agent, Message, MessageId, Output, Replay, Target};

/// Why the log line holding `messages` would not read back at a resume
/// (see [`Message::unreadable_when_logged`]), as the error that refuses
/// them.
pub(crate) fn unloggable(messages: &[Message]) -> Option<crate::Error> {
    let line_bytes_max = usize::try_from(LINE_BYTES_MAX).unwrap_or(usize::MAX);
    let (message, reason) = Message::unreadable_when_logged(messages, line_bytes_max)?;
    let id = message.id().clone();
    Some(crate::Error::Unloggable { id, reason })
}

/// Why the final line was dropped.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Torn {
    /// It has no terminating newline.
    NoNewline {
        /// Its 1-based line.
        line: u64,
    },
    /// It ends with a newline but is not JSON (or not UTF-8).
    NotJson {
        /// Its 1-based line.
        line: u64,
        /// What the parser said.
        reason: String,
    },
}

impl fmt::Display for Torn {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Torn::NoNewline { line } => write!(formatter, "line {line}: no terminating newline"),
            Torn::NotJson { line, reason } => write!(formatter, "line {line}: {reason}"),
        }
    }
}

/// A log that cannot be resumed: the 1-based line and what is wrong with it
/// (line 0 when the file itself cannot be opened). Never repaired.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Unresumable {
    /// The offending line (1-based), or 0 for the file as a whole.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for Unresumable {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(formatter, "{}", self.reason),
            line => write!(formatter, "line {line}: {}", self.reason),
        }
    }
}

impl std::error::Error for Unresumable {}

/// A kept log, read: what a resume rebuilds from it.
#[derive(Clone, Debug)]
pub struct KeptLog {
    /// The `session` header (a log that kept none is refused: without its
    /// session there is nothing to resume).
    pub header: SessionHeader,
    /// The replay of every kept event: its closers, and the agent it resumes.
    pub replay: Replay,
    /// The final line dropped, if one was torn.
    pub torn: Option<Torn>,
    /// Lines kept (a dropped torn line not counted).
    pub lines: u64,
    /// Bytes kept: a torn tail starts here, and a resume cuts the file here.
    pub kept_bytes: u64,
    /// Ids the open turn claimed that never got a `user/message` and are
    /// not pending: a crash took them for good (claimed is at most once).
    pub lost: Vec<MessageId>,
    /// How the last kept record was numbered: a log that numbers its
    /// records (dsh's JSONL backend) gets its appended lines numbered on.
    pub stamp: Option<Stamp>,
}

impl KeptLog {
    /// The closers a resume appends (empty for a balanced log).
    pub fn closers(&self) -> Vec<Output> {
        self.replay.closers()
    }

    /// What a resume appends after the kept lines, as JSONL: the closers,
    /// then, when there are any, the `session/end-seed` marker dsh writes at
    /// a resume. Empty for a balanced log.
    ///
    /// In a log that numbers its records, each line goes on numbering them
    /// (`seq`, and the last kept `time`), as dsh's own closers are numbered.
    pub fn appended_lines(&self) -> String {
        self.appended().0
    }

    /// [`KeptLog::appended_lines`], and how a writer appending after them
    /// goes on numbering the log's records (`None` when it numbers none).
    pub(crate) fn appended(&self) -> (String, Option<Stamp>) {
        let closers = self.closers();
        let mut appended: Vec<String> = closers
            .iter()
            .map(|closer| durable_line(closer).expect("a closer is durable"))
            .collect();
        if !closers.is_empty() {
            appended.push(END_SEED_LINE.to_owned());
        }
        let mut stamp = self.stamp.clone();
        let mut lines = String::new();
        for line in appended {
            match &mut stamp {
                Some(stamp) => {
                    lines.push_str(&stamp.envelope(&line));
                    stamp.next_seq += 1;
                }
                None => lines.push_str(&line),
            }
            lines.push('\n');
        }
        (lines, stamp)
    }

    /// The turn number the resumed agent opens next (there is one: `Replay`
    /// refuses a `turn/start` of `u64::MAX`).
    pub fn next_turn(&self) -> u64 {
        self.replay.clone().resume().last_turn() + 1
    }
}

/// Reads the kept log at `path`; see [`read`].
pub fn read_file(path: &Path) -> Result<KeptLog, Unresumable> {
    let file = File::open(path).map_err(|error| Unresumable {
        line: 0,
        reason: format!("cannot open {path:?}: {error}"),
    })?;
    read(BufReader::new(file))
}

/// Reads a kept log (SPEC §11) as a resume by the correct design would.
pub fn read(mut reader: impl BufRead) -> Result<KeptLog, Unresumable> {
    let mut buffer = Vec::new();
    let mut lines = Reader::new();
    let mut state = Reading::new();
    let mut line = 0;
    loop {
        line += 1;
        let Some(complete) = next_line(&mut reader, &mut buffer, line, LINE_BYTES_MAX)? else {
            break;
        };
        if line == 1 && buffer.starts_with(&ZSTD_MAGIC) {
            // dsh's compressed log: what a resume appends is plain JSONL.
            return Err(Unresumable {
                line: 0,
                reason: ZSTD_COMPRESSED.to_owned(),
            });
        }
        let corrupt = |reason: String| Unresumable { line, reason };
        if buffer.starts_with("\u{feff}".as_bytes()) {
            // Saved by an editor, not torn by a crash: the line is whole, so
            // it is refused, never dropped (dsh's JSON.parse refuses it too).
            return Err(corrupt(format!("not JSON{BOM_HINT}")));
        }
        let last = !complete || at_end(&mut reader, line)?;
        if last {
            // Before the line is read: a torn one is not kept.
            state.stamp = lines.stamp();
        }
        let parsed = std::str::from_utf8(trim_end(&buffer))
            .map_err(|error| match (line, encoding_hint(&buffer)) {
                // A UTF-16 file is no torn tail to cut, even as one line.
                (1, hint) if !hint.is_empty() => Bad::Edited(format!("not UTF-8: {error}{hint}")),
                _ => Bad::NotJson(format!("not UTF-8: {error}")),
            })
            .and_then(|text| parse(&mut lines, text));
        match (complete, parsed) {
            (_, Err(Bad::Edited(reason))) => return Err(corrupt(reason)),
            (false, _) => {
                state.torn = Some(Torn::NoNewline { line });
                break;
            }
            (true, Err(Bad::NotJson(reason))) if last => {
                state.torn = Some(Torn::NotJson { line, reason });
                break;
            }
            (true, Err(Bad::NotJson(reason) | Bad::Shape(reason))) => return Err(corrupt(reason)),
            (true, Ok(parsed)) => {
                state.observe(parsed).map_err(corrupt)?;
                if last {
                    state.stamp = lines.stamp();
                }
            }
        }
        state.lines = line;
        state.kept_bytes += buffer.len() as u64;
    }
    state.finish()
}

/// Why a line did not parse: a torn write is never valid JSON, so only a
/// line that is not JSON may be a torn tail; JSON of the wrong shape (a
/// delivery event missing a field) is corruption wherever it is.
enum Bad {
    NotJson(String),
    Shape(String),
    /// Made by an editor (lines ending in a lone carriage return, a file
    /// saved as UTF-16), not by a crash: refused even as the unterminated
    /// last line.
    Edited(String),
}

/// A line's event, read by the core's one log reader (which converts dsh's
/// older records as dsh's loader does).
fn parse(lines: &mut Reader, text: &str) -> Result<LogLine, Bad> {
    if text.trim_ascii().is_empty() {
        return Err(Bad::NotJson(BLANK_LINE.into()));
    }
    lines.line(text).map_err(|error| match error {
        LineError::NotJson(_) if !lone_cr_hint(text).is_empty() => {
            Bad::Edited(format!("not JSON: {error}{}", lone_cr_hint(text)))
        }
        LineError::NotJson(_) => Bad::NotJson(format!("not JSON: {error}")),
        LineError::Shape(_) | LineError::Refused(_) => {
            Bad::Shape(format!("not a valid event: {error}"))
        }
    })
}

/// The line without its line ending.
fn trim_end(buffer: &[u8]) -> &[u8] {
    let buffer = buffer.strip_suffix(b"\n").unwrap_or(buffer);
    buffer.strip_suffix(b"\r").unwrap_or(buffer)
}

/// Reads the next line (at most `max` bytes), ending included, into
/// `buffer`: `None` at the end, else whether it ended with a newline.
fn next_line(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    line: u64,
    max: u64,
) -> Result<Option<bool>, Unresumable> {
    buffer.clear();
    let read = reader
        .by_ref()
        .take(max + 1)
        .read_until(b'\n', buffer)
        .map_err(|error| cannot_read(line, &error))?;
    let complete = buffer.last() == Some(&b'\n');
    // Over the cap, its end decides, skipped to unread: a line the file
    // ends inside is a crash's torn tail however long (returned cut, without
    // its newline, so it is dropped); one that ends is refused.
    if !complete
        && buffer.len() as u64 > max
        && skip_line(reader, max).map_err(|error| cannot_read(line, &error))?
    {
        return Err(Unresumable {
            line,
            reason: format!("longer than {max} bytes"),
        });
    }
    Ok((read > 0).then_some(complete))
}

/// Skips the rest of a line, unread, up to `limit` more bytes: whether it
/// must be refused, because a newline ended it or it ran past the limit
/// with no end in sight (an endless stream such as `/dev/zero`); `false`
/// when the file ended inside it (a torn tail). The validator's reader has its own (`courier-check` and this
/// crate share only the core, which does no I/O).
fn skip_line(reader: &mut impl BufRead, limit: u64) -> io::Result<bool> {
    let mut skipped = 0u64;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(false);
        }
        if let Some(at) = available.iter().position(|byte| *byte == b'\n') {
            reader.consume(at + 1);
            return Ok(true);
        }
        let length = available.len();
        reader.consume(length);
        skipped += length as u64;
        if skipped > limit {
            return Ok(true);
        }
    }
}

/// Whether nothing follows the line just read.
fn at_end(reader: &mut impl BufRead, line: u64) -> Result<bool, Unresumable> {
    let rest = reader
        .fill_buf()
        .map_err(|error| cannot_read(line, &error))?;
    Ok(rest.is_empty())
}

fn cannot_read(line: u64, error: &io::Error) -> Unresumable {
    Unresumable {
        line,
        reason: format!("cannot read: {error}"),
    }
}

/// Why a log that ends inside its fork's seed is not resumed: dsh replays
/// a fork's inbox from event `seedLength` on (`Inbox`,
/// `packages/core/agent/src/inbox.ts`), so a send a resume appended there
/// would be read as part of the seed by the next resume and lost, though
/// its call returned Ok.
const SEED_CUT: &str = "the log ends inside its fork's seed, before the `session/end-seed` \
    that ends it (a crash while the seed was written): the fork never began, and what a \
    resume appended would be read as part of the seed, and dropped, by the next resume \
    (dsh replays a fork's inbox from event `seedLength` on): nothing to resume";

/// The reader's state between lines.
struct Reading {
    header: Option<SessionHeader>,
    /// Each reading of a fork's seed that still explains the log
    /// ([`Readings`]; one outside a seed).
    replays: Readings<Replayed>,
    seeding: bool,
    torn: Option<Torn>,
    lines: u64,
    kept_bytes: u64,
    stamp: Option<Stamp>,
}

/// One reading's replay.
#[derive(Clone)]
struct Replayed {
    replay: Replay,
    /// What the open turn claimed and has not entered yet.
    claimed: BTreeSet<MessageId>,
}

impl Reading {
    fn new() -> Self {
        Self {
            header: None,
            replays: Readings::new(Replayed {
                replay: Replay::new(&Agent::new()),
                claimed: BTreeSet::new(),
            }),
            seeding: false,
            torn: None,
            lines: 0,
            kept_bytes: 0,
            stamp: None,
        }
    }

    /// One kept line's event, in log order.
    fn observe(&mut self, event: LogLine) -> Result<(), String> {
        let first = self.header.is_none();
        let stops = |_: &String| false;
        match event {
            LogLine::Header(header) if first => {
                self.seeding = header.extra.contains_key("seedLength");
                self.header = Some(header);
                Ok(())
            }
            LogLine::Header(_) => Err("a second `session` header".into()),
            _ if first => Err("not a session log: no `session` header first".into()),
            LogLine::EndSeed(EndSeed::ForkBoundary) => {
                self.seeding = false;
                let replayed = self.replays.boundary();
                replayed.replay.end_seed();
                replayed.claimed.clear();
                Ok(())
            }
            LogLine::EndSeed(EndSeed::Marker) => self.replays.each(Replayed::resumed, stops),
            LogLine::EndSeed(EndSeed::InSeed) => self.replays.in_seed(
                Replayed::resumed,
                |replayed| {
                    let pending = !replayed.replay.inbox().is_empty();
                    pending && replayed.replay.closers().is_empty()
                },
                |replayed| Replayed {
                    replay: replayed.replay.forked(),
                    claimed: BTreeSet::new(),
                },
            ),
            LogLine::Other(_) => Ok(()),
            LogLine::Delivery(output) => self
                .replays
                .each(|replayed| replayed.deliver(&output), stops),
        }
    }

    fn finish(self) -> Result<KeptLog, Unresumable> {
        let Some(header) = self.header else {
            // An empty file, or a crash inside the header's own write.
            let kept = match &self.torn {
                Some(torn) => format!("its only line is torn ({torn})"),
                None => "the file is empty".into(),
            };
            return Err(Unresumable {
                line: 1,
                reason: format!("no `session` header kept: {kept}: nothing to resume"),
            });
        };
        if self.seeding {
            return Err(Unresumable {
                line: self.lines.max(1),
                reason: SEED_CUT.into(),
            });
        }
        let Replayed { replay, claimed } = self.replays.into_first();
        let pending: BTreeSet<&MessageId> = Target::ALL
            .into_iter()
            .flat_map(|target| replay.inbox().list(target).iter().map(|m| m.id()))
            .collect();
        let open = !replay.closers().is_empty();
        let lost = claimed
            .iter()
            .filter(|id| open && !pending.contains(id))
            .cloned()
            .collect();
        Ok(KeptLog {
            header,
            replay,
            torn: self.torn,
            lines: self.lines,
            kept_bytes: self.kept_bytes,
            lost,
            stamp: self.stamp,
        })
    }
}

impl Replayed {
    /// A resume's marker: a resume writes its closers before its marker
    /// (dsh's `prepareCore`), so a marker over an open turn is out of place.
    fn resumed(&mut self) -> Result<(), String> {
        if self.replay.closers().is_empty() {
            return Ok(());
        }
        Err("a `session/end-seed` while a turn is open: a resume writes its closers first".into())
    }

    /// A delivery event: the replay decides whether it may follow the rest.
    fn deliver(&mut self, output: &Output) -> Result<(), String> {
        // What a claim splice takes, read off the replayed list before it applies.
        let taken: Vec<MessageId> = if let Output::Spliced(splice) = output
            && splice.outcome.is_none()
        {
            // Found by position, not walked to: a removal in the middle of a
            // long list (one without `outcome`) costs its length only.
            let end = splice.start.saturating_add(splice.removed_count);
            let list = self.replay.inbox().list(splice.target);
            list.range(splice.start..end)
                .map(|message| message.id().clone())
                .collect()
        } else {
            Vec::new()
        };
        self.replay.apply(output).map_err(|error| error.reason)?;
        match output {
            Output::Spliced(_) => self.claimed.extend(taken),
            Output::UserMessage(message) => {
                self.claimed.remove(message.id());
            }
            Output::TurnStart { .. } | Output::TurnEnd { .. } => self.claimed.clear(),
            Output::StepStart { .. }
            | Output::StepEnd { .. }
            | Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#;
    const FORK: &str = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"seedLength":2}"#;
    const FORK_3: &str = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"seedLength":3}"#;
    const SEND_A: &str = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"inserted":[{"id":"A","role":"user","content":"A","source":{"kind":"user"}}]}}"#;
    const SEND_B: &str = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"inserted":[{"id":"B","role":"user","content":"B","source":{"kind":"user"}}]}}"#;
    const TURN: &str = r#"{"type":"turn/start","data":{"turn":1}}"#;

    fn read_lines(lines: &[&str], tail: &str) -> Result<KeptLog, Unresumable> {
        let text = lines.join("\n") + "\n" + tail;
        read(text.as_bytes())
    }

    fn pending(kept: &KeptLog) -> usize {
        kept.replay.inbox().list(Target::NextTurn).len()
    }

    /// A line over the cap is refused when it ends, and when the file ends
    /// inside it, returned cut and unterminated: a torn tail, dropped
    /// however long (SPEC §11).
    #[test]
    fn a_line_over_the_cap_is_refused_unless_the_file_ends_inside_it() {
        let mut buffer = Vec::new();
        let mut ended = "0123456789\nnext\n".as_bytes();
        let refused = next_line(&mut ended, &mut buffer, 3, 8).unwrap_err();
        assert_eq!(refused.to_string(), "line 3: longer than 8 bytes");
        let mut torn = "0123456789".as_bytes();
        assert_eq!(
            next_line(&mut torn, &mut buffer, 3, 8).unwrap(),
            Some(false)
        );
        assert!(torn.is_empty());
        let mut exact = "01234567\n".as_bytes();
        assert_eq!(
            next_line(&mut exact, &mut buffer, 3, 8).unwrap(),
            Some(true)
        );
        assert_eq!(buffer, b"01234567\n");
        // Up to the cap again past the cap, the file's end is looked for;
        // an endless stream (`/dev/zero`) is refused there.
        let mut torn = "0123456789abcdef".as_bytes();
        assert_eq!(
            next_line(&mut torn, &mut buffer, 3, 8).unwrap(),
            Some(false)
        );
        let mut endless = BufReader::new(io::repeat(0));
        let refused = next_line(&mut endless, &mut buffer, 1, 8).unwrap_err();
        assert_eq!(refused.to_string(), "line 1: longer than 8 bytes");
    }

    #[test]
    fn a_final_line_that_is_not_json_is_torn_even_with_its_newline() {
        let kept = read_lines(&[HEADER, SEND_A, "{\"type\":\"turn/st"], "").unwrap();
        assert!(matches!(kept.torn, Some(Torn::NotJson { line: 3, .. })));
        assert_eq!(kept.lines, 2);
        assert_eq!(pending(&kept), 1);
    }

    #[test]
    fn a_last_line_of_json_with_the_wrong_shape_is_corrupt_not_torn() {
        let bad = r#"{"type":"turn/start","data":{}}"#;
        let error = read_lines(&[HEADER, SEND_A, bad], "").unwrap_err();
        assert_eq!(error.line, 3, "{error}");
    }

    #[test]
    fn corruption_before_the_last_line_is_refused_naming_it() {
        let error = read_lines(&[HEADER, "{oops", SEND_A], "").unwrap_err();
        assert_eq!(error.line, 2, "{error}");
        let error = read_lines(&[HEADER, TURN, TURN], "").unwrap_err();
        assert_eq!(error.line, 3, "{error}");
        let error = read_lines(&[HEADER, HEADER], "").unwrap_err();
        assert_eq!(error.line, 2, "{error}");
        let error = read_lines(&[SEND_A], "").unwrap_err();
        assert_eq!(error.line, 1, "{error}");
    }

    /// A whole file an editor saved with a byte order mark: its one line
    /// (newline or not) is refused with the reason, not dropped as torn.
    #[test]
    fn a_byte_order_mark_on_the_first_line_is_refused_not_torn() {
        let marked = format!("\u{feff}{HEADER}");
        for tail in ["", "\n"] {
            let error = read(format!("{marked}{tail}").as_bytes()).unwrap_err();
            assert_eq!(error.line, 1, "{error}");
            assert!(error.reason.contains("byte order mark"), "{error}");
        }
        let error = read_lines(&[&marked, SEND_A], "").unwrap_err();
        assert_eq!(error.line, 1, "{error}");
    }

    /// dsh's compressed log (`session.jsonl.zstd`) is refused as a whole,
    /// saying what it is and what to do, not as a line that is not UTF-8.
    #[test]
    fn a_compressed_log_is_refused_saying_so() {
        let compressed = [&ZSTD_MAGIC[..], &[0x04, 0x58, b'\n', 0xFF]].concat();
        let refused = read(compressed.as_slice()).unwrap_err();
        assert_eq!(refused.line, 0);
        assert_eq!(refused.to_string(), ZSTD_COMPRESSED);
    }

    /// A file saved with lone carriage returns reads as one line; that is
    /// no crash's torn tail (dsh ends lines with LF), so it is refused with
    /// the hint, terminated or not, never resumed as an empty log.
    #[test]
    fn lone_carriage_returns_are_refused_with_the_hint_not_torn() {
        let mac = [HEADER, SEND_A].join("\r");
        for tail in ["", "\r", "\n"] {
            let error = read(format!("{mac}{tail}").as_bytes()).unwrap_err();
            assert_eq!(error.line, 1, "{error}");
            assert!(error.reason.contains("lone carriage return"), "{error}");
        }
    }

    /// The boundary is the marker that ends the `seedLength` events dsh
    /// copied (`FORK`: 2), not a marker the parent's own resume wrote into
    /// them (`FORK_3`'s first); the fork's resumes write markers after it.
    #[test]
    fn only_the_end_seed_ending_a_forks_seed_empties_the_inbox() {
        let end_seed = END_SEED_LINE;
        let fork = read_lines(&[FORK, SEND_A, end_seed], "").unwrap();
        assert_eq!(pending(&fork), 0);
        let seed_ending_in_its_marker = read_lines(&[FORK, SEND_A, end_seed, SEND_B], "").unwrap();
        assert_eq!(pending(&seed_ending_in_its_marker), 1);
        let resumed = read_lines(&[FORK, SEND_A, end_seed, SEND_B, end_seed], "").unwrap();
        assert_eq!(pending(&resumed), 1);
        let seed_of_a_resumed_parent = [FORK_3, end_seed, SEND_A, TURN, end_seed];
        let seed_of_a_resumed_parent = read_lines(&seed_of_a_resumed_parent, "").unwrap();
        assert_eq!(pending(&seed_of_a_resumed_parent), 0);
        let plain = read_lines(&[HEADER, SEND_A, end_seed], "").unwrap();
        assert_eq!(pending(&plain), 1);
    }

    /// A log that ends before its fork's boundary (a crash while the seed
    /// was written, or a header whose `seedLength` overstates the seed) is
    /// not resumed, naming its last line: dsh replays a fork's inbox from
    /// event `seedLength` on, so a send appended there would be lost at the
    /// next resume. Before, it resumed with nothing pending, and a send
    /// accepted then (its line synced) was gone at the next resume.
    #[test]
    fn a_log_that_ends_inside_its_forks_seed_is_not_resumed() {
        let end_seed = END_SEED_LINE;
        for lines in [
            &[FORK_3, SEND_A][..],
            &[FORK_3, end_seed, SEND_A],
            &[FORK_3, SEND_A, end_seed],
            &[FORK_3],
        ] {
            let refused = read_lines(lines, "").unwrap_err();
            assert_eq!(refused.line, lines.len() as u64, "{lines:?}");
            assert!(
                refused.reason.contains("inside its fork's seed"),
                "{refused}"
            );
        }
    }

    #[test]
    fn an_open_turn_gets_closers_and_a_marker() {
        let kept = read_lines(&[HEADER, SEND_A, TURN], r#"{"type":"agent"#).unwrap();
        assert_eq!(kept.torn, Some(Torn::NoNewline { line: 4 }));
        assert_eq!(
            kept.appended_lines(),
            format!(
                "{}\n{END_SEED_LINE}\n",
                r#"{"type":"turn/end","data":{"turn":1,"reason":{"kind":"interrupted"}}}"#
            )
        );
        assert_eq!(kept.next_turn(), 2);
    }
}
