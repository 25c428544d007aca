//! `courier sim --seeds A..B [--mutant NAME] [--report FILE] [--jobs J]
//! [--shard I/N] [--check-determinism] [--diagram] [--coverage-bound M]
//! [--no-restarts]`: runs every seed of the range (see `courier-sim`), with
//! restarts as faults unless `--no-restarts`. The first failing seed
//! (the lowest, whatever `--jobs`) prints `violation: <property> seed=<n>`,
//! writes a race report, the path of its diagram (written with `--diagram`)
//! and the commands that replay it, and exits 1; otherwise a summary and
//! exit 0 (with `--coverage-bound`, the share of the checker's states; see
//! `bound.rs`). Exit 2 on bad arguments. With `--against CMD|dsh`, each
//! seed's trace is compared with another implementation instead (see
//! `sim/against.rs` for its output and exit codes).

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use courier::files::{self, Output};
use courier::variant::MutantArg;
use courier_core::Agent;
use courier_sim::{
    Failure, Plan, REPORT_FORMAT, Report, Restarts, SeedRun, Swept, draw, evaluate, sweep,
};
use indicatif::{ProgressBar, ProgressStyle};

mod against;
mod bound;

/// Arguments of `courier sim`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Seeds to run: `A..B` (B excluded) or a single seed `N`.
    #[arg(long, value_parser = parse_seeds, value_name = "A..B")]
    seeds: Range<u64>,
    /// Run against a planted bug of SPEC §8 (needs `--features mutants`).
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
    /// Where to write the race report of a failure (default
    /// `race-<seed>.json`); replaces only an empty file or a race report.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Worker threads (the result does not depend on it; at most one per
    /// seed, and 256: each costs a stack, and tens of thousands exhaust the
    /// system's memory maps).
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u16).range(1..=256),
        allow_negative_numbers = true
    )]
    jobs: u16,
    /// Run only shard I of N (1-based): a contiguous slice of the seed range.
    #[arg(long, value_parser = parse_shard, value_name = "I/N")]
    shard: Option<(u64, u64)>,
    /// Also draw the race report as an SVG sequence diagram beside it.
    #[arg(long)]
    diagram: bool,
    /// Run each seed twice and fail on any difference.
    #[arg(long)]
    check_determinism: bool,
    /// Skip counting distinct abstract states (about 1.3 times the throughput: BENCHMARKS.md).
    #[arg(long)]
    no_coverage: bool,
    /// Draw only inputs `courier check --messages M` explores and report the
    /// share of the checker's abstract states the seeds reached.
    #[arg(
        long,
        value_name = "M",
        value_parser = clap::value_parser!(u8).range(1..=26),
        allow_negative_numbers = true,
        conflicts_with_all = ["mutant", "no_coverage"],
    )]
    coverage_bound: Option<u8>,
    /// Never crash and resume the agent (restarts are faults drawn at each
    /// seed's rate otherwise; a coverage bound has none).
    #[arg(long)]
    no_restarts: bool,
    /// Compare each seed's trace on another implementation speaking
    /// docs/PROTOCOL.md (a shell command, or `dsh` for adapters/dsh) with
    /// the core, stimulus by stimulus.
    #[arg(
        long,
        value_name = "CMD",
        conflicts_with_all = ["coverage_bound", "check_determinism", "report", "diagram", "jobs"],
    )]
    against: Option<String>,
    /// With `--against`: the directory the first unexplained divergence is
    /// written to, as `divergence-<seed>.txn`.
    #[arg(long, value_name = "DIR", default_value = ".", requires = "against")]
    out: PathBuf,
    /// With `--against`: shrink that divergence first (delta debugging, a
    /// fresh process of the other implementation per candidate) to the
    /// shortest trace that still diverges the same way.
    #[arg(long, requires = "against")]
    shrink: bool,
}

