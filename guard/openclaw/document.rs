//! The approvals document model (`exec-approvals.json` or the SQLite `raw_json`): the typed
//! shape every other module sees, its parsers and its OpenClaw-compatible serialisation.
//! Normalisation lives in `normalize`, the persisted-read schema check in `schema`.
//!
//! Keys OpenClaw does not know are kept at every level so a read-modify-write by the guard
//! loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::collections::BTreeMap;

/// Why a document was rejected. Callers fail closed on any of these.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("approvals document is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("approvals document is not a JSON object")]
    NotAnObject,
    #[error("approvals document version must be 1")]
    Version,
    /// The persisted-schema check failed; the text names the field, never its value.
    #[error("approvals document is malformed: {0}")]
    Schema(String),
}

/// `security` (and `askFallback`) values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    Deny,
    Allowlist,
    Full,
}

impl Security {
    /// Exact OpenClaw spelling; anything else is not a security value.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "deny" => Some(Self::Deny),
            "allowlist" => Some(Self::Allowlist),
            "full" => Some(Self::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Allowlist => "allowlist",
            Self::Full => "full",
        }
    }

    /// OpenClaw's `minSecurity`: `deny` < `allowlist` < `full`.
    pub fn stricter(self, other: Self) -> Self {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::Deny => 0,
            Self::Allowlist => 1,
            Self::Full => 2,
        }
    }
}

/// `ask` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ask {
    Off,
    OnMiss,
    Always,
}

impl Ask {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(Self::Off),
            "on-miss" => Some(Self::OnMiss),
            "always" => Some(Self::Always),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::OnMiss => "on-miss",
            Self::Always => "always",
        }
    }

    /// OpenClaw's `maxAsk`: the one that asks more often.
    pub fn stricter(self, other: Self) -> Self {
        if self.rank() >= other.rank() {
            self
        } else {
            other
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::Off => 0,
            Self::OnMiss => 1,
            Self::Always => 2,
        }
    }
}

/// `socket` section: where the approvals socket listens and its shared token.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SocketSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The four policy fields shared by `defaults` and each agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<Security>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask: Option<Ask>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask_fallback: Option<Security>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_allow_skills: Option<bool>,
}

/// One allowlist entry. `source` survives only as `"allow-always"`. Fields are declared in
/// OpenClaw's schema order, the order it re-serialises a document in, so a document the guard
/// writes is byte-stable when OpenClaw reads and re-saves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowlistEntry {
    pub pattern: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arg_pattern: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_resolved_path: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `source` value of a persisted human grant.
pub const SOURCE_ALLOW_ALWAYS: &str = "allow-always";

impl AllowlistEntry {
    /// The executable glob (path or bare name), as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The optional regex (or generated hash) over argv[1..].
    pub fn arg_pattern(&self) -> Option<&str> {
        self.arg_pattern.as_deref()
    }

    /// True for entries a human created with an `allow-always` decision.
    pub fn source_allow_always(&self) -> bool {
        self.source.as_deref() == Some(SOURCE_ALLOW_ALWAYS)
    }
}

/// A persisted `allow-always` grant for an MCP tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolGrant {
    pub server: String,
    pub tool: String,
    pub source: String,
    pub added_at: Number,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Number>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One `agents.<id>` (or `agents["*"]`) section.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPolicy {
    #[serde(flatten)]
    pub policy: PolicyFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowlist: Option<Vec<AllowlistEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_tools: Option<Vec<McpToolGrant>>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The whole document, always `version: 1`. Built only through [`ApprovalsDocument::normalize`]
/// and its parsers (no `Deserialize`), so every instance is normalised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalsDocument {
    pub version: u32,
    pub socket: SocketSection,
    pub defaults: PolicyFields,
    pub agents: BTreeMap<String, AgentPolicy>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Default for ApprovalsDocument {
    fn default() -> Self {
        Self {
            version: 1,
            socket: SocketSection::default(),
            defaults: PolicyFields::default(),
            agents: BTreeMap::new(),
            extra: BTreeMap::new(),
        }
    }
}

/// Agent id OpenClaw folds the legacy `agents.default` into.
pub const DEFAULT_AGENT_ID: &str = "main";
/// Agent key whose settings apply to every agent.
pub const WILDCARD_AGENT: &str = "*";

impl ApprovalsDocument {
    /// Parses a persisted document (SQLite `raw_json` or the JSON file) with OpenClaw's read
    /// schema, then normalises it. Any schema violation is an error: the caller fails closed.
    pub fn parse_persisted(raw: &str) -> Result<Self, DocumentError> {
        let value: Value = serde_json::from_str(raw)?;
        super::schema::validate_persisted(&value).map_err(DocumentError::Schema)?;
        Self::normalize(value)
    }

    /// Parses and normalises a document leniently, as `openclaw approvals set` does: invalid
    /// enum values and malformed entries are dropped. `version` must still be 1.
    pub fn parse_lenient(raw: &str) -> Result<Self, DocumentError> {
        Self::normalize(serde_json::from_str(raw)?)
    }

    /// OpenClaw's `normalizeExecApprovals` over a JSON value.
    pub fn normalize(value: Value) -> Result<Self, DocumentError> {
        super::normalize::normalize_document(value)
    }

    /// Serialises as OpenClaw does: `JSON.stringify(doc, null, 2) + "\n"`.
    pub fn to_json_pretty(&self) -> Result<String, DocumentError> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

    /// The socket token, trimmed, if one is stored.
    pub fn socket_token(&self) -> Option<&str> {
        self.socket
            .token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }

    /// Total number of allowlist entries over every agent (the SQLite projection column).
    pub fn allowlist_count(&self) -> usize {
        self.agents
            .values()
            .map(|a| a.allowlist.as_ref().map_or(0, Vec::len))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(value: Value) -> ApprovalsDocument {
        ApprovalsDocument::normalize(value).unwrap()
    }

    #[test]
    fn version_must_be_one() {
        for v in [json!({}), json!({"version": 2}), json!({"version": "1"})] {
            assert!(matches!(
                ApprovalsDocument::normalize(v),
                Err(DocumentError::Version)
            ));
        }
        assert!(matches!(
            ApprovalsDocument::normalize(json!([1])),
            Err(DocumentError::NotAnObject)
        ));
    }
    #[test]
    fn unknown_keys_round_trip() {
        let input = json!({"version": 1, "top": {"x": [1, 2]}, "socket": {"path": " /s ", "token": " t ", "more": true},
            "defaults": {"security": "deny"}, "agents": {"a": {"other": "v", "allowlist": [{"pattern": "/p", "id": "i", "note": 1}]}}});
        let d = doc(input);
        assert_eq!(d.socket.path.as_deref(), Some("/s"));
        assert_eq!(d.socket_token(), Some("t"));
        let again = ApprovalsDocument::parse_persisted(&d.to_json_pretty().unwrap()).unwrap();
        assert_eq!(again, d);
        assert_eq!(again.extra["top"], json!({"x": [1, 2]}));
        assert_eq!(again.socket.extra["more"], json!(true));
    }
}
