//! dsh's default session log, `session.jsonl.zstd` (concatenated Zstandard
//! frames, each a checksummed batch of whole lines, the first the header
//! alone), read by `courier validate` and `courier repair` as its plaintext
//! (`src/compressed.rs`): every recorded and hand-written log, compressed
//! as dsh compresses it, gets the verdict and report of its plaintext; a
//! torn final frame keeps its whole lines and is said; a corrupt frame, or
//! one that ends inside a line, is refused naming its byte offset; and a
//! resume, which appends plain JSONL, refuses such a log saying why.

mod common;

use std::fs;
use std::future::ready;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use courier::compressed::Plaintext;
use courier_check::validate::validate;
use courier_core::log::{ZSTD_COMPRESSED, ZSTD_MAGIC};
use courier_core::{PreStepDecision, StepOutcome};
use courier_runtime::{Handle, ResumeError, pre_step_hook_fn, step_hook_fn};

/// One checksummed frame, as dsh compresses a batch, with a block per
/// piece (a flush between them), so a cut between pieces leaves the pieces
/// before it decodable.
fn frame(pieces: &[&[u8]]) -> Vec<u8> {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_checksum(true).unwrap();
    for piece in pieces {
        encoder.write_all(piece).unwrap();
        encoder.flush().unwrap();
    }
    encoder.finish().unwrap()
}

/// A log's lines, each with its newline.
fn lines(plain: &[u8]) -> Vec<&[u8]> {
    assert!(plain.ends_with(b"\n"));
    plain.split_inclusive(|byte| *byte == b'\n').collect()
}

/// `plain` compressed as dsh writes it: the header line alone in the first
/// frame, then the events in batches of 1, 2, 3, 4, 1, ... lines, a frame
/// each.
fn compressed(plain: &[u8]) -> Vec<u8> {
    let lines = lines(plain);
    let mut log = frame(&[lines[0]]);
    let mut rest = &lines[1..];
    for size in (1..=4).cycle() {
        if rest.is_empty() {
            break;
        }
        let (batch, after) = rest.split_at(size.min(rest.len()));
        log.extend(frame(&[&batch.concat()]));
        rest = after;
    }
    log
}

