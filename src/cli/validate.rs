//! `courier validate [--format text|json] FILE...`: checks recorded session
//! logs (dsh JSONL) against the properties a durable log can show. A log
//! compressed as dsh writes it by default (`session.jsonl.zstd`, told by its
//! first bytes) is read decompressed (`courier::compressed`): its line
//! numbers are those of the plaintext.
//!
//! Text: one line per violation on stdout, `FILE:LINE: <property>: <detail>`;
//! a file that cannot be read or parsed prints `error: FILE:LINE: <reason>` on
//! stderr; a summary goes to stderr. JSON (JSON Lines): one object per file
//! on stdout, one line each, written as the file is checked: `file`, then
//! `violations` (each written when found, so memory stays constant however
//! many there are), then either `conversions` (dsh's older records read
//! converted: `total` and the count per rule), `lines`, `status` (`valid`
//! or `invalid`), `stopped`, `torn` (the first line of a torn tail dropped:
//! a torn final line, or the line a torn final Zstandard frame was cut in or
//! before; or null) and `torn-frame` (that frame's byte offset, or null),
//! or `status` `unreadable` and `error` (`line`, null when the file
//! as a whole cannot be read, such as a corrupt frame, and `reason`). In
//! text, a torn tail dropped is said on stderr with why it is torn (`note:
//! FILE:LINE: a torn final line (no terminating newline), ...`, `note:
//! FILE:LINE: a torn final Zstandard frame, at byte N ...`): never dropped
//! silently.
//! Exit 0 when every file is valid, 1 when any has a violation, 2 when any
//! cannot be read or parsed, or stdout cannot be written; a closed stdout
//! (`| head`) ends the run quietly, with the verdict of the files already
//! reported.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::compressed::{Plaintext, TornFrame};
use courier::files;
use courier_check::validate::{Finding, Summary, Unreadable, validate};
use courier_core::log::Conversions;
use serde_json::json;

/// Arguments of `courier validate`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// How to report.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Session logs: JSONL, or dsh's zstd-compressed JSONL
    /// (`session.jsonl.zstd`, told by its first bytes, read decompressed).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        self.files.iter().map(PathBuf::as_path).collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// `FILE:LINE: <property>: <detail>` per violation.
    Text,
    /// One JSON object per file, one line each (JSON Lines).
    Json,
}

/// What became of a torn final line.
const TORN_NOTE: &str = "dropped as a resume drops it (SPEC §11); the lines before it are checked";

/// What became of a torn final Zstandard frame.
const TORN_FRAME_NOTE: &str = "as dsh's loader reads it; every line kept is checked";

/// Files by verdict.
#[derive(Default)]
struct Counts {
    valid: u64,
    invalid: u64,
    unreadable: u64,
}

