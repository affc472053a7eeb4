//! The seam between what uses grants (the engine spends them, the web prompt makes, lists
//! and revokes them) and where they live: the embedded SQLite table of one guard
//! ([`super::GrantStore`]) or the table a fleet of guards shares on PostgreSQL
//! ([`super::pg::PgGrants`]). Both keep the same promises: a use is spent once, all of a
//! request's grants or none, and a revoked grant covers nothing from the moment it commits.

use super::shape::GrantSpec;
use super::store::{Grant, GrantError, GrantStore};

/// The grants' durable operations. Every method may block (disk or network): callers on an
/// async runtime call them through `spawn_blocking`.
pub trait GrantBackend: Send + Sync + std::fmt::Debug {
    /// Stores a new grant made by `made_by` on inbox entry `inbox_id` (request
    /// `request_id`), filed by guard `guard` (None: this database's one guard).
    fn insert(
        &self,
        spec: &GrantSpec,
        made_by: &str,
        inbox_id: &str,
        request_id: &str,
        guard: Option<&str>,
        now: u64,
    ) -> Result<Grant, GrantError>;
    /// One grant by id, live or not.
    fn get(&self, id: &str) -> Result<Option<Grant>, GrantError>;
    /// Every grant live at `now`, oldest first (the whole fleet's, in a fleet).
    fn live(&self, now: u64) -> Result<Vec<Grant>, GrantError>;
    /// The live grants this guard's own requests may spend: in a fleet, only those bound to
    /// this guard (another guard's agent may carry the same agent id).
    fn spendable(&self, now: u64) -> Result<Vec<Grant>, GrantError> {
        self.live(now)
    }
    /// Revokes `id` at once, whichever guard it binds to.
    fn revoke(&self, id: &str, by: &str, now: u64) -> Result<Grant, GrantError>;
    /// Spends one use of each of `ids`, all or none: false when any is no longer live (or,
    /// in a fleet, not this guard's).
    fn spend(&self, ids: &[String], now: u64) -> Result<bool, GrantError>;
}

impl GrantBackend for GrantStore {
    fn insert(
        &self,
        spec: &GrantSpec,
        made_by: &str,
        inbox_id: &str,
        request_id: &str,
        _guard: Option<&str>,
        now: u64,
    ) -> Result<Grant, GrantError> {
        GrantStore::insert(self, spec, made_by, inbox_id, request_id, now)
    }
    fn get(&self, id: &str) -> Result<Option<Grant>, GrantError> {
        GrantStore::get(self, id)
    }
    fn live(&self, now: u64) -> Result<Vec<Grant>, GrantError> {
        GrantStore::live(self, now)
    }
    fn revoke(&self, id: &str, by: &str, now: u64) -> Result<Grant, GrantError> {
        GrantStore::revoke(self, id, by, now)
    }
    fn spend(&self, ids: &[String], now: u64) -> Result<bool, GrantError> {
        GrantStore::spend(self, ids, now)
    }
}
