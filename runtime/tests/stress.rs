//! Stress: the runtime on a multi-thread tokio runtime. Eight client tasks
//! send concurrently, mixed with seeded random edits and cancels, while the
//! hooks answer after random short delays (yields, not timers: no clock).
//! Every transition the runtime runs reaches an observer, in the core's
//! order, and passes the shared `courier_check::Monitor` (the input-aware
//! properties such as no-lost-wakeup included); the run ends quiescent and
//! the checker's replay matches the inbox. At the quiescence that follows the
//! clients, every message is claimed xor discarded xor still pending, counted
//! from the live notifications; the durable log, read back from its JSONL
//! file, passes `courier-check`'s durable checks and agrees with the
//! notifications exactly.
//!
//! `cargo test -p courier-runtime --test stress` runs a small size; the full
//! size (8 x 100k sends) is
//! `cargo test -p courier-runtime --release --test stress -- --ignored --nocapture`.
#![cfg(not(loom))]

mod ledger;

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier_check::Monitor;
use courier_core::{
    CancelCause, Input, Message, MessageId, Output, PreStepDecision, Refusal, Source, StepOutcome,
    Target, Wakeup,
};
use courier_runtime::{
    Boundary, Durability, Error, Handle, JsonlFile, StepCall, Transition, pre_step_hook_fn,
    step_hook_fn,
};
use ledger::{Counts, Ledger};
use serde_json::Value;
use tokio::task::yield_now;

const TASKS: u64 = 8;
const SEED: u64 = 0x00c0_ffee;
/// Messages injected once the clients are done, to be pending at the end.
const TAIL: usize = 3;

#[test]
fn stress_small() {
    stress("small", 1_500);
}

#[test]
#[ignore = "full size; run with --release -- --ignored --nocapture"]
fn stress_full() {
    stress("full", 100_000);
}

/// A message of the stress workload: identity is all delivery reads.
fn message(id: String) -> Message {
    Message::new(MessageId::new(id), Value::Null, Source::user())
}

/// What one client task saw accepted or refused.
#[derive(Default)]
struct Accepted {
    inserted: usize,
    refused: usize,
    cancels: usize,
}

/// One client: `sends` sends of every kind, with an edit after about one in
/// ten and a cancel after about one in two hundred, yielding now and then.
async fn client(agent: Handle, task: u64, sends: usize) -> Accepted {
    let mut rng = fastrand::Rng::with_seed(SEED ^ task);
    let mut accepted = Accepted::default();
    let mut recent: VecDeque<MessageId> = VecDeque::new();
    for n in 0..sends {
        let id = format!("t{task}.{n}");
        let (target, wakeup) = match rng.u8(..10) {
            0..4 => (Target::NextTurn, Wakeup::Wake),
            4..7 => (Target::NextStep, Wakeup::Wake),
            7..9 => (Target::NextStep, Wakeup::NoWake),
            _ => (Target::NextTurn, Wakeup::NoWake),
        };
        recent.push_front(MessageId::new(id.as_str()));
        recent.truncate(16);
        tally(
            &mut accepted,
            agent.send(message(id.clone()), target, wakeup),
            1,
        );
        if rng.u8(..10) == 0 {
            edit(&agent, &mut rng, &recent, &id, &mut accepted);
        }
        if rng.u8(..200) == 0 {
            agent
                .cancel(CancelCause::User, rng.bool())
                .expect("the driver task runs");
            accepted.cancels += 1;
        }
        if rng.u8(..8) == 0 {
            yield_now().await;
        }
    }
    accepted
}

/// Counts an input's insertions; the only refusal this workload can meet is
/// an edit of a message that already left.
fn tally(accepted: &mut Accepted, result: Result<(), Error>, inserted: usize) {
    match result {
        Ok(()) => accepted.inserted += inserted,
        Err(Error::Refused(Refusal::NotPending(_))) => accepted.refused += 1,
        Err(error) => panic!("unexpected error: {error}"),
    }
}

/// One random edit; new ids derive from the send it follows (`id`).
fn edit(
    agent: &Handle,
    rng: &mut fastrand::Rng,
    recent: &VecDeque<MessageId>,
    id: &str,
    accepted: &mut Accepted,
) {
    let target = if rng.bool() {
        Target::NextTurn
    } else {
        Target::NextStep
    };
    let old = recent[rng.usize(..recent.len())].clone();
    match rng.u8(..5) {
        0 => tally(accepted, agent.append(target, message(format!("{id}a"))), 1),
        1 => tally(
            accepted,
            agent.prepend(target, message(format!("{id}p"))),
            1,
        ),
        2 => tally(accepted, agent.replace(old, message(format!("{id}r"))), 1),
        3 => tally(accepted, agent.remove(old), 0),
        _ => {
            let inserted: Vec<Message> = (0..rng.usize(..3))
                .map(|k| message(format!("{id}s{k}")))
                .collect();
            let count = inserted.len();
            let splice = agent.splice(target, rng.usize(..4), rng.usize(..3), inserted);
            tally(accepted, splice, count);
        }
    }
}

