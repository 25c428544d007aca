//! `courier sim --against`: the served core agrees with the core on every
//! seed, and a planted bug served behind the protocol shows up as an
//! unexplained divergence, written as a transcript that `courier run` replays.

mod common;

use common::{courier, stdout};

/// The command that serves the core (with `extra` arguments) over the protocol.
fn served(extra: &str) -> String {
    let binary = env!("CARGO_BIN_EXE_courier");
    format!("'{binary}' serve-protocol {extra}")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let directory =
        std::env::temp_dir().join(format!("courier-sim-against-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a scratch directory");
    directory
}

/// `courier sim --against COMMAND --seeds SEEDS --out OUT`.
fn sim_against(command: &str, seeds: &str, out: &std::path::Path) -> std::process::Output {
    let out = out.display().to_string();
    courier(&["sim", "--against", command, "--seeds", seeds, "--out", &out])
}

#[test]
fn the_served_core_never_diverges() {
    let out = scratch("core");
    let command = served("");
    let output = sim_against(&command, "0..20", &out);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("20 agreed, 0 diverged"), "{text}");
    assert!(text.contains("  unexplained: 0\n"), "{text}");
    // The served core's own log (the protocol's `log` query) validates.
    assert!(
        text.contains(
            "  its session log (courier validate): 20 valid, 0 invalid, 0 unreadable, \
             0 absent, 0 not given\n"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(out);
}

#[cfg(feature = "mutants")]
#[test]
fn a_planted_bug_served_behind_the_protocol_is_an_unexplained_divergence() {
    let out = scratch("mutant");
    let command = served("--mutant no-latch");
    let output = sim_against(&command, "0..30", &out);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let unexplained = text
        .lines()
        .find_map(|line| line.strip_prefix("  unexplained: "))
        .and_then(|count| count.parse::<u64>().ok());
    assert!(unexplained.is_some_and(|count| count > 0), "{text}");
    let written = text
        .lines()
        .find_map(|line| line.strip_prefix("first unexplained: "))
        .expect("the divergence is written");
    // The transcript holds the contract's outputs: the core passes it, the
    // planted bug fails it.
    let passes = courier(&["run", written]);
    assert_eq!(passes.status.code(), Some(0), "{}", stdout(&passes));
    let fails = courier(&["run", "--mutant", "no-latch", written]);
    assert_eq!(fails.status.code(), Some(1), "{}", stdout(&fails));
    let _ = std::fs::remove_dir_all(out);
}

/// The blocks (one per stimulus) of a written divergence transcript.
#[cfg(feature = "mutants")]
fn blocks(path: &str) -> usize {
    let text = std::fs::read_to_string(path).expect("the divergence reads");
    text.lines().filter(|line| *line == "----").count()
}

#[cfg(feature = "mutants")]
#[test]
fn a_shrunk_divergence_is_shorter_and_still_diverges() {
    let command = served("--mutant no-latch");
    let written = |name: &str, shrink: bool| {
        let out = scratch(name);
        let shown = out.display().to_string();
        let mut arguments = vec!["sim", "--against", &command, "--seeds", "0..30"];
        arguments.extend(["--out", &shown]);
        if shrink {
            arguments.push("--shrink");
        }
        let output = courier(&arguments);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(1), "{text}");
        let path = text
            .lines()
            .find_map(|line| line.strip_prefix("first unexplained: "))
            .expect("the divergence is written")
            .to_owned();
        (out, path, text)
    };
    let (plain_dir, plain, _) = written("plain", false);
    let (shrunk_dir, shrunk, text) = written("shrunk", true);
    assert!(text.contains("divergence from "), "{text}");
    assert!(
        blocks(&shrunk) < blocks(&plain),
        "{} blocks shrunk to {}",
        blocks(&plain),
        blocks(&shrunk)
    );
    // Still a transcript of the contract that the planted bug fails.
    let passes = courier(&["run", &shrunk]);
    assert_eq!(passes.status.code(), Some(0), "{}", stdout(&passes));
    let against = courier(&["run", "--against", &command, &shrunk]);
    let diverged = stdout(&against);
    assert!(diverged.contains("divergence at "), "{diverged}");
    let _ = std::fs::remove_dir_all(plain_dir);
    let _ = std::fs::remove_dir_all(shrunk_dir);
}

#[test]
fn an_implementation_that_cannot_start_exits_two() {
    let out = scratch("broken");
    let output = sim_against("exit 3", "0..2", &out);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{errors}");
    assert!(errors.contains("seed 0: stimulus 0 "), "{errors}");
    let _ = std::fs::remove_dir_all(out);
}

/// A bash relay to the served core that does `on_log` when asked for its
/// session log, written to `directory`; the command that runs it.
fn relay(directory: &std::path::Path, on_log: &str) -> String {
    relay_then(directory, on_log, "")
}

/// [`relay`], running `at_end` once its stdin closes.
fn relay_then(directory: &std::path::Path, on_log: &str, at_end: &str) -> String {
    let binary = env!("CARGO_BIN_EXE_courier");
    let script = format!(
        r#"coproc S {{ '{binary}' serve-protocol; }}
while IFS= read -r line; do
  case "$line" in *'"query":"log"'*) {on_log} ;; esac
  printf '%s\n' "$line" >&"${{S[1]}}"
  while IFS= read -r out <&"${{S[0]}}"; do
    printf '%s\n' "$out"
    [ "$out" = '{{"settled":true}}' ] && break
  done
done
{at_end}
"#
    );
    let path = directory.join("relay.sh");
    std::fs::write(&path, script).expect("the relay script");
    format!("exec bash '{}'", path.display())
}

