use super::*;
use serde_json::json;

/// The Sanctum posture as the compose deployment sets it, with the plugin loaded.
fn safe() -> (Value, Value) {
    let cfg = json!({"runtimeConfig": {
        "gateway": {"bind": "custom", "customBindHost": "172.30.75.4", "port": 18789},
        "tools": {"exec": {"host": "node", "node": "sanctum-node"}, "elevated": {"enabled": false}},
        "commands": {"allowFrom": {"*": ["<nobody>"]}},
        "plugins": {"entries": {"sanctum": {"enabled": true}}}
    }});
    let plugins = json!({"plugins": [
        {"id": "browser", "enabled": true, "runtime": {"state": "active"}},
        {"id": "sanctum", "enabled": true, "runtime": {"state": "active"}}
    ]});
    (cfg, plugins)
}

fn expect() -> Expect {
    Expect {
        gateway_host: Some("172.30.75.4".into()),
    }
}

/// Sets `path` (dot-separated, under runtimeConfig) to `v` (null removes it).
fn set(cfg: &mut Value, path: &str, v: Value) {
    let mut at = &mut cfg["runtimeConfig"];
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        at = &mut at[*p];
    }
    let last = parts[parts.len() - 1];
    if v.is_null() {
        if let Some(m) = at.as_object_mut() {
            m.remove(last);
        }
    } else {
        at[last] = v;
    }
}

fn codes(cfg: &Value, plugins: &Value) -> Vec<&'static str> {
    assess(cfg, plugins, &expect())
        .iter()
        .map(|f| f.code)
        .collect()
}

#[test]
fn the_sanctum_posture_has_no_finding() {
    let (cfg, plugins) = safe();
    assert_eq!(assess(&cfg, &plugins, &expect()), vec![]);
    // Loopback (the default) is as narrow as it gets.
    let mut cfg = cfg;
    set(&mut cfg, "gateway.bind", Value::Null);
    set(&mut cfg, "gateway.customBindHost", Value::Null);
    assert_eq!(codes(&cfg, &plugins), Vec::<&str>::new());
    set(&mut cfg, "gateway.bind", json!("loopback"));
    assert_eq!(codes(&cfg, &plugins), Vec::<&str>::new());
    // An agent may repeat the exec settings.
    set(
        &mut cfg,
        "agents.entries.main.tools.exec",
        json!({"host":"node","node":"sanctum-node"}),
    );
    assert_eq!(codes(&cfg, &plugins), Vec::<&str>::new());
    // Elevated unset is off.
    set(&mut cfg, "tools.elevated", Value::Null);
    assert_eq!(codes(&cfg, &plugins), Vec::<&str>::new());
}

/// Each change that lets OpenClaw act without the guard, and the finding it must give.
#[test]
fn every_way_around_the_guard_is_found() {
    let cases: &[(&str, Value, &str)] = &[
        ("tools.exec.host", json!("gateway"), "exec-host"),
        ("tools.exec.host", json!("sandbox"), "exec-host"),
        ("tools.exec.host", json!("auto"), "exec-host"),
        ("tools.exec.host", json!("Node"), "exec-host"),
        ("tools.exec.host", json!(["node"]), "exec-host"),
        ("tools.exec.host", Value::Null, "exec-host"),
        ("tools.exec.node", Value::Null, "exec-node"),
        ("tools.exec.node", json!(""), "exec-node"),
        ("tools.exec.node", json!(["sanctum-node"]), "exec-node"),
        (
            "agents.entries.main.tools.exec.node",
            json!("laptop"),
            "exec-node",
        ),
        (
            "agents.entries.ops.tools.exec.node",
            json!("other-node"),
            "exec-node",
        ),
        (
            "agents.defaults.tools.exec.node",
            json!("Sanctum-Node"),
            "exec-node",
        ),
        (
            "agents.entries.main.tools.exec.host",
            json!("gateway"),
            "exec-host",
        ),
        (
            "agents.defaults.tools.exec.host",
            json!("gateway"),
            "exec-host",
        ),
        ("tools.elevated.enabled", json!(true), "elevated"),
        ("tools.elevated.enabled", json!("true"), "elevated"),
        ("tools.elevated.enabled", json!(1), "elevated"),
        (
            "agents.entries.ops.tools.elevated.enabled",
            json!(true),
            "elevated",
        ),
        ("plugins.entries.sanctum.enabled", json!(false), "plugin"),
        ("commands.allowFrom", Value::Null, "directives"),
        ("commands.allowFrom", json!({}), "directives"),
        ("commands.allowFrom", json!({"*": []}), "directives"),
        ("commands.allowFrom", json!({"*": ["*"]}), "directives"),
        (
            "commands.allowFrom",
            json!({"*": ["<nobody>", "alice"]}),
            "directives",
        ),
        (
            "commands.allowFrom",
            json!({"webchat": ["<nobody>"]}),
            "directives",
        ),
        (
            "commands.allowFrom",
            json!({"*": ["<nobody>"], "telegram": ["12345"]}),
            "directives",
        ),
        ("commands.allowFrom", json!(["<nobody>"]), "directives"),
        ("commands.allowFrom", json!({"*": "<nobody>"}), "directives"),
        ("gateway.bind", json!("lan"), "gateway-exposed"),
        ("gateway.bind", json!("auto"), "gateway-exposed"),
        ("gateway.bind", json!("tailnet"), "gateway-exposed"),
        ("gateway.bind", json!("LOOPBACK"), "gateway-exposed"),
        (
            "gateway.customBindHost",
            json!("0.0.0.0"),
            "gateway-exposed",
        ),
        (
            "gateway.customBindHost",
            json!("172.30.77.4"),
            "gateway-exposed",
        ),
        ("gateway.customBindHost", Value::Null, "gateway-exposed"),
        ("gateway.tailscale.mode", json!("serve"), "gateway-exposed"),
        ("gateway.tailscale.mode", json!("funnel"), "gateway-exposed"),
    ];
    for (path, v, want) in cases {
        let (mut cfg, plugins) = safe();
        set(&mut cfg, path, v.clone());
        assert_eq!(codes(&cfg, &plugins), vec![*want], "{path} = {v}");
    }
}

