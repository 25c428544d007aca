//! Shrinking a failing trace by delta debugging (Zeller's ddmin, in its
//! simple form): try removing chunks, halving the chunk size until single
//! stimuli; keep a candidate only when it still violates the same property.
//! A restart is one more element, and once no element can go each restart
//! tries to lose fewer events (a smaller cut is a simpler crash).
//! An input may become refused once what it named is gone; it is still fed
//! and checked, and a later pass can remove it too.

use courier_check::{Property, Violation};
use courier_core::transcript::{Runner, record};
use courier_core::{Agent, Stimulus};

use crate::run::evaluate;

/// A hard cap on evaluations, so shrinking always ends.
const EVALUATIONS_MAX: usize = 200_000;

/// A minimal failing trace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shrunk {
    /// The inputs and restarts, each needed for the violation.
    pub trace: Vec<Stimulus>,
    /// The violation they still produce.
    pub violation: Violation,
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
    let first = evaluate(prototype, trace);
    let violation = match first.violation {
        Some(violation) if violation.property == property => violation,
        other => {
            return Err(NotReproduced {
                expected: property,
                found: other.map_or_else(|| "no violation".to_owned(), |v| v.to_string()),
            });
        }
    };
    let mut shrinking = Shrinking {
        prototype,
        property,
        best: (first.fed, violation),
        evaluations: 1,
    };
    while shrinking.remove_chunks() | shrinking.lose_less() {}
    let (trace, violation) = shrinking.best;
    Ok(Shrunk {
        trace,
        violation,
        evaluations: shrinking.evaluations,
    })
}

/// The smallest failing trace so far and the evaluations spent.
struct Shrinking<'a> {
    prototype: &'a Agent,
    property: Property,
    best: (Vec<Stimulus>, Violation),
    evaluations: usize,
}

impl Shrinking<'_> {
    /// Keeps `candidate` (as evaluated) if it breaks the property and
    /// `better` accepts what it fed over the best so far.
    fn try_keep(
        &mut self,
        candidate: &[Stimulus],
        better: impl Fn(&[Stimulus], &[Stimulus]) -> bool,
    ) -> bool {
        if self.evaluations >= EVALUATIONS_MAX {
            return false;
        }
        let judged = evaluate(self.prototype, candidate);
        self.evaluations += 1;
        match judged.violation {
            Some(violation)
                if violation.property == self.property && better(&judged.fed, &self.best.0) =>
            {
                self.best = (judged.fed, violation);
                true
            }
            _ => false,
        }
    }

    /// ddmin: removes chunks of stimuli, halving the chunk size down to
    /// one. Returns whether anything went.
    fn remove_chunks(&mut self) -> bool {
        let shorter = |fed: &[Stimulus], best: &[Stimulus]| fed.len() < best.len();
        let mut shrunk = false;
        let mut chunk = self.best.0.len().div_ceil(2);
        while chunk >= 1 && self.evaluations < EVALUATIONS_MAX {
            let mut start = 0;
            let mut removed_any = false;
            while start < self.best.0.len() && self.evaluations < EVALUATIONS_MAX {
                let end = (start + chunk).min(self.best.0.len());
                let candidate = [&self.best.0[..start], &self.best.0[end..]].concat();
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
        for index in 0..self.best.0.len() {
            let Some(Stimulus::Restart { lose }) = self.best.0.get(index).cloned() else {
                continue;
            };
            for smaller in [0, lose / 2, lose.saturating_sub(1)] {
                if smaller >= lose {
                    continue;
                }
                let mut candidate = self.best.0.clone();
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
