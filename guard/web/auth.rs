//! Sessions, CSRF tokens and the optional TOTP second factor.
//!
//! A session is a random id in an HttpOnly, SameSite=Strict cookie (Secure, and named with
//! the `__Host-` prefix, under HTTPS); the guard keeps only its SHA-256. Each session has its
//! own CSRF token, which every state-changing call must send in `X-CSRF-Token`. Sessions live
//! in memory: they end at logout, after [`IDLE_TTL`] without use, after [`ABSOLUTE_TTL`], on
//! revocation (`POST /api/sessions/revoke`), and when `serve` restarts.

use super::secret::{eq_ct, hash_hex, random_bytes, random_token};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const IDLE_TTL: Duration = Duration::from_secs(2 * 3600);
pub const ABSOLUTE_TTL: Duration = Duration::from_secs(12 * 3600);
/// More live sessions than this and the least recently used one ends.
const MAX_SESSIONS: usize = 64;
/// The TOTP seed's file in the state dir (0600): present = the second factor is required.
pub const TOTP_FILE: &str = "web-totp";

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who decides: `web:<account>/<short session id>`.
    pub identity: String,
    /// The reviewer account signed in, and its id then: a session outlives neither the
    /// account nor its replacement by a new account of the same name.
    pub account: String,
    pub account_id: String,
    pub csrf: String,
    created: Instant,
    last_seen: Instant,
}

/// What the page may know about its session (never the session id).
#[derive(Debug, Clone)]
pub struct SessionView {
    pub identity: String,
    pub account: String,
    pub account_id: String,
    pub csrf: String,
    pub expires_in: Duration,
}

#[derive(Debug)]
pub struct Sessions {
    by_hash: Mutex<HashMap<String, Session>>,
    /// Bumped whenever sessions end (logout, revocation): live event streams re-check
    /// theirs at once instead of at the next heartbeat.
    ended: tokio::sync::watch::Sender<u64>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            by_hash: Mutex::default(),
            ended: tokio::sync::watch::channel(0).0,
        }
    }
}

impl Sessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        match self.by_hash.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Starts a session for the account `name` (id `account_id`); returns the cookie value
    /// (the only copy of the id).
    pub fn create(&self, name: &str, account_id: &str) -> Result<(String, SessionView), String> {
        let id = random_token()?;
        let csrf = random_token()?;
        let h = hash_hex(&id);
        let now = Instant::now();
        let s = Session {
            identity: format!("web:{name}/{}", &h[..8]),
            account: name.to_owned(),
            account_id: account_id.to_owned(),
            csrf,
            created: now,
            last_seen: now,
        };
        let mut map = self.map();
        map.retain(|_, s| live(s, now));
        while map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => map.remove(&k),
                None => break,
            };
        }
        let view = view(&s, now);
        map.insert(h, s);
        Ok((id, view))
    }

    /// The live session of a cookie value, touched.
    pub fn get(&self, id: &str) -> Option<SessionView> {
        let h = hash_hex(id);
        let now = Instant::now();
        let mut map = self.map();
        match map.get_mut(&h) {
            Some(s) if live(s, now) => {
                s.last_seen = now;
                Some(view(s, now))
            }
            Some(_) => {
                map.remove(&h);
                None
            }
            None => None,
        }
    }

    /// Whether the session of a cookie value is live, without touching it (a door
    /// connection checking its session must not keep it from going idle).
    pub fn alive(&self, id: &str) -> bool {
        let now = Instant::now();
        self.map().get(&hash_hex(id)).is_some_and(|s| live(s, now))
    }

    /// Ends one session (logout).
    pub fn remove(&self, id: &str) {
        self.map().remove(&hash_hex(id));
        self.ended.send_modify(|g| *g += 1);
    }

    /// Ends every session of the account `name`; returns how many.
    pub fn end_account(&self, name: &str) -> usize {
        let n = {
            let mut map = self.map();
            let before = map.len();
            map.retain(|_, s| s.account != name);
            before - map.len()
        };
        if n > 0 {
            self.ended.send_modify(|g| *g += 1);
        }
        n
    }

    /// Ends every session; returns how many.
    pub fn revoke_all(&self) -> usize {
        let n = {
            let mut map = self.map();
            let n = map.len();
            map.clear();
            n
        };
        self.ended.send_modify(|g| *g += 1);
        n
    }

    /// Changes whenever a session ends.
    pub fn ended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ended.subscribe()
    }

    pub fn count(&self) -> usize {
        let now = Instant::now();
        self.map().values().filter(|s| live(s, now)).count()
    }
}

