//! Secrets of the web door: random tokens (login links, sessions, CSRF), their SHA-256 (the
//! only form the guard keeps of a login token or a session id), constant-time comparison.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// 32 random bytes, base64url without padding (43 characters).
pub fn random_token() -> Result<String, String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| e.to_string())?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
}

/// `n` random bytes.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| e.to_string())?;
    Ok(b)
}

/// Lowercase hex SHA-256 of `s`.
pub fn hash_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// Constant-time equality (length leaks, content does not).
pub fn eq_ct(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
