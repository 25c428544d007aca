//! A session log read as its plaintext, whether kept as plain JSONL or as
//! dsh's default `session.jsonl.zstd`: [`Plaintext::open`] is where
//! `validate` and `repair` open a log.
//!
//! A compressed log is told by its content (it starts with the Zstandard
//! magic bytes `28 B5 2F FD`), never by its name. dsh writes it as
//! concatenated frames, each an independently decodable, checksummed batch
//! of whole JSONL lines, the first frame the `session` header alone
//! (`session-persistence-jsonl`: `scanZstdFrames`, `readZstdPrefix`). It is
//! read as dsh reads it:
//! - complete frames are decoded (checksum checked) one at a time with the
//!   `zstd` crate's streaming decoder, which says where each frame ends, so
//!   memory holds a buffer and the line being decoded, not the log, and
//!   each frame's byte offset is known. Its raw form, with one context for
//!   every frame: `read::Decoder::single_frame` makes a context per frame,
//!   which took a log of 270,000 small frames (dsh writes a frame per
//!   batch) from 1.1 s to 3.8 s;
//! - a complete frame that is corrupt (a bad magic, a reserved bit set, a
//!   block that does not decode, a checksum that does not match), that
//!   ends inside a line, or a first frame that is not exactly one line, is
//!   an error naming the frame's byte offset: dsh refuses such a log;
//! - an incomplete final frame (a crash cut it) is a torn tail: the whole
//!   lines decoded from it are kept, the rest is dropped, and
//!   [`Plaintext::torn_frame`] says so, so it is never dropped silently;
//! - a log with no complete frame is refused, as dsh refuses it.
//!
//! Line numbers are those of the plaintext, as dsh numbers its events.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use courier_core::log::{LINE_BYTES_MAX, ZSTD_MAGIC};
use zstd::stream::raw::{self, InBuffer, Operation, OutBuffer};

/// Bytes read from the file at a time: large enough that reading is not
/// the bottleneck.
const BUFFER_BYTES: usize = 1 << 16;

/// Plaintext decoded at a time, at first: zstd's largest block.
const DECODED_BYTES: usize = 1 << 17;

/// A log's plaintext, read line by line by the one reader of each command.
pub struct Plaintext<R> {
    inner: Inner<R>,
}

enum Inner<R> {
    Plain(Source<R>),
    Zstd(Box<Frames<R>>),
}

impl Plaintext<File> {
    /// Opens the log at `path`; the error says why, as `cannot open: ...`
    /// or `cannot read: ...`.
    pub fn open(path: &Path) -> Result<Self, String> {
        // A folder opens (on Linux) and fails at its first read.
        if path.is_dir() {
            return Err("cannot read: is a folder".to_owned());
        }
        let file = File::open(path).map_err(|error| format!("cannot open: {error}"))?;
        Plaintext::new(file).map_err(|error| format!("cannot read: {error}"))
    }
}

impl<R: Read> Plaintext<R> {
    /// The plaintext of `reader`, decompressed when it starts with the
    /// Zstandard magic bytes.
    pub fn new(reader: R) -> io::Result<Self> {
        let mut source = Source::new(reader);
        let inner = match source.peek(ZSTD_MAGIC.len())?.starts_with(&ZSTD_MAGIC) {
            true => Inner::Zstd(Box::new(Frames::new(source, LINE_BYTES_MAX)?)),
            false => Inner::Plain(source),
        };
        Ok(Plaintext { inner })
    }

    /// The incomplete final frame whose rest was dropped, once the log has
    /// been read to its end (`None` for a plain log).
    pub fn torn_frame(&self) -> Option<&TornFrame> {
        match &self.inner {
            Inner::Plain(_) => None,
            Inner::Zstd(frames) => frames.torn.as_ref(),
        }
    }

