//! Which addresses an autonomous HTTP read may reach, and what a URL's host means as an
//! address in every spelling a client or resolver accepts. Pure.
//!
//! A host is read the way the most permissive consumer reads it: `inet_aton` (glibc, curl's
//! resolver) takes `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` as 127.0.0.1, and WHATWG
//! URL parsing treats any host whose last label is a number as IPv4. So a host whose last
//! label looks numeric is an IPv4 literal or refused; it is never sent to DNS.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a request's host is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// An address literal, in whichever spelling.
    Ip(IpAddr),
    /// A DNS name: lower-case ASCII (IDNA applied), no trailing dot.
    Name(String),
}

/// Reads a URL or CONNECT host (IPv6 in brackets or not); the error says why it is refused.
pub fn parse_host(raw: &str) -> Result<Host, &'static str> {
    if let Some(inner) = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        if inner.contains('%') {
            return Err("an IPv6 zone id is not reachable");
        }
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| Host::Ip(IpAddr::V6(a)))
            .map_err(|_| "not an IPv6 address");
    }
    if raw.contains(':') {
        return Err("an IPv6 address must be in brackets");
    }
    let ascii = if raw.is_ascii() {
        raw.to_ascii_lowercase()
    } else {
        // Fullwidth digits and dots map to ASCII here, so `１２７．０．０．１` is caught below.
        idna::domain_to_ascii(raw).map_err(|_| "the host name is not valid IDNA")?
    };
    let name = ascii.strip_suffix('.').unwrap_or(&ascii);
    if name.is_empty() || name.len() > 253 {
        return Err("the host name is empty or too long");
    }
    let last = name.rsplit('.').next().unwrap_or_default();
    if looks_numeric(last) {
        return parse_ipv4_loose(name)
            .map(|a| Host::Ip(IpAddr::V4(a)))
            .ok_or("the host ends in a number but is not an IPv4 address");
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !name.split('.').all(label_ok) {
        return Err("not a valid host name");
    }
    Ok(Host::Name(name.to_owned()))
}

/// A label WHATWG and `inet_aton` would read as a number: decimal, or `0x` hex (even empty).
fn looks_numeric(label: &str) -> bool {
    let hex = label
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    hex || (!label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()))
}

/// `inet_aton`: 1 to 4 parts, each decimal, `0`-octal or `0x`-hex; the last fills the rest.
pub fn parse_ipv4_loose(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(4);
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x") {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        let n = if digits.is_empty() && radix == 16 {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        if p.is_empty() || n > u64::from(u32::MAX) {
            return None;
        }
        nums.push(n);
    }
    let (last, head) = nums.split_last()?;
    if head.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (4 - head.len())) {
        return None;
    }
    let mut v: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        v |= n << (8 * (3 - i));
    }
    u32::try_from(v | last).ok().map(Ipv4Addr::from)
}

/// Why `ip` is no public unicast address, or `None` when an autonomous read may reach it.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => non_public_v4(a),
        IpAddr::V6(a) => non_public_v6(a),
    }
}

