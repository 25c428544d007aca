//! Conformance of recorded session logs: [`validate`] streams a dsh JSONL log
//! (`fixtures/dsh-logs/README.md`) line by line through the durable half of
//! the properties ([`History`] in [`Mode::Log`], plus `GoalRounds`) and
//! reports each violation with the 1-based line of the offending event.
//!
//! Memory is constant in the log's length: one reused line buffer (a line may
//! not exceed 256 MiB) and the ghost state, which holds only what
//! is pending and the open turn.
//!
//! Choices the issue leaves open:
//! - The first line must be a `session` header. A later header starts a new
//!   session (empty inbox, turn numbers from 1), so concatenated logs check
//!   as a series of sessions.
//! - Only a fork's first `session/end-seed` (its header has `seedLength`)
//!   empties the inbox (SPEC §11): every later one, and any in a log that is
//!   not a fork, is the marker a resume appends, and the replay goes on
//!   across it. One inside the seed may also be the parent's own boundary
//!   (a fork of a fork): each reading is checked until the log tells them
//!   apart ([`Readings`]), and only what no reading explains is reported. A restart's closers (`turn/end interrupted`) are ordinary
//!   events, so a resumed log checks as one session.
//! - Every line must be a JSON object naming each key once, including the
//!   events outside the contract, which are skipped after that check (a
//!   key the reader skips among a delivery event's `data` members is not
//!   counted: its value means nothing to either reader).
//!   A blank (whitespace-only) line is not JSON: the file is unreadable
//!   there, as dsh's loader refuses it (a torn final line, when it is last).
//! - A torn final line (the last line, not JSON or not UTF-8: a crash cut
//!   it, or left a blank line; or, unterminated, any line that does not
//!   read) is dropped, as SPEC §11 and dsh's loader
//!   (`SessionLogScanner`) drop it, and the rest is checked;
//!   [`Summary::torn`] names it, so it is never dropped silently. A torn
//!   header is all a file holds: that file is unreadable. An unterminated
//!   final line that reads is checked (a log written by hand or joined
//!   with newlines often ends so: a violation there is reported), though
//!   a resume drops it.
//! - Lines are read by the core's one log reader ([`Reader`]), so dsh's
//!   older records are converted as dsh's own loader converts them, and a
//!   record dsh refuses makes the file unreadable at its line with dsh's
//!   reason; [`Summary::conversions`] counts the converted records.
//! - A log has no transitions, so a boundary's claims are told by what
//!   follows its `turn/start` or `step/end`: at a first boundary only its
//!   claims (or a crash's `turn/end interrupted`) come before anything else;
//!   after a `step/end` a hook's splice may come before the claim, as dsh's
//!   listeners run inside the transition (`hook-*-stop-continue`). A log may
//!   end anywhere (a crash), so a claim still owed at its end is not
//!   reported.
//! - A violation of [`History`] stops the file: its ghost state is no longer
//!   the log's (a half-applied splice, an unknown turn number), so every
//!   later report would be noise. A `goal-rounds` violation does not touch
//!   that state, so checking goes on.

use std::fmt;
use std::io::{BufRead, Read};

use crate::goal::GoalRounds;
use crate::{History, Mode, Property, Violation};
use courier_core::Output;
use courier_core::log::{
    BLANK_LINE, BOM_HINT, Conversions, EndSeed, LINE_BYTES_MAX, LineError, LogLine, Reader,
    encoding_hint, lone_cr_hint,
};
use courier_core::seed::Readings;
use courier_core::transcript::parse_command;

/// A violation at a line of the log.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Finding {
    /// The 1-based line of the offending event.
    pub line: u64,
    /// The broken property and what was wrong.
    pub violation: Violation,
}

impl fmt::Display for Finding {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.line, self.violation)
    }
}

/// Why a file is not a readable dsh JSONL log.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Unreadable {
    /// The 1-based line that could not be read or parsed.
    pub line: u64,
    /// What was wrong with it.
    pub reason: String,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.line, self.reason)
    }
}

