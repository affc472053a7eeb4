//! sanctum-guard: a sidecar that decides, for every side effect an OpenClaw agent asks for,
//! whether it runs by itself, waits for a human, or never runs (docs/DESIGN.md, ARCHITECTURE.md).
//!
//! The pipeline, in order: doors (`socket`, `web`) turn frames into requests; the `engine` judges
//! them with the pure `policy` core over OpenClaw's formats (`openclaw`); the sinks record and
//! act (`inbox`, `audit`, `sandbox`) and tell people (`notify`); `app` wires it all for `serve`.

pub mod egress;
pub mod gateway;
pub mod socket;
pub mod web;

pub mod engine;

pub mod host_facts;

pub mod openclaw;
pub mod policy;

pub mod audit;
pub mod grants;
pub mod inbox;
pub mod notify;
pub mod readproxy;
pub mod reviewers;
#[allow(unsafe_code)]
pub mod sandbox;

pub mod app;
pub mod node;
