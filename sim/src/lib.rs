//! Seeded deterministic simulator over the Courier core (filled by the simulator issue).
