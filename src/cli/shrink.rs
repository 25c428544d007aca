//! `courier shrink REPORT --out FILE.txn`: minimizes a race report's trace
//! (delta debugging, keeping only traces that break the same property) and
//! writes it as a transcript recorded on the report's variant (restarts as
//! `restart lose=N`, then an `inbox` query), so
//! `courier run [--mutant NAME] FILE.txn` replays it. Exit 0 when written,
//! 2 when the report cannot be read or does not reproduce, or `--out` is the
//! report or a folder or cannot be written (checked before the work; the
//! file is replaced whole or left as it was). A search that ran out of its
//! budget (quadratic when the minimal trace is long) writes the best trace
//! so far, still failing, and says so in a `note:` line and a comment.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files::{self, Output};
use courier_sim::{shrink, transcript};

/// Arguments of `courier shrink`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A race report written by `courier sim`.
    #[arg(value_name = "REPORT")]
    report: PathBuf,
    /// Where to write the minimal transcript; replaces only an empty file
    /// or a transcript `courier shrink` wrote before.
    #[arg(long, value_name = "FILE.txn")]
    out: PathBuf,
}

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        vec![self.report.as_path()]
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let out = Output {
        flag: "--out",
        path: &args.out,
    };
    let output = files::Replaceable {
        path: &args.out,
        flag: "--out",
        chosen: files::Chosen::ByUser,
        ours: |path| {
            let text = files::whole_text(path)?;
            Ok(text.is_some_and(|text| files::is_transcript(&text, SHRUNK)))
        },
    };
    let refused = files::check_paths(&[&args.report], &[out])
        .err()
        .or_else(|| output.foreign());
    if let Some(error) = refused {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    let (report, prototype) = match super::replay::load(&args.report) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let shrunk = match shrink(&prototype, &report.trace, report.property) {
        Ok(shrunk) => shrunk,
        Err(error) => {
            eprintln!(
                "error: {}",
                files::located(files::named(&args.report), error)
            );
            return ExitCode::from(2);
        }
    };
    let mut text = header(&report, &shrunk.violation.detail);
    // A search cut short still wrote a failing trace: say it may not be minimal.
    let spent = shrunk.note();
    if let Some(note) = &spent {
        text.push_str(&format!("# {note}\n\n"));
    }
    text.push_str(&transcript(&prototype, &shrunk.trace));
    if let Err(error) = output.replace(&text) {
        // The search is not lost: the transcript goes to stdout.
        eprintln!(
            "error: --out {}: cannot write: {error}",
            files::named(&args.out)
        );
        print!("{text}");
        return ExitCode::from(2);
    }
    courier::status!(
        "shrunk {} stimuli to {} ({} evaluations)",
        report.trace.len(),
        shrunk.trace.len(),
        shrunk.evaluations
    );
    if let Some(note) = &spent {
        courier::status!("note: {note}");
    }
    courier::status!(
        "violation: {} seed={}",
        shrunk.violation.property,
        report.seed
    );
    courier::status!("detail: {}", files::shown(&shrunk.violation.detail));
    courier::status!("wrote {}", files::named(&args.out));
    ExitCode::SUCCESS
}

/// How every shrunk transcript starts.
const SHRUNK: &str = "# Shrunk by `courier shrink`";

/// Comment lines saying where the transcript came from and how it runs.
fn header(report: &courier_sim::Report, detail: &str) -> String {
    let seed = report.seed;
    let property = report.property;
    match &report.mutant {
        Some(mutant) => format!(
            "{SHRUNK} from seed {seed} of `courier sim --mutant {mutant}`.\n\
             # mutant: {mutant}\n\
             # violation: {property}: {detail}\n\
             # The expected outputs are the mutant's: `courier run --mutant {mutant}` \
             passes, the correct core differs.\n\n"
        ),
        None => format!(
            "{SHRUNK} from seed {seed} of `courier sim`.\n\
             # violation: {property}: {detail}\n\n"
        ),
    }
}
