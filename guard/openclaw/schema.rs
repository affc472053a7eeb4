//! OpenClaw's persisted-read schema (`persistedExecApprovalsSchema`, zod): a SQLite row that
//! fails it is treated by OpenClaw as malformed and resolves to deny. The guard does the same.

use super::document::{Ask, Security, SOURCE_ALLOW_ALWAYS};
use serde_json::Value;

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
    use crate::openclaw::document::*;
    use serde_json::json;

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
