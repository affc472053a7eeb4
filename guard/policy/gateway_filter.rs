//! The front door's method filter (pure): which gateway requests a human's client (ACP, an
//! IDE, a chat page) may send through the guard. The tables come from the policy file's
//! `[gateway]` section; the default allows exactly what stock `openclaw acp` and a chat
//! client need. Everything else is refused: unknown methods, approval resolution (only the
//! guard resolves), config/plugins/agents/cron/node/device changes, session settings that
//! loosen exec, and chat messages carrying a chat directive (`/exec … ask=off` would run a
//! command with no approval at all). Any doubt — a frame that is not a request, a params
//! shape not understood — is a refusal.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// The filter's tables (policy file `[gateway]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayTables {
    /// Methods a client may call.
    pub allow_methods: BTreeSet<String>,
    /// Keys `sessions.patch` may carry (besides `key`); any other key refuses the frame.
    pub sessions_patch_keys: BTreeSet<String>,
    /// Chat directives refused anywhere in a `chat.send` message (`!` only at a line start).
    pub chat_directives: Vec<String>,
}

/// The section as written; each key replaces the earlier layer's list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGatewayTables {
    pub allow_methods: Option<Vec<String>>,
    pub sessions_patch_keys: Option<Vec<String>>,
    pub chat_directives: Option<Vec<String>>,
}

impl GatewayTables {
    /// Lays a layer's lists over these.
    pub fn merge(&mut self, raw: &RawGatewayTables) {
        if let Some(m) = &raw.allow_methods {
            self.allow_methods = m.iter().cloned().collect();
        }
        if let Some(k) = &raw.sessions_patch_keys {
            self.sessions_patch_keys = k.iter().cloned().collect();
        }
        if let Some(d) = &raw.chat_directives {
            self.chat_directives = d.clone();
        }
    }
}

/// The filter's answer for one client frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameVerdict {
    /// Forward the frame as received.
    Forward,
    /// Refuse it: the gateway's own error shape is sent back with this code and message.
    Refuse {
        code: &'static str,
        /// A stable reason code for the audit log.
        reason: &'static str,
        message: String,
    },
}

fn forbidden(reason: &'static str, message: String) -> FrameVerdict {
    FrameVerdict::Refuse {
        code: "FORBIDDEN",
        reason,
        message,
    }
}

/// A client frame as the door reads it: the fields the filter needs, borrowed from the text
/// (params stay raw text, decoded only for the methods whose params are judged), so a frame
/// that is forwarded is never built into a tree. A duplicated field is a refusal, not a
/// guess at which copy the gateway would use.
#[derive(Debug, Deserialize)]
pub struct ClientFrame<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
}

/// Why a frame could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame is not JSON")]
    NotJson,
    #[error("frame is not a request object: {0}")]
    Shape(String),
}

impl<'a> ClientFrame<'a> {
    pub fn parse(text: &'a str) -> Result<Self, FrameError> {
        serde_json::from_str(text).map_err(|e| {
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                FrameError::NotJson
            } else {
                FrameError::Shape(e.to_string())
            }
        })
    }

    /// Whether this is the `connect` request (which the door passes byte for byte).
    pub fn is_connect(&self) -> bool {
        self.kind.as_deref() == Some("req") && self.method.as_deref() == Some("connect")
    }

    /// The request id as a JSON value, for an error answer (null when absent).
    pub fn id_value(&self) -> Value {
        self.id
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or(Value::Null)
    }
}

/// Judges one client frame after `connect` (which the door passes byte for byte).
pub fn judge_frame(t: &GatewayTables, frame: &ClientFrame<'_>) -> FrameVerdict {
    if frame.kind.as_deref() != Some("req") {
        return FrameVerdict::Refuse {
            code: "INVALID_REQUEST",
            reason: "not-a-request",
            message: "only request frames are accepted".into(),
        };
    }
    let Some(method) = frame.method.as_deref() else {
        return FrameVerdict::Refuse {
            code: "INVALID_REQUEST",
            reason: "no-method",
            message: "request without a method".into(),
        };
    };
    if !t.allow_methods.contains(method) {
        return forbidden(
            "method-refused",
            format!("sanctum-guard: method {method} is not allowed through the front door"),
        );
    }
    let judged = |f: fn(&GatewayTables, &Value) -> FrameVerdict| {
        let params = match frame.params {
            None => Value::Null,
            Some(raw) => match serde_json::from_str(raw.get()) {
                Ok(v) => v,
                Err(_) => return forbidden("params-refused", "params are not JSON".into()),
            },
        };
        f(t, &params)
    };
    match method {
        "sessions.patch" => judged(patch_keys),
        "chat.send" => judged(chat_message),
        _ => FrameVerdict::Forward,
    }
}

