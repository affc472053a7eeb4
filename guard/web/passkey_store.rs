//! The registered passkeys: `<state dir>/web-passkeys` (0600, one JSON array), changed under
//! an exclusive `flock` so `serve` and `sanctum-guard passkeys remove` never lose each
//! other's writes. Every use reads the file afresh, so a removal takes effect at once.

use super::login::{write_private, LoginError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use webauthn_rs::prelude::Passkey;

/// The passkey file's name in the state dir.
pub const PASSKEYS_FILE: &str = "web-passkeys";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: not a passkey list (fix or remove it; no passkey works until then)")]
    Corrupt(PathBuf),
    #[error(transparent)]
    Write(#[from] LoginError),
    #[error("credential {0} is already registered")]
    Duplicate(String),
}

/// One registered credential.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    /// The credential id, lowercase hex (as the audit log names it).
    pub id: String,
    /// Who registered it (the session's link name): a sign-in with it is that person.
    pub name: String,
    pub created_ms: u64,
    pub rp_id: String,
    /// ES256 public key, SEC1 uncompressed, hex (what `audit verify` checks with).
    pub public_key: String,
    pub passkey: Passkey,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Runs `f` on the list under the lock; writes it back when `f` says it changed it.
fn with_list<T>(
    dir: &Path,
    f: impl FnOnce(&mut Vec<Stored>) -> Result<(T, bool), StoreError>,
) -> Result<T, StoreError> {
    let lock_path = dir.join(format!("{PASSKEYS_FILE}.lock"));
    let _held = super::login::lock_exclusive(&lock_path).map_err(io(&lock_path))?;
    let path = dir.join(PASSKEYS_FILE);
    let mut list: Vec<Stored> = match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|_| StoreError::Corrupt(path.clone()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&path)(e)),
    };
    let (out, changed) = f(&mut list)?;
    if changed {
        let text =
            serde_json::to_string_pretty(&list).map_err(|_| StoreError::Corrupt(path.clone()))?;
        write_private(&path, &format!("{text}\n"))?;
    }
    Ok(out)
}

/// Every registered passkey, oldest first.
pub fn list(dir: &Path) -> Result<Vec<Stored>, StoreError> {
    with_list(dir, |l| Ok((l.clone(), false)))
}

/// Adds a credential (refused when its id is already there).
pub fn add(dir: &Path, s: Stored) -> Result<(), StoreError> {
    with_list(dir, |l| {
        if l.iter().any(|x| x.id == s.id) {
            return Err(StoreError::Duplicate(s.id.clone()));
        }
        l.push(s);
        Ok(((), true))
    })
}

/// Removes the credential `id` (a unique prefix of at least 8 hex digits also names it);
/// returns it, or None when nothing matched.
pub fn remove(dir: &Path, id: &str) -> Result<Option<Stored>, StoreError> {
    let id = id.to_ascii_lowercase();
    with_list(dir, |l| {
        let hits: Vec<usize> = l
            .iter()
            .enumerate()
            .filter(|(_, s)| s.id == id || (id.len() >= 8 && s.id.starts_with(&id)))
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [i] => Ok((Some(l.remove(*i)), true)),
            _ => Ok((None, false)),
        }
    })
}

/// Removes every credential `name` registered (its account was removed); returns them.
pub fn remove_named(dir: &Path, name: &str) -> Result<Vec<Stored>, StoreError> {
    with_list(dir, |l| {
        let (gone, kept): (Vec<Stored>, Vec<Stored>) =
            std::mem::take(l).into_iter().partition(|s| s.name == name);
        *l = kept;
        let changed = !gone.is_empty();
        Ok((gone, changed))
    })
}

/// Applies a successful assertion's counter to the stored credential.
pub fn touch(
    dir: &Path,
    id: &str,
    result: &webauthn_rs::prelude::AuthenticationResult,
) -> Result<(), StoreError> {
    with_list(dir, |l| {
        let changed = l
            .iter_mut()
            .find(|s| s.id == id)
            .and_then(|s| s.passkey.update_credential(result))
            .unwrap_or(false);
        Ok(((), changed))
    })
}
