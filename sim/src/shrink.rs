//! Shrinking a failing trace by delta debugging (Zeller's ddmin, in its
//! simple form): try removing chunks, halving the chunk size until single
//! stimuli; keep a candidate only when it still fails the same way (by
//! default, violates the same property; [`shrink_by`] takes any judge, e.g.
//! a differential's "still diverges the same way").
//! A restart is one more element, and once no element can go each restart
//! tries to lose fewer events (a smaller cut is a simpler crash). A restart
//! loses the log's last events, so it first tries losing nothing at all,
//! and a chunk removed before it moves its cut back by the events the chunk
//! wrote after the cut (else every stimulus before a restart that must cut
//! at one event looks needed).
//! An input may become refused once what it named is gone; it is still fed
//! and checked, and a later pass can remove it too.
//!
//! ddmin is quadratic when the minimal trace is itself long: every single
//! stimulus is a candidate, and each replays the rest of the trace. So the
//! work is bounded by a [`Budget`] of stimuli replayed, `n log n` in the
//! trace's length (with a floor no report `courier sim` writes comes near):
//! once spent, the best trace so far is the result, still failing and
//! marked [`Extent::BudgetSpent`], so a caller can say it is not minimal.

use courier_check::{Property, Violation};
use courier_core::transcript::{Runner, record};
use courier_core::{Agent, Stimulus};

use crate::run::judge;
use crate::session::{Record, Session};

/// A hard cap on evaluations, so shrinking always ends.
const EVALUATIONS_MAX: usize = 200_000;

/// The stimuli any shrink may replay, however short its trace: far above
/// what the reports of `courier sim` (at most a few hundred stimuli) need,
/// so their shrunk traces are those of an unbounded ddmin.
const REPLAYED_FLOOR: usize = 10_000_000;

/// The stimuli a shrink may replay per stimulus of its trace and halving
/// of its length (`n log n`): the common case, a short failure in a long
/// trace, spends a few traces' worth per halving of the chunk size.
const REPLAYED_PER_HALVING: usize = 4;

/// What a shrink may spend before it stops with the best trace so far.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Budget {
    /// Candidate traces judged at most.
    pub evaluations: usize,
    /// Stimuli replayed at most, over every candidate (each candidate
    /// counts its length: a judge may feed it all).
    pub replayed: usize,
}

impl Budget {
    /// `evaluations` judgements and an `n log n` replay budget for a trace
    /// of `len` stimuli (never below `REPLAYED_FLOOR`).
    pub fn for_trace(len: usize, evaluations: usize) -> Self {
        let halvings = (usize::BITS - len.leading_zeros()) as usize;
        let replayed = len
            .saturating_mul(halvings)
            .saturating_mul(REPLAYED_PER_HALVING)
            .max(REPLAYED_FLOOR);
        Self {
            evaluations,
            replayed,
        }
    }
}

/// Whether a shrink ran to its end or stopped at its budget.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Extent {
    /// No chunk and no restart's loss could go any more: minimal as ddmin
    /// defines it.
    Minimal,
    /// The budget ran out first: shrunk as far as it allowed (the trace
    /// still fails, but a shorter one may exist).
    BudgetSpent,
}

/// A shrunk failing trace: minimal, unless its budget ran out first.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shrunk<F = Violation> {
    /// The inputs and restarts (each needed for the failure, when
    /// [`Extent::Minimal`]).
    pub trace: Vec<Stimulus>,
    /// How they still fail (by default, the violation they produce).
    pub violation: F,
    /// How many candidate traces were evaluated.
    pub evaluations: usize,
    /// How many stimuli those candidates held, all together: the replay
    /// work, bounded by [`Budget::replayed`].
    pub replayed: usize,
    /// Whether the search ended or its budget did.
    pub extent: Extent,
}

impl<F> Shrunk<F> {
    /// What to tell a user when the budget cut the search short (the trace
    /// still fails, but may not be minimal); `None` when it is minimal.
    pub fn note(&self) -> Option<String> {
        match self.extent {
            Extent::Minimal => None,
            Extent::BudgetSpent => Some(format!(
                "shrunk as far as the budget allowed ({} evaluations, {} stimuli replayed): \
                 the trace still fails, a shorter one may exist",
                self.evaluations, self.replayed
            )),
        }
    }
}

