//! The harness's sweep of the core's invariants ([`Agent::check_invariants`]),
//! amortized so a long run stays linear (issue 16): a sweep visits every
//! pending message, so sweeping after every input of a run that holds
//! 20,000 messages pending was quadratic (a debug `courier replay` of 20,000
//! injects took minutes). An inbox of at most [`SWEEP_BUDGET`] messages (all
//! the model checker and the simulator reach) is still swept after every
//! input; a larger one after every `len / SWEEP_CREDIT` inputs. Nothing is
//! missed for good: a sweep that fails replays the inputs fed since the last
//! one that passed, from a copy of the agent as it stood then, sweeping
//! after each, and names the input that broke the invariants. A restart
//! (the agent resumed from its kept log) is charged like an input: a full
//! sweep after each made a run of restarts over a large inbox quadratic.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use courier_core::{Agent, Input};

/// The largest inbox swept after every input.
pub(crate) const SWEEP_BUDGET: usize = 64;

/// The pending messages a sweep of a larger inbox may visit per input,
/// amortized. A sweep's visits are random accesses into tables the size of
/// the inbox, which fall out of the cache as it grows: at 64 a replay of
/// 200,000 pending sends spent over half its time sweeping.
pub(crate) const SWEEP_CREDIT: usize = 8;

/// What a sweep checks: the agent (a stand-in in the tests below, which
/// must break the invariants on purpose, as no agent can).
pub(crate) trait Swept: Clone {
    /// The pending messages a sweep visits.
    fn pending(&self) -> usize;
    /// Feeds `input` (outputs dropped), as the harness did.
    fn feed(&mut self, input: Input);
    /// Checks the invariants; panics when they are broken.
    fn sweep(&mut self);
}

impl Swept for Agent {
    fn pending(&self) -> usize {
        self.inbox().len()
    }

    fn feed(&mut self, input: Input) {
        drop(self.transition(input));
    }

    fn sweep(&mut self) {
        self.check_invariants();
    }
}

/// When the next sweep is due and what it replays if it fails. Not state:
/// every two are equal and hash alike, so a harness's identity is its agent
/// and its checker.
#[derive(Clone, Debug)]
pub(crate) struct Sweeps<A = Agent> {
    /// Inputs fed so far, to name one.
    fed: u64,
    /// Pending messages visited on credit since the last sweep.
    credit: usize,
    /// While the inbox is large, the last sweep that passed: its agent and
    /// the inputs fed since, up to the first restart.
    since: Option<Box<Since<A>>>,
    /// How many inputs had been fed when the first restart since the last
    /// sweep that passed came, if one did: a replay cannot cross it (the
    /// resumed agent comes from the kept log, not from an input).
    restart: Option<u64>,
}

/// The agent as a sweep that passed left it, and what was fed after.
#[derive(Clone, Debug)]
struct Since<A> {
    agent: A,
    /// The number of the first input fed after it.
    first: u64,
    inputs: Vec<Input>,
}

impl<A> Default for Sweeps<A> {
    fn default() -> Self {
        Self {
            fed: 0,
            credit: 0,
            since: None,
            restart: None,
        }
    }
}

impl<A> PartialEq for Sweeps<A> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<A> Eq for Sweeps<A> {}

impl<A> std::hash::Hash for Sweeps<A> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl<A: Swept> Sweeps<A> {
    /// Counts `input` as fed (kept while a large inbox's sweep is pending).
    pub(crate) fn fed(&mut self, input: &Input) {
        self.fed += 1;
        if let Some(since) = self.since.as_mut().filter(|_| self.restart.is_none()) {
            since.inputs.push(input.clone());
        }
    }

    /// The agent was resumed from its kept log (a restart): the next sweep
    /// is due on credit, as after an input, but a failing one can replay
    /// only the inputs before the restart.
    pub(crate) fn restarted(&mut self) {
        self.restart.get_or_insert(self.fed);
        if let Some(since) = &mut self.since {
            since.inputs.shrink_to_fit();
        }
    }