#[test]
fn an_implementation_that_dies_when_asked_for_its_log_exits_two() {
    let out = scratch("log-crash");
    let command = relay(&out, "exit 7");
    let output = sim_against(&command, "0..2", &out);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{errors}");
    assert!(
        errors.contains("seed 0: asking for its session log: it exited with code 7"),
        "{errors}"
    );
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn an_implementation_that_keeps_its_log_to_itself_is_counted_not_given() {
    let out = scratch("log-unsupported");
    let answer = r#"printf '%s\n' '{"unsupported":"query"}' '{"settled":true}'; continue"#;
    let command = relay(&out, answer);
    let output = sim_against(&command, "0..3", &out);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("3 agreed, 0 diverged"), "{text}");
    assert!(
        text.contains("0 valid, 0 invalid, 0 unreadable, 0 absent, 3 not given"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn an_implementation_that_lingers_is_asked_to_end_before_it_is_killed() {
    let out = scratch("linger");
    let marker = out.join("asked-to-end");
    // It outlives its closed stdin; on SIGTERM it cleans up (the marker).
    let at_end = format!(
        "trap 'touch \"{}\"; exit 0' TERM\nwhile :; do sleep 0.05; done",
        marker.display()
    );
    let command = relay_then(&out, "", &at_end);
    let output = sim_against(&command, "0..1", &out);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        marker.exists(),
        "SIGTERM came first, with time to act on it"
    );
    let _ = std::fs::remove_dir_all(out);
}

/// Each implementation runs with a `TMPDIR` of its own, removed once its
/// group has ended: one that ignores SIGTERM and is killed leaves nothing
/// of its own temporary files behind (the dsh adapter, killed before its
/// clean-up ran on a loaded machine, left its session folder).
#[test]
fn an_implementation_killed_before_its_clean_up_leaves_no_temporary_files() {
    let out = scratch("killed-tmp");
    let temporary = out.join("tmp");
    std::fs::create_dir_all(&temporary).expect("a TMPDIR");
    let at_end = r#"mkdir "$TMPDIR/session" && touch "$TMPDIR/session/log.jsonl"
trap '' TERM
while :; do sleep 0.05; done"#;
    let command = relay_then(&out, "", at_end);
    let arguments = ["sim", "--against", &command, "--seeds", "0..1"];
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(arguments)
        .arg("--out")
        .arg(&out)
        .env("TMPDIR", &temporary)
        .output()
        .expect("courier runs");
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let left: Vec<_> = std::fs::read_dir(&temporary)
        .expect("the TMPDIR is there")
        .map(|entry| entry.expect("an entry").file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(out);
}