impl Args {
    fn restarts(&self) -> Restarts {
        if self.no_restarts {
            Restarts::Off
        } else {
            Restarts::Drawn
        }
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let Some(prototype) = super::agent(args.mutant) else {
        return ExitCode::from(2);
    };
    let seeds = match args.shard {
        Some(shard) => shard_of(&args.seeds, shard),
        None => args.seeds.clone(),
    };
    if let (Some((index, count)), true) = (args.shard, seeds.is_empty()) {
        // Not an error (a CI matrix may have more shards than seeds), but
        // a run of no seeds must not read as a pass of some.
        let Range { start, end } = &args.seeds;
        eprintln!("note: shard {index}/{count} of {start}..{end} is empty: more shards than seeds");
    }
    if let Some(against) = &args.against {
        // The divergence transcript goes in a folder: a file there would
        // fail the write after all the work.
        if let Err(error) = files::check_folder("--out", &args.out) {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
        let command = match super::against::resolve(against) {
            Ok(command) => command,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        };
        let written = against::Written {
            out: &args.out,
            shrink: args.shrink,
        };
        return against::main(seeds, args.restarts(), &prototype, &command, written);
    }
    if let Some(report) = &args.report
        && let Err(error) = check_report(report, args.diagram)
    {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    // More workers than seeds would only wait; the calling thread is one
    // even for an empty shard.
    let jobs = usize::try_from(seeds.end - seeds.start)
        .unwrap_or(usize::MAX)
        .clamp(1, usize::from(args.jobs));
    print_banner(args, &seeds, jobs);
    let plan = Plan {
        seeds: seeds.clone(),
        jobs,
        check_determinism: args.check_determinism,
        coverage: !args.no_coverage,
        bound: args.coverage_bound.map(bound::bounds),
        restarts: args.restarts(),
    };
    let started = Instant::now();
    let inputs = AtomicU64::new(0);
    let bar = progress_bar(seeds.end - seeds.start);
    let on_seed = |count: u64| {
        let total = inputs.fetch_add(count, Ordering::Relaxed) + count;
        bar.inc(1);
        bar.set_message(format!("{} inputs/s", rate(total, bar.elapsed())));
        // Nobody reads the summary any more (`| head -2`): end quietly, as
        // a write to a closed stdout does. Asked every 256 seeds.
        if bar.position().is_multiple_of(256) && files::stdout_closed() {
            std::process::exit(2);
        }
    };
    let swept = sweep(&plan, &prototype, &on_seed);
    bar.finish_and_clear();
    finish(args, &prototype, swept, plan.bound, started.elapsed())
}

/// Refuses, before any work, a `--report` path (and its `--diagram`
/// beside it) that could not take the race report.
fn check_report(report: &Path, diagram: bool) -> Result<(), String> {
    if diagram {
        files::check_beside("--report", report)?;
    }
    let svg = courier::diagram::svg_beside(report);
    let mut outputs = vec![Output {
        flag: "--report",
        path: report,
    }];
    if diagram {
        outputs.push(Output {
            flag: "--diagram (beside --report)",
            path: &svg,
        });
    }
    files::check_paths(&[], &outputs)?;
    if let Some(why) = report_output(report, true).foreign() {
        return Err(why);
    }
    let beside = diagram.then(|| courier::diagram::picture_beside(&svg, "--report"));
    match beside.and_then(|picture| picture.foreign()) {
        Some(why) => Err(format!("--diagram: {why}")),
        None => Ok(()),
    }
}

/// The verdict of a finished sweep: the failure it met, or the summary
/// line (and the coverage bound's report).
fn finish(
    args: &Args,
    prototype: &Agent,
    swept: Swept,
    bound: Option<courier_model::Bounds>,
    elapsed: Duration,
) -> ExitCode {
    match swept.failure {
        Some(Failure::Violation(run)) => report_violation(args, prototype, &run),
        Some(Failure::Panic { seed, message }) => {
            courier::status!("panic: seed={seed}: {message}");
            courier::status!("rerun: {}", rerun_command(args, seed));
            ExitCode::from(1)
        }
        Some(Failure::Nondeterminism { seed, difference }) => {
            courier::status!("nondeterminism: seed={seed}: {difference}");
            courier::status!("rerun: {}", rerun_command(args, seed));
            ExitCode::from(1)
        }
        None => {
            let states = if args.no_coverage {
                "coverage off".to_owned()
            } else {
                format!("{} distinct abstract states", swept.coverage.states())
            };
            courier::status!(
                "passed: {} seeds, {} inputs, {} restarts, {states}",
                swept.seeds,
                swept.inputs,
                swept.restarts,
            );
            // What varies from run to run goes to stderr: stdout is the
            // same, byte for byte, for the same seeds.
            eprintln!(
                "time: {:.2} s ({} inputs/s)",
                elapsed.as_secs_f64(),
                rate(swept.inputs, elapsed),
            );
            match bound {
                Some(bounds) => bound::report(bounds, prototype, &swept.coverage),
                None => ExitCode::SUCCESS,
            }
        }
    }
}

/// The banner: one seed prints every swarm knob it drew (TigerBeetle's
/// VOPR); a range prints the run's settings. Either says whether the core's
/// debug assertions are compiled in (the invariant sweep runs regardless).
fn print_banner(args: &Args, seeds: &Range<u64>, jobs: usize) {
    let mutant = args.mutant.map(MutantArg::name).unwrap_or("none");
    let asserts = if cfg!(debug_assertions) {
        "on"
    } else {
        "off (invariants still checked; `--profile sim` turns them on)"
    };
    if seeds.end - seeds.start == 1 {
        let restarts = match args.coverage_bound {
            Some(_) => Restarts::Off,
            None => args.restarts(),
        };
        let (swarm, _) = draw(seeds.start, restarts);
        courier::status!(
            "seed={} version={} mutant={mutant} {swarm}",
            seeds.start,
            env!("CARGO_PKG_VERSION")
        );
    } else {
        let restarts = if args.no_restarts || args.coverage_bound.is_some() {
            "off"
        } else {
            "on"
        };
        courier::status!(
            "sim seeds={}..{} mutant={mutant} jobs={jobs} restarts={restarts} \
             report-format={REPORT_FORMAT}",
            seeds.start,
            seeds.end
        );
    }
    courier::status!("core debug assertions: {asserts}");
    if let Some(messages) = args.coverage_bound {
        let bounds = bound::bounds(messages);
        courier::status!("{}", bound::banner(bounds));
        super::warn_large_space("--coverage-bound", messages, bounds.restarts);
    }
}

fn progress_bar(seeds: u64) -> ProgressBar {
    let bar = ProgressBar::new(seeds);
    let style = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} seeds  {per_sec:.0} seeds/s  {msg}  eta {eta}",
    )
    .expect("a valid progress template");
    bar.set_style(style.with_key(
        "per_sec",
        |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
            let _ = write!(out, "{:.0}", state.per_sec());
        },
    ));
    bar
}

