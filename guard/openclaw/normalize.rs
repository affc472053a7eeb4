//! OpenClaw's normalisation of an approvals document (`normalizeExecApprovalsInternal` in
//! src/infra/exec-approvals-config.ts), step for step: what `openclaw approvals set` stores and
//! what every reader sees.

use super::document::{
    AgentPolicy, AllowlistEntry, ApprovalsDocument, Ask, DocumentError, McpToolGrant, PolicyFields,
    Security, SocketSection, DEFAULT_AGENT_ID, SOURCE_ALLOW_ALWAYS,
};
use serde_json::{Map, Value};

/// `normalizeExecApprovals`: version 1 required; socket trimmed; defaults sanitised;
/// `agents.default` merged into `agents.main`; each agent normalised; unknown keys kept.
pub(super) fn normalize_document(value: Value) -> Result<ApprovalsDocument, DocumentError> {
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
    Ok(ApprovalsDocument {
        version: 1,
        socket,
        defaults,
        agents,
        extra: top.into_iter().collect(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openclaw::document::*;
    use serde_json::json;

    fn doc(value: Value) -> ApprovalsDocument {
        ApprovalsDocument::normalize(value).unwrap()
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
}
