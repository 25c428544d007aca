//! Reading a run to draw: a transcript or checker counterexample or a
//! simulator race report (told apart by content), re-run on a fresh agent of its variant
//! through the core and the checker. A transcript names its variant in a
//! comment line `# mutant: NAME` (shrunk traces) or `# replay: courier run
//! --mutant NAME ...` (counterexamples), a report in its `mutant` field; an
//! explicit `--mutant` wins.

use std::path::{Path, PathBuf};

use courier_core::transcript::{Script, parse_command};
use courier_core::{Agent, Mutant};
use courier_sim::Report;

use super::trace::Tracer;
use super::{Diagram, Diverged};
use crate::files;
use crate::variant::fresh_agent;

/// Reads `file` and runs it on a fresh agent of `mutant`, else of the
/// variant the file names, else the correct design. A file is a race report
/// when its content is a JSON object (whatever its name), else a transcript.
/// A variant the file names that this build lacks (a regression's `# mutant:`
/// line on the default build) draws the correct design, with a note saying
/// so and how to draw the planted bug.
pub fn load(file: &Path, mutant: Option<&str>) -> Result<Diagram, String> {
    // Told apart, then read: a pipe is copied first.
    let source = crate::files::Rereadable::new(file)?;
    if crate::files::is_report(source.path())? {
        let report = crate::files::read_report(&source)?;
        drawable(report.trace.len())?;
        return from_report(file, &report, mutant);
    }
    let text = crate::files::read_capped(source.path(), crate::files::TRANSCRIPT_MAX)?;
    from_transcript(file, &text, mutant)
}

/// A transcript's `text` (read from `file`, which titles it), run on a fresh
/// agent of `mutant`, else of the variant it names, else the correct design.
pub fn from_transcript(file: &Path, text: &str, mutant: Option<&str>) -> Result<Diagram, String> {
    let script = Script::parse(text).map_err(|error| error.to_string())?;
    drawable(script.blocks().count())?;
    let named = match mutant {
        Some(_) => None,
        None => named_variant(text)?,
    };
    let (agent, variant, note) = match (mutant, &named) {
        (Some(flag), _) => (flagged(flag)?, Some(flag), None),
        (None, None) => (fresh_agent(None)?, None, None),
        (None, Some((line, name))) => named_agent(name, &format!("line {line} names the variant"))?,
    };
    let mut tracer = Tracer::new(agent);
    // A stall is the run's verdict (a liveness failure), drawn up to there.
    let stalled = tracer.run_script(&script).err();
    let mut diagram = tracer.finish(title(file, variant))?;
    diagram.stalled = stalled.map(|(line, stalled)| format!("line {line}: {stalled}"));
    diagram.notes.extend(note);
    diagram.notes.extend(not_commands(&script));
    diagram.diverged = diverged(text, diagram.rows.len());
    Ok(diagram)
}

/// A note naming the lines that are not commands, which draw nothing
/// (`courier run` prints each as `error: bad-command`): the first, and how
/// many.
fn not_commands(script: &Script) -> Option<String> {
    let mut bad = script
        .blocks()
        .filter(|block| parse_command(&block.command).is_err());
    let first = bad.next()?;
    let others = match bad.count() {
        0 => String::new(),
        1 => ", nor is 1 other line".to_owned(),
        more => format!(", nor are {more} other lines"),
    };
    Some(format!(
        "note: line {}: `{}` is not a command{others}: not drawn (`courier run` prints \
         `error: bad-command` for it)",
        first.line,
        crate::files::shown(&first.command)
    ))
}

/// A line without the byte order mark it may start with: the file's
/// first, or another file's joined on (the transcript reader passes over
/// both alike).
fn unmarked(line: &str) -> &str {
    line.strip_prefix('\u{feff}').unwrap_or(line)
}

/// The other implementation's lines a divergence transcript (written by
/// `courier sim --against`) keeps in its header, at its last block.
fn diverged(text: &str, rows: usize) -> Option<Diverged> {
    let mut lines = text.lines().map(unmarked);
    lines.next()?.strip_prefix("# divergence: ")?;
    let other = lines
        .skip_while(|line| !line.starts_with("# the other implementation printed there:"))
        .skip(1)
        .map_while(|line| line.strip_prefix("#   "))
        .map(str::to_owned)
        .collect();
    Some(Diverged {
        row: rows.checked_sub(1)?,
        other,
    })
}

