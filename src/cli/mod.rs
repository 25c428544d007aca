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
