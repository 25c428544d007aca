//! One module per subcommand.

pub(crate) mod against;
pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod diagram;
pub(crate) mod explore;
pub(crate) mod repair;
pub(crate) mod replay;
pub(crate) mod rules;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod shrink;
pub(crate) mod sim;
pub(crate) mod soak;
pub(crate) mod validate;

use courier::variant::MutantArg;

/// The agent `--mutant` names (the correct design without it), or `None`
/// after printing why it cannot be had (a usage error: exit 2).
pub(crate) fn agent(mutant: Option<MutantArg>) -> Option<courier_core::Agent> {
    courier::variant::agent_of(mutant.map(|arg| arg.0))
        .inspect_err(|error| eprintln!("error: --mutant: {error}"))
        .ok()
}

/// Warns before a model-checking bound whose space is past what was
/// measured to finish here (BENCHMARKS.md): the space grows about fourfold
/// per message, and a restart per run multiplies it again, so a large
/// bound runs for hours and fills memory rather than fail fast.
pub(crate) fn warn_large_space(flag: &str, messages: u8, restarts: u8) {
    let (largest, measured) = match restarts {
        0 => (
            8,
            "8 messages without restarts: 17.3 M states, 3 to 6 minutes, 312 MiB",
        ),
        _ => (5, "5 messages with a restart: 1.2 M states, 22 s"),
    };
    if messages > largest {
        eprintln!(
            "note: {flag} {messages}: the space grows about fourfold per message \
             (measured here: {measured}); this bound may take hours and many GiB"
        );
    }
}
