//! `courier validate [--format text|json] FILE...`: checks recorded session
//! logs (dsh JSONL) against the properties a durable log can show.
//!
//! Text: one line per violation on stdout, `FILE:LINE: <property>: <detail>`;
//! a file that cannot be read or parsed prints `error: FILE:LINE: <reason>` on
//! stderr; a summary goes to stderr. JSON: one object per file on stdout.
//! Exit 0 when every file is valid, 1 when any has a violation, 2 when any
//! cannot be read or parsed.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier_check::validate::{Finding, Summary, Unreadable, validate};
use serde_json::{Value, json};

/// Arguments of `courier validate`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// How to report.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Session logs (JSONL).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// `FILE:LINE: <property>: <detail>` per violation.
    Text,
    /// One JSON object per file.
    Json,
}

/// Read buffer size: large enough that the reader is not the bottleneck.
const BUFFER_BYTES: usize = 1 << 16;

pub(crate) fn main(args: &Args) -> ExitCode {
    let (mut valid, mut invalid, mut unreadable) = (0, 0, 0);
    for file in &args.files {
        let name = file.display().to_string();
        let mut findings = Vec::new();
        let outcome = check_file(file, |finding| match args.format {
            Format::Text => println!("{name}:{finding}"),
            Format::Json => findings.push(finding),
        });
        match &outcome {
            Ok(summary) if summary.is_valid() => valid += 1,
            Ok(_) => invalid += 1,
            Err(_) => unreadable += 1,
        }
        match (args.format, &outcome) {
            (Format::Json, _) => println!("{}", file_json(&name, &findings, &outcome)),
            (Format::Text, Err(error)) => eprintln!("error: {name}:{error}"),
            (Format::Text, Ok(_)) => {}
        }
    }
    if args.format == Format::Text {
        eprintln!("{valid} valid, {invalid} invalid, {unreadable} unreadable");
    }
    match (unreadable, invalid) {
        (0, 0) => ExitCode::SUCCESS,
        (0, _) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

fn check_file(file: &Path, report: impl FnMut(Finding)) -> Result<Summary, Unreadable> {
    let opened = File::open(file).map_err(|error| Unreadable {
        line: 0,
        reason: format!("cannot open: {error}"),
    })?;
    validate(BufReader::with_capacity(BUFFER_BYTES, opened), report)
}

fn file_json(name: &str, findings: &[Finding], outcome: &Result<Summary, Unreadable>) -> Value {
    let violations: Vec<Value> = findings
        .iter()
        .map(|finding| {
            json!({
                "line": finding.line,
                "property": finding.violation.property.name(),
                "detail": finding.violation.detail,
            })
        })
        .collect();
    match outcome {
        Ok(summary) => json!({
            "file": name,
            "status": if summary.is_valid() { "valid" } else { "invalid" },
            "lines": summary.lines,
            "stopped": summary.stopped,
            "violations": violations,
        }),
        Err(error) => json!({
            "file": name,
            "status": "unreadable",
            "error": { "line": error.line, "reason": error.reason },
            "violations": violations,
        }),
    }
}
