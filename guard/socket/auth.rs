//! Authentication of socket clients: the `request` token, the `exec` HMAC with its TTL and
//! nonce replay cache, the SO_PEERCRED UID check and the per-peer rate limit. Every check
//! answers a [`RejectReason`]; all secret comparisons are constant time.
//!
//! Replay across restarts: a frame captured just before a restart is still
//! inside its ±TTL window afterwards, and the in-memory nonce cache is gone. Two rules close
//! it: (1) a frame whose `ts` is before this process started is refused (`replay`): the old
//! process could have accepted it, and every honest client on this kernel signs with the
//! same clock after connecting, which it cannot do before the socket exists; (2) accepted
//! nonces are appended to a journal in the state dir and reloaded at start for their TTL
//! window, which covers frames dated in the future (a skewed remote signer) and a clock
//! stepped backwards. The journal is not fsynced: a crash keeps it (page cache), a power loss
//! may lose its tail, and then rule (1) still holds.

use super::wire::{ExecFrame, RejectReason};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The reference server's `|now − ts|` window.
pub const DEFAULT_TTL_MS: u64 = 10_000;

/// Constant-time token equality. Both sides are hashed first so neither the content nor the
/// length of the expected token leaks through timing.
pub fn token_matches(expected: &str, presented: &str) -> bool {
    let a = Sha256::digest(expected.trim().as_bytes());
    let b = Sha256::digest(presented.as_bytes());
    bool::from(a.ct_eq(&b))
}

/// Lowercase hex HMAC-SHA256 over `nonce:ts:requestJson`, keyed with the token's UTF-8 bytes
/// (docs/openclaw-protocol.md §1.4). Used by tests and the load client to sign like the real client.
pub fn exec_hmac(token: &str, nonce: &str, ts: i64, request_json: &str) -> String {
    exec_mac(token, nonce, ts, request_json)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default()
}

/// `None` only if the MAC cannot be keyed, which HMAC (any key length, RFC 2104) never does;
/// callers treat it as a failed verification.
fn exec_mac(token: &str, nonce: &str, ts: i64, request_json: &str) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(token.trim().as_bytes()).ok()?;
    mac.update(nonce.as_bytes());
    mac.update(b":");
    mac.update(ts.to_string().as_bytes());
    mac.update(b":");
    mac.update(request_json.as_bytes());
    Some(mac)
}

/// Checks the TTL window, then the HMAC (constant time), then the nonce replay cache. The
/// nonce is recorded only once the HMAC verified, so forged frames cannot fill the cache.
pub fn verify_exec(
    token: &str,
    frame: &ExecFrame,
    now_ms: i64,
    ttl_ms: u64,
    replay: &ReplayCache,
) -> Result<(), RejectReason> {
    if now_ms.abs_diff(frame.ts) > ttl_ms {
        return Err(RejectReason::Ttl);
    }
    let Ok(presented) = hex::decode(frame.hmac.as_bytes()) else {
        return Err(RejectReason::Hmac);
    };
    let mac = exec_mac(token, &frame.nonce, frame.ts, &frame.request_json);
    if mac.is_none_or(|m| m.verify_slice(&presented).is_err()) {
        return Err(RejectReason::Hmac);
    }
    if frame.ts < replay.started_ms {
        return Err(RejectReason::Replay);
    }
    replay.check_and_insert(&frame.nonce, now_ms, ttl_ms)
}

/// The replay journal's file name inside the state dir.
pub const REPLAY_FILE: &str = "replay-nonces";

/// Appends accepted nonces (`<expiry ms> <hex nonce>` lines) so a restarted guard still
/// knows them; compacted at open and whenever dead lines dominate.
struct Journal {
    path: PathBuf,
    file: File,
    lines: usize,
}

impl Journal {
    fn open_append(path: &Path) -> std::io::Result<File> {
        OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
    }

    /// Rewrites the journal with exactly `live` (tmp + rename), then reopens it for append.
    fn rewrite(path: &Path, live: &HashMap<String, i64>) -> std::io::Result<Journal> {
        let tmp = path.with_extension("tmp");
        let mut out = String::with_capacity(live.len() * 56);
        for (nonce, exp) in live {
            out.push_str(&format!("{exp} {}\n", hex::encode(nonce.as_bytes())));
        }
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(out.as_bytes())?;
            f.sync_data()?;
        }
        std::fs::rename(&tmp, path)?;
        Ok(Journal {
            path: path.to_owned(),
            file: Self::open_append(path)?,
            lines: live.len(),
        })
    }

    /// The nonces of `path` still live at `now_ms` (missing file: none; bad lines skipped).
    fn load(path: &Path, now_ms: i64) -> std::io::Result<HashMap<String, i64>> {
        let f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(e),
        };
        let mut live = HashMap::new();
        for line in std::io::BufReader::new(f).lines() {
            let line = line?;
            let Some((exp, nonce)) = line.split_once(' ') else {
                continue;
            };
            let (Ok(exp), Ok(bytes)) = (exp.parse::<i64>(), hex::decode(nonce)) else {
                continue;
            };
            if exp >= now_ms {
                if let Ok(n) = String::from_utf8(bytes) {
                    live.insert(n, exp);
                }
            }
        }
        Ok(live)
    }
}

