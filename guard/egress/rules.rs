//! The egress allow-list: which `host:port` destinations the agent's traffic may reach. Pure.
//!
//! An entry is an exact host name or IP literal and a port (`api.example.com:443`,
//! `10.0.0.5:8080`, `[::1]:8080`). Wildcards, leading dots, schemes, paths and port 0 are
//! refused at load: a pattern is how an allow-list starts reaching attacker hosts
//! (`*.github.io`), and each entry should name one service.
//!
//! Where a destination may lead: a host NAME never reaches loopback, link-local, multicast or
//! unspecified addresses, whatever DNS answers (DNS rebinding onto the proxy's own
//! neighbourhood); only an entry that is itself such an IP literal reaches one.

use std::net::IpAddr;

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Lower-case host name without a trailing dot, or an IP literal's text.
    pub host: String,
    pub port: u16,
    /// The entry is an IP literal (then it is the only address it reaches).
    pub ip: Option<IpAddr>,
}

/// Why an allow-list entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("egress allow entry {entry:?}: {why}")]
pub struct RuleError {
    pub entry: String,
    pub why: &'static str,
}

/// Splits `host:port` (IPv6 in brackets); `None` when the shape is wrong.
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

/// Lower-cases and drops one trailing dot: the form rules and requests are compared in.
pub fn normal_host(h: &str) -> String {
    h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase()
}

impl Rule {
    /// Parses one entry (see the module doc).
    pub fn parse(entry: &str) -> Result<Rule, RuleError> {
        let bad = |why| RuleError {
            entry: entry.to_owned(),
            why,
        };
        if entry.contains("://") || entry.contains('/') {
            return Err(bad("give host:port only (no scheme, no path)"));
        }
        let (host, port) =
            split_host_port(entry).ok_or_else(|| bad("not host:port (port 1-65535)"))?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Rule {
                host: ip.to_string(),
                port,
                ip: Some(ip),
            });
        }
        if host.contains('*') || host.starts_with('.') {
            return Err(bad(
                "wildcards and leading dots are not allowed: name each host",
            ));
        }
        let host = normal_host(host);
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if host.len() > 253 || !host.split('.').all(label_ok) {
            return Err(bad("not a valid host name"));
        }
        Ok(Rule {
            host,
            port,
            ip: None,
        })
    }
}

/// The whole list; an empty list allows nothing (and is allowed: a deployment with no
/// provider reachable yet).
pub fn parse_all<S: AsRef<str>>(entries: &[S]) -> Result<Vec<Rule>, RuleError> {
    entries
        .iter()
        .map(|e| Rule::parse(e.as_ref().trim()))
        .collect()
}

/// The rule that allows `host:port`, if one does.
pub fn matching<'a>(rules: &'a [Rule], host: &str, port: u16) -> Option<&'a Rule> {
    let h = normal_host(host.trim_start_matches('[').trim_end_matches(']'));
    let as_ip = h.parse::<IpAddr>().ok().map(|ip| ip.to_string());
    rules
        .iter()
        .find(|r| r.port == port && (r.host == h || as_ip.as_deref() == Some(r.host.as_str())))
}

/// Whether `rule` may connect to `addr` (see the module doc).
pub fn may_reach(rule: &Rule, addr: IpAddr) -> bool {
    if let Some(ip) = rule.ip {
        return ip == addr;
    }
    let special = match addr {
        IpAddr::V4(a) => {
            a.is_loopback()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_unspecified()
                || a.is_broadcast()
        }
        IpAddr::V6(a) => {
            let mapped = a.to_ipv4_mapped();
            a.is_loopback()
                || a.is_multicast()
                || a.is_unspecified()
                || (a.segments()[0] & 0xffc0) == 0xfe80
                || mapped
                    .is_some_and(|m| m.is_loopback() || m.is_link_local() || m.is_unspecified())
        }
    };
    !special
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_exact_host_and_port() {
        let ok = [
            ("api.example.com:443", "api.example.com", 443),
            ("API.Example.COM.:443", "api.example.com", 443),
            ("10.0.0.5:8080", "10.0.0.5", 8080),
            ("[::1]:8080", "::1", 8080),
            ("model:8080", "model", 8080),
        ];
        for (e, host, port) in ok {
            let r = Rule::parse(e).unwrap_or_else(|err| panic!("{err}"));
            assert_eq!((r.host.as_str(), r.port), (host, port), "{e}");
        }
        for e in [
            "*.github.com:443",
            ".github.io:443",
            "github.com",
            "github.com:0",
            "github.com:99999",
            "https://github.com:443",
            "github.com:443/x",
            "gith*b.com:443",
            "-a.com:443",
            "a..b:443",
            ":443",
            "::1:443",
            "github.com:+443",
            "a b:443",
        ] {
            assert!(Rule::parse(e).is_err(), "{e} accepted");
        }
    }

    #[test]
    fn matching_is_exact_and_names_never_reach_loopback() {
        let rules = parse_all(&["api.example.com:443", "127.0.0.1:8080"]).unwrap();
        assert!(matching(&rules, "api.example.com", 443).is_some());
        assert!(matching(&rules, "API.example.com.", 443).is_some());
        assert!(matching(&rules, "api.example.com", 80).is_none());
        assert!(matching(&rules, "evil.api.example.com", 443).is_none());
        assert!(matching(&rules, "api.example.com.evil", 443).is_none());
        assert!(matching(&rules, "127.0.0.1", 8080).is_some());
        assert!(matching(&rules, "127.0.0.2", 8080).is_none());
        let name = &rules[0];
        for a in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(!may_reach(name, a.parse().unwrap()), "{a}");
        }
        assert!(may_reach(name, "93.184.216.34".parse().unwrap()));
        assert!(may_reach(name, "172.30.77.20".parse().unwrap()));
        assert!(may_reach(&rules[1], "127.0.0.1".parse().unwrap()));
        assert!(!may_reach(&rules[1], "127.0.0.2".parse().unwrap()));
    }
}
