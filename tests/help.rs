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