/// Prints where the report's diagram goes; writes it with `--diagram`.
fn print_diagram(args: &Args, path: &Path, report: &Report) {
    let svg = courier::diagram::svg_beside(path);
    if !args.diagram {
        // Beside a device or a pipe no picture can go: no hint to add one.
        if files::check_beside("--report", path).is_ok() {
            courier::status!(
                "diagram: {} (not written; add --diagram)",
                files::named(&svg)
            );
        }
        return;
    }
    let drawn = courier::diagram::from_report(path, report, None);
    courier::diagram::write_beside(drawn, &svg, "--report");
}

/// Writes the report of a failing seed and prints how to replay it.
fn report_violation(args: &Args, prototype: &Agent, run: &SeedRun) -> ExitCode {
    let violation = run.violation.as_ref().expect("a violation failure");
    let evaluation = evaluate(prototype, &run.trace);
    if evaluation.violation.as_ref().map(|v| v.property) != Some(violation.property) {
        courier::status!(
            "nondeterminism: seed={}: the trace does not reproduce `{}` on replay",
            run.seed,
            violation.property
        );
        return ExitCode::from(1);
    }
    let report = Report {
        format: REPORT_FORMAT,
        seed: run.seed,
        mutant: args.mutant.map(|arg| arg.name().to_owned()),
        swarm: run.swarm,
        property: violation.property,
        detail: violation.detail.clone(),
        output_hash: evaluation.output_hash,
        trace: run.trace.clone(),
    };
    let path = args
        .report
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("race-{}.json", run.seed)));
    courier::status!("violation: {} seed={}", violation.property, run.seed);
    courier::status!("detail: {}", files::shown(&violation.detail));
    courier::status!("outputs: {}", report.output_hash);
    let written = report_output(&path, args.report.is_some()).replace(report.to_json());
    if let Err(error) = written {
        // Named by its flag when the user gave it, as every output is.
        let flag = if args.report.is_some() {
            "--report "
        } else {
            ""
        };
        eprintln!(
            "error: {flag}{}: cannot write the report: {error}",
            files::named(&path)
        );
        // The run is deterministic: the seed alone brings the report back.
        courier::status!("rerun: {}", rerun_command(args, run.seed));
        // A report the user named is an output that failed (exit 2); the
        // default, not asked for, leaves the verdict (exit 1) standing.
        return ExitCode::from(if args.report.is_some() { 2 } else { 1 });
    }
    let shown = files::named(&path);
    courier::status!(
        "report: {shown} ({} inputs, {} restarts)",
        run.inputs,
        run.restarts
    );
    print_diagram(args, &path, &report);
    let word = files::shell_word(&path);
    courier::status!("replay: courier replay {word}");
    courier::status!("shrink: courier shrink {word} --out shrunk.txn");
    courier::status!("rerun: {}", rerun_command(args, run.seed));
    ExitCode::from(1)
}

