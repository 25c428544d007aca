//! `courier demo [--log FILE]`: a scripted session on the async runtime with
//! a fake model the script answers step by step. It shows followups, a steer
//! during a step, an idle inject, a keep-inbox cancel that reaches the step in
//! flight, and a send latched behind it and replayed. `>` lines are the
//! script, `model` lines the fake model, and the rest are the core's outputs
//! in transcript form (live ones start with `~`), printed as they happen.
//!
//! `courier demo --crash` tells a crash instead: the driver dies mid-step
//! (in process: the tokio runtime and every handle vanish without a
//! dispose, as in a kill, and only the log file stays), then
//! `Handle::resume` starts from the file. It prints the closers the resume
//! appended, the resumed inbox and turn number, and the next turn.
//!
//! The output is deterministic: the runtime is single-threaded, and the
//! script waits at points the session must reach (the model entered a step,
//! the agent is idle) before printing. The cancel and the latched send are
//! two calls with no await between them, so the send always lands while the
//! aborted turn is still running.

use std::future::ready;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use courier::files::{self, Output, Staged};

use courier_core::transcript::command_line;
use courier_core::{CancelCause, Input, Message, PreStepDecision, Source, StepOutcome, Target};
use courier_runtime::{
    Error, Handle, JsonlFile, MemoryLog, Notifications, StepCall, StepHook, kept, pre_step_hook_fn,
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Arguments of `courier demo`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Also write the durable session log, as JSONL, to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Crash the driver mid-turn and resume from the log file (a temporary
    /// one unless `--log` names it).
    #[arg(long)]
    crash: bool,
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let outputs: Vec<Output<'_>> = args
        .log
        .iter()
        .map(|path| Output {
            flag: "--log",
            path,
        })
        .collect();
    if let Err(error) = files::check_paths(&[], &outputs) {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    if let Some(why) = args.log.as_deref().and_then(foreign_log) {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    if args.crash {
        return crash_main(args.log.as_deref());
    }
    let runtime = current_thread();
    let (events, step_hook) = ScriptedStepHook::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    // The log is written beside its path and renamed over it once whole.
    let staged = match args.log.as_deref().map(stage).transpose() {
        Ok(staged) => staged,
        Err(error) => {
            let path = args.log.as_deref().unwrap_or(Path::new(""));
            eprintln!(
                "error: --log {}: cannot create: {error}",
                files::named(path)
            );
            return ExitCode::from(2);
        }
    };
    let (agent, driver, staged) = match staged {
        None => {
            let (agent, driver) = Handle::new("demo", pre_step_hook, step_hook, MemoryLog::new());
            (agent, driver, None)
        }
        Some((staged, file)) => {
            let (agent, driver) = Handle::new("demo", pre_step_hook, step_hook, file);
            (agent, driver, Some(staged))
        }
    };
    let written = runtime.block_on(async {
        let driver = tokio::spawn(driver.run());
        let mut session = Session {
            printer: agent.subscribe(),
            events,
        };
        // A log that cannot be written fails the script's next call; the
        // agent is still disposed, and the first error is the one told.
        let scripted = session.script(&agent).await;
        let written = agent.dispose().await;
        session.print_outputs();
        drop(agent);
        driver.await.expect("the driver does not panic");
        scripted.and(written)
    });
    let written = written.map_err(|error| error.to_string()).and_then(|()| {
        staged
            .map_or(Ok(()), Staged::commit)
            .map_err(|e| e.to_string())
    });
    match (written, &args.log) {
        (Ok(()), Some(path)) => courier::status!("log written to {}", files::named(path)),
        (Ok(()), None) => {}
        (Err(error), log) => {
            let path = log.as_deref().unwrap_or(Path::new("(in memory)"));
            eprintln!("error: --log {}: cannot write: {error}", files::named(path));
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a single-threaded tokio runtime")
}

/// Why the file at `log` must not be replaced, if it is a user's: the demo
/// writes a fresh session log, so it replaces only one of its own (a
/// session named `demo`, or an empty file); a device or pipe
/// (`/dev/stdout`) is written in place, as every output is.
fn foreign_log(log: &Path) -> Option<String> {
    files::Replaceable {
        path: log,
        flag: "--log",
        chosen: files::Chosen::ByUser,
        ours: |path| {
            let Some(text) = files::whole_text(path)? else {
                return Ok(false);
            };
            let mut lines = text.lines().map(serde_json::from_str::<serde_json::Value>);
            let header = lines.next().and_then(Result::ok);
            let demo =
                header.is_some_and(|header| header["type"] == "session" && header["id"] == "demo");
            Ok(demo && lines.all(|line| line.is_ok()))
        },
    }
    .foreign()
}

/// `courier demo --crash`: the log goes to `log`, or to a temporary file
/// removed at the end.
fn crash_main(log: Option<&Path>) -> ExitCode {
    // A log the user names is written beside it and renamed over it whole.
    let staged = match log.map(Staged::new).transpose() {
        Ok(staged) => staged,
        Err(error) => {
            let path = log.unwrap_or(Path::new(""));
            eprintln!(
                "error: --log {}: cannot create: {error}",
                files::named(path)
            );
            return ExitCode::from(2);
        }
    };
    // Else a fresh temporary file (never a predictable name another user
    // could have linked elsewhere), removed when dropped: the story is
    // printed, nothing is kept.
    let temporary = match tempfile::Builder::new()
        .prefix("courier-demo-")
        .suffix(".jsonl")
        .tempfile()
    {
        Ok(temporary) => files::Temporary::register(temporary),
        Err(error) => {
            eprintln!("error: cannot create a temporary log: {error}");
            return ExitCode::from(2);
        }
    };
    let told = crash_and_resume(staged.as_ref().map_or(temporary.path(), Staged::path));
    let told = match staged {
        Some(staged) => told.and_then(|()| {
            staged
                .commit()
                .map_err(|error| format!("cannot write: {error}"))
        }),
        None => told,
    };
    match told {
        Ok(()) => {
            if let Some(path) = log {
                courier::status!("log written to {}", files::named(path));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            match log {
                Some(path) => eprintln!("error: --log {}: {error}", files::named(path)),
                None => eprintln!("error: {}: {error}", files::named(temporary.path())),
            }
            ExitCode::from(2)
        }
    }
}

fn crash_and_resume(path: &Path) -> Result<(), String> {
    let file = JsonlFile::create(path).map_err(|error| format!("cannot create: {error}"))?;
    let (events, step_hook) = ScriptedStepHook::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let (agent, driver) = Handle::new("demo", pre_step_hook, step_hook, file);
    let runtime = current_thread();
    let before = runtime.block_on(async {
        tokio::spawn(driver.run());
        let mut session = Session {
            printer: agent.subscribe(),
            events,
        };
        session.before_the_crash(&agent).await
    });
    // The crash: the driver task dies with its runtime, mid-step; then the
    // handle goes too, which disposes nothing (its driver task is gone, as in
    // a killed process) and closes the file, releasing its one-writer lock.
    // Under the default `Sync` policy every accepted call's lines are in the
    // file already.
    drop(runtime);
    drop(agent);
    before.map_err(|error| format!("cannot write: {error}"))?;

    let kept = kept::read_file(path).map_err(|error| error.to_string())?;
    courier::status!("> resume             (the log file is all that is left)");
    for closer in kept.closers() {
        courier::status!("  {closer}   (closer, appended to the file)");
    }
    let (events, step_hook) = ScriptedStepHook::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let (agent, driver) =
        Handle::resume(path, pre_step_hook, step_hook).map_err(|error| error.to_string())?;
    let inbox = agent.inbox();
    for target in [Target::NextStep, Target::NextTurn] {
        let ids: Vec<&str> = inbox.list(target).iter().map(|m| m.id().as_str()).collect();
        courier::status!("  resumed {target}: [{}]", ids.join(" "));
    }
    let next = kept.next_turn();
    courier::status!("  resumed idle; the next turn is {next}");
    let runtime = current_thread();
    runtime.block_on(async {
        let driver = tokio::spawn(driver.run());
        let mut session = Session {
            printer: agent.subscribe(),
            events,
        };
        let scripted = session.after_the_resume(&agent).await;
        let written = agent.dispose().await;
        session.print_outputs();
        drop(agent);
        driver.await.expect("the driver does not panic");
        scripted
            .and(written)
            .map_err(|error| format!("cannot write: {error}"))
    })
}

/// A session log file beside `path`, renamed over it by `Staged::commit`.
fn stage(path: &Path) -> std::io::Result<(Staged, JsonlFile)> {
    let staged = Staged::new(path)?;
    let file = JsonlFile::create(staged.path())?;
    Ok((staged, file))
}

/// What the fake model tells the script.
enum Event {
    /// A step began with these messages; it waits for the script's answer.
    Entered(StepCall),
    /// A step was dropped before the script answered it.
    Dropped { turn: u64, step: u64 },
}

/// The step hook: a fake model whose every answer comes from the script.
struct ScriptedStepHook {
    events: UnboundedSender<Event>,
    answers: UnboundedReceiver<StepOutcome>,
}

/// Why the model is gone: the driver task stopped and dropped it (a log
/// the disk cannot take stops it, as a crash would), and the agent's next
/// wait says why.
async fn driver_stopped(agent: &Handle) -> Error {
    match agent.when_idle().await {
        Err(error) => error,
        Ok(()) => Error::DriverGone,
    }
}

/// The script's side of the model: where steps show up and answers go.
struct Events {
    events: UnboundedReceiver<Event>,
    answers: UnboundedSender<StepOutcome>,
}

impl ScriptedStepHook {
    fn new() -> (Events, Self) {
        let (event_sender, event_receiver) = unbounded_channel();
        let (answer_sender, answer_receiver) = unbounded_channel();
        let events = Events {
            events: event_receiver,
            answers: answer_sender,
        };
        let step_hook = Self {
            events: event_sender,
            answers: answer_receiver,
        };
        (events, step_hook)
    }
}

/// Reports a step dropped before it was answered.
struct DropNotice<'a> {
    events: &'a UnboundedSender<Event>,
    turn: u64,
    step: u64,
    answered: bool,
}

impl Drop for DropNotice<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let (turn, step) = (self.turn, self.step);
            // The script may be gone already; then nobody needs the notice.
            let _ = self.events.send(Event::Dropped { turn, step });
        }
    }
}

impl StepHook for ScriptedStepHook {
    async fn step(&mut self, call: StepCall) -> StepOutcome {
        let mut notice = DropNotice {
            events: &self.events,
            turn: call.turn,
            step: call.step,
            answered: false,
        };
        let _ = self.events.send(Event::Entered(call));
        let outcome = self.answers.recv().await;
        notice.answered = true;
        outcome.unwrap_or(StepOutcome::Fail)
    }
}

struct Session {
    printer: Notifications,
    events: Events,
}

impl Session {
    /// The story of `tests/scenarios/demo-latch-replay.txn`, told live.
    async fn script(&mut self, agent: &Handle) -> Result<(), Error> {
        courier::status!(
            "# > the script, `model` the fake model, the rest the core's outputs (~ live)"
        );
        self.say("followup A");
        agent.followup("A")?;
        self.until_step(agent).await?;
        self.say("steer S            (during step 1.1: it joins the next step)");
        agent.steer("S")?;
        self.print_outputs();
        self.call_tools(agent).await?;
        self.finish_turn(agent).await?;
        self.say("inject c           (idle: no wake, it waits for the next turn)");
        let context = Message::text("c", Source::plugin("demo"));
        agent.inject(context)?;
        self.print_outputs();
        self.say("followup B");
        agent.followup("B")?;
        self.until_step(agent).await?;
        self.say("cancel user keep-inbox   (during step 2.1)");
        agent.cancel(CancelCause::User, true)?;
        self.print_outputs();
        self.say("followup C         (turn 2 is aborted but running: the wake is latched)");
        agent.followup("C")?;
        self.print_outputs();
        self.until_step(agent).await?;
        self.finish_turn(agent).await?;
        self.say("dispose");
        Ok(())
    }

    /// Turn 1 until the crash: the model is mid-step when it comes.
    async fn before_the_crash(&mut self, agent: &Handle) -> Result<(), Error> {
        courier::status!(
            "# > the script, `model` the fake model, the rest the core's outputs (~ live)"
        );
        self.say("followup A");
        agent.followup("A")?;
        self.until_step(agent).await?;
        self.say("steer S            (during step 1.1: it waits for step 1.2)");
        agent.steer("S")?;
        self.say("followup B         (it waits for turn 2)");
        agent.followup("B")?;
        self.print_outputs();
        self.say(
            "crash              (mid-step 1.1: the driver and the handles vanish; the file stays)",
        );
        Ok(())
    }

    /// After the resume: nothing was woken (SPEC §11), so a followup wakes
    /// the agent, whose turn takes what the crash left pending.
    async fn after_the_resume(&mut self, agent: &Handle) -> Result<(), Error> {
        self.say("followup C");
        agent.followup("C")?;
        self.until_step(agent).await?;
        self.say("step completed     (turn 2 ends; C, still waiting, opens turn 3)");
        self.answer(agent, StepOutcome::Completed).await?;
        self.until_step(agent).await?;
        self.finish_turn(agent).await?;
        self.say("dispose");
        Ok(())
    }

    /// Answers the step in flight.
    async fn answer(&mut self, agent: &Handle, outcome: StepOutcome) -> Result<(), Error> {
        match self.events.answers.send(outcome) {
            Ok(()) => Ok(()),
            Err(_) => Err(driver_stopped(agent).await),
        }
    }

    fn say(&self, line: &str) {
        courier::status!("> {line}");
    }

    /// Prints every output delivered so far, in emission order.
    fn print_outputs(&mut self) {
        while let Some(output) = self.printer.try_recv() {
            courier::status!("  {output}");
        }
    }

    /// Answers the step in flight with `tool-calls` and waits for the step
    /// the model then owes.
    async fn call_tools(&mut self, agent: &Handle) -> Result<(), Error> {
        let outcome = StepOutcome::ToolCalls;
        self.say(&command_line(&Input::Step(outcome)));
        self.answer(agent, outcome).await?;
        self.until_step(agent).await
    }

    /// Completes the step in flight, which ends the turn, and waits until
    /// the agent is idle.
    async fn finish_turn(&mut self, agent: &Handle) -> Result<(), Error> {
        let outcome = StepOutcome::Completed;
        self.say(&format!(
            "{}; when-idle",
            command_line(&Input::Step(outcome))
        ));
        self.answer(agent, outcome).await?;
        agent.when_idle().await?;
        self.print_outputs();
        Ok(())
    }

    /// Waits until the model entered a step, then prints what led there. A
    /// drop notice prints first: the driver drops a step before it completes
    /// it, and every output before the drop was printed already.
    async fn until_step(&mut self, agent: &Handle) -> Result<(), Error> {
        loop {
            let Some(event) = self.events.events.recv().await else {
                return Err(driver_stopped(agent).await);
            };
            match event {
                Event::Dropped { turn, step } => {
                    courier::status!("  model: step {turn}.{step} dropped by the cancel");
                }
                Event::Entered(call) => {
                    self.print_outputs();
                    let ids: Vec<&str> = call.entered.iter().map(|m| m.id().as_str()).collect();
                    let (turn, step) = (call.turn, call.step);
                    courier::status!("  model: step {turn}.{step} reads {}", ids.join(" "));
                    return Ok(());
                }
            }
        }
    }
}
