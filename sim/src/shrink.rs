//! Shrinking a failing trace by delta debugging (Zeller's ddmin, in its
//! simple form): try removing chunks, halving the chunk size until single
//! inputs; keep a candidate only when it still violates the same property.
//! An input may become refused once what it named is gone; it is still fed
//! and checked, and a later pass can remove it too.

use courier_check::{Property, Violation};
use courier_core::{Agent, Input};

use crate::run::evaluate;

/// A hard cap on evaluations, so shrinking always ends.
const EVALUATIONS_MAX: usize = 200_000;

/// A minimal failing trace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shrunk {
    /// The inputs, each needed for the violation.
    pub inputs: Vec<Input>,
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
    trace: &[Input],
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
    let mut best = (first.fed, violation);
    let mut evaluations = 1;
    let mut chunk = best.0.len().div_ceil(2);
    while chunk >= 1 && evaluations < EVALUATIONS_MAX {
        let mut start = 0;
        let mut removed_any = false;
        while start < best.0.len() && evaluations < EVALUATIONS_MAX {
            let end = (start + chunk).min(best.0.len());
            let candidate: Vec<Input> = [&best.0[..start], &best.0[end..]].concat();
            let judged = evaluate(prototype, &candidate);
            evaluations += 1;
            match judged.violation {
                Some(violation)
                    if violation.property == property && judged.fed.len() < best.0.len() =>
                {
                    best = (judged.fed, violation);
                    removed_any = true;
                }
                _ => start += chunk,
            }
        }
        if !removed_any {
            chunk /= 2;
        }
    }
    Ok(Shrunk {
        inputs: best.0,
        violation: best.1,
        evaluations,
    })
}
