//! Every command under input a hostile (or unlucky) user gives it, one test
//! per class of issue 16: files are never destroyed or corrupted, nothing
//! panics, memory stays bounded, and exit codes and messages tell the truth.
//! Each test is named for its class.

mod common;
#[cfg(unix)]
mod signals;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::PASSING;
use courier_core::{Input, Message, Source, Stimulus};
use courier_sim::{REPORT_FORMAT, Report, Restarts};
use tempfile::TempDir;

fn courier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_courier"))
}

/// Runs `courier` with `arguments`; its exit code, stdout and stderr.
fn run(arguments: &[&str]) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = courier().args(arguments).output().expect("courier runs");
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (status.code(), text(stdout), text(stderr))
}

fn folder() -> TempDir {
    tempfile::tempdir().expect("a temporary folder")
}

fn write(folder: &TempDir, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = folder.path().join(name);
    std::fs::write(&path, bytes).expect("a writable temporary file");
    path
}

fn text(path: &Path) -> String {
    path.to_str().expect("a UTF-8 temporary path").to_owned()
}

/// A report of `trace` on the correct core, as `courier sim` writes one.
fn report(trace: Vec<Stimulus>) -> String {
    let (swarm, _) = courier_sim::draw(7, Restarts::Drawn);
    Report {
        format: REPORT_FORMAT,
        seed: 7,
        mutant: None,
        swarm,
        property: courier_check::Property::NoLostWakeup,
        detail: "retired with 1 owed: A".to_owned(),
        output_hash: "fnv1a64:0123456789abcdef".parse().expect("a hash"),
        trace,
    }
    .to_json()
}

fn followup(id: &str) -> Stimulus {
    Stimulus::Input(Input::followup(Message::text(id, Source::user())))
}

// 1. Never destroy or corrupt a file.

#[test]
fn never_destroy_a_full_disk_mid_write_leaves_the_old_file_whole() {
    let folder = folder();
    let path = write(&folder, "t.txn", PASSING);
    // An injected writer that fills half the file, then finds the disk full.
    let failed = courier::files::replace_with(&path, |file| {
        file.write_all(&PASSING.as_bytes()[..PASSING.len() / 2])?;
        Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
    });
    assert_eq!(
        failed.map_err(|error| error.kind()),
        Err(io::ErrorKind::StorageFull)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), PASSING);
    let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "the temporary file is removed: {left:?}");
    // And a write that succeeds replaces the file whole.
    courier::files::replace(&path, "status\n----\nidle\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "status\n----\nidle\n"
    );
}

#[test]
fn never_destroy_a_missing_blank_line_is_a_layout_error_naming_the_line() {
    let folder = folder();
    // The blank line after the first block is missing: reading on would
    // merge the next command into its outputs (a comment before it is
    // one, SPEC §9), and `--rewrite` would replace them. Issue 16's
    // example, then the same without the comment, a command alone, then a
    // typo and `----`.
    let cases = [
        (
            "merged.txn",
            "followup A\n----\nspliced next-turn@0 +A\n# note\nfollowup B\n----\nx\n",
            5,
            "a command inside an expected block",
        ),
        (
            "merged-command.txn",
            "followup A\n----\nspliced next-turn@0 +A\nfollowup B\n----\nx\n",
            4,
            "a command inside an expected block",
        ),
        // A new command without its `----` yet (the last block, for
        // `--rewrite` to fill): `--rewrite` deleted it as a stale output.
        (
            "new-command.txn",
            "status\n----\nidle\n  restart lose=1\n",
            4,
            "a command inside an expected block",
        ),
        // A malformed command (a bad-command block, or one still being
        // written) starts with a command's word, which no output does:
        // `--rewrite` deleted it as a stale output.
        (
            "malformed-command.txn",
            "inbox\n----\nnext-turn:\nnext-step:\nfollowup A B\nsteer\n",
            5,
            "a command inside an expected block",
        ),
        // A line that is no command (a typo) is taken for an output, but
        // its `----` still shows the blank line is missing.
        (
            "dashes.txn",
            "followup A\n----\nspliced next-turn@0 +A\nfolowup B\n----\nx\n",
            5,
            "`----` inside an expected block",
        ),
        // The `----` under a command forgotten: each expected line was read
        // as a command of its own, and `--rewrite` pinned a `bad-command`
        // under each, the expected outputs gone.
        (
            "forgotten-dashes.txn",
            "followup A\nspliced next-turn@0 +A\n~inserted A\n\nstatus\n----\nidle\n",
            2,
            "an output line right under a command with no `----` between them",
        ),
        (
            "forgotten-dashes-live.txn",
            "inbox\n----\nnext-turn:\nnext-step:\n\nwhen-idle\n~idle\n",
            7,
            "an output line right under a command with no `----` between them",
        ),
    ];
    for (name, content, line, reason) in cases {
        let path = write(&folder, name, content);
        for command in [&["run", "--rewrite"][..], &["run"], &["diagram"]] {
            let file = text(&path);
            let arguments = [command, &[file.as_str()]].concat();
            let (code, _, stderr) = run(&arguments);
            assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
            let run_form = format!("{name}:{line}: {reason}");
            let diagram_form = format!("{name}: line {line}: {reason}");
            assert!(
                stderr.contains(&run_form) || stderr.contains(&diagram_form),
                "{arguments:?}: {stderr}"
            );
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
}

/// SPEC §9: `#` starts a comment line, wherever it stands. Comments
/// between a command and its `----` and among its expected lines are no
/// expected lines: the file passes `run`, and `--rewrite` of a failing
/// block keeps every one. Before, the file was unreadable (exit 2).
#[test]
fn never_destroy_a_comment_inside_a_block_is_kept_and_not_expected() {
    let folder = folder();
    let passing = "followup A\n# why A\n----\nspliced next-turn@0 +A\n~inserted A\n# then it runs\n~status running\nturn/start 1\nspliced next-turn@0 -1\n~claimed A 1\n# claimed\n";
    let path = write(&folder, "commented.txn", passing);
    let (code, stdout, stderr) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let failing = passing.replace("~claimed A 1", "~claimed B 1");
    let path = write(&folder, "failing.txn", &failing);
    let (code, _, stderr) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(1), "{stderr}");
    let (code, _, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(0), "{stderr}");
    let rewritten = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        rewritten,
        "followup A\n# why A\n----\nspliced next-turn@0 +A\n~inserted A\n~status running\nturn/start 1\nspliced next-turn@0 -1\n~claimed A 1\n# then it runs\n# claimed\n\n"
    );
    let (code, _, stderr) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// Stdout appended to an input (`>> x.txn`) is refused before anything is
/// read or printed, for every command that reads files, as `--out
/// /dev/stdout` there is. Before, the diagram was appended to the
/// transcript, and `validate`'s findings to the log.
#[test]
fn never_destroy_stdout_that_is_an_input_is_refused() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let log = folder.path().join("l.jsonl");
    let fixture = common::dsh_restart_logs().join("r05-restart-loses-claim.jsonl");
    std::fs::copy(fixture, &log).unwrap();
    let binary = env!("CARGO_BIN_EXE_courier");
    for (arguments, input) in [
        (format!("run {}", text(&transcript)), &transcript),
        (
            format!("diagram {} --format mermaid", text(&transcript)),
            &transcript,
        ),
        (format!("validate {}", text(&log)), &log),
        (format!("repair {}", text(&log)), &log),
    ] {
        let before = std::fs::read(input).unwrap();
        let script = format!("exec {binary} {arguments} >> {}", text(input));
        let output = Command::new("sh").args(["-c", &script]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{script}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "error: stdout is the input {}: refused",
                text(input)
            )),
            "{script}: {stderr}"
        );
        assert_eq!(std::fs::read(input).unwrap(), before, "{script}");
    }
    // Another file takes it.
    let script = format!(
        "exec {binary} run {} >> {}",
        text(&transcript),
        text(&folder.path().join("out.txt"))
    );
    let output = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn never_destroy_rewrite_refuses_a_file_that_is_not_a_transcript() {
    let folder = folder();
    let readme = "# Courier\n\nCourier verifies agent message delivery.\nRun it.\n";
    let json = report(vec![followup("A")]);
    for (name, content) in [("README.md", readme), ("report.txn", json.as_str())] {
        let path = write(&folder, name, content);
        let (code, _, stderr) = run(&["run", "--rewrite", &text(&path)]);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains("not a transcript"), "{name}: {stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
}

/// `run --rewrite` given one file twice (by another spelling or a hard
/// link) is refused before anything runs: it ran and rewrote it twice.
#[cfg(unix)]
/// A rewrite keeps the file's owner and mode: the rename puts a new file in
/// its place, which would otherwise belong to whoever ran `courier` (root
/// rewriting a user's transcript took it from them). Giving a file away
/// needs privilege, so where this test cannot, it checks the mode only.
#[cfg(unix)]
#[test]
fn never_destroy_a_rewrite_keeps_the_owner_and_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let folder = folder();
    let path = write(&folder, "owned.txn", "followup A\n----\nx\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    let given = std::os::unix::fs::chown(&path, Some(1234), Some(1235)).is_ok();
    let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o751);
    if given {
        assert_eq!((meta.uid(), meta.gid()), (1234, 1235));
    }
    let rewritten = std::fs::read_to_string(&path).unwrap();
    assert!(rewritten.contains("~inserted A"), "{rewritten}");
}

/// `run --rewrite` never writes a block `run` then refuses to read (over
/// 64 MiB): nine long ids, each spliced in its own block, then `inbox`,
/// whose one block prints all nine. The file is left as it was.
#[test]
fn never_destroy_rewrite_refuses_a_block_run_could_not_read_back() {
    let folder = folder();
    let mut content = String::new();
    for index in 0..9 {
        let id = format!("{index}{}", "x".repeat(8 << 20));
        content.push_str(&format!("splice next-turn 0 0 {id}\n\n"));
    }
    content.push_str("inbox\n");
    let path = write(&folder, "long.txn", &content);
    let (code, _, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("long.txn:19: the block's outputs would make it larger than 64 MiB"),
        "{stderr}"
    );
    assert!(std::fs::read_to_string(&path).unwrap() == content);
}

#[test]
fn never_destroy_rewrite_refuses_one_file_given_twice() {
    let folder = folder();
    let content = "followup A\n----\nx\n";
    let path = write(&folder, "t.txn", content);
    let linked = folder.path().join("linked.txn");
    std::fs::hard_link(&path, &linked).unwrap();
    let dotted = folder.path().join(".").join("t.txn");
    for twice in [&dotted, &linked] {
        let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&path), &text(twice)]);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(stderr.contains("are the same file: refused"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
    // Without --rewrite, running a file twice is the user's choice.
    let (code, _, _) = run(&["run", &text(&path), &text(&linked)]);
    assert_eq!(code, Some(1));
}

/// `--rewrite` writes the contract's outputs; beside `--against` it would
/// write another implementation's over them and count the file passed,
/// hiding every divergence: the two are refused together, before anything
/// runs. Before, `run --rewrite --strict --against CMD` exited 0.
#[test]
fn never_destroy_rewrite_is_refused_beside_against() {
    let folder = folder();
    let content = "followup A\n----\nspliced next-turn@0 +A\n";
    let path = write(&folder, "t.txn", content);
    let (code, stdout, stderr) = run(&["run", "--rewrite", "--against", "cat", &text(&path)]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("--rewrite") && stderr.contains("--against"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
}

/// Two transcripts joined (`cat a.txn b.txn`) with no blank line between,
/// the second saved with a byte order mark, or a line whose lone carriage
/// return hides the lines after it: `--rewrite` refuses the file naming
/// the line (exit 2) and leaves it as it was, and `run` does not pass it.
/// Before, the rewrite replaced the user's lines with outputs, and a block
/// hidden behind a carriage return passed without running.
#[test]
fn never_destroy_rewrite_keeps_lines_behind_a_joined_files_mark_or_a_lone_cr() {
    let folder = folder();
    for (content, line) in [
        (
            "status\n----\nidle\n\u{feff}# second file\n\nfollowup A\n----\n",
            4,
        ),
        (
            "status\n----\nidle\r# keep me\r\rfollowup A\r----\r\n\nstatus\n----\nidle\n",
            3,
        ),
        (
            "status\n----\nidle\n\n# section\rfollowup Z\r----\rwrong\r\r",
            5,
        ),
    ] {
        let path = write(&folder, "joined.txn", content);
        for arguments in [&["run", "--rewrite"][..], &["run"]] {
            let mut arguments = arguments.to_vec();
            let name = text(&path);
            arguments.push(&name);
            let (code, stdout, stderr) = run(&arguments);
            assert_eq!(code, Some(2), "{content:?} {arguments:?}: {stdout}{stderr}");
            assert!(stderr.contains(&format!("joined.txn:{line}: ")), "{stderr}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
        }
    }
}

/// A file whose every block pins a malformed command's refusal checks
/// something: it runs (before, it was refused as no transcript). A
/// README's `----` under a heading pins no refusal and is still refused.
#[test]
fn truthful_a_file_of_refused_commands_is_a_transcript() {
    let folder = folder();
    let refusals = "frob\n----\nerror: bad-command: frob\n\nfollowup A B\n----\nerror: bad-command: followup A B\n";
    let path = write(&folder, "refusals.txn", refusals);
    let (code, stdout, stderr) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let setext = "Courier\n----\n\nIt verifies delivery.\n";
    let path = write(&folder, "README.md", setext);
    let (code, _, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a transcript"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), setext);
}

/// An empty transcript, or one of comments only, would pass without
/// checking anything: `run` and `diagram` say it is not a transcript.
#[test]
fn truthful_an_empty_transcript_is_not_a_pass() {
    let folder = folder();
    for (name, content) in [("empty.txn", ""), ("notes.txn", "# only a note\n\n")] {
        let path = write(&folder, name, content);
        for command in ["run", "diagram"] {
            let (code, _, stderr) = run(&[command, &text(&path)]);
            assert_eq!(code, Some(2), "{command} {name}: {stderr}");
            assert!(
                stderr.contains("not a transcript"),
                "{command} {name}: {stderr}"
            );
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
}

#[test]
fn never_destroy_rewrite_of_a_passing_file_leaves_it_byte_for_byte() {
    let folder = folder();
    let crlf = PASSING.replace('\n', "\r\n");
    let indented = PASSING
        .replace("\nfollowup A\n", "\n  followup A\n")
        .replace("\nrun\n", "\n\trun  \n")
        + "\n\n\n";
    let bom = format!("\u{feff}{PASSING}");
    for (name, content) in [
        ("crlf.txn", crlf),
        ("indented.txn", indented),
        ("bom.txn", bom),
    ] {
        let path = write(&folder, name, &content);
        let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&path)]);
        assert_eq!(code, Some(0), "{name}: {stdout}{stderr}");
        assert!(!stdout.contains("rewrote"), "{name}: {stdout}");
        assert_eq!(std::fs::read(&path).unwrap(), content.as_bytes(), "{name}");
        let (code, stdout, _) = run(&["run", &text(&path)]);
        assert_eq!(code, Some(0), "{name}: {stdout}");
    }
}

#[test]
fn never_destroy_rewrite_keeps_the_file_and_changes_only_the_outputs() {
    let folder = folder();
    // A BOM, CRLF, a comment and a stale block: only the block changes.
    let stale = "\u{feff}# keep me\r\nstatus\r\n----\r\nbusy\r\n\r\n# and me\r\ninbox\r\n----\r\nnext-turn:\r\nnext-step:\r\n";
    let path = write(&folder, "stale.txn", stale);
    let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let rewritten = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        rewritten,
        stale.replace("busy", "idle"),
        "only the stale output changes"
    );
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}");
}

#[test]
fn never_destroy_an_output_that_is_an_input_or_another_output_is_refused() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let report_path = write(&folder, "r.json", report(vec![followup("A")]));
    let same_svg = folder.path().join("same.svg");
    let cex_svg = folder.path().join("cex.svg");
    let dotted = format!("{}/./x.txn", folder.path().display());
    let cases: [Vec<String>; 5] = [
        vec![
            "diagram".into(),
            text(&transcript),
            "--out".into(),
            text(&transcript),
        ],
        vec!["diagram".into(), text(&transcript), "--out".into(), dotted],
        vec![
            "shrink".into(),
            text(&report_path),
            "--out".into(),
            text(&report_path),
        ],
        vec![
            "check".into(),
            "--messages".into(),
            "1".into(),
            "--out".into(),
            text(&cex_svg),
            "--diagram".into(),
        ],
        vec![
            "sim".into(),
            "--seeds".into(),
            "0..2".into(),
            "--report".into(),
            text(&same_svg),
            "--diagram".into(),
        ],
    ];
    for arguments in cases {
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("refused"),
            "{arguments:?}: {stderr} (before any work: {stdout})"
        );
    }
    assert_eq!(std::fs::read_to_string(&transcript).unwrap(), PASSING);
    assert!(!cex_svg.exists() && !same_svg.exists());
}

#[test]
fn never_destroy_an_output_that_is_a_folder_is_an_error_naming_it() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let out = folder.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for arguments in [
        vec!["diagram", &text(&transcript), "--out", &text(&out)],
        vec!["check", "--messages", "1", "--out", &text(&out)],
        vec!["demo", "--log", &text(&out)],
    ] {
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains(&text(&out)), "{arguments:?}: {stderr}");
    }
}

