//! Which core variant a command runs: the correct design, or a planted bug
//! named on the command line (`--mutant NAME`, feature `mutants`).

use courier_core::Agent;

/// A fresh agent of the named variant; `None` is the correct design.
///
/// Without the `mutants` feature every name is refused, so the default build
/// carries none of the planted code.
pub fn fresh_agent(mutant: Option<&str>) -> Result<Agent, String> {
    match mutant {
        None => Ok(Agent::new()),
        Some(name) => planted(name),
    }
}

#[cfg(feature = "mutants")]
fn planted(name: &str) -> Result<Agent, String> {
    let mutant = name
        .parse::<courier_core::Mutant>()
        .map_err(|e| e.to_string())?;
    Ok(Agent::with_mutant(Some(mutant)))
}

#[cfg(not(feature = "mutants"))]
fn planted(name: &str) -> Result<Agent, String> {
    Err(format!(
        "--mutant {name}: this build has no planted bugs; rebuild with `--features mutants`"
    ))
}