/// Counts hooks dropped by a cancel before they answered.
struct InFlight {
    cancelled: Arc<AtomicUsize>,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.answered {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits a random number of scheduler turns, then answers; a cancel that
/// drops the future first is counted.
async fn answer<T>(delay: usize, answer: T, cancelled: Arc<AtomicUsize>) -> T {
    let mut in_flight = InFlight {
        cancelled,
        answered: false,
    };
    for _ in 0..delay {
        yield_now().await;
    }
    in_flight.answered = true;
    answer
}

/// Mostly `pass`; sometimes reject, fail, or enter all but the last claimed
/// message plus a fresh context message.
fn decide(rng: &mut fastrand::Rng, boundary: Boundary, context: &mut usize) -> PreStepDecision {
    match rng.u8(..100) {
        0..2 => PreStepDecision::Reject,
        2..3 => PreStepDecision::Fail,
        3..6 => {
            let mut entering = boundary.batch;
            entering.pop();
            *context += 1;
            entering.push(message(format!("ctx.{context}")));
            PreStepDecision::Enter(entering)
        }
        _ => PreStepDecision::Pass,
    }
}

fn outcome(rng: &mut fastrand::Rng, _call: StepCall) -> StepOutcome {
    match rng.u8(..100) {
        0..60 => StepOutcome::Completed,
        60..90 => StepOutcome::ToolCalls,
        90..97 => StepOutcome::MaxTokens,
        _ => StepOutcome::Fail,
    }
}

/// What the live subscriber counted: everything, and a snapshot at each
/// `idle` (the test asks `when_idle` twice, then `dispose` once more).
struct Live {
    at_idle: Vec<Ledger>,
    total: Ledger,
    turns: usize,
}

async fn listen(mut notifications: courier_runtime::Notifications) -> Live {
    let mut live = Live {
        at_idle: Vec::new(),
        total: Ledger::default(),
        turns: 0,
    };
    while let Some(output) = notifications.recv().await {
        live.total.observe(&output);
        match output {
            Output::Idle => live.at_idle.push(live.total.clone()),
            Output::TurnStart { .. } => live.turns += 1,
            // Counted by the ledger above, or not counted at all.
            Output::Spliced(_)
            | Output::StepStart { .. }
            | Output::UserMessage(_)
            | Output::StepEnd { .. }
            | Output::TurnEnd { .. }
            | Output::Inserted { .. }
            | Output::Claimed { .. }
            | Output::Discarded { .. }
            | Output::Status { .. }
            | Output::Error { .. } => {}
        }
    }
    live
}

/// What the runtime's observer saw: the shared monitor run over every
/// transition, plus counts that show no transition was skipped.
#[derive(Default)]
struct Observed {
    /// Stops checking at the first violation (the ghost state after it
    /// means nothing), which it keeps rather than panicking, since the
    /// observer runs under the agent's lock.
    monitor: Monitor,
    transitions: usize,
    /// The transition that broke a property, described.
    violation: Option<String>,
    /// Client inputs seen, to match against what the clients sent.
    sends: usize,
    cancels: usize,
    /// The outputs of every transition, to match the live notifications.
    outputs: Ledger,
}

impl Observed {
    fn observe(&mut self, transition: Transition) {
        self.transitions += 1;
        match transition.input {
            Input::Send { .. } => self.sends += 1,
            Input::Cancel { .. } => self.cancels += 1,
            // Edits, waiters, dispose and completions: the clients count
            // none of them.
            Input::Append { .. }
            | Input::Prepend { .. }
            | Input::Replace { .. }
            | Input::Remove { .. }
            | Input::Splice { .. }
            | Input::Dispose
            | Input::WhenIdle
            | Input::PreStep(_)
            | Input::Step(_) => {}
        }
        for output in &transition.outputs {
            self.outputs.observe(output);
        }
        if let Some(violation) = self.monitor.observe(&transition, None) {
            let Transition {
                input,
                answer,
                outputs,
            } = &transition;
            self.violation = Some(format!(
                "transition {}: {violation}\n  input {input:?} -> {answer:?}\n  outputs {outputs:?}",
                self.transitions
            ));
        }
    }

    /// Whether the checker accepted every transition and is quiescent; the
    /// caller panics, after releasing the lock the observer needs.
    fn verdict(&self, when: &str) -> Result<(), String> {
        if let Some(violation) = &self.violation {
            return Err(format!("the checker refused a transition: {violation}"));
        }
        let checker = self.monitor.checker();
        if !checker.quiescent() {
            let owed: Vec<_> = checker.owed().collect();
            return Err(format!(
                "{when}: the checker is not quiescent (owed: {owed:?})"
            ));
        }
        Ok(())
    }
}

fn stress(size: &str, sends: usize) {
    let log_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("stress-{size}.jsonl"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a tokio runtime");
    let observed = Arc::new(Mutex::new(Observed::default()));
    let (accepted, live, pending, cancelled) =
        runtime.block_on(run(&log_path, sends, Arc::clone(&observed)));
    let observed = lock(&observed);
    observed
        .verdict("after dispose")
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        observed.outputs, live.total,
        "the observed transitions and the live notifications disagree"
    );
    assert_eq!(
        (observed.sends, observed.cancels),
        (TASKS as usize * sends + TAIL, accepted.cancels),
        "the observer missed client inputs (sends, cancels)"
    );
    let lines = std::io::BufRead::lines(std::io::BufReader::new(
        std::fs::File::open(&log_path).expect("the log exists"),
    ))
    .map(|line| line.expect("the log reads back"));
    let (logged, after_dispose) = Ledger::from_log(lines);
    std::fs::remove_file(&log_path).expect("the log is ours to remove");

    // The second `idle` is the quiescence before dispose (see `run`).
    assert_eq!(live.at_idle.len(), 3, "two waits and a dispose");
    let counts = live.at_idle[1].balance(&pending);
    assert!(
        counts.pending >= TAIL,
        "the tail injected while idle stays pending"
    );
    assert_eq!(
        counts.inserted, accepted.inserted,
        "accepted inserts != inserted"
    );
    assert_eq!(
        logged, live.total,
        "the durable log and the live notifications disagree"
    );
    let disposed = logged.balance(&after_dispose);
    assert_eq!(disposed.pending, 0, "dispose leaves nothing pending");
    assert_eq!(
        disposed.discarded,
        counts.discarded + counts.pending,
        "dispose discards exactly what was pending"
    );
    let Counts {
        inserted,
        claimed,
        discarded,
        pending,
    } = counts;
    let lost = inserted - claimed - discarded - pending;
    println!(
        "stress {size}: {TASKS} tasks x {sends} sends, seed {SEED:#x}: {inserted} inserted, \
         {claimed} claimed, {discarded} discarded, {pending} pending at quiescence, {lost} lost; \
         {} turns, {} cancels, {cancelled} hooks cancelled in flight, {} edits refused; \
         {} transitions checked, quiescent",
        live.turns, accepted.cancels, accepted.refused, observed.transitions
    );
}

async fn run(
    log_path: &std::path::Path,
    sends: usize,
    observed: Arc<Mutex<Observed>>,
) -> (Accepted, Live, BTreeSet<MessageId>, usize) {
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut pre_step_rng = fastrand::Rng::with_seed(SEED);
    let mut context = 0;
    let pre_step_cancelled = Arc::clone(&cancelled);
    let pre_step_hook = pre_step_hook_fn(move |boundary| {
        let delay = pre_step_rng.usize(..3);
        let decision = decide(&mut pre_step_rng, boundary, &mut context);
        answer(delay, decision, Arc::clone(&pre_step_cancelled))
    });
    let mut step_rng = fastrand::Rng::with_seed(!SEED);
    let step_cancelled = Arc::clone(&cancelled);
    let step_hook = step_hook_fn(move |call| {
        let delay = step_rng.usize(..4);
        let outcome = outcome(&mut step_rng, call);
        answer(delay, outcome, Arc::clone(&step_cancelled))
    });
    let sink = JsonlFile::create(log_path).expect("the log file can be created");
    let observer = {
        let observed = Arc::clone(&observed);
        move |transition| lock(&observed).observe(transition)
    };
    // Written behind: this test is about order and delivery, and one fsync
    // per call would make it a disk benchmark. Dispose writes the rest.
    let durability = Durability::WriteBehind {
        max_delay: Duration::from_millis(1),
    };
    let (agent, driver) = Handle::with_observer(
        "stress",
        durability,
        pre_step_hook,
        step_hook,
        sink,
        observer,
    );
    let listener = tokio::spawn(listen(agent.subscribe()));
    let driver = tokio::spawn(driver.run());
    let clients: Vec<_> = (0..TASKS)
        .map(|task| tokio::spawn(client(agent.clone(), task, sends)))
        .collect();
    let mut accepted = Accepted::default();
    for client in clients {
        let seen = client.await.expect("a client does not panic");
        accepted.inserted += seen.inserted;
        accepted.refused += seen.refused;
        accepted.cancels += seen.cancels;
    }
    agent.when_idle().await.expect("the driver task runs");
    // A tail of no-wake sends while idle: work that quiescence leaves pending.
    for n in 0..TAIL {
        let inject = agent.inject(message(format!("tail.{n}")));
        tally(&mut accepted, inject, 1);
    }
    agent.when_idle().await.expect("the driver task runs");
    let inbox = agent.inbox();
    // No input can run now: the clients are done and the agent is idle.
    let (verdict, replay) = {
        let observed = lock(&observed);
        let verdict = observed.verdict("at the last quiescence");
        (verdict, observed.monitor.checker().check_inbox(&inbox))
    };
    verdict.unwrap_or_else(|error| panic!("{error}"));
    replay.unwrap_or_else(|violation| panic!("{violation}"));
    let pending = Ledger::pending(&inbox);
    agent.dispose().await.expect("the log was written");
    drop(agent);
    driver.await.expect("the driver does not panic");
    let live = listener.await.expect("the listener does not panic");
    (accepted, live, pending, cancelled.load(Ordering::Relaxed))
}

fn lock(observed: &Mutex<Observed>) -> std::sync::MutexGuard<'_, Observed> {
    observed.lock().expect("the observer did not panic")
}
