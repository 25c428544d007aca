//! `courier diagram FILE.txn|REPORT.json [--out FILE] [--format svg|mermaid]
//! [--mutant NAME]`: draws a run as a sequence diagram. The file's inputs are
//! run through this build's core and checker (the picture shows what the
//! code does now), and the first broken property is marked at its row (a
//! `run` that never reaches idle: a liveness verdict after its last row).
//! A trace longer than `ROWS_DRAWN_MAX` rows is drawn in part (the start and
//! the rows up to the broken one), saying so; one of more than
//! `INPUTS_DRAWN_MAX` inputs is refused. Exit 0 when drawn, 2 when the
//! file cannot be read or parsed, or `--out` is the input, a folder or
//! cannot be written (it is replaced whole or left as it was).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::diagram::{Format, load};
use courier::files::{self, Output};
use courier::variant::MutantArg;

/// Arguments of `courier diagram`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A transcript or checker counterexample, or a simulator race report
    /// (told apart by content: a report is a JSON object).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Write the diagram here instead of printing it; replaces only an
    /// empty file or a diagram of this format drawn before.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// What to draw.
    #[arg(long, value_enum, default_value = "svg")]
    format: Format,
    /// Run against a planted bug of SPEC §8 (needs `--features mutants`);
    /// default: the variant the file names, else the correct design.
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
}

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        vec![self.file.as_path()]
    }

    /// `--out`, if given: it replaces only a picture of this format drawn
    /// before.
    fn output(&self) -> Option<files::Replaceable<'_>> {
        let ours = match self.format {
            Format::Svg => courier::diagram::drawn_here,
            Format::Mermaid => courier::diagram::charted_here,
        };
        self.out.as_deref().map(|path| files::Replaceable {
            path,
            flag: "--out",
            chosen: files::Chosen::ByUser,
            ours,
        })
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let outputs: Vec<Output<'_>> = args
        .out
        .iter()
        .map(|path| Output {
            flag: "--out",
            path,
        })
        .collect();
    let refused = files::check_paths(&[&args.file], &outputs)
        .err()
        .or_else(|| args.output().and_then(|out| out.foreign()));
    if let Some(error) = refused {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    let diagram = match load(&args.file, args.mutant.map(MutantArg::name)) {
        Ok(diagram) => diagram,
        Err(error) => {
            eprintln!("error: {}", files::located(files::named(&args.file), error));
            return ExitCode::from(2);
        }
    };
    for note in diagram.notes.iter().chain(&diagram.elision()) {
        eprintln!("{note}");
    }
    eprintln!("{}", diagram.verdict());
    let text = diagram.render(args.format);
    let Some(output) = args.output() else {
        print!("{text}");
        return ExitCode::SUCCESS;
    };
    let out = output.path;
    match output.replace(text) {
        Ok(()) => {
            courier::status!("diagram: {}", files::named(out));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: --out {}: cannot write: {error}", files::named(out));
            ExitCode::from(2)
        }
    }
}
