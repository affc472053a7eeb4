//! Sessions, CSRF tokens and the optional TOTP second factor.
//!
//! A session is a random id in an HttpOnly, SameSite=Strict cookie (Secure, and named with
//! the `__Host-` prefix, under HTTPS); the guard keeps only its SHA-256. Each session has its
//! own CSRF token, which every state-changing call must send in `X-CSRF-Token`. Sessions end
//! at logout, after [`IDLE_TTL`] without use, after [`ABSOLUTE_TTL`], and on revocation
//! (`POST /api/sessions/revoke`). One guard keeps them in memory (a restart ends them); a
//! fleet keeps them in its database (`pg_sessions`), so they hold on every guard and
//! survive restarts, and an ending on one guard ends the session on all.

use super::pg_auth::{AuthDbError, PgAuth};
use super::secret::{eq_ct, hash_hex, random_bytes, random_token};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const IDLE_TTL: Duration = Duration::from_secs(2 * 3600);
pub const ABSOLUTE_TTL: Duration = Duration::from_secs(12 * 3600);
/// More live sessions than this (per guard, or per fleet) and the least recently used ends.
pub const MAX_SESSIONS: usize = 64;
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

/// Why a session could not be made or checked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("random source: {0}")]
    Random(String),
    /// A fleet's database is away: no session is confirmed (fail closed).
    #[error("sessions: {0}")]
    Unavailable(String),
    #[error("sessions: {0}")]
    Storage(String),
}

impl From<AuthDbError> for SessionError {
    fn from(e: AuthDbError) -> Self {
        match e {
            AuthDbError::Unavailable(u) => SessionError::Unavailable(u.to_string()),
            other => SessionError::Storage(other.to_string()),
        }
    }
}

type Confirmed = HashMap<String, (SessionView, Instant)>;

/// Where sessions live.
#[derive(Debug)]
enum Backend {
    Memory(Mutex<HashMap<String, Session>>),
    /// The fleet's table, and the views it last confirmed on this guard (by hash, with when):
    /// while the database is away they answer reads only, as the reviewer store's last
    /// seen roles do; nothing that changes anything is ever taken from them.
    Fleet {
        db: Arc<PgAuth>,
        confirmed: Arc<Mutex<Confirmed>>,
    },
}

#[derive(Debug)]
pub struct Sessions {
    backend: Backend,
    /// Bumped whenever sessions end (logout, revocation; in a fleet, on any guard): live
    /// event streams re-check theirs at once instead of at the next heartbeat.
    ended: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            backend: Backend::Memory(Mutex::default()),
            ended: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }
}

