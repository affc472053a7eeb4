//! The Sanctum posture of an OpenClaw gateway, judged from what its own `config.get`
//! (`runtimeConfig`, the effective config) and `plugins.list` say: every way the gateway
//! could run a command or a tool call without asking the guard is a [`Finding`]. Pure, so
//! the rules are table-tested; the approver fetches the two answers and the engine's
//! posture gate acts on the findings.
//!
//! Allow-list: each rule accepts the one spelling verified to be safe
//! (../shared/research/openclaw-gateway-door.md) and reports anything else.
//! What config cannot show is out of scope here and said so in SECURITY.md: a `--bind` flag
//! given to `openclaw gateway run` overrides the config without appearing in it.

use serde::Serialize;
use serde_json::Value;

/// The plugin that sends every tool call to the guard (`plugin/openclaw.plugin.json`).
pub const PLUGIN_ID: &str = "sanctum";

/// What the guard expects of the gateway it is the approver of.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The host of the guard's gateway url: a gateway bound to exactly this address (or to
    /// loopback) is reachable only where the guard reaches it.
    pub gateway_host: Option<String>,
}

/// One way around the guard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable name: `exec-host`, `exec-node`, `elevated`, `plugin`, `directives`,
    /// `gateway-exposed`, `config`.
    pub code: &'static str,
    /// What the config says and why it matters.
    pub detail: String,
}

fn finding(code: &'static str, detail: String) -> Finding {
    Finding { code, detail }
}

/// Every finding for a gateway whose `config.get` payload is `config` and whose
/// `plugins.list` payload is `plugins`.
pub fn assess(config: &Value, plugins: &Value, expect: &Expect) -> Vec<Finding> {
    let cfg = config
        .get("runtimeConfig")
        .or_else(|| config.get("config"))
        .unwrap_or(&Value::Null);
    let mut out = Vec::new();
    if !cfg.is_object() {
        out.push(finding(
            "config",
            "config.get returned no config: the posture cannot be checked".into(),
        ));
        return out;
    }
    let bound = cfg["tools"]["exec"]["node"]
        .as_str()
        .filter(|n| !n.is_empty());
    for (at, tools) in tool_sections(cfg) {
        exec_host(&at, tools, &mut out);
        exec_node(&at, tools, bound, &mut out);
        elevated(&at, tools, &mut out);
    }
    plugin(cfg, plugins, &mut out);
    directives(cfg, &mut out);
    exposure(cfg, expect, &mut out);
    out
}

/// `tools` and every agent's own `tools` (an agent may override the defaults).
fn tool_sections(cfg: &Value) -> Vec<(String, &Value)> {
    let mut out = vec![("tools".to_owned(), &cfg["tools"])];
    if let Some(entries) = cfg["agents"]["entries"].as_object() {
        for (name, a) in entries {
            if a.get("tools").is_some() {
                out.push((format!("agents.entries.{name}.tools"), &a["tools"]));
            }
        }
    }
    if let Some(list) = cfg["agents"]["list"].as_array() {
        for (i, a) in list.iter().enumerate() {
            if a.get("tools").is_some() {
                out.push((format!("agents.list[{i}].tools"), &a["tools"]));
            }
        }
    }
    if cfg["agents"]["defaults"].get("tools").is_some() {
        out.push((
            "agents.defaults.tools".into(),
            &cfg["agents"]["defaults"]["tools"],
        ));
    }
    out
}

/// Every exec must go to a node (the guard's node host decides it in `system.run`). The
/// top-level `tools.exec.host` must say so; an agent's section may only repeat it.
fn exec_host(at: &str, tools: &Value, out: &mut Vec<Finding>) {
    let host = &tools["exec"]["host"];
    let top = at == "tools";
    match host.as_str() {
        Some("node") => {}
        None if !top && host.is_null() => {}
        _ => out.push(finding(
            "exec-host",
            format!(
                "{at}.exec.host is {host}: execs would run on the gateway, without the guard's node"
            ),
        )),
    }
}

