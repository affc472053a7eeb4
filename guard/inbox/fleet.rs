//! Serving a fleet inbox: the shared PostgreSQL store, the listener that hears other
//! guards' decisions on this guard's rows, and the deadlines of rows filed before a restart
//! (they keep their own deadline: neither expired at start nor left pending forever).

use super::pg::PgStore;
use super::pg_conn::Database;
use super::pg_listen::{self, Change};
use super::{Inbox, InboxError, InboxEvent, Inner, Resolved, State};
use crate::audit::AuditLog;
use std::collections::HashSet;
use std::sync::{Arc, Weak};

impl Inbox {
    /// Serves guard `guard_id`'s share of the fleet database `db`. Must be called on a
    /// tokio runtime (the deadline timers run there). The database may be down: requests are
    /// then refused (`store-unavailable`) until it returns, and this guard's rows are picked
    /// up again when the listener reconnects.
    pub fn open_fleet(
        db: Database,
        guard_id: &str,
        audit: Option<AuditLog>,
    ) -> Result<Inbox, InboxError> {
        let store = PgStore::open(db.clone(), guard_id, audit)?;
        let (inbox, _) = Self::serve(Box::new(store), None)?;
        let rt = tokio::runtime::Handle::try_current()
            .map_err(|e| InboxError::Internal(format!("fleet inbox needs a runtime: {e}")))?;
        let weak = Arc::downgrade(&inbox.inner);
        let me = guard_id.to_owned();
        let mut armed: HashSet<String> = HashSet::new();
        pg_listen::spawn(db, move |change| {
            let Some(inner) = weak.upgrade() else {
                return false;
            };
            let _rt = rt.enter();
            match change {
                Change::Row { guard, id } if guard == me => {
                    if let Err(e) = inner.settle(std::slice::from_ref(&id)) {
                        tracing::warn!(id = %id, error = %e, "inbox: fleet settle failed");
                    }
                }
                Change::Row { id, .. } => foreign(&inner, &id),
                Change::Idle => {}
                Change::Resync => resync(&inner, &weak, &mut armed),
            }
            true
        })
        .map_err(|e| InboxError::Internal(format!("fleet listener thread: {e}")))?;
        Ok(inbox)
    }
}

impl Inbox {
    /// The fleet database this inbox's rows live in (None: the embedded store), where the
    /// fleet's reviewer accounts and votes live too.
    pub fn fleet_db(&self) -> Option<crate::inbox::pg_conn::Database> {
        self.inner.store().ok().and_then(|s| s.fleet_db())
    }

    /// This guard's name in the fleet (None: the embedded store).
    pub fn fleet_guard(&self) -> Option<String> {
        self.inner.store().ok().and_then(|s| s.fleet_guard())
    }
}

/// Another guard's row changed: pages of this guard show it come and go.
fn foreign(inner: &Inner, id: &str) {
    if inner.fleet.receiver_count() == 0 {
        return;
    }
    let entry = match inner.store().and_then(|s| s.get(id)) {
        Ok(Some(e)) => e,
        _ => return,
    };
    let ev = match (entry.state, entry.decision.clone()) {
        (State::Pending, _) => InboxEvent::Added(Box::new(entry)),
        (state, Some(decision)) => {
            let r = Resolved {
                id: entry.id,
                state,
                decision,
            };
            if matches!(state, State::Expired | State::Cancelled) {
                InboxEvent::Expired(r)
            } else {
                InboxEvent::Resolved(r)
            }
        }
        (_, None) => return,
    };
    let _ = inner.fleet.send(ev);
}

/// After a (re)connect: answers every waiter whose row changed unheard, and arms a deadline
/// timer for each of this guard's pending rows not yet timed (those filed before a restart).
fn resync(inner: &Arc<Inner>, weak: &Weak<Inner>, armed: &mut HashSet<String>) {
    let waiting: Vec<String> = match inner.waiters() {
        Ok(w) => w.keys().cloned().collect(),
        Err(_) => return,
    };
    if let Err(e) = inner.settle(&waiting) {
        tracing::warn!(error = %e, "inbox: fleet resync failed");
        return;
    }
    let pending = match inner.store().and_then(|s| s.pending_ids()) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "inbox: fleet resync failed");
            return;
        }
    };
    for id in pending {
        if waiting.contains(&id) || !armed.insert(id.clone()) {
            continue;
        }
        let deadline = match inner.store().and_then(|s| s.get(&id)) {
            Ok(Some(e)) => e.deadline_ms,
            _ => continue,
        };
        let inbox = Inbox {
            inner: match weak.upgrade() {
                Some(i) => i,
                None => return,
            },
        };
        inbox.start_timer(id, deadline);
    }
}
