//! The `courier` package: the CLI's shared pieces and the async runtime over
//! `courier-core`.

pub mod diagram;
pub mod runtime;
pub mod validate;
pub mod variant;
