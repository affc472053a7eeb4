//! Provider routes (pure): the policy file's `[[egress.routes]]`. A route is how the agent
//! reaches a model provider without holding its key: the agent sends plain HTTP to the egress
//! proxy at `/providers/<name>/...`, and the proxy forwards it over verified TLS to the
//! route's upstream with the key added from a file only the proxy reads. Only the methods and
//! path prefixes the route lists pass; everything else is refused before anything is sent.

use super::egress::{clear_path, split_host_port, under_prefix, HostPattern, RawEgressRule};
use super::egress::{EgressRule, EgressRuleError, RuleAction, Scheme};
use serde::Deserialize;

/// Where the routes live on the proxy: `/providers/<name>/<the provider's own path>`.
pub const ROUTE_PREFIX: &str = "/providers/";

/// A route as the policy file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoute {
    pub name: String,
    /// `https://host[:port][/base]`.
    pub upstream: String,
    /// The file the proxy reads the key from.
    pub key_file: String,
    /// The header the key goes in, `{key}` standing for it.
    #[serde(default = "default_header")]
    pub header: String,
    /// `"METHOD /path/prefix"` entries.
    pub allow: Vec<String>,
    /// Further certificate authorities (PEM) the upstream's certificate may chain to.
    pub ca_file: Option<String>,
    /// The upstream's name may resolve to a private address (a provider on an internal
    /// network); as for an `internal` egress rule, never loopback or link-local.
    #[serde(default)]
    pub internal: bool,
}

fn default_header() -> String {
    "Authorization: Bearer {key}".to_owned()
}

/// One validated route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRoute {
    pub name: String,
    /// The upstream as an egress rule: its host and port, `https`, `internal` as written.
    /// After resolution the proxy holds it to what such a rule may reach.
    pub upstream: EgressRule,
    /// The host as the TLS certificate must name it (a name, or an address literal).
    pub tls_name: String,
    /// Prepended to the provider path (`/openai` for `https://host/openai`); may be empty.
    pub base_path: String,
    pub key_file: String,
    /// Lower-case header name.
    pub header_name: String,
    /// The header value around the key: `(before, after)`.
    pub header_value: (String, String),
    /// Upper-case method and a clear path prefix.
    pub allow: Vec<(String, String)>,
    pub ca_file: Option<String>,
    /// `policy route 1` and the like.
    pub origin: String,
}

/// Why a request on a route is refused (the text is what the agent and the audit log see).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteRefusal {
    #[error("not a provider path: requests to the proxy itself go to /providers/<name>/...")]
    NotARoutePath,
    #[error("no provider route named {0:?}")]
    NoSuchRoute(String),
    #[error("the path could be read two ways (`..`, `//`, an encoded `/`): refused")]
    UnclearPath,
    #[error("route {name} does not allow {method} {path} (it allows: {allowed})")]
    NotAllowed {
        name: String,
        method: String,
        path: String,
        allowed: String,
    },
}

