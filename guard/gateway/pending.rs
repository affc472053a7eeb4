//! Upgrades not yet checked: a connection whose upgrade request has not arrived whole holds
//! no connection slot (those are for clients whose credential was checked), but it holds a
//! socket, so the unfinished ones have their own budget: [`PER_PEER`] per peer address and
//! [`TOTAL`] in all. Past either, the oldest unfinished upgrade (of that peer, or of all) is
//! dropped, not the newcomer: a client with a valid link sends its request at once, so a
//! flood of requests that never finish cannot keep it out.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Unfinished upgrades one peer address may hold.
pub const PER_PEER: usize = 16;

/// Unfinished upgrades all peers may hold together.
pub const TOTAL: usize = 512;

#[derive(Default)]
struct Inner {
    next: u64,
    /// Every unfinished upgrade by age: its peer and how to drop it.
    by_age: BTreeMap<u64, (IpAddr, Arc<Notify>)>,
    /// Each peer's unfinished upgrades, oldest first.
    by_peer: HashMap<IpAddr, VecDeque<u64>>,
}

impl Inner {
    /// Drops the upgrade `id` from the books; its handle, to tell it to go.
    fn remove(&mut self, id: u64) -> Option<Arc<Notify>> {
        let (ip, shed) = self.by_age.remove(&id)?;
        if let Some(q) = self.by_peer.get_mut(&ip) {
            q.retain(|&i| i != id);
            if q.is_empty() {
                self.by_peer.remove(&ip);
            }
        }
        Some(shed)
    }
}

/// The unfinished upgrades of a door.
#[derive(Default)]
pub struct Pending {
    inner: Mutex<Inner>,
}

/// One unfinished upgrade: `shed` fires when a newer one takes its place; dropping the
/// ticket (the request arrived, or the connection ended) takes it off the books.
pub struct Ticket<'a> {
    pending: &'a Pending,
    id: u64,
    pub shed: Arc<Notify>,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut inner = self.pending.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.remove(self.id);
    }
}

impl Pending {
    /// Books a new connection from `ip`, shedding the oldest over budget.
    pub fn enter(&self, ip: IpAddr) -> Ticket<'_> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let id = inner.next;
        inner.next += 1;
        let mut shed = Vec::new();
        let oldest_of_peer = inner
            .by_peer
            .get(&ip)
            .filter(|q| q.len() >= PER_PEER)
            .and_then(|q| q.front().copied());
        if let Some(old) = oldest_of_peer {
            shed.extend(inner.remove(old));
        }
        if inner.by_age.len() >= TOTAL {
            let oldest = inner.by_age.keys().next().copied();
            if let Some(old) = oldest {
                shed.extend(inner.remove(old));
            }
        }
        let mine = Arc::new(Notify::new());
        inner.by_age.insert(id, (ip, mine.clone()));
        inner.by_peer.entry(ip).or_default().push_back(id);
        drop(inner);
        for s in shed {
            s.notify_one();
        }
        Ticket {
            pending: self,
            id,
            shed: mine,
        }
    }

    /// How many upgrades are unfinished (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_age
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_oldest_of_a_peer_is_shed_and_a_newcomer_kept() {
        let p = Pending::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let first = p.enter(a);
        let rest: Vec<_> = (1..PER_PEER).map(|_| p.enter(a)).collect();
        let other = p.enter(b);
        let newest = p.enter(a);
        let fired = tokio::time::timeout(Duration::from_millis(100), first.shed.notified());
        assert!(fired.await.is_ok(), "the peer's oldest is told to go");
        let kept = tokio::time::timeout(Duration::from_millis(50), other.shed.notified());
        assert!(kept.await.is_err(), "another peer's upgrade is kept");
        assert_eq!(p.len(), PER_PEER + 1);
        drop((first, rest, other, newest));
        assert_eq!(p.len(), 0, "tickets leave the books when dropped");
    }
}
