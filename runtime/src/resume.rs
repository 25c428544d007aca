//! Repairing a kept log file in place before a resume (SPEC §11). The only
//! changes ever made to what is there: a torn final line is cut off, and the
//! closers are appended. Corruption anywhere else is refused before the file
//! is touched.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

use crate::kept::{self, KeptLog, Unresumable};

/// Why a log file could not be resumed.
#[derive(Debug)]
pub enum ResumeError {
    /// The log is corrupt (or not a session log); the file was not touched.
    Unresumable(Unresumable),
    /// Reading or writing the file failed.
    Io(io::Error),
}

impl fmt::Display for ResumeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeError::Unresumable(error) => write!(formatter, "{error}"),
            ResumeError::Io(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for ResumeError {}

impl From<io::Error> for ResumeError {
    fn from(error: io::Error) -> Self {
        ResumeError::Io(error)
    }
}

/// Reads the log at `path` and repairs it for a resume: cuts a torn tail,
/// then, when a turn is open, appends its closers and a `session/end-seed`
/// marker (as dsh does at a resume) and fsyncs. A balanced log, such as one
/// already repaired, gets nothing appended, so resuming twice appends
/// nothing the second time; unlike dsh, no marker is written then either.
/// A log that kept no line at all (the crash cut its header) is refused
/// untouched: without its session id there is nothing to go on with.
pub(crate) fn repair_in_place(path: &Path) -> Result<KeptLog, ResumeError> {
    let kept = kept::read_file(path).map_err(ResumeError::Unresumable)?;
    if kept.header.is_none() {
        // Nothing was kept, not even the session id: nothing to resume.
        return Err(ResumeError::Unresumable(Unresumable {
            line: 1,
            reason: "no `session` header kept: nothing to resume".into(),
        }));
    }
    let lines = kept.appended_lines();
    if kept.torn.is_none() && lines.is_empty() {
        return Ok(kept);
    }
    let mut file = OpenOptions::new().write(true).open(path)?;
    if kept.torn.is_some() {
        file.set_len(kept.kept_bytes)?;
    }
    // After `set_len` the cursor is still at 0: write at the kept end.
    io::Seek::seek(&mut file, io::SeekFrom::Start(kept.kept_bytes))?;
    file.write_all(lines.as_bytes())?;
    file.sync_all()?;
    Ok(kept)
}
