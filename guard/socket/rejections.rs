//! Rejections, aggregated: a flood of bad frames must not grow the audit log
//! without bound. The first rejection of a reason in a window is recorded in full (so a lone
//! bad frame is on record at once, with its peer and id); the rest of that window are
//! counted and written as one `rejection` record with `aggregated: true`, the count, the
//! window and a sample of the peers. So each reason costs at most two records per window.

use super::auth::Peer;
use super::wire::RejectReason;
use crate::audit::event::{Origin, PeerId, Rejections as Aggregate};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one aggregation window lasts.
pub const WINDOW: Duration = Duration::from_secs(1);

/// Peers named in an aggregated record.
const PEER_SAMPLE: usize = 8;

#[derive(Debug)]
struct Window {
    opened: Instant,
    from_ms: u64,
    /// Rejections after the first (which was recorded in full).
    more: u64,
    peers: Vec<(u32, Option<i32>)>,
    last_message: String,
}

/// The open windows, per reason.
#[derive(Debug, Default)]
pub struct Rejections {
    open: Mutex<HashMap<RejectReason, Window>>,
}

impl Rejections {
    /// Notes one rejection; true when it opens a window and must be recorded in full.
    pub fn note(&self, reason: RejectReason, peer: &Peer, message: &str, now_ms: u64) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match open.get_mut(&reason) {
            Some(w) => {
                w.more += 1;
                let p = (peer.uid, peer.pid);
                if w.peers.len() < PEER_SAMPLE && !w.peers.contains(&p) {
                    w.peers.push(p);
                }
                if w.last_message != message {
                    w.last_message = message.to_owned();
                }
                false
            }
            None => {
                open.insert(
                    reason,
                    Window {
                        opened: Instant::now(),
                        from_ms: now_ms,
                        more: 0,
                        peers: Vec::new(),
                        last_message: message.to_owned(),
                    },
                );
                true
            }
        }
    }

    /// Closes the windows older than [`WINDOW`] (all of them with `all`) and returns the
    /// aggregated records to write (windows that saw only their first rejection write none).
    pub fn take_due(&self, all: bool, now_ms: u64) -> Vec<Aggregate> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let due: Vec<RejectReason> = open
            .iter()
            .filter(|(_, w)| all || w.opened.elapsed() >= WINDOW)
            .map(|(r, _)| *r)
            .collect();
        due.into_iter()
            .filter_map(|r| open.remove(&r).map(|w| (r, w)))
            .filter(|(_, w)| w.more > 0)
            .map(|(r, w)| Aggregate {
                source: Origin::Socket,
                aggregated: true,
                reason: r.as_str(),
                count: w.more,
                from_ms: w.from_ms,
                to_ms: now_ms,
                peers: w
                    .peers
                    .iter()
                    .map(|&(uid, pid)| PeerId { uid, pid })
                    .collect(),
                message: w.last_message,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_full_then_one_count_per_reason() {
        let r = Rejections::default();
        let p = Peer {
            uid: 1,
            pid: Some(2),
        };
        assert!(r.note(RejectReason::Json, &p, "malformed frame", 1));
        for _ in 0..1000 {
            assert!(!r.note(RejectReason::Json, &p, "malformed frame", 2));
        }
        assert!(r.note(RejectReason::Token, &p, "token mismatch", 3));
        assert!(r.take_due(false, 4).is_empty(), "windows still open");
        let out = r.take_due(true, 5);
        assert_eq!(
            out.len(),
            1,
            "the lone token rejection needs no aggregate: {out:?}"
        );
        assert_eq!(out[0].count, 1000);
        assert_eq!(out[0].reason, "json");
        assert!(
            r.note(RejectReason::Json, &p, "malformed frame", 6),
            "a new window"
        );
    }
}