/// Splits a request target on the proxy into the route's name and the provider path
/// (`/providers/openai/v1/models?x` -> `("openai", "/v1/models?x")`).
pub fn split_route_target(target: &str) -> Result<(&str, &str), RouteRefusal> {
    let rest = target
        .strip_prefix(ROUTE_PREFIX)
        .ok_or(RouteRefusal::NotARoutePath)?;
    let at = rest.find('/').ok_or(RouteRefusal::NotARoutePath)?;
    Ok(rest.split_at(at))
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 63
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl ProviderRoute {
    /// Validates a route from the policy file.
    pub fn from_raw(raw: &RawRoute, origin: String) -> Result<ProviderRoute, EgressRuleError> {
        let bad = |why: String| EgressRuleError {
            rule: origin.clone(),
            why,
        };
        if !valid_name(&raw.name) {
            return Err(bad(format!(
                "name {:?}: lower-case letters, digits and `-` only",
                raw.name
            )));
        }
        let rest = raw.upstream.strip_prefix("https://").ok_or_else(|| {
            bad("upstream must be https://host[:port][/path]: the key travels over TLS only".into())
        })?;
        let (authority, base) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.contains('@') || base.contains(['?', '#']) {
            return Err(bad(
                "upstream takes no credentials, query or fragment".into()
            ));
        }
        let (host, port) = match split_host_port(authority) {
            Some(hp) => hp,
            None if !authority.is_empty() && !authority.contains(':') => (authority, 443),
            None if authority.starts_with('[') && authority.ends_with(']') => (authority, 443),
            None => {
                return Err(bad(format!(
                    "upstream host {authority:?} is not host[:port]"
                )))
            }
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let rule = RawEgressRule {
            action: RuleAction::Allow,
            host: bare.to_owned(),
            ports: vec![u32::from(port)],
            scheme: Scheme::Https,
            methods: Vec::new(),
            path_prefix: None,
            internal: raw.internal,
        };
        let upstream = EgressRule::from_raw(&rule, format!("{origin} (route {})", raw.name))
            .map_err(|e| bad(format!("upstream: {}", e.why)))?;
        if matches!(upstream.host, HostPattern::Below(_)) {
            return Err(bad("upstream names one host, not a wildcard".into()));
        }
        let tls_name = match &upstream.host {
            HostPattern::Exact(n) => n.clone(),
            HostPattern::Ip(ip) => ip.to_string(),
            HostPattern::Below(n) => n.clone(),
        };
        let base_path = match base.trim_end_matches('/') {
            "" => String::new(),
            b => clear_path(b)
                .filter(|c| c == b)
                .ok_or_else(|| bad(format!("upstream path {base:?} is not a plain path")))?,
        };
        let (header_name, template) = raw
            .header
            .split_once(':')
            .ok_or_else(|| bad("header must be `Name: value with {key}`".into()))?;
        let header_name = header_name.trim().to_ascii_lowercase();
        if header_name.is_empty()
            || !header_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(bad(format!(
                "header name {header_name:?} is not a header name"
            )));
        }
        let template = template.trim();
        let header_value = match template.split_once("{key}") {
            Some((a, b)) if !b.contains("{key}") && !template.chars().any(char::is_control) => {
                (a.to_owned(), b.to_owned())
            }
            _ => return Err(bad("header must hold `{key}` exactly once".into())),
        };
        if raw.allow.is_empty() {
            return Err(bad(
                "`allow` names nothing: the route would refuse every request".into(),
            ));
        }
        let mut allow = Vec::new();
        for a in &raw.allow {
            let (m, p) = a
                .trim()
                .split_once(' ')
                .ok_or_else(|| bad(format!("allow {a:?}: `METHOD /path/prefix`")))?;
            let p = p.trim();
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(bad(format!("allow {a:?}: {m:?} is not a method")));
            }
            let clear = clear_path(p)
                .filter(|c| c.starts_with('/') && c == p)
                .ok_or_else(|| bad(format!("allow {a:?}: {p:?} is not a plain absolute path")))?;
            allow.push((m.to_ascii_uppercase(), clear));
        }
        if raw.key_file.trim().is_empty() {
            return Err(bad("key_file is empty".into()));
        }
        Ok(ProviderRoute {
            name: raw.name.clone(),
            upstream,
            tls_name,
            base_path,
            key_file: raw.key_file.clone(),
            header_name,
            header_value,
            allow,
            ca_file: raw.ca_file.clone(),
            origin,
        })
    }

    /// The path to request upstream for `method` and the provider path `target` (with its
    /// query), when the route allows it.
    pub fn permits(&self, method: &str, target: &str) -> Result<String, RouteRefusal> {
        let clear = clear_path(target).ok_or(RouteRefusal::UnclearPath)?;
        if self
            .allow
            .iter()
            .any(|(m, p)| m == method && under_prefix(&clear, p))
        {
            // The raw target, not the decoded one: it is what was judged to read one way.
            return Ok(format!("{}{target}", self.base_path));
        }
        Err(RouteRefusal::NotAllowed {
            name: self.name.clone(),
            method: method.to_owned(),
            path: clear,
            allowed: self.allowed(),
        })
    }

    /// `POST /v1/chat/completions, GET /v1/models`.
    pub fn allowed(&self) -> String {
        let a: Vec<String> = self.allow.iter().map(|(m, p)| format!("{m} {p}")).collect();
        a.join(", ")
    }

    /// The header's value with `key` in it.
    pub fn header_with(&self, key: &str) -> String {
        format!("{}{key}{}", self.header_value.0, self.header_value.1)
    }

    /// `https://host:port/base`, for `egress rules` and the logs.
    pub fn upstream_url(&self) -> String {
        let host = if self.tls_name.contains(':') {
            format!("[{}]", self.tls_name)
        } else {
            self.tls_name.clone()
        };
        format!(
            "https://{host}:{}{}",
            self.upstream.ports[0], self.base_path
        )
    }
}

/// One line per route, as `egress rules` prints it (never the key).
pub fn describe_route(r: &ProviderRoute) -> String {
    format!(
        "route {ROUTE_PREFIX}{}/ -> {}  allow {}  key from {} as {}{}  ({})",
        r.name,
        r.upstream_url(),
        r.allowed(),
        r.key_file,
        r.header_name,
        if r.upstream.internal {
            "  internal"
        } else {
            ""
        },
        r.origin
    )
}

#[cfg(test)]
#[path = "egress_routes_tests.rs"]
mod tests;
