//! The `courier` package: the CLI's shared pieces (and, later, the async
//! runtime) over `courier-core`.

pub mod validate;
pub mod variant;
