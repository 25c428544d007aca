//! `courier run [--rewrite] [--mutant NAME | --against CMD] FILE...`: runs
//! each transcript against a fresh agent (or a fresh process of another
//! implementation speaking docs/PROTOCOL.md) and prints a diff for every
//! block that differs. With `--against`, each differing file's first
//! differing block is a divergence, classified by a named rule (SPEC §6,
//! see `rules.rs`) or `unexplained`, and a summary counts them per rule.
//! Exit 0 when all pass (with `--against`: when every divergence is explained,
//! unless `--strict`), 1 when any differs otherwise or a `run` stalls (a
//! liveness failure), 2 when a file cannot be read or parsed (is not a
//! transcript, or holds a block larger than [`BLOCK_BYTES_MAX`]), changed
//! between the two passes, or the implementation cannot be spawned or
//! breaks the protocol (naming the file and line). Each file is streamed, a
//! block at a time (see [`run_file`]). `--rewrite` leaves a passing file
//! untouched and replaces a failing one atomically, unless it changed while it
//! ran (or is a pipe or a device, which cannot be replaced).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files;
use courier::variant::MutantArg;
use courier_core::Agent;
use courier_core::transcript::{
    BLOCK_BYTES_MAX, Block, Item, Items, Mismatch, Outline, Rewriter, Runner, Stalled, TailLog,
    Unreadable, parse_command,
};

use super::against;
use super::rules::{Divergence, Earlier, Judged, Rule, print_gaps};
use similar::ChangeTag;

/// Arguments of `courier run`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Write the actual outputs back into each file, keeping commands and
    /// comments (not with `--against`: a transcript pins the contract's
    /// outputs, not another implementation's).
    #[arg(long, conflicts_with = "against")]
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

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        self.files.iter().map(PathBuf::as_path).collect()
    }
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
    if let Some((earlier, later)) = args
        .rewrite
        .then(|| files::first_repeated(&args.files))
        .flatten()
    {
        eprintln!(
            "error: --rewrite: {} and {} are the same file: refused (it would be run and rewritten twice)",
            files::named(&args.files[earlier]),
            files::named(&args.files[later])
        );
        return ExitCode::from(2);
    }
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
    Stalled(Stalled),
    /// The implementation could not be run or broke the protocol (exit 2).
    Unusable(String),
}

impl Engine<'_> {
    /// A fresh session for one file whose restarts lose `lose_total` events
    /// all together (`None`: it has none): the core keeps only the log they
    /// can cut.
    fn start(&self, lose_total: Option<usize>) -> Result<Session, String> {
        match self {
            Engine::Core(prototype) => Ok(Session::Core(Box::new(Runner::keeping(
                (*prototype).clone(),
                lose_total,
            )))),
            Engine::External(command) => against::Peer::spawn(command).map(Session::External),
        }
    }
}

/// One file's run in progress.
enum Session {
    Core(Box<Runner<TailLog>>),
    External(against::Peer),
}

impl Session {
    /// What `command` printed.
    fn execute(&mut self, command: &str) -> Result<Vec<String>, Broke> {
        match self {
            Session::Core(runner) => runner.execute(command).map_err(Broke::Stalled),
            Session::External(peer) => peer.execute(command).map_err(|broke| match broke {
                against::Broke::Stalled(stalled) => Broke::Stalled(stalled),
                against::Broke::Protocol(reason) => Broke::Unusable(reason),
            }),
        }
    }
}

