//! sanctum-guard: a sidecar that decides, for every side effect an OpenClaw agent asks for,
//! whether it runs by itself, waits for a human, or never runs (see DESIGN.md in the docs).
//!
//! One folder per box of the pipeline: `policy` (pure core), `openclaw` (OpenClaw's formats),
//! `socket` (the exec-approvals socket), `inbox`, `audit`, `sandbox`.

pub mod audit;
pub mod config;
pub mod doctor;
pub mod host_facts;
pub mod inbox;
pub mod openclaw;
pub mod policy;
pub mod sandbox;
pub mod socket;
