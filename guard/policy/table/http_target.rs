//! Where an HTTP read goes. A GET is autonomous only towards a public name: an IP address in
//! any spelling (`10.0.0.5`, `0x7f000001`, `2130706433`, `[::1]`), an internal or single-label
//! name (`localhost`, `metadata.google.internal`, `svc`) or a port other than 80/443 can be
//! the cloud metadata service or the control network, where a GET hands out credentials or
//! acts. Decided by allow-list on the URL text alone: the policy core never resolves names
//! (the sandbox refuses DNS to autonomous runs, so a name reaches only what /etc/hosts says).

use super::Classification;
use crate::policy::verdict::Category;

/// Name suffixes that are private by convention (RFC 6761/6762/8375 and common practice).
const INTERNAL_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "intranet",
    "lan",
    "home.arpa",
    "corp",
    "private",
];

/// Cloud metadata services by name: a GET there returns the machine's credentials.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.com",
    "instance-data",
    "instance-data.ec2.internal",
];

/// An IPv4 address as `inet_aton` reads it (what curl's resolver accepts): one to four parts,
/// each decimal, `0x` hex or `0` octal, the last filling the remaining bytes.
fn inet_aton(host: &str) -> Option<u32> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(4);
    for p in &parts {
        let n = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            u64::from_str_radix(h, 16).ok()?
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()?
        } else {
            p.parse::<u64>().ok()?
        };
        nums.push(n);
    }
    let (last, head) = nums.split_last()?;
    if head.iter().any(|n| *n > 255) || *last >= 1u64 << (8 * (5 - nums.len())) {
        return None;
    }
    let mut addr = 0u64;
    for (i, n) in head.iter().enumerate() {
        addr |= n << (24 - 8 * i);
    }
    u32::try_from(addr | last).ok()
}

/// Is `host` (lower case, no port) a cloud metadata service?
fn is_metadata(host: &str) -> bool {
    let h = host.trim_matches(['[', ']']);
    METADATA_NAMES.contains(&h)
        || h == "fd00:ec2::254"
        || inet_aton(h).is_some_and(|a| a >> 16 == 0xa9fe || a == 0x6464_64c8)
}

/// Why `url` is not a public http(s) target, or `None` when it is one.
pub(crate) fn not_public(url: &str) -> Option<String> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        // curl and httpie take a bare `host/path` as http.
        None => ("http".to_owned(), url),
    };
    if scheme != "http" && scheme != "https" {
        return Some(format!("speaks {scheme}, not http or https"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Userinfo (`user:pass@`) ends at the last `@` of the authority.
    let hostport = authority.rsplit('@').next().unwrap_or("");
    if hostport.starts_with('[') {
        return Some("an IPv6 address".into());
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    };
    if let Some(p) = port {
        if !(p == "80" && scheme == "http" || p == "443" && scheme == "https" || p.is_empty()) {
            return Some(format!("port {p}"));
        }
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Some(format!("the host {host:?} is not a plain name"));
    }
    let Some((_, tld)) = host.rsplit_once('.') else {
        return Some(format!("{host:?} is a single-label (internal) name"));
    };
    // A public name ends in an alphabetic top-level label; every IPv4 spelling does not.
    if tld.is_empty() || !tld.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Some(format!("{host:?} is an IP address"));
    }
    if INTERNAL_SUFFIXES
        .iter()
        .any(|s| host == *s || host.ends_with(&format!(".{s}")))
    {
        return Some(format!("{host:?} is an internal name"));
    }
    None
}

/// The host of `url` as written (lower case, brackets kept, no userinfo or port).
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let host = if hostport.starts_with('[') {
        hostport.split_inclusive(']').next().unwrap_or(hostport)
    } else {
        hostport.rsplit_once(':').map_or(hostport, |(h, _)| h)
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Gates an HTTP read of `url` that is not towards a public name; blocks the cloud metadata
/// service outright (its answer is credentials, as a key file's is).
pub(super) fn check(c: &mut Classification, url: &str) {
    if is_metadata(&host_of(url)) {
        c.add(
            Category::SensitivePath,
            "sensitive-path",
            format!(
                "`{url}` is the cloud metadata service: it hands out the machine's credentials"
            ),
        );
        return;
    }
    if let Some(why) = not_public(url) {
        c.add(
            Category::Unanalysable,
            "internal-host",
            format!("`{url}`: {why}; only public http(s) names are fetched autonomously"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::not_public;

    #[test]
    fn every_spelling_of_the_metadata_address_is_known() {
        use super::{host_of, inet_aton, is_metadata};
        assert_eq!(inet_aton("169.254.169.254"), Some(0xa9fe_a9fe));
        assert_eq!(inet_aton("2852039166"), Some(0xa9fe_a9fe));
        assert_eq!(inet_aton("0xa9fea9fe"), Some(0xa9fe_a9fe));
        assert_eq!(inet_aton("0251.0376.0251.0376"), Some(0xa9fe_a9fe));
        assert_eq!(inet_aton("169.254.43518"), Some(0xa9fe_a9fe));
        assert_eq!(inet_aton("127.1"), Some(0x7f00_0001));
        assert_eq!(inet_aton("256.1.1.1"), None);
        assert_eq!(inet_aton("example"), None);
        for u in [
            "http://169.254.169.254/latest/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://user@169.254.169.254:80/",
            "http://metadata.google.internal./computeMetadata/v1/",
            "http://[fd00:ec2::254]/latest/",
            "http://100.100.100.200/latest/meta-data/",
        ] {
            assert!(is_metadata(&host_of(u)), "{u}");
        }
        assert!(!is_metadata(&host_of("https://example.com/")));
    }

    #[test]
    fn only_public_names_on_default_ports_pass() {
        for ok in [
            "https://example.com",
            "https://example.com/x?y=1#z",
            "http://example.com:80/",
            "https://api.github.com:443/repos",
            "example.com/path",
            "https://user:pw@example.com/",
            "https://example.com./",
        ] {
            assert_eq!(not_public(ok), None, "{ok}");
        }
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "http://127.0.0.1:8080/x",
            "http://10.0.0.5/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::1]/",
            "http://[fd00::1]:80/",
            "http://localhost/",
            "http://app.localhost/",
            "http://metadata.google.internal/",
            "http://printer.local/",
            "http://svc/",
            "https://example.com:8443/",
            "http://example.com:443/",
            "ftp://example.com/",
            "gopher://example.com/",
            "http://{a,b}.example.com/",
            "http://example.com@10.0.0.1/",
            "http://",
        ] {
            assert!(not_public(bad).is_some(), "{bad}");
        }
    }
}
