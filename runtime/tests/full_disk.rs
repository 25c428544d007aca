//! A real disk filling up under a [`JsonlFile`]: the process's file-size
//! limit (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored) makes the kernel cut the
//! write that crosses it short and refuse the next with `EFBIG`, as a full
//! disk cuts a write short and refuses the next with `ENOSPC`. Raising the
//! limit again is the space coming back.
//!
//! The rule these tests hold the log to (SPEC §11: a torn final line is
//! tolerated, corruption in the middle is not): after the first refused
//! write nothing more is appended, not even when the space comes back and
//! the log is closed, because whatever was appended would land after a
//! partial line, or resurrect lines of a call that was told it failed.
//!
//! The limit is the process's: it also cuts the test harness's own
//! writes when its stdout is a file (`cargo test > ci.log`), and a harness
//! that cannot print its `ok` line dies. So the cases run one after the
//! other in one test ([`a_full_disk`]), during which the harness prints
//! nothing, and no other test in this binary writes files.
#![cfg(all(unix, not(loom)))]

mod common;

use std::fs;
use std::future::ready;
use std::io;
use std::path::Path;
use std::time::Duration;

use common::{assert_valid, block_on, bounded, log_path};
use courier_core::log::SessionHeader;
use courier_core::{MessageId, PreStepDecision, Status, StepOutcome, Target};
use courier_runtime::kept::{self, Torn};
use courier_runtime::{
    Durability, Error, Handle, JsonlFile, ResumeError, Sink, pre_step_hook_fn, step_hook_fn,
};

/// The process's file-size limit lowered to `bytes` until dropped.
struct FileSizeLimit {
    before: libc::rlimit,
}

impl FileSizeLimit {
    fn set(bytes: u64) -> Self {
        // SAFETY: plain libc calls with valid pointers; ignoring SIGXFSZ
        // turns the signal a write past the limit raises into its `EFBIG`.
        let before = unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let mut before = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut before), 0);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: before.rlim_max,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
            before
        };
        Self { before }
    }
}

impl Drop for FileSizeLimit {
    fn drop(&mut self) {
        // SAFETY: restores the limit read in `set`.
        let restored = unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &self.before) };
        assert_eq!(restored, 0, "the file-size limit is restored");
    }
}

fn file_length(path: &Path) -> u64 {
    fs::metadata(path).expect("the log exists").len()
}

