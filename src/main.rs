//! The `courier` command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Verify agent message delivery against the Courier contract (SPEC.md).
#[derive(Parser)]
#[command(
    name = "courier",
    version,
    about,
    after_help = "Exit codes (every command): 0 ok; 1 a property or an expectation failed; \
                  2 the input or the environment is unusable (a bad flag, a file that cannot \
                  be read or parsed, an output that cannot be written), with one `error:` line \
                  naming the file and line or the flag. README.md documents each command."
)]
struct Courier {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run transcripts (.txn) against a fresh agent each and compare outputs.
    #[command(
        after_help = "Exit 0: every transcript passes (with `--against`: every divergence is explained by a named rule); 1: a mismatch, a `run` that needs more than 10,000 completions plus four per message pending when it starts, or (with `--against`) an unexplained divergence, or any divergence under `--strict`; 2: a file that cannot be read or parsed, or (with `--against`) an implementation that cannot be spawned or breaks the protocol."
    )]
    Run(cli::run::Args),
    /// Check recorded session logs (dsh JSONL) against the delivery properties.
    #[command(
        after_help = "Prints one `FILE:LINE: <property>: <detail>` line per violation (text) or one JSON object per file (json), then a count of valid, invalid and unreadable files on stderr. A torn final line (a crash cut it: not JSON, or unterminated and unreadable) is dropped and said (`note:` on stderr; `torn` in json), SPEC §11. A log compressed with zstd as dsh writes it (`session.jsonl.zstd`, told by its first bytes, not its name) is read decompressed, a frame at a time: LINE is a line of the plaintext; a torn final frame keeps its whole lines and is said (`note:`; `torn` and `torn-frame` in json); a corrupt frame is an error naming its byte offset. Exit 0: every log is valid; 1: a violation; 2: a file that is not a readable JSONL session log (naming the line, or a frame's byte)."
    )]
    Validate(cli::validate::Args),
    /// Run seeded random workloads under every property (swarm, then liveness).
    #[command(
        after_help = "Exit 0: every seed passes (a summary); 1: a violation (prints `violation: <property> seed=<n>` for the lowest failing seed, writes its race report and prints the commands that replay it) or, with `--against`, an unexplained divergence; 2: a usage error, or an implementation that cannot be spawned or breaks the protocol."
    )]
    Sim(cli::sim::Args),
    /// What a resume would do to a kept session log; `--out` writes it repaired.
    #[command(
        after_help = "Prints the lines kept, the torn tail, the closers a resume appends, the pending lists, the next turn and the messages claimed and lost. A log compressed with zstd (dsh's `session.jsonl.zstd`) is read decompressed, and `--out` writes it as plain JSONL. Exit 0: read (and, with `--out`, written); 2: a log corrupt before its last line (or in a complete Zstandard frame), one that kept no `session` header or ends inside a fork's seed (nothing to resume), or an `--out` that exists or is the input."
    )]
    Repair(cli::repair::Args),
    /// Re-run a race report written by `courier sim`.
    #[command(
        after_help = "Prints the `violation:` line and the output hash. Exit 0: the trace now passes; 1: the violation reproduces (a `note:` says what differs from the report); 2: a malformed report, an unknown format version, or a report of a planted bug this build lacks (rebuild with `--features mutants`)."
    )]
    Replay(cli::replay::Args),
    /// Minimize a race report's trace into a transcript.
    #[command(
        after_help = "Writes the minimal trace as a transcript (`courier run [--mutant NAME] FILE.txn` replays it, with the `--mutant` its header names when the report came from a planted bug). Exit 0: written; 2: an unreadable report, a trace that no longer fails, or an `--out` that cannot be written."
    )]
    Shrink(cli::shrink::Args),
    /// A scripted session on the async runtime with a fake model, printed live.
    #[command(
        after_help = "Exit 0: the session ran; 2: the log file cannot be written or read back."
    )]
    Demo(cli::demo::Args),
    /// The kill -9 tests' child: a seeded workload on the runtime, logged.
    #[command(
        hide = true,
        after_help = "Prints each acknowledged send's id, one a line. Exit 0: every call made and the agent disposed; 2: the log cannot be created, resumed or written."
    )]
    Soak(cli::soak::Args),
    /// Model-check every SPEC §7 property over every interleaving up to a bound.
    Check(cli::check::Args),
    /// Draw a transcript, counterexample or race report as a sequence diagram.
    #[command(
        after_help = "The verdict (the first broken property, or that every property holds) goes to stderr. Exit 0: drawn, whatever the verdict; 2: a file that cannot be read or parsed, or an `--out` that cannot be written."
    )]
    Diagram(cli::diagram::Args),
    /// Serve stateright's Explorer for the Courier model on 127.0.0.1.
    #[command(
        after_help = "Prints the URL it serves on. Exit 0: stopped by Ctrl-C (or SIGTERM, SIGHUP); 2: the port cannot be bound."
    )]
    Explore(cli::explore::Args),
    /// Serve the core over the JSON-lines protocol of docs/PROTOCOL.md.
    #[command(
        after_help = "Answers each line on stdin with its outputs, then `{\"settled\":true}`; a malformed line answers `{\"error\":\"line N: ...\"}` and serving goes on. Exit 0: at the end of stdin or when stdout closes; 2: stdin or stdout fails, or a line runs on past 1 GiB (a line longer than 16 MiB is answered with an error and skipped)."
    )]
    ServeProtocol(cli::serve::Args),
}

