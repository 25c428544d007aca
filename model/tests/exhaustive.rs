//! The exhaustive check: the correct design holds every property and reaches
//! every goal at a small bound; every planted bug is caught by a property
//! SPEC §8 names for it, with a shortest counterexample that replays.

use courier_core::Agent;
use courier_model::{Bounds, Space, VacuityGoal, Verdict, check};

/// A bound that reaches every goal and stays fast in a debug build (the
/// default one restart included).
fn small() -> Bounds {
    Bounds {
        messages: 3,
        ..Bounds::default()
    }
}

/// [`small`] without restarts: the bugs that need none are caught faster.
fn no_restarts() -> Bounds {
    Bounds {
        restarts: 0,
        ..small()
    }
}

#[test]
fn the_design_holds_every_property_at_three_messages() {
    let checked = check(Space::new(small(), Agent::new(), true), 2, |_| {});
    assert_eq!(checked.verdict, Verdict::Holds);
    assert!(checked.counts.unique > 10_000, "{:?}", checked.counts);
    assert!(checked.counts.total > checked.counts.unique);
    assert!(checked.counts.depth >= 15, "{:?}", checked.counts);
}

#[test]
fn two_messages_leave_a_goal_unreached() {
    // Parking work with a keep-inbox cancel and running it later takes a
    // running message, a parked one and a later send: three ids. Every
    // restart goal needs fewer.
    let bounds = Bounds {
        messages: 2,
        ..Bounds::default()
    };
    let checked = check(Space::new(bounds, Agent::new(), true), 1, |_| {});
    assert_eq!(
        checked.verdict,
        Verdict::Vacuous(vec![VacuityGoal::KeptWorkRuns])
    );
}

#[test]
fn without_restarts_the_restart_goals_are_not_asked_for() {
    let space = Space::new(no_restarts(), Agent::new(), true);
    assert!(space.goals().all(|goal| !goal.needs_restart()));
    let checked = check(space, 2, |_| {});
    assert_eq!(checked.verdict, Verdict::Holds);
    // A restart at the end of every state, and cuts, add states.
    let restarts = check(Space::new(small(), Agent::new(), true), 2, |_| {});
    assert!(
        restarts.counts.unique > 2 * checked.counts.unique,
        "{:?} vs {:?}",
        restarts.counts,
        checked.counts
    );
}

#[cfg(feature = "mutants")]
mod planted {
    use courier_check::caught_by;
    use courier_core::Mutant;
    use courier_core::transcript::Script;
    use courier_model::{Counterexample, shortest_counterexample};

    use super::*;

    /// The bound that catches `mutant`: a resume bug needs a restart.
    fn bound(mutant: Mutant) -> Bounds {
        match mutant {
            Mutant::ResumeWakes
            | Mutant::ResumeNoClosers
            | Mutant::ResumeRenumbers
            | Mutant::ResumeSkipsClaims => small(),
            Mutant::NoLatch
            | Mutant::RetiringGap
            | Mutant::EagerLatch
            | Mutant::SplitClaim
            | Mutant::RequeueOnReject
            | Mutant::TurnFirst
            | Mutant::InjectWakes
            | Mutant::PromptEveryStep
            | Mutant::EarlyIdle => no_restarts(),
        }
    }

    fn caught(mutant: Mutant) -> Counterexample {
        let space = Space::new(bound(mutant), Agent::with_mutant(Some(mutant)), true);
        match check(space, 2, |_| {}).verdict {
            Verdict::Broken(counterexample) => counterexample,
            other => panic!("{mutant}: not caught: {other:?}"),
        }
    }

    /// Runs `text` against `agent`: whether every block printed what it expects.
    fn replays(text: &str, agent: Agent) -> bool {
        let script = Script::parse(text).expect("a recorded transcript parses");
        let actual = script.run(&agent).expect("no `run` command stalls");
        assert_eq!(actual.len(), script.blocks().count());
        script.mismatches(&actual).is_empty()
    }

    #[test]
    fn every_planted_bug_breaks_a_property_its_row_names() {
        for mutant in Mutant::ALL {
            let counterexample = caught(mutant);
            let property = counterexample.violation.property;
            assert!(
                caught_by(mutant).contains(&property),
                "{mutant}: caught by {property}, SPEC §8 names {:?}",
                caught_by(mutant)
            );
        }
    }

    #[test]
    fn every_counterexample_replays_under_its_bug_only() {
        for mutant in Mutant::ALL {
            let counterexample = caught(mutant);
            let text = counterexample.transcript(&Agent::with_mutant(Some(mutant)));
            assert!(
                replays(&text, Agent::with_mutant(Some(mutant))),
                "{mutant}: the counterexample does not replay:\n{text}"
            );
            assert!(
                !replays(&text, Agent::new()),
                "{mutant}: the correct design prints the same:\n{text}"
            );
        }
    }

    /// A resume bug is invisible without a restart.
    #[test]
    fn the_resume_bugs_need_a_restart() {
        for mutant in [Mutant::ResumeWakes, Mutant::ResumeSkipsClaims] {
            let space = Space::new(no_restarts(), Agent::with_mutant(Some(mutant)), true);
            assert_eq!(check(space, 2, |_| {}).verdict, Verdict::Holds, "{mutant}");
        }
    }

    /// A replay bug in an input's last write shows at once: one message's
    /// `followup`, every write kept, then a restart. Before, a restart at
    /// the end of the log resumed from the agent's lists without replaying
    /// anything, and the model cut only proper prefixes, so the claim that
    /// ends `followup A`'s writes was never replayed (found first at three
    /// messages, by a longer trace).
    #[test]
    fn a_replay_bug_in_an_inputs_last_write_shows_after_that_input() {
        let bounds = Bounds {
            messages: 1,
            ..Bounds::default()
        };
        let mutant = Mutant::ResumeSkipsClaims;
        let space = Space::new(bounds, Agent::with_mutant(Some(mutant)), true);
        let shortest = shortest_counterexample(&space).expect("caught at one message");
        assert_eq!(shortest.violation.property.name(), "replay-matches");
        let text = shortest.transcript(&Agent::with_mutant(Some(mutant)));
        assert_eq!(shortest.trace.len(), 2, "{text}");
        assert!(text.contains("\nfollowup A\n----\n"), "{text}");
        assert!(text.contains("\nrestart lose=0\n----\n"), "{text}");
    }

    #[test]
    fn the_shortest_counterexample_is_stable_and_short() {
        let space = Space::new(small(), Agent::with_mutant(Some(Mutant::InjectWakes)), true);
        let first = shortest_counterexample(&space).expect("inject-wakes is caught");
        assert_eq!(shortest_counterexample(&space), Some(first.clone()));
        // One idle inject starts a driver: nothing shorter exists.
        assert_eq!(first.trace.len(), 1);
        assert_eq!(first.violation.property.name(), "no-wake-stays-idle");
    }
}
