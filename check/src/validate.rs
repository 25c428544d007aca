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
//!   across it. A restart's closers (`turn/end interrupted`) are ordinary
//!   events, so a resumed log checks as one session.
//! - Every line must be a JSON object naming each key once, including the
//!   events outside the contract, which are skipped after that check.
//!   Whitespace-only lines are ignored.
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
use crate::{History, Mode, Violation};
use courier_core::Output;
use courier_core::log::{Conversions, LineError, LogLine, Reader, SessionHeader, utf16_hint};

/// The longest line read; a longer one makes the file unreadable rather
/// than memory unbounded (dsh inlines images, so this is generous).
const LINE_BYTES_MAX: u64 = 1 << 28;

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

/// What a readable log amounted to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Summary {
    /// Lines read (up to where checking stopped).
    pub lines: u64,
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
        stopped: false,
        conversions: Conversions::default(),
    };
    // What each line showed, reused (a held finding comes out later).
    let mut found = Vec::new();
    let mut deliver = |found: &mut Vec<(u64, Broken)>, summary: &mut Summary| {
        for (line, broken) in found.drain(..) {
            summary.violations += 1;
            report(Finding {
                line,
                violation: broken.violation,
            });
            if broken.fatal {
                summary.stopped = true;
                return true;
            }
        }
        false
    };
    while let Some((text, terminated)) = next_line(&mut reader, &mut buffer, summary.lines + 1)? {
        summary.lines += 1;
        let line = summary.lines;
        if text.trim().is_empty() {
            continue;
        }
        let seq = lines.next_seq();
        let event = lines.line(text).map_err(|error| {
            // What a crash leaves: said, not dropped (the user asked for a
            // verdict on every line; a resume is what drops it).
            let torn = if text.starts_with('\u{feff}') {
                // dsh's loader (JSON.parse) refuses it too.
                " (the line starts with a byte order mark: save the file without one)"
            } else if !terminated && matches!(error, LineError::NotJson(_)) {
                " (a torn final line, as a crash leaves it: `courier repair` drops it)"
            } else {
                ""
            };
            Unreadable {
                line,
                reason: format!("{error}{torn}"),
            }
        })?;
        summary.conversions = lines.conversions();
        match (event, &mut replay) {
            (LogLine::Header(header), slot) => {
                if let Some(ended) = slot {
                    ended.finish(&mut found);
                }
                *slot = Some(Replay::new(&header));
            }
            (_, None) => {
                let reason = "not a session log: the first line is not a `session` header";
                return Err(Unreadable {
                    line,
                    reason: reason.into(),
                });
            }
            (event, Some(replay)) => replay.observe(&event, Record { line, seq }, &mut found),
        }
        if deliver(&mut found, &mut summary) {
            return Ok(summary);
        }
    }
    let Some(mut replay) = replay else {
        return Err(Unreadable {
            line: summary.lines.max(1),
            reason: "not a session log: no `session` header".into(),
        });
    };
    replay.finish(&mut found);
    deliver(&mut found, &mut summary);
    Ok(summary)
}

/// Reads the next line into `buffer`, without its line ending, and whether
/// it had one; `None` at the end.
fn next_line<'b, R: BufRead>(
    reader: &mut R,
    buffer: &'b mut Vec<u8>,
    line: u64,
) -> Result<Option<(&'b str, bool)>, Unreadable> {
    let unreadable = |reason: String| Unreadable { line, reason };
    buffer.clear();
    let read = reader
        .by_ref()
        .take(LINE_BYTES_MAX + 1)
        .read_until(b'\n', buffer)
        .map_err(|error| unreadable(format!("cannot read: {error}")))?;
    if read == 0 {
        return Ok(None);
    }
    let terminated = buffer.last() == Some(&b'\n');
    if terminated {
        buffer.pop();
    } else if buffer.len() as u64 > LINE_BYTES_MAX {
        return Err(unreadable(format!("longer than {LINE_BYTES_MAX} bytes")));
    }
    if buffer.last() == Some(&b'\r') {
        buffer.pop();
    }
    std::str::from_utf8(buffer)
        .map(|text| Some((text, terminated)))
        .map_err(|error| {
            // Only the file's first bytes can be its byte order mark.
            let hint = if line == 1 { utf16_hint(buffer) } else { "" };
            unreadable(format!("not UTF-8: {error}{hint}"))
        })
}

/// Where a record is: its line, and its event number (dsh's `seq`).
#[derive(Clone, Copy)]
struct Record {
    line: u64,
    seq: u64,
}

/// The ghost replay of one session.
struct Replay {
    ghost: Ghost,
    fork: Fork,
}