/// A race report's trace, run on its variant (or `mutant`). A liveness
/// failure (a stall, a wake still owed when the run ends) is the simulator's
/// verdict over the whole trace, not one transition's, so when no row
/// breaks a property the simulator's verdict is marked at the last row (or
/// a note says the trace passes now).
pub fn from_report(file: &Path, report: &Report, mutant: Option<&str>) -> Result<Diagram, String> {
    let (agent, variant, note) = match (mutant, &report.mutant) {
        (Some(flag), _) => (flagged(flag)?, Some(flag), None),
        (None, None) => (fresh_agent(None)?, None, None),
        (None, Some(name)) => named_agent(name, "the report's `mutant` field")?,
    };
    let mut tracer = Tracer::new(agent.clone());
    tracer.apply_all(&report.trace);
    let title = format!("{} seed {}", title(file, variant), report.seed);
    let mut diagram = tracer.finish(title)?;
    // A planted bug this build lacks is drawn on the correct design, whose
    // run `courier replay` refuses to stand in for it.
    let stand_in = note.is_some();
    diagram.notes.extend(note);
    let last = diagram.rows.len().checked_sub(1);
    if let (None, Some(last)) = (&diagram.broken, last) {
        // Marked only when the simulator's own verdict over the trace (what
        // `courier replay` prints) still finds it: a report this build no
        // longer reproduces is not drawn as broken.
        match courier_sim::evaluate(&agent, &report.trace).violation {
            Some(violation) => diagram.broken = Some((last, violation)),
            None if stand_in => diagram.notes.push(format!(
                "note: the report says {}, which the correct design's run of its trace \
                 does not break (`courier replay` of it needs a build with its bug)",
                report.property
            )),
            None => diagram.notes.push(format!(
                "note: the report says {}, but this build's run of its trace breaks \
                 nothing (as `courier replay` says)",
                report.property
            )),
        }
    }
    Ok(diagram)
}

/// The agent of the variant a file names (`named_where` says where), with its
/// name; a planted bug this build lacks draws the correct design, with a
/// note saying so.
fn named_agent<'a>(
    name: &'a str,
    named_where: &str,
) -> Result<(Agent, Option<&'a str>, Option<String>), String> {
    match fresh_agent(Some(name)) {
        Ok(agent) => Ok((agent, Some(name), None)),
        Err(error) if name.parse::<Mutant>().is_ok() => {
            let note = format!("note: {named_where}: {error}; drawing the correct design instead");
            Ok((fresh_agent(None)?, None, Some(note)))
        }
        Err(error) => Err(format!("{named_where}: {error}")),
    }
}

/// The most inputs a file may hold to be drawn: every row is kept while the
/// run is checked (the picture shows [`super::ROWS_DRAWN_MAX`] of them), so
/// this bounds the memory a diagram takes.
pub const INPUTS_DRAWN_MAX: usize = 100_000;

/// Refuses a trace of `inputs` too long to draw usefully.
fn drawable(inputs: usize) -> Result<(), String> {
    if inputs <= INPUTS_DRAWN_MAX {
        return Ok(());
    }
    Err(format!(
        "{inputs} inputs: too long to draw usefully (at most {INPUTS_DRAWN_MAX}); \
         `courier shrink` makes a minimal trace of a race report, and `courier replay` \
         checks a trace of any length"
    ))
}

/// A fresh agent of the variant `--mutant` names; its error names the flag.
fn flagged(mutant: &str) -> Result<Agent, String> {
    fresh_agent(Some(mutant)).map_err(|error| format!("--mutant: {error}"))
}

