//! The server's pre-authentication budget (issue 9 item 6): how many connections are open
//! (in total, per uid) and how many bytes unfinished lines hold. At a cap the oldest
//! connection still sending its line is shed: its reader is told to answer `overloaded` and
//! close, and its share is released at once. Connections whose line is complete (being
//! decided, or waiting for a person) are never shed; when only those hold the slots, a new
//! connection is refused instead.
//!
//! One mutex, taken twice per honest request (admit, release): no syscall.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// The caps.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub total: usize,
    pub per_uid: usize,
    pub bytes: usize,
}

#[derive(Debug)]
struct Live {
    uid: u32,
    bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    live: HashMap<u64, Live>,
    /// Sheddable connections (still reading, registered with the event loop), oldest first.
    readers: BTreeMap<u64, oneshot::Sender<()>>,
    per_uid: HashMap<u32, usize>,
    buffered: usize,
}

/// What a server may hold; shared by its connections.
#[derive(Debug)]
pub struct Budget {
    caps: Caps,
    inner: Mutex<Inner>,
}

/// Why a connection could not be admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Every slot is held by a connection that has sent its line.
    Full,
}

impl Budget {
    pub fn new(caps: Caps) -> Arc<Self> {
        Arc::new(Budget {
            caps: Caps {
                total: caps.total.max(1),
                per_uid: caps.per_uid.max(1),
                bytes: caps.bytes.max(1),
            },
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for a connection of `uid`, shedding the oldest reader (of that uid when
    /// the uid is at its cap) if needed. Returns the slot and how many were shed.
    pub fn admit(self: &Arc<Self>, uid: u32) -> Result<(Slot, usize), Refused> {
        let mut g = self.lock();
        let mut shed = 0;
        if g.per_uid.get(&uid).copied().unwrap_or(0) >= self.caps.per_uid {
            if !g.shed_oldest(Some(uid)) {
                return Err(Refused::Full);
            }
            shed += 1;
        }
        if g.live.len() >= self.caps.total {
            if !g.shed_oldest(None) {
                return Err(Refused::Full);
            }
            shed += 1;
        }
        let id = g.next;
        g.next += 1;
        g.live.insert(id, Live { uid, bytes: 0 });
        *g.per_uid.entry(uid).or_insert(0) += 1;
        Ok((
            Slot {
                budget: Arc::clone(self),
                id,
            },
            shed,
        ))
    }

    /// Connections held now (for tests and the shutdown line).
    pub fn open(&self) -> usize {
        self.lock().live.len()
    }

    /// Bytes held by unfinished lines now.
    pub fn buffered(&self) -> usize {
        self.lock().buffered
    }

    /// Sheds the oldest reader (frees a descriptor when the process ran out). True if one was.
    pub fn shed_one(&self) -> bool {
        self.lock().shed_oldest(None)
    }
}

impl Inner {
    fn release(&mut self, id: u64) -> bool {
        let Some(l) = self.live.remove(&id) else {
            return false;
        };
        self.buffered -= l.bytes;
        if let Some(n) = self.per_uid.get_mut(&l.uid) {
            *n -= 1;
            if *n == 0 {
                self.per_uid.remove(&l.uid);
            }
        }
        self.readers.remove(&id);
        true
    }

    /// Sheds the oldest reader (of `uid`, if given); false when there is none.
    fn shed_oldest(&mut self, uid: Option<u32>) -> bool {
        let victim = self
            .readers
            .keys()
            .copied()
            .find(|id| uid.is_none_or(|u| self.live.get(id).is_some_and(|l| l.uid == u)));
        let Some(id) = victim else { return false };
        if let Some(tx) = self.readers.remove(&id) {
            let _ = tx.send(());
        }
        self.release(id)
    }
}

/// One admitted connection's share; released on drop (or when shed).
#[derive(Debug)]
pub struct Slot {
    budget: Arc<Budget>,
    id: u64,
}

impl Slot {
    /// Makes this connection sheddable (it is waiting for the rest of its line); the
    /// receiver fires when it is shed.
    pub fn reading(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut g = self.budget.lock();
        if g.live.contains_key(&self.id) {
            g.readers.insert(self.id, tx);
        }
        rx
    }

    /// Records that this connection now buffers `bytes`; sheds the oldest readers while the
    /// total is over its cap. False when this connection itself was shed.
    pub fn buffer(&self, bytes: usize) -> bool {
        let mut g = self.budget.lock();
        let Some(l) = g.live.get_mut(&self.id) else {
            return false;
        };
        let old = std::mem::replace(&mut l.bytes, bytes);
        g.buffered = g.buffered - old + bytes;
        while g.buffered > self.budget.caps.bytes {
            if !g.shed_oldest(None) {
                break;
            }
        }
        g.live.contains_key(&self.id)
    }

    /// The line is complete: no longer sheddable, its buffer no longer counted.
    pub fn line_done(&self) {
        let mut g = self.budget.lock();
        g.readers.remove(&self.id);
        if let Some(l) = g.live.get_mut(&self.id) {
            let b = std::mem::take(&mut l.bytes);
            g.buffered -= b;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.budget.lock().release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheds_oldest_reader_per_uid_then_total_and_never_a_decided_one() {
        let b = Budget::new(Caps {
            total: 3,
            per_uid: 2,
            bytes: 100,
        });
        let (a, _) = b.admit(1).expect("a");
        let mut a_shed = a.reading();
        let (c, _) = b.admit(1).expect("c");
        c.line_done();
        // uid 1 at its cap: the oldest reader of uid 1 (a) goes.
        let (d, shed) = b.admit(1).expect("d");
        assert_eq!(shed, 1);
        assert!(a_shed.try_recv().is_ok(), "a was told to go");
        drop(a);
        assert_eq!(b.open(), 2);
        let (_e, _) = b.admit(2).expect("e");
        // Total at 3 and nobody reading: refused.
        d.line_done();
        assert_eq!(b.admit(3).err(), Some(Refused::Full));
        drop(c);
        assert!(b.admit(3).is_ok());
    }

    #[test]
    fn buffered_bytes_cap_sheds_oldest_first() {
        let b = Budget::new(Caps {
            total: 10,
            per_uid: 10,
            bytes: 100,
        });
        let (old, _) = b.admit(1).expect("old");
        let mut old_rx = old.reading();
        assert!(old.buffer(60));
        let (new, _) = b.admit(1).expect("new");
        let _new_rx = new.reading();
        assert!(new.buffer(60), "the newer reader survives");
        assert!(old_rx.try_recv().is_ok());
        assert_eq!(b.buffered(), 60);
        assert!(!new.buffer(101), "alone over the cap: shed itself");
        assert_eq!(b.buffered(), 0);
    }
}
