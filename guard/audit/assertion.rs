//! Passkey records and their check from the log alone. A decision signed with a passkey is
//! recorded with everything a verifier needs (the credential id, authenticatorData,
//! clientDataJSON, the signature, and the nonce of its challenge); a registration records the
//! credential's public key, a removal ends it. [`Registry`] replays those records in order,
//! so `audit verify` proves each signed decision was made by a key that was registered, and
//! not removed, before it, over exactly that request's hash binding.
//!
//! Binary values are lowercase hex: base64 text could, by chance, look like a secret to the
//! redactor and be cut out of the record.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The record kind of every passkey event.
pub const KIND: &str = "passkey";

/// Domain tag of a decision's challenge: a signature over it can mean nothing else.
const BINDING_TAG: &[u8] = b"sanctum-guard passkey decision v1";

/// WebAuthn authenticatorData flags: user present, user verified.
const FLAG_UP: u8 = 0x01;
const FLAG_UV: u8 = 0x04;

/// One `passkey` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "action",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum PasskeyEvent {
    /// A signed-in person added a credential (ES256: `publicKey` is the SEC1 point).
    Registered {
        credential_id: String,
        name: String,
        rp_id: String,
        alg: String,
        public_key: String,
        by: String,
    },
    /// A credential was removed: nothing it signs later counts.
    Removed { credential_id: String, by: String },
    /// A decision signed with a fresh, user-verified assertion.
    Signed {
        inbox_id: String,
        request_hash: String,
        decision: String,
        nonce: String,
        credential_id: String,
        authenticator_data: String,
        client_data_json: String,
        signature: String,
        by: String,
    },
}

/// Why a signed decision does not hold.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AssertionError {
    #[error("passkey record not understood: {0}")]
    Malformed(String),
    #[error("signed by credential {0}, which no earlier record registered")]
    UnknownKey(String),
    #[error("signed by credential {0}, which was removed before this decision")]
    RemovedKey(String),
    #[error("the assertion's challenge is not this request's hash binding")]
    ChallengeMismatch,
    #[error("the assertion is for another relying party")]
    RpIdMismatch,
    #[error("the assertion is not a user-verified webauthn.get")]
    NotVerified,
    #[error("the signature does not verify under the registered key")]
    BadSignature,
}

/// The challenge of a decision: SHA-256 over the tag, the inbox id, the request hash, the
/// decision and the server's nonce, each NUL-separated (none of them holds a NUL).
pub fn binding(inbox_id: &str, request_hash: &str, decision: &str, nonce: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [
        BINDING_TAG,
        inbox_id.as_bytes(),
        request_hash.as_bytes(),
        decision.as_bytes(),
        nonce.as_bytes(),
    ] {
        h.update(part);
        h.update([0u8]);
    }
    h.finalize().into()
}

#[derive(Debug, Clone)]
enum KeyState {
    Live { sec1: Vec<u8>, rp_id: String },
    Removed,
}

/// The credentials the log has registered so far, replayed record by record.
#[derive(Debug, Default)]
pub struct Registry {
    keys: HashMap<String, KeyState>,
}

fn unhex(field: &str, v: &str) -> Result<Vec<u8>, AssertionError> {
    hex::decode(v).map_err(|_| AssertionError::Malformed(format!("{field} is not hex")))
}

