//! Confinement for every process the guard runs for the agent.
pub mod profile;
