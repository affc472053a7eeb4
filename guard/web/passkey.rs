//! Passkeys (WebAuthn, through webauthn-rs): registration from a signed-in session, sign-in
//! without a link, and a per-decision assertion whose challenge is the request's hash
//! binding ([`crate::audit::assertion::binding`]), so the signature says which request and
//! which decision the person approved.
//!
//! The relying party is the web prompt's base URL (its public origin when configured): the
//! RP id is its host name and assertions from any other origin are refused. A base URL
//! that is an IP address has no RP id (WebAuthn needs a name), so passkeys are then off,
//! with that reason. Every ceremony is single use and lives [`CEREMONY_TTL`].

use super::auth_at::AuthAt;
use super::passkey_store::{self as store, StoreError, Stored};
use crate::audit::assertion::{binding, PasskeyEvent};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use webauthn_rs::prelude::*;

/// How long a started ceremony may be finished.
pub const CEREMONY_TTL: Duration = Duration::from_secs(120);
/// Started ceremonies kept at most (the oldest go first).
const MAX_CEREMONIES: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error("passkeys are off: {0}")]
    Off(String),
    #[error("no passkey is registered")]
    NoneRegistered,
    #[error("this passkey ceremony is unknown, used or expired: start again")]
    UnknownCeremony,
    #[error("the assertion was made for another request or decision")]
    WrongRequest,
    #[error("this credential is not registered (removed?)")]
    UnknownCredential,
    #[error("only ES256 (P-256) passkeys are accepted")]
    Algorithm,
    #[error("WebAuthn: {0}")]
    WebAuthn(#[from] WebauthnError),
    #[error("the authenticator did not verify the user")]
    NotVerified,
    #[error("this passkey belongs to another reviewer: sign with your own")]
    NotYours,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("random source: {0}")]
    Random(String),
}

enum Purpose {
    Register {
        name: String,
        state: PasskeyRegistration,
    },
    SignIn {
        state: PasskeyAuthentication,
    },
    Decide {
        bound: Bound,
        state: PasskeyAuthentication,
    },
}

/// What a decision's challenge binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub inbox_id: String,
    pub request_hash: String,
    pub decision: String,
    pub nonce: String,
}

type Ceremonies = Mutex<HashMap<String, (Instant, Purpose)>>;

/// The relying party and the started ceremonies: signed-out sign-ins apart from the
/// signed-in ones, so a flood of anonymous starts cannot evict a person's registration or
/// decision ceremony.
pub struct Passkeys {
    webauthn: Result<Webauthn, String>,
    rp_id: String,
    signed_in: Ceremonies,
    signed_out: Ceremonies,
}

impl Passkeys {
    /// The relying party of `base_url` (off, with the reason, when it has no host name).
    pub fn new(base_url: &str) -> Self {
        let rp = Url::parse(base_url)
            .map_err(|e| e.to_string())
            .and_then(|u| match u.domain() {
                Some(d) => Ok((d.to_owned(), u.clone())),
                None => Err(format!(
                    "the web prompt's address {base_url} is not a host name; set [web] \
                     public_origin to a name (e.g. http://localhost:PORT)"
                )),
            });
        let (rp_id, webauthn) = match rp {
            Ok((id, url)) => {
                let w = WebauthnBuilder::new(&id, &url)
                    .and_then(|b| b.rp_name("sanctum-guard").build())
                    .map_err(|e| e.to_string());
                (id, w)
            }
            Err(e) => (String::new(), Err(e)),
        };
        Passkeys {
            webauthn,
            rp_id,
            signed_in: Mutex::default(),
            signed_out: Mutex::default(),
        }
    }

    fn webauthn(&self) -> Result<&Webauthn, PasskeyError> {
        self.webauthn
            .as_ref()
            .map_err(|e| PasskeyError::Off(e.clone()))
    }

    /// Whether passkeys can work here (the page hides its buttons otherwise).
    pub fn available(&self) -> bool {
        self.webauthn.is_ok()
    }

