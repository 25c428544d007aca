//! Shrinking a failing trace by delta debugging (Zeller's ddmin, in its
//! simple form): try removing chunks, halving the chunk size until single
//! stimuli; keep a candidate only when it still fails the same way (by
//! default, violates the same property; [`shrink_by`] takes any judge, e.g.
//! a differential's "still diverges the same way").
//! A restart is one more element, and once no element can go each restart
//! tries to lose fewer events (a smaller cut is a simpler crash).
//! An input may become refused once what it named is gone; it is still fed
//! and checked, and a later pass can remove it too.

use courier_check::{Property, Violation};
use courier_core::transcript::{Runner, record};
use courier_core::{Agent, Stimulus};

use crate::run::judge;

/// A hard cap on evaluations, so shrinking always ends.
const EVALUATIONS_MAX: usize = 200_000;

/// A minimal failing trace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shrunk<F = Violation> {
    /// The inputs and restarts, each needed for the failure.
    pub trace: Vec<Stimulus>,
    /// How they still fail (by default, the violation they produce).
    pub violation: F,
    /// How many candidate traces were evaluated.
    pub evaluations: usize,
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
    let shrunk = shrink_by(trace, breaks, EVALUATIONS_MAX);
    shrunk.ok_or_else(|| NotReproduced {
        expected: property,
        found: found.flatten().unwrap_or_else(|| "no violation".to_owned()),
    })
}

/// Shrinks `trace` to a shorter one that `fails` still judges failing, in at
/// most `evaluations_max` judgements. `fails` returns what a candidate fed
/// (cut where it failed, so the result replays as is) and how it failed;
/// `None` when `trace` itself does not fail.
pub fn shrink_by<F>(
    trace: &[Stimulus],
    fails: impl FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>,
    evaluations_max: usize,
) -> Option<Shrunk<F>> {
    let mut shrinking = Shrinking {
        fails,
        best: None,
        evaluations: 0,
        evaluations_max,
    };
    shrinking.try_keep(trace, |_, _| true);
    shrinking.best.as_ref()?;
    while shrinking.remove_chunks() | shrinking.lose_less() {}
    let (trace, violation) = shrinking.best?;
    Some(Shrunk {
        trace,
        violation,
        evaluations: shrinking.evaluations,
    })
}

/// The smallest failing trace so far and the evaluations spent.
struct Shrinking<J, F> {
    fails: J,
    best: Option<(Vec<Stimulus>, F)>,
    evaluations: usize,
    evaluations_max: usize,
}

impl<J: FnMut(&[Stimulus]) -> Option<(Vec<Stimulus>, F)>, F> Shrinking<J, F> {
    /// The best failing trace so far.
    fn trace(&self) -> &[Stimulus] {
        self.best.as_ref().map_or(&[], |(trace, _)| trace)
    }

    /// Keeps `candidate` (as it fed) if it still fails and `better` accepts
    /// what it fed over the best so far.
    fn try_keep(
        &mut self,
        candidate: &[Stimulus],
        better: impl Fn(&[Stimulus], &[Stimulus]) -> bool,
    ) -> bool {
        if self.evaluations >= self.evaluations_max {
            return false;
        }
        self.evaluations += 1;
        match (self.fails)(candidate) {
            Some((fed, failure)) if better(&fed, self.trace()) => {
                self.best = Some((fed, failure));
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
        while chunk >= 1 && self.evaluations < self.evaluations_max {
            let mut start = 0;
            let mut removed_any = false;
            while start < self.trace().len() && self.evaluations < self.evaluations_max {
                let end = (start + chunk).min(self.trace().len());
                let candidate = [&self.trace()[..start], &self.trace()[end..]].concat();
                if self.try_keep(&candidate, shorter) {
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
                if smaller >= lose {
                    continue;
                }
                let mut candidate = self.trace().to_vec();
                candidate[index] = Stimulus::Restart { lose: smaller };
                if self.try_keep(&candidate, no_longer_and_loses_less) {
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

/// Events lost over every restart of `trace`.
fn lost(trace: &[Stimulus]) -> usize {
    trace
        .iter()
        .map(|stimulus| match stimulus {
            Stimulus::Restart { lose } => *lose,
            Stimulus::Input(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Input, Message, Source};

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
}