/// The trace to shrink does not fail the way the report says.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the trace does not violate {expected} ({found})")]
pub struct NotReproduced {
    /// The property it should break.
    pub expected: Property,
    /// What it did instead.
    pub found: String,
}

/// Shrinks `trace` run on `prototype` to a shorter trace that still breaks
/// `property`. Every kept trace is what its evaluation fed (cut at the
/// violation, plus any liveness completions), so the result replays as is.
pub fn shrink(
    prototype: &Agent,
    trace: &[Stimulus],
    property: Property,
) -> Result<Shrunk, NotReproduced> {
    // What the whole trace broke, kept from the first judgement (the
    // trace itself), for the error when it is not `property`.
    let mut found = None;
    let breaks = |candidate: &[Stimulus]| {
        let (violation, fed) = judge(prototype, candidate);
        if found.is_none() {
            found = Some(violation.as_ref().map(ToString::to_string));
        }
        let violation = violation.filter(|v| v.property == property)?;
        Some((fed, violation))
    };
    let budget = Budget::for_trace(trace.len(), EVALUATIONS_MAX);
    let shrunk = search(
        trace,
        breaks,
        budget,
        Some(&mut |kept: &[Stimulus]| log_lengths(prototype, kept)),
    );
    shrunk.ok_or_else(|| NotReproduced {
        expected: property,
        found: found.flatten().unwrap_or_else(|| "no violation".to_owned()),
    })
}

/// Shrinks `trace` to a shorter one that `fails` still judges failing, in at
/// most `evaluations_max` judgements (and [`Budget::for_trace`]'s replay
/// budget). `fails` returns what a candidate fed (cut where it failed, so
/// the result replays as is) and how it failed; `None` when `trace` itself
/// does not fail.
pub fn shrink_by<F>(
    trace: &[Stimulus],
    fails: impl FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>,
    evaluations_max: usize,
) -> Option<Shrunk<F>> {
    shrink_within(
        trace,
        fails,
        Budget::for_trace(trace.len(), evaluations_max),
    )
}

/// [`shrink_by`] within `budget`.
pub fn shrink_within<F>(
    trace: &[Stimulus],
    fails: impl FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>,
    budget: Budget,
) -> Option<Shrunk<F>> {
    search(trace, fails, budget, None)
}

/// The durable log's length before each stimulus of a trace, and after
/// its last (see [`log_lengths`]).
type LogLengths<'a> = &'a mut dyn FnMut(&[Stimulus]) -> Vec<usize>;

/// [`shrink_within`], keeping each restart's cut where it was when the
/// stimuli before it go, given `log` (see [`Shrinking::keep_cut`]).
fn search<F>(
    trace: &[Stimulus],
    fails: impl FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>,
    budget: Budget,
    log: Option<LogLengths<'_>>,
) -> Option<Shrunk<F>> {
    let mut shrinking = Shrinking {
        fails,
        best: None,
        candidate: Vec::new(),
        evaluations: 0,
        replayed: 0,
        budget,
        spent: false,
        log,
        lengths: None,
    };
    shrinking.judge_whole(trace);
    shrinking.best.as_ref()?;
    shrinking.lose_nothing();
    while shrinking.remove_chunks() | shrinking.lose_less() {}
    let (trace, violation) = shrinking.best?;
    Some(Shrunk {
        trace,
        violation,
        evaluations: shrinking.evaluations,
        replayed: shrinking.replayed,
        extent: match shrinking.spent {
            true => Extent::BudgetSpent,
            false => Extent::Minimal,
        },
    })
}

/// The durable log's length before each stimulus of `trace` run on
/// `prototype`, and after its last: where each restart cuts.
fn log_lengths(prototype: &Agent, trace: &[Stimulus]) -> Vec<usize> {
    let mut session = Session::new(prototype, Record::default());
    let mut lengths = Vec::with_capacity(trace.len() + 1);
    for stimulus in trace {
        lengths.push(session.log().len());
        // A kept trace breaks its property only at its end (or in its
        // liveness completions); the lengths are what counts here.
        drop(session.apply(stimulus.clone()));
    }
    lengths.push(session.log().len());
    lengths
}

