//! The fleet store as the command line uses it (`sanctum-guard inbox` with `[store] url`):
//! the same reads and the same conditional update as a guard's web prompt, the decision's
//! audit record going to the log the store was opened with (the local guard's).

use super::backend::InboxStore;
use super::pg::PgStore;
use super::store::Resolution;
use super::{Entry, InboxError, Resolved, StateFilter};
use crate::policy::request::Decision;

impl PgStore {
    /// One entry of the fleet by id.
    pub fn entry(&self, id: &str) -> Result<Option<Entry>, InboxError> {
        InboxStore::get(self, id)
    }

    /// The fleet's entries matching `filter`, oldest first.
    pub fn entries(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError> {
        InboxStore::list(self, filter)
    }

    /// A person's decision, as [`super::Store::decide`]: offered, hash and deadline checked;
    /// a row another guard (or terminal) decided first is [`InboxError::AlreadyResolved`].
    pub fn decide(
        &mut self,
        id: &str,
        decision: Decision,
        expect_hash: Option<&str>,
    ) -> Result<Resolved, InboxError> {
        InboxStore::resolve(
            self,
            id,
            Resolution::Human {
                decision,
                expect_hash: expect_hash.map(str::to_owned),
            },
        )
    }
}
