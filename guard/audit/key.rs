//! The audit key: an HMAC-SHA256 key that seals every record, so whoever can
//! edit the log but not read the key cannot delete, edit, reorder or forge records and
//! recompute a chain that `audit verify --key` accepts. It lives next to the log as
//! `audit.key` (0600, 32 random bytes as hex), created on first open; the agent's sandbox
//! denies the guard's state dir, so confined commands can neither read it nor the log.
//!
//! Sealing: a record line is written as its JSON without `mac`, then `,"mac":"<hex>"}`
//! replaces the closing brace, where the MAC is over the exact bytes without it. Checking
//! strips that fixed-size suffix: no re-serialisation, so the bytes checked are the bytes
//! written.

use super::AuditError;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The key's file name, next to the log.
pub const KEY_FILE: &str = "audit.key";

/// `,"mac":"` + 64 hex + `"}`.
const MAC_SUFFIX_LEN: usize = 8 + 64 + 2;

/// An audit key.
#[derive(Clone)]
pub struct AuditKey {
    key: [u8; 32],
    path: PathBuf,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.path.display())
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The default key path for the log at `log`.
pub fn default_key_path(log: &Path) -> PathBuf {
    log.parent()
        .unwrap_or_else(|| Path::new("."))
        .join(KEY_FILE)
}

impl AuditKey {
    /// Reads the key at `path`. Refuses a key others can read or write (it would prove
    /// nothing).
    pub fn load(path: &Path) -> Result<AuditKey, AuditError> {
        let mut f = OpenOptions::new().read(true).open(path).map_err(io(path))?;
        let meta = f.metadata().map_err(io(path))?;
        if meta.mode() & 0o077 != 0 {
            return Err(AuditError::Key {
                path: path.to_owned(),
                why: format!(
                    "mode {:o}: others may read or write it; it must be 0600",
                    meta.mode() & 0o777
                ),
            });
        }
        let mut text = String::new();
        f.read_to_string(&mut text).map_err(io(path))?;
        let bytes = hex::decode(text.trim()).map_err(|e| AuditError::Key {
            path: path.to_owned(),
            why: format!("not hex: {e}"),
        })?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| AuditError::Key {
            path: path.to_owned(),
            why: "not 32 bytes".into(),
        })?;
        Ok(AuditKey {
            key,
            path: path.to_owned(),
        })
    }

    /// Reads the key at `path`, creating it (0600, fresh random bytes) if it does not exist.
    /// The key is written whole to a private temporary file and hard-linked into place, so
    /// a process that opens the log at the same moment sees either no key or the complete
    /// one, never a half-written file; the loser of the race reads the winner's key.
    pub fn load_or_create(path: &Path) -> Result<AuditKey, AuditError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| AuditError::Key {
            path: path.to_owned(),
            why: format!("no randomness: {e}"),
        })?;
        // A name of its own per attempt, from fresh bytes: no part of the key is ever in a name.
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| AuditError::Key {
            path: path.to_owned(),
            why: format!("no randomness: {e}"),
        })?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            hex::encode(nonce)
        ));
        let tmp = PathBuf::from(tmp);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(format!("{}\n", hex::encode(key)).as_bytes())?;
                f.sync_all()
            });
        let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
        // The temporary name is never needed again, whatever happened.
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                if let Some(dir) = path.parent() {
                    // The new name must survive a crash as the key it seals with does.
                    let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
                }
                Ok(AuditKey {
                    key,
                    path: path.to_owned(),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::load(path),
            Err(e) => Err(io(path)(e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes keys of any length (RFC 2104): this cannot fail.
        match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC accepts any key length"),
        }
    }

    /// Hex MAC of `data` under a domain label (records and the head are told apart).
    pub fn tag(&self, label: &str, data: &[u8]) -> String {
        let mut m = self.mac();
        m.update(label.as_bytes());
        m.update(b"\0");
        m.update(data);
        hex::encode(m.finalize().into_bytes())
    }

    /// Constant-time check of [`AuditKey::tag`].
    pub fn check(&self, label: &str, data: &[u8], tag_hex: &str) -> bool {
        let Ok(tag) = hex::decode(tag_hex) else {
            return false;
        };
        let mut m = self.mac();
        m.update(label.as_bytes());
        m.update(b"\0");
        m.update(data);
        m.verify_slice(&tag).is_ok()
    }

    /// Seals a record's JSON (which ends with `}`) into its line.
    pub fn seal(&self, mut body: Vec<u8>) -> Vec<u8> {
        let tag = self.tag("record", &body);
        body.pop();
        body.extend_from_slice(b",\"mac\":\"");
        body.extend_from_slice(tag.as_bytes());
        body.extend_from_slice(b"\"}");
        body
    }

    /// True when `line` carries a valid seal.
    pub fn opens(&self, line: &[u8]) -> bool {
        match unseal(line) {
            Some((body, tag)) => self.check("record", &body, tag),
            None => false,
        }
    }
}

/// Splits a sealed line into the bytes the MAC covers and the MAC; None if it is not sealed.
pub fn unseal(line: &[u8]) -> Option<(Vec<u8>, &str)> {
    let cut = line.len().checked_sub(MAC_SUFFIX_LEN)?;
    let suffix = &line[cut..];
    if !suffix.starts_with(b",\"mac\":\"") || !suffix.ends_with(b"\"}") {
        return None;
    }
    let tag = std::str::from_utf8(&suffix[8..72]).ok()?;
    let mut body = line[..cut].to_vec();
    body.push(b'}');
    Some((body, tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn seal_opens_only_with_the_key_and_the_exact_bytes() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join(KEY_FILE);
        let k = AuditKey::load_or_create(&p).expect("key");
        let mode = std::fs::metadata(&p).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = AuditKey::load_or_create(&p).expect("same key");
        let line = k.seal(br#"{"seq":1,"prev":"00"}"#.to_vec());
        assert!(again.opens(&line));
        let mut edited = line.clone();
        edited[3] = b'x';
        assert!(!k.opens(&edited));
        let other = AuditKey::load_or_create(&t.path().join("other.key")).expect("other");
        assert!(!other.opens(&line));
        assert!(!k.opens(br#"{"seq":1,"prev":"00"}"#));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(AuditKey::load(&p), Err(AuditError::Key { .. })));
    }
}
