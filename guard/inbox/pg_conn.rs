//! How a guard reaches the fleet database: the `[store] url` read once at start, and every
//! connection (the store's and the listener's) opened from it. The database is in the trust
//! base (whoever writes its rows decides), so when the URL asks for TLS the server must prove
//! who it is: its certificate chains to `sslrootcert` (else to Mozilla's roots, compiled in)
//! and names the host of the URL, whatever `sslmode` said (`require`, `verify-ca` and
//! `verify-full` all mean that here). Plain text is only ever what the URL says
//! (`sslmode=disable`): no mode falls back to it (`prefer` and `allow` are refused) and a URL
//! that says nothing is refused too, so nobody runs in plain text by not knowing.

use super::InboxError;
use rustls_pki_types::CertificateDer;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls;

/// How long a connection attempt may take before the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The fleet database as the URL names it: where, who, and how the channel is protected.
#[derive(Clone)]
pub struct Database {
    config: postgres::Config,
    /// `None`: plain text, because the URL said `sslmode=disable`.
    tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the config: it may hold a password.
        f.debug_struct("Database")
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Reads a `postgres://` URL: its `sslmode` and `sslrootcert` here (see the module), the
    /// rest by the client. A root file that cannot be read or holds no certificate is an
    /// error now, at start, not a connection failure later.
    pub fn parse(url: &str) -> Result<Database, InboxError> {
        let bad = |why: String| InboxError::Storage(format!("store url: {why}"));
        let mut parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let mut mode = None;
        let mut root = None;
        let mut rest = Vec::new();
        for (k, v) in parsed.query_pairs() {
            match k.as_ref() {
                "sslmode" => mode = Some(v.into_owned()),
                "sslrootcert" => root = Some(v.into_owned()),
                _ => rest.push((k.into_owned(), v.into_owned())),
            }
        }
        let tls =
            match (mode.as_deref(), &root) {
                (Some("disable"), None) => false,
                (Some("disable"), Some(_)) => {
                    return Err(bad(
                        "sslrootcert with sslmode=disable: which one is meant?".into()
                    ))
                }
                (Some("require" | "verify-ca" | "verify-full"), _) | (None, Some(_)) => true,
                (Some(m @ ("prefer" | "allow")), _) => {
                    return Err(bad(format!(
                    "sslmode={m} falls back to plain text: say sslmode=verify-full (the server \
                     is verified) or sslmode=disable"
                )))
                }
                (Some(m), _) => return Err(bad(format!("unknown sslmode={m}"))),
                (None, None) => return Err(bad(
                    "say how the database is reached: sslmode=verify-full (with sslrootcert=FILE, \
                     else Mozilla's roots) or sslmode=disable (plain text, a private network only)"
                        .into(),
                )),
            };
        // The client knows `require` (TLS or no connection); the verification is ours.
        rest.push((
            "sslmode".into(),
            if tls { "require" } else { "disable" }.into(),
        ));
        parsed.query_pairs_mut().clear().extend_pairs(rest);
        let mut config: postgres::Config = parsed
            .as_str()
            .parse()
            .map_err(|e: postgres::Error| bad(e.to_string()))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        config.application_name("sanctum-guard");
        let tls = if tls {
            Some(connector(root.as_deref()).map_err(bad)?)
        } else {
            None
        };
        Ok(Database { config, tls })
    }

    /// Whether connections are encrypted (and the server verified).
    pub fn encrypted(&self) -> bool {
        self.tls.is_some()
    }

    /// Opens one connection. Any failure here (no server, a refused or unverifiable
    /// certificate, a server that refuses this client) means the store is away for this
    /// guard: the error says why, and the caller fails closed.
    pub fn connect(&self) -> Result<postgres::Client, InboxError> {
        let res = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(postgres::NoTls),
        };
        res.map_err(|e| InboxError::StoreUnavailable(connect_error(&e)))
    }
}

/// The client's error with its causes: "error performing TLS handshake" alone does not say
/// that the certificate was refused.
fn connect_error(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        src = s.source();
    }
    text
}

/// The TLS client: the roots in `root` (PEM), else Mozilla's; ring as the provider (the
/// guard's one TLS stack, no aws-lc).
fn connector(root: Option<&str>) -> Result<MakeRustlsConnect, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("sslrootcert {path}: {e}"))?;
            let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &pem[..])
                .collect::<Result<_, _>>()
                .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            if certs.is_empty() {
                return Err(format!("sslrootcert {path}: no certificate in it"));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::Database;

    /// What each way of writing the URL means: plain text only when it says so, TLS with a
    /// verified server for every mode that asks for TLS, refused when it could fall back to
    /// plain text, says nothing, or names a root file that is not one.
    #[test]
    fn sslmode_table() {
        let dir = tempfile::tempdir().expect("tmp");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let ca = dir.path().join("ca.pem");
        let key = rcgen::KeyPair::generate().expect("key");
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        std::fs::write(&ca, p.self_signed(&key).expect("ca").pem()).expect("write");
        let (ca, empty) = (ca.display(), empty.display());
        let base = "postgres://g:pw@db.internal:5432/s";
        // (query, Some(encrypted) or None: refused at start)
        let table: Vec<(String, Option<bool>)> = vec![
            ("?sslmode=disable".into(), Some(false)),
            ("?sslmode=require".into(), Some(true)),
            ("?sslmode=verify-full".into(), Some(true)),
            ("?sslmode=verify-ca".into(), Some(true)),
            (format!("?sslmode=verify-full&sslrootcert={ca}"), Some(true)),
            (format!("?sslrootcert={ca}"), Some(true)),
            (
                format!("?sslmode=require&sslrootcert={ca}&connect_timeout=5"),
                Some(true),
            ),
            ("".into(), None),
            ("?sslmode=prefer".into(), None),
            ("?sslmode=allow".into(), None),
            ("?sslmode=sometimes".into(), None),
            (format!("?sslmode=disable&sslrootcert={ca}"), None),
            (format!("?sslmode=verify-full&sslrootcert={empty}"), None),
            (
                "?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem".into(),
                None,
            ),
            ("?sslmode=verify-full&sslcert=/c.pem".into(), None),
        ];
        for (query, want) in table {
            let url = format!("{base}{query}");
            let got = Database::parse(&url);
            match (want, &got) {
                (Some(enc), Ok(db)) => assert_eq!(db.encrypted(), enc, "{url}"),
                (None, Err(e)) => assert!(!e.to_string().contains("pw@"), "{e}"),
                _ => panic!("{url}: {got:?}"),
            }
        }
    }
}
