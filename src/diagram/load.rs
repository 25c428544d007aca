//! Reading a run to draw: a transcript or checker counterexample (`.txn`) or
//! a simulator race report (`.json`), re-run on a fresh agent of its variant
//! through the core and the checker. A transcript names its variant in a
//! comment line `# mutant: NAME` (shrunk traces) or `# replay: courier run
//! --mutant NAME ...` (counterexamples), a report in its `mutant` field; an
//! explicit `--mutant` wins.

use std::path::{Path, PathBuf};

use courier_check::Violation;
use courier_core::transcript::Script;
use courier_core::{Agent, Input};
use courier_sim::Report;

use super::trace::Tracer;
use super::{Diagram, Format};

/// Reads `file` and runs it on a fresh agent of `mutant`, else of the
/// variant the file names, else the correct design. A `.json` file is a
/// race report, anything else a transcript.
pub fn load(file: &Path, mutant: Option<&str>) -> Result<Diagram, String> {
    let text = std::fs::read_to_string(file).map_err(|error| format!("cannot read: {error}"))?;
    if file
        .extension()
        .is_some_and(|extension| extension == "json")
    {
        let report = Report::parse(&text).map_err(|error| error.to_string())?;
        return from_report(file, &report, mutant);
    }
    let script = Script::parse(&text).map_err(|error| error.to_string())?;
    let named = named_variant(&text);
    let variant = mutant.or(named.as_deref());
    let mut tracer = Tracer::new(crate::variant::fresh_agent(variant)?);
    tracer
        .run_script(&script)
        .map_err(|(line, stalled)| format!("line {line}: {stalled}"))?;
    Ok(tracer.finish(title(file, variant)))
}

/// A race report's trace, run on its variant (or `mutant`). A liveness
/// failure (a stall, a wake still owed when the run ends) is the simulator's
/// verdict over the whole trace, not one transition's, so when the re-run
/// breaks nothing the report's own violation is marked at its last row.
pub fn from_report(file: &Path, report: &Report, mutant: Option<&str>) -> Result<Diagram, String> {
    let variant = mutant.or(report.mutant.as_deref());
    let mut tracer = Tracer::new(crate::variant::fresh_agent(variant)?);
    tracer.apply_all(report.trace.iter().cloned());
    let title = format!("{} seed {}", title(file, variant), report.seed);
    let mut diagram = tracer.finish(title);
    let last = diagram.rows.len().checked_sub(1);
    if let (None, Some(last)) = (&diagram.broken, last) {
        let violation = Violation {
            property: report.property,
            detail: report.detail.clone(),
        };
        diagram.broken = Some((last, violation));
    }
    Ok(diagram)
}

/// The planted bug a transcript's comments name, if any.
fn named_variant(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let comment = line.strip_prefix('#')?.trim();
        let name = match comment.strip_prefix("mutant:") {
            Some(name) => name.trim(),
            None => {
                let replay = comment.strip_prefix("replay:")?;
                let mut words = replay.split_whitespace();
                words.find(|word| *word == "--mutant")?;
                words.next()?
            }
        };
        Some(name.to_owned())
    })
}

/// The file name and the variant it ran on.
pub fn title(file: &Path, mutant: Option<&str>) -> String {
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    match mutant {
        Some(mutant) => format!("{name} (planted bug {mutant})"),
        None => format!("{name} (correct design)"),
    }
}

/// Where the SVG of a written counterexample or report goes: beside it.
pub fn svg_beside(file: &Path) -> PathBuf {
    file.with_extension("svg")
}

/// Runs `inputs` on `agent` (fresh, of the variant `mutant` names) and
/// writes the SVG beside `file`, the counterexample or report they came
/// from; returns the SVG's path.
pub fn write_beside(
    file: &Path,
    mutant: Option<&str>,
    agent: Agent,
    inputs: impl IntoIterator<Item = Input>,
) -> std::io::Result<PathBuf> {
    let mut tracer = Tracer::new(agent);
    tracer.feed_all(inputs);
    let svg = svg_beside(file);
    std::fs::write(&svg, tracer.finish(title(file, mutant)).render(Format::Svg))?;
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::named_variant;

    #[test]
    fn a_transcript_names_its_variant_in_a_comment() {
        let replay = "# replay: courier run --mutant no-latch ce.txn\n\nfollowup A\n";
        assert_eq!(named_variant(replay).as_deref(), Some("no-latch"));
        let shrunk = "# pins: x\n# mutant: early-idle\n";
        assert_eq!(named_variant(shrunk).as_deref(), Some("early-idle"));
        assert_eq!(named_variant("# replay: courier run ce.txn\n"), None);
        assert_eq!(named_variant("# m01 · planted bug `no-latch`\n"), None);
    }
}
