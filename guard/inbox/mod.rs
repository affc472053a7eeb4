//! The inbox: requests waiting for a human, each with its deadline and fallback, stored
//! durably in SQLite so a restart loses nothing and approves nothing by accident. This module
//! owns the pending-request lifecycle (pending → approved | denied | expired |
//! resolved-elsewhere | cancelled), the deadline timers, and the events subscribers (the web prompt) see.
//!
//! One process serves an inbox ([`Inbox`], holding an exclusive lock file); others (the
//! `inbox` command line) act on the same database through a [`Store`]. The serving inbox
//! notices their decisions by polling `PRAGMA data_version` every 100 ms while anyone waits.

mod backend;
mod fleet;
mod hash;
pub mod pg;
mod pg_cli;
pub mod pg_conn;
pub mod pg_guards;
mod pg_listen;
pub mod pg_side;
mod store;
mod types;

pub use hash::{canonical_json, request_hash};
pub use store::{fallback_deny, now_ms, Store};
pub use types::{
    action_summary, AuditRef, Cancel, Entry, InboxError, InboxEvent, Resolved, State, StateFilter,
};

use crate::audit::AuditLog;
use crate::policy::request::{Decision, Request};
use crate::policy::verdict::Verdict;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use store::Resolution;
use tokio::sync::{broadcast, oneshot};

/// How often the serving inbox looks for decisions made by another process.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The inbox database's file name inside the state dir.
pub const DB_FILE: &str = "inbox.db";

/// The name a person at this terminal decides as: `cli:<unix user>`.
pub fn cli_identity() -> String {
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    format!("cli:{name}")
}

/// A submitted request; [`Ticket::wait`] gives its decision.
#[derive(Debug)]
pub struct Ticket {
    pub id: String,
    pub request_hash: String,
    pub deadline_ms: u64,
    rx: oneshot::Receiver<Decision>,
}

/// How long past its deadline a ticket waits for the inbox's timer before answering the
/// fallback by itself (the timer normally answers first).
const TICKET_GRACE: Duration = Duration::from_millis(1500);

impl Ticket {
    /// The human decision, or at the deadline the fallback's deny `approval-timeout`. Never
    /// waits forever: if the inbox is gone the answer is a deny `inbox-closed`.
    pub async fn wait(self) -> Decision {
        let left = self.deadline_ms.saturating_sub(now_ms());
        match tokio::time::timeout(Duration::from_millis(left) + TICKET_GRACE, self.rx).await {
            Ok(Ok(d)) => d,
            Ok(Err(_)) => fallback_deny("inbox-closed"),
            Err(_) => fallback_deny("approval-timeout"),
        }
    }
}

/// The serving inbox. Clone it freely (an `Arc` inside).
#[derive(Clone, Debug)]
pub struct Inbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Mutex<Box<dyn backend::InboxStore>>,
    waiters: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    events: broadcast::Sender<InboxEvent>,
    /// Other guards' requests coming and going (a fleet's shared store only): for pages,
    /// never for this guard's push channels or metrics.
    fleet: broadcast::Sender<InboxEvent>,
    poller: AtomicBool,
    /// Held for the inbox's lifetime: one serving process per database file (a fleet
    /// database is shared by design and has none).
    _owner: Option<nix::fcntl::Flock<File>>,
}

/// Takes the serving lock (`<db>.lock`, flock). A previous owner that is just going away (a
/// process exiting, or an in-process inbox whose last task is finishing) gets half a second.
fn lock_owner(path: &Path) -> Result<nix::fcntl::Flock<File>, InboxError> {
    use nix::fcntl::{Flock, FlockArg};
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .mode(0o600)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| InboxError::Io {
            path: lock_path.clone(),
            source,
        })?;
    for _ in 0..20 {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(owner) => return Ok(owner),
            Err((f, _)) => file = f,
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err(InboxError::Busy(path.to_owned()))
}

fn join_err(e: tokio::task::JoinError) -> InboxError {
    InboxError::Internal(e.to_string())
}

impl Inbox {
    /// Opens the database at `path` to serve it. Every entry still pending belonged to a
    /// client of a previous process, which is gone: each is expired (reason `guard-restart`),
    /// never approved. Returns the inbox and how many were expired.
    pub fn open(path: &Path, audit: Option<AuditLog>) -> Result<(Inbox, usize), InboxError> {
        let store = Store::open(path, audit)?;
        let owner = lock_owner(path)?;
        Self::serve(Box::new(store), Some(owner))
    }

