//! The seam between the inbox's lifecycle (timers, waiters, events) and where its rows live:
//! the embedded SQLite [`Store`] of one guard, or the PostgreSQL store a fleet of guards
//! shares ([`super::pg::PgStore`]). Both keep the same promise: a row leaves `pending`
//! exactly once, and a decision's audit record is written before it commits.

use super::store::Resolution;
use super::{Entry, InboxError, Resolved, StateFilter, Store};

/// The inbox's durable operations. Every method may block (disk or network); callers on an
/// async runtime call the mutating ones through `spawn_blocking`.
pub(crate) trait InboxStore: Send + std::fmt::Debug {
    /// Files a new pending entry (with its audit record).
    fn insert(&mut self, e: &Entry) -> Result<(), InboxError>;
    /// One entry by id (any guard's, in a fleet).
    fn get(&self, id: &str) -> Result<Option<Entry>, InboxError>;
    /// Entries matching `filter`, oldest first.
    fn list(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError>;
    /// One page in reading order and the number matching in all.
    fn page(
        &self,
        filter: StateFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Entry>, usize), InboxError>;
    /// Ids of the pending entries this guard answers for.
    fn pending_ids(&self) -> Result<Vec<String>, InboxError>;
    /// Leaves `pending` once; a second resolver gets [`InboxError::AlreadyResolved`].
    fn resolve(&mut self, id: &str, how: Resolution) -> Result<Resolved, InboxError>;
    /// A number that changes whenever another writer commits: the poller's cheap test.
    fn data_version(&self) -> Result<i64, InboxError>;
    /// Whether this guard's pending rows outlive a restart. A lone guard's requesters are
    /// gone with its process (its rows expire at start); a fleet row may still be answered
    /// by the gateway's long deadline, so it keeps its own deadline.
    fn resumes_pending(&self) -> bool {
        false
    }
    /// The shared database a fleet's other tables (grants, reviewers) live in; None for
    /// the embedded store.
    fn fleet_db(&self) -> Option<crate::inbox::pg_conn::Database> {
        None
    }
    /// This guard's name in a fleet's shared store; None for the embedded store.
    fn fleet_guard(&self) -> Option<String> {
        None
    }
}

impl InboxStore for Store {
    fn insert(&mut self, e: &Entry) -> Result<(), InboxError> {
        Store::insert(self, e)
    }
    fn get(&self, id: &str) -> Result<Option<Entry>, InboxError> {
        Store::get(self, id)
    }
    fn list(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError> {
        Store::list(self, filter)
    }
    fn page(
        &self,
        filter: StateFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Entry>, usize), InboxError> {
        Store::page(self, filter, offset, limit)
    }
    fn pending_ids(&self) -> Result<Vec<String>, InboxError> {
        Store::pending_ids(self)
    }
    fn resolve(&mut self, id: &str, how: Resolution) -> Result<Resolved, InboxError> {
        Store::resolve(self, id, how)
    }
    fn data_version(&self) -> Result<i64, InboxError> {
        Store::data_version(self)
    }
}
