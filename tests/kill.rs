//! Kill -9 (issue 14): a real child process (`courier soak`) runs a seeded
//! random workload on the runtime with a file log and prints each send's id
//! once the send returned; this test SIGKILLs it at a seeded point (after
//! the n-th acknowledgement, plus a seeded pause), then checks the log it
//! left:
//! - it reads (a torn final line is allowed, nothing else);
//! - the shared checker (`courier_check::Monitor::restart`) accepts the
//!   kept log, the closers a resume appends (`resume-closes`) and the
//!   resumed agent's inbox (`replay-matches`);
//! - under `Durability::Sync` every acknowledged id is in the kept log;
//!   under `WriteBehind` the acknowledged sends it lost are counted;
//! - `Handle::resume` on a copy, in this process, starts with the inbox the
//!   checker expects, runs one more turn, and the whole file validates.
//!
//! Each log is killed three times: the second and third children resume it
//! first, so a kill can land inside a resume (while its closers are written)
//! and the next check must still accept the log. Each test prints one line,
//! `N kills, ...`, with what it counted.
#![cfg(not(loom))]

use std::collections::BTreeSet;
use std::fs;
use std::future::ready;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use courier_check::validate::validate;
use courier_check::{History, Kept, Mode, Monitor};
use courier_core::log::{LogLine, parse_line};
use courier_core::{Output, PreStepDecision, StepOutcome};
use courier_runtime::kept::{self, KeptLog};
use courier_runtime::{Durability, Handle, pre_step_hook_fn, step_hook_fn};
use courier_sim::Prng;

/// Children per log: one fresh, then two that resume it.
const GENERATIONS: u64 = 3;
/// The write-behind window the write-behind children use.
const WINDOW_MS: u64 = 5;
/// Longest wait for a child's next line before the test gives up on it.
const STALL: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Policy {
    Sync,
    WriteBehind,
}

/// What the kills counted.
#[derive(Default, Debug)]
struct Tally {
    kills: u64,
    /// Kills of a resuming child before it printed `resumed` (before or
    /// inside its resume).
    before_resumed: u64,
    /// Of those, kills after it printed `resuming`: inside `Handle::resume`.
    inside_resume: u64,
    torn: u64,
    logs_resumed: u64,
    acknowledged: [u64; 2],
    lost: [u64; 2],
}

impl Tally {
    fn line(&self) -> String {
        format!(
            "{} kills, {} logs resumed ({} failed), {} kills before a resume returned ({} inside one), {} torn tails; \
             sync: {} sends acknowledged, {} lost; write-behind ({WINDOW_MS} ms): \
             {} acknowledged, {} lost",
            self.kills,
            self.logs_resumed,
            self.kills - self.logs_resumed,
            self.before_resumed,
            self.inside_resume,
            self.torn,
            self.acknowledged[0],
            self.lost[0],
            self.acknowledged[1],
            self.lost[1],
        )
    }
}

/// Runs chains of kills, alternating the policy per chain, until `kills`.
fn kill_chains(kills: u64, seed: u64) -> Tally {
    let mut tally = Tally::default();
    let mut chain = 0;
    while tally.kills < kills {
        let policy = [Policy::Sync, Policy::WriteBehind][(chain % 2) as usize];
        kill_chain(&mut Prng::new(seed + chain), policy, &mut tally);
        chain += 1;
    }
    tally
}

fn kill_chain(prng: &mut Prng, policy: Policy, tally: &mut Tally) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let log = folder.path().join("session.jsonl");
    for generation in 0..GENERATIONS {
        let resume = generation > 0;
        let mut command = Command::new(env!("CARGO_BIN_EXE_courier"));
        command
            .args(["soak", "--log"])
            .arg(&log)
            .args(["--seed", &prng.below(u64::MAX).to_string()])
            .args(["--tag", &format!("g{generation}-")]);
        if resume {
            command.arg("--resume");
        }
        if policy == Policy::WriteBehind {
            command.args(["--write-behind", &WINDOW_MS.to_string()]);
        }
        // A fresh child is killed after its first acknowledgement at the
        // earliest (before it, the log may not exist yet); one resuming
        // child in three is killed without waiting for any, just after it
        // says `resuming`, so the kill often lands inside its resume.
        let kill_after = match (resume, prng.below(3)) {
            (true, 0) => 0,
            _ => 1 + prng.below(24),
        };
        let pause = Duration::from_micros(prng.below(3000));
        let (acknowledged, said) = run_and_kill(command, kill_after, pause);
        tally.kills += 1;
        let unresumed = resume && !said.resumed;
        tally.before_resumed += u64::from(unresumed);
        tally.inside_resume += u64::from(unresumed && said.resuming);
        check_killed_log(&log, &acknowledged, policy, tally);
    }
}

/// What a resuming child said before its kill.
#[derive(Default)]
struct Said {
    /// It was about to call `Handle::resume`.
    resuming: bool,
    /// `Handle::resume` returned.
    resumed: bool,
}

impl Said {
    /// One line of the child's: a word about its resume, or an id.
    fn take(&mut self, line: String, acknowledged: &mut Vec<String>) {
        match line.as_str() {
            "resuming" => self.resuming = true,
            "resumed" => self.resumed = true,
            _ => acknowledged.push(line),
        }
    }
}

