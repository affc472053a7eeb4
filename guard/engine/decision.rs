//! The small decision helpers every door shares: who decided, which reason a deny reports,
//! and the sentence the node host shows after `SYSTEM_RUN_DENIED: `.

use crate::policy::request::{DecidedBy, Decision, DecisionKind};
use crate::policy::verdict::Verdict;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn policy_decision(kind: DecisionKind, reason: Option<String>) -> Decision {
    Decision {
        kind,
        reason,
        by: DecidedBy::Policy,
        at_ms: now_ms(),
    }
}

pub fn fallback(reason: &str) -> Decision {
    Decision {
        kind: DecisionKind::Deny,
        reason: Some(reason.into()),
        by: DecidedBy::Fallback,
        at_ms: now_ms(),
    }
}

/// The reason code a policy deny reports: the first reason of the verdict.
pub fn deny_reason(v: &Verdict) -> String {
    v.reasons
        .first()
        .map(|r| r.code.to_string())
        .unwrap_or_else(|| "security=deny".into())
}

/// The sentence after `SYSTEM_RUN_DENIED: ` for a deny reason.
pub fn deny_message(reason: &str) -> String {
    match reason {
        "user-denied" => "user denied".into(),
        "approval-timeout" => "approval timed out".into(),
        "guard-shutdown" => "guard shutting down".into(),
        "allowlist-miss" => "allowlist miss".into(),
        "security=deny" => "security=deny".into(),
        other => format!("blocked by sanctum-guard ({other})"),
    }
}
