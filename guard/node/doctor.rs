//! `doctor`'s look at the OpenClaw side of a node deployment: every agent exec must go to this
//! node (`tools.exec.host = "node"`, bound with `tools.exec.node`), with elevated exec and the
//! OpenClaw sandbox off (a sandboxed session stays in OpenClaw's sandbox whatever the host,
//! docs/openclaw-linux-exec.md §B). Findings are warnings: the config may be elsewhere.

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One check: fine, or a warning saying what to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub ok: bool,
    pub text: String,
}

/// What doctor found in OpenClaw's config.
#[derive(Debug, Clone, Serialize)]
pub struct OpenClawSide {
    pub config: PathBuf,
    pub node_id: Option<String>,
    /// Set when the file could not be read or parsed.
    pub error: Option<String>,
    pub findings: Vec<Finding>,
}

fn ok(text: String) -> Finding {
    Finding { ok: true, text }
}

fn warn(text: String) -> Finding {
    Finding { ok: false, text }
}

fn s(v: &Value) -> Option<&str> {
    v.as_str().map(str::trim)
}

/// The checks over a parsed config; `node_id` is this node's id when it has one.
pub fn check_config(cfg: &Value, node_id: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let exec = &cfg["tools"]["exec"];
    match s(&exec["host"]) {
        Some("node") => out.push(ok("tools.exec.host is \"node\"".into())),
        other => out.push(warn(format!(
            "tools.exec.host is {}: agent execs do not all reach the guard's node (set \"node\")",
            other.map_or("unset".into(), |h| format!("{h:?}"))
        ))),
    }
    match (s(&exec["node"]), node_id) {
        (None, _) | (Some(""), _) => out.push(warn(
            "tools.exec.node is unset: bind it to this node's id".into(),
        )),
        (Some(n), Some(id)) if n == id => out.push(ok("tools.exec.node is this node's id".into())),
        (Some(n), Some(id)) => out.push(warn(format!(
            "tools.exec.node is {n:?}, not this node's id {id} (a name or IP matches whichever node claims it: bind the id)"
        ))),
        (Some(n), None) => out.push(warn(format!(
            "tools.exec.node is {n:?}; this machine has no node identity yet to compare (run `sanctum-guard node` once)"
        ))),
    }
    if cfg["tools"]["elevated"]["enabled"] == Value::Bool(true) {
        out.push(warn(
            "tools.elevated.enabled is true: turn elevated exec off".into(),
        ));
    } else {
        out.push(ok("elevated exec is off".into()));
    }
    match s(&cfg["agents"]["defaults"]["sandbox"]["mode"]) {
        None | Some("off") => out.push(ok("OpenClaw sandbox mode is off".into())),
        Some(m) => out.push(warn(format!(
            "agents.defaults.sandbox.mode is {m:?}: sandboxed sessions never reach the node (set \"off\")"
        ))),
    }
    if let Some(entries) = cfg["agents"]["entries"].as_object() {
        for (name, a) in entries {
            if let Some(h) = s(&a["tools"]["exec"]["host"]).filter(|h| *h != "node") {
                out.push(warn(format!("agent {name}: tools.exec.host is {h:?}")));
            }
            if let Some(n) = s(&a["tools"]["exec"]["node"]).filter(|n| Some(*n) != node_id) {
                out.push(warn(format!(
                    "agent {name}: tools.exec.node is {n:?}, not this node"
                )));
            }
            if a["tools"]["elevated"]["enabled"] == Value::Bool(true) {
                out.push(warn(format!("agent {name}: elevated exec is enabled")));
            }
            if let Some(m) = s(&a["sandbox"]["mode"]).filter(|m| *m != "off") {
                out.push(warn(format!("agent {name}: sandbox mode is {m:?}")));
            }
        }
    }
    out
}

/// Reads `<openclaw state>/openclaw.json` (None when it does not exist) and this node's id
/// from `<node dir>/device-identity.json`.
pub fn inspect(config: &Path, node_dir: &Path) -> Option<OpenClawSide> {
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(side(config, None, Some(e.to_string()), Vec::new())),
    };
    let node_id = std::fs::read_to_string(node_dir.join(super::identity::IDENTITY_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["deviceId"].as_str().map(str::to_owned));
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => {
            let mut f = check_config(&v, node_id.as_deref());
            f.extend(approval(node_dir));
            Some(side(config, node_id, None, f))
        }
        Err(e) => Some(side(
            config,
            node_id,
            Some(format!("not plain JSON ({e}); check it by hand")),
            Vec::new(),
        )),
    }
}

