//! The `courier` package: the CLI's shared pieces (sequence diagrams and the
//! variant a command runs, how it reads and writes a user's files and reads
//! a session log, compressed or not, the
//! claim cycle its bench and the protocol's `bench` line time); the
//! engines live in their own crates.

pub mod claim;
pub mod compressed;
pub mod diagram;
pub mod files;
pub mod variant;
