//! Bounded grants: a person's approval that also covers later requests of the same narrow
//! shape, for this session, for N minutes, for N uses, or as a prefix in this workspace.
//! This module owns what a grant is ([`shape`]: made from the judged segments, checked on
//! them) and where grants live ([`store`]: a table in the inbox's database). It imports only
//! the policy core; the engine spends grants, the web prompt and the command line list and
//! revoke them.

pub mod shape;
pub mod store;

pub use shape::{covering, propose, Ask, GrantSpec, ProposeError, Scope, Shape};
pub use store::{Grant, GrantError, GrantStore};