    /// Serves `store`. Pending entries of a store that does not resume them are expired
    /// (reason `guard-restart`), never approved; returns how many.
    fn serve(
        mut store: Box<dyn backend::InboxStore>,
        owner: Option<nix::fcntl::Flock<File>>,
    ) -> Result<(Inbox, usize), InboxError> {
        let mut expired = 0;
        if !store.resumes_pending() {
            for id in store.pending_ids()? {
                let how = Resolution::Expire {
                    reason: "guard-restart".into(),
                };
                match store.resolve(&id, how) {
                    Ok(_) => expired += 1,
                    Err(InboxError::AlreadyResolved { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let (events, _) = broadcast::channel(256);
        let inbox = Inbox {
            inner: Arc::new(Inner {
                store: Mutex::new(store),
                waiters: Mutex::new(HashMap::new()),
                events,
                fleet: broadcast::channel(256).0,
                poller: AtomicBool::new(false),
                _owner: owner,
            }),
        };
        Ok((inbox, expired))
    }

    /// Changes as they happen. A receiver that lags loses the oldest events
    /// (`RecvError::Lagged`) and should re-read [`Inbox::list`].
    pub fn subscribe(&self) -> broadcast::Receiver<InboxEvent> {
        self.inner.events.subscribe()
    }

    /// Other guards' requests as they are filed and leave `pending` (empty but for a fleet).
    pub fn subscribe_fleet(&self) -> broadcast::Receiver<InboxEvent> {
        self.inner.fleet.subscribe()
    }

    /// The store answers (a constant-time query, for readiness probes).
    pub fn healthy(&self) -> bool {
        self.inner.store().and_then(|s| s.data_version()).is_ok()
    }

    /// Entries matching `filter`, oldest first.
    pub fn list(&self, filter: StateFilter) -> Result<Vec<Entry>, InboxError> {
        self.inner.store()?.list(filter)
    }

    /// One page of `filter` in reading order and the number matching in all (see
    /// `Store::page`).
    pub fn page(
        &self,
        filter: StateFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Entry>, usize), InboxError> {
        self.inner.store()?.page(filter, offset, limit)
    }

    /// One entry.
    pub fn get(&self, id: &str) -> Result<Option<Entry>, InboxError> {
        self.inner.store()?.get(id)
    }

    /// Files `req` (which the policy answered `ask` with `verdict`) until `deadline_ms`
    /// (epoch ms). At the deadline the fallback answers deny `approval-timeout`.
    pub async fn submit(
        &self,
        req: &Request,
        verdict: &Verdict,
        deadline_ms: u64,
    ) -> Result<Ticket, InboxError> {
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            request: req.clone(),
            verdict: verdict.clone(),
            request_hash: request_hash(req)?,
            created_ms: now_ms(),
            deadline_ms,
            state: State::Pending,
            decision: None,
            resolved_ms: None,
            guard: None,
            decided_at: None,
        };
        let (tx, rx) = oneshot::channel();
        self.inner.waiters()?.insert(entry.id.clone(), tx);
        let inner = self.inner.clone();
        let stored = entry.clone();
        let res = tokio::task::spawn_blocking(move || inner.store()?.insert(&stored))
            .await
            .map_err(join_err)
            .and_then(|r| r);
        if let Err(e) = res {
            self.inner.waiters()?.remove(&entry.id);
            return Err(e);
        }
        self.start_poller();
        self.start_timer(entry.id.clone(), deadline_ms);
        let ticket = Ticket {
            id: entry.id.clone(),
            request_hash: entry.request_hash.clone(),
            deadline_ms,
            rx,
        };
        let _ = self.inner.events.send(InboxEvent::Added(Box::new(entry)));
        Ok(ticket)
    }

    /// A person's decision (see [`Store::decide`] for what is refused). The waiting ticket
    /// gets it at once.
    pub async fn decide(
        &self,
        id: &str,
        decision: Decision,
        expect_hash: Option<&str>,
    ) -> Result<Resolved, InboxError> {
        let how = Resolution::Human {
            decision,
            expect_hash: expect_hash.map(str::to_owned),
        };
        let inner = self.inner.clone();
        let id = id.to_owned();
        tokio::task::spawn_blocking(move || inner.resolve(&id, how))
            .await
            .map_err(join_err)?
    }

    /// Withdraws a pending request whose client is gone or which another channel answered;
    /// its ticket gets a deny with the reason. `Ok(None)` if it was no longer pending.
    pub fn cancel(&self, id: &str, why: Cancel) -> Result<Option<Resolved>, InboxError> {
        let state = match why {
            Cancel::ClientGone | Cancel::GuardShutdown => State::Expired,
            Cancel::RequesterGone => State::Cancelled,
            Cancel::ResolvedElsewhere(_) => State::ResolvedElsewhere,
        };
        let how = Resolution::Cancel {
            state,
            reason: why.reason(),
        };
        match self.inner.resolve(id, how) {
            Ok(r) => Ok(Some(r)),
            Err(InboxError::AlreadyResolved { .. }) => {
                self.inner.settle(&[id.to_owned()])?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn start_timer(&self, id: String, deadline_ms: u64) {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let left = deadline_ms.saturating_sub(now_ms());
            tokio::time::sleep(Duration::from_millis(left)).await;
            let Some(inner) = weak.upgrade() else { return };
            let how = Resolution::Expire {
                reason: "approval-timeout".into(),
            };
            let id2 = id.clone();
            let inner2 = inner.clone();
            let res = tokio::task::spawn_blocking(move || inner2.resolve(&id2, how)).await;
            match res {
                Ok(Ok(_)) => {}
                // Someone decided first (maybe another process): hand over what the row says.
                Ok(Err(InboxError::AlreadyResolved { .. })) => {
                    let ids = [id.clone()];
                    let _ = tokio::task::spawn_blocking(move || inner.settle(&ids)).await;
                }
                Ok(Err(e)) => {
                    tracing::error!(id = %id, error = %e, "inbox: expiry failed; answering deny");
                    let _ = inner.deliver(&id, fallback_deny("approval-timeout"));
                }
                Err(e) => {
                    tracing::error!(id = %id, error = %e, "inbox: expiry task failed");
                    let _ = inner.deliver(&id, fallback_deny("approval-timeout"));
                }
            }
        });
    }

    /// Starts, once, the task that picks up decisions other processes wrote.
    fn start_poller(&self) {
        if self.inner.poller.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut last_version: Option<i64> = None;
            let mut failing = false;
            let mut tick = tokio::time::interval(POLL_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let ids: Vec<String> = match inner.waiters() {
                    Ok(w) => w.keys().cloned().collect(),
                    Err(_) => return,
                };
                if ids.is_empty() {
                    continue;
                }
                let seen = last_version;
                let res = tokio::task::spawn_blocking(move || -> Result<i64, InboxError> {
                    let version = inner.store()?.data_version()?;
                    if seen != Some(version) {
                        inner.settle(&ids)?;
                    }
                    Ok(version)
                })
                .await;
                match res {
                    Ok(Ok(v)) => {
                        if failing {
                            tracing::warn!("inbox: poll works again");
                        }
                        failing = false;
                        last_version = Some(v);
                    }
                    // Once per outage, not ten times a second (a fleet's database away).
                    Ok(Err(e)) if failing => tracing::debug!(error = %e, "inbox: poll failed"),
                    Ok(Err(e)) => {
                        failing = true;
                        last_version = None;
                        tracing::warn!(error = %e, "inbox: poll failed");
                    }
                    Err(e) => tracing::warn!(error = %e, "inbox: poll task failed"),
                }
            }
        });
    }
}

impl Inner {
    fn store(&self) -> Result<std::sync::MutexGuard<'_, Box<dyn backend::InboxStore>>, InboxError> {
        self.store
            .lock()
            .map_err(|_| InboxError::Internal("inbox store poisoned".into()))
    }

    fn waiters(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Decision>>>, InboxError>
    {
        self.waiters
            .lock()
            .map_err(|_| InboxError::Internal("inbox waiters poisoned".into()))
    }

    /// Resolves in the store, then answers the ticket and tells subscribers. Blocking.
    fn resolve(&self, id: &str, how: Resolution) -> Result<Resolved, InboxError> {
        let res = self.store()?.resolve(id, how);
        match res {
            Ok(r) => {
                self.announce(&r);
                Ok(r)
            }
            // A late human decision expired the entry: its ticket gets the fallback now.
            Err(InboxError::Expired(ref eid)) => {
                self.settle(std::slice::from_ref(eid))?;
                res
            }
            Err(e) => Err(e),
        }
    }

    /// For each id still waited on whose row is no longer pending (another process decided,
    /// or a late decision expired it), answers the ticket and tells subscribers. Blocking.
    fn settle(&self, ids: &[String]) -> Result<(), InboxError> {
        for id in ids {
            if !self.waiters()?.contains_key(id) {
                continue;
            }
            let entry = self.store()?.get(id)?;
            if let Some(Entry {
                state,
                decision: Some(decision),
                ..
            }) = entry.filter(|e| e.state != State::Pending)
            {
                self.announce(&Resolved {
                    id: id.clone(),
                    state,
                    decision,
                });
            }
        }
        Ok(())
    }

    /// Answers the ticket and tells subscribers, once per entry: the poller and this
    /// process's own resolve can both see the same row leave `pending`, and only the one that
    /// takes the waiter announces it.
    fn announce(&self, r: &Resolved) {
        if !self.deliver(&r.id, r.decision.clone()) {
            return;
        }
        let ev = if matches!(r.state, State::Expired | State::Cancelled) {
            InboxEvent::Expired(r.clone())
        } else {
            InboxEvent::Resolved(r.clone())
        };
        let _ = self.events.send(ev);
    }

    /// Sends `d` to the entry's ticket; false when it was already answered.
    fn deliver(&self, id: &str, d: Decision) -> bool {
        let tx = match self.waiters.lock() {
            Ok(mut w) => w.remove(id),
            Err(p) => p.into_inner().remove(id),
        };
        match tx {
            Some(tx) => {
                let _ = tx.send(d);
                true
            }
            None => false,
        }
    }
}