    /// Why the compressed log could not be read on (the words of the
    /// error its reads returned), naming a frame's byte offset: an error of
    /// the file, not of the line its reader was at. `None` for a plain log.
    pub fn failure(&self) -> Option<&str> {
        match &self.inner {
            Inner::Plain(_) => None,
            Inner::Zstd(frames) => frames.failed.as_ref().map(|(_, reason)| reason.as_str()),
        }
    }
}

impl<R: Read> Read for Plaintext<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, buffer)
    }
}

/// `Read::read` of a reader that buffers (each here is read through its
/// `BufRead`).
fn read_buffered(reader: &mut impl BufRead, buffer: &mut [u8]) -> io::Result<usize> {
    let available = reader.fill_buf()?;
    let length = available.len().min(buffer.len());
    buffer[..length].copy_from_slice(&available[..length]);
    reader.consume(length);
    Ok(length)
}

impl<R: Read> BufRead for Plaintext<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match &mut self.inner {
            Inner::Plain(source) => source.fill_buf(),
            Inner::Zstd(frames) => frames.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match &mut self.inner {
            Inner::Plain(source) => source.consume(amount),
            Inner::Zstd(frames) => frames.consume(amount),
        }
    }
}

/// An incomplete final frame: a crash cut it. Its whole lines are kept,
/// what it decoded after them (a line's start) is dropped, and so is what
/// did not decode.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TornFrame {
    /// Its byte offset in the file (where dsh cuts the file at a resume).
    pub at: u64,
    /// The first plaintext line not kept (the line after the last kept).
    pub line: u64,
    /// Its whole lines, decoded and kept.
    pub kept: u64,
    /// The bytes decoded after them, dropped: line `line` cut short.
    pub dropped: u64,
}

impl fmt::Display for TornFrame {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let TornFrame {
            at,
            line,
            kept,
            dropped,
        } = self;
        write!(
            formatter,
            "a torn final Zstandard frame at byte {at}, cut short: "
        )?;
        match kept {
            0 => write!(formatter, "no whole line decoded from it")?,
            1 => write!(formatter, "1 whole line decoded from it kept")?,
            kept => write!(formatter, "{kept} whole lines decoded from it kept")?,
        }
        match dropped {
            0 => Ok(()),
            dropped => write!(
                formatter,
                ", {dropped} decoded bytes of line {line} dropped"
            ),
        }
    }
}

/// The file's bytes, buffered: counted as the decoder takes them, so each
/// frame's byte offset is known, and looked at before a frame is decoded.
struct Source<R> {
    inner: R,
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes consumed since the file's start.
    taken: u64,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source {
            inner,
            buffer: vec![0; BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            taken: 0,
        }
    }

    /// The next `wanted` bytes, without consuming them (fewer at the end
    /// of the file).
    fn peek(&mut self, wanted: usize) -> io::Result<&[u8]> {
        if self.end - self.start < wanted {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            while self.end < wanted {
                match self.inner.read(&mut self.buffer[self.end..]) {
                    Ok(0) => break,
                    Ok(read) => self.end += read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(&self.buffer[self.start..self.end])
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, buffer)
    }
}

impl<R: Read> BufRead for Source<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end {
            self.end = loop {
                match self.inner.read(&mut self.buffer) {
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    read => break read?,
                }
            };
            self.start = 0;
        }
        Ok(&self.buffer[self.start..self.end])
    }

    fn consume(&mut self, amount: usize) {
        let amount = amount.min(self.end - self.start);
        self.start += amount;
        self.taken += amount as u64;
    }
}

/// The frame being decoded.
#[derive(Default)]
struct Frame {
    /// Its byte offset.
    at: u64,
    /// Its plaintext's first line.
    first_line: u64,
    /// Line ends it decoded.
    lines: u64,
    /// Whether what it decoded so far ends at a line's end (so it does
    /// while it has decoded nothing).
    ends_line: bool,
}