    fn map(
        &self,
        anonymous: bool,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Purpose)>> {
        let m = if anonymous {
            &self.signed_out
        } else {
            &self.signed_in
        };
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn put(&self, p: Purpose) -> Result<String, PasskeyError> {
        let id = super::secret::random_token().map_err(PasskeyError::Random)?;
        let now = Instant::now();
        let mut m = self.map(matches!(p, Purpose::SignIn { .. }));
        m.retain(|_, (at, _)| now.duration_since(*at) < CEREMONY_TTL);
        while m.len() >= MAX_CEREMONIES {
            let oldest = m
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => m.remove(&k),
                None => break,
            };
        }
        m.insert(id.clone(), (now, p));
        Ok(id)
    }

    /// Takes a ceremony out (single use); None when unknown or expired.
    fn take(&self, id: &str, anonymous: bool) -> Option<Purpose> {
        let (at, p) = self.map(anonymous).remove(id)?;
        (at.elapsed() < CEREMONY_TTL).then_some(p)
    }

    /// Starts adding a passkey for `name` (the signed-in person).
    pub fn start_register(
        &self,
        at: &AuthAt,
        name: &str,
    ) -> Result<(String, CreationChallengeResponse), PasskeyError> {
        let w = self.webauthn()?;
        let exclude = store::list(at)?
            .iter()
            .filter_map(|s| hex::decode(&s.id).ok().map(CredentialID::from))
            .collect::<Vec<_>>();
        let (ccr, state) =
            w.start_passkey_registration(Uuid::new_v4(), name, name, Some(exclude))?;
        let id = self.put(Purpose::Register {
            name: name.to_owned(),
            state,
        })?;
        Ok((id, ccr))
    }

    /// Finishes a registration: checks the attestation response, stores the credential and
    /// returns it (the caller writes its audit record).
    pub fn finish_register(
        &self,
        at: &AuthAt,
        ceremony: &str,
        cred: &RegisterPublicKeyCredential,
    ) -> Result<Stored, PasskeyError> {
        let w = self.webauthn()?;
        let Some(Purpose::Register { name, state }) = self.take(ceremony, false) else {
            return Err(PasskeyError::UnknownCeremony);
        };
        let passkey = w.finish_passkey_registration(cred, &state)?;
        let public_key = match &passkey.get_public_key().key {
            COSEKeyType::EC_EC2(k) if k.curve == ECDSACurve::SECP256R1 => {
                let mut p = vec![4u8];
                p.extend_from_slice(k.x.as_ref());
                p.extend_from_slice(k.y.as_ref());
                hex::encode(p)
            }
            _ => return Err(PasskeyError::Algorithm),
        };
        let s = Stored {
            id: hex::encode(passkey.cred_id().as_ref()),
            name,
            created_ms: crate::engine::decision::now_ms(),
            rp_id: self.rp_id.clone(),
            public_key,
            passkey,
        };
        store::add(at, s.clone())?;
        Ok(s)
    }

    /// The registration's audit record.
    pub fn registered_event(s: &Stored, by: &str) -> PasskeyEvent {
        PasskeyEvent::Registered {
            credential_id: s.id.clone(),
            name: s.name.clone(),
            rp_id: s.rp_id.clone(),
            alg: "ES256".into(),
            public_key: s.public_key.clone(),
            by: by.to_owned(),
        }
    }

    fn start_auth(
        &self,
        at: &AuthAt,
    ) -> Result<(RequestChallengeResponse, PasskeyAuthentication), PasskeyError> {
        let w = self.webauthn()?;
        let creds: Vec<Passkey> = store::list(at)?.into_iter().map(|s| s.passkey).collect();
        if creds.is_empty() {
            return Err(PasskeyError::NoneRegistered);
        }
        Ok(w.start_passkey_authentication(&creds)?)
    }

    /// Starts a sign-in with any registered passkey.
    pub fn start_sign_in(
        &self,
        at: &AuthAt,
    ) -> Result<(String, RequestChallengeResponse), PasskeyError> {
        let (rcr, state) = self.start_auth(at)?;
        Ok((self.put(Purpose::SignIn { state })?, rcr))
    }

    /// Finishes a sign-in; the credential that signed (still registered now).
    pub fn finish_sign_in(
        &self,
        at: &AuthAt,
        ceremony: &str,
        cred: &PublicKeyCredential,
    ) -> Result<Stored, PasskeyError> {
        let Some(Purpose::SignIn { state }) = self.take(ceremony, true) else {
            return Err(PasskeyError::UnknownCeremony);
        };
        self.finish_auth(at, cred, &state)
    }