/// Runs one file in two passes over its lines, holding one block at a time
/// (issue 16: a transcript of millions of commands runs in the memory of
/// the agent's state): the first reads the whole layout, so a layout error
/// anywhere is reported before anything is run, printed or rewritten, and
/// keeps only an [`Outline`]; the second runs each block, compares it,
/// reports (or rewrites) it and drops it.
fn run_file(args: &Args, engine: &Engine<'_>, file: &Path) -> Verdict {
    let name = files::named(file).to_string();
    // A rewrite replaces the file only if it is still as it was read (an
    // edit saved meanwhile stays), and never writes into a pipe or device.
    let stamp = files::Stamp::of(file);
    let Some((source, outline, fingerprint)) = first_pass(args, file, &name) else {
        return Verdict::Broken;
    };
    let mut session = match engine.start(outline.lose_total()) {
        Ok(session) => session,
        Err(reason) => {
            eprintln!("error: {name}:0: {reason}");
            return Verdict::Broken;
        }
    };
    let Ok(mut lines) = source.lines() else {
        eprintln!("error: {name}: changed while it was being run");
        return Verdict::Broken;
    };
    let mut report = Report::new(args, &name, outline.lose_total());
    let mut items = Items::new(&mut lines);
    let bom = items.bom();
    let mut written = if bom { '\u{feff}'.len_utf8() } else { 0 };
    let mut rewriter = Rewriter::new(items.newline());
    for item in &mut items {
        // The first pass read the same lines whole, so an error here means
        // they changed (or the disk failed) since: nothing is rewritten.
        let item = match item {
            Ok(item) => item,
            Err(error) => {
                report.flush();
                reread_failed(&name, &error);
                return Verdict::Broken;
            }
        };
        let failed = match &item {
            Item::Text(raw) => report.text(raw, &mut rewriter),
            Item::Block(block) => match session.execute(&block.command) {
                Ok(printed) => report.block(block, &printed, &mut rewriter, &source, written),
                Err(Broke::Stalled(stalled)) => {
                    report.fail();
                    report.say(format_args!("  {name}:{}: liveness: {stalled}", block.line));
                    report.flush();
                    let judged = args.against.as_ref().map(|_| Judged::Unexplained(None));
                    return Verdict::Failed(judged);
                }
                Err(Broke::Unusable(reason)) => {
                    report.flush();
                    eprintln!("error: {name}:{}: {reason}", block.line);
                    return Verdict::Broken;
                }
            },
        };
        if let Err(error) = failed {
            report.flush();
            rewrite_failed(&name, &error);
            return Verdict::Broken;
        }
        written += item.raw().len();
    }
    drop(items);
    report.flush();
    if lines.fingerprint() != fingerprint {
        eprintln!("error: {name}: changed while it was being run (the file is as it was)");
        return Verdict::Broken;
    }
    report.finish(rewriter, || stamp.unchanged(file))
}

/// Says why the second pass could not read what the first read whole: the
/// file changed since (or the disk failed), so nothing is rewritten.
fn reread_failed(name: &str, error: &Unreadable<impl std::fmt::Display>) {
    match error {
        Unreadable::Layout(error) => eprintln!(
            "error: {name}:{}: {} (the file changed)",
            error.line, error.reason
        ),
        Unreadable::Read(error) => eprintln!("error: {name}: {error} (the file is as it was)"),
    }
}

/// Says why a block's rewrite could not be staged (the file is as it was).
fn rewrite_failed(name: &str, error: &std::io::Error) {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
    {
        Some(TooLarge(line)) => eprintln!(
            "error: {name}:{line}: the block's outputs would make it larger than 64 MiB, which `courier run` refuses to read: not rewritten (the file is as it was)"
        ),
        None => eprintln!("error: {name}: cannot write: {error} (the file is as it was)"),
    }
}

/// Opens `file` and reads its whole layout (the first pass), or says why
/// it cannot be run.
fn first_pass<'a>(
    args: &Args,
    file: &'a Path,
    name: &str,
) -> Option<(Source<'a>, Outline, (u64, u64))> {
    let readable = match args.rewrite {
        true => files::rewritable(file),
        false => Ok(()),
    };
    let source = match readable.and_then(|()| Source::open(file)) {
        Ok(source) => source,
        Err(error) => {
            eprintln!("error: {}", files::located(name, error));
            return None;
        }
    };
    match outline(&source) {
        Ok((outline, fingerprint)) => Some((source, outline, fingerprint)),
        Err(error) => {
            eprintln!("error: {}", files::located(name, error));
            None
        }
    }
}