/// What the node last saw of its approval (`approval.json`, written while it is connected).
fn approval(node_dir: &Path) -> Option<Finding> {
    let text = std::fs::read_to_string(node_dir.join(super::pending::STATUS_FILE)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let ago =
        crate::engine::decision::now_ms().saturating_sub(v["atMs"].as_u64().unwrap_or(0)) / 1000;
    match v["state"].as_str()? {
        "pending" => Some(Finding {
            ok: false,
            text: format!(
                "node connected but not approved for system.run: run `openclaw nodes approve {}` \
                 (as the node saw it {ago} s ago)",
                v["requestId"].as_str().unwrap_or("<requestId>")
            ),
        }),
        "approved" => Some(Finding {
            ok: true,
            text: format!("node approved for system.run (as the node saw it {ago} s ago)"),
        }),
        _ => None,
    }
}

fn side(
    config: &Path,
    node_id: Option<String>,
    error: Option<String>,
    findings: Vec<Finding>,
) -> OpenClawSide {
    OpenClawSide {
        config: config.to_path_buf(),
        node_id,
        error,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn warnings(cfg: Value, id: Option<&str>) -> Vec<String> {
        check_config(&cfg, id)
            .into_iter()
            .filter(|f| !f.ok)
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn a_locked_down_config_has_no_warnings() {
        let cfg = json!({"tools":{"exec":{"host":"node","node":"abc"},"elevated":{"enabled":false}},
                         "agents":{"defaults":{"sandbox":{"mode":"off"}}}});
        assert_eq!(warnings(cfg, Some("abc")), Vec::<String>::new());
    }

    #[test]
    fn every_way_around_the_node_is_warned() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("no exec section", json!({}), "tools.exec.host is unset"),
            (
                "gateway host",
                json!({"tools":{"exec":{"host":"gateway","node":"abc"}}}),
                "\"gateway\"",
            ),
            (
                "auto host allows overrides",
                json!({"tools":{"exec":{"host":"auto","node":"abc"}}}),
                "\"auto\"",
            ),
            (
                "unbound",
                json!({"tools":{"exec":{"host":"node"}}}),
                "tools.exec.node is unset",
            ),
            (
                "bound to another node",
                json!({"tools":{"exec":{"host":"node","node":"other"}}}),
                "not this node's id",
            ),
            (
                "elevated on",
                json!({"tools":{"exec":{"host":"node","node":"abc"},"elevated":{"enabled":true}}}),
                "elevated",
            ),
            (
                "sandboxed sessions",
                json!({"tools":{"exec":{"host":"node","node":"abc"}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}),
                "sandbox.mode",
            ),
            (
                "per-agent host",
                json!({"tools":{"exec":{"host":"node","node":"abc"}},"agents":{"entries":{"ops":{"tools":{"exec":{"host":"gateway"}}}}}}),
                "agent ops: tools.exec.host",
            ),
            (
                "per-agent node",
                json!({"tools":{"exec":{"host":"node","node":"abc"}},"agents":{"entries":{"ops":{"tools":{"exec":{"node":"x"}}}}}}),
                "agent ops: tools.exec.node",
            ),
            (
                "per-agent elevated",
                json!({"tools":{"exec":{"host":"node","node":"abc"}},"agents":{"entries":{"ops":{"tools":{"elevated":{"enabled":true}}}}}}),
                "agent ops: elevated",
            ),
            (
                "per-agent sandbox",
                json!({"tools":{"exec":{"host":"node","node":"abc"}},"agents":{"entries":{"ops":{"sandbox":{"mode":"non-main"}}}}}),
                "agent ops: sandbox",
            ),
        ];
        for (name, cfg, needle) in cases {
            let w = warnings(cfg, Some("abc"));
            assert!(w.iter().any(|t| t.contains(needle)), "{name}: {w:?}");
        }
        let w = warnings(json!({"tools":{"exec":{"host":"node","node":"abc"}}}), None);
        assert!(w.iter().any(|t| t.contains("no node identity")), "{w:?}");
    }
}