/// `tools.exec.node` binds execs to one node (the guard's node host): unbound, any node paired
/// later could take them. An agent's section may only repeat the same node.
fn exec_node(at: &str, tools: &Value, bound: Option<&str>, out: &mut Vec<Finding>) {
    let node = &tools["exec"]["node"];
    let ok = if at == "tools" {
        bound.is_some()
    } else {
        node.is_null() || (bound.is_some() && node.as_str() == bound)
    };
    if !ok {
        out.push(finding(
            "exec-node",
            format!(
                "{at}.exec.node is {node}: execs are not bound to the one node host the guard decides for"
            ),
        ));
    }
}

/// Elevated mode runs execs outside every approval; off unless set.
fn elevated(at: &str, tools: &Value, out: &mut Vec<Finding>) {
    let e = &tools["elevated"]["enabled"];
    if !(e.is_null() || *e == Value::Bool(false)) {
        out.push(finding(
            "elevated",
            format!("{at}.elevated.enabled is {e}: elevated execs skip every approval"),
        ));
    }
}

/// The guard's plugin must be enabled and running, or tool calls other than exec run
/// without asking.
fn plugin(cfg: &Value, plugins: &Value, out: &mut Vec<Finding>) {
    if cfg["plugins"]["entries"][PLUGIN_ID]["enabled"] == Value::Bool(false) {
        out.push(finding(
            "plugin",
            format!(
                "plugins.entries.{PLUGIN_ID}.enabled is false: tool calls run without the guard"
            ),
        ));
        return;
    }
    let listed = plugins["plugins"]
        .as_array()
        .and_then(|l| l.iter().find(|p| p["id"] == PLUGIN_ID));
    let Some(p) = listed else {
        out.push(finding(
            "plugin",
            format!("the {PLUGIN_ID} plugin is not installed: tool calls run without the guard"),
        ));
        return;
    };
    let state = p["runtime"]["state"].as_str().unwrap_or("unknown");
    if p["enabled"] != Value::Bool(true) || state != "active" {
        out.push(finding(
            "plugin",
            format!(
                "the {PLUGIN_ID} plugin is {} and {state}: tool calls run without the guard",
                if p["enabled"] == Value::Bool(true) {
                    "enabled"
                } else {
                    "disabled"
                }
            ),
        ));
    }
}

/// Chat directives (`/exec security=full ask=off` anywhere in a message) change exec
/// settings; `commands.allowFrom` naming nobody for every channel turns them into plain text.
fn directives(cfg: &Value, out: &mut Vec<Finding>) {
    let allow = &cfg["commands"]["allowFrom"];
    let nobody = |v: &Value| {
        v.as_array()
            .is_some_and(|l| !l.is_empty() && l.iter().all(|s| s == "<nobody>"))
    };
    let safe = allow
        .as_object()
        .is_some_and(|m| m.get("*").is_some_and(nobody) && m.values().all(nobody));
    if !safe {
        out.push(finding(
            "directives",
            format!(
                "commands.allowFrom is {allow}: chat directives can change exec settings (want {{\"*\":[\"<nobody>\"]}})"
            ),
        ));
    }
}

/// The gateway must listen only where the guard reaches it: loopback, or exactly the host of
/// the guard's gateway url. Tailscale serve or funnel publishes it elsewhere.
fn exposure(cfg: &Value, expect: &Expect, out: &mut Vec<Finding>) {
    let gw = &cfg["gateway"];
    let bind = gw["bind"].as_str().unwrap_or("loopback");
    let custom = gw["customBindHost"].as_str().map(str::trim);
    let ok = match bind {
        "loopback" => true,
        "custom" => custom.is_some_and(|h| {
            h != "0.0.0.0" && h != "::" && expect.gateway_host.as_deref() == Some(h)
        }),
        _ => false,
    };
    if !ok {
        let shown = match custom {
            Some(h) if bind == "custom" => format!("custom {h}"),
            _ => bind.to_owned(),
        };
        out.push(finding(
            "gateway-exposed",
            format!(
                "gateway.bind is {shown}: the gateway is reachable other than where the guard reaches it ({})",
                expect.gateway_host.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    let ts = gw["tailscale"]["mode"].as_str().unwrap_or("off");
    if ts != "off" {
        out.push(finding(
            "gateway-exposed",
            format!("gateway.tailscale.mode is {ts}: the gateway is published on the tailnet"),
        ));
    }
}

#[cfg(test)]
mod tests;
