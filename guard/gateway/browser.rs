//! The web prompt's signed-in browsers at the front door. A browser may open the door with
//! its web-prompt session cookie; that connection lives only as long as the session does:
//! signing out (or "sign out everywhere", or the session expiring) closes it, so revoking a
//! session takes back everything it opened, not only its next request. The web door's
//! sessions are reached through functions and a watch the wiring supplies, so this door
//! does not import that one.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::Request;

/// The identity of a live web-prompt session, by its cookie value (touches the session).
pub type SessionLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;
/// Whether a session is still live, by its cookie value (does not touch it: a connection
/// left open must not keep an idle session alive).
pub type SessionAlive = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Sessions end by expiry too, which no event announces: checked this often.
const RECHECK: Duration = Duration::from_secs(30);

/// The web prompt's sessions, as the door needs them.
pub struct BrowserSessions {
    lookup: SessionLookup,
    alive: SessionAlive,
    /// Changes whenever a web session ends (logout, revocation).
    ended: watch::Receiver<u64>,
}

impl BrowserSessions {
    pub fn new(lookup: SessionLookup, alive: SessionAlive, ended: watch::Receiver<u64>) -> Self {
        BrowserSessions {
            lookup,
            alive,
            ended,
        }
    }

    /// The signed-in browser behind the request's cookie (either cookie name of the web
    /// prompt: cookies are not bound to a port, so the web prompt's reaches the door):
    /// its identity and its session's cookie value.
    pub fn admit(&self, req: &Request) -> Option<(String, String)> {
        req.headers()
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .filter(|(k, _)| *k == "sg_session" || *k == "__Host-sg_session")
            .find_map(|(_, id)| (self.lookup)(id).map(|who| (who, id.to_owned())))
    }

    /// Resolves once the session with cookie value `id` has ended: checked at every session
    /// end the web door announces, and every [`RECHECK`] for expiry.
    pub async fn ended(&self, id: &str) {
        let mut ended = self.ended.clone();
        loop {
            if !(self.alive)(id) {
                return;
            }
            tokio::select! {
                changed = ended.changed() => if changed.is_err() {
                    // The web door is gone: no session outlives it.
                    return;
                },
                _ = tokio::time::sleep(RECHECK) => {}
            }
        }
    }
}

/// Resolves when the web-prompt session `id` a client came in with ends; never for a client
/// that came in with a door link (no session), whose connection no sign-out ends.
pub async fn session_end(sessions: Option<&BrowserSessions>, id: Option<&str>) {
    match (sessions, id) {
        (Some(s), Some(id)) => s.ended(id).await,
        _ => std::future::pending().await,
    }
}
