//! `courier run [--rewrite] [--mutant NAME | --against CMD] FILE...`: runs
//! each transcript against a fresh agent (or a fresh process of another
//! implementation speaking docs/PROTOCOL.md) and prints a diff for every
//! block that differs. With `--against`, each differing file's first
//! differing block is a divergence, classified by a named rule (SPEC §6,
//! see `rules.rs`) or `unexplained`, and a summary counts them per rule.
//! Exit 0 when all pass (with `--against`: when every divergence is explained,
//! unless `--strict`), 1 when any differs otherwise or a `run` stalls (a
//! liveness failure), 2 when a file cannot be read or parsed (is not a
//! transcript, or is larger than [`files::TRANSCRIPT_MAX`]), or the
//! implementation cannot be spawned or breaks the protocol (naming the file
//! and line). `--rewrite` leaves a passing file untouched and replaces a
//! failing one atomically, unless it changed while it ran (or is a pipe or
//! a device, which cannot be replaced).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files;
use courier::variant::MutantArg;
use courier_core::Agent;
use courier_core::transcript::{Mismatch, Runner, Script, Stalled, parse_command};

use super::against;
use super::rules::{Divergence, Earlier, Judged, Rule, print_gaps};
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
    /// With `--against`: fail (exit 1) on divergences a named rule explains too.
    #[arg(long, requires = "against")]
    strict: bool,
    /// Transcript files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// What happened to one file.
enum Verdict {
    Passed,
    /// Differs; with `--against`, how its first divergence was judged.
    Failed(Option<Judged>),
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
    let failed = count(|v| matches!(v, Verdict::Failed(_)));
    let broken = count(|v| matches!(v, Verdict::Broken));
    let passed = verdicts.len() - failed - broken;
    println!("{passed} passed, {failed} failed, {broken} unreadable");
    let unexplained = match args.against {
        Some(_) => summarise(&verdicts, args.strict),
        None => failed,
    };
    match (broken, unexplained) {
        (0, 0) => ExitCode::SUCCESS,
        (0, _) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

/// Prints the divergences per rule; returns how many fail the run (the
/// unexplained ones, or all with `strict`).
fn summarise(verdicts: &[Verdict], strict: bool) -> usize {
    let judged: Vec<Judged> = verdicts
        .iter()
        .filter_map(|verdict| match verdict {
            Verdict::Failed(judged) => *judged,
            Verdict::Passed | Verdict::Broken => None,
        })
        .collect();
    let count = |wanted: Judged| judged.iter().filter(|j| **j == wanted).count();
    let unexplained = judged
        .iter()
        .filter(|j| matches!(j, Judged::Unexplained(_)))
        .count();
    let explained = judged.len() - unexplained;
    println!("divergences: {explained} explained, {unexplained} unexplained");
    for rule in Rule::ALL {
        println!("  {}: {}", rule.name(), count(Judged::Explained(rule)));
    }
    println!("  unexplained: {unexplained}");
    print_gaps(count);
    if strict { judged.len() } else { unexplained }
}

/// What runs the transcripts: the core, or a command speaking the protocol.
enum Engine<'a> {
    Core(&'a Agent),
    External(String),
}

/// Why a file's run broke off, at its line.
enum Broke {
    /// A `run` hit the completion cap: the transcript is fine, the agent is
    /// not live (a liveness failure, exit 1).
    Stalled(usize, Stalled),
    /// The implementation could not be run or broke the protocol (exit 2).
    Unusable(usize, String),
}

impl Engine<'_> {
    /// What each block printed, or the line where the run broke off and why.
    fn run(&self, script: &Script) -> Result<Vec<Vec<String>>, Broke> {
        match self {
            Engine::Core(prototype) => script
                .run(prototype)
                .map_err(|(line, stalled)| Broke::Stalled(line, stalled)),
            Engine::External(command) => {
                super::against::run_script(script, command).map_err(|(line, broke)| match broke {
                    against::Broke::Stalled(stalled) => Broke::Stalled(line, stalled),
                    against::Broke::Protocol(reason) => Broke::Unusable(line, reason),
                })
            }
        }
    }
}

fn run_file(args: &Args, engine: &Engine<'_>, file: &Path) -> Verdict {
    let name = file.display();
    let stamp = files::Stamp::of(file);
    let readable = match args.rewrite {
        true => files::rewritable(file),
        false => Ok(()),
    };
    let text = match readable.and_then(|()| files::read_capped(file, files::TRANSCRIPT_MAX)) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {name}: {error}");
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
        Err(Broke::Stalled(line, stalled)) => {
            println!("FAIL {name}");
            println!("  {name}:{line}: liveness: {stalled}");
            return Verdict::Failed(args.against.as_ref().map(|_| Judged::Unexplained(None)));
        }
        Err(Broke::Unusable(line, reason)) => {
            eprintln!("error: {name}:{line}: {reason}");
            return Verdict::Broken;
        }
    };
    let mismatches = script.mismatches(&actual);
    if args.rewrite {
        // A passing file is left alone, byte for byte; a rewrite keeps
        // everything but the changed blocks' outputs (see `Script::render`)
        // and replaces the file whole or not at all.
        if mismatches.is_empty() {
            return Verdict::Passed;
        }
        let written = stamp.unchanged(file).and_then(|()| {
            files::replace(file, script.render(&actual))
                .map_err(|error| format!("cannot write: {error} (the file is as it was)"))
        });
        if let Err(error) = written {
            eprintln!("error: {name}: {error}");
            return Verdict::Broken;
        }
        println!("rewrote {name}");
        return Verdict::Passed;
    }
    if mismatches.is_empty() {
        println!("ok   {name}");
        return Verdict::Passed;
    }
    println!("FAIL {name}");
    for mismatch in mismatches {
        print_mismatch(&name.to_string(), mismatch);
    }
    if args.against.is_none() {
        return Verdict::Failed(None);
    }
    let (line, judged) = first_divergence(&script, &actual);
    println!("  divergence at {name}:{line}: {}", judged.describe());
    Verdict::Failed(Some(judged))
}

/// The line of the first block that differs and the rule explaining it
/// (the blocks after it run on diverged states, so they explain nothing).
fn first_divergence(script: &Script, actual: &[Vec<String>]) -> (usize, Judged) {
    let mut earlier = Vec::new();
    // The contract's state before each block, for the rules that need it.
    let mut contract = Runner::new(Agent::new());
    for (block, printed) in script.blocks().zip(actual) {
        let command = parse_command(&block.command).ok();
        let Some(expected) = block.expected.as_ref().filter(|e| *e == printed) else {
            let expected = block.expected.as_deref().unwrap_or_default();
            let divergence = Divergence {
                earlier: &earlier,
                command: command.as_ref(),
                expected,
                actual: printed,
                before: contract.agent(),
            };
            return (block.line, Judged::of(&divergence));
        };
        // A stall is the expected block's business; the state stays.
        let _ = contract.execute(&block.command);
        earlier.push(Earlier {
            command,
            printed: expected.clone(),
        });
    }
    (0, Judged::Unexplained(None))
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
        print!("    {sign} {}", visible_trailing_whitespace(change.value()));
    }
}

/// A diff line whose trailing whitespace shows: spaces as `·` and tabs as
/// `→` after the last visible character, so two lines that differ only
/// there do not print alike.
fn visible_trailing_whitespace(line: &str) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let text = line.trim_end();
    let trailing: String = line[text.len()..]
        .chars()
        .map(|space| match space {
            ' ' => '·',
            '\t' => '→',
            other => other,
        })
        .collect();
    format!("{text}{trailing}\n")
}

fn lines_text(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}