#[test]
fn the_plugin_must_be_installed_enabled_and_running() {
    let (cfg, _) = safe();
    let cases = [
        json!({"plugins": []}),
        json!({}),
        json!({"plugins": [{"id": "sanctum", "enabled": false, "runtime": {"state": "unloaded"}}]}),
        json!({"plugins": [{"id": "sanctum", "enabled": true, "runtime": {"state": "unloaded"}}]}),
        json!({"plugins": [{"id": "sanctum", "enabled": true, "runtime": {"state": "error"}}]}),
        json!({"plugins": [{"id": "sanctum", "enabled": true}]}),
        json!({"plugins": [{"id": "sanctum-guard", "enabled": true, "runtime": {"state": "active"}}]}),
    ];
    for p in cases {
        assert_eq!(codes(&cfg, &p), vec!["plugin"], "{p}");
    }
}

#[test]
fn a_missing_config_is_a_finding_not_a_pass() {
    let (_, plugins) = safe();
    for cfg in [
        json!({}),
        json!({"runtimeConfig": null}),
        json!({"runtimeConfig": "x"}),
        json!(null),
    ] {
        assert_eq!(codes(&cfg, &plugins), vec!["config"], "{cfg}");
    }
    // `config` stands in when an older gateway has no runtimeConfig.
    let (safe_cfg, _) = safe();
    let old = json!({"config": safe_cfg["runtimeConfig"].clone()});
    assert_eq!(codes(&old, &plugins), Vec::<&str>::new());
}

#[test]
fn several_findings_are_all_reported() {
    let (mut cfg, plugins) = safe();
    set(&mut cfg, "tools.exec.host", json!("gateway"));
    set(&mut cfg, "gateway.bind", json!("lan"));
    set(&mut cfg, "commands", Value::Null);
    assert_eq!(
        codes(&cfg, &plugins),
        vec!["exec-host", "directives", "gateway-exposed"]
    );
    let f = assess(&cfg, &plugins, &expect());
    assert!(f[0].detail.contains("\"gateway\""), "{}", f[0].detail);
    // No exec settings at all: neither a node host nor a bound node.
    let (mut cfg, plugins) = safe();
    set(&mut cfg, "tools.exec", Value::Null);
    assert_eq!(codes(&cfg, &plugins), vec!["exec-host", "exec-node"]);
    // An agent in `agents.list` is judged like one in `agents.entries`.
    let (mut cfg, plugins) = safe();
    cfg["runtimeConfig"]["agents"]["list"] =
        json!([{"id": "ops", "tools": {"exec": {"host": "gateway", "node": "laptop"}}}]);
    assert_eq!(codes(&cfg, &plugins), vec!["exec-host", "exec-node"]);
}
