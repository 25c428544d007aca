//! `courier run [--rewrite] [--mutant NAME] FILE...`: runs each transcript
//! against a fresh agent and prints a diff for every block that differs.
//! Exit 0 when all pass, 1 when any differs, 2 when a file cannot be read or
//! parsed (naming the file and line).

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
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
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
    let verdicts: Vec<Verdict> = args
        .files
        .iter()
        .map(|file| run_file(args, &prototype, file))
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

fn run_file(args: &Args, prototype: &Agent, file: &PathBuf) -> Verdict {
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
    let actual = match script.run(prototype) {
        Ok(actual) => actual,
        Err((line, stalled)) => {
            eprintln!("error: {name}:{line}: {stalled}");
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
