//! A gateway client's device identity (the node host's, the approver's): one Ed25519 key,
//! generated once and kept 0600 in the client's own state dir, from which OpenClaw derives the
//! device id (`sha256(raw public key)`, hex). The connect proof is the v3 payload of docs/openclaw-linux-exec.md §A, signed with it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signer, SigningKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The identity file's name inside the node's state dir.
pub const IDENTITY_FILE: &str = "device-identity.json";

/// Why the identity could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a device identity file ({reason})")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path}: mode {mode:o} lets others read the private key (want 0600)")]
    Mode { path: PathBuf, mode: u32 },
    #[error("no randomness: {0}")]
    Random(String),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    version: u32,
    device_id: String,
    public_key: String,
    /// The 32-byte Ed25519 seed, base64url without padding.
    private_key: String,
}

/// A loaded identity.
pub struct DeviceIdentity {
    key: SigningKey,
    device_id: String,
    public_key: String,
}

/// The fields a connect proof signs (payload v3).
pub struct ProofInput<'a> {
    pub client_id: &'a str,
    pub client_mode: &'a str,
    pub role: &'a str,
    pub scopes: &'a [String],
    pub signed_at_ms: u64,
    pub token: &'a str,
    pub nonce: &'a str,
    pub platform: &'a str,
    pub device_family: &'a str,
}

/// The exact v3 string OpenClaw verifies (`|`-joined; platform and family lowercased, trimmed).
pub fn payload_v3(device_id: &str, p: &ProofInput<'_>) -> String {
    format!(
        "v3|{device_id}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        p.client_id,
        p.client_mode,
        p.role,
        p.scopes.join(","),
        p.signed_at_ms,
        p.token,
        p.nonce,
        p.platform.trim().to_lowercase(),
        p.device_family.trim().to_lowercase()
    )
}

impl DeviceIdentity {
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let key = SigningKey::from_bytes(&seed);
        let raw = key.verifying_key().to_bytes();
        DeviceIdentity {
            device_id: hex::encode(Sha256::digest(raw)),
            public_key: URL_SAFE_NO_PAD.encode(raw),
            key,
        }
    }

    /// Loads `<dir>/device-identity.json`, or creates it (0600, dir 0700) on first start.
    /// A file others can read is refused: the key is the node's pairing.
    pub fn load_or_create(dir: &Path) -> Result<Self, IdentityError> {
        let path = dir.join(IDENTITY_FILE);
        let io = |source| IdentityError::Io {
            path: path.clone(),
            source,
        };
        match std::fs::metadata(&path) {
            Ok(m) => {
                let mode = m.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(IdentityError::Mode { path, mode });
                }
                let text = std::fs::read_to_string(&path).map_err(io)?;
                Self::parse(&text).map_err(|reason| IdentityError::Corrupt { path, reason })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(|source| IdentityError::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).map_err(|e| IdentityError::Random(e.to_string()))?;
                let id = Self::from_seed(seed);
                let stored = Stored {
                    version: 1,
                    device_id: id.device_id.clone(),
                    public_key: id.public_key.clone(),
                    private_key: URL_SAFE_NO_PAD.encode(seed),
                };
                let text =
                    serde_json::to_string_pretty(&stored).map_err(|e| IdentityError::Corrupt {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                // create_new: two nodes starting at once never overwrite each other's key.
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(io)?;
                f.write_all(text.as_bytes()).map_err(io)?;
                f.sync_all().map_err(io)?;
                Ok(id)
            }
            Err(e) => Err(io(e)),
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        let s: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(s.private_key.trim())
            .map_err(|e| e.to_string())?
            .try_into()
            .map_err(|_| "private key is not 32 bytes".to_owned())?;
        let id = Self::from_seed(seed);
        if id.device_id != s.device_id || id.public_key != s.public_key {
            return Err("device id or public key does not match the private key".into());
        }
        Ok(id)
    }

    /// The node id OpenClaw shows (`nodeId` = `deviceId`).
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The raw public key, base64url without padding.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// base64url(ed25519(payload v3)).
    pub fn sign(&self, p: &ProofInput<'_>) -> String {
        let payload = payload_v3(&self.device_id, p);
        URL_SAFE_NO_PAD.encode(self.key.sign(payload.as_bytes()).to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};

    fn input<'a>(scopes: &'a [String]) -> ProofInput<'a> {
        ProofInput {
            client_id: "node-host",
            client_mode: "node",
            role: "node",
            scopes,
            signed_at_ms: 1_795_676_816_575,
            token: "T",
            nonce: "a46f",
            platform: " Linux ",
            device_family: "Linux",
        }
    }

    #[test]
    fn payload_is_the_documented_v3_string() {
        let s = payload_v3("5b33", &input(&[]));
        assert_eq!(
            s,
            "v3|5b33|node-host|node|node||1795676816575|T|a46f|linux|linux"
        );
        let scopes = ["a".to_owned(), "b".to_owned()];
        assert!(payload_v3("x", &input(&scopes)).contains("|node|a,b|"));
    }

    #[test]
    fn device_id_is_sha256_of_the_raw_key_and_the_signature_verifies() {
        let id = DeviceIdentity::from_seed([7u8; 32]);
        let raw = URL_SAFE_NO_PAD.decode(id.public_key()).expect("b64");
        assert_eq!(raw.len(), 32);
        assert_eq!(id.device_id(), hex::encode(Sha256::digest(&raw)));
        assert_eq!(id.device_id().len(), 64);
        let sig = URL_SAFE_NO_PAD.decode(id.sign(&input(&[]))).expect("b64");
        let vk = VerifyingKey::from_bytes(&raw.try_into().expect("32")).expect("key");
        let sig = Signature::from_slice(&sig).expect("sig");
        let payload = payload_v3(id.device_id(), &input(&[]));
        assert!(vk.verify(payload.as_bytes(), &sig).is_ok());
        assert!(vk.verify(b"v3|other", &sig).is_err());
    }

    #[test]
    fn created_once_0600_then_reloaded_and_tampering_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let a = DeviceIdentity::load_or_create(dir.path()).expect("create");
        let p = dir.path().join(IDENTITY_FILE);
        let mode = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let b = DeviceIdentity::load_or_create(dir.path()).expect("reload");
        assert_eq!(a.device_id(), b.device_id());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(
            DeviceIdentity::load_or_create(dir.path()),
            Err(IdentityError::Mode { .. })
        ));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let text = std::fs::read_to_string(&p).expect("read");
        let other = DeviceIdentity::from_seed([1u8; 32]);
        std::fs::write(&p, text.replace(a.public_key(), other.public_key())).expect("write");
        assert!(matches!(
            DeviceIdentity::load_or_create(dir.path()),
            Err(IdentityError::Corrupt { .. })
        ));
    }
}
