//! Where the durable outputs go: a session log in the dsh JSONL shapes of
//! `courier_core::log`, header first. The runtime's journal
//! (`crate::journal`) writes the lines in the core's emission order, outside
//! the agent's lock, and syncs as the [`crate::Durability`] policy says.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use courier_core::Output;
use courier_core::log::{Stamp, durable_line, encode_durable};

use crate::sync::{Arc, Mutex, lock, pause};

/// A destination for log lines. Called outside the agent's lock, by one
/// writer at a time, in the log's order. Its first error (or panic, which
/// is caught) is its last: nothing is written after it, the call that met
/// it returns [`crate::Error::Log`] (under `Sync`), the driver task stops,
/// later work is refused with it, and `dispose` reports it. A sink must not
/// write on its own after an error either (a `BufWriter` retries what it
/// buffered when dropped): those lines belong to a call that was told it
/// failed, and may land after a partial line ([`JsonlFile`] drops them).
///
/// A sink must not call its own agent: while it runs it holds the log's
/// writer, which that call's lines would wait for. A send, edit, cancel or
/// `dispose` made from inside it (on the thread the journal called it on)
/// returns [`crate::Error::InsideSink`] instead, under any
/// [`crate::Durability`]. A panic in its `Drop` is caught.
pub trait Sink: Send + 'static {
    /// Appends one JSONL line, given without its newline: the header, and
    /// every event unless [`Sink::write_event`] is overridden.
    fn write_line(&mut self, line: &str) -> io::Result<()>;
    /// Appends one durable event. The default encodes it to its JSONL line
    /// and calls [`Sink::write_line`]; a sink that keeps events as values
    /// overrides it, and then nothing is encoded until someone reads lines
    /// (encoding is most of what a line costs: see `BENCHMARKS.md`).
    fn write_event(&mut self, mut event: Event<'_>) -> io::Result<()> {
        self.write_line(event.line())
    }
    /// Makes every line written so far durable (for a file, written and
    /// `fsync`'d): the runtime calls it when its [`crate::Durability`] says
    /// the lines must survive a crash.
    fn flush(&mut self) -> io::Result<()>;
}

/// One durable event on its way to a [`Sink`]: the core's output (the
/// sink's to keep), and its JSONL line, encoded only when asked for, into a
/// buffer the writer reuses from line to line.
pub struct Event<'a> {
    output: Output,
    buffer: &'a mut String,
}

impl<'a> Event<'a> {
    /// A durable `output`, to be encoded (if at all) into `buffer`, which
    /// is empty.
    pub(crate) fn new(output: Output, buffer: &'a mut String) -> Self {
        debug_assert!(output.is_durable(), "only durable outputs are logged");
        debug_assert!(buffer.is_empty(), "a line is encoded into an empty buffer");
        Self { output, buffer }
    }

    /// The event.
    pub fn output(&self) -> &Output {
        &self.output
    }

    /// The event, to keep.
    pub fn into_output(self) -> Output {
        self.output
    }

    /// Its JSONL line, without the newline (encoded at the first call).
    pub fn line(&mut self) -> &str {
        if self.buffer.is_empty() {
            encode_durable(&self.output, self.buffer);
        }
        self.buffer
    }
}

/// A line of a [`MemoryLog`]: the header as written, an event as the value
/// it is, so keeping it costs no encoding.
#[derive(Clone)]
enum Entry {
    Line(String),
    Event(Output),
}