/// Nonces seen inside the TTL window. A nonce may be accepted again only after its frame
/// could no longer pass the TTL check, so an entry lives until `max(ts, now) + ttl`.
pub struct ReplayCache {
    inner: Mutex<ReplayInner>,
    capacity: usize,
    /// Frames dated before this (epoch ms) are refused as replays.
    started_ms: i64,
}

struct ReplayInner {
    seen: HashMap<String, i64>,
    order: VecDeque<(i64, String)>,
    journal: Option<Journal>,
}

impl ReplayCache {
    /// An in-memory cache that accepts any `ts` (tests, benchmarks).
    pub fn new(capacity: usize) -> Self {
        ReplayCache {
            inner: Mutex::new(ReplayInner {
                seen: HashMap::new(),
                order: VecDeque::new(),
                journal: None,
            }),
            capacity,
            started_ms: i64::MIN,
        }
    }

    /// The serving cache: refuses frames dated before `started_ms` and keeps its nonces in
    /// the journal at `path` (reloading the live ones).
    pub fn durable(capacity: usize, path: &Path, started_ms: i64) -> std::io::Result<Self> {
        let seen = Journal::load(path, started_ms)?;
        let journal = Journal::rewrite(path, &seen)?;
        let mut order: Vec<(i64, String)> = seen.iter().map(|(n, e)| (*e, n.clone())).collect();
        order.sort();
        Ok(ReplayCache {
            inner: Mutex::new(ReplayInner {
                seen,
                order: order.into(),
                journal: Some(journal),
            }),
            capacity,
            started_ms,
        })
    }

