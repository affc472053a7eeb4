//! The proxy's side of the egress rules: the rule set it serves (the policy file's
//! `[[egress.rules]]` plus its `--allow` entries; `policy::egress` judges them), how it reads a
//! requested host, and where an allowed destination may lead once resolved.
//!
//! A requested host is read the way the most permissive client reads it
//! (`readproxy::addr::parse_host`): `2130706433`, `0x7f.1` and `127.1` are 127.0.0.1 and match
//! only an address rule for it; IDNA is applied, so a lookalike name is another name.
//!
//! After resolution: an address rule reaches its address only. A name reaches public unicast
//! addresses only (never loopback, private, link-local, CGNAT, ULA, the proxy's own networks,
//! whatever DNS or the hosts file answers), unless its rule says `internal`: then private
//! addresses too, but still never loopback, link-local (cloud metadata), unspecified or
//! multicast.

use crate::policy::egress::{
    canonical_ip as canonical, DestHost, EgressRule, EgressRuleError, HostPattern,
};
use crate::readproxy::addr::{non_public, parse_host, Host};
use std::net::IpAddr;

/// The rules the proxy serves: the file's first, then `--allow` entries.
pub fn rule_set<S: AsRef<str>>(
    file: &[EgressRule],
    allow: &[S],
) -> Result<Vec<EgressRule>, EgressRuleError> {
    let mut rules = file.to_vec();
    for a in allow {
        rules.push(EgressRule::from_allow(a.as_ref().trim())?);
    }
    Ok(rules)
}

/// A requested host (as `split_host_port` gave it: IPv6 without brackets) as the rules read it.
pub fn dest_host(raw: &str) -> Result<DestHost, &'static str> {
    let bracketed;
    let raw = if raw.contains(':') && !raw.starts_with('[') {
        bracketed = format!("[{raw}]");
        &bracketed
    } else {
        raw
    };
    Ok(match parse_host(raw)? {
        Host::Ip(ip) => DestHost::Ip(ip),
        Host::Name(n) => DestHost::Name(n),
    })
}

/// The networks the proxy's own interfaces are on (address, prefix length).
#[derive(Debug, Clone, Default)]
pub struct OwnNets(pub Vec<(IpAddr, u8)>);

impl OwnNets {
    /// Reads the interfaces now; an interface without a netmask counts as its one address.
    pub fn read() -> std::io::Result<OwnNets> {
        let mut nets = Vec::new();
        for ifa in nix::ifaddrs::getifaddrs().map_err(std::io::Error::from)? {
            let ip = |s: &nix::sys::socket::SockaddrStorage| -> Option<IpAddr> {
                s.as_sockaddr_in()
                    .map(|a| IpAddr::V4(a.ip()))
                    .or_else(|| s.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip())))
            };
            let Some(addr) = ifa.address.as_ref().and_then(ip) else {
                continue;
            };
            let bits = ifa
                .netmask
                .as_ref()
                .and_then(ip)
                .map_or(if addr.is_ipv4() { 32 } else { 128 }, prefix_len);
            nets.push((addr, bits));
        }
        Ok(OwnNets(nets))
    }

    fn contains(&self, a: IpAddr) -> bool {
        self.0.iter().any(|(net, bits)| same_net(*net, a, *bits))
    }
}

fn prefix_len(mask: IpAddr) -> u8 {
    let ones = match mask {
        IpAddr::V4(m) => u32::from(m).leading_ones(),
        IpAddr::V6(m) => u128::from(m).leading_ones(),
    };
    u8::try_from(ones).unwrap_or(0)
}

fn same_net(net: IpAddr, a: IpAddr, bits: u8) -> bool {
    match (net, a) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(bits.min(32)))
                .unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(bits.min(128)))
                .unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// Never reachable through a name, even an internal one.