    /// Sweeps `agent` now if it is due (after an input or a restart): always
    /// for a small inbox, or when no sweep of the large one passed since it
    /// grew; else
    /// once the credit pays for its length. Panics naming the input that
    /// broke the invariants.
    pub(crate) fn after_input(&mut self, agent: &mut A) {
        let len = agent.pending();
        if len > SWEEP_BUDGET && self.since.is_some() {
            self.credit = self.credit.saturating_add(SWEEP_CREDIT);
            if self.credit < len {
                return;
            }
        }
        self.credit = 0;
        if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(|| agent.sweep())) {
            self.name_the_input(panic);
        }
        self.restart = None;
        // Cloned only for a large inbox, once per `len / SWEEP_CREDIT`
        // inputs: amortized constant.
        self.since = (len > SWEEP_BUDGET).then(|| {
            Box::new(Since {
                agent: agent.clone(),
                first: self.fed + 1,
                inputs: Vec::new(),
            })
        });
    }

    /// A sweep failed: finds the input after which the invariants first
    /// broke and panics naming it (with no sweep pending, the last input
    /// fed: the one before was swept). A replay stops at a restart.
    fn name_the_input(&self, panic: Box<dyn Any + Send>) -> ! {
        let Some(since) = &self.since else {
            match self.restart {
                None => panic!(
                    "input #{} broke the core's invariants: {}",
                    self.fed,
                    message(&*panic)
                ),
                Some(at) if at == self.fed => panic!(
                    "the restart after input #{at} broke the core's invariants: {}",
                    message(&*panic)
                ),
                Some(at) => panic!(
                    "the restart after input #{at}, or an input after it up to #{}, broke \
                     the core's invariants: {}",
                    self.fed,
                    message(&*panic)
                ),
            }
        };
        let mut agent = since.agent.clone();
        for (number, input) in (since.first..).zip(&since.inputs) {
            let swept = panic::catch_unwind(AssertUnwindSafe(|| {
                agent.feed(input.clone());
                agent.sweep();
            }));
            if let Err(again) = swept {
                panic!(
                    "input #{number} ({input:?}) broke the core's invariants, found by \
                     the sweep after input #{}: {}",
                    self.fed,
                    message(&*again)
                );
            }
        }
        if self.restart.is_some() {
            panic!(
                "the sweep after input #{} found the core's invariants broken; the {} \
                 inputs fed after the last sweep that passed replay without breaking them, \
                 and a restart came after them (a replay cannot cross one): that restart \
                 or an input after it broke them: {}",
                self.fed,
                since.inputs.len(),
                message(&*panic)
            );
        }
        panic!(
            "the sweep after input #{} found the core's invariants broken, but \
             inputs #{}..={} replayed without breaking them: {}",
            self.fed,
            since.first,
            self.fed,
            message(&*panic)
        );
    }
}

