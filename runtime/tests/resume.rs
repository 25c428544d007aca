//! Resuming from a log file the runtime wrote itself (SPEC §11): the file is
//! cut mid-session, resumed, and what was appended, the inbox, the next turn
//! and the whole file's validity are checked; a second resume appends
//! nothing; a crash at any byte of the resume's own writes resumes again;
//! a corrupt middle line is refused naming it, the file untouched.
#![cfg(not(loom))]

mod common;

use std::fs;
use std::future::ready;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_valid, block_on, bounded, log_path, verdict};
use courier_core::log::{self, LogLine, SessionHeader};
use courier_core::{
    CancelCause, Message, MessageId, Output, PreStepDecision, Source, Status, StepOutcome, Target,
    Wakeup,
};
use courier_runtime::kept::{self, Torn};
use courier_runtime::{
    Boundary, DriverTask, Durability, Error, Handle, Hook, JsonlFile, MemoryLog, PreStepHook,
    ResumeError, Sink, StepHook, pre_step_hook_fn, step_hook_fn,
};

/// What a resume appends to the session cut inside turn 2.
const TURN_2_CLOSED: &str = concat!(
    r#"{"type":"turn/end","data":{"turn":2,"reason":{"kind":"interrupted"}}}"#,
    "\n",
    r#"{"type":"session/end-seed","data":{}}"#,
    "\n"
);

/// Two turns, A then B, logged to `path` by the runtime.
fn write_session(path: &Path) {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(path).expect("a temporary file");
    let (handle, driver) = Handle::new("resume", pre_step_hook, step_hook, sink);
    block_on(async {
        let driver = tokio::spawn(driver.run());
        handle.followup("A").expect("fresh");
        handle.when_idle().await.expect("the driver task runs");
        handle.followup("B").expect("fresh");
        handle.when_idle().await.expect("the driver task runs");
        handle.dispose().await.expect("written");
        driver.await.expect("the driver task ends");
    });
}

/// Keeps the lines of `path` up to and including the first that contains
/// `marker` (after `skip` earlier ones), plus `torn` bytes of the next.
fn cut_after(path: &Path, marker: &str, skip: usize, torn: usize) {
    let text = fs::read_to_string(path).expect("readable");
    let mut kept = String::new();
    let mut seen = 0;
    let mut lines = text.split_inclusive('\n');
    for line in lines.by_ref() {
        kept.push_str(line);
        if line.contains(marker) {
            seen += 1;
            if seen > skip {
                break;
            }
        }
    }
    let next = lines.next().unwrap_or("");
    kept.push_str(&next[..torn.min(next.len())]);
    fs::write(path, kept).expect("writable");
}

/// [`write_session`] at a new [`log_path`], then [`cut_after`].
fn cut_session(marker: &str, skip: usize, torn: usize) -> (tempfile::TempDir, PathBuf) {
    let (folder, path) = log_path();
    write_session(&path);
    cut_after(&path, marker, skip, torn);
    (folder, path)
}

fn resume(path: &Path) -> Result<Resumed, ResumeError> {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    Handle::resume(path, pre_step_hook, step_hook).map(|(handle, driver)| Resumed {
        driver: Some(Box::new(driver)),
        handle,
    })
}

/// A resumed agent whose driver task is kept, unspawned, while the handle
/// is (so `status` answers), and goes first: the handle then disposes
/// nothing, and the log is left as the resume wrote it.
struct Resumed {
    driver: Option<Box<dyn std::any::Any>>,
    handle: Handle,
}