/// The smallest failing trace so far, the candidate being judged, and the
/// budget spent.
struct Shrinking<'a, J, F> {
    fails: J,
    best: Option<(Vec<Stimulus>, F)>,
    /// One buffer every candidate is built in, so a long trace's candidates
    /// are not each a fresh allocation.
    candidate: Vec<Stimulus>,
    evaluations: usize,
    replayed: usize,
    budget: Budget,
    /// A candidate was refused for the budget: every pass stops.
    spent: bool,
    /// Measures a trace's durable log, when the judge runs the core.
    log: Option<LogLengths<'a>>,
    /// The best trace's log lengths, once measured (`None` when stale).
    lengths: Option<Vec<usize>>,
}

impl<J: FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>, F> Shrinking<'_, J, F> {
    /// The best failing trace so far.
    fn trace(&self) -> &[Stimulus] {
        self.best.as_ref().map_or(&[], |(trace, _)| trace)
    }

    /// Judges `trace`, the whole trace to shrink, whatever the budget.
    fn judge_whole(&mut self, trace: &[Stimulus]) {
        self.evaluations += 1;
        self.replayed += trace.len();
        self.best = (self.fails)(trace);
    }

    /// Makes the candidate the best trace without its stimuli in `removed`.
    fn stage_without(&mut self, removed: std::ops::Range<usize>) {
        let best = self.best.as_ref().map_or(&[][..], |(trace, _)| trace);
        self.candidate.clear();
        self.candidate.extend_from_slice(&best[..removed.start]);
        self.candidate.extend_from_slice(&best[removed.end..]);
        self.keep_cut(removed);
    }

    /// A restart loses the last `lose` events of the log, so removing
    /// stimuli whose events it lost moves its cut back over events it kept:
    /// every stimulus before it looks needed, and ddmin goes quadratic (or
    /// worse: [`Shrinking::lose_less`] then moves the cut one event per
    /// round). So the first restart after `removed` loses that many fewer
    /// events, cutting where it did (when no restart is removed and the log
    /// can be measured within the budget).
    fn keep_cut(&mut self, removed: std::ops::Range<usize>) {
        let is_restart = |stimulus: &Stimulus| matches!(stimulus, Stimulus::Restart { .. });
        let Some((best, _)) = &self.best else {
            return;
        };
        if removed.is_empty() || best[removed.clone()].iter().any(is_restart) {
            return;
        }
        let Some(after) = best[removed.end..].iter().position(is_restart) else {
            return;
        };
        let restart = removed.end + after;
        let Stimulus::Restart { lose } = best[restart] else {
            return;
        };
        if self.lengths.is_none() {
            let replayed = self.replayed.saturating_add(best.len());
            let Some(log) = self
                .log
                .as_mut()
                .filter(|_| replayed <= self.budget.replayed)
            else {
                return;
            };
            self.replayed = replayed;
            self.lengths = Some(log(best));
        }
        let Some(lengths) = &self.lengths else {
            return;
        };
        let logged = lengths[restart];
        let lose = lose.min(logged);
        let cut = logged - lose;
        let lost = lengths[removed.end].saturating_sub(lengths[removed.start].max(cut));
        if lost > 0 {
            self.candidate[restart - removed.len()] = Stimulus::Restart { lose: lose - lost };
        }
    }

    /// Keeps the candidate (as it fed) if the budget allows judging it, it
    /// still fails and `better` accepts what it fed over the best so far.
    fn try_keep(&mut self, better: impl Fn(&[Stimulus], &[Stimulus]) -> bool) -> bool {
        let replayed = self.replayed.saturating_add(self.candidate.len());
        if self.evaluations >= self.budget.evaluations || replayed > self.budget.replayed {
            self.spent = true;
            return false;
        }
        self.evaluations += 1;
        self.replayed = replayed;
        match (self.fails)(&self.candidate) {
            Some((fed, failure)) if better(&fed, self.trace()) => {
                self.best = Some((fed, failure));
                self.lengths = None;
                true
            }
            Some(_) | None => false,
        }
    }

    /// ddmin: removes chunks of stimuli, halving the chunk size down to
    /// one. Returns whether anything went.
    fn remove_chunks(&mut self) -> bool {
        let shorter = |fed: &[Stimulus], best: &[Stimulus]| fed.len() < best.len();
        let mut shrunk = false;
        let mut chunk = self.trace().len().div_ceil(2);
        while chunk >= 1 && !self.spent {
            let mut start = 0;
            let mut removed_any = false;
            while start < self.trace().len() && !self.spent {
                let end = (start + chunk).min(self.trace().len());
                self.stage_without(start..end);
                if self.try_keep(shorter) {
                    removed_any = true;
                } else {
                    start += chunk;
                }
            }
            shrunk |= removed_any;
            if !removed_any {
                chunk /= 2;
            }
        }
        shrunk
    }

    /// One candidate before ddmin: every restart loses nothing. A restart
    /// whose loss is cut to fit the trace makes every stimulus before it
    /// look needed (removing one moves the cut), so ddmin would replay the
    /// whole trace once per stimulus before [`Shrinking::lose_less`] ran.
    fn lose_nothing(&mut self) {
        let loses =
            |stimulus: &Stimulus| matches!(stimulus, Stimulus::Restart { lose } if *lose > 0);
        if !self.trace().iter().any(loses) {
            return;
        }
        self.stage_without(0..0);
        for stimulus in &mut self.candidate {
            if let Stimulus::Restart { lose } = stimulus {
                *lose = 0;
            }
        }
        self.try_keep(|fed, best| fed.len() <= best.len() && lost(fed) < lost(best));
    }

    /// Each restart tries to lose nothing, then half as much, then one
    /// event less. Returns whether any restart changed.
    fn lose_less(&mut self) -> bool {
        let no_longer_and_loses_less = |fed: &[Stimulus], best: &[Stimulus]| {
            fed.len() < best.len() || (fed.len() == best.len() && lost(fed) < lost(best))
        };
        let mut changed = false;
        for index in 0..self.trace().len() {
            let Some(Stimulus::Restart { lose }) = self.trace().get(index).cloned() else {
                continue;
            };
            for smaller in [0, lose / 2, lose.saturating_sub(1)] {
                if smaller >= lose || self.spent {
                    continue;
                }
                self.stage_without(0..0);
                self.candidate[index] = Stimulus::Restart { lose: smaller };
                if self.try_keep(no_longer_and_loses_less) {
                    changed = true;
                    break;
                }
            }
        }
        changed
    }
}

