//! Helpers shared by the runtime's tests: a tokio runtime to drive an
//! agent on, a bound on waits that must end, a hook that passes every
//! batch, a fresh log path, and the validator's verdict on a file. Each
//! test binary uses some of them.
#![allow(dead_code)]

use std::fs;
use std::future::Future;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

use courier_check::validate::{Finding, validate};

pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(future)
}

/// Far longer than any wait of these tests needs; only a hang reaches it.
pub(crate) const HANG: Duration = Duration::from_secs(10);

/// `future`, failing instead of hanging past [`HANG`].
pub(crate) fn bounded<F: Future>(future: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(HANG, future)
}

/// `future`'s output; a panic naming `what` instead of hanging past 10 s.
pub(crate) async fn ends<F: Future>(what: &str, future: F) -> F::Output {
    match bounded(future).await {
        Ok(output) => output,
        Err(_) => panic!("{what} hung"),
    }
}

/// A pre-step hook that passes every batch.
pub(crate) fn passing() -> impl courier_runtime::PreStepHook {
    courier_runtime::pre_step_hook_fn(|_| std::future::ready(courier_core::PreStepDecision::Pass))
}

/// A temporary folder (kept alive by the caller) and a log path in it.
pub(crate) fn log_path() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("log.jsonl");
    (folder, path)
}

/// The log at `path` reads and the validator accepts it.
pub(crate) fn assert_valid(path: &Path) {
    let (valid, findings) = verdict(path);
    assert!(valid, "{}: {findings:?}", path.display());
}

/// Whether the validator accepts the log at `path`, and what it found.
pub(crate) fn verdict(path: &Path) -> (bool, Vec<Finding>) {
    let file = fs::File::open(path).expect("readable");
    let mut findings = Vec::new();
    let summary = validate(BufReader::new(file), |finding| findings.push(finding));
    let summary = summary.unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    (summary.is_valid(), findings)
}