/// Where a file's lines come from: the file, read once per pass, or what a
/// pipe or a device gave (it cannot be read twice), held whole up to
/// [`files::TRANSCRIPT_MAX`] as before streaming.
enum Source<'a> {
    File(&'a Path),
    Held(&'a Path, String),
}

impl<'a> Source<'a> {
    fn open(file: &'a Path) -> Result<Source<'a>, String> {
        match std::fs::metadata(file) {
            Ok(metadata) if !metadata.is_file() && !metadata.is_dir() => {
                let text = files::read_capped(file, files::TRANSCRIPT_MAX)?;
                Ok(Source::Held(file, text))
            }
            Ok(_) | Err(_) => Ok(Source::File(file)),
        }
    }

    /// The lines, from the start.
    fn lines(&self) -> Result<files::Lines<'_>, String> {
        match self {
            Source::File(file) => files::Lines::open(file, BLOCK_BYTES_MAX),
            Source::Held(_, text) => Ok(files::Lines::of(text.as_bytes(), BLOCK_BYTES_MAX)),
        }
    }

    /// Its first `length` bytes, copied into `to`.
    fn copy_start(&self, length: usize, to: &mut impl Write) -> std::io::Result<()> {
        let copied = match self {
            Source::File(file) => {
                std::io::copy(&mut std::fs::File::open(file)?.take(length as u64), to)?
            }
            Source::Held(_, text) => {
                let start = text.as_bytes().get(..length).unwrap_or_default();
                to.write_all(start)?;
                start.len() as u64
            }
        };
        if copied != length as u64 {
            return Err(std::io::Error::other(
                "the file changed while it was being run",
            ));
        }
        Ok(())
    }
}

/// The first pass: the file's [`Outline`] (a layout error, an unreadable
/// line or a file that is no transcript is an error naming where) and the
/// fingerprint of what was read.
fn outline(source: &Source<'_>) -> Result<(Outline, (u64, u64)), String> {
    let mut lines = source.lines().map_err(|error| error.to_string())?;
    let mut outline = Outline::default();
    for item in Items::new(&mut lines) {
        match item {
            Ok(item) => outline.add(&item),
            Err(Unreadable::Layout(error)) => return Err(error.to_string()),
            Err(Unreadable::Read(error)) => return Err(error.to_string()),
        }
    }
    outline.check().map_err(|error| error.to_string())?;
    Ok((outline, lines.fingerprint()))
}

/// What a file's run has shown so far, printed (or rewritten) as it goes.
struct Report<'a> {
    args: &'a Args,
    name: &'a str,
    /// Whether `FAIL <file>` is out (before the first differing block).
    failing: bool,
    /// With `--against`: the contract's run over the blocks before the
    /// first divergence (the rules read them), then how it was judged.
    divergence: Option<Diverging>,
    /// With `--rewrite`, once a block differs: the file being written.
    rewriting: Option<Rewriting>,
    /// What is printed next: a diff of a million blocks goes out in chunks,
    /// not a write per line.
    out: String,
}

/// `--against`'s search for the first divergence.
enum Diverging {
    /// Every block so far passed: the contract's state and the blocks.
    Before {
        contract: Box<Runner<TailLog>>,
        earlier: Vec<Earlier>,
    },
    /// The first divergence, at its line.
    Found(usize, Judged),
}

/// A rewritten block, at its line, would be over [`BLOCK_BYTES_MAX`].
#[derive(Debug)]
struct TooLarge(usize);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "line {}: a rewritten block over 64 MiB", self.0)
    }
}

impl std::error::Error for TooLarge {}

/// A rewrite in progress: the temporary file beside the transcript and the
/// text not yet written to it.
struct Rewriting {
    staged: files::Staged,
    text: String,
}

/// How much rewritten text is gathered before it is written.
const REWRITE_CHUNK: usize = 1 << 16;

/// How much of a report is gathered before it is printed.
const PRINT_CHUNK: usize = 1 << 16;

impl<'a> Report<'a> {
    /// The report of `name`, whose restarts lose `lose_total` events.
    fn new(args: &'a Args, name: &'a str, lose_total: Option<usize>) -> Self {
        let divergence = args.against.as_ref().map(|_| Diverging::Before {
            contract: Box::new(Runner::keeping(Agent::new(), lose_total)),
            earlier: Vec::new(),
        });
        Report {
            args,
            name,
            failing: false,
            divergence,
            rewriting: None,
            out: String::new(),
        }
    }

    /// Prints `line` (in the next chunk).
    fn say(&mut self, line: std::fmt::Arguments<'_>) {
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = writeln!(self.out, "{line}");
        if self.out.len() >= PRINT_CHUNK {
            self.flush();
        }
    }

    /// Prints what was said so far (before an error goes to stderr, and at
    /// the end of the file).
    fn flush(&mut self) {
        print!("{}", self.out);
        self.out.clear();
    }

    /// Prints `FAIL <file>` once, before whatever failed first.
    fn fail(&mut self) {
        if !std::mem::replace(&mut self.failing, true) {
            let name = self.name;
            self.say(format_args!("FAIL {name}"));
        }
    }

    /// A comment or blank line: rewritten as it was, once a rewrite is on.
    fn text(&mut self, raw: &str, rewriter: &mut Rewriter) -> std::io::Result<()> {
        match &mut self.rewriting {
            None => Ok(()),
            Some(rewriting) => {
                rewriter.text(raw, &mut rewriting.text);
                rewriting.write(false)
            }
        }
    }

