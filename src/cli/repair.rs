//! `courier repair LOG.jsonl [--out FILE]`: what a resume would do to a kept
//! session log (Courier's or dsh's), read by the runtime's one reader
//! (`courier_runtime::kept`), so the two never disagree.
//!
//! Prints whether a torn final line is dropped, the closers to append (as
//! transcript lines), the pending lists, the next turn number, and the ids
//! the crashed turn had claimed and so lost. With `--out`, writes the
//! repaired log (the kept lines verbatim, then what a resume appends) to a
//! new file, through a temporary file in the same folder and an atomic
//! rename; a device or pipe (`/dev/stdout`) is written in place, and the
//! report then goes to stderr. The input is only ever read.
//!
//! A log compressed as dsh writes it by default (`session.jsonl.zstd`, told
//! by its first bytes) is read decompressed (`courier::compressed`): its
//! lines are counted in the plaintext, a torn final frame is reported as
//! the torn tail, and `--out` writes the repaired log as plain JSONL (the
//! kept lines decompressed), which dsh reads as an uncompressed log and a
//! resume appends to.
//!
//! Exit 0 on success; 2 when the log cannot be read or is corrupt (naming
//! the line), when `--out` names the input or any regular file that exists (it is
//! never overwritten, not even one made while the repair ran), or when the
//! output cannot be written.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::compressed::{Plaintext, TornFrame};
use courier::files::{self, Output, Staged};

use courier_core::Target;
use courier_runtime::kept::{self, KeptLog};

/// Arguments of `courier repair`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The session log to read (JSONL, or dsh's zstd-compressed JSONL);
    /// never modified.
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Where to write the repaired log, as plain JSONL (a new file, not the
    /// input; or a device such as /dev/stdout).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        vec![self.log.as_path()]
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let name = files::named(&args.log);
    if let Some(refused) = args
        .out
        .as_deref()
        .and_then(|out| refused_out(&args.log, out))
    {
        eprintln!("error: {refused}");
        return ExitCode::from(2);
    }
    // Read, then copied to `--out`: a pipe is copied first.
    let source = match files::Rereadable::new(&args.log) {
        Ok(source) => source,
        Err(error) => {
            eprintln!("error: {}", files::located(name, error));
            return ExitCode::from(2);
        }
    };
    let (kept, frame) = match read(source.path()) {
        Ok(read) => read,
        Err(error) => {
            eprintln!("error: {}", files::located(name, error));
            return ExitCode::from(2);
        }
    };
    if let Some(out) = &args.out {
        // Written to stdout, the log goes alone: the report to stderr.
        files::output_to(out);
    }
    courier::status!("{}", report(&kept, frame.as_ref()).trim_end());
    let Some(out) = &args.out else {
        return ExitCode::SUCCESS;
    };
    match write_repaired(source.path(), &kept, out) {
        Ok(()) => {
            courier::status!("wrote {}", files::named(out));
            ExitCode::SUCCESS
        }
        // Stdout closed (`--out /dev/stdout | head -1`): nobody reads any
        // more, and the command ends quietly, as every command does.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe && files::is_stdout(out) => {
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: --out {}: cannot write: {error}", files::named(out));
            ExitCode::from(2)
        }
    }
}

/// The log at `path`, read as a resume reads it (decompressed, when it is
/// compressed), and the torn final Zstandard frame whose rest was dropped,
/// if it ends in one; the error as `line N: why` or `why`.
fn read(path: &Path) -> Result<(KeptLog, Option<TornFrame>), String> {
    let mut log = Plaintext::open(path)?;
    let kept = kept::read(&mut log);
    // A corrupt frame is the file's fault, not the line's being read.
    if let Some(failure) = log.failure() {
        return Err(failure.to_owned());
    }
    let kept = kept.map_err(|error| error.to_string())?;
    Ok((kept, log.torn_frame().cloned()))
}

/// What a resume would do, one fact a line.
fn report(kept: &KeptLog, frame: Option<&TornFrame>) -> String {
    let mut text = format!("lines kept: {}\n", kept.lines);
    let torn = match (&kept.torn, frame) {
        (None, None) => "none".to_owned(),
        (Some(torn), None) => format!("dropped ({torn})"),
        (None, Some(frame)) => format!("dropped ({frame})"),
        (Some(torn), Some(frame)) => format!("dropped ({torn}; {frame})"),
    };
    text.push_str(&format!("torn tail: {torn}\n"));
    let closers = kept.closers();
    text.push_str(&format!("closers to append: {}\n", closers.len()));
    for closer in &closers {
        text.push_str(&format!("  {closer}\n"));
    }
    for target in [Target::NextTurn, Target::NextStep] {
        let ids: Vec<String> = kept
            .replay
            .inbox()
            .list(target)
            .iter()
            .map(|message| files::named(message.id().as_str()).word(NONE))
            .collect();
        text.push_str(&format!("pending {target}: {}\n", listed(&ids)));
    }
    text.push_str(&format!("next turn: {}\n", kept.next_turn()));
    let lost: Vec<String> = kept
        .lost
        .iter()
        .map(|id| files::named(id.as_str()).word(NONE))
        .collect();
    text.push_str(&format!("claimed and lost: {}\n", listed(&lost)));
    text
}

/// What an empty list prints (an id spelt so prints quoted).
const NONE: &str = "none";

fn listed(ids: &[String]) -> String {
    match ids {
        [] => NONE.into(),
        ids => ids.join(" "),
    }
}

/// Why `out` may not be written: it is the input or a folder (see
/// `files::check_paths`), or any file that exists (user data is never
/// overwritten; a device or a pipe, `/dev/stdout`, is written in place).
fn refused_out(log: &Path, out: &Path) -> Option<String> {
    let output = Output {
        flag: "--out",
        path: out,
    };
    if let Err(error) = files::check_paths(&[log], &[output]) {
        return Some(error);
    }
    files::refused_existing("--out", out)
}

/// Writes the kept bytes of `log` and what a resume appends to `out`,
/// through a temporary file beside it, so `out` is whole or absent.
/// Stdout (`--out /dev/stdout`, even redirected to a file the shell made)
/// is written as a stream.
fn write_repaired(log: &Path, kept: &KeptLog, out: &Path) -> io::Result<()> {
    if files::is_stdout(out) {
        let mut stdout = io::stdout().lock();
        write_kept(log, kept, &mut stdout)?;
        return stdout.flush();
    }
    let mut staged = Staged::new(out)?;
    write_kept(log, kept, staged.file())?;
    staged.commit_new()
}

/// The kept bytes of `log`'s plaintext (decompressed again, when it is
/// compressed), then what a resume appends.
fn write_kept(log: &Path, kept: &KeptLog, to: &mut impl Write) -> io::Result<()> {
    let plaintext = Plaintext::open(log).map_err(io::Error::other)?;
    let copied = io::copy(&mut plaintext.take(kept.kept_bytes), to)?;
    if copied != kept.kept_bytes {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the input shrank while it was read",
        ));
    }
    to.write_all(kept.appended_lines().as_bytes())
}