/// A shrunk trace as a transcript recorded on `prototype`, ending with an
/// `inbox` query: a violation that lives in the pending lists (a restart's
/// replay that brings claimed messages back) prints nothing of its own, so
/// without the query the correct core would print the same transcript.
pub fn transcript(prototype: &Agent, trace: &[Stimulus]) -> String {
    let mut text = record(prototype, trace);
    let mut runner = Runner::new(prototype.clone());
    for stimulus in trace {
        runner.apply(stimulus.clone());
    }
    let inbox = runner.execute("inbox").expect("a query never stalls");
    text.push_str("inbox\n----\n");
    for line in inbox {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Events lost over every restart of `trace` (saturating: a report may ask
/// a restart to lose up to `usize::MAX`, clamped to the log when run).
fn lost(trace: &[Stimulus]) -> usize {
    trace
        .iter()
        .map(|stimulus| match stimulus {
            Stimulus::Restart { lose } => *lose,
            Stimulus::Input(_) => 0,
        })
        .fold(0, usize::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Input, Message, Source};

    /// `n` injects of distinct messages.
    fn injects(n: usize) -> Vec<Stimulus> {
        (0..n)
            .map(|k| {
                Stimulus::Input(Input::inject(Message::text(
                    format!("m{k}").as_str(),
                    Source::user(),
                )))
            })
            .collect()
    }

    /// A judge that fails while a candidate holds `needed` in order, cut
    /// after the last of them (as a run stops at its violation): linear, so
    /// the shrinker's own work is what the tests below count.
    fn holds(needed: &[Stimulus]) -> impl FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, ())> + '_ {
        move |candidate| {
            let mut rest = needed.iter().peekable();
            let mut cut = 0;
            for (k, stimulus) in candidate.iter().enumerate() {
                if rest.next_if(|next| *next == stimulus).is_some() {
                    cut = k + 1;
                }
            }
            rest.peek()
                .is_none()
                .then(|| (candidate[..cut].to_vec(), ()))
        }
    }

    /// The common case, two stimuli far apart in a long trace, costs
    /// `n log n` replayed stimuli, not the floor: ddmin drops halves first.
    #[test]
    fn a_short_failure_in_a_long_trace_shrinks_in_n_log_n() {
        let trace = injects(100_000);
        let needed = [trace[10].clone(), trace[99_990].clone()];
        let shrunk = shrink_by(&trace, holds(&needed), EVALUATIONS_MAX).expect("it fails");
        assert_eq!(shrunk.trace, needed);
        assert_eq!(shrunk.extent, Extent::Minimal);
        let n_log_n = 100_000 * 17;
        assert!(
            shrunk.replayed <= REPLAYED_PER_HALVING * n_log_n,
            "{} stimuli replayed",
            shrunk.replayed
        );
    }

    /// A long trace that is all needed makes ddmin quadratic (each single
    /// stimulus replays the rest: about 2n² = 32,000,000 stimuli here): the
    /// budget stops it, and the result is a failing trace, marked.
    #[test]
    fn a_long_trace_all_needed_stops_at_the_budget_still_failing() {
        let trace = injects(4_000);
        let budget = Budget::for_trace(trace.len(), EVALUATIONS_MAX);
        let mut judge = holds(&trace);
        let shrunk = shrink_by(&trace, &mut judge, EVALUATIONS_MAX).expect("it fails");
        assert_eq!(shrunk.extent, Extent::BudgetSpent);
        assert!(shrunk.replayed <= budget.replayed, "{shrunk:?}");
        assert!(judge(&shrunk.trace).is_some(), "the result no longer fails");
        // Within an n log n budget (no floor) it stops as soon, as valid.
        let tight = Budget {
            evaluations: EVALUATIONS_MAX,
            replayed: 4 * 4_000 * 12,
        };
        let shrunk = shrink_within(&trace, &mut judge, tight).expect("it fails");
        assert_eq!(shrunk.extent, Extent::BudgetSpent);
        assert!(shrunk.replayed <= tight.replayed, "{shrunk:?}");
        assert_eq!(shrunk.trace, trace);
    }

    /// The evaluation cap stops a search as the replay budget does, marked.
    #[test]
    fn the_evaluation_cap_marks_the_result() {
        let trace = injects(64);
        let shrunk = shrink_by(&trace, holds(&trace), 10).expect("it fails");
        assert_eq!(
            (shrunk.evaluations, shrunk.extent),
            (10, Extent::BudgetSpent)
        );
        let shrunk = shrink_by(&trace[..1], holds(&trace[..1]), 10).expect("it fails");
        assert_eq!(shrunk.extent, Extent::Minimal);
    }

    #[test]
    fn a_trace_that_does_not_break_the_property_says_what_it_broke_instead() {
        let followup = Input::followup(Message::text("A", Source::user()));
        let trace = [Stimulus::Input(followup)];
        let refused = shrink(&Agent::new(), &trace, Property::NoLostWakeup);
        assert_eq!(
            refused,
            Err(NotReproduced {
                expected: Property::NoLostWakeup,
                found: "no violation".to_owned(),
            })
        );
    }

    /// The report of a planted bug shrunk for another property than the
    /// one it breaks names the one it breaks, from the first judgement.
    #[cfg(feature = "mutants")]
    #[test]
    fn a_trace_breaking_another_property_names_it() {
        let inject = Input::inject(Message::text("F", Source::user()));
        let prototype = Agent::with_mutant(Some(courier_core::Mutant::InjectWakes));
        let refused = shrink(&prototype, &[Stimulus::Input(inject)], Property::NoGaps);
        let found = refused.expect_err("no gap").found;
        assert!(found.starts_with("no-wake-stays-idle"), "{found}");
    }

    /// The budget and the first "lose nothing" candidate make no report of
    /// `courier sim` shrink worse: each planted bug's lowest failing seed in
    /// 0..300 shrinks, to the end of the search, to at most the length it
    /// did before them (measured on the branch's base, `courier shrink` of
    /// `courier sim --seeds 0..300 --mutant NAME`'s report).
    #[cfg(feature = "mutants")]
    #[test]
    fn the_reports_of_every_planted_bug_shrink_as_before() {
        use crate::{Record, Restarts, simulate};
        use courier_core::Mutant;
        let before = [
            (Mutant::NoLatch, 4),
            (Mutant::RetiringGap, 3),
            (Mutant::EagerLatch, 5),
            (Mutant::SplitClaim, 5),
            (Mutant::RequeueOnReject, 2),
            (Mutant::TurnFirst, 5),
            (Mutant::InjectWakes, 1),
            (Mutant::PromptEveryStep, 4),
            (Mutant::EarlyIdle, 5),
            (Mutant::ResumeWakes, 2),
            (Mutant::ResumeNoClosers, 2),
            (Mutant::ResumeRenumbers, 3),
            (Mutant::ResumeSkipsClaims, 2),
        ];
        assert_eq!(before.len(), Mutant::ALL.len(), "a planted bug is missing");
        for (mutant, length) in before {
            let prototype = Agent::with_mutant(Some(mutant));
            let record = || Record {
                trace: true,
                ..Record::default()
            };
            let (trace, violation) = (0..300)
                .map(|seed| simulate(seed, Restarts::Drawn, &prototype, record()))
                .find_map(|run| Some((run.trace, run.violation?)))
                .expect("a seed fails");
            let shrunk = shrink(&prototype, &trace, violation.property).expect("it reproduces");
            assert_eq!(shrunk.extent, Extent::Minimal, "{mutant}");
            assert!(
                shrunk.trace.len() <= length,
                "{mutant}: {} stimuli, {length} before",
                shrunk.trace.len()
            );
        }
    }

    /// Losses add up saturating: a report's `lose` may be `usize::MAX`
    /// (it panicked in debug, and wrapped to a small total in release).
    #[test]
    fn the_events_lost_saturate() {
        let restart = |lose| Stimulus::Restart { lose };
        assert_eq!(lost(&[restart(usize::MAX), restart(8)]), usize::MAX);
        assert_eq!(lost(&[restart(2), restart(3)]), 5);
    }

    /// A restart that must cut the log at one event (here, lose the end of
    /// the turn before 500 inject/remove pairs: resume-renumbers then opens
    /// turn 1 twice) made every pair look needed: before each restart kept
    /// its cut, the 505 stimuli stopped at the replay budget, shrunk to 486,
    /// after 10 million stimuli replayed. Now it shrinks to the three that
    /// matter.
    #[cfg(feature = "mutants")]
    #[test]
    fn a_restart_keeps_its_cut_while_the_stimuli_before_it_go() {
        use courier_core::transcript::{Command, parse_command};
        let input = |line: &str| match parse_command(line) {
            Ok(Command::Input(input)) => Stimulus::Input(input),
            other => panic!("{line}: {other:?}"),
        };
        let pairs = 250;
        let mut trace = vec![
            input("followup A"),
            input("pre-step pass"),
            input("step completed"),
        ];
        for k in 0..pairs {
            trace.push(input(&format!("inject y{k}")));
            trace.push(input(&format!("remove y{k}")));
        }
        trace.push(Stimulus::Restart {
            lose: 2 * pairs + 1,
        });
        trace.push(input("followup B"));
        let prototype = Agent::with_mutant(Some(courier_core::Mutant::ResumeRenumbers));
        let shrunk = shrink(&prototype, &trace, Property::Balanced).expect("it breaks balanced");
        assert_eq!(shrunk.extent, Extent::Minimal);
        assert_eq!(shrunk.trace.len(), 3, "{:?}", shrunk.trace);
        assert!(
            shrunk.replayed < 20 * trace.len(),
            "{} replayed",
            shrunk.replayed
        );
    }
}
