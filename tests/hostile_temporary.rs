//! The temporary files every write goes through (`courier::files`): named
//! `.NAME.PID.N.tmp`, unique per process and per write, so a stale one
//! left by a process killed mid-write never blocks a later write, is never
//! taken over, and two writers never share one. Its own test binary, so
//! this process's count of temporary files starts at 0 and the stale names
//! below are the very names it would try first.

use std::path::Path;

#[cfg(unix)]
mod signals;

/// The files in `folder`, sorted.
fn listing(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("a readable folder")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn never_destroy_a_stale_temporary_file_neither_blocks_nor_is_taken() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let target = folder.path().join("t.txn");
    std::fs::write(&target, "old").expect("a writable file");
    // What this process would have used had it been killed mid-write
    // before (a pid is reused): the first ten names it tries.
    let pid = std::process::id();
    let stale: Vec<String> = (0..10).map(|n| format!(".t.txn.{pid}.{n}.tmp")).collect();
    for name in &stale {
        std::fs::write(folder.path().join(name), "not ours").expect("a writable file");
    }
    // Two writers at once, each through a temporary file of its own.
    std::thread::scope(|scope| {
        for text in ["one", "two"] {
            let target = &target;
            scope.spawn(move || courier::files::replace(target, text).expect("the write"));
        }
    });
    let written = std::fs::read_to_string(&target).expect("the target");
    assert!(written == "one" || written == "two", "{written}");
    for name in &stale {
        let kept = std::fs::read_to_string(folder.path().join(name)).expect("the stale file");
        assert_eq!(kept, "not ours", "{name}");
    }
    // Nothing else is left behind.
    let mut expected = stale;
    expected.push("t.txn".to_owned());
    expected.sort();
    assert_eq!(listing(folder.path()), expected);
}

/// A target whose name is as long as a file system allows still gets a
/// temporary file beside it (its name cut to fit). Before,
/// `diagram t.txn --out <250 d's>.svg` failed with `File name too long`.
#[test]
fn never_destroy_a_name_as_long_as_allowed_is_written() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let target = folder.path().join(format!("{}.svg", "é".repeat(125)));
    courier::files::replace(&target, "drawn").expect("the write");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the target"),
        "drawn"
    );
    assert_eq!(listing(folder.path()).len(), 1);
}

/// Ctrl-C (or SIGTERM, SIGHUP) ends a command with exit 130 and removes
/// the temporary file it was writing through: an exit runs no destructors,
/// and a signal's default death none either. Before, `diagram --out` to a
/// FIFO nobody reads (its picture staged in the temporary folder, then
/// blocked) left the staged file behind when interrupted.
#[cfg(unix)]
#[test]
fn never_destroy_an_interrupted_write_leaves_no_temporary_file() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let folder = tempfile::tempdir().expect("a temporary folder");
    let staging = folder.path().join("tmp");
    std::fs::create_dir(&staging).expect("a folder");
    let fifo = folder.path().join("picture.svg");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/aborted-turn-ignores-outcome.txn");
    assert!(transcript.is_file(), "{}", transcript.display());
    for signal in ["INT", "TERM"] {
        let mut child =
            signals::with_default_signals(&mut Command::new(env!("CARGO_BIN_EXE_courier")))
                .args(["diagram"])
                .arg(&transcript)
                .arg("--out")
                .arg(&fifo)
                .env("TMPDIR", &staging)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("the courier binary runs");
        // Blocked at the FIFO's open, its picture staged.
        let deadline = Instant::now() + Duration::from_secs(30);
        while listing(&staging).is_empty() {
            assert!(Instant::now() < deadline, "nothing was staged");
            std::thread::sleep(Duration::from_millis(20));
        }
        signals::send(child.id(), signal);
        let status = child.wait().expect("the child ends");
        assert_eq!(status.code(), Some(130), "signal {signal}");
        assert_eq!(listing(&staging), Vec::<String>::new(), "signal {signal}");
    }
}

/// A command that holds no temporary file ends on SIGTERM or SIGHUP with
/// exit 130 too, as the README says (before, the handler came with the
/// first temporary file, so a long `check` died by the signal: 143, 129).
#[cfg(unix)]
#[test]
fn a_signal_ends_any_command_with_exit_130() {
    for signal in ["TERM", "HUP"] {
        let mut check = std::process::Command::new(env!("CARGO_BIN_EXE_courier"));
        check.args(["check", "--messages", "6", "--threads", "1"]);
        let mut child = signals::searching(signals::with_default_signals(&mut check));
        signals::send(child.id(), signal);
        let status = child.wait().expect("the child ends");
        assert_eq!(status.code(), Some(130), "SIG{signal}");
    }
}

/// A signal the command was started ignoring stays ignored (`nohup`, a
/// script's background job): before, the handler took SIGHUP over, so a
/// `nohup courier check` died with its terminal.
#[cfg(unix)]
#[test]
fn a_signal_started_ignored_stays_ignored() {
    let mut check = std::process::Command::new("sh");
    check
        .args([
            "-c",
            "trap '' HUP; exec \"$0\" check --messages 6 --threads 1",
        ])
        .arg(env!("CARGO_BIN_EXE_courier"));
    let mut child = signals::searching(&mut check);
    signals::send(child.id(), "HUP");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        child.try_wait().expect("waitable").is_none(),
        "SIGHUP ended it"
    );
    signals::send(child.id(), "TERM");
    assert_eq!(child.wait().expect("it ends").code(), Some(130));
}