impl Counts {
    fn exit_code(&self) -> ExitCode {
        match (self.unreadable, self.invalid) {
            (0, 0) => ExitCode::SUCCESS,
            (0, _) => ExitCode::from(1),
            _ => ExitCode::from(2),
        }
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let mut counts = Counts::default();
    let mut out = io::stdout().lock();
    let written = args
        .files
        .iter()
        .try_for_each(|file| report_file(args.format, file, &mut out, &mut counts));
    match written.and_then(|()| out.flush()) {
        Ok(()) => {}
        // Quietly for a closed pipe, once for anything else.
        Err(error) => {
            files::stdout_failed(&error);
            return ExitCode::from(2);
        }
    }
    if args.format == Format::Text {
        let Counts {
            valid,
            invalid,
            unreadable,
        } = counts;
        eprintln!("{valid} valid, {invalid} invalid, {unreadable} unreadable");
    }
    counts.exit_code()
}

/// Checks one file, writing its findings as they come and then its verdict.
fn report_file(
    format: Format,
    file: &Path,
    out: &mut impl Write,
    counts: &mut Counts,
) -> io::Result<()> {
    let name = files::named(file).to_string();
    if format == Format::Json {
        // JSON escapes a UTF-8 name itself; one that is not UTF-8 is given
        // escaped, as the text format prints it.
        let file = file.to_str().unwrap_or(&name);
        write!(out, "{{\"file\":{},\"violations\":[", json!(file))?;
    }
    let mut written = Ok(());
    let mut first = true;
    let outcome = check_file(file, |finding| {
        if written.is_ok() {
            written = write_finding(format, &name, &finding, first, out);
            first = false;
        }
    });
    written?;
    match &outcome {
        Ok((summary, _)) if summary.is_valid() => counts.valid += 1,
        Ok(_) => counts.invalid += 1,
        Err(_) => counts.unreadable += 1,
    }
    match (format, &outcome) {
        (Format::Json, Ok((summary, frame))) => {
            writeln!(out, "],{}", verdict_json(summary, frame.as_ref()))
        }
        (Format::Json, Err(error)) => {
            // Line 0: the file as a whole (it cannot be opened), no line.
            let line = (error.line > 0).then_some(error.line);
            let error = json!({ "line": line, "reason": files::escaped(&error.reason) });
            writeln!(out, "],\"status\":\"unreadable\",\"error\":{error}}}")
        }
        (Format::Text, Err(error)) => {
            out.flush()?;
            let reason = files::escaped(&error.reason);
            match error.line {
                0 => eprintln!("error: {name}: {reason}"),
                line => eprintln!("error: {name}:{line}: {reason}"),
            }
            Ok(())
        }
        (Format::Text, Ok((summary, frame))) => {
            if summary.torn.is_some() || frame.is_some() {
                out.flush()?;
            }
            if let Some(torn) = &summary.torn {
                let (line, reason) = (torn.line, files::escaped(&torn.reason));
                eprintln!("note: {name}:{line}: a torn final line ({reason}), {TORN_NOTE}");
            }
            if let Some(frame) = frame {
                eprintln!("note: {name}:{}: {frame}, {TORN_FRAME_NOTE}", frame.line);
            }
            Ok(())
        }
    }
}

fn write_finding(
    format: Format,
    name: &str,
    finding: &Finding,
    first: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    match format {
        // The detail quotes ids from the log, which may hold a newline.
        Format::Text => writeln!(out, "{name}:{}", files::escaped(&finding.to_string())),
        Format::Json => {
            let separator = if first { "" } else { "," };
            let finding = json!({
                "line": finding.line,
                "property": finding.violation.property.name(),
                // As `error.reason` is: a bidi character passes JSON's
                // escaping and would reorder the line on a terminal.
                "detail": files::escaped(&finding.violation.detail),
            });
            write!(out, "{separator}{finding}")
        }
    }
}

/// The members after `violations` of a readable file, without the opening brace.
fn verdict_json(summary: &Summary, frame: Option<&TornFrame>) -> String {
    let Conversions {
        turn_start_trigger,
        steering_message,
        pre_identity_message,
        turn_end_reason,
    } = summary.conversions;
    let verdict = json!({
        "status": if summary.is_valid() { "valid" } else { "invalid" },
        "lines": summary.lines,
        // The first line dropped: a torn line comes before a torn frame's rest.
        "torn": summary.torn.as_ref().map(|torn| torn.line).or(frame.map(|frame| frame.line)),
        "torn-frame": frame.map(|frame| frame.at),
        "stopped": summary.stopped,
        "conversions": {
            "total": summary.conversions.total(),
            "turn-start-trigger": turn_start_trigger,
            "steering-message": steering_message,
            "pre-identity-message": pre_identity_message,
            "turn-end-reason": turn_end_reason,
        },
    });
    let text = verdict.to_string();
    text.strip_prefix('{').unwrap_or(&text).to_owned()
}

/// Checks the log at `file`: what it amounted to, and the torn final
/// Zstandard frame whose rest was dropped, if it ends in one.
fn check_file(
    file: &Path,
    report: impl FnMut(Finding),
) -> Result<(Summary, Option<TornFrame>), Unreadable> {
    let whole = |reason: String| Unreadable { line: 0, reason };
    let mut log = Plaintext::open(file).map_err(whole)?;
    let checked = validate(&mut log, report);
    // A corrupt frame is the file's fault, not the line's being read.
    if let Some(failure) = log.failure() {
        return Err(whole(failure.to_owned()));
    }
    Ok((checked?, log.torn_frame().cloned()))
}
