//! The read proxy's resolver: a name becomes the addresses the proxy will check and then
//! connect to itself, so what was checked is what is reached (no second lookup, no DNS
//! rebinding window). The hosts file is read first, as glibc's `files` source does: a name
//! it maps (Debian's `127.0.1.1 <hostname>` line) gets those addresses and no DNS answer.

use super::addr::{non_public, parse_host, Host};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// Where names come from.
#[derive(Debug, Clone)]
pub struct ResolverOptions {
    /// The hosts file (`/etc/hosts`; tests point it elsewhere). Read on every lookup, so an
    /// edit is seen at once; a missing file maps nothing.
    pub hosts_file: PathBuf,
    /// Whether names the hosts file does not map are asked of the system resolver.
    pub dns: bool,
    /// Addresses taken as public though their range is not (tests stand a "public" server on
    /// a loopback address). Empty in every deployment.
    pub treat_as_public: Vec<IpAddr>,
    pub timeout: Duration,
}

impl Default for ResolverOptions {
    fn default() -> Self {
        ResolverOptions {
            hosts_file: PathBuf::from("/etc/hosts"),
            dns: true,
            treat_as_public: Vec::new(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Why a destination is refused; the text is what the agent reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{host}: {why}")]
    BadHost { host: String, why: &'static str },
    #[error("{host} is {addr}, a {why} address: an autonomous read reaches public addresses only")]
    NotPublic {
        host: String,
        addr: IpAddr,
        why: &'static str,
    },
    #[error("{host} does not resolve: {why}")]
    NoAddress { host: String, why: String },
}

/// The addresses the hosts file gives `name` (lower-case, no trailing dot).
fn from_hosts_file(text: &str, name: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let Some(addr) = fields.next().and_then(|a| a.parse::<IpAddr>().ok()) else {
            continue;
        };
        let hit = fields.any(|n| n.trim_end_matches('.').eq_ignore_ascii_case(name));
        if hit && !out.contains(&addr) {
            out.push(addr);
        }
    }
    out
}

impl ResolverOptions {
    fn check(&self, host: &str, addr: IpAddr) -> Result<(), Refusal> {
        if self.treat_as_public.contains(&addr) {
            return Ok(());
        }
        match non_public(addr) {
            Some(why) => Err(Refusal::NotPublic {
                host: host.to_owned(),
                addr,
                why,
            }),
            None => Ok(()),
        }
    }

    /// The checked addresses of `host` for `port`: every address the name has must be
    /// public (one internal answer refuses the name: a client cannot pick among them).
    /// `Ok(None)`: the name does not resolve here and `unresolved_ok` (an upstream proxy,
    /// whose own allow-list then decides, will resolve it).
    pub async fn resolve(
        &self,
        host: &str,
        port: u16,
        unresolved_ok: bool,
    ) -> Result<Option<Vec<SocketAddr>>, Refusal> {
        let name = match parse_host(host) {
            Ok(Host::Ip(a)) => {
                let a = match a {
                    IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
                    v4 => v4,
                };
                self.check(host, a)?;
                return Ok(Some(vec![SocketAddr::new(a, port)]));
            }
            Ok(Host::Name(n)) => n,
            Err(why) => {
                return Err(Refusal::BadHost {
                    host: host.to_owned(),
                    why,
                })
            }
        };
        // A small local file: read in place (a blocking-pool hop costs more than the read).
        let hosts = std::fs::read_to_string(&self.hosts_file).unwrap_or_default();
        let mut addrs = from_hosts_file(&hosts, &name);
        if addrs.is_empty() && self.dns {
            let looked = tokio::time::timeout(
                self.timeout,
                tokio::net::lookup_host((format!("{name}."), port)),
            )
            .await;
            match looked {
                Ok(Ok(found)) => addrs = found.map(|s| s.ip()).collect(),
                Ok(Err(e)) if unresolved_ok => {
                    tracing::debug!(error = %e, "read proxy: unresolved")
                }
                Ok(Err(e)) => {
                    return Err(Refusal::NoAddress {
                        host: host.to_owned(),
                        why: e.to_string(),
                    })
                }
                Err(_) => {
                    return Err(Refusal::NoAddress {
                        host: host.to_owned(),
                        why: "lookup timed out".into(),
                    })
                }
            }
        }
        if addrs.is_empty() {
            if unresolved_ok {
                return Ok(None);
            }
            return Err(Refusal::NoAddress {
                host: host.to_owned(),
                why: "no address".into(),
            });
        }
        let mut out = Vec::with_capacity(addrs.len());
        for a in addrs {
            let a = match a {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
                v4 => v4,
            };
            self.check(host, a)?;
            out.push(SocketAddr::new(a, port));
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_lines_map_names() {
        let text = "127.0.0.1 localhost\n127.0.1.1\tdevbox.acme-corp.com devbox # Debian\n\
                    # 10.0.0.1 commented\n10.0.0.5 lan.example.\nbad line\n";
        assert_eq!(
            from_hosts_file(text, "devbox"),
            vec!["127.0.1.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(from_hosts_file(text, "devbox.acme-corp.com").len(), 1);
        assert_eq!(from_hosts_file(text, "lan.example").len(), 1);
        assert!(from_hosts_file(text, "commented").is_empty());
    }

    #[tokio::test]
    async fn names_the_hosts_file_maps_inside_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = dir.path().join("hosts");
        std::fs::write(
            &hosts,
            "127.0.1.1 DevBox.acme-corp.com\n93.184.216.34 pub.test\n",
        )
        .unwrap();
        let r = ResolverOptions {
            hosts_file: hosts,
            dns: false,
            ..Default::default()
        };
        for h in [
            "devbox.acme-corp.com",
            "DEVBOX.acme-corp.com.",
            "2130706433",
            "[::1]",
        ] {
            assert!(
                matches!(
                    r.resolve(h, 80, false).await,
                    Err(Refusal::NotPublic { .. })
                ),
                "{h}"
            );
        }
        let ok = r.resolve("pub.test", 443, false).await.unwrap().unwrap();
        assert_eq!(ok, vec!["93.184.216.34:443".parse().unwrap()]);
        assert!(matches!(
            r.resolve("nowhere.test", 80, false).await,
            Err(Refusal::NoAddress { .. })
        ));
        assert_eq!(r.resolve("nowhere.test", 80, true).await, Ok(None));
    }
}
