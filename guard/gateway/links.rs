//! Door links: `ws://HOST:PORT/door/<secret>` authenticates a front-door client (ACP keeps
//! the URL path). Only the SHA-256 of each secret is stored, under its name, in
//! `<state_dir>/front-links.json` (0600); the name is who the audit log says acted. The file
//! is read on every connection, so a revoke takes effect at once.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

/// The store's file name in the guard's state dir.
pub const LINKS_FILE: &str = "front-links.json";
/// The URL path prefix of a door link.
pub const DOOR_PREFIX: &str = "/door/";

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a door-link store ({reason})")]
    Corrupt { path: PathBuf, reason: String },
    #[error("link name {0:?}: use 1-64 letters, digits, '.', '_' or '-'")]
    Name(String),
    #[error("no randomness: {0}")]
    Random(String),
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    links: BTreeMap<String, Record>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    sha256: String,
    created_ms: u64,
}

fn path_of(state_dir: &Path) -> PathBuf {
    state_dir.join(LINKS_FILE)
}

fn load(state_dir: &Path) -> Result<Stored, LinkError> {
    let path = path_of(state_dir);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| LinkError::Corrupt {
            path,
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Stored::default()),
        Err(source) => Err(LinkError::Io { path, source }),
    }
}

/// Writes the store through a 0600 temp file renamed over the old one.
fn save(state_dir: &Path, s: &Stored) -> Result<(), LinkError> {
    let path = path_of(state_dir);
    let tmp = state_dir.join(format!(".{LINKS_FILE}.tmp"));
    let io = |source| LinkError::Io {
        path: path.clone(),
        source,
    };
    let text = serde_json::to_string_pretty(s).map_err(|e| LinkError::Corrupt {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Issues a new link for `name` (replacing an older one of that name); the secret, shown once.
pub fn issue(state_dir: &Path, name: &str, now_ms: u64) -> Result<String, LinkError> {
    if !valid_name(name) {
        return Err(LinkError::Name(name.into()));
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| LinkError::Random(e.to_string()))?;
    let secret = URL_SAFE_NO_PAD.encode(raw);
    let mut s = load(state_dir)?;
    s.links.insert(
        name.to_owned(),
        Record {
            sha256: digest(&secret),
            created_ms: now_ms,
        },
    );
    save(state_dir, &s)?;
    Ok(secret)
}

/// Withdraws `name`'s link; false when there was none.
pub fn revoke(state_dir: &Path, name: &str) -> Result<bool, LinkError> {
    let mut s = load(state_dir)?;
    let had = s.links.remove(name).is_some();
    if had {
        save(state_dir, &s)?;
    }
    Ok(had)
}

/// The name whose link `secret` is, if any (every record compared in constant time). An
/// unreadable store authenticates nobody.
pub fn verify(state_dir: &Path, secret: &str) -> Option<String> {
    let s = load(state_dir).ok()?;
    let d = digest(secret);
    let mut found = None;
    for (name, r) in &s.links {
        if bool::from(r.sha256.as_bytes().ct_eq(d.as_bytes())) {
            found = Some(name.clone());
        }
    }
    found
}

/// The secret in a request path `/door/<secret>` (nothing after it).
pub fn secret_in_path(path: &str) -> Option<&str> {
    let s = path.strip_prefix(DOOR_PREFIX)?;
    (!s.is_empty() && !s.contains(['/', '?', '#'])).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn issued_links_verify_by_hash_only_and_revoke_at_once() {
        let d = tempfile::tempdir().expect("tmp");
        let a = issue(d.path(), "ide-alice", 1).expect("issue");
        let b = issue(d.path(), "ci", 2).expect("issue");
        assert_eq!(verify(d.path(), &a).as_deref(), Some("ide-alice"));
        assert_eq!(verify(d.path(), &b).as_deref(), Some("ci"));
        assert_eq!(verify(d.path(), "nope"), None);
        let text = std::fs::read_to_string(d.path().join(LINKS_FILE)).expect("read");
        assert!(!text.contains(&a), "the secret itself is never stored");
        let mode = std::fs::metadata(d.path().join(LINKS_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(revoke(d.path(), "ide-alice").expect("revoke"));
        assert_eq!(verify(d.path(), &a), None);
        assert!(!revoke(d.path(), "ide-alice").expect("again"));
        let a2 = issue(d.path(), "ci", 3).expect("reissue");
        assert_eq!(
            verify(d.path(), &b),
            None,
            "reissuing replaces the old link"
        );
        assert_eq!(verify(d.path(), &a2).as_deref(), Some("ci"));
        assert!(matches!(issue(d.path(), "a b", 1), Err(LinkError::Name(_))));
        assert!(matches!(issue(d.path(), "", 1), Err(LinkError::Name(_))));
    }

    #[test]
    fn only_a_bare_door_path_carries_a_secret() {
        assert_eq!(secret_in_path("/door/abc"), Some("abc"));
        for p in [
            "/door/",
            "/door/a/b",
            "/door/a?x=1",
            "/doors/a",
            "/",
            "/door",
        ] {
            assert_eq!(secret_in_path(p), None, "{p}");
        }
    }
}
