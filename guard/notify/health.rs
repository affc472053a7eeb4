//! Each channel's last state, for `/readyz`'s detail, the page header and `doctor`: a channel
//! that fails is named there, and never holds up a decision. Also the counting sink the
//! wiring plugs in (Prometheus at `/metrics`), so this box never imports a door.

use serde_json::{json, Value};
use std::sync::Mutex;

/// Receives the notifier's counts; the web door exposes them.
pub trait NotifyMetrics: Send + Sync {
    /// One message delivered (`ok`) or given up on after its attempts.
    fn sent(&self, channel: &str, ok: bool);
    /// A notice dropped because the channel's queue was full.
    fn dropped(&self, channel: &str);
}

/// The sink nobody reads.
pub struct NoMetrics;
impl NotifyMetrics for NoMetrics {
    fn sent(&self, _: &str, _: bool) {}
    fn dropped(&self, _: &str) {}
}

#[derive(Debug, Clone, Default)]
struct ChannelState {
    name: String,
    kind: &'static str,
    /// The last delivery's error, until one succeeds.
    error: Option<String>,
    sent: u64,
    failed: u64,
    dropped: u64,
}

/// The file in the state dir where `serve` keeps the channels' state for `doctor`.
pub const HEALTH_FILE: &str = "notify.json";

/// Every channel's state.
#[derive(Debug, Default)]
pub struct Health {
    channels: Mutex<Vec<ChannelState>>,
    /// Rewritten whenever a channel turns failing or well again.
    file: Option<std::path::PathBuf>,
}

/// The channels' state as `serve` last wrote it in `state_dir` (none: no channel ran here).
pub fn read_state(state_dir: &std::path::Path) -> Option<Value> {
    let text = std::fs::read_to_string(state_dir.join(HEALTH_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// One line per channel of a state [`read_state`] read: `name (kind): ok, N sent` or
/// `name (kind): FAILING: error`.
pub fn state_lines(v: &Value) -> Vec<String> {
    let none = Vec::new();
    let channels = v["channels"].as_array().unwrap_or(&none);
    channels
        .iter()
        .map(|c| {
            let head = format!(
                "{} ({})",
                c["name"].as_str().unwrap_or("?"),
                c["kind"].as_str().unwrap_or("?")
            );
            match c["error"].as_str() {
                Some(e) => format!("{head}: FAILING: {e}"),
                None => format!("{head}: ok, {} sent", c["sent"]),
            }
        })
        .collect()
}

impl Health {
    /// Health that keeps its state in `state_dir` too.
    pub fn in_state_dir(state_dir: &std::path::Path) -> Health {
        Health {
            channels: Mutex::default(),
            file: Some(state_dir.join(HEALTH_FILE)),
        }
    }

    fn persist(&self) {
        let Some(f) = &self.file else { return };
        let text = self.json().to_string();
        let tmp = f.with_extension("json.tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, f)) {
            tracing::warn!(error = %e, "notify: channel state not written");
        }
    }

    pub(super) fn add(&self, name: &str, kind: &'static str) -> usize {
        let slot = {
            let mut c = self.lock();
            c.push(ChannelState {
                name: name.to_owned(),
                kind,
                ..Default::default()
            });
            c.len() - 1
        };
        self.persist();
        slot
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ChannelState>> {
        // A panic while holding it leaves counters only: keep reading them.
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn delivered(&self, i: usize, result: Result<(), String>) {
        let changed = match self.lock().get_mut(i) {
            Some(c) => {
                let was = c.error.clone();
                match result {
                    Ok(()) => {
                        c.sent += 1;
                        c.error = None;
                    }
                    Err(e) => {
                        c.failed += 1;
                        c.error = Some(e);
                    }
                }
                was != c.error
            }
            None => false,
        };
        if changed {
            self.persist();
        }
    }

    pub(super) fn dropped(&self, i: usize) {
        if let Some(c) = self.lock().get_mut(i) {
            c.dropped += 1;
        }
    }

    /// The channels whose last delivery failed: `name (kind): error`.
    pub fn failing(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter_map(|c| {
                c.error
                    .as_ref()
                    .map(|e| format!("{} ({}): {e}", c.name, c.kind))
            })
            .collect()
    }

    /// `{"ok": …, "channels": [{name, kind, ok, error, sent, failed, dropped}]}`.
    pub fn json(&self) -> Value {
        let c = self.lock();
        let channels: Vec<Value> = c
            .iter()
            .map(|c| {
                json!({"name": c.name, "kind": c.kind, "ok": c.error.is_none(), "error": c.error,
                       "sent": c.sent, "failed": c.failed, "dropped": c.dropped})
            })
            .collect();
        json!({"ok": c.iter().all(|c| c.error.is_none()), "channels": channels})
    }
}