/// Runs the built `courier` in `folder`.
fn courier_in(folder: &Path, arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(arguments)
        .current_dir(folder)
        .output()
        .expect("the courier binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a person sees of a run: its exit code, stdout and stderr.
fn seen(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// Every log the project holds: dsh's recorded logs (and those written
/// across restarts), the hand-written bad ones, dsh's older records.
fn every_log() -> Vec<PathBuf> {
    let workspace = common::workspace();
    let mut logs = common::files_with_extension(&common::dsh_logs(), "jsonl");
    logs.extend(common::files_with_extension(
        &common::dsh_restart_logs(),
        "jsonl",
    ));
    logs.extend(common::files_with_extension(
        &workspace.join("tests/logs"),
        "jsonl",
    ));
    logs.extend(common::files_with_extension(
        &workspace.join("tests/legacy-logs"),
        "jsonl",
    ));
    logs
}

/// Every log twice, under the same names (a compressed one still named
/// `.jsonl`: it is told by content): `plain/`, and `zstd/` compressed.
fn both_ways(folder: &Path) -> Vec<String> {
    let (plain, zstd) = (folder.join("plain"), folder.join("zstd"));
    fs::create_dir(&plain).unwrap();
    fs::create_dir(&zstd).unwrap();
    let mut names = Vec::new();
    for log in every_log() {
        let from = log.parent().unwrap().file_name().unwrap().to_str().unwrap();
        let name = format!("{from}--{}", log.file_name().unwrap().to_str().unwrap());
        let bytes = fs::read(&log).unwrap();
        fs::write(plain.join(&name), &bytes).unwrap();
        fs::write(zstd.join(&name), compressed(&bytes)).unwrap();
        names.push(name);
    }
    names
}

/// The 101 recorded dsh logs, those dsh wrote across restarts, every bad
/// log (a violation is reported at its plaintext line) and dsh's older
/// records, compressed frame by frame: `validate` (text and JSON) prints
/// what it prints for the plaintext, with the same exit code.
#[test]
fn every_log_compressed_validates_as_its_plaintext() {
    let folder = tempfile::tempdir().unwrap();
    let names = both_ways(folder.path());
    assert!(
        names.len() >= 101 + 6 + 70,
        "found only {} logs",
        names.len()
    );
    let first = fs::read(folder.path().join("zstd").join(&names[0])).unwrap();
    assert!(first.starts_with(&ZSTD_MAGIC));
    for format in ["text", "json"] {
        let mut arguments = vec!["validate", "--format", format];
        arguments.extend(names.iter().map(String::as_str));
        let plain = seen(&courier_in(&folder.path().join("plain"), &arguments));
        let zstd = seen(&courier_in(&folder.path().join("zstd"), &arguments));
        assert_eq!(zstd, plain, "--format {format}");
        // Violations (exit 1) and refused records (exit 2) are among them.
        assert_eq!(plain.0, Some(2), "{}", plain.2);
        assert!(
            plain.1.contains("logs--balanced-step-end-mismatch.jsonl"),
            "{}",
            plain.1
        );
    }
}

/// `repair` reports the same of each recorded log compressed, and `--out`
/// writes the same plain JSONL.
#[test]
fn every_recorded_log_compressed_repairs_as_its_plaintext() {
    let folder = tempfile::tempdir().unwrap();
    let names = both_ways(folder.path());
    let dsh = names.iter().filter(|name| name.starts_with("dsh-"));
    let mut repaired = 0;
    for name in dsh {
        let mut outs = Vec::new();
        let mut reports = Vec::new();
        for way in ["plain", "zstd"] {
            let at = folder.path().join(way);
            let out = format!("{name}.repaired");
            reports.push(seen(&courier_in(&at, &["repair", name, "--out", &out])));
            outs.push(fs::read(at.join(&out)).unwrap());
        }
        assert_eq!(reports[1], reports[0], "{name}");
        assert_eq!(outs[1], outs[0], "{name}");
        assert!(outs[1].starts_with(b"{\"type\":\"session\""), "{name}");
        repaired += 1;
    }
    assert!(repaired >= 107, "{repaired}");
}

/// The dsh log the torn-frame tests cut: its lines, and the log compressed
/// with its last frame in blocks that end at a line's end and inside one.
struct Cut {
    plain: Vec<u8>,
    log: Vec<u8>,
    /// Where the last frame starts, and the plaintext before it.
    last_frame: usize,
    before_last: usize,
}

fn cut_log() -> Cut {
    let plain = fs::read(common::dsh_logs().join("max-tokens-continue__session.jsonl")).unwrap();
    let all = lines(&plain);
    let (head, tail) = all.split_at(all.len() - 3);
    let mut log = compressed(&head.concat());
    let last_frame = log.len();
    let (first, second) = tail[1].split_at(tail[1].len() / 2);
    log.extend(frame(&[tail[0], first, second, tail[2]]));
    Cut {
        before_last: head.concat().len(),
        plain,
        log,
        last_frame,
    }
}

/// A log cut at every byte inside its last frame: the whole lines decoded
/// from the frame are kept (a prefix of the log's lines, never less than
/// the complete frames hold) and checked, the rest is dropped, and the torn
/// frame is named (its byte offset, the first line not kept), also when
/// what it decoded ends at a line's end.
#[test]
fn a_torn_final_frame_keeps_its_whole_lines_and_is_named() {
    let Cut {
        plain,
        log,
        last_frame,
        before_last,
    } = cut_log();
    let mut kept_before = before_last;
    let (mut cut_in_a_line, mut cut_at_a_line_end) = (false, false);
    for cut in last_frame + 1..log.len() {
        let mut plaintext = Plaintext::new(&log[..cut]).unwrap();
        let mut findings = Vec::new();
        let summary = validate(&mut plaintext, |finding| findings.push(finding));
        let summary = summary.unwrap_or_else(|error| panic!("cut at {cut}: {error}"));
        assert!(summary.is_valid() && summary.torn.is_none(), "{findings:?}");
        let torn = plaintext.torn_frame().expect("a torn frame").clone();
        assert_eq!(torn.at, last_frame as u64, "cut at {cut}");
        assert_eq!(
            (summary.lines, torn.line),
            (torn.line - 1, summary.lines + 1)
        );
        // What was kept: the log's first `summary.lines` lines.
        let kept: usize = lines(&plain)[..summary.lines as usize]
            .iter()
            .map(|line| line.len())
            .sum();
        assert!(
            kept >= kept_before,
            "cut at {cut}: fewer lines than a shorter cut"
        );
        kept_before = kept;
        cut_in_a_line |= torn.dropped > 0;
        cut_at_a_line_end |= torn.dropped == 0 && torn.kept > 0;
        let mut again = Plaintext::new(&log[..cut]).unwrap();
        let mut read = Vec::new();
        again.read_to_end(&mut read).unwrap();
        assert_eq!(read, plain[..kept], "cut at {cut}");
    }
    // Cut in the checksum, the frame decoded whole: every line kept.
    assert_eq!(kept_before, plain.len());
    assert!(cut_in_a_line && cut_at_a_line_end);
}

/// The CLI says a torn final frame as it says a torn final line (a `note:`
/// in text, `torn` and `torn-frame` in JSON), exit 0; `repair` reports it
/// as the torn tail and `--out` writes the kept lines, decompressed, then
/// the closers: plain JSONL that validates.
#[test]
fn the_cli_says_a_torn_final_frame() {
    let Cut {
        plain,
        log,
        last_frame,
        before_last,
    } = cut_log();
    let folder = tempfile::tempdir().unwrap();
    // Inside the frame's header (nothing decoded), inside a line (a block
    // that ends inside one decoded), and in its checksum (every line
    // decoded: still torn).
    let torn = |cut: usize| {
        let mut plaintext = Plaintext::new(&log[..cut]).unwrap();
        plaintext.read_to_end(&mut Vec::new()).unwrap();
        plaintext.torn_frame().cloned().expect("torn")
    };
    let in_a_line = (last_frame + 1..log.len())
        .find(|cut| torn(*cut).dropped > 0)
        .unwrap();
    let lines_before = lines(&plain[..before_last]).len() as u64;
    for cut in [last_frame + 3, in_a_line, log.len() - 2] {
        let line = torn(cut).line;
        let kept = line - 1;
        assert!(kept >= lines_before);
        let name = format!("cut-{cut}.jsonl.zstd");
        fs::write(folder.path().join(&name), &log[..cut]).unwrap();
        let (code, stdout, stderr) = seen(&courier_in(folder.path(), &["validate", &name]));
        assert_eq!((code, stdout.as_str()), (Some(0), ""), "{stderr}");
        let note = format!(
            "note: {name}:{line}: a torn final Zstandard frame at byte {last_frame}, cut short: "
        );
        assert!(stderr.starts_with(&note), "{stderr}");
        assert!(stderr.contains("as dsh's loader reads it"), "{stderr}");
        let json = courier_in(folder.path(), &["validate", "--format", "json", &name]);
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(json["status"], "valid", "{json}");
        assert_eq!(
            (&json["torn"], &json["lines"]),
            (&line.into(), &kept.into())
        );
        assert_eq!(json["torn-frame"], last_frame, "{json}");

        let out = format!("{name}.repaired");
        let (code, stdout, stderr) = seen(&courier_in(
            folder.path(),
            &["repair", &name, "--out", &out],
        ));
        assert_eq!(code, Some(0), "{stderr}");
        assert!(
            stdout.starts_with(&format!("lines kept: {kept}\n")),
            "{stdout}"
        );
        let torn = format!("torn tail: dropped (a torn final Zstandard frame at byte {last_frame}");
        assert!(stdout.contains(&torn), "{stdout}");
        let repaired = fs::read(folder.path().join(&out)).unwrap();
        let kept_bytes: usize = lines(&plain)[..kept as usize].iter().map(|l| l.len()).sum();
        assert_eq!(repaired[..kept_bytes], plain[..kept_bytes]);
        let (code, _, stderr) = seen(&courier_in(folder.path(), &["validate", &out]));
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("note:"), "{stderr}");
    }
    assert_eq!(torn(log.len() - 2).line, lines(&plain).len() as u64 + 1);
}

/// The plaintext before a frame, and where each frame starts.
fn frame_starts(frames: &[Vec<u8>]) -> Vec<usize> {
    frames
        .iter()
        .scan(0, |at, frame| {
            let start = *at;
            *at += frame.len();
            Some(start)
        })
        .collect()
}

/// A flipped byte in a complete frame (its checksum, or its compressed
/// block) makes the file unreadable, exit 2, naming the frame's byte
/// offset, in both commands; so does a complete frame that ends inside a
/// line, and a first frame that holds more than the header.
#[test]
fn a_corrupt_frame_is_refused_naming_its_byte_offset() {
    let plain = fs::read(common::dsh_logs().join("max-tokens-continue__session.jsonl")).unwrap();
    let all = lines(&plain);
    let frames = [
        frame(&[all[0]]),
        frame(&[&all[1..4].concat()]),
        frame(&[&all[4..].concat()]),
    ];
    let starts = frame_starts(&frames);
    let log = frames.concat();
    let folder = tempfile::tempdir().unwrap();
    let second_end = starts[2];
    let middle = starts[1] + (second_end - starts[1]) / 2;
    for flipped in [second_end - 1, middle] {
        let mut bad = log.clone();
        bad[flipped] ^= 0x40;
        fs::write(folder.path().join("bad.zstd"), &bad).unwrap();
        let reason = format!(
            "corrupt Zstandard session log: the frame at byte {} (plaintext from line 2) does \
             not decode: ",
            starts[1]
        );
        let (code, _, stderr) = seen(&courier_in(folder.path(), &["validate", "bad.zstd"]));
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: bad.zstd: {reason}")),
            "{stderr}"
        );
        let json = courier_in(folder.path(), &["validate", "--format", "json", "bad.zstd"]);
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(json["status"], "unreadable", "{json}");
        assert!(json["error"]["line"].is_null(), "{json}");
        let said = json["error"]["reason"].as_str().unwrap();
        assert!(said.starts_with(&reason), "{json}");
        let (code, stdout, stderr) = seen(&courier_in(folder.path(), &["repair", "bad.zstd"]));
        assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: bad.zstd: {reason}")),
            "{stderr}"
        );
    }

    // A complete frame ending inside line 3, its rest in the next frame.
    let (start, rest) = all[2].split_at(10);
    let torn_inside = [
        frame(&[all[0]]),
        frame(&[&[all[1], start].concat()]),
        frame(&[&[rest, &all[3..].concat()].concat()]),
    ];
    let at = frame_starts(&torn_inside)[1];
    fs::write(folder.path().join("mid.zstd"), torn_inside.concat()).unwrap();
    let reason = format!(
        "corrupt Zstandard session log: complete frame contains a torn JSONL record: the frame \
         at byte {at} ends inside line 3\n"
    );
    for command in ["validate", "repair"] {
        let (code, _, stderr) = seen(&courier_in(folder.path(), &[command, "mid.zstd"]));
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: mid.zstd: {reason}")),
            "{stderr}"
        );
    }

    // The header and an event in one frame: dsh refuses it.
    let joined = [frame(&[&all[..2].concat()]), frame(&[&all[2..].concat()])];
    fs::write(folder.path().join("joined.zstd"), joined.concat()).unwrap();
    let (code, _, stderr) = seen(&courier_in(folder.path(), &["validate", "joined.zstd"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("error: joined.zstd: corrupt Zstandard session log: first frame is not exactly one header line"),
        "{stderr}"
    );
}

/// Told by content, not by name: a plain log named `.zstd` reads as plain,
/// and a log with no complete frame is refused as dsh refuses it.
#[test]
fn a_log_is_told_by_its_content() {
    let folder = tempfile::tempdir().unwrap();
    let plain = fs::read(common::dsh_logs().join("max-tokens-continue__session.jsonl")).unwrap();
    fs::write(folder.path().join("session.jsonl.zstd"), &plain).unwrap();
    let (code, _, stderr) = seen(&courier_in(
        folder.path(),
        &["validate", "session.jsonl.zstd"],
    ));
    assert_eq!(code, Some(0), "{stderr}");
    let header = frame(&[lines(&plain)[0]]);
    fs::write(folder.path().join("cut.jsonl"), &header[..header.len() - 1]).unwrap();
    for command in ["validate", "repair"] {
        let (code, _, stderr) = seen(&courier_in(folder.path(), &[command, "cut.jsonl"]));
        assert_eq!(code, Some(2), "{stderr}");
        let refused = "error: cut.jsonl: empty or header-less Zstandard session log: its first \
                       frame, at byte 0, is cut short\n";
        assert!(stderr.starts_with(refused), "{command}: {stderr}");
    }
    let help = courier_in(folder.path(), &["validate", "--help"]);
    assert!(text(&help.stdout).contains("session.jsonl.zstd"));
    // A reader of transcripts says what such a file is, in the same words.
    fs::write(folder.path().join("log.txn"), compressed(&plain)).unwrap();
    let (code, _, stderr) = seen(&courier_in(folder.path(), &["run", "log.txn"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("(it is {ZSTD_COMPRESSED})")),
        "{stderr}"
    );
}

/// A resume appends plain JSONL, so it refuses a compressed log as a
/// whole, saying what it is and what to do, and leaves it untouched.
#[test]
fn a_resume_refuses_a_compressed_log_saying_so() {
    let folder = tempfile::tempdir().unwrap();
    let plain = fs::read(common::dsh_logs().join("max-tokens-continue__session.jsonl")).unwrap();
    let path = folder.path().join("session.jsonl.zstd");
    let log = compressed(&plain);
    fs::write(&path, &log).unwrap();
    let pre_step_hook = pre_step_hook_fn(|_| ready(PreStepDecision::Pass));
    let step_hook = step_hook_fn(|_| ready(StepOutcome::Completed));
    let Err(refused) = Handle::resume(&path, pre_step_hook, step_hook) else {
        panic!("a compressed log resumed");
    };
    let ResumeError::Unresumable(unresumable) = &refused else {
        panic!("{refused}");
    };
    assert_eq!(unresumable.line, 0, "{refused}");
    assert_eq!(refused.to_string(), ZSTD_COMPRESSED);
    assert!(ZSTD_COMPRESSED.starts_with("compressed with zstd, as dsh writes"));
    assert!(ZSTD_COMPRESSED.contains("decompress it first (`zstd -d`)"));
    assert_eq!(fs::read(&path).unwrap(), log);
}
