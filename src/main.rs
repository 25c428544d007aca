//! The `courier` command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Verify agent message delivery against the Courier contract (SPEC.md).
#[derive(Parser)]
#[command(name = "courier", version, about)]
struct Courier {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run transcripts (.txn) against a fresh agent each and compare outputs.
    Run(cli::run::Args),
    /// Check recorded session logs (dsh JSONL) against the delivery properties.
    Validate(cli::validate::Args),
    /// Run seeded random workloads under every property (swarm, then liveness).
    Sim(cli::sim::Args),
    /// What a resume would do to a kept session log; `--out` writes it repaired.
    Repair(cli::repair::Args),
    /// Re-run a race report written by `courier sim`.
    Replay(cli::replay::Args),
    /// Minimize a race report's trace into a transcript.
    Shrink(cli::shrink::Args),
    /// A scripted session on the async runtime with a fake model, printed live.
    Demo(cli::demo::Args),
    /// The kill -9 tests' child: a seeded workload on the runtime, logged.
    #[command(hide = true)]
    Soak(cli::soak::Args),
    /// Model-check every SPEC §7 property over every interleaving up to a bound.
    Check(cli::check::Args),
    /// Draw a transcript, counterexample or race report as a sequence diagram.
    Diagram(cli::diagram::Args),
    /// Serve stateright's Explorer for the Courier model on 127.0.0.1.
    Explore(cli::explore::Args),
    /// Serve the core over the JSON-lines protocol of docs/PROTOCOL.md.
    ServeProtocol(cli::serve::Args),
}

fn main() -> ExitCode {
    courier::files::exit_on_environment_failure();
    let code = run(Courier::parse().command);
    courier::files::flush_stdout().unwrap_or(code)
}

fn run(command: Command) -> ExitCode {
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
