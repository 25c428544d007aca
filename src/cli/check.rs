//! `courier check [--messages N] [--restarts R] [--threads T] [--mutant NAME]
//! [--out FILE] [--diagram]`: the exhaustive model check of every SPEC §7
//! property over every interleaving of inputs and restarts up to the bounds. Exit 0 when every property
//! holds and every goal is reached, 1 on a violation (the shortest
//! counterexample is written as a transcript, its diagram path printed beside
//! it and, with `--diagram`, written) or an unreached goal, 2 on a usage error.
//! The summary gives the search's counts, its wall time and the process's
//! peak memory, so a run at a large bound reports what it cost.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use courier::files::{self, Output};
use courier::variant::MutantArg;
use courier_model::{Bounds, Checked, Counterexample, Counts, Space, Verdict};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `courier check`.
#[derive(clap::Args)]
#[command(
    after_help = "The summary gives unique and total states on stdout, and on stderr what \
varies from run to run: depth (with several threads, the search's order), wall time, \
states/s and peak memory (the process's peak resident set size, Linux's VmHWM). \
Exit 0: every property holds and every goal is reached; 1: a violation or an \
unreached goal; 2: a usage error."
)]
pub(crate) struct Args {
    /// Distinct messages inserted over a run (sends, prepends, replacements;
    /// ids A, B, ...: 1 to 26).
    #[arg(
        long,
        default_value_t = Bounds::default().messages,
        value_parser = clap::value_parser!(u8).range(1..=26),
        allow_negative_numbers = true
    )]
    messages: u8,
    /// Cancels and disposes over a run.
    #[arg(long, default_value_t = Bounds::default().cancels, allow_negative_numbers = true)]
    cancels: u8,
    /// Inbox edits (prepend, replace, remove) over a run.
    #[arg(long, default_value_t = Bounds::default().edits, allow_negative_numbers = true)]
    edits: u8,
    /// The last step of a turn that may still end in `tool-calls`.
    #[arg(long, default_value_t = Bounds::default().steps, allow_negative_numbers = true)]
    steps: u8,
    /// Crashes and resumes over a run (0: none), each at the end of the log
    /// or in the middle of an input's durable writes.
    #[arg(long, default_value_t = Bounds::default().restarts, allow_negative_numbers = true)]
    restarts: u8,
    /// Worker threads (default: every core; at most 256).
    #[arg(
        long,
        value_parser = clap::value_parser!(u16).range(1..=256),
        allow_negative_numbers = true
    )]
    threads: Option<u16>,
    /// Hash states by their ids as written (measures what symmetry saves).
    #[arg(long)]
    no_symmetry: bool,
    /// Check a planted bug of SPEC §8 (needs `--features mutants`).
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
    /// Also draw the counterexample as an SVG sequence diagram beside it.
    #[arg(long)]
    diagram: bool,
    /// Where the shortest counterexample goes [default: counterexample.txn];
    /// replaces only an empty file or a counterexample written before.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl Args {
    /// `--out`, or the default in the current folder.
    fn out(&self) -> &Path {
        self.out
            .as_deref()
            .unwrap_or(Path::new("counterexample.txn"))
    }

    /// The output, named or the default: it replaces only a counterexample
    /// written before (its first line says how to replay, and all of it
    /// reads as a transcript).
    fn output(&self) -> files::Replaceable<'_> {
        files::Replaceable {
            path: self.out(),
            flag: "--out",
            chosen: match self.out {
                Some(_) => files::Chosen::ByUser,
                None => files::Chosen::Default,
            },
            ours: |path| {
                Ok(
                    files::whole_text(path)?
                        .is_some_and(|text| files::is_transcript(&text, REPLAY)),
                )
            },
        }
    }

    /// Writes the counterexample to `--out`, or to the default.
    fn write(&self, text: &str) -> std::io::Result<()> {
        self.output().replace(text)
    }
}

/// How every counterexample starts: the command that replays it.
const REPLAY: &str = "# replay: courier run ";

