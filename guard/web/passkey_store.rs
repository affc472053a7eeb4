//! The registered passkeys: `<state dir>/web-passkeys` (0600, one JSON array), changed under
//! an exclusive `flock` so `serve` and `sanctum-guard passkeys remove` never lose each
//! other's writes. Every use reads the file afresh, so a removal takes effect at once.
//! In a fleet they live in its database instead (`pg_auth`): a passkey registered through
//! one guard signs in on every guard of the same RP id.

use super::auth_at::AuthAt;
use super::login::{write_private, LoginError};
use super::pg_auth::AuthDbError;
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
    #[error(transparent)]
    Fleet(#[from] AuthDbError),
    /// Another guard already accepted this signature counter (or a later one): a cloned
    /// authenticator, or one assertion replayed on two guards at once.
    #[error("credential {0}: signature counter did not advance (cloned authenticator?)")]
    Counter(String),
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
pub fn list(at: &AuthAt) -> Result<Vec<Stored>, StoreError> {
    if let Some(db) = &at.fleet {
        return Ok(db.passkeys()?);
    }
    with_list(&at.dir, |l| Ok((l.clone(), false)))
}

/// Adds a credential (refused when its id is already there).
pub fn add(at: &AuthAt, s: Stored) -> Result<(), StoreError> {
    if let Some(db) = &at.fleet {
        return match db.add_passkey(&s)? {
            true => Ok(()),
            false => Err(StoreError::Duplicate(s.id)),
        };
    }
    with_list(&at.dir, |l| {
        if l.iter().any(|x| x.id == s.id) {
            return Err(StoreError::Duplicate(s.id.clone()));
        }
        l.push(s);
        Ok(((), true))
    })
}

/// Removes the credential `id` (a unique prefix of at least 8 hex digits also names it);
/// returns it, or None when nothing matched.
pub fn remove(at: &AuthAt, id: &str) -> Result<Option<Stored>, StoreError> {
    if let Some(db) = &at.fleet {
        return Ok(db.remove_passkey(id)?);
    }
    let id = id.to_ascii_lowercase();
    with_list(&at.dir, |l| {
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
pub fn remove_named(at: &AuthAt, name: &str) -> Result<Vec<Stored>, StoreError> {
    if let Some(db) = &at.fleet {
        return Ok(db.remove_passkeys_of(name)?);
    }
    with_list(&at.dir, |l| {
        let (gone, kept): (Vec<Stored>, Vec<Stored>) =
            std::mem::take(l).into_iter().partition(|s| s.name == name);
        *l = kept;
        let changed = !gone.is_empty();
        Ok((gone, changed))
    })
}

/// Applies a successful assertion's counter to the stored credential; in a fleet, refused
/// ([`StoreError::Counter`]) when another guard got there first with the same counter.
pub fn touch(
    at: &AuthAt,
    id: &str,
    result: &webauthn_rs::prelude::AuthenticationResult,
) -> Result<(), StoreError> {
    if let Some(db) = &at.fleet {
        return match db.touch_passkey(id, result)? {
            true => Ok(()),
            false => Err(StoreError::Counter(id.to_owned())),
        };
    }
    with_list(&at.dir, |l| {
        let changed = l
            .iter_mut()
            .find(|s| s.id == id)
            .and_then(|s| s.passkey.update_credential(result))
            .unwrap_or(false);
        Ok(((), changed))
    })
}