/// A log kept in memory. Clones share the lines, so a test keeps one clone
/// and reads what the agent wrote through the other. Events are kept as the
/// values the runtime hands over, and encoded to their lines only when read.
#[derive(Clone)]
pub struct MemoryLog {
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        Self {
            entries: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Every line written so far, header first (encoded outside the log's
    /// lock, so the agent's writer never waits for a reader's encoding).
    pub fn lines(&self) -> Vec<String> {
        let entries = lock(&self.entries).clone();
        entries
            .into_iter()
            .map(|entry| match entry {
                Entry::Line(line) => line,
                Entry::Event(output) => {
                    durable_line(&output).expect("only durable events are kept")
                }
            })
            .collect()
    }
}

impl Default for MemoryLog {
    fn default() -> Self {
        Self::new()
    }
}

impl Sink for MemoryLog {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        lock(&self.entries).push(Entry::Line(line.to_owned()));
        Ok(())
    }

    fn write_event(&mut self, event: Event<'_>) -> io::Result<()> {
        lock(&self.entries).push(Entry::Event(event.into_output()));
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A JSONL file behind a buffer: lines reach the operating system when the
/// buffer fills or the runtime flushes, and the disk at that flush (`fdatasync`).
///
/// A log has one writer: a `JsonlFile` holds an exclusive advisory lock
/// (`flock`) on its file for as long as it lives, so a second agent (in this
/// process or another) that would append to, resume or re-create the same
/// file is refused with [`ErrorKind::ResourceBusy`] naming it, instead of
/// interleaving its lines with the first one's. The kernel releases the lock
/// when the file is closed, including when its process is killed. Readers
/// (`courier repair`, `courier validate`) take no lock: they may see the
/// live writer's last line torn.
///
/// Its first failed write or sync is its last (SPEC §11: a torn final line
/// is tolerated, corruption in the middle is not). A refused write may have
/// left part of a line in the file (a full disk cuts a write short), and
/// after a failed sync what the disk holds is unknown, so anything appended
/// later, even once the space came back, could land after a partial line,
/// or complete the line of a call that was told it failed. Every later
/// write and flush returns that first error, what was buffered is dropped
/// and never written, not even when the file is closed, and a resume cuts
/// the torn line.
pub struct JsonlFile {
    file: File,
    /// Lines not yet handed to the operating system.
    buffer: Vec<u8>,
    /// The file's length as this writer left it: before each write the
    /// file must still have exactly this length, or someone else truncated
    /// it or wrote to it.
    length: u64,
    /// The file, for errors.
    path: PathBuf,
    /// The first write or sync that failed: its kind and message.
    failed: Option<(ErrorKind, String)>,
    /// How the next event is numbered, in a log that numbers its records
    /// (a dsh log resumed): dsh's loader refuses a log whose `seq` skips.
    stamp: Option<Stamp>,
}

/// Buffered bytes beyond which the lines go to the operating system before
/// the flush that makes them durable: std's `BufWriter` default, so a long
/// batch reaches the OS (where it survives the process's kill) as it is
/// encoded, not only at its end.
const BUFFER_BYTES: usize = 8 * 1024;

impl JsonlFile {
    /// Creates the file at `path`, or empties the one there, once no other
    /// writer holds it (it is never emptied under a live agent).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        // Asked before the open, which waits for a reader on a FIFO and
        // names no path for a folder.
        match std::fs::metadata(path) {
            Ok(metadata) => regular_file(&metadata, path)?,
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(error) => return Err(io::Error::new(error.kind(), format!("{path:?}: {error}"))),
        }
        let named = |error: io::Error| io::Error::new(error.kind(), format!("{path:?}: {error}"));
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(named)?;
        take_writer(&file, path)?;
        file.set_len(0).map_err(named)?;
        sync_folder(path).map_err(named)?;
        Self::locked(file, path)
    }

    /// Appends to `file` (opened to append from `path`), whose lock
    /// [`take_writer`] took.
    pub(crate) fn locked(file: File, path: &Path) -> io::Result<Self> {
        Ok(Self {
            length: file.metadata()?.len(),
            file,
            buffer: Vec::new(),
            // Absolute (links not resolved), so it names the same entry
            // whatever the process's folder becomes.
            path: std::path::absolute(path)?,
            failed: None,
            stamp: None,
        })
    }

    /// This writer, numbering each event it appends from `stamp` on
    /// (`seq`, and, when the log has times, the time it is written, in
    /// dsh's milliseconds, never before the last one), as dsh's JSONL
    /// backend does.
    pub(crate) fn numbered(mut self, stamp: Option<Stamp>) -> Self {
        self.stamp = stamp;
        self
    }

    /// The first failure, again (`io::Error` is not `Clone`).
    fn refused(&self) -> io::Result<()> {
        match &self.failed {
            None => Ok(()),
            Some((kind, message)) => Err(io::Error::new(*kind, message.clone())),
        }
    }

    /// Runs one write or sync; its failure is this file's last.
    fn attempt(&mut self, call: impl FnOnce(&mut Self) -> io::Result<()>) -> io::Result<()> {
        self.refused()?;
        let done = call(self);
        if let Err(error) = &done {
            self.failed = Some((error.kind(), error.to_string()));
            // Never written: the call they belong to fails.
            self.buffer = Vec::new();
        }
        done
    }

    /// Hands the buffered lines to the operating system, once the file is
    /// checked to be as this writer left it (even with nothing to write):
    /// nothing lands on a file that was deleted, cut or written by someone
    /// else (whose last line may be partial).
    fn write_buffer(&mut self) -> io::Result<()> {
        self.unchanged()?;
        self.file.write_all(&self.buffer)?;
        self.length += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// The file is still the log this writer wrote: not deleted, and as
    /// long as what was written. Otherwise its lines go nowhere, or after
    /// a cut or someone else's lines, and the log is no longer this
    /// agent's: its first failure, so nothing more is written.
    fn unchanged(&self) -> io::Result<()> {
        let metadata = self.file.metadata()?;
        let damaged = |what: String| {
            io::Error::other(format!(
                "{:?}: {what} while the agent appended to it",
                self.path
            ))
        };
        // Its path must not name another file: one renamed over it leaves
        // the lines going where nobody reads them, even while another
        // link (a backup's) keeps the old file alive. A path that names
        // nothing is a deletion only when no link is left: the file itself
        // renamed is still the log, under its new name.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let same = |other: &std::fs::Metadata| {
                (other.dev(), other.ino()) == (metadata.dev(), metadata.ino())
            };
            match std::fs::metadata(&self.path) {
                Ok(at_path) if same(&at_path) => {}
                Ok(_) => return Err(damaged("replaced by another file".into())),
                Err(_) if metadata.nlink() == 0 => return Err(damaged("deleted".into())),
                Err(_) => {}
            }
        }
        match metadata.len() {
            length if length < self.length => Err(damaged(format!(
                "truncated to {length} bytes (the agent wrote {})",
                self.length
            ))),
            length if length > self.length => Err(damaged(format!(
                "written by someone else ({length} bytes, the agent wrote {})",
                self.length
            ))),
            _ => Ok(()),
        }
    }
}

/// How long a busy lock is tried again before the log is called in use: 1,
/// 2, 4, ... 128 ms (255 ms in all). A process that any thread of this
/// program spawns holds a copy of every open descriptor from its fork to
/// its exec (close-on-exec closes them only then), and with it the lock of
/// a log this program has just let go: a resume right after a dispose was
/// refused as "in use" while another thread spawned a child (seen under
/// load in `runtime/tests/resume.rs`). That copy goes within moments; a
/// real second writer keeps the lock for as long as it lives.
const BUSY_WAITS: std::ops::Range<u32> = 0..8;

/// Refuses a log path that is not a regular file: a folder, a FIFO (whose
/// read would wait for a writer for ever) or a device cannot be read back,
/// cut at a torn tail or synced.
pub(crate) fn regular_file(metadata: &std::fs::Metadata, path: &Path) -> io::Result<()> {
    if metadata.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        ErrorKind::InvalidInput,
        format!("{path:?} is not a regular file: a session log is a file to append to"),
    ))
}

