//! The egress proxy asking the guard about a destination no rule covers (pure): the
//! `egress-ask` frame it sends on the approvals socket, the `egress-answer` it reads back,
//! their strict parsers, and the one rule an "always" answer stores. Both sides use this
//! module, so the rule a person sees on the card is byte for byte the rule that is stored.
//!
//! Strict because the frame crosses a trust boundary: every field is bounded and checked,
//! unknown fields are refused, and anything not understood is a refusal (never an allow).

use super::egress::{DestHost, EgressRule, RawEgressRule, RuleAction, Scheme};
use serde::{Deserialize, Serialize};

/// Longest `egress-ask` line accepted (the socket's general cap is far larger).
pub const MAX_ASK_BYTES: usize = 4096;
/// Longest `egress-answer` line the proxy reads.
pub const MAX_ANSWER_BYTES: usize = 4096;
/// Longest request path carried (longer paths are cut, marked with `…`).
pub const MAX_PATH_CHARS: usize = 1024;
/// Longest a connection may wait for a person.
pub const MAX_WAIT_MS: u64 = 10 * 60 * 1000;
/// Longest grant an "allow for a while" gives.
pub const MAX_GRANT_SECS: u64 = 24 * 3600;

/// What the proxy asks: one connection's destination, as the proxy read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EgressAsk {
    /// Normalised host name or IP literal (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// `CONNECT` for a tunnel, else the plain request's method.
    pub method: String,
    /// The plain request's path (with query); `None` for a tunnel.
    #[serde(default)]
    pub path: Option<String>,
    /// The agent-side client address, for the card and the audit log.
    #[serde(default)]
    pub client: Option<String>,
    /// How long the connection waits for a person.
    pub wait_ms: u64,
    /// How long an "allow for a while" lasts.
    pub grant_secs: u64,
}

/// The `egress-ask` frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskFrame {
    #[serde(rename = "type")]
    pub ty: String,
    pub id: String,
    pub token: String,
    pub ask: EgressAsk,
}

/// The guard's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerKind {
    /// This connection only.
    AllowOnce,
    /// This host:port until `until_ms` (a grant the guard keeps).
    AllowFor,
    /// The rule `rule` is stored; the proxy adds it to its overlay.
    AllowAlways,
    Deny,
}

/// The `egress-answer` frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Answer {
    #[serde(rename = "type")]
    pub ty: String,
    pub id: String,
    pub decision: AnswerKind,
    /// Why (a deny's reason code, or who allowed it).
    pub reason: String,
    /// For `allow-always`: the rule to store, as [`rule_toml`] writes it.
    #[serde(default)]
    pub rule: Option<String>,
    /// For `allow-for`: the grant's end, epoch ms.
    #[serde(default)]
    pub until_ms: Option<u64>,
    /// The inbox entry a person answered, when one did.
    #[serde(default)]
    pub inbox_id: Option<String>,
}

/// Why a frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    #[error("egress frame longer than {0} bytes")]
    TooLarge(usize),
    #[error("egress frame is not valid JSON of its shape: {0}")]
    Shape(String),
    #[error("egress frame: {0}")]
    Field(&'static str),
}

fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks an ask's fields; the host is returned as the rules read it.
pub fn check_ask(a: &EgressAsk) -> Result<DestHost, AskError> {
    let host = dest_host_text(&a.host).ok_or(AskError::Field("host is not a host name or IP"))?;
    if a.port == 0 {
        return Err(AskError::Field("port 0"));
    }
    let m = &a.method;
    if m.is_empty() || m.len() > 16 || !m.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(AskError::Field("method is not an upper-case method name"));
    }
    match (&a.path, m.as_str()) {
        (None, "CONNECT") => {}
        (Some(p), x) if x != "CONNECT" => {
            if !p.starts_with('/')
                || p.chars().count() > MAX_PATH_CHARS + 1
                || p.chars().any(char::is_control)
            {
                return Err(AskError::Field("path is not an absolute printable path"));
            }
        }
        _ => return Err(AskError::Field("a path goes with a plain request only")),
    }
    if a.client.as_ref().is_some_and(|c| {
        c.len() > 64
            || !c
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b".:[]".contains(&b))
    }) {
        return Err(AskError::Field("client is not an address"));
    }
    if a.wait_ms == 0 || a.wait_ms > MAX_WAIT_MS {
        return Err(AskError::Field("waitMs is not 1 ms .. 10 min"));
    }
    if a.grant_secs == 0 || a.grant_secs > MAX_GRANT_SECS {
        return Err(AskError::Field("grantSecs is not 1 s .. 24 h"));
    }
    Ok(host)
}

/// Parses an `egress-ask` line (without its `\n`).
pub fn parse_ask(line: &[u8]) -> Result<(AskFrame, DestHost), AskError> {
    if line.len() > MAX_ASK_BYTES {
        return Err(AskError::TooLarge(MAX_ASK_BYTES));
    }
    let f: AskFrame = serde_json::from_slice(line).map_err(|e| AskError::Shape(e.to_string()))?;
    if f.ty != "egress-ask" {
        return Err(AskError::Field("type is not egress-ask"));
    }
    if !id_ok(&f.id) {
        return Err(AskError::Field("id is not 1-64 of [A-Za-z0-9_-]"));
    }
    let host = check_ask(&f.ask)?;
    Ok((f, host))
}