/// A torn final line, dropped (SPEC §11).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Torn {
    /// Its 1-based line.
    pub line: u64,
    /// Why it is torn: no terminating newline, or what the parser said.
    pub reason: String,
}

/// What a readable log amounted to.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Summary {
    /// Lines read (up to where checking stopped), a torn final line not
    /// among them.
    pub lines: u64,
    /// The torn final line dropped, if the log ends in one.
    pub torn: Option<Torn>,
    /// Violations reported.
    pub violations: u64,
    /// Checking stopped early, at a violation that left the replay untrustworthy.
    pub stopped: bool,
    /// dsh's older records read converted, as dsh's loader reads them.
    pub conversions: Conversions,
}

impl Summary {
    /// Whether the log holds every property.
    pub fn is_valid(&self) -> bool {
        self.violations == 0
    }
}

/// Checks one log, handing each violation to `report` as it is found.
pub fn validate<R: BufRead>(
    mut reader: R,
    mut report: impl FnMut(Finding),
) -> Result<Summary, Unreadable> {
    let mut buffer = Vec::new();
    let mut lines = Reader::new();
    let mut replay: Option<Replay> = None;
    let mut summary = Summary {
        lines: 0,
        violations: 0,
        torn: None,
        stopped: false,
        conversions: Conversions::default(),
    };
    let mut line = 0;
    while let Some((bytes, terminated)) =
        next_line(&mut reader, &mut buffer, line + 1, LINE_BYTES_MAX)?
    {
        line += 1;
        let event = match read(&mut lines, bytes, line) {
            Ok(event) => event,
            Err(unread) => {
                let last = !terminated || reader.fill_buf().is_ok_and(<[u8]>::is_empty);
                // Unterminated, the writer never finished it (dsh's
                // `SessionLogScanner` ignores such a record, whatever it
                // holds): torn however it fails, unless an editor made it.
                let torn = unread.hint.is_empty() && (!terminated || unread.tearable && last);
                if torn && replay.is_some() {
                    summary.torn = Some(Torn {
                        line,
                        reason: unread.reason,
                    });
                    break;
                }
                return Err(unread.unreadable(line, torn));
            }
        };
        if summary.stopped {
            // Past a stop, lines are only read: a file that also holds a
            // line no reader can read is unreadable (2 wins over 1).
            continue;
        }
        summary.lines = line;
        summary.conversions = lines.conversions();
        let broken = match (event, &mut replay) {
            (LogLine::Header(_), slot) => {
                *slot = Some(Replay::new());
                continue;
            }
            (_, None) => {
                let reason = "not a session log: the first line is not a `session` header";
                return Err(Unreadable {
                    line,
                    reason: reason.into(),
                });
            }
            (event, Some(replay)) => match replay.observe(&event) {
                Ok(()) => continue,
                Err(broken) => broken,
            },
        };
        summary.violations += 1;
        report(Finding {
            line,
            violation: broken.violation,
        });
        summary.stopped |= broken.fatal;
    }
    if replay.is_none() {
        return Err(Unreadable {
            line: summary.lines.max(1),
            reason: "not a session log: no `session` header".into(),
        });
    }
    Ok(summary)
}

/// Reads line `line` (its bytes without the line ending) as an event.
fn read(lines: &mut Reader, bytes: &[u8], line: u64) -> Result<LogLine, Unread> {
    match std::str::from_utf8(bytes) {
        // Only the file's first bytes can be a byte order mark or a
        // compressed log's magic number.
        Err(error) => Err(Unread {
            reason: format!("not UTF-8: {error}"),
            hint: if line == 1 { encoding_hint(bytes) } else { "" },
            // What dsh's loader cannot parse, as `courier repair` reads it.
            tearable: true,
        }),
        Ok(text) if text.trim_ascii().is_empty() => Err(Unread {
            reason: BLANK_LINE.to_owned(),
            hint: "",
            tearable: true,
        }),
        Ok(text) => lines.line(text).map_err(|error| {
            let hint = unreadable_hint(text, line);
            Unread {
                tearable: matches!(error, LineError::NotJson(_)),
                hint,
                reason: error.to_string(),
            }
        }),
    }
}