/// The demo writes a fresh session log: it replaces one it wrote before,
/// never a file of the user's at that name (before, `precious` was gone).
#[test]
fn never_destroy_demo_keeps_a_users_file_at_its_log_path() {
    let folder = folder();
    let mine = write(&folder, "mine.jsonl", "precious\n");
    for extra in [None, Some("--crash")] {
        let mut arguments = vec!["demo", "--log", mine.to_str().unwrap()];
        arguments.extend(extra);
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("was not written by this command: kept"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "precious\n");
    }
    let ours = folder.path().join("demo.jsonl");
    for _ in 0..2 {
        let (code, _, stderr) = run(&["demo", "--log", &text(&ours)]);
        assert_eq!(code, Some(0), "its own log is replaced: {stderr}");
    }
    // Its own log, once the user has added a line, is the user's: the whole
    // file is read, not its first line. Before, the notes were gone.
    let added = std::fs::read_to_string(&ours).unwrap() + "MY NOTES\n";
    std::fs::write(&ours, &added).unwrap();
    let (code, _, stderr) = run(&["demo", "--log", &text(&ours)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("was not written by this command: kept"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&ours).unwrap(), added);
}

/// A named output replaces only what the command wrote there before (or
/// an empty file): a mistyped `--out b.txn` for `b.svg` kept nothing of
/// the transcript before, and a picture over a Mermaid chart, or a chart
/// the user added a line to, was replaced too.
#[test]
fn never_destroy_a_named_output_keeps_a_users_file_of_another_kind() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let kept = "# mine\nfollowup A\n----\n";
    let mine = write(&folder, "mine.txn", kept);
    let (code, _, stderr) = run(&["diagram", &text(&transcript), "--out", &text(&mine)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("mine.txn is there and was not written by this command: kept"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), kept);
    for (format, name) in [("svg", "x.svg"), ("mermaid", "x.md")] {
        let out = write(&folder, name, "");
        let arguments = ["diagram", &text(&transcript), "--format", format];
        for _ in 0..2 {
            let (code, _, stderr) = run(&[&arguments[..], &["--out", &text(&out)]].concat());
            assert_eq!(code, Some(0), "an empty file, then its own: {stderr}");
        }
        let drawn = std::fs::read_to_string(&out).unwrap();
        let added = format!("{drawn}my note\n");
        std::fs::write(&out, &added).unwrap();
        let (code, _, stderr) = run(&[&arguments[..], &["--out", &text(&out)]].concat());
        assert_eq!(code, Some(2), "a line the user added: {stderr}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), added);
        std::fs::write(&out, &drawn).unwrap();
    }
    // Each format keeps the other's file.
    let svg = folder.path().join("x.svg");
    let (code, _, stderr) = run(&[
        "diagram",
        &text(&transcript),
        "--format",
        "mermaid",
        "--out",
        &text(&svg),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

/// The same for the outputs only a failure writes: `check --out`, `sim
/// --report` and `shrink --out` each replace their own kind of file and
/// keep a user's, before any work.
#[cfg(feature = "mutants")]
#[test]
fn never_destroy_a_named_counterexample_report_or_shrunk_output_keeps_a_users_file() {
    let folder = folder();
    let notes = write(&folder, "notes.md", "precious\n");
    let report = folder.path().join("race.json");
    let cex = folder.path().join("cex.txn");
    let shrunk = folder.path().join("shrunk.txn");
    let check = |out: &Path| {
        run(&[
            "check",
            "--mutant",
            "no-latch",
            "--messages",
            "2",
            "--restarts",
            "0",
            "--out",
            &text(out),
        ])
    };
    let sim = |out: &Path| {
        run(&[
            "sim",
            "--mutant",
            "no-latch",
            "--seeds",
            "0..50",
            "--report",
            &text(out),
        ])
    };
    let (code, _, stderr) = check(&notes);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, stderr) = sim(&notes);
    assert_eq!(code, Some(2), "{stderr}");
    for _ in 0..2 {
        let (code, _, stderr) = check(&cex);
        assert_eq!(
            code,
            Some(1),
            "its own counterexample is replaced: {stderr}"
        );
        let (code, _, stderr) = sim(&report);
        assert_eq!(code, Some(1), "its own report is replaced: {stderr}");
    }
    let (code, _, stderr) = run(&["shrink", &text(&report), "--out", &text(&notes)]);
    assert_eq!(code, Some(2), "{stderr}");
    for _ in 0..2 {
        let (code, _, stderr) = run(&["shrink", &text(&report), "--out", &text(&shrunk)]);
        assert_eq!(
            code,
            Some(0),
            "its own shrunk transcript is replaced: {stderr}"
        );
    }
    // A counterexample given to `shrink --out` is a transcript of another
    // command's: kept, as is a shrunk one the user commented.
    let (code, _, stderr) = run(&["shrink", &text(&report), "--out", &text(&cex)]);
    assert_eq!(code, Some(2), "{stderr}");
    let commented = std::fs::read_to_string(&shrunk).unwrap() + "# my comment\n";
    std::fs::write(&shrunk, &commented).unwrap();
    let (code, _, stderr) = run(&["shrink", &text(&report), "--out", &text(&shrunk)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("kept (delete it first"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&shrunk).unwrap(), commented);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "precious\n");
}

#[test]
fn never_destroy_a_hard_link_to_the_input_or_a_read_only_file_is_refused() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING.replace("idle\n", "busy\n"));
    let link = folder.path().join("link.txn");
    std::fs::hard_link(&transcript, &link).unwrap();
    let (code, _, stderr) = run(&["diagram", &text(&transcript), "--out", &text(&link)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is the input"), "{stderr}");
    let mut permissions = std::fs::metadata(&transcript).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&transcript, permissions).unwrap();
    let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&transcript)]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("is read-only"), "{stderr}");
    // A read-only input named as the output: the input is the reason
    // (it said "is read-only").
    for out in [&transcript, &link] {
        let (code, _, stderr) = run(&["diagram", &text(&transcript), "--out", &text(out)]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("is the input"), "{stderr}");
    }
    let kept = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(kept, PASSING.replace("idle\n", "busy\n"));
}

/// `repair --out` writes only new files: a file that appears at the
/// target while the repaired log is staged (another process, a second
/// run) is not replaced. Before, the final rename went over it.
#[test]
fn never_destroy_a_file_made_while_a_new_file_was_staged_is_kept() {
    use std::io::Write as _;
    let folder = folder();
    let target = folder.path().join("repaired.jsonl");
    let mut staged = courier::files::Staged::new(&target).unwrap();
    staged.file().write_all(b"staged\n").unwrap();
    std::fs::write(&target, "made meanwhile\n").unwrap();
    let error = staged.commit_new().unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "made meanwhile\n"
    );
    let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
}

/// An output that is a link to a file that does not exist: the rename
/// replaced the user's link with a regular file. Now refused, the link
/// left as it was, for every command that writes a file.
#[cfg(unix)]
#[test]
fn never_destroy_a_dangling_link_output_is_refused_and_kept() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let log = write(&folder, "s.jsonl", format!("{HEADER}\n"));
    let link = folder.path().join("out.link");
    std::os::unix::fs::symlink(folder.path().join("gone/away.svg"), &link).unwrap();
    let out = text(&link);
    for arguments in [
        vec!["diagram", &text(&transcript), "--out", &out],
        vec!["repair", &text(&log), "--out", &out],
        vec!["demo", "--log", &out],
    ] {
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("is a link to a file that does not exist"),
            "{arguments:?}: {stderr}"
        );
        let kept = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            kept.file_type().is_symlink(),
            "{arguments:?}: the link stays"
        );
    }
}

