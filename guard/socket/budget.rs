//! The server's pre-authentication budget: how many connections are open
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

/// Under pressure, the longest unfinished line a connection may keep sending.
pub const PRESSURE_LINE: usize = 32 * 1024;

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
    /// the uid is at its cap) if needed. The connection is sheddable from now until its line
    /// is complete ([`Slot::line_done`]); the receiver fires when it is shed.
    pub fn admit(self: &Arc<Self>, uid: u32) -> Result<(Slot, oneshot::Receiver<()>), Refused> {
        let mut g = self.lock();
        if g.per_uid.get(&uid).copied().unwrap_or(0) >= self.caps.per_uid
            && !g.shed_oldest(|l| l.uid == uid)
        {
            return Err(Refused::Full);
        }
        if g.live.len() >= self.caps.total && !g.shed_oldest(|_| true) {
            return Err(Refused::Full);
        }
        let id = g.next;
        g.next += 1;
        g.live.insert(id, Live { uid, bytes: 0 });
        *g.per_uid.entry(uid).or_insert(0) += 1;
        let (tx, rx) = oneshot::channel();
        g.readers.insert(id, tx);
        Ok((
            Slot {
                budget: Arc::clone(self),
                id,
            },
            rx,
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
        self.lock().shed_oldest(|_| true)
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

    /// Sheds the oldest reader that `which` accepts; false when there is none.
    fn shed_oldest(&mut self, which: impl Fn(&Live) -> bool) -> bool {
        let victim = self
            .readers
            .keys()
            .copied()
            .find(|id| self.live.get(id).is_some_and(&which));
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
    /// Records that this connection now buffers `bytes`; sheds the oldest readers while the
    /// total is over its cap. Under pressure (over half the cap in use) a connection whose
    /// unfinished line passes [`PRESSURE_LINE`] is shed at once: reading the rest of a flood
    /// of long half-lines only to discard it is what would delay honest clients. False when
    /// this connection itself was shed.
    pub fn buffer(&self, bytes: usize) -> bool {
        let mut g = self.budget.lock();
        let Some(l) = g.live.get_mut(&self.id) else {
            return false;
        };
        let old = std::mem::replace(&mut l.bytes, bytes);
        g.buffered = g.buffered - old + bytes;
        if bytes > PRESSURE_LINE && g.buffered > self.budget.caps.bytes / 2 {
            g.release(self.id);
            return false;
        }
        // Shedding a connection that holds nothing frees nothing: the byte cap takes the
        // oldest that hold bytes.
        while g.buffered > self.budget.caps.bytes {
            if !g.shed_oldest(|l| l.bytes > 0) {
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
        let (a, mut a_shed) = b.admit(1).expect("a");
        let (c, _) = b.admit(1).expect("c");
        c.line_done();
        // uid 1 at its cap: the oldest reader of uid 1 (a) goes.
        let (d, _) = b.admit(1).expect("d");
        assert!(a_shed.try_recv().is_ok(), "a was told to go");
        drop(a);
        assert_eq!(b.open(), 2);
        let (e, _) = b.admit(2).expect("e");
        e.line_done();
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
        let big = Budget::new(Caps {
            total: 10,
            per_uid: 10,
            bytes: 4 * PRESSURE_LINE,
        });
        let (a, _) = big.admit(1).expect("a");
        assert!(
            a.buffer(PRESSURE_LINE),
            "a long line without pressure is read on"
        );
        let (c, _) = big.admit(1).expect("c");
        assert!(c.buffer(PRESSURE_LINE / 2));
        assert!(
            !c.buffer(PRESSURE_LINE + 1),
            "under pressure a long half-line is shed"
        );
        assert_eq!(big.buffered(), PRESSURE_LINE);
        let (silent, mut silent_rx) = b.admit(1).expect("silent");
        let (old, mut old_rx) = b.admit(1).expect("old");
        assert!(old.buffer(60));
        let (new, _new_rx) = b.admit(1).expect("new");
        assert!(new.buffer(60), "the newer reader survives");
        assert!(
            silent_rx.try_recv().is_err(),
            "a connection holding nothing is kept"
        );
        drop(silent);
        assert!(old_rx.try_recv().is_ok());
        assert_eq!(b.buffered(), 60);
        assert!(!new.buffer(101), "alone over the cap: shed itself");
        assert_eq!(b.buffered(), 0);
    }
}