/// A Zstandard log's plaintext. What the frame being decoded holds after
/// its last line end is held back until a line end follows (an incomplete
/// final frame drops it), up to the line cap: past it, the line is handed
/// on as it comes, and its reader refuses it, or drops it as torn, by the
/// same cap.
struct Frames<R> {
    source: Source<R>,
    /// One decompression context for every frame (a frame's own would
    /// cost more than decoding a small batch).
    decoder: raw::Decoder<'static>,
    /// Inside a frame (else between two, or past the last).
    inside: bool,
    /// Past the last frame, or a torn one.
    ended: bool,
    /// Decoded plaintext: `pos..ready` to hand on, `ready..filled` held
    /// back, the rest spare (kept zeroed once, so decoding a small frame
    /// costs no more than it decodes).
    decoded: Vec<u8>,
    pos: usize,
    ready: usize,
    filled: usize,
    line_max: u64,
    frame: Frame,
    /// Complete frames decoded.
    complete: u64,
    /// Line ends handed on or ready.
    lines: u64,
    torn: Option<TornFrame>,
    /// The error that ended the reading, given again on every later read.
    failed: Option<(io::ErrorKind, String)>,
}

impl<R: Read> Frames<R> {
    fn new(source: Source<R>, line_max: u64) -> io::Result<Self> {
        Ok(Frames {
            source,
            decoder: raw::Decoder::new()?,
            inside: false,
            ended: false,
            decoded: vec![0; DECODED_BYTES],
            pos: 0,
            ready: 0,
            filled: 0,
            line_max,
            frame: Frame::default(),
            complete: 0,
            lines: 0,
            torn: None,
            failed: None,
        })
    }

    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.ready && !self.ended {
            if let Some((kind, reason)) = &self.failed {
                return Err(io::Error::new(*kind, reason.clone()));
            }
            let step = match self.inside {
                false => self.begin(),
                true => self.decode(),
            };
            if let Err(error) = step {
                self.failed = Some((error.kind(), error.to_string()));
            }
        }
        Ok(&self.decoded[self.pos..self.ready])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.ready);
    }

    /// Starts the next frame, after looking at its header as dsh does
    /// (`scanZstdFrames`): the decoder would skip a skippable frame, and
    /// it ignores one of the reserved bits, both of which dsh refuses.
    fn begin(&mut self) -> io::Result<()> {
        let at = self.source.taken;
        self.frame = Frame {
            at,
            first_line: self.lines + 1,
            lines: 0,
            ends_line: true,
        };
        let head = self.source.peek(ZSTD_MAGIC.len() + 1).map_err(unread)?;
        if head.is_empty() {
            self.ended = true;
            return Ok(());
        }
        let magic = head.len().min(ZSTD_MAGIC.len());
        if head[..magic] != ZSTD_MAGIC[..magic] {
            return Err(corrupt(format!("invalid frame magic at byte {at}")));
        }
        let Some(descriptor) = head.get(ZSTD_MAGIC.len()) else {
            return self.tear();
        };
        if descriptor & 0x18 != 0 {
            let at = at + ZSTD_MAGIC.len() as u64;
            return Err(corrupt(format!("reserved frame-header bit at byte {at}")));
        }
        self.decoder.reinit()?;
        self.inside = true;
        Ok(())
    }

    /// Decodes more of the frame: zstd says when it has decoded it whole,
    /// its checksum matched; the file ending first tears it.
    fn decode(&mut self) -> io::Result<()> {
        self.make_room();
        let input = self.source.fill_buf().map_err(unread)?;
        let at_end = input.is_empty();
        let mut input = InBuffer::around(input);
        let mut output = OutBuffer::around(&mut self.decoded[self.filled..]);
        let decoded = self.decoder.run(&mut input, &mut output);
        let (taken, produced) = (input.pos(), output.pos());
        self.source.consume(taken);
        let remaining = decoded.map_err(|error| {
            let Frame { at, first_line, .. } = self.frame;
            corrupt(format!(
                "the frame at byte {at} (plaintext from line {first_line}) does not decode: \
                 {error}"
            ))
        })?;
        self.decoded_more(produced)?;
        if remaining == 0 {
            self.inside = false;
            return self.end_frame();
        }
        // At the end, zstd is given nothing: once it has nothing more to
        // hand out, the frame is cut short.
        if at_end && produced == 0 {
            return self.tear();
        }
        Ok(())
    }

    /// Room after `filled` to decode into: what was handed on is dropped,
    /// and a held line that fills the buffer grows it.
    fn make_room(&mut self) {
        if self.pos > 0 {
            self.decoded.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.ready -= self.pos;
            self.pos = 0;
        }
        // Held back, a line is at most `line_max` bytes.
        if self.filled == self.decoded.len() {
            let most = usize::try_from(self.line_max).map_or(usize::MAX, |line_max| {
                line_max.saturating_add(DECODED_BYTES)
            });
            self.decoded.resize((self.decoded.len() * 2).min(most), 0);
        }
    }

    /// Takes in `read` bytes just decoded into the spare room.
    fn decoded_more(&mut self, read: usize) -> io::Result<()> {
        if read == 0 {
            return Ok(());
        }
        let start = self.filled;
        self.filled += read;
        let chunk = &self.decoded[start..self.filled];
        self.frame.ends_line = chunk.last() == Some(&b'\n');
        if let Some(last) = memchr::memrchr(b'\n', chunk) {
            let lines = memchr::memchr_iter(b'\n', chunk).count() as u64;
            self.frame.lines += lines;
            if self.complete == 0 && (self.frame.lines > 1 || !self.frame.ends_line) {
                return Err(not_one_header_line());
            }
            self.lines += lines;
            self.ready = start + last + 1;
        }
        if (self.filled - self.ready) as u64 > self.line_max {
            self.ready = self.filled;
        }
        Ok(())
    }

    /// A frame decoded whole, its checksum matched.
    fn end_frame(&mut self) -> io::Result<()> {
        let Frame { at, lines, .. } = self.frame;
        if !self.frame.ends_line {
            let line = self.lines + 1;
            return Err(corrupt(format!(
                "complete frame contains a torn JSONL record: the frame at byte {at} ends inside \
                 line {line}"
            )));
        }
        if self.complete == 0 && lines != 1 {
            return Err(not_one_header_line());
        }
        self.complete += 1;
        Ok(())
    }

    /// The file ends inside the frame: its whole lines stay, the rest of
    /// what it decoded is dropped. A log with no complete frame is refused.
    fn tear(&mut self) -> io::Result<()> {
        let Frame { at, lines, .. } = self.frame;
        if self.complete == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "empty or header-less Zstandard session log: its first frame, at byte {at}, \
                     is cut short"
                ),
            ));
        }
        self.torn = Some(TornFrame {
            at,
            line: self.lines + 1,
            kept: lines,
            dropped: (self.filled - self.ready) as u64,
        });
        self.filled = self.ready;
        (self.inside, self.ended) = (false, true);
        Ok(())
    }
}

