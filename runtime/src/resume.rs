//! Repairing a kept log file in place before a resume (SPEC §11). The only
//! changes ever made to what is there: a torn final line is cut off, and the
//! closers are appended. Corruption anywhere else is refused before the file
//! is touched.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, BufReader, Write};
use std::path::Path;

use crate::kept::{self, KeptLog, Unresumable};
use crate::sink::{JsonlFile, regular_file, take_writer};

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

/// Takes the log at `path` (its one-writer lock: refused while another
/// agent appends to it), reads it and repairs it for a resume: cuts a torn
/// tail, then, when a turn is open, appends its closers and a
/// `session/end-seed` marker (as dsh does at a resume) and fsyncs; returns
/// what it read and the file to go on appending to, still locked. A
/// balanced log, such as one already repaired, gets nothing appended, so
/// resuming twice appends nothing the second time; unlike dsh, no marker is
/// written then either. A log that kept no line at all (the crash cut its
/// header) is refused untouched: without its session id there is nothing
/// to go on with; so is one that ends inside its fork's seed (see
/// `kept::read`).
pub(crate) fn repair_in_place(path: &Path) -> Result<(KeptLog, JsonlFile), ResumeError> {
    // A folder is refused as any file that is not a regular one (opening it
    // to append would fail first, as another error); a missing file is
    // `NotFound`, so an embedder can start a fresh log instead.
    let metadata = fs::metadata(path)
        .map_err(|error| io::Error::new(error.kind(), format!("cannot open {path:?}: {error}")))?;
    regular_file(&metadata, path)?;
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|error| io::Error::new(error.kind(), format!("cannot open {path:?}: {error}")))?;
    take_writer(&file, path)?;
    let kept = kept::read(BufReader::new(&file)).map_err(ResumeError::Unresumable)?;
    let (lines, stamp) = kept.appended();
    let repaired = || -> io::Result<()> {
        if kept.torn.is_some() || !lines.is_empty() {
            if kept.torn.is_some() {
                file.set_len(kept.kept_bytes)?;
            }
            // Opened to append: the lines go at the (cut) end.
            (&file).write_all(lines.as_bytes())?;
            file.sync_all()?;
        }
        Ok(())
    };
    // A failure here (a full disk) leaves at most a partial closer, which
    // the next resume cuts as a torn tail.
    repaired().map_err(|error| {
        io::Error::new(error.kind(), format!("cannot repair {path:?}: {error}"))
    })?;
    let sink = JsonlFile::locked(file, path)?.numbered(stamp);
    Ok((kept, sink))
}