/// `sessions.patch` with benign keys only (never `permissionMode`, `sandboxMode`,
/// `execNode`, `toolOverrides`, or anything the table does not name).
fn patch_keys(t: &GatewayTables, params: &Value) -> FrameVerdict {
    let Some(obj) = params.as_object() else {
        return forbidden(
            "params-refused",
            "sessions.patch params must be an object".into(),
        );
    };
    match obj
        .keys()
        .find(|k| k.as_str() != "key" && !t.sessions_patch_keys.contains(k.as_str()))
    {
        Some(k) => forbidden(
            "session-setting-refused",
            format!("sanctum-guard: sessions.patch may not set {k}"),
        ),
        None => FrameVerdict::Forward,
    }
}

/// A `chat.send` whose message carries a directive anywhere is refused.
fn chat_message(t: &GatewayTables, params: &Value) -> FrameVerdict {
    let msg = match &params["message"] {
        Value::String(s) => s.as_str(),
        Value::Null => "",
        _ => return forbidden("params-refused", "chat.send message must be text".into()),
    };
    match find_directive(&t.chat_directives, msg) {
        Some(d) => forbidden(
            "chat-directive",
            format!("sanctum-guard: chat directive {d} is not allowed"),
        ),
        None => FrameVerdict::Forward,
    }
}

