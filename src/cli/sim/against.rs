//! `courier sim --against CMD|dsh --seeds A..B`: each seed's trace (drawn
//! on the core, as `courier sim` draws it) is fed stimulus by stimulus to
//! the core (`Runner`) and to a fresh process of the other implementation
//! (docs/PROTOCOL.md); the first stimulus whose printed lines differ is the
//! seed's divergence, classified by the named rules of `rules.rs`. Prints
//! the counts per rule, writes the first unexplained divergence as a
//! transcript `divergence-<seed>.txn` (the contract's outputs, the other
//! side's in comments), and exits 1 on any unexplained divergence, 2 when
//! the implementation cannot be spawned or breaks the protocol, else 0.
//! At each seed's end the other side's own session log (the protocol's
//! `log` query) goes through `courier validate`'s checks; the counts are
//! reported beside the divergences, and do not change the exit code (a
//! property its log breaks is also one its answers broke, reported above).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files;
use courier_check::validate::{Finding, Unreadable, validate};
use courier_check::{Checker, Kept, Violation};
use courier_core::transcript::{Command, Runner, record, stimulus_line};
use courier_core::{Agent, AwaitPoint, Input, MessageId, Output, Refusal, Stimulus, Transition};
use courier_sim::{Record, Restarts, shrink_by, simulate};

use crate::cli::against::{Answer, Answered, Peer};
use crate::cli::rules::{Divergence, Earlier, Gap, Judged, Rule, print_gaps};

/// What comparing one seed found.
enum Verdict {
    Agreed,
    /// The first differing stimulus (0-based index in the trace), how it
    /// was judged, and the other side's lines there.
    Diverged {
        index: usize,
        judged: Judged,
        actual: Vec<String>,
    },
}

/// One seed's comparison: its trace and verdict, or why it broke off, the
/// first property the other side's own outputs broke (the stimulus's
/// index), up to the divergence, and what its session log amounted to.
struct Compared {
    seed: u64,
    trace: Vec<Stimulus>,
    verdict: Result<Verdict, String>,
    broke: Option<(usize, Violation)>,
    log: Option<LogVerdict>,
}

/// The other side's session log at a seed's end, through the validator.
enum LogVerdict {
    Valid,
    /// Its first violation.
    Invalid(Finding),
    Unreadable(Unreadable),
    /// It keeps no log (`{"log":null}`).
    Absent,
    /// It did not answer the `log` query (an implementation need not).
    Unasked(String),
}

impl LogVerdict {
    /// Asks `peer` for its log and validates it; why not, when the peer
    /// broke asking (it crashed, went silent, spoke no protocol).
    fn of(peer: &mut Peer) -> Result<Self, String> {
        let lines = match peer.log()? {
            Ok(Some(lines)) => lines,
            Ok(None) => return Ok(Self::Absent),
            Err(reason) => return Ok(Self::Unasked(reason)),
        };
        let text = lines.join("\n");
        let mut first = None;
        Ok(
            match validate(text.as_bytes(), |finding| {
                first.get_or_insert(finding);
            }) {
                Err(unreadable) => Self::Unreadable(unreadable),
                Ok(_) => first.map_or(Self::Valid, Self::Invalid),
            },
        )
    }

    /// Its column in the summary.
    fn column(&self) -> usize {
        match self {
            Self::Valid => 0,
            Self::Invalid(_) => 1,
            Self::Unreadable(_) => 2,
            Self::Absent => 3,
            Self::Unasked(_) => 4,
        }
    }
}

/// The shared checker (SPEC §7) over the other implementation's answers:
/// its ghost is kept from what that side printed alone, as it is for the
/// core, so a property the other side breaks shows even where both sides
/// print the same.
#[derive(Default)]
struct OtherSide {
    checker: Checker,
    /// Its durable events as it printed them: a restart's kept log.
    log: Vec<Output>,
    judging: Judging,
}

/// Whether the other side is still being judged.
#[derive(Default)]
enum Judging {
    #[default]
    Going,
    /// It broke a property at this stimulus.
    Broke(usize, Violation),
    /// An answer that cannot be judged (an unsupported stimulus, a refusal
    /// in words the core does not use) ended the judging.
    Stopped,
}