/// Syncs the folder holding `path`, so a file just created there survives
/// a crash by name, not only by content: a `Sync` send's `fsync` of the
/// file does not make its directory entry durable (POSIX), and a log whose
/// entry is lost loses every line in it.
fn sync_folder(path: &Path) -> io::Result<()> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    #[cfg(unix)]
    match File::open(folder).and_then(|folder| folder.sync_all()) {
        Ok(()) => {}
        // A folder this process may write but not read, or a file system
        // that cannot sync a folder (some FUSE and network ones): the
        // file's own syncs are all it offers.
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::PermissionDenied | ErrorKind::InvalidInput | ErrorKind::Unsupported
            ) => {}
        Err(error) => {
            let why = format!("cannot sync {folder:?}: {error}");
            return Err(io::Error::new(error.kind(), why));
        }
    }
    #[cfg(not(unix))]
    let _ = folder;
    Ok(())
}

/// Takes the log's one-writer lock on `file` (opened from `path`), or says
/// who has it. A file system that cannot lock is refused too: without the
/// lock nothing stops a second writer from corrupting the log.
pub(crate) fn take_writer(file: &File, path: &Path) -> io::Result<()> {
    regular_file(&file.metadata()?, path)?;
    let mut waits = BUSY_WAITS.map(|power| Duration::from_millis(1 << power));
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) => match waits.next() {
                Some(wait) => pause(wait),
                None => {
                    return Err(io::Error::new(
                        ErrorKind::ResourceBusy,
                        format!(
                            "{path:?} is in use: another agent (in this process or another) appends to it; \
                             a log has one writer, free once that agent is disposed or dropped, or its process ends"
                        ),
                    ));
                }
            },
            Err(TryLockError::Error(error)) => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("cannot lock {path:?}: {error}"),
                ));
            }
        }
    }
}

impl Sink for JsonlFile {
    /// In a log that numbers its records, each event numbered on.
    fn write_event(&mut self, mut event: Event<'_>) -> io::Result<()> {
        let Some(stamp) = &mut self.stamp else {
            return self.write_line(event.line());
        };
        if let Some(time) = &mut stamp.time {
            *time = later_millis(time);
        }
        let line = stamp.envelope(event.line());
        stamp.next_seq += 1;
        self.write_line(&line)
    }

    /// Two buffer copies: no formatting machinery on the hot path.
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.refused()?;
        self.buffer.extend_from_slice(line.as_bytes());
        self.buffer.push(b'\n');
        if self.buffer.len() >= BUFFER_BYTES {
            self.attempt(Self::write_buffer)?;
        }
        Ok(())
    }

    /// One `fstat` beside the `fdatasync`: a log deleted, cut or written by
    /// someone else fails here instead of silently losing what follows.
    fn flush(&mut self) -> io::Result<()> {
        self.attempt(|file| {
            file.write_buffer()?;
            file.file.sync_data()
        })
    }
}

/// The time now in dsh's milliseconds since the epoch, or `last` (a
/// record's time as written) when the clock is behind it: a log's times
/// never go back.
fn later_millis(last: &str) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    match last.parse::<u128>() {
        Ok(last) if last > now => last.to_string(),
        Ok(_) | Err(_) => now.to_string(),
    }
}

impl Drop for JsonlFile {
    /// Lines written but never flushed go to the operating system (not
    /// synced), as a `BufWriter`'s do; after a failure, nothing does.
    fn drop(&mut self) {
        if !self.buffer.is_empty() {
            drop(self.attempt(Self::write_buffer));
        }
    }
}
