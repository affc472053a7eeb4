//! How long a client waits for an answer, as the engine counts it: the deployment sets the
//! figures (`app::config`), every door and the inbox's fallback read them here.

/// The clients' deadlines and the safety margin before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    pub request_ms: u64,
    pub exec_ms: u64,
    pub margin_ms: u64,
}

impl Deadlines {
    /// When the fallback must answer a `request` received at `now_ms`.
    pub fn request_deadline(&self, now_ms: u64) -> u64 {
        now_ms + self.request_ms.saturating_sub(self.margin_ms)
    }

    /// When the fallback must answer an `exec` received at `now_ms`: the 2026.9.6 node host
    /// waits 20 s; newer ones `timeoutMs + 5 s`. The shorter of both is safe for either.
    pub fn exec_deadline(&self, now_ms: u64, timeout_ms: Option<u64>) -> u64 {
        let client = match timeout_ms {
            Some(t) if t > 0 => self.exec_ms.min(t.saturating_add(5_000)),
            _ => self.exec_ms,
        };
        now_ms + client.saturating_sub(self.margin_ms)
    }
}