impl OtherSide {
    /// Judges the answer to the `index`-th stimulus.
    fn judge(&mut self, index: usize, stimulus: &Stimulus, answer: &Answer) {
        if !matches!(self.judging, Judging::Going) {
            return;
        }
        let checked = match stimulus {
            Stimulus::Input(input) => match transition(input, answer) {
                Some(transition) => {
                    let checked = self.checker.observe(&transition);
                    let durable = transition.outputs.into_iter().filter(Output::is_durable);
                    self.log.extend(durable);
                    checked
                }
                None => return self.judging = Judging::Stopped,
            },
            Stimulus::Restart { lose } => match outputs(answer) {
                Some(closers) => {
                    let kept = self.log.len() - (*lose).min(self.log.len());
                    self.log.truncate(kept);
                    let checked = self.checker.restart(Kept::Log(&self.log), &closers);
                    self.log
                        .extend(closers.into_iter().filter(Output::is_durable));
                    checked
                }
                None => return self.judging = Judging::Stopped,
            },
        };
        if let Err(violation) = checked {
            self.judging = Judging::Broke(index, violation);
        }
    }

    fn broke(self) -> Option<(usize, Violation)> {
        match self.judging {
            Judging::Broke(index, violation) => Some((index, violation)),
            Judging::Going | Judging::Stopped => None,
        }
    }
}

/// The answer as the core's transition of `input`, if it reads as one.
fn transition(input: &Input, answer: &Answer) -> Option<Transition> {
    let (answer, outputs) = match answer.0.as_slice() {
        [Answered::Refused(words)] => (Err(refusal(words)?), Vec::new()),
        _ => (Ok(()), outputs(answer)?),
    };
    Some(Transition {
        input: input.clone(),
        answer,
        outputs,
    })
}

/// The answer's outputs, if it holds nothing else.
fn outputs(answer: &Answer) -> Option<Vec<Output>> {
    answer
        .0
        .iter()
        .map(|answered| match answered {
            Answered::Output(output) => Some(output.clone()),
            Answered::Refused(_) | Answered::Unsupported(_) => None,
        })
        .collect()
}

/// A refusal from its transcript words (`duplicate-id: A`, SPEC §10).
fn refusal(words: &str) -> Option<Refusal> {
    let (kind, what) = words.split_once(": ")?;
    let id = || MessageId::from(what);
    match kind {
        "duplicate-id" => Some(Refusal::DuplicateId(id())),
        "disposed" => Some(Refusal::Disposed(id())),
        "not-pending" => Some(Refusal::NotPending(id())),
        "not-awaiting" => serde_json::from_value::<AwaitPoint>(what.into())
            .ok()
            .map(Refusal::NotAwaiting),
        _ => None,
    }
}

/// Where and how the first unexplained divergence is written.
pub(crate) struct Written<'a> {
    /// The directory.
    pub(crate) out: &'a Path,
    /// Shrink it first.
    pub(crate) shrink: bool,
}

/// Candidate traces a `--shrink` judges at most: each spawns the other
/// implementation afresh.
const SHRINK_EVALUATIONS_MAX: usize = 2_000;

/// Runs the comparison over `seeds` and prints the summary.
pub(crate) fn main(
    seeds: Range<u64>,
    restarts: Restarts,
    prototype: &Agent,
    command: &str,
    written: Written<'_>,
) -> ExitCode {
    let mut counts: BTreeMap<Judged, usize> = BTreeMap::new();
    // The first unexplained divergence no analysis covers, else the first
    // unexplained one.
    let mut first_unexplained: Option<Compared> = None;
    let mut stimuli = 0;
    // Seeds where the other side's own outputs broke a property.
    let mut broke = 0;
    // Its session logs per `LogVerdict::column`.
    let mut logs = [0usize; 5];
    for seed in seeds.clone() {
        let compared = compare(seed, restarts, prototype, command);
        stimuli += compared.trace.len();
        broke += usize::from(report_other_side(seed, &compared, &mut logs));
        match &compared.verdict {
            Err(reason) => {
                eprintln!("error: seed {seed}: {reason}");
                return ExitCode::from(2);
            }
            Ok(Verdict::Agreed) => {}
            Ok(Verdict::Diverged {
                index,
                judged,
                actual,
            }) => {
                let line = stimulus_line(&compared.trace[*index]);
                let shown = actual
                    .first()
                    .map_or_else(|| "(nothing)".to_owned(), files::shown);
                println!(
                    "divergence: seed={seed} stimulus={index} `{line}`: {} (it printed `{shown}`...)",
                    judged.describe()
                );
                *counts.entry(*judged).or_default() += 1;
                let news = *judged == Judged::Unexplained(None);
                let replaces = match &first_unexplained {
                    None => matches!(judged, Judged::Unexplained(_)),
                    Some(first) => news && !first.is_news(),
                };
                if replaces {
                    first_unexplained = Some(compared);
                }
            }
        }
    }
    print_summary(seeds.end - seeds.start, stimuli, &counts, broke, logs);
    let Some(mut compared) = first_unexplained else {
        return ExitCode::SUCCESS;
    };
    if written.shrink {
        shrink_divergence(&mut compared, prototype, command);
    }
    match write_divergence(prototype, &compared, written.out) {
        Ok(path) => println!("first unexplained: {}", files::named(&path)),
        Err(error) => eprintln!("error: {error}"),
    }
    ExitCode::from(1)
}

