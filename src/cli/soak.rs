//! `courier soak` (hidden): the child process of the kill -9 tests
//! (`tests/kill.rs`). It runs a seeded random workload on the async runtime
//! with a file log, from several client threads at once, and prints each
//! accepted send's id on stdout once the send has returned, so the parent
//! that kills it knows which sends were acknowledged. With `--resume` it
//! prints `resuming`, resumes the log (a kill can land inside the resume
//! itself, while its closers are written) and prints `resumed` when that
//! returned.
//!
//! It runs until its sends are done (then disposes and exits 0) or until it
//! is killed, which is what it is for.

use std::future::ready;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::thread;
use std::time::Duration;

use courier::files;
use courier_core::{CancelCause, Message, PreStepDecision, Source, StepOutcome, Target};
use courier_runtime::{
    DriverTask, Durability, Handle, JsonlFile, PreStepHook, StepHook, pre_step_hook_fn,
    step_hook_fn,
};
use courier_sim::Prng;

/// Arguments of `courier soak`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The session log: created (a file already there is refused), or with
    /// `--resume` resumed and appended to.
    #[arg(long, value_name = "FILE")]
    log: PathBuf,
    /// Seeds the workload.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write behind with this window (milliseconds) instead of syncing each
    /// call.
    #[arg(long, value_name = "MS")]
    write_behind: Option<u64>,
    /// Resume the log instead of creating it.
    #[arg(long)]
    resume: bool,
    /// Prefix of every message id, so a resumed run sends fresh ids.
    #[arg(long, default_value = "m")]
    tag: String,
    /// Client threads sending at once.
    #[arg(long, default_value_t = 3)]
    senders: u64,
    /// Calls per client thread before the run ends by itself.
    #[arg(long, default_value_t = 2000)]
    calls: u64,
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let durability = match args.write_behind {
        None => Durability::Sync,
        Some(ms) => Durability::WriteBehind {
            max_delay: Duration::from_millis(ms),
        },
    };
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    // Each step yields before answering, so turns are in flight when a
    // client calls (and when the kill comes).
    let step_hook = step_hook_fn(|_| async {
        tokio::task::yield_now().await;
        StepOutcome::Completed
    });
    // A fresh log never truncates a file that is there (a typo for
    // another path would empty it in place).
    if !args.resume && args.log.exists() {
        eprintln!(
            "error: --log {}: exists: refused (soak creates a fresh log; --resume appends)",
            files::named(&args.log)
        );
        return ExitCode::from(2);
    }
    if args.resume {
        acknowledge("resuming");
    }
    let started = if args.resume {
        Handle::resume_with(&args.log, durability, pre_step_hook, step_hook)
            .map_err(|error| error.to_string())
    } else {
        JsonlFile::create(&args.log)
            .map(|file| Handle::with_durability("soak", durability, pre_step_hook, step_hook, file))
            .map_err(|error| error.to_string())
    };
    let (agent, driver) = match started {
        Ok(started) => started,
        Err(error) => {
            eprintln!("error: --log {}: {error}", files::named(&args.log));
            return ExitCode::from(2);
        }
    };
    if args.resume {
        acknowledge("resumed");
    }
    let driver = spawn_driver(driver);
    let mut root = Prng::new(args.seed);
    thread::scope(|scope| {
        for client in 0..args.senders {
            let (agent, mut prng) = (agent.clone(), root.child());
            let tag = format!("{}{client}-", args.tag);
            scope.spawn(move || workload(&agent, &mut prng, &tag, args.calls));
        }
    });
    let disposed = block_on(agent.dispose());
    drop(agent);
    driver.join().expect("the driver thread does not panic");
    match disposed {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!(
                "error: --log {}: cannot write: {error}",
                files::named(&args.log)
            );
            ExitCode::from(2)
        }
    }
}

/// The driver task on a current-thread tokio runtime of its own thread.
fn spawn_driver<P: PreStepHook, S: StepHook>(driver: DriverTask<P, S>) -> thread::JoinHandle<()> {
    thread::spawn(move || block_on(driver.run()))
}

fn block_on<F: Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread tokio runtime");
    runtime.block_on(future)
}

/// One client: `calls` random calls; every insertion the agent accepted is
/// acknowledged on stdout after its call returned.
fn workload(agent: &Handle, prng: &mut Prng, tag: &str, calls: u64) {
    let mut sent: Vec<String> = Vec::new();
    for call in 0..calls {
        let id = format!("{tag}{call}");
        let message = || Message::text(id.as_str(), Source::user());
        let accepted = match prng.below(20) {
            0..=6 => agent.followup(message()).is_ok(),
            7..=10 => agent.steer(message()).is_ok(),
            11..=13 => agent.inject(message()).is_ok(),
            14..=15 => agent.append(Target::NextTurn, message()).is_ok(),
            16..=17 => {
                if let Some(earlier) = sent.get(prng.below(sent.len() as u64 + 1) as usize) {
                    // Refused when no longer pending: that is fine.
                    let _ = agent.remove(earlier.as_str());
                }
                false
            }
            18 => {
                agent
                    .cancel(CancelCause::User, true)
                    .expect("the driver thread serves the agent");
                false
            }
            _ => {
                agent
                    .cancel(CancelCause::User, false)
                    .expect("the driver thread serves the agent");
                false
            }
        };
        if accepted {
            acknowledge(&id);
            sent.push(id);
        }
    }
}

/// Prints one line and flushes it, so the parent sees it before the next
/// call; a closed stdout (the parent is gone) ends nothing.
fn acknowledge(line: &str) {
    let mut stdout = io::stdout().lock();
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}
