//! Which core variant a command runs: the correct design, or a planted bug
//! named on the command line (`--mutant NAME`, feature `mutants`).

use clap::builder::PossibleValue;
use courier_core::{Agent, Mutant};

/// `--mutant`'s value. The core cannot depend on clap, so this wrapper lends
/// the core's own name table to clap: `--help` lists every planted bug in
/// every build, even one that must refuse them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MutantArg(pub Mutant);

impl MutantArg {
    /// Every planted bug, in SPEC order (the core's table, wrapped).
    const ALL: [MutantArg; Mutant::ALL.len()] = {
        let mut all = [MutantArg(Mutant::ALL[0]); Mutant::ALL.len()];
        let mut index = 0;
        while index < all.len() {
            all[index] = MutantArg(Mutant::ALL[index]);
            index += 1;
        }
        all
    };

    /// The SPEC name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl std::fmt::Display for MutantArg {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(formatter)
    }
}

impl clap::ValueEnum for MutantArg {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

/// A fresh agent of the named variant; `None` is the correct design. Names
/// come from files and reports, so an unknown one is an error, not a panic.
pub fn fresh_agent(mutant: Option<&str>) -> Result<Agent, String> {
    let bug = match mutant {
        None => None,
        Some(name) => Some(name.parse::<Mutant>().map_err(|_| {
            let known: Vec<&str> = Mutant::ALL.iter().map(|bug| bug.name()).collect();
            // Quoted escaped and capped: the name comes from a user's file.
            let name = crate::files::shown(&name);
            format!("unknown mutant `{name}` (known: {})", known.join(", "))
        })?),
    };
    agent_of(bug)
}

/// A fresh agent running `bug`; `None` is the correct design.
#[cfg(feature = "mutants")]
pub fn agent_of(bug: Option<Mutant>) -> Result<Agent, String> {
    Ok(Agent::with_mutant(bug))
}

/// A fresh agent running `bug`; `None` is the correct design. This build has
/// none of the planted code, so every bug is refused (the caller says where
/// the name came from: a flag, a report field, a comment).
#[cfg(not(feature = "mutants"))]
pub fn agent_of(bug: Option<Mutant>) -> Result<Agent, String> {
    match bug {
        None => Ok(Agent::new()),
        Some(bug) => Err(format!(
            "`{bug}` is a planted bug, and this build has none; rebuild with \
             `--features mutants`"
        )),
    }
}
