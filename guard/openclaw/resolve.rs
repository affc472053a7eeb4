//! The effective approvals policy for one agent, resolved exactly as OpenClaw's
//! `resolveExecApprovalsFromFile` (exec-approvals-authorization.kernel) and combined with the
//! config-level `tools.exec.*` policy as `resolveExecPolicyScopeSnapshot` does. Pure.

use super::document::{AllowlistEntry, ApprovalsDocument, Ask, Security, WILDCARD_AGENT};

/// The four resolved policy values (no allowlist): the built-in fallbacks, or a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyValues {
    pub security: Security,
    pub ask: Ask,
    pub ask_fallback: Security,
    pub auto_allow_skills: bool,
}

/// OpenClaw's built-in values when nothing is configured.
pub const BUILT_IN: PolicyValues = PolicyValues {
    security: Security::Full,
    ask: Ask::Off,
    ask_fallback: Security::Deny,
    auto_allow_skills: false,
};

/// What an unreadable or corrupt store means (OpenClaw's `createFailClosedExecApprovalsFallback`).
pub const FAIL_CLOSED: PolicyValues = PolicyValues {
    security: Security::Deny,
    ask: Ask::Off,
    ask_fallback: Security::Deny,
    auto_allow_skills: false,
};

/// The effective policy of one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectivePolicy {
    pub values: PolicyValues,
    /// `agents["*"]` entries followed by `agents.<id>` entries.
    pub allowlist: Vec<AllowlistEntry>,
}

impl EffectivePolicy {
    /// Deny everything, nothing allowlisted.
    pub fn fail_closed() -> Self {
        Self {
            values: FAIL_CLOSED,
            allowlist: Vec::new(),
        }
    }
}

/// The config-level requested policy (`tools.exec.security` / `tools.exec.ask`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigPolicy {
    pub security: Security,
    pub ask: Ask,
}

/// Resolves `agent_id` with OpenClaw's built-in fallbacks.
pub fn resolve(doc: &ApprovalsDocument, agent_id: &str) -> EffectivePolicy {
    resolve_with_fallback(doc, agent_id, BUILT_IN)
}

/// Resolves a store read: a missing document resolves like an empty one, a read or parse
/// error fails closed.
pub fn resolve_read<E>(
    read: Result<Option<ApprovalsDocument>, E>,
    agent_id: &str,
) -> EffectivePolicy {
    match read {
        Ok(Some(doc)) => resolve(&doc, agent_id),
        Ok(None) => resolve(&ApprovalsDocument::default(), agent_id),
        Err(_) => EffectivePolicy::fail_closed(),
    }
}

/// Per field: `agents.<id>` → `agents["*"]` → `defaults` → `fallback`.
pub fn resolve_with_fallback(
    doc: &ApprovalsDocument,
    agent_id: &str,
    fallback: PolicyValues,
) -> EffectivePolicy {
    let agent = doc.agents.get(agent_id);
    let wildcard = doc.agents.get(WILDCARD_AGENT);
    let defaults = &doc.defaults;
    let pick = |field: fn(&super::document::PolicyFields) -> Option<Security>, last: Security| {
        agent
            .and_then(|a| field(&a.policy))
            .or_else(|| wildcard.and_then(|w| field(&w.policy)))
            .or_else(|| field(defaults))
            .unwrap_or(last)
    };
    let values = PolicyValues {
        security: pick(|p| p.security, fallback.security),
        ask: agent
            .and_then(|a| a.policy.ask)
            .or_else(|| wildcard.and_then(|w| w.policy.ask))
            .or(defaults.ask)
            .unwrap_or(fallback.ask),
        ask_fallback: pick(|p| p.ask_fallback, fallback.ask_fallback),
        auto_allow_skills: agent
            .and_then(|a| a.policy.auto_allow_skills)
            .or_else(|| wildcard.and_then(|w| w.policy.auto_allow_skills))
            .or(defaults.auto_allow_skills)
            .unwrap_or(fallback.auto_allow_skills),
    };
    let entries = |a: Option<&super::document::AgentPolicy>| {
        a.and_then(|a| a.allowlist.clone()).unwrap_or_default()
    };
    let mut allowlist = entries(wildcard);
    allowlist.extend(entries(agent));
    EffectivePolicy { values, allowlist }
}

/// The stricter of the document's policy and the config's: lower security, more asking;
/// `askFallback` never looser than the effective security.
pub fn combine(host: &EffectivePolicy, config: ConfigPolicy) -> EffectivePolicy {
    let security = config.security.stricter(host.values.security);
    EffectivePolicy {
        values: PolicyValues {
            security,
            ask: config.ask.stricter(host.values.ask),
            ask_fallback: security.stricter(host.values.ask_fallback),
            auto_allow_skills: host.values.auto_allow_skills,
        },
        allowlist: host.allowlist.clone(),
    }
}

