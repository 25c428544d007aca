//! The `courier` package: the CLI's shared pieces (sequence diagrams and the
//! variant a command runs); the engines live in their own crates.

pub mod diagram;
pub mod variant;