/// An output that is a loop of links is refused naming a loop, not a
/// missing file (which it said before), and the links stay.
#[cfg(unix)]
#[test]
fn never_destroy_a_loop_of_links_as_an_output_is_refused_and_kept() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let (one, two) = (folder.path().join("one.svg"), folder.path().join("two.svg"));
    std::os::unix::fs::symlink(&two, &one).unwrap();
    std::os::unix::fs::symlink(&one, &two).unwrap();
    let (code, stdout, stderr) = run(&["diagram", &text(&transcript), "--out", &text(&one)]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("is a link that leads to no file (a loop of links?)"),
        "{stderr}"
    );
    for link in [&one, &two] {
        assert!(
            std::fs::symlink_metadata(link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[cfg(unix)]
#[test]
fn never_destroy_a_device_output_is_written_in_place_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let (code, _, stderr) = run(&["diagram", &text(&transcript), "--out", "/dev/null"]);
    assert_eq!(code, Some(0), "{stderr}");
    let kind = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(kind.is_char_device(), "/dev/null is still a device");
}

/// A writer that syncs or reads back what it wrote (the demo's session
/// log, resumed from the file after `--crash`) gets a regular temporary
/// file, copied into the device once whole: before, `demo --log /dev/null`
/// panicked (`fsync` of a device: "Invalid argument").
#[cfg(unix)]
#[test]
fn never_destroy_a_device_log_is_written_from_a_temporary_file() {
    for arguments in [
        &["demo", "--log", "/dev/null"][..],
        &["demo", "--crash", "--log", "/dev/null"],
    ] {
        let (code, stdout, stderr) = run(arguments);
        assert_eq!(code, Some(0), "{arguments:?}: {stderr}");
        assert!(stdout.contains("log written to /dev/null"), "{stdout}");
    }
    // Through a pipe, the whole log arrives once the demo ends: its header,
    // then the record of every event up to the disposal, each a JSON line.
    let (code, stdout, stderr) = run(&["demo", "--crash", "--log", "/dev/stdout"]);
    assert_eq!(code, Some(0), "{stderr}");
    let log: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with(r#"{"type":"session","#))
        .take_while(|line| line.starts_with('{'))
        .collect();
    assert!(log.len() > 10, "the log is in stdout: {stdout}");
    assert!(
        log.last()
            .unwrap()
            .contains(r#""reason":{"kind":"completed"}"#),
        "{log:?}"
    );
    // Without a temporary folder, the error says which folder is missing,
    // not that `/dev/null` is.
    let output = courier()
        .args(["demo", "--log", "/dev/null"])
        .env("TMPDIR", "/nonexistent-courier-tmp")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a temporary file in /nonexistent-courier-tmp: "),
        "{stderr}"
    );
}

/// A log the disk cannot take, whether at the end (`/dev/full`) or in the
/// middle of the session (a file size limit, as a full disk would stop it):
/// one `error:` line naming `--log`, exit 2, the old file whole. Before, the
/// demo panicked (`A is fresh: Log(... No space left on device)`).
#[cfg(unix)]
#[test]
fn never_panic_a_log_the_disk_cannot_take_is_an_error() {
    let folder = folder();
    // An earlier demo's log, which the demo may replace (a user's file it
    // keeps without writing).
    let old = "{\"type\":\"session\",\"version\":0,\"id\":\"demo\"}\n{\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n";
    let log = write(&folder, "kept.jsonl", old);
    let binary = env!("CARGO_BIN_EXE_courier");
    for crash in ["", "--crash"] {
        for target in ["/dev/full", &text(&log)] {
            // `ulimit -f 2`: no file grows past 1 KiB (the log is about
            // 3 KiB); SIGXFSZ ignored, so a write past it fails (EFBIG).
            let script =
                format!("trap '' XFSZ; ulimit -f 2; exec {binary} demo {crash} --log {target}");
            let output = Command::new("sh")
                .args(["-c", &script])
                .env("RUST_BACKTRACE", "1")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{script}: {stderr}");
            assert!(
                stderr.contains(&format!("error: --log {target}: ")),
                "{script}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{script}: {stderr}");
        }
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), old);
    let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
}

#[test]
fn never_destroy_a_report_is_recognized_by_content_not_by_its_name() {
    let folder = folder();
    let path = write(&folder, "race.txt", report(vec![followup("A")]));
    let (code, stdout, stderr) = run(&["diagram", &text(&path), "--format", "mermaid"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("race.txt (correct design) seed 7"),
        "{stdout}"
    );
}

/// `diagram` of a report marks only what the trace still shows: a report
/// this build no longer reproduces (`courier replay`: "no violation") was
/// drawn `no-lost-wakeup broke at row 1`; now a note says it passes.
#[test]
fn truthful_diagram_of_a_report_agrees_with_replay() {
    let folder = folder();
    let path = write(&folder, "race.json", report(vec![followup("A")]));
    let (code, stdout, _) = run(&["replay", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("no violation: the trace passes"),
        "{stdout}"
    );
    let (code, _, stderr) = run(&["diagram", &text(&path), "--format", "mermaid"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("1 inputs, every property holds"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "note: the report says no-lost-wakeup, but this build's run of its trace breaks nothing"
        ),
        "{stderr}"
    );
}

#[test]
fn never_destroy_a_report_whose_ids_are_not_transcript_ids_is_refused() {
    let folder = folder();
    let path = write(&folder, "r.json", report(vec![followup("A\n----\nB")]));
    let out = folder.path().join("shrunk.txn");
    for arguments in [
        vec!["replay", &text(&path)],
        vec!["shrink", &text(&path), "--out", &text(&out)],
        vec!["diagram", &text(&path)],
    ] {
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("trace[0] is not a transcript command"),
            "{arguments:?}: {stderr}"
        );
    }
    assert!(!out.exists());
}

// 2. Never panic.

#[test]
fn never_panic_a_closed_pipe_exits_quietly() {
    let folder = folder();
    let long: String = (0..3000)
        .map(|k| format!("inject m{k}\n----\n\n"))
        .collect();
    let path = write(&folder, "long.txn", long);
    let mut child = courier()
        .args(["diagram", &text(&path)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut start = [0; 64];
    stdout.read_exact(&mut start).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_eq!(output.status.code(), Some(2));
}

/// An output named `/dev/stdout` is stdout too: closed, the command ends
/// quietly. Before, `--log /dev/stdout | true` said `error: --log
/// /dev/stdout: cannot write: Broken pipe`.
#[test]
fn never_panic_an_output_to_a_closed_stdout_exits_quietly() {
    let folder = folder();
    let repaired = folder.path().join("repaired.jsonl");
    let (code, _, stderr) = run(&["demo", "--log", &text(&repaired)]);
    assert_eq!(code, Some(0), "{stderr}");
    for arguments in [
        vec![
            "demo".to_owned(),
            "--log".to_owned(),
            "/dev/stdout".to_owned(),
        ],
        vec![
            "repair".to_owned(),
            text(&repaired),
            "--out".to_owned(),
            "/dev/stdout".to_owned(),
        ],
    ] {
        // Closed before the child starts, so no write of its can get in
        // first (closing it after the spawn raced the child under load).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = courier()
            .args(&arguments)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("error"), "{arguments:?}: {stderr}");
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
    }
}

#[test]
fn never_panic_a_full_stdout_is_an_error_and_exit_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    let folder = folder();
    let path = write(&folder, "t.txn", PASSING);
    let output = courier()
        .args(["run", &text(&path)])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cannot write to stdout"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A stdout that cannot be written ends a command from the panic hook,
/// which runs no destructors: the temporary files a command held then
/// (`demo --log`'s staged log, `demo --crash`'s own log, the copy of a
/// piped log `repair` reads twice) were left behind, in the target's
/// folder and in the temporary folder, on every `| head -1` or `>
/// /dev/full`. Only a kill may leave one.
#[test]
fn never_destroy_a_full_stdout_leaves_no_temporary_file() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    let folder = folder();
    let temporary = folder.path().join("tmp");
    std::fs::create_dir(&temporary).unwrap();
    let log = folder.path().join("demo.jsonl");
    let cut = "{\"type\":\"session\",\"version\":0,\"id\":\"s\"}\n{\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n";
    for arguments in [
        &["demo", "--log", &text(&log)][..],
        &["demo", "--crash", "--log", &text(&log)],
        &["demo", "--crash"],
        &["repair", "/dev/stdin"],
    ] {
        let mut child = courier()
            .args(arguments)
            .env("TMPDIR", &temporary)
            .stdin(Stdio::piped())
            .stdout(full.try_clone().unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        io::Write::write_all(&mut child.stdin.take().unwrap(), cut.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains("cannot write to stdout"), "{stderr}");
        assert!(!log.exists(), "{arguments:?}: a log half written");
        for place in [folder.path(), &temporary] {
            let left: Vec<_> = std::fs::read_dir(place)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .filter(|name| name != "tmp")
                .collect();
            assert!(left.is_empty(), "{arguments:?}: left {left:?} in {place:?}");
        }
    }
}

#[test]
fn never_panic_threads_zero_is_refused_and_jobs_are_capped() {
    for arguments in [
        &["check", "--threads", "0"][..],
        &["sim", "--seeds", "0..2", "--jobs", "0"],
        &["check", "--threads", "100000"],
        // Each a stack: tens of thousands aborted the process (no memory
        // map left for a guard page), which no hook catches.
        &["sim", "--seeds", "0..40000", "--jobs", "40000"],
    ] {
        let (code, _, stderr) = run(arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
    }
    let (code, stdout, stderr) = run(&["sim", "--seeds", "0..2", "--jobs", "64"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("jobs=2 "), "{stdout}");
}

/// The OS refusing a worker thread is never a panic: the simulator's
/// workers share one seed counter, so the calling thread does the work of
/// those it could not start (the same result); the model checker's
/// (stateright's) refusal is an error line and exit 2. The refusal is
/// real: `RUST_MIN_STACK` asks std for a 64 TiB stack per spawned thread,
/// which no mapping can give, so every spawn fails.
#[test]
fn never_panic_a_thread_that_cannot_be_spawned_is_an_error() {
    let refused = |arguments: &[&str]| {
        let output = courier()
            .args(arguments)
            .env("RUST_MIN_STACK", (1u64 << 46).to_string())
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("courier runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{arguments:?}: {stderr}");
        (output.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = refused(&["sim", "--seeds", "0..4", "--jobs", "2"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("passed: 4 seeds"), "{stdout}");
    let (code, _, stderr) = refused(&["check", "--messages", "1", "--threads", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("error: cannot start a worker thread: "),
        "{stderr}"
    );
    // As the OS says it, not std's Debug of the error (`Os { code: 11, ...`).
    assert!(
        stderr.contains("(os error ") && !stderr.contains("Os {"),
        "{stderr}"
    );
    // Refused by the address space after the first workers started: the
    // panic is stateright's own ("Failed to spawn a thread"), not std's.
    #[cfg(unix)]
    {
        let output = std::process::Command::new("sh")
            .args(["-c", "ulimit -v 300000 && exec \"$0\" check --threads 256"])
            .arg(env!("CARGO_BIN_EXE_courier"))
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("sh runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stderr.contains("error: cannot start a worker thread: "),
            "{stderr}"
        );
    }
}

// 4. Bounded memory.

#[test]
fn bounded_memory_an_endless_input_is_refused_at_the_cap() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    for command in ["run", "diagram"] {
        let (code, _, stderr) = run(&[command, "/dev/zero"]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(stderr.contains("larger than 64 MiB"), "{command}: {stderr}");
    }
    for command in ["replay", "diagram"] {
        // A report is streamed, not read whole: an endless one fails on
        // its first bytes (here: not JSON).
        let (code, _, stderr) = run(&[command, "/dev/zero"]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
    }
    // The protocol server reads a line at a time, each capped: an overlong
    // one is answered as an error, and one with no end in sight ends it.
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let output = courier()
        .arg("serve-protocol")
        .stdin(zero)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("stdin line 1: longer than"), "{stderr}");
    assert!(stderr.contains("no line end within"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(r#"{"error":"line 1: longer than"#),
        "{stdout}"
    );
}

#[test]
fn bounded_memory_a_trace_too_long_to_draw_is_elided_saying_so() {
    let rows = courier::diagram::ROWS_DRAWN_MAX + 500;
    let folder = folder();
    let long: String = (0..rows)
        .map(|k| format!("inject m{k}\n----\n\n"))
        .collect();
    let path = write(&folder, "long.txn", long);
    let out = folder.path().join("long.svg");
    let (code, _, stderr) = run(&["diagram", &text(&path), "--out", &text(&out)]);
    assert_eq!(code, Some(0), "{stderr}");
    let elided = format!("rows 1001-{} are left out", rows - 1000);
    assert!(stderr.contains(&elided), "{stderr}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.contains("not drawn (500 rows"),
        "the picture says so too"
    );
    assert!(
        svg.contains(&format!(">{rows}</text>")),
        "the last row is drawn"
    );
}

// 5. Exit codes and messages that tell the truth.

/// A `run` over a long inbox reaches idle: the correct design claims one
/// message a turn, two completions each, so 5,001 pending followups need
/// 10,002. Before, a fixed cap of 10,000 completions called that a
/// liveness failure; the cap now grows by four per pending message.
#[test]
fn truthful_a_run_over_a_long_inbox_reaches_idle() {
    let followups: String = (0..=5000).map(|k| format!("followup m{k}\n")).collect();
    let folder = folder();
    let path = write(&folder, "long.txn", format!("{followups}run\n"));
    let (code, stdout, stderr) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let rewritten = std::fs::read_to_string(&path).unwrap();
    assert!(
        rewritten.ends_with("turn/end 5001 completed\n~status idle\n\n"),
        "{}",
        &rewritten[rewritten.len().saturating_sub(300)..]
    );
    let (code, stdout, stderr) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

/// An implementation that never goes idle is a liveness failure once
/// `run` has fed its cap (10,000 completions, plus four per message its
/// inbox holds), never a hang.
#[cfg(unix)]
#[test]
fn truthful_a_run_past_the_completion_cap_is_a_liveness_failure() {
    let folder = folder();
    let transcript = write(&folder, "stalls.txn", "run\n----\n");
    let running = r#"{"status":{"turn":1,"step":1,"awaiting":"step"}}"#;
    let inbox = r#"{"inbox":{"next-turn":["A"],"next-step":[]}}"#;
    let command = format!(
        "while read line; do case \"$line\" in \
         *status*) printf '%s\\n' '{running}' ;; \
         *inbox*) printf '%s\\n' '{inbox}' ;; \
         esac; printf '%s\\n' '{{\"settled\":true}}'; done"
    );
    let (code, stdout, stderr) = run(&["run", "--against", &command, &text(&transcript)]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("stalls.txn:1: liveness: run did not reach idle within 10004 completions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 passed, 1 failed, 0 unreadable"),
        "{stdout}"
    );
}

#[cfg(not(feature = "mutants"))]
#[test]
fn truthful_a_variant_a_file_names_is_blamed_on_the_file() {
    // A regression's `# mutant:` line on the default build: drawn on the
    // correct design, saying why and how to draw the planted bug.
    let regression = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/regressions/no-latch.txn"
    );
    let (code, _, stderr) = run(&["diagram", regression]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("names the variant"), "{stderr}");
    assert!(stderr.contains("--features mutants"), "{stderr}");
    assert!(!stderr.contains("--mutant"), "{stderr}");
    // A report's `mutant` field is named as such, not as a flag.
    let folder = folder();
    let text_report =
        report(vec![followup("A")]).replace("\"mutant\": null", "\"mutant\": \"no-latch\"");
    let path = write(&folder, "r.json", text_report);
    let (code, _, stderr) = run(&["replay", &text(&path)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the report's `mutant` field"), "{stderr}");
    assert!(!stderr.contains("--mutant"), "{stderr}");
}

#[test]
fn truthful_explore_port_zero_prints_the_port_it_bound() {
    let mut child = courier()
        .args(["explore", "--port", "0", "--messages", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut byte = [0; 1];
    while !seen.contains("(Ctrl-C") && stdout.read(&mut byte).unwrap_or(0) == 1 {
        seen.push(char::from(byte[0]));
    }
    let port = seen
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse::<u16>().ok());
    let connected = port.is_some_and(|port| {
        (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(port.is_some_and(|port| port != 0), "{seen}");
    assert!(connected, "nothing listens on the printed port: {seen}");
}

#[test]
fn truthful_trailing_whitespace_an_editor_left_is_not_expected() {
    let folder = folder();
    let spaced = PASSING.replace("turn/start 1\n", "turn/start 1  \n");
    let path = write(&folder, "t.txn", &spaced);
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}");
    // `--rewrite` of a passing file leaves it as written.
    let (code, stdout, _) = run(&["run", "--rewrite", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), spaced);
    // In a block that fails for another reason, the diff shows only that.
    let failing = spaced.replace("turn/start 1  \n", "turn/start 1  \nturn/start 9\n");
    let path = write(&folder, "f.txn", failing);
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("    - turn/start 9\n"), "{stdout}");
    assert!(stdout.contains("      turn/start 1\n"), "{stdout}");
}

/// A no-break space is text in a transcript (not a separator, not
/// trailing whitespace): a block it breaks fails, and the diff shows it
/// escaped. Printed raw, `- idle<NBSP>` and `+ idle` read the same, as do
/// `followup<NBSP>A` and `followup A`.
#[test]
fn truthful_a_no_break_space_a_block_fails_on_shows_in_its_diff() {
    let folder = folder();
    let path = write(&folder, "t.txn", "status\n----\nidle\u{a0}\n");
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("    - idle\\u{a0}\n"), "{stdout}");
    assert!(stdout.contains("    + idle\n"), "{stdout}");
    let path = write(
        &folder,
        "c.txn",
        "status\n----\nidle\n\nfollowup\u{a0}A\n----\n~inserted A\n",
    );
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains(":5: followup\\u{a0}A\n"), "{stdout}");
    assert!(
        stdout.contains("    + error: bad-command: followup\\u{a0}A\n"),
        "{stdout}"
    );
}

/// A line of no-break spaces alone between blocks was blank; since they
/// are text it read as a command, which `run` failed and `--rewrite`
/// pinned as a block (`error: bad-command: <NBSP>`). It is a layout error
/// naming its line, and the file is left as written.
#[test]
fn never_destroy_a_line_of_no_break_spaces_is_a_layout_error() {
    let folder = folder();
    let content = "status\n----\nidle\n\n\u{a0}\u{3000}\n\nstatus\n----\nidle\n";
    let path = write(&folder, "t.txn", content);
    for arguments in [&["run"][..], &["run", "--rewrite"]] {
        let (code, stdout, stderr) = run(&[arguments, &[&text(&path)]].concat());
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(
            stderr.contains("t.txn:5: a line of non-ASCII spaces only"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
}

#[test]
fn bounded_memory_a_trace_too_long_to_draw_is_refused() {
    let folder = folder();
    let inputs = courier::diagram::INPUTS_DRAWN_MAX + 1;
    let huge: String = (0..inputs).map(|k| format!("inject m{k}\n")).collect();
    let path = write(&folder, "huge.txn", huge);
    let (code, _, stderr) = run(&["diagram", &text(&path)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{inputs} inputs: too long to draw usefully")),
        "{stderr}"
    );
}

/// Feeds `lines` to `courier serve-protocol`; its exit code and stdout.
fn serve(lines: &[&str]) -> (Option<i32>, String) {
    use std::io::Write as _;
    let mut child = courier()
        .arg("serve-protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout)
}

/// A `bench` line asking for more messages than memory holds is an error
/// answer, and the server goes on. Before: `memory allocation of
/// 8000000000000 bytes failed` (abort, exit 134) for a batch of 10^12, and
/// the check pass kept every output (2.3 GB for 2^20 messages).
#[test]
fn bounded_memory_a_protocol_bench_too_big_is_refused() {
    let (code, stdout) = serve(&[
        r#"{"bench":{"batch":1000000000000,"cycles":1}}"#,
        r#"{"bench":{"batch":4294967296,"cycles":4294967296}}"#,
        r#"{"bench":{"batch":1024,"cycles":1025}}"#,
        r#"{"query":"status"}"#,
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    for line in 1..=3 {
        assert!(
            stdout.contains(&format!(
                "line {line}: bench batch × cycles must be at most 1048576 messages"
            )),
            "{stdout}"
        );
    }
    assert!(stdout.contains(r#"{"status":"idle"}"#), "{stdout}");
}

/// A protocol line that is not what it must be gets an answer naming what
/// is wrong with it: a key given twice (at any depth) is refused, not read
/// as whichever serde keeps; a JSON value that is not an object, an object
/// of two kinds, a bad restart and a bad input each say so. Before, all but
/// the first were `data did not match any variant of untagged enum
/// Stimulus`, and `{"query":"inbox","query":"status"}` answered the status.
#[test]
fn truthful_a_protocol_line_names_what_is_wrong_with_it() {
    let (code, stdout) = serve(&[
        r#"{"query":"inbox","query":"status"}"#,
        r#"{"restart":{"lose":1,"lose":2}}"#,
        r#"{"input":"remove","id":"A","id":"B"}"#,
        r#"["session/end-seed"]"#,
        r#"{"query":"inbox","input":"dispose"}"#,
        r#"{"restart":{"lose":-1}}"#,
        r#"{"input":"nope"}"#,
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|line| *line != r#"{"settled":true}"#)
        .collect();
    let expected = [
        "line 1: duplicate key `query`",
        "line 2: duplicate key `lose`",
        "line 3: duplicate key `id`",
        "line 4: not a JSON object: an array",
        "line 5: an object with exactly one of the keys `input`, `restart`, `query`, `bench`, got input, query",
        r#"line 6: restart: not `{\"restart\":{\"lose\":N}}` with N an integer from 0 to 18446744073709551615"#,
        "line 7: input nope: unknown variant `nope`",
    ];
    assert_eq!(answers.len(), expected.len(), "{stdout}");
    for (answer, expected) in answers.iter().zip(expected) {
        assert!(answer.starts_with(r#"{"error":""#), "{answer}");
        assert!(answer.contains(expected), "{answer} lacks {expected}");
    }
}

/// Runs `courier` with `arguments`, `stdin` piped in; exit code, stdout, stderr.
fn run_piped(arguments: &[&str], stdin: &[u8]) -> (Option<i32>, String, String) {
    use std::io::Write as _;
    let mut child = courier()
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A command that refuses early closes its end: a write error is fine.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (status.code(), text(stdout), text(stderr))
}

/// A pipe gives its bytes once: a command that reads its input twice (a
/// report's version, then the report; a file told apart by content, then
/// read; a log read, then copied to `--out`) copies a pipe first. Before,
/// `cat r.json | courier replay /dev/stdin` was "not a race report: EOF
/// while parsing", `diagram` of a piped transcript "not a transcript", and
/// `repair /dev/stdin --out` exit 1 "the input shrank while it was read".
/// And a pipe cannot be rewritten in place: `run --rewrite /dev/stdin`
/// said "rewrote /dev/stdin" and wrote the transcript into the pipe.
#[cfg(unix)]
#[test]
fn never_destroy_a_pipe_input_is_read_once() {
    let report_text = report(vec![followup("A")]);
    let (code, stdout, stderr) = run_piped(&["replay", "/dev/stdin"], report_text.as_bytes());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("no violation: the trace passes"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run_piped(
        &["diagram", "/dev/stdin", "--format", "mermaid"],
        report_text.as_bytes(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("seed 7"), "drawn as a report: {stdout}");
    let (code, stdout, stderr) = run_piped(
        &["diagram", "/dev/stdin", "--format", "mermaid"],
        PASSING.as_bytes(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("sequenceDiagram"), "{stdout}");
    let log = match common::shared_root() {
        Some(root) => root.join("fixtures/dsh-restart-logs"),
        None => common::vendored_root().join("dsh-restart-logs"),
    };
    let log = std::fs::read(log.join("r05-restart-loses-claim.jsonl")).unwrap();
    let folder = folder();
    let out = folder.path().join("repaired.jsonl");
    let (code, stdout, stderr) = run_piped(&["repair", "/dev/stdin", "--out", &text(&out)], &log);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let repaired = std::fs::read(&out).unwrap();
    assert!(repaired.starts_with(&log), "the kept lines, verbatim");
    assert!(repaired.len() > log.len(), "then the closers");
    let (code, stdout, stderr) =
        run_piped(&["run", "--rewrite", "/dev/stdin"], b"status\n----\nbusy\n");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(!stdout.contains("rewrote"), "{stdout}");
    assert!(
        stderr.contains(
            "/dev/stdin: not a regular file (a pipe or a device): --rewrite cannot replace it"
        ),
        "{stderr}"
    );
}

/// Another implementation (`run --against`, `sim --against`) is input too:
/// an endless line is cut at the protocol's 16 MiB cap, an error quotes at
/// most 200 characters of what it printed, and an empty command is refused.
/// Before, `--against 'head -c 100000000 /dev/zero'` read the whole line
/// (205 MB resident) and printed all 100 MB of it to stderr, and
/// `--against ''` was "cannot write to the implementation: Broken pipe".
#[cfg(unix)]
#[test]
fn bounded_memory_another_implementation_is_input_too() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", PASSING);
    let path = text(&transcript);
    let cases = [
        (
            "head -c 20000000 /dev/zero",
            "cannot read its answer: it printed a line longer than 16777216 bytes",
        ),
        (
            "head -c 1000000 /dev/zero | tr '\\0' x; echo",
            "... (1000000 bytes in all)` is not JSON",
        ),
        ("", "error: --against: an empty command"),
        (
            "yes '{\"inserted\":\"A\"}'",
            "goes on past 1048576 lines or 67108864 bytes without settling",
        ),
    ];
    for (command, expected) in cases {
        for arguments in [
            vec!["run", "--against", command, &path],
            vec!["sim", "--seeds", "0", "--no-restarts", "--against", command],
        ] {
            let (code, _, stderr) = run(&arguments);
            assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
            assert!(stderr.contains(expected), "{arguments:?}: {stderr}");
            assert!(stderr.len() < 2000, "{arguments:?}: {} bytes", stderr.len());
        }
    }
}

/// An implementation that never reads its stdin, sent a line longer than
/// a pipe holds, times out like one that never answers (the write waits in
/// a thread of its own). Before, `courier run` blocked in the write for
/// ever. `COURIER_ANSWER_TIMEOUT` shortens the wait; a bad value is refused.
#[cfg(unix)]
#[test]
fn bounded_time_an_implementation_that_does_not_read_times_out() {
    let folder = folder();
    let id = "A".repeat(200_000);
    let transcript = write(&folder, "big.txn", format!("followup {id}\n----\n"));
    let against = |timeout: &str| {
        let child = courier()
            .args(["run", "--against", "sleep 300", &text(&transcript)])
            .env("COURIER_ANSWER_TIMEOUT", timeout)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (code, _, stderr) = wait_bounded(child, "`run --against 'sleep 300'`, a write");
        (code, stderr)
    };
    let (code, stderr) = against("1");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("` within 1s"), "{stderr}");
    // Refused before any transcript runs (no file's line named), and one
    // past the clock's reach too (it panicked adding to the clock).
    for bad in ["soon", "0", "9223372036854775807"] {
        let (code, stderr) = against(bad);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "error: COURIER_ANSWER_TIMEOUT={bad}: not a whole number of seconds from 1 to 1000000000\n"
            )
        );
    }
}

/// `courier` stopped by SIGTERM or SIGHUP (`timeout`, a closed terminal)
/// while another implementation runs takes that implementation's whole
/// process group with it, as Ctrl-C does, and exits 130. Before, the
/// signal killed `courier` alone and left the implementation running.
#[cfg(target_os = "linux")]
#[test]
fn never_leave_processes_a_terminated_run_takes_the_implementation_along() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", PASSING);
    let pid_file = folder.path().join("grandchild.pid");
    let command = format!(
        "sh -c 'echo $$ > {}; exec sleep 300' >/dev/null 2>&1 & wait",
        text(&pid_file)
    );
    for signal in ["TERM", "HUP"] {
        let _ = std::fs::remove_file(&pid_file);
        let mut child = signals::with_default_signals(&mut courier())
            .args(["run", "--against", &command, &text(&transcript)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut pid = String::new();
        for _ in 0..100 {
            pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if pid.ends_with('\n') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let pid = pid.trim().to_owned();
        assert!(!pid.is_empty(), "the implementation started");
        signals::send(child.id(), signal);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "SIG{signal}: {status:?}");
        assert_dies(&pid, &format!("SIG{signal}: the implementation"));
    }
}

/// An error about a whole file (missing, a folder, a glob that matched
/// nothing and reached the command as written) names no line: before,
/// `validate` printed `missing.jsonl:0: cannot open` (`"line":0` in JSON)
/// and blamed line 1 of a folder; `repair` of a folder said `line 1:
/// cannot read: Is a directory`.
#[test]
fn truthful_an_error_about_a_whole_file_names_no_line() {
    let folder = folder();
    let dir = folder.path().join("logs.jsonl");
    std::fs::create_dir(&dir).unwrap();
    let missing = folder.path().join("*.jsonl");
    let (dir, missing) = (text(&dir), text(&missing));
    let (code, _, stderr) = run(&["validate", &dir, &missing]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("error: {dir}: cannot read: is a folder\n")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("error: {missing}: cannot open: ")),
        "{stderr}"
    );
    let (code, stdout, _) = run(&["validate", "--format", "json", &dir, &missing]);
    assert_eq!(code, Some(2), "{stdout}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in &lines {
        assert_eq!(line["status"], "unreadable", "{line}");
        assert!(line["error"]["line"].is_null(), "{line}");
    }
    for command in ["repair", "replay", "diagram"] {
        let (code, _, stderr) = run(&[command, &dir]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {dir}: cannot read: is a folder")),
            "{command}: {stderr}"
        );
    }
}

/// `diagram` names the lines it does not draw: lines that are not
/// commands (`courier run` prints `error: bad-command` for each) were
/// silently skipped, the verdict "every property holds".
#[test]
fn truthful_diagram_names_the_lines_it_does_not_draw() {
    let folder = folder();
    let garbled = write(
        &folder,
        "garbled.txn",
        format!("{PASSING}\nfrobnicate\n----\n\nrestart lose=-1\n"),
    );
    let (code, _, stderr) = run(&["diagram", &text(&garbled), "--format", "mermaid"]);
    assert_eq!(code, Some(0), "{stderr}");
    let line = PASSING.lines().count() + 2;
    let note = format!("note: line {line}: `frobnicate` is not a command, nor is 1 other line");
    assert!(stderr.contains(&note), "{stderr}");
}

/// A transcript that is not UTF-8 is refused naming the line: before, only
/// the byte (`not UTF-8 text (byte 24 is invalid)`).
#[test]
fn truthful_a_transcript_that_is_not_utf8_names_the_line() {
    let folder = folder();
    let path = write(
        &folder,
        "latin1.txn",
        b"status\n----\nidle\n\n# caf\xe9\n".as_slice(),
    );
    for command in ["run", "diagram"] {
        let (code, _, stderr) = run(&[command, &text(&path)]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("latin1.txn:5: not UTF-8 text (byte 24 of the file is invalid)"),
            "{command}: {stderr}"
        );
    }
}

/// `sim --against --out DIR` names a folder: a file there was found only
/// after every seed ran (`st.txn/divergence-0.txn: cannot write: File
/// exists`, exit 1); now it is refused before any work (exit 2). And an
/// empty shard says so instead of reading as a pass.
#[test]
fn truthful_sim_refuses_a_file_for_a_folder_and_names_an_empty_shard() {
    let folder = folder();
    let file = write(&folder, "notes.txt", "mine\n");
    let (code, stdout, stderr) = run(&[
        "sim",
        "--seeds",
        "0..2",
        "--against",
        "cat",
        "--out",
        &text(&file),
    ]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    let refusal = format!("error: --out {}: not a folder", text(&file));
    assert!(stderr.contains(&refusal), "{stderr}");
    assert!(stdout.is_empty(), "before any work: {stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
    // The same file named as a folder (`notes.txt/`), and a folder no
    // file can be made in: refused before any work too (before, after
    // every seed ran, exit 1).
    let slashed = format!("{}/", text(&file));
    let mut refused = vec![(
        slashed.clone(),
        format!("error: --out {slashed}: not a folder"),
    )];
    // A link to nothing: the folder would be made where it points, after
    // the run (before, it passed the check).
    #[cfg(unix)]
    {
        let link = folder.path().join("gone");
        std::os::unix::fs::symlink(folder.path().join("nowhere"), &link).unwrap();
        let link = text(&link);
        refused.push((
            link.clone(),
            format!("error: --out {link}: a symbolic link to nothing"),
        ));
    }
    if Path::new("/proc/self").exists() {
        refused.push((
            "/proc".into(),
            "error: --out /proc: cannot write in /proc: ".into(),
        ));
    }
    for (out, refusal) in refused {
        let (code, stdout, stderr) =
            run(&["sim", "--seeds", "0..2", "--against", "cat", "--out", &out]);
        assert_eq!(code, Some(2), "{out}: {stdout}{stderr}");
        assert!(stderr.contains(&refusal), "{out}: {stderr}");
        assert!(stdout.is_empty(), "{out}: before any work: {stdout}");
    }
    // A folder in a folder that does not exist: refused before any work,
    // and nothing made (before, the whole path was made after the run).
    let deep = folder.path().join("no/such");
    let (code, stdout, stderr) = run(&[
        "sim",
        "--seeds",
        "0..2",
        "--against",
        "cat",
        "--out",
        &text(&deep),
    ]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("its folder"), "{stderr}");
    assert!(stdout.is_empty(), "before any work: {stdout}");
    assert!(!folder.path().join("no").exists());
    let (code, stdout, stderr) = run(&["sim", "--seeds", "0..2", "--shard", "2/5"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("passed: 0 seeds"), "{stdout}");
    assert!(
        stderr.contains("note: shard 2/5 of 0..2 is empty: more shards than seeds"),
        "{stderr}"
    );
}

/// An output ending in `/` names a folder even when none exists: it is
/// refused before any work, for every flag that names a file. Before,
/// `diagram --out nothere/` drew the picture and then failed the rename
/// (`cannot write: Not a directory`), as `check --out` would after its
/// whole search.
#[test]
fn never_destroy_an_output_ending_in_a_slash_is_refused_before_work() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let out = format!("{}/", folder.path().join("nothere").display());
    let log = folder.path().join("log.jsonl");
    write(&folder, "log.jsonl", "");
    for arguments in [
        vec!["diagram", &text(&transcript), "--out", &out],
        vec!["check", "--messages", "1", "--out", &out],
        vec!["sim", "--seeds", "0", "--report", &out],
        vec!["repair", &text(&log), "--out", &out],
        vec!["demo", "--log", &out],
    ] {
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{out}: ends in `/`, so it names a folder")),
            "{arguments:?}: {stderr}"
        );
        assert!(
            stdout.is_empty(),
            "{arguments:?}: before any work: {stdout}"
        );
    }
    assert!(!folder.path().join("nothere").exists());
}

/// A seed out of range says what the range is: before, `--seeds
/// 18446744073709551616` was "not a seed (a non-negative integer)", which
/// it is, and `--seeds 18446744073709551615` only "seed too large".
#[test]
fn truthful_a_seed_out_of_range_names_the_range() {
    let cases = [
        (
            "18446744073709551616",
            "is not a seed (an integer from 0 to 18446744073709551615)",
        ),
        (
            "0..18446744073709551616",
            "is not a seed (an integer from 0 to 18446744073709551615)",
        ),
        (
            "18446744073709551615",
            "seed 18446744073709551615 is too large: a single seed is at most 18446744073709551614",
        ),
        ("9..3", "`9..3` is an empty range"),
        ("5..5", "`5..5` is an empty range"),
    ];
    for (seeds, expected) in cases {
        let (code, _, stderr) = run(&["sim", &format!("--seeds={seeds}")]);
        assert_eq!(code, Some(2), "{seeds}: {stderr}");
        assert!(stderr.contains(expected), "{seeds}: {stderr}");
    }
    // The largest seed runs.
    let (code, stdout, stderr) = run(&["sim", "--seeds", "18446744073709551614", "--no-coverage"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("passed: 1 seeds"), "{stdout}");
}

/// A diagram the disk cannot take names its path and flag; the verdict
/// stands (the counterexample or the rerun command is printed). Before,
/// `check --diagram` said only "cannot write the diagram: File too large".
#[cfg(all(unix, feature = "mutants"))]
#[test]
fn truthful_an_output_the_disk_cannot_take_names_its_flag() {
    let folder = folder();
    let binary = env!("CARGO_BIN_EXE_courier");
    let cex = folder.path().join("cex.txn");
    let svg = folder.path().join("cex.svg");
    // `ulimit -f 1`: no file grows past 512 bytes; the counterexample fits,
    // its picture does not.
    let limited = |command: String| {
        let script = format!("trap '' XFSZ; ulimit -f 1; exec {binary} {command}");
        let output = Command::new("sh").args(["-c", &script]).output().unwrap();
        let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
        (
            output.status.code(),
            text(output.stdout),
            text(output.stderr),
        )
    };
    let (code, stdout, stderr) = limited(format!(
        "check --mutant no-latch --messages 2 --restarts 0 --diagram --out {}",
        text(&cex)
    ));
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("violation: no-lost-wakeup"), "{stdout}");
    let expected = format!("error: --diagram {}: cannot write: ", text(&svg));
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!svg.exists(), "no half picture");
    let report = folder.path().join("race.json");
    let (code, stdout, stderr) = limited(format!(
        "sim --mutant no-latch --seeds 0..5 --no-coverage --report {}",
        text(&report)
    ));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    let expected = format!("error: --report {}: cannot write the report", text(&report));
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stdout.contains("rerun: courier sim --seeds 0"), "{stdout}");
    assert!(!report.exists(), "no half report");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The kill tests' hidden `soak` child creates its log with `File::create`:
/// pointed at a file that is there, it emptied it in place. Now a fresh log
/// refuses a file that exists (only `--resume` appends).
#[test]
fn never_destroy_soak_refuses_to_truncate_a_file() {
    let folder = folder();
    let mine = write(&folder, "notes.txt", "mine\n");
    let (code, _, stderr) = run(&["soak", "--log", &text(&mine), "--calls", "1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("exists: refused"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
}

/// An edit saved while `run --rewrite` runs is never lost: the rewrite
/// compares the file with what it read just before replacing it. Before,
/// the rewrite of the older text replaced the file, edit and all. (If the
/// edit lands before the file is read, the rewrite keeps it as a comment:
/// either way it is there.)
#[test]
fn never_destroy_an_edit_made_while_rewrite_runs() {
    let folder = folder();
    // A second or so of work on a debug build: 4,000 turns, then a stale block.
    let followups: String = (0..4000).map(|k| format!("followup m{k}\n")).collect();
    let content = format!("{followups}run\n\nstatus\n----\nbusy\n");
    let path = write(&folder, "long.txn", &content);
    let child = courier()
        .args(["run", "--rewrite", &text(&path)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // An editor saving: the file replaced whole, one line longer.
    let edited = format!("{content}# edited meanwhile\n");
    courier::files::replace(&path, &edited).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let now = std::fs::read_to_string(&path).unwrap();
    // Whenever the edit landed (before the read, while it ran, after the
    // rewrite), it is there; while it ran, the rewrite says so.
    assert!(
        now.contains("# edited meanwhile"),
        "the edit is lost: {stderr}"
    );
    match output.status.code() {
        Some(2) => {
            assert_eq!(now, edited, "not rewritten");
            assert!(
                stderr.contains("changed while it ran: not rewritten"),
                "{stderr}"
            );
        }
        code => assert_eq!(code, Some(0), "{stderr}"),
    }
}

/// Fails (killing it) unless process `pid` is gone within 5 s: a signal is
/// delivered before `kill` returns, but the process may take a moment.
#[cfg(target_os = "linux")]
fn assert_dies(pid: &str, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !dead(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if !dead(pid) {
        let _ = Command::new("kill").args(["-9", pid]).status();
        panic!("{what} {pid} outlived courier");
    }
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper,
/// which is dead too: `kill -0` would still find it).
#[cfg(unix)]
fn dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Another implementation is killed with everything it started. `--against`
/// runs its command under `sh`; before, only `sh` was killed when the
/// implementation broke the protocol or hung, and the process under it
/// (node, for `--against dsh`) lived on. Here the implementation starts a
/// grandchild `sleep`, prints a line that is not JSON and waits: the run
/// fails (exit 2), and the grandchild is gone when `courier` returns.
#[cfg(target_os = "linux")]
#[test]
fn never_leave_processes_another_implementation_dies_with_its_children() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", PASSING);
    let pid_file = folder.path().join("grandchild.pid");
    let pid_path = text(&pid_file);
    // The grandchild writes its own pid; the shell waits for it. Its
    // output goes nowhere, so it cannot hold this test's pipes open.
    let command = format!(
        "sh -c 'echo $$ > {pid_path}; exec sleep 300' >/dev/null 2>&1 & echo not-json; wait"
    );
    for arguments in [
        vec!["run", "--against", &command, &text(&transcript)],
        vec![
            "sim",
            "--seeds",
            "0",
            "--no-restarts",
            "--against",
            &command,
        ],
    ] {
        let _ = std::fs::remove_file(&pid_file);
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains("is not JSON"), "{arguments:?}: {stderr}");
        let pid = std::fs::read_to_string(&pid_file).expect("the grandchild wrote its pid");
        let pid = pid.trim();
        assert!(!pid.is_empty());
        assert_dies(pid, &format!("{arguments:?}: grandchild"));
    }
}

/// A file's name cannot forge another file's output line: a name holding a
/// control character (or bytes that are not UTF-8) is printed quoted and
/// escaped everywhere a path is printed. Before, `courier run` of a failing
/// `bad\nok   good.txn` printed `FAIL bad` and then a line `ok   good.txn`
/// of its own making, and `validate` printed such a name raw too.
#[cfg(unix)]
#[test]
fn truthful_a_file_name_cannot_forge_an_output_line() {
    use std::os::unix::ffi::OsStrExt;
    let folder = folder();
    let forged = "bad\nok   good";
    let transcript = write(
        &folder,
        &format!("{forged}.txn"),
        "followup A\n----\nnonsense\n",
    );
    let (code, stdout, _) = run(&["run", &text(&transcript)]);
    assert_eq!(code, Some(1), "{stdout}");
    let escaped = text(&transcript).replace('\n', "\\n");
    assert!(
        stdout.contains(&format!("FAIL \"{escaped}\"\n")),
        "{stdout}"
    );
    assert!(
        !stdout.lines().any(|line| line.starts_with("ok")),
        "{stdout}"
    );

    let log = std::fs::read(common::workspace().join("tests/logs/admission-outside-step.jsonl"))
        .expect("the example log");
    let quoted = write(&folder, &format!("\"q\"\n{forged}.jsonl"), &log);
    let raw = folder
        .path()
        .join(std::ffi::OsStr::from_bytes(b"x\xff.jsonl"));
    std::fs::write(&raw, &log).expect("a writable temporary file");
    let raw_shown = format!("\"{}\"", text(folder.path()) + "/x\\xFF.jsonl");
    let (code, stdout, _) = run(&["validate", &text(&quoted)]);
    assert_eq!(code, Some(1), "{stdout}");
    let escaped = text(&quoted).replace('"', "\\\"").replace('\n', "\\n");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with(&format!("\"{escaped}\":5: admission")),
        "{stdout}"
    );

    // JSON keeps a UTF-8 name exactly (JSON escapes it); one that is not
    // UTF-8 is given as the text format prints it.
    let output = courier()
        .args(["validate", "--format", "json"])
        .arg(&quoted)
        .arg(&raw)
        .output()
        .expect("courier runs");
    let stdout = String::from_utf8(output.stdout).expect("JSON is UTF-8");
    let files: Vec<String> = stdout
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            value["file"].as_str().expect("a file name").to_owned()
        })
        .collect();
    assert_eq!(files, [text(&quoted), raw_shown]);

    // An error names such a file escaped too.
    let missing = folder.path().join("nope\nerror: z");
    let (code, _, stderr) = run(&["validate", &text(&missing)]);
    assert_eq!(code, Some(2), "{stderr}");
    let escaped = text(&missing).replace('\n', "\\n");
    assert!(
        stderr.starts_with(&format!("error: \"{escaped}\": cannot open")),
        "{stderr}"
    );
}

/// A protocol line with a key its kind does not have is refused, naming the
/// key, and changes nothing: before, serde ignored it, so a misspelt
/// `wakup` was answered as a send with the other wakeup,
/// `{"restart":{"lose":1},"lose":3}` lost 1, and a bench's `"Log"` wrote
/// no log, all without a word; a `batch` beside a decision that has none
/// is that key, whatever it holds.
#[test]
fn truthful_a_protocol_key_its_kind_lacks_is_refused() {
    let send = r#""message":{"id":"A","role":"user","content":[],"source":{"kind":"user"}},"target":"next-turn","wakeup":"wake""#;
    let (code, stdout) = serve(&[
        &format!(r#"{{"input":"send",{send},"wakup":"none"}}"#),
        r#"{"restart":{"lose":1},"lose":3}"#,
        r#"{"restart":{"lose":1,"keep":2}}"#,
        r#"{"query":"status","log":"x"}"#,
        r#"{"bench":{"batch":1,"cycles":1,"Log":"x"}}"#,
        r#"{"input":"dispose","extra":1}"#,
        r#"{"input":"pre-step","decision":"reject","batch":[]}"#,
        r#"{"input":"pre-step","decision":"pass","batch":null}"#,
        r#"{"query":"inbox"}"#,
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|line| *line != r#"{"settled":true}"#)
        .collect();
    let expected = [
        r#"{"error":"line 1: input: unknown key `wakup`"}"#,
        r#"{"error":"line 2: restart: unknown key `lose`"}"#,
        r#"{"error":"line 3: restart: unknown key `keep`"}"#,
        r#"{"error":"line 4: query: unknown key `log`"}"#,
        r#"{"error":"line 5: bench: unknown key `Log`"}"#,
        r#"{"error":"line 6: input: unknown key `extra`"}"#,
        // Whatever it holds (before, `[]` beside `reject` was "expected null").
        r#"{"error":"line 7: input: unknown key `batch`"}"#,
        r#"{"error":"line 8: input: unknown key `batch`"}"#,
        r#"{"inbox":{"next-step":[],"next-turn":[]}}"#,
    ];
    assert_eq!(answers, expected, "{stdout}");
}

const HEADER: &str =
    r#"{"type":"session","version":0,"id":"s","createdAt":0,"cwd":"","delegationDepth":0}"#;

/// `repair` of a hand-made log whose turn is `u64::MAX` refuses it as
/// corrupt, naming the line, as every resume does: the resumed agent would
/// have no number for its next turn. Before: `attempt to add with
/// overflow` at runtime/src/kept.rs (a panic and a backtrace, exit 101).
#[test]
fn never_panic_repair_of_the_largest_turn_number() {
    let folder = folder();
    let log = write(
        &folder,
        "max.jsonl",
        format!(
            "{HEADER}\n{{\"type\":\"turn/start\",\"data\":{{\"turn\":{}}}}}\n",
            u64::MAX
        ),
    );
    let (code, _, stderr) = run(&["repair", &text(&log)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(":2: ") && stderr.contains("leaves no number for the next turn"),
        "{stderr}"
    );
}

/// An id read from a log cannot forge a line of `repair`'s report or of
/// `validate`'s findings: a newline in it prints as `\n`. Before, an id
/// `a\nnext turn: 7` printed a `next turn: 7` line of its own in `repair`,
/// and `a\nf.jsonl:9: ok` a finding line of its own in `validate`.
/// A bad argument holding a newline is quoted escaped in the usage error,
/// as a file name is. Before, clap printed it as given: `courier
/// $'x\nerror: forged'` wrote a line `error: forged` of its own.
#[test]
fn truthful_an_argument_cannot_forge_an_output_line() {
    for arguments in [
        &["x\nerror: forged"][..],
        &["sim", "--seeds", "1\nerror: forged"],
        &["check", "--messages", "\u{1b}[2Jforged"],
        &["sim", "--seeds=1\nerror: forged"],
        &["sim", "--seeds", "1\u{1b}[31mforged"],
    ] {
        let (code, stdout, stderr) = run(arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            !stderr.lines().any(|line| line.starts_with("error: forged"))
                && !stderr.contains('\u{1b}'),
            "{stderr}"
        );
        assert!(stderr.contains("forged"), "still named: {stderr}");
    }
    // clap's own lines around the quoted argument stay lines.
    let (code, _, stderr) = run(&["\n"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: unrecognized subcommand '\\n'\n")
            && stderr
                .lines()
                .any(|line| line == "Usage: courier <COMMAND>"),
        "{stderr}"
    );
    let (_, _, stderr) = run(&["sim", "--seeds", "1\u{1b}[31mX"]);
    assert!(
        stderr.contains("'1\\u{1b}[31mX'"),
        "escaped, not stripped: {stderr}"
    );
}

/// What a file holds, quoted in an error (`repair`'s "pending twice" and
/// duplicate key, a race report's unknown property or output hash, a
/// detail in `validate --format json`), is printed escaped: before, `repair`
/// and `replay` printed it raw (a newline made a line of its own, an escape
/// acted on the terminal).
#[test]
fn truthful_an_error_quoting_a_file_cannot_forge_a_line() {
    let folder = folder();
    let forged = |stdout: &str, stderr: &str| {
        let all = format!("{stdout}{stderr}");
        all.contains('\u{1b}')
            || all.contains('\u{202e}')
            || all.lines().any(|line| line.starts_with("ok forged"))
    };
    let splice = |target: &str| {
        format!(
            "{{\"type\":\"agent/inbox/spliced\",\"data\":{{\"target\":\"{target}\",\"start\":0,\"inserted\":[{{\"id\":\"a\\u001b[31m\\nok forged\",\"role\":\"user\",\"content\":[],\"source\":{{\"kind\":\"user\"}}}}]}}}}\n"
        )
    };
    let twice = write(
        &folder,
        "twice.jsonl",
        format!("{HEADER}\n{}{}", splice("next-turn"), splice("next-step")),
    );
    let key = write(
        &folder,
        "key.jsonl",
        format!(
            "{HEADER}\n{{\"type\":\"turn/start\",\"k\\u001b[2J\\nok forged\":1,\"k\\u001b[2J\\nok forged\":2,\"data\":{{\"turn\":1}}}}\n"
        ),
    );
    for log in [&twice, &key] {
        let (code, stdout, stderr) = run(&["repair", &text(log)]);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(!forged(&stdout, &stderr), "{stdout}{stderr}");
        assert!(
            stderr.contains("\\u{1b}[") && stderr.contains("\\nok forged"),
            "{stderr}"
        );
    }
    let bidi = write(
        &folder,
        "bidi.jsonl",
        format!("{HEADER}\n{}{}", splice("next-turn"), splice("next-step"))
            .replace("\\u001b[31m\\nok forged", "\\u202egnp.exe"),
    );
    let (code, stdout, stderr) = run(&["validate", "--format", "json", &text(&bidi)]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        !forged(&stdout, &stderr) && stdout.contains("gnp.exe"),
        "{stdout}"
    );

    let good = report(vec![followup("A")]);
    for (name, bad) in [
        (
            "hash.json",
            good.replace("fnv1a64:0123456789abcdef", "x\\u001b[2J\\nok forged"),
        ),
        (
            "property.json",
            good.replace("\"no-lost-wakeup\"", "\"p\\u001b[2J\\nok forged\""),
        ),
    ] {
        assert_ne!(bad, good);
        let path = write(&folder, name, bad);
        let out = text(&folder.path().join("shrunk.txn"));
        for command in [
            &["replay", &text(&path)][..],
            &["diagram", &text(&path)],
            &["shrink", &text(&path), "--out", &out],
        ] {
            let (code, stdout, stderr) = run(command);
            // The hash differs, not the verdict: replay still runs it.
            if name == "property.json" || command[0] == "shrink" {
                assert_eq!(code, Some(2), "{command:?} {name}: {stdout}{stderr}");
            }
            assert!(
                !forged(&stdout, &stderr),
                "{command:?} {name}: {stdout}{stderr}"
            );
        }
    }
}

#[test]
fn truthful_an_id_cannot_forge_an_output_line() {
    let folder = folder();
    let spliced = r#"{"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,"inserted":[{"id":"a\nnext turn: 7","role":"user","content":[],"source":{"kind":"user"}}]}}"#;
    let log = write(&folder, "e.jsonl", format!("{HEADER}\n{spliced}\n"));
    let (code, stdout, stderr) = run(&["repair", &text(&log)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("pending next-turn: \"a\\nnext turn: 7\"\n"),
        "{stdout}"
    );
    let next = stdout.lines().filter(|line| line.starts_with("next turn:"));
    assert_eq!(next.collect::<Vec<_>>(), ["next turn: 1"], "{stdout}");

    let example = std::fs::read_to_string(
        common::workspace().join("tests/logs/admission-outside-step.jsonl"),
    )
    .expect("the example log");
    let forged = example.replace(r#""id":"a""#, r#""id":"a\nf.jsonl:9: ok""#);
    let log = write(&folder, "f.jsonl", forged);
    let (code, stdout, stderr) = run(&["validate", &text(&log)]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("user/message a\\nf.jsonl:9: ok outside"),
        "{stdout}"
    );
}

/// An output in a folder that takes no new file (`/proc`, `/sys`, a
/// read-only mount) is refused before the work, naming the flag. Before,
/// `diagram t.txn --out /proc/x.svg` drew the diagram and then failed
/// (`cannot write: No such file or directory`), and `check --out
/// /proc/x.txn` model-checked the whole space first.
#[cfg(target_os = "linux")]
#[test]
fn never_destroy_an_output_in_a_folder_that_takes_no_file_is_refused_before_work() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", PASSING);
    for arguments in [
        vec!["diagram", &text(&transcript), "--out", "/proc/x.svg"],
        vec![
            "check",
            "--messages",
            "1",
            "--restarts",
            "0",
            "--out",
            "/proc/x.txn",
        ],
        vec!["sim", "--seeds", "0..2", "--report", "/proc/x.json"],
    ] {
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{arguments:?}: work was done: {stdout}");
        let flag = arguments[arguments.len() - 2];
        let path = arguments[arguments.len() - 1];
        let expected = format!("error: {flag} {path}: cannot create a file in its folder");
        assert!(stderr.starts_with(&expected), "{arguments:?}: {stderr}");
    }
    // `check`'s default `--out`, not asked for, only gets a note there: the
    // correct design writes nothing, and a counterexample that cannot be
    // written is printed.
    let output = courier()
        .args(["check", "--messages", "1", "--restarts", "0"])
        .current_dir("/proc")
        .output()
        .expect("courier runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("note: --out counterexample.txn: cannot create a file in its folder"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("unique states:"));
}

/// A violation found where the default output (not asked for) cannot be
/// written: the verdict stands (exit 1) and what would have been written
/// is printed. Before, both commands exited 2 as if the input were bad.
#[cfg(feature = "mutants")]
#[test]
fn truthful_an_unwritable_default_output_keeps_the_verdict() {
    for (arguments, printed) in [
        (
            &["check", "--mutant", "no-latch", "--restarts", "0"][..],
            "shortest counterexample:",
        ),
        (
            &["sim", "--mutant", "no-latch", "--seeds", "0..50"][..],
            "rerun: courier sim --seeds ",
        ),
    ] {
        let output = courier()
            .args(arguments)
            .current_dir("/proc")
            .output()
            .expect("courier runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{arguments:?}: {stdout}{stderr}"
        );
        assert!(stdout.contains("violation: no-lost-wakeup"), "{stdout}");
        assert!(stdout.contains(printed), "{arguments:?}: {stdout}");
        assert!(stderr.contains("cannot "), "{arguments:?}: {stderr}");
    }
}

/// What sits where a default output goes and cannot be told to be this
/// command's is kept, and nothing blocks on it: a pipe (a `race-0.json`
/// FIFO made `sim` hang, opened to be written in place) and a file that is
/// not UTF-8 where `sim --against` writes its divergence transcript (it
/// was replaced: only a file it could read and found foreign was kept).
#[cfg(feature = "mutants")]
#[test]
fn never_destroy_a_pipe_or_an_unreadable_file_at_a_default_output_is_kept() {
    let folder = folder();
    let fifo = folder.path().join("race-0.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let output = courier()
        .args(["sim", "--mutant", "no-latch", "--seeds", "0..5"])
        .current_dir(folder.path())
        .output()
        .expect("courier runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("race-0.json is there and is not a regular file: kept"),
        "{stderr}"
    );
    let binary = env!("CARGO_BIN_EXE_courier");
    let mine: &[u8] = b"my notes \xff\xfe\n";
    let notes = write(&folder, "divergence-0.txn", mine);
    let (code, _, stderr) = run(&[
        "sim",
        "--seeds",
        "0..20",
        "--against",
        &format!("{binary} serve-protocol --mutant no-latch"),
        "--out",
        &text(folder.path()),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("divergence-0.txn is there and was not written by this command: kept"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&notes).unwrap(), mine);
}

/// A block whose expected and actual lines all differ is shown without a
/// shortest diff past 4,096 differing lines: the common start and end as
/// context, then every expected line removed, then every actual one
/// added. Before, `run` aligned them with Myers' diff, quadratic when
/// everything differs (40,000 lines: 21.15 s, BENCHMARKS.md).
#[test]
fn stay_linear_a_long_block_that_differs_everywhere_is_diffed_in_one_pass() {
    let count = 5000;
    let ids: Vec<String> = (0..count).map(|k| format!("m{k}")).collect();
    let mut content = format!("splice next-turn 0 0 {}\n----\n", ids.join(" "));
    content.push_str(&format!("spliced next-turn@0 +{}\n", ids.join(",")));
    for k in 0..count {
        content.push_str(&format!("~inserted x{k}\n"));
    }
    content.push('\n');
    let folder = folder();
    let path = write(&folder, "long.txn", content);
    let (code, stdout, _) = run(&["run", &text(&path)]);
    assert_eq!(code, Some(1));
    let diff: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("    "))
        .collect();
    assert_eq!(diff.len(), 1 + 2 * count, "{}", &stdout[..500]);
    assert!(
        diff[0].starts_with("      spliced next-turn@0 +m0,m1,"),
        "{}",
        diff[0]
    );
    for k in 0..count {
        assert_eq!(diff[1 + k], format!("    - ~inserted x{k}"));
        assert_eq!(diff[1 + count + k], format!("    + ~inserted m{k}"));
    }
}

/// The commands a failing `sim` prints to be copied read back through a
/// shell as printed, whatever the report's name: it is quoted when it
/// must be (`a b;rm x.json` ran `rm`), and `rerun` keeps `--report`.
#[cfg(feature = "mutants")]
#[test]
fn truthful_printed_commands_are_quoted_for_a_shell() {
    let folder = folder();
    let name = "a b;touch pwned.json";
    let output = courier()
        .args([
            "sim", "--mutant", "no-latch", "--seeds", "0..5", "--report", name,
        ])
        .current_dir(folder.path())
        .output()
        .expect("courier runs");
    let stderr = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let quoted = "'a b;touch pwned.json'";
    let printed = |label: &str| {
        let line = stderr
            .lines()
            .find_map(|line| line.strip_prefix(label))
            .unwrap_or_else(|| panic!("no {label} line: {stderr}"));
        line.replacen("courier", env!("CARGO_BIN_EXE_courier"), 1)
    };
    assert!(
        printed("rerun: ").ends_with(&format!(" --report {quoted}")),
        "{stderr}"
    );
    let replay = printed("replay: ");
    assert!(replay.ends_with(quoted), "{replay}");
    let replayed = Command::new("sh")
        .args(["-c", &replay])
        .current_dir(folder.path())
        .output()
        .expect("sh runs");
    let said = String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(
        replayed.status.code(),
        Some(1),
        "the violation again: {said}"
    );
    assert!(!folder.path().join("pwned.json").exists());
}

/// A file whose lines end in a lone carriage return (classic Mac) reads as
/// one line: `run` and `validate` say so. Before, `run` said only "no line
/// is a command" and `validate` "a torn only line, as a crash leaves it".
#[test]
fn truthful_lines_ending_in_a_lone_carriage_return_are_named() {
    let folder = folder();
    let hint = "a lone carriage return, which ends no line: only LF and CRLF do";
    let transcript = write(
        &folder,
        "cr.txn",
        "followup A\r----\rspliced next-turn@0 +A\r",
    );
    let (code, _, stderr) = run(&["run", &text(&transcript)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(hint), "{stderr}");
    let log = write(
        &folder,
        "cr.jsonl",
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\"}\r{\"type\":\"turn/start\",\"data\":{\"turn\":1}}\r",
    );
    let (code, _, stderr) = run(&["validate", &text(&log)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(hint), "{stderr}");
    assert!(!stderr.contains("torn"), "{stderr}");
    // CRLF ends lines: no hint.
    let crlf = write(&folder, "crlf.txn", "status\r\n----\r\nidle\r\n");
    let (code, stdout, stderr) = run(&["run", &text(&crlf)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

/// `check --diagram` beside a default counterexample that is the user's
/// file: the counterexample is printed, and the picture it would have
/// been drawn from is not drawn, which a note says.
#[cfg(feature = "mutants")]
#[test]
fn never_destroy_a_kept_default_counterexample_says_its_picture_is_not_drawn() {
    let folder = folder();
    let mine = write(&folder, "counterexample.txn", "my notes\n");
    let output = courier()
        .args(["check", "--mutant", "no-latch", "--messages", "2"])
        .args(["--restarts", "0", "--diagram"])
        .current_dir(folder.path())
        .output()
        .expect("courier runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("note: --diagram: no picture drawn, since its transcript was not written"),
        "{stderr}"
    );
    assert!(!folder.path().join("counterexample.svg").exists());
    assert_eq!(std::fs::read_to_string(&mine).expect("kept"), "my notes\n");
}

/// A file of the user's that has a default output's name is kept: `check`
/// (no `--out`) and `sim` (no `--report`) replace only a counterexample or
/// a race report they wrote before, and print what they found instead
/// (the verdict stands, exit 1); so does the `--diagram` picture beside
/// such a default. Before, both replaced the user's file.
#[cfg(feature = "mutants")]
#[test]
fn never_destroy_a_default_output_keeps_a_users_file_of_that_name() {
    for (arguments, name, printed) in [
        (
            &[
                "check",
                "--mutant",
                "no-latch",
                "--messages",
                "2",
                "--restarts",
                "0",
            ][..],
            "counterexample.txn",
            "shortest counterexample:",
        ),
        (
            &["sim", "--mutant", "no-latch", "--seeds", "0..5"][..],
            "race-0.json",
            "rerun: courier sim --seeds 0 ",
        ),
        // The picture beside a default output is a default output too.
        (
            &[
                "check",
                "--mutant",
                "no-latch",
                "--messages",
                "2",
                "--restarts",
                "0",
                "--diagram",
            ][..],
            "counterexample.svg",
            "shortest counterexample",
        ),
        (
            &[
                "sim",
                "--mutant",
                "no-latch",
                "--seeds",
                "0..5",
                "--diagram",
            ][..],
            "race-0.svg",
            "report: race-0.json",
        ),
    ] {
        let folder = folder();
        let mine = write(&folder, name, "my notes\n");
        let found = || {
            courier()
                .args(arguments)
                .current_dir(folder.path())
                .output()
                .expect("courier runs")
        };
        let output = found();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stdout}{stderr}");
        assert!(stdout.contains(printed), "{name}: {stdout}");
        assert!(
            stderr.contains(&format!(
                "{name} is there and was not written by this command: kept"
            )),
            "{name}: {stderr}"
        );
        assert_eq!(std::fs::read_to_string(&mine).expect("kept"), "my notes\n");
        // What the command wrote itself it replaces on the next run.
        std::fs::remove_file(&mine).expect("removable");
        for run in 1..=2 {
            let output = found();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{name} run {run}: {stderr}");
            assert!(!stderr.contains("error"), "{name} run {run}: {stderr}");
            assert!(mine.exists(), "{name} run {run}: written");
        }
        // What it wrote, once the user has added to it, is the user's: the
        // whole file is read, not its start. Before, it was replaced.
        let written = std::fs::read_to_string(&mine).unwrap();
        for note in ["my notes\n", "# my notes\n"] {
            let added = written.clone() + note;
            std::fs::write(&mine, &added).unwrap();
            let output = found();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                stderr.contains(&format!(
                    "{name} is there and was not written by this command: kept"
                )),
                "{name} added {note:?} to: {stderr}"
            );
            assert_eq!(std::fs::read_to_string(&mine).unwrap(), added);
        }
    }
}

/// `check --messages` takes what `explore --messages` takes, 1 to 26 (ids
/// A..Z), and says so. Before, `--messages 0` model-checked an empty space
/// and failed on goals never reached (exit 1, blaming the design for the
/// bound), `27` and `255` were refused by hand and `256` by clap (0..=255).
#[test]
fn truthful_check_messages_out_of_range_is_refused_naming_the_range() {
    for messages in ["0", "27", "256"] {
        let (code, stdout, stderr) = run(&["check", "--messages", messages]);
        assert_eq!(code, Some(2), "{messages}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{messages}: {stdout}");
        let expected = format!("'{messages}' for '--messages <MESSAGES>': ");
        assert!(stderr.contains(&expected), "{messages}: {stderr}");
        assert!(
            stderr.contains("is not in 1..=26") || stderr.contains("number too large"),
            "{messages}: {stderr}"
        );
    }
}

/// A request line past the protocol's 16 MiB is answered as a protocol
/// error and skipped unread, and the server goes on serving (PROTOCOL.md:
/// a bad line changes nothing). Before, it ended the server (exit 2).
#[test]
fn truthful_the_server_answers_an_overlong_line_and_goes_on() {
    let long = "x".repeat((16 << 20) + 10);
    let (code, stdout) = serve(&[&long, r#"{"query":"status"}"#]);
    assert_eq!(code, Some(0), "{stdout}");
    let expected = concat!(
        r#"{"error":"line 1: longer than 16777216 bytes: not read"}"#,
        "\n{\"settled\":true}\n",
        r#"{"status":"idle"}"#,
        "\n{\"settled\":true}\n"
    );
    assert_eq!(stdout, expected);
}

/// The cap is on a line's content: a request of exactly 16 MiB (its
/// newline not counted) is read and answered, and so is the line after
/// it; one byte more is refused, and the next line is still answered.
/// Before, the exact one was refused and the skip took the next line too.
#[test]
fn truthful_a_line_of_exactly_the_protocols_cap_is_read() {
    let query = r#"{"query":"status"}"#;
    let exact = format!("{query}{}", " ".repeat((16 << 20) - query.len()));
    let over = format!("{exact} ");
    let (code, stdout) = serve(&[&exact, query, &over, query]);
    assert_eq!(code, Some(0), "{stdout}");
    let expected = concat!(
        r#"{"status":"idle"}"#,
        "\n{\"settled\":true}\n",
        r#"{"status":"idle"}"#,
        "\n{\"settled\":true}\n",
        r#"{"error":"line 3: longer than 16777216 bytes: not read"}"#,
        "\n{\"settled\":true}\n",
        r#"{"status":"idle"}"#,
        "\n{\"settled\":true}\n"
    );
    assert_eq!(stdout, expected);
}

/// A protocol bench's log path is refused as every command's output is,
/// before the cycles run, with the same words. Before, `"log":"new/"` ran
/// the cycles and then answered `Not a directory (os error 20)`.
#[test]
fn truthful_a_protocol_bench_log_path_is_checked_like_any_output() {
    let (code, stdout) = serve(&[
        r#"{"bench":{"batch":1,"cycles":1,"log":"new/"}}"#,
        r#"{"bench":{"batch":1,"cycles":1,"log":"no-such-folder/x.jsonl"}}"#,
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("line 1: bench log new/: ends in `/`, so it names a folder"),
        "{stdout}"
    );
    assert!(
        stdout.contains("line 2: bench log no-such-folder/x.jsonl: its folder does not exist"),
        "{stdout}"
    );
}

/// Another implementation cannot forge a line of `run`'s report either: a
/// control character in what it answers (an id holding a newline) is
/// escaped, so the diff shows the one line it sent. Before, its
/// `~inserted A\nok   forged.txn` printed as an unchanged `~inserted A`
/// and an added `ok   forged.txn`.
#[cfg(unix)]
#[test]
fn truthful_another_implementation_cannot_forge_a_line() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", "followup A\n----\n~inserted A\n");
    let answer = r#"{"type":"agent/inbox/inserted","data":{"message":{"id":"A\nok   forged.txn","role":"user","content":[],"source":{"kind":"user"}}}}"#;
    let command =
        format!("while read line; do printf '%s\\n' '{answer}' '{{\"settled\":true}}'; done");
    let (code, stdout, stderr) = run(&["run", "--against", &command, &text(&transcript)]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("    - ~inserted A\n"), "{stdout}");
    assert!(
        stdout.contains("    + ~inserted \"A\\nok   forged.txn\"\n"),
        "{stdout}"
    );
    assert!(
        !stdout.lines().any(|line| line.starts_with("ok")),
        "{stdout}"
    );
}

/// A terminal escape sequence in a transcript is shown, not acted on:
/// `run`'s diff and `diagram`'s note print control characters escaped.
/// Before, `nonsense\x1b]0;pwned\x07` retitled the user's terminal when
/// `run` printed the expected line, and `followup B\x1b[31m` turned the
/// rest of the report red.
#[test]
fn truthful_a_control_character_in_a_transcript_is_shown_escaped() {
    let folder = folder();
    let transcript = write(
        &folder,
        "esc.txn",
        "followup A\n----\nnonsense\x1b]0;pwned\x07\n\nfollowup B\x1b[31m\n----\n",
    );
    let (code, stdout, _) = run(&["run", &text(&transcript)]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    assert!(
        stdout.contains("    - nonsense\\u{1b}]0;pwned\\u{7}\n"),
        "{stdout}"
    );
    assert!(stdout.contains(":5: followup B\\u{1b}[31m\n"), "{stdout}");
    let (_, _, stderr) = run(&["diagram", &text(&transcript), "--format", "mermaid"]);
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    assert!(
        stderr.contains("`followup B\\u{1b}[31m` is not a command"),
        "{stderr}"
    );
}

/// A log whose last turn is `u64::MAX` is refused by a resume (the file
/// untouched): the resumed agent would have no number for its next turn.
/// Before, `soak --log it --resume` resumed it and the first send panicked
/// in the core (`attempt to add with overflow` at core/src/driver.rs),
/// exit 101 with two backtraces.
#[test]
fn never_panic_a_resume_of_the_largest_turn_number_is_refused() {
    let folder = folder();
    let bytes = format!(
        "{HEADER}\n{{\"type\":\"turn/start\",\"data\":{{\"turn\":{}}}}}\n",
        u64::MAX
    );
    let log = write(&folder, "max.jsonl", &bytes);
    let arguments = [
        "soak",
        "--log",
        &text(&log),
        "--resume",
        "--calls",
        "1",
        "--senders",
        "1",
    ];
    let (code, _, stderr) = run(&arguments);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("leaves no number for the next turn"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&log).expect("the log"), bytes);
}

/// A stdout that cannot be written is said once, and a closed one ends
/// `serve-protocol` with exit 0 as docs/PROTOCOL.md says. Before,
/// `validate f.jsonl > /dev/full` printed its `error: cannot write to
/// stdout` twice (its own, then the final flush's), and `serve-protocol |
/// head -1` exited 2 (the final flush overrode the 0 it returned).
#[test]
fn truthful_a_stdout_failure_is_said_once_and_keeps_the_documented_code() {
    let log = common::workspace().join("tests/logs/admission-outside-step.jsonl");
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let output = courier()
            .arg("validate")
            .arg(&log)
            .stdout(full)
            .output()
            .expect("courier runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr.matches("cannot write to stdout").count(),
            1,
            "{stderr}"
        );
    }
    use std::io::Write as _;
    let mut child = courier()
        .arg("serve-protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("courier runs");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    let mut stdout = child.stdout.take().expect("a stdout pipe");
    writeln!(stdin, r#"{{"query":"status"}}"#).expect("a line in");
    let mut first = [0; 8];
    stdout.read_exact(&mut first).expect("an answer");
    drop(stdout);
    // Answers to lines after the client has gone meet a closed pipe.
    for _ in 0..1000 {
        if writeln!(stdin, r#"{{"query":"status"}}"#).is_err() {
            break;
        }
    }
    drop(stdin);
    let output = child.wait_with_output().expect("courier ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

// The fourth audit: the wire protocol, mixed inputs, help and listing.

/// A protocol line with a key the input does not keep is refused naming
/// its path: a cancel's cause with a misspelt `reason` was done as a plain
/// cancel. A message keeps every field as sent (a fifth field, `source`
/// beyond its kind, content blocks), back in the outputs and the log; a
/// key it names twice is refused. Before: `message.zz` vanished from the
/// spliced message.
#[test]
fn truthful_a_protocol_key_an_input_would_drop_is_refused_by_its_path() {
    let message = |id: &str, extra: &str| {
        format!(
            r#"{{"id":"{id}","role":"user","content":[{{"type":"text","text":"{id}","x":{{"y":1}}}}],"source":{{"kind":"user","via":"mail"}}{extra}}}"#
        )
    };
    let send = |id: &str, extra: &str| {
        format!(
            r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"no-wake"}}"#,
            message(id, extra)
        )
    };
    let lines = [
        send("A", r#","zz":1"#),
        r#"{"input":"cancel","cause":{"kind":"user","reason":"veto"},"keep_inbox":true}"#
            .to_owned(),
        send("B", r#","zz":1,"zz":2"#),
        r#"{"query":"inbox"}"#.to_owned(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (code, stdout) = serve(&lines);
    assert_eq!(code, Some(0), "{stdout}");
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|line| *line != r#"{"settled":true}"#)
        .collect();
    // A's splice and its notification, each with the whole message.
    for answer in &answers[..2] {
        for kept in [r#""zz":1"#, r#""x":{"y":1}"#, r#""via":"mail""#] {
            assert!(answer.contains(kept), "{answer} lacks {kept}");
        }
    }
    assert_eq!(
        answers[2],
        r#"{"error":"line 2: input: unknown key `cause.reason`"}"#
    );
    assert!(
        answers[3].starts_with(r#"{"error":"line 3: duplicate key `zz`"#),
        "{stdout}"
    );
    assert_eq!(
        answers.last(),
        Some(&r#"{"inbox":{"next-step":[],"next-turn":["A"]}}"#),
        "{stdout}"
    );
}

/// Over the protocol a message id is any JSON string, as dsh takes it
/// (SPEC §10's grammar is the transcript's): empty, NUL, a newline,
/// `----`, a space, `none`, a megabyte. The log it answers reads back
/// (`courier validate` passes it) and `courier repair` lists each id as
/// one word a reader cannot split or miss. Ids that are not strings,
/// and `lose` counts that are not integers from 0 to 2^64-1, are errors
/// naming the line. Before: `repair` listed the id `a b` as two ids, and
/// the empty id and the id `none` as nothing (`claimed and lost: `).
#[test]
fn truthful_a_protocol_id_is_any_string_and_its_log_reads_back() {
    let send = |id: &str| {
        format!(
            r#"{{"input":"send","message":{{"id":{id},"role":"user","content":[],"source":{{"kind":"user"}}}},"target":"next-turn","wakeup":"wake"}}"#
        )
    };
    let long = format!("\"{}\"", "x".repeat(1 << 20));
    let mut lines: Vec<String> = [r#""""#, r#""a\u0000b""#, r#""a\nb""#, r#""----""#]
        .into_iter()
        .chain([r#""a b""#, r#""none""#, &long])
        .map(send)
        .collect();
    lines.extend(["1", "null", "{}"].map(send));
    lines.extend(
        ["-1", "1.5", "1e3", r#""2""#, "null", "18446744073709551616"]
            .map(|lose| format!(r#"{{"restart":{{"lose":{lose}}}}}"#)),
    );
    lines.push(r#"{"query":"log"}"#.to_owned());
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (code, stdout) = serve(&lines);
    assert_eq!(code, Some(0));
    let errors: Vec<String> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|answer| Some(answer.get("error")?.as_str()?.to_owned()))
        .collect();
    let expected: Vec<String> = (8..=16).map(|line| format!("line {line}: ")).collect();
    assert_eq!(errors.len(), expected.len(), "{errors:?}");
    for (error, prefix) in errors.iter().zip(&expected) {
        assert!(error.starts_with(prefix), "{error}");
    }
    assert!(errors[0].contains("expected a string"), "{errors:?}");
    assert!(
        errors[3].contains("from 0 to 18446744073709551615"),
        "{errors:?}"
    );
    let log = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|answer| answer.get("log").cloned())
        .expect("a log answer");
    let log: Vec<String> = serde_json::from_value(log).expect("log lines");
    let folder = folder();
    let path = write(&folder, "ids.jsonl", log.join("\n") + "\n");
    let (code, stdout, stderr) = run(&["validate", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, stdout, stderr) = run(&["repair", &text(&path)]);
    assert_eq!(code, Some(0), "{stderr}");
    let pending = stdout
        .lines()
        .find(|line| line.starts_with("pending next-turn: "))
        .expect("a pending line");
    let long = "x".repeat(1 << 20);
    assert_eq!(
        pending,
        format!(r#"pending next-turn: "a\u{{0}}b" "a\nb" ---- "a b" "none" {long}"#)
    );
    assert!(
        stdout.contains("claimed and lost: \"\"\n"),
        "{}",
        &stdout[..stdout.len().min(400)]
    );
}

/// Help that stdout cannot take is an error and exit 2, as any other
/// output. Before: `courier --help > /dev/full` exited 0 silently (clap's
/// `exit` drops the write error).
#[test]
fn never_panic_help_stdout_cannot_take_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    for arguments in [&["--help"][..], &["run", "--help"], &["--version"]] {
        let output = courier()
            .args(arguments)
            .stdout(full.try_clone().expect("a second handle"))
            .output()
            .expect("courier runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.starts_with("error: cannot write to stdout: "),
            "{arguments:?}: {stderr}"
        );
    }
    // A usage error still goes to stderr, exit 2; help to stdout, exit 0.
    assert_eq!(run(&["--bogus"]).0, Some(2));
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("Exit codes (every command)"), "{stdout}");
}

/// A transcript saved as UTF-16 (with its byte order mark, as an editor on
/// Windows writes it) is refused saying so, by `run` (a file and a pipe)
/// and `diagram`. Before: "not UTF-8 text (byte 1 of the file is
/// invalid)", which does not say why.
#[test]
fn truthful_a_utf16_file_is_named_as_such() {
    let folder = folder();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(PASSING.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let path = write(&folder, "wide.txn", &utf16);
    for arguments in [vec!["run", &text(&path)], vec!["diagram", &text(&path)]] {
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("wide.txn:1: not UTF-8 text (byte 1 of the file is invalid) (it starts with a UTF-16 byte order mark: save it as UTF-8)"),
            "{arguments:?}: {stderr}"
        );
    }
    let (code, _, stderr) = run_piped(&["run", "/dev/stdin"], &utf16);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("UTF-16 byte order mark"), "{stderr}");
}

/// A report stimulus whose message a transcript command cannot spell (its
/// content is not the text of its id, its source has more than a kind) is
/// refused saying what a command can say, not blaming a valid id. Before:
/// a message `none` whose content was `B` was refused as "(ids match
/// `[A-Za-z0-9][A-Za-z0-9_.-]*`, SPEC §10)", which `none` does.
#[test]
fn truthful_a_report_stimulus_a_command_cannot_spell_says_why() {
    let mut message = serde_json::to_value(Message::text("none", Source::user())).unwrap();
    message["content"] = serde_json::json!([{ "type": "text", "text": "B" }]);
    let message: Message = serde_json::from_value(message).unwrap();
    let folder = folder();
    let path = write(
        &folder,
        "r.json",
        report(vec![Stimulus::Input(Input::followup(message))]),
    );
    let (code, _, stderr) = run(&["replay", &text(&path)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            r#"trace[0] is not a transcript command: it prints as "followup none", which reads back as another stimulus or none"#
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("its content is one text block of its id"),
        "{stderr}"
    );
}

/// A label wider than the room beside its lane (a splice of five long ids,
/// a `pre-step enter` of many) is drawn inside the picture, cut past what
/// fits and saying how long it was; a crash that loses it strikes the cut
/// label. Before: `attempt to subtract with overflow` at
/// src/diagram/svg.rs (a panic and a backtrace, exit 101) for a splice of
/// 12 ten-character ids, and a wrapped, huge `x` in a release build.
#[test]
fn never_panic_a_label_wider_than_its_lane_is_drawn_cut() {
    // Five ids: fewer than a mark lists (more are counted, not drawn).
    let ids: Vec<String> = (0..5)
        .map(|k| format!("message{k:02}-{}", "x".repeat(60)))
        .collect();
    let folder = folder();
    let path = write(
        &folder,
        "wide.txn",
        format!(
            "splice next-turn 0 0 {}\n----\n\nrestart lose=1\n----\n",
            ids.join(" ")
        ),
    );
    let (code, stdout, stderr) = run(&["diagram", &text(&path)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Every coordinate is a number inside the picture.
    let width: usize = stdout
        .split("width=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|number| number.parse().ok())
        .expect("the picture's width");
    for attribute in [" x=\"", " x1=\"", " x2=\""] {
        for value in stdout.split(attribute).skip(1) {
            let number = value.split('"').next().unwrap_or_default();
            let x: usize = number
                .parse()
                .unwrap_or_else(|_| panic!("{attribute}{number}"));
            assert!(x <= width, "{attribute}{number} in a picture {width} wide");
        }
    }
    let label = format!("spliced next-turn@0 +{}", ids.join(","));
    let cut = format!("… ({} characters)", label.chars().count());
    assert!(stdout.contains(&cut), "{stdout}");
    // The mermaid text keeps the label whole.
    let (code, stdout, stderr) = run(&["diagram", &text(&path), "--format", "mermaid"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(&label), "{stdout}");
}

/// Runs `courier` with `arguments`, its stdout a pipe, for at most a
/// minute (killed then, failing the test): its exit code, stdout and stderr.
fn run_bounded(arguments: &[&str]) -> (Option<i32>, String, String) {
    let child = courier()
        .args(arguments)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("courier runs");
    wait_bounded(child, &format!("{arguments:?}"))
}

/// Waits up to a minute for `child` (spawned with piped stdout and
/// stderr): its exit code, stdout and stderr. Killed and failed if it hangs.
fn wait_bounded(mut child: std::process::Child, what: &str) -> (Option<i32>, String, String) {
    for _ in 0..600 {
        if child.try_wait().expect("a child to wait for").is_some() {
            let output = child.wait_with_output().expect("courier ends");
            let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
            return (
                output.status.code(),
                text(output.stdout),
                text(output.stderr),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("{what} hangs");
}

/// `--diagram` beside an output that is a device or a pipe (`--out
/// /dev/stdout`) is refused before any work: the picture goes beside a
/// file. Before: `check --mutant no-latch --out /dev/stdout --diagram |
/// tail` wrote the counterexample into the pipe, then opened `/dev/stdout`
/// to read it back for the picture and waited on its own pipe forever
/// (seen blocked in `pipe_wait_readable` for ten minutes); on a terminal it
/// would have written `/dev/stdout.svg`. The picture is now drawn from the
/// counterexample in memory, and the refusal names the flag.
#[test]
fn never_hang_a_diagram_beside_a_pipe_is_refused() {
    for arguments in [
        &[
            "check",
            "--messages",
            "1",
            "--restarts",
            "0",
            "--out",
            "/dev/stdout",
            "--diagram",
        ][..],
        &[
            "sim",
            "--seeds",
            "0..2",
            "--no-coverage",
            "--report",
            "/dev/stdout",
            "--diagram",
        ],
    ] {
        let (code, _, stderr) = run_bounded(arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        let flag = if arguments[0] == "check" {
            "--out"
        } else {
            "--report"
        };
        assert!(
            stderr.contains(&format!(
                "error: --diagram beside {flag} /dev/stdout: a device or a pipe"
            )),
            "{stderr}"
        );
    }
    // Without `--diagram` a counterexample goes into the pipe, with no hint
    // to draw it beside there; drawn beside a file, the picture is the one
    // `courier diagram` draws of that file.
    #[cfg(feature = "mutants")]
    {
        let check = [
            "check",
            "--mutant",
            "no-latch",
            "--messages",
            "2",
            "--restarts",
            "0",
        ];
        let (code, stdout, _) = run_bounded(&[&check[..], &["--out", "/dev/stdout"]].concat());
        assert_eq!(code, Some(1), "{stdout}");
        assert!(
            stdout.starts_with("# replay: courier run --mutant no-latch"),
            "only the counterexample: {stdout}"
        );
        assert!(!stdout.contains("written to"), "{stdout}");
        assert!(!stdout.contains("add --diagram"), "{stdout}");
        let folder = folder();
        let out = folder.path().join("cex.txn");
        let (code, stdout, stderr) =
            run(&[&check[..], &["--out", &text(&out), "--diagram"]].concat());
        assert_eq!(code, Some(1), "{stdout}{stderr}");
        let drawn = folder.path().join("drawn.svg");
        let (code, _, stderr) = run(&["diagram", &text(&out), "--out", &text(&drawn)]);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(
            std::fs::read(folder.path().join("cex.svg")).expect("the picture beside"),
            std::fs::read(&drawn).expect("the picture drawn")
        );
    }
}

/// `sim --against` runs its seeds one after another: a `--jobs` beside it
/// is refused, naming both flags, as the other flags it does not use are,
/// rather than ignored while the user waits for workers that never run.
#[test]
fn truthful_a_flag_sim_against_does_not_use_is_refused() {
    let (code, _, stderr) = run(&["sim", "--seeds", "0..2", "--against", "true", "--jobs", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("'--against <CMD>' cannot be used with '--jobs <JOBS>'"),
        "{stderr}"
    );
}

/// What another implementation printed is quoted short wherever a line of
/// ours quotes it: `sim --against`'s divergence and property lines, and
/// `diagram`'s verdict on the divergence transcript it wrote (which keeps
/// the lines whole, in its comments). Before: an implementation that
/// answered with a 300,000-character id had each of those lines print all
/// of it (a 2 MB id printed 2 MB lines).
#[test]
fn truthful_another_implementations_long_line_is_quoted_short() {
    let folder = folder();
    let id = "y".repeat(300_000);
    let answer = format!(
        r#"{{"type":"agent/inbox/inserted","data":{{"message":{{"id":"{id}","role":"user","content":[],"source":{{"kind":"user"}}}}}}}}"#
    );
    let script = write(
        &folder,
        "other.sh",
        format!("while read -r line; do\n  echo '{answer}'\n  echo '{{\"settled\":true}}'\ndone\n"),
    );
    let command = format!("sh {}", text(&script));
    let out = folder.path().join("out");
    let (code, stdout, stderr) = run(&[
        "sim",
        "--seeds",
        "0",
        "--no-restarts",
        "--against",
        &command,
        "--out",
        &text(&out),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.contains("divergence: seed=0 stimulus=0"), "{stderr}");
    assert!(
        stdout.contains(" bytes in all)`"),
        "{}",
        &stdout[..stdout.len().min(2000)]
    );
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(line.len() < 1000, "a line of {} bytes", line.len());
    }
    let divergence = out.join("divergence-0.txn");
    assert!(text(&divergence).len() < 1000);
    assert!(
        std::fs::read_to_string(&divergence)
            .expect("the divergence transcript")
            .contains(&id),
        "the transcript keeps the line whole"
    );
    let (code, stdout, stderr) = run(&["diagram", &text(&divergence)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.starts_with("diverges at row 1 of 1: "),
        "{}",
        &stderr[..200]
    );
    assert!(stderr.len() < 1000, "a verdict of {} bytes", stderr.len());
    assert!(
        stdout.len() < 100_000,
        "a picture of {} bytes",
        stdout.len()
    );
}

/// A race report an editor saved with a UTF-8 byte order mark reads as the
/// report it is, by `replay`, `shrink` and `diagram` alike (the BOM was
/// already passed over when a report is told apart from a transcript).
/// Before: "not a race report: expected value at line 1 column 1".
#[test]
fn truthful_a_report_with_a_byte_order_mark_reads() {
    let folder = folder();
    let path = write(
        &folder,
        "bom.json",
        format!("\u{feff}{}", report(vec![followup("A")])),
    );
    let (code, stdout, stderr) = run(&["replay", &text(&path)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("no violation: the trace passes"),
        "{stdout}"
    );
    let (code, _, stderr) = run(&["diagram", &text(&path)]);
    assert_eq!(code, Some(0), "{stderr}");
    let out = folder.path().join("s.txn");
    let (code, _, stderr) = run(&["shrink", &text(&path), "--out", &text(&out)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("not a race report"), "{stderr}");
}

/// A session log given where a race report goes (both are JSON) is refused
/// saying what it is and which commands read it. Before: only "not a race
/// report: trailing characters at line 2 column 1".
#[test]
fn truthful_a_session_log_given_for_a_report_is_named() {
    let log = common::workspace().join("tests/logs/admission-outside-step.jsonl");
    let folder = folder();
    let out = folder.path().join("s.txn");
    for arguments in [
        vec!["replay", log.to_str().unwrap()],
        vec!["diagram", log.to_str().unwrap()],
        vec!["shrink", log.to_str().unwrap(), "--out", &text(&out)],
    ] {
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("not a race report: ")
                && stderr.contains("(it reads as a JSONL session log, an event a line: `courier validate` and `courier repair` read those)"),
            "{arguments:?}: {stderr}"
        );
    }
}

/// A protocol `bench` whose log path is the server's own stdout is refused:
/// the log's lines would reach the client as answers to the bench line.
/// Before: `"log":"/dev/stdout"` put nine session-log lines between the
/// bench line and its answer.
#[test]
fn truthful_a_protocol_bench_log_on_its_own_stdout_is_refused() {
    let (code, stdout) = serve(&[
        r#"{"bench":{"batch":1,"cycles":1,"log":"/dev/stdout"}}"#,
        r#"{"bench":{"batch":1,"cycles":1,"log":"/proc/self/fd/1"}}"#,
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    let error = |path: &str| {
        format!(
            r#"{{"error":"line {}: bench log {path}: this server's stdout, where its answers go: refused"}}"#,
            if path == "/dev/stdout" { 1 } else { 2 }
        )
    };
    let settled = r#"{"settled":true}"#;
    let expected = [
        &error("/dev/stdout")[..],
        settled,
        &error("/proc/self/fd/1"),
        settled,
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
}

/// A protocol `bench` whose log path is the file the server reads its
/// requests from is refused: the log would have been renamed over the
/// user's requests. The file is left as it was.
#[test]
fn never_destroy_a_protocol_bench_log_that_is_its_own_input_is_refused() {
    let folder = folder();
    let requests = folder.path().join("requests.jsonl");
    let request = format!(
        r#"{{"bench":{{"batch":1,"cycles":1,"log":"{}"}}}}"#,
        text(&requests)
    );
    std::fs::write(&requests, format!("{request}\n")).unwrap();
    let output = courier()
        .arg("serve-protocol")
        .stdin(std::fs::File::open(&requests).unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            r#"{{"error":"line 1: bench log {} is the input /dev/stdin: refused"#,
            text(&requests)
        )),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&requests).unwrap(),
        format!("{request}\n")
    );
}

/// An output written to stdout (`--out /dev/stdout`) is all that goes
/// there: the status line naming it goes to stderr. Before, `diagram: /dev/stdout`
/// followed the picture into the pipe, and `demo`'s session preceded its log.
#[test]
fn truthful_an_output_on_stdout_is_all_that_stdout_carries() {
    let folder = folder();
    let transcript = write(&folder, "x.txn", PASSING);
    let (code, stdout, stderr) = run(&["diagram", &text(&transcript), "--out", "/dev/stdout"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("<svg") && stdout.ends_with("</svg>\n"),
        "{stdout}"
    );
    assert!(stderr.contains("diagram: /dev/stdout"), "{stderr}");
    let (code, stdout, stderr) = run(&["demo", "--log", "/dev/stdout"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.lines().all(|line| line.starts_with('{')),
        "only the log's JSON lines: {stdout}"
    );
    assert!(stderr.contains("log written to /dev/stdout"), "{stderr}");
}

/// A lone UTF-16 surrogate escaped in an id is read losslessly: ids
/// `a\ud800` and `a\ud801` (two ids to dsh, which compares code units) may
/// be pending at once, while one of them pending twice, however its escape
/// is written, still breaks unique-pending. Before, both read as
/// `a\u{FFFD}` and the first log was `unique-pending: a\u{FFFD} inserted
/// ... while pending`.
#[test]
fn truthful_ids_differing_in_a_lone_surrogate_are_two_ids() {
    let header =
        r#"{"type":"session","version":0,"id":"s","createdAt":0,"cwd":"","delegationDepth":0}"#;
    let splice = |target: &str, id: &str| {
        format!(
            r#"{{"type":"agent/inbox/spliced","data":{{"target":"{target}","start":0,"inserted":[{{"id":"{id}","role":"user","content":"x","source":{{"kind":"user"}}}}]}}}}"#
        )
    };
    let folder = folder();
    let log = |name: &str, second: &str| {
        let lines = [
            header.to_owned(),
            splice("next-turn", r"a\ud800"),
            splice("next-step", second),
        ];
        text(&write(&folder, name, lines.join("\n") + "\n"))
    };
    let two = log("two.jsonl", r"a\ud801");
    let (code, stdout, stderr) = run(&["validate", &two]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for twice in [r"a\ud800", r"a\uD800", r"\u0061\ud800"] {
        let once = log("once.jsonl", twice);
        let (code, stdout, stderr) = run(&["validate", &once]);
        assert_eq!(code, Some(1), "{twice}: {stdout}{stderr}");
        assert!(stdout.contains("unique-pending"), "{twice}: {stdout}");
        assert!(stdout.contains("once.jsonl:3"), "{twice}: {stdout}");
    }
}

/// `courier validate PATH`, then `courier repair PATH --out OUT`: asserts
/// both exit 2 saying `reason` and `repair` wrote nothing; returns each
/// one's stdout and stderr.
fn refused_by_validate_and_repair(path: &Path, out: &Path, reason: &str) -> [(String, String); 2] {
    let (path_text, out_text) = (text(path), text(out));
    let refused = [
        run(&["validate", &path_text]),
        run(&["repair", &path_text, "--out", &out_text]),
    ];
    refused.map(|(code, stdout, stderr)| {
        assert_eq!(code, Some(2), "{}: {stdout}{stderr}", path.display());
        assert!(stderr.contains(reason), "{stderr}");
        assert!(!out.exists(), "{}: nothing written", out.display());
        (stdout, stderr)
    })
}

/// A log an editor saved with a UTF-8 byte order mark: `repair` took a
/// one-line log's header for a torn tail and dropped it (and said only
/// `not JSON` of a longer one). Now both commands refuse it with the same
/// reason, and nothing is written. So is a mark starting the last line
/// (a file pasted in), which `repair` dropped as a torn tail.
#[test]
fn truthful_a_log_with_a_byte_order_mark_is_refused_not_cut() {
    let folder = folder();
    let turn = "{\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n";
    for (name, bytes) in [
        ("one.jsonl", format!("\u{feff}{HEADER}\n")),
        ("two.jsonl", format!("\u{feff}{HEADER}\n{turn}")),
        ("last.jsonl", format!("{HEADER}\n\u{feff}{turn}")),
    ] {
        let path = write(&folder, name, &bytes);
        let out = folder.path().join(format!("repaired-{name}"));
        let reason = "the line starts with a byte order mark";
        refused_by_validate_and_repair(&path, &out, reason);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            bytes,
            "{name} untouched"
        );
    }
}

/// A whole final line of valid JSON nesting a message's content deeper than
/// serde_json's 128 levels: `repair` took it for a torn tail and dropped
/// the send it records (`torn tail: dropped (line 2: not JSON: ...)`), and
/// `validate` called it torn, or not JSON in the middle of a log. It is
/// JSON (`JSON.parse` reads it), so both now refuse it for its depth at
/// its line, and `repair` writes nothing.
#[test]
fn never_destroy_a_deeply_nested_last_line_is_refused_not_dropped_as_torn() {
    let folder = folder();
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let send = format!(
        "{{\"type\":\"agent/inbox/spliced\",\"data\":{{\"target\":\"next-turn\",\"start\":0,\"inserted\":[{{\"id\":\"A\",\"role\":\"user\",\"content\":{deep},\"source\":{{\"kind\":\"user\"}}}}]}}}}\n"
    );
    for (name, bytes) in [
        ("last.jsonl", format!("{HEADER}\n{send}")),
        ("middle.jsonl", format!("{HEADER}\n{send}{send}")),
    ] {
        let path = write(&folder, name, &bytes);
        let out = folder.path().join(format!("repaired-{name}"));
        let reason = "nested more than 127 arrays and objects deep";
        for (stdout, stderr) in refused_by_validate_and_repair(&path, &out, reason) {
            assert!(
                stderr.contains("line 2") || stderr.contains(":2:"),
                "{stderr}"
            );
            assert!(
                !stderr.contains("torn tail") && !stderr.contains("not JSON"),
                "{stderr}"
            );
            assert!(!stdout.contains("dropped"), "{stdout}");
        }
    }
}

/// A log saved as UTF-16 (a byte order mark FF FE or FE FF first) is named
/// as such by `validate` and `repair`, in `run`'s words, and `repair`
/// leaves it untouched. Before, both said only `line 1: not UTF-8: invalid
/// utf-8 sequence of 1 bytes from index 0`.
#[test]
fn truthful_a_utf16_log_is_named_as_one() {
    let folder = folder();
    let log = "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":0,\"cwd\":\"\",\"delegationDepth\":0}\n";
    let little: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(log.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let big: Vec<u8> = [0xFE, 0xFF]
        .into_iter()
        .chain(log.encode_utf16().flat_map(u16::to_be_bytes))
        .collect();
    let said = ":1: not UTF-8: invalid utf-8 sequence of 1 bytes from index 0 \
                (it starts with a UTF-16 byte order mark: save it as UTF-8)";
    // Without its newline too: an editor's encoding, no torn tail (repair
    // said "its only line is torn").
    let unterminated: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(log.trim_end().encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    for (name, bytes) in [
        ("le.jsonl", little),
        ("be.jsonl", big),
        ("le-unterminated.jsonl", unterminated),
    ] {
        let path = write(&folder, name, &bytes);
        let (code, stdout, stderr) = run(&["validate", &text(&path)]);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(
            stderr.contains(&format!("{name}:1: not UTF-8"))
                && stderr.contains("(it starts with a UTF-16 byte order mark: save it as UTF-8)"),
            "{stderr}"
        );
        let (code, stdout, stderr) = run(&["repair", &text(&path)]);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} untouched");
    }
}

/// `run`'s diff quotes another implementation's lines as every error does:
/// a line of 100,000 characters shows as its first 200 and its length.
/// Before, the diff printed the whole line (the output grew with what the
/// other side printed).
#[cfg(unix)]
#[test]
fn bounded_memory_a_diff_line_of_another_implementation_is_capped() {
    let folder = folder();
    let id = "x".repeat(100_000);
    let answer = format!(
        "{{\"type\":\"agent/inbox/inserted\",\"data\":{{\"message\":{{\"id\":\"{id}\",\"role\":\"user\",\"content\":\"x\",\"source\":{{\"kind\":\"user\"}}}}}}}}\n{{\"settled\":true}}\n"
    );
    let answers = write(&folder, "answer.jsonl", answer);
    let command = format!("while read -r line; do cat '{}'; done", text(&answers));
    let transcript = text(&write(&folder, "t.txn", "followup A\n----\n~idle\n"));
    let (code, stdout, stderr) = run(&["run", "--against", &command, &transcript]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.contains("- ~idle"), "{stdout}");
    assert!(stdout.contains("bytes in all)"), "{stdout}");
    assert!(stdout.len() < 2_000, "{} bytes of diff", stdout.len());
}

/// Every protocol input error is in the protocol's words: it names the
/// input's kind and the field by its path, and says what a field must be as docs/PROTOCOL.md does (a
/// message, a cause, an integer, an array), never serde's Rust names;
/// a lone surrogate escape is named as one. Before: `expected struct
/// Fields`, `expected internally tagged enum CancelCause`, `expected
/// usize`, `expected variant identifier`, `expected map with a single
/// key`, and `not JSON: unexpected end of hex escape`.
#[test]
fn truthful_a_protocol_input_error_is_in_the_protocols_words() {
    let message = |id: &str| {
        format!(r#"{{"id":{id},"role":"user","content":"x","source":{{"kind":"user"}}}}"#)
    };
    let lines = [
        (
            r#"{"input":"send","message":1,"target":"next-turn","wakeup":"wake"}"#.to_owned(),
            "input send: message: invalid type: integer `1`, expected a message: an object with `id`, `role`, `content` and `source`",
        ),
        (
            format!(
                r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"wake"}}"#,
                message("1")
            ),
            "input send: message.id: invalid type: integer `1`, expected a string",
        ),
        (
            r#"{"input":"pre-step","decision":"enter","batch":[1]}"#.to_owned(),
            "input pre-step: batch[0]: invalid type: integer `1`, expected a message",
        ),
        (
            r#"{"input":"pre-step","decision":"enter","batch":1}"#.to_owned(),
            "input pre-step: batch: invalid type: integer `1`, expected an array",
        ),
        (
            r#"{"input":"pre-step","decision":1}"#.to_owned(),
            "input pre-step: invalid type: integer `1`, expected a kind's name (a string)",
        ),
        (
            r#"{"input":"pre-step","decision":"pass","batch":[]}"#.to_owned(),
            "input: unknown key `batch`",
        ),
        (
            r#"{"input":"cancel","cause":"user","keep_inbox":true}"#.to_owned(),
            "input cancel: cause: invalid type: string \"user\", expected a cause: an object whose `kind` is `user`, `parent` or `hook`",
        ),
        (
            r#"{"input":"cancel","cause":[],"keep_inbox":true}"#.to_owned(),
            "input cancel: cause: missing field `kind`",
        ),
        (
            r#"{"input":"splice","target":"next-turn","start":-1,"removed":0,"inserted":[]}"#
                .to_owned(),
            "input splice: start: invalid value: integer `-1`, expected an integer from 0 to 18446744073709551615",
        ),
        (
            r#"{"input":"splice","target":"next-turn","start":0,"removed":0,"inserted":{}}"#
                .to_owned(),
            "input splice: inserted: invalid type: an object, expected an array",
        ),
        (
            r#"{"input":"step"}"#.to_owned(),
            "input step: invalid value: an object, expected exactly one step outcome key",
        ),
        (
            r#"{"input":"step","completed":1}"#.to_owned(),
            "input step: completed: invalid type: integer `1`, expected null",
        ),
        (
            r#"{"input":"splice","target":"next-turn","start":0,"removed":0,"inserted":[{"id":"a","role":"user","content":"x","source":{"kind":"user"}},{"id":"b","content":"x","source":{"kind":"user"}}]}"#.to_owned(),
            "input splice: inserted[1]: missing field `role`",
        ),
        (
            r#"{"input":"cancel","cause":{"kind":"user"}}"#.to_owned(),
            "input cancel: missing field `keep_inbox`",
        ),
        (
            r#"{"input":1}"#.to_owned(),
            "input: invalid type: integer `1`, expected a kind's name (a string)",
        ),
        (
            format!(
                r#"{{"input":"send","message":{},"target":"next-turn","wakeup":"wake"}}"#,
                message(r#""a\ud800""#)
            ),
            "a string escapes half a UTF-16 surrogate pair alone (`\\ud800` at byte 35)",
        ),
        (
            r#"{"query":"\udc00"}"#.to_owned(),
            "a string escapes half a UTF-16 surrogate pair alone (`\\udc00` at byte 11)",
        ),
    ];
    let sent: Vec<&str> = lines.iter().map(|(line, _)| line.as_str()).collect();
    let (code, stdout) = serve(&sent);
    assert_eq!(code, Some(0), "{stdout}");
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|line| *line != r#"{"settled":true}"#)
        .collect();
    assert_eq!(answers.len(), lines.len(), "{stdout}");
    for (number, (answer, (_, expected))) in answers.iter().zip(&lines).enumerate() {
        let answer: serde_json::Value = serde_json::from_str(answer).unwrap();
        let answer = answer["error"].as_str().unwrap_or_default();
        let expected = format!("line {}: {expected}", number + 1);
        assert!(answer.contains(&expected), "{answer} lacks {expected}");
        for internal in [
            "struct",
            "enum ",
            "usize",
            "identifier",
            "map",
            "sequence",
            "unit",
            "hex escape",
        ] {
            assert!(!answer.contains(internal), "{answer} says {internal}");
        }
    }
}

/// A picture's size follows its rows, not its ids: one splice of 20,000
/// messages, then a steer claiming them all, draws each id list cut to its
/// first 8 and each run of per-message marks as 8 and a count, saying so.
/// Before, every id was a mark and in every label: 12 MB of SVG (9.9 KB
/// now).
#[test]
fn bounded_memory_a_row_of_many_ids_draws_a_few_and_counts_the_rest() {
    let folder = folder();
    let ids: Vec<String> = (0..20_000).map(|k| format!("m{k}")).collect();
    let transcript = format!(
        "splice next-step 0 0 {}\n\nsteer A\n\npre-step pass\n\nstep completed\n",
        ids.join(" ")
    );
    let path = write(&folder, "many.txn", transcript);
    let out = folder.path().join("many.svg");
    let (code, _, stderr) = run(&["diagram", &text(&path), "--out", &text(&out)]);
    assert_eq!(code, Some(0), "{stderr}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.len() < 40_000, "{} bytes of SVG", svg.len());
    for said in [
        "splice next-step 0 0 m0 m1 m2 m3 m4 m5 m6 m7 … and 19992 more",
        "spliced next-step@0 +m0,m1,m2,m3,m4,m5,m6,m7 (… and 19992 more inserted)",
        "… and 19992 more ~inserted",
        "… and 19993 more ~claimed",
        "… and 19993 more user/message",
        "awaits pre-step [m0 m1 m2 m3 m4 m5 m6 m7 … and 19993 more]",
    ] {
        assert!(svg.contains(said), "the picture lacks {said}");
    }
    let (code, mermaid, stderr) = run(&["diagram", &text(&path), "--format", "mermaid"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(mermaid.len() < 10_000, "{} bytes of Mermaid", mermaid.len());
}

/// Text from a user's file that an error or a diff quotes is escaped and
/// capped wherever it is quoted: a `run` diff's command header (it printed
/// a 50 MB command whole), an output line holding a carriage return (the
/// diff split it in two, forging a line), and an unknown mutant's name
/// from a transcript comment or a report (printed raw: escape sequences
/// acted on the terminal, a newline forged a line).
#[test]
fn truthful_quoted_text_is_escaped_and_capped_in_diffs_and_mutant_names() {
    let folder = folder();
    let long = write(
        &folder,
        "long.txn",
        format!("followup {}\n----\n", "A".repeat(100_000)),
    );
    let (code, stdout, _) = run(&["run", &text(&long)]);
    assert_eq!(code, Some(1), "{stdout}");
    let longest = stdout.lines().map(str::len).max().unwrap_or_default();
    assert!(longest < 300, "a diff line of {longest} bytes");
    assert!(stdout.contains("(100009 bytes in all)"), "{stdout}");

    let forged = write(
        &folder,
        "forged.txn",
        "followup A\n----\n\npre-step enter A\u{1b}x\u{8}FORGED\n----\n\n",
    );
    let (code, stdout, _) = run(&["run", &text(&forged)]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(!stdout.contains(['\u{1b}', '\u{8}']), "{stdout:?}");
    assert!(
        stdout.contains("    + error: bad-command: pre-step enter A\\u{1b}x\\u{8}FORGED\n"),
        "{stdout}"
    );
    // A lone carriage return ends no line: the file is refused naming it.
    let returned = write(
        &folder,
        "cr.txn",
        "followup A\n----\n\npre-step A\rFORGED\n",
    );
    let (code, stdout, stderr) = run(&["run", &text(&returned)]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("cr.txn:4: holds a lone carriage return"),
        "{stderr}"
    );

    let named = write(
        &folder,
        "named.txn",
        "# mutant: \u{1b}[31mRED\u{8}X\nfollowup A\n----\n",
    );
    let (code, stdout, stderr) = run(&["diagram", &text(&named), "--out", "/dev/null"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(!stderr.contains(['\u{1b}', '\u{8}']), "{stderr:?}");
    assert!(
        stderr.contains("unknown mutant `\\u{1b}[31mRED\\u{8}X`"),
        "{stderr}"
    );
}

/// `run --against` holds another implementation to the protocol's own
/// rules: an answer naming a key twice is refused as the core's server
/// refuses such a line (it was read as its last value), and an input past
/// the protocol's 16 MiB line is said to be one, naming the transcript's
/// line, before it is sent (the core's own server refused it, and the
/// error blamed the implementation for exiting).
#[cfg(unix)]
#[test]
fn truthful_run_against_holds_a_peer_to_the_protocols_rules() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", "followup A\n----\n");
    let twice = r#"read line; printf '%s\n' '{"type":"turn/start","data":{"turn":1},"data":{"turn":2}}' '{"settled":true}'; cat >/dev/null"#;
    let (code, stdout, stderr) = run(&["run", "--against", twice, &text(&transcript)]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("duplicate key `data`"), "{stderr}");

    // About 100 bytes of JSON each: 20 MB in all.
    // A line that is never an output is said at once, quoted as the peer
    // printed it, in the protocol's words: a marker not exactly the
    // marker (it waited out the timeout), a number past 64 bits (quoted
    // as a re-sorted float, `expected u64`), bytes that are not UTF-8
    // (shown as replacement characters).
    for (printed, said) in [
        (
            r#"'{"settled":1}'"#,
            r#"its line `{"settled":1}` is no settle marker"#,
        ),
        (
            r#"'{"type":"turn/start","data":{"turn":18446744073709551616}}' '{"settled":true}'"#,
            r#"its line `{"type":"turn/start","data":{"turn":18446744073709551616}}` is not an output"#,
        ),
        (
            r#"'{"type":"idle'"$(printf '\377')"'"}'"#,
            r#"its line `{"type":"idle\xFF"}` is not UTF-8"#,
        ),
    ] {
        let peer = format!("read line; printf '%s\\n' {printed}; cat >/dev/null");
        let output = courier()
            .args(["run", "--against", &peer, &text(&transcript)])
            .env("COURIER_ANSWER_TIMEOUT", "30")
            .output()
            .expect("courier runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{peer}: {stderr}");
        assert!(stderr.contains(said), "{peer}: {stderr}");
        for rust in ["u64", "usize", "enum", "variant", "\u{fffd}", "within"] {
            assert!(!stderr.contains(rust), "{peer}: {stderr}");
        }
    }

    let ids: Vec<String> = (0..200_000).map(|k| format!("m{k:08}")).collect();
    let long = write(
        &folder,
        "long.txn",
        format!("splice next-turn 0 0 {}\n----\n", ids.join(" ")),
    );
    let output = courier()
        .args(["run", "--against", "cat >/dev/null", &text(&long)])
        .env("COURIER_ANSWER_TIMEOUT", "30")
        .output()
        .expect("courier runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("long.txn:1: ")
            && stderr.contains("past the protocol's line of 16777216 bytes"),
        "{stderr}"
    );
}

/// A race report saved as UTF-16 is said to be one by `replay` and
/// `shrink`, as `diagram`, `run` and `validate` say it. Before: "expected
/// value at line 1 column 1".
#[test]
fn truthful_a_utf16_report_is_said_to_be_one() {
    let folder = folder();
    let report = write(&folder, "r.json", b"\xff\xfe{\x00}\x00");
    let out = folder.path().join("out.txn");
    for arguments in [
        vec!["replay", &text(&report)][..].to_vec(),
        vec!["shrink", &text(&report), "--out", &text(&out)],
    ] {
        let (code, stdout, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("(it starts with a UTF-16 byte order mark: save it as UTF-8)"),
            "{arguments:?}: {stderr}"
        );
    }
}

/// An implementation that exits before it settles is said to have exited,
/// with how it ended, whichever of its pipes the run met first. Before,
/// the error was one of two texts by chance (`it exited (or closed its
/// stdout)` or `cannot write to the implementation: Broken pipe`), and
/// neither said the exit code or the signal.
#[cfg(unix)]
#[test]
fn truthful_an_implementation_that_exits_is_said_to_with_how_it_ended() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", "followup A\n----\n\nfollowup B\n----\n");
    for (peer, said) in [
        ("exit 7", "it exited with code 7 before settling"),
        (
            "kill -SEGV $$",
            "it was killed by signal 11 before settling",
        ),
        ("read line; exit 3", "it exited with code 3 before settling"),
    ] {
        for _ in 0..3 {
            let (code, stdout, stderr) = run(&["run", "--against", peer, &text(&transcript)]);
            assert_eq!(code, Some(2), "{peer}: {stdout}{stderr}");
            assert!(stderr.contains(said), "{peer}: {stderr}");
        }
    }
}

/// An implementation that exits while something it started keeps its
/// stdout open, or that echoes its input back, breaks the file at once:
/// before, each waited out the whole answer timeout (60 s).
#[cfg(unix)]
#[test]
fn truthful_an_exit_behind_a_held_pipe_and_an_echo_are_said_at_once() {
    let folder = folder();
    let transcript = write(&folder, "t.txn", "followup A\n----\n");
    for (peer, said) in [
        (
            "sleep 300 & exit 4",
            "it exited with code 4 before settling",
        ),
        (
            "cat",
            "is a line in, not an answer (does it echo its input?)",
        ),
    ] {
        let started = std::time::Instant::now();
        let (code, stdout, stderr) = run(&["run", "--against", peer, &text(&transcript)]);
        assert_eq!(code, Some(2), "{peer}: {stdout}{stderr}");
        assert!(stderr.contains(said), "{peer}: {stderr}");
        // Far below the 60 s timeout; only a wait for it reaches this.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{peer}"
        );
    }
}

/// Every command names a bad line the same way, `<file>:<line>: <why>`,
/// whichever reader found it (an editor jumps to it).
#[test]
fn errors_name_the_file_and_line_in_one_format() {
    let folder = folder();
    let transcript = write(&folder, "u.txn", b"steer A\n\xff\n");
    let log = write(
        &folder,
        "u.jsonl",
        b"{\"type\":\"session\",\"id\":\"s\",\"version\":0}\n\xff\n{}\n",
    );
    let transcript = transcript.to_str().expect("a UTF-8 path");
    let log = log.to_str().expect("a UTF-8 path");
    for arguments in [
        vec!["run", transcript],
        vec!["diagram", transcript],
        vec!["validate", log],
        vec!["repair", log],
    ] {
        let (code, _, stderr) = run(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        let file = arguments[1];
        assert!(
            stderr.contains(&format!("error: {file}:2: ")),
            "{arguments:?}: {stderr}"
        );
    }
}

/// A hand-edited race report that does not read is refused in JSON's
/// words, never a Rust type's: a negative `swarm.inputs_max`, a `restart`
/// that is null, a `lose` with a fraction. Before: `expected u32`,
/// `expected struct Restart`, `expected usize`.
#[test]
fn truthful_a_malformed_report_is_refused_in_jsons_words() {
    let folder = folder();
    let good: serde_json::Value =
        serde_json::from_str(&report(vec![followup("A"), Stimulus::Restart { lose: 1 }]))
            .expect("a report is JSON");
    let edits: [(&str, serde_json::Value, &str); 3] = [
        (
            "/swarm/inputs_max",
            serde_json::json!(-1),
            "expected an integer from 0 to 4294967295",
        ),
        (
            "/trace/1/restart",
            serde_json::Value::Null,
            "expected an object",
        ),
        (
            "/trace/1/restart/lose",
            serde_json::json!(1.5),
            "expected an integer from 0 to 18446744073709551615",
        ),
    ];
    for (pointer, value, said) in edits {
        let mut edited = good.clone();
        *edited.pointer_mut(pointer).expect("the report has it") = value;
        let path = write(&folder, "edited.json", edited.to_string());
        let (code, _, stderr) = run(&["replay", &text(&path)]);
        assert_eq!(code, Some(2), "{pointer}: {stderr}");
        assert!(stderr.contains(said), "{pointer}: {stderr}");
        for rust in ["u32", "usize", "u64", "struct"] {
            assert!(!stderr.contains(rust), "{pointer}: {stderr}");
        }
    }
}

/// The picture `--diagram` draws beside a named `--out` or `--report` has a
/// path nobody named: a user's file there is kept, refused before any work
/// (exit 2), as beside a default output. Before, it was replaced.
#[test]
fn never_destroy_a_picture_beside_a_named_output_keeps_a_users_file() {
    let folder = folder();
    let mine = "my own drawing\n";
    for (arguments, name) in [
        (
            vec!["check", "--messages", "1", "--out", "plan.txn", "--diagram"],
            "plan.svg",
        ),
        (
            vec![
                "sim",
                "--seeds",
                "0..2",
                "--report",
                "race.json",
                "--diagram",
            ],
            "race.svg",
        ),
    ] {
        let svg = write(&folder, name, mine);
        let output = courier()
            .args(&arguments)
            .current_dir(folder.path())
            .output()
            .expect("courier runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("was not written by this command: kept"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&svg).unwrap(), mine);
    }
}

/// An output whose name is longer than a file system holds (255 bytes) is
/// refused before any work, naming the flag; the probe of its folder used a
/// shortened name, so before, the whole run happened and then failed.
#[test]
fn never_destroy_an_output_name_too_long_is_refused_before_any_work() {
    let folder = folder();
    let long = format!("{}.txn", "n".repeat(252));
    let transcript = write(&folder, "a.txn", "status\n----\nidle\n");
    for arguments in [
        vec!["demo", "--log", long.as_str()],
        vec!["check", "--messages", "1", "--out", long.as_str()],
        vec!["diagram", "a.txn", "--out", long.as_str()],
    ] {
        let output = courier()
            .args(&arguments)
            .current_dir(folder.path())
            .output()
            .expect("courier runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("its name is 256 bytes long: a file name holds at most 255"),
            "{stderr}"
        );
        // Refused before the work: nothing of a run was printed.
        assert!(!stdout.contains("unique states"), "{stdout}");
    }
    assert!(transcript.exists());
}