/// Parses an `egress-answer` line for the ask `id`: anything else is an error (the proxy
/// then refuses the connection).
pub fn parse_answer(line: &[u8], id: &str) -> Result<Answer, AskError> {
    if line.len() > MAX_ANSWER_BYTES {
        return Err(AskError::TooLarge(MAX_ANSWER_BYTES));
    }
    let a: Answer = serde_json::from_slice(line).map_err(|e| AskError::Shape(e.to_string()))?;
    if a.ty != "egress-answer" || a.id != id {
        return Err(AskError::Field("not the answer to this ask"));
    }
    match a.decision {
        AnswerKind::AllowFor if a.until_ms.is_none() => {
            Err(AskError::Field("allow-for without untilMs"))
        }
        AnswerKind::AllowAlways if a.rule.is_none() => {
            Err(AskError::Field("allow-always without its rule"))
        }
        _ => Ok(a),
    }
}

/// A normalised host as text (what the ask carries and the rule names).
pub fn host_text(h: &DestHost) -> String {
    match h {
        DestHost::Name(n) => n.clone(),
        DestHost::Ip(ip) => ip.to_string(),
    }
}

/// Reads back a host the proxy normalised: a name as [`super::egress`] writes it, or an IP
/// literal. Nothing else (no brackets, no other spellings: the proxy normalised them).
fn dest_host_text(s: &str) -> Option<DestHost> {
    if let Ok(ip) = s.parse() {
        return Some(DestHost::Ip(ip));
    }
    let valid = s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    valid.then(|| DestHost::Name(s.to_owned()))
}

/// The rule "always" stores for this destination: exactly its host and port, for the kind
/// of connection asked (a tunnel: `https`; a plain request: `http`).
pub fn proposed_rule(host: &DestHost, port: u16, tunnel: bool) -> RawEgressRule {
    RawEgressRule {
        action: RuleAction::Allow,
        host: host_text(host),
        ports: vec![u32::from(port)],
        scheme: if tunnel { Scheme::Https } else { Scheme::Http },
        methods: Vec::new(),
        path_prefix: None,
        internal: false,
    }
}

/// The rule as one TOML inline table, the text the card shows and the overlay stores.
pub fn rule_toml(r: &RawEgressRule) -> String {
    let scheme = match r.scheme {
        Scheme::Any => "any",
        Scheme::Https => "https",
        Scheme::Http => "http",
    };
    let action = match r.action {
        RuleAction::Allow => "allow",
        RuleAction::Deny => "deny",
    };
    let ports: Vec<String> = r.ports.iter().map(u32::to_string).collect();
    // The host was validated ([a-z0-9.-] or an IP literal): nothing in it needs escaping.
    format!(
        "{{ action = \"{action}\", host = \"{}\", ports = [{}], scheme = \"{scheme}\" }}",
        r.host,
        ports.join(", ")
    )
}

/// The overlay file: `[[egress.rules]]`, one per stored "always".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlayFile {
    #[serde(default)]
    egress: super::egress::RawEgress,
}

/// Parses an overlay file's text into rules (origin `overlay rule N`). Only allow rules of
/// one exact host and port may be in it: it holds nothing but what "always" stored.
pub fn parse_overlay(text: &str) -> Result<Vec<EgressRule>, String> {
    let f: OverlayFile = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (i, raw) in f.egress.rules.iter().enumerate() {
        let raw = raw.get_ref();
        let origin = format!("overlay rule {}", i + 1);
        if raw.action != RuleAction::Allow || raw.ports.len() != 1 || raw.host.contains('*') {
            return Err(format!(
                "{origin}: the overlay holds only allow rules of one host and port"
            ));
        }
        out.push(EgressRule::from_raw(raw, origin).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// One overlay entry as appended to the file (parsed back by [`parse_overlay`]). `rule` must
/// be a [`rule_toml`] text; it is re-parsed here so nothing else is ever appended.
pub fn overlay_entry(rule: &str) -> Result<String, String> {
    let block = format!("[[egress.rules]]\n{}\n", inline_to_keys(rule)?);
    parse_overlay(&block)?;
    Ok(block)
}

/// `{ a = 1, b = "x" }` → `a = 1\nb = "x"` (the inline table [`rule_toml`] writes).
fn inline_to_keys(rule: &str) -> Result<String, String> {
    let t: toml::Table = toml::from_str(&format!("r = {rule}")).map_err(|e| e.to_string())?;
    let Some(toml::Value::Table(inner)) = t.get("r") else {
        return Err("the rule is not an inline table".into());
    };
    Ok(inner.to_string().trim_end().to_owned())
}

/// A host:port for messages, IPv6 in brackets.
pub fn target(host: &DestHost, port: u16) -> String {
    match host {
        DestHost::Ip(core::net::IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        h => format!("{}:{port}", host_text(h)),
    }
}

#[cfg(test)]
#[path = "egress_ask_tests.rs"]
mod tests;