    /// Starts the assertion for one decision: its challenge binds the request, the hash the
    /// card showed, the decision and a fresh nonce.
    pub fn start_decision(
        &self,
        at: &AuthAt,
        inbox_id: &str,
        request_hash: &str,
        decision: &str,
    ) -> Result<(String, RequestChallengeResponse), PasskeyError> {
        let (mut rcr, state) = self.start_auth(at)?;
        let nonce = super::secret::random_bytes(32).map_err(PasskeyError::Random)?;
        let bound = Bound {
            inbox_id: inbox_id.to_owned(),
            request_hash: request_hash.to_owned(),
            decision: decision.to_owned(),
            nonce: hex::encode(nonce),
        };
        let challenge = binding(inbox_id, request_hash, decision, &bound.nonce).to_vec();
        let state = with_challenge(&state, &challenge)?;
        rcr.public_key.challenge = Base64UrlSafeData::from(challenge);
        Ok((self.put(Purpose::Decide { bound, state })?, rcr))
    }

    /// Checks a decision's assertion against the ceremony started for exactly this
    /// request, hash and decision; returns the audit record that proves it.
    pub fn finish_decision(
        &self,
        at: &AuthAt,
        ceremony: &str,
        want: &Bound,
        cred: &PublicKeyCredential,
        by: &str,
        account: &str,
    ) -> Result<PasskeyEvent, PasskeyError> {
        let Some(Purpose::Decide { bound, state }) = self.take(ceremony, false) else {
            return Err(PasskeyError::UnknownCeremony);
        };
        if bound.inbox_id != want.inbox_id
            || bound.request_hash != want.request_hash
            || bound.decision != want.decision
        {
            return Err(PasskeyError::WrongRequest);
        }
        let s = self.finish_auth(at, cred, &state)?;
        // Another reviewer's passkey signs nothing for this one: two-person approval
        // counts accounts, so a borrowed authenticator must not stand in for one.
        if s.name != account {
            return Err(PasskeyError::NotYours);
        }
        let r = &cred.response;
        Ok(PasskeyEvent::Signed {
            inbox_id: bound.inbox_id,
            request_hash: bound.request_hash,
            decision: bound.decision,
            nonce: bound.nonce,
            credential_id: s.id,
            authenticator_data: hex::encode(r.authenticator_data.as_ref() as &[u8]),
            client_data_json: hex::encode(r.client_data_json.as_ref() as &[u8]),
            signature: hex::encode(r.signature.as_ref() as &[u8]),
            by: by.to_owned(),
        })
    }

    /// The checks every assertion passes: the credential is registered now (a removal
    /// takes effect at once), webauthn-rs verifies origin, RP id, challenge, signature
    /// and user verification, and the counter is kept.
    fn finish_auth(
        &self,
        at: &AuthAt,
        cred: &PublicKeyCredential,
        state: &PasskeyAuthentication,
    ) -> Result<Stored, PasskeyError> {
        let w = self.webauthn()?;
        let id = hex::encode(cred.raw_id.as_ref() as &[u8]);
        let Some(s) = store::list(at)?.into_iter().find(|s| s.id == id) else {
            return Err(PasskeyError::UnknownCredential);
        };
        let res = w.finish_passkey_authentication(cred, state)?;
        if !res.user_verified() {
            return Err(PasskeyError::NotVerified);
        }
        store::touch(at, &id, &res)?;
        Ok(s)
    }
}

/// The authentication state with its challenge replaced by `challenge` (webauthn-rs makes a
/// random one; a decision's must be its binding, which is itself unguessable by its nonce).
fn with_challenge(
    state: &PasskeyAuthentication,
    challenge: &[u8],
) -> Result<PasskeyAuthentication, PasskeyError> {
    let bad = |e: serde_json::Error| PasskeyError::Off(format!("authentication state: {e}"));
    let mut v = serde_json::to_value(state).map_err(bad)?;
    v["ast"]["challenge"] =
        serde_json::to_value(Base64UrlSafeData::from(challenge.to_vec())).map_err(bad)?;
    serde_json::from_value(v).map_err(bad)
}