/// Prints what the other side's own outputs broke (the shared checker)
/// and its session log's verdict, counting the log in `logs` (per
/// `LogVerdict::column`); whether its outputs broke a property.
fn report_other_side(seed: u64, compared: &Compared, logs: &mut [usize; 5]) -> bool {
    if let Some((index, violation)) = &compared.broke {
        let line = stimulus_line(&compared.trace[*index]);
        // The detail quotes the other side's ids: at most 200 characters.
        println!(
            "property: seed={seed} stimulus={index} `{line}`: its own outputs break {}: {}",
            violation.property,
            files::shown(&violation.detail)
        );
    }
    if let Some(log) = &compared.log {
        logs[log.column()] += 1;
        match log {
            LogVerdict::Invalid(finding) => println!(
                "log: seed={seed} its session log, line {}: breaks {}: {}",
                finding.line,
                finding.violation.property,
                files::shown(&finding.violation.detail)
            ),
            LogVerdict::Unreadable(unreadable) => {
                let unreadable = files::shown(unreadable);
                println!("log: seed={seed} its session log is unreadable: {unreadable}");
            }
            LogVerdict::Unasked(reason) if logs[4] == 1 => {
                println!("log: seed={seed} no session log: {reason}");
            }
            LogVerdict::Valid | LogVerdict::Absent | LogVerdict::Unasked(_) => {}
        }
    }
    compared.broke.is_some()
}

/// The summary: seeds, stimuli, agreements, divergences by rule and gap,
/// the seeds whose own outputs broke a property and the session logs.
fn print_summary(
    seeds_run: u64,
    stimuli: usize,
    counts: &BTreeMap<Judged, usize>,
    broke: usize,
    logs: [usize; 5],
) {
    let diverged: usize = counts.values().sum();
    println!(
        "sim --against: {seeds_run} seeds, {stimuli} stimuli, {} agreed, {diverged} diverged",
        seeds_run - diverged as u64
    );
    let count = |judged: Judged| counts.get(&judged).copied().unwrap_or(0);
    for rule in Rule::ALL {
        println!("  {}: {}", rule.name(), count(Judged::Explained(rule)));
    }
    let unexplained: usize = Gap::ALL
        .into_iter()
        .map(|gap| count(Judged::Unexplained(Some(gap))))
        .sum::<usize>()
        + count(Judged::Unexplained(None));
    println!("  unexplained: {unexplained}");
    print_gaps(count);
    println!("  its own outputs broke a property (the shared checker): {broke} seeds");
    let [valid, invalid, unreadable, absent, unasked] = logs;
    println!(
        "  its session log (courier validate): {valid} valid, {invalid} invalid, \
         {unreadable} unreadable, {absent} absent, {unasked} not given"
    );
}

/// Replaces `compared`'s trace by the shortest one found that still
/// diverges with the same judgement (cut at its divergence), and says so.
fn shrink_divergence(compared: &mut Compared, prototype: &Agent, command: &str) {
    let Ok(Verdict::Diverged { judged: target, .. }) = compared.verdict else {
        return;
    };
    let diverges = |candidate: &[Stimulus]| {
        let mut peer = Peer::spawn(command).ok()?;
        let verdict = feed_both(candidate, prototype, &mut peer, &mut OtherSide::default());
        match verdict {
            Ok(Verdict::Diverged {
                index,
                judged,
                actual,
            }) if judged == target => Some((candidate[..=index].to_vec(), actual)),
            Ok(Verdict::Diverged { .. } | Verdict::Agreed) | Err(_) => None,
        }
    };
    let Some(shrunk) = shrink_by(&compared.trace, diverges, SHRINK_EVALUATIONS_MAX) else {
        eprintln!(
            "warning: seed {}: the divergence did not reproduce; written unshrunk",
            compared.seed
        );
        return;
    };
    println!(
        "shrunk seed {}'s divergence from {} stimuli to {} ({} evaluations)",
        compared.seed,
        compared.trace.len(),
        shrunk.trace.len(),
        shrunk.evaluations
    );
    if let Some(note) = shrunk.note() {
        println!("note: seed {}: {note}", compared.seed);
    }
    compared.verdict = Ok(Verdict::Diverged {
        index: shrunk.trace.len() - 1,
        judged: target,
        actual: shrunk.violation,
    });
    compared.trace = shrunk.trace;
}