/// A panic's message (an `assert!`'s text).
fn message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message")
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_core::{Message, Source};

    /// An agent whose every input adds a pending message and whose
    /// invariants break for good at input `broken_at`.
    #[derive(Clone, Debug)]
    struct Breaking {
        fed: u64,
        broken_at: u64,
        sweeps: usize,
    }

    impl Swept for Breaking {
        fn pending(&self) -> usize {
            usize::try_from(self.fed).expect("small")
        }

        fn feed(&mut self, _: Input) {
            self.fed += 1;
        }

        fn sweep(&mut self) {
            self.sweeps += 1;
            assert!(
                self.fed < self.broken_at,
                "broken since input {}",
                self.broken_at
            );
        }
    }

    fn inject() -> Input {
        Input::inject(Message::text("m", Source::user()))
    }

    /// Feeds `inputs` inputs to a [`Breaking`] agent under [`Sweeps`]: the
    /// sweeps run, and the panic's message if one broke.
    fn run(inputs: u64, broken_at: u64) -> (usize, Option<String>) {
        run_restarting(inputs, broken_at, u64::MAX)
    }

    /// [`run`], with a restart (the agent kept as it is) after every input
    /// from number `restarts_from` on.
    fn run_restarting(inputs: u64, broken_at: u64, restarts_from: u64) -> (usize, Option<String>) {
        let mut agent = Breaking {
            fed: 0,
            broken_at,
            sweeps: 0,
        };
        let mut sweeps = Sweeps::default();
        let ran = panic::catch_unwind(AssertUnwindSafe(|| {
            for number in 1..=inputs {
                agent.feed(inject());
                sweeps.fed(&inject());
                sweeps.after_input(&mut agent);
                if number >= restarts_from {
                    sweeps.restarted();
                    sweeps.after_input(&mut agent);
                }
            }
        }));
        let broke = ran.err().map(|panic| message(&*panic).to_owned());
        (agent.sweeps, broke)
    }

    /// A large inbox is swept once per `len / SWEEP_CREDIT` inputs: about
    /// `8 ln(n / 64)` sweeps over `n` inputs after the first 64, not `n`.
    #[test]
    fn a_large_inbox_is_swept_amortized() {
        let (sweeps, broke) = run(20_000, u64::MAX);
        assert_eq!(broke, None);
        assert!((64..64 + 60).contains(&sweeps), "{sweeps} sweeps");
    }

    /// A break while the inbox is small is caught at its input; one while it
    /// is large, at the next sweep, which names the input that caused it.
    #[test]
    fn a_broken_invariant_names_the_input_that_broke_it() {
        let (_, broke) = run(100, 40);
        assert_eq!(
            broke.as_deref(),
            Some("input #40 broke the core's invariants: broken since input 40")
        );
        let (_, broke) = run(20_000, 12_345);
        let broke = broke.expect("caught");
        assert!(
            broke.starts_with("input #12345 (")
                && broke.contains("found by the sweep after input #"),
            "{broke}"
        );
        let found: u64 = broke
            .split("found by the sweep after input #")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|number| number.parse().ok())
            .expect("a number");
        assert!(
            (12_345..12_345 + 12_345 / SWEEP_CREDIT as u64 + 1).contains(&found),
            "{broke}"
        );
    }

    /// A restart is charged like an input: a restart after every input over
    /// a large inbox still sweeps it amortized (a full sweep after each was
    /// quadratic), and a break after a restart is still caught, naming what
    /// a replay can and cannot tell.
    #[test]
    fn restarts_over_a_large_inbox_are_swept_amortized() {
        let (sweeps, broke) = run_restarting(20_000, u64::MAX, 1_000);
        assert_eq!(broke, None);
        assert!((64..64 + 120).contains(&sweeps), "{sweeps} sweeps");
        let (_, broke) = run_restarting(20_000, 12_345, 12_000);
        let broke = broke.expect("caught");
        assert!(
            broke.contains("found the core's invariants broken")
                && broke.contains("a replay cannot cross one")
                && broke.ends_with("broken since input 12345"),
            "{broke}"
        );
        let (_, broke) = run_restarting(20_000, 12_345, 12_346);
        assert!(
            broke
                .as_deref()
                .is_some_and(|b| b.starts_with("input #12345 (")),
            "{broke:?}"
        );
    }

    /// A small inbox is swept right after a restart: a break found there is
    /// the restart's, not the input before it (which its own sweep passed).
    #[test]
    fn a_restart_that_breaks_a_small_inbox_is_named() {
        let mut agent = Breaking {
            fed: 0,
            broken_at: u64::MAX,
            sweeps: 0,
        };
        let mut sweeps = Sweeps::default();
        for _ in 0..3 {
            agent.feed(inject());
            sweeps.fed(&inject());
            sweeps.after_input(&mut agent);
        }
        sweeps.restarted();
        // The resumed agent is broken.
        agent.broken_at = 0;
        let broke = panic::catch_unwind(AssertUnwindSafe(|| sweeps.after_input(&mut agent)));
        let broke = broke.expect_err("caught");
        assert_eq!(
            message(&*broke),
            "the restart after input #3 broke the core's invariants: broken since input 0"
        );
    }
}
