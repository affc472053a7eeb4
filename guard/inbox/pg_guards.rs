//! The fleet's table of guards (`sanctum_guards`: name, public URL, when it was said): each
//! guard says at start where its web prompt is (`[web] public_url`), so any guard's page
//! can link a decision to the deciding guard's record of it. A link is only ever built from
//! this table, never from a request row, and a URL read back is checked again as at start:
//! whoever can write the table is trusted with far more (SECURITY.md), but a value that is
//! not an https or loopback origin never becomes a link on the page.

use super::pg::open_client;
use super::pg_conn::Database;
use super::InboxError;

/// Why a public URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicUrlError {
    #[error("{0:?} is not a URL: {1}")]
    Parse(String, String),
    #[error("{0:?}: only https, or http to a loopback address (127.0.0.0/8, ::1, localhost)")]
    Scheme(String),
    #[error("{0:?}: the web prompt's origin only (scheme, host, port): no user, path, query or fragment")]
    NotOrigin(String),
}

/// The web prompt's public origin as other guards' pages link to it: `https://host[:port]`,
/// or `http://` to a loopback address (plain text off the machine would let anyone on the
/// path read the session cookie). Returned normalised (lower case, no trailing `/`).
pub fn public_url(text: &str) -> Result<String, PublicUrlError> {
    let parsed =
        url::Url::parse(text).map_err(|e| PublicUrlError::Parse(text.into(), e.to_string()))?;
    if text.trim() != text || text.chars().any(char::is_control) {
        return Err(PublicUrlError::NotOrigin(text.into()));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => {}
        "http" if loopback => {}
        _ => return Err(PublicUrlError::Scheme(text.into())),
    }
    let bare = parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.path() == "/"
        && parsed.query().is_none()
        && parsed.fragment().is_none();
    if !bare {
        return Err(PublicUrlError::NotOrigin(text.into()));
    }
    Ok(parsed.origin().ascii_serialization())
}

/// Says where guard `guard`'s web prompt is (None: nowhere, so no page links to it; a URL
/// said before is taken back).
pub fn publish(db: &Database, guard: &str, url: Option<&str>) -> Result<(), InboxError> {
    let mut c = open_client(db)?;
    let now = i64::try_from(super::now_ms()).unwrap_or(i64::MAX);
    c.execute(
        "INSERT INTO sanctum_guards (name, public_url, updated_ms) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET public_url = EXCLUDED.public_url,
             updated_ms = EXCLUDED.updated_ms",
        &[&guard, &url, &now],
    )
    .map_err(|e| InboxError::Storage(format!("sanctum_guards: {e}")))?;
    Ok(())
}

/// [`publish`] on a thread of its own (the synchronous client never runs inside the
/// guard's runtime), retried every 2 s while the database is away: a fleet's guard serves
/// without it, and its decisions are linked once it has answered.
pub fn publish_in_background(db: Database, guard: String, url: Option<String>) {
    let spawned = std::thread::Builder::new()
        .name("fleet-publish".into())
        .spawn(move || loop {
            match publish(&db, &guard, url.as_deref()) {
                Ok(()) => {
                    tracing::info!(guard = %guard, url = ?url, "fleet: web prompt's address published");
                    return;
                }
                Err(InboxError::StoreUnavailable(_)) => {
                    std::thread::sleep(std::time::Duration::from_secs(2))
                }
                Err(e) => {
                    tracing::error!(error = %e, "fleet: publishing the web prompt's address failed");
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "fleet: no thread to publish the web prompt's address");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_origins_become_links() {
        let ok = [
            (
                "https://guard-a.example:8484",
                "https://guard-a.example:8484",
            ),
            ("https://guard-a.example", "https://guard-a.example"),
            ("https://guard-a.example:443/", "https://guard-a.example"),
            (
                "HTTPS://Guard-A.Example:8484",
                "https://guard-a.example:8484",
            ),
            ("http://127.0.0.1:8484", "http://127.0.0.1:8484"),
            ("http://127.3.2.1:8484/", "http://127.3.2.1:8484"),
            ("http://localhost:8484", "http://localhost:8484"),
            ("http://[::1]:8484", "http://[::1]:8484"),
        ];
        for (text, want) in ok {
            assert_eq!(public_url(text).as_deref(), Ok(want), "{text}");
        }
        let refused = [
            "http://guard-a.example:8484",
            "http://10.0.0.5:8484",
            "http://127.0.0.1.evil.example:8484",
            "http://localhost.evil.example",
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://guard-a.example",
            "file:///etc/passwd",
            "https://user:pw@guard-a.example",
            "https://user@guard-a.example",
            "https://guard-a.example/sanctum",
            "https://guard-a.example/?next=evil",
            "https://guard-a.example#x",
            " https://guard-a.example",
            "https://guard-a.example\n",
            "https://",
            "//guard-a.example",
            "guard-a.example:8484",
            "",
        ];
        for text in refused {
            assert!(public_url(text).is_err(), "{text:?} must be refused");
        }
    }
}
