//! The egress rules (pure): which destinations the agent's traffic may reach through the
//! egress proxy. They come from the policy file's `[[egress.rules]]` and the proxy's `--allow`
//! entries; `sanctum-guard egress rules` prints them as the proxy reads them.
//!
//! A rule names a host (exact, `*.example.com` for the names below it, or an IP literal),
//! ports, a scheme (`https`: a CONNECT tunnel, whose inside the proxy does not see; `http`: a
//! plain absolute-form request; `any`), and for plain HTTP the methods and a path prefix.
//! Deny rules win over allow rules; a destination no rule covers is unlisted (refused today).
//!
//! Where a rule cannot be checked it fails closed: an allow rule may name methods or a path
//! only for plain HTTP (a tunnel's are invisible, so such an allow is refused at load), while a
//! deny rule's methods and path also cover a tunnel to its host (it might carry them). A path
//! is compared after percent-decoding; one whose meaning a server could read differently
//! (`..` or `.` segments, `//`, a backslash, an encoded `/`, control bytes) never matches an
//! allow rule's prefix and always matches a deny rule's.

use serde::Deserialize;
// `core::net`: address values only; the core does no I/O (tests/policy_purity.rs).
use core::net::IpAddr;

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleAction {
    Allow,
    Deny,
}

/// Which kind of proxied connection a rule covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// Both.
    #[default]
    Any,
    /// A CONNECT tunnel (what HTTPS clients send; the proxy does not look inside).
    Https,
    /// A plain `http://` absolute-form request, whose method and path the proxy sees.
    Http,
}

/// The host part of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name: lower-case ASCII (IDNA applied), no trailing dot.
    Exact(String),
    /// `*.example.com`: every name ending in `.example.com`, never `example.com` itself.
    Below(String),
    /// An address literal: that address only.
    Ip(IpAddr),
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    pub action: RuleAction,
    pub host: HostPattern,
    pub ports: Vec<u16>,
    pub scheme: Scheme,
    /// Upper-case methods; empty: any.
    pub methods: Vec<String>,
    /// Percent-decoded path prefix, starting with `/`.
    pub path_prefix: Option<String>,
    /// A name that may resolve to private addresses (an internal service). Without it a name
    /// reaches public unicast addresses only.
    pub internal: bool,
    /// Where it was written, for `egress rules` and the audit log (`policy rule 3`, `--allow`).
    pub origin: String,
}

/// A rule as the policy file writes it (`[[egress.rules]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEgressRule {
    pub action: RuleAction,
    pub host: String,
    pub ports: Vec<u32>,
    #[serde(default)]
    pub scheme: Scheme,
    #[serde(default)]
    pub methods: Vec<String>,
    pub path_prefix: Option<String>,
    #[serde(default)]
    pub internal: bool,
}

/// The `[egress]` section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEgress {
    #[serde(default)]
    pub rules: Vec<toml::Spanned<RawEgressRule>>,
    /// Provider routes (`policy::egress_routes`).
    #[serde(default)]
    pub routes: Vec<toml::Spanned<crate::policy::egress_routes::RawRoute>>,
}

/// Why a rule was refused at load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("egress rule {rule}: {why}")]
pub struct EgressRuleError {
    /// The rule as written (or its origin).
    pub rule: String,
    pub why: String,
}

/// The host of a connection, as the proxy read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestHost {
    /// Lower-case ASCII, IDNA applied, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

/// What a connection asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub host: DestHost,
    pub port: u16,
    /// `None` for a CONNECT tunnel; the method and request target's path for plain HTTP.
    pub plain: Option<(String, String)>,
}

/// The rules' answer for one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressVerdict<'r> {
    Allow(&'r EgressRule),
    Deny(&'r EgressRule),
    /// No rule covers it.
    Unlisted,
}

/// Normalises a rule's host name: IDNA to ASCII, lower case, one trailing dot dropped, labels
/// checked. `None` when it is no valid host name.
fn host_name(raw: &str) -> Option<String> {
    let ascii = idna::domain_to_ascii(raw).ok()?;
    let name = ascii.strip_suffix('.').unwrap_or(&ascii).to_owned();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    // A name whose last label is numeric would be read as an IPv4 address by resolvers.
    let last_numeric = name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()) || l.starts_with("0x"));
    (name.len() <= 253 && name.split('.').all(label_ok) && !last_numeric).then_some(name)
}