fn never_by_name(a: IpAddr) -> Option<&'static str> {
    match canonical(a) {
        IpAddr::V4(v) if v.is_loopback() => Some("loopback"),
        IpAddr::V4(v) if v.is_link_local() => Some("link-local (incl. cloud metadata)"),
        IpAddr::V4(v) if v.is_unspecified() || v.octets()[0] == 0 => Some("\"this network\""),
        IpAddr::V4(v) if v.is_multicast() || v.is_broadcast() => Some("multicast or broadcast"),
        IpAddr::V6(v) if v.is_loopback() => Some("loopback"),
        IpAddr::V6(v) if v.is_unspecified() => Some("unspecified"),
        IpAddr::V6(v) if v.is_multicast() => Some("multicast"),
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80 => Some("link-local"),
        _ => None,
    }
}

/// Whether `rule` may connect to `addr`; the error says why not.
pub fn may_reach(rule: &EgressRule, addr: IpAddr, own: &OwnNets) -> Result<(), String> {
    if let HostPattern::Ip(ip) = rule.host {
        return if canonical(ip) == canonical(addr) {
            Ok(())
        } else {
            Err(format!("{addr} is not the rule's address {ip}"))
        };
    }
    if let Some(why) = never_by_name(addr) {
        return Err(format!("{addr} is {why}: a host name never reaches it"));
    }
    if rule.internal {
        return Ok(());
    }
    if let Some(why) = non_public(addr) {
        return Err(format!(
            "{addr} is {why}: only a rule marked `internal` lets a name reach it"
        ));
    }
    if own.contains(canonical(addr)) {
        return Err(format!(
            "{addr} is on the proxy's own network: only a rule marked `internal` lets a name reach it"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(host: &str, internal: bool) -> EgressRule {
        let mut r = EgressRule::from_allow(&format!("{host}:443")).unwrap();
        r.internal = internal;
        r
    }

    #[test]
    fn requested_hosts_are_read_in_every_spelling() {
        let ip = |s: &str| DestHost::Ip(s.parse().unwrap());
        for (raw, want) in [
            ("2130706433", ip("127.0.0.1")),
            ("0x7f.1", ip("127.0.0.1")),
            ("0177.0.0.1", ip("127.0.0.1")),
            ("127.1", ip("127.0.0.1")),
            ("::1", ip("::1")),
            ("[::1]", ip("::1")),
            ("API.Example.COM.", DestHost::Name("api.example.com".into())),
        ] {
            assert_eq!(dest_host(raw), Ok(want), "{raw}");
        }
        for raw in ["[example.com]", "a..b", "fe80::1%eth0", "1.2.3.999"] {
            assert!(dest_host(raw).is_err(), "{raw} accepted");
        }
    }

    #[test]
    fn names_reach_public_addresses_only_unless_internal() {
        let own = OwnNets(vec![("93.184.0.7".parse().unwrap(), 24)]);
        let public = named("api.example.com", false);
        let internal = named("model", true);
        let literal = EgressRule::from_allow("10.0.0.5:443").unwrap();
        let rows: [(&EgressRule, &str, bool); 19] = [
            (&public, "93.184.216.34", true),
            (&public, "2606:2800:220:1::1", true),
            (&public, "127.0.0.1", false),
            (&public, "127.0.1.1", false),
            (&public, "10.1.2.3", false),
            (&public, "172.30.77.20", false),
            (&public, "192.168.1.1", false),
            (&public, "100.64.0.1", false),
            (&public, "169.254.169.254", false),
            (&public, "fd00::1", false),
            (&public, "::ffff:127.0.0.1", false),
            (&public, "0.0.0.0", false),
            (&public, "93.184.0.99", false),
            (&internal, "172.30.78.10", true),
            (&internal, "fd00::1", true),
            (&internal, "127.0.0.1", false),
            (&internal, "169.254.169.254", false),
            (&literal, "10.0.0.5", true),
            (&literal, "10.0.0.6", false),
        ];
        for (r, a, want) in rows {
            let got = may_reach(r, a.parse().unwrap(), &own);
            assert_eq!(got.is_ok(), want, "{} -> {a}: {got:?}", r.origin);
        }
    }

    #[test]
    fn own_networks_are_read_from_the_interfaces() {
        let own = OwnNets::read().unwrap();
        assert!(own.contains("127.0.0.1".parse().unwrap()), "{own:?}");
        assert!(own.contains("127.0.0.99".parse().unwrap()), "{own:?}");
    }
}