fn live(s: &Session, now: Instant) -> bool {
    now.duration_since(s.last_seen) < IDLE_TTL && now.duration_since(s.created) < ABSOLUTE_TTL
}

fn view(s: &Session, now: Instant) -> SessionView {
    let idle_left = IDLE_TTL.saturating_sub(now.duration_since(s.last_seen));
    let abs_left = ABSOLUTE_TTL.saturating_sub(now.duration_since(s.created));
    SessionView {
        identity: s.identity.clone(),
        account: s.account.clone(),
        account_id: s.account_id.clone(),
        csrf: s.csrf.clone(),
        expires_in: idle_left.min(abs_left),
    }
}

/// True when `sent` is the session's CSRF token.
pub fn csrf_ok(session: &SessionView, sent: Option<&str>) -> bool {
    sent.is_some_and(|t| eq_ct(t.as_bytes(), session.csrf.as_bytes()))
}

/// The TOTP second factor, if enrolled (`sanctum-guard web totp-enroll`).
pub fn totp_for(dir: &Path) -> Result<Option<totp_rs::TOTP>, String> {
    let path = dir.join(TOTP_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let secret = totp_rs::Secret::Encoded(text.trim().to_owned())
        .to_bytes()
        .map_err(|e| format!("{}: {e:?}", path.display()))?;
    totp_of(secret).map(Some)
}

/// The TOTP of a base32 seed (a reviewer account's own).
pub fn totp_from_seed(seed: &str) -> Result<totp_rs::TOTP, String> {
    let secret = totp_rs::Secret::Encoded(seed.trim().to_owned())
        .to_bytes()
        .map_err(|e| format!("{e:?}"))?;
    totp_of(secret)
}

/// A new seed (base32) and its otpauth URI for `account`, which the caller stores and
/// shows once.
pub fn new_totp_seed(account: &str) -> Result<(String, String), String> {
    let secret = random_bytes(20)?;
    let mut totp = totp_of(secret.clone())?;
    totp.account_name = account.to_owned();
    let encoded = totp_rs::Secret::Raw(secret).to_encoded().to_string();
    Ok((encoded, totp.get_url()))
}

fn totp_of(secret: Vec<u8>) -> Result<totp_rs::TOTP, String> {
    totp_rs::TOTP::new(
        totp_rs::Algorithm::SHA1,
        6,
        1,
        30,
        secret,
        Some("sanctum-guard".into()),
        "web-prompt".into(),
    )
    .map_err(|e| e.to_string())
}

/// Enrols a new TOTP seed (refuses to replace one unless `force`); returns the otpauth URI,
/// which the caller shows once.
pub fn totp_enroll(dir: &Path, force: bool) -> Result<String, String> {
    let path = dir.join(TOTP_FILE);
    if path.exists() && !force {
        return Err(format!(
            "{} exists: a second factor is already enrolled (use --force to replace it)",
            path.display()
        ));
    }
    let secret = random_bytes(20)?;
    let totp = totp_of(secret.clone())?;
    let encoded = totp_rs::Secret::Raw(secret).to_encoded().to_string();
    super::login::write_private(&path, &format!("{encoded}\n")).map_err(|e| e.to_string())?;
    Ok(totp.get_url())
}

/// True when `code` is the current (±1 step) TOTP code.
pub fn totp_ok(totp: &totp_rs::TOTP, code: &str) -> bool {
    code.len() == 6
        && code.chars().all(|c| c.is_ascii_digit())
        && totp.check_current(code).unwrap_or(false)
}