pub(crate) fn main(args: &Args) -> ExitCode {
    let Some(agent) = super::agent(args.mutant) else {
        return ExitCode::from(2);
    };
    let bounds = Bounds {
        messages: args.messages,
        cancels: args.cancels,
        edits: args.edits,
        steps: args.steps,
        restarts: args.restarts,
    };
    if !outputs_usable(args) {
        return ExitCode::from(2);
    }
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let variant = args.mutant.map(MutantArg::name).unwrap_or("default");
    courier::status!(
        "courier check: variant={variant} messages={} cancels={} edits={} steps={} \
         restarts={} threads={threads} symmetry={}",
        bounds.messages,
        bounds.cancels,
        bounds.edits,
        bounds.steps,
        bounds.restarts,
        if args.no_symmetry { "off" } else { "on" },
    );
    super::warn_large_space("--messages", bounds.messages, bounds.restarts);
    if let Err(error) = courier::files::threads_available(threads) {
        eprintln!("{}", courier::files::no_worker_thread(error));
        return ExitCode::from(2);
    }
    let space = Space::new(bounds, agent, !args.no_symmetry);
    let started = Instant::now();
    let bar = progress_bar();
    let checked = courier_model::check(space.clone(), threads, |counts| {
        bar.set_message(progress_line(counts, started.elapsed()));
    });
    bar.finish_and_clear();
    print_counts(&checked, started.elapsed());
    conclude(args, &space, checked.verdict)
}

/// Checks before any work that the counterexample's outputs can be
/// written (`--out`, and its picture with `--diagram`); a default output
/// that cannot is a note (the correct design writes nothing). Says why
/// when they cannot.
fn outputs_usable(args: &Args) -> bool {
    if args.diagram
        && let Err(error) = files::check_beside("--out", args.out())
    {
        eprintln!("error: {error}");
        return false;
    }
    let svg = courier::diagram::svg_beside(args.out());
    let mut outputs = vec![Output {
        flag: "--out",
        path: args.out(),
    }];
    if args.diagram {
        outputs.push(Output {
            flag: "--diagram (beside --out)",
            path: &svg,
        });
    }
    match files::check_paths(&[], &outputs) {
        Ok(()) => {}
        Err(error) if args.out.is_some() => {
            eprintln!("error: {error}");
            return false;
        }
        // The default, not asked for (a read-only folder): the correct
        // design writes nothing, and a counterexample that cannot be
        // written is printed instead.
        Err(error) => eprintln!("note: {error}; a counterexample would be printed, not written"),
    }
    match args.output().foreign() {
        Some(why) if args.out.is_some() => {
            eprintln!("error: {why}");
            return false;
        }
        Some(why) => eprintln!("note: {why}; a counterexample would be printed, not written"),
        None => {}
    }
    let beside = args
        .diagram
        .then(|| courier::diagram::picture_beside(&svg, "--out"));
    match beside.and_then(|picture| picture.foreign()) {
        Some(why) if args.out.is_some() => {
            eprintln!("error: --diagram: {why}");
            return false;
        }
        Some(why) => eprintln!("note: {why}; a picture would not be drawn"),
        None => {}
    }
    true
}

