//! The OS refusing the write-behind thread: the journal writes as under
//! `Durability::Sync` instead of panicking (or of holding lines that no
//! thread will ever write). The refusal is real: the test re-runs itself in
//! a child process whose `RUST_MIN_STACK` asks std for a 64 TiB stack per
//! spawned thread, which no mapping can give.

use std::future::ready;
use std::process::Command;
use std::time::Duration;

use courier_core::{PreStepDecision, StepOutcome};
use courier_runtime::{Durability, Handle, MemoryLog, pre_step_hook_fn, step_hook_fn};

const TEST: &str = "a_refused_writer_thread_writes_as_sync";
const CHILD: &str = "COURIER_REFUSED_THREAD_CHILD";

#[test]
fn a_refused_writer_thread_writes_as_sync() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([TEST, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .env("RUST_MIN_STACK", (1u64 << 46).to_string())
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // libtest runs the test on its main thread when it cannot spawn one;
    // the child proves that the spawn was refused before it checked.
    assert!(stdout.contains("spawn refused; "), "{stdout}\n{stderr}");
}

fn child() {
    let refused = std::thread::Builder::new().spawn(|| ()).is_err();
    assert!(refused, "RUST_MIN_STACK did not make spawns fail here");
    print!("spawn refused; ");
    let log = MemoryLog::new();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    // A window longer than any run: with a writer thread, only the header
    // would be written when `followup` returns.
    let durability = Durability::WriteBehind {
        max_delay: Duration::from_secs(3600),
    };
    let (agent, _driver) =
        Handle::with_durability("refused", durability, pre_step_hook, step_hook, log.clone());
    agent.followup("A").expect("A is fresh");
    // The send's splice (and the wake's turn start and claim after it) is
    // written before `followup` returns.
    let lines = log.lines();
    assert!(
        lines
            .get(1)
            .is_some_and(|line| line.contains(r#""type":"agent/inbox/spliced""#)),
        "{lines:?}"
    );
}
