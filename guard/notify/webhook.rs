//! The generic webhook: a JSON POST signed with HMAC-SHA256 over the timestamp and the body,
//! `X-Sanctum-Signature: t=<unix seconds>,v1=<hex HMAC(key, "<t>." + body)>`. The receiver
//! recomputes it and refuses a timestamp older than it allows, so a captured delivery cannot
//! be replayed later; `X-Sanctum-Delivery` stays the same across the retries of one message.

use super::notice::{Notice, Outcome};
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-sanctum-signature";
/// One id per message, repeated on its retries (the receiver's duplicate check).
pub const DELIVERY_HEADER: &str = "x-sanctum-delivery";

pub struct Webhook {
    pub url: String,
    pub key: String,
}

/// `t=<ts>,v1=<hex>` for `body` sent at `ts` (unix seconds).
pub fn signature(key: &[u8], ts: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(format!("{ts}.").as_bytes());
    mac.update(body);
    format!("t={ts},v1={}", hex::encode(mac.finalize().into_bytes()))
}

impl Webhook {
    /// `{"event":"requests","requests":[…]}`.
    pub fn batch_body(batch: &[Notice]) -> Vec<u8> {
        json!({"event": "requests", "requests": batch.iter().map(Notice::json).collect::<Vec<_>>()})
            .to_string()
            .into_bytes()
    }

    /// `{"event":"resolved","id":…,"state":…,"outcome":…}`.
    pub fn outcome_body(o: &Outcome) -> Vec<u8> {
        let mut v = o.json();
        v["event"] = json!("resolved");
        v.to_string().into_bytes()
    }

    /// The headers of one attempt, signed at the time of that attempt.
    pub fn headers(&self, delivery: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        vec![
            (SIGNATURE_HEADER, signature(self.key.as_bytes(), ts, body)),
            (DELIVERY_HEADER, delivery.to_owned()),
        ]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_signature_covers_time_and_body() {
        let a = super::signature(b"k", 1700000000, b"{}");
        assert!(a.starts_with("t=1700000000,v1=") && a.len() == "t=1700000000,v1=".len() + 64);
        assert_ne!(a, super::signature(b"k", 1700000001, b"{}"));
        assert_ne!(a, super::signature(b"k", 1700000000, b"{ }"));
        assert_ne!(a, super::signature(b"j", 1700000000, b"{}"));
    }
}
