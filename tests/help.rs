//! `courier --help` and every subcommand's help as a newcomer reads them:
//! each command states its exit codes, and a command or flag that does not
//! exist is a usage error (exit 2) that names it, not a panic.

use std::process::Output;

fn courier(arguments: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(arguments)
        .output()
        .expect("the courier binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

/// The subcommands `courier --help` lists (clap's own `help` aside), read
/// from the help itself so a new subcommand is checked without editing this.
fn listed_subcommands() -> Vec<String> {
    let help = courier(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = stdout(&help);
    assert!(
        text.contains("Exit codes (every command): 0 ok; 1 "),
        "{text}"
    );
    text.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_states_its_exit_codes() {
    let subcommands = listed_subcommands();
    assert!(subcommands.len() >= 11, "{subcommands:?}");
    for name in &subcommands {
        let help = courier(&[name, "--help"]);
        assert_eq!(help.status.code(), Some(0), "{name} --help");
        let text = stdout(&help);
        assert!(
            text.contains("Exit 0: ") && text.contains("; 2: "),
            "`courier {name} --help` does not state its exit codes:\n{text}"
        );
    }
}

#[test]
fn an_unknown_subcommand_is_a_usage_error_naming_it() {
    let output = courier(&["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("unrecognized subcommand 'frobnicate'"),
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn an_unknown_flag_is_a_usage_error_naming_it() {
    for name in listed_subcommands() {
        let output = courier(&[&name, "--frobnicate"]);
        assert_eq!(output.status.code(), Some(2), "courier {name} --frobnicate");
        let text = stderr(&output);
        assert!(
            text.contains("unexpected argument '--frobnicate'"),
            "courier {name}: {text}"
        );
    }
}

/// No command at all, or an argument that is not UTF-8, is a usage error
/// with its `error:` line naming what was wrong (exit 2). Before, the first
/// printed only the help, and the second named no argument.
#[cfg(unix)]
#[test]
fn no_command_or_an_argument_not_utf8_is_an_error_naming_it() {
    let bare = courier(&[]);
    assert_eq!(bare.status.code(), Some(2));
    let text = stderr(&bare);
    assert!(
        text.starts_with("error: no command given: courier <COMMAND>"),
        "{text}"
    );
    assert!(text.contains("Commands:"), "{text}");
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"\xffname");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(["sim", "--seeds", "1", "--against"])
        .arg(bad)
        .output()
        .expect("the courier binary runs");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: argument 5 is not UTF-8 (the value of --against): \u{fffd}name \
         (invalid bytes shown as U+FFFD)\n"
    );
}
