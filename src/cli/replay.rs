//! `courier replay REPORT`: re-runs a race report's trace on the report's
//! variant and prints the same `violation: <property> seed=<n>` line and
//! output hash that `courier sim` printed; exit 1 on a violation, 0 if the
//! trace now passes, 2 on a file that is not a report this build reads.
//! It also regenerates the seed and says so if the generator has drifted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files;
use courier_core::Agent;
use courier_sim::{Record, Report, Restarts, evaluate, simulate};

/// Arguments of `courier replay`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A race report written by `courier sim`.
    #[arg(value_name = "REPORT")]
    report: PathBuf,
}

impl Args {
    /// The files this command reads: stdout may not be one of them.
    pub(crate) fn inputs(&self) -> Vec<&Path> {
        vec![self.report.as_path()]
    }
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let (report, prototype) = match load(&args.report) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let mutant = report.mutant.as_deref().unwrap_or("none");
    println!("seed={} mutant={mutant} {}", report.seed, report.swarm);
    let record = Record {
        trace: true,
        ..Record::default()
    };
    // A rate of 0 is the seed's own draw or `--no-restarts`: either way
    // the run had no restarts, and regenerating without them matches.
    let restarts = if report.swarm.restart_percent == 0 {
        Restarts::Off
    } else {
        Restarts::Drawn
    };
    let regenerated = simulate(report.seed, restarts, &prototype, record);
    if regenerated.swarm != report.swarm {
        println!(
            "note: seed {} now draws {} (the generator changed, or the report's seed \
             or settings were edited)",
            report.seed, regenerated.swarm
        );
    }
    if regenerated.trace != report.trace {
        println!(
            "note: seed {} now generates a different trace (the generator changed, \
             or the report's seed or trace was edited); replaying the recorded one",
            report.seed
        );
    }
    let evaluation = evaluate(&prototype, &report.trace);
    let same_hash = if evaluation.output_hash == report.output_hash {
        "same as the report".to_owned()
    } else {
        format!("the report says {}", report.output_hash)
    };
    let Some(violation) = evaluation.violation else {
        println!(
            "no violation: the trace passes (the report says {})",
            report.property
        );
        println!("outputs: {} ({same_hash})", evaluation.output_hash);
        return ExitCode::SUCCESS;
    };
    println!("violation: {} seed={}", violation.property, report.seed);
    println!("detail: {}", files::shown(&violation.detail));
    println!("outputs: {} ({same_hash})", evaluation.output_hash);
    if violation.property != report.property {
        println!("note: the report says {}", report.property);
    } else if violation.detail != report.detail {
        println!(
            "note: the report's detail says {}",
            files::shown(&report.detail)
        );
    }
    ExitCode::from(1)
}

/// Reads a report and builds its variant's agent; any problem is printed
/// and becomes exit 2.
pub(crate) fn load(path: &Path) -> Result<(Report, Agent), ExitCode> {
    let shown = files::named(path);
    let fail = |message: String| {
        eprintln!("error: {}", files::located(shown, message));
        ExitCode::from(2)
    };
    let source = courier::files::Rereadable::new(path).map_err(fail)?;
    let report = courier::files::read_report(&source).map_err(fail)?;
    let prototype = courier::variant::fresh_agent(report.mutant.as_deref())
        .map_err(|error| fail(format!("the report's `mutant` field: {error}")))?;
    Ok((report, prototype))
}
