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
