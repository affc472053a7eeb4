//! The pure policy core: request model, verdicts. No I/O happens in this module tree: the
//! filesystem is asked through [`facts::Facts`], the agent's home and PATH are values in the
//! context, and a policy file arrives as text (tests/policy_purity.rs keeps it so).
pub mod allowlist;
pub mod decide;
pub mod egress;
pub mod egress_ask;
pub mod egress_routes;
pub mod env;
pub mod explain;
pub mod facts;
pub mod file;
pub mod fs_memo;
pub mod gateway_filter;
pub mod paths;
pub mod profile;
pub mod request;
pub mod shell;
pub mod table;
pub mod tools;
pub mod verdict;