/// The disk fills 20 bytes into the line of B's send, then the space comes
/// back before C, the disposal and the agent's drop. Every call after the
/// refused write says so, nothing is appended after the partial line (B's
/// refused line is not completed at the close, C's is never written), and
/// a resume cuts the torn tail and finds A alone pending.
fn a_refused_write_is_never_retried_when_the_log_closes(durability: Durability) {
    let (_folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) =
        Handle::with_durability("full", durability, pre_step_hook, step_hook, sink);
    let header = SessionHeader::new("full").line().len() as u64 + 1;
    let full = block_on(async {
        let driver = tokio::spawn(driver.run());
        handle.append(Target::NextTurn, "A").expect("A is kept");
        // Write-behind keeps A's line for its window, and its write may be
        // seen half done: wait for the whole line.
        let whole = |path: &Path| {
            let text = fs::read(path).expect("readable");
            text.len() as u64 > header && text.ends_with(b"\n")
        };
        bounded(async {
            while !whole(&path) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("A's line is written");
        let full = file_length(&path) + 20;
        let limit = FileSizeLimit::set(full);
        let sent = handle.append(Target::NextTurn, "B");
        if durability == Durability::Sync {
            assert!(
                matches!(&sent, Err(Error::Log(error)) if error.kind() == io::ErrorKind::FileTooLarge),
                "{sent:?}"
            );
        }
        // Write-behind meets the full disk on its writer thread.
        bounded(async {
            while !matches!(handle.remove("none"), Err(Error::Log(_))) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the writer meets the full disk");
        assert_eq!(
            file_length(&path),
            full,
            "B's line is cut where the disk filled"
        );
        // The space comes back.
        drop(limit);
        let later = handle.append(Target::NextTurn, "C");
        assert!(matches!(later, Err(Error::Log(_))), "{later:?}");
        let disposed = bounded(handle.dispose()).await.expect("dispose ends");
        assert!(matches!(disposed, Err(Error::Log(_))), "{disposed:?}");
        drop(handle);
        bounded(driver)
            .await
            .expect("the driver task ends")
            .expect("no panic");
        full
    });
    // The agent is gone and its file closed.
    assert_eq!(
        file_length(&path),
        full,
        "appended after the refused write: {:?}",
        fs::read_to_string(&path)
    );
    let read = kept::read_file(&path).expect("a torn tail, not corruption");
    assert_eq!(read.torn, Some(Torn::NoNewline { line: 3 }));
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (resumed, _driver) = Handle::resume(&path, pre_step_hook, step_hook).expect("resumable");
    assert_eq!(resumed.status().expect("served"), Status::Idle);
    let inbox = resumed.inbox();
    let pending: Vec<&MessageId> = inbox
        .list(Target::NextTurn)
        .iter()
        .map(|m| m.id())
        .collect();
    assert_eq!(
        pending,
        [&MessageId::from("A")],
        "B was refused, C never sent"
    );
    assert_eq!(file_length(&path), full - 20, "the torn tail is cut");
    drop(resumed);
    assert_valid(&path);
}

/// Every case, one after the other (see the module's doc: why one test).
#[test]
fn a_full_disk() {
    a_refused_write_is_never_retried_when_the_log_closes(Durability::Sync);
    a_refused_write_is_never_retried_when_the_log_closes(Durability::WriteBehind {
        max_delay: Duration::from_millis(1),
    });
    a_jsonl_file_refuses_everything_after_its_first_refused_write();
    a_resume_that_fills_the_disk_names_the_file_and_resumes_again();
}

/// The file alone: a short write then a refusal. Every later write and
/// flush fails with the first error, and dropping the file appends
/// nothing, though the space came back.
fn a_jsonl_file_refuses_everything_after_its_first_refused_write() {
    let (_folder, path) = log_path();
    let mut file = JsonlFile::create(&path).expect("a temporary file");
    file.write_line(r#"{"type":"session","version":0,"id":"s"}"#)
        .expect("buffered");
    file.flush().expect("written");
    let whole = file_length(&path);
    let limit = FileSizeLimit::set(whole + 5);
    file.write_line(&"x".repeat(100)).expect("buffered");
    let refused = file.flush().expect_err("the disk is full");
    assert_eq!(refused.raw_os_error(), Some(libc::EFBIG), "{refused}");
    drop(limit);
    let error = |result: io::Result<()>| result.expect_err("refused after the first failure");
    for later in [
        error(file.write_line("{}")),
        error(file.flush()),
        error(file.flush()),
    ] {
        assert!(later.to_string().contains("File too large"), "{later}");
    }
    drop(file);
    assert_eq!(file_length(&path), whole + 5, "nothing after the cut line");
}

/// The disk fills while a resume appends an open turn's closers: the
/// resume fails with an error naming the file, and once the space is back
/// the next resume cuts the partial closer and finishes the repair.
fn a_resume_that_fills_the_disk_names_the_file_and_resumes_again() {
    let (_folder, path) = log_path();
    let crashed = concat!(
        r#"{"type":"session","version":0,"id":"s"}"#,
        "\n",
        r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"inserted":[{"id":"A","role":"user","content":"A","source":{"kind":"user"}}]}}"#,
        "\n",
        r#"{"type":"turn/start","data":{"turn":1}}"#,
        "\n"
    );
    fs::write(&path, crashed).expect("writable");
    let resume = || {
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
        Handle::resume(&path, pre_step_hook, step_hook)
    };
    let limit = FileSizeLimit::set(crashed.len() as u64 + 10);
    match resume() {
        Err(ResumeError::Io(error)) => {
            assert_eq!(error.kind(), io::ErrorKind::FileTooLarge, "{error}");
            let named = error.to_string();
            assert!(named.contains(&path.display().to_string()), "{named}");
        }
        Err(error) => panic!("refused for another reason: {error}"),
        Ok(_) => panic!("the closers did not fit, yet it resumed"),
    }
    drop(limit);
    assert_eq!(file_length(&path), crashed.len() as u64 + 10);
    let (resumed, driver) = resume().expect("resumable once the space is back");
    assert_eq!(resumed.status().expect("served"), Status::Idle);
    // The driver first: the handle then disposes nothing (as a crash).
    drop(driver);
    drop(resumed);
    let text = fs::read_to_string(&path).expect("readable");
    assert!(text.starts_with(crashed), "{text}");
    assert_valid(&path);
}