fn conclude(args: &Args, space: &Space, verdict: Verdict) -> ExitCode {
    match verdict {
        Verdict::Holds => {
            let properties = courier_model::checked_properties().count();
            let goals = space.goals().count();
            courier::status!("ok: {properties} properties hold; {goals} goals reached");
            ExitCode::SUCCESS
        }
        Verdict::Vacuous(missed) => {
            for goal in missed {
                courier::status!("goal never reached: {goal}");
            }
            ExitCode::from(1)
        }
        Verdict::Broken(counterexample) => {
            let violation = &counterexample.violation;
            courier::status!("violation: {}", violation.property);
            courier::status!("  {}", violation.detail);
            let text = transcript(args, space, &counterexample);
            match args.write(&text) {
                Ok(()) => {
                    let length = counterexample.trace.len();
                    let noun = if length == 1 { "command" } else { "commands" };
                    let out = files::shell_word(args.out());
                    courier::status!("shortest counterexample ({length} {noun}) written to {out}");
                }
                Err(error) => {
                    // The search is not lost: the counterexample goes to stdout.
                    // Named by its flag when the user gave it, as every
                    // output is.
                    let flag = if args.out.is_some() { "--out " } else { "" };
                    eprintln!(
                        "error: {flag}{}: cannot write: {error}",
                        files::named(args.out())
                    );
                    courier::status!("shortest counterexample:\n{text}");
                    if args.diagram {
                        eprintln!(
                            "note: --diagram: no picture drawn, since its transcript was not written"
                        );
                    }
                    // A file the user named is an output that failed
                    // (exit 2); the default, not asked for, leaves the
                    // verdict (exit 1) as the result, printed in full.
                    return ExitCode::from(if args.out.is_some() { 2 } else { 1 });
                }
            }
            print_diagram(args, &text);
            ExitCode::from(1)
        }
    }
}

/// The counterexample as a transcript of the explored variant, with a line
/// saying how to replay it.
fn transcript(args: &Args, space: &Space, counterexample: &Counterexample) -> String {
    let out = files::shell_word(args.out());
    let replay = match &args.mutant {
        Some(name) => format!("{REPLAY}--mutant {name} {out}\n"),
        None => format!("{REPLAY}{out}\n"),
    };
    replay + &counterexample.transcript(&space.fresh_agent())
}

/// Prints where the counterexample's diagram goes; writes it with `--diagram`,
/// drawn from `text`, the transcript just written (its restarts included,
/// which a list of inputs cannot carry), not read back from `--out`: a pipe
/// there (`--out /dev/stdout`) would be read from its own write end, a
/// wait that never ends.
fn print_diagram(args: &Args, text: &str) {
    let svg = courier::diagram::svg_beside(args.out());
    if !args.diagram {
        // Beside a device or a pipe no picture can go: no hint to add one.
        if files::check_beside("--out", args.out()).is_ok() {
            courier::status!(
                "diagram: {} (not written; add --diagram)",
                files::named(&svg)
            );
        }
        return;
    }
    let drawn =
        courier::diagram::from_transcript(args.out(), text, args.mutant.map(MutantArg::name));
    courier::diagram::write_beside(drawn, &svg, "--out");
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn progress_line(counts: Counts, elapsed: Duration) -> String {
    format!(
        "states {}  unique {}  depth {}  {} states/s",
        counts.total,
        counts.unique,
        counts.depth,
        rate(counts.total, elapsed)
    )
}

fn print_counts(checked: &Checked, elapsed: Duration) {
    let counts = checked.counts;
    courier::status!("unique states: {}", counts.unique);
    courier::status!("total states:  {}", counts.total);
    // What varies from run to run goes to stderr: stdout is the same,
    // byte for byte, for the same bounds. The depth is the deepest path
    // the depth-first search took, which with several threads depends on
    // their timing (one state first reached by a longer path).
    eprintln!("depth:         {}", counts.depth);
    eprintln!("wall time:     {:.2} s", elapsed.as_secs_f64());
    eprintln!("states/s:      {}", rate(counts.total, elapsed));
    match peak_memory() {
        Some(bytes) => eprintln!("peak memory:   {:.1} MiB", bytes as f64 / MIB),
        None => eprintln!("peak memory:   unknown (no /proc/self/status here)"),
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The process's peak resident set size in bytes (Linux's `VmHWM`, what
/// `/usr/bin/time` reports as the maximum resident set size), or `None` where
/// there is no `/proc`. Most of it is the search's set of state hashes and
/// its stack of states still to visit.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    Some(kib * 1024)
}

fn rate(states: usize, elapsed: Duration) -> u64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        (states as f64 / seconds) as u64
    } else {
        0
    }
}