/// Runs a database call from wherever sessions are checked (often an async handler):
/// on a multi-threaded runtime the worker thread is handed over while it waits.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sessions {
    /// A fleet's sessions, in its database; endings on any guard are heard here.
    pub fn fleet(db: Arc<PgAuth>) -> std::io::Result<Sessions> {
        let ended = Arc::new(tokio::sync::watch::channel(0).0);
        let confirmed: Arc<Mutex<Confirmed>> = Arc::default();
        let (weak, seen) = (Arc::downgrade(&ended), Arc::downgrade(&confirmed));
        // Some session ended somewhere in the fleet: nothing confirmed before stands for a
        // read while the database is away, and every open stream re-checks its own.
        db.listen(move || match (weak.upgrade(), seen.upgrade()) {
            (Some(tx), Some(seen)) => {
                lock(&seen).clear();
                tx.send_modify(|g| *g += 1);
                true
            }
            _ => false,
        })?;
        Ok(Sessions {
            backend: Backend::Fleet { db, confirmed },
            ended,
        })
    }

    /// The fleet's sign-in store these sessions live in (None: one guard, in memory).
    pub fn fleet_db(&self) -> Option<Arc<PgAuth>> {
        match &self.backend {
            Backend::Fleet { db, .. } => Some(db.clone()),
            Backend::Memory(_) => None,
        }
    }

    /// Starts a session for the account `name` (id `account_id`); returns the cookie value
    /// (the only copy of the id).
    pub fn create(
        &self,
        name: &str,
        account_id: &str,
    ) -> Result<(String, SessionView), SessionError> {
        let id = random_token().map_err(SessionError::Random)?;
        let csrf = random_token().map_err(SessionError::Random)?;
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
        let view = view(&s, now);
        let map = match &self.backend {
            Backend::Memory(m) => m,
            Backend::Fleet { db, .. } => {
                let row = super::pg_sessions::Row {
                    identity: s.identity,
                    account: s.account,
                    account_id: s.account_id,
                    csrf: s.csrf,
                    expires_in: view.expires_in,
                };
                blocking(|| db.create_session(&h, &row))?;
                return Ok((id, view));
            }
        };
        let mut map = lock(map);
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
        map.insert(h, s);
        Ok((id, view))
    }

    /// The live session of a cookie value, touched (in a fleet: coarsely, see
    /// `pg_sessions`). `Err` only when a fleet's database is away.
    pub fn check(&self, id: &str) -> Result<Option<SessionView>, SessionError> {
        let h = hash_hex(id);
        let now = Instant::now();
        let map = match &self.backend {
            Backend::Memory(m) => m,
            Backend::Fleet { db, confirmed } => {
                let got = blocking(|| db.session(&h, true))?.map(|r| SessionView {
                    identity: r.identity,
                    account: r.account,
                    account_id: r.account_id,
                    csrf: r.csrf,
                    expires_in: r.expires_in,
                });
                let mut seen = lock(confirmed);
                seen.retain(|_, (v, at)| now.duration_since(*at) < v.expires_in);
                match &got {
                    Some(v) => seen.insert(h, (v.clone(), now)),
                    None => seen.remove(&h),
                };
                return Ok(got);
            }
        };
        let mut map = lock(map);
        match map.get_mut(&h) {
            Some(s) if live(s, now) => {
                s.last_seen = now;
                Ok(Some(view(s, now)))
            }
            Some(_) => {
                map.remove(&h);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// [`Sessions::check`]; with a fleet's database away, the view this guard last
    /// confirmed (still within its expiry) for a read, never for a change.
    pub fn check_for(&self, id: &str, read: bool) -> Result<Option<SessionView>, SessionError> {
        match self.check(id) {
            Err(SessionError::Unavailable(e)) => {
                let Backend::Fleet { confirmed, .. } = &self.backend else {
                    return Err(SessionError::Unavailable(e));
                };
                let now = Instant::now();
                let seen = lock(confirmed);
                match seen.get(&hash_hex(id)) {
                    Some((v, at)) if read && now.duration_since(*at) < v.expires_in => {
                        let mut v = v.clone();
                        v.expires_in = v.expires_in.saturating_sub(now.duration_since(*at));
                        Ok(Some(v))
                    }
                    _ => Err(SessionError::Unavailable(e)),
                }
            }
            other => other,
        }
    }

    /// The live session of a cookie value; none when it ended or cannot be confirmed.
    pub fn get(&self, id: &str) -> Option<SessionView> {
        self.check(id).ok().flatten()
    }

    /// Whether the session of a cookie value is live, without touching it (a door
    /// connection checking its session must not keep it from going idle). A fleet's
    /// database away: not live (fail closed).
    pub fn alive(&self, id: &str) -> bool {
        let now = Instant::now();
        match &self.backend {
            Backend::Memory(m) => lock(m).get(&hash_hex(id)).is_some_and(|s| live(s, now)),
            Backend::Fleet { db, .. } => {
                matches!(blocking(|| db.session(&hash_hex(id), false)), Ok(Some(_)))
            }
        }
    }

    /// Ends one session (logout).
    pub fn remove(&self, id: &str) -> Result<(), SessionError> {
        self.end(Some(&hash_hex(id)), None).map(drop)
    }

    /// Ends every session of the account `name` (in a fleet, on every guard); how many.
    pub fn end_account(&self, name: &str) -> Result<usize, SessionError> {
        self.end(None, Some(name))
    }

    /// Ends every session; returns how many.
    pub fn revoke_all(&self) -> Result<usize, SessionError> {
        self.end(None, None)
    }

    fn end(&self, hash: Option<&str>, account: Option<&str>) -> Result<usize, SessionError> {
        let n = match &self.backend {
            Backend::Memory(m) => {
                let mut map = lock(m);
                let before = map.len();
                map.retain(|h, s| {
                    !(hash.is_none_or(|x| x == h) && account.is_none_or(|a| a == s.account))
                });
                before - map.len()
            }
            Backend::Fleet { db, confirmed } => {
                let n = blocking(|| db.end_sessions(hash, account))?;
                lock(confirmed).retain(|h, (v, _)| {
                    !(hash.is_none_or(|x| x == h) && account.is_none_or(|a| a == v.account))
                });
                n
            }
        };
        self.ended.send_modify(|g| *g += 1);
        Ok(n)
    }

    /// Changes whenever a session ends.
    pub fn ended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ended.subscribe()
    }

    /// Live sessions (a fleet's: all of its guards'; 0 while its database is away).
    pub fn count(&self) -> usize {
        let now = Instant::now();
        match &self.backend {
            Backend::Memory(m) => lock(m).values().filter(|s| live(s, now)).count(),
            Backend::Fleet { db, .. } => blocking(|| db.live_sessions()).unwrap_or(0),
        }
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