fn host_pattern(raw: &str) -> Result<HostPattern, String> {
    let bare = raw
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(raw);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(HostPattern::Ip(ip));
    }
    if let Some(rest) = raw.strip_prefix("*.") {
        let name = host_name(rest).ok_or("not a valid host name after `*.`")?;
        if name.split('.').count() < 2 {
            return Err("`*.` must be followed by at least two labels (`*.example.com`)".into());
        }
        return Ok(HostPattern::Below(name));
    }
    if raw.contains('*') {
        return Err("a wildcard is allowed only as a whole leading label (`*.example.com`)".into());
    }
    host_name(raw)
        .map(HostPattern::Exact)
        .ok_or_else(|| "not a valid host name or IP address".into())
}

impl EgressRule {
    /// Validates a rule from the policy file.
    pub fn from_raw(raw: &RawEgressRule, origin: String) -> Result<EgressRule, EgressRuleError> {
        let bad = |why: String| EgressRuleError {
            rule: origin.clone(),
            why,
        };
        let host =
            host_pattern(raw.host.trim()).map_err(|w| bad(format!("host {:?}: {w}", raw.host)))?;
        if raw.ports.is_empty() {
            return Err(bad("`ports` names no port".into()));
        }
        let mut ports = Vec::new();
        for p in &raw.ports {
            match u16::try_from(*p) {
                Ok(p) if p != 0 => ports.push(p),
                _ => return Err(bad(format!("port {p} is not 1-65535"))),
            }
        }
        let mut methods = Vec::new();
        for m in &raw.methods {
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(bad(format!("method {m:?} is not a method name")));
            }
            methods.push(m.to_ascii_uppercase());
        }
        let path_prefix = match &raw.path_prefix {
            None => None,
            Some(p) => Some(
                clear_path(p)
                    .filter(|c| c.starts_with('/'))
                    .ok_or_else(|| {
                        bad(format!("path_prefix {p:?} must be a plain absolute path"))
                    })?,
            ),
        };
        let sees_inside = !methods.is_empty() || path_prefix.is_some();
        if raw.action == RuleAction::Allow && sees_inside && raw.scheme != Scheme::Http {
            return Err(bad(
                "an allow rule may name methods or a path only with scheme = \"http\": a tunnel's are not visible"
                    .into(),
            ));
        }
        if raw.internal && !matches!(host, HostPattern::Exact(_)) {
            return Err(bad(
                "`internal` is for one named service (an exact host name)".into(),
            ));
        }
        Ok(EgressRule {
            action: raw.action,
            host,
            ports,
            scheme: raw.scheme,
            methods,
            path_prefix,
            internal: raw.internal,
            origin,
        })
    }

    /// An `--allow host:port` entry: allow that host and port, any scheme, nothing else.
    pub fn from_allow(entry: &str) -> Result<EgressRule, EgressRuleError> {
        let bad = |why: &str| EgressRuleError {
            rule: format!("--allow {entry:?}"),
            why: why.to_owned(),
        };
        if entry.contains("://") || entry.contains('/') {
            return Err(bad("give host:port only (no scheme, no path)"));
        }
        let (host, port) =
            split_host_port(entry).ok_or_else(|| bad("not host:port (port 1-65535)"))?;
        if host.contains('*') || host.starts_with('.') {
            return Err(bad(
                "wildcards belong in the policy file's [[egress.rules]]: name each host here",
            ));
        }
        let raw = RawEgressRule {
            action: RuleAction::Allow,
            host: host.to_owned(),
            ports: vec![u32::from(port)],
            scheme: Scheme::Any,
            methods: Vec::new(),
            path_prefix: None,
            internal: false,
        };
        EgressRule::from_raw(&raw, format!("--allow {entry}")).map_err(|e| bad(&e.why))
    }

    fn host_matches(&self, host: &DestHost) -> bool {
        match (&self.host, host) {
            (HostPattern::Exact(r), DestHost::Name(n)) => r == n,
            (HostPattern::Below(r), DestHost::Name(n)) => n
                .strip_suffix(r.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(r), DestHost::Ip(a)) => canonical_ip(*r) == canonical_ip(*a),
            _ => false,
        }
    }

    /// Whether the rule covers `d` (see the module doc for what fails closed).
    pub fn covers(&self, d: &Destination) -> bool {
        if !self.ports.contains(&d.port) || !self.host_matches(&d.host) {
            return false;
        }
        let deny = self.action == RuleAction::Deny;
        match (&d.plain, self.scheme) {
            (None, Scheme::Http) | (Some(_), Scheme::Https) => return false,
            // A tunnel: its method and path are unknown, so only a deny may cover it when it
            // names them (from_raw refuses such an allow).
            (None, _) => return deny || (self.methods.is_empty() && self.path_prefix.is_none()),
            (Some(_), _) => {}
        }
        let Some((method, path)) = &d.plain else {
            return false;
        };
        let method_ok = self.methods.is_empty() || self.methods.iter().any(|m| m == method);
        let path_ok = match (&self.path_prefix, clear_path(path)) {
            (None, _) => true,
            (Some(p), Some(clear)) => under_prefix(&clear, p),
            (Some(_), None) => deny,
        };
        method_ok && path_ok
    }
}

