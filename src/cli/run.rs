//! `courier run [--rewrite] [--mutant NAME | --against CMD] FILE...`: runs
//! each transcript against a fresh agent (or a fresh process of another
//! implementation speaking docs/PROTOCOL.md) and prints a diff for every
//! block that differs. Exit 0 when all pass, 1 when any differs, 2 when a
//! file cannot be read or parsed, or the implementation cannot be spawned or
//! breaks the protocol (naming the file and line).

use std::path::PathBuf;
use std::process::ExitCode;

use courier::variant::MutantArg;
use courier_core::Agent;
use courier_core::transcript::{Mismatch, Script};
use similar::{ChangeTag, TextDiff};

/// Arguments of `courier run`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Write the actual outputs back into each file, keeping commands and comments.
    #[arg(long)]
    rewrite: bool,
    /// Run against a planted bug of SPEC §8 (needs `--features mutants`).
    #[arg(long, value_name = "NAME", conflicts_with = "against")]
    mutant: Option<MutantArg>,
    /// Run on another implementation instead: a shell command speaking
    /// docs/PROTOCOL.md on stdin/stdout (one process per file); `dsh` runs
    /// the dsh adapter (adapters/dsh).
    #[arg(long, value_name = "CMD")]
    against: Option<String>,
    /// Transcript files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// What happened to one file.
enum Verdict {
    Passed,
    Failed,
    Broken,
}

pub(crate) fn main(args: &Args) -> ExitCode {
    // One refusal for the whole command, not one per file.
    let Some(prototype) = super::agent(args.mutant) else {
        return ExitCode::from(2);
    };
    let engine = match args.against.as_deref().map(super::against::resolve) {
        None => Engine::Core(&prototype),
        Some(Ok(command)) => Engine::External(command),
        Some(Err(error)) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let verdicts: Vec<Verdict> = args
        .files
        .iter()
        .map(|file| run_file(args, &engine, file))
        .collect();
    let count = |wanted: fn(&Verdict) -> bool| verdicts.iter().filter(|v| wanted(v)).count();
    let failed = count(|v| matches!(v, Verdict::Failed));
    let broken = count(|v| matches!(v, Verdict::Broken));
    let passed = verdicts.len() - failed - broken;
    println!("{passed} passed, {failed} failed, {broken} unreadable");
    match (broken, failed) {
        (0, 0) => ExitCode::SUCCESS,
        (0, _) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

/// What runs the transcripts: the core, or a command speaking the protocol.
enum Engine<'a> {
    Core(&'a Agent),
    External(String),
}

impl Engine<'_> {
    /// What each block printed, or the line where the run broke off and why.
    fn run(&self, script: &Script) -> Result<Vec<Vec<String>>, (usize, String)> {
        match self {
            Engine::Core(prototype) => script
                .run(prototype)
                .map_err(|(line, stalled)| (line, stalled.to_string())),
            Engine::External(command) => super::against::run_script(script, command),
        }
    }
}

fn run_file(args: &Args, engine: &Engine<'_>, file: &PathBuf) -> Verdict {
    let name = file.display();
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {name}: cannot read: {error}");
            return Verdict::Broken;
        }
    };
    let script = match Script::parse(&text) {
        Ok(script) => script,
        Err(error) => {
            eprintln!("error: {name}:{}: {}", error.line, error.reason);
            return Verdict::Broken;
        }
    };
    let actual = match engine.run(&script) {
        Ok(actual) => actual,
        Err((line, reason)) => {
            eprintln!("error: {name}:{line}: {reason}");
            return Verdict::Broken;
        }
    };
    if args.rewrite {
        let rewritten = script.render(&actual);
        if rewritten != text {
            if let Err(error) = std::fs::write(file, rewritten) {
                eprintln!("error: {name}: cannot write: {error}");
                return Verdict::Broken;
            }
            println!("rewrote {name}");
        }
        return Verdict::Passed;
    }
    let mismatches = script.mismatches(&actual);
    if mismatches.is_empty() {
        println!("ok   {name}");
        return Verdict::Passed;
    }
    println!("FAIL {name}");
    for mismatch in mismatches {
        print_mismatch(&name.to_string(), mismatch);
    }
    Verdict::Failed
}

fn print_mismatch(name: &str, Mismatch { block, actual }: Mismatch<'_>) {
    println!("  {name}:{}: {}", block.line, block.command);
    let Some(expected) = &block.expected else {
        println!("    (no `----` line: the block has no expected output; --rewrite adds it)");
        return;
    };
    let expected = lines_text(expected);
    let actual = lines_text(actual);
    for change in TextDiff::from_lines(&expected, &actual).iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => "-",
            ChangeTag::Insert => "+",
            ChangeTag::Equal => " ",
        };
        print!("    {sign} {change}");
    }
}

fn lines_text(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}