/// The properties' ghost state.
struct Ghost {
    history: History,
    goals: GoalRounds,
}

/// Where a session stands against its fork boundary (SPEC §11).
enum Fork {
    /// Not a fork, or past its boundary: a `session/end-seed` is the
    /// marker a resume appends.
    Past,
    /// Copying the parent's history, which may hold `session/end-seed`s of
    /// its own (the parent's resumes, or its own fork). The boundary is the
    /// one at event `seed_length`, where dsh's fork appends it (or
    /// `seed_length - 1`, a copied history that ended in one, which dsh
    /// does not mark again); dsh's `Inbox` replays `events.slice(seedLength)`.
    /// Each earlier one empties the inbox too, as a boundary would: a
    /// hand-written log may count `seedLength` its own way (the fixtures'
    /// README: it is not a line count), and its only `session/end-seed` is
    /// then its boundary (as is the first one after event `seed_length`). What the replay finds after one is `held` until
    /// the log shows whether it was the boundary (a record at
    /// `seed_length` or later) or the parent's (a later `session/end-seed`
    /// before then, which drops it: the parent's history was replayed from
    /// an inbox it did not have).
    Copying {
        seed_length: u64,
        held: Option<Held>,
    },
}

/// Findings held after a `session/end-seed` of a fork's copied history.
#[derive(Default)]
struct Held {
    findings: Vec<(u64, Broken)>,
    /// One of them stopped the replay: only turn numbers are followed on.
    stopped: bool,
}

impl Replay {
    fn new(header: &SessionHeader) -> Self {
        let seed_length = header.extra.get("seedLength").map(|length| {
            // Checked a whole number when the header was read.
            length
                .as_u64()
                .unwrap_or_else(|| length.as_f64().unwrap_or_default() as u64)
        });
        Self {
            ghost: Ghost {
                history: History::new(Mode::Log),
                goals: GoalRounds::new(),
            },
            fork: match seed_length {
                Some(seed_length) => Fork::Copying {
                    seed_length,
                    held: None,
                },
                None => Fork::Past,
            },
        }
    }

    /// Checks one record (not a header); what it shows goes to `found`.
    fn observe(&mut self, event: &LogLine, at: Record, found: &mut Vec<(u64, Broken)>) {
        if let Fork::Copying { seed_length, held } = &mut self.fork {
            let boundary = seed_length.saturating_sub(1);
            match (event, held) {
                (LogLine::EndSeed, held) => {
                    self.ghost.history.end_seed();
                    if at.seq >= boundary {
                        self.fork = Fork::Past;
                    } else {
                        *held = Some(Held::default());
                    }
                    return;
                }
                (_, held @ Some(_)) if at.seq >= *seed_length => {
                    // The last `session/end-seed` was the boundary.
                    found.extend(held.take().into_iter().flat_map(|held| held.findings));
                    self.fork = Fork::Past;
                }
                (_, Some(held)) => {
                    if held.stopped {
                        if let LogLine::Delivery(Output::TurnStart { turn }) = event {
                            self.ghost.history.copied_turn(*turn);
                        }
                        return;
                    }
                    let before = held.findings.len();
                    self.ghost.check(event, at.line, &mut held.findings);
                    held.stopped = held.findings[before..].iter().any(|(_, b)| b.fatal);
                    return;
                }
                (_, None) => {}
            }
        }
        self.ghost.check(event, at.line, found);
    }

    /// The session ends: a `session/end-seed` still in question was the
    /// boundary, so what followed it is reported.
    fn finish(&mut self, found: &mut Vec<(u64, Broken)>) {
        if let Fork::Copying { held, .. } = &mut self.fork {
            found.extend(held.take().into_iter().flat_map(|held| held.findings));
        }
    }
}

impl Ghost {
    /// Checks one record as an ordinary event of the session.
    fn check(&mut self, event: &LogLine, line: u64, found: &mut Vec<(u64, Broken)>) {
        let fatal = |violation| (line, Broken { violation, fatal: true });
        let output = match event {
            LogLine::Delivery(output) => output,
            // A resume's marker: the restart closed its turn and resumed idle.
            LogLine::EndSeed => {
                found.extend(self.history.resumed().err().map(fatal));
                return;
            }
            LogLine::Header(_) | LogLine::Other(_) => return,
        };
        if let Err(violation) = self.history.observe(output) {
            found.push(fatal(violation));
            return;
        }
        if let Err(violation) = self.goals.observe(output) {
            found.push((line, Broken { violation, fatal: false }));
        }
    }
}

/// A violation, and whether it leaves the replay untrustworthy.
struct Broken {
    violation: Violation,
    fatal: bool,
}
