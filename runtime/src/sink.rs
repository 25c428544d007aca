//! Where the durable outputs go: a session log in the dsh JSONL shapes of
//! `courier_core::log`, header first. The runtime's journal
//! (`crate::journal`) writes the lines in the core's emission order, outside
//! the agent's lock, and syncs as the [`crate::Durability`] policy says.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::sync::{Arc, Mutex, lock};

/// A destination for log lines. Called outside the agent's lock, by one
/// writer at a time, in the log's order. Its first error (or panic, which
/// is caught) is its last: nothing is written after it, the call that met
/// it returns [`crate::Error::Log`] (under `Sync`), later work is refused
/// with it, and `dispose` reports it.
pub trait Sink: Send + 'static {
    /// Appends one JSONL line, given without its newline.
    fn write_line(&mut self, line: &str) -> io::Result<()>;
    /// Makes every line written so far durable (for a file, written and
    /// `fsync`'d): the runtime calls it when its [`crate::Durability`] says
    /// the lines must survive a crash.
    fn flush(&mut self) -> io::Result<()>;
}

/// A log kept in memory. Clones share the lines, so a test keeps one clone
/// and reads what the agent wrote through the other.
#[derive(Clone)]
pub struct MemoryLog {
    lines: Arc<Mutex<Vec<String>>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        Self {
            lines: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Every line written so far, header first.
    pub fn lines(&self) -> Vec<String> {
        lock(&self.lines).clone()
    }
}

impl Default for MemoryLog {
    fn default() -> Self {
        Self::new()
    }
}

impl Sink for MemoryLog {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        lock(&self.lines).push(line.to_owned());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A JSONL file behind a buffer: lines reach the operating system when the
/// buffer fills or the runtime flushes, and the disk at that flush (`fdatasync`).
pub struct JsonlFile {
    writer: BufWriter<File>,
}

impl JsonlFile {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = File::create(path)?;
        Ok(Self {
            writer: BufWriter::new(file),
        })
    }

    /// Opens the file at `path` to append to what is there (a resumed log).
    pub fn append(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Self {
            writer: BufWriter::new(file),
        })
    }
}

impl Sink for JsonlFile {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        writeln!(self.writer, "{line}")
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()?;
        self.writer.get_ref().sync_data()
    }
}
