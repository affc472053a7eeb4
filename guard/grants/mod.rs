//! Bounded grants: a person's approval that also covers later requests of the same narrow
//! shape, for this session, for N minutes, for N uses, or as a prefix in this workspace.
//! This module owns what a grant is ([`shape`]: made from the judged segments, checked on
//! them), where grants live ([`backend`]: a table in the inbox's SQLite database
//! ([`store`]), or in a fleet's PostgreSQL database ([`pg`])) and which repeated approvals
//! are worth one ([`suggest`]). It imports the policy core and the fleet database's
//! connection; the engine spends grants, the web prompt and the command line list and
//! revoke them.

pub mod backend;
pub mod pg;
pub mod shape;
pub mod store;
pub mod suggest;

pub use backend::GrantBackend;
pub use pg::PgGrants;
pub use shape::{covering, propose, Ask, GrantSpec, ProposeError, Scope, Shape};
pub use store::{Grant, GrantError, GrantStore};
pub use suggest::{suggest, Approved, SuggestRule, Suggestion};
