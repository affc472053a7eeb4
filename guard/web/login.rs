//! One-time login links. A link carries a random token in its URL fragment (`/login#t=…`, so
//! the token never reaches a server log or a `Referer`); the guard keeps only the token's
//! SHA-256, in `<state dir>/web-logins` (0600, one JSON object per line: hash, name, expiry).
//! `serve` writes one at start and `sanctum-guard web login-link` appends another while it
//! runs: the file is the shared store, so no signal or watcher is needed. Consuming a token
//! removes its line under an exclusive `flock`, so a link works once, across processes.
//! The newest link's full URL is also written to `<state dir>/web-login-link` (0600) for the
//! person who owns the state dir; it is removed at the first sign-in with any link.
//! In a fleet the hashes live in its database instead (`pg_auth`): a link any guard made
//! signs in on every guard, once across the fleet.

use super::auth_at::AuthAt;
use super::pg_auth::AuthDbError;
use super::secret::{hash_hex, random_token};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Pending login tokens (hashes only).
pub const LOGINS_FILE: &str = "web-logins";
/// The newest login link, for the state dir's owner.
pub const LINK_FILE: &str = "web-login-link";
/// The running web prompt's base URL, written by `serve` so the command line can build links.
pub const URL_FILE: &str = "web-url";
/// How long an unused link stays valid.
pub const LINK_TTL_MS: u64 = 24 * 3600 * 1000;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no running web prompt recorded in {0} (start `sanctum-guard serve` first)")]
    NoServer(PathBuf),
    #[error("random source: {0}")]
    Random(String),
    #[error("login name must be 1-32 characters of [A-Za-z0-9._-]")]
    BadName,
    #[error(transparent)]
    Fleet(#[from] AuthDbError),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pending {
    hash: String,
    name: String,
    #[serde(rename = "expiresMs")]
    expires_ms: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LoginError + '_ {
    move |source| LoginError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes `text` to `path` with mode 0600 (via a temp file and rename: never half-written).
pub fn write_private(path: &Path, text: &str) -> Result<(), LoginError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(text.as_bytes()).map_err(io(&tmp))?;
    f.sync_data().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// An exclusive lock on `path` (made 0600 if missing), held until the value drops: what
/// keeps two processes of the guard (serve, the CLI) from losing each other's writes to a
/// state file read and rewritten whole.
pub fn lock_exclusive(path: &Path) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    use nix::fcntl::{Flock, FlockArg};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e.into())
}

/// Runs `f` on the pending list under an exclusive lock and writes back what it returns.
fn with_pending<T>(dir: &Path, f: impl FnOnce(&mut Vec<Pending>) -> T) -> Result<T, LoginError> {
    let lock_path = dir.join(format!("{LOGINS_FILE}.lock"));
    let _held = lock_exclusive(&lock_path).map_err(io(&lock_path))?;
    let path = dir.join(LOGINS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&path)(e)),
    };
    let now = crate::engine::decision::now_ms();
    let mut list: Vec<Pending> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|p: &Pending| p.expires_ms > now)
        .collect();
    let out = f(&mut list);
    let mut body = String::new();
    for p in &list {
        body.push_str(&serde_json::to_string(p).unwrap_or_default());
        body.push('\n');
    }
    if body != text {
        write_private(&path, &body)?;
    }
    Ok(out)
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Makes a new one-time link for `name` against the web prompt at `base_url`, records its
/// hash, and writes the link file. Returns the link (the caller prints it once).
pub fn new_link(at: &AuthAt, base_url: &str, name: &str) -> Result<String, LoginError> {
    if !valid_name(name) {
        return Err(LoginError::BadName);
    }
    let token = random_token().map_err(LoginError::Random)?;
    match &at.fleet {
        Some(db) => db.add_link(&hash_hex(&token), name, LINK_TTL_MS)?,
        None => {
            let entry = Pending {
                hash: hash_hex(&token),
                name: name.to_owned(),
                expires_ms: crate::engine::decision::now_ms() + LINK_TTL_MS,
            };
            with_pending(&at.dir, |list| list.push(entry))?;
        }
    }
    let link = format!("{}/login#t={token}", base_url.trim_end_matches('/'));
    write_private(&at.dir.join(LINK_FILE), &format!("{link}\n"))?;
    Ok(link)
}

/// A new link for the running `serve` whose state dir is `at.dir` (the command line's
/// `web login-link`).
pub fn new_link_for_running(at: &AuthAt, name: &str) -> Result<String, LoginError> {
    let url_path = at.dir.join(URL_FILE);
    let base =
        std::fs::read_to_string(&url_path).map_err(|_| LoginError::NoServer(url_path.clone()))?;
    new_link(at, base.trim(), name)
}