    /// `Replay` for a nonce seen before; `RateLimit` when the cache is full of live entries
    /// (fail closed: freshness cannot be proven).
    pub fn check_and_insert(
        &self,
        nonce: &str,
        now_ms: i64,
        ttl_ms: u64,
    ) -> Result<(), RejectReason> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let ReplayInner {
            seen,
            order,
            journal,
        } = &mut *g;
        while let Some((exp, _)) = order.front() {
            if *exp >= now_ms {
                break;
            }
            if let Some((_, n)) = order.pop_front() {
                if seen.get(&n).is_some_and(|e| *e < now_ms) {
                    seen.remove(&n);
                }
            }
        }
        if seen.contains_key(nonce) {
            return Err(RejectReason::Replay);
        }
        if seen.len() >= self.capacity {
            return Err(RejectReason::RateLimit);
        }
        // The frame's ts was within ttl of now, so ts + ttl <= now + 2·ttl.
        let expiry = now_ms.saturating_add(2 * ttl_ms as i64);
        if let Some(j) = journal.as_mut() {
            // Fail closed: a nonce that could not be kept could replay after a restart.
            let line = format!("{expiry} {}\n", hex::encode(nonce.as_bytes()));
            if let Err(e) = j.file.write_all(line.as_bytes()) {
                tracing::error!(error = %e, path = %j.path.display(), "replay journal append failed");
                return Err(RejectReason::StateUnavailable);
            }
            j.lines += 1;
        }
        seen.insert(nonce.to_owned(), expiry);
        order.push_back((expiry, nonce.to_owned()));
        if let Some(j) = journal.as_mut() {
            if j.lines > 2 * seen.len() + 4096 {
                match Journal::rewrite(&j.path, seen) {
                    Ok(fresh) => *j = fresh,
                    Err(e) => tracing::warn!(error = %e, "replay journal compaction failed"),
                }
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map(|g| g.seen.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The connecting process as the kernel reports it (SO_PEERCRED).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    pub uid: u32,
    pub pid: Option<i32>,
}

/// Which UIDs may talk to the socket.
#[derive(Debug, Clone)]
pub struct PeerPolicy {
    allowed: HashSet<u32>,
}

impl PeerPolicy {
    pub fn new(allowed: impl IntoIterator<Item = u32>) -> Self {
        PeerPolicy {
            allowed: allowed.into_iter().collect(),
        }
    }

    pub fn check(&self, peer: &Peer) -> Result<(), RejectReason> {
        if self.allowed.contains(&peer.uid) {
            Ok(())
        } else {
            Err(RejectReason::PeerUid)
        }
    }
}

/// A token bucket per peer (UID, PID): `burst` requests at once, refilled at `per_sec`.
pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<Peer, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(per_sec: u32, burst: u32) -> Self {
        RateLimiter {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub fn check(&self, peer: &Peer) -> Result<(), RejectReason> {
        self.check_at(peer, Instant::now())
    }

    fn check_at(&self, peer: &Peer, now: Instant) -> Result<(), RejectReason> {
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if b.len() > 4096 {
            // Forget peers whose bucket has refilled: they are indistinguishable from new ones.
            let full = Duration::from_secs_f64(self.burst / self.per_sec.max(1e-9));
            b.retain(|_, (_, t)| now.duration_since(*t) < full);
        }
        let (tokens, last) = b.entry(*peer).or_insert((self.burst, now));
        let refill = now.duration_since(*last).as_secs_f64() * self.per_sec;
        *tokens = (*tokens + refill).min(self.burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(RejectReason::RateLimit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector() -> ExecFrame {
        ExecFrame {
            id: "69836861-a619-4613-b829-eede743b03ce".into(),
            nonce: "fa300b0eac5884d0fb5efdae3b4d86fa".into(),
            ts: 1_795_643_441_603,
            hmac: "27dd954eaecee8b2a6e3dcdb8fa29ab60c861ada9c000aa23ddb23c4d6e626f1".into(),
            request_json: r#"{"command":["/usr/bin/uname","-s"],"rawCommand":"/usr/bin/uname -s","cwd":"/tmp","env":{"FOO":"bar"},"timeoutMs":5000,"needsScreenRecording":false,"agentId":"main","sessionKey":"agent:main:main","approvalDecision":null}"#.into(),
        }
    }

    #[test]
    fn protocol_test_vector_verifies() {
        // The vector of docs/openclaw-protocol.md §1.4, re-checked with node's crypto.createHmac.
        let f = vector();
        assert_eq!(
            exec_hmac("hmac-test-token", &f.nonce, f.ts, &f.request_json),
            f.hmac
        );
        let cache = ReplayCache::new(16);
        assert_eq!(
            verify_exec("hmac-test-token", &f, f.ts + 9_999, DEFAULT_TTL_MS, &cache),
            Ok(())
        );
        assert_eq!(
            verify_exec("hmac-test-token", &f, f.ts + 1, DEFAULT_TTL_MS, &cache),
            Err(RejectReason::Replay)
        );
    }

    #[test]
    fn ttl_hmac_and_token_rejections() {
        let f = vector();
        let cache = ReplayCache::new(16);
        let stale = verify_exec("hmac-test-token", &f, f.ts + 10_001, DEFAULT_TTL_MS, &cache);
        assert_eq!(stale, Err(RejectReason::Ttl));
        let future = verify_exec("hmac-test-token", &f, f.ts - 10_001, DEFAULT_TTL_MS, &cache);
        assert_eq!(future, Err(RejectReason::Ttl));
        let wrong = verify_exec("other-token", &f, f.ts, DEFAULT_TTL_MS, &cache);
        assert_eq!(wrong, Err(RejectReason::Hmac));
        let mut tampered = f.clone();
        tampered.request_json = tampered.request_json.replace("-s", "-a");
        let t = verify_exec("hmac-test-token", &tampered, f.ts, DEFAULT_TTL_MS, &cache);
        assert_eq!(t, Err(RejectReason::Hmac));
        assert!(
            cache.is_empty(),
            "rejected frames must not enter the replay cache"
        );
        assert!(token_matches("tok123", "tok123"));
        assert!(!token_matches("tok123", "tok124"));
        assert!(!token_matches("tok123", "tok1234"));
    }

    #[test]
    fn replay_cache_expires_and_is_bounded() {
        let c = ReplayCache::new(2);
        assert_eq!(c.check_and_insert("a", 0, 10), Ok(()));
        assert_eq!(c.check_and_insert("b", 0, 10), Ok(()));
        assert_eq!(c.check_and_insert("c", 5, 10), Err(RejectReason::RateLimit));
        assert_eq!(c.check_and_insert("a", 21, 10), Ok(()));
        assert_eq!(c.check_and_insert("a", 22, 10), Err(RejectReason::Replay));
    }

    #[test]
    fn rate_limit_per_peer() {
        let r = RateLimiter::new(10, 3);
        let p = Peer {
            uid: 1,
            pid: Some(2),
        };
        let q = Peer {
            uid: 1,
            pid: Some(3),
        };
        let t = Instant::now();
        for _ in 0..3 {
            assert_eq!(r.check_at(&p, t), Ok(()));
        }
        assert_eq!(r.check_at(&p, t), Err(RejectReason::RateLimit));
        assert_eq!(r.check_at(&q, t), Ok(()));
        assert_eq!(r.check_at(&p, t + Duration::from_millis(150)), Ok(()));
        assert_eq!(
            PeerPolicy::new([0]).check(&Peer {
                uid: 65534,
                pid: None
            }),
            Err(RejectReason::PeerUid)
        );
    }
}
