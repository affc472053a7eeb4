//! Refusals counted, for the doors whose refusals anyone can cause (the front door's
//! unauthenticated upgrades, the egress proxy's denied connections): one fsynced record per
//! refusal would let a flood fill the state dir's disk, after which every decision fails
//! closed as `audit-unavailable`. The first refusal of a key (peer and reason) in a window is
//! recorded in full, so a lone one is on record at once; the rest of the window are counted
//! into one [`Counted`] record. At most [`MAX_KEYS`] keys are open at once; refusals of other
//! keys meanwhile are counted together under no key. So a window writes at most
//! `2 * MAX_KEYS + 1` records, whatever arrives.

use serde::Serialize;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long one counting window lasts.
pub const WINDOW: Duration = Duration::from_secs(5);

/// Keys (peer, reason) counted separately in one window.
pub const MAX_KEYS: usize = 16;

/// The rest of a window's refusals of one key: `{"aggregated":true,"count",...}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counted {
    /// Always true: tells this record from a single refusal.
    pub aggregated: bool,
    /// The peer address; none for the refusals counted past [`MAX_KEYS`].
    pub peer: Option<String>,
    pub reason: String,
    pub count: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    /// The last refusal's message.
    pub message: String,
}

#[derive(Debug)]
struct Window {
    opened: Instant,
    from_ms: u64,
    /// Refusals after the first (which was recorded in full).
    more: u64,
    last_message: String,
}

/// The open windows, by key (`None`: the overflow past [`MAX_KEYS`]).
#[derive(Debug)]
pub struct Tally<K> {
    open: Mutex<HashMap<Option<K>, Window>>,
}

impl<K> Default for Tally<K> {
    fn default() -> Self {
        Tally {
            open: Mutex::new(HashMap::new()),
        }
    }
}

/// Milliseconds since the epoch (0 if the clock is before it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl<K: Eq + Hash + Clone> Tally<K> {
    /// Notes one refusal; true when it opens its key's window and must be recorded in full.
    pub fn note(&self, key: K, message: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let key = if open.contains_key(&Some(key.clone())) || open.len() < MAX_KEYS {
            Some(key)
        } else {
            None
        };
        let first = key.is_some();
        match open.get_mut(&key) {
            Some(w) => {
                w.more += 1;
                if w.last_message != message {
                    message.clone_into(&mut w.last_message);
                }
                false
            }
            None => {
                // The overflow window records nothing in full: its first refusal is counted.
                let more = u64::from(!first);
                open.insert(
                    key,
                    Window {
                        opened: Instant::now(),
                        from_ms: now_ms(),
                        more,
                        last_message: message.to_owned(),
                    },
                );
                first
            }
        }
    }

    /// Closes the windows older than [`WINDOW`] (all with `all`) and returns their counts
    /// (a window that saw only its first refusal has none), with `describe` giving a key's
    /// peer and reason.
    pub fn take_due(&self, all: bool, describe: impl Fn(&K) -> (String, String)) -> Vec<Counted> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let due: Vec<Option<K>> = open
            .iter()
            .filter(|(_, w)| all || w.opened.elapsed() >= WINDOW)
            .map(|(k, _)| k.clone())
            .collect();
        let to_ms = now_ms();
        due.into_iter()
            .filter_map(|k| open.remove(&k).map(|w| (k, w)))
            .filter(|(_, w)| w.more > 0)
            .map(|(k, w)| {
                let (peer, reason) = match &k {
                    Some(k) => {
                        let (p, r) = describe(k);
                        (Some(p), r)
                    }
                    None => (None, "many-peers".to_owned()),
                };
                Counted {
                    aggregated: true,
                    peer,
                    reason,
                    count: w.more,
                    from_ms: w.from_ms,
                    to_ms,
                    message: w.last_message,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(k: &(u32, &'static str)) -> (String, String) {
        (k.0.to_string(), k.1.to_owned())
    }

    #[test]
    fn first_in_full_then_one_count_per_key_and_a_bounded_number_of_keys() {
        let t = Tally::default();
        assert!(t.note((1, "a"), "m"));
        for _ in 0..1000 {
            assert!(!t.note((1, "a"), "m"));
        }
        assert!(t.note((1, "b"), "m"), "another reason is another key");
        for peer in 2..100 {
            t.note((peer, "a"), "m");
        }
        assert!(t.take_due(false, describe).is_empty(), "windows still open");
        let out = t.take_due(true, describe);
        let total: u64 = out.iter().map(|c| c.count).sum();
        // 1000 counted for (1,a); of the 98 other peers, 14 opened a key (recorded in full)
        // and 84 were counted in the overflow.
        assert_eq!(total, 1000 + 84, "{out:?}");
        assert!(out.len() <= MAX_KEYS + 1, "{out:?}");
        assert!(out.iter().any(|c| c.peer.is_none() && c.count == 84));
        assert!(t.note((1, "a"), "m"), "a new window");
    }
}
