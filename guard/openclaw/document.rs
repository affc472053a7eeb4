//! The approvals document (`exec-approvals.json` or the SQLite `raw_json`), normalised exactly
//! as OpenClaw's `normalizeExecApprovals` does (src/infra/exec-approvals-config.ts), and the
//! stricter schema check OpenClaw applies when it reads a persisted SQLite row.
//!
//! Keys OpenClaw does not know are kept at every level so a read-modify-write by the guard
//! loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
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
        validate_persisted(&value).map_err(DocumentError::Schema)?;
        Self::normalize(value)
    }

    /// Parses and normalises a document leniently, as `openclaw approvals set` does: invalid
    /// enum values and malformed entries are dropped. `version` must still be 1.
    pub fn parse_lenient(raw: &str) -> Result<Self, DocumentError> {
        Self::normalize(serde_json::from_str(raw)?)
    }

    /// OpenClaw's `normalizeExecApprovals` over a JSON value.
    pub fn normalize(value: Value) -> Result<Self, DocumentError> {
        let Value::Object(mut top) = value else {
            return Err(DocumentError::NotAnObject);
        };
        if top.remove("version") != Some(Value::from(1)) {
            return Err(DocumentError::Version);
        }
        let socket = normalize_socket(top.remove("socket"));
        let defaults = sanitize_policy(top.get("defaults").and_then(Value::as_object));
        top.remove("defaults");
        let mut agents_raw = match top.remove("agents") {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        if let Some(legacy) = agents_raw.remove("default") {
            if truthy(&legacy) {
                let merged = match agents_raw.remove(DEFAULT_AGENT_ID) {
                    Some(main) if truthy(&main) => merge_legacy_agent(main, legacy),
                    _ => legacy,
                };
                agents_raw.insert(DEFAULT_AGENT_ID.to_string(), merged);
            }
        }
        let agents = agents_raw
            .into_iter()
            .filter_map(|(key, agent)| match agent {
                Value::Object(map) => Some((key, normalize_agent(map))),
                _ => None,
            })
            .collect();
        Ok(Self {
            version: 1,
            socket,
            defaults,
            agents,
            extra: top.into_iter().collect(),
        })
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

/// JS truthiness of a JSON value (objects and arrays are always truthy).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn trimmed_string(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

fn normalize_socket(value: Option<Value>) -> SocketSection {
    let map = match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    // OpenClaw rebuilds `socket` from path and token only; other keys are kept for us.
    let path = trimmed_string(map.get("path"));
    let token = trimmed_string(map.get("token"));
    let extra = map
        .into_iter()
        .filter(|(k, _)| k != "path" && k != "token")
        .collect();
    SocketSection { path, token, extra }
}

/// `sanitizeExecApprovalPolicy`: trimmed exact enum values, anything else dropped.
fn sanitize_policy(map: Option<&Map<String, Value>>) -> PolicyFields {
    let text = |key: &str| map.and_then(|m| m.get(key)).and_then(Value::as_str);
    PolicyFields {
        security: text("security").and_then(|s| Security::parse(s.trim())),
        ask: text("ask").and_then(|s| Ask::parse(s.trim())),
        ask_fallback: text("askFallback").and_then(|s| Security::parse(s.trim())),
        auto_allow_skills: map
            .and_then(|m| m.get("autoAllowSkills"))
            .and_then(Value::as_bool),
    }
}

const POLICY_KEYS: [&str; 4] = ["security", "ask", "askFallback", "autoAllowSkills"];

fn normalize_agent(mut map: Map<String, Value>) -> AgentPolicy {
    let policy = sanitize_policy(Some(&map));
    for key in POLICY_KEYS {
        map.remove(key);
    }
    let allowlist = match map.remove("allowlist") {
        Some(Value::Array(items)) => normalize_allowlist(items),
        _ => None,
    };
    let mcp_tools = match map.remove("mcpTools") {
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .filter_map(|item| serde_json::from_value::<McpToolGrant>(item).ok())
                .collect(),
        ),
        _ => None,
    };
    AgentPolicy {
        policy,
        allowlist,
        mcp_tools,
        extra: map.into_iter().collect(),
    }
}

/// `coerceAllowlistEntries` + `ensureAllowlistIds` + `stripAllowlistCommandText`.
fn normalize_allowlist(items: Vec<Value>) -> Option<Vec<AllowlistEntry>> {
    if items.is_empty() {
        return Some(Vec::new());
    }
    let entries: Vec<AllowlistEntry> = items.into_iter().filter_map(normalize_entry).collect();
    // OpenClaw drops the key when coercion removed every entry.
    (!entries.is_empty()).then_some(entries)
}

fn normalize_entry(item: Value) -> Option<AllowlistEntry> {
    let mut map = match item {
        Value::String(s) => {
            let trimmed = s.trim();
            if trimmed.is_empty() {
                return None;
            }
            let mut map = Map::new();
            map.insert("pattern".into(), Value::String(trimmed.to_string()));
            map
        }
        Value::Object(map) => map,
        _ => return None,
    };
    let pattern = match map.remove("pattern") {
        Some(Value::String(p)) if !p.trim().is_empty() => p,
        _ => return None,
    };
    let id = match map.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => id,
        _ => uuid::Uuid::new_v4().to_string(),
    };
    if map.get("commandText").is_some_and(Value::is_string) {
        map.remove("commandText");
    }
    let take_string = |map: &mut Map<String, Value>, key: &str| match map.remove(key) {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            map.insert(key.to_string(), other);
            None
        }
        None => None,
    };
    let arg_pattern = take_string(&mut map, "argPattern");
    let source = match map.remove("source") {
        Some(Value::String(s)) if s == SOURCE_ALLOW_ALWAYS => Some(s),
        _ => None,
    };
    let last_used_at = match map.remove("lastUsedAt") {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    };
    let last_used_command = take_string(&mut map, "lastUsedCommand");
    let last_resolved_path = take_string(&mut map, "lastResolvedPath");
    Some(AllowlistEntry {
        id,
        pattern,
        arg_pattern,
        source,
        last_used_at,
        last_used_command,
        last_resolved_path,
        extra: map.into_iter().collect(),
    })
}

