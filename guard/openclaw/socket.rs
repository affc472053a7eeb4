//! The approvals socket's path and shared token as OpenClaw stores them in the approvals
//! document (`socket.path`, `socket.token`). The guard's socket server listens on that path
//! and checks that token; when either is missing the guard seeds it exactly as OpenClaw's
//! `ensureExecApprovals` would, so OpenClaw clients find the same values.

use super::store::{expand_home, Store, StoreError};
use base64::Engine;
use std::fmt;
use std::path::PathBuf;

/// Where the approvals socket listens and the token its clients present.
#[derive(Clone, PartialEq, Eq)]
pub struct SocketConfig {
    /// Absolute socket path (`~` expanded).
    pub path: PathBuf,
    /// The shared token, trimmed. Secret: never log it.
    pub token: String,
}

impl fmt::Debug for SocketConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SocketConfig")
            .field("path", &self.path)
            .field("token", &"<redacted>")
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SocketConfigError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no random source for the socket token: {0}")]
    Random(String),
}

/// OpenClaw's `generateToken`: 24 random bytes, base64url without padding (32 chars).
pub fn generate_token() -> Result<String, SocketConfigError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| SocketConfigError::Random(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Reads `socket.path` and `socket.token` from the store; when either is absent, fills it in
/// (default path `$STATE/exec-approvals.sock`, a fresh token) in one store transaction and
/// returns the stored values. Existing values are never replaced, except by `token`: the
/// deployment's own token (a config's `token_file`), which the document is made to hold.
/// `home` expands a `~` in the stored socket path (OpenClaw writes `~/.openclaw/…`).
pub fn ensure_socket(
    store: &Store,
    home: Option<&std::path::Path>,
    token: Option<String>,
) -> Result<SocketConfig, SocketConfigError> {
    // Generate up front: the store callback cannot fail on randomness mid-transaction.
    let fresh_token = generate_token()?;
    let default_path = store.default_socket_path().to_string_lossy().into_owned();
    let doc = store.update(|doc| {
        let mut changed = false;
        if doc
            .socket
            .path
            .as_deref()
            .is_none_or(|p| p.trim().is_empty())
        {
            doc.socket.path = Some(default_path);
            changed = true;
        }
        if let Some(t) = &token {
            if doc.socket_token() != Some(t.as_str()) {
                doc.socket.token = Some(t.clone());
                changed = true;
            }
        } else if doc.socket_token().is_none() {
            doc.socket.token = Some(fresh_token);
            changed = true;
        }
        Ok(changed)
    })?;
    let path = doc.socket.path.as_deref().unwrap_or_default().trim();
    let token = doc.socket_token().unwrap_or_default().to_string();
    Ok(SocketConfig {
        path: expand_home(path, home),
        token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_has_openclaw_shape() {
        let a = generate_token().unwrap();
        let b = generate_token().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert_ne!(a, b);
    }

    #[test]
    fn debug_redacts_the_token() {
        let config = SocketConfig {
            path: "/s".into(),
            token: "very-secret-token".into(),
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("very-secret") && shown.contains("redacted"));
    }
}