/// The race report's output: it replaces only a race report written before.
fn report_output(path: &Path, named: bool) -> files::Replaceable<'_> {
    files::Replaceable {
        path,
        flag: "--report",
        chosen: if named {
            files::Chosen::ByUser
        } else {
            files::Chosen::Default
        },
        ours: is_race_report,
    }
}

/// Whether a file is a race report ([`Report::read`] takes all of it).
fn is_race_report(path: &Path) -> std::io::Result<bool> {
    let (version, whole) = (File::open(path)?, File::open(path)?);
    Ok(Report::read(version, whole).is_ok())
}

fn rerun_command(args: &Args, seed: u64) -> String {
    let mutant = args
        .mutant
        .as_ref()
        .map_or_else(String::new, |name| format!(" --mutant {name}"));
    let bound = args.coverage_bound.map_or_else(String::new, |messages| {
        format!(" --coverage-bound {messages}")
    });
    let restarts = if args.no_restarts {
        " --no-restarts"
    } else {
        ""
    };
    let report = args.report.as_ref().map_or_else(String::new, |path| {
        format!(" --report {}", files::shell_word(path))
    });
    format!("courier sim --seeds {seed}{mutant}{bound}{restarts}{report}")
}

/// Inputs per second as a short figure (`2.1M`, `830k`).
fn rate(count: u64, elapsed: Duration) -> String {
    let per_second = count as f64 / elapsed.as_secs_f64().max(1e-9);
    match per_second {
        rate if rate >= 1e6 => format!("{:.2}M", rate / 1e6),
        rate if rate >= 1e3 => format!("{:.0}k", rate / 1e3),
        rate => format!("{rate:.0}"),
    }
}

/// `A..B` or `N` (meaning `N..N+1`).
fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let number = |word: &str| {
        word.bytes()
            .all(|byte| byte.is_ascii_digit())
            .then(|| word.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| format!("`{word}` is not a seed (an integer from 0 to {})", u64::MAX))
    };
    let range = match text.split_once("..") {
        Some((start, end)) => number(start)?..number(end)?,
        None => {
            let seed = number(text)?;
            // The range `N..N+1` must be representable.
            seed..seed.checked_add(1).ok_or_else(|| {
                format!(
                    "seed {seed} is too large: a single seed is at most {}",
                    u64::MAX - 1
                )
            })?
        }
    };
    if range.start >= range.end {
        return Err(format!("`{text}` is an empty range"));
    }
    Ok(range)
}

/// `I/N` with `1 <= I <= N`.
fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{text}` is not a shard `I/N` with 1 <= I <= N");
    let (index, count) = text.split_once('/').ok_or_else(bad)?;
    let digits = |word: &str| word.bytes().all(|byte| byte.is_ascii_digit());
    if !digits(index) || !digits(count) {
        return Err(bad());
    }
    let index: u64 = index.parse().map_err(|_| bad())?;
    let count: u64 = count.parse().map_err(|_| bad())?;
    if index == 0 || index > count {
        return Err(bad());
    }
    Ok((index, count))
}

/// Shard `index` of `count`: the `index`-th of `count` contiguous slices
/// (sizes differ by at most one), so shards together cover the range once.
fn shard_of(seeds: &Range<u64>, (index, count): (u64, u64)) -> Range<u64> {
    let length = u128::from(seeds.end - seeds.start);
    let bound = |slice: u64| {
        let offset = length * u128::from(slice) / u128::from(count);
        seeds.start + u64::try_from(offset).expect("an offset inside the range")
    };
    bound(index - 1)..bound(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_as_ranges_or_single_seeds() {
        assert_eq!(parse_seeds("0..5000"), Ok(0..5000));
        assert_eq!(parse_seeds("17"), Ok(17..18));
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("a..b").is_err());
        // Digits only, as every count the commands take: no sign.
        assert!(parse_seeds("+5").is_err() && parse_seeds("0..+5").is_err());
        assert!(parse_shard("+1/2").is_err() && parse_shard("1/+2").is_err());
    }

    #[test]
    fn shards_cover_the_range_once() {
        let seeds = 10..27;
        let shards: Vec<Range<u64>> = (1..=4).map(|i| shard_of(&seeds, (i, 4))).collect();
        assert_eq!(shards.first().map(|s| s.start), Some(10));
        assert_eq!(shards.last().map(|s| s.end), Some(27));
        for pair in shards.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("0/4").is_err() && parse_shard("5/4").is_err());
    }
}