/// Lower-cased trimmed pattern, the dedupe key of `mergeLegacyAgent`.
fn legacy_pattern_key(entry: &Value) -> Option<String> {
    let pattern = entry.get("pattern")?.as_str()?.trim();
    (!pattern.is_empty()).then(|| pattern.to_lowercase())
}

/// `mergeLegacyAgent(current = agents.main, legacy = agents.default)` on raw values.
fn merge_legacy_agent(current: Value, legacy: Value) -> Value {
    let current = match current {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let legacy = match legacy {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let list = |m: &Map<String, Value>, key: &str| -> Vec<Value> {
        m.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut seen = std::collections::HashSet::new();
    let mut allowlist = Vec::new();
    for entry in list(&current, "allowlist")
        .into_iter()
        .chain(list(&legacy, "allowlist"))
    {
        let Some(pattern_key) = legacy_pattern_key(&entry) else {
            continue;
        };
        let arg = entry
            .get("argPattern")
            .and_then(Value::as_str)
            .map_or("", str::trim);
        if seen.insert(format!("{pattern_key}\0{arg}")) {
            allowlist.push(entry);
        }
    }
    let current_mcp = list(&current, "mcpTools");
    let legacy_mcp = list(&legacy, "mcpTools");
    let has_mcp = current.contains_key("mcpTools") || legacy.contains_key("mcpTools");
    let mut merged = legacy.clone();
    for (k, v) in &current {
        merged.insert(k.clone(), v.clone());
    }
    for key in POLICY_KEYS {
        let chosen = current
            .get(key)
            .filter(|v| !v.is_null())
            .or_else(|| legacy.get(key).filter(|v| !v.is_null()));
        match chosen {
            Some(v) => merged.insert(key.to_string(), v.clone()),
            None => merged.remove(key),
        };
    }
    if allowlist.is_empty() {
        merged.remove("allowlist");
    } else {
        merged.insert("allowlist".into(), Value::Array(allowlist));
    }
    if has_mcp {
        let same = |a: &Value, b: &Value| {
            a.get("server") == b.get("server") && a.get("tool") == b.get("tool")
        };
        let mut tools = current_mcp.clone();
        tools.extend(
            legacy_mcp
                .into_iter()
                .filter(|g| !current_mcp.iter().any(|c| same(c, g))),
        );
        merged.insert("mcpTools".into(), Value::Array(tools));
    } else {
        merged.remove("mcpTools");
    }
    Value::Object(merged)
}

/// OpenClaw's persisted-read schema (`persistedExecApprovalsSchema`, zod). Returns the first
/// offending field's location; values are never echoed (they may hold the token).
pub fn validate_persisted(value: &Value) -> Result<(), String> {
    let top = value.as_object().ok_or("document: expected an object")?;
    if top.get("version") != Some(&Value::from(1)) {
        return Err("version: expected a supported value".into());
    }
    if let Some(socket) = top.get("socket") {
        let socket = socket.as_object().ok_or("socket: expected an object")?;
        for key in ["path", "token"] {
            if socket.get(key).is_some_and(|v| !v.is_string()) {
                return Err(format!("socket.{key}: expected a string"));
            }
        }
    }
    if let Some(defaults) = top.get("defaults") {
        check_policy("defaults", defaults)?;
    }
    if let Some(agents) = top.get("agents") {
        let agents = agents.as_object().ok_or("agents: expected an object")?;
        if agents.contains_key("__proto__") {
            return Err("agents: invalid value".into());
        }
        for (index, (_, agent)) in agents.iter().enumerate() {
            check_agent(&format!("agents entry #{}", index + 1), agent)?;
        }
    }
    Ok(())
}

fn check_policy(at: &str, value: &Value) -> Result<(), String> {
    let map = value
        .as_object()
        .ok_or(format!("{at}: expected an object"))?;
    let check = |key: &str, ok: fn(&str) -> bool| match map.get(key) {
        None => Ok(()),
        Some(Value::String(s)) if ok(s) => Ok(()),
        Some(_) => Err(format!("{at}.{key}: expected a supported value")),
    };
    check("security", |s| Security::parse(s).is_some())?;
    check("ask", |s| Ask::parse(s).is_some())?;
    check("askFallback", |s| Security::parse(s).is_some())?;
    if map.get("autoAllowSkills").is_some_and(|v| !v.is_boolean()) {
        return Err(format!("{at}.autoAllowSkills: expected a boolean"));
    }
    Ok(())
}

fn check_agent(at: &str, value: &Value) -> Result<(), String> {
    check_policy(at, value)?;
    let map = value
        .as_object()
        .ok_or(format!("{at}: expected an object"))?;
    if let Some(list) = map.get("allowlist") {
        let list = list
            .as_array()
            .ok_or(format!("{at}.allowlist: expected an array"))?;
        for (i, entry) in list.iter().enumerate() {
            check_entry(entry).map_err(|why| format!("{at}.allowlist[{i}]{why}"))?;
        }
    }
    if let Some(tools) = map.get("mcpTools") {
        let tools = tools
            .as_array()
            .ok_or(format!("{at}.mcpTools: expected an array"))?;
        for (i, grant) in tools.iter().enumerate() {
            check_grant(grant).map_err(|why| format!("{at}.mcpTools[{i}]{why}"))?;
        }
    }
    Ok(())
}

fn non_blank(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
}

fn check_entry(entry: &Value) -> Result<(), String> {
    let map = match entry {
        Value::String(s) if !s.trim().is_empty() => return Ok(()),
        Value::Object(map) => map,
        _ => {
            return Err(
                ": expected a non-empty string or an object with a non-empty pattern".into(),
            )
        }
    };
    if !non_blank(map.get("pattern")) {
        return Err(".pattern: expected a non-empty string".into());
    }
    for key in [
        "id",
        "source",
        "commandText",
        "argPattern",
        "lastUsedCommand",
        "lastResolvedPath",
    ] {
        if map.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!(".{key}: expected a string"));
        }
    }
    if map.get("lastUsedAt").is_some_and(|v| !v.is_number()) {
        return Err(".lastUsedAt: expected a finite number".into());
    }
    Ok(())
}

fn check_grant(grant: &Value) -> Result<(), String> {
    let map = grant.as_object().ok_or(": expected an object")?;
    for key in ["server", "tool"] {
        if !non_blank(map.get(key)) {
            return Err(format!(".{key}: expected a non-empty string"));
        }
    }
    if map.get("source").and_then(Value::as_str) != Some(SOURCE_ALLOW_ALWAYS) {
        return Err(".source: expected a supported value".into());
    }
    let non_negative = |v: &Value| v.as_f64().is_some_and(|f| f >= 0.0);
    if !map.get("addedAt").is_some_and(non_negative) {
        return Err(".addedAt: expected a finite number".into());
    }
    if map.get("lastUsedAt").is_some_and(|v| !non_negative(v)) {
        return Err(".lastUsedAt: expected a finite number".into());
    }
    Ok(())
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
    fn invalid_enum_values_are_dropped_and_valid_ones_trimmed() {
        let d = doc(json!({"version": 1,
            "defaults": {"security": "bogus", "ask": " on-miss ", "askFallback": 3, "autoAllowSkills": "yes"},
            "agents": {"a": {"security": "FULL", "ask": "always", "askFallback": "allowlist"}}}));
        assert_eq!(
            d.defaults,
            PolicyFields {
                ask: Some(Ask::OnMiss),
                ..Default::default()
            }
        );
        let a = &d.agents["a"].policy;
        assert_eq!(
            (a.security, a.ask, a.ask_fallback),
            (None, Some(Ask::Always), Some(Security::Allowlist))
        );
    }

    #[test]
    fn allowlist_entries_are_coerced() {
        let d = doc(json!({"version": 1, "agents": {"a": {"allowlist": [
            "  /usr/bin/ls ", "", 5, {"pattern": "  "},
            {"pattern": "/bin/x", "id": "keep", "commandText": "x --y", "source": "manual", "zz": [1]},
            {"pattern": "/bin/y", "source": "allow-always", "argPattern": "^a$", "lastUsedAt": 17}
        ]}}}));
        let list = d.agents["a"].allowlist.as_ref().unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[0].pattern(), "/usr/bin/ls");
        assert_eq!(
            uuid::Uuid::parse_str(&list[0].id)
                .unwrap()
                .get_version_num(),
            4
        );
        assert_eq!(list[1].id, "keep");
        assert!(!list[1].source_allow_always() && list[1].source.is_none());
        assert!(!list[1].extra.contains_key("commandText"));
        assert_eq!(list[1].extra["zz"], json!([1]));
        assert!(list[2].source_allow_always());
        assert_eq!(list[2].arg_pattern(), Some("^a$"));
        // Every entry invalid: the key goes away; an empty list stays empty.
        let d = doc(
            json!({"version": 1, "agents": {"a": {"allowlist": [""]}, "b": {"allowlist": []}}}),
        );
        assert!(d.agents["a"].allowlist.is_none());
        assert_eq!(d.agents["b"].allowlist.as_deref(), Some(&[][..]));
    }

    #[test]
    fn legacy_default_agent_merges_into_main() {
        let d = doc(json!({"version": 1, "agents": {
            "default": {"security": "full", "ask": "off", "allowlist": [{"pattern": "/usr/bin/git", "id": "old"}, {"pattern": "/bin/cat"}],
                        "mcpTools": [{"server": "s", "tool": "t", "source": "allow-always", "addedAt": 1}], "legacyOnly": 1},
            "main": {"ask": "always", "allowlist": [{"pattern": "/USR/bin/git", "id": "new"}], "mainOnly": 2}}}));
        assert!(!d.agents.contains_key("default"));
        let main = &d.agents["main"];
        assert_eq!(main.policy.security, Some(Security::Full));
        assert_eq!(main.policy.ask, Some(Ask::Always));
        let ids: Vec<&str> = main
            .allowlist
            .as_ref()
            .unwrap()
            .iter()
            .map(|e| e.pattern())
            .collect();
        assert_eq!(ids, ["/USR/bin/git", "/bin/cat"]);
        assert_eq!(main.mcp_tools.as_ref().unwrap().len(), 1);
        assert_eq!(main.extra["legacyOnly"], json!(1));
        assert_eq!(main.extra["mainOnly"], json!(2));
        // Without `main`, `default` is simply renamed.
        let d = doc(json!({"version": 1, "agents": {"default": {"security": "deny"}}}));
        assert_eq!(d.agents["main"].policy.security, Some(Security::Deny));
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

    #[test]
    fn persisted_schema_rejects_what_openclaw_rejects() {
        for bad in [
            json!({"version": 1, "defaults": {"security": "bogus"}}),
            json!({"version": 1, "defaults": {"ask": " off"}}),
            json!({"version": 1, "defaults": {"security": null}}),
            json!({"version": 1, "agents": {"a": {"allowlist": [""]}}}),
            json!({"version": 1, "agents": {"a": {"allowlist": [{"pattern": "/x", "lastUsedAt": "1"}]}}}),
            json!({"version": 1, "agents": {"a": {"mcpTools": [{"server": "s", "tool": "t", "source": "x", "addedAt": 1}]}}}),
            json!({"version": 1, "agents": {"a": "full"}}),
            json!({"version": 1, "socket": {"token": 5}}),
            json!({"version": 2}),
        ] {
            let raw = bad.to_string();
            assert!(
                matches!(
                    ApprovalsDocument::parse_persisted(&raw),
                    Err(DocumentError::Schema(_))
                ),
                "{raw}"
            );
        }
        let token_doc =
            r#"{"version":1,"socket":{"token":"s3cret-tok"},"defaults":{"ask":"nope"}}"#;
        let err = ApprovalsDocument::parse_persisted(token_doc).unwrap_err();
        assert!(!err.to_string().contains("s3cret") && !err.to_string().contains("nope"));
    }
}