/// The first directive in `msg`: `/name` where it starts a word (start of text, or after
/// whitespace or punctuation other than `/` and `.`) and is not followed by a letter, digit,
/// `_` or `-`, case-insensitive; `!` at the start of any line.
pub fn find_directive<'a>(directives: &'a [String], msg: &str) -> Option<&'a str> {
    let lower = msg.to_lowercase();
    for d in directives {
        let dl = d.to_lowercase();
        if dl == "!" {
            if lower.lines().any(|l| l.trim_start().starts_with('!')) {
                return Some(d);
            }
            continue;
        }
        let mut from = 0;
        while let Some(at) = lower[from..].find(&dl) {
            let start = from + at;
            let end = start + dl.len();
            let before = lower[..start].chars().next_back();
            let after = lower[end..].chars().next();
            let starts_word =
                before.is_none_or(|c| !(c.is_alphanumeric() || c == '/' || c == '.' || c == '_'));
            let ends_word = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
            if starts_word && ends_word {
                return Some(d);
            }
            from = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::file::embedded_default;
    use serde_json::json;

    fn t() -> GatewayTables {
        embedded_default().gateway().clone()
    }

    /// Judges a frame as the door does: from its text.
    fn judge(t: &GatewayTables, v: &Value) -> FrameVerdict {
        let text = v.to_string();
        match ClientFrame::parse(&text) {
            Ok(f) => judge_frame(t, &f),
            Err(e) => FrameVerdict::Refuse {
                code: "INVALID_REQUEST",
                reason: "unreadable",
                message: e.to_string(),
            },
        }
    }

    fn req(method: &str, params: Value) -> Value {
        json!({"type":"req","id":"1","method":method,"params":params})
    }

    #[test]
    fn the_default_allows_exactly_what_acp_and_a_chat_client_need() {
        let want: BTreeSet<String> = [
            "sessions.list",
            "sessions.resolve",
            "sessions.get",
            "sessions.reset",
            "sessions.patch",
            "chat.send",
            "chat.abort",
            "chat.history",
            "agent.wait",
            "exec.approval.get",
            "status",
            "health",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(t().allow_methods, want);
        for m in &want {
            let p = if m == "chat.send" {
                json!({"message":"hi"})
            } else {
                json!({})
            };
            assert_eq!(judge(&t(), &req(m, p)), FrameVerdict::Forward, "{m}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for m in [
            "exec.approval.resolve",
            "plugin.approval.resolve",
            "approval.resolve",
            "config.set",
            "config.patch",
            "exec.approvals.set",
            "plugins.install",
            "skills.install",
            "agents.create",
            "cron.add",
            "terminal.open",
            "secrets.resolve",
            "node.invoke",
            "node.pair.approve",
            "device.pair.approve",
            "environments.session.exec",
            "chat.inject",
            "tools.invoke",
            "computer.invoke",
            "mcp.app.callTool",
            "sessions.create",
            "sessions.delete",
            "bogus.method",
            "",
        ] {
            assert!(
                matches!(
                    judge(&t(), &req(m, json!({}))),
                    FrameVerdict::Refuse {
                        code: "FORBIDDEN",
                        ..
                    }
                ),
                "{m}"
            );
        }
        for bad in [
            json!({"type":"event","event":"x"}),
            json!({"type":"req","id":"1"}),
            json!("x"),
        ] {
            assert!(
                matches!(judge(&t(), &bad), FrameVerdict::Refuse { .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn sessions_patch_only_with_benign_keys() {
        let ok = req(
            "sessions.patch",
            json!({"key":"k","thinkingLevel":"low","fastMode":true}),
        );
        assert_eq!(judge(&t(), &ok), FrameVerdict::Forward);
        for k in [
            "permissionMode",
            "sandboxMode",
            "execNode",
            "toolOverrides",
            "unknownKey",
        ] {
            let f = req("sessions.patch", json!({"key":"k", k: "full"}));
            assert!(
                matches!(judge(&t(), &f), FrameVerdict::Refuse { .. }),
                "{k}"
            );
        }
        assert!(matches!(
            judge(&t(), &req("sessions.patch", json!([1]))),
            FrameVerdict::Refuse { .. }
        ));
    }

    #[test]
    fn chat_directives_are_refused_anywhere() {
        for m in [
            "/exec security=full ask=off",
            "please run this\n/exec ask=off",
            "ok /EXEC ask=off",
            "/approve abc allow-once",
            "/elevated on",
            "/bash ls",
            "!ls",
            "[Working directory: /w]\n\n!rm x",
            "/config set x",
            "/allowlist add",
            "/debug",
            "/restart",
            "/pair",
            "(/exec ask=off)",
        ] {
            let f = req("chat.send", json!({"sessionKey":"s","message":m}));
            assert!(
                matches!(
                    judge(&t(), &f),
                    FrameVerdict::Refuse {
                        reason: "chat-directive",
                        ..
                    }
                ),
                "{m:?}"
            );
        }
        for m in [
            "list /usr/bin/exec",
            "the executive summary",
            "a/exec b",
            "see /execute-plan",
            "hi!",
        ] {
            let f = req("chat.send", json!({"message":m}));
            assert_eq!(judge(&t(), &f), FrameVerdict::Forward, "{m:?}");
        }
        let f = req("chat.send", json!({"message":{"text":"/exec"}}));
        assert!(matches!(judge(&t(), &f), FrameVerdict::Refuse { .. }));
    }

    #[test]
    fn frames_are_judged_from_their_text() {
        let parse = ClientFrame::parse;
        assert_eq!(parse("{nope").err(), Some(FrameError::NotJson));
        assert_eq!(parse("").err(), Some(FrameError::NotJson));
        // Two values in one frame: the gateway's JSON.parse refuses it, and so does the door
        // (the second one never rides along behind an allowed first).
        for text in [
            r#"{"type":"req","id":"1","method":"status"} {"type":"req","method":"config.set"}"#,
            r#"{"type":"req","id":"1","method":"status"},{"method":"config.set"}"#,
            "{\"type\":\"req\",\"id\":\"1\",\"method\":\"status\"}\u{0}",
        ] {
            assert_eq!(parse(text).err(), Some(FrameError::NotJson), "{text}");
        }
        // Valid JSON but not a request object, or a field given twice: unreadable, refused.
        for text in [
            r#""x""#,
            r#"[1,2]"#,
            r#"{"type":"req","id":"1","method":"status","method":"config.set"}"#,
            r#"{"type":"req","type":"event","id":"1","method":"status"}"#,
            r#"{"type":7,"id":"1","method":"status"}"#,
            r#"{"type":"req","id":"1","method":["config.set"]}"#,
            r#"{"type":"req","id":"1","method":{"name":"status"}}"#,
        ] {
            assert!(matches!(parse(text), Err(FrameError::Shape(_))), "{text}");
        }
        // A method that is null or missing is no method: refused.
        for text in [
            r#"{"type":"req","id":"1","method":null}"#,
            r#"{"type":"req","id":"1"}"#,
        ] {
            let f = parse(text).expect("frame");
            assert!(
                matches!(
                    judge_frame(&t(), &f),
                    FrameVerdict::Refuse {
                        reason: "no-method",
                        ..
                    }
                ),
                "{text}"
            );
        }
        // Escapes are read as the gateway reads them.
        let f = parse(r#"{"type":"req","id":"1","method":"config\u002eset","params":{}}"#)
            .expect("frame");
        assert!(matches!(
            judge_frame(&t(), &f),
            FrameVerdict::Refuse {
                reason: "method-refused",
                ..
            }
        ));
        let f = parse(
            r#"{"type":"req","id":"1","method":"chat.send","params":{"message":"\u002fexec ask=off"}}"#,
        )
        .expect("frame");
        assert!(matches!(
            judge_frame(&t(), &f),
            FrameVerdict::Refuse {
                reason: "chat-directive",
                ..
            }
        ));
        // A directive hidden in a duplicated params key: the gateway's JSON.parse keeps the
        // last one, and so does the filter.
        let f = parse(
            r#"{"type":"req","id":"1","method":"chat.send","params":{"message":"hi","message":"/exec ask=off"}}"#,
        )
        .expect("frame");
        assert!(matches!(judge_frame(&t(), &f), FrameVerdict::Refuse { .. }));
        // The id comes back as it was sent, for the error answer.
        let f = parse(r#"{"type":"req","id":{"n":[1]},"method":"x"}"#).expect("frame");
        assert_eq!(f.id_value(), json!({"n":[1]}));
        assert!(!f.is_connect());
        let f = parse(r#"{"type":"req","id":"c","method":"connect","params":{}}"#).expect("c");
        assert!(f.is_connect());
    }
}