/// Drops every live link issued to `name` (its account was removed); returns how many.
pub fn remove_named(at: &AuthAt, name: &str) -> Result<usize, LoginError> {
    if let Some(db) = &at.fleet {
        return Ok(db.remove_links(name)?);
    }
    with_pending(&at.dir, |list| {
        let before = list.len();
        list.retain(|p| p.name != name);
        before - list.len()
    })
}

/// The name a live link was issued to, without using the link up (None: no such link).
pub fn lookup(at: &AuthAt, token: &str) -> Result<Option<String>, LoginError> {
    let h = hash_hex(token);
    if let Some(db) = &at.fleet {
        return Ok(db.link_account(&h)?);
    }
    with_pending(&at.dir, |list| {
        list.iter()
            .find(|p| super::secret::eq_ct(p.hash.as_bytes(), h.as_bytes()))
            .map(|p| p.name.clone())
    })
}

/// Consumes `token`: Some(name) if it was a live link (now used up), None otherwise.
pub fn consume(at: &AuthAt, token: &str) -> Result<Option<String>, LoginError> {
    let h = hash_hex(token);
    let found = match &at.fleet {
        Some(db) => db.consume_link(&h)?,
        None => with_pending(&at.dir, |list| {
            let i = list
                .iter()
                .position(|p| super::secret::eq_ct(p.hash.as_bytes(), h.as_bytes()))?;
            Some(list.remove(i).name)
        })?,
    };
    if found.is_some() {
        // A person has signed in: the link file is no longer needed, and an unused link in a
        // file any process of the state dir's uid can read (the gateway's, on a one-user
        // laptop) is a credential lying around. Removed whichever link was used.
        let link_path = at.dir.join(LINK_FILE);
        match std::fs::remove_file(&link_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&link_path)(e)),
            _ => {}
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_of(link: &str) -> String {
        link.rsplit_once("#t=").expect("token").1.to_owned()
    }

    #[test]
    fn a_link_works_once_and_only_its_hash_is_kept() {
        let d = tempfile::tempdir().expect("tmp");
        let link = new_link(&AuthAt::local(d.path()), "http://127.0.0.1:1", "alice").expect("link");
        let t = token_of(&link);
        let store = std::fs::read_to_string(d.path().join(LOGINS_FILE)).expect("store");
        assert!(
            !store.contains(&t) && store.contains(&hash_hex(&t)),
            "{store}"
        );
        // Near misses are refused and do not use the link up.
        let mut flipped = t.clone().into_bytes();
        flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).expect("utf8");
        for bad in ["", &t[..42], &format!("{t}A"), &flipped, &t.to_uppercase()] {
            if bad != t {
                assert_eq!(
                    consume(&AuthAt::local(d.path()), bad).expect("consume"),
                    None,
                    "{bad}"
                );
            }
        }
        assert_eq!(
            consume(&AuthAt::local(d.path()), &t).expect("consume"),
            Some("alice".into())
        );
        assert_eq!(
            consume(&AuthAt::local(d.path()), &t).expect("consume"),
            None,
            "used twice"
        );
        assert!(!d.path().join(LINK_FILE).exists());
    }

    #[test]
    fn any_sign_in_removes_the_link_file() {
        let d = tempfile::tempdir().expect("tmp");
        let first =
            new_link(&AuthAt::local(d.path()), "http://127.0.0.1:1", "alice").expect("link");
        let newest = new_link(&AuthAt::local(d.path()), "http://127.0.0.1:1", "bob").expect("link");
        let file = d.path().join(LINK_FILE);
        assert!(std::fs::read_to_string(&file)
            .expect("file")
            .contains(&token_of(&newest)));
        // A failed attempt leaves it; the older link's sign-in removes the newer link's file.
        assert_eq!(
            consume(&AuthAt::local(d.path()), "nope").expect("consume"),
            None
        );
        assert!(file.exists());
        assert_eq!(
            consume(&AuthAt::local(d.path()), &token_of(&first)).expect("consume"),
            Some("alice".into())
        );
        assert!(
            !file.exists(),
            "no unused link is left readable after a sign-in"
        );
        // The newer link still works for its person, who got it when it was made.
        assert_eq!(
            consume(&AuthAt::local(d.path()), &token_of(&newest)).expect("consume"),
            Some("bob".into())
        );
    }

    #[test]
    fn expired_links_are_dropped_and_bad_names_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let old = Pending {
            hash: hash_hex("old"),
            name: "x".into(),
            expires_ms: 1,
        };
        let line = serde_json::to_string(&old).expect("json") + "\n";
        write_private(&d.path().join(LOGINS_FILE), &line).expect("write");
        assert_eq!(
            consume(&AuthAt::local(d.path()), "old").expect("consume"),
            None
        );
        for name in ["", "a b", "<script>", "x/y", &"n".repeat(33)] {
            assert!(
                matches!(
                    new_link(&AuthAt::local(d.path()), "http://h", name),
                    Err(LoginError::BadName)
                ),
                "{name}"
            );
        }
    }
}