/// Starts the child, kills it after `kill_after` acknowledgements and
/// `pause`, and returns every id it acknowledged (those still in the pipe
/// included: they were printed before the kill) and how far its resume got.
fn run_and_kill(mut command: Command, kill_after: u64, pause: Duration) -> (Vec<String>, Said) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the courier binary starts");
    let lines = read_lines(&mut child);
    let mut acknowledged = Vec::new();
    let mut said = Said::default();
    // Without an acknowledgement to wait for, a resuming child is killed
    // `pause` after it says `resuming`: inside its resume, or just after.
    while (acknowledged.len() as u64) < kill_after || (kill_after == 0 && !said.resuming) {
        match lines.recv_timeout(STALL) {
            Ok(line) => said.take(line, &mut acknowledged),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => panic!("the child stalled"),
        }
    }
    thread::sleep(pause);
    child.kill().expect("SIGKILL is delivered");
    let status = child.wait().expect("the child is reaped");
    for line in lines.iter() {
        said.take(line, &mut acknowledged);
    }
    if status.success() || status.code().is_some() {
        let mut stderr = String::new();
        let mut pipe = child.stderr.take().expect("piped");
        std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr reads");
        panic!("the child ended by itself ({status}) before its kill: {stderr}");
    }
    (acknowledged, said)
}

/// Its lines, read on a thread so a stalled child cannot hang the test.
fn read_lines(child: &mut Child) -> Receiver<String> {
    let stdout = child.stdout.take().expect("piped");
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Every check on one killed log; see the module doc.
fn check_killed_log(log: &Path, acknowledged: &[String], policy: Policy, tally: &mut Tally) {
    let kept = kept::read_file(log).unwrap_or_else(|error| panic!("the killed log reads: {error}"));
    tally.torn += u64::from(kept.torn.is_some());
    let events = kept_events(log, &kept);

    let mut monitor = Monitor::new();
    let resumed_core = kept.replay.clone().resume();
    let broken = monitor.restart(Kept::Log(&events), &kept.closers(), &resumed_core);
    assert_eq!(
        broken,
        None,
        "the checker refuses the resume of {}",
        log.display()
    );

    let mut history = History::new(Mode::Core);
    let mut inserted = BTreeSet::new();
    for event in &events {
        let effect = history.observe(event).expect("the checker accepted it");
        inserted.extend(effect.inserted.into_iter().map(|id| id.as_str().to_owned()));
    }
    let lost = acknowledged.iter().filter(|id| !inserted.contains(*id));
    let lost = lost.count() as u64;
    let index = match policy {
        Policy::Sync => 0,
        Policy::WriteBehind => 1,
    };
    tally.acknowledged[index] += acknowledged.len() as u64;
    tally.lost[index] += lost;
    if policy == Policy::Sync {
        assert_eq!(
            lost,
            0,
            "Sync lost an acknowledged send in {}",
            log.display()
        );
    }

    // The in-process resume, on a copy (the next child resumes the original).
    let copy = log.with_extension("copy.jsonl");
    fs::copy(log, &copy).expect("the log copies");
    resume_in_process(&copy, &monitor);
    tally.logs_resumed += 1;
}

/// The kept log's delivery events, header and resume markers left out.
fn kept_events(log: &Path, kept: &KeptLog) -> Vec<Output> {
    let bytes = fs::read(log).expect("the log reads");
    let text =
        std::str::from_utf8(&bytes[..kept.kept_bytes as usize]).expect("kept lines are UTF-8");
    let mut events = Vec::new();
    for line in text.lines() {
        match parse_line(line) {
            Ok(LogLine::Delivery(output)) => events.push(output),
            Ok(LogLine::Header(_) | LogLine::EndSeed(_)) => {}
            other => panic!("a kept line that is no event: {line}: {other:?}"),
        }
    }
    events
}

/// `Handle::resume` starts with the inbox the checker replayed, runs a turn
/// and disposes; the whole file then validates.
fn resume_in_process(path: &Path, monitor: &Monitor) {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (handle, driver) = Handle::resume_with(path, Durability::Sync, pre_step_hook, step_hook)
        .unwrap_or_else(|error| panic!("{} does not resume: {error}", path.display()));
    let inbox = handle.inbox();
    monitor
        .checker()
        .check_inbox(&inbox)
        .expect("replay-matches");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let driver = tokio::spawn(driver.run());
        handle.followup("after-the-kill").expect("a fresh id");
        handle.when_idle().await.expect("the driver task runs");
        handle.dispose().await.expect("the log is written");
        drop(handle);
        driver.await.expect("the driver task ends");
    });
    let file = fs::File::open(path).expect("the log reads");
    let mut findings = Vec::new();
    let summary = validate(BufReader::new(file), |finding| findings.push(finding));
    let summary = summary.expect("a readable log");
    assert!(summary.is_valid(), "{}: {findings:?}", path.display());
}

#[test]
fn kill_9_at_random_points_loses_no_synced_send() {
    let tally = kill_chains(102, 0);
    println!("{}", tally.line());
}

#[test]
#[ignore = "2,000 kills: about 30 s (a debug build on a quiet machine)"]
fn kill_9_two_thousand_times() {
    let tally = kill_chains(2001, 1_000_000);
    println!("{}", tally.line());
}