/// The planted bug a transcript's comments name, if any, and the 1-based
/// line naming it. Two lines naming different variants are refused: which
/// one the file means is the user's to say (`--mutant`).
fn named_variant(text: &str) -> Result<Option<(usize, String)>, String> {
    let mut named = text.lines().enumerate().filter_map(|(index, line)| {
        let comment = unmarked(line).strip_prefix('#')?.trim();
        let name = match comment.strip_prefix("mutant:") {
            Some(name) => name.trim(),
            None => {
                let replay = comment.strip_prefix("replay:")?;
                let mut words = replay.split_ascii_whitespace();
                words.find(|word| *word == "--mutant")?;
                words.next()?
            }
        };
        Some((index + 1, name))
    });
    let Some((line, name)) = named.next() else {
        return Ok(None);
    };
    match named.find(|(_, other)| *other != name) {
        None => Ok(Some((line, name.to_owned()))),
        Some((other_line, other)) => Err(format!(
            "line {line} names the variant {} and line {other_line} names {}: \
             say which to draw with --mutant",
            crate::files::shown(&name),
            crate::files::shown(&other)
        )),
    }
}

/// The file name and the variant it ran on.
pub fn title(file: &Path, mutant: Option<&str>) -> String {
    // Escaped like every printed path: a newline in a name would end a
    // mermaid line early.
    let name = crate::files::named(file.file_name().map_or(file, Path::new));
    match mutant {
        Some(mutant) => format!("{name} (planted bug {mutant})"),
        None => format!("{name} (correct design)"),
    }
}

/// Where the SVG of a written counterexample or report goes: beside it.
pub fn svg_beside(file: &Path) -> PathBuf {
    file.with_extension("svg")
}

/// The picture beside a command's output: its path follows the output's
/// (named with `flag`), and nobody named it, so only a picture drawn here
/// is replaced there; a user's file of that name is kept.
pub fn picture_beside<'a>(svg: &'a Path, flag: &'static str) -> files::Replaceable<'a> {
    files::Replaceable {
        path: svg,
        flag,
        chosen: files::Chosen::Default,
        ours: super::drawn_here,
    }
}

/// Writes the picture `drawn` of a command's output to `svg` (see
/// [`picture_beside`]) and says where (or why it could not).
pub fn write_beside(drawn: Result<Diagram, String>, svg: &Path, flag: &'static str) {
    let written = drawn.and_then(|diagram| {
        let text = diagram.render(super::Format::Svg);
        picture_beside(svg, flag)
            .replace(text)
            .map_err(|error| error.to_string())
    });
    match written {
        Ok(()) => crate::status!("diagram: {}", files::named(svg)),
        Err(error) => eprintln!(
            "error: --diagram {}: cannot write: {error}",
            files::named(svg)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{diverged, named_variant};

    #[test]
    fn a_transcript_names_its_variant_in_a_comment() {
        let replay = "# replay: courier run --mutant no-latch ce.txn\n\nfollowup A\n";
        assert_eq!(named_variant(replay), Ok(Some((1, "no-latch".to_owned()))));
        let shrunk = "# pins: x\n# mutant: early-idle\n";
        assert_eq!(
            named_variant(shrunk),
            Ok(Some((2, "early-idle".to_owned())))
        );
        assert_eq!(named_variant("# replay: courier run ce.txn\n"), Ok(None));
        assert_eq!(named_variant("# m01 · planted bug `no-latch`\n"), Ok(None));
        // Behind a byte order mark (before, passed over: the counterexample
        // was drawn on the correct design, as passing).
        let marked = "\u{feff}# mutant: no-latch\n";
        assert_eq!(named_variant(marked), Ok(Some((1, "no-latch".to_owned()))));
    }

    /// A divergence transcript behind a byte order mark is one still.
    #[test]
    fn a_divergence_behind_a_byte_order_mark_is_read() {
        let text = "\u{feff}# divergence: x\n# the other implementation printed there:\n#   turn/end 1 aborted\n";
        let diverged = diverged(text, 3).expect("a divergence");
        assert_eq!(
            (diverged.row, diverged.other),
            (2, vec!["turn/end 1 aborted".to_owned()])
        );
    }

    /// The same variant named twice is one; two different ones are refused,
    /// naming both lines, rather than drawing the first silently.
    #[test]
    fn two_different_variants_named_are_refused() {
        let twice = "# mutant: no-latch\n# replay: courier run --mutant no-latch x.txn\n";
        assert_eq!(named_variant(twice), Ok(Some((1, "no-latch".to_owned()))));
        let error = named_variant("# mutant: no-latch\n\n# mutant: early-idle\n").unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("line 3"),
            "{error}"
        );
        assert!(
            error.contains("early-idle") && error.contains("--mutant"),
            "{error}"
        );
    }
}
