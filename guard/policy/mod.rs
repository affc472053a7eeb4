//! The pure policy core: request model, verdicts. No I/O happens in this module tree
//! except loading a policy file, so every rule is table-tested.
pub mod allowlist;
pub mod decide;
pub mod env;
pub mod explain;
pub mod file;
pub mod fs_memo;
pub mod paths;
pub mod request;
pub mod shell;
pub mod table;
pub mod verdict;