    /// A block run: compared and reported, or rewritten. `written` is how
    /// many bytes of `file` come before it: a rewrite starts at the first
    /// block that differs, copying them (a passing file is never staged).
    fn block(
        &mut self,
        block: &Block,
        printed: &[String],
        rewriter: &mut Rewriter,
        source: &Source<'_>,
        written: usize,
    ) -> std::io::Result<()> {
        let passes = block.passes(printed);
        if let Some(Diverging::Before { contract, earlier }) = &mut self.divergence {
            let command = parse_command(&block.command).ok();
            match &block.expected {
                Some(expected) if passes => {
                    // A stall is the expected block's business; the state stays.
                    let _ = contract.execute(&block.command);
                    earlier.push(Earlier {
                        command,
                        printed: expected.clone(),
                    });
                }
                expected => {
                    let divergence = Divergence {
                        earlier,
                        command: command.as_ref(),
                        expected: expected.as_deref().unwrap_or_default(),
                        actual: printed,
                        before: contract.agent(),
                    };
                    let judged = Judged::of(&divergence);
                    self.divergence = Some(Diverging::Found(block.line, judged));
                }
            }
        }
        if self.args.rewrite {
            if passes && self.rewriting.is_none() {
                return Ok(());
            }
            let rewriting = match &mut self.rewriting {
                Some(rewriting) => rewriting,
                None => self.rewriting.insert(Rewriting::start(source, written)?),
            };
            let before = rewriting.text.len();
            rewriter.block(block, printed, &mut rewriting.text);
            // `run` refuses to read a block over the cap, so a rewrite that
            // would write one writes nothing (counted with the blank line
            // the block before it may owe: never over, at worst 2 bytes
            // under).
            if rewriting.text.len() - before > BLOCK_BYTES_MAX {
                return Err(std::io::Error::other(TooLarge(block.line)));
            }
            return rewriting.write(false);
        }
        if !passes {
            self.fail();
            let name = self.name;
            let mismatch = Mismatch {
                block,
                actual: printed,
            };
            print_mismatch(name, mismatch, &mut |line| self.say(line));
        }
        Ok(())
    }

    /// The file's verdict, after its last block.
    /// The file's verdict; a rewrite is committed only if `unchanged`.
    fn finish(
        mut self,
        rewriter: Rewriter,
        unchanged: impl FnOnce() -> Result<(), String>,
    ) -> Verdict {
        let verdict = self.verdict(rewriter, unchanged);
        self.flush();
        verdict
    }

    fn verdict(
        &mut self,
        rewriter: Rewriter,
        unchanged: impl FnOnce() -> Result<(), String>,
    ) -> Verdict {
        let name = self.name;
        if let Some(mut rewriting) = self.rewriting.take() {
            rewriter.finish(&mut rewriting.text);
            if let Err(error) = unchanged() {
                self.flush();
                eprintln!("error: {}", files::located(name, error));
                return Verdict::Broken;
            }
            if let Err(error) = rewriting
                .write(true)
                .and_then(|()| rewriting.staged.commit())
            {
                self.flush();
                eprintln!("error: {name}: cannot write: {error} (the file is as it was)");
                return Verdict::Broken;
            }
            self.say(format_args!("rewrote {name}"));
            return Verdict::Passed;
        }
        if self.args.rewrite || !self.failing {
            if !self.args.rewrite {
                self.say(format_args!("ok   {name}"));
            }
            return Verdict::Passed;
        }
        match &self.divergence {
            None => Verdict::Failed(None),
            Some(Diverging::Found(line, judged)) => {
                let (line, judged) = (*line, *judged);
                let judgement = judged.describe();
                self.say(format_args!("  divergence at {name}:{line}: {judgement}"));
                Verdict::Failed(Some(judged))
            }
            // Every block passed: a failure is a stall, reported already.
            Some(Diverging::Before { .. }) => Verdict::Failed(Some(Judged::Unexplained(None))),
        }
    }
}

impl Rewriting {
    /// A temporary file beside the file of `source` holding its first
    /// `written` bytes (every item before the first differing block, as
    /// written).
    fn start(source: &Source<'_>, written: usize) -> std::io::Result<Rewriting> {
        // A pipe or a device is written in place (see `files::Staged`).
        let (Source::File(file) | Source::Held(file, _)) = source;
        let mut staged = files::Staged::new(file)?;
        source.copy_start(written, staged.file())?;
        Ok(Rewriting {
            staged,
            text: String::new(),
        })
    }

    /// Writes the gathered text once there is enough of it (or all of it).
    fn write(&mut self, all: bool) -> std::io::Result<()> {
        if all || self.text.len() >= REWRITE_CHUNK {
            self.staged.file().write_all(self.text.as_bytes())?;
            self.text.clear();
        }
        Ok(())
    }
}