/// What OpenClaw reports as the effective policy of `agent_id` under a config policy: the
/// config values are the document's fallbacks, then both combine to the stricter.
pub fn effective_with_config(
    doc: &ApprovalsDocument,
    agent_id: &str,
    config: ConfigPolicy,
) -> EffectivePolicy {
    let host = resolve_with_fallback(
        doc,
        agent_id,
        PolicyValues {
            security: config.security,
            ask: config.ask,
            ..BUILT_IN
        },
    );
    combine(&host, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use Ask::*;
    use Security::*;

    fn doc(v: serde_json::Value) -> ApprovalsDocument {
        ApprovalsDocument::normalize(v).unwrap()
    }

    type Values = (Security, Ask, Security, bool);

    fn values(p: &EffectivePolicy) -> Values {
        let v = p.values;
        (v.security, v.ask, v.ask_fallback, v.auto_allow_skills)
    }

    #[test]
    fn precedence_per_field() {
        let d = doc(json!({"version": 1,
            "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "full", "autoAllowSkills": true},
            "agents": {
                "*": {"ask": "always", "autoAllowSkills": false},
                "main": {"security": "deny"},
                "full": {"security": "full", "ask": "off", "askFallback": "allowlist", "autoAllowSkills": true}}}));
        let cases: &[(&str, Values)] = &[
            ("main", (Deny, Always, Full, false)),
            ("other", (Allowlist, Always, Full, false)),
            ("full", (Full, Off, Allowlist, true)),
        ];
        for (agent, want) in cases {
            assert_eq!(values(&resolve(&d, agent)), *want, "{agent}");
        }
        let empty = ApprovalsDocument::default();
        assert_eq!(values(&resolve(&empty, "main")), (Full, Off, Deny, false));
        let only_defaults = doc(json!({"version": 1, "defaults": {"askFallback": "allowlist"}}));
        assert_eq!(
            values(&resolve(&only_defaults, "x")),
            (Full, Off, Allowlist, false)
        );
    }

    #[test]
    fn allowlist_is_wildcard_then_agent() {
        let d = doc(json!({"version": 1, "agents": {
            "main": {"allowlist": ["/b", "/c"]}, "*": {"allowlist": ["/a"]}, "x": {"allowlist": ["/z"]}}}));
        let patterns = |agent: &str| -> Vec<String> {
            resolve(&d, agent)
                .allowlist
                .iter()
                .map(|e| e.pattern.clone())
                .collect()
        };
        assert_eq!(patterns("main"), ["/a", "/b", "/c"]);
        assert_eq!(patterns("nobody"), ["/a"]);
        // OpenClaw concatenates `*` twice when asked for the wildcard itself.
        assert_eq!(patterns("*"), ["/a", "/a"]);
    }

    #[test]
    fn unreadable_store_fails_closed() {
        let read: Result<Option<ApprovalsDocument>, &str> = Err("corrupt");
        let p = resolve_read(read, "main");
        assert_eq!(values(&p), (Deny, Off, Deny, false));
        assert!(p.allowlist.is_empty());
        let missing: Result<Option<ApprovalsDocument>, &str> = Ok(None);
        assert_eq!(
            values(&resolve_read(missing, "main")),
            (Full, Off, Deny, false)
        );
    }

    #[test]
    fn config_combines_to_the_stricter() {
        let host = |security, ask, ask_fallback| EffectivePolicy {
            values: PolicyValues {
                security,
                ask,
                ask_fallback,
                auto_allow_skills: false,
            },
            allowlist: Vec::new(),
        };
        let cases = [
            // (host sec, host ask, host fallback, config sec, config ask) -> (sec, ask, fallback)
            (
                (Full, Off, Full),
                (Allowlist, OnMiss),
                (Allowlist, OnMiss, Allowlist),
            ),
            (
                (Allowlist, Always, Deny),
                (Full, Off),
                (Allowlist, Always, Deny),
            ),
            ((Deny, Off, Full), (Full, OnMiss), (Deny, OnMiss, Deny)),
            (
                (Full, OnMiss, Allowlist),
                (Full, Off),
                (Full, OnMiss, Allowlist),
            ),
        ];
        for ((hs, ha, hf), (cs, ca), want) in cases {
            let got = combine(
                &host(hs, ha, hf),
                ConfigPolicy {
                    security: cs,
                    ask: ca,
                },
            );
            assert_eq!(
                (got.values.security, got.values.ask, got.values.ask_fallback),
                want
            );
        }
    }

    #[test]
    fn config_values_are_the_document_fallbacks() {
        let d = doc(json!({"version": 1, "defaults": {"ask": "on-miss"}}));
        let p = effective_with_config(
            &d,
            "main",
            ConfigPolicy {
                security: Allowlist,
                ask: Off,
            },
        );
        assert_eq!(values(&p), (Allowlist, OnMiss, Deny, false));
    }
}
