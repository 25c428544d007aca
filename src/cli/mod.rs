//! One module per subcommand.

pub(crate) mod run;
pub(crate) mod validate;