/// Says a block's diff, line by line, through `say`.
fn print_mismatch(
    name: &str,
    Mismatch { block, actual }: Mismatch<'_>,
    say: &mut dyn FnMut(std::fmt::Arguments<'_>),
) {
    // Escaped and capped: a command line may be megabytes long.
    let command = files::shown(&unicode_spaces_shown(&block.command));
    say(format_args!("  {name}:{}: {command}", block.line));
    let Some(expected) = &block.expected else {
        say(format_args!(
            "    (no `----` line: the block has no expected output; --rewrite adds it)"
        ));
        return;
    };
    // Trailing whitespace on an expected line is not expected
    // (`Block::passes`), so the diff does not show it either.
    let expected: String = expected
        .iter()
        .map(|line| format!("{}\n", one_line(line.trim_ascii_end())))
        .collect();
    let actual: String = actual
        .iter()
        .map(|line| format!("{}\n", one_line(line)))
        .collect();
    let mut line = |sign: &str, text: &str| {
        say(format_args!(
            "    {sign} {}",
            visible_trailing_whitespace(text)
        ));
    };
    let (expected, actual): (Vec<&str>, Vec<&str>) = (
        expected.split_inclusive('\n').collect(),
        actual.split_inclusive('\n').collect(),
    );
    let start = expected
        .iter()
        .zip(&actual)
        .take_while(|(a, b)| a == b)
        .count();
    let end = expected[start..]
        .iter()
        .rev()
        .zip(actual[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let differing = (expected.len() - start - end) + (actual.len() - start - end);
    if differing <= DIFF_LINES_MAX {
        for change in similar::capture_diff_slices(similar::Algorithm::Myers, &expected, &actual)
            .iter()
            .flat_map(|op| op.iter_changes(&expected, &actual))
        {
            let sign = match change.tag() {
                ChangeTag::Delete => "-",
                ChangeTag::Insert => "+",
                ChangeTag::Equal => " ",
            };
            line(sign, change.value());
        }
        return;
    }
    // A shortest diff costs the product of the lines that differ (Myers):
    // past the bound, the differing middle is shown as removed, then added.
    for text in &expected[..start] {
        line(" ", text);
    }
    for text in &expected[start..expected.len() - end] {
        line("-", text);
    }
    for text in &actual[start..actual.len() - end] {
        line("+", text);
    }
    for text in &expected[expected.len() - end..] {
        line(" ", text);
    }
}

/// How many differing lines (expected and actual together, past their
/// common start and end) a block's diff aligns line by line; a longer
/// difference is shown whole, so a diff never costs quadratic time.
const DIFF_LINES_MAX: usize = 4096;

/// A diff line whose trailing whitespace shows: spaces as `·` and tabs as
/// `→` after the last visible character (the line ending dropped), and any
/// other space anywhere as its escape (see [`unicode_spaces_shown`]),
/// capped as every quoted text is ([`files::shown`]), so an
/// implementation's output line that ends in whitespace (`run --against`)
/// does not print like the contract's.
fn visible_trailing_whitespace(line: &str) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let text = line.trim_ascii_end();
    let trailing: String = line[text.len()..]
        .chars()
        .map(|space| match space {
            ' ' => '·',
            '\t' => '→',
            other => other,
        })
        .collect();
    // A control character (an escape sequence in the file) shows as
    // written in Rust (`\u{1b}`), not acted on by the terminal, and a line
    // past 200 characters (another implementation's, `run --against`) as
    // its start and length: `--rewrite` writes it whole.
    files::shown(&unicode_spaces_shown(&format!("{text}{trailing}")))
}

/// `text` with every whitespace character but ASCII's (a no-break space,
/// an ideographic space) escaped, `\u{a0}`: a transcript reads them as
/// text (`followup<NBSP>A` is a bad command, `idle<NBSP>` is not `idle`),
/// so a diff that printed them raw would show two lines that differ as
/// the same.
fn unicode_spaces_shown(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| c.is_whitespace() && !c.is_ascii();
    if !text.contains(hidden) {
        return text.into();
    }
    text.chars()
        .map(|c| match hidden(c) {
            true => c.escape_unicode().to_string(),
            false => c.to_string(),
        })
        .collect::<String>()
        .into()
}

/// A line whose carriage returns are escaped before the diff splits the
/// text into lines (it splits at a lone `\r` too), so one line of output
/// never shows as two.
fn one_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.contains('\r') {
        true => line.replace('\r', "\\r").into(),
        false => line.into(),
    }
}
