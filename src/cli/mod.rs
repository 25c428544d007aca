//! One module per subcommand.

pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod diagram;
pub(crate) mod explore;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod shrink;
pub(crate) mod sim;
pub(crate) mod validate;

/// The agent `--mutant` names (the correct design without it), or `None`
/// after printing why it cannot be had (a usage error: exit 2).
pub(crate) fn agent(mutant: Option<&str>) -> Option<courier_core::Agent> {
    courier::variant::fresh_agent(mutant)
        .inspect_err(|error| eprintln!("error: {error}"))
        .ok()
}