/// `::ffff:a.b.c.d` is `a.b.c.d`: the same address in a rule, a request and a resolved name.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A path prefix covers a path at a segment boundary or as a written prefix ending in `/`.
pub(crate) fn under_prefix(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'))
}

/// A request target's path, percent-decoded, when a server can read it only one way: query
/// and fragment dropped; `None` for a bad escape, non-UTF-8, a control byte, a backslash, an
/// encoded `/`, an empty (`//`), `.` or `..` segment.
pub fn clear_path(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let mut bytes = Vec::with_capacity(path.len());
    let mut it = path.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hi = it.next().and_then(|c| (c as char).to_digit(16))?;
            let lo = it.next().and_then(|c| (c as char).to_digit(16))?;
            let d = u8::try_from(hi * 16 + lo).ok()?;
            if d == b'/' || d == b'\\' {
                return None;
            }
            bytes.push(d);
        } else {
            bytes.push(b);
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    if text.chars().any(|c| c.is_control() || c == '\\') {
        return None;
    }
    let segments: Vec<&str> = text.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let bad_segment = segments
        .iter()
        .enumerate()
        .any(|(i, s)| *s == "." || *s == ".." || (s.is_empty() && i != last));
    (text.starts_with('/') && !bad_segment).then_some(text)
}

/// Splits `host:port` (IPv6 in brackets); `None` when the shape is wrong or the port is 0.
pub fn split_host_port(s: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:")?;
        (h, p)
    } else {
        let (h, p) = s.rsplit_once(':')?;
        if h.contains(':') {
            return None;
        }
        (h, p)
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port: u16 = port.parse().ok()?;
    (!host.is_empty() && port != 0).then_some((host, port))
}

/// Judges one destination: a covering deny rule wins; else the first covering allow rule;
/// else unlisted.
pub fn judge<'r>(rules: &'r [EgressRule], d: &Destination) -> EgressVerdict<'r> {
    if let Some(r) = rules
        .iter()
        .find(|r| r.action == RuleAction::Deny && r.covers(d))
    {
        return EgressVerdict::Deny(r);
    }
    rules
        .iter()
        .find(|r| r.action == RuleAction::Allow && r.covers(d))
        .map_or(EgressVerdict::Unlisted, EgressVerdict::Allow)
}

/// One line per rule, as `egress rules` prints it.
pub fn describe(r: &EgressRule) -> String {
    let host = match &r.host {
        HostPattern::Exact(h) => h.clone(),
        HostPattern::Below(h) => format!("*.{h}"),
        HostPattern::Ip(ip) => ip.to_string(),
    };
    let ports: Vec<String> = r.ports.iter().map(u16::to_string).collect();
    let mut line = format!(
        "{:<5} {host}:{}",
        match r.action {
            RuleAction::Allow => "allow",
            RuleAction::Deny => "deny",
        },
        ports.join(",")
    );
    line.push_str(match r.scheme {
        Scheme::Any => "  scheme=any",
        Scheme::Https => "  scheme=https",
        Scheme::Http => "  scheme=http",
    });
    if !r.methods.is_empty() {
        line.push_str(&format!("  methods={}", r.methods.join(",")));
    }
    if let Some(p) = &r.path_prefix {
        line.push_str(&format!("  path={p}*"));
    }
    if r.internal {
        line.push_str("  internal");
    }
    line.push_str(&format!("  ({})", r.origin));
    line
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