/// Why a line was not read, before the file is known to end there.
struct Unread {
    reason: String,
    /// What to add so the user knows what made it; an editor's mark (a
    /// hint) is no crash's, so never a torn tail.
    hint: &'static str,
    /// Whether a crash can leave it as a whole final line (not JSON, not
    /// UTF-8, blank), so that, last, it is a torn tail to drop.
    tearable: bool,
}

impl Unread {
    /// The error that makes the file unreadable at `line`; `torn` when a
    /// crash could have left it, which a log's only line says.
    fn unreadable(self, line: u64, torn: bool) -> Unreadable {
        let hint = match self.hint {
            // Its header torn: nothing of the session was kept, and
            // `courier repair` refuses it (nothing to resume).
            "" if torn => " (a torn only line, as a crash leaves it: no `session` header was kept)",
            hint => hint,
        };
        Unreadable {
            line,
            reason: format!("{}{hint}", self.reason),
        }
    }
}

/// What to add to why line `line` cannot be read, so the user knows what
/// made it: an editor's mark, or a transcript given for a log.
fn unreadable_hint(text: &str, line: u64) -> &'static str {
    let lone_cr = lone_cr_hint(text);
    if text.starts_with('\u{feff}') {
        // dsh's loader (JSON.parse) refuses it too.
        BOM_HINT
    } else if !lone_cr.is_empty() {
        lone_cr
    } else if line == 1 && transcript_like(text) {
        " (a transcript? `courier run` runs those)"
    } else {
        ""
    }
}

/// Whether a first line that is not JSON opens a transcript (SPEC §9): a
/// `#` comment or a command.
fn transcript_like(text: &str) -> bool {
    let text = text.trim_ascii();
    text.starts_with('#') || parse_command(text).is_ok()
}

/// Reads the next line (at most `max` bytes) into `buffer`, without its
/// line ending, and whether it had one; `None` at the end.
fn next_line<'b, R: BufRead>(
    reader: &mut R,
    buffer: &'b mut Vec<u8>,
    line: u64,
    max: u64,
) -> Result<Option<(&'b [u8], bool)>, Unreadable> {
    let unreadable = |reason: String| Unreadable { line, reason };
    buffer.clear();
    let read = reader
        .by_ref()
        .take(max + 1)
        .read_until(b'\n', buffer)
        .map_err(|error| unreadable(format!("cannot read: {error}")))?;
    if read == 0 {
        return Ok(None);
    }
    let terminated = buffer.last() == Some(&b'\n');
    if terminated {
        buffer.pop();
    } else if buffer.len() as u64 > max {
        // Its end decides, skipped to unread: a line the file ends inside
        // is a crash's torn tail however long (it is returned cut, and
        // fails to read as the unterminated line it is); one that ends is
        // refused.
        let ends =
            skip_line(reader, max).map_err(|error| unreadable(format!("cannot read: {error}")))?;
        if ends {
            return Err(unreadable(format!("longer than {max} bytes")));
        }
    }
    if buffer.last() == Some(&b'\r') {
        buffer.pop();
    }
    Ok(Some((buffer, terminated)))
}

