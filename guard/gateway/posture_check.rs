//! The approver's posture check: while connected, it asks the gateway for its effective
//! config (`config.get`) and its plugins (`plugins.list`), judges them with
//! [`crate::openclaw::posture::assess`], and sets the engine's posture gate: at once after
//! each connect, then every [`RECHECK`]. Each result is kept in [`POSTURE_FILE`] for `doctor`
//! and each change is logged. A disconnect keeps the last result (the next connect checks
//! again); a gateway that will not answer leaves the posture unchecked (gate shut).

use super::rpc::Rpc;
use crate::engine::decision::now_ms;
use crate::engine::posture::{PostureGate, PostureState};
use crate::openclaw::posture::{assess, Expect};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The last posture check, in the guard's state dir.
pub const POSTURE_FILE: &str = "gateway-posture.json";

/// How often a connected approver checks again (config can change while the gateway runs).
pub const RECHECK: Duration = Duration::from_secs(30);

/// What the check needs; shared by every session of the approver.
pub struct PostureCheck {
    pub gate: Arc<PostureGate>,
    pub expect: Expect,
    /// [`POSTURE_FILE`] in the state dir.
    pub path: PathBuf,
}

impl PostureCheck {
    /// One check over `rpc` (connected).
    pub async fn once(&self, rpc: &Rpc) -> PostureState {
        let cfg = rpc.call_method("config.get", json!({})).await;
        let plugins = rpc.call_method("plugins.list", json!({})).await;
        match (cfg, plugins) {
            (Ok(c), Ok(p)) => {
                let findings = assess(&c, &p, &self.expect);
                if findings.is_empty() {
                    PostureState::Safe
                } else {
                    PostureState::Unsafe { findings }
                }
            }
            (Err(e), _) | (_, Err(e)) => PostureState::Unchecked {
                why: format!("the gateway did not answer config.get and plugins.list: {e}"),
            },
        }
    }

    /// Checks now and every [`RECHECK`]; runs until aborted (the session ending).
    pub async fn watch(self: Arc<Self>, rpc: Arc<Rpc>) {
        loop {
            let s = self.once(&rpc).await;
            self.apply(s);
            tokio::time::sleep(RECHECK).await;
        }
    }

    /// Sets the gate, keeps the result for `doctor` and logs a change.
    pub fn apply(&self, s: PostureState) {
        let before = self.gate.state();
        if before != s {
            match &s {
                PostureState::Safe => {
                    eprintln!("sanctum-guard: gateway posture: safe (every exec and tool call goes through the guard)")
                }
                PostureState::Unsafe { findings } => {
                    let verb = if self.gate.enforced() {
                        "every decision is a deny until fixed"
                    } else {
                        "NOT enforced (--allow-unsafe-posture)"
                    };
                    eprintln!("sanctum-guard: gateway posture UNSAFE ({verb}):");
                    for f in findings {
                        eprintln!("sanctum-guard:   {}: {}", f.code, f.detail);
                    }
                }
                PostureState::Unchecked { why } => {
                    eprintln!("sanctum-guard: gateway posture unchecked: {why}")
                }
                PostureState::NotApplicable => {}
            }
        }
        let doc = json!({"posture": s, "enforced": self.gate.enforced(), "checkedAtMs": now_ms()});
        if let Err(e) = std::fs::write(&self.path, doc.to_string()) {
            tracing::warn!(error = %e, path = %self.path.display(), "posture file not written");
        }
        self.gate.set(s);
    }
}

/// Aborts the task when dropped: a session's check ends with the session.
pub struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
