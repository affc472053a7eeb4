//! A run queue that is fair between requesters: a pool of `cap` slots where one requester
//! (an agent's session) holds at most `cap - 1`, so a flood from one session always leaves a
//! slot for another's next command, and a freed slot goes to the waiting requester that runs
//! the fewest (first come first served between equals). A plain semaphore let ten `yes`
//! runs from one session hold every slot while another session's `true` waited for them.
//!
//! A waiter that gives up (its deadline passed, its request was dropped) costs nothing: a
//! slot handed to it in the same instant comes back when the unreceived [`Slot`] drops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// One pool of run slots, shared by every run that queues in it.
pub(crate) struct FairPool {
    cap: usize,
    per_key: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Slots held, by requester (no entry: none).
    running: HashMap<String, usize>,
    total: usize,
    /// In arrival order.
    waiters: Vec<Waiter>,
}

struct Waiter {
    key: String,
    tx: oneshot::Sender<Slot>,
}

/// A held slot: dropping it frees the slot for the next waiter.
pub(crate) struct Slot {
    pool: Arc<FairPool>,
    key: String,
    armed: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.armed {
            self.pool.release(&self.key);
        }
    }
}

impl FairPool {
    /// A pool of `cap` slots (at least 1); one requester holds at most `cap - 1` of them
    /// when `cap` is 2 or more.
    pub(crate) fn new(cap: usize) -> Arc<FairPool> {
        let cap = cap.max(1);
        Arc::new(FairPool {
            cap,
            per_key: if cap >= 2 { cap - 1 } else { 1 },
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot for requester `key`. Cancel-safe: dropping the future leaves the
    /// queue, and a slot granted meanwhile is freed again.
    pub(crate) async fn acquire(self: &Arc<Self>, key: &str) -> Option<Slot> {
        let rx = {
            let mut st = self.lock();
            let held = st.running.get(key).copied().unwrap_or(0);
            if st.total < self.cap && held < self.per_key {
                take(&mut st, key);
                return Some(self.slot(key));
            }
            // Waiters that gave up are dropped here too, so a long queue of dead ones
            // does not pile up while no slot frees.
            st.waiters.retain(|w| !w.tx.is_closed());
            let (tx, rx) = oneshot::channel();
            st.waiters.push(Waiter {
                key: key.to_owned(),
                tx,
            });
            rx
        };
        rx.await.ok()
    }

    fn slot(self: &Arc<Self>, key: &str) -> Slot {
        Slot {
            pool: self.clone(),
            key: key.to_owned(),
            armed: true,
        }
    }

    fn release(self: &Arc<Self>, key: &str) {
        let mut st = self.lock();
        give_back(&mut st, key);
        // Hand free slots to the waiters that run the fewest, oldest first among equals.
        while st.total < self.cap {
            let Some(at) = next_waiter(&st, self.per_key) else {
                break;
            };
            let w = st.waiters.remove(at);
            take(&mut st, &w.key);
            if let Err(mut unsent) = w.tx.send(self.slot(&w.key)) {
                // The waiter is gone: undo under the lock we hold (dropping it armed
                // would take the lock again).
                unsent.armed = false;
                give_back(&mut st, &w.key);
            }
        }
    }

    /// Slots held now, in total and by `key` (for tests and metrics).
    #[cfg(test)]
    fn held(&self, key: &str) -> (usize, usize) {
        let st = self.lock();
        (st.total, st.running.get(key).copied().unwrap_or(0))
    }
}

fn take(st: &mut State, key: &str) {
    *st.running.entry(key.to_owned()).or_insert(0) += 1;
    st.total += 1;
}

fn give_back(st: &mut State, key: &str) {
    if let Some(n) = st.running.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            st.running.remove(key);
        }
    }
    st.total = st.total.saturating_sub(1);
}

/// The waiter to serve next: of those still waiting whose requester is under its share, the
/// one whose requester holds the fewest slots; the oldest among equals.
fn next_waiter(st: &State, per_key: usize) -> Option<usize> {
    st.waiters
        .iter()
        .enumerate()
        .filter(|(_, w)| !w.tx.is_closed())
        .map(|(i, w)| (st.running.get(&w.key).copied().unwrap_or(0), i))
        .filter(|&(held, _)| held < per_key)
        .min()
        .map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn now_or_never(pool: &Arc<FairPool>, key: &str) -> Option<Slot> {
        tokio::time::timeout(Duration::from_millis(50), pool.acquire(key))
            .await
            .ok()
            .flatten()
    }

    /// One session floods; another's first run still finds a slot at once.
    #[tokio::test]
    async fn a_flood_from_one_session_leaves_a_slot_for_another() {
        // Cap, runs session A asks for: how many A holds, and whether B then gets one.
        let rows: [(usize, usize, usize, bool); 5] = [
            (4, 10, 3, true),
            (2, 5, 1, true),
            (1, 3, 1, false),
            (4, 2, 2, true),
            (8, 20, 7, true),
        ];
        for (cap, asks, holds, b_runs) in rows {
            let pool = FairPool::new(cap);
            let mut held = Vec::new();
            for _ in 0..asks {
                if let Some(s) = now_or_never(&pool, "A").await {
                    held.push(s);
                }
            }
            assert_eq!(held.len(), holds, "cap {cap}: A holds");
            let b = now_or_never(&pool, "B").await;
            assert_eq!(b.is_some(), b_runs, "cap {cap}: B runs at once");
        }
    }

    /// A freed slot goes to the requester holding the fewest, not to the oldest waiter.
    #[tokio::test]
    async fn a_freed_slot_goes_to_the_requester_that_runs_least() {
        let pool = FairPool::new(4);
        let mut a: Vec<Slot> = Vec::new();
        for _ in 0..3 {
            a.push(now_or_never(&pool, "A").await.expect("free"));
        }
        let b1 = now_or_never(&pool, "B").await.expect("the reserved slot");
        // Full: A's fourth waits first, then B's second.
        let (p, q) = (pool.clone(), pool.clone());
        let a4 = tokio::spawn(async move { p.acquire("A").await.map(|s| ("A", s)) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let b2 = tokio::spawn(async move { q.acquire("B").await.map(|s| ("B", s)) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a.pop());
        let first = tokio::time::timeout(Duration::from_secs(2), b2)
            .await
            .expect("B's waiter was served")
            .expect("joined");
        assert_eq!(
            first.as_ref().map(|f| f.0),
            Some("B"),
            "B holds 1, A 2: B goes first"
        );
        assert!(!a4.is_finished(), "A's waiter still waits");
        drop(b1);
        let next = tokio::time::timeout(Duration::from_secs(2), a4)
            .await
            .expect("A's waiter was served")
            .expect("joined");
        assert_eq!(next.map(|n| n.0), Some("A"));
    }

    /// A waiter that gave up takes no slot with it, whether it left before the slot was
    /// freed or in the instant it was handed over.
    #[tokio::test]
    async fn a_waiter_that_gives_up_leaks_no_slot() {
        let pool = FairPool::new(2);
        let a = now_or_never(&pool, "A").await.expect("free");
        let b = now_or_never(&pool, "B").await.expect("free");
        // Left before: its deadline passes in the queue.
        assert!(now_or_never(&pool, "C").await.is_none());
        drop(a);
        assert_eq!(pool.held("C"), (1, 0), "nobody took A's slot");
        let a = now_or_never(&pool, "A").await.expect("A's slot is free");
        // Left in the handover: the slot is sent, the future dropped before it reads it.
        let mut fut = Box::pin(pool.acquire("D"));
        let queued = tokio::time::timeout(Duration::from_millis(20), fut.as_mut()).await;
        assert!(queued.is_err(), "D queues");
        drop(b);
        assert_eq!(pool.held("D"), (2, 1), "the slot was handed to D");
        drop(fut);
        assert_eq!(pool.held("D"), (1, 0), "and came back when D gave up");
        drop(a);
        let e = now_or_never(&pool, "E").await;
        let f = now_or_never(&pool, "F").await;
        assert!(e.is_some() && f.is_some(), "both slots are free again");
    }
}