impl std::ops::Deref for Resumed {
    type Target = Handle;

    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for Resumed {
    fn drop(&mut self) {
        drop(self.driver.take());
    }
}

/// Resumes `path` as `durability` says, runs one turn for a followup `id`
/// and disposes: the log as a resumed agent goes on writing it.
fn resume_and_run_a_turn(path: &Path, durability: Durability, id: &str) {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (handle, driver) = Handle::resume_with(path, durability, pre_step_hook, step_hook)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    block_on(async {
        let driver = tokio::spawn(driver.run());
        handle.followup(id).expect("fresh");
        handle.when_idle().await.expect("the driver task runs");
        handle.dispose().await.expect("written");
        driver.await.expect("the driver task ends");
    });
}

fn ids(handle: &Handle, target: Target) -> Vec<MessageId> {
    let inbox = handle.inbox();
    inbox.list(target).iter().map(|m| m.id().clone()).collect()
}

/// A second resume of `path` appends nothing, and the file validates.
fn assert_resumes_again_unchanged(path: &Path) {
    let once = fs::read(path).expect("readable");
    drop(resume(path).expect("resumable again"));
    assert_eq!(fs::read(path).expect("readable"), once);
    assert_valid(path);
}

#[test]
fn a_crashed_turn_is_closed_and_its_pending_send_kept() {
    let (_folder, path) = log_path();
    write_session(&path);
    // Turn 2 opened, B not yet claimed; 10 bytes of the claim are torn.
    cut_after(&path, r#""turn/start""#, 1, 10);
    let before = fs::read_to_string(&path).expect("readable");
    let handle = resume(&path).expect("a resumable log");
    let after = fs::read_to_string(&path).expect("readable");
    let kept = &before[..before.rfind('\n').expect("lines") + 1];
    let appended = after
        .strip_prefix(kept)
        .expect("the kept lines are untouched");
    assert_eq!(appended, TURN_2_CLOSED);
    assert_eq!(ids(&handle, Target::NextTurn), [MessageId::from("B")]);
    assert_eq!(handle.status().expect("served"), Status::Idle);
    drop(handle);
    assert_valid(&path);
}

#[test]
fn the_resumed_agent_opens_the_next_turn_and_appends_to_the_file() {
    let (_folder, path) = cut_session(r#""user/message""#, 1, 0);
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (handle, driver) = Handle::resume(&path, pre_step_hook, step_hook).expect("resumable");
    let text = fs::read_to_string(&path).expect("readable");
    assert!(text.contains(r#"{"type":"step/end","data":{"turn":2,"step":1}}"#));
    block_on(async {
        let driver = tokio::spawn(driver.run());
        handle.followup("C").expect("fresh");
        handle.when_idle().await.expect("the driver task runs");
        handle.dispose().await.expect("written");
        driver.await.expect("the driver task ends");
    });
    let text = fs::read_to_string(&path).expect("readable");
    assert!(
        text.contains(r#"{"type":"turn/start","data":{"turn":3}}"#),
        "{text}"
    );
    assert_valid(&path);
}

#[test]
fn resuming_twice_appends_nothing_the_second_time() {
    let (_folder, path) = cut_session(r#""user/message""#, 1, 0);
    drop(resume(&path).expect("resumable"));
    assert_resumes_again_unchanged(&path);
}

#[test]
fn a_corrupt_middle_line_is_refused_naming_it_and_the_file_untouched() {
    let (_folder, path) = log_path();
    write_session(&path);
    let text = fs::read_to_string(&path).expect("readable");
    let mut lines: Vec<&str> = text.lines().collect();
    for (line, corrupt) in [
        (3, "{not json"),
        (4, r#"{"type":"turn/start","data":{"turn":1}}"#),
    ] {
        let original = lines[line - 1];
        lines[line - 1] = corrupt;
        let written = lines.join("\n") + "\n";
        fs::write(&path, &written).expect("writable");
        let Err(ResumeError::Unresumable(error)) = resume(&path) else {
            panic!("line {line} corrupt yet resumed");
        };
        assert_eq!(error.line, line as u64, "{error}");
        assert_eq!(fs::read_to_string(&path).expect("readable"), written);
        lines[line - 1] = original;
    }
}

/// A FIFO at `path`, a folder beside it, and `/dev/null`: paths that are no
/// regular file.
#[cfg(unix)]
fn not_regular_files(path: &Path) -> [std::path::PathBuf; 3] {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|status| status.success()), "mkfifo");
    let folder = path.with_file_name("folder");
    fs::create_dir(&folder).expect("a folder");
    [path.to_owned(), "/dev/null".into(), folder]
}

/// A log that is not a regular file is refused at once, naming it: a FIFO
/// (before, the resume's read waited for a writer for ever) or a device.
#[cfg(unix)]
#[test]
fn a_log_that_is_not_a_regular_file_is_refused() {
    let (_folder, path) = log_path();
    for path in not_regular_files(&path) {
        let path = path.as_path();
        let Err(ResumeError::Io(error)) = resume(path) else {
            panic!("{path:?} resumed, or refused for another reason");
        };
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
        assert!(
            error.to_string().contains("is not a regular file"),
            "{error}"
        );
        assert!(error.to_string().contains(&format!("{path:?}")), "{error}");
    }
}

/// `JsonlFile::create` refuses them the same way, before it opens: a FIFO
/// (before, the open waited for a reader for ever) or a folder (before,
/// `IsADirectory` without its path); a new path is created.
#[cfg(unix)]
#[test]
fn creating_a_log_that_is_not_a_regular_file_is_refused() {
    let (_folder, path) = log_path();
    for path in not_regular_files(&path) {
        let path = path.as_path();
        let Err(error) = JsonlFile::create(path) else {
            panic!("{path:?} created");
        };
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
        assert!(error.to_string().contains(&format!("{path:?}")), "{error}");
    }
    let new = path.with_file_name("new.jsonl");
    drop(JsonlFile::create(&new).expect("created"));
    assert!(new.is_file());
}

/// A log that is not there is `NotFound`, naming it, so an embedder can
/// tell it from a corrupt one and start a fresh log instead.
#[test]
fn a_missing_log_is_not_found() {
    let (_folder, path) = log_path();
    let Err(ResumeError::Io(error)) = resume(&path) else {
        panic!("a missing log resumed, or was refused as corrupt");
    };
    assert_eq!(error.kind(), io::ErrorKind::NotFound, "{error}");
    assert!(error.to_string().contains(&format!("{path:?}")), "{error}");
    assert!(!path.exists(), "nothing was created");
}

#[test]
fn a_crash_while_the_closers_are_written_resumes_cleanly_again() {
    let (_folder, path) = cut_session(r#""user/message""#, 1, 0);
    let cut = fs::read_to_string(&path).expect("readable");
    drop(resume(&path).expect("resumable"));
    let whole = fs::read_to_string(&path).expect("readable");
    let appended = &whole[cut.len()..];
    // Every crash point inside the resume's own writes.
    for length in 0..appended.len() {
        fs::write(&path, format!("{cut}{}", &appended[..length])).expect("writable");
        drop(resume(&path).expect("resumable again"));
        let again = fs::read_to_string(&path).expect("readable");
        assert!(again.starts_with(&cut), "the kept lines are untouched");
        assert_valid(&path);
    }
}

/// A child that another thread spawns holds a copy of every descriptor of
/// this process from its fork to its exec, the log's locked one among
/// them: a resume right after the agent was dropped waits for the exec
/// instead of calling the log in use. (Before: refused as in use; CI met it
/// when the FIFO test above ran `mkfifo` at that moment, 8 runs in 300
/// under load.) Here the child stays between fork and exec for 50 ms.
#[cfg(unix)]
#[test]
fn a_lock_a_spawning_child_holds_until_its_exec_is_waited_for() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    let (_folder, path) = cut_session(r#""user/message""#, 1, 0);
    let handle = resume(&path).expect("resumable");
    let (mut forked, in_child) = io::pipe().expect("a pipe");
    let spawner = std::thread::spawn(move || {
        let mut command = std::process::Command::new("true");
        // SAFETY: between fork and exec the child only writes to a pipe
        // and sleeps (`write` and `nanosleep`, both async-signal-safe).
        unsafe {
            command.pre_exec(move || {
                (&in_child).write_all(b"f")?;
                std::thread::sleep(Duration::from_millis(50));
                Ok(())
            });
        }
        command.status()
    });
    let mut byte = [0];
    forked.read_exact(&mut byte).expect("the child forked");
    drop(handle);
    let again = resume(&path);
    let status = spawner.join().expect("the spawner thread");
    assert!(status.is_ok_and(|status| status.success()), "`true` ran");
    assert!(again.is_ok(), "{:?}", again.err());
}

/// A resumed agent, live: its handle and its driver task (not run).
fn resume_live(path: &Path) -> (Handle, impl Sized) {
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    Handle::resume(path, pre_step_hook, step_hook).expect("resumable")
}

/// The error a second writer of `path` gets: busy, naming the file.
fn assert_in_use(error: &std::io::Error, path: &Path) {
    assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy, "{error}");
    let named = error.to_string();
    assert!(named.contains(&path.display().to_string()), "{named}");
}

#[test]
fn a_second_resume_of_a_live_agents_log_is_refused_naming_the_file() {
    let (_folder, path) = cut_session(r#""user/message""#, 1, 0);
    let (first, driver) = resume_live(&path);
    let before = fs::read(&path).expect("readable");
    match resume(&path) {
        Err(ResumeError::Io(error)) => assert_in_use(&error, &path),
        Err(error) => panic!("refused for another reason: {error}"),
        Ok(_) => panic!("two agents resumed one log"),
    }
    // Nor may a fresh agent take (and truncate) the live agent's file.
    match JsonlFile::create(&path) {
        Err(error) => assert_in_use(&error, &path),
        Ok(_) => panic!("a live agent's log was created over"),
    }
    assert_eq!(fs::read(&path).expect("readable"), before);
    drop(driver);
    drop(first);
    drop(resume(&path).expect("resumable once the first agent is gone"));
    assert_valid(&path);
}

#[test]
fn a_live_new_agents_log_cannot_be_resumed_until_it_is_dropped() {
    let (_folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) = Handle::new("live", pre_step_hook, step_hook, sink);
    handle.append(Target::NextTurn, "A").expect("fresh");
    match resume(&path) {
        Err(ResumeError::Io(error)) => assert_in_use(&error, &path),
        Err(error) => panic!("refused for another reason: {error}"),
        Ok(_) => panic!("a live agent's log was resumed"),
    }
    drop(driver);
    drop(handle);
    let resumed = resume(&path).expect("resumable once the agent is gone");
    assert_eq!(ids(&resumed, Target::NextTurn), [MessageId::from("A")]);
}

/// A disk that fills up: the file takes `room` more bytes, then every write
/// fails, the line it fails in written as far as the room went.
struct FillingDisk {
    file: fs::File,
    room: usize,
}

impl Sink for FillingDisk {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        let line = format!("{line}\n");
        let fits = line.len().min(self.room);
        self.file.write_all(&line.as_bytes()[..fits])?;
        self.room -= fits;
        if fits < line.len() {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "the test's disk is full",
            ));
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// The disk fills 20 bytes into the first send's first line. Under `Sync`
/// that send fails and its message never reaches a hook; under either
/// policy later calls fail with the log's error, `when_idle` and `dispose`
/// end, nothing is glued after the partial line, and a resume sees exactly
/// that torn tail.
fn a_full_disk_stops_the_agent_at_its_torn_line(durability: Durability) {
    let (_folder, path) = log_path();
    let header = SessionHeader::new("full").line() + "\n";
    let disk = FillingDisk {
        file: fs::File::create(&path).expect("a temporary file"),
        room: header.len() + 20,
    };
    let stepped = Arc::new(Mutex::new(Vec::new()));
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let seen = Arc::clone(&stepped);
    let step_hook = step_hook_fn(move |call| {
        seen.lock().expect("not poisoned").extend(call.entered);
        ready(StepOutcome::Completed)
    });
    let (handle, driver) =
        Handle::with_durability("full", durability, pre_step_hook, step_hook, disk);
    block_on(async {
        let driver = tokio::spawn(driver.run());
        let sent = handle.followup("A");
        if durability == Durability::Sync {
            assert!(matches!(sent, Err(Error::Log(_))), "{sent:?}");
        }
        let idle = bounded(handle.when_idle()).await.expect("when_idle ends");
        if durability == Durability::Sync {
            assert!(matches!(idle, Err(Error::Log(_))), "{idle:?}");
        }
        // Write-behind learns of the failure on its writer thread.
        bounded(async {
            while !matches!(handle.remove("none"), Err(Error::Log(_))) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the writer meets the full disk");
        let later = handle.followup("B");
        assert!(matches!(later, Err(Error::Log(_))), "{later:?}");
        let disposed = bounded(handle.dispose()).await.expect("dispose ends");
        assert!(matches!(disposed, Err(Error::Log(_))), "{disposed:?}");
        bounded(driver)
            .await
            .expect("the driver task ends")
            .expect("no panic");
    });
    if durability == Durability::Sync {
        let stepped = stepped.lock().expect("not poisoned");
        assert!(
            stepped.is_empty(),
            "a hook got what the log never kept: {stepped:?}"
        );
    }
    drop(handle);
    let written = fs::read_to_string(&path).expect("readable");
    assert_eq!(written.len(), header.len() + 20, "{written}");
    let read = kept::read_file(&path).expect("a torn tail, not corruption");
    assert_eq!(read.torn, Some(Torn::NoNewline { line: 2 }));
    let resumed = resume(&path).expect("resumable");
    assert_eq!(resumed.status().expect("served"), Status::Idle);
    assert_eq!(fs::read_to_string(&path).expect("readable"), header);
}

#[test]
fn a_full_disk_fails_the_send_it_could_not_keep_under_sync() {
    a_full_disk_stops_the_agent_at_its_torn_line(Durability::Sync);
}

#[test]
fn a_full_disk_stops_a_write_behind_agent_at_its_torn_line() {
    a_full_disk_stops_the_agent_at_its_torn_line(Durability::WriteBehind {
        max_delay: Duration::from_millis(1),
    });
}

/// A live agent whose log file `damage` changes behind its back: its next
/// send fails with the log's error naming what happened (`saying`), and it
/// writes nothing more: not one byte lands on the damaged file (whose last
/// line may be someone else's partial one).
fn a_log_changed_behind_the_agent_fails_its_next_send(damage: fn(&Path), saying: &str) {
    let (_folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) = Handle::new("damaged", pre_step_hook, step_hook, sink);
    handle.append(Target::NextTurn, "A").expect("kept");
    damage(&path);
    let damaged = fs::read(&path).ok();
    match handle.append(Target::NextTurn, "B") {
        Err(Error::Log(error)) => assert!(error.to_string().contains(saying), "{error}"),
        sent => panic!("sent into a damaged log: {sent:?}"),
    }
    let later = handle.append(Target::NextTurn, "C");
    assert!(matches!(later, Err(Error::Log(_))), "{later:?}");
    drop(driver);
    drop(handle);
    assert_eq!(
        fs::read(&path).ok().map(String::from_utf8),
        damaged.map(String::from_utf8),
        "the agent wrote to the damaged file"
    );
}

#[test]
fn a_log_truncated_behind_the_agent_fails_its_next_send() {
    a_log_changed_behind_the_agent_fails_its_next_send(
        |path| {
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|file| file.set_len(0))
                .expect("truncated");
        },
        "truncated",
    );
}

#[test]
fn a_log_written_behind_the_agent_fails_its_next_send() {
    a_log_changed_behind_the_agent_fails_its_next_send(
        |path| {
            let mut file = fs::OpenOptions::new()
                .append(true)
                .open(path)
                .expect("open");
            file.write_all(b"{\"type\":\"intruder\"}\n")
                .expect("written");
        },
        "written",
    );
}

#[test]
fn a_log_replaced_behind_the_agent_fails_its_next_send() {
    a_log_changed_behind_the_agent_fails_its_next_send(
        |path| {
            let other = path.with_extension("new");
            fs::write(
                &other,
                "{\"type\":\"session\",\"version\":0,\"id\":\"other\"}\n",
            )
            .expect("written");
            fs::rename(&other, path).expect("replaced");
        },
        "replaced",
    );
}

/// A second link (a backup's hard link) keeps the old file alive: its path
/// must not name another file. Before, the lines went on into the file
/// only the backup named, and the send returned `Ok`.
#[cfg(unix)]
#[test]
fn a_log_replaced_behind_the_agent_while_linked_elsewhere_fails_its_next_send() {
    a_log_changed_behind_the_agent_fails_its_next_send(
        |path| {
            fs::hard_link(path, path.with_extension("backup")).expect("linked");
            let other = path.with_extension("other");
            fs::write(&other, "").expect("written");
            fs::rename(&other, path).expect("replaced");
        },
        "replaced by another file",
    );
}

/// A log renamed under the agent is still its log: it goes on appending to
/// it under its new name (a path that names nothing is no deletion while
/// the file has a link).
#[cfg(unix)]
#[test]
fn a_log_renamed_under_the_agent_is_still_appended_to() {
    let (_folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) = Handle::new("renamed", pre_step_hook, step_hook, sink);
    handle.append(Target::NextTurn, "A").expect("kept");
    let renamed = path.with_extension("renamed");
    fs::rename(&path, &renamed).expect("renamed");
    handle
        .append(Target::NextTurn, "B")
        .expect("kept under its new name");
    drop(driver);
    drop(handle);
    let text = fs::read_to_string(&renamed).expect("readable");
    assert!(text.contains(r#""id":"B""#), "{text}");
}

#[test]
fn a_log_deleted_behind_the_agent_fails_its_next_send() {
    a_log_changed_behind_the_agent_fails_its_next_send(
        |path| fs::remove_file(path).expect("deleted"),
        "deleted",
    );
}

/// Resumes the log `text` and returns what the file holds after it; the
/// kept lines, `kept` bytes of `text`, must be untouched.
fn resumed_text(path: &Path, text: &str, kept: usize) -> (Resumed, String) {
    fs::write(path, text).expect("writable");
    let handle = resume(path).expect("resumable");
    let after = fs::read_to_string(path).expect("readable");
    assert_eq!(
        after.as_bytes()[..kept],
        text.as_bytes()[..kept],
        "kept lines rewritten"
    );
    (handle, after)
}

#[test]
fn a_lone_surrogate_escape_reads_as_its_private_use_stand_in_and_its_line_is_never_rewritten() {
    let (_folder, path) = cut_session(r#""turn/start""#, 1, 0);
    let text = fs::read_to_string(&path).expect("readable");
    let lone = text.replace(r#""text":"B""#, r#""text":"B\ud83d""#);
    assert_ne!(lone, text, "B's text is in the log");
    let (handle, after) = resumed_text(&path, &lone, lone.len());
    assert!(after.contains(r#""text":"B\ud83d""#), "{after}");
    let inbox = handle.inbox();
    let pending = inbox
        .list(Target::NextStep)
        .iter()
        .chain(inbox.list(Target::NextTurn));
    let json: Vec<&str> = pending.map(|message| message.json()).collect();
    assert!(
        json.iter().any(|json| json.contains("B\u{fd83d}")),
        "{json:?}"
    );
    drop(handle);
    assert_resumes_again_unchanged(&path);
}

/// A message whose id escapes a lone surrogate (`B\ud83d`, read as
/// `B` U+FD83D), resumed and then logged again by the runtime (its
/// `user/message` when turn 3 claims it), under each policy: the new line
/// writes the id as it was read from, `\ud83d`, never the stand-in raw
/// (which dsh would read as another id), and the whole file validates and
/// reads back to the one id.
#[test]
fn a_lone_surrogate_id_is_written_back_as_its_escape() {
    let policies = [
        Durability::Sync,
        Durability::WriteBehind {
            max_delay: Duration::from_millis(1),
        },
    ];
    for durability in policies {
        let (_folder, path) = cut_session(r#""turn/start""#, 1, 0);
        let text = fs::read_to_string(&path).expect("readable");
        let lone = text.replace(r#""B""#, r#""B\ud83d""#);
        assert_ne!(lone, text, "B is in the log");
        fs::write(&path, &lone).expect("writable");
        resume_and_run_a_turn(&path, durability, "C");
        let after = fs::read_to_string(&path).expect("readable");
        let appended = after.strip_prefix(&lone).expect("kept lines untouched");
        let delivered = appended
            .lines()
            .find(|line| line.starts_with(r#"{"type":"user/message""#))
            .expect("turn 3 delivers B");
        assert!(
            delivered.contains(r#""id":"B\ud83d""#),
            "{durability:?}: {delivered}"
        );
        assert!(!after.contains('\u{fd83d}'), "{durability:?}: {after}");
        let LogLine::Delivery(Output::UserMessage(message)) =
            log::parse_line(delivered).expect("reads")
        else {
            panic!("not a user/message: {delivered}");
        };
        assert_eq!(message.id(), &MessageId::from("B\u{fd83d}"));
        assert_valid(&path);
    }
}

#[test]
fn a_crlf_log_resumes_its_lines_untouched_and_its_torn_tail_cut() {
    let (_folder, path) = cut_session(r#""turn/start""#, 1, 0);
    let crlf = fs::read_to_string(&path)
        .expect("readable")
        .replace('\n', "\r\n");
    let torn = format!("{crlf}{{\"type\":\"agent/inbox/spli");
    let (handle, after) = resumed_text(&path, &torn, crlf.len());
    assert_eq!(&after[crlf.len()..], TURN_2_CLOSED);
    assert_eq!(ids(&handle, Target::NextTurn), [MessageId::from("B")]);
    drop(handle);
    assert_valid(&path);
}

#[test]
fn a_final_line_of_valid_json_without_its_newline_is_torn_and_cut() {
    let (_folder, path) = cut_session(r#""turn/start""#, 1, 0);
    let text = fs::read_to_string(&path).expect("readable");
    let unfinished = text.strip_suffix('\n').expect("lines");
    let kept = unfinished.rfind('\n').expect("lines") + 1;
    let read = kept::read(unfinished.as_bytes()).expect("readable");
    assert!(
        matches!(read.torn, Some(Torn::NoNewline { .. })),
        "{:?}",
        read.torn
    );
    let (handle, after) = resumed_text(&path, unfinished, kept);
    // The unfinished `turn/start` never happened: turn 2 is not open, B waits.
    assert_eq!(after, &unfinished[..kept]);
    assert_eq!(ids(&handle, Target::NextTurn), [MessageId::from("B")]);
    assert_eq!(handle.status().expect("served"), Status::Idle);
    drop(handle);
    assert_valid(&path);
}

#[test]
fn a_log_of_only_its_header_resumes_empty_and_a_torn_header_is_refused() {
    let (_folder, path) = log_path();
    let header = SessionHeader::new("bare").line();
    let whole = format!("{header}\n");
    let (handle, after) = resumed_text(&path, &whole, whole.len());
    assert_eq!(after, whole, "a balanced log gets nothing appended");
    assert!(handle.inbox().list(Target::NextTurn).is_empty());
    drop(handle);
    fs::write(&path, &header).expect("writable");
    match resume(&path) {
        Err(ResumeError::Unresumable(error)) => assert_eq!(error.line, 1, "{error}"),
        other => panic!("a torn header resumed: {:?}", other.map(|_| ())),
    }
    assert_eq!(fs::read_to_string(&path).expect("readable"), header);
}

#[test]
fn a_disposed_agents_log_resumes_at_once_while_its_handle_lives() {
    let (_folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) = Handle::new("disposed", pre_step_hook, step_hook, sink);
    block_on(async {
        let _driver = tokio::spawn(driver.run());
        handle.append(Target::NextTurn, "A").expect("kept");
        handle.dispose().await.expect("written");
        // The handle and perhaps the driver task still hold the agent.
        let resumed = resume(&path).expect("released at the disposal's end");
        assert!(
            resumed.inbox().list(Target::NextTurn).is_empty(),
            "A was discarded"
        );
        let again = handle.dispose().await;
        assert!(again.is_ok(), "{again:?}");
    });
}

/// An agent disposed mid-turn leaves a balanced log (its turn ended
/// `aborted:disposed`), which a resume appends nothing to; the turn the
/// resumed agent then runs keeps the log valid. Before, the validator read
/// that turn as the disposed agent's (`no-wake-stays-idle`).
#[test]
fn a_log_disposed_mid_turn_resumes_and_runs_a_valid_turn() {
    // The step never answers: the dispose ends the turn.
    let (_folder, path, handle, driver) = never_stepping("disposed-mid-turn");
    block_on(async {
        let driver = tokio::spawn(driver.run());
        open_first_step(&handle).await;
        handle.dispose().await.expect("written");
        drop(handle);
        driver.await.expect("the driver task ends");
    });
    let disposed = fs::read_to_string(&path).expect("readable");
    assert!(
        disposed.ends_with(
            "{\"type\":\"turn/end\",\"data\":{\"turn\":1,\"reason\":{\"kind\":\"aborted\",\"reason\":{\"kind\":\"disposed\"}}}}\n"
        ),
        "{disposed}"
    );
    assert_valid(&path);
    resume_and_run_a_turn(&path, Durability::Sync, "B");
    let after = fs::read_to_string(&path).expect("readable");
    assert!(
        after.contains(r#"{"type":"turn/start","data":{"turn":2}}"#),
        "{after}"
    );
    assert_valid(&path);
}

/// A log torn inside a line, resumed, then written on: the torn bytes are
/// cut, never glued onto the next record, so the new turn's lines follow
/// the last whole line and the file validates.
#[test]
fn a_torn_log_resumed_then_appended_to_has_no_trace_of_the_torn_bytes() {
    // Turn 2 open, 17 bytes of its claim's `spliced` torn.
    let (_folder, path) = cut_session(r#""turn/start""#, 1, 17);
    let before = fs::read_to_string(&path).expect("readable");
    let kept = &before[..before.rfind('\n').expect("lines") + 1];
    let torn = &before[kept.len()..];
    assert_eq!(torn.len(), 17, "{torn}");
    resume_and_run_a_turn(&path, Durability::Sync, "C");
    let after = fs::read_to_string(&path).expect("readable");
    let appended = after
        .strip_prefix(kept)
        .expect("the kept lines are untouched");
    let appended = appended
        .strip_prefix(TURN_2_CLOSED)
        .expect("the closers come first");
    assert!(
        appended.starts_with(
            r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":1,"#
        ),
        "C's send follows the closers, after B: {appended}"
    );
    assert!(
        appended.contains(r#"{"type":"turn/start","data":{"turn":3}}"#),
        "{appended}"
    );
    for line in after.lines() {
        let parsed = serde_json::from_str::<serde_json::Value>(line);
        assert!(parsed.is_ok(), "a line glued onto torn bytes: {line}");
    }
    assert_valid(&path);
}

/// A sink whose writes succeed and whose syncs fail (`EIO` from `fsync`)
/// after the header's: what the OS was handed may never reach the disk.
struct SyncFails {
    synced: bool,
}

impl Sink for SyncFails {
    fn write_line(&mut self, _line: &str) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.synced, true) {
            Err(io::Error::from_raw_os_error(5))
        } else {
            Ok(())
        }
    }
}

/// Under `Sync` a send is acknowledged only once synced: the send whose
/// sync fails, and every later one, are refused, no hook ever sees them,
/// and `when_idle` and `dispose` end with the error.
#[test]
fn a_failed_sync_acknowledges_no_send_under_sync() {
    let stepped = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&stepped);
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(move |call| {
        seen.lock().expect("not poisoned").extend(call.entered);
        ready(StepOutcome::Completed)
    });
    let sink = SyncFails { synced: false };
    let (handle, driver) = Handle::new("eio", pre_step_hook, step_hook, sink);
    block_on(async {
        let driver = tokio::spawn(driver.run());
        for id in ["A", "B"] {
            let sent = handle.followup(id);
            assert!(
                matches!(&sent, Err(Error::Log(error)) if error.to_string().contains("os error 5")),
                "{id}: {sent:?}"
            );
        }
        let idle = bounded(handle.when_idle()).await.expect("when_idle ends");
        assert!(matches!(idle, Err(Error::Log(_))), "{idle:?}");
        let disposed = bounded(handle.dispose()).await.expect("dispose ends");
        assert!(matches!(disposed, Err(Error::Log(_))), "{disposed:?}");
        bounded(driver)
            .await
            .expect("the driver task ends")
            .expect("no panic");
    });
    let stepped = stepped.lock().expect("not poisoned");
    assert!(
        stepped.is_empty(),
        "a hook got an unsynced send: {stepped:?}"
    );
}

/// Every recorded dsh log (the vendored copies of
/// `../shared/fixtures/dsh-logs` and `dsh-restart-logs`, the latter written
/// across dsh's own crashes and resumes), resumed and written on by the
/// runtime: its lines stay untouched, and the whole file still validates.
#[test]
fn every_dsh_log_resumed_and_appended_to_still_validates() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/shared");
    let mut logs: Vec<PathBuf> = ["dsh-logs", "dsh-restart-logs"]
        .into_iter()
        .flat_map(|folder| fs::read_dir(shared.join(folder)).expect("the vendored dsh logs"))
        .map(|entry| entry.expect("listed").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .collect();
    logs.sort();
    assert!(logs.len() >= 106, "found only {} dsh logs", logs.len());
    let (_folder, path) = log_path();
    let mut numbered = 0;
    for log in &logs {
        let original = fs::read(log).expect("readable");
        fs::write(&path, &original).expect("writable");
        let durability = Durability::WriteBehind {
            max_delay: Duration::from_millis(1),
        };
        resume_and_run_a_turn(&path, durability, "courier-after-resume");
        let after = fs::read(&path).expect("readable");
        assert!(after.starts_with(&original), "{log:?}: a kept line changed");
        let (valid, findings) = verdict(&path);
        assert!(valid, "{log:?}: {findings:?}");
        numbered += usize::from(assert_numbered_on(&after, log));
    }
    assert!(numbered >= 6, "only {numbered} numbered dsh logs");
}

/// Whether the log `text` numbers its records (`seq`, as dsh's JSONL
/// backend writes them); if it does, every record the runtime appended is
/// numbered on (dsh's loader refuses a log whose `seq` skips, or stops),
/// and, when the log has times, takes a time no earlier than the last.
fn assert_numbered_on(text: &[u8], log: &Path) -> bool {
    let records: Vec<serde_json::Value> = text
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .skip(1)
        .map(|line| serde_json::from_slice(line).expect("JSON"))
        .collect();
    if records
        .first()
        .is_none_or(|record| record.get("seq").is_none())
    {
        return false;
    }
    let mut time = 0;
    for (seq, record) in records.iter().enumerate() {
        assert_eq!(record["seq"], seq, "{log:?}: {record}");
        if let Some(at) = record.get("time") {
            let at = at.as_u64().expect("milliseconds");
            assert!(at >= time, "{log:?}: {record} goes back in time");
            time = at;
        }
    }
    true
}

/// An agent named `name` on a new log (in the folder returned, which
/// lives as long as it) whose pre-step passes and whose step hook never
/// completes, and its driver task, not yet spawned.
fn never_stepping(
    name: &str,
) -> (
    tempfile::TempDir,
    PathBuf,
    Handle,
    DriverTask<impl PreStepHook, impl StepHook>,
) {
    let (folder, path) = log_path();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| std::future::pending::<StepOutcome>());
    let sink = JsonlFile::create(&path).expect("a temporary file");
    let (handle, driver) = Handle::new(name, pre_step_hook, step_hook, sink);
    (folder, path, handle, driver)
}

/// Sends `A` and waits until its turn's first step is open.
async fn open_first_step(handle: &Handle) {
    handle.followup("A").expect("kept");
    while !matches!(handle.status(), Ok(Status::Running { step: 1, .. })) {
        tokio::task::yield_now().await;
    }
}

/// An agent on a new log at `path` whose step hook never completes, run
/// until its first step is open; `fail` then breaks it (`driver` is its
/// driver task's), and its `dispose` must end with the error `failed`
/// names. Nothing will ever be written again, so the file is let go: the
/// embedder resumes it while the broken agent's handle lives, and it
/// validates.
fn a_broken_agents_log_resumes_after_its_dispose(
    fail: impl AsyncFnOnce(&Path, &Handle, tokio::task::JoinHandle<()>),
    failed: fn(&Error) -> bool,
) {
    let (_folder, path, handle, driver) = never_stepping("broken");
    block_on(async {
        let driver = tokio::spawn(driver.run());
        open_first_step(&handle).await;
        fail(&path, &handle, driver).await;
        match bounded(handle.dispose()).await.expect("dispose ends") {
            Err(error) if failed(&error) => {}
            disposed => panic!("{disposed:?}"),
        }
        match resume(&path) {
            Ok(resumed) => assert_eq!(resumed.status().expect("served"), Status::Idle),
            Err(error) => panic!("the broken agent still holds its log: {error}"),
        }
    });
    drop(handle);
    assert_valid(&path);
}

#[test]
fn a_failed_agents_dispose_lets_its_log_be_resumed_while_its_handle_lives() {
    // Someone else writes to the log: the agent's next write fails.
    a_broken_agents_log_resumes_after_its_dispose(
        async |path, handle, _driver| {
            let mut file = fs::OpenOptions::new()
                .append(true)
                .open(path)
                .expect("open");
            file.write_all(b"{\"type\":\"intruder\"}\n")
                .expect("written");
            let sent = handle.append(Target::NextTurn, "B");
            assert!(matches!(sent, Err(Error::Log(_))), "{sent:?}");
        },
        |error| matches!(error, Error::Log(_)),
    );
}

#[test]
fn a_dead_drivers_dispose_lets_its_log_be_resumed_while_its_handle_lives() {
    a_broken_agents_log_resumes_after_its_dispose(
        async |_path, _handle, driver| {
            driver.abort();
            assert!(driver.await.is_err(), "the task was cancelled");
        },
        |error| matches!(error, Error::DriverGone),
    );
}

/// Two agents resume one log at the same moment, from two threads: exactly
/// one gets it, the other is refused naming the file, and the closers are
/// appended once.
#[test]
fn two_agents_resuming_one_log_at_once_get_it_once() {
    let (_folder, path) = cut_session(r#""turn/start""#, 1, 0);
    let before = fs::read_to_string(&path).expect("readable");
    let start = Arc::new(std::sync::Barrier::new(2));
    let resumes: Vec<_> = (0..2)
        .map(|_| {
            let (path, start) = (path.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let resumed = resume(&path);
                // Held until both tried.
                start.wait();
                resumed.map(drop)
            })
        })
        .collect();
    let mut resumed = 0;
    for resume in resumes {
        match resume.join().expect("no panic") {
            Ok(()) => resumed += 1,
            Err(ResumeError::Io(error)) => assert_in_use(&error, &path),
            Err(error) => panic!("refused for another reason: {error}"),
        }
    }
    assert_eq!(resumed, 1, "one agent resumed the log");
    let after = fs::read_to_string(&path).expect("readable");
    assert_eq!(after, format!("{before}{TURN_2_CLOSED}"));
    assert_valid(&path);
}

/// `depth` arrays around a string: a content nested `depth` deep.
fn nested(depth: usize) -> serde_json::Value {
    (0..depth).fold(serde_json::json!("x"), |inner, _| {
        serde_json::json!([inner])
    })
}

#[test]
fn a_message_whose_line_would_not_read_back_is_refused_and_the_rest_resumes() {
    let (_folder, path) = log_path();
    let sink = JsonlFile::create(&path).expect("a fresh log");
    let (agent, driver) = Handle::new(
        "unloggable",
        pre_step_hook_fn(|_| ready(PreStepDecision::Pass)),
        step_hook_fn(|_| ready(StepOutcome::Completed)),
        sink,
    );
    let message = |id: &str, content, source| Message::new(MessageId::new(id), content, source);
    let extra = |key: &str| serde_json::Map::from_iter([(key.to_owned(), serde_json::json!(1))]);
    let refused = [
        message("deep", nested(124), Source::user()),
        message(
            "kind",
            nested(0),
            Source::User {
                extra: extra("kind"),
            },
        ),
        message(
            "plugin",
            nested(0),
            Source::Plugin {
                plugin: "p".into(),
                extra: extra("plugin"),
            },
        ),
        message(
            "goal",
            nested(0),
            Source::Other {
                kind: "goal".into(),
                extra: serde_json::Map::new(),
            },
        ),
        // Written `\ud83d\ude00`, it would read back as U+1F600.
        message("pair\u{FD83D}\u{FDE00}", nested(0), Source::user()),
    ];
    block_on(async {
        let task = tokio::spawn(driver.run());
        for message in refused {
            let id = message.id().clone();
            let sent = agent.append(Target::NextTurn, message);
            assert!(
                matches!(&sent, Err(Error::Unloggable { id: named, .. }) if *named == id),
                "{sent:?}"
            );
        }
        // As deep as a splice line holds: accepted, logged (durably, under
        // `Sync`, when the call returns) and read back.
        let deepest = message("deepest", nested(123), Source::user());
        agent.append(Target::NextTurn, deepest).expect("accepted");
        task.abort();
        assert!(bounded(task).await.expect("no hang").is_err(), "aborted");
    });
    drop(agent);
    assert_valid(&path);
    let resumed = resume(&path).expect("the log resumes");
    assert_eq!(ids(&resumed, Target::NextTurn), [MessageId::new("deepest")]);
}

/// Runs the driver task, `sends`, then waits for the turn and disposes.
fn one_turn_then_dispose(
    agent: &Handle,
    driver: DriverTask<impl PreStepHook, impl StepHook>,
    sends: impl FnOnce(),
) {
    block_on(async {
        let task = tokio::spawn(driver.run());
        sends();
        let idle = bounded(agent.when_idle()).await.expect("no hang");
        idle.expect("served");
        let disposed = bounded(agent.dispose()).await.expect("no hang");
        disposed.expect("written");
        bounded(task).await.expect("no hang").expect("no panic");
    });
}

/// A pre-step decision the core fails (SPEC §5: it enters an id twice, or
/// one that is pending) is told why among `hook_panics`, as an unloggable
/// message is: the hook returned, so nothing else says why the turn ended
/// `error`. Before, the list stayed empty.
#[test]
fn a_pre_step_decision_entering_an_id_twice_or_a_pending_one_says_why() {
    for (entering, why) in [
        (["a", "a"], r#"the decision enters "a" twice"#),
        (["a", "q"], r#"the decision enters "q", which is pending"#),
    ] {
        let pre_step_hook = pre_step_hook_fn(move |_| {
            let batch = entering.iter().map(|id| Message::from(*id)).collect();
            ready(PreStepDecision::Enter(batch))
        });
        let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
        let (agent, driver) = Handle::new("twice", pre_step_hook, step_hook, MemoryLog::new());
        one_turn_then_dispose(&agent, driver, || {
            agent.followup("a").expect("accepted");
            agent
                .send("q", Target::NextTurn, Wakeup::NoWake)
                .expect("accepted");
        });
        let failed = agent.hook_panics();
        assert!(
            failed.len() == 1 && failed[0].message == why && failed[0].hook == Hook::PreStep,
            "{failed:?}"
        );
    }
}

/// A turn aborted while its pre-step hook ran ends `aborted` whatever the
/// decision, so a decision the core would otherwise fail is no failure to
/// report. (A first version reported it.)
#[test]
fn a_decision_on_an_aborted_turn_is_no_failure() {
    let pre_step_hook = pre_step_hook_fn(|boundary: Boundary| async move {
        // Aborted while the hook's future runs, which then answers at once.
        let agent = boundary.agent.upgrade().expect("alive");
        let cancelled = agent.cancel(CancelCause::User, true);
        drop(agent);
        let twice = vec![Message::from("a"), Message::from("a")];
        cancelled.map_or(PreStepDecision::Fail, |()| PreStepDecision::Enter(twice))
    });
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let log = MemoryLog::new();
    let (agent, driver) = Handle::new("aborted", pre_step_hook, step_hook, log.clone());
    one_turn_then_dispose(&agent, driver, || {
        agent.followup("a").expect("accepted");
    });
    let lines = log.lines();
    let ends: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("turn/end"))
        .collect();
    assert!(
        ends.len() == 1 && ends[0].contains(r#""kind":"aborted""#),
        "{ends:?}"
    );
    assert_eq!(agent.hook_panics(), []);
}

#[test]
fn a_pre_step_hook_entering_a_message_that_would_not_read_back_fails_its_boundary() {
    let (_folder, path) = log_path();
    let sink = JsonlFile::create(&path).expect("a fresh log");
    let pre_step_hook = pre_step_hook_fn(|_| {
        let deep = Message::new(MessageId::new("deep"), nested(130), Source::user());
        ready(PreStepDecision::Enter(vec![deep]))
    });
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let (agent, driver) = Handle::new("unloggable", pre_step_hook, step_hook, sink);
    one_turn_then_dispose(&agent, driver, || {
        agent.followup("a").expect("accepted");
    });
    let failed = agent.hook_panics();
    assert!(
        failed.len() == 1 && failed[0].message.contains("message deep: not logged"),
        "{failed:?}"
    );
    drop(agent);
    assert_valid(&path);
    let log = fs::read_to_string(&path).expect("readable");
    let ends: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("turn/end"))
        .collect();
    assert!(
        ends.len() == 1 && ends[0].contains(r#""reason":{"kind":"error""#),
        "{log}"
    );
    assert!(!log.contains(r#""id":"deep""#), "{log}");
}

#[test]
fn a_weak_handle_a_hook_kept_does_not_keep_the_log_locked_once_the_agent_is_gone() {
    for durability in [
        Durability::Sync,
        Durability::WriteBehind {
            max_delay: Duration::from_millis(5),
        },
    ] {
        let (_folder, path) = log_path();
        let sink = JsonlFile::create(&path).expect("a fresh log");
        let kept = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&kept);
        let step_hook = step_hook_fn(move |call: courier_runtime::StepCall| {
            keep.lock().expect("not poisoned").push(call.agent);
            ready(StepOutcome::Completed)
        });
        let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
        let (agent, driver) =
            Handle::with_durability("weak", durability, pre_step_hook, step_hook, sink);
        block_on(async {
            let task = tokio::spawn(driver.run());
            agent.followup("a").expect("accepted");
            bounded(agent.when_idle())
                .await
                .expect("no hang")
                .expect("served");
            // No dispose: the last handle goes, and the driver task with it.
            drop(agent);
            bounded(task).await.expect("no hang").expect("no panic");
        });
        let weak = kept.lock().expect("not poisoned");
        assert!(
            weak.len() == 1 && weak[0].upgrade().is_none(),
            "{durability:?}"
        );
        let resumed = resume(&path);
        assert!(resumed.is_ok(), "{durability:?}: {:?}", resumed.err());
    }
}

/// A log that cannot be created is named in the error, as a resume's are.
/// Before, a missing folder said only `No such file or directory`.
#[test]
fn a_log_that_cannot_be_created_is_named() {
    let (_folder, path) = log_path();
    let missing = path.join("no-such-folder").join("log.jsonl");
    let Err(error) = JsonlFile::create(&missing) else {
        panic!("created in a folder that does not exist");
    };
    assert!(
        error.to_string().contains(&format!("{missing:?}")),
        "{error}"
    );
}
