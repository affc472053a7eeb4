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

/// The sentence after `SYSTEM_RUN_DENIED: ` for a decision: a person's deny names the person
/// and their reason (`denied by web:admin: not on a Friday`), so the agent is not told the
/// policy blocked what a person refused; every other deny is [`deny_message`] of its reason.
pub fn deny_text(d: &Decision) -> String {
    let reason = d.reason.as_deref().unwrap_or("user-denied");
    let DecidedBy::Human(who) = &d.by else {
        return deny_message(reason);
    };
    // The approver without session or address (`web:admin/1a2b@127.0.0.1:5` -> `web:admin`).
    let who = who
        .split(['/', '@'])
        .next()
        .filter(|w| !w.is_empty())
        .unwrap_or("a person");
    let said = match reason {
        "" | "user-denied" => "no reason given".to_owned(),
        r => r
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_HUMAN_REASON)
            .collect(),
    };
    format!("denied by {who}: {said}")
}

/// Characters of a person's deny reason passed on to the agent.
const MAX_HUMAN_REASON: usize = 300;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_deny_names_them_and_their_reason() {
        let d = |by: DecidedBy, reason: Option<&str>| Decision {
            kind: DecisionKind::Deny,
            reason: reason.map(str::to_owned),
            by,
            at_ms: 0,
        };
        let h = |n: &str| DecidedBy::Human(n.into());
        for (decision, want) in [
            (
                d(
                    h("web:admin/1a2b3c4d@127.0.0.1:53578"),
                    Some("not on a Friday"),
                ),
                "denied by web:admin: not on a Friday",
            ),
            (
                d(h("cli:alice"), Some("user-denied")),
                "denied by cli:alice: no reason given",
            ),
            (
                d(h("cli:alice"), None),
                "denied by cli:alice: no reason given",
            ),
            (d(h(""), Some("x\ny")), "denied by a person: x y"),
            (
                d(DecidedBy::Policy, Some("sensitive-path")),
                "blocked by sanctum-guard (sensitive-path)",
            ),
            (
                d(DecidedBy::Fallback, Some("approval-timeout")),
                "approval timed out",
            ),
        ] {
            assert_eq!(deny_text(&decision), want);
        }
        let long = "r".repeat(1000);
        assert_eq!(
            deny_text(&d(h("cli:a"), Some(&long))).len(),
            "denied by cli:a: ".len() + MAX_HUMAN_REASON
        );
    }
}