fn main() -> ExitCode {
    courier::files::exit_on_environment_failure();
    let code = match Courier::try_parse() {
        Ok(courier) => run(courier.command),
        Err(error) => usage(&error),
    };
    courier::files::flush_stdout().unwrap_or(code)
}

/// Help, the version, or a usage error, printed as clap would, but a help
/// that stdout cannot take (`courier --help > /dev/full`) is an error and
/// exit 2, not a silent exit 0 (clap's `exit` drops the write error).
fn usage(error: &clap::Error) -> ExitCode {
    if let Some(line) = unnamed_usage_error(error) {
        use std::io::Write;
        let _unreported = std::io::stderr().write_all(line.as_bytes());
        if error.kind() != clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            return ExitCode::from(2);
        }
    }
    // clap quotes a bad argument as given: one holding a newline or an
    // escape would print lines (`error: ...`) or colours of its own. The
    // same arguments parsed again with those characters escaped give the
    // same error, naming them escaped wherever clap quotes them (a whole
    // argument, the value of `--flag=VALUE`, a value parser's message).
    let arguments: Vec<String> = std::env::args_os()
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    let escaped = || {
        arguments
            .iter()
            .map(|argument| courier::files::escaped(argument).into_owned())
    };
    if error.use_stderr() && escaped().ne(arguments.iter().cloned()) {
        let text = match Courier::try_parse_from(escaped()) {
            Err(again) if again.use_stderr() => again.render().to_string(),
            _ => format!(
                "error: the arguments given are not a command: {}\n\nFor more information, try '--help'.\n",
                escaped().skip(1).collect::<Vec<_>>().join(" ")
            ),
        };
        use std::io::Write;
        let _unreported = std::io::stderr().write_all(text.as_bytes());
        return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    }
    match error.print() {
        Ok(()) => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)),
        Err(failure) => {
            // A usage error stderr cannot take has nowhere left to go.
            if !error.use_stderr() {
                courier::files::stdout_failed(&failure);
            }
            ExitCode::from(2)
        }
    }
}

/// The `error:` line clap does not write, naming what was wrong: no
/// command at all (clap prints only the help, which follows), or an
/// argument that is not UTF-8 (clap names none of them).
fn unnamed_usage_error(error: &clap::Error) -> Option<String> {
    match error.kind() {
        clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Some("error: no command given: courier <COMMAND>, one of those below\n\n".to_owned())
        }
        clap::error::ErrorKind::InvalidUtf8 => {
            let arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
            let index = arguments
                .iter()
                .position(|argument| argument.to_str().is_none())?;
            let shown = courier::files::escaped(&arguments[index].to_string_lossy()).into_owned();
            let after = arguments[..index]
                .last()
                .and_then(|flag| flag.to_str())
                .filter(|flag| flag.starts_with('-'))
                .map_or_else(String::new, |flag| format!(" (the value of {flag})"));
            Some(format!(
                "error: argument {index} is not UTF-8{after}: {shown} (invalid bytes shown as U+FFFD)\n"
            ))
        }
        _ => None,
    }
}

fn run(command: Command) -> ExitCode {
    // The Explorer ends on Ctrl-C with exit 0 by a handler of its own.
    if !matches!(command, Command::Explore(_)) {
        courier::files::exit_on_signal();
    }
    let inputs = match &command {
        Command::Run(args) => args.inputs(),
        Command::Validate(args) => args.inputs(),
        Command::Repair(args) => args.inputs(),
        Command::Replay(args) => args.inputs(),
        Command::Shrink(args) => args.inputs(),
        Command::Diagram(args) => args.inputs(),
        Command::Sim(_)
        | Command::Demo(_)
        | Command::Soak(_)
        | Command::Check(_)
        | Command::Explore(_)
        | Command::ServeProtocol(_) => Vec::new(),
    };
    if let Err(error) = courier::files::check_stdout(&inputs) {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    match command {
        Command::Run(args) => cli::run::main(&args),
        Command::Validate(args) => cli::validate::main(&args),
        Command::Sim(args) => cli::sim::main(&args),
        Command::Repair(args) => cli::repair::main(&args),
        Command::Replay(args) => cli::replay::main(&args),
        Command::Shrink(args) => cli::shrink::main(&args),
        Command::Demo(args) => cli::demo::main(&args),
        Command::Soak(args) => cli::soak::main(&args),
        Command::Check(args) => cli::check::main(&args),
        Command::Diagram(args) => cli::diagram::main(&args),
        Command::Explore(args) => cli::explore::main(&args),
        Command::ServeProtocol(args) => cli::serve::main(&args),
    }
}