impl Registry {
    /// Takes in one record: a registration or removal updates the keys, a signed decision is
    /// checked against them. Records of other kinds are not looked at.
    pub fn observe(&mut self, kind: &str, fields: &Value) -> Result<(), AssertionError> {
        if kind != KIND {
            return Ok(());
        }
        let ev: PasskeyEvent = serde_json::from_value(fields.clone())
            .map_err(|e| AssertionError::Malformed(e.to_string()))?;
        match ev {
            PasskeyEvent::Registered {
                credential_id,
                rp_id,
                alg,
                public_key,
                ..
            } => {
                if alg != "ES256" {
                    return Err(AssertionError::Malformed(format!("algorithm {alg}")));
                }
                let sec1 = unhex("publicKey", &public_key)?;
                self.keys
                    .insert(credential_id, KeyState::Live { sec1, rp_id });
                Ok(())
            }
            PasskeyEvent::Removed { credential_id, .. } => {
                self.keys.insert(credential_id, KeyState::Removed);
                Ok(())
            }
            PasskeyEvent::Signed {
                inbox_id,
                request_hash,
                decision,
                nonce,
                credential_id,
                authenticator_data,
                client_data_json,
                signature,
                ..
            } => {
                let (sec1, rp_id) = match self.keys.get(&credential_id) {
                    None => return Err(AssertionError::UnknownKey(credential_id)),
                    Some(KeyState::Removed) => {
                        return Err(AssertionError::RemovedKey(credential_id))
                    }
                    Some(KeyState::Live { sec1, rp_id }) => (sec1, rp_id),
                };
                let want = binding(&inbox_id, &request_hash, &decision, &nonce);
                check_assertion(
                    sec1,
                    rp_id,
                    &want,
                    &unhex("authenticatorData", &authenticator_data)?,
                    &unhex("clientDataJson", &client_data_json)?,
                    &unhex("signature", &signature)?,
                )
            }
        }
    }
}

/// Checks one WebAuthn assertion: clientDataJSON is a `webauthn.get` over `challenge`, the
/// authenticator data names `rp_id` with the user present and verified, and the ES256
/// signature over authenticatorData || SHA-256(clientDataJSON) verifies under `sec1`.
pub fn check_assertion(
    sec1: &[u8],
    rp_id: &str,
    challenge: &[u8],
    auth_data: &[u8],
    client_data: &[u8],
    signature: &[u8],
) -> Result<(), AssertionError> {
    use base64::Engine as _;
    let cd: Value = serde_json::from_slice(client_data)
        .map_err(|_| AssertionError::Malformed("clientDataJSON is not JSON".into()))?;
    if cd["type"] != "webauthn.get" {
        return Err(AssertionError::NotVerified);
    }
    let sent = cd["challenge"].as_str().unwrap_or("").trim_end_matches('=');
    let sent = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(sent)
        .map_err(|_| AssertionError::ChallengeMismatch)?;
    if sent != challenge {
        return Err(AssertionError::ChallengeMismatch);
    }
    if auth_data.len() < 37 {
        return Err(AssertionError::Malformed(
            "authenticatorData too short".into(),
        ));
    }
    if auth_data[..32] != Sha256::digest(rp_id.as_bytes())[..] {
        return Err(AssertionError::RpIdMismatch);
    }
    let flags = auth_data[32];
    if flags & FLAG_UP == 0 || flags & FLAG_UV == 0 {
        return Err(AssertionError::NotVerified);
    }
    if es256_verify(sec1, auth_data, &Sha256::digest(client_data), signature) {
        Ok(())
    } else {
        Err(AssertionError::BadSignature)
    }
}

/// ECDSA P-256 / SHA-256 over `a || b`, DER signature; any parse error is a failure.
fn es256_verify(sec1: &[u8], a: &[u8], b: &[u8], sig: &[u8]) -> bool {
    use openssl::bn::BigNumContext;
    use openssl::ec::{EcGroup, EcKey, EcPoint};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::pkey::PKey;
    use openssl::sign::Verifier;
    let run = || -> Result<bool, openssl::error::ErrorStack> {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
        let mut ctx = BigNumContext::new()?;
        let point = EcPoint::from_bytes(&group, sec1, &mut ctx)?;
        let key = PKey::from_ec_key(EcKey::from_public_key(&group, &point)?)?;
        let mut v = Verifier::new(MessageDigest::sha256(), &key)?;
        v.update(a)?;
        v.update(b)?;
        v.verify(sig)
    };
    run().unwrap_or(false)
}

#[cfg(test)]
#[path = "assertion_tests.rs"]
mod tests;