/// The file could not be read (no fault of a frame's).
fn unread(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("cannot read: {error}"))
}

/// A complete frame dsh refuses, in dsh's words.
fn corrupt(what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("corrupt Zstandard session log: {what}"),
    )
}

fn not_one_header_line() -> io::Error {
    corrupt("first frame is not exactly one header line (the frame at byte 0)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// One checksummed frame, as dsh writes a batch, with a block per piece
    /// (a flush between them), so a cut between pieces leaves them decodable.
    fn frame(pieces: &[&str]) -> Vec<u8> {
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        encoder.include_checksum(true).unwrap();
        for piece in pieces {
            encoder.write_all(piece.as_bytes()).unwrap();
            encoder.flush().unwrap();
        }
        encoder.finish().unwrap()
    }

    /// The plaintext of `bytes` read whole, or the error that stopped it;
    /// and the torn frame.
    fn read(reader: impl Read, line_max: u64) -> (Result<Vec<u8>, String>, Option<TornFrame>) {
        let mut source = Source::new(reader);
        assert!(source.peek(4).unwrap().starts_with(&ZSTD_MAGIC));
        let mut frames = Plaintext {
            inner: Inner::Zstd(Box::new(Frames::new(source, line_max).unwrap())),
        };
        let mut plaintext = Vec::new();
        let read = frames.read_to_end(&mut plaintext);
        let read = read.map(|_| plaintext).map_err(|error| error.to_string());
        (read, frames.torn_frame().cloned())
    }

    /// Hands out one byte a read, as a pipe may: the frame header is looked
    /// at across reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buffer[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn frames_read_a_byte_at_a_time_decode_to_their_plaintext() {
        let log = [
            frame(&["h\n"]),
            frame(&["a\nb", "c\n"]),
            frame(&[]),
            frame(&["d\n"]),
        ]
        .concat();
        let (read, torn) = super::tests::read(Trickle(&log), 8);
        assert_eq!(read.unwrap(), b"h\na\nbc\nd\n");
        assert_eq!(torn, None);
    }

    /// A line longer than the cap is handed on as it comes, not held
    /// whole: its reader refuses it (or drops it, torn) by the same cap.
    #[test]
    fn a_line_past_the_cap_is_handed_on_unheld() {
        let long = "x".repeat(40);
        let log = [frame(&["h\n"]), frame(&[&long, &long, "\n"])].concat();
        let (read, _) = super::tests::read(log.as_slice(), 8);
        assert_eq!(read.unwrap(), format!("h\n{long}{long}\n").as_bytes());
        // Cut before its end: what was handed on stays handed on (the
        // line's reader finds it unterminated), and the frame is torn.
        let cut_inside = (0..log.len()).rev().find_map(|cut| {
            let (read, torn) = super::tests::read(&log[..cut], 8);
            let read = read.unwrap();
            read.ends_with(b"x").then_some((read, torn))
        });
        let (read, torn) = cut_inside.expect("a cut that decodes part of the line");
        assert!(read.starts_with(b"h\nxx") && read.len() > 10, "{read:?}");
        assert_eq!(torn.map(|torn| (torn.line, torn.dropped)), Some((2, 0)));
    }

    /// The file ends inside a frame's header, or in bytes that cannot
    /// start one.
    #[test]
    fn a_cut_frame_header_is_torn_and_bytes_that_start_no_frame_are_corrupt() {
        let header = frame(&["h\n"]);
        let at = header.len() as u64;
        for kept in 1..5 {
            let log = [header.clone(), ZSTD_MAGIC[..kept.min(4)].to_vec()].concat();
            let log = [log, vec![0x04; kept.saturating_sub(4)]].concat();
            let (read, torn) = super::tests::read(log.as_slice(), 8);
            assert_eq!(read.unwrap(), b"h\n");
            let expected = TornFrame {
                at,
                line: 2,
                kept: 0,
                dropped: 0,
            };
            assert_eq!(torn, Some(expected), "{kept}");
        }
        let log = [header, vec![0x28, 0x00]].concat();
        let (read, _) = super::tests::read(log.as_slice(), 8);
        let error = read.unwrap_err();
        assert_eq!(
            error,
            format!("corrupt Zstandard session log: invalid frame magic at byte {at}")
        );
    }

    /// A reader's error is given again to every later read, and named by
    /// [`Plaintext::failure`]; a plain log has none.
    #[test]
    fn a_failure_stays() {
        let log = [frame(&["h\n"]), frame(&["a"])].concat();
        let mut plaintext = Plaintext::new(log.as_slice()).unwrap();
        let mut all = Vec::new();
        let first = plaintext.read_to_end(&mut all).unwrap_err().to_string();
        let again = plaintext.fill_buf().unwrap_err().to_string();
        assert_eq!(first, again);
        assert_eq!(plaintext.failure(), Some(first.as_str()));
        assert!(first.contains("ends inside line 2"), "{first}");
        let plain = Plaintext::new("{}\n".as_bytes()).unwrap();
        assert_eq!((plain.failure(), plain.torn_frame()), (None, None));
    }
}