impl Compared {
    /// An unexplained divergence no analysed gap covers.
    fn is_news(&self) -> bool {
        matches!(
            self.verdict,
            Ok(Verdict::Diverged {
                judged: Judged::Unexplained(None),
                ..
            })
        )
    }
}

/// Draws `seed`'s trace on the core and feeds it to both sides.
fn compare(seed: u64, restarts: Restarts, prototype: &Agent, command: &str) -> Compared {
    let record = Record {
        trace: true,
        hash: false,
        coverage: None,
    };
    let trace = simulate(seed, restarts, prototype, record).trace;
    let mut other = OtherSide::default();
    let (verdict, log) = match Peer::spawn(command) {
        Err(reason) => (Err(reason), None),
        Ok(mut peer) => match feed_both(&trace, prototype, &mut peer, &mut other) {
            Err(reason) => (Err(reason), None),
            Ok(verdict) => match LogVerdict::of(&mut peer) {
                Ok(log) => (Ok(verdict), Some(log)),
                Err(reason) => (Err(format!("asking for its session log: {reason}")), None),
            },
        },
    };
    Compared {
        seed,
        trace,
        verdict,
        broke: other.broke(),
        log,
    }
}

/// Feeds `trace` to the core and to `peer` (fresh) until their lines
/// differ, judging the other side's answers by the shared checker on the
/// way.
fn feed_both(
    trace: &[Stimulus],
    prototype: &Agent,
    peer: &mut Peer,
    other: &mut OtherSide,
) -> Result<Verdict, String> {
    let mut core = Runner::new(prototype.clone());
    let mut earlier = Vec::with_capacity(trace.len());
    for (index, stimulus) in trace.iter().enumerate() {
        let expected = core.apply(stimulus.clone());
        let answer = peer
            .answer(stimulus)
            .map_err(|error| format!("stimulus {index} `{}`: {error}", stimulus_line(stimulus)))?;
        other.judge(index, stimulus, &answer);
        let actual = answer.lines();
        let command = as_command(stimulus);
        if expected != actual {
            // The contract's state before the stimulus, rebuilt once here
            // rather than copied before every stimulus.
            let mut before = Runner::new(prototype.clone());
            for earlier in &trace[..index] {
                before.apply(earlier.clone());
            }
            let judged = Judged::of(&Divergence {
                earlier: &earlier,
                command: Some(&command),
                expected: &expected,
                actual: &actual,
                before: before.agent(),
            });
            return Ok(Verdict::Diverged {
                index,
                judged,
                actual,
            });
        }
        earlier.push(Earlier {
            command: Some(command),
            printed: expected,
        });
    }
    Ok(Verdict::Agreed)
}

/// A stimulus as the transcript command that applies it.
fn as_command(stimulus: &Stimulus) -> Command {
    match stimulus {
        Stimulus::Input(input) => Command::Input(input.clone()),
        Stimulus::Restart { lose } => Command::Restart { lose: *lose },
    }
}

/// Writes the trace up to the divergence as a transcript of the contract's
/// outputs, with the other side's lines in a comment, to
/// `out/divergence-<seed>.txn` through a temporary file and a rename (so a
/// reader never sees half a file). Refuses to replace anything but an
/// earlier divergence transcript.
fn write_divergence(prototype: &Agent, compared: &Compared, out: &Path) -> Result<PathBuf, String> {
    let Ok(Verdict::Diverged { index, actual, .. }) = &compared.verdict else {
        return Err("no divergence to write".to_owned());
    };
    let seed = compared.seed;
    let path = out.join(format!("divergence-{seed}.txn"));
    let mut text = format!(
        "# divergence: seed={seed}, stimulus {index} (the last block), unexplained by any rule\n\
         # the other implementation printed there:\n"
    );
    for line in actual {
        text.push_str(&format!("#   {line}\n"));
    }
    text.push('\n');
    text.push_str(&record(prototype, &compared.trace[..=*index]));
    // Only an earlier divergence transcript is replaced: a file of the
    // user's with the name (one that cannot be read, or a pipe, too) is kept.
    let divergence = files::Replaceable {
        path: &path,
        flag: "--out",
        chosen: files::Chosen::Default,
        ours: |path| {
            let text = files::whole_text(path)?;
            Ok(text.is_some_and(|text| files::is_transcript(&text, "# divergence: ")))
        },
    };
    if let Some(why) = divergence.foreign() {
        return Err(why);
    }
    // The named folder is made if missing (its own folder was checked to
    // exist before the run).
    let made = match std::fs::create_dir(out) {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        made => made,
    };
    made.and_then(|()| divergence.replace(text))
        .map_err(|error| format!("{}: cannot write: {error}", files::named(&path)))?;
    Ok(path)
}