fn in_v4(a: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    u32::from(a) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn non_public_v4(a: Ipv4Addr) -> Option<&'static str> {
    const RANGES: [([u8; 4], u32, &str); 17] = [
        ([0, 0, 0, 0], 8, "\"this network\" (0/8)"),
        ([10, 0, 0, 0], 8, "private (RFC 1918)"),
        ([100, 64, 0, 0], 10, "carrier-grade NAT (100.64/10)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local (incl. cloud metadata)"),
        ([172, 16, 0, 0], 12, "private (RFC 1918)"),
        ([192, 0, 0, 0], 24, "IETF protocol assignments (192.0.0/24)"),
        ([192, 0, 2, 0], 24, "documentation (TEST-NET-1)"),
        ([192, 31, 196, 0], 24, "AS112 (192.31.196/24)"),
        ([192, 52, 193, 0], 24, "AMT (192.52.193/24)"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast"),
        ([192, 168, 0, 0], 16, "private (RFC 1918)"),
        ([198, 18, 0, 0], 15, "benchmarking (198.18/15)"),
        ([198, 51, 100, 0], 24, "documentation (TEST-NET-2)"),
        ([203, 0, 113, 0], 24, "documentation (TEST-NET-3)"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved (240/4, incl. broadcast)"),
    ];
    RANGES
        .iter()
        .find(|(net, bits, _)| in_v4(a, *net, *bits))
        .map(|(_, _, why)| *why)
}

fn non_public_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    let v4_at = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // Forms that carry an IPv4 address are judged by it (::ffff:127.0.0.1 is loopback).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return non_public_v4(v4_at(s[6], s[7])).or(if s[5] == 0 {
            Some("IPv4-compatible IPv6 (deprecated)")
        } else {
            None
        });
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return non_public_v4(v4_at(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return non_public_v4(v4_at(s[1], s[2])).or(Some("6to4 (2002::/16)"));
    }
    if s[0] & 0xe000 != 0x2000 {
        return Some(match s[0] {
            x if x & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
            x if x & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
            x if x & 0xff00 == 0xff00 => "multicast",
            _ => "not global unicast (outside 2000::/3)",
        });
    }
    match (s[0], s[1]) {
        (0x2001, x) if x < 0x0200 => Some("IETF protocol assignments (2001::/23, incl. Teredo)"),
        (0x2001, 0x0db8) => Some("documentation (2001:db8::/32)"),
        (x, _) if x & 0xfff0 == 0x3ff0 => Some("documentation (3fff::/20)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(h: &str) -> IpAddr {
        match parse_host(h) {
            Ok(Host::Ip(a)) => a,
            other => panic!("{h}: {other:?}"),
        }
    }

    #[test]
    fn every_spelling_of_loopback_is_loopback() {
        for h in [
            "127.0.0.1",
            "2130706433",
            "0177.0.0.1",
            "0x7f.0.0.1",
            "0x7f000001",
            "0X7F.1",
            "127.1",
            "127.0.1",
            "017700000001",
            "127.0.0.1.",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "[::127.0.0.1]",
            "[0:0:0:0:0:ffff:127.0.0.1]",
            "[64:ff9b::7f00:1]",
            "[2002:7f00:1::]",
            "１２７．０．０．１",
        ] {
            assert!(non_public(ip(h)).is_some(), "{h} -> {}", ip(h));
        }
        assert_eq!(ip("0177.0.0.1"), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(ip("0x7f.1"), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(ip("2130706433"), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(
            ip("169.254.43518"),
            "169.254.169.254".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn numeric_looking_hosts_that_are_no_address_are_refused() {
        for h in [
            "1.2.3.4.5",
            "256.1.1.1",
            "0x",
            "1.2.3.0x100",
            "08.1.1.1",
            "4294967296",
            "[fe80::1%eth0]",
            "::1",
            "",
        ] {
            assert!(
                !matches!(parse_host(h), Ok(Host::Name(_))),
                "{h} read as a name"
            );
        }
        assert_eq!(
            parse_host("Example.COM."),
            Ok(Host::Name("example.com".into()))
        );
        assert_eq!(
            parse_host("bücher.example"),
            Ok(Host::Name("xn--bcher-kva.example".into()))
        );
        assert_eq!(parse_host("1.example"), Ok(Host::Name("1.example".into())));
    }

    #[test]
    fn internal_ranges_refused_public_allowed() {
        for a in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.0.170",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "2001::1",
            "fec0::1",
            "100::1",
            "3fff::1",
            "2002:a00:1::1",
        ] {
            assert!(non_public(a.parse().unwrap()).is_some(), "{a}");
        }
        for a in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
        ] {
            assert_eq!(non_public(a.parse().unwrap()), None, "{a}");
        }
    }
}