/// Skips the rest of a line, unread, up to `limit` more bytes: whether it
/// must be refused, because a newline ended it or it ran past the limit
/// with no end in sight (an endless stream such as `/dev/zero`); `false`
/// when the file ended inside it (a torn tail).
fn skip_line(reader: &mut impl BufRead, limit: u64) -> std::io::Result<bool> {
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

/// The ghost replay of one session: each reading of its fork's seed that
/// still explains it ([`Readings`]; one outside a seed).
struct Replay {
    readings: Readings<Reading>,
}

/// One reading's ghost state.
#[derive(Clone)]
struct Reading {
    history: History,
    goals: GoalRounds,
}

impl Replay {
    fn new() -> Self {
        Self {
            readings: Readings::new(Reading {
                history: History::new(Mode::Log),
                goals: GoalRounds::new(),
            }),
        }
    }

    /// Checks one contract event (not a header).
    fn observe(&mut self, event: &LogLine) -> Result<(), Broken> {
        let goes_on = |broken: &Broken| !broken.fatal;
        let resumed = |reading: &mut Reading| reading.history.resumed().map_err(Broken::fatal);
        match event {
            LogLine::Delivery(output) => self
                .readings
                .each(|reading| reading.observe(output), goes_on),
            LogLine::EndSeed(EndSeed::ForkBoundary) => {
                let history = &mut self.readings.boundary().history;
                // dsh forks only between turns (`_forkSeed`: `OPEN_TURN`).
                if let Some(turn) = history.open_turn() {
                    return Err(Broken::fatal(Violation::new(
                        Property::Balanced,
                        format!(
                            "the fork's seed ends inside open turn {turn} (dsh forks only \
                             between turns)"
                        ),
                    )));
                }
                history.end_seed();
                Ok(())
            }
            LogLine::EndSeed(EndSeed::Marker) => self.readings.each(resumed, goes_on),
            LogLine::EndSeed(EndSeed::InSeed) => self.readings.in_seed(
                resumed,
                |reading| reading.history.has_pending() && reading.history.open_turn().is_none(),
                |reading| Reading {
                    history: reading.history.forked(),
                    goals: reading.goals.clone(),
                },
            ),
            LogLine::Other(_) => self.readings.each(
                |reading| {
                    reading.history.other_event();
                    Ok(())
                },
                goes_on,
            ),
            LogLine::Header(_) => Ok(()),
        }
    }
}

impl Reading {
    /// Checks one delivery event.
    fn observe(&mut self, output: &Output) -> Result<(), Broken> {
        // A goal round advances only by an admission, not by context.
        let admission =
            matches!(output, Output::UserMessage(message) if self.history.admits(message.id()));
        self.history.observe(output).map_err(Broken::fatal)?;
        if !admission {
            return Ok(());
        }
        self.goals.observe(output).map_err(|violation| Broken {
            violation,
            fatal: false,
        })
    }
}

/// A violation, and whether it leaves the replay untrustworthy.
struct Broken {
    violation: Violation,
    fatal: bool,
}

impl Broken {
    fn fatal(violation: Violation) -> Self {
        Self {
            violation,
            fatal: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_line;

    /// A line over the cap is refused when it ends, and when the file ends
    /// inside it, returned cut and unterminated: a torn tail, dropped
    /// however long (SPEC §11).
    #[test]
    fn a_line_over_the_cap_is_refused_unless_the_file_ends_inside_it() {
        let mut buffer = Vec::new();
        let mut ended = "0123456789\nnext\n".as_bytes();
        let refused = next_line(&mut ended, &mut buffer, 3, 8).unwrap_err();
        assert_eq!(
            (refused.line, refused.reason.as_str()),
            (3, "longer than 8 bytes")
        );
        let mut torn = "0123456789".as_bytes();
        let cut = next_line(&mut torn, &mut buffer, 3, 8).unwrap();
        assert_eq!(cut, Some(("012345678".as_bytes(), false)));
        assert!(torn.is_empty());
        let mut exact = "01234567\n".as_bytes();
        let whole = next_line(&mut exact, &mut buffer, 3, 8).unwrap();
        assert_eq!(whole, Some(("01234567".as_bytes(), true)));
        // Up to the cap again past the cap, the file's end is looked for;
        // an endless stream (`/dev/zero`) is refused there.
        let mut torn = "0123456789abcdef".as_bytes();
        let cut = next_line(&mut torn, &mut buffer, 3, 8).unwrap();
        assert_eq!(cut, Some(("012345678".as_bytes(), false)));
        let mut endless = std::io::BufReader::new(std::io::repeat(0));
        let refused = next_line(&mut endless, &mut buffer, 1, 8).unwrap_err();
        assert_eq!(
            (refused.line, refused.reason.as_str()),
            (1, "longer than 8 bytes")
        );
    }
}
